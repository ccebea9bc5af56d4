"""The skfedida Flower ServerApp: FederatedEstimator rounds on Flower strategies."""

from __future__ import annotations

import time

import numpy as np
from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Message,
    MessageType,
    MetricRecord,
    RecordDict,
)
from flwr.serverapp import ServerApp
from flwr.serverapp import strategy as flwr_strategies

from .._gate._checks import parse_groups, read_reply, unless_malformed
from .._gate._ledger import declared_sets
from .._gate._model import (
    claims_summary,
    evaluation_reply_problem,
    training_round_problem,
)
from .._gate._policy import ReplyGate, RoundHistory
from .._gate._rows import (
    attributes_consensus,
    data_description,
    description_consensus,
    discovery_problem,
    group_declaration_problem,
    initialisation_claim_problem,
    named_histogram_problem,
    named_report_claim_problem,
)
from .._gate._statistics import Unreadable
from .._messages import (
    ANSWER,
    CLASS_COUNTS,
    CLIENT_SEED,
    N_BINS,
    NUM_EXAMPLES,
    NUM_PARTITIONS,
    PARTITION_ID,
    PREPROCESSING_STATES,
    RATE_TERM,
    SERVER_ROUND,
    TRAIN_LOSS,
    TREE_MODEL,
)
from ..ensemble._boosting import Failed, TreeChannel
from ..federated._aggregation import class_prior
from ..federated._parameters import parameter_arrays
from ..federated._plan import fitted_pipeline, server_preprocessing
from ..federated._privacy import check_target_delta
from ..federated._tree_server import federated_trees, prior_weighted
from ..federated._trees import adopt_trees, check_tree_federation, is_boosted_trees
from ..metrics._registry import VALIDATION_PREFIX, share_key
from ..postprocessing._threshold_optimizer import (
    fit_from_client_counts,
    server_postprocessor,
)
from ..preprocessing._base import fit_tree
from ._codec import decode, encode
from ._protocol import (
    _HISTOGRAMS,
    _INIT,
    _RATE_HISTOGRAMS,
    _REPORT_KEYS,
    _STATISTICS,
    _TREE_GROUPS,
    _TREES,
    REPLY_METRICS,
    merged_groups,
    plan_for_run,
    remote_failure,
    tree_model_message,
)
from ._result import _write_result


def _weighted_metrics(records, weight_key):
    """The clients' metrics summarised (``claims_summary``): mean and median."""
    reports, weights = [], []
    for record in records:
        metrics = next(iter(record.metric_records.values()))
        weights.append(float(metrics[weight_key]))
        reports.append({k: v for k, v in metrics.items() if k != weight_key})
    return MetricRecord(claims_summary(reports, weights))


def _federation_strategy(plan, nodes, seeds, history, declared, gate, classes=()):
    """The Flower strategy of the federation's aggregation, with its checks.

    FedAvg, FedMedian or FedTrimmedAvg from ``flwr.serverapp.strategy``: the
    aggregation is Flower's own, and ``FederatedEstimator`` in-process runs
    the same arithmetic (``skfedida.federated``'s aggregators).
    """
    base = getattr(flwr_strategies, plan.aggregator.flower_strategy)
    strategy_class = type("_FederationStrategy", (_FederationChecks, base), {})
    return strategy_class(plan, nodes, seeds, history, declared, gate, classes)


