"""The reply gate's small helpers (``skfedida._replies``), called directly.

The failure policy, the "it is malformed" rule and the checks the Flower
ServerApp composes (a training reply with its FairFed report, histograms and
reports that name their own groups, the round's attribute names, the data's
description, the rows declared at discovery). The suites of the gate
(test_replies.py, test_reply_gate*.py) reach them through whole runs; here
each rule is held to its own statement.
"""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfedida._gate._checks import (
    Extremes,
    NoConsensus,
    range_problem,
    range_problems,
    read_reply,
    unless_malformed,
)
from skfedida._gate._ledger import ClientLedger
from skfedida._gate._model import training_round_problem
from skfedida._gate._policy import Outcome, ReplyGate, failure_policy
from skfedida._gate._rows import (
    attributes_consensus,
    data_description,
    description_consensus,
    discovery_problem,
    named_histogram_problem,
    named_report_claim_problem,
)

# -- failure_policy -------------------------------------------------------------------


def _policy(outcomes, on_client_error):
    skipped = []
    admitted = failure_policy(
        outcomes,
        on_client_error,
        one_failed=lambda k, reason: f"one {k} {reason}",
        every_failed=lambda k, reason: f"every {k} {reason}",
        skip=lambda k, reason: skipped.append((k, reason)),
    )
    return admitted, skipped


outcome_lists = st.lists(
    st.tuples(st.integers(0, 50), st.one_of(st.none(), st.sampled_from("abc"))),
    min_size=1,
    max_size=8,
    unique_by=lambda o: o[0],
)


@settings(max_examples=60, deadline=None)
@given(outcome_lists)
def test_skip_admits_the_usable_replies_in_order_and_skips_each_failure_once(pairs):
    outcomes = [Outcome(k, reason) for k, reason in pairs]
    failed = [(k, reason) for k, reason in pairs if reason is not None]
    if len(failed) == len(pairs):
        with pytest.raises(RuntimeError, match=f"^every {failed[0][0]} "):
            _policy(outcomes, "skip")
        return
    admitted, skipped = _policy(outcomes, "skip")
    assert admitted == [k for k, reason in pairs if reason is None]
    assert skipped == failed


@settings(max_examples=60, deadline=None)
@given(outcome_lists)
def test_raise_stops_at_the_first_failure_before_skipping_any(pairs):
    outcomes = [Outcome(k, reason) for k, reason in pairs]
    failed = [(k, reason) for k, reason in pairs if reason is not None]
    if not failed:
        assert _policy(outcomes, "raise") == ([k for k, _ in pairs], [])
        return
    skipped = []
    with pytest.raises(RuntimeError, match=f"^one {failed[0][0]} {failed[0][1]}$"):
        failure_policy(
            outcomes,
            "raise",
            one_failed=lambda k, reason: f"one {k} {reason}",
            every_failed=lambda k, reason: f"every {k} {reason}",
            skip=lambda k, reason: skipped.append(k),
        )
    assert skipped == []


def test_the_raised_error_is_chained_to_the_first_failures_cause():
    first, later = KeyError("first"), KeyError("later")
    outcomes = [Outcome(0), Outcome(1, "a", first), Outcome(2, "b", later)]
    with pytest.raises(RuntimeError) as info:
        _policy(outcomes, "raise")
    assert info.value.__cause__ is first
    with pytest.raises(RuntimeError) as info:
        _policy([Outcome(1, "a", first), Outcome(2, "b", later)], "skip")
    assert info.value.__cause__ is first


def test_the_gate_records_a_skipped_reply_with_its_stage_and_client_id():
    gate = ReplyGate("skip", client_id=lambda k: f"id-{k}")
    assert gate.admit("histogram query", [(0, "bad"), (1, None)]) == [1]
    assert gate.records == [
        {
            "stage": "histogram query",
            "client": "id-0",
            "skipped": "its reply cannot be used: bad",
        }
    ]
    with pytest.raises(RuntimeError, match=r"^Every client failed the initialisation"):
        gate.admit("initialisation", [(0, "bad"), (1, "worse")])


# -- read_reply / unless_malformed ---------------------------------------------------


@pytest.mark.parametrize(
    "error, name", [(KeyError("arrays"), "KeyError"), (TypeError("t"), "TypeError")]
)
def test_a_reply_that_cannot_be_read_is_called_malformed(error, name):
    def read():
        raise error

    value, problem = read_reply(read)
    assert value is None
    assert problem.startswith(f"it is malformed ({name}: ")
    assert unless_malformed(read) == problem


def test_a_readable_reply_gives_its_value_and_no_problem():
    assert read_reply(lambda: [1, 2]) == ([1, 2], None)
    # A check's own verdict passes through, a usable reply's None included.
    assert unless_malformed(lambda: "its loss is NaN") == "its loss is NaN"
    assert unless_malformed(lambda: None) is None


def test_the_servers_own_errors_are_not_blamed_on_the_reply():
    # Only what reading a reply raises (missing or mistyped fields) is the
    # client's problem; a bug of the server must stop the run as itself.
    def broken():
        raise RuntimeError("server bug")

    with pytest.raises(RuntimeError, match="server bug"):
        read_reply(broken)
    with pytest.raises(AttributeError):
        unless_malformed(lambda: None.missing)


