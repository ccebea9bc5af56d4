"""The rate constraints' machinery, shared by every model family (issue 45).

Each expectation is derived without the code under test: the operating
point and the groups' rates by brute force over the rows (the randomised
rule at bin resolution, written out per row), the term's gradient by finite
differences of its value and of the smoothed rates computed directly, the
multipliers' step by hand.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, logit

from skfedida._models import _constraints
from skfedida._models._constraints import (
    MULTIPLIER_BOUND,
    MULTIPLIER_RATE,
    RateConstraint,
    constraint_rates,
    largest_gaps,
    rate_histograms,
    term_gradient,
    term_value,
)

N_BINS = 200


def _rows(seed, n=3000, n_groups=3):
    rng = np.random.default_rng(seed)
    groups = rng.integers(0, n_groups, n)
    y = (rng.random(n) < 0.2 + 0.15 * groups).astype(int)
    scores = rng.normal(size=n) + 0.7 * groups + 1.5 * y - 1.5
    weight = rng.uniform(0.5, 2.0, n)
    return scores, y, groups, weight


def _brute_force(scores, y, groups, weight, rate, n_groups, n_bins=N_BINS):
    """The randomised rule at bin resolution, row by row, and each group's rates."""
    bins = np.minimum((expit(scores) * n_bins).astype(int), n_bins - 1)
    total = weight.sum()
    # Per bin, from the top: the first bin whose rows, with all above it,
    # reach the target weight holds the cut.
    order = np.argsort(-np.arange(n_bins))
    above = 0.0
    for b in order:
        inside = weight[bins == b].sum()
        if above + inside >= rate * total:
            share = 0.0 if inside == 0 else (rate * total - above) / inside
            cut = b
            break
        above += inside
    selected = np.where(bins > cut, 1.0, np.where(bins == cut, share, 0.0))
    rates = {}
    for name, labels in {
        "selection_rate": (0, 1),
        "false_positive_rate": (0,),
        "true_positive_rate": (1,),
    }.items():
        values = []
        for g in range(n_groups):
            rows = (groups == g) & np.isin(y, labels)
            w = weight[rows]
            values.append(np.dot(w, selected[rows]) / w.sum() if w.sum() else np.nan)
        rates[name] = np.array(values)
    return cut, share, rates


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), rate=st.floats(0.05, 0.95))
def test_the_operating_point_and_rates_are_the_rows_randomised_rule(seed, rate):
    scores, y, groups, weight = _rows(seed)
    histograms = rate_histograms(scores, 2 * groups + y, weight, 6, N_BINS)
    constraint = RateConstraint(
        "equalized_odds",
        tolerance=0.0,
        target_rate=rate,
        n_groups=3,
        n_bins=N_BINS,
    )
    point = constraint.read(histograms)
    cut, share, rates = _brute_force(scores, y, groups, weight, rate, 3)
    # The threshold is the top `share` of the cut's bin, in logits.
    expected = logit((cut + 1 - share) / N_BINS)
    assert point["threshold"] == pytest.approx(expected, rel=1e-9, abs=1e-9)
    # equalized_odds constrains the TPR and the FPR, in fairlearn's order.
    assert constraint.rates == ("true_positive_rate", "false_positive_rate")
    np.testing.assert_allclose(point["rates"][0], rates["true_positive_rate"])
    np.testing.assert_allclose(point["rates"][1], rates["false_positive_rate"])


def test_the_selected_share_is_the_target_exactly():
    scores, y, groups, weight = _rows(1)
    histograms = rate_histograms(scores, 2 * groups + y, weight, 6, N_BINS)
    point = RateConstraint(
        "demographic_parity", tolerance=0, target_rate=0.3, n_groups=3, n_bins=N_BINS
    ).read(histograms)
    # The groups' selection rates, weighed by their rows, are the target.
    sizes = np.bincount(groups, weights=weight)
    assert np.dot(point["rates"][0], sizes) / sizes.sum() == pytest.approx(0.3)


