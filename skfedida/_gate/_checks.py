"""The rules every kind of reply shares: form, counts, sums, consensus.

A reply has the form the server asked for (known keys, arrays of the
expected shape and of a numeric dtype); numbers are finite where defined;
counts are whole numbers >= 0 and never more than the rows they count;
statistics obey what the maths implies (a sum of n values lies within n
times their extremes; a sum of squares between sum**2 / n and the largest
the extremes allow); a client's extremes are not far beyond every other
client's; and where the clients must agree on a value, a strict majority
decides it.
"""

from __future__ import annotations

import datetime
import json
import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from .._messages import GROUP_LABELS, SENSITIVE_NAMES


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


@dataclass(frozen=True)
class NamedGroups:
    """A client's groups as its reply names them.

    ``labels``: one tuple per group, of one value per attribute;
    ``names``: the attributes' names.
    """

    labels: list
    names: list


def parse_groups(config, what="its groups"):
    """A client's group categories and attribute names from its config.

    ``config`` holds ``group-labels`` (JSON: one list of values per group)
    and ``sensitive-names`` (JSON: the attributes' names). Returns
    ``(NamedGroups, None)`` or ``(None, problem)``: every label is a
    tuple of one scalar (text, number, bool or null) per attribute, and no
    label is given twice.
    """
    try:
        labels = json.loads(config[GROUP_LABELS])
        names = json.loads(config[SENSITIVE_NAMES])
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
    return NamedGroups(labels, names), None


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


#: How far beyond the other clients' combined range a client's claimed
#: values may lie, in multiples of that range's scale (its width, or its
#: largest magnitude where larger). Honest data rarely
#: reaches this far (a value 100 widths out is an outlier beyond any
#: distribution the others' rows suggest, or a unit mistake: cents for
#: dollars is 100, grams for kilograms 1000), and a client claiming values
#: this far can move the federation's statistics far more than its share of
#: the rows. Such a client is named, with what to do (``range_problem``).
RANGE_FACTOR = 100.0


@dataclass(frozen=True)
class Extremes:
    """A client's claimed per-feature minima and maxima.

    Arrays of floats of one length (NaN where it has no value of a
    feature: it then has no say there), which ``range_problems`` holds to
    the other clients' combined range.
    """

    low: np.ndarray
    high: np.ndarray


def range_problems(extremes):
    """Every client whose extremes lie too far beyond the others' range.

    Each client against the others' combined range (``range_problem``),
    all at once: the others' minimum of a feature is the smaller of the
    clients' before it and after it, so the work grows with the clients,
    not with their pairs.

    Parameters
    ----------
    extremes : dict
        Per client index, its :class:`Extremes`.

    Returns
    -------
    problems : dict
        Per client at fault, its problem (``range_problem``); none with
        fewer than two clients, which have no others to compare with.
    """
    if len(extremes) < 2:
        return {}
    clients = list(extremes)
    lows = np.stack([np.asarray(extremes[k].low, np.float64) for k in clients])
    highs = np.stack([np.asarray(extremes[k].high, np.float64) for k in clients])
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
        Per client index (two or more), its :class:`Extremes`.

    Returns
    -------
    problem : str or None
    """
    low, high = extremes[k].low, extremes[k].high
    others = [extremes[i] for i in extremes if i != k]
    with np.errstate(over="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN features
        lo = np.nanmin(np.stack([o.low for o in others]), axis=0)
        hi = np.nanmax(np.stack([o.high for o in others]), axis=0)
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
