"""Federated fitting of transformers: rounds of statistics, never rows.

A federated transformer is fitted by a server that asks every client a
question about its own rows (``_answer(X, query)``: counts, sums, sums of
squares, category counts, histograms) and combines the answers
(``_fit_rounds(ask)``), as many rounds as it needs. Fitted on one client,
each equals its scikit-learn parent; on K clients, the parent fitted on the
pooled rows.

Transformers nested in a ``Pipeline`` or ``ColumnTransformer`` are fitted
one after the other, in the order scikit-learn fits them (pipeline steps in
order; a ColumnTransformer's transformers in its list order): a client
answers for the next transformer after applying the already fitted ones to
its rows. ``fit_tree`` runs that loop; ``FederatedEstimator`` and the Flower
apps use it with their own way of asking clients.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.utils import get_tags

from .._codec import decode, encode
from .._compat import num_samples, safe_indexing
from .._doc_links import DocLinkMixin
from .._gate._policy import ReplyGate
from .._gate._statistics import Unreadable, statistics_problems, statistics_reply
from .._groups import client_ids

__all__ = ["FederatedTransformerMixin", "federated_transformers", "fit_tree"]


class FederatedTransformerMixin(DocLinkMixin):
    """Mixin of transformers fitted from the clients' statistics (not for direct use).

    Subclasses define ``_validate_rows(X)`` (the parent's validation, with
    ``reset=True``), ``_answer(X, query)`` (a client's statistics of its
    validated rows) and ``_fit_rounds(ask)`` (the server's rounds; ``ask``
    takes a query and returns every client's answer).
    """

    #: Attributes a client's own validation sets from its rows (feature
    #: names, dtypes): not part of the statistics the server sends back.
    _row_attributes = ("n_features_in_", "feature_names_in_")

    # With metadata routing, a Pipeline passes the rows' clients to its
    # federated steps as FederatedEstimator requests them (it raised
    # UnsetMetadataPassedError, the transformers requesting nothing).
    __metadata_request__fit = {"clients": True}

    def _federated_fit(self, X, clients):
        """Fit from the statistics of each client's rows (``clients`` ids).

        Every answer passes the server's gate (a client's answer that fails
        it is an error naming the client), as in a federation.
        """
        self._validate_params()
        X = self._validate_rows(X)
        encoded = client_ids(clients, num_samples(X))
        parts = client_parts(X, clients, encoded)
        ids = encoded.ids
        name = type(self).__name__
        self._fit_rounds(
            gated_ask(
                self,
                name,
                lambda query: [(name, self._answer(part, query)) for part in parts],
                ReplyGate(name=lambda k: f"Client {ids[k].tolist()!r}"),
                [num_samples(part) for part in parts],
            )
        )
        return self

    def _statistics_state(self):
        """The fitted attributes the statistics rounds set (what clients get)."""
        params = set(self.get_params(deep=False))
        return {
            name: value
            for name, value in vars(self).items()
            if name not in params and name not in self._row_attributes
        }

    def fit_transform(self, X, y=None, **params):
        """Fit, then transform X (the parent's), or the output's shape only.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Input rows.
        y : None
            Ignored.
        **params : dict
            Passed to ``fit``.

        Returns
        -------
        X_new : ndarray or sparse matrix of shape (n_samples, n_features_out)
            The transformed rows; zeros of the output's shape when a server
            rebuilds a fitted pipeline from its statistics and a placeholder
            row (it holds no real row to transform).
        """
        tree_fit = current_tree_fit()
        if tree_fit is not None and tree_fit.schema:
            self.fit(X, **params)
            return np.zeros((X.shape[0], len(self.get_feature_names_out())))
        return super().fit_transform(X, y, **params)

    def _apply_state(self, X, state):
        """Become fitted: validate one client's rows, take the federation's state."""
        self._validate_rows(X)
        for name, value in state.items():
            setattr(self, name, copy.deepcopy(value))
        return self


def client_parts(X, clients, encoded=None):
    """Each client's rows of X, in the order of its sorted ids.

    ``encoded`` is ``client_ids(clients, n_samples)`` where the caller
    already checked and coded the clients (once per fit).
    """
    if isinstance(X, list):  # as sklearn's encoders take them
        X = np.asarray(X, dtype=object)
    ids, codes = client_ids(clients, num_samples(X)) if encoded is None else encoded
    if clients is None:
        return [X]
    return [safe_indexing(X, np.flatnonzero(codes == k)) for k in range(len(ids))]


# -- transformer trees ------------------------------------------------------


def federated_transformers(tree, path="estimator"):
    """The federated transformers of a tree, in the order scikit-learn fits them.

    Parameters
    ----------
    tree : transformer, Pipeline or ColumnTransformer
        The (unfitted) preprocessing.
    path : str
        Name of ``tree`` in messages.

    Returns
    -------
    found : list of (str, transformer)
        Path and transformer of every federated transformer.

    Raises
    ------
    ValueError
        For a stateful transformer that is not federated: fitted inside the
        federation it would learn from one client's rows only.
    """
    if tree is None or isinstance(tree, str):  # "drop", "passthrough"
        return []
    if isinstance(tree, FederatedTransformerMixin):
        return [(path, tree)]
    if isinstance(tree, Pipeline):
        if tree.memory is not None:
            raise ValueError(
                f"{path} is a Pipeline with memory={tree.memory!r}: a cached step "
                "would be fitted outside the statistics rounds. Set memory=None "
                "inside a federation."
            )
        found = []
        for name, step in tree.steps:
            found += federated_transformers(step, f"{path}[{name!r}]")
        return found
    if isinstance(tree, FeatureUnion):
        found = []
        for name, transformer in tree.transformer_list:
            found += federated_transformers(transformer, f"{path}[{name!r}]")
        return found
    if isinstance(tree, ColumnTransformer):
        found = []
        for name, transformer, _ in tree.transformers:
            found += federated_transformers(transformer, f"{path}[{name!r}]")
        return found + federated_transformers(tree.remainder, f"{path}[remainder]")
    if not get_tags(tree).requires_fit:
        return []
    replacement = _FEDERATED_NAMES.get(type(tree).__name__)
    hint = (
        f" use skfedida.preprocessing.{replacement}"
        if replacement
        else " use a federated transformer (skfedida.preprocessing) or a stateless one"
    )
    raise ValueError(
        f"{path} is {type(tree).__name__}, which learns from the rows it is fitted "
        f"on: inside a federation it would be fitted on each client's rows alone "
        f"(or, outside, on every client's rows pooled);{hint}."
    )


_FEDERATED_NAMES = {
    "StandardScaler": "FederatedStandardScaler",
    "MinMaxScaler": "FederatedMinMaxScaler",
    "OneHotEncoder": "FederatedOneHotEncoder",
    "SimpleImputer": "FederatedSimpleImputer",
}

_TREE_FIT = contextvars.ContextVar("skfedida_tree_fit", default=None)


class _Answered(Exception):
    """Stops a client's fit of a tree once it has answered for the next transformer."""

    def __init__(self, answer):
        super().__init__()
        self.answer = answer


class _TreeFit:
    """A client's fit of the tree: known states applied, then one answer.

    With ``schema``, a server's fit of the tree on a placeholder row: every
    state applied, and the federated transformers output zeros of their
    output's shape instead of transforming the placeholder.
    """

    def __init__(self, states, query, schema=False):
        self.states, self.query, self.seen = states, query, 0
        self.schema = schema

    def fit(self, transformer, X):
        index = self.seen
        self.seen += 1
        if index < len(self.states):
            return transformer._apply_state(X, self.states[index])
        X = transformer._validate_rows(X)
        raise _Answered(
            (type(transformer).__name__, transformer._answer(X, self.query))
        )


@contextlib.contextmanager
def _tree_fit(states, query=None, schema=False):
    token = _TREE_FIT.set(_TreeFit(states, query, schema))
    try:
        yield
    finally:
        _TREE_FIT.reset(token)


def current_tree_fit():
    """The client's tree fit in progress, or None (a plain ``fit``)."""
    return _TREE_FIT.get()


def _sequential(tree):
    """A copy of the tree whose ColumnTransformers fit in order, in this process."""
    tree = clone(tree)
    for _, value in tree.get_params(deep=True).items():
        if isinstance(value, ColumnTransformer | FeatureUnion):
            value.set_params(n_jobs=None)
    if isinstance(tree, ColumnTransformer | FeatureUnion):
        tree.set_params(n_jobs=None)
    return tree


def client_answer(tree, X, states, query):
    """One client's answer for the next federated transformer of ``tree``.

    The client fits a copy of the tree on its own rows, applying the
    federation's states of the transformers fitted so far, up to the next
    one, which answers ``query`` from its input rows.
    """
    with _tree_fit(states, query):
        try:
            _fit_tree_copy(tree, X)
        except _Answered as answered:
            return answered.answer
    raise ValueError(
        "The tree's fit ended before the federated transformer the server asked "
        "about: a ColumnTransformer skips a transformer (or a remainder) that "
        "selects no column. Give every federated transformer at least one column."
    )


def fitted_tree(tree, X, states, schema=False):
    """The tree fitted on one client's rows with the federation's states.

    With ``schema``, ``X`` is a placeholder row of the right columns and
    dtypes (a server's, which holds no rows).
    """
    with _tree_fit(states, schema=schema):
        fitted = _sequential(tree)
        if isinstance(fitted, BaseEstimator) and hasattr(fitted, "fit"):
            fitted.fit(X)
    return fitted


def _fit_tree_copy(tree, X):
    fitted = _sequential(tree)
    fitted.fit(X)
    return fitted


class _Restart(Exception):
    """A transformer's rounds start again: a client was left out after round 1."""


def gated_ask(server, path, ask, gate, rows):
    """The server's ``ask(query)`` with every client's answer through the gate.

    ``ask(query)`` returns every client's reply, ``(answered_by, answer)``
    (or an ``Unreadable``), by client index; the gate checks each
    (``skfedida._gate._statistics``) against the rows the client
    declared and its earlier answers to this transformer, and returns the
    admitted answers. A client that fails is left out of every later
    statistics round (or stops the fit, ``on_client_error="raise"``).
    """
    name = type(server).__name__
    earlier = {}

    def answers(query):
        replies = ask(query)
        asked = {k: reply for k, reply in enumerate(replies) if k not in gate.left_out}
        problems = statistics_problems(
            server, query, asked, rows=rows, earlier=earlier, names=gate.name
        )
        wrong_kind = [
            k
            for k, problem in problems
            if problem is not None and "it answered for a" in problem
        ]
        stage = f"statistics query for {path} ({name})"
        if wrong_kind and len(wrong_kind) == len(asked):
            # Every client answered for another transformer: the tree, not a
            # client, is wrong.
            raise ValueError(
                f"Client {wrong_kind[0]} answered for a "
                f"{statistics_reply(asked[wrong_kind[0]]).answered_by} "
                f"where {path} ({name}) was expected: a ColumnTransformer skips a "
                "transformer (or a remainder) that selects no column. Give "
                "every federated transformer at least one column."
            )
        admitted = gate.admit(stage, problems)
        dropped = set(asked) - set(admitted)
        gate.left_out |= dropped
        if dropped and earlier:
            # A later round's answer failed: the earlier rounds of this
            # transformer counted the client; start it again without it.
            raise _Restart
        admitted_answers = [statistics_reply(replies[k]).answer for k in admitted]
        for k, answer in zip(admitted, admitted_answers, strict=True):
            earlier.setdefault(k, []).append(answer)
        return admitted_answers

    return answers


def fit_tree(tree, ask, gate=None, rows=None):
    """The federation's states of every federated transformer of ``tree``.

    Parameters
    ----------
    tree : transformer, Pipeline or ColumnTransformer
        The unfitted preprocessing.
    ask : callable
        ``ask(states, query)``: every client's answer (``client_answer``)
        for the next transformer, after applying ``states``.
    gate : ReplyGate, default=None
        Checks every answer (``skfedida._gate``) and applies
        the federation's ``on_client_error``; by default, a failing answer
        is an error naming its client.
    rows : list of int, default=None
        The rows each client declared (what its counts must agree with).

    Returns
    -------
    states : list of dict
        Per federated transformer, in fitting order, its fitted state.
    """
    gate = ReplyGate() if gate is None else gate
    states = []
    for path, template in federated_transformers(tree):
        while True:  # again without a client that failed a later round
            server = clone(template)
            server._validate_params()
            try:
                server._fit_rounds(
                    gated_ask(
                        server,
                        path,
                        lambda query, known=tuple(states): ask(list(known), query),
                        gate,
                        rows,
                    )
                )
            except _Restart:
                continue
            break
        states.append(server._statistics_state())
    return states


def fit_in_process(tree, client_rows, gate=None):
    """The tree fitted from the statistics of clients whose rows are all here.

    Parameters
    ----------
    tree : transformer, Pipeline or ColumnTransformer
        The unfitted preprocessing.
    client_rows : list of array-like or DataFrame
        Each client's rows.
    gate : ReplyGate, default=None
        The federation's reply gate (see :func:`fit_tree`).

    Returns
    -------
    fitted : transformer
        The tree fitted on client 0's rows with the federation's states (its
        federated transformers hold the pooled statistics).
    states : list of dict
        The federation's states, in fitting order.
    """
    states = fit_tree(
        tree,
        lambda known, query: [
            _as_sent(lambda rows=rows: client_answer(tree, rows, known, query))
            for rows in client_rows
        ],
        gate,
        [num_samples(rows) for rows in client_rows],
    )
    return fitted_tree(tree, client_rows[0], states), states


def _as_sent(answer):
    """A client's answer as a server reads it from a Flower node, in-process too.

    Through the statistics rounds' JSON, so that both backends fit from the
    same values and refuse what cannot be sent (a category of a type JSON
    cannot carry); a client whose answer fails is an ``Unreadable`` for the
    gate's failure policy, not the fit's error.
    """
    try:
        return decode(encode(answer()))
    except Exception as exc:  # any failure of one client's own answer
        return Unreadable(f"{type(exc).__name__}: {exc}")
