"""skfedida: fair federated learning (FedIDA) for scikit-learn.

FedIDA (federated learning for imbalance and disparity awareness) combines a
fairness-aware oversampler, a convex group fairness penalty and any federated
optimiser. This package provides them as scikit-learn and imbalanced-learn
components.
"""

from . import datasets, metrics, over_sampling
from .datasets import load_adult, make_federated_classification, make_roc_like
from .metrics import (
    demographic_parity_difference,
    demographic_parity_ratio,
    equalized_odds_difference,
    fairness_summary,
    false_positive_rate_difference,
    group_report,
    make_fairness_scorer,
    make_tradeoff_scorer,
    positive_predictive_value_difference,
    true_positive_rate_difference,
)
from .over_sampling import FairnessAwareROSE

__version__ = "0.1.0.dev0"

__all__ = [
    "FairnessAwareROSE",
    "__version__",
    "datasets",
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equalized_odds_difference",
    "fairness_summary",
    "false_positive_rate_difference",
    "group_report",
    "load_adult",
    "make_fairness_scorer",
    "make_federated_classification",
    "make_roc_like",
    "make_tradeoff_scorer",
    "metrics",
    "over_sampling",
    "positive_predictive_value_difference",
    "true_positive_rate_difference",
]
