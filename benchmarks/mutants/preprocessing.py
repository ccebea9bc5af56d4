"""Mutants of ``skfedida/preprocessing``."""

MUTANTS = []
