"""Boosted trees with the group penalty on raw Adult: the trade-off, honestly.

Run: ``python benchmarks/trees_tradeoff.py [--seeds 3] [--max-iter 200]``

The raw Adult table (``load_adult(raw=True)``, string columns as
categories), on one machine: scikit-learn's ``HistGradientBoostingClassifier``
and ``FairHistGradientBoostingClassifier`` along ``fairness`` (race x
gender, 10 groups); and the same trees federated over the 5 clients
(``FederatedEstimator``, no row pooled). Early stopping on 10% of the
training rows (drawn with each seed; in the federation, each client's own
10%). For every setup, the mean over seeds (and its standard
deviation) of the mean over the 5 clients' test rows of: AUROC, Brier score,
and the demographic parity difference (DPD) and false positive rate
difference (DFPR) of the decisions at a *matched selection rate*: the
operating point at which the federation selects exactly its training
prevalence of the test rows, rows tied at the threshold selected with the
probability that makes the share exact (``evaluate_clients(...,
threshold="prevalence")``); groups with fewer than 30 test rows on a client
are left out of its disparities. The realised selection rate is printed with
them. Also the training rows' group penalty, which the fit lowers.

Then, on the ROC-like data and the synthetic federation of
``benchmarks/operating_point.py`` (each client's 20% held out per seed), the
federated trees with FedIDA's two levers: the group penalty, the sampler
(``FairnessAwareROSE``, each client's rows resampled once), and both.

The issue's reference figures: scikit-learn's pooled trees reach AUROC 0.925
on these rows, the federated logistic model with federated preprocessing
0.891; its target: the federated trees within 0.002 of the pooled AUROC
(printed per seed below the table).
"""

import argparse
import warnings

import numpy as np
import pandas as pd
from _timing import Stopwatch
from sklearn.ensemble import HistGradientBoostingClassifier

from skfedida.datasets import load_adult
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.penalty import group_penalty

METRICS = ("roc_auc", "brier", "selection_rate", "dpd", "dfpr")
COLUMNS = {
    "roc_auc": "AUROC",
    "brier": "Brier",
    "selection_rate": "rate matched",
    "dpd": "DPD matched",
    "dfpr": "DFPR matched",
    "penalty": "train penalty",
}


