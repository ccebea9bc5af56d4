"""Tests that kill mutants which survived the rest of the suite (issue 22).

Each test derives its expectation independently of the code under test: a
hand-computed value, another library (scipy), or a statistical property
whose false-failure rate is stated.
"""

import itertools
import warnings

import numpy as np
import pytest
from _helpers import make_federation
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.federated._client import _client_seeds, _round_seed
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import (
    false_positive_rate_difference,
    group_report,
    score_histogram,
    threshold_at_rate,
)
from skfedida.model_selection import CoarseToFineSearchCV
from skfedida.over_sampling import FairnessAwareROSE

# -- metrics: which rows a rate rests on -------------------------------------


def test_fpr_min_group_size_counts_the_negatives_of_a_group():
    # Group a: 10 rows, 2 of them negative; group b: 10 rows, 6 negative.
    y_true = np.r_[[0, 0] + [1] * 8, [0] * 6 + [1] * 4]
    y_pred = np.r_[[1, 0] + [1] * 8, [0] * 6 + [1] * 4]
    S = np.repeat(["a", "b"], 10)
    # FPR: a = 1/2 (from 2 negatives), b = 0/6. With min_group_size=3 group a
    # rests on 2 negatives (< 3) and is left out: one group left, difference 0.
    assert false_positive_rate_difference(y_true, y_pred, sensitive_features=S) == 0.5
    assert (
        false_positive_rate_difference(
            y_true, y_pred, sensitive_features=S, min_group_size=3
        )
        == 0.0
    )
    report = group_report(y_true, y_pred, sensitive_features=S, min_group_size=3)
    assert np.isnan(report.loc["a", "false_positive_rate"])
    assert report.loc["a", "left_out"] == "FPR: fewer than 3 rows"


# -- the sampler ------------------------------------------------------------


def _two_subgroups(n_large=200, n_small=20, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(n_large, 2)), rng.normal(3, 1, size=(n_small, 2))])
    y = np.r_[np.zeros(n_large, int), np.ones(n_small, int)]
    return X, y


def test_undersampling_draws_distinct_rows():
    X, y = _two_subgroups()
    rose = FairnessAwareROSE(n_target=100, random_state=0)
    _, y_res = rose.fit_resample(X, y)
    kept_large = rose.sample_indices_[(y_res == 0)]
    assert kept_large.size == 100
    # Without replacement: 100 different rows of the 200 (with replacement,
    # 100 draws from 200 repeat a row with probability 1 - 1e-11).
    assert np.unique(kept_large).size == 100


def test_per_subgroup_shrinkage_applies_to_its_subgroup():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = np.r_[np.zeros(40, int), np.ones(40, int)]
    S = np.tile(np.repeat(["a", "b"], 20), 2)
    shrinkage = {("a", 0): 0.0, ("b", 0): 1.0, ("a", 1): 2.0, ("b", 1): 0.0}
    rose = FairnessAwareROSE(n_target=60, shrinkage=shrinkage, random_state=0)
    X_res, y_res = rose.fit_resample(X, y, sensitive_features=S)
    synthetic = np.arange(len(y_res)) >= rose.n_original_
    seeds = rose.sample_indices_
    noise = np.abs(X_res - X[seeds]).max(axis=1)
    group = S[seeds]
    for (g, label), factor in shrinkage.items():
        rows = synthetic & (group == g) & (y_res == label)
        assert rows.sum() == 40
        if factor == 0:
            assert np.all(noise[rows] == 0)  # a plain bootstrap: exact copies
        else:
            assert np.all(noise[rows] > 0)


@pytest.mark.parametrize("covariance", ["diag", "full"])
def test_noise_scales_linearly_with_shrinkage(covariance):
    X, y = _two_subgroups()

    def noise(shrinkage):
        rose = FairnessAwareROSE(
            n_target=200, shrinkage=shrinkage, covariance=covariance, random_state=0
        )
        X_res, _ = rose.fit_resample(X, y)
        return X_res - X[rose.sample_indices_]

    # Same draws, so the noise of shrinkage 2 is twice that of 1, and 0 none.
    np.testing.assert_allclose(noise(2.0), 2.0 * noise(1.0), rtol=1e-12, atol=1e-15)
    assert not np.any(noise(0.0))
    assert np.any(noise(1.0))


