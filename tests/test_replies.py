"""Replies the server cannot use are a named failure of their client.

The rows of the issue's table of a client that rewrites its replies, in a
wrapper around the real ClientApp (and, in-process, an estimator that
changes its own parameters): a wrong shape or count, NaN, integers, another
number of rows than the client declared, unknown or impossible metrics.
"""

import numpy as np
import pytest

pytest.importorskip("flwr")

from _helpers import RewritingClientApp as _Rewriting
from _helpers import partition_loader
from flwr.app import ArrayRecord, MessageType

from skfedida._gate._model import evaluation_reply_problem, training_reply_problem
from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.linear_model import FairPenaltyLogisticRegression

N_CLIENTS = 3


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(900, n_clients=N_CLIENTS, random_state=0)


def _arrays(change):
    def rewrite(content):
        arrays = content["arrays"].to_numpy_ndarrays()
        content["arrays"] = ArrayRecord([np.asarray(a) for a in change(arrays)])

    return rewrite


def _metric(name, value):
    def rewrite(content):
        content["metrics"][name] = value

    return rewrite


def _rows_changed_by(change):
    def rewrite(content):
        content["metrics"]["num-examples"] = (
            int(content["metrics"]["num-examples"]) + change
        )

    return rewrite


def _federation(**options):
    return FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
        **options,
    )


TRAINING_REWRITES = {
    "coef of shape (1, 1)": (
        _arrays(lambda a: [a[0][:, :1], a[1]]),
        "parameter array 0 has shape",
    ),
    "a scalar coef": (_arrays(lambda a: [np.float64(1.0), a[1]]), "shape"),
    "an extra array": (_arrays(lambda a: [*a, a[1]]), "3 parameter arrays"),
    "NaN": (_arrays(lambda a: [a[0] * np.nan, a[1]]), "NaN or infinity"),
    "infinity": (_arrays(lambda a: [a[0] + np.inf, a[1]]), "NaN or infinity"),
    "int8 arrays": (
        _arrays(lambda a: [x.astype(np.int8) for x in a]),
        "dtype int8",
    ),
    # Real numbers, but not the model's float64: averaged with the others
    # they would change the global model's dtype and precision.
    "float32 arrays": (
        _arrays(lambda a: [x.astype(np.float32) for x in a]),
        "dtype float32",
    ),
    "1e12 rows": (_metric("num-examples", 10**12), "declared"),
    # num-examples is the client's FedAvg weight: one row fewer than it
    # declared when it joined is as much a false claim as one more.
    "one row fewer than declared": (_rows_changed_by(-1), "declared"),
    "one row more than declared": (_rows_changed_by(+1), "declared"),
    "-300 rows": (_metric("num-examples", -300), "a count > 0"),
    "0 rows": (_metric("num-examples", 0), "a count > 0"),
    "a NaN loss": (_metric("train-loss", float("nan")), "training loss"),
    # A log-loss is never below 0; QFedAvg raises the losses to the power q,
    # and a negative one to a fractional power is NaN in the global model.
    "a negative loss": (_metric("train-loss", -0.25), "training loss"),
}


@pytest.mark.parametrize("case", list(TRAINING_REWRITES))
def test_a_bad_training_reply_is_a_named_failure_or_a_recorded_skip(data, case):
    rewrite, message = TRAINING_REWRITES[case]
    federation = _federation()
    client_app = _Rewriting(
        make_client_app(federation, partition_loader(data)), rewrite
    )
    with pytest.raises(
        RuntimeError,
        match=rf"Client 2 \(node \d+\) failed in round 1 \(training\): its reply "
        rf"cannot be used: .*{message}",
    ):
        run_in_process(make_server_app(federation), client_app, num_partitions=3)
    skipping = _federation(on_client_error="skip")
    client_app = _Rewriting(make_client_app(skipping, partition_loader(data)), rewrite)
    fitted = run_in_process(make_server_app(skipping), client_app, num_partitions=3)
    skipped = [r for r in fitted.history_ if r.get("skipped")]
    assert {r["client"] for r in skipped} == {2}
    assert all(message in r["skipped"] for r in skipped)
    assert np.all(np.isfinite(fitted.estimator_.coef_))
    assert fitted.estimator_.coef_.shape == (1, data.data.shape[1])


