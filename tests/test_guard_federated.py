"""Behaviours of the federation's server side that mutants showed unguarded (issue 32).

Each test states what the server, the aggregators, the reply checks or the
evaluation must do, at options other than the defaults where the defaults
hide a mistake; ``benchmarks/mutants/federated.py`` lists the mistakes.
"""

import warnings

import numpy as np
import pytest
from _helpers import small_federation
from sklearn.linear_model import LogisticRegression, SGDClassifier

from skfedida.datasets import make_federated_classification
from skfedida.exceptions import (
    ClientDataWarning,
    DegenerateModelWarning,
    InactivePenaltyWarning,
)
from skfedida.federated import (
    ClientStratifiedKFold,
    DifferentialPrivacy,
    FederatedEstimator,
    evaluate_clients,
    get_parameters,
)
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.model_selection import make_fedida


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(900, n_clients=3, random_state=0)


def _fit(federation, data, **fit):
    return federation.fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
        **fit,
    )


# -- evaluate_clients ----------------------------------------------------------


def test_prevalence_threshold_matches_the_training_prevalence(data):
    # threshold="prevalence" compares models at the share of positives they
    # were trained on (class_prior_), whatever the evaluation rows hold: on
    # rows with half positives the target stays the training share.
    federation = _fit(small_federation(n_rounds=2), data)
    prior = federation.class_prior_[-1]
    positives = np.flatnonzero(data.target == 1)
    negatives = np.flatnonzero(data.target == 0)[: positives.size]
    rows = np.sort(np.r_[positives, negatives])
    assert data.target[rows].mean() == 0.5 and abs(prior - 0.5) > 0.1
    report = evaluate_clients(
        federation,
        data.data[rows],
        data.target[rows],
        clients=data.clients[rows],
        sensitive_features={k: v[rows] for k, v in data.sensitive.items()},
        threshold="prevalence",
        n_bootstrap=0,
    )
    assert report.target_rate == pytest.approx(prior, abs=1e-12)
    assert report.achieved_rate == pytest.approx(prior, abs=1e-12)


def test_summary_sd_is_the_sample_sd_across_clients(data):
    # The clients are a sample of the populations a model could serve: the
    # spread across them is the sample standard deviation (ddof=1), as
    # pandas and the FedIDA paper's tables report it.
    model = LogisticRegression().fit(data.data, data.target)
    report = evaluate_clients(
        model,
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
        metrics=("roc_auc", "brier", "dpd"),
        n_bootstrap=0,
    )
    for metric in ("roc_auc", "brier", "dpd"):
        values = report.per_client[metric].to_numpy()
        assert report.summary.loc[metric, "sd"] == pytest.approx(
            np.std(values, ddof=1), rel=1e-12
        )


# -- FederatedEstimator: rounds, selection, history ----------------------------


class _StopAfter:
    """A sklearn fit callback that asks to stop after ``rounds`` rounds."""

    def __init__(self, rounds):
        self.rounds, self.ended = rounds, 0

    def setup(self, estimator, context):
        pass

    def on_fit_task_begin(self, estimator, context, **kwargs):
        pass

    def on_fit_task_end(self, estimator, context, **kwargs):
        if context.task_name != "round":
            return False
        self.ended += 1
        return self.ended == self.rounds

    def teardown(self, estimator, context):
        pass


def test_a_fit_stopped_early_counts_only_the_rounds_it_ran(data):
    # Stopped after 2 of 5 rounds, a federation has released 2 models: its
    # privacy is spent for 2, and a warm start resumes at round 3, so 2 + 1
    # rounds are the 3-round fit.
    dp = DifferentialPrivacy(noise_multiplier=2.0, clipping_norm=0.5, noise_seed=0)
    stopped = small_federation(n_rounds=5, dp=dp).set_callbacks(_StopAfter(2))
    _fit(stopped, data)
    assert max(r["round"] for r in stopped.history_) == 2
    assert stopped.privacy_.n_releases == 2
    assert stopped.privacy_.epsilon == pytest.approx(dp.epsilon(2))
    _fit(stopped.set_params(warm_start=True, n_rounds=1), data)
    straight = _fit(small_federation(n_rounds=3, dp=dp), data)
    assert [r["round"] for r in stopped.history_] == [
        r["round"] for r in straight.history_
    ]
    assert stopped.privacy_.n_releases == 3
    np.testing.assert_array_equal(
        stopped.predict_proba(data.data), straight.predict_proba(data.data)
    )


def test_client_fraction_draws_other_clients_every_round():
    # Each round selects round(fraction * n) clients at random: over rounds
    # the selections differ and reach most clients, not one fixed subset.
    five = make_federated_classification(1000, n_clients=5, random_state=0)
    fitted = _fit(small_federation(n_rounds=6, client_fraction=0.4), five)
    by_round = {}
    for record in fitted.history_:
        by_round.setdefault(record["round"], set()).add(record["client"])
    assert sorted(by_round) == [1, 2, 3, 4, 5, 6]
    assert all(len(selected) == 2 for selected in by_round.values())
    assert len({frozenset(selected) for selected in by_round.values()}) > 2
    assert len(set().union(*by_round.values())) >= 4


