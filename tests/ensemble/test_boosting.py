"""Histogram boosting over clients, and FedIDA's penalty in it (issue 36).

Oracles: scikit-learn's ``HistGradientBoostingClassifier`` for the trees
without a penalty (bit for bit, one client and several); the group penalty
itself (``skfedida.penalty.group_penalty``) on the full rows for what the
server computes from the clients' cell sums; a generic solver for the
leaves' Newton step; and the single-client fit for the federated one.
"""

import collections
import itertools

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier

from skfedida._groups import encode_groups
from skfedida.datasets import make_federated_classification
from skfedida.ensemble import _boosting
from skfedida.ensemble._boosting import (
    BoostingClient,
    TreeChannel,
    boost,
    in_process,
    newton_leaf_values,
    penalty_cell_gradient,
    penalty_leaf_curvature,
)
from skfedida.penalty import group_penalty


@pytest.fixture(scope="module")
def data():
    data = make_federated_classification(
        3000, n_clients=4, n_features=6, random_state=0, group_shift=1.0
    )
    X = data.data.copy()
    X[::37, 2] = np.nan  # missing values take their own bin
    data.data = X
    data.codes = encode_groups(data.sensitive, n_samples=len(data.target))
    return data


def _boost(
    data,
    bin_mapper,
    ids,
    *,
    weight=None,
    fairness=0.0,
    max_iter=15,
    transport=None,
    ahead=True,
    **params,
):
    # With a transport (a _Rounds), the clients are reached through a
    # TreeChannel of it.
    parts = [np.flatnonzero(ids == k) for k in np.unique(ids)]
    clients = [
        BoostingClient(
            bin_mapper.transform(data.data[p]),
            data.target[p],
            None if weight is None else weight[p],
            data.codes.codes[p],
        )
        for p in parts
    ]
    n_features = data.data.shape[1]
    options = {
        "is_categorical": np.zeros(n_features, np.uint8),
        "monotonic_cst": np.zeros(n_features, np.int8),
        "interaction_cst": None,
        "max_iter": max_iter,
        "learning_rate": 0.1,
        "max_leaf_nodes": 31,
        "max_depth": None,
        "min_samples_leaf": 20,
        "l2_regularization": 0.0,
        "max_features": 1.0,
        "feature_rng": np.random.default_rng(0),
        **params,
    }
    baseline, predictors = boost(
        clients
        if transport is None
        else TreeChannel(transport.attach(clients), len(clients), ahead=ahead),
        bin_mapper=bin_mapper,
        fairness=fairness,
        n_groups=data.codes.n_groups,
        **options,
    )
    return baseline, predictors, clients, parts


@pytest.mark.parametrize("n_clients", [1, 4])
@pytest.mark.parametrize(
    "params",
    [{}, {"l2_regularization": 1.0, "max_depth": 3, "min_samples_leaf": 5}],
    ids=["defaults", "regularised"],
)
def test_without_a_penalty_the_trees_are_scikit_learns_bit_for_bit(
    data, n_clients, params
):
    reference = HistGradientBoostingClassifier(
        max_iter=15, early_stopping=False, random_state=0, **params
    ).fit(data.data, data.target)
    ids = np.zeros(len(data.target), int) if n_clients == 1 else data.clients
    baseline, predictors, *_ = _boost(data, reference._bin_mapper, ids, **params)
    assert baseline == reference._baseline_prediction[0, 0]
    assert len(predictors) == len(reference._predictors)
    for ours, theirs in zip(predictors, reference._predictors, strict=True):
        np.testing.assert_array_equal(ours[0].nodes, theirs[0].nodes)


def test_the_cell_gradient_is_the_penalty_s_on_the_rows(data):
    rng = np.random.default_rng(1)
    n = len(data.target)
    scores, weight = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    y, codes, n_groups = data.target, data.codes.codes, data.codes.n_groups
    _, gradient = group_penalty(scores, y, codes, n_groups, weight)
    cells = 2 * codes + y
    sums = np.bincount(cells, weights=weight * scores, minlength=2 * n_groups)
    totals = np.bincount(cells, weights=weight, minlength=2 * n_groups)
    per_weight = penalty_cell_gradient(sums, totals, n_groups)
    np.testing.assert_allclose(weight * per_weight[cells], gradient, rtol=1e-10)


