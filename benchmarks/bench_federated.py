"""FedIDA and FedAvg on the shipped Adult data: wall time, 1 and 2 jobs.

Run: ``python benchmarks/bench_federated.py [--repeat 3]``

The paper's settings: 5 clients, 10 rounds, 5 local epochs, learning rate
0.1, batch 128; FedIDA = fairness penalty (lambda = 1) + FairnessAwareROSE on
every minibatch (Algorithm 2). Logistic model and the FCNN (one hidden layer of
100 units). Prints wall time per configuration and n_jobs, and, so the runs
are comparable, the test AUROC and Brier score, and the mean over clients of
the selection rate and DPD (race x gender) at 0.5 and of DPD and DFPR at the
matched selection rate (the operating point at which the test selection rate
equals the training prevalence exactly, rows tied at its threshold selected
with the probability that makes it so; "rate matched" is the share selected).
Wall times are the median (and min) of ``--repeat`` fits, printed with the
core count and load; with two jobs the first fit of the process also starts
joblib's workers, which the median leaves out when ``--repeat`` is 3 or more.
"""

import argparse
import warnings

from _timing import header, timed

from skfedida.datasets import load_adult
from skfedida.exceptions import OperatingPointWarning
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE


def quality(model, test):
    """Test AUROC, Brier, and per-client means of rate and DPD, at 0.5 and matched.

    "Matched" is the threshold that makes the federation's test selection
    rate equal its training prevalence (found from the clients' summed score
    histograms), so models that shift or squash their scores are compared at
    the same share of positive decisions.
    """
    kwargs = dict(
        clients=test.clients.to_numpy(),
        sensitive_features=test.sensitive,
        n_bootstrap=0,
    )
    at_half = evaluate_clients(
        model,
        test.data,
        test.target,
        metrics=("roc_auc", "brier", "selection_rate", "dpd"),
        **kwargs,
    ).summary["mean"]
    with warnings.catch_warnings():
        # The achieved rate is printed: a missed target shows in the table.
        warnings.simplefilter("ignore", OperatingPointWarning)
        matched = evaluate_clients(
            model,
            test.data,
            test.target,
            metrics=("dpd", "dfpr"),
            threshold="prevalence",
            **kwargs,
        )
    return (
        at_half["roc_auc"],
        at_half["brier"],
        at_half["selection_rate"],
        at_half["dpd"],
        matched.achieved_rate,
        matched.summary.loc["dpd", "mean"],
        matched.summary.loc["dfpr", "mean"],
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
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
        "local epochs, batch 128, lr 0.1"
    )
    print(header(args.repeat) + "\n")
    print(
        "| setup | model | n_jobs | wall time (s) | AUROC | Brier | rate@0.5 | "
        "DPD@0.5 | rate matched | DPD matched | DFPR matched |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, model_name, estimator, sampler in configurations:
        for n_jobs in (1, 2):

            def fit(estimator=estimator, sampler=sampler, n_jobs=n_jobs):
                federation = FederatedEstimator(
                    estimator,
                    strategy="fedavg",
                    n_rounds=10,
                    local_epochs=5,
                    sampler=sampler,
                    # the paper's FedIDA, as the results page times it
                    prior_correction=None,
                    batch_size=128,
                    n_jobs=n_jobs,
                    random_state=0,
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return federation.fit(
                        train.data,
                        train.target,
                        clients=train.clients,
                        sensitive_features=train.sensitive,
                    )

            seconds = timed(fit, args.repeat)
            figures = quality(seconds.result, test)
            figures = " | ".join(f"{value:.3f}" for value in figures)
            print(f"| {name} | {model_name} | {n_jobs} | {seconds} | {figures} |")


if __name__ == "__main__":
    main()
