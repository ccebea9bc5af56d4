"""Mutants of ``skfedida/plotting``."""

MUTANTS = []
