"""Mutants of the client side of training (``federated/_client.py``)."""

from ._base import Mutant

CLIENT_TESTS = ("tests/test_guard_client.py",)
MINIBATCH_TESTS = ("tests/test_minibatch_resampling.py",)
FEDERATED_TESTS = ("tests/test_federated.py", "tests/test_determinism.py")

MUTANTS = [
    Mutant(
        "FairFed report on the training rows despite validation_fraction",
        "_reporting_client_round",
        "rows = data if data.held_out is None else data.held_out",
        "rows = data",
        CLIENT_TESTS,
        features=("FairFed", "reply:fairness_report"),
    ),
    Mutant(
        "FairFed report's decisions are the labels",
        "_fairness_report",
        '"selected": count(decided.astype(float)),',
        '"selected": count(positive.astype(float)),',
        CLIENT_TESTS,
        features=("FairFed", "reply:fairness_report"),
    ),
    Mutant(
        "a client's round seed ignores the round",
        "_round_seed",
        "np.random.SeedSequence([int(client_seed), round_])",
        "np.random.SeedSequence([int(client_seed)])",
        CLIENT_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "held-out rows not stratified by label",
        "_split_client",
        "stratify = y if class_counts.size > 1 and class_counts.min() > 1 else None",
        "stratify = None",
        CLIENT_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "a short last minibatch's prior weights divide by batch_size",
        "_minibatch_prior_weights",
        "        / size_before[:, None]\n",
        "        / batch_size\n",
        MINIBATCH_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "per-minibatch path never shuffles the client's rows",
        "_batches",
        "        order = random_state.permutation(data.n)\n        return [",
        "        order = np.arange(data.n)\n        return [",
        CLIENT_TESTS,
        features=("FederatedEstimator",),
    ),
    Mutant(
        "clients' validation Brier score is the mean absolute error",
        "_validation_metrics",
        '"brier": float(np.average((scores - positive) ** 2, weights=weight)),',
        '"brier": float(np.average(np.abs(scores - positive), weights=weight)),',
        CLIENT_TESTS,
        features=("FederatedEstimator", "reply:evaluation"),
    ),
    Mutant(
        "clients' validation selection rate counts the negative class",
        "_validation_metrics",
        "np.average(predicted == classes[-1], weights=weight)",
        "np.average(predicted == classes[0], weights=weight)",
        CLIENT_TESTS,
        features=("FederatedEstimator", "reply:evaluation"),
    ),
    Mutant(
        "a client fraction's count truncated, not rounded",
        "_select_clients",
        "n_selected = max(1, round(client_fraction * n_clients))",
        "n_selected = max(1, int(client_fraction * n_clients))",
        CLIENT_TESTS,
        features=("FederatedEstimator",),
    ),
]

# -- issue 34: FedIDA's epochs on the resampled positions ---------------------
EPOCH_TESTS = ("tests/federated/test_resampled_epochs.py",)
MUTANTS += [
    Mutant(
        "the resampled epochs weigh every row 1 under prior correction",
        "_epochs",
        "row_weight[call_rows] = weight[begin:stop]",
        "row_weight[call_rows] = 1.0",
        EPOCH_TESTS,
        features=("FederatedEstimator", "FairnessAwareROSE"),
    ),
]
