"""Mutants of ``skfedida/postprocessing``."""

MUTANTS = []
