"""Secure sums: fixed-point encoding and the SecAgg+ masking protocol (issue 49)."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("cryptography")

from skfedida._secure import (
    FixedPoint,
    SecAggClient,
    SecAggServer,
    _shamir,
    complete_neighbours,
    harary_neighbours,
    mask_stream,
    secure_sum,
)

# -- FixedPoint -----------------------------------------------------------------------


def test_counts_are_summed_exactly():
    fixed = FixedPoint(3 * 10**12, integer=True)
    counts = [np.array([0, 5, 10**12]), np.array([7, 0, 10**12]), np.array([1, 1, 1])]
    total = sum(fixed.encode(c, bound=10**12, what="counts") for c in counts)
    np.testing.assert_array_equal(fixed.decode(total), np.sum(counts, axis=0))
    assert fixed.max_error(3) == 0.0


@settings(max_examples=100, deadline=None)
@given(
    n_clients=st.integers(1, 40),
    scale=st.sampled_from([1e-3, 1.0, 7.5, 1e3, 1e6]),
    seed=st.integers(0, 2**31 - 1),
)
def test_a_sum_of_reals_is_within_its_stated_error(n_clients, scale, seed):
    rng = np.random.default_rng(seed)
    values = rng.uniform(-scale, scale, size=(n_clients, 6))
    values[0, 0] = scale  # the bound itself is allowed
    fixed = FixedPoint(n_clients * scale)
    total = np.zeros(6, dtype=np.uint64)
    for row in values:
        total += fixed.encode(row, bound=scale)
    error = np.abs(fixed.decode(total) - values.sum(axis=0))
    # The stated bound of the rounding, plus float64's own rounding of the
    # reference sum and of the decoded value.
    slack = 4 * np.finfo(float).eps * n_clients * scale
    assert error.max() <= fixed.max_error(n_clients) + slack


def test_negative_sums_decode_as_negative():
    fixed = FixedPoint(10.0)
    total = fixed.encode([-3.25, 0.5], bound=5) + fixed.encode([-1.0, -4.0], bound=5)
    np.testing.assert_array_equal(fixed.decode(total), [-4.25, -3.5])


def test_the_scale_is_the_largest_that_cannot_wrap():
    fixed = FixedPoint(2.0**20)
    assert fixed.fraction_bits == 62 - 20
    # Every client at its bound, together at the total bound: no wrap.
    total = sum(fixed.encode([2.0**18], bound=2.0**18) for _ in range(4))
    assert fixed.decode(total)[0] == 2.0**20
    # Small ranges keep float64's precision, no more.
    assert FixedPoint(1.0).fraction_bits == 52


@pytest.mark.parametrize(
    "values, bound, integer, match",
    [
        ([1.0, 2.5], 2.0, False, r"the update reach 2\.5, beyond the bound 2\.0"),
        ([np.nan], 1.0, False, "the update hold NaN or infinity"),
        ([np.inf], 1.0, False, "the update hold NaN or infinity"),
        ([1.5], 2.0, True, "the update must be whole counts"),
    ],
)
def test_a_client_refuses_values_it_cannot_encode(values, bound, integer, match):
    fixed = FixedPoint(10.0, integer=integer)
    with pytest.raises(ValueError, match=match):
        fixed.encode(values, bound=bound, what="the update")


@pytest.mark.parametrize(
    "total_bound, integer, match",
    [
        (-1.0, False, "finite number >= 0"),
        (np.inf, False, "finite number >= 0"),
        (2.0**62, False, "leaves no bit for the fraction"),
        (2.0**62, True, "does not fit 64-bit"),
    ],
)
def test_a_range_that_does_not_fit_the_ring_is_refused(total_bound, integer, match):
    with pytest.raises(ValueError, match=match):
        FixedPoint(total_bound, integer=integer)


# -- masks ----------------------------------------------------------------------------


def test_a_mask_is_a_function_of_its_seed_and_label():
    seed = bytes(range(32))
    a = mask_stream(seed, b"round 1", 1000)
    np.testing.assert_array_equal(a, mask_stream(seed, b"round 1", 1000))
    # Another label, another seed: other streams; a longer stream starts alike.
    assert not np.array_equal(a, mask_stream(seed, b"round 2", 1000))
    assert not np.array_equal(a, mask_stream(bytes(32), b"round 1", 1000))
    np.testing.assert_array_equal(mask_stream(seed, b"round 1", 2000)[:1000], a)
    with pytest.raises(ValueError, match="A mask seed has 32 bytes"):
        mask_stream(b"short", b"x", 3)


def test_a_mask_spreads_over_the_whole_ring():
    bits = np.unpackbits(mask_stream(bytes(32), b"x", 50_000).view(np.uint8))
    # Every bit of every element a fair coin: the top bits too (Flower's
    # pseudo_rand_gen leaves the top bits of a 2**32 ring's elements unused).
    by_position = bits.reshape(-1, 64).mean(axis=0)
    assert np.all(np.abs(by_position - 0.5) < 0.02)


# -- the protocol ---------------------------------------------------------------------


def _vectors(n_clients, size=7, seed=0):
    rng = np.random.default_rng(seed)
    return {
        k: rng.integers(0, 2**64, size=size, dtype=np.uint64) for k in range(n_clients)
    }


def test_the_sum_of_masked_inputs_is_the_sum_of_the_inputs():
    inputs = _vectors(6)
    result = secure_sum(inputs, threshold=3, label=b"t")
    np.testing.assert_array_equal(result.total, sum(inputs.values()))
    assert result.survivors == list(range(6))
    assert result.dropped == []


@pytest.mark.parametrize(
    "fail, survivors",
    [
        ({"shares": {2}}, [0, 1, 3, 4, 5]),
        ({"masked input": {1}}, [0, 2, 3, 4, 5]),
        ({"masked input": {1, 4}}, [0, 2, 3, 5]),
        ({"unmasking": {0, 5}}, [0, 1, 2, 3, 4, 5]),
        ({"shares": {2}, "masked input": {1}, "unmasking": {4}}, [0, 3, 4, 5]),
    ],
    ids=[
        "before-sharing",
        "before-masking",
        "two-before-masking",
        "at-unmasking",
        "all",
    ],
)
def test_clients_that_drop_out_leave_the_sum_of_the_others(fail, survivors):
    inputs = _vectors(6)
    result = secure_sum(inputs, threshold=3, label=b"t", fail=fail)
    assert result.survivors == survivors
    np.testing.assert_array_equal(result.total, sum(inputs[k] for k in survivors))


def test_too_few_survivors_reveal_nothing():
    inputs = _vectors(5)
    # Each survivor refuses to help unmask a sum of too few (as Bonawitz
    # et al.'s clients do), and the server refuses to try.
    with pytest.raises(ValueError, match="Only 2 survivors named; this client"):
        secure_sum(inputs, threshold=3, label=b"t", fail={"masked input": {0, 1, 2}})
    server = SecAggServer(complete_neighbours(5), threshold=3)
    with pytest.raises(RuntimeError, match="Only 2 clients sent their masked input"):
        server.unmask({0: inputs[0], 1: inputs[1]}, {}, b"t")
    with pytest.raises(
        RuntimeError, match=r"shares of client \d's secret came back; 3 are"
    ):
        secure_sum(inputs, threshold=3, label=b"t", fail={"unmasking": {0, 1, 2}})


def test_a_masked_input_shows_nothing_of_the_input():
    # The same client's masked vector for its values and for zeros: both
    # uniform over the ring, neither correlated with the values.
    size = 20_000
    values = np.arange(size, dtype=np.uint64)
    seen = secure_sum(
        {0: values, 1: np.zeros(size, np.uint64), 2: values}, threshold=2, label=b"t"
    ).masked
    for masked in seen.values():
        top = (masked >> np.uint64(63)).astype(float)
        assert abs(top.mean() - 0.5) < 0.02
        # Five spreads (1 / sqrt(size)) of independent draws.
        correlation = np.corrcoef(masked.astype(float), values.astype(float))[0, 1]
        assert abs(correlation) < 5 / np.sqrt(size)
        assert not np.array_equal(masked, values)


def test_a_client_never_gives_both_shares_of_one_neighbour():
    clients = {k: SecAggClient(k) for k in range(3)}
    server = SecAggServer(complete_neighbours(3), threshold=2)
    keys = server.neighbour_keys({k: c.public_keys() for k, c in clients.items()})
    routed = server.route({k: c.share_keys(keys[k], 2) for k, c in clients.items()})
    clients[0].masked_input(np.zeros(2, np.uint64), routed[0], b"t")
    with pytest.raises(ValueError, match="both a survivor and dropped"):
        clients[0].unmask({0, 1}, {1})
    with pytest.raises(ValueError, match="Only a survivor helps to unmask"):
        clients[0].unmask({1, 2}, {0})
    shares = clients[0].unmask({0, 1}, {2})
    assert sorted((s.of, s.kind) for s in shares) == [
        (0, "self mask"),
        (1, "self mask"),
        (2, "mask key"),
    ]
    with pytest.raises(RuntimeError, match="unmasks one sum once"):
        clients[0].unmask({0, 1}, {2})


def test_bad_protocol_inputs_are_named():
    with pytest.raises(
        ValueError, match="threshold must be between 2 and the 3 holders"
    ):
        SecAggClient(0).share_keys(
            {1: SecAggClient(1).public_keys(), 2: SecAggClient(2).public_keys()}, 4
        )
    with pytest.raises(ValueError, match="symmetric and exclude oneself"):
        SecAggServer({0: {1}, 1: set()}, threshold=2)
    with pytest.raises(RuntimeError, match="masked_input comes after share_keys"):
        SecAggClient(0).masked_input(np.zeros(1, np.uint64), {}, b"t")


# -- Shamir's shares ------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(
    threshold=st.integers(1, 12),
    extra=st.integers(0, 12),
    seed=st.integers(0, 2**31 - 1),
)
def test_any_threshold_shares_rebuild_the_secret(threshold, extra, seed):
    rng = np.random.default_rng(seed)
    secret = rng.bytes(32)
    shares = _shamir.split(secret, threshold, threshold + extra)
    assert len(shares) == threshold + extra
    for _ in range(3):
        chosen = rng.choice(len(shares), size=threshold, replace=False)
        assert _shamir.combine([shares[i] for i in chosen]) == secret


def _value_at(points, x):
    """The polynomial through ``points`` (field elements) at ``x``."""
    p = _shamir.PRIME
    total = 0
    for j, (x_j, y_j) in enumerate(points):
        numerator, denominator = 1, 1
        for m, (x_m, _) in enumerate(points):
            if m != j:
                numerator = numerator * (x - x_m) % p
                denominator = denominator * (x_j - x_m) % p
        total = (total + y_j * numerator * pow(denominator, -1, p)) % p
    return total


def _point(share):
    return int.from_bytes(share[:4], "little"), int.from_bytes(share[4:], "little")


def test_fewer_shares_than_the_threshold_say_nothing():
    # t - 1 shares and any secret at all lie on one polynomial of degree
    # t - 1: for every candidate secret a third share completes them.
    secret = bytes(range(32))
    shares = _shamir.split(secret, 3, 5)
    known = [_point(share) for share in shares[:2]]
    for candidate in (secret, bytes(32), b"\xff" * 32):
        through = [(0, int.from_bytes(candidate, "little")), *known]
        third = struct.pack("<I", 3) + _value_at(through, 3).to_bytes(66, "little")
        assert _shamir.combine([shares[0], shares[1], third]) == candidate
    # Two shares of a threshold of three rebuild no 32-byte secret at all.
    with pytest.raises(ValueError, match="do not rebuild a secret"):
        _shamir.combine(shares[:2])


def test_bad_shares_are_refused():
    shares = _shamir.split(bytes(32), 2, 3)
    with pytest.raises(ValueError, match="distinct, non-zero points"):
        _shamir.combine([shares[0], shares[0]])
    with pytest.raises(ValueError, match="threshold must be between 1 and the 3"):
        _shamir.split(bytes(32), 4, 3)
    with pytest.raises(ValueError, match="A shared secret has 32 bytes"):
        _shamir.split(b"x", 1, 1)


# -- SecAgg+'s graph ------------------------------------------------------------------


def test_a_harary_graph_gives_every_client_degree_neighbours():
    graph = harary_neighbours(range(12), 4)
    assert sorted(graph) == list(range(12))
    assert all(len(others) == 4 and k not in others for k, others in graph.items())
    assert all(k in graph[v] for k, others in graph.items() for v in others)
    # As many clients as the degree allows, or fewer: every other client.
    assert harary_neighbours(range(5), 4) == complete_neighbours(range(5))
    for degree, match in ((3, "is even"), (0, "even int >= 2"), (True, "even int")):
        with pytest.raises(ValueError, match=match):
            harary_neighbours(range(12), degree)


@pytest.mark.parametrize(
    "fail",
    [{}, {"masked input": {1, 7}}, {"shares": {3}, "unmasking": {0}}],
    ids=["all", "two-dropped", "dropped-and-silent"],
)
def test_a_sum_over_a_harary_graph_is_the_survivors_sum(fail):
    # Each client's shares have 5 holders (4 neighbours and itself); the
    # failures take at most 2 of them, whatever the random graph.
    inputs = _vectors(12)
    result = secure_sum(
        inputs,
        threshold=3,
        label=b"t",
        neighbours=harary_neighbours(range(12), 4),
        fail=fail,
    )
    gone = fail.get("shares", set()) | fail.get("masked input", set())
    survivors = [k for k in range(12) if k not in gone]
    assert result.survivors == survivors
    np.testing.assert_array_equal(result.total, sum(inputs[k] for k in survivors))
