"""skfedida/_validation.py: the fast input checks give sklearn's answers.

A federation calls these per minibatch on arrays it validated once; each
fast path must answer as sklearn's generic check would for the plain arrays
it accepts, and hand everything else to that check.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn import config_context
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

from skfedida._compat import check_sample_weight
from skfedida._validation import (
    checked_float_matrix,
    is_plain_array,
    is_plain_float_matrix,
    plain_labels,
    reset_input_columns,
    sample_weight_of,
    string_column_error,
    unusable_column_error,
)
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier


# np.matrix warns that it is deprecated; it is here as the subclass to refuse.
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_plain_arrays_are_ndarrays_and_memory_maps_only(tmp_path):
    array = np.zeros((2, 2))
    memmap = np.memmap(tmp_path / "m", dtype=np.float64, mode="w+", shape=(2, 2))
    assert is_plain_array(array) and is_plain_array(memmap)
    # Subclasses change what indexing and arithmetic return.
    assert not is_plain_array(np.asmatrix(array))
    assert not is_plain_array(np.ma.masked_array(array))
    assert not is_plain_array([[0.0]])


@pytest.mark.parametrize(
    "X, plain",
    [
        (np.zeros((2, 3)), True),
        (np.zeros((2, 3), dtype=np.float32), True),
        (np.zeros((2, 3), dtype=np.int64), False),
        (np.zeros((2, 3), dtype=np.float16), False),
        (np.zeros(3), False),
        (np.zeros((0, 3)), False),
        (np.zeros((3, 0)), False),
        (np.zeros((1, 2, 3)), False),
    ],
)
def test_a_plain_float_matrix_is_2d_float32_or_64_and_not_empty(X, plain):
    assert is_plain_float_matrix(X) is plain


def _fitted(n_features=3, frame=False):
    X = np.random.default_rng(0).normal(size=(20, n_features))
    y = np.arange(20) % 2
    if frame:
        X = pd.DataFrame(X, columns=[f"f{j}" for j in range(n_features)])
    return LogisticRegression().fit(X, y)


def test_a_checked_matrix_is_the_same_array_not_a_copy():
    X = np.ones((4, 3))
    assert checked_float_matrix(_fitted(), X) is X


@pytest.mark.parametrize(
    "X", [np.ones((4, 2)), np.ones((4, 3), dtype=int), np.ones(3), [[1.0, 2.0, 3.0]]]
)
def test_anything_else_goes_the_generic_way(X):
    assert checked_float_matrix(_fitted(), X) is None


def test_an_estimator_fitted_on_named_columns_goes_the_generic_way():
    # So that sklearn warns that X has no names.
    assert checked_float_matrix(_fitted(frame=True), np.ones((4, 3))) is None


def test_nan_is_refused_unless_sklearn_is_told_to_assume_finite():
    X = np.ones((4, 3))
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        checked_float_matrix(_fitted(), X)
    with config_context(assume_finite=True):
        assert checked_float_matrix(_fitted(), X) is X


@pytest.mark.parametrize(
    "y",
    [
        np.array([2, 0, 2, 1]),
        np.array([True, False, True]),
        np.array(["b", "a", "b"]),
        np.array([3], dtype=np.uint8),
    ],
)
def test_plain_labels_are_their_classes_and_codes(y):
    classes, codes = plain_labels(y)
    expected_classes, expected_codes = np.unique(y, return_inverse=True)
    np.testing.assert_array_equal(classes, expected_classes)
    np.testing.assert_array_equal(codes, expected_codes)
    np.testing.assert_array_equal(classes[codes], y)


@pytest.mark.parametrize(
    "y",
    [
        np.array([0.0, 1.0]),
        np.array(["a", 1], dtype=object),
        np.array([[0, 1]]),
        np.array([], dtype=int),
        [0, 1],
    ],
    ids=["floats", "objects", "2-D", "empty", "list"],
)
def test_other_labels_go_the_generic_way(y):
    assert plain_labels(y) is None


def test_a_refit_on_an_array_forgets_the_earlier_column_names():
    estimator = _fitted(frame=True)
    assert hasattr(estimator, "feature_names_in_")
    reset_input_columns(estimator, np.ones((2, 5)))
    assert estimator.n_features_in_ == 5
    assert not hasattr(estimator, "feature_names_in_")


def test_a_fit_on_a_frame_records_its_column_names():
    estimator = LogisticRegression()
    reset_input_columns(estimator, pd.DataFrame({"a": [1.0], "b": [2.0]}))
    assert estimator.n_features_in_ == 2
    assert estimator.feature_names_in_.tolist() == ["a", "b"]


# -- sample_weight_of ----------------------------------------------------------------


def test_no_weights_are_ones():
    weights = sample_weight_of(None, np.zeros((3, 2)))
    assert weights.dtype == np.float64 and weights.tolist() == [1.0, 1.0, 1.0]


def test_valid_float64_weights_are_used_as_given():
    weights = np.array([0.5, 0.0, 2.0])
    assert sample_weight_of(weights, np.zeros((3, 2))) is weights


@pytest.mark.parametrize(
    "weights, message",
    [
        (np.array([1.0, -0.5, 1.0]), "Negative"),
        (np.array([1.0, np.nan, 1.0]), "NaN"),
        (np.array([1.0, np.inf, 1.0]), "infinity"),
        (np.zeros(3), "zero"),
        (np.ones(2), "shape"),
    ],
)
def test_invalid_weights_raise_sklearns_error(weights, message):
    with pytest.raises(ValueError, match=message):
        sample_weight_of(weights, np.zeros((3, 2)))


def test_all_zero_weights_pass_where_allowed():
    weights = np.zeros(3)
    assert sample_weight_of(weights, np.zeros((3, 1)), allow_all_zero_weights=True) is (
        weights
    )


@settings(max_examples=50, deadline=None)
@given(
    hnp.arrays(
        st.sampled_from([np.float64, np.float32, np.int64]),
        st.integers(1, 6),
        elements=st.integers(0, 5),
    ),
    st.booleans(),
)
def test_weights_are_what_sklearns_check_returns(weights, allow_zero):
    X = np.zeros((len(weights), 1))
    options = {"allow_all_zero_weights": allow_zero}
    try:
        expected = check_sample_weight(
            weights, X, dtype=np.float64, ensure_non_negative=True, **options
        )
    except ValueError:
        with pytest.raises(ValueError):
            sample_weight_of(weights, X, **options)
        return
    got = sample_weight_of(weights, X, **options)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


# -- string_column_error, unusable_column_error ----------------------------------


def test_a_frames_string_column_is_named_with_an_example_and_a_fix():
    X = pd.DataFrame({"income": [1.0, 2.0], "region": [None, "north"]})
    error = string_column_error(X, "FederatedEstimator")
    assert isinstance(error, ValueError)
    message = str(error)
    assert message.startswith("X column 'region' holds strings (such as 'north')")
    assert "FederatedEstimator needs numbers" in message
    assert "FederatedOneHotEncoder" in message


def test_an_arrays_string_column_is_named_by_its_position():
    X = np.array([[1.0, "a"], [2.0, "b"]], dtype=object)
    assert str(string_column_error(X, "m")).startswith("X column 1 holds strings")


def test_boosted_trees_are_told_to_give_a_string_column_the_category_dtype():
    X = pd.DataFrame({"income": [1.0, 2.0], "region": ["south", "north"]})
    message = str(string_column_error(X, "FairHistGradientBoostingClassifier"))
    assert "astype('category')" in message
    assert "OneHotEncoder" not in message


def test_a_column_of_objects_that_are_not_strings_keeps_the_generic_error():
    X = np.array([[1.0, {"a": 1}], [2.0, {"b": 2}]], dtype=object)
    assert string_column_error(X, "m") is None


# -- datetime columns: every estimator names the column ------------------------------


def _dated():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(
        {
            "income": rng.normal(size=60),
            "admitted": pd.date_range("2020-01-01", periods=60),
        }
    )
    return X, np.arange(60) % 2, np.arange(60) // 30


@pytest.mark.parametrize(
    "column, words",
    [
        (pd.date_range("2020-01-01", periods=2), "holds datetimes"),
        (pd.date_range("2020-01-01", periods=2, tz="UTC"), "holds datetimes"),
        (pd.to_timedelta([1, 2], unit="D"), "holds time spans"),
    ],
    ids=["naive", "zoned", "timedelta"],
)
def test_a_temporal_column_is_named(column, words):
    X = pd.DataFrame({"income": [1.0, 2.0], "when": column})
    message = str(unusable_column_error(X, "Model"))
    assert message.startswith(f"X column 'when' {words}")
    assert "Model needs numbers" in message


@pytest.mark.parametrize(
    "make",
    [
        lambda: FairPenaltyLogisticRegression(),
        lambda: FairMLPClassifier(max_iter=5),
        lambda: FairHistGradientBoostingClassifier(max_iter=2),
        lambda: FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1),
        lambda: FederatedEstimator(FairHistGradientBoostingClassifier(max_iter=2)),
        lambda: FederatedEstimator(HistGradientBoostingClassifier(max_iter=2)),
    ],
    ids=[
        "logistic",
        "mlp",
        "trees",
        "federated logistic",
        "federated trees",
        "federated scikit-learn trees",
    ],
)
def test_every_estimator_names_a_datetime_column(make):
    X, y, clients = _dated()
    estimator = make()
    extra = {"clients": clients} if isinstance(estimator, FederatedEstimator) else {}
    with pytest.raises((ValueError, RuntimeError), match="X column 'admitted'"):
        estimator.fit(X, y, **extra)


@pytest.mark.parametrize(
    "X",
    [
        pd.DataFrame({"a": ["1.5", "2"], "b": pd.Categorical([1, 2])}),
        np.array([["1", "2.5"]]),
        np.array(["a", "b"]),
        np.ones((2, 2)),
        "not a table",
    ],
    ids=["numeric text and categories", "numeric strings", "1-D", "floats", "text"],
)
def test_columns_that_convert_to_numbers_are_not_reported(X):
    assert string_column_error(X, "m") is None
