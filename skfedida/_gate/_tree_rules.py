"""The gate's rules for what a client answers while trees are grown.

Boosted trees are trained by queries (``skfedida.ensemble._boosting``):
the bin edges' summaries and counts, then per tree the clients' rows,
histograms of a node, a node's partition, a leaf's cell weights and the
scores after a tree. Every answer passes here before the server uses it,
whatever carried it. The rules are the gate's (``_checks``): exactly the
answer's keys, arrays of the expected shapes and dtypes, finite numbers,
whole counts within the rows the client declared, and agreement with what
the server already knows of the client: a node's rows are the rows the
client gave it when its parent was split, a leaf's cell weights add up over
the leaves to the client's cell weights, and its counts of values at or
below a pivot never fall as the pivot rises. Each answer is also held to
the same client's earlier answers (``TreeLedger``) and to what the server
computes itself: without a sampler its rows per label are those it
described; with rows of weight 1 its weights are counts (its positives
those it prepared, its leaves' weights its rows there); its score sums
are recounted from the baseline, the trees' values and its leaves' cell
weights. What the rules cannot see is a client that makes up consistent
gradients for its rows: as a model update, the server has to take them.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..metrics._operating_point import score_bins
from ._checks import (
    RTOL,
    Extremes,
    categories_problem,
    consensus,
    count_array,
    count_scalar,
    range_problems,
    real_array,
)

#: How far a client's score sums may lie from the server's own recount, as
#: a share of the largest the cells' weights times the scores' largest
#: magnitude can reach: float64 sums of up to 10**8 rows round within it.
SCORE_DRIFT = 1e-8


#: Keys of every answer, by query kind (the scores' keys by "score").
_KEYS = {
    "describe": {
        "n",
        "classes",
        "class_counts",
        "group_labels",
        "sensitive_names",
        "columns",
        "dtypes",
    },
    "prepare": {"n", "class_counts", "is_categorical", "categories"},
    "encode": {"n", "n_val"},
    "bins": {"n"},
    "bin summary": {"n", "min", "max", "distinct", "at_most"},
    "counts at most": {"counts"},
    "weight at most": {"weights"},
    "start": {"n", "label_sums", "cell_weight", "has_missing", "n_val"},
    "leaf cells": {"cells"},
}


_SCORE_KEYS = {True: {"score_sums", "loss", "val_loss"}, False: {"score_sums"}}


def tree_reply_problem(query, answer, ledger, expected=None):
    """The problem of one client's answer to a tree query, or None.

    Parameters
    ----------
    query : dict
        What the server asked (``query["kind"]`` says what).
    answer : object
        The client's answer.
    ledger : TreeLedger
        What the server knows of the client's earlier answers.
    expected : int, default=None
        The client's rows of the node asked about (histograms, split).

    Returns
    -------
    problem : str or None
        What is wrong with the answer, in words; None if nothing is.
    """
    kind = query["kind"]
    keys = _KEYS.get(kind)
    if kind == "describe" and query.get("weighted"):
        keys = keys | {"class_weights"}
    if kind in ("init", "apply"):
        keys = _SCORE_KEYS[bool(query["score"])]
        if query["rate_bins"] is not None:
            keys = keys | {"rate_histograms"}
    elif kind == "start" and query["rates"]:
        keys = keys | {"rate_cell_weight"}
    elif kind == "bin summary" and query.get("weighted"):
        keys = keys | {"weight", "weight_at_most"}
    if not isinstance(answer, dict):
        return f"its answer is a {type(answer).__name__}, not a {kind!r} answer"
    if set(answer) != keys:
        missing, extra = keys - set(answer), set(answer) - keys
        return (
            f"its {kind!r} answer has keys {sorted(answer)}: "
            + (f"missing {sorted(missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {sorted(extra)}" if extra else "")
        )
    return _RULES[kind](query, answer, ledger, expected)


def _describe(query, answer, ledger, expected):
    n, problem = count_scalar(answer["n"], "its row count", at_most=ledger.rows)
    if problem is not None:
        return problem
    if ledger.rows is not None and n != ledger.rows:
        return f"it counts {n} rows; it declared {ledger.rows}"
    if n == 0:
        return "it has no training rows"
    classes = answer["classes"]
    problem = _categories_problem(classes, n, "its labels")
    if problem is not None:
        return problem
    counts, problem = count_array(
        answer["class_counts"], "its rows per label", shape=classes.shape, at_most=n
    )
    if problem is not None:
        return problem
    if counts.sum() != n or np.any(counts == 0):
        return f"its rows per label {counts.tolist()} are not its {n} rows"
    if query.get("weighted"):
        weights, problem = real_array(
            answer["class_weights"], "its weight per label", shape=classes.shape
        )
        if problem is not None:
            return problem
        if np.any(weights < 0) or not weights.sum() > 0:
            return "its weight per label is not the weight of some rows"
    names, labels = answer["sensitive_names"], answer["group_labels"]
    if (names is None) != (labels is None):
        return "it sends group labels without attribute names, or the reverse"
    if names is not None:
        if not (isinstance(names, list) and all(isinstance(x, str) for x in names)):
            return "its sensitive attributes' names are not a list of strings"
        if not isinstance(labels, list) or not labels or len(labels) > n:
            return f"its group labels are not a list of at most {n} groups"
        if any(
            not isinstance(label, list) or len(label) != len(names) for label in labels
        ):
            return f"a group label is not one value per attribute ({len(names)})"
        try:
            distinct = len({tuple(label) for label in labels}) == len(labels)
        except TypeError:
            return "a group label holds a value that is not a category"
        if not distinct:
            return "its group labels list a group twice"
    columns, dtypes = answer["columns"], answer["dtypes"]
    if not (isinstance(dtypes, list) and all(isinstance(d, str) for d in dtypes)):
        return "its column dtypes are not a list of strings"
    if columns is not None and not (
        isinstance(columns, list)
        and len(columns) == len(dtypes)
        and all(isinstance(c, str) for c in columns)
    ):
        return "its column names are not one string per dtype"
    return None


def _prepare(query, answer, ledger, expected):
    n, problem = count_scalar(answer["n"], "its row count")
    if problem is not None:
        return problem
    if n == 0:
        return "it has no training rows"
    if not query["resampled"] and ledger.rows is not None and n != ledger.rows:
        return f"it counts {n} rows; it declared {ledger.rows} (and resamples none)"
    counts, problem = count_array(
        answer["class_counts"], "its class counts", shape=(2,), at_most=n
    )
    if problem is not None:
        return problem
    if counts.sum() != n:
        return f"its class counts add up to {counts.sum()}; it counts {n} rows"
    described = ledger.described
    if not query["resampled"] and described is not None:
        # Without resampling, its rows per label are those it described.
        own = dict(
            zip(
                np.asarray(described["classes"]).tolist(),
                np.asarray(described["class_counts"]).tolist(),
                strict=True,
            )
        )
        declared = [own.get(c, 0) for c in np.asarray(query["classes"]).tolist()]
        if counts.tolist() != declared:
            return (
                f"its class counts {counts.tolist()} are not the rows per label "
                f"{declared} it described (and it resamples none)"
            )
    flags = np.asarray(answer["is_categorical"])
    if flags.dtype != bool or flags.ndim != 1:
        return "its categorical flags are not booleans, one per feature"
    categories = answer["categories"]
    if not isinstance(categories, list) or len(categories) != int(flags.sum()):
        return (
            f"its categories are not a list of {int(flags.sum())} categorical "
            "features' categories"
        )
    for j, values in enumerate(categories):
        problem = _categories_problem(values, n, f"categorical feature {j}")
        if problem is not None:
            return problem
    return None


def category_kind(values):
    """What a feature's categories are: "numbers", "strings" or "mixed".

    scikit-learn's encoders take a column of numbers or of strings, never
    both; ``None`` (a category of its own in a column of objects) goes with
    either.

    Parameters
    ----------
    values : ndarray of shape (n_categories,)
        One feature's categories, as a client sends them.

    Returns
    -------
    kind : {"numbers", "strings", "datetimes", "mixed"} or None
        None for a feature without categories.
    """
    if values.dtype.kind in "biuf":
        return "numbers" if values.size else None
    if values.dtype.kind in "US":
        return "strings" if values.size else None
    if values.dtype.kind in "Mm":
        return "datetimes" if values.size else None
    kinds = {
        "strings" if isinstance(v, (str, bytes)) else "numbers"
        for v in values.tolist()
        if v is not None
    }
    if len(kinds) > 1:
        return "mixed"
    return kinds.pop() if kinds else None


def disagreement_problems(values, name, problem, what, shown=str):
    """The problem of every client whose value is not the strict majority's.

    A federation needs one reading of what its clients must share (columns,
    dtypes, categorical features, the kind of each feature's categories).
    The value more than half of the clients with a say hold is the
    federation's (``consensus``, the gate's rule for what all must share),
    and each other client is at fault: under ``on_client_error="skip"`` one
    careless or hostile client is left out instead of stopping the fit.
    Without a strict majority (two clients that differ, say) the server
    cannot tell which is right: :class:`NoConsensus` names every client
    and what it said, whatever ``on_client_error`` says.

    Parameters
    ----------
    values : dict
        Per client index, its value (hashable; None: no say).
    name : callable
        ``name(k)``: how client ``k`` is named.
    problem : callable
        ``problem(value, majority, holder)``: the problem of a client
        holding ``value`` where client ``holder`` (a name) holds the
        majority's.
    what : str
        What the clients must agree on, for the error without a majority.
    shown : callable, default=str
        How a value is written in that error.

    Returns
    -------
    problems : dict
        Per client at fault, its problem.
    """
    said = {k: v for k, v in values.items() if v is not None}
    if len(set(said.values())) < 2:
        return {}
    clients = list(said)
    written = consensus(
        [shown(said[k]) for k in clients], what, names=[name(k) for k in clients]
    )
    first = next(k for k in clients if shown(said[k]) == written)
    majority, holder = said[first], name(first)
    return {
        k: problem(value, majority, holder)
        for k, value in said.items()
        if value != majority
    }


def summary_range_problems(answers, name=None):
    """Find the clients whose bin summaries reach far beyond the others' range.

    The preprocessing statistics' rule (``range_problems``): a client's
    claimed extremes of a feature may lie at most ``RANGE_FACTOR`` times
    the scale of the other clients' combined range beyond it. Its summary
    sets the bin edges, so without the rule one client shifting all its
    values (consistently, in every later count) moves the federation's top
    and bottom edges as far as it likes. Infinite extremes (scikit-learn
    bins infinities) are compared by none.

    Parameters
    ----------
    answers : dict
        Per client index, its admitted "bin summary" answer.
    name : callable, default=None
        Unused (the problems name no other client).

    Returns
    -------
    problems : dict
        Per client at fault, its problem.
    """
    extremes = {}
    for k, answer in answers.items():
        low, high = (np.asarray(answer[key], np.float64) for key in ("min", "max"))
        extremes[k] = Extremes(
            np.where(np.isfinite(low), low, np.nan),
            np.where(np.isfinite(high), high, np.nan),
        )
    return range_problems(extremes)


def _categories_problem(values, n, what):
    """A feature's categories: distinct scalars, no more than its rows."""
    problem = categories_problem(values, f"{what}'s categories")
    if problem is not None:
        return problem
    if category_kind(values) == "mixed":
        return f"{what}'s categories mix numbers and strings"
    if values.size > n:
        return f"{what} has {values.size} categories in {n} rows"
    # NaN is the missing value (its own bin), never a category; None, in a
    # column of objects, is a category of its own (as scikit-learn reads it).
    if any(isinstance(v, float) and v != v for v in values.tolist()):
        return f"{what}'s categories list a missing value"
    return None


