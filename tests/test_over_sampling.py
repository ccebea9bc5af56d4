"""FairnessAwareROSE: counts, kernel, imblearn equivalence, pipelines, bad input."""

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from imblearn.over_sampling import RandomOverSampler
from imblearn.pipeline import Pipeline as ImbPipeline
from imblearn.utils.estimator_checks import parametrize_with_checks as imblearn_checks
from sklearn import config_context
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks as sklearn_checks

from skfedida.metrics import make_fairness_scorer
from skfedida.over_sampling import FairnessAwareROSE

# Tests that resample without sensitive features on purpose, where the sampler
# warns that it balances the classes only.
NO_SENSITIVE = "ignore::skfedida.exceptions.InactiveGroupBalancingWarning"


# The suites fit without sensitive features, where FairnessAwareROSE warns
# (InactiveGroupBalancingWarning, an InactivePenaltyWarning): filtered as the
# estimators' check tests filter theirs.
@pytest.mark.filterwarnings("ignore::skfedida.exceptions.InactivePenaltyWarning")
@imblearn_checks([FairnessAwareROSE(random_state=0)])
# check_samplers_2d_target passes a column-vector y on purpose; the warning
# it gets is sklearn's convention, tested in test_bad_input.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.DataConversionWarning")
def test_imblearn_sampler_checks(estimator, check):
    check(estimator)


# The suites fit without sensitive features, where FairnessAwareROSE warns
# (InactiveGroupBalancingWarning, an InactivePenaltyWarning): filtered as the
# estimators' check tests filter theirs.
@pytest.mark.filterwarnings("ignore::skfedida.exceptions.InactivePenaltyWarning")
@sklearn_checks([FairnessAwareROSE(random_state=0)])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def _problem(n=600, seed=0):
    """Continuous, binary, integer and string columns; two sensitive attributes."""
    rng = np.random.default_rng(seed)
    race = rng.choice(["White", "Black", "Asian"], size=n, p=[0.7, 0.2, 0.1])
    sex = rng.choice(["F", "M"], size=n, p=[0.4, 0.6])
    X = pd.DataFrame(
        {
            "age": rng.normal(40, 10, size=n),
            "income": rng.lognormal(10, 1, size=n).astype(np.float32),
            "smoker": rng.integers(0, 2, size=n).astype(float),
            "children": rng.integers(0, 4, size=n),
            "region": rng.choice(["north", "south"], size=n),
            "race": race,
            "sex": sex,
        }
    )
    y = ((X["age"] > 45) ^ (rng.random(n) < 0.15)).astype(int).to_numpy()
    return X, y


def _counts(S, y):
    frame = pd.DataFrame(S).astype(str).assign(_y=np.asarray(y))
    return Counter(map(tuple, frame.to_numpy().tolist()))


@pytest.mark.parametrize(
    "n_target, expected",
    [
        (50, lambda c: 50),
        ("max", lambda c: max(c.values())),
        ("mean", lambda c: round(np.mean(list(c.values())))),
        ("median", lambda c: round(np.median(list(c.values())))),
        (0.5, lambda c: round(0.5 * max(c.values()))),
        (lambda counts: 77, lambda c: 77),
    ],
    ids=["int", "max", "mean", "median", "fraction", "callable"],
)
def test_every_subgroup_reaches_the_target(n_target, expected):
    X, y = _problem()
    S = X[["race", "sex"]]
    rose = FairnessAwareROSE(n_target=n_target, random_state=0)
    X_res, y_res = rose.fit_resample(
        X.drop(columns=["race", "sex"]), y, sensitive_features=S
    )
    before = _counts(S, y)
    after = _counts(S.iloc[rose.sample_indices_], y_res)
    target = expected(before)
    assert set(after) == set(before)
    assert all(count == target for count in after.values())
    assert set(rose.n_target_.values()) == {target}
    assert sum(rose.subgroup_counts_after_.values()) == len(y_res) == len(X_res)
    assert rose.subgroup_counts_before_ == {
        ((race, sex), int(label)): count for (race, sex, label), count in before.items()
    }


