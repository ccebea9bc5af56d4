"""Secure aggregation of a federation's training rounds (issue 49).

Each selected client clips its update, weighs it by its rows and writes it,
its rows and its weighted training loss into one vector of ring elements
(``skfedida._secure.FixedPoint``); the clients mask their vectors so that
the server learns only the sum over the clients that finished the round
(``skfedida._secure``: SecAgg's four stages). The new global model is the
global model plus that sum's weighted update over its rows: FedAvg's
weighted mean of the clipped models, exact to the encoding's resolution.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator

from .._doc_links import DocLinkMixin
from .._gate._model import metric_upper
from .._secure import (
    FixedPoint,
    complete_neighbours,
    harary_neighbours,
    secure_sum,
)
from ._aggregation import WeightedMean
from ._privacy import _clipped, update_norms

#: The largest training loss a client reports: its probabilities are clipped
#: to [1e-15, 1 - 1e-15] (``_client._client_round``) and normalised over the
#: classes, so -log(1e-15 / n_classes) < 64 for up to 1e12 classes.
LOSS_BOUND = 64.0


class SecureAggregation(DocLinkMixin, BaseEstimator):
    """Secure aggregation: the server learns sums over clients, not one client's.

    Every round, each selected client clips its update (its model minus the
    global model it started from) to ``max_update_norm``, multiplies it by
    its rows, and sends it with its rows and its row-weighted training loss
    masked (SecAgg, Bonawitz et al. 2017): pairwise masks that cancel in the
    sum, and a self mask the server removes once enough clients vouch for
    it. The server learns the sum over the clients that finished the round
    and nothing else of any one of them: the new global model is FedAvg's
    weighted mean of the clipped models, and the round's mean training loss
    goes into ``federated_metrics_``.

    The values are written as 64-bit fixed-point numbers whose scale is the
    finest that cannot overflow the sum's bound: the clients' rows times the
    larger of ``max_update_norm`` and 64 (the training loss's bound). The
    sum is exact to about ``2**-52`` of that bound (``1e-15``), and the
    fitted model matches the plain fit's to that precision; a
    ``max_update_norm`` far beyond the updates' scale (1e12, say) coarsens
    it, and one past ``2**62`` rows is refused.

    Parameters
    ----------
    threshold : float in (0, 1] or int >= 2, default=0.5
        How many of a client's share holders must vouch for its secrets to
        rebuild them, and the fewest clients a revealed sum may cover: a
        fraction of the holders (a round's selected clients, or with
        ``neighbours`` a client's neighbours and itself; rounded up, at
        least 2), or a number of clients. A higher threshold protects
        against more colluding clients; a lower one survives more dropouts.
    neighbours : int or None, default=None
        SecAgg+: each client masks with this many others (an even number),
        drawn as a random ring, not with every other client; its work and
        messages then grow with ``neighbours``, not with the federation.
        None: every client with every other (SecAgg). Bell et al. (2020)
        take a number of the order of the logarithm of the clients.

    See Also
    --------
    FederatedEstimator : Its ``secure_aggregation`` parameter takes this object.
    DifferentialPrivacy : Noise on the released model; not combined yet.

    Notes
    -----
    Requires ``cryptography`` (``pip install "skfedida[secure]"``). The
    server is trusted to follow the protocol but not to look away
    (honest-but-curious); a client can still add any value to the sum, which
    the encoding's bound limits for honest clients only. What the server no
    longer sees, it cannot check: a client checks its own reply with the
    gate's rules before masking it, and a failing client drops out of the
    round's sum (``on_client_error`` applies as to any failure).

    In this version secure aggregation covers the training rounds, the
    validation metrics' means, the class counts of the prior and the final
    decision counts, in-process, for ``aggregation="mean"`` with a float
    ``max_update_norm``; each other combination is refused with an error
    naming it, and so is a run on Flower.

    Examples
    --------
    >>> from skfedida.federated import SecureAggregation
    >>> SecureAggregation(threshold=0.5).threshold_for(5)
    3
    """

    def __init__(self, threshold=0.5, neighbours=None):
        self.threshold = threshold
        self.neighbours = neighbours

    def _graph(self, clients):
        """Who masks with whom among ``clients``, and the sum's threshold.

        Parameters
        ----------
        clients : iterable of int
            The clients of one sum.

        Returns
        -------
        neighbours : dict of int to set of int
        threshold : int
            Of the holders of a client's shares (its neighbours and itself).
        """
        self._check()
        clients = sorted(clients)
        if self.neighbours is None:
            graph = complete_neighbours(clients)
        else:
            graph = harary_neighbours(clients, int(self.neighbours))
        holders = 1 + min((len(others) for others in graph.values()), default=0)
        return graph, self.threshold_for(holders)

    def threshold_for(self, n_clients):
        """The threshold of a sum over ``n_clients`` clients.

        Parameters
        ----------
        n_clients : int
            The clients of the sum.

        Returns
        -------
        threshold : int
            At least 2, at most ``n_clients``.
        """
        self._check()
        if n_clients < 2:
            raise ValueError(
                f"Secure aggregation sums over at least 2 clients; this round "
                f"has {n_clients}."
            )
        if isinstance(self.threshold, numbers.Integral):
            needed = int(self.threshold)
            if needed > n_clients:
                raise ValueError(
                    f"SecureAggregation's threshold={needed} exceeds the "
                    f"{n_clients} clients of a round: no sum could be revealed."
                )
            return needed
        return min(n_clients, max(2, math.ceil(self.threshold * n_clients)))

    def _check(self):
        """Raise a ValueError naming ``threshold`` when it is out of range."""
        value = self.threshold
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            ok = False
        elif isinstance(value, numbers.Integral):
            ok = value >= 2
        else:
            ok = np.isfinite(value) and 0 < value <= 1
        if not ok:
            hint = " (every holder: threshold=1.0)" if value == 1 else ""
            raise ValueError(
                "SecureAggregation's threshold must be a fraction in (0, 1] or "
                f"a number of clients >= 2; got {value!r}{hint}."
            )
        degree = self.neighbours
        if degree is not None and (
            isinstance(degree, bool)
            or not isinstance(degree, numbers.Integral)
            or degree < 2
            or degree % 2
        ):
            raise ValueError(
                "SecureAggregation's neighbours must be None or an even number "
                f">= 2; got {degree!r}."
            )


def check_secure_federation(federation):
    """Refuse what secure aggregation does not cover yet, naming it.

    Parameters
    ----------
    federation : FederatedEstimator
        With ``secure_aggregation`` set.
    """
    secure = federation.secure_aggregation
    secure._check()
    name = "secure_aggregation"
    if federation.strategy in ("central", "local"):
        raise ValueError(
            f"{name} with strategy={federation.strategy!r}: "
            + (
                "a pooled fit sums no client's update"
                if federation.strategy == "central"
                else "clients training alone send no update to sum"
            )
            + "; use strategy='fedavg' or 'pfedavg'."
        )
    # Its exact class: a subclass may weigh clients in ways a sum cannot.
    if type(federation._aggregator) is not WeightedMean:
        raise ValueError(
            f"{name} with aggregation={federation.aggregation!r}: the server "
            "learns only the clients' sum, which gives FedAvg's weighted mean "
            "(aggregation='mean'); this aggregation needs each client's update."
        )
    bound = federation.max_update_norm
    if bound is None or isinstance(bound, str):
        raise ValueError(
            f"{name} needs max_update_norm, a float: the bound of each "
            "client's update, which sizes the masked sum's fixed-point "
            f"numbers (got max_update_norm={bound!r})."
        )
    refused = [
        ("dp", federation.dp is not None, "clients' noise is not built yet"),
        (
            "prior_aggregation='median'",
            federation.prior_aggregation == "median",
            "a median of the clients' shares needs each client's counts",
        ),
        ("warm_start", federation.warm_start, "not built yet"),
    ]
    for what, present, why in refused:
        if present:
            raise ValueError(f"{name} with {what}: {why}.")


def check_secure_rounds(federation, n_clients):
    """Refuse, before any training, rounds whose sums could never be revealed.

    Parameters
    ----------
    federation : FederatedEstimator
        With ``secure_aggregation`` set.
    n_clients : int
        The federation's clients.
    """
    fraction = federation.client_fraction
    selected = n_clients if fraction >= 1 else max(1, round(fraction * n_clients))
    if selected < 2:
        raise ValueError(
            f"secure_aggregation with client_fraction={fraction!r}: each round "
            f"selects {selected} of the {n_clients} clients, and a secure sum "
            "covers 2 or more. Select more clients per round."
        )
    # A threshold beyond a round's clients is refused here, not in round 1.
    federation.secure_aggregation._graph(range(selected))


@dataclass(frozen=True)
class RoundSums:
    """What the server learns of one securely summed training round.

    ``clients``: the survivors, whose contributions the sums cover;
    ``weighted_update``: per parameter array, the sum of their clipped
    updates times their rows; ``rows``: the sum of their rows;
    ``weighted_loss``: the sum of their training losses times their rows.
    """

    clients: list
    weighted_update: list
    rows: float
    weighted_loss: float

    def global_parameters(self, previous):
        """The new global model: ``previous`` plus the rows-weighted mean update.

        Parameters
        ----------
        previous : list of ndarray
            The global model the round's clients started from.

        Returns
        -------
        parameters : list of ndarray
            FedAvg's weighted mean of the survivors' clipped models.
        """
        return [
            g + update / self.rows
            for g, update in zip(previous, self.weighted_update, strict=True)
        ]

    @property
    def mean_loss(self):
        """The survivors' training loss, weighted by their rows.

        Returns
        -------
        loss : float
            The sum of their losses times their rows, over their rows.
        """
        return self.weighted_loss / self.rows


def training_contribution(parameters, n_rows, loss, global_parameters, bound):
    """A client's vector for the round's secure sum, clipped and weighted.

    ``[n * clip(parameters - global) ..., n, n * loss]``: what the server
    needs of it for FedAvg's weighted mean and the round's mean loss.

    Parameters
    ----------
    parameters : list of ndarray
        The client's model after the round.
    n_rows : int
        The rows it trained on.
    loss : float
        Its training loss.
    global_parameters : list of ndarray
        The model it started from.
    bound : float
        ``max_update_norm``.

    Returns
    -------
    vector : ndarray of float64
        The clipped update times the rows, the rows, the loss times the rows.
    """
    (norm,) = update_norms([parameters], global_parameters)
    clipped = _clipped(parameters, global_parameters, norm, bound)
    # Within the bound but for the rounding of g + u - g (an ulp of g): the
    # clip removes only that, far below the sum's resolution.
    update = [
        np.clip(np.ravel(p - g), -bound, bound)
        for p, g in zip(clipped, global_parameters, strict=True)
    ]
    return np.concatenate([*(n_rows * u for u in update), [n_rows, n_rows * loss]])


def contribution_bound(n_rows, bound):
    """The largest magnitude of an element of a client's contribution.

    Parameters
    ----------
    n_rows : int
        The client's declared training rows.
    bound : float
        ``max_update_norm``: no element of a clipped update exceeds it.

    Returns
    -------
    bound : float
        The rows times the larger of ``bound`` and ``LOSS_BOUND``.
    """
    return float(n_rows) * max(float(bound), LOSS_BOUND)


def round_sums(total, global_parameters, clients):
    """``RoundSums`` from the decoded sum of the survivors' contributions.

    Parameters
    ----------
    total : ndarray of float64
        The sum of ``training_contribution``'s vectors.
    global_parameters : list of ndarray
        The round's global model (the shapes of the update).
    clients : list of int
        The survivors.

    Returns
    -------
    sums : RoundSums
        What the server learns of the round.
    """
    weighted_update, start = [], 0
    for g in global_parameters:
        size = np.size(g)
        weighted_update.append(total[start : start + size].reshape(np.shape(g)))
        start += size
    return RoundSums(
        clients=list(clients),
        weighted_update=weighted_update,
        rows=float(total[start]),
        weighted_loss=float(total[start + 1]),
    )


def summed_in_process(vectors, bounds, secure, label, *, integer=False, dropped=()):
    """The clients' vectors summed through SecAgg, every side in this process.

    Parameters
    ----------
    vectors : dict of int to ndarray
        Per client, its vector (reals, or counts with ``integer``).
    bounds : dict of int to float
        Per client, the largest magnitude of its values: the sum's fixed
        point numbers are sized for their total.
    secure : SecureAggregation
        The threshold.
    label : str
        Which sum this is (a round, a stage).
    integer : bool, default=False
        Whether the values are counts.
    dropped : iterable of int, default=()
        The clients of the sum that failed before sending their vector:
        they shared their keys, and the survivors' masks with them are
        removed as the protocol removes a dropout's.

    Returns
    -------
    total : ndarray of float64
        The sum over the survivors (``vectors``' clients).
    """
    dropped = sorted(set(dropped) - set(vectors))
    try:
        fixed = FixedPoint(sum(bounds.values()), integer=integer)
    except ValueError as exc:
        raise ValueError(
            f"secure_aggregation cannot size the {label}'s sum: {exc} Keep "
            "max_update_norm at the scale of the clients' updates (the "
            "update_norm of a plain fit's history_)."
        ) from None
    encoded = {
        k: fixed.encode(vector, bounds[k], what=f"Client {k}'s {label}")
        for k, vector in vectors.items()
    }
    size = next(iter(encoded.values())).shape if encoded else (0,)
    for k in dropped:  # never sent: what they would have masked is unused
        encoded[k] = np.zeros(size, dtype=np.uint64)
    graph, threshold = secure._graph(encoded)
    if len(vectors) < threshold:
        # Whatever on_client_error says: a smaller sum would tell too much
        # of each of its clients.
        raise RuntimeError(
            f"Only {len(vectors)} of the {len(encoded)} clients of the {label} "
            f"finished; secure_aggregation reveals a sum over threshold="
            f"{threshold} or more clients, so on_client_error='skip' cannot leave "
            "out more. Lower SecureAggregation's threshold, or select more "
            "clients per round."
        )
    result = secure_sum(
        encoded,
        threshold,
        label.encode("utf-8"),
        neighbours=graph,
        fail={"masked input": set(dropped)},
    )
    return fixed.decode(result.total)


def secure_claims_summary(reports, rows, secure, label, *, dropped=()):
    """A round's evaluation summary from the clients' metrics, summed securely.

    Each client masks, per metric, its value times its rows where the
    metric is defined and its rows there; the server learns the sums: the
    rows-weighted mean of each metric over the clients where it is defined
    (``claims_summary``'s mean), not each client's value, and no median.

    Parameters
    ----------
    reports : dict of int to dict
        Per admitted client, metric name to value (NaN where undefined).
    rows : dict of int to float
        Per admitted client, its evaluation rows.
    secure : SecureAggregation
        The threshold.
    label : str
        Which sum this is.
    dropped : iterable of int, default=()
        The evaluated clients that failed or were refused.

    Returns
    -------
    summary : dict
        Per metric its weighted mean (NaN where no client defines it), and
        ``n_clients``.
    """
    names = sorted({name for report in reports.values() for name in report})
    largest = max([metric_upper(name) for name in names], default=1.0)
    vectors = {}
    for k, report in reports.items():
        values = np.array([float(report.get(name, np.nan)) for name in names])
        defined = np.isfinite(values)
        vectors[k] = np.concatenate(
            [rows[k] * np.where(defined, values, 0.0), rows[k] * defined]
        )
    total = summed_in_process(
        vectors,
        {k: float(rows[k]) * max(largest, 1.0) for k in reports},
        secure,
        label,
        dropped=dropped,
    )
    weighted, weights = total[: len(names)], total[len(names) :]
    summary = {
        name: float(value / weight) if weight > 0 else float("nan")
        for name, value, weight in zip(names, weighted, weights, strict=True)
    }
    summary["n_clients"] = len(reports)
    return summary
