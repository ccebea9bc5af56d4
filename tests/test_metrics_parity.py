"""The metrics against fairlearn where users reach for it (issue 20, part 2)."""

import numpy as np
import pandas as pd
import pytest
from fairlearn import metrics as fairlearn_metrics
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_score, recall_score

from skfedida import metrics

PAIRS = {
    "demographic_parity_difference": (
        metrics.demographic_parity_difference,
        fairlearn_metrics.demographic_parity_difference,
    ),
    "demographic_parity_ratio": (
        metrics.demographic_parity_ratio,
        fairlearn_metrics.demographic_parity_ratio,
    ),
    "equalized_odds_difference": (
        metrics.equalized_odds_difference,
        fairlearn_metrics.equalized_odds_difference,
    ),
    "equalized_odds_ratio": (
        metrics.equalized_odds_ratio,
        fairlearn_metrics.equalized_odds_ratio,
    ),
    "equal_opportunity_difference": (
        metrics.equal_opportunity_difference,
        fairlearn_metrics.equal_opportunity_difference,
    ),
}


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(PAIRS)),
    method=st.sampled_from(["between_groups", "to_overall"]),
    weighted=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_every_method_equals_fairlearn(name, method, weighted, seed):
    ours, theirs = PAIRS[name]
    rng = np.random.default_rng(seed)
    n = 400
    y = rng.integers(0, 2, n)
    y_pred = rng.integers(0, 2, n)
    S = pd.DataFrame({"a": rng.choice(["x", "y", "z"], n), "b": rng.choice([0, 1], n)})
    weight = rng.random(n) if weighted else None
    expected = theirs(
        y, y_pred, sensitive_features=S, method=method, sample_weight=weight
    )
    got = ours(y, y_pred, sensitive_features=S, method=method, sample_weight=weight)
    assert got == pytest.approx(expected, abs=1e-12)


def test_to_overall_differs_from_between_groups_where_it_should():
    y = np.array([1, 1, 1, 1, 1, 1])
    y_pred = np.array([1, 1, 0, 0, 0, 0])
    groups = ["a", "a", "b", "b", "c", "c"]
    between = metrics.demographic_parity_difference(
        y, y_pred, sensitive_features=groups
    )
    to_overall = metrics.demographic_parity_difference(
        y, y_pred, sensitive_features=groups, method="to_overall"
    )
    assert between == 1.0
    assert to_overall == pytest.approx(2 / 3)  # group a: 1 against 1/3 overall


def test_equal_opportunity_is_the_tpr_difference():
    rng = np.random.default_rng(0)
    y, y_pred = rng.integers(0, 2, 300), rng.integers(0, 2, 300)
    S = rng.choice(["x", "y"], 300)
    assert metrics.equal_opportunity_difference(
        y, y_pred, sensitive_features=S
    ) == metrics.true_positive_rate_difference(y, y_pred, sensitive_features=S)


def test_group_report_takes_any_metric_as_metricframe_does():
    rng = np.random.default_rng(0)
    n = 600
    y, y_pred = rng.integers(0, 2, n), rng.integers(0, 2, n)
    S = pd.DataFrame({"a": rng.choice(["x", "y"], n), "b": rng.choice(["u", "v"], n)})
    weight = rng.random(n)
    functions = {"recall": recall_score, "precision": precision_score}
    report = metrics.group_report(
        y, y_pred, sensitive_features=S, sample_weight=weight, metrics=functions
    )
    frame = fairlearn_metrics.MetricFrame(
        metrics=functions,
        y_true=y,
        y_pred=y_pred,
        sensitive_features=S,
        sample_params={name: {"sample_weight": weight} for name in functions},
    )
    np.testing.assert_allclose(
        report[list(functions)].to_numpy(),
        frame.by_group[list(functions)].to_numpy(),
        rtol=1e-12,
    )
    for name in functions:
        assert report.attrs["overall"][name] == pytest.approx(frame.overall[name])
    with pytest.raises(ValueError, match="already has"):
        metrics.group_report(
            y, y_pred, sensitive_features=S, metrics={"selection_rate": recall_score}
        )
    with pytest.raises(ValueError, match="must be a function"):
        metrics.group_report(y, y_pred, sensitive_features=S, metrics={"r": 3})


def test_the_new_metrics_make_scorers():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    S = rng.choice(["x", "y"], 300)
    model = LogisticRegression().fit(X, y)
    for name in ("equalized_odds_ratio", "equal_opportunity_difference"):
        scorer = metrics.make_fairness_scorer(name)
        score = scorer(model, X, y, sensitive_features=S)
        value = PAIRS[name][0](y, model.predict(X), sensitive_features=S)
        assert score == pytest.approx(value if name.endswith("ratio") else -value)


def test_where_the_metrics_differ_from_fairlearn_by_design():
    # A group with no positives has no TPR: left out here (a disparity not
    # measured is not reported); fairlearn counts it as 0.
    y, y_pred, groups = [0, 1, 0, 0], [1, 1, 0, 0], list("baca")
    assert metrics.equal_opportunity_difference(
        y, y_pred, sensitive_features=groups
    ) == pytest.approx(0.0)
    assert fairlearn_metrics.equal_opportunity_difference(
        y, y_pred, sensitive_features=groups
    ) == pytest.approx(1.0)
    # Every group at rate 0: parity, ratio 1 (fairlearn: 0 / 0).
    y, y_pred, groups = [0, 1, 0, 1], [0, 0, 0, 0], list("aabb")
    assert metrics.demographic_parity_ratio(y, y_pred, sensitive_features=groups) == 1
    assert np.isnan(
        fairlearn_metrics.demographic_parity_ratio(y, y_pred, sensitive_features=groups)
    )
