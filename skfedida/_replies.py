"""What the server checks in a client's reply before using it: the one gate.

One implementation for the in-process federation and the Flower ServerApp,
for every kind of reply a server reads: training and evaluation replies,
initialisation replies (class counts), score histograms (group thresholds),
FairFed's fairness reports and the preprocessing statistics
(``_statistics_replies``). The rules are the same for every kind:

- the reply has the form the server asked for: known keys, arrays of the
  expected shape and of a numeric (not boolean, string or object) dtype;
- numbers are finite (NaN only where a statistic is undefined, e.g. the
  extremes of a column without a value);
- counts are whole numbers >= 0 and never more than the rows they count;
- groups are tuples of one value per sensitive attribute, labels the
  federation's, and every count of rows adds up to the rows the client
  declared: when it joined (``declared_rows``) and in any earlier reply about
  the same rows (``ClientLedger``), so a client cannot claim two different
  things about one set of rows across rounds or reply kinds;
- statistics obey what the maths implies (a sum of n values lies within n
  times their extremes; a sum of squares lies between sum**2 / n and the
  largest the extremes allow).

A reply that fails is that client's failure, named, and handled by
``on_client_error`` like any other (``ReplyGate``). A reply of the right form
that is consistent with itself can still be false (a client that swaps its
labels and keeps its totals): no check can see it, and what it can move is
bounded by the client's share of the rows; bounding a hostile parameter
update is the aggregator's job (``aggregation="median"`` or
``"trimmed_mean"``), and the class priors have ``prior_aggregation="median"``.
"""

from __future__ import annotations

import datetime
import json
import math
import numbers
import warnings

import numpy as np

from .metrics._registry import COUNTS, METRICS, PERSONAL_PREFIX, VALIDATION_PREFIX


def training_reply_problem(parameters, n_rows, loss, *, reference, declared_rows):
    """Why a training reply cannot be aggregated, or None when it can.

    Parameters
    ----------
    parameters : list of array-like
        The client's parameter arrays.
    n_rows : object
        The number of training rows it reports (the FedAvg weight).
    loss : object
        The training loss it reports.
    reference : list of ndarray
        The global parameters of the round (shapes and dtypes to match).
    declared_rows : int or None
        The number of training rows the client declared when it joined.

    Returns
    -------
    problem : str or None
        What is wrong, in words; None for a usable reply.
    """
    if len(parameters) != len(reference):
        return (
            f"it sent {len(parameters)} parameter arrays; the model has "
            f"{len(reference)}"
        )
    for i, (array, expected) in enumerate(zip(parameters, reference, strict=True)):
        array = np.asarray(array)
        if array.shape != np.shape(expected):
            return (
                f"parameter array {i} has shape {array.shape}; the model's has "
                f"shape {np.shape(expected)}"
            )
        if array.dtype != np.asarray(expected).dtype:
            return (
                f"parameter array {i} has dtype {array.dtype}; the model's is "
                f"{np.asarray(expected).dtype}"
            )
        if not np.all(np.isfinite(array)):
            return f"parameter array {i} holds NaN or infinity"
    if (
        not isinstance(n_rows, numbers.Integral)
        or isinstance(n_rows, bool)
        or n_rows <= 0
    ):
        return f"it reported {n_rows!r} training rows (a count > 0 is needed)"
    if declared_rows is not None and int(n_rows) != int(declared_rows):
        return (
            f"it reported {int(n_rows)} training rows; it declared "
            f"{int(declared_rows)} when it joined"
        )
    if not isinstance(loss, numbers.Real) or not np.isfinite(loss) or loss < 0:
        return f"it reported a training loss of {loss!r} (a finite value >= 0)"
    return None


#: Metrics whose range is wider than [0, 1] (the Brier score of more than two
#: classes reaches 2), as a client reports them.
_METRIC_UPPER = {
    prefix + m.key: m.upper
    for m in METRICS.values()
    if m.upper != 1.0
    for prefix, reported in (
        (VALIDATION_PREFIX, m.reported),
        (PERSONAL_PREFIX, m.personal),
    )
    if reported
}


def read_reply(read):
    """``(read(), None)``, or ``(None, problem)`` when the reply cannot be read.

    A reply whose fields are missing or of the wrong kind raises KeyError,
    TypeError or ValueError when the server reads them: that is the reply's
    problem, said like any other, not the server's error.
    """
    try:
        return read(), None
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"it is malformed ({type(exc).__name__}: {exc})"


def unless_malformed(check):
    """``check()``'s problem, or the reply called malformed if reading it fails."""
    found, problem = read_reply(check)
    return found if problem is None else problem


def training_round_problem(
    parameters, n_rows, loss, *, reference, declared_rows, report=None
):
    """A training reply's problem on either backend, or None.

    Its parameters, rows and loss (``training_reply_problem``), then, with
    FairFed, its fairness report: ``report()`` returns that report's problem
    (``fairness_report_claim_problem``), called only once the rest passes.
    """
    problem = training_reply_problem(
        parameters, n_rows, loss, reference=reference, declared_rows=declared_rows
    )
    if problem is None and report is not None:
        problem = report()
    return problem


def evaluation_reply_problem(metrics, *, allowed, declared_rows=None):
    """Why evaluation metrics cannot be recorded, or None when they can.

    Parameters
    ----------
    metrics : mapping
        Metric name to value, as the client sent them.
    allowed : collection of str
        The metric names a client may send.
    declared_rows : int or None
        The evaluation rows the client declared when it joined; its
        ``num-examples`` must be that count.

    Returns
    -------
    problem : str or None
        What is wrong, in words; None for usable metrics.
    """
    unknown = sorted(set(metrics) - set(allowed))
    if unknown:
        return f"it sent unknown metrics {unknown}"
    for name, value in metrics.items():
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            return f"metric {name!r} is {value!r}, not a number"
        if name == "num-examples":
            if not (isinstance(value, numbers.Integral) and value >= 0):
                return f"it reported {value!r} evaluation rows"
            if declared_rows is not None and int(value) != int(declared_rows):
                return (
                    f"it reported {int(value)} evaluation rows; it declared "
                    f"{int(declared_rows)} when it joined"
                )
        elif name.startswith(VALIDATION_PREFIX) and not (
            np.isnan(value) or 0.0 <= value <= _METRIC_UPPER.get(name, 1.0)
        ):
            return (
                f"metric {name!r} is {value!r}, outside "
                f"[0, {_METRIC_UPPER.get(name, 1.0):g}]"
            )
    return None


