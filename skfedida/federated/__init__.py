"""Federated training: the meta-estimator, evaluation, splitting, parameters."""

from ._aggregation import FairFed, Median, QFedAvg, TrimmedMean, WeightedMean
from ._estimator import FederatedEstimator
from ._evaluation import evaluate_clients
from ._parameters import get_parameters, n_samples_seen, set_parameters
from ._privacy import DifferentialPrivacy
from ._secure_aggregation import SecureAggregation
from ._split import ClientStratifiedKFold

__all__ = [
    "ClientStratifiedKFold",
    "DifferentialPrivacy",
    "FairFed",
    "FederatedEstimator",
    "Median",
    "QFedAvg",
    "SecureAggregation",
    "TrimmedMean",
    "WeightedMean",
    "evaluate_clients",
    "get_parameters",
    "n_samples_seen",
    "set_parameters",
]
