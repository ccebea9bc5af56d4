"""The Flower backend: the real ClientApp and ServerApp, driven in-process."""

import joblib
import numpy as np
import pytest
from sklearn import config_context
from sklearn.neural_network import MLPClassifier

pytest.importorskip("flwr")

from _helpers import FailingLogistic, assert_same_parameters
from flwr.app import Context, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID
from flwr.serverapp.strategy import FedAdam, FedAvgM, FedProx

from skfedida.datasets import make_federated_classification
from skfedida.federated import (
    DifferentialPrivacy,
    FairFed,
    FederatedEstimator,
    QFedAvg,
    TrimmedMean,
)
from skfedida.flower import (
    InProcessGrid,
    load_result,
    make_client_app,
    make_server_app,
    run_in_process,
)
from skfedida.flower._apps import REPLY_CONFIG, REPLY_METRICS
from skfedida.flower._grid import _identity
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

N_CLIENTS = 3


@pytest.fixture(scope="module")
def data():
    # Unequal client sizes: FedAvg's n_k weights differ from uniform ones.
    sizes = np.linspace(1.0, 2.0, N_CLIENTS)
    return make_federated_classification(
        1200, n_clients=N_CLIENTS, client_sizes=sizes, random_state=3
    )


def _loader(data, fail=None):
    def load_data(context):
        k = context.node_config["partition-id"]
        if fail is not None:
            fail(k, context)
        rows = data.clients == k
        return {
            "X": data.data[rows],
            "y": data.target[rows],
            "sensitive_features": {
                name: values[rows] for name, values in data.sensitive.items()
            },
        }

    return load_data


def _in_process(federation, data):
    return FederatedEstimator(**federation.get_params(deep=False)).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )


def _on_flower(federation, data, run_config=None, **loader):
    return run_in_process(
        make_server_app(federation),
        make_client_app(federation, _loader(data, **loader)),
        num_partitions=N_CLIENTS,
        run_config=run_config,
    )


def _assert_same_model(flower, local):
    assert_same_parameters(flower.estimator_, local.estimator_)


FEDERATIONS = {
    "median": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        aggregation="median",
        n_rounds=2,
        local_epochs=1,
        random_state=4,
    ),
    "trimmed-mean": lambda: FederatedEstimator(
        FairMLPClassifier(hidden_layer_sizes=(5,), fairness=0.5),
        aggregation=TrimmedMean(beta=0.34),
        n_rounds=2,
        local_epochs=1,
        random_state=5,
    ),
    "qfedavg": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        aggregation=QFedAvg(q=2.0, client_learning_rate=0.1),
        n_rounds=2,
        local_epochs=1,
        random_state=6,
    ),
    "fairfed": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        aggregation=FairFed(metric="dtpr", beta=0.5),
        n_rounds=3,
        local_epochs=1,
        random_state=7,
    ),
    "fedida-logistic": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        n_rounds=3,
        local_epochs=2,
        validation_fraction=0.25,
        random_state=0,
    ),
    "fedida-mlp-adam": lambda: FederatedEstimator(
        FairMLPClassifier(hidden_layer_sizes=(8,), solver="adam", fairness=0.5),
        sampler=FairnessAwareROSE(),
        n_rounds=2,
        local_epochs=[1, 2, 1],
        random_state=1,
    ),
    "sklearn-mlp-generic-path": lambda: FederatedEstimator(
        MLPClassifier(hidden_layer_sizes=(6,), learning_rate_init=0.01),
        n_rounds=2,
        local_epochs=1,
        random_state=2,
    ),
    "pfedavg-client-fraction": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.5),
        strategy="pfedavg",
        sampler=FairnessAwareROSE(),
        client_fraction=0.67,
        n_rounds=3,
        local_epochs=1,
        random_state=4,
    ),
    "clipped-at-the-median-norm": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        max_update_norm="median",
        n_rounds=3,
        local_epochs=1,
        validation_fraction=0.25,
        random_state=8,
    ),
    "clipped-trimmed-mean": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        aggregation=TrimmedMean(beta=0.34),
        max_update_norm=0.05,
        n_rounds=2,
        local_epochs=1,
        random_state=9,
    ),
    "clipped-fairfed": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        aggregation=FairFed(metric="dpd", beta=0.5),
        max_update_norm=0.05,
        n_rounds=2,
        local_epochs=1,
        random_state=10,
    ),
    "flowers-fedadam-with-client-fraction": lambda: FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        aggregation=FedAdam(eta=0.05, beta_1=0.9, beta_2=0.99),
        client_fraction=0.67,
        n_rounds=3,
        local_epochs=1,
        random_state=12,
    ),
    "flowers-fedavgm-clipped": lambda: FederatedEstimator(
        FairMLPClassifier(hidden_layer_sizes=(5,), fairness=0.5),
        aggregation=FedAvgM(server_learning_rate=0.8, server_momentum=0.9),
        max_update_norm="median",
        n_rounds=3,
        local_epochs=1,
        random_state=13,
    ),
    "flowers-fedprox-mlp": lambda: FederatedEstimator(
        FairMLPClassifier(hidden_layer_sizes=(5,), fairness=0.5),
        sampler=FairnessAwareROSE(),
        aggregation=FedProx(proximal_mu=0.5),
        n_rounds=2,
        local_epochs=2,
        random_state=14,
    ),
    "differential-privacy": lambda: FederatedEstimator(
        FairMLPClassifier(hidden_layer_sizes=(4,), fairness=0.5),
        sampler=FairnessAwareROSE(),
        # A fixed noise_seed, so both runs draw the same noise (not private).
        dp=DifferentialPrivacy(noise_multiplier=0.8, clipping_norm=0.2, noise_seed=0),
        client_fraction=0.67,
        n_rounds=3,
        local_epochs=1,
        random_state=11,
    ),
}