def test_undersample_false_keeps_large_subgroups():
    X, y = _problem()
    S = X[["race", "sex"]]
    rose = FairnessAwareROSE(n_target=40, undersample=False, random_state=0)
    _, _y_res = rose.fit_resample(X[["age"]], y, sensitive_features=S)
    for key, count in rose.subgroup_counts_before_.items():
        assert rose.subgroup_counts_after_[key] == max(count, 40)
    # Nothing is dropped: every input row is among the outputs.
    assert set(rose.sample_indices_[: rose.n_original_]) == set(range(len(y)))


def test_dict_targets_and_absent_subgroups_stay_absent():
    X = np.arange(20.0).reshape(10, 2)
    y = np.array([0, 0, 0, 1, 1, 0, 0, 0, 0, 0])
    S = np.array(["a", "a", "a", "a", "a", "b", "b", "b", "b", "b"])
    rose = FairnessAwareROSE(n_target={("a", 1): 6, (("b",), 0): 2}, random_state=0)
    _, y_res = rose.fit_resample(X, y, sensitive_features=S)
    assert rose.subgroup_counts_after_ == {
        (("a",), 0): 3,
        (("a",), 1): 6,
        (("b",), 0): 2,
    }
    # ("b", 1) has no row: nothing to synthesise from, so it stays absent.
    S_res = S[rose.sample_indices_]
    assert not np.any((S_res == "b") & (y_res == 1))


def test_group_mean_keeps_each_groups_size_and_equalises_its_classes():
    # Group a: 7 negatives, 3 positives; b: 2 and 2; c: 5 negatives only.
    y = np.array([0] * 7 + [1] * 3 + [0, 0, 1, 1] + [0] * 5)
    S = np.array(["a"] * 10 + ["b"] * 4 + ["c"] * 5)
    X = np.arange(2.0 * y.size).reshape(-1, 2)
    rose = FairnessAwareROSE(n_target="group_mean", random_state=0)
    _, y_res = rose.fit_resample(X, y, sensitive_features=S)
    assert rose.subgroup_counts_after_ == {
        (("a",), 0): 5,
        (("a",), 1): 5,
        (("b",), 0): 2,
        (("b",), 1): 2,
        (("c",), 0): 5,  # one class: nothing to equalise, the group is kept
    }
    # Weighted back to the overall class shares (the federation's prior
    # correction), every group has the overall shares: Kamiran and Calders'
    # reweighing (exactly so where every group holds both classes).
    from skfedida.federated._client import _prior_weights

    both = S != "c"
    rose.fit_resample(X[both], y[both], sensitive_features=S[both])
    y_res = y[both][rose.sample_indices_]
    weight = _prior_weights(y[both], y_res, 2)
    S_res = S[both][rose.sample_indices_]
    for group in ("a", "b"):
        rows = S_res == group
        share = np.average(y_res[rows], weights=weight[rows])
        assert share == pytest.approx(y[both].mean())


def test_group_mean_rounds_half_to_even_as_mean_does():
    # Group a: 5 + 2 rows, a mean of 3.5 per class -> 4; group b: 4 + 1, a
    # mean of 2.5 -> 2 (Python's round, half to even, as n_target="mean").
    y = np.array([0] * 5 + [1] * 2 + [0] * 4 + [1])
    S = np.array(["a"] * 7 + ["b"] * 5)
    X = np.zeros((12, 1))
    rose = FairnessAwareROSE(n_target="group_mean", random_state=0)
    rose.fit_resample(X, y, sensitive_features=S)
    assert rose.subgroup_counts_after_ == {
        (("a",), 0): 4,
        (("a",), 1): 4,
        (("b",), 0): 2,
        (("b",), 1): 2,
    }


@pytest.mark.filterwarnings(NO_SENSITIVE)
def test_without_sensitive_features_balances_classes():
    X, y = _problem()
    rose = FairnessAwareROSE(n_target="max", random_state=0)
    _, y_res = rose.fit_resample(X[["age", "smoker"]], y)
    counts = np.bincount(y_res)
    assert counts[0] == counts[1] == np.bincount(y).max()
    assert rose.subgroups_ == [((), 0), ((), 1)]


