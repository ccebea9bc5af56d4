"""Every list of metric names derives from the one registry (issue 33).

Each test states one list as the registry defines it, so a metric added to
the registry and not to a hand-written docstring (or the reverse) fails here.
"""

import re
import warnings

import numpy as np
import pytest
from _helpers import make_federation

from skfedida import metrics, plotting
from skfedida._gate._model import _METRIC_UPPER
from skfedida.federated import FairFed, _evaluation, evaluate_clients
from skfedida.federated._aggregation import check_aggregation
from skfedida.federated._client import (
    _DISPARITIES,
    PERSONAL_METRICS,
    VALIDATION_METRICS,
)
from skfedida.federated._estimator import FederatedEstimator
from skfedida.metrics import _fairness, _scorer
from skfedida.metrics._registry import CONSTRAINT_ALIASES as _CONSTRAINT_ALIASES
from skfedida.metrics._registry import (
    COUNTS,
    DISPARITIES,
    METRICS,
    RATES,
    count_gap,
    fairfed_metrics,
    keys,
    short_names,
)
from skfedida.postprocessing import FederatedThresholdOptimizer
from skfedida.postprocessing._threshold_optimizer import _CONSTRAINED_RATE


def _quoted(text):
    """The names quoted in a docstring (``"dpd"`` or ``val_dpd``)."""
    return re.findall(r'``"?([a-z_]+)"?``', text)


def test_every_metric_name_is_one_entry():
    names = [m.name for m in METRICS.values()]
    short = [m.key for m in METRICS.values() if m.key]
    assert len(set(names)) == len(names) and len(set(short)) == len(short)
    # A short key never names another metric.
    assert not {k for k in short if k in METRICS and METRICS[k].key != k}
    for metric in DISPARITIES.values():
        assert metric.function == metric.name
        assert hasattr(metrics, metric.function)
        assert set(metric.rates) <= set(RATES)
        # A ratio is better near 1, a difference near 0.
        assert metric.greater_is_better == (metric.kind == "ratio")


def test_the_metric_functions_are_the_public_disparities():
    public = {
        name
        for name in _fairness.__all__
        if name not in ("fairness_summary", "group_report")
    }
    assert public == set(DISPARITIES)


def test_scorers_accept_every_name_and_short_name():
    assert list(_scorer.FAIRNESS_METRICS) == list(DISPARITIES)
    for name, (function, greater) in _scorer.FAIRNESS_METRICS.items():
        assert function is getattr(metrics, name)
        assert greater is DISPARITIES[name].greater_is_better
    assert _scorer._ALIASES == _fairness.DISPARITY_ALIASES == short_names()
    for short, name in short_names().items():
        assert metrics.make_fairness_scorer(short)._score_func is not None
        assert repr(metrics.make_fairness_scorer(short)) == repr(
            metrics.make_fairness_scorer(name)
        )


def test_eor_is_a_short_name_of_the_equalized_odds_ratio():
    X, y, _, S = make_federation(n=300, n_clients=3, seed=0, frame=False)
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression().fit(X, y)
    expected = metrics.equalized_odds_ratio(y, model.predict(X), sensitive_features=S)
    scorer = metrics.make_fairness_scorer("eor")
    # A ratio: greater is better, so the scorer is not negated.
    assert scorer(model, X, y, sensitive_features=S) == pytest.approx(expected)
    tradeoff = metrics.make_tradeoff_scorer("accuracy", "eor", weight=1.0)
    accuracy = float(np.mean(model.predict(X) == y))
    assert tradeoff(model, X, y, sensitive_features=S) == pytest.approx(
        accuracy - (1 - expected)
    )


def test_evaluate_clients_computes_eor_as_the_metric_function():
    X, y, clients, S = make_federation(n=600, n_clients=3, seed=1, frame=False)
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression().fit(X, y)
    report = evaluate_clients(
        model,
        X,
        y,
        clients=clients,
        sensitive_features=S,
        metrics=("eor", "soft_eor", "eod"),
        n_bootstrap=0,
    )
    proba = model.predict_proba(X)[:, 1]
    for client in np.unique(clients):
        rows = clients == client
        hard = metrics.equalized_odds_ratio(
            y[rows], model.predict(X[rows]), sensitive_features=S[rows]
        )
        soft = metrics.equalized_odds_ratio(
            y[rows], proba[rows], sensitive_features=S[rows], soft=True
        )
        assert report.per_client.loc[client, "eor"] == pytest.approx(hard)
        assert report.per_client.loc[client, "soft_eor"] == pytest.approx(soft)


