"""Rate constraints at the operating point against the mean-logit penalty (issue 45).

Run: ``python benchmarks/constrained_trees.py [--seeds 3] [--max-iter 100]
[--parts adult,flower,levers,linear,fairgbm]``

1. **adult**: the raw Adult table (string columns as categories), its 5
   clients, race White / non-White x gender (4 groups), ``max_iter`` trees of
   ``FairHistGradientBoostingClassifier`` without early stopping, federated
   (``FederatedEstimator``, no row pooled; equal to the pooled fit). Along the
   penalty's ``fairness`` (the issue's table) and with ``constraints=``: FPR
   parity and demographic parity at the defaults, and demographic parity at
   the ``tolerance`` chosen on the *validation* rows (the grid
   ``TOLERANCES``: the largest cut of validation DPD at an AUROC cost of at
   most 0.01 against the unconstrained trees). Then 10 race x gender groups
   at the defaults. On the test rows, the mean over the 5 clients of AUROC and
   of DPD and DFPR of the decisions at exactly the training prevalence's
   selection rate (``evaluate_clients(..., threshold="prevalence")``), mean
   (sd) over seeds; the ratios to the unconstrained trees; the fit's seconds
   (one run each) and their ratio to the unconstrained fit's.
2. **flower**: the same federation on Flower (``run_in_process``: the real
   ServerApp and ClientApps, no network), 20 trees, unconstrained and under
   FPR parity: seconds and their ratio, and whether the trees equal the
   in-process ones to the last bit.
3. **levers**: the synthetic federation and the ROC-like data of
   ``benchmarks/operating_point.py`` (each client's 20% held out per seed):
   the federated trees, with the penalty, and with a demographic-parity
   constraint at the defaults.
4. **linear**: the logistic model and the network (one-hot and scaled
   inputs, fitted on the training rows) in a FedAvg federation (20 rounds of
   2 local epochs), unconstrained and under FPR parity and demographic
   parity at the defaults.
5. **fairgbm**: FairGBM (Cruz et al., 2023; the ``fairgbm`` package) on the
   pooled Adult rows with an FPR constraint over the 4 groups, and at its
   defaults on the ROC-like and synthetic data, where it installs (``pip
   install fairgbm``; not a dependency); skipped, saying so, where it does
   not.
"""

import argparse
import warnings

import numpy as np
import pandas as pd
from _timing import header, timed
from sklearn.base import clone

from skfedida.datasets import load_adult
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.federated import FederatedEstimator, evaluate_clients

METRICS = ("roc_auc", "dpd", "dfpr")
TOLERANCES = (0.0, 0.03, 0.06, 0.09, 0.12)


def _frame(data, categories=None):
    X = data.data.copy()
    for column in X.columns:
        if not pd.api.types.is_numeric_dtype(X[column]):
            X[column] = pd.Categorical(
                X[column],
                categories=None if categories is None else categories[column],
            )
    return X


def adult(binary_race=True):
    """The raw Adult splits: (X, y, clients, S) for train, val and test."""
    splits = {name: load_adult(name, raw=True) for name in ("train", "val", "test")}
    train = _frame(splits["train"])
    categories = {c: train[c].cat.categories for c in train.select_dtypes("category")}
    out = {}
    for name, data in splits.items():
        S = data.sensitive.copy()
        if binary_race:
            S["race"] = np.where(S["race"] == "White", "White", "non-White")
        out[name] = (
            _frame(data, categories),
            data.target.to_numpy(),
            data.clients.to_numpy(),
            S,
        )
    return out


def _report(model, rows, prevalence):
    X, y, clients, S = rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = evaluate_clients(
            model,
            X,
            y,
            clients=clients,
            sensitive_features=S,
            metrics=METRICS,
            threshold="prevalence",
            prevalence=prevalence,
            n_bootstrap=0,
        )
    return dict(report.summary["mean"])


