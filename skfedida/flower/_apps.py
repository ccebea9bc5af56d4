"""Flower ClientApp and ServerApp builders running FederatedEstimator's rounds."""

from __future__ import annotations

import numbers
import os
import pickle
import tempfile
import time
import warnings

import joblib
import numpy as np
from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Message,
    MessageType,
    MetricRecord,
    RecordDict,
)
from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp
from flwr.serverapp import strategy as flwr_strategies
from sklearn.base import clone

from .._compat import _num_samples, _safe_indexing
from .._groups import encode_groups
from ..exceptions import InactivePenaltyWarning, warn_if_degenerate
from ..federated._aggregation import check_aggregation
from ..federated._client import (
    _client_round,
    _client_seeds,
    _ClientData,
    _round_seed,
    _select_clients,
    _split_client,
    _validation_metrics,
    clone_fitted,
)
from ..federated._estimator import FederatedEstimator
from ..federated._parameters import get_parameters, set_parameters

__all__ = ["load_result", "make_client_app", "make_server_app"]

#: Run-config keys (``[tool.flwr.app.config]``) that override the federation's
#: parameters on both sides, so one ``flwr run --run-config`` changes both.
RUN_CONFIG_PARAMETERS = {
    "num-server-rounds": "n_rounds",
    "local-epochs": "local_epochs",
    "seed": "random_state",
}
_INIT = f"{MessageType.QUERY}.skfedida_init"
_STATE_KEY = "skfedida"
# What a client ever sends to the server besides parameter arrays: counts,
# losses, evaluation metrics and configuration (no rows, labels or groups).
REPLY_METRICS = frozenset(
    {
        "num-examples",
        "train-loss",
        "val_roc_auc",
        "val_selection_rate",
        "val_brier",
        "val_dpd",
        "val_dpr",
        "val_dfpr",
        "val_dppv",
        "val_personal_roc_auc",
        "val_personal_dpd",
    }
)
REPLY_CONFIG = frozenset(
    {
        "partition-id",
        "num-partitions",
        "n-features",
        "classes",
        "class-counts",
        "feature-names",
    }
)


def _configured(federation, run_config):
    """The federation's parameters for this run (run config overrides applied)."""
    if not isinstance(federation, FederatedEstimator):
        raise TypeError(
            "federation must be an unfitted skfedida.federated.FederatedEstimator; "
            f"got {type(federation).__name__}."
        )
    federation = clone(federation)
    overrides = {
        parameter: run_config[key]
        for key, parameter in RUN_CONFIG_PARAMETERS.items()
        if key in run_config
    }
    federation.set_params(**overrides)
    federation._validate_params()
    if federation.strategy not in ("fedavg", "pfedavg"):
        raise ValueError(
            "Flower runs strategy='fedavg' or 'pfedavg'; got "
            f"strategy={federation.strategy!r} ('local' and 'central' need no "
            "server: use FederatedEstimator directly)."
        )
    federation._check_components()
    return federation


def _node_partition(context):
    """This node's ``partition-id`` and ``num-partitions``, checked."""
    try:
        partition = context.node_config["partition-id"]
        n_partitions = context.node_config["num-partitions"]
    except KeyError as exc:
        raise KeyError(
            f"The node config has no {exc.args[0]!r}: start the SuperNode with "
            "--node-config 'partition-id=K num-partitions=N' (K in 0..N-1)."
        ) from None
    if not (
        isinstance(partition, numbers.Integral)
        and isinstance(n_partitions, numbers.Integral)
        and 0 <= partition < n_partitions
    ):
        raise ValueError(
            "The node config needs integers 0 <= partition-id < num-partitions; "
            f"got partition-id={partition!r}, num-partitions={n_partitions!r}."
        )
    return int(partition), int(n_partitions)


