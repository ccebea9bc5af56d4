"""The skfedida Flower ClientApp: a federation's client on a node.

What a client answers is ``skfedida.federated._message_client.ClientNode``'s;
this module translates: each Flower message into a call of its handler
(the node's config, rows and state behind ``_FlowerNode``), and each
``ClientReply`` into the reply message.
"""

from __future__ import annotations

import numbers
import uuid

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from .._messages import NUM_PARTITIONS, PARTITION_ID, SERVER_ROUND
from ..federated._message_client import ClientNode
from ..federated._run_config import plan_for_run
from ._protocol import _STATE_KEY
from ._result import _write

# The node's record of which run its cached rows belong to (see _FlowerNode).
_RUN_KEY = "skfedida-run"


def _node_partition(context):
    """This node's ``partition-id`` and ``num-partitions``, checked."""
    try:
        partition = context.node_config[PARTITION_ID]
        n_partitions = context.node_config[NUM_PARTITIONS]
    except KeyError as exc:
        raise KeyError(
            f"The node config has no {exc.args[0]!r}: start the SuperNode with "
            "--node-config 'partition-id=K num-partitions=N' (K in 0..N-1)."
        ) from None
    # A bool is an Integral: partition-id=true would otherwise load partition 1.
    integers = all(
        isinstance(value, numbers.Integral) and not isinstance(value, bool)
        for value in (partition, n_partitions)
    )
    if not (integers and 0 <= partition < n_partitions):
        raise ValueError(
            "The node config needs integers 0 <= partition-id < num-partitions; "
            f"got partition-id={partition!r}, num-partitions={n_partitions!r}."
        )
    return int(partition), int(n_partitions)


def _load(load_data, context):
    """This node's rows from the user's ``load_data``, checked."""
    loaded = load_data(context)
    got = type(loaded).__name__
    if hasattr(loaded, "keys"):
        missing = [key for key in ("X", "y") if key not in loaded]
        got = f"a {got} without {' or '.join(map(repr, missing))}" if missing else None
    if got is not None:
        raise TypeError(
            "load_data(context) must return a mapping with keys 'X' and 'y' "
            "(and optionally 'sensitive_features', 'X_eval', 'y_eval', "
            f"'sensitive_features_eval'); got {got}."
        )
    if "sample_weight" in loaded:
        raise ValueError(
            "load_data(context) returns 'sample_weight': a Flower federation "
            "does not train on rows' weights yet. Fit in-process with "
            "FederatedEstimator.fit(..., sample_weight=...), or leave it out."
        )
    unknown = sorted(set(loaded) - _LOADED_KEYS, key=str)
    if unknown:
        raise TypeError(
            f"load_data(context) returns keys {unknown} that are not read "
            f"(the keys are {sorted(_LOADED_KEYS)}): nothing is dropped "
            "silently."
        )
    return loaded


#: What ``load_data`` may return.
_LOADED_KEYS = frozenset(
    {"X", "y", "sensitive_features", "X_eval", "y_eval", "sensitive_features_eval"}
)


def _run_key(context):
    """The key of this node's cache for the run ``context`` belongs to."""
    if _RUN_KEY not in context.state:
        context.state[_RUN_KEY] = ConfigRecord({"token": uuid.uuid4().hex})
    return (
        context.state[_RUN_KEY]["token"],
        context.run_id,
        dict(context.node_config),
        dict(context.run_config),
    )


def _reply(message, reply):
    """A ``ClientReply`` as the reply to ``message``."""
    content = RecordDict()
    if reply.arrays is not None:
        content["arrays"] = ArrayRecord([np.asarray(a) for a in reply.arrays])
    if reply.metrics is not None:
        content["metrics"] = MetricRecord(reply.metrics)
    if reply.config is not None:
        content["config"] = ConfigRecord(reply.config)
    if reply.fairness is not None:
        content["fairness"] = ArrayRecord(reply.fairness)
    return Message(content, reply_to=message)


def _global_model(message, what):
    """The global arrays and the round of a training or evaluation message.

    The keys Flower's own strategies use (``"arrays"``, an ArrayRecord, and
    ``"config"`` with ``"server-round"``), as skfedida's server does.
    """
    content = message.content
    if "arrays" not in content.array_records or "config" not in content.config_records:
        raise ValueError(
            f"A {what} message carries the global model ('arrays', an ArrayRecord) "
            "and its round ('config', a ConfigRecord with 'server-round'); this "
            f"one holds {sorted(content.keys())}."
        )
    config = content.config_records["config"]
    if SERVER_ROUND not in config:
        raise ValueError(f"The {what} message's config has no 'server-round'.")
    return content["arrays"].to_numpy_ndarrays(), int(config[SERVER_ROUND])


class _FlowerNode:
    """A Flower node as the client sees it (``ClientNode``'s node).

    Its rows come from the user's ``load_data(context)``; its record
    between messages is kept in the node-local ``context.state``; its run
    key is a token kept there too, so a new run (an empty state) and a
    message that failed (which leaves the old state, hence its token,
    behind) never reuse rows cached for another run. The run and node
    configs are part of the key as well, should either change.
    """

    def __init__(self, context, load_data):
        self.context = context
        self.load_data = load_data
        self.id = context.node_id
        self.run_config = context.run_config

    def run_key(self):
        return _run_key(self.context)

    def partition(self):
        return _node_partition(self.context)

    def load(self):
        return _load(self.load_data, self.context)

    def record(self):
        return self.context.state.config_records.get(_STATE_KEY)

    def keep(self, record):
        self.context.state[_STATE_KEY] = ConfigRecord(record)

    def update(self, key, value):
        self.context.state[_STATE_KEY][key] = value

    def save_model(self, model):
        path = self.context.node_config.get("model-path")
        if path:
            _write(path, model)


