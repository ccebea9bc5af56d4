"""The round loop's transport when the clients are reached by message.

A federation's training rounds run one loop on both backends
(``RoundServer.run``): the selection, the failure policy, the aggregation,
clipping and DP are its. When the clients are reached by message (Flower's
grid), ``MessageRounds`` sends each round's messages through the run's
transport (``_transport``) and turns the replies into what the loop reads
in-process: a ``RoundReply`` per training reply, the metrics of an
evaluation, a client's counts for a rate constraint, each checked first by
the reply gate against what the client declared when it joined. A missing
or failed reply is the client's failure, worded by the transport as
in-process.
"""

from __future__ import annotations

import numpy as np

from .._gate._checks import parse_groups, read_reply, unless_malformed
from .._gate._model import evaluation_reply_problem, training_round_problem
from .._gate._policy import Outcome
from .._gate._rows import (
    REPORT_KEYS,
    attributes_consensus,
    named_report_claim_problem,
)
from .._groups import merged_groups
from .._messages import (
    KEPT_ROUND,
    N_BINS,
    NUM_EXAMPLES,
    RATE_TERM,
    SERVER_ROUND,
    SETTLED_ROUND,
    TRAIN_LOSS,
)
from ..metrics._registry import VALIDATION_PREFIX, share_key
from ._client import RoundEvaluation, RoundReply
from ._constraint_rounds import RateHistograms
from ._transport import REPLY_METRICS, Payload


