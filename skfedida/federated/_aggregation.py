"""How the server combines the clients' parameters: one seam, Flower's arithmetic.

Each aggregator takes the parameter arrays of the clients that replied in a
round (in client order) and their row counts, and returns the global
parameters. The same aggregator runs in-process and, on the Flower path, as
the Flower strategy it names, with the same arithmetic, so both give the same
model to the last bit.

A Flower server strategy given as the aggregation itself
(``FederatedEstimator(aggregation=FedAdam())``, any strategy of
``flwr.serverapp.strategy`` or a user's subclass) runs its own
``configure_train`` and ``aggregate_train`` every round, on messages built
from the round's global parameters and the admitted clients' replies
(``FlowerStrategyAggregator``): Flower's arithmetic, operation for operation,
with the server-side state of FedAvgM's momentum and FedAdam's, FedYogi's and
FedAdagrad's moments. Both backends call that same object with the same
arrays in partition order. The user's strategy is never modified: every fit
works on a deep copy, kept in the round engine's memory, so a warm start
carries its moments on and a new fit starts them afresh.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import numbers
import random
import threading
import warnings

import numpy as np

from .._messages import NUM_EXAMPLES, TRAIN_LOSS
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

    #: Whether ``aggregate`` also needs, besides the round context, the run's
    #: memory and the round number (a Flower strategy's state across rounds).
    needs_strategy_state = False

    #: FedProx's proximal weight the clients add to their training loss (a
    #: Flower ``FedProx`` given as the aggregation); 0: none.
    proximal_mu = 0.0

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
            "train_loss_key": TRAIN_LOSS,
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


# -- Flower's own server strategies as the aggregation --------------------

# Strategies whose arithmetic cannot run as a federation's aggregation, and
# what to use instead. Flower's DP wrappers draw their noise from numpy's
# global, unseeded generator (no fit would be reproducible) and would add it
# after skfedida's own checks; the XGBoost ones aggregate serialised trees.
_REFUSED = {
    "DifferentialPrivacyServerSideFixedClipping": "dp=DifferentialPrivacy(...)",
    "DifferentialPrivacyServerSideAdaptiveClipping": "dp=DifferentialPrivacy(...)",
    "DifferentialPrivacyClientSideFixedClipping": "dp=DifferentialPrivacy(...)",
    "DifferentialPrivacyClientSideAdaptiveClipping": "dp=DifferentialPrivacy(...)",
    "FedXgbBagging": None,
    "FedXgbCyclic": None,
}


def is_flower_strategy(aggregation):
    """Whether ``aggregation`` is a Flower server strategy (without importing it).

    Parameters
    ----------
    aggregation : object
        ``FederatedEstimator``'s ``aggregation`` parameter.

    Returns
    -------
    is_strategy : bool
        Whether it has a strategy's ``configure_train`` and
        ``aggregate_train``.
    """
    return callable(getattr(aggregation, "aggregate_train", None)) and callable(
        getattr(aggregation, "configure_train", None)
    )


class _AnyNodes:
    """The Grid a strategy's ``configure_train`` samples from, outside a run.

    It only answers ``get_node_ids``, with as many nodes as the strategy waits
    for: the federation selects the round's clients itself (its seeded
    stream), so the nodes the strategy samples are ignored; what counts is
    the state ``configure_train`` sets (the round's arrays) and the config it
    would send.
    """

    def __init__(self, n_nodes):
        self._nodes = list(range(1, n_nodes + 1))

    def get_node_ids(self):
        return self._nodes


#: Held while a strategy runs: the block below saves and restores global
#: state (Flower's logger level, Python's ``random`` stream, Flower's task
#: identity), which fits running in threads at once would interleave.
_GLOBAL_STATE = threading.Lock()


@contextlib.contextmanager
def _quiet_and_unseeded_state_kept():
    """Flower's INFO logs muted; Python's global ``random`` state restored.

    ``configure_train`` samples nodes with ``random.sample`` (the module's
    global generator): without the restore, every fit would move a user's
    own ``random`` stream.
    """
    logger = logging.getLogger("flwr")
    with _GLOBAL_STATE:
        level = logger.level
        state = random.getstate()
        logger.setLevel(logging.WARNING)
        try:
            yield
        finally:
            logger.setLevel(level)
            random.setstate(state)


def _fingerprint(strategy):
    """The strategy's class and settings (its non-callable attributes).

    A warm start keeps the copy it trained with while this is unchanged;
    callables (metric functions) are left out, their reprs holding addresses
    that differ between processes.
    """
    settings = sorted(
        (name, repr(value))
        for name, value in vars(strategy).items()
        if not callable(value)
    )
    return type(strategy).__module__, type(strategy).__qualname__, tuple(settings)


class FlowerStrategyAggregator(_Aggregator):
    """A Flower server strategy as the federation's aggregator (not public).

    Parameters
    ----------
    strategy : flwr.serverapp.strategy.Strategy
        The user's strategy; copied at a fit's first round, never modified.
    """

    # The Flower ServerApp's message machinery is FedAvg's; the arithmetic is
    # this object's (the strategy's own), on both backends.
    flower_strategy = "FedAvg"
    needs_strategy_state = True

    def __init__(self, strategy):
        self.strategy = strategy

    def __repr__(self):
        return f"{type(self.strategy).__name__}()"

    def __eq__(self, other):
        return type(self) is type(other) and self.strategy is other.strategy

    def __hash__(self):
        return id(self.strategy)

    def check(self):
        """Refuse a strategy that cannot run as the aggregation, naming why.

        Returns
        -------
        self : FlowerStrategyAggregator
            This aggregator, when its strategy can run.
        """
        if isinstance(self.strategy, type):
            raise ValueError(
                f"aggregation={self.strategy.__name__} is the strategy's class; "
                f"pass a strategy object, e.g. {self.strategy.__name__}()."
            )
        name = type(self.strategy).__name__
        fraction = getattr(self.strategy, "fraction_train", 1.0)
        if fraction != 1.0:
            raise ValueError(
                f"aggregation={name}(fraction_train={fraction!r}): the "
                "federation selects each round's clients itself, seeded by "
                "random_state; leave fraction_train=1.0 and set the "
                "FederatedEstimator's client_fraction instead."
            )
        for klass in type(self.strategy).__mro__:
            if klass.__name__ in _REFUSED and klass.__module__.startswith("flwr."):
                instead = _REFUSED[klass.__name__]
                raise ValueError(
                    f"aggregation={name}() cannot be a federation's aggregation: "
                    + (
                        "Flower's DP wrappers draw their noise from numpy's "
                        "global, unseeded generator, so no fit would be "
                        f"reproducible. Use {instead} instead (the same "
                        "clipping and noise, seeded by random_state)."
                        if instead
                        else "it aggregates serialised XGBoost trees, not a "
                        "model's parameter arrays."
                    )
                )
        mu = self.proximal_mu
        if not (_finite_number(mu) and mu >= 0):
            raise ValueError(
                f"aggregation={name}(proximal_mu={mu!r}): FedProx's proximal "
                "weight must be a finite number >= 0."
            )
        return self

    @property
    def bounds_updates(self):
        """Tell whether the strategy bounds what one client's update can do.

        Returns
        -------
        bounded : bool
            True for Flower's robust aggregations (FedMedian, FedTrimmedAvg,
            Krum, MultiKrum, Bulyan), as for :class:`Median`.
        """
        robust = {"FedMedian", "FedTrimmedAvg", "Krum", "MultiKrum", "Bulyan"}
        return any(
            klass.__name__ in robust and klass.__module__.startswith("flwr.")
            for klass in type(self.strategy).__mro__
        )

    @property
    def proximal_mu(self):
        """Give FedProx's proximal weight, which the clients add to their loss.

        Returns
        -------
        mu : float
            The strategy's ``proximal_mu``; 0 for a strategy without one.
        """
        return getattr(self.strategy, "proximal_mu", 0.0)

    def aggregate(
        self,
        parameter_lists,
        weights,
        *,
        global_parameters,
        losses,
        memory,
        round_number,
        clients=None,
    ):
        """The strategy's new global parameters for one round.

        Parameters
        ----------
        parameter_lists : list of list of ndarray
            The admitted clients' parameters, in partition order.
        weights : list of int
            Their training rows (the replies' ``num-examples``).
        global_parameters : list of ndarray
            The parameters the round's clients started from.
        losses : list of float or None
            The clients' training losses (the replies' ``train_loss``).
        memory : dict
            The run's aggregator memory: holds this fit's copy of the
            strategy, with its state across rounds.
        round_number : int
            The round, counted from 1 as Flower's ``server_round``.
        clients : list of int, default=None
            The admitted clients' partitions: client k's reply comes from
            node ``k + 1``, the same node every round (None: ``1..n``).

        Returns
        -------
        parameters : list of ndarray
            The new global parameters.
        """
        from flwr.app import (
            ArrayRecord,
            ConfigRecord,
            Message,
            MessageType,
            MetricRecord,
            RecordDict,
        )

        from .._flwr import task_identity

        # This fit's copy, with its state across rounds (and warm starts); a
        # strategy changed with set_params since starts afresh.
        fingerprint = _fingerprint(self.strategy)
        stored = memory.get("flower_strategy")
        if stored is None or stored[0] != fingerprint:
            stored = (fingerprint, copy.deepcopy(self.strategy))
            memory["flower_strategy"] = stored
        strategy = stored[1]
        n_clients = len(parameter_lists)
        nodes = range(1, n_clients + 1) if clients is None else [k + 1 for k in clients]
        if losses is None:
            losses = [0.0] * n_clients
        weight_key = getattr(strategy, "weighted_by_key", NUM_EXAMPLES)
        loss_key = getattr(strategy, "train_loss_key", "train_loss")
        array_key = getattr(strategy, "arrayrecord_key", "arrays")
        # As many nodes as the strategy waits for (its min_*_nodes): it
        # samples among them, and the sample is not used.
        n_nodes = max(
            max(nodes, default=0),
            int(getattr(strategy, "min_available_nodes", 0)),
            int(getattr(strategy, "min_train_nodes", 0)),
        )
        with task_identity(0, 0, 0), _quiet_and_unseeded_state_kept():
            strategy.configure_train(
                round_number,
                ArrayRecord([np.asarray(a) for a in global_parameters]),
                ConfigRecord(),
                _AnyNodes(n_nodes),
            )
            replies = []
            for node, arrays, n_rows, loss in zip(
                nodes, parameter_lists, weights, losses, strict=True
            ):
                instruction = Message(
                    RecordDict(), dst_node_id=node, message_type=MessageType.TRAIN
                )
                content = RecordDict(
                    {
                        array_key: ArrayRecord([np.asarray(a) for a in arrays]),
                        "metrics": MetricRecord(
                            {weight_key: int(n_rows), loss_key: float(loss)}
                        ),
                    }
                )
                replies.append(Message(content, reply_to=instruction))
            result, _metrics = strategy.aggregate_train(round_number, replies)
        if result is None:
            raise ValueError(
                f"{type(strategy).__name__}.aggregate_train returned no arrays "
                f"in round {round_number} from {n_clients} replies."
            )
        parameters = result.to_numpy_ndarrays()
        for new, old in zip(parameters, global_parameters, strict=True):
            if np.shape(new) != np.shape(old):
                raise ValueError(
                    f"{type(strategy).__name__}.aggregate_train returned arrays "
                    "of other shapes than the model's parameters."
                )
        return [np.asarray(a, dtype=np.float64) for a in parameters]


def _finite_number(value):
    """Whether ``value`` is a finite real number (a bool is not one)."""
    return (
        isinstance(value, numbers.Real)
        and not isinstance(value, bool)
        and bool(np.isfinite(value))
    )


def _one_of(names):
    """'a', 'b' or 'c'."""
    quoted = [repr(name) for name in names]
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


_BY_NAME = {"mean": WeightedMean, "median": Median, "trimmed_mean": TrimmedMean}


def check_aggregation(aggregation):
    """An aggregator from ``FederatedEstimator``'s ``aggregation`` parameter."""
    if is_flower_strategy(aggregation):
        return FlowerStrategyAggregator(aggregation).check()
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
        if not (_finite_number(q) and q >= 0):
            raise ValueError(
                f"QFedAvg needs a finite q >= 0; got q={q!r}. Use e.g. q=0.1 "
                "(q=0 is FedAvg with equal client weights)."
            )
        if not (_finite_number(rate) and rate > 0):
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
            "aggregation must be 'mean', 'median' or 'trimmed_mean', or an "
            "aggregator (WeightedMean, Median, TrimmedMean, QFedAvg, FairFed), or "
            "a Flower strategy (e.g. flwr.serverapp.strategy.FedAdam()); got "
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
