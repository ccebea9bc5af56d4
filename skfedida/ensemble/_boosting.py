"""The boosting loop over clients' rows, with the group penalty's exact leaf step.

Every iteration, for binary log-loss boosting with FedIDA's group penalty
``fairness * f`` (the mean log-loss's scale, as the linear models):

1. the clients send, per (group, label) cell, the weighted sums of their
   rows' raw scores and of their weights; the server computes the
   penalty's gradient per unit of weight in each cell
   (:func:`penalty_cell_gradient`: the group penalty depends on the scores
   only through these sums, so nothing else is needed);
2. each client computes its rows' gradients and hessians: the log-loss's,
   plus the penalty's gradient ``fairness * W * w_i * cell_gradient``
   (``W`` the federation's total weight);
3. the tree is grown by scikit-learn's grower on the clients' summed
   histograms (:class:`~skfedida.ensemble._growing.FederatedTreeGrower`),
   its splits chosen on those gradients and the log-loss's hessians;
4. with a penalty, the leaves' values are then the exact Newton step of the
   penalised objective's quadratic model for the grown tree: the clients
   send, per leaf and cell, the weight of their rows there (``N``), and the
   server solves ``(diag(H_L + l2) + fairness W N G N^T) v = -G_L`` for the
   leaves' values ``v`` (:func:`newton_leaf_values`), ``G`` being the
   penalty's Hessian in the cells' sums (constant: the penalty is
   quadratic; ``N G N^T`` takes one call of the penalty per leaf,
   :func:`penalty_leaf_curvature`). The log-loss's part is scikit-learn's own step
   (``-G_L / (H_L + l2)``); the penalty's couples the leaves that share a
   cell, exactly, instead of a per-row hessian that must either ignore that
   coupling (and overshoot at large ``fairness``) or bound it for the worst
   leaf (and crawl);
5. each client adds its leaves' values to its rows' raw scores.

Without a penalty, steps 1 and 4 are skipped and the trees are
scikit-learn's (``tests/ensemble``: bit for bit, for one client and for
several).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn import config_context

from .._compat import (
    G_H_DTYPE,
    HISTOGRAM_DTYPE,
    X_BINNED_DTYPE,
    HalfBinomialLoss,
    TreePredictor,
)
from .._gate._policy import Failed, ReplyGate
from .._gate._tree_histograms import (
    ChildOf,
    GrowAnswers,
    NodeSplit,
    grow_problems,
    raw_records,
)
from .._gate._tree_ledger import RECORDED, TreeLedger
from .._gate._tree_rules import tree_reply_problem
from .._models._constraints import rate_histograms, term_gradient
from ..penalty import group_penalty
from ._growing import (
    ClientRows,
    FederatedTreeGrower,
    NodeRows,
    bin_layout,
    split_message,
)

__all__ = [
    "BoostingClient",
    "boost",
    "newton_leaf_values",
    "penalty_cell_gradient",
    "penalty_leaf_curvature",
]


class BoostingClient:
    """One client's side of boosting: its rows, and its answers to the server.

    The client holds its binned rows, labels, weights and groups, its rows'
    raw scores, and (for early stopping) its validation rows; it answers the
    server's queries (:meth:`answer`) about them, and never sends a row.

    Parameters
    ----------
    X_binned : ndarray of uint8 of shape (n_samples, n_features)
        Rows binned with the federation's bin edges.
    y : ndarray of shape (n_samples,)
        Labels coded 0/1.
    sample_weight : ndarray of shape (n_samples,) or None
        Row weights (class weights included).
    groups : ndarray of shape (n_samples,) or None
        Group codes in ``range(n_groups)``; None without a penalty.
    X_binned_val, y_val, sample_weight_val : ndarray or None
        The client's validation rows (early stopping), binned likewise.
    missing_values_bin_idx : int, default=255
        The bin of missing values (``n_bins - 1``).
    rate_weight : ndarray of shape (n_samples,) or None, default=None
        The rows' weights in a rate constraint's rates: their own, without
        the class weights ``sample_weight`` may include; None: 1 each.
    """

    def __init__(
        self,
        X_binned,
        y,
        sample_weight=None,
        groups=None,
        *,
        X_binned_val=None,
        y_val=None,
        sample_weight_val=None,
        missing_values_bin_idx=255,
        rate_weight=None,
    ):
        self.X_binned = np.asfortranarray(X_binned, dtype=X_BINNED_DTYPE)
        self.y = np.asarray(y, dtype=np.float64)
        n = self.y.shape[0]
        # The loss takes None for unit weights; the sums every tree needs
        # take the ones, made once.
        self.weight = (
            None if sample_weight is None else np.asarray(sample_weight, np.float64)
        )
        self.row_weight = np.ones(n) if self.weight is None else self.weight
        # The rows' weights in a rate constraint's rates: the population's,
        # without class weights.
        self.rate_weight = (
            np.ones(n) if rate_weight is None else np.asarray(rate_weight, np.float64)
        )
        # Each row's (group, label) cell, 2 * group + label, fixed for the fit.
        self.cells = (
            None
            if groups is None
            else np.asarray(groups, dtype=np.intp) * 2 + self.y.astype(np.intp)
        )
        self.X_binned_val = (
            None
            if X_binned_val is None
            else np.ascontiguousarray(X_binned_val, dtype=X_BINNED_DTYPE)
        )
        self.y_val = None if y_val is None else np.asarray(y_val, dtype=np.float64)
        self.weight_val = (
            None
            if sample_weight_val is None
            else np.asarray(sample_weight_val, np.float64)
        )
        self.missing_values_bin_idx = missing_values_bin_idx
        self.raw = self.raw_val = None
        self.gradients = np.empty(n, dtype=G_H_DTYPE)
        self.hessians = np.empty(n, dtype=G_H_DTYPE)
        self.tree = None
        self.loss = HalfBinomialLoss()
        self.n_groups = 1

    @property
    def n_samples(self):
        return self.y.shape[0]

    def answer(self, query):
        """The client's answer to one of the server's queries.

        Parameters
        ----------
        query : dict
            ``query["kind"]`` is one of ``"start"``, ``"init"``,
            ``"grow"``, ``"leaf cells"`` and ``"apply"`` (the module's
            docstring says when each is asked); the other keys are its
            arguments.

        Returns
        -------
        answer : dict
            Arrays and numbers only (what a message carries).
        """
        return self._ANSWERS[query["kind"]](self, query)

    def _start(self, query):
        """Its rows, label sums, cell weights and missing values, once per fit.

        With a rate constraint (``query["rates"]``), also the cells' weights
        in the rates, which every histogram of its scores must add up to.
        """
        self.n_groups = int(query["n_groups"])
        answer = {
            "n": self.n_samples,
            # As numpy's average (scikit-learn's baseline): the products'
            # sum, not a dot product's (another rounding).
            "label_sums": np.array(
                [np.multiply(self.y, self.row_weight).sum(), self.row_weight.sum()]
            ),
            "cell_weight": self._cell_sums(self.row_weight),
            "has_missing": (self.X_binned == self.missing_values_bin_idx).any(axis=0),
            "n_val": 0 if self.y_val is None else self.y_val.shape[0],
        }
        if query["rates"]:
            answer["rate_cell_weight"] = self._cell_sums(self.rate_weight)
        return answer

    def _cell_sums(self, values):
        if self.cells is None or self.n_groups < 2:
            return np.zeros(0)
        return np.bincount(self.cells, weights=values, minlength=2 * self.n_groups)

    def _init(self, query):
        """Start the raw scores at the federation's baseline; their sums."""
        baseline = float(query["baseline"])
        self.binning = query["binning"]
        self.layout = bin_layout(
            self.binning["n_bins"], self.binning["n_bins_non_missing"]
        )
        self.raw = np.full(self.n_samples, baseline)
        if self.y_val is not None:
            self.raw_val = np.full(self.y_val.shape[0], baseline)
        # A continued ensemble (warm start): its trees' values on the rows,
        # tree by tree, as scikit-learn's binned prediction adds them.
        for tree in query["trees"]:
            predictor = tree_predictor(tree)
            self.raw += predictor.predict_binned(
                self.X_binned, self.missing_values_bin_idx, 1
            )
            if self.raw_val is not None:
                self.raw_val += predictor.predict_binned(
                    self.X_binned_val, self.missing_values_bin_idx, 1
                )
        return self._scores(query)

    def _scores(self, query):
        """What the server needs of the scores: cell sums, and losses to score.

        With a rate constraint (``query["rate_bins"]``), also each cell's
        histogram of the scores (:func:`rate_histograms`).
        """
        answer = {"score_sums": self._cell_sums(self.row_weight * self.raw)}
        if query["rate_bins"] is not None:
            answer["rate_histograms"] = rate_histograms(
                self.raw,
                self.cells,
                self.rate_weight,
                2 * self.n_groups,
                int(query["rate_bins"]),
            )
        if query["score"]:
            answer["loss"] = self._loss_sums(self.y, self.raw, self.weight)
            answer["val_loss"] = (
                np.zeros(0)
                if self.y_val is None
                else self._loss_sums(self.y_val, self.raw_val, self.weight_val)
            )
        return answer

    def _loss_sums(self, y, raw, weight):
        """``(sum of w_i * loss_i, sum of w_i)``: its part of a mean log-loss."""
        losses = self.loss.loss(y_true=y, raw_prediction=raw)
        # As numpy's average: the weighted losses' sum and the weights'.
        if weight is None:
            return np.array([losses.sum(), float(losses.shape[0])])
        return np.array([np.multiply(losses, weight).sum(), weight.sum()])

    def _gradients(self, query):
        """This tree's gradients and hessians; its rows become the root."""
        self.tree_gradients(query)
        self.tree = ClientRows(
            self.X_binned,
            self.gradients,
            self.hessians,
            **self.binning,
            layout=self.layout,
        )

    def tree_gradients(self, query):
        """This tree's gradients and hessians, in place.

        The log-loss's, plus the penalty's and the rate constraint's terms
        (``query["penalty"]``, ``query["constraint"]``: each None when
        absent).
        """
        self.loss.gradient_hessian(
            y_true=self.y,
            raw_prediction=self.raw,
            sample_weight=self.weight,
            gradient_out=self.gradients,
            hessian_out=self.hessians,
        )
        penalty = query["penalty"]
        if penalty is not None:
            # The penalty's gradient: fairness * W * w_i * the cell's.
            extra = (
                float(penalty["scale"])
                * self.row_weight
                * np.asarray(penalty["cell_gradient"])[self.cells]
            )
            self.gradients += extra.astype(G_H_DTYPE)
        constraint = query["constraint"]
        if constraint is not None:
            # The rate constraint's term: its rows' smoothed rates at the
            # operating point, weighed by their cells' multipliers.
            pushed = float(constraint["scale"]) * term_gradient(
                self.raw, self.cells, self.rate_weight, constraint
            )
            self.gradients += pushed.astype(G_H_DTYPE)

    def _grow(self, query):
        """One round of growing a tree: splits made, then histograms summed.

        ``query["gradients"]`` (the penalty's and the constraint's terms),
        when not None, starts a tree first: its rows' gradients, all of
        them the root. Then each of ``query["splits"]`` partitions a node's
        rows between two new node ids, in order, and each of
        ``query["histograms"]`` is a node's histograms (of its features),
        in their compact form (:class:`~skfedida.ensemble._growing.BinLayout`).
        """
        if query["gradients"] is not None:
            self._gradients(query["gradients"])
        splits = query["splits"]
        children = np.empty((len(splits), 2), dtype=np.int64)
        for i, split in enumerate(splits):
            children[i] = self.tree.split(
                split["node"], split["split"], split["left"], split["right"]
            )
        asked = query["histograms"]
        layout = self.tree.layout
        histograms = np.empty((len(asked), layout.size), dtype=HISTOGRAM_DTYPE)
        raw = raw_records(histograms)
        for i, node in enumerate(asked):
            histogram = self.tree.node_histograms(node["node"], node["features"])
            raw[i] = raw_records(layout.compact(histogram))
        return {"splits": children, "histograms": histograms}

    def _leaf_cells(self, query):
        """Per leaf, the weight of the client's rows in each cell."""
        size = 2 * self.n_groups
        out = np.zeros((len(query["leaves"]), size))
        for position, node in enumerate(query["leaves"]):
            rows = self.tree.nodes[node]
            out[position] = np.bincount(
                self.cells[rows], weights=self.row_weight[rows], minlength=size
            )
        return {"cells": out}

    def _apply(self, query):
        """Add each leaf's value to its rows' scores (and the tree's to validation)."""
        for value, node in zip(query["values"], query["leaves"], strict=True):
            self.raw[self.tree.nodes[node]] += value
        return self.applied(query)

    def applied(self, query):
        """The scores' answer once the tree's values are added to its rows.

        The tree's values are added to its validation rows' scores too, and
        the node rows of the tree are forgotten.
        """
        if self.raw_val is not None and query["tree"] is not None:
            predictor = tree_predictor(query["tree"])
            self.raw_val += predictor.predict_binned(
                self.X_binned_val, self.missing_values_bin_idx, 1
            )
        self.tree = None  # the node rows of a grown tree are no longer asked
        return self._scores(query)


