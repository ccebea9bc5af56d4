"""The server's side of a federation: the one round loop of both backends.

``RoundServer.run`` is every federation's training rounds, in-process and on
Flower: each round it selects clients, sends them the global parameters,
collects their replies, hands them to the reply gate and the failure policy
(``on_client_error``), aggregates the admitted parameters with the
federation's aggregator, evaluates, and records the history; every rule is
the round engine's (``_engine.RoundEngine``). A transport carries the
messages: ``InProcessRounds`` (one joblib task per client, whose rows are
here) or ``_message_rounds.MessageRounds`` (messages, over Flower's grid). At
the end the in-process server builds the models the federation reports: the
global one, the clients' own (Local) or personalised (Per-FedAvg) ones.
"""

from __future__ import annotations

import functools

import numpy as np
from joblib import Parallel, delayed

from .._gate._ledger import ClientLedger
from .._gate._model import claims_summary, training_round_problem
from .._gate._policy import Failed, Outcome
from .._gate._rows import fairness_report_claim_problem
from ._aggregation import WeightedMean
from ._client import (
    _guarded_client_round,
    _round_seed,
    clone_fitted,
    selection_stream,
)
from ._constraint_rounds import guarded_rate_histograms
from ._engine import RoundEngine
from ._parameters import assign_parameters, parameter_arrays
from ._secure_aggregation import (
    contribution_bound,
    round_sums,
    summed_in_process,
    training_contribution,
)


def _progress(n_rounds, verbose):
    """Rounds to iterate, with a tqdm bar when verbose and tqdm is installed."""
    if verbose:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return range(n_rounds), None
        bar = tqdm(range(n_rounds), desc="FederatedEstimator", unit="round")
        return bar, bar
    return range(n_rounds), None