class _FederationChecks:
    """A Flower strategy that moves FederatedEstimator's rounds over the grid.

    Every rule of a round is the round engine's (``RoundEngine``: selection,
    the failure policy, the aggregator's context, clipping, DP and the
    records) and every check the reply gate's (``skfedida._gate``), as
    in-process; this class only turns Flower's messages into the engine's
    outcomes and back. Aggregation is the Flower strategy's own (FedAvg
    weights ``num-examples``); replies are put in partition order first, so
    the arithmetic runs in the same order as in-process and the result is
    the same to the last bit. Clients are selected with the federation's
    seeded stream (Flower's sampling is unseeded), and a failed or missing
    reply is an error or a recorded skip (Flower would carry on).
    """

    def __init__(self, plan, nodes, seeds, history, declared, gate, classes=()):
        n_clients = len(nodes)
        super().__init__(
            min_train_nodes=n_clients,
            min_evaluate_nodes=n_clients,
            min_available_nodes=n_clients,
            train_metrics_aggr_fn=_weighted_metrics,
            evaluate_metrics_aggr_fn=_weighted_metrics,
            **plan.aggregator.flower_options(),
        )
        self.plan = plan
        self.nodes = nodes
        self.partition_of = {node: k for k, node in enumerate(nodes)}
        self.selection_rng = plan.selection_stream(seeds)
        self.engine = plan.round_engine(
            RoundHistory(history), name=lambda k: f"Client {k} (node {self.nodes[k]})"
        )
        self.expected = {}
        # What each client declared when it joined (its sets of rows) and
        # the run's gate (the ledger of its claims about them).
        self.declared = declared
        self.gate = gate
        # With more than two classes clients also report each class's share
        # of their decisions (val_share[<class>]); only the federation's own.
        self.allowed_metrics = REPLY_METRICS | {
            VALIDATION_PREFIX + share_key(label)
            for label in (classes if len(classes) > 2 else ())
        }
        self.round_arrays = None
        # A training reply's arrays, decoded once for its check and the
        # aggregation (ArrayRecord to numpy parses each array's .npy bytes).
        self._decoded = {}
        # A rate constraint held by the server, over the groups the clients
        # declared for their training rows (None: none).
        self.constraint = plan.server_constraint(
            label
            for k in range(len(declared))
            for label in (gate.ledger.declared_groups(k, "train") or {})
        )
        #: The queries' timeout (``Strategy.start``'s), set before it runs.
        self.query_timeout = None

    def _messages(self, server_round, arrays, config, partitions, message_type):
        config[SERVER_ROUND] = server_round
        record = RecordDict(
            {self.arrayrecord_key: arrays, self.configrecord_key: config}
        )
        self.expected[message_type] = [self.nodes[k] for k in partitions]
        return [
            Message(content=record, message_type=message_type, dst_node_id=node)
            for node in self.expected[message_type]
        ]

    def configure_train(self, server_round, arrays, config, grid):
        if self.constraint is not None:
            # The round's operating point and rates from every client's
            # counts under the round's model, then its term for training.
            config[RATE_TERM] = encode(
                self.constraint.step(self.rate_histograms(grid, server_round, arrays))
            )
        self.round_arrays = arrays.to_numpy_ndarrays()
        if hasattr(self, "current_arrays"):
            # QFedAvg steps from the round's global parameters.
            self.current_arrays = arrays.copy()
        selected = self.engine.select(self.selection_rng, len(self.nodes))
        return self._messages(server_round, arrays, config, selected, MessageType.TRAIN)

    def rate_histograms(self, grid, round_number, arrays):
        """Every client's rate-constraint counts for ``arrays``, through the gate.

        The in-process server's rules (``FederatedConstraint.problem``: the
        groups it declared, whole counts of its training rows per group and
        label as it claimed them before) and policy (``admit_statistics``).
        """
        content = RecordDict(
            {
                "arrays": arrays,
                "config": ConfigRecord({N_BINS: int(self.constraint.n_bins)}),
            }
        )
        replies = _query(
            grid,
            self.nodes,
            [content] * len(self.nodes),
            _RATE_HISTOGRAMS,
            self.query_timeout,
            "rate histograms query",
            failures=True,
        )
        answers, outcomes = {}, []
        for k, node in enumerate(self.nodes):
            reply = replies[node]
            if isinstance(reply, str):
                outcomes.append((k, reply, None))
                continue
            groups, problem = parse_groups(reply.content["config"])
            if problem is None:
                arrays, problem = read_reply(
                    lambda reply=reply: reply.content["arrays"].to_numpy_ndarrays()
                )
            if problem is None and len(arrays) not in (1, 2):
                problem = f"it sends {len(arrays)} arrays, not its counts (and weights)"
            if problem is None:
                answer = (arrays[0], arrays[1] if len(arrays) == 2 else None, groups[0])
                problem = self.constraint.problem(
                    answer, self.gate.ledger, k, self.declared[k].sizes["train"]
                )
            if problem is None:
                answers[k] = answer
                outcomes.append((k, None, None))
            else:
                outcomes.append((k, f"its reply cannot be used: {problem}", None))
        admitted = self.engine.admit_statistics(round_number, outcomes)
        return [answers[k] for k in admitted]

    def configure_evaluate(self, server_round, arrays, config, grid):
        partitions = range(len(self.nodes))
        return self._messages(
            server_round, arrays, config, partitions, MessageType.EVALUATE
        )

    def _outcomes(self, replies, message_type):
        """Per expected client, in order: ``(k, reason or None, None)``, replies."""
        by_node = {reply.metadata.src_node_id: reply for reply in replies}
        if message_type == MessageType.TRAIN and self.engine.reporting:
            self.round_names = attributes_consensus(
                self._named(replies),
                lambda client: f"client {client[0]} (node {client[1]})",
            )
        outcomes, usable = [], {}
        for node in self.expected[message_type]:
            k = self.partition_of[node]
            reply = by_node.get(node)
            if reply is None:
                reason = "no reply before the round's timeout"
            elif reply.has_error():
                reason = remote_failure(reply.error.reason)
            elif (problem := self._reply_problem(k, reply, message_type)) is not None:
                reason = f"its reply cannot be used: {problem}"
            else:
                reason, usable[k] = None, reply
            outcomes.append((k, reason, None))
        return outcomes, usable

    def _named(self, replies):
        """``((k, node), names)`` of every reply naming its groups readably."""
        named = []
        for reply in replies:
            if reply.has_error():
                continue
            parsed, _ = parse_groups(reply.content.config_records.get("config", {}))
            if parsed is not None:
                node = reply.metadata.src_node_id
                named.append(((self.partition_of.get(node), node), parsed[1]))
        return named

    def _reply_problem(self, k, reply, message_type):
        """What is wrong with a reply (the gate's checks), or None."""
        content = reply.content
        declared = self.declared[k]
        sizes = declared.sizes
        if message_type != MessageType.TRAIN:
            return unless_malformed(
                lambda: evaluation_reply_problem(
                    dict(content["metrics"]),
                    allowed=self.allowed_metrics,
                    declared_rows=sizes[declared.evaluation],
                )
            )

        def report():
            rowset = declared.reports
            return named_report_claim_problem(
                content["config"],
                lambda: content["fairness"].to_numpy_ndarrays(),
                self.round_names,
                ledger=self.gate.ledger,
                k=k,
                rowset=rowset,
                declared_rows=sizes[rowset],
            )

        def check():
            metrics = dict(content["metrics"])
            return training_round_problem(
                self._arrays_of(content),
                metrics.get(NUM_EXAMPLES),
                metrics.get(TRAIN_LOSS),
                reference=self.round_arrays,
                declared_rows=sizes["train"],
                report=report if self.engine.reporting else None,
            )

        return unless_malformed(check)

    def _arrays_of(self, content):
        """A training reply's arrays as numpy arrays, decoded once per round."""
        record = content["arrays"]
        decoded = self._decoded.get(id(record))
        if decoded is None or decoded[0] is not record:
            decoded = self._decoded[id(record)] = (record, record.to_numpy_ndarrays())
        return decoded[1]

    def aggregate_train(self, server_round, replies):
        try:
            return self._aggregate_train(server_round, replies)
        finally:
            self._decoded.clear()

    def _aggregate_train(self, server_round, replies):
        outcomes, usable = self._outcomes(list(replies), MessageType.TRAIN)
        admitted = sorted(
            self.engine.admit_training(
                server_round,
                outcomes,
                losses={
                    k: float(reply.content["metrics"][TRAIN_LOSS])
                    for k, reply in usable.items()
                },
            )
        )
        replies = [usable[k] for k in admitted]
        federation = self.plan.federation
        engine = self.engine

        def aggregate(parameter_lists, weights):
            if self.plan.aggregator.runs_as_flower_strategy:
                # Flower's own strategy, on the (possibly clipped) arrays.
                return super(_FederationChecks, self).aggregate_train(
                    server_round,
                    _with_arrays(replies, parameter_lists, self.arrayrecord_key),
                )
            # FairFed (on the clients' reports) or a user's Flower strategy
            # (with its state across rounds): the aggregator's own call, in
            # partition order, as in-process.
            parameters = self.plan.aggregator.aggregate(
                parameter_lists,
                weights,
                **engine.aggregator_context(
                    clients=admitted,
                    reports=_aligned_reports(replies) if engine.reporting else None,
                    global_parameters=self.round_arrays,
                    losses=[
                        float(reply.content["metrics"][TRAIN_LOSS]) for reply in replies
                    ],
                    round_number=server_round,
                ),
            )
            return self._with_metrics(parameters, replies)

        result = engine.aggregate(
            aggregate,
            [self._arrays_of(reply.content) for reply in replies],
            [int(reply.content["metrics"][NUM_EXAMPLES]) for reply in replies],
            round_number=server_round,
            admitted=admitted,
            global_parameters=self.round_arrays,
            n_selected=len(self.expected[MessageType.TRAIN]),
        )
        if federation.dp is not None:
            # The private mean of skfedida._privacy (Flower's arithmetic).
            return self._with_metrics(result, replies)
        return result

    def _with_metrics(self, parameters, replies):
        metrics = self.train_metrics_aggr_fn(
            [reply.content for reply in replies], self.weighted_by_key
        )
        return ArrayRecord([np.asarray(a) for a in parameters]), metrics

    def aggregate_evaluate(self, server_round, replies):
        outcomes, usable = self._outcomes(list(replies), MessageType.EVALUATE)
        admitted = sorted(self.engine.admit_evaluation(server_round, outcomes))
        for k in admitted:
            record = self.engine.records.record(server_round, k)
            for key, value in usable[k].content["metrics"].items():
                if key.startswith("val_"):
                    record[key] = float(value)
        return super().aggregate_evaluate(server_round, [usable[k] for k in admitted])