def _representative_rows(cell_weight):
    """One row per non-empty (group, label) cell: its label, group and weight."""
    present = np.flatnonzero(cell_weight > 0)
    return present, present % 2, present // 2, cell_weight[present]


def penalty_cell_gradient(score_sums, cell_weight, n_groups):
    """The group penalty's gradient per unit weight of a row, by cell.

    Parameters
    ----------
    score_sums, cell_weight : ndarray of shape (2 * n_groups,)
        Per (group, label) cell, the weighted sum of the raw scores and the
        weight (summed over the clients).
    n_groups : int
        Groups.

    Returns
    -------
    cell_gradient : ndarray of shape (2 * n_groups,)
        ``d f / d s_i`` of a row of weight 1 in each cell (a row of weight
        ``w_i`` has ``w_i`` times it); 0 for empty cells.
    """
    present, rep_y, rep_groups, rep_weight = _representative_rows(cell_weight)
    out = np.zeros(2 * n_groups)
    if present.size == 0:
        return out
    # The penalty reads the scores only through the cells' weighted sums: one
    # row per cell at its mean score, weighing the cell, has the same value,
    # and its gradient is the cell's weight times a row's.
    means = score_sums[present] / rep_weight
    _, gradient = group_penalty(means, rep_y, rep_groups, n_groups, rep_weight)
    out[present] = gradient / rep_weight
    return out


