"""The gate's rules for a node's histograms, every client checked at once.

Every feature's histogram of a node counts the rows the client gave that
node and adds up to the same gradient and hessian sums (within ``DRIFT``),
a bin of no rows has sums of 0, hessians are >= 0 and every value is
finite. Histograms arrive stacked and sparse (``SparseHistograms``: the
bins where a client has rows) whether a batch of in-process clients
answered or each client alone; ``checked_sum`` checks them and adds the
federation's total client after client, in every bin.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .._compat import HISTOGRAM_DTYPE

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


@dataclass(frozen=True)
class NodeSplit:
    """A split of a ``"grow"`` query, as the server knows its rows.

    ``rows``: each client's rows of the node split (client index to
    count); ``left``: the federation's rows of its left child, from the
    summed histograms.
    """

    rows: dict
    left: int


@dataclass(frozen=True)
class ChildOf:
    """A histogram's node: a child of the ``split``-th split of its query.

    ``side`` is 0 for the left child, 1 for the right: the clients' answers
    to the same query say how many of their rows it holds.
    """

    split: int
    side: int


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
    splits : list of NodeSplit
        Per split of the query, each client's rows of the node split and the
        federation's rows of the left child.
    sources : list
        Per histogram asked, its node's rows: a :class:`ChildOf` for a child
        of one of the query's splits, or client index to count.
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
        [[split.rows.get(k, 0) for k in clients] for split in splits],
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
            children[:, source.split, source.side].astype(np.float64)
            if isinstance(source, ChildOf)
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
    for j, split in enumerate(splits):
        held = int(children[:, j, 0].sum())
        if held != split.left:
            raise RuntimeError(
                f"The clients' partitions of node {query['splits'][j]['node']} "
                f"put {held} rows in its left child; their histograms put "
                f"{split.left} there. A client's partition disagrees with its "
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
