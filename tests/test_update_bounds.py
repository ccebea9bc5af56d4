"""Bounded updates: norm clipping, client-level DP, and metrics as claims.

The rows of issue 18's table that pass every reply check by design (finite,
right shape: parameters times 1e6 or sign-flipped) and the evaluation
metrics a client can invent, rerun with a client that rewrites its replies
(a wrapper around the real ClientApp); plus the arithmetic of clipping and
of the private mean against Flower's, and the accounting against Flower's
accountant.
"""

import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr")
pytest.importorskip("dp_accounting")

from _helpers import RewritingClientApp, partition_loader
from flwr.app import ArrayRecord
from flwr.supercore.differential_privacy import compute_clip_model_update
from sklearn.base import clone
from sklearn.utils._param_validation import InvalidParameterError

from skfedida.datasets import make_federated_classification
from skfedida.federated import DifferentialPrivacy, FederatedEstimator, TrimmedMean
from skfedida.federated._aggregation import WeightedMean
from skfedida.federated._privacy import bounded_round, update_norms
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.linear_model import FairPenaltyLogisticRegression

N_CLIENTS = 5


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(1500, n_clients=N_CLIENTS, random_state=0)


def _federation(**options):
    options = {"n_rounds": 4, "local_epochs": 1, "random_state": 0, **options}
    return FederatedEstimator(FairPenaltyLogisticRegression(fairness=1.0), **options)


def _fit(federation, data):
    return federation.fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )


def _arrays(change):
    def rewrite(content):
        arrays = content["arrays"].to_numpy_ndarrays()
        content["arrays"] = ArrayRecord([np.asarray(a) for a in change(arrays)])

    return rewrite


ATTACKS = {
    "parameters x 1e6": _arrays(lambda a: [x * 1e6 for x in a]),
    "sign-flipped parameters": _arrays(lambda a: [-x for x in a]),
}


def _run(federation, data, rewrite=None, **rewriting):
    client_app = make_client_app(federation, partition_loader(data))
    if rewrite is not None:
        client_app = RewritingClientApp(client_app, rewrite, **rewriting)
    return run_in_process(
        make_server_app(federation), client_app, num_partitions=N_CLIENTS
    )


def _coef(fitted):
    return np.r_[fitted.estimator_.coef_.ravel(), fitted.estimator_.intercept_]


@pytest.fixture(scope="module")
def clean(data):
    return _coef(_run(_federation(), data))


def _moved(coef, reference):
    return np.linalg.norm(coef - reference) / np.linalg.norm(reference)


@pytest.fixture(scope="module")
def plain_mean_moved(data, clean):
    """How far each attack moves the plain mean's model (relative to clean)."""
    return {
        attack: _moved(_coef(_run(_federation(), data, rewrite)), clean)
        for attack, rewrite in ATTACKS.items()
    }


def test_a_hostile_client_takes_over_the_plain_mean(plain_mean_moved):
    # The checks the bounded options are measured against can fail: with
    # the plain mean one client of five takes the model over (x 1e6) or
    # drags it far from the clean one (sign flip).
    assert plain_mean_moved["parameters x 1e6"] > 1e6
    assert plain_mean_moved["sign-flipped parameters"] > 0.5


@pytest.mark.parametrize("attack", list(ATTACKS))
@pytest.mark.parametrize(
    "options, bound",
    [
        ({"aggregation": "median"}, 0.2),
        ({"aggregation": TrimmedMean(beta=0.2)}, 0.2),
        # Clipping bounds how far, not which way: a sign-flipped update of
        # the median norm still pulls, for half the plain mean's effect.
        ({"max_update_norm": "median"}, None),
    ],
    ids=["median", "trimmed-mean", "median-norm-clipping"],
)
def test_bounded_options_keep_a_hostile_client_from_taking_over(
    data, clean, plain_mean_moved, attack, options, bound
):
    federation = _federation(**options)
    honest = _coef(_run(federation, data))
    attacked_fit = _run(federation, data, ATTACKS[attack])
    attacked = _coef(attacked_fit)
    moved = _moved(attacked, honest)
    if bound is None:
        bound = 0.05 if attack == "parameters x 1e6" else 0.6
        bound *= min(1.0, plain_mean_moved[attack])
    assert moved < bound
    # The honest run of a bounded option stays near the plain mean's.
    assert _moved(honest, clean) < 0.15
    # The server's own measure names the client: its update is the largest.
    for round_ in range(1, 5):
        norms = {
            r["client"]: r["update_norm"]
            for r in attacked_fit.history_
            if r["round"] == round_
        }
        assert max(norms, key=norms.get) == 2


