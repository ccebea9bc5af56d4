"""Mutants of ``skfedida/ensemble`` (issue 36: boosted trees with the penalty)."""

from ._base import Mutant

ENSEMBLE_TESTS = (
    "tests/ensemble/test_boosting.py",
    "tests/ensemble/test_fair_hist_gradient_boosting.py",
)
GATE_TESTS = ("tests/ensemble/test_tree_replies.py", "tests/federated/test_trees.py")
TREE_FEDERATION_TESTS = ("tests/federated/test_trees.py",)
FEATURES = ("FairHistGradientBoostingClassifier",)

MUTANTS = [
    Mutant(
        "a client's histogram counts are not added to the others'",
        "checked_sum",
        "        for field, values in zip(_FIELDS, sparse.fields(), strict=True):\n"
        "            total[field] = _sums(position, values, size)\n",
        "        for field, values in zip(_FIELDS, sparse.fields(), strict=True):\n"
        "            total[field] = _sums(\n"
        "                position,\n"
        '                values.clip(max=1) if field == "count" else values,\n'
        "                size,\n"
        "            )\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the trees are fitted without the penalty's gradient",
        "tree_gradients",
        "            self.gradients += extra.astype(G_H_DTYPE)\n",
        "            pass\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "a cell's penalty gradient is not per unit of weight",
        "penalty_cell_gradient",
        "    out[present] = gradient / rep_weight\n",
        "    out[present] = gradient\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the leaves keep the log-loss's step, ignoring the penalty's curvature",
        "newton_leaf_values",
        "    system += scale * np.asarray(curvature, dtype=np.float64)\n",
        "    system += 0.0 * np.asarray(curvature, dtype=np.float64)\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the penalised leaves are not shrunk by the learning rate",
        "_boosting._grow",
        "            leaf.value = learning_rate * float(value)\n",
        "            leaf.value = float(value)\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the baseline ignores the clients' weights",
        "BoostingClient._start",
        "[np.multiply(self.y, self.row_weight).sum(), self.row_weight.sum()]",
        "[self.y.sum(), float(self.n_samples)]",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
]
MUTANTS += [
    Mutant(
        "the leaves' curvature is not per unit of the cells' weight",
        "penalty_leaf_curvature",
        "        products[leaf, present] = gradient / rep_weight\n",
        "        products[leaf, present] = gradient\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
]
MUTANTS += [
    Mutant(
        "the penalised fit reads the categorical flags in the frame's order",
        "_fit_boosted",
        "else np.asarray(self._is_categorical_remapped, dtype=np.uint8)",
        "else np.asarray(self.is_categorical_, dtype=np.uint8)",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the histograms' checks read the features a constraint leaves out",
        "grow_problems",
        'positions, offsets = layout.of_features(query["histograms"][i]["features"])',
        "positions, offsets = layout.of_features(None)",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
]

# -- federated bin edges --------------------------------------------------------
BINNING_TESTS = ("tests/ensemble/test_binning.py",)
MUTANTS += [
    Mutant(
        "a bisection pivot is the mean of the keys, overflowing across zero",
        "_bisect",
        "        mid = lo // 2 + hi // 2 + (lo % 2 + hi % 2) // 2\n",
        "        mid = (lo + hi) // 2\n",
        BINNING_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "an order statistic is the largest value below its rank",
        "_order_statistics",
        "        lambda counts: counts >= ranks + 1,\n",
        "        lambda counts: counts > ranks + 1,\n",
        BINNING_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the midpoints path takes features with one value more than max_bins",
        "_feature_plan",
        "        if distinct.size <= max_bins:\n",
        "        if distinct.size <= max_bins + 1:\n",
        BINNING_TESTS,
        features=FEATURES,
    ),
]
MUTANTS += [
    Mutant(
        "the midpoints path keeps duplicate and infinite edges",
        "_feature_plan",
        '                return "edges", _finished(\n',
        '                return "edges", np.asarray(\n',
        BINNING_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "an integer percentile position reads the next value, not the previous",
        "_feature_plan",
        "    below = np.where(half, above - 1, np.maximum(above - 1, 0))\n",
        "    below = np.where(half, above - 1, above)\n",
        BINNING_TESTS,
        features=FEATURES,
    ),
]
MUTANTS += [
    Mutant(
        "a node's histograms may count other rows than the client has there",
        "_vectorised_problems",
        "    wrong_rows = (totals != rows) & ~np.isnan(rows)\n",
        "    wrong_rows = (totals > rows) & ~np.isnan(rows)\n",
        GATE_TESTS,
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "a histogram's gradient sums may exceed what the client's weights allow",
        "_vectorised_problems",
        "bounds[:, None, :] * (1 + 1e-6)",
        "bounds[:, None, :] * 1e6",
        GATE_TESTS,
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "features' histograms of one node may disagree",
        "_vectorised_problems",
        ") > DRIFT * bounds\n",
        ") > 1e3 * bounds\n",
        GATE_TESTS,
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "a client's wrong histograms are never named",
        "_vectorised_problems",
        "    for i in np.flatnonzero(flagged):\n",
        "    for i in np.flatnonzero(flagged)[:0]:\n",
        GATE_TESTS,
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "a partition may lose rows",
        "grow_problems",
        "        children.sum(axis=2) != rows.T\n",
        "        children.sum(axis=2) > rows.T\n",
        GATE_TESTS,
        features=("reply:tree_split",),
    ),
    Mutant(
        "a client failing mid-tree makes the others' children disagree",
        "grow_problems",
        "    if asked is not None and set(asked) != set(answers):\n",
        "    if False:\n",
        GATE_TESTS,
        features=("reply:tree_split",),
    ),
    Mutant(
        "children counts may wrap around to the node's rows",
        "grow_problems",
        "(children > rows.T[:, :, None]).any(axis=2) | (",
        "(",
        GATE_TESTS,
        features=("reply:tree_split",),
    ),
    Mutant(
        "the federation's children need not hold the rows the histograms put there",
        "grow_problems",
        "        if held != split.left:",
        "        if held < split.left:",
        GATE_TESTS,
        features=("reply:tree_split",),
    ),
    Mutant(
        "a leaf's cell weights need not add up to the client's",
        "_tree_rules._leaf_cells",
        "    if np.any(np.abs(cells.sum(axis=0) - total) > RTOL * total.sum()):",
        "    if np.any(cells.sum(axis=0) - total > 1e6):",
        GATE_TESTS,
        features=("reply:tree_leaf_cells",),
    ),
    Mutant(
        "counts at pivots may fall as the pivot rises",
        "_pivot_order_problem",
        "    falling = np.flatnonzero(same & (steps < -slack))",
        "    falling = np.flatnonzero(same & (steps < steps))",
        GATE_TESTS,
        features=("reply:tree_bin_edges",),
    ),
    Mutant(
        "a client skipped midway leaves its tree half grown",
        "TreeChannel.ask",
        "            if restart:\n                raise Restart\n",
        "            pass\n",
        GATE_TESTS,
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "a tree grown again after a skip draws other features",
        "boost",
        "                feature_rng.bit_generator.state = state\n",
        "                pass\n",
        GATE_TESTS,
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "the federation's categories are one client's",
        "federated_trees",
        '        values = [answer["categories"][j] for answer in prepared.values()]',
        '        values = [next(iter(prepared.values()))["categories"][j]]',
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "a client's sampler is seeded by the federation, not the client",
        "TreeFederationClient._prepare",
        "        self.rng = np.random.RandomState(self.seed)\n",
        "        self.rng = np.random.RandomState(0)\n",
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "resampled rows are not weighted back to the client's label shares",
        "TreeFederationClient._prepare",
        "self.rng), data, self.prior_correction\n",
        "self.rng), data, None\n",
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "early stopping stops on the training loss though clients hold out rows",
        "federated_trees",
        "    model._use_validation_data = fraction is not None\n",
        "    model._use_validation_data = False\n",
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "a client's penalty groups are its own codes, not the federation's",
        "TreeFederationClient._prepare",
        "            groups = own[data.groups.codes]\n",
        "            groups = data.groups.codes\n",
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
]
MUTANTS += [
    Mutant(
        "a client's histograms of another shape than the bins' are summed",
        "histogram_problems",
        "    shape = None if shape is None else tuple(int(n) for n in shape)\n",
        "    shape = None\n",
        GATE_TESTS,
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "features outside a constraint set are sent as the builder left them",
        "node_histograms",
        "            out[others] = np.zeros(1, dtype=HISTOGRAM_DTYPE)\n",
        "            pass\n",
        GATE_TESTS,
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "a decoded array may take any memory, whatever its message's size",
        "_dtype",
        "        if size > budget[0]:\n",
        "        if False:\n",
        ("tests/flower/test_codec.py",),
        features=("reply:tree_histograms",),
    ),
    Mutant(
        "monotonic constraints are dropped in a federation",
        "_boost_model",
        "        monotonic_cst=model._monotonic_cst_remapped,\n",
        "        monotonic_cst=np.zeros(n_features, dtype=np.int8),\n",
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
]
MUTANTS += [
    Mutant(
        "a warm start draws the clients' seeds again",
        "fit_trees",
        "        seeds = federation.client_seeds_\n",
        "        pass\n",
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "a client left out rejoins the trees a warm start continues",
        "fit_trees",
        "        if left_out:\n",
        "        if False:\n",
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
]
MUTANTS += [
    Mutant(
        "a node rebuilding the trees for thresholds forgets the baseline",
        "tree_model_from_message",
        '    model._baseline_prediction = np.array([[float(message["baseline"])]])\n',
        "    model._baseline_prediction = np.array([[0.0]])\n",
        ("tests/flower/test_trees_flower.py",),
        features=("FederatedThresholdOptimizer",),
    ),
]
MUTANTS += [
    Mutant(
        "a callback asking to stop the trees is not heard",
        "_boost_model.on_iteration",
        "            stop = bool(on_tree(model)) or stop\n",
        "            on_tree(model)\n",
        TREE_FEDERATION_TESTS,
        features=("FederatedEstimator",),
    ),
]
# -- in-process clients grown together (issue 47) ------------------------------
BATCH_TESTS = ("tests/ensemble/test_batch.py",)
MUTANTS += [
    Mutant(
        "the batch sends missing values right where the split sends them left",
        "_goes_left",
        "            left |= values == self.missing_values_bin_idx\n",
        "            pass\n",
        BATCH_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "a node split ahead but left a leaf holds only its left child's rows",
        "_rows",
        "        return np.concatenate((self._rows(left), self._rows(right)))\n",
        "        return self._rows(left)\n",
        BATCH_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "the batch answers for clients whose answers a test replaced",
        "_batch_of",
        "    if TreeFederationClient.answer is not _OWN_ANSWER or any(\n",
        "    if any(\n",
        BATCH_TESTS,
        features=("FederatedEstimator",),
    ),
]