def test_prevalence_is_the_weighted_share_of_positive_rows():
    scores, y, groups, weight = _rows(2)
    constraint = RateConstraint(
        "demographic_parity",
        tolerance=0,
        target_rate="prevalence",
        n_groups=3,
        n_bins=N_BINS,
    )
    constraint.read(rate_histograms(scores, 2 * groups + y, weight, 6, N_BINS))
    assert constraint.target_rate == pytest.approx(np.average(y, weights=weight))


def test_the_temperature_grows_with_the_scale_of_the_scores():
    scores, y, groups, weight = _rows(3)
    widths = []
    for scale in (0.5, 1.0, 2.0):
        histograms = rate_histograms(
            scale * scores, 2 * groups + y, weight, 6, n_bins=10**5
        )
        widths.append(
            RateConstraint(
                "demographic_parity",
                tolerance=0,
                target_rate=0.3,
                n_groups=3,
                n_bins=10**5,
            ).read(histograms)["temperature"]
        )
    # On a fine grid the width is the scores' own: it doubles with them.
    assert widths[1] / widths[0] == pytest.approx(2.0, rel=0.02)
    assert widths[2] / widths[1] == pytest.approx(2.0, rel=0.02)
    # About 2 * SMOOTHING_SHARE of the rows lie within one width of the cut.
    point = RateConstraint(
        "demographic_parity", tolerance=0, target_rate=0.3, n_groups=3, n_bins=10**5
    ).read(rate_histograms(scores, 2 * groups + y, weight, 6, n_bins=10**5))
    near = np.abs(scores - point["threshold"]) <= point["temperature"]
    assert np.average(near, weights=weight) == pytest.approx(
        2 * _constraints.SMOOTHING_SHARE, abs=0.01
    )


def _smoothed_rates(scores, y, groups, weight, threshold, temperature, rates):
    """Each group's sigmoid-smoothed rates, straight from the rows."""
    smooth = expit((scores - threshold) / temperature)
    labels = {
        "selection_rate": (0, 1),
        "false_positive_rate": (0,),
        "true_positive_rate": (1,),
    }
    out = []
    for name in rates:
        per_group = []
        for g in range(groups.max() + 1):
            rows = (groups == g) & np.isin(y, labels[name])
            per_group.append(np.dot(weight[rows], smooth[rows]) / weight[rows].sum())
        out.append(per_group)
    return np.array(out)


@pytest.mark.parametrize(
    "constraints",
    [
        "demographic_parity",
        "false_positive_rate_parity",
        "true_positive_rate_parity",
        "equalized_odds",
    ],
)
def test_the_term_is_the_lagrangian_of_the_smoothed_rates(constraints):
    scores, y, groups, weight = _rows(4, n=400)
    cells = 2 * groups + y
    constraint = RateConstraint(
        constraints, tolerance=0.0, target_rate=0.3, n_groups=3, n_bins=N_BINS
    )
    for _ in range(3):  # multipliers away from zero
        constraint.propose(rate_histograms(scores, cells, weight, 6, N_BINS))
        constraint.commit()
    term = constraint.term()
    assert np.any(term["coefficient"] != 0)

    def lagrangian(s):
        # sum over pairs of multiplier * (Rs_g - Rs_h), per unit of a mean
        # over all the rows: what the term is, times the rows' weight.
        smooth = _smoothed_rates(
            s,
            y,
            groups,
            weight,
            term["threshold"],
            term["temperature"],
            constraint_rates(constraints),
        )
        gaps = smooth[:, :, None] - smooth[:, None, :]
        return float(np.sum(constraint.multipliers * gaps))

    total = weight.sum()
    # The term's value differs from the Lagrangian by a constant only: the
    # same gradient, each row's by central differences.
    gradient = term_gradient(scores, cells, weight, term) / total
    rows = np.random.default_rng(0).choice(scores.size, 25, replace=False)
    step = 1e-6
    for i in rows:
        up, down = scores.copy(), scores.copy()
        up[i] += step
        down[i] -= step
        numeric = (lagrangian(up) - lagrangian(down)) / (2 * step)
        assert gradient[i] == pytest.approx(numeric, rel=1e-5, abs=1e-10)
        value = (
            term_value(up, cells, weight, term) - term_value(down, cells, weight, term)
        ) / (2 * step * total)
        assert value == pytest.approx(numeric, rel=1e-5, abs=1e-10)


