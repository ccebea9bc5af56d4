"""The closed-form penalties against the literal pair loop (a test-only oracle)."""

import numpy as np
import pytest
from scipy.optimize import check_grad

from skfedida.penalty import (
    group_penalty,
    individual_penalty,
    standardized_group_penalty,
)


def _pair_loop(scores, y, groups, weight, squared_inside):
    """Literal definition: loops over every pair of groups and of rows."""
    n_groups = groups.max() + 1
    sizes = [weight[groups == k].sum() for k in range(n_groups)]
    normaliser = sum(
        sizes[k] * sizes[m] for k in range(n_groups) for m in range(k + 1, n_groups)
    )
    value = 0.0
    for k in range(n_groups):
        for m in range(k + 1, n_groups):
            total = 0.0
            for i in np.flatnonzero(groups == k):
                for j in np.flatnonzero(groups == m):
                    if y[i] == y[j]:
                        difference = scores[i] - scores[j]
                        total += (
                            weight[i]
                            * weight[j]
                            * (difference**2 if squared_inside else difference)
                        )
            if squared_inside:  # individual: mean squared difference
                value += total / normaliser
            else:  # group: squared mean difference, weighted by n_k n_l / W
                delta = total / (sizes[k] * sizes[m])
                value += sizes[k] * sizes[m] / normaliser * delta**2
    return value


@pytest.mark.parametrize("n_groups", [2, 3, 4, 5])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "penalty, squared_inside", [(group_penalty, False), (individual_penalty, True)]
)
def test_closed_form_equals_pair_loop(n_groups, weighted, penalty, squared_inside):
    rng = np.random.default_rng(n_groups)
    n = 36
    scores = rng.normal(size=n) * 2
    y = rng.integers(0, 2, size=n)
    groups = rng.permutation(np.arange(n) % n_groups)
    weight = rng.uniform(0.2, 3.0, size=n) if weighted else np.ones(n)
    value, gradient = penalty(scores, y, groups, n_groups, weight if weighted else None)
    expected = _pair_loop(scores, y, groups, weight, squared_inside)
    assert value == pytest.approx(expected, abs=1e-10, rel=1e-10)

    def numeric(i, eps=1e-6):
        bumped = scores.copy()
        bumped[i] += eps
        up = _pair_loop(bumped, y, groups, weight, squared_inside)
        bumped[i] -= 2 * eps
        down = _pair_loop(bumped, y, groups, weight, squared_inside)
        return (up - down) / (2 * eps)

    # The oracle's central difference is exact for a quadratic up to round-off.
    for i in range(0, n, 5):
        assert gradient[i] == pytest.approx(numeric(i), abs=1e-8)
    assert (
        check_grad(
            lambda s: penalty(s, y, groups, n_groups, weight)[0],
            lambda s: penalty(s, y, groups, n_groups, weight)[1],
            scores,
        )
        < 1e-6
    )


def test_unsquared_sum_over_ordered_pairs_is_zero():
    """Why the square: the paper's Eq. 2 as printed cancels to 0."""
    rng = np.random.default_rng(0)
    scores, y = rng.normal(size=30), rng.integers(0, 2, size=30)
    groups = np.arange(30) % 3
    total = 0.0
    for k in range(3):
        for m in range(3):
            if k != m:
                for i in np.flatnonzero(groups == k):
                    for j in np.flatnonzero(groups == m):
                        total += (y[i] == y[j]) * (scores[i] - scores[j])
    assert total == pytest.approx(0.0, abs=1e-10)
    assert group_penalty(scores, y, groups)[0] > 0


def test_penalty_ignores_a_common_shift_and_is_zero_for_one_group():
    rng = np.random.default_rng(1)
    scores, y = rng.normal(size=40), rng.integers(0, 2, size=40)
    groups = np.arange(40) % 4
    for penalty in (group_penalty, individual_penalty):
        value, gradient = penalty(scores, y, groups)
        shifted, _ = penalty(scores + 3.0, y, groups)
        assert shifted == pytest.approx(value)
        # Shifting every score changes nothing, so the gradient sums to 0.
        assert gradient.sum() == pytest.approx(0.0, abs=1e-12)
        value, gradient = penalty(scores, y, np.zeros(40, dtype=int))
        assert value == 0.0 and not gradient.any()


def test_a_million_rows_reduce_to_their_cell_sums():
    """No pair loop: the penalty of 1e6 rows is that of their 80 cell means.

    The group penalty depends on the rows only through each (group, label)
    cell's count and score sum, so one row per cell, at the cell's mean score
    and weighted by its count, gives the same value; and every row's gradient
    is its cell's gradient per unit weight.
    """
    rng = np.random.default_rng(2)
    n = 1_000_000
    scores, y = rng.normal(size=n), rng.integers(0, 2, size=n)
    groups = rng.integers(0, 40, size=n)
    value, gradient = group_penalty(scores, y, groups, 40)
    cells = groups * 2 + y
    counts = np.bincount(cells, minlength=80)
    means = np.bincount(cells, weights=scores, minlength=80) / counts
    cell_groups, cell_labels = np.divmod(np.arange(80), 2)
    reduced, reduced_gradient = group_penalty(
        means, cell_labels, cell_groups, 40, sample_weight=counts.astype(float)
    )
    assert value == pytest.approx(reduced, rel=1e-9)
    np.testing.assert_allclose(
        gradient, (reduced_gradient / counts)[cells], rtol=1e-9, atol=1e-15
    )


