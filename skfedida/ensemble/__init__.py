"""Gradient-boosted trees with FedIDA's fairness penalty."""

from ._gradient_boosting import FairHistGradientBoostingClassifier

__all__ = ["FairHistGradientBoostingClassifier"]
