"""Bin edges from the clients' answers: scikit-learn's pooled edges, exactly.

The oracle is scikit-learn's ``_BinMapper`` fitted on the pooled rows (below
its subsample size): the same edges (as values: a zero edge's sign may
differ, which bins the same), NaN where it makes one, and the same bins, on
columns with missing values, infinities, huge values, a constant, few and
many distinct values, split over 1 to 7 clients. Then the whole federated
fit without a row pooled: federated edges and boosting over clients give
``HistGradientBoostingClassifier``'s trees bit for bit.
"""

import warnings

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier

from skfedida._compat import BinMapper
from skfedida._gate._policy import ReplyGate
from skfedida.datasets import make_federated_classification
from skfedida.ensemble._binning import ClientColumns, federated_bin_mapper
from skfedida.ensemble._boosting import BoostingClient, TreeChannel, boost, in_process


def _columns(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 20000))
    X = np.column_stack(
        [
            rng.normal(size=n),
            rng.integers(0, 10, n).astype(float),  # few distinct values
            rng.exponential(size=n) ** 3,
            np.round(rng.normal(size=n), 1),
            -rng.lognormal(size=n),  # all negative
            np.full(n, 2.0),  # constant: no edge
            rng.standard_cauchy(n) * 1e300,  # overflowing differences
            rng.integers(0, 255, n).astype(float),  # max_bins distinct at most
            rng.integers(0, 256, n).astype(float),  # one more: percentiles
        ]
    )
    X[:: int(rng.integers(5, 20)), 0] = np.nan
    X[:, 2][rng.random(n) < 0.3] = 0.0
    X[::7, 6] = np.inf
    return rng, X


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_clients", [1, 3, 7])
def test_the_edges_are_scikit_learns_on_the_pooled_rows(seed, n_clients):
    rng, X = _columns(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its inf - inf
        reference = BinMapper(n_bins=256).fit(X)
    ids = rng.integers(0, n_clients, X.shape[0])
    federated = federated_bin_mapper(
        [ClientColumns(X[ids == k]) for k in range(n_clients)]
    )
    for ours, theirs in zip(
        federated.bin_thresholds_, reference.bin_thresholds_, strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)  # NaN where theirs is
    np.testing.assert_array_equal(
        federated.n_bins_non_missing_, reference.n_bins_non_missing_
    )
    np.testing.assert_array_equal(federated.transform(X), reference.transform(X))


class _Counting(ClientColumns):
    """A client that counts the bisection rounds it answers."""

    def __init__(self, X):
        super().__init__(X)
        self.rounds = 0

    def answer(self, query):
        self.rounds += query["kind"] == "counts at most"
        return super().answer(query)


def test_what_the_server_asks_and_learns_is_bounded():
    _, X = _columns(0)
    clients = [_Counting(X[:5000]), _Counting(X[5000:])]
    summary = clients[0].answer({"kind": "bin summary", "max_bins": 255})
    # Distinct values only for features with at most max_bins of them.
    assert summary["distinct"][1].tolist() == list(range(10))
    assert summary["distinct"][0] is None and summary["distinct"][8] is None
    federated_bin_mapper(clients)
    # One bisection for all the features binned by percentiles: at most 64
    # rounds (float64 keys), one message per client and round.
    assert 0 < clients[0].rounds <= 64
    assert clients[0].rounds == clients[1].rounds


def test_a_client_without_values_of_a_feature_still_counts():
    _, X = _columns(1)
    empty = X[:50].copy()
    empty[:, 0] = np.nan  # this client has no value of feature 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = BinMapper(n_bins=256).fit(np.vstack([empty, X[50:]]))
    federated = federated_bin_mapper([ClientColumns(empty), ClientColumns(X[50:])])
    for ours, theirs in zip(
        federated.bin_thresholds_, reference.bin_thresholds_, strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("n_clients", [1, 4])
def test_a_federated_fit_without_pooling_a_row_is_scikit_learns(n_clients):
    data = make_federated_classification(
        5000, n_clients=n_clients, n_features=6, random_state=2
    )
    X = data.data.copy()
    X[::29, 1] = np.nan
    reference = HistGradientBoostingClassifier(
        max_iter=20, early_stopping=False, random_state=0
    ).fit(X, data.target)
    parts = [np.flatnonzero(data.clients == k) for k in np.unique(data.clients)]
    bin_mapper = federated_bin_mapper([ClientColumns(X[rows]) for rows in parts])
    clients = [
        BoostingClient(bin_mapper.transform(X[rows]), data.target[rows])
        for rows in parts
    ]
    baseline, predictors = boost(
        clients,
        bin_mapper=bin_mapper,
        is_categorical=np.zeros(6, np.uint8),
        monotonic_cst=np.zeros(6, np.int8),
        interaction_cst=None,
        max_iter=20,
        learning_rate=0.1,
        max_leaf_nodes=31,
        max_depth=None,
        min_samples_leaf=20,
        l2_regularization=0.0,
        max_features=1.0,
        feature_rng=np.random.default_rng(0),
    )
    assert baseline == reference._baseline_prediction[0, 0]
    for ours, theirs in zip(predictors, reference._predictors, strict=True):
        np.testing.assert_array_equal(ours[0].nodes, theirs[0].nodes)


def test_few_values_per_client_but_many_in_all_take_percentiles():
    # Each client sends its ~86 distinct values; their union has 256, one
    # more than max_bins: scikit-learn then cuts at percentiles, not
    # midpoints, and so must the federation.
    rng = np.random.default_rng(5)
    values = rng.integers(0, 256, 6000).astype(float)
    X = values[:, None]
    reference = BinMapper(n_bins=256).fit(X)
    clients = [ClientColumns(X[values % 3 == k]) for k in range(3)]
    assert all(
        client.answer({"kind": "bin summary", "max_bins": 255})["distinct"][0]
        is not None
        for client in clients
    )
    federated = federated_bin_mapper(clients)
    np.testing.assert_array_equal(
        federated.bin_thresholds_[0], reference.bin_thresholds_[0]
    )


@pytest.mark.parametrize(
    "column",
    [
        [0.0, np.inf] * 3,  # few values, one infinite: clipped to 1e300
        [0.0, 1e301],  # a midpoint above 1e300: clipped
        [1 + 2.220446049250313e-16 * k for k in (1, 2, 3)] + [5.0],  # equal means
        [-5e-324, 0.0, 5e-324],  # subnormals
        [0.0, 1.0, 2.0, np.inf, np.inf],  # percentiles next to +inf
        [-np.inf, -np.inf, 0.0, 1.0, 2.0],  # and -inf before
    ],
    ids=["inf", "above-1e300", "duplicate-midpoints", "subnormal", "+inf", "-inf"],
)
@pytest.mark.parametrize("n_bins", [3, 17, 256])
def test_edge_cases_bin_as_scikit_learn_bins_them(column, n_bins):
    X = np.asarray(column, dtype=np.float64)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = BinMapper(n_bins=n_bins).fit(X)
    for parts in ([X], [X[::2], X[1::2]]):
        federated = federated_bin_mapper(
            [ClientColumns(part) for part in parts], n_bins=n_bins
        )
        np.testing.assert_array_equal(
            federated.bin_thresholds_[0], reference.bin_thresholds_[0]
        )
        np.testing.assert_array_equal(federated.transform(X), reference.transform(X))


@pytest.mark.parametrize("seed", range(30))
def test_small_columns_bin_as_scikit_learn_bins_them(seed):
    # numpy's percentile index arithmetic at small n, with infinities.
    rng = np.random.default_rng(seed)
    n = int(rng.choice([2, 3, 4, 5, 17, 18, 40, 255, 256, 257, 600]))
    n_bins = int(rng.choice([3, 17, 256]))
    with np.errstate(over="ignore"):  # some draws times 1e308 are inf
        X = rng.normal(size=(n, 2)) * np.array([1.0, 1e308])
    X[rng.random(n) < 0.1, 0] = np.inf
    X[rng.random(n) < 0.1, 1] = -np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = BinMapper(n_bins=n_bins).fit(X)
    ids = rng.integers(0, 3, n)
    federated = federated_bin_mapper(
        [ClientColumns(X[ids == k]) for k in range(3)], n_bins=n_bins
    )
    for ours, theirs in zip(
        federated.bin_thresholds_, reference.bin_thresholds_, strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(federated.transform(X), reference.transform(X))


@pytest.mark.parametrize("n_bins", [2, 257, 3.0, True])
def test_n_bins_outside_scikit_learn_s_range_is_refused(n_bins):
    with pytest.raises(ValueError, match="n_bins must be an integer from 3 to 256"):
        federated_bin_mapper([ClientColumns(np.zeros((4, 1)))], n_bins=n_bins)


def test_counts_and_weights_at_pivots_of_features_in_any_order():
    # Pivots of several features interleaved, one feature without values:
    # each answer is its own feature's count (weight) at or below the pivot.
    X = np.array([[1.0, np.nan], [2.0, np.nan], [3.0, np.nan]])
    columns = ClientColumns(X, np.array([1.0, 2.0, 3.0]))
    query = {
        "features": np.array([1, 0, 0, 1, 0]),
        "pivots": np.array([5.0, 1.5, 0.0, 0.0, 3.0]),
    }
    counts = columns.answer({**query, "kind": "counts at most"})["counts"]
    np.testing.assert_array_equal(counts, [0, 1, 0, 0, 3])
    weights = columns.answer({**query, "kind": "weight at most"})["weights"]
    np.testing.assert_array_equal(weights, [0.0, 1.0, 0.0, 0.0, 6.0])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("split", ["small", "mixed"])
def test_clients_of_few_values_are_asked_no_pivot(weighted, split):
    # A client with at most max_bins distinct values of every feature sends
    # its counts (and weights) at each: the server answers its pivots, so
    # small clients cost no bisection round, and the edges are the pooled
    # ones. Mixed: two large clients are still asked.
    rng, X = _columns(2)
    n = X.shape[0]
    weight = rng.integers(1, 4, n).astype(float) if weighted else None
    if split == "small":
        ids = np.arange(n) % max(n // 120, 2)
    else:
        ids = np.where(np.arange(n) < n // 2, np.arange(n) % 2, 2 + np.arange(n) % 90)
    parts = [np.flatnonzero(ids == k) for k in np.unique(ids)]

    class Counting(ClientColumns):
        asked = 0

        def answer(self, query):
            self.asked += query["kind"] != "bin summary"
            return super().answer(query)

    clients = [
        Counting(X[rows], None if weight is None else weight[rows]) for rows in parts
    ]
    federated = federated_bin_mapper(clients, weighted=weighted)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = BinMapper(n_bins=256).fit(X, sample_weight=weight)
    for ours, theirs in zip(
        federated.bin_thresholds_, reference.bin_thresholds_, strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)
    small = [c for c, rows in zip(clients, parts, strict=True) if rows.size <= 255]
    assert small and all(c.asked == 0 for c in small)
    large = [c for c, rows in zip(clients, parts, strict=True) if rows.size > 255]
    assert all(c.asked > 0 for c in large) and (split == "mixed") == bool(large)


def test_counts_at_values_sent_as_whole_floats_are_pooled():
    # The gate admits whole numbers of any numeric dtype as counts: the
    # server pools them as integers (no crash, the same edges).
    _, X = _columns(3)

    class Floats(ClientColumns):
        def answer(self, query):
            answer = super().answer(query)
            if query["kind"] == "bin summary":
                answer["at_most"] = [
                    None if a is None else a.astype(float) for a in answer["at_most"]
                ]
            return answer

    ids = np.arange(X.shape[0]) % max(X.shape[0] // 100, 2)
    clients = [Floats(X[ids == k]) for k in np.unique(ids)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = BinMapper(n_bins=256).fit(X)
    federated = federated_bin_mapper(clients)
    for ours, theirs in zip(
        federated.bin_thresholds_, reference.bin_thresholds_, strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)


def test_every_asked_client_failing_leaves_the_clients_answered_for():
    # Under "skip", the large clients (the only ones asked pivots) both
    # fail: the small ones, whose counts the server holds, still make the
    # edges, those of their own rows.
    _, X = _columns(4)
    n = X.shape[0]
    ids = np.where(np.arange(n) < n // 2, np.arange(n) % 2, 2 + np.arange(n) % 90)
    parts = [np.flatnonzero(ids == k) for k in np.unique(ids)]

    class Gone(ClientColumns):
        def answer(self, query):
            if query["kind"] == "counts at most":
                raise ConnectionError("the site went away")
            return super().answer(query)

    clients = [
        (Gone if k < 2 else ClientColumns)(X[rows]) for k, rows in enumerate(parts)
    ]
    gate = ReplyGate("skip")
    federated = federated_bin_mapper(
        TreeChannel(in_process(clients), len(clients), gate=gate)
    )
    assert gate.left_out == {0, 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        reference = BinMapper(n_bins=256).fit(X[n // 2 :])
    for ours, theirs in zip(
        federated.bin_thresholds_, reference.bin_thresholds_, strict=True
    ):
        np.testing.assert_array_equal(ours, theirs)
