"""A client of a federation reached by message: its answer to each message.

``ClientNode`` is what a client answers to each of the server's messages
(``_lifecycle``'s kinds): discovery, statistics, initialisation, training,
evaluation, the rate constraint's and the thresholds' histograms, and the
boosted trees' queries, from its own rows, which never leave it. A backend
translates its messages into calls of these methods and their
``ClientReply`` back (Flower's ClientApp, ``skfedida.flower._client_app``),
and gives each call the node it runs on, which offers:

``id``
    The node, as the process tells its nodes apart.
``run_key()``
    What identifies the run the message belongs to: rows cached for one
    run are never used for another.
``partition()``
    The client's place among the clients and their number, checked.
``load()``
    The client's rows (a mapping: ``"X"``, ``"y"``, optionally
    ``"sensitive_features"``, ``"X_eval"``, ``"y_eval"``,
    ``"sensitive_features_eval"``), checked.
``run_config``
    The run's overrides of the federation's parameters.
``record()``, ``keep(record)``, ``update(key, value)``
    The client's record between messages (its pickled estimator, its seed,
    the preprocessing states), kept where the node keeps its state: read
    (None before the first), replaced, and one entry set.
``save_model(model)``
    Keep the model the client uses after the last round, where the node
    keeps it (or nowhere).
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass

import numpy as np

from .._codec import decode, encode
from .._compat import num_samples
from .._gate._rows import REPORT_KEYS
from .._groups import encode_groups
from .._messages import (
    ANSWER,
    CLASS_COUNTS,
    CLIENT_SEED,
    DECISION_COUNTS,
    DECLARED_GROUPS,
    FEATURE_NAMES,
    FEDERATION_CLASSES,
    FITTED_STATES,
    KEPT_ROUND,
    LABELS,
    N_BINS,
    N_FEATURES,
    NUM_EVAL_ROWS,
    NUM_EXAMPLES,
    NUM_PARTITIONS,
    NUM_ROWS,
    PARTITION_ID,
    PENDING_ESTIMATOR,
    PENDING_ROUND,
    PREPROCESSING_STATES,
    QUERY,
    RATE_TERM,
    RAW_COLUMNS,
    RAW_DTYPES,
    SELF_INITIALISED,
    SETTLED_ROUND,
    TRAIN_LOSS,
    TREE_MODEL,
)
from ..postprocessing._threshold_optimizer import client_histogram
from ._aggregation import WeightedMean
from ._client import _ClientData, class_counts, clone_fitted, decision_counts
from ._constraint_rounds import rows_groups
from ._parameters import assign_parameters, parameter_arrays
from ._pipeline import raw_schema
from ._run_config import plan_for_run
from ._tree_client import tree_client
from ._wire import (
    group_config,
    group_declaration,
    rowset_declaration,
    tree_model_from_message,
)


def _check_evaluation_groups(groups):
    """Group thresholds count per group: the evaluation rows' groups, needed."""
    if groups is None:
        raise ValueError(
            "Group thresholds need the sensitive features of the client's "
            "evaluation rows: return 'sensitive_features' from load_data."
        )


@dataclass(frozen=True)
class ClientReply:
    """What a client answers to one message.

    ``arrays`` (parameters or counts), ``metrics`` (counts, loss, metrics)
    and ``config`` (configuration, JSON answers) are None where the reply
    has none; ``fairness`` holds a FairFed report's arrays, in
    ``REPORT_KEYS`` order.
    """

    arrays: list | None = None
    metrics: dict | None = None
    config: dict | None = None
    fairness: list | None = None