def _with_arrays(replies, parameter_lists, key):
    """Training replies as Flower's strategy reads them, with the engine's arrays.

    New messages, built with Flower's public constructor, that carry each
    reply's records with its arrays replaced by the round engine's (clipped
    ones, under ``max_update_norm``); the replies stay as they were received.
    A strategy reads only a reply's content and whether it is an error.
    """
    messages = []
    for reply, arrays in zip(replies, parameter_lists, strict=True):
        content = RecordDict({name: reply.content[name] for name in reply.content})
        content[key] = ArrayRecord([np.asarray(a) for a in arrays])
        messages.append(
            Message(
                content=content,
                message_type=reply.metadata.message_type,
                dst_node_id=reply.metadata.src_node_id,
            )
        )
    return messages


def _aligned_reports(replies):
    """FairFed reports of clients with their own group codes, on common groups."""
    merged, codes = merged_groups([r.content["config"] for r in replies])
    reports = []
    for reply, positions in zip(replies, codes, strict=True):
        arrays = reply.content["fairness"].to_numpy_ndarrays()
        report = {}
        for key, values in zip(_REPORT_KEYS, arrays, strict=True):
            aligned = np.zeros(merged.n_groups)
            aligned[positions] = values
            report[key] = aligned
        reports.append(report)
    return reports


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


