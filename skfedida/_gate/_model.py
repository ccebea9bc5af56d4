"""The rules for model replies: a training round's update, an evaluation.

A training reply is parameters of the reference's shapes, finite, with a
loss and rows that match what the client declared; an evaluation reply is
the metrics the server asked for, each within its range, counted over at
most the rows the client holds for evaluation.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._messages import NUM_EXAMPLES
from ..metrics._registry import METRICS, PERSONAL_PREFIX, VALIDATION_PREFIX


def training_reply_problem(parameters, n_rows, loss, *, reference, declared_rows):
    """Why a training reply cannot be aggregated, or None when it can.

    Parameters
    ----------
    parameters : list of array-like
        The client's parameter arrays.
    n_rows : object
        The number of training rows it reports (the FedAvg weight).
    loss : object
        The training loss it reports.
    reference : list of ndarray
        The global parameters of the round (shapes and dtypes to match).
    declared_rows : int or None
        The number of training rows the client declared when it joined.

    Returns
    -------
    problem : str or None
        What is wrong, in words; None for a usable reply.
    """
    if len(parameters) != len(reference):
        return (
            f"it sent {len(parameters)} parameter arrays; the model has "
            f"{len(reference)}"
        )
    for i, (array, expected) in enumerate(zip(parameters, reference, strict=True)):
        array = np.asarray(array)
        if array.shape != np.shape(expected):
            return (
                f"parameter array {i} has shape {array.shape}; the model's has "
                f"shape {np.shape(expected)}"
            )
        if array.dtype != np.asarray(expected).dtype:
            return (
                f"parameter array {i} has dtype {array.dtype}; the model's is "
                f"{np.asarray(expected).dtype}"
            )
        if not np.all(np.isfinite(array)):
            return f"parameter array {i} holds NaN or infinity"
    if (
        not isinstance(n_rows, numbers.Integral)
        or isinstance(n_rows, bool)
        or n_rows <= 0
    ):
        return f"it reported {n_rows!r} training rows (a count > 0 is needed)"
    if declared_rows is not None and int(n_rows) != int(declared_rows):
        return (
            f"it reported {int(n_rows)} training rows; it declared "
            f"{int(declared_rows)} when it joined"
        )
    if not isinstance(loss, numbers.Real) or not np.isfinite(loss) or loss < 0:
        return f"it reported a training loss of {loss!r} (a finite value >= 0)"
    return None


#: Metrics whose range is wider than [0, 1] (the Brier score of more than two
#: classes reaches 2), as a client reports them.
_METRIC_UPPER = {
    prefix + m.key: m.upper
    for m in METRICS.values()
    if m.upper != 1.0
    for prefix, reported in (
        (VALIDATION_PREFIX, m.reported),
        (PERSONAL_PREFIX, m.personal),
    )
    if reported
}


def metric_upper(name):
    """The largest value a validation metric ``name`` can have (its lower is 0)."""
    return _METRIC_UPPER.get(name, 1.0)


def training_round_problem(
    parameters, n_rows, loss, *, reference, declared_rows, report=None
):
    """A training reply's problem on either backend, or None.

    Its parameters, rows and loss (``training_reply_problem``), then, with
    FairFed, its fairness report: ``report()`` returns that report's problem
    (``fairness_report_claim_problem``), called only once the rest passes.
    """
    problem = training_reply_problem(
        parameters, n_rows, loss, reference=reference, declared_rows=declared_rows
    )
    if problem is None and report is not None:
        problem = report()
    return problem


def evaluation_reply_problem(metrics, *, allowed, declared_rows=None):
    """Why evaluation metrics cannot be recorded, or None when they can.

    Parameters
    ----------
    metrics : mapping
        Metric name to value, as the client sent them.
    allowed : collection of str
        The metric names a client may send.
    declared_rows : int or None
        The evaluation rows the client declared when it joined; its
        ``num-examples`` must be that count.

    Returns
    -------
    problem : str or None
        What is wrong, in words; None for usable metrics.
    """
    unknown = sorted(set(metrics) - set(allowed))
    if unknown:
        return f"it sent unknown metrics {unknown}"
    for name, value in metrics.items():
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            return f"metric {name!r} is {value!r}, not a number"
        if name == NUM_EXAMPLES:
            if not (isinstance(value, numbers.Integral) and value >= 0):
                return f"it reported {value!r} evaluation rows"
            if declared_rows is not None and int(value) != int(declared_rows):
                return (
                    f"it reported {int(value)} evaluation rows; it declared "
                    f"{int(declared_rows)} when it joined"
                )
        elif name.startswith(VALIDATION_PREFIX) and not (
            np.isnan(value) or 0.0 <= value <= metric_upper(name)
        ):
            return f"metric {name!r} is {value!r}, outside [0, {metric_upper(name):g}]"
    return None


def claims_summary(reports, weights):
    """The federation's summary of what its clients reported about themselves.

    Parameters
    ----------
    reports : list of mapping
        Per reporting client, metric name to value (NaN where undefined).
    weights : list of float
        Per client, the rows its values are computed on.

    Returns
    -------
    summary : dict
        Per metric, the weighted mean over the clients where it is defined,
        and under ``<name>_median`` their median: a value the server cannot
        check, so it also gets a statistic that one client reporting false
        values cannot move beyond the honest clients' range. ``n_clients``
        counts the reporting clients.
    """
    weights = np.asarray(weights, dtype=np.float64)
    names = []
    for report in reports:
        names.extend(name for name in report if name not in names)
    summary = {}
    for name in names:
        column = np.array(
            [float(report.get(name, np.nan)) for report in reports], dtype=np.float64
        )
        defined = np.isfinite(column)
        if defined.any() and weights[defined].sum() > 0:
            summary[name] = float(np.average(column[defined], weights=weights[defined]))
            summary[f"{name}_median"] = float(np.median(column[defined]))
        else:
            summary[name] = summary[f"{name}_median"] = float("nan")
    summary["n_clients"] = len(reports)
    return summary
