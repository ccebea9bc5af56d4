"""Growing one tree of histogram gradient boosting over clients' rows.

scikit-learn's ``TreeGrower`` grows a tree best-first from three things:
the histograms of a node's rows (sums of gradients, hessians and counts per
feature and bin), a ``Splitter`` that finds a node's best split from its
histograms alone, and the same splitter's partition of the rows between a
node's children. Only the first and the last touch rows. Here they are the
clients': every client bins, differentiates, counts and partitions its own
rows, and the server (the grower) sees only the summed histograms and the
split it chose. Everything else is scikit-learn's code, unchanged: the gains,
``min_samples_leaf``, ``max_leaf_nodes``, ``max_depth``, monotonic and
interaction constraints, the histogram subtraction trick, missing values,
categorical splits, shrinkage and the ``TreePredictor`` the tree becomes. So
with one client the tree is scikit-learn's to the bit, and with several it
differs only by the order in which each bin's sums are added (round-off).

A node's rows (:class:`NodeRows`) are its id and each client's count of
rows in it; the grower reads only their total (``shape``). Each client keeps
its own rows of every node (:class:`ClientRows`), and the server reaches
them only by messages (splits of node ids and histograms of node ids), so
the same grower runs in one process or over a network.

Rounds, not arithmetic, set the time of a fit across sites. A split and the
histograms of the smaller child it makes go in one round (the children's
rows are known before the round from the histograms the split was found
on), and so do the splits the grower will make later whatever the next
histograms hold: the nodes already waiting to be split, up to
``max_leaf_nodes``. The grower then reads their children and histograms
without a round. It still runs scikit-learn's best-first loop, so the trees
are the same.
"""

from __future__ import annotations

import functools

import numpy as np

from .._compat import (
    G_H_DTYPE,
    HISTOGRAM_DTYPE,
    X_BINNED_DTYPE,
    HistogramBuilder,
    SplitInfo,
    Splitter,
    TreeGrower,
    openmp_effective_n_threads,
)
from .._gate._tree_histograms import raw_records

__all__ = [
    "ROWS_FOR_THREADS",
    "BinLayout",
    "ClientRows",
    "FederatedTreeGrower",
    "NodeRows",
    "bin_layout",
    "split_message",
]


class NodeRows:
    """The rows of one tree node: its id and each client's count of rows in it.

    ``shape`` is ``(total rows,)``, which is all the grower reads of it
    (as of the array of sample indices it stands for); the rows themselves
    stay on the clients, each of which knows its rows of node ``node``.

    Parameters
    ----------
    node : int
        The node's id in this tree's messages (the root is 0).
    counts : dict of int to int or None
        Per client index, its rows in the node; None while the clients have
        not yet made the split that creates it (``total`` is then the
        federation's count, from the histograms the split was found on).
    total : int, default=None
        The node's rows, when ``counts`` is None.
    """

    def __init__(self, node, counts, total=None):
        self.node = node
        self.counts = counts
        self.shape = (int(sum(counts.values()) if total is None else total),)


#: Binned values (rows x features) from which a client's histograms take
#: more than one thread.
ROWS_FOR_THREADS = 100_000


