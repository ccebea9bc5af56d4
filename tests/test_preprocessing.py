"""Federated preprocessing: statistics of clients equal scikit-learn on pooled rows."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    MinMaxScaler,
    OneHotEncoder,
    StandardScaler,
)
from sklearn.utils.estimator_checks import parametrize_with_checks

from skfedida.datasets import make_federated_classification
from skfedida.exceptions import ClientDataWarning
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE
from skfedida.preprocessing import (
    FederatedMinMaxScaler,
    FederatedOneHotEncoder,
    FederatedSimpleImputer,
    FederatedStandardScaler,
    _base,
)

PAIRS = {
    "standard": (FederatedStandardScaler, StandardScaler),
    "minmax": (FederatedMinMaxScaler, MinMaxScaler),
    "onehot": (FederatedOneHotEncoder, OneHotEncoder),
    "imputer": (FederatedSimpleImputer, SimpleImputer),
}


def _numeric(seed, n=120, missing=0.1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 100.0, 1e5, 0.01] + [0.0, 5.0, 1e6, 3.0]
    # Ties and integers, as real tables have.
    X[:, 0] = np.round(X[:, 0], 1)
    X[rng.random(X.shape) < missing] = np.nan
    return X


def _sparse_numeric(seed, n=120):
    """_numeric's columns as CSR, about half of each an implicit zero.

    Every feature's mean is far from 0 (up to 1e6), so the implicit zeros'
    deviations from the federation's mean weigh in both rounds' sums.
    """
    from scipy import sparse

    X = _numeric(seed, n)
    X[np.random.default_rng(seed + 1).random(X.shape) < 0.5] = 0.0
    return sparse.csr_matrix(X)


def _categorical(seed, n=120):
    rng = np.random.default_rng(seed)
    X = np.empty((n, 2), dtype=object)
    X[:, 0] = rng.choice(["a", "b", "c", "d"], size=n, p=[0.5, 0.3, 0.15, 0.05])
    X[:, 1] = rng.choice(
        ["x", "y", "z", "w", "v"], size=n, p=[0.6, 0.2, 0.1, 0.07, 0.03]
    )
    return X


def _dense(X):
    return X.toarray() if hasattr(X, "toarray") else np.asarray(X)


def _assert_same_transform(ours, theirs, X):
    # Up to 1e-12 of the input's scale: centred values near the mean carry the
    # rounding of a mean of values of order 1e6 (the statistics themselves
    # are compared relatively below).
    scale = 1.0
    if np.asarray(X).dtype.kind == "f":
        scale = max(1.0, float(np.nanmax(np.abs(X))))
    np.testing.assert_allclose(
        _dense(ours.transform(X)),
        _dense(theirs.transform(X)),
        rtol=1e-12,
        atol=1e-12 * scale,
    )


CASES = [
    ("standard", {}, _numeric),
    ("standard", {"with_mean": False}, _numeric),
    ("standard", {"with_std": False}, _numeric),
    ("standard", {"with_mean": False}, _sparse_numeric),
    ("minmax", {"feature_range": (-1, 2)}, _numeric),
    ("imputer", {"strategy": "mean"}, _numeric),
    ("imputer", {"strategy": "median"}, _numeric),
    ("imputer", {"strategy": "most_frequent"}, _numeric),
    ("imputer", {"strategy": "constant", "fill_value": -1.0}, _numeric),
    ("imputer", {"strategy": "median", "add_indicator": True}, _numeric),
    ("onehot", {"sparse_output": False}, _categorical),
    (
        "onehot",
        {"min_frequency": 8, "handle_unknown": "infrequent_if_exist"},
        _categorical,
    ),
    ("onehot", {"max_categories": 3}, _categorical),
    ("onehot", {"drop": "first"}, _categorical),
    ("onehot", {"drop": "if_binary", "min_frequency": 0.1}, _categorical),
]


@pytest.mark.parametrize("name, options, make", CASES)
def test_one_client_equals_the_sklearn_parent(name, options, make):
    ours, theirs = PAIRS[name]
    X = make(0)
    fitted = ours(**options).fit(X)
    reference = theirs(**options).fit(X)
    _assert_same_transform(fitted, reference, X)


@settings(max_examples=15, deadline=None)
@given(
    case=st.sampled_from(CASES),
    n_clients=st.integers(1, 6),
    seed=st.integers(0, 2**16),
)
def test_k_clients_equal_the_sklearn_parent_on_pooled_rows(case, n_clients, seed):
    _assert_k_clients_equal_pooled(case, n_clients, seed)


@pytest.mark.parametrize("case", CASES, ids=lambda case: f"{case[0]}-{case[1]}")
def test_three_clients_equal_the_sklearn_parent_on_pooled_rows(case):
    """Every case, every time (the hypothesis test above draws 15 of them): the
    statistics of three clients give the parent's fit on the pooled rows,
    its categories, infrequent categories and counts of values included."""
    _assert_k_clients_equal_pooled(case, 3, 7)


@pytest.mark.parametrize("n_clients, seed", [(1, 0), (3, 1), (6, 2)])
def test_k_clients_of_sparse_rows_equal_the_sklearn_parent(n_clients, seed):
    """Sparse rows, every time: the implicit zeros are values of the column.

    Each counts in n and deviates from the federation's mean by minus that
    mean, in the sum and the sum of squares of the second round, as
    StandardScaler(with_mean=False) counts them on the pooled CSR rows.
    """
    case = ("standard", {"with_mean": False}, _sparse_numeric)
    _assert_k_clients_equal_pooled(case, n_clients, seed)


def _assert_k_clients_equal_pooled(case, n_clients, seed):
    name, options, make = case
    ours, theirs = PAIRS[name]
    X = make(seed)
    clients = np.random.default_rng(seed).integers(0, n_clients, size=X.shape[0])
    fitted = ours(**options).fit(X, clients=clients)
    reference = theirs(**options).fit(X)
    _assert_same_transform(fitted, reference, X)
    # Relatively, and up to 1e-12 of the input's scale (its square for the
    # variance): a mean that is 0 in exact arithmetic comes out as 0.0 one
    # way and -1e-17 the other, which no relative tolerance accepts.
    dense = _dense(X)
    scale = 1.0
    if dense.dtype.kind == "f":
        scale = max(1.0, float(np.nanmax(np.abs(dense))))
    for attribute, power in (
        ("mean_", 1),
        ("var_", 2),
        ("data_min_", 1),
        ("data_max_", 1),
        ("statistics_", 1),
        ("n_samples_seen_", 0),
    ):
        if getattr(reference, attribute, None) is not None:
            np.testing.assert_allclose(
                np.asarray(getattr(fitted, attribute), dtype=float),
                np.asarray(getattr(reference, attribute), dtype=float),
                rtol=1e-12,
                atol=1e-12 * scale**power if power else 0.0,
            )
    if name == "onehot":
        for a, b in zip(fitted.categories_, reference.categories_, strict=True):
            assert a.tolist() == b.tolist()
        if options.get("min_frequency") or options.get("max_categories"):
            for a, b in zip(
                fitted.infrequent_categories_,
                reference.infrequent_categories_,
                strict=True,
            ):
                assert (a is None and b is None) or a.tolist() == b.tolist()


def test_the_missing_indicator_marks_a_feature_any_client_misses():
    """add_indicator: a feature is marked when some row of the pooled data
    misses it, as SimpleImputer on the pooled rows marks it, also when only
    one client's rows do."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    clients = np.repeat([0, 1, 2], 20)
    X[[0, 5], 1] = np.nan  # client 0 alone misses feature 1
    X[[20, 45], 2] = np.nan  # clients 1 and 2 miss feature 2
    fitted = FederatedSimpleImputer(add_indicator=True).fit(X, clients=clients)
    pooled = SimpleImputer(add_indicator=True).fit(X)
    assert fitted.indicator_.features_.tolist() == [1, 2]
    assert pooled.indicator_.features_.tolist() == [1, 2]
    np.testing.assert_allclose(fitted.transform(X), pooled.transform(X), rtol=1e-12)