def _encode(query, answer, ledger, expected):
    if ledger.prepared is None:
        return "it answered before it prepared its rows"
    n, problem = count_scalar(answer["n"], "its training row count")
    if problem is None:
        n_val, problem = count_scalar(answer["n_val"], "its validation row count")
    if problem is not None:
        return problem
    if n + n_val != int(ledger.prepared["n"]) or n == 0:
        return (
            f"it splits its {int(ledger.prepared['n'])} rows into {n} training "
            f"and {n_val} validation rows"
        )
    if (query["validation_fraction"] is None) != (n_val == 0):
        return "its validation rows disagree with the federation's early stopping"
    return None


def _bins(query, answer, ledger, expected):
    n, problem = count_scalar(answer["n"], "its row count")
    if problem is None and ledger.rows is not None and n != ledger.rows:
        problem = f"it binned {n} rows; it has {ledger.rows} training rows"
    return problem


def _bin_summary(query, answer, ledger, expected):
    max_bins = int(query["max_bins"])
    distinct = answer["distinct"]
    if not isinstance(distinct, list):
        return "its distinct values are not a list of features' values"
    p = len(distinct)
    n, problem = count_array(
        answer["n"], "its counts of values", shape=(p,), at_most=ledger.rows
    )
    if problem is not None:
        return problem
    empty = n == 0
    # A range may reach +-inf (scikit-learn bins infinities): not real_array.
    low, high = (np.asarray(answer[key]) for key in ("min", "max"))
    if any(a.dtype.kind != "f" or a.shape != (p,) for a in (low, high)):
        return f"its extremes are not {p} floats each"
    if np.any(np.isnan(low) != empty) or np.any(np.isnan(high) != empty):
        return "its extremes are missing for a feature with values, or the reverse"
    if np.any(~empty & ~(low <= high)):
        return "a feature's minimum is above its maximum"
    problem = _summary_weight_problem(query, answer, n)
    if problem is not None:
        return problem
    for j, values in enumerate(distinct):
        if values is None:
            if n[j] <= max_bins:
                return (
                    f"feature {j} counts {n[j]} values but its distinct values "
                    f"were not sent (at most {max_bins} distinct values are)"
                )
            continue
        values = np.asarray(values)
        if values.ndim != 1 or values.dtype.kind != "f":
            return f"feature {j}'s distinct values are not a 1-D array of floats"
        if values.size > min(max_bins, n[j]) or (n[j] > 0 and values.size == 0):
            return (
                f"feature {j} sends {values.size} distinct values for {n[j]} "
                f"values (at most {max_bins} are sent)"
            )
        if values.size and (
            np.any(np.isnan(values))
            or np.any(values[1:] <= values[:-1])
            or values[0] != low[j]
            or values[-1] != high[j]
        ):
            return (
                f"feature {j}'s distinct values are not sorted, distinct values "
                "from its minimum to its maximum"
            )
    return _at_most_problem(query, answer, n)


