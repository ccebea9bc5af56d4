"""Fairness metrics of multi-class outcomes: one-vs-rest per class (issue 21)."""

import numpy as np
import pandas as pd
import pytest
from fairlearn import metrics as fl

from skfedida.metrics import (
    demographic_parity_difference,
    demographic_parity_ratio,
    equalized_odds_difference,
    equalized_odds_ratio,
    fairness_summary,
    false_positive_rate_difference,
    group_report,
    positive_predictive_value_difference,
    true_positive_rate_difference,
)

CLASSES = np.array(["high", "low", "mid"])


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    S = rng.choice(["a", "b", "c"], size=n, p=[0.5, 0.3, 0.2])
    # Group-dependent class mixes and predictions, so every class differs.
    shift = np.select([S == "a", S == "b"], [0.0, 0.6], 1.2)
    y = CLASSES[np.clip((rng.normal(size=n) + shift).round().astype(int), 0, 2)]
    noisy = np.clip((rng.normal(size=n) * 1.2 + shift).round().astype(int), 0, 2)
    y_pred = np.where(rng.random(n) < 0.6, y, CLASSES[noisy])
    return y, y_pred, S


# skfedida's metric, fairlearn's binary metric of (y == c, y_pred == c)
PAIRS = [
    (demographic_parity_difference, fl.demographic_parity_difference, "difference"),
    (demographic_parity_ratio, fl.demographic_parity_ratio, "ratio"),
    (equalized_odds_difference, fl.equalized_odds_difference, "difference"),
    (equalized_odds_ratio, fl.equalized_odds_ratio, "ratio"),
]


@pytest.mark.parametrize(
    "ours, theirs, kind, agg",
    [(*pair, "worst_case") for pair in PAIRS]
    # Equalized odds' mean runs over both rates of every class, not over
    # fairlearn's per-class values: see the next test.
    + [(*pair, "mean") for pair in PAIRS[:2]],
)
def test_each_class_one_vs_rest_combined_by_agg_equals_fairlearn(
    ours, theirs, kind, agg
):
    y, y_pred, S = _data()
    per_class = {
        c: theirs((y == c).astype(int), (y_pred == c).astype(int), sensitive_features=S)
        for c in CLASSES
    }
    combined = list(per_class.values())
    expected = (
        np.mean(combined)
        if agg == "mean"
        else (max(combined) if kind == "difference" else min(combined))
    )
    value = ours(y, y_pred, sensitive_features=S, agg=agg)
    assert value == pytest.approx(expected, abs=1e-12)
    # One class against the rest: pos_label picks it.
    for c, single in per_class.items():
        assert ours(y, y_pred, sensitive_features=S, pos_label=c) == pytest.approx(
            single, abs=1e-12
        )


def test_equalized_odds_mean_over_classes_and_rates():
    y, y_pred, S = _data()
    rates = [
        rate(y, y_pred, sensitive_features=S, pos_label=c)
        for c in CLASSES
        for rate in (true_positive_rate_difference, false_positive_rate_difference)
    ]
    assert equalized_odds_difference(
        y, y_pred, sensitive_features=S, agg="mean"
    ) == pytest.approx(np.mean(rates))


def test_single_rate_metrics_take_the_worst_class_and_summary_agrees():
    y, y_pred, S = _data(seed=1)
    summary = fairness_summary(y, y_pred, sensitive_features=S)
    for name, metric in [
        ("demographic_parity_difference", demographic_parity_difference),
        ("demographic_parity_ratio", demographic_parity_ratio),
        ("false_positive_rate_difference", false_positive_rate_difference),
        ("true_positive_rate_difference", true_positive_rate_difference),
        ("positive_predictive_value_difference", positive_predictive_value_difference),
        ("equalized_odds_difference", equalized_odds_difference),
    ]:
        per_class = [
            metric(y, y_pred, sensitive_features=S, pos_label=c) for c in CLASSES
        ]
        worst = min(per_class) if name.endswith("ratio") else max(per_class)
        assert metric(y, y_pred, sensitive_features=S) == pytest.approx(worst)
        assert summary[name] == pytest.approx(worst)


def test_group_report_has_a_block_per_class():
    y, y_pred, S = _data()
    report = group_report(y, y_pred, sensitive_features={"site": S})
    assert report.index.names == ["class", "site"]
    assert list(report.index.get_level_values("class").unique()) == list(CLASSES)
    for c in CLASSES:
        expected = group_report(y, y_pred, sensitive_features={"site": S}, pos_label=c)
        pd.testing.assert_frame_equal(report.loc[c], expected)
    # Per class, the selection rates are P(y_pred = c | group): they sum to 1
    # over classes within each group.
    totals = report["selection_rate"].groupby("site").sum()
    np.testing.assert_allclose(totals, 1.0)


def test_a_soft_metric_of_one_class_probabilities():
    y, _, S = _data()
    rng = np.random.default_rng(2)
    proba = rng.dirichlet(np.ones(3), size=y.size)
    column = proba[:, 2]  # P(mid)
    value = demographic_parity_difference(
        y, column, sensitive_features=S, soft=True, pos_label="mid"
    )
    means = pd.Series(column).groupby(S).mean()
    assert value == pytest.approx(means.max() - means.min())