def penalty_leaf_curvature(leaf_cells, cell_weight, n_groups):
    """The group penalty's curvature between leaves: ``N G N^T``.

    Parameters
    ----------
    leaf_cells : ndarray of shape (n_leaves, 2 * n_groups)
        Per leaf and (group, label) cell, the weight of its rows there
        (``N``).
    cell_weight : ndarray of shape (2 * n_groups,)
        Per cell, its weight (over the clients).
    n_groups : int
        Groups.

    Returns
    -------
    curvature : ndarray of shape (n_leaves, n_leaves)
        ``d^2 f / dv_L dv_L'`` for the leaves' values ``v`` (every row of a
        leaf moved by its value); ``G`` is the penalty's Hessian in the
        cells' weighted sums of scores. The penalty being quadratic with a
        zero gradient at zero scores, ``G u`` is its gradient at ``u``: one
        call of the penalty per leaf, O(n_groups) each, and nothing
        n_groups x n_groups is built.
    """
    present, rep_y, rep_groups, rep_weight = _representative_rows(cell_weight)
    leaf_cells = np.asarray(leaf_cells, dtype=np.float64)
    n_leaves = leaf_cells.shape[0]
    products = np.zeros((n_leaves, 2 * n_groups))
    for leaf in range(n_leaves):
        # In the cells' mean scores t = S / W the representative rows'
        # gradient is W * (G (W t)): at t = u / W it is W * (G u).
        moved = leaf_cells[leaf, present]
        gradient = group_penalty(
            moved / rep_weight, rep_y, rep_groups, n_groups, rep_weight
        )[1]
        products[leaf, present] = gradient / rep_weight
    return leaf_cells @ products.T


