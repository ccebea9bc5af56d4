"""Trees or a linear model, with group thresholds on top: the frontier on Adult.

Run: ``python benchmarks/trees_frontier.py [--seeds 3]``

Issue 36 asks whether, with group thresholds on top, the fairness-accuracy
frontier of the boosted trees lies above the logistic regression's. On the
raw Adult table, on one machine (the trees' federated fit gives the same
trees bit for bit; FedAvg's logistic model approaches, not equals, the
pooled one), four models are trained on the training rows:

- logistic: one-hot encoding and scaling, then scikit-learn's
  ``LogisticRegression`` (the linear model the federation trains);
- logistic + penalty: the same inputs into
  ``FairPenaltyLogisticRegression(fairness=1)``, and its control at
  ``fairness=0`` (the same estimator without the penalty);
- trees: scikit-learn's ``HistGradientBoostingClassifier`` (string columns
  as categories);
- trees + penalty: ``FairHistGradientBoostingClassifier(fairness=1)``.

Each model's group thresholds (``FederatedThresholdOptimizer``, demographic
parity at the training prevalence's selection rate, 10 race x gender
groups) are found on the validation rows. On the test rows the script
prints, per model, the mean (sd over seeds) over the 5 clients of:
accuracy, AUROC and Brier of the model, and DPD and DFPR of the decisions,
without thresholds (at exactly the training prevalence's rate) and with
them (the rate they keep is printed).

Then the frontier itself, swept: for the logistic model, the trees and the
trees federated over the 5 clients (``FederatedEstimator``, no row
pooled), the most accurate group thresholds whose groups' selection rates
differ by at most each ``tolerance`` on the validation rows
(``--tolerances``; 0 is exact demographic parity; the selection rate is
the thresholds' to choose, and is printed): test accuracy, DPD and rate,
mean (sd) over seeds. "Above" is then checked point by point: at every
tolerance, higher accuracy at no more DPD (each by more than the sum of
the two sds where it claims so).
"""

import argparse
import warnings

import pandas as pd
from _timing import Stopwatch
from sklearn.compose import make_column_transformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skfedida.datasets import load_adult
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.exceptions import InactivePenaltyWarning
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.postprocessing import FederatedThresholdOptimizer

METRICS = ("accuracy", "roc_auc", "brier", "selection_rate", "dpd", "dfpr")


def _categories(frames):
    """String columns as categories of the training table's values."""
    train = frames[0].copy()
    strings = [c for c in train.columns if not pd.api.types.is_numeric_dtype(train[c])]
    out = []
    for frame in frames:
        frame = frame.copy()
        for column in strings:
            frame[column] = pd.Categorical(
                frame[column], categories=sorted(train[column].dropna().unique())
            )
        out.append(frame)
    return out, strings


