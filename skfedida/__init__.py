"""Fair federated learning (FedIDA) for scikit-learn.

FedIDA (federated learning for imbalance and disparity awareness) combines a
fairness-aware oversampler, a convex group fairness penalty and any federated
optimiser. This package provides them as scikit-learn and imbalanced-learn
components.
"""

from . import (
    datasets,
    ensemble,
    exceptions,
    federated,
    linear_model,
    metrics,
    model_selection,
    neural_network,
    over_sampling,
    plotting,
    postprocessing,
    preprocessing,
)
from .datasets import load_adult, make_federated_classification, make_roc_like
from .ensemble import FairHistGradientBoostingClassifier
from .exceptions import (
    ClientDataWarning,
    DataScaleWarning,
    DegenerateModelWarning,
    EmptyRangeWarning,
    InactiveGroupBalancingWarning,
    InactivePenaltyWarning,
    OperatingPointWarning,
    OutlyingUpdateWarning,
    SensitiveFeaturesWarning,
    SkfedidaWarning,
)
from .federated import (
    ClientStratifiedKFold,
    DifferentialPrivacy,
    FairFed,
    FederatedEstimator,
    Median,
    QFedAvg,
    TrimmedMean,
    WeightedMean,
    evaluate_clients,
    get_parameters,
    n_samples_seen,
    set_parameters,
)
from .linear_model import FairPenaltyLogisticRegression
from .metrics import (
    OperatingPoint,
    demographic_parity_difference,
    demographic_parity_ratio,
    equal_opportunity_difference,
    equalized_odds_difference,
    equalized_odds_ratio,
    fairness_summary,
    false_positive_rate_difference,
    federated_operating_point,
    federated_threshold,
    group_report,
    make_fairness_scorer,
    make_tradeoff_scorer,
    positive_predictive_value_difference,
    score_histogram,
    selection_rate,
    threshold_at_rate,
    true_positive_rate_difference,
)
from .model_selection import (
    CoarseToFineSearchCV,
    fairest_within,
    lambda_range,
    make_fedida,
)
from .neural_network import FairMLPClassifier
from .over_sampling import FairnessAwareROSE
from .penalty import group_penalty, individual_penalty, standardized_group_penalty
from .plotting import (
    ClientMetricsDisplay,
    ThresholdOptimizerDisplay,
    TradeoffDisplay,
    plot_threshold_optimizer,
)
from .postprocessing import FederatedThresholdOptimizer
from .preprocessing import (
    FederatedMinMaxScaler,
    FederatedOneHotEncoder,
    FederatedSimpleImputer,
    FederatedStandardScaler,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "ClientDataWarning",
    "ClientMetricsDisplay",
    "ClientStratifiedKFold",
    "CoarseToFineSearchCV",
    "DataScaleWarning",
    "DegenerateModelWarning",
    "DifferentialPrivacy",
    "EmptyRangeWarning",
    "FairFed",
    "FairHistGradientBoostingClassifier",
    "FairMLPClassifier",
    "FairPenaltyLogisticRegression",
    "FairnessAwareROSE",
    "FederatedEstimator",
    "FederatedMinMaxScaler",
    "FederatedOneHotEncoder",
    "FederatedSimpleImputer",
    "FederatedStandardScaler",
    "FederatedThresholdOptimizer",
    "InactiveGroupBalancingWarning",
    "InactivePenaltyWarning",
    "Median",
    "OperatingPoint",
    "OperatingPointWarning",
    "OutlyingUpdateWarning",
    "QFedAvg",
    "SensitiveFeaturesWarning",
    "SkfedidaWarning",
    "ThresholdOptimizerDisplay",
    "TradeoffDisplay",
    "TrimmedMean",
    "WeightedMean",
    "__version__",
    "datasets",
    "demographic_parity_difference",
    "demographic_parity_ratio",
    "ensemble",
    "equal_opportunity_difference",
    "equalized_odds_difference",
    "equalized_odds_ratio",
    "evaluate_clients",
    "exceptions",
    "fairest_within",
    "fairness_summary",
    "false_positive_rate_difference",
    "federated",
    "federated_operating_point",
    "federated_threshold",
    "get_parameters",
    "group_penalty",
    "group_report",
    "individual_penalty",
    "lambda_range",
    "linear_model",
    "load_adult",
    "make_fairness_scorer",
    "make_federated_classification",
    "make_fedida",
    "make_roc_like",
    "make_tradeoff_scorer",
    "metrics",
    "model_selection",
    "n_samples_seen",
    "neural_network",
    "over_sampling",
    "plot_threshold_optimizer",
    "plotting",
    "positive_predictive_value_difference",
    "postprocessing",
    "preprocessing",
    "score_histogram",
    "selection_rate",
    "set_parameters",
    "standardized_group_penalty",
    "threshold_at_rate",
    "true_positive_rate_difference",
]