def _fit(estimator, rows, seed):
    """The federation fitted (one run), and its seconds."""
    X, y, clients, S = rows

    federation = (
        clone(estimator)
        if isinstance(estimator, FederatedEstimator)
        else FederatedEstimator(clone(estimator))
    ).set_params(random_state=seed)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return federation.fit(X, y, clients=clients, sensitive_features=S)

    timing = timed(fit, repeat=1)
    return timing.result, timing.median


def _trees(max_iter, seed, **params):
    return FairHistGradientBoostingClassifier(
        max_iter=max_iter, early_stopping=False, random_state=seed, **params
    )


def _table(rows, columns, title):
    print(f"\n{title}\n")
    frame = pd.DataFrame(rows)
    summary = frame.groupby("setup", sort=False)[list(columns)].agg(["mean", "std"])
    print("| setup | " + " | ".join(columns.values()) + " |")
    print("|---|" + "---:|" * len(columns))
    for setup, values in summary.iterrows():
        cells = []
        for key in columns:
            mean, sd = values[(key, "mean")], values[(key, "std")]
            sd = 0.0 if np.isnan(sd) else sd
            if key in METRICS:
                cells.append(f"{mean:.4f} ({sd:.4f})")
            else:
                cells.append(f"{mean:.4f}" if "cost" in key else f"{mean:.2f}")
        print(f"| {setup} | " + " | ".join(cells) + " |")
    return summary


def _chosen_tolerance(data, max_iter):
    """DP's tolerance chosen on the validation rows (seed 0)."""
    prevalence = float(np.mean(data["train"][1]))
    base, _ = _fit(_trees(max_iter, 0), data["train"], 0)
    reference = _report(base, data["val"], prevalence)
    best = (0.0, None)
    for tolerance in TOLERANCES:
        model, _ = _fit(
            _trees(max_iter, 0, constraints="demographic_parity", tolerance=tolerance),
            data["train"],
            0,
        )
        found = _report(model, data["val"], prevalence)
        cost = reference["roc_auc"] - found["roc_auc"]
        print(
            f"  validation, tolerance {tolerance:g}: AUROC cost {cost:.4f}, "
            f"DPD {found['dpd']:.4f} ({found['dpd'] / reference['dpd']:.2f}x)"
        )
        if cost <= 0.01 and (best[1] is None or found["dpd"] < best[1]):
            best = (tolerance, found["dpd"])
    return best[0]


def part_adult(seeds, max_iter):
    data = adult()
    prevalence = float(np.mean(data["train"][1]))
    print("Choosing demographic parity's tolerance on the validation rows:")
    tolerance = _chosen_tolerance(data, max_iter)
    print(f"  chosen: {tolerance:g}")
    setups = {
        "none": {},
        **{f"fairness={f:g}": {"fairness": f} for f in (1, 10, 100, 1000)},
        "FPR parity": {"constraints": "false_positive_rate_parity"},
        "demographic parity": {"constraints": "demographic_parity"},
        f"demographic parity, tolerance {tolerance:g}": {
            "constraints": "demographic_parity",
            "tolerance": tolerance,
        },
        "equalized odds": {"constraints": "equalized_odds"},
    }
    rows = []
    for seed in range(seeds):
        for name, params in setups.items():
            model, seconds = _fit(_trees(max_iter, seed, **params), data["train"], seed)
            rows.append(
                {
                    "setup": name,
                    "seed": seed,
                    "seconds": seconds,
                    **_report(model, data["test"], prevalence),
                }
            )
    frame = pd.DataFrame(rows)
    base = frame[frame.setup == "none"].set_index("seed")
    for key in ("roc_auc", "dpd", "dfpr", "seconds"):
        ratio = frame.set_index("seed")[key] / base[key]
        frame[f"{key} ratio"] = ratio.to_numpy()
    frame["AUROC cost"] = (
        base["roc_auc"].reindex(frame.seed).to_numpy() - frame["roc_auc"]
    )
    _table(
        frame.to_dict("records"),
        {
            "roc_auc": "AUROC",
            "dpd": "DPD matched",
            "dfpr": "DFPR matched",
            "AUROC cost": "AUROC cost",
            "dpd ratio": "DPD x",
            "dfpr ratio": "DFPR x",
            "seconds ratio": "time x",
        },
        f"Raw Adult, 5 clients, White/non-White x gender, {max_iter} trees, "
        f"federated, {seeds} seeds: mean (sd); ratios to 'none'",
    )
    ten = adult(binary_race=False)
    rows = []
    for seed in range(seeds):
        for name, params in {
            "none": {},
            "demographic parity": {"constraints": "demographic_parity"},
            "FPR parity": {"constraints": "false_positive_rate_parity"},
        }.items():
            model, _ = _fit(_trees(max_iter, seed, **params), ten["train"], seed)
            rows.append({"setup": name, **_report(model, ten["test"], prevalence)})
    _table(
        rows,
        {"roc_auc": "AUROC", "dpd": "DPD matched", "dfpr": "DFPR matched"},
        "The same with 10 race x gender groups, at the defaults",
    )


