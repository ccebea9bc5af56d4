"""Fairness at the operating point: FedIDA's defaults vs FedAvg, honestly.

Run: ``python benchmarks/operating_point.py [--seeds 3] [--quick]``

For every data set and setup, the mean over clients and seeds of: test AUROC,
Brier score, the positive rate at 0.5, the demographic parity difference (DPD)
of the decisions at 0.5, the DPD of the probabilities (the paper's metric), and
the DPD and false positive rate difference (DFPR) of the decisions at a
*matched selection rate*: the operating point at which the federation selects
exactly its training prevalence of the test rows, found from the clients'
summed score histograms, rows tied at the threshold selected with the
probability that makes the share exact (``evaluate_clients(...,
threshold="prevalence")``). Groups with fewer than 30 test rows on a client
are left out of its disparities. Each change against FedAvg is printed with
its standard deviation over the seeds.

Setups (the paper's training settings: 10 rounds x 5 local epochs, batch 128,
step 0.1, gamma 1e-4, ROSE on every minibatch):

- FedAvg: ``FairPenaltyLogisticRegression(fairness=0)``;
- paper FedIDA: the paper's group penalty at lambda = 1 with ROSE, no prior
  correction (``prior_correction=None``);
- make_fedida: ``make_fedida(random_state=s)``, the library's defaults (the
  standardized group penalty at lambda = 0.25, ROSE with
  ``n_target="group_mean"`` and the prior correction);
- one size: make_fedida with ``FairnessAwareROSE()`` (every (group,
  outcome) subgroup brought to one size, the paper's Algorithm 1);
- one size, lambda 0.5: the same at lambda = 0.5, make_fedida's earlier
  defaults.

Data: the shipped Adult split with race White / non-White x gender (4 groups)
and race x gender (10 groups); the ROC-like data (``make_roc_like``, 20% of
each client held out); a synthetic federation whose groups have base rates
0.10, 0.25, 0.40 and 0.55. Then an ablation of FedIDA's parts, the paper's
FCNN (``make_fedida("mlp")`` against FedAvg with the same network) on Adult
and the ROC-like data, and the trade-off along lambda on Adult (both
codings) and the ROC-like data, at the matched rate: the tables behind a
``TradeoffDisplay`` (``--plot``).
"""

import argparse
import warnings

import numpy as np
import pandas as pd
from _timing import Stopwatch, machine

from skfedida.datasets import load_adult, make_federated_classification, make_roc_like
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.model_selection import make_fedida
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

COLUMNS = {
    "roc_auc": "AUROC",
    "brier": "Brier",
    "rate_matched": "rate matched",
    "rate_05": "rate@0.5",
    "dpd_05": "DPD@0.5",
    "soft_dpd": "DPD prob",
    "dpd": "DPD matched",
    "dfpr": "DFPR matched",
}


def binarise_race(S):
    return S.assign(race=np.where(S["race"] == "White", "White", "non-White"))


def adult(binary):
    train, test = load_adult("train"), load_adult("test")
    recode = binarise_race if binary else (lambda S: S)
    return (
        (train.data, train.target, train.clients.to_numpy(), recode(train.sensitive)),
        (test.data, test.target, test.clients.to_numpy(), recode(test.sensitive)),
    )


def held_out(data, seed):
    X, y, clients, S = data
    rng = np.random.default_rng(seed)
    test = np.zeros(len(y), dtype=bool)
    for client in np.unique(clients):
        rows = np.flatnonzero(clients == client)
        test[rng.choice(rows, size=len(rows) // 5, replace=False)] = True

    def part(mask):
        return (
            X[mask].reset_index(drop=True),
            np.asarray(y)[mask],
            clients[mask],
            S[mask].reset_index(drop=True),
        )

    return part(~test), part(test)


def roc_like(seed):
    roc = make_roc_like(random_state=seed, as_frame=True)
    return held_out((roc.data, roc.target, roc.clients.to_numpy(), roc.sensitive), seed)


def synthetic(seed):
    data = make_federated_classification(
        12_000,
        n_clients=4,
        prevalence=[0.10, 0.25, 0.40, 0.55],
        group_proportions=[0.4, 0.3, 0.2, 0.1],
        as_frame=True,
        random_state=seed,
    )
    S = pd.DataFrame(data.sensitive)
    return held_out((data.data, data.target, np.asarray(data.clients), S), seed)


def setups(rounds, epochs):
    common = dict(n_rounds=rounds, local_epochs=epochs)
    return {
        "FedAvg": lambda s: FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.0), random_state=s, **common
        ),
        "paper FedIDA": lambda s: FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=1.0),
            sampler=FairnessAwareROSE(),
            prior_correction=None,
            random_state=s,
            **common,
        ),
        "make_fedida": lambda s: make_fedida(random_state=s, **common),
        # The paper's sampler (every subgroup to one size) in make_fedida, and
        # make_fedida's earlier defaults (that sampler at lambda 0.5).
        "one size": lambda s: make_fedida(
            random_state=s, sampler=FairnessAwareROSE(), **common
        ),
        "one size, lambda 0.5": lambda s: make_fedida(
            fairness=0.5, random_state=s, sampler=FairnessAwareROSE(), **common
        ),
    }