def test_clipping_is_flowers_arithmetic():
    rng = np.random.default_rng(0)
    global_parameters = [rng.normal(size=(1, 7)), rng.normal(size=1)]
    clients = [[rng.normal(size=(1, 7)) * s, rng.normal(size=1)] for s in (0.1, 3, 9)]
    for bound in (0.5, 2.0, 100.0):
        ours, norms = bounded_round(
            lambda lists, w: lists,
            clients,
            [1, 1, 1],
            global_parameters=global_parameters,
            max_update_norm=bound,
        )
        for client, clipped in zip(clients, ours, strict=True):
            theirs = [a.copy() for a in client]
            compute_clip_model_update(theirs, global_parameters, bound)
            for p, q in zip(clipped, theirs, strict=True):
                assert p.tobytes() == q.tobytes()
            pairs = zip(clipped, global_parameters, strict=True)
            update = np.concatenate([(p - g).ravel() for p, g in pairs])
            assert np.linalg.norm(update) <= bound * (1 + 1e-12)
        assert norms == update_norms(clients, global_parameters)


def test_median_norm_clips_to_the_rounds_median_norm():
    g = [np.zeros(3)]
    clients = [[np.array([1.0, 0, 0])], [np.array([0, 2.0, 0])], [np.array([0, 0, 9])]]
    (clipped, norms) = bounded_round(
        lambda lists, w: lists,
        clients,
        [1, 1, 1],
        global_parameters=g,
        max_update_norm="median",
    )
    assert norms == [1.0, 2.0, 9.0]
    np.testing.assert_allclose([np.linalg.norm(c[0]) for c in clipped], [1, 2, 2])
    # A zero update is left alone (Flower would divide by zero).
    (same, _) = bounded_round(
        lambda lists, w: lists, [g], [1], global_parameters=g, max_update_norm=1.0
    )
    np.testing.assert_array_equal(same[0][0], g[0])


def test_private_mean_adds_noise_of_the_stated_scale_over_the_selected_clients():
    g = [np.full(200_000, 0.5)]
    dp = DifferentialPrivacy(noise_multiplier=2.0, clipping_norm=0.1)
    # Two replies of three selected (one skipped): the sum is divided by 3.
    clients = [[g[0] + 1.0], [g[0] - 1.0]]
    result, _ = bounded_round(
        None,
        clients,
        [10, 1000],
        global_parameters=g,
        dp=dp,
        n_selected=3,
        noise_rng=np.random.default_rng(0),
    )
    step = result[0] - g[0]
    # The two clipped updates cancel: what is left is the noise / 3.
    assert np.std(step) == pytest.approx(2.0 * 0.1 / 3, rel=0.01)
    assert abs(np.mean(step)) < 1e-3
    # Clipped, not weighted by rows: one update alone moves every
    # coordinate by at most clipping_norm / n_selected in norm.
    result, _ = bounded_round(
        None,
        [[g[0] + 1.0]],
        [5],
        global_parameters=g,
        dp=DifferentialPrivacy(noise_multiplier=1e-12, clipping_norm=0.1),
        n_selected=3,
        noise_rng=np.random.default_rng(0),
    )
    assert np.linalg.norm(result[0] - g[0]) == pytest.approx(0.1 / 3, rel=1e-6)


