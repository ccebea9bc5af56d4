"""A federation's run when its clients are reached by message, stage by stage.

``run_federation`` is the server's whole fit over a transport: discovery,
the statistics rounds of a pipeline's transformers, initialisation, the
training rounds (``RoundServer.run``, the in-process loop) or the boosted
trees' queries (``federated_trees``, the in-process fit), the group
thresholds' histograms and the fitted attributes. Every reply passes the
reply gate (``skfedida._gate``) before it is used. The transport alone
knows how a message reaches a client (``_transport`` says what it offers;
Flower's is ``skfedida.flower._transport.FlowerTransport``).
"""

from __future__ import annotations

import functools
import json

import numpy as np

from .._gate._checks import parse_groups, read_reply, unless_malformed
from .._gate._history import RoundHistory
from .._gate._ledger import declared_sets
from .._gate._policy import Failed, ReplyGate
from .._gate._rows import (
    admitted_decision_counts,
    attributes_consensus,
    data_description,
    declared_labels,
    description_consensus,
    discovery_problem,
    group_declaration_problem,
    initialisation_claim_problem,
    named_histogram_problem,
)
from .._gate._statistics import Unreadable
from .._groups import merged_groups
from .._messages import (
    CLASS_COUNTS,
    CLIENT_SEED,
    DECISION_COUNTS,
    FEDERATION_CLASSES,
    FITTED_STATES,
    N_BINS,
    NUM_EXAMPLES,
    PREPROCESSING_STATES,
    QUERY,
    TREE_MODEL,
)
from ..ensemble._boosting import TreeChannel
from ..exceptions import warn_if_degenerate_decisions
from ..postprocessing._threshold_optimizer import (
    fit_from_client_counts,
    server_postprocessor,
)
from ..preprocessing._base import fit_tree
from ._aggregation import class_prior
from ._estimator import warn_if_penalty_inactive
from ._message_rounds import MessageRounds
from ._parameters import parameter_arrays
from ._plan import fitted_pipeline, server_preprocessing
from ._privacy import check_target_delta
from ._transport import Payload
from ._tree_server import federated_trees, prior_weighted
from ._trees import adopt_trees, check_tree_federation, is_boosted_trees


def refuse_in_process_only(federation):
    """What only an in-process fit honours, refused before any client is asked.

    Every kind of model alike (it was refused for boosted trees only, and a
    warm start of an averaged model silently started afresh, issue 48's
    D13): a run by message starts from the unfitted federation it was
    given, and it calls no scikit-learn callback.
    """
    if federation.warm_start:
        raise ValueError(
            "warm_start=True on Flower: the ServerApp starts every run from the "
            "unfitted federation, so nothing would be continued; continue the "
            "fit in-process, or set warm_start=False."
        )
    if getattr(federation, "secure_aggregation", None) is not None:
        raise ValueError(
            "secure_aggregation on Flower: the ServerApp does not run the "
            "secure sums' messages yet; fit in-process, or set "
            "secure_aggregation=None."
        )
    if getattr(federation, "_skl_callbacks", None):
        raise ValueError(
            "Callbacks on Flower: the ServerApp does not call them; fit "
            "in-process to use them, or remove them."
        )


def discovered_rows(transport):
    """What every client declared when it joined: ``([(n_rows, n_eval)], labels)``.

    The rows it loaded and its evaluation rows (None without), and per
    client the labels of its rows (None when it declared none). A client
    that declares no row count, or labels that cannot be read, is an error
    naming it: the federation cannot check anything it says after.
    """
    declared, labels = [], []
    for k, reply in enumerate(transport.discover()):
        n_rows, n_eval, problem = discovery_problem(reply.metrics({}))
        if problem is None:
            own, problem = declared_labels(reply.config({}))
        if problem is not None:
            raise RuntimeError(
                f"{transport.name(k)} failed the discovery query: {problem}."
            )
        declared.append((n_rows, n_eval))
        labels.append(own)
    return declared, labels


def federation_classes(labels):
    """The union of the clients' declared labels, sorted: the federation's classes.

    None when a client declared none (each then brings its own). As
    ``fit`` takes ``np.unique(y)`` over every client's rows, so a client
    that lacks a class trains on both backends.
    """
    if any(own is None for own in labels):
        return None
    try:
        return np.unique(np.array([label for own in labels for label in own]))
    except TypeError as exc:
        raise ValueError(
            f"The clients' labels cannot be ordered together ({exc}): give every "
            "client labels of one kind."
        ) from exc


