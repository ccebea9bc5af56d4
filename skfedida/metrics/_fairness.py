"""Group fairness metrics over intersectional sensitive groups (paper §3.1).

All metrics share one pass over the data: per-group weighted sums are taken
with ``np.bincount`` over the intersectional group codes, so every metric costs
O(n) whatever the number of groups.
"""

from __future__ import annotations

import warnings
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.utils import Bunch, check_consistent_length, column_or_1d

from .._compat import (
    Hidden,
    Interval,
    StrOptions,
    check_sample_weight,
    validate_params,
)
from .._groups import SensitiveGroups, encode_groups, pd
from ..exceptions import caller_stacklevel
from ._registry import DISPARITIES, RATES, short_names

__all__ = [
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equal_opportunity_difference",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "fairness_summary",
    "false_positive_rate_difference",
    "group_report",
    "positive_predictive_value_difference",
    "true_positive_rate_difference",
]

#: The disparity metrics' short names (scorers, reports, validation history
#: and plots all read them), from the one registry of metric names.
DISPARITY_ALIASES = short_names()


def _resolve_pos_label(pos_label, labels):
    """sklearn's rule: labels in {0, 1} or {-1, 1} need no pos_label.

    A given pos_label must be one of two labels present (with one label
    present it may be the absent one, as in a fold where nobody is positive):
    a typo would otherwise count every row as negative.
    """
    labels = np.asarray(labels)
    if pos_label is not None:
        if labels.size == 2 and not np.isin(pos_label, labels.astype(object)):
            raise ValueError(
                f"pos_label={pos_label!r} is not a valid label: y_true and y_pred "
                f"take the values {labels.tolist()}."
            )
        return pos_label
    if labels.dtype.kind in "biuf" and np.isin(labels, [-1, 0, 1]).all():
        return True if labels.dtype.kind == "b" else 1
    raise ValueError(
        f"y_true and y_pred take the values {labels.tolist()}; pass pos_label to "
        "say which one is the positive (favourable) outcome."
    )


class _ProbabilitiesAsLabelsError(ValueError):
    """y_pred holds probabilities or scores where labels are expected."""


def _check_label_predictions(y_pred, true_labels, declared):
    """Refuse a float y_pred that holds anything but labels (``soft=False``).

    Probabilities or scores read as labels give one "class" per distinct
    value: a DPD of 0.004 for a model whose decisions at 0.5 have 0.21, or
    NaN for equalized odds. sklearn's metrics refuse them too ("mix of binary
    and continuous"). Float labels stay valid: a float y_pred may hold the
    labels of y_true, the labels the caller declares (``pos_label``, a
    model's classes), and, for 0/1 or -1/1 targets, the binary pair sklearn
    reads them as (a fold with no positives may still predict 1.0).
    """
    if y_pred.dtype.kind not in "fc":
        return
    allowed = np.asarray(declared, dtype=object)
    if true_labels.dtype.kind in "biuf":
        allowed = np.concatenate([true_labels.astype(object), allowed])
        for pair in ([0, 1], [-1, 1]):
            if np.isin(true_labels, pair).all():
                allowed = np.concatenate([allowed, np.asarray(pair, dtype=object)])
    numeric = np.array(
        [v for v in allowed if isinstance(v, (Real, np.number))], dtype=np.float64
    )
    values = np.unique(y_pred)
    unknown = values[~np.isin(values, numeric)]
    # A whole number is a label y_true may lack (a fold without class 2.0,
    # pos_label=2.0 with only 1.0 and 2.0 predicted); a fraction, or NaN or
    # infinity, is not a label.
    unknown = unknown[~np.isfinite(unknown) | (unknown != np.round(unknown))]
    if unknown.size == 0:
        return
    kind = "probabilities or scores"
    raise _ProbabilitiesAsLabelsError(
        f"y_pred holds {kind} ({unknown.tolist()[:5]} are not labels of y_true, "
        f"which takes {true_labels.tolist()[:10]}), but with soft=False every "
        "value of y_pred must be a predicted label. For probabilities of the "
        "positive class (predict_proba(X)[:, 1]) pass soft=True; for decisions, "
        "pass the estimator's predict(X) or the scores cut at a threshold "
        "(y_score > t; in a scorer, make_fairness_scorer(..., threshold=t))."
    )


