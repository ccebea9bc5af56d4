"""Mutants written from the source alone, without reading the tests."""

MUTANTS = []
