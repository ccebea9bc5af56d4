"""What a skfedida ClientApp and ServerApp say to each other.

The run-config keys both sides read, the message types and the keys of what
a client ever sends (counts, losses, metrics and configuration: no rows,
labels or groups), and the federation plan each side builds from the same
``FederatedEstimator``.
"""

from __future__ import annotations

import json
import re

import numpy as np
from flwr.app import MessageType
from sklearn.base import clone

from .._gate._rows import REPORT_KEYS
from .._messages import (
    GROUP_LABELS,
    SENSITIVE_NAMES,
)
from ..ensemble._boosting import tree_message, tree_predictor
from ..federated._estimator import make_plan
from ..federated._tree_client import bin_mapper_of
from ..federated._tree_server import fit_inputs

#: Run-config keys (``[tool.flwr.app.config]``) that override the federation's
#: parameters on both sides, so one ``flwr run --run-config`` changes both.
RUN_CONFIG_PARAMETERS = {
    "num-server-rounds": "n_rounds",
    "local-epochs": "local_epochs",
    "seed": "random_state",
}
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
_STATE_KEY = "skfedida"
#: A FairFed report's arrays, in this order (per group of the client).
_REPORT_KEYS = REPORT_KEYS


def _plain(value):
    """A numpy scalar as the Python value JSON writes."""
    return value.item() if hasattr(value, "item") else str(value)


def group_config(groups):
    """The categories of a client's groups, as it sends them (JSON strings).

    The server needs them to add up counts that each client keeps by its own
    group codes; they name categories, not rows.
    """
    return {
        GROUP_LABELS: json.dumps(
            [list(label) for label in groups.labels], default=_plain
        ),
        SENSITIVE_NAMES: json.dumps(list(groups.names), default=_plain),
    }


def group_declaration(part, train_groups=None):
    """The groups a client declares at initialisation (a JSON string or None).

    Per set of rows it will use (``train``; ``held_out`` when its fairness
    reports and evaluation use held-out rows; ``eval`` with evaluation rows
    of its own): its groups' categories and its rows in each. Labels and
    counts only, no rows: every later reply that counts rows per group
    (FairFed reports, histograms) must count exactly these.
    ``train_groups``: the training rows' groups where the estimator reads
    them from its columns (column mode); by default ``part.train.groups``.
    """
    rowsets = {}
    sets = [("train", part.train.groups if train_groups is None else train_groups)]
    if part.train.held_out is not None:
        sets.append(("held_out", part.train.held_out.groups))
    if part.has_eval_rows:
        sets.append(("eval", part.evaluation[2]))
    names = None
    for rowset, groups in sets:
        if groups is None:
            continue
        names = list(groups.names)
        rowsets[rowset] = _rowset_groups(groups)
    if not rowsets:
        return None
    return json.dumps({"names": names, "rowsets": rowsets}, default=_plain)


def rowset_declaration(groups, rowset):
    """One set of rows' groups and their rows, declared (a JSON string).

    What :func:`group_declaration` writes for one set of rows, from its
    groups (a federation of trees declares only the rows it will count).
    """
    return json.dumps(
        {"names": list(groups.names), "rowsets": {rowset: _rowset_groups(groups)}},
        default=_plain,
    )


def _rowset_groups(groups):
    """A set of rows' groups with rows, and their rows: labels and counts."""
    counts = groups.counts()
    present = counts > 0
    return {
        "labels": [
            list(label)
            for label, keep in zip(groups.labels, present, strict=True)
            if keep
        ],
        "rows": counts[present].astype(int).tolist(),
    }


def plan_for_run(federation, run_config):
    """The federation's plan for this run (run config overrides applied)."""
    overrides = {
        parameter: run_config[key]
        for key, parameter in RUN_CONFIG_PARAMETERS.items()
        if key in run_config
    }
    return make_plan(federation, overrides)


def tree_model_message(model):
    """A fitted federation's trees as a message a client rebuilds them from.

    Parameters
    ----------
    model : HistGradientBoostingClassifier
        The federation's fitted model.

    Returns
    -------
    message : dict
        Its baseline, trees, bins and categories: numbers, arrays and lists.
    """
    encoder = (
        None
        if model._preprocessor is None
        else model._preprocessor.named_transformers_["encoder"]
    )
    return {
        "baseline": float(model._baseline_prediction[0, 0]),
        "trees": [tree_message(tree[0]) for tree in model._predictors],
        "n_bins": int(model._bin_mapper.n_bins),
        "is_categorical": np.asarray(model._bin_mapper.is_categorical_, np.uint8),
        "edges": [np.asarray(t, np.float64) for t in model._bin_mapper.bin_thresholds_],
        "input_categorical": (
            None
            if model.is_categorical_ is None
            else np.asarray(model.is_categorical_, dtype=bool)
        ),
        "categories": (
            None
            if encoder is None
            else [np.asarray(c, dtype=object) for c in encoder.categories]
        ),
        "classes": np.asarray(model.classes_),
    }


def tree_model_from_message(estimator, message, X):
    """The federation's fitted model, rebuilt on a client from its message.

    Parameters
    ----------
    estimator : HistGradientBoostingClassifier
        The federation's (unfitted) estimator.
    message : dict
        What :func:`tree_model_message` wrote.
    X : array-like or DataFrame
        Rows of the client's (their columns and dtypes only are read).

    Returns
    -------
    model : HistGradientBoostingClassifier
        Fitted: it predicts as the server's model does.
    """
    model = clone(estimator)
    fit_inputs(
        model,
        message["input_categorical"],
        message["categories"],
        X,
        message["classes"],
    )
    model._bin_mapper = bin_mapper_of(message)
    model._predictors = [[tree_predictor(tree)] for tree in message["trees"]]
    model._baseline_prediction = np.array([[float(message["baseline"])]])
    return model


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
