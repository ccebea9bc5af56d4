"""Federated preprocessing: scikit-learn's transformers, fitted without pooling a row.

Each transformer is its scikit-learn parent whose ``fit`` takes the
clients' statistics instead of their rows (``fit(X, clients=...)``, or
inside a ``FederatedEstimator`` pipeline, or on Flower). Fitted on one
client it equals the parent; on several, the parent fitted on the pooled
rows.
"""

from ._data import (
    FederatedMinMaxScaler,
    FederatedOneHotEncoder,
    FederatedSimpleImputer,
    FederatedStandardScaler,
)

__all__ = [
    "FederatedMinMaxScaler",
    "FederatedOneHotEncoder",
    "FederatedSimpleImputer",
    "FederatedStandardScaler",
]
