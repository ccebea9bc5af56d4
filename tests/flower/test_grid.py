"""flower/_grid.py: InProcessGrid and run_in_process, called directly.

test_guard_flower.py holds a node's state across messages (and a failed
app's changes dropped) and one reply per id; test_bad_input_flower.py an
unknown node. Here: the nodes and their configs, messages and replies copied
both ways, replies in the order asked, the error reply of a raising app,
Flower's task identity restored, and how run_in_process sets up its nodes.
"""

import pytest

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Message, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.supercore.task_identity import TaskIdentity

from skfedida.flower import InProcessGrid, run_in_process
from skfedida.flower._grid import _identity


def _echo(message, context):
    """Replies with its partition and what it was sent; then edits the message."""
    sent = dict(message.content["config"])
    reply = Message(
        RecordDict(
            {
                "config": ConfigRecord(
                    {
                        **sent,
                        "partition-id": context.node_config["partition-id"],
                        "seed": context.run_config.get("seed", -1),
                    }
                )
            }
        ),
        reply_to=message,
    )
    # A client that writes into what it received must not reach the
    # server's copy (as over a network).
    message.content["config"]["value"] = "changed by the client"
    return reply


def _grid(app=_echo, n=3, run_config=None):
    configs = [{"partition-id": k, "num-partitions": n} for k in range(n)]
    return InProcessGrid(app, configs, run_config)


def _send(grid, nodes, value="v"):
    messages = [
        grid.create_message(
            RecordDict({"config": ConfigRecord({"value": value})}), "query", node, "g"
        )
        for node in nodes
    ]
    return messages, grid.send_and_receive(messages)


@pytest.fixture
def server_identity():
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        yield


def test_nodes_are_numbered_from_1001_in_the_order_of_their_configs():
    grid = _grid(n=3, run_config={"seed": 4})
    assert grid.get_node_ids() == [1001, 1002, 1003]
    assert [grid.contexts[n].node_config["partition-id"] for n in (1001, 1003)] == [
        0,
        2,
    ]
    assert all(c.run_config == {"seed": 4} for c in grid.contexts.values())


def test_the_grid_copies_the_configs_it_is_given():
    configs = [{"partition-id": 0}]
    run_config = {"seed": 1}
    grid = InProcessGrid(_echo, configs, run_config)
    configs[0]["partition-id"] = 7
    run_config["seed"] = 2
    assert grid.contexts[1001].node_config["partition-id"] == 0
    assert grid.contexts[1001].run_config == {"seed": 1}


@pytest.mark.usefixtures("server_identity")
def test_replies_come_back_in_the_order_the_messages_were_sent():
    grid = _grid(run_config={"seed": 8})
    _, replies = _send(grid, [1003, 1001, 1002])
    assert [r.content["config"]["partition-id"] for r in replies] == [2, 0, 1]
    assert all(r.content["config"]["seed"] == 8 for r in replies)
    assert grid.replies == replies


@pytest.mark.usefixtures("server_identity")
def test_nothing_is_shared_by_reference_between_server_and_clients():
    grid = _grid()
    messages, replies = _send(grid, [1001], value="sent")
    # The client's edit of the message it received stays on its side.
    assert messages[0].content["config"]["value"] == "sent"
    assert replies[0].content["config"]["value"] == "sent"


@pytest.mark.usefixtures("server_identity")
def test_pulling_returns_replies_in_the_order_of_the_ids_asked():
    grid = _grid()
    messages = [
        grid.create_message(
            RecordDict({"config": ConfigRecord({"value": "v"})}), "query", n, "g"
        )
        for n in (1001, 1002)
    ]
    ids = grid.push_messages(messages)
    assert len(set(ids)) == 2
    replies = grid.pull_messages([ids[1], "unknown", ids[0]])
    assert [r.content["config"]["partition-id"] for r in replies] == [1, 0]


@pytest.mark.usefixtures("server_identity")
def test_a_raising_app_becomes_an_error_reply_naming_the_exception():
    def failing(message, context):
        raise ZeroDivisionError("no rows left")

    grid = _grid(app=failing, n=1)
    _, (reply,) = _send(grid, [1001])
    assert reply.has_error()
    assert reply.error.code == ErrorCode.CLIENT_APP_RAISED_EXCEPTION
    assert "ZeroDivisionError" in reply.error.reason
    assert "no rows left" in reply.error.reason


def test_the_client_app_runs_as_its_node_and_the_identity_is_restored():
    seen = []

    def app(message, context):
        seen.append((TaskIdentity._node_id, TaskIdentity._run_id))
        return Message(RecordDict(), reply_to=message)

    grid = InProcessGrid(app, [{}, {}], run_id=5)
    with _identity(5, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        messages = [
            grid.create_message(RecordDict(), "query", n, "g") for n in (1002, 1001)
        ]
        grid.send_and_receive(messages)
        assert TaskIdentity._node_id == SUPERLINK_NODE_ID
    assert seen == [(1002, 5), (1001, 5)]


def test_the_run_is_empty_with_the_grids_id_until_set():
    grid = InProcessGrid(_echo, [{}], run_id=12)
    assert grid.run.run_id == 12
    other = type(grid.run).create_empty(13)
    grid.set_run(other)
    assert grid.run is other


@pytest.mark.usefixtures("server_identity")
def test_a_message_says_where_it_goes_and_what_it_is():
    grid = _grid(n=1)
    message = grid.create_message(RecordDict(), "train", 1001, "round-3", ttl=60.0)
    assert message.metadata.dst_node_id == 1001
    assert message.metadata.message_type == "train"
    assert message.metadata.group_id == "round-3"
    assert message.metadata.ttl == 60.0


# -- run_in_process -------------------------------------------------------------------


class _Stop(Exception):
    pass


def _inspecting_server(seen):
    def server_app(grid, context):
        seen["node_configs"] = [grid.contexts[n].node_config for n in grid.contexts]
        seen["run_config"] = dict(context.run_config)
        seen["node_id"] = context.node_id
        seen["identity"] = TaskIdentity._node_id
        raise _Stop

    return server_app


def test_run_in_process_gives_each_node_its_partition_and_extra_config():
    seen = {}
    with pytest.raises(_Stop):
        run_in_process(
            _inspecting_server(seen),
            _echo,
            num_partitions=2,
            run_config={"seed": 3},
            node_configs=[{"model-path": "a"}, {"partition-id": 9}],
        )
    assert seen["node_configs"] == [
        {"model-path": "a", "partition-id": 0, "num-partitions": 2},
        # partition-id is the node's place, whatever the extra config says.
        {"partition-id": 1, "num-partitions": 2},
    ]
    assert seen["run_config"]["seed"] == 3
    assert seen["run_config"]["result-path"].endswith("result.joblib")
    assert seen["node_id"] == seen["identity"] == SUPERLINK_NODE_ID


def test_run_in_process_refuses_node_configs_of_another_length():
    with pytest.raises(ValueError, match="node_configs has 1 entries for 2"):
        run_in_process(
            _inspecting_server({}), _echo, num_partitions=2, node_configs=[{}]
        )


def test_run_in_process_leaves_the_callers_run_config_alone():
    run_config = {"seed": 3}
    with pytest.raises(_Stop):
        run_in_process(
            _inspecting_server({}), _echo, num_partitions=1, run_config=run_config
        )
    assert run_config == {"seed": 3}


def test_a_server_app_that_writes_no_result_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="did not finish"):
        run_in_process(lambda grid, context: None, _echo, num_partitions=1)