def claims_summary(reports, weights):
    """The federation's summary of what its clients reported about themselves.

    Parameters
    ----------
    reports : list of mapping
        Per reporting client, metric name to value (NaN where undefined).
    weights : list of float
        Per client, the rows its values are computed on.

    Returns
    -------
    summary : dict
        Per metric, the weighted mean over the clients where it is defined,
        and under ``<name>_median`` their median: a value the server cannot
        check, so it also gets a statistic that one client reporting false
        values cannot move beyond the honest clients' range. ``n_clients``
        counts the reporting clients.
    """
    weights = np.asarray(weights, dtype=np.float64)
    names = []
    for report in reports:
        names.extend(name for name in report if name not in names)
    summary = {}
    for name in names:
        column = np.array(
            [float(report.get(name, np.nan)) for report in reports], dtype=np.float64
        )
        defined = np.isfinite(column)
        if defined.any() and weights[defined].sum() > 0:
            summary[name] = float(np.average(column[defined], weights=weights[defined]))
            summary[f"{name}_median"] = float(np.median(column[defined]))
        else:
            summary[name] = summary[f"{name}_median"] = float("nan")
    summary["n_clients"] = len(reports)
    return summary


# -- the rules every reply kind shares ---------------------------------------


#: The largest count a reply may hold: 2**53, the largest whole number a
#: float64 holds exactly (far beyond any set of rows, within int64).
MAX_COUNT = 2**53


def count_array(values, what, *, shape=None, at_most=None):
    """Counts as int64, or the problem: ``(counts, None)`` or ``(None, problem)``.

    Counts are an array of a numeric dtype (not boolean, string or object),
    of ``shape`` when given, finite, whole and >= 0, and none is larger than
    ``at_most`` (the rows they count).
    """
    try:
        array = np.asarray(values)
    except Exception:  # ragged nesting and the like
        return None, f"{what} is not an array of counts"
    if array.dtype.kind not in "iuf":
        return None, (
            f"{what} has dtype {array.dtype} (whole-number counts are needed)"
        )
    if shape is not None and array.shape != tuple(shape):
        return None, f"{what} has shape {array.shape}; expected {tuple(shape)}"
    as_float = array.astype(np.float64)
    if not np.all(np.isfinite(as_float)):
        return None, f"{what} holds NaN or infinity"
    if np.any(np.abs(as_float) > MAX_COUNT):
        # Beyond any count of rows (and beyond int64): named as sent.
        return None, (
            f"{what} holds a count of {as_float.flat[np.argmax(np.abs(as_float))]!r}"
            ", more than any set of rows can hold"
        )
    if np.any(as_float < 0):
        return None, f"{what} holds negative counts"
    if np.any(as_float != np.floor(as_float)):
        return None, f"{what} holds counts that are not whole numbers"
    if at_most is not None and np.any(as_float > at_most):
        return None, (
            f"{what} holds a count of {as_float.max():.0f}, more than the "
            f"{int(at_most)} rows it counts"
        )
    return as_float.astype(np.int64), None