class _ClientSide:
    """A node's data, prepared as ``FederatedEstimator.fit`` prepares a client's.

    Data come from the user's ``load_data(context)`` and never leave this
    object; the server sees parameter arrays, counts and metrics only.
    """

    def __init__(self, federation, context, load_data, classes, seed):
        self.federation = federation = _configured(federation, context.run_config)
        self.partition, self.n_partitions = _node_partition(context)
        # The same checks and split as FederatedEstimator.fit, on this
        # client's rows only.
        loaded = load_data(context)
        if not hasattr(loaded, "keys") or "X" not in loaded or "y" not in loaded:
            raise TypeError(
                "load_data(context) must return a mapping with keys 'X' and 'y' "
                "(and optionally 'sensitive_features', 'X_eval', 'y_eval', "
                f"'sensitive_features_eval'); got {type(loaded).__name__}."
            )
        X, y, S, S_metrics = federation._validated_rows(
            loaded["X"], loaded["y"], loaded.get("sensitive_features"), reset=True
        )
        self.classes = self._classes(y, classes)
        self.epochs = int(federation._client_epochs(self.n_partitions)[self.partition])
        train, held_out = _split_client(
            y, federation.validation_fraction, seed, self.partition
        )
        groups = None if S is None else encode_groups(S)
        self.train = federation._client_data(X, y, S, groups, train)
        if "X_eval" in loaded:
            X_eval, y_eval, _, S_eval = federation._validated_rows(
                loaded["X_eval"],
                loaded["y_eval"],
                loaded.get("sensitive_features_eval"),
                reset=False,
                suffix="_eval",
            )
            self.evaluation = (X_eval, y_eval, S_eval)
        else:
            rows = train if held_out is None else held_out
            self.evaluation = (
                _safe_indexing(X, rows),
                y[rows],
                None if S_metrics is None else encode_groups(S_metrics).take(rows),
            )

    def _classes(self, y, classes):
        present = np.unique(y)
        if classes is None:
            if present.size < 2:
                raise ValueError(
                    f"Client {self.partition} has a single class "
                    f"{present.tolist()} in its rows; give make_client_app the "
                    "classes of the whole federation (classes=[...])."
                )
            return present
        classes = np.asarray(classes)
        unknown = np.setdiff1d(present, classes)
        if unknown.size:
            raise ValueError(
                f"Client {self.partition} has labels {unknown.tolist()} that are "
                f"not in classes={classes.tolist()}."
            )
        return np.unique(classes)


def _reply(message, *, arrays=None, metrics=None, config=None):
    content = RecordDict()
    if arrays is not None:
        content["arrays"] = ArrayRecord([np.asarray(a) for a in arrays])
    if metrics is not None:
        content["metrics"] = MetricRecord(metrics)
    if config is not None:
        content["config"] = ConfigRecord(config)
    return Message(content, reply_to=message)


