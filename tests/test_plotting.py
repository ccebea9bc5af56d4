"""ClientMetricsDisplay and TradeoffDisplay (drawn off screen)."""

import matplotlib
import numpy as np
import pandas as pd
import pytest
from _helpers import make_federation

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from sklearn import config_context
from sklearn.model_selection import GridSearchCV

from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import make_fairness_scorer
from skfedida.over_sampling import FairnessAwareROSE
from skfedida.plotting import ClientMetricsDisplay, TradeoffDisplay


@pytest.fixture(scope="module")
def federation():
    # A DataFrame: sklearn slices it per fold (a dict of columns it would not).
    return make_federation(1200, as_frame=True)


def test_client_metrics_display(federation):
    X, y, clients, S = federation
    models = {
        "FedAvg": FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0), n_rounds=2, random_state=0
        ),
        "FedIDA": FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=1),
            n_rounds=2,
            sampler=FairnessAwareROSE(),
            random_state=0,
        ),
    }
    for model in models.values():
        model.fit(X, y, clients=clients, sensitive_features=S)
    display = ClientMetricsDisplay.from_estimators(
        models,
        X,
        y,
        clients=clients,
        sensitive_features=S,
        metrics=("roc_auc", "dpd", "dfpr"),
        n_bootstrap=30,
        random_state=0,
    )
    assert len(display.axes_) == 3
    assert [a.get_title() for a in display.axes_] == ["AUROC", "DPD", "DFPR"]
    # Per setup in every panel: its points, and its intervals from low to high.
    assert all(len(a.lines) == 2 and len(a.collections) == 2 for a in display.axes_)
    labels = [t.get_text() for t in display.figure_.legends[0].get_texts()]
    assert labels == ["FedAvg", "FedIDA"]
    table = display.reports["FedIDA"].per_client
    np.testing.assert_allclose(display.axes_[0].lines[1].get_ydata(), table["roc_auc"])
    segments = display.axes_[1].collections[1].get_segments()
    np.testing.assert_allclose([seg[0][1] for seg in segments], table["dpd_low"])
    np.testing.assert_allclose([seg[1][1] for seg in segments], table["dpd_high"])


def test_an_interval_that_does_not_hold_its_point_is_drawn_as_it_is():
    # A bootstrap interval of a gap (max - min) can lie beside its point
    # value; error bars relative to the point then had negative lengths and
    # matplotlib refused to draw them.
    from sklearn.utils import Bunch

    table = pd.DataFrame(
        {"dpd": [0.10, 0.20], "dpd_low": [0.12, 0.15], "dpd_high": [0.30, 0.25]},
        index=pd.Index([0, 1], name="client"),
    )
    display = ClientMetricsDisplay({"model": Bunch(per_client=table)}).plot()
    segments = display.axes_[0].collections[0].get_segments()
    np.testing.assert_allclose([s[0][1] for s in segments], [0.12, 0.15])
    np.testing.assert_allclose([s[1][1] for s in segments], [0.30, 0.25])
    plt.close("all")


def test_client_metrics_display_draws_each_clients_own_values_by_default_metrics():
    """Without metrics=, one panel per metric of the first report, its interval
    columns drawn as the error bars of their metric, not as panels; every
    setup's value at a client's position is that client's, whatever the
    order of the rows of its report."""
    from sklearn.utils import Bunch

    first = pd.DataFrame(
        {
            "roc_auc": [0.70, 0.80, 0.90],
            "dpd": [0.10, 0.20, 0.30],
            "dpd_low": [0.05, 0.15, 0.25],
            "dpd_high": [0.15, 0.25, 0.35],
        },
        index=pd.Index(["a", "b", "c"], name="client"),
    )
    # The same clients in another order, with values of their own.
    second = pd.DataFrame(
        {"roc_auc": [0.66, 0.55, 0.77], "dpd": [0.03, 0.01, 0.02]},
        index=pd.Index(["c", "a", "b"], name="client"),
    )
    display = ClientMetricsDisplay(
        {"first": Bunch(per_client=first), "second": Bunch(per_client=second)}
    ).plot()
    assert [axis.get_title() for axis in display.axes_] == ["AUROC", "DPD"]
    auc, dpd = display.axes_
    np.testing.assert_allclose(auc.lines[1].get_ydata(), [0.55, 0.77, 0.66])
    np.testing.assert_allclose(dpd.lines[1].get_ydata(), [0.01, 0.02, 0.03])
    assert [t.get_text() for t in auc.get_xticklabels()] == ["a", "b", "c"]
    plt.close("all")