def newton_leaf_values(sum_gradients, sum_hessians, l2, curvature, scale):
    """The leaves' values: the exact Newton step of the penalised quadratic model.

    Parameters
    ----------
    sum_gradients, sum_hessians : ndarray of shape (n_leaves,)
        Per leaf, its rows' summed gradients (the penalty's included) and the
        log-loss's summed hessians.
    l2 : float
        ``l2_regularization``.
    curvature : ndarray of shape (n_leaves, n_leaves)
        The penalty's curvature between leaves
        (:func:`penalty_leaf_curvature`).
    scale : float
        ``fairness * W``.

    Returns
    -------
    values : ndarray of shape (n_leaves,)
        Minimise ``sum_L (G_L v_L + (H_L + l2) v_L^2 / 2) + scale / 2 v^T
        curvature v``; without a penalty, ``-G_L / (H_L + l2)`` per leaf.
    """
    system = np.diag(np.asarray(sum_hessians, dtype=np.float64) + l2)
    system += scale * np.asarray(curvature, dtype=np.float64)
    return np.linalg.solve(system, -np.asarray(sum_gradients, dtype=np.float64))


BoostingClient._ANSWERS = {
    "start": BoostingClient._start,
    "init": BoostingClient._init,
    "grow": BoostingClient._grow,
    "leaf cells": BoostingClient._leaf_cells,
    "apply": BoostingClient._apply,
}


class Restart(Exception):
    """A client left out before a tree was applied: the tree starts again."""


def in_process(clients, batch=None):
    """The transport of clients in this process: ``send(query, active)``.

    Parameters
    ----------
    clients : list
        Objects with an ``answer(query)`` method, by client index.
    batch : object, default=None
        Answers the query kinds in its ``kinds`` for all the clients asked
        at once (``batch.answer(query, active)``,
        :class:`~skfedida.ensemble._batch.ClientBatch`); None: each client
        answers alone.

    Returns
    -------
    send : callable
        ``send(query, active)``: each active client's answer, by index (a
        :class:`Failed` where its answer raised).
    """

    def send(query, active):
        if batch is not None and query["kind"] in batch.kinds:
            return batch.answer(query, active)
        answers = {}
        for k in active:
            try:
                answers[k] = clients[k].answer(query)
            except Exception as error:  # the gate's policy decides
                answers[k] = Failed(error)
        return answers

    return send


#: At most this many bytes of histograms in one round's answers (all
#: clients'), when more nodes could be asked ahead: the server holds them
#: all at once.
ROUND_BYTES = 16 * 2**20


