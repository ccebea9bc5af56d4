"""Per-client evaluation at an operating point, with bootstrap intervals."""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping

import numpy as np
from scipy.special import ndtr, ndtri
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_random_state

from .._compat import (
    HasMethods,
    Hidden,
    Interval,
    StrOptions,
    num_samples,
    validate_params,
)
from .._groups import (
    SensitiveGroups,
    check_labels_complete,
    client_ids,
    encode_groups,
)
from ..exceptions import OperatingPointWarning, caller_stacklevel
from ..metrics._fairness import checked_fairness_summary, class_summary
from ..metrics._operating_point import (
    DEFAULT_N_BINS,
    N_BINS_CONSTRAINTS,
    check_threshold,
    federated_operating_point,
    training_prevalence,
)
from ..metrics._registry import METRICS, short_names
from ..metrics._scores import multiclass_brier, ovr_roc_auc

__all__ = ["evaluate_clients"]

_FAIRNESS_KEYS = short_names()
_SOFT_KEYS = {f"soft_{name}": key for name, key in _FAIRNESS_KEYS.items()}


def _performance(on):
    return tuple(m.key for m in METRICS.values() if not m.disparity and m.on == on)


#: The metrics of the decisions (each leave-one-out value computed once per
#: (group, label, decision) cell), and those of the probabilities themselves.
_DECISION_METRICS = (*_performance("decisions"), *_FAIRNESS_KEYS)
_RATE_METRICS = (*_performance("decisions"), *_performance("probabilities"))
#: Share of the rows tied at a matched threshold above which the report warns
#: that its decisions are mostly random (Adult's largest tied block is 6%).
_RANDOM_SHARE = 0.1
#: Resample weights held in memory at once (rows x resamples): 80 MB.
_BOOTSTRAP_CHUNK_CELLS = 10_000_000
_METRICS = (*_performance("ranking"), *_RATE_METRICS, *_FAIRNESS_KEYS, *_SOFT_KEYS)
_DEFAULT_METRICS = (
    *(m.key for m in METRICS.values() if m.evaluation_default),
    *(f"soft_{m.key}" for m in METRICS.values() if m.soft_evaluation_default),
)


def _metric_values(metrics, y, proba, pred, S, weight, min_group_size):
    """Metrics of one client's rows; ``y`` and ``pred`` coded 0/1.

    With more than two classes ``proba`` has a column per class and ``y`` and
    ``pred`` hold class codes: see :func:`_multiclass_values`.
    """
    if proba.ndim == 2:
        return _multiclass_values(metrics, y, proba, pred, S, weight, min_group_size)
    values = {}
    w = np.ones_like(proba) if weight is None else weight
    total = w.sum()
    if "roc_auc" in metrics:
        values["roc_auc"] = (
            roc_auc_score(y, proba, sample_weight=weight)
            if np.unique(y[w > 0]).size == 2
            else np.nan
        )
    if "selection_rate" in metrics:
        values["selection_rate"] = float(np.dot(w, pred) / total)
    if "accuracy" in metrics:
        # Decisions of a tied block are probabilities of selection: the
        # expected share of right decisions (pred == y for 0/1 decisions).
        values["accuracy"] = float(np.dot(w, y * pred + (1 - y) * (1 - pred)) / total)
    if "brier" in metrics:
        values["brier"] = float(np.dot(w, (proba - y) ** 2) / total)
    # The decisions' rates are expected counts' ratios (a randomised rule's
    # rates): the metrics' soft arithmetic, which is the hard one on 0/1.
    for keys, scores in ((_FAIRNESS_KEYS, pred), (_SOFT_KEYS, proba)):
        wanted = [m for m in metrics if m in keys]
        if not wanted:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summary = checked_fairness_summary(
                y, scores, S, weight, 1, min_group_size, True
            )
        for name in wanted:
            values[name] = summary[keys[name]]
    return values


