"""The paper's two-stage gamma search for FedIDA(FedAvg) on Adult: wall time.

Run: ``python benchmarks/bench_gamma_search.py [--resample batch client] [--repeat 3]``

FedIDA(FedAvg), logistic model, the paper's settings (10 rounds x 5 local
epochs, lr 0.1, batch 128, lambda = 0.2, the upper end of lambda_range on
Adult); gamma (``estimator__alpha``) over [1e-4, 0.1] with 10 coarse + 10 fine
values, scored on the clients' validation rows (one predefined split), then
refit on training + validation rows. Prints the wall time with 1 and 2 jobs
for each resampling mode (the median and min of ``--repeat`` searches, with
the core count and load), the number of candidates and the chosen gamma.
"""

import argparse
import warnings

import numpy as np
import pandas as pd
from _timing import header, timed
from sklearn import config_context
from sklearn.metrics import make_scorer
from sklearn.model_selection import PredefinedSplit

from skfedida.datasets import load_adult
from skfedida.metrics import make_fairness_scorer, selection_rate
from skfedida.model_selection import CoarseToFineSearchCV, fairest_within, make_fedida


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resample", nargs="+", default=["batch", "client"])
    parser.add_argument("--n-jobs", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    train, val = load_adult("train"), load_adult("val")
    X = pd.concat([train.data, val.data], ignore_index=True)
    y = pd.concat([train.target, val.target], ignore_index=True)
    clients = pd.concat([train.clients, val.clients], ignore_index=True)
    S = pd.concat([train.sensitive, val.sensitive], ignore_index=True)
    cv = PredefinedSplit(
        np.r_[np.full(len(train.target), -1), np.zeros(len(val.target), dtype=int)]
    )
    print(header(args.repeat) + "\n")
    print("| resample | n_jobs | candidates | wall time (s) | chosen gamma |")
    print("|---|---:|---:|---:|---:|")
    for resample in args.resample:
        for n_jobs in args.n_jobs:

            def search(resample=resample, n_jobs=n_jobs):
                search = CoarseToFineSearchCV(
                    make_fedida(fairness=0.2, resample=resample, random_state=0),
                    "estimator__alpha",
                    1e-4,
                    0.1,
                    n_coarse=10,
                    n_fine=10,
                    scoring={
                        "auc": "roc_auc",
                        "soft_dpd": make_fairness_scorer(
                            "dpd", response_method="predict_proba"
                        ),
                        "selection_rate": make_scorer(selection_rate),
                    },
                    refit=fairest_within("auc", "soft_dpd", tolerance=0.01),
                    cv=cv,
                    n_jobs=n_jobs,
                )
                with (
                    config_context(enable_metadata_routing=True),
                    warnings.catch_warnings(),
                ):
                    warnings.simplefilter("ignore")
                    return search.fit(X, y, clients=clients, sensitive_features=S)

            seconds = timed(search, args.repeat)
            fitted = seconds.result
            print(
                f"| {resample} | {n_jobs} | {len(fitted.cv_results_['params'])} | "
                f"{seconds} | {fitted.best_params_['estimator__alpha']:.4f} |"
            )


if __name__ == "__main__":
    main()