class TreeChannel:
    """The server's side of the trees' messages: queries out, gated answers in.

    Every answer passes the reply gate's rules for its kind
    (``skfedida._gate``) and the federation's ``on_client_error``:
    a client whose answer fails is named in an error, or left out of every
    later query; if that happens while a tree is grown, the tree is grown
    again without it.

    Parameters
    ----------
    send : callable
        ``send(query, active)``: the active clients' answers by index (the
        transport: :func:`in_process`, or Flower's messages).
    n_clients : int
        Clients of the federation.
    gate : ReplyGate, default=None
        The federation's gate (by default, a failing answer is an error).
    rows : list of int, default=None
        The training rows each client declared.
    unit_weights : bool, default=False
        Whether every client's rows weigh 1 each in the loss (the server
        then holds their weights to their counts of rows).
    ahead : bool, default=True
        Whether the splits the grower will make anyway are made ahead, in
        the rounds it needs (:meth:`_ahead_of`): the same trees in fewer
        rounds.
    """

    def __init__(
        self, send, n_clients, gate=None, rows=None, unit_weights=False, ahead=True
    ):
        self.send = send
        self.ahead = ahead
        self.gate = ReplyGate() if gate is None else gate
        self.active = [k for k in range(n_clients) if k not in self.gate.left_out]
        self.ledger = {
            k: TreeLedger(None if rows is None else int(rows[k]), unit_weights)
            for k in range(n_clients)
        }
        self._new_tree()
        #: Per client, the largest sums of absolute gradients and of hessians
        #: its rows can have in this tree (``tree_bounds``).
        self.bounds = {}
        #: The compact form of every histogram answer (the federation's bins).
        self.layout = None

    def tree_bounds(self, started, penalty, constraint=None):
        """Bound every client's gradient and hessian sums for the next tree.

        A row's log-loss gradient is at most its weight in magnitude, and
        its hessian a quarter of it; the penalty adds ``scale * w_i`` times
        its cell's gradient, and a rate constraint ``scale * r_i * |A_c| /
        (4 tau)`` at most (a sigmoid's slope is at most a quarter; ``r_i``
        the row's weight in the rates). So a client's sums over any node are
        within its weight ``W_k`` times ``1 + scale * max |cell gradient|``
        plus its rates' weight ``R_k`` times the constraint's largest, and
        ``W_k / 4``: what its histograms are held to.
        """
        extra = (
            0.0
            if penalty is None
            else penalty["scale"] * np.abs(penalty["cell_gradient"]).max(initial=0.0)
        )
        per_rate = (
            0.0
            if constraint is None
            else float(constraint["scale"])
            * np.abs(constraint["coefficient"]).max(initial=0.0)
            / (4.0 * float(constraint["temperature"]))
        )
        self.bounds = {
            k: (
                float(answer["label_sums"][1]) * (1.0 + extra)
                + (
                    0.0
                    if constraint is None
                    else per_rate * float(np.sum(answer["rate_cell_weight"]))
                ),
                float(answer["label_sums"][1]) / 4.0,
            )
            for k, answer in started.items()
        }

    def ask(
        self, query, *, expected=None, restart=True, check=None, across=None, only=None
    ):
        """Every active client's admitted answer to ``query``, by index.

        ``expected`` holds, per client index, what the server alone knows
        its answer must agree with (its rows of the node asked about);
        ``check(answers)``, when given, checks all the answers at once
        (``{k: problem}``) instead of one by one. ``across(sound, name)``,
        when given, then holds the answers that passed their own rules to
        one another (``{k: problem}`` for each client at fault; ``name(k)``
        names a client): what the clients must share, or a range against
        the others'. ``only``, when given, asks only those active clients.
        """
        asked = [k for k in self.active if only is None or k in only]
        answers = self.send(query, asked)
        kind = query["kind"]
        # (Answers made together in this process cannot fail one by one.)
        failed = (
            set()
            if isinstance(answers, GrowAnswers)
            else {k for k, a in answers.items() if isinstance(a, Failed)}
        )
        together = None
        if check is not None:
            together = check(
                answers
                if not failed
                else {k: a for k, a in answers.items() if k not in failed}
            )
        problems = []
        # Every answer checked at once and sound: nothing to judge one by one
        # (many clients: no loop over them to say so).
        judged = [] if _all_sound(together, asked, failed, across) else asked
        for k in judged:
            if k in failed:
                answer = answers[k]
                if self.gate.on_client_error == "raise":
                    raise RuntimeError(
                        f"{self.gate.name(k)} failed the tree query {kind!r}: "
                        f"{type(answer.error).__name__}: {answer.error}"
                    ) from answer.error
                problem = f"its answer raised {type(answer.error).__name__}: "
                problem += str(answer.error)
            elif together is not None:
                problem = together.get(k, "it did not answer")
            else:
                problem = tree_reply_problem(
                    query,
                    answers.get(k),
                    self.ledger[k],
                    None if expected is None else expected.get(k),
                )
            problems.append((k, problem))
        if across is not None:
            sound = {k: answers[k] for k, problem in problems if problem is None}
            found = across(sound, self.gate.name)
            problems = [(k, found.get(k, problem)) for k, problem in problems]
        if any(problem is not None for _, problem in problems):
            # The active clients not asked (the server answers for them) are
            # admitted: if every asked client fails, the fit goes on with
            # them under "skip".
            admitted = self.gate.admit(
                f"tree query {kind!r}",
                problems + [(k, None) for k in self.active if k not in asked],
            )
            dropped = [k for k in asked if k not in admitted]
            self.gate.left_out.update(dropped)
            self.active = [k for k in self.active if k not in dropped]
            asked = [k for k in asked if k not in dropped]
            if restart:
                raise Restart
        if kind in RECORDED:
            for k in asked:
                self.ledger[k].record(query, answers[k])
        if len(answers) == len(asked):
            return answers
        return {k: answers[k] for k in asked}

    def node(self):
        """A new node id of the tree being grown."""
        self._next_node += 1
        return self._next_node

    def start_tree(self, started, penalty=None, constraint=None):
        """The root of a new tree: every active client's rows.

        The clients compute the tree's gradients (with the penalty's and the
        constraint's terms) in the round that asks for the root's
        histograms: no round of their own.
        """
        self._new_tree()
        self._gradients = {"penalty": penalty, "constraint": constraint}
        return NodeRows(0, {k: int(started[k]["n"]) for k in self.active})

    def _new_tree(self):
        self._next_node = 0
        #: Splits chosen whose partitions the clients have not yet made:
        #: (node split, left child, right child, split message).
        self._pending = []
        #: Per node id, its children, split ahead of the grower.
        self._made = {}
        #: Per (node id, features), its summed histograms, asked ahead.
        self._ahead = {}
        #: The tree's gradients' terms, until the clients computed them.
        self._gradients = None
        #: The grower of the tree (set by it), whose next splits are made ahead.
        self.grower = None

    def histograms(self, rows, features=None):
        """The clients' histograms of a node, summed.

        Asked in one round with every split not yet made, and, ahead of
        the grower, with the splits of the nodes it will split next
        (:meth:`_ahead_of`) and their smaller children's histograms.
        """
        key = (rows.node, _features_key(features))
        if key in self._ahead:
            return self._ahead.pop(key)
        asked = [(rows, features), *self._ahead_of(self.grower)]
        totals = self._round(asked)
        for (child, child_features), total in zip(asked[1:], totals[1:], strict=True):
            self._ahead[(child.node, _features_key(child_features))] = total
        return totals[0]

    def split(self, rows, split_info):
        """A node's two children, the clients' rows partitioned by the split.

        The partition is made in the next round (with the histograms the
        grower asks next, or :meth:`flush`); the children's rows are known
        meanwhile from the histograms the split was found on.
        """
        made = self._made.pop(rows.node, None)
        if made is not None:
            return made
        return self._children(rows, split_info)

    def flush(self):
        """Make the splits not yet made (before the leaves are used)."""
        if self._pending or self._gradients is not None:
            self._round([])

    def _children(self, rows, split_info):
        left = NodeRows(self.node(), None, int(split_info.n_samples_left))
        right = NodeRows(self.node(), None, int(split_info.n_samples_right))
        self._pending.append((rows, left, right, split_message(split_info)))
        return left, right

    def _ahead_of(self, grower):
        """Splits the grower will make whatever the next histograms hold.

        Every splittable node is split by the grower in the end, unless the
        tree reaches ``max_leaf_nodes`` first: the nodes of highest gain
        within that budget are split now, in the round the grower needs
        anyway, and their smaller children's histograms (when a child may
        be split) asked with it, as many as the round's answers hold within
        ``ROUND_BYTES``. The grower reads them later from here, so
        the tree is the one grown a split at a time; a split made ahead but
        never used leaves its node a leaf with the same rows. With
        interaction constraints only the splits are made ahead (a child's
        features depend on its ancestors' constraints).
        """
        if grower is None or not self.ahead or not grower.splittable_nodes:
            return []
        nodes = sorted(
            node
            for node in grower.splittable_nodes
            if node.sample_indices.node not in self._made
        )
        if grower.max_leaf_nodes is not None:
            # The grower's leaves once the node it splits now is split, and
            # once each split made ahead is used.
            leaves = (
                len(grower.finalized_leaves)
                + len(grower.splittable_nodes)
                + 2
                + len(self._made)
            )
            nodes = nodes[: max(grower.max_leaf_nodes - leaves, 0)]
        # The round's answers stay within ROUND_BYTES: every active client
        # sends each histogram asked (many clients: fewer asked ahead).
        room = ROUND_BYTES // max(
            len(self.active) * self.layout.size * HISTOGRAM_DTYPE.itemsize, 1
        )
        nodes = nodes[: max(room - 1, 0)]
        asked = []
        for node in nodes:
            left, right = self._children(node.sample_indices, node.split_info)
            self._made[node.sample_indices.node] = (left, right)
            if (
                grower.interaction_cst is not None
                or (grower.max_depth is not None and node.depth + 1 >= grower.max_depth)
                or max(left.shape[0], right.shape[0]) < 2 * grower.min_samples_leaf
            ):
                continue
            asked.append((left if left.shape[0] < right.shape[0] else right, None))
        return asked

    def _round(self, asked):
        """One "grow" round: the pending splits made, ``asked``'s histograms."""
        splits = self._pending
        query = {
            "kind": "grow",
            "gradients": self._gradients,
            "splits": [
                {
                    "node": rows.node,
                    "left": left.node,
                    "right": right.node,
                    "split": message,
                }
                for rows, left, right, message in splits
            ],
            "histograms": [
                {"node": rows.node, "features": features} for rows, features in asked
            ],
        }
        # Each histogram's rows: a child of this round's splits, or known.
        children = {
            child.node: ChildOf(j, side)
            for j, (_, left, right, _) in enumerate(splits)
            for side, child in enumerate((left, right))
        }
        checked = {}
        clients = list(self.active)

        def check(answers):
            problems, checked["totals"] = grow_problems(
                query,
                answers,
                asked=clients,
                splits=[
                    NodeSplit(rows.counts, left.shape[0]) for rows, left, _, _ in splits
                ],
                sources=[children.get(rows.node, rows.counts) for rows, _ in asked],
                bounds=self.bounds,
                layout=self.layout,
            )
            return problems

        answers = self.ask(query, check=check)
        self._pending, self._gradients = [], None
        if isinstance(answers, GrowAnswers):
            clients, held = answers.clients, answers.splits
        else:
            clients = list(answers)
            held = np.array(
                [a["splits"] for a in answers.values()], dtype=np.uint64
            ).reshape(len(answers), len(splits), 2)
        for j, (_, *children, _) in enumerate(splits):
            for side, child in enumerate(children):
                child.counts = dict(
                    zip(clients, held[:, j, side].tolist(), strict=True)
                )
        return [self.layout.expand(total) for total in checked["totals"]]


