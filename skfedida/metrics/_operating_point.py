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

from .._compat import Hidden, Interval, check_sample_weight, validate_params
from .._ordinal import from_ordinal, ordinal

__all__ = [
    "OperatingPoint",
    "federated_operating_point",
    "federated_threshold",
    "score_histogram",
    "selection_rate",
    "threshold_at_rate",
]

#: Bins of the shared grid on [0, 1] of :func:`score_histogram`.
DEFAULT_N_BINS = 1000

#: Largest grid: a pass of narrowing refines a bin far below 1e-6, so a finer
#: grid only costs memory (8 bytes a bin in every client's histogram).
MAX_N_BINS = 1_000_000
#: A grid of one bin cannot place a threshold (every row would be one block).
MIN_N_BINS = 2
N_BINS_CONSTRAINTS = [Interval(numbers.Integral, MIN_N_BINS, MAX_N_BINS, closed="both")]
_RATE = [Interval(numbers.Real, 0, 1, closed="both")]
# sklearn's check_sample_weight also takes one number for every row.
_SAMPLE_WEIGHT = ["array-like", Hidden(numbers.Real), None]
# The parameters of the functions that read every client's scores.
_CLIENT_SCORES_PARAMETERS = {
    # Lists of per-client arrays; any iterable of them works.
    "client_scores": ["array-like", Hidden(Iterable)],
    "rate": _RATE,
    "n_bins": N_BINS_CONSTRAINTS,
    "sample_weights": ["array-like", Hidden(Iterable), None],
}


def _check_n_bins(n_bins):
    if not (
        isinstance(n_bins, numbers.Integral)
        and not isinstance(n_bins, bool)
        and MIN_N_BINS <= n_bins <= MAX_N_BINS
    ):
        raise ValueError(
            f"n_bins must be an int in [{MIN_N_BINS}, {MAX_N_BINS:,}] (one bin "
            "places no threshold; the narrowing passes refine a bin further, so "
            f"a finer grid only costs memory); got {n_bins!r}."
        )
    return int(n_bins)


def check_threshold(threshold):
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
    {
        "scores": ["array-like"],
        "n_bins": N_BINS_CONSTRAINTS,
        "sample_weight": _SAMPLE_WEIGHT,
    },
    prefer_skip_nested_validation=True,
)
def score_histogram(scores, *, n_bins=DEFAULT_N_BINS, sample_weight=None):
    """Count probability scores on a shared grid of equal bins on [0, 1].

    What one client sends so that a server can find the threshold of a target
    selection rate for the whole federation in one pass
    (:func:`threshold_at_rate`, within one bin); the grid is fixed in
    advance, so histograms from different clients add up.
    :func:`federated_operating_point` narrows such grids until the target
    share is selected exactly.

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
    federated_operating_point : Exactly a target share, from narrowed grids.

    Examples
    --------
    >>> from skfedida.metrics import score_histogram
    >>> score_histogram([0.05, 0.2, 0.95, 1.0], n_bins=4)
    array([2., 0., 0., 2.])
    """
    n_bins = _check_n_bins(n_bins)
    scores = column_or_1d(scores).astype(np.float64, copy=False)
    bins = score_bins(scores, n_bins)
    weight = check_sample_weight(sample_weight, scores, ensure_non_negative=True)
    return np.bincount(bins, weights=weight, minlength=n_bins)


def _checked_probabilities(scores):
    """``scores`` as float64, refused unless every one is in [0, 1]."""
    scores = np.asarray(scores, dtype=np.float64)
    if not np.all(np.isfinite(scores)) or (
        scores.size and (scores.min() < 0 or scores.max() > 1)
    ):
        raise ValueError(
            "scores must be probabilities in [0, 1] (e.g. predict_proba(X)[:, 1])."
        )
    return scores


def score_bins(scores, n_bins):
    """The bin of every probability on the shared grid of ``n_bins`` on [0, 1].

    Bin ``j`` holds ``[j / n_bins, (j + 1) / n_bins)``, the last one also 1.0;
    every histogram a client sends, and every rule read off them, uses it.
    """
    scores = _checked_probabilities(scores)
    return np.minimum((scores * n_bins).astype(np.intp), n_bins - 1)


