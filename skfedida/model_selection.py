"""Choosing the fairness weight (lambda) and the L2 weight (gamma), paper §3.2.

- :func:`lambda_range`: each client raises lambda until its validation score
  drops below ``tolerance * score(lambda=0)``; the smallest bound across
  clients sets the range of lambda.
- :class:`CoarseToFineSearchCV`: the paper's OptimizeGamma, as a ``*SearchCV``:
  m values over a range, then m' values between the neighbours of the best.
- :func:`fairest_within`: a ``refit`` rule, the fairest candidate whose
  performance is within a tolerance of the best.
- :func:`make_fedida`: FairnessAwareROSE + a penalised estimator + a federated
  strategy with the paper's training settings, in one estimator.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Mapping

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, clone
from sklearn.callback import CallbackSupportMixin, with_callbacks
from sklearn.metrics import check_scoring
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch

from ._compat import (
    BaseSearchCV,
    HasMethods,
    Hidden,
    Interval,
    StrOptions,
    num_samples,
    safe_indexing,
    validate_params,
)
from ._doc_links import DocLinkMixin
from ._groups import SensitiveGroups, resolve_sensitive, take_rows
from .exceptions import (
    DegenerateModelWarning,
    EmptyRangeWarning,
    InactivePenaltyWarning,
    caller_stacklevel,
)
from .federated._fedida import make_fedida
from .metrics._scorer import SensitiveCallMixin

__all__ = [
    "CoarseToFineSearchCV",
    "fairest_within",
    "lambda_range",
    "make_fedida",
]

_DEFAULT_LAMBDAS = (0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)


def _check_band(band):
    if band is None:
        return None
    try:
        low, high = (float(v) for v in band)
    except (TypeError, ValueError):
        low = high = np.nan
    if not 0 <= low < high <= 1:
        raise ValueError(
            "band must be (low, high) with 0 <= low < high <= 1, or None; got "
            f"{band!r}."
        )
    return low, high


def _outside_band(model, X, band):
    """Whether the model's decisions on X select a share of rows outside band."""
    if band is None:
        return False
    pred = model.predict(X)
    if len(model.classes_) > 2:
        # More classes: degenerate when one class takes (almost) every row; a
        # rare class predicted for few rows is no sign of it.
        _, counts = np.unique(pred, return_counts=True)
        return float(counts.max() / pred.shape[0]) > band[1]
    rate = float(np.mean(pred == model.classes_[-1]))
    return not band[0] <= rate <= band[1]


def _score_spread(model, X):
    """Standard deviation of the model's scores (logits where it has them)."""
    if hasattr(model, "decision_function"):
        scores = model.decision_function(X)
        if scores.ndim == 2:
            # One logit per class: a row's common shift changes no decision,
            # and the gaps between the classes' intercepts are no spread.
            scores = scores - scores.mean(axis=1, keepdims=True)
            scores = scores - scores.mean(axis=0, keepdims=True)
        return float(np.std(scores))
    proba = np.clip(model.predict_proba(X)[:, -1], 1e-12, 1 - 1e-12)
    return float(np.std(np.log(proba) - np.log1p(-proba)))


#: A model whose score spread falls below this share of the unpenalised
#: model's has collapsed its scores.
_COLLAPSED_SPREAD = 0.1


class _LambdaRange(CallbackSupportMixin, BaseEstimator):
    """The owner of ``lambda_range``'s callback tasks (a function has none).

    Its root task is the search; each client is a subtask, each lambda a
    subtask of its client.
    """

    @with_callbacks
    def run(self, tasks, ids, run_paths, n_lambdas):
        root = self._init_callback_context(max_subtasks=len(tasks))
        root.call_on_fit_task_begin(estimator=self)
        contexts = [
            root.subcontext(task_name=f"client {_plain_id(k)}", max_subtasks=n_lambdas)
            for k in ids
        ]
        for ctx in contexts:
            ctx.call_on_fit_task_begin(estimator=self)
        paths = run_paths(contexts)
        for ctx in contexts:
            ctx.call_on_fit_task_end(estimator=self)
        root.call_on_fit_task_end(estimator=self)
        return paths


def _plain_id(client):
    return client.item() if hasattr(client, "item") else client