@pytest.fixture(scope="module")
def uneven():
    """Three clients of 10%, 30% and 60% of the rows."""
    return make_federated_classification(
        1200, n_clients=3, client_sizes=[1, 3, 6], random_state=1
    )


def test_local_global_model_is_the_row_weighted_mean_of_the_clients(uneven):
    # strategy="local": clients never communicate; the global model reported
    # is their models' mean weighted by rows (n_k / n), as FedAvg's would be.
    fitted = _fit(small_federation(strategy="local", n_rounds=2), uneven)
    assert len(set(fitted.client_sizes_.tolist())) == 3
    own = [get_parameters(fitted.client_estimators_[c]) for c in fitted.clients_]
    for i, parameter in enumerate(get_parameters(fitted.estimator_)):
        expected = np.average([p[i] for p in own], axis=0, weights=fitted.client_sizes_)
        np.testing.assert_allclose(parameter, expected, rtol=1e-12)


def test_federated_metrics_weigh_each_client_by_its_held_out_rows(uneven):
    # The federation's validation metric is the clients' claims averaged
    # with weights their held-out rows (the pooled metric for rates).
    fitted = _fit(small_federation(n_rounds=2, validation_fraction=0.3), uneven)
    rows = np.bincount(np.searchsorted(fitted.clients_, uneven.clients))
    held_out = rows - fitted.client_sizes_
    assert len(set(held_out.tolist())) == 3
    for round_, summary in fitted.federated_metrics_.items():
        records = sorted(
            (r for r in fitted.history_ if r["round"] == round_),
            key=lambda r: r["client"],
        )
        for key in ("val_roc_auc", "val_brier", "val_selection_rate"):
            values = [r[key] for r in records]
            assert summary[key] == pytest.approx(
                np.average(values, weights=held_out), rel=1e-12
            )
            assert summary[f"{key}_median"] == pytest.approx(np.median(values))


def test_federated_metrics_leave_out_a_client_whose_metric_is_undefined(uneven):
    # A client whose rows hold one class has no AUROC (NaN): the
    # federation's mean and median are over the clients where it is
    # defined, not NaN, and n_clients still counts every reporting client.
    y = np.where(uneven.clients == 0, 1, uneven.target)
    federation = small_federation(n_rounds=2, validation_fraction=0.3)
    with pytest.warns(ClientDataWarning, match="single class"):
        federation.fit(
            uneven.data, y, clients=uneven.clients, sensitive_features=uneven.sensitive
        )
    for round_, summary in federation.federated_metrics_.items():
        records = sorted(
            (r for r in federation.history_ if r["round"] == round_),
            key=lambda r: r["client"],
        )
        values = np.array([r["val_roc_auc"] for r in records])
        assert np.isnan(values[0]) and np.isfinite(values[1:]).all()
        assert summary["val_roc_auc_median"] == pytest.approx(np.median(values[1:]))
        assert np.isfinite(summary["val_roc_auc"])
        assert summary["n_clients"] == 3


def test_local_training_validates_each_clients_own_model():
    # Two clients whose outcome depends on x0 in opposite directions: each
    # own model ranks its held-out rows well, their average cannot. Local
    # training's history records each client's own model.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 3))
    clients = np.repeat([0, 1], 400)
    direction = np.where(clients == 0, 1.0, -1.0)
    y = (direction * X[:, 0] + 0.3 * rng.normal(size=800) > 0).astype(int)
    S = rng.integers(0, 2, 800)
    fitted = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0),
        strategy="local",
        n_rounds=3,
        local_epochs=2,
        validation_fraction=0.3,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)
    last = [r for r in fitted.history_ if r["round"] == 3]
    assert len(last) == 2
    assert all(r["val_roc_auc"] > 0.9 for r in last)


def test_warm_start_resumes_a_federation_whose_estimator_draws_per_call():
    # SGDClassifier shuffles with its random_state in every partial_fit: a
    # resumed federation must keep each client's own seed (not the
    # estimator's random_state) to be the straight fit's continuation.
    data = make_federated_classification(600, n_clients=3, random_state=0)

    def federation(n_rounds, **options):
        return FederatedEstimator(
            SGDClassifier(loss="log_loss"),
            strategy="local",
            n_rounds=n_rounds,
            local_epochs=1,
            random_state=0,
            **options,
        )

    straight = _fit(federation(4), data)
    resumed = federation(2, warm_start=True)
    _fit(resumed, data)
    _fit(resumed, data)
    np.testing.assert_array_equal(
        resumed.predict_proba(data.data, clients=data.clients),
        straight.predict_proba(data.data, clients=data.clients),
    )
    for k, client in enumerate(resumed.clients_):
        seed = resumed.client_estimators_[client].random_state
        assert seed == resumed.client_seeds_[k]


