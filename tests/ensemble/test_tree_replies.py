"""The reply gate on the trees' queries: every broken answer is caught and named.

One client of a federation answers one kind of query wrongly (a count off
by one, a NaN, a gradient beyond what its weights allow, a feature's
histogram that disagrees with the others, a partition that loses a row...).
With ``on_client_error="raise"`` the fit stops with an error naming the
client, the query and what was wrong; with ``"skip"`` the client is left
out and the fit goes on. Oracle for the skip: a client failing its first
answer leaves exactly the fit of the others, bit for bit.
"""

import numpy as np
import pytest

from skfedida._compat import HISTOGRAM_DTYPE
from skfedida._gate._policy import ReplyGate
from skfedida._gate._tree_histograms import histogram_problems
from skfedida._gate._tree_ledger import TreeLedger
from skfedida._gate._tree_rules import tree_reply_problem
from skfedida._groups import encode_groups
from skfedida.datasets import make_federated_classification
from skfedida.ensemble._binning import ClientColumns, federated_bin_mapper
from skfedida.ensemble._boosting import BoostingClient, TreeChannel, boost, in_process
from skfedida.ensemble._growing import BinLayout


@pytest.fixture(scope="module")
def data():
    data = make_federated_classification(
        2000, n_clients=3, n_features=4, random_state=3, group_shift=1.0
    )
    data.codes = encode_groups(data.sensitive, n_samples=len(data.target))
    data.parts = [np.flatnonzero(data.clients == k) for k in range(3)]
    data.mapper = federated_bin_mapper(
        [ClientColumns(data.data[p]) for p in data.parts]
    )
    return data


class _Corrupt:
    """A client that changes its answers of one kind, from the ``after``-th on."""

    def __init__(self, client, kind, change, after=0):
        self.client, self.kind, self.change, self.after = client, kind, change, after
        self.seen = 0

    def answer(self, query):
        answer = self.client.answer(query)
        if query["kind"] == self.kind:
            self.seen += 1
            if self.seen > self.after:
                answer = (
                    self.change(answer, self.client.tree.layout)
                    if getattr(self.change, "reads_layout", False)
                    else self.change(answer)
                )
        return answer


def _clients(data, fairness=1.0):
    return [
        BoostingClient(
            data.mapper.transform(data.data[p]),
            data.target[p],
            None,
            data.codes.codes[p] if fairness else None,
        )
        for p in data.parts
    ]


def _boost(data, clients, gate=None, fairness=1.0, score=False, **params):
    # A wrapped client (corrupting, recording) declares its inner rows.
    channel = TreeChannel(
        in_process(clients),
        len(clients),
        gate=gate,
        rows=[getattr(c, "client", c).n_samples for c in clients],
        unit_weights=True,
    )
    n_features = data.data.shape[1]
    options = {
        "interaction_cst": None,
        "max_iter": 4,
        "learning_rate": 0.1,
        "max_leaf_nodes": 15,
        "max_depth": None,
        "min_samples_leaf": 20,
        "l2_regularization": 0.0,
        "max_features": 1.0,
        **params,
    }
    return boost(
        channel,
        bin_mapper=data.mapper,
        is_categorical=np.zeros(n_features, np.uint8),
        monotonic_cst=np.zeros(n_features, np.int8),
        feature_rng=np.random.default_rng(0),
        fairness=fairness,
        n_groups=data.codes.n_groups,
        score=score,
        **options,
    )


def _histograms(change):
    # The first histogram of a "grow" answer changed as (features x bins),
    # then sent compactly again (an answer of splits only is left as it is).
    def corrupt(answer, layout):
        if not len(answer["histograms"]):
            return answer
        histograms = answer["histograms"].copy()
        full = layout.expand(histograms[0])
        change(full)
        histograms[0] = layout.compact(full)
        return {**answer, "histograms": histograms}

    corrupt.reads_layout = True
    return corrupt


def _children(change):
    # The first partition of a "grow" answer changed.
    def corrupt(answer):
        if not len(answer["splits"]):
            return answer
        return {**answer, "splits": change(answer["splits"].copy())}

    return corrupt


def _lost_row(children):
    children[0, 0] -= 1
    return children


