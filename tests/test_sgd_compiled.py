"""The compiled minibatch loop of FairPenaltyLogisticRegression against its reference.

``BaseFairClassifier._minibatch_steps`` in numpy is the reference; the
compiled loop (``skfedida._models._sgd_fast``) must take the same steps, to 1e-10.
"""

import warnings

import numpy as np
import pytest

from skfedida._models import _logistic as linear_model
from skfedida.linear_model import FairPenaltyLogisticRegression


def test_compiled_loop_is_built():
    # A source tree installed without building the extension would silently
    # run the (about 30x slower) reference loop.
    assert linear_model.linear_sgd_steps is not None


def _data(seed, n=700, n_features=6, n_groups=4):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n)
    X = rng.normal(size=(n, n_features)) + 0.5 * groups[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.6).astype(int)
    weight = rng.uniform(0.2, 2.0, n)
    return X, y, groups, weight


def _fit(monkeypatch, compiled, params, X, y, groups, weight, epochs=3):
    """partial_fit epochs on the compiled loop of y's classes, or the reference."""
    classes = np.unique(y)
    name = "linear_sgd_steps" if classes.size == 2 else "multinomial_sgd_steps"
    calls = []
    if compiled:
        # Counted, so that a comparison cannot pass by running the reference
        # twice.
        loop = getattr(linear_model, name)
        monkeypatch.setattr(
            linear_model, name, lambda *args: calls.append(1) or loop(*args)
        )
    else:
        monkeypatch.setattr(linear_model, name, None)
    model = FairPenaltyLogisticRegression(random_state=0, batch_size=50, **params)
    for _ in range(epochs):
        model.partial_fit(
            X, y, classes=classes, sensitive_features=groups, sample_weight=weight
        )
    monkeypatch.undo()
    assert len(calls) == (epochs if compiled else 0)
    return model


