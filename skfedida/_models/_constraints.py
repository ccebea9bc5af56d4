"""Rate constraints at the operating point: one implementation for every model.

A fairness penalty on the groups' mean logits is met by a flexible model
(boosted trees) without changing who is selected: it moves rows far from the
threshold. What a user judges is the *decisions at the operating point*, so
these are constrained instead. The fit aims for

    |R_kg - R_kh| <= tolerance   for every pair of groups g, h and every
                                 constrained rate k,

where ``R_kg`` is group g's rate k (its selection rate, its FPR or its TPR)
of the decisions at the operating point: the threshold at which the
federation's (weighted) share of selected training rows is the target
rate, rows in the threshold's bin selected with the probability that makes
the share exact, as the reports' matched rate does. The groups are the
intersections of every sensitive attribute given; they shape only the
training, and ``predict`` never takes them.

The method is the proxy-Lagrangian of Cotter et al. (2019), as FairGBM
(Cruz et al., ICLR 2023) uses it for boosted trees. The model player
descends

    L(f, lam) = loss(f) + sum_k sum_{g != h} lam_kgh (Rs_kg(f) - Rs_kh(f) - tolerance)

in the model with the multipliers fixed, where ``Rs`` is the rate smoothed
by a sigmoid of width ``tau`` around the threshold ``t`` (a row's
contribution ``sigmoid((s_i - t) / tau)`` instead of the step ``s_i > t``),
so that it has a gradient: per row, a term of its (group, label) cell
(:func:`term_gradient`), which the trees, the logistic model and the network
all add to the log-loss's gradient. The multiplier player ascends on the
*exact* rates' violations, ``lam <- lam + eta (R_g - R_h - tolerance)``,
clipped at 0, with their sum bounded by ``multiplier_bound``: so the
constraint can never outweigh the loss by more than that, and a constraint
the model cannot meet (tolerance 0, groups whose rows the features cannot
tell apart) costs a bounded amount of accuracy instead of collapsing it.

Everything the server needs of the rows is one histogram per (group, label)
cell of the scores on the probability grid of the reports
(:func:`rate_histograms`): from their sum it reads the threshold, the
groups' exact rates there and the sigmoid's width (:class:`RateConstraint`).
A histogram is a sum over rows, so in a federation it is a statistics
round like any other, and no row leaves its client.
"""

from __future__ import annotations

import numbers

import numpy as np
from scipy.special import expit, logit

from .._compat import Interval, StrOptions
from ..metrics._operating_point import DEFAULT_N_BINS, score_bins
from ..metrics._registry import CONSTRAINT_ALIASES, CONSTRAINTS

__all__ = [
    "CONSTRAINT_ATTRIBUTES",
    "CONSTRAINT_PARAMETERS",
    "MULTIPLIER_BOUND",
    "MULTIPLIER_RATE",
    "SMOOTHING_SHARE",
    "RateConstraint",
    "constraint_fitted_attributes",
    "constraint_rates",
    "constraint_request",
    "fairness_levers",
    "forget_constraint",
    "population_rate_weight",
    "rate_histograms",
    "term_gradient",
    "term_value",
]

#: The labels of the rows each rate is a share of (cells are ``2 * group +
#: label``): the selection rate of all a group's rows, the FPR of its
#: negatives, the TPR of its positives.
_RATE_LABELS = {
    "selection_rate": (0, 1),
    "false_positive_rate": (0,),
    "true_positive_rate": (1,),
}

#: The multipliers' step: ``eta`` of ``lam <- lam + eta * violation``, per
#: update (a tree, or a round or epoch of the other models). The multipliers
#: are in units of the mean log-loss per unit of a rate's gap.
MULTIPLIER_RATE = 0.1

#: The default largest sum of all multipliers (``multiplier_bound``): the
#: most mean log-loss the fit trades for closing a whole unit of gap (all
#: constraints together). Chosen on Adult's validation rows (trees, 5
#: clients): larger bounds close more of the gap at a cost in AUROC that
#: grows faster (``benchmarks/constrained_trees.py``).
MULTIPLIER_BOUND = 0.2