@pytest.mark.parametrize(
    ("rewrite", "message"),
    [
        (_metric("val_roc_auc", 7.0), "outside"),
        (_metric("val_secret", 0.5), "unknown metrics"),
        (_metric("num-examples", -1), "evaluation rows"),
    ],
)
def test_bad_evaluation_metrics_are_a_named_failure(data, rewrite, message):
    federation = _federation(validation_fraction=0.3)
    client_app = _Rewriting(
        make_client_app(federation, partition_loader(data)),
        rewrite,
        MessageType.EVALUATE,
    )
    with pytest.raises(RuntimeError, match=rf"Client 2 .*\(evaluation\).*{message}"):
        run_in_process(make_server_app(federation), client_app, num_partitions=3)


def test_in_process_the_same_check_names_the_client(data, monkeypatch):
    # A client whose parameter protocol returns one array too many (the
    # in-process federation runs the same check as the Flower server).
    from skfedida.federated import _client

    seeds = (
        FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.0), n_rounds=1, random_state=0
        )
        .fit(data.data, data.target, clients=data.clients)
        .client_seeds_
    )
    real = _client.parameter_arrays

    def extra_array_for_client_1(estimator):
        arrays = real(estimator)
        if estimator.random_state == int(seeds[1]):
            arrays.append(np.zeros(1))
        return arrays

    monkeypatch.setattr(_client, "parameter_arrays", extra_array_for_client_1)
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    )
    with pytest.raises(
        RuntimeError,
        match=r"Client 1 failed in round 1 \(training\): .*3 parameter arrays",
    ):
        federation.fit(data.data, data.target, clients=data.clients)
    fitted = federation.set_params(on_client_error="skip").fit(
        data.data, data.target, clients=data.clients
    )
    assert {r["client"] for r in fitted.history_ if r.get("skipped")} == {1}


def test_the_checks_themselves():
    reference = [np.zeros((1, 3)), np.zeros(1)]
    good = [np.ones((1, 3)), np.ones(1)]
    assert (
        training_reply_problem(good, 10, 0.5, reference=reference, declared_rows=10)
        is None
    )
    # Another count than the declared one, above or below, is refused.
    for claimed in (11, 9, 1):
        assert "declared 10" in training_reply_problem(
            good, claimed, 0.5, reference=reference, declared_rows=10
        )
    assert "a count > 0" in training_reply_problem(
        good, True, 0.5, reference=reference, declared_rows=None
    )
    assert (
        evaluation_reply_problem({"val_dpd": float("nan")}, allowed={"val_dpd"}) is None
    )
    assert "not a number" in evaluation_reply_problem(
        {"val_dpd": "0.1"}, allowed={"val_dpd"}
    )


def test_a_multiclass_brier_score_up_to_two_is_a_valid_claim():
    # The Brier score of more than two classes sums the squared errors over
    # the classes: up to 2. A value above 1 was refused as a malformed reply.
    from skfedida._gate._model import evaluation_reply_problem

    allowed = {"val_brier", "num-examples"}
    assert evaluation_reply_problem({"val_brier": 1.3}, allowed=allowed) is None
    problem = evaluation_reply_problem({"val_brier": 2.5}, allowed=allowed)
    assert "outside [0, 2]" in problem


def test_round_records_are_never_written_into_an_earlier_runs_records():
    # A warm start re-runs a round number after a fit that stopped midway:
    # its records are new ones, not written into the earlier run's (a record
    # that said a client both trained and was skipped).
    from skfedida._gate._history import RoundHistory

    earlier = {"round": 2, "client": 1, "train_loss": 0.66}
    records = [{"round": 0, "stage": "initialisation", "client": 1}, earlier]
    history = RoundHistory(records)
    mine = history.record(2, 1)
    mine["skipped"] = "ArithmeticError: client fails"
    assert earlier == {"round": 2, "client": 1, "train_loss": 0.66}
    assert history.record(2, 1) is mine and records[-1] is mine
    assert len(records) == 3


@pytest.mark.parametrize(
    "values, twice",
    [
        (np.array([1.0, np.nan, np.nan]), True),  # NaN counted once
        (np.array([1.0, np.nan, 2.0]), False),
        (np.array(["a", None, None], dtype=object), True),
        (np.array([1, 1.0], dtype=object), False),  # of other types
    ],
)
def test_categories_listing_a_value_twice_are_refused(values, twice):
    from skfedida._gate._checks import categories_problem

    problem = categories_problem(values, "feature 0's categories")
    assert (problem == "feature 0's categories list a value twice") is twice
    assert twice or problem is None