def _summed_histograms(histograms):
    """One histogram, or the sum of one per client; every count checked.

    A NaN, infinite or negative count would move the threshold anywhere (a
    NaN one gives a NaN threshold: no row selected), and histograms of
    different lengths are on different grids: each is an error naming the
    histogram at fault.
    """
    if isinstance(histograms, np.ndarray) and histograms.dtype != object:
        rows = [histograms] if histograms.ndim == 1 else list(histograms)
        nested = histograms.ndim == 2
    else:
        rows = list(histograms)
        nested = bool(rows) and not isinstance(rows[0], numbers.Number)
        if not nested:
            rows = [rows]
    if (isinstance(histograms, np.ndarray) and histograms.ndim not in (1, 2)) or (
        not rows
    ):
        raise ValueError(
            "histograms must be one histogram of shape (n_bins,) or one per "
            "client, shape (n_clients, n_bins)."
        )
    arrays = []
    for k, row in enumerate(rows):
        where = f"histogram {k}" if nested else "the histogram"
        try:
            array = np.asarray(row, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where} does not hold numbers: {exc}") from None
        if array.ndim != 1 or array.size == 0:
            raise ValueError(
                f"{where} must be a non-empty 1-D array of counts; got shape "
                f"{array.shape}."
            )
        if arrays and array.size != arrays[0].size:
            raise ValueError(
                f"{where} has {array.size} bins and histogram 0 has "
                f"{arrays[0].size}: every client must count on the same grid "
                "(the same n_bins)."
            )
        bad = ~np.isfinite(array) | (array < 0)
        if bad.any():
            raise ValueError(
                f"{where} has {int(bad.sum())} bins that are not finite, "
                f"non-negative counts (bin {int(np.flatnonzero(bad)[0])}: "
                f"{float(array[bad][0])!r})."
            )
        arrays.append(array)
    # Only the counts' proportions place a threshold: scaled by the largest,
    # counts near the float maximum sum without overflowing.
    largest = max(float(a.max()) for a in arrays)
    return np.sum([a / largest for a in arrays], axis=0) if largest > 0 else arrays[0]


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
    counts = _summed_histograms(histograms)
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


#: Place of 1.0 in float64's order, plus one: the top of the first grid, so
#: that a score of 1.0 has a bin.
_TOP = int(ordinal(1.0)) + 1


def _integer_edges(low, high, n_bins):
    """``n_bins + 1`` non-decreasing integer edges from ``low`` to ``high``.

    Exact integer arithmetic, vectorised (no Python loop over the bins, no
    float rounding, no int64 overflow): edge ``i`` is ``low + floor((high -
    low) * i / n_bins)``, the rule of :func:`skfedida._ordinal.ordinal_edges`
    with repeated edges kept, so that every pass has ``n_bins`` bins.
    """
    step, rest = divmod(high - low, n_bins)
    i = np.arange(n_bins + 1, dtype=np.int64)
    return low + step * i + (rest * i) // n_bins


