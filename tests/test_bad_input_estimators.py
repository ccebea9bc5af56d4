"""Bad input to the fair estimators and the sampler (issue 31, parts 3 and 4).

Each test tries an input a new user would try and asks for the right result
or a clear error naming the parameter or column and what to do; each failed
before its fix.
"""

import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from imblearn.pipeline import make_pipeline
from sklearn.metrics import roc_auc_score

from skfedida._models import _logistic as linear_model
from skfedida.exceptions import (
    DataScaleWarning,
    DegenerateModelWarning,
    InactiveGroupBalancingWarning,
    InactivePenaltyWarning,
)
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE


def _data(n=1000, seed=0):
    rng = np.random.default_rng(seed)
    S = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4)) + 0.5 * S[:, None]
    y = (X[:, 0] + X[:, 1] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, S


# -- 3.2: features on a huge uniform scale ----------------------------------


@pytest.mark.parametrize("scale", [1e10, 1e18, 1e50])
@pytest.mark.parametrize("penalty", ["group", "individual", "group_standardized"])
def test_fit_on_a_huge_uniform_scale_learns_the_same_model(scale, penalty):
    # Multiplying X by c divides the optimal coefficients by c (exactly, with
    # alpha=0), so the scores, and every decision, are the unit-scale ones.
    # It used to stop after one L-BFGS iteration at coef_ == 0 (AUROC 0.5).
    X, y, S = _data()
    unit = FairPenaltyLogisticRegression(alpha=0.0, penalty=penalty)
    unit.fit(X, y, sensitive_features=S)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        huge = FairPenaltyLogisticRegression(alpha=0.0, penalty=penalty)
        huge.fit(X * scale, y, sensitive_features=S)
    assert huge.n_iter_ > 1
    np.testing.assert_allclose(huge.coef_ * scale, unit.coef_, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(
        huge.decision_function(X * scale), unit.decision_function(X), atol=1e-3
    )


def test_fit_on_a_huge_uniform_scale_with_the_default_alpha():
    X, y, S = _data()
    model = FairPenaltyLogisticRegression().fit(X * 1e18, y, sensitive_features=S)
    assert roc_auc_score(y, model.decision_function(X * 1e18)) > 0.85


def test_fit_with_one_huge_column_among_unit_ones():
    # Each column is optimised in units of its own magnitude.
    X, y, S = _data()
    X_mixed = X * [1.0, 1e12, 1.0, 1.0]
    unit = FairPenaltyLogisticRegression(alpha=0.0).fit(X, y, sensitive_features=S)
    mixed = FairPenaltyLogisticRegression(alpha=0.0).fit(
        X_mixed, y, sensitive_features=S
    )
    np.testing.assert_allclose(
        mixed.decision_function(X_mixed), unit.decision_function(X), atol=1e-3
    )


@pytest.mark.parametrize("scale", [1e10, 1e20])
def test_partial_fit_on_a_huge_uniform_scale_learns(scale):
    # The Armijo search halved at most 40 times from learning_rate, and then
    # took no step, silently: at 1e10 no step was ever taken (AUROC 0.5).
    X, y, S = _data()
    model = FairPenaltyLogisticRegression(random_state=0)
    for _ in range(3):
        model.partial_fit(X * scale, y, classes=[0, 1], sensitive_features=S)
    assert np.abs(model.coef_).max() > 0
    assert roc_auc_score(y, model.decision_function(X * scale)) > 0.85


@pytest.mark.parametrize("penalty", ["group", "individual", "group_standardized"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_huge_scale_steps_of_the_compiled_loops_equal_the_reference(
    monkeypatch, penalty, n_classes
):
    X, y, S = _data(n=400)
    X = X * 1e15
    if n_classes == 3:
        y = y + (X[:, 2] > 0)
    name = "linear_sgd_steps" if n_classes == 2 else "multinomial_sgd_steps"
    models = []
    for compiled in (False, True):
        if not compiled:
            monkeypatch.setattr(linear_model, name, None)
        model = FairPenaltyLogisticRegression(
            penalty=penalty, random_state=0, batch_size=64
        )
        for _ in range(2):
            model.partial_fit(X, y, classes=np.unique(y), sensitive_features=S)
        monkeypatch.undo()
        models.append(model)
    reference, compiled = models
    assert np.abs(reference.coef_).max() > 0
    np.testing.assert_allclose(compiled.coef_, reference.coef_, rtol=1e-8, atol=0)
    np.testing.assert_allclose(
        compiled.intercept_, reference.intercept_, rtol=1e-8, atol=1e-12
    )


@pytest.mark.filterwarnings("ignore::skfedida.exceptions.DataScaleWarning")
def test_mlp_steps_on_a_huge_scale_equal_the_reference(monkeypatch):
    from skfedida._models import _mlp as neural_network

    X, y, S = _data(n=300)
    models = []
    for compiled in (False, True):
        if not compiled:
            monkeypatch.setattr(neural_network, "mlp_sgd_steps", None)
        model = FairMLPClassifier(
            hidden_layer_sizes=(4,), solver="sgd", random_state=0, batch_size=64
        )
        model.partial_fit(X * 1e12, y, classes=[0, 1], sensitive_features=S)
        monkeypatch.undo()
        models.append(model)
    reference, compiled = models
    for a, b in zip(compiled.coefs_, reference.coefs_, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-300)


def test_federation_on_a_huge_uniform_scale_trains():
    # It used to end at a constant model, with a warning blaming the
    # fairness weight.
    X, y, S = _data()
    clients = np.arange(len(y)) % 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        model = FederatedEstimator(
            FairPenaltyLogisticRegression(), n_rounds=3, random_state=0
        ).fit(X * 1e18, y, clients=clients, sensitive_features=S)
    assert roc_auc_score(y, model.predict_proba(X * 1e18)[:, 1]) > 0.85


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("scale", [1e4, 1e18])
def test_network_on_a_huge_uniform_scale_warns(scale):
    # A network's hidden units start from Glorot weights meant for inputs of
    # order 1: at 1e4 and beyond it learned nothing (AUROC 0.46-0.58), with
    # no warning. The warning names the scale and the scaler to use.
    X, y, S = _data(n=200)
    message = r"e\+(04|18).*StandardScaler"
    with pytest.warns(DataScaleWarning, match=message):
        FairMLPClassifier((4,), max_iter=2).fit(X * scale, y, sensitive_features=S)
    with pytest.warns(DataScaleWarning, match=message):
        FairMLPClassifier((4,)).partial_fit(
            X * scale, y, classes=[0, 1], sensitive_features=S
        )


def test_a_federated_network_on_a_huge_scale_warns_too():
    # The federation primes each client's network with zero weights, which
    # skipped the network's own check: AUROC 0.475 at 1e4, with no warning.
    X, y, S = _data(n=300)
    clients = np.arange(len(y)) % 3
    federation = FederatedEstimator(
        FairMLPClassifier((4,)), n_rounds=1, local_epochs=1, random_state=0
    )
    with pytest.warns(DataScaleWarning, match=r"FairMLPClassifier.*e\+04"):
        federation.fit(X * 1e4, y, clients=clients, sensitive_features=S)


def test_network_on_scaled_features_does_not_warn_about_their_scale():
    X, y, S = _data(n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataScaleWarning)
        FairMLPClassifier((4,), max_iter=2).partial_fit(
            X * 100, y, classes=[0, 1], sensitive_features=S
        )


# -- 4: float32 X --------------------------------------------------------------


@pytest.mark.parametrize(
    "estimator", [FairPenaltyLogisticRegression, FairMLPClassifier]
)
def test_float32_X_fits_without_a_warning(estimator):
    # Comparing float32 values with a float64 bound of 1e100 cast the bound to
    # float32 ("overflow encountered in cast") on every fit.
    X, y, S = _data(n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = estimator(max_iter=200).fit(
            X.astype(np.float32), y, sensitive_features=S
        )
        model.partial_fit(X.astype(np.float32), y, sensitive_features=S)


# -- 4: read-only coefficients -------------------------------------------------


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize(
    "make",
    [
        lambda: FairPenaltyLogisticRegression(random_state=0),
        lambda: FairMLPClassifier((4,), max_iter=5, random_state=0),
        lambda: FairMLPClassifier((4,), max_iter=5, solver="adam", random_state=0),
    ],
    ids=["logistic", "mlp-sgd", "mlp-adam"],
)
def test_partial_fit_on_read_only_parameters_works(make):
    # It raised numpy's "assignment destination is read-only".
    X, y, S = _data(n=200)
    model = make().fit(X, y, sensitive_features=S)
    copy = make().fit(X, y, sensitive_features=S)
    for array in model._get_params_list():
        array.setflags(write=False)
    model.partial_fit(X, y, sensitive_features=S)
    copy.partial_fit(X, y, sensitive_features=S)
    np.testing.assert_array_equal(model.predict_proba(X), copy.predict_proba(X))


def test_partial_fit_after_a_memory_mapped_load(tmp_path):
    X, y, S = _data(n=200)
    model = FairPenaltyLogisticRegression(random_state=0).fit(
        X, y, sensitive_features=S
    )
    joblib.dump(model, tmp_path / "model.joblib")
    loaded = joblib.load(tmp_path / "model.joblib", mmap_mode="r")
    assert not loaded.coef_.flags.writeable
    loaded.partial_fit(X, y, sensitive_features=S)
    assert type(loaded.coef_) is np.ndarray


def test_warm_start_fit_of_the_network_on_read_only_parameters():
    X, y, S = _data(n=200)
    model = FairMLPClassifier(
        hidden_layer_sizes=(4,), max_iter=3, warm_start=True, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, sensitive_features=S)
        for array in model.coefs_ + model.intercepts_:
            array.setflags(write=False)
        model.fit(X, y, sensitive_features=S)


# -- 4: string columns in X ----------------------------------------------------


def _frame_with_a_string_column(kind):
    X, y, S = _data(n=200)
    frame = pd.DataFrame(X, columns=["age", "hours", "score", "tenure"])
    region = np.where(X[:, 0] > 0, "north", "south")
    frame.insert(1, "region", pd.Categorical(region) if kind == "category" else region)
    if kind == "object":
        frame["region"] = frame["region"].astype(object)
    return frame, y, S


@pytest.mark.parametrize("kind", ["category", "object", "string"])
@pytest.mark.parametrize(
    "fit",
    [
        lambda X, y, S: FairPenaltyLogisticRegression().fit(X, y, sensitive_features=S),
        lambda X, y, S: FairPenaltyLogisticRegression().partial_fit(
            X, y, classes=[0, 1], sensitive_features=S
        ),
        lambda X, y, S: FairMLPClassifier(max_iter=2).fit(X, y, sensitive_features=S),
        lambda X, y, S: FairPenaltyLogisticRegression(sensitive="group").fit(
            X.assign(group=S), y
        ),
    ],
    ids=["fit", "partial_fit", "mlp", "column-mode"],
)
def test_a_string_column_is_named_with_the_encoder_to_use(kind, fit):
    X, y, S = _frame_with_a_string_column(kind)
    if kind == "string":
        X["region"] = X["region"].astype("string")
    with pytest.raises(ValueError, match=r"'region'.*FederatedOneHotEncoder"):
        fit(X, y, S)


def test_a_string_column_in_a_numpy_array_is_named_by_position():
    X, y, S = _data(n=50)
    X = X.astype(object)
    X[:, 2] = "a"
    with pytest.raises(ValueError, match=r"column 2 .*FederatedOneHotEncoder"):
        FairPenaltyLogisticRegression().fit(X, y, sensitive_features=S)


def test_numeric_categorical_columns_still_fit():
    X, y, S = _data(n=200)
    frame = pd.DataFrame(X).assign(level=pd.Categorical(np.arange(200) % 3))
    frame.columns = frame.columns.astype(str)
    FairPenaltyLogisticRegression().fit(frame, y, sensitive_features=S)


def test_a_string_column_in_a_federation_is_named():
    X, y, S = _frame_with_a_string_column("category")
    clients = np.arange(len(y)) % 2
    with pytest.raises(ValueError, match=r"'region'.*FederatedOneHotEncoder"):
        FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1).fit(
            X, y, clients=clients, sensitive_features=S
        )


# -- 3.3: float32 data near its largest value ---------------------------------


@pytest.mark.parametrize("frame", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_synthetic_rows_out_of_the_dtype_range_raise(frame, dtype):
    X, y, S = _data(n=300)
    top = np.finfo(dtype).max
    X = (np.tanh(X) * 0.9 * top).astype(dtype)
    if frame:
        X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning either
        with pytest.raises(ValueError, match=r"column '?(x0|a)'?.*StandardScaler"):
            FairnessAwareROSE(n_target="max", random_state=0).fit_resample(
                X, y, sensitive_features=S
            )


def test_float32_data_well_inside_its_range_resample_as_before():
    X, y, S = _data(n=300)
    X = (X * 1e30).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        X_res, _ = FairnessAwareROSE(n_target="max", random_state=0).fit_resample(
            X, y, sensitive_features=S
        )
    assert X_res.dtype == np.float32 and np.isfinite(X_res).all()


# -- 3.8: the sampler without sensitive features ------------------------------


def test_sampler_in_a_pipeline_without_sensitive_features_warns():
    X, y, _ = _data(n=200)
    pipeline = make_pipeline(
        FairnessAwareROSE(random_state=0), FairPenaltyLogisticRegression(fairness=0)
    )
    with pytest.warns(InactiveGroupBalancingWarning, match="sensitive_features"):
        pipeline.fit(X, y)


def test_sampler_warning_is_an_inactive_penalty_warning():
    # Code that silences the fairness machinery's "no groups" warnings by
    # InactivePenaltyWarning (a federation, a lambda search) silences it too.
    X, y, _ = _data(n=200)
    assert issubclass(InactiveGroupBalancingWarning, InactivePenaltyWarning)
    with pytest.warns(InactiveGroupBalancingWarning, match="sensitive="):
        FairnessAwareROSE(random_state=0).fit_resample(X, y)


def test_sampler_with_sensitive_features_does_not_warn():
    X, y, S = _data(n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        FairnessAwareROSE(random_state=0).fit_resample(X, y, sensitive_features=S)
        FairnessAwareROSE(sensitive=[4], random_state=0).fit_resample(
            np.column_stack([X, S]), y
        )


# -- 4: n_target beyond memory -------------------------------------------------


@pytest.mark.parametrize("frame", [False, True])
def test_n_target_beyond_memory_is_refused_before_allocating(frame):
    X, y, S = _data(n=100)
    if frame:
        X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    with pytest.raises(ValueError, match=r"n_target.*GiB"):
        FairnessAwareROSE(n_target=10**12, random_state=0).fit_resample(
            X, y, sensitive_features=S
        )
    with pytest.raises(ValueError, match=r"n_target.*GiB"):
        FairnessAwareROSE(n_target={((0,), 1): 10**12}).fit_resample(
            X, y, sensitive_features=S
        )
