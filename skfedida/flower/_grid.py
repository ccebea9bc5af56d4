"""Run a Flower ServerApp and ClientApp in one process, without a SuperLink."""

from __future__ import annotations

import copy
import os
import tempfile
import uuid

from flwr.app import Context, Error, Message, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.serverapp import Grid
from flwr.supercore.run import Run

from .._flwr import task_identity as _identity
from .._messages import NUM_PARTITIONS, PARTITION_ID
from ._result import load_result

__all__ = ["InProcessGrid", "run_in_process"]


class InProcessGrid(Grid):
    """A Flower Grid that delivers every message to a ClientApp in this process.

    Each node has its own node config and node-local state, kept between
    messages as a SuperNode keeps it (and left unchanged when the ClientApp
    raises, whose exception becomes an error reply as in a deployment).
    Messages are deep-copied both ways, so nothing is shared by reference
    between the server and the clients, and replies come back in the order
    the messages were sent. It is for tests and debugging: a deployment uses
    a SuperLink and SuperNodes.

    Parameters
    ----------
    client_app : flwr.clientapp.ClientApp
        The app every node runs.
    node_configs : list of dict
        One node config per node, e.g. ``{"partition-id": 0,
        "num-partitions": 3}``.
    run_config : dict, default=None
        The run config every node sees.
    run_id : int, default=1
        Id of the simulated run.

    Attributes
    ----------
    replies : list of flwr.app.Message
        Every reply the server received, in order (for inspecting what the
        clients sent).

    See Also
    --------
    run_in_process : Run a ServerApp against this grid.

    Examples
    --------
    >>> from flwr.clientapp import ClientApp
    >>> from skfedida.flower import InProcessGrid
    >>> grid = InProcessGrid(ClientApp(), [{"partition-id": 0, "num-partitions": 1}])
    >>> list(grid.get_node_ids())
    [1001]
    """

    def __init__(self, client_app, node_configs, run_config=None, run_id=1):
        self.client_app = client_app
        self.run_config = dict(run_config or {})
        self.run_id = run_id
        self.contexts = {
            1001 + i: Context(
                run_id=run_id,
                node_id=1001 + i,
                node_config=dict(config),
                state=RecordDict(),
                run_config=dict(self.run_config),
            )
            for i, config in enumerate(node_configs)
        }
        self.replies = []
        self._pending = {}
        self._run = Run.create_empty(run_id)

    def set_run(self, run):
        """Set the run this grid operates in.

        Parameters
        ----------
        run : flwr.supercore.run.Run
            The run. Flower's runners set it before they start a ServerApp;
            :func:`run_in_process` does not, so the grid keeps an empty run
            with id ``run_id``.
        """
        self._run = run

    @property
    def run(self):
        """The run this grid operates in.

        Returns
        -------
        run : flwr.supercore.run.Run
            The run given to :meth:`set_run`; before, an empty run with id
            ``run_id``.
        """
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        """Create a message to one node, as Flower's ``Grid`` does.

        Parameters
        ----------
        content : flwr.app.RecordDict
            The records to send.
        message_type : str
            The action the ClientApp runs, e.g. ``"train"``.
        dst_node_id : int
            The node to send it to.
        group_id : str
            The group of the message (the round, in federated learning).
        ttl : float, default=None
            Time-to-live in seconds; None for Flower's default. Delivery here is
            immediate, so it never expires.

        Returns
        -------
        message : flwr.app.Message
            The message, not yet sent.
        """
        return Message(content, dst_node_id, message_type, ttl=ttl, group_id=group_id)

    def get_node_ids(self):
        """Return the ids of the grid's nodes.

        Returns
        -------
        node_ids : list of int
            ``1001``, ``1002``, ..., one per node config, in order.
        """
        return list(self.contexts)

    def _deliver(self, message):
        node = message.metadata.dst_node_id
        if node not in self.contexts:
            raise ValueError(f"No node {node} in this grid.")
        context = copy.deepcopy(self.contexts[node])
        with _identity(self.run_id, node, node):
            try:
                reply = self.client_app(message=message, context=context)
            except Exception as exc:  # a ClientApp failure becomes an error reply
                reply = Message(
                    Error(
                        code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION,
                        reason=f"{type(exc)}:<'{exc}'>",
                    ),
                    reply_to=message,
                )
            else:
                self.contexts[node] = context
        return reply

    def push_messages(self, messages):
        """Deliver messages to their nodes' ClientApp and keep the replies.

        Each message is deep-copied and handled at once by the ClientApp of
        its ``dst_node_id``; its reply waits for :meth:`pull_messages`, under
        an id this grid gives it (the message's own ``message_id`` stays
        unset, as Flower sets it only through a private attribute).

        Parameters
        ----------
        messages : iterable of flwr.app.Message
            The messages to send.

        Returns
        -------
        message_ids : list of str
            Id of every message sent, in order, to pull the replies with.
        """
        ids = []
        for message in messages:
            # The grid's own ids: Flower gives a message its id only through
            # a private attribute (its SuperLink hashes the content).
            message_id = uuid.uuid4().hex
            self._pending[message_id] = copy.deepcopy(
                self._deliver(copy.deepcopy(message))
            )
            ids.append(message_id)
        return ids

    def pull_messages(self, message_ids):
        """Collect the replies to messages sent by :meth:`push_messages`.

        Parameters
        ----------
        message_ids : iterable of str
            Ids returned by :meth:`push_messages`. Ids whose reply was
            already pulled, or that are unknown, are skipped.

        Returns
        -------
        replies : list of flwr.app.Message
            The replies, in the order of ``message_ids``; also appended to
            ``replies``.
        """
        replies = [self._pending.pop(i) for i in message_ids if i in self._pending]
        self.replies.extend(replies)
        return replies

    def send_and_receive(self, messages, *, timeout=None):
        """Send messages and return the replies.

        Parameters
        ----------
        messages : iterable of flwr.app.Message
            The messages to send.
        timeout : float, default=None
            Ignored: every reply is ready as soon as its message is sent.

        Returns
        -------
        replies : list of flwr.app.Message
            One reply per message, in the order the messages were sent.
        """
        return self.pull_messages(self.push_messages(messages))