class OperatingPoint:
    """Decisions that select exactly a target share of rows, ties included.

    Rows scoring at or above ``upper`` are selected, rows below ``threshold``
    are not, and rows in between (the *tied block*: one score shared by many
    rows, as tabular models give, or the scores of a bin no threshold can
    split) are each selected with probability ``tie_probability``. The
    probability is chosen so that the expected share of selected rows equals
    the target exactly, whatever the ties: a deterministic threshold inside a
    block of tied scores would select a different share for each model, and
    the model that selects fewer people would look fairer.

    Made by :func:`federated_operating_point`; its rates are those of a
    randomised classifier (Hardt et al. 2016, as fairlearn's
    ``ThresholdOptimizer``): a group's selection rate, FPR and PPV are its
    expected counts' ratios, read off :meth:`expected_decisions` with the
    metrics' ``soft=True``, with no random draw and so no seed noise.

    Parameters
    ----------
    threshold : float
        Lower edge of the tied block; rows scoring below it are not selected.
    upper : float
        Upper edge of the tied block; rows scoring at or above it are selected.
    tie_probability : float
        Probability that a row of the tied block is selected, in [0, 1].
    target_rate : float
        The (weighted) share of rows the decisions select.
    tied_share : float
        The (weighted) share of rows in the tied block.

    See Also
    --------
    federated_operating_point : Find it from the clients' histograms.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.metrics import federated_operating_point
    >>> scores = np.r_[np.full(100, 0.9), np.full(300, 0.5), np.full(600, 0.1)]
    >>> point = federated_operating_point([scores], 0.25)
    >>> round(point.tie_probability, 4)  # 150 of the 300 tied rows
    0.5
    >>> float(point.expected_decisions(scores).sum())
    250.0
    """

    def __init__(self, threshold, upper, tie_probability, target_rate, tied_share):
        self.threshold = float(threshold)
        self.upper = float(upper)
        self.tie_probability = float(tie_probability)
        self.target_rate = float(target_rate)
        self.tied_share = float(tied_share)

    def __repr__(self):
        return (
            f"OperatingPoint(threshold={self.threshold!r}, upper={self.upper!r}, "
            f"tie_probability={self.tie_probability!r}, "
            f"target_rate={self.target_rate!r}, tied_share={self.tied_share!r})"
        )

    def _tied(self, scores):
        return (scores >= self.threshold) & (scores < self.upper)

    def expected_decisions(self, scores):
        """Each row's probability of being selected: 1, ``tie_probability`` or 0.

        Parameters
        ----------
        scores : array-like of shape (n_samples,)
            Probabilities of the positive class, in [0, 1].

        Returns
        -------
        decisions : ndarray of shape (n_samples,)
            Floats in [0, 1]; score them with the metrics' ``soft=True``.
        """
        scores = column_or_1d(scores).astype(np.float64, copy=False)
        decisions = (scores >= self.upper).astype(np.float64)
        decisions[self._tied(scores)] = self.tie_probability
        return decisions

    def decisions(self, scores, random_state=None):
        """0/1 decisions, the tied rows selected at random.

        Each client draws its own; the federation's selected share equals
        the target in expectation (and on the rows of one call, within one
        row of it: the tied rows selected are a random subset of the number
        the probability gives).

        Parameters
        ----------
        scores : array-like of shape (n_samples,)
            Probabilities of the positive class, in [0, 1].
        random_state : int, RandomState instance or None, default=None
            Seed of the draw among the tied rows.

        Returns
        -------
        decisions : ndarray of shape (n_samples,)
            0/1 integers.
        """
        from sklearn.utils import check_random_state

        scores = column_or_1d(scores).astype(np.float64, copy=False)
        decisions = (scores >= self.upper).astype(np.int64)
        tied = np.flatnonzero(self._tied(scores))
        # A share of the block rounded to whole rows, the remainder drawn: the
        # expected count is exact and the realised one within a row of it.
        wanted = self.tie_probability * tied.size
        rng = check_random_state(random_state)
        n_chosen = int(np.floor(wanted)) + int(rng.uniform() < wanted % 1)
        decisions[rng.permutation(tied)[:n_chosen]] = 1
        return decisions


