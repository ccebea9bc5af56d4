"""Mutants of the client side of training (``federated/_client.py``)."""

MUTANTS = []
