"""Post-processing: decisions made fair after training, from federated counts."""

from ._threshold_optimizer import FederatedThresholdOptimizer

__all__ = ["FederatedThresholdOptimizer"]
