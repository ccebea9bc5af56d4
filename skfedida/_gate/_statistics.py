"""The gate's rules for the preprocessing statistics a client answers.

A federated transformer's server asks every client for statistics of its
rows (``skfedida.preprocessing``); each answer passes here before the server
combines it, in-process and on Flower alike. The rules are the gate's
(``_checks``): the answer has exactly the keys of its statistic, arrays of
one value per feature (the number of features most clients answer with), of
a numeric dtype, finite where defined; counts are whole, >= 0 and at most the
rows the client declared; the answers of one transformer's rounds agree (the
same non-missing counts every round; the second round of a scaler is the
first one's sums moved to the server's mean); and sums obey their extremes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._ordinal import ordinal_edges
from ._checks import (
    RTOL,
    Extremes,
    categories_problem,
    consensus,
    count_array,
    count_scalar,
    range_problems,
    real_array,
    squares_problem,
    sum_within_extremes_problem,
)


class Unreadable:
    """A client's statistics answer that could not be decoded (and why)."""

    def __init__(self, reason):
        self.reason = reason


@dataclass(frozen=True)
class StatisticsReply:
    """A client's statistics reply, read from its wire form.

    A client sends ``[answered_by, answer]``: the transformer it answered
    for (its class name) and its statistics. ``statistics_reply`` reads
    that pair once; everything after reads the fields.
    """

    answered_by: object
    answer: object


def statistics_reply(reply):
    """``reply`` as a ``StatisticsReply``; None when it is not one (unreadable)."""
    if isinstance(reply, Unreadable) or not (
        isinstance(reply, (tuple, list)) and len(reply) == 2
    ):
        return None
    answered_by, answer = reply
    return StatisticsReply(answered_by, answer)


#: Keys of every answer, by (transformer, statistic).
_KEYS = {
    ("FederatedStandardScaler", "sums"): {"n", "sum", "min", "max"},
    ("FederatedStandardScaler", "moments about"): {
        "n",
        "shifted_sum",
        "shifted_squares",
    },
    ("FederatedMinMaxScaler", "extremes"): {"n", "min", "max"},
    ("FederatedOneHotEncoder", "category counts"): {"categories", "counts", "n"},
}


_IMPUTER_BASE = {"n", "any_missing", "object"}


_IMPUTER_KEYS = {
    "sums": {"sum", "min", "max"},
    "values": {"values", "counts"},
    "interval counts": {"below", "bins"},
    "extremes": {"min", "max"},
    "counts": set(),
}


for _statistic, _keys in _IMPUTER_KEYS.items():
    _KEYS[("FederatedSimpleImputer", _statistic)] = _IMPUTER_BASE | _keys


#: The answer's array whose length is the number of features.
_WIDTH_KEY = {
    "FederatedStandardScaler": "n",
    "FederatedMinMaxScaler": "min",
    "FederatedOneHotEncoder": "categories",
    "FederatedSimpleImputer": "n",
}


def _width(read, name):
    try:
        return len(read.answer[_WIDTH_KEY[name]])
    except Exception:  # malformed (or no pair): its own rules say how
        return None


def statistics_problems(server, query, replies, *, rows, earlier, names=None):
    """Every client's statistics answer checked: ``[(k, problem or None)]``.

    Parameters
    ----------
    server : federated transformer
        The server's transformer (its parameters: strategy, categories...).
    query : dict
        What the server asked.
    replies : dict
        Client index to its reply, ``(answered_by, answer)`` as
        ``client_answer`` returns it, or an :class:`Unreadable`.
    rows : sequence of int or None
        Per client index, the rows it declared (None: not known).
    earlier : dict
        Client index to its admitted answers (their statistics) of this
        transformer's earlier rounds, in order.
    names : callable, default=None
        ``names(k)``: how client ``k`` is named where clients disagree.

    Returns
    -------
    problems : list of (int, str or None)
    """
    name = type(server).__name__
    names = names or (lambda k: f"Client {k}")
    read = {k: statistics_reply(reply) for k, reply in replies.items()}
    widths = {k: _width(read[k], name) for k in replies}
    known = {k: w for k, w in widths.items() if w is not None}
    n_features = _agreed(known, f"the number of features of {name}'s statistics", names)
    flags = {
        k: reply.answer.get("object")
        for k, reply in read.items()
        if reply is not None and isinstance(reply.answer, dict)
    }
    is_object = _agreed(flags, f"whether {name}'s columns hold objects", names)
    problems = []
    for k, reply in replies.items():
        declared = None if rows is None else rows[k]
        problem = _reply_problem(
            server,
            name,
            query,
            reply,
            read[k],
            declared,
            earlier.get(k, []),
            n_features,
            is_object,
        )
        problems.append((k, problem))
    return _across_clients(name, query, read, problems)


