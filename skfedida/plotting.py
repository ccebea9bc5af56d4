"""Plots of per-client fairness and of the fairness/performance trade-off.

Display objects in the manner of sklearn's ``*Display``: build one from
results (``from_estimators``, ``from_cv_results``) or from numbers, then
``plot()`` returns the display with ``figure_`` and ``ax_`` / ``axes_`` set.
matplotlib is an optional dependency (``pip install skfedida[plot]``).
"""

from __future__ import annotations

import numpy as np

from .federated import evaluate_clients
from .metrics._registry import METRICS
from .metrics._registry import keys as metric_keys
from .postprocessing import FederatedThresholdOptimizer
from .postprocessing._threshold_optimizer import operating_points

__all__ = [
    "ClientMetricsDisplay",
    "ThresholdOptimizerDisplay",
    "TradeoffDisplay",
    "plot_threshold_optimizer",
]

_LABELS = {m.key: m.label for m in METRICS.values() if m.key}
#: ClientMetricsDisplay.from_estimators' panels.
_DEFAULT_PANELS = metric_keys(plot_default=True)


def _label(metric):
    if metric.startswith("soft_"):
        return f"{_LABELS.get(metric[5:], metric[5:])} (soft)"
    return _LABELS.get(metric, metric)


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is a test extra
        raise ImportError(
            "Plotting needs matplotlib: pip install skfedida[plot]."
        ) from exc
    return plt


def _figure_and_axes(ax, figsize):
    """The Axes to draw on and its figure: ``ax``'s, or a new one of ``figsize``."""
    if ax is None:
        return _pyplot().subplots(figsize=figsize)
    return ax.figure, ax


