"""Convex fairness penalties over all pairs of intersectional groups.

The paper's Eq. 2, made well-defined (the user guide's "The fairness
penalty, and why it is squared" explains the change): for groups k < k' and
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
O(n + K) time and memory: nothing loops over rows or pairs and nothing K x K is
built, so a sensitive attribute with as many values as rows still fits. Sample
weights replace the counts by sums of weights.

Multi-class outcomes: y takes C values and the model has one score per class
(softmax logits, shape (n, C)). Each class's score column is penalised as
above with pairs matched on the true class (C labels, so that the penalty is
0 when, among rows of the same true class, every group gets the same mean
score for every class: the multi-class analogue of equalized odds on
scores), and the C values are summed, optionally weighted. All columns share
one pass over the (group, class) cells: O(n C + K C^2).
"""

from __future__ import annotations

from numbers import Integral

import numpy as np

from .._compat import Interval, validate_params

#: Each penalty's code in the compiled loops (``_sgd_fast.pyx``; 0 is none).
PENALTY_CODES = {"group": 1, "individual": 2, "group_standardized": 3}

__all__ = [
    "PENALTIES",
    "group_penalty",
    "individual_penalty",
    "standardized_group_penalty",
]


#: The parameters of every penalty, checked by ``@validate_params`` on a call
#: from user code. The estimators call the penalties inside their fit context,
#: which skips the check: the decorator then costs about 0.3 us per call (the
#: check itself about 40 us), far below the penalty's own cost.
_PENALTY_CONSTRAINTS = {
    "scores": ["array-like"],
    "y": ["array-like"],
    "groups": ["array-like"],
    "n_groups": [Interval(Integral, 0, None, closed="left"), None],
    "sample_weight": ["array-like", None],
    "class_weight": ["array-like", None],
}


class _Cells:
    """Per (group, label) cell of every row, and the cells' weights.

    Computed once per call and shared by the score columns of a multi-class
    penalty: only the cells' score sums differ between columns.
    """

    def __init__(self, y, groups, n_groups, sample_weight, n_rows):
        labels = _label_codes(y)
        self.n_labels = max(2, int(labels.max()) + 1) if labels.size else 2
        self.n_groups = n_groups
        self.index = groups * self.n_labels + labels
        self.weight = np.ones(n_rows) if sample_weight is None else sample_weight
        self.labels = labels
        self.n = self.sums(self.weight)

    def sums(self, values):
        """Sum of ``values`` in every cell, shape (n_groups, n_labels)."""
        size = self.n_groups * self.n_labels
        return np.bincount(self.index, weights=values, minlength=size).reshape(
            self.n_groups, self.n_labels
        )


def _label_codes(y):
    """y as non-negative integer codes; anything else is refused.

    Truncating a float label (0.5 -> 0) would merge labels and return a
    plausible penalty of the wrong pairs.
    """
    return _codes(y, "y", "label codes")


def _codes(values, name, what):
    """``values`` as non-negative integer codes, refused unless they are."""
    if values.dtype.kind in "iub":
        codes = values.astype(np.intp, copy=False)
    elif values.dtype.kind == "f":
        codes = values.astype(np.intp)
        if not np.array_equal(codes, values):
            raise ValueError(
                f"{name} must hold {what} 0, 1, ... (integers); it has "
                f"non-integer values such as {float(values[codes != values][0])!r}."
            )
    else:
        raise ValueError(
            f"{name} must hold {what} 0, 1, ... (integers); got dtype "
            f"{values.dtype}. Code the {what.split()[0]}s first, e.g. "
            f"np.unique({name}, return_inverse=True)[1]."
        )
    if codes.size and codes.min() < 0:
        raise ValueError(
            f"{name} must hold {what} 0, 1, ... ; it has {int(codes.min())}. Code "
            f"the {what.split()[0]}s first, e.g. np.unique({name}, "
            "return_inverse=True)[1]."
        )
    return codes


