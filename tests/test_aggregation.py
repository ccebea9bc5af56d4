"""The aggregation seam: Flower's arithmetic in-process, robust aggregators."""

import warnings

import numpy as np
import pytest
from _helpers import make_federation
from hypothesis import given, settings
from hypothesis import strategies as st

from skfedida.datasets import make_federated_classification
from skfedida.exceptions import InactivePenaltyWarning
from skfedida.federated import (
    FairFed,
    FederatedEstimator,
    Median,
    QFedAvg,
    TrimmedMean,
    WeightedMean,
)
from skfedida.linear_model import FairPenaltyLogisticRegression


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    n_clients=st.integers(1, 7),
    beta=st.sampled_from([0.0, 0.1, 0.2, 0.34, 0.49]),
)
def test_aggregators_compute_what_flowers_strategies_compute(seed, n_clients, beta):
    from flwr.serverapp.strategy.fedtrimmedavg import trim_mean

    rng = np.random.default_rng(seed)
    lists = [[rng.normal(size=(1, 4)), rng.normal(size=1)] for _ in range(n_clients)]
    sizes = rng.integers(1, 100, n_clients)
    for got, layers in zip(
        Median().aggregate(lists, sizes), zip(*lists, strict=True), strict=True
    ):
        assert got.tobytes() == np.median(np.stack(layers), axis=0).tobytes()
    for got, layers in zip(
        TrimmedMean(beta).aggregate(lists, sizes), zip(*lists, strict=True), strict=True
    ):
        assert got.tobytes() == np.asarray(trim_mean(np.stack(layers), beta)).tobytes()
    mean = WeightedMean().aggregate(lists, sizes)
    expected = np.average(np.stack([p[0] for p in lists]), axis=0, weights=sizes)
    np.testing.assert_allclose(mean[0], expected, rtol=1e-12)


class _HostileLogistic(FairPenaltyLogisticRegression):
    """A client (seed in ``hostile``) that sends its parameters x 1e6."""

    hostile = frozenset()

    def partial_fit(
        self, X, y, classes=None, *, sensitive_features=None, sample_weight=None
    ):
        super().partial_fit(
            X,
            y,
            classes,
            sensitive_features=sensitive_features,
            sample_weight=sample_weight,
        )
        if self.random_state in self.hostile and (
            sample_weight is None or np.any(sample_weight)
        ):
            self.coef_ = self.coef_ * 1e6
        return self


@pytest.mark.parametrize(
    "aggregation, bounded",
    [("mean", False), ("median", True), (TrimmedMean(beta=0.2), True)],
)
def test_one_hostile_client_of_five_takes_over_only_the_mean(aggregation, bounded):
    X, y, clients, S = make_federation(1500, n_clients=5, frame=False)
    fed = FederatedEstimator(
        _HostileLogistic(fairness=0.0), n_rounds=2, local_epochs=1, random_state=0
    )
    seeds = (
        fed.set_params(aggregation=aggregation)
        .fit(X, y, clients=clients, sensitive_features=S)
        .client_seeds_
    )
    _HostileLogistic.hostile = frozenset({int(seeds[2])})
    try:
        fed.fit(X, y, clients=clients, sensitive_features=S)
    finally:
        _HostileLogistic.hostile = frozenset()
    largest = np.abs(fed.estimator_.coef_).max()
    assert (largest < 10) == bounded


@pytest.mark.parametrize("bad", ["max", TrimmedMean(beta=0.5), object()])
def test_a_bad_aggregation_is_named(bad):
    data = make_federated_classification(300, n_clients=3, random_state=0)
    with pytest.raises(ValueError, match=r"aggregation|beta"):
        FederatedEstimator(FairPenaltyLogisticRegression(), aggregation=bad).fit(
            data.data, data.target, clients=data.clients
        )


def test_an_object_that_is_not_one_of_the_aggregators_is_refused_up_front():
    class Mine:
        def aggregate(self, parameter_lists, weights):
            return parameter_lists[0]

    data = make_federated_classification(300, n_clients=3, random_state=0)
    with pytest.raises(ValueError, match="aggregation"):
        FederatedEstimator(FairPenaltyLogisticRegression(), aggregation=Mine()).fit(
            data.data, data.target, clients=data.clients
        )


def test_qfedavg_with_a_q_too_large_for_the_losses_says_so():
    # loss ** 1e4 underflows for losses below 1: the step was 0 / 0 and the
    # next round failed with "gradient is not finite; check X".
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = (X[:, 0] + rng.normal(size=300) > 0).astype(int)
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), aggregation=QFedAvg(q=1e4), n_rounds=2
    )
    with pytest.raises(ValueError, match=r"QFedAvg\(q=10000.0\).*smaller q"):
        federation.fit(X, y, clients=np.arange(300) % 3)


def _dpd_gap(n, selected):
    """Largest minus smallest selection rate over the groups with rows."""
    rates = [s / m for s, m in zip(selected, n, strict=True) if m > 0]
    return max(rates) - min(rates)


