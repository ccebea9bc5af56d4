"""In-process clients' trees grown in one pass over all their rows.

A federation in one process holds every client's rows in one machine, and
asking each client in turn costs each of them a few Python calls a round:
with hundreds of small clients those calls, not the rows, set the time of a
fit. :class:`ClientBatch` answers the rounds that grow a tree (``"grow"``,
``"leaf cells"`` and ``"apply"``) for all the clients asked at once, with
numpy over all their rows, and gives the same numbers each client would:

- a node's rows are kept with each client's in the order of its own
  partition (scikit-learn's splitter keeps the order of a node's rows in
  each child; so does a boolean mask), and every sum is keyed by client;
- a client's histogram of a node adds its rows' float32 gradients and
  hessians in float64, row after row from 0, per bin, as scikit-learn's
  builder does; ``numpy.bincount`` adds each bin's values in the same
  order;
- leaves' cell weights and scores are the clients' own arithmetic, row by
  row.

``tests/ensemble/test_batch.py`` checks the answers against each client's,
bit for bit. The clients in one process run this library's code on rows
it validated, so an error in the batch is the fit's error, not one
client's to be left out (``on_client_error`` still judges every answer).
The histograms come as ``SparseHistograms`` (``skfedida._gate``: a
client's bins that hold rows), which the gate checks and adds in the work
of the rows, not of the clients times the bins.
"""

from __future__ import annotations

import numpy as np

from .._compat import G_H_DTYPE, X_BINNED_DTYPE
from .._gate._tree_histograms import GrowAnswers, SparseHistograms

__all__ = ["ClientBatch"]

#: A node's histograms are added up in one dense array of its clients' bins
#: when that array has at most this many bins per (row, feature) value of
#: the node; beyond, the values are grouped by sorting (a node of few rows
#: spread over many clients).
DENSE_PER_VALUE = 4

#: At most this many (row, feature) values, and (client, bin) slots, are
#: held at once while a node's histograms are added up (beyond a single
#: feature's).
CHUNK = 2**16

#: A chunk's entries, by ``SparseHistograms``' field (each an array).
_ENTRY_FIELDS = ("client", "position", "gradients", "hessians", "counts")