class RoundServer:
    """The round loop of one federation, from its parameters.

    Parameters
    ----------
    strategy : {"fedavg", "pfedavg", "local", "central"}
    aggregator : _Aggregator
        Combines the clients' parameter arrays (the aggregation seam).
    client_fraction : float
    on_client_error : {"raise", "skip"}
    n_jobs : int or None
    verbose : int
    client_id : callable
        ``client_id(k)``: the public id of client ``k`` in messages and the
        history (``"pooled"`` for Central training).
    name : callable, default=None
        ``name(k)``: how client ``k`` is named in errors (by default
        ``"Client <id>"``; a Flower server adds the node).
    max_update_norm : float, "median" or None
        Clip each client's update before aggregating.
    dp : DifferentialPrivacy or None
        Clip, add noise and take the private mean instead.
    ledger : ClientLedger or None
        What the clients declared at initialisation (their groups); None: a
        new ledger, in which a client declares its groups with its first
        report.
    secure : SecureAggregation or None
        Aggregate the rounds through secure sums (the transport's
        ``secure_sum``): the server reads no client's reply.
    """

    def __init__(
        self,
        *,
        strategy,
        aggregator,
        client_fraction,
        on_client_error,
        n_jobs,
        verbose,
        client_id,
        max_update_norm=None,
        dp=None,
        ledger=None,
        name=None,
        secure=None,
    ):
        self.secure = secure
        self.max_update_norm = max_update_norm
        self.dp = dp
        self.strategy = strategy
        self.aggregator = aggregator
        self.client_fraction = client_fraction
        self.on_client_error = on_client_error
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.client_id = client_id
        self.name = name or (lambda k: f"Client {client_id(k)!r}")
        # What each client declared and claimed about its rows (FairFed's
        # counts per group and label: only its declared groups, the same
        # every round).
        self.ledger = ClientLedger() if ledger is None else ledger

    def start(
        self,
        trainer,
        data,
        seeds,
        client_estimator,
        models=None,
        initial=0,
        global_parameters=None,
    ):
        """The state of a new federation: primed estimators, global parameters.

        ``models``: the clients' estimators, primed on their rows (primed
        here when None). The global model starts as client ``initial``'s,
        the first the gate admitted at initialisation, as on Flower, or as
        ``global_parameters`` when given (under secure aggregation the
        server reads no client's model: the template's).
        """
        if models is None:
            models = [
                trainer.prime(client_estimator(seeds[k]), data[k])
                for k in range(len(data))
            ]
        return {
            "models": models,
            "selection_rng": selection_stream(seeds),
            "global_parameters": (
                parameter_arrays(models[initial])
                if global_parameters is None
                else global_parameters
            ),
            "rounds": 0,
            "strategy": self.strategy,
        }

    def run(
        self,
        state,
        transport,
        n_rounds,
        records,
        *,
        on_round_begin=None,
        on_round_end=None,
        on_clients_end=None,
    ):
        """Run ``n_rounds`` rounds from ``state``; return the new state.

        The one round loop of both backends: ``transport`` carries the
        round's messages to the clients and their replies back, in-process
        (``InProcessRounds``) or over a Flower grid, and every rule of the
        round is the engine's. ``records`` (a ``RoundHistory`` of
        ``history_``) receives one record per client and round.
        ``on_round_begin(selected)`` is called before every round's training
        with the selected clients' indices, ``on_clients_end(selected)`` when
        they have replied, ``on_round_end(round_, global_parameters)`` after
        the round, and a true return value of the last stops the federation
        (e.g. early stopping).
        """
        engine = RoundEngine(
            strategy=self.strategy,
            aggregator=self.aggregator,
            client_fraction=self.client_fraction,
            on_client_error=self.on_client_error,
            max_update_norm=self.max_update_norm,
            dp=self.dp,
            records=records,
            name=self.name,
            memory=state.get("aggregator_memory", {}),
        )
        selection_rng = state["selection_rng"]
        global_parameters = state["global_parameters"]
        first_round = state["rounds"]
        federated_metrics = dict(state.get("federated_metrics", {}))
        # A rate constraint held by the server (FedAvg, Per-FedAvg): its
        # multipliers carry on across a warm start.
        constraint = state.get("constraint")
        rounds, bar = _progress(n_rounds, self.verbose)
        rounds_run = 0
        for offset in rounds:
            round_ = first_round + offset
            rounds_run += 1
            rate_term = None
            if constraint is not None:
                # The operating point and rates of the round's global model,
                # from every client's counts: the round's term.
                rate_term = constraint.step(
                    _rate_counts(
                        engine, transport, constraint, round_ + 1, global_parameters
                    )
                )
            selected = engine.select(selection_rng, transport.n_clients)
            if on_round_begin is not None:
                on_round_begin(selected)
            outcomes, replies = transport.train(
                round_,
                selected,
                global_parameters,
                # Local training sends the clients no model after round 0.
                sent=engine.communicates or round_ == 0,
                rate_term=rate_term,
                reporting=engine.reporting,
            )
            if on_clients_end is not None:
                on_clients_end(selected)
            if self.secure is None:
                global_parameters, mean_loss = self._aggregated(
                    engine,
                    transport,
                    outcomes,
                    replies,
                    global_parameters,
                    round_number=round_ + 1,
                    n_selected=len(selected),
                )
            else:
                global_parameters, mean_loss = self._securely_aggregated(
                    engine,
                    transport,
                    outcomes,
                    replies,
                    global_parameters,
                    round_number=round_ + 1,
                    federated_metrics=federated_metrics,
                    selected=selected,
                )
            evaluation = transport.evaluate(round_ + 1, global_parameters)
            if evaluation is not None:
                federated_metrics[round_ + 1] = evaluation_summary(
                    evaluation,
                    functools.partial(engine.admit_evaluation, round_ + 1),
                    functools.partial(engine.records.record, round_ + 1),
                )
            if self.verbose:
                if bar is not None:
                    bar.set_postfix(clients=len(selected), loss=f"{mean_loss:.4f}")
                else:
                    overall = f" ({round_ + 1} overall)" if first_round else ""
                    print(
                        f"[FederatedEstimator] round {offset + 1}/{n_rounds}"
                        f"{overall}: {len(selected)} clients, mean train loss "
                        f"{mean_loss:.4f}"
                    )
            if on_round_end is not None and on_round_end(round_, global_parameters):
                break
        if bar is not None:
            bar.close()
        transport.finish()
        if constraint is not None:
            # The fitted model's rates, for its attributes.
            state["constraint_attributes"] = constraint.measure(
                _rate_counts(
                    engine,
                    transport,
                    constraint,
                    first_round + rounds_run,
                    global_parameters,
                )
            )
        return {
            **state,
            "selection_rng": selection_rng,
            "global_parameters": global_parameters,
            "rounds": first_round + rounds_run,
            "strategy": self.strategy,
            "aggregator_memory": engine.memory,
            "federated_metrics": federated_metrics,
        }

    def _aggregated(
        self,
        engine,
        transport,
        outcomes,
        replies,
        global_parameters,
        *,
        round_number,
        n_selected,
    ):
        """The round's new global model from the admitted replies, and their loss."""
        admitted = engine.admit_training(
            round_number, outcomes, losses={k: r.loss for k, r in replies.items()}
        )
        results = [replies[k] for k in admitted]
        transport.keep({k: replies[k] for k in admitted})
        weights = [r.n_rows for r in results]
        if engine.communicates or self.strategy == "central":
            context = engine.aggregator_context(
                clients=[int(k) for k in admitted],
                reports=[r.report for r in results] if engine.reporting else None,
                global_parameters=global_parameters,
                losses=[r.loss for r in results],
                round_number=round_number,
            )
            global_parameters = engine.aggregate(
                functools.partial(self.aggregator.aggregate, **context),
                [r.parameters for r in results],
                weights,
                round_number=round_number,
                admitted=admitted,
                global_parameters=global_parameters,
                n_selected=n_selected,
            )
        mean_loss = (
            np.average([r.loss for r in results], weights=weights)
            if self.verbose
            else None
        )
        return global_parameters, mean_loss

    def _securely_aggregated(
        self,
        engine,
        transport,
        outcomes,
        replies,
        global_parameters,
        *,
        round_number,
        federated_metrics,
        selected,
    ):
        """The round's new global model from the admitted clients' secure sum.

        The replies stay with the transport: the server learns the sum of
        the admitted clients' clipped, row-weighted updates, rows and losses
        (``transport.secure_sum``), and writes the round's mean loss and the
        clients it covers into ``federated_metrics``.
        """
        admitted = engine.admit_training(round_number, outcomes, losses=None)
        transport.keep({k: replies[k] for k in admitted})
        if not engine.communicates:
            return global_parameters, np.nan
        sums = transport.secure_sum(
            round_number, admitted, global_parameters, self.secure, selected
        )
        federated_metrics[round_number] = {
            "train_loss": sums.mean_loss,
            "train_n_clients": len(sums.clients),
        }
        return sums.global_parameters(global_parameters), sums.mean_loss

    def global_parameters(self, state, data):
        """The federation's global parameters.

        For Local training, where clients never communicated, they are the
        clients' n_k-weighted mean whatever the aggregation.
        """
        models, global_parameters = state["models"], state["global_parameters"]
        if self.strategy == "local":
            global_parameters = WeightedMean().aggregate(
                [parameter_arrays(m) for m in models], [d.n for d in data]
            )
        return global_parameters

    def client_models(self, state, trainer, data, seeds, personalization_steps):
        """Client k's own model (Local) or personalised one (Per-FedAvg), by k."""
        models, global_parameters = state["models"], state["global_parameters"]
        if self.strategy == "local":
            return dict(enumerate(models))
        if self.strategy != "pfedavg":
            return {}
        personal_models = {}
        for k in range(len(data)):
            # Client k adapts a copy of its own estimator, set to the global
            # model (the original carries on if training resumes).
            personal_models[k] = trainer.personalised(
                assign_parameters(clone_fitted(models[k]), global_parameters),
                data[k],
                personalization_steps,
                seeds[k],
                state["rounds"],
            )
        return personal_models


