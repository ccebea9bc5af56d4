"""FedIDA(FedAvg) at scale: wall time and peak memory from 1e5 to 1e6 rows.

Run: ``python benchmarks/scale.py [--sizes 100000 300000 1000000] [--rounds 10]
[--repeat 3]``

A seeded synthetic federation: 100 clients, 30 features, 3 sensitive
attributes (5 x 2 x 4 = 40 groups). The full FedIDA(FedAvg) fit: the
penalised logistic model, FairnessAwareROSE on every minibatch, 10 rounds x 5
local epochs, batch 128. Every size runs in a fresh process, so its peak
resident memory (``ru_maxrss``) is its own; the table also shows the data's
own size, so that memory can be read as a multiple of it. Every size runs
``--repeat`` times (a fresh process each): the wall time is the median (and
min) of the fits, the peak memory the largest of the runs, printed with the
core count and load.
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys

from _timing import header, timed


def run_one(n_samples, rounds):
    import warnings

    import numpy as np

    from skfedida.datasets import make_federated_classification
    from skfedida.model_selection import make_fedida

    data = make_federated_classification(
        n_samples,
        n_clients=100,
        n_features=30,
        sensitive_attributes={
            "race": list("ABCDE"),
            "sex": ["F", "M"],
            "age": ["<30", "30-45", "45-60", ">60"],
        },
        prevalence=0.25,
        heterogeneity=0.5,
        random_state=0,
    )

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return make_fedida(n_rounds=rounds, random_state=0).fit(
                data.data,
                data.target,
                clients=data.clients,
                sensitive_features=data.sensitive,
            )

    # One fit per process, so that its peak memory is its own; main() takes
    # the median over the processes.
    fitted = timed(fit, repeat=1)
    model, seconds = fitted.result, fitted.median
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert np.isfinite(model.predict_proba(data.data[:10])).all()
    return {
        "n": n_samples,
        "seconds": seconds,
        "peak_mib": peak_mib,
        "data_mib": data.data.nbytes / 2**20,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", nargs="+", type=int, default=[100_000, 300_000, 1_000_000]
    )
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.rounds)))
        return
    print(header(args.repeat) + "\n")
    print("| rows | clients | wall time (s) | peak RSS (MiB) | X (MiB) | peak / X |")
    print("|---:|---:|---:|---:|---:|---:|")
    previous = None
    for n in args.sizes:
        command = [sys.executable, __file__, "--one", str(n), "--rounds"]
        runs = [
            json.loads(
                subprocess.run(
                    [*command, str(args.rounds)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            for _ in range(args.repeat)
        ]
        seconds = [run["seconds"] for run in runs]
        row = {
            "n": n,
            "seconds": statistics.median(seconds),
            "peak_mib": max(run["peak_mib"] for run in runs),
            "data_mib": runs[0]["data_mib"],
        }
        print(
            f"| {n:,} | 100 | {row['seconds']:.1f} ({min(seconds):.1f}) | "
            f"{row['peak_mib']:.0f} | {row['data_mib']:.0f} | "
            f"{row['peak_mib'] / row['data_mib']:.1f} |",
            flush=True,
        )
        if previous is not None:
            print(
                f"|  | x{n / previous['n']:.1f} rows | "
                f"x{row['seconds'] / previous['seconds']:.1f} time | "
                f"x{row['peak_mib'] / previous['peak_mib']:.1f} memory | | |",
                flush=True,
            )
        previous = row


if __name__ == "__main__":
    main()
