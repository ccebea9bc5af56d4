"""skfedida: fair federated learning (FedIDA) for scikit-learn.

FedIDA (federated learning for imbalance and disparity awareness) combines a
fairness-aware oversampler, a convex group fairness penalty and any federated
optimiser. This package provides them as scikit-learn and imbalanced-learn
components.
"""

from . import datasets, metrics

__version__ = "0.1.0.dev0"

__all__ = ["__version__", "datasets", "metrics"]
