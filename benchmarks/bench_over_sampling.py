"""FairnessAwareROSE vs imblearn's RandomOverSampler(shrinkage=1.0).

Run: ``python benchmarks/bench_over_sampling.py [--n-samples N] [--repeat R]``

1,000,000 rows x 20 continuous features, 10 sensitive groups x 2 classes = 20
subgroups. RandomOverSampler balances the 2 classes only; FairnessAwareROSE
balances the 20 subgroups, to the largest one (``n_target="max"``, pure
oversampling like RandomOverSampler) and to their mean (the default, which
keeps the number of rows). Prints the median (and min) wall time of R runs,
with the core count and load, the peak traced memory (tracemalloc; numpy
reports its buffers to it) and rows out, and the ratios of medians to
RandomOverSampler: time per call and time per output row.
"""

import argparse
import tracemalloc

import numpy as np
from _timing import header, timed
from imblearn.over_sampling import RandomOverSampler

from skfedida.over_sampling import FairnessAwareROSE


def make_data(n_samples, n_features=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features))
    group = rng.choice(10, size=n_samples, p=np.r_[0.5, 0.2, np.full(8, 0.3 / 8)])
    y = (rng.random(n_samples) < 0.1 + 0.04 * group).astype(np.int64)
    return X, y, group


def measure(make_sampler, X, y, fit_kwargs, repeat):
    # The sampler is made outside the timed call; only the row count is kept,
    # so one resampled copy at a time is alive.
    samplers = iter([make_sampler() for _ in range(repeat)])
    seconds = timed(
        lambda: next(samplers).fit_resample(X, y, **fit_kwargs)[0].shape[0], repeat
    )
    n_out = seconds.result
    tracemalloc.start()
    make_sampler().fit_resample(X, y, **fit_kwargs)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak, n_out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-samples", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    X, y, group = make_data(args.n_samples)
    data_mb = X.nbytes / 2**20

    rows = [
        (
            "RandomOverSampler(shrinkage=1.0)",
            lambda: RandomOverSampler(shrinkage=1.0, random_state=0),
            {},
        ),
        (
            'FairnessAwareROSE(n_target="max")',
            lambda: FairnessAwareROSE(n_target="max", random_state=0),
            {"sensitive_features": group},
        ),
        (
            'FairnessAwareROSE(n_target="mean")',
            lambda: FairnessAwareROSE(n_target="mean", random_state=0),
            {"sensitive_features": group},
        ),
    ]
    results = [
        (name, *measure(make, X, y, kwargs, args.repeat)) for name, make, kwargs in rows
    ]
    base_time, _, base_rows = results[0][1:]
    base_time = base_time.median
    print(
        f"{args.n_samples:,} rows x {X.shape[1]} features ({data_mb:.0f} MiB), "
        "20 subgroups"
    )
    print(header(args.repeat) + "\n")
    print(
        "| sampler | rows out | time (s) | peak memory (MiB) | time / ROS | "
        "time per row out / ROS |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, seconds, peak, n_out in results:
        per_row = (seconds.median / n_out) / (base_time / base_rows)
        print(
            f"| {name} | {n_out:,} | {seconds} | {peak / 2**20:.0f} | "
            f"{seconds.median / base_time:.2f} | {per_row:.2f} |"
        )


if __name__ == "__main__":
    main()
