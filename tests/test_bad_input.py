"""Bad input across the public API: one test per row of the user guide's table.

Each case gives a clear error naming the problem, or a documented behaviour
(doc/user_guide.rst, "Bad input and edge cases").
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _helpers import make_federation
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import SGDClassifier

from skfedida.federated import FederatedEstimator, get_parameters
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import demographic_parity_difference, fairness_summary
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

pytestmark = pytest.mark.filterwarnings("ignore:.*max_iter.*")

N = 90
SETTINGS = settings(max_examples=15, deadline=None)


def _data(n=N, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    y = (X[:, 0] + 0.5 * rng.randn(n) > 0).astype(int)
    S = rng.choice(["a", "b", "c"], n)
    clients = np.arange(n) % 3
    return X, y, S, clients


def _estimators():
    return [
        FairPenaltyLogisticRegression(),
        FairMLPClassifier(hidden_layer_sizes=(4,), max_iter=3, random_state=0),
    ]


def _fitters():
    """Every public fitting entry point, as f(X, y, S, clients)."""
    fitters = {}
    for estimator in _estimators():
        name = type(estimator).__name__
        fitters[f"{name}.fit"] = lambda X, y, S, c, e=estimator: e.fit(
            X, y, sensitive_features=S
        )
        fitters[f"{name}.partial_fit"] = lambda X, y, S, c, e=estimator: e.partial_fit(
            X, y, classes=[0, 1], sensitive_features=S
        )
    fitters["FairnessAwareROSE.fit_resample"] = lambda X, y, S, c: FairnessAwareROSE(
        random_state=0
    ).fit_resample(X, y, sensitive_features=S)
    fitters["FederatedEstimator.fit"] = lambda X, y, S, c: FederatedEstimator(
        FairPenaltyLogisticRegression(),
        sampler=FairnessAwareROSE(),
        n_rounds=1,
        local_epochs=1,
        random_state=0,
    ).fit(X, y, clients=c, sensitive_features=S)
    return fitters


FITTERS = _fitters()


@pytest.mark.parametrize("name", sorted(FITTERS))
@SETTINGS
@given(
    row=st.integers(0, N - 1),
    column=st.integers(0, 2),
    value=st.sampled_from([np.nan, np.inf, -np.inf]),
)
def test_nan_or_inf_in_X_is_an_error_naming_X(name, row, column, value):
    X, y, S, clients = _data()
    X[row, column] = value
    with pytest.raises(ValueError, match=r"X (contains|column .* has) (NaN|inf)"):
        FITTERS[name](X, y, S, clients)


def test_nan_or_inf_in_X_at_predict_is_an_error():
    X, y, S, clients = _data()
    fitted = [e.fit(X, y, sensitive_features=S) for e in _estimators()]
    fitted.append(
        FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1).fit(
            X, y, clients=clients, sensitive_features=S
        )
    )
    X[5, 1] = np.nan
    for model in fitted:
        with pytest.raises(ValueError, match="Input X contains NaN"):
            model.predict(X)


@pytest.mark.parametrize("name", sorted(FITTERS))
@SETTINGS
@given(row=st.integers(0, N - 1), missing=st.sampled_from([None, np.nan]))
def test_missing_sensitive_values_are_an_error_naming_the_first_row(name, row, missing):
    X, y, S, clients = _data()
    S = S.astype(object)
    S[row] = missing
    with pytest.raises(
        ValueError,
        match=rf"sensitive_features column .* missing value\(s\) \(first at row "
        rf"position {row}\)",
    ):
        FITTERS[name](X, y, S, clients)
    with pytest.raises(ValueError, match="missing value"):
        demographic_parity_difference(y, y, sensitive_features=S)


@SETTINGS
@given(row=st.integers(0, N - 1), missing=st.sampled_from([None, np.nan]))
def test_missing_client_ids_are_an_error(row, missing):
    X, y, S, clients = _data()
    clients = clients.astype(object)
    clients[row] = missing
    with pytest.raises(ValueError, match="clients has missing values"):
        FITTERS["FederatedEstimator.fit"](X, y, S, clients)


@pytest.mark.parametrize("name", sorted(FITTERS))
@SETTINGS
@given(
    which=st.sampled_from(["y", "sensitive_features", "clients"]),
    delta=st.sampled_from([-5, -1, 1, 7]),
)
def test_wrong_lengths_are_an_error_naming_the_parameter(name, which, delta):
    X, y, S, clients = _data()
    parts = {"y": y, "sensitive_features": S, "clients": clients}
    parts[which] = np.resize(parts[which], N + delta)
    if which == "clients" and not name.startswith("Federated"):
        return  # only FederatedEstimator takes clients
    with pytest.raises(ValueError, match=which if which != "y" else r"\by\b"):
        FITTERS[name](X, parts["y"], parts["sensitive_features"], parts["clients"])


@pytest.mark.parametrize("name", [n for n in sorted(FITTERS) if "partial" not in n])
def test_a_single_class_overall_is_an_error_naming_it(name):
    X, _, S, clients = _data()
    with pytest.raises(ValueError, match=r"(only one class|one class only): \[1\]"):
        FITTERS[name](X, np.ones(N, dtype=int), S, clients)


@pytest.mark.parametrize("estimator", _estimators(), ids=lambda e: type(e).__name__)
def test_partial_fit_on_a_single_class_batch_learns_given_the_classes(estimator):
    # As sklearn's partial_fit: a minibatch may hold one class when the
    # classes are given.
    X, _, S, _ = _data()
    estimator.partial_fit(
        X, np.ones(N, dtype=int), classes=[0, 1], sensitive_features=S
    )
    assert estimator.predict_proba(X)[:, 1].mean() > 0.5
    with pytest.raises(ValueError, match="classes"):
        type(estimator)().partial_fit(X, np.ones(N, dtype=int), sensitive_features=S)


def test_a_single_class_in_one_client_warns_and_trains():
    X, y, S, clients = _data()
    y[clients == 2] = 1
    with pytest.warns(UserWarning, match="Client 2 has a single class"):
        fitted = FITTERS["FederatedEstimator.fit"](X, y, S, clients)
    assert np.isfinite(get_parameters(fitted.estimator_)[0]).all()


def test_groups_unseen_at_fit_do_not_reach_the_model():
    X, y, S, _ = _data()
    model = FairPenaltyLogisticRegression().fit(X, y, sensitive_features=S)
    # predict takes no sensitive features: a new group at predict time changes
    # nothing; a metric on new groups treats them as groups like any other.
    assert "sensitive_features" not in model.predict.__code__.co_varnames
    new_groups = np.where(S == "a", "z", S)
    summary = fairness_summary(y, model.predict(X), sensitive_features=new_groups)
    assert np.isfinite(summary["demographic_parity_difference"])
    with pytest.raises(ValueError, match=r"n_target names subgroup \(\('z',\), 1\)"):
        FairnessAwareROSE(n_target={(("z",), 1): 40}).fit_resample(
            X, y, sensitive_features=S
        )


def test_column_mode_ignores_new_values_in_sensitive_columns_at_predict():
    X, y, S, _ = _data()
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"]).assign(group=S)
    model = FairPenaltyLogisticRegression(sensitive="group").fit(frame, y)
    changed = frame.assign(group="never-seen")
    np.testing.assert_array_equal(model.predict(changed), model.predict(frame))


def test_clients_unseen_at_fit_get_the_global_model_with_a_warning():
    X, y, S, clients = _data()
    fed = FederatedEstimator(
        FairPenaltyLogisticRegression(), strategy="local", n_rounds=1
    ).fit(X, y, clients=clients, sensitive_features=S)
    with pytest.warns(UserWarning, match=r"Clients \[9\] were not seen in fit"):
        predicted = fed.predict(X[:4], clients=[9, 9, 0, 0])
    np.testing.assert_array_equal(predicted[:2], fed.estimator_.predict(X[:2]))


def test_a_client_too_small_to_split_is_an_error_naming_it():
    X, y, S, clients = _data()
    clients = clients.copy()
    clients[0] = 42
    with pytest.raises(ValueError, match=r"Client 42 has 1 row\(s\)"):
        FederatedEstimator(
            FairPenaltyLogisticRegression(), validation_fraction=0.2
        ).fit(X, y, clients=clients, sensitive_features=S)


@pytest.mark.parametrize("rows", [1, 2, 5])
def test_clients_smaller_than_a_batch_train_on_one_batch(rows):
    X, y, S, clients = _data()
    clients = clients.copy()
    small = np.flatnonzero(y == 1)[:rows]
    clients[small] = 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # single-class small client
        fed = FederatedEstimator(
            FairPenaltyLogisticRegression(), n_rounds=2, batch_size=32
        ).fit(X, y, clients=clients, sensitive_features=S)
    assert fed.client_sizes_[list(fed.clients_).index(7)] == rows
    assert np.isfinite(get_parameters(fed.estimator_)[0]).all()


LABELINGS = {
    "minus-one-one": lambda y: 2 * y - 1,
    "strings": lambda y: np.where(y == 1, "yes", "no"),
    "booleans": lambda y: y.astype(bool),
}


@pytest.mark.parametrize("coding", sorted(LABELINGS))
@pytest.mark.parametrize(
    "make",
    [
        lambda: FairPenaltyLogisticRegression(),
        lambda: FairMLPClassifier(hidden_layer_sizes=(4,), max_iter=3, random_state=0),
        lambda: FederatedEstimator(
            FairPenaltyLogisticRegression(),
            sampler=FairnessAwareROSE(),
            n_rounds=2,
            random_state=0,
        ),
    ],
)
def test_other_label_codings_give_the_same_model_with_the_greater_label_positive(
    make, coding
):
    X, y, S, clients = _data()
    recoded = LABELINGS[coding](y)
    kwargs = {"sensitive_features": S}
    if isinstance(make(), FederatedEstimator):
        kwargs["clients"] = clients
    ours = make().fit(X, recoded, **kwargs)
    reference = make().fit(X, y, **kwargs)
    np.testing.assert_array_equal(ours.classes_, np.unique(recoded))
    np.testing.assert_array_equal(ours.predict_proba(X), reference.predict_proba(X))
    np.testing.assert_array_equal(
        ours.predict(X), LABELINGS[coding](reference.predict(X))
    )


@pytest.mark.parametrize(
    "name", [n for n in sorted(FITTERS) if "ROSE" not in n and "partial" not in n]
)
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_multiclass_y_gives_a_model_of_every_class(name):
    # Issue 21: it was "Only binary classification is supported".
    X, _, S, clients = _data()
    model = FITTERS[name](X, np.arange(N) % 3, S, clients)
    assert model.classes_.tolist() == [0, 1, 2]
    assert model.predict_proba(X).shape == (N, 3)


def test_a_single_class_is_an_error_naming_the_class():
    X, _, S, _ = _data()
    for estimator in _estimators():
        with pytest.raises(ValueError, match=r"only one class: \[1\]"):
            estimator.fit(X, np.ones(N, dtype=int), sensitive_features=S)


def test_fairness_aware_rose_balances_multiclass_subgroups():
    X, _, S, _ = _data()
    y = np.arange(N) % 3
    sampler = FairnessAwareROSE(random_state=0)
    _, y_res = sampler.fit_resample(X, y, sensitive_features=S)
    assert len(set(sampler.subgroup_counts_after_.values())) == 1
    assert set(np.unique(y_res)) == {0, 1, 2}


def test_sparse_X_is_accepted_by_the_models_and_refused_by_rose():
    X, y, S, clients = _data()
    X_sparse = sp.csr_matrix(X)
    for estimator in _estimators():
        dense = estimator.fit(X, y, sensitive_features=S).predict_proba(X)
        sparse = estimator.fit(X_sparse, y, sensitive_features=S).predict_proba(
            X_sparse
        )
        np.testing.assert_allclose(sparse, dense, rtol=1e-10, atol=1e-12)
    fed = FederatedEstimator(SGDClassifier(loss="log_loss", random_state=0), n_rounds=1)
    assert fed.fit(X_sparse, y, clients=clients).predict(X_sparse).shape == (N,)
    with pytest.raises(TypeError, match="does not accept sparse X"):
        FairnessAwareROSE().fit_resample(X_sparse, y, sensitive_features=S)
    with pytest.raises(TypeError, match="does not accept sparse X"):
        FITTERS["FederatedEstimator.fit"](X_sparse, y, S, clients)


@SETTINGS
@given(seed=st.integers(0, 2**16))
def test_pandas_indexes_are_ignored_rows_are_matched_by_position(seed):
    X, y, S, clients = _data()
    rng = np.random.RandomState(seed)
    frame = pd.DataFrame(X, columns=["x0", "x1", "x2"])
    shuffled = {
        "X": frame.set_axis(rng.permutation(N) + 1000),
        "y": pd.Series(y, index=rng.permutation(N)),
        "S": pd.Series(S, index=rng.permutation(N), name="group"),
        "clients": pd.Series(clients, index=rng.permutation(N)),
    }
    plain = {
        "X": frame,
        "y": pd.Series(y),
        "S": pd.Series(S, name="group"),
        "clients": pd.Series(clients),
    }
    for name in ("FairPenaltyLogisticRegression.fit", "FederatedEstimator.fit"):
        a = FITTERS[name](*[shuffled[k] for k in ("X", "y", "S", "clients")])
        b = FITTERS[name](*[plain[k] for k in ("X", "y", "S", "clients")])
        model_a = getattr(a, "estimator_", a)
        model_b = getattr(b, "estimator_", b)
        for p, q in zip(get_parameters(model_a), get_parameters(model_b), strict=True):
            np.testing.assert_array_equal(p, q)
    X_a, y_a = FITTERS["FairnessAwareROSE.fit_resample"](
        *[shuffled[k] for k in ("X", "y", "S", "clients")]
    )
    X_b, y_b = FITTERS["FairnessAwareROSE.fit_resample"](
        *[plain[k] for k in ("X", "y", "S", "clients")]
    )
    np.testing.assert_array_equal(X_a.to_numpy(), X_b.to_numpy())
    np.testing.assert_array_equal(np.asarray(y_a), np.asarray(y_b))
    # Resampled rows (synthetic ones have no index) get a fresh RangeIndex.
    assert X_a.index.equals(pd.RangeIndex(len(X_a)))


@pytest.mark.parametrize("name", sorted(FITTERS))
def test_float32_X_gives_the_float64_result(name):
    X, y, S, clients = _data()
    X32 = X.astype(np.float32)
    a = FITTERS[name](X32, y, S, clients)
    b = FITTERS[name](X32.astype(np.float64), y, S, clients)
    if isinstance(a, tuple):  # a sampler keeps the input's dtype
        assert a[0].dtype == np.float32
        np.testing.assert_allclose(a[0], b[0], rtol=1e-6)
        return
    if isinstance(a, FederatedEstimator):
        # Its sampler keeps float32 too: synthetic rows are rounded to float32.
        np.testing.assert_allclose(
            a.predict_proba(X32), b.predict_proba(X32), rtol=1e-6
        )
        return
    # The models compute in float64: float32 input gives the float64 model.
    np.testing.assert_array_equal(a.predict_proba(X32), b.predict_proba(X32))


def test_every_error_message_names_its_parameter():
    # The messages the table quotes, as a user would see them.
    X, y, S, clients = _data()
    messages = []
    for call in (
        lambda: FairPenaltyLogisticRegression(fairness=-1).fit(X, y),
        lambda: FairnessAwareROSE(shrinkage=-2).fit_resample(
            X, y, sensitive_features=S
        ),
        lambda: FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=0).fit(
            X, y, clients=clients
        ),
        lambda: FederatedEstimator(FairPenaltyLogisticRegression()).fit(
            X, y, clients=clients[:10]
        ),
    ):
        with pytest.raises((ValueError, TypeError)) as info:
            call()
        messages.append(str(info.value))
    for message, parameter in zip(
        messages, ["fairness", "shrinkage", "n_rounds", "clients"], strict=True
    ):
        assert re.search(rf"\b{parameter}\b", message), message


@pytest.mark.parametrize(
    "damage, message",
    [
        ("nan-X", "Input X contains NaN"),
        ("missing-S", r"sensitive_features column .* missing value"),
        ("short-y", r"y must hold one label per row of X: 30 rows"),
        ("three-classes", r"labels \[2\] that are not in classes=\[0, 1\]"),
        ("empty", "0 sample"),
    ],
)
def test_a_flower_client_checks_its_rows_as_fit_does(damage, message):
    pytest.importorskip("flwr")
    from skfedida.flower import make_client_app, make_server_app, run_in_process

    X, y, S, clients = _data()

    def load_data(context):
        rows = clients == context.node_config["partition-id"]
        part = {"X": X[rows].copy(), "y": y[rows].copy(), "sensitive_features": S[rows]}
        if context.node_config["partition-id"] == 2:
            if damage == "nan-X":
                part["X"][3, 0] = np.nan
            elif damage == "missing-S":
                part["sensitive_features"] = np.where(
                    np.arange(30) == 4, None, part["sensitive_features"]
                )
            elif damage == "short-y":
                part["y"] = part["y"][:-1]
            elif damage == "empty":
                part = {name: values[:0] for name, values in part.items()}
            else:
                part["y"][0] = 2
        return part

    fed = FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1)
    with pytest.raises(RuntimeError, match=rf"failed the initialisation.*{message}"):
        run_in_process(
            make_server_app(fed),
            make_client_app(fed, load_data, classes=[0, 1]),
            num_partitions=3,
        )


# -- Silent wrong results found by a careful and a hostile user (issue 14) ------


def _fedida(**kwargs):
    return FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
        **kwargs,
    )


@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg", "local", "central"])
@pytest.mark.parametrize("batch_size", [128, 300, 1000])
def test_every_client_trains_whatever_its_number_of_batches(strategy, batch_size):
    X, y, clients, S = make_federation(900, frame=False)
    fed = _fedida(strategy=strategy, batch_size=batch_size)
    fed.fit(X, y, clients=clients, sensitive_features=S)
    # The global model, and every client's own or personalised model.
    for model in [fed.estimator_, *fed.client_estimators_.values()]:
        assert np.abs(model.coef_).max() > 1e-3


def test_warm_start_applies_changed_parameters_and_refuses_another_model():
    X, y, clients, S = make_federation(900, frame=False)
    kw = dict(clients=clients, sensitive_features=S)
    fed = _fedida(warm_start=True).fit(X, y, **kw)
    fed.set_params(estimator__fairness=0.0).fit(X, y, **kw)
    assert fed.estimator_.fairness == 0.0
    for model in fed._federation_state["models"]:
        assert model.fairness == 0.0
    # Same as a cold federation whose second half had fairness=0: the seeds
    # carry on, so compare with one long fit whose parameter changed midway.
    fed.set_params(estimator=SGDClassifier(loss="log_loss"))
    with pytest.raises(ValueError, match=r"warm_start.*SGDClassifier"):
        fed.fit(X, y, **kw)


def test_warm_start_with_other_features_fails_before_changing_anything():
    X, y, clients, S = make_federation(900, frame=False)
    kw = dict(clients=clients, sensitive_features=S)
    fed = _fedida(warm_start=True).fit(X, y, **kw)
    before = fed.predict_proba(X)
    with pytest.raises(ValueError, match=r"4 features.*expecting 10"):
        fed.fit(X[:, :4], y, **kw)
    assert fed.n_features_in_ == 10
    np.testing.assert_array_equal(fed.predict_proba(X), before)


def test_a_pos_label_not_among_the_labels_is_an_error():
    y_true = np.array([">50K", "<=50K"] * 10)
    y_pred = y_true[::-1]
    S = np.array(["a", "b"] * 10)
    with pytest.raises(ValueError, match=r"pos_label='>50K\.'.*'<=50K', '>50K'"):
        demographic_parity_difference(
            y_true, y_pred, sensitive_features=S, pos_label=">50K."
        )
    # One label present: a pos_label absent from it is still a valid label.
    assert (
        demographic_parity_difference(
            np.zeros(4), np.zeros(4), sensitive_features=S[:4], pos_label=1
        )
        == 0.0
    )


@pytest.mark.parametrize("kind", ["str", "object", "category", "string"])
def test_string_client_ids_give_the_model_of_integer_ids(kind):
    X, y, clients, S = make_federation(900, frame=False)
    names = np.array(["a", "b", "c"])[clients]
    ids = {
        "str": names,
        "object": names.astype(object),
        "category": pd.Series(names).astype("category"),
        "string": pd.Series(names, dtype="string"),
    }[kind]
    named = _fedida().fit(X, y, clients=ids, sensitive_features=S)
    numbered = _fedida().fit(X, y, clients=clients, sensitive_features=S)
    assert named.clients_.tolist() == ["a", "b", "c"]
    np.testing.assert_array_equal(named.estimator_.coef_, numbered.estimator_.coef_)


@pytest.mark.parametrize(
    "values, kinds",
    [
        ([1, "1"], "number.*string"),
        ([True, 1], "boolean.*number"),
        (["x", 2.5], "number.*string"),
    ],
)
def test_mixed_types_in_client_ids_or_a_sensitive_column_are_an_error(values, kinds):
    X, y, clients, S = make_federation(900, frame=False)
    mixed = np.array(values + values[:1], dtype=object)[clients]
    with pytest.raises(ValueError, match=f"clients mixes.*{kinds}"):
        _fedida().fit(X, y, clients=mixed, sensitive_features=S)
    frame = pd.DataFrame({"race": mixed, "gender": S[:, 1]})
    with pytest.raises(ValueError, match=f"column 'race' mixes.*{kinds}"):
        demographic_parity_difference(y, y, sensitive_features=frame)


@pytest.mark.parametrize("epochs", [[1.9] * 3, 1.5, [1, 2, "3"]])
def test_non_integer_local_epochs_are_an_error(epochs):
    X, y, clients, S = make_federation(900, frame=False)
    with pytest.raises((ValueError, TypeError), match="local_epochs"):
        FederatedEstimator(
            FairPenaltyLogisticRegression(), local_epochs=epochs, n_rounds=1
        ).fit(X, y, clients=clients, sensitive_features=S)


def test_an_estimator_without_probabilities_is_refused_up_front():
    X, y, clients, S = make_federation(900, frame=False)
    with pytest.raises(ValueError, match="predict_proba"):
        FederatedEstimator(SGDClassifier(loss="hinge"), n_rounds=1).fit(
            X, y, clients=clients, sensitive_features=S
        )


@pytest.mark.parametrize(
    "name", ["FairPenaltyLogisticRegression.fit", "FederatedEstimator.fit"]
)
def test_missing_labels_are_an_error_naming_y(name):
    X, y, S, clients = _data()
    y = y.astype(object)
    y[5] = None
    with pytest.raises(ValueError, match=r"y has 1 missing value.*position 5"):
        _fitters()[name](X, y, S, clients)


def test_lambda_range_names_a_client_with_one_class():
    from skfedida.model_selection import lambda_range

    X, y, S, clients = _data()
    y = y.copy()
    y[clients == 1] = 0
    with pytest.raises(ValueError, match="Client 1 has a single class"):
        lambda_range(
            FairPenaltyLogisticRegression(),
            X,
            y,
            clients=clients,
            sensitive_features=S,
            random_state=0,
        )


@pytest.mark.parametrize("content", [b"", b"plain text\n", "joblib-list"])
def test_load_result_on_a_file_that_is_not_a_result_says_so(tmp_path, content):
    pytest.importorskip("flwr")
    import joblib

    from skfedida.flower import load_result

    path = tmp_path / "result.joblib"
    if content == "joblib-list":
        joblib.dump([1, 2, 3], path)
    else:
        path.write_bytes(content)
    with pytest.raises(ValueError, match="not a skfedida result"):
        load_result(path)


def test_evaluate_clients_draws_resamples_in_bounded_chunks(monkeypatch):
    from skfedida.federated import _evaluation, evaluate_clients

    X, y, clients, S = make_federation(900, frame=False)
    model = FairPenaltyLogisticRegression().fit(X, y)
    kwargs = dict(
        clients=clients,
        sensitive_features=S,
        n_bootstrap=50,
        random_state=0,
        metrics=("roc_auc", "dpd"),
    )
    whole = evaluate_clients(model, X, y, **kwargs)
    # At most 7 resamples' weights in memory at once: the same intervals.
    monkeypatch.setattr(_evaluation, "_BOOTSTRAP_CHUNK_CELLS", 7 * 300)
    chunked = evaluate_clients(model, X, y, **kwargs)
    pd.testing.assert_frame_equal(whole.per_client, chunked.per_client)


def test_features_on_very_different_scales_warn_for_sgd_training():
    X, y, clients, S = make_federation(900, frame=False)
    X = X.copy()
    X[:, 0] *= 1e8
    with pytest.warns(UserWarning, match="scale"):
        FairPenaltyLogisticRegression().partial_fit(X, y, classes=[0, 1])
    with pytest.warns(UserWarning, match="scale"):
        FairMLPClassifier(hidden_layer_sizes=(3,), max_iter=2).fit(X, y)
    with pytest.warns(UserWarning, match="scale"):
        FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1).fit(
            X, y, clients=clients, sensitive_features=S
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        FairPenaltyLogisticRegression(fairness=0).partial_fit(
            X[:, 1:], y, classes=[0, 1]
        )


def test_a_fair_estimator_after_rose_in_an_imblearn_pipeline_refuses_routed_s():
    from imblearn.pipeline import Pipeline
    from sklearn import config_context

    # Subgroups of 60, 40, 50 and 50 rows: ROSE cuts one by 10 and adds 10
    # synthetic rows to another, so it returns as many rows as it gets, and
    # nothing but this check would notice the misaligned S.
    rng = np.random.RandomState(0)
    S = np.repeat(["a", "b"], 100)
    y = np.r_[np.repeat([0, 1], [60, 40]), np.repeat([0, 1], 50)]
    X = rng.randn(200, 3) + y[:, None]
    with config_context(enable_metadata_routing=True):
        pipeline = Pipeline(
            [
                (
                    "rose",
                    FairnessAwareROSE(random_state=0).set_fit_resample_request(
                        sensitive_features=True
                    ),
                ),
                ("clf", FairPenaltyLogisticRegression()),
            ]
        )
        with pytest.raises(ValueError, match=r"issue #1085.*column mode"):
            pipeline.fit(X, y, sensitive_features=S)
    # The same S with the original rows is fine.
    FairPenaltyLogisticRegression().fit(X, y, sensitive_features=S)


@pytest.mark.parametrize("factor", [1e-170, 1e-20, 1e160])
def test_the_fair_models_do_not_depend_on_the_scale_of_the_weights(factor):
    X, y, _, S = make_federation(900, frame=False)
    plain = FairPenaltyLogisticRegression(fairness=1.0).fit(X, y, sensitive_features=S)
    scaled = FairPenaltyLogisticRegression(fairness=1.0).fit(
        X, y, sensitive_features=S, sample_weight=np.full(len(y), factor)
    )
    np.testing.assert_allclose(scaled.coef_, plain.coef_, rtol=1e-6, atol=1e-8)


def test_one_huge_weight_gives_a_finite_model_led_by_that_row():
    X, y, _, S = make_federation(900, frame=False)
    weight = np.ones(len(y))
    weight[0] = 1e300
    model = FairPenaltyLogisticRegression(fairness=1.0).fit(
        X, y, sensitive_features=S, sample_weight=weight
    )
    assert np.all(np.isfinite(model.coef_))
    assert model.predict(X[:1])[0] == y[0]


def test_inputs_that_overflow_are_an_error_and_rose_stays_finite():
    X, y, _, S = make_federation(900, frame=False)
    with pytest.raises(ValueError, match=r"X holds values up to [0-9.]+e\+200"):
        FairPenaltyLogisticRegression().fit(X * 1e200, y, sensitive_features=S)
    for covariance in ("diag", "full"):
        huge, _ = FairnessAwareROSE(random_state=0, covariance=covariance).fit_resample(
            X * 1e200, y, sensitive_features=S
        )
        plain, _ = FairnessAwareROSE(
            random_state=0, covariance=covariance
        ).fit_resample(X, y, sensitive_features=S)
        np.testing.assert_allclose(huge / 1e200, plain, rtol=1e-9)


# Few iterations keep the test fast; not converging is expected there.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_an_identifier_as_sensitive_attribute_warns_and_fits_in_memory():
    rng = np.random.RandomState(0)
    X = rng.randn(20000, 5)
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(UserWarning, match="look like an identifier"):
        FairPenaltyLogisticRegression(fairness=1.0, max_iter=5).fit(
            X, y, sensitive_features=np.arange(20000)
        )


def test_an_inactive_penalty_warns_with_its_own_class():
    from skfedida.exceptions import InactivePenaltyWarning

    X, y, _, _ = _data()
    with pytest.warns(InactivePenaltyWarning, match="no sensitive attributes"):
        FairPenaltyLogisticRegression(fairness=1.0).fit(X, y)
    with pytest.warns(InactivePenaltyWarning, match="single value"):
        FairPenaltyLogisticRegression(fairness=1.0).fit(
            X, y, sensitive_features=np.full(len(y), "a")
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", InactivePenaltyWarning)
        FairPenaltyLogisticRegression(fairness=0.0).fit(X, y)


def test_rose_that_moves_no_row_leaves_s_aligned():
    # Balanced already and no undersampling: every row stays where it was,
    # so the sensitive features still describe X_res.
    rng = np.random.RandomState(0)
    S = np.repeat(["a", "b"], 100)
    y = np.tile(np.repeat([0, 1], 50), 2)
    X = rng.randn(200, 3)
    rose = FairnessAwareROSE(random_state=0)
    X_res, y_res = rose.fit_resample(X, y, sensitive_features=S)
    if np.array_equal(rose.sample_indices_, np.arange(200)):
        FairPenaltyLogisticRegression().fit(X_res, y_res, sensitive_features=S)


def test_column_mode_federation_does_not_claim_sparse_input():
    from sklearn.utils import get_tags

    fed = FederatedEstimator(
        FairPenaltyLogisticRegression(sensitive=[0]), sensitive=[0]
    )
    assert not get_tags(fed).input_tags.sparse
    assert get_tags(
        FederatedEstimator(FairPenaltyLogisticRegression())
    ).input_tags.sparse