@pytest.mark.parametrize("name", list(FEDERATIONS))
def test_flower_apps_give_the_in_process_model_to_the_last_bit(data, name):
    federation = FEDERATIONS[name]()
    local = _in_process(federation, data)
    flower = _on_flower(federation, data)
    _assert_same_model(flower, local)
    np.testing.assert_array_equal(flower.client_sizes_, local.client_sizes_)
    np.testing.assert_allclose(flower.class_prior_, local.class_prior_, rtol=0, atol=0)
    np.testing.assert_array_equal(flower.client_seeds_, local.client_seeds_)
    np.testing.assert_array_equal(flower.classes_, local.classes_)
    np.testing.assert_array_equal(flower.predict(data.data), local.predict(data.data))
    # Same clients trained in the same rounds, with the same losses.
    trained = [
        (r["round"], r["client"], r["train_loss"])
        for r in flower.history_
        if r.get("train_loss") is not None
    ]
    assert trained == [
        (r["round"], r["client"], r["train_loss"]) for r in local.history_
    ]
    # The server measures the same update norms, and spends the same privacy.
    assert [r.get("update_norm") for r in flower.history_ if "train_loss" in r] == [
        r.get("update_norm") for r in local.history_
    ]
    if local.dp is None:
        assert flower.privacy_ is None and local.privacy_ is None
    else:
        assert flower.privacy_.epsilon == local.privacy_.epsilon > 0
    if local.validation_fraction is not None:
        # The same summaries of the clients' claims (mean and median).
        assert flower.federated_metrics_.keys() == local.federated_metrics_.keys()
        for round_, theirs in local.federated_metrics_.items():
            for key, value in theirs.items():
                assert flower.federated_metrics_[round_][key] == pytest.approx(
                    value, rel=1e-12, nan_ok=True
                ), key
        # Clients evaluate on the same held-out rows as in-process validation.
        for ours, theirs in zip(flower.history_, local.history_, strict=True):
            for key in ("val_roc_auc", "val_dpd", "val_dpr", "val_dfpr", "val_dppv"):
                np.testing.assert_equal(ours[key], theirs[key])