def test_synthetic_rows_copy_discrete_columns_and_noise_continuous_ones():
    X, y = _problem()
    rose = FairnessAwareROSE(n_target="max", sensitive=["race", "sex"], random_state=0)
    X_res, y_res = rose.fit_resample(X, y)
    seeds = X.iloc[rose.sample_indices_].reset_index(drop=True)
    synthetic = slice(rose.n_original_, None)
    for column in ("smoker", "children", "region", "race", "sex"):
        pd.testing.assert_series_equal(
            X_res[column].iloc[synthetic], seeds[column].iloc[synthetic]
        )
    for column in ("age", "income"):
        assert (
            X_res[column].iloc[synthetic] != seeds[column].iloc[synthetic]
        ).mean() > 0.9
    # The original rows come first, unchanged.
    pd.testing.assert_frame_equal(
        X_res.iloc[: rose.n_original_], seeds.iloc[: rose.n_original_]
    )
    np.testing.assert_array_equal(y_res, y[rose.sample_indices_])
    assert list(rose.noised_features_) == [
        True,
        True,
        False,
        False,
        False,
        False,
        False,
    ]


def test_pandas_in_pandas_out_numpy_in_numpy_out():
    X, y = _problem()
    rose = FairnessAwareROSE(sensitive=["race", "sex"], random_state=0)
    X_res, y_res = rose.fit_resample(X, pd.Series(y, name="outcome"))
    assert list(X_res.columns) == list(X.columns)
    assert X_res.dtypes.to_dict() == X.dtypes.to_dict()
    assert isinstance(y_res, pd.Series) and y_res.name == "outcome"
    assert (rose.feature_names_in_ == np.array(X.columns)).all()

    X_num = X[["age", "smoker"]].to_numpy()
    X_res, y_res = rose.set_params(sensitive=None).fit_resample(
        X_num, y, sensitive_features=X["race"]
    )
    assert isinstance(X_res, np.ndarray) and isinstance(y_res, np.ndarray)
    X_res, y_res = rose.fit_resample(
        X_num.tolist(), y.tolist(), sensitive_features=X["race"]
    )
    assert isinstance(X_res, list) and isinstance(y_res, list)


def test_noised_integer_columns_become_float():
    X, y = _problem()
    rose = FairnessAwareROSE(
        n_target="max",
        categorical_features=["smoker", "region"],
        sensitive=["race", "sex"],
        random_state=0,
    )
    X_res, _ = rose.fit_resample(X, y)
    assert X_res["children"].dtype == np.float64
    assert X_res["income"].dtype == np.float32
    assert X_res["smoker"].dtype == X["smoker"].dtype


@pytest.mark.filterwarnings(NO_SENSITIVE)
@pytest.mark.parametrize("shrinkage", [0.5, 1.0, 2.0])
def test_diag_kernel_covariance(shrinkage):
    rng = np.random.default_rng(1)
    n_small, n_large, target = 40, 60, 40_000
    X = np.vstack(
        [
            rng.normal([0, 5], [1.0, 3.0], size=(n_small, 2)),
            rng.normal(size=(n_large, 2)),
        ]
    )
    y = np.r_[np.ones(n_small, int), np.zeros(n_large, int)]
    rose = FairnessAwareROSE(n_target=target, shrinkage=shrinkage, random_state=0)
    X_res, y_res = rose.fit_resample(X, y)
    synthetic = np.arange(len(y_res)) >= rose.n_original_
    small = synthetic & (y_res == 1)
    noise = X_res[small] - X[rose.sample_indices_[small]]
    h = (4 / ((2 + 2) * len(y))) ** (1 / (2 + 4))
    expected = np.diag((shrinkage * h * X[:n_small].std(axis=0)) ** 2)
    observed = np.cov(noise, rowvar=False)
    # 40,000 draws: a variance is estimated within about 1% (sd); allow 5%.
    np.testing.assert_allclose(np.diag(observed), np.diag(expected), rtol=0.05)
    assert abs(observed[0, 1]) < 0.05 * np.sqrt(expected[0, 0] * expected[1, 1])
    standard_error = np.sqrt(np.diag(expected) / small.sum())
    assert np.all(np.abs(noise.mean(axis=0)) < 4 * standard_error)


