"""One hostile client of five, and client-level differential privacy, on Adult.

Run: ``python benchmarks/robust_aggregation.py [--seeds 3]``

Adult (the shipped 5-client split, race White/non-White x gender),
``make_fedida()`` (10 rounds x 5 local epochs), run on Flower in one process
(``skfedida.flower.run_in_process``, the same model as in-process to the
last bit) so that client 2 can rewrite its own training replies, as a
hostile institution would: its parameters times 1e6, or sign-flipped. The
server aggregates with the plain n_k-weighted mean, the coordinate-wise
median, the trimmed mean (beta=0.2), or the mean of updates clipped to the
round's median update norm (``max_update_norm="median"``). Every row is
scored on the test rows of all five clients (mean over clients): AUROC and
its change against the honest plain mean, Brier score, selection rate at
0.5, the rate the matched operating point selects (exactly the training
prevalence), DPD and DFPR of the decisions at that matched selection rate
(groups with >= 30 test rows).

Then client-level differential privacy (``dp=DifferentialPrivacy(...)``,
in-process): the same table along the noise multiplier, with the epsilon
spent after 10 rounds at delta = 1e-5, at a clipping norm of the honest
run's median update norm (read from the same data, which a private
deployment would not do: here it only sets the scale), and a row with the
clipping and the equally weighted mean of DP but no noise to speak of (what
DP costs before noise).
The noise is seeded (``noise_seed``) so that the table can be rerun; a
private run leaves it unset.
"""

import argparse
import logging
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from flwr.app import ArrayRecord

from skfedida.federated import DifferentialPrivacy, TrimmedMean
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.model_selection import make_fedida

sys.path.insert(0, str(Path(__file__).parent))
from _timing import Stopwatch
from fair_aggregation import measure
from operating_point import adult

HOSTILE = 2

ATTACKS = {
    "honest": None,
    "client 2 sends x 1e6": lambda arrays: [a * 1e6 for a in arrays],
    "client 2 sign-flips": lambda arrays: [-a for a in arrays],
}

OPTIONS = {
    "mean": {},
    "median": {"aggregation": "median"},
    "trimmed mean 0.2": {"aggregation": TrimmedMean(beta=0.2)},
    "mean, clipped at median norm": {"max_update_norm": "median"},
}


class _Hostile:
    """The real ClientApp, with one partition's training replies rewritten."""

    def __init__(self, app, change):
        self.app, self.change = app, change

    def __call__(self, message, context):
        reply = self.app(message=message, context=context)
        if (
            context.node_config["partition-id"] == HOSTILE
            and message.metadata.message_type == "train"
        ):
            arrays = reply.content["arrays"].to_numpy_ndarrays()
            reply.content["arrays"] = ArrayRecord(
                [np.asarray(a) for a in self.change(arrays)]
            )
        return reply


def on_flower(federation, train, change):
    X, y, clients, S = train
    ids = np.unique(clients)

    def load(context):
        rows = clients == ids[context.node_config["partition-id"]]
        return {"X": X[rows], "y": y[rows], "sensitive_features": S[rows]}

    client_app = make_client_app(federation, load)
    if change is not None:
        client_app = _Hostile(client_app, change)
    fitted = run_in_process(
        make_server_app(federation), client_app, num_partitions=len(ids)
    )
    # Partition k holds client ids[k]: name the clients as the test rows do.
    fitted.clients_ = ids
    return fitted


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)  # Flower's per-round log
    stopwatch = Stopwatch()
    train, test = adult(binary=True)
    rows, norms = {}, []
    for seed in range(args.seeds):
        for option, settings in OPTIONS.items():
            for attack, change in ATTACKS.items():
                federation = make_fedida(random_state=seed).set_params(**settings)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = on_flower(federation, train, change)
                    if option == "mean" and change is None:
                        norms.extend(r["update_norm"] for r in model.history_)
                    rows.setdefault((option, attack), []).append(measure(model, test))
    table = pd.DataFrame(
        {key: pd.DataFrame(values).mean() for key, values in rows.items()}
    ).T
    reference = table.loc[("mean", "honest"), "AUROC mean"]
    table.insert(1, "dAUROC", table["AUROC mean"] - reference)
    table = table.drop(columns=["AUROC lowest", "AUROC sd"])
    print(
        f"\nAdult, make_fedida(), one hostile client of five, mean over "
        f"{args.seeds} seeds (dAUROC: against the honest plain mean)\n"
    )
    print(table.round(3).to_string())

    clipping_norm = float(np.median(norms))
    X, y, clients, S = train
    private = {}
    # 1e-9: the clipped, equally weighted mean with (almost) no noise, to
    # separate what clipping and equal weights cost from what noise costs.
    for z in (0.0, 1e-9, 0.5, 1.0, 2.0, 4.0):
        for seed in range(args.seeds):
            federation = make_fedida(random_state=seed)
            if z > 0:
                # A fixed noise seed makes this table reproducible; it is not
                # private (a real run leaves noise_seed=None).
                dp = DifferentialPrivacy(z, clipping_norm, noise_seed=seed)
                federation.set_params(dp=dp)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = federation.fit(X, y, clients=clients, sensitive_features=S)
            epsilon = np.inf if z < 1e-3 else model.privacy_.epsilon
            private.setdefault((z, epsilon), []).append(measure(model, test))
    table = pd.DataFrame(
        {key: pd.DataFrame(values).mean() for key, values in private.items()}
    ).T.drop(columns=["AUROC lowest", "AUROC sd"])
    table.index.names = ["noise multiplier", "epsilon"]
    print(
        f"\nAdult, make_fedida() with client-level DP (clipping norm "
        f"{clipping_norm:.3g}, the honest run's median update norm; delta 1e-5, "
        f"10 rounds), mean over {args.seeds} seeds; noise multiplier 0: no DP "
        "(the n_k-weighted mean); 1e-09: clipped updates, equal weights, no "
        "noise to speak of\n"
    )
    print(table.round(3).to_string())
    print(f"\n{stopwatch}")


if __name__ == "__main__":
    main()