def test_client_metrics_display_on_given_axes(federation):
    X, y, clients, S = federation
    model = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=1, random_state=0
    ).fit(X, y, clients=clients, sensitive_features=S)
    figure, axes = plt.subplots(1, 2)
    display = ClientMetricsDisplay.from_estimators(
        {"m": model},
        X,
        y,
        clients=clients,
        sensitive_features=S,
        metrics=("roc_auc", "dpd"),
        n_bootstrap=0,
        ax=axes,
    )
    assert display.figure_ is figure
    with pytest.raises(ValueError, match="2 Axes for 3 metrics"):
        ClientMetricsDisplay(display.reports, metrics=("roc_auc", "dpd", "dpr")).plot(
            ax=axes
        )
    with pytest.raises(ValueError, match="reports is empty"):
        ClientMetricsDisplay({}).plot()
    plt.close("all")


def test_tradeoff_display_from_searches(federation):
    X, y, clients, S = federation
    results = {}
    for name, sampler in (("penalty only", None), ("FedIDA", FairnessAwareROSE())):
        with config_context(enable_metadata_routing=True):
            search = GridSearchCV(
                FederatedEstimator(
                    FairPenaltyLogisticRegression(),
                    n_rounds=2,
                    sampler=sampler,
                    random_state=0,
                ),
                {"estimator__fairness": [2.0, 0.0, 1.0]},
                scoring={"auc": "roc_auc", "dpd": make_fairness_scorer("dpd")},
                refit=False,
                cv=2,
            ).fit(X, y, clients=clients, sensitive_features=S)
        results[name] = search.cv_results_
    display = TradeoffDisplay.from_cv_results(results, param="estimator__fairness")
    lines = display.ax_.get_lines()
    assert [line.get_label() for line in lines] == ["penalty only", "FedIDA"]
    # Points sorted by lambda, disparities un-negated.
    cv = results["FedIDA"]
    order = np.argsort([p["estimator__fairness"] for p in cv["params"]])
    np.testing.assert_allclose(lines[1].get_xdata(), -cv["mean_test_dpd"][order])
    np.testing.assert_allclose(lines[1].get_ydata(), cv["mean_test_auc"][order])
    assert display.ax_.get_xlabel() == "DPD" and display.ax_.get_ylabel() == "AUROC"
    with pytest.raises(ValueError, match="same length"):
        TradeoffDisplay({"x": ([0, 1], [0.8], [0.1, 0.2])}).plot()
    plt.close("all")


def test_tradeoff_from_estimators_scores_each_model_at_the_matched_rate(
    federation,
):
    from skfedida.federated import evaluate_clients
    from skfedida.postprocessing import FederatedThresholdOptimizer

    X, y, clients, S = federation
    by_seed = {
        tolerance: [
            FederatedEstimator(
                FairPenaltyLogisticRegression(
                    fairness=0, constraints="demographic_parity", tolerance=tolerance
                ),
                n_rounds=2,
                random_state=seed,
            ).fit(X, y, clients=clients, sensitive_features=S)
            for seed in (0, 1)
        ]
        for tolerance in (0.2, 0.0)
    }
    thresholds = FederatedThresholdOptimizer(
        by_seed[0.0][0], prefit=True, random_state=0
    ).fit(X, y, clients=clients, sensitive_features=S)
    display = TradeoffDisplay.from_estimators(
        {"constrained": by_seed, "thresholds": {0.0: thresholds}},
        X,
        y,
        clients=clients,
        sensitive_features=S,
        parameter_name="tolerance",
    )
    values, accuracy, dpd, accuracy_sd, dpd_sd = display.curves["constrained"]
    assert list(values) == [0.0, 0.2]  # sorted
    # Each point: the mean over the seeds of the mean over the clients, at
    # exactly the training prevalence's rate; error bars, their sd.
    found = [
        evaluate_clients(
            model,
            X,
            y,
            clients=clients,
            sensitive_features=S,
            metrics=("accuracy", "dpd"),
            threshold="prevalence",
            n_bootstrap=0,
        ).summary["mean"]
        for model in by_seed[0.0]
    ]
    assert accuracy[0] == pytest.approx(np.mean([f["accuracy"] for f in found]))
    assert dpd[0] == pytest.approx(np.mean([f["dpd"] for f in found]))
    assert dpd_sd[0] == pytest.approx(np.std([f["dpd"] for f in found], ddof=1))
    assert accuracy_sd[0] == pytest.approx(
        np.std([f["accuracy"] for f in found], ddof=1)
    )
    # Group thresholds are scored on their own decisions: one model, no spread.
    own = evaluate_clients(
        thresholds,
        X,
        y,
        clients=clients,
        sensitive_features=S,
        metrics=("accuracy", "dpd"),
        n_bootstrap=0,
    ).summary["mean"]
    assert display.curves["thresholds"][2][0] == pytest.approx(own["dpd"])
    assert display.curves["thresholds"][4][0] == 0.0
    assert display.ax_.get_xlabel() == "DPD"
    assert display.ax_.get_ylabel() == "accuracy"  # the registry's label
    with pytest.raises(ValueError, match="are needed; got 4 arrays"):
        TradeoffDisplay({"x": ([0], [0.8], [0.1], [0.0])}).plot()
    plt.close("all")
