"""The group penalty in O(n + K) against its former K x K matrix form.

A sensitive attribute with about as many values as rows (an id column) gives
K ~ n groups; the penalty must then neither build nor allocate anything K x K.
"""

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skfedida.penalty import (
    group_penalty,
    individual_penalty,
    standardized_group_penalty,
)


def _reference_group_penalty(scores, y, groups, n_groups=None, sample_weight=None):
    """The former implementation, verbatim: Delta as a K x K matrix."""
    if n_groups is None:
        n_groups = int(groups.max()) + 1 if groups.size else 0
    cells = groups * 2 + y.astype(np.intp, copy=False)
    weight = np.ones_like(scores) if sample_weight is None else sample_weight
    size = 2 * n_groups
    n = np.bincount(cells, weights=weight, minlength=size).reshape(n_groups, 2)
    S = np.bincount(cells, weights=weight * scores, minlength=size).reshape(n_groups, 2)
    totals = n.sum(axis=1)
    W = 0.5 * (totals.sum() ** 2 - np.dot(totals, totals))
    if W <= 0:
        return 0.0, np.zeros_like(scores)
    safe = np.where(totals > 0, totals, 1.0)[:, None]
    a = n / safe
    P = S / safe
    delta = P @ a.T - a @ P.T
    outer = np.outer(totals, totals)
    value = 0.5 * np.sum(outer * delta**2) / W
    cell_gradient = (2.0 / W) * (delta @ n)
    gradient = cell_gradient.ravel()[cells]
    if sample_weight is not None:
        gradient = gradient * sample_weight
    return float(value), gradient


@st.composite
def penalty_problems(draw):
    """Scores, 0/1 labels, codes in range(K) (not all present), optional weights."""
    n_groups = draw(st.integers(min_value=1, max_value=50))
    n = draw(st.integers(min_value=1, max_value=150))
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    rng = np.random.default_rng(seed)
    # Draw codes from a random subset of range(K), so some groups (possibly
    # the last ones, beyond groups.max()) are empty.
    present = rng.choice(
        n_groups, size=draw(st.integers(1, n_groups)), replace=False, shuffle=False
    )
    groups = rng.choice(present, size=n).astype(np.intp)
    label_rate = draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    y = (rng.random(n) < label_rate).astype(np.intp)
    kind = draw(st.sampled_from(["normal", "ties", "constant"]))
    offset = draw(st.floats(min_value=-20, max_value=20))
    if kind == "normal":
        scores = offset + draw(st.floats(0.01, 5.0)) * rng.normal(size=n)
    elif kind == "ties":
        scores = offset + rng.integers(-2, 3, size=n).astype(float)
    else:
        scores = np.full(n, offset)
    weighting = draw(st.sampled_from(["none", "uniform", "integer", "some_zero"]))
    if weighting == "none":
        sample_weight = None
    elif weighting == "uniform":
        sample_weight = rng.uniform(0.05, 5.0, size=n)
    elif weighting == "integer":
        sample_weight = rng.integers(1, 6, size=n).astype(float)
    else:  # zero weights can empty a group whose code is present
        sample_weight = rng.uniform(0.05, 5.0, size=n) * (rng.random(n) < 0.6)
    pass_n_groups = draw(st.booleans())
    return scores, y, groups, n_groups if pass_n_groups else None, sample_weight


