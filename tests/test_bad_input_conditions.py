"""Each branch of a compound validation condition is tested on its own.

A check such as ``if a or b: raise`` guards two kinds of bad input; a test
that only ever triggers ``a`` leaves ``b`` free to be dropped. Here every
disjunct (every ``or`` branch, every part of ``not (x and y)``, every type
of an ``isinstance`` over several types) that leads to a raise is exercised
by its own input, with the accepted value beside it where the check is a
comparison. Also the central strategy's epochs with per-client
``local_epochs``.
"""

import joblib
import numpy as np
import pytest
from _helpers import assert_same_parameters, make_federation, small_federation
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skfedida.federated import evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.postprocessing import FederatedThresholdOptimizer
from skfedida.preprocessing import FederatedStandardScaler


@pytest.fixture(scope="module")
def data():
    return make_federation(n=240, frame=False)


def _fit(federation, data, **fit):
    X, y, clients, S = data
    return federation.fit(X, y, clients=clients, sensitive_features=S, **fit)


@pytest.fixture(scope="module")
def model(data):
    X, y, _, _ = data
    return LogisticRegression().fit(X, y)


# -- central strategy: the most epochs any client has ---------------------------


def test_central_trains_for_the_most_epochs_of_any_client(data):
    def central(epochs):
        federation = small_federation(strategy="central", local_epochs=epochs)
        return _fit(federation, data).estimator_

    most = central(3)
    assert_same_parameters(central([1, 3, 2]), most)
    assert_same_parameters(central(np.array([3, 1, 1])), most)
    fewest = central(1)
    assert not np.array_equal(most.coef_, fewest.coef_)
    assert not np.array_equal(central([1, 3, 2]).coef_, fewest.coef_)


# -- evaluate_clients: labels the model does not know --------------------------


def test_evaluate_clients_refuses_labels_the_model_does_not_know(model, data):
    X, y, clients, S = data
    kw = dict(clients=clients, sensitive_features=S, n_bootstrap=2, random_state=0)
    bad = np.where(np.arange(y.size) == 5, 2, y)
    with pytest.raises(ValueError, match=r"y has labels \[2\] that are not the"):
        evaluate_clients(model, X, bad, **kw)
    with pytest.raises(ValueError, match=r"y has labels \['0', '1'\] that are not"):
        evaluate_clients(model, X, y.astype(str), **kw)


def test_evaluate_clients_accepts_a_subset_of_the_model_classes(data):
    X, y, clients, S = data
    three = LogisticRegression().fit(X, np.where(np.arange(y.size) % 7 == 0, 2, y))
    assert three.classes_.tolist() == [0, 1, 2]
    report = evaluate_clients(
        three,
        X,
        y,  # only 0 and 1
        clients=clients,
        sensitive_features=S,
        metrics=["accuracy"],
        n_bootstrap=2,
        random_state=0,
    )
    assert len(report.per_client) == 3


# -- a cached Pipeline inside a federation -------------------------------------


def _in_federation(preprocessing, outer_memory=None):
    return small_federation(
        Pipeline(
            [("pre", preprocessing), ("model", FairPenaltyLogisticRegression())],
            memory=outer_memory,
        )
    )


@pytest.mark.parametrize("kind", ["str", "Memory"])
@pytest.mark.parametrize("where", ["nested", "outer"])
def test_a_pipeline_with_any_memory_is_refused(data, tmp_path, kind, where):
    memory = str(tmp_path) if kind == "str" else joblib.Memory(tmp_path, verbose=0)
    if where == "nested":
        federation = _in_federation(
            Pipeline([("scale", FederatedStandardScaler())], memory=memory)
        )
        path = r"estimator\['pre'\]"
    else:
        federation = _in_federation(FederatedStandardScaler(), outer_memory=memory)
        path = r"estimator"
    with pytest.raises(ValueError, match=path + r" is a Pipeline with memory="):
        _fit(federation, data)


def test_a_pipeline_with_memory_none_is_accepted(data):
    nested = Pipeline([("scale", FederatedStandardScaler())], memory=None)
    assert _fit(_in_federation(nested), data).n_rounds == 1


# -- FederatedThresholdOptimizer: tolerance with a selection_rate ----------------


@pytest.mark.parametrize("selection_rate", [0.0, 0.3, 1.0])
def test_tolerance_with_any_selection_rate_is_refused(model, data, selection_rate):
    X, y, _, S = data
    post = FederatedThresholdOptimizer(
        model, tolerance=0.1, selection_rate=selection_rate, prefit=True
    )
    with pytest.raises(ValueError, match="cannot be combined with tolerance > 0"):
        post.fit(X, y, sensitive_features=S)