#: The sigmoid's width ``tau``: half the distance in logits between the
#: thresholds that select the target rate minus and plus this share of the
#: rows, so that about twice this share of the rows lies within one ``tau``
#: of the threshold whatever the scores' scale.
SMOOTHING_SHARE = 0.03

#: The sum of the threshold's probability and its complement never reaches
#: 0 or 1 in logits (the grid's outer edges).
_PROBABILITY_FLOOR = 2.0**-40

#: The parameters every model family takes, as ``_parameter_constraints``.
CONSTRAINT_PARAMETERS = {
    "constraints": [StrOptions(set(CONSTRAINTS) | set(CONSTRAINT_ALIASES)), None],
    "tolerance": [Interval(numbers.Real, 0, 1, closed="both")],
    "selection_rate": [
        StrOptions({"prevalence"}),
        Interval(numbers.Real, 0, 1, closed="neither"),
    ],
    "multiplier_bound": [Interval(numbers.Real, 0, None, closed="neither")],
}


def constraint_rates(constraints):
    """The rates a constraint makes equal across groups.

    Parameters
    ----------
    constraints : str
        A constraint's name or fairlearn's alias of it.

    Returns
    -------
    rates : tuple of str
        ``"selection_rate"``, ``"false_positive_rate"`` and/or
        ``"true_positive_rate"``.
    """
    return CONSTRAINTS[CONSTRAINT_ALIASES.get(constraints, constraints)]


def rate_histograms(
    scores, cells, weight, n_cells, n_bins=DEFAULT_N_BINS, *, probabilities=False
):
    """Per (group, label) cell, the weight of the rows in each score bin.

    What a client sends for the rate constraint: the scores (logits) through
    the logistic function onto the reports' grid of ``n_bins`` equal bins on
    [0, 1] (:func:`~skfedida.metrics.score_histogram`'s), counted per cell
    ``2 * group + label``. O(n): one ``bincount``.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        The rows' logits.
    cells : ndarray of int of shape (n_samples,)
        Each row's cell, in ``range(n_cells)``.
    weight : ndarray of shape (n_samples,)
        The rows' weights in the rates (the population's, without class
        weights).
    n_cells : int
        ``2 * n_groups``.
    n_bins : int, default=1000
        Bins of the grid.
    probabilities : bool, default=False
        Whether ``scores`` are the positive class's probabilities already
        (a model's ``predict_proba``), not logits.

    Returns
    -------
    histograms : ndarray of shape (n_cells, n_bins)
        Summed weights.
    """
    scores = np.asarray(scores, dtype=np.float64)
    bins = score_bins(scores if probabilities else expit(scores), n_bins)
    flat = np.bincount(
        np.asarray(cells, dtype=np.intp) * n_bins + bins,
        weights=weight,
        minlength=n_cells * n_bins,
    )
    return flat.reshape(n_cells, n_bins)


def population_rate_weight(cells, weight, population_cells, population_weight, n_cells):
    """Resampled rows' weights in the rates: each cell weighs the population's.

    A sampler (FairnessAwareROSE) rebalances the (group, label) cells the
    model trains on; the rates and the prevalence a constraint holds are
    the client's own rows'. Each resampled row keeps its weight, scaled so
    that its cell weighs in the rates what the same cell of the rows before
    resampling weighs: the scores' distribution in a cell is read on the
    rows trained on, the cells' mix is the population's.

    Parameters
    ----------
    cells : ndarray of int of shape (n_samples,)
        The resampled rows' cells ``2 * group + label``.
    weight : ndarray of shape (n_samples,) or None
        Their weights (None: ones).
    population_cells : ndarray of int of shape (n_population,)
        The rows' cells before resampling.
    population_weight : ndarray of shape (n_population,) or None
        Their weights (None: ones).
    n_cells : int
        ``2 * n_groups``.

    Returns
    -------
    rate_weight : ndarray of shape (n_samples,)
        The resampled rows' weights in the rates; a cell with no resampled
        row weighs nothing.
    """
    weight = np.ones(len(cells)) if weight is None else np.asarray(weight, float)
    target = np.bincount(population_cells, population_weight, minlength=n_cells)
    held = np.bincount(cells, weight, minlength=n_cells)
    factor = np.divide(target, held, out=np.zeros(n_cells), where=held > 0)
    return weight * factor[cells]


