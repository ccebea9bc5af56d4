"""Bootstrap intervals of evaluate_clients: percentile and BCa (issue 20, part 3)."""

import numpy as np
import pytest
from scipy import stats
from sklearn.linear_model import LogisticRegression

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.federated._evaluation import (
    _bca_interval,
    _jackknife,
    _metric_values,
)
from skfedida.linear_model import FairPenaltyLogisticRegression

METRICS = (
    "roc_auc",
    "selection_rate",
    "brier",
    "accuracy",
    "dpd",
    "dpr",
    "dfpr",
    "dppv",
    "dtpr",
    "eod",
    "soft_dpd",
    "soft_dfpr",
)


def _gap(values, groups, axis=-1):
    """max - min of the group means (a disparity), vectorised for scipy."""
    means = [
        np.sum(values * (groups == g), axis=axis) / np.sum(groups == g, axis=axis)
        for g in (0, 1, 2)
    ]
    return np.max(means, axis=0) - np.min(means, axis=0)


@pytest.mark.parametrize("statistic", ["mean", "group gap", "share of 15 binary"])
def test_bca_is_scipys_bca(statistic):
    rng = np.random.default_rng(0)
    x = rng.exponential(size=90)
    groups = np.repeat([0, 1, 2], 30)
    if statistic == "share of 15 binary":
        # Discrete values (a selection rate, an accuracy): many resamples
        # equal the estimate, and the bias correction counts them half
        # below, half above (scipy's percentile of the score).
        x = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0], dtype=float)
        statistic = "mean"
    if statistic == "mean":
        data, function, paired = (x,), np.mean, False
        estimate = x.mean()
        jackknife = np.array([np.delete(x, i).mean() for i in range(x.size)])
    else:
        data, function, paired = (x, groups), _gap, True
        estimate = _gap(x, groups)
        jackknife = np.array(
            [_gap(np.delete(x, i), np.delete(groups, i)) for i in range(x.size)]
        )
    result = stats.bootstrap(
        data,
        function,
        paired=paired,
        method="BCa",
        n_resamples=999,
        rng=np.random.default_rng(1),
    )
    ours = _bca_interval(estimate, result.bootstrap_distribution, jackknife, 0.95)
    np.testing.assert_allclose(ours, result.confidence_interval, rtol=1e-12)


def test_the_jackknife_is_every_leave_one_out_value():
    rng = np.random.default_rng(0)
    n = 160
    y = rng.integers(0, 2, n).astype(float)
    proba = np.round(rng.random(n), 2)  # ties in scores
    pred = (proba > 0.5).astype(float)
    groups = rng.integers(0, 3, n)
    jackknife = _jackknife(METRICS, y, proba, pred, groups, 5)
    for i in range(n):
        weight = np.ones(n)
        weight[i] = 0.0
        brute = _metric_values(METRICS, y, proba, pred, groups, weight, 5)
        for metric in METRICS:
            np.testing.assert_allclose(
                jackknife[metric][i], brute[metric], atol=1e-12, err_msg=metric
            )


def test_bca_corrects_the_upward_bias_of_a_disparity():
    # Groups with the same rate: DPD's resamples sit above its estimate (a
    # max - min is inflated by noise), so the percentile interval starts
    # near the estimate; BCa moves the interval down.
    data = make_federated_classification(
        3000, n_clients=1, group_shift=0.0, random_state=0
    )
    model = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), n_rounds=2, random_state=0
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    reports = {
        method: evaluate_clients(
            model,
            data.data,
            data.target,
            clients=None,
            sensitive_features=data.sensitive,
            metrics=("dpd", "roc_auc"),
            n_bootstrap=400,
            method=method,
            random_state=0,
        ).per_client.iloc[0]
        for method in ("percentile", "bca")
    }
    percentile, bca = reports["percentile"], reports["bca"]
    assert bca["dpd"] == percentile["dpd"]
    assert bca["dpd_low"] < percentile["dpd_low"]
    assert bca["dpd_high"] < percentile["dpd_high"]
    assert bca["dpd_low"] <= bca["dpd"] <= bca["dpd_high"]
    # Same resamples: a metric without bias gets a similar interval.
    assert abs(bca["roc_auc_low"] - percentile["roc_auc_low"]) < 0.01


def test_bca_of_a_metric_no_resample_moves_is_that_value():
    # Nobody selected at 0.999: the selection rate is 0 in every resample.
    data = make_federated_classification(600, n_clients=1, random_state=0)
    model = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), n_rounds=1, random_state=0
    ).fit(data.data, data.target, sensitive_features=data.sensitive)
    for method in ("percentile", "bca"):
        row = evaluate_clients(
            model,
            data.data,
            data.target,
            clients=None,
            sensitive_features=data.sensitive,
            metrics=("selection_rate", "dpd"),
            threshold=0.999,
            n_bootstrap=50,
            method=method,
            random_state=0,
        ).per_client.iloc[0]
        assert (row["selection_rate_low"], row["selection_rate_high"]) == (0.0, 0.0)
        assert (row["dpd_low"], row["dpd_high"]) == (0.0, 0.0)


