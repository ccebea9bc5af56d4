"""Fairness metrics: fairlearn as the oracle, then the edge cases we decide."""

import warnings

import fairlearn.metrics as fl
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import precision_score

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


@st.composite
def fairness_problems(draw):
    """y_true, y_pred, 1-3 sensitive attributes and optional integer weights."""
    n = draw(st.integers(min_value=2, max_value=120))
    n_attributes = draw(st.integers(min_value=1, max_value=3))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    rng = np.random.default_rng(seed)
    columns = {}
    for j in range(n_attributes):
        n_levels = draw(st.integers(min_value=1, max_value=4))
        levels = rng.integers(0, n_levels, size=n)
        # Mix value types across attributes: strings and integers.
        columns[f"s{j}"] = (
            np.array(["lvl" + str(v) for v in levels], dtype=object)
            if j % 2 == 0
            else levels
        )
    S = pd.DataFrame(columns)
    y_true = rng.integers(0, 2, size=n)
    y_pred = rng.integers(0, 2, size=n)
    weights = rng.integers(1, 6, size=n).astype(float) if draw(st.booleans()) else None
    return y_true, y_pred, S, weights


def _restrict(mask, y_true, y_pred, S, weights):
    return (
        y_true[mask],
        y_pred[mask],
        S[mask],
        None if weights is None else weights[mask],
    )


def _groups_with(S, condition):
    """Rows whose intersectional group has at least one row meeting condition."""
    keys = S.astype(str).agg("|".join, axis=1)
    has = pd.Series(condition).groupby(keys.to_numpy()).transform("any")
    return has.to_numpy()


@settings(max_examples=150, deadline=None)
@given(fairness_problems())
def test_demographic_parity_matches_fairlearn(problem):
    y_true, y_pred, S, w = problem
    ours = demographic_parity_difference(
        y_true, y_pred, sensitive_features=S, sample_weight=w
    )
    theirs = fl.demographic_parity_difference(
        y_true, y_pred, sensitive_features=S, sample_weight=w
    )
    assert ours == pytest.approx(theirs, abs=1e-12)
    ratio = demographic_parity_ratio(
        y_true, y_pred, sensitive_features=S, sample_weight=w
    )
    if y_pred.any():
        theirs = fl.demographic_parity_ratio(
            y_true, y_pred, sensitive_features=S, sample_weight=w
        )
        assert ratio == pytest.approx(theirs, abs=1e-12)
    else:
        assert ratio == 1.0


@settings(max_examples=150, deadline=None)
@given(fairness_problems())
def test_error_rate_differences_match_fairlearn(problem):
    y_true, y_pred, S, w = problem
    # fairlearn counts a group without negatives (positives) as FPR (TPR) 0; we
    # leave it out, so the oracle is fairlearn on the groups where it is defined.
    with_negatives = _groups_with(S, y_true == 0)
    with_positives = _groups_with(S, y_true == 1)
    extra = {} if w is None else {"sample_weight": w}

    def oracle(func, mask):
        if not mask.any():
            return np.nan
        yt, yp, s, ww = _restrict(mask, y_true, y_pred, S, w)
        with warnings.catch_warnings(action="ignore"):
            return func(
                yt,
                yp,
                sensitive_features=s,
                **({} if ww is None else {"sample_weight": ww}),
            )

    with warnings.catch_warnings(action="ignore"):
        fpr = false_positive_rate_difference(
            y_true, y_pred, sensitive_features=S, **extra
        )
        tpr = true_positive_rate_difference(
            y_true, y_pred, sensitive_features=S, **extra
        )
        eod = equalized_odds_difference(y_true, y_pred, sensitive_features=S, **extra)
    expected_fpr = oracle(fl.false_positive_rate_difference, with_negatives)
    expected_tpr = oracle(fl.true_positive_rate_difference, with_positives)
    np.testing.assert_allclose(fpr, expected_fpr, atol=1e-12)
    np.testing.assert_allclose(tpr, expected_tpr, atol=1e-12)
    np.testing.assert_allclose(eod, np.max([expected_fpr, expected_tpr]), atol=1e-12)
    if with_negatives.all() and with_positives.all():
        # Every group has both classes: fairlearn's own equalized odds agrees.
        theirs = fl.equalized_odds_difference(
            y_true, y_pred, sensitive_features=S, sample_weight=w
        )
        assert eod == pytest.approx(theirs, abs=1e-12)
        mean = equalized_odds_difference(
            y_true, y_pred, sensitive_features=S, sample_weight=w, agg="mean"
        )
        theirs = fl.equalized_odds_difference(
            y_true, y_pred, sensitive_features=S, sample_weight=w, agg="mean"
        )
        assert mean == pytest.approx(theirs, abs=1e-12)


