"""Convex fairness penalties over all pairs of intersectional groups.

The paper's Eq. 2, made well-defined (see DESIGN.md): for groups k < k' and
model scores s (logits),

    Delta_kk' = 1/(n_k n_k') sum_{i in k, j in k'} 1[y_i = y_j] (s_i - s_j)
              = sum_y (n_ky n_k'y / (n_k n_k')) (m_ky - m_k'y)

with m_ky the mean score of the rows of group k and label y, and

    group penalty       f = sum_{k<k'} w_kk' Delta_kk'^2
    individual penalty  f = sum_{k<k'} w_kk' / (n_k n_k')
                            sum_{i in k, j in k'} 1[y_i = y_j] (s_i - s_j)^2

with w_kk' = n_k n_k' / sum_{l<l'} n_l n_l' (Berk et al., 2017, generalised to
K groups). The paper prints Eq. 2 without the square; summed over ordered
pairs the unsquared sum is identically zero. Both penalties are computed in
closed form from per-(group, label) sums of scores (and of squared scores), in
O(n + K^2) time; nothing loops over rows or pairs. Sample weights replace the
counts by sums of weights.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "PENALTIES",
    "group_penalty",
    "individual_penalty",
    "standardized_group_penalty",
]


def _cell_sums(scores, y, groups, n_groups, sample_weight):
    """Per (group, label) cell: weight n, weighted sum of scores S."""
    cells = groups * 2 + y.astype(np.intp, copy=False)
    weight = np.ones_like(scores) if sample_weight is None else sample_weight
    size = 2 * n_groups
    n = np.bincount(cells, weights=weight, minlength=size).reshape(n_groups, 2)
    S = np.bincount(cells, weights=weight * scores, minlength=size).reshape(n_groups, 2)
    return cells, weight, n, S


def _pair_normaliser(n):
    """sum_{l<l'} n_l n_l' for group totals n."""
    totals = n.sum(axis=1)
    return 0.5 * (totals.sum() ** 2 - np.dot(totals, totals)), totals


def group_penalty(scores, y, groups, n_groups=None, sample_weight=None):
    """Berk's convex group fairness penalty and its gradient in the scores.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        Model scores (logits) of every row.
    y : ndarray of shape (n_samples,) of int
        Labels coded 0/1.
    groups : ndarray of shape (n_samples,) of int
        Intersectional group codes in ``range(n_groups)``.
    n_groups : int, default=None
        Number of groups; ``groups.max() + 1`` by default.
    sample_weight : ndarray of shape (n_samples,), default=None
        Non-negative row weights.

    Returns
    -------
    value : float
        ``sum_{k<k'} w_kk' Delta_kk'^2``; 0.0 with fewer than two groups.
    gradient : ndarray of shape (n_samples,)
        Derivative of the value with respect to every score.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.penalty import group_penalty
    >>> scores = np.array([1.0, 0.0, 0.0, 0.0])
    >>> y = np.array([1, 1, 1, 1])
    >>> groups = np.array([0, 0, 1, 1])
    >>> value, gradient = group_penalty(scores, y, groups)
    >>> value  # Delta = mean(1, 0) - mean(0, 0) = 0.5, weight 1
    0.25
    >>> gradient
    array([ 0.5,  0.5, -0.5, -0.5])
    """
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if groups.size else 0
    cells, _, n, S = _cell_sums(scores, y, groups, n_groups, sample_weight)
    W, totals = _pair_normaliser(n)
    if W <= 0:
        return 0.0, np.zeros_like(scores)
    # With a_ky = n_ky / n_k and P_ky = S_ky / n_k:
    #   Delta[k, k'] = sum_y P_ky a_k'y - a_ky P_k'y   (antisymmetric)
    safe = np.where(totals > 0, totals, 1.0)[:, None]
    a = n / safe
    P = S / safe
    delta = P @ a.T - a @ P.T
    outer = np.outer(totals, totals)
    value = 0.5 * np.sum(outer * delta**2) / W
    # d value / d s_i for row i in cell (k, y): (2 / W) sum_k' Delta[k, k'] n_k'y.
    cell_gradient = (2.0 / W) * (delta @ n)
    gradient = cell_gradient.ravel()[cells]
    if sample_weight is not None:
        gradient = gradient * sample_weight
    return float(value), gradient


def individual_penalty(scores, y, groups, n_groups=None, sample_weight=None):
    """Berk's convex individual fairness penalty and its gradient in the scores.

    Every cross-group pair with the same label contributes its squared score
    difference, weighted as in :func:`group_penalty`. Computed from
    per-cell sums of scores and squared scores.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        Model scores (logits) of every row.
    y : ndarray of shape (n_samples,) of int
        Labels coded 0/1.
    groups : ndarray of shape (n_samples,) of int
        Intersectional group codes in ``range(n_groups)``.
    n_groups : int, default=None
        Number of groups; ``groups.max() + 1`` by default.
    sample_weight : ndarray of shape (n_samples,), default=None
        Non-negative row weights.

    Returns
    -------
    value : float
        ``sum_{k<k'} sum_{i in k, j in k', y_i = y_j} (s_i - s_j)^2 / W``
        with ``W = sum_{l<l'} n_l n_l'``.
    gradient : ndarray of shape (n_samples,)
        Derivative of the value with respect to every score.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.penalty import individual_penalty
    >>> scores = np.array([1.0, 0.0, 0.0, 0.0])
    >>> y = np.array([1, 1, 1, 1])
    >>> groups = np.array([0, 0, 1, 1])
    >>> value, gradient = individual_penalty(scores, y, groups)
    >>> value  # pairs (1, 0), (1, 0) differ by 1: (1 + 1) / 4
    0.5
    """
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if groups.size else 0
    cells, weight, n, S = _cell_sums(scores, y, groups, n_groups, sample_weight)
    W, _ = _pair_normaliser(n)
    if W <= 0:
        return 0.0, np.zeros_like(scores)
    Q = np.bincount(cells, weights=weight * scores**2, minlength=2 * n_groups)
    Q = Q.reshape(n_groups, 2)
    # sum over k != k' (same label) of n_k'y Q_ky + n_ky Q_k'y - 2 S_ky S_k'y,
    # halved for unordered pairs, written with label totals minus own cell.
    N_y, S_y, Q_y = n.sum(axis=0), S.sum(axis=0), Q.sum(axis=0)
    ordered = (N_y - n) * Q + n * (Q_y - Q) - 2.0 * S * (S_y - S)
    value = 0.5 * ordered.sum() / W
    # d value / d s_i for row i in cell (k, y): (2/W)(s_i (N_y - n_ky) - (S_y - S_ky)).
    slope = (2.0 / W) * (N_y - n)
    offset = (2.0 / W) * (S_y - S)
    gradient = slope.ravel()[cells] * scores - offset.ravel()[cells]
    if sample_weight is not None:
        gradient = gradient * sample_weight
    return float(value), gradient


#: Added to the within-label variance of :func:`standardized_group_penalty`.
_VARIANCE_FLOOR = 0.1


def standardized_group_penalty(scores, y, groups, n_groups=None, sample_weight=None):
    r"""The group penalty divided by the pooled within-label variance of the scores.

    :func:`group_penalty` is cheapest to lower by shrinking every score toward
    the same value: the gaps between groups fall with the scale of the scores
    while their order, and so the decisions at a matched selection rate, hardly
    change, and the probabilities lose their calibration. Dividing by

    .. math:: v = \frac{1}{n} \sum_i (s_i - \bar s_{y_i})^2

    (the weighted variance of the scores around their label's mean) plus a
    floor of 0.1 makes the penalty scale-invariant wherever the scores spread
    well beyond that (logits of a fitted model vary by about 1 to 4):
    multiplying every score by a constant leaves it (nearly) unchanged, so
    only treating the groups more alike lowers it. It is a ratio of between-group to
    within-label spread, bounded, and 0 where the groups' label-conditional
    mean scores are equal. The floor keeps it continuous where all scores are
    equal (the zero start of training), where the bare ratio would jump from 0
    to its full size at any step and stop training. Unlike the group penalty
    it is not convex in the scores.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        Model scores (logits) of every row.
    y : ndarray of shape (n_samples,) of int
        Labels coded 0/1.
    groups : ndarray of shape (n_samples,) of int
        Intersectional group codes in ``range(n_groups)``.
    n_groups : int, default=None
        Number of groups; ``groups.max() + 1`` by default.
    sample_weight : ndarray of shape (n_samples,), default=None
        Non-negative row weights.

    Returns
    -------
    value : float
        ``group_penalty / (v + 0.1)``.
    gradient : ndarray of shape (n_samples,)
        Derivative of the value with respect to every score.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.penalty import group_penalty, standardized_group_penalty
    >>> scores = np.array([2.0, 0.0, 1.0, -1.0])
    >>> y = np.array([1, 0, 1, 0])
    >>> groups = np.array([0, 0, 1, 1])
    >>> value, _ = standardized_group_penalty(10 * scores, y, groups)
    >>> scaled, _ = standardized_group_penalty(100 * scores, y, groups)
    >>> bool(np.isclose(value, scaled, rtol=0.01))
    True
    """
    value, gradient = group_penalty(scores, y, groups, n_groups, sample_weight)
    weight = np.ones_like(scores) if sample_weight is None else sample_weight
    labels = y.astype(np.intp, copy=False)
    label_weight = np.bincount(labels, weights=weight, minlength=2)
    label_sum = np.bincount(labels, weights=weight * scores, minlength=2)
    label_mean = np.divide(
        label_sum, label_weight, out=np.zeros(label_sum.shape), where=label_weight > 0
    )
    residual = scores - label_mean[labels]
    total = weight.sum()
    variance = float(np.dot(weight, residual * residual) / total) if total > 0 else 0.0
    if value == 0.0:
        return 0.0, np.zeros_like(scores)
    variance += _VARIANCE_FLOOR
    # d v / d s_i = 2 w_i (s_i - mean of its label) / total: the label means'
    # own derivatives cancel, as residuals sum to 0 within each label.
    variance_gradient = 2.0 * weight * residual / total
    ratio = value / variance
    return ratio, (gradient - ratio * variance_gradient) / variance


#: Penalties by the name of the estimators' ``penalty`` parameter.
PENALTIES = {
    "group": group_penalty,
    "individual": individual_penalty,
    "group_standardized": standardized_group_penalty,
}