# -- federated seeding ------------------------------------------------------


def test_random_state_changes_client_seeds_and_the_model():
    X, y, clients, S = make_federation(frame=False)
    assert not np.array_equal(_client_seeds(0, 3), _client_seeds(1, 3))
    fits = [
        FederatedEstimator(
            FairPenaltyLogisticRegression(),
            sampler=FairnessAwareROSE(),
            n_rounds=2,
            local_epochs=1,
            random_state=seed,
        ).fit(X, y, clients=clients, sensitive_features=S)
        for seed in (0, 1)
    ]
    assert not np.array_equal(fits[0].client_seeds_, fits[1].client_seeds_)
    assert not np.array_equal(fits[0].estimator_.coef_, fits[1].estimator_.coef_)


class _OrderRecorder(FairPenaltyLogisticRegression):
    """Records the first column (a row id) of every minibatch it trains on."""

    orders = []

    def _train_epoch(self, batch):
        if batch.weight_sum:  # not the zero-weight initialisation
            type(self).orders.append(np.asarray(batch.X)[:, 0].copy())
        return super()._train_epoch(batch)

    def train_minibatches(self, X, y, groups, bounds, *, sample_weight=None, rows=None):
        # The vectorised epochs: many resampled minibatches per call.
        laid_out = np.asarray(X) if rows is None else np.asarray(X)[rows]
        for start, stop in itertools.pairwise(bounds.tolist()):
            type(self).orders.append(laid_out[start:stop, 0].copy())
        return super().train_minibatches(
            X, y, groups, bounds, sample_weight=sample_weight, rows=rows
        )


def test_every_round_draws_fresh_batches():
    assert _round_seed(7, 0) != _round_seed(7, 1)
    X, y, clients, S = make_federation(frame=False)
    rows = clients == 0
    X = np.column_stack([np.arange(len(y)) / len(y), X])[rows]
    _OrderRecorder.orders = []
    FederatedEstimator(
        _OrderRecorder(fairness=0.0),
        n_rounds=2,
        local_epochs=1,
        sampler=FairnessAwareROSE(),
        batch_size=50,
        random_state=0,
    ).fit(X, y[rows], clients=clients[rows], sensitive_features=S[rows])
    # One client, 200 rows, batches of 50: four resampled batches per round.
    assert len(_OrderRecorder.orders) == 8
    first, second = _OrderRecorder.orders[:4], _OrderRecorder.orders[4:]
    assert not any(
        a.shape == b.shape and np.array_equal(a, b)
        for a, b in zip(first, second, strict=True)
    )


# -- the coarse-to-fine search ----------------------------------------------


@pytest.mark.parametrize("n_fine", [1, 3, 4])
def test_fine_grid_is_n_fine_values_strictly_between_the_neighbours(n_fine):
    from test_model_selection import X_DUMMY, Y_DUMMY, KnownOptimum

    search = CoarseToFineSearchCV(
        KnownOptimum(target=0.5), "value", 0.0, 1.0, n_coarse=5, n_fine=n_fine, cv=2
    ).fit(X_DUMMY, Y_DUMMY)
    # Coarse 0, .25, .5, .75, 1; best 0.5; its neighbours 0.25 and 0.75.
    expected = np.linspace(0.25, 0.75, n_fine + 2)[1:-1]
    expected = expected[~np.isclose(expected, 0.5)]
    np.testing.assert_allclose(search.fine_values_, expected)
    assert len(search.cv_results_["params"]) == 5 + expected.size


# -- bootstrap intervals ----------------------------------------------------


class _FixedScores:
    """A 'model' whose positive-class probabilities are given."""

    classes_ = np.array([0, 1])

    def __init__(self, scores):
        self.scores = scores

    def predict_proba(self, X):
        return np.column_stack([1 - self.scores, self.scores])