def _as_cells(scores, y, groups, n_groups, sample_weight):
    if y.shape[0] != scores.shape[0] or groups.shape[0] != scores.shape[0]:
        raise ValueError(
            f"scores, y and groups must have the same number of rows; got "
            f"{scores.shape[0]}, {y.shape[0]} and {groups.shape[0]}."
        )
    # A float code would be truncated (0.5 -> group 0): refused, as labels are.
    groups = _codes(groups, "groups", "group codes")
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if groups.size else 0
    elif groups.size and groups.max() >= n_groups:
        raise ValueError(
            f"groups has code {int(groups.max())}, outside range(n_groups) for "
            f"n_groups={n_groups}."
        )
    # min() >= 0 is False for a NaN too; max() is finite unless one is inf.
    if sample_weight is not None and (
        sample_weight.shape != (scores.shape[0],)
        or (
            sample_weight.size
            and not (sample_weight.min() >= 0 and np.isfinite(sample_weight.max()))
        )
    ):
        got = (
            f"shape {sample_weight.shape}"
            if sample_weight.shape != (scores.shape[0],)
            else "a NaN, infinite or negative value"
        )
        raise ValueError(
            f"sample_weight must hold {scores.shape[0]} finite, non-negative "
            f"weights, one per row of scores; got {got}."
        )
    return _Cells(y, groups, n_groups, sample_weight, scores.shape[0])


def _columns(penalty_1d, scores, cells, class_weight, sample_weight):
    """A penalty of 1-D scores, or its (weighted) sum over the columns of 2-D ones.

    Multi-class scores (one column per class, e.g. softmax logits) are
    penalised column by column, each with pairs matched on the true class,
    and the values summed with ``class_weight``.
    """
    if scores.ndim == 1:
        if class_weight is not None:
            raise ValueError(
                "class_weight weighs the columns of 2-D scores (one per class); "
                "the scores are 1-D."
            )
        value, gradient = penalty_1d(scores, cells)
    else:
        n_columns = scores.shape[1]
        class_weight = (
            np.ones(n_columns)
            if class_weight is None
            else np.asarray(class_weight, dtype=np.float64)
        )
        if class_weight.shape != (n_columns,) or not (class_weight >= 0).all():
            raise ValueError(
                f"class_weight must hold {n_columns} non-negative weights, one per "
                f"column of scores; got {class_weight.tolist()}."
            )
        value, gradient = 0.0, np.zeros_like(scores)
        for column in range(n_columns):  # C columns, each O(n + K)
            if class_weight[column] == 0:
                continue
            column_value, column_gradient = penalty_1d(
                np.ascontiguousarray(scores[:, column]), cells
            )
            value += class_weight[column] * column_value
            gradient[:, column] = class_weight[column] * column_gradient
    if sample_weight is not None:
        gradient = gradient * (
            sample_weight if scores.ndim == 1 else sample_weight[:, None]
        )
    return value, gradient


