"""Per-client evaluation with bootstrap confidence intervals."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.utils import check_random_state

from .._groups import take_rows
from ..metrics import fairness_summary

__all__ = ["evaluate_clients"]

_FAIRNESS_KEYS = {
    "dpd": "demographic_parity_difference",
    "dpr": "demographic_parity_ratio",
    "dfpr": "false_positive_rate_difference",
    "dppv": "positive_predictive_value_difference",
    "dtpr": "true_positive_rate_difference",
    "eod": "equalized_odds_difference",
}
_SOFT_KEYS = {f"soft_{name}": key for name, key in _FAIRNESS_KEYS.items()}
_METRICS = ("roc_auc", *_FAIRNESS_KEYS, *_SOFT_KEYS)


def _metric_values(metrics, y, proba, pred, S, weight, pos_label):
    values = {}
    if "roc_auc" in metrics:
        values["roc_auc"] = (
            roc_auc_score(y, proba, sample_weight=weight)
            if np.unique(y[weight > 0] if weight is not None else y).size == 2
            else np.nan
        )
    for keys, scores, soft in (
        (_FAIRNESS_KEYS, pred, False),
        (_SOFT_KEYS, proba, True),
    ):
        wanted = [m for m in metrics if m in keys]
        if not wanted:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            summary = fairness_summary(
                y,
                scores,
                sensitive_features=S,
                sample_weight=weight,
                pos_label=pos_label,
                soft=soft,
            )
        for name in wanted:
            values[name] = summary[keys[name]]
    return values


def evaluate_clients(
    estimator,
    X,
    y,
    *,
    clients,
    sensitive_features,
    metrics=("roc_auc", "dpd", "dpr", "dfpr", "dppv"),
    n_bootstrap=1000,
    confidence=0.95,
    personalised=True,
    random_state=None,
):
    """Per-client metrics with bootstrap confidence intervals.

    For every client: AUROC and the disparity metrics on its rows, and a
    percentile bootstrap interval from ``n_bootstrap`` resamples of those rows
    (drawn as multinomial row weights, so each resample costs one weighted
    pass). Then the mean and standard deviation across clients, as in the
    FedIDA paper's Tables 2-3 and Figures S1-S4.

    Parameters
    ----------
    estimator : fitted classifier
        A :class:`FederatedEstimator` (its personalised or local models are
        used for their clients when ``personalised=True``) or any classifier
        with ``predict_proba``.
    X : array-like or DataFrame of shape (n_samples, n_features)
        Evaluation rows.
    y : array-like of shape (n_samples,)
        Labels.
    clients : array-like of shape (n_samples,)
        Client of every row.
    sensitive_features : array-like, DataFrame or dict
        Sensitive attributes of every row.
    metrics : tuple of str, default=("roc_auc", "dpd", "dpr", "dfpr", "dppv")
        Any of ``"roc_auc"``, ``"dpd"``, ``"dpr"``, ``"dfpr"``, ``"dppv"``,
        ``"dtpr"``, ``"eod"`` (on predicted labels), or the same names with a
        ``soft_`` prefix (on predicted probabilities: the paper's
        E[f(A) | group]; see the ``soft`` argument of the metrics).
    n_bootstrap : int, default=1000
        Bootstrap resamples per client; 0 skips the intervals.
    confidence : float, default=0.95
        Coverage of the intervals.
    personalised : bool, default=True
        Pass ``clients=`` to a FederatedEstimator's predictions.
    random_state : int, RandomState instance or None, default=None
        Seed of the resamples.

    Returns
    -------
    report : :class:`~sklearn.utils.Bunch`
        ``per_client``: a DataFrame indexed by client with, for each metric,
        its value and ``<metric>_low`` / ``<metric>_high``; ``summary``: a
        DataFrame with the ``mean`` and ``sd`` of each metric across clients.

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
    ...                           n_bootstrap=50, random_state=0)
    >>> list(report.summary.columns)
    ['mean', 'sd']
    """
    import pandas as pd
    from sklearn.utils import Bunch

    unknown = sorted(set(metrics) - set(_METRICS))
    if unknown:
        raise ValueError(f"metrics {unknown} are not among {list(_METRICS)}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1); got {confidence!r}.")
    clients = np.asarray(clients)
    y = np.asarray(y)
    kwargs = {}
    if personalised and hasattr(estimator, "client_estimators_"):
        kwargs["clients"] = clients
    proba = estimator.predict_proba(X, **kwargs)[:, 1]
    pred = estimator.predict(X, **kwargs)
    pos_label = estimator.classes_[-1]
    rng = check_random_state(random_state)
    tail = (1 - confidence) / 2
    rows = []
    for client in np.unique(clients):
        idx = np.flatnonzero(clients == client)
        y_k, proba_k, pred_k = y[idx], proba[idx], pred[idx]
        S_k = take_rows(sensitive_features, idx)
        row = {
            "client": client,
            **_metric_values(metrics, y_k, proba_k, pred_k, S_k, None, pos_label),
        }
        if n_bootstrap:
            weights = rng.multinomial(
                idx.size, np.full(idx.size, 1 / idx.size), size=n_bootstrap
            ).astype(float)
            draws = {m: [] for m in metrics}
            for weight in weights:
                values = _metric_values(
                    metrics, y_k, proba_k, pred_k, S_k, weight, pos_label
                )
                for m in metrics:
                    draws[m].append(values[m])
            for m in metrics:
                finite = np.asarray(draws[m], dtype=float)
                finite = finite[np.isfinite(finite)]
                low, high = (
                    np.quantile(finite, [tail, 1 - tail])
                    if finite.size
                    else (np.nan, np.nan)
                )
                row[f"{m}_low"], row[f"{m}_high"] = low, high
        rows.append(row)
    per_client = pd.DataFrame(rows).set_index("client")
    values = per_client[list(metrics)]
    summary = pd.DataFrame({"mean": values.mean(), "sd": values.std(ddof=1)})
    return Bunch(per_client=per_client, summary=summary)
