"""The gate's rules for what a client answers while trees are grown.

Boosted trees are trained by queries (``skfedida.ensemble._boosting``):
the bin edges' summaries and counts, then per tree the clients' rows,
histograms of a node, a node's partition, a leaf's cell weights and the
scores after a tree. Every answer passes here before the server uses it,
whatever carried it. The rules are the gate's (``_replies``): exactly the
answer's keys, arrays of the expected shapes and dtypes, finite numbers,
whole counts within the rows the client declared, and agreement with what
the server already knows of the client: a node's rows are the rows the
client gave it when its parent was split, every feature's histogram of a
node counts those rows and adds up to the same gradient and hessian sums,
a leaf's cell weights add up over the leaves to the client's cell weights,
and its counts of values at or below a pivot never fall as the pivot
rises. Each answer is also held to the same client's earlier answers
(``TreeLedger``) and to what the server computes itself: a bin of no rows
has sums of 0; without a sampler its rows per label are those it
described; with rows of weight 1 its weights are counts (its positives
those it prepared, its leaves' weights its rows there); its score sums
are recounted from the baseline, the trees' values and its leaves' cell
weights. What the rules cannot see is a client that makes up consistent
gradients for its rows: as a model update, the server has to take them.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy.special import expit

from ._compat import HISTOGRAM_DTYPE
from ._replies import (
    RTOL,
    categories_problem,
    consensus,
    count_array,
    count_scalar,
    range_problems,
    real_array,
)
from .metrics._operating_point import score_bins

__all__ = [
    "RECORDED",
    "GrowAnswers",
    "SparseHistograms",
    "TreeLedger",
    "category_kind",
    "checked_sum",
    "disagreement_problems",
    "grow_problems",
    "histogram_problems",
    "raw_records",
    "summary_range_problems",
    "tree_reply_problem",
]

#: The query kinds whose answers later answers must agree with (what
#: :meth:`TreeLedger.record` keeps).
RECORDED = frozenset(
    {
        "describe",
        "prepare",
        "encode",
        "bin summary",
        "counts at most",
        "weight at most",
        "start",
        "init",
        "leaf cells",
        "apply",
    }
)

#: How far a client's score sums may lie from the server's own recount, as
#: a share of the largest the cells' weights times the scores' largest
#: magnitude can reach: float64 sums of up to 10**8 rows round within it.
SCORE_DRIFT = 1e-8


class TreeLedger:
    """What the server knows of one client's earlier tree answers.

    Parameters
    ----------
    rows : int or None
        The training rows the client declared.
    unit_weights : bool, default=False
        Whether every row weighs 1 in the loss (no sample, class or prior
        correction weights): its weights are then counts, which the server
        can hold to its counts of rows.
    """

    def __init__(self, rows=None, unit_weights=False):
        self.rows = rows
        self.unit_weights = bool(unit_weights)
        #: Its "describe" answer (classes, rows per label, groups, schema).
        self.described = None
        #: Its last admitted score sums per cell, and the largest magnitude
        #: a score can have had since (the baseline's plus the trees').
        self.score_sums = None
        self.score_bound = 0.0
        #: Its leaves' cell weights of the tree about to be applied.
        self.leaf_cells = None
        #: Its per-feature value counts and ranges (bin edges' summary).
        self.summary = None
        #: The (feature, pivot, count) triples it answered, as three arrays
        #: sorted by feature, pivot and count (``merged_pivots``).
        self.pivots = _NO_PIVOTS
        #: The same of its weights at or below each pivot.
        self.weight_pivots = _NO_PIVOTS
        #: The last merge a check made, (query, weights, merged): its record
        #: right after reuses it.
        self._last_merge = None
        #: Its "start" answer (rows, weights per cell, label sums).
        self.start = None
        #: Its "prepare" answer (rows after resampling, categories).
        self.prepared = None

    def record(self, query, answer):
        """Keep what later answers must agree with.

        Parameters
        ----------
        query : dict
            The query answered.
        answer : dict
            The client's admitted answer.
        """
        kind = query["kind"]
        if kind == "describe":
            self.described = answer
        elif kind == "prepare":
            self.prepared = answer
        elif kind == "encode":
            # From here on, the client's rows are its training rows.
            self.rows = int(answer["n"])
        elif kind == "bin summary":
            self.summary = answer
            self.pivots, self.weight_pivots = _NO_PIVOTS, _NO_PIVOTS
        elif kind == "counts at most":
            self.pivots = self._checked_merge(query, answer["counts"])
        elif kind == "weight at most":
            self.weight_pivots = self._checked_merge(
                query, answer["weights"], weights=True
            )
        elif kind == "start":
            self.start = answer
            # The bins are agreed: no pivot is asked again, and of the
            # summary only its totals and ranges are read from here on
            # (its counts per value add up with the clients' rows).
            if self.summary is not None:
                self.summary = {
                    key: value
                    for key, value in self.summary.items()
                    if key not in ("distinct", "at_most", "weight_at_most")
                }
            self.pivots = self.weight_pivots = _NO_PIVOTS
        elif kind == "leaf cells":
            self.leaf_cells = np.asarray(answer["cells"], dtype=np.float64)
        elif kind in ("init", "apply"):
            self.score_sums = np.asarray(answer["score_sums"], dtype=np.float64)
            if kind == "init":
                self.score_bound = abs(float(query["baseline"]))
                if query["trees"]:
                    # A warm start's trees: their leaves' values are not
                    # read here, so the sums are not recounted from them.
                    self.score_bound = np.inf
            else:
                self.score_bound += float(
                    np.abs(np.asarray(query["values"], dtype=np.float64)).max(
                        initial=0.0
                    )
                )
            self.leaf_cells = None

    def merged_pivots(self, query, counts, weights=False):
        """Merge its pivots and counts so far with these, sorted, in three arrays.

        Parameters
        ----------
        query : dict
            A ``"counts at most"`` (or ``"weight at most"``) query.
        counts : array-like
            The client's counts (weights) at its pivots.
        weights : bool, default=False
            Whether these are weights (merged with its earlier weights).

        Returns
        -------
        features, pivots, counts : ndarray
            Every (feature, pivot, count) it was asked and answered, sorted
            by feature, pivot and count: of each feature's run of equal
            counts only the first and last pivot, which decide every later
            check of counts as all of them would (weights, compared with a
            relative slack of ``RTOL``, to within that slack). A client's
            memory here is thus at most two pivots per feature and distinct
            count (its values plus one), not one per pivot of the
            bisection's rounds; one sort of all features at once.
        """
        dtype = np.float64 if weights else np.int64
        known = self.weight_pivots if weights else self.pivots
        # (Sorted by feature and pivot only: equal pivots keep their order,
        # known first, which the checks read as well.)
        features = np.concatenate(
            (known[0], np.asarray(query["features"], dtype=np.intp))
        )
        pivots = np.concatenate(
            (known[1], np.asarray(query["pivots"], dtype=np.float64))
        )
        at_pivots = np.concatenate((known[2], np.asarray(counts, dtype=dtype)))
        order = _lexical_order(features, pivots)
        features, pivots, at_pivots = features[order], pivots[order], at_pivots[order]
        changes = (features[1:] != features[:-1]) | (at_pivots[1:] != at_pivots[:-1])
        ends = np.concatenate(([True], changes)) | np.concatenate((changes, [True]))
        merged = features[ends], pivots[ends], at_pivots[ends]
        # (The query itself is kept, so no later query can pass for it.)
        self._last_merge = (query, weights, merged)
        return merged

    def _checked_merge(self, query, counts, weights=False):
        last = self._last_merge
        if last is not None and last[0] is query and last[1] == weights:
            self._last_merge = None
            return last[2]
        return self.merged_pivots(query, counts, weights)


def _lexical_order(features, pivots):
    """``numpy.lexsort((pivots, features))``, faster for few features.

    Two stable sorts: by pivot (runs of sorted pivots, as the known ones
    are, are merged, not sorted again), then by feature (a radix sort of
    16-bit codes). Stable both: the same order, ties included.
    """
    if features.size == 0 or features.max() >= 2**16 or features.min() < 0:
        return np.lexsort((pivots, features))
    by_pivot = np.argsort(pivots, kind="stable")
    return by_pivot[np.argsort(features[by_pivot].astype(np.uint16), kind="stable")]


#: No pivot asked yet: (features, pivots, counts).
_NO_PIVOTS = (np.empty(0, np.intp), np.empty(0), np.empty(0, np.int64))


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
        extremes[k] = (
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
    whole = np.asarray(ledger.summary["weight"], dtype=np.float64)[merged[0][1:]]
    return _pivot_order_problem(merged, RTOL * np.maximum(whole, 1.0), "weights")


def _pivot_order_problem(merged, slack, what):
    """A client's counts (weights) at pivots that fall as the pivot rises.

    ``merged`` is the ledger's (features, pivots, values), sorted; two
    neighbours of one feature must not fall by more than ``slack``, and at
    one pivot must not differ by more than it.
    """
    features, pivots, values = merged
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


#: How far a feature's histogram sums may drift from another feature's, as
#: a share of the client's largest possible sum of absolute gradients (or
#: hessians): the round-off of adding n float32 values in float64 is about
#: n * 1e-16 of it, below this for any n up to 10**8 rows.
DRIFT = 1e-8


def histogram_problems(query, answers, expected, shape=None, layout=None):
    """Every client's histograms of a node checked at once, and their sum.

    Asked for every node grown, so the checks are a few vectorised passes
    over the bins' sums: the counts are the client's rows of the node in
    every feature; the sums are finite, the hessian sums >= 0; no feature's
    gradient (hessian) sum exceeds the largest the client's rows can reach
    (``bounds``); and all features' sums agree, as they bin the same rows,
    to ``DRIFT`` of that largest sum.

    Parameters
    ----------
    query : dict
        The histograms asked (its ``features``: those computed, or None).
    answers : dict
        Client index to its answer (keys not yet checked).
    expected : dict
        Client index to ``(rows, gradient_bound, hessian_bound)``: its rows
        of the node, and the largest sums of absolute gradients and of
        hessians its rows can have (None: unknown).
    shape : tuple of int, default=None
        Every answer's shape: ``(n_features, n_bins)`` of the federation's
        bins, or ``(layout.size,)`` (None: the first well-formed answer's,
        for a lone check).
    layout : BinLayout, default=None
        The compact form the histograms come in
        (:class:`~skfedida.ensemble._growing.BinLayout`); None: every
        feature's ``n_bins`` bins, ``(n_features, n_bins)``.

    Returns
    -------
    problems : dict of int to str or None
        Per client index, what is wrong with its answer (None: nothing).
    total : ndarray of HISTOGRAM_DTYPE
        The well-formed answers' histograms summed, in the order of
        ``answers``, in their shape (None when none is well-formed); the
        features not computed hold zeros.
    """
    problems, formed = {}, []
    # The server's own shape: one client's answer cannot set it (a wrong one
    # would blame the others, or reach the grower's compiled code).
    shape = None if shape is None else tuple(int(n) for n in shape)
    for k, answer in answers.items():
        histograms = answer.get("histograms") if isinstance(answer, dict) else None
        if not isinstance(answer, dict) or set(answer) != {"histograms"}:
            problems[k] = "its answer is not a histograms answer"
        elif (
            not isinstance(histograms, np.ndarray)
            or histograms.dtype != HISTOGRAM_DTYPE
        ):
            problems[k] = "its histograms are not an array of histogram records"
        elif histograms.ndim != (2 if layout is None else 1) or (
            shape is not None and histograms.shape != shape
        ):
            problems[k] = (
                f"its histograms have shape {histograms.shape}; {shape} (features "
                "x bins) are needed"
            )
        else:
            shape = histograms.shape
            problems[k] = None
            formed.append(k)
    if not formed:
        return problems, None
    size = int(np.prod(shape))
    if layout is None:
        # Every feature's bins, one after the other: a layout of its own.
        n_features, n_bins = shape
        positions, offsets = _bins_of(
            query["features"], np.arange(n_features) * n_bins, n_bins
        )
    else:
        positions, offsets = layout.of_features(query["features"])
    stacked = _stacked([answers[k]["histograms"] for k in formed], size)
    sparse = SparseHistograms.of_records(
        stacked[:, positions], np.arange(size)[positions]
    )
    limits = np.array(
        [
            (np.nan, np.inf, np.inf) if expected.get(k) is None else expected[k]
            for k in formed
        ],
        dtype=np.float64,
    )
    found, total = checked_sum(
        sparse, query["features"], positions, offsets, limits, size
    )
    for k, problem in zip(formed, found, strict=True):
        problems[k] = problem
    return problems, total.reshape(shape)


class SparseHistograms:
    """Several clients' histograms of one node: only the bins where they hold rows.

    A client of a few rows has a few bins with rows in each feature of the
    thousands the federation's bins allow: these records hold, client after
    client, its bins that hold rows (or any sum), so that checking and adding
    many small clients' histograms costs their rows, not their number times
    the bins.

    Parameters
    ----------
    n_clients : int
        The clients stacked (``client`` indexes them).
    client : ndarray of int of shape (n_entries,)
        Per entry, its client's place in the stack. The entries of one bin
        come in the clients' order (their sum is added in it).
    position : ndarray of int of shape (n_entries,)
        Per entry, its bin in the histograms' flat (compact) form; per
        client, each bin at most once.
    gradients, hessians : ndarray of float64 of shape (n_entries,)
        The entry's sums.
    counts : ndarray of uint32 of shape (n_entries,)
        The entry's rows.
    """

    __slots__ = ("client", "counts", "gradients", "hessians", "n_clients", "position")

    def __init__(self, n_clients, client, position, gradients, hessians, counts):
        self.n_clients = int(n_clients)
        self.client = client
        self.position = position
        self.gradients = gradients
        self.hessians = hessians
        self.counts = counts

    @classmethod
    def of_records(cls, records, positions):
        """The entries of (clients, bins) histogram records that are not all zero.

        Parameters
        ----------
        records : ndarray of HISTOGRAM_DTYPE of shape (n_clients, n_columns)
            Each client's records per column.
        positions : ndarray of int of shape (n_columns,)
            The columns' bins in the flat form.

        Returns
        -------
        sparse : SparseHistograms
            The entries, client after client.
        """
        # Each field copied once into one contiguous (clients, bins) array:
        # operations on the records' strided fields are 3 to 10 times slower
        # than these copies.
        gradients, hessians, counts = (
            np.ascontiguousarray(records[field]) for field in _FIELDS
        )
        held = (counts != 0) | (gradients != 0) | (hessians != 0)
        client, column = np.nonzero(held)
        return cls(
            counts.shape[0],
            client,
            positions[column],
            gradients[held],
            hessians[held],
            counts[held],
        )

    def fields(self):
        """The entries' sums and counts, in the order of ``_FIELDS``.

        Returns
        -------
        gradients, hessians, counts : ndarray
            The entries' gradient sums, hessian sums and rows.
        """
        return self.gradients, self.hessians, self.counts

    def kept(self, mask):
        """The entries where ``mask`` holds.

        Parameters
        ----------
        mask : ndarray of bool of shape (n_entries,)
            The entries kept.

        Returns
        -------
        sparse : SparseHistograms
            Those entries, in their order.
        """
        return SparseHistograms(
            self.n_clients,
            self.client[mask],
            self.position[mask],
            self.gradients[mask],
            self.hessians[mask],
            self.counts[mask],
        )


def checked_sum(sparse, features, positions, offsets, limits, size):
    """Every stacked client's histograms of a node checked, and their sum.

    The rules of :func:`histogram_problems`, vectorised over the entries of
    :class:`SparseHistograms`: a bin of no rows has sums of 0; every
    computed feature counts the client's rows of the node; the sums are
    finite, the hessians >= 0, within the client's bounds, and agree between
    features to ``DRIFT`` of the bound.

    Parameters
    ----------
    sparse : SparseHistograms
        The clients' histograms (of the computed features' bins only).
    features : array-like of int or None
        The features computed (None: all).
    positions : ndarray of intp or slice
        The computed features' bins in the flat form, feature after feature
        (``slice(None)``: all).
    offsets : ndarray of intp
        Where each computed feature's bins start among ``positions`` (in
        the order of ``features``).
    limits : ndarray of shape (n_clients, 3)
        Per client: its rows of the node (NaN: unknown), and the largest
        sums of absolute gradients and of hessians its rows can reach.
    size : int
        Bins of the flat form.

    Returns
    -------
    problems : list of str or None
        Per client of the stack, its first problem (None: none).
    total : ndarray of HISTOGRAM_DTYPE of shape (size,)
        The clients' histograms summed, client after client (the order of
        every earlier release, so the same trees); zeros where no client
        holds an entry.
    """
    n, n_features = sparse.n_clients, offsets.shape[0]
    features = (
        np.arange(n_features)
        if features is None
        else np.asarray(features, dtype=np.intp)
    )
    # Each computed bin's rank among the computed features (-1: a bin of a
    # feature not computed, whose entries are not read, as the grower reads
    # only the computed features).
    computed = np.arange(size)[positions]
    rank = np.full(size, -1, dtype=np.intp)
    rank[computed] = np.repeat(
        np.arange(n_features), np.diff(np.append(offsets, computed.shape[0]))
    )
    # Per entry, its (client, computed feature) cell (built in place: a
    # root's entries of many small clients are as many as its values).
    cells = rank[sparse.position]
    kept = cells >= 0
    if not kept.all():
        sparse = sparse.kept(kept)
        cells = cells[kept]
    del kept
    client, position = sparse.client, sparse.position
    gradients, hessians, counts = sparse.fields()
    cells += client * n_features
    # Per (client, feature): its rows (float64 holds any honest count
    # exactly), and its gradient and hessian sums.
    by_feature = n * n_features
    totals = _sums(cells, counts, by_feature)
    with np.errstate(invalid="ignore"):
        sums = np.stack(
            (
                _sums(cells, gradients, by_feature),
                _sums(cells, hessians, by_feature),
            ),
            axis=1,
        ).reshape(n, n_features, 2)
    # A bin of no rows has sums of 0: a rule of each client's bins, which
    # the federation's sum hides where another client has rows in the bin.
    stray = (counts == 0) & ((gradients != 0) | (hessians != 0))
    strays = np.bincount(client[stray], minlength=n) > 0
    negative = np.bincount(client[hessians < 0], minlength=n) > 0
    del cells
    problems = _vectorised_problems(
        totals.reshape(n, n_features), sums, negative, limits, features
    )
    for i in np.flatnonzero(strays):
        problems[i] = (
            "its histograms hold gradient or hessian sums in a bin where it "
            "counts no rows"
        )
    # The federation's sums, one client after the other: bincount adds the
    # entries in their order, client after client, from 0 (a bin without
    # a client's rows adds nothing, as its 0 added nothing).
    total = np.zeros(size, HISTOGRAM_DTYPE)
    with np.errstate(over="ignore", invalid="ignore"):
        for field, values in zip(_FIELDS, sparse.fields(), strict=True):
            total[field] = _sums(position, values, size)
    return problems, total


#: The fields of a histogram record, in the order SparseHistograms holds them.
_FIELDS = ("sum_gradients", "sum_hessians", "count")


def _stacked(histograms, size):
    """Clients' histogram records stacked, one row of ``size`` records each.

    Copied as raw bytes, one copy a client: numpy copies records field by
    field, far slower.
    """
    stacked = np.empty((len(histograms), size), HISTOGRAM_DTYPE)
    raw = raw_records(stacked)
    for i, histogram in enumerate(histograms):
        raw[i] = raw_records(histogram.reshape(-1))
    return stacked


def _sums(index, values, length):
    """``values`` added per ``index`` in their order from 0, as float64."""
    # (bincount gives integers when there are no values.)
    return np.bincount(index, weights=values, minlength=length).astype(
        np.float64, copy=False
    )


def raw_records(records):
    """A view of an array of records as raw bytes, one item per record.

    Copies, gathers and scatters of it move each record's bytes at once,
    where numpy moves records field by field (4 to 20 times slower).

    Parameters
    ----------
    records : ndarray
        An array of records (a structured dtype, such as histograms').

    Returns
    -------
    raw : ndarray
        The same memory, one void item per record.
    """
    return records.view(np.dtype((np.void, records.dtype.itemsize)))


def _bins_of(features, offsets, n_bins):
    """Flat bins of ``features`` (None: all) of equal width, and their offsets."""
    if features is None:
        return slice(None), offsets
    features = np.asarray(features, dtype=np.intp)
    positions = (features[:, None] * n_bins + np.arange(n_bins)).reshape(-1)
    return positions, np.arange(features.shape[0]) * n_bins


def _vectorised_problems(totals, sums, negative, limits, features):
    """Per stacked client, its first problem (or None).

    ``totals`` (clients x features) are its counts per computed feature,
    ``sums`` (clients x features x 2) its gradient and hessian sums,
    ``negative`` whether it holds a negative hessian sum, ``features``
    the computed features' indices (named in the problems).
    """
    rows, bounds = limits[:, :1], limits[:, 1:]
    wrong_rows = (totals != rows) & ~np.isnan(rows)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(sums).all(axis=(1, 2))
        # float32 gradients round up to 6e-8 of a row's own bound.
        beyond = (np.abs(sums) > bounds[:, None, :] * (1 + 1e-6)).any(axis=1)
        drift = (
            sums.max(axis=1, initial=-np.inf) - sums.min(axis=1, initial=np.inf)
        ) > DRIFT * bounds
    flagged = (
        wrong_rows.any(axis=1)
        | ~finite
        | negative
        | beyond.any(axis=1)
        | drift.any(axis=1)
    )
    problems = [None] * totals.shape[0]
    for i in np.flatnonzero(flagged):
        problems[i] = _histogram_problem(
            i,
            totals,
            rows,
            wrong_rows,
            finite,
            negative,
            beyond,
            drift,
            sums,
            bounds,
            features,
        )
    return problems


def _histogram_problem(
    i, totals, rows, wrong_rows, finite, negative, beyond, drift, sums, bounds, features
):
    """Client i's first problem among the vectorised checks, or None."""
    if wrong_rows[i].any():
        j = int(np.flatnonzero(wrong_rows[i])[0])
        return (
            f"its histogram of feature {int(features[j])} counts "
            f"{int(totals[i, j])} rows of the node; it has {int(rows[i, 0])} there"
        )
    if not finite[i]:
        return "its histograms hold NaN or infinity (or sums beyond float64)"
    if negative[i]:
        return "its histograms hold a negative hessian sum"
    for field, what in enumerate(("gradient", "hessian")):
        values = sums[i, :, field]
        if beyond[i, field]:
            return (
                f"its histograms' {what} sum reaches {float(np.abs(values).max())!r}, "
                f"beyond the {float(bounds[i, field])!r} its rows' weights allow"
            )
        if drift[i, field]:
            return (
                f"its histograms' {what} sums differ between features "
                f"({float(values.min())!r} to {float(values.max())!r}): they bin "
                "the same rows"
            )
    return None


class GrowAnswers(Mapping):
    """Several clients' answers to one ``"grow"`` round, stacked.

    What :func:`grow_problems` checks: the clients' rows of each split's
    children, and their histograms of each node asked as
    :class:`SparseHistograms`. In-process clients answer in this form at
    once (``skfedida.ensemble._batch``); answers that arrive one by one are
    stacked into it (:meth:`of_answers`). As a mapping it is each client's
    answer, ``{"splits": ..., "histograms": ...}``, the histograms in their
    compact form made on demand.

    Parameters
    ----------
    clients : list of int
        The clients' indices, in the stack's order.
    splits : ndarray of uint64 of shape (n_clients, n_splits, 2)
        Per client and split, its rows in the left and right child.
    histograms : list of SparseHistograms
        Per histogram asked, the clients' histograms of its node.
    size : int
        Bins of a histogram's compact form.
    """

    def __init__(self, clients, splits, histograms, size):
        self.clients = list(clients)
        self.splits = splits
        self.histograms = histograms
        self.size = int(size)
        self._place = {k: i for i, k in enumerate(self.clients)}

    @classmethod
    def of_answers(cls, clients, answers, n_splits, n_asked, size):
        """Well-formed answers, one per client, stacked (in ``clients``' order).

        Parameters
        ----------
        clients : list of int
            The clients whose answers are stacked, in order.
        answers : dict
            Client index to its well-formed ``"grow"`` answer.
        n_splits, n_asked : int
            The query's splits and histograms.
        size : int
            Bins of a histogram's compact form.

        Returns
        -------
        stacked : GrowAnswers
            The answers, each histogram as the entries where it holds rows
            or sums.
        """
        n = len(clients)
        # Counts are whole and >= 0 (the form's rules): held in 64 unsigned
        # bits, so that no count changes.
        splits = np.empty((n, n_splits, 2), dtype=np.uint64)
        for i, k in enumerate(clients):
            splits[i] = answers[k]["splits"]
        stacked = _stacked(
            [answers[k]["histograms"] for k in clients], n_asked * size
        ).reshape(n, n_asked, size)
        columns = np.arange(size)
        histograms = [
            SparseHistograms.of_records(stacked[:, i], columns) for i in range(n_asked)
        ]
        return cls(clients, splits, histograms, size)

    def __getitem__(self, k):
        i = self._place[k]
        histograms = np.zeros((len(self.histograms), self.size), HISTOGRAM_DTYPE)
        for node, sparse in enumerate(self.histograms):
            mine = sparse.client == i
            for field, values in zip(_FIELDS, sparse.fields(), strict=True):
                histograms[field][node, sparse.position[mine]] = values[mine]
        return {"splits": self.splits[i], "histograms": histograms}

    def __iter__(self):
        return iter(self.clients)

    def __len__(self):
        return len(self.clients)


def grow_problems(query, answers, splits, sources, bounds, layout, asked=None):
    """Every client's answer to a ``"grow"`` round checked at once.

    A round makes splits (each client's rows of a node partitioned between
    two children) and sums histograms of nodes. Each client's partition
    must keep its rows of the node split (whole counts, ``left + right``
    its rows there); each histogram passes :func:`histogram_problems`'s
    rules (:func:`checked_sum`, for all clients at once) against the
    client's rows of its node (a child of this round's splits: as it
    partitioned them). When every answer passes, the federation's
    children hold the rows the split's histograms put there (the grower
    counted them before the round): a partition that disagrees with its
    histograms, which no single answer shows, stops the fit.

    Parameters
    ----------
    query : dict
        The ``"grow"`` query (its ``splits`` and ``histograms``).
    answers : dict or GrowAnswers
        Client index to its answer, or the clients' answers stacked.
    splits : list of tuple
        Per split of the query, ``(rows, left)``: each client's rows of the
        node split (client index to count), and the federation's rows of the
        left child.
    sources : list
        Per histogram asked, its node's rows: ``(j, side)`` for a child of
        the query's ``j``-th split (0 left, 1 right), or client index to
        count.
    bounds : dict
        Client index to ``(gradient bound, hessian bound)`` of its rows.
    layout : BinLayout
        The compact form of every histogram
        (:class:`~skfedida.ensemble._growing.BinLayout`).
    asked : list of int, default=None
        The clients asked (None: those in ``answers``). The federation's
        children are counted only when every one of them answered: a client
        that failed is left out, and the tree grown again without it.

    Returns
    -------
    problems : dict of int to str or None
        Per client index, what is wrong with its answer (None: nothing).
    totals : list of ndarray of HISTOGRAM_DTYPE
        Per histogram asked, the clients' sum in the compact form (None when
        a client's answer has a problem).
    """
    n_splits, n_asked = len(query["splits"]), len(query["histograms"])
    shape = (layout.size,)
    if isinstance(answers, GrowAnswers):
        # Made together in this process: one form for all.
        problems = dict.fromkeys(answers.clients)
        stack = answers
        if (
            stack.splits.shape != (len(stack.clients), n_splits, 2)
            or len(stack.histograms) != n_asked
        ):
            raise RuntimeError("The stacked grow answers do not answer the query.")
    else:
        problems = {
            k: _grow_form_problem(answer, n_splits, n_asked, shape)
            for k, answer in answers.items()
        }
        stack = GrowAnswers.of_answers(
            [k for k in answers if problems[k] is None],
            answers,
            n_splits,
            n_asked,
            layout.size,
        )
    clients = stack.clients
    children = stack.splits
    rows = np.array(
        [[counts.get(k, 0) for k in clients] for counts, _ in splits],
        dtype=np.uint64,
    ).reshape(n_splits, len(clients))
    # Each count within the node's rows first: no sum can wrap.
    wrong = (children > rows.T[:, :, None]).any(axis=2) | (
        children.sum(axis=2) != rows.T
    )
    for i in np.flatnonzero(wrong.any(axis=1)):
        j = int(np.flatnonzero(wrong[i])[0])
        problems[clients[i]] = (
            f"its children hold {int(children[i, j, 0])} + "
            f"{int(children[i, j, 1])} rows; it has {int(rows[j, i])} in the "
            "node split"
        )
    sound = np.array([problems[k] is None for k in clients], dtype=bool)
    known = np.array([k in bounds for k in clients], dtype=bool)
    bound = np.array(
        [bounds.get(k, (np.inf, np.inf)) for k in clients], dtype=np.float64
    ).reshape(len(clients), 2)
    totals = []
    for i, source in enumerate(sources):
        held = (
            children[:, source[0], source[1]].astype(np.float64)
            if isinstance(source, tuple)
            else np.array([source.get(k, 0) for k in clients], dtype=np.float64)
        )
        # A client whose splits are wrong has no known rows of a child; one
        # without bounds (a lone check) none of its rows.
        held[~sound | ~known] = np.nan
        positions, offsets = layout.of_features(query["histograms"][i]["features"])
        found, total = checked_sum(
            stack.histograms[i],
            query["histograms"][i]["features"],
            positions,
            offsets,
            np.column_stack((held, bound)),
            layout.size,
        )
        for place in np.flatnonzero(sound):
            k = clients[place]
            problems[k] = problems[k] or found[place]
        totals.append(total)
    if any(problem is not None for problem in problems.values()):
        return problems, [None] * n_asked
    if asked is not None and set(asked) != set(answers):
        return problems, totals
    for j, (_, left) in enumerate(splits):
        held = int(children[:, j, 0].sum())
        if held != left:
            raise RuntimeError(
                f"The clients' partitions of node {query['splits'][j]['node']} "
                f"put {held} rows in its left child; their histograms put "
                f"{left} there. A client's partition disagrees with its "
                "histograms, and no single answer shows which: the fit stops."
            )
    return problems, totals


def _grow_form_problem(answer, n_splits, n_asked, shape):
    """What is wrong with a ``"grow"`` answer's keys, types and shapes."""
    if type(answer) is not dict or answer.keys() != {"splits", "histograms"}:
        return "its answer is not a grow answer (splits and histograms)"
    children, histograms = answer["splits"], answer["histograms"]
    if (
        not isinstance(children, np.ndarray)
        or children.dtype.kind not in "iu"
        or children.shape != (n_splits, 2)
    ):
        return f"its rows of the children are not {n_splits} pairs of counts"
    if np.any(children < 0):
        return "its rows of the children hold a negative count"
    if not isinstance(histograms, np.ndarray) or histograms.dtype != HISTOGRAM_DTYPE:
        return "its histograms are not an array of histogram records"
    if histograms.shape != (n_asked, *shape):
        return (
            f"its histograms have shape {histograms.shape}; {(n_asked, *shape)} "
            "(nodes x the bins that can hold rows) are needed"
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