class MessageRounds:
    """The round loop's transport when the clients are reached by message.

    Parameters
    ----------
    transport : object
        The run's transport (``_transport``: ``send`` and ``name``).
    declared : list of DeclaredRows
        What each client declared when it joined (its sets of rows).
    gate : ReplyGate
        The run's gate: the ledger of what each client claimed.
    classes : array-like
        The federation's classes.
    """

    def __init__(self, transport, declared, gate, classes):
        self.transport = transport
        self.n_clients = len(declared)
        self.declared = declared
        self.gate = gate
        # With more than two classes clients also report each class's share
        # of their decisions (val_share[<class>]); only the federation's own.
        self.allowed_metrics = REPLY_METRICS | {
            VALIDATION_PREFIX + share_key(label)
            for label in (classes if len(classes) > 2 else ())
        }
        # The last round decided, and per client the last round whose reply
        # was admitted: what a node needs to keep or drop what it trained.
        self.settled_round = 0
        self.kept_round = [0] * self.n_clients
        self._training_round = 0

    def payloads(self, clients, global_parameters, config):
        """One payload per client: the global model, ``config`` and its settlement.

        Each client learns only whether its own last training reply was
        admitted (``KEPT_ROUND``), so that a node keeps what it trained in
        a round only when the server used it, as the in-process clients do.
        """
        arrays = list(global_parameters)
        if not self.settled_round:
            payload = Payload(config, arrays=arrays)
            return [payload] * len(clients)
        return [
            Payload(
                {
                    **config,
                    SETTLED_ROUND: self.settled_round,
                    KEPT_ROUND: self.kept_round[k],
                },
                arrays=arrays,
            )
            for k in clients
        ]

    def _send(self, kind, clients, global_parameters, config):
        """The global model and ``config`` to each of ``clients``: ``[(k, reply)]``.

        A reply is the client's ``Reply``, or why none can be read (a string).
        """
        clients = list(clients)
        payloads = self.payloads(clients, global_parameters, config)
        replies = self.transport.send(kind, payloads, clients)
        return [(k, replies[k]) for k in clients]

    def train(self, round_, selected, global_parameters, *, sent, rate_term, reporting):
        """The selected clients' round: outcomes and usable ``RoundReply``s.

        Each client gets the global model and the round (and a rate
        constraint's term); its reply is checked by the gate's training
        rules against the rows it declared, and its FairFed report, with
        ``reporting``, against the groups it declared.
        """
        self._training_round = int(round_ + 1)
        config = {SERVER_ROUND: int(round_ + 1)}
        if rate_term is not None:
            config[RATE_TERM] = rate_term
        received = self._send("training", selected, global_parameters, config)
        round_names = None
        if reporting:
            round_names = attributes_consensus(
                self._named(received), self.transport.name
            )
        outcomes, arrays, usable = [], {}, {}
        for k, reply in received:
            reason = reply if isinstance(reply, str) else None
            if reason is None:
                problem, arrays[k] = self._training_problem(
                    k, reply, global_parameters, round_names
                )
                if problem is not None:
                    reason = f"its reply cannot be used: {problem}"
            if reason is None:
                usable[k] = reply
            outcomes.append(Outcome(k, reason))
        reports = (
            _aligned_reports([usable[k] for k in sorted(usable)])
            if reporting and usable
            else [None] * len(usable)
        )
        replies = {
            k: RoundReply(
                model=None,
                parameters=arrays[k],
                n_rows=int(usable[k].metrics()[NUM_EXAMPLES]),
                loss=float(usable[k].metrics()[TRAIN_LOSS]),
                report=report,
            )
            for k, report in zip(sorted(usable), reports, strict=True)
        }
        return outcomes, replies

    @staticmethod
    def _named(received):
        """``(k, names)`` of every reply naming its groups readably."""
        named = []
        for k, reply in received:
            if isinstance(reply, str):
                continue
            parsed, _ = parse_groups(reply.config({}))
            if parsed is not None:
                named.append((k, parsed.names))
        return named

    def _training_problem(self, k, reply, reference, round_names):
        """A training reply checked by the gate: ``(problem or None, arrays)``."""
        declared = self.declared[k]
        decoded = []

        def report():
            rowset = declared.reports
            return named_report_claim_problem(
                reply.config(),
                lambda: reply.arrays("fairness"),
                round_names,
                ledger=self.gate.ledger,
                k=k,
                rowset=rowset,
                declared_rows=declared.sizes[rowset],
            )

        def check():
            metrics = dict(reply.metrics())
            decoded.append(reply.arrays())
            return training_round_problem(
                decoded[0],
                metrics.get(NUM_EXAMPLES),
                metrics.get(TRAIN_LOSS),
                reference=reference,
                declared_rows=declared.sizes["train"],
                report=report if round_names is not None else None,
            )

        problem = unless_malformed(check)
        return problem, (decoded[0] if decoded else None)

    def keep(self, admitted):
        """The round decided: the admitted clients keep what they trained.

        Each client keeps its own estimator where it runs; the next message
        tells it whether this round's reply was admitted.
        """
        self.settled_round = self._training_round
        for k in admitted:
            self.kept_round[k] = self._training_round

    def evaluate(self, round_number, global_parameters):
        """The evaluation of the global model by every client with evaluation rows.

        A ``RoundEvaluation`` (the failure policy's outcomes, and per usable
        client its ``val_*`` metrics and its evaluation rows); None when no
        client has evaluation rows (nothing is evaluated).
        """
        # Only on evaluation rows (held-out or the node's own), as in-process:
        # a client without them is not asked to score its training rows.
        evaluated = [
            k for k in range(self.n_clients) if self.declared[k].evaluation != "train"
        ]
        if not evaluated:
            return None
        received = self._send(
            "evaluation",
            evaluated,
            global_parameters,
            {SERVER_ROUND: int(round_number)},
        )
        outcomes, metrics, rows = [], {}, {}
        for k, reply in received:
            reason = reply if isinstance(reply, str) else None
            if reason is None:
                declared = self.declared[k]
                problem = unless_malformed(
                    lambda reply=reply, declared=declared: evaluation_reply_problem(
                        dict(reply.metrics()),
                        allowed=self.allowed_metrics,
                        declared_rows=declared.sizes[declared.evaluation],
                    )
                )
                if problem is not None:
                    reason = f"its reply cannot be used: {problem}"
            if reason is None:
                sent = dict(reply.metrics())
                metrics[k] = {
                    key: float(value)
                    for key, value in sent.items()
                    if key.startswith(VALIDATION_PREFIX)
                }
                rows[k] = float(sent[NUM_EXAMPLES])
            outcomes.append(Outcome(k, reason))
        return RoundEvaluation(outcomes, metrics, rows)

    def rate_histograms(self, round_number, global_parameters, constraint):
        """Every client's rate-constraint counts, checked: outcomes and answers.

        The in-process server's rules (``FederatedConstraint.problem``: the
        groups it declared, whole counts of its training rows per group and
        label as it claimed them before).
        """
        received = self._send(
            "rate histograms query",
            range(self.n_clients),
            global_parameters,
            {N_BINS: int(constraint.n_bins)},
        )
        answers, outcomes = {}, []
        for k, reply in received:
            if isinstance(reply, str):
                outcomes.append(Outcome(k, reply))
                continue
            groups, problem = parse_groups(reply.config())
            if problem is None:
                arrays, problem = read_reply(reply.arrays)
            if problem is None and len(arrays) not in (1, 2):
                problem = f"it sends {len(arrays)} arrays, not its counts (and weights)"
            if problem is None:
                answer = RateHistograms(
                    arrays[0],
                    arrays[1] if len(arrays) == 2 else None,
                    groups.labels,
                    groups.names,
                )
                problem = constraint.problem(
                    answer, self.gate.ledger, k, self.declared[k].sizes["train"]
                )
            if problem is None:
                answers[k] = answer
                outcomes.append(Outcome(k))
            else:
                outcomes.append(Outcome(k, f"its reply cannot be used: {problem}"))
        return outcomes, answers

    def finish(self):
        """Nothing to release after the last round."""


def _aligned_reports(replies):
    """FairFed reports of clients with their own group codes, on common groups."""
    merged, codes = merged_groups([reply.config() for reply in replies])
    reports = []
    for reply, positions in zip(replies, codes, strict=True):
        report = {}
        for key, values in zip(REPORT_KEYS, reply.arrays("fairness"), strict=True):
            aligned = np.zeros(merged.n_groups)
            aligned[positions] = values
            report[key] = aligned
        reports.append(report)
    return reports
