"""Multi-class outcomes: the penalty's cost per row, and FedIDA on 3 classes.

Run: ``python benchmarks/multiclass.py [--repeat 5]``

(a) The group penalty's value and gradient (closed form through the
    (group, class) cells) on minibatch-sized and large inputs, for two
    classes (one score per row, the binary model's) and for C = 3, 5 and 10
    classes (one score per row and class, the softmax model's): time per row,
    and per row and class, relative to the binary penalty at the same rows.
(b) FedIDA (``make_fedida()``) on a synthetic federation of 5 clients x 4
    groups, with 2 and with 3 outcome classes (same rows and features): fit
    time, test accuracy, and the disparities of the decisions (the worst
    class one-vs-rest for 3 classes). Two classes train in the compiled
    loops with ROSE vectorised over each epoch; more classes run the numpy
    loop with ROSE per minibatch (the reference path), which the times show.

Times are the median (and min) of ``--repeat`` runs, printed with the core
count and load.
"""

import argparse
import warnings

import numpy as np
from _timing import header, timed

from skfedida.datasets import make_federated_classification
from skfedida.metrics import (
    demographic_parity_difference,
    equalized_odds_difference,
)
from skfedida.model_selection import make_fedida
from skfedida.penalty import group_penalty


def penalty_table(repeat):
    rng = np.random.default_rng(0)
    print("(a) group penalty, value + gradient, 40 groups\n")
    print(
        "| rows | classes | time (ms) | us per row | us per row and class | "
        "per row vs binary |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (128, 100_000):
        groups = rng.integers(0, 40, size=n)
        inner = max(1, 200_000 // n)  # calls per timing: short calls, many of them
        binary = None
        for n_classes in (2, 3, 5, 10):
            y = rng.integers(0, n_classes, size=n)
            scores = (
                rng.normal(size=n)
                if n_classes == 2
                else rng.normal(size=(n, n_classes))
            )

            def run(scores=scores, y=y, groups=groups, inner=inner):
                for _ in range(inner):
                    group_penalty(scores, y, groups, 40)

            seconds = timed(run, repeat)
            per_row = seconds.median / inner / n * 1e6
            if binary is None:
                binary = per_row
            columns = 1 if n_classes == 2 else n_classes
            print(
                f"| {n:,} | {n_classes} | {seconds.median / inner * 1e3:.3f} "
                f"({seconds.minimum / inner * 1e3:.3f}) | {per_row:.3f} | "
                f"{per_row / columns:.3f} | {per_row / binary:.2f}x |"
            )


def federation(n_classes):
    options = (
        {"prevalence": [0.4, 0.3, 0.2, 0.1]}
        if n_classes == 2
        else {
            "n_classes": 3,
            "class_proportions": [
                [0.5, 0.3, 0.2],
                [0.6, 0.25, 0.15],
                [0.7, 0.2, 0.1],
                [0.8, 0.15, 0.05],
            ],
        }
    )
    data = make_federated_classification(
        30_000,
        n_clients=5,
        n_features=10,
        group_shift=1.0,
        class_sep=2.0,
        random_state=0,
        **options,
    )
    S = np.column_stack(list(data.sensitive.values()))
    test = np.arange(len(data.target)) % 5 == 0
    return data, S, test


def fedida_table(repeat):
    print(
        "\n(b) make_fedida() on a synthetic federation (24,000 training rows, "
        "5 clients, 4 groups), test rows\n"
    )
    print(header(repeat) + "\n")
    print(
        "| classes | fit time (s) | accuracy | Brier | DPD | EOD | "
        "accuracy plain | Brier plain | DPD plain | EOD plain |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n_classes in (2, 3):
        data, S, test = federation(n_classes)
        X, y, clients = data.data, data.target, data.clients
        train = ~test

        def fit(fairness=None, X=X, y=y, clients=clients, S=S, train=train):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # None: make_fedida's default fairness.
                given = {} if fairness is None else {"fairness": fairness}
                return make_fedida(random_state=0, **given).fit(
                    X[train],
                    y[train],
                    clients=clients[train],
                    sensitive_features=S[train],
                )

        fair = timed(fit, repeat)
        plain = fit(0.0)
        row = []
        for model in (fair.result, plain):
            decisions = model.predict(X[test])
            truth = y[test][:, None] == model.classes_[None, :]
            proba = model.predict_proba(X[test])
            row.append(f"{np.mean(decisions == y[test]):.3f}")
            row.append(f"{np.mean(np.sum((proba - truth) ** 2, axis=1)):.3f}")
            for metric in (demographic_parity_difference, equalized_odds_difference):
                row.append(
                    f"{metric(y[test], decisions, sensitive_features=S[test]):.3f}"
                )
        print(f"| {n_classes} | {fair} | " + " | ".join(row) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fit-repeat", type=int, default=3)
    args = parser.parse_args()
    print(header(args.repeat) + "\n")
    penalty_table(args.repeat)
    fedida_table(args.fit_repeat)


if __name__ == "__main__":
    main()
