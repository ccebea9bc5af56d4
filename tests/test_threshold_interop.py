"""FederatedThresholdOptimizer with the tools its users already use (issue 35).

Any scikit-learn classifier, pooled as fairlearn's ThresholdOptimizer fits
it; scoring in GridSearchCV and cross_validate with metadata routing; a
clear way out where scikit-learn's string scorers cannot pass the groups.
"""

import warnings

import numpy as np
import pytest
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn import config_context
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import demographic_parity_difference
from skfedida.postprocessing import FederatedThresholdOptimizer


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2])
    shift = (groups == "b") * 0.7 + (groups == "c") * 1.4
    X = rng.normal(size=(n, 3)) + shift[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.9).astype(int)
    clients = rng.integers(0, 3, n)
    return X, y, groups, clients


def test_any_classifier_is_fitted_on_pooled_rows_as_fairlearn_fits_it():
    # LogisticRegression.fit takes no sensitive_features: it used to fail
    # inside with a TypeError. Now it fits on the rows alone, and the
    # thresholds equalise the groups' selection rates as fairlearn's do.
    X, y, groups, _ = _data()
    post = FederatedThresholdOptimizer(LogisticRegression(), random_state=0)
    post.fit(X, y, sensitive_features=groups)
    decisions = post.predict(X, sensitive_features=groups)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = ThresholdOptimizer(
            estimator=LogisticRegression(), predict_method="predict_proba"
        ).fit(X, y, sensitive_features=groups)
    theirs = reference.predict(X, sensitive_features=groups, random_state=0)
    ours_gap = demographic_parity_difference(y, decisions, sensitive_features=groups)
    theirs_gap = demographic_parity_difference(y, theirs, sensitive_features=groups)
    assert ours_gap < 0.03 and theirs_gap < 0.03
    np.testing.assert_allclose(
        accuracy_score(y, decisions), accuracy_score(y, theirs), atol=0.01
    )
    np.testing.assert_array_equal(
        post.estimator_.coef_, LogisticRegression().fit(X, y).coef_
    )


def test_clients_with_a_classifier_that_cannot_take_them_is_refused_with_the_ways_out():
    X, y, groups, clients = _data()
    post = FederatedThresholdOptimizer(LogisticRegression())
    with pytest.raises(TypeError, match="takes no clients") as info:
        post.fit(X, y, clients=clients, sensitive_features=groups)
    for way_out in ("FederatedEstimator", "prefit=True", "leave clients out"):
        assert way_out in str(info.value)


def _federated():
    return FederatedThresholdOptimizer(
        FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.0), n_rounds=2, random_state=0
        ),
        random_state=0,
    )


def test_score_is_the_accuracy_of_the_decisions_and_needs_the_groups():
    X, y, groups, clients = _data()
    post = _federated().fit(X, y, clients=clients, sensitive_features=groups)
    decisions = post.predict(X, sensitive_features=groups)
    assert post.score(X, y, sensitive_features=groups) == accuracy_score(y, decisions)
    weight = np.linspace(0.5, 2.0, y.size)
    assert post.score(X, y, weight, sensitive_features=groups) == pytest.approx(
        accuracy_score(y, decisions, sample_weight=weight)
    )
    with pytest.raises(ValueError, match=r"scoring=None.*error_score='raise'"):
        post.score(X, y)


@pytest.mark.parametrize("constraints", ["demographic_parity", "equalized_odds"])
def test_grid_search_scores_every_candidate_with_routing(constraints):
    # With metadata routing on, GridSearchCV's default scoring calls score()
    # with each test fold's groups: every candidate gets a finite score
    # (it used to be NaN for all, "Scoring failed", and a best among NaNs).
    X, y, groups, clients = _data()
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            _federated(),
            {"constraints": [constraints, "true_positive_rate_parity"]},
            cv=KFold(3, shuffle=True, random_state=0),
            error_score="raise",
        ).fit(X, y, sensitive_features=groups, clients=clients)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and (scores > 0.5).all()
    assert search.best_params_["constraints"] in (
        constraints,
        "true_positive_rate_parity",
    )