def part_flower(max_iter=20):
    from skfedida.flower import make_client_app, make_server_app, run_in_process

    data = adult()["train"]
    X, y, clients, S = data

    ids = np.unique(clients)

    def load(context):
        rows = clients == ids[context.node_config["partition-id"]]
        return {
            "X": X[rows].reset_index(drop=True),
            "y": y[rows],
            "sensitive_features": S[rows].reset_index(drop=True),
        }

    print(f"\nOn Flower (run_in_process), {max_iter} trees, one run each:\n")
    print("| setup | in-process s | Flower s | equal to the last bit |")
    print("|---|---:|---:|---|")
    times = {}
    for name, params in {
        "none": {},
        "FPR parity": {"constraints": "false_positive_rate_parity"},
    }.items():
        federation = FederatedEstimator(_trees(max_iter, 0, **params), random_state=0)
        ours, in_process = _fit(federation.estimator, data, 0)

        def on_flower(federation=federation):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return run_in_process(
                    make_server_app(federation),
                    make_client_app(federation, load),
                    num_partitions=5,
                )

        timing = timed(on_flower, repeat=1)
        theirs, on_flower = timing.result, timing.median
        same = np.array_equal(ours.predict_proba(X), theirs.predict_proba(X))
        times[name] = (in_process, on_flower)
        print(f"| {name} | {in_process:.2f} | {on_flower:.2f} | {same} |")
    print(
        "\nconstrained / unconstrained: in-process "
        f"{times['FPR parity'][0] / times['none'][0]:.2f}x, on Flower "
        f"{times['FPR parity'][1] / times['none'][1]:.2f}x"
    )


def part_levers(seeds):
    from operating_point import roc_like, synthetic

    for label, load in (("ROC-like data", roc_like), ("synthetic", synthetic)):
        rows = []
        for seed in range(seeds):
            (X, y, clients, S), test = load(seed)
            prevalence = float(np.mean(y))
            for name, params in {
                "federated trees": {},
                "+ penalty (fairness=1)": {"fairness": 1.0},
                "+ demographic parity": {"constraints": "demographic_parity"},
                "+ FPR parity": {"constraints": "false_positive_rate_parity"},
            }.items():
                model, _ = _fit(
                    FairHistGradientBoostingClassifier(random_state=seed, **params),
                    (X, y, clients, S),
                    seed,
                )
                rows.append(
                    {
                        "setup": name,
                        "seed": seed,
                        **_report(model, test, prevalence),
                    }
                )
        _table(
            rows,
            {"roc_auc": "AUROC", "dpd": "DPD matched", "dfpr": "DFPR matched"},
            f"{label}, federated trees at the defaults, {seeds} seeds",
        )


