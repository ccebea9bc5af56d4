"""Mutants of the trees' gate rules that hold a client to itself (issue 46).

Each rule compares an answer with what the same client answered before or
what the server computes itself; each mutant removes or weakens one. Also
the tests issue 46 asked for the six mutants of the issue 46 audit that
their modules' tests missed.
"""

from ._base import Mutant

TREE_REPLIES = "skfedida/_tree_replies.py"
BOOSTING = "skfedida/ensemble/_boosting.py"
TREES = "skfedida/federated/_trees.py"
REPLIES = "skfedida/_replies.py"
OPERATING_POINT = "skfedida/metrics/_operating_point.py"
THRESHOLDS = "skfedida/postprocessing/_threshold_optimizer.py"
GATE_TESTS = ("tests/ensemble/test_tree_replies.py",)
CONSISTENCY_TESTS = ("tests/federated/test_tree_consistency.py",)
TREES_FEATURES = ("FairHistGradientBoostingClassifier", "FederatedEstimator")

MUTANTS = [
    Mutant(
        "a bin of no rows may keep its sums",
        TREE_REPLIES,
        "    for i in np.flatnonzero(strays):",
        "    for i in ():",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "score sums are read, not recounted",
        TREE_REPLIES,
        "        problem = _recounted_scores_problem(query, sums, ledger)\n",
        "        pass\n",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "a tree's score sums are recounted without its leaves",
        TREE_REPLIES,
        "        recount = ledger.score_sums + values @ ledger.leaf_cells\n",
        "        recount = ledger.score_sums\n",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "a leaf's cell weights are not its rows there",
        TREE_REPLIES,
        "        if ledger.unit_weights and np.any(held != rows):",
        "        if False:",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the server never passes a client's rows per leaf",
        BOOSTING,
        "                k: [leaf.sample_indices.counts.get(k, 0) for leaf in leaves]",
        "                k: None",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "weights of 1 need not be counts",
        TREE_REPLIES,
        "    if not counts or np.any(cells != np.round(cells)):",
        "    if False:",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the label sums need not be the rows prepared",
        TREE_REPLIES,
        "    if not positives - n_val <= positive <= positives:",
        "    if False:",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "prepare's rows per label need not be those described",
        TREE_REPLIES,
        "        if counts.tolist() != declared:",
        "        if False:",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the federation never says its rows weigh 1",
        TREES,
        "        ledger.unit_weights = unit_weights\n",
        "        pass\n",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    # -- the six survivors ---------------------------------------------
    Mutant(
        "the penalty's per-row gradient forgets the row's weight",
        BOOSTING,
        '                float(penalty["scale"])\n                * self.row_weight\n',
        '                float(penalty["scale"])\n',
        ("tests/ensemble/test_fair_hist_gradient_boosting.py",),
        features=TREES_FEATURES,
    ),
    Mutant(
        "validation rows may disagree with the federation's early stopping",
        TREE_REPLIES,
        '    if (query["validation_fraction"] is None) != (n_val == 0):',
        "    if False:",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the training prevalence ignores a pipeline's last step",
        OPERATING_POINT,
        "    for candidate in (estimator, last):",
        "    for candidate in (estimator,):",
        ("tests/test_operating_point.py",),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "predict_method='predict' scores the first class as positive",
        THRESHOLDS,
        "(np.asarray(self.estimator_.predict(X)) == self.classes_[1])",
        "(np.asarray(self.estimator_.predict(X)) == self.classes_[0])",
        ("tests/test_postprocessing.py",),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "categories count NaN as many values",
        REPLIES,
        '        "nan" if isinstance(v, float) and v != v else (type(v).__name__, v)',
        "        (type(v).__name__, v)",
        ("tests/test_replies.py",),
        features=TREES_FEATURES,
    ),
    Mutant(
        "a skipped reply is recorded under the client's position",
        REPLIES,
        '                    "client": self.client_id(k),',
        '                    "client": k,',
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "what the clients must share is the last client's, not the majority's",
        TREE_REPLIES,
        "    written = consensus(\n",
        "    written = shown(said[clients[-1]]) or consensus(\n",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "a client's dtypes are not compared with the others'",
        TREES,
        '            tuple(a["dtypes"]),',
        "            (),",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the kind of categories is not compared across clients",
        TREES,
        '                k: category_kind(a["categories"][j])',
        "                k: None",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "one client's categories may mix numbers and strings",
        TREE_REPLIES,
        '    if len(kinds) > 1:\n        return "mixed"',
        '    if len(kinds) > 2:\n        return "mixed"',
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the median rule stops when one recent tree improved",
        TREES,
        "        if improvements and np.median(improvements) > tol:",
        "        if improvements and np.median(improvements) < tol:",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the median rule takes the clients' largest improvement",
        TREES,
        "        if improvements and np.median(improvements) > tol:",
        "        if improvements and np.max(improvements) > tol:",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the median rule compares with the tree before the last",
        TREES,
        "    reference = client_losses[-reference_position]",
        "    reference = client_losses[-reference_position + 1]",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "early stopping ignores early_stopping_aggregation",
        TREES,
        '            if predictors and do_early_stopping and stopping == "median":',
        "            if False:",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the threshold optimizer does not warn of unranked scores",
        THRESHOLDS,
        "        if tied <= 0.5 * pairs:",
        "        if True:",
        ("tests/test_postprocessing.py",),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "the threshold optimizer warns of 0/1 scores",
        THRESHOLDS,
        '        if self._score_method() == "predict":\n            return\n',
        "",
        ("tests/test_postprocessing.py",),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "a datetime column is reported as strings or not at all",
        "skfedida/_validation.py",
        '            if getattr(dtype, "kind", None) in ("M", "m"):',
        "            if False:",
        ("tests/test_validation.py",),
        features=TREES_FEATURES,
    ),
    Mutant(
        "a partition-id outside the range reaches a KeyError",
        "skfedida/flower/_server_app.py",
        "        if not 0 <= k < n_partitions:",
        "        if k < 0:",
        ("tests/test_bad_input_flower.py",),
        features=TREES_FEATURES,
    ),
    Mutant(
        "bin summaries are not held to the others' range",
        "skfedida/ensemble/_binning.py",
        "        across=summary_range_problems,",
        "        across=None,",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "an infinite extreme is compared with the others' range",
        TREE_REPLIES,
        "            np.where(np.isfinite(high), high, np.nan),",
        "            high,",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "a rule across the clients' answers is ignored",
        BOOSTING,
        "            problems = [(k, found.get(k, problem)) "
        "for k, problem in problems]",
        "            pass",
        CONSISTENCY_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "the ledger keeps only the first pivot of each run of counts",
        TREE_REPLIES,
        "        ends = np.concatenate(([True], changes)) | np.concatenate("
        "(changes, [True]))",
        "        ends = np.concatenate(([True], changes))",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "a pivot asked again may get another count",
        TREE_REPLIES,
        "    twice = np.flatnonzero(same & (pivots[1:] == pivots[:-1]) & "
        "(np.abs(steps) > slack))",
        "    twice = np.flatnonzero(same & (pivots[1:] == pivots[:-1]) & "
        "(steps != steps))",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "a small client's counts at its values need not end at its count",
        TREE_REPLIES,
        "np.any(counts[1:] <= counts[:-1]) or counts[-1] != n[j]",
        "np.any(counts[1:] <= counts[:-1])",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
    Mutant(
        "a client's empty bins are checked on the first client's histograms",
        TREE_REPLIES,
        "        raw[i] = raw_records(histogram.reshape(-1))",
        "        raw[i] = raw_records(histograms[0].reshape(-1))",
        GATE_TESTS,
        features=TREES_FEATURES,
    ),
]
