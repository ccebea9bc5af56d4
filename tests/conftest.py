"""Fixtures shared by the test modules (helper functions are in _helpers.py)."""

import warnings

import pytest


@pytest.fixture
def quiet():
    """Ignore every warning in the test: ``@pytest.mark.usefixtures("quiet")``."""
    with warnings.catch_warnings(action="ignore"):
        yield


@pytest.fixture(autouse=True)
def _no_client_fails_after_its_test():
    """Reset ``FailingLogistic.failing_seeds`` (a class attribute tests set).

    A test that leaves seeds failing makes later tests fail in clients they
    never meant to fail, but only in some orders of the test files.
    """
    yield
    from _helpers import FailingLogistic

    FailingLogistic.failing_seeds = frozenset()
