"""Bin edges from the clients' rows without pooling them: scikit-learn's edges.

scikit-learn's ``_BinMapper`` cuts a numeric feature at the midpoints of its
distinct values when it has at most ``max_bins`` of them, and otherwise at
its ``max_bins - 1`` percentiles (numpy's ``"averaged_inverted_cdf"``:
each is one order statistic of the column, or the mean of two neighbours).
Both are functions of a few pooled order statistics, which the clients can
find without sending a row:

1. each client sends, per feature, the count of its non-missing values,
   their minimum and maximum, and its distinct values when it has at most
   ``max_bins`` of them (else only that it has more). Their union, when
   every client sent its values and the union has at most ``max_bins``,
   gives the midpoints;
2. otherwise every needed order statistic (one or two per edge) is found by
   bisection over the ordered float64 values: each round the server sends,
   per statistic, one pivot, and each client answers how many of its values
   are at most that pivot. After at most 64 rounds (all features' statistics
   at once, one message per client and round) the smallest pivot with
   enough values at or below it is the order statistic itself.

A client with at most ``max_bins`` distinct values of every feature also
sends, in step 1, its count of values at or below each (and, weighted, its
running weight there): the server answers every pivot of that client itself
and asks it none, so a federation of small clients bins in one round, not
65, and the edges are the same.

So the edges are scikit-learn's on the pooled rows (on at most
``subsample`` rows: above scikit-learn's 200,000 it draws a random subsample
to bin from, where these edges stay those of all rows), bin for bin; as
values they are equal too, but for the sign of a zero edge (numpy's
partition picks either zero at a rank; the bisection, -0.0 below a negative
minimum), which bins the same. A feature without a value on any client gets
no edge (scikit-learn raises). What the server learns, per client and
feature: the count of non-missing values and their range; all its distinct
values and the count (weight) at or below each when the client has at most
``max_bins`` of them, whether or not the pooled feature then takes
percentiles (a client of few rows sends every value it has, and how many
rows have it: what its root histograms show of the binned values anyway);
and its counts of values at or below each pivot, one
bisection per needed order statistic, at most 64 rounds for all features
(per client: the server adds them up, no secure aggregation).

With row weights (``sample_weight``, class weights, the prior correction's:
what scikit-learn's fit bins with), scikit-learn leaves the rows of weight 0
out and cuts at weighted percentiles (its ``_weighted_percentile``,
``average=True``): the first value at which the pooled weight of the values
at or below it reaches ``p / 100`` of the total, or, where that weight
equals the target (within ``eps``), the mean of that value and the next.
The clients then also send their weight per feature, and answer how much of
it lies at or below each pivot; the bisection finds the first value, one
more round reads its weight and count, and a bisection on counts finds the
next value where it is needed. With one client (the rows of one machine)
the sums are its own, in its own order: scikit-learn's edges; over several
clients the weights are summed in another order, which can move an edge by
one value where a target falls within rounding of a cumulative weight.
"""

from __future__ import annotations

import numpy as np

from .._compat import BinMapper
from .._gate._tree_rules import summary_range_problems
from ._boosting import Restart, _as_channel

__all__ = ["ClientColumns", "federated_bin_mapper"]

_ALMOST_INF = 1e300  # scikit-learn's ALMOST_INF: no +inf edge


def _ordered(values):
    """float64 values as int64 keys in the same order (NaN excluded)."""
    bits = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    return bits ^ ((bits >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))


def _from_ordered(keys):
    """The inverse of :func:`_ordered`."""
    keys = np.asarray(keys, dtype=np.int64)
    bits = keys ^ ((keys >> 63) & np.int64(0x7FFFFFFFFFFFFFFF))
    return bits.view(np.float64)