def _sigmoid_and_slope(scores, term):
    """``sigmoid(z)`` and ``d sigmoid(z) / d s`` at ``z = (s - t) / tau``."""
    temperature = float(term["temperature"])
    z = (np.asarray(scores, dtype=np.float64) - term["threshold"]) / temperature
    smoothed = expit(z)
    return smoothed, smoothed * (1.0 - smoothed) / temperature


def term_gradient(scores, cells, weight, term):
    """Each row's gradient of the constraint's term of the Lagrangian.

    ``weight_i * A_c * d sigmoid((s_i - t) / tau) / d s_i`` for a row of
    cell ``c``: the derivative of ``sum_i weight_i A_c sigmoid(...)``
    (:func:`term_value`) in its score. Divided by the rows' total weight it
    is a mean objective's; the trees add it to their rows' (summed)
    gradients as it is.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        The rows' logits.
    cells : ndarray of int of shape (n_samples,)
        Their cells.
    weight : ndarray of shape (n_samples,)
        Their weights.
    term : dict
        :meth:`RateConstraint.term`: ``threshold``, ``temperature`` and
        ``coefficient`` (per cell).

    Returns
    -------
    gradient : ndarray of shape (n_samples,)
        Each row's derivative of the term in its score.
    """
    _, slope = _sigmoid_and_slope(scores, term)
    coefficient = np.asarray(term["coefficient"], dtype=np.float64)
    return weight * coefficient[cells] * slope


def term_value(scores, cells, weight, term):
    """The constraint's term of the Lagrangian, summed over the rows.

    Parameters
    ----------
    scores : ndarray of shape (n_samples,)
        The rows' logits.
    cells : ndarray of int of shape (n_samples,)
        Their cells.
    weight : ndarray of shape (n_samples,)
        Their weights.
    term : dict
        :meth:`RateConstraint.term`.

    Returns
    -------
    value : float
        ``sum_i weight_i A_c sigmoid((s_i - t) / tau)``.
    """
    smoothed, _ = _sigmoid_and_slope(scores, term)
    coefficient = np.asarray(term["coefficient"], dtype=np.float64)
    return float(np.dot(weight * coefficient[cells], smoothed))


def _above(counts):
    """Weight at or above each bin edge: ``above[j] = counts[j:].sum()``."""
    return np.concatenate(
        (
            np.cumsum(counts[..., ::-1], axis=-1)[..., ::-1],
            np.zeros((*counts.shape[:-1], 1)),
        ),
        axis=-1,
    )


def _cut(total, above, rate):
    """The bin of the cut that selects ``rate`` of ``total``, and its share in it."""
    n_bins = total.size
    wanted = rate * above[0]
    # The bin j with above[j + 1] <= wanted <= above[j]: the cut lies in it.
    j = int(np.searchsorted(-above, -wanted, side="right")) - 1
    j = min(max(j, 0), n_bins - 1)
    filled = np.flatnonzero(total > 0)
    if filled.size:
        # Selecting none: the cut is at the top of the highest rows, not of
        # the empty grid above them.
        j = min(j, int(filled[-1]))
    inside = total[j]
    share = (
        0.0 if inside <= 0 else float(np.clip((wanted - above[j + 1]) / inside, 0, 1))
    )
    return j, share


