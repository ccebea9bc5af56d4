"""Bounding each client's update: norm clipping and client-level differential privacy.

One implementation for the in-process federation and the Flower ServerApp,
so both give the same model to the last bit. Clipping follows Flower's
``compute_clip_model_update`` (``flwr.supercore.differential_privacy``): a
client's update is its parameters minus the round's global parameters, all
arrays taken as one vector; when its L2 norm exceeds the bound it is scaled
down to the bound. The private mean is DP-FedAvg with a fixed denominator
(McMahan et al., 2018; Flower's ``DifferentialPrivacyServerSideFixedClipping``
when every selected client replies): the clipped updates are summed, Gaussian
noise of standard deviation ``noise_multiplier * clipping_norm`` is added, and
the sum is divided by the number of selected clients.

Why not Flower's DP wrapper itself: in flwr 1.42 it clips before any reply is
checked (a reply of the wrong shape fails without naming its client), draws
its noise from numpy's global, unseeded generator (no run could be
reproduced), and refuses its accountant unless the wrapped strategy's
``aggregate_train`` is FedAvg's own. skfedida keeps Flower's arithmetic and
accounts with Google's ``dp-accounting`` RDP accountant, the backend of
Flower's own ``RdpAccountant``, with the same conventions.
"""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import Bunch

from .._doc_links import DocLinkMixin
from ._aggregation import Median, TrimmedMean, WeightedMean

__all__ = [
    "DifferentialPrivacy",
    "bounded_round",
    "check_target_delta",
    "check_update_bound",
]


class DifferentialPrivacy(DocLinkMixin, BaseEstimator):
    """Client-level differential privacy for the federation's global model.

    Every round, each selected client's update (its parameters minus the
    global parameters it started from) is clipped to L2 norm
    ``clipping_norm``; the server adds the clipped updates, adds Gaussian
    noise of standard deviation ``noise_multiplier * clipping_norm`` to every
    coordinate of the sum and divides by the number of selected clients
    (DP-FedAvg, McMahan et al. 2018, as Flower's server-side fixed clipping
    does). Every client counts the same, whatever its number of rows: a
    weighted mean would let one large client's data move the model further
    than the noise hides.

    The guarantee is about clients (adding or removing one client's whole
    data changes the distribution of the released global models by at most
    (epsilon, delta)), for the parameters the server releases each round.
    It treats the number of clients selected each round as public (the
    denominator of the mean). Not covered: what each client reports about
    itself (training losses, evaluation metrics) and the server's own
    records of them in ``history_``; release the global model, not the
    fitted ``FederatedEstimator`` with its history. Epsilon is accounted with
    Rényi DP (Google's ``dp-accounting``, the backend of Flower's
    ``RdpAccountant``), composing one Gaussian release per round with no
    amplification from client sampling (valid whatever ``client_fraction``
    is, and conservative when it is below 1).

    Parameters
    ----------
    noise_multiplier : float, default=1.0
        Standard deviation of the noise in units of ``clipping_norm``; more
        noise, smaller epsilon.
    clipping_norm : float, default=1.0
        Bound on the L2 norm of each client's update. Too small slows
        training (every update is shortened); too large needs more noise
        for the same epsilon. The ``update_norm`` of each client in a
        non-private run's ``history_`` shows the scale.
    target_delta : float in (0, 1), default=1e-5
        The delta at which epsilon is reported. ``fit`` refuses a delta of
        one over the number of clients or more: the mechanism that publishes
        each client's data outright with probability delta is (0, delta)-DP,
        so at delta >= 1/n_clients a "guarantee" allows releasing about one
        client's whole data, and epsilon (which then falls to 0) means
        nothing. Keep delta far below that bound (the default 1e-5 is the
        usual choice).
    noise_seed : int or None, default=None
        None (the only private choice) draws the noise from the operating
        system's entropy, a secret no client holds: such fits are not
        reproducible, by design. An int makes the noise reproducible for
        tests and benchmarks, and removes the privacy: anyone who knows the
        seed can subtract the noise. It is never derived from
        ``random_state``, which clients know.

    See Also
    --------
    FederatedEstimator : Its ``dp`` parameter takes this object.

    Notes
    -----
    Requires ``dp-accounting`` (``pip install "skfedida[dp]"``).

    Examples
    --------
    >>> from skfedida.federated import DifferentialPrivacy
    >>> dp = DifferentialPrivacy(noise_multiplier=1.0, clipping_norm=0.5)
    >>> round(dp.epsilon(n_rounds=10), 2)
    19.05
    """

    def __init__(
        self,
        noise_multiplier=1.0,
        clipping_norm=1.0,
        target_delta=1e-5,
        noise_seed=None,
    ):
        self.noise_multiplier = noise_multiplier
        self.clipping_norm = clipping_norm
        self.target_delta = target_delta
        self.noise_seed = noise_seed

    def _check(self, n_clients=None):
        """Raise a ValueError naming the option that is out of range.

        With ``n_clients`` (known at fit), also refuse a ``target_delta`` of
        ``1 / n_clients`` or more, which guarantees nothing (see the class).
        """
        for name, value in (
            ("noise_multiplier", self.noise_multiplier),
            ("clipping_norm", self.clipping_norm),
        ):
            if (
                not isinstance(value, numbers.Real)
                or isinstance(value, bool)
                or not np.isfinite(value)
                or value <= 0
            ):
                raise ValueError(
                    f"DifferentialPrivacy's {name} must be a finite number > 0; "
                    f"got {value!r}."
                )
        delta = self.target_delta
        if (
            not isinstance(delta, numbers.Real)
            or isinstance(delta, bool)
            or not 0 < delta < 1
        ):
            raise ValueError(
                f"DifferentialPrivacy's target_delta must be in (0, 1); got {delta!r}."
            )
        if n_clients is not None and delta * n_clients >= 1:
            raise ValueError(
                f"DifferentialPrivacy's target_delta={delta!r} gives no guarantee "
                f"for {n_clients} clients: a mechanism that publishes each "
                "client's data outright with probability delta satisfies "
                "(0, delta)-DP, so delta must be below 1/n_clients = "
                f"{1 / n_clients:.3g}. Lower target_delta, ideally far below "
                "(e.g. the default 1e-5)."
            )
        seed = self.noise_seed
        if seed is not None and (
            not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0
        ):
            raise ValueError(
                f"DifferentialPrivacy's noise_seed must be None or an int >= 0; got "
                f"{seed!r}."
            )
        _accountant()  # a missing dp-accounting fails before training

    def epsilon(self, n_rounds):
        """Epsilon spent after ``n_rounds`` private rounds, at ``target_delta``.

        Parameters
        ----------
        n_rounds : int
            Rounds whose global parameters were released.

        Returns
        -------
        epsilon : float
            The Rényi-DP bound converted to (epsilon, target_delta)-DP; 0.0
            for no round.
        """
        self._check()
        if (
            not isinstance(n_rounds, numbers.Integral)
            or isinstance(n_rounds, bool)
            or n_rounds < 0
        ):
            raise ValueError(f"n_rounds must be an int >= 0; got {n_rounds!r}.")
        if n_rounds == 0:
            return 0.0
        accountant, gaussian = _accountant()
        accountant.compose(gaussian(float(self.noise_multiplier)), int(n_rounds))
        return float(accountant.get_epsilon(float(self.target_delta)))

    def spent(self, n_rounds):
        """What ``n_rounds`` private rounds spent, as ``FederatedEstimator.privacy_``.

        Parameters
        ----------
        n_rounds : int
            Rounds whose global parameters were released.

        Returns
        -------
        privacy : Bunch
            ``epsilon``, ``delta``, ``n_releases``, ``noise_multiplier``,
            ``clipping_norm``, ``epsilon_by_round`` (after each round) and
            ``accounting`` (how epsilon was computed).
        """
        by_round = np.array([self.epsilon(r) for r in range(1, int(n_rounds) + 1)])
        return Bunch(
            epsilon=float(by_round[-1]) if by_round.size else 0.0,
            delta=float(self.target_delta),
            n_releases=int(n_rounds),
            noise_multiplier=float(self.noise_multiplier),
            clipping_norm=float(self.clipping_norm),
            epsilon_by_round=by_round,
            accounting=(
                "Renyi DP of the Gaussian mechanism (dp-accounting), one release "
                "per round, add-or-remove-one-client neighbours, no amplification "
                "by client sampling"
            ),
        )


