"""Reproduce the FedIDA paper's Tables 2-4 on the shipped Adult data and ROC-like data.

Run: ``python benchmarks/reproduce_paper.py OUTDIR [--seeds 3] [--quick]``

For Adult (shipped; race binarised White / non-White as the paper's appendix
says, x gender: 4 groups) and the ROC-like preset (Table S2's composition,
synthetic features; 80/20 train/test split within each client), for the
logistic model and the FCNN, the paper's six setups: Central, Local, FedAvg,
PFedAvg, FedIDA(FedAvg), FedIDA(PFedAvg), with the paper's training settings
(10 rounds x 5 local epochs, lr 0.1, batch 128). Metrics as the paper defines
them (§3.1): AUROC; DPD, DPR and DFPR on predicted probabilities
(E[f(A) | group]); DPPV on predicted labels (E[Y | f(A) = 1, group]); per
client on the test rows, then mean (sd) across clients, averaged over seeds,
with the spread across seeds. The paper's numbers are printed alongside.

Also: the ablation of Table 4 (penalty only, oversampling only, both, at
several lambda), and an empirical look at Theorem 2 (the bootstrap spread of
each fairness metric on the test rows, FedIDA vs FedAvg).

lambda and gamma are fixed (``--fairness``, ``--alpha``) unless ``--select``
chooses them per dataset and model with the paper's procedure
(:func:`select_lambda_gamma`), which is then recorded in the output.

Writes ``OUTDIR/results.md`` and, per dataset and model, the paper's
Figures S1-S4 (per-client metrics of the six setups with 95% bootstrap
intervals, seed 0) as ``OUTDIR/clients_<dataset>_<model>.png``.
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from skfedida.datasets import load_adult, make_roc_like
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

sys.path.insert(0, str(Path(__file__).parent))
from _stats import direction
from _timing import Stopwatch

METRICS = ("roc_auc", "soft_dpd", "soft_dpr", "soft_dfpr", "dppv")
NAMES = ("AUROC", "DPD", "DPR", "DFPR", "DPPV")
# Beside the paper's probability metrics, every table shows the decisions a
# user acts on: Brier score, selection rate at 0.5, and the disparities of the
# decisions at the matched selection rate (the training prevalence).
OPERATING = ("Brier", "rate@0.5", "DPD matched", "DFPR matched")
# FedIDA(FedAvg) against FedAvg: the change the verdicts judge.
COMPARED = ("FedIDA (FedAvg)", "FedAvg")
ROW_DRAWS = 200
SETUPS = (
    "Central",
    "Local",
    "FedAvg",
    "PFedAvg",
    "FedIDA (FedAvg)",
    "FedIDA (PFedAvg)",
)

# The paper's Tables 2 and 3: mean across clients (AUROC, DPD, DPR, DFPR, DPPV).
PAPER = {
    ("adult", "LR"): {
        "Central": (0.866, 0.295, 0.406, 0.300, 0.598),
        "Local": (0.864, 0.311, 0.403, 0.312, 0.482),
        "FedAvg": (0.867, 0.302, 0.426, 0.305, 0.491),
        "PFedAvg": (0.870, 0.300, 0.421, 0.304, 0.490),
        "FedIDA (FedAvg)": (0.833, 0.250, 0.493, 0.252, 0.407),
        "FedIDA (PFedAvg)": (0.832, 0.248, 0.496, 0.233, 0.399),
    },
    ("adult", "FCNN"): {
        "Central": (0.867, 0.315, 0.398, 0.294, 0.527),
        "Local": (0.858, 0.289, 0.427, 0.295, 0.515),
        "FedAvg": (0.863, 0.297, 0.413, 0.306, 0.523),
        "PFedAvg": (0.865, 0.294, 0.428, 0.299, 0.500),
        "FedIDA (FedAvg)": (0.839, 0.230, 0.512, 0.238, 0.410),
        "FedIDA (PFedAvg)": (0.832, 0.225, 0.505, 0.235, 0.422),
    },
    ("roc", "LR"): {
        "Central": (0.882, 0.177, 0.556, 0.184, 0.423),
        "Local": (0.877, 0.179, 0.538, 0.187, 0.446),
        "FedAvg": (0.885, 0.174, 0.581, 0.180, 0.348),
        "PFedAvg": (0.886, 0.185, 0.594, 0.186, 0.355),
        "FedIDA (FedAvg)": (0.856, 0.133, 0.741, 0.136, 0.280),
        "FedIDA (PFedAvg)": (0.855, 0.131, 0.733, 0.134, 0.279),
    },
    ("roc", "FCNN"): {
        "Central": (0.881, 0.156, 0.586, 0.112, 0.390),
        "Local": (0.872, 0.153, 0.581, 0.099, 0.455),
        "FedAvg": (0.880, 0.164, 0.577, 0.118, 0.386),
        "PFedAvg": (0.879, 0.154, 0.610, 0.113, 0.389),
        "FedIDA (FedAvg)": (0.851, 0.122, 0.654, 0.084, 0.333),
        "FedIDA (PFedAvg)": (0.849, 0.121, 0.677, 0.083, 0.318),
    },
}


def binarise_race(S):
    """White / non-White, as the paper's appendix describes its race attribute."""
    return S.assign(race=np.where(S["race"] == "White", "White", "Non-White"))