def test_cross_validate_routes_the_groups_to_fit_and_score():
    X, y, groups, clients = _data()
    with config_context(enable_metadata_routing=True):
        result = cross_validate(
            _federated(),
            X,
            y,
            cv=KFold(3, shuffle=True, random_state=0),
            params={"sensitive_features": groups, "clients": clients},
            error_score="raise",
        )
    assert np.isfinite(result["test_score"]).all()


@pytest.mark.parametrize(
    "alias, ours",
    [
        ({"objective": "accuracy_score"}, {"objective": "accuracy"}),
        (
            {"objective": "balanced_accuracy_score"},
            {"objective": "balanced_accuracy"},
        ),
        (
            {"constraints": "true_negative_rate_parity"},
            {"constraints": "false_positive_rate_parity"},
        ),
        (
            {"constraints": "false_negative_rate_parity"},
            {"constraints": "true_positive_rate_parity"},
        ),
    ],
    ids=["accuracy_score", "balanced_accuracy_score", "tnr-parity", "fnr-parity"],
)
def test_fairlearns_names_choose_the_same_rules(alias, ours):
    # TNR = 1 - FPR and FNR = 1 - TPR per group: equal TNRs are equal FPRs.
    X, y, groups, _ = _data()
    model = LogisticRegression().fit(X, y)
    fitted = [
        FederatedThresholdOptimizer(model, prefit=True, random_state=0, **params).fit(
            X, y, sensitive_features=groups
        )
        for params in (alias, ours)
    ]
    for key in ("thresholds", "p_first", "p_constant", "constant"):
        np.testing.assert_array_equal(fitted[0].rules_[key], fitted[1].rules_[key])
    decisions = [f.predict(X, sensitive_features=groups) for f in fitted]
    np.testing.assert_array_equal(decisions[0], decisions[1])


class _NoProbabilities(LogisticRegression):
    """A classifier with a decision function and decisions, no probabilities."""

    def __getattribute__(self, name):
        if name == "predict_proba":
            raise AttributeError(name)
        return super().__getattribute__(name)


def test_predict_method_thresholds_the_score_it_names():
    X, y, groups, _ = _data()
    model = LogisticRegression().fit(X, y)

    def fitted(estimator, method):
        return FederatedThresholdOptimizer(
            estimator, prefit=True, predict_method=method, random_state=0
        ).fit(X, y, sensitive_features=groups)

    # The logistic function of the decision function is the probability:
    # the same counts, the same rules.
    by_probability = fitted(model, "predict_proba")
    by_decision = fitted(model, "decision_function")
    np.testing.assert_array_equal(by_probability.histograms_, by_decision.histograms_)
    # Without predict_proba, "auto" takes the decision function; on hard
    # decisions every count sits in the first or the last bin.
    no_proba = _NoProbabilities().fit(X, y)
    assert not hasattr(no_proba, "predict_proba")
    auto = fitted(no_proba, "auto")
    np.testing.assert_array_equal(auto.histograms_, by_decision.histograms_)
    hard = fitted(model, "predict")
    assert hard.histograms_[:, :, 1:-1].sum() == 0
    gap = demographic_parity_difference(
        y, hard.predict(X, sensitive_features=groups), sensitive_features=groups
    )
    assert gap < 0.05


def test_on_flower_the_scores_are_the_federated_models_probabilities():
    from skfedida.postprocessing._threshold_optimizer import server_postprocessor

    for method in ("decision_function", "predict"):
        with pytest.raises(ValueError, match="predict_method"):
            server_postprocessor(
                FederatedThresholdOptimizer(
                    _federated().estimator, predict_method=method
                )
            )
    server_postprocessor(FederatedThresholdOptimizer(_federated().estimator))


