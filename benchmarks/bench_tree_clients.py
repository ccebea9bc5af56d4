"""Federated trees over many small clients: time and the server's memory.

Run: ``python benchmarks/bench_tree_clients.py [--clients 5 50 200] [--repeat 5]``

The same 20,000 synthetic rows (10 features) split over 5, 50 and 200
clients; 20 trees of 31 leaves, in-process, no early stopping. The rows,
hence the trees' arithmetic, are the same at every client count: what grows
with the clients is what each client costs the server (its objects, its
answers and the gate's memory of them). Printed per client count: the wall
time (median and min of ``--repeat`` fits after a warm-up, the client
counts taking turns) and the peak of the memory Python allocated during one
more fit (``tracemalloc``: the server and the in-process clients together),
each also as a ratio to the first client count's. Issue 46 asked that many
small clients not be a way to exhaust the server; issue 47's targets are 2x
the time and 1.5x the memory at 200 clients.
"""

import argparse
import statistics
import tracemalloc
import warnings

import numpy as np
from _timing import Timing, header, timed

from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import FederatedEstimator

N_ROWS = 20_000


def _fit(data, clients):
    trees = FairHistGradientBoostingClassifier(
        max_iter=20, max_leaf_nodes=31, early_stopping=False, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FederatedEstimator(trees, random_state=0).fit(
            data.data, data.target, clients=clients
        )


def _peak_memory(data, clients):
    tracemalloc.start()
    try:
        _fit(data, clients)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", nargs="+", type=int, default=[5, 50, 200])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    data = make_federated_classification(
        N_ROWS, n_clients=2, n_features=10, random_state=0
    )
    print(f"{N_ROWS:,} rows, 20 trees of 31 leaves; " + header(args.repeat) + "\n")
    print(
        "| clients | rows each | wall time (s) | x first | peak memory (MB) | x first |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    partitions = {k: np.arange(N_ROWS) % k for k in args.clients}
    for clients in partitions.values():
        _fit(data, clients)  # warm-up
    # The client counts take turns, repeat after repeat: a machine that
    # slows down for a while slows them alike, not the one timed then.
    times = {k: [] for k in args.clients}
    for _ in range(args.repeat):
        for k, clients in partitions.items():
            times[k].append(timed(lambda clients=clients: _fit(data, clients), 1))
    first = None
    for k, clients in partitions.items():
        runs = [run.median for run in times[k]]
        time = Timing(statistics.median(runs), min(runs), args.repeat, None)
        memory = _peak_memory(data, clients)
        first = first or (time.median, memory)
        print(
            f"| {k} | {N_ROWS // k} | {time} | {time.median / first[0]:.2f} | "
            f"{memory / 1e6:.1f} | {memory / first[1]:.2f} |"
        )


if __name__ == "__main__":
    main()