#: The statistics whose extremes the server's result scales with (the
#: sums' bounds, the min-max scaler's range): their range is checked
#: against the other clients'. A median's search brackets (the imputer's
#: "extremes") only bound a search whose answer is exact from counts.
_RANGED = {
    ("FederatedStandardScaler", "sums"),
    ("FederatedSimpleImputer", "sums"),
    ("FederatedMinMaxScaler", "extremes"),
}


def _agreed(by_client, what, names):
    """The value most clients in ``by_client`` reply, or None if none replied."""
    if not by_client:
        return None
    return consensus(
        list(by_client.values()), what, names=[names(k) for k in by_client]
    )


def _across_clients(name, query, read, problems):
    """What no answer shows alone: ranges against the others', finite totals.

    (a) Every total the server computes from the answers (the sums, the sums
    of squares, the range of the extremes) must be finite: an overflow is
    the failure of the client whose values dominate it. (b) A client's
    claimed extremes must lie within ``RANGE_FACTOR`` widths of the other
    clients' combined range's scale (``range_problems``).
    """
    ok = [k for k, problem in problems if problem is None]
    found = {}
    extremes = {
        k: Extremes(
            np.asarray(read[k].answer["min"], np.float64),
            np.asarray(read[k].answer["max"], np.float64),
        )
        for k in ok
        if (name, query.get("statistic")) in _RANGED
        and np.ndim(read[k].answer["min"]) == 1
    }
    found.update(range_problems(extremes))
    ok = [k for k in ok if k not in found]
    for key, what in (
        ("sum", "sum"),
        ("shifted_sum", "sum of deviations"),
        ("shifted_squares", "sum of squared deviations"),
    ):
        present = [k for k in ok if key in read[k].answer]
        if len(present) < 2:
            continue
        values = np.stack(
            [np.asarray(read[k].answer[key], np.float64) for k in present]
        )
        with np.errstate(over="ignore", invalid="ignore"):
            total = np.nansum(values, axis=0)
        if not np.all(np.isfinite(total)):
            j = int(np.flatnonzero(~np.isfinite(total))[0])
            k = present[int(np.nanargmax(np.abs(values[:, j])))]
            found[k] = (
                f"the federation's {what} of feature {j} overflows with its "
                f"{what}, {float(values[present.index(k), j])!r}: no total of the "
                "clients' values may leave float64's range"
            )
    if len(extremes) >= 2:
        kept = [k for k in extremes if k not in found]
        if len(kept) >= 2:
            lows = np.stack([extremes[k].low for k in kept])
            highs = np.stack([extremes[k].high for k in kept])
            with np.errstate(over="ignore", invalid="ignore"):
                spread = np.nanmax(highs, axis=0) - np.nanmin(lows, axis=0)
            bad = np.flatnonzero(np.isinf(spread))
            if bad.size:
                j = int(bad[0])
                reach = np.maximum(np.abs(lows[:, j]), np.abs(highs[:, j]))
                k = kept[int(np.nanargmax(reach))]
                found[k] = (
                    f"the federation's range of feature {j} overflows with its "
                    f"extremes [{float(extremes[k].low[j])!r}, "
                    f"{float(extremes[k].high[j])!r}]"
                )
    return [(k, found.get(k, problem)) for k, problem in problems]


def _reply_problem(
    server, name, query, reply, read, rows, earlier, n_features, is_object
):
    if isinstance(reply, Unreadable):
        return f"its answer cannot be read ({reply.reason})"
    if read is None:
        return "its answer is not an (answered by, statistics) pair"
    answered_by, answer = read.answered_by, read.answer
    if answered_by != name:
        return f"it answered for a {answered_by!r}; a {name} was asked"
    statistic = query.get("statistic")
    expected = _KEYS.get((name, statistic))
    if expected is None:  # a transformer this gate has no rules for
        return f"the gate has no rules for {name}'s {statistic!r} statistics"
    if not isinstance(answer, dict):
        return f"its answer is a {type(answer).__name__}, not statistics"
    if set(answer) != expected:
        missing, extra = expected - set(answer), set(answer) - expected
        return (
            f"its {statistic!r} answer has keys {sorted(answer)}: "
            + (f"missing {sorted(missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {sorted(extra)}" if extra else "")
        )
    if n_features is None:
        return "its answer has no per-feature statistics"
    check = {
        "FederatedStandardScaler": _standard_scaler,
        "FederatedMinMaxScaler": _min_max_scaler,
        "FederatedOneHotEncoder": _one_hot_encoder,
        "FederatedSimpleImputer": _simple_imputer,
    }[name]
    return check(server, query, answer, rows, earlier, n_features, is_object)


