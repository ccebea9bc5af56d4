"""What both backends do alike, decided where they once differed (issue 48).

Each test fits one federation in-process and on Flower (``run_in_process``:
the real ClientApp and ServerApp in one process) and pins the behaviour
chosen for a divergence of the audit listed in ``doc/flower.rst`` ("Where
the backends once differed"); the id (D4, D12...) is the audit's.
"""

import logging

import numpy as np
import pytest

pytest.importorskip("flwr")

from _helpers import partition_loader
from sklearn.base import clone

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.flower import (
    make_client_app,
    make_server_app,
    run_in_process,
)
from skfedida.linear_model import FairPenaltyLogisticRegression

logging.getLogger("flwr").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(600, n_clients=3, random_state=0)


def _both(federation, data):
    in_process = clone(federation).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )
    on_flower = run_in_process(
        make_server_app(federation),
        make_client_app(federation, partition_loader(data)),
        num_partitions=3,
    )
    return in_process, on_flower


def test_d4_d12_the_history_is_in_one_order_with_one_shape(data):
    # Half the clients are selected each round, in a seeded random order;
    # every client evaluates its held-out rows every round.
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=3,
        local_epochs=1,
        client_fraction=0.5,
        validation_fraction=0.25,
        random_state=0,
    )
    in_process, on_flower = _both(federation, data)
    # D4: by round, then client, whatever order the clients were selected
    # in (in-process history was in the order of selection).
    order = [(r["round"], r["client"]) for r in in_process.history_]
    assert order == [(r["round"], r["client"]) for r in on_flower.history_]
    assert order == sorted(order)
    selected = {(r["round"], r["client"]) for r in in_process.history_}
    assert len(selected) == 9
    # D12: a client selected in a round has its train_loss, a client only
    # evaluated in that round has none (in-process wrote None).
    for ours, theirs in zip(in_process.history_, on_flower.history_, strict=True):
        assert sorted(ours) == sorted(theirs)
        if "train_loss" in ours:
            assert ours["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-12)
    trained = [r for r in in_process.history_ if "train_loss" in r]
    assert 0 < len(trained) < len(in_process.history_)
    assert all(r["train_loss"] is not None for r in trained)
    np.testing.assert_array_equal(
        in_process.estimator_.coef_, on_flower.estimator_.coef_
    )


def test_d13_what_only_in_process_runs_is_refused_on_flower(data):
    # A warm start continues in-process; on Flower the ServerApp starts from
    # the unfitted federation, which for averaged models used to start
    # afresh without a word (boosted trees were refused already).
    from sklearn.callback import ProgressBar

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=1,
        local_epochs=1,
        random_state=0,
        warm_start=True,
    )
    continued = clone(federation)
    for _ in range(2):
        continued.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    assert max(r["round"] for r in continued.history_) == 2
    with pytest.raises(ValueError, match=r"warm_start=True on Flower.*in-process"):
        _both(federation, data)
    with_callbacks = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0), n_rounds=1, random_state=0
    ).set_callbacks(ProgressBar())
    with pytest.raises(ValueError, match="Callbacks on Flower"):
        _both(with_callbacks, data)
