"""Scorers for model selection with fairness metrics.

The scorers are sklearn scorers (subclasses of sklearn's private scorer base),
so that ``GridSearchCV``, ``cross_validate`` and multi-metric scoring treat
them like their own: cached predictions, ``response_method``, metadata routing.
They request ``sensitive_features`` by default, so with
``sklearn.set_config(enable_metadata_routing=True)`` a user passes
``fit(X, y, sensitive_features=S)`` to a search and every scorer call gets
exactly the slice of S of its test fold. With routing off, a scorer built with
``sensitive=[columns]`` reads S from columns of X instead.
"""

from __future__ import annotations

import numbers
from collections.abc import Hashable
from functools import partial
from inspect import signature

import numpy as np
from sklearn.metrics import get_scorer
from sklearn.utils.metadata_routing import get_routing_for_object

from .._compat import (
    BaseScorer,
    Interval,
    MetadataRequest,
    MethodMetadataRequest,
    Scorer,
    StrOptions,
    cached_call,
    raise_for_params,
    validate_params,
)
from .._groups import resolve_sensitive
from ._fairness import _FUNCTIONS
from ._operating_point import (
    DEFAULT_N_BINS,
    N_BINS_CONSTRAINTS,
    _check_n_bins,
    check_threshold,
    federated_operating_point,
    training_prevalence,
)
from ._registry import DISPARITIES, short_names

__all__ = ["FAIRNESS_METRICS", "make_fairness_scorer", "make_tradeoff_scorer"]

#: Fairness metrics by name, with whether a greater value is better.
FAIRNESS_METRICS = {
    name: (_FUNCTIONS[name], metric.greater_is_better)
    for name, metric in DISPARITIES.items()
}

_ALIASES = short_names()

_RESPONSE_METHODS = ("predict", "predict_proba")

# Constraints both scorer factories share. The values of ``metric``,
# ``response_method``, ``weight`` and ``performance`` are checked by the
# factories, and ``threshold`` (any type) by ``check_threshold``, with
# messages that say what is accepted.
_SENSITIVE = [str, numbers.Integral, "array-like", None]
_POS_LABEL = [Hashable, None]
_MIN_GROUP_SIZE = [Interval(numbers.Integral, 1, None, closed="left")]


def _missing_sensitive_error(scorer):
    return ValueError(
        f"{scorer!r} needs the sensitive attributes. Pass sensitive_features= "
        "to the scorer (in a search: enable metadata routing with "
        "sklearn.set_config(enable_metadata_routing=True) and pass "
        "fit(X, y, sensitive_features=S)), or build the scorer with "
        "sensitive=[columns of X]."
    )


class _NumericMetric:
    """A metric whose value must be a real number.

    sklearn's scorer multiplies the metric's value by its sign, which turns a
    string into ``''`` (and a list into ``[]``) without an error, so a search
    would rank its candidates by a value that is no number. A class (not a
    closure) so that scorers pickle; ``__wrapped__`` keeps the metric's
    signature, whose ``pos_label`` default sklearn reads.
    """

    def __init__(self, metric, name):
        self.metric = metric
        self.name = name
        self.__wrapped__ = metric

    def __call__(self, *args, **kwargs):
        value = self.metric(*args, **kwargs)
        if not (
            isinstance(value, numbers.Real)
            or (
                isinstance(value, (np.ndarray, np.generic))
                and value.ndim == 0
                and value.dtype.kind in "biuf"
            )
        ):
            raise TypeError(
                f"The fairness metric {self.name!r} returned {value!r} of type "
                f"{type(value).__name__}; a scorer needs a real number. Make "
                "the metric return a float."
            )
        return value


class SensitiveCallMixin:
    """Direct calls of a scorer that accept ``sensitive_features``.

    ``sensitive_features`` is the scorer's own argument, so it is accepted even
    with metadata routing off; anything else follows sklearn's rules.
    """

    def _accept_sample_weight(self):
        return True

    def set_score_request(self, **kwargs):
        """Set the metadata the scorer requests, keeping its defaults.

        sklearn's scorers start from an empty request here, which dropped
        this scorer's default request of ``sensitive_features`` as soon as a
        user asked for ``sample_weight`` too; what is not named keeps its
        request (as the estimators' ``set_*_request`` do).

        Parameters
        ----------
        **kwargs : dict
            ``param_name=alias``, alias one of True, False, None or a str.

        Returns
        -------
        self : object
            The scorer.
        """
        current = self._get_metadata_request().score.requests
        super().set_score_request(**kwargs)
        for param, alias in current.items():
            if param not in kwargs and alias is not None:
                self._metadata_request.score.add_request(param=param, alias=alias)
        return self

    def __call__(
        self,
        estimator,
        X,
        y_true,
        *,
        sample_weight=None,
        sensitive_features=None,
        **kwargs,
    ):
        """Score ``estimator`` on ``X`` against ``y_true``."""
        raise_for_params(kwargs, self, None)
        if sample_weight is not None:
            kwargs["sample_weight"] = sample_weight
        if sensitive_features is not None:
            kwargs["sensitive_features"] = sensitive_features
        return self._score(partial(cached_call, None), estimator, X, y_true, **kwargs)