class _MovingRow:
    """A client that moves a row between two children no histogram is asked of.

    Its own rows of the node are kept, and no histogram of its shows the
    move: only the federation's count of the children, from the histograms
    the split was found on, does.
    """

    def __init__(self, client):
        self.client, self.moved = client, 0

    def answer(self, query):
        answer = self.client.answer(query)
        if query["kind"] != "grow":
            return answer
        asked = {node["node"] for node in query["histograms"]}
        for j, split in enumerate(query["splits"]):
            if not {split["left"], split["right"]} & asked and answer["splits"][j, 1]:
                children = answer["splits"].copy()
                children[j] += (1, -1)
                self.moved += 1
                return {**answer, "splits": children}
        return answer


def _set(field, value, where=(0, 0)):
    def change(histograms):
        histograms[field][where] = value

    return change


def _add(field, value, where=(0, 0)):
    def change(histograms):
        histograms[field][where] += value

    return change


def _row_dropped(histograms):
    # A row left out of a bin of several (no bin emptied, so no stray sums).
    counts = histograms["count"][0]
    counts[np.flatnonzero(counts >= 2)[0]] -= 1


def _emptied_bin(histograms):
    # A bin's rows counted in the next non-empty bin, every total kept.
    counts = histograms["count"][0]
    first, second = np.flatnonzero(counts)[:2]
    counts[second] += counts[first]
    counts[first] = 0


def _moved_between_leaves(answer):
    # A row of the first leaf's fullest cell claimed by the last leaf: every
    # cell's total kept.
    cells = answer["cells"].copy()
    cell = int(np.argmax(cells[0]))
    cells[0, cell] -= 1.0
    cells[-1, cell] += 1.0
    return {"cells": cells}