def test_the_leaf_curvature_is_the_penalty_s_second_difference(data):
    # The penalty is quadratic: its second difference along any direction is
    # exact. Along the leaves' values v (every row of leaf L moved by v_L) it
    # is v^T C v, C the curvature between leaves the Newton step uses.
    rng = np.random.default_rng(2)
    n = len(data.target)
    weight = rng.uniform(0.5, 2.0, n)
    y, codes, n_groups = data.target, data.codes.codes, data.codes.n_groups
    cells = 2 * codes + y
    totals = np.bincount(cells, weights=weight, minlength=2 * n_groups)
    base = rng.normal(size=n)

    def penalty(s):
        return group_penalty(s, y, codes, n_groups, weight)[0]

    for n_leaves in (1, 3, 7):
        leaf = rng.integers(0, n_leaves, n)
        leaf_cells = np.array(
            [
                np.bincount(
                    cells[leaf == k], weights=weight[leaf == k], minlength=2 * n_groups
                )
                for k in range(n_leaves)
            ]
        )
        curvature = penalty_leaf_curvature(leaf_cells, totals, n_groups)
        values = rng.normal(size=n_leaves)
        step = values[leaf]
        second = penalty(base + step) - 2 * penalty(base) + penalty(base - step)
        assert second == pytest.approx(values @ curvature @ values, rel=1e-7, abs=1e-12)
        np.testing.assert_allclose(curvature, curvature.T, rtol=1e-10, atol=1e-15)


def test_the_leaves_newton_step_minimises_the_quadratic_model():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    n_leaves, n_cells = 6, 4
    g, h = rng.normal(size=n_leaves), rng.uniform(1.0, 5.0, n_leaves)
    N = rng.uniform(0, 3, size=(n_leaves, n_cells))
    root = rng.normal(size=(n_cells, n_cells))
    G = root @ root.T  # positive semi-definite, as the penalty's
    values = newton_leaf_values(g, h, 0.5, N @ G @ N.T, 2.0)

    def model(v):
        return g @ v + 0.5 * ((h + 0.5) * v) @ v + 1.0 * (N.T @ v) @ G @ (N.T @ v)

    best = minimize(model, np.zeros(n_leaves), method="BFGS", tol=1e-12).x
    np.testing.assert_allclose(values, best, atol=1e-6)
    # Without a penalty: scikit-learn's -G / (H + l2) per leaf.
    np.testing.assert_allclose(
        newton_leaf_values(g, h, 0.5, N @ G @ N.T, 0.0), -g / (h + 0.5), rtol=1e-14
    )


def _objective(data, raw, fairness, weight=None):
    """Mean log-loss plus fairness times the group penalty, at logits raw."""
    y = data.target
    w = np.ones(len(y)) if weight is None else weight
    log_loss = np.logaddexp(0.0, raw) - y * raw
    penalty = group_penalty(raw, y, data.codes.codes, data.codes.n_groups, weight)[0]
    return float(np.dot(w, log_loss) / w.sum()) + fairness * penalty


@pytest.mark.parametrize("fairness", [1.0, 100.0])
def test_penalised_boosting_lowers_the_objective_every_iteration(data, fairness):
    reference = HistGradientBoostingClassifier(max_iter=1).fit(data.data, data.target)
    ids = np.zeros(len(data.target), int)
    prevalence = data.target.mean()
    start = np.full(len(data.target), np.log(prevalence / (1 - prevalence)))
    objectives = [_objective(data, start, fairness)]
    for max_iter in range(1, 8):
        _, _, clients, parts = _boost(
            data, reference._bin_mapper, ids, fairness=fairness, max_iter=max_iter
        )
        raw = np.empty(len(data.target))
        for client, rows in zip(clients, parts, strict=True):
            raw[rows] = client.raw
        objectives.append(_objective(data, raw, fairness))
    assert all(b < a for a, b in itertools.pairwise(objectives)), objectives


