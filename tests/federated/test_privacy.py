"""federated/_privacy.py's own functions, beside test_update_bounds.py.

test_update_bounds.py holds clipping and the private mean against Flower's
arithmetic, the accounting against Flower's accountant and the options as a
fit refuses them. Here: the round's noise stream, the privacy report, the
target-delta rule, the update norms over several arrays, which federations
count as bounded, and the option checks called directly.
"""

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

pytest.importorskip("dp_accounting")

from skfedida.federated import DifferentialPrivacy, TrimmedMean
from skfedida.federated._aggregation import FairFed, Median, WeightedMean
from skfedida.federated._privacy import (
    bounded_round,
    check_target_delta,
    check_update_bound,
    noise_stream,
    privacy_report,
    update_norms,
    updates_bounded,
)

# -- noise_stream ---------------------------------------------------------------------


def _draw(rng):
    return rng.normal(size=8).tobytes()


def test_no_dp_has_no_noise_stream():
    assert noise_stream(None, 1) is None


def test_a_seeded_noise_stream_is_the_rounds_own_and_reproducible():
    dp = DifferentialPrivacy(noise_seed=5)
    assert _draw(noise_stream(dp, 3)) == _draw(noise_stream(dp, 3))
    # Another round, another seed: other noise (a stream re-used across
    # rounds would let the noise of two rounds cancel).
    draws = {_draw(noise_stream(dp, r)) for r in (1, 2, 3)}
    assert len(draws) == 3
    other = DifferentialPrivacy(noise_seed=6)
    assert _draw(noise_stream(other, 3)) != _draw(noise_stream(dp, 3))


def test_the_seeded_stream_is_not_numpys_plain_seed():
    # Seeded with (noise_seed, round, a constant): a client that knows the
    # seed's plain stream (default_rng(seed), a common test seed) does not
    # hold the noise.
    dp = DifferentialPrivacy(noise_seed=5)
    assert _draw(noise_stream(dp, 1)) != _draw(np.random.default_rng(5))
    assert _draw(noise_stream(dp, 1)) != _draw(np.random.default_rng([5, 1]))


def test_an_unseeded_noise_stream_differs_every_time():
    dp = DifferentialPrivacy()
    assert _draw(noise_stream(dp, 1)) != _draw(noise_stream(dp, 1))


# -- privacy_report and spent ---------------------------------------------------------


def test_no_dp_reports_no_privacy():
    assert privacy_report(None, 10) is None


def test_the_privacy_report_is_what_the_rounds_spent():
    dp = DifferentialPrivacy(noise_multiplier=2.0, clipping_norm=0.3)
    report = privacy_report(dp, 3)
    assert report.n_releases == 3
    assert report.epsilon == dp.epsilon(3) == report.epsilon_by_round[-1]
    np.testing.assert_array_equal(
        report.epsilon_by_round, [dp.epsilon(r) for r in (1, 2, 3)]
    )
    assert (report.noise_multiplier, report.clipping_norm) == (2.0, 0.3)
    assert report.delta == 1e-5
    assert "no amplification" in report.accounting


def test_no_released_round_spends_nothing():
    report = privacy_report(DifferentialPrivacy(), 0)
    assert report.epsilon == 0.0 and report.n_releases == 0
    assert report.epsilon_by_round.shape == (0,)


def test_more_noise_spends_less():
    assert DifferentialPrivacy(noise_multiplier=4.0).epsilon(5) < (
        DifferentialPrivacy(noise_multiplier=1.0).epsilon(5)
    )


# -- check_target_delta ----------------------------------------------------------------


def test_no_dp_needs_no_delta():
    check_target_delta(None, 1)


@pytest.mark.parametrize("delta, n_clients", [(0.1, 10), (0.5, 2), (0.3, 4)])
def test_a_delta_of_one_over_the_clients_or_more_is_refused(delta, n_clients):
    with pytest.raises(
        ValueError, match=rf"target_delta={delta!r} gives no guarantee for {n_clients}"
    ):
        check_target_delta(DifferentialPrivacy(target_delta=delta), n_clients)


def test_a_delta_below_one_over_the_clients_passes():
    check_target_delta(DifferentialPrivacy(target_delta=0.099), 10)
    check_target_delta(DifferentialPrivacy(), 1000)


@pytest.mark.parametrize(
    "options, name",
    [
        ({"noise_multiplier": True}, "noise_multiplier"),
        ({"noise_multiplier": np.inf}, "noise_multiplier"),
        ({"clipping_norm": float("nan")}, "clipping_norm"),
        ({"clipping_norm": "1"}, "clipping_norm"),
        ({"target_delta": 0.0}, "target_delta"),
        ({"target_delta": True}, "target_delta"),
        ({"noise_seed": True}, "noise_seed"),
        ({"noise_seed": 1.0}, "noise_seed"),
    ],
)
def test_check_target_delta_also_checks_every_option(options, name):
    with pytest.raises(ValueError, match=f"DifferentialPrivacy's {name}"):
        check_target_delta(DifferentialPrivacy(**options), 10)