def test_the_encoders_categories_are_the_union_of_every_clients():
    """A category any client holds is a category of the federation: clients
    with different categories (none holds them all) give OneHotEncoder's
    categories of the pooled rows, and their counts add up."""
    X = np.array([["a"], ["b"], ["a"], ["c"], ["c"], ["b"], ["d"], ["b"]], object)
    clients = [0, 0, 0, 1, 1, 2, 2, 2]
    fitted = FederatedOneHotEncoder(min_frequency=3).fit(X, clients=clients)
    pooled = OneHotEncoder(min_frequency=3).fit(X)
    assert fitted.categories_[0].tolist() == ["a", "b", "c", "d"]
    assert pooled.categories_[0].tolist() == ["a", "b", "c", "d"]
    # b is the only category of 3 rows, and on three clients' rows.
    assert fitted.infrequent_categories_[0].tolist() == ["a", "c", "d"]
    np.testing.assert_array_equal(
        fitted.transform(X).toarray(), pooled.transform(X).toarray()
    )


def test_median_is_exact_with_ties_and_an_even_count():
    X = np.array([[1.0], [2.0], [2.0], [3.0], [7.0], [9.0]])
    fitted = FederatedSimpleImputer(strategy="median").fit(
        X, clients=[0, 1, 1, 2, 2, 0]
    )
    assert fitted.statistics_.tolist() == [2.5]
    X = np.array([[0.1], [0.1 + 1e-15], [5.0]])
    fitted = FederatedSimpleImputer(strategy="median", n_bins=2).fit(
        X, clients=[0, 1, 2]
    )
    assert fitted.statistics_[0] == np.median(X)


def test_all_missing_and_string_columns_are_handled_as_sklearn():
    X = np.array([[np.nan, 1.0], [np.nan, 2.0], [np.nan, 4.0]])
    for keep in (False, True):
        ours = FederatedSimpleImputer(keep_empty_features=keep).fit(
            X, clients=[0, 1, 1]
        )
        theirs = SimpleImputer(keep_empty_features=keep).fit(X)
        np.testing.assert_array_equal(ours.transform(X), theirs.transform(X))
    S = np.array([["a"], [None], ["b"], ["b"]], dtype=object)
    ours = FederatedSimpleImputer(strategy="most_frequent", missing_values=None)
    ours.fit(S, clients=[0, 0, 1, 1])
    assert ours.statistics_.tolist() == ["b"]