BROKEN = {
    "a histogram counts a row too many": (
        "grow",
        _histograms(_add("count", 1)),
        "counts",
    ),
    "a histogram counts a row too few": (
        "grow",
        _histograms(_row_dropped),
        "counts",
    ),
    "a histogram holds NaN": (
        "grow",
        _histograms(_set("sum_gradients", np.nan)),
        "NaN or infinity",
    ),
    "a negative hessian": (
        "grow",
        _histograms(_set("sum_hessians", -1.0)),
        "negative hessian",
    ),
    "a gradient beyond its weights": (
        "grow",
        _histograms(_add("sum_gradients", 1e6)),
        "beyond",
    ),
    "one feature's gradients drift": (
        "grow",
        _histograms(_add("sum_gradients", 1e-3, where=(1, 3))),
        "differ between features",
    ),
    "histograms of the wrong dtype": (
        "grow",
        lambda a: {**a, "histograms": a["histograms"]["count"].astype(float)},
        "histogram records",
    ),
    "histograms of one feature": (
        "grow",
        lambda a: {**a, "histograms": a["histograms"][:, :1]},
        "the bins that can hold rows) are needed",
    ),
    "missing-value flags of one feature": (
        "start",
        lambda a: {**a, "has_missing": a["has_missing"][:1]},
        "one per feature",
    ),
    "a partition loses a row": (
        "grow",
        _children(_lost_row),
        "children hold",
    ),
    "a partition count is not whole": (
        "grow",
        _children(lambda children: children + 0.5),
        "pairs of counts",
    ),
    "its rows are not those declared": (
        "start",
        lambda a: {**a, "n": a["n"] - 1},
        "it declared",
    ),
    "its positive weight exceeds its weight": (
        "start",
        lambda a: {**a, "label_sums": a["label_sums"] * [1e3, 1.0]},
        "label sums",
    ),
    "its cell weights do not add up": (
        "start",
        lambda a: {**a, "cell_weight": a["cell_weight"] * 2},
        "cell weights",
    ),
    "a leaf's cell weights do not add up": (
        "leaf cells",
        lambda a: {"cells": a["cells"] * 1.5},
        "do not add up",
    ),
    "an extra key": (
        "grow",
        lambda a: {**a, "rows": [1, 2]},
        "not a grow answer",
    ),
    "a bin of no rows keeps its sums": (
        "grow",
        _histograms(_emptied_bin),
        "where it counts no rows",
    ),
    "score sums shifted before the first tree": (
        "init",
        lambda a: {**a, "score_sums": a["score_sums"] + 50.0},
        "the server recounts",
    ),
    "score sums shifted after a tree": (
        "apply",
        lambda a: {**a, "score_sums": a["score_sums"] + 50.0},
        "the server recounts",
    ),
    "cell weights moved between leaves": (
        "leaf cells",
        _moved_between_leaves,
        "its splits put",
    ),
    "label sums that are not counts of rows of weight 1": (
        "start",
        lambda a: {
            **a,
            "label_sums": a["label_sums"] * 2,
            "cell_weight": a["cell_weight"] * 2,
        },
        "weigh 1 each",
    ),
    "score sums of the wrong shape": (
        "apply",
        lambda a: {**a, "score_sums": a["score_sums"][:-1]},
        "score sums",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_answer_stops_the_fit_naming_the_client(data, case):
    kind, change, words = BROKEN[case]
    clients = _clients(data)
    clients[1] = _Corrupt(clients[1], kind, change)
    with pytest.raises(
        RuntimeError, match=f"Client 1 failed the tree query {kind!r}"
    ) as error:
        _boost(data, clients)
    assert words in str(error.value)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_answer_is_left_out_with_skip(data, case):
    kind, change, _ = BROKEN[case]
    clients = _clients(data)
    clients[1] = _Corrupt(
        clients[1], kind, change, after=0 if kind in ("start", "init") else 1
    )
    gate = ReplyGate("skip")
    _, predictors = _boost(data, clients, gate=gate)
    assert len(predictors) == 4 and gate.left_out == {1}
    assert [r["client"] for r in gate.records] == [1]
    assert gate.records[0]["stage"] == f"tree query {kind!r}"


@pytest.mark.parametrize("fairness", [0.0, 1.0])
def test_a_client_left_out_at_the_start_leaves_the_others_fit(data, fairness):
    clients = _clients(data, fairness)
    clients[2] = _Corrupt(clients[2], "start", lambda a: {**a, "n": -1})
    gate = ReplyGate("skip")
    baseline, predictors = _boost(data, clients, gate=gate, fairness=fairness)
    others = _clients(data, fairness)[:2]
    expected_baseline, expected = _boost(data, others, fairness=fairness)
    assert baseline == expected_baseline
    for ours, theirs in zip(predictors, expected, strict=True):
        np.testing.assert_array_equal(ours[0].nodes, theirs[0].nodes)


def test_a_client_whose_answer_raises_is_named_with_the_cause(data):
    clients = _clients(data)

    def fail(answer):
        raise MemoryError("no room for the histograms")

    clients[0] = _Corrupt(clients[0], "grow", fail)
    with pytest.raises(RuntimeError, match="Client 0 failed the tree query") as error:
        _boost(data, clients)
    assert isinstance(error.value.__cause__, MemoryError)


@pytest.mark.parametrize("policy", ["raise", "skip"])
def test_a_partition_that_disagrees_with_the_histograms_stops_the_fit(data, policy):
    # A row moved from one child to the other keeps the client's own total:
    # only the federation's count of the child, known from the histograms
    # the split was found on, shows it, and it names no client.
    clients = _clients(data)
    clients[1] = _MovingRow(clients[1])
    with pytest.raises(RuntimeError, match="disagrees with its histograms"):
        _boost(data, clients, gate=ReplyGate(policy))
    assert clients[1].moved == 1


def test_a_tree_grown_again_without_a_client_draws_the_same_features(data):
    # A client left out midway: the tree is grown again from the feature
    # stream's state before it, so the fit is reproducible.
    results = []
    for _ in range(2):
        clients = _clients(data)
        clients[1] = _Corrupt(
            clients[1], "grow", _histograms(_add("count", 1)), after=3
        )
        results.append(_boost(data, clients, gate=ReplyGate("skip")))
    for ours, theirs in zip(results[0][1], results[1][1], strict=True):
        np.testing.assert_array_equal(ours[0].nodes, theirs[0].nodes)


def test_bin_summaries_and_counts_are_checked():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    ledger = TreeLedger(rows=600)
    query = {"kind": "bin summary", "max_bins": 255}
    good = ClientColumns(X).answer(query)
    assert tree_reply_problem(query, good, ledger) is None
    unsorted = {**good, "distinct": [good["distinct"][0], None]}
    unsorted["distinct"][0] = None
    assert tree_reply_problem(query, unsorted, ledger) is None  # 600 > 255 values
    few = ClientColumns(X[:10]).answer(query)
    shuffled = {**few, "distinct": [few["distinct"][0][::-1], few["distinct"][1]]}
    assert "not sorted" in tree_reply_problem(query, shuffled, TreeLedger(10))
    hidden = {**few, "distinct": [None, few["distinct"][1]]}
    assert "were not sent" in tree_reply_problem(query, hidden, TreeLedger(10))
    # Its counts at its values, from which the server answers its pivots:
    # rising by at least 1 a value to its count of values.
    assert few["at_most"][0].tolist() == list(range(1, 11))
    for lie in ([2] * 10, list(range(2, 12)), list(range(10))):
        lying = {**few, "at_most": [np.array(lie), few["at_most"][1]]}
        assert "do not rise" in tree_reply_problem(query, lying, TreeLedger(10))
    orphan = {**good, "at_most": [np.arange(1, 4), None]}
    assert "not its values" in tree_reply_problem(query, orphan, ledger)
    weighted = {**query, "weighted": True}
    heavy = ClientColumns(X[:10], weight=np.arange(1.0, 11.0)).answer(weighted)
    assert tree_reply_problem(weighted, heavy, TreeLedger(10)) is None
    light = {**heavy, "weight_at_most": [heavy["weight_at_most"][0] / 2, None]}
    assert "weights at its values" in tree_reply_problem(
        weighted, light, TreeLedger(10)
    )
    too_many = {**good, "n": good["n"] + 1}
    assert "more than the 600 rows" in tree_reply_problem(query, too_many, ledger)
    ledger.record(query, good)
    ask = {
        "kind": "counts at most",
        "features": np.array([0, 0]),
        "pivots": np.array([-0.5, 0.5]),
    }
    counts = ClientColumns(X).answer(ask)
    assert tree_reply_problem(ask, counts, ledger) is None
    ledger.record(ask, counts)
    falling = {"counts": counts["counts"][::-1]}
    assert "fall as the pivot rises" in tree_reply_problem(ask, falling, ledger)
    later = {
        "kind": "counts at most",
        "features": np.array([0]),
        "pivots": np.array([0.0]),
    }
    beyond = {"counts": np.array([counts["counts"][1] + 1])}
    assert "fall as the pivot rises" in tree_reply_problem(later, beyond, ledger)
    outside = {
        "kind": "counts at most",
        "features": np.array([1]),
        "pivots": np.array([1e9]),
    }
    assert "outside its range" in tree_reply_problem(
        outside, {"counts": np.array([3])}, ledger
    )


def test_a_pivot_asked_again_must_get_the_same_count():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 1))
    ledger = TreeLedger(rows=600)
    summary = {"kind": "bin summary", "max_bins": 255}
    ledger.record(summary, ClientColumns(X).answer(summary))
    ask = {"kind": "counts at most", "features": np.array([0]), "pivots": [0.25]}
    honest = ClientColumns(X).answer(ask)
    ledger.record(ask, honest)
    assert tree_reply_problem(ask, honest, ledger) is None
    # Another count at the same pivot, with nothing asked between to fall.
    other = {"counts": honest["counts"] + 1}
    assert "two counts of feature 0's values at one pivot" in tree_reply_problem(
        ask, other, ledger
    )