def _precision_nan(y_true, y_pred, **kwargs):
    return precision_score(y_true, y_pred, zero_division=np.nan, **kwargs)


@settings(max_examples=150, deadline=None)
@given(fairness_problems())
def test_ppv_difference_matches_metricframe(problem):
    y_true, y_pred, S, w = problem
    frame = fl.MetricFrame(
        metrics=_precision_nan,
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=S,
        sample_params=None if w is None else {"sample_weight": w},
    )
    expected = frame.difference()
    with warnings.catch_warnings(action="ignore"):
        ours = positive_predictive_value_difference(
            y_true, y_pred, sensitive_features=S, sample_weight=w
        )
    np.testing.assert_allclose(ours, expected, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(fairness_problems())
def test_summary_and_report_agree_with_the_metrics(problem):
    y_true, y_pred, S, w = problem
    with warnings.catch_warnings(action="ignore"):
        summary = fairness_summary(
            y_true, y_pred, sensitive_features=S, sample_weight=w
        )
    for name, func in [
        ("demographic_parity_difference", demographic_parity_difference),
        ("demographic_parity_ratio", demographic_parity_ratio),
        ("false_positive_rate_difference", false_positive_rate_difference),
        ("true_positive_rate_difference", true_positive_rate_difference),
        ("positive_predictive_value_difference", positive_predictive_value_difference),
        ("equalized_odds_difference", equalized_odds_difference),
    ]:
        with warnings.catch_warnings(action="ignore"):
            value = func(y_true, y_pred, sensitive_features=S, sample_weight=w)
        np.testing.assert_allclose(summary[name], value)
    report = group_report(y_true, y_pred, sensitive_features=S, sample_weight=w)
    assert report["n"].sum() == len(y_true)
    selection = report["selection_rate"]
    assert summary["demographic_parity_difference"] == pytest.approx(
        selection.max() - selection.min()
    )


def test_report_lists_left_out_groups_and_reasons():
    y_true = np.array([1, 1, 0, 1, 0, 0, 1, 0])
    y_pred = np.array([1, 0, 0, 1, 1, 0, 0, 0])
    S = pd.DataFrame(
        {"race": ["a", "a", "b", "b", "c", "c", "c", "c"], "sex": ["F"] * 8}
    )
    report = group_report(y_true, y_pred, sensitive_features=S)
    assert isinstance(report.index, pd.MultiIndex)
    assert list(report.index.names) == ["race", "sex"]
    row = report.loc[("a", "F")]
    assert np.isnan(row["false_positive_rate"])
    assert row["left_out"] == "FPR: no negatives"
    assert report.loc[("c", "F"), "left_out"] == ""
    assert report.loc[("b", "F"), "left_out"] == ""
    # min_group_size leaves out rates resting on too few rows, and says so.
    small = group_report(y_true, y_pred, sensitive_features=S, min_group_size=3)
    assert np.isnan(small.loc[("a", "F"), "selection_rate"])
    assert "selection rate: fewer than 3 rows" in small.loc[("a", "F"), "left_out"]
    assert small.loc[("c", "F"), "false_positive_rate"] == pytest.approx(1 / 3)
    # The disparity uses exactly the groups the report keeps.
    kept = small["selection_rate"].dropna()
    assert demographic_parity_difference(
        y_true, y_pred, sensitive_features=S, min_group_size=3
    ) == pytest.approx(kept.max() - kept.min())


def test_report_without_pandas(monkeypatch):
    import skfedida.metrics._fairness as module

    monkeypatch.setattr(module, "pd", None)
    report = group_report([0, 1, 1], [0, 1, 0], sensitive_features=["a", "a", "b"])
    assert report.group == [("a",), ("b",)]
    np.testing.assert_array_equal(report.n, [2, 1])


def test_all_predictions_zero():
    y_true = [0, 1, 0, 1]
    y_pred = [0, 0, 0, 0]
    S = ["a", "a", "b", "b"]
    assert demographic_parity_difference(y_true, y_pred, sensitive_features=S) == 0
    # Every selection rate is 0: groups are treated alike, DPR is 1 (documented).
    assert demographic_parity_ratio(y_true, y_pred, sensitive_features=S) == 1.0
    # So is every group's ratio to the overall rate, 0 against 0 (fairlearn
    # gives NaN), and the equalized odds ratio, whose TPR and FPR are all 0.
    for method in ("between_groups", "to_overall"):
        for ratio in (demographic_parity_ratio, equalized_odds_ratio):
            assert ratio(y_true, y_pred, sensitive_features=S, method=method) == 1.0
    assert false_positive_rate_difference(y_true, y_pred, sensitive_features=S) == 0
    # No predicted positive anywhere: PPV is undefined for every group.
    with pytest.warns(UndefinedMetricWarning, match="no group has a defined rate"):
        assert np.isnan(
            positive_predictive_value_difference(y_true, y_pred, sensitive_features=S)
        )


def test_one_group_only():
    y_true, y_pred = [0, 1, 1, 0], [1, 1, 0, 0]
    S = ["a"] * 4
    for func in (
        demographic_parity_difference,
        false_positive_rate_difference,
        true_positive_rate_difference,
        positive_predictive_value_difference,
        equalized_odds_difference,
    ):
        assert func(y_true, y_pred, sensitive_features=S) == 0.0
    assert demographic_parity_ratio(y_true, y_pred, sensitive_features=S) == 1.0


def test_group_without_negatives_is_left_out_not_zero():
    # Group "a" has no negatives. Counting its FPR as 0 would give 1.0.
    y_true = [1, 1, 0, 0, 0, 0]
    y_pred = [1, 1, 1, 1, 1, 0]
    S = ["a", "a", "b", "b", "c", "c"]
    assert false_positive_rate_difference(y_true, y_pred, sensitive_features=S) == 0.5
    with warnings.catch_warnings(action="ignore"):
        theirs = fl.false_positive_rate_difference(y_true, y_pred, sensitive_features=S)
    assert theirs == 1.0


def test_group_without_predicted_positives_is_left_out_of_ppv():
    y_true = [1, 0, 1, 0, 1, 1]
    y_pred = [1, 1, 1, 1, 0, 0]
    S = ["a", "a", "b", "b", "c", "c"]
    # PPV: a = 0.5, b = 0.5, c undefined (not 0).
    assert (
        positive_predictive_value_difference(y_true, y_pred, sensitive_features=S)
        == 0.0
    )


def test_string_labels_need_pos_label():
    y_true = np.array(["yes", "no", "yes", "no"])
    y_pred = np.array(["yes", "yes", "no", "no"])
    S = ["a", "a", "b", "b"]
    with pytest.raises(ValueError, match="pass pos_label"):
        demographic_parity_difference(y_true, y_pred, sensitive_features=S)
    assert (
        demographic_parity_difference(
            y_true, y_pred, sensitive_features=S, pos_label="yes"
        )
        == 1.0
    )
    assert (
        demographic_parity_difference(
            y_true, y_pred, sensitive_features=S, pos_label="no"
        )
        == 1.0
    )
    assert (
        true_positive_rate_difference(
            y_true, y_pred, sensitive_features=S, pos_label="yes"
        )
        == 1.0
    )
    numeric = demographic_parity_difference(
        (y_true == "yes").astype(int),
        (y_pred == "yes").astype(int),
        sensitive_features=S,
    )
    assert numeric == 1.0


def test_minus_one_one_labels_are_understood():
    y_true = np.array([-1, 1, -1, 1])
    y_pred = np.array([1, 1, -1, -1])
    S = ["a", "a", "b", "b"]
    assert demographic_parity_difference(y_true, y_pred, sensitive_features=S) == 1.0
    assert (
        demographic_parity_difference(
            y_true, y_pred, sensitive_features=S, pos_label=-1
        )
        == 1.0
    )


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(sensitive_features=["a", None, "b", "b"]), "missing value"),
        (dict(sensitive_features=["a", "b", "b"]), "has 3 rows but X and y have 4"),
        (dict(sensitive_features=["a"] * 4, min_group_size=0), "min_group_size"),
        (
            dict(sensitive_features=["a"] * 4, sample_weight=[1, -1, 1, 1]),
            "Negative values",
        ),
    ],
)
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        demographic_parity_difference([0, 1, 0, 1], [0, 1, 1, 1], **kwargs)