def _everyone(transport, kind, payload, clients, what=None):
    """The same payload to each of ``clients``: ``send``'s replies."""
    return transport.send(kind, [payload] * len(clients), clients, what)


def preprocessing_states(plan, transport, gate, rows):
    """A pipeline federation's transformers fitted from the clients' statistics.

    One query per statistics round (``skfedida.preprocessing``): every client
    answers from its own rows; the server checks every answer (the gate, with
    the rows each client declared) and combines the admitted ones, and sends
    the fitted states of the transformers so far with the next query.
    """
    clients = range(len(rows))

    def ask(states, query):
        payload = Payload({FITTED_STATES: states, QUERY: query})
        replies = _everyone(transport, "statistics query", payload, clients)
        answers = []
        for k in clients:
            if isinstance(replies[k], str):
                answers.append(Unreadable(replies[k]))
                continue
            try:
                answers.append(replies[k].answer())
            except Exception as exc:  # whatever a client wrote
                answers.append(Unreadable(f"{type(exc).__name__}: {exc}"))
        return answers

    return fit_tree(plan.preprocessing, ask, gate, rows)


def _initialisation_problem(k, reply, declared, agreed, reference, gate, labels):
    """One client's initialisation reply checked (the gate's rules), or None.

    ``reference()``: the template's parameter arrays, which its initial
    model must match.
    """
    classes = agreed.classes

    def check():
        return initialisation_claim_problem(
            k,
            n_rows=reply.metrics()[NUM_EXAMPLES],
            class_counts=lambda: reply.config()[CLASS_COUNTS],
            n_classes=len(classes),
            # Decoded only when the counts pass, as the checks run in order.
            initial_parameters=reply.arrays,
            reference=reference(),
            config=reply.config(),
            sizes=declared.sizes,
            ledger=gate.ledger,
            classes=np.asarray(classes).tolist(),
            labels=labels,
        )

    return unless_malformed(check)


def _initialised(plan, transport, gate, declared, seeds, init_config, labels):
    """Every client's initialisation, checked: admitted clients and the data.

    ``(replies, admitted, agreed)``: the replies by client, the clients the
    gate admitted, and the description of the data (features, classes, raw
    columns) that a strict majority of the clients gives.
    """
    clients = range(len(declared))
    payloads = [Payload({CLIENT_SEED: int(seed), **init_config}) for seed in seeds]
    replies = transport.send("initialisation", payloads, clients)
    problems = {k: reply for k, reply in replies.items() if isinstance(reply, str)}
    # What every client must share (the features, classes and raw columns):
    # checked, then held against what a strict majority of them says.
    described = {}
    for k in clients:
        if k not in problems:
            config, problems[k] = read_reply(replies[k].config)
            if problems[k] is None:
                described[k], problems[k] = data_description(config)
    described = {k: d for k, d in described.items() if problems[k] is None}
    agreed = None
    if described:
        agreed, differences = description_consensus(described, gate.name)
        problems.update(differences)
    # The server's template is primed once, when a reply first needs it.
    reference = functools.cache(
        lambda: parameter_arrays(
            plan.template(
                seeds[0], agreed.n_features, agreed.feature_names, agreed.classes
            )
        )
    )
    for k in clients:
        if problems.get(k) is None:
            problems[k] = _initialisation_problem(
                k, replies[k], declared[k], agreed, reference, gate, labels[k]
            )
    admitted = gate.admit("initialisation", sorted(problems.items()))
    return replies, admitted, agreed


def _tree_sender(transport):
    """The trees' transport over messages: ``send(query, active)`` (``TreeChannel``)."""

    def send(query, active):
        replies = _everyone(
            transport,
            "tree query",
            Payload({QUERY: query}),
            active,
            f"tree query {query['kind']!r}",
        )
        answers = {}
        for k in active:
            reply = replies[k]
            if isinstance(reply, str):  # no reply, or the client failed
                answers[k] = Failed(RuntimeError(reply))
                continue
            try:
                answers[k] = reply.answer()
            except Exception as exc:  # whatever a client wrote
                answers[k] = Failed(exc)
        return answers

    return send