def _query(grid, nodes, contents, message_type, timeout, what, failures=False):
    """Send one message per node; return the replies by node, failing clearly.

    With ``failures=True`` a node that sends no reply, or an error reply (its
    ClientApp raised), is not an error here: its entry is the reason, a
    string, for the gate to handle under ``on_client_error``.
    """
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
            reason = f"no reply to the {what} within {timeout} s"
        elif reply.has_error():
            reason = (
                f"its ClientApp failed the {what}: {remote_failure(reply.error.reason)}"
            )
        else:
            continue
        if not failures:
            raise RuntimeError(f"Node {node}: {reason}.")
        replies[node] = reason
    return replies


def _discover(grid, timeout, connect_timeout):
    """Node ids in partition order, once every partition has connected.

    Also what each declared: the rows it loaded and its evaluation rows (None
    without), by partition. A node that declares no row count is an error
    naming it: the federation cannot check anything it says after.
    """
    first = _wait_for_nodes(grid, 1, connect_timeout)
    reply = _query(
        grid, first[:1], [RecordDict()], MessageType.QUERY, timeout, "discovery query"
    )[first[0]]
    n_partitions = int(reply.content["config"][NUM_PARTITIONS])
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
        k, n = int(config[PARTITION_ID]), int(config[NUM_PARTITIONS])
        if n != n_partitions:
            raise ValueError(
                f"Nodes disagree on num-partitions: node {node} says {n}, another "
                f"{n_partitions}."
            )
        if not 0 <= k < n_partitions:
            raise ValueError(
                f"Node {node} has partition-id {k}, outside 0..{n_partitions - 1} "
                f"(num-partitions {n_partitions}): give each node a distinct "
                f"partition-id from 0 to num-partitions - 1 in its node config."
            )
        if k in by_partition:
            raise ValueError(
                f"Nodes {by_partition[k]} and {node} both have partition-id {k}."
            )
        by_partition[k] = node
    nodes = [by_partition[k] for k in range(n_partitions)]
    declared = []
    for k, node in enumerate(nodes):
        n_rows, n_eval, problem = discovery_problem(
            replies[node].content.metric_records.get("metrics", {})
        )
        if problem is not None:
            raise RuntimeError(
                f"Client {k} (node {node}) failed the discovery query: {problem}."
            )
        declared.append((n_rows, n_eval))
    return nodes, declared