class ClientColumns:
    """One client's side of the bin edges: its sorted values per feature.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The client's numeric rows (NaN for missing values).
    weight : ndarray of shape (n_samples,), default=None
        The rows' weights in the binning (None: unweighted). Rows of weight
        0 are left out, as scikit-learn's binning leaves them out.
    """

    def __init__(self, X, weight=None):
        X = np.asarray(X, dtype=np.float64)
        self.columns, self.cumulative = [], []
        for column in X.T:
            keep = ~np.isnan(column)
            if weight is None:
                self.columns.append(np.sort(column[keep]))
                continue
            keep &= weight != 0
            # scikit-learn's order (argsort) and running sum of the weights.
            order = np.argsort(column[keep])
            self.columns.append(column[keep][order])
            self.cumulative.append(np.cumsum(weight[keep][order]))

    def answer(self, query):
        """The client's answer to a query of the bin edges.

        Parameters
        ----------
        query : dict
            ``{"kind": "bin summary", "max_bins": m}``: per feature, its
            non-missing values' count and range, and its distinct values
            and its count at or below each when there are at most ``m`` of
            them (else None);
            ``{"kind": "counts at most", "features": f, "pivots": v}``: how
            many of its values of feature ``f[i]`` are at most ``v[i]``.

        Returns
        -------
        answer : dict
            ``{"n", "min", "max", "distinct", "at_most"}`` (and ``"weight"``,
            ``"weight_at_most"`` weighted) or ``{"counts"}``.
        """
        if query["kind"] == "bin summary":
            return self._summary(int(query["max_bins"]), query.get("weighted"))
        features = np.asarray(query["features"], dtype=np.intp)
        pivots = np.asarray(query["pivots"], dtype=np.float64)
        counts = np.empty(features.shape[0], dtype=np.int64)
        weighted = query["kind"] != "counts at most"
        weights = np.zeros(features.shape[0]) if weighted else None
        # The pivots of one feature at a time (one sort, no mask of every
        # pivot per feature): a search of its sorted values each.
        order = np.argsort(features, kind="stable")
        starts = np.flatnonzero(np.diff(features[order])) + 1
        for asked in np.split(order, starts):
            if not asked.size:
                continue
            feature = features[asked[0]]
            found = np.searchsorted(self.columns[feature], pivots[asked], side="right")
            counts[asked] = found
            if weighted and found.any():  # (a feature without values has 0)
                cumulative = self._cumulative(feature)
                weights[asked] = np.where(
                    found > 0, cumulative[np.maximum(found - 1, 0)], 0.0
                )
        if not weighted:
            return {"counts": counts}
        return {"weights": weights}

    def _cumulative(self, feature):
        """A feature's running weights (unit weights when unweighted)."""
        if self.cumulative:
            return self.cumulative[feature]
        return np.arange(1.0, self.columns[feature].size + 1.0)

    def _summary(self, max_bins, weighted=False):
        n_features = len(self.columns)
        answer = {
            "n": np.array([column.size for column in self.columns], dtype=np.int64),
            "min": np.full(n_features, np.nan),
            "max": np.full(n_features, np.nan),
            "distinct": [],
        }
        if weighted:
            answer["weight"] = np.array(
                [
                    self._cumulative(j)[-1] if column.size else 0.0
                    for j, column in enumerate(self.columns)
                ]
            )
        for j, column in enumerate(self.columns):
            if column.size == 0:
                answer["distinct"].append(np.empty(0))
                continue
            answer["min"][j], answer["max"][j] = column[0], column[-1]
            distinct = np.unique(column)
            answer["distinct"].append(distinct if distinct.size <= max_bins else None)
        # Of few distinct values, also the count (and weight) at or below
        # each: the server then answers every pivot of this client itself,
        # and asks it none (a client of few rows costs no bisection round).
        answer["at_most"] = []
        if weighted:
            answer["weight_at_most"] = []
        for j, (column, distinct) in enumerate(
            zip(self.columns, answer["distinct"], strict=True)
        ):
            if distinct is None:
                answer["at_most"].append(None)
                if weighted:
                    answer["weight_at_most"].append(None)
                continue
            at_most = np.searchsorted(column, distinct, side="right").astype(np.int64)
            answer["at_most"].append(at_most)
            if weighted:
                # Its own running weights at each value's last row: what it
                # would answer at a pivot there.
                cumulative = self._cumulative(j)
                answer["weight_at_most"].append(
                    cumulative[at_most - 1] if at_most.size else np.empty(0)
                )
        return answer