def _at_most_problem(query, answer, n):
    """Counts (weights) at or below each distinct value: rising to its total.

    The server answers this client's pivots from them (it is asked none),
    so they hold it to what pivots would: every distinct value has rows,
    and the counts end at its count of values (the weights at its weight).
    """
    distinct = answer["distinct"]
    weighted = query.get("weighted")
    keys = ("at_most", "weight_at_most") if weighted else ("at_most",)
    for key in keys:
        if not isinstance(answer[key], list) or len(answer[key]) != len(distinct):
            return f"its {key} is not a list with one entry per feature"
    for j, values in enumerate(distinct):
        at_most = answer["at_most"][j]
        if values is None:
            if at_most is not None or (
                weighted and answer["weight_at_most"][j] is not None
            ):
                return f"feature {j} sends counts at its values but not its values"
            continue
        size = np.asarray(values).shape[0]
        counts, problem = count_array(
            at_most, f"feature {j}'s counts at its values", shape=(size,)
        )
        if problem is not None:
            return problem
        if size and (
            counts[0] < 1 or np.any(counts[1:] <= counts[:-1]) or counts[-1] != n[j]
        ):
            return (
                f"feature {j}'s counts at its values do not rise, by at least 1 "
                f"a value, to its {int(n[j])} values"
            )
        if weighted:
            weights, problem = real_array(
                answer["weight_at_most"][j],
                f"feature {j}'s weights at its values",
                shape=(size,),
            )
            if problem is not None:
                return problem
            if size and (
                weights[0] <= 0
                or np.any(weights[1:] < weights[:-1])
                or weights[-1] != float(answer["weight"][j])
            ):
                return f"feature {j}'s weights at its values do not rise to its weight"
    return None