def test_a_pivot_asked_again_must_get_the_same_weight():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 1))
    weight = rng.uniform(0.5, 2.0, size=600)
    columns, ledger = ClientColumns(X, weight), TreeLedger(rows=600)
    summary = {"kind": "bin summary", "max_bins": 255, "weighted": True}
    ledger.record(summary, columns.answer(summary))
    ask = {"kind": "weight at most", "features": np.array([0]), "pivots": [0.25]}
    honest = columns.answer(ask)
    assert tree_reply_problem(ask, honest, ledger) is None
    ledger.record(ask, honest)
    assert tree_reply_problem(ask, honest, ledger) is None
    other = {"weights": honest["weights"] * 1.01}
    assert "two weights of feature 0's values at one pivot" in tree_reply_problem(
        ask, other, ledger
    )


def test_the_ledger_keeps_two_pivots_per_count_however_many_rounds():
    # A client of 8 rows asked at 2,000 pivots over 20 rounds: its ledger
    # keeps the ends of each run of equal counts (at most 2 x 9), and every
    # check decides as it would on all of them.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 1))
    columns, ledger = ClientColumns(X), TreeLedger(rows=8)
    summary = {"kind": "bin summary", "max_bins": 255}
    ledger.record(summary, columns.answer(summary))
    for _ in range(20):
        pivots = rng.normal(size=100)
        ask = {
            "kind": "counts at most",
            "features": np.zeros(100, int),
            "pivots": pivots,
        }
        answer = columns.answer(ask)
        assert tree_reply_problem(ask, answer, ledger) is None
        ledger.record(ask, answer)
    merged = ledger.pivots
    features, kept, counts = merged.features, merged.pivots, merged.values
    assert np.all(features == 0)
    assert kept.size <= 2 * 9
    assert np.all(np.diff(counts) >= 0)
    # A lie between the two kept ends of a run, inside the client's range,
    # is still seen.
    i = next(
        i
        for i in range(kept.size - 1)
        if counts[i] == counts[i + 1] and 0 < counts[i] < 8 and kept[i] < kept[i + 1]
    )
    inner = {
        "kind": "counts at most",
        "features": np.array([0]),
        "pivots": [(kept[i] + kept[i + 1]) / 2],
    }
    assert tree_reply_problem(inner, {"counts": counts[i : i + 1]}, ledger) is None
    lie = {"counts": counts[i : i + 1] + 1}
    assert "fall as the pivot rises" in tree_reply_problem(inner, lie, ledger)


