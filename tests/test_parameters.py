"""The parameter protocol on skfedida's and sklearn's estimators."""

import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.neural_network import MLPClassifier

from skfedida.federated import get_parameters, n_samples_seen, set_parameters
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier

rng = np.random.default_rng(0)
X = rng.normal(size=(200, 4))
y = (X[:, 0] + rng.normal(size=200) > 0).astype(int)
S = rng.integers(0, 2, size=200)


def _fitted(estimator):
    with warnings.catch_warnings(action="ignore"):
        if isinstance(estimator, (FairPenaltyLogisticRegression, FairMLPClassifier)):
            return estimator.partial_fit(X, y, classes=[0, 1], sensitive_features=S)
        return estimator.partial_fit(X, y, classes=[0, 1])


ESTIMATORS = {
    "fair-logistic": lambda: FairPenaltyLogisticRegression(random_state=0),
    "fair-mlp": lambda: FairMLPClassifier(hidden_layer_sizes=(5,), random_state=0),
    "sgd": lambda: SGDClassifier(loss="log_loss", random_state=0),
    "mlp": lambda: MLPClassifier(hidden_layer_sizes=(5,), random_state=0),
}


@pytest.mark.parametrize("make", ESTIMATORS.values(), ids=ESTIMATORS.keys())
def test_round_trip_and_prediction_follow_the_parameters(make):
    source, target = _fitted(make()), _fitted(make())
    for p in get_parameters(target):
        p += 1.0  # get_parameters returns copies
    parameters = get_parameters(source)
    np.testing.assert_allclose(
        target.predict_proba(X), _fitted(make()).predict_proba(X)
    )
    set_parameters(target, parameters)
    np.testing.assert_array_equal(target.predict_proba(X), source.predict_proba(X))
    parameters[0] += 1.0  # set_parameters copies too
    np.testing.assert_array_equal(target.predict_proba(X), source.predict_proba(X))
    # Training continues from the parameters that were set.
    with warnings.catch_warnings(action="ignore"):
        target.partial_fit(X, y)
    assert not np.array_equal(get_parameters(target)[0], get_parameters(source)[0])


@pytest.mark.parametrize("make", ESTIMATORS.values(), ids=ESTIMATORS.keys())
def test_rows_seen(make):
    estimator = _fitted(make())
    assert n_samples_seen(estimator) == 200
    with warnings.catch_warnings(action="ignore"):
        estimator.partial_fit(X, y)
    assert n_samples_seen(estimator) == 400


def test_shapes_and_layouts():
    lr = _fitted(FairPenaltyLogisticRegression())
    assert [p.shape for p in get_parameters(lr)] == [(1, 4), (1,)]
    mlp = _fitted(FairMLPClassifier(hidden_layer_sizes=(5, 3)))
    assert [p.shape for p in get_parameters(mlp)] == [
        (4, 5),
        (5, 3),
        (3, 1),
        (5,),
        (3,),
        (1,),
    ]
    with pytest.raises(ValueError, match="parameters of shapes"):
        set_parameters(lr, [np.zeros((1, 3)), np.zeros(1)])
    with pytest.raises(ValueError, match="parameters of shapes"):
        set_parameters(lr, [np.zeros((1, 4))])
    full_batch = LogisticRegression().fit(X, y)
    assert [p.shape for p in get_parameters(full_batch)] == [(1, 4), (1,)]


def test_errors_name_the_problem():
    from sklearn.exceptions import NotFittedError
    from sklearn.tree import DecisionTreeClassifier

    with pytest.raises(TypeError, match="no parameters in coefs_"):
        get_parameters(DecisionTreeClassifier().fit(X, y))
    with pytest.raises(NotFittedError):
        set_parameters(FairPenaltyLogisticRegression(), [np.zeros((1, 4)), np.zeros(1)])


@pytest.mark.parametrize("make", ESTIMATORS.values(), ids=ESTIMATORS.keys())
def test_set_parameters_refuses_the_right_sizes_in_other_shapes(make):
    # A (1, 4) coefficient row sent as a (4, 1) column holds the same numbers
    # in another layout: taken, it would break (or silently transpose) the
    # model. The shapes must be get_parameters' own.
    estimator = _fitted(make())
    before = estimator.predict_proba(X)
    parameters = get_parameters(estimator)
    reshaped = [p.reshape(p.shape[::-1]) if p.ndim == 2 else p for p in parameters]
    assert any(a.shape != b.shape for a, b in zip(reshaped, parameters, strict=True))
    with pytest.raises(ValueError, match="has parameters of shapes"):
        set_parameters(estimator, reshaped)
    np.testing.assert_array_equal(estimator.predict_proba(X), before)
