"""Warnings of skfedida."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["DegenerateModelWarning", "InactivePenaltyWarning"]

#: A model whose decisions put at least this share of rows in one class.
_DEGENERATE_SHARE = 0.99


class DegenerateModelWarning(UserWarning):
    """A fitted model whose decisions are (almost) all one class.

    Such a model has tiny disparities at its own threshold (it selects almost
    nobody, or almost everybody, in every group) without treating the groups
    more alike. It usually means the fairness weight is too large for the
    data: the penalty was lowered by shrinking every score to one value.

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import DegenerateModelWarning
    >>> warnings.simplefilter("error", DegenerateModelWarning)
    """


class InactivePenaltyWarning(UserWarning):
    """A fairness weight was set, but the penalty cannot act.

    Raised when ``fairness > 0`` and no sensitive attributes were given, or
    they take a single value: the model is then the unpenalised one. Filter it
    by this class, not by its message, where that is expected (e.g. the
    ``fairness=0`` baseline of a lambda search).

    Examples
    --------
    >>> import warnings
    >>> from skfedida.exceptions import InactivePenaltyWarning
    >>> warnings.simplefilter("ignore", InactivePenaltyWarning)
    """


def warn_if_degenerate(positive_share, owner, stacklevel=3, rows="training rows"):
    """Warn when decisions put >= 99% of the ``rows`` in one class."""
    if not np.isfinite(positive_share):
        return
    if positive_share <= 1 - _DEGENERATE_SHARE or positive_share >= _DEGENERATE_SHARE:
        side = "positive" if positive_share >= _DEGENERATE_SHARE else "negative"
        share = max(positive_share, 1 - positive_share)
        warnings.warn(
            f"{owner} predicts the {side} class for {share:.1%} "
            f"of its {rows}: its disparities at the 0.5 threshold are "
            "near 0 because it treats (almost) everybody alike, not because it "
            "treats the groups alike. Lower the fairness weight (with "
            "penalty='group', shrinking every score is the cheapest way to lower "
            "the penalty; penalty='group_standardized' avoids that at moderate "
            "weights, but at large ones a constant model is its optimum too), "
            "and compare models at a matched selection rate "
            "(evaluate_clients(..., threshold='prevalence')).",
            DegenerateModelWarning,
            stacklevel=stacklevel,
        )
