"""A federation's transport over a Flower grid: messages out, replies in.

The server's run (``skfedida.federated._lifecycle.run_federation``) and its
rounds talk to the clients through a transport
(``skfedida.federated._transport``); this is Flower's. It finds the
clients' nodes, turns each ``Payload`` into a Flower message of the kind's
type (writing queries, states, rate terms and tree models in JSON), and
each reply into a ``FlowerReply`` the server reads as in-process, or into
the reason none can be read, worded as the in-process federation words a
client's failure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, RecordDict

from .._codec import decode
from .._messages import (
    ANSWER,
    NUM_PARTITIONS,
    PARTITION_ID,
)
from ..federated._transport import PAYLOAD_WRITERS, ROUND_KINDS
from ._protocol import (
    _DECISIONS,
    _HISTOGRAMS,
    _INIT,
    _RATE_HISTOGRAMS,
    _STATISTICS,
    _TREE_GROUPS,
    _TREES,
    query_failure,
    remote_failure,
)

#: The Flower message type of each kind of message the server sends.
MESSAGE_TYPES = {
    "discovery query": MessageType.QUERY,
    "statistics query": _STATISTICS,
    "initialisation": _INIT,
    "training": MessageType.TRAIN,
    "evaluation": MessageType.EVALUATE,
    "decision query": _DECISIONS,
    "rate histograms query": _RATE_HISTOGRAMS,
    "tree query": _TREES,
    "group declaration": _TREE_GROUPS,
    "histogram query": _HISTOGRAMS,
}


@dataclass(frozen=True)
class FlowerReply:
    """A node's reply as the server reads it (``skfedida.federated._transport``).

    Parameters
    ----------
    message : flwr.app.Message
        The reply, which carries no error.
    """

    message: Message

    def config(self, *default):
        """The reply's configuration (``default``, if given, when it sent none)."""
        if default:
            return self.message.content.config_records.get("config", *default)
        return self.message.content["config"]

    def metrics(self, *default):
        """The reply's metrics (``default``, if given, when it sent none)."""
        if default:
            return self.message.content.metric_records.get("metrics", *default)
        return self.message.content["metrics"]

    def arrays(self, name="arrays"):
        """The reply's arrays under ``name``, decoded."""
        return self.message.content[name].to_numpy_ndarrays()

    def answer(self):
        """The client's answer to a query, decoded from its JSON."""
        return decode(self.message.content["config"][ANSWER])


def _content(payload, written):
    """A payload as a message's content: its arrays and config, if any.

    ``written`` holds what the send wrote so far, by key and object: the
    same states sent with every client's own seed are written once.
    """
    records = {}
    if payload.arrays is not None:
        # Clients' payloads that differ in their config alone share arrays.
        key = ("arrays", id(payload.arrays))
        if key not in written:
            written[key] = ArrayRecord([np.asarray(a) for a in payload.arrays])
        records["arrays"] = written[key]
    if payload.config:
        config = {}
        for key, value in payload.config.items():
            if key in PAYLOAD_WRITERS:
                if (key, id(value)) not in written:
                    written[key, id(value)] = PAYLOAD_WRITERS[key](value)
                value = written[key, id(value)]
            config[key] = value
        records["config"] = ConfigRecord(config)
    return RecordDict(records)