def _summary_weight_problem(query, answer, n):
    """A weighted summary's weights: >= 0, finite, positive where it has values."""
    if not query.get("weighted"):
        return None
    weight, problem = real_array(answer["weight"], "its weights", shape=n.shape)
    if problem is not None:
        return problem
    if np.any(weight < 0) or np.any((weight > 0) != (n > 0)):
        return "its weights per feature are not positive exactly where it has values"
    return None


def _summary_problem(ledger):
    return None if ledger.summary is not None else "it answered before its summary"


def _counts_at_most(query, answer, ledger, expected):
    problem = _summary_problem(ledger)
    if problem is not None:
        return problem
    features = np.asarray(query["features"], dtype=np.intp)
    pivots = np.asarray(query["pivots"], dtype=np.float64)
    n = np.asarray(ledger.summary["n"], dtype=np.int64)
    counts, problem = count_array(
        answer["counts"], "its counts at the pivots", shape=features.shape
    )
    if problem is not None:
        return problem
    if np.any(counts > n[features]):
        return "it counts more values at a pivot than the feature's values it has"
    low = np.asarray(ledger.summary["min"], dtype=np.float64)[features]
    high = np.asarray(ledger.summary["max"], dtype=np.float64)[features]
    with np.errstate(invalid="ignore"):
        below, above = pivots < low, pivots >= high
    if np.any(below & (counts != 0)) or np.any(above & (counts != n[features])):
        return (
            "its counts at pivots outside its range disagree with its range "
            "(none below its minimum, all at or above its maximum)"
        )
    return _pivot_order_problem(ledger.merged_pivots(query, counts), 0.0, "counts")