def test_fairness_summary_keys_and_docstring():
    summary = metrics.fairness_summary(
        [0, 1, 0, 1], [0, 1, 1, 1], sensitive_features=["a", "a", "b", "b"]
    )
    expected = [name for name, m in DISPARITIES.items() if m.summary]
    assert list(summary) == expected
    returns = metrics.fairness_summary.__doc__.split("Returns")[1].split("Examples")[0]
    assert [q for q in _quoted(returns) if q != "pos_label"] == expected


def test_make_fairness_scorer_docstring_names_every_metric():
    doc = metrics.make_fairness_scorer.__doc__
    part = doc.split("metric : str or callable")[1].split("response_method :")[0]
    expected = []
    for name, metric in DISPARITIES.items():
        expected += [name, metric.key] if metric.key else [name]
    assert _quoted(part) == expected


def test_client_reports_derive_from_the_registry():
    assert keys(reported=True) == VALIDATION_METRICS
    assert keys(personal=True) == PERSONAL_METRICS
    assert ("roc_auc", "selection_rate", "brier", *_DISPARITIES) == VALIDATION_METRICS
    assert {
        m.key: name for name, m in DISPARITIES.items() if m.reported
    } == _DISPARITIES
    assert _METRIC_UPPER == {"val_brier": 2.0}


def test_flower_accepts_exactly_the_reported_metrics():
    pytest.importorskip("flwr")
    from skfedida.flower._apps import REPLY_METRICS

    protocol = {"num-examples", "num-rows", "num-eval-rows", "train-loss"}
    assert (
        protocol
        | {f"val_{k}" for k in VALIDATION_METRICS}
        | {f"val_personal_{k}" for k in PERSONAL_METRICS}
        == REPLY_METRICS
    )


def test_history_docstring_lists_the_reported_metrics():
    doc = FederatedEstimator.__doc__
    part = doc.split("history_ : list of dict")[1].split("of the global model")[0]
    assert [k for k in _quoted(part) if k.startswith("val_")] == [
        f"val_{k}" for k in VALIDATION_METRICS
    ]


def test_evaluate_clients_lists_derive_from_the_registry():
    disparities = tuple(short_names())
    assert (
        "roc_auc",
        "selection_rate",
        "accuracy",
        "brier",
        *disparities,
        *(f"soft_{k}" for k in disparities),
    ) == _evaluation._METRICS
    assert (
        *keys(evaluation_default=True),
        *(f"soft_{k}" for k in keys(soft_evaluation_default=True)),
    ) == _evaluation._DEFAULT_METRICS
    # What its docstring says it accepts and defaults to.
    doc = evaluate_clients.__doc__
    part = doc.split("metrics : tuple of str, ")[1].split("threshold :")[0]
    default, accepted = part.split("\n", 1)
    assert default == "default=" + str(_evaluation._DEFAULT_METRICS).replace("'", '"')
    assert _quoted(accepted) == [
        "roc_auc",
        "brier",
        "selection_rate",
        "accuracy",
        "dpd",
        "dpr",
        "dfpr",
        "dppv",
        "dtpr",
        "eod",
        "eor",
        "soft_",
        "soft",
    ]
    assert set(_quoted(accepted)) - {"soft_", "soft"} == (
        set(_evaluation._METRICS) - {f"soft_{k}" for k in disparities}
    )


def test_plot_labels_and_panels_derive_from_the_registry():
    assert set(plotting._LABELS) == {m.key for m in METRICS.values() if m.key}
    assert plotting._label("soft_eor") == "EOR (soft)"
    assert plotting._DEFAULT_PANELS == ("roc_auc", "dpd", "dpr", "dfpr", "dppv")
    doc = plotting.ClientMetricsDisplay.from_estimators.__doc__
    assert f"default={plotting._DEFAULT_PANELS}".replace("'", '"') in doc


def test_fairfed_metrics_and_their_docs():
    assert set(fairfed_metrics()) == {"dpd", "dtpr", "dfpr", "eod"}
    doc = FairFed.__doc__.split("metric : {")[1].split("}")[0]
    assert set(re.findall(r'"(\w+)"', doc)) == set(fairfed_metrics())
    for metric in DISPARITIES.values():
        if metric.key and metric.key not in fairfed_metrics():
            # The registry says why FairFed cannot weigh clients by it.
            assert metric.not_fairfed
            with pytest.raises(ValueError, match="FairFed needs metric 'dpd'"):
                check_aggregation(FairFed(metric=metric.key))