@pytest.mark.parametrize("weighted", [False, True])
def test_federated_penalised_boosting_is_the_one_clients_to_round_off(data, weighted):
    reference = HistGradientBoostingClassifier(max_iter=1).fit(data.data, data.target)
    weight = (
        np.random.default_rng(4).uniform(0.5, 2.0, len(data.target))
        if weighted
        else None
    )
    pooled = _boost(
        data,
        reference._bin_mapper,
        np.zeros(len(data.target), int),
        weight=weight,
        fairness=5.0,
    )
    federated = _boost(
        data, reference._bin_mapper, data.clients, weight=weight, fairness=5.0
    )
    assert federated[0] == pytest.approx(pooled[0], rel=1e-14)
    # The start: scikit-learn's, the log-odds of the weighted prevalence.
    from sklearn._loss.loss import HalfBinomialLoss

    expected = HalfBinomialLoss().fit_intercept_only(
        y_true=data.target.astype(float), sample_weight=weight
    )
    assert pooled[0] == pytest.approx(float(np.reshape(expected, -1)[0]), rel=1e-12)
    for ours, theirs in zip(federated[1], pooled[1], strict=True):
        for field in ("feature_idx", "bin_threshold", "is_leaf", "count"):
            np.testing.assert_array_equal(ours[0].nodes[field], theirs[0].nodes[field])
        np.testing.assert_allclose(
            ours[0].nodes["value"], theirs[0].nodes["value"], rtol=1e-9, atol=1e-12
        )


def test_the_penalised_leaves_are_shrunk_by_the_learning_rate(data):
    # The first tree's gradients and splits do not depend on the learning
    # rate: its leaf values are the Newton step times the rate.
    reference = HistGradientBoostingClassifier(max_iter=1).fit(data.data, data.target)
    ids = np.zeros(len(data.target), int)
    trees = [
        _boost(
            data,
            reference._bin_mapper,
            ids,
            fairness=5.0,
            max_iter=1,
            learning_rate=rate,
        )[1][0][0].nodes
        for rate in (0.1, 0.05)
    ]
    leaves = trees[0]["is_leaf"].astype(bool)
    np.testing.assert_array_equal(trees[0]["feature_idx"], trees[1]["feature_idx"])
    np.testing.assert_allclose(
        trees[1]["value"][leaves], 0.5 * trees[0]["value"][leaves], rtol=1e-12
    )


def test_interaction_constraints_over_clients_are_scikit_learns(data):
    # The builder leaves the features outside a constraint set unwritten:
    # only the computed ones are added (no overflow from stale memory).
    params = {"interaction_cst": [{0, 1}, {2, 3, 4}]}
    reference = HistGradientBoostingClassifier(
        max_iter=10, early_stopping=False, random_state=0, **params
    ).fit(data.data, data.target)
    with np.errstate(all="raise"):
        _, predictors, *_ = _boost(
            data,
            reference._bin_mapper,
            data.clients,
            max_iter=10,
            interaction_cst=[{0, 1}, {2, 3, 4}, {5}],
        )
    for ours, theirs in zip(predictors, reference._predictors, strict=True):
        np.testing.assert_array_equal(ours[0].nodes, theirs[0].nodes)


