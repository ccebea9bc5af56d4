"""The round loop's transport over a Flower grid: messages out, replies in.

A federation's training rounds run one loop on both backends
(``skfedida.federated._server.RoundServer.run``): the selection, the failure
policy, the aggregation, clipping and DP are its. Over Flower, this module
only carries each round's messages to the clients' nodes and turns their
replies into what the loop reads in-process: a ``RoundReply`` per training
reply, the metrics of an evaluation, a client's counts for a rate
constraint, each checked first by the reply gate against what the client
declared when it joined. A missing or failed reply becomes the client's
failure, worded as in-process.
"""

from __future__ import annotations

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, RecordDict

from .._gate._checks import parse_groups, read_reply, unless_malformed
from .._gate._model import evaluation_reply_problem, training_round_problem
from .._gate._rows import attributes_consensus, named_report_claim_problem
from .._messages import N_BINS, NUM_EXAMPLES, RATE_TERM, SERVER_ROUND, TRAIN_LOSS
from ..federated._client import RoundReply
from ..metrics._registry import VALIDATION_PREFIX, share_key
from ._codec import encode
from ._protocol import (
    _RATE_HISTOGRAMS,
    _REPORT_KEYS,
    REPLY_METRICS,
    merged_groups,
    query_failure,
    remote_failure,
)