def _weight_at_most(query, answer, ledger, expected):
    """Its weight at or below each pivot: within its range, never falling."""
    problem = _summary_problem(ledger)
    if problem is not None:
        return problem
    if "weight" not in ledger.summary:
        return "it answered for weights its summary did not give"
    features = np.asarray(query["features"], dtype=np.intp)
    pivots = np.asarray(query["pivots"], dtype=np.float64)
    weights, problem = real_array(
        answer["weights"], "its weights at the pivots", shape=features.shape
    )
    if problem is not None:
        return problem
    total = np.asarray(ledger.summary["weight"], dtype=np.float64)[features]
    if np.any(weights < 0) or np.any(weights > total * (1 + RTOL)):
        return "its weight at a pivot is not a part of the feature's weight"
    low = np.asarray(ledger.summary["min"], dtype=np.float64)[features]
    high = np.asarray(ledger.summary["max"], dtype=np.float64)[features]
    with np.errstate(invalid="ignore"):
        below, above = pivots < low, pivots >= high
    if np.any(below & (weights != 0)) or np.any(
        above & (np.abs(weights - total) > RTOL * total)
    ):
        return (
            "its weights at pivots outside its range disagree with its range "
            "(none below its minimum, all at or above its maximum)"
        )
    merged = ledger.merged_pivots(query, weights, weights=True)
    # The slack of a feature: RTOL of its whole weight (every weight at a
    # pivot is a part of it).
    whole = np.asarray(ledger.summary["weight"], dtype=np.float64)[merged.features[1:]]
    return _pivot_order_problem(merged, RTOL * np.maximum(whole, 1.0), "weights")


def _pivot_order_problem(merged, slack, what):
    """A client's counts (weights) at pivots that fall as the pivot rises.

    ``merged`` is the ledger's ``Pivots``, sorted; two
    neighbours of one feature must not fall by more than ``slack``, and at
    one pivot must not differ by more than it.
    """
    features, pivots, values = merged.features, merged.pivots, merged.values
    same = features[1:] == features[:-1]
    steps = np.diff(values)
    falling = np.flatnonzero(same & (steps < -slack))
    if falling.size:
        return (
            f"its {what} of feature {features[falling[0]]}'s values fall as "
            "the pivot rises (across this round and its earlier ones)"
        )
    twice = np.flatnonzero(same & (pivots[1:] == pivots[:-1]) & (np.abs(steps) > slack))
    if twice.size:
        return (
            f"it gave two {what} of feature {features[twice[0]]}'s values at "
            "one pivot (across this round and its earlier ones)"
        )
    return None


