"""What a client computes and sends, stated against its own rows.

FairFed's clients report counts per sensitive group for the global model
they receive: on their held-out rows when the federation holds rows out
(``validation_fraction``), else on their training rows (FairFed's
docstring). The server never sees the rows, so these tests read the reports
where the aggregator receives them.
"""

import math

import numpy as np
import pytest
from _helpers import make_federation

from skfedida.exceptions import ClientDataWarning
from skfedida.federated import FairFed, FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE


class _RecordingFairFed(FairFed):
    """FairFed that keeps, per round, the reports of the clients it weighs."""

    received = []

    def aggregate(self, parameter_lists, weights, *, reports, clients, memory):
        type(self).received.append(
            {
                int(k): {key: np.array(v) for key, v in r.items()}
                for k, r in zip(clients, reports, strict=True)
            }
        )
        return super().aggregate(
            parameter_lists, weights, reports=reports, clients=clients, memory=memory
        )


def _reports(validation_fraction):
    X, y, clients, S = make_federation(n=450, n_clients=3, seed=2)
    _RecordingFairFed.received = []
    FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.5),
        aggregation=_RecordingFairFed(metric="dpd", beta=0.5, min_group_size=1),
        validation_fraction=validation_fraction,
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)
    rows = dict(zip(*np.unique(clients, return_counts=True), strict=True))
    positives = {k: int(np.sum(y[clients == k] == 1)) for k in rows}
    return _RecordingFairFed.received, rows, positives


@pytest.mark.parametrize("fraction", [0.2, 0.35])
def test_fairfed_reports_count_exactly_the_held_out_rows(fraction):
    # With validation_fraction, every client reports on ceil(fraction * n_k)
    # held-out rows (the split of _split_client): never on its training
    # rows, which the model it trains on is fitted to. The held-out rows are
    # split by label, so their positives are ~fraction of the client's.
    received, rows, positives = _reports(fraction)
    assert len(received) == 2  # one set of reports per round
    for by_client in received:
        assert sorted(by_client) == sorted(rows)
        for k, report in by_client.items():
            held_out = math.ceil(fraction * rows[k])
            assert report["n"].sum() == held_out
            assert report["n_positive"].sum() == pytest.approx(
                fraction * positives[k], abs=1
            )
            # Rates defined on those rows: decisions and hits among them.
            assert np.all(report["selected"] <= report["n"])
            assert np.all(report["true_positive"] <= report["n_positive"])
    # The same held-out rows every round: the split is the client's own.
    first, second = received
    for k in rows:
        np.testing.assert_array_equal(first[k]["n"], second[k]["n"])
        np.testing.assert_array_equal(first[k]["n_positive"], second[k]["n_positive"])


def test_fairfed_reports_count_every_row_without_a_held_out_set():
    # No validation_fraction: every row is a training row, and reported.
    received, rows, positives = _reports(None)
    for by_client in received:
        for k, report in by_client.items():
            assert report["n"].sum() == rows[k]
            assert report["n_positive"].sum() == positives[k]


def test_fairfed_reports_the_decisions_of_the_global_model_the_client_received():
    # A round's report counts the decisions (probability above 0.5) of the
    # global model the client receives, before its training. Round 2's
    # clients receive round 1's aggregate: the fitted model of the same
    # seeded federation stopped after one round. Without validation_fraction
    # they count every row.
    X, y, clients, S = make_federation(n=450, n_clients=3, seed=2)

    def fit(n_rounds):
        _RecordingFairFed.received = []
        return FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.5),
            aggregation=_RecordingFairFed(metric="dpd", beta=0.5, min_group_size=1),
            n_rounds=n_rounds,
            local_epochs=1,
            random_state=0,
        ).fit(X, y, clients=clients, sensitive_features=S)

    after_one_round = fit(1).estimator_
    fit(2)
    second = _RecordingFairFed.received[1]
    decided = after_one_round.predict_proba(X)[:, 1] > 0.5
    positive = y == 1
    for k, report in second.items():
        rows = clients == k
        assert report["selected"].sum() == decided[rows].sum()
        assert report["true_positive"].sum() == (decided & positive)[rows].sum()
        assert report["n_positive"].sum() == positive[rows].sum()
    # Not a model that decides all alike: some decisions differ from labels.
    assert 0 < decided.sum() < len(y) and (decided != positive).any()


class _RecordingROSE(FairnessAwareROSE):
    """FairnessAwareROSE that keeps the first column of every minibatch it gets.

    Overriding ``fit_resample`` sends the federation down its per-minibatch
    path, which calls the sampler on each of a client's minibatches in turn.
    """

    seen = []

    def fit_resample(self, X, y, *, sensitive_features=None):
        type(self).seen.append(np.asarray(X)[:, 0].copy())
        return super().fit_resample(X, y, sensitive_features=sensitive_features)


