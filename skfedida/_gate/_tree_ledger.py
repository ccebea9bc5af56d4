"""What a client answered while trees are grown, kept to hold it to later.

``TreeLedger`` keeps, per client, the answers later answers must agree with
(``RECORDED``): its description, its prepared labels, its bin summaries and
its counts at the pivots, its start, its leaves' cell weights and its
scores. Once the bins are agreed, the per-value summaries are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
        #: The (feature, pivot, count) it answered, sorted by feature, pivot
        #: and count (``merged_pivots``).
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
        merged : Pivots
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
            (known.features, np.asarray(query["features"], dtype=np.intp))
        )
        pivots = np.concatenate(
            (known.pivots, np.asarray(query["pivots"], dtype=np.float64))
        )
        at_pivots = np.concatenate((known.values, np.asarray(counts, dtype=dtype)))
        order = _lexical_order(features, pivots)
        features, pivots, at_pivots = features[order], pivots[order], at_pivots[order]
        changes = (features[1:] != features[:-1]) | (at_pivots[1:] != at_pivots[:-1])
        ends = np.concatenate(([True], changes)) | np.concatenate((changes, [True]))
        merged = Pivots(features[ends], pivots[ends], at_pivots[ends])
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


@dataclass(frozen=True)
class Pivots:
    """A client's answers at pivots: per answer its feature, pivot and value.

    Three arrays of one length, sorted by feature, pivot and value
    (``TreeLedger.merged_pivots``); the values are counts of rows at
    or below the pivot, or their weights.
    """

    features: np.ndarray
    pivots: np.ndarray
    values: np.ndarray


#: No pivot asked yet.
_NO_PIVOTS = Pivots(np.empty(0, np.intp), np.empty(0), np.empty(0, np.int64))
