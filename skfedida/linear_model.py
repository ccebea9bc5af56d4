"""Linear models with a convex group fairness penalty.

The estimator is defined with the other fairness-penalised classifiers in
``skfedida._models`` (their shared base, penalties and compiled loops); this
module is where users import it from.
"""

from ._models._logistic import FairPenaltyLogisticRegression

__all__ = ["FairPenaltyLogisticRegression"]
