"""What the federation trains, and which rows each SuperNode holds.

Edit ``load_partition`` to read your institution's own data: it runs on the
SuperNode, and its rows never leave it.
"""

import functools

from skfedida.datasets import load_adult
from skfedida.model_selection import make_fedida

# FedIDA as the quickstart trains it (FairnessAwareROSE on every minibatch
# with the prior correction, the standardized group penalty at 0.25): a model
# that ranks well and selects about the training prevalence. Rounds, epochs
# and seed come from the run config in pyproject.toml.
federation = make_fedida(random_state=0)

#: The Adult clients, one per SuperNode.
N_ADULT_CLIENTS = 5


# A deployed ClientApp is a fresh process per message; run in one process
# (run_in_process), it reads the data once.
_adult = functools.cache(load_adult)


def load_partition(context):
    """This SuperNode's Adult client, chosen by its node config ``partition-id``.

    Partition K holds the K-th Adult client (0 to 4): its training rows, and
    its test rows for the per-round evaluation.
    """
    k = context.node_config["partition-id"]
    if not 0 <= k < N_ADULT_CLIENTS:
        raise ValueError(
            f"partition-id {k}: Adult has {N_ADULT_CLIENTS} clients (0 to "
            f"{N_ADULT_CLIENTS - 1}); under the simulation runtime, run with "
            f'--federation-config "num-supernodes={N_ADULT_CLIENTS}".'
        )
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