class _Rounds:
    """The in-process transport, counting each kind of query and the splits made."""

    def __init__(self):
        self.kinds = collections.Counter()
        self.splits = 0
        #: Per query, the histograms it asked.
        self.histograms = []

    def __call__(self, query, active):
        self.kinds[query["kind"]] += 1
        self.splits += len(query.get("splits", ()))
        self.histograms.append(len(query.get("histograms", ())))
        return self.send(query, active)

    def attach(self, clients):
        """Reach these in-process clients; the transport itself."""
        self.send = in_process(clients)
        return self


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"max_leaf_nodes": None, "max_depth": 4},
        {"max_leaf_nodes": 8, "min_samples_leaf": 200},
        {"monotonic_cst": [1, -1, 0, 0, 0, 0], "l2_regularization": 0.5},
        {"max_features": 0.5},
        {"interaction_cst": [{0, 1}, {2, 3, 4}, {5}]},
    ],
    ids=[
        "defaults",
        "depth-wise",
        "few-leaves",
        "monotonic",
        "features",
        "interactions",
    ],
)
def test_splits_made_ahead_give_scikit_learns_trees_in_fewer_rounds(data, params):
    # The grower's next splits are made in the rounds it needs anyway: the
    # same trees as one split a round (and as scikit-learn's pooled fit),
    # in fewer rounds; a split made ahead and never used costs no round.
    reference = HistGradientBoostingClassifier(
        max_iter=5, early_stopping=False, random_state=0, **params
    ).fit(data.data, data.target)
    n_features = data.data.shape[1]
    options = {
        **params,
        "monotonic_cst": np.asarray(params.get("monotonic_cst", [0] * n_features)),
    }
    transports, fits = {True: _Rounds(), False: _Rounds()}, {}
    for ahead in (True, False):
        _, fits[ahead], _, _ = _boost(
            data,
            reference._bin_mapper,
            data.clients,
            max_iter=5,
            transport=transports[ahead],
            ahead=ahead,
            # scikit-learn's feature stream for random_state=0.
            feature_rng=np.random.default_rng(
                np.random.RandomState(0).randint(np.iinfo(np.uint32).max, size=2)[1]
            ),
            **options,
        )
    for ahead, one_by_one, theirs in zip(
        fits[True], fits[False], reference._predictors, strict=True
    ):
        np.testing.assert_array_equal(ahead[0].nodes, theirs[0].nodes)
        np.testing.assert_array_equal(one_by_one[0].nodes, theirs[0].nodes)
    rounds = {ahead: t.kinds["grow"] / 5 for ahead, t in transports.items()}
    internal = sum((tree[0].nodes["is_leaf"] == 0).sum() for tree in fits[True]) / 5
    # One split at a time: a round per split, and one for the root (a split
    # whose children are both leaves waits for the next round).
    assert rounds[False] <= internal + 1
    if params.get("interaction_cst") is None and internal > 2:
        assert rounds[True] < rounds[False]
    if params.get("max_leaf_nodes", 31) is None:
        # Every node is split in the end: about a round per level (a level
        # takes two when the grower splits a child before its parent's
        # sibling, made ahead, is used).
        assert rounds[True] <= 2 * params["max_depth"] < rounds[False]
    # A split made ahead and never used: at most one per split made later.
    assert transports[True].splits <= 2 * 5 * internal
    assert transports[False].splits == 5 * internal


def test_a_round_asks_ahead_only_what_its_answers_hold(data, monkeypatch):
    # Many clients' histograms of many nodes would all be held at once: the
    # nodes asked ahead fit ROUND_BYTES, and none fits when one node's
    # histograms fill it (a round per split, the same trees).
    reference = HistGradientBoostingClassifier(
        max_iter=3, early_stopping=False, random_state=0
    ).fit(data.data, data.target)
    n_clients = np.unique(data.clients).size
    # Each feature's bins of values and its missing values' bin, 20 bytes each
    # (in Python integers: no overflow at the largest room).
    mapper = reference._bin_mapper
    layout_bytes = 20 * (int(mapper.n_bins_non_missing_.sum()) + data.data.shape[1])
    fits = {}
    for room in (1, 3, 10**9):
        monkeypatch.setattr(_boosting, "ROUND_BYTES", room * n_clients * layout_bytes)
        transport = _Rounds()
        _, trees, _, _ = _boost(
            data, reference._bin_mapper, data.clients, max_iter=3, transport=transport
        )
        asked = transport.histograms
        fits[room] = (max(asked), sum(1 for n in asked if n) / 3)
        for ours, theirs in zip(trees, reference._predictors, strict=True):
            np.testing.assert_array_equal(ours[0].nodes, theirs[0].nodes)
    assert fits[1][0] == 1 and fits[3][0] <= 3 < fits[10**9][0]
    assert fits[1][1] > max(fits[3][1], fits[10**9][1])