def _binary_decisions(
    estimator,
    model,
    X,
    proba,
    y_positive,
    threshold,
    prevalence,
    sensitive_features,
    row_clients,
    client_rows,
    n_bins,
):
    """The target rate, the operating point and the decisions of a binary model.

    A post-processor's decisions are its own (its labels, with its
    ``random_state``); a fixed threshold's are ``proba > threshold`` (0/1);
    a target rate's are the expected decisions of the
    :class:`~skfedida.metrics.OperatingPoint` found from the clients'
    histograms: 1 above the tied block, its probability inside, 0 below.
    """
    if model is not estimator:  # a post-processor
        if not (isinstance(threshold, numbers.Real) and threshold == 0.5):
            raise ValueError(
                f"{type(estimator).__name__} makes its own decisions (its "
                "thresholds per group); threshold= does not apply to it."
            )
        decisions = estimator.predict(
            X, sensitive_features=sensitive_features, clients=row_clients
        )
        return None, None, decisions
    target_rate = _rate_of(threshold, model, prevalence, y_positive)
    if target_rate is None:
        return None, None, (proba > float(threshold)).astype(np.float64)
    # Each client's histograms are all the server needs to place the cut.
    point = federated_operating_point(
        [proba[rows] for rows in client_rows], target_rate, n_bins=n_bins
    )
    return target_rate, point, point.expected_decisions(proba)


def _check_multiclass_options(classes, threshold, prevalence, method):
    """Options that need one positive class are refused for more classes."""
    if not (isinstance(threshold, numbers.Real) and threshold == 0.5) or (
        prevalence is not None
    ):
        raise ValueError(
            f"The model has {classes.size} classes {classes.tolist()[:10]}: its "
            "decisions are the most probable class, so threshold= and "
            "prevalence= (operating points on one class's probability) do not "
            "apply; leave them at their defaults."
        )
    if method == "bca":
        raise ValueError(
            "method='bca' is implemented for two classes; use "
            "method='percentile' for a model of more classes."
        )


def _multiclass_values(metrics, y, proba, pred, S, weight, min_group_size):
    """Metrics of one client's rows for a model of more than two classes.

    ``roc_auc`` is the mean of the classes' one-vs-rest AUROCs (macro, over
    the classes present), each also given as ``roc_auc[<code>]``;
    ``brier`` the squared error summed over classes; the disparities of the
    decisions (the most probable class) the worst over the classes
    one-vs-rest; no selection rate or ``soft_`` disparity (they need one
    positive class: NaN).
    """
    values = {}
    w = np.ones(y.shape[0]) if weight is None else weight
    total = w.sum()
    n_classes = proba.shape[1]
    if "roc_auc" in metrics:
        # A class is scored where the rows hold it and others; a client
        # without a class gives that class NaN and the mean of the others.
        values["roc_auc"], per_class = ovr_roc_auc(y, proba, weight)
        for c, value in enumerate(per_class):
            values[f"roc_auc[{c}]"] = float(value)
    if "selection_rate" in metrics:
        values["selection_rate"] = np.nan
    if "accuracy" in metrics:
        values["accuracy"] = float(np.dot(w, pred == y) / total)
    if "brier" in metrics:
        values["brier"] = multiclass_brier(y, proba, w)
    wanted = [m for m in metrics if m in _FAIRNESS_KEYS]
    if wanted:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summary = class_summary(
                y,
                pred,
                range(n_classes),
                S,
                sample_weight=weight,
                min_group_size=min_group_size,
            )
        for name in wanted:
            values[name] = summary[_FAIRNESS_KEYS[name]]
    for name in metrics:
        if name in _SOFT_KEYS:
            values[name] = np.nan
    return values