def _rate_counts(engine, transport, constraint, round_number, global_parameters):
    """Every client's rate-constraint counts for the model, through the gate."""
    outcomes, answers = transport.rate_histograms(
        round_number, global_parameters, constraint
    )
    admitted = engine.admit_statistics(round_number, outcomes)
    return [answers[k] for k in admitted]


def evaluation_summary(evaluation, admit, record):
    """A round's evaluation through the failure policy: records and summary.

    ``evaluation`` is a ``RoundEvaluation``: ``admit_round``'s outcomes,
    and per usable client its ``val_*`` metrics and rows.
    ``admit(outcomes)`` applies the failure policy and ``record(k)`` is
    client ``k``'s record of the round, which its metrics are written into.
    Returns the summary of the admitted clients' metrics (``claims_summary``,
    weighted by their rows).
    """
    admitted = admit(evaluation.outcomes)
    for k in admitted:
        record(k).update(evaluation.metrics[k])
    return claims_summary(
        [evaluation.metrics[k] for k in admitted],
        [evaluation.rows[k] for k in admitted],
    )


class InProcessRounds:
    """The round loop's transport when every client's rows are in this process.

    Each round's selected clients train in joblib tasks (``n_jobs``) on
    their own estimators, which this object keeps between rounds
    (``models``); a failure is returned, not raised, for the engine's
    failure policy. The server reads what a Flower client would send: a
    ``RoundReply``, checked by the gate's training rules.

    Parameters
    ----------
    server : RoundServer
    trainer : the federation's client trainer
    data : list of _ClientData
        Each client's training rows.
    epochs : array of int
        Each client's local epochs.
    seeds : array of int
        Each client's seed.
    models : list of estimator
        Each client's estimator, primed or carried over.
    """

    def __init__(self, server, trainer, data, epochs, seeds, models):
        self.server = server
        self.trainer = trainer
        self.data = data
        self.epochs = epochs
        self.seeds = seeds
        self.models = models
        self.n_clients = len(data)
        self.parallel = Parallel(n_jobs=server.n_jobs)

    def train(self, round_, selected, global_parameters, *, sent, rate_term, reporting):
        """The selected clients' round: outcomes and usable ``RoundReply``s.

        The clients start from ``global_parameters`` when ``sent``, else from
        their own estimators; the replies are checked against them either
        way. With ``reporting`` (FairFed) each reply carries the client's
        counts per group for the global model it was sent.
        """
        self.trainer.rate_term = rate_term
        round_seeds = [_round_seed(self.seeds[k], round_) for k in selected]
        # Each client trains a copy: a client that fails, or whose reply the
        # gate refuses, keeps its estimator as it was before the round
        # (``keep``), whatever n_jobs, as a Flower node does.
        results = self.parallel(
            delayed(_guarded_client_round)(
                self.trainer,
                clone_fitted(self.models[k]),
                global_parameters if sent else None,
                self.data[k],
                int(self.epochs[k]),
                int(seed),
                reporting=reporting,
            )
            for k, seed in zip(selected, round_seeds, strict=True)
        )
        replies = {
            k: result
            for k, result in zip(selected, results, strict=True)
            if not isinstance(result, Failed)
        }
        outcomes = [
            self._outcome(k, result, global_parameters, self.data[k])
            for k, result in zip(selected, results, strict=True)
        ]
        return outcomes, replies

    def keep(self, admitted):
        """The admitted clients keep the estimators they trained."""
        for k, reply in admitted.items():
            self.models[k] = reply.model
        self._kept = admitted

    def secure_sum(self, round_number, admitted, global_parameters, secure, selected):
        """The admitted clients' round through SecAgg: what the server learns.

        Each admitted client (its reply kept by ``keep``) clips its update,
        weighs it by its rows, encodes it with its rows and loss, and masks
        it; the server unmasks only their sum (``RoundSums``).
        """
        bound = self.server.max_update_norm
        vectors = {
            k: training_contribution(
                self._kept[k].parameters,
                self._kept[k].n_rows,
                self._kept[k].loss,
                global_parameters,
                bound,
            )
            for k in admitted
        }
        total = summed_in_process(
            vectors,
            {k: contribution_bound(self.data[k].n, bound) for k in admitted},
            secure,
            f"training round {round_number}",
            dropped=set(selected) - set(admitted),
        )
        return round_sums(total, global_parameters, admitted)

    def rate_histograms(self, round_number, global_parameters, constraint):
        """Every client's rate-constraint counts, checked: outcomes and answers."""
        results = self.parallel(
            delayed(guarded_rate_histograms)(
                self.models[k],
                global_parameters,
                self.data[k],
                self.trainer.classes,
                constraint.n_bins,
            )
            for k in range(self.n_clients)
        )
        answers, outcomes = {}, []
        for k, result in enumerate(results):
            if isinstance(result, Failed):
                error = result.error
                outcomes.append(Outcome(k, f"{type(error).__name__}: {error}", error))
                continue
            problem = constraint.problem(result, self.server.ledger, k, self.data[k].n)
            if problem is None:
                answers[k] = result
                outcomes.append(Outcome(k))
            else:
                outcomes.append(Outcome(k, f"its reply cannot be used: {problem}"))
        return outcomes, answers

    def evaluate(self, round_number, global_parameters):
        """None: the estimator evaluates its held-out rows after each round."""
        return None

    def finish(self):
        """After the last round: the trainer holds no round's rate term."""
        self.trainer.rate_term = None

    def _outcome(self, k, result, global_parameters, client_data):
        """Client k's outcome for the failure policy: why it cannot be used."""
        if isinstance(result, Failed):
            error = result.error
            return Outcome(k, f"{type(error).__name__}: {error}", error)
        problem = training_round_problem(
            result.parameters,
            result.n_rows,
            result.loss,
            reference=global_parameters,
            declared_rows=client_data.n,
            report=(lambda: self._report_problem(result.report, client_data, k))
            if result.report is not None
            else None,
        )
        if problem is None:
            return Outcome(k)
        # Worded as on Flower (the gate's refusal, not an exception's type);
        # the error is still chained to the fit's error in-process.
        error = ValueError(f"its reply cannot be used: {problem}")
        return Outcome(k, str(error), error)

    def _report_problem(self, report, client_data, k):
        """A FairFed report's problem: its counts, and the same rows every round.

        Held to the groups the client declared at initialisation (every fit,
        warm starts included); a client refused there declared none, and
        each of its reports is refused, as on Flower.
        """
        rows = client_data.held_out or client_data
        groups = rows.groups
        rowset = "held_out" if client_data.held_out is not None else "train"
        return fairness_report_claim_problem(
            report,
            groups.labels,
            ledger=self.server.ledger,
            k=k,
            rowset=rowset,
            declared_rows=rows.n,
        )