def _arrays(message):
    """The message's arrays, decoded when the handler reads them."""
    return lambda: message.content["arrays"].to_numpy_ndarrays()


def make_client_app(federation, load_data, *, classes=None):
    """Build a Flower ClientApp that runs a FederatedEstimator's client rounds.

    Every training message runs exactly the routine ``FederatedEstimator``
    runs for one client in one round: optional resampling (per minibatch or
    per round), ``local_epochs`` epochs of ``partial_fit`` (Per-FedAvg's
    meta-steps for ``strategy="pfedavg"``), then the parameter arrays and the
    number of training rows go back to the server. The client's estimator
    (with its optimiser state) stays on the node between rounds, in the run's
    node-local ``context.state``. A process that serves several of a node's
    messages (:func:`~skfedida.flower.run_in_process`, a simulation) calls
    ``load_data`` and checks the rows once per run, not once per message.

    Parameters
    ----------
    federation : FederatedEstimator
        Unfitted, ``strategy`` ``"fedavg"`` or ``"pfedavg"``; give the same
        object to :func:`make_server_app`. The run config keys
        ``num-server-rounds``, ``local-epochs`` and ``seed`` override
        ``n_rounds``, ``local_epochs`` and ``random_state``.
    load_data : callable
        ``load_data(context) -> mapping`` with this node's rows: ``"X"``,
        ``"y"``, optionally ``"sensitive_features"``, and optionally
        evaluation rows ``"X_eval"``, ``"y_eval"``,
        ``"sensitive_features_eval"``. Choose the rows from
        ``context.node_config["partition-id"]`` (the node's place among the
        ``num-partitions`` clients; partition K plays the K-th client of
        ``FederatedEstimator.clients_``). Without evaluation rows, clients
        evaluate on their held-out rows (``validation_fraction``); a client
        with neither is not evaluated, as in-process (under a Flower
        strategy of your own, which asks every node, it scores its
        training rows).
    classes : array-like, default=None
        Labels of the whole federation. By default skfedida's ServerApp
        sends the union of the labels the clients declare when they join,
        so a client may lack a class, as in-process. Give them under a
        Flower strategy of your own, where no server tells a node the
        federation's classes and a node takes its own labels.

        The node config (``flower-supernode --node-config``) gives
        ``partition-id`` and ``num-partitions``, and optionally ``model-path``:
        where the node writes, with joblib, the model it uses after the last
        round (its personalised model under Per-FedAvg, else the global one).

    Returns
    -------
    app : flwr.clientapp.ClientApp
        Handles the server's discovery and initialisation queries, ``train``
        and ``evaluate`` messages. At discovery a node declares how many
        rows ``load_data`` gives it (and how many evaluation rows): the
        server checks every count it sends later against them. It also
        answers the train and evaluate messages of Flower's own strategies
        (``FedAvg``, ``FedProx``...) in a ServerApp of the user's: without
        an initialisation query, a node sets itself up at its first message
        as skfedida's server would (see the Flower guide).

    See Also
    --------
    make_server_app : The matching ServerApp.
    skfedida.flower.run_in_process : Run both apps in one process.

    Examples
    --------
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.federated import FederatedEstimator
    >>> from skfedida.flower import make_client_app
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> data = make_federated_classification(900, n_clients=3, random_state=0)
    >>> def load_data(context):
    ...     rows = data.clients == context.node_config["partition-id"]
    ...     return {"X": data.data[rows], "y": data.target[rows],
    ...             "sensitive_features": {name: values[rows] for name, values
    ...                                    in data.sensitive.items()}}
    >>> federation = FederatedEstimator(FairPenaltyLogisticRegression(),
    ...                                 n_rounds=2, random_state=0)
    >>> app = make_client_app(federation, load_data)
    """
    plan_for_run(federation, {})  # a bad federation fails when the app is built
    if not callable(load_data):
        raise TypeError(
            f"load_data must be a callable taking the context; got {load_data!r}."
        )
    app = ClientApp()
    client = ClientNode(federation, classes)

    def handle(register, answer):
        # Each message answered by the client on this node, as a reply.
        def handler(message, context):
            node = _FlowerNode(context, load_data)
            return _reply(message, answer(message, node))

        register(handler)

    def config(message):
        return message.content["config"]

    def train(message, node):
        arrays, server_round = _global_model(message, "training")
        return client.train(
            node, message.content.config_records["config"], arrays, server_round
        )

    def evaluate(message, node):
        arrays, round_ = _global_model(message, "evaluation")
        return client.evaluate(
            node, arrays, round_, message.content.config_records["config"]
        )

    handle(app.query("skfedida_tree_groups"), lambda m, node: client.tree_groups(node))
    handle(app.query("skfedida_trees"), lambda m, node: client.trees(node, config(m)))
    handle(
        app.query("skfedida_statistics"),
        lambda m, node: client.statistics(node, config(m)),
    )
    handle(app.query(), lambda m, node: client.discover(node))
    handle(
        app.query("skfedida_init"), lambda m, node: client.initialise(node, config(m))
    )
    handle(
        app.query("skfedida_histograms"),
        lambda m, node: client.histograms(node, config(m), _arrays(m)),
    )
    handle(
        app.query("skfedida_rate_histograms"),
        lambda m, node: client.rate_histograms(node, config(m), _arrays(m)),
    )
    handle(
        app.query("skfedida_decisions"),
        lambda m, node: client.decision_query(node, config(m), _arrays(m)),
    )
    handle(app.train(), train)
    handle(app.evaluate(), evaluate)
    return app