def _validated(y_true, y_pred, sample_weight, soft, declared=()):
    """y_true, y_pred and the weights checked; the labels the metrics see.

    ``declared`` are labels y_pred may hold besides y_true's (``pos_label``,
    a model's classes).
    """
    y_true = column_or_1d(y_true, warn=True)
    y_pred = column_or_1d(y_pred, warn=True)
    check_consistent_length(y_true, y_pred)
    if y_true.shape[0] == 0:
        raise ValueError("y_true is empty; fairness metrics need at least one row.")
    true_labels = np.unique(y_true)
    if soft:
        y_pred = np.asarray(y_pred, dtype=np.float64)
        if not np.all(np.isfinite(y_pred)) or y_pred.min() < 0 or y_pred.max() > 1:
            raise ValueError(
                "y_pred must hold probabilities of the positive class in [0, 1] "
                "when soft=True (e.g. predict_proba(X)[:, 1])."
            )
        labels = true_labels
    else:
        _check_label_predictions(y_pred, true_labels, declared)
        if (y_true.dtype.kind in "biuf") != (y_pred.dtype.kind in "biuf"):
            raise ValueError(
                f"y_true ({y_true.dtype}) and y_pred ({y_pred.dtype}) hold labels "
                "of different types; predict labels of the same kind as y_true."
            )
        labels = np.union1d(true_labels, y_pred)
    sample_weight = check_sample_weight(sample_weight, y_true, ensure_non_negative=True)
    return y_true, y_pred, sample_weight, labels


def _declared(pos_label):
    return () if pos_label is None else (pos_label,)


def _check_targets(y_true, y_pred, sample_weight, pos_label, soft):
    """Binary targets: 0/1 positives, predictions (0/1 or scores), weights."""
    y_true, y_pred, sample_weight, labels = _validated(
        y_true, y_pred, sample_weight, soft, _declared(pos_label)
    )
    if len(labels) > 2:
        raise ValueError(
            "This metric is defined for binary outcomes; y_true and y_pred "
            f"take {len(labels)} values: {labels.tolist()[:10]}."
        )
    pos_label = _resolve_pos_label(pos_label, labels)
    positive = (y_true == pos_label).astype(np.float64)
    predicted = y_pred if soft else (y_pred == pos_label).astype(np.float64)
    return positive, predicted, sample_weight


def _one_vs_rest_targets(y_true, y_pred, sample_weight, pos_label, soft):
    """The classes to compare, each as (label, 0/1 positives, predictions).

    Two labels give one comparison, of ``pos_label`` (resolved as sklearn
    does). More than two give one per class, class against the rest, or the
    given ``pos_label``'s alone; with ``soft=True`` y_pred then holds the
    probabilities of ``pos_label``, which must be given.
    """
    y_true, y_pred, sample_weight, labels = _validated(
        y_true, y_pred, sample_weight, soft, _declared(pos_label)
    )
    if len(labels) <= 2:
        classes = [_resolve_pos_label(pos_label, labels)]
    elif pos_label is not None:
        if not np.isin(pos_label, labels.astype(object)):
            raise ValueError(
                f"pos_label={pos_label!r} is not a valid label: y_true and y_pred "
                f"take the values {labels.tolist()[:10]}."
            )
        classes = [pos_label]
    elif soft:
        raise ValueError(
            f"y_true takes {len(labels)} values: with more than two classes, "
            "soft=True needs pos_label, and y_pred the probabilities of that "
            "class (e.g. predict_proba(X)[:, list(classes_).index(pos_label)])."
        )
    else:
        classes = list(labels)
    return _targets_of(y_true, y_pred, classes, soft), sample_weight


def _targets_of(y_true, y_pred, classes, soft):
    """Each class as (label, 0/1 positives, predictions), one-vs-rest."""
    return [
        (
            label,
            (y_true == label).astype(np.float64),
            y_pred if soft else (y_pred == label).astype(np.float64),
        )
        for label in classes
    ]


def _rate_sums(name):
    """The group sums a rate divides, and the rows its denominator rests on."""
    rate = RATES[name]
    return rate.numerator, rate.denominator, rate.count


