"""A rate constraint held by the server, on Flower as in-process (issue 45).

Before every round the ServerApp asks each node for its training rows'
counts under the round's model (``skfedida_rate_histograms``), checks them
with the in-process rules, steps the same multipliers and sends the round's
term with the training messages: the fitted model, its multipliers and
rates equal the in-process federation's to the last bit.
"""

import dataclasses

import numpy as np
import pytest
from sklearn.base import clone

pytest.importorskip("flwr")

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier

N_CLIENTS = 3


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(
        1500, n_clients=N_CLIENTS, n_features=4, random_state=11, group_shift=1.0
    )


def _load(data):
    def load(context):
        rows = data.clients == context.node_config["partition-id"]
        return {
            "X": data.data[rows],
            "y": data.target[rows],
            "sensitive_features": {k: v[rows] for k, v in data.sensitive.items()},
        }

    return load


@pytest.mark.parametrize(
    "estimator",
    [
        FairPenaltyLogisticRegression(constraints="demographic_parity"),
        FairMLPClassifier(hidden_layer_sizes=(6,), constraints="equalized_odds"),
    ],
    ids=["logistic", "network"],
)
@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg"])
def test_flower_equals_in_process_to_the_last_bit(data, estimator, strategy):
    federation = FederatedEstimator(
        estimator,
        n_rounds=3,
        local_epochs=2,
        strategy=strategy,
        validation_fraction=0.2,
        random_state=3,
    )
    ours = clone(federation).fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    theirs = run_in_process(
        make_server_app(federation),
        make_client_app(federation, _load(data)),
        num_partitions=N_CLIENTS,
    )
    np.testing.assert_array_equal(
        ours.predict_proba(data.data), theirs.predict_proba(data.data)
    )
    for name in (
        "multipliers_",
        "constrained_rates_",
        "rate_gaps_",
        "operating_threshold_",
        "target_rate_",
    ):
        np.testing.assert_array_equal(
            getattr(ours.estimator_, name), getattr(theirs.estimator_, name)
        )
    assert ours.estimator_.groups_ == theirs.estimator_.groups_
    assert theirs.estimator_.constraints == estimator.constraints
    assert ours.estimator_.multipliers_.sum() > 0


@pytest.mark.filterwarnings("ignore::skfedida.exceptions.DegenerateModelWarning")
def test_a_node_lying_in_its_counts_is_named_or_left_out(data, monkeypatch):
    from skfedida.federated import _plan

    original = _plan.client_rate_histograms
    first_row = data.data[data.clients == 1][0]

    def lying(estimator, parameters, client, classes, n_bins):
        histograms = original(estimator, parameters, client, classes, n_bins)
        if np.array_equal(client.X[0], first_row):
            counts = histograms.counts.copy()
            counts[:, 1] += counts[:, 0]  # its negatives counted as positives
            counts[:, 0] = 0
            histograms = dataclasses.replace(histograms, counts=counts)
        return histograms

    monkeypatch.setattr(_plan, "client_rate_histograms", lying)
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(constraints="demographic_parity"),
        n_rounds=2,
        random_state=0,
    )
    apps = (make_server_app(federation), make_client_app(federation, _load(data)))
    with pytest.raises(
        RuntimeError, match=r"Client 1 \(node \d+\) failed in round 1 \(rate histo"
    ):
        run_in_process(*apps, num_partitions=N_CLIENTS)
    federation.set_params(on_client_error="skip")
    apps = (make_server_app(federation), make_client_app(federation, _load(data)))
    fitted = run_in_process(*apps, num_partitions=N_CLIENTS)
    skipped = [r for r in fitted.history_ if "rate_histograms_skipped" in r]
    assert {r["client"] for r in skipped} == {1}
    assert (
        "rows per label in its training rows" in (skipped[0]["rate_histograms_skipped"])
    )


def test_a_node_without_a_group_reads_the_term_by_label(data):
    # Node 0 has no row of the first group: its own codes of the others are
    # shifted against the federation's, and the term must reach each row by
    # its group's label, as in-process (where every client shares one code).
    S = {k: np.asarray(v).copy() for k, v in data.sensitive.items()}
    first = {k: v[0] for k, v in S.items()}
    rows = data.clients == 0
    in_first = np.all([S[k] == first[k] for k in S], axis=0)
    keep = ~(rows & in_first)
    X, y, clients = data.data[keep], data.target[keep], data.clients[keep]
    S = {k: v[keep] for k, v in S.items()}

    def load(context):
        mine = clients == context.node_config["partition-id"]
        return {
            "X": X[mine],
            "y": y[mine],
            "sensitive_features": {k: v[mine] for k, v in S.items()},
        }

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0, constraints="demographic_parity"),
        n_rounds=4,
        random_state=3,
    )
    ours = clone(federation).fit(X, y, clients=clients, sensitive_features=S)
    plain = clone(federation).set_params(estimator__constraints=None)
    plain.fit(X, y, clients=clients, sensitive_features=S)
    assert not np.allclose(ours.predict_proba(X), plain.predict_proba(X))
    theirs = run_in_process(
        make_server_app(federation),
        make_client_app(federation, load),
        num_partitions=N_CLIENTS,
    )
    np.testing.assert_array_equal(ours.predict_proba(X), theirs.predict_proba(X))
    assert ours.estimator_.multipliers_[0, 0].sum() > 0  # the first group acts


@pytest.mark.filterwarnings("ignore::skfedida.exceptions.DegenerateModelWarning")
def test_column_mode_constrains_the_groups_of_the_columns(data):
    # The estimator reads its groups from X's last two columns: the server
    # holds the constraint over those groups, in-process and on Flower.
    codes = [np.unique(v, return_inverse=True)[1] for v in data.sensitive.values()]
    X = np.column_stack([data.data, *codes]).astype(float)

    def load(context):
        mine = data.clients == context.node_config["partition-id"]
        return {"X": X[mine], "y": data.target[mine]}

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(
            fairness=0, constraints="demographic_parity", sensitive=[4, 5]
        ),
        n_rounds=3,
        random_state=3,
    )
    ours = clone(federation).fit(X, data.target, clients=data.clients)
    assert ours.estimator_.groups_ == ((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (1.0, 1.0))
    assert ours.estimator_.multipliers_.sum() > 0
    assert all(m.constraints is None for m in ours._federation_state["models"])
    theirs = run_in_process(
        make_server_app(federation),
        make_client_app(federation, load),
        num_partitions=N_CLIENTS,
    )
    np.testing.assert_array_equal(ours.predict_proba(X), theirs.predict_proba(X))
    np.testing.assert_array_equal(
        ours.estimator_.multipliers_, theirs.estimator_.multipliers_
    )
