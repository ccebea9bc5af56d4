import numpy as np
import pandas as pd
import pytest

from skfedida._groups import encode_groups, resolve_sensitive


def _pair_labels(groups):
    return [groups.labels[code] for code in groups.codes]


@pytest.mark.parametrize(
    "make",
    [
        lambda race, sex: pd.DataFrame({"race": race, "sex": sex}),
        lambda race, sex: {"race": race, "sex": sex},
        lambda race, sex: {"race": pd.Series(race), "sex": np.array(sex)},
        lambda race, sex: np.column_stack([race, sex]),
    ],
    ids=["dataframe", "dict", "dict-mixed", "2d-array"],
)
def test_intersectional_codes_every_input_form(make):
    race = ["Black", "White", "White", "Black", "Asian"]
    sex = ["Female", "Male", "Female", "Female", "Male"]
    groups = encode_groups(make(race, sex))
    assert groups.n_groups == 4
    assert _pair_labels(groups) == list(zip(race, sex, strict=True))
    assert groups.labels == tuple(sorted(set(zip(race, sex, strict=True))))
    assert groups.codes.dtype == np.intp
    if not isinstance(make(race, sex), np.ndarray):
        assert groups.names == ("race", "sex")
    else:
        assert groups.names == ("sensitive_feature_0", "sensitive_feature_1")


def test_one_attribute_forms_agree():
    values = ["b", "a", "b", "c"]
    expected = encode_groups(values)
    for form in (np.array(values), pd.Series(values, name="g"), {"g": values}):
        groups = encode_groups(form)
        np.testing.assert_array_equal(groups.codes, expected.codes)
        assert groups.labels == (("a",), ("b",), ("c",))
    assert encode_groups(pd.Series(values, name="g")).names == ("g",)
    assert encode_groups(values).label_strings() == ["a", "b", "c"]


def test_numeric_and_categorical_attributes():
    age_band = pd.Categorical(["old", "young", "old"], categories=["young", "old"])
    groups = encode_groups(pd.DataFrame({"band": age_band, "site": [2, 1, 2]}))
    assert groups.n_groups == 2
    assert groups.codes[0] == groups.codes[2] != groups.codes[1]
    assert all(isinstance(label[1], int) for label in groups.labels)


def test_codes_without_pandas_fallback(monkeypatch):
    import skfedida._groups as module

    race = np.array(["B", "W", "W", "B"], dtype=object)
    sex = np.array([1.0, 0.0, 1.0, 1.0])
    with_pandas = encode_groups({"race": race, "sex": sex})
    monkeypatch.setattr(module, "pd", None)
    without = encode_groups({"race": race, "sex": sex})
    np.testing.assert_array_equal(with_pandas.codes, without.codes)
    assert with_pandas.labels == without.labels
    with pytest.raises(ValueError, match="'sex' has 1 missing"):
        encode_groups({"race": race, "sex": np.array([1.0, np.nan, 0.0, 1.0])})
    with pytest.raises(ValueError, match="'race' has 1 missing"):
        encode_groups({"race": np.array(["B", None, "W", "B"], dtype=object)})


def test_many_attributes_fall_back_to_sorting(monkeypatch):
    import skfedida._groups as module

    rng = np.random.default_rng(0)
    S = rng.integers(0, 3, size=(200, 4))
    dense = encode_groups(S)
    monkeypatch.setattr(module, "_MAX_DENSE_COMBINATIONS", 1)
    sorted_ = encode_groups(S)
    np.testing.assert_array_equal(dense.codes, sorted_.codes)
    assert dense.labels == sorted_.labels


@pytest.mark.parametrize(
    "bad",
    [
        pd.DataFrame({"race": ["a", None, "b"], "sex": ["F", "M", "F"]}),
        pd.DataFrame({"race": ["a", "c", "b"], "sex": ["F", np.nan, "F"]}),
        pd.Series(["a", pd.NA, "b"], name="race", dtype="string"),
        np.array([1.0, np.nan, 2.0]),
    ],
)
def test_missing_values_are_named(bad):
    with pytest.raises(ValueError, match=r"missing value.*complete"):
        encode_groups(bad)


def test_missing_value_message_names_column_and_row():
    S = pd.DataFrame({"race": ["a", "b", "b"], "sex": ["F", "M", None]})
    with pytest.raises(ValueError, match=r"column 'sex' has 1 missing.*row position 2"):
        encode_groups(S)


def test_length_mismatch_is_named():
    with pytest.raises(ValueError, match="sensitive_features has 3 rows but X and y"):
        encode_groups(["a", "b", "a"], n_samples=4)
    with pytest.raises(ValueError, match="columns of different lengths"):
        encode_groups({"a": [1, 2], "b": [1, 2, 3]})


@pytest.mark.parametrize(
    "bad, message",
    [
        (np.zeros((2, 2, 2)), "1-D or 2-D"),
        ({}, "no columns"),
        ({"a": [[1, 2], [3, 4]]}, r"sensitive_features\['a'\] must be 1-D"),
    ],
)
def test_bad_shapes(bad, message):
    with pytest.raises(ValueError, match=message):
        encode_groups(bad)


def test_sparse_is_rejected():
    import scipy.sparse as sp

    with pytest.raises(TypeError, match="dense"):
        encode_groups(sp.csr_matrix(np.eye(3)))


