"""The fair estimators' documented options, each stated as an observable fact.

Where a mutation run found an option whose effect no test looked at: L-BFGS's
``tol`` and ``warm_start``, the network's initialisation and Adam's first
step, and the feature-scale warnings.
"""

import warnings

import numpy as np
import pytest

from skfedida.exceptions import DataScaleWarning
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier


def _data(n=400, n_features=4, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, 2, n)
    X = rng.normal(size=(n, n_features)) + 0.5 * groups[:, None]
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0.3).astype(int)
    return X, y, groups


# -- FairPenaltyLogisticRegression.fit: L-BFGS's tol and warm_start -------------


def test_a_looser_tol_stops_lbfgs_after_fewer_iterations():
    # tol is L-BFGS's gradient tolerance: a looser one stops it earlier.
    X, y, groups = _data()
    iterations = [
        FairPenaltyLogisticRegression(fairness=2.0, tol=tol)
        .fit(X, y, sensitive_features=groups)
        .n_iter_
        for tol in (1e-1, 1e-10)
    ]
    assert iterations[0] < iterations[1]


def test_warm_start_refits_from_the_previous_solution():
    # Refitted on the same rows, a warm start begins at the optimum and has
    # nothing left to do; a cold start walks there again.
    X, y, groups = _data()
    model = FairPenaltyLogisticRegression(fairness=2.0, tol=1e-8, warm_start=True)
    first = model.fit(X, y, sensitive_features=groups).n_iter_
    coef = model.coef_.copy()
    assert first > 3
    assert model.fit(X, y, sensitive_features=groups).n_iter_ <= 1
    np.testing.assert_allclose(model.coef_, coef, atol=1e-6)


# -- FairMLPClassifier: its initialisation and Adam's first step ----------------


def _initialised(**params):
    """A network's initial parameters: a first partial_fit of zero weight."""
    X, y, groups = _data(n_features=30)
    model = FairMLPClassifier(random_state=0, **params)
    model.partial_fit(
        X, y, classes=[0, 1], sensitive_features=groups, sample_weight=np.zeros(len(y))
    )
    return model, X, y, groups


@pytest.mark.parametrize(
    "activation, factor", [("logistic", 2.0), ("relu", 6.0), ("tanh", 6.0)]
)
def test_the_network_starts_from_glorot_uniform_weights(activation, factor):
    # As sklearn's MLPClassifier: weights and intercepts of a layer of fan_in
    # inputs and fan_out units uniform on +-sqrt(factor / (fan_in + fan_out)),
    # factor 2 for the logistic activation and 6 for the others.
    model, *_ = _initialised(hidden_layer_sizes=(40,), activation=activation)
    for W, b in zip(model.coefs_, model.intercepts_, strict=True):
        bound = np.sqrt(factor / (W.shape[0] + W.shape[1]))
        assert np.abs(W).max() <= bound
        assert np.abs(b).max() <= bound
    # The first layer's 30 x 40 uniform draws come within 1% of its bound.
    first = model.coefs_[0]
    assert np.abs(first).max() > 0.99 * np.sqrt(factor / sum(first.shape))


def test_adams_first_step_moves_every_parameter_by_the_learning_rate():
    # Adam's bias correction makes its first step m / sqrt(v) = g / |g|: every
    # parameter with a gradient well above epsilon moves by learning_rate
    # (Kingma & Ba, 2015, section 2.1), whatever the gradient's size.
    model, X, y, groups = _initialised(
        hidden_layer_sizes=(5,), solver="adam", learning_rate=0.01, batch_size=1000
    )
    before = [w.copy() for w in model.coefs_ + model.intercepts_]
    model.partial_fit(X, y, sensitive_features=groups)  # one minibatch: one step
    moves = np.concatenate(
        [
            np.abs(w - w0).ravel()
            for w, w0 in zip(model.coefs_ + model.intercepts_, before, strict=True)
        ]
    )
    assert moves.max() <= 0.01 * (1 + 1e-6)
    # Most parameters have a gradient far above epsilon = 1e-8.
    assert np.mean(np.isclose(moves, 0.01, rtol=1e-3)) > 0.9


# -- DataScaleWarning -------------------------------------------------------------


def test_a_network_warns_when_one_feature_exceeds_its_largest_input():
    # FairMLPClassifier's hidden units saturate beyond about 1e3: one such
    # feature among unit ones is enough for the warning (their scales differ
    # by less than the 1e4 of the other check).
    X, y, groups = _data()
    X[:, 1] *= 2000.0
    with pytest.warns(DataScaleWarning, match="hidden units"):
        FairMLPClassifier().partial_fit(X, y, classes=[0, 1], sensitive_features=groups)