class _Known:
    """The clients whose pivots the server answers from their summaries.

    A client that sent, for every feature with values, its distinct values
    and its count (and weight) at or below each is asked no pivot: its
    counts at any pivot are its count at the largest of its values at or
    below it. Their counts are pooled once per feature (integers: in any
    order), their weights added up client after client.

    Parameters
    ----------
    answers : dict
        Client index to its admitted ``"bin summary"`` answer.
    weighted : bool
        Whether the summaries carry weights.
    """

    def __init__(self, answers, weighted):
        self.clients = {
            k
            for k, answer in answers.items()
            if all(
                values is not None or n == 0
                for values, n in zip(answer["distinct"], answer["n"], strict=True)
            )
        }
        known = [answers[k] for k in sorted(self.clients)]
        n_features = len(next(iter(answers.values()))["n"]) if answers else 0
        self.values, self.counts, self.weights = [], [], []
        for j in range(n_features):
            parts = [a for a in known if a["n"][j] > 0]
            values = (
                np.unique(np.concatenate([a["distinct"][j] for a in parts]))
                if parts
                else np.empty(0)
            )
            counts = np.zeros(values.shape[0], dtype=np.int64)
            if parts:
                # Each client's rows at each of its values (its count at or
                # below it, less the count below), placed at that value among
                # the pooled ones: their running sum is the pooled count at
                # or below every value (whole numbers: in any order). (As the
                # gate admitted them: whole counts, real weights.)
                at_most = [np.asarray(a["at_most"][j], np.int64) for a in parts]
                np.add.at(
                    counts,
                    np.searchsorted(
                        values, np.concatenate([a["distinct"][j] for a in parts])
                    ),
                    np.concatenate([np.diff(c, prepend=0) for c in at_most]),
                )
                counts = np.cumsum(counts)
            weights = np.zeros(values.shape[0])
            for a in parts if weighted else ():
                # Each client's weight at or below every pooled value, added
                # client after client.
                at = np.searchsorted(a["distinct"][j], values, side="right") - 1
                inside = at >= 0
                weights[inside] += np.asarray(a["weight_at_most"][j], np.float64)[
                    at[inside]
                ]
            self.values.append(values)
            # A leading 0: the count below the smallest value.
            self.counts.append(np.concatenate(([0], counts)))
            self.weights.append(np.concatenate(([0.0], weights)))

    def at_most(self, key, features, pivots):
        """The known clients' summed counts (or weights) at the pivots."""
        pooled = self.counts if key == "counts" else self.weights
        out = np.zeros(features.shape[0], dtype=pooled[0].dtype if pooled else float)
        for feature in np.unique(features):
            asked = features == feature
            at = np.searchsorted(self.values[feature], pivots[asked], side="right")
            out[asked] = pooled[feature][at]
        return out


def _pivot_sums(channel, kind, key, features, pivots, known):
    """Every active client's ``key`` at the pivots, summed (known ones'
    from their summaries, the others' asked)."""
    query = {"kind": kind, "features": features, "pivots": pivots}
    asked = [k for k in channel.active if k not in known.clients]
    answers = channel.ask(query, only=asked) if asked else {}
    sums = known.at_most(key, features, pivots)
    for answer in answers.values():
        sums = sums + answer[key]
    return sums


def _bisect(channel, features, kind, key, enough, low, high, known):
    """The first value of each feature at which ``enough(sums)`` holds.

    The clients' answers to ``kind`` queries (their ``key``, summed) at one
    pivot per entry per round: the interval (lo, hi] of ordered keys holding
    each value halves every round. ``enough`` must hold at ``high`` and not
    below ``low``. Clients in ``known`` (:class:`_Known`) are not asked.
    """
    lo = _ordered(np.asarray(low, dtype=np.float64)) - 1
    hi = _ordered(np.asarray(high, dtype=np.float64))
    # 64 halvings close any interval of int64 keys; one more sees it closed.
    for _ in range(65):
        # Keys span all of int64: neither hi - lo nor lo + hi may be formed.
        open_ = hi > lo + 1
        if not open_.any():
            return _from_ordered(hi)
        mid = lo // 2 + hi // 2 + (lo % 2 + hi % 2) // 2
        pivots = _from_ordered(mid)
        met = enough(_pivot_sums(channel, kind, key, features, pivots, known))
        hi = np.where(open_ & met, mid, hi)
        lo = np.where(open_ & ~met, mid, lo)
    # Each round halves every open interval, whatever the answers: only a
    # broken midpoint could get here (a guard, not a case).
    raise RuntimeError("The bisection of a bin edge did not close in 64 rounds.")


def _weighted_edges(channel, features, targets, low, high, counts, known):
    """scikit-learn's weighted percentiles (``average=True``), from the clients.

    Per entry: the first value ``v`` whose pooled weight at or below reaches
    ``targets[i]``; where that weight is the target (within ``eps``), the
    mean of ``v`` and the next value (``v`` again when ``v`` is the
    largest: ``counts`` are the features' pooled counts of values).
    """
    features = np.asarray(features, dtype=np.intp)
    targets = np.asarray(targets, dtype=np.float64)
    first = _bisect(
        channel,
        features,
        "weight at most",
        "weights",
        lambda weights: weights >= targets,
        low,
        high,
        known,
    )
    weights = _pivot_sums(channel, "weight at most", "weights", features, first, known)
    ranks = _pivot_sums(channel, "counts at most", "counts", features, first, known)
    exact = (weights - targets <= np.finfo(np.float64).eps) & (
        ranks < np.asarray(counts)
    )
    edges = first.copy()
    if exact.any():
        after = _order_statistics(
            channel,
            features[exact],
            ranks[exact],
            np.asarray(low)[exact],
            np.asarray(high)[exact],
            known,
        )
        with np.errstate(over="ignore", invalid="ignore"):
            edges[exact] = (first[exact] + after) / 2
    return edges