# -- training_round_problem ------------------------------------------------------------

REFERENCE = [np.zeros((1, 2)), np.zeros(1)]
GOOD = [np.ones((1, 2)), np.ones(1)]


def _reporter(answer):
    calls = []

    def report():
        calls.append(1)
        return answer

    return report, calls


def test_the_report_is_checked_only_once_the_training_reply_passes():
    report, calls = _reporter("its report is wrong")
    problem = training_round_problem(
        GOOD, 10, float("nan"), reference=REFERENCE, declared_rows=10, report=report
    )
    assert "training loss of nan" in problem
    assert calls == []
    problem = training_round_problem(
        GOOD, 10, 0.5, reference=REFERENCE, declared_rows=10, report=report
    )
    assert problem == "its report is wrong" and calls == [1]


def test_a_good_training_reply_without_a_report_has_no_problem():
    assert (
        training_round_problem(GOOD, 10, 0.5, reference=REFERENCE, declared_rows=10)
        is None
    )
    report, _ = _reporter(None)
    assert (
        training_round_problem(
            GOOD, 10, 0.5, reference=REFERENCE, declared_rows=10, report=report
        )
        is None
    )


# -- attributes_consensus --------------------------------------------------------------


def test_no_named_reply_means_no_attributes_to_agree_on():
    assert attributes_consensus([], str) is None


def test_the_attributes_most_replies_name_are_the_rounds():
    named = [(0, ["sex"]), (1, ["race"]), (2, ["sex"])]
    assert attributes_consensus(named, str) == ["sex"]


def test_without_a_strict_majority_the_disagreeing_clients_are_named():
    with pytest.raises(NoConsensus, match=r"sensitive attributes' names: c0 says"):
        attributes_consensus([(0, ["sex"]), (1, ["race"])], lambda k: f"c{k}")


# -- named_histogram_problem -----------------------------------------------------------

LABELS = [("a",), ("b",)]


def _ledger(rowset="eval", rows=None):
    ledger = ClientLedger()
    ledger.declare_groups(0, rowset, rows or {("a",): 3, ("b",): 2})
    return ledger


def _histogram():
    # Group a: 2 negatives, 1 positive; group b: 1 and 1; over two bins.
    return np.array([[[1, 1], [1, 0]], [[0, 1], [1, 0]]], dtype=np.float64)


def _named_histogram(arrays, names=("s",), agreed=("s",), ledger=None, rows=5):
    return named_histogram_problem(
        arrays,
        list(names),
        None if agreed is None else list(agreed),
        LABELS,
        n_bins=2,
        ledger=_ledger() if ledger is None else ledger,
        k=0,
        rowset="eval",
        declared_rows=rows,
    )


def test_a_histogram_of_other_attributes_is_refused_before_it_is_decoded():
    def arrays():
        raise AssertionError("decoded a reply already refused")

    problem = _named_histogram(arrays, names=("race",), agreed=("s",))
    assert (
        problem == "its groups are of attributes ['race']; the federation's are ['s']"
    )


def test_a_histogram_reply_must_hold_exactly_one_array():
    assert _named_histogram(lambda: [_histogram()] * 2) == (
        "it sent 2 arrays; one histogram was asked for"
    )
    assert _named_histogram(lambda: []) == (
        "it sent 0 arrays; one histogram was asked for"
    )


def test_a_histogram_whose_arrays_cannot_be_decoded_is_malformed():
    def arrays():
        raise KeyError("histogram")

    assert _named_histogram(arrays).startswith("it is malformed (KeyError")


def test_a_histogram_is_claimed_against_the_declared_groups():
    ledger = _ledger()
    assert _named_histogram(lambda: [_histogram()], ledger=ledger) is None
    # Without agreed attributes (nothing to agree on) the names pass.
    assert _named_histogram(lambda: [_histogram()], agreed=None) is None
    # Same totals, one row moved between the groups: the declared rows per
    # group no longer hold.
    moved = _histogram()
    moved[0, 0, 0] -= 1
    moved[1, 0, 0] += 1
    assert "rows of group ['a']" in _named_histogram(lambda: [moved], ledger=ledger)
    # Same groups, one label swapped within group a: the earlier claim about
    # these rows does not hold.
    swapped = _histogram()
    swapped[0, 0, 0] -= 1
    swapped[0, 1, 0] += 1
    assert "earlier reply" in _named_histogram(lambda: [swapped], ledger=ledger)


def test_a_histogram_of_other_rows_than_declared_is_refused():
    assert "declared 6 evaluation rows" in _named_histogram(
        lambda: [_histogram()], rows=6
    )


# -- named_report_claim_problem --------------------------------------------------------


def _config(labels=(("a",), ("b",)), names=("s",)):
    return {
        "group-labels": json.dumps([list(label) for label in labels]),
        "sensitive-names": json.dumps(list(names)),
    }


REPORT = [
    np.array([3.0, 2.0]),  # n
    np.array([1.0, 1.0]),  # selected
    np.array([1.0, 1.0]),  # n_positive
    np.array([1.0, 0.0]),  # true_positive
]