class BinLayout:
    """Where a histogram's bins that can hold rows lie, for sending it compactly.

    A feature's bins past its ``n_bins_non_missing`` hold no row of any
    client (every client bins with the federation's edges): a histogram
    travels as each feature's first ``n_bins_non_missing`` bins and its
    missing values' bin, one after the other (a one-hot column: 3 records of
    256). The server adds the clients' histograms in that form and expands
    the sum once (the other bins are zeros, as scikit-learn's builder leaves
    them), so the grower reads the same histograms.

    Parameters
    ----------
    n_bins : int
        Bins per feature, the missing values' bin (the last) included.
    n_bins_non_missing : array-like of int of shape (n_features,)
        Bins of values per feature.
    """

    def __init__(self, n_bins, n_bins_non_missing):
        n_bins = int(n_bins)
        values = np.asarray(n_bins_non_missing, dtype=np.intp)
        widths = values + 1
        n_features = values.shape[0]
        #: Per feature, where its bins start in the compact form.
        self.offsets = np.concatenate(([0], np.cumsum(widths)[:-1])).astype(np.intp)
        within = np.arange(widths.sum()) - np.repeat(self.offsets, widths)
        # Each feature's last compact bin is its missing values' bin.
        within[self.offsets + values] = n_bins - 1
        #: Per compact bin, its place in the flat (n_features * n_bins) array.
        self.bins = np.repeat(np.arange(n_features) * n_bins, widths) + within
        self.full_shape = (n_features, n_bins)
        self.size = int(self.bins.shape[0])
        #: Whether every bin can hold rows (the compact form is the full one).
        self.whole = self.size == n_features * n_bins
        #: Per feature, its bins in the compact form.
        self.widths = widths
        #: Per feature and bin, its place in the compact form (-1: a bin
        #: that holds no row).
        self.compact_of = np.full(n_features * n_bins, -1, dtype=np.intp)
        self.compact_of[self.bins] = np.arange(self.size)
        self.compact_of = self.compact_of.reshape(n_features, n_bins)

    def compact(self, histograms):
        """A (n_features, n_bins) histogram's bins that can hold rows."""
        if self.whole:
            return histograms.reshape(-1)
        return raw_records(histograms.reshape(-1))[self.bins].view(histograms.dtype)

    def expand(self, compact):
        """The (n_features, n_bins) histogram of a compact one (zeros elsewhere)."""
        if self.whole:
            return compact.reshape(self.full_shape)
        full = np.zeros(self.full_shape[0] * self.full_shape[1], compact.dtype)
        raw_records(full)[self.bins] = raw_records(compact)
        return full.reshape(self.full_shape)

    def of_features(self, features):
        """The compact bins of ``features`` (None: all), and their offsets there."""
        if features is None:
            return slice(None), self.offsets
        features = np.asarray(features, dtype=np.intp)
        widths = self.widths[features]
        starts = self.offsets[features]
        positions = np.repeat(starts - np.cumsum(widths) + widths, widths) + np.arange(
            widths.sum()
        )
        return positions, np.concatenate(([0], np.cumsum(widths)[:-1])).astype(np.intp)


@functools.lru_cache(maxsize=8)
def _cached_layout(n_bins, n_bins_non_missing):
    return BinLayout(n_bins, n_bins_non_missing)


def bin_layout(n_bins, n_bins_non_missing):
    """The :class:`BinLayout` of these bins, one object for equal bins.

    Every client of a federation bins with the same edges: in one process
    they share one layout (its arrays are as long as the bins, per client
    they would add up with the clients, not the rows).

    Parameters
    ----------
    n_bins : int
        Bins per feature, the missing values' bin included.
    n_bins_non_missing : array-like of int of shape (n_features,)
        Bins of values per feature.

    Returns
    -------
    layout : BinLayout
        Not to be changed (it is shared).
    """
    return _cached_layout(
        int(n_bins), tuple(np.asarray(n_bins_non_missing, dtype=np.intp).tolist())
    )


