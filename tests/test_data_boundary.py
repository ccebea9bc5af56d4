"""The data boundary: the server side sees parameter arrays and row counts only.

The recording estimator and sampler of ``tests/test_federated.py`` show that a
client's training sees only its own rows; these tests show what crosses to
the server and what is kept, for every strategy. The Flower path is checked on
every reply in ``tests/test_flower.py``.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.linear_model import SGDClassifier
from sklearn.neural_network import MLPClassifier

from skfedida.federated import FederatedEstimator, WeightedMean, get_parameters
from skfedida.federated._client import _ClientData
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

# Client sizes chosen to collide with no model dimension (5 features, 7 hidden
# units, 2 classes) nor with numpy's 624-word RandomState.
SIZES = (101, 157, 211)
N_FEATURES = 5


def _federation():
    rng = np.random.RandomState(0)
    n = sum(SIZES)
    X = rng.randn(n, N_FEATURES)
    y = (X[:, 0] + 0.7 * rng.randn(n) > 0).astype(int)
    S = rng.choice(["a", "b", "c"], n)
    clients = np.repeat(np.arange(len(SIZES)), SIZES)
    return X, y, S, clients


ESTIMATORS = {
    "logistic": lambda: FairPenaltyLogisticRegression(),
    "fair-mlp": lambda: FairMLPClassifier(hidden_layer_sizes=(7,), solver="adam"),
    "sklearn-mlp": lambda: MLPClassifier(hidden_layer_sizes=(7,)),
    "sklearn-sgd": lambda: SGDClassifier(loss="log_loss"),
}


def _row_dimensions(n_rows):
    dims = set()
    for size in n_rows:
        dims |= {size, int(np.floor(size * 0.8)), int(np.ceil(size * 0.2))}
    return dims | {sum(n_rows)}


def _arrays_in(obj, path="", seen=None):
    """Every array-like reachable from obj's attributes, with its path."""
    seen = set() if seen is None else seen
    if id(obj) in seen or isinstance(obj, np.random.RandomState):
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray) or sp.issparse(obj):
        yield path, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield from _arrays_in(value, f"{path}[{key!r}]", seen)
    elif isinstance(obj, (list, tuple)):
        for i, value in enumerate(obj):
            yield from _arrays_in(value, f"{path}[{i}]", seen)
    elif isinstance(obj, (BaseEstimator, _ClientData)) or hasattr(obj, "__dict__"):
        if type(obj).__module__.startswith(("numpy", "builtins")):
            return
        for key, value in vars(obj).items():
            yield from _arrays_in(value, f"{path}.{key}", seen)


@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg", "local", "central"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_aggregation_receives_only_parameters_and_row_counts(
    monkeypatch, strategy, name
):
    X, y, S, clients = _federation()
    received = []
    # The aggregation seam: every parameter the server combines passes here.
    average = WeightedMean.aggregate

    def recording_average(self, parameter_lists, weights):
        received.append((parameter_lists, list(weights)))
        return average(self, parameter_lists, weights)

    monkeypatch.setattr(WeightedMean, "aggregate", recording_average)
    sampler = None if name.startswith("sklearn") else FairnessAwareROSE()
    fed = FederatedEstimator(
        ESTIMATORS[name](),
        strategy=strategy,
        sampler=sampler,
        n_rounds=2,
        local_epochs=1,
        validation_fraction=0.2,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)
    shapes = [p.shape for p in get_parameters(fed.estimator_)]
    assert received
    allowed_weights = set(fed.client_sizes_.tolist()) | {int(fed.client_sizes_.sum())}
    for parameter_lists, weights in received:
        for parameters in parameter_lists:
            assert [np.shape(p) for p in parameters] == shapes
        assert set(weights) <= allowed_weights
    # What the server keeps: no array with a row dimension anywhere in the
    # fitted meta-estimator (global model, client models, history).
    rows = _row_dimensions(SIZES)
    for path, array in _arrays_in(fed, "fed"):
        assert not rows & set(array.shape), f"{path} has shape {array.shape}"
    assert all(
        set(record)
        # update_norm: the server's own measure of the parameters it got.
        <= {"round", "client", "train_loss", "skipped", "update_norm"}
        | {
            f"val_{m}"
            for m in (
                "roc_auc",
                "selection_rate",
                "brier",
                "dpd",
                "dpr",
                "dfpr",
                "dppv",
            )
        }
        # Per-FedAvg: the client's personalised model's metrics on the same
        # held-out rows (issue 48's D11).
        | {"val_personal_roc_auc", "val_personal_dpd"}
        for record in fed.history_
    )


def test_the_scan_would_see_rows_left_on_an_estimator():
    # The check above can fail: an estimator that kept its training rows.
    X, y, S, clients = _federation()
    fed = FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1).fit(
        X, y, clients=clients, sensitive_features=S
    )
    fed.estimator_.leaked_rows_ = X[clients == 0]
    rows = _row_dimensions(SIZES)
    leaks = [p for p, a in _arrays_in(fed, "fed") if rows & set(a.shape)]
    assert leaks == ["fed.estimator_.leaked_rows_"]
