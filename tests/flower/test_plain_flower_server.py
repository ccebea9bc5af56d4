"""skfedida's ClientApp under a Flower user's own ServerApp and strategy (issue 35).

A ServerApp that runs Flower's FedAvg sends train and evaluate messages
(ArrayRecord in, ArrayRecord and MetricRecord out) with no skfedida
initialisation query first; the ClientApp sets itself up as skfedida's
server would have, and the federation trains as FederatedEstimator trains.
"""

import numpy as np
import pytest

pytest.importorskip("flwr")

from flwr.app import ArrayRecord, Context, RecordDict
from flwr.serverapp import ServerApp
from flwr.serverapp.strategy import FedAdam, FedAvg, FedAvgM, FedProx, FedYogi

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.flower import InProcessGrid, make_client_app
from skfedida.flower._grid import SUPERLINK_NODE_ID, _identity
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE

N_CLIENTS, N_ROUNDS = 3, 3


def _data():
    return make_federated_classification(1500, n_clients=N_CLIENTS, random_state=0)


def _load(data):
    def load(context):
        rows = data.clients == context.node_config["partition-id"]
        return {
            "X": data.data[rows],
            "y": data.target[rows],
            "sensitive_features": {k: v[rows] for k, v in data.sensitive.items()},
        }

    return load


def _run_flowers_fedavg(
    client_app, n_features, n_logits=1, strategy=None, node_configs=None
):
    """Flower's FedAvg (or ``strategy``) in a user's ServerApp, in-process.

    It starts from zeros for a linear model of ``n_logits`` logits.
    """
    results = {}
    server_app = ServerApp()

    @server_app.main()
    def main(grid, context):
        nonlocal strategy
        if strategy is None:
            strategy = FedAvg(fraction_train=1.0, fraction_evaluate=1.0)
        initial = [np.zeros((n_logits, n_features)), np.zeros(n_logits)]
        results["result"] = strategy.start(
            grid=grid, initial_arrays=ArrayRecord(initial), num_rounds=N_ROUNDS
        )

    extra = node_configs or [{}] * N_CLIENTS
    node_configs = [
        {"partition-id": k, "num-partitions": N_CLIENTS, **extra[k]}
        for k in range(N_CLIENTS)
    ]
    grid = InProcessGrid(client_app, node_configs, {})
    context = Context(
        run_id=grid.run_id,
        node_id=SUPERLINK_NODE_ID,
        node_config={},
        state=RecordDict(),
        run_config={},
    )
    with _identity(grid.run_id, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        server_app(grid, context)
    return results["result"], grid


@pytest.mark.parametrize(
    "sampler", [None, FairnessAwareROSE()], ids=["fedavg", "fedida"]
)
def test_flowers_fedavg_server_trains_skfedidas_clients_as_the_federation_does(
    sampler,
):
    data = _data()
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=sampler,
        n_rounds=N_ROUNDS,
        local_epochs=2,
        random_state=0,
    )
    result, grid = _run_flowers_fedavg(
        make_client_app(federation, _load(data)), data.data.shape[1]
    )
    in_process = FederatedEstimator(**federation.get_params(deep=False)).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    coef, intercept = result.arrays.to_numpy_ndarrays()
    # The same client seeds, rows and steps, and a FedAvg mean of the same
    # arrays: the same model, up to the rounding of Flower's own mean (1 ulp).
    np.testing.assert_allclose(coef, in_process.estimator_.coef_, rtol=1e-12)
    np.testing.assert_allclose(intercept, in_process.estimator_.intercept_, rtol=1e-12)
    # Every round's evaluation came back as Flower aggregates it.
    evaluated = result.evaluate_metrics_clientapp
    assert sorted(evaluated) == list(range(1, N_ROUNDS + 1))
    assert 0.5 < evaluated[N_ROUNDS]["val_roc_auc"] <= 1.0
    assert not any(reply.has_error() for reply in grid.replies)


def test_under_flowers_strategy_a_node_writes_the_last_rounds_model(tmp_path):
    # skfedida's ServerApp asks each node for its decisions after the last
    # round, and the node writes its model-path then; Flower's own strategy
    # sends no such query, so the node writes it at the last evaluation.
    import joblib

    data = _data()
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=N_ROUNDS,
        local_epochs=1,
        random_state=0,
    )
    paths = [tmp_path / f"site-{k}.joblib" for k in range(N_CLIENTS)]
    result, _ = _run_flowers_fedavg(
        make_client_app(federation, _load(data)),
        data.data.shape[1],
        node_configs=[{"model-path": str(path)} for path in paths],
    )
    coef, intercept = result.arrays.to_numpy_ndarrays()
    for path in paths:
        model = joblib.load(path)
        np.testing.assert_array_equal(model.coef_, coef)
        np.testing.assert_array_equal(model.intercept_, intercept)