def make_client_app(federation, load_data, *, classes=None):
    """Build a Flower ClientApp that runs a FederatedEstimator's client rounds.

    Every training message runs exactly the routine ``FederatedEstimator``
    runs for one client in one round: optional resampling (per minibatch or
    per round), ``local_epochs`` epochs of ``partial_fit`` (Per-FedAvg's
    meta-steps for ``strategy="pfedavg"``), then the parameter arrays and the
    number of training rows go back to the server. The client's estimator
    (with its optimiser state) stays on the node between rounds, in the run's
    node-local ``context.state``.

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
        evaluate on their held-out rows (``validation_fraction``) or else on
        their training rows.
    classes : array-like, default=None
        Labels of the whole federation. By default each client's own labels,
        which must then be both classes; give them when a client may lack one.

        The node config (``flower-supernode --node-config``) gives
        ``partition-id`` and ``num-partitions``, and optionally ``model-path``:
        where the node writes, with joblib, the model it uses after the last
        round (its personalised model under Per-FedAvg, else the global one).

    Returns
    -------
    app : flwr.clientapp.ClientApp
        Handles the server's discovery and initialisation queries, ``train``
        and ``evaluate`` messages.

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
    _configured(federation, {})
    if not callable(load_data):
        raise TypeError(
            f"load_data must be a callable taking the context; got {load_data!r}."
        )
    app = ClientApp()

    def client_side(context, seed):
        return _ClientSide(federation, context, load_data, classes, seed)

    def stored(context):
        if _STATE_KEY not in context.state:
            raise RuntimeError(
                "This node received a training or evaluation message before the "
                "server's initialisation query; run the skfedida ServerApp."
            )
        record = context.state[_STATE_KEY]
        return pickle.loads(record["estimator"]), int(record["client-seed"])

    @app.query()
    def discover(message, context):
        partition, n_partitions = _node_partition(context)
        return _reply(
            message,
            config={"partition-id": partition, "num-partitions": n_partitions},
        )

    @app.query("skfedida_init")
    def initialise(message, context):
        seed = int(message.content["config"]["client-seed"])
        side = client_side(context, seed)
        fed = side.federation
        estimator = fed._trainer(side.classes).prime(
            fed._client_estimator(seed), side.train
        )
        context.state[_STATE_KEY] = ConfigRecord(
            {"estimator": pickle.dumps(estimator), "client-seed": seed}
        )
        config = {
            "partition-id": side.partition,
            "num-partitions": side.n_partitions,
            "n-features": int(fed.n_features_in_),
            "classes": side.classes.tolist(),
            # Training rows per class: the federation's prevalence is their sum.
            "class-counts": [int(np.sum(side.train.y == c)) for c in side.classes],
        }
        if hasattr(fed, "feature_names_in_"):
            config["feature-names"] = fed.feature_names_in_.tolist()
        return _reply(
            message,
            arrays=get_parameters(estimator),
            metrics={"num-examples": int(side.train.n)},
            config=config,
        )

    @app.train()
    def train(message, context):
        estimator, seed = stored(context)
        side = client_side(context, seed)
        round_ = int(message.content["config"]["server-round"]) - 1
        parameters = message.content["arrays"].to_numpy_ndarrays()
        estimator, parameters, n_rows, loss = _client_round(
            side.federation._trainer(side.classes),
            estimator,
            parameters,
            side.train,
            side.epochs,
            _round_seed(seed, round_),
        )
        context.state[_STATE_KEY]["estimator"] = pickle.dumps(estimator)
        return _reply(
            message,
            arrays=parameters,
            metrics={"num-examples": int(n_rows), "train-loss": float(loss)},
            config={"partition-id": side.partition},
        )

    @app.evaluate()
    def evaluate(message, context):
        estimator, seed = stored(context)
        side = client_side(context, seed)
        fed = side.federation
        model = set_parameters(
            clone_fitted(estimator), message.content["arrays"].to_numpy_ndarrays()
        )
        X_eval, y_eval, S_eval = side.evaluation
        metrics = {
            f"val_{name}": value
            for name, value in _validation_metrics(
                model, X_eval, y_eval, S_eval, side.classes
            ).items()
        }
        if fed.strategy == "pfedavg":
            # The personalised model this client would use after this round:
            # what FederatedEstimator(n_rounds=round) gives it.
            round_ = int(message.content["config"]["server-round"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", InactivePenaltyWarning)
                fed._trainer(side.classes).personalise(
                    model,
                    side.train,
                    fed.personalization_steps,
                    np.random.RandomState(_round_seed(seed, round_)),
                )
            personal = _validation_metrics(model, X_eval, y_eval, S_eval, side.classes)
            metrics["val_personal_roc_auc"] = personal["roc_auc"]
            metrics["val_personal_dpd"] = personal["dpd"]
        path = context.node_config.get("model-path")
        if path and int(message.content["config"]["server-round"]) == fed.n_rounds:
            # The model this client uses from now on stays on its node.
            _write(path, model)
        metrics["num-examples"] = int(_num_samples(X_eval))
        return _reply(message, metrics=metrics, config={"partition-id": side.partition})

    return app


def _weighted_metrics(records, weight_key):
    """Weighted mean of each metric over the clients where it is defined."""
    values, weights = {}, []
    for record in records:
        metrics = next(iter(record.metric_records.values()))
        weights.append(float(metrics[weight_key]))
        for key, value in metrics.items():
            if key != weight_key:
                values.setdefault(key, []).append(float(value))
    weights = np.asarray(weights)
    aggregated = {}
    for key, column in values.items():
        column = np.asarray(column)
        defined = np.isfinite(column)
        aggregated[key] = (
            float(np.average(column[defined], weights=weights[defined]))
            if defined.any() and weights[defined].sum() > 0
            else float("nan")
        )
    return MetricRecord(aggregated)


def _federation_strategy(federation, nodes, seeds, history):
    """The Flower strategy of the federation's aggregation, with its checks.

    FedAvg, FedMedian or FedTrimmedAvg from ``flwr.serverapp.strategy``: the
    aggregation is Flower's own, and ``FederatedEstimator`` in-process runs
    the same arithmetic (``skfedida.federated``'s aggregators).
    """
    aggregator = check_aggregation(federation.aggregation)
    base = getattr(flwr_strategies, aggregator.flower_strategy)
    strategy_class = type("_FederationStrategy", (_FederationChecks, base), {})
    return strategy_class(federation, nodes, seeds, history, aggregator)


class _FederationChecks:
    """A Flower strategy with FederatedEstimator's client selection and checks.

    Aggregation is the Flower strategy's own (FedAvg weights ``num-examples``);
    replies are put in partition order first, so the arithmetic runs in the
    same order as in-process and the result is the same to the last bit.
    Clients are selected with the federation's seeded stream (Flower's
    sampling is unseeded), and a failed or missing reply is an error or a
    recorded skip (Flower would carry on).
    """

    def __init__(self, federation, nodes, seeds, history, aggregator):
        n_clients = len(nodes)
        super().__init__(
            min_train_nodes=n_clients,
            min_evaluate_nodes=n_clients,
            min_available_nodes=n_clients,
            train_metrics_aggr_fn=_weighted_metrics,
            evaluate_metrics_aggr_fn=_weighted_metrics,
            **aggregator.flower_options(),
        )
        self.federation = federation
        self.nodes = nodes
        self.partition_of = {node: k for k, node in enumerate(nodes)}
        self.selection_rng = np.random.RandomState(seeds[0])
        self.history = history
        self.expected = {}

    def _messages(self, server_round, arrays, config, partitions, message_type):
        config["server-round"] = server_round
        record = RecordDict(
            {self.arrayrecord_key: arrays, self.configrecord_key: config}
        )
        self.expected[message_type] = [self.nodes[k] for k in partitions]
        return self._construct_messages(
            record, self.expected[message_type], message_type
        )

    def configure_train(self, server_round, arrays, config, grid):
        selected = _select_clients(
            self.selection_rng, len(self.nodes), self.federation.client_fraction
        )
        return self._messages(server_round, arrays, config, selected, MessageType.TRAIN)

    def configure_evaluate(self, server_round, arrays, config, grid):
        partitions = range(len(self.nodes))
        return self._messages(
            server_round, arrays, config, partitions, MessageType.EVALUATE
        )

    def _checked(self, server_round, replies, message_type):
        """Replies in partition order; failures raised or recorded."""
        by_node = {}
        for reply in replies:
            by_node[reply.metadata.src_node_id] = reply
        failures, succeeded = [], []
        for node in self.expected[message_type]:
            k = self.partition_of[node]
            reply = by_node.get(node)
            if reply is None:
                failures.append((k, "no reply before the round's timeout"))
            elif reply.has_error():
                failures.append((k, reply.error.reason))
            else:
                succeeded.append((k, reply))
        what = "training" if message_type == MessageType.TRAIN else "evaluation"
        if failures and self.federation.on_client_error == "raise":
            k, reason = failures[0]
            raise RuntimeError(
                f"Client {k} (node {self.nodes[k]}) failed in round {server_round} "
                f"({what}): {reason} (set on_client_error='skip' to aggregate the "
                "other clients)."
            )
        if not succeeded:
            raise RuntimeError(
                f"Every selected client failed in round {server_round} ({what}); "
                f"first: client {failures[0][0]}: {failures[0][1]}"
            )
        for k, reason in failures:
            record = self._record(server_round, k)
            if what == "training":
                record.update(train_loss=None, skipped=reason)
            else:
                record["evaluation_skipped"] = reason
        return [reply for _, reply in sorted(succeeded, key=lambda item: item[0])]

    def _record(self, server_round, k):
        for record in self.history:
            if record["round"] == server_round and record["client"] == k:
                return record
        record = {"round": server_round, "client": k}
        self.history.append(record)
        return record

    def aggregate_train(self, server_round, replies):
        replies = self._checked(server_round, list(replies), MessageType.TRAIN)
        for reply in replies:
            k = self.partition_of[reply.metadata.src_node_id]
            metrics = reply.content["metrics"]
            self._record(server_round, k)["train_loss"] = float(metrics["train-loss"])
        return super().aggregate_train(server_round, replies)

    def aggregate_evaluate(self, server_round, replies):
        replies = self._checked(server_round, list(replies), MessageType.EVALUATE)
        for reply in replies:
            k = self.partition_of[reply.metadata.src_node_id]
            record = self._record(server_round, k)
            for key, value in reply.content["metrics"].items():
                if key.startswith("val_"):
                    record[key] = float(value)
        return super().aggregate_evaluate(server_round, replies)


def _wait_for_nodes(grid, n_nodes, timeout):
    deadline = time.monotonic() + timeout
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= n_nodes:
            return nodes
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"Only {len(nodes)} of {n_nodes} SuperNodes connected within "
                f"{timeout} s."
            )
        time.sleep(0.5)


def _query(grid, nodes, contents, message_type, timeout, what):
    """Send one message per node; return the replies by node, failing clearly."""
    messages = [
        Message(content, node, message_type)
        for node, content in zip(nodes, contents, strict=True)
    ]
    replies = {
        r.metadata.src_node_id: r
        for r in grid.send_and_receive(messages, timeout=timeout)
    }
    for node in nodes:
        reply = replies.get(node)
        if reply is None:
            raise RuntimeError(f"Node {node} did not answer the {what} in {timeout} s.")
        if reply.has_error():
            raise RuntimeError(f"Node {node} failed the {what}: {reply.error.reason}")
    return replies


def _discover(grid, timeout, connect_timeout):
    """Node ids in partition order, once every partition has connected."""
    first = _wait_for_nodes(grid, 1, connect_timeout)
    reply = _query(
        grid, first[:1], [RecordDict()], MessageType.QUERY, timeout, "discovery query"
    )[first[0]]
    n_partitions = int(reply.content["config"]["num-partitions"])
    nodes = _wait_for_nodes(grid, n_partitions, connect_timeout)
    replies = _query(
        grid,
        nodes,
        [RecordDict()] * len(nodes),
        MessageType.QUERY,
        timeout,
        "discovery query",
    )
    by_partition = {}
    for node in nodes:
        config = replies[node].content["config"]
        k, n = int(config["partition-id"]), int(config["num-partitions"])
        if n != n_partitions:
            raise ValueError(
                f"Nodes disagree on num-partitions: node {node} says {n}, another "
                f"{n_partitions}."
            )
        if k in by_partition:
            raise ValueError(
                f"Nodes {by_partition[k]} and {node} both have partition-id {k}."
            )
        by_partition[k] = node
    return [by_partition[k] for k in range(n_partitions)]


def _template(federation, seed, n_features, feature_names, classes):
    """A fitted estimator of the federation's kind, built without client data."""
    estimator = federation._client_estimator(seed)
    X = np.zeros((len(classes), n_features))
    if feature_names is not None:
        import pandas as pd

        X = pd.DataFrame(X, columns=feature_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return federation._trainer(classes).prime(
            estimator, _ClientData(X, np.asarray(classes), None)
        )


def _federate(federation, grid, *, timeout, connect_timeout):
    """The server's side of ``FederatedEstimator.fit``, over a Flower grid."""
    nodes = _discover(grid, timeout, connect_timeout)
    n_clients = len(nodes)
    seeds = _client_seeds(federation.random_state, n_clients)
    contents = [
        RecordDict({"config": ConfigRecord({"client-seed": int(seed)})})
        for seed in seeds
    ]
    replies = _query(grid, nodes, contents, _INIT, timeout, "initialisation")
    replies = [replies[node].content for node in nodes]
    described = [
        (
            int(reply["config"]["n-features"]),
            list(reply["config"]["classes"]),
            list(reply["config"].get("feature-names", [])) or None,
        )
        for reply in replies
    ]
    for k, description in enumerate(described):
        if description != described[0]:
            raise ValueError(
                f"Clients 0 and {k} disagree on (n_features, classes, feature "
                f"names): {described[0]} vs {description}."
            )
    n_features, classes, feature_names = described[0]
    history = []
    strategy = _federation_strategy(federation, nodes, seeds, history)
    result = strategy.start(
        grid=grid,
        # Like the in-process federation, start from client 0's initial model.
        initial_arrays=replies[0]["arrays"],
        num_rounds=federation.n_rounds,
        timeout=timeout,
    )
    fitted = federation
    fitted.classes_ = np.asarray(classes)
    fitted.clients_ = np.arange(n_clients)
    fitted.client_sizes_ = np.array(
        [int(reply["metrics"]["num-examples"]) for reply in replies]
    )
    class_counts = sum(
        np.array(reply["config"]["class-counts"], dtype=np.int64) for reply in replies
    )
    fitted.class_prior_ = class_counts / class_counts.sum()
    fitted.client_seeds_ = seeds
    fitted.n_features_in_ = n_features
    if feature_names is not None:
        fitted.feature_names_in_ = np.asarray(feature_names, dtype=object)
    template = _template(federation, seeds[0], n_features, feature_names, classes)
    fitted.estimator_ = set_parameters(template, result.arrays.to_numpy_ndarrays())
    # Personalised (Per-FedAvg) models stay on their clients.
    fitted.client_estimators_ = {}
    fitted.history_ = sorted(history, key=lambda r: (r["round"], r["client"]))
    fitted.federated_metrics_ = {
        int(round_): dict(metrics)
        for round_, metrics in result.evaluate_metrics_clientapp.items()
    }
    if fitted.federated_metrics_:
        # The server never sees training decisions; the clients' evaluation
        # rows of the last round tell it whether the model is degenerate.
        last = fitted.federated_metrics_[max(fitted.federated_metrics_)]
        warn_if_degenerate(
            float(last.get("val_selection_rate", np.nan)),
            "The federated model",
            rows="clients' evaluation rows",
        )
    return fitted


def _write(path, payload):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=directory, suffix=".partial")
    os.close(handle)
    joblib.dump(payload, scratch)
    os.replace(scratch, path)


