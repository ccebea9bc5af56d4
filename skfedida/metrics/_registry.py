"""The one registry of metric names: every list of metrics derives from it.

The scorers' names and short names, the disparities a client reports each
round (``history_``, a Flower client's evaluation reply and the range the
server checks it against), ``evaluate_clients``' metrics and defaults, the
plots' labels, FairFed's metrics and its gap from counts, and the
threshold optimizer's constrained rates all read :data:`METRICS` and
:data:`RATES`. The tests compare every hand-written list in the docstrings
with it, so a metric added here and not there fails them.

It imports only numpy and names functions instead of holding them: the
metric functions import it, and nothing outside ``skfedida.metrics`` does
the sums.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Rate:
    """A per-group rate: a ratio of two of the group sums.

    The sums are ``_class_group_sums``' (weighted, except ``n*``); FairFed's
    unweighted counts map onto them through ``_FROM_COUNTS``.
    """

    #: Its name (a ``group_report`` column).
    name: str
    #: How messages name it ("FPR: no negatives").
    label: str
    #: The group sums it divides.
    numerator: str
    denominator: str
    #: The rows the denominator rests on, counted whatever their weight: the
    #: count ``min_group_size`` is judged on.
    count: str
    #: Why it is undefined where the denominator is 0.
    undefined: str


#: Every rate, in ``group_report``'s column order.
RATES = {
    rate.name: rate
    for rate in (
        Rate("base_rate", "base rate", "positive", "weight", "n", "empty group"),
        Rate(
            "selection_rate",
            "selection rate",
            numerator="predicted",
            denominator="weight",
            count="n",
            undefined="empty group",
        ),
        Rate(
            "false_positive_rate",
            "FPR",
            numerator="false_positive",
            denominator="negative",
            count="n_negative",
            undefined="no negatives",
        ),
        Rate(
            "true_positive_rate",
            "TPR",
            numerator="true_positive",
            denominator="positive",
            count="n_positive",
            undefined="no positives",
        ),
        Rate(
            "positive_predictive_value",
            "PPV",
            numerator="true_positive",
            denominator="predicted",
            count="n_predicted",
            undefined="no predicted positives",
        ),
    )
}

#: Equalized odds compares both rates of the ROC curve (difference and ratio).
_EQUALIZED_ODDS_RATES = ("true_positive_rate", "false_positive_rate")


@dataclass(frozen=True)
class Metric:
    """One metric: its names, direction, and where it applies."""

    #: Its name: a function of ``skfedida.metrics`` for a disparity (and
    #: ``fairness_summary``'s key), else the key of a report.
    name: str
    #: The short key of reports, ``history_`` (``val_<key>``), plots,
    #: FairFed, and the short names a scorer accepts; None: none.
    key: str | None
    #: Its name on a plot's axis.
    label: str
    #: Whether a greater value is better (None: neither, a selection rate).
    greater_is_better: bool | None
    #: What it is computed from: ``"decisions"`` (at a threshold),
    #: ``"probabilities"`` (their values) or ``"ranking"`` (their order).
    on: str
    #: A disparity's rates compared between groups, and how: their
    #: ``"difference"`` (max - min) or ``"ratio"`` (min / max); the worst
    #: over several rates. Empty and None for a performance metric.
    rates: tuple = ()
    kind: str | None = None
    #: The function of ``skfedida.metrics`` computing it, if any.
    function: str | None = None
    #: A key of ``fairness_summary``.
    summary: bool = False
    #: Reported by every client each round on its held-out rows
    #: (``val_<key>``), and of a Per-FedAvg client's personalised model
    #: (``val_personal_<key>``).
    reported: bool = False
    personal: bool = False
    #: In ``evaluate_clients``' default metrics, and with the ``soft_``
    #: prefix too; in ``ClientMetricsDisplay``'s default panels.
    evaluation_default: bool = False
    soft_evaluation_default: bool = False
    plot_default: bool = False
    #: Largest value a client may report (the smallest is 0).
    upper: float = 1.0
    #: The ``FederatedThresholdOptimizer`` constraint that equalises it.
    constraint: str | None = None
    #: Why FairFed cannot weigh clients by it ("" when it can).
    not_fairfed: str = ""

    @property
    def disparity(self):
        """Whether it compares groups (else it measures one set of rows).

        Returns
        -------
        disparity : bool
            True when it has rates to compare between groups.
        """
        return bool(self.rates)


def _disparity(name, key, rates, kind="difference", greater_is_better=False, **where):
    return Metric(
        name,
        key,
        label=(key or name).upper(),
        greater_is_better=greater_is_better,
        on="decisions",
        rates=rates,
        kind=kind,
        function=name,
        **where,
    )


_RATIO = (
    "a ratio: FairFed weighs a client by the distance between its gap and "
    "the federation's (Ezzeldin et al. define it for differences)"
)

#: Every metric, in the order of the lists derived from it (reports,
#: messages, docstrings).
METRICS = {
    metric.name: metric
    for metric in (
        Metric(
            "roc_auc",
            "roc_auc",
            "AUROC",
            greater_is_better=True,
            on="ranking",
            reported=True,
            personal=True,
            evaluation_default=True,
            plot_default=True,
        ),
        Metric(
            "selection_rate",
            "selection_rate",
            "selection rate",
            greater_is_better=None,
            on="decisions",
            function="selection_rate",
            reported=True,
            evaluation_default=True,
        ),
        # Of more than two classes, the squared error summed over classes
        # reaches 2.
        Metric(
            "brier",
            "brier",
            "Brier",
            greater_is_better=False,
            on="probabilities",
            reported=True,
            evaluation_default=True,
            upper=2.0,
        ),
        Metric(
            "accuracy",
            "accuracy",
            "accuracy",
            greater_is_better=True,
            on="decisions",
            evaluation_default=True,
        ),
        _disparity(
            "demographic_parity_difference",
            "dpd",
            ("selection_rate",),
            summary=True,
            reported=True,
            personal=True,
            evaluation_default=True,
            soft_evaluation_default=True,
            plot_default=True,
            constraint="demographic_parity",
        ),
        _disparity(
            "demographic_parity_ratio",
            "dpr",
            ("selection_rate",),
            "ratio",
            greater_is_better=True,
            summary=True,
            reported=True,
            evaluation_default=True,
            plot_default=True,
            not_fairfed=_RATIO,
        ),
        _disparity(
            "false_positive_rate_difference",
            "dfpr",
            ("false_positive_rate",),
            summary=True,
            reported=True,
            evaluation_default=True,
            plot_default=True,
            constraint="false_positive_rate_parity",
        ),
        _disparity(
            "true_positive_rate_difference",
            "dtpr",
            ("true_positive_rate",),
            summary=True,
            constraint="true_positive_rate_parity",
        ),
        _disparity(
            "positive_predictive_value_difference",
            "dppv",
            ("positive_predictive_value",),
            summary=True,
            reported=True,
            evaluation_default=True,
            plot_default=True,
            not_fairfed=(
                "its rows are the model's own positive decisions, so the groups "
                "min_group_size keeps change with every round's model"
            ),
        ),
        _disparity(
            "equalized_odds_difference",
            "eod",
            _EQUALIZED_ODDS_RATES,
            summary=True,
            constraint="equalized_odds",
        ),
        _disparity(
            "equalized_odds_ratio",
            "eor",
            _EQUALIZED_ODDS_RATES,
            "ratio",
            greater_is_better=True,
            not_fairfed=_RATIO,
        ),
        # fairlearn's name for the TPR difference: the same value as "dtpr",
        # so no short key of its own (a report would hold it twice).
        _disparity("equal_opportunity_difference", None, ("true_positive_rate",)),
    )
}

#: The metrics that compare groups, by name.
DISPARITIES = {name: m for name, m in METRICS.items() if m.disparity}

#: The constraints that make a rate equal across groups, by name, and the
#: rates each compares (the threshold optimizer's and the models' rate
#: constraints read them here).
CONSTRAINTS = {m.constraint: m.rates for m in DISPARITIES.values() if m.constraint}

#: fairlearn's names for the same rules: a group's TNR is 1 - its FPR and its
#: FNR 1 - its TPR, so equal TNRs (FNRs) are equal FPRs (TPRs), within the
#: same tolerance; its selection rate parity is demographic parity.
CONSTRAINT_ALIASES = {
    "selection_rate_parity": "demographic_parity",
    "true_negative_rate_parity": "false_positive_rate_parity",
    "false_negative_rate_parity": "true_positive_rate_parity",
}

#: A client's per-round reports are ``val_<key>`` (``history_``, Flower), and
#: a Per-FedAvg client's of its personalised model ``val_personal_<key>``.
VALIDATION_PREFIX = "val_"
PERSONAL_PREFIX = "val_personal_"


def share_key(label):
    """Name the report key of a class's share of the decisions.

    Parameters
    ----------
    label : object
        A class label (of a model with more than two classes).

    Returns
    -------
    key : str
        ``share[<label>]``.
    """
    return f"share[{label}]"


def share_label(key):
    """Read the label of a :func:`share_key`.

    Parameters
    ----------
    key : str
        A report key.

    Returns
    -------
    label : str or None
        The label, as a string; None when ``key`` is no share.
    """
    if key.startswith("share[") and key.endswith("]"):
        return key[len("share[") : -1]
    return None


def short_names():
    """Map each disparity's short key to its name (the scorers' short names).

    Returns
    -------
    names : dict of str to str
        Short key to name, in the registry's order.
    """
    return {m.key: name for name, m in DISPARITIES.items() if m.key}


def keys(**where):
    """List the keys of the metrics whose fields equal ``where``.

    Parameters
    ----------
    **where : dict
        Field of :class:`Metric` to the value it must have.

    Returns
    -------
    keys : tuple of str
        Their keys, in the registry's order.
    """
    return tuple(
        m.key
        for m in METRICS.values()
        if m.key and all(getattr(m, field) == value for field, value in where.items())
    )


def fairfed_metrics():
    """List the short keys FairFed can weigh clients by.

    Returns
    -------
    keys : tuple of str
        The differences without a ``not_fairfed`` reason, in order.
    """
    return tuple(
        m.key
        for m in DISPARITIES.values()
        if m.key and m.kind == "difference" and not m.not_fairfed
    )


#: FairFed's per-group counts of one client, in the order Flower sends them.
COUNTS = ("n", "selected", "n_positive", "true_positive")


#: FairFed's unweighted counts as the group sums the rates divide: decisions
#: are 0/1 and rows unweighted, so ``selected`` is both the predicted
#: positives and the rows they rest on. Each is read only when a rate needs
#: it (a report for "dpd" may hold rows and decisions alone).
_FROM_COUNTS = {
    "weight": lambda c: c["n"],
    "n": lambda c: c["n"],
    "positive": lambda c: c["n_positive"],
    "n_positive": lambda c: c["n_positive"],
    "negative": lambda c: c["n"] - c["n_positive"],
    "n_negative": lambda c: c["n"] - c["n_positive"],
    "predicted": lambda c: c["selected"],
    "n_predicted": lambda c: c["selected"],
    "true_positive": lambda c: c["true_positive"],
    "false_positive": lambda c: c["selected"] - c["true_positive"],
}


def count_gap(metric, counts, totals=None, min_group_size=1):
    """Measure FairFed's gap of a report: the largest minus smallest group rate.

    Only over the groups whose rate is defined in ``counts`` and rests on at
    least ``min_group_size`` rows in ``totals`` (the federation's summed
    counts; default ``counts``). With fewer than two such groups nothing
    differs: 0. Of several rates, the largest gap.

    Parameters
    ----------
    metric : str
        A key of :func:`fairfed_metrics`.
    counts, totals : dict of ndarray
        Per-group :data:`COUNTS`.
    min_group_size : int, default=1
        Fewest rows behind a kept group's rate.

    Returns
    -------
    gap : float
        The gap, in [0, 1].
    """
    (entry,) = (m for m in DISPARITIES.values() if m.key == metric)
    totals = counts if totals is None else totals
    gaps = []
    for name in entry.rates:
        rate = RATES[name]
        hits = _FROM_COUNTS[rate.numerator](counts)
        n = _FROM_COUNTS[rate.denominator](counts)
        defined = n > 0
        rates = np.divide(hits, n, out=np.zeros_like(hits), where=defined)
        defined = defined & (_FROM_COUNTS[rate.count](totals) >= min_group_size)
        gaps.append(float(np.ptp(rates[defined])) if defined.sum() >= 2 else 0.0)
    return max(gaps)
