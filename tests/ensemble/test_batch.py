"""In-process clients' trees grown together (issue 47): each client's own numbers.

Oracle: each ``BoostingClient`` answering alone (what it sends over Flower).
``ClientBatch`` answers the same rounds for all the clients at once, and
every answer must be the client's own, bit for bit: its children's rows,
its histograms' sums (added in its rows' order), its leaves' cell weights,
its scores. Then whole federations: the trees grown with the batch are the
trees grown client by client, and the gate names a client whose stacked
answer is wrong as it names it answering alone.
"""

import numpy as np
import pytest

from skfedida._compat import HISTOGRAM_DTYPE
from skfedida._gate._tree_histograms import (
    ChildOf,
    GrowAnswers,
    NodeSplit,
    grow_problems,
)
from skfedida._gate._tree_ledger import _lexical_order
from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier, _batch
from skfedida.ensemble._batch import ClientBatch
from skfedida.ensemble._boosting import BoostingClient
from skfedida.ensemble._growing import bin_layout
from skfedida.federated import FederatedEstimator
from skfedida.federated import _trees as federated_trees

N_FEATURES = 4
#: Bins of values per feature: a one-hot column, a categorical one, two
#: numeric ones (the last with the most bins there are).
VALUES = np.array([2, 7, 5, 255 - 1])
SIZES = [1, 3, 40, 0 + 7, 300, 25]


def _rows(rng, n):
    X = np.column_stack([rng.integers(0, v, n) for v in VALUES]).astype(np.uint8)
    X[rng.random(X.shape) < 0.1] = 255  # missing values' bin
    return X