def test_bad_targets():
    S = ["a", "b", "a"]
    with pytest.raises(ValueError, match="soft=True needs pos_label"):
        demographic_parity_difference(
            [0, 1, 2], [0.1, 0.5, 0.2], sensitive_features=S, soft=True
        )
    with pytest.raises(ValueError, match="pos_label=7 is not a valid label"):
        demographic_parity_difference(
            [0, 1, 2], [0, 1, 2], sensitive_features=S, pos_label=7
        )
    with pytest.raises(ValueError, match="different types"):
        demographic_parity_difference([0, 1, 1], ["a", "b", "a"], sensitive_features=S)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        demographic_parity_difference([0, 1, 1], [0, 1], sensitive_features=S)
    with pytest.raises(ValueError, match=r"probabilities .* in \[0, 1\]"):
        demographic_parity_difference(
            [0, 1, 1], [0.2, 1.5, 0.1], sensitive_features=S, soft=True
        )


def test_soft_rates_are_group_means_of_scores():
    y_true = np.array([0, 1, 1, 0, 1, 0])
    proba = np.array([0.1, 0.9, 0.6, 0.2, 0.8, 0.5])
    S = np.array(["a", "a", "a", "b", "b", "b"])
    dpd = demographic_parity_difference(y_true, proba, sensitive_features=S, soft=True)
    assert dpd == pytest.approx(abs(proba[:3].mean() - proba[3:].mean()))
    dfpr = false_positive_rate_difference(
        y_true, proba, sensitive_features=S, soft=True
    )
    assert dfpr == pytest.approx(abs(0.1 - np.mean([0.2, 0.5])))
    dppv = positive_predictive_value_difference(
        y_true, proba, sensitive_features=S, soft=True
    )
    ppv_a = (0.9 + 0.6) / proba[:3].sum()
    ppv_b = 0.8 / proba[3:].sum()
    assert dppv == pytest.approx(abs(ppv_a - ppv_b))


