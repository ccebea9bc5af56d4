"""Mutants of ``skfedida/federated``."""

from ._base import (
    EVALUATION_TESTS,
    FEDERATED_TESTS,
    GATE_TESTS,
    MINIBATCH_TESTS,
    OPERATING_POINT_TESTS,
    Mutant,
)

AGGREGATION_TESTS = ("tests/test_aggregation.py", "tests/test_federated.py")
PRIVACY_TESTS = ("tests/test_update_bounds.py",)
REPLY_TESTS = ("tests/test_replies.py", "tests/test_reply_gate.py")
INTERVAL_TESTS = ("tests/test_intervals.py",)
GUARD_TESTS = ("tests/test_guard_federated.py",)

MUTANTS = [
    Mutant(
        "expected accuracy counts a tied row as right when selected",
        "skfedida/federated/_evaluation.py",
        "np.dot(w, y * pred + (1 - y) * (1 - pred))",
        "np.dot(w, y * pred + (1 - y) * (pred < 1))",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "a group a client did not declare is accepted",
        "skfedida/federated/_replies.py",
        "            if label not in declared:\n",
        "            if label not in declared and False:\n",
        GATE_TESTS,
    ),
    Mutant(
        "consensus takes a plurality, not a strict majority",
        "skfedida/federated/_replies.py",
        "if 2 * counts[best] > len(keys):",
        "if counts[best] >= 1:",
        GATE_TESTS,
    ),
    Mutant(
        "extremes far beyond the other clients' are accepted",
        "skfedida/federated/_statistics_replies.py",
        "below = scaled & (low < lo - RANGE_FACTOR * width)",
        "below = scaled & (low < lo - 1e300 * width)",
        GATE_TESTS,
    ),
    Mutant(
        "prior_aggregation='median' takes the clients' mean share",
        "skfedida/federated/_aggregation.py",
        "median = np.median(rates, axis=0)",
        "median = np.mean(rates, axis=0)",
        GATE_TESTS,
    ),
    Mutant(
        "FairFed keeps groups smaller than min_group_size",
        "skfedida/federated/_aggregation.py",
        "defined & (n_federation >= self.min_group_size)",
        "defined",
        GATE_TESTS,
    ),
    Mutant(
        "a resampled minibatch past batch_size is split into several steps",
        "skfedida/federated/_client.py",
        "        estimator.batch_size = data.n\n",
        "",
        MINIBATCH_TESTS,
    ),
    Mutant(
        "client seeds ignore random_state",
        "skfedida/federated/_client.py",
        "return check_random_state(random_state).randint(",
        "return check_random_state(0).randint(",
        FEDERATED_TESTS,
    ),
    Mutant(
        "round seed ignores the round",
        "skfedida/federated/_client.py",
        "np.random.SeedSequence([int(client_seed), round_])",
        "np.random.SeedSequence([int(client_seed), 0])",
        FEDERATED_TESTS,
    ),
    Mutant(
        "FedAvg averages with uniform weights, not n_k / n",
        "skfedida/federated/_aggregation.py",
        "return _weighted_sum(parameter_lists, weights / weights.sum())",
        "return _weighted_sum(parameter_lists, np.ones_like(weights) / weights.size)",
        FEDERATED_TESTS,
    ),
    Mutant(
        "median aggregation is the mean",
        "skfedida/federated/_aggregation.py",
        "np.asarray(np.median(np.stack(layers), axis=0))",
        "np.asarray(np.mean(np.stack(layers), axis=0))",
        ("tests/test_aggregation.py",),
    ),
    Mutant(
        "trimmed mean cuts nothing",
        "skfedida/federated/_aggregation.py",
        "lowercut = int(cut_fraction * nobs)",
        "lowercut = 0",
        ("tests/test_aggregation.py",),
    ),
    Mutant(
        "Per-FedAvg meta-step in the wrong direction",
        "skfedida/federated/_client.py",
        "[t - (a - s) for t, a, s in zip(theta, adapted, stepped, strict=True)]",
        "[t + (a - s) for t, a, s in zip(theta, adapted, stepped, strict=True)]",
        FEDERATED_TESTS,
    ),
    Mutant(
        "prior-correction weights inverted",
        "skfedida/federated/_client.py",
        "ratio = np.divide(before, after, out=np.ones(n_classes), where=after > 0)",
        "ratio = np.divide(after, before, out=np.ones(n_classes), where=before > 0)",
        FEDERATED_TESTS,
    ),
    Mutant(
        "bootstrap ignores the resample weights",
        "skfedida/federated/_evaluation.py",
        "metrics, y_k, proba_k, pred_k, S_k, weight, min_group_size",
        "metrics, y_k, proba_k, pred_k, S_k, None, min_group_size",
        EVALUATION_TESTS,
    ),
    Mutant(
        "interval = min/max of the draws, ignoring confidence",
        "skfedida/federated/_evaluation.py",
        "np.quantile(finite, [tail, 1 - tail])",
        "np.quantile(finite, [0.0, 1.0])",
        EVALUATION_TESTS,
    ),
    Mutant(
        "Brier score as mean absolute error",
        "skfedida/federated/_evaluation.py",
        'values["brier"] = float(np.dot(w, (proba - y) ** 2) / total)',
        'values["brier"] = float(np.dot(w, np.abs(proba - y)) / total)',
        EVALUATION_TESTS,
    ),
    # -- issue 32: survivors of the mutation run ------------------------------
    Mutant(
        "FairFed's weights restart from n_k / n every round",
        "skfedida/federated/_aggregation.py",
        "previous.get(k, w / weights.sum())",
        "w / weights.sum()",
        AGGREGATION_TESTS,
        features=("FairFed",),
    ),
    Mutant(
        "seeded DP noise ignores the round (the same noise every round)",
        "skfedida/federated/_privacy.py",
        "[int(dp.noise_seed), int(round_number), 0x5EED]",
        "[int(dp.noise_seed), 0, 0x5EED]",
        PRIVACY_TESTS,
        features=("DifferentialPrivacy", "FederatedEstimator"),
    ),
    Mutant(
        "the accountant is given noise_multiplier * clipping_norm, not z",
        "skfedida/federated/_privacy.py",
        "gaussian(float(self.noise_multiplier)), int(n_rounds)",
        "gaussian(self.noise_multiplier * self.clipping_norm), int(n_rounds)",
        PRIVACY_TESTS,
        features=("DifferentialPrivacy",),
    ),
    Mutant(
        "a negative training loss is accepted",
        "skfedida/federated/_replies.py",
        "or not np.isfinite(loss) or loss < 0:",
        "or not np.isfinite(loss):",
        REPLY_TESTS,
        features=("reply:training",),
    ),
    Mutant(
        "threshold='prevalence' matches the evaluation rows' prevalence",
        "skfedida/federated/_evaluation.py",
        "return float(y_positive.mean()) if prior is None else prior",
        "return float(y_positive.mean())",
        GUARD_TESTS,
        features=("evaluate_clients",),
    ),
    Mutant(
        "BCa's bias correction does not count ties with the estimate half",
        "skfedida/federated/_evaluation.py",
        "np.count_nonzero(draws < estimate) + np.count_nonzero(draws <= estimate)",
        "np.count_nonzero(draws < estimate) + np.count_nonzero(draws < estimate)",
        INTERVAL_TESTS,
        features=("evaluate_clients",),
    ),
    Mutant(
        "the bootstrap stream is re-seeded for every client",
        "skfedida/federated/_evaluation.py",
        "        y_k, proba_k, pred_k = y_positive[idx], proba[idx], pred[idx]\n",
        "        rng = check_random_state(random_state)\n"
        "        y_k, proba_k, pred_k = y_positive[idx], proba[idx], pred[idx]\n",
        INTERVAL_TESTS,
        features=("evaluate_clients",),
    ),
]