@pytest.mark.parametrize("keep", ["model", "prevalence"])
@pytest.mark.parametrize("constraints", ["demographic_parity", "equalized_odds"])
def test_selection_rate_can_keep_the_models_rate_or_the_prevalence(keep, constraints):
    # Issue 35: accuracy under parity picks extreme rates where base rates
    # are extreme; "model" keeps the rate of the model's own decisions at
    # 0.5, "prevalence" the share of positives, read off the counts.
    X, y, groups, clients = _data()
    y = (X[:, 0] + np.random.default_rng(3).normal(size=y.size) > 2.2).astype(int)
    model = LogisticRegression().fit(X, y)
    post = FederatedThresholdOptimizer(
        model,
        prefit=True,
        selection_rate=keep,
        constraints=constraints,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=groups)
    target = (
        float(np.mean(model.predict_proba(X)[:, 1] >= 0.5))
        if keep == "model"
        else float(np.mean(y))
    )
    rate = post._positive_probability(X, groups, None).mean()
    assert abs(rate - target) < 0.01
    # The same as the number given.
    given = FederatedThresholdOptimizer(
        model,
        prefit=True,
        selection_rate=target,
        constraints=constraints,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=groups)
    np.testing.assert_allclose(
        given._positive_probability(X, groups, None).mean(), rate, atol=0.002
    )


def test_per_client_thresholds_keep_each_clients_own_rate():
    X, y, groups, clients = _data()
    model = LogisticRegression().fit(X, y)
    post = FederatedThresholdOptimizer(
        model, prefit=True, selection_rate="model", per_client=True, random_state=0
    ).fit(X, y, clients=clients, sensitive_features=groups)
    chance = post._positive_probability(X, groups, clients)
    decided = model.predict_proba(X)[:, 1] >= 0.5
    for k in np.unique(clients):
        rows = clients == k
        assert abs(chance[rows].mean() - decided[rows].mean()) < 0.015


def test_a_pipeline_of_sklearn_steps_is_fitted_on_the_rows_alone():
    # Pipeline.fit(**params) would pass sensitive_features on to a step that
    # refuses it: only parameters a fit names are given.
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, groups, _ = _data()
    post = FederatedThresholdOptimizer(
        make_pipeline(StandardScaler(), LogisticRegression()), random_state=0
    ).fit(X, y, sensitive_features=groups)
    gap = demographic_parity_difference(
        y, post.predict(X, sensitive_features=groups), sensitive_features=groups
    )
    assert gap < 0.03


def test_a_predict_method_the_model_lacks_is_named_before_fitting():
    from sklearn.svm import LinearSVC

    X, y, groups, _ = _data()
    post = FederatedThresholdOptimizer(LinearSVC(), predict_method="predict_proba")
    with pytest.raises(ValueError, match="predict_method='predict_proba'"):
        post.fit(X, y, sensitive_features=groups)
    assert not hasattr(post, "estimator_")


@pytest.mark.parametrize("n_bins", [11, 101, 1000, 1001])
def test_the_models_rate_reads_half_the_bin_that_half_point_splits(n_bins):
    X, y, groups, _ = _data()
    model = LogisticRegression().fit(X, y)
    post = FederatedThresholdOptimizer(
        model, prefit=True, selection_rate="model", n_bins=n_bins
    ).fit(X, y, sensitive_features=groups)
    exact = np.mean(model.predict_proba(X)[:, 1] >= 0.5)
    # Within half a bin's share of the rows of the exact rate at 0.5.
    middle = post.histograms_[:, :, n_bins // 2].sum() / y.size
    assert abs(post._target_rate(post.histograms_) - exact) <= 0.5 * middle + 1e-12


def test_selection_rate_parity_is_fairlearns_demographic_parity():
    X, y, groups, _ = _data()
    model = LogisticRegression().fit(X, y)
    rules = [
        FederatedThresholdOptimizer(model, prefit=True, constraints=name)
        .fit(X, y, sensitive_features=groups)
        .rules_["thresholds"]
        for name in ("selection_rate_parity", "demographic_parity")
    ]
    np.testing.assert_array_equal(*rules)
