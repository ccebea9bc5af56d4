"""FedIDA and FedAvg on the shipped Adult data: wall time, 1 and 2 jobs.

Run: ``python benchmarks/bench_federated.py``

The paper's settings: 5 clients, 10 rounds, 5 local epochs, learning rate
0.1, batch 128; FedIDA = fairness penalty (lambda = 1) + FairnessAwareROSE on
every minibatch (Algorithm 2). Logistic model and the FCNN (one hidden layer of
100 units). Prints wall time per configuration and n_jobs, and the test AUROC
and mean per-client DPD (race x gender) so the runs are comparable.
"""

import time
import warnings

import numpy as np
from sklearn.metrics import roc_auc_score

from skfedida.datasets import load_adult
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import demographic_parity_difference
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE


def mean_client_dpd(model, test):
    pred = model.predict(test.data)
    clients = test.clients.to_numpy()
    return np.mean(
        [
            demographic_parity_difference(
                test.target[clients == c],
                pred[clients == c],
                sensitive_features=test.sensitive[clients == c],
            )
            for c in np.unique(clients)
        ]
    )


def main():
    train, test = load_adult("train"), load_adult("test")
    configurations = [
        ("FedAvg", "logistic", FairPenaltyLogisticRegression(fairness=0), None),
        (
            "FedIDA",
            "logistic",
            FairPenaltyLogisticRegression(fairness=1.0),
            FairnessAwareROSE(),
        ),
        ("FedAvg", "FCNN", FairMLPClassifier(fairness=0), None),
        ("FedIDA", "FCNN", FairMLPClassifier(fairness=1.0), FairnessAwareROSE()),
    ]
    print(
        f"Adult train: {len(train.target):,} rows, 5 clients; 10 rounds x 5 "
        "local epochs, batch 128, lr 0.1\n"
    )
    print("| setup | model | n_jobs | wall time (s) | test AUROC | mean client DPD |")
    print("|---|---|---:|---:|---:|---:|")
    for name, model_name, estimator, sampler in configurations:
        for n_jobs in (1, 2):
            federation = FederatedEstimator(
                estimator,
                strategy="fedavg",
                n_rounds=10,
                local_epochs=5,
                sampler=sampler,
                prior_correction=None,  # the paper's FedIDA, as the README times it
                batch_size=128,
                n_jobs=n_jobs,
                random_state=0,
            )
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                federation.fit(
                    train.data,
                    train.target,
                    clients=train.clients,
                    sensitive_features=train.sensitive,
                )
            seconds = time.perf_counter() - start
            auc = roc_auc_score(test.target, federation.predict_proba(test.data)[:, 1])
            print(
                f"| {name} | {model_name} | {n_jobs} | {seconds:.1f} | "
                f"{auc:.3f} | {mean_client_dpd(federation, test):.3f} |"
            )


if __name__ == "__main__":
    main()