def test_resolve_precedence_and_columns():
    X = pd.DataFrame({"age": [30, 40], "race": ["a", "b"], "sex": ["F", "M"]})
    S = pd.Series(["x", "y"])

    X_model, found = resolve_sensitive(X, sensitive_features=S)
    assert X_model is X and found is S

    X_model, found = resolve_sensitive(X, sensitive=["race", "sex"])
    assert list(X_model.columns) == ["age"]
    assert list(found.columns) == ["race", "sex"]

    X_model, found = resolve_sensitive(X, sensitive="race", drop=False)
    assert X_model is X and list(found.columns) == ["race"]

    assert resolve_sensitive(X) == (X, None)

    with pytest.raises(ValueError, match="given twice"):
        resolve_sensitive(X, sensitive_features=S, sensitive=["race"])
    with pytest.raises(ValueError, match="names column 'ethnicity', which is not in X"):
        resolve_sensitive(X, sensitive=["race", "ethnicity"])
    with pytest.raises(ValueError, match="at least one column"):
        resolve_sensitive(X, sensitive=[])


def test_resolve_columns_of_an_array():
    X = np.array([[1.0, 0.0, 5.0], [2.0, 1.0, 6.0]])
    X_model, found = resolve_sensitive(X, sensitive=[1])
    np.testing.assert_array_equal(X_model, [[1.0, 5.0], [2.0, 6.0]])
    np.testing.assert_array_equal(found["x1"], [0.0, 1.0])
    with pytest.raises(ValueError, match="X is an array, so give column positions"):
        resolve_sensitive(X, sensitive=["race"])
    with pytest.raises(ValueError, match="position 3 outside X's 3 columns"):
        resolve_sensitive(X, sensitive=[3])


def test_dict_of_wrong_length_hints_at_cross_validation():
    with pytest.raises(ValueError, match="not sliced per fold"):
        encode_groups({"a": ["x", "y", "x"]}, n_samples=2)


# -- encoded groups (SensitiveGroups) as a value accepted wherever S is -------


def _encoded_case(seed=0, n=300):
    rng = np.random.default_rng(seed)
    S = pd.DataFrame(
        {
            "race": rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1]),
            "sex": rng.choice(["F", "M"], size=n),
        }
    )
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + rng.normal(size=n) > 0.5).astype(int)
    return X, y, S


def test_take_keeps_labels_and_compact_renumbers_like_a_fresh_encoding():
    _, _, S = _encoded_case()
    groups = encode_groups(S)
    rows = np.flatnonzero(S["race"].to_numpy() != "b")
    taken = groups.take(rows)
    assert taken.labels == groups.labels  # numbering kept: some groups empty
    assert len(taken) == rows.size and taken.shape == (rows.size,)
    fresh = encode_groups(S.iloc[rows])
    compacted = encode_groups(taken)  # what every consumer sees
    np.testing.assert_array_equal(compacted.codes, fresh.codes)
    assert compacted.labels == fresh.labels and compacted.names == fresh.names
    full = encode_groups(groups)
    assert full is groups  # nothing to drop: passed through unchanged


def test_encoded_groups_of_the_wrong_length_are_refused():
    _, _, S = _encoded_case()
    with pytest.raises(ValueError, match="sensitive_features has 300 rows"):
        encode_groups(encode_groups(S), n_samples=299)


def test_metrics_sampler_and_estimator_give_the_same_answer_for_encoded_groups():
    from skfedida.linear_model import FairPenaltyLogisticRegression
    from skfedida.metrics import fairness_summary, group_report
    from skfedida.over_sampling import FairnessAwareROSE

    X, y, S = _encoded_case()
    groups = encode_groups(S)
    rows = np.arange(0, 300, 2)
    model = FairPenaltyLogisticRegression(fairness=2.0, random_state=0)
    coef_raw = model.fit(X, y, sensitive_features=S).coef_
    coef_enc = model.fit(X, y, sensitive_features=groups).coef_
    np.testing.assert_array_equal(coef_raw, coef_enc)
    pred = model.predict(X)
    for S_form in (S, groups):
        pd.testing.assert_series_equal(
            pd.Series(fairness_summary(y, pred, sensitive_features=S_form)),
            pd.Series(fairness_summary(y, pred, sensitive_features=S)),
        )
    pd.testing.assert_frame_equal(
        group_report(y[rows], pred[rows], sensitive_features=groups.take(rows)),
        group_report(y[rows], pred[rows], sensitive_features=S.iloc[rows]),
    )
    rose = FairnessAwareROSE(random_state=0)
    X_raw, y_raw, S_raw = rose.fit_resample_with_sensitive(X, y, sensitive_features=S)
    before_raw = rose.subgroup_counts_before_
    X_enc, y_enc, S_enc = rose.fit_resample_with_sensitive(
        X, y, sensitive_features=groups
    )
    np.testing.assert_array_equal(X_raw, X_enc)
    np.testing.assert_array_equal(y_raw, y_enc)
    assert rose.subgroup_counts_before_ == before_raw
    np.testing.assert_array_equal(encode_groups(S_raw).codes, S_enc.codes)


def test_values_give_back_every_rows_sensitive_values():
    _, _, S = _encoded_case()
    values = encode_groups(S).take(np.arange(10)).values()
    assert list(values) == ["race", "sex"]
    np.testing.assert_array_equal(values["race"], S["race"].to_numpy()[:10])
    np.testing.assert_array_equal(values["sex"], S["sex"].to_numpy()[:10])


def test_encoded_groups_are_sliced_like_an_array_by_sklearn():
    from sklearn.utils import _safe_indexing

    _, _, S = _encoded_case()
    groups = encode_groups(S)
    rows = np.arange(0, 300, 3)
    for key in (rows, slice(0, 300, 3), np.isin(np.arange(300), rows)):
        part = _safe_indexing(groups, key)
        np.testing.assert_array_equal(
            encode_groups(part).codes, encode_groups(S.iloc[rows]).codes
        )