@dataclass(frozen=True, eq=False)
class _GroupSums:
    groups: SensitiveGroups
    sums: dict  # name -> ndarray of shape (n_groups,)
    min_group_size: int

    def rate(self, name):
        """Per-group rate, NaN where it is undefined or too small to estimate."""
        numerator, denominator, count = _rate_sums(name)
        num = self.sums[numerator]
        den = self.sums[denominator]
        usable = (den > 0) & (self.sums[count] >= self.min_group_size)
        out = np.full(num.shape, np.nan)
        np.divide(num, den, out=out, where=usable)
        return out

    def overall(self, name):
        """The rate over every row (all groups together), NaN if undefined."""
        numerator, denominator, _ = _rate_sums(name)
        total = self.sums[denominator].sum()
        return float(self.sums[numerator].sum() / total) if total > 0 else np.nan

    def gap(self, name, metric_name, method, kind="difference"):
        """A rate's disparity: between groups, or of every group to the overall."""
        overall = self.overall(name) if method == "to_overall" else None
        combine = _difference if kind == "difference" else _ratio
        return combine(self.rate(name), metric_name, overall)

    def left_out(self, name):
        """Reason a group is left out of a rate ('' when it is kept)."""
        _, denominator, count = _rate_sums(name)
        label, undefined = RATES[name].label, RATES[name].undefined
        reasons = np.full(self.groups.n_groups, "", dtype=object)
        small = self.sums[count] < self.min_group_size
        reasons[small] = f"{label}: fewer than {self.min_group_size} rows"
        reasons[self.sums[denominator] <= 0] = f"{label}: {undefined}"
        return reasons


class _ClassSums(list):
    """The group sums of every class compared (one for binary outcomes)."""


def _disparity_of(name, sums, method, agg):
    """A disparity as the registry defines it, from the classes' group sums.

    Each of its rates of each class compared, combined by ``agg``: with the
    worst case, the largest difference (smallest ratio), NaN if any is.
    """
    kind = DISPARITIES[name].kind
    return _combine(
        [
            class_sums.gap(rate, name, method, kind)
            for class_sums in sums
            for rate in DISPARITIES[name].rates
        ],
        kind,
        agg,
    )


def _combine(values, kind, agg):
    """Disparities combined: the worst (largest difference, smallest ratio) or mean.

    NaN if any is: a disparity that could not be measured for one class is
    not hidden by the others.
    """
    if len(values) == 1:
        return float(values[0])
    if agg == "mean":
        return float(np.mean(values))
    return float(np.max(values) if kind == "difference" else np.min(values))


def _group_sums(
    y_true,
    y_pred,
    sensitive_features,
    sample_weight,
    pos_label,
    min_group_size,
    soft,
    labels=None,
):
    """Per-group sums of every compared class (``_ClassSums``).

    ``labels`` compares exactly those classes, one-vs-rest, whichever the
    rows hold (a model's classes, on a client's rows that lack some).
    """
    if not (isinstance(min_group_size, (int, np.integer)) and min_group_size >= 1):
        raise ValueError(f"min_group_size must be an int >= 1; got {min_group_size!r}.")
    if labels is None:
        targets, weight = _one_vs_rest_targets(
            y_true, y_pred, sample_weight, pos_label, soft
        )
    else:
        y_true, y_pred, weight, _ = _validated(
            y_true, y_pred, sample_weight, soft, list(labels)
        )
        targets = _targets_of(y_true, y_pred, labels, soft)
    groups = encode_groups(sensitive_features, n_samples=weight.shape[0])
    return _ClassSums(
        _class_group_sums(groups, positive, predicted, weight, min_group_size)
        for _, positive, predicted in targets
    )


def _class_group_sums(groups, positive, predicted, weight, min_group_size):
    codes, n_groups = groups.codes, groups.n_groups

    def total(values):
        return np.bincount(codes, weights=values, minlength=n_groups)

    weighted_positive = weight * positive
    weighted_predicted = weight * predicted
    sums = {
        "weight": total(weight),
        "positive": total(weighted_positive),
        "predicted": total(weighted_predicted),
        "true_positive": total(weighted_positive * predicted),
        "n": np.bincount(codes, minlength=n_groups),
        "n_positive": total(positive),
    }
    sums["negative"] = sums["weight"] - sums["positive"]
    sums["false_positive"] = sums["predicted"] - sums["true_positive"]
    sums["n_negative"] = sums["n"] - sums["n_positive"]
    # The rows that can be selected: those predicted positive, or with a
    # non-zero score (a probability, or a tied row's chance of selection);
    # a soft PPV averages y over them, weighted by their score.
    sums["n_predicted"] = total((predicted > 0).astype(float))
    # Guard against round-off leaving a tiny negative where nothing is left.
    for key in ("negative", "false_positive"):
        sums[key] = np.where(
            np.abs(sums[key]) < 1e-12 * (1 + sums["weight"]), 0.0, sums[key]
        )
    return _GroupSums(groups=groups, sums=sums, min_group_size=int(min_group_size))


