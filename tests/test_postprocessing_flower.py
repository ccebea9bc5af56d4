"""FederatedThresholdOptimizer on Flower: the same thresholds as in-process.

The ServerApp asks every client, after the last round, for its counts of
scores per (group, label, bin); the clients send only those counts and the
categories of their groups.
"""

import numpy as np
import pytest

pytest.importorskip("flwr")

from _helpers import partition_loader
from flwr.app import Context, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.flower import (
    InProcessGrid,
    make_client_app,
    make_server_app,
    run_in_process,
)
from skfedida.flower._apps import REPLY_CONFIG
from skfedida.flower._grid import _identity
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE
from skfedida.postprocessing import FederatedThresholdOptimizer

N_CLIENTS = 3


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(900, n_clients=N_CLIENTS, random_state=0)


def _federation():
    return FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        sampler=FairnessAwareROSE(),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    )


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"constraints": "equalized_odds"},
        {"per_client": True, "selection_rate": 0.3},
    ],
)
def test_flower_thresholds_equal_the_in_process_ones(data, options):
    federation = _federation()
    post = FederatedThresholdOptimizer(federation, random_state=0, **options)
    flower = run_in_process(
        make_server_app(federation, postprocessor=post),
        make_client_app(federation, partition_loader(data)),
        num_partitions=N_CLIENTS,
    )
    local = FederatedThresholdOptimizer(_federation(), random_state=0, **options).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )
    assert isinstance(flower, FederatedThresholdOptimizer)
    assert flower.groups_ == local.groups_
    np.testing.assert_array_equal(flower.client_histograms_, local.client_histograms_)
    for key, value in local.rules_.items():
        np.testing.assert_array_equal(flower.rules_[key], value)
    kwargs = {"sensitive_features": data.sensitive, "clients": data.clients}
    np.testing.assert_array_equal(
        flower.predict(data.data, **kwargs), local.predict(data.data, **kwargs)
    )


def test_the_server_receives_only_counts_and_group_categories(data):
    federation = _federation()
    client_app = make_client_app(federation, partition_loader(data))
    grid = InProcessGrid(
        client_app,
        [{"partition-id": k, "num-partitions": N_CLIENTS} for k in range(N_CLIENTS)],
    )
    context = Context(1, SUPERLINK_NODE_ID, {}, RecordDict(), {})
    post = FederatedThresholdOptimizer(federation, n_bins=50)
    with _identity(1, SUPERLINK_NODE_ID, SUPERLINK_NODE_ID):
        make_server_app(federation, postprocessor=post)(grid, context)
    histogram_replies = [
        reply
        for reply in grid.replies
        if "group-labels" in reply.content.config_records.get("config", {})
    ]
    assert len(histogram_replies) == N_CLIENTS
    for reply in histogram_replies:
        config = reply.content["config"]
        assert set(config) <= REPLY_CONFIG
        (counts,) = reply.content["arrays"].to_numpy_ndarrays()
        # Counts per (group, label, bin): whole numbers summing to the
        # client's rows, never the rows themselves.
        partition = config["partition-id"]
        assert counts.shape[1:] == (2, 50)
        assert np.array_equal(counts, np.round(counts))
        assert counts.sum() == np.sum(data.clients == partition)
    with pytest.raises(TypeError, match="FederatedThresholdOptimizer"):
        make_server_app(federation, postprocessor=FairnessAwareROSE())


def _with(bunch, **changes):
    """A copy of ``bunch`` with some fields replaced."""
    import copy

    changed = copy.copy(bunch)
    for name, value in changes.items():
        setattr(changed, name, value)
    return changed


def test_a_group_of_one_label_is_refused_on_flower_as_in_process(data):
    # Issue 46: fairlearn refuses a group whose rows have one label; so do
    # both backends (the server's solver is the same).
    name = next(iter(data.sensitive))
    values = np.asarray(data.sensitive[name]).copy()
    lone = values[0]
    values[(values == lone) & (data.target == 1)] = values[values != lone][0]
    one_label = _with(data, sensitive={**data.sensitive, name: values})
    for fit in _on_both_backends(_federation, one_label):
        with pytest.raises(ValueError, match="has no positive rows"):
            fit()


@pytest.mark.filterwarnings("ignore::skfedida.exceptions.DegenerateModelWarning")
def test_scores_the_grid_cannot_rank_are_warned_of_on_flower(data):
    # Probabilities of tiny spread (features scaled by 1e-4, one round:
    # every row near the intercept's) put the rows in one bin, on both
    # backends. (Flower's clients count probabilities only.)
    from skfedida.exceptions import OperatingPointWarning

    tiny = _with(data, data=data.data * 1e-4)

    def federation():
        return FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=0.0),
            n_rounds=1,
            local_epochs=1,
            random_state=0,
        )

    for fit in _on_both_backends(federation, tiny):
        with pytest.warns(OperatingPointWarning, match="in the same bin"):
            fit()


def _on_both_backends(federation, data):
    """The threshold optimizer's fit on Flower, then in-process, as two calls.

    ``federation()`` makes the federation; each fit has its own.
    """

    def on_flower():
        post = FederatedThresholdOptimizer(federation(), random_state=0)
        run_in_process(
            make_server_app(federation(), postprocessor=post),
            make_client_app(federation(), partition_loader(data)),
            num_partitions=N_CLIENTS,
        )

    def in_process():
        FederatedThresholdOptimizer(federation(), random_state=0).fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )

    return on_flower, in_process
