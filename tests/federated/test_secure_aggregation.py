"""FederatedEstimator(secure_aggregation=...): the server learns sums (issue 49)."""

import numpy as np
import pytest

pytest.importorskip("cryptography")

from _helpers import partition_loader
from sklearn.base import clone
from sklearn.utils import Bunch

from skfedida._secure import SecAggServer
from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import (
    DifferentialPrivacy,
    FairFed,
    FederatedEstimator,
    SecureAggregation,
    _secure_aggregation,
)
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(900, n_clients=5, random_state=0)


def _fit(federation, data, **fit_params):
    return clone(federation).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
        **fit_params,
    )


def _fedida(**params):
    return FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(random_state=0),
        n_rounds=4,
        local_epochs=2,
        random_state=0,
        **{"max_update_norm": 5.0, **params},
    )


@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg"])
@pytest.mark.parametrize("max_update_norm", [5.0, 0.05], ids=["loose", "clipping"])
@pytest.mark.parametrize("neighbours", [None, 2], ids=["secagg", "secagg+"])
def test_the_secure_fit_is_the_plain_fit_to_the_encodings_precision(
    data, strategy, max_update_norm, neighbours
):
    # FedIDA's logistic model (ROSE and the group penalty), with updates
    # clipped or not: the same model to ~1e-15, the same decisions, prior
    # and per-round mean training loss (the plain fit's clients' losses
    # weighted by their rows).
    plain = _fit(_fedida(strategy=strategy, max_update_norm=max_update_norm), data)
    secure = _fit(
        _fedida(
            strategy=strategy,
            max_update_norm=max_update_norm,
            secure_aggregation=SecureAggregation(neighbours=neighbours),
        ),
        data,
    )
    np.testing.assert_allclose(
        secure.estimator_.coef_, plain.estimator_.coef_, rtol=0, atol=1e-12
    )
    np.testing.assert_allclose(
        secure.estimator_.intercept_, plain.estimator_.intercept_, rtol=0, atol=1e-12
    )
    np.testing.assert_array_equal(secure.predict(data.data), plain.predict(data.data))
    np.testing.assert_array_equal(secure.class_prior_, plain.class_prior_)
    sizes = dict(zip(plain.clients_.tolist(), plain.client_sizes_, strict=True))
    for round_, summary in secure.federated_metrics_.items():
        records = [r for r in plain.history_ if r["round"] == round_]
        expected = np.average(
            [r["train_loss"] for r in records],
            weights=[sizes[r["client"]] for r in records],
        )
        assert summary["train_n_clients"] == 5
        assert summary["train_loss"] == pytest.approx(expected, rel=1e-12)
    # The history says each client's update was summed, not its loss or norm.
    assert {tuple(sorted(r)) for r in secure.history_} == {
        ("client", "round", "summed")
    }


class _FailingOnce(FairPenaltyLogisticRegression):
    """Fails one client's training (by its seed) in one round."""

    def __init__(
        self, fairness=1.0, failing_seed=None, failing_fit=-1, random_state=None
    ):
        super().__init__(fairness=fairness, random_state=random_state)
        self.failing_seed = failing_seed
        self.failing_fit = failing_fit

    def train_epochs(self, *args, **kwargs):
        self.fits_ = getattr(self, "fits_", 0) + 1
        if self.random_state == self.failing_seed and self.fits_ == self.failing_fit:
            raise ArithmeticError("simulated failure")
        return super().train_epochs(*args, **kwargs)


@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg"])
def test_validation_metrics_are_summed_into_the_plain_means(data, strategy):
    # Each round's validation metrics: the plain fit's rows-weighted means
    # over the clients where they are defined, from sums; no median, and no
    # client's metrics in its record. Clients of unequal sizes, so that the
    # weights matter.
    keep = (data.clients != 0) | (np.arange(len(data.target)) % 4 == 0)
    data = Bunch(
        data=data.data[keep],
        target=data.target[keep],
        clients=data.clients[keep],
        sensitive={name: column[keep] for name, column in data.sensitive.items()},
    )
    plain = _fit(_fedida(strategy=strategy, validation_fraction=0.25), data)
    secure = _fit(
        _fedida(
            strategy=strategy,
            validation_fraction=0.25,
            secure_aggregation=SecureAggregation(),
        ),
        data,
    )
    np.testing.assert_array_equal(secure.predict(data.data), plain.predict(data.data))
    for round_, expected in plain.federated_metrics_.items():
        got = secure.federated_metrics_[round_]
        means = {k: v for k, v in expected.items() if not k.endswith("_median")}
        assert set(got) == set(means) | {"train_loss", "train_n_clients"}
        for name, value in means.items():
            assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-15, nan_ok=True)
    assert not any(k.startswith("val_") for r in secure.history_ for k in r)


