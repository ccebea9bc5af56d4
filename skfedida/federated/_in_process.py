"""A federation's run when its clients are in this process, stage by stage.

``FederatedEstimator.fit`` reads, encodes and splits the rows, then runs
these stages over its clients' live estimators: each client's
initialisation through the reply gate (``initialise``), the class prior of
the admitted clients, the training rounds (``run_rounds``: the round loop
of ``RoundServer.run``, with scikit-learn's callbacks and each round's
evaluation through the gate), the round-0 records and the check of the
final decisions. A run by message (``_lifecycle.run_federation``) runs the
same stages, with the same rules, over a transport.
"""

from __future__ import annotations

import functools

import numpy as np

from .._gate._checks import unless_malformed
from .._gate._history import RoundHistory, ordered_records
from .._gate._ledger import ClientLedger, declared_sets
from .._gate._model import evaluation_reply_problem
from .._gate._policy import Outcome, admit_round
from .._gate._rows import admitted_decision_counts, initialisation_claim_problem
from .._messages import DECLARED_GROUPS, NUM_EXAMPLES
from .._models._fair_base import forget_constraint
from ..exceptions import warn_if_degenerate_decisions
from ..metrics._registry import PERSONAL_PREFIX, VALIDATION_PREFIX
from ._aggregation import class_prior
from ._client import (
    PERSONAL_METRICS,
    RoundEvaluation,
    _validation_metrics,
    clone_fitted,
    decision_counts,
)
from ._constraint_rounds import FederatedConstraint, rows_groups, training_groups
from ._parameters import assign_parameters, parameter_arrays
from ._privacy import privacy_report
from ._secure_aggregation import secure_claims_summary, summed_in_process
from ._server import InProcessRounds, evaluation_summary
from ._wire import group_declaration


def initialise(federation, data, counts, models, gate, template):
    """Every client's initialisation through the gate: the clients admitted.

    What a Flower client replies at initialisation, checked by the same
    rule (``initialisation_claim_problem``) and failure policy: its
    training rows, its count of them per class (``counts[k]``; claimed:
    every later count of its training rows per label must agree), its
    initial model (``models[k]``, primed on its rows: of the template's
    shapes and finite) and its groups on each set of its rows, which its
    later replies (FairFed reports, histograms) may count rows in.
    ``template``: the server's model (None with ``models``: a pooled
    fit trains no client's model).
    """
    reference = None if template is None else parameter_arrays(template)
    constrained = federation._server_constraint()
    secure = federation.secure_aggregation

    def client_problem(k):
        client = data[k]
        model = None if models is None else models[k]
        held_out = 0 if client.held_out is None else client.held_out.n
        declaration = group_declaration(
            client,
            train_groups=rows_groups(model, client) if constrained else None,
        )
        return initialisation_claim_problem(
            k,
            n_rows=client.n,
            class_counts=lambda: counts[k],
            n_classes=len(federation.classes_),
            initial_parameters=(
                None if model is None else lambda: parameter_arrays(model)
            ),
            reference=reference,
            config={} if declaration is None else {DECLARED_GROUPS: declaration},
            sizes=declared_sets(
                client.n + held_out, None, federation.validation_fraction
            ).sizes,
            # Under secure aggregation the claims are the client's own
            # check: the server keeps no client's counts or groups.
            ledger=gate.ledger if secure is None else ClientLedger(),
        )

    return gate.admit(
        "initialisation",
        [
            (k, unless_malformed(functools.partial(client_problem, k)))
            for k in range(len(data))
        ],
    )


