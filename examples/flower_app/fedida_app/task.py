"""What the federation trains, and which rows each SuperNode holds.

Edit ``load_partition`` to read your institution's own data: it runs on the
SuperNode, and its rows never leave it.
"""

import functools

from skfedida.datasets import load_adult
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE

# FedIDA with the paper's settings (rounds, epochs and seed come from the run
# config in pyproject.toml).
federation = FederatedEstimator(
    FairPenaltyLogisticRegression(fairness=1.0),
    sampler=FairnessAwareROSE(),
    random_state=0,
)


# A deployed ClientApp is a fresh process per message; run in one process
# (run_in_process), it reads the data once.
_adult = functools.cache(load_adult)


def load_partition(context):
    """This SuperNode's Adult client, chosen by its node config ``partition-id``.

    Partition K holds the K-th Adult client (0 to 4): its training rows, and
    its test rows for the per-round evaluation.
    """
    k = context.node_config["partition-id"]
    train, test = _adult("train"), _adult("test")
    client = sorted(train.clients.unique())[k]
    fit_rows = (train.clients == client).to_numpy()
    eval_rows = (test.clients == client).to_numpy()
    return {
        "X": train.data[fit_rows],
        "y": train.target[fit_rows],
        "sensitive_features": train.sensitive[fit_rows],
        "X_eval": test.data[eval_rows],
        "y_eval": test.target[eval_rows],
        "sensitive_features_eval": test.sensitive[eval_rows],
    }