def _all_sound(together, asked, failed, across):
    """Whether answers checked at once all passed, with no other rule to run."""
    return (
        together is not None
        and not failed
        and across is None
        and together.keys() == set(asked)
        and all(problem is None for problem in together.values())
    )


def _features_key(features):
    return None if features is None else tuple(np.asarray(features).tolist())


def _as_channel(clients):
    return (
        clients
        if isinstance(clients, TreeChannel)
        else TreeChannel(in_process(clients), len(clients))
    )


def boost(
    clients,
    *,
    bin_mapper,
    is_categorical,
    monotonic_cst,
    interaction_cst,
    max_iter,
    learning_rate,
    max_leaf_nodes,
    max_depth,
    min_samples_leaf,
    l2_regularization,
    max_features,
    feature_rng,
    fairness=0.0,
    n_groups=1,
    baseline=None,
    score=False,
    predictors=None,
    on_start=None,
    on_iteration=None,
    constraint=None,
):
    """Boosting iterations over the clients' rows; the trees, one per iteration.

    Parameters
    ----------
    clients : TreeChannel or list of BoostingClient
        The clients, through the server's channel (a list: clients in this
        process, every answer checked, a failing one an error).
    bin_mapper : _BinMapper
        The federation's fitted bins (its edges and bins per feature).
    is_categorical, monotonic_cst : ndarray of shape (n_features,)
        As scikit-learn's grower takes them (in the binned features' order).
    interaction_cst : list of set or None
        Interaction constraints.
    max_iter : int
        Iterations (trees).
    learning_rate : float
        Shrinkage of every tree's values.
    max_leaf_nodes : int or None
        Leaves per tree at most.
    max_depth : int or None
        Depth per tree at most.
    min_samples_leaf : int
        Rows per leaf at least.
    l2_regularization : float
        L2 penalty on the leaves' values.
    max_features : float
        Share of the features considered at each split.
    feature_rng : numpy.random.Generator
        Feature subsampling's stream.
    fairness : float, default=0.0
        Weight of the group penalty.
    n_groups : int, default=1
        Groups of the clients' codes.
    baseline : float, default=None
        The log-odds the scores start from; by default the federation's
        weighted prevalence's (scikit-learn's ``fit_intercept_only``).
    score : bool, default=False
        Whether the clients send their training and validation log-losses
        at the start and after every tree (early stopping).
    predictors : list, default=None
        Trees to continue from (a warm start): the clients' scores start at
        ``baseline`` plus these trees', and the loop adds trees until there
        are ``max_iter``; appended to.
    on_start : callable, default=None
        ``on_start(baseline)`` once the scores' starting log-odds are known.
    on_iteration : callable, default=None
        ``on_iteration(predictors, scores)`` after each tree, and once
        before the first (``predictors`` empty) when ``score``; ``scores``
        is an :class:`IterationLosses` (the federation's mean log-losses,
        and each client's), or None. A true
        return value after a tree stops the loop (early stopping).
    constraint : RateConstraint, default=None
        A rate constraint at the operating point
        (:mod:`skfedida._models._constraints`): the clients send their
        cells' histograms of the scores with every scores' answer, the
        multipliers step once per tree, and each tree's gradients carry the
        constraint's term. At the end it holds the final model's rates.

    Returns
    -------
    baseline : float
        The scores' starting log-odds.
    predictors : list of list of TreePredictor
        One list of one tree per iteration, as scikit-learn keeps them.
    """
    channel = _as_channel(clients)
    loss = HalfBinomialLoss()
    penalised = fairness > 0 and n_groups > 1
    rate_bins = None if constraint is None else constraint.n_bins
    # Rows, weights and missing values, once; a client left out later is
    # left out of every total from then on.
    while True:
        try:
            started = channel.ask(
                {
                    "kind": "start",
                    "n_groups": n_groups if penalised or rate_bins else 1,
                    "n_features": len(is_categorical),
                    "rates": rate_bins is not None,
                }
            )
            break
        except Restart:
            continue
    if constraint is not None:
        constraint.set_prevalence(
            sum(answer["rate_cell_weight"] for answer in started.values())
        )
    if baseline is None:
        sums = sum(answer["label_sums"] for answer in started.values())
        baseline = float(loss.fit_intercept_only(y_true=np.array([sums[0] / sums[1]])))
    if on_start is not None:
        on_start(baseline)
    has_missing = np.zeros(len(is_categorical), dtype=np.uint8)
    for answer in started.values():
        has_missing |= np.asarray(answer["has_missing"], dtype=np.uint8)
    binning = {
        "n_bins": bin_mapper.n_bins,
        "n_bins_non_missing": np.asarray(bin_mapper.n_bins_non_missing_, np.uint32),
        "has_missing_values": has_missing,
        "is_categorical": np.asarray(is_categorical, dtype=np.uint8),
        "monotonic_cst": np.asarray(monotonic_cst, dtype=np.int8),
    }
    scored = channel.ask(
        {
            "kind": "init",
            "baseline": baseline,
            "score": score,
            "rate_bins": rate_bins,
            "binning": binning,
            "trees": [tree_message(tree[0]) for tree in predictors or []],
        },
        restart=False,
    )
    continued = bool(predictors)
    predictors = [] if predictors is None else predictors
    if score and on_iteration is not None and not continued:
        on_iteration(predictors, _mean_losses(scored))
    grower_params = {
        "is_categorical": binning["is_categorical"],
        "monotonic_cst": binning["monotonic_cst"],
        "interaction_cst": interaction_cst,
        "max_leaf_nodes": max_leaf_nodes,
        "max_depth": max_depth,
        "min_samples_leaf": min_samples_leaf,
        "l2_regularization": l2_regularization,
        "feature_fraction_per_split": max_features,
        "rng": feature_rng,
    }
    # The penalty's own parameter checks (about 40 us a call) are for calls
    # from user code; here it is called per tree and leaf on checked arrays.
    with config_context(skip_parameter_validation=True):
        while len(predictors) < max_iter:
            # A grown tree's feature draws are kept only when it is applied:
            # a tree grown again (a client left out) draws what it drew.
            state = feature_rng.bit_generator.state
            try:
                tree, leaves, values = _grow(
                    channel,
                    started,
                    scored,
                    binning,
                    grower_params,
                    bin_mapper,
                    fairness if penalised else 0.0,
                    n_groups,
                    l2_regularization,
                    learning_rate,
                    constraint,
                )
            except Restart:
                feature_rng.bit_generator.state = state
                continue
            predictors.append([tree])
            scored = channel.ask(
                {
                    "kind": "apply",
                    "leaves": leaves,
                    "values": values,
                    "tree": tree_message(tree) if score else None,
                    "score": score,
                    "rate_bins": rate_bins,
                },
                restart=False,
            )
            if constraint is not None:
                constraint.commit()
            if on_iteration is not None and on_iteration(
                predictors, _mean_losses(scored) if score else None
            ):
                break
    if constraint is not None:
        # The final model's operating point and rates on the training rows.
        constraint.measure(sum(scored[k]["rate_histograms"] for k in channel.active))
    return baseline, predictors


