"""What a server and its clients reached by message write for each other.

A client's groups (the categories it holds and its rows in each, JSON, no
row), and the boosted trees' model message (from which a client rebuilds
the federation's model to score its rows).
"""

from __future__ import annotations

import json

import numpy as np
from sklearn.base import clone

from .._messages import GROUP_LABELS, SENSITIVE_NAMES
from ..ensemble._boosting import tree_message, tree_predictor
from ._tree_client import bin_mapper_of
from ._tree_server import fit_inputs


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


def group_declaration(train, evaluation_groups=None, train_groups=None):
    """The groups a client declares at initialisation (a JSON string or None).

    Per set of rows it will use (``train``; ``held_out`` when its fairness
    reports and evaluation use held-out rows, ``train.held_out``; ``eval``
    with evaluation rows of its own, whose groups are
    ``evaluation_groups``): its groups' categories and its rows in each.
    Labels and counts only, no rows: every later reply that counts rows per
    group (FairFed reports, histograms) must count exactly these.
    ``train_groups``: the training rows' groups where the estimator reads
    them from its columns (column mode); by default ``train.groups``. A
    Flower client and an in-process one declare alike.
    """
    rowsets = {}
    sets = [("train", train.groups if train_groups is None else train_groups)]
    if train.held_out is not None:
        sets.append(("held_out", train.held_out.groups))
    if evaluation_groups is not None:
        sets.append(("eval", evaluation_groups))
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