class _AtThreshold:
    """A label metric applied to the decisions ``score > t`` of an operating point.

    A class (not a closure) so that scorers pickle.
    """

    def __init__(self, metric, threshold, n_bins):
        self.metric = metric
        self.threshold = threshold
        self.n_bins = n_bins
        self.__name__ = getattr(metric, "__name__", repr(metric))

    def __call__(
        self, y_true, y_score, *, sensitive_features, sample_weight=None, **kwargs
    ):
        # The scorer's own keys, kept out of the signature so that metadata
        # routing does not list them as metadata a user could pass.
        positive_label = kwargs.pop("positive_label")
        flip = kwargs.pop("flip", False)
        rate = kwargs.pop("rate", None)
        kwargs.pop("pos_label", None)
        y_score = np.asarray(y_score, dtype=np.float64)
        if flip:
            # The scores are P(classes_[-1]); the favourable label is the other.
            y_score = 1.0 - y_score
        positive = (np.asarray(y_true) == positive_label).astype(np.int64)
        if rate is None:
            decisions = (y_score > self.threshold).astype(np.int64)
        else:
            point = federated_operating_point(
                [y_score],
                rate,
                n_bins=self.n_bins,
                sample_weights=None if sample_weight is None else [sample_weight],
            )
            if "soft" in signature(self.metric).parameters:
                # The exact rate: the randomised rule's expected rates.
                decisions = point.expected_decisions(y_score)
                kwargs["soft"] = True
            else:
                # A metric of labels only: 0/1 decisions, the tied rows drawn
                # with a fixed seed so that a search's scores repeat.
                decisions = point.decisions(y_score, random_state=0)
        return self.metric(
            positive,
            decisions,
            sensitive_features=sensitive_features,
            sample_weight=sample_weight,
            pos_label=1,
            **kwargs,
        )


class _FairnessScorer(SensitiveCallMixin, Scorer):
    """A scorer of a fairness metric; built by :func:`make_fairness_scorer`."""

    __metadata_request__score = {"sensitive_features": True}

    def __init__(
        self,
        score_func,
        sign,
        kwargs,
        response_method,
        sensitive,
        name,
        threshold=None,
        positive_label=None,
    ):
        super().__init__(
            _NumericMetric(score_func, name), sign, kwargs, response_method
        )
        self._sensitive = sensitive
        self._name = name
        self._threshold = threshold
        # Kept out of ``_kwargs`` for threshold scorers: sklearn caches
        # predict_proba by method name alone, so the scorer always reads the
        # column of classes_[-1] and turns it around itself.
        self._positive_label = positive_label

    def __repr__(self):
        options = "".join(
            f", {k}={v!r}" for k, v in self._kwargs.items() if k != "soft"
        )
        sensitive = (
            "" if self._sensitive is None else f", sensitive={self._sensitive!r}"
        )
        if self._threshold is not None:
            if self._positive_label is not None:
                options += f", pos_label={self._positive_label!r}"
            return (
                f"make_fairness_scorer({self._name!r}, "
                f"threshold={self._threshold!r}{sensitive}{options})"
            )
        return (
            f"make_fairness_scorer({self._name!r}, "
            f"response_method={self._response_method!r}{sensitive}{options})"
        )

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        _, sensitive_features = resolve_sensitive(
            X,
            sensitive_features=kwargs.pop("sensitive_features", None),
            sensitive=self._sensitive,
            drop=False,
        )
        if sensitive_features is None:
            raise _missing_sensitive_error(self)
        classes = getattr(estimator, "classes_", ())
        if len(classes) > 2 and (
            self._threshold is not None or self._response_method != "predict"
        ):
            raise ValueError(
                f"{self!r} scores the probability of one class, but the "
                f"estimator has {len(classes)} classes: use "
                "response_method='predict', whose decisions the metric compares "
                "one class against the rest for every class."
            )
        if self._threshold is not None:
            last = estimator.classes_[-1]
            positive = self._positive_label
            if positive is None:
                # The metrics' rule: only {0, 1} or {-1, 1} name the favourable
                # label themselves; "approved"/"denied" must not be guessed.
                numeric = np.asarray(classes)
                if not (
                    numeric.dtype.kind in "biuf" and np.isin(numeric, [-1, 0, 1]).all()
                ):
                    raise ValueError(
                        f"{self!r} scores decisions for the favourable label, and "
                        f"the estimator's classes {list(classes)} do not say which "
                        "one it is: pass pos_label= to make_fairness_scorer (or "
                        "make_tradeoff_scorer)."
                    )
                positive = last
            kwargs["positive_label"] = positive
            kwargs["flip"] = bool(positive != last)
            if self._threshold == "prevalence":
                prevalence = training_prevalence(estimator, positive)
                # The scored rows' own share, weighted as the histogram of
                # their scores is, when the estimator does not know its own.
                kwargs["rate"] = (
                    float(
                        np.average(
                            np.asarray(y_true) == positive,
                            weights=kwargs.get("sample_weight"),
                        )
                    )
                    if prevalence is None
                    else prevalence
                )
            elif isinstance(self._threshold, dict):
                kwargs["rate"] = float(self._threshold["selection_rate"])
        return super()._score(
            method_caller,
            estimator,
            X,
            y_true,
            sensitive_features=sensitive_features,
            **kwargs,
        )