def _named_report(config, arrays, round_names=("s",), ledger=None, rows=5):
    return named_report_claim_problem(
        config,
        arrays,
        None if round_names is None else list(round_names),
        ledger=_ledger("train") if ledger is None else ledger,
        k=0,
        rowset="train",
        declared_rows=rows,
    )


def test_a_report_naming_its_groups_is_checked_then_claimed():
    ledger = _ledger("train")
    assert _named_report(_config(), lambda: REPORT, ledger=ledger) is None
    # Rows per (group, label) are now claimed: another split of the same
    # groups' rows between the labels is a different claim.
    other = [REPORT[0], REPORT[1], np.array([2.0, 0.0]), np.array([1.0, 0.0])]
    assert "earlier reply" in _named_report(_config(), lambda: other, ledger=ledger)


def test_a_report_of_other_attributes_is_refused_before_it_is_decoded():
    def arrays():
        raise AssertionError("decoded a report already refused")

    problem = _named_report(_config(names=("race",)), arrays)
    assert "its groups are of attributes ['race']" in problem


def test_a_report_whose_groups_cannot_be_read_names_that():
    problem = _named_report({"sensitive-names": '["s"]'}, lambda: REPORT)
    assert problem.startswith("its groups cannot be read (KeyError")


def test_a_report_needs_one_array_per_count():
    problem = _named_report(_config(), lambda: REPORT[:3])
    assert problem == "its fairness report has 3 arrays; expected 4"


def test_a_reports_counts_are_the_declared_rows():
    assert "counts 5 rows; it declared 6" in _named_report(
        _config(), lambda: REPORT, rows=6
    )


def test_a_report_of_a_group_not_declared_is_refused():
    labels = (("a",), ("c",))
    assert "a group it did not declare" in _named_report(
        _config(labels=labels), lambda: REPORT
    )


# -- description_consensus -------------------------------------------------------------


def _described(n_features, classes):
    description, problem = data_description(
        {"n-features": n_features, "classes": classes}
    )
    assert problem is None
    return description


def test_the_majoritys_description_is_agreed_and_only_the_others_differ():
    described = {
        0: _described(3, [0, 1]),
        1: _described(3, [0, 1]),
        2: _described(4, [0, 1]),
        3: _described(3, [0, 1]),
        4: _described(3, [1, 2]),
    }
    agreed, differences = description_consensus(described, str)
    assert agreed == _described(3, [0, 1])
    assert set(differences) == {2, 4}
    assert differences[2] == (
        "its n-features 4 are not those of the majority of the clients (3)"
    )
    # A missing class gets the hint of how to give every client the classes.
    assert "classes=..." in differences[4]


def test_no_majority_description_names_the_clients():
    described = {0: _described(3, [0, 1]), 1: _described(4, [0, 1])}
    with pytest.raises(NoConsensus, match=r"node-0 says .*node-1 says"):
        description_consensus(described, lambda k: f"node-{k}")


# -- discovery_problem -----------------------------------------------------------------


def test_discovery_reads_the_declared_rows_and_evaluation_rows():
    assert discovery_problem({"num-rows": 12}) == (12, None, None)
    assert discovery_problem({"num-rows": 12, "num-eval-rows": 5}) == (12, 5, None)
    # No rows is the client's own check to explain later, not a bad reply.
    assert discovery_problem({"num-rows": 0}) == (0, None, None)


@pytest.mark.parametrize(
    "metrics, words",
    [
        ({}, "its rows is None"),
        ({"num-rows": True}, "its rows is True"),
        ({"num-rows": 2.5}, "not whole"),
        ({"num-rows": -1}, "negative"),
        ({"num-rows": 4, "num-eval-rows": float("nan")}, "evaluation rows"),
        ({"num-rows": 4, "num-eval-rows": "3"}, "its evaluation rows is '3'"),
    ],
)
def test_discovery_refuses_rows_that_are_not_counts(metrics, words):
    *_, problem = discovery_problem(metrics)
    assert words in problem


# -- range_problems -------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    n_clients=st.integers(2, 12),
    n_features=st.integers(1, 5),
    seed=st.integers(0, 2**31 - 1),
)
def test_every_client_s_range_is_judged_as_alone_against_the_others(
    n_clients, n_features, seed
):
    # All clients at once (leave-one-out minima and maxima) name exactly the
    # clients, with exactly the messages, that one client at a time does:
    # NaN (no values), zeros only, far values and ties included.
    rng = np.random.default_rng(seed)
    choices = np.array([np.nan, 0.0, 0.0, 1.0, -1.0, 5.0, 1e4, -1e5, 3.0])
    extremes = {}
    for k in range(n_clients):
        low = rng.choice(choices, n_features)
        high = np.where(np.isnan(low), np.nan, low + rng.choice([0.0, 1.0, 2e4], 1))
        extremes[10 * k] = Extremes(low, high)
    alone = {k: range_problem(k, extremes) for k in extremes}
    assert range_problems(extremes) == {k: p for k, p in alone.items() if p}
