"""Mutants of the rate constraints at the operating point (issue 45).

The shared machinery (``skfedida/_models/_constraints.py``: the multipliers'
step, the smoothed rates, the operating point, the term's gradient), its use
by the trees, the logistic model and the network, the server's rounds and
the gate's rules for the new replies.
"""

from ._base import Mutant

WEIGHT_TESTS = ("tests/federated/test_sample_weight.py",)

MACHINERY_TESTS = ("tests/test_rate_constraints.py",)
TREE_TESTS = (
    "tests/test_rate_constraints.py",
    "tests/ensemble/test_constrained_trees.py",
)
MODEL_TESTS = (
    "tests/test_rate_constraints.py",
    "tests/_models/test_constrained_models.py",
)
FLOWER_TESTS = ("tests/flower/test_constraints_flower.py",)
TREES = ("FairHistGradientBoostingClassifier",)
MODELS = ("FairPenaltyLogisticRegression", "FairMLPClassifier")
ALL = (*TREES, *MODELS)

MUTANTS = [
    # -- the machinery ---------------------------------------------------------
    Mutant(
        "the multipliers step against the violation",
        "propose",
        "self.multipliers + MULTIPLIER_RATE * np.where(defined, violation, 0.0)",
        "self.multipliers - MULTIPLIER_RATE * np.where(defined, violation, 0.0)",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "a multiplier can turn negative",
        "propose",
        "        np.maximum(multipliers, 0.0, out=multipliers)\n",
        "",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "the multipliers' sum is not bounded",
        "propose",
        "        if total > self.bound:\n",
        "        if False:\n",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "a pair with an undefined rate loses its multiplier",
        "propose",
        "            self.multipliers,\n        )\n        np.maximum(",
        "            0.0,\n        )\n        np.maximum(",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "a pair with an undefined rate still pushes its groups",
        "_term",
        "    multipliers = np.where(defined[:, :, None] & defined[:, None, :], "
        "multipliers, 0.0)\n",
        "",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "the smoothed rate's slope forgets the width",
        "_sigmoid_and_slope",
        "    return smoothed, smoothed * (1.0 - smoothed) / temperature",
        "    return smoothed, smoothed * (1.0 - smoothed)",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "the term's gradient ignores the rows' weights",
        "term_gradient",
        "    return weight * coefficient[cells] * slope",
        "    return coefficient[cells] * slope",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "a group's pushes are its multipliers' sum, not their balance",
        "_term",
        "balance = multipliers.sum(axis=2) - multipliers.sum(axis=1)",
        "balance = multipliers.sum(axis=2) + multipliers.sum(axis=1)",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "a cell's coefficient is per group's weight, not per unit of the mean",
        "_term",
        '            balance[r] * point["total"],',
        "            balance[r],",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "the cut's bin is selected whole",
        "read",
        "        selected = _above(histograms)[:, j + 1] + share * histograms[:, j]",
        "        selected = _above(histograms)[:, j]",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "the threshold takes the bottom of the cut's bin, not its top",
        "_logit_at",
        "    probability = (j + 1 - share) / n_bins",
        "    probability = (j + share) / n_bins",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "the width ignores the scores' spread",
        "read",
        "        temperature = max("
        "np.mean(half_widths) if half_widths else 0.0, bin_width)",
        "        temperature = bin_width",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "prevalence is the share of negative rows",
        "set_prevalence",
        "self.target_rate = float(cell_weight[1::2].sum() / cell_weight.sum())",
        "self.target_rate = float(cell_weight[0::2].sum() / cell_weight.sum())",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "FPR's rows are the positives",
        "_RATE_LABELS",
        '    "false_positive_rate": (0,),\n',
        '    "false_positive_rate": (1,),\n',
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "a proposed step is kept without a commit",
        "propose",
        "        self._pending = (point, multipliers)\n",
        (
            "        self._pending = (point, multipliers)\n"
            "        self.multipliers = multipliers\n"
        ),
        MACHINERY_TESTS,
        features=ALL,
    ),
    # -- the trees ---------------------------------------------------------------
    Mutant(
        "the trees' gradients lack the constraint's term",
        "tree_gradients",
        "            self.gradients += pushed.astype(G_H_DTYPE)\n",
        "            pass\n",
        TREE_TESTS,
        features=TREES,
    ),
    Mutant(
        "the trees' term is per unit of the rates' weight, not the loss's",
        "tree_gradients",
        '            pushed = float(constraint["scale"]) * term_gradient(',
        "            pushed = term_gradient(",
        TREE_TESTS,
        features=TREES,
    ),
    Mutant(
        "the trees never keep a step of the multipliers",
        "boost",
        "            if constraint is not None:\n                constraint.commit()\n",
        "",
        TREE_TESTS,
        features=TREES,
    ),
    Mutant(
        "the trees' rates weigh class weights in",
        "BoostingClient.__init__",
        "np.ones(n) if rate_weight is None else np.asarray(rate_weight, np.float64)",
        "self.row_weight",
        TREE_TESTS,
        features=TREES,
    ),
    Mutant(
        "the gate takes histograms that do not add up to the client's cells",
        "_rate_histograms_problem",
        "histograms.sum(axis=1) - weights) > RTOL * weights.sum()):",
        "histograms.sum(axis=1) - weights) > np.inf):",
        TREE_TESTS,
        features=("reply:tree_rate_histograms",),
    ),
    Mutant(
        "the gate takes rows away from the baseline before the first tree",
        "_rate_histograms_problem",
        "        if np.any(np.delete(histograms, start, axis=1) != 0):",
        "        if False:",
        TREE_TESTS,
        features=("reply:tree_rate_histograms",),
    ),
    Mutant(
        "the gate takes a start without the cells' weights in the rates",
        "_tree_rules._start",
        "        if np.any(rate_cells < 0) or not rate_cells.sum() > 0:",
        "        if np.any(rate_cells < 0):",
        TREE_TESTS,
        features=("reply:tree_rate_histograms",),
    ),
    # -- the logistic model and the network -------------------------------------
    Mutant(
        "the models' objective lacks the term's value",
        "BaseFairClassifier._objective",
        "            value += term_value(scores, cells, term_weight, term) / total\n",
        "",
        MODEL_TESTS,
        features=MODELS,
    ),
    Mutant(
        "the models' gradient lacks the term",
        "BaseFairClassifier._objective",
        "            score_gradient += term_gradient(",
        "            score_gradient += 0 * term_gradient(",
        MODEL_TESTS,
        features=MODELS,
    ),
    Mutant(
        "a federation's term is read by group code, not label",
        "_term_rows",
        "        if batch.labels is None:  # codes already in the term's numbering",
        "        if True:",
        (*MODEL_TESTS, *FLOWER_TESTS),
        features=MODELS,
    ),
    Mutant(
        "a constraint on three classes is not refused",
        "_check_constraint_classes",
        "            and len(self.classes_) != 2\n        ):",
        "            and len(self.classes_) < 2\n        ):",
        MODEL_TESTS,
        features=MODELS,
    ),
    Mutant(
        "the logistic fit keeps its last round, not its best",
        "_constrained_lbfgs",
        "            (r for r in rounds if r[0] <= least + BEST_ROUND_SLACK),\n",
        "            rounds[-1:],\n",
        MODEL_TESTS,
        features=("FairPenaltyLogisticRegression",),
    ),
    # -- the server's rounds -------------------------------------------------------
    Mutant(
        "the server's term never reaches the clients' training",
        "InProcessRounds.train",
        "self.trainer.rate_term = rate_term",
        "self.trainer.rate_term = None",
        MODEL_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "the server sums the clients' counts by position, not group label",
        "summed",
        "[self._index[tuple(label)] for label in answer.labels]",
        "list(range(len(answer.labels)))",
        (*MODEL_TESTS, *FLOWER_TESTS),
        features=("FederatedEstimator", "reply:rate_histograms"),
    ),
    Mutant(
        "a client's counts of undeclared groups pass",
        "problem",
        "        if unknown:\n            return",
        "        if False:\n            return",
        MODEL_TESTS,
        features=("reply:rate_histograms",),
    ),
    Mutant(
        "a client's counts pass the gate unchecked",
        "InProcessRounds.rate_histograms",
        "problem = constraint.problem(result, self.server.ledger, k, self.data[k].n)",
        "problem = None",
        MODEL_TESTS,
        features=("reply:rate_histograms",),
    ),
    Mutant(
        "a Flower node trains without the round's term",
        "ClientNode.train",
        "            rate_term=None if term is None else decode(term),",
        "            rate_term=None,",
        FLOWER_TESTS,
        features=("make_client_app",),
    ),
    # -- rows' weights ----------------------------------------------------------
    Mutant(
        "a weighted edge never averages an exact target with the next value",
        "_weighted_edges",
        "    exact = (weights - targets <= np.finfo(np.float64).eps) & (",
        "    exact = (weights - targets < 0) & (",
        WEIGHT_TESTS,
        features=("FederatedEstimator", "reply:tree_bin_edges"),
    ),
    Mutant(
        "a client bins its rows of weight 0",
        "ClientColumns.__init__",
        "            keep &= weight != 0\n",
        "",
        WEIGHT_TESTS,
        features=("FederatedEstimator", "reply:tree_bin_edges"),
    ),
    Mutant(
        "a resampled row forgets its seed row's weight",
        "_client._resample",
        "else data.weight[sampler.sample_indices_]",
        "else None",
        WEIGHT_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "the prior correction counts rows, not their weights",
        "_prior_weights",
        "    before = np.bincount(y_codes, weights=weight, minlength=n_classes)",
        "    before = np.bincount(y_codes, minlength=n_classes)",
        WEIGHT_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "the class prior counts rows, not their weights",
        "admitted_class_prior",
        "        if data[k].weight is None",
        "        if True",
        WEIGHT_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "the trees' class prior counts rows, not their weights",
        "_tree_server._declared",
        '            "class_weights", answer["class_counts"]',
        '            "class_counts", answer["class_counts"]',
        WEIGHT_TESTS,
        features=("FederatedEstimator",),
    ),
    # -- from the review of the whole change -----------------------------------
    Mutant(
        "the low-rate band reaches the extreme rows",
        "read",
        "            if margin <= edge <= 1 - margin\n",
        "            if 0 <= edge <= 1\n",
        MACHINERY_TESTS,
        features=ALL,
    ),
    Mutant(
        "the constrained L-BFGS says nothing when max_iter runs out",
        "_constrained_lbfgs",
        "        if not settled and n_iter >= budget:",
        "        if False:",
        MODEL_TESTS,
        features=MODELS,
    ),
    Mutant(
        "the network's stopping rule watches the Lagrangian",
        "FairMLPClassifier.fit",
        "            if self._constrains(batch):\n                # The epoch's",
        "            if False:\n                # The epoch's",
        MODEL_TESTS,
        features=MODELS,
    ),
    Mutant(
        "a changed constraint keeps stepping the old multipliers",
        "_step_own_constraint",
        "        if constraint is not None and constraint.asked != "
        "constraint_request(self):",
        "        if False:",
        MODEL_TESTS,
        features=MODELS,
    ),
    Mutant(
        "a constraint set to None keeps its multipliers",
        "_under_constraint",
        "                # set_params(constraints=None) since: no stale multipliers.\n"
        "                forget_constraint(self)\n",
        "                # set_params(constraints=None) since: no stale multipliers.\n"
        "                pass\n",
        MODEL_TESTS,
        features=MODELS,
    ),
    Mutant(
        "a federated model's partial_fit restarts the multipliers from zero",
        "_step_own_constraint",
        "multipliers=self._carried_multipliers(len(known))",
        "multipliers=None",
        MODEL_TESTS,
        features=MODELS,
    ),
    Mutant(
        "the trees' federation takes weights the trees did not request",
        "FederatedEstimator.fit",
        "            self._check_weight_routing(sample_weight)\n"
        "            return fit_trees(",
        "            return fit_trees(",
        WEIGHT_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "a sampler's rows weigh in the trees' rates as resampled",
        "TreeFederationClient._prepare",
        "data.weight, _rate_weight(rows, data))",
        "data.weight, data.weight)",
        TREE_TESTS,
        features=TREES,
    ),
    Mutant(
        "column-mode clients count no groups for the server's constraint",
        "rows_groups",
        "    return estimator.check_rows(data.X).groups\n",
        "    return None\n",
        (*MODEL_TESTS, *FLOWER_TESTS),
        features=("FederatedEstimator",),
    ),
]