def _reads_sensitive_columns(estimator):
    """Whether the estimator (or one nested in it) reads S from columns of X."""
    get_params = getattr(estimator, "get_params", None)
    if get_params is None:
        return False
    return any(
        (name == "sensitive" or name.endswith("__sensitive")) and value is not None
        for name, value in get_params(deep=True).items()
    )


def _client_lambda_path(
    estimator, param, lambdas, scorer, tolerance, train, valid, band=None, ctx=None
):
    """Scores of one client along lambda, and why the path stopped (or None).

    The path stops at the first value whose score falls below ``tolerance``
    times the baseline's ("score"), whose validation decisions select a share
    of rows outside ``band`` ("selection rate"), or whose scores spread less
    than a tenth of the unpenalised model's ("score spread").
    """
    X_train, y_train, S_train = train
    X_valid, y_valid, S_valid = valid
    scores = []
    baseline = baseline_spread = None
    for value in lambdas:
        model = clone(estimator).set_params(**{param: value})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InactivePenaltyWarning)
            if ctx is None:
                model.fit(X_train, y_train, sensitive_features=S_train)
            else:
                # sklearn's callbacks: each lambda a task of its client's,
                # the model's own tasks (a federation's rounds) below it.
                value_ctx = ctx.subcontext(task_name=f"lambda {value:g}")
                value_ctx.call_on_fit_task_begin(estimator=_LambdaRange())
                with value_ctx.propagate_callback_context(model):
                    model.fit(X_train, y_train, sensitive_features=S_train)
                value_ctx.call_on_fit_task_end(estimator=_LambdaRange())
        if S_valid is not None and isinstance(scorer, SensitiveCallMixin):
            score = float(scorer(model, X_valid, y_valid, sensitive_features=S_valid))
        else:
            score = float(scorer(model, X_valid, y_valid))
        scores.append(score)
        if baseline is None:
            baseline = score
            if band is not None:
                if _outside_band(model, X_valid, band):
                    # Unpenalised and already degenerate (e.g. a rare outcome
                    # at 0.5): the band says nothing about lambda here.
                    band = None
                else:
                    baseline_spread = _score_spread(model, X_valid)
            continue
        if score < tolerance * baseline:
            return scores, "score"
        if _outside_band(model, X_valid, band):
            return scores, "selection rate"
        if band is not None and (
            _score_spread(model, X_valid) < _COLLAPSED_SPREAD * baseline_spread
        ):
            return scores, "score spread"
    return scores, None