def test_the_multipliers_step_on_the_violations_by_hand():
    # Two groups of 100 rows, all negative: FPR is the selection rate. Group
    # 1 scores above group 0, so at a 30% rate it is selected 60% of the
    # time and group 0 0% of the time.
    y = np.zeros(200, dtype=int)
    groups = np.repeat([0, 1], 100)
    scores = np.where(groups == 1, np.linspace(0.5, 2, 200), np.linspace(-2, -0.5, 200))
    histograms = rate_histograms(scores, 2 * groups + y, np.ones(200), 4, N_BINS)
    constraint = RateConstraint(
        "false_positive_rate_parity",
        tolerance=0.1,
        target_rate=0.3,
        n_groups=2,
        n_bins=N_BINS,
    )
    term = constraint.propose(histograms)
    # Only rate(1) - rate(0) - 0.1 = 0.5 is violated.
    np.testing.assert_allclose(
        constraint._pending[1], [[[0.0, 0.0], [MULTIPLIER_RATE * 0.5, 0.0]]]
    )
    # Not kept until committed.
    np.testing.assert_array_equal(constraint.multipliers, np.zeros((1, 2, 2)))
    constraint.commit()
    lam = MULTIPLIER_RATE * 0.5
    # Group 1's negatives carry +lam W / W_1 (pushed down), group 0's -lam W /
    # W_0 (pushed up); its positives (none here) nothing.
    np.testing.assert_allclose(term["coefficient"], [-lam * 2, 0.0, lam * 2, 0.0])
    np.testing.assert_allclose(constraint.gaps[-1], [0.6])


def test_the_multipliers_sum_is_bounded_and_undefined_rates_weigh_nothing():
    rng = np.random.default_rng(5)
    groups = rng.integers(0, 4, 2000)
    # Group 3 has no positives: its TPR is undefined.
    y = np.where(groups == 3, 0, rng.integers(0, 2, 2000))
    scores = 2.0 * groups + y + rng.normal(size=2000)
    constraint = RateConstraint(
        "true_positive_rate_parity",
        tolerance=0.0,
        target_rate=0.4,
        n_groups=4,
        n_bins=N_BINS,
    )
    histograms = rate_histograms(scores, 2 * groups + y, np.ones(2000), 8, N_BINS)
    for _ in range(200):
        term = constraint.propose(histograms)
        constraint.commit()
    assert constraint.multipliers.sum() == pytest.approx(MULTIPLIER_BOUND)
    assert np.all(constraint.multipliers >= 0)
    assert np.all(constraint.multipliers[0, 3, :] == 0)
    assert np.all(constraint.multipliers[0, :, 3] == 0)
    assert np.all(np.diagonal(constraint.multipliers[0]) == 0)
    assert np.isnan(constraint.group_rates[0, 3])
    assert term["coefficient"][6] == 0 and term["coefficient"][7] == 0
    assert largest_gaps(constraint.group_rates)[0] == pytest.approx(
        np.nanmax(constraint.group_rates) - np.nanmin(constraint.group_rates)
    )


def test_continued_multipliers_must_fit_the_constraint():
    with pytest.raises(ValueError, match=r"have shape \(1, 2, 2\); .* \(2, 3, 3\)"):
        RateConstraint(
            "equalized_odds",
            tolerance=0,
            target_rate=0.5,
            n_groups=3,
            multipliers=np.zeros((1, 2, 2)),
        )


def test_histograms_without_rows_are_refused():
    constraint = RateConstraint(
        "demographic_parity", tolerance=0, target_rate=0.5, n_groups=2, n_bins=10
    )
    with pytest.raises(ValueError, match="hold no rows"):
        constraint.read(np.zeros((4, 10)))