def _tree(federated):
    imputer, scaler, encoder = (
        (FederatedSimpleImputer, FederatedStandardScaler, FederatedOneHotEncoder)
        if federated
        else (SimpleImputer, StandardScaler, OneHotEncoder)
    )
    return ColumnTransformer(
        [
            (
                "num",
                Pipeline([("impute", imputer(strategy="median")), ("scale", scaler())]),
                make_column_selector(dtype_include="number"),
            ),
            (
                "cat",
                encoder(handle_unknown="infrequent_if_exist", min_frequency=5),
                make_column_selector(dtype_exclude="number"),
            ),
        ]
    )


def _raw_frame(seed, n=300):
    numbers = pd.DataFrame(_numeric(seed, n), columns=["a", "b", "c", "d"])
    categories = pd.DataFrame(_categorical(seed, n), columns=["e", "f"])
    return pd.concat([numbers, categories], axis=1)


@settings(max_examples=8, deadline=None)
@given(n_clients=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_a_tree_fitted_from_statistics_equals_the_pooled_tree(n_clients, seed):
    X = _raw_frame(seed)
    clients = np.random.default_rng(seed).integers(0, n_clients, size=len(X))
    parts = [X[clients == k] for k in np.unique(clients)]
    fitted, states = _base.fit_in_process(_tree(True), parts)
    assert len(states) == 3  # imputer, scaler, encoder: one state each
    reference = _tree(False).fit(X)
    # Standardised values are of order 1: absolute 1e-12 (near the mean a
    # relative bound would measure the cancellation, not the statistics).
    np.testing.assert_allclose(
        _dense(fitted.transform(X)),
        _dense(reference.transform(X)),
        rtol=1e-12,
        atol=1e-12,
    )
    assert list(fitted.get_feature_names_out()) == list(
        reference.get_feature_names_out()
    )


def _arrays(value):
    """Every numpy array inside an answer (dicts, lists, tuples)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _arrays(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _arrays(item)
    elif isinstance(value, np.ndarray):
        yield value


def _assert_no_row_dimension(answers, sizes):
    """No array of any (transformer, answer) pair has a row dimension."""
    for _, answer in answers:
        for array in _arrays(answer):
            assert not sizes & set(array.shape), array.shape


def test_clients_answer_with_statistics_not_rows(monkeypatch):
    # The data boundary of the statistics rounds: every answer is counts,
    # sums or category counts per feature; no array has a row dimension.
    X = _raw_frame(0, n=997)
    clients = np.arange(len(X)) % 3
    sizes = {int(np.sum(clients == k)) for k in range(3)} | {len(X)}
    answers = []
    real = _base.client_answer

    def recording(tree, rows, states, query):
        answer = real(tree, rows, states, query)
        answers.append(answer)
        return answer

    monkeypatch.setattr(_base, "client_answer", recording)
    _base.fit_in_process(_tree(True), [X[clients == k] for k in range(3)])
    assert answers

    _assert_no_row_dimension(answers, sizes)


def _federation(estimator, **options):
    options = {"n_rounds": 3, "local_epochs": 1, "random_state": 0, **options}
    return FederatedEstimator(estimator, **options)


@pytest.fixture(scope="module")
def raw():
    data = make_federated_classification(
        900, n_clients=3, as_frame=True, random_state=0
    )
    X = data.data.copy()
    X.iloc[::7, 0] = np.nan
    X["colour"] = np.random.default_rng(0).choice(["red", "green", "blue"], len(X))
    S = pd.DataFrame(data.sensitive)
    return X, data.target, np.asarray(data.clients), S


def _model_pipeline(**model_options):
    return Pipeline(
        [
            ("pre", _tree(True)),
            ("model", FairPenaltyLogisticRegression(fairness=1.0, **model_options)),
        ]
    )


def test_a_pipeline_federation_fits_its_transformers_from_statistics(raw):
    X, y, clients, S = raw
    federation = _federation(_model_pipeline(), sampler=FairnessAwareROSE())
    federation.fit(X, y, clients=clients, sensitive_features=S)
    assert isinstance(federation.estimator_, Pipeline)
    fitted_pre = federation.estimator_.named_steps["pre"]
    pooled = _tree(False).fit(X)
    scale = fitted_pre.named_transformers_["num"].named_steps["scale"]
    np.testing.assert_allclose(
        scale.mean_, pooled.named_transformers_["num"]["scale"].mean_, rtol=1e-12
    )
    # The model is the federation of the final estimator on the clients'
    # transformed rows: the same as fitting it on rows transformed by the
    # pooled transformers (to rounding).
    X_pooled = _dense(pooled.transform(X))
    plain = _federation(
        FairPenaltyLogisticRegression(fairness=1.0), sampler=FairnessAwareROSE()
    ).fit(X_pooled, y, clients=clients, sensitive_features=S)
    np.testing.assert_allclose(
        federation.predict_proba(X), plain.predict_proba(X_pooled), atol=1e-8
    )
    assert federation.n_features_in_ == X.shape[1]
    assert list(federation.feature_names_in_) == list(X.columns)
    assert len(federation.history_) == 3 * 3
    # Pickling and cloning keep it whole.
    again = pickle.loads(pickle.dumps(federation))
    np.testing.assert_array_equal(again.predict(X), federation.predict(X))
    assert clone(federation).get_params()["estimator__model__fairness"] == 1.0


def test_column_mode_keeps_the_sensitive_columns_out_of_the_model(raw):
    X, y, clients, S = raw
    with_columns = pd.concat([X, S.add_prefix("s_")], axis=1)
    names = [f"s_{c}" for c in S.columns]
    estimator = Pipeline(
        [
            ("pre", _tree(True)),
            ("model", FairPenaltyLogisticRegression(fairness=1.0, sensitive=names)),
        ]
    )
    federation = _federation(
        estimator, sampler=FairnessAwareROSE(sensitive=names), sensitive=names
    ).fit(with_columns, y, clients=clients)
    metadata = _federation(_model_pipeline(), sampler=FairnessAwareROSE()).fit(
        X, y, clients=clients, sensitive_features=S.add_prefix("s_")
    )
    np.testing.assert_array_equal(
        federation.predict_proba(with_columns), metadata.predict_proba(X)
    )
    inputs = federation.estimator_[:-1].get_feature_names_out()
    assert len(inputs) and not any("__s_" in name for name in inputs)


def test_warm_start_continues_the_model_not_the_preprocessing(raw):
    X, y, clients, S = raw
    once = _federation(_model_pipeline(), n_rounds=4)
    once.fit(X, y, clients=clients, sensitive_features=S)
    twice = _federation(_model_pipeline()).set_params(n_rounds=2, warm_start=True)
    twice.fit(X, y, clients=clients, sensitive_features=S)
    twice.fit(X, y, clients=clients, sensitive_features=S)
    np.testing.assert_array_equal(once.predict_proba(X), twice.predict_proba(X))


def test_local_models_are_pipelines_per_client(raw):
    X, y, clients, S = raw
    federation = _federation(_model_pipeline(), strategy="local").fit(
        X, y, clients=clients, sensitive_features=S
    )
    assert set(federation.client_estimators_) == {0, 1, 2}
    assert all(isinstance(m, Pipeline) for m in federation.client_estimators_.values())
    by_client = federation.predict_proba(X, clients=clients)
    rows = clients == 1
    np.testing.assert_array_equal(
        by_client[rows], federation.client_estimators_[1].predict_proba(X[rows])
    )


def test_a_stateful_transformer_that_is_not_federated_is_refused(raw):
    X, y, clients, S = raw
    estimator = Pipeline(
        [
            ("pre", ColumnTransformer([("scale", StandardScaler(), ["x0", "x1"])])),
            ("model", FairPenaltyLogisticRegression()),
        ]
    )
    with pytest.raises(
        ValueError,
        match=r"estimator\['pre'\]\['scale'\] is StandardScaler.*FederatedStandard",
    ):
        _federation(estimator).fit(X, y, clients=clients, sensitive_features=S)


def _remainder_tree(remainder):
    return ColumnTransformer(
        [("scale", FederatedStandardScaler(), [0, 1])], remainder=remainder
    )


def test_a_stateful_remainder_that_is_not_federated_is_refused(raw):
    # Stated behaviour: a ColumnTransformer's remainder is a transformer of
    # the tree like any other. A stateful one that is not federated would be
    # fitted on one client's rows: refused, naming the remainder's path.
    X, y, clients, S = raw
    numbers = X.select_dtypes("number").fillna(0.0)
    estimator = Pipeline(
        [
            ("pre", _remainder_tree(StandardScaler())),
            ("model", FairPenaltyLogisticRegression()),
        ]
    )
    with pytest.raises(
        ValueError,
        match=r"estimator\['pre'\]\[remainder\] is StandardScaler.*"
        r"FederatedStandardScaler",
    ):
        _federation(estimator).fit(numbers, y, clients=clients, sensitive_features=S)


def test_a_federated_remainder_is_fitted_from_every_clients_statistics():
    # Stated behaviour: a federated transformer as the remainder is fitted
    # from the clients' statistics like the named ones: the fitted tree
    # transforms as scikit-learn's, fitted on the pooled rows, does.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4)) * [1.0, 10.0, 100.0, 0.1] + [0.0, 5.0, -50.0, 2.0]
    clients = rng.integers(0, 3, size=len(X))
    parts = [X[clients == k] for k in range(3)]
    fitted, _ = _base.fit_in_process(_remainder_tree(FederatedStandardScaler()), parts)
    reference = ColumnTransformer(
        [("scale", StandardScaler(), [0, 1])], remainder=StandardScaler()
    ).fit(X)
    np.testing.assert_allclose(
        fitted.transform(X), reference.transform(X), rtol=1e-12, atol=1e-12
    )


def test_stateless_transformers_are_welcome(raw):
    X, y, clients, S = raw
    numbers = X.select_dtypes("number").fillna(0.0)
    estimator = make_pipeline(
        FunctionTransformer(np.tanh), FairPenaltyLogisticRegression()
    )
    federation = _federation(estimator).fit(
        numbers, y, clients=clients, sensitive_features=S
    )
    assert federation.predict(numbers).shape == (len(y),)


def test_pooled_preprocessing_outside_the_federation_warns(raw):
    X, y, clients, _ = raw
    numbers = X.select_dtypes("number").fillna(0.0)
    pooled = make_pipeline(
        StandardScaler(), _federation(FairPenaltyLogisticRegression(fairness=0.0))
    )
    with pytest.warns(ClientDataWarning, match=r"fitted \['standardscaler'\].*pooled"):
        pooled.fit(numbers, y, federatedestimator__clients=clients)
    stateless = make_pipeline(
        FunctionTransformer(np.tanh),
        _federation(FairPenaltyLogisticRegression(fairness=0.0)),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClientDataWarning)
        stateless.fit(numbers, y, federatedestimator__clients=clients)


def test_bad_input_is_a_clear_error():
    X = _numeric(0)
    # Declared, not refused inside: fit has no sample_weight (check_estimator
    # then leaves the weight checks out, as for any estimator without it).
    with pytest.raises(TypeError, match="sample_weight"):
        FederatedStandardScaler().fit(X, sample_weight=np.ones(len(X)))
    with pytest.raises(ValueError, match="callable strategy"):
        FederatedSimpleImputer(strategy=np.nanmean).fit(X)
    with pytest.raises(ValueError, match="n_bins"):
        FederatedSimpleImputer(strategy="median", n_bins=1).fit(X)
    with pytest.raises(ValueError, match=r"clients must hold one id per row: 120 rows"):
        FederatedMinMaxScaler().fit(X, clients=[0, 1, 2])
    from scipy import sparse

    with pytest.raises(ValueError, match="Cannot center sparse"):
        FederatedStandardScaler().fit(sparse.csr_matrix(np.nan_to_num(X)))
    with pytest.raises(ValueError, match="does not support sparse input"):
        FederatedSimpleImputer().fit(sparse.csc_matrix(np.nan_to_num(X)))


def _dense_tree():
    tree = _tree(True)
    tree.set_params(cat__sparse_output=False)
    return tree


@pytest.mark.parametrize("mode", ["metadata", "column", "nullable dtypes"])
def test_on_flower_a_pipeline_federation_gives_the_in_process_model(raw, mode):
    pytest.importorskip("flwr")
    from _helpers import assert_same_parameters

    from skfedida.flower import make_client_app, make_server_app, run_in_process

    X, y, clients, S = raw
    names = [f"s_{c}" for c in S.columns]
    if mode == "nullable dtypes":
        # pandas' nullable columns: the server rebuilds the pipeline from
        # their dtypes, before training.
        X = X.copy()
        X["count"] = pd.array(np.arange(len(X)) % 7, dtype="Int64")
        X.loc[X.index[::11], "count"] = pd.NA
        X["flag"] = pd.array(np.arange(len(X)) % 2 == 0, dtype="boolean")
    if mode == "column":
        X = pd.concat([X, S.add_prefix("s_")], axis=1)
        model = FairPenaltyLogisticRegression(fairness=1.0, sensitive=names)
        options = {"sampler": FairnessAwareROSE(sensitive=names), "sensitive": names}
    else:
        model = FairPenaltyLogisticRegression(fairness=1.0)
        options = {"sampler": FairnessAwareROSE(), "validation_fraction": 0.25}
    federation = _federation(
        Pipeline([("pre", _dense_tree()), ("model", model)]), **options
    )

    def load(context):
        rows = clients == context.node_config["partition-id"]
        loaded = {"X": X[rows], "y": np.asarray(y)[rows]}
        if mode != "column":
            loaded["sensitive_features"] = S[rows]
        return loaded

    on_flower = run_in_process(
        make_server_app(federation),
        make_client_app(federation, load),
        num_partitions=3,
    )
    local = clone(federation).fit(
        X, y, clients=clients, sensitive_features=None if mode == "column" else S
    )
    assert_same_parameters(on_flower.estimator_[-1], local.estimator_[-1])
    assert [r["train_loss"] for r in on_flower.history_ if "train_loss" in r] == [
        r["train_loss"] for r in local.history_
    ]
    # The server's pipeline, rebuilt from the statistics and the clients'
    # column names and dtypes, predicts raw rows as the in-process one.
    np.testing.assert_array_equal(on_flower.predict_proba(X), local.predict_proba(X))
    assert list(on_flower.feature_names_in_) == list(X.columns)
    pre = on_flower.estimator_.named_steps["pre"]
    np.testing.assert_array_equal(
        pre.named_transformers_["num"]["scale"].mean_,
        local.estimator_.named_steps["pre"].named_transformers_["num"]["scale"].mean_,
    )


def test_on_flower_statistics_replies_carry_no_row(raw):
    pytest.importorskip("flwr")
    from flwr.app import Context, RecordDict
    from flwr.common.constant import SUPERLINK_NODE_ID

    from skfedida._codec import decode
    from skfedida.flower import InProcessGrid, make_client_app, make_server_app
    from skfedida.flower._apps import REPLY_CONFIG
    from skfedida.flower._grid import _identity

    X, y, clients, S = raw
    federation = _federation(_model_pipeline(), n_rounds=1)

    def load(context):
        rows = clients == context.node_config["partition-id"]
        return {"X": X[rows], "y": np.asarray(y)[rows], "sensitive_features": S[rows]}

    grid = InProcessGrid(
        make_client_app(federation, load),
        [{"partition-id": k, "num-partitions": 3} for k in range(3)],
    )
    context = Context(1, SUPERLINK_NODE_ID, {}, RecordDict(), {})
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        make_server_app(federation)(grid, context)
    sizes = {int(np.sum(clients == k)) for k in range(3)} | {len(y)}
    answers = [
        decode(reply.content["config"]["answer"])
        for reply in grid.replies
        if "config" in reply.content and "answer" in reply.content["config"]
    ]
    # One round for the median's extremes and several of interval counts,
    # one for the scaler, one for the encoder: 3 clients each.
    assert len(answers) >= 3 * 4
    for reply in grid.replies:
        for record in reply.content.config_records.values():
            assert set(record) <= REPLY_CONFIG

    _assert_no_row_dimension(answers, sizes)


def test_a_client_answers_only_what_its_transformer_asks():
    # A server cannot ask a mean imputer for every value of a column, nor a
    # median imputer for more intervals than a median search needs (each
    # reveals counts), nor draw the bins itself.
    X = _numeric(0)
    with pytest.raises(ValueError, match="not 'values'"):
        FederatedSimpleImputer(strategy="mean")._answer(X, {"statistic": "values"})
    median = FederatedSimpleImputer(strategy="median")
    too_many = [(0, -(2**62), 2**62)] * 4000
    for intervals in (too_many, [(0, 5, 1)], [(9, 0, 1)], [(0, np.linspace(0, 1, 9))]):
        with pytest.raises(ValueError, match="does not fit a median search"):
            median._answer(X, {"statistic": "interval counts", "intervals": intervals})
    with pytest.raises(ValueError, match="not 'values'"):
        FederatedStandardScaler()._answer(X, {"statistic": "values"})


@pytest.mark.parametrize("n_bins", [2, 3, 4, 256])
@pytest.mark.parametrize(
    "column",
    [
        [1.0, 1 + 2**-52, 1 + 2**-52],
        [1.8e-19, -2.5e66, -189782.7, 181.0, 4.2e-18, 1.3e11],
        [1.7e308, -1.7e308, 1.0, 2.0, 3.0],
        [-0.0, 0.0, -0.0, 5e-324, -5e-324, 7.0],
        list(np.random.default_rng(0).standard_cauchy(501) * 1e200),
    ],
    ids=["adjacent floats", "heavy tails", "full range", "zeros", "cauchy"],
)
def test_the_median_is_exact_whatever_the_values(column, n_bins):
    X = np.asarray(column, dtype=float)[:, None]
    clients = np.arange(len(X)) % 3
    rounds = []
    imputer = FederatedSimpleImputer(strategy="median", n_bins=n_bins)
    real = imputer._answer

    def counting(rows, query):
        rounds.append(query["statistic"])
        return real(rows, query)

    imputer._answer = counting
    imputer.fit(X, clients=clients)
    assert imputer.statistics_[0] == np.median(X)
    # Searches in float order: 64 bits at log2(n_bins) bits a round.
    assert rounds.count("interval counts") / 3 <= np.ceil(64 / np.log2(n_bins)) + 1


def test_warm_start_applies_the_models_parameters_and_refuses_new_preprocessing(raw):
    X, y, clients, S = raw
    warm = _federation(_model_pipeline(), n_rounds=2, warm_start=True)
    warm.fit(X, y, clients=clients, sensitive_features=S)
    warm.set_params(estimator__model__fairness=50.0)
    warm.fit(X, y, clients=clients, sensitive_features=S)
    assert warm.estimator_[-1].fairness == 50.0
    # As without preprocessing: 2 rounds at fairness 1, 2 more at 50.
    plain = _federation(FairPenaltyLogisticRegression(fairness=1.0), n_rounds=2)
    plain.set_params(warm_start=True)
    X_pre = _dense(warm.estimator_[:-1].transform(X))
    plain.fit(X_pre, y, clients=clients, sensitive_features=S)
    plain.set_params(estimator__fairness=50.0)
    plain.fit(X_pre, y, clients=clients, sensitive_features=S)
    np.testing.assert_allclose(
        warm.predict_proba(X), plain.predict_proba(X_pre), atol=1e-12
    )
    warm.set_params(estimator__pre__num__scale__with_std=False)
    with pytest.raises(ValueError, match="preprocessing"):
        warm.fit(X, y, clients=clients, sensitive_features=S)


def test_column_mode_with_positions_and_preprocessing_is_refused(raw):
    X, y, clients, S = raw
    array = np.column_stack([X.select_dtypes("number").fillna(0).to_numpy(), S])
    estimator = Pipeline(
        [
            ("pre", ColumnTransformer([("scale", FederatedStandardScaler(), [0, 1])])),
            ("model", FairPenaltyLogisticRegression(sensitive=[5, 6])),
        ]
    )
    with pytest.raises(ValueError, match="by name"):
        _federation(
            estimator, sensitive=[5, 6], sampler=FairnessAwareROSE(sensitive=[5, 6])
        ).fit(array, y, clients=clients)


def test_the_scaler_keeps_its_digits_when_the_mean_dwarfs_the_spread():
    # Epoch-like values (1e9 +- 1) over 7 clients: combining the clients' own
    # means and variances (Chan) lost them (4e-9 relative); the two rounds
    # about the federation's mean keep sklearn's precision.
    rng = np.random.default_rng(0)
    X = 1e9 + rng.normal(0.0, 1.0, size=(2000, 2))
    clients = rng.integers(0, 7, size=len(X))
    ours = FederatedStandardScaler().fit(X, clients=clients)
    theirs = StandardScaler().fit(X)
    np.testing.assert_allclose(ours.var_, theirs.var_, rtol=1e-12)
    np.testing.assert_allclose(ours.mean_, theirs.mean_, rtol=1e-15)


@pytest.mark.parametrize("sparse_input", [False, True])
def test_float32_statistics_pass_the_gate_and_equal_sklearn(sparse_input):
    # Summed in float32 (~1e-7 off), an honest client's sums failed the
    # server's 1e-9 checks: "sum of deviations ... is not its first round's".
    from scipy import sparse

    rng = np.random.default_rng(0)
    X = rng.normal(1000, 1, (1000, 2)).astype(np.float32)
    clients = np.arange(1000) % 2
    if sparse_input:
        X = sparse.csr_matrix(X * (rng.uniform(size=X.shape) > 0.5))
    options = {"with_mean": False} if sparse_input else {}
    federated = FederatedStandardScaler(**options).fit(X, clients=clients)
    pooled = StandardScaler(**options).fit(X)
    np.testing.assert_allclose(federated.scale_, pooled.scale_, rtol=1e-6)
    if not sparse_input:
        np.testing.assert_allclose(federated.mean_, pooled.mean_, rtol=1e-9)
        column = np.full((1000, 1), 0.1, dtype=np.float32)
        FederatedStandardScaler().fit(column, clients=clients)
        pipeline = FederatedEstimator(
            make_pipeline(FederatedStandardScaler(), FairPenaltyLogisticRegression()),
            n_rounds=1,
            random_state=0,
        )
        y = (X[:, 0] > 1000).astype(int)
        pipeline.fit(X, y, clients=clients)


@pytest.mark.parametrize("n_clients", [1, 3, 12])
def test_variance_of_a_column_a_few_ulps_wide_is_sklearns_two_pass_variance(
    n_clients,
):
    # Twelve values within 60 ulps of 2.46e6: the federation's mean about
    # which clients sum their squares is off by round-off, and that offset's
    # square is 1.5% of the variance here. StandardScaler subtracts it (its
    # two-pass correction); so must the federation, at any number of clients.
    rng = np.random.default_rng(68)
    mean = 10.0 ** rng.uniform(3, 10)
    X = mean + rng.integers(0, 60, size=(12, 1)) * np.spacing(mean)
    expected = StandardScaler().fit(X)
    fitted = FederatedStandardScaler().fit(X, clients=np.arange(12) % n_clients)
    np.testing.assert_allclose(fitted.var_, expected.var_, rtol=1e-9)
    np.testing.assert_allclose(fitted.scale_, expected.scale_, rtol=1e-9)


@parametrize_with_checks(
    [
        FederatedStandardScaler(),
        FederatedMinMaxScaler(),
        FederatedSimpleImputer(),
        FederatedOneHotEncoder(),
    ]
)
def test_the_federated_transformers_pass_check_estimator(estimator, check):
    # Issue 35: the scaler said it took sample_weight and refused it, the
    # imputer said it took sparse X and refused it, the encoder read a list
    # of numbers as objects. No expected failures now.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.mark.parametrize("routing", [True, False])
def test_a_pipeline_of_federated_transformers_before_the_federation(routing):
    # Issue 35: with metadata routing the transformers request the rows'
    # clients as FederatedEstimator does (they raised UnsetMetadataPassedError),
    # and the same fit without routing takes step__clients. Fitted from the
    # clients' statistics, they are not "pooled" preprocessing: no warning,
    # and the scaler equals the one fitted inside the federation.
    from sklearn import config_context
    from sklearn.pipeline import Pipeline

    X = _numeric(0)
    rng = np.random.default_rng(1)
    y = (rng.random(len(X)) < 0.4).astype(int)
    clients = rng.integers(0, 3, len(X))
    pipe = Pipeline(
        [
            ("impute", FederatedSimpleImputer()),
            ("scale", FederatedStandardScaler()),
            ("fed", _federation(FairPenaltyLogisticRegression(fairness=0.0))),
        ]
    )
    with config_context(enable_metadata_routing=routing), warnings.catch_warnings():
        warnings.simplefilter("error", ClientDataWarning)
        if routing:
            pipe.fit(X, y, clients=clients)
        else:
            pipe.fit(
                X,
                y,
                impute__clients=clients,
                scale__clients=clients,
                fed__clients=clients,
            )
    imputed = FederatedSimpleImputer().fit(X, clients=clients).transform(X)
    expected = FederatedStandardScaler().fit(imputed, clients=clients)
    np.testing.assert_allclose(pipe.named_steps["scale"].mean_, expected.mean_)
    # A step fitted without the clients is pooled preprocessing, and said so.
    with (
        config_context(enable_metadata_routing=routing),
        pytest.warns(ClientDataWarning, match=r"\['scale'\]"),
    ):
        if routing:
            pipe.set_params(
                scale=FederatedStandardScaler().set_fit_request(clients=False)
            ).fit(X, y, clients=clients)
        else:
            pipe.fit(X, y, impute__clients=clients, fed__clients=clients)


def test_federated_transformers_nested_before_the_federation_are_not_pooled():
    # A ColumnTransformer (and a nested Pipeline) of federated transformers,
    # each given the clients by routing, fits from statistics: no warning.
    # One plain StandardScaler inside is pooled, and named by its outer step.
    from sklearn import config_context
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    X = np.nan_to_num(_numeric(0))
    rng = np.random.default_rng(2)
    y = (rng.random(len(X)) < 0.4).astype(int)
    clients = rng.integers(0, 3, len(X))

    def pipe(second):
        columns = ColumnTransformer(
            [
                ("a", Pipeline([("s", FederatedStandardScaler())]), [0]),
                ("b", second, [1]),
            ]
        )
        return Pipeline(
            [
                ("ct", columns),
                ("fed", _federation(FairPenaltyLogisticRegression(fairness=0.0))),
            ]
        )

    with config_context(enable_metadata_routing=True):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ClientDataWarning)
            pipe(FederatedMinMaxScaler()).fit(X, y, clients=clients)
        with pytest.warns(ClientDataWarning, match=r"\['ct'\]"):
            pipe(StandardScaler()).fit(X, y, clients=clients)


# -- aggregation="median": what one lying client can move ----------------------

#: Three clients of different sizes (the liar is the one of 330 rows).
MEDIAN_SIZES = (270, 300, 330)


def _shifted_answers(monkeypatch, shift=50.0):
    """The client of MEDIAN_SIZES[2] rows answers for its rows plus ``shift``:
    consistent in every statistic, within the gate's range rule."""
    real = FederatedStandardScaler._answer

    def answer(self, X, query):
        if X.shape[0] == MEDIAN_SIZES[2]:
            X = X + shift
        return real(self, X, query)

    monkeypatch.setattr(FederatedStandardScaler, "_answer", answer)


def _median_data():
    data = make_federated_classification(
        sum(MEDIAN_SIZES), n_clients=3, n_features=4, random_state=3
    )
    return data.data, data.target, np.repeat(np.arange(3), MEDIAN_SIZES)


def test_a_median_scaler_of_one_client_is_standard_scalers():
    X, _, _ = _median_data()
    X[::13, 1] = np.nan
    median = FederatedStandardScaler(aggregation="median").fit(X)
    pooled = StandardScaler().fit(X)
    np.testing.assert_allclose(median.mean_, pooled.mean_, rtol=1e-12)
    np.testing.assert_allclose(median.var_, pooled.var_, rtol=1e-12)
    np.testing.assert_array_equal(median.n_samples_seen_, pooled.n_samples_seen_)


def test_a_median_scaler_is_the_median_of_the_clients_statistics():
    X, _, clients = _median_data()
    X[::7, 0] = np.nan
    # Client 1 has no value of feature 1: the median is the other two's.
    X[clients == 1, 1] = np.nan
    scaler = FederatedStandardScaler(aggregation="median").fit(X, clients=clients)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its empty feature
        means = np.array([np.nanmean(X[clients == k], axis=0) for k in range(3)])
        center = np.nanmedian(means, axis=0)
        spreads = np.array(
            [np.nanmean((X[clients == k] - center) ** 2, axis=0) for k in range(3)]
        )
    spreads = np.nanmedian(spreads, axis=0)
    np.testing.assert_allclose(scaler.mean_, center, rtol=1e-12)
    np.testing.assert_allclose(scaler.var_, spreads, rtol=1e-12)
    np.testing.assert_allclose(scaler.scale_, np.sqrt(scaler.var_))


def test_a_median_scaler_keeps_a_lying_client_to_the_honest_range(monkeypatch):
    X, _, clients = _median_data()
    honest = {
        aggregation: FederatedStandardScaler(aggregation=aggregation).fit(
            X, clients=clients
        )
        for aggregation in ("mean", "median")
    }
    _shifted_answers(monkeypatch)
    lied = {
        aggregation: FederatedStandardScaler(aggregation=aggregation).fit(
            X, clients=clients
        )
        for aggregation in ("mean", "median")
    }
    # The pooled variance grows by the liar's share times 50 squared.
    assert np.all(lied["mean"].scale_ > 10 * honest["mean"].scale_)
    # The median's statistics stay between the two honest clients'.
    means = np.array([X[clients == k].mean(axis=0) for k in range(2)])
    slack = 1e-12 * np.abs(means).max(axis=0)
    assert np.all(lied["median"].mean_ >= means.min(axis=0) - slack)
    assert np.all(lied["median"].mean_ <= means.max(axis=0) + slack)
    spreads = np.array(
        [((X[clients == k] - lied["median"].mean_) ** 2).mean(axis=0) for k in (0, 1)]
    )
    assert np.all(lied["median"].var_ >= spreads.min(axis=0) * (1 - 1e-12))
    assert np.all(lied["median"].var_ <= spreads.max(axis=0) * (1 + 1e-12))
    np.testing.assert_allclose(lied["median"].scale_, honest["median"].scale_, rtol=0.1)


def test_a_median_scaler_in_a_federation_is_the_same_on_flower(monkeypatch):
    pytest.importorskip("flwr")
    from skfedida.flower import make_client_app, make_server_app, run_in_process

    X, y, clients = _median_data()
    _shifted_answers(monkeypatch)
    federation = _federation(
        make_pipeline(
            FederatedStandardScaler(aggregation="median"),
            FairPenaltyLogisticRegression(fairness=0.0),
        )
    )

    def load(context):
        rows = clients == context.node_config["partition-id"]
        return {"X": X[rows], "y": y[rows]}

    on_flower = run_in_process(
        make_server_app(federation), make_client_app(federation, load), num_partitions=3
    )
    local = clone(federation).fit(X, y, clients=clients)
    np.testing.assert_array_equal(on_flower.predict_proba(X), local.predict_proba(X))
    np.testing.assert_array_equal(
        on_flower.estimator_[0].scale_, local.estimator_[0].scale_
    )


def test_a_scaler_aggregation_is_validated():
    from sklearn.utils._param_validation import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="aggregation"):
        FederatedStandardScaler(aggregation="max").fit(np.ones((4, 1)))