def _postprocess(
    postprocessor,
    fitted,
    global_parameters,
    grid,
    nodes,
    timeout,
    declared,
    gate,
    tree_model=None,
):
    """A FederatedThresholdOptimizer's fit: the clients' counts, summed here.

    Every client's counts pass the gate first: its groups (one value per
    attribute, the federation's attributes), counts of the shape asked,
    whole, >= 0, adding up to its evaluation rows and agreeing with what it
    said before about the same rows. A client that fails is an error, or
    (``on_client_error="skip"``) left out: zero counts, the federation's
    thresholds.
    """
    post = server_postprocessor(postprocessor)
    if tree_model is None:
        content = RecordDict(
            {
                "arrays": ArrayRecord([np.asarray(a) for a in global_parameters]),
                "config": ConfigRecord({N_BINS: int(post.n_bins)}),
            }
        )
    else:
        # Boosted trees: the fitted trees, bins and categories (JSON), from
        # which each client rebuilds the model that scores its rows.
        content = RecordDict(
            {
                "config": ConfigRecord(
                    {N_BINS: int(post.n_bins), TREE_MODEL: encode(tree_model)}
                )
            }
        )
    contents = [content for _ in nodes]
    replies = _query(
        grid, nodes, contents, _HISTOGRAMS, timeout, "histogram query", failures=True
    )
    replies = [replies[node] for node in nodes]
    parsed = [
        (None, reply)
        if isinstance(reply, str)
        else parse_groups(reply.content.config_records.get("config", {}))
        for reply in replies
    ]
    replies = [None if isinstance(r, str) else r.content for r in replies]
    names = attributes_consensus(
        [(k, groups[1]) for k, (groups, _) in enumerate(parsed) if groups], gate.name
    )
    problems = []
    for k, (reply, (groups, problem)) in enumerate(zip(replies, parsed, strict=True)):
        if problem is None:
            rowset = declared[k].evaluation
            labels, reply_names = groups
            problem = named_histogram_problem(
                lambda reply=reply: reply["arrays"].to_numpy_ndarrays(),
                reply_names,
                names,
                labels,
                n_bins=post.n_bins,
                ledger=gate.ledger,
                k=k,
                rowset=rowset,
                declared_rows=declared[k].sizes[rowset],
            )
        problems.append((k, problem))
    admitted = gate.admit("histogram query", problems)
    merged, codes = merged_groups([replies[k]["config"] for k in admitted])
    counts = np.zeros((len(nodes), merged.n_groups, 2, post.n_bins))
    for k, positions in zip(admitted, codes, strict=True):
        counts[k, positions] = replies[k]["arrays"].to_numpy_ndarrays()[0]
    return fit_from_client_counts(
        post,
        fitted,
        counts,
        groups=merged.labels,
        sensitive_names=merged.names,
        history=[r for r in gate.records if r["stage"] == "histogram query"],
    )


def _preprocessing_states(plan, grid, nodes, timeout, gate, rows):
    """A pipeline federation's transformers fitted from the clients' statistics.

    One query per statistics round (``skfedida.preprocessing``): every client
    answers from its own rows; the server checks every answer (the gate, with
    the rows each client declared) and combines the admitted ones, and sends
    the fitted states of the transformers so far with the next query.
    """

    def ask(states, query):
        content = RecordDict(
            {"config": ConfigRecord({"states": encode(states), "query": encode(query)})}
        )
        replies = _query(
            grid,
            nodes,
            [content] * len(nodes),
            _STATISTICS,
            timeout,
            "statistics query",
            failures=True,
        )
        answers = []
        for node in nodes:
            if isinstance(replies[node], str):
                answers.append(Unreadable(replies[node]))
                continue
            try:
                answers.append(decode(replies[node].content["config"][ANSWER]))
            except Exception as exc:  # whatever a client wrote
                answers.append(Unreadable(f"{type(exc).__name__}: {exc}"))
        return answers

    return fit_tree(plan.preprocessing, ask, gate, rows)


