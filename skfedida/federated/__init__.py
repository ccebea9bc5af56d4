"""Federated training: the parameter protocol (more to come)."""

from ._parameters import get_parameters, n_samples_seen, set_parameters

__all__ = ["get_parameters", "n_samples_seen", "set_parameters"]