def test_a_corrupt_summary_stops_the_bin_edges():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(900, 2))
    clients = [ClientColumns(X[:450]), ClientColumns(X[450:])]
    clients[0] = _Corrupt(
        clients[0], "counts at most", lambda a: {"counts": a["counts"] + 10**6}
    )
    channel = TreeChannel(in_process(clients), 2, rows=[450, 450])
    with pytest.raises(
        RuntimeError, match="Client 0 failed the tree query 'counts at most'"
    ):
        federated_bin_mapper(channel)


def test_the_federation_s_sum_is_checked_and_the_client_named():
    rng = np.random.default_rng(2)
    answers = {}
    for k in range(3):
        h = np.zeros((3, 8), HISTOGRAM_DTYPE)
        h["count"] = 2
        h["sum_gradients"] = np.tile(rng.normal(size=8), (3, 1))
        h["sum_hessians"] = 0.1
        answers[k] = {"histograms": h}
    expected = {k: (16, 100.0, 100.0) for k in range(3)}
    problems, total = histogram_problems({"features": None}, answers, expected)
    assert problems == {0: None, 1: None, 2: None}
    np.testing.assert_array_equal(total["count"], 6)
    answers[2]["histograms"]["count"][1, 0] += 1
    problems, _ = histogram_problems({"features": None}, answers, expected)
    assert problems[0] is None and problems[1] is None
    assert "feature 1 counts 17 rows" in problems[2]
    # Only the features the query asked for are read (interaction constraints).
    problems, _ = histogram_problems({"features": np.array([0, 2])}, answers, expected)
    assert all(problem is None for problem in problems.values())


def test_a_lone_client_s_wrong_shape_is_named_not_run(data):
    # The server's own (features x bins), not a client's, is the shape: one
    # client alone cannot make the grower read a histogram of another shape.
    clients = _clients(data)[:1]
    clients[0] = _Corrupt(
        clients[0], "grow", lambda a: {**a, "histograms": a["histograms"][:, :1]}
    )
    with pytest.raises(RuntimeError, match="Client 0 failed the tree query"):
        _boost(data, clients, fairness=0.0, max_iter=2)


def test_features_outside_a_constraint_are_sent_as_zeros(data):
    # scikit-learn's builder leaves them as it found the memory: never sent.
    sent = []

    class Recording:
        def __init__(self, client):
            self.client = client

        def answer(self, query):
            answer = self.client.answer(query)
            for asked, histograms in zip(
                query.get("histograms", ()), answer.get("histograms", ()), strict=True
            ):
                if asked["features"] is not None:
                    sent.append((asked["features"], histograms.copy()))
            return answer

    clients = [Recording(c) for c in _clients(data, fairness=0.0)]
    n_features = data.data.shape[1]
    _boost(data, clients, fairness=0.0, max_iter=3, interaction_cst=[{0, 1}, {2, 3}])
    assert sent
    for features, histograms in sent:
        others = np.setdiff1d(np.arange(n_features), features)
        assert not histograms[others].view(np.uint8).any()