@pytest.mark.filterwarnings(NO_SENSITIVE)
def test_full_and_explicit_covariance():
    rng = np.random.default_rng(2)
    cov = np.array([[2.0, 1.2], [1.2, 1.5]])
    X = np.vstack(
        [rng.multivariate_normal([0, 0], cov, size=200), rng.normal(size=(300, 2))]
    )
    y = np.r_[np.ones(200, int), np.zeros(300, int)]
    target = 30_200

    def noise_cov(rose):
        X_res, y_res = rose.fit_resample(X, y)
        small = (np.arange(len(y_res)) >= rose.n_original_) & (y_res == 1)
        return np.cov(X_res[small] - X[rose.sample_indices_[small]], rowvar=False)

    full = noise_cov(
        FairnessAwareROSE(n_target=target, covariance="full", random_state=0)
    )
    h = (4 / (4 * len(y))) ** (1 / 6)
    expected = h**2 * np.cov(X[:200], rowvar=False, ddof=0)
    np.testing.assert_allclose(full, expected, rtol=0.06)

    sigma = np.array([[0.3, -0.1], [-0.1, 0.2]])
    explicit = noise_cov(
        FairnessAwareROSE(n_target=target, covariance=sigma, random_state=0)
    )
    np.testing.assert_allclose(explicit, sigma, rtol=0.06, atol=0.005)


def test_one_row_and_constant_subgroups_give_no_nan():
    X = np.array(
        [
            [1.0, 2.0],
            [3.0, 3.0],
            [3.0, 3.0],
            [3.0, 3.0],
            [0.5, 9.0],
            [0.1, 0.2],
            [0.3, 0.1],
        ]
    )
    y = np.array([1, 0, 0, 0, 1, 0, 0])
    S = np.array(["solo", "const", "const", "const", "x", "x", "x"])
    for covariance in ("diag", "full"):
        rose = FairnessAwareROSE(n_target=10, covariance=covariance, random_state=0)
        X_res, _y_res = rose.fit_resample(X, y, sensitive_features=S)
        assert np.isfinite(X_res).all()
        S_res = S[rose.sample_indices_]
        # A single seed row or constant rows: zero variance, zero noise.
        np.testing.assert_array_equal(X_res[S_res == "solo"], [[1.0, 2.0]] * 10)
        np.testing.assert_array_equal(X_res[S_res == "const"], [[3.0, 3.0]] * 10)


@pytest.mark.filterwarnings(NO_SENSITIVE)
@pytest.mark.parametrize("shrinkage", [0.0, 0.7, 1.0, 3.0])
def test_single_group_equals_random_over_sampler_exactly(shrinkage):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4)) * [1, 2, 3, 4]
    y = (rng.random(300) < 0.2).astype(int)
    ours = FairnessAwareROSE(n_target="max", shrinkage=shrinkage, random_state=7)
    theirs = RandomOverSampler(shrinkage=shrinkage, random_state=7)
    X_ours, y_ours = ours.fit_resample(X, y)
    X_theirs, y_theirs = theirs.fit_resample(X, y)
    np.testing.assert_array_equal(ours.sample_indices_, theirs.sample_indices_)
    np.testing.assert_array_equal(y_ours, y_theirs)
    np.testing.assert_allclose(X_ours, X_theirs, rtol=1e-15, atol=0)


@pytest.mark.filterwarnings(NO_SENSITIVE)
def test_single_group_agrees_with_random_over_sampler_in_distribution():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2000, 3)) * [1, 5, 0.2]
    y = (rng.random(2000) < 0.1).astype(int)

    def noise(sampler):
        X_res, y_res = sampler.fit_resample(X, y)
        new = np.arange(len(y_res)) >= len(y)
        return X_res[new] - X[sampler.sample_indices_[new]]

    ours = noise(FairnessAwareROSE(n_target="max", shrinkage=1.5, random_state=1))
    theirs = noise(RandomOverSampler(shrinkage=1.5, random_state=2))
    np.testing.assert_allclose(ours.std(axis=0), theirs.std(axis=0), rtol=0.05)