@validate_params(
    {
        "estimator": [HasMethods(["fit"])],
        "X": ["array-like", "sparse matrix"],
        "y": ["array-like"],
        # None reaches the function, which says that clients are needed.
        "clients": ["array-like", Hidden(None)],
        "sensitive_features": [
            "array-like",
            Mapping,
            Hidden(SensitiveGroups),
            None,
        ],
        "validation": [tuple, list, None],
        # train_test_split's test_size: also a number of rows, or None (0.25).
        "validation_fraction": [
            Interval(numbers.Real, 0, 1, closed="neither"),
            Hidden(Interval(numbers.Integral, 1, None, closed="left")),
            Hidden(None),
        ],
        # Values checked by the function (increasing, starting at 0).
        "lambdas": ["array-like"],
        "tolerance": [Interval(numbers.Real, 0, 1, closed="right")],
        # None: the estimator's own score method.
        "scoring": [str, callable, Hidden(None)],
        "param": [str],
        "n_candidates": [Interval(numbers.Integral, 2, None, closed="left")],
        # Values checked by the function (0 <= low < high <= 1).
        "band": ["array-like", None],
        "n_jobs": [numbers.Integral, None],
        "random_state": ["random_state"],
        "callbacks": [list, tuple, None],
    },
    # The estimator's own parameters are validated when each client fits it.
    prefer_skip_nested_validation=False,
)
def lambda_range(
    estimator,
    X,
    y,
    *,
    clients,
    sensitive_features=None,
    validation=None,
    validation_fraction=0.2,
    lambdas=_DEFAULT_LAMBDAS,
    tolerance=0.995,
    scoring="accuracy",
    param="fairness",
    n_candidates=5,
    band=(0.01, 0.99),
    n_jobs=None,
    random_state=None,
    callbacks=None,
):
    """The paper's data-driven range of the fairness weight lambda.

    Every client, on its own rows only, fits ``estimator`` with ``param`` set
    to each value of ``lambdas`` in turn (the first must be 0, the baseline)
    and scores it on its held-out rows; it stops at the first value whose
    score falls below ``tolerance * score(0)``. The client's bound is the
    last value before that (the largest lambda that kept its score; the
    largest value tried if none fell below). The range is ``[0, min over
    clients of the bound]`` and the candidates are ``n_candidates`` equally
    spaced values in it.

    Parameters
    ----------
    estimator : estimator
        A fairness-penalised estimator with a full-batch ``fit`` taking
        ``sensitive_features`` (e.g. ``FairPenaltyLogisticRegression``).
    X : array-like or DataFrame of shape (n_samples, n_features)
        Rows of every client.
    y : array-like of shape (n_samples,)
        Labels.
    clients : array-like of shape (n_samples,)
        Client of every row.
    sensitive_features : array-like, DataFrame or dict, default=None
        Sensitive attributes of every row.
    validation : tuple, default=None
        ``(X_val, y_val, clients_val, sensitive_features_val)``: the clients'
        own validation rows. Without it, ``validation_fraction`` of each
        client's rows is held out.
    validation_fraction : float in (0, 1), default=0.2
        Share of each client's rows held out (stratified by label) when
        ``validation`` is not given.
    lambdas : sequence of float, default=(0, 0.05, ..., 100)
        Increasing values to try; the first is the baseline and must be 0.
    tolerance : float in (0, 1], default=0.995
        The paper's 0.995 * Acc_0 rule.
    scoring : str or callable, default="accuracy"
        Validation score (greater is better); a scorer of
        :func:`~skfedida.metrics.make_tradeoff_scorer` or
        :func:`~skfedida.metrics.make_fairness_scorer` receives the held-out
        rows' sensitive features.
    param : str, default="fairness"
        Name of the estimator's lambda.
    n_candidates : int, default=5
        Equally spaced candidates in the range.
    band : (float, float) or None, default=(0.01, 0.99)
        A lambda whose model predicts the positive class for a share of the
        client's held-out rows outside this band is degenerate (it predicts
        almost no, or almost only, positives; with more than two classes,
        one whose most predicted class takes more than ``band[1]`` of the
        rows), and so is one whose scores
        spread less than a tenth as widely (standard deviation on the held-out
        rows) as the lambda = 0 model's; either ends the client's range as a
        score below the tolerance does, with a
        :class:`~skfedida.exceptions.DegenerateModelWarning`. None turns both
        checks off.
    n_jobs : int, default=None
        Clients in parallel.
    random_state : int, RandomState instance or None, default=None
        Seed of the held-out split.
    callbacks : list of sklearn callbacks, default=None
        Callbacks of sklearn's API (``sklearn.callback.ProgressBar()``, ...), which
        see the search as a task whose subtasks are the clients, each with
        its lambdas as subtasks; callbacks that propagate (ProgressBar) also
        reach the estimator's own tasks (a federation's rounds).

    Returns
    -------
    result : :class:`~sklearn.utils.Bunch`
        ``range`` (low, high), ``candidates`` (ndarray), and ``per_client`` (a
        list of dicts: ``client``, ``baseline``, ``bound``, ``stopped_at``
        (the first value that ended the range, or None), ``stopped_because``
        (``"score"``, ``"selection rate"``, ``"score spread"`` or None) and
        ``scores``).

    Examples
    --------
    >>> from skfedida.datasets import make_federated_classification
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> from skfedida.model_selection import lambda_range
    >>> data = make_federated_classification(1500, n_clients=3, random_state=0)
    >>> result = lambda_range(FairPenaltyLogisticRegression(), data.data,
    ...                       data.target, clients=data.clients,
    ...                       sensitive_features=data.sensitive, random_state=0)
    >>> len(result.candidates), result.range[0]
    (5, 0.0)
    """
    lambdas = np.asarray(lambdas, dtype=float)
    if (
        lambdas.ndim != 1
        or lambdas.size < 2
        or lambdas[0] != 0
        or np.any(np.diff(lambdas) <= 0)
    ):
        raise ValueError(
            "lambdas must be an increasing sequence starting at 0 (the baseline); "
            f"got {lambdas.tolist()}."
        )
    if not 0 < tolerance <= 1:
        raise ValueError(f"tolerance must be in (0, 1]; got {tolerance!r}.")
    if not (isinstance(n_candidates, numbers.Integral) and n_candidates >= 2):
        raise ValueError(f"n_candidates must be an int >= 2; got {n_candidates!r}.")
    band = _check_band(band)
    if clients is None:
        raise ValueError("lambda_range needs clients=, the client of every row.")
    clients = np.asarray(clients)
    y = np.asarray(y)
    n_samples = num_samples(X)
    if clients.shape[0] != n_samples or y.shape[0] != n_samples:
        raise ValueError(f"X has {n_samples} rows; y and clients must match it.")
    _, S = resolve_sensitive(X, sensitive_features=sensitive_features, drop=False)
    if S is None and not _reads_sensitive_columns(estimator):
        # Every lambda would fit the unpenalised model: flat scores, and a
        # range of (0, max(lambdas)) that says nothing about the penalty.
        raise ValueError(
            "lambda_range needs the sensitive attributes: without them the "
            f"fairness penalty ({param!r}) is inactive and every lambda fits the "
            "same model. Pass sensitive_features= (or build the estimator with "
            "sensitive=[columns of X])."
        )
    scorer = check_scoring(estimator, scoring=scoring)
    tasks, ids = [], np.unique(clients)
    if validation is not None:
        X_val, y_val, clients_val, S_val = validation
        y_val, clients_val = np.asarray(y_val), np.asarray(clients_val)
        _, S_val = resolve_sensitive(X_val, sensitive_features=S_val, drop=False)
        missing = sorted(set(ids.tolist()) - set(np.unique(clients_val).tolist()))
        if missing:
            raise ValueError(f"validation has no rows of clients {missing}.")

    def part(X_, y_, S_, rows):
        return (
            safe_indexing(X_, rows),
            y_[rows],
            None if S_ is None else take_rows(S_, rows),
        )

    for client in ids:
        rows = np.flatnonzero(clients == client)
        if np.unique(y[rows]).size < 2:
            raise ValueError(
                f"Client {client.item() if hasattr(client, 'item') else client!r} "
                f"has a single class ({np.unique(y[rows]).tolist()}) in its rows: "
                "its accuracy cannot set a bound on lambda. Leave it out of "
                "lambda_range (it can still train in the federation)."
            )
        if validation is not None:
            valid = part(X_val, y_val, S_val, np.flatnonzero(clients_val == client))
            tasks.append((part(X, y, S, rows), valid))
            continue
        try:
            train, held_out = train_test_split(
                rows,
                test_size=validation_fraction,
                stratify=y[rows],
                random_state=random_state,
            )
        except ValueError as exc:
            labels, counts = np.unique(y[rows], return_counts=True)
            raise ValueError(
                f"Client {_plain_id(client)!r} has {rows.size} rows ("
                + ", ".join(
                    f"{n} of class {label!r}"
                    for label, n in zip(labels.tolist(), counts.tolist(), strict=True)
                )
                + f"): validation_fraction={validation_fraction!r} cannot hold "
                "out a stratified part of them with every class on both sides "
                f"({exc}). Pass validation=(X_val, y_val, clients_val, "
                "sensitive_features_val) with the clients' own validation rows, "
                "change validation_fraction, or leave this client out of "
                "lambda_range (it can still train in the federation)."
            ) from exc
        tasks.append((part(X, y, S, np.sort(train)), part(X, y, S, np.sort(held_out))))

    def run_paths(contexts):
        return Parallel(n_jobs=n_jobs)(
            delayed(_client_lambda_path)(
                estimator, param, lambdas, scorer, tolerance, train, valid, band, ctx
            )
            for (train, valid), ctx in zip(tasks, contexts, strict=True)
        )

    if callbacks:
        paths = (
            _LambdaRange()
            .set_callbacks(*callbacks)
            .run(tasks, ids, run_paths, len(lambdas))
        )
    else:
        paths = run_paths([None] * len(tasks))
    per_client = []
    for client, (scores, reason) in zip(ids, paths, strict=True):
        stopped = reason is not None
        bound = lambdas[len(scores) - 2] if stopped else lambdas[len(scores) - 1]
        client_id = client.item() if hasattr(client, "item") else client
        if reason in ("selection rate", "score spread"):
            what = (
                f"selects a share of its held-out rows outside {band}"
                if reason == "selection rate"
                else "spreads its scores less than a tenth as widely as at "
                "lambda = 0 (they collapsed toward one value)"
            )
            warnings.warn(
                f"Client {client_id!r}: the model at lambda = "
                f"{lambdas[len(scores) - 1]} {what}; its range ends at {bound}.",
                DegenerateModelWarning,
                stacklevel=caller_stacklevel(),
            )
        per_client.append(
            {
                "client": client_id,
                "baseline": scores[0],
                "bound": float(bound),
                "stopped_at": float(lambdas[len(scores) - 1]) if stopped else None,
                "stopped_because": reason,
                "scores": dict(
                    zip(lambdas[: len(scores)].tolist(), scores, strict=True)
                ),
            }
        )
    high = min(record["bound"] for record in per_client)
    if high == 0:
        first = next(r for r in per_client if r["bound"] == 0)
        if first["stopped_because"] == "score":
            why = f"score fell below {tolerance} x its baseline"
        else:
            why = f"model became degenerate ({first['stopped_because']})"
        warnings.warn(
            f"Client {first['client']!r}'s {why} at the first nonzero lambda "
            f"({lambdas[1]}), so the range is empty. Try a finer lambdas grid "
            "near 0, a lower tolerance, or more validation rows (accuracy on few "
            "rows moves in large steps).",
            EmptyRangeWarning,
            stacklevel=caller_stacklevel(),
        )
    return Bunch(
        range=(0.0, high),
        candidates=np.linspace(0.0, high, n_candidates),
        per_client=per_client,
    )


