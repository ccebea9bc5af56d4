"""Fairness scorers in sklearn's model selection, with routing on and off."""

import pickle

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV, KFold, cross_validate
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skfedida.metrics import (
    demographic_parity_difference,
    demographic_parity_ratio,
    make_fairness_scorer,
    make_tradeoff_scorer,
)

RECORDED = []


def recording_dpd(y_true, y_pred, *, sensitive_features, sample_weight=None):
    """DPD that remembers the sensitive features each call received."""
    RECORDED.append(sensitive_features.copy())
    return demographic_parity_difference(
        y_true,
        y_pred,
        sensitive_features=sensitive_features,
        sample_weight=sample_weight,
    )


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    n = 240
    race = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1])
    sex = rng.choice(["F", "M"], size=n)
    x1 = rng.normal(size=n) + (race == "a")
    x2 = rng.normal(size=n)
    site = rng.choice(["s1", "s2"], size=n)
    y = (x1 + 0.5 * x2 + rng.normal(size=n) > 0.7).astype(int)
    # A non-default index shows which rows each scorer call received.
    index = pd.RangeIndex(1000, 1000 + n)
    X = pd.DataFrame({"x1": x1, "x2": x2, "site": site}, index=index)
    S = pd.DataFrame({"race": race, "sex": sex}, index=index)
    return X, pd.Series(y, index=index), S


def _pipeline():
    features = ColumnTransformer(
        [
            ("num", StandardScaler(), ["x1", "x2"]),
            ("cat", OneHotEncoder(), ["site"]),
        ]
    )
    return Pipeline([("features", features), ("clf", LogisticRegression())])


CV = KFold(n_splits=3, shuffle=True, random_state=0)
GRID = {"clf__C": [0.01, 1.0]}


def _manual_fold_dpd(X, y, S):
    """-DPD of every (candidate, fold), computed by hand."""
    expected = np.empty((len(GRID["clf__C"]), CV.get_n_splits()))
    for i, C in enumerate(GRID["clf__C"]):
        for j, (train, test) in enumerate(CV.split(X)):
            model = clone(_pipeline()).set_params(clf__C=C)
            model.fit(X.iloc[train], y.iloc[train])
            expected[i, j] = -demographic_parity_difference(
                y.iloc[test],
                model.predict(X.iloc[test]),
                sensitive_features=S.iloc[test],
            )
    return expected


def test_routing_gives_each_scorer_call_its_test_fold(problem):
    X, y, S = problem
    RECORDED.clear()
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            _pipeline(),
            GRID,
            cv=CV,
            refit="auc",
            scoring={"auc": "roc_auc", "dpd": make_fairness_scorer(recording_dpd)},
        ).fit(X, y, sensitive_features=S)
    folds = [X.index[test] for _, test in CV.split(X)]
    assert len(RECORDED) == len(GRID["clf__C"]) * len(folds)
    for k, received in enumerate(RECORDED):
        # Candidates are evaluated fold by fold, in the order of CV.split.
        expected_rows = folds[k % len(folds)]
        pd.testing.assert_index_equal(received.index, expected_rows)
        pd.testing.assert_frame_equal(received, S.loc[expected_rows])
    assert hasattr(search, "best_estimator_")


def test_routed_scores_equal_hand_computed(problem):
    X, y, S = problem
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            _pipeline(),
            GRID,
            cv=CV,
            refit="auc",
            scoring={"auc": "roc_auc", "dpd": make_fairness_scorer("dpd")},
        ).fit(X, y, sensitive_features=S)
    expected = _manual_fold_dpd(X, y, S)
    for j in range(CV.get_n_splits()):
        np.testing.assert_allclose(
            search.cv_results_[f"split{j}_test_dpd"], expected[:, j]
        )
    assert np.any(expected != 0)


def test_column_mode_with_routing_off(problem):
    X, y, S = problem
    X_with_s = pd.concat([X, S], axis=1)
    search = GridSearchCV(
        _pipeline(),
        GRID,
        cv=CV,
        refit="auc",
        scoring={
            "auc": "roc_auc",
            "dpd": make_fairness_scorer("dpd", sensitive=["race", "sex"]),
        },
    ).fit(X_with_s, y)
    expected = _manual_fold_dpd(X, y, S)
    for j in range(CV.get_n_splits()):
        np.testing.assert_allclose(
            search.cv_results_[f"split{j}_test_dpd"], expected[:, j]
        )


