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

import numpy as np
from sklearn import config_context

from .._compat import G_H_DTYPE, X_BINNED_DTYPE, HalfBinomialLoss
from ..penalty import group_penalty
from ._growing import ClientRows, FederatedTreeGrower

__all__ = [
    "BoostingClient",
    "boost",
    "newton_leaf_values",
    "penalty_cell_gradient",
    "penalty_leaf_curvature",
]


class BoostingClient:
    """One client's rows for boosting: binned inputs, labels, weights, scores.

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
    """

    def __init__(self, X_binned, y, sample_weight=None, groups=None):
        self.X_binned = np.asfortranarray(X_binned, dtype=X_BINNED_DTYPE)
        self.y = np.asarray(y, dtype=np.float64)
        n = self.y.shape[0]
        # The loss takes None for unit weights; the sums every tree needs
        # take the ones, made once.
        self.weight = (
            None if sample_weight is None else np.asarray(sample_weight, np.float64)
        )
        self.row_weight = np.ones(n) if self.weight is None else self.weight
        # Each row's (group, label) cell, 2 * group + label, fixed for the fit.
        self.cells = (
            None
            if groups is None
            else np.asarray(groups, dtype=np.intp) * 2 + self.y.astype(np.intp)
        )
        self.raw = None
        self.gradients = np.empty(n, dtype=G_H_DTYPE)
        self.hessians = np.empty(n, dtype=G_H_DTYPE)

    @property
    def n_samples(self):
        return self.y.shape[0]

    def label_sums(self):
        """``(sum of w_i y_i, sum of w_i)``: what the baseline needs."""
        return float(np.dot(self.row_weight, self.y)), float(self.row_weight.sum())

    def cell_sums(self, n_groups):
        """Per cell, the weighted sum of the raw scores and the weight."""
        size = 2 * n_groups
        return (
            np.bincount(self.cells, weights=self.row_weight * self.raw, minlength=size),
            np.bincount(self.cells, weights=self.row_weight, minlength=size),
        )

    def compute_gradients(self, loss, penalty=None):
        """The log-loss's gradients and hessians, plus the penalty's gradient.

        ``penalty`` is ``(scale, cell_gradient)``: each row gets
        ``scale * w_i * cell_gradient[cell]`` added to its gradient.
        """
        loss.gradient_hessian(
            y_true=self.y,
            raw_prediction=self.raw,
            sample_weight=self.weight,
            gradient_out=self.gradients,
            hessian_out=self.hessians,
        )
        if penalty is not None:
            scale, cell_gradient = penalty
            extra = scale * self.row_weight * cell_gradient[self.cells]
            self.gradients += extra.astype(G_H_DTYPE)

    def tree_rows(self, **binning):
        """This client's side of growing the iteration's tree."""
        return ClientRows(self.X_binned, self.gradients, self.hessians, **binning)

    def leaf_cell_weights(self, leaf_views, n_groups):
        """Per leaf, the weight of the client's rows in each cell."""
        out = np.zeros((len(leaf_views), 2 * n_groups))
        for position, rows in enumerate(leaf_views):
            out[position] = np.bincount(
                self.cells[rows], weights=self.row_weight[rows], minlength=2 * n_groups
            )
        return out

    def apply_leaves(self, values, leaf_views):
        """Add each leaf's value to the raw scores of the client's rows in it."""
        for value, rows in zip(values, leaf_views, strict=True):
            self.raw[rows] += value


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
    predictors=None,
    on_iteration=None,
):
    """Boosting iterations over the clients' rows; the trees, one per iteration.

    Parameters
    ----------
    clients : list of BoostingClient
        The clients' training rows (their ``raw`` scores are updated).
    bin_mapper : _BinMapper
        The federation's fitted bins.
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
    predictors : list, default=None
        Trees so far (the clients' scores include them); appended to.
    on_iteration : callable, default=None
        ``on_iteration(predictors)`` after each tree; a true return value
        stops the loop (early stopping).

    Returns
    -------
    baseline : float
        The scores' starting log-odds.
    predictors : list of list of TreePredictor
        One list of one tree per iteration, as scikit-learn keeps them.
    """
    loss = HalfBinomialLoss()
    if baseline is None:
        sums = np.array([client.label_sums() for client in clients]).sum(axis=0)
        baseline = float(loss.fit_intercept_only(y_true=np.array([sums[0] / sums[1]])))
    for client in clients:
        if client.raw is None:
            client.raw = np.full(client.n_samples, baseline)
    predictors = [] if predictors is None else predictors
    penalised = fairness > 0 and n_groups > 1
    if penalised:
        cell_weight = sum(client.cell_sums(n_groups)[1] for client in clients)
        scale = float(fairness) * float(cell_weight.sum())
    n_features = clients[0].X_binned.shape[1]
    n_bins = bin_mapper.n_bins
    has_missing = np.zeros(n_features, dtype=np.uint8)
    for client in clients:
        has_missing |= (
            (client.X_binned == bin_mapper.missing_values_bin_idx_)
            .any(axis=0)
            .astype(np.uint8)
        )
    binning = {
        "n_bins": n_bins,
        "n_bins_non_missing": bin_mapper.n_bins_non_missing_,
        "has_missing_values": has_missing,
        "is_categorical": is_categorical,
        "monotonic_cst": monotonic_cst,
    }
    grower_params = {
        "is_categorical": is_categorical,
        "monotonic_cst": monotonic_cst,
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
        for _ in range(max_iter):
            penalty = None
            if penalised:
                sums = [client.cell_sums(n_groups) for client in clients]
                score_sums = sum(s for s, _ in sums)
                penalty = (
                    scale,
                    penalty_cell_gradient(score_sums, cell_weight, n_groups),
                )
            for client in clients:
                client.compute_gradients(loss, penalty)
            grower = FederatedTreeGrower(
                [client.tree_rows(**binning) for client in clients],
                n_features=n_features,
                n_bins=n_bins,
                n_bins_non_missing=bin_mapper.n_bins_non_missing_,
                has_missing_values=has_missing,
                shrinkage=learning_rate,
                **grower_params,
            )
            grower.grow()
            leaves = grower.finalized_leaves
            views = [leaf.sample_indices.views for leaf in leaves]
            if penalised:
                leaf_cells = sum(
                    client.leaf_cell_weights([v[k] for v in views], n_groups)
                    for k, client in enumerate(clients)
                )
                values = newton_leaf_values(
                    [leaf.sum_gradients for leaf in leaves],
                    [leaf.sum_hessians for leaf in leaves],
                    l2_regularization,
                    penalty_leaf_curvature(leaf_cells, cell_weight, n_groups),
                    scale,
                )
                for leaf, value in zip(leaves, values, strict=True):
                    leaf.value = learning_rate * float(value)
            predictors.append(
                [grower.make_predictor(binning_thresholds=bin_mapper.bin_thresholds_)]
            )
            values = [leaf.value for leaf in leaves]
            for k, client in enumerate(clients):
                client.apply_leaves(values, [v[k] for v in views])
            if on_iteration is not None and on_iteration(predictors):
                break
    return baseline, predictors
