"""FederatedThresholdOptimizer: group thresholds from summed score histograms.

Oracle: fairlearn's ThresholdOptimizer on the pooled rows. With 10,000 bins
(finer than the gaps between this data's scores) the decision probabilities
agree exactly; with the default 1,000 bins the groups' expected rates agree
within 0.02 and the objective within 0.005 (the bin grid).
"""

import pickle
import warnings

import numpy as np
import pytest
from fairlearn.postprocessing import ThresholdOptimizer
from sklearn.base import BaseEstimator, ClassifierMixin, clone

from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import demographic_parity_difference
from skfedida.postprocessing import FederatedThresholdOptimizer

CONSTRAINTS = [
    "demographic_parity",
    "true_positive_rate_parity",
    "false_positive_rate_parity",
    "equalized_odds",
]


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    groups = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    X = rng.normal(size=(n, 3)) + 0.7 * groups[:, None]
    y = (X[:, 0] + rng.normal(size=n) > 0.9).astype(int)
    clients = rng.integers(0, 4, n)
    return X, y, groups, clients


@pytest.fixture(scope="module")
def fitted():
    X, y, groups, clients = _data()
    return X, y, groups, clients, FairPenaltyLogisticRegression(fairness=0).fit(X, y)


def _fairlearn(model, X, y, groups, constraint, objective, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ThresholdOptimizer(
            estimator=model,
            constraints=constraint,
            objective=f"{objective}_score",
            prefit=True,
            predict_method="predict_proba",
            **kwargs,
        ).fit(X, y, sensitive_features=groups)


@pytest.mark.parametrize("constraint", CONSTRAINTS)
@pytest.mark.parametrize("objective", ["accuracy", "balanced_accuracy"])
def test_decisions_agree_with_fairlearn(fitted, constraint, objective):
    X, y, groups, _, model = fitted
    oracle = _fairlearn(model, X, y, groups, constraint, objective)
    expected = oracle._pmf_predict(X, sensitive_features=groups)[:, 1]
    for n_bins, rate_tolerance, objective_tolerance in (
        (10_000, 1e-9, 1e-9),
        (1_000, 0.02, 0.005),
    ):
        ours = FederatedThresholdOptimizer(
            model,
            constraints=constraint,
            objective=objective,
            prefit=True,
            n_bins=n_bins,
        ).fit(X, y, sensitive_features=groups)
        got = ours._positive_probability(X, groups, None)
        for g in range(3):
            assert got[groups == g].mean() == pytest.approx(
                expected[groups == g].mean(), abs=rate_tolerance
            )
        accuracy = np.mean(got * y + (1 - got) * (1 - y))
        oracle_accuracy = np.mean(expected * y + (1 - expected) * (1 - y))
        assert accuracy == pytest.approx(oracle_accuracy, abs=objective_tolerance)
        if n_bins == 10_000:
            np.testing.assert_allclose(got, expected, atol=1e-9)


@pytest.mark.parametrize("tolerance", [0.02, 0.1])
def test_tolerance_agrees_with_fairlearns_tol(fitted, tolerance):
    X, y, groups, _, model = fitted
    oracle = _fairlearn(
        model, X, y, groups, "demographic_parity", "accuracy", tol=tolerance
    )
    expected = oracle._pmf_predict(X, sensitive_features=groups)[:, 1]
    ours = FederatedThresholdOptimizer(
        model, tolerance=tolerance, prefit=True, n_bins=10_000
    ).fit(X, y, sensitive_features=groups)
    got = ours._positive_probability(X, groups, None)
    rates = [got[groups == g].mean() for g in range(3)]
    assert max(rates) - min(rates) <= tolerance + 1e-9
    for g, rate in enumerate(rates):
        assert rate == pytest.approx(expected[groups == g].mean(), abs=0.005)


def test_summed_client_histograms_are_the_pooled_histogram(fitted):
    X, y, groups, clients, model = fitted
    federated = FederatedThresholdOptimizer(model, prefit=True).fit(
        X, y, clients=clients, sensitive_features=groups
    )
    pooled = FederatedThresholdOptimizer(model, prefit=True).fit(
        X, y, sensitive_features=groups
    )
    assert federated.client_histograms_.shape == (4, 3, 2, 1000)
    np.testing.assert_array_equal(federated.histograms_, pooled.histograms_)
    for key, value in pooled.rules_.items():
        np.testing.assert_array_equal(federated.rules_[key], value)


def test_per_client_thresholds_are_each_clients_own(fitted):
    X, y, groups, clients, model = fitted
    post = FederatedThresholdOptimizer(model, prefit=True, per_client=True).fit(
        X, y, clients=clients, sensitive_features=groups
    )
    assert post.rules_["thresholds"].shape == (4, 3, 2)
    for k in range(4):
        rows = clients == k
        alone = FederatedThresholdOptimizer(model, prefit=True).fit(
            X[rows], y[rows], sensitive_features=groups[rows]
        )
        np.testing.assert_array_equal(
            post.rules_["thresholds"][k], alone.rules_["thresholds"]
        )
        got = post._positive_probability(X[rows], groups[rows], clients[rows])
        np.testing.assert_array_equal(
            got, alone._positive_probability(X[rows], groups[rows], None)
        )
    with pytest.raises(ValueError, match="pass clients"):
        post.predict(X, sensitive_features=groups)
    with pytest.raises(ValueError, match="not seen in fit"):
        post.predict(X, sensitive_features=groups, clients=clients + 10)


def test_demographic_parity_decisions_and_a_matched_selection_rate(fitted):
    X, y, groups, _, model = fitted
    post = FederatedThresholdOptimizer(model, prefit=True, random_state=0).fit(
        X, y, sensitive_features=groups
    )
    decisions = post.predict(X, sensitive_features=groups)
    # Randomised decisions: the gap of 4,000 draws is within sampling noise.
    assert demographic_parity_difference(y, decisions, sensitive_features=groups) < 0.05
    np.testing.assert_array_equal(decisions, post.predict(X, sensitive_features=groups))
    matched = FederatedThresholdOptimizer(
        model, prefit=True, selection_rate=y.mean()
    ).fit(X, y, sensitive_features=groups)
    probability = matched._positive_probability(X, groups, None)
    assert probability.mean() == pytest.approx(y.mean(), abs=2e-3)
    rates = [probability[groups == g].mean() for g in range(3)]
    assert max(rates) - min(rates) < 1e-9


@pytest.mark.parametrize("constraint", ["equalized_odds", "demographic_parity"])
def test_predicts_random_state_draws_as_fairlearns_does(fitted, constraint):
    # Stated behaviour: predict(..., random_state=r) draws the randomised
    # decisions from r, overriding the estimator's own random_state, as
    # fairlearn's ThresholdOptimizer.predict(..., random_state=r) does: with
    # bins finer than the scores' gaps, the decisions are fairlearn's row
    # for row, for every r (an int or a RandomState).
    X, y, groups, _, model = fitted
    oracle = _fairlearn(model, X, y, groups, constraint, "accuracy")
    ours = FederatedThresholdOptimizer(
        model, constraints=constraint, prefit=True, n_bins=10_000, random_state=0
    ).fit(X, y, sensitive_features=groups)
    decisions = {}
    for seed in (1, 2):
        expected = oracle.predict(X, sensitive_features=groups, random_state=seed)
        for random_state in (seed, np.random.RandomState(seed)):
            got = ours.predict(X, sensitive_features=groups, random_state=random_state)
            np.testing.assert_array_equal(got, expected)
        decisions[seed] = got
    # The rules are randomised: other draws, other decisions.
    assert np.any(decisions[1] != decisions[2])


def test_fits_the_federation_first_unless_prefit():
    X, y, groups, clients = _data(n=1200)
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0), n_rounds=2, random_state=0
    )
    post = FederatedThresholdOptimizer(federation, random_state=0).fit(
        X, y, clients=clients, sensitive_features=groups
    )
    assert post.estimator_ is not federation and hasattr(post.estimator_, "history_")
    assert not hasattr(federation, "history_")
    assert not hasattr(post, "predict_proba")
    # Clone, pickle and evaluate_clients work on it.
    assert clone(post).get_params()["estimator"] is not federation
    again = pickle.loads(pickle.dumps(post))
    np.testing.assert_array_equal(
        again.predict(X, sensitive_features=groups),
        post.predict(X, sensitive_features=groups),
    )
    report = evaluate_clients(
        post, X, y, clients=clients, sensitive_features=groups, n_bootstrap=0
    )
    assert report.summary.loc["dpd", "mean"] < 0.15
    assert report.summary.loc["roc_auc", "mean"] > 0.7
    with pytest.raises(ValueError, match="threshold= does not apply"):
        evaluate_clients(
            post,
            X,
            y,
            clients=clients,
            sensitive_features=groups,
            threshold="prevalence",
        )


