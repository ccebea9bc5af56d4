"""Federated group thresholds against FedAvg and FedIDA, at a matched selection rate.

Run: ``python benchmarks/postprocessing.py [--seeds 3]``

Adult (5 clients), race White/non-White x gender and race x gender (10
groups). FedAvg and ``make_fedida()`` are trained on the training rows
(paper settings, 10 rounds x 5 local epochs); FedAvg and FedIDA are judged at
the matched threshold (the federation selects its training prevalence, found
from the clients' summed histograms). ``FederatedThresholdOptimizer`` takes
the fitted FedAvg (``prefit=True``) and finds demographic-parity thresholds
per group on the clients' validation rows, at the same overall selection
rate (``selection_rate=`` the training prevalence): one set for the
federation, or one per client (``per_client=True``); and one set from the
clients' training and validation rows together (thresholds estimated from
4 times the rows). Everything is measured
on the test rows: the mean over clients and seeds of accuracy, selection
rate, DPD and DFPR of the decisions (groups with >= 30 test rows), and AUROC
and Brier of the model's probabilities (the thresholds do not change them).
"""

import argparse
import warnings

import numpy as np
import pandas as pd
from _timing import Stopwatch

from skfedida.datasets import load_adult
from skfedida.exceptions import OperatingPointWarning
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import demographic_parity_difference
from skfedida.model_selection import make_fedida
from skfedida.postprocessing import FederatedThresholdOptimizer

METRICS = ("accuracy", "selection_rate", "dpd", "dfpr", "roc_auc", "brier")


def binarise_race(S):
    S = S.copy()
    S["race"] = np.where(S["race"] == "White", "White", "non-White")
    return S


def split(name, coding):
    data = load_adult(name)
    S = binarise_race(data.sensitive) if coding == "binary" else data.sensitive
    return data.data, data.target.to_numpy(), data.clients.to_numpy(), S


def report(model, test, **kwargs):
    X, y, clients, S = test
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OperatingPointWarning)
        result = evaluate_clients(
            model,
            X,
            y,
            clients=clients,
            sensitive_features=S,
            metrics=METRICS,
            min_group_size=30,
            n_bootstrap=0,
            **kwargs,
        )
    return result.summary["mean"]


def expected_and_floor(post, test, rate, seed):
    """Per-client mean DPD of the decisions' expected rates, and the noise floor.

    The floor: the DPD of decisions drawn at random at the overall rate,
    independently of everything (expected DPD 0), measured as the decisions
    are: what sampling noise in groups of >= 30 test rows alone gives.
    """
    X, y, clients, S = test
    probability = post._positive_probability(X, S, clients)
    rng = np.random.default_rng(seed)
    coin = (rng.random(y.shape[0]) < rate).astype(int)
    expected, floor = [], []
    for client in np.unique(clients):
        rows = clients == client
        S_k = S[rows].reset_index(drop=True)
        expected.append(
            demographic_parity_difference(
                y[rows],
                probability[rows],
                sensitive_features=S_k,
                soft=True,
                min_group_size=30,
            )
        )
        floor.append(
            demographic_parity_difference(
                y[rows], coin[rows], sensitive_features=S_k, min_group_size=30
            )
        )
    return float(np.mean(expected)), float(np.mean(floor))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    stopwatch = Stopwatch()
    for coding, title in (
        ("binary", "race White/non-White x gender"),
        ("all", "race x gender"),
    ):
        train, val, test = (split(name, coding) for name in ("train", "val", "test"))
        rows, extra = {}, {}
        for seed in range(args.seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fedavg = FederatedEstimator(
                    FairPenaltyLogisticRegression(fairness=0.0), random_state=seed
                ).fit(train[0], train[1], clients=train[2], sensitive_features=train[3])
                fedida = make_fedida(random_state=seed).fit(
                    train[0], train[1], clients=train[2], sensitive_features=train[3]
                )
            prevalence = float(fedavg.class_prior_[1])
            results = {
                "FedAvg, matched threshold": report(
                    fedavg, test, threshold="prevalence"
                ),
                "make_fedida(), matched threshold": report(
                    fedida, test, threshold="prevalence"
                ),
            }
            for per_client in (False, True):
                post = FederatedThresholdOptimizer(
                    fedavg,
                    prefit=True,
                    selection_rate=prevalence,
                    per_client=per_client,
                    random_state=seed,
                ).fit(val[0], val[1], clients=val[2], sensitive_features=val[3])
                name = "FedAvg + DP thresholds" + (", per client" if per_client else "")
                results[name] = report(post, test)
                expected, floor = expected_and_floor(post, test, prevalence, seed)
                extra.setdefault(name, []).append(expected)
                extra.setdefault("floor", []).append(floor)
            both = [
                pd.concat([a, b], ignore_index=True)
                if hasattr(a, "iloc")
                else np.concatenate([a, b])
                for a, b in zip(train, val, strict=True)
            ]
            post = FederatedThresholdOptimizer(
                fedavg, prefit=True, selection_rate=prevalence, random_state=seed
            ).fit(both[0], both[1], clients=both[2], sensitive_features=both[3])
            results["FedAvg + DP thresholds, from training + validation rows"] = report(
                post, test
            )
            for name, values in results.items():
                rows.setdefault(name, []).append(values)
        print(f"\nAdult, {title}; mean over 5 clients and {args.seeds} seeds\n")
        print("| setup | accuracy | selection rate | DPD | DFPR | AUROC | Brier |")
        print("|---|---|---|---|---|---|---|")
        baseline = None
        for name, values in rows.items():
            mean = pd.concat(values, axis=1).mean(axis=1)
            baseline = mean if baseline is None else baseline
            print(
                f"| {name} | {mean['accuracy']:.3f} | {mean['selection_rate']:.3f} | "
                f"{mean['dpd']:.3f} | {mean['dfpr']:.3f} | {mean['roc_auc']:.3f} | "
                f"{mean['brier']:.3f} |"
            )
        costs = ", ".join(
            f"{name} {baseline['accuracy'] - accuracy:+.3f}"
            for name, values in list(rows.items())[1:]
            for accuracy in [np.mean([v["accuracy"] for v in values])]
        )
        print(f"\nAccuracy cost against FedAvg at its matched threshold: {costs}")
        for name in ("FedAvg + DP thresholds", "FedAvg + DP thresholds, per client"):
            print(f"DPD of the expected decisions, {name}: {np.mean(extra[name]):.3f}")
        print(
            "Noise floor (decisions drawn at random at the same rate, measured "
            f"the same way): DPD {np.mean(extra['floor']):.3f}"
        )
    print(f"\n{stopwatch}")


if __name__ == "__main__":
    main()
