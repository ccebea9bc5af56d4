"""Mutants of ``skfedida/flower``."""

MUTANTS = []
