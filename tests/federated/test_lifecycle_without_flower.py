"""The lifecycle over a transport of in-memory ``ClientNode``s: no Flower at all.

``run_federation`` owns a run by message, and a transport is all that
differs between backends (issue 48). Over ``MemoryTransport`` (the Flower
ClientApp's client code, handed each payload in this process) it gives
the in-process fit to the last bit, as it does over Flower's grid.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from _helpers import FailingLogistic, partition_loader, skip_records
from _memory_transport import MemoryTransport
from sklearn.base import clone

from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import FederatedEstimator
from skfedida.federated._lifecycle import run_federation
from skfedida.federated._run_config import plan_for_run
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(600, n_clients=3, random_state=0)


def _partitions(data):
    """Each client's rows, as a Flower node's ``load_data`` gives them."""
    load = partition_loader(data)
    return [load(SimpleNamespace(node_config={"partition-id": k})) for k in range(3)]


def _both(federation, data):
    in_process = clone(federation).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )
    by_message = run_federation(
        plan_for_run(federation, {}), MemoryTransport(federation, _partitions(data))
    )
    return in_process, by_message


@pytest.mark.parametrize(
    "federation",
    [
        FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=1.0),
            sampler=FairnessAwareROSE(random_state=0),
            n_rounds=3,
            random_state=0,
        ),
        FederatedEstimator(
            FairMLPClassifier(hidden_layer_sizes=(4,)),
            strategy="pfedavg",
            n_rounds=2,
            validation_fraction=0.2,
            random_state=0,
        ),
        FederatedEstimator(
            FairPenaltyLogisticRegression(constraints="demographic_parity"),
            n_rounds=2,
            random_state=0,
        ),
    ],
    ids=["fedida-logistic", "pfedavg-mlp", "rate-constraint"],
)
@pytest.mark.filterwarnings("ignore::skfedida.exceptions.DegenerateModelWarning")
def test_a_run_by_message_without_flower_is_the_in_process_fit(federation, data):
    in_process, by_message = _both(federation, data)
    for ours, theirs in zip(
        in_process.estimator_.coef_
        if hasattr(in_process.estimator_, "coef_")
        else in_process.estimator_.coefs_,
        by_message.estimator_.coef_
        if hasattr(by_message.estimator_, "coef_")
        else by_message.estimator_.coefs_,
        strict=True,
    ):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(in_process.class_prior_, by_message.class_prior_)
    assert [(r["round"], r["client"]) for r in in_process.history_] == [
        (r["round"], r["client"]) for r in by_message.history_
    ]


def test_boosted_trees_by_message_without_flower_are_the_in_process_trees(data):
    federation = FederatedEstimator(
        FairHistGradientBoostingClassifier(max_iter=5, random_state=0),
        random_state=0,
    )
    in_process, by_message = _both(federation, data)
    np.testing.assert_array_equal(
        in_process.predict_proba(data.data), by_message.predict_proba(data.data)
    )


def test_a_client_failing_by_message_is_skipped_as_in_process(data):
    federation = FederatedEstimator(
        FailingLogistic(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        on_client_error="skip",
        random_state=0,
    )
    seeds = clone(federation).set_params(n_rounds=1, on_client_error="raise")
    seeds.fit(data.data, data.target, clients=data.clients)
    FailingLogistic.failing_seeds = {int(seeds.client_seeds_[1])}
    try:
        in_process, by_message = _both(federation, data)
    finally:
        FailingLogistic.failing_seeds = frozenset()
    skipped = skip_records((in_process, by_message), "round", "client", "skipped")
    assert (
        skipped[0]
        == skipped[1]
        == [
            (1, 1, "ArithmeticError: simulated client failure"),
            (2, 1, "ArithmeticError: simulated client failure"),
        ]
    )
    np.testing.assert_array_equal(
        in_process.estimator_.coef_, by_message.estimator_.coef_
    )


def test_a_client_whose_rows_fail_its_checks_is_named(data):
    partitions = _partitions(data)
    partitions[1]["y"] = partitions[1]["y"][:-1]  # one label short
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=1, random_state=0
    )
    with pytest.raises(
        RuntimeError,
        match=r"Client 1 failed the initialisation: .*y must hold one label per row",
    ):
        run_federation(
            plan_for_run(federation, {}), MemoryTransport(federation, partitions)
        )