@validate_params(
    {
        "performance": [str],
        "fairness": [str],
        "tolerance": [Interval(numbers.Real, 0, None, closed="both")],
        "selection_rate": [str, None],
        # Values checked by the function (0 <= low < high <= 1).
        "band": ["array-like", None],
    },
    prefer_skip_nested_validation=True,
)
def fairest_within(
    performance,
    fairness,
    tolerance=0.01,
    *,
    selection_rate="selection_rate",
    band=(0.01, 0.99),
):
    """A ``refit`` rule: the fairest candidate whose performance is near the best.

    Candidates whose mean selection rate (``mean_test_<selection_rate>``, the
    share of rows their decisions select) lies outside ``band`` are
    degenerate and never chosen: a model that predicts almost no, or almost
    only, positives has tiny disparities at its own threshold. Among the
    others, with ``mean_test_<performance> >= best - tolerance`` (best among
    them), return the one with the greatest ``mean_test_<fairness>``
    (fairness scorers are negated disparities, so greatest means fairest);
    ties go to the better performance. Judge fairness at a matched selection
    rate, ``make_fairness_scorer(..., threshold="prevalence")``, so that a
    candidate cannot look fair by compressing its scores.

    Parameters
    ----------
    performance : str
        Name of the performance scorer in the search's ``scoring`` dict.
    fairness : str
        Name of the fairness scorer in the search's ``scoring`` dict.
    tolerance : float, default=0.01
        Allowed loss of performance, in the scorer's units.
    selection_rate : str or None, default="selection_rate"
        Name of the selection-rate scorer in the search's ``scoring`` dict,
        ``make_scorer(skfedida.metrics.selection_rate)``. None skips the
        degenerate-model check (not recommended).
    band : (float, float) or None, default=(0.01, 0.99)
        Selection rates a candidate may have; None skips the check.

    Returns
    -------
    rule : callable
        ``rule(cv_results) -> int``, to pass as ``refit=``.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.model_selection import fairest_within
    >>> results = {"mean_test_auc": np.array([0.86, 0.855, 0.80, 0.85]),
    ...            "mean_test_dpd": np.array([-0.30, -0.20, -0.05, 0.0]),
    ...            "mean_test_selection_rate": np.array([0.2, 0.2, 0.2, 0.0])}
    >>> fairest_within("auc", "dpd", tolerance=0.01)(results)
    1
    """
    if not (isinstance(tolerance, numbers.Real) and tolerance >= 0):
        raise ValueError(f"tolerance must be >= 0; got {tolerance!r}.")
    band = _check_band(band) if selection_rate is not None else None
    return _FairestWithin(performance, fairness, float(tolerance), selection_rate, band)