def count_scalar(value, what, *, at_most=None):
    """One count (a whole number >= 0, not a bool), or the problem."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (numbers.Integral, numbers.Real)
    ):
        return None, f"{what} is {value!r}, not a count"
    counts, problem = count_array(value, what, shape=(), at_most=at_most)
    return (None if counts is None else int(counts)), problem


def real_array(values, what, *, shape=None, nan_allowed=None):
    """Real numbers as float64, or the problem.

    ``nan_allowed`` (a boolean mask, or True) says where NaN is a valid
    value (an undefined statistic); infinity never is.
    """
    try:
        array = np.asarray(values)
    except Exception:
        return None, f"{what} is not an array of numbers"
    if array.dtype.kind not in "iuf":
        return None, f"{what} has dtype {array.dtype} (numbers are needed)"
    if shape is not None and array.shape != tuple(shape):
        return None, f"{what} has shape {array.shape}; expected {tuple(shape)}"
    array = array.astype(np.float64)
    if np.any(np.isinf(array)):
        return None, f"{what} holds infinity"
    nan = np.isnan(array)
    allowed = False if nan_allowed is None else nan_allowed
    if np.any(nan & ~np.asarray(allowed, dtype=bool)):
        return None, f"{what} holds NaN"
    return array, None


#: Values a category (or an imputer's most frequent value) may take: scalars.
_SCALARS = (
    str,
    bytes,
    numbers.Number,
    np.generic,
    datetime.date,
    datetime.time,
    type(None),
)


def categories_problem(values, what):
    """Distinct scalar values (categories) of one feature, or the problem.

    The one check of categories a client sends, whichever round: a 1-D
    array of a category dtype, its objects scalars, no value twice (NaN
    counted once). ``what`` names them in the problem ("feature 0's
    categories").
    """
    if not isinstance(values, np.ndarray) or values.ndim != 1:
        return f"{what} are not a 1-D array"
    if values.dtype.kind not in "OUSbiufMm":
        return f"{what} have dtype {values.dtype}"
    if values.dtype.kind == "O" and not all(
        isinstance(value, _SCALARS) for value in values.tolist()
    ):
        return f"{what} hold a value that is not a category (a list, dict...)"
    keys = [
        "nan" if isinstance(v, float) and v != v else (type(v).__name__, v)
        for v in values.tolist()
    ]
    try:
        distinct = len(set(keys)) == len(keys)
    except TypeError:
        return f"{what} hold a value that is not a category"
    if not distinct:
        return f"{what} list a value twice"
    return None


def rows_problem(claimed, declared, what):
    """A row count that must equal the one declared, or the problem."""
    count, problem = count_scalar(claimed, what)
    if problem is not None:
        return problem
    if declared is not None and count != int(declared):
        return f"{what} is {count}; it declared {int(declared)}"
    return None


#: Relative tolerance of the plausibility rules: float sums of n values are
#: off by about log2(n) * 2.2e-16 of the sum of their magnitudes (numpy's
#: pairwise summation), far below this; a false statistic is off by far more.
RTOL = 1e-9


def sum_within_extremes_problem(n, total, low, high, what):
    """A sum of n values lies within n * [min, max] of those values."""
    n, total = np.asarray(n, np.float64), np.asarray(total, np.float64)
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    defined = n > 0
    if np.any(defined & ~(low <= high)):
        return f"{what}: a minimum is above its maximum"
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.where(defined, n * np.maximum(np.abs(low), np.abs(high)), 0.0)
        tolerance = RTOL * scale + 1e-300
    if np.any(defined & ~np.isfinite(scale)):
        # Bounds that overflow bound nothing (and the server's totals
        # would overflow with them).
        j = int(np.flatnonzero(defined & ~np.isfinite(scale))[0])
        return (
            f"{what}: feature {j}'s extremes [{float(low[j])!r}, "
            f"{float(high[j])!r}] times its "
            f"{n[j]:.0f} values overflow float64"
        )
    with np.errstate(invalid="ignore"):
        outside = defined & (
            (total < n * low - tolerance) | (total > n * high + tolerance)
        )
    if np.any(outside):
        j = int(np.flatnonzero(outside)[0])
        return (
            f"{what}: feature {j}'s sum {total[j]!r} of {n[j]:.0f} values lies "
            f"outside {n[j]:.0f} * [{low[j]!r}, {high[j]!r}]"
        )
    if np.any(~defined & (total != 0)):
        return f"{what}: a feature without values has a sum other than 0"
    return None


def squares_problem(n, shifted_sum, shifted_squares, about, low, high, what):
    """Sums of squared deviations from ``about`` within what the maths allows.

    For n values in [low, high] with mean m and sum of deviations
    s = n (m - about): ``s**2 / n <= sum of squares`` (Cauchy-Schwarz), and
    ``sum of squares <= n ((high - m)(m - low) + (m - about)**2)`` (the
    Bhatia-Davis bound on the variance of bounded values).
    """
    n = np.asarray(n, np.float64)
    s = np.asarray(shifted_sum, np.float64)
    q = np.asarray(shifted_squares, np.float64)
    about = np.asarray(about, np.float64)
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    defined = n > 0
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        safe_n = np.maximum(n, 1.0)
        m = about + s / safe_n
        reach = np.maximum(np.abs(low - about), np.abs(high - about))
        # (high - m)(m - low) loses digits when the values' magnitude dwarfs
        # their spread: about 1e-16 of magnitude times spread.
        magnitude = np.maximum(np.maximum(np.abs(low), np.abs(high)), np.abs(about))
        tolerance = (
            n
            * np.where(
                defined,
                RTOL * reach**2 + 1e-12 * magnitude * (high - low),
                0.0,
            )
            + 1e-300
        )
        lowest = s**2 / safe_n
        highest = n * ((high - m) * (m - low) + (m - about) ** 2)
        bad = defined & ((q < lowest - tolerance) | (q > highest + tolerance))
    if np.any(q < 0):
        return f"{what}: a sum of squares is negative"
    if np.any(defined & ~(np.isfinite(highest) & np.isfinite(tolerance))):
        j = int(np.flatnonzero(defined & ~np.isfinite(highest))[0])
        return (
            f"{what}: feature {j}'s largest sum of squares its extremes allow "
            "overflows float64"
        )
    if np.any(bad):
        j = int(np.flatnonzero(bad)[0])
        return (
            f"{what}: feature {j}'s sum of squared deviations {q[j]!r} lies "
            f"outside [{lowest[j]!r}, {highest[j]!r}], the range its count, "
            "sum and extremes allow"
        )
    if np.any(~defined & ((q != 0) | (s != 0))):
        return f"{what}: a feature without values has sums other than 0"
    return None


def parse_groups(config, what="its groups"):
    """A client's group categories and attribute names from its config.

    ``config`` holds ``group-labels`` (JSON: one list of values per group)
    and ``sensitive-names`` (JSON: the attributes' names). Returns
    ``((labels, names), None)`` or ``(None, problem)``: every label is a
    tuple of one scalar (text, number, bool or null) per attribute, and no
    label is given twice.
    """
    try:
        labels = json.loads(config["group-labels"])
        names = json.loads(config["sensitive-names"])
    except (KeyError, TypeError, ValueError) as exc:
        return None, f"{what} cannot be read ({type(exc).__name__}: {exc})"
    scalar = (str, int, float, bool, type(None))
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(name, scalar) for name in names)
    ):
        return None, f"{what}: the attribute names {names!r} are not a list of names"
    if not isinstance(labels, list) or not all(
        isinstance(label, list)
        and len(label) == len(names)
        and all(isinstance(value, scalar) for value in label)
        for label in labels
    ):
        return None, (
            f"{what}: every group must be a list of {len(names)} values "
            f"(one per attribute {names})"
        )
    if any(
        isinstance(value, float) and not math.isfinite(value)
        for label in labels
        for value in label
    ):
        return None, f"{what}: a group's value is NaN or infinity"
    labels = [tuple(label) for label in labels]
    if len(set(labels)) != len(labels):
        return None, f"{what}: a group is listed twice"
    return (labels, names), None


class NoConsensus(RuntimeError):
    """No strict majority of the clients agrees on what all must share."""


def consensus(values, what="this", names=None):
    """The value a strict majority of the clients gives, to check each against.

    Used where the server has no reference of its own (the attribute names,
    the number of features, the classes): one hostile client cannot make
    the honest ones fail, as long as the honest ones are more than half.
    Without a strict majority the server cannot tell which clients are
    honest, whatever ``on_client_error`` says: :class:`NoConsensus` names
    the clients that disagree (``names[i]`` names the client of
    ``values[i]``).
    """
    keys = [repr(value) for value in values]
    counts = {key: keys.count(key) for key in keys}
    best = max(counts, key=counts.get)
    if 2 * counts[best] > len(keys):
        return values[keys.index(best)]
    names = names or [f"client {i}" for i in range(len(values))]
    said = "; ".join(
        f"{name} says {value!r}" for name, value in zip(names, values, strict=True)
    )
    raise NoConsensus(
        f"No strict majority of the clients agrees on {what}: {said}. The "
        "server cannot tell which of them is right (on_client_error='skip' "
        "cannot choose either): check these clients' data and configuration, "
        "make them agree, or leave the odd ones out of the federation."
    )


# -- replies about a client's rows: initialisation, histograms, reports -------


def initialisation_reply_problem(class_counts, *, n_classes, declared_rows):
    """Why an initialisation reply's class counts cannot be used, or None.

    Parameters
    ----------
    class_counts : array-like
        The client's training rows per class, in the order of the classes.
    n_classes : int
        The federation's number of classes.
    declared_rows : int
        The training rows the client declared.

    Returns
    -------
    problem : str or None
    """
    counts, problem = count_array(
        class_counts, "its class counts", shape=(n_classes,), at_most=declared_rows
    )
    if problem is not None:
        return problem
    if int(counts.sum()) != int(declared_rows):
        return (
            f"its class counts add up to {int(counts.sum())} rows; it declared "
            f"{int(declared_rows)} training rows"
        )
    return None


def histogram_reply_problem(counts, *, n_groups, n_bins, declared_rows):
    """Why a client's score histograms cannot be used, or None.

    Parameters
    ----------
    counts : array-like
        Its counts per (group, label (negative, positive), score bin).
    n_groups : int
        The number of groups the counts are for.
    n_bins : int
        The bins the server asked for.
    declared_rows : int
        The rows the histograms count (the client's evaluation rows).

    Returns
    -------
    problem : str or None
    """
    array, problem = count_array(
        counts,
        "its histogram",
        shape=(n_groups, 2, n_bins),
        at_most=declared_rows,
    )
    if problem is not None:
        return problem
    if int(array.sum()) != int(declared_rows):
        return (
            f"its histogram counts {int(array.sum())} rows; it declared "
            f"{int(declared_rows)} evaluation rows"
        )
    return None


#: A FairFed report's arrays, in the order a Flower client sends them: the
#: registry's counts, from which FairFed's gaps are computed.
REPORT_KEYS = COUNTS


def histogram_claim_problem(
    counts, labels, *, n_bins, ledger, k, rowset, declared_rows
):
    """A score histogram's problem: its form and counts, then what they claim.

    The one check of a histogram reply on both backends (group thresholds):
    ``counts`` of shape ``(n_groups, 2, n_bins)`` over ``declared_rows``
    rows, whose rows per group and label must be those the client declared
    and claimed before about ``rowset`` (``ledger``). ``labels`` are the
    groups the first axis counts.
    """
    problem = histogram_reply_problem(
        counts, n_groups=len(labels), n_bins=n_bins, declared_rows=declared_rows
    )
    if problem is not None:
        return problem
    per_group = np.asarray(counts, np.float64).sum(axis=2).astype(np.int64)
    return _claim_per_group(ledger, k, rowset, labels, per_group)


def _claim_per_group(ledger, k, rowset, labels, per_group):
    """The claim a reply's (negative, positive) rows per group make of a set.

    ``per_group`` has one row per group of ``labels``: its negative and
    positive rows. Their totals per label and the rows per group must agree
    with what the client declared and claimed before about ``rowset``.
    """
    return ledger.claim(
        k,
        rowset,
        labels=per_group.sum(axis=0),
        groups=dict(zip(labels, per_group, strict=True)),
    )


def fairness_report_problem(report, *, n_groups, declared_rows):
    """Why a FairFed report (counts per group) cannot be used, or None.

    Counts per group of rows, positive decisions, positive rows and true
    positives: whole, >= 0, adding up to the declared rows, and consistent
    (decisions and positives among a group's rows, true positives among both).
    """
    if not hasattr(report, "keys") or set(report) != set(REPORT_KEYS):
        keys = sorted(report) if hasattr(report, "keys") else type(report).__name__
        return f"its fairness report has {keys}; expected {list(REPORT_KEYS)}"
    counts = {}
    for key in REPORT_KEYS:
        counts[key], problem = count_array(
            report[key],
            f"its fairness report's {key!r}",
            shape=(n_groups,),
            at_most=declared_rows,
        )
        if problem is not None:
            return problem
    if int(counts["n"].sum()) != int(declared_rows):
        return (
            f"its fairness report counts {int(counts['n'].sum())} rows; it "
            f"declared {int(declared_rows)}"
        )
    n, tp = counts["n"], counts["true_positive"]
    if np.any(counts["selected"] > n) or np.any(counts["n_positive"] > n):
        return "its fairness report has more decisions or positives than rows"
    if np.any(tp > counts["selected"]) or np.any(tp > counts["n_positive"]):
        return "its fairness report has more true positives than decisions"
    return None


def fairness_report_claim_problem(report, labels, *, ledger, k, rowset, declared_rows):
    """A FairFed report's problem: its counts, then what they claim of the rows.

    The one check of a fairness report on both backends. ``labels`` are the
    groups the report's positions count (the federation's encoding
    in-process, the client's own on Flower); the counts must be those of
    ``declared_rows`` rows, and the rows per group and label the same as the
    client declared at initialisation and claimed in any earlier reply about
    ``rowset`` (``ledger``).
    """
    problem = fairness_report_problem(
        report, n_groups=len(labels), declared_rows=declared_rows
    )
    if problem is not None:
        return problem
    n = np.asarray(report["n"], np.int64)
    positive = np.asarray(report["n_positive"], np.int64)
    per_group = np.column_stack([n - positive, positive])
    return _claim_per_group(ledger, k, rowset, labels, per_group)


def attributes_problem(names, agreed):
    """A reply's groups are of other sensitive attributes than the round's.

    ``agreed`` is the names most replies of the round give (``consensus``),
    None when there is nothing to agree on.
    """
    if agreed is not None and names != agreed:
        return f"its groups are of attributes {names}; the federation's are {agreed}"
    return None


def named_fairness_report(config, arrays, round_names):
    """A FairFed report that names its own groups: ``(report, labels, problem)``.

    On Flower a client sends its groups' labels and the sensitive
    attributes' names with its counts (``parse_groups``); the names must be
    those the round's reports agree on (``round_names``, None when no
    consensus is needed), and there is one array per count. ``arrays()``
    decodes the counts, called only once the groups pass (as the checks run
    in order).

    Returns
    -------
    report : dict or None
    labels : list or None
    problem : str or None
    """
    parsed, problem = parse_groups(config)
    if problem is not None:
        return None, None, problem
    labels, names = parsed
    problem = attributes_problem(names, round_names)
    if problem is not None:
        return None, None, problem
    arrays = arrays()
    if len(arrays) != len(REPORT_KEYS):
        return (
            None,
            None,
            f"its fairness report has {len(arrays)} arrays; expected "
            f"{len(REPORT_KEYS)}",
        )
    return dict(zip(REPORT_KEYS, arrays, strict=True)), labels, None


def named_report_claim_problem(
    config, arrays, round_names, *, ledger, k, rowset, declared_rows
):
    """A FairFed report that names its own groups, checked, then claimed.

    ``named_fairness_report`` (its groups, their attributes, one array per
    count), then ``fairness_report_claim_problem`` on ``rowset``.
    """
    report, labels, problem = named_fairness_report(config, arrays, round_names)
    if problem is not None:
        return problem
    return fairness_report_claim_problem(
        report,
        labels,
        ledger=ledger,
        k=k,
        rowset=rowset,
        declared_rows=declared_rows,
    )


def attributes_consensus(named, name):
    """The sensitive attributes' names most replies give, or None if none do.

    ``named`` holds ``(k, names)`` for every reply whose groups could be
    read; ``name(k)`` names client ``k`` in the error when no strict
    majority agrees (``consensus``).
    """
    if not named:
        return None
    return consensus(
        [names for _, names in named],
        "the sensitive attributes' names",
        names=[name(k) for k, _ in named],
    )


def named_histogram_problem(
    arrays, names, agreed, labels, *, n_bins, ledger, k, rowset, declared_rows
):
    """A histogram reply that names its own groups, checked, then claimed.

    Its groups are of the attributes the replies agree on (``agreed``); it
    holds one array (``arrays()`` decodes them), checked and claimed by
    ``histogram_claim_problem``.
    """
    problem = attributes_problem(names, agreed)
    if problem is not None:
        return problem
    decoded, problem = read_reply(arrays)
    if problem is not None:
        return problem
    if len(decoded) != 1:
        return f"it sent {len(decoded)} arrays; one histogram was asked for"
    return histogram_claim_problem(
        decoded[0],
        labels,
        n_bins=n_bins,
        ledger=ledger,
        k=k,
        rowset=rowset,
        declared_rows=declared_rows,
    )


def group_declaration_problem(config, sizes, ledger, k):
    """A client's groups declared at initialisation, checked and kept.

    ``config["declared-groups"]`` (JSON, optional: a client without
    sensitive features declares none) holds ``names`` (the attributes) and,
    per set of rows it will use (``train``, ``held_out``, ``eval``), the
    ``labels`` of its groups there and their ``rows``: whole counts adding
    up to the set's declared size. Only labels and counts, never rows.
    Returns ``(names, problem)``; the declaration goes into ``ledger``.
    """
    if "declared-groups" not in config:
        return None, None
    try:
        declared = json.loads(config["declared-groups"])
        names, rowsets = declared["names"], declared["rowsets"]
    except (KeyError, TypeError, ValueError) as exc:
        return None, (
            f"its declared groups cannot be read ({type(exc).__name__}: {exc})"
        )
    if not isinstance(rowsets, dict) or not isinstance(names, list):
        return None, "its declared groups are not names and sets of rows"
    parsed_rowsets = {}
    for rowset, entry in rowsets.items():
        if rowset not in sizes:
            return None, (
                f"it declared groups for {rowset!r} rows; its sets of rows are "
                f"{sorted(sizes)}"
            )
        if not isinstance(entry, dict) or set(entry) != {"labels", "rows"}:
            return None, f"its declared groups of {rowset!r} rows are malformed"
        parsed, problem = parse_groups(
            {
                "group-labels": json.dumps(entry["labels"]),
                "sensitive-names": json.dumps(names),
            },
            f"its declared groups of {rowset!r} rows",
        )
        if problem is not None:
            return None, problem
        labels = parsed[0]
        counts, problem = count_array(
            entry["rows"],
            f"its declared rows per group of {rowset!r} rows",
            shape=(len(labels),),
            at_most=sizes[rowset],
        )
        if problem is not None:
            return None, problem
        if int(counts.sum()) != int(sizes[rowset]):
            return None, (
                f"its declared rows per group of {rowset!r} rows add up to "
                f"{int(counts.sum())}; it declared {int(sizes[rowset])} rows"
            )
        parsed_rowsets[rowset] = dict(zip(labels, counts.tolist(), strict=True))
    for rowset, rows in parsed_rowsets.items():
        ledger.declare_groups(k, rowset, rows)
    return tuple(names), None


# -- consistency across rounds and kinds of reply ------------------------------


#: The fields of a client's description of its data, in ``data_description``'s
#: order (what every client of a federation must share).
DESCRIPTION_KEYS = (
    "n-features",
    "classes",
    "feature-names",
    "raw-columns",
    "raw-dtypes",
)


def data_description(config):
    """A client's description of its data, checked: ``(description, problem)``.

    ``(n_features, classes, feature_names, raw_columns, raw_dtypes)`` from the
    mapping ``config``: a count > 0, a list of two or more distinct labels,
    lists of names (None where the client sent none). Only their form here;
    whether they are the federation's is for the majority of the clients to
    say (``consensus``, then ``description_difference``).
    """
    n_features, problem = count_scalar(config.get("n-features"), "its n-features")
    if problem is None and n_features == 0:
        problem = "its n-features is 0"
    if problem is not None:
        return None, problem
    classes = config.get("classes")
    scalar = (str, int, float)
    if (
        not isinstance(classes, list)
        or len(classes) < 2
        or not all(isinstance(c, scalar) and not isinstance(c, bool) for c in classes)
        or len({repr(c) for c in classes}) != len(classes)
    ):
        return None, f"its classes {classes!r} are not two or more distinct labels"
    names = []
    for key in DESCRIPTION_KEYS[2:]:
        value = config.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            return None, f"its {key} {value!r} are not a list of names"
        names.append(None if value is None else list(value))
    return (int(n_features), list(classes), *names), None


def description_difference(description, agreed):
    """How a client's description differs from the majority's, in words."""
    for key, mine, theirs in zip(DESCRIPTION_KEYS, description, agreed, strict=True):
        if mine != theirs:
            hint = (
                "; a client may lack a class: give every client the "
                "federation's classes with make_client_app(..., classes=...)"
                if key == "classes"
                else ""
            )
            return (
                f"its {key} {mine!r} are not those of the majority of the "
                f"clients ({theirs!r}){hint}"
            )
    return None


def description_consensus(described, name):
    """The data's description most clients give, and how the others differ.

    ``described`` maps client ``k`` to its checked description
    (``data_description``). Returns the majority's description and, per
    client whose own differs, the difference in words.
    """
    agreed = consensus(
        list(described.values()),
        "the data's description (features, classes, raw columns)",
        names=[name(k) for k in described],
    )
    return agreed, {
        k: description_difference(description, agreed)
        for k, description in described.items()
        if description != agreed
    }


def discovery_problem(metrics):
    """A client's declared rows at discovery: ``(n_rows, n_eval_rows, problem)``.

    ``num-rows`` (the rows it loaded) and, when it has them,
    ``num-eval-rows``: whole counts. No rows at all is for the client's own
    checks to explain at initialisation, as ``fit`` does.
    """
    n_rows, problem = count_scalar(metrics.get("num-rows"), "its rows")
    n_eval = None
    if problem is None and "num-eval-rows" in metrics:
        n_eval, problem = count_scalar(metrics["num-eval-rows"], "its evaluation rows")
    return n_rows, n_eval, problem


def initialisation_claim_problem(
    k,
    *,
    n_rows,
    class_counts,
    n_classes,
    initial_parameters,
    reference,
    config,
    sizes,
    ledger,
):
    """A client's initialisation reply checked, then its class counts claimed.

    Its training rows as declared (``sizes["train"]``); its count of each of
    the federation's ``n_classes`` classes over them; its initial model, of
    the shapes and dtypes of ``reference`` and finite; and its groups on
    every set of its rows (``group_declaration_problem``, from ``config``:
    the only groups its later replies may count rows in). Returns the first
    problem, or the ledger's verdict on its class counts. ``class_counts()``
    and ``initial_parameters()`` read those from the reply, each only once
    the checks before it pass (a reply wrong in two ways is told the first).
    """
    problem = rows_problem(n_rows, sizes["train"], "its training rows")
    if problem is None:
        class_counts = class_counts()
        problem = initialisation_reply_problem(
            class_counts, n_classes=n_classes, declared_rows=sizes["train"]
        )
    if problem is None:
        problem = training_reply_problem(
            initial_parameters(),
            sizes["train"],
            0.0,
            reference=reference,
            declared_rows=sizes["train"],
        )
    if problem is None:
        _, problem = group_declaration_problem(config, sizes, ledger, k)
    if problem is not None:
        return problem
    return ledger.claim(k, "train", labels=np.asarray(class_counts, np.int64))


class ClientLedger:
    """What each client has claimed about each set of its rows.

    A client's rows are a few fixed sets (``"rows"``: all it loaded,
    ``"train"``, ``"held_out"``, ``"eval"``); what it first claims about one
    (its size, its rows per label, its rows per group and label) is kept,
    and every later claim about the same set, in another round or another
    kind of reply, must agree.
    """

    def __init__(self):
        self._claims = {}

    def declare(self, k, rowset, rows):
        """The size of a set of rows, as declared when the client joined."""
        self._claims.setdefault((k, rowset), {})["rows"] = int(rows)

    def rows(self, k, rowset):
        """The declared size of a set of rows (None if never declared)."""
        return self._claims.get((k, rowset), {}).get("rows")

    def declare_groups(self, k, rowset, rows):
        """The groups of a set of rows and their sizes, declared at initialisation.

        ``rows`` maps each group label (a tuple) to its rows in the set;
        groups without rows are dropped. Every later reply about the set
        (FairFed reports, histograms) may count rows only in these groups,
        exactly as many in each.
        """
        self._claims.setdefault((k, rowset), {})["declared_groups"] = {
            tuple(label): int(n) for label, n in rows.items() if int(n) > 0
        }

    def declared_groups(self, k, rowset):
        """A set's declared rows per group (None if it declared none)."""
        return self._claims.get((k, rowset), {}).get("declared_groups")

    def claim(self, k, rowset, *, labels=None, groups=None):
        """Check a claim against earlier ones; keep it. Returns the problem.

        ``labels``: rows per label (an array); ``groups``: rows per label of
        each group, a dict from group label to array (groups without rows
        may be left out).
        """
        known = self._claims.setdefault((k, rowset), {})
        what = {
            "rows": "its rows",
            "train": "its training rows",
            "held_out": "its held-out rows",
            "eval": "its evaluation rows",
        }.get(rowset, rowset)
        if labels is not None:
            labels = np.asarray(labels, dtype=np.int64)
            before = known.get("labels")
            if before is not None and not np.array_equal(before, labels):
                return (
                    f"it counts {labels.tolist()} rows per label in {what}; it "
                    f"counted {before.tolist()} in an earlier reply"
                )
        if groups is not None:
            groups = {
                tuple(label): np.asarray(values, dtype=np.int64)
                for label, values in groups.items()
                if np.any(values)
            }
            problem = self._declared_problem(known, groups, what)
            if problem is not None:
                return problem
            before = known.get("groups")
            if before is not None and (
                set(before) != set(groups)
                or any(not np.array_equal(before[g], groups[g]) for g in groups)
            ):
                return (
                    f"its rows per group and label in {what} differ from those "
                    "of an earlier reply"
                )
        if labels is not None:
            known["labels"] = labels
        if groups is not None:
            known["groups"] = groups
        return None

    @staticmethod
    def _declared_problem(known, groups, what):
        """Rows per group against those declared at initialisation."""
        declared = known.get("declared_groups")
        if declared is None:
            return (
                f"it counts rows per sensitive group in {what}, and declared no "
                "groups for them at initialisation"
            )
        for label, values in groups.items():
            if label not in declared:
                return (
                    f"it counts {int(values.sum())} rows of group {list(label)} "
                    f"in {what}, a group it did not declare at initialisation "
                    f"(its groups: {[list(g) for g in declared]})"
                )
        for label, values in groups.items():
            if int(values.sum()) != declared[label]:
                return (
                    f"it counts {int(values.sum())} rows of group {list(label)} "
                    f"in {what}; it declared {declared[label]} at initialisation"
                )
        missing = [list(g) for g in declared if g not in groups]
        if missing:
            return (
                f"it counts no rows of groups {missing} in {what}; it declared "
                "rows of them at initialisation"
            )
        return None


def declared_sets(n_rows, n_eval_rows, validation_fraction):
    """A client's sets of rows and their sizes, from what it declared.

    ``n_rows``: the rows it loaded; ``n_eval_rows``: its evaluation rows
    (None when it has none, and evaluates on its held-out rows or else its
    training rows). The split is ``_split_client``'s: ``ceil(fraction * n)``
    rows held out. Returns the sizes (``rows``, ``train``, and ``held_out``
    / ``eval`` where it has them) and which set the evaluation and the
    fairness reports count.
    """
    held_out = (
        0 if validation_fraction is None else math.ceil(validation_fraction * n_rows)
    )
    sizes = {"rows": n_rows, "train": n_rows - held_out}
    if held_out:
        sizes["held_out"] = held_out
    if n_eval_rows is not None:
        sizes["eval"] = n_eval_rows
        evaluation = "eval"
    else:
        evaluation = "held_out" if held_out else "train"
    reports = "held_out" if held_out and n_eval_rows is None else "train"
    return sizes, {"evaluation": evaluation, "reports": reports}


# -- the gate -------------------------------------------------------------------


class RoundHistory:
    """A federation's round records, one per round and client, found or made.

    Both backends write a client's round into one record: its training loss,
    its update's norm, its validation metrics, or why it was skipped
    (``admit_round``). ``records`` is the list kept (``history_``); records
    are appended to it and found again only through this object, so the
    records of an earlier run (a warm start's, or of a fit that stopped
    midway and re-runs a round) are never written into.

    Parameters
    ----------
    records : list of dict
    client_id : callable, default=None
        ``client_id(k)``: client ``k``'s id in the records (``k`` itself by
        default).
    """

    def __init__(self, records, client_id=None):
        self.records = records
        self.client_id = client_id or (lambda k: k)
        self._by_key = {}

    def record(self, round_number, k):
        """Client ``k``'s record of round ``round_number``, appended if new."""
        return self.record_of(round_number, self.client_id(k))

    def record_of(self, round_number, client, new=None):
        """The record of round ``round_number`` and client id ``client``.

        Appended if new, with the fields ``new`` after its round and client
        (the in-process evaluation of a client that did not train this
        round records ``train_loss=None``).
        """
        key = (round_number, client)
        found = self._by_key.get(key)
        if found is None:
            found = {"round": round_number, "client": client, **(new or {})}
            self.records.append(found)
            self._by_key[key] = found
        return found


def admit_round(outcomes, *, round_number, on_client_error, name, record, what=None):
    """One round's replies through the failure policy: admitted, raised or skipped.

    The one policy of training and evaluation rounds, for both backends: with
    ``on_client_error="raise"`` the first failed client stops the fit naming
    it; with ``"skip"`` every failure is written into its history record and
    the round goes on with the others; a round where every selected client
    failed stops the fit either way.

    Parameters
    ----------
    outcomes : list of (int, str or None, BaseException or None)
        Per selected client, in selection order: its index, why its reply
        cannot be used (None when it can), and the exception behind that
        (chained to the error raised, where there is one).
    round_number : int
        The round, counted from 1.
    on_client_error : {"raise", "skip"}
    name : callable
        ``name(k)``: how client ``k`` is named in errors.
    record : callable
        ``record(k)``: client ``k``'s history record of this round, a dict
        the skip is written into.
    what : {"training", "evaluation", "rate histograms"} or None
        The kind of round, said in errors when given. A skipped evaluation is
        recorded under ``evaluation_skipped``, a skipped count of a rate
        constraint's histograms under ``rate_histograms_skipped``, a skipped
        training as ``skipped`` with no training loss.

    Returns
    -------
    admitted : list of int
        The clients whose replies are used, in the order given.
    """
    where = f" ({what})" if what else ""

    def skip(k, reason):
        if what == "evaluation":
            record(k)["evaluation_skipped"] = reason
        elif what == "rate histograms":
            # Left out of the round's operating point; it still trains.
            record(k)["rate_histograms_skipped"] = reason
        else:
            record(k).update(train_loss=None, skipped=reason)

    return failure_policy(
        outcomes,
        on_client_error,
        one_failed=lambda k, reason: (
            f"{name(k)} failed in round {round_number}{where}: {reason} (set "
            "on_client_error='skip' to aggregate the other clients)."
        ),
        every_failed=lambda k, reason: (
            f"Every selected client failed in round {round_number}{where}; "
            f"first: {name(k)}: {reason}"
        ),
        skip=skip,
    )


def failure_policy(outcomes, on_client_error, *, one_failed, every_failed, skip):
    """``on_client_error`` applied to replies: the one policy, worded by the caller.

    With ``"raise"`` the first failed client stops the fit
    (``RuntimeError(one_failed(k, reason))``, chained to its cause); when
    every client failed the fit stops either way (``every_failed``);
    otherwise ``skip(k, reason)`` records each failure and the others go on.
    ``outcomes`` holds ``(k, reason or None, cause or None)`` per client, in
    order. Returns the clients whose replies are used, in that order.
    """
    failed = [(k, reason, cause) for k, reason, cause in outcomes if reason is not None]
    if failed and on_client_error == "raise":
        k, reason, cause = failed[0]
        raise RuntimeError(one_failed(k, reason)) from cause
    if failed and len(failed) == len(outcomes):
        k, reason, cause = failed[0]
        raise RuntimeError(every_failed(k, reason)) from cause
    for k, reason, _ in failed:
        skip(k, reason)
    return [k for k, reason, _ in outcomes if reason is None]


class ReplyGate:
    """Admits clients' replies, or fails them by ``on_client_error``.

    Every backend checks a reply with the rules above, then hands the
    problems to ``admit``: with ``"raise"`` the first failing client stops
    the fit with an error naming it, the stage and what was wrong; with
    ``"skip"`` it is left out of what the replies feed, and recorded.

    Parameters
    ----------
    on_client_error : {"raise", "skip"}
    name : callable
        ``name(k)``: how client ``k`` is named in errors ("Client 2 (node
        1003)").
    client_id : callable
        ``client_id(k)``: the client's id in the records.
    """

    def __init__(self, on_client_error="raise", name=None, client_id=None):
        self.on_client_error = on_client_error
        self.name = name or (lambda k: f"Client {k!r}")
        self.client_id = client_id or (lambda k: k)
        self.ledger = ClientLedger()
        #: One record per skipped reply: stage, client and the reason.
        self.records = []
        #: Clients left out of the rest of a multi-round stage.
        self.left_out = set()

    def admit(self, stage, problems):
        """The clients whose replies are admitted, in the order given.

        Parameters
        ----------
        stage : str
            What the replies were for ("initialisation", "histogram query").
        problems : list of (int, str or None)
            Per replying client, its index and the problem of its reply.

        Returns
        -------
        admitted : list of int
        """
        return failure_policy(
            [(k, problem, None) for k, problem in problems],
            self.on_client_error,
            one_failed=lambda k, problem: (
                f"{self.name(k)} failed the {stage}: its reply cannot be used: "
                f"{problem} (set on_client_error='skip' to leave it out)."
            ),
            every_failed=lambda k, problem: (
                f"Every client failed the {stage}; first: {self.name(k)}: "
                f"its reply cannot be used: {problem}"
            ),
            skip=lambda k, problem: self.records.append(
                {
                    "stage": stage,
                    "client": self.client_id(k),
                    "skipped": f"its reply cannot be used: {problem}",
                }
            ),
        )


#: How far beyond the other clients' combined range a client's claimed
#: values may lie, in multiples of that range's scale (its width, or its
#: largest magnitude where larger). Honest data rarely
#: reaches this far (a value 100 widths out is an outlier beyond any
#: distribution the others' rows suggest, or a unit mistake: cents for
#: dollars is 100, grams for kilograms 1000), and a client claiming values
#: this far can move the federation's statistics far more than its share of
#: the rows. Such a client is named, with what to do (``range_problem``).
RANGE_FACTOR = 100.0


def range_problems(extremes):
    """Every client whose extremes lie too far beyond the others' range.

    Each client against the others' combined range (``range_problem``),
    all at once: the others' minimum of a feature is the smaller of the
    clients' before it and after it, so the work grows with the clients,
    not with their pairs.

    Parameters
    ----------
    extremes : dict
        Per client index, its per-feature minima and maxima, arrays of
        floats (NaN where it has no value: no say there).

    Returns
    -------
    problems : dict
        Per client at fault, its problem (``range_problem``); none with
        fewer than two clients, which have no others to compare with.
    """
    if len(extremes) < 2:
        return {}
    clients = list(extremes)
    lows = np.stack([np.asarray(extremes[k][0], np.float64) for k in clients])
    highs = np.stack([np.asarray(extremes[k][1], np.float64) for k in clients])
    lo = _others(lows, np.fmin)
    hi = _others(highs, np.fmax)
    below, above = _beyond(lows, highs, lo, hi)
    return {
        k: _range_message(lows[i], highs[i], lo[i], hi[i], below[i], above[i])
        for i, k in enumerate(clients)
        if (below[i] | above[i]).any()
    }


def _others(values, pick):
    """Per row, ``pick`` (fmin or fmax: NaN ignored) over every other row."""
    edge = np.full((1, values.shape[1]), np.nan)
    before = np.concatenate((edge, pick.accumulate(values[:-1], axis=0)))
    after = np.concatenate((pick.accumulate(values[:0:-1], axis=0)[::-1], edge))
    return pick(before, after)


def _beyond(low, high, lo, hi):
    """Where a client's extremes lie beyond the others' range [lo, hi]."""
    with np.errstate(over="ignore", invalid="ignore"):
        # The others' scale: their range's width, or its largest magnitude
        # where that is larger (values far from 0 with a narrow spread, or a
        # single value, are honest too).
        width = np.maximum(hi - lo, np.maximum(np.abs(lo), np.abs(hi)))
        # Where every other client holds only zeros (an indicator of a
        # category only this client has, a rare amount), the others give no
        # scale to compare with: nothing is bounded there.
        scaled = width > 0
        below = scaled & (low < lo - RANGE_FACTOR * width)
        above = scaled & (high > hi + RANGE_FACTOR * width)
    return below, above


def range_problem(k, extremes):
    """Client k's extremes against the other clients' combined range.

    Parameters
    ----------
    k : int
        The client.
    extremes : dict
        Per client index (two or more), its per-feature minima and maxima,
        arrays of floats (NaN where it has no value: no say there).

    Returns
    -------
    problem : str or None
    """
    low, high = extremes[k]
    others = [extremes[i] for i in extremes if i != k]
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN features
        lo = np.nanmin(np.stack([o[0] for o in others]), axis=0)
        hi = np.nanmax(np.stack([o[1] for o in others]), axis=0)
    below, above = _beyond(low, high, lo, hi)
    return _range_message(low, high, lo, hi, below, above)


def _range_message(low, high, lo, hi, below, above):
    """The problem of a client's extremes beyond the others' (None: none)."""
    bad = np.flatnonzero(below | above)
    if not bad.size:
        return None
    j = int(bad[0])
    value = low[j] if below[j] else high[j]
    return (
        f"feature {j}'s values reach {float(value)!r}, more than "
        f"{RANGE_FACTOR:g} times the scale of the other clients' combined range "
        f"[{float(lo[j])!r}, {float(hi[j])!r}] beyond it (its width, or its "
        "largest magnitude where larger). A false answer, a unit mistake or an extreme "
        "outlier: check this client's column; if the values are genuine, clip "
        "or transform (e.g. log) the feature on every client before it is "
        "federated, or leave the client out with on_client_error='skip'"
    )