def test_parallel_search_with_routing(problem):
    X, y, S = problem
    scoring = {
        "auc": "roc_auc",
        "dpd": make_fairness_scorer("dpd"),
        "trade": make_tradeoff_scorer("roc_auc", "dpd", weight=0.5),
    }
    results = []
    for n_jobs in (1, 2):
        with config_context(enable_metadata_routing=True):
            search = GridSearchCV(
                _pipeline(), GRID, cv=CV, refit="trade", scoring=scoring, n_jobs=n_jobs
            )
            search.fit(X, y, sensitive_features=S)
        results.append(search.cv_results_["mean_test_trade"])
    np.testing.assert_allclose(results[0], results[1])


def test_cross_validate_with_routing(problem):
    X, y, S = problem
    with config_context(enable_metadata_routing=True):
        scores = cross_validate(
            _pipeline(),
            X,
            y,
            cv=CV,
            params={"sensitive_features": S},
            scoring={"dpr": make_fairness_scorer("dpr")},
        )
    assert np.all((scores["test_dpr"] >= 0) & (scores["test_dpr"] <= 1))


def test_direct_call_and_signs(problem):
    X, y, S = problem
    model = _pipeline().fit(X, y)
    pred = model.predict(X)
    dpd = demographic_parity_difference(y, pred, sensitive_features=S)
    dpr = demographic_parity_ratio(y, pred, sensitive_features=S)
    # Lower is better for differences: negated, like sklearn's neg_* scorers.
    assert make_fairness_scorer("dpd")(model, X, y, sensitive_features=S) == -dpd
    assert (
        make_fairness_scorer("demographic_parity_difference")(
            model, X, y, sensitive_features=S
        )
        == -dpd
    )
    assert make_fairness_scorer("dpr")(model, X, y, sensitive_features=S) == dpr
    assert (
        make_fairness_scorer("dpd", greater_is_better=True)(
            model, X, y, sensitive_features=S
        )
        == dpd
    )
    with config_context(enable_metadata_routing=True):
        assert make_fairness_scorer("dpd")(model, X, y, sensitive_features=S) == -dpd


def test_soft_scorer_uses_probabilities(problem):
    X, y, S = problem
    model = _pipeline().fit(X, y)
    proba = model.predict_proba(X)[:, 1]
    scorer = make_fairness_scorer("dpd", response_method="predict_proba")
    expected = demographic_parity_difference(y, proba, sensitive_features=S, soft=True)
    assert scorer(model, X, y, sensitive_features=S) == pytest.approx(-expected)
    hard = make_fairness_scorer("dpd")(model, X, y, sensitive_features=S)
    assert hard != pytest.approx(-expected)


def test_tradeoff_scorer_formula(problem):
    X, y, S = problem
    model = _pipeline().fit(X, y)
    pred = model.predict(X)
    auc = roc_auc_score(y, model.predict_proba(X)[:, 1])
    dpd = demographic_parity_difference(y, pred, sensitive_features=S)
    dpr = demographic_parity_ratio(y, pred, sensitive_features=S)
    trade = make_tradeoff_scorer("roc_auc", "dpd", weight=2.0)
    assert trade(model, X, y, sensitive_features=S) == pytest.approx(auc - 2 * dpd)
    trade_ratio = make_tradeoff_scorer(weight=0.5, fairness="dpr")
    assert trade_ratio(model, X, y, sensitive_features=S) == pytest.approx(
        auc - 0.5 * (1 - dpr)
    )
    # A ready fairness scorer may be passed, e.g. a soft one.
    soft = make_fairness_scorer("dpd", response_method="predict_proba")
    soft_dpd = demographic_parity_difference(
        y, model.predict_proba(X)[:, 1], sensitive_features=S, soft=True
    )
    assert make_tradeoff_scorer("roc_auc", soft)(
        model, X, y, sensitive_features=S
    ) == pytest.approx(auc - soft_dpd)
    X_with_s = pd.concat([X, S], axis=1)
    columns = make_tradeoff_scorer("roc_auc", "dpd", 2.0, sensitive=["race", "sex"])
    model_cols = _pipeline().fit(X_with_s, y)
    assert columns(model_cols, X_with_s, y) == pytest.approx(auc - 2 * dpd)