def _start(query, answer, ledger, expected):
    n, problem = count_scalar(answer["n"], "its row count", at_most=ledger.rows)
    if problem is not None:
        return problem
    if ledger.rows is not None and n != ledger.rows:
        return f"it counts {n} rows; it declared {ledger.rows}"
    if n == 0:
        return "it has no training rows"
    sums, problem = real_array(answer["label_sums"], "its label sums", shape=(2,))
    if problem is not None:
        return problem
    positive, weight = sums
    if not (weight > 0 and 0 <= positive <= weight * (1 + RTOL)):
        return (
            f"its label sums ({positive!r} positive of {weight!r}) are not a "
            "positive weight and a part of it"
        )
    n_groups = int(query["n_groups"])
    size = 2 * n_groups if n_groups > 1 else 0
    cells, problem = real_array(
        answer["cell_weight"], "its cell weights", shape=(size,)
    )
    if problem is not None:
        return problem
    if np.any(cells < 0):
        return "its cell weights hold a negative weight"
    if size and abs(cells.sum() - weight) > RTOL * weight:
        return f"its cell weights add up to {cells.sum()!r}; its rows weigh {weight!r}"
    if size and abs(cells[1::2].sum() - positive) > RTOL * weight:
        return "its positive cells' weights are not its positive rows' weight"
    n_val, problem = count_scalar(answer["n_val"], "its validation row count")
    if problem is not None:
        return problem
    if ledger.unit_weights:
        problem = _unit_start_problem(n, n_val, positive, weight, cells, ledger)
        if problem is not None:
            return problem
    if query["rates"]:
        rate_cells, problem = real_array(
            answer["rate_cell_weight"], "its cells' weights in the rates", shape=(size,)
        )
        if problem is not None:
            return problem
        if np.any(rate_cells < 0) or not rate_cells.sum() > 0:
            return "its cells' weights in the rates are not weights of some rows"
        # The same rows weigh in both (a class weight of 0 may empty a cell
        # of the loss, never one of the rates).
        if np.any((cells > 0) & (rate_cells == 0)):
            return "its rows of a cell weigh in its loss and not in its rates"
    missing = np.asarray(answer["has_missing"])
    if missing.dtype != bool or missing.shape != (int(query["n_features"]),):
        return (
            f"its missing-value flags are not {int(query['n_features'])} booleans, "
            "one per feature"
        )
    return None


def _unit_start_problem(n, n_val, positive, weight, cells, ledger):
    """Rows of weight 1: its label sums and cell weights are counts of them.

    Its positives are those it prepared, less at most its validation rows
    (all of them without early stopping).
    """
    counts = weight == n and positive == np.round(positive)
    if not counts or np.any(cells != np.round(cells)):
        return (
            f"its label sums ({positive!r} positive of {weight!r}) or cell "
            f"weights are not counts of its {n} rows, which weigh 1 each"
        )
    if ledger.prepared is None:
        return None
    negatives, positives = (int(c) for c in ledger.prepared["class_counts"])
    # Its n training rows are its prepared rows less n_val: the negatives
    # are within the same bounds as soon as the positives are.
    if not positives - n_val <= positive <= positives:
        return (
            f"it trains on {int(positive)} positive and {n - int(positive)} "
            f"negative rows; it prepared {positives} and {negatives}, {n_val} "
            "of them held out"
        )
    return None


def _started(ledger):
    return None if ledger.start is not None else "it answered before it started"


def _scores(query, answer, ledger, expected):
    problem = _started(ledger)
    if problem is not None:
        return problem
    size = len(ledger.start["cell_weight"])
    sums, problem = real_array(answer["score_sums"], "its score sums", shape=(size,))
    if problem is None:
        problem = _recounted_scores_problem(query, sums, ledger)
    if problem is None and query["rate_bins"] is not None:
        problem = _rate_histograms_problem(query, answer, ledger)
    if problem is not None or not query["score"]:
        return problem
    loss, problem = real_array(answer["loss"], "its loss sums", shape=(2,))
    if problem is not None:
        return problem
    weight = ledger.start["label_sums"][1]
    if loss[0] < 0 or abs(loss[1] - weight) > RTOL * weight:
        return (
            f"its loss sums ({loss[0]!r} over {loss[1]!r}) are not a log-loss "
            f"over its rows' weight {weight!r}"
        )
    n_val = int(ledger.start["n_val"])
    val, problem = real_array(
        answer["val_loss"], "its validation loss sums", shape=(2 if n_val else 0,)
    )
    if problem is not None:
        return problem
    if n_val and (val[0] < 0 or val[1] <= 0):
        return "its validation loss sums are not a log-loss over a positive weight"
    return None


