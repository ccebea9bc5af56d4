"""Mutants written from the source alone, without reading the tests.

Each is a small mistake a developer could make in the package, found by
reading ``skfedida/`` and its documentation only; the ``tests`` of each are a
guess from the test files' names. Their kill rate estimates how well the
suite catches mistakes nobody wrote a test for.
"""

from ._base import Mutant

_METRICS = (
    "tests/test_metrics.py",
    "tests/test_metrics_parity.py",
    "tests/test_bad_input_metrics.py",
)
_OPERATING_POINT = (
    "tests/test_operating_point.py",
    "tests/test_exact_operating_point.py",
)
_SCORERS = ("tests/test_scorers.py", "tests/test_model_selection.py")
_MULTICLASS = ("tests/test_multiclass.py", "tests/test_metrics_multiclass.py")
_AGGREGATION = ("tests/test_aggregation.py", "tests/test_federated.py")
_PRIVACY = ("tests/test_update_bounds.py", "tests/test_federated.py")
_EVALUATION = ("tests/test_intervals.py", "tests/test_operating_point.py")
_GATE = (
    "tests/test_replies.py",
    "tests/test_reply_gate.py",
    "tests/test_reply_gate_variants.py",
)
_FEDERATED = ("tests/test_federated.py", "tests/test_determinism.py")
_FLOWER = (
    "tests/test_flower.py",
    "tests/test_postprocessing_flower.py",
    "tests/test_result_file.py",
)
_SAMPLER = ("tests/test_over_sampling.py", "tests/test_minibatch_resampling.py")
_PREPROCESSING = ("tests/test_preprocessing.py", "tests/test_reply_gate.py")
_POSTPROCESSING = ("tests/test_postprocessing.py",)
_PENALTY = ("tests/test_penalty.py", "tests/test_penalty_large_k.py")
_ESTIMATORS = (
    "tests/test_fair_estimators.py",
    "tests/test_data_boundary.py",
    "tests/test_bad_input_estimators.py",
)
_SELECTION = ("tests/test_model_selection.py",)

_ALL_DISPARITIES = (
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "false_positive_rate_difference",
    "true_positive_rate_difference",
    "positive_predictive_value_difference",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "equal_opportunity_difference",
    "fairness_summary",
    "group_report",
)

