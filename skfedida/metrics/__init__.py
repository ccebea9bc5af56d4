"""Group fairness metrics, per-group reports and model-selection scorers.

Every metric takes ``(y_true, y_pred, *, sensitive_features, ...)`` and works
over the intersectional groups of one or several sensitive attributes.
"""

from ._fairness import (
    demographic_parity_difference,
    demographic_parity_ratio,
    equal_opportunity_difference,
    equalized_odds_difference,
    equalized_odds_ratio,
    fairness_summary,
    false_positive_rate_difference,
    group_report,
    positive_predictive_value_difference,
    true_positive_rate_difference,
)
from ._operating_point import (
    OperatingPoint,
    federated_operating_point,
    federated_threshold,
    score_histogram,
    selection_rate,
    threshold_at_rate,
)
from ._scorer import FAIRNESS_METRICS, make_fairness_scorer, make_tradeoff_scorer

__all__ = [
    "FAIRNESS_METRICS",
    "OperatingPoint",
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "equal_opportunity_difference",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "fairness_summary",
    "false_positive_rate_difference",
    "federated_operating_point",
    "federated_threshold",
    "group_report",
    "make_fairness_scorer",
    "make_tradeoff_scorer",
    "positive_predictive_value_difference",
    "score_histogram",
    "selection_rate",
    "threshold_at_rate",
    "true_positive_rate_difference",
]