def postprocess(
    postprocessor, fitted, transport, declared, gate, *, parameters=None, trees=None
):
    """A FederatedThresholdOptimizer's fit: the clients' counts, summed here.

    Each client scores its rows with the global model: its ``parameters``,
    or a federation's fitted boosted ``trees``. Every client's
    counts pass the gate first: its groups (one value per attribute, the
    federation's attributes), counts of the shape asked, whole, >= 0, adding
    up to its evaluation rows and agreeing with what it said before about
    the same rows. A client that fails is an error, or
    (``on_client_error="skip"``) left out: zero counts, the federation's
    thresholds.
    """
    post = server_postprocessor(postprocessor)
    if trees is None:
        payload = Payload({N_BINS: int(post.n_bins)}, arrays=parameters)
    else:
        # Boosted trees: each client rebuilds the model from its trees,
        # bins and categories to score its rows.
        payload = Payload({N_BINS: int(post.n_bins), TREE_MODEL: trees})
    clients = range(len(declared))
    replies = _everyone(transport, "histogram query", payload, clients)
    parsed = [
        (None, replies[k])
        if isinstance(replies[k], str)
        else parse_groups(replies[k].config({}))
        for k in clients
    ]
    names = attributes_consensus(
        [(k, groups.names) for k, (groups, _) in enumerate(parsed) if groups],
        gate.name,
    )
    problems = []
    for k, (groups, problem) in enumerate(parsed):
        if problem is None:
            rowset = declared[k].evaluation
            problem = named_histogram_problem(
                replies[k].arrays,
                groups.names,
                names,
                groups.labels,
                n_bins=post.n_bins,
                ledger=gate.ledger,
                k=k,
                rowset=rowset,
                declared_rows=declared[k].sizes[rowset],
            )
        problems.append((k, problem))
    admitted = gate.admit("histogram query", problems)
    merged, codes = merged_groups([replies[k].config() for k in admitted])
    counts = np.zeros((len(declared), merged.n_groups, 2, post.n_bins))
    for k, positions in zip(admitted, codes, strict=True):
        counts[k, positions] = replies[k].arrays()[0]
    return fit_from_client_counts(
        post,
        fitted,
        counts,
        groups=merged.labels,
        sensitive_names=merged.names,
        history=[r for r in gate.records if r["stage"] == "histogram query"],
    )


def _federate_trees(plan, transport, rows, postprocessor=None):
    """A federation of boosted trees by message: the in-process fit's queries."""
    federation = plan.federation
    check_tree_federation(federation)
    gate = ReplyGate(plan.on_client_error, name=transport.name)
    declared = [
        declared_sets(n_rows, n_eval, federation.validation_fraction)
        for n_rows, n_eval in rows
    ]
    channel = TreeChannel(
        _tree_sender(transport),
        len(rows),
        gate=gate,
        rows=[sets.sizes["train"] for sets in declared],
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
        clients=np.arange(len(rows)),
        seeds=plan.client_seeds(len(rows)),
        history=[{"round": 0, **record} for record in gate.records],
    )
    if postprocessor is None:
        return fitted
    # Group thresholds: each client first declares its groups and their rows
    # on the rows it will count (as initialisation does for averaged
    # models), then counts its scores of the model rebuilt from the trees.
    clients = range(len(rows))
    replies = _everyone(transport, "group declaration", Payload(), clients)
    problems = []
    for k in clients:
        reply = replies[k]
        if isinstance(reply, str):
            problems.append((k, reply))
            continue
        config, problem = read_reply(reply.config)
        if problem is None:
            _, problem = group_declaration_problem(
                config, declared[k].sizes, gate.ledger, k
            )
        problems.append((k, problem))
    gate.admit("group declaration", problems)
    return postprocess(postprocessor, fitted, transport, declared, gate, trees=model)


def _final_decisions(transport, rounds, gate, n_classes, state, history):
    """After the last round: the federation's decisions per class, as in-process.

    Each client saves the model it uses from now on and counts its training
    rows per class that model predicts; the gate admits the counts
    (``admitted_decision_counts``) and a skipped client is recorded in
    ``history`` at the last round. The query also tells each client
    whether its last training reply was admitted (``MessageRounds``).
    """
    declared = rounds.declared
    clients = range(len(declared))
    replies = transport.send(
        "decision query",
        rounds.payloads(clients, state["global_parameters"], {}),
        clients,
    )
    before = len(gate.records)
    decided = admitted_decision_counts(
        gate,
        [
            reply
            if isinstance(reply, str)
            else lambda reply=reply: reply.config()[DECISION_COUNTS]
            for reply in (replies[k] for k in clients)
        ],
        n_classes=n_classes,
        declared_rows=[sets.sizes["train"] for sets in declared],
    )
    history.extend(
        {"round": state["rounds"], **record} for record in gate.records[before:]
    )
    return decided


