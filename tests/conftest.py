"""Fixtures shared by the test modules (helper functions are in _helpers.py)."""

import warnings

import pytest


@pytest.fixture
def quiet():
    """Ignore every warning in the test: ``@pytest.mark.usefixtures("quiet")``."""
    with warnings.catch_warnings(action="ignore"):
        yield
