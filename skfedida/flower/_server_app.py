"""The skfedida Flower ServerApp: FederatedEstimator rounds on Flower strategies."""

from __future__ import annotations

import time

import numpy as np
from flwr.app import (
    ArrayRecord,
    ConfigRecord,
    Message,
    MessageType,
    RecordDict,
)
from flwr.serverapp import ServerApp

from .._gate._checks import parse_groups, read_reply, unless_malformed
from .._gate._ledger import declared_sets
from .._gate._policy import ReplyGate, RoundHistory
from .._gate._rows import (
    attributes_consensus,
    data_description,
    description_consensus,
    discovery_problem,
    group_declaration_problem,
    initialisation_claim_problem,
    named_histogram_problem,
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
    TREE_MODEL,
)
from ..ensemble._boosting import Failed, TreeChannel
from ..federated._aggregation import class_prior
from ..federated._estimator import warn_if_penalty_inactive
from ..federated._parameters import parameter_arrays
from ..federated._plan import fitted_pipeline, server_preprocessing
from ..federated._privacy import check_target_delta
from ..federated._server import RoundServer
from ..federated._tree_server import federated_trees, prior_weighted
from ..federated._trees import adopt_trees, check_tree_federation, is_boosted_trees
from ..postprocessing._threshold_optimizer import (
    fit_from_client_counts,
    server_postprocessor,
)
from ..preprocessing._base import fit_tree
from ._codec import decode, encode
from ._protocol import (
    _HISTOGRAMS,
    _INIT,
    _STATISTICS,
    _TREE_GROUPS,
    _TREES,
    merged_groups,
    plan_for_run,
    query_failure,
    tree_model_message,
)
from ._result import _write_result
from ._rounds import FlowerRounds


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
        reason = query_failure(replies.get(node), what, timeout)
        if reason is None:
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
    federation = plan.federation
    # As in-process, from the groups the clients declared for their
    # training rows (none declared: no sensitive attribute was given).
    declared_groups = [gate.ledger.declared_groups(k, "train") for k in admitted]
    warn_if_penalty_inactive(
        federation,
        None
        if all(groups is None for groups in declared_groups)
        else len({label for groups in declared_groups for label in groups or {}}),
    )
    # The in-process federation's round loop and rules; only the transport
    # is Flower's.
    server = RoundServer(
        strategy=plan.strategy,
        aggregator=plan.aggregator,
        client_fraction=federation.client_fraction,
        on_client_error=plan.on_client_error,
        n_jobs=None,
        # The same progress as in-process (a bar, or a line per round).
        verbose=federation.verbose,
        client_id=int,
        name=lambda k: f"Client {k} (node {nodes[k]})",
        max_update_norm=federation.max_update_norm,
        dp=federation.dp,
        ledger=gate.ledger,
    )
    state = {
        "selection_rng": plan.selection_stream(seeds),
        # Like the in-process federation, start from client 0's initial model
        # (the first admitted client's, when client 0's failed the gate).
        "global_parameters": replies[admitted[0]]["arrays"].to_numpy_ndarrays(),
        "rounds": 0,
        "strategy": plan.strategy,
    }
    # A rate constraint held by the server, over the groups the clients
    # declared for their training rows.
    constraint = plan.server_constraint(
        label
        for k in range(n_clients)
        for label in (gate.ledger.declared_groups(k, "train") or {})
    )
    if constraint is not None:
        state["constraint"] = constraint
    state = server.run(
        state,
        FlowerRounds(grid, nodes, declared, gate, classes, timeout),
        plan.n_rounds,
        RoundHistory(history, int),
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
        global_parameters=state["global_parameters"],
        history=history,
        federated_metrics=state["federated_metrics"],
        constraint_attributes=state.get("constraint_attributes"),
    )
    if plan.pipeline is not None:
        fitted = fitted_pipeline(plan, fitted, *rebuilt)
    if postprocessor is None:
        return fitted
    return _postprocess(
        postprocessor,
        fitted,
        state["global_parameters"],
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
    """Build a Flower ServerApp that runs a FederatedEstimator across SuperNodes.

    The ServerApp finds the clients (every SuperNode reports its
    ``partition-id`` and ``num-partitions``; it waits until all have
    connected), sends each its seed (drawn from ``random_state`` as
    ``FederatedEstimator`` draws ``client_seeds_``), starts from client 0's
    initial parameters, and runs ``n_rounds`` rounds of the in-process
    federation's own round loop with Flower messages as its transport,
    aggregating with the federation's ``aggregation`` (FedAvg's arithmetic,
    weighted by the clients' ``num-examples``, by default; FedMedian's or
    FedTrimmedAvg's; or a Flower strategy's own), each followed by an
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