class ClientRows:
    """One client's side of growing a tree: its binned rows and their sums.

    The client keeps, per node id the server named, its rows of that node
    (a view into its partition, as scikit-learn's splitter keeps them) and
    answers the server's two questions about a node: its histograms, and
    its partition by a split.

    Parameters
    ----------
    X_binned : ndarray of uint8 of shape (n_samples, n_features)
        The client's rows, binned with the federation's bin edges
        (Fortran-ordered).
    gradients, hessians : ndarray of float32 of shape (n_samples,)
        The rows' gradients and hessians of this tree.
    n_bins : int
        Bins per feature, the missing values' bin included.
    n_bins_non_missing : ndarray of uint32 of shape (n_features,)
    has_missing_values : ndarray of uint8 of shape (n_features,)
        Whether the federation has missing values per feature.
    is_categorical : ndarray of uint8 of shape (n_features,)
    monotonic_cst : ndarray of int8 of shape (n_features,)
    layout : BinLayout, default=None
        The compact form of its histograms (by default, of these bins).
    """

    def __init__(
        self,
        X_binned,
        gradients,
        hessians,
        *,
        n_bins,
        n_bins_non_missing,
        has_missing_values,
        is_categorical,
        monotonic_cst,
        layout=None,
    ):
        X_binned = np.asfortranarray(X_binned, dtype=X_BINNED_DTYPE)
        self.n_samples = X_binned.shape[0]
        #: Where its histograms' bins that can hold rows lie.
        self.layout = (
            bin_layout(n_bins, n_bins_non_missing) if layout is None else layout
        )
        # Hessians are never constant here: scikit-learn's log-loss has one
        # per row. The histograms take the threads scikit-learn's fit takes
        # (on a client's own machine, its cores) when the client is large.
        self.histograms = HistogramBuilder(
            X_binned,
            n_bins,
            gradients,
            hessians,
            False,
            # Threads only where the rows outweigh OpenMP's start-up (tens
            # of microseconds a node): a client of a few hundred rows is
            # faster alone, and many of them share one machine in-process.
            # (Every thread adds its features' bins in row order: the same
            # sums.)
            openmp_effective_n_threads()
            if X_binned.shape[0] * X_binned.shape[1] >= ROWS_FOR_THREADS
            else 1,
        )
        # The splitter only partitions this client's rows; its split-finding
        # settings are the server's (unused here).
        self.splitter = Splitter(
            X_binned=X_binned,
            n_bins_non_missing=np.asarray(n_bins_non_missing, dtype=np.uint32),
            missing_values_bin_idx=n_bins - 1,
            has_missing_values=np.asarray(has_missing_values, dtype=np.uint8),
            is_categorical=np.asarray(is_categorical, dtype=np.uint8),
            monotonic_cst=np.asarray(monotonic_cst, dtype=np.int8),
            l2_regularization=0.0,
            n_threads=1,
        )
        #: Per node id, the client's rows of it (the root's: all of them).
        self.nodes = {0: self.splitter.partition}

    def node_histograms(self, node, allowed_features=None):
        """Histograms of the client's rows of node ``node``.

        Parameters
        ----------
        node : int
            The node's id.
        allowed_features : ndarray of uint32 or None
            Features whose histograms are computed (interaction constraints).

        Returns
        -------
        histograms : ndarray of HISTOGRAM_DTYPE of shape (n_features, n_bins)
            Sums of gradients and hessians and counts, per feature and bin.
        """
        histograms = self.histograms.compute_histograms_brute(
            self.nodes[node], allowed_features
        )
        # The builder's typed memoryview as an array without reading its
        # buffer format (numpy's PEP 3118 parsing cost 20 us a call).
        out = np.frombuffer(histograms, dtype=HISTOGRAM_DTYPE).reshape(histograms.shape)
        if allowed_features is not None:
            # The builder leaves the other features' memory as it found it
            # (earlier nodes' sums, or anything): never sent, zeroed.
            others = np.ones(out.shape[0], dtype=bool)
            others[np.asarray(allowed_features, dtype=np.intp)] = False
            out[others] = np.zeros(1, dtype=HISTOGRAM_DTYPE)
        return out

    def split(self, node, split, left, right):
        """Partition the client's rows of a node by the server's split.

        Parameters
        ----------
        node : int
            The node's id.
        split : dict
            The split the server chose (:func:`split_message`).
        left, right : int
            The ids the server gave the two children.

        Returns
        -------
        n_left, n_right : int
            The client's rows in each child.
        """
        info = SplitInfo(
            0.0,
            split["feature"],
            split["bin"],
            split["missing_go_to_left"],
            0.0,
            0.0,
            0.0,
            0.0,
            0,
            0,
            0.0,
            0.0,
            split["is_categorical"],
            split["left_cat_bitset"],
        )
        # The node keeps its rows (the same rows, now ordered by child): a
        # split the server made ahead of its grower may leave it a leaf.
        rows_left, rows_right, _ = self.splitter.split_indices(info, self.nodes[node])
        self.nodes[left], self.nodes[right] = rows_left, rows_right
        return rows_left.shape[0], rows_right.shape[0]


