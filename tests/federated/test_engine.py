"""RoundEngine's own rules, called directly (not through a whole federation).

The engine is what both backends call for a round's selection, failure
policy, aggregator context and bounded aggregation; these tests drive it with
hand-made outcomes and parameters, so a rule that drifts fails here with the
rule's name rather than as a different model at the end of a fit.
"""

import numpy as np
import pytest

from skfedida._gate._history import RoundHistory
from skfedida._gate._policy import Outcome
from skfedida.federated import DifferentialPrivacy, FairFed, QFedAvg
from skfedida.federated._aggregation import Median, WeightedMean
from skfedida.federated._client import selection_stream
from skfedida.federated._engine import RoundEngine
from skfedida.federated._privacy import bounded_round, noise_stream


def _engine(records=None, **options):
    """An engine over ``records`` (a list, or a RoundHistory kept by the test)."""
    options = {
        "strategy": "fedavg",
        "aggregator": WeightedMean(),
        "client_fraction": 1.0,
        "on_client_error": "skip",
        "max_update_norm": None,
        "dp": None,
        "records": records
        if isinstance(records, RoundHistory)
        else RoundHistory([] if records is None else records),
        "name": lambda k: f"Client {k!r}",
        **options,
    }
    return RoundEngine(**options)


def _state(rng):
    return rng.get_state()[1].tobytes(), rng.get_state()[2]


# -- select ------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["local", "central"])
def test_non_communicating_strategies_select_every_client_without_a_draw(strategy):
    # Local and Central train every client every round, whatever
    # client_fraction says; drawing anyway would shift every later draw.
    rng = selection_stream([7])
    before = _state(rng)
    selected = _engine(strategy=strategy, client_fraction=0.3).select(rng, 6)
    assert selected.tolist() == list(range(6))
    assert _state(rng) == before


def test_a_client_fraction_draws_once_on_the_selection_stream():
    rng = selection_stream([7])
    engine = _engine(client_fraction=0.5)
    first, second = engine.select(rng, 10), engine.select(rng, 10)
    # One draw of round(0.5 * 10) distinct clients per round, sorted, from
    # the same stream in turn (the other backend draws the same rounds).
    expected = np.random.RandomState(7)
    for selected in (first, second):
        drawn = np.sort(expected.choice(10, 5, replace=False))
        assert selected.tolist() == drawn.tolist()
    assert first.tolist() != second.tolist()


def test_every_client_taking_part_leaves_the_selection_stream_untouched():
    rng = selection_stream([3])
    before = _state(rng)
    assert _engine(client_fraction=1.0).select(rng, 4).tolist() == [0, 1, 2, 3]
    assert _state(rng) == before


def test_a_tiny_client_fraction_still_selects_one_client():
    selected = _engine(client_fraction=0.01).select(selection_stream([0]), 10)
    assert len(selected) == 1


# -- admit_training / admit_evaluation ----------------------------------------------


def test_raise_names_the_first_failed_client_and_chains_its_cause():
    first, second = ArithmeticError("first cause"), OSError("second cause")
    records = []
    engine = _engine(records, on_client_error="raise")
    outcomes = [Outcome(0), Outcome(2, "it broke", first), Outcome(1, "also", second)]
    with pytest.raises(
        RuntimeError, match=r"^Client 2 failed in round 3 \(training\): it broke"
    ) as info:
        engine.admit_training(3, outcomes, {0: 0.5})
    assert info.value.__cause__ is first
    # Nothing of the stopped round is recorded (no loss of a round never used).
    assert records == []


def test_skip_records_failures_without_a_loss_and_admits_the_others_in_order():
    records = []
    engine = _engine(records)
    outcomes = [Outcome(3), Outcome(1, "bad reply"), Outcome(0)]
    admitted = engine.admit_training(2, outcomes, {3: 0.25, 0: 0.75})
    assert admitted == [3, 0]
    # The skips are written first, then the losses in selection order: the
    # history's order on both backends.
    assert [r["client"] for r in records] == [1, 3, 0]
    assert records[0] == {
        "round": 2,
        "client": 1,
        "train_loss": None,
        "skipped": "bad reply",
    }
    assert records[1] == {"round": 2, "client": 3, "train_loss": 0.25}
    assert records[2] == {"round": 2, "client": 0, "train_loss": 0.75}


@pytest.mark.parametrize("policy", ["raise", "skip"])
def test_a_round_where_every_client_failed_raises_whatever_the_policy(policy):
    cause = ValueError("root")
    engine = _engine(on_client_error=policy)
    outcomes = [Outcome(1, "first problem", cause), Outcome(0, "second problem")]
    expected = (
        r"Client 1 failed in round 4"
        if policy == "raise"
        else r"Every selected client failed in round 4 \(training\); first: Client 1: "
        "first problem"
    )
    with pytest.raises(RuntimeError, match=expected) as info:
        engine.admit_training(4, outcomes, {})
    assert info.value.__cause__ is cause


def test_a_training_failure_is_said_the_same_on_both_backends():
    # D1 of issue 48: the in-process server named no round kind, Flower's
    # said "(training)"; the engine, which both call, now always says it.
    engine = _engine(on_client_error="raise")
    with pytest.raises(RuntimeError) as info:
        engine.admit_training(1, [Outcome(0, "x"), Outcome(1)], {1: 0.1})
    assert "failed in round 1 (training): x" in str(info.value)