def test_every_round_draws_its_own_minibatches_from_shuffled_rows():
    # Algorithm 2 resamples minibatches of a shuffled client: each round
    # draws a new order (its own seed), so round 2's minibatches are not
    # round 1's, and no round takes the rows in their stored order.
    X, y, clients, S = make_federation(n=200, n_clients=1, seed=4)
    _RecordingROSE.seen = []
    FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.5),
        sampler=_RecordingROSE(),
        batch_size=40,
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)
    batches = _RecordingROSE.seen
    assert len(batches) == 2 * 5  # 200 rows, 40 a minibatch, two rounds
    first, second = batches[:5], batches[5:]
    for one, other in zip(first, second, strict=True):
        assert not np.array_equal(one, other)
    stored = np.asarray(X)[:, 0]
    for b, rows in enumerate(first):
        assert not np.array_equal(rows, stored[40 * b : 40 * (b + 1)])


def test_a_client_fraction_selects_the_nearest_number_of_clients():
    # client_fraction=0.7 of 4 clients: round(2.8) = 3 train every round.
    X, y, clients, S = make_federation(n=400, n_clients=4, seed=5)
    fitted = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.5),
        client_fraction=0.7,
        n_rounds=3,
        local_epochs=1,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)
    for round_ in (1, 2, 3):
        trained = [r for r in fitted.history_ if r["round"] == round_]
        assert len(trained) == 3


def test_validation_metrics_of_held_out_rows_that_all_look_alike():
    # Client 0's rows share one X, half of them positive; its held-out half
    # (stratified) is then 5 positives and 5 negatives, all with the global
    # model's probability p: Brier score (p^2 + (1 - p)^2) / 2, selection
    # rate 1[p > 0.5], AUROC 0.5 (every score tied).
    X, y, clients, S = make_federation(n=300, n_clients=3, seed=6)
    X, y, S = np.array(X, dtype=float), np.array(y), S.copy()
    alike = np.flatnonzero(clients == 0)[:20]
    keep = (clients != 0) | np.isin(np.arange(len(y)), alike)
    X, y, clients, S = X[keep], y[keep], clients[keep], S.iloc[keep]
    own = clients == 0
    X[own] = X[own][0]
    y[own] = np.arange(own.sum()) % 2
    fitted = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.5),
        validation_fraction=0.5,
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)
    p = fitted.estimator_.predict_proba(X[own][:1])[0, 1]
    (last,) = [r for r in fitted.history_ if r["round"] == 2 and r["client"] == 0]
    assert last["val_brier"] == pytest.approx((p**2 + (1 - p) ** 2) / 2, rel=1e-12)
    assert last["val_selection_rate"] == float(p > 0.5)
    assert last["val_roc_auc"] == 0.5


@pytest.mark.parametrize("fraction, refused", [(0.9, False), (0.95, True)])
def test_validation_fraction_must_leave_every_client_a_training_row(fraction, refused):
    # A client of 10 rows holds out ceil(fraction * 10) of them: 9 at 0.9
    # leaves one training row, 10 at 0.95 leaves none, and that client is
    # named rather than trained on nothing.
    X, y, clients, S = make_federation(n=450, n_clients=3, seed=2)
    small = np.flatnonzero(clients == 2)[10:]
    keep = np.setdiff1d(np.arange(y.shape[0]), small)
    X, y, clients, S = X[keep], y[keep], clients[keep], S.iloc[keep]
    assert np.sum(clients == 2) == 10 and np.unique(y[clients == 2]).size == 2
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(),
        validation_fraction=fraction,
        n_rounds=1,
        local_epochs=1,
        random_state=0,
    )
    if refused:
        with pytest.raises(ValueError, match=r"Client 2 has 10 row\(s\).*0\.95"):
            federation.fit(X, y, clients=clients, sensitive_features=S)
    else:
        # Its one training row has one class, which the client is told.
        with pytest.warns(ClientDataWarning, match="Client 2 has a single class"):
            federation.fit(X, y, clients=clients, sensitive_features=S)
        assert federation.client_sizes_[list(federation.clients_).index(2)] == 1


def test_a_clients_round_report_holds_exactly_the_listed_metrics():
    # VALIDATION_METRICS is what the Flower server accepts (as val_<name>):
    # a metric reported but not listed would be refused on Flower, one
    # listed but not reported would be missing in-process.
    from skfedida.federated._client import VALIDATION_METRICS, _validation_metrics

    X, y, _, S = make_federation(n=450, n_clients=3, seed=2)
    model = FairPenaltyLogisticRegression().fit(X, y, sensitive_features=S)
    classes = np.unique(y)
    for groups in (S, None):
        metrics = _validation_metrics(model, X, y, groups, classes)
        assert sorted(metrics) == sorted(VALIDATION_METRICS)