def admitted_class_prior(federation, data, counts, admitted):
    """``class_prior_`` from the admitted clients' training rows per class.

    ``counts[k]``: client k's rows per class. Weighted rows give the
    class shares of their weights (their counts stay the claims the
    gate holds them to).
    """
    secure = federation.secure_aggregation
    if secure is not None:
        # The server learns the admitted clients' counts summed, not each
        # client's (sample_weight is refused with secure aggregation).
        total = summed_in_process(
            {k: counts[k] for k in admitted},
            {k: data[k].n for k in admitted},
            secure,
            "class counts",
            integer=True,
            dropped=range(len(data)),
        )
        return class_prior([total], "mean")
    shares = [
        counts[k]
        if data[k].weight is None
        else np.bincount(
            np.searchsorted(federation.classes_, data[k].y),
            weights=data[k].weight,
            minlength=len(federation.classes_),
        )
        for k in admitted
    ]
    return class_prior(shares, federation.prior_aggregation)


def record_skips(federation, gate, history=None):
    """The gate's skipped replies before training, as round 0 of ``history_``.

    Then the whole history in the one order of both backends.
    """
    history = federation.history_ if history is None else history
    records = [{"round": 0, **record} for record in gate.records]
    known = [r for r in history if r.get("round") == 0 and "stage" in r]
    history[:0] = [r for r in records if r not in known]
    # By round and client, as on Flower: not in the order the clients
    # were selected or the stages ran.
    history[:] = ordered_records(history, federation.clients_.tolist())


def warn_if_degenerate(federation, data, gate):
    """Warn when the models' decisions on the training rows are one class.

    Each client counts its own rows predicted per class by the model it
    uses (personalised or own, else global); the counts pass the gate's
    rule, as a Flower client's reply does, and only they are summed. A
    skipped client is recorded after the last round.
    """
    replies = []
    for k, client in enumerate(data):
        model = federation.client_estimators_.get(
            federation.clients_[k].tolist(), federation.estimator_
        )
        replies.append(
            lambda model=model, client=client: decision_counts(
                model, client.X, federation.classes_
            )
        )
    before = len(gate.records)
    secure = federation.secure_aggregation
    counts = admitted_decision_counts(
        gate,
        replies,
        n_classes=len(federation.classes_),
        declared_rows=[client.n for client in data],
        summed=None
        if secure is None
        else lambda counts: summed_in_process(
            counts,
            {k: data[k].n for k in counts},
            secure,
            "decision counts",
            integer=True,
            dropped=range(len(data)),
        ),
    )
    # Recorded after the last round, as on Flower.
    last_round = federation._federation_state["rounds"]
    federation.history_.extend(
        {"round": last_round, **record} for record in gate.records[before:]
    )
    federation.history_[:] = ordered_records(
        federation.history_, federation.clients_.tolist()
    )
    warn_if_degenerate_decisions(counts, federation.classes_, type(federation).__name__)