def _loo_auroc(y, scores):
    """AUROC of every leave-one-row-out sample (Mann-Whitney, ties count 1/2)."""
    positive = y == 1
    pos, neg = np.sort(scores[positive]), np.sort(scores[~positive])
    n1, n0 = pos.size, neg.size
    loo = np.full(y.size, np.nan)
    if n1 == 0 or n0 == 0:
        return loo
    # A positive's pairs: negatives below it, and half the tied ones.
    below = np.searchsorted(neg, scores, side="left")
    tied_neg = np.searchsorted(neg, scores, side="right") - below
    wins = below + 0.5 * tied_neg
    # A negative's pairs: positives above it, and half the tied ones.
    above = n1 - np.searchsorted(pos, scores, side="right")
    tied_pos = np.searchsorted(pos, scores, side="right") - np.searchsorted(
        pos, scores, side="left"
    )
    losses = above + 0.5 * tied_pos
    total = wins[positive].sum()
    if n1 > 1:
        loo[positive] = (total - wins[positive]) / ((n1 - 1) * n0)
    if n0 > 1:
        loo[~positive] = (total - losses[~positive]) / (n1 * (n0 - 1))
    return loo


def _jackknife(metrics, y, proba, pred, S, min_group_size):
    """Every metric on every leave-one-row-out sample, by metric, per row.

    Rows that are alike for a metric leave it the same value: the decision
    metrics are computed once per (group, label, decision) cell, the ``soft_``
    ones once per (group, label, probability); AUROC and Brier in closed form.
    """
    n = y.size
    out = {}

    def by_class(keys, wanted):
        _, first, inverse = np.unique(
            keys, axis=0, return_index=True, return_inverse=True
        )
        values = {m: np.empty(first.size) for m in wanted}
        for c, i in enumerate(first):
            weight = np.ones(n)
            weight[i] = 0.0
            found = _metric_values(wanted, y, proba, pred, S, weight, min_group_size)
            for m in wanted:
                values[m][c] = found[m]
        return {m: values[m][inverse.ravel()] for m in wanted}

    decision = [m for m in metrics if m in _DECISION_METRICS]
    soft = [m for m in metrics if m in _SOFT_KEYS]
    if decision:
        out.update(by_class(np.column_stack([S, y, pred]), decision))
    if soft:
        out.update(by_class(np.column_stack([S, y, proba]), soft))
    if "brier" in metrics:
        errors = (proba - y) ** 2
        out["brier"] = (
            (errors.sum() - errors) / (n - 1) if n > 1 else np.full(n, np.nan)
        )
    if "roc_auc" in metrics:
        out["roc_auc"] = _loo_auroc(y, proba)
    return out


def _bca_interval(estimate, draws, jackknife, confidence):
    """Bias-corrected and accelerated bootstrap interval (Efron & Tibshirani 14.3).

    The arithmetic of ``scipy.stats.bootstrap(method="BCa")`` on the given
    resample values and leave-one-out values (tested against it); undefined
    resamples are left out.
    """
    draws = draws[np.isfinite(draws)]
    jackknife = jackknife[np.isfinite(jackknife)]
    if not np.isfinite(estimate) or draws.size == 0 or jackknife.size < 2:
        return np.nan, np.nan
    if np.ptp(draws) == 0:
        # A metric no resample moves (nobody selected: rate 0 everywhere):
        # the interval is that value, as the percentile one (scipy: NaN).
        return float(draws[0]), float(draws[0])
    share = (
        np.count_nonzero(draws < estimate) + np.count_nonzero(draws <= estimate)
    ) / (2 * draws.size)
    z0 = ndtri(share)
    n = jackknife.size
    spread = (n - 1) * (jackknife.mean() - jackknife)
    numerator = np.sum(spread**3) / n**3
    denominator = np.sum(spread**2) / n**2
    # No leave-one-out spread: no skew to correct (bias correction only).
    acceleration = 0.0 if denominator == 0 else numerator / (6 * denominator**1.5)
    z = ndtri((1 - confidence) / 2)
    low = ndtr(z0 + (z0 + z) / (1 - acceleration * (z0 + z)))
    high = ndtr(z0 + (z0 - z) / (1 - acceleration * (z0 - z)))
    if not (np.isfinite(low) and np.isfinite(high)):
        return np.nan, np.nan
    return tuple(np.quantile(draws, [low, high]))


