"""A federation's round records, ``history_``: written once, in one order.

``RoundHistory`` finds or makes the record of one client and round, which
the round loop, the evaluation and the failure policy (``_policy``) all
write into; ``ordered_records`` puts a history in the one order of both
backends.
"""

from __future__ import annotations


class RoundHistory:
    """A federation's round records, one per round and client, found or made.

    Both backends write a client's round into one record: its training loss,
    its update's norm, its validation metrics, or why it was skipped
    (``admit_round``). ``records`` is the list kept (``history_``); records
    are appended to it and found again only through this object, so the
    records of an earlier run (a warm start's, or of a fit that stopped
    midway and re-runs a round) are never written into.

    Parameters
    ----------
    records : list of dict
    client_id : callable, default=None
        ``client_id(k)``: client ``k``'s id in the records (``k`` itself by
        default).
    """

    def __init__(self, records, client_id=None):
        self.records = records
        self.client_id = client_id or (lambda k: k)
        self._by_key = {}

    def record(self, round_number, k):
        """Client ``k``'s record of round ``round_number``, appended if new."""
        return self.record_of(round_number, self.client_id(k))

    def record_of(self, round_number, client):
        """The record of round ``round_number`` and client id ``client``.

        Appended if new. On both backends a record holds ``train_loss`` when
        the client was selected that round (None when it failed); a client
        only evaluated that round has none.
        """
        key = (round_number, client)
        found = self._by_key.get(key)
        if found is None:
            found = {"round": round_number, "client": client}
            self.records.append(found)
            self._by_key[key] = found
        return found


def ordered_records(records, clients):
    """A federation's history in the one order of both backends.

    By round, then by the client's place in ``clients`` (the ids in the
    federation's order), whatever order the clients were selected, trained
    or evaluated in; a client's records within a round keep the order they
    were written in (a stage's records of round 0 before the next stage's).
    A record of no client of ``clients`` (``strategy="central"``'s pooled
    fit) comes first in its round.
    """
    position = {client: k for k, client in enumerate(clients)}
    return sorted(
        records,
        key=lambda record: (record["round"], position.get(record["client"], -1)),
    )