def test_bad_input_is_named(fitted):
    X, y, groups, _, model = fitted
    post = FederatedThresholdOptimizer(model, prefit=True)
    with pytest.raises(ValueError, match="pass sensitive_features to fit"):
        post.fit(X, y)
    post.fit(X, y, sensitive_features=groups)
    with pytest.raises(ValueError, match="pass sensitive_features to predict"):
        post.predict(X)
    with pytest.raises(ValueError, match="was not seen in fit"):
        post.predict(X, sensitive_features=np.where(groups == 2, 7, groups))
    with pytest.raises(ValueError, match="tolerance=0"):
        FederatedThresholdOptimizer(
            model, constraints="equalized_odds", tolerance=0.1, prefit=True
        ).fit(X, y, sensitive_features=groups)
    with pytest.raises(ValueError, match="cannot be combined"):
        FederatedThresholdOptimizer(
            model, tolerance=0.1, selection_rate=0.3, prefit=True
        ).fit(X, y, sensitive_features=groups)
    only_negative = groups.copy()
    only_negative[(groups == 2) & (y == 1)] = 0
    with pytest.raises(ValueError, match=r"group \(2,\) has no positive rows"):
        FederatedThresholdOptimizer(
            model, constraints="true_positive_rate_parity", prefit=True
        ).fit(X, y, sensitive_features=only_negative)
    # Under demographic parity too, as fairlearn: a group of one label (a
    # group of one row) gets no thresholds read off its few scores.
    with pytest.raises(ValueError, match=r"group \(2,\) has no positive rows"):
        FederatedThresholdOptimizer(model, prefit=True).fit(
            X, y, sensitive_features=only_negative
        )
    one_row = groups.copy()
    one_row[groups == 2] = 0
    one_row[np.flatnonzero(y == 1)[0]] = 2
    with pytest.raises(
        ValueError, match=r"group \(2,\) has no negative rows \(1 rows in all\)"
    ):
        FederatedThresholdOptimizer(model, prefit=True).fit(
            X, y, sensitive_features=one_row
        )
    with pytest.raises(ValueError, match="Degenerate labels"):
        ThresholdOptimizer(
            estimator=model, prefit=True, predict_method="predict_proba"
        ).fit(X, y, sensitive_features=one_row)
    with pytest.raises(ValueError, match="must be a float in the range"):
        FederatedThresholdOptimizer(model, tolerance=2.0, prefit=True).fit(
            X, y, sensitive_features=groups
        )