def test_pfedavg_clients_report_their_personalised_models(data):
    federation = FEDERATIONS["pfedavg-client-fraction"]()
    load = _loader(data)

    def evaluating_their_own_rows(context):
        loaded = load(context)
        loaded["X_eval"], loaded["y_eval"] = loaded["X"], loaded["y"]
        loaded["sensitive_features_eval"] = loaded["sensitive_features"]
        return loaded

    flower = run_in_process(
        make_server_app(federation),
        make_client_app(federation, evaluating_their_own_rows),
        num_partitions=N_CLIENTS,
    )
    last = [r for r in flower.history_ if r["round"] == 3]
    local = _in_process(federation, data)
    for record in last:
        personal = local.client_estimators_[record["client"]]
        rows = data.clients == record["client"]
        # Each client evaluates on its evaluation rows, here its training
        # rows again: the personalised model's AUROC there.
        from sklearn.metrics import roc_auc_score

        expected = roc_auc_score(
            data.target[rows], personal.predict_proba(data.data[rows])[:, 1]
        )
        assert record["val_personal_roc_auc"] == pytest.approx(expected, abs=1e-12)
    assert set(flower.federated_metrics_) == {1, 2, 3}
    assert "val_personal_dpd" in flower.federated_metrics_[3]


def test_run_config_overrides_rounds_epochs_and_seed(data):
    federation = FEDERATIONS["fedida-logistic"]()
    flower = _on_flower(
        federation, data, {"num-server-rounds": 2, "local-epochs": 1, "seed": 7}
    )
    local = _in_process(
        federation.set_params(n_rounds=2, local_epochs=1, random_state=7), data
    )
    _assert_same_model(flower, local)
    assert max(r["round"] for r in flower.history_) == 2


def test_aggregated_evaluation_is_the_weighted_mean_over_clients(data):
    flower = _on_flower(FEDERATIONS["fedida-logistic"](), data)
    for round_, aggregated in flower.federated_metrics_.items():
        records = [r for r in flower.history_ if r["round"] == round_]
        held_out = np.ceil(0.25 * flower.client_sizes_ / 0.75)
        for key in ("val_roc_auc", "val_dpd"):
            values = np.array([r[key] for r in records])
            # Weights are the clients' evaluation rows.
            weights = np.array([np.sum(data.clients == r["client"]) for r in records])
            weights = weights - flower.client_sizes_
            assert np.allclose(weights, held_out, atol=1)
            assert aggregated[key] == pytest.approx(
                np.average(values, weights=weights), rel=1e-12
            )


@pytest.mark.parametrize("name", ["fedida-logistic", "fairfed"])
def test_the_server_receives_only_parameters_counts_and_metrics(data, name):
    federation = FEDERATIONS[name]()
    client_app = make_client_app(federation, _loader(data))
    grid = InProcessGrid(
        client_app,
        [{"partition-id": k, "num-partitions": N_CLIENTS} for k in range(N_CLIENTS)],
    )
    context = Context(1, SUPERLINK_NODE_ID, {}, RecordDict(), {})
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        make_server_app(federation)(grid, context)
    shapes = None
    n_rows = len(data.target)
    assert grid.replies
    for reply in grid.replies:
        content = reply.content
        if "fairness" in content.array_records:
            # FairFed's report: four counts per group of the client's rows.
            counts = content.array_records["fairness"].to_numpy_ndarrays()
            assert len(counts) == 4
            assert all(c.ndim == 1 and np.array_equal(c, np.round(c)) for c in counts)
            assert counts[0].sum() <= n_rows
            content = RecordDict({k: v for k, v in content.items() if k != "fairness"})
        for record in content.array_records.values():
            arrays = record.to_numpy_ndarrays()
            if shapes is None:
                shapes = [a.shape for a in arrays]
            # Parameter arrays only: the model's shapes, never a row dimension.
            assert [a.shape for a in arrays] == shapes
            assert all(n_rows // N_CLIENTS not in a.shape for a in arrays)
        for record in content.metric_records.values():
            assert set(record) <= REPLY_METRICS
            assert all(isinstance(v, (int, float)) for v in record.values())
        for record in content.config_records.values():
            assert set(record) <= REPLY_CONFIG


def test_a_failing_client_is_an_error_naming_it_or_a_recorded_skip(data):
    common = dict(n_rounds=2, local_epochs=1, random_state=0)
    seeds = _in_process(
        FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1, random_state=0),
        data,
    ).client_seeds_
    FailingLogistic.failing_seeds = {int(seeds[1])}
    federation = FederatedEstimator(FailingLogistic(), **common)
    with pytest.raises(
        RuntimeError, match=r"Client 1 \(node \d+\) failed in round 1 \(training\)"
    ) as info:
        _on_flower(federation, data)
    assert "simulated client failure" in str(info.value)

    skipping = FederatedEstimator(FailingLogistic(), on_client_error="skip", **common)
    flower = _on_flower(skipping, data)
    local = _in_process(skipping, data)
    _assert_same_model(flower, local)  # the round aggregates the other clients
    skipped = [(r["round"], r["client"]) for r in flower.history_ if "skipped" in r]
    assert skipped == [(1, 1), (2, 1)]
    assert "simulated client failure" in flower.history_[1]["skipped"]

    FailingLogistic.failing_seeds = {int(s) for s in seeds}
    with pytest.raises(RuntimeError, match="Every selected client failed in round 1"):
        _on_flower(skipping, data)
    FailingLogistic.failing_seeds = frozenset()


