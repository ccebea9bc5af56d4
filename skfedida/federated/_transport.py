"""What a federation's server and a transport to its clients agree on.

When the clients are reached by message (Flower's grid), the server's run
(``_lifecycle.run_federation``) and its rounds (``_message_rounds``) talk
to them through a transport, which alone knows how a message reaches a
client. A transport offers:

``discover()``
    Every client's discovery reply (a reply, below), in client order, once
    all have connected; it raises when it cannot find them.
``name(k)``
    Client ``k`` as errors and records name it.
``send(kind, payloads, clients, what=None)``
    One ``Payload`` to each of ``clients`` (indices); returns by client its
    reply, or a string saying why none can be read (none came in time, or
    the client failed, worded as in-process). ``kind`` is one of
    ``MESSAGE_KINDS``; ``what`` names the message in that string (``kind``
    by default).

A reply offers ``config(*default)``, ``metrics(*default)``,
``arrays(name="arrays")`` and ``answer()``: each raises when the client did
not send that part, or sent it malformed (KeyError, TypeError, ValueError,
which the gate calls a malformed reply), and returns ``default`` for a
missing config or metrics when one is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .._codec import encode
from .._messages import (
    ANSWER,
    CLASS_COUNTS,
    DECISION_COUNTS,
    DECLARED_GROUPS,
    FEATURE_NAMES,
    FITTED_STATES,
    GROUP_LABELS,
    LABELS,
    N_FEATURES,
    NUM_EVAL_ROWS,
    NUM_EXAMPLES,
    NUM_PARTITIONS,
    NUM_ROWS,
    PARTITION_ID,
    PREPROCESSING_STATES,
    QUERY,
    RATE_TERM,
    RAW_COLUMNS,
    RAW_DTYPES,
    SENSITIVE_NAMES,
    TRAIN_LOSS,
    TREE_MODEL,
)
from ..metrics._registry import PERSONAL_PREFIX, VALIDATION_PREFIX
from ..metrics._registry import keys as metric_keys
from ._wire import tree_model_message

#: What the server sends, each kind a stage of the run (a transport gives
#: each kind its own message type, and the rounds' kinds their own wording
#: of a missing reply).
MESSAGE_KINDS = (
    "discovery query",
    "statistics query",
    "initialisation",
    "training",
    "evaluation",
    "decision query",
    "rate histograms query",
    "tree query",
    "group declaration",
    "histogram query",
)
#: The kinds sent every training round.
ROUND_KINDS = frozenset({"training", "evaluation"})


@dataclass(frozen=True)
class Payload:
    """What the server sends one client: configuration, and arrays if any.

    ``config`` maps message keys (``skfedida._messages``) to plain values,
    or to objects that the transport writes in its own format (a query, the
    fitted transformers' states, a rate term, a fitted tree model).
    ``arrays`` are the global model's parameter arrays, or None when the
    message carries none.
    """

    config: Mapping = field(default_factory=dict)
    arrays: list | None = None


#: How a transport writes the objects a payload's config may hold (a query,
#: fitted states, a rate term, a fitted tree model) into a message: JSON
#: text the client decodes. Every transport writes them alike, so a client
#: reads the same message whatever carried it.
PAYLOAD_WRITERS = {
    QUERY: encode,
    FITTED_STATES: encode,
    PREPROCESSING_STATES: encode,
    RATE_TERM: encode,
    TREE_MODEL: lambda model: encode(tree_model_message(model)),
}


# What a client ever sends to the server besides parameter arrays (and, for a
# FederatedThresholdOptimizer, its counts per group, label and score bin):
# counts, losses, evaluation metrics and configuration (no rows, labels or
# groups of rows; the group-labels are the categories its rows take).
REPLY_METRICS = frozenset(
    {
        NUM_EXAMPLES,
        # Declared at discovery: the rows the client loaded and its
        # evaluation rows (every later count of its rows must agree).
        NUM_ROWS,
        NUM_EVAL_ROWS,
        TRAIN_LOSS,
        *(VALIDATION_PREFIX + name for name in metric_keys(reported=True)),
        *(PERSONAL_PREFIX + name for name in metric_keys(personal=True)),
    }
)
REPLY_CONFIG = frozenset(
    {
        PARTITION_ID,
        NUM_PARTITIONS,
        N_FEATURES,
        "classes",
        CLASS_COUNTS,
        DECISION_COUNTS,
        FEATURE_NAMES,
        LABELS,
        GROUP_LABELS,
        SENSITIVE_NAMES,
        RAW_COLUMNS,
        RAW_DTYPES,
        DECLARED_GROUPS,
        ANSWER,
    }
)