def _initialisation_problem(k, reply, declared, agreed, plan, seed, gate):
    """One client's initialisation reply checked (the gate's rules), or None."""
    classes = agreed.classes

    def check():
        reference = parameter_arrays(
            plan.template(seed, agreed.n_features, agreed.feature_names, classes)
        )
        return initialisation_claim_problem(
            k,
            n_rows=reply["metrics"][NUM_EXAMPLES],
            class_counts=lambda: reply["config"][CLASS_COUNTS],
            n_classes=len(classes),
            # Decoded only when the counts pass, as the checks run in order.
            initial_parameters=lambda: reply["arrays"].to_numpy_ndarrays(),
            reference=reference,
            config=reply["config"],
            sizes=declared.sizes,
            ledger=gate.ledger,
        )

    return unless_malformed(check)


def _tree_sender(grid, nodes, timeout):
    """The trees' transport over Flower: ``send(query, active)`` (``TreeChannel``)."""

    def send(query, active):
        content = RecordDict({"config": ConfigRecord({"query": encode(query)})})
        targets = [nodes[k] for k in active]
        replies = _query(
            grid,
            targets,
            [content] * len(targets),
            _TREES,
            timeout,
            f"tree query {query['kind']!r}",
            failures=True,
        )
        answers = {}
        for k in active:
            reply = replies[nodes[k]]
            if isinstance(reply, str):  # no reply, or its ClientApp failed
                answers[k] = Failed(RuntimeError(reply))
                continue
            try:
                answers[k] = decode(reply.content["config"][ANSWER])
            except Exception as exc:  # whatever a client wrote
                answers[k] = Failed(exc)
        return answers

    return send


def _federate_trees(plan, grid, nodes, rows, timeout, postprocessor=None):
    """A federation of boosted trees over Flower: the in-process fit's queries."""
    federation = plan.federation
    check_tree_federation(federation)
    gate = ReplyGate(
        plan.on_client_error, name=lambda k: f"Client {k} (node {nodes[k]})"
    )
    training_rows = [
        declared_sets(n_rows, n_eval, federation.validation_fraction).sizes["train"]
        for n_rows, n_eval in rows
    ]
    channel = TreeChannel(
        _tree_sender(grid, nodes, timeout), len(nodes), gate=gate, rows=training_rows
    )
    model, described = federated_trees(
        federation.estimator,
        channel,
        resampled=federation.sampler is not None,
        prior_weighted=prior_weighted(federation),
        stopping=federation.early_stopping_aggregation,
    )
    fitted = adopt_trees(
        federation,
        model,
        described,
        clients=np.arange(len(nodes)),
        seeds=plan.client_seeds(len(nodes)),
        history=[{"round": 0, **record} for record in gate.records],
    )
    if postprocessor is None:
        return fitted
    # Group thresholds: each client first declares its groups and their rows
    # on the rows it will count (as initialisation does for averaged
    # models), then counts its scores of the model rebuilt from the trees.
    declared = [
        declared_sets(n_rows, n_eval, federation.validation_fraction)
        for n_rows, n_eval in rows
    ]
    replies = _query(
        grid,
        nodes,
        [RecordDict()] * len(nodes),
        _TREE_GROUPS,
        timeout,
        "group declaration",
        failures=True,
    )
    problems = []
    for k, node in enumerate(nodes):
        reply = replies[node]
        if isinstance(reply, str):
            problems.append((k, reply))
            continue
        config, problem = read_reply(lambda reply=reply: reply.content["config"])
        if problem is None:
            _, problem = group_declaration_problem(
                config, declared[k].sizes, gate.ledger, k
            )
        problems.append((k, problem))
    gate.admit("group declaration", problems)
    return _postprocess(
        postprocessor,
        fitted,
        None,
        grid,
        nodes,
        timeout,
        declared,
        gate,
        tree_model=tree_model_message(model),
    )


