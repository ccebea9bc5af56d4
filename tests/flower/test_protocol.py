"""flower/_protocol.py: what the two apps say to each other, called directly.

The group configuration and declaration a client writes are read back by the
server's own parsers (the two sides of one message); the union of the
clients' groups is the pooled encoding's; the run config overrides the plan.
"""

import json
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("flwr")

from skfedida._gate._checks import parse_groups
from skfedida._gate._ledger import ClientLedger
from skfedida._gate._rows import group_declaration_problem
from skfedida._groups import encode_groups, merged_groups
from skfedida.federated import FederatedEstimator
from skfedida.federated._client import PERSONAL_METRICS, VALIDATION_METRICS
from skfedida.federated._run_config import plan_for_run
from skfedida.federated._transport import REPLY_METRICS
from skfedida.federated._wire import group_config, group_declaration
from skfedida.linear_model import FairPenaltyLogisticRegression


def _groups(**columns):
    return encode_groups({name: list(values) for name, values in columns.items()})


def test_a_clients_group_config_is_what_the_server_parses():
    groups = _groups(sex=["F", "M", "F"], age=np.array([30, 40, 30]))
    config = group_config(groups)
    parsed, problem = parse_groups(config)
    labels, names = parsed.labels, parsed.names
    assert problem is None
    assert names == ["sex", "age"]
    assert labels == [("F", 30), ("M", 40)]


def test_numpy_scalars_in_labels_are_written_as_json_numbers():
    # Labels as a client may hold them (numpy scalars): written as numbers,
    # not as their text, so the server's union matches other clients' 30.
    groups = SimpleNamespace(
        labels=((np.int64(30), np.float32(0.5)),), names=(np.str_("age"), "w")
    )
    parsed, problem = parse_groups(group_config(groups))
    labels, names = parsed.labels, parsed.names
    assert problem is None
    assert labels == [(30, 0.5)] and names == ["age", "w"]
    assert type(labels[0][0]) is int and type(labels[0][1]) is float


def _part(train, held_out=None, evaluation=None):
    """``group_declaration``'s arguments for a client with these groups."""
    return (
        SimpleNamespace(
            groups=train,
            held_out=None if held_out is None else SimpleNamespace(groups=held_out),
        ),
        evaluation,
    )


def test_no_sensitive_groups_declare_nothing():
    assert group_declaration(*_part(None)) is None


def test_a_declaration_lists_each_set_of_rows_and_drops_empty_groups():
    train = _groups(s=["a", "b", "b", "c"]).take([0, 1, 2])  # group c: no row
    held_out = _groups(s=["a", "a", "b"])
    evaluation = _groups(s=["c", "c"])
    declared = json.loads(group_declaration(*_part(train, held_out, evaluation)))
    assert declared["names"] == ["s"]
    assert declared["rowsets"] == {
        "train": {"labels": [["a"], ["b"]], "rows": [1, 2]},
        "held_out": {"labels": [["a"], ["b"]], "rows": [2, 1]},
        "eval": {"labels": [["c"]], "rows": [2]},
    }


def test_only_the_sets_of_rows_a_client_has_are_declared():
    declared = json.loads(group_declaration(*_part(_groups(s=["a", "b"]))))
    assert set(declared["rowsets"]) == {"train"}


def test_the_server_accepts_the_declaration_a_client_writes():
    train = _groups(s=["a", "b", "b"], t=[1, 1, 2])
    evaluation = _groups(s=["b", "b"], t=[2, 2])
    config = {"declared-groups": group_declaration(*_part(train, None, evaluation))}
    ledger = ClientLedger()
    names, problem = group_declaration_problem(
        config, {"rows": 3, "train": 3, "eval": 2}, ledger, 0
    )
    assert problem is None and names == ("s", "t")
    assert ledger.declared_groups(0, "train") == {
        ("a", 1): 1,
        ("b", 1): 1,
        ("b", 2): 1,
    }
    assert ledger.declared_groups(0, "eval") == {("b", 2): 2}


def test_the_union_of_the_clients_groups_is_the_pooled_encoding():
    first = _groups(s=["b", "a"], t=[2, 1])
    second = _groups(s=["c", "b"], t=[1, 2])
    merged, codes = merged_groups([group_config(first), group_config(second)])
    pooled = _groups(s=["b", "a", "c", "b"], t=[2, 1, 1, 2])
    assert merged.labels == pooled.labels
    assert merged.names == ("s", "t")
    # Each client's own codes, translated to the union's.
    for groups, client_codes in zip((first, second), codes, strict=True):
        assert [merged.labels[c] for c in client_codes] == list(groups.labels)


def test_the_union_is_in_the_pooled_order_not_the_order_clients_name_groups():
    first, second = _groups(s=["c"]), _groups(s=["a", "b"])
    merged, codes = merged_groups([group_config(first), group_config(second)])
    assert merged.labels == (("a",), ("b",), ("c",))
    assert codes == [[2], [0, 1]]
    # Numbers in value order (the pooled encoding's), not their text's: a
    # client's code must point at its own label in the union.
    first, second = _groups(s=[10]), _groups(s=[9, 2])
    merged, codes = merged_groups([group_config(first), group_config(second)])
    assert merged.labels == ((2,), (9,), (10,))
    assert codes == [[2], [0, 1]]


def test_a_label_is_one_group_whichever_client_names_it():
    one = _groups(s=["x"])
    merged, codes = merged_groups([group_config(one), group_config(one)])
    assert merged.labels == (("x",),) and codes == [[0], [0]]


def test_the_run_config_overrides_rounds_epochs_and_seed_only():
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=5, local_epochs=2, random_state=1
    )
    plan = plan_for_run(
        federation,
        {"num-server-rounds": 3, "local-epochs": 4, "seed": 9, "other-key": 1},
    )
    options = plan.federation.get_params()
    assert (options["n_rounds"], options["local_epochs"]) == (3, 4)
    assert options["random_state"] == 9
    # The user's federation is left as it was (the plan is a copy).
    assert (federation.n_rounds, federation.local_epochs) == (5, 2)
    assert federation.random_state == 1
    unchanged = plan_for_run(federation, {}).federation
    assert (unchanged.n_rounds, unchanged.random_state) == (5, 1)


def test_a_bad_override_is_refused_like_the_parameter():
    federation = FederatedEstimator(FairPenaltyLogisticRegression())
    with pytest.raises(ValueError, match="n_rounds"):
        plan_for_run(federation, {"num-server-rounds": 0})


def test_the_metrics_a_client_may_send_are_the_ones_it_reports():
    assert {f"val_{m}" for m in VALIDATION_METRICS} <= REPLY_METRICS
    assert {f"val_personal_{m}" for m in PERSONAL_METRICS} <= REPLY_METRICS
    assert {"num-examples", "num-rows", "num-eval-rows", "train-loss"} <= (
        REPLY_METRICS
    )


def test_flower_gives_every_kind_of_message_its_type():
    # The server names what it sends by kind (federated/_transport.py); the
    # Flower transport maps each kind to its message type. A kind added on
    # one side only would reach a KeyError mid-run.
    from skfedida.federated._transport import MESSAGE_KINDS, ROUND_KINDS
    from skfedida.flower._transport import MESSAGE_TYPES

    assert sorted(MESSAGE_TYPES) == sorted(MESSAGE_KINDS)
    assert set(ROUND_KINDS) <= set(MESSAGE_KINDS)
