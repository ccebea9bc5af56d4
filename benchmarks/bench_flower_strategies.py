"""Flower's own strategies as the aggregation: their cost, and what they give.

Run: ``python benchmarks/bench_flower_strategies.py [--repeat 3]``

The shipped Adult training rows (5 clients), the logistic model and a
16-unit network, 10 rounds x 2 local epochs, one job: FedAvg
(``aggregation="mean"``, skfedida's own arithmetic) against Flower's
``FedAvg``, ``FedAdam``, ``FedYogi``, ``FedAvgM`` and ``FedProx`` given as
``aggregation=``. Each of those builds Flower messages every round (one
ArrayRecord per client) and runs the strategy's own ``configure_train`` and
``aggregate_train``; FedProx also adds its proximal term to every step of
the clients' compiled loops. The table gives each setup's fit time, its
ratio to ``"mean"`` in the same run, and the test AUROC of its global model
(a sanity check that the server optimisers train: their step sizes are
Flower's defaults, not tuned here).
"""

import argparse
import warnings

from _timing import header, timed
from flwr.serverapp.strategy import FedAdam, FedAvg, FedAvgM, FedProx, FedYogi
from sklearn.metrics import roc_auc_score

from skfedida.datasets import load_adult
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier

AGGREGATIONS = {
    '"mean"': lambda: "mean",
    "FedAvg()": FedAvg,
    "FedAdam(eta=0.01)": lambda: FedAdam(eta=0.01),
    "FedYogi(eta=0.01)": lambda: FedYogi(eta=0.01),
    "FedAvgM(server_momentum=0.5)": lambda: FedAvgM(server_momentum=0.5),
    "FedProx(proximal_mu=0.1)": lambda: FedProx(proximal_mu=0.1),
}
MODELS = {
    "logistic": lambda: FairPenaltyLogisticRegression(fairness=0.0),
    "MLP (16)": lambda: FairMLPClassifier(hidden_layer_sizes=(16,)),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    train, test = load_adult("train"), load_adult("test")
    print(f"Adult, 5 clients, 10 rounds x 2 epochs, one job; {header(args.repeat)}\n")
    print("| model | aggregation | fit time (s) | x mean | test AUROC |")
    print("|---|---|---:|---:|---:|")
    for model_name, model in MODELS.items():
        base = None
        for name, aggregation in AGGREGATIONS.items():

            def fit(model=model, aggregation=aggregation):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return FederatedEstimator(
                        model(),
                        aggregation=aggregation(),
                        n_rounds=10,
                        local_epochs=2,
                        random_state=0,
                    ).fit(
                        train.data,
                        train.target,
                        clients=train.clients.to_numpy(),
                        sensitive_features=train.sensitive,
                    )

            fit()  # warm-up
            timing = timed(fit, args.repeat)
            base = timing.median if base is None else base
            auroc = roc_auc_score(
                test.target, timing.result.predict_proba(test.data)[:, 1]
            )
            print(
                f"| {model_name} | {name} | {timing} | "
                f"{timing.median / base:.2f} | {auroc:.3f} |"
            )


if __name__ == "__main__":
    main()