@pytest.mark.parametrize("penalty", ["group", "individual", "group_standardized"])
@pytest.mark.parametrize(
    "params",
    [
        {"fairness": 1.0},
        {"fairness": 50.0, "alpha": 0.01},  # large: Armijo halvings
        {"fairness": 0.0},
        {"fairness": 2.0, "fit_intercept": False},
        {"fairness": 2.0, "average": True},
        {"fairness": 1.0, "learning_rate": 5.0},
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_steps_equal_the_reference(monkeypatch, penalty, params, weighted):
    X, y, groups, weight = _data(0)
    weight = weight if weighted else None
    params = {"penalty": penalty, **params}
    fitted = [
        _fit(monkeypatch, compiled, params, X, y, groups, weight)
        for compiled in (False, True)
    ]
    reference, compiled = fitted
    np.testing.assert_allclose(compiled.coef_, reference.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        compiled.intercept_, reference.intercept_, rtol=1e-10, atol=1e-12
    )
    assert compiled.loss_ == pytest.approx(reference.loss_, rel=1e-10)
    assert compiled.n_iter_ == reference.n_iter_ == 3


@pytest.mark.filterwarnings("ignore::skfedida.exceptions.InactivePenaltyWarning")
def test_compiled_steps_handle_single_group_and_empty_groups(monkeypatch):
    X, y, groups, _ = _data(1, n_groups=2)
    # One group only (penalty 0), and codes 0 and 3 (groups 1 and 2 empty).
    for S in (np.zeros_like(groups), np.where(groups == 0, 3, 0)):
        reference, compiled = (
            _fit(monkeypatch, c, {"fairness": 3.0}, X, y, S, None) for c in (0, 1)
        )
        np.testing.assert_allclose(compiled.coef_, reference.coef_, rtol=1e-10)


def _fit_mlp(monkeypatch, compiled, params, X, y, groups, weight, epochs=3):
    from skfedida._models import _mlp as neural_network
    from skfedida.neural_network import FairMLPClassifier

    if not compiled:
        monkeypatch.setattr(neural_network, "mlp_sgd_steps", None)
    model = FairMLPClassifier(random_state=0, batch_size=50, **params)
    for _ in range(epochs):
        model.partial_fit(
            X, y, classes=[0, 1], sensitive_features=groups, sample_weight=weight
        )
    monkeypatch.undo()
    return np.concatenate([w.ravel() for w in model.coefs_ + model.intercepts_])


def test_compiled_network_loop_is_built():
    from skfedida._models import _mlp as neural_network

    assert neural_network.mlp_sgd_steps is not None


@pytest.mark.parametrize("activation", ["relu", "tanh", "logistic", "identity"])
@pytest.mark.parametrize("hidden_layer_sizes", [(7,), (5, 4)])
@pytest.mark.parametrize("penalty", ["group", "individual", "group_standardized"])
def test_compiled_network_steps_equal_the_reference(
    monkeypatch, activation, hidden_layer_sizes, penalty
):
    X, y, groups, weight = _data(3)
    params = {
        "activation": activation,
        "hidden_layer_sizes": hidden_layer_sizes,
        "penalty": penalty,
        "fairness": 5.0,
    }
    reference, compiled = (
        _fit_mlp(monkeypatch, c, params, X, y, groups, weight) for c in (0, 1)
    )
    np.testing.assert_allclose(compiled, reference, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("params", [{"average": True}, {"learning_rate": 20.0}])
def test_compiled_network_steps_average_and_backtrack_as_the_reference(
    monkeypatch, params
):
    X, y, groups, _ = _data(4)
    reference, compiled = (
        _fit_mlp(monkeypatch, c, params, X, y, groups, None) for c in (0, 1)
    )
    np.testing.assert_allclose(compiled, reference, rtol=1e-10, atol=1e-12)


def test_standardized_penalty_is_zero_at_constant_nonzero_scores():
    from skfedida.penalty import standardized_group_penalty

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 64)
    groups = rng.integers(0, 3, 64)
    for constant in (0.3, -7.1, 1e6):
        value, gradient = standardized_group_penalty(np.full(64, constant), y, groups)
        assert value == 0.0 and not gradient.any()


def test_compiled_steps_from_a_constant_nonzero_start_equal_the_reference(monkeypatch):
    X, y, groups, weight = _data(5)
    fitted = []
    for compiled in (False, True):
        if not compiled:
            monkeypatch.setattr(linear_model, "linear_sgd_steps", None)
        model = FairPenaltyLogisticRegression(
            penalty="group_standardized", fairness=5.0, random_state=0, batch_size=50
        )
        model.partial_fit(X, y, classes=[0, 1], sample_weight=np.zeros(len(y)))
        model.intercept_[:] = 0.3  # coefficients 0: every score is 0.3
        model.partial_fit(X, y, sensitive_features=groups, sample_weight=weight)
        monkeypatch.undo()
        fitted.append(np.r_[model.coef_.ravel(), model.intercept_])
    np.testing.assert_allclose(fitted[1], fitted[0], rtol=1e-10, atol=1e-12)
    assert np.abs(fitted[1][:-1]).max() > 0  # it trained


def test_the_multinomial_loop_is_built():
    assert linear_model.multinomial_sgd_steps is not None


@pytest.mark.parametrize("penalty", ["group", "individual", "group_standardized"])
@pytest.mark.parametrize(
    "params",
    [
        {"fairness": 1.0},
        {"fairness": 50.0, "alpha": 0.01},  # large: Armijo halvings
        {"fairness": 0.0},
        {"fairness": 2.0, "fit_intercept": False},
        {"fairness": 2.0, "average": True},
        {"fairness": 1.0, "learning_rate": 5.0},
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_compiled_multinomial_steps_equal_the_reference(
    monkeypatch, penalty, params, weighted
):
    # Three classes, minibatches that lack one (the rows are sorted by a
    # noisy class so some batches hold two classes only).
    X, _, groups, weight = _data(0)
    rng = np.random.default_rng(1)
    y = np.digitize(X[:, 0] + rng.normal(size=len(X)), [0.0, 1.0])
    weight = weight if weighted else None
    params = {"penalty": penalty, **params}
    reference, compiled = (
        _fit(monkeypatch, c, params, X, y, groups, weight) for c in (False, True)
    )
    assert compiled.coef_.shape == (3, X.shape[1])
    np.testing.assert_allclose(compiled.coef_, reference.coef_, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(
        compiled.intercept_, reference.intercept_, rtol=1e-9, atol=1e-11
    )
    assert compiled.loss_ == pytest.approx(reference.loss_, rel=1e-10)


def test_label_codes_beyond_the_parameters_are_an_error_not_a_write_past_a_buffer():
    # Reviewer's finding: a fit on 4 classes that failed part way (here a
    # ConvergenceWarning made an error) left classes_ for 4 classes and coef_
    # for 3; partial_fit then ran the compiled loop with code 3, which wrote
    # past its buffers (valgrind) and returned a model trained on garbage.
    from sklearn.exceptions import ConvergenceWarning

    X, _, groups, _ = _data(0)
    y = np.arange(len(X)) % 4
    model = FairPenaltyLogisticRegression(fairness=2.0).fit(
        X, np.minimum(y, 2), sensitive_features=groups
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning):
            model.set_params(max_iter=2).fit(X, y, sensitive_features=groups)
    with pytest.raises(ValueError, match=r"label codes outside 0\.\.2"):
        model.partial_fit(X, y, sensitive_features=groups)


@pytest.mark.parametrize("penalty", [0, 1, 2, 3])
@pytest.mark.parametrize("loop", ["linear", "multinomial", "mlp"])
def test_a_loop_given_an_order_steps_as_on_the_rows_in_that_order(loop, penalty):
    # The order is gathered a minibatch at a time inside the loop (instead of
    # numpy's X[order] copy every epoch): the same steps, to the bit. Repeats
    # are allowed, as resampled minibatches have them.
    from skfedida._minibatch import minibatch_bounds
    from skfedida._models import _sgd_fast

    rng = np.random.RandomState(penalty)
    n, d, n_groups = 500, 5, 4
    X = rng.randn(n, d)
    groups = rng.randint(0, n_groups, n).astype(np.intp)
    weight = rng.uniform(0.5, 2.0, n)
    order = np.r_[rng.permutation(n), rng.randint(0, n, 80)].astype(np.intp)
    bounds = np.ascontiguousarray(minibatch_bounds(order.size, 64), dtype=np.intp)
    fairness = 0.0 if penalty == 0 else 1.0
    if loop == "mlp":
        y = (X[:, 0] > 0).astype(float)
        sizes = np.array([d, 7, 1], dtype=np.intp)
        start = rng.randn(d * 7 + 7 + 7 + 1) * 0.3

        def run(*rows):
            params = start.copy()
            X_, y_, groups_, weight_, order_ = rows
            out = _sgd_fast.mlp_sgd_steps(
                X_,
                y_,
                groups_,
                n_groups,
                weight_,
                bounds,
                order_,
                params,
                sizes,
                0,
                fairness,
                1e-3,
                penalty,
                0.05,
                0.5,
                30,
                True,
                np.zeros_like(params),
            )
            return out, [params]
    else:
        C = 1 if loop == "linear" else 3
        y = (rng.randint(0, 2, n) if C == 1 else rng.randint(0, C, n)).astype(float)
        steps = getattr(_sgd_fast, f"{loop}_sgd_steps")

        def run(*rows):
            coef = np.zeros(d) if C == 1 else np.zeros((C, d))
            intercept = np.zeros(C)
            X_, y_, groups_, weight_, order_ = rows
            out = steps(
                X_,
                y_,
                groups_,
                n_groups,
                weight_,
                bounds,
                order_,
                coef,
                intercept,
                True,
                fairness,
                1e-3,
                penalty,
                0.1,
                0.5,
                30,
                True,
                np.zeros_like(coef),
                np.zeros(C),
            )
            return out, [coef, intercept]

    laid_out = run(X[order], y[order], groups[order], weight[order], None)
    gathered = run(X, y, groups, weight, order)
    assert gathered[0] == laid_out[0]
    for got, expected in zip(gathered[1], laid_out[1], strict=True):
        np.testing.assert_array_equal(got, expected)
