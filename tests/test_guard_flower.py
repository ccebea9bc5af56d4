"""The Flower server's handling of what does not arrive, stated as behaviour.

A selected node that sends no reply before the round's timeout is that
client's failure, as a raising client is in-process: with
``on_client_error="raise"`` the fit stops naming it, with ``"skip"`` the
round aggregates the others and ``history_`` records the skip. Flower alone
would carry on with the replies that arrived.
"""

import numpy as np
import pytest

pytest.importorskip("flwr")

from _helpers import (
    FailingLogistic,
    assert_same_parameters,
    partition_loader,
)
from flwr.app import Context, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.flower import (
    InProcessGrid,
    load_result,
    make_client_app,
    make_server_app,
)
from skfedida.flower._grid import _identity
from skfedida.linear_model import FairPenaltyLogisticRegression

N_CLIENTS = 3


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(600, n_clients=N_CLIENTS, random_state=5)


class _SilentNodeGrid(InProcessGrid):
    """Loses every reply of one node to messages of one type (a lost node)."""

    def __init__(self, *args, silent_node, message_type, **kwargs):
        super().__init__(*args, **kwargs)
        self.silent_node, self.message_type = silent_node, message_type

    def send_and_receive(self, messages, *, timeout=None):
        replies = super().send_and_receive(messages, timeout=timeout)
        return [
            reply
            for reply in replies
            if not (
                reply.metadata.src_node_id == self.silent_node
                and reply.metadata.message_type == self.message_type
            )
        ]


def _fit_with_a_silent_node(federation, data, tmp_path, partition, message_type):
    """The fitted federation, partition ``partition`` never answering."""
    grid = _SilentNodeGrid(
        make_client_app(federation, partition_loader(data)),
        [{"partition-id": k, "num-partitions": N_CLIENTS} for k in range(N_CLIENTS)],
        silent_node=1001 + partition,
        message_type=message_type,
    )
    path = tmp_path / "result.joblib"
    context = Context(1, SUPERLINK_NODE_ID, {}, RecordDict(), {})
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        make_server_app(federation, result_path=path)(grid, context)
    return load_result(path)


def _federation(estimator=None, **options):
    options = {"n_rounds": 2, "local_epochs": 1, "random_state": 0, **options}
    return FederatedEstimator(
        estimator if estimator is not None else FailingLogistic(fairness=0.5),
        **options,
    )


def test_a_missing_training_reply_raises_naming_the_client(data, tmp_path):
    with pytest.raises(
        RuntimeError,
        match=r"Client 1 \(node 1002\) failed in round 1 \(training\): no reply",
    ):
        _fit_with_a_silent_node(_federation(), data, tmp_path, 1, "train")


def test_a_missing_evaluation_reply_raises_naming_the_client(data, tmp_path):
    with pytest.raises(
        RuntimeError,
        match=r"Client 2 \(node 1003\) failed in round 1 \(evaluation\): no reply",
    ):
        _fit_with_a_silent_node(
            _federation(validation_fraction=0.25), data, tmp_path, 2, "evaluate"
        )


def test_a_missing_training_reply_is_a_recorded_skip_as_a_failed_client(data, tmp_path):
    # Skipped, a silent client is what a client that raises is in-process:
    # every round aggregates the other two, to the last bit, and history_
    # holds the skip (no training loss) for the silent client in each round.
    flower = _fit_with_a_silent_node(
        _federation(on_client_error="skip"), data, tmp_path, 1, "train"
    )
    seeds = flower.client_seeds_
    FailingLogistic.failing_seeds = {int(seeds[1])}
    try:
        local = _federation(on_client_error="skip").fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    finally:
        FailingLogistic.failing_seeds = frozenset()
    assert_same_parameters(flower.estimator_, local.estimator_)
    skipped = {(r["round"], r["client"]): r for r in flower.history_ if "skipped" in r}
    assert sorted(skipped) == [(1, 1), (2, 1)]
    for record in skipped.values():
        assert record["train_loss"] is None
        assert "no reply" in record["skipped"]
    trained = [r for r in flower.history_ if r.get("train_loss") is not None]
    assert sorted((r["round"], r["client"]) for r in trained) == [
        (1, 0),
        (1, 2),
        (2, 0),
        (2, 2),
    ]
    assert np.all(np.isfinite([r["train_loss"] for r in trained]))


def test_a_missing_evaluation_reply_is_recorded_and_left_out(data, tmp_path):
    # Skipped, the silent client's evaluation is recorded as skipped and its
    # metrics are absent; the other clients' are there.
    # Held-out rows: only a client with evaluation rows is evaluated.
    flower = _fit_with_a_silent_node(
        _federation(on_client_error="skip", validation_fraction=0.25),
        data,
        tmp_path,
        2,
        "evaluate",
    )
    for record in flower.history_:
        if record["client"] == 2:
            assert "no reply" in record["evaluation_skipped"]
            assert "val_roc_auc" not in record
        else:
            assert "evaluation_skipped" not in record
            assert np.isfinite(record["val_roc_auc"])


def test_a_missing_reply_leaves_the_private_mean_over_the_selected_clients(
    data, tmp_path
):
    # Differential privacy divides the noisy sum of the clipped updates by
    # the number of clients selected, whatever arrived (so a client's absence
    # changes no noise scale): a silent node is, to the last bit, what a
    # failing client is in-process.
    from skfedida.federated import DifferentialPrivacy

    def federation():
        return _federation(
            on_client_error="skip",
            dp=DifferentialPrivacy(
                noise_multiplier=0.5, clipping_norm=0.5, noise_seed=0
            ),
        )

    flower = _fit_with_a_silent_node(federation(), data, tmp_path, 0, "train")
    FailingLogistic.failing_seeds = {int(flower.client_seeds_[0])}
    try:
        local = federation().fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    finally:
        FailingLogistic.failing_seeds = frozenset()
    assert_same_parameters(flower.estimator_, local.estimator_)


