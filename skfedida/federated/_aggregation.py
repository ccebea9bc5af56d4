"""How the server combines the clients' parameters: one seam, Flower's arithmetic.

Each aggregator takes the parameter arrays of the clients that replied in a
round (in client order) and their row counts, and returns the global
parameters. The same aggregator runs in-process and, on the Flower path, as
the Flower strategy it names, with the same arithmetic, so both give the same
model to the last bit.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np

from ..exceptions import InactivePenaltyWarning, caller_stacklevel
from ..metrics._registry import count_gap, fairfed_metrics

__all__ = [
    "FairFed",
    "Median",
    "QFedAvg",
    "TrimmedMean",
    "WeightedMean",
    "check_aggregation",
    "class_prior",
]


class _Aggregator:
    """Base of the aggregators (not for direct use)."""

    #: Name of the Flower strategy with the same arithmetic.
    flower_strategy = "FedAvg"

    #: Whether ``aggregate`` also needs the round's global parameters and the
    #: clients' training losses (as keyword arguments).
    needs_round_context = False

    #: The fairness metric every client reports for the global model before
    #: training (``aggregate`` then gets ``reports``, ``clients`` and
    #: ``memory``); None when the aggregator needs no reports.
    report_metric = None

    def flower_options(self):
        """Keyword arguments of the Flower strategy.

        Returns
        -------
        options : dict
            Keyword arguments, besides the common ones, that the Flower
            strategy named by ``flower_strategy`` needs for the same
            arithmetic; empty when it needs none.
        """
        return {}

    def aggregate(self, parameter_lists, weights):
        raise NotImplementedError

    def __repr__(self):
        options = ", ".join(f"{k}={v!r}" for k, v in self.flower_options().items())
        return f"{type(self).__name__}({options})"

    def __eq__(self, other):
        return type(self) is type(other) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))


class WeightedMean(_Aggregator):
    """FedAvg's mean of the clients' parameters, weighted by their row counts.

    The default. Flower's ``FedAvg`` computes the same sum in the same order.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.federated import WeightedMean
    >>> WeightedMean().aggregate([[np.array([0.0])], [np.array([3.0])]], [2, 1])
    [array([1.])]
    """

    flower_strategy = "FedAvg"

    def aggregate(self, parameter_lists, weights):
        """The n_k-weighted mean of each parameter array.

        Parameters
        ----------
        parameter_lists : list of list of ndarray
            Per client, its parameter arrays.
        weights : array-like of shape (n_clients,)
            Row counts of the clients.

        Returns
        -------
        parameters : list of ndarray
            The global parameters: the weighted mean of the clients' arrays,
            one array per parameter.
        """
        weights = np.asarray(weights, dtype=np.float64)
        return _weighted_sum(parameter_lists, weights / weights.sum())


def _weighted_sum(parameter_lists, shares):
    """Sum of the clients' arrays times their shares, in client order.

    The order of Flower's FedAvg sum, so the results are the same bits.
    """
    return [
        sum(w * params[i] for w, params in zip(shares, parameter_lists, strict=True))
        for i in range(len(parameter_lists[0]))
    ]


class Median(_Aggregator):
    """The coordinate-wise median of the clients' parameters (unweighted).

    Robust to a minority of clients sending arbitrary parameters: one client
    among three cannot move a coordinate beyond the other two. Flower's
    ``FedMedian``. Row counts are ignored, so a small client weighs as much
    as a large one.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.federated import Median
    >>> Median().aggregate(
    ...     [[np.array([0.0])], [np.array([1.0])], [np.array([1e6])]], [1, 1, 1])
    [array([1.])]
    """

    flower_strategy = "FedMedian"

    def aggregate(self, parameter_lists, weights):
        """The coordinate-wise median of each parameter array.

        Parameters
        ----------
        parameter_lists : list of list of ndarray
            Per client, its parameter arrays.
        weights : array-like of shape (n_clients,)
            Ignored.

        Returns
        -------
        parameters : list of ndarray
            The global parameters: the coordinate-wise median of the clients'
            arrays, one array per parameter.
        """
        return [
            np.asarray(np.median(np.stack(layers), axis=0))
            for layers in zip(*parameter_lists, strict=True)
        ]


class TrimmedMean(_Aggregator):
    """The coordinate-wise mean after cutting a share of the extreme values.

    For every coordinate, the ``beta`` share of the lowest and of the highest
    client values are dropped and the rest averaged (unweighted). Flower's
    ``FedTrimmedAvg``, with its arithmetic.

    Parameters
    ----------
    beta : float in [0, 0.5), default=0.2
        Share cut at each end.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.federated import TrimmedMean
    >>> values = [[np.array([v])] for v in (0.0, 1.0, 2.0, 3.0, 1e6)]
    >>> TrimmedMean(beta=0.2).aggregate(values, [1] * 5)
    [array([2.])]
    """

    flower_strategy = "FedTrimmedAvg"

    def __init__(self, beta=0.2):
        self.beta = beta

    def flower_options(self):
        """Keyword arguments of the Flower strategy.

        Returns
        -------
        options : dict
            ``{"beta": beta}``, the share ``FedTrimmedAvg`` cuts at each end.
        """
        return {"beta": self.beta}

    def aggregate(self, parameter_lists, weights):
        """The trimmed mean of each parameter array.

        Parameters
        ----------
        parameter_lists : list of list of ndarray
            Per client, its parameter arrays.
        weights : array-like of shape (n_clients,)
            Ignored.

        Returns
        -------
        parameters : list of ndarray
            The global parameters: the coordinate-wise trimmed mean of the
            clients' arrays, one array per parameter.
        """
        return [
            np.asarray(_trim_mean(np.stack(layers), self.beta))
            for layers in zip(*parameter_lists, strict=True)
        ]


def _trim_mean(array, cut_fraction):
    """Flower's ``trim_mean`` (flwr.serverapp.strategy.fedtrimmedavg), verbatim
    in its arithmetic: partition, then the mean of the kept slice."""
    axis = 0
    nobs = array.shape[axis]
    lowercut = int(cut_fraction * nobs)
    uppercut = nobs - lowercut
    atmp = np.partition(array, (lowercut, uppercut - 1), axis)
    slice_list = [slice(None)] * atmp.ndim
    slice_list[axis] = slice(lowercut, uppercut)
    return np.mean(atmp[tuple(slice_list)], axis=axis)


class QFedAvg(_Aggregator):
    """The q-FedAvg aggregation (q-FFL, Li et al. 2020): weight to high-loss clients.

    Performance parity across clients is a fairness goal of its own: a
    client whose model fits it badly is a worse-served population. q-FedAvg
    moves the global parameters along the clients' updates
    ``L (w - w_k)`` weighted by ``loss_k ** q``, with a step from the
    Lipschitz estimate ``L = 1 / client_learning_rate``; ``q = 0`` is FedAvg's
    update with equal client weights, larger ``q`` pulls the model toward the
    clients it fits worst. ``loss_k`` is the client's reported training
    log-loss of the round. Flower's ``QFedAvg``, with its arithmetic to the
    last bit (the same losses, in partition order).

    Parameters
    ----------
    q : float >= 0, default=0.1
        Strength of the pull toward high-loss clients.
    client_learning_rate : float > 0, default=0.1
        The clients' SGD step, from which ``L`` is estimated.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.federated import QFedAvg
    >>> QFedAvg(q=0.0, client_learning_rate=1.0).aggregate(
    ...     [[np.array([1.0])], [np.array([3.0])]], [1, 1],
    ...     global_parameters=[np.array([0.0])], losses=[0.5, 0.5])
    [array([2.])]
    """

    flower_strategy = "QFedAvg"
    needs_round_context = True

    def __init__(self, q=0.1, client_learning_rate=0.1):
        self.q = q
        self.client_learning_rate = client_learning_rate

    def flower_options(self):
        """Keyword arguments of the Flower strategy.

        Returns
        -------
        options : dict
            ``q``, ``client_learning_rate`` and the key of the clients'
            training loss.
        """
        return {
            "q": self.q,
            "client_learning_rate": self.client_learning_rate,
            "train_loss_key": "train-loss",
        }

    def __repr__(self):
        return (
            f"QFedAvg(q={self.q!r}, client_learning_rate={self.client_learning_rate!r})"
        )

    def aggregate(self, parameter_lists, weights, *, global_parameters, losses):
        """The q-FedAvg step from the global parameters.

        Parameters
        ----------
        parameter_lists : list of list of ndarray
            Per client, its parameter arrays after local training.
        weights : array-like of shape (n_clients,)
            Ignored (q-FedAvg weighs clients by their losses).
        global_parameters : list of ndarray
            The parameters the clients started the round from.
        losses : array-like of shape (n_clients,)
            The clients' training losses.

        Returns
        -------
        parameters : list of ndarray
            The new global parameters.
        """
        # flwr.serverapp.strategy.qfedavg, operation for operation.
        lipschitz = 1.0 / self.client_learning_rate
        sum_delta, sum_h = None, 0.0
        for local, loss in zip(parameter_lists, losses, strict=True):
            grad = [
                (np.subtract(g, w) * lipschitz)
                for g, w in zip(global_parameters, local, strict=True)
            ]
            norm = float(sum(np.sum(np.square(g)) for g in grad))
            loss_pow_q = np.float_power(float(loss) + 1e-10, self.q)
            delta = [g * loss_pow_q for g in grad]
            h = (
                self.q * np.float_power(float(loss) + 1e-10, self.q - 1) * norm
                + lipschitz * loss_pow_q
            )
            sum_delta = (
                delta
                if sum_delta is None
                else [s + d for s, d in zip(sum_delta, delta, strict=True)]
            )
            sum_h += h
        if not (np.isfinite(sum_h) and sum_h > 0):
            # Flower's arithmetic as it is (bit-identical on both backends):
            # loss ** q underflows to 0 (or overflows) for a large q, and the
            # step would be 0 / 0, which the next round blamed on X.
            raise ValueError(
                f"QFedAvg(q={self.q!r}) has no step this round: the clients' "
                f"losses {np.round(np.asarray(losses, dtype=float), 4).tolist()} "
                f"raised to q underflow or overflow float64. Use a smaller q "
                "(q of 1 to 10 is usual; q=0 is FedAvg with equal weights)."
            )
        return [
            np.asarray(g - (d / sum_h))
            for g, d in zip(global_parameters, sum_delta, strict=True)
        ]


class FairFed(_Aggregator):
    """FairFed's fairness-aware weights (Ezzeldin et al., AAAI 2023).

    Every round each client reports, for the global model it receives (before
    training, decisions at 0.5 on its held-out rows when the federation has
    ``validation_fraction``, else on its training rows), its counts per
    sensitive group: rows and positive decisions (and, for ``"eod"``, those
    among its positive rows). The server sums them into the federation's
    gap ``F`` (largest minus smallest group rate) and compares every client's
    own gap ``F_k``: with ``d_k = |F - F_k|``, the client's weight moves by
    ``-beta * (d_k - mean(d))`` from the previous round's, starting from
    ``n_k / n``, is clipped at 0 and renormalised; the global parameters are
    the weighted mean of the clients'. Clients whose local gap is far from
    the federation's, whose updates would pull the model away from the
    federation's fairness, count less. Only counts per group leave a client.

    On Flower, the clients send their counts and the categories of their
    groups with their parameters, and the ServerApp runs this arithmetic (on
    Flower's ``FedAvg`` strategy otherwise), with the same result.

    Parameters
    ----------
    metric : {"dpd", "dtpr", "dfpr", "eod"}, default="dpd"
        The gap, as skfedida's metrics of the same names: of selection rates
        (demographic parity), true positive rates (equal opportunity), false
        positive rates, or the larger of the last two (equalized odds).
    beta : float >= 0, default=1.0
        How far a round moves the weights; 0 is FedAvg.
    min_group_size : int >= 1, default=30
        Groups with fewer rows in the federation (summed over the round's
        reporting clients; for a rate among positive or negative rows, fewer
        such rows) are left out of every gap, the federation's and each
        client's, as the metrics' ``min_group_size`` leaves them out. A rate
        from fewer than 30 rows has a standard error up to 0.09, the size of
        the gaps FairFed weighs clients by; and a group's size is what a
        client declares, so without a floor one client can declare a group
        of one row and set every gap to 1 (its own weight then becomes 1).
        1 keeps every group (the paper's rule). When fewer than two groups
        reach it, no gap can be measured and the weights are FedAvg's: an
        ``InactivePenaltyWarning`` says so.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.federated import FairFed
    >>> reports = [  # per client: rows and positive decisions per group
    ...     {"n": np.array([50.0, 50.0]), "selected": np.array([10.0, 12.0])},
    ...     {"n": np.array([50.0, 50.0]), "selected": np.array([5.0, 30.0])},
    ...     {"n": np.array([50.0, 50.0]), "selected": np.array([10.0, 23.5])}]
    >>> for report in reports:  # and, for the TPR and FPR gaps, among positives
    ...     report.update(n_positive=np.array([20.0, 20.0]),
    ...                   true_positive=np.array([8.0, 9.0]))
    >>> parameters = [[np.array([1.0])], [np.array([3.0])], [np.array([0.0])]]
    >>> memory = {}
    >>> FairFed(beta=0.5).aggregate(parameters, [100, 100, 100], reports=reports,
    ...                             clients=[0, 1, 2], memory=memory)
    [array([1.18])]
    >>> memory["weights"]  # the third client's gap is the federation's
    {0: 0.295, 1: 0.295, 2: 0.41}
    """

    flower_strategy = "FedAvg"

    def __init__(self, metric="dpd", beta=1.0, min_group_size=30):
        self.metric = metric
        self.beta = beta
        self.min_group_size = min_group_size

    @property
    def report_metric(self):
        """The fairness metric clients report each round.

        Returns
        -------
        metric : str
            ``metric``.
        """
        return self.metric

    def __repr__(self):
        return (
            f"FairFed(metric={self.metric!r}, beta={self.beta!r}, "
            f"min_group_size={self.min_group_size!r})"
        )

    def _report_gap(self, report, total=None):
        """The report's gap in ``metric`` (largest minus smallest group rate).

        Only over the groups with at least ``min_group_size`` rows in the
        rate's denominator in the federation's ``total`` (default: the
        report itself).
        """
        return count_gap(self.metric, report, total, self.min_group_size)

    def aggregate(self, parameter_lists, weights, *, reports, clients, memory):
        """The FairFed-weighted mean of the clients' parameters.

        Parameters
        ----------
        parameter_lists : list of list of ndarray
            Per client, its parameter arrays after local training.
        weights : array-like of shape (n_clients,)
            Row counts of the clients (the starting weights).
        reports : list of dict
            Per client, its counts per group for the round's global model:
            rows ``n``, positive decisions ``selected``, positive rows
            ``n_positive`` and true positives ``true_positive``.
        clients : list of int
            The clients' positions in the federation (weights carry over
            between rounds by position).
        memory : dict
            The server's store for this aggregator across rounds.

        Returns
        -------
        parameters : list of ndarray
            The global parameters.
        """
        weights = np.asarray(weights, dtype=np.float64)
        previous = memory.setdefault("weights", {})
        omega = np.array(
            [
                previous.get(k, w / weights.sum())
                for k, w in zip(clients, weights, strict=True)
            ]
        )
        total = {key: sum(r[key] for r in reports) for key in reports[0]}
        if not memory.get("warned") and (
            np.count_nonzero(np.asarray(total["n"]) >= self.min_group_size) < 2
        ):
            # Every gap is then 0 and the weights stay the clients' sizes:
            # FedAvg, which the user should not mistake for FairFed.
            memory["warned"] = True
            warnings.warn(
                f"FairFed leaves out groups with fewer than min_group_size="
                f"{self.min_group_size} rows in the federation, and fewer than two "
                f"groups have that many (rows per group: "
                f"{np.asarray(total['n']).astype(int).tolist()[:10]}): no gap can "
                "be measured, so its weights are FedAvg's. Lower min_group_size "
                "or merge small groups.",
                InactivePenaltyWarning,
                stacklevel=caller_stacklevel(),
            )
        global_gap = self._report_gap(total, total)
        local_gaps = np.array([self._report_gap(r, total) for r in reports])
        distance = np.abs(global_gap - local_gaps)
        omega = np.clip(omega - self.beta * (distance - distance.mean()), 0.0, None)
        omega = omega / omega.sum() if omega.sum() > 0 else weights / weights.sum()
        for k, w in zip(clients, omega, strict=True):
            previous[k] = float(w)
        memory.setdefault("gaps", []).append((global_gap, local_gaps.tolist()))
        return _weighted_sum(parameter_lists, omega)


def _one_of(names):
    """'a', 'b' or 'c'."""
    quoted = [repr(name) for name in names]
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


_BY_NAME = {"mean": WeightedMean, "median": Median, "trimmed_mean": TrimmedMean}


def check_aggregation(aggregation):
    """An aggregator from ``FederatedEstimator``'s ``aggregation`` parameter."""
    if isinstance(aggregation, str):
        if aggregation not in _BY_NAME:
            raise ValueError(
                f"aggregation must be one of {sorted(_BY_NAME)} or an aggregator "
                f"(WeightedMean, Median, TrimmedMean); got {aggregation!r}."
            )
        return _BY_NAME[aggregation]()
    if isinstance(aggregation, TrimmedMean) and not (
        isinstance(aggregation.beta, numbers.Real) and 0 <= aggregation.beta < 0.5
    ):
        raise ValueError(
            f"TrimmedMean's beta must be in [0, 0.5); got {aggregation.beta!r}."
        )
    if isinstance(aggregation, QFedAvg):
        # loss ** q overflows to infinity for an infinite q (or a huge one
        # past float range), and the round's step becomes NaN: checked here,
        # before any round, instead of failing later naming the data.
        q, rate = aggregation.q, aggregation.client_learning_rate
        if not (
            isinstance(q, numbers.Real)
            and not isinstance(q, bool)
            and np.isfinite(q)
            and q >= 0
        ):
            raise ValueError(
                f"QFedAvg needs a finite q >= 0; got q={q!r}. Use e.g. q=0.1 "
                "(q=0 is FedAvg with equal client weights)."
            )
        if not (
            isinstance(rate, numbers.Real)
            and not isinstance(rate, bool)
            and np.isfinite(rate)
            and rate > 0
        ):
            raise ValueError(
                "QFedAvg needs a finite client_learning_rate > 0; got "
                f"client_learning_rate={rate!r}."
            )
    if isinstance(aggregation, FairFed) and not (
        aggregation.metric in fairfed_metrics()
        and isinstance(aggregation.beta, numbers.Real)
        and aggregation.beta >= 0
        and isinstance(aggregation.min_group_size, numbers.Integral)
        and not isinstance(aggregation.min_group_size, bool)
        and aggregation.min_group_size >= 1
    ):
        raise ValueError(
            f"FairFed needs metric {_one_of(fairfed_metrics())}, beta >= 0 and "
            f"an integer min_group_size >= 1; got {aggregation!r}."
        )
    if not isinstance(aggregation, _Aggregator):
        raise ValueError(
            "aggregation must be 'mean', 'median', 'trimmed_mean' or an "
            "aggregator (WeightedMean, Median, TrimmedMean, QFedAvg, FairFed); got "
            f"{aggregation!r}."
        )
    return aggregation


def class_prior(counts, method="mean"):
    """The federation's class shares from each client's rows per class.

    Parameters
    ----------
    counts : array-like of shape (n_clients, n_classes)
        Each client's training rows per class.
    method : {"mean", "median"}, default="mean"
        ``"mean"``: the pooled shares (the clients' shares weighted by their
        rows), which one client holding a share w of the rows can move by at
        most w, whatever it reports within its declared rows. ``"median"``:
        per class, the median of the clients' shares, normalised to sum to 1,
        which a minority of clients cannot move beyond the range of the
        others' shares (for every clients' size).

    Returns
    -------
    prior : ndarray of shape (n_classes,)
        The federation's share of every class, summing to 1.
    """
    counts = np.asarray(counts, dtype=np.float64)
    if method == "mean":
        total = counts.sum(axis=0)
        return total / total.sum()
    rates = counts / counts.sum(axis=1, keepdims=True)
    median = np.median(rates, axis=0)
    if median.sum() == 0:
        # Clients each with other classes only (every median share 0): no
        # majority of clients agrees on any class; the pooled shares.
        return class_prior(counts, "mean")
    return median / median.sum()
