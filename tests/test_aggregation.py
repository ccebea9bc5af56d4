"""The aggregation seam: Flower's arithmetic in-process, robust aggregators."""

import numpy as np
import pytest
from _helpers import make_federation
from hypothesis import given, settings
from hypothesis import strategies as st

from skfedida.datasets import make_federated_classification
from skfedida.federated import (
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
