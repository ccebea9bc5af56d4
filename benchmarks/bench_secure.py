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
Every client masks with every other (SecAgg), so its work grows with the
number of clients; with 8 neighbours each (SecAgg+'s random ring,
``SecureAggregation(neighbours=8)``) it grows with the neighbours instead,
shown for 50 and 200 clients.

Then a whole fit: ``make_fedida`` (FedIDA's logistic model) on the shipped
Adult training rows, 5 clients, 10 rounds, ``max_update_norm=10``, with and
without ``secure_aggregation``: the fits' times, the largest difference of
their coefficients and how many of the test rows' decisions differ.
"""

import argparse
import statistics

import numpy as np
from _timing import header, timed

from skfedida._secure import (
    FixedPoint,
    SecAggClient,
    SecAggServer,
    complete_neighbours,
    harary_neighbours,
)

SIZES = {"logistic (p=102)": 103, "MLP (10k)": 10_001, "tree grow round": 86_016}


def _one_sum(vectors, threshold, degree=None):
    """A secure sum in this process: the total, client 0's bytes, the seconds.

    The seconds are those of client 0's own work (its four stages, encoding
    included) and of the server's (routing and unmasking), each call timed
    once: in a deployment each client works in parallel with the others.
    """
    n = len(vectors)
    fixed = FixedPoint(n * 10.0)
    seconds = {"client": 0.0, "server": 0.0}

    def run(party, call):
        timing = timed(call, repeat=1)
        seconds[party] += timing.median
        return timing.result

    graph = (
        complete_neighbours(n)
        if degree is None
        else harary_neighbours(range(n), degree)
    )
    server = run("server", lambda: SecAggServer(graph, threshold))
    clients = {k: SecAggClient(k) for k in range(n)}

    def by_client(call):
        # Client 0's calls are timed; the others' are the rest of the federation.
        return {
            k: run("client", lambda c=c, k=k: call(k, c)) if k == 0 else call(k, c)
            for k, c in clients.items()
        }

    public = by_client(lambda k, c: c.public_keys())
    keys = run("server", lambda: server.neighbour_keys(public))
    shared = by_client(lambda k, c: c.share_keys(keys[k], threshold))
    routed = run("server", lambda: server.route(shared))
    masked = by_client(
        lambda k, c: c.masked_input(fixed.encode(vectors[k], 10.0), routed[k], b"bench")
    )
    shares = by_client(lambda k, c: c.unmask(set(masked), set()))
    total = run("server", lambda: fixed.decode(server.unmask(masked, shares, b"bench")))
    sent = (
        len(public[0].encryption)
        + len(public[0].masking)
        + sum(len(ct) for ct in shared[0].values())
        + masked[0].nbytes
        + sum(len(s.share) + 8 for s in shares[0])
    )
    return total, sent, seconds["client"], seconds["server"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(header(args.repeat).replace("in seconds", "in ms"))
    print(
        "| vector | clients | plain bytes | secure bytes | x | plain sum ms "
        "| a client's ms | server's ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for name, size in SIZES.items():
        for n, degree in ((5, None), (20, None), (50, None), (50, 8), (200, 8)):
            vectors = [rng.uniform(-10, 10, size) for _ in range(n)]
            plain = timed(lambda vectors=vectors: np.sum(vectors, axis=0), args.repeat)
            client_times, server_times = [], []
            holders = n if degree is None else min(n, degree + 1)
            for _ in range(args.repeat):
                total, sent, client, server = _one_sum(
                    vectors, threshold=max(2, holders // 2 + 1), degree=degree
                )
                client_times.append(client)
                server_times.append(server)
            assert np.abs(total - plain.result).max() <= 1e-9
            plain_bytes = 8 * size
            clients = f"{n}" if degree is None else f"{n}, {degree} neighbours"
            print(
                f"| {name} | {clients} | {plain_bytes:,} | {sent:,} | "
                f"{sent / plain_bytes:.2f} | {plain.ms()} | "
                f"{1e3 * statistics.median(client_times):.1f} | "
                f"{1e3 * statistics.median(server_times):.1f} |"
            )
    whole_fit(args.repeat)


def whole_fit(repeat):
    """FedIDA on Adult, plain and secure: times, coefficients, decisions."""
    import warnings

    from skfedida.datasets import load_adult
    from skfedida.federated import SecureAggregation
    from skfedida.model_selection import make_fedida

    train, test = load_adult(split="train"), load_adult(split="test")

    def fit(secure):
        federation = make_fedida(random_state=0).set_params(
            max_update_norm=10.0,
            secure_aggregation=SecureAggregation() if secure else None,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return federation.fit(
                train.data,
                train.target,
                clients=train.clients,
                sensitive_features=train.sensitive,
            )

    plain = timed(lambda: fit(False), repeat)
    secure = timed(lambda: fit(True), repeat)
    gap = np.abs(plain.result.estimator_.coef_ - secure.result.estimator_.coef_)
    differ = int(
        (plain.result.predict(test.data) != secure.result.predict(test.data)).sum()
    )
    print()
    print(header(repeat))
    print("| FedIDA on Adult, 10 rounds | plain s | secure s | x |")
    print("|---|---:|---:|---:|")
    print(f"| fit | {plain} | {secure} | {secure.median / plain.median:.2f} |")
    print(
        f"largest coefficient difference {gap.max():.1e}; {differ} of "
        f"{len(test.target):,} test decisions differ"
    )


if __name__ == "__main__":
    main()
