"""How a skfedida ClientApp and ServerApp say it over Flower.

The Flower message type of each kind of message, the key of a node's state
the client keeps its record under, and a failed ClientApp's or a missing
reply's reason, worded as the in-process federation words a client's
failure. What the messages hold is ``skfedida.federated``'s
(``_transport``, ``_wire``, ``_message_client``).
"""

from __future__ import annotations

import re

from flwr.app import MessageType

_INIT = f"{MessageType.QUERY}.skfedida_init"
#: A federation of boosted trees: every query of its fit
#: (``skfedida.federated._trees``), JSON both ways.
_TREES = f"{MessageType.QUERY}.skfedida_trees"
#: Before group thresholds after boosted trees: each client's groups and
#: their rows on the rows it will count (as initialisation declares them).
_TREE_GROUPS = f"{MessageType.QUERY}.skfedida_tree_groups"
#: After the last round, with a FederatedThresholdOptimizer: each client's
#: counts of scores per (group, label, bin) on its evaluation rows.
_HISTOGRAMS = f"{MessageType.QUERY}.skfedida_histograms"
#: Before every round and after the last, with a rate constraint: each
#: client's counts of its training rows' scores per (group, label, bin)
#: under the round's global model.
_RATE_HISTOGRAMS = f"{MessageType.QUERY}.skfedida_rate_histograms"
#: Before initialisation, with a pipeline federation: each client's answer
#: (counts, sums, category counts) for the next federated transformer.
_STATISTICS = f"{MessageType.QUERY}.skfedida_statistics"
#: After the last round: each client saves the model it uses and counts its
#: training rows per class that model predicts.
_DECISIONS = f"{MessageType.QUERY}.skfedida_decisions"
_STATE_KEY = "skfedida"


#: Flower's wording of a ClientApp's exception in an error reply.
_FLOWER_FAILURE = re.compile(r"<class '(?:[\w.]*\.)?(\w+)'>:<'(.*)'>", re.S)


def remote_failure(reason):
    """A ClientApp's exception as the in-process federation words a client's.

    Flower's error reply says ``"<class 'ValueError'>:<'bad rows'>"``; the
    in-process federation says ``"ValueError: bad rows"``, and so do both
    backends' errors and skip records. Another reason is returned as it is.

    Parameters
    ----------
    reason : str
        An error reply's ``error.reason``.

    Returns
    -------
    reason : str
    """
    found = _FLOWER_FAILURE.fullmatch(reason)
    return reason if found is None else f"{found[1]}: {found[2]}"


def query_failure(reply, what, timeout):
    """Why a node's reply to a stage query cannot be read, or None if it can.

    None came within ``timeout`` seconds, or its ClientApp raised (said as
    the in-process federation says a client's exception).

    Parameters
    ----------
    reply : flwr.app.Message or None
        The node's reply; None when none came.
    what : str
        The query, as the reason names it ("rate histograms query").
    timeout : float
        The seconds the server waited.

    Returns
    -------
    reason : str or None
    """
    if reply is None:
        return f"no reply to the {what} within {timeout} s"
    if reply.has_error():
        return f"its ClientApp failed the {what}: {remote_failure(reply.error.reason)}"
    return None