class ClientBatch:
    """Boosting clients in this process, answering the tree's rounds together.

    Parameters
    ----------
    clients : callable
        Returns the clients' ``BoostingClient`` objects, by client index
        (asked once, at the first round this batch answers: they exist
        once the clients have binned their rows).

    Notes
    -----
    The batch holds the clients' binned rows in one array, and their
    gradients, hessians and raw scores in one array each, of which every
    client's own arrays become views: the rounds a client answers alone
    (its scores, its losses) and the batch's read and write the same
    numbers.
    """

    #: The query kinds the batch answers.
    kinds = frozenset({"grow", "leaf cells", "apply"})

    def __init__(self, clients):
        self._members = clients
        self.clients = None

    def answer(self, query, asked):
        """The asked clients' answers to ``query``.

        Parameters
        ----------
        query : dict
            A ``"grow"``, ``"leaf cells"`` or ``"apply"`` query.
        asked : list of int
            The clients asked (ascending client indices).

        Returns
        -------
        answers : GrowAnswers or dict
            For ``"grow"`` the clients' answers stacked; otherwise each
            client's answer by index.
        """
        if self.clients is None:
            self._build()
        return getattr(self, "_" + query["kind"].replace(" ", "_"))(query, asked)

    def _build(self):
        clients = list(self._members())
        self.clients = clients
        # (None: a client left out before it binned its rows: none here.)
        present = [client for client in clients if client is not None]
        sizes = np.array(
            [0 if client is None else client.n_samples for client in clients],
            dtype=np.intp,
        )
        self.starts = np.concatenate(([0], np.cumsum(sizes)))
        n_rows = int(self.starts[-1])
        #: Per row, its client's index.
        self.owner = np.repeat(np.arange(len(clients)), sizes)
        n_features = present[0].X_binned.shape[1]
        self.X_binned = np.empty((n_rows, n_features), X_BINNED_DTYPE, order="F")
        self.gradients = np.empty(n_rows, G_H_DTYPE)
        self.hessians = np.empty(n_rows, G_H_DTYPE)
        self.raw = np.zeros(n_rows)
        self.row_weight = np.empty(n_rows)
        with_cells = all(client.cells is not None for client in present)
        self.cells = np.empty(n_rows, np.intp) if with_cells else None
        layout = None
        for k, client in enumerate(clients):
            if client is None:
                continue
            rows = slice(self.starts[k], self.starts[k + 1])
            self.X_binned[rows] = client.X_binned
            self.row_weight[rows] = client.row_weight
            if with_cells:
                self.cells[rows] = client.cells
            client.gradients = self.gradients[rows]
            client.hessians = self.hessians[rows]
            if client.raw is not None:  # (None: left out before its scores)
                self.raw[rows] = client.raw
                client.raw = self.raw[rows]
                layout = client.layout
        self.missing_values_bin_idx = present[0].missing_values_bin_idx
        self.layout = layout
        self.nodes = {}
        self.parts = {}

    def _places(self, asked):
        """Per client index, its place among ``asked`` (-1: not asked)."""
        places = np.full(len(self.clients), -1, dtype=np.intp)
        places[np.asarray(asked, dtype=np.intp)] = np.arange(len(asked))
        return places

    def _grow(self, query, asked):
        if query["gradients"] is not None:
            for k in asked:
                self.clients[k].tree_gradients(query["gradients"])
            # The root: the asked clients' rows, client after client.
            self.nodes = {
                0: np.concatenate(
                    [np.arange(self.starts[k], self.starts[k + 1]) for k in asked]
                    or [np.zeros(0, np.intp)]
                )
            }
            self.parts = {}
        n = len(asked)
        places = self._places(asked)
        splits = query["splits"]
        children = np.empty((n, len(splits), 2), dtype=np.uint64)
        for j, split in enumerate(splits):
            # A node split is read only through its children from here on.
            rows = self.nodes.pop(split["node"])
            left = self._goes_left(rows, split["split"])
            self.nodes[split["left"]] = rows[left]
            self.nodes[split["right"]] = rows[~left]
            self.parts[split["node"]] = (split["left"], split["right"])
            place = places[self.owner[rows]]
            children[:, j, 0] = np.bincount(place[left], minlength=n)
            children[:, j, 1] = np.bincount(place[~left], minlength=n)
        histograms = [
            self._histograms(self.nodes[node["node"]], node["features"], places, n)
            for node in query["histograms"]
        ]
        return GrowAnswers(asked, children, histograms, self.layout.size)

    def _goes_left(self, rows, split):
        """Whether each row goes to the left child (scikit-learn's rule)."""
        values = self.X_binned[:, split["feature"]][rows]
        if split["is_categorical"]:
            # Missing values, if any, are in the bitset.
            bitset = np.asarray(split["left_cat_bitset"], dtype=np.uint32)
            return ((bitset[values >> 5] >> (values & 31)) & 1).astype(bool)
        left = values <= split["bin"]
        if split["missing_go_to_left"]:
            left |= values == self.missing_values_bin_idx
        return left

    def _histograms(self, rows, features, places, n):
        """Each asked client's histograms of ``rows``: its bins with rows.

        A few features at a time, so that what is held meanwhile stays
        within ``CHUNK`` values and bins, however many clients or rows.
        """
        features = (
            np.arange(self.X_binned.shape[1])
            if features is None
            else np.asarray(features, dtype=np.intp)
        )
        place = places[self.owner[rows]]
        held = np.bincount(place, minlength=n) > 0
        present = np.flatnonzero(held)
        # Each row's client among the node's clients.
        local = (np.cumsum(held) - 1)[place]
        gradients = self.gradients[rows].astype(np.float64)
        hessians = self.hessians[rows].astype(np.float64)
        widths = self.layout.widths[features]
        n_rows = rows.shape[0]
        # Dense over the node's clients (one slot per client and bin) when
        # that is not many more slots than values; else sorted.
        dense = present.shape[0] * widths.sum() <= DENSE_PER_VALUE * max(
            n_rows * features.shape[0], 1
        )
        parts = []
        start = 0
        while start < features.shape[0]:
            stop = start + 1
            while (
                stop < features.shape[0]
                and (stop + 1 - start) * n_rows <= CHUNK
                and (
                    not dense
                    or present.shape[0] * widths[start : stop + 1].sum() <= CHUNK
                )
            ):
                stop += 1
            parts.append(
                self._chunk(
                    rows,
                    features[start:stop],
                    local,
                    present,
                    gradients,
                    hessians,
                    dense,
                )
            )
            start = stop
        # Field by field, each chunk's freed once copied (many clients' root
        # holds as many entries as values: not twice at once).
        fields = {name: [part[name] for part in parts] for name in _ENTRY_FIELDS}
        del parts
        whole = {}
        for name, field in fields.items():
            whole[name] = np.concatenate(field)
            field.clear()
        return SparseHistograms(n, **whole)

    def _chunk(self, rows, features, local, present, gradients, hessians, dense):
        """The entries of some features' bins, by ``SparseHistograms``' field."""
        layout = self.layout
        widths = layout.widths[features]
        # A slot per (node's client, bin of these features).
        size = int(widths.sum())
        starts = np.concatenate(([0], np.cumsum(widths)[:-1]))
        shift = layout.offsets[features] - starts
        within = layout.compact_of[features, self.X_binned[rows[:, None], features]]
        within -= shift
        # One value per (row, feature), row after row: each bin's values
        # come in its rows' order.
        keys = (local[:, None] * size + within).reshape(-1)
        g = np.repeat(gradients, features.shape[0])
        h = np.repeat(hessians, features.shape[0])
        length = present.shape[0] * size
        if dense:
            counts = np.bincount(keys, minlength=length)
            slots = np.flatnonzero(counts)
            g = np.bincount(keys, weights=g, minlength=length)[slots]
            h = np.bincount(keys, weights=h, minlength=length)[slots]
            counts = counts[slots]
        else:
            # Few rows over many clients: group the values by sorting.
            slots, group = np.unique(keys, return_inverse=True)
            g = np.bincount(group, weights=g, minlength=slots.shape[0])
            h = np.bincount(group, weights=h, minlength=slots.shape[0])
            counts = np.bincount(group, minlength=slots.shape[0])
        # Each slot's bin in the compact form.
        bins = np.repeat(shift, widths) + np.arange(size)
        return {
            "client": present[slots // size].astype(np.int32),
            "position": bins[slots % size].astype(np.int32),
            "gradients": g,
            "hessians": h,
            "counts": counts.astype(np.uint32),
        }

    def _rows(self, node):
        """A node's rows; a node split ahead but left a leaf: its children's.

        Each client's rows come in the order of its own partition (its left
        child's, then its right child's), which is all its sums read: the
        order between clients does not matter.
        """
        if node not in self.parts:
            return self.nodes[node]
        left, right = self.parts[node]
        return np.concatenate((self._rows(left), self._rows(right)))

    def _leaf_cells(self, query, asked):
        n = len(asked)
        size = 2 * self.clients[asked[0]].n_groups if n else 0
        places = self._places(asked)
        cells = np.zeros((n, len(query["leaves"]), size))
        for position, node in enumerate(query["leaves"]):
            rows = self._rows(node)
            cells[:, position] = np.bincount(
                places[self.owner[rows]] * size + self.cells[rows],
                weights=self.row_weight[rows],
                minlength=n * size,
            ).reshape(n, size)
        return {k: {"cells": cells[i]} for i, k in enumerate(asked)}

    def _apply(self, query, asked):
        for value, node in zip(query["values"], query["leaves"], strict=True):
            self.raw[self._rows(node)] += value
        return {k: self.clients[k].applied(query) for k in asked}
