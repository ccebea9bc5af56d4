"""Scores of a multi-class model's probabilities, one definition for every report.

A round's evaluation on a client's held-out rows (``history_``, and the
Flower ClientApp's reply) and :func:`~skfedida.federated.evaluate_clients`
report the same metrics of the same rows; both compute them here.
"""

import numpy as np
from scipy.integrate import trapezoid
from sklearn.metrics import roc_auc_score


def binary_roc_auc(positive, scores):
    """``roc_auc_score`` of unweighted binary rows, to the bit, without its checks.

    ``positive`` says which rows are of the positive class, ``scores`` are
    finite floats. The same curve as scikit-learn's (its thresholds at the
    distinct scores, its dropped collinear points) and the same trapezoid
    rule: a federation scores every client's held-out rows every round, and
    the checks of ``roc_auc_score`` cost ten times its arithmetic on a few
    thousand rows. NaN (as roc_auc_score, without its warning) when the
    rows hold one class only.
    """
    positive = np.asarray(positive, dtype=bool)
    scores = np.asarray(scores, dtype=np.float64)
    n_positive = int(np.count_nonzero(positive))
    if n_positive in (0, positive.shape[0]):
        return np.nan
    if not np.isfinite(scores).all():
        return float(roc_auc_score(positive, scores))  # its error names them
    # Descending scores; the order within ties does not matter (the counts
    # are read at the end of each block of equal scores, and are exact).
    order = np.argsort(scores, kind="stable")[::-1]
    sorted_scores = scores[order]
    last = np.r_[np.flatnonzero(np.diff(sorted_scores)), scores.shape[0] - 1]
    tps = np.cumsum(positive[order].astype(np.float64))[last]
    fps = 1 + last.astype(np.float64) - tps
    if fps.shape[0] > 2:
        corner = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        fps, tps = fps[corner], tps[corner]
    fps = np.r_[0.0, fps]
    tps = np.r_[0.0, tps]
    return float(trapezoid(tps / tps[-1], fps / fps[-1]))


def ovr_roc_auc(codes, proba, sample_weight=None):
    """Each class's one-vs-rest AUROC, and their mean over the classes held.

    ``codes`` are class codes ``0 .. n_classes - 1`` (columns of ``proba``).
    A class is scored where the rows (of positive weight) hold it and some
    other class; a class the rows lack is NaN and left out of the mean
    (sklearn's ``multi_class="ovr"`` refuses such rows). With fewer than two
    classes held, everything is NaN.

    Returns
    -------
    mean : float
    per_class : list of float
    """
    n_classes = proba.shape[1]
    held = codes if sample_weight is None else codes[np.asarray(sample_weight) > 0]
    present = np.bincount(held, minlength=n_classes) > 0
    if present.sum() < 2:
        return np.nan, [np.nan] * n_classes
    per_class = [
        (
            float(roc_auc_score(codes == c, proba[:, c], sample_weight=sample_weight))
            if sample_weight is not None
            else binary_roc_auc(codes == c, proba[:, c])
        )
        if present[c]
        else np.nan
        for c in range(n_classes)
    ]
    return float(np.nanmean(per_class)), per_class


def multiclass_brier(codes, proba, sample_weight=None):
    """The squared error of the probabilities summed over classes, (weighted) mean."""
    truth = codes[:, None] == np.arange(proba.shape[1])[None, :]
    errors = np.sum((proba - truth) ** 2, axis=1)
    if sample_weight is None:
        return float(np.mean(errors))
    weight = np.asarray(sample_weight, dtype=np.float64)
    return float(np.dot(weight, errors) / weight.sum())