def test_a_failed_run_leaves_its_error_in_the_result_file(data, tmp_path):
    def fail(k, context):
        if k == 2:
            raise OSError("partition 2's data are unreadable")

    federation = FEDERATIONS["fedida-logistic"]()
    path = tmp_path / "result.joblib"
    with pytest.raises(RuntimeError, match="unreadable"):
        _on_flower(federation, data, {"result-path": str(path)}, fail=fail)
    with pytest.raises(RuntimeError, match=r"The Flower run failed: .*unreadable"):
        load_result(path)
    with pytest.raises(FileNotFoundError, match="did not finish"):
        load_result(tmp_path / "missing.joblib")


def test_node_and_federation_misconfiguration_is_named(data):
    with pytest.raises(ValueError, match="strategy='fedavg' or 'pfedavg'"):
        make_client_app(
            FederatedEstimator(FairPenaltyLogisticRegression(), strategy="local"),
            _loader(data),
        )
    with pytest.raises(TypeError, match="FederatedEstimator"):
        make_server_app(FairPenaltyLogisticRegression())
    with pytest.raises(TypeError, match="load_data must be a callable"):
        make_client_app(FederatedEstimator(FairPenaltyLogisticRegression()), "x.csv")

    federation = FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1)
    client_app = make_client_app(federation, _loader(data))
    grid = InProcessGrid(
        client_app,
        [
            {"partition-id": 0, "num-partitions": 2},
            {"partition-id": 0, "num-partitions": 2},
        ],
    )
    context = Context(1, SUPERLINK_NODE_ID, {}, RecordDict(), {})
    with (
        _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID),
        pytest.raises(ValueError, match="both have partition-id 0"),
    ):
        make_server_app(federation)(grid, context)
    grid = InProcessGrid(client_app, [{"num-partitions": 1}])
    with (
        _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID),
        pytest.raises(RuntimeError, match="node config has no 'partition-id'"),
    ):
        make_server_app(federation)(grid, context)


@pytest.mark.parametrize(
    "partition, n_partitions",
    [(2, 2), (-1, 2), (0, 0), (0.0, 2), ("0", 2), (True, 2)],
)
def test_a_partition_outside_num_partitions_is_refused(data, partition, n_partitions):
    # partition-id K must lie in 0..N-1: K == N would load no rows of the
    # user's data (or another run's), and the error must say what was given.
    # A bool is an Integral, so True must be refused by name, not read as 1.
    federation = FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1)
    client_app = make_client_app(federation, _loader(data))
    grid = InProcessGrid(
        client_app, [{"partition-id": partition, "num-partitions": n_partitions}]
    )
    context = Context(1, SUPERLINK_NODE_ID, {}, RecordDict(), {})
    with (
        _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID),
        pytest.raises(RuntimeError, match=r"0 <= partition-id < num-partitions"),
    ):
        make_server_app(federation)(grid, context)


def test_a_single_class_client_needs_the_federation_classes(data):
    def load_one_class(context):
        loaded = _loader(data)(context)
        if context.node_config["partition-id"] == 0:
            keep = loaded["y"] == 0
            loaded = {
                "X": loaded["X"][keep],
                "y": loaded["y"][keep],
                "sensitive_features": {
                    n: v[keep] for n, v in loaded["sensitive_features"].items()
                },
            }
        return loaded

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=1, local_epochs=1, random_state=0
    )
    # The server sends the union of the labels the clients declared (issue
    # 48's D17): it used to refuse the client unless given classes=.
    fitted = [
        run_in_process(
            make_server_app(federation),
            make_client_app(federation, load_one_class, **given),
            num_partitions=N_CLIENTS,
        )
        for given in ({}, {"classes": [0, 1]})
    ]
    for each in fitted:
        np.testing.assert_array_equal(each.classes_, [0, 1])
    assert_same_parameters(fitted[0].estimator_, fitted[1].estimator_)