class FlowerRounds:
    """The round loop's transport when the clients are a grid's nodes.

    Parameters
    ----------
    grid : flwr.serverapp.Grid
    nodes : list of int
        The clients' node ids, in partition order.
    declared : list of DeclaredRows
        What each client declared when it joined (its sets of rows).
    gate : ReplyGate
        The run's gate: the ledger of what each client claimed.
    classes : array-like
        The federation's classes.
    timeout : float
        Seconds to wait for a round's replies.
    """

    def __init__(self, grid, nodes, declared, gate, classes, timeout):
        self.grid = grid
        self.nodes = nodes
        self.n_clients = len(nodes)
        self.declared = declared
        self.gate = gate
        self.timeout = timeout
        # With more than two classes clients also report each class's share
        # of their decisions (val_share[<class>]); only the federation's own.
        self.allowed_metrics = REPLY_METRICS | {
            VALIDATION_PREFIX + share_key(label)
            for label in (classes if len(classes) > 2 else ())
        }

    def _send(self, partitions, arrays, config, message_type):
        """One message to each client of ``partitions``: ``[(k, reply or None)]``."""
        content = RecordDict(
            {
                "arrays": ArrayRecord([np.asarray(a) for a in arrays]),
                "config": ConfigRecord(config),
            }
        )
        messages = [
            Message(content=content, message_type=message_type, dst_node_id=node)
            for node in (self.nodes[k] for k in partitions)
        ]
        replies = {
            reply.metadata.src_node_id: reply
            for reply in self.grid.send_and_receive(messages, timeout=self.timeout)
        }
        return [(k, replies.get(self.nodes[k])) for k in partitions]

    @staticmethod
    def _failure(reply):
        """Why a reply cannot even be read (none came, or its node failed)."""
        if reply is None:
            return "no reply before the round's timeout"
        if reply.has_error():
            return remote_failure(reply.error.reason)
        return None

    def train(self, round_, selected, global_parameters, *, sent, rate_term, reporting):
        """The selected clients' round: outcomes and usable ``RoundReply``s.

        Each client gets the global model and the round (and a rate
        constraint's term); its reply is checked by the gate's training
        rules against the rows it declared, and its FairFed report, with
        ``reporting``, against the groups it declared.
        """
        config = {SERVER_ROUND: int(round_ + 1)}
        if rate_term is not None:
            config[RATE_TERM] = encode(rate_term)
        received = self._send(selected, global_parameters, config, MessageType.TRAIN)
        round_names = None
        if reporting:
            round_names = attributes_consensus(
                self._named(received),
                lambda client: f"client {client[0]} (node {client[1]})",
            )
        outcomes, arrays, usable = [], {}, {}
        for k, reply in received:
            reason = self._failure(reply)
            if reason is None:
                problem, arrays[k] = self._training_problem(
                    k, reply, global_parameters, round_names
                )
                if problem is not None:
                    reason = f"its reply cannot be used: {problem}"
            if reason is None:
                usable[k] = reply
            outcomes.append((k, reason, None))
        reports = (
            _aligned_reports([usable[k] for k in sorted(usable)])
            if reporting and usable
            else [None] * len(usable)
        )
        replies = {
            k: RoundReply(
                model=None,
                parameters=arrays[k],
                n_rows=int(usable[k].content["metrics"][NUM_EXAMPLES]),
                loss=float(usable[k].content["metrics"][TRAIN_LOSS]),
                report=report,
            )
            for k, report in zip(sorted(usable), reports, strict=True)
        }
        return outcomes, replies

    def _named(self, received):
        """``((k, node), names)`` of every reply naming its groups readably."""
        named = []
        for k, reply in received:
            if reply is None or reply.has_error():
                continue
            parsed, _ = parse_groups(reply.content.config_records.get("config", {}))
            if parsed is not None:
                named.append(((k, self.nodes[k]), parsed[1]))
        return named

    def _training_problem(self, k, reply, reference, round_names):
        """A training reply checked by the gate: ``(problem or None, arrays)``."""
        content = reply.content
        declared = self.declared[k]
        decoded = []

        def report():
            rowset = declared.reports
            return named_report_claim_problem(
                content["config"],
                lambda: content["fairness"].to_numpy_ndarrays(),
                round_names,
                ledger=self.gate.ledger,
                k=k,
                rowset=rowset,
                declared_rows=declared.sizes[rowset],
            )

        def check():
            metrics = dict(content["metrics"])
            decoded.append(content["arrays"].to_numpy_ndarrays())
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
        """Nothing: a client keeps its own estimator on its node."""

    def evaluate(self, round_number, global_parameters):
        """Every client's evaluation of the global model: the loop's evaluation.

        ``(outcomes, metrics, rows)``: the failure policy's outcomes, and per
        usable client its ``val_*`` metrics and its evaluation rows.
        """
        received = self._send(
            range(self.n_clients),
            global_parameters,
            {SERVER_ROUND: int(round_number)},
            MessageType.EVALUATE,
        )
        outcomes, metrics, rows = [], {}, {}
        for k, reply in received:
            reason = self._failure(reply)
            if reason is None:
                declared = self.declared[k]
                problem = unless_malformed(
                    lambda reply=reply, declared=declared: evaluation_reply_problem(
                        dict(reply.content["metrics"]),
                        allowed=self.allowed_metrics,
                        declared_rows=declared.sizes[declared.evaluation],
                    )
                )
                if problem is not None:
                    reason = f"its reply cannot be used: {problem}"
            if reason is None:
                sent = dict(reply.content["metrics"])
                metrics[k] = {
                    key: float(value)
                    for key, value in sent.items()
                    if key.startswith(VALIDATION_PREFIX)
                }
                rows[k] = float(sent[NUM_EXAMPLES])
            outcomes.append((k, reason, None))
        return outcomes, metrics, rows

    def rate_histograms(self, round_number, global_parameters, constraint):
        """Every client's rate-constraint counts, checked: outcomes and answers.

        The in-process server's rules (``FederatedConstraint.problem``: the
        groups it declared, whole counts of its training rows per group and
        label as it claimed them before).
        """
        received = self._send(
            range(self.n_clients),
            global_parameters,
            {N_BINS: int(constraint.n_bins)},
            _RATE_HISTOGRAMS,
        )
        answers, outcomes = {}, []
        for k, reply in received:
            reason = query_failure(reply, "rate histograms query", self.timeout)
            if reason is not None:
                outcomes.append((k, reason, None))
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
                problem = constraint.problem(
                    answer, self.gate.ledger, k, self.declared[k].sizes["train"]
                )
            if problem is None:
                answers[k] = answer
                outcomes.append((k, None, None))
            else:
                outcomes.append((k, f"its reply cannot be used: {problem}", None))
        return outcomes, answers

    def finish(self):
        """Nothing to release after the last round."""


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