def _grow(
    channel,
    started,
    scored,
    binning,
    grower_params,
    bin_mapper,
    fairness,
    n_groups,
    l2_regularization,
    learning_rate,
    constraint=None,
):
    """One tree from the active clients: its predictor, leaves and values."""
    active = channel.active
    penalty = None
    if fairness > 0:
        cell_weight = sum(started[k]["cell_weight"] for k in active)
        scale = float(fairness) * float(cell_weight.sum())
        score_sums = sum(scored[k]["score_sums"] for k in active)
        penalty = {
            "scale": scale,
            "cell_gradient": penalty_cell_gradient(score_sums, cell_weight, n_groups),
        }
    term = None
    if constraint is not None:
        # The multipliers step on the rates of the scores as they stand;
        # the step is kept once the tree is applied.
        histograms = sum(scored[k]["rate_histograms"] for k in active)
        term = constraint.propose(histograms)
        # The term is per unit of a mean over the rates' weights; the trees'
        # loss is a sum over the rows' weights (class weights included).
        loss_weight = sum(float(started[k]["label_sums"][1]) for k in active)
        term["scale"] = loss_weight / float(histograms.sum())
    channel.tree_bounds(started, penalty, term)
    channel.layout = bin_layout(binning["n_bins"], binning["n_bins_non_missing"])
    root = channel.start_tree(started, penalty, term)
    grower = FederatedTreeGrower(
        channel,
        root,
        n_features=len(binning["is_categorical"]),
        n_bins=binning["n_bins"],
        n_bins_non_missing=binning["n_bins_non_missing"],
        has_missing_values=binning["has_missing_values"],
        shrinkage=learning_rate,
        **grower_params,
    )
    grower.grow()
    channel.flush()
    leaves = grower.finalized_leaves
    if penalty is not None:
        answers = channel.ask(
            {
                "kind": "leaf cells",
                "leaves": [leaf.sample_indices.node for leaf in leaves],
            },
            # Each client's rows per leaf, as its splits put them.
            expected={
                k: [leaf.sample_indices.counts.get(k, 0) for leaf in leaves]
                for k in active
            },
        )
        leaf_cells = sum(answers[k]["cells"] for k in channel.active)
        values = newton_leaf_values(
            [leaf.sum_gradients for leaf in leaves],
            [leaf.sum_hessians for leaf in leaves],
            l2_regularization,
            penalty_leaf_curvature(leaf_cells, cell_weight, n_groups),
            penalty["scale"],
        )
        for leaf, value in zip(leaves, values, strict=True):
            leaf.value = learning_rate * float(value)
    tree = grower.make_predictor(binning_thresholds=bin_mapper.bin_thresholds_)
    return (
        tree,
        [leaf.sample_indices.node for leaf in leaves],
        np.array([leaf.value for leaf in leaves]),
    )