def _recounted_scores_problem(query, sums, ledger):
    """Score sums the server can recount: the baseline's, or the last tree's.

    Before any tree every row scores the baseline: a cell's sum is the
    baseline times its weight. A tree adds its leaves' values: a cell's
    sum grows by each leaf's value times the cell's weight in the leaf,
    which the client answered (with the penalty) before the tree was
    applied.
    """
    cells = np.asarray(ledger.start["cell_weight"], dtype=np.float64)
    if query["kind"] == "init":
        if query["trees"]:
            return None
        recount = float(query["baseline"]) * cells
        bound = abs(float(query["baseline"]))
    elif ledger.leaf_cells is not None and ledger.score_sums is not None:
        values = np.asarray(query["values"], dtype=np.float64)
        if ledger.leaf_cells.shape[0] != values.size:
            return None
        recount = ledger.score_sums + values @ ledger.leaf_cells
        bound = ledger.score_bound + float(np.abs(values).max(initial=0.0))
    else:
        return None
    if not np.isfinite(bound):
        return None
    if np.any(np.abs(sums - recount) > SCORE_DRIFT * bound * cells + 1e-12):
        return (
            "its score sums are not those of its scores: the server recounts "
            f"{recount.tolist()} from the baseline, the trees' values and its "
            "leaves' cell weights"
        )
    return None


def _rate_histograms_problem(query, answer, ledger):
    """A rate constraint's histograms: the client's cells' weights, on the grid.

    Every histogram counts the client's rows of each cell, whatever the
    scores; before any tree every score is the baseline, so every row lies
    in its bin.
    """
    weights = np.asarray(ledger.start["rate_cell_weight"], dtype=np.float64)
    n_bins = int(query["rate_bins"])
    histograms, problem = real_array(
        answer["rate_histograms"],
        "its histograms of the scores",
        shape=(weights.size, n_bins),
    )
    if problem is not None:
        return problem
    if np.any(histograms < 0):
        return "its histograms of the scores hold a negative weight"
    if np.any(np.abs(histograms.sum(axis=1) - weights) > RTOL * weights.sum()):
        return (
            "its histograms of the scores do not add up to its cells' weights "
            "in the rates"
        )
    if query["kind"] == "init" and not query["trees"]:
        start = score_bins(expit(np.array([float(query["baseline"])])), n_bins)[0]
        if np.any(np.delete(histograms, start, axis=1) != 0):
            return (
                "its histograms of the scores place rows away from the "
                "baseline's bin, where every row scores before the first tree"
            )
    return None


def _leaf_cells(query, answer, ledger, expected):
    problem = _started(ledger)
    if problem is not None:
        return problem
    total = np.asarray(ledger.start["cell_weight"], dtype=np.float64)
    cells, problem = real_array(
        answer["cells"],
        "its leaves' cell weights",
        shape=(len(query["leaves"]), total.size),
    )
    if problem is not None:
        return problem
    if np.any(cells < 0):
        return "its leaves' cell weights hold a negative weight"
    # Every row is in one leaf: the leaves' weights are the client's.
    if np.any(np.abs(cells.sum(axis=0) - total) > RTOL * total.sum()):
        return "its leaves' cell weights do not add up to its cell weights"
    if expected is not None:
        # Its rows per leaf, from its answers to the splits.
        rows = np.asarray(expected, dtype=np.float64)
        held = cells.sum(axis=1)
        if np.any((rows == 0) & (held != 0)):
            return "its leaves' cell weights weigh rows in a leaf where it has none"
        if ledger.unit_weights and np.any(held != rows):
            return (
                f"its leaves' cell weights count {held.tolist()} rows; its "
                f"splits put {rows.tolist()} there"
            )
    return None


_RULES = {
    "describe": _describe,
    "prepare": _prepare,
    "encode": _encode,
    "bins": _bins,
    "bin summary": _bin_summary,
    "counts at most": _counts_at_most,
    "weight at most": _weight_at_most,
    "start": _start,
    "init": _scores,
    "leaf cells": _leaf_cells,
    "apply": _scores,
}