def _as_arrays(scores, y, groups, sample_weight):
    """The inputs as arrays (lists accepted, as the constraints say)."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim not in (1, 2):
        raise ValueError(
            "scores must be 1-D (one score per row) or 2-D (one column per "
            f"class); got an array of shape {scores.shape}."
        )
    return (
        scores,
        np.asarray(y),
        np.asarray(groups),
        None if sample_weight is None else np.asarray(sample_weight, np.float64),
    )


def _pair_normaliser(n):
    """sum_{l<l'} n_l n_l' for group totals n."""
    totals = n.sum(axis=1)
    return 0.5 * (totals.sum() ** 2 - np.dot(totals, totals)), totals


@validate_params(_PENALTY_CONSTRAINTS, prefer_skip_nested_validation=True)
def group_penalty(
    scores, y, groups, n_groups=None, sample_weight=None, class_weight=None
):
    """Compute Berk's convex group fairness penalty and its gradient in the scores.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        Model scores (logits) of every row; for a multi-class model, one
        column per class (e.g. the softmax logits), each penalised with pairs
        matched on the true class and the values summed over columns.
    y : ndarray of shape (n_samples,) of int
        Labels coded 0/1, or class codes ``0 .. n_classes - 1``; pairs of rows
        are compared only when their labels are equal.
    groups : ndarray of shape (n_samples,) of int
        Intersectional group codes in ``range(n_groups)``.
    n_groups : int, default=None
        Number of groups; ``groups.max() + 1`` by default.
    sample_weight : ndarray of shape (n_samples,), default=None
        Non-negative row weights.
    class_weight : array-like of shape (n_classes,), default=None
        With 2-D scores, the weight of each column's penalty in the sum
        (1 each by default).

    Returns
    -------
    value : float
        ``sum_{k<k'} w_kk' Delta_kk'^2``; 0.0 with fewer than two groups.
    gradient : ndarray of the shape of ``scores``
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
    scores, y, groups, sample_weight = _as_arrays(scores, y, groups, sample_weight)
    cells = _as_cells(scores, y, groups, n_groups, sample_weight)
    return _columns(_group_1d, scores, cells, class_weight, sample_weight)


def _group_1d(scores, cells):
    """The group penalty of one score column; the gradient without row weights."""
    n, L = cells.n, cells.n_labels
    S = cells.sums(cells.weight * scores)
    W, totals = _pair_normaliser(n)
    if W <= 0:
        return 0.0, np.zeros_like(scores)
    W = float(W)
    # Columns n_ky (y < L), then S_ky. Delta only compares means within a
    # label, so shifting the scores of label y by a constant leaves it
    # unchanged: centring each label at its weighted mean stops the moments
    # below from cancelling a large common offset (an absent label has n = 0).
    X = np.concatenate((n, S), axis=1)
    label = X.sum(axis=0)
    X[:, L:] -= n * (label[L:] / (label[:L] + (label[:L] == 0)))
    # Columns a_ky = n_ky / n_k and P_ky = S_ky / n_k (0 for empty groups), with
    #   Delta[k, k'] = sum_y P_ky a_k'y - a_ky P_k'y   (antisymmetric).
    Y = X / (totals + (totals == 0))[:, None]
    # Expanding the square in sum_{k,k'} n_k n_k' Delta[k, k']^2 separates k
    # from k' into products of label x label moments, so nothing K x K is built:
    #   A = sum_k n_k a_k a_k^T,  B = sum_k n_k P_k P_k^T,  C = sum_k n_k a_k P_k^T
    # are the blocks of M = X^T Y = [[A, C], [C^T, B]]; the double sum is
    # 2 sum_{y,y'} (A_yy' B_yy' - C_yy' C_y'y), so the value is that sum / W.
    M = X.T @ Y
    if L == 2:
        # Python scalars: 2 x 2 array ops would cost more than all of this at
        # small K, and binary labels are the common case.
        (
            (a00, a01, c00, c01),
            (a10, a11, c10, c11),
            (_, _, b00, b01),
            (
                _,
                _,
                b10,
                b11,
            ),
        ) = M.tolist()
        value = a00 * b00 + a01 * b01 + a10 * b10 + a11 * b11
        value -= c00 * c00 + 2.0 * c01 * c10 + c11 * c11
    else:
        A, C, B = M[:L, :L], M[:L, L:], M[L:, L:]
        value = float((A * B).sum() - (C * C.T).sum())
    # A sum of squares: clip the round-off of a (nearly) zero one.
    value = max(value / W, 0.0)
    # d value / d s_i for row i in cell (k, y) is (2 / W) sum_k' Delta[k, k'] n_k'y;
    # with n_k'y = n_k' a_k'y that sum is (P A - a C^T)[k, y] = (Y R)[k, y]
    # for R = [-C^T; A] (A is symmetric).
    R = np.concatenate((-M[:L, L:].T, M[:L, :L])) * (2.0 / W)
    cell_gradient = Y @ R
    return value, cell_gradient.ravel()[cells.index]


@validate_params(_PENALTY_CONSTRAINTS, prefer_skip_nested_validation=True)
def individual_penalty(
    scores, y, groups, n_groups=None, sample_weight=None, class_weight=None
):
    """Compute Berk's convex individual fairness penalty and its score gradient.

    Every cross-group pair with the same label contributes its squared score
    difference, weighted as in :func:`group_penalty`. Computed from
    per-cell sums of scores and squared scores.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        Model scores (logits) of every row; for a multi-class model, one
        column per class (e.g. the softmax logits), each penalised with pairs
        matched on the true class and the values summed over columns.
    y : ndarray of shape (n_samples,) of int
        Labels coded 0/1, or class codes ``0 .. n_classes - 1``; pairs of rows
        are compared only when their labels are equal.
    groups : ndarray of shape (n_samples,) of int
        Intersectional group codes in ``range(n_groups)``.
    n_groups : int, default=None
        Number of groups; ``groups.max() + 1`` by default.
    sample_weight : ndarray of shape (n_samples,), default=None
        Non-negative row weights.
    class_weight : array-like of shape (n_classes,), default=None
        With 2-D scores, the weight of each column's penalty in the sum
        (1 each by default).

    Returns
    -------
    value : float
        ``sum_{k<k'} sum_{i in k, j in k', y_i = y_j} (s_i - s_j)^2 / W``
        with ``W = sum_{l<l'} n_l n_l'``.
    gradient : ndarray of the shape of ``scores``
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
    scores, y, groups, sample_weight = _as_arrays(scores, y, groups, sample_weight)
    cells = _as_cells(scores, y, groups, n_groups, sample_weight)
    return _columns(_individual_1d, scores, cells, class_weight, sample_weight)


def _individual_1d(scores, cells):
    """The individual penalty of one score column; gradient without row weights."""
    n = cells.n
    W, _ = _pair_normaliser(n)
    if W <= 0:
        return 0.0, np.zeros_like(scores)
    S = cells.sums(cells.weight * scores)
    Q = cells.sums(cells.weight * scores**2)
    # sum over k != k' (same label) of n_k'y Q_ky + n_ky Q_k'y - 2 S_ky S_k'y,
    # halved for unordered pairs, written with label totals minus own cell.
    N_y, S_y, Q_y = n.sum(axis=0), S.sum(axis=0), Q.sum(axis=0)
    ordered = (N_y - n) * Q + n * (Q_y - Q) - 2.0 * S * (S_y - S)
    value = 0.5 * ordered.sum() / W
    # d value / d s_i for row i in cell (k, y): (2/W)(s_i (N_y - n_ky) - (S_y - S_ky)).
    slope = (2.0 / W) * (N_y - n)
    offset = (2.0 / W) * (S_y - S)
    index = cells.index
    return float(value), slope.ravel()[index] * scores - offset.ravel()[index]


@validate_params(_PENALTY_CONSTRAINTS, prefer_skip_nested_validation=True)
def standardized_group_penalty(
    scores, y, groups, n_groups=None, sample_weight=None, class_weight=None
):
    r"""The group penalty divided by the pooled within-label variance of the scores.

    :func:`group_penalty` is cheapest to lower by shrinking every score toward
    the same value: the gaps between groups fall with the scale of the scores
    while their order, and so the decisions at a matched selection rate, hardly
    change, and the probabilities lose their calibration. Dividing by

    .. math:: v = \frac{1}{n} \sum_i (s_i - \bar s_{y_i})^2

    (the weighted variance of the scores around their label's mean) makes the
    penalty scale-invariant: multiplying every score by a constant leaves it
    unchanged, so only treating the groups more alike lowers it, and no path
    of shrinking scores leads to a constant model. It is a ratio of
    between-group to within-label spread, bounded, and 0 where the groups'
    label-conditional mean scores are equal; unlike the group penalty it is
    not convex in the scores. Where the scores are constant within each
    label (a constant model, and the zero start of training) it is 0/0,
    returned as 0, and any step away costs ``fairness`` times the ratio of
    its direction at once; so the estimators judge a step from such a point
    without the penalty (it is undefined there), and from the next step on
    with it: otherwise no step would pass their step-size test and training
    would never start. A floor under the variance would also let training
    start, but it opens a path of shrinking scores to the constant model,
    which we measured on Adult (race x gender, and the ROC-like data): both
    ended with no positive prediction.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        Model scores (logits) of every row; for a multi-class model, one
        column per class (e.g. the softmax logits), each penalised with pairs
        matched on the true class and the values summed over columns.
    y : ndarray of shape (n_samples,) of int
        Labels coded 0/1, or class codes ``0 .. n_classes - 1``; pairs of rows
        are compared only when their labels are equal.
    groups : ndarray of shape (n_samples,) of int
        Intersectional group codes in ``range(n_groups)``.
    n_groups : int, default=None
        Number of groups; ``groups.max() + 1`` by default.
    sample_weight : ndarray of shape (n_samples,), default=None
        Non-negative row weights.
    class_weight : array-like of shape (n_classes,), default=None
        With 2-D scores, the weight of each column's penalty in the sum
        (1 each by default).

    Returns
    -------
    value : float
        ``group_penalty / v``; 0.0 when the scores do not vary within labels.
    gradient : ndarray of the shape of ``scores``
        Derivative of the value with respect to every score.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.penalty import group_penalty, standardized_group_penalty
    >>> scores = np.array([2.0, 0.0, 1.0, -1.0])
    >>> y = np.array([1, 0, 1, 0])
    >>> groups = np.array([0, 0, 1, 1])
    >>> value, _ = standardized_group_penalty(scores, y, groups)
    >>> scaled, _ = standardized_group_penalty(10 * scores, y, groups)
    >>> bool(np.isclose(value, scaled))
    True
    """
    scores, y, groups, sample_weight = _as_arrays(scores, y, groups, sample_weight)
    cells = _as_cells(scores, y, groups, n_groups, sample_weight)
    return _columns(_standardized_1d, scores, cells, class_weight, sample_weight)


def _standardized_1d(scores, cells):
    """The standardized penalty of one score column; gradient without row weights."""
    value, gradient = _group_1d(scores, cells)
    if value == 0.0:
        return 0.0, np.zeros_like(scores)
    weight, labels = cells.weight, cells.labels
    label_weight = np.bincount(labels, weights=weight, minlength=cells.n_labels)
    label_sum = np.bincount(labels, weights=weight * scores, minlength=cells.n_labels)
    label_mean = np.divide(
        label_sum, label_weight, out=np.zeros(label_sum.shape), where=label_weight > 0
    )
    residual = scores - label_mean[labels]
    total = weight.sum()
    variance = float(np.dot(weight, residual * residual) / total) if total > 0 else 0.0
    if variance <= _variance_floor(scores):
        return 0.0, np.zeros_like(scores)
    # d v / d s_i = 2 w_i (s_i - mean of its label) / total: the label means'
    # own derivatives cancel, as residuals sum to 0 within each label. The
    # group penalty's gradient here lacks the row weights (added by the
    # caller), so the variance's is taken per unit weight too.
    variance_gradient = 2.0 * residual / total
    ratio = value / variance
    return ratio, (gradient - ratio * variance_gradient) / variance


def _variance_floor(scores):
    """The variance below which scores are constant up to round-off.

    Scores equal to c within each label have a variance of round-off size
    (about (eps c)^2, not 0): dividing by it would make the ratio noise.
    """
    scale = float(np.max(np.abs(scores))) if scores.size else 0.0
    return max(
        np.finfo(np.float64).tiny, (16.0 * np.finfo(np.float64).eps * scale) ** 2
    )


#: Penalties by the name of the estimators' ``penalty`` parameter.
PENALTIES = {
    "group": group_penalty,
    "individual": individual_penalty,
    "group_standardized": standardized_group_penalty,
}