def test_reproducible_given_random_state():
    X, y = _problem()
    runs = [
        FairnessAwareROSE(sensitive=["race", "sex"], random_state=3).fit_resample(X, y)[
            0
        ]
        for _ in range(2)
    ]
    pd.testing.assert_frame_equal(runs[0], runs[1])
    other = FairnessAwareROSE(sensitive=["race", "sex"], random_state=4)
    assert not other.fit_resample(X, y)[0].equals(runs[0])


@pytest.mark.filterwarnings(NO_SENSITIVE)
def test_fit_resample_with_sensitive_keeps_the_container():
    X, y = _problem()
    S = X[["race", "sex"]]
    X_num = X[["age"]]
    rose = FairnessAwareROSE(random_state=0)
    X_res, _y_res, S_res = rose.fit_resample_with_sensitive(
        X_num, y, sensitive_features=S
    )
    assert isinstance(S_res, pd.DataFrame) and len(S_res) == len(X_res)
    pd.testing.assert_frame_equal(
        S_res, S.iloc[rose.sample_indices_].reset_index(drop=True)
    )
    _, _, S_dict = rose.fit_resample_with_sensitive(
        X_num, y, sensitive_features={"race": S["race"].to_numpy()}
    )
    np.testing.assert_array_equal(
        S_dict["race"], S["race"].to_numpy()[rose.sample_indices_]
    )
    X_res, _, S_cols = FairnessAwareROSE(
        sensitive=["race", "sex"], random_state=0
    ).fit_resample_with_sensitive(X, y)
    pd.testing.assert_frame_equal(S_cols, X_res[["race", "sex"]])
    _, _, nothing = rose.fit_resample_with_sensitive(X_num, y)
    assert nothing is None


def _imblearn_pipeline():
    columns = ColumnTransformer(
        [
            ("num", StandardScaler(), ["age", "income"]),
            ("cat", OneHotEncoder(sparse_output=False), ["region"]),
        ],
        remainder="passthrough",
        verbose_feature_names_out=False,
    ).set_output(transform="pandas")
    drop_sensitive = ColumnTransformer(
        [("sensitive", "drop", ["race", "sex"])],
        remainder="passthrough",
        verbose_feature_names_out=False,
    )
    return ImbPipeline(
        [
            ("columns", columns),
            ("rose", FairnessAwareROSE(sensitive=["race", "sex"], random_state=0)),
            ("drop_sensitive", drop_sensitive),
            ("clf", LogisticRegression(max_iter=500)),
        ]
    )


def test_column_mode_in_imblearn_pipeline_inside_grid_search():
    X, y = _problem()
    search = GridSearchCV(
        _imblearn_pipeline(),
        {"rose__n_target": ["mean", "max"], "clf__C": [0.1, 1.0]},
        scoring={
            "auc": "roc_auc",
            "dpd": make_fairness_scorer("dpd", sensitive=["race", "sex"]),
        },
        refit="auc",
        cv=KFold(3, shuffle=True, random_state=0),
    ).fit(X, y)
    assert np.isfinite(search.cv_results_["mean_test_dpd"]).all()
    fitted_rose = search.best_estimator_.named_steps["rose"]
    assert len(set(fitted_rose.subgroup_counts_after_.values())) == 1
    assert search.best_estimator_.predict(X).shape == (len(y),)


def test_metadata_routing_in_imblearn_pipeline():
    X, y = _problem()
    S = X[["race", "sex"]]
    X_num = X[["age", "smoker"]]
    with config_context(enable_metadata_routing=True):
        pipe = ImbPipeline(
            [
                ("rose", FairnessAwareROSE(n_target="max", random_state=0)),
                ("clf", LogisticRegression()),
            ]
        )
        pipe.fit(X_num, y, sensitive_features=S)
    rose = pipe.named_steps["rose"]
    assert len(rose.subgroups_) == len(_counts(S, y))