def _frame(data):
    """The raw table with its string columns as pandas categories."""
    X = data.data.copy()
    for column in X.columns:
        if not pd.api.types.is_numeric_dtype(X[column]):
            X[column] = X[column].astype("category")
    return X


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=200)
    args = parser.parse_args()
    train, test = load_adult("train", raw=True), load_adult("test", raw=True)
    X_train, X_test = _frame(train), _frame(test)
    # The test table's categories as the training table's (unseen: NaN).
    for column in X_train.select_dtypes("category"):
        X_test[column] = pd.Categorical(
            X_test[column], categories=X_train[column].cat.categories
        )
    y_train, y_test = train.target.to_numpy(), test.target.to_numpy()
    codes, _ = pd.factorize(pd.MultiIndex.from_frame(train.sensitive))
    setups = {
        "scikit-learn": (None, False),
        **{f"fairness={f:g}": (f, False) for f in (0, 1, 10, 100)},
        **{f"federated, fairness={f:g}": (f, True) for f in (0, 1, 10)},
    }
    rows = []
    watch = Stopwatch()
    for name, (fairness, federated) in setups.items():
        for seed in range(args.seeds):
            params = {"max_iter": args.max_iter, "random_state": seed}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if fairness is None:
                    model = HistGradientBoostingClassifier(**params).fit(
                        X_train, y_train
                    )
                elif federated:
                    model = FederatedEstimator(
                        FairHistGradientBoostingClassifier(fairness=fairness, **params),
                        random_state=seed,
                    ).fit(
                        X_train,
                        y_train,
                        clients=train.clients.to_numpy(),
                        sensitive_features=train.sensitive,
                    )
                else:
                    model = FairHistGradientBoostingClassifier(
                        fairness=fairness, **params
                    ).fit(X_train, y_train, sensitive_features=train.sensitive)
                report = evaluate_clients(
                    model,
                    X_test,
                    y_test,
                    clients=test.clients.to_numpy(),
                    sensitive_features=test.sensitive,
                    metrics=METRICS,
                    threshold="prevalence",
                    prevalence=float(y_train.mean()),
                    min_group_size=30,
                    n_bootstrap=0,
                )
            row = dict(report.summary["mean"])
            row["penalty"] = group_penalty(
                model.decision_function(X_train), y_train, codes
            )[0]
            rows.append({"setup": name, "seed": seed, **row})
    table = pd.DataFrame(rows)
    summary = table.groupby("setup", sort=False)[list(COLUMNS)].agg(["mean", "std"])
    print(
        f"Raw Adult, one machine and 5 clients, up to {args.max_iter} trees, "
        f"early stopping, {args.seeds} seeds; {watch}\n"
    )
    header = "| setup | " + " | ".join(COLUMNS.values()) + " |"
    print(header)
    print("|---|" + "---:|" * len(COLUMNS))
    for setup, values in summary.iterrows():
        cells = [
            f"{values[(key, 'mean')]:.3f} ({values[(key, 'std')]:.3f})"
            for key in COLUMNS
        ]
        print(f"| {setup} | " + " | ".join(cells) + " |")
    print(
        "\nMean (standard deviation over seeds) of the mean over clients; "
        "'matched' figures are of decisions at exactly the training prevalence."
    )
    by_seed = table.set_index(["setup", "seed"])["roc_auc"]
    gaps = (by_seed["federated, fairness=0"] - by_seed["scikit-learn"]).abs()
    print(
        "\nTarget: the federated trees' AUROC within 0.002 of scikit-learn's "
        f"pooled trees', seed by seed: largest gap {gaps.max():.4f} "
        f"({'met' if gaps.max() <= 0.002 else 'NOT met'})."
    )
    _levers(args.seeds)


def _levers(seeds):
    """Federated trees with the penalty and/or the sampler on two more datasets."""
    from operating_point import roc_like, synthetic

    from skfedida.over_sampling import FairnessAwareROSE

    setups = {
        "federated trees": (0.0, None),
        "+ penalty": (1.0, None),
        "+ sampler": (0.0, "rose"),
        "+ penalty + sampler": (1.0, "rose"),
    }
    for label, load in (("ROC-like data", roc_like), ("synthetic", synthetic)):
        rows = []
        watch = Stopwatch()
        for seed in range(seeds):
            (X, y, clients, S), (X_t, y_t, clients_t, S_t) = load(seed)
            for name, (fairness, sampler) in setups.items():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = FederatedEstimator(
                        FairHistGradientBoostingClassifier(
                            fairness=fairness, random_state=seed
                        ),
                        sampler=None
                        if sampler is None
                        else FairnessAwareROSE(random_state=seed),
                        random_state=seed,
                    ).fit(X, y, clients=clients, sensitive_features=S)
                    report = evaluate_clients(
                        model,
                        X_t,
                        y_t,
                        clients=clients_t,
                        sensitive_features=S_t,
                        metrics=METRICS,
                        threshold="prevalence",
                        prevalence=float(np.mean(y)),
                        min_group_size=30,
                        n_bootstrap=0,
                    )
                rows.append({"setup": name, "seed": seed, **report.summary["mean"]})
        table = pd.DataFrame(rows)
        keys = [k for k in COLUMNS if k != "penalty"]
        summary = table.groupby("setup", sort=False)[keys].agg(["mean", "std"])
        print(f"\n{label}, federated, {seeds} seeds; {watch}\n")
        print("| setup | " + " | ".join(COLUMNS[k] for k in keys) + " |")
        print("|---|" + "---:|" * len(keys))
        for setup, values in summary.iterrows():
            cells = [
                f"{values[(k, 'mean')]:.3f} ({values[(k, 'std')]:.3f})" for k in keys
            ]
            print(f"| {setup} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
