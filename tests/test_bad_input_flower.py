"""Bad input to the Flower apps and result files is named.

Guards the project's rule for skfedida.flower: a node config, a
``load_data`` that returns the wrong thing, a run whose nodes do not all
connect, a message a node cannot answer yet, or a file that is not a
result gets an error naming what to fix (the node, ``load_data``, the
transformer, the file), never a run that silently uses less. Client errors
reach the server as a RuntimeError carrying the client's message. Where a
check is a comparison, both sides of its boundary are tested.
"""

import fractions
import hashlib

import joblib
import numpy as np
import pandas as pd
import pytest

pytest.importorskip("flwr")

from _helpers import partition_loader
from flwr.app import Context, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from skfedida.datasets import make_federated_classification
from skfedida.federated import FairFed, FederatedEstimator
from skfedida.flower import (
    InProcessGrid,
    load_result,
    make_client_app,
    make_server_app,
    run_in_process,
)
from skfedida.flower._grid import _identity
from skfedida.flower._result import _MAGIC, _SIGNED, _UNSIGNED
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.postprocessing import FederatedThresholdOptimizer
from skfedida.preprocessing import FederatedOneHotEncoder

N_CLIENTS = 2


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(300, n_clients=N_CLIENTS, random_state=0)


def _federation(estimator=None, **options):
    options = {"n_rounds": 1, "local_epochs": 1, "random_state": 0, **options}
    if estimator is None:
        estimator = FairPenaltyLogisticRegression()
    return FederatedEstimator(estimator, **options)


def _run(federation, load_data, **server):
    return run_in_process(
        make_server_app(federation, **server),
        make_client_app(federation, load_data),
        num_partitions=N_CLIENTS,
    )


def _serve(grid, federation, **server):
    """Run the ServerApp against ``grid`` (its own node configs)."""
    context = Context(1, SUPERLINK_NODE_ID, {}, RecordDict(), {})
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        make_server_app(federation, **server)(grid, context)


def _nodes(*configs):
    return [{"partition-id": k, "num-partitions": n} for k, n in configs]


# -- load_data ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "loaded, got",
    [
        ([1, 2], "list"),
        (None, "NoneType"),
        ({"X": np.zeros((3, 2))}, "a dict without 'y'"),
        ({}, "a dict without 'X' or 'y'"),
    ],
    ids=["list", "None", "no y", "empty"],
)
def test_load_data_that_returns_no_mapping_of_x_and_y_is_named(loaded, got):
    with pytest.raises(
        RuntimeError,
        match=rf"load_data\(context\) must return a mapping with keys 'X' and "
        rf"'y'.*; got {got}\.",
    ):
        _run(_federation(), lambda context: loaded)


def test_group_thresholds_on_flower_need_the_sensitive_features(data):
    def without_groups(context):
        loaded = partition_loader(data)(context)
        del loaded["sensitive_features"]
        return loaded

    federation = _federation()
    post = FederatedThresholdOptimizer(federation)
    with pytest.raises(
        RuntimeError, match="return 'sensitive_features' from load_data"
    ):
        _run(federation, without_groups, postprocessor=post)


def test_every_client_failing_the_initialisation_is_an_error_even_when_skipping(
    data,
):
    def with_nan(context):
        loaded = partition_loader(data)(context)
        loaded["X"] = loaded["X"].copy()
        loaded["X"][0, 0] = np.nan
        return loaded

    federation = _federation(on_client_error="skip")
    with pytest.raises(
        RuntimeError,
        match=r"Every client failed the initialisation; first: Client 0 .*NaN",
    ):
        _run(federation, with_nan)


def test_a_category_the_statistics_rounds_cannot_send_is_named(data):
    # A Fraction cannot travel as JSON (a Decimal can, exactly: issue 48's
    # D14), and the error names the transformer and the value's type.
    amounts = np.array([fractions.Fraction(3, 2), fractions.Fraction(2)], dtype=object)

    def with_decimals(context):
        loaded = partition_loader(data)(context)
        frame = pd.DataFrame(loaded["X"][:, :2], columns=["a", "b"])
        frame["amount"] = amounts[np.arange(len(frame)) % 2]
        return {**loaded, "X": frame}

    tree = ColumnTransformer(
        [("encode", FederatedOneHotEncoder(), ["amount"])], remainder="passthrough"
    )
    federation = _federation(
        Pipeline([("pre", tree), ("model", FairPenaltyLogisticRegression())])
    )
    with pytest.raises(
        RuntimeError,
        match=r"statistics query for estimator\['pre'\]\['encode'\].*"
        r"Cannot send a Fraction",
    ):
        _run(federation, with_decimals)


