"""Data sets: the shipped Adult split and synthetic federations."""

from ._adult import load_adult
from ._synthetic import make_federated_classification, make_roc_like

__all__ = ["load_adult", "make_federated_classification", "make_roc_like"]
