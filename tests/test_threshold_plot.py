"""The plot of a FederatedThresholdOptimizer's chosen rules (issue 35).

The oracle for every drawn point: the optimizer's own decisions. A group's
point is its rule's rates computed from the counts; the mean chance of a
positive decision (``_positive_probability``) over the same rows, split by
label, gives the same rates, and the expected accuracy of those decisions
the same objective.
"""

import matplotlib
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from skfedida._groups import encode_groups
from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.plotting import ThresholdOptimizerDisplay, plot_threshold_optimizer
from skfedida.postprocessing import FederatedThresholdOptimizer

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(3000, n_clients=3, random_state=2)


def _fit(data, **options):
    return FederatedThresholdOptimizer(
        LogisticRegression(), random_state=0, **options
    ).fit(data.data, data.target, sensitive_features=data.sensitive)


def _decision_rates(post, data, rows=None):
    """Per group: selection rate, TPR, FPR and expected accuracy of decisions."""
    rows = np.ones(len(data.target), dtype=bool) if rows is None else rows
    sensitive = {k: np.asarray(v)[rows] for k, v in data.sensitive.items()}
    chance = post._positive_probability(
        data.data[rows],
        sensitive,
        None if not post.per_client else data.clients[rows],
    )
    y = data.target[rows]
    groups = encode_groups(sensitive, n_samples=int(rows.sum()))
    index = {label: g for g, label in enumerate(post.groups_)}
    codes = np.array([index[label] for label in groups.labels])[groups.codes]
    rates = np.full((len(post.groups_), 4), np.nan)
    for g in range(len(post.groups_)):
        mine = codes == g
        if not mine.any():
            continue
        p, labels = chance[mine], y[mine]
        rates[g] = (
            p.mean(),
            p[labels == 1].mean(),
            p[labels == 0].mean(),
            np.where(labels == 1, p, 1 - p).mean(),
        )
    return rates


def test_demographic_parity_points_are_the_decisions_rates(data):
    post = _fit(data)
    display = ThresholdOptimizerDisplay.from_estimator(post)
    rates = _decision_rates(post, data)
    np.testing.assert_allclose(display.points[:, 0], rates[:, 0], atol=1e-12)
    np.testing.assert_allclose(display.points[:, 1], rates[:, 3], atol=1e-12)
    # The groups share the chosen rate, which the dashed line marks.
    np.testing.assert_allclose(display.points[:, 0], display.common_rate, atol=1e-3)
    assert display.common_rate == pytest.approx(post.constrained_rates_[0])
    assert display.ax_.get_xlabel() == "selection rate"
    assert display.ax_.get_ylabel() == "accuracy within the group"
    lines = display.ax_.get_lines()
    # One curve and one point per group, and the chosen rate.
    assert len(lines) == 2 * len(post.groups_) + 1
    legend = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert legend[-1].startswith("chosen rate")


def test_equalized_odds_draws_roc_curves_with_the_shared_point(data):
    post = _fit(data, constraints="equalized_odds")
    display = plot_threshold_optimizer(post, show_plot=False)
    rates = _decision_rates(post, data)
    np.testing.assert_allclose(display.points[:, 0], rates[:, 2], atol=1e-12)
    np.testing.assert_allclose(display.points[:, 1], rates[:, 1], atol=1e-12)
    # Equalized odds: every group at the same (FPR, TPR).
    np.testing.assert_allclose(
        display.points, np.repeat(display.points[:1], len(post.groups_), 0), atol=1e-3
    )
    assert display.ax_.get_xlabel() == "false positive rate"
    assert display.ax_.get_ylabel() == "true positive rate"


@pytest.mark.parametrize(
    "constraint, column",
    [("true_positive_rate_parity", 1), ("false_positive_rate_parity", 2)],
)
def test_a_rate_parity_points_are_the_decisions_rate_and_balanced_accuracy(
    data, constraint, column
):
    post = _fit(data, constraints=constraint, objective="balanced_accuracy")
    display = ThresholdOptimizerDisplay.from_estimator(post)
    rates = _decision_rates(post, data)
    np.testing.assert_allclose(display.points[:, 0], rates[:, column], atol=1e-12)
    balanced = 0.5 * (rates[:, 1] + 1 - rates[:, 2])
    np.testing.assert_allclose(display.points[:, 1], balanced, atol=1e-12)
    assert display.ax_.get_ylabel() == "balanced accuracy within the group"


def test_per_client_rules_are_drawn_for_the_client_named(data):
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=2, random_state=0
    )
    post = FederatedThresholdOptimizer(federation, per_client=True, random_state=0).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )
    with pytest.raises(ValueError, match="client="):
        ThresholdOptimizerDisplay.from_estimator(post)
    with pytest.raises(ValueError, match="client=7 is not one of"):
        ThresholdOptimizerDisplay.from_estimator(post, client=7)
    rows = data.clients == 1
    display = ThresholdOptimizerDisplay.from_estimator(post, client=1)
    rates = _decision_rates(post, data, rows)
    np.testing.assert_allclose(display.points[:, 0], rates[:, 0], atol=1e-12)


def test_only_a_federated_threshold_optimizer_is_plotted():
    with pytest.raises(TypeError, match="FederatedThresholdOptimizer"):
        ThresholdOptimizerDisplay.from_estimator(LogisticRegression())


def test_an_unfitted_optimizer_is_refused():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        plot_threshold_optimizer(
            FederatedThresholdOptimizer(LogisticRegression()), show_plot=False
        )


def test_a_display_from_numbers_checks_their_shapes():
    with pytest.raises(ValueError, match="2 groups need"):
        ThresholdOptimizerDisplay(["a", "b"], [None], np.zeros((2, 2))).plot()


def test_no_shared_rate_is_drawn_where_the_groups_share_none(data):
    # Within a tolerance the groups' rates differ; one client's rows under
    # the federation's rules sit off the federation's rate.
    within = _fit(data, tolerance=0.1)
    assert np.ptp(within.constrained_rates_) > 0
    display = ThresholdOptimizerDisplay.from_estimator(within)
    assert np.isnan(display.common_rate)
    assert not any(
        t.get_text().startswith("chosen rate")
        for t in display.ax_.get_legend().get_texts()
    )
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=2, random_state=0
    )
    post = FederatedThresholdOptimizer(federation, random_state=0).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )
    assert np.isfinite(ThresholdOptimizerDisplay.from_estimator(post).common_rate)
    one_client = ThresholdOptimizerDisplay.from_estimator(post, client=1)
    assert np.isnan(one_client.common_rate)
    rates = _decision_rates(post, data, data.clients == 1)
    np.testing.assert_allclose(one_client.points[:, 0], rates[:, 0], atol=1e-12)