def test_column_mode_on_flower_matches_in_process(data):
    import pandas as pd

    frame = pd.DataFrame(
        data.data, columns=[f"x{i}" for i in range(data.data.shape[1])]
    )
    frame = frame.assign(**data.sensitive)
    columns = list(data.sensitive)
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(sensitive=columns),
        sampler=FairnessAwareROSE(sensitive=columns),
        sensitive=columns,
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    )
    local = FederatedEstimator(**federation.get_params(deep=False)).fit(
        frame, data.target, clients=data.clients
    )

    def load_data(context):
        rows = data.clients == context.node_config["partition-id"]
        return {"X": frame[rows], "y": data.target[rows]}

    flower = run_in_process(
        make_server_app(federation),
        make_client_app(federation, load_data),
        num_partitions=N_CLIENTS,
    )
    _assert_same_model(flower, local)
    np.testing.assert_array_equal(flower.feature_names_in_, frame.columns)
    np.testing.assert_array_equal(flower.predict(frame), local.predict(frame))


def test_clients_keep_the_model_they_use_on_their_node(data, tmp_path):
    federation = FEDERATIONS["pfedavg-client-fraction"]()
    paths = [str(tmp_path / f"site-{k}" / "model.joblib") for k in range(N_CLIENTS)]
    run_in_process(
        make_server_app(federation),
        make_client_app(federation, _loader(data)),
        num_partitions=N_CLIENTS,
        node_configs=[{"model-path": path} for path in paths],
    )
    local = _in_process(federation, data)
    for k, path in enumerate(paths):
        # The personalised model, as FederatedEstimator gives client k.
        assert_same_parameters(joblib.load(path), local.client_estimators_[k])
    with pytest.raises(ValueError, match="node_configs has 1 entries for 3"):
        run_in_process(
            make_server_app(federation),
            make_client_app(federation, _loader(data)),
            num_partitions=N_CLIENTS,
            node_configs=[{}],
        )


def test_metadata_routing_holds_on_flower_as_in_process(data):
    # An estimator that declines S trains unpenalised in-process; on Flower too.
    with config_context(enable_metadata_routing=True):
        declining = FairPenaltyLogisticRegression(fairness=1.0).set_partial_fit_request(
            sensitive_features=False
        )
        federation = FederatedEstimator(
            declining,
            sampler=FairnessAwareROSE(),
            n_rounds=2,
            local_epochs=1,
            random_state=0,
        )
        local = _in_process(federation, data)
        flower = _on_flower(federation, data)
    _assert_same_model(flower, local)


def test_fairfed_reports_on_held_out_rows_as_in_process(data):
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.5),
        aggregation=FairFed(metric="dpd", beta=1.0),
        validation_fraction=0.3,
        n_rounds=2,
        local_epochs=1,
        random_state=8,
    )
    _assert_same_model(_on_flower(federation, data), _in_process(federation, data))


def test_a_federation_of_three_classes_on_flower_is_the_in_process_one():
    # Issue 21. Client 0 has no row of class 2: the clients are told the
    # federation's classes (make_client_app's classes=), which FederatedEstimator
    # reads from all rows.
    shares = np.ones((N_CLIENTS, 4, 3))
    shares[0, :, 2] = 0.0
    data = make_federated_classification(
        900,
        n_clients=N_CLIENTS,
        n_classes=3,
        class_proportions=shares,
        client_sizes=np.linspace(1.0, 2.0, N_CLIENTS),
        random_state=3,
    )
    assert 2 not in data.target[data.clients == 0]
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        n_rounds=2,
        local_epochs=1,
        validation_fraction=0.25,
        random_state=12,
    )
    local = _in_process(federation, data)
    # Client 0 lacks class 2: the server sends the union of the labels the
    # clients declared (issue 48's D17), as classes= would.
    _assert_same_model(_on_flower(federation, data), local)
    flower = run_in_process(
        make_server_app(federation),
        make_client_app(federation, _loader(data), classes=[0, 1, 2]),
        num_partitions=N_CLIENTS,
    )
    _assert_same_model(flower, local)
    np.testing.assert_array_equal(flower.classes_, [0, 1, 2])
    np.testing.assert_array_equal(flower.class_prior_, local.class_prior_)
    np.testing.assert_array_equal(
        flower.predict_proba(data.data), local.predict_proba(data.data)
    )
    for round_, theirs in local.federated_metrics_.items():
        for key, value in theirs.items():
            assert flower.federated_metrics_[round_][key] == pytest.approx(
                value, rel=1e-12, nan_ok=True
            ), key