@pytest.mark.parametrize(
    "penalty", [group_penalty, individual_penalty, standardized_group_penalty]
)
def test_penalties_take_lists_as_their_constraints_say(penalty):
    scores, y, groups = [2.0, 0.0, 1.0, -1.0], [1, 1, 0, 0], [0, 1, 0, 1]
    value, gradient = penalty(scores, y, groups)
    expected, expected_gradient = penalty(
        np.array(scores), np.array(y), np.array(groups)
    )
    assert value == expected
    np.testing.assert_array_equal(gradient, expected_gradient)


def _within_label_variance(scores, y, weight):
    means = {
        label: np.average(scores[y == label], weights=weight[y == label])
        for label in np.unique(y)
    }
    residual = scores - np.array([means[label] for label in y])
    return np.average(residual**2, weights=weight)


@pytest.mark.parametrize("n_classes", [3, 4])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "penalty, kind",
    [
        (group_penalty, "group"),
        (individual_penalty, "individual"),
        (standardized_group_penalty, "standardized"),
    ],
)
def test_multiclass_closed_form_equals_pair_loop(n_classes, weighted, penalty, kind):
    # One score column per class, pairs matched on the true class (C labels),
    # the columns' values summed with class weights (issue 21).
    rng = np.random.default_rng(n_classes)
    n, n_groups = 40, 3
    scores = rng.normal(size=(n, n_classes)) * 2
    y = rng.integers(0, n_classes, size=n)
    groups = rng.permutation(np.arange(n) % n_groups)
    weight = rng.uniform(0.2, 3.0, size=n) if weighted else np.ones(n)
    class_weight = rng.uniform(0.5, 2.0, size=n_classes)

    def oracle(flat):
        s = flat.reshape(n, n_classes)
        total = 0.0
        for c in range(n_classes):
            column = _pair_loop(s[:, c], y, groups, weight, kind == "individual")
            if kind == "standardized":
                column /= _within_label_variance(s[:, c], y, weight)
            total += class_weight[c] * column
        return total

    value, gradient = penalty(
        scores, y, groups, n_groups, weight if weighted else None, class_weight
    )
    assert gradient.shape == scores.shape
    assert value == pytest.approx(oracle(scores.ravel()), rel=1e-10, abs=1e-12)
    flat, eps = scores.ravel(), 1e-6
    for i in range(0, flat.size, 7):
        up, down = flat.copy(), flat.copy()
        up[i] += eps
        down[i] -= eps
        numeric = (oracle(up) - oracle(down)) / (2 * eps)
        assert gradient.ravel()[i] == pytest.approx(numeric, rel=1e-5, abs=1e-7)


def test_multiclass_penalty_is_zero_when_groups_match_within_every_true_class():
    rng = np.random.default_rng(0)
    # Two groups with different class mixes but, within each true class, the
    # same scores: nothing to penalise, although the groups' overall mean
    # scores differ.
    base = rng.normal(size=(3, 3))
    y = np.r_[
        np.zeros(10, int),
        np.ones(5, int),
        np.full(5, 2),
        np.zeros(2, int),
        np.ones(8, int),
        np.full(10, 2),
    ]
    groups = np.r_[np.zeros(20, int), np.ones(20, int)]
    scores = base[y]
    assert group_penalty(scores, y, groups)[0] == pytest.approx(0, abs=1e-12)
    assert individual_penalty(scores, y, groups)[0] == pytest.approx(0, abs=1e-12)
    scores[groups == 1, 2] += 0.5
    assert group_penalty(scores, y, groups)[0] > 1e-3


def test_binary_labels_with_two_score_columns_are_two_binary_penalties():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(50, 2))
    y, groups = rng.integers(0, 2, 50), rng.integers(0, 3, 50)
    value, gradient = group_penalty(scores, y, groups, class_weight=[1.0, 0.5])
    first, second = (group_penalty(scores[:, c], y, groups) for c in (0, 1))
    assert value == pytest.approx(first[0] + 0.5 * second[0])
    np.testing.assert_allclose(gradient, np.column_stack([first[1], 0.5 * second[1]]))


@pytest.mark.parametrize(
    "class_weight, match",
    [([1.0, 1.0], "3 non-negative weights"), ([1.0, -1.0, 1.0], "non-negative")],
)
def test_class_weight_must_match_the_score_columns(class_weight, match):
    scores, y, groups = np.zeros((6, 3)), np.arange(6) % 3, np.arange(6) % 2
    with pytest.raises(ValueError, match=match):
        group_penalty(scores, y, groups, class_weight=class_weight)


def test_scores_of_three_dimensions_are_refused():
    with pytest.raises(ValueError, match=r"1-D .* or 2-D"):
        group_penalty(np.zeros((2, 2, 2)), [0, 1], [0, 1])


@pytest.mark.parametrize(
    "y, match",
    [
        ([0.0, 0.5, 1.0, 1.0], "non-integer values such as 0.5"),
        ([-1, 1, -1, 1], "has -1"),
        (["a", "b", "a", "b"], "got dtype <U1"),
    ],
)
def test_labels_that_are_not_codes_are_refused(y, match):
    # A float label was truncated (0.5 -> 0), merging labels silently.
    with pytest.raises(ValueError, match=match):
        group_penalty([0.1, 0.2, 0.3, 0.4], y, [0, 0, 1, 1])


def test_class_weight_needs_score_columns():
    with pytest.raises(ValueError, match="the scores are 1-D"):
        group_penalty([0.1, 0.2], [0, 1], [0, 1], class_weight=[1.0, 2.0])