class ClientMetricsDisplay:
    """Per-client metrics with confidence intervals, several setups side by side.

    The paper's Figures S1-S4: one panel per metric, clients along the x axis,
    one marker per setup with its bootstrap interval as an error bar.

    Parameters
    ----------
    reports : dict of str to Bunch
        Setup name to the result of
        :func:`~skfedida.federated.evaluate_clients` (its ``per_client``
        table, with ``<metric>_low`` / ``<metric>_high`` when bootstrapped).
    metrics : sequence of str, default=None
        Metrics to draw; by default those of the first report.

    Attributes
    ----------
    figure_ : matplotlib Figure
    axes_ : ndarray of matplotlib Axes
        One per metric.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.plotting import ClientMetricsDisplay
    >>> data = make_federated_classification(900, n_clients=3, random_state=0)
    >>> model = LogisticRegression().fit(data.data, data.target)
    >>> display = ClientMetricsDisplay.from_estimators(
    ...     {"pooled": model}, data.data, data.target, clients=data.clients,
    ...     sensitive_features=data.sensitive, metrics=("roc_auc", "dpd"),
    ...     n_bootstrap=20, random_state=0)
    >>> len(display.axes_)
    2
    """

    def __init__(self, reports, *, metrics=None):
        self.reports = reports
        self.metrics = metrics

    @classmethod
    def from_estimators(
        cls,
        estimators,
        X,
        y,
        *,
        clients,
        sensitive_features,
        metrics=_DEFAULT_PANELS,
        n_bootstrap=1000,
        confidence=0.95,
        random_state=None,
        ax=None,
    ):
        """Evaluate fitted estimators per client and plot them.

        Parameters
        ----------
        estimators : dict of str to fitted estimator
            Setup name to model (e.g. ``{"FedAvg": ..., "FedIDA": ...}``).
        X : array-like or DataFrame of shape (n_samples, n_features)
            Evaluation rows, as for :func:`~skfedida.federated.evaluate_clients`.
        y : array-like of shape (n_samples,)
            Labels of the evaluation rows.
        clients : array-like of shape (n_samples,)
            Client of every evaluation row.
        sensitive_features : array-like, DataFrame or dict
            Sensitive attributes of every evaluation row.
        metrics : sequence of str, default=("roc_auc", "dpd", "dpr", "dfpr", "dppv")
            Metrics to compute and draw.
        n_bootstrap : int, default=1000
            Bootstrap resamples per client for the intervals.
        confidence : float, default=0.95
            Coverage of the intervals.
        random_state : int, RandomState instance or None, default=None
            Seed of the resamples.
        ax : array of matplotlib Axes, default=None
            One Axes per metric; new ones by default.

        Returns
        -------
        display : ClientMetricsDisplay
            The display, drawn, with ``figure_`` and ``axes_``.
        """
        reports = {
            name: evaluate_clients(
                model,
                X,
                y,
                clients=clients,
                sensitive_features=sensitive_features,
                metrics=tuple(metrics),
                n_bootstrap=n_bootstrap,
                confidence=confidence,
                random_state=random_state,
            )
            for name, model in estimators.items()
        }
        return cls(reports, metrics=metrics).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the panels.

        Parameters
        ----------
        ax : array of matplotlib Axes, default=None
            One Axes per metric; new ones by default.

        Returns
        -------
        display : ClientMetricsDisplay
            With ``figure_`` and ``axes_``.
        """
        plt = _pyplot()
        if not self.reports:
            raise ValueError("reports is empty: give at least one setup.")
        first = next(iter(self.reports.values())).per_client
        metrics = (
            list(self.metrics)
            if self.metrics is not None
            else [c for c in first.columns if not c.endswith(("_low", "_high"))]
        )
        if ax is None:
            figure, axes = plt.subplots(
                1, len(metrics), figsize=(3.2 * len(metrics), 3.2), squeeze=False
            )
            axes = axes[0]
        else:
            axes = np.atleast_1d(ax)
            if len(axes) != len(metrics):
                raise ValueError(f"ax has {len(axes)} Axes for {len(metrics)} metrics.")
            figure = axes[0].figure
        clients = list(first.index)
        positions = np.arange(len(clients))
        width = 0.8 / len(self.reports)
        for m, (axis, metric) in enumerate(zip(axes, metrics, strict=True)):
            for s, (name, report) in enumerate(self.reports.items()):
                table = report.per_client.loc[clients]
                values = table[metric].to_numpy(dtype=float)
                x = positions - 0.4 + width * (s + 0.5)
                (point,) = axis.plot(x, values, "o", label=name if m == 0 else None)
                if f"{metric}_low" in table:
                    # The interval as it is, from low to high: a bootstrap
                    # interval of a gap (max - min) need not hold its point
                    # value, which error bars relative to it cannot draw.
                    axis.vlines(
                        x,
                        table[f"{metric}_low"].to_numpy(dtype=float),
                        table[f"{metric}_high"].to_numpy(dtype=float),
                        color=point.get_color(),
                    )
            axis.set_xticks(positions, [str(c) for c in clients])
            axis.set_xlabel("client")
            axis.set_title(_label(metric))
        figure.legend(loc="upper center", ncol=len(self.reports), frameon=False)
        figure.tight_layout(rect=(0, 0, 1, 0.9))
        self.figure_, self.axes_ = figure, axes
        return self


class TradeoffDisplay:
    """Performance against disparity along a parameter, for several setups.

    The fairness/accuracy trade-off curve: one line per setup (e.g. FedAvg
    with the penalty, and FedIDA), one point per value of the parameter
    (e.g. lambda), annotated with it.

    Parameters
    ----------
    curves : dict of str to tuple
        Setup name to ``(values, performance, disparity)``: parameter values
        and the matching scores, as arrays; or to ``(values, performance,
        disparity, performance_sd, disparity_sd)``, drawn with error bars
        (e.g. the spread over seeds).
    performance_name : str, default="AUROC"
        Axis label.
    disparity_name : str, default="DPD"
        Axis label.
    parameter_name : str, default="lambda"
        Name shown next to the points.

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from skfedida.plotting import TradeoffDisplay
    >>> display = TradeoffDisplay(
    ...     {"FedIDA": ([0, 1, 2], [0.86, 0.85, 0.83], [0.30, 0.20, 0.12])}
    ... ).plot()
    >>> display.ax_.get_xlabel()
    'DPD'
    """

    def __init__(
        self,
        curves,
        *,
        performance_name="AUROC",
        disparity_name="DPD",
        parameter_name="lambda",
    ):
        self.curves = curves
        self.performance_name = performance_name
        self.disparity_name = disparity_name
        self.parameter_name = parameter_name

    @classmethod
    def from_cv_results(
        cls,
        results,
        *,
        param,
        performance="auc",
        fairness="dpd",
        negated_fairness=True,
        ax=None,
        **kwargs,
    ):
        """Build the curves from searches' ``cv_results_``.

        Parameters
        ----------
        results : dict of str to dict
            Setup name to the ``cv_results_`` of a search over ``param`` with
            a performance and a fairness scorer.
        param : str
            The searched parameter, e.g. ``"estimator__fairness"``.
        performance : str, default="auc"
            Name of the performance scorer.
        fairness : str, default="dpd"
            Name of the fairness scorer.
        negated_fairness : bool, default=True
            Whether the fairness scores are negated disparities, as from
            skfedida's disparity scorers (greater is better); if so, they are
            negated back to plot the disparity itself.
        ax : matplotlib Axes, default=None
            Where to draw.
        **kwargs : dict
            Passed to the constructor (axis labels).

        Returns
        -------
        display : TradeoffDisplay
            The display, drawn, with ``figure_`` and ``ax_``.
        """
        curves = {}
        for name, cv_results in results.items():
            values = np.asarray([p[param] for p in cv_results["params"]], dtype=float)
            order = np.argsort(values)
            disparity = np.asarray(cv_results[f"mean_test_{fairness}"], dtype=float)
            if negated_fairness:
                disparity = -disparity
            curves[name] = (
                values[order],
                np.asarray(cv_results[f"mean_test_{performance}"])[order],
                disparity[order],
            )
        return cls(curves, **kwargs).plot(ax=ax)

    @classmethod
    def from_estimators(
        cls,
        setups,
        X,
        y,
        *,
        clients,
        sensitive_features,
        performance="accuracy",
        disparity="dpd",
        threshold="prevalence",
        prevalence=None,
        min_group_size=1,
        ax=None,
        **kwargs,
    ):
        """Build the curves from fitted models, scored at a matched rate.

        Every model is scored by
        :func:`~skfedida.federated.evaluate_clients` on ``X`` and ``y``
        (the mean over the clients), its decisions taken at ``threshold``
        (by default, exactly the training prevalence's selection rate, so
        that every model selects the same share); a
        :class:`~skfedida.postprocessing.FederatedThresholdOptimizer` is
        scored on its own decisions. Several models for one parameter value
        (one per seed) give the mean and, as error bars, the sample
        standard deviation (``ddof=1``; none for a single model).

        Parameters
        ----------
        setups : dict of str to dict
            Setup name to ``{parameter value: fitted model}``, a model or a
            list of them (e.g. one per seed).
        X : array-like or DataFrame of shape (n_samples, n_features)
            Evaluation rows.
        y : array-like of shape (n_samples,)
            Their labels.
        clients : array-like of shape (n_samples,)
            Each row's client.
        sensitive_features : array-like, DataFrame or dict
            The rows' sensitive attributes.
        performance : str, default="accuracy"
            A performance key of ``evaluate_clients`` (``"roc_auc"``, ...).
        disparity : str, default="dpd"
            A disparity key (``"dfpr"``, ``"eod"``, ...).
        threshold : float, "prevalence" or dict, default="prevalence"
            ``evaluate_clients``' operating point.
        prevalence : float, default=None
            The training prevalence, for ``threshold="prevalence"`` (read
            from the model by default).
        min_group_size : int, default=1
            Groups with fewer rows are left out of the disparities.
        ax : matplotlib Axes, default=None
            Where to draw.
        **kwargs : dict
            Passed to the constructor (axis labels, ``parameter_name``).

        Returns
        -------
        display : TradeoffDisplay
            The display, drawn, with ``figure_`` and ``ax_``.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> from skfedida.datasets import make_federated_classification
        >>> from skfedida.linear_model import FairPenaltyLogisticRegression
        >>> from skfedida.plotting import TradeoffDisplay
        >>> data = make_federated_classification(1000, n_clients=2, random_state=0)
        >>> models = {
        ...     tolerance: FairPenaltyLogisticRegression(
        ...         constraints="demographic_parity", tolerance=tolerance
        ...     ).fit(data.data, data.target, sensitive_features=data.sensitive)
        ...     for tolerance in (0.0, 0.1)
        ... }
        >>> display = TradeoffDisplay.from_estimators(
        ...     {"logistic": models}, data.data, data.target, clients=data.clients,
        ...     sensitive_features=data.sensitive, prevalence=0.25,
        ...     parameter_name="tolerance")
        >>> display.ax_.get_xlabel()
        'DPD'
        """
        curves = {}
        for name, by_value in setups.items():
            values = sorted(by_value)
            scores = np.full((len(values), 4), np.nan)
            for i, value in enumerate(values):
                models = by_value[value]
                if not isinstance(models, list | tuple):
                    models = [models]
                found = np.array(
                    [
                        _matched_scores(
                            model,
                            X,
                            y,
                            clients,
                            sensitive_features,
                            (performance, disparity),
                            threshold,
                            prevalence,
                            min_group_size,
                        )
                        for model in models
                    ]
                )
                scores[i, :2] = found.mean(axis=0)
                # The seeds' sample standard deviation; no spread for one.
                if len(found) > 1:
                    scores[i, 2:] = found.std(axis=0, ddof=1)
                else:
                    scores[i, 2:] = 0.0
            curves[name] = (values, *scores.T)
        kwargs.setdefault("performance_name", _label(performance))
        kwargs.setdefault("disparity_name", _label(disparity))
        return cls(curves, **kwargs).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the curves.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        display : TradeoffDisplay
            With ``figure_`` and ``ax_``.
        """
        figure, ax = _figure_and_axes(ax, (4.5, 3.5))
        for name, curve in self.curves.items():
            if len(curve) not in (3, 5):
                raise ValueError(
                    f"curve {name!r}: (values, performance, disparity) or "
                    "(values, performance, disparity, performance_sd, "
                    f"disparity_sd) are needed; got {len(curve)} arrays."
                )
            values, performance, disparity, *spread = (
                np.asarray(a, dtype=float) for a in curve
            )
            if not values.shape == performance.shape == disparity.shape or any(
                a.shape != values.shape for a in spread
            ):
                raise ValueError(
                    f"curve {name!r}: values, performance and disparity must have "
                    "the same length."
                )
            if spread:
                ax.errorbar(
                    disparity,
                    performance,
                    yerr=spread[0],
                    xerr=spread[1],
                    fmt="o-",
                    capsize=2,
                    label=name,
                )
            else:
                ax.plot(disparity, performance, "o-", label=name)
            for value, x, y in zip(values, disparity, performance, strict=True):
                ax.annotate(
                    f"{value:g}",
                    (x, y),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=7,
                )
        ax.set_xlabel(self.disparity_name)
        ax.set_ylabel(self.performance_name)
        ax.set_title(f"trade-off along {self.parameter_name}")
        ax.legend(frameon=False)
        figure.tight_layout()
        self.figure_, self.ax_ = figure, ax
        return self


