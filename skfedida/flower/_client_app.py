"""The skfedida Flower ClientApp: a FederatedEstimator's client rounds on a node."""

from __future__ import annotations

import numbers
import pickle
import uuid

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from .._compat import num_samples
from .._groups import encode_groups
from .._messages import (
    ANSWER,
    CLASS_COUNTS,
    CLIENT_SEED,
    DECLARED_GROUPS,
    FEATURE_NAMES,
    FITTED_STATES,
    N_BINS,
    N_FEATURES,
    NUM_EVAL_ROWS,
    NUM_EXAMPLES,
    NUM_PARTITIONS,
    NUM_ROWS,
    PARTITION_ID,
    PREPROCESSING_STATES,
    QUERY,
    RATE_TERM,
    RAW_COLUMNS,
    RAW_DTYPES,
    SELF_INITIALISED,
    SERVER_ROUND,
    TRAIN_LOSS,
    TREE_MODEL,
)
from ..federated._aggregation import WeightedMean
from ..federated._client import class_counts, clone_fitted
from ..federated._constraint_rounds import rows_groups
from ..federated._parameters import assign_parameters, parameter_arrays
from ..federated._pipeline import raw_schema
from ..federated._tree_client import tree_client
from ._codec import decode, encode
from ._protocol import (
    _REPORT_KEYS,
    _STATE_KEY,
    group_config,
    group_declaration,
    plan_for_run,
    rowset_declaration,
    tree_model_from_message,
)
from ._result import _write

# The node's record of which run its cached rows belong to (see _NodeRows).
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


class _NodeRows:
    """One node's rows for one run: loaded once, checked once per seed.

    A process that serves several messages of a node (``run_in_process``,
    a simulation) would otherwise load and re-check the same rows for every
    message. The key ties the cache to a token kept in the node's own
    ``context.state``: a new run starts with an empty state and so gets a new
    token, and a message that fails leaves the old state (hence its token)
    behind, so nothing cached outlives the run it was loaded for. The run and
    node configs are part of the key as well, should either change.
    """

    def __init__(self, key):
        self.key = key
        self.loaded = None
        self.parts = {}
        # (the pickled estimator in the node's state, that estimator): read
        # back only when the state holds other bytes than this node wrote.
        self.estimator = None
        # A federation of boosted trees: this node's client of the run's fit
        # (its binned rows, scores and node partitions between queries).
        self.trees = None


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


def _reply(message, *, arrays=None, metrics=None, config=None):
    content = RecordDict()
    if arrays is not None:
        content["arrays"] = ArrayRecord([np.asarray(a) for a in arrays])
    if metrics is not None:
        content["metrics"] = MetricRecord(metrics)
    if config is not None:
        content["config"] = ConfigRecord(config)
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


