"""Secure aggregation: sums over clients that no one sees the terms of (issue 49).

``_fixed_point`` writes a client's values into the ring ``Z / 2**64``;
``_secagg`` masks them so that the server learns only their sum.
"""

from ._fixed_point import FixedPoint
from ._secagg import (
    STAGES,
    PublicKeys,
    SecAggClient,
    SecAggServer,
    SecureSum,
    UnmaskShare,
    complete_neighbours,
    harary_neighbours,
    mask_stream,
    secure_sum,
)

__all__ = [
    "STAGES",
    "FixedPoint",
    "PublicKeys",
    "SecAggClient",
    "SecAggServer",
    "SecureSum",
    "UnmaskShare",
    "complete_neighbours",
    "harary_neighbours",
    "mask_stream",
    "secure_sum",
]