MUTANTS = [
    # -- metrics --------------------------------------------------------------
    Mutant(
        name="blind: min_group_size drops groups of exactly min_group_size rows",
        where="rate",
        original="(self.sums[count] >= self.min_group_size)",
        mutated="(self.sums[count] > self.min_group_size)",
        tests=_METRICS,
        features=(*_ALL_DISPARITIES, "evaluate_clients"),
    ),
    Mutant(
        name="blind: selection_rate ignores sample_weight",
        where="selection_rate",
        original="return float(np.average(predicted, weights=weight))",
        mutated="return float(np.mean(predicted))",
        tests=(*_METRICS, *_SCORERS),
        features=("selection_rate",),
    ),
    Mutant(
        name="blind: federated_threshold keeps the tied block when it should not",
        where="federated_threshold",
        original="cut = whole if point.tie_probability >= 0.5 else none",
        mutated="cut = whole if point.tie_probability < 0.5 else none",
        tests=_OPERATING_POINT,
        features=("federated_threshold",),
    ),
    Mutant(
        name="blind: threshold scorer turns the scores around for the last class",
        where="_FairnessScorer._score",
        original='kwargs["flip"] = bool(positive != last)',
        mutated='kwargs["flip"] = bool(positive == last)',
        tests=(*_SCORERS, *_OPERATING_POINT),
        features=("make_fairness_scorer", "make_tradeoff_scorer"),
    ),
    Mutant(
        name="blind: tradeoff scorer subtracts the ratio itself, not 1 - ratio",
        where="_TradeoffScorer._score",
        original="else 1.0 - signed",
        mutated="else signed",
        tests=_SCORERS,
        features=("make_tradeoff_scorer",),
    ),
    Mutant(
        name="blind: multi-class AUROC is NaN when the rows lack a class",
        where="ovr_roc_auc",
        original="return float(np.nanmean(per_class)), per_class",
        mutated="return float(np.mean(per_class)), per_class",
        tests=(*_MULTICLASS, "tests/test_federated.py"),
        features=("evaluate_clients", "FederatedEstimator", "reply:evaluation"),
    ),
    # -- federated ------------------------------------------------------------
    Mutant(
        name="blind: FairFed raises the weight of clients far from the federation",
        where="FairFed.aggregate",
        original="omega - self.beta * (distance - distance.mean())",
        mutated="omega + self.beta * (distance - distance.mean())",
        tests=_AGGREGATION,
        features=("FairFed",),
    ),
    Mutant(
        name="blind: QFedAvg steps away from the clients' updates",
        where="QFedAvg.aggregate",
        original="(np.subtract(g, w) * lipschitz)",
        mutated="(np.subtract(w, g) * lipschitz)",
        tests=_AGGREGATION,
        features=("QFedAvg",),
    ),
    Mutant(
        name="blind: DP noise re-uses one seed every round",
        where="noise_stream",
        original="[int(dp.noise_seed), int(round_number), 0x5EED]",
        mutated="[int(dp.noise_seed), 0x5EED]",
        tests=_PRIVACY,
        features=("DifferentialPrivacy", "FederatedEstimator"),
    ),
    Mutant(
        name="blind: update clipping also stretches short updates to the bound",
        where="_clipped",
        original="scale = min(1.0, bound / norm) if norm > 0 else 1.0",
        mutated="scale = bound / norm if norm > 0 else 1.0",
        tests=_PRIVACY,
        features=("FederatedEstimator", "DifferentialPrivacy", "make_server_app"),
    ),
    Mutant(
        name="blind: evaluate_clients summary sd divides by n, not n - 1",
        where="evaluate_clients",
        original='"sd": values.std(ddof=1),',
        mutated='"sd": values.std(ddof=0),',
        tests=_EVALUATION,
        features=("evaluate_clients",),
    ),
    Mutant(
        name="blind: the gate refuses a count equal to the rows it counts",
        where="count_array",
        original="np.any(as_float > at_most)",
        mutated="np.any(as_float >= at_most)",
        tests=(*_GATE, "tests/test_preprocessing.py"),
        features=(
            "reply:initialisation",
            "reply:group_declaration",
            "reply:fairness_report",
            "reply:histogram",
            "reply:standard_scaler",
            "reply:simple_imputer",
            "FederatedEstimator",
        ),
    ),
    Mutant(
        name="blind: a client's extremes are compared with a range that holds them",
        where="range_problem",
        original="others = [extremes[i] for i in extremes if i != k]",
        mutated="others = [extremes[i] for i in extremes]",
        tests=(*_PREPROCESSING, "tests/test_reply_gate_variants.py"),
        features=(
            "reply:standard_scaler",
            "reply:min_max_scaler",
            "reply:simple_imputer",
            "FederatedStandardScaler",
            "FederatedMinMaxScaler",
        ),
    ),
    Mutant(
        name="blind: minibatch prior weights are the inverse of the correction",
        where="_minibatch_prior_weights",
        original=(
            "ratio = np.divide(before, after, out=np.ones_like(before), "
            "where=after > 0)"
        ),
        mutated=(
            "ratio = np.divide(after, before, out=np.ones_like(before), "
            "where=after > 0)"
        ),
        tests=("tests/test_minibatch_resampling.py", *_FEDERATED),
        features=("FederatedEstimator", "make_fedida"),
    ),
    Mutant(
        name="blind: a client trains every round from the same seed",
        where="_round_seed",
        original="np.random.SeedSequence([int(client_seed), round_])",
        mutated="np.random.SeedSequence([int(client_seed)])",
        tests=_FEDERATED,
        features=("FederatedEstimator", "make_client_app"),
    ),
    Mutant(
        name="blind: rounds stopped early still count as run",
        where="RoundServer.run",
        original='"rounds": first_round + rounds_run,',
        mutated='"rounds": first_round + n_rounds,',
        tests=("tests/test_callbacks.py", *_FEDERATED),
        features=("FederatedEstimator", "DifferentialPrivacy"),
    ),
    Mutant(
        name="blind: federated_metrics_ averages clients unweighted",
        where="record_validation",
        original="reports[k], rows[k] = report, held_out.n",
        mutated="reports[k], rows[k] = report, 1.0",
        tests=_FEDERATED,
        features=("FederatedEstimator",),
    ),
    Mutant(
        name="blind: a Flower client personalises from the previous round's seed",
        where="FederationPlan._personalise",
        original="self.federation.personalization_steps, seed, round_",
        mutated="self.federation.personalization_steps, seed, round_ - 1",
        tests=("tests/test_flower.py",),
        features=("make_client_app",),
    ),
    Mutant(
        name="blind: make_fedida does not pass batch_size to the federation",
        where="make_fedida",
        original="        resample=resample,\n        batch_size=batch_size,\n",
        mutated="        resample=resample,\n",
        tests=(*_SELECTION, "tests/test_federated.py"),
        features=("make_fedida",),
    ),
    Mutant(
        name="blind: ClientStratifiedKFold ignores the outcome",
        where="ClientStratifiedKFold.split",
        original=(
            "outcome = np.zeros(len(X), dtype=int) if y is None else np.asarray(y)"
        ),
        mutated="outcome = np.zeros(len(X), dtype=int)",
        tests=(*_SELECTION, "tests/test_federated.py"),
        features=("ClientStratifiedKFold",),
    ),
    Mutant(
        name="blind: n_samples_seen of SGDClassifier is off by one",
        where="n_samples_seen",
        original="return int(estimator.t_) - 1",
        mutated="return int(estimator.t_)",
        tests=("tests/test_parameters.py",),
        features=("n_samples_seen",),
    ),
    # -- over-sampling --------------------------------------------------------
    Mutant(
        name="blind: ROSE bandwidth with Silverman's exponent 1/(p+2)",
        where="_silverman_factor",
        original="** (1.0 / (n_noised + 4))",
        mutated="** (1.0 / (n_noised + 2))",
        tests=_SAMPLER,
        features=("FairnessAwareROSE",),
    ),
    Mutant(
        name="blind: covariance='full' divides by n - 1",
        where="_noise",
        original="covariance = centred.T @ centred / X_group.shape[0]",
        mutated="covariance = centred.T @ centred / (X_group.shape[0] - 1)",
        tests=_SAMPLER,
        features=("FairnessAwareROSE",),
    ),
    Mutant(
        name="blind: vectorised minibatches cut subgroups with undersample=False",
        where="_subgroup_sizes",
        original="kept = np.minimum(counts, target) if undersample else counts",
        mutated="kept = np.minimum(counts, target)",
        tests=_SAMPLER,
        features=("FairnessAwareROSE", "FederatedEstimator"),
    ),
    # -- flower ---------------------------------------------------------------
    Mutant(
        name="blind: load_result accepts an unsigned file when given a key",
        where="load_result",
        original=(
            "        if key is not None:\n"
            "            raise ValueError(\n"
            '                f"{name!r} is not signed, but key= was given: it may '
            'have been "\n'
            '                "replaced by a file written without the key. It was '
            'not loaded."\n'
            "            )\n"
        ),
        mutated="",
        tests=("tests/test_result_file.py", "tests/test_flower.py"),
        features=("load_result",),
    ),
    Mutant(
        name="blind: the ServerApp draws DP noise of the previous round",
        where="RoundEngine.aggregate",
        original="noise_rng=noise_stream(self.dp, round_number),",
        mutated="noise_rng=noise_stream(self.dp, round_number - 1),",
        tests=(*_PRIVACY, *_FLOWER),
        features=("make_server_app", "DifferentialPrivacy"),
        equivalent=(
            "since issue 33 both backends draw a round's noise in "
            "RoundEngine.aggregate, so the shift moves both alike and every round "
            "still has its own stream; which seed-sequence a round's noise "
            "comes from is not a contract (noise_seed only makes a run "
            "reproducible). The mistake this mutant stood for, one backend "
            "drawing another round's noise than the other, can no longer be "
            "written."
        ),
    ),
    Mutant(
        name="blind: the ClientApp trains round k with round k + 1's seed",
        where="ClientNode.train",
        original="            seed,\n            server_round - 1,\n",
        mutated="            seed,\n            server_round,\n",
        tests=_FLOWER,
        features=("make_client_app", "run_in_process"),
    ),
    # -- preprocessing --------------------------------------------------------
    Mutant(
        name="blind: FederatedStandardScaler variance divides by n - 1",
        where="FederatedStandardScaler._fit_rounds",
        original="squares / np.maximum(n, 1) - correction**2",
        mutated="squares / np.maximum(n - 1, 1) - correction**2",
        tests=_PREPROCESSING,
        features=("FederatedStandardScaler", "reply:standard_scaler"),
    ),
    Mutant(
        name="blind: imputer median of an even count takes the upper middle only",
        where="_median_rounds",
        original="for rank in sorted({(int(n[j]) - 1) // 2, int(n[j]) // 2}):",
        mutated="for rank in sorted({int(n[j]) // 2}):",
        tests=_PREPROCESSING,
        features=("FederatedSimpleImputer", "reply:simple_imputer"),
    ),
    Mutant(
        name="blind: a client left out of one transformer answers the next",
        where="answers",
        original=(
            "asked = {k: reply for k, reply in enumerate(replies) "
            "if k not in gate.left_out}"
        ),
        mutated="asked = dict(enumerate(replies))",
        tests=(*_PREPROCESSING, "tests/test_reply_gate_variants.py"),
        features=(
            "FederatedStandardScaler",
            "FederatedOneHotEncoder",
            "FederatedEstimator",
        ),
    ),
    # -- postprocessing -------------------------------------------------------
    Mutant(
        name="blind: threshold optimizer weighs every group alike in the objective",
        where="_solve",
        original="weights = sizes / sizes.sum()",
        mutated="weights = np.full(n_groups, 1.0 / n_groups)",
        tests=_POSTPROCESSING,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        name="blind: balanced accuracy adds the FPR instead of the TNR",
        where="_solve",
        original="y_obj = 0.5 * (tpr + 1.0 - fpr)",
        mutated="y_obj = 0.5 * (tpr + fpr)",
        tests=_POSTPROCESSING,
        features=("FederatedThresholdOptimizer",),
    ),
    # -- estimators -----------------------------------------------------------
    Mutant(
        name="blind: standardized penalty's variance gradient lacks its factor 2",
        where="_standardized_1d",
        original="variance_gradient = 2.0 * residual / total",
        mutated="variance_gradient = residual / total",
        tests=_PENALTY,
        features=(
            "standardized_group_penalty",
            "FairPenaltyLogisticRegression",
            "FairMLPClassifier",
        ),
    ),
    Mutant(
        name="blind: the log-loss gradient ignores sample_weight",
        where="BaseFairClassifier._objective",
        original="score_gradient = weight * (expit(scores) - y) / total",
        mutated="score_gradient = (expit(scores) - y) / total",
        tests=_ESTIMATORS,
        features=("FairPenaltyLogisticRegression", "FairMLPClassifier"),
    ),
    Mutant(
        name="blind: fit's gradient multiplies by the column units",
        where="fun",
        original="flat = (gradients[0] / units).ravel()",
        mutated="flat = (gradients[0] * units).ravel()",
        tests=_ESTIMATORS,
        features=("FairPenaltyLogisticRegression",),
    ),
    Mutant(
        name="blind: early stopping keeps the last epoch, not the best",
        where="FairMLPClassifier.fit",
        original=(
            "        if best_params is not None:\n            params = best_params\n"
        ),
        mutated="",
        tests=_ESTIMATORS,
        features=("FairMLPClassifier",),
    ),
    Mutant(
        name="blind: Adam's bias correction without the square root",
        where="_Adam.step",
        original=(
            "correction = np.sqrt(1 - self.beta_2**self.t) / (1 - self.beta_1**self.t)"
        ),
        mutated="correction = (1 - self.beta_2**self.t) / (1 - self.beta_1**self.t)",
        tests=_ESTIMATORS,
        features=("FairMLPClassifier",),
    ),
    Mutant(
        name="blind: a column position equal to n_features wraps to column 0",
        where="column_positions",
        original="if not -n_features <= key < n_features:",
        mutated="if not -n_features <= key <= n_features:",
        tests=("tests/test_groups.py", "tests/test_bad_input.py"),
        features=(
            "FairPenaltyLogisticRegression",
            "FairnessAwareROSE",
            "FederatedEstimator",
        ),
    ),
    Mutant(
        name="blind: negative float64 sample weights pass the fast check",
        where="sample_weight_of",
        original="        and not (sample_weight < 0).any()\n",
        mutated="",
        tests=("tests/test_bad_input_estimators.py", "tests/test_fair_estimators.py"),
        features=("FairPenaltyLogisticRegression", "FairMLPClassifier"),
    ),
    # -- model selection ------------------------------------------------------
    Mutant(
        name="blind: lambda_range's bound includes the lambda that failed",
        where="lambda_range",
        original=(
            "bound = lambdas[len(scores) - 2] if stopped else lambdas[len(scores) - 1]"
        ),
        mutated="bound = lambdas[len(scores) - 1]",
        tests=_SELECTION,
        features=("lambda_range",),
    ),
    Mutant(
        name="blind: fairest_within picks the best performance among the eligible",
        where="_FairestWithin.__call__",
        original="order = np.lexsort((-perf[eligible], -fair[eligible]))",
        mutated="order = np.lexsort((-fair[eligible], -perf[eligible]))",
        tests=_SELECTION,
        features=("fairest_within",),
    ),
    # -- datasets -------------------------------------------------------------
    Mutant(
        name="blind: client sizes round up the smallest remainders",
        where="_client_sizes",
        original='np.argsort(sizes - exact, kind="stable")',
        mutated='np.argsort(exact - sizes, kind="stable")',
        tests=("tests/test_datasets.py",),
        features=("make_federated_classification", "make_roc_like"),
    ),
    Mutant(
        name="blind: load_adult(as_frame=False) orders dummies by first appearance",
        where="_one_hot",
        original="categories = sorted(set(columns[name].tolist()))",
        mutated="categories = list(dict.fromkeys(columns[name].tolist()))",
        tests=("tests/test_datasets.py",),
        features=("load_adult",),
    ),
    # -- plotting -------------------------------------------------------------
    Mutant(
        name="blind: TradeoffDisplay sorts the values but not the disparities",
        where="from_cv_results",
        original="                disparity[order],\n",
        mutated="                disparity,\n",
        tests=("tests/test_plotting.py",),
        features=("TradeoffDisplay",),
    ),
    # -- warnings -------------------------------------------------------------
    Mutant(
        name="blind: an outlying update is compared with a median that holds it",
        where="warn_if_outlying_updates",
        original="others = _median_of_others(values)",
        mutated="others = np.full(values.shape, np.median(values))",
        tests=("tests/test_warnings.py", *_FEDERATED),
        features=("OutlyingUpdateWarning", "FederatedEstimator"),
    ),
]