def _matched_scores(
    model, X, y, clients, sensitive_features, keys, threshold, prevalence, min_size
):
    """A model's mean over clients of two metrics, at the operating point."""
    own = isinstance(model, FederatedThresholdOptimizer)
    report = evaluate_clients(
        model,
        X,
        y,
        clients=clients,
        sensitive_features=sensitive_features,
        metrics=keys,
        threshold=0.5 if own else threshold,
        prevalence=None if own else prevalence,
        min_group_size=min_size,
        n_bootstrap=0,
    )
    return [float(report.summary["mean"][key]) for key in keys]


class ThresholdOptimizerDisplay:
    """The group thresholds a FederatedThresholdOptimizer chose, on its curves.

    fairlearn's ``plot_threshold_optimizer`` for
    :class:`~skfedida.postprocessing.FederatedThresholdOptimizer`, drawn from
    the counts the server holds (the clients' summed histograms), never from
    rows. One curve per sensitive group over the rules "positive iff score
    >= t": under a rate constraint (demographic parity, TPR or FPR parity)
    the constrained rate against the group's objective (accuracy or balanced
    accuracy within the group), with a dashed line at the rate the groups
    share; under equalized odds each group's ROC curve (FPR, TPR). Each
    group's chosen (randomised) rule is the marked point on its curve.

    Parameters
    ----------
    groups : sequence
        The sensitive groups, in the order of ``curves``.
    curves : list of (ndarray, ndarray) or None
        Per group, its curve's x and y (None: not drawn).
    points : ndarray of shape (n_groups, 2)
        Each group's chosen point.
    common_rate : float, default=nan
        The constrained rate the groups share (a dashed line; NaN: none,
        and none under equalized odds, whose shared point is marked).
    x_label, y_label : str, default=""
        Axis labels.
    equalized_odds : bool, default=False
        Whether the curves are ROC curves (the diagonal is drawn).

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes

    See Also
    --------
    plot_threshold_optimizer : The same, with fairlearn's signature.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.plotting import ThresholdOptimizerDisplay
    >>> from skfedida.postprocessing import FederatedThresholdOptimizer
    >>> data = make_federated_classification(2000, n_clients=2, random_state=0)
    >>> post = FederatedThresholdOptimizer(LogisticRegression(), random_state=0)
    >>> post = post.fit(data.data, data.target, sensitive_features=data.sensitive)
    >>> display = ThresholdOptimizerDisplay.from_estimator(post)
    >>> display.ax_.get_xlabel()
    'selection rate'
    """

    def __init__(
        self,
        groups,
        curves,
        points,
        *,
        common_rate=float("nan"),
        x_label="",
        y_label="",
        equalized_odds=False,
    ):
        self.groups = groups
        self.curves = curves
        self.points = points
        self.common_rate = common_rate
        self.x_label = x_label
        self.y_label = y_label
        self.equalized_odds = equalized_odds

    @classmethod
    def from_estimator(cls, threshold_optimizer, *, client=None, ax=None):
        """Plot a fitted optimizer's curves and chosen rules.

        Parameters
        ----------
        threshold_optimizer : FederatedThresholdOptimizer
            Fitted.
        client : client id, default=None
            One of ``clients_``: that client's own counts (and, with
            ``per_client=True``, its own rules, which then must be named).
        ax : matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        display : ThresholdOptimizerDisplay
            The display, drawn, with ``figure_`` and ``ax_``.
        """
        from .postprocessing import FederatedThresholdOptimizer

        if not isinstance(threshold_optimizer, FederatedThresholdOptimizer):
            raise TypeError(
                "threshold_optimizer must be a FederatedThresholdOptimizer; got "
                f"{type(threshold_optimizer).__name__}. For fairlearn's "
                "ThresholdOptimizer use fairlearn.postprocessing."
                "plot_threshold_optimizer."
            )
        points = operating_points(threshold_optimizer, client=client)
        return cls(
            points["groups"],
            points["curves"],
            points["points"],
            common_rate=points["common_rate"],
            x_label=points["x_label"],
            y_label=points["y_label"],
            equalized_odds=points["equalized_odds"],
        ).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the curves and the chosen points.

        Parameters
        ----------
        ax : matplotlib Axes, default=None
            Where to draw; a new figure by default.

        Returns
        -------
        display : ThresholdOptimizerDisplay
            With ``figure_`` and ``ax_``.
        """
        figure, ax = _figure_and_axes(ax, (7.5, 4))
        points = np.asarray(self.points, dtype=float)
        if len(self.curves) != len(self.groups) or points.shape != (
            len(self.groups),
            2,
        ):
            raise ValueError(
                f"{len(self.groups)} groups need as many curves and a "
                f"({len(self.groups)}, 2) array of points; got {len(self.curves)} "
                f"curves and points of shape {points.shape}."
            )
        for group, curve, point in zip(self.groups, self.curves, points, strict=True):
            if curve is None:
                continue
            name = ", ".join(map(str, group)) if isinstance(group, tuple) else group
            (line,) = ax.plot(curve[0], curve[1], "-", lw=1.5, label=str(name))
            ax.plot(*point, "o", color=line.get_color(), ms=7, mec="black")
        if self.equalized_odds:
            ax.plot([0, 1], [0, 1], ":", color="grey", lw=1)
        elif np.isfinite(self.common_rate):
            ax.axvline(
                self.common_rate,
                ls="--",
                color="grey",
                label=f"chosen rate {self.common_rate:.3f}",
            )
        ax.set_xlabel(self.x_label)
        ax.set_ylabel(self.y_label)
        # Beside the axes: with many groups a legend inside hides the curves.
        ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
        figure.tight_layout()
        self.figure_, self.ax_ = figure, ax
        return self


def plot_threshold_optimizer(threshold_optimizer, ax=None, show_plot=True):
    """Plot the rules a FederatedThresholdOptimizer chose, as fairlearn does.

    fairlearn's ``plot_threshold_optimizer`` signature, for this library's
    optimizer: per group, its trade-off curve (or ROC curve under equalized
    odds) from the clients' summed counts, and its chosen rule.

    Parameters
    ----------
    threshold_optimizer : FederatedThresholdOptimizer
        Fitted (with ``per_client=False``; for one client's rules use
        :meth:`ThresholdOptimizerDisplay.from_estimator` with ``client``).
    ax : matplotlib Axes, default=None
        Where to draw; a new figure by default.
    show_plot : bool, default=True
        Whether to call ``matplotlib.pyplot.show()``.

    Returns
    -------
    display : ThresholdOptimizerDisplay
        The display, with ``figure_`` and ``ax_``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.plotting import plot_threshold_optimizer
    >>> from skfedida.postprocessing import FederatedThresholdOptimizer
    >>> data = make_federated_classification(2000, n_clients=2, random_state=0)
    >>> post = FederatedThresholdOptimizer(
    ...     LogisticRegression(), constraints="equalized_odds", random_state=0)
    >>> post = post.fit(data.data, data.target, sensitive_features=data.sensitive)
    >>> plot_threshold_optimizer(post, show_plot=False).ax_.get_ylabel()
    'true positive rate'
    """
    display = ThresholdOptimizerDisplay.from_estimator(threshold_optimizer, ax=ax)
    if show_plot:
        _pyplot().show()
    return display