class FlowerTransport:
    """A federation's transport when its clients are a grid's nodes.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
    timeout : float
        Seconds to wait for the replies to one message.
    connect_timeout : float
        Seconds to wait for every node to connect.
    """

    def __init__(self, grid, timeout, connect_timeout):
        self.grid = grid
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.nodes = []

    def name(self, k):
        """Client ``k`` and its node, as errors and records name it."""
        return f"Client {k} (node {self.nodes[k]})"

    def _wait_for_nodes(self, n_nodes):
        deadline = time.monotonic() + self.connect_timeout
        while True:
            nodes = sorted(self.grid.get_node_ids())
            if len(nodes) >= n_nodes:
                return nodes
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"Only {len(nodes)} of {n_nodes} SuperNodes connected within "
                    f"{self.connect_timeout} s."
                )
            time.sleep(0.5)

    def _exchange(self, nodes, contents, message_type):
        """One message per node: the replies by node (absent: none came)."""
        messages = [
            Message(content, node, message_type)
            for node, content in zip(nodes, contents, strict=True)
        ]
        return {
            reply.metadata.src_node_id: reply
            for reply in self.grid.send_and_receive(messages, timeout=self.timeout)
        }

    def _discovered(self, nodes):
        """The discovery replies of ``nodes``; a node that fails is an error."""
        replies = self._exchange(
            nodes, [RecordDict()] * len(nodes), MESSAGE_TYPES["discovery query"]
        )
        for node in nodes:
            reason = query_failure(replies.get(node), "discovery query", self.timeout)
            if reason is not None:
                raise RuntimeError(f"Node {node}: {reason}.")
        return replies

    def discover(self):
        """Every client's discovery reply, in partition order.

        Waits for one node to say how many partitions there are, then for
        that many nodes; each must say a distinct ``partition-id`` in range
        and the same ``num-partitions``.
        """
        first = self._wait_for_nodes(1)
        reply = self._discovered(first[:1])[first[0]]
        n_partitions = int(reply.content["config"][NUM_PARTITIONS])
        nodes = self._wait_for_nodes(n_partitions)
        replies = self._discovered(nodes)
        by_partition = {}
        for node in nodes:
            config = replies[node].content["config"]
            k, n = int(config[PARTITION_ID]), int(config[NUM_PARTITIONS])
            if n != n_partitions:
                raise ValueError(
                    f"Nodes disagree on num-partitions: node {node} says {n}, "
                    f"another {n_partitions}."
                )
            if not 0 <= k < n_partitions:
                raise ValueError(
                    f"Node {node} has partition-id {k}, outside "
                    f"0..{n_partitions - 1} (num-partitions {n_partitions}): give "
                    f"each node a distinct partition-id from 0 to num-partitions "
                    f"- 1 in its node config."
                )
            if k in by_partition:
                raise ValueError(
                    f"Nodes {by_partition[k]} and {node} both have partition-id {k}."
                )
            by_partition[k] = node
        self.nodes = [by_partition[k] for k in range(n_partitions)]
        return [FlowerReply(replies[node]) for node in self.nodes]

    def _failure(self, reply, kind, what):
        """Why a reply cannot be read (none came, its node failed), or None."""
        if kind not in ROUND_KINDS:
            return query_failure(reply, what, self.timeout)
        if reply is None:
            return "no reply before the round's timeout"
        if reply.has_error():
            return remote_failure(reply.error.reason)
        return None

    def send(self, kind, payloads, clients, what=None):
        """One payload to each client: its ``FlowerReply``, or why none can be read.

        Parameters
        ----------
        kind : str
            What is sent (``skfedida.federated._transport.MESSAGE_KINDS``).
        payloads : list of Payload
            One per client of ``clients``.
        clients : iterable of int
            The clients, by index.
        what : str, default=None
            The message as a failure names it (``kind`` by default).

        Returns
        -------
        replies : dict
            By client: a ``FlowerReply``, or the reason (a string).
        """
        clients = list(clients)
        nodes = [self.nodes[k] for k in clients]
        # A payload sent to many clients is written once (a tree query to
        # 200 clients is one JSON text).
        contents, written = {}, {}
        for payload in payloads:
            if id(payload) not in contents:
                contents[id(payload)] = _content(payload, written)
        replies = self._exchange(
            nodes, [contents[id(payload)] for payload in payloads], MESSAGE_TYPES[kind]
        )
        received = {}
        for k, node in zip(clients, nodes, strict=True):
            reply = replies.get(node)
            reason = self._failure(reply, kind, what or kind)
            received[k] = FlowerReply(reply) if reason is None else reason
        return received