@validate_params(_CLIENT_SCORES_PARAMETERS, prefer_skip_nested_validation=True)
def federated_operating_point(
    client_scores, rate, *, n_bins=DEFAULT_N_BINS, sample_weights=None
):
    """The decisions that select exactly ``rate``, as a server finds them.

    Every client sends a histogram of its scores on a shared grid (their
    weights and their number of rows) plus the weight of its scores above the
    grid; the server sums them and finds the bin where the cut lies. While
    that bin holds more than one row the server narrows the grid to it and
    asks again, until the bin holds one row or one score shared by all its
    rows (ties). The grid is over the scores' float64 order (the bits of a
    non-negative float, read as an integer, grow with its value), so 7 passes
    of 1000 bins separate any two distinct scores, however small or close.
    The rows of that last bin are the tied block, selected with the
    probability that makes the selected share exactly ``rate``: only summed
    histograms leave the clients, and every model compared at the same rate
    selects the same share.

    Parameters
    ----------
    client_scores : list of array-like
        Each client's probabilities of the positive class, in [0, 1].
    rate : float in [0, 1]
        Target (weighted) share of rows selected.
    n_bins : int, default=1000
        Bins of each pass, at most 1,000,000.
    sample_weights : list of array-like, default=None
        Each client's non-negative row weights.

    Returns
    -------
    operating_point : OperatingPoint
        The rule; its :meth:`~OperatingPoint.expected_decisions` select
        exactly ``rate`` of the rows.

    See Also
    --------
    federated_threshold : The closest deterministic threshold instead.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.metrics import federated_operating_point
    >>> clients = [np.r_[np.full(60, 0.7), np.linspace(0, 0.5, 40)], np.full(50, 0.7)]
    >>> point = federated_operating_point(clients, 0.5)  # 75 of 150 rows
    >>> round(point.tie_probability, 4), round(point.tied_share, 4)
    (0.6818, 0.7333)
    >>> float(sum(point.expected_decisions(s).sum() for s in clients))
    75.0
    """
    if not (isinstance(rate, numbers.Real) and 0 <= rate <= 1):
        raise ValueError(f"rate must be a number in [0, 1]; got {rate!r}.")
    n_bins = _check_n_bins(n_bins)
    scores = [column_or_1d(s).astype(np.float64, copy=False) for s in client_scores]
    if sample_weights is None:
        weights = [np.ones(s.shape) for s in scores]
    else:
        weights = [np.asarray(w, dtype=np.float64) for w in sample_weights]
        if len(weights) != len(scores) or any(
            w.shape != s.shape for s, w in zip(scores, weights, strict=False)
        ):
            raise ValueError(
                "sample_weights must hold one weight per score of every client."
            )
        if any(not np.all(np.isfinite(w)) or np.any(w < 0) for w in weights):
            raise ValueError("sample_weights must be finite and non-negative.")
    scores = [_checked_probabilities(s) for s in scores]
    # Only the weights' proportions matter: scaled by the largest, weights
    # near the float maximum sum without overflowing.
    largest = max((float(w.max()) for w in weights if w.size), default=0.0)
    if largest > 0:
        weights = [w / largest for w in weights]
    total = float(sum(w.sum() for w in weights))
    if total <= 0:
        raise ValueError("the clients hold no rows; cannot place a threshold.")
    wanted = rate * total
    # -0.0 is a probability of 0: folded onto 0.0, the grid's bottom.
    orders = [ordinal(s + 0.0) for s in scores]
    # Half-open bins [low, high) of float64's order.
    low, high = 0, _TOP
    for _ in range(int(np.ceil(63 / np.log2(n_bins))) + 1):
        edges = _integer_edges(low, high, n_bins)
        counts = np.zeros(n_bins)
        n_rows = np.zeros(n_bins, dtype=np.int64)
        above_high = 0.0
        for order, w in zip(orders, weights, strict=True):
            # What each client sends: weights and rows on the grid over
            # [low, high), and the weight of its scores at or above it.
            inside = (order >= low) & (order < high)
            bins = np.clip(
                np.searchsorted(edges, order[inside], side="right") - 1,
                0,
                n_bins - 1,
            )
            counts += np.bincount(bins, weights=w[inside], minlength=n_bins)
            n_rows += np.bincount(bins, minlength=n_bins)
            above_high += float(w[order >= high].sum())
        above = above_high + np.concatenate([np.cumsum(counts[::-1])[::-1], [0.0]])
        # The bin j with above[j + 1] <= wanted <= above[j]: the target lies in it.
        j = int(np.searchsorted(-above, -wanted, side="right")) - 1
        j = min(max(j, 0), n_bins - 1)
        block_low, block_high = int(edges[j]), int(edges[j + 1])
        # A bin of one row, or of one float value (tied scores), needs no
        # finer grid: no threshold splits it.
        if n_rows[j] <= 1 or block_high - block_low <= 1:
            break
        low, high = block_low, block_high
    in_block = counts[j]
    above_block = above[j + 1]
    tie_probability = (
        0.0
        if in_block <= 0
        else float(np.clip((wanted - above_block) / in_block, 0, 1))
    )
    return OperatingPoint(
        threshold=from_ordinal(block_low),
        upper=from_ordinal(block_high),
        tie_probability=tie_probability,
        target_rate=float(rate),
        tied_share=float(in_block / total),
    )


