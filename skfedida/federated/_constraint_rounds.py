"""A rate constraint over a federation's rounds: the server's side and a client's.

For a federation of models trained in rounds (FedAvg, Per-FedAvg), the
constraint at the operating point (:mod:`skfedida._models._constraints`) is
the server's: before every round, each client counts its training rows'
scores under the round's global model per (group, label) on the reports'
probability grid (:func:`client_rate_histograms`, a statistics reply that
passes the gate's rules of score histograms: whole counts of the client's
own training rows, per group and label as it declared them); the server
sums them by group label, reads the operating point and the groups' rates,
steps the multipliers (:class:`FederatedConstraint`) and sends every
selected client the round's term, which its local epochs add to their
objective (:func:`~skfedida._models._fair_base.rate_term`). After the last
round one more count measures the fitted model's rates. The same steps run
in-process and in the Flower ServerApp.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._gate._checks import RTOL, real_array
from .._gate._policy import Failed
from .._gate._rows import histogram_claim_problem
from .._groups import encode_groups
from .._models._constraints import (
    RateConstraint,
    constraint_fitted_attributes,
    rate_histograms,
)
from .._models._fair_base import BaseFairClassifier
from ..metrics._operating_point import DEFAULT_N_BINS
from ._client import clone_fitted
from ._parameters import assign_parameters

__all__ = [
    "FederatedConstraint",
    "RateHistograms",
    "client_rate_histograms",
    "federation_groups",
    "guarded_rate_histograms",
    "is_constrained",
    "rows_groups",
    "training_groups",
]


def is_constrained(estimator):
    """Whether a federation's estimator asks for a rate constraint.

    Parameters
    ----------
    estimator : estimator instance
        The federation's estimator.

    Returns
    -------
    constrained : bool
        True for one of skfedida's estimators with ``constraints`` set.
    """
    return (
        isinstance(estimator, BaseFairClassifier)
        and getattr(estimator, "constraints", None) is not None
    )


def federation_groups(labels):
    """The federation's groups in one order, whoever lists them.

    The order ``encode_groups`` gives rows of these groups (as the pooled
    rows' codes and Flower's merged groups are ordered): the same
    multipliers, sums and term on every backend.

    Parameters
    ----------
    labels : iterable of tuple
        Groups' labels (repeats allowed).

    Returns
    -------
    labels : tuple of tuple
        Each group once, in that order.
    """
    union = sorted({tuple(label) for label in labels}, key=repr)
    if not union:
        return ()
    columns = {j: [label[j] for label in union] for j in range(len(union[0]))}
    return encode_groups(columns).labels


def rows_groups(estimator, data):
    """A client's training rows' groups, wherever its estimator reads them.

    Parameters
    ----------
    estimator : BaseFairClassifier
        The client's primed estimator; in column mode (its ``sensitive``
        set) it reads the groups from the rows' columns.
    data : _ClientData
        The client's training rows and their groups (metadata mode).

    Returns
    -------
    groups : SensitiveGroups or None
        The rows' groups; None without sensitive attributes.
    """
    if data.groups is not None:
        return data.groups
    if getattr(estimator, "sensitive", None) is None:
        return None
    return estimator.check_rows(data.X).groups


def training_groups(data, models):
    """The groups with training rows at some client (in-process clients).

    Parameters
    ----------
    data : list of _ClientData
        The clients' training rows.
    models : list of BaseFairClassifier
        The clients' primed estimators (the groups of column mode).

    Returns
    -------
    labels : tuple of tuple
        Those groups, as :func:`federation_groups` orders them.
    """
    labels = []
    for client, model in zip(data, models, strict=True):
        groups = rows_groups(model, client)
        if groups is not None:
            counts = groups.counts()
            labels += [g for g, n in zip(groups.labels, counts, strict=True) if n]
    return federation_groups(labels)


@dataclass(frozen=True)
class RateHistograms:
    """A client's counts for a rate constraint, by group, label and bin.

    ``counts`` and ``weights`` (None for unweighted rows) are of shape
    ``(n_groups, 2, n_bins)``, in the order of ``labels``, the client's
    groups (one tuple per group); ``names`` are the sensitive attributes',
    which a message carries with the labels.
    """

    counts: np.ndarray
    weights: np.ndarray | None
    labels: list
    names: list


def client_rate_histograms(estimator, parameters, data, classes, n_bins):
    """A client's counts of its training rows' scores per group, label and bin.

    Parameters
    ----------
    estimator : BaseFairClassifier
        The client's estimator (its inputs' checks); not changed.
    parameters : list of ndarray
        The round's global parameters.
    data : _ClientData
        The client's training rows (not resampled) and their groups.
    classes : ndarray of shape (2,)
        The federation's classes; ``classes[1]`` is the positive one.
    n_bins : int
        Bins of the probability grid.

    Returns
    -------
    histograms : RateHistograms
        Per group of the client (in the order of its groups' labels), label
        (negative, positive) and bin, its rows' count and (weighted rows)
        their summed sample weights.
    """
    model = assign_parameters(clone_fitted(estimator), parameters)
    X_model, y_codes, groups = model.check_rows(
        data.X, data.y, sensitive_features=data.sensitive_for(model)
    )
    proba = model.predict_proba_checked(X_model)[:, 1]
    cells = 2 * groups.codes + y_codes.astype(np.intp)
    shape = (groups.n_groups, 2, n_bins)

    def histograms(weight):
        return rate_histograms(
            proba, cells, weight, 2 * groups.n_groups, n_bins, probabilities=True
        ).reshape(shape)

    counts = histograms(np.ones(data.n))
    weights = None if data.weight is None else histograms(data.weight)
    return RateHistograms(counts, weights, list(groups.labels), list(groups.names))


class FederatedConstraint:
    """The server's rate constraint over the rounds of a federation.

    Parameters
    ----------
    estimator : BaseFairClassifier
        The federation's estimator (``constraints``, ``tolerance``,
        ``selection_rate``).
    labels : sequence of tuple
        The federation's groups (every client's, by label).
    n_bins : int, default=1000
        Bins of the clients' counts.
    """

    def __init__(self, estimator, labels, n_bins=DEFAULT_N_BINS):
        self.labels = federation_groups(labels)
        self._index = {label: i for i, label in enumerate(self.labels)}
        self.n_bins = int(n_bins)
        self.constraint = RateConstraint.of(
            estimator, len(self.labels), n_bins=self.n_bins
        )
        # Each client's first weights per group and label (weighted rows).
        self._weights = {}

    def problem(self, answer, ledger, k, rows):
        """What is wrong with a client's counts (the gate's rules), or None.

        Parameters
        ----------
        answer : RateHistograms
            The client's counts.
        ledger : ClientLedger
            What the clients declared and claimed of their rows.
        k : int
            The client's index.
        rows : int
            The training rows it declared.

        Returns
        -------
        problem : str or None
            What is wrong, in words; None if nothing is.
        """
        counts, weights = answer.counts, answer.weights
        labels = [tuple(label) for label in answer.labels]
        unknown = [list(g) for g in labels if g not in self._index]
        if unknown:
            return f"it counts rows of groups {unknown} it did not declare"
        problem = histogram_claim_problem(
            counts,
            labels,
            n_bins=self.n_bins,
            ledger=ledger,
            k=k,
            rowset="train",
            declared_rows=rows,
        )
        if problem is not None or weights is None:
            if problem is None and k in self._weights:
                return "it sends no sample weights; it sent them before"
            return problem
        return self._weights_problem(k, np.asarray(counts), weights)

    def _weights_problem(self, k, counts, weights):
        """Weighted counts: of the counted rows only, the same totals each time."""
        weights, problem = real_array(
            weights, "its weighted histogram", shape=counts.shape
        )
        if problem is not None:
            return problem
        if np.any(weights < 0) or np.any((counts == 0) & (weights != 0)):
            return (
                "its weighted histogram holds a negative weight, or weight in "
                "a bin where it counts no row"
            )
        totals = weights.sum(axis=2)
        before = self._weights.setdefault(k, totals)
        if np.any(np.abs(totals - before) > RTOL * max(before.sum(), 1.0)):
            return (
                "its rows' weights per group and label differ from those of its "
                "earlier reply"
            )
        return None

    def summed(self, answers):
        """The admitted clients' counts, summed by group label.

        Parameters
        ----------
        answers : list of RateHistograms
            The admitted clients' counts, in client order (their weights
            where they have them).

        Returns
        -------
        histograms : ndarray of shape (2 * n_groups, n_bins)
            Per cell ``2 * group + label`` of the federation's groups.
        """
        total = np.zeros((len(self.labels), 2, self.n_bins))
        for answer in answers:
            positions = [self._index[tuple(label)] for label in answer.labels]
            total[positions] += np.asarray(
                answer.counts if answer.weights is None else answer.weights,
                dtype=np.float64,
            )
        return total.reshape(2 * len(self.labels), self.n_bins)

    def step(self, answers):
        """Step the multipliers on the counts; the round's term for the clients.

        Parameters
        ----------
        answers : list of RateHistograms
            The admitted clients' counts.

        Returns
        -------
        term : dict
            What :func:`~skfedida._models._fair_base.rate_term` takes.
        """
        term = self.constraint.propose(self.summed(answers))
        self.constraint.commit()
        term["groups"] = self.labels
        return term

    def measure(self, answers):
        """Read the fitted model's rates from the last counts.

        Parameters
        ----------
        answers : list of RateHistograms
            The admitted clients' counts.

        Returns
        -------
        attributes : dict
            The fitted constraint attributes (``groups_`` included).
        """
        self.constraint.measure(self.summed(answers))
        return {
            **constraint_fitted_attributes(self.constraint),
            "groups_": self.labels,
        }


def guarded_rate_histograms(*args):
    """:func:`client_rate_histograms`, returning a failure instead of raising.

    Parameters
    ----------
    *args : tuple
        Its arguments.

    Returns
    -------
    answer : RateHistograms or Failed
        The client's counts, or the exception its counting raised.
    """
    try:
        return client_rate_histograms(*args)
    except Exception as exc:  # any failure of a client's own counting
        return Failed(exc)