def part_linear(seeds):
    from sklearn.compose import make_column_transformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from skfedida.linear_model import FairPenaltyLogisticRegression
    from skfedida.neural_network import FairMLPClassifier

    data = adult()
    X, y, clients, S = data["train"]
    categorical = list(X.select_dtypes("category").columns)
    encoder = make_column_transformer(
        (OneHotEncoder(handle_unknown="ignore", sparse_output=False), categorical),
        remainder=StandardScaler(),
    ).fit(X)
    train = (encoder.transform(X), y, clients, S)
    Xt, yt, ct, St = data["test"]
    test = (encoder.transform(Xt), yt, ct, St)
    prevalence = float(np.mean(y))
    rows = []
    for seed in range(seeds):
        for model_name, make in (
            ("logistic", lambda **p: FairPenaltyLogisticRegression(fairness=0, **p)),
            (
                "network",
                lambda **p: FairMLPClassifier(
                    fairness=0, hidden_layer_sizes=(32,), learning_rate=0.05, **p
                ),
            ),
        ):
            for name, params in {
                "none": {},
                "FPR parity": {"constraints": "false_positive_rate_parity"},
                "demographic parity": {"constraints": "demographic_parity"},
            }.items():
                model, seconds = _fit(
                    FederatedEstimator(
                        make(random_state=seed, **params),
                        n_rounds=20,
                        local_epochs=2,
                    ),
                    train,
                    seed,
                )
                rows.append(
                    {
                        "setup": f"{model_name}, {name}",
                        "seconds": seconds,
                        **_report(model, test, prevalence),
                    }
                )
    _table(
        rows,
        {
            "roc_auc": "AUROC",
            "dpd": "DPD matched",
            "dfpr": "DFPR matched",
            "seconds": "seconds",
        },
        f"Adult (one-hot, scaled), FedAvg 20 rounds x 2 epochs, {seeds} seeds",
    )


def part_fairgbm(seeds):
    try:
        from fairgbm import FairGBMClassifier
    except ImportError:
        print(
            "\nFairGBM: skipped, the fairgbm package is not installed here "
            "(pip install fairgbm builds it from source with CMake)."
        )
        return
    data = adult()
    X, y, _, S = data["train"]
    groups = pd.factorize(pd.MultiIndex.from_frame(S))[0]
    prevalence = float(np.mean(y))
    rows = []
    for name, params in {
        "FairGBM, unconstrained": {"constraint_type": "None"},
        "FairGBM, FPR": {"constraint_type": "FPR"},
    }.items():
        model = FairGBMClassifier(n_estimators=100, **params)
        model.fit(X, y, constraint_group=groups)
        rows.append({"setup": name, **_report(model, data["test"], prevalence)})
    _table(
        rows,
        {"roc_auc": "AUROC", "dpd": "DPD matched", "dfpr": "DFPR matched"},
        "FairGBM on the pooled rows, 100 trees",
    )
    from operating_point import roc_like, synthetic

    for label, load in (("ROC-like data", roc_like), ("synthetic", synthetic)):
        rows = []
        for seed in range(seeds):
            (X, y, _, S), test = load(seed)
            groups = pd.factorize(pd.MultiIndex.from_frame(pd.DataFrame(S)))[0]
            for name, params in {
                "FairGBM, unconstrained": {"constraint_type": "None"},
                "FairGBM, FPR (its defaults)": {"constraint_type": "FPR"},
            }.items():
                model = FairGBMClassifier(random_state=seed, **params)
                model.fit(X, y, constraint_group=groups)
                rows.append({"setup": name, **_report(model, test, float(np.mean(y)))})
        _table(
            rows,
            {"roc_auc": "AUROC", "dpd": "DPD matched", "dfpr": "DFPR matched"},
            f"{label}, FairGBM on the pooled rows, {seeds} seeds",
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument(
        "--parts", default="adult,flower,levers,linear,fairgbm", help="comma list"
    )
    args = parser.parse_args()
    parts = args.parts.split(",")
    print(f"{header(1)}; seeds {args.seeds}")
    if "adult" in parts:
        part_adult(args.seeds, args.max_iter)
    if "flower" in parts:
        part_flower()
    if "levers" in parts:
        part_levers(args.seeds)
    if "linear" in parts:
        part_linear(args.seeds)
    if "fairgbm" in parts:
        part_fairgbm(args.seeds)


if __name__ == "__main__":
    main()