def _first_n(earlier):
    """The non-missing counts of this transformer's first round (None: first)."""
    return None if not earlier else np.asarray(earlier[0]["n"])


def _same_counts(n, earlier):
    first = _first_n(earlier)
    if first is not None and not np.array_equal(np.asarray(n, np.float64), first):
        return (
            "its counts of values per feature differ from those it sent in the "
            "first round"
        )
    return None


def _extremes(answer, n, shape, what):
    """A client's per-feature min and max: finite where it has values, else NaN."""
    empty = np.asarray(n) == 0
    low, problem = real_array(
        answer["min"], f"{what}'s minima", shape=shape, nan_allowed=empty
    )
    if problem is None:
        high, problem = real_array(
            answer["max"], f"{what}'s maxima", shape=shape, nan_allowed=empty
        )
    if problem is not None:
        return None, None, problem
    if np.any(~np.isnan(low[empty]) | ~np.isnan(high[empty])):
        return None, None, f"{what} has extremes for a feature without values"
    return low, high, None


def _standard_scaler(server, query, answer, rows, earlier, p, is_object):
    n, problem = count_array(
        answer["n"], "its counts of values", shape=(p,), at_most=rows
    )
    if problem is not None:
        return problem
    if query["statistic"] == "sums":
        total, problem = real_array(answer["sum"], "its sums", shape=(p,))
        if problem is not None:
            return problem
        low, high, problem = _extremes(answer, n, (p,), "its answer")
        if problem is not None:
            return problem
        return sum_within_extremes_problem(n, total, low, high, "its sums")
    problem = _same_counts(n, earlier)
    if problem is not None:
        return problem
    shifted, problem = real_array(answer["shifted_sum"], "its shifted sums", shape=(p,))
    if problem is None:
        squares, problem = real_array(
            answer["shifted_squares"], "its sums of squares", shape=(p,)
        )
    if problem is not None:
        return problem
    if not earlier:
        return "it answered a second round without a first"
    first = earlier[0]
    about = np.nan_to_num(np.asarray(query["about"], dtype=np.float64))
    total = np.asarray(first["sum"], np.float64)
    low = np.asarray(first["min"], np.float64)
    high = np.asarray(first["max"], np.float64)
    # The deviations' sum is the first round's sum moved to the mean sent.
    expected = total - n * about
    # The first round's sum is off by about 1e-16 of n times the values'
    # magnitude (the deviations' sum by far less): the tolerance scales with
    # the magnitude, not the spread.
    magnitude = np.nan_to_num(
        np.maximum(np.maximum(np.abs(low), np.abs(high)), np.abs(about))
    )
    off = np.abs(shifted - expected) > RTOL * n * magnitude + 1e-300
    if np.any(off):
        j = int(np.flatnonzero(off)[0])
        return (
            f"its sum of deviations of feature {j} ({shifted[j]!r}) is not its "
            f"first round's sum moved to the federation's mean ({expected[j]!r})"
        )
    return squares_problem(n, shifted, squares, about, low, high, "its second round")


def _min_max_scaler(server, query, answer, rows, earlier, p, is_object):
    n, problem = count_scalar(answer["n"], "its row count", at_most=rows)
    if problem is not None:
        return problem
    if rows is not None and n != rows:
        return f"it counts {n} rows; it declared {rows}"
    # A feature all missing has NaN extremes; which ones cannot be known.
    low, problem = real_array(answer["min"], "its minima", shape=(p,), nan_allowed=True)
    if problem is None:
        high, problem = real_array(
            answer["max"], "its maxima", shape=(p,), nan_allowed=True
        )
    if problem is not None:
        return problem
    if np.any(np.isnan(low) != np.isnan(high)):
        return "a feature has a minimum but no maximum, or the reverse"
    if np.any(low > high):
        return "a feature's minimum is above its maximum"
    return None