def run_federation(plan, transport, *, postprocessor=None):
    """A federation's fit when its clients are reached by message.

    Parameters
    ----------
    plan : FederationPlan
        The federation's plan for this run (``make_plan``).
    transport : object
        Carries the messages (``_transport`` says what it offers).
    postprocessor : FederatedThresholdOptimizer, default=None
        Group thresholds found after the fit from the clients' histograms.

    Returns
    -------
    fitted : FederatedEstimator or FederatedThresholdOptimizer
        The fitted federation (the post-processor, fitted around it, when
        one is given).
    """
    refuse_in_process_only(plan.federation)
    rows, labels = discovered_rows(transport)
    if is_boosted_trees(plan.federation.estimator):
        if postprocessor is not None:
            server_postprocessor(postprocessor)  # bad options fail first
        return _federate_trees(plan, transport, rows, postprocessor)
    federation = plan.federation
    n_clients = len(rows)
    # As in-process: a target_delta of 1/n_clients or more guarantees
    # nothing, and epsilon would read 0.
    check_target_delta(federation.dp, n_clients)
    seeds = plan.client_seeds(n_clients)
    # One gate for every reply of the run: its rules, the failure policy and
    # the ledger of what each client said about its rows.
    gate = ReplyGate(plan.on_client_error, name=transport.name)
    declared = [
        declared_sets(n_rows, n_eval, federation.validation_fraction)
        for n_rows, n_eval in rows
    ]
    init_config = {}
    union = federation_classes(labels)
    if union is not None:
        init_config[FEDERATION_CLASSES] = json.dumps(union.tolist())
    states = None
    if plan.pipeline is not None:
        states = preprocessing_states(
            plan, transport, gate, [n_rows for n_rows, _ in rows]
        )
        init_config[PREPROCESSING_STATES] = states
    replies, admitted, agreed = _initialised(
        plan, transport, gate, declared, seeds, init_config, labels
    )
    classes = agreed.classes
    if plan.pipeline is not None:
        # Rebuilt before training: a schema the server cannot rebuild from
        # fails here, not after the last round.
        preprocessing, placeholder = server_preprocessing(
            plan, states, agreed.raw_columns, agreed.raw_dtypes
        )
    history = [{"round": 0, **record} for record in gate.records]
    # As in-process, from the groups the clients declared for their
    # training rows (none declared: no sensitive attribute was given).
    declared_groups = [gate.ledger.declared_groups(k, "train") for k in admitted]
    warn_if_penalty_inactive(
        federation,
        None
        if all(groups is None for groups in declared_groups)
        else len({label for groups in declared_groups for label in groups or {}}),
    )
    # The in-process federation's round loop, rules and progress; only the
    # transport differs.
    server = federation._server(ledger=gate.ledger, client_id=int, name=transport.name)
    state = {
        "selection_rng": plan.selection_stream(seeds),
        # Like the in-process federation, start from client 0's initial model
        # (the first admitted client's, when client 0's failed the gate).
        "global_parameters": replies[admitted[0]].arrays(),
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
    rounds = MessageRounds(transport, declared, gate, classes)
    state = server.run(state, rounds, plan.n_rounds, RoundHistory(history, int))
    decided = _final_decisions(transport, rounds, gate, len(classes), state, history)
    fitted = plan.fitted(
        classes=classes,
        client_sizes=[sets.sizes["train"] for sets in declared],
        class_prior=class_prior(
            [np.asarray(replies[k].config()[CLASS_COUNTS], np.int64) for k in admitted],
            federation.prior_aggregation,
        ),
        seeds=seeds,
        n_features=agreed.n_features,
        feature_names=agreed.feature_names,
        global_parameters=state["global_parameters"],
        history=history,
        federated_metrics=state["federated_metrics"],
        constraint_attributes=state.get("constraint_attributes"),
    )
    warn_if_degenerate_decisions(decided, classes, type(federation).__name__)
    if plan.pipeline is not None:
        fitted = fitted_pipeline(plan, fitted, preprocessing, placeholder)
    if postprocessor is None:
        return fitted
    return postprocess(
        postprocessor,
        fitted,
        transport,
        declared,
        gate,
        parameters=state["global_parameters"],
    )