def _defined(rates, metric_name):
    defined = rates[~np.isnan(rates)]
    if defined.size == 0:
        warnings.warn(
            f"{metric_name} is undefined: no group has a defined rate.",
            UndefinedMetricWarning,
            # Past the metric and its @validate_params wrapper, to the caller.
            stacklevel=caller_stacklevel(),
        )
    return defined


def _difference(rates, metric_name, overall=None):
    """max - min of the groups' rates, or (``overall``) the largest gap to it."""
    defined = _defined(rates, metric_name)
    if defined.size == 0:
        return float("nan")
    if overall is not None:
        return float(np.max(np.abs(defined - overall)))
    return float(defined.max() - defined.min())


def _ratio(rates, metric_name, overall=None):
    """min / max of the groups' rates, or (``overall``) the smallest ratio to it."""
    defined = _defined(rates, metric_name)
    if defined.size == 0:
        return float("nan")
    if overall is not None:
        # Each group's rate over the overall one or its inverse, whichever
        # is <= 1 (fairlearn's ratio to overall); 0 against 0 is parity.
        high = np.maximum(defined, overall)
        low = np.minimum(defined, overall)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratios = np.where(high == 0, 1.0, low / np.where(high == 0, 1.0, high))
        return float(ratios.min())
    highest = defined.max()
    # Every group at rate 0 is parity (the difference is 0), so the ratio is 1.
    return 1.0 if highest == 0 else float(defined.min() / highest)


_COMMON_PARAMETERS = """Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels: two classes, or more (each class is then compared
        against the rest).
    y_pred : array-like of shape (n_samples,)
        Predicted labels, or with ``soft=True`` predicted probabilities of the
        positive class (of ``pos_label`` for more than two classes).
    sensitive_features : Series, DataFrame, array-like or dict of array-like
        Sensitive attributes of every row: one (1-D) or several (DataFrame,
        2-D array, dict of columns). Groups are their intersections.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative sample weights.
    pos_label : int, float, bool or str, default=None
        The positive (favourable) label. For two classes it is needed unless
        the labels are in {0, 1} or {-1, 1}, where it is 1. For more, the one
        class to compare against the rest; by default every class is, and the
        classes' disparities are combined (the worst, or as ``agg`` says).
    min_group_size : int, default=1
        Groups whose rate rests on fewer rows than this (rows of the group for
        selection rates, its negatives for FPR, its positives for TPR, its
        predicted positives for PPV) are left out of the metric, and so is a
        group whose rate is undefined (no negatives for FPR, ...), where
        fairlearn counts that rate as 0: a disparity that was not measured
        is not reported. Rows count whatever their weight.
    soft : bool, default=False
        If True, ``y_pred`` holds probabilities and every rate is the mean
        score of its rows (the paper's E[f(A) | group]); PPV becomes the
        score-weighted mean of y."""


#: Constraints of the parameters every metric shares; the values (labels,
#: lengths, probabilities, missing groups) are checked by the metrics
#: themselves, with messages that name the problem.
_COMMON_CONSTRAINTS = {
    "y_true": ["array-like"],
    "y_pred": ["array-like"],
    # A Series, DataFrame, array, list or dict of columns (all array-like),
    # any Mapping of columns, or groups encoded already (SensitiveGroups).
    "sensitive_features": ["array-like", Mapping, Hidden(SensitiveGroups)],
    # sklearn's check_sample_weight also takes one number for every row.
    "sample_weight": ["array-like", Hidden(Real), None],
    "pos_label": [Hashable, None],
    "min_group_size": [Interval(Integral, 1, None, closed="left")],
    "soft": ["boolean"],
}


_METHOD_PARAMETER = """
    method : {"between_groups", "to_overall"}, default="between_groups"
        ``"between_groups"``: the largest difference (smallest ratio) between
        two groups' rates, the paper's definition. ``"to_overall"``: the
        largest difference (smallest ratio) between a group's rate and the
        rate over all rows, as fairlearn's ``method="to_overall"``. Two rates
        of 0 have ratio 1 (parity; fairlearn gives NaN)."""

_METHOD_CONSTRAINTS = {
    **_COMMON_CONSTRAINTS,
    "method": [StrOptions({"between_groups", "to_overall"})],
    "agg": [StrOptions({"worst_case", "mean"})],
}

_AGG_PARAMETER = """
    agg : {"worst_case", "mean"}, default="worst_case"
        With more than two classes and no ``pos_label``, the disparity is
        computed one-vs-rest for every class (its rows against the others',
        its predictions against the others') and ``agg`` combines them: the
        largest difference (smallest ratio) over classes, or their mean. With
        two classes, or a ``pos_label``, there is one value and ``agg`` has
        no effect."""


