"""Float64 values as integers in their own order: grids that split any floats.

Reading a float's bits as an int64 (with the sign bit folded for negatives)
gives an integer that orders as the floats do, with one step between any two
neighbouring floats. A grid over these integers narrows to a single float
value in ``ceil(64 / log2(n_bins))`` passes, however close or small the
values, where a grid over the values themselves would need a pass per few
orders of magnitude. The median imputer's search and the federation's exact
operating point both narrow such grids; the server's reply gate recomputes
the imputer's bins with the same rule.
"""

import numpy as np

__all__ = ["from_ordinal", "ordinal", "ordinal_edges"]

_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


def ordinal(values):
    """Map float64 values to int64 integers that order as the floats do.

    Parameters
    ----------
    values : array-like of float
        Values; -0.0 maps just below 0.0.

    Returns
    -------
    orders : ndarray of int64
        One integer per value, increasing with it.
    """
    bits = np.asarray(values, dtype=np.float64).view(np.int64)
    return bits ^ ((bits >> 63) & _SIGN)


def from_ordinal(order):
    """Return the float64 at an integer of :func:`ordinal`.

    Parameters
    ----------
    order : int
        An integer of float64's order.

    Returns
    -------
    value : float
        The float with that order.
    """
    bits = np.asarray(order, dtype=np.int64)
    return float((bits ^ ((bits >> 63) & _SIGN)).view(np.float64))


def ordinal_edges(lo, hi, n_bins):
    """Bin edges over the orders lo..hi (hi + 1 the last edge), at most n_bins bins.

    Computed from the interval alone (a client given an interval makes the
    same bins as the server), in exact integer arithmetic: edge ``k`` is
    ``lo + floor((hi - lo + 1) * k / n_bins)``, repeated edges dropped.

    Parameters
    ----------
    lo, hi : int
        The first and last order of the interval.
    n_bins : int
        Bins wanted.

    Returns
    -------
    edges : ndarray of int64
        Increasing edges; bin ``i`` holds the orders in ``[edges[i],
        edges[i + 1])``.
    """
    span = int(hi) - int(lo) + 1
    edges = sorted({int(lo) + (span * k) // n_bins for k in range(n_bins + 1)})
    return np.array(edges, dtype=np.int64)