def _order_statistics(channel, features, ranks, low, high, known):
    """Pooled order statistics of several features at once, by bisection.

    Entry i is the value of 0-based rank ``ranks[i]`` of feature
    ``features[i]``, whose pooled minimum and maximum are ``low[i]`` and
    ``high[i]``. Each round every client counts its values at or below one
    pivot per entry (one message for all features); the interval (lo, hi]
    of ordered keys holding each statistic halves.
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    return _bisect(
        channel,
        np.asarray(features, dtype=np.intp),
        "counts at most",
        "counts",
        lambda counts: counts >= ranks + 1,
        low,
        high,
        known,
    )


def _lerp(a, b, t):
    """numpy's interpolation between neighbours (``_lerp``), operation for operation."""
    difference = b - a
    return np.where(t >= 0.5, b - difference * (1 - t), a + difference * t)


def _finished(thresholds):
    """scikit-learn's last steps for both paths: duplicates out, no +inf edge."""
    unique = np.unique(thresholds)
    if unique.shape[0] != thresholds.shape[0]:
        thresholds = unique
    return np.clip(thresholds, None, _ALMOST_INF)


def _feature_plan(feature, summaries, max_bins, weights=None):
    """One feature's edges, or the order statistics they need.

    Returns ``("edges", thresholds)`` when the summaries settle them
    (midpoints of few distinct values, or none); else, unweighted,
    ``("percentiles", below, above, gamma, low, high)``: numpy's neighbours
    and weights of every percentile, and the pooled range to bisect in;
    weighted (``weights``: each client's weight of the feature),
    ``("weighted", targets, low, high, count)``: the weight at or below
    each percentile.
    """
    count = sum(s[feature][0] for s in summaries)
    if count == 0:
        return "edges", np.asarray([])
    distinct_sets = [s[feature][3] for s in summaries if s[feature][0] > 0]
    if all(values is not None for values in distinct_sets):
        distinct = np.unique(np.concatenate(distinct_sets))
        if distinct.size == 1:
            return "edges", np.asarray([])
        if distinct.size <= max_bins:
            # scikit-learn's sliding_window_view(distinct, 2).mean(axis=1);
            # overflowing means (values near 1e308) are clipped, as there.
            with np.errstate(over="ignore", invalid="ignore"):
                return "edges", _finished(
                    np.lib.stride_tricks.sliding_window_view(distinct, 2).mean(axis=1)
                )
    low = min(s[feature][1] for s in summaries if s[feature][0] > 0)
    high = max(s[feature][2] for s in summaries if s[feature][0] > 0)
    percentiles = np.linspace(0, 100, num=max_bins + 1)[1:-1]
    if weights is not None:
        # scikit-learn's adjusted ranks: the percentiles of the total weight.
        total = sum(float(w[feature]) for w in weights)
        return "weighted", percentiles / 100 * total, low, high, count
    # Where numpy's percentile reads a column of `count` values: on the
    # positions themselves, it returns the position it interpolates at.
    positions = np.percentile(
        np.arange(count, dtype=np.float64), percentiles, method="averaged_inverted_cdf"
    )
    # numpy's "averaged_inverted_cdf": a position p + 0.5 is lerp(x[p],
    # x[p + 1], 0.5); an integer position p is lerp(x[p - 1], x[p], 1), with
    # x[0] for x[-1] (an infinite x[p - 1] then makes NaN, as in numpy).
    half = positions != np.floor(positions)
    above = np.ceil(positions).astype(np.int64)
    below = np.where(half, above - 1, np.maximum(above - 1, 0))
    gamma = np.where(half, 0.5, 1.0)
    return "percentiles", below, above, gamma, low, high


def _percentile_edges(below, above, gamma, values):
    """The edges from the order statistics ``values`` (by rank)."""
    a = np.array([values[k] for k in below.tolist()])
    b = np.array([values[k] for k in above.tolist()])
    with np.errstate(over="ignore", invalid="ignore"):
        return _finished(_lerp(a, b, gamma))


