"""Blind mutants, second set: written from the package source alone.

Written without reading the tests or the other mutants, to estimate how well
the suite catches mistakes nobody wrote a test for.
"""

from ._base import Mutant

_METRICS = (
    "tests/test_metrics.py",
    "tests/test_metrics_parity.py",
    "tests/test_metrics_multiclass.py",
    "tests/test_bad_input_metrics.py",
)
_SCORERS = ("tests/test_scorers.py", "tests/test_operating_point.py")
_OPERATING_POINT = (
    "tests/test_operating_point.py",
    "tests/test_exact_operating_point.py",
)
_EVALUATION = (
    "tests/test_intervals.py",
    "tests/test_operating_point.py",
    "tests/test_federated.py",
)
_FEDERATED = (
    "tests/test_federated.py",
    "tests/test_aggregation.py",
    "tests/test_determinism.py",
    "tests/test_guard_federated.py",
)
_CLIENT = (
    "tests/test_federated.py",
    "tests/test_guard_client.py",
    "tests/test_minibatch_resampling.py",
    "tests/test_determinism.py",
)
_PRIVACY = ("tests/test_update_bounds.py", "tests/test_federated.py")
_REPLIES = (
    "tests/test_replies.py",
    "tests/test_reply_gate.py",
    "tests/test_reply_gate_variants.py",
)
_FLOWER = ("tests/test_flower.py", "tests/test_guard_flower.py")
_PREPROCESSING = (
    "tests/test_preprocessing.py",
    "tests/test_guard_preprocessing_replies.py",
)
_POSTPROCESSING = (
    "tests/test_postprocessing.py",
    "tests/test_postprocessing_flower.py",
)
_PENALTY = ("tests/test_penalty.py", "tests/test_penalty_large_k.py")
_ESTIMATORS = (
    "tests/test_fair_estimators.py",
    "tests/test_guard_estimators.py",
    "tests/test_bad_input_estimators.py",
)
_SAMPLER = ("tests/test_over_sampling.py", "tests/test_minibatch_resampling.py")