def test_a_soft_ppv_rests_on_every_row_with_a_non_zero_score():
    """min_group_size counts rows, whatever their score: a soft PPV's rows are
    those that can be selected (a non-zero score), four in each group here,
    though group a's scores add up to 0.6 only."""
    y_true = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    proba = np.array([0.3, 0.1, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9])
    S = np.repeat(["a", "b"], 4)
    dppv = positive_predictive_value_difference(
        y_true, proba, sensitive_features=S, soft=True, min_group_size=2
    )
    assert dppv == pytest.approx(2 / 3 - 1 / 2)  # PPVs 0.4 / 0.6 and 1.8 / 3.6
    report = group_report(
        y_true, proba, sensitive_features=S, soft=True, min_group_size=2
    )
    np.testing.assert_allclose(report["positive_predictive_value"], [2 / 3, 1 / 2])
    assert report["left_out"].tolist() == ["", ""]
    # Five rows are needed: each group rests on four, and both are left out.
    with pytest.warns(UndefinedMetricWarning, match="no group has a defined rate"):
        assert np.isnan(
            positive_predictive_value_difference(
                y_true, proba, sensitive_features=S, soft=True, min_group_size=5
            )
        )


@pytest.mark.parametrize(
    "name",
    [
        "demographic_parity_difference",
        "demographic_parity_ratio",
        "false_positive_rate_difference",
        "true_positive_rate_difference",
        "positive_predictive_value_difference",
        "equalized_odds_difference",
        "fairness_summary",
        "group_report",
    ],
)
def test_every_metric_documents_its_parameters_and_returns(name):
    from numpydoc.docscrape import FunctionDoc

    import skfedida.metrics

    doc = FunctionDoc(getattr(skfedida.metrics, name))
    parameters = [p.name for p in doc["Parameters"]]
    assert parameters[:3] == ["y_true", "y_pred", "sensitive_features"]
    assert "Returns" not in parameters
    assert doc["Returns"], f"{name} lost its Returns section"
