"""Federated training: the meta-estimator, evaluation, splitting, parameters."""

from ._estimator import FederatedEstimator
from ._evaluation import evaluate_clients
from ._parameters import get_parameters, n_samples_seen, set_parameters
from ._split import ClientStratifiedKFold

__all__ = [
    "ClientStratifiedKFold",
    "FederatedEstimator",
    "evaluate_clients",
    "get_parameters",
    "n_samples_seen",
    "set_parameters",
]
