"""Warnings of skfedida.

Every warning skfedida raises about its own inputs and results is a
:class:`SkfedidaWarning`, so that they can be filtered together, or one kind
at a time by its class, never by matching message text. All are
``UserWarning`` subclasses.
"""

from __future__ import annotations

import inspect
import os
import warnings

import numpy as np

__all__ = [
    "ClientDataWarning",
    "DataScaleWarning",
    "DegenerateModelWarning",
    "EmptyRangeWarning",
    "InactiveGroupBalancingWarning",
    "InactivePenaltyWarning",
    "OperatingPointWarning",
    "OutlyingUpdateWarning",
    "SensitiveFeaturesWarning",
    "SkfedidaWarning",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def caller_stacklevel():
    """The ``stacklevel`` that attributes a warning to the user's own line.

    Counts the frames inside skfedida, and sklearn's decorator wrappers
    (``fit_context``, ``validate_params``) between them, from the warning
    site up to the first frame of other code: the same warning then points
    at the user's ``fit(...)`` call however deep in the package it is raised,
    and whichever public method led there (pandas' ``find_stack_level``
    does this for pandas).

    Returns
    -------
    stacklevel : int
        For ``warnings.warn(..., stacklevel=caller_stacklevel())``.
    """
    frame = inspect.currentframe()
    level = 0
    try:
        while frame is not None:
            filename = frame.f_code.co_filename
            inside = filename.startswith(_PACKAGE_DIR + os.sep) or (
                frame.f_code.co_name == "wrapper"
                and f"{os.sep}sklearn{os.sep}" in filename
            )
            if not inside:
                break
            frame = frame.f_back
            level += 1
    finally:
        del frame
    # The count includes this function's frame, which is gone when the
    # caller warns: the level is relative to the warning site, as needed.
    return max(level, 1)


#: A model whose decisions put at least this share of rows in one class.
_DEGENERATE_SHARE = 0.99


class SkfedidaWarning(UserWarning):
    """Base class of every warning skfedida raises.

    Filter it to silence, or to turn into errors, all of skfedida's warnings
    at once; its subclasses name one kind each.

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import SkfedidaWarning
    >>> warnings.simplefilter("error", SkfedidaWarning)
    """


class DegenerateModelWarning(SkfedidaWarning):
    """A fitted model whose decisions are (almost) all one class.

    Such a model has tiny disparities at its own threshold (it selects almost
    nobody, or almost everybody, in every group) without treating the groups
    more alike. It usually means the fairness weight is too large for the
    data: the penalty was lowered by shrinking every score to one value.

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import DegenerateModelWarning
    >>> warnings.simplefilter("error", DegenerateModelWarning)
    """


class InactivePenaltyWarning(SkfedidaWarning):
    """A fairness weight was set, but the penalty cannot act.

    Raised when ``fairness > 0`` and no sensitive attributes were given, or
    they take a single value: the model is then the unpenalised one. Filter it
    by this class, not by its message, where that is expected (e.g. the
    ``fairness=0`` baseline of a lambda search).

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import InactivePenaltyWarning
    >>> warnings.simplefilter("ignore", InactivePenaltyWarning)
    """


class InactiveGroupBalancingWarning(InactivePenaltyWarning):
    """A fairness-aware sampler given no sensitive attributes.

    Raised by ``FairnessAwareROSE`` when neither ``sensitive_features`` nor
    ``sensitive=`` columns were given: every row is then in one group and
    only the outcome classes are balanced, as a plain
    ``RandomOverSampler(shrinkage=...)`` would. A subclass of
    :class:`InactivePenaltyWarning`, so that code which silences the
    fairness machinery's "no sensitive attributes" warnings by that class
    (a federation's clients, a lambda search) silences this one too.

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import InactiveGroupBalancingWarning
    >>> warnings.simplefilter("error", InactiveGroupBalancingWarning)
    """


class DataScaleWarning(SkfedidaWarning):
    """Features on scales too far apart for stochastic gradient training.

    Issued by the fair estimators' ``partial_fit``, ``FairMLPClassifier.fit``
    and ``FederatedEstimator.fit`` when the largest absolute values of two
    features differ by more than a factor of 1e4: one step size cannot suit
    them all, and the model may learn nothing. Scale the features first
    (e.g. ``StandardScaler``). ``FairMLPClassifier``'s ``fit`` and first
    ``partial_fit`` (and ``FederatedEstimator.fit`` of one) also issue it
    when a feature exceeds 1e3 in absolute
    value: its hidden units start from weights meant for features of order
    1, and saturate.

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import DataScaleWarning
    >>> warnings.simplefilter("error", DataScaleWarning)
    """


class SensitiveFeaturesWarning(SkfedidaWarning):
    """Sensitive attributes that do not look like group memberships.

    Raised when the sensitive attributes split the rows into about as many
    groups as rows (an identifier column passed by mistake): the fairness
    penalty then compares individuals, not groups.

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import SensitiveFeaturesWarning
    >>> warnings.simplefilter("error", SensitiveFeaturesWarning)
    """


class ClientDataWarning(SkfedidaWarning):
    """A client whose rows the federation handles in a special way.

    Raised by ``FederatedEstimator`` when a client has a single class in its
    training rows (it trains anyway, without resampling), and when
    ``predict(X, clients=...)`` meets clients not seen in ``fit`` (their rows
    get the global model).

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import ClientDataWarning
    >>> warnings.simplefilter("ignore", ClientDataWarning)
    """


class OutlyingUpdateWarning(SkfedidaWarning):
    """A client's update far larger than the other clients', unbounded.

    Raised by ``FederatedEstimator`` (and the Flower ServerApp) when, in some
    round, one client's update norm is over 10 times the median of the other
    clients' and nothing bounded it (the plain mean, no
    ``max_update_norm``): a broken or hostile client (or one whose features
    are on another scale) then moves the global model that far. Sign-flipped
    updates have ordinary norms and raise nothing.

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import OutlyingUpdateWarning
    >>> warnings.simplefilter("error", OutlyingUpdateWarning)
    """


class OperatingPointWarning(SkfedidaWarning):
    """The model's ranking cannot meet the target selection rate.

    Raised by ``evaluate_clients`` at a target selection rate when more than
    10% of the rows share the score at the threshold (a model that gives most
    rows one score): the target is met by selecting those rows with a
    probability, so their decisions are random and the disparities are
    largely those of random selection. (The share selected always equals the
    target: the report's ``achieved_rate``.) Read the report's ``tied_share``
    and AUROC before its disparities.

    Raised also by ``FederatedThresholdOptimizer`` when more than half of
    the (positive, negative) pairs of rows within the sensitive groups fall
    in one bin of its score grid: its thresholds cannot rank them (a
    ``decision_function`` of tiny spread, whose sigmoid puts every row in one
    bin, does this).

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import OperatingPointWarning
    >>> warnings.simplefilter("error", OperatingPointWarning)
    """


class EmptyRangeWarning(SkfedidaWarning):
    """A search found no room for a nonzero fairness weight.

    Raised by ``lambda_range`` when a client's score falls below the
    tolerance, or its model becomes degenerate, at the first nonzero lambda:
    the range is then ``(0, 0)``. Try a finer grid near 0, a lower tolerance
    or more validation rows.

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import EmptyRangeWarning
    >>> warnings.simplefilter("error", EmptyRangeWarning)
    """


def warn_if_degenerate(positive_share, owner, rows="training rows", label=None):
    """Warn when decisions put >= 99% of the ``rows`` in one class.

    With more than two classes, ``positive_share`` is the share of the most
    predicted class and ``label`` that class.
    """
    if not np.isfinite(positive_share):
        return
    if label is not None and positive_share < _DEGENERATE_SHARE:
        return
    if positive_share <= 1 - _DEGENERATE_SHARE or positive_share >= _DEGENERATE_SHARE:
        side = "positive" if positive_share >= _DEGENERATE_SHARE else "negative"
        if label is not None:
            side = repr(label)
        share = max(positive_share, 1 - positive_share)
        if label is None:
            where = "at the 0.5 threshold"
            compare = (
                "and compare models at a matched selection rate "
                "(evaluate_clients(..., threshold='prevalence'))."
            )
        else:
            where = "of its decisions"
            compare = "and compare models by the classes' shares of the decisions."
        warnings.warn(
            f"{owner} predicts the {side} class for {share:.1%} "
            f"of its {rows}: its disparities {where} are "
            "near 0 because it treats (almost) everybody alike, not because it "
            "treats the groups alike. Lower the fairness weight (with "
            "penalty='group', shrinking every score is the cheapest way to lower "
            "the penalty; penalty='group_standardized' avoids that, though at "
            f"large weights it still keeps the scores close together), {compare}",
            DegenerateModelWarning,
            stacklevel=caller_stacklevel(),
        )


def warn_if_degenerate_decisions(counts, classes, owner):
    """``warn_if_degenerate`` from the federation's counts of decisions per class.

    The one rule of both backends (in-process and Flower).

    Parameters
    ----------
    counts : array-like of shape (n_classes,)
        Summed over the clients, their training rows per class that the
        model each uses predicts.
    classes : array-like of shape (n_classes,)
        The federation's classes, in the order of ``counts``.
    owner : str
        Who predicts, as the warning names it ("FederatedEstimator").
    """
    counts = np.asarray(counts, dtype=np.float64)
    if counts.sum() == 0:
        return
    shares = counts / counts.sum()
    if len(classes) == 2:
        warn_if_degenerate(shares[-1], owner)
    else:
        most = int(np.argmax(shares))
        warn_if_degenerate(
            shares[most], owner, label=np.asarray(classes).tolist()[most]
        )


#: How many times the median of the other clients' update norms a client's
#: must exceed to be warned about (honest clients stay within about 2x on the
#: shipped and synthetic federations).
OUTLYING_UPDATE_RATIO = 10.0


def _median_of_others(values):
    """``np.median`` of the values without each one in turn, in O(n log n).

    Equal to the per-client median it replaces (the same middle values and
    the same mean of two), without its O(n^2) lists: 1,000 clients cost
    0.5 s a fit that way. NaN norms take the direct path, where np.median's
    NaN rule applies.
    """
    n = values.shape[0]
    if not np.isfinite(values).all():
        return np.array([np.median(np.delete(values, i)) for i in range(n)])
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    rank = np.empty(n, dtype=np.intp)
    rank[order] = np.arange(n)

    def kth_of_others(k):
        # The k-th smallest once each value's own rank is taken out.
        return np.where(k < rank, ranked[k], ranked[min(k + 1, n - 1)])

    m = n - 1
    if m % 2:
        return kth_of_others((m - 1) // 2)
    return (kth_of_others(m // 2 - 1) + kth_of_others(m // 2)) / 2


def warn_if_outlying_updates(history, *, bounded):
    """Warn once about clients whose unbounded update norms stood far out."""
    if bounded:
        return
    outlying = {}
    # One pass over the history (it holds a record per client and round).
    by_round = {}
    for record in history:
        if "update_norm" in record:
            norms = by_round.setdefault(record["round"], {})
            norms[record["client"]] = record["update_norm"]
    for round_ in sorted(by_round):
        norms = by_round[round_]
        if len(norms) < 2:
            continue
        values = np.array(list(norms.values()), dtype=np.float64)
        others = _median_of_others(values)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = np.where(others > 0, values / others, np.inf)
        for client, ratio in zip(norms, ratios.tolist(), strict=True):
            if ratio > OUTLYING_UPDATE_RATIO:
                rounds, worst = outlying.get(client, ([], 0.0))
                outlying[client] = ([*rounds, round_], max(worst, ratio))
    if not outlying:
        return
    described = "; ".join(
        f"client {client!r} in round(s) {rounds} (up to {worst:.3g} times)"
        for client, (rounds, worst) in outlying.items()
    )
    warnings.warn(
        "An update far larger than the other clients' (over "
        f"{OUTLYING_UPDATE_RATIO:g} times the median of their norms) was "
        f"averaged unbounded: {described}. With the plain mean one such client "
        "moves the global model that far. Check that client (its data scale, "
        "its software), or bound it: aggregation='trimmed_mean' or "
        "max_update_norm='median'.",
        OutlyingUpdateWarning,
        stacklevel=caller_stacklevel(),
    )
