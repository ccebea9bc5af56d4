"""FairFed and q-FedAvg against the weighted mean, with FedAvg and make_fedida().

Run: ``python benchmarks/fair_aggregation.py [--seeds 3]``

Adult (5 clients, race White/non-White x gender) and the ROC-like data
(4 clients; 20% of each client's rows held out for testing), logistic model,
10 rounds x 5 local epochs. FedAvg and ``make_fedida()`` with the default
n_k-weighted mean, each with ``FairFed(beta)`` for beta = 0.2 and 1
(fairness-aware weights, Ezzeldin et al. 2023, on the demographic-parity
gap), and each with ``QFedAvg(q)`` for q = 1 and 5 (weights ``loss_k ** q``:
performance parity across clients, Li et al. 2020). Prints,
mean over seeds: the mean and the lowest client AUROC and the spread (sd)
of AUROC across clients, the Brier score, the selection rate at 0.5, the
rate the matched operating point selects (exactly the training prevalence),
DPD and DFPR at that matched selection rate (groups with >= 30 test rows),
and the fit time: the median (and min) of the seeds' fits, with the core
count and load.
"""

import argparse
import statistics
import sys
import warnings
from pathlib import Path

import pandas as pd
from _timing import Stopwatch, header, timed

from skfedida.exceptions import OperatingPointWarning
from skfedida.federated import FairFed, FederatedEstimator, QFedAvg, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.model_selection import make_fedida

sys.path.insert(0, str(Path(__file__).parent))
from operating_point import adult, roc_like


def setups():
    def fedavg(seed, aggregation="mean"):
        return FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.0),
            aggregation=aggregation,
            random_state=seed,
        )

    def fedida(seed, aggregation="mean"):
        return make_fedida(random_state=seed).set_params(aggregation=aggregation)

    out = {"FedAvg": fedavg, "make_fedida()": fedida}
    for beta in (0.2, 1.0):
        aggregation = FairFed(beta=beta)
        out[f"FedAvg, FairFed beta={beta:g}"] = lambda s, a=aggregation: fedavg(s, a)
        out[f"make_fedida(), FairFed beta={beta:g}"] = lambda s, a=aggregation: fedida(
            s, a
        )
    for q in (1.0, 5.0):
        aggregation = QFedAvg(q=q, client_learning_rate=0.1)
        out[f"FedAvg, q-FedAvg q={q:g}"] = lambda s, a=aggregation: fedavg(s, a)
        out[f"make_fedida(), q-FedAvg q={q:g}"] = lambda s, a=aggregation: fedida(s, a)
    return out


def measure(model, test):
    X, y, clients, S = test
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OperatingPointWarning)
        half = evaluate_clients(
            model,
            X,
            y,
            clients=clients,
            sensitive_features=S,
            metrics=("roc_auc", "brier", "selection_rate"),
            n_bootstrap=0,
        )
        matched = evaluate_clients(
            model,
            X,
            y,
            clients=clients,
            sensitive_features=S,
            metrics=("dpd", "dfpr"),
            threshold="prevalence",
            min_group_size=30,
            n_bootstrap=0,
        )
    auroc = half.per_client["roc_auc"]
    return {
        "AUROC mean": auroc.mean(),
        "AUROC lowest": auroc.min(),
        "AUROC sd": auroc.std(ddof=1),
        "Brier": half.summary.loc["brier", "mean"],
        "rate@0.5": half.summary.loc["selection_rate", "mean"],
        "rate matched": matched.achieved_rate,
        "DPD matched": matched.summary.loc["dpd", "mean"],
        "DFPR matched": matched.summary.loc["dfpr", "mean"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    stopwatch = Stopwatch()
    datasets = {
        "Adult, race W/non-W x gender": lambda seed: adult(binary=True),
        "ROC-like data": roc_like,
    }
    for title, load in datasets.items():
        rows, times = {}, {}
        for seed in range(args.seeds):
            train, test = load(seed)
            for name, make in setups().items():

                def fit(make=make, seed=seed, train=train):
                    X, y, clients, S = train
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        return make(seed).fit(
                            X, y, clients=clients, sensitive_features=S
                        )

                fitted = timed(fit, repeat=1)
                model, seconds = fitted.result, fitted.median
                rows.setdefault(name, []).append(measure(model, test))
                times.setdefault(name, []).append(seconds)
        table = pd.DataFrame(
            {name: pd.DataFrame(values).mean() for name, values in rows.items()}
        ).T.round(3)
        table["time (s)"] = [
            f"{statistics.median(t):.2f} ({min(t):.2f})" for t in times.values()
        ]
        print(f"\n{title}, mean over {args.seeds} seeds")
        print(header(args.seeds) + " (one fit per seed)\n")
        print(table.to_string())
    print(f"\n{stopwatch}")


if __name__ == "__main__":
    main()