@pytest.mark.parametrize("ratio, warns", [(3e3, False), (1e5, True)])
def test_features_whose_scales_differ_by_more_than_1e4_warn(ratio, warns):
    # DataScaleWarning's documented threshold: largest absolute values of
    # two features more than a factor of 1e4 apart.
    X, y, groups = _data()
    X /= np.abs(X).max(axis=0)
    X[:, 2] *= ratio
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FairPenaltyLogisticRegression().partial_fit(
            X, y, classes=[0, 1], sensitive_features=groups
        )
    scale = [w for w in caught if issubclass(w.category, DataScaleWarning)]
    assert bool(scale) is warns


# -- FairMLPClassifier.fit: early stopping ----------------------------------------


def _early_stopped(**params):
    X, y, groups = _data(n=300, seed=4)
    options = dict(
        hidden_layer_sizes=(6,),
        early_stopping=True,
        validation_fraction=0.3,
        learning_rate=0.5,
        tol=0.0,
        random_state=1,
    )
    model = FairMLPClassifier(**{**options, **params})
    return model.fit(X, y, sensitive_features=groups)


def test_early_stopping_stops_n_iter_no_change_epochs_after_the_best():
    # With tol=0 an epoch improves when its validation objective is below
    # the best so far: the fit ends after n_iter_no_change epochs without one.
    model = _early_stopped(n_iter_no_change=3, max_iter=200)
    best = int(np.argmin(model.validation_scores_))
    assert model.n_iter_ == best + 1 + 3
    assert len(model.validation_scores_) == model.n_iter_
    assert model.best_loss_ == model.validation_scores_[best]


def test_early_stopping_returns_the_parameters_of_its_best_epoch():
    # The same seeded fit cut at the best epoch by max_iter draws the same
    # split, start and minibatches: its parameters are the best epoch's.
    from sklearn.exceptions import ConvergenceWarning

    model = _early_stopped(n_iter_no_change=3, max_iter=200)
    best = int(np.argmin(model.validation_scores_)) + 1
    assert model.n_iter_ > best  # the last epochs were worse
    with pytest.warns(ConvergenceWarning):
        cut = _early_stopped(n_iter_no_change=3, max_iter=best)
    for w, w_cut in zip(
        model.coefs_ + model.intercepts_, cut.coefs_ + cut.intercepts_, strict=True
    ):
        np.testing.assert_array_equal(w, w_cut)


# -- sample weights ---------------------------------------------------------------


@pytest.mark.parametrize(
    "make", [FairPenaltyLogisticRegression, lambda: FairMLPClassifier(max_iter=5)]
)
@pytest.mark.parametrize("method", ["fit", "partial_fit"])
def test_a_negative_sample_weight_is_refused(make, method):
    # A negative weight turns a row's loss into a gain: refused, as sklearn
    # refuses it, whatever the form of the weights (here the float64 array
    # the estimators take without a copy).
    X, y, groups = _data(n=50)
    weight = np.ones(len(y))
    weight[3] = -0.5
    kwargs = {"classes": [0, 1]} if method == "partial_fit" else {}
    with pytest.raises(ValueError, match=r"[Nn]egative"):
        getattr(make(), method)(
            X, y, sensitive_features=groups, sample_weight=weight, **kwargs
        )


@pytest.mark.parametrize("solver", ["sgd", "adam"])
def test_a_new_fit_forgets_the_previous_one(solver):
    # fit starts afresh (warm_start=False): after a fit on other rows, a fit
    # gives the model a fresh estimator gives, to the last bit: the weights
    # and the optimiser's state (Adam's moments) are both reset.
    rng = np.random.default_rng(3)
    X_first, X = rng.normal(size=(2, 60, 4))
    y_first, y = rng.integers(0, 2, size=(2, 60))
    S = np.repeat([0, 1], 30)
    options = dict(
        hidden_layer_sizes=(5,), solver=solver, max_iter=5, tol=0.0, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # five epochs do not converge
        refitted = FairMLPClassifier(**options).fit(
            X_first, y_first, sensitive_features=S
        )
        refitted.fit(X, y, sensitive_features=S)
        fresh = FairMLPClassifier(**options).fit(X, y, sensitive_features=S)
    for mine, theirs in zip(
        refitted.coefs_ + refitted.intercepts_,
        fresh.coefs_ + fresh.intercepts_,
        strict=True,
    ):
        assert mine.tobytes() == theirs.tobytes()