# -- update_norms and bounded_round ----------------------------------------------------

arrays = hnp.arrays(
    np.float64,
    st.integers(1, 4),
    elements=st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(arrays, arrays), min_size=1, max_size=3))
def test_an_update_norm_takes_every_array_as_one_vector(pairs):
    params = [p for p, _ in pairs]
    global_parameters = [np.zeros_like(p) + g[:1] for p, g in pairs]
    (norm,) = update_norms([params], global_parameters)
    flat = np.concatenate(
        [(p - g).ravel() for p, g in zip(params, global_parameters, strict=True)]
    )
    assert norm == pytest.approx(np.linalg.norm(flat), rel=1e-12, abs=1e-12)


def test_a_client_with_a_missing_array_is_not_measured_on_the_rest():
    with pytest.raises(ValueError):
        update_norms([[np.ones(2)]], [np.zeros(2), np.zeros(1)])


def test_a_private_round_keeps_no_norms_and_ignores_the_aggregator():
    g = [np.zeros(3)]
    dp = DifferentialPrivacy(noise_multiplier=1.0, noise_seed=0)

    def aggregate(parameter_lists, weights):
        raise AssertionError("dp computes its own mean")

    result, norms = bounded_round(
        aggregate,
        [[np.ones(3)]],
        [1],
        global_parameters=g,
        dp=dp,
        n_selected=1,
        noise_rng=noise_stream(dp, 1),
    )
    assert norms is None
    assert result[0].shape == (3,)


def test_an_unbounded_round_passes_the_replies_through_and_measures_them():
    g = [np.zeros(2)]
    lists = [[np.array([3.0, 4.0])], [np.array([0.0, 1.0])]]
    seen = []
    result, norms = bounded_round(
        lambda p, w: seen.append((p, w)) or "aggregated",
        lists,
        [2, 5],
        global_parameters=g,
    )
    assert result == "aggregated" and norms == [5.0, 1.0]
    assert seen[0][0] is lists and seen[0][1] == [2, 5]


# -- updates_bounded and check_update_bound --------------------------------------------


@pytest.mark.parametrize(
    "options, aggregator, bounded",
    [
        ({}, WeightedMean(), False),
        ({}, FairFed(), False),
        ({"max_update_norm": 1.0}, WeightedMean(), True),
        ({"max_update_norm": "median"}, WeightedMean(), True),
        ({"dp": DifferentialPrivacy()}, WeightedMean(), True),
        ({}, Median(), True),
        ({}, TrimmedMean(), True),
    ],
)
def test_which_federations_bound_one_clients_update(options, aggregator, bounded):
    # What updates_bounded reads of a federation (its aggregator is a
    # property of the fitted options).
    federation = SimpleNamespace(
        max_update_norm=options.get("max_update_norm"),
        dp=options.get("dp"),
        _aggregator=aggregator,
    )
    assert updates_bounded(federation) is bounded


def _check(max_update_norm=None, dp=None, strategy="fedavg", aggregator=None):
    check_update_bound(
        max_update_norm,
        dp,
        strategy=strategy,
        aggregator=WeightedMean() if aggregator is None else aggregator,
    )


@pytest.mark.parametrize("bound", [None, 0.5, 3, "median"])
@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg"])
def test_a_bound_of_communicating_strategies_passes(bound, strategy):
    _check(bound, strategy=strategy)


@pytest.mark.parametrize("bound", ["mean", "", float("nan"), -0.0, False, [1.0]])
def test_a_bound_that_is_not_a_positive_number_or_median_is_refused(bound):
    with pytest.raises(ValueError, match="a number > 0, 'median' or None"):
        _check(bound)


def test_dp_must_be_a_differential_privacy_object():
    with pytest.raises(ValueError, match="dp must be a DifferentialPrivacy object"):
        _check(dp={"noise_multiplier": 1.0})


@pytest.mark.parametrize("strategy", ["local", "central"])
def test_dp_needs_a_strategy_that_sends_updates(strategy):
    with pytest.raises(ValueError, match=f"strategy={strategy!r}"):
        _check(dp=DifferentialPrivacy(), strategy=strategy)


@pytest.mark.parametrize("aggregator", [Median(), FairFed(), TrimmedMean()])
def test_dp_refuses_any_aggregator_but_the_mean(aggregator):
    with pytest.raises(ValueError, match="leave aggregation='mean'"):
        _check(dp=DifferentialPrivacy(), aggregator=aggregator)
    _check(dp=DifferentialPrivacy())