def test_draws_are_the_resamples_behind_the_intervals_and_pair_across_models():
    data = make_federated_classification(900, n_clients=3, random_state=0)
    X, y = data.data, data.target
    fit = {"clients": data.clients, "sensitive_features": data.sensitive}
    models = [
        FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=fairness), n_rounds=2
        ).fit(X, y, **fit)
        for fairness in (0.0, 1.0)
    ]
    reports = [
        evaluate_clients(
            model,
            X,
            y,
            **fit,
            metrics=("roc_auc", "dpd"),
            n_bootstrap=40,
            random_state=3,
        )
        for model in models
    ]
    draws = reports[0].draws
    assert draws.shape == (3 * 40, 2)
    assert draws.index.names == ["client", "resample"]
    # The intervals are the draws' percentiles.
    for client, row in reports[0].per_client.iterrows():
        low, high = np.quantile(draws.loc[client, "roc_auc"], [0.025, 0.975])
        assert (row["roc_auc_low"], row["roc_auc_high"]) == pytest.approx((low, high))
    # A model compared with itself differs by 0 in every resample.
    again = evaluate_clients(
        models[0],
        X,
        y,
        **fit,
        metrics=("roc_auc", "dpd"),
        n_bootstrap=40,
        random_state=3,
    )
    assert (again.draws - draws).abs().to_numpy().max() == 0
    assert evaluate_clients(models[0], X, y, **fit, n_bootstrap=0).draws is None


def test_draws_with_the_same_seed_are_a_paired_bootstrap_of_two_models():
    data = make_federated_classification(900, n_clients=3, random_state=0)
    X, y = data.data, data.target
    fit = {"clients": data.clients, "sensitive_features": data.sensitive}
    first, second = (
        FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=fairness), n_rounds=2
        ).fit(X, y, **fit)
        for fairness in (0.0, 0.5)
    )

    def draws(model, seed):
        return evaluate_clients(
            model,
            X,
            y,
            **fit,
            metrics=("brier",),
            n_bootstrap=300,
            random_state=seed,
        ).draws["brier"]

    # The two models' Brier scores move together over the same resampled
    # rows, so their paired difference varies far less than the difference of
    # independent resamples (about the sum of the two variances).
    paired = (draws(second, 3) - draws(first, 3)).groupby("client").var()
    unpaired = (draws(second, 4) - draws(first, 3)).groupby("client").var()
    assert (paired < unpaired / 10).all()


def test_clients_with_identical_rows_get_independent_resamples():
    # One random stream serves the whole evaluation: every client's resamples
    # are new draws. Re-seeding it per client would give two clients with the
    # same number of rows the same resampled rows, so their intervals would
    # move together instead of being each client's own uncertainty.
    data = make_federated_classification(400, n_clients=1, random_state=0)
    model = LogisticRegression().fit(data.data, data.target)
    twice = {name: np.r_[v, v] for name, v in data.sensitive.items()}
    report = evaluate_clients(
        model,
        np.vstack([data.data, data.data]),
        np.r_[data.target, data.target],
        clients=np.repeat(["a", "b"], 400),
        sensitive_features=twice,
        metrics=("roc_auc", "selection_rate"),
        n_bootstrap=200,
        random_state=0,
    )
    a, b = report.per_client.loc["a"], report.per_client.loc["b"]
    assert a["roc_auc"] == b["roc_auc"]
    assert a["selection_rate"] == b["selection_rate"]
    for metric in ("roc_auc", "selection_rate"):
        first = report.draws.loc["a", metric].to_numpy()
        second = report.draws.loc["b", metric].to_numpy()
        assert abs(np.corrcoef(first, second)[0, 1]) < 0.3


def test_intervals_have_the_confidence_asked_for():
    # confidence=0.8: the percentile interval runs from the 10% to the 90%
    # quantile of the resamples, inside the 95% one of the same resamples.
    data = make_federated_classification(600, n_clients=2, random_state=0)
    model = LogisticRegression().fit(data.data, data.target)
    reports = {
        confidence: evaluate_clients(
            model,
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
            metrics=("roc_auc", "brier"),
            n_bootstrap=200,
            confidence=confidence,
            random_state=0,
        )
        for confidence in (0.8, 0.95)
    }
    narrow, wide = reports[0.8], reports[0.95]
    for client, row in narrow.per_client.iterrows():
        for metric in ("roc_auc", "brier"):
            draws = narrow.draws.loc[client, metric]
            low, high = np.quantile(draws, [0.1, 0.9])
            assert row[f"{metric}_low"] == pytest.approx(low)
            assert row[f"{metric}_high"] == pytest.approx(high)
            assert wide.per_client.loc[client, f"{metric}_low"] < low
            assert wide.per_client.loc[client, f"{metric}_high"] > high


def test_multiclass_brier_draws_are_resampled_means_of_the_row_errors():
    # Stated behaviour: a resample of a client's rows is a multinomial row
    # weighting, and the multi-class Brier score of a resample is the weighted
    # mean of the rows' squared errors (summed over the classes). So the
    # draws scatter around the point value with the spread of a bootstrapped
    # mean, sd(row errors) / sqrt(n) -- they do not all equal the point value.
    data = make_federated_classification(
        900, n_clients=2, n_classes=3, class_sep=1.0, random_state=0
    )
    X, y, clients = data.data, data.target, data.clients
    model = LogisticRegression().fit(X, y)
    report = evaluate_clients(
        model,
        X,
        y,
        clients=clients,
        sensitive_features=data.sensitive,
        metrics=("brier",),
        n_bootstrap=400,
        random_state=0,
    )
    proba = model.predict_proba(X)
    errors = np.sum((proba - (y[:, None] == model.classes_[None, :])) ** 2, axis=1)
    for client in np.unique(clients):
        rows = errors[clients == client]
        assert report.per_client.loc[client, "brier"] == pytest.approx(rows.mean())
        draws = report.draws.loc[client, "brier"].to_numpy()
        standard_error = rows.std() / np.sqrt(rows.size)
        assert draws.mean() == pytest.approx(rows.mean(), abs=standard_error / 4)
        assert 0.8 < draws.std() / standard_error < 1.2