def run_rounds(
    federation,
    trainer,
    data,
    epochs,
    seeds,
    central=False,
    callback_X=None,
    callback_y=None,
    ledger=None,
    models=None,
    initial=0,
    template=None,
    validation=(),
):
    """The training rounds, then the fitted attributes they leave.

    ``RoundServer.run`` over ``InProcessRounds``: each round's clients
    train their live estimators (``models``, primed; None under
    ``strategy="central"``, whose one client is the pooled rows), each
    round ends with the evaluation of ``validation`` (each client's
    held-out rows, a ``_ClientData``) through the gate and scikit-learn's
    callbacks, which score the model on ``callback_X`` and ``callback_y``
    (the rows the user gave ``fit``). A warm start carries
    ``federation._federation_state`` on.
    Writes ``history_``, ``federated_metrics_``, ``privacy_``,
    ``estimator_`` (``template`` with the global parameters) and
    ``client_estimators_``.
    """
    server = federation._server(central, ledger)
    state = getattr(federation, "_federation_state", None)
    if state is None:
        state = server.start(
            trainer,
            data,
            seeds,
            federation._client_estimator,
            models,
            initial,
            # Under secure aggregation the server reads no client's model:
            # the global model starts as the template's.
            global_parameters=(
                None
                if federation.secure_aggregation is None or template is None
                else parameter_arrays(template)
            ),
        )
        federation.history_ = []
        federation.federated_metrics_ = {}
        if federation._server_constraint():
            labels = training_groups(data, state["models"])
            if len(labels) > 1:
                state["constraint"] = FederatedConstraint(federation.estimator, labels)
            elif federation._column_mode():
                # Metadata mode warned in fit; the columns are read here.
                federation._warn_inactive(
                    [f"constraints={federation.estimator.constraints!r}"],
                    "the sensitive columns take a single value",
                )
    # else warm_start: the clients' estimators, the server's parameters and
    # random streams carry on where the last fit stopped.
    # sklearn's callbacks: the fit is the root task, each round a subtask
    # and each selected client a subtask of its round. At the end of a
    # round a callback can see the model as it stands (fitted_estimator:
    # this federation with the round's global model), on the fit's rows.
    round_contexts = []

    def begin_round(selected):
        round_ctx = federation._callback_fit_ctx.subcontext(
            task_name="round", max_subtasks=len(selected)
        )
        round_ctx.call_on_fit_task_begin(estimator=federation)
        clients = [
            round_ctx.subcontext(task_name=f"client {federation._client_id(k)}")
            for k in selected
        ]
        for client_ctx in clients:
            client_ctx.call_on_fit_task_begin(estimator=federation)
        round_contexts.append((round_ctx, clients))

    def end_clients(selected):
        for client_ctx in round_contexts[-1][1]:
            client_ctx.call_on_fit_task_end(estimator=federation)

    # One writer of this run's round records, for the server's training
    # records and this estimator's validation records alike.
    records = RoundHistory(federation.history_, server.client_id)

    transport = InProcessRounds(server, trainer, data, epochs, seeds, state["models"])

    def end_round(round_, global_parameters):
        models = transport.models
        record_validation(
            federation,
            validation,
            round_,
            models,
            global_parameters,
            records,
            personalise=functools.partial(
                personalised, federation, trainer, data, seeds, round_ + 1
            ),
        )

        def as_it_stands():
            state_now = {"models": models, "global_parameters": global_parameters}
            return {
                "estimator_": federation._global_estimator(
                    server.global_parameters(state_now, data),
                    models,
                    central,
                    template,
                ),
                "client_estimators_": (
                    {federation._client_id(k): m for k, m in enumerate(models)}
                    if federation.strategy == "local"
                    else {}
                ),
            }

        # A true answer asks to stop (e.g. early stopping).
        return round_contexts[-1][0].call_on_fit_task_end(
            estimator=federation,
            X=callback_X,
            y=callback_y,
            reconstruction_attributes=as_it_stands,
        )

    state = server.run(
        state,
        transport,
        federation.n_rounds,
        records,
        on_round_begin=begin_round,
        on_round_end=end_round,
        on_clients_end=end_clients,
    )
    state["dp"] = None if federation.dp is None else federation.dp.get_params()
    # The rounds' own summaries (secure aggregation's mean training loss);
    # the held-out rows' are written above, as each round ends.
    for round_number, summary in state["federated_metrics"].items():
        federation.federated_metrics_.setdefault(round_number, {}).update(summary)
    federation._federation_state = state
    if federation.secure_aggregation is not None:
        # The clients' own models stay with the clients: the fitted
        # federation keeps none of them (a secure fit cannot be continued).
        federation._federation_state = {**state, "models": None}
    federation.privacy_ = privacy_report(federation.dp, state["rounds"])
    federation.estimator_ = federation._global_estimator(
        server.global_parameters(state, data), state["models"], central, template
    )
    if federation.strategy == "local":
        # The mean of the clients' models: their constraints are theirs.
        forget_constraint(federation.estimator_)
    if "constraint" in state:
        federation.estimator_.set_params(constraints=federation.estimator.constraints)
        for name, value in state["constraint_attributes"].items():
            setattr(federation.estimator_, name, value)
    federation.client_estimators_ = {
        federation.clients_[k].tolist(): model
        for k, model in server.client_models(
            state, trainer, data, seeds, federation.personalization_steps
        ).items()
    }