# -- found by a review of the change ------------------------------------------


@pytest.mark.parametrize("constraint", ["equalized_odds", "true_positive_rate_parity"])
def test_a_client_without_a_group_or_a_label_of_it_takes_the_federations_rule(
    fitted, constraint
):
    X, y, groups, clients, model = fitted
    keep = ~((clients == 3) & (groups == 2))  # client 3 has no row of group 2
    keep &= ~((clients == 2) & (groups == 1) & (y == 1))  # nor positives here
    post = FederatedThresholdOptimizer(
        model, constraints=constraint, prefit=True, per_client=True
    ).fit(X[keep], y[keep], clients=clients[keep], sensitive_features=groups[keep])
    federation = FederatedThresholdOptimizer(
        model, constraints=constraint, prefit=True
    ).fit(X[keep], y[keep], clients=clients[keep], sensitive_features=groups[keep])
    for client, group in ((3, 2), (2, 1)):
        for key, value in federation.rules_.items():
            np.testing.assert_array_equal(post.rules_[key][client, group], value[group])


def test_sensitive_columns_in_another_order_are_read_by_name(fitted):
    import pandas as pd

    X, y, groups, _, model = fitted
    S = pd.DataFrame({"sex": groups % 2, "race": groups // 2})
    post = FederatedThresholdOptimizer(model, prefit=True, random_state=0).fit(
        X, y, sensitive_features=S
    )
    np.testing.assert_array_equal(
        post.predict(X, sensitive_features=S[["race", "sex"]]),
        post.predict(X, sensitive_features=S),
    )
    with pytest.raises(ValueError, match="attributes"):
        post.predict(X, sensitive_features=S.rename(columns={"sex": "age"}))


# -- guards of issue 32: behaviours a mutation run found untested --------------


class _ExactScores(ClassifierMixin, BaseEstimator):
    """A "model" whose probability of the positive class is X's first column."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X):
        score = np.asarray(X, dtype=float)[:, 0]
        return np.column_stack([1.0 - score, score])


def _collinear_groups():
    """Two groups of 8 rows whose trade-off curves have collinear hull points.

    Group 0's three highest scores are its positives: its accuracy peaks at a
    selection rate of 3/8. Group 1's labels by decreasing score are 1, 0, 1,
    0, 1, 0, 0, 0: its accuracy is 6/8 at the selection rates 1/8, 3/8 and
    5/8, three collinear points of its hull. At the common rate 3/8 the hull
    is the segment from 1/8 to 5/8, which fairlearn realises by mixing the
    rules at its ends (each of group 1's 2nd to 5th rows selected with
    probability 1/2), not by the rule at the middle point.
    """
    scores = np.array([0.95, 0.85, 0.75, 0.65, 0.55, 0.45, 0.35, 0.25])
    X = np.r_[scores, scores - 0.02][:, None]
    y = np.r_[[1, 1, 1, 0, 0, 0, 0, 0], [1, 0, 1, 0, 1, 0, 0, 0]]
    groups = np.repeat([0, 1], 8)
    return X, y, groups


@pytest.mark.parametrize(
    "constraint, objective",
    [
        ("demographic_parity", "accuracy"),
        ("equalized_odds", "balanced_accuracy"),
        ("true_positive_rate_parity", "accuracy"),
        ("false_positive_rate_parity", "balanced_accuracy"),
    ],
)
def test_collinear_hull_points_are_mixed_as_fairlearn_does(constraint, objective):
    """The hull's vertices leave out collinear points, as fairlearn's do.

    Every decision probability, row by row, is fairlearn's: a middle point on
    a segment of the hull kept as a vertex gives a deterministic rule where
    fairlearn randomises between the segment's ends (the same expected rates,
    other decisions).
    """
    X, y, groups = _collinear_groups()
    model = _ExactScores().fit(X, y)
    oracle = _fairlearn(model, X, y, groups, constraint, objective)
    expected = oracle._pmf_predict(X, sensitive_features=groups)[:, 1]
    ours = FederatedThresholdOptimizer(
        model, constraints=constraint, objective=objective, prefit=True
    ).fit(X, y, sensitive_features=groups)
    got = ours._positive_probability(X, groups, None)
    np.testing.assert_allclose(got, expected, atol=1e-9)
    if constraint == "demographic_parity":
        np.testing.assert_allclose(got[9:13], 0.5)


def test_tolerance_is_used_in_full_and_below_one_grid_step(fitted):
    """A tolerance t lets the constrained rates differ by up to t, no less.

    At t = 0.1 (a whole number of grid steps) the rates differ by exactly 0.1
    and the expected accuracy is fairlearn's with ``tol=0.1``; a tolerance
    below one step of the grid (1 / grid_size) allows no difference on the
    grid, so its rules are those of exact parity.
    """
    X, y, groups, _, model = fitted
    oracle = _fairlearn(model, X, y, groups, "demographic_parity", "accuracy", tol=0.1)
    expected = oracle._pmf_predict(X, sensitive_features=groups)[:, 1]
    ours = FederatedThresholdOptimizer(
        model, tolerance=0.1, prefit=True, n_bins=10_000
    ).fit(X, y, sensitive_features=groups)
    got = ours._positive_probability(X, groups, None)
    assert np.ptp(ours.constrained_rates_) == pytest.approx(0.1, abs=1e-9)
    accuracy = np.mean(got * y + (1 - got) * (1 - y))
    assert accuracy == pytest.approx(np.mean(expected * y + (1 - expected) * (1 - y)))
    assert ours.objective_value_ == pytest.approx(accuracy)

    exact = FederatedThresholdOptimizer(model, prefit=True).fit(
        X, y, sensitive_features=groups
    )
    below_a_step = FederatedThresholdOptimizer(
        model, tolerance=0.0005, prefit=True
    ).fit(X, y, sensitive_features=groups)
    for key, value in exact.rules_.items():
        np.testing.assert_array_equal(below_a_step.rules_[key], value)
    assert below_a_step.objective_value_ == pytest.approx(exact.objective_value_)


def test_balanced_accuracy_of_a_group_with_one_label_is_undefined(fitted):
    """Balanced accuracy needs a group's TPR and FPR, so both of its labels.

    With balanced accuracy (as under every constraint and objective, as
    fairlearn does), a group without positives is an error naming it; per
    client, a client whose rows of a group have one label takes the
    federation's rule for it.
    """
    X, y, groups, clients, model = fitted
    only_negative = groups.copy()
    only_negative[(groups == 2) & (y == 1)] = 0
    with pytest.raises(ValueError, match=r"group \(2,\) has no positive rows"):
        FederatedThresholdOptimizer(
            model, objective="balanced_accuracy", prefit=True
        ).fit(X, y, sensitive_features=only_negative)

    keep = ~((clients == 2) & (groups == 1) & (y == 1))
    options = dict(objective="balanced_accuracy", prefit=True)
    data = (X[keep], y[keep])
    fit = dict(clients=clients[keep], sensitive_features=groups[keep])
    post = FederatedThresholdOptimizer(model, per_client=True, **options).fit(
        *data, **fit
    )
    federation = FederatedThresholdOptimizer(model, **options).fit(*data, **fit)
    for key, value in federation.rules_.items():
        np.testing.assert_array_equal(post.rules_[key][2, 1], value[1])
    assert np.isnan(post.constrained_rates_[2, 1])
    assert np.all(np.isfinite(post.objective_value_))


@pytest.mark.parametrize(
    "constraint",
    ["true_positive_rate_parity", "false_positive_rate_parity", "equalized_odds"],
)
def test_a_matched_selection_rate_is_the_pooled_share_of_rows_selected(
    fitted, constraint
):
    """selection_rate=r selects r of all rows: the groups' selection rates,
    which differ under TPR or FPR parity, weighted by their sizes (groups of
    50, 30 and 20% of the rows here), not averaged alike."""
    X, y, groups, _, model = fitted
    post = FederatedThresholdOptimizer(
        model, constraints=constraint, prefit=True, selection_rate=0.4
    ).fit(X, y, sensitive_features=groups)
    probability = post._positive_probability(X, groups, None)
    assert probability.mean() == pytest.approx(0.4, abs=2e-3)
    rates = [probability[groups == g].mean() for g in range(3)]
    assert np.ptp(rates) > 0.1  # far from demographic parity


def test_counts_that_move_rows_between_groups_are_refused_in_process(
    fitted, monkeypatch
):
    """A client's counts must put as many rows in each group as it declared:
    counts moved from one group to another (the same total, every bin whole)
    fail the gate in-process as on Flower, naming the client."""
    from skfedida.postprocessing import _threshold_optimizer

    X, y, groups, clients, model = fitted
    real = _threshold_optimizer.client_histogram
    calls = []

    def moved_for_the_last_client(*args):
        calls.append(None)
        counts = real(*args)
        if len(calls) == 4:  # client 3, the last one asked
            j = int(np.argmax(counts[0, 0]))
            counts[0, 0, j] -= 1
            counts[1, 0, j] += 1
        return counts

    monkeypatch.setattr(
        _threshold_optimizer, "client_histogram", moved_for_the_last_client
    )
    with pytest.raises(RuntimeError, match=r"Client 3 .*declared"):
        FederatedThresholdOptimizer(model, prefit=True).fit(
            X, y, clients=clients, sensitive_features=groups
        )


def test_predict_scores_the_positive_class_as_fairlearn_does(fitted):
    # Decisions as scores: 1 where the model predicts classes_[1].
    X, y, groups, _, model = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = ThresholdOptimizer(
            estimator=model,
            constraints="demographic_parity",
            prefit=True,
            predict_method="predict",
        ).fit(X, y, sensitive_features=groups)
    expected = oracle._pmf_predict(X, sensitive_features=groups)[:, 1]
    ours = FederatedThresholdOptimizer(
        model,
        constraints="demographic_parity",
        prefit=True,
        predict_method="predict",
        n_bins=10_000,
    ).fit(X, y, sensitive_features=groups)
    got = ours._positive_probability(X, groups, None)
    for g in range(3):
        assert got[groups == g].mean() == pytest.approx(
            expected[groups == g].mean(), abs=1e-9
        )


def test_scores_the_grid_cannot_rank_are_warned_of():
    # A decision_function of tiny spread: its sigmoid puts every row in one
    # bin, so the rules select nobody where fairlearn's exact scores select
    # 20%. The warning names the bin and what to do.
    from sklearn.datasets import make_classification
    from sklearn.svm import LinearSVC

    from skfedida.exceptions import OperatingPointWarning

    X, y = make_classification(600, random_state=0, weights=[0.75])
    groups = (X[:, 0] > 0).astype(int)
    tiny = FederatedThresholdOptimizer(
        LinearSVC(C=1e-3), predict_method="decision_function"
    )
    with pytest.warns(OperatingPointWarning, match=r"100% of the pairs.*\[0\.\d+, "):
        tiny.fit(X * 1e-4, y, sensitive_features=groups)
    with warnings.catch_warnings():
        warnings.simplefilter("error", OperatingPointWarning)
        # The same model on features of unit scale; and 0/1 scores, which
        # are ties by design.
        FederatedThresholdOptimizer(
            LinearSVC(), predict_method="decision_function"
        ).fit(X, y, sensitive_features=groups)
        # A model that predicts the negative class for (nearly) every row.
        FederatedThresholdOptimizer(LinearSVC(C=1e-3), predict_method="predict").fit(
            X * 1e-4, y, sensitive_features=groups
        )