def _clients(seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for n in SIZES:
        y = rng.integers(0, 2, n)
        y[0] = 1 - y[-1] if n > 1 else y[0]
        out.append(
            (
                _rows(rng, n),
                y,
                rng.random(n) + 0.5,
                rng.integers(0, 2, n),
            )
        )
    return out


def _boosting_clients(parts):
    return [BoostingClient(X, y, w, g) for X, y, w, g in parts]


BINNING = {
    "n_bins": 256,
    "n_bins_non_missing": VALUES.astype(np.uint32),
    "has_missing_values": np.ones(N_FEATURES, np.uint8),
    "is_categorical": np.array([0, 1, 0, 0], np.uint8),
    "monotonic_cst": np.zeros(N_FEATURES, np.int8),
}


def _numeric(feature, bin, missing_left):
    return {
        "feature": feature,
        "bin": bin,
        "missing_go_to_left": missing_left,
        "is_categorical": False,
        "left_cat_bitset": None,
    }


def _categorical(feature, categories):
    bitset = np.zeros(8, np.uint32)
    for category in categories:
        bitset[category // 32] |= np.uint32(1) << np.uint32(category % 32)
    return {
        "feature": feature,
        "bin": 0,
        "missing_go_to_left": False,
        "is_categorical": True,
        "left_cat_bitset": bitset,
    }


def _script():
    """A tree's rounds: splits numeric and categorical, subsets of features."""
    gradients = {
        "penalty": {"scale": 0.7, "cell_gradient": np.array([0.3, -0.2, 0.1, -0.4])},
        "constraint": None,
    }
    grow = [
        {
            "kind": "grow",
            "gradients": gradients,
            "splits": [],
            "histograms": [{"node": 0, "features": None}],
        },
        {
            "kind": "grow",
            "gradients": None,
            "splits": [
                {"node": 0, "left": 1, "right": 2, "split": _numeric(3, 100, True)}
            ],
            "histograms": [
                {"node": 1, "features": None},
                {"node": 2, "features": np.array([3, 1], dtype=np.uint32)},
            ],
        },
        {
            "kind": "grow",
            "gradients": None,
            "splits": [
                # Missing values (bin 255) among the left categories.
                {
                    "node": 2,
                    "left": 3,
                    "right": 4,
                    "split": _categorical(1, [0, 4, 255]),
                },
                {"node": 1, "left": 5, "right": 6, "split": _numeric(0, 0, False)},
                {"node": 6, "left": 7, "right": 8, "split": _numeric(2, 2, True)},
            ],
            "histograms": [
                {"node": 3, "features": None},
                {"node": 8, "features": None},
            ],
        },
    ]
    # Node 1 was split (twice below it) but is a leaf: a split made ahead
    # of the grower and not used. Its rows are its children's.
    leaves = [1, 3, 4]
    return grow, leaves


def _start(clients, asked):
    for k in asked:
        clients[k].answer(
            {"kind": "start", "n_groups": 2, "n_features": N_FEATURES, "rates": False}
        )
        clients[k].answer(
            {
                "kind": "init",
                "baseline": 0.1,
                "binning": BINNING,
                "trees": [],
                "score": True,
                "rate_bins": None,
            }
        )


def _same_records(ours, theirs):
    assert ours.dtype == theirs.dtype == HISTOGRAM_DTYPE
    assert ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize(
    "dense_per_value, chunk",
    [(4, 2**16), (0, 2**16), (10**9, 1), (4, 50)],
    ids=["default", "all-sorted", "all-dense-one-feature", "small-chunks"],
)
@pytest.mark.parametrize("asked", [[0, 1, 2, 3, 4, 5], [1, 2, 4, 5]])
def test_the_batch_answers_each_client_s_own_numbers(
    monkeypatch, dense_per_value, chunk, asked
):
    monkeypatch.setattr(_batch, "DENSE_PER_VALUE", dense_per_value)
    monkeypatch.setattr(_batch, "CHUNK", chunk)
    parts = _clients()
    alone = _boosting_clients(parts)
    together = _boosting_clients(parts)
    _start(alone, asked)
    _start(together, asked)
    batch = ClientBatch(lambda: together)
    grow, leaves = _script()
    for query in grow:
        stacked = batch.answer(query, asked)
        assert isinstance(stacked, GrowAnswers) and stacked.clients == asked
        for k in asked:
            own = alone[k].answer(query)
            np.testing.assert_array_equal(stacked[k]["splits"], own["splits"])
            _same_records(stacked[k]["histograms"], own["histograms"])
    cells = {"kind": "leaf cells", "leaves": leaves}
    stacked = batch.answer(cells, asked)
    for k in asked:
        assert (
            stacked[k]["cells"].tobytes() == alone[k].answer(cells)["cells"].tobytes()
        )
    apply = {
        "kind": "apply",
        "leaves": leaves,
        "values": np.array([0.25, -0.5, 0.125]),
        "tree": None,
        "score": True,
        "rate_bins": None,
    }
    stacked = batch.answer(apply, asked)
    for k in asked:
        own = alone[k].answer(apply)
        assert set(own) == set(stacked[k])
        for key, value in own.items():
            assert np.asarray(stacked[k][key]).tobytes() == np.asarray(value).tobytes()
        # The client's own scores are the batch's (views of its arrays).
        assert together[k].raw.tobytes() == alone[k].raw.tobytes()
        assert together[k].tree is None


def test_many_small_clients_send_only_their_bins_with_rows():
    # 300 clients of 2 rows: each holds at most 2 bins a feature of the
    # 268 a histogram has; the stack is as long as the rows, not 300 x 268.
    rng = np.random.default_rng(1)
    parts = [
        (_rows(rng, 2), np.array([0, 1]), None, np.array([0, 1])) for _ in range(300)
    ]
    clients = _boosting_clients(parts)
    _start(clients, range(300))
    stacked = ClientBatch(lambda: clients).answer(_script()[0][0], list(range(300)))
    (root,) = stacked.histograms
    assert root.client.shape[0] <= 300 * 2 * N_FEATURES
    assert np.all(root.counts > 0)
    layout = bin_layout(256, VALUES)
    assert stacked.size == layout.size == int(VALUES.sum()) + N_FEATURES


def _federation(**params):
    trees = FairHistGradientBoostingClassifier(
        **{"max_iter": 6, "early_stopping": False, "random_state": 0, **params}
    )
    return FederatedEstimator(trees, random_state=0)


@pytest.fixture(scope="module")
def data():
    data = make_federated_classification(
        1800, n_clients=4, n_features=5, random_state=3, group_shift=1.0
    )
    X = data.data.copy()
    X[::29, 1] = np.nan
    data.data = X
    return data


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"fairness": 2.0, "max_leaf_nodes": 5},
        {"constraints": "demographic_parity"},
        {"interaction_cst": [[0, 1], [2, 3, 4]], "min_samples_leaf": 60},
        {"max_leaf_nodes": None, "max_depth": 3, "categorical_features": [4]},
        {
            "early_stopping": True,
            "validation_fraction": 0.2,
            "n_iter_no_change": 2,
            "fairness": 0.5,
        },
    ],
    ids=["default", "penalty", "constraint", "interactions", "depth", "early"],
)
@pytest.mark.parametrize("n_clients", [4, 90])
def test_the_batch_grows_the_trees_grown_client_by_client(
    data, monkeypatch, params, n_clients
):
    X = data.data.copy()
    if "categorical_features" in params:
        X[:, 4] = np.floor(np.abs(X[:, 4]) * 3) % 7
    clients = np.arange(len(data.target)) % n_clients
    weight = np.linspace(0.5, 1.5, len(data.target))
    sensitive = (
        data.sensitive if params.get("fairness") or params.get("constraints") else None
    )

    def fit():
        return _federation(**params).fit(
            X,
            data.target,
            clients=clients,
            sensitive_features=sensitive,
            sample_weight=weight,
        )

    used = []
    original = ClientBatch.answer

    def counted(self, query, asked):
        used.append(query["kind"])
        return original(self, query, asked)

    monkeypatch.setattr(ClientBatch, "answer", counted)
    together = fit()
    assert "grow" in used and "apply" in used
    monkeypatch.setattr(federated_trees, "_batch_of", lambda members, X: None)
    alone = fit()
    ours, theirs = together.estimator_, alone.estimator_
    assert ours.n_iter_ == theirs.n_iter_
    for a, b in zip(ours._predictors, theirs._predictors, strict=True):
        assert a[0].nodes.tobytes() == b[0].nodes.tobytes()
    assert ours.train_score_.tobytes() == theirs.train_score_.tobytes()
    assert ours.validation_score_.tobytes() == theirs.validation_score_.tobytes()