@pytest.mark.parametrize("confidence", [0.5, 0.95])
def test_bootstrap_intervals_have_the_width_of_their_confidence(confidence):
    # 2,000 rows, 30% of them selected: the bootstrap distribution of the
    # selection rate is close to normal with sd sqrt(p(1-p)/n).
    rng = np.random.default_rng(0)
    n, p = 2000, 0.3
    selected = rng.permutation(np.r_[np.ones(int(p * n)), np.zeros(n - int(p * n))])
    scores = np.where(selected == 1, 0.9, 0.1)
    y = rng.integers(0, 2, n)
    report = evaluate_clients(
        _FixedScores(scores),
        np.zeros((n, 1)),
        y,
        clients=np.zeros(n, int),
        sensitive_features=rng.integers(0, 2, n),
        metrics=("selection_rate",),
        n_bootstrap=2000,
        confidence=confidence,
        random_state=0,
    )
    row = report.per_client.iloc[0]
    expected = 2 * stats.norm.ppf(0.5 + confidence / 2) * np.sqrt(p * (1 - p) / n)
    width = row["selection_rate_high"] - row["selection_rate_low"]
    # The quantiles of 2,000 resamples estimate the width within about 5%
    # (sd); 15% is three of those.
    assert width == pytest.approx(expected, rel=0.15)
    # scipy's percentile bootstrap of the same statistic agrees.
    scipy_ci = stats.bootstrap(
        (selected,),
        np.mean,
        confidence_level=confidence,
        n_resamples=2000,
        method="percentile",
        random_state=1,
    ).confidence_interval
    assert width == pytest.approx(scipy_ci.high - scipy_ci.low, rel=0.15)
    assert row["selection_rate_low"] < p < row["selection_rate_high"]


def test_threshold_at_rate_interpolates_within_its_bin():
    # 10,000 evenly spread scores in 10 bins: the cut of a quarter lies inside
    # bin 7, and interpolation selects 2,500 rows (a bin edge would give 3,000).
    scores = (np.arange(10_000) + 0.5) / 10_000
    t = threshold_at_rate(score_histogram(scores, n_bins=10), 0.25)
    assert t == pytest.approx(0.75)
    assert (scores > t).sum() == 2500


def test_armijo_halves_until_the_decrease_is_sufficient(monkeypatch):
    # On f(w) = (L / 2) ||w||^2 with L = 15 a step of 0.1 lowers f (to f / 4)
    # but by less than half the predicted decrease; 0.05 is the first step
    # with f(w - eta g) <= f(w) - eta ||g||^2 / 2, and lands at w / 4.
    curvature = 15.0
    model = FairPenaltyLogisticRegression(learning_rate=0.1)

    def quadratic(params, batch, with_gradient=True):
        (w,) = params
        value = 0.5 * curvature * float(np.vdot(w, w))
        return value, [curvature * w] if with_gradient else None

    monkeypatch.setattr(model, "_objective", quadratic)
    w = np.array([1.0, -2.0])
    value, gradients = quadratic([w], None)
    model._armijo_step([w], None, value, gradients)
    np.testing.assert_allclose(w, [0.25, -0.5])


# -- the objective, composed by hand ---------------------------------------------------


def test_objective_is_log_loss_plus_weighted_penalty_plus_l2():
    from scipy.special import expit

    from skfedida.penalty import group_penalty

    X, y, _, S = make_federation(frame=False)
    groups = np.unique(S[:, 0] + "|" + S[:, 1], return_inverse=True)[1]
    model = FairPenaltyLogisticRegression(fairness=0.7, alpha=0.01).fit(
        X, y, sensitive_features=S
    )
    scores = X @ model.coef_[0] + model.intercept_[0]
    p = expit(scores)
    log_loss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    penalty, _ = group_penalty(scores, y, groups)
    expected = log_loss + 0.7 * penalty + 0.01 * np.sum(model.coef_**2)
    assert model.objective(X, y, sensitive_features=S) == pytest.approx(
        expected, rel=1e-10
    )