def make_server_app(
    federation, *, result_path=None, timeout=3600.0, connect_timeout=300.0
):
    """Build a Flower ServerApp that runs a FederatedEstimator with Flower's strategies.

    The ServerApp finds the clients (every SuperNode reports its
    ``partition-id`` and ``num-partitions``; it waits until all have
    connected), sends each its seed (drawn from ``random_state`` as
    ``FederatedEstimator`` draws ``client_seeds_``), starts from client 0's
    initial parameters, and runs ``n_rounds`` rounds of the Flower strategy of
    the federation's ``aggregation`` (``FedAvg``, weighted by the clients'
    ``num-examples``, by default; ``FedMedian`` or ``FedTrimmedAvg``), each
    followed by an
    evaluation on every client (AUROC, DPD, DPR, DFPR and DPPV, aggregated by
    a weighted mean over the clients where defined). The result is the fitted
    ``FederatedEstimator`` that the same data would give in-process.

    Parameters
    ----------
    federation : FederatedEstimator
        The same unfitted object as given to :func:`make_client_app`.
    result_path : str or path-like, default=None
        Where the ServerApp writes its result with joblib (see
        :func:`load_result`); the run config key ``result-path`` overrides it.
        On failure the file records the error instead.
    timeout : float, default=3600.0
        Seconds to wait for the replies of one round.
    connect_timeout : float, default=300.0
        Seconds to wait for all SuperNodes to connect.

    Returns
    -------
    app : flwr.serverapp.ServerApp
        The ServerApp. The fitted ``FederatedEstimator`` it writes has
        ``estimator_`` (the global model), ``clients_`` (partition ids),
        ``client_sizes_``, ``client_seeds_``, ``classes_``,
        ``n_features_in_``, ``history_`` (per round and client: training
        loss and evaluation metrics, or ``skipped``) and
        ``federated_metrics_`` (the aggregated evaluation per round).

    Raises
    ------
    RuntimeError
        When a client fails with ``on_client_error="raise"``, or every client
        of a round fails (Flower alone would finish the run with an empty
        result); the result file records the error.

    See Also
    --------
    make_client_app : The matching ClientApp.
    skfedida.flower.run_in_process : Run both apps in one process.

    Examples
    --------
    >>> from skfedida.federated import FederatedEstimator
    >>> from skfedida.flower import make_server_app
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> federation = FederatedEstimator(FairPenaltyLogisticRegression(),
    ...                                 n_rounds=2, random_state=0)
    >>> app = make_server_app(federation, result_path="fedida.joblib")
    """
    _configured(federation, {})
    app = ServerApp()

    @app.main()
    def main(grid, context):
        path = context.run_config.get("result-path", result_path)
        try:
            fitted = _federate(
                _configured(federation, context.run_config),
                grid,
                timeout=timeout,
                connect_timeout=connect_timeout,
            )
        except Exception as exc:
            if path:
                _write(path, {"error": f"{type(exc).__name__}: {exc}"})
            raise
        if path:
            _write(path, {"estimator": fitted})

    return app