class _FairestWithin:
    """The rule of :func:`fairest_within`; a class so that searches pickle."""

    def __init__(
        self, performance, fairness, tolerance, selection_rate=None, band=None
    ):
        self.performance = performance
        self.fairness = fairness
        self.tolerance = tolerance
        self.selection_rate = selection_rate
        self.band = band

    def __repr__(self):
        check = (
            f", selection_rate={self.selection_rate!r}, band={self.band}"
            if self.selection_rate is not None
            else ", selection_rate=None"
        )
        return (
            f"fairest_within({self.performance!r}, {self.fairness!r}, "
            f"{self.tolerance}{check})"
        )

    def __call__(self, cv_results):
        names = [
            k[len("mean_test_") :] for k in cv_results if k.startswith("mean_test_")
        ]
        for argument, name in (
            ("performance", self.performance),
            ("fairness", self.fairness),
        ):
            if name not in names:
                raise ValueError(
                    f"fairest_within's {argument}={name!r} is not a scorer of the "
                    f"search: its cv_results_ has the scorers {names} (the keys "
                    "of the search's scoring dict). Pass one of them, or add "
                    f"{name!r} to scoring."
                )
        perf = np.asarray(cv_results[f"mean_test_{self.performance}"], dtype=float)
        fair = np.asarray(cv_results[f"mean_test_{self.fairness}"], dtype=float)
        if np.isnan(perf).any() or np.isnan(fair).any():
            raise ValueError(
                f"NaN in mean_test_{self.performance} or mean_test_{self.fairness}; "
                "cannot choose a candidate (a failed fit, or a fairness scorer "
                "without its sensitive features?)."
            )
        usable = np.ones(perf.shape, dtype=bool)
        if self.selection_rate is not None and self.band is not None:
            key = f"mean_test_{self.selection_rate}"
            if key not in cv_results:
                raise ValueError(
                    f"fairest_within needs {key!r} to refuse degenerate candidates: "
                    f"add {self.selection_rate!r}: make_scorer(skfedida.metrics."
                    "selection_rate) to the search's scoring dict (or pass "
                    "selection_rate=None to skip the check)."
                )
            rate = np.asarray(cv_results[key], dtype=float)
            low, high = self.band
            usable = (rate >= low) & (rate <= high)
            if not usable.any():
                raise ValueError(
                    f"Every candidate selects a share of rows outside {self.band} "
                    f"(mean selection rates {np.round(rate, 4).tolist()}): all are "
                    "degenerate. Lower the fairness weight, or check the data."
                )
        candidates = np.flatnonzero(usable)
        best = perf[candidates].max()
        eligible = candidates[perf[candidates] >= best - self.tolerance]
        order = np.lexsort((-perf[eligible], -fair[eligible]))
        return int(eligible[order[0]])


