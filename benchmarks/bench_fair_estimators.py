"""Fairness penalty and FairPenaltyLogisticRegression: speed.

Run: ``python benchmarks/bench_fair_estimators.py [--repeat 3]``

Times are the median (and min) of ``--repeat`` runs (the O(n^2) pairwise
penalty at n = 16,000 runs once), printed with the core count and load.

(a) Group penalty value + gradient: the closed form through group means
    against the pairwise definition (vectorised numpy over all label-matched
    cross-group pairs, O(n^2)) at n = 1e3, 4e3, 1.6e4; 10 groups.
(b) ``FairPenaltyLogisticRegression(fairness=0).fit`` against sklearn's
    ``LogisticRegression`` (lbfgs) with ``C = 1 / (2 alpha n)`` on the shipped
    Adult training data (27,130 rows, 30 one-hot columns), both at tol=1e-6:
    time ratio and largest coefficient difference.
(c) One ``partial_fit`` epoch (batch 128, lr 0.1) on the Adult training data
    with race x gender groups: rows per second.
(d) The objective after 20 ``partial_fit`` epochs against the full-batch
    optimum, for three values of ``fairness``, with and without averaging.
"""

import argparse

import numpy as np
from _timing import header, timed
from sklearn.linear_model import LogisticRegression

from skfedida.datasets import load_adult
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.penalty import group_penalty


def pairwise_group_penalty(scores, y, groups):
    """Literal definition, vectorised per pair of groups: O(n^2) work."""
    n_groups = groups.max() + 1
    sizes = np.bincount(groups, minlength=n_groups).astype(float)
    normaliser = 0.5 * (sizes.sum() ** 2 - sizes @ sizes)
    value = 0.0
    gradient = np.zeros_like(scores)
    members = [np.flatnonzero(groups == k) for k in range(n_groups)]
    for k in range(n_groups):
        for m in range(k + 1, n_groups):
            i, j = members[k], members[m]
            same = y[i][:, None] == y[j][None, :]
            differences = np.where(same, scores[i][:, None] - scores[j][None, :], 0.0)
            delta = differences.sum() / (sizes[k] * sizes[m])
            weight = sizes[k] * sizes[m] / normaliser
            value += weight * delta**2
            factor = 2 * weight * delta / (sizes[k] * sizes[m])
            gradient[i] += factor * same.sum(axis=1)
            gradient[j] -= factor * same.sum(axis=0)
    return value, gradient


def penalty_table(repeat):
    rng = np.random.default_rng(0)
    print("(a) group penalty value + gradient, 10 groups\n")
    print(
        "| n | closed form (ms) | pairwise O(n^2) (ms) | runs of pairwise | "
        "pairwise / closed (medians) |"
    )
    print("|---:|---:|---:|---:|---:|")
    for n in (1_000, 4_000, 16_000):
        scores, y = rng.normal(size=n), rng.integers(0, 2, size=n)
        groups = rng.integers(0, 10, size=n)
        closed = timed(
            lambda s=scores, t=y, g=groups: group_penalty(s, t, g, 10), repeat
        )
        pairs = timed(
            lambda s=scores, t=y, g=groups: pairwise_group_penalty(s, t, g),
            1 if n > 4000 else repeat,
        )
        (v1, g1), (v2, g2) = closed.result, pairs.result
        assert np.isclose(v1, v2) and np.allclose(g1, g2)
        print(
            f"| {n:,} | {closed.ms()} | {pairs.ms()} | {pairs.repeat} | "
            f"{pairs.median / closed.median:.0f}x |"
        )


def fit_table(X, y, repeat):
    alpha = 1e-4
    t_ours = timed(
        lambda: FairPenaltyLogisticRegression(fairness=0, alpha=alpha, tol=1e-6).fit(
            X, y
        ),
        repeat,
    )
    t_sk = timed(
        lambda: LogisticRegression(
            C=1 / (2 * alpha * len(y)), tol=1e-6, max_iter=10_000
        ).fit(X, y),
        repeat,
    )
    ours, theirs = t_ours.result, t_sk.result
    difference = np.abs(ours.coef_ - theirs.coef_).max()
    proba = np.abs(ours.predict_proba(X) - theirs.predict_proba(X)).max()
    print("\n(b) full-batch fit on Adult train (fairness=0), tol=1e-6\n")
    print("| model | time (s) | iterations |")
    print("|---|---:|---:|")
    print(f"| FairPenaltyLogisticRegression | {t_ours} | {ours.n_iter_} |")
    print(f"| sklearn LogisticRegression (lbfgs) | {t_sk} | {theirs.n_iter_[0]} |")
    print(
        f"\ntime ratio (medians) {t_ours.median / t_sk.median:.2f}; "
        f"max |coef difference| {difference:.2e}; "
        f"max |probability difference| {proba:.2e}"
    )


def epoch_table(X, y, S, repeat):
    model = FairPenaltyLogisticRegression(random_state=0)
    model.partial_fit(X, y, classes=[0, 1], sensitive_features=S)
    epoch = timed(lambda: model.partial_fit(X, y, sensitive_features=S), repeat)
    print("\n(c) one partial_fit epoch on Adult train, race x gender, batch 128\n")
    print(
        f"{len(y):,} rows in {epoch} s: {len(y) / epoch.median:,.0f} rows/s "
        "(at the median)"
    )


def sgd_gap_table(X, y, S):
    print("\n(d) 20 partial_fit epochs against the fit optimum, Adult train\n")
    print("| fairness | average | fit objective | 20 epochs | gap |")
    print("|---:|---|---:|---:|---:|")
    for fairness in (0.0, 0.3, 1.0):
        best = (
            FairPenaltyLogisticRegression(fairness=fairness)
            .fit(X, y, sensitive_features=S)
            .objective(X, y, sensitive_features=S)
        )
        for average in (False, True):
            model = FairPenaltyLogisticRegression(
                fairness=fairness, average=average, random_state=0
            )
            for _ in range(20):
                model.partial_fit(X, y, classes=[0, 1], sensitive_features=S)
            reached = model.objective(X, y, sensitive_features=S)
            print(
                f"| {fairness} | {average} | {best:.4f} | {reached:.4f} | "
                f"{100 * (reached - best) / best:.2f}% |"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(header(args.repeat) + "\n")
    penalty_table(args.repeat)
    adult = load_adult("train")
    X, y = adult.data.to_numpy(), adult.target.to_numpy()
    fit_table(X, y, args.repeat)
    epoch_table(X, y, adult.sensitive, args.repeat)
    sgd_gap_table(X, y, adult.sensitive)


if __name__ == "__main__":
    main()