def adult_data():
    train, test = load_adult("train"), load_adult("test")
    return (
        (
            train.data,
            train.target.to_numpy(),
            train.clients.to_numpy(),
            binarise_race(train.sensitive),
        ),
        (
            test.data,
            test.target.to_numpy(),
            test.clients.to_numpy(),
            binarise_race(test.sensitive),
        ),
    )


def roc_data(seed):
    roc = make_roc_like(random_state=seed, as_frame=True)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(roc.target), dtype=bool)
    for client in np.unique(roc.clients):
        rows = np.flatnonzero(roc.clients.to_numpy() == client)
        test[rng.choice(rows, size=len(rows) // 5, replace=False)] = True

    def part(mask):
        return (
            roc.data[mask].reset_index(drop=True),
            roc.target.to_numpy()[mask],
            roc.clients.to_numpy()[mask],
            roc.sensitive[mask].reset_index(drop=True),
        )

    return part(~test), part(test)


def estimator(model, fairness, alpha):
    if model == "LR":
        return FairPenaltyLogisticRegression(fairness=fairness, alpha=alpha)
    return FairMLPClassifier(fairness=fairness, alpha=alpha)


def federation(setup, model, fairness, alpha, seed, fedida_alpha=None):
    fedida = setup.startswith("FedIDA")
    if fedida and fedida_alpha is not None:
        alpha = fedida_alpha
    strategy = {
        "Central": "central",
        "Local": "local",
        "FedAvg": "fedavg",
        "PFedAvg": "pfedavg",
        "FedIDA (FedAvg)": "fedavg",
        "FedIDA (PFedAvg)": "pfedavg",
    }[setup]
    return FederatedEstimator(
        estimator(model, fairness if fedida else 0.0, alpha),
        strategy=strategy,
        n_rounds=10,
        local_epochs=5,
        sampler=FairnessAwareROSE() if fedida else None,
        prior_correction=None,  # the paper's FedIDA trains on the resampled balance
        random_state=seed,
    )


def fit_and_evaluate(model_object, train, test, n_bootstrap=0, seed=0):
    """The paper's metrics (a report), and the operating-point means."""
    X, y, clients, S = train
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model_object.fit(X, y, clients=clients, sensitive_features=S)
    X_t, y_t, clients_t, S_t = test
    report = evaluate_clients(
        model_object,
        X_t,
        y_t,
        clients=clients_t,
        sensitive_features=S_t,
        metrics=METRICS,
        n_bootstrap=n_bootstrap,
        random_state=seed,
    )
    kwargs = dict(
        clients=clients_t, sensitive_features=S_t, min_group_size=30, n_bootstrap=0
    )
    matched = evaluate_clients(
        model_object,
        X_t,
        y_t,
        metrics=("brier", "dpd", "dfpr"),
        threshold="prevalence",
        **kwargs,
    ).summary["mean"]
    at_half = evaluate_clients(
        model_object, X_t, y_t, metrics=("selection_rate",), **kwargs
    ).summary["mean"]
    operating = np.array(
        [matched["brier"], at_half["selection_rate"], matched["dpd"], matched["dfpr"]]
    )
    return report, operating


def degenerate(rate):
    """Marks a selection rate at 0.5 below 1% or above 99%."""
    return " (degenerate)" if not 0.01 <= rate <= 0.99 else ""


def split_validation(train, seed, fraction=0.125):
    """Hold out a share of every client's training rows (70:10:20 overall)."""
    X, y, clients, S = train
    rng = np.random.default_rng(seed)
    valid = np.zeros(len(y), dtype=bool)
    for client in np.unique(clients):
        rows = np.flatnonzero(clients == client)
        valid[rng.choice(rows, size=int(len(rows) * fraction), replace=False)] = True

    def part(mask):
        return (
            X[mask].reset_index(drop=True),
            y[mask],
            clients[mask],
            S[mask].reset_index(drop=True),
        )

    return part(~valid), part(valid)


def select_lambda_gamma(dataset, model, quick):
    """The paper's §3.2 on validation rows: lambda range, then the gamma search.

    lambda: upper end of ``lambda_range`` (run with the logistic model, whose
    full-batch fit is cheap, for both models). gamma: ``CoarseToFineSearchCV``
    over [1e-4, 0.1], the fairest candidate within 0.01 AUROC of the best
    (soft DPD), scored on the clients' validation rows.
    """
    from sklearn import config_context
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import PredefinedSplit

    from skfedida.metrics import make_fairness_scorer, selection_rate
    from skfedida.model_selection import (
        CoarseToFineSearchCV,
        fairest_within,
        lambda_range,
        make_fedida,
    )

    if dataset == "adult":
        train = adult_data()[0]
        valid_adult = load_adult("val")
        sens = binarise_race(valid_adult.sensitive)
        valid = (
            valid_adult.data,
            valid_adult.target.to_numpy(),
            valid_adult.clients.to_numpy(),
            sens,
        )
    else:
        train, valid = split_validation(roc_data(0)[0], seed=0)
    lambdas = lambda_range(
        FairPenaltyLogisticRegression(),
        train[0],
        train[1],
        clients=train[2],
        sensitive_features=train[3],
        validation=valid,
        lambdas=(0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10),
    )
    fairness = lambdas.range[1]
    X = pd.concat([train[0], valid[0]], ignore_index=True)
    y = np.r_[train[1], valid[1]]
    clients = np.r_[train[2], valid[2]]
    S = pd.concat([train[3], valid[3]], ignore_index=True)
    cv = PredefinedSplit(
        np.r_[np.full(len(train[1]), -1), np.zeros(len(valid[1]), dtype=int)]
    )
    n_coarse, n_fine = (4, 2) if quick else (10, 10)
    search = CoarseToFineSearchCV(
        make_fedida(
            "logistic" if model == "LR" else "mlp",
            fairness=fairness,
            # The paper's FedIDA: its group penalty, trained on the resampled
            # balance of its Algorithm 1 (every subgroup to one size).
            penalty="group",
            sampler=FairnessAwareROSE(),
            prior_correction=None,
            random_state=0,
        ),
        "estimator__alpha",
        1e-4,
        0.1,
        n_coarse=n_coarse,
        n_fine=n_fine,
        scoring={
            "auc": "roc_auc",
            "soft_dpd": make_fairness_scorer("dpd", response_method="predict_proba"),
            # Lets the refit rule refuse a degenerate candidate.
            "selection_rate": make_scorer(selection_rate),
        },
        refit=False,
        cv=cv,
    )
    search.set_params(refit=fairest_within("auc", "soft_dpd", tolerance=0.01))
    with config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y, clients=clients, sensitive_features=S)
    return fairness, search.best_params_["estimator__alpha"], lambdas


def save_figure(reports, path, title):
    """The paper's Figures S1-S4 for one dataset and model."""
    import matplotlib

    matplotlib.use("Agg")
    from skfedida.plotting import ClientMetricsDisplay

    display = ClientMetricsDisplay(reports, metrics=METRICS).plot()
    display.figure_.set_size_inches(16, 4.2)
    display.figure_.suptitle(title, y=0.99, fontsize=10)
    display.figure_.legends[0].set_bbox_to_anchor((0.5, 0.93))
    display.figure_.tight_layout(rect=(0, 0, 1, 0.82))
    display.figure_.savefig(path, dpi=110)


def table(rows, paper=None, marks=None):
    header = "| setup | " + " | ".join(NAMES) + " |"
    lines = [header, "|---" * (len(NAMES) + 1) + "|"]
    marks = marks or {}
    for setup, (means, sds, seed_sd, covered, n_clients) in rows.items():
        cells = [
            f"{m:.3f} ({s:.3f}) ±{d:.3f}"
            + ("" if c == n_clients else f" †{c}/{n_clients}")
            for m, s, d, c in zip(means, sds, seed_sd, covered, strict=True)
        ]
        lines.append(f"| {setup}{marks.get(setup, '')} | " + " | ".join(cells) + " |")
        if paper is not None and setup in paper:
            lines.append(
                "| *paper* | " + " | ".join(f"*{v:.3f}*" for v in paper[setup]) + " |"
            )
    if any(c != n for _, _, _, cs, n in rows.values() for c in cs):
        lines.append(
            "\n† k/K: the mean covers the k of K clients where the metric is "
            "defined in every seed (DPPV needs predicted positives in a group)."
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--fairness", type=float, default=1.0)
    parser.add_argument("--alpha", type=float, default=1e-4)
    parser.add_argument("--datasets", nargs="+", default=["adult", "roc"])
    parser.add_argument("--models", nargs="+", default=["LR", "FCNN"])
    parser.add_argument(
        "--select",
        action="store_true",
        help="choose lambda and gamma by the paper's procedure",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="with --select: 4 + 2 gamma values instead of 10 + 10",
    )
    args = parser.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    out = [
        "# FedIDA paper reproduction\n\n"
        + (
            "lambda and gamma selected (below); "
            if args.select
            else f"lambda = {args.fairness}, gamma = {args.alpha} (fixed); "
        )
        + f"baselines gamma = {args.alpha}; {args.seeds} seeds; cells: mean (sd across "
        "clients, ddof=1) ± sd of that mean across seeds (ddof=1). DPD, DPR, DFPR "
        "on probabilities, DPPV on labels, as the paper's §3.1. A setup whose "
        "selection rate at 0.5 is below 1% or above 99% is marked degenerate.\n"
    ]
    stopwatch = Stopwatch()
    args.selected = {}
    for dataset in args.datasets:
        for model in args.models:
            fairness, fedida_alpha = args.fairness, None
            if args.select:
                fairness, fedida_alpha, lambdas = select_lambda_gamma(
                    dataset, model, args.quick
                )
                chosen = (
                    f"\nSelected for {dataset} / {model}: lambda = {fairness} "
                    f"(range {lambdas.range}; per-client bounds "
                    f"{[r['bound'] for r in lambdas.per_client]}), gamma = "
                    f"{fedida_alpha:.5f}\n"
                )
                print(chosen, flush=True)
                out.append(chosen)
                args.selected[(dataset, model)] = (fairness, fedida_alpha)
            per_setup = {setup: [] for setup in SETUPS}
            per_client = {setup: [] for setup in SETUPS}
            row_draws = {setup: [] for setup in COMPARED}
            operating = {setup: [] for setup in SETUPS}
            figure_reports = {}
            for seed in range(args.seeds):
                train, test = adult_data() if dataset == "adult" else roc_data(seed)
                for setup in SETUPS:
                    # Seed 0 gets bootstrap intervals, for the figure; the two
                    # compared setups get them for every seed, with the seed as
                    # the resamples' random_state, so their draws are paired
                    # resamples of the same test rows.
                    report, at_operating_point = fit_and_evaluate(
                        federation(
                            setup, model, fairness, args.alpha, seed, fedida_alpha
                        ),
                        train,
                        test,
                        n_bootstrap=ROW_DRAWS if seed == 0 or setup in COMPARED else 0,
                        # Adult's test rows are the same for every seed: the
                        # same resamples of them too (draw b is one resample
                        # for every seed); the ROC-like rows are redrawn.
                        seed=0 if dataset == "adult" else seed,
                    )
                    if setup in COMPARED:
                        n_clients = len(report.per_client)
                        row_draws[setup].append(
                            report.draws[list(METRICS)]
                            .to_numpy()
                            .reshape(n_clients, ROW_DRAWS, len(METRICS))
                        )
                    per_setup[setup].append(report.summary)
                    per_client[setup].append(report.per_client[list(METRICS)])
                    operating[setup].append(at_operating_point)
                    if seed == 0:
                        figure_reports[setup] = report
            save_figure(
                figure_reports,
                args.outdir / f"clients_{dataset}_{model}.png",
                f"{dataset} / {model}, seed 0: per-client test metrics, 95% "
                "bootstrap intervals",
            )
            rows = {}
            ddof = 1 if args.seeds > 1 else 0
            for setup, summaries in per_setup.items():
                means = np.mean([s["mean"].to_numpy() for s in summaries], axis=0)
                sds = np.mean([s["sd"].to_numpy() for s in summaries], axis=0)
                seed_sd = np.std(
                    [s["mean"].to_numpy() for s in summaries], axis=0, ddof=ddof
                )
                tables = per_client[setup]
                covered = np.min([t.notna().sum().to_numpy() for t in tables], axis=0)
                rows[setup] = (means, sds, seed_sd, covered, len(tables[0]))
            marks = {
                setup: degenerate(np.mean(operating[setup], axis=0)[1])
                for setup in SETUPS
            }
            text = table(rows, PAPER.get((dataset, model)), marks)
            paper = PAPER[(dataset, model)]
            changes = []
            for i, (name, metric) in enumerate(zip(NAMES, METRICS, strict=True)):
                differences = np.array(
                    [
                        (ida[metric] - avg[metric]).to_numpy()
                        for ida, avg in zip(
                            per_client["FedIDA (FedAvg)"],
                            per_client["FedAvg"],
                            strict=True,
                        )
                    ]
                )
                paper_change = paper["FedIDA (FedAvg)"][i] - paper["FedAvg"][i]
                paired = (
                    np.array(row_draws["FedIDA (FedAvg)"])[..., i]
                    - np.array(row_draws["FedAvg"])[..., i]
                )
                word, mean, low, high = direction(
                    differences,
                    paper_change,
                    row_draws=paired,
                    shared_rows=dataset == "adult",
                )
                changes.append((name, word, mean, low, high, paper_change))
            verdict = (
                "FedIDA(FedAvg) vs FedAvg, mean change over clients and seeds "
                "[95% interval, bootstrap over seeds, clients and paired resamples "
                "of each client's test rows"
                + (
                    ", one per client for all seeds: the same rows"
                    if dataset == "adult"
                    else ""
                )
                + "] (paper's change):\n"
                + "\n".join(
                    f"- {name}: {mean:+.3f} [{low:+.3f}, {high:+.3f}] "
                    f"(paper {paper_change:+.3f}): {word}"
                    for name, word, mean, low, high, paper_change in changes
                )
            )
            as_paper = [c[0] for c in changes if c[1] == "as in the paper"]
            opposite = [c[0] for c in changes if c[1] == "opposite to the paper"]
            unclear = [
                c[0] for c in changes if c[1] in ("no clear change", "undefined")
            ]
            verdict += (
                f"\nAs in the paper: {', '.join(as_paper) or 'none'}; opposite: "
                f"{', '.join(opposite) or 'none'}; no clear change: "
                f"{', '.join(unclear) or 'none'}."
            )
            lines = [
                "At the operating point (mean over clients and seeds; groups with "
                "< 30 test rows left out):\n",
                "| setup | AUROC | " + " | ".join(OPERATING) + " |",
                "|---" * (len(OPERATING) + 2) + "|",
            ]
            for setup in SETUPS:
                brier, rate, dpd, dfpr = np.mean(operating[setup], axis=0)
                lines.append(
                    f"| {setup} | {rows[setup][0][0]:.3f} | {brier:.3f} | "
                    f"{rate:.3f}{degenerate(rate)} | {dpd:.3f} | {dfpr:.3f} |"
                )
            base_op = np.mean(operating["FedAvg"], axis=0)
            ida_op = np.mean(operating["FedIDA (FedAvg)"], axis=0)
            change = ida_op / base_op - 1
            lines.append(
                f"\nFedIDA(FedAvg) vs FedAvg at the matched rate: DPD "
                f"{change[2]:+.0%}, DFPR {change[3]:+.0%}; "
                f"Brier x{ida_op[0] / base_op[0]:.2f}, rate@0.5 "
                f"{base_op[1]:.3f} -> {ida_op[1]:.3f}"
            )
            op_text = "\n".join(lines)
            block = f"\n## {dataset} / {model}\n\n{text}\n\n{verdict}\n\n{op_text}\n"
            print(block, flush=True)
            out.append(block)
    out.append(ablation(args))
    out.append(variance_check(args))
    out.append(f"\nTotal time: {stopwatch}\n")
    (args.outdir / "results.md").write_text("".join(out), encoding="utf-8")


def ablation(args):
    lines = [
        "\n## Ablation (paper's Table 4), logistic model, FedAvg, seed 0 "
        "(with --select: the selected gamma, and the selected lambda beside "
        "0.5, 1 and 2)\n",
        "| dataset | variant | lambda | ROSE | " + " | ".join(NAMES + OPERATING) + " |",
        "|---" * (len(NAMES) + len(OPERATING) + 4) + "|",
    ]
    for dataset in args.datasets:
        train, test = adult_data() if dataset == "adult" else roc_data(0)
        # With --select: the selected gamma, and the selected lambda beside
        # the paper's grid.
        selected_lambda, alpha = args.selected.get((dataset, "LR"), (None, args.alpha))
        grid = sorted({0.5, 1.0, 2.0} | ({selected_lambda} - {None}))
        variants = [("baseline", 0.0, False)]
        variants += [("penalty only", lam, False) for lam in grid]
        variants += [("oversampling only", 0.0, True)]
        variants += [("both", lam, True) for lam in grid]
        for name, lam, rose in variants:
            model = FederatedEstimator(
                FairPenaltyLogisticRegression(fairness=lam, alpha=alpha),
                n_rounds=10,
                local_epochs=5,
                sampler=FairnessAwareROSE() if rose else None,
                prior_correction=None,
                random_state=0,
            )
            report, (brier, rate, dpd, dfpr) = fit_and_evaluate(model, train, test)
            means = report.summary["mean"].to_numpy()
            lines.append(
                f"| {dataset} | {name} | {lam} | {'yes' if rose else ''} | "
                + " | ".join(f"{v:.3f}" for v in means)
                + f" | {brier:.3f} | {rate:.3f}{degenerate(rate)} | {dpd:.3f} | "
                f"{dfpr:.3f} |"
            )
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


def variance_check(args):
    """Theorem 2, empirically: bootstrap spread of the metrics on test rows."""
    lines = [
        "\n## Theorem 2: bootstrap 95% interval width, logistic model, seed 0 "
        "(with --select: the selected lambda and gamma)\n",
        "Mean over clients of (high - low) of 200 bootstrap resamples of "
        "each client's test rows; narrower = less variance.\n",
        "| dataset | setup | " + " | ".join(NAMES[1:]) + " | rate@0.5 |",
        "|---" * (len(NAMES) + 2) + "|",
    ]
    for dataset in args.datasets:
        train, test = adult_data() if dataset == "adult" else roc_data(0)
        fairness, fedida_alpha = args.selected.get(
            (dataset, "LR"), (args.fairness, None)
        )
        for setup in ("FedAvg", "FedIDA (FedAvg)"):
            report, (_, rate, _, _) = fit_and_evaluate(
                federation(setup, "LR", fairness, args.alpha, 0, fedida_alpha),
                train,
                test,
                n_bootstrap=200,
                seed=0,
            )
            table_ = report.per_client
            widths = [
                float((table_[f"{m}_high"] - table_[f"{m}_low"]).mean())
                for m in METRICS[1:]
            ]
            lines.append(
                f"| {dataset} | {setup} | "
                + " | ".join(f"{w:.3f}" for w in widths)
                + f" | {rate:.3f}{degenerate(rate)} |"
            )
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    return text


if __name__ == "__main__":
    pd.set_option("display.width", 200)
    main()