def test_a_skipped_evaluation_is_recorded_as_evaluation_skipped_only():
    records = []
    history = RoundHistory(records)
    history.record(5, 0)["train_loss"] = 0.1  # what the round's training wrote
    engine = _engine(records=history)
    admitted = engine.admit_evaluation(5, [Outcome(0, "no metrics"), Outcome(1)])
    assert admitted == [1]
    mine = history.record(5, 0)
    # The training fields stay as training wrote them: an evaluation skip is
    # not a training skip.
    assert mine["evaluation_skipped"] == "no metrics"
    assert "skipped" not in mine and mine["train_loss"] == 0.1
    # Client 1's evaluation is used: nothing is written for it here.
    assert all(r["client"] != 1 for r in records)


def test_a_failed_evaluation_under_raise_says_it_was_the_evaluation():
    engine = _engine(on_client_error="raise")
    with pytest.raises(RuntimeError, match=r"round 2 \(evaluation\): gone"):
        engine.admit_evaluation(2, [Outcome(0), Outcome(1, "gone")])


# -- aggregator_context -------------------------------------------------------------


def test_fairfed_is_given_the_reports_the_clients_and_its_own_memory():
    memory = {"weights": {0: 1.0}}
    engine = _engine(aggregator=FairFed(), memory=memory)
    assert engine.reporting
    reports = [{"n": np.ones(2)}]
    context = engine.aggregator_context(
        clients=[0], reports=reports, global_parameters=[np.zeros(1)], losses=[0.3]
    )
    assert set(context) == {"reports", "clients", "memory"}
    assert context["reports"] is reports and context["clients"] == [0]
    # The very object kept across rounds (and warm starts): a copy would
    # forget FairFed's weights of the last round.
    assert context["memory"] is memory is engine.memory


def test_qfedavg_is_given_the_global_parameters_and_the_losses():
    engine = _engine(aggregator=QFedAvg())
    assert not engine.reporting
    g, losses = [np.zeros(2)], [0.1, 0.2]
    context = engine.aggregator_context(
        clients=[0, 1], reports=None, global_parameters=g, losses=losses
    )
    assert context == {"global_parameters": g, "losses": losses}


@pytest.mark.parametrize("aggregator", [WeightedMean(), Median()])
def test_plain_aggregators_are_given_nothing_more(aggregator):
    engine = _engine(aggregator=aggregator)
    assert not engine.reporting
    assert (
        engine.aggregator_context(
            clients=[0], reports=None, global_parameters=[np.zeros(1)], losses=[0.1]
        )
        == {}
    )


def test_a_new_engine_starts_with_empty_memory_of_its_own():
    first, second = _engine(), _engine()
    assert first.memory == {} and first.memory is not second.memory


# -- aggregate ----------------------------------------------------------------------

G = [np.zeros((1, 2)), np.zeros(1)]
UPDATES = [
    [np.array([[3.0, 4.0]]), np.array([0.0])],  # norm 5
    [np.array([[0.0, 0.0]]), np.array([1.0])],  # norm 1
]


def _collect(calls):
    def aggregate(parameter_lists, weights):
        calls.append((parameter_lists, weights))
        return WeightedMean().aggregate(parameter_lists, weights)

    return aggregate


def test_update_norms_go_into_the_admitted_clients_records():
    records = []
    engine = _engine(records)
    engine.aggregate(
        _collect([]),
        UPDATES,
        [1, 1],
        round_number=2,
        admitted=[4, 1],
        global_parameters=G,
        n_selected=2,
    )
    norms = {r["client"]: r["update_norm"] for r in records}
    # In the order admitted: client 4 sent the first update.
    assert norms == {4: pytest.approx(5.0), 1: pytest.approx(1.0)}
    assert {r["round"] for r in records} == {2}


def test_central_training_records_no_update_norms():
    records = []
    engine = _engine(records, strategy="central")
    result = engine.aggregate(
        _collect([]),
        UPDATES,
        [1, 1],
        round_number=1,
        admitted=[0, 1],
        global_parameters=G,
        n_selected=2,
    )
    assert records == []
    np.testing.assert_allclose(result[0], [[1.5, 2.0]])


def test_clipping_bounds_what_the_aggregator_sees_not_the_recorded_norms():
    records, calls = [], []
    engine = _engine(records, max_update_norm=2.0)
    engine.aggregate(
        _collect(calls),
        UPDATES,
        [3, 1],
        round_number=1,
        admitted=[0, 1],
        global_parameters=G,
        n_selected=2,
    )
    (seen, weights) = calls[0]
    assert weights == [3, 1]
    clipped = np.sqrt(sum(np.sum(a**2) for a in seen[0]))
    assert clipped == pytest.approx(2.0)
    np.testing.assert_array_equal(seen[1][1], [1.0])  # under the bound: unchanged
    assert [r["update_norm"] for r in records] == [pytest.approx(5.0), 1.0]


def test_private_rounds_use_their_own_noise_stream_and_record_no_norms():
    dp = DifferentialPrivacy(noise_multiplier=1.0, clipping_norm=1.0, noise_seed=11)
    records = []
    engine = _engine(records, dp=dp)

    def run(round_number, n_selected=3):
        return engine.aggregate(
            None,
            UPDATES,
            [10, 1],
            round_number=round_number,
            admitted=[0, 1],
            global_parameters=G,
            n_selected=n_selected,
        )

    for round_number in (1, 2):
        expected, _ = bounded_round(
            None,
            UPDATES,
            [10, 1],
            global_parameters=G,
            dp=dp,
            n_selected=3,
            noise_rng=noise_stream(dp, round_number),
        )
        for got, want in zip(run(round_number), expected, strict=True):
            assert got.tobytes() == want.tobytes()
    # Each round its own noise: round 2 does not repeat round 1's.
    assert run(1)[0].tobytes() != run(2)[0].tobytes()
    # The denominator is every selected client, not only those that replied.
    assert not np.allclose(run(1, n_selected=2)[0], run(1, n_selected=3)[0])
    assert records == []