def _logit_at(j, share, n_bins, inner=False):
    """The logit of the cut selecting the top ``share`` of bin ``j``.

    ``inner``: on the grid's inner edges only. The two outer bins span
    logits to infinity; a width read across them would not be a width of
    the scores.
    """
    probability = (j + 1 - share) / n_bins
    floor = 1.0 / n_bins if inner else _PROBABILITY_FLOOR
    return float(logit(np.clip(probability, floor, 1 - floor)))


class RateConstraint:
    """The server's side of a rate constraint: threshold, rates, multipliers.

    Reads the summed :func:`rate_histograms` of the rows' scores, and from
    them the operating point, the groups' exact rates there and the
    sigmoid's width; updates the multipliers on the rates' violations; and
    gives the clients the term they add to their rows' gradients
    (:meth:`term`). One object per fit, whatever the model family and
    however many clients.

    Parameters
    ----------
    constraints : str
        A constraint's name (fairlearn's names and aliases).
    tolerance : float
        The largest gap between two groups' rates the fit aims for.
    target_rate : float or "prevalence"
        The share of the rows the operating point selects; ``"prevalence"``:
        the (weighted) share of positive rows, read from the first
        histograms (:meth:`set_prevalence` sets it earlier).
    n_groups : int
        Groups (cells are ``2 * group + label``).
    n_bins : int, default=1000
        Bins of the clients' histograms.
    multipliers : ndarray of shape (n_rates, n_groups, n_groups), default=None
        Multipliers to start from (a fit that continues); zeros by default.
    bound : float, default=MULTIPLIER_BOUND
        The largest sum of the multipliers.

    Attributes
    ----------
    rates : tuple of str
        The constrained rates.
    multipliers : ndarray of shape (n_rates, n_groups, n_groups)
        ``multipliers[k, g, h]`` weighs the constraint ``R_kg - R_kh <=
        tolerance``.
    group_rates : ndarray of shape (n_rates, n_groups)
        The groups' rates at the last operating point read (NaN where a
        group has no rows of the rate's labels).
    threshold : float
        The last operating point's threshold, in logits.
    temperature : float
        The sigmoid's width, in logits.
    gaps : list of ndarray
        Per step of the multipliers, the largest gap of each rate between
        groups in the histograms it read.
    """

    def __init__(
        self,
        constraints,
        *,
        tolerance,
        target_rate,
        n_groups,
        n_bins=DEFAULT_N_BINS,
        multipliers=None,
        bound=MULTIPLIER_BOUND,
    ):
        self.rates = constraint_rates(constraints)
        self.bound = float(bound)
        self.tolerance = float(tolerance)
        self.target_rate = None if target_rate == "prevalence" else float(target_rate)
        self.n_groups = int(n_groups)
        self.n_bins = int(n_bins)
        shape = (len(self.rates), self.n_groups, self.n_groups)
        if multipliers is None:
            self.multipliers = np.zeros(shape)
        else:
            multipliers = np.asarray(multipliers, dtype=np.float64)
            if multipliers.shape != shape:
                raise ValueError(
                    f"The multipliers to continue from have shape {multipliers.shape}; "
                    f"this constraint has {shape} (rates x groups x groups)."
                )
            self.multipliers = multipliers.copy()
        self.group_rates = np.full((len(self.rates), self.n_groups), np.nan)
        self.threshold = self.temperature = None
        self.gaps = []
        self._pending = None

    @classmethod
    def of(cls, estimator, n_groups, **options):
        """The constraint an estimator's parameters ask for.

        Parameters
        ----------
        estimator : estimator instance
            Its ``constraints``, ``tolerance``, ``selection_rate`` and
            ``multiplier_bound``.
        n_groups : int
            Groups.
        **options : dict
            ``n_bins`` and ``multipliers``, as the constructor takes them.

        Returns
        -------
        constraint : RateConstraint
            With no step yet.
        """
        constraint = cls(
            estimator.constraints,
            tolerance=estimator.tolerance,
            target_rate=estimator.selection_rate,
            n_groups=n_groups,
            bound=estimator.multiplier_bound,
            **options,
        )
        # What it was built from: a later set_params that changes it starts
        # a new constraint rather than stepping the old one.
        constraint.asked = constraint_request(estimator)
        return constraint

    @property
    def n_cells(self):
        """Give the number of (group, label) cells, ``2 * n_groups``.

        Returns
        -------
        n_cells : int
            The cells of the histograms.
        """
        return 2 * self.n_groups

    def add_groups(self, n_groups):
        """Make room for groups met later (zero multipliers, no rates yet).

        Parameters
        ----------
        n_groups : int
            The groups from now on, at least as many as before.

        Returns
        -------
        self : RateConstraint
            With ``n_groups`` groups.
        """
        added = int(n_groups) - self.n_groups
        if added > 0:
            self.multipliers = np.pad(
                self.multipliers, ((0, 0), (0, added), (0, added))
            )
            self.group_rates = np.pad(
                self.group_rates, ((0, 0), (0, added)), constant_values=np.nan
            )
            self.n_groups = int(n_groups)
        return self

    def set_prevalence(self, cell_weight):
        """Take the positive rows' share as the target, for ``"prevalence"``.

        Parameters
        ----------
        cell_weight : ndarray of shape (n_cells,)
            The federation's weight of each cell's rows (in the rates).

        Returns
        -------
        self : RateConstraint
            With ``target_rate`` set.
        """
        if self.target_rate is None:
            cell_weight = np.asarray(cell_weight, dtype=np.float64)
            self.target_rate = float(cell_weight[1::2].sum() / cell_weight.sum())
        return self

    def read(self, histograms):
        """The operating point, the groups' rates and weights, from histograms.

        Parameters
        ----------
        histograms : ndarray of shape (n_cells, n_bins)
            The federation's summed :func:`rate_histograms`.

        Returns
        -------
        point : dict
            ``threshold`` and ``temperature`` (logits), ``rates`` and
            ``weights`` (n_rates, n_groups): each group's rate and the weight
            of the rows it is a share of.
        """
        histograms = np.asarray(histograms, dtype=np.float64)
        self.set_prevalence(histograms.sum(axis=1))
        total = histograms.sum(axis=0)
        above = _above(total)
        if not above[0] > 0:
            raise ValueError("The rate constraint's histograms hold no rows.")
        j, share = _cut(total, above, self.target_rate)
        threshold = _logit_at(j, share, self.n_bins)
        # The randomised rule at bin resolution: every cell's rows in the
        # cut's bin selected with the same probability, so the federation
        # selects the target share exactly.
        selected = _above(histograms)[:, j + 1] + share * histograms[:, j]
        weight = histograms.sum(axis=1)
        rates = np.full((len(self.rates), self.n_groups), np.nan)
        weights = np.zeros((len(self.rates), self.n_groups))
        for r, name in enumerate(self.rates):
            labels = list(_RATE_LABELS[name])
            hits = selected.reshape(self.n_groups, 2)[:, labels].sum(axis=1)
            weights[r] = weight.reshape(self.n_groups, 2)[:, labels].sum(axis=1)
            np.divide(hits, weights[r], out=rates[r], where=weights[r] > 0)
        # The sigmoid's width: the rows within one width of the threshold
        # are about 2 * SMOOTHING_SHARE of all, on any scale of scores; at
        # least the width of the threshold's bin in logits. A side of the
        # band that reaches the extreme rows is left out: its edge would be
        # the most extreme row's score, not a width of the scores near the
        # cut.
        margin = SMOOTHING_SHARE / 2
        half_widths = [
            abs(
                _logit_at(*_cut(total, above, edge), self.n_bins, inner=True)
                - threshold
            )
            for edge in (
                self.target_rate - SMOOTHING_SHARE,
                self.target_rate + SMOOTHING_SHARE,
            )
            if margin <= edge <= 1 - margin
        ]
        # The nearest inner bin's width for a cut in an outer bin.
        k = min(max(j, 1), self.n_bins - 2)
        bin_width = _logit_at(k, 0.0, self.n_bins) - _logit_at(k, 1.0, self.n_bins)
        temperature = max(np.mean(half_widths) if half_widths else 0.0, bin_width)
        return {
            "threshold": threshold,
            "temperature": float(temperature),
            "rates": rates,
            "weights": weights,
            "total": float(weight.sum()),
        }

    def propose(self, histograms):
        """Read histograms and step the multipliers; the clients' term.

        The step is held until :meth:`commit` (a tree grown again without a
        client reads the histograms again, from the same multipliers).

        Parameters
        ----------
        histograms : ndarray of shape (n_cells, n_bins)
            The federation's summed :func:`rate_histograms`.

        Returns
        -------
        term : dict
            What :meth:`term` returns after the step.
        """
        point = self.read(histograms)
        rates = point["rates"]
        violation = rates[:, :, None] - rates[:, None, :] - self.tolerance
        defined = np.isfinite(violation)
        # A pair with a group whose rate is undefined here (no rows of its
        # labels: a partial_fit call without them) is no constraint for this
        # step: its multiplier is neither stepped nor used (``_term``), and
        # kept for the calls that have the group's rows.
        multipliers = np.where(
            defined,
            self.multipliers + MULTIPLIER_RATE * np.where(defined, violation, 0.0),
            self.multipliers,
        )
        np.maximum(multipliers, 0.0, out=multipliers)
        for r in range(multipliers.shape[0]):
            np.fill_diagonal(multipliers[r], 0.0)
        total = multipliers.sum()
        if total > self.bound:
            multipliers *= self.bound / total
        self._pending = (point, multipliers)
        return _term(point, multipliers, self.rates, self.n_groups)

    def commit(self):
        """Keep the last proposed step (its multipliers, rates and threshold)."""
        point, multipliers = self._pending
        self._adopt(point)
        self.gaps.append(largest_gaps(point["rates"]))
        self.multipliers = multipliers
        self._pending = None

    def measure(self, histograms):
        """Read the operating point and rates without a step (the fit's end).

        Parameters
        ----------
        histograms : ndarray of shape (n_cells, n_bins)
            The federation's summed :func:`rate_histograms`.

        Returns
        -------
        self : RateConstraint
            With ``threshold``, ``temperature`` and ``group_rates`` of these
            histograms (``gaps`` keeps the steps' only).
        """
        self._adopt(self.read(histograms))
        return self

    def _adopt(self, point):
        self._point = point
        self.threshold = point["threshold"]
        self.temperature = point["temperature"]
        self.group_rates = point["rates"]

    def term(self):
        """The term the clients add to their rows' gradients, as it stands.

        Returns
        -------
        term : dict
            ``threshold`` and ``temperature`` (logits) of the last operating
            point read, and each cell's ``coefficient`` under the current
            multipliers (:func:`term_gradient`).
        """
        return _term(self._point, self.multipliers, self.rates, self.n_groups)