@settings(max_examples=400, deadline=None)
@given(penalty_problems())
def test_group_penalty_equals_k_by_k_reference(problem):
    scores, y, groups, n_groups, sample_weight = problem
    value, gradient = group_penalty(scores, y, groups, n_groups, sample_weight)
    expected, expected_gradient = _reference_group_penalty(
        scores, y, groups, n_groups, sample_weight
    )
    assert isinstance(value, float)
    assert value == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert gradient.shape == scores.shape
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_fewer_than_two_weighted_groups_give_exact_zero(weighted):
    rng = np.random.default_rng(0)
    scores, y = rng.normal(size=20), rng.integers(0, 2, size=20)
    weight = rng.uniform(0.5, 2.0, size=20) if weighted else None
    # One present group out of five declared.
    value, gradient = group_penalty(scores, y, np.full(20, 3), 5, weight)
    assert value == 0.0 and isinstance(value, float)
    assert gradient.shape == (20,) and not gradient.any()
    # Two present groups, but all the weight of one of them is zero.
    groups = np.arange(20) % 2
    weight = np.where(groups == 1, 0.0, 1.0)
    value, gradient = group_penalty(scores, y, groups, 2, weight)
    assert value == 0.0 and not gradient.any()
    # No rows at all.
    empty = np.zeros(0)
    value, gradient = group_penalty(empty, empty.astype(int), empty.astype(int))
    assert value == 0.0 and gradient.shape == (0,)


def test_equal_scores_give_zero_penalty():
    """The zero start of training: the standardized penalty relies on value == 0."""
    y = np.array([0, 1, 0, 1, 1, 0])
    groups = np.array([0, 0, 1, 1, 2, 2])
    value, gradient = group_penalty(np.zeros(6), y, groups)
    assert value == 0.0 and not gradient.any()
    assert standardized_group_penalty(np.zeros(6), y, groups)[0] == 0.0


def test_large_common_offset_per_label_does_not_cancel():
    """Delta compares means within a label: a per-label shift changes nothing."""
    rng = np.random.default_rng(3)
    n = 500
    scores, y = rng.normal(size=n), rng.integers(0, 2, size=n)
    groups = rng.integers(0, 30, size=n)
    value, gradient = group_penalty(scores, y, groups, 30)
    shifted = scores + np.where(y == 1, 1e6, -3e5)
    value_shifted, gradient_shifted = group_penalty(shifted, y, groups, 30)
    assert value_shifted == pytest.approx(value, rel=1e-6)
    np.testing.assert_allclose(gradient_shifted, gradient, rtol=1e-6, atol=1e-12)


_N_LARGE = 200_000
#: A K x K float64 array at K = 200_000 is 320 GB; the rows themselves ~2 MB.
_PEAK_LIMIT = 200 * 2**20


def _large_k_problem(weighted):
    """Every row its own group: K = n = 200_000."""
    rng = np.random.default_rng(4)
    scores = rng.normal(size=_N_LARGE)
    y = rng.integers(0, 2, size=_N_LARGE)
    groups = rng.permutation(_N_LARGE)
    weight = rng.uniform(0.5, 2.0, size=_N_LARGE) if weighted else None
    return scores, y, groups, weight


def _traced_peak(func, *args):
    tracemalloc.start()
    try:
        result = func(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


@pytest.mark.parametrize("weighted", [False, True])
def test_group_penalty_with_one_group_per_row_fits_in_memory(weighted):
    scores, y, groups, weight = _large_k_problem(weighted)
    (value, gradient), peak = _traced_peak(
        group_penalty, scores, y, groups, _N_LARGE, weight
    )
    assert peak < _PEAK_LIMIT, f"peak traced memory {peak / 2**20:.0f} MB"
    assert np.isfinite(value) and value > 0
    assert gradient.shape == (_N_LARGE,) and np.all(np.isfinite(gradient))
    # With singleton groups every group mean is one row's score, so the group
    # penalty is the individual one (which never built anything K x K).
    expected, expected_gradient = individual_penalty(
        scores, y, groups, _N_LARGE, weight
    )
    assert value == pytest.approx(expected, rel=1e-9)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-7, atol=1e-15)


def test_standardized_group_penalty_with_one_group_per_row_fits_in_memory():
    scores, y, groups, weight = _large_k_problem(weighted=True)
    (value, gradient), peak = _traced_peak(
        standardized_group_penalty, scores, y, groups, _N_LARGE, weight
    )
    assert peak < _PEAK_LIMIT, f"peak traced memory {peak / 2**20:.0f} MB"
    assert np.isfinite(value) and value > 0
    assert gradient.shape == (_N_LARGE,) and np.all(np.isfinite(gradient))