def _resolve_metric(metric):
    if callable(metric) and not isinstance(metric, str):
        name = getattr(metric, "__name__", repr(metric))
        known = FAIRNESS_METRICS.get(name)
        if known is not None and known[0] is metric:
            return metric, known[1], name
        return metric, False, name
    name = _ALIASES.get(metric, metric)
    if name not in FAIRNESS_METRICS:
        raise ValueError(
            f"metric must be one of {sorted(FAIRNESS_METRICS)} (or the short names "
            f"{sorted(_ALIASES)}), or a callable; got {metric!r}."
        )
    func, greater_is_better = FAIRNESS_METRICS[name]
    return func, greater_is_better, name


@validate_params(
    {
        "metric": [str, callable],
        "response_method": [str],
        "sensitive": _SENSITIVE,
        "pos_label": _POS_LABEL,
        "min_group_size": _MIN_GROUP_SIZE,
        "greater_is_better": ["boolean", None],
        "threshold": "no_validation",
        "n_bins": N_BINS_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
def make_fairness_scorer(
    metric="demographic_parity_difference",
    *,
    response_method="predict",
    sensitive=None,
    pos_label=None,
    min_group_size=1,
    greater_is_better=None,
    threshold=None,
    n_bins=DEFAULT_N_BINS,
):
    """Make an sklearn scorer from a group fairness metric.

    The scorer requests ``sensitive_features`` through metadata routing by
    default (no ``set_score_request`` needed), and can instead read the
    sensitive attributes from columns of X (``sensitive=``), which works with
    routing off. Metrics where lower is better are negated, as sklearn's
    ``neg_*`` scorers are, so that greater is always better for the search.

    Parameters
    ----------
    metric : str or callable, default="demographic_parity_difference"
        One of ``"demographic_parity_difference"`` (``"dpd"``),
        ``"demographic_parity_ratio"`` (``"dpr"``),
        ``"false_positive_rate_difference"`` (``"dfpr"``),
        ``"true_positive_rate_difference"`` (``"dtpr"``),
        ``"positive_predictive_value_difference"`` (``"dppv"``),
        ``"equalized_odds_difference"`` (``"eod"``), ``"equalized_odds_ratio"``
        (``"eor"``), ``"equal_opportunity_difference"`` (the TPR difference under
        fairlearn's name), or a callable
        ``metric(y_true, y_pred, *, sensitive_features, **kwargs)``.
    response_method : {"predict", "predict_proba"}, default="predict"
        ``"predict"`` scores predicted labels; ``"predict_proba"`` scores the
        probability of the positive class, giving the soft metrics (the paper's
        E[f(A) | group]).
    sensitive : str, int or list, default=None
        Columns of X holding the sensitive attributes (names for a DataFrame,
        positions for an array). The estimator still receives the whole X, so
        it must drop these columns itself (e.g. a ColumnTransformer). Leave
        None to receive ``sensitive_features`` as metadata.
    pos_label : int, float, bool or str, default=None
        The favourable label; needed unless labels are {0, 1} or {-1, 1}.
    min_group_size : int, default=1
        Groups whose rate rests on fewer rows are left out of the metric.
    greater_is_better : bool, default=None
        Override the direction; by default True only for the ratio (and False
        for a callable).
    threshold : float, "prevalence" or dict, default=None
        Score the decisions ``predict_proba(X)[:, 1] > t`` at an operating
        point instead of ``predict``'s (``response_method`` must then be
        ``"predict"``):

        - a float in (0, 1): that threshold;
        - ``"prevalence"``: the operating point that selects exactly the
          training prevalence of the scored rows (the estimator's
          ``class_prior_`` when it has one, as ``FederatedEstimator`` does,
          else the share of positives in the scored rows), so that every
          candidate of a search is judged selecting the same share of people
          and a model cannot look fair by compressing its scores;
        - ``{"selection_rate": r}``: the operating point of selection rate
          r.

        A target rate is met exactly: the operating point comes from
        histograms of the scores on ``n_bins`` equal bins, narrowed where the
        scores bunch together, and rows tied at it are selected with the
        probability that makes the share exact
        (:func:`federated_operating_point`); the metric is then the expected
        value of that randomised rule's rates (``soft=True``), or, for a
        callable without ``soft``, of 0/1 decisions with the tied rows drawn
        with a fixed seed.
    n_bins : int, default=1000
        Bins of the score histogram for ``"prevalence"`` and
        ``"selection_rate"`` thresholds.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y, *, sensitive_features=None,
        sample_weight=None)``.

    See Also
    --------
    make_tradeoff_scorer : Performance minus a weighted disparity.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfedida.metrics import make_fairness_scorer
    >>> X = [[0.0], [1.0], [2.0], [3.0]]
    >>> y = [0, 0, 1, 1]
    >>> sex = ["F", "F", "M", "F"]
    >>> clf = LogisticRegression().fit(X, y)
    >>> clf.predict(X)  # selects 1 of 3 women and the man
    array([0, 0, 1, 1])
    >>> scorer = make_fairness_scorer("dpd")
    >>> round(scorer(clf, X, y, sensitive_features=sex), 3)
    -0.667
    >>> matched = make_fairness_scorer("dpd", threshold="prevalence")
    >>> round(matched(clf, X, y, sensitive_features=sex), 3)
    -0.667
    """
    func, default_greater, name = _resolve_metric(metric)
    threshold = check_threshold(threshold)
    if response_method not in _RESPONSE_METHODS:
        raise ValueError(
            f"response_method must be one of {_RESPONSE_METHODS}; got "
            f"{response_method!r}. Fairness rates need labels or probabilities."
        )
    if not (isinstance(min_group_size, numbers.Integral) and min_group_size >= 1):
        raise ValueError(f"min_group_size must be an int >= 1; got {min_group_size!r}.")
    if greater_is_better is None:
        greater_is_better = default_greater
    kwargs = {}
    params = signature(func).parameters
    if pos_label is not None:
        kwargs["pos_label"] = pos_label
    if min_group_size != 1:
        kwargs["min_group_size"] = min_group_size
    if response_method == "predict_proba":
        if "soft" not in params:
            raise ValueError(
                f"metric {name!r} has no 'soft' argument, so it cannot score "
                "probabilities; use response_method='predict'."
            )
        kwargs["soft"] = True
    sign = 1 if greater_is_better else -1
    if threshold is not None:
        if response_method != "predict":
            raise ValueError(
                "threshold= scores decisions at an operating point; it cannot be "
                "combined with response_method='predict_proba' (soft metrics)."
            )
        _check_n_bins(n_bins)
        positive_label = kwargs.pop("pos_label", None)
        return _FairnessScorer(
            _AtThreshold(func, threshold, int(n_bins)),
            sign,
            kwargs,
            "predict_proba",
            sensitive,
            name,
            threshold,
            positive_label,
        )
    return _FairnessScorer(func, sign, kwargs, response_method, sensitive, name)


class _TradeoffScorer(SensitiveCallMixin, BaseScorer):
    """performance - weight * disparity; built by :func:`make_tradeoff_scorer`."""

    def __init__(self, performance, fairness, weight, performance_name):
        # sklearn's multi-metric scorer reads ``_response_method`` to decide on
        # caching predictions; the performance part's method is the one to share.
        response_method = getattr(performance, "_response_method", "predict")
        super().__init__(
            score_func=None, sign=1, kwargs={}, response_method=response_method
        )
        self._performance = performance
        self._fairness = fairness
        self._weight = weight
        self._performance_name = performance_name

    def __repr__(self):
        return (
            f"make_tradeoff_scorer(performance={self._performance_name!r}, "
            f"fairness={self._fairness!r}, weight={self._weight!r})"
        )

    def _get_metadata_request(self):
        if hasattr(self, "_metadata_request"):  # set by set_score_request
            return get_routing_for_object(self._metadata_request)
        requests = MetadataRequest(owner=self)
        requests.score = MethodMetadataRequest(owner=self, method="score")
        requests.score.add_request(param="sensitive_features", alias=True)
        requests.score.add_request(param="sample_weight", alias=None)
        return requests

    def _score(self, method_caller, estimator, X, y_true, **kwargs):
        performance_kwargs = {}
        if kwargs.get("sample_weight") is not None:
            performance_kwargs["sample_weight"] = kwargs["sample_weight"]
        if isinstance(self._performance, BaseScorer):
            performance = self._performance._score(
                method_caller, estimator, X, y_true, **performance_kwargs
            )
        else:
            performance = self._performance(estimator, X, y_true, **performance_kwargs)
        signed = self._fairness._score(method_caller, estimator, X, y_true, **kwargs)
        # A lower-is-better disparity arrives negated; a ratio's disparity is 1 - ratio.
        disparity = -signed if self._fairness._sign < 0 else 1.0 - signed
        return float(performance - self._weight * disparity)


@validate_params(
    {
        # A scorer name or callable; anything else is refused by the function.
        "performance": "no_validation",
        "fairness": [str, callable],
        "weight": [numbers.Real],
        "sensitive": _SENSITIVE,
        "fairness_response_method": [StrOptions(set(_RESPONSE_METHODS))],
        "pos_label": _POS_LABEL,
        "min_group_size": _MIN_GROUP_SIZE,
        "threshold": "no_validation",
    },
    prefer_skip_nested_validation=True,
)
def make_tradeoff_scorer(
    performance="roc_auc",
    fairness="demographic_parity_difference",
    weight=1.0,
    *,
    sensitive=None,
    fairness_response_method="predict",
    pos_label=None,
    min_group_size=1,
    threshold=None,
):
    """Make a scorer of performance minus a weighted disparity.

    ``score = performance - weight * disparity``, where the disparity is the
    fairness metric itself for differences (DPD, DFPR, DPPV, ...) and
    ``1 - DPR`` for the demographic parity ratio. Greater is better, so it
    ranks the candidates of a search by "the value that best balances
    performance and fairness".

    Parameters
    ----------
    performance : str or callable, default="roc_auc"
        Any sklearn scorer name (``"roc_auc"``, ``"accuracy"``, ...) or
        scorer callable.
    fairness : str or scorer, default="demographic_parity_difference"
        A metric name accepted by :func:`make_fairness_scorer`, or a scorer
        made by it.
    weight : float, default=1.0
        Price of one unit of disparity in units of performance. Must be >= 0.
    sensitive : str, int or list, default=None
        Columns of X holding the sensitive attributes, as in
        :func:`make_fairness_scorer`; ignored when ``fairness`` is a scorer.
    fairness_response_method : {"predict", "predict_proba"}, default="predict"
        Hard or soft fairness metric; ignored when ``fairness`` is a scorer.
    pos_label : int, float, bool or str, default=None
        Favourable label for the fairness metric.
    min_group_size : int, default=1
        Smallest group the fairness metric keeps.
    threshold : float, "prevalence" or dict, default=None
        Operating point of the fairness metric, as in
        :func:`make_fairness_scorer`; ignored when ``fairness`` is a scorer.

    Returns
    -------
    scorer : callable
        A scorer requesting ``sensitive_features`` by default.

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from skfedida.metrics import make_tradeoff_scorer
    >>> X = [[0.0], [1.0], [2.0], [3.0]]
    >>> y = [0, 0, 1, 1]
    >>> sex = ["F", "F", "M", "F"]
    >>> clf = LogisticRegression().fit(X, y)
    >>> scorer = make_tradeoff_scorer("roc_auc", "dpd", weight=0.3)
    >>> round(scorer(clf, X, y, sensitive_features=sex), 3)  # 1.0 - 0.3 x 2/3
    0.8
    """
    if not (isinstance(weight, numbers.Real) and weight >= 0):
        raise ValueError(f"weight must be a non-negative number; got {weight!r}.")
    if isinstance(fairness, _FairnessScorer):
        fairness_scorer = fairness
    else:
        fairness_scorer = make_fairness_scorer(
            fairness,
            response_method=fairness_response_method,
            sensitive=sensitive,
            pos_label=pos_label,
            min_group_size=min_group_size,
            threshold=threshold,
        )
    performance_scorer = (
        get_scorer(performance) if isinstance(performance, str) else performance
    )
    if not callable(performance_scorer):
        raise ValueError(
            f"performance must be a scorer name or a callable; got {performance!r}."
        )
    name = performance if isinstance(performance, str) else repr(performance)
    return _TradeoffScorer(performance_scorer, fairness_scorer, float(weight), name)