def personalised(federation, trainer, data, seeds, round_, k, model):
    """Client k's personalised model after ``round_`` (1-based) rounds.

    What ``FederatedEstimator(n_rounds=round_)`` gives it, and what a
    Flower client evaluates: ``model`` adapted on its training rows.
    """
    return trainer.personalised(
        model, data[k], federation.personalization_steps, seeds[k], round_
    )


def record_validation(
    federation, validation, round_, models, global_parameters, records, personalise=None
):
    """Validation metrics of the model each client would use, through the gate.

    The server computes them on each client's held-out rows (under
    Per-FedAvg, also the ``val_personal_*`` metrics of the client's
    personalised model, as a Flower client reports them); each
    client's metrics then pass the evaluation rules a Flower client's
    reply does (``evaluation_reply_problem``) and the same failure
    policy: a client whose evaluation fails or is refused is an error
    naming it, or (``on_client_error="skip"``) recorded as
    ``evaluation_skipped`` and left out of the round's summary.
    """
    if not validation:
        return
    scratch = clone_fitted(models[0])
    assign_parameters(scratch, global_parameters)
    outcomes, reports, rows = [], {}, {}
    for k, held_out in enumerate(validation):
        model = models[k] if federation.strategy == "local" else scratch
        try:
            report = {
                VALIDATION_PREFIX + name: value
                for name, value in _validation_metrics(
                    model,
                    held_out.X,
                    held_out.y,
                    held_out.groups,
                    federation.classes_,
                    held_out.weight,
                ).items()
            }
            if federation.strategy == "pfedavg":
                # Per-FedAvg: also the personalised model this client
                # would use after this round, as a Flower client reports.
                personal = personalise(
                    k, assign_parameters(clone_fitted(models[k]), global_parameters)
                )
                personal_metrics = _validation_metrics(
                    personal,
                    held_out.X,
                    held_out.y,
                    held_out.groups,
                    federation.classes_,
                    held_out.weight,
                )
                for name in PERSONAL_METRICS:
                    report[PERSONAL_PREFIX + name] = personal_metrics[name]
        except Exception as exc:  # as a Flower client's failed evaluation
            outcomes.append(Outcome(k, f"{type(exc).__name__}: {exc}", exc))
            continue
        problem = evaluation_reply_problem(
            {**report, NUM_EXAMPLES: held_out.n},
            allowed={*report, NUM_EXAMPLES},
            declared_rows=held_out.n,
        )
        if problem is None:
            reports[k], rows[k] = report, held_out.n
            outcomes.append(Outcome(k))
        else:
            outcomes.append(Outcome(k, f"its reply cannot be used: {problem}"))

    # Records by the client's own id, also under strategy="central",
    # whose training records are the pooled fit's.
    def record(k):
        return records.record_of(round_ + 1, federation._client_id(k))

    def policy(outcomes):
        return admit_round(
            outcomes,
            round_number=round_ + 1,
            on_client_error=federation.on_client_error,
            name=lambda k: f"Client {federation._client_id(k)!r}",
            record=record,
            what="evaluation",
        )

    secure = federation.secure_aggregation
    if secure is None:
        federation.federated_metrics_[round_ + 1] = evaluation_summary(
            RoundEvaluation(outcomes, reports, rows), policy, record
        )
        return
    # The server learns the metrics' sums over the admitted clients, not
    # each client's: no client's record gets its metrics.
    admitted = policy(outcomes)
    federation.federated_metrics_.setdefault(round_ + 1, {}).update(
        secure_claims_summary(
            {k: reports[k] for k in admitted},
            {k: rows[k] for k in admitted},
            secure,
            f"evaluation round {round_ + 1}",
            dropped=set(range(len(validation))) - set(admitted),
        )
    )