def _linear(estimator, strings, numbers):
    encode = make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore"), strings),
        (StandardScaler(), numbers),
    )
    return make_pipeline(encode, estimator)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--tolerances",
        type=float,
        nargs="+",
        default=[0.0, 0.02, 0.05, 0.1, 0.2, 0.4],
    )
    args = parser.parse_args()
    parts = {name: load_adult(name, raw=True) for name in ("train", "val", "test")}
    (X_train, X_val, X_test), strings = _categories(
        [parts[name].data for name in ("train", "val", "test")]
    )
    numbers = [c for c in X_train.columns if c not in strings]
    y = {name: parts[name].target.to_numpy() for name in parts}
    S = {name: parts[name].sensitive for name in parts}
    prevalence = float(y["train"].mean())
    watch = Stopwatch()
    rows, sweep = [], []
    for seed in range(args.seeds):
        groups = S["train"]
        models = {
            "logistic": (
                _linear(LogisticRegression(max_iter=2000), strings, numbers),
                {},
            ),
            # The penalty's own control: the same estimator at fairness=0.
            "logistic, fairness=0": (
                _linear(
                    FairPenaltyLogisticRegression(fairness=0.0, random_state=seed),
                    strings,
                    numbers,
                ),
                {"fairpenaltylogisticregression__sensitive_features": groups},
            ),
            "logistic + penalty": (
                _linear(
                    FairPenaltyLogisticRegression(fairness=1.0, random_state=seed),
                    strings,
                    numbers,
                ),
                {"fairpenaltylogisticregression__sensitive_features": groups},
            ),
            "trees": (HistGradientBoostingClassifier(random_state=seed), {}),
            "trees + penalty": (
                FairHistGradientBoostingClassifier(fairness=1.0, random_state=seed),
                {"sensitive_features": groups},
            ),
        }
        federated = FederatedEstimator(
            FairHistGradientBoostingClassifier(random_state=seed), random_state=seed
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            federated.fit(
                X_train, y["train"], clients=parts["train"].clients.to_numpy()
            )
            sweep += _swept(
                "federated trees",
                federated,
                args.tolerances,
                seed,
                prevalence,
                X_val,
                X_test,
                y,
                S,
                {
                    "clients": parts["test"].clients.to_numpy(),
                    "sensitive_features": S["test"],
                    "metrics": METRICS,
                    "min_group_size": 30,
                    "n_bootstrap": 0,
                },
            )
        for name, (model, fit_params) in models.items():
            with warnings.catch_warnings():
                # Only what these data are known to raise: small groups of a
                # client in the threshold optimizer's counts, and sklearn's
                # iteration limit; a penalty without groups would still warn.
                warnings.simplefilter("ignore", UserWarning)
                warnings.simplefilter("ignore", ConvergenceWarning)
                warnings.simplefilter("error", InactivePenaltyWarning)
                model.fit(X_train, y["train"], **fit_params)
                post = FederatedThresholdOptimizer(
                    model, prefit=True, selection_rate=prevalence, random_state=seed
                ).fit(X_val, y["val"], sensitive_features=S["val"])
                common = {
                    "clients": parts["test"].clients.to_numpy(),
                    "sensitive_features": S["test"],
                    "metrics": METRICS,
                    "min_group_size": 30,
                    "n_bootstrap": 0,
                }
                plain = evaluate_clients(
                    model,
                    X_test,
                    y["test"],
                    threshold="prevalence",
                    prevalence=prevalence,
                    **common,
                ).summary["mean"]
                thresholded = evaluate_clients(
                    post, X_test, y["test"], **common
                ).summary["mean"]
            if name in ("logistic", "trees"):
                sweep += _swept(
                    name,
                    model,
                    args.tolerances,
                    seed,
                    prevalence,
                    X_val,
                    X_test,
                    y,
                    S,
                    common,
                )
            rows.append({"model": name, "thresholds": "no", "seed": seed, **plain})
            rows.append(
                {"model": name, "thresholds": "yes", "seed": seed, **thresholded}
            )
    table = pd.DataFrame(rows)
    summary = table.groupby(["model", "thresholds"], sort=False)[list(METRICS)].agg(
        ["mean", "std"]
    )
    print(f"Raw Adult, one machine, {args.seeds} seeds; {watch}\n")
    print("| model | thresholds | " + " | ".join(METRICS) + " |")
    print("|---|---|" + "---:|" * len(METRICS))
    for (model, thresholds), values in summary.iterrows():
        cells = [
            f"{values[(m, 'mean')]:.3f} ({values[(m, 'std')]:.3f})" for m in METRICS
        ]
        print(f"| {model} | {thresholds} | " + " | ".join(cells) + " |")
    print(
        "\nMean (sd over seeds) of the mean over the 5 clients' test rows; without "
        "thresholds, decisions at exactly the training prevalence's rate; with "
        "them, the decisions of the thresholds fitted on the validation rows."
    )

    _print_frontier(pd.DataFrame(sweep), args.tolerances)


def _swept(name, model, tolerances, seed, prevalence, X_val, X_test, y, S, common):
    """The model's thresholds at every tolerance: its test accuracy and DPD."""
    out = []
    for tolerance in tolerances:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            # Accuracy's best thresholds whose groups' selection rates differ
            # by at most the tolerance (the rate is theirs to choose).
            post = FederatedThresholdOptimizer(
                model, prefit=True, tolerance=tolerance, random_state=seed
            ).fit(X_val, y["val"], sensitive_features=S["val"])
            report = evaluate_clients(post, X_test, y["test"], **common)
        out.append(
            {
                "model": name,
                "tolerance": tolerance,
                "seed": seed,
                **report.summary["mean"],
            }
        )
    return out


def _print_frontier(sweep, tolerances):
    columns = ("accuracy", "dpd", "selection_rate")
    summary = sweep.groupby(["tolerance", "model"])[list(columns)].agg(["mean", "std"])
    models = list(dict.fromkeys(sweep["model"]))
    print("\nThe frontier, swept: test accuracy / DPD / rate, mean (sd) over seeds\n")
    print("| tolerance | " + " | ".join(models) + " |")
    print("|---:|" + "---|" * len(models))
    for tolerance in tolerances:
        cells = []
        for model in models:
            v = summary.loc[(tolerance, model)]
            cells.append(
                " / ".join(
                    f"{v[(c, 'mean')]:.3f} ({v[(c, 'std')]:.3f})" for c in columns
                )
            )
        print(f"| {tolerance:g} | " + " | ".join(cells) + " |")
    above = []
    for tolerance in tolerances:
        trees = summary.loc[(tolerance, "trees")]
        linear = summary.loc[(tolerance, "logistic")]
        gain = trees[("accuracy", "mean")] - linear[("accuracy", "mean")]
        noise = trees[("accuracy", "std")] + linear[("accuracy", "std")]
        worse = trees[("dpd", "mean")] - linear[("dpd", "mean")]
        dpd_noise = trees[("dpd", "std")] + linear[("dpd", "std")]
        above.append(gain > noise and worse <= dpd_noise)
    print(
        f"\nThe trees' frontier above the logistic model's (accuracy higher by "
        f"more than the sds' sum, DPD no higher beyond them) at "
        f"{sum(above)} of {len(above)} tolerances."
    )


if __name__ == "__main__":
    main()