@pytest.mark.parametrize("features", [None, [2, 0]])
@pytest.mark.parametrize("broken", [None, "count", "sum_gradients", "stray"])
def test_compact_histograms_are_checked_and_summed_as_full_ones(features, broken):
    # A histogram travels as the bins that can hold rows: the same problems
    # and, expanded, the same sum as its (features x bins) form.
    rng = np.random.default_rng(4)
    layout = BinLayout(6, [2, 5, 1])
    full = {}
    for k in range(3):
        h = np.zeros(layout.full_shape, HISTOGRAM_DTYPE)
        flat = h.reshape(-1)
        ends = np.append(layout.offsets[1:], layout.size)
        for start, stop in zip(layout.offsets, ends, strict=True):
            counts = rng.multinomial(40, np.ones(stop - start) / (stop - start))
            flat["count"][layout.bins[start:stop]] = counts
            flat["sum_hessians"][layout.bins[start:stop]] = counts * 0.25
            flat["sum_gradients"][layout.bins[start:stop]] = counts * 0.5
        full[k] = h
    if broken == "count":
        full[1]["count"][2, 0] += 1
    elif broken == "sum_gradients":
        full[1]["sum_gradients"][0, 1] += 5.0
    elif broken == "stray":
        empty = np.flatnonzero(full[1]["count"][1] == 0)
        if not empty.size:
            full[1]["count"][1, 0] -= 1
            full[1]["count"][1, 1] += 1
            empty = np.array([0])
        full[1]["sum_gradients"][1, empty[0]] = 0.1
    expected = {k: (40, 1e3, 1e3) for k in range(3)}
    query = {"features": features}
    problems, total = histogram_problems(
        query, {k: {"histograms": h} for k, h in full.items()}, expected
    )
    compact_problems, compact_total = histogram_problems(
        query,
        {k: {"histograms": layout.compact(h)} for k, h in full.items()},
        expected,
        shape=(layout.size,),
        layout=layout,
    )
    assert compact_problems == problems
    # (Feature 1's bins are not read when only features 2 and 0 are computed.)
    assert (problems[1] is None) == (
        broken is None or (broken == "stray" and features is not None)
    )
    np.testing.assert_array_equal(
        layout.expand(compact_total).view(np.uint8), total.view(np.uint8)
    )


class _FailingOnce:
    """A client whose answer raises at the ``at``-th round carrying splits."""

    def __init__(self, client, at=3):
        self.client, self.at, self.seen = client, at, 0

    def answer(self, query):
        if query["kind"] == "grow" and query["splits"]:
            self.seen += 1
            if self.seen == self.at:
                raise ConnectionError("the site went away")
        return self.client.answer(query)


@pytest.mark.parametrize("policy", ["raise", "skip"])
def test_a_client_failing_mid_tree_is_named_or_left_out(data, policy):
    # Its rows are in the split's histograms, so the federation's count of
    # the children cannot be held against the others' partitions: it is
    # named (raise), or left out and the tree grown again (skip).
    clients = _clients(data)
    clients[1] = _FailingOnce(clients[1])
    gate = ReplyGate(policy)
    if policy == "raise":
        with pytest.raises(RuntimeError, match="Client 1 failed the tree query 'grow'"):
            _boost(data, clients, gate=gate)
        return
    _, predictors = _boost(data, clients, gate=gate)
    assert len(predictors) == 4 and gate.left_out == {1}


def test_children_counts_that_wrap_around_are_named(data):
    # Two counts of 2**63 add up, in 64 bits, to the node's rows.
    def wrapped(answer):
        children = answer["splits"].astype(np.uint64)
        children[0] = (2**63, 2**63 + int(children[0].sum()))
        return {**answer, "splits": children}

    clients = _clients(data)
    clients[1] = _Corrupt(clients[1], "grow", _children(lambda c: c), after=1)
    clients[1].change = lambda a: wrapped(a) if len(a["splits"]) else a
    with pytest.raises(RuntimeError, match="children hold"):
        _boost(data, clients)