def run_in_process(
    server_app,
    client_app,
    *,
    num_partitions,
    run_config=None,
    node_configs=None,
    result_key=None,
):
    """Run a skfedida ServerApp against ``num_partitions`` in-process clients.

    The same apps that ``flwr run`` deploys, driven by :class:`InProcessGrid`
    instead of a SuperLink: no network, no Ray, no subprocesses. Node ``K``
    gets the node config ``partition-id=K num-partitions=num_partitions``.

    Parameters
    ----------
    server_app : flwr.serverapp.ServerApp
        From :func:`make_server_app`.
    client_app : flwr.clientapp.ClientApp
        From :func:`make_client_app`.
    num_partitions : int
        Number of clients.
    run_config : dict, default=None
        The run config (``num-server-rounds``, ``local-epochs``, ``seed``...).
    node_configs : list of dict, default=None
        More node config for each node, in partition order (e.g.
        ``model-path``).
    result_key : str or bytes, default=None
        The ``result_key`` given to :func:`make_server_app` (or the run
        config's ``result-key``), to check the result file with.

    Returns
    -------
    federation : FederatedEstimator
        The fitted federation the ServerApp produced.

    Raises
    ------
    RuntimeError
        When a client fails (``on_client_error="raise"``) or every client of a
        round fails.

    Examples
    --------
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.federated import FederatedEstimator
    >>> from skfedida.flower import make_client_app, make_server_app, run_in_process
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> data = make_federated_classification(900, n_clients=3, random_state=0)
    >>> def load_data(context):
    ...     rows = data.clients == context.node_config["partition-id"]
    ...     return {"X": data.data[rows], "y": data.target[rows],
    ...             "sensitive_features": {name: values[rows] for name, values
    ...                                    in data.sensitive.items()}}
    >>> federation = FederatedEstimator(FairPenaltyLogisticRegression(),
    ...                                 n_rounds=2, local_epochs=1, random_state=0)
    >>> fitted = run_in_process(make_server_app(federation),
    ...                         make_client_app(federation, load_data),
    ...                         num_partitions=3)
    >>> fitted.history_[0]["round"], fitted.history_[0]["client"]
    (1, 0)
    """
    run_config = dict(run_config or {})
    extra = [{}] * num_partitions if node_configs is None else list(node_configs)
    if len(extra) != num_partitions:
        raise ValueError(
            f"node_configs has {len(extra)} entries for {num_partitions} partitions."
        )
    node_configs = [
        {**config, PARTITION_ID: k, NUM_PARTITIONS: num_partitions}
        for k, config in enumerate(extra)
    ]
    with tempfile.TemporaryDirectory() as scratch:
        run_config.setdefault("result-path", os.path.join(scratch, "result.joblib"))
        grid = InProcessGrid(client_app, node_configs, run_config)
        context = Context(
            run_id=grid.run_id,
            node_id=SUPERLINK_NODE_ID,
            node_config={},
            state=RecordDict(),
            run_config=run_config,
        )
        with _identity(grid.run_id, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
            server_app(grid, context)
        key = result_key if result_key is not None else run_config.get("result-key")
        return load_result(run_config["result-path"], key=key)
