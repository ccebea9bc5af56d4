"""Scores of a multi-class model's probabilities, one definition for every report.

A round's evaluation on a client's held-out rows (``history_``, and the
Flower ClientApp's reply) and :func:`~skfedida.federated.evaluate_clients`
report the same metrics of the same rows; both compute them here.
"""

import numpy as np
from sklearn.metrics import roc_auc_score


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
        float(roc_auc_score(codes == c, proba[:, c], sample_weight=sample_weight))
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
