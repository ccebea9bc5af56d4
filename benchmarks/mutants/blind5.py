"""Blind mutants, fifth set: written from the package source alone, without
reading the tests, after the bad-input audit landed. Its writer was given
the lines earlier sets mutate, to choose others.
"""

from ._base import Mutant

MUTANTS = [
    Mutant(
        name=(
            "blind5: client ids with missing values are accepted when only "
            "some are missing"
        ),
        where="client_ids",
        original="    if missing_mask(clients).any():",
        mutated="    if missing_mask(clients).all():",
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
        name="blind5: FairFed reports count the negative class as the positive rows",
        where="_fairness_report",
        original="    positive = np.asarray(data.y) == classes[-1]",
        mutated="    positive = np.asarray(data.y) == classes[0]",
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
        features=("FairFed", "FederatedEstimator"),
    ),
    Mutant(
        name=(
            "blind5: FairMLPClassifier's intercept gradients are averaged "
            "over rows instead of summed"
        ),
        where="FairMLPClassifier._backprop",
        original="            intercept_gradients[layer] = delta.sum(axis=0)",
        mutated="            intercept_gradients[layer] = delta.mean(axis=0)",
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
            "blind5: prior_aggregation='median' normalises the counts over "
            "clients instead of classes"
        ),
        where="class_prior",
        original="    rates = counts / counts.sum(axis=1, keepdims=True)",
        mutated="    rates = counts / counts.sum(axis=0, keepdims=True)",
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
        features=("FederatedEstimator",),
    ),
    Mutant(
        name="blind5: FairnessAwareROSE adds noise to integer columns of a DataFrame",
        where="_noised_columns",
        original='            copied |= np.isin(kinds, ["categorical", "integer"])',
        mutated='            copied |= np.isin(kinds, ["categorical"])',
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
            "blind5: privacy_.epsilon reports the epsilon of the first "
            "round, not of all rounds"
        ),
        where="spent",
        original="            epsilon=float(by_round[-1]) if by_round.size else 0.0,",
        mutated="            epsilon=float(by_round[0]) if by_round.size else 0.0,",
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
            "blind5: strategy='central' trains for the fewest clients' "
            "epochs instead of the most"
        ),
        where="FederatedEstimator.fit",
        original="                np.array([epochs.max()]),",
        mutated="                np.array([epochs.min()]),",
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
            "blind5: predict with fewer client ids than rows is accepted and "
            "returns fewer predictions"
        ),
        where="_dispatch",
        original="        if clients.shape[0] != num_samples(X):",
        mutated="        if clients.shape[0] > num_samples(X):",
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
            "blind5: evaluate_clients accepts y holding labels the model does not know"
        ),
        where="evaluate_clients",
        original="    if unknown.any():",
        mutated="    if unknown.all():",
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
            "blind5: evaluate_clients' summary counts clients whose metric "
            "is undefined in n_clients"
        ),
        where="evaluate_clients",
        original='            "n_clients": values.notna().sum(),',
        mutated='            "n_clients": len(values),',
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
            "blind5: FedAvg in-process weights every client the same, ignoring its rows"
        ),
        where="RoundServer._aggregated",
        original="weights = [r.n_rows for r in results]",
        mutated="weights = [1 for r in results]",
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
        features=("FederatedEstimator", "WeightedMean"),
    ),
    Mutant(
        name=(
            "blind5: the Flower server selects clients with another seed "
            "than the in-process federation"
        ),
        where="FederationPlan.selection_stream",
        original="        return _selection_stream(seeds)",
        mutated="        return _selection_stream(seeds[::-1])",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
        ),
        features=("make_server_app", "run_in_process"),
    ),
    Mutant(
        name=(
            "blind5: the Flower server rounds held-out rows down, refusing "
            "clients with validation_fraction"
        ),
        where="declared_sets",
        original=(
            "0 if validation_fraction is None else "
            "math.ceil(validation_fraction * n_rows)"
        ),
        mutated=(
            "0 if validation_fraction is None else int(validation_fraction * n_rows)"
        ),
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_federated.py",
            "tests/test_flower.py",
            "tests/test_preprocessing.py",
            "tests/test_replies.py",
            "tests/test_reply_gate.py",
            "tests/test_reply_gate_variants.py",
        ),
        features=("make_server_app", "run_in_process"),
    ),
    Mutant(
        name=(
            "blind5: the Flower server sums a client's histogram over the "
            "wrong axis when checking it"
        ),
        where="histogram_claim_problem",
        original=(
            "per_group = np.asarray(counts, np.float64).sum(axis=2).astype(np.int64)"
        ),
        mutated=(
            "per_group = np.asarray(counts, np.float64).sum(axis=1).astype(np.int64)"
        ),
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_result_file.py",
        ),
        features=("make_server_app", "FederatedThresholdOptimizer"),
    ),
    Mutant(
        name=(
            "blind5: Flower clients count histogram labels with the negative "
            "class as positive"
        ),
        where="ClientNode.histograms",
        original="part.classes[-1],",
        mutated="part.classes[0],",
        tests=(
            "tests/test_bad_input_flower.py",
            "tests/test_flower.py",
            "tests/test_guard_flower.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_result_file.py",
        ),
        features=("make_client_app", "FederatedThresholdOptimizer"),
    ),
    Mutant(
        name="blind5: the run config key 'seed' is ignored by the Flower apps",
        where="RUN_CONFIG_PARAMETERS",
        original='    "seed": "random_state",',
        mutated='    "random-seed": "random_state",',
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
            "blind5: FederatedMinMaxScaler accepts an empty feature_range (min == max)"
        ),
        where="FederatedMinMaxScaler._fit_rounds",
        original="        if feature_range[0] >= feature_range[1]:",
        mutated="        if feature_range[0] > feature_range[1]:",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_guard_preprocessing_replies.py",
            "tests/test_preprocessing.py",
            "tests/test_reply_gate.py",
        ),
        features=("FederatedMinMaxScaler",),
    ),
    Mutant(
        name=(
            "blind5: FederatedSimpleImputer's indicator only marks features "
            "missing in every row"
        ),
        where="FederatedSimpleImputer._answer",
        original='            "any_missing": missing.any(axis=0),',
        mutated='            "any_missing": missing.all(axis=0),',
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
            "blind5: a Pipeline with a joblib Memory object is accepted in a federation"
        ),
        where="federated_transformers",
        original="        if tree.memory is not None:",
        mutated="        if isinstance(tree.memory, str):",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_federated.py",
            "tests/test_guard_preprocessing_replies.py",
            "tests/test_preprocessing.py",
            "tests/test_reply_gate.py",
            "tests/test_reply_gate_variants.py",
        ),
        features=("FederatedEstimator", "FederatedStandardScaler"),
    ),
    Mutant(
        name=(
            "blind5: tolerance with selection_rate=0.0 is accepted by "
            "FederatedThresholdOptimizer"
        ),
        where="_check_options",
        original="        if self.tolerance and self.selection_rate is not None:",
        mutated="        if self.tolerance and self.selection_rate:",
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
            "blind5: FederatedThresholdOptimizer counts the negative class's "
            "rows as positives"
        ),
        where="FederatedThresholdOptimizer.fit",
        original="                (y[rows] == classes[1]).astype(np.intp),",
        mutated="                (y[rows] == classes[0]).astype(np.intp),",
        tests=(
            "tests/test_bad_input_federation.py",
            "tests/test_postprocessing.py",
            "tests/test_postprocessing_flower.py",
            "tests/test_reply_gate.py",
        ),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        name="blind5: fairness metrics accept negative sample weights",
        where="_validated",
        original=(
            "sample_weight = check_sample_weight(sample_weight, y_true, "
            "ensure_non_negative=True)"
        ),
        mutated=(
            "sample_weight = check_sample_weight(sample_weight, y_true, "
            "ensure_non_negative=False)"
        ),
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
        name="blind5: weighted true positive counts ignore the sample weights",
        where="_class_group_sums",
        original='        "true_positive": total(weighted_positive * predicted),',
        mutated='        "true_positive": total(positive * predicted),',
        tests=(
            "tests/test_bad_input_metrics.py",
            "tests/test_bad_input_models.py",
            "tests/test_metrics.py",
            "tests/test_metrics_multiclass.py",
            "tests/test_metrics_parity.py",
            "tests/test_mutants.py",
            "tests/test_scorers.py",
        ),
        features=("true_positive_rate_difference", "equal_opportunity_difference"),
    ),
    Mutant(
        name=(
            "blind5: federated_operating_point's tie probability counts the "
            "tied block as already selected"
        ),
        where="federated_operating_point",
        original="    above_block = above[j + 1]",
        mutated="    above_block = above[j]",
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
        features=("federated_operating_point", "evaluate_clients"),
    ),
    Mutant(
        name="blind5: fairest_within accepts an empty band (low == high)",
        where="_check_band",
        original="    if not 0 <= low < high <= 1:",
        mutated="    if not 0 <= low <= high <= 1:",
        tests=(
            "tests/test_bad_input_models.py",
            "tests/test_model_selection.py",
            "tests/test_multiclass.py",
            "tests/test_mutants.py",
            "tests/test_operating_point.py",
            "tests/test_warnings.py",
        ),
        features=("fairest_within",),
    ),
]