def evaluate(model, test):
    X, y, clients, S = test
    kwargs = dict(clients=clients, sensitive_features=S, min_group_size=30)
    matched = evaluate_clients(
        model,
        X,
        y,
        metrics=("roc_auc", "brier", "dpd", "dfpr", "soft_dpd"),
        threshold="prevalence",
        n_bootstrap=0,
        **kwargs,
    )
    at_half = evaluate_clients(
        model, X, y, metrics=("selection_rate", "dpd"), n_bootstrap=0, **kwargs
    )
    row = matched.summary["mean"].to_dict()
    # The share the matched operating point selects: the training prevalence,
    # exactly (rows tied at the threshold selected with the probability that
    # makes it so).
    row["rate_matched"] = matched.achieved_rate
    row["rate_05"] = at_half.summary.loc["selection_rate", "mean"]
    row["dpd_05"] = at_half.summary.loc["dpd", "mean"]
    return row


def run(make, train, test):
    X, y, clients, S = train
    model = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y, clients=clients, sensitive_features=S)
        return evaluate(model, test)


def seed_means(title, makers, load, seeds):
    """Every setup's metrics, mean over the seeds, printed as one table."""
    rows, per_seed = {}, {}
    for name, make in makers.items():
        results = [run(lambda make=make, s=s: make(s), *load(s)) for s in seeds]
        per_seed[name] = pd.DataFrame(results)
        rows[name] = per_seed[name].mean()
    print_table(title, rows, per_seed)


def seed_spread(per_seed, name):
    """The sd over seeds of a setup's relative change of matched DPD and DFPR."""
    base, other = per_seed["FedAvg"], per_seed[name]
    if len(base) < 2:
        return ""
    dpd = (other["dpd"] / base["dpd"] - 1).std(ddof=1)
    dfpr = (other["dfpr"] / base["dfpr"] - 1).std(ddof=1)
    return f" (sd over seeds {dpd:.0%}, {dfpr:.0%})"


