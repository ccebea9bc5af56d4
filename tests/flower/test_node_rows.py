"""A node loads and checks its rows once per run, and never reuses another run's."""

from collections import Counter

import numpy as np
import pytest

pytest.importorskip("flwr")

from _helpers import assert_same_parameters

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.federated._plan import FederationPlan
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE

N_CLIENTS = 3
N_ROUNDS = 4


def _federation(**options):
    return FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        n_rounds=N_ROUNDS,
        local_epochs=1,
        random_state=0,
        **options,
    )


def _data(seed):
    return make_federated_classification(600, n_clients=N_CLIENTS, random_state=seed)


class _Loader:
    """Serves ``self.data`` by partition, counting the calls per partition."""

    def __init__(self, data):
        self.data = data
        self.calls = Counter()

    def __call__(self, context):
        k = context.node_config["partition-id"]
        self.calls[k] += 1
        rows = self.data.clients == k
        return {
            "X": self.data.data[rows],
            "y": self.data.target[rows],
            "sensitive_features": {
                name: values[rows] for name, values in self.data.sensitive.items()
            },
        }


@pytest.fixture
def checks(monkeypatch):
    """How many times each partition's rows were checked and split."""
    calls = Counter()
    original = FederationPlan.client

    def counted(self, loaded, partition, *args, **kwargs):
        calls[partition] += 1
        return original(self, loaded, partition, *args, **kwargs)

    monkeypatch.setattr(FederationPlan, "client", counted)
    return calls


def _in_process(federation, data):
    return FederatedEstimator(**federation.get_params(deep=False)).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )


@pytest.mark.parametrize("validation_fraction", [None, 0.25])
def test_a_run_loads_and_checks_each_nodes_rows_once(checks, validation_fraction):
    # N rounds send every node N + 3 messages (discovery, initialisation, a
    # training message per round, the decision query), and N evaluations
    # with held-out rows; the rows are the same in each, so the node reads
    # and checks them once.
    federation = _federation(validation_fraction=validation_fraction)
    data = _data(0)
    load = _Loader(data)
    fitted = run_in_process(
        make_server_app(federation),
        make_client_app(federation, load),
        num_partitions=N_CLIENTS,
    )
    assert load.calls == dict.fromkeys(range(N_CLIENTS), 1)
    assert checks == dict.fromkeys(range(N_CLIENTS), 1)
    # Evaluated only on evaluation rows (issue 48's D7).
    assert len(fitted.federated_metrics_) == (N_ROUNDS if validation_fraction else 0)
    assert_same_parameters(fitted.estimator_, _in_process(federation, data).estimator_)


def test_a_new_run_on_the_same_nodes_reads_its_own_rows(checks, tmp_path):
    # The same app runs twice on different rows with the same run id, node
    # ids, node configs and run config: only the nodes' fresh state tells
    # the runs apart. The second run loads and checks its rows again and
    # gives the model of its own rows, not of the first run's.
    federation = _federation()
    first, second = _data(0), _data(1)
    load = _Loader(first)
    client_app = make_client_app(federation, load)
    run_config = {"result-path": str(tmp_path / "result.joblib")}

    def run():
        return run_in_process(
            make_server_app(federation),
            client_app,
            num_partitions=N_CLIENTS,
            run_config=run_config,
        )

    run()
    load.data = second
    again = run()
    assert load.calls == dict.fromkeys(range(N_CLIENTS), 2)
    assert checks == dict.fromkeys(range(N_CLIENTS), 2)
    assert_same_parameters(again.estimator_, _in_process(federation, second).estimator_)
    np.testing.assert_array_equal(
        again.client_sizes_, np.bincount(second.clients, minlength=N_CLIENTS)
    )


def test_a_new_run_config_on_the_same_nodes_checks_the_rows_again(checks):
    # The run config decides the split and seeds (here the seed): a run
    # with another one never trains on rows checked under the first.
    federation = _federation(validation_fraction=0.25)
    data = _data(0)
    load = _Loader(data)
    client_app = make_client_app(federation, load)
    run_in_process(make_server_app(federation), client_app, num_partitions=N_CLIENTS)
    reseeded = run_in_process(
        make_server_app(federation),
        client_app,
        num_partitions=N_CLIENTS,
        run_config={"seed": 3},
    )
    assert checks == dict.fromkeys(range(N_CLIENTS), 2)
    local = _in_process(federation.set_params(random_state=3), data)
    assert_same_parameters(reseeded.estimator_, local.estimator_)
