"""skfedida/_ordinal.py: floats as integers in their own order, and grid edges.

The median imputer's search and the exact operating point narrow grids over
these integers, and the server recomputes a client's bins from an interval
alone: the order must be the floats' exactly and the edges a function of the
interval, exact however wide.
"""

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from skfedida._ordinal import from_ordinal, ordinal, ordinal_edges

finite_or_infinite = st.floats(allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(finite_or_infinite, finite_or_infinite)
def test_orders_compare_as_the_floats_do(a, b):
    assume(not (a == b == 0.0))  # -0.0 and 0.0: see below
    oa, ob = ordinal([a, b])
    assert (oa < ob) == (a < b) and (oa == ob) == (a == b)


@settings(max_examples=200, deadline=None)
@given(finite_or_infinite)
def test_a_float_comes_back_from_its_order_bit_for_bit(x):
    back = from_ordinal(ordinal(x))
    assert type(back) is float
    assert np.float64(back).tobytes() == np.float64(x).tobytes()


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_neighbouring_floats_are_one_order_apart(x):
    assume(x != 0.0)
    with np.errstate(over="ignore"):  # the largest float's neighbour is inf
        up = np.nextafter(x, np.inf)
    assert int(ordinal(up)) - int(ordinal(x)) == 1


def test_minus_zero_is_just_below_zero():
    minus_zero, zero = ordinal([-0.0, 0.0]).tolist()
    assert zero - minus_zero == 1
    assert int(ordinal(-5e-324)) == minus_zero - 1
    assert int(ordinal(5e-324)) == zero + 1


def test_orders_are_int64_one_per_value():
    orders = ordinal(np.array([[1.5, -2.0], [np.inf, -np.inf]], dtype=np.float32))
    assert orders.dtype == np.int64 and orders.shape == (2, 2)
    assert from_ordinal(orders[1, 1]) == -np.inf


#: The orders of -inf and inf: every interval a search narrows lies within.
LOWEST, HIGHEST = (int(o) for o in ordinal([-np.inf, np.inf]))


@st.composite
def intervals(draw):
    lo = draw(st.integers(LOWEST, HIGHEST))
    hi = draw(st.integers(lo, HIGHEST))
    return lo, hi, draw(st.integers(1, 300))


@settings(max_examples=200, deadline=None)
@given(intervals())
def test_edges_cover_the_interval_in_at_most_n_bins_even_bins(interval):
    lo, hi, n_bins = interval
    edges = ordinal_edges(lo, hi, n_bins)
    assert edges.dtype == np.int64
    bounds = [int(e) for e in edges]
    assert bounds[0] == lo and bounds[-1] == hi + 1
    widths = np.diff(np.array(bounds, dtype=object))
    assert all(w > 0 for w in widths)
    assert len(widths) == min(n_bins, hi - lo + 1)
    # floor((hi - lo + 1) * k / n_bins): bins of one width or the next.
    assert max(widths) - min(widths) <= 1


def test_an_interval_narrower_than_the_bins_gives_one_order_per_bin():
    assert ordinal_edges(10, 13, 100).tolist() == [10, 11, 12, 13, 14]


def test_the_edges_are_the_stated_floor_formula():
    lo, hi, n_bins = -7, 30, 5
    span = hi - lo + 1
    expected = [lo + (span * k) // n_bins for k in range(n_bins + 1)]
    assert ordinal_edges(lo, hi, n_bins).tolist() == expected


def test_edges_over_every_float_are_exact():
    edges = ordinal_edges(LOWEST, HIGHEST, 4)
    assert edges[0] == LOWEST and edges[-1] == HIGHEST + 1
    # The middle edge is the order of 0.0 plus or minus one step, not a
    # float64 rounding of it.
    assert abs(int(edges[2]) - int(ordinal(0.0))) <= 1