@validate_params(_CLIENT_SCORES_PARAMETERS, prefer_skip_nested_validation=True)
def federated_threshold(
    client_scores, rate, *, n_bins=DEFAULT_N_BINS, sample_weights=None
):
    """The deterministic threshold closest to a selection rate, from histograms.

    The server finds the tied block at the target as
    :func:`federated_operating_point` does, then selects all of it or none of
    it, whichever is closer to the target. Scores that tie exactly cannot be
    split by any threshold, so the selected share can miss the target by up
    to half the block: to compare models at *exactly* the same rate, use
    :func:`federated_operating_point` (what :func:`evaluate_clients
    <skfedida.federated.evaluate_clients>` and the scorers' ``threshold=`` do).

    Parameters
    ----------
    client_scores : list of array-like
        Each client's probabilities of the positive class, in [0, 1].
    rate : float in [0, 1]
        Target share of rows with ``score > threshold``.
    n_bins : int, default=1000
        Bins of each pass, at most 1,000,000.
    sample_weights : list of array-like, default=None
        Each client's row weights.

    Returns
    -------
    threshold : float
        The cut, in [0, 1]: rows with ``score > threshold`` are selected, and
        their (weighted) share of all the clients' rows is as close to
        ``rate`` as ties among the scores allow.

    See Also
    --------
    federated_operating_point : Exactly the target rate, ties randomised.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.metrics import federated_threshold
    >>> squashed = [0.25 + 1e-6 * np.linspace(0, 1, 1000), 0.25 + 1e-6 * np.ones(10)]
    >>> t = federated_threshold(squashed, 0.5)
    >>> int(sum((s > t).sum() for s in squashed))  # half of 1,010 rows
    505
    """
    point = federated_operating_point(
        client_scores, rate, n_bins=n_bins, sample_weights=sample_weights
    )
    # The whole block selected (cut just below it) or none of it (cut just
    # below its upper edge, so that scores at the edge stay selected).
    whole = (
        float(np.nextafter(point.threshold, -np.inf)) if point.threshold > 0 else 0.0
    )
    none = float(np.nextafter(point.upper, -np.inf))
    cut = whole if point.tie_probability >= 0.5 else none
    return float(np.clip(cut, 0.0, 1.0))


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
    from ._fairness import _check_targets, _ProbabilitiesAsLabelsError

    y_true, y_pred = column_or_1d(y_true), column_or_1d(y_pred)
    if len(y_true) != y_pred.shape[0]:
        raise ValueError("y_true and y_pred must have the same length.")
    if y_pred.shape[0] == 0:
        raise ValueError("y_pred is empty; the selection rate needs at least one row.")
    # The metrics' label rules: {0, 1} or {-1, 1} need no pos_label, others
    # do, and a pos_label that is neither of two labels present is an error.
    try:
        _, predicted, weight = _check_targets(
            y_true, y_pred, sample_weight, pos_label, soft=False
        )
    except _ProbabilitiesAsLabelsError:
        # The metrics' advice (soft=True) has no meaning here: a mean of
        # probabilities is not a share of people selected.
        raise ValueError(
            "selection_rate counts predicted labels, and y_pred holds "
            "probabilities or scores: pass the estimator's predict(X), or the "
            "scores cut at a threshold (y_score > t)."
        ) from None
    return float(np.average(predicted, weights=weight))