def _failing(data, client, fit, **params):
    """A federation whose ``client`` fails its ``fit``-th training, under skip."""
    federation = FederatedEstimator(
        _FailingOnce(),
        n_rounds=1,
        local_epochs=1,
        max_update_norm=5.0,
        on_client_error="skip",
        random_state=0,
    )
    seeds = _fit(federation, data).client_seeds_
    return federation.set_params(
        estimator__failing_seed=int(seeds[client]),
        estimator__failing_fit=fit,
        **params,
    )


def test_a_client_that_fails_drops_out_of_the_round_sum(data):
    # Under "skip" a client failing in round 2 is a dropout of that round's
    # secure sum: the survivors' masks with it are removed, and the model is
    # the plain fit's that skipped it.
    federation = _failing(data, client=3, fit=2, n_rounds=3)
    plain = _fit(federation, data)
    secure = _fit(federation.set_params(secure_aggregation=SecureAggregation()), data)
    skipped = [(r["round"], r["client"]) for r in secure.history_ if "skipped" in r]
    assert skipped == [
        (r["round"], r["client"]) for r in plain.history_ if "skipped" in r
    ]
    # It fails again in round 3: it kept its estimator of before round 2.
    assert skipped == [(2, 3), (3, 3)]
    assert [secure.federated_metrics_[r]["train_n_clients"] for r in (1, 2, 3)] == [
        5,
        4,
        4,
    ]
    np.testing.assert_allclose(
        secure.estimator_.coef_, plain.estimator_.coef_, rtol=0, atol=1e-12
    )


def test_too_few_clients_for_the_threshold_reveal_no_sum(data):
    federation = _failing(
        data,
        client=0,
        fit=1,
        n_rounds=2,
        secure_aggregation=SecureAggregation(threshold=5),
    )
    with pytest.raises(
        RuntimeError,
        match=r"Only 4 of the 5 clients of the training round 1 finished; "
        r"secure_aggregation reveals a sum over threshold=5",
    ):
        _fit(federation, data)


def test_the_server_receives_no_clients_values(data, monkeypatch):
    # Every masked vector the server receives, against the client's own
    # encoded vector of that sum: no element equal, and no correlation over
    # the whole fit (the plain vectors are far from uniform on the ring).
    plain, received = {}, {}
    run = _secure_aggregation.secure_sum
    unmask = SecAggServer.unmask

    def sent(inputs, threshold, label, **kwargs):
        plain[label] = dict(inputs)
        return run(inputs, threshold, label, **kwargs)

    def seen(self, masked, shares, label):
        received[label] = dict(masked)
        return unmask(self, masked, shares, label)

    monkeypatch.setattr(_secure_aggregation, "secure_sum", sent)
    monkeypatch.setattr(SecAggServer, "unmask", seen)
    _fit(_fedida(secure_aggregation=SecureAggregation()), data)
    assert list(received) == [
        b"class counts",
        *(f"training round {r}".encode() for r in range(1, 5)),
        b"decision counts",
    ]
    ours, theirs = [], []
    for label, masked in received.items():
        assert masked.keys() == plain[label].keys()
        for k, vector in masked.items():
            assert not np.any(vector == plain[label][k])
            ours.append(plain[label][k].view(np.int64).astype(float))
            theirs.append(vector.view(np.int64).astype(float))
    ours, theirs = np.concatenate(ours), np.concatenate(theirs)
    # Independent draws: the correlation's spread is 1 / sqrt(n); five of
    # them fail about one run in a million, a dependence far less often.
    assert abs(np.corrcoef(ours, theirs)[0, 1]) < 5 / np.sqrt(ours.size)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"strategy": "central"}, "secure_aggregation with strategy='central'"),
        ({"strategy": "local"}, "secure_aggregation with strategy='local'"),
        ({"aggregation": "median"}, "aggregation='median'"),
        ({"aggregation": FairFed()}, "aggregation=FairFed"),
        ({"max_update_norm": None}, "needs max_update_norm, a float"),
        ({"max_update_norm": "median"}, "needs max_update_norm, a float"),
        (
            {"max_update_norm": None, "dp": DifferentialPrivacy(noise_seed=0)},
            "needs max_update_norm",
        ),
        ({"dp": DifferentialPrivacy(noise_seed=0)}, "with dp"),
        ({"prior_aggregation": "median"}, "prior_aggregation='median'"),
        ({"warm_start": True}, "with warm_start"),
        (
            {
                "estimator": FairPenaltyLogisticRegression(
                    constraints="demographic_parity"
                )
            },
            "with rate constraints",
        ),
        ({"estimator": FairHistGradientBoostingClassifier()}, "with boosted trees"),
        ({"secure_aggregation": SecureAggregation(threshold=0)}, "threshold must be"),
        ({"secure_aggregation": SecureAggregation(threshold=1.5)}, "threshold must be"),
        (
            {"secure_aggregation": SecureAggregation(threshold=True)},
            "threshold must be",
        ),
        ({"secure_aggregation": SecureAggregation(threshold=9)}, "threshold=9 exceeds"),
        (
            {"secure_aggregation": SecureAggregation(neighbours=3)},
            "neighbours must be None or an even number",
        ),
    ],
)
def test_what_secure_aggregation_does_not_cover_is_refused_by_name(data, params, match):
    federation = _fedida(secure_aggregation=SecureAggregation()).set_params(**params)
    with pytest.raises(ValueError, match=match):
        _fit(federation, data)


