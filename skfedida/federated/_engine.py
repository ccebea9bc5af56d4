"""The round engine: what a federation's training rounds do, for both backends.

The round loop (``_server.RoundServer.run``), the same on both backends,
asks this engine for every rule of a round while its transport (in-process
or a Flower grid) only moves messages, so that a rule written here holds on
both backends:

- which clients a round selects (``select``);
- the failure policy over the round's outcomes and the records of the
  clients that trained (``admit_training``; the checks themselves are the
  reply gate's, ``skfedida._gate``);
- what the aggregator is given besides the parameters (``aggregator_context``:
  QFedAvg's round context, FairFed's reports and memory);
- clipping, differential privacy and the aggregation call, with the round's
  noise stream and the update norms recorded (``aggregate``).

The arithmetic of the aggregation is the federation's aggregator's on both
backends, passed to ``aggregate`` as a callable: the built-in ones compute
what Flower's FedAvg, FedMedian and FedTrimmedAvg compute, to the last bit
(``tests/test_aggregation.py``), and a Flower strategy given as the
aggregation runs its own ``aggregate_train`` inside it.
"""

from __future__ import annotations

from .._gate._policy import admit_round
from ._client import COMMUNICATING, round_clients
from ._privacy import bounded_round, noise_stream


class RoundEngine:
    """The rules of one run of training rounds, whichever backend moves them.

    Parameters
    ----------
    strategy : {"fedavg", "pfedavg", "local", "central"}
    aggregator : _Aggregator
        The federation's aggregation (its ``report_metric`` and
        ``needs_round_context`` say what it is given).
    client_fraction : float
    on_client_error : {"raise", "skip"}
    max_update_norm : float, "median" or None
    dp : DifferentialPrivacy or None
    records : RoundHistory
        The run's round records (``history_``), written only through it.
    name : callable
        ``name(k)``: how client ``k`` is named in errors.
    memory : dict, default=None
        What the aggregator carries across rounds (FairFed's weights); kept
        by the caller across warm starts.
    """

    def __init__(
        self,
        *,
        strategy,
        aggregator,
        client_fraction,
        on_client_error,
        max_update_norm,
        dp,
        records,
        name,
        memory=None,
    ):
        self.strategy = strategy
        self.aggregator = aggregator
        self.client_fraction = client_fraction
        self.on_client_error = on_client_error
        self.max_update_norm = max_update_norm
        self.dp = dp
        self.records = records
        self.name = name
        self.memory = {} if memory is None else memory

    @property
    def communicates(self):
        return self.strategy in COMMUNICATING

    @property
    def reporting(self):
        """Whether the clients send a fairness report with their update."""
        return self.aggregator.report_metric is not None

    def select(self, selection_rng, n_clients):
        """The clients of the next round: the one draw on the selection stream."""
        return round_clients(
            selection_rng, n_clients, self.strategy, self.client_fraction
        )

    def admit_training(self, round_number, outcomes, losses):
        """The clients whose training replies are used; failures handled.

        ``outcomes`` are ``admit_round``'s, in selection order; ``losses[k]``
        is a replying client's training loss, recorded in its round record
        after every skip is (None under secure aggregation: ``summed``). A
        failure is said as "failed in round N (training)" on both backends.
        """
        admitted = self._admit(round_number, outcomes, "training")
        for k in admitted:
            record = self.records.record(round_number, k)
            if losses is None:
                # Secure aggregation: its reply entered the round's sum,
                # which is all the server learns of it.
                record["summed"] = True
            else:
                record["train_loss"] = losses[k]
        return admitted

    def admit_evaluation(self, round_number, outcomes):
        """The clients whose evaluation replies are used; failures handled.

        The same policy as training's; a skipped evaluation is recorded as
        ``evaluation_skipped`` in the client's round record.
        """
        return self._admit(round_number, outcomes, "evaluation")

    def admit_statistics(self, round_number, outcomes):
        """The clients whose rate-constraint counts are used; failures handled.

        The same policy; a skipped count is recorded as
        ``rate_histograms_skipped`` in the client's round record.
        """
        return self._admit(round_number, outcomes, "rate histograms")

    def _admit(self, round_number, outcomes, what):
        """``admit_round`` with this run's policy, names and records."""
        return admit_round(
            outcomes,
            round_number=round_number,
            on_client_error=self.on_client_error,
            name=self.name,
            record=lambda k: self.records.record(round_number, k),
            what=what,
        )

    def aggregator_context(
        self, *, clients, reports, global_parameters, losses, round_number=None
    ):
        """What the aggregator is given besides the parameters and weights.

        FairFed: the admitted clients' fairness reports (``reports``), who
        they are and its memory across rounds; QFedAvg: the round's global
        parameters and the clients' training losses; a Flower strategy:
        those, its memory across rounds and the round (from 1); others
        nothing.
        """
        if self.reporting:
            return {"reports": reports, "clients": clients, "memory": self.memory}
        if self.aggregator.needs_strategy_state:
            return {
                "global_parameters": global_parameters,
                "losses": losses,
                "memory": self.memory,
                "round_number": round_number,
                "clients": clients,
            }
        if self.aggregator.needs_round_context:
            return {"global_parameters": global_parameters, "losses": losses}
        return {}

    def aggregate(
        self,
        aggregate,
        parameter_lists,
        weights,
        *,
        round_number,
        admitted,
        global_parameters,
        n_selected,
    ):
        """The round's new global parameters: clipped, noised, aggregated.

        ``aggregate(parameter_lists, weights)`` is the arithmetic;
        ``n_selected`` (every client the round selected, whether it replied
        or not) is the private mean's denominator, and the noise is the
        round's own stream (``noise_stream``, round counted from 1). Returns
        ``aggregate``'s result; the norms of the clients' updates go into
        their round records.
        """
        result, norms = bounded_round(
            aggregate,
            parameter_lists,
            weights,
            global_parameters=global_parameters,
            max_update_norm=self.max_update_norm,
            dp=self.dp,
            n_selected=n_selected,
            noise_rng=noise_stream(self.dp, round_number),
        )
        if self.communicates and norms is not None:
            for k, norm in zip(admitted, norms, strict=True):
                self.records.record(round_number, k)["update_norm"] = norm
        return result
