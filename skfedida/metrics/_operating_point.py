"""Decisions at an operating point: thresholds found without pooling rows.

A fairness figure on probabilities, or on decisions at 0.5, can come from a
model that compresses or shifts its scores. Comparing two models at the same
selection rate removes that: both select the same share of people, and what
differs is *who*. In a federation the threshold of a given overall selection
rate is found from per-client histograms of the scores on a shared grid, summed
by the server, so no score or row leaves its client.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import column_or_1d

from .._compat import _check_sample_weight

__all__ = [
    "score_histogram",
    "selection_rate",
    "threshold_at_rate",
]

#: Bins of the shared grid on [0, 1] of :func:`score_histogram`.
DEFAULT_N_BINS = 1000


def _check_n_bins(n_bins):
    if not (isinstance(n_bins, numbers.Integral) and n_bins >= 1):
        raise ValueError(f"n_bins must be an int >= 1; got {n_bins!r}.")
    return int(n_bins)


def _check_threshold(threshold):
    """None, a probability in (0, 1), "prevalence" or {"selection_rate": r}."""
    if threshold is None or threshold == "prevalence":
        return threshold
    if isinstance(threshold, dict):
        rate = threshold.get("selection_rate")
        if set(threshold) == {"selection_rate"} and (
            isinstance(rate, numbers.Real) and 0 <= rate <= 1
        ):
            return threshold
    elif (
        isinstance(threshold, numbers.Real)
        and not isinstance(threshold, bool)
        and 0 < threshold < 1
    ):
        return float(threshold)
    raise ValueError(
        "threshold must be None, a probability in (0, 1), 'prevalence' or "
        f"{{'selection_rate': r}} with r in [0, 1]; got {threshold!r}."
    )


def training_prevalence(estimator, positive):
    """Share of ``positive`` in the rows the estimator was trained on, if known.

    From ``class_prior_`` (``FederatedEstimator``, naive Bayes) of the
    estimator or of a pipeline's last step, at the position of ``positive`` in
    its ``classes_``; None when neither says.
    """
    last = getattr(estimator, "steps", [(None, None)])[-1][1]
    for candidate in (estimator, last):
        prior = getattr(candidate, "class_prior_", None)
        classes = getattr(candidate, "classes_", None)
        if prior is None or classes is None or len(prior) != len(classes):
            continue
        where = np.flatnonzero(np.asarray(classes) == positive)
        if where.size == 1:
            return float(prior[where[0]])
    return None


def score_histogram(scores, *, n_bins=DEFAULT_N_BINS, sample_weight=None):
    """Counts of probability scores on a shared grid of equal bins on [0, 1].

    What one client sends so that a server can find the threshold of a target
    selection rate for the whole federation (:func:`threshold_at_rate`): the
    grid is fixed in advance, so histograms from different clients add up.

    Parameters
    ----------
    scores : array-like of shape (n_samples,)
        Probabilities of the positive class, in [0, 1].
    n_bins : int, default=1000
        Number of equal bins on [0, 1]. Every client must use the same value.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative row weights (counts by default).

    Returns
    -------
    histogram : ndarray of shape (n_bins,)
        Total weight of the scores in each bin; bin ``j`` holds scores in
        ``[j / n_bins, (j + 1) / n_bins)``, the last bin also 1.0.

    See Also
    --------
    threshold_at_rate : The threshold of a selection rate from histograms.

    Examples
    --------
    >>> from skfedida.metrics import score_histogram
    >>> score_histogram([0.05, 0.2, 0.95, 1.0], n_bins=4)
    array([2., 0., 0., 2.])
    """
    n_bins = _check_n_bins(n_bins)
    scores = column_or_1d(scores).astype(np.float64, copy=False)
    if not np.all(np.isfinite(scores)) or (
        scores.size and (scores.min() < 0 or scores.max() > 1)
    ):
        raise ValueError(
            "scores must be probabilities in [0, 1] (e.g. predict_proba(X)[:, 1])."
        )
    weight = _check_sample_weight(sample_weight, scores, ensure_non_negative=True)
    bins = np.minimum((scores * n_bins).astype(np.intp), n_bins - 1)
    return np.bincount(bins, weights=weight, minlength=n_bins)


def threshold_at_rate(histograms, rate):
    """The score threshold at which a given share of rows is selected.

    Sums the histograms (one per client, from :func:`score_histogram`) and
    returns ``t`` such that the share of rows with a score above ``t`` is
    ``rate``, interpolating linearly within the bin where that happens: the
    result is within one bin of the quantile of the pooled scores.

    Parameters
    ----------
    histograms : array-like of shape (n_bins,) or (n_clients, n_bins)
        One histogram, or one per client on the same grid.
    rate : float in [0, 1]
        Target selection rate (share of rows with ``score > t``).

    Returns
    -------
    threshold : float
        In [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.metrics import score_histogram, threshold_at_rate
    >>> clients = [np.linspace(0, 1, 1000), np.linspace(0.5, 1, 1000)]
    >>> histograms = [score_histogram(s, n_bins=100) for s in clients]
    >>> t = threshold_at_rate(histograms, 0.25)  # a quarter of 2000 rows
    >>> round(t, 3)
    0.833
    >>> int(sum((s > t).sum() for s in clients))
    500
    """
    if not (isinstance(rate, numbers.Real) and 0 <= rate <= 1):
        raise ValueError(f"rate must be a number in [0, 1]; got {rate!r}.")
    counts = np.asarray(histograms, dtype=np.float64)
    if counts.ndim == 2:
        counts = counts.sum(axis=0)
    if counts.ndim != 1 or counts.size == 0 or np.any(counts < 0):
        raise ValueError(
            "histograms must be one non-negative histogram or one per client, "
            "all on the same grid."
        )
    total = counts.sum()
    if total <= 0:
        raise ValueError("histograms hold no rows; cannot place a threshold.")
    n_bins = counts.size
    # above[j]: weight of the scores in bins j, j + 1, ... (at or above edge j).
    above = np.concatenate([np.cumsum(counts[::-1])[::-1], [0.0]])
    wanted = rate * total
    # The bin j with above[j + 1] <= wanted <= above[j]: the target lies in it.
    j = int(np.searchsorted(-above, -wanted, side="right")) - 1
    j = min(max(j, 0), n_bins - 1)
    inside = counts[j]
    fraction = 0.0 if inside <= 0 else (above[j] - wanted) / inside
    return float(np.clip((j + fraction) / n_bins, 0.0, 1.0))


def selection_rate(y_true, y_pred, *, pos_label=None, sample_weight=None):
    """Share of rows predicted positive, P(ŷ = pos_label).

    With :func:`sklearn.metrics.make_scorer`, the scorer that lets a search
    see (and refuse) a candidate that predicts almost no, or almost only,
    positives: see :func:`~skfedida.model_selection.fairest_within`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels (used only for their number).
    y_pred : array-like of shape (n_samples,)
        Predicted labels.
    pos_label : int, float, bool or str, default=None
        The positive label; needed unless the labels are in {0, 1} or
        {-1, 1}, where it is 1.
    sample_weight : array-like of shape (n_samples,), default=None
        Row weights.

    Returns
    -------
    rate : float

    Examples
    --------
    >>> from skfedida.metrics import selection_rate
    >>> selection_rate([0, 1, 1, 0], [0, 1, 0, 0])
    0.25
    >>> selection_rate(["no", "yes"], ["yes", "yes"], pos_label="yes")
    1.0
    """
    from ._fairness import _check_targets

    y_true, y_pred = column_or_1d(y_true), column_or_1d(y_pred)
    if len(y_true) != y_pred.shape[0]:
        raise ValueError("y_true and y_pred must have the same length.")
    if y_pred.shape[0] == 0:
        raise ValueError("y_pred is empty; the selection rate needs at least one row.")
    # The metrics' label rules: {0, 1} or {-1, 1} need no pos_label, others
    # do, and a pos_label that is neither of two labels present is an error.
    _, predicted, weight = _check_targets(
        y_true, y_pred, sample_weight, pos_label, soft=False
    )
    return float(np.average(predicted, weights=weight))