def test_sample_weight_and_flower_are_refused_by_name(data):
    federation = _fedida(secure_aggregation=SecureAggregation())
    with pytest.raises(ValueError, match="secure_aggregation with sample_weight"):
        _fit(federation, data, sample_weight=np.ones(len(data.target)))
    with pytest.raises(ValueError, match="secure_aggregation on Flower"):
        run_in_process(
            make_server_app(federation),
            make_client_app(federation, partition_loader(data)),
            num_partitions=5,
        )


def test_group_thresholds_around_a_secure_federation_are_refused(data):
    # Their per-client histograms would reach the server in the clear.
    from skfedida.postprocessing import FederatedThresholdOptimizer

    for prefit in (False, True):
        federation = _fedida(secure_aggregation=SecureAggregation())
        if prefit:
            federation = _fit(federation, data)
        with pytest.raises(ValueError, match="around a federation with secure_agg"):
            FederatedThresholdOptimizer(federation, prefit=prefit).fit(
                data.data,
                data.target,
                clients=data.clients,
                sensitive_features=data.sensitive,
            )


def test_a_secure_fit_keeps_no_clients_model(data):
    # The clients' own models stay with them: nothing to continue from.
    fitted = _fit(_fedida(secure_aggregation=SecureAggregation()), data)
    assert fitted._federation_state["models"] is None
    with pytest.raises(ValueError, match="keeps no client's model"):
        fitted.set_params(secure_aggregation=None, warm_start=True).fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )


@pytest.mark.parametrize(
    "params, match",
    [
        ({"client_fraction": 0.2}, r"client_fraction=0\.2: each round selects 1 of"),
        (
            {"client_fraction": 0.4, "secure_aggregation": SecureAggregation(3)},
            "threshold=3 exceeds the 2 clients of a round",
        ),
        ({"secure_aggregation": SecureAggregation(1)}, r"threshold=1\.0\)"),
    ],
)
def test_rounds_that_could_never_reveal_a_sum_are_refused_before_training(
    data, params, match, monkeypatch
):
    trained = []
    monkeypatch.setattr(
        FairPenaltyLogisticRegression,
        "train_epochs",
        lambda *args, **kwargs: trained.append(1),
    )
    federation = _fedida(secure_aggregation=SecureAggregation()).set_params(**params)
    with pytest.raises(ValueError, match=match):
        _fit(federation, data)
    assert trained == []


@pytest.mark.parametrize("bound", [64.0, 77.7, 100.0, 300.0])
def test_a_clipped_update_stays_within_its_encoding_bound(bound):
    # One coordinate carrying the whole norm: g + u * scale - g rounds a
    # hair past the bound, which the encoding refused (a review's finding).
    rng = np.random.default_rng(0)
    for _ in range(2000):
        g = [rng.normal(0, 1e3, size=1)]
        p = [g[0] + rng.normal(0, 1e3, size=1)]
        vector = _secure_aggregation.training_contribution(p, 1, 0.5, g, bound)
        assert np.abs(vector).max() <= _secure_aggregation.contribution_bound(1, bound)


def test_the_threshold_counts_the_rounds_clients():
    assert SecureAggregation().threshold_for(5) == 3
    assert SecureAggregation(threshold=1.0).threshold_for(5) == 5
    assert SecureAggregation(threshold=0.01).threshold_for(5) == 2
    assert SecureAggregation(threshold=4).threshold_for(5) == 4
    with pytest.raises(ValueError, match="at least 2 clients"):
        SecureAggregation().threshold_for(1)