def test_clients_whose_answers_were_replaced_answer_alone(data, monkeypatch):
    # A test's lying client is itself: the batch would not tell its lies.
    original = federated_trees.TreeFederationClient.answer
    monkeypatch.setattr(
        federated_trees.TreeFederationClient, "answer", lambda s, q: original(s, q)
    )
    assert federated_trees._batch_of([], np.zeros((10, 2))) is None
    monkeypatch.undo()
    assert isinstance(federated_trees._batch_of([], np.zeros((10, 2))), ClientBatch)


def _stacked_round(seed=0):
    """A grow round's stacked answers, and what grow_problems needs of it."""
    parts = _clients(seed)
    clients = _boosting_clients(parts)
    asked = list(range(len(parts)))
    _start(clients, asked)
    batch = ClientBatch(lambda: clients)
    first, second = _script()[0][:2]
    batch.answer(first, asked)
    stacked = batch.answer(second, asked)
    rows = {k: len(parts[k][1]) for k in asked}
    left = int(stacked.splits[:, 0, 0].sum())
    bounds = {
        k: (float(np.sum(parts[k][2])) * 1.8, float(np.sum(parts[k][2])) / 4)
        for k in asked
    }
    check = {
        "query": second,
        "splits": [NodeSplit(rows, left)],
        "sources": [ChildOf(0, 0), ChildOf(0, 1)],
        "bounds": bounds,
        "layout": bin_layout(256, VALUES),
    }
    return stacked, check