def test_objective_gradient_matches_finite_differences():
    from scipy.optimize import approx_fprime

    from skfedida._models._fair_base import Batch

    X, y, _, S = make_federation(frame=False)
    groups = np.unique(S[:, 0] + "|" + S[:, 1], return_inverse=True)[1]
    model = FairPenaltyLogisticRegression(fairness=2.0, alpha=0.05)
    batch = Batch(X, y.astype(float), groups, groups.max() + 1, np.ones(len(y)))
    rng = np.random.default_rng(0)
    theta = rng.normal(scale=0.3, size=X.shape[1] + 1)

    def unpack(t):
        return [t[:-1].reshape(1, -1), t[-1:].copy()]

    def value(t):
        return model._objective(unpack(t), batch, with_gradient=False)[0]

    _, (coef_gradient, intercept_gradient) = model._objective(unpack(theta), batch)
    analytic = np.r_[coef_gradient.ravel(), intercept_gradient]
    numeric = approx_fprime(theta, value, 1e-6)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-4, atol=1e-6)


# -- the metrics against a plain per-group oracle --------------------------------------


def _oracle_rates(y_true, y_pred, groups, weight, min_group_size, soft, positive):
    """Selection rate and FPR per group by a direct loop, NaN when left out."""
    selection, fpr = [], []
    for g in np.unique(groups):
        rows = groups == g
        w = weight[rows]
        predicted = y_pred[rows] if soft else (y_pred[rows] == positive)
        negative = y_true[rows] != positive
        selection.append(
            np.average(predicted, weights=w)
            if rows.sum() >= min_group_size and w.sum() > 0
            else np.nan
        )
        fpr.append(
            np.average(predicted[negative], weights=w[negative])
            if negative.sum() >= min_group_size and w[negative].sum() > 0
            else np.nan
        )
    return np.array(selection), np.array(fpr)


def _spread(rates):
    rates = rates[~np.isnan(rates)]
    return rates.max() - rates.min() if rates.size else np.nan


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n=st.integers(4, 60),
    min_group_size=st.integers(1, 6),
    soft=st.booleans(),
    labels=st.sampled_from([(0, 1), ("no", "yes"), (-1, 1)]),
    zero_weights=st.booleans(),
)
def test_metrics_equal_a_per_group_loop(
    seed, n, min_group_size, soft, labels, zero_weights
):
    from skfedida.metrics import demographic_parity_difference

    rng = np.random.default_rng(seed)
    negative, positive = labels
    y_true = np.where(rng.random(n) < 0.4, positive, negative)
    if soft:
        y_pred = rng.random(n)
    else:
        y_pred = np.where(rng.random(n) < 0.5, positive, negative)
    groups = rng.choice(["a", "b", "c"], n)
    weight = rng.uniform(0.5, 2.0, n)
    if zero_weights:
        weight[rng.random(n) < 0.3] = 0.0
    if weight.sum() == 0:
        weight[0] = 1.0
    kwargs = dict(
        sensitive_features=groups,
        sample_weight=weight,
        pos_label=None if labels != ("no", "yes") else "yes",
        min_group_size=min_group_size,
        soft=soft,
    )
    selection, fpr = _oracle_rates(
        y_true, y_pred, groups, weight, min_group_size, soft, positive
    )
    with warnings.catch_warnings(action="ignore"):
        dpd = demographic_parity_difference(y_true, y_pred, **kwargs)
        dfpr = false_positive_rate_difference(y_true, y_pred, **kwargs)
    np.testing.assert_allclose(dpd, _spread(selection), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(dfpr, _spread(fpr), rtol=1e-9, atol=1e-12)


def test_score_histogram_bins_by_hand():
    # Bins of 0.25: [0, .25), [.25, .5), [.5, .75), [.75, 1]; 1.0 in the last.
    counts = score_histogram([0.0, 0.1, 0.25, 0.5, 0.74, 0.75, 0.99, 1.0], n_bins=4)
    np.testing.assert_array_equal(counts, [2, 1, 2, 3])
