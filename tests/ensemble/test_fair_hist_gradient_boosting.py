"""FairHistGradientBoostingClassifier on one machine (issue 36)."""

import io
import warnings

import joblib
import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from skfedida._groups import encode_groups
from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.exceptions import InactivePenaltyWarning
from skfedida.penalty import group_penalty


@parametrize_with_checks(
    [
        FairHistGradientBoostingClassifier(max_iter=10),
        FairHistGradientBoostingClassifier(
            max_iter=10, constraints="demographic_parity"
        ),
    ]
)
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(
        3000, n_clients=1, n_features=6, random_state=0, group_shift=1.0
    )


def _same_trees(a, b):
    assert len(a._predictors) == len(b._predictors)
    for ours, theirs in zip(a._predictors, b._predictors, strict=True):
        np.testing.assert_array_equal(ours[0].nodes, theirs[0].nodes)


@pytest.mark.parametrize("early_stopping", [False, True])
def test_without_a_penalty_it_is_scikit_learns_model(data, early_stopping):
    params = {"max_iter": 30, "early_stopping": early_stopping, "random_state": 0}
    ours = FairHistGradientBoostingClassifier(**params).fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    theirs = HistGradientBoostingClassifier(**params).fit(data.data, data.target)
    _same_trees(ours, theirs)
    assert ours.n_groups_ == 4


def _penalty_of(model, data):
    groups = encode_groups(data.sensitive, n_samples=len(data.target))
    scores = model.decision_function(data.data)
    return group_penalty(scores, data.target, groups.codes, groups.n_groups)[0]


def test_the_penalty_falls_with_fairness_and_the_model_still_ranks(data):
    from sklearn.metrics import roc_auc_score

    penalties, aurocs = [], []
    for fairness in (0.0, 1.0, 10.0):
        model = FairHistGradientBoostingClassifier(
            fairness=fairness, max_iter=50, early_stopping=False, random_state=0
        ).fit(data.data, data.target, sensitive_features=data.sensitive)
        penalties.append(_penalty_of(model, data))
        aurocs.append(roc_auc_score(data.target, model.predict_proba(data.data)[:, 1]))
    assert penalties[0] > 10 * penalties[1]
    assert penalties[1] > 10 * penalties[2]
    assert min(aurocs) > 0.9


