"""Blind mutants, sixth set: written from the package source alone, without
reading the tests, after the audit of every compound bad-input condition.
Its writer was given the lines earlier sets mutate, to choose others.
"""

from ._base import Mutant

MUTANTS = [
    Mutant(
        name=(
            "blind6: QFedAvg moves the global parameters away from the "
            "clients' updates (sign of the step flipped)"
        ),
        where="QFedAvg.aggregate",
        original="            np.asarray(g - (d / sum_h))",
        mutated="            np.asarray(g + (d / sum_h))",
        tests=(
            "tests/test_aggregation.py",
            "tests/test_bad_input_conditions.py",
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
        features=("QFedAvg",),
    ),
    Mutant(
        name=(
            "blind6: validation AUROC in history_ is computed on the "
            "negative class's probability"
        ),
        where="_validation_metrics",
        original="        scores = proba[:, 1]",
        mutated="        scores = proba[:, 0]",
        tests=(
            "tests/test_bad_input.py",
            "tests/test_bad_input_conditions.py",
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
            "blind6: warm_start continues a federation under another "
            "strategy instead of refusing it"
        ),
        where="_check_warm_start",
        original=(
            "        if type(self.estimator) is not fitted or self.strategy "
            '!= state["strategy"]:'
        ),
        mutated="        if type(self.estimator) is not fitted:",
        tests=(
            "tests/test_aggregation.py",
            "tests/test_bad_input_conditions.py",
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
            "blind6: bootstrap resamples ignore their weights for AUROC, so "
            "its interval collapses to the point"
        ),
        where="_metric_values",
        original="            roc_auc_score(y, proba, sample_weight=weight)",
        mutated="            roc_auc_score(y, proba)",
        tests=(
            "tests/test_bad_input_conditions.py",
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
            "blind6: make_fedida drops random_state: the federation it "
            "builds is not seeded"
        ),
        where="make_fedida",
        original="        random_state=random_state,\n        **federated_params,",
        mutated="        **federated_params,",
        tests=(
            "tests/test_bad_input_conditions.py",
            "tests/test_bad_input_federation.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_model_selection.py",
        ),
        features=("make_fedida",),
    ),
    Mutant(
        name=(
            "blind6: n_samples_seen reports t_ - 1 for MLPClassifier and t_ "
            "for SGDClassifier (layouts swapped)"
        ),
        where="n_samples_seen",
        original='    if hasattr(estimator, "coefs_") and hasattr(estimator, "t_"):',
        mutated='    if hasattr(estimator, "coef_") and hasattr(estimator, "t_"):',
        tests=(
            "tests/test_aggregation.py",
            "tests/test_bad_input_conditions.py",
            "tests/test_bad_input_federation.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_parameters.py",
        ),
        features=("n_samples_seen",),
    ),
    Mutant(
        name=(
            "blind6: no ClientDataWarning when the Pipeline step right "
            "before the federation was fitted on pooled rows"
        ),
        where="warn_if_pooled_preprocessing",
        original="                for i in range(position)",
        mutated="                for i in range(position - 1)",
        tests=(
            "tests/test_bad_input_conditions.py",
            "tests/test_bad_input_federation.py",
            "tests/test_federated.py",
            "tests/test_guard_preprocessing_replies.py",
            "tests/test_preprocessing.py",
        ),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name=(
            "blind6: on Flower, clients with held-out rows report validation "
            "metrics on their training rows"
        ),
        where="client",
        original="            rows = train if held_out is None else held_out",
        mutated="            rows = train",
        tests=(
            "tests/test_bad_input_conditions.py",
            "tests/test_bad_input_federation.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
        ),
        features=("make_client_app", "run_in_process"),
    ),
    Mutant(
        name=(
            "blind6: DifferentialPrivacy accepts clipping_norm=0 (and "
            "noise_multiplier=0)"
        ),
        where="DifferentialPrivacy._check",
        original="                or value <= 0",
        mutated="                or value < 0",
        tests=(
            "tests/test_bad_input_conditions.py",
            "tests/test_bad_input_federation.py",
            "tests/test_determinism.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_update_bounds.py",
        ),
        features=("DifferentialPrivacy",),
    ),
    Mutant(
        name=(
            "blind6: federated_metrics_ gives NaN for a validation metric as "
            "soon as one client's is undefined"
        ),
        where="claims_summary",
        original="        if defined.any() and weights[defined].sum() > 0:",
        mutated="        if defined.all() and weights[defined].sum() > 0:",
        tests=(
            "tests/test_bad_input_conditions.py",
            "tests/test_bad_input_federation.py",
            "tests/test_bad_input_flower.py",
            "tests/test_federated.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_postprocessing.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_preprocessing.py",
            "tests/test_replies.py",
            "tests/test_reply_gate.py",
            "tests/test_reply_gate_variants.py",
            "tests/test_result_file.py",
        ),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name=(
            "blind6: warm_start rounds reuse the seeds of the first rounds "
            "(2 + 2 rounds != 4 rounds)"
        ),
        where="RoundServer.run",
        original=("outcomes, replies = transport.train(\n                round_,"),
        mutated=("outcomes, replies = transport.train(\n                offset,"),
        tests=(
            "tests/test_bad_input_conditions.py",
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
        name=(
            "blind6: ClientStratifiedKFold stratifies by outcome only, so a "
            "fold can miss a client"
        ),
        where="ClientStratifiedKFold.split",
        original="        yield from inner.split(np.zeros(len(X)), strata.ravel())",
        mutated="        yield from inner.split(np.zeros(len(X)), outcome)",
        tests=(
            "tests/test_bad_input_conditions.py",
            "tests/test_bad_input_federation.py",
            "tests/test_federated.py",
            "tests/test_guard_federated.py",
            "tests/test_model_selection.py",
        ),
        features=("ClientStratifiedKFold",),
    ),
    Mutant(
        name=(
            "blind6: a Flower client declares its training rows as its "
            "evaluation rows at discovery"
        ),
        where="ClientNode.discover",
        original=(
            '            declared[NUM_EVAL_ROWS] = int(num_samples(loaded["X_eval"]))'
        ),
        mutated=('            declared[NUM_EVAL_ROWS] = int(num_samples(loaded["X"]))'),
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
            "blind6: run_in_process accepts more node_configs than "
            "partitions and silently runs extra nodes"
        ),
        where="run_in_process",
        original="    if len(extra) != num_partitions:",
        mutated="    if len(extra) < num_partitions:",
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_result_file.py",
        ),
        features=("run_in_process",),
    ),
    Mutant(
        name=(
            "blind6: the run config's num-server-rounds no longer overrides "
            "n_rounds on Flower"
        ),
        where="RUN_CONFIG_PARAMETERS",
        original='    "num-server-rounds": "n_rounds",',
        mutated='    "num-rounds": "n_rounds",',
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_postprocessing.py",
            "tests/test_postprocessing_flower.py",
        ),
        features=("make_server_app", "make_client_app", "run_in_process"),
    ),
    Mutant(
        name=(
            "blind6: a result key given as text (str) is refused; only bytes "
            "sign the result file"
        ),
        where="_key_bytes",
        original='    if isinstance(key, str):\n        key = key.encode("utf-8")\n',
        mutated="",
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_result_file.py",
        ),
        features=("load_result", "make_server_app"),
    ),
    Mutant(
        name=(
            "blind6: make_server_app takes any estimator with fit as "
            "postprocessor, failing only after training"
        ),
        where="server_postprocessor",
        original="    if not isinstance(postprocessor, FederatedThresholdOptimizer):",
        mutated='    if not hasattr(postprocessor, "fit"):',
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_result_file.py",
        ),
        features=("make_server_app",),
    ),
    Mutant(
        name=(
            "blind6: FederatedSimpleImputer(strategy='mean') averages the "
            "clients' means, unweighted by their counts"
        ),
        where="FederatedSimpleImputer._fit_rounds",
        original='                statistics = sum(a["sum"] for a in answers) / n',
        mutated=(
            '                statistics = np.mean([a["sum"] / a["n"] for a '
            "in answers], axis=0)"
        ),
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_guard_preprocessing_replies.py",
            "tests/test_preprocessing.py",
            "tests/test_reply_gate.py",
        ),
        features=("FederatedSimpleImputer",),
    ),
    Mutant(
        name=(
            "blind6: FederatedThresholdOptimizer accepts tolerance > 0 with "
            "equalized_odds and ignores it"
        ),
        where="_check_options",
        original='        if self.tolerance and self._constraint == "equalized_odds":',
        mutated='        if self.tolerance and self._constraint == "equalized odds":',
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_postprocessing.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_reply_gate.py",
        ),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        name=(
            "blind6: the equalized_odds_ratio scorer is negated, so searches "
            "prefer the least fair model"
        ),
        where="METRICS",
        original=(
            '"ratio",\n            greater_is_better=True,\n            not_fairfed'
        ),
        mutated=(
            '"ratio",\n            greater_is_better=False,\n            not_fairfed'
        ),
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
        features=("make_fairness_scorer", "equalized_odds_ratio"),
    ),
    Mutant(
        name=(
            "blind6: lambda_range accepts a lambdas grid with repeated "
            "values (not strictly increasing)"
        ),
        where="lambda_range",
        original="        or np.any(np.diff(lambdas) <= 0)",
        mutated="        or np.any(np.diff(lambdas) < 0)",
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
            "blind6: FairnessAwareROSE resamples y of a single class instead "
            "of refusing it"
        ),
        where="_fit_resample",
        original="        if len(classes) < 2:",
        mutated="        if len(classes) < 1:",
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
        name=(
            "blind6: partial_fit overwrites n_samples_seen_ with the last "
            "call's rows instead of adding them"
        ),
        where="_record_training",
        original=(
            "        self.n_samples_seen_ = "
            'getattr(self, "n_samples_seen_", 0) + n_rows'
        ),
        mutated="        self.n_samples_seen_ = n_rows",
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
        features=("FairPenaltyLogisticRegression", "n_samples_seen"),
    ),
    Mutant(
        name="blind6: individual_penalty's gradient is wrong: its slope term is halved",
        where="_individual_1d",
        original="    slope = (2.0 / W) * (N_y - n)",
        mutated="    slope = (1.0 / W) * (N_y - n)",
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
        name=(
            "blind6: average=True averages the coefficients of partial_fit's "
            "steps but keeps the last intercept"
        ),
        where="FairPenaltyLogisticRegression._compiled_steps",
        original=(
            "            coef_work, intercept_work = coef_sum / n_steps, "
            "intercept_sum / n_steps"
        ),
        mutated="            coef_work = coef_sum / n_steps",
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
            "blind6: FairMLPClassifier(solver='adam') keeps the Adam moments "
            "of the previous fit on a new fit"
        ),
        where="FairMLPClassifier.fit",
        original="            self._optimizer = None\n        validation = None",
        mutated="        validation = None",
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
            "blind6: sensitive_features given together with sensitive= "
            "columns are used silently (columns kept as inputs)"
        ),
        where="resolve_sensitive",
        original="    if sensitive is None:\n        return X, sensitive_features",
        mutated=(
            "    if sensitive is None or sensitive_features is not "
            "None:\n        return X, sensitive_features"
        ),
        tests=(
            "tests/test_bad_input.py",
            "tests/test_bad_input_estimators.py",
            "tests/test_bad_input_models.py",
            "tests/test_fair_estimators.py",
            "tests/test_groups.py",
            "tests/test_guard_estimators.py",
        ),
        features=("FairPenaltyLogisticRegression",),
    ),
    Mutant(
        name=(
            "blind6: make_federated_classification accepts a client size of "
            "0 (a client without rows)"
        ),
        where="_client_sizes",
        original="            or np.any(weights <= 0)\n        ):",
        mutated="            or np.any(weights < 0)\n        ):",
        tests=("tests/test_bad_input_models.py", "tests/test_datasets.py"),
        features=("make_federated_classification",),
    ),
    Mutant(
        name=(
            "blind6: TradeoffDisplay labels the x axis with the performance "
            "and the y axis with the disparity"
        ),
        where="TradeoffDisplay.plot",
        original=(
            "        ax.set_xlabel(self.disparity_name)\n        "
            "ax.set_ylabel(self.performance_name)"
        ),
        mutated=(
            "        ax.set_xlabel(self.performance_name)\n        "
            "ax.set_ylabel(self.disparity_name)"
        ),
        tests=("tests/test_bad_input_models.py", "tests/test_plotting.py"),
        features=("TradeoffDisplay",),
    ),
    Mutant(
        name=(
            "blind6: a float64 sample_weight holding NaN is accepted by the "
            "estimators' fit"
        ),
        where="sample_weight_of",
        original="        and np.isfinite(sample_weight).all()\n",
        mutated="",
        tests=(
            "tests/test_bad_input.py",
            "tests/test_bad_input_estimators.py",
            "tests/test_bad_input_models.py",
            "tests/test_fair_estimators.py",
            "tests/test_guard_estimators.py",
        ),
        features=("FairPenaltyLogisticRegression",),
    ),
]
