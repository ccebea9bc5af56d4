"""The rules for replies about a client's rows, held to what it said before.

Initialisation replies (class counts), the final model's decision counts,
score histograms (group thresholds), FairFed's fairness reports, group
declarations and the data descriptions of discovery: every count of rows
adds up to the rows the client declared when it joined, and to what it
claimed about the same rows in any earlier reply (``ClientLedger``), so a
client cannot claim two different things about one set of rows across rounds
or reply kinds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from .._messages import (
    DECLARED_GROUPS,
    FEATURE_NAMES,
    GROUP_LABELS,
    LABELS,
    N_FEATURES,
    NUM_EVAL_ROWS,
    NUM_ROWS,
    RAW_COLUMNS,
    RAW_DTYPES,
    SENSITIVE_NAMES,
)
from ..metrics._registry import COUNTS
from ._checks import (
    consensus,
    count_array,
    count_scalar,
    parse_groups,
    read_reply,
    rows_problem,
    unless_malformed,
)
from ._model import training_reply_problem


def initialisation_reply_problem(class_counts, *, n_classes, declared_rows):
    """Why an initialisation reply's class counts cannot be used, or None.

    Parameters
    ----------
    class_counts : array-like
        The client's training rows per class, in the order of the classes.
    n_classes : int
        The federation's number of classes.
    declared_rows : int
        The training rows the client declared.

    Returns
    -------
    problem : str or None
    """
    return _per_class_problem(
        class_counts, "its class counts", n_classes, declared_rows
    )


def admitted_decision_counts(gate, replies, *, n_classes, declared_rows, summed=None):
    """The federation's decisions per class: the admitted clients' counts summed.

    Parameters
    ----------
    gate : ReplyGate
        Checks each reply (one count per class, whole, adding up to the
        client's declared training rows, as class counts do) and applies
        the failure policy; a skipped client is recorded at the stage
        ``"decision query"`` and left out of the sum.
    replies : list
        Per client, a callable returning its counts, or a string saying why
        it has none (it failed).
    n_classes : int
        The federation's number of classes.
    declared_rows : list of int
        Per client, the training rows it declared.
    summed : callable, default=None
        ``summed(counts)``: the sum of the admitted clients' counts (client
        index to counts), when it is not plain arithmetic (secure
        aggregation's).

    Returns
    -------
    counts : ndarray of int64 of shape (n_classes,)
    """
    problems, counted = [], {}
    for k, reply in enumerate(replies):
        if isinstance(reply, str):
            problems.append((k, reply))
            continue

        def check(reply=reply, k=k):
            counted[k] = reply()
            return _per_class_problem(
                counted[k], "its decision counts", n_classes, declared_rows[k]
            )

        problems.append((k, unless_malformed(check)))
    admitted = gate.admit("decision query", problems)
    if summed is not None:
        return np.asarray(summed({k: counted[k] for k in admitted}), dtype=np.int64)
    total = np.zeros(n_classes, dtype=np.int64)
    for k in admitted:
        total += np.asarray(counted[k], dtype=np.int64)
    return total


def _per_class_problem(counts, what, n_classes, declared_rows):
    # One count per class of every one of the client's training rows.
    counts, problem = count_array(
        counts, what, shape=(n_classes,), at_most=declared_rows
    )
    if problem is not None:
        return problem
    if int(counts.sum()) != int(declared_rows):
        return (
            f"{what} add up to {int(counts.sum())} rows; it declared "
            f"{int(declared_rows)} training rows"
        )
    return None


def histogram_reply_problem(counts, *, n_groups, n_bins, declared_rows):
    """Why a client's score histograms cannot be used, or None.

    Parameters
    ----------
    counts : array-like
        Its counts per (group, label (negative, positive), score bin).
    n_groups : int
        The number of groups the counts are for.
    n_bins : int
        The bins the server asked for.
    declared_rows : int
        The rows the histograms count (the client's evaluation rows).

    Returns
    -------
    problem : str or None
    """
    array, problem = count_array(
        counts,
        "its histogram",
        shape=(n_groups, 2, n_bins),
        at_most=declared_rows,
    )
    if problem is not None:
        return problem
    if int(array.sum()) != int(declared_rows):
        return (
            f"its histogram counts {int(array.sum())} rows; it declared "
            f"{int(declared_rows)} evaluation rows"
        )
    return None


#: A FairFed report's arrays, in the order a Flower client sends them: the
#: registry's counts, from which FairFed's gaps are computed.
REPORT_KEYS = COUNTS


def histogram_claim_problem(
    counts, labels, *, n_bins, ledger, k, rowset, declared_rows
):
    """A score histogram's problem: its form and counts, then what they claim.

    The one check of a histogram reply on both backends (group thresholds):
    ``counts`` of shape ``(n_groups, 2, n_bins)`` over ``declared_rows``
    rows, whose rows per group and label must be those the client declared
    and claimed before about ``rowset`` (``ledger``). ``labels`` are the
    groups the first axis counts.
    """
    problem = histogram_reply_problem(
        counts, n_groups=len(labels), n_bins=n_bins, declared_rows=declared_rows
    )
    if problem is not None:
        return problem
    per_group = np.asarray(counts, np.float64).sum(axis=2).astype(np.int64)
    return _claim_per_group(ledger, k, rowset, labels, per_group)


def _claim_per_group(ledger, k, rowset, labels, per_group):
    """The claim a reply's (negative, positive) rows per group make of a set.

    ``per_group`` has one row per group of ``labels``: its negative and
    positive rows. Their totals per label and the rows per group must agree
    with what the client declared and claimed before about ``rowset``.
    """
    return ledger.claim(
        k,
        rowset,
        labels=per_group.sum(axis=0),
        groups=dict(zip(labels, per_group, strict=True)),
    )


def fairness_report_problem(report, *, n_groups, declared_rows):
    """Why a FairFed report (counts per group) cannot be used, or None.

    Counts per group of rows, positive decisions, positive rows and true
    positives: whole, >= 0, adding up to the declared rows, and consistent
    (decisions and positives among a group's rows, true positives among both).
    """
    if not hasattr(report, "keys") or set(report) != set(REPORT_KEYS):
        keys = sorted(report) if hasattr(report, "keys") else type(report).__name__
        return f"its fairness report has {keys}; expected {list(REPORT_KEYS)}"
    counts = {}
    for key in REPORT_KEYS:
        counts[key], problem = count_array(
            report[key],
            f"its fairness report's {key!r}",
            shape=(n_groups,),
            at_most=declared_rows,
        )
        if problem is not None:
            return problem
    if int(counts["n"].sum()) != int(declared_rows):
        return (
            f"its fairness report counts {int(counts['n'].sum())} rows; it "
            f"declared {int(declared_rows)}"
        )
    n, tp = counts["n"], counts["true_positive"]
    if np.any(counts["selected"] > n) or np.any(counts["n_positive"] > n):
        return "its fairness report has more decisions or positives than rows"
    if np.any(tp > counts["selected"]) or np.any(tp > counts["n_positive"]):
        return "its fairness report has more true positives than decisions"
    return None


def fairness_report_claim_problem(report, labels, *, ledger, k, rowset, declared_rows):
    """A FairFed report's problem: its counts, then what they claim of the rows.

    The one check of a fairness report on both backends. ``labels`` are the
    groups the report's positions count (the federation's encoding
    in-process, the client's own on Flower); the counts must be those of
    ``declared_rows`` rows, and the rows per group and label the same as the
    client declared at initialisation and claimed in any earlier reply about
    ``rowset`` (``ledger``).
    """
    problem = fairness_report_problem(
        report, n_groups=len(labels), declared_rows=declared_rows
    )
    if problem is not None:
        return problem
    n = np.asarray(report["n"], np.int64)
    positive = np.asarray(report["n_positive"], np.int64)
    per_group = np.column_stack([n - positive, positive])
    return _claim_per_group(ledger, k, rowset, labels, per_group)


def attributes_problem(names, agreed):
    """A reply's groups are of other sensitive attributes than the round's.

    ``agreed`` is the names most replies of the round give (``consensus``),
    None when there is nothing to agree on.
    """
    if agreed is not None and names != agreed:
        return f"its groups are of attributes {names}; the federation's are {agreed}"
    return None


def named_fairness_report(config, arrays, round_names):
    """A FairFed report that names its own groups: ``(report, labels, problem)``.

    On Flower a client sends its groups' labels and the sensitive
    attributes' names with its counts (``parse_groups``); the names must be
    those the round's reports agree on (``round_names``, None when no
    consensus is needed), and there is one array per count. ``arrays()``
    decodes the counts, called only once the groups pass (as the checks run
    in order).

    Returns
    -------
    report : dict or None
    labels : list or None
    problem : str or None
    """
    parsed, problem = parse_groups(config)
    if problem is not None:
        return None, None, problem
    labels = parsed.labels
    problem = attributes_problem(parsed.names, round_names)
    if problem is not None:
        return None, None, problem
    arrays = arrays()
    if len(arrays) != len(REPORT_KEYS):
        return (
            None,
            None,
            f"its fairness report has {len(arrays)} arrays; expected "
            f"{len(REPORT_KEYS)}",
        )
    return dict(zip(REPORT_KEYS, arrays, strict=True)), labels, None


def named_report_claim_problem(
    config, arrays, round_names, *, ledger, k, rowset, declared_rows
):
    """A FairFed report that names its own groups, checked, then claimed.

    ``named_fairness_report`` (its groups, their attributes, one array per
    count), then ``fairness_report_claim_problem`` on ``rowset``.
    """
    report, labels, problem = named_fairness_report(config, arrays, round_names)
    if problem is not None:
        return problem
    return fairness_report_claim_problem(
        report,
        labels,
        ledger=ledger,
        k=k,
        rowset=rowset,
        declared_rows=declared_rows,
    )


def attributes_consensus(named, name):
    """The sensitive attributes' names most replies give, or None if none do.

    ``named`` holds ``(k, names)`` for every reply whose groups could be
    read; ``name(k)`` names client ``k`` in the error when no strict
    majority agrees (``consensus``).
    """
    if not named:
        return None
    return consensus(
        [names for _, names in named],
        "the sensitive attributes' names",
        names=[name(k) for k, _ in named],
    )


def named_histogram_problem(
    arrays, names, agreed, labels, *, n_bins, ledger, k, rowset, declared_rows
):
    """A histogram reply that names its own groups, checked, then claimed.

    Its groups are of the attributes the replies agree on (``agreed``); it
    holds one array (``arrays()`` decodes them), checked and claimed by
    ``histogram_claim_problem``.
    """
    problem = attributes_problem(names, agreed)
    if problem is not None:
        return problem
    decoded, problem = read_reply(arrays)
    if problem is not None:
        return problem
    if len(decoded) != 1:
        return f"it sent {len(decoded)} arrays; one histogram was asked for"
    return histogram_claim_problem(
        decoded[0],
        labels,
        n_bins=n_bins,
        ledger=ledger,
        k=k,
        rowset=rowset,
        declared_rows=declared_rows,
    )


def group_declaration_problem(config, sizes, ledger, k):
    """A client's groups declared at initialisation, checked and kept.

    ``config["declared-groups"]`` (JSON, optional: a client without
    sensitive features declares none) holds ``names`` (the attributes) and,
    per set of rows it will use (``train``, ``held_out``, ``eval``), the
    ``labels`` of its groups there and their ``rows``: whole counts adding
    up to the set's declared size. Only labels and counts, never rows.
    Returns ``(names, problem)``; the declaration goes into ``ledger``.
    """
    if DECLARED_GROUPS not in config:
        return None, None
    try:
        declared = json.loads(config[DECLARED_GROUPS])
        names, rowsets = declared["names"], declared["rowsets"]
    except (KeyError, TypeError, ValueError) as exc:
        return None, (
            f"its declared groups cannot be read ({type(exc).__name__}: {exc})"
        )
    if not isinstance(rowsets, dict) or not isinstance(names, list):
        return None, "its declared groups are not names and sets of rows"
    parsed_rowsets = {}
    for rowset, entry in rowsets.items():
        if rowset not in sizes:
            return None, (
                f"it declared groups for {rowset!r} rows; its sets of rows are "
                f"{sorted(sizes)}"
            )
        if not isinstance(entry, dict) or set(entry) != {"labels", "rows"}:
            return None, f"its declared groups of {rowset!r} rows are malformed"
        parsed, problem = parse_groups(
            {
                GROUP_LABELS: json.dumps(entry["labels"]),
                SENSITIVE_NAMES: json.dumps(names),
            },
            f"its declared groups of {rowset!r} rows",
        )
        if problem is not None:
            return None, problem
        labels = parsed.labels
        counts, problem = count_array(
            entry["rows"],
            f"its declared rows per group of {rowset!r} rows",
            shape=(len(labels),),
            at_most=sizes[rowset],
        )
        if problem is not None:
            return None, problem
        if int(counts.sum()) != int(sizes[rowset]):
            return None, (
                f"its declared rows per group of {rowset!r} rows add up to "
                f"{int(counts.sum())}; it declared {int(sizes[rowset])} rows"
            )
        parsed_rowsets[rowset] = dict(zip(labels, counts.tolist(), strict=True))
    for rowset, rows in parsed_rowsets.items():
        ledger.declare_groups(k, rowset, rows)
    return tuple(names), None


#: The fields of a client's description of its data, in ``DataDescription``'s
#: order (what every client of a federation must share).
DESCRIPTION_KEYS = (
    N_FEATURES,
    "classes",
    FEATURE_NAMES,
    RAW_COLUMNS,
    RAW_DTYPES,
)


@dataclass(frozen=True)
class DataDescription:
    """A client's description of its data: what every client must share.

    The fields of ``DESCRIPTION_KEYS``, in order; the names are None where
    the client sent none.
    """

    n_features: int
    classes: list
    feature_names: list | None
    raw_columns: list | None
    raw_dtypes: list | None

    def fields(self):
        """The values, in ``DESCRIPTION_KEYS`` order."""
        return (
            self.n_features,
            self.classes,
            self.feature_names,
            self.raw_columns,
            self.raw_dtypes,
        )


def data_description(config):
    """A client's description of its data, checked: ``(description, problem)``.

    A ``DataDescription`` from the mapping ``config``: a count > 0, a list
    of two or more distinct labels, lists of names (None where the client
    sent none). Only their form here; whether they are the federation's is
    for the majority of the clients to say (``consensus``, then
    ``description_difference``).
    """
    n_features, problem = count_scalar(config.get(N_FEATURES), "its n-features")
    if problem is None and n_features == 0:
        problem = "its n-features is 0"
    if problem is not None:
        return None, problem
    classes = config.get("classes")
    scalar = (str, int, float)
    if (
        not isinstance(classes, list)
        or len(classes) < 2
        or not all(isinstance(c, scalar) and not isinstance(c, bool) for c in classes)
        or len({repr(c) for c in classes}) != len(classes)
    ):
        return None, f"its classes {classes!r} are not two or more distinct labels"
    names = []
    for key in DESCRIPTION_KEYS[2:]:
        value = config.get(key)
        if value is not None and (
            not isinstance(value, list) or not all(isinstance(v, str) for v in value)
        ):
            return None, f"its {key} {value!r} are not a list of names"
        names.append(None if value is None else list(value))
    return DataDescription(int(n_features), list(classes), *names), None


def description_difference(description, agreed):
    """How a client's description differs from the majority's, in words."""
    for key, mine, theirs in zip(
        DESCRIPTION_KEYS, description.fields(), agreed.fields(), strict=True
    ):
        if mine != theirs:
            hint = (
                "; a client may lack a class: give every client the "
                "federation's classes with make_client_app(..., classes=...)"
                if key == "classes"
                else ""
            )
            return (
                f"its {key} {mine!r} are not those of the majority of the "
                f"clients ({theirs!r}){hint}"
            )
    return None


def description_consensus(described, name):
    """The data's description most clients give, and how the others differ.

    ``described`` maps client ``k`` to its checked description
    (``data_description``). Returns the majority's description and, per
    client whose own differs, the difference in words.
    """
    agreed = consensus(
        list(described.values()),
        "the data's description (features, classes, raw columns)",
        names=[name(k) for k in described],
    )
    return agreed, {
        k: description_difference(description, agreed)
        for k, description in described.items()
        if description != agreed
    }


def declared_labels(config):
    """The labels a client declared at discovery, or why they cannot be used.

    ``(labels, None)`` or ``(None, problem)``: a JSON list of distinct
    values (text, numbers, booleans; empty for a client without rows, which
    its initialisation then fails); ``(None, None)`` when the client
    declared none (it then brings its own classes).
    """
    if LABELS not in config:
        return None, None
    try:
        labels = json.loads(config[LABELS])
    except (TypeError, ValueError) as exc:
        return None, f"its labels cannot be read ({type(exc).__name__}: {exc})"
    if (
        not isinstance(labels, list)
        or not all(
            isinstance(label, (str, int, float, bool)) and label == label
            for label in labels
        )
        or len({json.dumps(label) for label in labels}) != len(labels)
    ):
        return None, f"its labels {labels!r} are not a list of distinct values"
    return labels, None


def discovery_problem(metrics):
    """A client's declared rows at discovery: ``(n_rows, n_eval_rows, problem)``.

    ``num-rows`` (the rows it loaded) and, when it has them,
    ``num-eval-rows``: whole counts. No rows at all is for the client's own
    checks to explain at initialisation, as ``fit`` does.
    """
    n_rows, problem = count_scalar(metrics.get(NUM_ROWS), "its rows")
    n_eval = None
    if problem is None and NUM_EVAL_ROWS in metrics:
        n_eval, problem = count_scalar(metrics[NUM_EVAL_ROWS], "its evaluation rows")
    return n_rows, n_eval, problem


def initialisation_claim_problem(
    k,
    *,
    n_rows,
    class_counts,
    n_classes,
    initial_parameters,
    reference,
    config,
    sizes,
    ledger,
    classes=(),
    labels=None,
):
    """A client's initialisation reply checked, then its class counts claimed.

    Its training rows as declared (``sizes["train"]``); its count of each of
    the federation's ``n_classes`` classes over them; its initial model, of
    the shapes and dtypes of ``reference`` and finite (None: a pooled fit,
    which trains no client's model); and its groups on
    every set of its rows (``group_declaration_problem``, from ``config``:
    the only groups its later replies may count rows in). Returns the first
    problem, or the ledger's verdict on its class counts. ``class_counts()``
    and ``initial_parameters()`` read those from the reply, each only once
    the checks before it pass (a reply wrong in two ways is told the first).
    With the ``labels`` it declared at discovery, it counts rows of no
    other of the federation's ``classes``.
    """
    problem = rows_problem(n_rows, sizes["train"], "its training rows")
    if problem is None:
        class_counts = class_counts()
        problem = initialisation_reply_problem(
            class_counts, n_classes=n_classes, declared_rows=sizes["train"]
        )
    if problem is None and labels is not None:
        # Held to what it said when it joined: rows only of its own labels.
        undeclared = [
            c
            for c, count in zip(classes, class_counts, strict=True)
            if count and c not in labels
        ]
        if undeclared:
            problem = (
                f"its class counts count rows of {undeclared}, labels it did not "
                f"declare when it joined ({labels})"
            )
    if problem is None and initial_parameters is not None:
        problem = training_reply_problem(
            initial_parameters(),
            sizes["train"],
            0.0,
            reference=reference,
            declared_rows=sizes["train"],
        )
    if problem is None:
        _, problem = group_declaration_problem(config, sizes, ledger, k)
    if problem is not None:
        return problem
    return ledger.claim(k, "train", labels=np.asarray(class_counts, np.int64))
