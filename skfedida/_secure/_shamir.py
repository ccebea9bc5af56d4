"""Shamir's secret sharing of 32-byte secrets, over the prime field of 2**521 - 1.

A secret is the constant term of a random polynomial of degree
``threshold - 1``; a share is its value at one point (1, 2, ...). Any
``threshold`` shares give the secret back (Lagrange's interpolation at 0);
fewer are consistent with every secret, so they say nothing of it.

Python's integers do the field's arithmetic in C: sharing among n holders
costs ``n * threshold`` multiplications and rebuilding ``threshold**2``, a
few milliseconds for hundreds of holders. pycryptodome's ``Shamir`` (used by
Flower) works in GF(2**128) in pure Python, 16 bytes at a time: 1.6 s to
rebuild 30 clients' secrets at a threshold of 16, measured with
``benchmarks/bench_secure.py``.
"""

from __future__ import annotations

import secrets
import struct

#: The field's prime, a Mersenne prime larger than any 32-byte secret.
PRIME = 2**521 - 1
_VALUE_BYTES = 66  # ceil(521 / 8)
_SECRET_BYTES = 32


def split(secret, threshold, n_shares):
    """``n_shares`` shares of a 32-byte ``secret``; any ``threshold`` rebuild it.

    Parameters
    ----------
    secret : bytes
        32 bytes.
    threshold : int
        Shares needed to rebuild it.
    n_shares : int
        Shares made, one per holder.

    Returns
    -------
    shares : list of bytes
        Each its point (4 bytes, from 1) and the polynomial's value there.
    """
    if len(secret) != _SECRET_BYTES:
        raise ValueError(
            f"A shared secret has {_SECRET_BYTES} bytes; got {len(secret)}."
        )
    if not 1 <= threshold <= n_shares:
        raise ValueError(
            f"threshold must be between 1 and the {n_shares} shares; got {threshold}."
        )
    coefficients = [int.from_bytes(secret, "little")] + [
        secrets.randbelow(PRIME) for _ in range(threshold - 1)
    ]
    shares = []
    for x in range(1, n_shares + 1):
        value = 0
        for coefficient in reversed(coefficients):  # Horner
            value = (value * x + coefficient) % PRIME
        shares.append(struct.pack("<I", x) + value.to_bytes(_VALUE_BYTES, "little"))
    return shares


def combine(shares):
    """The secret of ``shares``.

    Parameters
    ----------
    shares : list of bytes
        At least the threshold of ``split``'s shares, of distinct points.

    Returns
    -------
    secret : bytes
        The 32-byte secret; a ValueError when the shares rebuild none (too
        few of them, or altered), but for a chance of about ``2**-265``.
    """
    if not shares:
        raise ValueError("No share to rebuild a secret from.")
    points = [
        (struct.unpack("<I", share[:4])[0], int.from_bytes(share[4:], "little"))
        for share in shares
    ]
    xs = [x for x, _ in points]
    if len(set(xs)) != len(xs) or any(x == 0 for x in xs):
        raise ValueError("Shares must be of distinct, non-zero points.")
    secret = 0
    for j, (x_j, y_j) in enumerate(points):
        numerator, denominator = 1, 1
        for m, x_m in enumerate(xs):
            if m != j:
                numerator = numerator * x_m % PRIME
                denominator = denominator * (x_m - x_j) % PRIME
        secret = (secret + y_j * numerator * pow(denominator, -1, PRIME)) % PRIME
    if secret >= 2 ** (8 * _SECRET_BYTES):
        raise ValueError("The shares do not rebuild a secret (too few, or altered).")
    return secret.to_bytes(_SECRET_BYTES, "little")