def test_aliases_name_the_same_rates():
    assert constraint_rates("selection_rate_parity") == ("selection_rate",)
    assert constraint_rates("true_negative_rate_parity") == ("false_positive_rate",)
    assert constraint_rates("false_negative_rate_parity") == ("true_positive_rate",)


def test_a_pair_undefined_in_one_step_keeps_its_multiplier_unused():
    # Step 1: four groups with negatives; step 2 (another call's rows):
    # group 3 has none, so its FPR is undefined there.
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 4, 4000)
    y = rng.integers(0, 2, 4000)
    scores = groups + y + rng.normal(size=4000)
    constraint = RateConstraint(
        "false_positive_rate_parity",
        tolerance=0.0,
        target_rate=0.3,
        n_groups=4,
        n_bins=N_BINS,
        bound=100.0,  # no rescaling of the sum in two steps
    )
    constraint.propose(
        rate_histograms(scores, 2 * groups + y, np.ones(4000), 8, N_BINS)
    )
    constraint.commit()
    before = constraint.multipliers.copy()
    assert before[0, 3].sum() + before[0, :, 3].sum() > 0
    without = ~((groups == 3) & (y == 0))
    term = constraint.propose(
        rate_histograms(
            scores[without],
            (2 * groups + y)[without],
            np.ones(int(without.sum())),
            8,
            N_BINS,
        )
    )
    constraint.commit()
    after = constraint.multipliers
    # Kept, not stepped, for the calls that have the group's rows.
    np.testing.assert_array_equal(after[0, 3], before[0, 3])
    np.testing.assert_array_equal(after[0, :, 3], before[0, :, 3])
    # Not used: the other groups' coefficients are those of the pairs among
    # them alone.
    used = after[0, :3, :3]
    balance = used.sum(axis=1) - used.sum(axis=0)
    point = constraint.read(
        rate_histograms(
            scores[without],
            (2 * groups + y)[without],
            np.ones(int(without.sum())),
            8,
            N_BINS,
        )
    )
    expected = balance * point["total"] / point["weights"][0, :3]
    np.testing.assert_allclose(term["coefficient"][0:6:2], expected)
    assert term["coefficient"][6] == 0


def test_resampled_rows_weigh_in_the_rates_as_the_cells_before():
    from skfedida._models._constraints import population_rate_weight

    rng = np.random.default_rng(0)
    cells = rng.integers(0, 4, size=50)
    weight = rng.uniform(0.5, 2.0, size=50)
    # Resampled: cell 3 oversampled, cell 2 lost, each row with its seed's weight.
    seeds = np.concatenate([np.flatnonzero(cells != 2), np.flatnonzero(cells == 3)])
    rate_weight = population_rate_weight(cells[seeds], weight[seeds], cells, weight, 6)
    by_cell = np.bincount(cells[seeds], rate_weight, minlength=6)
    expected = np.bincount(cells, weight, minlength=6)
    expected[2] = 0.0  # no row left to carry it
    np.testing.assert_allclose(by_cell, expected)
    # Within a cell the rows keep their weights' proportions.
    in_three = cells[seeds] == 3
    ratio = rate_weight[in_three] / weight[seeds][in_three]
    np.testing.assert_allclose(ratio, ratio[0])


def test_the_width_stays_the_scores_own_at_low_selection_rates():
    # A cut within 1% of the top reads its smoothing band across the outer
    # bin, which spans logits to infinity; the band must stay the scores'.
    rng = np.random.default_rng(0)
    n = 20000
    groups = rng.integers(0, 2, n)
    y = (rng.random(n) < 0.1).astype(int)
    scores = rng.normal(size=n) + 2 * y - 2.5
    histograms = rate_histograms(scores, 2 * groups + y, np.ones(n), 4)

    def temperature(rate):
        return RateConstraint(
            "demographic_parity", tolerance=0, target_rate=rate, n_groups=2
        ).read(histograms)["temperature"]

    # 0.03 and 0.97: the band's edge at the extreme row itself.
    for extreme, inner in ((0.02, 0.05), (0.03, 0.05), (0.97, 0.95), (0.98, 0.95)):
        assert temperature(extreme) < 2 * temperature(inner)