def largest_gaps(rates):
    """Per rate, the largest gap between two groups' rates (0 under two groups).

    Parameters
    ----------
    rates : ndarray of shape (n_rates, n_groups)
        The groups' rates, NaN where undefined.

    Returns
    -------
    gaps : ndarray of shape (n_rates,)
        Largest minus smallest defined rate, per rate.
    """
    return np.array(
        [
            float(np.ptp(r[np.isfinite(r)])) if np.isfinite(r).sum() >= 2 else 0.0
            for r in rates
        ]
    )


def _term(point, multipliers, rates, n_groups):
    """``threshold``, ``temperature`` and each cell's ``coefficient``.

    The Lagrangian's term is ``sum_k sum_g nu_kg Rs_kg`` with ``nu_kg =
    sum_h lam_kgh - lam_khg`` and ``Rs_kg = sum_{i in g, k} w_i sigmoid_i /
    W_kg``. Per unit of a mean over all the rows (of weight ``W``), a row of
    cell ``c`` carries ``A_c = sum_k W nu_kg / W_kg`` over the rates whose
    rows include its label.
    """
    # Only the pairs of groups with defined rates here weigh in this term.
    defined = np.isfinite(point["rates"])
    multipliers = np.where(defined[:, :, None] & defined[:, None, :], multipliers, 0.0)
    balance = multipliers.sum(axis=2) - multipliers.sum(axis=1)
    weights = point["weights"]
    coefficient = np.zeros(2 * n_groups)
    for r, name in enumerate(rates):
        per_group = np.divide(
            balance[r] * point["total"],
            weights[r],
            out=np.zeros(n_groups),
            where=weights[r] > 0,
        )
        for label in _RATE_LABELS[name]:
            coefficient[label::2] += per_group
    return {
        "threshold": float(point["threshold"]),
        "temperature": float(point["temperature"]),
        "coefficient": coefficient,
    }