def load_result(path):
    """The fitted FederatedEstimator written by a skfedida ServerApp.

    Parameters
    ----------
    path : str or path-like
        The ServerApp's ``result_path`` (or run config ``result-path``).

    Returns
    -------
    federation : FederatedEstimator
        Fitted; predicts with the global model.

    Raises
    ------
    RuntimeError
        When the run failed; the message is the ServerApp's error.
    FileNotFoundError
        When there is no result: the run did not reach its end.
    ValueError
        When the file is not a result file (empty, truncated, foreign).

    Warnings
    --------
    A result file is a joblib (pickle) file, and loading a pickle can run
    code: load only results written by a ServerApp you trust.

    Examples
    --------
    >>> from skfedida.flower import load_result
    >>> load_result("no-such-run.joblib")
    Traceback (most recent call last):
    ...
    FileNotFoundError: No result at 'no-such-run.joblib': ...
    """
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"No result at {os.fspath(path)!r}: the ServerApp did not finish "
            "(see `flwr log <run-id>`)."
        )
    try:
        payload = joblib.load(path)
    except Exception as exc:  # empty, truncated, text or foreign files
        raise ValueError(
            f"{os.fspath(path)!r} is not a skfedida result file: it could not be "
            f"read ({type(exc).__name__}: {exc})."
        ) from exc
    if not isinstance(payload, dict) or not ({"error", "estimator"} & set(payload)):
        raise ValueError(
            f"{os.fspath(path)!r} is not a skfedida result file: it holds a "
            f"{type(payload).__name__}, not a ServerApp's result."
        )
    if "error" in payload:
        raise RuntimeError(f"The Flower run failed: {payload['error']}")
    return payload["estimator"]