def _refuse_in_process_only(federation):
    """What only an in-process fit honours, refused before any node is asked.

    Every kind of model alike (it was refused for boosted trees only, and a
    warm start of an averaged model silently started afresh, issue 48's
    D13): a ServerApp run starts from the unfitted federation it was given,
    and it calls no scikit-learn callback.
    """
    if federation.warm_start:
        raise ValueError(
            "warm_start=True on Flower: the ServerApp starts every run from the "
            "unfitted federation, so nothing would be continued; continue the "
            "fit in-process, or set warm_start=False."
        )
    if getattr(federation, "_skl_callbacks", None):
        raise ValueError(
            "Callbacks on Flower: the ServerApp does not call them; fit "
            "in-process to use them, or remove them."
        )


def _federate(plan, grid, *, timeout, connect_timeout, postprocessor=None):
    """The server's side of ``FederatedEstimator.fit``, over a Flower grid."""
    _refuse_in_process_only(plan.federation)
    nodes, rows = _discover(grid, timeout, connect_timeout)
    if is_boosted_trees(plan.federation.estimator):
        if postprocessor is not None:
            server_postprocessor(postprocessor)  # bad options fail first
        return _federate_trees(plan, grid, nodes, rows, timeout, postprocessor)
    n_clients = len(nodes)
    # As in-process: a target_delta of 1/n_clients or more guarantees
    # nothing, and epsilon would read 0.
    check_target_delta(plan.federation.dp, n_clients)
    seeds = plan.client_seeds(n_clients)
    # One gate for every reply of the run: its rules, the failure policy and
    # the ledger of what each client said about its rows.
    gate = ReplyGate(
        plan.on_client_error, name=lambda k: f"Client {k} (node {nodes[k]})"
    )
    declared = [
        declared_sets(n_rows, n_eval, plan.federation.validation_fraction)
        for n_rows, n_eval in rows
    ]
    init_config = {}
    states = None
    if plan.pipeline is not None:
        states = _preprocessing_states(
            plan, grid, nodes, timeout, gate, [n_rows for n_rows, _ in rows]
        )
        init_config[PREPROCESSING_STATES] = encode(states)
    contents = [
        RecordDict({"config": ConfigRecord({CLIENT_SEED: int(seed), **init_config})})
        for seed in seeds
    ]
    replies = _query(
        grid, nodes, contents, _INIT, timeout, "initialisation", failures=True
    )
    replies = [replies[node] for node in nodes]
    problems = {k: reply for k, reply in enumerate(replies) if isinstance(reply, str)}
    replies = [None if isinstance(reply, str) else reply.content for reply in replies]
    # What every client must share (the features, classes and raw columns):
    # checked, then held against what a strict majority of them says.
    described = {}
    for k, reply in enumerate(replies):
        if k not in problems:
            config, problems[k] = read_reply(lambda reply=reply: reply["config"])
            if problems[k] is None:
                described[k], problems[k] = data_description(config)
    described = {k: d for k, d in described.items() if problems[k] is None}
    if described:
        agreed, differences = description_consensus(described, gate.name)
        problems.update(differences)
    for k, reply in enumerate(replies):
        if problems.get(k) is None:
            problems[k] = _initialisation_problem(
                k, reply, declared[k], agreed, plan, seeds[0], gate
            )
    admitted = gate.admit("initialisation", sorted(problems.items()))
    classes = agreed.classes
    if plan.pipeline is not None:
        # Rebuilt before training: a schema the server cannot rebuild from
        # fails here, not after the last round.
        rebuilt = server_preprocessing(
            plan, states, agreed.raw_columns, agreed.raw_dtypes
        )
    history = [{"round": 0, **record} for record in gate.records]
    strategy = _federation_strategy(
        plan, nodes, seeds, history, declared, gate, classes
    )
    strategy.query_timeout = timeout
    result = strategy.start(
        grid=grid,
        # Like the in-process federation, start from client 0's initial model
        # (the first admitted client's, when client 0's failed the gate).
        initial_arrays=replies[admitted[0]]["arrays"],
        num_rounds=plan.n_rounds,
        timeout=timeout,
    )
    fitted = plan.fitted(
        classes=classes,
        client_sizes=[rows.sizes["train"] for rows in declared],
        class_prior=class_prior(
            [
                np.asarray(replies[k]["config"][CLASS_COUNTS], np.int64)
                for k in admitted
            ],
            plan.federation.prior_aggregation,
        ),
        seeds=seeds,
        n_features=agreed.n_features,
        feature_names=agreed.feature_names,
        global_parameters=result.arrays.to_numpy_ndarrays(),
        history=history,
        federated_metrics={
            int(round_): dict(metrics)
            for round_, metrics in result.evaluate_metrics_clientapp.items()
        },
        constraint_attributes=(
            None
            if strategy.constraint is None
            # The fitted model's rates, as in-process after its last round.
            else strategy.constraint.measure(
                strategy.rate_histograms(grid, plan.n_rounds, result.arrays)
            )
        ),
    )
    if plan.pipeline is not None:
        fitted = fitted_pipeline(plan, fitted, *rebuilt)
    if postprocessor is None:
        return fitted
    return _postprocess(
        postprocessor,
        fitted,
        result.arrays.to_numpy_ndarrays(),
        grid,
        nodes,
        timeout,
        declared,
        gate,
    )