def _document(func):
    func.__doc__ = func.__doc__.replace("%(parameters)s", _COMMON_PARAMETERS)
    return func


def _document_with_method(func):
    func.__doc__ = func.__doc__.replace(
        "%(parameters)s", _COMMON_PARAMETERS + _METHOD_PARAMETER
    ).replace("%(agg)s", _AGG_PARAMETER.strip())
    return func


@validate_params(_METHOD_CONSTRAINTS, prefer_skip_nested_validation=True)
@_document_with_method
def demographic_parity_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    method="between_groups",
    agg="worst_case",
):
    """Largest difference in selection rate P(ŷ = 1 | group) between groups.

    The paper's DPD. 0 means every group is selected at the same rate.

    %(parameters)s
    %(agg)s

    Returns
    -------
    dpd : float
        ``max_k rate_k - min_k rate_k``; 0.0 with a single group.

    See Also
    --------
    demographic_parity_ratio : The same rates as a ratio.

    Examples
    --------
    >>> from skfedida.metrics import demographic_parity_difference
    >>> y_true = [0, 1, 0, 1, 0, 1]
    >>> y_pred = [0, 1, 1, 1, 0, 0]
    >>> sex = ["F", "F", "F", "M", "M", "M"]
    >>> demographic_parity_difference(y_true, y_pred, sensitive_features=sex)
    0.333...
    """
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return _disparity_of("demographic_parity_difference", sums, method, agg)


@validate_params(_METHOD_CONSTRAINTS, prefer_skip_nested_validation=True)
@_document_with_method
def demographic_parity_ratio(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    method="between_groups",
    agg="worst_case",
):
    """Smallest over largest selection rate across groups.

    The paper's DPR, in [0, 1]; 1 means parity. When no group has a positive
    prediction every rate is 0, the groups are treated alike, and the ratio is
    1.0 (fairlearn returns NaN there).

    %(parameters)s
    %(agg)s

    Returns
    -------
    dpr : float
        ``min_k rate_k / max_k rate_k``.

    Examples
    --------
    >>> from skfedida.metrics import demographic_parity_ratio
    >>> y_true = [0, 1, 0, 1, 0, 1]
    >>> y_pred = [0, 1, 1, 1, 0, 0]
    >>> sex = ["F", "F", "F", "M", "M", "M"]
    >>> demographic_parity_ratio(y_true, y_pred, sensitive_features=sex)
    0.5
    """
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return _disparity_of("demographic_parity_ratio", sums, method, agg)


@validate_params(_METHOD_CONSTRAINTS, prefer_skip_nested_validation=True)
@_document_with_method
def false_positive_rate_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    method="between_groups",
    agg="worst_case",
):
    """Largest difference in false positive rate between groups.

    The paper's DFPR. Groups without negatives have no FPR and are left out.

    %(parameters)s
    %(agg)s

    Returns
    -------
    dfpr : float
        ``max_k FPR_k - min_k FPR_k`` over groups with a defined FPR.

    Examples
    --------
    >>> from skfedida.metrics import false_positive_rate_difference
    >>> y_true = [0, 0, 1, 0, 0, 1]
    >>> y_pred = [1, 0, 1, 0, 0, 1]
    >>> sex = ["F", "F", "F", "M", "M", "M"]
    >>> false_positive_rate_difference(y_true, y_pred, sensitive_features=sex)
    0.5
    """
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return _disparity_of("false_positive_rate_difference", sums, method, agg)


@validate_params(_METHOD_CONSTRAINTS, prefer_skip_nested_validation=True)
@_document_with_method
def true_positive_rate_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    method="between_groups",
    agg="worst_case",
):
    """Largest difference in true positive rate (recall) between groups.

    Groups without positives have no TPR and are left out.

    %(parameters)s
    %(agg)s

    Returns
    -------
    dtpr : float
        ``max_k TPR_k - min_k TPR_k`` over groups with a defined TPR.

    Examples
    --------
    >>> from skfedida.metrics import true_positive_rate_difference
    >>> y_true = [1, 1, 0, 1, 1, 0]
    >>> y_pred = [1, 0, 0, 1, 1, 0]
    >>> sex = ["F", "F", "F", "M", "M", "M"]
    >>> true_positive_rate_difference(y_true, y_pred, sensitive_features=sex)
    0.5
    """
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return _disparity_of("true_positive_rate_difference", sums, method, agg)