#: The fitted attributes of a fit under a rate constraint.
CONSTRAINT_ATTRIBUTES = (
    "multipliers_",
    "constrained_rates_",
    "operating_threshold_",
    "rate_gaps_",
    "target_rate_",
)


def constraint_request(estimator):
    """The constraint parameters an estimator holds now, as a tuple.

    Parameters
    ----------
    estimator : estimator instance
        Any estimator; a parameter it lacks reads as None.

    Returns
    -------
    request : tuple
        Its ``constraints``, ``tolerance``, ``selection_rate`` and
        ``multiplier_bound``.
    """
    return tuple(getattr(estimator, name, None) for name in CONSTRAINT_PARAMETERS)


def fairness_levers(estimator):
    """The estimator's active fairness levers, as messages name them.

    Parameters
    ----------
    estimator : estimator instance
        With ``fairness`` and, if it takes one, ``constraints``.

    Returns
    -------
    levers : str
        E.g. ``"fairness=1.0 and constraints='demographic_parity'"``; empty
        when neither acts.
    """
    levers = []
    if getattr(estimator, "fairness", 0) > 0:
        levers.append(f"fairness={estimator.fairness}")
    if getattr(estimator, "constraints", None) is not None:
        levers.append(f"constraints={estimator.constraints!r}")
    return " and ".join(levers)


