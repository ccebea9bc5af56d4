"""Reals and counts as elements of the ring of 64-bit integers, for masked sums.

Secure aggregation adds masked vectors modulo ``2**64``: every value a client
sends is first written as a whole number of that ring. ``FixedPoint`` fixes
how: counts as they are, reals scaled by ``2**fraction_bits`` and rounded to
the nearest whole number (half to even: the same value always gives the same
number, so a fit is reproducible). The scale is the largest that keeps the
sum of every client's values inside the ring's signed half, given a bound on
that sum: no sum can wrap around, and the sum of n clients' reals is exact to
``n * 2**-(fraction_bits + 1)``.
"""

from __future__ import annotations

import math

import numpy as np

#: Sums are read as signed 64-bit integers: their magnitude stays below
#: 2**62, a bit of room under 2**63 for the rounding of every term.
_SUM_BITS = 62

#: Reals keep at most this many bits after the point: past float64's 52
#: bits of mantissa a finer scale changes no value a client can send.
_MAX_FRACTION_BITS = 52


class FixedPoint:
    """How values of a known range are written into ``Z / 2**64``.

    Parameters
    ----------
    total_bound : float
        The largest magnitude the sum over every client of one element can
        have: the sum of the clients' own bounds.
    integer : bool, default=False
        Whether the values are counts (whole numbers, sent as they are).

    Attributes
    ----------
    fraction_bits : int
        Bits after the point (0 for counts).
    resolution : float
        The step between two values that can be written, ``2**-fraction_bits``.
    """

    def __init__(self, total_bound, *, integer=False):
        total_bound = float(total_bound)
        if not math.isfinite(total_bound) or total_bound < 0:
            raise ValueError(
                f"The bound of a secure sum must be a finite number >= 0; got "
                f"{total_bound!r}."
            )
        self.total_bound = total_bound
        self.integer = bool(integer)
        if self.integer:
            if total_bound >= 2.0**_SUM_BITS:
                raise ValueError(
                    f"A sum of counts up to {total_bound:g} does not fit 64-bit "
                    "secure sums."
                )
            self.fraction_bits = 0
        else:
            # The largest scale that keeps total_bound * 2**f below 2**62.
            room = _SUM_BITS - math.ceil(math.log2(max(total_bound, 1.0)))
            if room < 1:
                raise ValueError(
                    f"A sum of reals up to {total_bound:g} leaves no bit for the "
                    "fraction in 64-bit secure sums: bound the values more "
                    "tightly (clip them)."
                )
            self.fraction_bits = min(room, _MAX_FRACTION_BITS)
        self.resolution = 2.0**-self.fraction_bits

    def max_error(self, n_terms):
        """The largest error of a decoded sum of ``n_terms`` encoded reals.

        Parameters
        ----------
        n_terms : int
            The values summed.

        Returns
        -------
        error : float
            Half a ``resolution`` per term; 0 for counts.
        """
        return 0.0 if self.integer else n_terms * self.resolution / 2

    def encode(self, values, bound, what="the values"):
        """One client's values as ring elements (``uint64``), after checking them.

        Parameters
        ----------
        values : array-like of float
            The client's values.
        bound : float
            The largest magnitude its values may have (its share of
            ``total_bound``): the client's own check before masking.
        what : str, default="the values"
            What the values are, for errors.

        Returns
        -------
        encoded : ndarray of uint64
            The values, scaled and rounded, as two's-complement ring elements.
        """
        values = np.asarray(values, dtype=np.float64)
        if not np.isfinite(values).all():
            raise ValueError(f"{what} hold NaN or infinity: they cannot be summed.")
        largest = float(np.abs(values).max(initial=0.0))
        if largest > bound:
            raise ValueError(
                f"{what} reach {largest!r}, beyond the bound {bound!r} their "
                "secure sum was sized for."
            )
        if self.integer:
            if not np.array_equal(values, np.rint(values)):
                raise ValueError(f"{what} must be whole counts.")
            scaled = values
        else:
            scaled = np.rint(values * 2.0**self.fraction_bits)
        return scaled.astype(np.int64).view(np.uint64)

    def decode(self, total):
        """The sum the ring elements ``total`` stand for.

        Parameters
        ----------
        total : ndarray of uint64
            A sum of encoded values, modulo ``2**64``.

        Returns
        -------
        values : ndarray of float64
            The sum, within ``max_error`` of the exact sum of the reals.
        """
        signed = np.asarray(total, dtype=np.uint64).view(np.int64)
        if self.integer:
            return signed.astype(np.float64)
        return signed.astype(np.float64) * self.resolution