def test_epsilon_is_flowers_rdp_accounting():
    from flwr.supercore.privacy_accounting import (
        GaussianPrivacyEvent,
        NeighboringRelation,
        PrivacyConfig,
        SamplingMethod,
    )
    from flwr.supercore.privacy_accounting.rdp_accountant import RdpAccountant

    for z, rounds, delta in [(1.0, 10, 1e-5), (0.5, 3, 1e-3), (4.0, 50, 1e-6)]:
        flower = RdpAccountant(
            PrivacyConfig(
                delta,
                N_CLIENTS,
                NeighboringRelation.ADD_OR_REMOVE_ONE,
                SamplingMethod.NO_AMPLIFICATION,
            )
        )
        flower.compose(GaussianPrivacyEvent(z, N_CLIENTS, N_CLIENTS), rounds)
        dp = DifferentialPrivacy(noise_multiplier=z, target_delta=delta)
        assert dp.epsilon(rounds) == pytest.approx(
            flower.get_privacy_spent().epsilon, rel=1e-12
        )
        # Below the textbook RDP-to-DP conversion of the Gaussian mechanism
        # (Mironov 2017): eps(alpha) = T alpha / (2 z^2), plus log(1/delta) /
        # (alpha - 1).
        alphas = np.linspace(1.01, 500, 200_000)
        textbook = np.min(
            rounds * alphas / (2 * z**2) + np.log(1 / delta) / (alphas - 1)
        )
        assert dp.epsilon(rounds) <= textbook
        assert dp.epsilon(rounds) >= 0.8 * textbook
    assert DifferentialPrivacy().epsilon(0) == 0.0


def test_private_fits_report_privacy_and_reproduce_only_with_a_noise_seed(data):
    dp = DifferentialPrivacy(noise_multiplier=1.0, clipping_norm=0.1, noise_seed=3)
    fits = [_fit(_federation(dp=dp, n_jobs=n_jobs), data) for n_jobs in (None, 2)]
    np.testing.assert_array_equal(_coef(fits[0]), _coef(fits[1]))
    other = _fit(_federation(dp=clone(dp).set_params(noise_seed=4)), data)
    assert not np.array_equal(_coef(other), _coef(fits[0]))
    privacy = fits[0].privacy_
    assert privacy.n_releases == 4 and privacy.delta == 1e-5
    assert privacy.epsilon == pytest.approx(dp.epsilon(4))
    assert np.all(np.diff(privacy.epsilon_by_round) > 0)
    assert privacy.epsilon_by_round[-1] == privacy.epsilon
    # Under dp the server keeps no exact per-client update norms.
    assert not any("update_norm" in r for r in fits[0].history_)
    # Resuming spends more: epsilon is for every round released so far.
    resumed = _fit(fits[0].set_params(warm_start=True), data)
    assert resumed.privacy_.n_releases == 8
    assert resumed.privacy_.epsilon == pytest.approx(dp.epsilon(8))
    # Without dp there is nothing to report.
    assert _fit(_federation(), data).privacy_ is None


def test_the_private_noise_is_a_secret_not_a_function_of_random_state(data):
    # random_state (and so client_seeds_) is known to every client; the
    # default noise must not be drawn from it, or a client could subtract it.
    dp = DifferentialPrivacy(noise_multiplier=1.0, clipping_norm=0.1)
    first, second = (_coef(_fit(_federation(dp=dp), data)) for _ in range(2))
    assert not np.array_equal(first, second)


@pytest.mark.parametrize(
    "before, after",
    [
        (None, DifferentialPrivacy(noise_seed=0)),
        (DifferentialPrivacy(0.3, noise_seed=0), DifferentialPrivacy(10.0)),
        (DifferentialPrivacy(noise_seed=0), None),
    ],
)
def test_warm_start_cannot_change_the_privacy_mechanism(data, before, after):
    fitted = _fit(_federation(dp=before, n_rounds=2), data)
    fitted.set_params(warm_start=True, dp=after)
    with pytest.raises(ValueError, match="released with dp="):
        _fit(fitted, data)


