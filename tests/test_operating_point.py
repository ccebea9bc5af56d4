"""Fairness at the operating point: thresholds, calibration, selection, warnings."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.optimize import check_grad
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.metrics import accuracy_score, brier_score_loss

from skfedida.datasets import make_federated_classification
from skfedida.exceptions import (
    DegenerateModelWarning,
    OperatingPointWarning,
    warn_if_degenerate,
)
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.federated._client import _prior_weights
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import (
    demographic_parity_difference,
    false_positive_rate_difference,
    federated_threshold,
    make_fairness_scorer,
    make_tradeoff_scorer,
    score_histogram,
    selection_rate,
    threshold_at_rate,
)
from skfedida.model_selection import fairest_within, lambda_range, make_fedida
from skfedida.over_sampling import FairnessAwareROSE
from skfedida.penalty import group_penalty, standardized_group_penalty


@pytest.fixture(scope="module")
def data():
    data = make_federated_classification(3000, n_clients=3, random_state=0)
    # One 2-D array of the attributes, so that tests can slice rows of it.
    data.sensitive = np.column_stack(list(data.sensitive.values()))
    return data


# -- thresholds from aggregated histograms ---------------------------------


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_clients=st.integers(1, 5),
    rate=st.floats(0.0, 1.0),
    n_bins=st.sampled_from([10, 100, 1000]),
)
# A rate just below 1: every row may be selected (the bound once refused it).
@example(seed=5, n_clients=1, rate=0.9999999999999999, n_bins=100)
def test_threshold_from_summed_histograms_is_the_pooled_quantile_within_a_bin(
    seed, n_clients, rate, n_bins
):
    rng = np.random.default_rng(seed)
    clients = [
        rng.beta(rng.uniform(0.3, 5), rng.uniform(0.3, 5), size=rng.integers(1, 400))
        for _ in range(n_clients)
    ]
    pooled = np.sort(np.concatenate(clients))[::-1]
    t = threshold_at_rate([score_histogram(s, n_bins=n_bins) for s in clients], rate)
    # Any threshold in [k+1-th largest, k-th largest) selects k = rate * n rows.
    k = rate * pooled.size
    upper = pooled[int(np.floor(k)) - 1] if k >= 1 else 1.0
    # Selecting ceil(k) rows is as right as floor(k): with k just below n
    # (a rate of 1 - 1e-16) every row may be selected, down to threshold 0.
    lower = pooled[int(np.ceil(k))] if np.ceil(k) < pooled.size else 0.0
    width = 1.0 / n_bins
    assert lower - width - 1e-12 <= t <= upper + width + 1e-12


def test_histograms_add_up_and_bad_input_is_named():
    a, b = np.array([0.0, 0.5, 1.0]), np.array([0.25, 0.999])
    np.testing.assert_array_equal(
        score_histogram(np.r_[a, b], n_bins=8),
        score_histogram(a, n_bins=8) + score_histogram(b, n_bins=8),
    )
    with pytest.raises(ValueError, match="probabilities"):
        score_histogram([0.2, 1.5])
    with pytest.raises(ValueError, match="probabilities"):
        score_histogram([0.2, np.nan])
    with pytest.raises(ValueError, match="n_bins"):
        score_histogram([0.2], n_bins=0)
    with pytest.raises(ValueError, match="rate"):
        threshold_at_rate(score_histogram(a), 1.5)
    with pytest.raises(ValueError, match="no rows"):
        threshold_at_rate(np.zeros(10), 0.5)


def test_score_histogram_counts_each_row_with_its_weight():
    """A row of weight w counts as w rows: the histogram of integer-weighted
    scores is that of the scores repeated w times (and so is the threshold
    read off it)."""
    np.testing.assert_array_equal(
        score_histogram([0.1, 0.9], n_bins=2, sample_weight=[3, 1]), [3.0, 1.0]
    )
    rng = np.random.default_rng(0)
    scores = rng.uniform(size=200)
    weights = rng.integers(0, 5, size=200)
    repeated = np.repeat(scores, weights)
    weighted = score_histogram(scores, n_bins=50, sample_weight=weights)
    np.testing.assert_array_equal(weighted, score_histogram(repeated, n_bins=50))
    assert threshold_at_rate(weighted, 0.3) == pytest.approx(
        threshold_at_rate(score_histogram(repeated, n_bins=50), 0.3)
    )


def test_selection_rate():
    assert (
        selection_rate(["a", "b", "a", "b"], ["a", "b", "b", "b"], pos_label="b")
        == 0.75
    )
    assert selection_rate([0, 1], [1, 0], sample_weight=[3, 1]) == 0.75
    with pytest.raises(ValueError, match="same length"):
        selection_rate([0, 1], [1])


# -- evaluate_clients at an operating point --------------------------------


def test_evaluate_clients_at_the_prevalence_matches_the_training_share(data):
    X, y, clients, S = data.data, data.target, data.clients, data.sensitive
    fed = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), n_rounds=2, random_state=0
    ).fit(X, y, clients=clients, sensitive_features=S)
    assert fed.class_prior_[-1] == pytest.approx(y.mean())
    report = evaluate_clients(
        fed,
        X,
        y,
        clients=clients,
        sensitive_features=S,
        threshold="prevalence",
        n_bootstrap=0,
    )
    assert report.target_rate == fed.class_prior_[-1]
    proba = fed.predict_proba(X)[:, 1]
    decisions = (proba > report.threshold).astype(int)
    # The federation selects its training prevalence (to a bin's worth).
    assert abs(decisions.mean() - y.mean()) < 0.01
    rows = clients == 1
    expected = {
        "selection_rate": decisions[rows].mean(),
        "accuracy": accuracy_score(y[rows], decisions[rows]),
        "brier": brier_score_loss(y[rows], proba[rows]),
        "dpd": demographic_parity_difference(
            y[rows], decisions[rows], sensitive_features=S[rows]
        ),
        "soft_dpd": demographic_parity_difference(
            y[rows], proba[rows], sensitive_features=S[rows], soft=True
        ),
    }
    for name, value in expected.items():
        assert report.per_client.loc[1, name] == pytest.approx(value), name
    # A stated prevalence or selection rate moves the cut; 0.5 is predict's.
    lower = evaluate_clients(
        fed,
        X,
        y,
        clients=clients,
        sensitive_features=S,
        prevalence=0.1,
        n_bootstrap=0,
        threshold="prevalence",
    )
    assert lower.threshold > report.threshold
    rate = evaluate_clients(
        fed,
        X,
        y,
        clients=clients,
        sensitive_features=S,
        threshold={"selection_rate": 0.1},
        n_bootstrap=0,
    )
    assert rate.threshold == pytest.approx(lower.threshold)
    half = evaluate_clients(
        fed, X, y, clients=clients, sensitive_features=S, n_bootstrap=0
    )
    assert half.threshold == 0.5 and half.target_rate is None
    assert half.per_client.loc[1, "dpd"] == pytest.approx(
        demographic_parity_difference(
            y[rows], fed.predict(X[rows]), sensitive_features=S[rows]
        )
    )


@pytest.mark.parametrize(
    "threshold", [0.0, 1.0, "median", {"rate": 0.2}, {"selection_rate": 2}, True]
)
def test_evaluate_clients_refuses_a_bad_threshold(data, threshold):
    model = LogisticRegression().fit(data.data, data.target)
    with pytest.raises(ValueError, match="threshold"):
        evaluate_clients(
            model,
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
            threshold=threshold,
            n_bootstrap=0,
        )


def test_evaluate_clients_min_group_size_leaves_small_groups_out(data):
    model = LogisticRegression().fit(data.data, data.target)
    kwargs = dict(
        clients=data.clients,
        sensitive_features=data.sensitive,
        n_bootstrap=0,
        metrics=("dpd",),
    )
    everything = evaluate_clients(model, data.data, data.target, **kwargs)
    nothing = evaluate_clients(
        model, data.data, data.target, min_group_size=10**6, **kwargs
    )
    assert everything.per_client["dpd"].notna().all()
    assert nothing.per_client["dpd"].isna().all()


# -- scorers at an operating point -------------------------------------------


def test_fairness_scorer_at_a_threshold_scores_those_decisions(data):
    X, y, S = data.data, data.target, data.sensitive
    model = LogisticRegression().fit(X, y)
    proba = model.predict_proba(X)[:, 1]
    at = make_fairness_scorer("dfpr", threshold=0.3)
    assert at(model, X, y, sensitive_features=S) == pytest.approx(
        -false_positive_rate_difference(
            y, (proba > 0.3).astype(int), sensitive_features=S
        )
    )
    matched = make_fairness_scorer("dpd", threshold="prevalence")
    t = federated_threshold([proba], y.mean())
    assert matched(model, X, y, sensitive_features=S) == pytest.approx(
        -demographic_parity_difference(y, (proba > t).astype(int), sensitive_features=S)
    )
    assert "threshold='prevalence'" in repr(matched)
    again = pickle.loads(pickle.dumps(matched))
    assert again(model, X, y, sensitive_features=S) == matched(
        model, X, y, sensitive_features=S
    )
    trade = make_tradeoff_scorer("roc_auc", "dpd", threshold="prevalence")
    assert trade(model, X, y, sensitive_features=S) < 1.0
    with pytest.raises(ValueError, match="threshold"):
        make_fairness_scorer("dpd", threshold="median")
    with pytest.raises(ValueError, match="soft"):
        make_fairness_scorer("dpd", threshold=0.5, response_method="predict_proba")


def test_scorer_prevalence_comes_from_the_federation(data):
    X, y, clients, S = data.data, data.target, data.clients, data.sensitive
    fed = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), n_rounds=1, random_state=0
    ).fit(X, y, clients=clients, sensitive_features=S)
    scorer = make_fairness_scorer("dpd", threshold="prevalence")
    # Scored on rows of a different prevalence, it still selects the
    # federation's training prevalence.
    rows = np.flatnonzero(y == 1)[:200].tolist() + np.flatnonzero(y == 0)[:200].tolist()
    proba = fed.predict_proba(X[rows])[:, 1]
    t = federated_threshold([proba], fed.class_prior_[-1])
    expected = -demographic_parity_difference(
        y[rows], (proba > t).astype(int), sensitive_features=S[rows]
    )
    assert scorer(fed, X[rows], y[rows], sensitive_features=S[rows]) == pytest.approx(
        expected
    )


# -- calibrated resampling -----------------------------------------------------


def test_prior_weights_restore_the_label_shares():
    y = np.array([0] * 90 + [1] * 10)
    resampled = np.array([0] * 50 + [1] * 50)
    weight = _prior_weights(y, resampled, 2)
    assert weight.mean() == pytest.approx(1.0)
    assert np.dot(weight, resampled) / weight.sum() == pytest.approx(0.1)


@pytest.mark.parametrize(
    "estimator, resample",
    [
        (FairPenaltyLogisticRegression(fairness=0.0), "batch"),
        (FairPenaltyLogisticRegression(fairness=0.0), "client"),
        (
            SGDClassifier(
                loss="log_loss",
                alpha=1e-4,
                learning_rate="constant",
                # Plain SGD's own noise moves the mean probability by about
                # 0.017 at eta0=0.05 even without resampling; 0.01 keeps it small.
                eta0=0.01,
            ),
            "batch",
        ),
    ],
    ids=["fast-path", "per-client", "sklearn-generic"],
)
def test_prior_correction_keeps_the_mean_probability_at_the_prevalence(
    estimator, resample
):
    data = make_federated_classification(
        6000, n_clients=3, prevalence=[0.1, 0.2, 0.3, 0.4], random_state=1
    )
    prevalence = data.target.mean()

    def mean_probability(correction):
        fed = FederatedEstimator(
            estimator,
            sampler=FairnessAwareROSE(),
            resample=resample,
            n_rounds=5,
            prior_correction=correction,
            random_state=0,
        ).fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
        return fed.predict_proba(data.data)[:, 1].mean()

    assert abs(mean_probability("weights") - prevalence) < 0.01
    # Without the correction the balanced resampling pulls it toward 1/2.
    assert mean_probability(None) - prevalence > 0.1


# -- the standardized penalty --------------------------------------------------


def test_standardized_penalty_is_scale_invariant_with_the_right_gradient():
    rng = np.random.default_rng(0)
    n = 80
    y = rng.integers(0, 2, n)
    groups = rng.integers(0, 3, n)
    weight = rng.uniform(0.1, 2.0, n)
    scores = rng.normal(size=n) + groups

    def value(s):
        return standardized_group_penalty(s, y, groups, 3, weight)[0]

    def gradient(s):
        return standardized_group_penalty(s, y, groups, 3, weight)[1]

    assert check_grad(value, gradient, scores) < 1e-6 * (
        1 + np.abs(gradient(scores)).max()
    )
    assert value(7.5 * scores) == pytest.approx(value(scores))
    assert value(scores + 3.0) == pytest.approx(value(scores))
    # It is the group penalty over the weighted within-label variance.
    means = np.array(
        [np.average(scores[y == c], weights=weight[y == c]) for c in (0, 1)]
    )
    variance = np.average((scores - means[y]) ** 2, weights=weight)
    assert value(scores) == pytest.approx(
        group_penalty(scores, y, groups, 3, weight)[0] / variance
    )
    flat = np.ones(n)
    assert standardized_group_penalty(flat, y, groups, 3)[0] == 0.0


def test_make_fedida_defaults_to_the_standardized_penalty_with_correction():
    fedida = make_fedida()
    assert fedida.estimator.penalty == "group_standardized"
    assert fedida.estimator.fairness == 0.25
    assert fedida.prior_correction == "weights"
    # Each group keeps its rows and its outcomes are made equal.
    assert fedida.sampler.n_target == "group_mean"


# -- selection never returns a degenerate model -----------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.5, 1.0), st.floats(-1.0, 0.0), st.floats(0.0, 1.0)),
        min_size=1,
        max_size=12,
    ),
    st.floats(0.0, 0.2),
)
def test_fairest_within_never_returns_a_candidate_outside_the_band(rows, tolerance):
    perf, fair, rate = (np.array(column) for column in zip(*rows, strict=True))
    results = {
        "mean_test_auc": perf,
        "mean_test_dpd": fair,
        "mean_test_selection_rate": rate,
    }
    rule = fairest_within("auc", "dpd", tolerance)
    inside = (rate >= 0.01) & (rate <= 0.99)
    if not inside.any():
        with pytest.raises(ValueError, match="degenerate"):
            rule(results)
        return
    chosen = rule(results)
    assert inside[chosen]
    assert perf[chosen] >= perf[inside].max() - tolerance


class _CollapsingLogistic(FairPenaltyLogisticRegression):
    """Predicts no positive at all once fairness exceeds 0.3."""

    def predict(self, X):
        pred = super().predict(X)
        return np.zeros_like(pred) if self.fairness > 0.3 else pred


class _ShrinkingLogistic(FairPenaltyLogisticRegression):
    """Scores shrunk 20-fold (same decisions) once fairness exceeds 0.3."""

    def decision_function(self, X):
        scores = super().decision_function(X)
        return scores / 20 if self.fairness > 0.3 else scores


def _always_perfect(estimator, X, y):
    return 1.0


def _lambda_kwargs(data, lambdas=(0, 0.2, 0.5, 1.0)):
    return dict(
        clients=data.clients,
        sensitive_features=data.sensitive,
        lambdas=lambdas,
        scoring=_always_perfect,
        random_state=0,
    )


@pytest.mark.parametrize(
    "estimator, reason",
    [(_CollapsingLogistic(), "selection rate"), (_ShrinkingLogistic(), "score spread")],
    ids=["no-positive", "shrunk-scores"],
)
def test_lambda_range_stops_at_a_degenerate_model(data, estimator, reason):
    with pytest.warns(DegenerateModelWarning, match="lambda = 0.5"):
        result = lambda_range(estimator, data.data, data.target, **_lambda_kwargs(data))
    assert result.range == (0.0, 0.2)
    assert all(r["stopped_at"] == 0.5 for r in result.per_client)
    assert all(r["stopped_because"] == reason for r in result.per_client)
    # Degenerate at the last lambda of the grid: still not taken as the bound.
    with pytest.warns(DegenerateModelWarning):
        last = lambda_range(
            estimator, data.data, data.target, **_lambda_kwargs(data, (0, 0.2, 0.5))
        )
    assert last.range == (0.0, 0.2)


def test_lambda_range_band_can_be_turned_off_and_is_checked(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        unchecked = lambda_range(
            _CollapsingLogistic(),
            data.data,
            data.target,
            band=None,
            **_lambda_kwargs(data),
        )
    assert unchecked.range == (0.0, 1.0)
    assert all(r["stopped_because"] is None for r in unchecked.per_client)
    with pytest.raises(ValueError, match="band"):
        lambda_range(
            _CollapsingLogistic(),
            data.data,
            data.target,
            band=(0.9, 0.1),
            **_lambda_kwargs(data),
        )


# -- warnings users need -----------------------------------------------------------


def test_degenerate_model_warning_fires_where_it_should():
    with pytest.warns(DegenerateModelWarning, match="negative class for 99.5%"):
        warn_if_degenerate(0.005, "Model")
    with pytest.warns(DegenerateModelWarning, match="positive class"):
        warn_if_degenerate(0.999, "Model")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        warn_if_degenerate(0.02, "Model")
        warn_if_degenerate(0.98, "Model")


def test_a_federation_predicting_no_positive_warns_and_a_sound_one_does_not(data):
    X, clients, S = data.data, data.clients, data.sensitive
    rare = (X[:, 0] > np.quantile(X[:, 0], 0.995)).astype(int)
    rare[:3] = 1  # every client keeps both classes
    fed = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), n_rounds=1, random_state=0
    )
    with pytest.warns(DegenerateModelWarning, match="FederatedEstimator"):
        fed.fit(X, rare, clients=clients, sensitive_features=S)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        fed.fit(X, data.target, clients=clients, sensitive_features=S)


def test_a_standardized_penalty_starts_training_from_the_zero_start():
    # Features strongly tied to the groups: any step from the zero start costs
    # fairness x (a large ratio) at once, more than it gains in log-loss. The
    # penalty is 0/0 there, so the first step is judged without it; before
    # that rule training stayed at the constant model (and warned).
    data = make_federated_classification(
        900,
        n_clients=3,
        n_features=5,
        prevalence=[0.4, 0.3, 0.2, 0.1],
        group_shift=1.0,
        random_state=0,
    )
    spread = {}
    for fairness in (0.0, 0.5, 50.0):
        fed = FederatedEstimator(
            FairPenaltyLogisticRegression(
                fairness=fairness, penalty="group_standardized"
            ),
            sampler=FairnessAwareROSE(),
            n_rounds=2,
            random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error", DegenerateModelWarning)
            fed.fit(
                data.data,
                data.target,
                clients=data.clients,
                sensitive_features=data.sensitive,
            )
        assert np.abs(fed.estimator_.coef_).max() > 0.05
        spread[fairness] = fed.predict_proba(data.data)[:, 1].std()
    # The penalty acts once training has started: a larger weight keeps the
    # scores closer together, never at one value.
    assert spread[0.0] > spread[0.5] > spread[50.0] > 0.01
    value, gradient = standardized_group_penalty(
        np.zeros(4), np.array([0, 1, 0, 1]), np.array([0, 0, 1, 1])
    )
    assert value == 0.0 and not gradient.any()


# -- found by a review of the change ------------------------------------------------


def test_selection_rate_resolves_labels_as_the_metrics_do():
    with pytest.raises(ValueError, match="pos_label"):
        selection_rate(["no", "yes", "yes", "no"], ["no", "yes", "yes", "yes"])
    assert selection_rate(["no", "yes"], ["yes", "yes"], pos_label="yes") == 1.0
    with pytest.raises(ValueError, match="pos_label='1'"):
        selection_rate([-1, 1], [1, 1], pos_label="1")


def test_scorer_prevalence_is_that_of_the_positive_label():
    from sklearn.naive_bayes import GaussianNB

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = (X[:, 0] > 1.0).astype(int)  # about 16% positive
    S = rng.integers(0, 2, 400)
    model = GaussianNB().fit(X, y)
    scorer = make_fairness_scorer("dpd", threshold="prevalence", pos_label=0)
    proba = model.predict_proba(X)[:, 0]
    t = federated_threshold([proba], model.class_prior_[0])
    expected = -demographic_parity_difference(
        y, np.where(proba > t, 0, 1), sensitive_features=S, pos_label=0
    )
    assert scorer(model, X, y, sensitive_features=S) == pytest.approx(expected)


def test_fairest_within_band_none_skips_the_check():
    results = {
        "mean_test_auc": np.array([0.8, 0.7]),
        "mean_test_dpd": np.array([-0.3, -0.0]),
        "mean_test_selection_rate": np.array([0.2, 0.0]),
    }
    assert fairest_within("auc", "dpd", 1.0, band=None)(results) == 1
    assert fairest_within("auc", "dpd", 1.0)(results) == 0


def test_tied_scores_at_the_threshold_are_selected_with_the_exact_probability():
    class Constant:
        classes_ = np.array([0, 1])

        def predict_proba(self, X):
            p = np.where(np.arange(len(X)) % 5 == 0, 0.9, 0.3)
            return np.column_stack([1 - p, p])

    n = 500
    y = np.arange(n) % 2
    # The target is met, but by drawing among 80% of the rows: that warns.
    with pytest.warns(OperatingPointWarning, match="80.0% of the rows are tied"):
        report = evaluate_clients(
            Constant(),
            np.zeros((n, 1)),
            y,
            clients=np.zeros(n, int),
            sensitive_features=np.arange(n) % 3,
            threshold="prevalence",
            n_bootstrap=0,
        )
    assert report.target_rate == 0.5
    assert report.achieved_rate == pytest.approx(0.5, abs=1e-12)
    # 100 rows at 0.9 selected, and 150 of the 400 tied at 0.3.
    assert report.tie_probability == pytest.approx(150 / 400)
    assert report.tied_share == pytest.approx(0.8)
    assert report.threshold <= 0.3 < report.operating_point.upper


def test_a_model_that_squashes_its_scores_is_still_judged_at_the_matched_rate():
    data = make_federated_classification(2000, n_clients=2, random_state=0)
    S = np.column_stack(list(data.sensitive.values()))
    squashed = LogisticRegression(C=1e-7).fit(data.data, data.target)
    proba = squashed.predict_proba(data.data)[:, 1]
    assert np.ptp(proba) < 1e-3  # every score within a single bin of 1/1000
    scorer = make_fairness_scorer("dpd", threshold="prevalence")
    value = scorer(squashed, data.data, data.target, sensitive_features=S)
    # Rank the rows and select the prevalence's share: the DPD of those rows.
    k = round(float(data.target.mean()) * len(proba))
    chosen = np.zeros(len(proba), int)
    chosen[np.argsort(-proba, kind="stable")[:k]] = 1
    expected = demographic_parity_difference(data.target, chosen, sensitive_features=S)
    assert -value == pytest.approx(expected, abs=0.01)
    assert -value > 0.05  # not the 0 a selection of nobody would give


def test_a_threshold_scorer_reads_the_right_column_next_to_other_scorers():
    from sklearn import config_context
    from sklearn.model_selection import GridSearchCV

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = np.where(X[:, 0] + rng.normal(size=600) > 0.5, "yes", "no")
    S = rng.integers(0, 3, 600)
    matched_no = make_fairness_scorer("dpd", threshold="prevalence", pos_label="no")
    grid = {"C": [0.1, 1.0]}
    with config_context(enable_metadata_routing=True):
        alone = GridSearchCV(
            LogisticRegression(), grid, scoring={"dpd": matched_no}, refit=False, cv=3
        ).fit(X, y, sensitive_features=S)
        together = GridSearchCV(
            LogisticRegression(),
            grid,
            scoring={"dpd": matched_no, "brier": "neg_brier_score"},
            refit=False,
            cv=3,
        ).fit(X, y, sensitive_features=S)
    np.testing.assert_array_equal(
        alone.cv_results_["mean_test_dpd"], together.cv_results_["mean_test_dpd"]
    )


def test_evaluate_clients_checks_its_inputs(data):
    model = LogisticRegression().fit(data.data, data.target)
    X, y, S, clients = data.data, data.target, data.sensitive, data.clients
    kw = dict(n_bootstrap=0, metrics=("selection_rate",))
    whole = evaluate_clients(model, X, y, clients=None, sensitive_features=S, **kw)
    assert whole.per_client.shape[0] == 1
    assert whole.per_client["selection_rate"].iloc[0] == pytest.approx(
        model.predict(X).mean()
    )
    with pytest.raises(ValueError, match="clients must hold one id per row"):
        evaluate_clients(model, X, y, clients=clients[:10], sensitive_features=S, **kw)
    with pytest.raises(ValueError, match="clients has missing values"):
        evaluate_clients(
            model,
            X,
            y,
            clients=np.where(clients == 0, np.nan, clients),
            sensitive_features=S,
            **kw,
        )
    with pytest.raises(ValueError, match="not the model's classes"):
        evaluate_clients(
            model, X, y.astype(str), clients=clients, sensitive_features=S, **kw
        )
    with pytest.raises(ValueError, match="sensitive_features has 10 rows"):
        evaluate_clients(model, X, y, clients=clients, sensitive_features=S[:10], **kw)
    three = LogisticRegression().fit(X, np.arange(len(y)) % 3)
    y3 = np.arange(len(y)) % 3
    with pytest.raises(ValueError, match="most probable class, so threshold="):
        evaluate_clients(
            three, X, y3, clients=clients, sensitive_features=S, threshold=0.3
        )
    with pytest.raises(ValueError, match="most probable class, so threshold="):
        evaluate_clients(
            three, X, y3, clients=clients, sensitive_features=S, prevalence=0.2
        )
    with pytest.raises(ValueError, match="method='bca' is implemented for two"):
        evaluate_clients(
            three,
            X,
            y3,
            clients=clients,
            sensitive_features=S,
            method="bca",
            n_bootstrap=5,
        )


def test_a_federation_says_once_when_its_penalty_cannot_act(data):
    from skfedida.exceptions import InactivePenaltyWarning

    fed = make_fedida(n_rounds=1, local_epochs=1, random_state=0)
    with pytest.warns(InactivePenaltyWarning, match="no sensitive attributes") as w:
        fed.fit(data.data, data.target, clients=data.clients)
    assert sum(issubclass(r.category, InactivePenaltyWarning) for r in w) == 1
    with pytest.warns(InactivePenaltyWarning, match="single value"):
        fed.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=np.zeros(len(data.target)),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", InactivePenaltyWarning)
        fed.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )


def test_lambda_range_does_not_blame_lambda_for_a_degenerate_baseline():
    # A rare outcome: the unpenalised model already predicts no positive at
    # 0.5, so the selection-rate band is off for it instead of ending its range.
    rare = make_federated_classification(
        3000, n_clients=3, prevalence=0.03, random_state=0
    )
    S = np.column_stack(list(rare.sensitive.values()))

    def constant_score(estimator, X, y):
        return 1.0

    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        result = lambda_range(
            FairPenaltyLogisticRegression(),
            rare.data,
            rare.target,
            clients=rare.clients,
            sensitive_features=S,
            lambdas=(0, 0.1, 0.5),
            scoring=constant_score,
            random_state=0,
        )
    assert result.range == (0.0, 0.5)


def test_tied_scores_go_to_the_side_closest_to_the_target():
    # 100 rows at 0.9, 300 tied at 0.5, 600 at 0.1; a rate of 0.3 selects
    # either 100 or 400 rows: 400 is closer (0.1 away, not 0.2).
    scores = np.r_[np.full(100, 0.9), np.full(300, 0.5), np.full(600, 0.1)]
    clients = [scores[:500], scores[500:]]
    t = federated_threshold(clients, 0.3)
    assert (scores > t).sum() == 400
    t = federated_threshold(clients, 0.2)
    assert (scores > t).sum() == 100


def test_a_weighted_prevalence_threshold_selects_the_weighted_share():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 2))
    y = (X[:, 0] + rng.normal(size=1000) > 0.8).astype(int)
    S = rng.integers(0, 2, 1000)
    weight = np.where(y == 1, 3.0, 1.0)  # positives count three times
    model = LogisticRegression().fit(X, y)
    proba = model.predict_proba(X)[:, 1]
    share = np.average(y, weights=weight)
    t = federated_threshold([proba], share, sample_weights=[weight])
    expected = -demographic_parity_difference(
        y, (proba > t).astype(int), sensitive_features=S, sample_weight=weight
    )
    scorer = make_fairness_scorer("dpd", threshold="prevalence")
    got = scorer(model, X, y, sensitive_features=S, sample_weight=weight)
    assert got == pytest.approx(expected)


def test_the_training_prevalence_is_read_from_a_pipeline_s_last_step():
    from sklearn.naive_bayes import GaussianNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skfedida.metrics._operating_point import training_prevalence

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    y = np.where(rng.random(200) < 0.3, "yes", "no")
    pipeline = make_pipeline(StandardScaler(), GaussianNB()).fit(X, y)
    assert training_prevalence(pipeline, "yes") == pytest.approx(np.mean(y == "yes"))
    assert training_prevalence(pipeline, "no") == pytest.approx(np.mean(y == "no"))
    assert training_prevalence(StandardScaler().fit(X), "yes") is None