@validate_params(_METHOD_CONSTRAINTS, prefer_skip_nested_validation=True)
@_document_with_method
def positive_predictive_value_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    method="between_groups",
    agg="worst_case",
):
    """Largest difference in positive predictive value (precision) between groups.

    The paper's DPPV. Groups with no predicted positive have no PPV and are left
    out, never counted as 0.

    %(parameters)s
    %(agg)s

    Returns
    -------
    dppv : float
        ``max_k PPV_k - min_k PPV_k`` over groups with a defined PPV.

    Examples
    --------
    >>> from skfedida.metrics import positive_predictive_value_difference
    >>> y_true = [1, 0, 0, 1, 1, 0]
    >>> y_pred = [1, 1, 0, 1, 1, 0]
    >>> sex = ["F", "F", "F", "M", "M", "M"]
    >>> positive_predictive_value_difference(y_true, y_pred, sensitive_features=sex)
    0.5
    """
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return _disparity_of("positive_predictive_value_difference", sums, method, agg)


@validate_params(
    {**_METHOD_CONSTRAINTS, "agg": [StrOptions({"worst_case", "mean"})]},
    prefer_skip_nested_validation=True,
)
@_document_with_method
def equalized_odds_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    method="between_groups",
    agg="worst_case",
):
    """Equalized odds difference: the larger of the TPR and FPR differences.

    As fairlearn's ``equalized_odds_difference``.

    %(parameters)s
    agg : {"worst_case", "mean"}, default="worst_case"
        Combine the two differences by their maximum or their mean; with more
        than two classes and no ``pos_label``, the two differences of every
        class one-vs-rest (equalized odds over classes).

    Returns
    -------
    eod : float
        ``max(DTPR, DFPR)`` (or their mean).

    See Also
    --------
    equalized_odds_ratio : The same rates as ratios.

    Examples
    --------
    >>> from skfedida.metrics import equalized_odds_difference
    >>> y_true = [0, 0, 1, 0, 1, 1]
    >>> y_pred = [1, 0, 1, 0, 0, 1]
    >>> sex = ["F", "F", "F", "M", "M", "M"]
    >>> equalized_odds_difference(y_true, y_pred, sensitive_features=sex)
    0.5
    """
    return _equalized_odds(
        "equalized_odds_difference",
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
        method,
        agg,
    )


def _equalized_odds(
    metric_name,
    y_true,
    y_pred,
    sensitive_features,
    sample_weight,
    pos_label,
    min_group_size,
    soft,
    method,
    agg,
):
    if agg not in ("worst_case", "mean"):
        raise ValueError(f"agg must be 'worst_case' or 'mean'; got {agg!r}.")
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return _disparity_of(metric_name, sums, method, agg)


@validate_params(
    {**_METHOD_CONSTRAINTS, "agg": [StrOptions({"worst_case", "mean"})]},
    prefer_skip_nested_validation=True,
)
@_document_with_method
def equalized_odds_ratio(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    method="between_groups",
    agg="worst_case",
):
    """Equalized odds ratio: the smaller of the TPR and FPR ratios.

    As fairlearn's ``equalized_odds_ratio``. 1 means every group has the
    same true and false positive rates.

    %(parameters)s
    agg : {"worst_case", "mean"}, default="worst_case"
        Combine the two ratios by their minimum or their mean; with more than
        two classes and no ``pos_label``, the two ratios of every class
        one-vs-rest.

    Returns
    -------
    eor : float
        ``min(TPR ratio, FPR ratio)`` (or their mean).

    See Also
    --------
    equalized_odds_difference : The same rates as differences.

    Examples
    --------
    >>> from skfedida.metrics import equalized_odds_ratio
    >>> y_true = [0, 0, 1, 0, 1, 1]
    >>> y_pred = [1, 0, 1, 0, 0, 1]
    >>> sex = ["F", "F", "F", "M", "M", "M"]
    >>> equalized_odds_ratio(y_true, y_pred, sensitive_features=sex)
    0.0
    """
    return _equalized_odds(
        "equalized_odds_ratio",
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
        method,
        agg,
    )