def _accountant():
    """A fresh RDP accountant and the Gaussian event, or a clear ImportError."""
    try:
        from dp_accounting import dp_event, privacy_accountant
        from dp_accounting.rdp import RdpAccountant
    except ImportError as exc:
        raise ImportError(
            "Differential privacy needs the dp-accounting package to account "
            'epsilon: pip install "skfedida[dp]".'
        ) from exc
    relation = privacy_accountant.NeighboringRelation.ADD_OR_REMOVE_ONE
    return RdpAccountant(neighboring_relation=relation), dp_event.GaussianDpEvent


def check_update_bound(max_update_norm, dp, *, strategy, aggregator):
    """Raise a ValueError when the update bound options cannot be combined."""
    problem = (
        "max_update_norm must be a number > 0, 'median' or None; got "
        f"{max_update_norm!r}."
    )
    if isinstance(max_update_norm, str):
        if max_update_norm != "median":
            raise ValueError(problem)
    elif max_update_norm is not None and not (
        isinstance(max_update_norm, numbers.Real)
        and not isinstance(max_update_norm, bool)
        and np.isfinite(max_update_norm)
        and max_update_norm > 0
    ):
        raise ValueError(problem)
    if max_update_norm is not None and strategy not in ("fedavg", "pfedavg"):
        raise ValueError(
            "max_update_norm bounds the updates clients send to the server; "
            f"strategy={strategy!r} sends none ('fedavg' or 'pfedavg' do)."
        )
    if dp is None:
        return
    if not isinstance(dp, DifferentialPrivacy):
        raise ValueError(
            f"dp must be a DifferentialPrivacy object or None; got {dp!r}."
        )
    dp._check()
    if strategy not in ("fedavg", "pfedavg"):
        raise ValueError(
            f"dp needs a strategy whose clients send updates ('fedavg' or "
            f"'pfedavg'); got strategy={strategy!r}."
        )
    if max_update_norm is not None:
        raise ValueError(
            "dp clips every update at its clipping_norm; leave max_update_norm "
            f"None (got {max_update_norm!r})."
        )
    if not isinstance(aggregator, WeightedMean):
        raise ValueError(
            "dp computes its own mean of the clipped updates (every client "
            "counts the same); leave aggregation='mean' (got "
            f"{aggregator!r})."
        )