def _random_report(rng, n_groups):
    n = rng.integers(0, 60, n_groups).astype(float)
    n_positive = np.floor(rng.random(n_groups) * (n + 1))
    selected = np.floor(rng.random(n_groups) * (n + 1))
    low = np.maximum(0, selected + n_positive - n)
    high = np.minimum(selected, n_positive)
    tp = np.minimum(np.floor(low + rng.random(n_groups) * (high - low + 1)), high)
    return dict(n=n, selected=selected, n_positive=n_positive, true_positive=tp)


def _rows_of(report, rng):
    """Rows (y, decision, group) whose counts are the report's."""
    y, pred, group = [], [], []
    for g in range(report["n"].size):
        n, sel, pos, tp = (int(report[k][g]) for k in COUNTS)
        cells = [(1, 1)] * tp + [(1, 0)] * (pos - tp) + [(0, 1)] * (sel - tp)
        cells += [(0, 0)] * (n - len(cells))
        y += [c[0] for c in cells]
        pred += [c[1] for c in cells]
        group += [g] * n
    order = rng.permutation(len(y))
    return np.array(y)[order], np.array(pred)[order], np.array(group)[order]


def _difference_of(rate):
    """The public metric of one rate's difference between groups."""
    (name,) = (
        name
        for name, m in DISPARITIES.items()
        if m.rates == (rate,) and m.kind == "difference" and m.key
    )
    return getattr(metrics, name)


def test_fairfeds_count_gap_is_the_metric_function_of_the_same_rows():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(150):
        report = _random_report(rng, int(rng.integers(1, 5)))
        y, pred, group = _rows_of(report, rng)
        if y.size == 0:
            continue
        min_group_size = int(rng.integers(1, 15))
        for key in fairfed_metrics():
            (metric,) = (m for m in DISPARITIES.values() if m.key == key)
            gaps = []
            for rate in metric.rates:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    gaps.append(
                        _difference_of(rate)(
                            y,
                            pred,
                            sensitive_features=group,
                            pos_label=1,
                            min_group_size=min_group_size,
                        )
                    )
            # FairFed measures no gap (0) where the metric leaves every group
            # out (NaN), and takes the worst of several rates.
            expected = max(0.0 if np.isnan(g) else g for g in gaps)
            gap = count_gap(key, report, min_group_size=min_group_size)
            assert gap == pytest.approx(expected, abs=1e-12)
            if len(gaps) > 1 and not np.isnan(gaps).any():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    whole = getattr(metrics, metric.function)(
                        y,
                        pred,
                        sensitive_features=group,
                        pos_label=1,
                        min_group_size=min_group_size,
                    )
                assert gap == pytest.approx(whole, abs=1e-12)
            checked += 1
    assert checked > 300


def test_fairfeds_counts_are_the_reply_gates():
    from skfedida._gate._rows import REPORT_KEYS

    assert COUNTS == REPORT_KEYS


def test_fairfeds_gap_is_the_registrys():
    rng = np.random.default_rng(1)
    for _ in range(200):
        report = _random_report(rng, int(rng.integers(1, 6)))
        total = {k: v + rng.integers(0, 40, v.size) for k, v in report.items()}
        size = int(rng.integers(1, 40))
        for key in fairfed_metrics():
            fairfed = FairFed(metric=key, min_group_size=size)
            assert fairfed._report_gap(report, total) == count_gap(
                key, report, total, size
            )


def test_constrained_rates_derive_from_the_registry():
    constraints = FederatedThresholdOptimizer._parameter_constraints["constraints"]
    assert set(_CONSTRAINED_RATE) == {
        m.constraint for m in DISPARITIES.values() if m.constraint
    }
    # The registry's constraints, and fairlearn's names for two of them
    # (equal TNRs are equal FPRs, equal FNRs equal TPRs), aliases only.
    assert constraints[0].options == set(_CONSTRAINED_RATE) | set(_CONSTRAINT_ALIASES)
    assert set(_CONSTRAINT_ALIASES.values()) <= set(_CONSTRAINED_RATE)
    for metric in DISPARITIES.values():
        if metric.constraint:
            assert _CONSTRAINED_RATE[metric.constraint] in metric.rates
    assert _CONSTRAINED_RATE["equalized_odds"] == "false_positive_rate"
    # The models' rate constraints take the same names, from the same place.
    from skfedida._models._constraints import CONSTRAINT_PARAMETERS

    assert CONSTRAINT_PARAMETERS["constraints"][0].options == constraints[0].options


def test_group_report_columns_are_the_rates():
    report = metrics.group_report(
        [0, 1, 0, 1], [0, 1, 1, 1], sensitive_features=["a", "a", "b", "b"]
    )
    assert [c for c in report.columns if c in RATES] == list(RATES)