class _NodeRows:
    """One node's rows for one run: loaded once, checked once per seed.

    A process that serves several messages of a node (``run_in_process``,
    a simulation) would otherwise load and re-check the same rows for every
    message. The key (``node.run_key()``) ties the cache to the run, so
    nothing cached outlives the run it was loaded for.
    """

    def __init__(self, key):
        self.key = key
        self.loaded = None
        self.parts = {}
        # (the pickled estimator in the node's record, that estimator): read
        # back only when the record holds other bytes than this node wrote.
        self.estimator = None
        # A federation of boosted trees: this node's client of the run's fit
        # (its binned rows, scores and node partitions between queries).
        self.trees = None


class ClientNode:
    """What a node of a skfedida federation answers to each of the server's messages.

    It holds the federation and its classes, and caches, per node of the
    process, the rows of the run it serves (``_NodeRows``). Each handler
    takes the node (see the module's docstring) and what the message
    carries, and returns a ``ClientReply``.

    Parameters
    ----------
    federation : FederatedEstimator
        The unfitted federation.
    classes : array-like or None
        The federation's classes, or None (each client's own labels).
    """

    def __init__(self, federation, classes):
        self.federation = federation
        self.classes = classes
        # Per node id, the rows of the run it serves last (one run at a time,
        # so a long-lived process keeps one copy of each node's rows).
        self.nodes = {}

    def node_rows(self, node):
        key = node.run_key()
        rows = self.nodes.get(node.id)
        if rows is None or rows.key != key:
            rows = self.nodes[node.id] = _NodeRows(key)
        return rows

    def load(self, node):
        rows = self.node_rows(node)
        if rows.loaded is None:
            rows.loaded = node.load()
        return rows.loaded

    def client_side(self, node, seed, states_text=None, classes_text=None):
        # The same checks and split as FederatedEstimator.fit, on this
        # client's rows only; the rows never leave this node. Checked once
        # per run: every message of the run asks for the same rows.
        rows = self.node_rows(node)
        record = node.record()
        if states_text is None and record is not None:
            states_text = record.get(PREPROCESSING_STATES)
        if classes_text is None and record is not None:
            classes_text = record.get(FEDERATION_CLASSES)
        if (seed, states_text) not in rows.parts:
            plan = plan_for_run(self.federation, node.run_config)
            partition, n_partitions = node.partition()
            states = None
            if plan.pipeline is not None:
                states = decode(
                    states_text
                    if states_text is not None
                    else (record or {})[PREPROCESSING_STATES]
                )
            part = plan.client(
                self.load(node),
                partition,
                n_partitions,
                seed,
                self.classes if classes_text is None else json.loads(classes_text),
                states=states,
            )
            rows.parts[(seed, states_text)] = (plan, part, n_partitions)
        return rows.parts[(seed, states_text)]

    def stored(self, node, *, to_train=False, config=None):
        # The estimator in the node's record, once the message's ``config``
        # has settled what it trained in its last round (``settle``).
        # Unpickled once per record it wrote: the same bytes object in the
        # record means the same estimator (a failed message leaves the
        # record, and so its bytes, as they were). One that is to be trained
        # is taken out of the cache until its training is held or stored,
        # so a training that fails part way leaves nothing half-trained.
        if node.record() is None:
            self.start_without_skfedida_server(node)
        if config is not None:
            self.settle(node, config)
        record = node.record()
        pickled = record["estimator"]
        rows = self.node_rows(node)
        cached = rows.estimator
        if cached is not None and cached[0] is pickled:
            estimator = cached[1]
        else:
            estimator = pickle.loads(pickled)
        rows.estimator = None if to_train else (pickled, estimator)
        return estimator, int(record[CLIENT_SEED])

    def start_without_skfedida_server(self, node):
        # A training or evaluation message came first: a Flower server
        # running Flower's own strategy (FedAvg, FedProx, FedAdam...) sends no
        # initialisation query. The node sets itself up as skfedida's server
        # would have set it up: the seed FederatedEstimator draws for the
        # client at its partition, its rows checked and split, its estimator
        # primed. Preprocessing needs skfedida's statistics rounds.
        plan = plan_for_run(self.federation, node.run_config)
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
        partition, n_partitions = node.partition()
        seed = int(plan.client_seeds(n_partitions)[partition])
        _, part, _ = self.client_side(node, seed)
        estimator = plan.initial_estimator(part, seed)
        node.keep(
            {
                "estimator": pickle.dumps(estimator),
                CLIENT_SEED: seed,
                SELF_INITIALISED: True,
            }
        )

    def check_global_model(self, node, estimator, arrays):
        # A node that set itself up took its classes from its own labels
        # (no server told it the federation's): a client that lacks a class
        # has a model of another shape than the server's.
        if not node.record().get(SELF_INITIALISED, False):
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

    def settle(self, node, config):
        """Keep what this node trained in a round once the server admitted it.

        skfedida's server tells a client, with every message after a round,
        the last round it decided on and the last round whose reply of this
        client it admitted. Until then the trained estimator is pending; a
        reply the server refused, or never received, leaves the node's
        estimator as it was before that round, as in-process.
        """
        record = node.record()
        if PENDING_ROUND not in record or SETTLED_ROUND not in config:
            return
        pending_round = int(record[PENDING_ROUND])
        if int(config[SETTLED_ROUND]) < pending_round:
            return
        settled = {
            key: value
            for key, value in record.items()
            if key not in (PENDING_ESTIMATOR, PENDING_ROUND)
        }
        if int(config[KEPT_ROUND]) == pending_round:
            settled["estimator"] = record[PENDING_ESTIMATOR]
        node.keep(settled)

    def hold(self, node, estimator, round_):
        """What this node trained in ``round_``, pending the server's word."""
        pickled = pickle.dumps(estimator)
        node.update(PENDING_ESTIMATOR, pickled)
        node.update(PENDING_ROUND, int(round_))
        self.node_rows(node).estimator = (pickled, estimator)

    def store(self, node, estimator):
        pickled = pickle.dumps(estimator)
        node.update("estimator", pickled)
        self.node_rows(node).estimator = (pickled, estimator)

    def evaluation_rows(self, node):
        # A federation of trees holds out no rows (its validation_fraction
        # is refused): a client counts its own X_eval, else its rows.
        loaded = self.load(node)
        if "X_eval" in loaded:
            rows = (
                loaded["X_eval"],
                loaded["y_eval"],
                loaded.get("sensitive_features_eval"),
            )
            return "eval", rows
        return "train", (loaded["X"], loaded["y"], loaded.get("sensitive_features"))

    def tree_groups(self, node):
        """Before group thresholds after trees: the groups of the rows to count.

        Their labels and rows per label (no row).
        """
        rowset, (X, _, S) = self.evaluation_rows(node)
        partition, _ = node.partition()
        config = {PARTITION_ID: partition}
        if S is not None:
            config[DECLARED_GROUPS] = rowset_declaration(
                encode_groups(S, n_samples=num_samples(X)), rowset
            )
        return ClientReply(config=config)

    def tree_histograms(self, node, config):
        # Group thresholds after boosted trees: the client rebuilds the
        # federation's model from the server's message and counts its
        # evaluation rows' scores per (group, label, bin).
        plan = plan_for_run(self.federation, node.run_config)
        _, (X, y, S) = self.evaluation_rows(node)
        partition, _ = node.partition()
        _check_evaluation_groups(S)
        model = tree_model_from_message(
            plan.federation.estimator, decode(config[TREE_MODEL]), X
        )
        return _histogram_reply(
            model,
            _ClientData(X, np.asarray(y), encode_groups(S, n_samples=num_samples(X))),
            model.classes_[-1],
            int(config[N_BINS]),
            partition,
        )

    def trees(self, node, config):
        """A federation of boosted trees: this client's answer to one query.

        From its own rows; what it keeps between queries (binned rows,
        scores, node partitions) stays in this process.
        """
        query = decode(config[QUERY])
        rows = self.node_rows(node)
        if query["kind"] == "describe":
            # The plan (a validated copy of the federation, about 1 ms) once
            # per fit, not once per query of every tree.
            plan = plan_for_run(self.federation, node.run_config)
            partition, n_partitions = node.partition()
            # The seed FederatedEstimator draws for the client at this place.
            seeds = plan.client_seeds(n_partitions)
            loaded = self.load(node)
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
        return ClientReply(config={ANSWER: encode(rows.trees.answer(query))})

    def statistics(self, node, config):
        """A pipeline federation's preprocessing: this client's statistics.

        Its counts, sums or category counts for the next federated
        transformer, on its own rows after the transformers fitted so far.
        """
        plan = plan_for_run(self.federation, node.run_config)
        answer = plan.statistics_answer(
            self.load(node),
            decode(config[FITTED_STATES]),
            decode(config[QUERY]),
        )
        partition, _ = node.partition()
        return ClientReply(config={PARTITION_ID: partition, ANSWER: encode(answer)})

    def discover(self, node):
        """The client's place and the rows it holds, declared once.

        Every count it sends later (statistics, class counts, histograms,
        reports) must agree with them.
        """
        partition, n_partitions = node.partition()
        loaded = self.load(node)
        declared = {NUM_ROWS: int(num_samples(loaded["X"]))}
        if "X_eval" in loaded:
            declared[NUM_EVAL_ROWS] = int(num_samples(loaded["X_eval"]))
        # Its labels (or the classes it was given): the server sends back
        # their union over the clients, the federation's classes, so that
        # a client without every class trains, as in-process.
        labels = np.unique(
            np.asarray(loaded["y"] if self.classes is None else self.classes)
        )
        return ClientReply(
            metrics=declared,
            config={
                PARTITION_ID: partition,
                NUM_PARTITIONS: n_partitions,
                LABELS: json.dumps(labels.tolist()),
            },
        )

    def initialise(self, node, config):
        """The client set up with the server's seed: its initial model.

        With its description of the data (features, classes, raw columns),
        its training rows per class and its groups on each set of rows.
        """
        seed = int(config[CLIENT_SEED])
        states_text = config.get(PREPROCESSING_STATES)
        classes_text = config.get(FEDERATION_CLASSES)
        plan, part, n_partitions = self.client_side(
            node, seed, states_text, classes_text
        )
        estimator = plan.initial_estimator(part, seed)
        record = {"estimator": pickle.dumps(estimator), CLIENT_SEED: seed}
        if classes_text is not None:
            record[FEDERATION_CLASSES] = classes_text
        if states_text is not None:
            record[PREPROCESSING_STATES] = states_text
        node.keep(record)
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
            part.train,
            part.evaluation.groups if part.has_eval_rows else None,
            rows_groups(estimator, part.train) if constrained else None,
        )
        if declaration is not None:
            # Its groups on each set of rows it will use, and their sizes.
            config[DECLARED_GROUPS] = declaration
        if plan.pipeline is not None:
            # The raw table's columns and dtypes (not its rows): the server
            # rebuilds the fitted preprocessing from them and the statistics.
            columns, dtypes = raw_schema(self.load(node)["X"])
            if columns is not None:
                config[RAW_COLUMNS] = columns
            config[RAW_DTYPES] = dtypes
        return ClientReply(
            arrays=parameter_arrays(estimator),
            metrics={NUM_EXAMPLES: int(part.train.n)},
            config=config,
        )

    def histograms(self, node, config, arrays):
        """For a FederatedThresholdOptimizer: the global model's score counts.

        On this client's evaluation rows, per (group, label, bin).
        """
        if TREE_MODEL in config:
            return self.tree_histograms(node, config)
        estimator, seed = self.stored(node, config=config)
        _, part, _ = self.client_side(node, seed)
        model = assign_parameters(clone_fitted(estimator), arrays())
        _check_evaluation_groups(part.evaluation.groups)
        return _histogram_reply(
            model,
            part.evaluation,
            part.classes[-1],
            int(config[N_BINS]),
            part.partition,
        )

    def rate_histograms(self, node, config, arrays):
        """A rate constraint held by the server: this client's counts.

        Of its training rows' scores per (group, label, bin) under the
        round's model.
        """
        estimator, seed = self.stored(node, config=config)
        plan, part, _ = self.client_side(node, seed)
        histograms = plan.rate_histograms(
            part, estimator, arrays(), int(config[N_BINS])
        )
        return ClientReply(
            arrays=[histograms.counts]
            if histograms.weights is None
            else [histograms.counts, histograms.weights],
            config={PARTITION_ID: part.partition, **group_config(histograms)},
        )

    def train(self, node, config, arrays, server_round):
        """One training round from the global ``arrays``: the client's update."""
        estimator, seed = self.stored(node, to_train=True, config=config)
        self.check_global_model(node, estimator, arrays)
        plan, part, _ = self.client_side(node, seed)
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
        if node.record().get(SELF_INITIALISED, False):
            # A Flower strategy of the user's says nothing of its replies.
            self.store(node, trained.model)
        else:
            self.hold(node, trained.model, server_round)
        reply_config = {PARTITION_ID: part.partition}
        fairness = None
        if trained.report is not None:
            # FairFed: the global model's counts per group, and which groups.
            fairness = [trained.report[key] for key in REPORT_KEYS]
            reported = part.train.held_out or part.train
            reply_config.update(group_config(reported.groups))
        return ClientReply(
            arrays=trained.parameters,
            metrics={
                NUM_EXAMPLES: int(trained.n_rows),
                TRAIN_LOSS: float(trained.loss),
            },
            config=reply_config,
            fairness=fairness,
        )

    def decision_query(self, node, config, arrays):
        """After the last round: the model this client uses, and its decisions.

        The client saves the model it uses from now on (its personalised
        one under Per-FedAvg, else the global ``arrays``) and counts its
        training rows per class that model predicts.
        """
        estimator, seed = self.stored(node, config=config)
        arrays = arrays()
        self.check_global_model(node, estimator, arrays)
        plan, part, _ = self.client_side(node, seed)
        model = plan.final_model(part, estimator, arrays, seed)
        node.save_model(model)
        counts = decision_counts(model, part.train.X, part.classes)
        return ClientReply(
            config={PARTITION_ID: part.partition, DECISION_COUNTS: counts.tolist()}
        )

    def evaluate(self, node, arrays, round_, config=None):
        """The global ``arrays`` evaluated on this client's evaluation rows."""
        estimator, seed = self.stored(node, config=config)
        self.check_global_model(node, estimator, arrays)
        plan, part, _ = self.client_side(node, seed)
        metrics, model = plan.evaluate(part, estimator, arrays, seed, round_)
        if round_ == plan.n_rounds and node.record().get(SELF_INITIALISED, False):
            # Under a Flower strategy of the user's, the last evaluation is the
            # last message: the model this client uses from now on stays on
            # its node. skfedida's server sends the decision query for that.
            node.save_model(model)
        metrics[NUM_EXAMPLES] = int(part.n_evaluation)
        return ClientReply(metrics=metrics, config={PARTITION_ID: part.partition})


def _histogram_reply(model, rows, positive, n_bins, partition):
    """A model's scores on ``rows`` (``_ClientData``) counted: the histogram reply.

    Per (group, label, bin), the label being whether y is ``positive``, with
    the groups' categories the server merges the counts by.
    """
    counts = client_histogram(
        model.predict_proba(rows.X)[:, 1],
        (np.asarray(rows.y) == positive).astype(np.intp),
        rows.groups.codes,
        rows.groups.n_groups,
        n_bins,
    )
    return ClientReply(
        arrays=[counts],
        config={PARTITION_ID: partition, **group_config(rows.groups)},
    )