def federated_bin_mapper(clients, *, n_bins=256, weighted=False):
    """A fitted ``_BinMapper`` whose numeric edges come from the clients' answers.

    Parameters
    ----------
    clients : TreeChannel or list of ClientColumns
        The clients, through the server's channel (a list: clients in this
        process, every answer checked, a failing one an error). Numeric
        features only: categorical ones are not binned this way yet.
    n_bins : int, default=256
        Bins, the missing values' included (``max_bins + 1``).
    weighted : bool, default=False
        Whether the rows are weighted: the edges are then scikit-learn's
        weighted percentiles (zero-weight rows left out).

    Returns
    -------
    bin_mapper : _BinMapper
        Fitted as scikit-learn's ``_BinMapper(n_bins=n_bins).fit`` on the
        pooled rows would be (below its subsample size), to transform each
        client's rows.
    """
    if (
        not (isinstance(n_bins, int | np.integer) and not isinstance(n_bins, bool))
        or not 3 <= n_bins <= 256
    ):
        raise ValueError(
            f"n_bins must be an integer from 3 to 256 (max_bins + 1, as "
            f"scikit-learn's max_bins is from 2 to 255); got {n_bins!r}."
        )
    channel = _as_channel(clients)
    while True:  # again without a client left out midway
        try:
            return _bin_mapper(channel, n_bins, weighted)
        except Restart:
            continue


def _bin_mapper(channel, n_bins, weighted=False):
    max_bins = n_bins - 1
    answers = channel.ask(
        {"kind": "bin summary", "max_bins": max_bins, "weighted": weighted},
        across=summary_range_problems,
    )
    summaries = [
        list(zip(a["n"].tolist(), a["min"], a["max"], a["distinct"], strict=True))
        for a in answers.values()
    ]
    weights = [a["weight"] for a in answers.values()] if weighted else None
    known = _Known(answers, weighted)
    n_features = len(summaries[0])
    mapper = BinMapper(n_bins=n_bins)
    mapper.is_categorical_ = np.zeros(n_features, dtype=np.uint8)
    mapper.missing_values_bin_idx_ = n_bins - 1
    plans = [
        _feature_plan(feature, summaries, max_bins, weights)
        for feature in range(n_features)
    ]
    # Every feature's needed order statistics in one bisection: at most 64
    # rounds in all, each one message per client.
    requests = [
        (feature, np.unique(np.concatenate((plan[1], plan[2]))), plan[4], plan[5])
        for feature, plan in enumerate(plans)
        if plan[0] == "percentiles"
    ]
    found = {}
    if requests:
        features = np.concatenate([[f] * len(r) for f, r, _, _ in requests])
        ranks = np.concatenate([r for _, r, _, _ in requests])
        lows = np.concatenate([[low] * len(r) for _, r, low, _ in requests])
        highs = np.concatenate([[high] * len(r) for _, r, _, high in requests])
        values = _order_statistics(channel, features, ranks, lows, highs, known)
        for feature, rank, value in zip(features, ranks, values, strict=True):
            found.setdefault(int(feature), {})[int(rank)] = value
    weighted_plans = [
        (feature, plan) for feature, plan in enumerate(plans) if plan[0] == "weighted"
    ]
    if weighted_plans:
        # Every weighted feature's percentiles in one bisection too.
        sizes = [len(plan[1]) for _, plan in weighted_plans]
        edges = _weighted_edges(
            channel,
            np.repeat([f for f, _ in weighted_plans], sizes),
            np.concatenate([plan[1] for _, plan in weighted_plans]),
            np.repeat([plan[2] for _, plan in weighted_plans], sizes),
            np.repeat([plan[3] for _, plan in weighted_plans], sizes),
            np.repeat([plan[4] for _, plan in weighted_plans], sizes),
            known,
        )
        for (feature, _), part in zip(
            weighted_plans, np.split(edges, np.cumsum(sizes)[:-1]), strict=True
        ):
            found[feature] = _finished(part)
    mapper.bin_thresholds_ = [
        plan[1]
        if plan[0] == "edges"
        else found[feature]
        if plan[0] == "weighted"
        else _percentile_edges(plan[1], plan[2], plan[3], found[feature])
        for feature, plan in enumerate(plans)
    ]
    mapper.n_bins_non_missing_ = np.array(
        [edges.shape[0] + 1 for edges in mapper.bin_thresholds_], dtype=np.uint32
    )
    return mapper
