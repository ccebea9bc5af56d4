"""Convex fairness penalties over all pairs of intersectional groups.

The penalties the fairness-penalised classifiers minimise, as functions of
scores, labels and group codes (see ``skfedida._models._penalty`` for the
algebra, and the user guide's "The fairness penalty, and why it is
squared" for why the paper's Eq. 2 is changed). This module is where users
import them from.
"""

from ._models._penalty import (
    PENALTIES,
    group_penalty,
    individual_penalty,
    standardized_group_penalty,
)

__all__ = [
    "PENALTIES",
    "group_penalty",
    "individual_penalty",
    "standardized_group_penalty",
]