# -- ClientStratifiedKFold -------------------------------------------------------


def test_client_splitter_shuffles_with_its_random_state():
    # shuffle=True draws the folds with random_state: other seeds, other
    # folds; the same seed, the same folds; every fold still stratified.
    y = np.tile([0, 0, 0, 1], 30)
    clients = np.repeat([1, 2, 3], 40)

    def folds(**options):
        splitter = ClientStratifiedKFold(n_splits=4, **options)
        return [test.tolist() for _, test in splitter.split(y, y, clients=clients)]

    seeded = folds(shuffle=True, random_state=0)
    assert seeded == folds(shuffle=True, random_state=0)
    assert seeded != folds(shuffle=True, random_state=1)
    assert seeded != folds(shuffle=False)
    for test in seeded:
        test = np.asarray(test)
        for client in (1, 2, 3):
            assert y[test[clients[test] == client]].tolist().count(1) in (2, 3)


# -- make_fedida ---------------------------------------------------------------------


def test_make_fedida_builds_the_documented_federation():
    # The documented defaults and pass-through options: each group's outcomes
    # made equal (n_target="group_mean"), one batch size for the estimator's
    # steps and the federation's per-batch resampling, the network's layers.
    fedida = make_fedida(batch_size=64, random_state=0)
    assert fedida.sampler.n_target == "group_mean"
    assert fedida.batch_size == 64 and fedida.estimator.batch_size == 64
    network = make_fedida("mlp", hidden_layer_sizes=(7, 3))
    assert network.estimator.hidden_layer_sizes == (7, 3)
    assert network.estimator.solver == "sgd"


# -- warnings ------------------------------------------------------------------------


def test_a_sensitive_attribute_of_one_value_makes_the_penalty_inactive(data):
    # One group: no gap to penalise, so fairness > 0 trains the unpenalised
    # model, and the federation says so once.
    with pytest.warns(InactivePenaltyWarning, match="single value"):
        small_federation().fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=np.zeros(data.target.size),
        )


def test_the_degenerate_model_check_pools_every_clients_decisions():
    # Client 2's rows are far on the negative side (all predicted negative),
    # the others' split: the federation selects about a third of all rows,
    # which is no degenerate model.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 3))
    clients = np.repeat([0, 1, 2], 300)
    X[clients == 2, 0] -= 6.0
    y = (X[:, 0] + 0.5 * rng.normal(size=900) > 0).astype(int)
    y[clients == 2] = (rng.random(300) < 0.05).astype(int)
    S = rng.integers(0, 2, 900)
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0),
        n_rounds=3,
        local_epochs=2,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateModelWarning)
        federation.fit(X, y, clients=clients, sensitive_features=S)
    predicted = federation.predict(X)
    assert not predicted[clients == 2].any()
    assert 0.2 < predicted.mean() < 0.5


def test_the_degenerate_model_warning_names_the_class_it_predicts():
    # Outcomes 99% positive: the model selects everybody, and the warning
    # says it predicts the positive class.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(900, 3))
    clients = np.repeat([0, 1, 2], 300)
    y = np.ones(900, dtype=int)
    y[::100] = 0  # three negatives per client
    S = rng.integers(0, 2, 900)
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), n_rounds=2, random_state=0
    )
    with pytest.warns(DegenerateModelWarning, match="predicts the positive class"):
        federation.fit(X, y, clients=clients, sensitive_features=S)


def test_the_private_mean_divides_by_every_client_the_round_selected(monkeypatch):
    # Differential privacy divides the noisy sum of the clipped updates by
    # the clients selected, whatever replied, so one client's absence moves
    # no noise scale (doc/flower.rst). The round loop is both backends'
    # (issue 48): here a client fails every round and is skipped, and the
    # division must still count it.
    from _helpers import FailingLogistic

    from skfedida.federated import DifferentialPrivacy, _engine

    divided_by = []
    original = _engine.bounded_round

    def recording(*args, n_selected, **kwargs):
        divided_by.append(n_selected)
        return original(*args, n_selected=n_selected, **kwargs)

    monkeypatch.setattr(_engine, "bounded_round", recording)
    data = make_federated_classification(600, n_clients=3, random_state=0)
    federation = FederatedEstimator(
        FailingLogistic(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        on_client_error="skip",
        dp=DifferentialPrivacy(noise_multiplier=0.5, clipping_norm=0.5, noise_seed=0),
        random_state=0,
    )
    seeds = FederatedEstimator(FairPenaltyLogisticRegression(), random_state=0)
    seeds.fit(data.data, data.target, clients=data.clients)
    FailingLogistic.failing_seeds = {int(seeds.client_seeds_[0])}
    divided_by.clear()
    try:
        federation.fit(data.data, data.target, clients=data.clients)
    finally:
        FailingLogistic.failing_seeds = frozenset()
    skipped = [(r["round"], r["client"]) for r in federation.history_ if "skipped" in r]
    assert skipped == [(1, 0), (2, 0)]
    assert divided_by == [3, 3]
