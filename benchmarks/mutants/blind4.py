"""Blind mutants, fourth set: written from the package source alone, without
reading the tests or the other mutants, after the tests for the third set's
survivors and while the bad-input audit was written (blind to this set).
"""

from ._base import Mutant

MUTANTS = [
    Mutant(
        name=(
            "blind4: TrimmedMean(beta=0.5) is accepted (with an even number "
            "of clients it cuts them all: a NaN model)"
        ),
        where="check_aggregation",
        original=(
            "isinstance(aggregation.beta, numbers.Real) and 0 <= aggregation.beta < 0.5"
        ),
        mutated=(
            "isinstance(aggregation.beta, numbers.Real) and 0 <= "
            "aggregation.beta <= 0.5"
        ),
        tests=(
            "tests/test_aggregation.py",
            "tests/test_bad_input_federation.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
            "tests/test_preprocessing.py",
            "tests/test_reply_gate.py",
            "tests/test_reply_gate_variants.py",
        ),
        features=("TrimmedMean", "FederatedEstimator"),
    ),
    Mutant(
        name=(
            "blind4: FairFed raises the weight of clients whose gap is far "
            "from the federation's"
        ),
        where="FairFed.aggregate",
        original=(
            "omega = np.clip(omega - self.beta * (distance - "
            "distance.mean()), 0.0, None)"
        ),
        mutated=(
            "omega = np.clip(omega + self.beta * (distance - "
            "distance.mean()), 0.0, None)"
        ),
        tests=(
            "tests/test_aggregation.py",
            "tests/test_bad_input_federation.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
            "tests/test_preprocessing.py",
            "tests/test_reply_gate.py",
            "tests/test_reply_gate_variants.py",
        ),
        features=("FairFed",),
    ),
    Mutant(
        name=(
            "blind4: prior_correction='weights' weighs resampled rows by q_c "
            "/ p_c instead of p_c / q_c"
        ),
        where="_prior_weights",
        original=(
            "ratio = np.divide(before, after, out=np.ones(n_classes), where=after > 0)"
        ),
        mutated=(
            "ratio = np.divide(after, before, out=np.ones(n_classes), where=before > 0)"
        ),
        tests=(
            "tests/test_bad_input.py",
            "tests/test_bad_input_federation.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_guard_client.py",
            "tests/test_minibatch_resampling.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
        ),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name=(
            "blind4: a per-client local_epochs holding 0 is accepted (that "
            "client never trains)"
        ),
        where="_client_epochs",
        original="if np.any(epochs < 1):",
        mutated="if np.any(epochs < 0):",
        tests=(
            "tests/test_aggregation.py",
            "tests/test_bad_input_federation.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_update_bounds.py",
            "tests/test_validate_params.py",
            "tests/test_warnings.py",
        ),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name=(
            "blind4: strategy='central' never takes the trained parameters "
            "(the model stays untrained)"
        ),
        where="RoundServer._aggregated",
        original='if engine.communicates or self.strategy == "central":',
        mutated="if engine.communicates:",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_callbacks.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_flower.py",
            "tests/test_guard_federated.py",
            "tests/test_replies.py",
            "tests/test_reply_gate.py",
            "tests/test_reply_gate_variants.py",
            "tests/test_update_bounds.py",
        ),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name="blind4: dp= is accepted with a median or trimmed-mean aggregation",
        where="check_update_bound",
        original="if not isinstance(aggregator, WeightedMean):",
        mutated="if aggregator is None:",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_update_bounds.py",
        ),
        features=("DifferentialPrivacy", "FederatedEstimator"),
    ),
    Mutant(
        name=(
            "blind4: max_update_norm stretches small updates up to the bound "
            "instead of only shortening long ones"
        ),
        where="_clipped",
        original="scale = min(1.0, bound / norm) if norm > 0 else 1.0",
        mutated="scale = bound / norm if norm > 0 else 1.0",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_update_bounds.py",
        ),
        features=("FederatedEstimator", "DifferentialPrivacy"),
    ),
    Mutant(
        name="blind4: evaluate_clients' summary sd is the population sd (ddof=0)",
        where="evaluate_clients",
        original='"sd": values.std(ddof=1),',
        mutated='"sd": values.std(ddof=0),',
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_exact_operating_point.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_intervals.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
        ),
        features=("evaluate_clients",),
    ),
    Mutant(
        name=(
            "blind4: federated_metrics_' <name>_median is NaN as soon as one "
            "client's metric is undefined"
        ),
        where="claims_summary",
        original='summary[f"{name}_median"] = float(np.median(column[defined]))',
        mutated='summary[f"{name}_median"] = float(np.median(column))',
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_federated.py",
            "tests/test_flower.py",
            "tests/test_preprocessing.py",
            "tests/test_replies.py",
            "tests/test_reply_gate.py",
            "tests/test_reply_gate_variants.py",
        ),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name=(
            "blind4: a client is refused when every other client's column "
            "holds only zeros"
        ),
        where="_beyond",
        original="scaled = width > 0",
        mutated="scaled = width >= 0",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_guard_preprocessing_replies.py",
            "tests/test_preprocessing.py",
            "tests/test_replies.py",
            "tests/test_reply_gate.py",
            "tests/test_reply_gate_variants.py",
        ),
        features=("FederatedStandardScaler", "FederatedMinMaxScaler"),
    ),
    Mutant(
        name=(
            "blind4: make_client_app(classes=...) refuses a client lacking a "
            "class and accepts labels outside classes"
        ),
        where="_classes",
        original="unknown = np.setdiff1d(present, classes)",
        mutated="unknown = np.setdiff1d(classes, present)",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
        ),
        features=("make_client_app",),
    ),
    Mutant(
        name=(
            "blind4: a Flower client seeds its round with the 1-based round "
            "number (not the in-process model)"
        ),
        where="ClientNode.train",
        original="            seed,\n            server_round - 1,\n",
        mutated="            seed,\n            server_round,\n",
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_result_file.py",
        ),
        features=("make_client_app", "run_in_process"),
    ),
    Mutant(
        name=(
            "blind4: the Flower server accepts a DP target_delta of 1 / "
            "n_clients or more"
        ),
        where="run_federation",
        original="    check_target_delta(federation.dp, n_clients)\n",
        mutated="",
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_result_file.py",
        ),
        features=("make_server_app", "DifferentialPrivacy"),
    ),
    Mutant(
        name="blind4: the run config's local-epochs is ignored by both Flower apps",
        where="RUN_CONFIG_PARAMETERS",
        original='"local-epochs": "local_epochs",',
        mutated='"local_epochs": "local_epochs",',
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_postprocessing.py",
            "tests/test_postprocessing_flower.py",
        ),
        features=("make_client_app", "make_server_app", "run_in_process"),
    ),
    Mutant(
        name=(
            "blind4: FederatedStandardScaler's var_ divides by n - 1 (not "
            "StandardScaler's)"
        ),
        where="FederatedStandardScaler._fit_rounds",
        original=(
            "var = np.where(n > 0, squares / np.maximum(n, 1) - correction**2, np.nan)"
        ),
        mutated=(
            "var = np.where(n > 0, squares / np.maximum(n - 1, 1) - "
            "correction**2, np.nan)"
        ),
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_guard_preprocessing_replies.py",
            "tests/test_preprocessing.py",
            "tests/test_reply_gate.py",
        ),
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        name=(
            "blind4: FederatedThresholdOptimizer's tolerance window is one "
            "grid step too narrow"
        ),
        where="_best_with_tolerance",
        original="width = int(np.floor(tolerance / (grid[1] - grid[0]) + 1e-9)) + 1",
        mutated="width = int(np.floor(tolerance / (grid[1] - grid[0]) + 1e-9))",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_postprocessing.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_reply_gate.py",
        ),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        name="blind4: min_group_size leaves out groups of exactly min_group_size rows",
        where="rate",
        original="usable = (den > 0) & (self.sums[count] >= self.min_group_size)",
        mutated="usable = (den > 0) & (self.sums[count] > self.min_group_size)",
        tests=(
            "tests/test_bad_input_metrics.py",
            "tests/test_bad_input_models.py",
            "tests/test_metrics.py",
            "tests/test_metrics_multiclass.py",
            "tests/test_metrics_parity.py",
            "tests/test_mutants.py",
            "tests/test_scorers.py",
        ),
        features=("demographic_parity_difference", "fairness_summary"),
    ),
    Mutant(
        name="blind4: soft=True accepts y_pred above 1",
        where="_validated",
        original=(
            "if not np.all(np.isfinite(y_pred)) or y_pred.min() < 0 or "
            "y_pred.max() > 1:"
        ),
        mutated="if not np.all(np.isfinite(y_pred)) or y_pred.min() < 0:",
        tests=(
            "tests/test_bad_input_metrics.py",
            "tests/test_bad_input_models.py",
            "tests/test_metrics.py",
            "tests/test_metrics_multiclass.py",
            "tests/test_metrics_parity.py",
            "tests/test_mutants.py",
            "tests/test_scorers.py",
        ),
        features=("demographic_parity_difference", "fairness_summary"),
    ),
    Mutant(
        name=(
            "blind4: the multi-class Brier score averages the squared errors "
            "over classes instead of summing"
        ),
        where="multiclass_brier",
        original="errors = np.sum((proba - truth) ** 2, axis=1)",
        mutated="errors = np.mean((proba - truth) ** 2, axis=1)",
        tests=(
            "tests/test_bad_input_models.py",
            "tests/test_federated.py",
            "tests/test_intervals.py",
            "tests/test_metrics_multiclass.py",
            "tests/test_multiclass.py",
        ),
        features=("evaluate_clients", "FederatedEstimator"),
    ),
    Mutant(
        name="blind4: threshold=1.0 is accepted (a rule that selects nobody)",
        where="check_threshold",
        original="and 0 < threshold < 1",
        mutated="and 0 < threshold <= 1",
        tests=(
            "tests/test_bad_input_metrics.py",
            "tests/test_bad_input_models.py",
            "tests/test_exact_operating_point.py",
            "tests/test_metrics.py",
            "tests/test_metrics_parity.py",
            "tests/test_model_selection.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
            "tests/test_scorers.py",
        ),
        features=("evaluate_clients", "make_fairness_scorer"),
    ),
    Mutant(
        name=(
            "blind4: make_tradeoff_scorer adds the disparity to the "
            "performance instead of subtracting it"
        ),
        where="_TradeoffScorer._score",
        original="disparity = -signed if self._fairness._sign < 0 else 1.0 - signed",
        mutated="disparity = signed if self._fairness._sign < 0 else 1.0 - signed",
        tests=(
            "tests/test_bad_input_models.py",
            "tests/test_exact_operating_point.py",
            "tests/test_metrics.py",
            "tests/test_metrics_multiclass.py",
            "tests/test_metrics_parity.py",
            "tests/test_model_selection.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
            "tests/test_scorers.py",
        ),
        features=("make_tradeoff_scorer",),
    ),
    Mutant(
        name=(
            "blind4: lambda_range's client bound is the lambda that failed, "
            "not the last one that held"
        ),
        where="lambda_range",
        original=(
            "bound = lambdas[len(scores) - 2] if stopped else lambdas[len(scores) - 1]"
        ),
        mutated="bound = lambdas[len(scores) - 1]",
        tests=(
            "tests/test_bad_input_models.py",
            "tests/test_model_selection.py",
            "tests/test_multiclass.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
            "tests/test_warnings.py",
        ),
        features=("lambda_range",),
    ),
    Mutant(
        name=(
            "blind4: FairnessAwareROSE accepts n_target of 0 for a subgroup "
            "(it is dropped)"
        ),
        where="_targets",
        original="if not isinstance(value, numbers.Integral) or value < 1:",
        mutated="if not isinstance(value, numbers.Integral) or value < 0:",
        tests=(
            "tests/test_bad_input_estimators.py",
            "tests/test_bad_input_models.py",
            "tests/test_minibatch_resampling.py",
            "tests/test_mutants.py",
            "tests/test_over_sampling.py",
            "tests/test_warnings.py",
        ),
        features=("FairnessAwareROSE",),
    ),
    Mutant(
        name="blind4: predict_log_proba of a binary model has its two columns swapped",
        where="predict_log_proba",
        original="[-np.logaddexp(0.0, scores), -np.logaddexp(0.0, -scores)]",
        mutated="[-np.logaddexp(0.0, -scores), -np.logaddexp(0.0, scores)]",
        tests=(
            "tests/test_bad_input_estimators.py",
            "tests/test_bad_input_models.py",
            "tests/test_data_boundary.py",
            "tests/test_fair_estimators.py",
            "tests/test_guard_estimators.py",
            "tests/test_multiclass.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
            "tests/test_penalty.py",
            "tests/test_sgd_compiled.py",
            "tests/test_warnings.py",
        ),
        features=("FairPenaltyLogisticRegression", "FairMLPClassifier"),
    ),
    Mutant(
        name="blind4: individual_penalty counts every cross-group pair twice",
        where="_individual_1d",
        original="value = 0.5 * ordered.sum() / W",
        mutated="value = ordered.sum() / W",
        tests=(
            "tests/test_bad_input_estimators.py",
            "tests/test_bad_input_models.py",
            "tests/test_fair_estimators.py",
            "tests/test_guard_estimators.py",
            "tests/test_operating_point.py",
            "tests/test_penalty.py",
            "tests/test_penalty_large_k.py",
        ),
        features=("individual_penalty",),
    ),
    Mutant(
        name="blind4: FairPenaltyLogisticRegression's alpha also shrinks the intercept",
        where="FairPenaltyLogisticRegression._penalised",
        original="return [params[0]]",
        mutated="return params",
        tests=(
            "tests/test_bad_input_estimators.py",
            "tests/test_bad_input_models.py",
            "tests/test_data_boundary.py",
            "tests/test_fair_estimators.py",
            "tests/test_guard_estimators.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
            "tests/test_sgd_compiled.py",
        ),
        features=("FairPenaltyLogisticRegression",),
    ),
    Mutant(
        name=(
            "blind4: FairMLPClassifier stops one epoch after "
            "n_iter_no_change epochs without improvement"
        ),
        where="FairMLPClassifier.fit",
        original="if stalled >= self.n_iter_no_change:",
        mutated="if stalled > self.n_iter_no_change:",
        tests=(
            "tests/test_bad_input_estimators.py",
            "tests/test_bad_input_models.py",
            "tests/test_data_boundary.py",
            "tests/test_fair_estimators.py",
            "tests/test_guard_estimators.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
        ),
        features=("FairMLPClassifier",),
    ),
    Mutant(
        name=(
            "blind4: sensitive= a column position equal to the number of "
            "columns is accepted (wraps to column 0)"
        ),
        where="column_positions",
        original="if not -n_features <= key < n_features:",
        mutated="if not -n_features <= key <= n_features:",
        tests=(
            "tests/test_bad_input.py",
            "tests/test_bad_input_estimators.py",
            "tests/test_bad_input_models.py",
            "tests/test_fair_estimators.py",
            "tests/test_groups.py",
            "tests/test_guard_estimators.py",
        ),
        features=("FairPenaltyLogisticRegression", "FairnessAwareROSE"),
    ),
    Mutant(
        name="blind4: make_federated_classification accepts a prevalence above 1",
        where="_per_client_table",
        original=(
            "        or np.any(table < 0)\n        or (not probabilities and "
            "np.any(table > 1))\n"
        ),
        mutated="        or np.any(table < 0)\n",
        tests=("tests/test_bad_input_models.py", "tests/test_datasets.py"),
        features=("make_federated_classification",),
    ),
    Mutant(
        name=(
            "blind4: TradeoffDisplay.from_cv_results pairs sorted parameter "
            "values with unsorted disparities"
        ),
        where="from_cv_results",
        original="                disparity[order],\n",
        mutated="                disparity,\n",
        tests=("tests/test_bad_input_models.py", "tests/test_plotting.py"),
        features=("TradeoffDisplay",),
    ),
]