def forget_constraint(estimator):
    """Drop an estimator's own rate-constraint state and fitted attributes.

    What a new fit starts from, and what a model that is no fit of its own
    (the mean of a Local federation's models) must not report.

    Parameters
    ----------
    estimator : estimator instance
        Any estimator; changed in place.

    Returns
    -------
    estimator : estimator instance
        Without ``multipliers_``, ``constrained_rates_``,
        ``operating_threshold_``, ``rate_gaps_``, ``target_rate_`` and
        ``groups_``.
    """
    for name in (*CONSTRAINT_ATTRIBUTES, "groups_", "_rate_constraint", "_rate_table"):
        estimator.__dict__.pop(name, None)
    return estimator


def constraint_fitted_attributes(constraint):
    """What a fit under a rate constraint reports, as fitted attributes.

    Parameters
    ----------
    constraint : RateConstraint
        The constraint at the fit's end (its last :meth:`~RateConstraint.measure`
        is of the fitted model).

    Returns
    -------
    attributes : dict
        ``multipliers_``, ``constrained_rates_``, ``operating_threshold_``,
        ``rate_gaps_`` and ``target_rate_``.
    """
    return {
        "multipliers_": constraint.multipliers.copy(),
        "constrained_rates_": constraint.group_rates.copy(),
        "operating_threshold_": float(constraint.threshold),
        "rate_gaps_": np.array(
            [*constraint.gaps, largest_gaps(constraint.group_rates)]
        ),
        "target_rate_": constraint.target_rate,
    }