def _rate_of(threshold, estimator, prevalence, y_positive):
    """Target selection rate of a ``threshold`` rule, or None for a fixed one."""
    threshold = check_threshold(threshold)
    if threshold is None:
        raise ValueError("threshold must be given; 0.5 gives predict's decisions.")
    if threshold == "prevalence":
        if prevalence is not None:
            return float(prevalence)
        prior = training_prevalence(estimator, estimator.classes_[-1])
        return float(y_positive.mean()) if prior is None else prior
    if isinstance(threshold, dict):
        return float(threshold["selection_rate"])
    return None


@validate_params(
    {
        # A classifier, or a post-processor whose decisions are its own.
        "estimator": [
            HasMethods(["predict_proba"]),
            HasMethods(["predict", "_positive_probability"]),
        ],
        "X": ["array-like", "sparse matrix"],
        "y": ["array-like"],
        # None: every row in one client.
        "clients": ["array-like", Hidden(None)],
        "sensitive_features": ["array-like", Mapping, Hidden(SensitiveGroups)],
        # Names are checked by the function, which lists the known ones.
        "metrics": ["array-like"],
        # Checked by the function, with a message listing the accepted forms.
        "threshold": "no_validation",
        "prevalence": [Interval(numbers.Real, 0, 1, closed="both"), None],
        "min_group_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_bins": N_BINS_CONSTRAINTS,
        "n_bootstrap": [Interval(numbers.Integral, 0, None, closed="left")],
        "confidence": [Interval(numbers.Real, 0, 1, closed="neither")],
        "method": [StrOptions({"percentile", "bca"})],
        "personalised": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def evaluate_clients(
    estimator,
    X,
    y,
    *,
    clients,
    sensitive_features,
    metrics=_DEFAULT_METRICS,
    threshold=0.5,
    prevalence=None,
    min_group_size=1,
    n_bins=DEFAULT_N_BINS,
    n_bootstrap=1000,
    confidence=0.95,
    method="percentile",
    personalised=True,
    random_state=None,
):
    """Per-client metrics at an operating point, with bootstrap intervals.

    For every client: AUROC, the selection rate, accuracy and Brier score, and
    the disparity metrics of the *decisions* ``proba > t`` on its rows, where
    ``t`` is the operating point chosen by ``threshold``; the ``soft_``
    metrics are the disparities of the predicted probabilities (the paper's
    E[f(A) | group]), which need no threshold. Then a bootstrap interval
    (percentile or BCa, ``method``) from ``n_bootstrap`` resamples of each
    client's rows (drawn as multinomial row weights, so each resample costs
    one weighted pass; the
    threshold stays fixed), and the mean and standard deviation across
    clients, as in the FedIDA paper's Tables 2-3 and Figures S1-S4.

    A model of more than two classes decides by its most probable class (no
    threshold): ``roc_auc`` is then the mean of the classes' one-vs-rest
    AUROCs (over the classes the client's rows hold), each also reported as
    ``roc_auc[<class>]`` (NaN for a class the client lacks; in brackets so
    that no class label can clash with the ``_low``/``_high`` of a bound);
    ``brier`` the squared error summed over the classes; the disparities
    the worst over the classes one-vs-rest (see the metrics' ``agg``);
    ``selection_rate`` and the ``soft_`` metrics, which need one positive
    class, are NaN.

    Compare models at ``threshold="prevalence"``: a model that compresses its
    scores, or shifts them toward one class, can look fair at 0.5 (it selects
    almost nobody, or almost everybody); at a matched selection rate both
    models select the same share of people, and a lower disparity means the
    selected people are spread more evenly over the groups.

    Parameters
    ----------
    estimator : fitted classifier
        A :class:`FederatedEstimator` (its personalised or local models are
        used for their clients when ``personalised=True``), any binary
        classifier with ``predict_proba``, or a fitted
        :class:`~skfedida.postprocessing.FederatedThresholdOptimizer`, whose
        decisions (with its ``random_state``) are evaluated as they are, and
        whose model's probabilities give AUROC, Brier and ``soft_`` metrics
        (``threshold`` must then stay 0.5).
    X : array-like or DataFrame of shape (n_samples, n_features)
        Evaluation rows.
    y : array-like of shape (n_samples,)
        Labels.
    clients : array-like of shape (n_samples,)
        Client of every row.
    sensitive_features : array-like, DataFrame or dict
        Sensitive attributes of every row.
    metrics : tuple of str, default=("roc_auc", "selection_rate", "brier", \
"accuracy", "dpd", "dpr", "dfpr", "dppv", "soft_dpd")
        Any of ``"roc_auc"``, ``"brier"`` (on probabilities),
        ``"selection_rate"``, ``"accuracy"``, ``"dpd"``, ``"dpr"``,
        ``"dfpr"``, ``"dppv"``, ``"dtpr"``, ``"eod"``, ``"eor"`` (on decisions
        at the threshold), or a disparity name with a ``soft_`` prefix (on
        probabilities; see the ``soft`` argument of the metrics).
    threshold : float, "prevalence" or dict, default=0.5
        The operating point, on the probability of the positive class:

        - a float in (0, 1): that threshold for every client (0.5 gives the
          decisions of ``predict``);
        - ``"prevalence"``: the operating point at which the federation
          selects exactly its training prevalence of these rows
          (``prevalence``, else the estimator's ``class_prior_``, else the
          share of positives in ``y``). It is found as a server would, from
          the clients' summed score histograms, narrowed where the scores
          bunch (:func:`~skfedida.metrics.federated_operating_point`), so no
          score leaves its client. Rows tied at the threshold (one score
          shared by many rows, as on Adult) are each selected with the
          probability that makes the share exact, and the metrics are the
          expected rates of that randomised rule (no draw, so no seed noise):
          every model compared at the same rate selects the same share, and
          none looks fairer by selecting fewer people;
        - ``{"selection_rate": r}``: the same, for the overall rate r.
    prevalence : float in [0, 1], default=None
        Training prevalence for ``threshold="prevalence"``.
    min_group_size : int, default=1
        Groups whose rate rests on fewer rows are left out of the disparities,
        as in the metrics.
    n_bins : int, default=1000
        Bins of the shared score grid for ``"prevalence"`` and
        ``"selection_rate"`` thresholds.
    n_bootstrap : int, default=1000
        Bootstrap resamples per client; 0 skips the intervals.
    confidence : float, default=0.95
        Coverage of the intervals.
    method : {"percentile", "bca"}, default="percentile"
        How the interval is read from the resamples: their quantiles
        (``"percentile"``), or bias-corrected and accelerated (``"bca"``,
        Efron 1987; the arithmetic of ``scipy.stats.bootstrap``), which
        corrects the bias of statistics such as the disparities
        (max - min over groups, which resampling inflates: their percentile
        interval can sit above the point estimate). BCa needs every metric
        on every leave-one-row-out sample: computed once per (group, label,
        decision) cell for the decision metrics, in closed form for AUROC
        and Brier, and once per row for the ``soft_`` metrics (slower).
    personalised : bool, default=True
        Pass ``clients=`` to a FederatedEstimator's predictions.
    random_state : int, RandomState instance or None, default=None
        Seed of the resamples.

    Returns
    -------
    report : :class:`~sklearn.utils.Bunch`
        ``per_client``: a DataFrame indexed by client with, for each metric,
        its value and ``<metric>_low`` / ``<metric>_high``; ``summary``: a
        DataFrame with the ``mean`` and ``sd`` of each metric across the
        clients where it is defined, and ``n_clients``, how many those are
        (a client without a class, or without predicted positives, has no
        TPR or PPV gap: the mean covers the others, and says so);
        ``threshold``: the probability threshold used (for a target rate,
        the lower edge of the tied block; NaN for a post-processor);
        ``target_rate``: the selection rate it was chosen for (None for a
        fixed threshold); ``achieved_rate``: the share of all rows the
        decisions select (the target, for a target rate);
        ``tie_probability`` and ``tied_share``: the probability with which a
        row of the tied block is selected, and the share of rows in the block
        (None for a fixed threshold); ``operating_point``: the
        :class:`~skfedida.metrics.OperatingPoint` (None for a fixed
        threshold), whose ``decisions`` give 0/1 decisions for deployment;
        ``draws``: the metrics of every bootstrap resample, a DataFrame with
        a (client, resample) index (None when ``n_bootstrap=0``). The
        resamples depend only on ``random_state`` and the number of each
        client's rows, so two models evaluated on the same rows with the same
        integer ``random_state`` see the same resamples, and the difference of
        their draws is a paired bootstrap of the difference between the
        models (``None``, or one RandomState instance passed to both calls,
        gives each call other resamples).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.federated import evaluate_clients
    >>> data = make_federated_classification(1200, n_clients=3, random_state=0)
    >>> model = LogisticRegression().fit(data.data, data.target)
    >>> report = evaluate_clients(model, data.data, data.target,
    ...                           clients=data.clients,
    ...                           sensitive_features=data.sensitive,
    ...                           threshold="prevalence",
    ...                           n_bootstrap=50, random_state=0)
    >>> list(report.summary.columns)
    ['mean', 'sd', 'n_clients']
    >>> bool(abs(report.target_rate - data.target.mean()) < 1e-12)
    True
    >>> bool(abs(report.achieved_rate - report.target_rate) < 1e-12)  # exactly
    True
    >>> report.draws.shape[0]  # 3 clients x 50 resamples
    150
    """
    import pandas as pd
    from sklearn.utils import Bunch

    unknown = sorted(set(metrics) - set(_METRICS))
    if unknown:
        raise ValueError(f"metrics {unknown} are not among {list(_METRICS)}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}.")
    if prevalence is not None and not (
        isinstance(prevalence, numbers.Real) and 0 <= prevalence <= 1
    ):
        raise ValueError(f"prevalence must be in [0, 1]; got {prevalence!r}.")
    if not (isinstance(min_group_size, numbers.Integral) and min_group_size >= 1):
        raise ValueError(f"min_group_size must be an int >= 1; got {min_group_size!r}.")
    n_samples = num_samples(X)
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n_samples:
        raise ValueError(
            f"y must hold one label per row of X: {n_samples} rows, got shape "
            f"{y.shape}."
        )
    check_labels_complete(y)
    classes = np.asarray(estimator.classes_)
    multiclass = classes.size > 2
    if multiclass:
        _check_multiclass_options(classes, threshold, prevalence, method)
    unknown = ~np.isin(y, classes)
    if unknown.any():
        raise ValueError(
            f"y has labels {np.unique(y[unknown]).tolist()[:5]} that are not the "
            f"model's classes {classes.tolist()} (a label of another type, such "
            "as '1' for 1?)."
        )
    ids, codes = client_ids(clients, n_samples)
    # Every row's group, encoded once (and checked: length, missing values).
    group_codes = encode_groups(sensitive_features, n_samples=n_samples).codes
    post_processed = not hasattr(estimator, "predict_proba")
    model = estimator.estimator_ if post_processed else estimator
    kwargs = {}
    # A post-processor decides with the global model: its probabilities too.
    if personalised and not post_processed and hasattr(model, "client_estimators_"):
        kwargs["clients"] = ids[codes]
    client_rows = [np.flatnonzero(codes == k) for k in range(ids.size)]
    cut = np.nan  # no threshold: a post-processor's or the most probable class
    if multiclass:
        # Decisions are the most probable class; y and pred as class codes.
        proba = model.predict_proba(X, **kwargs)
        y_positive = np.searchsorted(classes, y)
        pred = np.argmax(proba, axis=1)
        target_rate, point, achieved_rate = None, None, np.nan
        if "roc_auc" in metrics:
            metrics = (*metrics, *(f"roc_auc[{c}]" for c in range(classes.size)))
    else:
        proba = model.predict_proba(X, **kwargs)[:, 1]
        y_positive = (y == classes[-1]).astype(np.float64)
        target_rate, point, pred = _binary_decisions(
            estimator,
            model,
            X,
            proba,
            y_positive,
            threshold,
            prevalence,
            sensitive_features,
            ids[codes],
            client_rows,
            n_bins,
        )
        if post_processed:
            pred = (pred == classes[-1]).astype(np.float64)
        elif point is None:
            cut = float(threshold)
        else:
            cut = point.threshold
        achieved_rate = float(pred.mean())
    # Expected decisions select the target share exactly; what can still
    # mislead is a target met by drawing among most of the rows.
    if point is not None and (
        point.tied_share > _RANDOM_SHARE and 0 < point.tie_probability < 1
    ):
        warnings.warn(
            f"{point.tied_share:.1%} of the rows are tied at the threshold "
            f"{point.threshold:.4g}, each selected with probability "
            f"{point.tie_probability:.3f} to meet the target rate "
            f"{target_rate:.3f}: the model does not rank them, so those "
            "decisions are drawn at random and the disparities are largely "
            "those of random selection (a model that gives most rows one "
            "score). Read them with AUROC and tied_share.",
            OperatingPointWarning,
            stacklevel=caller_stacklevel(),
        )
    rng = check_random_state(random_state)
    tail = (1 - confidence) / 2
    rows, all_draws = [], []
    for client, idx in zip(ids, client_rows, strict=True):
        y_k, proba_k, pred_k = y_positive[idx], proba[idx], pred[idx]
        S_k = group_codes[idx]
        row = {
            "client": client,
            **_metric_values(metrics, y_k, proba_k, pred_k, S_k, None, min_group_size),
        }
        if n_bootstrap:
            draws = {m: [] for m in metrics}
            # Drawn in chunks of bounded size (2M rows x 1000 resamples would
            # be 16 GB at once); consecutive draws from one stream are the
            # draws of one call, so the intervals do not depend on the chunks.
            chunk = max(1, _BOOTSTRAP_CHUNK_CELLS // idx.size)
            for start in range(0, n_bootstrap, chunk):
                weights = rng.multinomial(
                    idx.size,
                    np.full(idx.size, 1 / idx.size),
                    size=min(chunk, n_bootstrap - start),
                ).astype(float)
                for weight in weights:
                    values = _metric_values(
                        metrics, y_k, proba_k, pred_k, S_k, weight, min_group_size
                    )
                    for m in metrics:
                        draws[m].append(values[m])
            all_draws.append(
                pd.DataFrame(draws).set_index(
                    pd.MultiIndex.from_product(
                        [[client], range(n_bootstrap)], names=["client", "resample"]
                    )
                )
            )
            jackknife = (
                _jackknife(metrics, y_k, proba_k, pred_k, S_k, min_group_size)
                if method == "bca"
                else None
            )
            for m in metrics:
                values_m = np.asarray(draws[m], dtype=float)
                if method == "bca":
                    low, high = _bca_interval(
                        row[m], values_m, jackknife[m], confidence
                    )
                else:
                    finite = values_m[np.isfinite(values_m)]
                    low, high = (
                        np.quantile(finite, [tail, 1 - tail])
                        if finite.size
                        else (np.nan, np.nan)
                    )
                row[f"{m}_low"], row[f"{m}_high"] = low, high
        rows.append(row)
    per_client = pd.DataFrame(rows).set_index("client")
    values = per_client[list(metrics)]
    # Means over the clients whose metric is defined: n_clients says how many.
    summary = pd.DataFrame(
        {
            "mean": values.mean(),
            "sd": values.std(ddof=1),
            "n_clients": values.notna().sum(),
        }
    )
    draws = pd.concat(all_draws) if all_draws else None
    if multiclass:
        # Per-class AUROC columns are named by the class labels.
        names = {
            f"roc_auc[{c}]{suffix}": f"roc_auc[{label}]{suffix}"
            for c, label in enumerate(classes.tolist())
            for suffix in ("", "_low", "_high")
        }
        per_client = per_client.rename(columns=names)
        summary = summary.rename(index=names)
        draws = None if draws is None else draws.rename(columns=names)
    return Bunch(
        per_client=per_client,
        summary=summary,
        threshold=cut,
        target_rate=target_rate,
        achieved_rate=achieved_rate,
        tie_probability=None if point is None else point.tie_probability,
        tied_share=None if point is None else point.tied_share,
        operating_point=point,
        draws=draws,
    )