def _rounded(values):
    """A grid of an integer parameter: its values rounded, each once.

    An integer parameter refuses floats, so every fit of a float would fail.
    """
    return np.unique(np.rint(values).astype(np.int64))


class CoarseToFineSearchCV(DocLinkMixin, BaseSearchCV):
    """Two-stage search of one parameter: a coarse grid, then a finer one.

    The paper's OptimizeGamma (Algorithm 2): evaluate ``n_coarse`` values
    spread over ``[low, high]``, take the best by the search's rule (the
    ``refit`` scorer, or a ``refit`` callable such as :func:`fairest_within`),
    then evaluate ``n_fine`` values between its two neighbours (at an end of
    the range, between the end and its neighbour), and report the best of all.
    Values already evaluated are not evaluated again. Everything else behaves
    as ``GridSearchCV``: ``cv_results_`` (with a ``stage`` column, "coarse"
    or "fine"), ``best_params_``, ``refit``, ``n_jobs``, multi-metric
    ``scoring`` and metadata routing. Any parameter of any estimator can be
    searched this way (gamma, lambda, a learning rate); an integer parameter
    (its constraints accept integers only, e.g. ``n_rounds``) is searched
    over the grids' values rounded, each evaluated once.

    Parameters
    ----------
    estimator : estimator
        The estimator whose parameter is searched.
    param_name : str
        Parameter to search, e.g. ``"estimator__alpha"`` for a federated
        penalised estimator's gamma.
    low, high : float
        The range (the paper: 1e-4 and 0.1 for gamma).
    n_coarse : int, default=10
        Coarse values (the paper's m).
    n_fine : int, default=5
        Fine values between the neighbours of the best coarse value (m').
    spacing : {"linear", "log"}, default="linear"
        Equally spaced values (the paper) or equally spaced logarithms.
    scoring : str, callable, list or dict, default=None
        As ``GridSearchCV``.
    refit : bool, str or callable, default=True
        As ``GridSearchCV``; it is also the rule that picks the best coarse
        value, so with several scorers it must name one or be a callable.
    cv : int, cross-validation generator or iterable, default=None
        As ``GridSearchCV``.
    n_jobs : int, default=None
        Fits in parallel.
    verbose : int, default=0
        As ``GridSearchCV``.
    pre_dispatch : int or str, default="2*n_jobs"
        As ``GridSearchCV``.
    error_score : "raise" or float, default=np.nan
        As ``GridSearchCV``; a NaN mean score then stops the search with an
        error instead of letting it pick a candidate silently.
    return_train_score : bool, default=False
        As ``GridSearchCV``.

    Attributes
    ----------
    cv_results_ : dict of ndarray
        As ``GridSearchCV``, plus ``stage``.
    best_index_, best_params_, best_score_, best_estimator_, scorer_, \
n_splits_, refit_time_, multimetric_ :
        As ``GridSearchCV``.
    coarse_values_ : ndarray
        The coarse grid.
    fine_values_ : ndarray
        The fine grid (values already in the coarse grid left out).

    Examples
    --------
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.datasets import make_classification
    >>> from skfedida.model_selection import CoarseToFineSearchCV
    >>> X, y = make_classification(300, random_state=0)
    >>> search = CoarseToFineSearchCV(LogisticRegression(), "C", 0.01, 1.0,
    ...                               n_coarse=4, n_fine=3, cv=3).fit(X, y)
    >>> len(search.cv_results_["params"]) <= 7
    True
    """

    _parameter_constraints: dict = {
        **BaseSearchCV._parameter_constraints,
        "param_name": [str],
        "low": [numbers.Real],
        "high": [numbers.Real],
        "n_coarse": [Interval(numbers.Integral, 2, None, closed="left")],
        "n_fine": [Interval(numbers.Integral, 1, None, closed="left")],
        "spacing": [StrOptions({"linear", "log"})],
    }

    def __init__(
        self,
        estimator,
        param_name,
        low,
        high,
        *,
        n_coarse=10,
        n_fine=5,
        spacing="linear",
        scoring=None,
        refit=True,
        cv=None,
        n_jobs=None,
        verbose=0,
        pre_dispatch="2*n_jobs",
        error_score=np.nan,
        return_train_score=False,
    ):
        super().__init__(
            estimator=estimator,
            scoring=scoring,
            n_jobs=n_jobs,
            refit=refit,
            cv=cv,
            verbose=verbose,
            pre_dispatch=pre_dispatch,
            error_score=error_score,
            return_train_score=return_train_score,
        )
        self.param_name = param_name
        self.low = low
        self.high = high
        self.n_coarse = n_coarse
        self.n_fine = n_fine
        self.spacing = spacing

    def _grid(self, low, high, n):
        if self.spacing == "log":
            return np.geomspace(low, high, n)
        return np.linspace(low, high, n)

    def _integer_parameter(self):
        """Whether the searched parameter takes integers only.

        Read from the parameter's ``_parameter_constraints`` (an ``Interval``
        or type of integers, none of reals), else from integer bounds and an
        integer current value, so that a real parameter searched between
        integer bounds (``C`` from 1 to 10) keeps its real values.
        """
        *path, leaf = self.param_name.split("__")
        params = self.estimator.get_params(deep=True)
        owner = params["__".join(path)] if path else self.estimator
        constraints = getattr(owner, "_parameter_constraints", {}).get(leaf)
        if constraints:
            kinds = {
                getattr(c, "type", c)
                for c in constraints
                if isinstance(c, (Interval, type))
            }
            integral = bool(kinds & {numbers.Integral, int})
            real = bool(kinds & {numbers.Real, float, "real_not_int"})
            return integral and not real
        return all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool)
            for v in (self.low, self.high, params.get(self.param_name))
        )

    def _best(self, results):
        metrics = [
            key[len("mean_test_") :] for key in results if key.startswith("mean_test_")
        ]
        for metric in metrics:
            if np.isnan(results[f"mean_test_{metric}"]).any():
                bad = np.flatnonzero(np.isnan(results[f"mean_test_{metric}"]))
                hint = ""
                if metric == getattr(self.refit, "selection_rate", None):
                    hint = (
                        " A selection rate needs one positive class: for a "
                        "multi-class outcome pass fairest_within(..., "
                        "selection_rate=None) and leave it out of scoring."
                    )
                raise ValueError(
                    f"Candidates {[results['params'][i] for i in bad]} have NaN "
                    f"mean_test_{metric}: a fit or a score failed (e.g. a fairness "
                    "scorer without its sensitive features). Refusing to choose "
                    f"among them.{hint}"
                )
        if callable(self.refit):
            return self._select_best_index(self.refit, None, results)
        if len(metrics) > 1 or metrics != ["score"]:
            if not isinstance(self.refit, str):
                raise ValueError(
                    "With several scorers, refit must name the one that picks the "
                    "best coarse value, or be a callable such as fairest_within."
                )
            return self._select_best_index(self.refit, self.refit, results)
        return self._select_best_index(self.refit, "score", results)

    def _stage(self, evaluate_candidates, values, callback_ctx, name):
        """Evaluate one stage's candidates, as a task of sklearn's callbacks."""
        candidates = [{self.param_name: v} for v in values.tolist()]
        if callback_ctx is None:
            return evaluate_candidates(candidates)
        # Like GridSearchCV's "search" task: candidate x split fits below it,
        # and below those the estimator's own tasks (a federation's rounds and
        # clients), so that a ProgressBar nests search -> candidate -> round.
        stage_ctx = callback_ctx.subcontext(
            task_name=name,
            max_subtasks=len(candidates) * self.n_splits_,
            sequential_subtasks=False,
        ).call_on_fit_task_begin(estimator=self)
        results = evaluate_candidates(candidates, callback_ctx=stage_ctx)
        stage_ctx.call_on_fit_task_end(estimator=self)
        return results

    def _run_search(self, evaluate_candidates, *, callback_ctx=None):
        if not self.low < self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high}).")
        if self.spacing == "log" and self.low <= 0:
            raise ValueError("spacing='log' needs low > 0.")
        # One "search" task, as GridSearchCV's, with the two stages below it.
        search_ctx = None
        if callback_ctx is not None:
            search_ctx = callback_ctx.subcontext(
                task_name="search", max_subtasks=2
            ).call_on_fit_task_begin(estimator=self)
        integer = self._integer_parameter()
        coarse = self._grid(self.low, self.high, self.n_coarse)
        if integer:
            coarse = _rounded(coarse)
        results = self._stage(evaluate_candidates, coarse, search_ctx, "coarse search")
        best = self._best(results)
        i = int(np.argmin(np.abs(coarse - results["params"][best][self.param_name])))
        left = coarse[max(i - 1, 0)]
        right = coarse[min(i + 1, len(coarse) - 1)]
        # n_fine values strictly between the neighbours; any that coincide with
        # an evaluated coarse value are not evaluated twice.
        fine = self._grid(left, right, self.n_fine + 2)[1:-1]
        if integer:
            fine = _rounded(fine)
        fine = fine[~np.isclose(fine[:, None], coarse[None, :]).any(axis=1)]
        self.coarse_values_, self.fine_values_ = coarse, fine
        if fine.size:
            results = self._stage(evaluate_candidates, fine, search_ctx, "fine search")
            self._best(results)
        if search_ctx is not None:
            search_ctx.call_on_fit_task_end(estimator=self)

    def fit(self, X, y=None, **params):
        """Run the two-stage search, then refit the best candidate.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.
        y : array-like of shape (n_samples,), default=None
            Targets.
        **params : dict
            Passed to the estimator's ``fit``, the scorers and the splitter,
            as in ``GridSearchCV`` (metadata routing).

        Returns
        -------
        self : object
            Fitted search.
        """
        super().fit(X, y, **params)
        stages = ["coarse"] * len(self.coarse_values_) + ["fine"] * len(
            self.fine_values_
        )
        self.cv_results_["stage"] = np.array(stages, dtype=object)
        return self