STATEFUL_STRATEGIES = {
    "fedadam": lambda: FedAdam(eta=0.05, beta_1=0.9, beta_2=0.99),
    "fedyogi": lambda: FedYogi(eta=0.05, beta_1=0.9, beta_2=0.99),
    "fedavgm": lambda: FedAvgM(server_learning_rate=0.8, server_momentum=0.9),
    # The clients add the proximal term Flower's FedProx sends in its config.
    "fedprox": lambda: FedProx(proximal_mu=2.0),
}


@pytest.mark.parametrize("name", list(STATEFUL_STRATEGIES))
def test_flowers_strategy_as_aggregation_is_what_flower_itself_computes(name):
    # The oracle: Flower's own strategy, run by Flower's own start() in a
    # user's ServerApp over skfedida's ClientApp. The federation with the
    # same strategy as aggregation= gives the same model (the same clients'
    # arrays, Flower's server step with its moments across rounds).
    data = _data()
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        n_rounds=N_ROUNDS,
        local_epochs=1,
        random_state=0,
    )
    strategy = STATEFUL_STRATEGIES[name]()
    result, _grid = _run_flowers_fedavg(
        make_client_app(federation, _load(data)),
        data.data.shape[1],
        strategy=STATEFUL_STRATEGIES[name](),
    )
    in_process = FederatedEstimator(
        **{**federation.get_params(deep=False), "aggregation": strategy}
    ).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    plain_fedavg = FederatedEstimator(**federation.get_params(deep=False)).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    coef, intercept = result.arrays.to_numpy_ndarrays()
    np.testing.assert_allclose(coef, in_process.estimator_.coef_, rtol=1e-12)
    np.testing.assert_allclose(intercept, in_process.estimator_.intercept_, rtol=1e-12)
    # Not FedAvg under another name, and the user's strategy is untouched.
    assert np.abs(coef - plain_fedavg.estimator_.coef_).max() > 1e-3
    for state in ("current_arrays", "m_t", "v_t", "momentum_vector"):
        assert getattr(strategy, state, None) is None, state


def test_a_pipeline_federation_under_a_plain_strategy_says_why_it_cannot():
    from sklearn.pipeline import Pipeline

    from skfedida.preprocessing import FederatedStandardScaler

    data = _data()
    federation = FederatedEstimator(
        Pipeline(
            [
                ("scale", FederatedStandardScaler()),
                ("model", FairPenaltyLogisticRegression()),
            ]
        ),
        n_rounds=1,
        random_state=0,
    )
    _, grid = _run_flowers_fedavg(
        make_client_app(federation, _load(data)), data.data.shape[1]
    )
    errors = [reply.error.reason for reply in grid.replies if reply.has_error()]
    assert errors and all("statistics rounds" in reason for reason in errors)


@pytest.mark.parametrize(
    "setting, named",
    [
        ({"aggregation": "median"}, "aggregation"),
        ({"max_update_norm": "median"}, "max_update_norm"),
        ({"aggregation": FedAdam()}, "aggregation"),
    ],
    ids=["median", "clipping", "flowers-fedadam"],
)
def test_server_side_settings_under_a_plain_strategy_are_refused_not_dropped(
    setting, named
):
    # Under Flower's own strategy they would be left out silently (the model
    # came out as plain FedAvg's): each node says which, and why.
    data = _data()
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=1, random_state=0, **setting
    )
    _, grid = _run_flowers_fedavg(
        make_client_app(federation, _load(data)), data.data.shape[1]
    )
    errors = [reply.error.reason for reply in grid.replies if reply.has_error()]
    assert errors and all(
        named in reason and "skfedida's ServerApp" in reason for reason in errors
    )


def test_fairfed_under_a_plain_strategy_is_refused_not_a_second_array_record():
    from skfedida.federated import FairFed

    data = _data()
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(),
        aggregation=FairFed(),
        n_rounds=1,
        random_state=0,
    )
    _, grid = _run_flowers_fedavg(
        make_client_app(federation, _load(data)), data.data.shape[1]
    )
    errors = [reply.error.reason for reply in grid.replies if reply.has_error()]
    assert errors and all("FairFed" in reason for reason in errors)


def test_a_self_set_up_node_missing_a_class_says_to_pass_classes():
    # Three classes; client 0's rows lack the last. Set up from its own
    # labels, its model has two classes' arrays: the node names classes=.
    data = make_federated_classification(
        1500, n_clients=N_CLIENTS, n_classes=3, random_state=0
    )
    keep = ~((data.clients == 0) & (data.target == 2))
    data.data, data.target, data.clients = (
        data.data[keep],
        data.target[keep],
        data.clients[keep],
    )
    data.sensitive = {k: np.asarray(v)[keep] for k, v in data.sensitive.items()}
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=1, random_state=0
    )
    _, grid = _run_flowers_fedavg(
        make_client_app(federation, _load(data)), data.data.shape[1], n_logits=3
    )
    errors = [reply.error.reason for reply in grid.replies if reply.has_error()]
    assert any("make_client_app(..., classes=...)" in reason for reason in errors)