def test_dp_parameters_are_nested_parameters(data):
    federation = _federation(dp=DifferentialPrivacy())
    federation.set_params(dp__noise_multiplier=2.0)
    assert federation.get_params()["dp__noise_multiplier"] == 2.0
    assert clone(federation).dp.noise_multiplier == 2.0
    with pytest.raises(ValueError, match="n_rounds"):
        DifferentialPrivacy().epsilon(2.7)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"dp": DifferentialPrivacy(noise_multiplier=0)}, "noise_multiplier"),
        ({"dp": DifferentialPrivacy(clipping_norm=-1.0)}, "clipping_norm"),
        ({"dp": DifferentialPrivacy(target_delta=1.0)}, "target_delta"),
        ({"dp": DifferentialPrivacy(), "aggregation": "median"}, "aggregation='mean'"),
        ({"dp": DifferentialPrivacy(), "max_update_norm": 1.0}, "max_update_norm"),
        ({"dp": DifferentialPrivacy(), "strategy": "local"}, "strategy='local'"),
        ({"dp": DifferentialPrivacy(noise_seed=-1)}, "noise_seed"),
        ({"max_update_norm": 1.0, "strategy": "local"}, "strategy='local'"),
        ({"max_update_norm": "median", "strategy": "central"}, "strategy='central'"),
    ],
)
def test_options_that_cannot_hold_are_refused_before_training(data, options, message):
    with pytest.raises(ValueError, match=message):
        _fit(_federation(**options), data)
    if "strategy" not in options:
        # The ServerApp refuses them when it is built.
        with pytest.raises(ValueError, match=message):
            make_server_app(_federation(**options))


@pytest.mark.parametrize("value", [0.0, -1.0, "mean", np.inf, True])
def test_max_update_norm_is_validated(data, value):
    with pytest.raises((InvalidParameterError, ValueError), match="max_update_norm"):
        _fit(_federation(max_update_norm=value), data)


def test_dp_without_its_accounting_package_is_a_clear_error(data, monkeypatch):
    monkeypatch.setitem(sys.modules, "dp_accounting", None)
    with pytest.raises(ImportError, match=r"skfedida\[dp\]"):
        _fit(_federation(dp=DifferentialPrivacy()), data)


def _lying_metrics(content):
    content["metrics"]["val_roc_auc"] = 1.0
    content["metrics"]["val_dpd"] = 0.0


def test_metrics_are_claims_and_the_median_is_not_moved_by_one_liar(data):
    federation = _federation(validation_fraction=0.25)
    honest = _run(federation, data)
    lied = _run(federation, data, _lying_metrics, message_type="evaluate")
    for round_, summary in lied.federated_metrics_.items():
        records = [r for r in lied.history_ if r["round"] == round_]
        # Which client reported what: the lie is recorded under client 2.
        liar = next(r for r in records if r["client"] == 2)
        assert liar["val_roc_auc"] == 1.0 and liar["val_dpd"] == 0.0
        others = [r for r in records if r["client"] != 2]
        for key in ("val_roc_auc", "val_dpd"):
            values = [r[key] for r in others]
            assert min(values) <= summary[f"{key}_median"] <= max(values)
            # The weighted mean moves with the liar; the median stays near
            # the honest federation's.
            truth = honest.federated_metrics_[round_][f"{key}_median"]
            assert (
                abs(summary[f"{key}_median"] - truth)
                <= abs(summary[key] - honest.federated_metrics_[round_][key]) + 1e-12
            )
        assert summary["n_clients"] == N_CLIENTS


def test_weighted_mean_in_bounded_round_is_the_aggregators():
    # Without a bound, bounded_round is the aggregator itself (same bits).
    rng = np.random.default_rng(1)
    g = [rng.normal(size=4)]
    lists = [[rng.normal(size=4)] for _ in range(3)]
    ours, _ = bounded_round(
        WeightedMean().aggregate, lists, [3, 5, 7], global_parameters=g
    )
    assert ours[0].tobytes() == WeightedMean().aggregate(lists, [3, 5, 7])[0].tobytes()


def _scaling_client_2(monkeypatch, data):
    """In-process: client 2's parameter protocol returns its parameters x 1e6."""
    from skfedida.federated import _client

    seeds = _fit(_federation(n_rounds=1), data).client_seeds_
    real = _client.parameter_arrays

    def scaled_for_client_2(estimator):
        arrays = real(estimator)
        if estimator.random_state == int(seeds[2]):
            arrays = [a * 1e6 for a in arrays]
        return arrays

    monkeypatch.setattr(_client, "parameter_arrays", scaled_for_client_2)