def tree_message(tree):
    """A tree as a message carries it: its nodes and categories' bitsets.

    Parameters
    ----------
    tree : TreePredictor
        A fitted tree.

    Returns
    -------
    message : dict
        Arrays only; :func:`tree_predictor` rebuilds the tree from them.
    """
    return {
        "nodes": tree.nodes,
        "binned_left_cat_bitsets": tree.binned_left_cat_bitsets,
        "raw_left_cat_bitsets": tree.raw_left_cat_bitsets,
    }


def tree_predictor(message):
    """The tree a :func:`tree_message` carries.

    Parameters
    ----------
    message : dict
        What :func:`tree_message` wrote.

    Returns
    -------
    tree : TreePredictor
        The tree, to predict with.
    """
    return TreePredictor(
        message["nodes"],
        message["binned_left_cat_bitsets"],
        message["raw_left_cat_bitsets"],
    )


@dataclass(frozen=True)
class Losses:
    """A model's mean log-losses on training rows and on validation rows.

    Either is None where there are no such rows.
    """

    train: float | None
    validation: float | None


@dataclass(frozen=True)
class IterationLosses:
    """The federation's mean log-losses after a tree, and each client's.

    ``train`` and ``validation`` are the pooled means (``validation`` None
    without validation rows), ``by_client`` maps a client's index to its
    own :class:`Losses`: what a robust early stopping combines instead of
    the pooled means.
    """

    train: float
    validation: float | None
    by_client: dict


def _mean_losses(answers):
    """The federation's mean training and validation log-losses; each client's."""
    train = sum(answer["loss"] for answer in answers.values())
    validation = [a["val_loss"] for a in answers.values() if len(a["val_loss"])]
    validation = sum(validation) if validation else None
    by_client = {
        k: Losses(
            float(a["loss"][0] / a["loss"][1]) if a["loss"][1] else None,
            float(a["val_loss"][0] / a["val_loss"][1])
            if len(a["val_loss"]) and a["val_loss"][1]
            else None,
        )
        for k, a in answers.items()
    }
    return IterationLosses(
        float(train[0] / train[1]),
        None if validation is None else float(validation[0] / validation[1]),
        by_client,
    )