def test_a_result_key_from_the_run_config_signs_and_checks_the_result(data, tmp_path):
    # The run config's result-key (flwr run --run-config) is the key the
    # ServerApp signs with and run_in_process checks with: the file refuses
    # to load without it.
    from skfedida.flower import run_in_process

    federation = _federation(FairPenaltyLogisticRegression(), n_rounds=1)
    path = tmp_path / "signed.joblib"
    fitted = run_in_process(
        make_server_app(federation),
        make_client_app(federation, partition_loader(data)),
        num_partitions=N_CLIENTS,
        run_config={"result-key": "secret", "result-path": str(path)},
    )
    assert_same_parameters(
        fitted.estimator_, load_result(path, key="secret").estimator_
    )
    with pytest.raises(ValueError, match="signed with a result key"):
        load_result(path)


# -- the statistics codec -------------------------------------------------------


def test_the_codec_gives_back_every_value_with_its_type_and_dtype():
    # What a pipeline's statistics rounds send must come back as it was:
    # the federated transformers' states are compared with in-process ones
    # to the last bit, dtypes included.
    from skfedida._codec import decode, encode

    value = {
        "float32": np.array([[1.5, -2.25]], dtype=np.float32),
        "int8": np.array([1, -2, 3], dtype=np.int8),
        "uint64": np.array([2**63], dtype=np.uint64),
        "bool": np.array([True, False]),
        "strings": np.array(["a", "bc"]),
        "objects": np.array(["x", None, 1.5], dtype=object),
        "dates": np.array(["2020-01-02", "NaT"], dtype="datetime64[D]"),
        "scalars": (np.float32(0.1), np.int64(7), np.float64(np.nan)),
        "python": [1, 2.5, "s", None, True],
        "dtype": np.dtype("float32"),
    }
    back = decode(encode(value))
    assert set(back) == set(value)
    for key in ("float32", "int8", "uint64", "bool", "strings", "dates"):
        assert back[key].dtype == value[key].dtype, key
        assert back[key].shape == value[key].shape, key
        np.testing.assert_array_equal(back[key], value[key])
    assert back["objects"].dtype == object
    assert back["objects"].tolist() == ["x", None, 1.5]
    assert isinstance(back["scalars"], tuple)
    for got, sent in zip(back["scalars"], value["scalars"], strict=True):
        assert type(got) is type(sent)
        assert got.tobytes() == sent.tobytes()
    assert back["python"] == value["python"]
    assert back["dtype"] == np.dtype("float32")


@pytest.mark.parametrize(
    "value",
    [{1: "a"}, {0.5: 1.0}, {None: 0}, {True: 0}, {"outer": {2: np.int64(3)}}],
    ids=["int", "float", "None", "bool", "nested int"],
)
def test_the_codec_refuses_a_dict_it_would_give_back_changed(value):
    # Stated behaviour: what the codec sends comes back as it was, or is
    # refused. JSON writes every dict key as a string, so a key of another
    # type (a class label 1, a threshold 0.5) would come back as "1" or
    # "0.5" and silently miss every lookup: it is a TypeError instead.
    from skfedida._codec import encode

    with pytest.raises(TypeError, match="Only string keys can be sent"):
        encode(value)


# -- the in-process grid --------------------------------------------------------


def _counting_app(message, context):
    """Counts its messages in the node's state; fails when asked to."""
    from flwr.app import ConfigRecord, Message

    seen = context.state.get("seen", ConfigRecord({"n": 0}))
    seen["n"] = int(seen["n"]) + 1
    context.state["seen"] = seen
    if message.content["config"]["fail"]:
        raise RuntimeError("failing after changing its state")
    return Message(
        RecordDict({"config": ConfigRecord({"n": seen["n"]})}), reply_to=message
    )


def _ask(grid, fail):
    from flwr.app import ConfigRecord

    message = grid.create_message(
        RecordDict({"config": ConfigRecord({"fail": fail})}), "query", 1001, "g"
    )
    return grid.push_messages([message])


def test_the_grid_keeps_node_state_but_not_a_failed_apps_changes():
    # As a SuperNode: a node's state persists between messages, and a
    # ClientApp that raises leaves it as it was (its reply is an error).
    grid = InProcessGrid(_counting_app, [{"partition-id": 0, "num-partitions": 1}])
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        (first,) = grid.pull_messages(_ask(grid, fail=False))
        (failed,) = grid.pull_messages(_ask(grid, fail=True))
        (third,) = grid.pull_messages(_ask(grid, fail=False))
    assert first.content["config"]["n"] == 1
    assert failed.has_error()
    assert "failing after changing its state" in failed.error.reason
    assert third.content["config"]["n"] == 2


def test_the_grid_hands_each_reply_over_once():
    # pull_messages skips ids whose reply was already pulled, as Flower's
    # Grid does: a server polling again gets no duplicate reply.
    grid = InProcessGrid(_counting_app, [{"partition-id": 0, "num-partitions": 1}])
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        ids = _ask(grid, fail=False)
        assert len(grid.pull_messages(ids)) == 1
        assert grid.pull_messages(ids) == []
    assert len(grid.replies) == 1