def test_an_unbounded_outlying_update_warns_naming_its_client(data, monkeypatch):
    from skfedida.exceptions import OutlyingUpdateWarning

    with pytest.warns(OutlyingUpdateWarning, match=r"client 2 in round\(s\) \[1, 2"):
        _run(_federation(), data, ATTACKS["parameters x 1e6"])
    _scaling_client_2(monkeypatch, data)
    with pytest.warns(OutlyingUpdateWarning, match=r"client 2 in round\(s\) \[1,"):
        _fit(_federation(), data)
    # Bounded, the same client's update moves nothing far: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlyingUpdateWarning)
        for options in (
            {"aggregation": "trimmed_mean"},
            {"aggregation": "median"},
            {"max_update_norm": 1.0},
        ):
            _fit(_federation(**options), data)
        # Flower's robust strategies as the aggregation bound it too.
        flwr_strategies = pytest.importorskip("flwr.serverapp.strategy")
        for strategy in (flwr_strategies.FedMedian(), flwr_strategies.Krum()):
            _fit(_federation(aggregation=strategy), data)


def test_honest_federations_do_not_warn_about_their_updates(data):
    from skfedida.exceptions import OutlyingUpdateWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlyingUpdateWarning)
        _fit(_federation(), data)
        _run(_federation(), data)
        # Sign flips have ordinary norms: nothing to see for this check.
        _run(_federation(), data, ATTACKS["sign-flipped parameters"])


def test_seeded_noise_is_fresh_every_round(data):
    # Noise reused across rounds would cancel in differences of successive
    # global models (and average out nothing): each round draws its own.
    # With updates clipped to 1e-9 and noise of standard deviation 1e-3,
    # each round's step of the global model is its noise over 5 clients.
    dp = DifferentialPrivacy(noise_multiplier=1e6, clipping_norm=1e-9, noise_seed=7)
    coefs = [_coef(_fit(_federation(dp=dp, n_rounds=r), data)) for r in (1, 2, 3)]
    second, third = coefs[1] - coefs[0], coefs[2] - coefs[1]
    assert np.std(np.r_[second, third]) > 1e-5
    # Steps of independent noise: they differ by about the noise's own scale.
    assert np.linalg.norm(third - second) > 0.1 * np.linalg.norm(second)
    # And the same seed gives the same noise again (reproducible).
    again = _coef(_fit(_federation(dp=dp, n_rounds=3), data))
    np.testing.assert_array_equal(again, coefs[2])


@pytest.mark.parametrize("clipping_norm", [0.05, 0.5, 3.0])
def test_epsilon_depends_on_the_noise_multiplier_not_the_clipping_norm(clipping_norm):
    # The Gaussian mechanism's privacy depends on the noise over the
    # sensitivity: noise of std z * C on a sum of updates clipped at C is the
    # same mechanism for every C. Epsilon is dp-accounting's for z alone.
    from dp_accounting import dp_event
    from dp_accounting.privacy_accountant import NeighboringRelation
    from dp_accounting.rdp import RdpAccountant

    for z, rounds, delta in [(1.0, 10, 1e-5), (0.6, 4, 1e-4)]:
        accountant = RdpAccountant(
            neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE
        )
        accountant.compose(dp_event.GaussianDpEvent(z), rounds)
        dp = DifferentialPrivacy(
            noise_multiplier=z, clipping_norm=clipping_norm, target_delta=delta
        )
        assert dp.epsilon(rounds) == pytest.approx(
            accountant.get_epsilon(delta), rel=1e-12
        )
        assert dp.spent(rounds).epsilon == dp.epsilon(rounds)


def test_a_target_delta_of_one_over_the_clients_is_refused(data):
    # delta = 1 / n_clients allows publishing one client's data outright
    # (the class's reasoning): refused at exactly the bound, not only above.
    at_bound = DifferentialPrivacy(target_delta=1 / N_CLIENTS, noise_seed=0)
    with pytest.raises(ValueError, match=r"target_delta=0.2 gives no guarantee"):
        _fit(_federation(dp=at_bound, n_rounds=1), data)
    below = DifferentialPrivacy(target_delta=0.99 / N_CLIENTS, noise_seed=0)
    assert _fit(_federation(dp=below, n_rounds=1), data).privacy_.delta < 0.2
