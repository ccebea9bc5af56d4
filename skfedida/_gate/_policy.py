"""The gate's policy: a reply that fails is its client's failure.

``ReplyGate`` hands the problems the rules found to ``on_client_error``:
with ``"raise"`` the first failing client stops the fit with an error naming
it, the stage and what was wrong; with ``"skip"`` it is left out of what the
replies feed, and recorded in the round history (``admit_round`` writes
into a ``_history.RoundHistory`` record).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._ledger import ClientLedger


@dataclass(frozen=True)
class Outcome:
    """One client's reply as the failure policy reads it.

    ``reason``: why the reply cannot be used (None: it can); ``cause``: the
    exception behind that reason, chained to the error the policy raises
    (None when the reply was refused by a rule, not failed).
    """

    client: int
    reason: str | None = None
    cause: BaseException | None = None


class Failed:
    """A client's answer that raised (in-process): the exception it raised.

    What a client's work returns in place of its answer when it fails, so
    that the server, not the client, applies the failure policy.
    """

    def __init__(self, error):
        self.error = error


def admit_round(outcomes, *, round_number, on_client_error, name, record, what=None):
    """One round's replies through the failure policy: admitted, raised or skipped.

    The one policy of training and evaluation rounds, for both backends: with
    ``on_client_error="raise"`` the first failed client stops the fit naming
    it; with ``"skip"`` every failure is written into its history record and
    the round goes on with the others; a round where every selected client
    failed stops the fit either way.

    Parameters
    ----------
    outcomes : list of Outcome
        Per selected client, in selection order: its index, why its reply
        cannot be used (None when it can), and the exception behind that
        (chained to the error raised, where there is one).
    round_number : int
        The round, counted from 1.
    on_client_error : {"raise", "skip"}
    name : callable
        ``name(k)``: how client ``k`` is named in errors.
    record : callable
        ``record(k)``: client ``k``'s history record of this round, a dict
        the skip is written into.
    what : {"training", "evaluation", "rate histograms"} or None
        The kind of round, said in errors when given. A skipped evaluation is
        recorded under ``evaluation_skipped``, a skipped count of a rate
        constraint's histograms under ``rate_histograms_skipped``, a skipped
        training as ``skipped`` with no training loss.

    Returns
    -------
    admitted : list of int
        The clients whose replies are used, in the order given.
    """
    where = f" ({what})" if what else ""

    def skip(k, reason):
        if what == "evaluation":
            record(k)["evaluation_skipped"] = reason
        elif what == "rate histograms":
            # Left out of the round's operating point; it still trains.
            record(k)["rate_histograms_skipped"] = reason
        else:
            record(k).update(train_loss=None, skipped=reason)

    return failure_policy(
        outcomes,
        on_client_error,
        one_failed=lambda k, reason: (
            f"{name(k)} failed in round {round_number}{where}: {reason} (set "
            "on_client_error='skip' to aggregate the other clients)."
        ),
        every_failed=lambda k, reason: (
            f"Every selected client failed in round {round_number}{where}; "
            f"first: {name(k)}: {reason}"
        ),
        skip=skip,
    )


def failure_policy(outcomes, on_client_error, *, one_failed, every_failed, skip):
    """``on_client_error`` applied to replies: the one policy, worded by the caller.

    With ``"raise"`` the first failed client stops the fit
    (``RuntimeError(one_failed(k, reason))``, chained to its cause); when
    every client failed the fit stops either way (``every_failed``);
    otherwise ``skip(k, reason)`` records each failure and the others go on.
    ``outcomes`` holds an ``Outcome`` per client, in order. Returns the
    clients whose replies are used, in that order.
    """
    failed = [outcome for outcome in outcomes if outcome.reason is not None]
    if failed and on_client_error == "raise":
        first = failed[0]
        raise RuntimeError(one_failed(first.client, first.reason)) from first.cause
    if failed and len(failed) == len(outcomes):
        first = failed[0]
        raise RuntimeError(every_failed(first.client, first.reason)) from first.cause
    for outcome in failed:
        skip(outcome.client, outcome.reason)
    return [outcome.client for outcome in outcomes if outcome.reason is None]


class ReplyGate:
    """Admits clients' replies, or fails them by ``on_client_error``.

    Every backend checks a reply with the rules above, then hands the
    problems to ``admit``: with ``"raise"`` the first failing client stops
    the fit with an error naming it, the stage and what was wrong; with
    ``"skip"`` it is left out of what the replies feed, and recorded.

    Parameters
    ----------
    on_client_error : {"raise", "skip"}
    name : callable
        ``name(k)``: how client ``k`` is named in errors ("Client 2 (node
        1003)").
    client_id : callable
        ``client_id(k)``: the client's id in the records.
    """

    def __init__(self, on_client_error="raise", name=None, client_id=None):
        self.on_client_error = on_client_error
        self.name = name or (lambda k: f"Client {k!r}")
        self.client_id = client_id or (lambda k: k)
        self.ledger = ClientLedger()
        #: One record per skipped reply: stage, client and the reason.
        self.records = []
        #: Clients left out of the rest of a multi-round stage.
        self.left_out = set()

    def admit(self, stage, problems):
        """The clients whose replies are admitted, in the order given.

        Parameters
        ----------
        stage : str
            What the replies were for ("initialisation", "histogram query").
        problems : list of (int, str or None)
            Per replying client, its index and the problem of its reply.

        Returns
        -------
        admitted : list of int
        """
        return failure_policy(
            [Outcome(k, problem) for k, problem in problems],
            self.on_client_error,
            one_failed=lambda k, problem: (
                f"{self.name(k)} failed the {stage}: its reply cannot be used: "
                f"{problem} (set on_client_error='skip' to leave it out)."
            ),
            every_failed=lambda k, problem: (
                f"Every client failed the {stage}; first: {self.name(k)}: "
                f"its reply cannot be used: {problem}"
            ),
            skip=lambda k, problem: self.records.append(
                {
                    "stage": stage,
                    "client": self.client_id(k),
                    "skipped": f"its reply cannot be used: {problem}",
                }
            ),
        )