def check_target_delta(dp, n_clients):
    """Refuse a ``target_delta`` that guarantees nothing for ``n_clients``.

    Both backends call it once the number of clients is known: a delta of
    ``1 / n_clients`` or more allows releasing one client's data outright.

    Parameters
    ----------
    dp : DifferentialPrivacy or None
        The federation's ``dp`` option; None checks nothing.
    n_clients : int
        Clients of the federation.

    Raises
    ------
    ValueError
        Naming ``target_delta``, the number of clients and the limit.
    """
    if dp is not None:
        dp._check(n_clients=n_clients)


def update_norms(parameter_lists, global_parameters):
    """L2 norm of each client's update, all its arrays as one vector (Flower's)."""
    return [
        float(
            np.sqrt(
                sum(
                    np.linalg.norm(np.subtract(p, g).flat) ** 2
                    for p, g in zip(params, global_parameters, strict=True)
                )
            )
        )
        for params in parameter_lists
    ]


def _clipped(params, global_parameters, norm, bound):
    """Flower's compute_clip_model_update: g + update * min(1, bound / norm)."""
    update = [np.subtract(p, g) for p, g in zip(params, global_parameters, strict=True)]
    scale = min(1.0, bound / norm) if norm > 0 else 1.0
    for array in update:
        array *= scale
    return [g + u for g, u in zip(global_parameters, update, strict=True)]


def noise_stream(dp, round_number):
    """The stream of one round's DP noise: secret unless ``dp.noise_seed`` is set.

    Never derived from ``random_state`` or the client seeds: clients know
    those, and a client that can draw the noise can subtract it.
    """
    if dp is None:
        return None
    if dp.noise_seed is None:
        return np.random.default_rng()  # the operating system's entropy
    return np.random.default_rng([int(dp.noise_seed), int(round_number), 0x5EED])


def bounded_round(
    aggregate,
    parameter_lists,
    weights,
    *,
    global_parameters,
    max_update_norm=None,
    dp=None,
    n_selected=None,
    noise_rng=None,
):
    """One round's global parameters from the clients' replies, updates bounded.

    Parameters
    ----------
    aggregate : callable
        ``aggregate(parameter_lists, weights)``: the federation's aggregator
        (not used with ``dp``).
    parameter_lists : list of list of ndarray
        The replying clients' parameters, in client order.
    weights : list of int
        Their row counts.
    global_parameters : list of ndarray
        The parameters the clients started the round from.
    max_update_norm : float, "median" or None
        Clip each update to this norm (``"median"``: the median of the
        round's update norms) before aggregating.
    dp : DifferentialPrivacy or None
        Clip at its ``clipping_norm`` and return the noisy private mean.
    n_selected : int
        Clients selected this round (the private mean's denominator).
    noise_rng : numpy.random.Generator or None
        The round's noise stream (``noise_stream``), with ``dp``.

    Returns
    -------
    parameters : list of ndarray
        The new global parameters.
    norms : list of float or None
        Each replying client's update norm, before clipping; None with
        ``dp``: exact norms would describe each client's data outside the
        guarantee, so they are not kept.
    """
    norms = update_norms(parameter_lists, global_parameters)
    if dp is not None:
        bound = float(dp.clipping_norm)
    elif max_update_norm == "median":
        bound = float(np.median(norms))
    else:
        bound = max_update_norm
    if bound is not None:
        parameter_lists = [
            _clipped(params, global_parameters, norm, bound)
            for params, norm in zip(parameter_lists, norms, strict=True)
        ]
    if dp is None:
        return aggregate(parameter_lists, weights), norms
    norms = None
    scale = float(dp.noise_multiplier) * float(dp.clipping_norm)
    parameters = []
    for i, g in enumerate(global_parameters):
        total = sum(params[i] - g for params in parameter_lists)
        noise = noise_rng.normal(0.0, scale, size=np.shape(g))
        parameters.append(g + (total + noise) / n_selected)
    return parameters, norms


def updates_bounded(federation):
    """Whether the federation bounds what one client's update can do."""
    return (
        federation.max_update_norm is not None
        or federation.dp is not None
        or isinstance(federation._aggregator, Median | TrimmedMean)
        or getattr(federation._aggregator, "bounds_updates", False)
    )


def privacy_report(dp, n_rounds):
    """``FederatedEstimator.privacy_`` for ``n_rounds`` released rounds."""
    return None if dp is None else dp.spent(n_rounds)