def test_fairfed_on_flower_names_an_outcome_of_more_than_two_classes():
    # In-process fit refuses it before any round; on Flower each client
    # refuses to report a fairness gap for a three-class outcome.
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(120, 3)), np.arange(120) % 3
    groups, clients = (np.arange(120) // 3) % 2, np.arange(120) % N_CLIENTS

    def load_data(context):
        rows = clients == context.node_config["partition-id"]
        return {"X": X[rows], "y": y[rows], "sensitive_features": groups[rows]}

    federation = _federation(aggregation=FairFed(min_group_size=1))
    with pytest.raises(
        RuntimeError, match=r"Client 0 .*FairFed .*the outcome has 3 classes"
    ):
        _run(federation, load_data)


# -- the nodes ---------------------------------------------------------------------


def test_nodes_that_disagree_on_num_partitions_are_named(data):
    federation = _federation()
    grid = InProcessGrid(
        make_client_app(federation, partition_loader(data)), _nodes((0, 2), (1, 3))
    )
    with pytest.raises(
        ValueError, match="Nodes disagree on num-partitions: node 1002 says 3"
    ):
        _serve(grid, federation, connect_timeout=0.0)


class _PartitionLiarGrid(InProcessGrid):
    """Node 1002 answers the discovery query with partition-id 5 of 2."""

    def send_and_receive(self, messages, *, timeout=None):
        replies = list(super().send_and_receive(messages, timeout=timeout))
        for reply in replies:
            if reply.metadata.src_node_id == 1002 and "config" in reply.content:
                reply.content["config"]["partition-id"] = 5
        return replies


def test_a_partition_id_outside_the_range_is_named(data):
    # Honest nodes refuse such a config themselves; a node whose reply says
    # so anyway is named by the server, not a KeyError.
    federation = _federation()
    grid = _PartitionLiarGrid(
        make_client_app(federation, partition_loader(data)), _nodes((0, 2), (1, 2))
    )
    with pytest.raises(
        ValueError, match=r"Node 1002 has partition-id 5, outside 0\.\.1"
    ):
        _serve(grid, federation, connect_timeout=0.0)


def test_fewer_nodes_than_num_partitions_time_out_naming_the_count(data):
    federation = _federation()
    grid = InProcessGrid(
        make_client_app(federation, partition_loader(data)), _nodes((0, 2))
    )
    with pytest.raises(TimeoutError, match=r"Only 1 of 2 SuperNodes connected"):
        _serve(grid, federation, connect_timeout=0.0)


def test_all_nodes_connected_need_no_wait(data, tmp_path):
    # Exactly num-partitions nodes: the run starts without waiting.
    federation = _federation()
    grid = InProcessGrid(
        make_client_app(federation, partition_loader(data)), _nodes((0, 2), (1, 2))
    )
    path = tmp_path / "result.joblib"
    _serve(grid, federation, connect_timeout=0.0, result_path=path)
    assert load_result(path).clients_.tolist() == [0, 1]


@pytest.mark.parametrize("kind", ["train", "evaluate"])
def test_a_message_without_the_global_model_is_refused_naming_what_it_lacks(data, kind):
    # A ServerApp of the user's own may skip skfedida's initialisation (the
    # node then sets itself up), but its messages must carry the global
    # model and the round, under the keys Flower's strategies use.
    federation = _federation()
    grid = InProcessGrid(
        make_client_app(federation, partition_loader(data)), _nodes((0, 1))
    )
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        message = grid.create_message(RecordDict(), kind, 1001, "1")
        (reply,) = grid.send_and_receive([message])
    assert reply.has_error()
    assert "carries the global model ('arrays', an ArrayRecord)" in reply.error.reason


@pytest.mark.parametrize("node", [1000, 1002])
def test_a_message_to_a_node_the_grid_does_not_have_is_refused(data, node):
    grid = InProcessGrid(
        make_client_app(_federation(), partition_loader(data)), _nodes((0, 1))
    )
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        message = grid.create_message(RecordDict(), "query", node, "1")
        with pytest.raises(ValueError, match=rf"No node {node} in this grid"):
            grid.send_and_receive([message])


# -- result files -------------------------------------------------------------------


def _file(tmp_path, blob):
    path = tmp_path / "result.joblib"
    path.write_bytes(blob)
    return path


def _unsigned(data):
    return _MAGIC + _UNSIGNED + hashlib.sha256(data).digest() + data


def test_a_file_one_byte_short_of_a_result_header_is_refused(tmp_path):
    blob = _unsigned(b"")[:-1]
    with pytest.raises(
        ValueError, match=r"is not a skfedida result file \(no result header"
    ):
        load_result(_file(tmp_path, blob))


def test_a_header_with_no_payload_is_read_and_refused_as_unreadable(tmp_path):
    # The full header passes (its digest is the empty payload's); the payload
    # is then no joblib file.
    with pytest.raises(ValueError, match="result file: it could not be read"):
        load_result(_file(tmp_path, _unsigned(b"")))


def test_a_result_header_of_an_unknown_kind_is_refused(tmp_path):
    blob = _MAGIC + b"X" + bytes(32) + b"payload"
    assert b"X" not in (_SIGNED, _UNSIGNED)
    with pytest.raises(ValueError, match=r"result file \(unknown kind\)"):
        load_result(_file(tmp_path, blob))


@pytest.mark.parametrize(
    "payload, kind",
    [([1, 2], "list"), ({"model": 1}, "dict")],
    ids=["list", "dict without a result"],
)
def test_a_checked_file_that_holds_no_servers_result_is_refused(
    tmp_path, payload, kind
):
    path = tmp_path / "payload.joblib"
    joblib.dump(payload, path)
    blob = _unsigned(path.read_bytes())
    with pytest.raises(ValueError, match=rf"holds a {kind}, not a ServerApp's result"):
        load_result(_file(tmp_path, blob))