def print_table(title, rows, per_seed=None):
    table = pd.DataFrame(rows).T[list(COLUMNS)].rename(columns=COLUMNS)
    print(f"\n{title}\n")
    print("| setup | " + " | ".join(table.columns) + " |")
    print("|---" * (len(table.columns) + 1) + "|")
    for name, values in table.iterrows():
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    base = table.loc["FedAvg"]
    for name in table.index[1:]:
        change = table.loc[name]
        dpd = change["DPD matched"] / base["DPD matched"] - 1
        dfpr = change["DFPR matched"] / base["DFPR matched"] - 1
        spread = "" if per_seed is None else seed_spread(per_seed, name)
        print(
            f"  {name} vs FedAvg: DPD matched {dpd:+.0%}, DFPR matched {dfpr:+.0%}"
            f"{spread}, AUROC {change['AUROC'] - base['AUROC']:+.3f}, "
            f"Brier x{change['Brier'] / base['Brier']:.3f}, "
            f"rate@0.5 x{change['rate@0.5'] / base['rate@0.5']:.2f}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="3 rounds x 2 epochs")
    parser.add_argument(
        "--plot", metavar="PNG", help="draw the trade-off along lambda (matplotlib)"
    )
    parser.add_argument(
        "--main-only",
        action="store_true",
        help="only FedAvg vs make_fedida on Adult (binary race), with the spread "
        "of the change across seeds",
    )
    args = parser.parse_args()
    rounds, epochs = (3, 2) if args.quick else (10, 5)
    seeds = range(args.seeds)
    stopwatch = Stopwatch()
    print(f"{len(seeds)} seeds, {rounds} rounds x {epochs} local epochs; {machine()}")
    makers = setups(rounds, epochs)
    if args.main_only:
        changes = []
        for s in seeds:
            base = run(lambda s=s: makers["FedAvg"](s), *adult(True))
            ida = run(lambda s=s: makers["make_fedida"](s), *adult(True))
            changes.append(
                [
                    ida["dpd"] / base["dpd"] - 1,
                    ida["dfpr"] / base["dfpr"] - 1,
                    ida["roc_auc"] - base["roc_auc"],
                    ida["brier"] / base["brier"],
                ]
            )
        changes = np.array(changes)
        mean, sd = changes.mean(axis=0), changes.std(axis=0, ddof=1)
        print("\nmake_fedida vs FedAvg, Adult race White/non-White x gender, per seed:")
        for s, row in zip(seeds, changes, strict=True):
            print(
                f"  seed {s}: DPD matched {row[0]:+.0%}, DFPR matched {row[1]:+.0%}, "
                f"AUROC {row[2]:+.3f}, Brier x{row[3]:.3f}"
            )
        print(
            f"  mean (sd) over {len(seeds)} seeds: DPD matched {mean[0]:+.0%} "
            f"({sd[0]:.0%}), DFPR matched {mean[1]:+.0%} ({sd[1]:.0%}), AUROC "
            f"{mean[2]:+.3f} ({sd[2]:.3f}), Brier x{mean[3]:.3f} ({sd[3]:.3f})"
        )
        return
    datasets = {
        "Adult, race White/non-White x gender": lambda s: adult(True),
        "Adult, race x gender": lambda s: adult(False),
        "ROC-like data": roc_like,
        "synthetic, group base rates 0.10-0.55": synthetic,
    }
    for title, load in datasets.items():
        seed_means(title, makers, load, seeds)

    # What each part of FedIDA does to calibration and matched disparities.
    common = dict(n_rounds=rounds, local_epochs=epochs)
    ablation = {
        "FedAvg": makers["FedAvg"],
        "ROSE only, no correction": lambda s: FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.0),
            sampler=FairnessAwareROSE(),
            prior_correction=None,
            random_state=s,
            **common,
        ),
        "ROSE only, corrected": lambda s: FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.0),
            sampler=FairnessAwareROSE(),
            random_state=s,
            **common,
        ),
        "ROSE group_mean only, corrected": lambda s: FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.0),
            sampler=FairnessAwareROSE(n_target="group_mean"),
            random_state=s,
            **common,
        ),
        "paper penalty (lambda 1) + corrected ROSE": lambda s: FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=1.0),
            sampler=FairnessAwareROSE(),
            random_state=s,
            **common,
        ),
    }
    seed_means(
        "Ablation, Adult, race White/non-White x gender",
        ablation,
        lambda s: adult(True),
        seeds,
    )

    # The paper's FCNN: does the penalty on the network's output carry over to
    # its decisions as it does for the logistic model?
    network = {
        "FedAvg": lambda s: FederatedEstimator(
            FairMLPClassifier(fairness=0.0, solver="sgd"), random_state=s, **common
        ),
        "make_fedida": lambda s: make_fedida("mlp", random_state=s, **common),
        "make_fedida, lambda 1": lambda s: make_fedida(
            "mlp", fairness=1.0, random_state=s, **common
        ),
    }
    for title, load in {
        "Adult, race White/non-White x gender": lambda s: adult(True),
        "ROC-like data": roc_like,
    }.items():
        seed_means(f"FCNN (model='mlp'), {title}", network, load, seeds)

    # Along lambda on each data set, seed 0: where the default sits on the
    # trade-off, and whether a larger lambda would reach what it does not.
    lambdas = (0.0, 0.25, 0.5, 1.0, 2.0)
    curves = {}
    for title, (train, test) in {
        "Adult, race White/non-White x gender": adult(True),
        "Adult, race x gender": adult(False),
        "ROC-like data": roc_like(0),
    }.items():
        print(f"\nTrade-off along lambda (make_fedida), {title}, seed 0\n")
        print("| lambda | AUROC | Brier | rate@0.5 | DPD matched | DFPR matched |")
        print("|---|---|---|---|---|---|")
        curve = []
        for fairness in lambdas:
            row = run(
                lambda f=fairness: make_fedida(
                    fairness=f, random_state=0, n_rounds=rounds, local_epochs=epochs
                ),
                train,
                test,
            )
            curve.append((row["roc_auc"], row["dpd"]))
            print(
                f"| {fairness} | {row['roc_auc']:.3f} | {row['brier']:.3f} | "
                f"{row['rate_05']:.3f} | {row['dpd']:.3f} | {row['dfpr']:.3f} |"
            )
        curves[title] = curve
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        from skfedida.plotting import TradeoffDisplay

        display = TradeoffDisplay(
            {
                title: (lambdas, *zip(*curve, strict=True))
                for title, curve in curves.items()
            },
            disparity_name="DPD of decisions at the matched selection rate",
        ).plot()
        display.figure_.savefig(args.plot, dpi=120)
        print(f"trade-off drawn to {args.plot}")
    print(f"\n{stopwatch}")


if __name__ == "__main__":
    main()