def _feature_values(values, counts, p, nouns, *, at_most, also=None):
    """Per feature, its distinct values' counts, checked: ``(j, counts, problem)``.

    What the encoder's categories and the imputer's most frequent values
    share: ``values`` and ``counts`` are lists of ``p`` features'; each
    feature's values are distinct categories (``also(j, values)`` may refuse
    them further) and its counts whole, one per value, at most
    ``at_most[j]``. ``nouns``: the plural and singular naming the values.
    Features are checked in order, and a problem ends the iteration, so a
    caller's own check of feature j runs before feature j + 1 is read.
    """
    plural, singular = nouns
    if not isinstance(values, list) or len(values) != p:
        yield None, None, f"its {plural} are not a list of {p} features' {plural}"
        return
    if not isinstance(counts, list) or len(counts) != p:
        yield (
            None,
            None,
            f"its {singular} counts are not a list of {p} features' counts",
        )
        return
    for j in range(p):
        problem = categories_problem(values[j], f"feature {j}'s {plural}")
        if problem is None and also is not None:
            problem = also(j, values[j])
        if problem is None:
            column, problem = count_array(
                counts[j],
                f"feature {j}'s {singular} counts",
                shape=(len(values[j]),),
                at_most=at_most[j],
            )
        if problem is not None:
            yield j, None, problem
            return
        yield j, column, None


def _same_values(a, b):
    a, b = list(a), list(b)
    return len(a) == len(b) and all(
        x == y or (x != x and y != y) for x, y in zip(a, b, strict=True)
    )


def _one_hot_encoder(server, query, answer, rows, earlier, p, is_object):
    n, problem = count_scalar(answer["n"], "its row count", at_most=rows)
    if problem is not None:
        return problem
    if rows is not None and n != rows:
        return f"it counts {n} rows; it declared {rows}"
    auto = isinstance(server.categories, str)

    def is_the_parameter(j, categories):
        if auto or _same_values(
            categories, np.asarray(server.categories[j], dtype=object)
        ):
            return None
        return f"feature {j}'s categories are not the encoder's categories parameter"

    for j, column, problem in _feature_values(
        answer["categories"],
        answer["counts"],
        p,
        ("categories", "category"),
        at_most=[n] * p,
        also=is_the_parameter,
    ):
        if problem is not None:
            return problem
        if column.sum() > n or (auto and column.sum() != n):
            return (
                f"feature {j}'s category counts add up to {int(column.sum())} "
                f"rows; it counts {n}"
            )
    return None


def _simple_imputer(server, query, answer, rows, earlier, p, is_object):
    statistic = query["statistic"]
    n, problem = count_array(
        answer["n"], "its counts of values", shape=(p,), at_most=rows
    )
    if problem is not None:
        return problem
    problem = _same_counts(n, earlier)
    if problem is not None:
        return problem
    missing = np.asarray(answer["any_missing"])
    if missing.dtype != bool or missing.shape != (p,):
        return f"its missing-value flags are not {p} booleans"
    if rows is not None and not np.array_equal(missing, n < rows):
        return (
            "its missing-value flags disagree with its counts of values (a "
            "feature has missing values exactly when it counts fewer values "
            "than rows)"
        )
    if not isinstance(answer["object"], (bool, np.bool_)):
        return "its 'object' flag is not a boolean"
    if bool(answer["object"]) != bool(is_object):
        return "its 'object' flag is not the other clients'"
    if statistic == "sums":
        total, problem = real_array(answer["sum"], "its sums", shape=(p,))
        if problem is not None:
            return problem
        low, high, problem = _extremes(answer, n, (p,), "its answer")
        if problem is not None:
            return problem
        return sum_within_extremes_problem(n, total, low, high, "its sums")
    if statistic == "extremes":
        return _extremes(answer, n, (p,), "its answer")[2]
    if statistic == "values":
        for j, column, problem in _feature_values(
            answer["values"], answer["counts"], p, ("values", "value"), at_most=n
        ):
            if problem is not None:
                return problem
            if column.sum() != n[j]:
                return (
                    f"feature {j}'s value counts add up to {int(column.sum())}; "
                    f"it counts {int(n[j])} values"
                )
        return None
    if statistic == "interval counts":
        intervals = query["intervals"]
        below, bins = answer["below"], answer["bins"]
        if not isinstance(below, list) or len(below) != len(intervals):
            return f"its counts below are not {len(intervals)} counts"
        if not isinstance(bins, list) or len(bins) != len(intervals):
            return f"its interval counts are not {len(intervals)} histograms"
        for i, (j, lo, hi) in enumerate(intervals):
            j = int(j)
            count, problem = count_scalar(below[i], "a count below", at_most=n[j])
            if problem is not None:
                return problem
            n_bins = len(ordinal_edges(int(lo), int(hi), server.n_bins)) - 1
            inside, problem = count_array(
                bins[i], f"interval {i}'s counts", shape=(n_bins,), at_most=n[j]
            )
            if problem is not None:
                return problem
            if count + inside.sum() > n[j]:
                return (
                    f"interval {i}'s counts and those below it add up to "
                    f"{int(count + inside.sum())}; it counts {int(n[j])} values "
                    f"of feature {j}"
                )
        return None
    return None  # "counts": the counts and flags above are all it sends