def split_message(split_info):
    """What a client needs of the server's split to partition its rows."""
    bitset = split_info.left_cat_bitset
    return {
        "feature": int(split_info.feature_idx),
        "bin": int(split_info.bin_idx),
        "missing_go_to_left": bool(split_info.missing_go_to_left),
        "is_categorical": bool(split_info.is_categorical),
        "left_cat_bitset": (
            None if bitset is None else np.asarray(bitset, dtype=np.uint32).copy()
        ),
    }


class _FederatedHistograms:
    """``HistogramBuilder``'s part for the grower: summed client histograms."""

    hessians_are_constant = False

    def __init__(self, builder, channel):
        self._builder = builder  # for the subtraction (no rows in it)
        self._channel = channel

    def compute_histograms_brute(self, rows, allowed_features=None):
        return self._channel.histograms(rows, allowed_features)

    def compute_histograms_subtraction(
        self, parent_histograms, sibling_histograms, allowed_features=None
    ):
        return self._builder.compute_histograms_subtraction(
            parent_histograms, sibling_histograms, allowed_features
        )


class _FederatedSplitter:
    """``Splitter``'s part for the grower: the server finds, clients partition."""

    def __init__(self, splitter, channel, root):
        self._splitter = splitter
        self._channel = channel
        self.min_hessian_to_split = splitter.min_hessian_to_split
        self.partition = root

    def find_node_split(self, **kwargs):
        return self._splitter.find_node_split(**kwargs)

    def split_indices(self, split_info, rows):
        left, right = self._channel.split(rows, split_info)
        return left, right, left.shape[0]


class _RowsShape:
    """What the grower reads of its X_binned once growing: its shape."""

    def __init__(self, shape):
        self.shape = shape


class FederatedTreeGrower(TreeGrower):
    """scikit-learn's ``TreeGrower``, on histograms summed over clients.

    Parameters
    ----------
    channel : object
        The server's side of the messages: ``histograms(rows, features)``
        returns the clients' summed histograms of a node, ``split(rows,
        split_info)`` its two children's :class:`NodeRows`, and ``grower``
        is set to the grower (see
        ``skfedida.ensemble._boosting.TreeChannel``).
    root : NodeRows
        The root node: every client's rows of this tree.
    **params : dict
        ``TreeGrower``'s parameters but its rows, gradients and hessians
        (``n_bins``, ``n_bins_non_missing``, ``has_missing_values``,
        ``is_categorical``, ``monotonic_cst``, ``interaction_cst``,
        ``max_leaf_nodes``, ``max_depth``, ``min_samples_leaf``,
        ``l2_regularization``, ``feature_fraction_per_split``, ``rng``,
        ``shrinkage``).
    """

    def __init__(self, channel, root, *, n_features, **params):
        self._channel = channel
        self._root = root
        self._n_samples = root.shape[0]
        # The server's builder and splitter hold no rows of the federation:
        # two placeholder rows (scikit-learn's builder needs some, and one
        # would declare the hessians constant).
        placeholder = np.zeros(2, dtype=G_H_DTYPE)
        super().__init__(
            X_binned=np.zeros((2, n_features), dtype=X_BINNED_DTYPE, order="F"),
            gradients=placeholder,
            hessians=placeholder,
            n_threads=1,
            **params,
        )

    def _initialize_root(self):
        # TreeGrower.__init__ built a histogram builder and a splitter on the
        # placeholder rows; the server keeps them for what needs no rows
        # (subtraction, split finding) and the clients do the rest.
        self.histogram_builder = _FederatedHistograms(
            self.histogram_builder, self._channel
        )
        self.splitter = _FederatedSplitter(self.splitter, self._channel, self._root)
        self.X_binned = _RowsShape((self._n_samples, self.n_features))
        # The channel reads the grower's splittable nodes to make their
        # splits ahead, in the round of a split the grower needs now.
        self._channel.grower = self
        super()._initialize_root()
