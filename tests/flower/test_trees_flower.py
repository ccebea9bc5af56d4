"""Boosted trees on Flower equal the in-process federation to the last bit (issue 36).

The ServerApp sends the same queries as ``FederatedEstimator.fit`` (the
same server code, ``federated_trees``, over Flower messages instead of
calls), and each node answers with the same client (``tree_client``) from
its own rows: the trees, the model's predictions and the gate's records
are the in-process federation's, bit for bit, without a penalty and with
one, with pandas categories, early stopping on each client's own held-out
rows, and a sampler. Also what crosses the boundary: no array of one value per
row, and no value of a continuous column but its clients' extremes.
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

pytest.importorskip("flwr")

from skfedida._codec import decode, encode
from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier, _boosting
from skfedida.federated import FederatedEstimator
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.over_sampling import FairnessAwareROSE

N_CLIENTS = 3


@pytest.fixture(scope="module")
def data():
    data = make_federated_classification(
        1800, n_clients=N_CLIENTS, n_features=4, random_state=11, group_shift=1.0
    )
    frame = pd.DataFrame(data.data, columns=["a", "b", "c", "d"])
    rng = np.random.default_rng(0)
    kinds = np.array(["x", "y", "z", "w", "v"], dtype=object)
    picks = data.clients + rng.integers(0, 3, len(data.clients))
    frame["kind"] = pd.Categorical(kinds[picks])
    frame["a"] += (picks % 2) * 1.0
    data.frame = frame
    return data


def _load(data, X):
    def load(context):
        rows = data.clients == context.node_config["partition-id"]
        return {
            "X": X[rows]
            if isinstance(X, np.ndarray)
            else X[rows].reset_index(drop=True),
            "y": data.target[rows],
            "sensitive_features": {k: v[rows] for k, v in data.sensitive.items()},
        }

    return load


def _both(data, federation, X):
    in_process = clone(federation).fit(
        X, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    on_flower = run_in_process(
        make_server_app(federation),
        make_client_app(federation, _load(data, X)),
        num_partitions=N_CLIENTS,
    )
    return in_process, on_flower


def _same(a, b, X):
    ours, theirs = a.estimator_, b.estimator_
    assert ours.n_iter_ == theirs.n_iter_
    assert ours._baseline_prediction[0, 0] == theirs._baseline_prediction[0, 0]
    for p, q in zip(ours._predictors, theirs._predictors, strict=True):
        np.testing.assert_array_equal(p[0].nodes, q[0].nodes)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.client_sizes_, b.client_sizes_)
    np.testing.assert_array_equal(a.class_prior_, b.class_prior_)
    for name in ("multipliers_", "constrained_rates_", "rate_gaps_"):
        if hasattr(ours, name):
            np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name))


@pytest.mark.parametrize(
    "params, frame",
    [
        ({}, False),
        ({"fairness": 2.0}, False),
        ({"fairness": 1.0}, True),
        ({"fairness": 1.0, "early_stopping": True, "n_iter_no_change": 2}, True),
        ({"constraints": "equalized_odds"}, True),
        ({"constraints": "demographic_parity", "class_weight": "balanced"}, False),
    ],
    ids=[
        "plain",
        "penalty",
        "categories",
        "early-stopping",
        "constraint",
        "constraint-class-weights",
    ],
)
def test_flower_equals_in_process_to_the_last_bit(data, params, frame):
    X = data.frame if frame else data.data
    estimator = FairHistGradientBoostingClassifier(
        max_iter=8, early_stopping=False, random_state=0
    ).set_params(**params)
    federation = FederatedEstimator(estimator, random_state=3)
    _same(*_both(data, federation, X), X)


def test_flower_equals_in_process_with_a_sampler(data):
    estimator = FairHistGradientBoostingClassifier(
        max_iter=6, early_stopping=False, random_state=0, fairness=1.0
    )
    federation = FederatedEstimator(
        estimator,
        sampler=FairnessAwareROSE(random_state=0),
        random_state=5,
    )
    _same(*_both(data, federation, data.data), data.data)


def test_a_client_failing_on_flower_is_named_with_its_node(data):
    def load(context):
        loaded = _load(data, data.data)(context)
        if context.node_config["partition-id"] == 1:
            loaded["y"] = np.where(loaded["y"] == 1, 7, 0)  # a third class
        return loaded

    federation = FederatedEstimator(
        FairHistGradientBoostingClassifier(max_iter=3, early_stopping=False),
        random_state=0,
    )
    with pytest.raises(ValueError, match="binary classifier; the clients' labels"):
        run_in_process(
            make_server_app(federation),
            make_client_app(federation, load),
            num_partitions=N_CLIENTS,
        )


def test_what_crosses_is_no_row(data, monkeypatch):
    # Every answer that reaches the server, as it travels (JSON decoded).
    seen = []
    send = _boosting.in_process

    def recording(clients, batch=None):
        # Each client's own answers, as they cross a network (not those of
        # the in-process batch, which stay in the process).
        inner = send(clients)

        def transport(query, active):
            answers = inner(query, active)
            seen.extend(decode(encode(a)) for a in answers.values())
            return answers

        return transport

    monkeypatch.setattr("skfedida.federated._trees.in_process", recording)
    X = data.data
    FederatedEstimator(
        # No early stopping: the clients' ranges are then those of all rows.
        FairHistGradientBoostingClassifier(
            max_iter=5, early_stopping=False, random_state=0, fairness=1.0
        ),
        random_state=0,
    ).fit(X, data.target, clients=data.clients, sensitive_features=data.sensitive)
    sizes = {int(np.sum(data.clients == k)) for k in range(N_CLIENTS)}
    extremes = {
        float(v)
        for k in range(N_CLIENTS)
        for column in X[data.clients == k].T
        for v in (np.nanmin(column), np.nanmax(column))
    }
    values = set(X.ravel().tolist()) - extremes

    def arrays(value):
        if isinstance(value, np.ndarray):
            yield value
        elif isinstance(value, dict):
            for item in value.values():
                yield from arrays(item)
        elif isinstance(value, list | tuple):
            for item in value:
                yield from arrays(item)

    kinds = set()
    for answer in seen:
        kinds |= set(answer)
        for array in arrays(answer):
            assert not set(array.shape) & sizes, array.shape
            if array.dtype.names is None and array.dtype.kind == "f":
                assert not set(array.ravel().tolist()) & values
    assert {"histograms", "cells", "score_sums", "counts"} <= kinds
    assert "loss" not in kinds  # no early stopping: no log-loss sums


@pytest.mark.parametrize("frame", [False, True], ids=["array", "categories"])
def test_group_thresholds_after_the_trees_equal_in_process(data, frame):
    from skfedida.postprocessing import FederatedThresholdOptimizer

    X = data.frame if frame else data.data
    estimator = FairHistGradientBoostingClassifier(
        max_iter=6, early_stopping=False, random_state=0
    )
    federation = FederatedEstimator(estimator, random_state=0)
    post = FederatedThresholdOptimizer(federation, random_state=0)
    on_flower = run_in_process(
        make_server_app(federation, postprocessor=post),
        make_client_app(federation, _load(data, X)),
        num_partitions=N_CLIENTS,
    )
    in_process = clone(post).fit(
        X, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    _same(on_flower.estimator_, in_process.estimator_, X)
    kwargs = {"sensitive_features": data.sensitive, "clients": data.clients}
    np.testing.assert_array_equal(
        on_flower.predict(X, **kwargs), in_process.predict(X, **kwargs)
    )


def test_warm_starts_and_callbacks_of_trees_on_flower_are_refused(data):
    from sklearn.callback import ProgressBar

    estimator = FairHistGradientBoostingClassifier(max_iter=2, early_stopping=False)
    for federation in (
        FederatedEstimator(estimator, warm_start=True),
        FederatedEstimator(estimator).set_callbacks(ProgressBar()),
    ):
        with pytest.raises(ValueError, match="on Flower"):
            run_in_process(
                make_server_app(federation),
                make_client_app(federation, _load(data, data.data)),
                num_partitions=N_CLIENTS,
            )