MUTANTS = [
    # -- metrics ---------------------------------------------------------------
    Mutant(
        name="blind2: min_group_size leaves out groups of exactly that many rows",
        where="rate",
        original="usable = (den > 0) & (self.sums[count] >= self.min_group_size)",
        mutated="usable = (den > 0) & (self.sums[count] > self.min_group_size)",
        tests=_METRICS,
        features=(
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "fairness_summary",
            "group_report",
        ),
    ),
    Mutant(
        name="blind2: soft=True accepts negative probabilities",
        where="_validated",
        original="if not np.all(np.isfinite(y_pred)) or y_pred.min() < 0 "
        "or y_pred.max() > 1:",
        mutated="if not np.all(np.isfinite(y_pred)) or y_pred.max() > 1:",
        tests=_METRICS,
        features=(
            "demographic_parity_difference",
            "fairness_summary",
            "group_report",
            "make_fairness_scorer",
        ),
    ),
    Mutant(
        name="blind2: group rates divide weighted counts by unweighted row counts",
        where="_class_group_sums",
        original='"weight": total(weight),',
        mutated='"weight": np.bincount(codes, minlength=n_groups).astype(float),',
        tests=_METRICS,
        features=(
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "false_positive_rate_difference",
            "fairness_summary",
            "group_report",
            "evaluate_clients",
        ),
    ),
    Mutant(
        name="blind2: threshold_at_rate interpolates from the wrong end of the bin",
        where="threshold_at_rate",
        original="fraction = 0.0 if inside <= 0 else (above[j] - wanted) / inside",
        mutated="fraction = 0.0 if inside <= 0 else (wanted - above[j + 1]) / inside",
        tests=_OPERATING_POINT,
        features=("threshold_at_rate",),
    ),
    Mutant(
        name="blind2: OperatingPoint.decisions rounds the tied rows' count "
        "instead of drawing the remainder",
        where="decisions",
        original="n_chosen = int(np.floor(wanted)) + int(rng.uniform() < wanted % 1)",
        mutated="n_chosen = int(np.round(wanted))",
        tests=_OPERATING_POINT + _SCORERS,
        features=("OperatingPoint", "make_fairness_scorer"),
    ),
    Mutant(
        name="blind2: make_tradeoff_scorer subtracts the signed score, not the "
        "disparity (adds a difference back)",
        where="_TradeoffScorer._score",
        original="return float(performance - self._weight * disparity)",
        mutated="return float(performance - self._weight * signed)",
        tests=_SCORERS,
        features=("make_tradeoff_scorer",),
    ),
    Mutant(
        name="blind2: multi-class Brier score ignores the row weights (bootstrap "
        "draws all equal the point value)",
        where="multiclass_brier",
        original="return float(np.dot(weight, errors) / weight.sum())",
        mutated="return float(np.mean(errors))",
        tests=("tests/test_multiclass.py", "tests/test_intervals.py"),
        features=("evaluate_clients",),
    ),
    # -- federated: aggregation, privacy, evaluation ---------------------------
    Mutant(
        name="blind2: WeightedMean ignores the clients' row counts",
        where="WeightedMean.aggregate",
        original="return _weighted_sum(parameter_lists, weights / weights.sum())",
        mutated="return _weighted_sum(parameter_lists, "
        "np.full(len(weights), 1.0 / len(weights)))",
        tests=_FEDERATED,
        features=("WeightedMean", "FederatedEstimator"),
    ),
    Mutant(
        name="blind2: TrimmedMean cuts one value too many from the top",
        where="_trim_mean",
        original="uppercut = nobs - lowercut",
        mutated="uppercut = nobs - lowercut - 1",
        tests=_FEDERATED,
        features=("TrimmedMean", "FederatedEstimator"),
    ),
    Mutant(
        name="blind2: FairFed measures no gap with exactly two groups",
        where="count_gap",
        original="float(np.ptp(rates[defined])) if defined.sum() >= 2 else 0.0",
        mutated="float(np.ptp(rates[defined])) if defined.sum() > 2 else 0.0",
        tests=_FEDERATED,
        features=("FairFed",),
    ),
    Mutant(
        name="blind2: DP noise stream re-used: the same noise every round",
        where="noise_stream",
        original="return np.random.default_rng("
        "[int(dp.noise_seed), int(round_number), 0x5EED])",
        mutated="return np.random.default_rng([int(dp.noise_seed), 0x5EED])",
        tests=_PRIVACY,
        features=("DifferentialPrivacy", "FederatedEstimator"),
    ),
    Mutant(
        name="blind2: privacy_.epsilon_by_round starts at round 0 (off by one round)",
        where="spent",
        original="by_round = np.array([self.epsilon(r) for r in "
        "range(1, int(n_rounds) + 1)])",
        mutated="by_round = np.array([self.epsilon(r) for r in range(int(n_rounds))])",
        tests=_PRIVACY,
        features=("DifferentialPrivacy", "FederatedEstimator"),
    ),
    Mutant(
        name="blind2: BCa bias correction counts draws tied with the estimate as "
        "above it",
        where="_bca_interval",
        original="np.count_nonzero(draws < estimate) + "
        "np.count_nonzero(draws <= estimate)",
        mutated="2 * np.count_nonzero(draws < estimate)",
        tests=_EVALUATION,
        features=("evaluate_clients",),
    ),
    # -- federated: the reply gate ---------------------------------------------
    Mutant(
        name="blind2: a training reply may report fewer rows than the client declared",
        where="training_reply_problem",
        original="if declared_rows is not None and int(n_rows) != int(declared_rows):",
        mutated="if declared_rows is not None and int(n_rows) > int(declared_rows):",
        tests=_REPLIES,
        features=("FederatedEstimator", "make_server_app"),
    ),
    Mutant(
        name="blind2: federated_metrics_ mean ignores the clients' validation rows",
        where="claims_summary",
        original="summary[name] = float("
        "np.average(column[defined], weights=weights[defined]))",
        mutated="summary[name] = float(np.mean(column[defined]))",
        tests=(*_REPLIES, "tests/test_federated.py", "tests/test_flower.py"),
        features=("FederatedEstimator", "make_server_app"),
    ),
    Mutant(
        name="blind2: statistics range check scales by the others' width only, "
        "flagging honest clients far from zero",
        where="_beyond",
        original="width = np.maximum(hi - lo, np.maximum(np.abs(lo), np.abs(hi)))",
        mutated="width = hi - lo",
        tests=_PREPROCESSING + _REPLIES,
        features=(
            "FederatedStandardScaler",
            "FederatedMinMaxScaler",
            "FederatedSimpleImputer",
        ),
    ),
    # -- federated: client, server, estimator ----------------------------------
    Mutant(
        name="blind2: prior-correction weights normalise the resampled shares by "
        "the original row count",
        where="_prior_weights",
        original="    after = after / after.sum()\n",
        mutated="    after = after / before.sum()\n",
        tests=_CLIENT,
        features=("FederatedEstimator",),
    ),
    Mutant(
        name="blind2: a client's round seed ignores the round (every round "
        "re-uses the same stream)",
        where="_round_seed",
        original="return int(np.random.SeedSequence([int(client_seed), round_])"
        ".generate_state(1)[0])",
        mutated="return int(np.random.SeedSequence([int(client_seed)])"
        ".generate_state(1)[0])",
        tests=_CLIENT,
        features=("FederatedEstimator", "make_client_app"),
    ),
    Mutant(
        name="blind2: in-process DP noise drawn for round r - 1 (Flower's is r)",
        where="RoundEngine.aggregate",
        original="noise_rng=noise_stream(self.dp, round_number),",
        mutated="noise_rng=noise_stream(self.dp, round_number - 1),",
        tests=(*_PRIVACY, "tests/test_flower.py"),
        features=("DifferentialPrivacy", "FederatedEstimator"),
    ),
    Mutant(
        name="blind2: local_epochs given per client accepts 0 epochs",
        where="_client_epochs",
        original="if np.any(epochs < 1):",
        mutated="if np.any(epochs < 0):",
        tests=(*_FEDERATED, "tests/test_validate_params.py"),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name="blind2: on Flower every client runs client 0's local_epochs",
        where="client",
        original="epochs = int(federation._client_epochs(n_partitions)[partition])",
        mutated="epochs = int(federation._client_epochs(n_partitions)[0])",
        tests=_FLOWER,
        features=("make_client_app",),
    ),
    Mutant(
        name="blind2: ClientStratifiedKFold stratifies by client only, not outcome",
        where="ClientStratifiedKFold.split",
        original="np.unique(outcome, return_inverse=True)[1],",
        mutated="np.unique(clients, return_inverse=True)[1],",
        tests=("tests/test_model_selection.py", "tests/test_federated.py"),
        features=("ClientStratifiedKFold",),
    ),
    Mutant(
        name="blind2: set_parameters accepts arrays of the wrong shapes",
        where="assign_parameters",
        original="    if len(parameters) != len(current) or any(\n"
        "        np.shape(new) != np.shape(old)\n"
        "        for new, old in zip(parameters, current, strict=False)\n"
        "    ):\n",
        mutated="    if len(parameters) != len(current):\n",
        tests=("tests/test_parameters.py", *_FEDERATED),
        features=("set_parameters",),
    ),
    Mutant(
        name="blind2: a pipeline federation takes n_features_in_ of the "
        "transformed rows",
        where="adopt",
        original='and name not in ("n_features_in_", "feature_names_in_")',
        mutated='and name not in ("feature_names_in_",)',
        tests=(*_PREPROCESSING, "tests/test_federated.py"),
        features=("FederatedEstimator", "FederatedOneHotEncoder"),
    ),
    # -- over-sampling -----------------------------------------------------------
    Mutant(
        name="blind2: Silverman's bandwidth exponent 1/(p+2) instead of 1/(p+4)",
        where="_silverman_factor",
        original="return (4.0 / ((n_noised + 2) * n_samples)) "
        "** (1.0 / (n_noised + 4))",
        mutated="return (4.0 / ((n_noised + 2) * n_samples)) ** (1.0 / (n_noised + 2))",
        tests=_SAMPLER,
        features=("FairnessAwareROSE",),
    ),
    Mutant(
        name="blind2: ROSE noise uses the sample (n - 1) standard deviation",
        where="_noise",
        original="std = np.std(X_group, axis=0)",
        mutated="std = np.std(X_group, axis=0, ddof=1)",
        tests=_SAMPLER,
        features=("FairnessAwareROSE",),
    ),
    Mutant(
        name="blind2: vectorised n_target='mean' averages over every (group, "
        "label) cell, absent ones included",
        where="_subgroup_targets",
        original="value = counts.sum(axis=1) / np.maximum(n_present, 1)",
        mutated="value = counts.sum(axis=1) / counts.shape[1]",
        tests=("tests/test_minibatch_resampling.py", "tests/test_federated.py"),
        features=("FairnessAwareROSE", "FederatedEstimator"),
    ),
    # -- flower --------------------------------------------------------------------
    Mutant(
        name="blind2: statistics codec no longer refuses non-string dict keys "
        "(JSON turns them into strings)",
        where="_codec._plain",
        original="        if not all(isinstance(key, str) for key in value):\n"
        '            raise TypeError(f"Only string keys can be sent; got '
        '{list(value)}.")\n',
        mutated="",
        tests=_FLOWER + _PREPROCESSING,
        features=("make_client_app", "make_server_app"),
    ),
    Mutant(
        name="blind2: an empty result key is accepted",
        where="_key_bytes",
        original="if not isinstance(key, bytes) or not key:",
        mutated="if not isinstance(key, bytes):",
        tests=("tests/test_result_file.py", "tests/test_flower.py"),
        features=("load_result", "make_server_app"),
    ),
    Mutant(
        name="blind2: a client declares no groups for its held-out rows",
        where="group_declaration",
        original="    if train.held_out is not None:\n"
        '        sets.append(("held_out", train.held_out.groups))\n',
        mutated="",
        tests=_FLOWER + _POSTPROCESSING,
        features=("make_client_app", "FairFed", "FederatedThresholdOptimizer"),
    ),
    Mutant(
        name="blind2: InProcessGrid.replies stays empty (pulled replies not recorded)",
        where="pull_messages",
        original="        self.replies.extend(replies)\n",
        mutated="",
        tests=("tests/test_flower.py", "tests/test_guard_flower.py"),
        features=("InProcessGrid", "run_in_process"),
    ),
    Mutant(
        name="blind2: model-path is written after the next-to-last round",
        where="ClientNode.evaluate",
        original="if round_ == plan.n_rounds and node.record()",
        mutated="if round_ == plan.n_rounds - 1 and node.record()",
        tests=(*_FLOWER, "tests/flower/test_plain_flower_server.py"),
        features=("make_client_app",),
    ),
    Mutant(
        name="blind2: Flower class_prior_ ignores prior_aggregation (always mean)",
        where="run_federation",
        original="            federation.prior_aggregation,\n",
        mutated="",
        tests=_FLOWER,
        features=("make_server_app",),
    ),
    # -- preprocessing ---------------------------------------------------------------
    Mutant(
        name="blind2: FederatedStandardScaler variance divides by n - 1",
        where="FederatedStandardScaler._fit_rounds",
        original="var = np.where(n > 0, squares / np.maximum(n, 1) - correction**2, "
        "np.nan)",
        mutated="var = np.where(n > 0, squares / np.maximum(n - 1, 1) - "
        "correction**2, np.nan)",
        tests=_PREPROCESSING,
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        name="blind2: imputer's indicator keeps only features missing on every "
        "client (and for or)",
        where="FederatedSimpleImputer._fit_rounds",
        original="any_missing = np.logical_or.reduce",
        mutated="any_missing = np.logical_and.reduce",
        tests=_PREPROCESSING,
        features=("FederatedSimpleImputer",),
    ),
    Mutant(
        name="blind2: a ColumnTransformer's remainder is not looked at (not "
        "federated, and a stateful one not refused)",
        where="federated_transformers",
        original="return found + federated_transformers(tree.remainder, "
        'f"{path}[remainder]")',
        mutated="return found",
        tests=(*_PREPROCESSING, "tests/test_federated.py"),
        features=("FederatedStandardScaler", "FederatedEstimator"),
    ),
    # -- postprocessing --------------------------------------------------------------
    Mutant(
        name="blind2: predict ignores its random_state argument",
        where="FederatedThresholdOptimizer.predict",
        original="self.random_state if random_state is None else random_state",
        mutated="self.random_state",
        tests=_POSTPROCESSING,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        name="blind2: equalized-odds accuracy weighs TPR by negatives and FPR by "
        "positives",
        where="_solve_equalized_odds",
        original="score = (n_positive * lowest + n_negative * (1.0 - grid)) / n",
        mutated="score = (n_negative * lowest + n_positive * (1.0 - grid)) / n",
        tests=_POSTPROCESSING,
        features=("FederatedThresholdOptimizer",),
    ),
    # -- penalties and estimators ------------------------------------------------------
    Mutant(
        name="blind2: individual penalty gradient forgets to leave out the row's "
        "own cell",
        where="_individual_1d",
        original="offset = (2.0 / W) * (S_y - S)",
        mutated="offset = (2.0 / W) * S_y",
        tests=_PENALTY + _ESTIMATORS,
        features=("individual_penalty", "FairPenaltyLogisticRegression"),
    ),
    Mutant(
        name="blind2: standardized penalty's label means ignore sample_weight",
        where="_standardized_1d",
        original="label_sum = np.bincount(labels, weights=weight * scores, "
        "minlength=cells.n_labels)",
        mutated="label_sum = np.bincount(labels, weights=scores, "
        "minlength=cells.n_labels)",
        tests=_PENALTY + _ESTIMATORS,
        features=(
            "standardized_group_penalty",
            "FairPenaltyLogisticRegression",
            "make_fedida",
        ),
    ),
    Mutant(
        name="blind2: L2 gradient is alpha * w instead of 2 alpha * w",
        where="BaseFairClassifier._objective",
        original="g += 2.0 * self.alpha * w",
        mutated="g += self.alpha * w",
        tests=(*_ESTIMATORS, "tests/test_sgd_compiled.py"),
        features=("FairPenaltyLogisticRegression", "FairMLPClassifier"),
    ),
    Mutant(
        name="blind2: the standardized penalty's start run does not count "
        "against max_iter",
        where="FairPenaltyLogisticRegression.fit",
        original='options["maxiter"] = max(self.max_iter - n_start, 1)',
        mutated='options["maxiter"] = self.max_iter',
        tests=_ESTIMATORS,
        features=("FairPenaltyLogisticRegression",),
    ),
    Mutant(
        name="blind2: early stopping keeps references, not copies, of the best "
        "parameters (restores the last epoch's)",
        where="FairMLPClassifier.fit",
        original="best_params = [w.copy() for w in params]",
        mutated="best_params = list(params)",
        tests=_ESTIMATORS,
        features=("FairMLPClassifier",),
    ),
    Mutant(
        name="blind2: NaN in an object array is not a missing value (labels, "
        "client ids)",
        where="missing_mask",
        original="return np.equal(values, None) | (values != values)",
        mutated="return np.equal(values, None)",
        tests=("tests/test_groups.py", "tests/test_bad_input.py", *_ESTIMATORS),
        features=("FederatedEstimator", "FairPenaltyLogisticRegression"),
    ),
    Mutant(
        name="blind2: the fast path for fitted estimators skips the finiteness "
        "check of X",
        where="checked_float_matrix",
        original='    if not get_config()["assume_finite"]:\n'
        '        assert_all_finite(X, input_name="X")\n',
        mutated="",
        tests=(*_ESTIMATORS, "tests/test_bad_input.py"),
        features=("FairPenaltyLogisticRegression", "FairMLPClassifier"),
    ),
    # -- model selection -------------------------------------------------------------
    Mutant(
        name="blind2: CoarseToFineSearchCV's fine grid has n_fine - 2 values",
        where="_run_search",
        original="fine = self._grid(left, right, self.n_fine + 2)[1:-1]",
        mutated="fine = self._grid(left, right, self.n_fine)",
        tests=("tests/test_model_selection.py",),
        features=("CoarseToFineSearchCV",),
    ),
    Mutant(
        name="blind2: CoarseToFineSearchCV's fine range wraps to the top when the "
        "best coarse value is the first",
        where="_run_search",
        original="left = coarse[max(i - 1, 0)]",
        mutated="left = coarse[i - 1]",
        tests=("tests/test_model_selection.py",),
        features=("CoarseToFineSearchCV",),
    ),
    # -- datasets --------------------------------------------------------------------
    Mutant(
        name="blind2: client sizes give the leftover rows to the smallest remainders",
        where="_client_sizes",
        original='sizes[np.argsort(sizes - exact, kind="stable")[:remainder]] += 1',
        mutated='sizes[np.argsort(exact - sizes, kind="stable")[:remainder]] += 1',
        tests=("tests/test_datasets.py",),
        features=("make_federated_classification", "make_roc_like"),
    ),
    Mutant(
        name="blind2: make_federated_classification accepts a prevalence above 1",
        where="_per_client_table",
        original="        or (not probabilities and np.any(table > 1))\n",
        mutated="",
        tests=("tests/test_datasets.py",),
        features=("make_federated_classification",),
    ),
    # -- plotting --------------------------------------------------------------------
    Mutant(
        name="blind2: TradeoffDisplay.from_cv_results leaves performance unsorted "
        "while values and disparity are sorted",
        where="from_cv_results",
        original='np.asarray(cv_results[f"mean_test_{performance}"])[order],',
        mutated='np.asarray(cv_results[f"mean_test_{performance}"]),',
        tests=("tests/test_plotting.py",),
        features=("TradeoffDisplay",),
    ),
]