@validate_params(_METHOD_CONSTRAINTS, prefer_skip_nested_validation=True)
@_document_with_method
def equal_opportunity_difference(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    method="between_groups",
    agg="worst_case",
):
    """Equal opportunity difference: fairlearn's name for the TPR difference.

    The same value as :func:`true_positive_rate_difference` (the largest
    difference in P(ŷ = 1 | y = 1, group) between groups).

    %(parameters)s
    %(agg)s

    Returns
    -------
    eo : float
        The true positive rate difference.

    See Also
    --------
    true_positive_rate_difference : The same metric.

    Examples
    --------
    >>> from skfedida.metrics import equal_opportunity_difference
    >>> equal_opportunity_difference([1, 1, 1, 1], [1, 0, 1, 1],
    ...                              sensitive_features=["a", "a", "b", "b"])
    0.5
    """
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return _disparity_of("equal_opportunity_difference", sums, method, agg)


@validate_params(_COMMON_CONSTRAINTS, prefer_skip_nested_validation=True)
@_document
def fairness_summary(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
):
    """All disparity metrics from one pass over the data.

    %(parameters)s

    Returns
    -------
    summary : dict
        Keys ``"demographic_parity_difference"``, ``"demographic_parity_ratio"``,
        ``"false_positive_rate_difference"``, ``"true_positive_rate_difference"``,
        ``"positive_predictive_value_difference"`` and
        ``"equalized_odds_difference"``. With more than two classes and no
        ``pos_label``, each is the worst case over the classes one-vs-rest
        (as the metric functions' ``agg="worst_case"``).

    Examples
    --------
    >>> from skfedida.metrics import fairness_summary
    >>> summary = fairness_summary([0, 1, 0, 1], [0, 1, 1, 1],
    ...                            sensitive_features=["a", "a", "b", "b"])
    >>> summary["demographic_parity_difference"]
    0.5
    """
    summary = checked_fairness_summary(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return {name: summary[name] for name, m in DISPARITIES.items() if m.summary}


def checked_fairness_summary(
    y_true, y_pred, sensitive_features, sample_weight, pos_label, min_group_size, soft
):
    """Every disparity of the registry (fairness_summary's and the others)."""
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    return _worst_over_classes([_summary_of(class_sums) for class_sums in sums])


def _worst_over_classes(per_class):
    """Summaries of the classes one-vs-rest combined: the largest difference,
    the smallest ratio."""
    return {
        key: _combine(
            [summary[key] for summary in per_class],
            DISPARITIES[key].kind,
            "worst_case",
        )
        for key in per_class[0]
    }


def class_summary(
    y_true, y_pred, labels, sensitive_features, sample_weight=None, min_group_size=1
):
    """fairness_summary over the given ``labels``, each one-vs-rest, worst case.

    For a model's evaluation, where every class of the model counts even
    when some rows (a client's) lack it: a class nobody has and nobody is
    predicted has no disparity of selection or FPR, and undefined TPR/PPV.
    """
    sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        None,
        min_group_size,
        False,
        labels=labels,
    )
    return _worst_over_classes([_summary_of(class_sums) for class_sums in sums])