def test_tradeoff_scorer_weighs_both_parts_with_sample_weight(problem):
    """With sample_weight, the performance and the disparity are both the
    weighted ones: score = weighted AUROC - weight x weighted DPD."""
    X, y, S = problem
    model = _pipeline().fit(X, y)
    weights = np.random.default_rng(0).uniform(0.1, 3.0, size=len(y))
    auc = roc_auc_score(y, model.predict_proba(X)[:, 1], sample_weight=weights)
    dpd = demographic_parity_difference(
        y, model.predict(X), sensitive_features=S, sample_weight=weights
    )
    trade = make_tradeoff_scorer("roc_auc", "dpd", weight=2.0)
    got = trade(model, X, y, sensitive_features=S, sample_weight=weights)
    assert got == pytest.approx(auc - 2 * dpd)
    assert got != pytest.approx(trade(model, X, y, sensitive_features=S))


def test_a_threshold_scorer_leaves_out_scores_at_the_threshold():
    """threshold=t scores the decisions score > t: rows scoring exactly t are
    not selected (as ``predict`` at t = 0.5 does not select a tie)."""

    class Scores(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            self.classes_ = np.array([0, 1])
            return self

        def predict_proba(self, X):
            score = np.asarray(X, dtype=float)[:, 0]
            return np.column_stack([1.0 - score, score])

    scores = np.array([0.5, 0.5, 0.5, 0.9, 0.2, 0.2, 0.7, 0.3])
    X, y = scores[:, None], np.array([1, 0, 1, 1, 0, 1, 1, 0])
    S = np.repeat(["a", "b"], 4)
    model = Scores().fit(X, y)
    for threshold in (0.5, 0.3):
        scorer = make_fairness_scorer("dpd", threshold=threshold)
        expected = demographic_parity_difference(
            y, (scores > threshold).astype(int), sensitive_features=S
        )
        assert scorer(model, X, y, sensitive_features=S) == pytest.approx(-expected)


def test_string_labels_with_pos_label(problem):
    X, y, S = problem
    y_text = pd.Series(np.where(y == 1, "yes", "no"), index=y.index)
    model = _pipeline().fit(X, y_text)
    pred = model.predict(X)
    with pytest.raises(ValueError, match="pass pos_label"):
        make_fairness_scorer("dpd")(model, X, y_text, sensitive_features=S)
    scorer = make_fairness_scorer("dpd", pos_label="yes")
    assert scorer(model, X, y_text, sensitive_features=S) == pytest.approx(
        -demographic_parity_difference(
            y_text, pred, sensitive_features=S, pos_label="yes"
        )
    )
    soft = make_fairness_scorer("dpd", pos_label="yes", response_method="predict_proba")
    assert soft(model, X, y_text, sensitive_features=S) < 0


def test_missing_or_doubled_sensitive_features(problem):
    X, y, S = problem
    model = _pipeline().fit(X, y)
    with pytest.raises(ValueError, match="needs the sensitive attributes"):
        make_fairness_scorer("dpd")(model, X, y)
    X_with_s = pd.concat([X, S], axis=1)
    scorer = make_fairness_scorer("dpd", sensitive=["race", "sex"])
    with pytest.raises(ValueError, match="given twice"):
        scorer(model, X_with_s, y, sensitive_features=S)
    with pytest.raises(ValueError, match="has 10 rows but X and y have 240"):
        make_fairness_scorer("dpd")(model, X, y, sensitive_features=S.iloc[:10])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(metric="accuracy"), "metric must be one of"),
        (dict(response_method="decision_function"), "response_method must be"),
        (dict(min_group_size=0), "min_group_size"),
    ],
)
def test_bad_scorer_parameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_fairness_scorer(**kwargs)


def test_bad_tradeoff_parameters():
    with pytest.raises(ValueError, match="weight must be"):
        make_tradeoff_scorer(weight=-1)
    with pytest.raises(ValueError, match="performance must be"):
        make_tradeoff_scorer(performance=3)


def test_callable_without_soft_cannot_score_probabilities():
    with pytest.raises(ValueError, match="no 'soft' argument"):
        make_fairness_scorer(recording_dpd, response_method="predict_proba")


def test_default_request_and_repr():
    scorer = make_fairness_scorer("dpd", sensitive=None, pos_label="yes")
    routing = scorer.get_metadata_routing()
    assert routing.score.requests["sensitive_features"] is True
    assert "demographic_parity_difference" in repr(scorer)
    assert "pos_label='yes'" in repr(scorer)
    trade = make_tradeoff_scorer()
    assert trade.get_metadata_routing().score.requests["sensitive_features"] is True
    assert "make_tradeoff_scorer(performance='roc_auc'" in repr(trade)
    restored = pickle.loads(pickle.dumps(trade))
    assert repr(restored) == repr(trade)