class _ClientNode:
    """What a node of a skfedida federation answers to each of the server's messages.

    One per ClientApp: it holds the federation, the user's ``load_data`` and
    the federation's classes, and caches, per node of the process, the rows
    of the run it serves (``_NodeRows``). Each handler takes Flower's
    ``(message, context)`` and returns the reply; ``make_client_app``
    registers them.
    """

    def __init__(self, federation, load_data, classes):
        self.federation = federation
        self.load_data = load_data
        self.classes = classes
        # Per node id, the rows of the run it serves last (one run at a time, so
        # a long-lived process keeps one copy of each node's rows).
        self.nodes = {}

    def node_rows(self, context):
        key = _run_key(context)
        rows = self.nodes.get(context.node_id)
        if rows is None or rows.key != key:
            rows = self.nodes[context.node_id] = _NodeRows(key)
        return rows

    def load(self, context):
        rows = self.node_rows(context)
        if rows.loaded is None:
            rows.loaded = _load(self.load_data, context)
        return rows.loaded

    def client_side(self, context, seed, states_text=None):
        # The same checks and split as FederatedEstimator.fit, on this
        # client's rows only; the rows never leave this node. Checked once
        # per run: every message of the run asks for the same rows.
        rows = self.node_rows(context)
        if states_text is None and _STATE_KEY in context.state:
            states_text = context.state[_STATE_KEY].get(PREPROCESSING_STATES)
        if (seed, states_text) not in rows.parts:
            plan = plan_for_run(self.federation, context.run_config)
            partition, n_partitions = _node_partition(context)
            states = None
            if plan.pipeline is not None:
                states = decode(
                    states_text
                    if states_text is not None
                    else context.state[_STATE_KEY][PREPROCESSING_STATES]
                )
            part = plan.client(
                self.load(context),
                partition,
                n_partitions,
                seed,
                self.classes,
                states=states,
            )
            rows.parts[(seed, states_text)] = (plan, part, n_partitions)
        return rows.parts[(seed, states_text)]

    def stored(self, context, *, to_train=False):
        # The estimator in the node's state. Unpickled once per state it
        # wrote: the same bytes object in the state means the same estimator
        # (a failed message leaves the state, and so its bytes, as they
        # were). One that is to be trained is taken out of the cache until
        # its training is stored (``store``), so a training that fails part
        # way leaves nothing half-trained behind.
        if _STATE_KEY not in context.state:
            self.start_without_skfedida_server(context)
        record = context.state[_STATE_KEY]
        pickled = record["estimator"]
        rows = self.node_rows(context)
        cached = rows.estimator
        if cached is not None and cached[0] is pickled:
            estimator = cached[1]
        else:
            estimator = pickle.loads(pickled)
        rows.estimator = None if to_train else (pickled, estimator)
        return estimator, int(record[CLIENT_SEED])

    def start_without_skfedida_server(self, context):
        # A training or evaluation message came first: a Flower server
        # running Flower's own strategy (FedAvg, FedProx, FedAdam...) sends no
        # initialisation query. The node sets itself up as skfedida's server
        # would have set it up: the seed FederatedEstimator draws for the
        # client at its partition, its rows checked and split, its estimator
        # primed. Preprocessing needs skfedida's statistics rounds.
        plan = plan_for_run(self.federation, context.run_config)
        if plan.pipeline is not None:
            raise RuntimeError(
                "This federation's estimator is a Pipeline whose preprocessing "
                "is fitted in statistics rounds, which only skfedida's ServerApp "
                "runs (make_server_app); a plain Flower strategy cannot."
            )
        # What only skfedida's ServerApp applies would be dropped silently
        # (no privacy under dp=, no reports for FairFed): said instead.
        server_side = [
            name
            for name, value, default in (
                ("dp", self.federation.dp, None),
                ("max_update_norm", self.federation.max_update_norm, None),
            )
            if value != default
        ]
        if plan.aggregator.report_metric is not None:
            server_side.append("aggregation (FairFed's reports)")
        elif plan.aggregator != WeightedMean():
            server_side.append("aggregation")
        if server_side:
            raise RuntimeError(
                f"This federation sets {', '.join(sorted(set(server_side)))}, "
                "which skfedida's ServerApp applies (make_server_app); under a "
                "Flower strategy of your own it would be left out. Leave it at "
                "its default in the federation given to make_client_app, or run "
                "skfedida's ServerApp."
            )
        partition, n_partitions = _node_partition(context)
        seed = int(plan.client_seeds(n_partitions)[partition])
        _, part, _ = self.client_side(context, seed)
        estimator = plan.initial_estimator(part, seed)
        context.state[_STATE_KEY] = ConfigRecord(
            {
                "estimator": pickle.dumps(estimator),
                CLIENT_SEED: seed,
                SELF_INITIALISED: True,
            }
        )

    def check_global_model(self, context, estimator, arrays):
        # A node that set itself up took its classes from its own labels
        # (no server told it the federation's): a client that lacks a class
        # has a model of another shape than the server's.
        if not context.state[_STATE_KEY].get(SELF_INITIALISED, False):
            return
        own = [np.shape(a) for a in parameter_arrays(estimator)]
        given = [np.shape(a) for a in arrays]
        if own != given:
            raise ValueError(
                f"The server's arrays have shapes {given}; this node's model has "
                f"{own}, for the classes of its own rows "
                f"{estimator.classes_.tolist()}. Without skfedida's ServerApp no "
                "server tells a node the federation's classes: pass them to "
                "make_client_app(..., classes=...)."
            )

    def store(self, context, estimator):
        pickled = pickle.dumps(estimator)
        context.state[_STATE_KEY]["estimator"] = pickled
        self.node_rows(context).estimator = (pickled, estimator)

    def evaluation_rows(self, context):
        # A federation of trees holds out no rows (its validation_fraction
        # is refused): a client counts its own X_eval, else its rows.
        loaded = self.load(context)
        if "X_eval" in loaded:
            rows = (
                loaded["X_eval"],
                loaded["y_eval"],
                loaded.get("sensitive_features_eval"),
            )
            return "eval", rows
        return "train", (loaded["X"], loaded["y"], loaded.get("sensitive_features"))

    def tree_groups(self, message, context):
        # Before group thresholds after trees: the groups of the rows this
        # client will count and their rows (labels and counts, no row).
        rowset, (X, _, S) = self.evaluation_rows(context)
        partition, _ = _node_partition(context)
        config = {PARTITION_ID: partition}
        if S is not None:
            config[DECLARED_GROUPS] = rowset_declaration(
                encode_groups(S, n_samples=num_samples(X)), rowset
            )
        return _reply(message, config=config)

    def tree_histograms(self, message, context, config):
        # Group thresholds after boosted trees: the client rebuilds the
        # federation's model from the server's message and counts its
        # evaluation rows' scores per (group, label, bin).
        from ..postprocessing._threshold_optimizer import client_histogram

        plan = plan_for_run(self.federation, context.run_config)
        _, (X, y, S) = self.evaluation_rows(context)
        partition, _ = _node_partition(context)
        if S is None:
            raise ValueError(
                "Group thresholds need the sensitive features of the client's "
                "evaluation rows: return 'sensitive_features' from load_data."
            )
        model = tree_model_from_message(
            plan.federation.estimator, decode(config[TREE_MODEL]), X
        )
        groups = encode_groups(S, n_samples=num_samples(X))
        counts = client_histogram(
            model.predict_proba(X)[:, 1],
            (np.asarray(y) == model.classes_[-1]).astype(np.intp),
            groups.codes,
            groups.n_groups,
            int(config[N_BINS]),
        )
        return _reply(
            message,
            arrays=[counts],
            config={PARTITION_ID: partition, **group_config(groups)},
        )

    def trees(self, message, context):
        # A federation of boosted trees: this client's answer to one query of
        # the server's fit, from its own rows; what it keeps between queries
        # (binned rows, scores, node partitions) stays in this process.
        query = decode(message.content["config"][QUERY])
        rows = self.node_rows(context)
        if query["kind"] == "describe":
            # The plan (a validated copy of the federation, about 1 ms) once
            # per fit, not once per query of every tree.
            plan = plan_for_run(self.federation, context.run_config)
            partition, n_partitions = _node_partition(context)
            # The seed FederatedEstimator draws for the client at this place.
            seeds = plan.client_seeds(n_partitions)
            loaded = self.load(context)
            rows.trees = tree_client(
                plan.federation,
                loaded["X"],
                loaded["y"],
                loaded.get("sensitive_features"),
                int(seeds[partition]),
                partition,
            )
        elif rows.trees is None:
            raise RuntimeError(
                f"A {query['kind']!r} tree query reached a node that holds no "
                "tree fit of this run (its process restarted, or the server "
                "skipped 'describe')."
            )
        return _reply(message, config={ANSWER: encode(rows.trees.answer(query))})

    def statistics(self, message, context):
        # A pipeline federation's preprocessing: this client's counts, sums
        # or category counts for the next federated transformer, computed on
        # its own rows after the transformers fitted so far.
        plan = plan_for_run(self.federation, context.run_config)
        config = message.content["config"]
        answer = plan.statistics_answer(
            self.load(context),
            decode(config[FITTED_STATES]),
            decode(config[QUERY]),
        )
        partition, _ = _node_partition(context)
        return _reply(message, config={PARTITION_ID: partition, ANSWER: encode(answer)})

    def discover(self, message, context):
        partition, n_partitions = _node_partition(context)
        # The rows this client holds, declared once: every count it sends
        # later (statistics, class counts, histograms, reports) must agree.
        loaded = self.load(context)
        declared = {NUM_ROWS: int(num_samples(loaded["X"]))}
        if "X_eval" in loaded:
            declared[NUM_EVAL_ROWS] = int(num_samples(loaded["X_eval"]))
        return _reply(
            message,
            metrics=declared,
            config={PARTITION_ID: partition, NUM_PARTITIONS: n_partitions},
        )

    def initialise(self, message, context):
        seed = int(message.content["config"][CLIENT_SEED])
        states_text = message.content["config"].get(PREPROCESSING_STATES)
        plan, part, n_partitions = self.client_side(context, seed, states_text)
        estimator = plan.initial_estimator(part, seed)
        record = {"estimator": pickle.dumps(estimator), CLIENT_SEED: seed}
        if states_text is not None:
            record[PREPROCESSING_STATES] = states_text
        context.state[_STATE_KEY] = ConfigRecord(record)
        config = {
            PARTITION_ID: part.partition,
            NUM_PARTITIONS: n_partitions,
            N_FEATURES: int(plan.n_features_in_),
            "classes": part.classes.tolist(),
            # Training rows per class: the federation's prevalence is their sum.
            CLASS_COUNTS: class_counts(part.train.y, part.classes).tolist(),
        }
        if plan.feature_names_in_ is not None:
            config[FEATURE_NAMES] = plan.feature_names_in_.tolist()
        # A constraint's counts are per group wherever the estimator reads
        # the groups (its own columns in column mode).
        constrained = plan.holds_constraint()
        declaration = group_declaration(
            part, rows_groups(estimator, part.train) if constrained else None
        )
        if declaration is not None:
            # Its groups on each set of rows it will use, and their sizes.
            config[DECLARED_GROUPS] = declaration
        if plan.pipeline is not None:
            # The raw table's columns and dtypes (not its rows): the server
            # rebuilds the fitted preprocessing from them and the statistics.
            columns, dtypes = raw_schema(self.load(context)["X"])
            if columns is not None:
                config[RAW_COLUMNS] = columns
            config[RAW_DTYPES] = dtypes
        return _reply(
            message,
            arrays=parameter_arrays(estimator),
            metrics={NUM_EXAMPLES: int(part.train.n)},
            config=config,
        )

    def histograms(self, message, context):
        # For a FederatedThresholdOptimizer: the global model's scores on this
        # client's evaluation rows, counted per (group, label, bin).
        from ..postprocessing._threshold_optimizer import client_histogram

        config = message.content["config"]
        if TREE_MODEL in config:
            return self.tree_histograms(message, context, config)
        estimator, seed = self.stored(context)
        _, part, _ = self.client_side(context, seed)
        model = assign_parameters(
            clone_fitted(estimator), message.content["arrays"].to_numpy_ndarrays()
        )
        X_eval, y_eval, groups = part.evaluation
        if groups is None:
            raise ValueError(
                "Group thresholds need the sensitive features of the client's "
                "evaluation rows: return 'sensitive_features' from load_data."
            )
        scores = model.predict_proba(X_eval)[:, 1]
        counts = client_histogram(
            scores,
            (np.asarray(y_eval) == part.classes[-1]).astype(np.intp),
            groups.codes,
            groups.n_groups,
            int(message.content["config"][N_BINS]),
        )
        return _reply(
            message,
            arrays=[counts],
            config={PARTITION_ID: part.partition, **group_config(groups)},
        )

    def rate_histograms(self, message, context):
        # A rate constraint held by the server: this client's counts of its
        # training rows' scores per (group, label, bin) under the round's model.
        estimator, seed = self.stored(context)
        plan, part, _ = self.client_side(context, seed)
        counts, weights, groups = plan.rate_histograms(
            part,
            estimator,
            message.content["arrays"].to_numpy_ndarrays(),
            int(message.content["config"][N_BINS]),
        )
        return _reply(
            message,
            arrays=[counts] if weights is None else [counts, weights],
            config={PARTITION_ID: part.partition, **group_config(groups)},
        )

    def train(self, message, context):
        arrays, server_round = _global_model(message, "training")
        estimator, seed = self.stored(context, to_train=True)
        self.check_global_model(context, estimator, arrays)
        plan, part, _ = self.client_side(context, seed)
        config = message.content.config_records["config"]
        # Flower's FedProx asks for its proximal term in the message's config,
        # a rate constraint held by the server sends the round's term.
        proximal_mu = config.get("proximal-mu")
        term = config.get(RATE_TERM)
        trained = plan.train_round(
            part,
            estimator,
            arrays,
            seed,
            server_round - 1,
            proximal_mu,
            rate_term=None if term is None else decode(term),
        )
        self.store(context, trained.model)
        reply = _reply(
            message,
            arrays=trained.parameters,
            metrics={
                NUM_EXAMPLES: int(trained.n_rows),
                TRAIN_LOSS: float(trained.loss),
            },
            config={PARTITION_ID: part.partition},
        )
        if trained.report is not None:
            # FairFed: the global model's counts per group, and which groups.
            reply.content["fairness"] = ArrayRecord(
                [trained.report[key] for key in _REPORT_KEYS]
            )
            reported = part.train.held_out or part.train
            for key, value in group_config(reported.groups).items():
                reply.content["config"][key] = value
        return reply

    def evaluate(self, message, context):
        arrays, round_ = _global_model(message, "evaluation")
        estimator, seed = self.stored(context)
        self.check_global_model(context, estimator, arrays)
        plan, part, _ = self.client_side(context, seed)
        metrics, model = plan.evaluate(part, estimator, arrays, seed, round_)
        path = context.node_config.get("model-path")
        if path and round_ == plan.n_rounds:
            # The model this client uses from now on stays on its node.
            _write(path, model)
        metrics[NUM_EXAMPLES] = int(part.n_evaluation)
        return _reply(message, metrics=metrics, config={PARTITION_ID: part.partition})


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
        evaluate on their held-out rows (``validation_fraction``) or else on
        their training rows.
    classes : array-like, default=None
        Labels of the whole federation. By default each client's own labels,
        which must then be all the classes (the server refuses clients that
        disagree); give them when a client may lack one, as clients of a
        multi-class outcome often do.

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
    node = _ClientNode(federation, load_data, classes)
    app.query("skfedida_tree_groups")(node.tree_groups)
    app.query("skfedida_trees")(node.trees)
    app.query("skfedida_statistics")(node.statistics)
    app.query()(node.discover)
    app.query("skfedida_init")(node.initialise)
    app.query("skfedida_histograms")(node.histograms)
    app.query("skfedida_rate_histograms")(node.rate_histograms)
    app.train()(node.train)
    app.evaluate()(node.evaluate)
    return app