def _summary_of(sums):
    """Every disparity of the registry, of one compared class."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        needed = {rate for metric in DISPARITIES.values() for rate in metric.rates}
        rates = {name: sums.rate(name) for name in needed}
        return {
            name: _combine(
                [
                    (_difference if metric.kind == "difference" else _ratio)(
                        rates[rate], ""
                    )
                    for rate in metric.rates
                ],
                metric.kind,
                "worst_case",
            )
            for name, metric in DISPARITIES.items()
        }


@validate_params(
    {**_COMMON_CONSTRAINTS, "metrics": [Mapping, None]},
    prefer_skip_nested_validation=True,
)
@_document
def group_report(
    y_true,
    y_pred,
    *,
    sensitive_features,
    sample_weight=None,
    pos_label=None,
    min_group_size=1,
    soft=False,
    metrics=None,
):
    """Per-group rates behind the disparity metrics.

    One row per intersectional group present in the data. A rate that is
    undefined for a group, or rests on fewer than ``min_group_size`` rows, is
    NaN, and the column ``left_out`` says which rates were left out and why;
    the disparity metrics leave out exactly these. With ``metrics``, any
    metric function by group too, as fairlearn's ``MetricFrame.by_group``.

    %(parameters)s
    metrics : dict of str to callable, default=None
        Extra columns: ``metrics[name](y_true_g, y_pred_g)`` on each group's
        rows (with ``sample_weight=`` the group's weights when weights are
        given), e.g. ``{"recall": sklearn.metrics.recall_score}``; the value
        on all rows is in ``report.attrs["overall"]`` (a DataFrame) or
        ``report.overall`` (a Bunch).

    Returns
    -------
    report : pandas.DataFrame or Bunch
        With more than two classes and no ``pos_label``, one block of rows per
        class (the outer index level ``class``), each class against the rest.
        Columns ``n`` (rows), ``n_positive`` (rows with y = pos_label),
        ``base_rate``, ``selection_rate``, ``false_positive_rate``,
        ``true_positive_rate``, ``positive_predictive_value`` and ``left_out``,
        then one column per entry of ``metrics``; rates are weighted by
        ``sample_weight``. A DataFrame indexed by the attribute values when
        pandas is installed, otherwise a Bunch of arrays with a ``group``
        entry holding the group labels.

    Examples
    --------
    >>> from skfedida.metrics import group_report
    >>> report = group_report([0, 1, 1, 1], [0, 1, 1, 0],
    ...                       sensitive_features={"sex": ["F", "F", "M", "M"]})
    >>> report[["n", "selection_rate", "false_positive_rate", "left_out"]]
         n  selection_rate  false_positive_rate           left_out
    sex
    F    2             0.5                  0.0
    M    2             0.5                  NaN  FPR: no negatives
    """
    class_sums = _group_sums(
        y_true,
        y_pred,
        sensitive_features,
        sample_weight,
        pos_label,
        min_group_size,
        soft,
    )
    if len(class_sums) > 1:
        # More than two classes: one block of rows per class, one-vs-rest.
        if pd is None:
            raise ValueError(
                "group_report of more than two classes needs pandas (one block "
                "per class), or pos_label to report one class against the rest."
            )
        return pd.concat(
            {
                label: group_report(
                    y_true,
                    y_pred,
                    sensitive_features=sensitive_features,
                    sample_weight=sample_weight,
                    pos_label=label,
                    min_group_size=min_group_size,
                    metrics=metrics,
                )
                for label in np.unique(np.union1d(y_true, y_pred))
            },
            names=["class"],
        )
    (sums,) = class_sums
    columns = {
        "n": sums.sums["n"].astype(np.int64),
        "n_positive": np.rint(sums.sums["n_positive"]).astype(np.int64),
    }
    reasons = []
    for name in (
        "base_rate",
        "selection_rate",
        "false_positive_rate",
        "true_positive_rate",
        "positive_predictive_value",
    ):
        columns[name] = sums.rate(name)
        reasons.append(sums.left_out(name))
    # Join the non-empty reasons of each group, keeping the rates' order.
    reason_table = np.stack(reasons, axis=1)
    columns["left_out"] = np.array(
        ["; ".join(dict.fromkeys(r for r in row if r)) for row in reason_table],
        dtype=object,
    )
    groups = sums.groups
    overall = {}
    if metrics:
        extra, overall = _metrics_by_group(
            metrics, y_true, y_pred, sample_weight, groups
        )
        for name in extra:
            if name in columns:
                raise ValueError(
                    f"metrics has {name!r}, a column group_report already has; "
                    "name it otherwise."
                )
        columns.update(extra)
    if pd is None:
        return Bunch(
            group=list(groups.labels),
            names=list(groups.names),
            overall=overall,
            **columns,
        )
    if len(groups.names) == 1:
        index = pd.Index([label[0] for label in groups.labels], name=groups.names[0])
    else:
        index = pd.MultiIndex.from_tuples(groups.labels, names=list(groups.names))
    report = pd.DataFrame(columns, index=index)
    report.attrs["overall"] = overall
    return report


def _metrics_by_group(metrics, y_true, y_pred, sample_weight, groups):
    """Each metric function on each group's rows, and on all rows."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    weight = None if sample_weight is None else np.asarray(sample_weight, float)
    if weight is not None and weight.ndim == 0:
        weight = np.full(y_true.shape[0], float(weight))
    by_group, overall = {}, {}
    for name, function in metrics.items():
        if not callable(function):
            raise ValueError(
                f"metrics[{name!r}] must be a function of (y_true, y_pred); got "
                f"{function!r}."
            )

        def apply(rows, function=function):
            kwargs = {} if weight is None else {"sample_weight": weight[rows]}
            return function(y_true[rows], y_pred[rows], **kwargs)

        by_group[name] = np.array(
            [apply(groups.codes == g) for g in range(groups.n_groups)], dtype=object
        )
        if all(np.isscalar(value) for value in by_group[name]):
            by_group[name] = by_group[name].astype(float)
        overall[name] = apply(np.ones(y_true.shape[0], dtype=bool))
    return by_group, overall


#: The registry's disparities, each with the function computing it.
_FUNCTIONS = {name: globals()[metric.function] for name, metric in DISPARITIES.items()}
