"""The server's side of a federation: rounds, selection, failures, aggregation.

What the server of an in-process federation runs (``FederatedEstimator``):
it primes every client's estimator, and each round selects clients, sends
them the global parameters, collects their replies (one joblib task per
client), handles failed clients (``on_client_error``), aggregates the
parameters with the federation's aggregator and records the history. At the
end it builds the models the federation reports: the global one, the
clients' own (Local) or personalised (Per-FedAvg) ones. A Flower ServerApp
runs the same steps with Flower's strategies (``skfedida.flower``).
"""

from __future__ import annotations

import functools

import numpy as np
from joblib import Parallel, delayed

from .._gate._ledger import ClientLedger
from .._gate._model import training_round_problem
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


class _Server:
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
    max_update_norm : float, "median" or None
        Clip each client's update before aggregating.
    dp : DifferentialPrivacy or None
        Clip, add noise and take the private mean instead.
    ledger : ClientLedger or None
        What the clients declared at initialisation (their groups); None: a
        new ledger, in which a client declares its groups with its first
        report.
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
    ):
        self.max_update_norm = max_update_norm
        self.dp = dp
        self.strategy = strategy
        self.aggregator = aggregator
        self.client_fraction = client_fraction
        self.on_client_error = on_client_error
        self.n_jobs = n_jobs
        self.verbose = verbose
        self.client_id = client_id
        # What each client declared and claimed about its rows (FairFed's
        # counts per group and label: only its declared groups, the same
        # every round).
        self.ledger = ClientLedger() if ledger is None else ledger

    def start(self, trainer, data, seeds, client_estimator):
        """The state of a new federation: primed estimators, global parameters."""
        models = [
            trainer.prime(client_estimator(seeds[k]), data[k]) for k in range(len(data))
        ]
        return {
            "models": models,
            "selection_rng": selection_stream(seeds),
            "global_parameters": parameter_arrays(models[0]),
            "rounds": 0,
            "strategy": self.strategy,
        }

    def run(
        self,
        state,
        trainer,
        data,
        epochs,
        seeds,
        n_rounds,
        records,
        *,
        on_round_begin=None,
        on_round_end=None,
        on_clients_end=None,
    ):
        """Run ``n_rounds`` rounds from ``state``; return the new state.

        ``records`` (a ``RoundHistory`` of ``history_``) receives one record
        per client and round.
        ``on_round_begin(selected)`` is called before every round's training
        with the selected clients' indices, ``on_clients_end(selected)`` when
        they have replied, ``on_round_end(round_, models, global_parameters)``
        after the round, and a true return value of the last stops the
        federation (e.g. early stopping).
        """
        models = state["models"]
        engine = RoundEngine(
            strategy=self.strategy,
            aggregator=self.aggregator,
            client_fraction=self.client_fraction,
            on_client_error=self.on_client_error,
            max_update_norm=self.max_update_norm,
            dp=self.dp,
            records=records,
            name=lambda k: f"Client {self.client_id(k)!r}",
            memory=state.get("aggregator_memory", {}),
        )
        selection_rng = state["selection_rng"]
        global_parameters = state["global_parameters"]
        first_round = state["rounds"]
        n_clients = len(data)
        parallel = Parallel(n_jobs=self.n_jobs)
        # A rate constraint held by the server (FedAvg, Per-FedAvg): its
        # multipliers carry on across a warm start.
        constraint = state.get("constraint")
        rounds, bar = _progress(n_rounds, self.verbose)
        rounds_run = 0
        for offset in rounds:
            round_ = first_round + offset
            rounds_run += 1
            if constraint is not None:
                # The operating point and rates of the round's global model,
                # from every client's counts: the round's term.
                trainer.rate_term = constraint.step(
                    self._rate_histograms(
                        constraint,
                        engine,
                        round_ + 1,
                        trainer,
                        models,
                        global_parameters,
                        data,
                    )
                )
            selected = engine.select(selection_rng, n_clients)
            if on_round_begin is not None:
                on_round_begin(selected)
            round_seeds = [_round_seed(seeds[k], round_) for k in selected]
            outcomes = parallel(
                delayed(_guarded_client_round)(
                    trainer,
                    models[k],
                    global_parameters if (engine.communicates or round_ == 0) else None,
                    data[k],
                    int(epochs[k]),
                    int(seed),
                    reporting=engine.reporting,
                )
                for k, seed in zip(selected, round_seeds, strict=True)
            )
            replies = {
                k: result
                for k, (ok, result) in zip(selected, outcomes, strict=True)
                if ok
            }
            outcomes = [
                self._outcome(k, ok, result, global_parameters, data[k])
                for k, (ok, result) in zip(selected, outcomes, strict=True)
            ]
            if on_clients_end is not None:
                on_clients_end(selected)
            admitted = engine.admit_training(
                round_ + 1, outcomes, losses={k: r.loss for k, r in replies.items()}
            )
            results = [replies[k] for k in admitted]
            weights = []
            for k in admitted:
                models[k] = replies[k].model
                weights.append(replies[k].n_rows)
            if engine.communicates or self.strategy == "central":
                context = engine.aggregator_context(
                    clients=[int(k) for k in admitted],
                    reports=[r.report for r in results] if engine.reporting else None,
                    global_parameters=global_parameters,
                    losses=[r.loss for r in results],
                    round_number=round_ + 1,
                )
                global_parameters = engine.aggregate(
                    functools.partial(self.aggregator.aggregate, **context),
                    [r.parameters for r in results],
                    weights,
                    round_number=round_ + 1,
                    admitted=admitted,
                    global_parameters=global_parameters,
                    n_selected=len(selected),
                )
            if self.verbose:
                mean_loss = np.average([r.loss for r in results], weights=weights)
                if bar is not None:
                    bar.set_postfix(clients=len(selected), loss=f"{mean_loss:.4f}")
                else:
                    overall = f" ({round_ + 1} overall)" if first_round else ""
                    print(
                        f"[FederatedEstimator] round {offset + 1}/{n_rounds}"
                        f"{overall}: {len(selected)} clients, mean train loss "
                        f"{mean_loss:.4f}"
                    )
            if on_round_end is not None and on_round_end(
                round_, models, global_parameters
            ):
                break
        if bar is not None:
            bar.close()
        trainer.rate_term = None
        if constraint is not None:
            # The fitted model's rates, for its attributes.
            state["constraint_attributes"] = constraint.measure(
                self._rate_histograms(
                    constraint,
                    engine,
                    first_round + rounds_run,
                    trainer,
                    models,
                    global_parameters,
                    data,
                )
            )
        return {
            **state,
            "models": models,
            "selection_rng": selection_rng,
            "global_parameters": global_parameters,
            "rounds": first_round + rounds_run,
            "strategy": self.strategy,
            "aggregator_memory": engine.memory,
        }

    def _rate_histograms(
        self, constraint, engine, round_number, trainer, models, global_parameters, data
    ):
        """Every client's rate-constraint counts for the model, through the gate."""
        outcomes = Parallel(n_jobs=self.n_jobs)(
            delayed(guarded_rate_histograms)(
                models[k],
                global_parameters,
                data[k],
                trainer.classes,
                constraint.n_bins,
            )
            for k in range(len(data))
        )
        answers, checked = {}, []
        for k, (ok, result) in enumerate(outcomes):
            if not ok:
                checked.append((k, f"{type(result).__name__}: {result}", result))
                continue
            problem = constraint.problem(result, self.ledger, k, data[k].n)
            if problem is None:
                answers[k] = result
                checked.append((k, None, None))
            else:
                checked.append((k, f"its reply cannot be used: {problem}", None))
        admitted = engine.admit_statistics(round_number, checked)
        return [answers[k] for k in admitted]

    def _outcome(self, k, ok, result, global_parameters, client_data):
        """Client k's outcome for the failure policy: why it cannot be used."""
        if not ok:
            return k, f"{type(result).__name__}: {result}", result
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
            return k, None, None
        error = ValueError(f"its reply cannot be used: {problem}")
        return k, f"{type(error).__name__}: {error}", error

    def _report_problem(self, report, client_data, k):
        """A FairFed report's problem: its counts, and the same rows every round."""
        rows = client_data.held_out or client_data
        groups = rows.groups
        rowset = "held_out" if client_data.held_out is not None else "train"
        if self.ledger.declared_groups(k, rowset) is None:
            # A fit that declared nothing (a warm start's first new round):
            # the client's rows as the server holds them.
            self.ledger.declare_groups(
                k, rowset, dict(zip(groups.labels, groups.counts(), strict=True))
            )
        return fairness_report_claim_problem(
            report,
            groups.labels,
            ledger=self.ledger,
            k=k,
            rowset=rowset,
            declared_rows=rows.n,
        )

    def global_model(self, state, data):
        """The federation's global estimator.

        For Local training, where clients never communicated, it is their
        n_k-weighted mean whatever the aggregation.
        """
        models, global_parameters = state["models"], state["global_parameters"]
        if self.strategy == "local":
            global_parameters = WeightedMean().aggregate(
                [parameter_arrays(m) for m in models], [d.n for d in data]
            )
        return assign_parameters(clone_fitted(models[0]), global_parameters)

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
            personal = assign_parameters(clone_fitted(models[k]), global_parameters)
            rng = np.random.RandomState(_round_seed(seeds[k], state["rounds"]))
            trainer.personalise(personal, data[k], personalization_steps, rng)
            personal_models[k] = personal
        return personal_models