def test_early_stopping_of_the_penalised_fit_scores_the_validation_loss(data):
    model = FairHistGradientBoostingClassifier(
        fairness=1.0,
        max_iter=500,
        early_stopping=True,
        n_iter_no_change=5,
        random_state=0,
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    assert model.n_iter_ < 500
    assert model.validation_score_.shape == (model.n_iter_ + 1,)
    assert model.train_score_.shape == (model.n_iter_ + 1,)
    # Given validation rows are used as they are.
    given = FairHistGradientBoostingClassifier(
        fairness=1.0, max_iter=20, early_stopping=True, random_state=0
    ).fit(
        data.data[:2000],
        data.target[:2000],
        sensitive_features={k: v[:2000] for k, v in data.sensitive.items()},
        X_val=data.data[2000:],
        y_val=data.target[2000:],
    )
    # Its last score is the log-loss of the model on exactly those rows.
    from sklearn.metrics import log_loss

    assert -given.validation_score_[-1] == pytest.approx(
        log_loss(data.target[2000:], given.predict_proba(data.data[2000:])[:, 1]),
        rel=1e-9,
    )


def test_a_penalised_fit_is_reproducible_and_pickles(data):
    def fit():
        return FairHistGradientBoostingClassifier(
            fairness=1.0, max_iter=10, max_features=0.5, random_state=3
        ).fit(data.data, data.target, sensitive_features=data.sensitive)

    first, second = fit(), fit()
    _same_trees(first, second)
    buffer = io.BytesIO()
    joblib.dump(first, buffer)
    buffer.seek(0)
    np.testing.assert_array_equal(
        joblib.load(buffer).predict_proba(data.data), first.predict_proba(data.data)
    )


def test_weights_categories_and_class_weights_reach_the_penalised_fit(data):
    frame = pd.DataFrame(data.data, columns=[f"x{i}" for i in range(6)])
    frame["colour"] = pd.Categorical(
        np.array(["red", "green", "blue"])[np.arange(len(frame)) % 3]
    )
    base = {"fairness": 1.0, "max_iter": 10, "random_state": 0}
    plain = FairHistGradientBoostingClassifier(**base).fit(
        frame, data.target, sensitive_features=data.sensitive
    )
    assert plain.is_categorical_.tolist() == [False] * 6 + [True]
    weight = np.random.default_rng(0).uniform(0.5, 2.0, len(frame))
    weighted = FairHistGradientBoostingClassifier(**base).fit(
        frame, data.target, weight, sensitive_features=data.sensitive
    )
    balanced = FairHistGradientBoostingClassifier(**base, class_weight="balanced").fit(
        frame, data.target, sensitive_features=data.sensitive
    )
    probabilities = [m.predict_proba(frame)[:, 1] for m in (plain, weighted, balanced)]
    assert not np.allclose(probabilities[0], probabilities[1])
    # Balanced classes raise the positive class's probabilities.
    assert probabilities[2].mean() > probabilities[0].mean() + 0.05


@pytest.mark.parametrize(
    "estimator_params",
    [
        {"early_stopping": False},
        {"early_stopping": True, "n_iter_no_change": 3},
        {"early_stopping": False, "l2_regularization": 2.0, "max_depth": 3},
    ],
    ids=["no-early-stopping", "early-stopping", "regularised"],
)
def test_a_vanishing_penalty_gives_scikit_learns_model(data, estimator_params):
    # The whole penalised path (its own fit: seeds, categories moved to the
    # front, binning, the validation split, early stopping, the leaves'
    # Newton step) against scikit-learn's fit, on a frame whose fourth column
    # is categorical (scikit-learn moves it first) and whose third has
    # missing values.
    frame = pd.DataFrame(data.data, columns=[f"x{i}" for i in range(6)])
    frame.insert(
        3,
        "colour",
        pd.Categorical(np.array(["red", "green", "blue"])[np.arange(len(frame)) % 3]),
    )
    frame.loc[::41, "x2"] = np.nan
    params = {"max_iter": 25, "random_state": 5, **estimator_params}
    theirs = HistGradientBoostingClassifier(**params).fit(frame, data.target)
    ours = FairHistGradientBoostingClassifier(fairness=1e-12, **params).fit(
        frame, data.target, sensitive_features=data.sensitive
    )
    assert ours.n_iter_ == theirs.n_iter_
    np.testing.assert_allclose(
        ours.decision_function(frame),
        theirs.decision_function(frame),
        rtol=1e-7,
        atol=1e-9,
    )
    if estimator_params["early_stopping"]:
        np.testing.assert_allclose(
            ours.validation_score_, theirs.validation_score_, rtol=1e-7
        )


@pytest.mark.parametrize(
    "params, match",
    [
        ({"warm_start": True}, "warm_start=True"),
        ({"monotonic_cst": [1, 0, 0, 0, 0, 0]}, "monotonic_cst"),
        ({"monotonic_cst": np.array([0, -1, 0, 0, 0, 0])}, "monotonic_cst"),
        ({"early_stopping": True, "scoring": "accuracy"}, "scoring='loss'"),
        ({"early_stopping": True, "scoring": None}, "scoring='loss'"),
        ({"max_leaf_nodes": None}, "max_leaf_nodes=None"),
    ],
)
def test_what_the_penalised_fit_does_not_do_yet_is_refused(data, params, match):
    model = FairHistGradientBoostingClassifier(fairness=1.0, max_iter=5, **params)
    with pytest.raises(ValueError, match=match):
        model.fit(data.data, data.target, sensitive_features=data.sensitive)


def test_a_penalty_with_more_than_two_classes_is_refused():
    data = make_federated_classification(900, n_clients=1, n_classes=3, random_state=0)
    with pytest.raises(ValueError, match="binary outcome"):
        FairHistGradientBoostingClassifier(fairness=1.0, max_iter=5).fit(
            data.data, data.target, sensitive_features=data.sensitive
        )
    # fairness=0 fits them, as scikit-learn does.
    FairHistGradientBoostingClassifier(max_iter=5).fit(data.data, data.target)


def test_a_penalty_without_groups_says_it_has_no_effect(data):
    with pytest.warns(InactivePenaltyWarning, match="no sensitive attributes"):
        FairHistGradientBoostingClassifier(fairness=1.0, max_iter=5).fit(
            data.data, data.target
        )
    with pytest.warns(InactivePenaltyWarning, match="single value"):
        FairHistGradientBoostingClassifier(fairness=1.0, max_iter=5).fit(
            data.data, data.target, sensitive_features=np.zeros(len(data.target))
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", InactivePenaltyWarning)
        FairHistGradientBoostingClassifier(max_iter=5).fit(data.data, data.target)


def test_constraints_that_constrain_nothing_are_accepted(data):
    for constraints in ([0, 0, 0, 0, 0, 0], {}):
        FairHistGradientBoostingClassifier(
            fairness=1.0, max_iter=3, monotonic_cst=constraints
        ).fit(data.data, data.target, sensitive_features=data.sensitive)


def test_validation_rows_are_checked_as_scikit_learn_checks_them(data):
    model = FairHistGradientBoostingClassifier(fairness=1.0, max_iter=3)
    with pytest.raises(ValueError, match="early_stopping is False"):
        model.set_params(early_stopping=False).fit(
            data.data,
            data.target,
            sensitive_features=data.sensitive,
            X_val=data.data[:10],
            y_val=data.target[:10],
        )
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        model.set_params(early_stopping=True).fit(
            data.data,
            data.target,
            sensitive_features=data.sensitive,
            X_val=data.data[:10],
            y_val=data.target[:9],
        )


def test_a_weighted_penalised_fit_refuses_recursion_partial_dependence(data):
    from sklearn.inspection import partial_dependence

    model = FairHistGradientBoostingClassifier(fairness=1.0, max_iter=3).fit(
        data.data,
        data.target,
        np.ones(len(data.target)),
        sensitive_features=data.sensitive,
    )
    with pytest.raises(NotImplementedError, match="sample weights"):
        partial_dependence(model, data.data, [0], method="recursion")


def test_predict_after_a_failed_fit_reads_raw_rows(data):
    model = FairHistGradientBoostingClassifier(max_iter=3)
    model._in_fit = True  # as a fairness=0 fit that raised midway leaves it
    model.set_params(fairness=1.0).fit(
        data.data, data.target, sensitive_features=data.sensitive
    )
    assert model.predict(data.data).shape == (len(data.target),)


def test_a_verbose_penalised_fit_reports_as_scikit_learn_does(data, capsys):
    FairHistGradientBoostingClassifier(
        fairness=1.0, max_iter=3, early_stopping=True, verbose=2, random_state=0
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    out = capsys.readouterr().out
    assert "Fitting gradient boosted rounds:" in out
    assert "[3/3] 1 tree," in out and "val loss:" in out
    assert "Fit 3 trees in" in out


def test_a_search_over_fairness_routes_each_fold_s_groups(data):
    # With metadata routing, GridSearchCV and cross_validate slice the
    # groups per fold (a DataFrame; a dict is refused naming why) and every
    # candidate's fit is penalised with them; warnings are errors, so an
    # inactive penalty would fail the search.
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV, cross_validate

    from skfedida.metrics import make_fairness_scorer

    groups = pd.DataFrame(data.sensitive)
    with config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("error")
        search = GridSearchCV(
            FairHistGradientBoostingClassifier(max_iter=10, random_state=0),
            {"fairness": [0.0, 1.0]},
            scoring={"auc": "roc_auc", "dpd": make_fairness_scorer("dpd")},
            refit="auc",
            cv=3,
            error_score="raise",
        ).fit(data.data, data.target, sensitive_features=groups)
        scores = cross_validate(
            FairHistGradientBoostingClassifier(
                fairness=1.0, max_iter=10, random_state=0
            ),
            data.data,
            data.target,
            params={"sensitive_features": groups},
            cv=3,
            scoring="roc_auc",
        )["test_score"]
    dpd = search.cv_results_["mean_test_dpd"]
    assert np.isfinite(dpd).all() and dpd[0] != dpd[1]
    assert search.best_estimator_.n_groups_ == 4
    assert np.isfinite(scores).all() and scores.min() > 0.6


def test_a_weighted_penalised_fit_is_the_fit_of_repeated_rows():
    # Whole weights are repeated rows, the penalty's per-row gradient
    # included (with one row a leaf at least, as rows and weights count
    # alike there).
    data = make_federated_classification(
        600, n_clients=2, n_features=4, random_state=2, group_shift=1.0
    )
    X, y = np.round(data.data, 1), data.target
    weight = np.random.default_rng(0).integers(1, 4, 600)
    repeated = np.repeat(np.arange(600), weight)
    params = {
        "fairness": 1.0,
        "max_iter": 10,
        "early_stopping": False,
        "min_samples_leaf": 1,
        "max_leaf_nodes": 8,
        "random_state": 0,
    }
    weighted = FairHistGradientBoostingClassifier(**params).fit(
        X, y, sample_weight=weight.astype(float), sensitive_features=data.sensitive
    )
    rows = FairHistGradientBoostingClassifier(**params).fit(
        X[repeated],
        y[repeated],
        sensitive_features={
            k: np.asarray(v)[repeated] for k, v in data.sensitive.items()
        },
    )
    np.testing.assert_allclose(
        weighted.decision_function(X), rows.decision_function(X), atol=1e-6
    )