@pytest.mark.parametrize(
    "options",
    [
        {"tolerance": 0.0, "selection_rate": 0.0},
        {"tolerance": 0.0, "selection_rate": 1.0},
        {"tolerance": 0.1, "selection_rate": None},
    ],
)
def test_tolerance_or_selection_rate_alone_is_accepted(model, data, options):
    X, y, _, S = data
    post = FederatedThresholdOptimizer(model, prefit=True, **options)
    assert post.fit(X, y, sensitive_features=S).predict(X, sensitive_features=S).size


# -- the broader audit: branches no other test triggers on its own --------------


@pytest.mark.parametrize(
    "epochs",
    [[True, True, True], [2.0, np.nan, 1.0], [np.inf, 1.0, 1.0]],
    ids=["bool", "nan", "inf"],
)
def test_local_epochs_of_booleans_or_non_finite_floats_are_refused(data, epochs):
    # epochs.dtype.kind == "b", and a float array that is not all finite.
    with pytest.raises(ValueError, match="local_epochs must be whole numbers"):
        _fit(small_federation(local_epochs=epochs), data)


def test_local_epochs_as_whole_floats_are_accepted(data):
    assert _fit(small_federation(local_epochs=[1.0, 2.0, 1.0]), data).n_rounds == 1


def test_fairfed_min_group_size_zero_is_refused(data):
    from skfedida.federated import FairFed

    with pytest.raises(
        ValueError, match=r"FairFed needs metric .* min_group_size >= 1"
    ):
        _fit(small_federation(aggregation=FairFed(min_group_size=0)), data)


@pytest.mark.parametrize(
    "scores", [[0.2, np.nan], [0.2, -1e-12], [0.2, 1 + 1e-12]], ids=["nan", "<0", ">1"]
)
def test_score_histogram_refuses_scores_outside_zero_to_one(scores):
    from skfedida.metrics import score_histogram

    with pytest.raises(ValueError, match=r"scores must be probabilities in \[0, 1\]"):
        score_histogram(scores)


def test_score_histogram_accepts_zero_and_one():
    from skfedida.metrics import score_histogram

    assert score_histogram([0.0, 1.0]).sum() == 2


@pytest.mark.parametrize(
    "histograms, message",
    [
        (np.ones((2, 2, 3)), "histograms must be one histogram of shape"),
        (np.zeros((0, 3)), "histograms must be one histogram of shape"),
        ([[1.0, 2.0], [[1.0], [2.0]]], r"histogram 1 must be a non-empty 1-D array"),
        ([[1.0, 2.0], []], r"histogram 1 must be a non-empty 1-D array"),
    ],
    ids=["3-D array", "no rows", "2-D row", "empty row"],
)
def test_threshold_at_rate_refuses_histograms_of_the_wrong_shape(histograms, message):
    from skfedida.metrics import threshold_at_rate

    with pytest.raises(ValueError, match=message):
        threshold_at_rate(histograms, 0.5)


@pytest.mark.parametrize(
    "attributes", [{}, {"race": ["A", "B"], "gender": []}], ids=["none", "empty"]
)
def test_sensitive_attributes_without_values_are_refused(attributes):
    from skfedida.datasets import make_federated_classification

    with pytest.raises(ValueError, match="sensitive_attributes needs at least one"):
        make_federated_classification(50, sensitive_attributes=attributes)


@pytest.mark.parametrize(
    "config",
    [
        {"partition-id": "0", "num-partitions": 2},
        {"partition-id": 0, "num-partitions": 2.0},
        {"partition-id": True, "num-partitions": 2},
        {"partition-id": -1, "num-partitions": 2},
        {"partition-id": 2, "num-partitions": 2},
    ],
    ids=["str id", "float count", "bool id", "negative", "id == count"],
)
def test_a_node_config_outside_its_partitions_is_refused(config):
    pytest.importorskip("flwr")
    from types import SimpleNamespace

    from skfedida.flower._client_app import _node_partition

    with pytest.raises(ValueError, match="needs integers 0 <= partition-id < num"):
        _node_partition(SimpleNamespace(node_config=config))
    assert _node_partition(
        SimpleNamespace(node_config={**config, "partition-id": 1, "num-partitions": 2})
    ) == (1, 2)