@pytest.mark.filterwarnings("ignore::skfedida.exceptions.ClientDataWarning")
def test_the_server_warns_of_a_degenerate_multiclass_model():
    # Issue 21: the server's check read the clients' selection rate, which a
    # model of three classes does not have, so it never warned. It now reads
    # the classes' shares of the clients' decisions, summed over clients.
    from skfedida.exceptions import DegenerateModelWarning

    # Features that say nothing of the outcome, and one class for all but 6
    # rows: the model gives everybody that class.
    data = make_federated_classification(
        600, n_clients=N_CLIENTS, n_classes=3, class_sep=0.0, random_state=5
    )
    data.target = np.ones_like(data.target)
    data.target[:6] = [0, 2, 0, 2, 0, 2]
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(),
        n_rounds=3,
        local_epochs=2,
        validation_fraction=0.25,
        random_state=0,
    )
    # The classes' shares of the clients' training decisions, as in-process
    # (issue 48's D18: it read the last evaluation, and named the class '1').
    with pytest.warns(
        DegenerateModelWarning, match="predicts the 1 class for .* training rows"
    ):
        run_in_process(
            make_server_app(federation),
            make_client_app(federation, _loader(data), classes=[0, 1, 2]),
            num_partitions=N_CLIENTS,
        )


def test_clients_evaluate_on_their_own_evaluation_rows(data):
    # load_data may give a node evaluation rows of its own (X_eval, y_eval,
    # sensitive_features_eval): every round's val_* metrics are of those
    # rows (the last round's, of the final model), the federation's summary
    # weighs each client by their number, and training is as without them.
    from sklearn.metrics import brier_score_loss, roc_auc_score

    evaluation = make_federated_classification(
        600, n_clients=N_CLIENTS, client_sizes=[3, 1, 2], random_state=8
    )

    def load_data(context):
        loaded = _loader(data)(context)
        rows = evaluation.clients == context.node_config["partition-id"]
        loaded["X_eval"] = evaluation.data[rows]
        loaded["y_eval"] = evaluation.target[rows]
        loaded["sensitive_features_eval"] = {
            name: values[rows] for name, values in evaluation.sensitive.items()
        }
        return loaded

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.5), n_rounds=2, random_state=0
    )
    flower = run_in_process(
        make_server_app(federation),
        make_client_app(federation, load_data),
        num_partitions=N_CLIENTS,
    )
    assert_same_parameters(flower.estimator_, _in_process(federation, data).estimator_)
    eval_rows = np.bincount(evaluation.clients)
    assert len(set(eval_rows.tolist())) == N_CLIENTS
    last = {r["client"]: r for r in flower.history_ if r["round"] == 2}
    for k in range(N_CLIENTS):
        rows = evaluation.clients == k
        proba = flower.estimator_.predict_proba(evaluation.data[rows])[:, 1]
        assert last[k]["val_roc_auc"] == pytest.approx(
            roc_auc_score(evaluation.target[rows], proba), rel=1e-12
        )
        assert last[k]["val_brier"] == pytest.approx(
            brier_score_loss(evaluation.target[rows], proba), rel=1e-12
        )
    summary = flower.federated_metrics_[2]
    assert summary["val_roc_auc"] == pytest.approx(
        np.average(
            [last[k]["val_roc_auc"] for k in range(N_CLIENTS)], weights=eval_rows
        ),
        rel=1e-12,
    )