def test_fairfed_weights_follow_the_papers_recursion_across_rounds():
    # FairFed (Ezzeldin et al. 2023, Algorithm 1): w_k^0 = n_k / n, then every
    # round w_k^t = w_k^(t-1) - beta (Delta_k - mean Delta), clipped at 0 and
    # normalised, with Delta_k = |F_global - F_k|. The weights are a memory:
    # round 2 starts from round 1's weights, not from n_k / n again.
    sizes = np.array([100.0, 300.0, 200.0])
    rounds = [
        [  # round 1: per client, rows and positive decisions per group
            (np.array([50.0, 50.0]), np.array([10.0, 12.0])),
            (np.array([150.0, 150.0]), np.array([15.0, 90.0])),
            (np.array([100.0, 100.0]), np.array([20.0, 47.0])),
        ],
        [  # round 2: the model changed, and so did the decisions
            (np.array([50.0, 50.0]), np.array([14.0, 15.0])),
            (np.array([150.0, 150.0]), np.array([30.0, 75.0])),
            (np.array([100.0, 100.0]), np.array([25.0, 35.0])),
        ],
    ]
    beta = 0.3
    expected = sizes / sizes.sum()
    memory, fairfed = {}, FairFed(beta=beta, min_group_size=1)
    parameters = [
        [np.array([1.0, -1.0])],
        [np.array([3.0, 0.0])],
        [np.array([-2.0, 4.0])],
    ]
    for reports in rounds:
        n = sum(r[0] for r in reports)
        selected = sum(r[1] for r in reports)
        global_gap = _dpd_gap(n, selected)
        delta = np.array([abs(global_gap - _dpd_gap(*r)) for r in reports])
        expected = np.clip(expected - beta * (delta - delta.mean()), 0, None)
        expected = expected / expected.sum()
        out = fairfed.aggregate(
            parameters,
            sizes,
            reports=[{"n": a, "selected": b} for a, b in reports],
            clients=[0, 1, 2],
            memory=memory,
        )
        got = np.array([memory["weights"][k] for k in range(3)])
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        # The global parameters are the mean weighted by this round's weights.
        np.testing.assert_allclose(
            out[0], sum(w * p[0] for w, p in zip(expected, parameters, strict=True))
        )
    # Each round's shift adds up: the weights now differ from n_k / n.
    assert not np.allclose(got, sizes / sizes.sum(), atol=0.03)


def test_qfedavg_is_the_q_ffl_step_by_hand():
    # q-FedAvg (Li et al. 2020, Algorithm 2): with L = 1 / learning rate,
    # Delta_k = L (w - w_k), h_k = q F_k^(q-1) ||Delta_k||^2 + L F_k^q, and
    # w' = w - sum_k F_k^q Delta_k / sum_k h_k (all arrays as one vector).
    # At q = 0 the step is the plain mean whatever L; q > 0 needs both terms.
    start = [np.array([[0.5, -1.0]]), np.array([0.2])]
    local = [
        [np.array([[1.0, 0.0]]), np.array([0.0])],
        [np.array([[0.0, -2.0]]), np.array([1.0])],
        [np.array([[0.7, -0.4]]), np.array([-0.5])],
    ]
    losses = np.array([0.3, 0.9, 0.6])
    w = np.concatenate([a.ravel() for a in start])
    for q, rate in [(2.0, 0.25), (0.5, 3.0)]:
        lipschitz = 1 / rate
        deltas = [
            lipschitz * (w - np.concatenate([a.ravel() for a in client]))
            for client in local
        ]
        numerator = sum(F**q * d for F, d in zip(losses, deltas, strict=True))
        h = sum(
            q * F ** (q - 1) * d @ d + lipschitz * F**q
            for F, d in zip(losses, deltas, strict=True)
        )
        got = QFedAvg(q=q, client_learning_rate=rate).aggregate(
            local, [5, 1, 2], global_parameters=start, losses=losses
        )
        np.testing.assert_allclose(
            np.concatenate([a.ravel() for a in got]), w - numerator / h, rtol=1e-8
        )


@pytest.mark.parametrize(
    "rows, warns",
    [([100.0, 10.0], True), ([100.0, 0.0], True), ([100.0, 40.0], False)],
)
def test_fairfed_warns_when_fewer_than_two_groups_reach_min_group_size(rows, warns):
    # A gap needs two groups: with one group of 30 rows or more, every gap
    # is 0 and the weights are FedAvg's, which FairFed says once.
    rows = np.array(rows)
    reports = [{"n": rows, "selected": rows / 2}] * 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FairFed(min_group_size=30).aggregate(
            [[np.zeros(1)], [np.ones(1)]],
            [1, 1],
            reports=reports,
            clients=[0, 1],
            memory={},
        )
    inactive = [w for w in caught if issubclass(w.category, InactivePenaltyWarning)]
    assert bool(inactive) == warns
