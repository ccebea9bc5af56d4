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
from collections.abc import Hashable, Iterable

import numpy as np
from sklearn.utils import column_or_1d

from .._compat import Hidden, Interval, _check_sample_weight, validate_params

__all__ = [
    "federated_threshold",
    "score_histogram",
    "selection_rate",
    "threshold_at_rate",
]

#: Bins of the shared grid on [0, 1] of :func:`score_histogram`.
DEFAULT_N_BINS = 1000

_N_BINS = [Interval(numbers.Integral, 1, None, closed="left")]
_RATE = [Interval(numbers.Real, 0, 1, closed="both")]
# sklearn's _check_sample_weight also takes one number for every row.
_SAMPLE_WEIGHT = ["array-like", Hidden(numbers.Real), None]


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


@validate_params(
    {"scores": ["array-like"], "n_bins": _N_BINS, "sample_weight": _SAMPLE_WEIGHT},
    prefer_skip_nested_validation=True,
)
def score_histogram(scores, *, n_bins=DEFAULT_N_BINS, sample_weight=None):
    """Count probability scores on a shared grid of equal bins on [0, 1].

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
    bins = _score_bins(scores, n_bins)
    weight = _check_sample_weight(sample_weight, scores, ensure_non_negative=True)
    return np.bincount(bins, weights=weight, minlength=n_bins)


def _score_bins(scores, n_bins):
    """The bin of every probability on the shared grid of ``n_bins`` on [0, 1].

    Bin ``j`` holds ``[j / n_bins, (j + 1) / n_bins)``, the last one also 1.0;
    every histogram a client sends, and every rule read off them, uses it.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if not np.all(np.isfinite(scores)) or (
        scores.size and (scores.min() < 0 or scores.max() > 1)
    ):
        raise ValueError(
            "scores must be probabilities in [0, 1] (e.g. predict_proba(X)[:, 1])."
        )
    return np.minimum((scores * n_bins).astype(np.intp), n_bins - 1)


@validate_params(
    {"histograms": ["array-like"], "rate": _RATE},
    prefer_skip_nested_validation=True,
)
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


#: Narrowing passes of :func:`federated_threshold` (1000 bins each: a cut to
#: 1e-18 of the unit interval, far below float64 spacing near 1).
_MAX_PASSES = 6


@validate_params(
    {
        # Lists of per-client arrays; any iterable of them works.
        "client_scores": ["array-like", Hidden(Iterable)],
        "rate": _RATE,
        "n_bins": _N_BINS,
        "sample_weights": ["array-like", Hidden(Iterable), None],
    },
    prefer_skip_nested_validation=True,
)
def federated_threshold(
    client_scores, rate, *, n_bins=DEFAULT_N_BINS, sample_weights=None
):
    """The threshold of a selection rate, as a server finds it from histograms.

    Every client sends a histogram of its scores on a shared grid
    (:func:`score_histogram`) plus how many of its scores lie above the grid;
    the server sums them and finds the bin where the cut lies. When that bin
    holds more than a thousandth of the rows (scores bunched together, as a
    model that compresses its scores gives), the server narrows the grid to
    that bin and asks again, up to 6 times. So the selected share matches the
    target however narrow the spread of the scores. Scores that tie exactly
    cannot be split by any threshold: the server then asks each client how
    many rows three candidate cuts select (inside the last bin, and either
    edge of it) and keeps the closest to the target.

    Parameters
    ----------
    client_scores : list of array-like
        Each client's probabilities of the positive class, in [0, 1].
    rate : float in [0, 1]
        Target share of rows with ``score > threshold``.
    n_bins : int, default=1000
        Bins of each pass.
    sample_weights : list of array-like, default=None
        Each client's row weights.

    Returns
    -------
    threshold : float
        The cut, in [0, 1]: rows with ``score > threshold`` are selected, and
        their (weighted) share of all the clients' rows is close to ``rate``
        (as close as ties among the scores allow).

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.metrics import federated_threshold
    >>> squashed = [0.25 + 1e-6 * np.linspace(0, 1, 1000), 0.25 + 1e-6 * np.ones(10)]
    >>> t = federated_threshold(squashed, 0.5)
    >>> int(sum((s > t).sum() for s in squashed))  # half of 1,010 rows
    505
    """
    if not (isinstance(rate, numbers.Real) and 0 <= rate <= 1):
        raise ValueError(f"rate must be a number in [0, 1]; got {rate!r}.")
    n_bins = _check_n_bins(n_bins)
    scores = [column_or_1d(s).astype(np.float64, copy=False) for s in client_scores]
    weights = (
        [np.ones(s.shape) for s in scores]
        if sample_weights is None
        else [np.asarray(w, dtype=np.float64) for w in sample_weights]
    )
    for s in scores:
        if not np.all(np.isfinite(s)) or (s.size and (s.min() < 0 or s.max() > 1)):
            raise ValueError(
                "scores must be probabilities in [0, 1] (e.g. predict_proba(X)[:, 1])."
            )
    total = float(sum(w.sum() for w in weights))
    if total <= 0:
        raise ValueError("the clients hold no rows; cannot place a threshold.")
    wanted = rate * total
    # A bin holding one row (or a thousandth of them) needs no finer grid: no
    # threshold splits a row, and further passes only meet float spacing.
    enough = max(1e-3 * total, max(float(w.max()) for w in weights if w.size))
    low, high = 0.0, 1.0
    cut = 1.0
    for _ in range(_MAX_PASSES):
        width = high - low
        counts = np.zeros(n_bins)
        above_high = 0.0
        for s, w in zip(scores, weights, strict=True):
            # What each client sends: counts on the grid over [low, high], and
            # the weight of its scores above it.
            inside = (s >= low) & (s <= high)
            bins = np.minimum(
                ((s[inside] - low) / width * n_bins).astype(np.intp), n_bins - 1
            )
            counts += np.bincount(bins, weights=w[inside], minlength=n_bins)
            above_high += float(w[s > high].sum())
        above = above_high + np.concatenate([np.cumsum(counts[::-1])[::-1], [0.0]])
        j = int(np.searchsorted(-above, -wanted, side="right")) - 1
        j = min(max(j, 0), n_bins - 1)
        inside_bin = counts[j]
        fraction = 0.0 if inside_bin <= 0 else (above[j] - wanted) / inside_bin
        cut = float(np.clip(low + (j + fraction) * width / n_bins, 0.0, 1.0))
        next_low, next_high = low + j * width / n_bins, low + (j + 1) * width / n_bins
        if (
            inside_bin <= enough
            or next_high <= next_low
            or (next_low == low and next_high == high)
        ):
            break
        low, high = next_low, next_high

    # Scores tied inside the last bin cannot be split: ask the clients how
    # many rows each candidate selects (one count per client) and keep the
    # one closest to the target: the interpolated cut, or either edge of the
    # bin (its rows all selected, or none).
    def selected(t):
        return sum(float(w[s > t].sum()) for s, w in zip(scores, weights, strict=True))

    below_bin = np.nextafter(next_low, -np.inf) if next_low > 0 else -np.inf
    candidates = [cut, float(max(below_bin, 0.0)), float(next_high)]
    return min(candidates, key=lambda t: abs(selected(t) - wanted))


@validate_params(
    {
        "y_true": ["array-like"],
        "y_pred": ["array-like"],
        "pos_label": [Hashable, None],
        "sample_weight": _SAMPLE_WEIGHT,
    },
    prefer_skip_nested_validation=True,
)
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
        The (weighted) share of rows with ``y_pred == pos_label``, in [0, 1].

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
