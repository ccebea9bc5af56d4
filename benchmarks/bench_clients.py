"""Many small clients: the fixed cost of a client's round.

Run: ``python benchmarks/bench_clients.py [--clients 10 100 1000] [--repeat 3]``

The same 1e5 synthetic rows (30 features, race x sex = 10 groups) split
over 10, 100 and 1,000 clients, trained for 10 rounds x 5 local epochs
(batch 128): FedAvg and the paper's FedIDA (FedAvg + group penalty + ROSE
on every minibatch), logistic model, one job. The rows, hence the steps'
arithmetic, are the same at every client count; what grows with the
clients is what a round costs per client (its messages, checks, calls and
bookkeeping). The fixed cost per client-round is the difference of two
wall times over the difference of their client-rounds,
``(t(K2) - t(K1)) / ((K2 - K1) x rounds)``: the issue 34 target is 0.2 ms.
A fit's time is the median (and min) of ``--repeat`` fits, after one
warm-up fit, printed with the core count and load.
"""

import argparse
import warnings

from _timing import header, timed

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE

N_ROWS = 100_000
ROUNDS = 10
TARGET_MS = 0.2


def federation(fedida):
    return FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0 if fedida else 0.0),
        sampler=FairnessAwareROSE() if fedida else None,
        prior_correction=None,
        n_rounds=ROUNDS,
        local_epochs=5,
        batch_size=128,
        random_state=0,
    )


def fit_time(n_clients, fedida, repeat):
    data = make_federated_classification(
        N_ROWS,
        n_clients=n_clients,
        n_features=30,
        sensitive_attributes={"race": list("ABCDE"), "sex": ["F", "M"]},
        prevalence=0.25,
        heterogeneity=0.5,
        random_state=0,
    )

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return federation(fedida).fit(
                data.data,
                data.target,
                clients=data.clients,
                sensitive_features=data.sensitive,
            )

    fit()  # warm-up: imports, the compiled module, caches
    return timed(fit, repeat)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", nargs="+", type=int, default=[10, 100, 1000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{N_ROWS:,} rows, {ROUNDS} rounds x 5 epochs, one job; "
        + header(args.repeat)
        + "\n"
    )
    print("| setup | clients | wall time (s) | fixed cost per client-round (ms) |")
    print("|---|---:|---:|---:|")
    verdicts = []
    for name, fedida in (("FedAvg", False), ("FedIDA", True)):
        times = {k: fit_time(k, fedida, args.repeat) for k in args.clients}
        previous = None
        for k in args.clients:
            cost = ""
            if previous is not None:
                per_round = (times[k].median - times[previous].median) / (
                    (k - previous) * ROUNDS
                )
                cost = f"{1e3 * per_round:.3f} ({previous} -> {k})"
                verdicts.append((name, previous, k, 1e3 * per_round))
            print(f"| {name} | {k} | {times[k]} | {cost} |")
            previous = k
    if any(cost < 0 for *_, cost in verdicts):
        print(
            "\nA negative difference is no fixed cost: there the larger "
            "clients cost more per row (FedIDA: its noise's statistics per "
            "minibatch and subgroup, and the buffers of its synthetic rows, "
            "over more rows at once)."
        )
    print("\n| target | measured | met |")
    print("|---|---:|:---:|")
    for name, low, high, cost in verdicts:
        print(
            f"| {name}: fixed cost per client-round <= {TARGET_MS} ms "
            f"({low} -> {high} clients) | {cost:.3f} ms | "
            f"{'yes' if cost <= TARGET_MS else 'NO'} |"
        )


if __name__ == "__main__":
    main()
