"""Mutants of ``skfedida/datasets``."""

MUTANTS = []
