"""What a secure sum costs: bytes each client sends and time, with and without.

Run: ``python benchmarks/bench_secure.py [--repeat 3]``

One secure sum (``skfedida._secure.secure_sum``: X25519 keys, Shamir shares
of both secrets, SHAKE-256 masks) against the plain sum of the same float64
vectors, for vectors the size of what a client sends in one round:

- a logistic model on the Adult data (102 parameters and its row count);
- a small MLP (10,000 parameters);
- one grow round of the boosted trees (gradient, hessian and count of 256
  bins of 14 features for 8 nodes: 86,016 values).

Per size and number of clients: the bytes one client sends over the four
stages (its public keys, one ciphertext of shares per neighbour, its masked
vector, its unmasking shares) against the plain vector's, and the time of the
work of one client (its four stages, its encoding included) and of the
server (routing and unmasking) against the plain sum of the vectors, each the
median of ``--repeat`` runs; in a deployment the clients work in parallel.
Every neighbour masks with every other (SecAgg; SecAgg+'s thinner graph is
not used yet), so a client's work grows with the number of clients.
"""

import argparse
import os
import time

import numpy as np

from skfedida._secure import (
    FixedPoint,
    SecAggClient,
    SecAggServer,
    complete_neighbours,
)

SIZES = {"logistic (p=102)": 103, "MLP (10k)": 10_001, "tree grow round": 86_016}


def _one_sum(vectors, threshold):
    """A secure sum in this process: the total, client 0's bytes, the seconds.

    The seconds are those of client 0's own work (its four stages, encoding
    included) and of the server's (routing and unmasking): in a deployment
    each client works in parallel with the others.
    """
    n = len(vectors)
    fixed = FixedPoint(n * 10.0)
    server_seconds = client_seconds = 0.0
    start = time.perf_counter()
    server = SecAggServer(complete_neighbours(n), threshold)
    server_seconds += time.perf_counter() - start
    clients = {k: SecAggClient(k) for k in range(n)}

    def timed(k, call, *args):
        nonlocal client_seconds
        start = time.perf_counter()
        out = call(*args)
        if k == 0:
            client_seconds += time.perf_counter() - start
        return out

    public = {k: timed(k, c.public_keys) for k, c in clients.items()}
    start = time.perf_counter()
    keys = server.neighbour_keys(public)
    server_seconds += time.perf_counter() - start
    shared = {k: timed(k, c.share_keys, keys[k], threshold) for k, c in clients.items()}
    start = time.perf_counter()
    routed = server.route(shared)
    server_seconds += time.perf_counter() - start
    masked = {
        k: timed(
            k,
            lambda c=c, k=k: c.masked_input(
                fixed.encode(vectors[k], 10.0), routed[k], b"bench"
            ),
        )
        for k, c in clients.items()
    }
    shares = {k: timed(k, c.unmask, set(masked), set()) for k, c in clients.items()}
    start = time.perf_counter()
    total = fixed.decode(server.unmask(masked, shares, b"bench"))
    server_seconds += time.perf_counter() - start
    sent = (
        len(public[0].encryption)
        + len(public[0].masking)
        + sum(len(ct) for ct in shared[0].values())
        + masked[0].nbytes
        + sum(len(s.share) + 8 for s in shares[0])
    )
    return total, sent, client_seconds, server_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}, load: {os.getloadavg()[0]:.2f}")
    print(
        "| vector | clients | plain bytes | secure bytes | x | plain sum ms "
        "| a client's ms | server's ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for name, size in SIZES.items():
        for n in (5, 20, 50):
            vectors = [rng.uniform(-10, 10, size) for _ in range(n)]
            plain_times, client_times, server_times = [], [], []
            for _ in range(args.repeat):
                start = time.perf_counter()
                plain = np.sum(vectors, axis=0)
                plain_times.append(time.perf_counter() - start)
                total, sent, client, server = _one_sum(
                    vectors, threshold=max(2, n // 2 + 1)
                )
                client_times.append(client)
                server_times.append(server)
            assert np.abs(total - plain).max() <= 1e-9
            plain_bytes = 8 * size
            print(
                f"| {name} | {n} | {plain_bytes:,} | {sent:,} | "
                f"{sent / plain_bytes:.2f} | {1e3 * np.median(plain_times):.2f} | "
                f"{1e3 * np.median(client_times):.1f} | "
                f"{1e3 * np.median(server_times):.1f} |"
            )


if __name__ == "__main__":
    main()