def _corrupt_count(sparse, entry):
    sparse.counts[entry] += 1


def _corrupt_gradient(sparse, entry):
    sparse.gradients[entry] = np.nan


def _corrupt_hessian(sparse, entry):
    sparse.hessians[entry] = -sparse.hessians[entry] - 1.0


def _corrupt_stray(sparse, entry):
    # A bin of no rows with a gradient sum, and the rows' count kept.
    sparse.counts[entry] = 0
    sparse.counts[entry + 1] += 1


@pytest.mark.parametrize(
    "corrupt, words",
    [
        (_corrupt_count, "counts"),
        (_corrupt_gradient, "NaN"),
        (_corrupt_hessian, "negative hessian"),
        (_corrupt_stray, "where it counts no rows"),
    ],
)
def test_a_wrong_stacked_answer_is_named_as_answering_alone(corrupt, words):
    stacked, check = _stacked_round()
    # Client 4's first entry of the second histogram (features 3 and 1).
    sparse = stacked.histograms[1]
    entry = int(np.flatnonzero(sparse.client == 4)[0])
    corrupt(sparse, entry)
    problems, totals = grow_problems(answers=stacked, **check)
    assert totals == [None, None]
    assert [k for k, p in problems.items() if p] == [4]
    assert words in problems[4]
    # The same answers one by one (as over Flower): the same verdicts.
    alone = {k: stacked[k] for k in stacked}
    assert grow_problems(answers=alone, **check)[0] == problems


def test_stacked_answers_sum_as_answers_one_by_one():
    stacked, check = _stacked_round(seed=5)
    problems, totals = grow_problems(answers=stacked, **check)
    assert not any(problems.values())
    alone = grow_problems(answers={k: stacked[k] for k in stacked}, **check)
    for ours, theirs in zip(totals, alone[1], strict=True):
        _same_records(ours, theirs)
    # Each bin's sum is the clients' own sums added in their order.
    expected = np.zeros(check["layout"].size)
    for k in stacked:
        expected = expected + stacked[k]["histograms"][0]["sum_gradients"]
    assert totals[0]["sum_gradients"].tobytes() == expected.tobytes()


@pytest.mark.parametrize("seed", range(20))
def test_pivots_are_ordered_as_lexsort_orders_them(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    features = rng.integers(0, 6, n)
    # Ties, repeated pivots, infinities and NaN among them.
    pivots = rng.choice([-np.inf, -1.0, 0.0, 0.5, 2.0, np.inf, np.nan], n)
    pivots[: n // 2] = rng.normal(size=n // 2)
    np.testing.assert_array_equal(
        _lexical_order(features, pivots), np.lexsort((pivots, features))
    )


def test_a_client_left_out_before_binning_leaves_the_batch_the_others(
    data, monkeypatch
):
    # It never binned its rows (no boosting client): the batch holds none
    # of them, and the others' trees are those grown client by client.
    prepare = federated_trees.TreeFederationClient._OWN["prepare"]
    third = data.data[data.clients == 2]

    def failing(self, query):
        if np.array_equal(np.asarray(self.X), third, equal_nan=True):
            raise ConnectionError("the site went away")
        return prepare(self, query)

    monkeypatch.setitem(federated_trees.TreeFederationClient._OWN, "prepare", failing)

    def fit():
        federation = _federation().set_params(on_client_error="skip")
        return federation.fit(data.data, data.target, clients=data.clients)

    together = fit()
    assert [r["client"] for r in together.history_ if r.get("stage")] == [2]
    monkeypatch.setattr(federated_trees, "_batch_of", lambda members, X: None)
    alone = fit()
    for a, b in zip(
        together.estimator_._predictors, alone.estimator_._predictors, strict=True
    ):
        assert a[0].nodes.tobytes() == b[0].nodes.tobytes()