def make_server_app(
    federation,
    *,
    postprocessor=None,
    result_path=None,
    result_key=None,
    timeout=3600.0,
    connect_timeout=300.0,
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
    ``FederatedEstimator`` that the same data would give in-process. A
    federation whose estimator is a Pipeline of federated transformers and
    a model first fits the transformers from the clients' statistics
    (query messages, one or more rounds per transformer, JSON answers), and
    returns the fitted pipeline, rebuilt from those statistics and the
    clients' column names and dtypes.
    A federation of boosted trees (``FederatedEstimator`` of a
    ``HistGradientBoostingClassifier``) runs the in-process tree fit's
    queries as query messages instead (``skfedida_trees``, JSON both ways),
    and returns the federation with its trees; with a ``postprocessor``,
    each client then declares its groups, rebuilds the model from the trees
    the server sends, and sends its counts of scores for the thresholds.

    The server checks every reply before it uses it, with the same rules as
    the in-process federation (``skfedida._gate``): each client
    declares at discovery the rows it loaded and its evaluation rows, and
    its statistics, class counts, parameters, metrics, FairFed reports and
    histograms must agree with them and with what it said before about the
    same rows. A reply that fails is that client's failure under the
    federation's ``on_client_error``: an error naming the client and its
    node, or the client left out of what the reply feeds, recorded in
    ``history_`` (round 0 for the statistics and the initialisation, with
    their ``stage``) or in the post-processor's ``history_``.

    Parameters
    ----------
    federation : FederatedEstimator
        The same unfitted object as given to :func:`make_client_app`.
    postprocessor : FederatedThresholdOptimizer, default=None
        Group thresholds for the federation's global model, found after the
        last round from every client's counts of scores per (group, label,
        bin) on its evaluation rows (``X_eval``, else its held-out rows, else
        its training rows); its ``estimator`` and ``prefit`` are not used.
        The result is then the fitted post-processor (its ``estimator_`` the
        fitted federation), as
        ``FederatedThresholdOptimizer(federation).fit(...)`` gives
        in-process. Clients send the categories of their groups
        (``group-labels``) besides the counts.
    result_path : str or path-like, default=None
        Where the ServerApp writes its result with joblib (see
        :func:`load_result`); the run config key ``result-path`` overrides it.
        On failure the file records the error instead.
    result_key : str or bytes, default=None
        Sign the result file with this key (HMAC-SHA256), so that
        ``load_result(path, key=...)`` refuses a changed file before
        unpickling it; the run config key ``result-key`` overrides it.
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
    plan_for_run(federation, {})  # a bad federation fails when the app is built
    if postprocessor is not None:
        server_postprocessor(postprocessor)  # a wrong type or options fail here
    app = ServerApp()

    @app.main()
    def main(grid, context):
        path = context.run_config.get("result-path", result_path)
        key = context.run_config.get("result-key", result_key)
        try:
            fitted = _federate(
                plan_for_run(federation, context.run_config),
                grid,
                timeout=timeout,
                connect_timeout=connect_timeout,
                postprocessor=postprocessor,
            )
        except Exception as exc:
            if path:
                _write_result(path, {"error": f"{type(exc).__name__}: {exc}"}, key)
            raise
        if path:
            _write_result(path, {"estimator": fitted}, key)

    return app
