"""The Flower backend's own cost: the same FedIDA fit in-process and through Flower.

Run: ``python benchmarks/bench_flower.py [--repeat 3]``

FedIDA (logistic, lambda = 1, FairnessAwareROSE per minibatch) with the paper's
settings on the shipped Adult training data (5 clients, 10 rounds x 5 local
epochs), as ``examples/flower_app`` defines it: ``FederatedEstimator.fit``
against the real ClientApp and ServerApp driven by ``run_in_process``
(messages deep-copied, every client's estimator pickled into its node state
between rounds, an evaluation on the test rows after each training round).
Both give the same model to the last bit, which the script checks. The
in-process fit evaluates nothing there, so a second pair has both evaluate:
``validation_fraction=0.2`` and no test rows, each client scoring its held-out
rows after every round in both paths. Each node loads and checks its rows
once per run (``make_client_app`` keeps them for the run). A
deployment adds a process per message and Flower's 3-second polling (about
25 s per round for these 5 clients on 2 cores: doc/flower.rst). Times are
the median (and min) of ``--repeat`` runs of each path, printed with the core
count and load.
"""

import argparse
import sys
import warnings
from pathlib import Path

from _timing import header, timed

from skfedida.datasets import load_adult
from skfedida.federated import FederatedEstimator, get_parameters
from skfedida.flower import make_client_app, make_server_app, run_in_process


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    logging_off()
    # The example app's own federation and data loader: FedIDA with the
    # paper's settings, one Adult client per partition.
    sys.path.insert(
        0, str(Path(__file__).resolve().parents[1] / "examples" / "flower_app")
    )
    from fedida_app.task import federation, load_partition

    train = load_adult("train")
    n_clients = train.clients.nunique()

    validated = FederatedEstimator(**federation.get_params(deep=False))
    validated.set_params(validation_fraction=0.2)

    def training_rows(context):
        loaded = load_partition(context)
        return {key: loaded[key] for key in ("X", "y", "sensitive_features")}

    def in_process(model):
        return FederatedEstimator(**model.get_params(deep=False)).fit(
            train.data,
            train.target,
            clients=train.clients,
            sensitive_features=train.sensitive,
        )

    def on_flower(model, load):
        return run_in_process(
            make_server_app(model),
            make_client_app(model, load),
            num_partitions=n_clients,
        )

    pairs = {
        "Flower evaluates the test rows, in-process nothing": (
            federation,
            load_partition,
        ),
        "both evaluate held-out rows (validation_fraction=0.2)": (
            validated,
            training_rows,
        ),
    }
    print("FedIDA (logistic) on Adult train, 5 clients, 10 rounds x 5 epochs")
    print(header(args.repeat) + "\n")
    print("| evaluation per round | path | wall time (s) | ratio of medians |")
    print("|---|---|---:|---:|")
    checks, ratios = [], {}
    for label, (model, load) in pairs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            local_time = timed(lambda model=model: in_process(model), args.repeat)
            flower_time = timed(
                lambda model=model, load=load: on_flower(model, load), args.repeat
            )
        local, flower = local_time.result, flower_time.result
        same = all(
            a.tobytes() == b.tobytes()
            for a, b in zip(
                get_parameters(local.estimator_),
                get_parameters(flower.estimator_),
                strict=True,
            )
        )
        print(f"| {label} | FederatedEstimator.fit (1 job) | {local_time} | 1.00 |")
        ratios[label] = flower_time.median / local_time.median
        print(
            f"| {label} | Flower apps, run_in_process | {flower_time} | "
            f"{ratios[label]:.2f} |"
        )
        last = flower.federated_metrics_[max(flower.federated_metrics_)]
        checks.append(
            f"{label}: same model to the last bit: {same}; last round, weighted "
            f"over clients: AUROC {last['val_roc_auc']:.3f}, DPD {last['val_dpd']:.3f}"
        )
    print("\n" + "\n".join(checks))
    both = ratios["both evaluate held-out rows (validation_fraction=0.2)"]
    print("\n| target | measured | met |")
    print("|---|---:|:---:|")
    print(
        "| run_in_process <= 1.3x the in-process fit, both evaluating | "
        f"{both:.2f}x | {'yes' if both <= 1.3 else 'NO'} |"
    )


def logging_off():
    import logging

    logging.getLogger("flwr").setLevel(logging.WARNING)


if __name__ == "__main__":
    main()