@pytest.mark.parametrize(
    "params, fit_kwargs, error, message",
    [
        ({"n_target": 0}, {}, ValueError, "'n_target' parameter"),
        ({"shrinkage": -1.0}, {}, ValueError, "'shrinkage' parameter"),
        (
            {
                "shrinkage": {
                    ("a", 0): -2.0,
                    ("a", 1): 1.0,
                    ("b", 0): 1.0,
                    ("b", 1): 1.0,
                }
            },
            {},
            ValueError,
            "must be a number >= 0",
        ),
        (
            {"shrinkage": {("a", 1): 1.0}, "n_target": 100},
            {},
            ValueError,
            "needs a factor for every subgroup",
        ),
        ({"n_target": {("zzz", 0): 3}}, {}, ValueError, "not in the data"),
        ({"covariance": np.eye(3)}, {}, ValueError, r"must be \(1, 1\)"),
        ({"covariance": [[-1.0]]}, {}, ValueError, "positive semi-definite"),
        (
            {"categorical_features": ["nope"]},
            {},
            ValueError,
            "names column 'nope', which is not in X",
        ),
        ({"n_target": lambda counts: 0}, {}, ValueError, "must return an int"),
        (
            {"sensitive": ["g"]},
            {"sensitive_features": ["a"] * 8},
            ValueError,
            "given twice",
        ),
    ],
)
def test_bad_parameters_are_named(params, fit_kwargs, error, message):
    X = pd.DataFrame({"x": np.arange(8.0) ** 2, "g": list("aabbaabb")})
    y = np.array([0, 1, 0, 1, 0, 0, 0, 1])
    kwargs = fit_kwargs or (
        {} if "sensitive" in params else {"sensitive_features": X["g"]}
    )
    with pytest.raises(error, match=message):
        FairnessAwareROSE(**params).fit_resample(
            X[["x"]] if "sensitive" not in params else X, y, **kwargs
        )


@pytest.mark.filterwarnings(NO_SENSITIVE)
def test_bad_data_is_named():
    X, y = _problem(n=40)
    S = X[["race", "sex"]].copy()
    X_num = X[["age"]]
    rose = FairnessAwareROSE()
    S_missing = S.copy()
    S_missing.loc[3, "race"] = None
    with pytest.raises(ValueError, match="'race' has 1 missing"):
        rose.fit_resample(X_num, y, sensitive_features=S_missing)
    with pytest.raises(ValueError, match="has 39 rows but X and y have 40"):
        rose.fit_resample(X_num, y, sensitive_features=S.iloc[:39])
    with pytest.raises(ValueError, match="column 'region' is not numeric"):
        FairnessAwareROSE(categorical_features=[]).fit_resample(X[["age", "region"]], y)
    X_nan = X_num.copy()
    X_nan.loc[2, "age"] = np.nan
    with pytest.raises(ValueError, match="'age' has NaN or infinity"):
        rose.fit_resample(X_nan, y)
    X_cat_nan = X[["age", "region"]].copy()
    X_cat_nan.loc[1, "region"] = None
    with pytest.raises(ValueError, match="'region' has missing values"):
        rose.fit_resample(X_cat_nan, y)
    with pytest.raises(ValueError, match="one class only"):
        rose.fit_resample(X_num, np.zeros(40, int))
    with pytest.raises(ValueError, match="X has 40 rows but y has 39"):
        rose.fit_resample(X_num, y[:39])
    import scipy.sparse as sp

    with pytest.raises(TypeError, match="sparse"):
        rose.fit_resample(sp.csr_matrix(X_num.to_numpy()), y)


def _mixed_case(seed=0, n=400):
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.normal(size=n) * 3 + 1, rng.normal(size=n), rng.integers(0, 2, n)]
    ).astype(float)
    y = (rng.random(n) < 0.3).astype(int)
    S = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1])
    return X, y, S


def test_nan_is_refused_with_a_column_mask_even_under_assume_finite():
    from sklearn import config_context

    X, y, S = _mixed_case()
    X[np.flatnonzero(y == 1)[0], 1] = np.nan
    rose = FairnessAwareROSE(categorical_features=[False, False, True])
    with config_context(assume_finite=True), pytest.raises(ValueError, match="NaN"):
        rose.fit_resample(X, y, sensitive_features=S)
