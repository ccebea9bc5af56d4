"""A transport whose clients are ``ClientNode``s in this process, without Flower.

The lifecycle (``run_federation``) is written against a transport
(``skfedida.federated._transport``); Flower's is one. This one hands each
payload to the same client code a Flower ClientApp runs (``ClientNode``),
on in-memory nodes, writing the payload's objects as Flower's transport
does, so a run by message is tested with no grid and no Flower at all.
"""

from dataclasses import dataclass

import numpy as np

from skfedida._codec import decode
from skfedida._messages import ANSWER, SERVER_ROUND
from skfedida.federated._message_client import ClientNode
from skfedida.federated._transport import PAYLOAD_WRITERS, ROUND_KINDS


class MemoryNode:
    """A node as ``ClientNode`` sees it: its rows, its record, its place."""

    def __init__(self, partition, n_partitions, loaded, run_config=None):
        self.id = 1001 + partition
        self._partition = (partition, n_partitions)
        self._loaded = loaded
        self.run_config = dict(run_config or {})
        self._record = None
        self.saved_model = None

    def run_key(self):
        return (id(self), self.id)

    def partition(self):
        return self._partition

    def load(self):
        return self._loaded

    def record(self):
        return self._record

    def keep(self, record):
        self._record = dict(record)

    def update(self, key, value):
        self._record[key] = value

    def save_model(self, model):
        self.saved_model = model


@dataclass(frozen=True)
class MemoryReply:
    """A ``ClientReply`` as the server reads a reply (``_transport``)."""

    reply: object

    def _part(self, value, name, default):
        if value is None:
            if default:
                return default[0]
            raise KeyError(f"the reply has no {name}")
        return value

    def config(self, *default):
        return self._part(self.reply.config, "config", default)

    def metrics(self, *default):
        return self._part(self.reply.metrics, "metrics", default)

    def arrays(self, name="arrays"):
        arrays = self.reply.arrays if name == "arrays" else self.reply.fairness
        # Copies, as a message's arrays are: the server never shares a
        # client's memory.
        return [np.array(a, copy=True) for a in self._part(arrays, name, ())]

    def answer(self):
        return decode(self.config()[ANSWER])


def _training(client, node, config, arrays):
    return client.train(node, config, arrays, int(config[SERVER_ROUND]))


def _evaluation(client, node, config, arrays):
    return client.evaluate(node, arrays, int(config[SERVER_ROUND]), config)


#: What each kind of message runs on the client, as Flower's ClientApp does.
HANDLERS = {
    "statistics query": lambda c, node, config, arrays: c.statistics(node, config),
    "initialisation": lambda c, node, config, arrays: c.initialise(node, config),
    "training": _training,
    "evaluation": _evaluation,
    "decision query": lambda c, node, config, arrays: c.decision_query(
        node, config, lambda: arrays
    ),
    "rate histograms query": lambda c, node, config, arrays: c.rate_histograms(
        node, config, lambda: arrays
    ),
    "tree query": lambda c, node, config, arrays: c.trees(node, config),
    "group declaration": lambda c, node, config, arrays: c.tree_groups(node),
    "histogram query": lambda c, node, config, arrays: c.histograms(
        node, config, lambda: arrays
    ),
}


class MemoryTransport:
    """Every client a ``ClientNode`` on a ``MemoryNode`` of ``partitions[k]``."""

    def __init__(self, federation, partitions, classes=None, run_config=None):
        self.client = ClientNode(federation, classes)
        self.nodes = [
            MemoryNode(k, len(partitions), loaded, run_config)
            for k, loaded in enumerate(partitions)
        ]

    def name(self, k):
        return f"Client {k}"

    def discover(self):
        return [MemoryReply(self.client.discover(node)) for node in self.nodes]

    def send(self, kind, payloads, clients, what=None):
        received = {}
        for k, payload in zip(clients, payloads, strict=True):
            config = {
                key: PAYLOAD_WRITERS[key](value) if key in PAYLOAD_WRITERS else value
                for key, value in payload.config.items()
            }
            arrays = (
                None
                if payload.arrays is None
                else [np.array(a, copy=True) for a in payload.arrays]
            )
            try:
                reply = HANDLERS[kind](self.client, self.nodes[k], config, arrays)
            except Exception as exc:  # the client's failure, as a reason
                reason = f"{type(exc).__name__}: {exc}"
                received[k] = (
                    reason
                    if kind in ROUND_KINDS
                    else f"it failed the {what or kind}: {reason}"
                )
                continue
            received[k] = MemoryReply(reply)
        return received
