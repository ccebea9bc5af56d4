"""Blind mutants, third set: written from the package source alone, without
reading the tests or the other mutants.
"""

from ._base import Mutant

MUTANTS = [
    Mutant(
        name=(
            "blind3: a ratio to the overall rate reports the best group, not the worst"
        ),
        where="_ratio",
        original="        return float(ratios.min())",
        mutated="        return float(ratios.max())",
        tests=("tests/test_metrics.py", "tests/test_metrics_parity.py"),
        features=("demographic_parity_ratio", "equalized_odds_ratio"),
    ),
    Mutant(
        name="blind3: TrimmedMean keeps one extra value at the top",
        where="_trim_mean",
        original="    uppercut = nobs - lowercut\n",
        mutated="    uppercut = nobs - lowercut + 1\n",
        tests=("tests/test_aggregation.py", "tests/test_federated.py"),
        features=("TrimmedMean",),
    ),
    Mutant(
        name="blind3: FairFed moves weight towards the clients with the larger gap",
        where="FairFed.aggregate",
        original=(
            "omega = np.clip(omega - self.beta * (distance -"
            " distance.mean()), 0.0, None)"
        ),
        mutated=(
            "omega = np.clip(omega + self.beta * (distance -"
            " distance.mean()), 0.0, None)"
        ),
        tests=("tests/test_aggregation.py", "tests/test_federated.py"),
        features=("FairFed",),
    ),
    Mutant(
        name="blind3: DP noise is not divided by the number of selected clients",
        where="bounded_round",
        original="parameters.append(g + (total + noise) / n_selected)",
        mutated="parameters.append(g + total / n_selected + noise)",
        tests=("tests/test_federated.py", "tests/test_update_bounds.py"),
        features=("DifferentialPrivacy",),
    ),
    Mutant(
        name="blind3: client_fraction selects one client fewer than asked",
        where="_select_clients",
        original="n_selected = max(1, round(client_fraction * n_clients))",
        mutated="n_selected = max(1, int(client_fraction * n_clients) - 1)",
        tests=("tests/test_federated.py", "tests/test_determinism.py"),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name="blind3: a client's selection rate ignores its sample weights",
        where="_metric_values",
        original='values["selection_rate"] = float(np.dot(w, pred) / total)',
        mutated='values["selection_rate"] = float(np.mean(pred))',
        tests=("tests/test_federated.py", "tests/test_operating_point.py"),
        features=("evaluate_clients",),
    ),
    Mutant(
        name=(
            "blind3: the Flower ClientApp accepts partition-id equal to num-partitions"
        ),
        where="_node_partition",
        original="and 0 <= partition < n_partitions",
        mutated="and 0 <= partition <= n_partitions",
        tests=("tests/test_flower.py", "tests/test_guard_flower.py"),
        features=("make_client_app",),
    ),
    Mutant(
        name="blind3: FederatedStandardScaler adds the squared shift to the variance",
        where="FederatedStandardScaler._fit_rounds",
        original=(
            "var = np.where(n > 0, squares / np.maximum(n, 1) - correction**2, np.nan)"
        ),
        mutated=(
            "var = np.where(n > 0, squares / np.maximum(n, 1) + correction**2, np.nan)"
        ),
        tests=("tests/test_preprocessing.py",),
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        name="blind3: FederatedMinMaxScaler offsets from the top of feature_range",
        where="FederatedMinMaxScaler._fit_rounds",
        original="self.min_ = feature_range[0] - data_min * self.scale_",
        mutated="self.min_ = feature_range[1] - data_min * self.scale_",
        tests=("tests/test_preprocessing.py",),
        features=("FederatedMinMaxScaler",),
    ),
    Mutant(
        name=(
            "blind3: the threshold optimizer's selection"
            " rate counts only true positives"
        ),
        where="_rates",
        original="selection = (tp + fp) / n if n > 0 else np.zeros_like(tp)",
        mutated="selection = tp / n if n > 0 else np.zeros_like(tp)",
        tests=("tests/test_postprocessing.py", "tests/test_postprocessing_flower.py"),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        name="blind3: n_target='median' resamples every subgroup to the mean size",
        where="_subgroup_targets",
        original="value = np.nanmedian(sizes, axis=1)",
        mutated="value = np.nanmean(sizes, axis=1)",
        tests=("tests/test_over_sampling.py",),
        features=("FairnessAwareROSE",),
    ),
    Mutant(
        name="blind3: n_target='group_mean' rounds each group's mean size down",
        where="_subgroup_targets",
        original="value = np.round(by_group.sum(axis=2) / np.maximum(n_present, 1))",
        mutated="value = np.floor(by_group.sum(axis=2) / np.maximum(n_present, 1))",
        tests=("tests/test_over_sampling.py",),
        features=("FairnessAwareROSE",),
    ),
    Mutant(
        name="blind3: the penalty gradient ignores sample weights",
        where="_columns",
        original="        gradient = gradient * (\n",
        mutated="        gradient = gradient + 0 * (\n",
        tests=("tests/test_penalty.py", "tests/test_penalty_large_k.py"),
        features=("group_penalty", "individual_penalty", "standardized_group_penalty"),
    ),
    Mutant(
        name="blind3: fairest_within measures its tolerance from the worst candidate",
        where="_FairestWithin.__call__",
        original="best = perf[candidates].max()",
        mutated="best = perf[candidates].min()",
        tests=("tests/test_model_selection.py",),
        features=("fairest_within",),
    ),
    Mutant(
        name="blind3: a class absent from the positive-weight rows still gets an AUROC",
        where="ovr_roc_auc",
        original=(
            "held = codes if sample_weight is None else"
            " codes[np.asarray(sample_weight) > 0]"
        ),
        mutated="held = codes",
        tests=("tests/test_metrics_multiclass.py", "tests/test_multiclass.py"),
        features=("evaluate_clients",),
    ),
    Mutant(
        name="blind3: the overall rate divides the mean group numerator by the total",
        where="overall",
        original=(
            "return float(self.sums[numerator].sum() / total) if total > 0 else np.nan"
        ),
        mutated=(
            "return float(self.sums[numerator].mean() / total) if total > 0 else np.nan"
        ),
        tests=("tests/test_metrics.py", "tests/test_metrics_parity.py"),
        features=(
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "fairness_summary",
        ),
    ),
    Mutant(
        name="blind3: a seeded DP run adds the same noise in every round",
        where="noise_stream",
        original=(
            "np.random.default_rng([int(dp.noise_seed), int(round_number), 0x5EED])"
        ),
        mutated="np.random.default_rng([int(dp.noise_seed), 0, 0x5EED])",
        tests=("tests/test_federated.py", "tests/test_determinism.py"),
        features=("DifferentialPrivacy",),
    ),
    Mutant(
        name="blind3: a validation_fraction holding out every row is not refused",
        where="_split_client",
        original="if y.shape[0] < 2 or n_held_out >= y.shape[0]:",
        mutated="if y.shape[0] < 2 or n_held_out > y.shape[0]:",
        tests=(
            "tests/test_federated.py",
            "tests/test_bad_input.py",
            "tests/test_guard_client.py",
        ),
        features=("FederatedEstimator",),
    ),
    Mutant(
        name="blind3: the Flower ClientApp's first reply counts its evaluation rows",
        where="ClientNode.initialise",
        original="metrics={NUM_EXAMPLES: int(part.train.n)},",
        mutated="metrics={NUM_EXAMPLES: int(part.n_evaluation)},",
        tests=("tests/test_flower.py", "tests/test_guard_flower.py"),
        features=("make_client_app", "run_in_process"),
    ),
    Mutant(
        name="blind3: the fairness penalty is skipped for a batch of just two groups",
        where="BaseFairClassifier._objective",
        original="if penalised and self.fairness > 0 and batch.n_groups > 1:",
        mutated="if penalised and self.fairness > 0 and batch.n_groups > 2:",
        tests=("tests/test_fair_estimators.py", "tests/test_penalty.py"),
        features=("FederatedEstimator", "make_fedida"),
    ),
]
