"""A tree client held to its own earlier answers (issue 46), on both backends.

Each lie here passes every rule that looks at one answer alone but
contradicts what the same client answered before, or what the server
asked: its rows per label in ``describe`` against ``prepare`` (no
sampler); with rows of weight 1, its label sums in ``start`` against the
rows per label it prepared; validation rows where the federation has no
early stopping. The
fit stops naming the client and the query, or, with
``on_client_error="skip"``, goes on without it; the same on Flower, whose
nodes answer with the same client code.
"""

import re

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from skfedida.datasets import make_federated_classification
from skfedida.ensemble import FairHistGradientBoostingClassifier
from skfedida.ensemble._boosting import Losses
from skfedida.federated import FederatedEstimator
from skfedida.federated._tree_client import TreeFederationClient
from skfedida.federated._tree_server import median_should_stop

#: Client 2's rows: the liar is the client of this many training rows.
SIZES = (500, 600, 700)


@pytest.fixture(scope="module")
def data():
    data = make_federated_classification(
        sum(SIZES), n_clients=3, n_features=4, random_state=4
    )
    data.clients = np.repeat(np.arange(3), SIZES)
    # Few distinct values: bin edges without a bisection (a faster test).
    data.data = np.round(data.data, 1)
    return data


def _swapped_counts(query, out):
    return {**out, "class_counts": np.asarray(out["class_counts"])[::-1].copy()}


def _all_positive(query, out):
    n = float(out["n"])
    return {**out, "label_sums": np.array([n, n])}


def _none_positive(query, out):
    return {**out, "label_sums": np.array([0.0, float(out["n"])])}


def _held_out(query, out):
    # Validation rows the federation, without early stopping, has none of.
    return {**out, "n": out["n"] - 10, "n_val": 10}


LIES = {
    "encode's validation rows without early stopping": ("encode", _held_out, {}),
    "describe's rows per label swapped": ("describe", _swapped_counts, {}),
    "prepare's rows per label swapped, class weights on": (
        "prepare",
        _swapped_counts,
        {"class_weight": "balanced"},
    ),
    "start's label sums all positive": ("start", _all_positive, {}),
    "start's label sums none positive": ("start", _none_positive, {}),
}
#: The query whose answer the server finds contradicted, and its words.
FOUND = {
    "encode": ("encode", "disagree with the federation's early stopping"),
    "describe": ("prepare", "it described"),
    "prepare": ("prepare", "it described"),
    "start": ("start", "it prepared"),
}


def _lying(monkeypatch, kind, lie):
    original = TreeFederationClient.answer

    def answer(self, query):
        out = original(self, query)
        if query["kind"] == kind and self.y.shape[0] == SIZES[2]:
            out = lie(query, dict(out))
        return out

    monkeypatch.setattr(TreeFederationClient, "answer", answer)


def _federation(**params):
    trees = FairHistGradientBoostingClassifier(
        max_iter=2, early_stopping=False, random_state=0, **params
    )
    return FederatedEstimator(trees, random_state=0)


def _on_flower(federation, data):
    pytest.importorskip("flwr")
    from skfedida.flower import make_client_app, make_server_app, run_in_process

    def load(context):
        rows = data.clients == context.node_config["partition-id"]
        return {"X": data.data[rows], "y": data.target[rows]}

    return run_in_process(
        make_server_app(federation),
        make_client_app(federation, load),
        num_partitions=3,
    )


def _fit(federation, data, backend):
    if backend == "flower":
        return _on_flower(federation, data)
    return clone(federation).fit(data.data, data.target, clients=data.clients)


@pytest.mark.parametrize("backend", ["in-process", "flower"])
@pytest.mark.parametrize("case", sorted(LIES))
def test_a_client_contradicting_itself_is_named(data, monkeypatch, case, backend):
    kind, lie, params = LIES[case]
    found, words = FOUND[kind]
    _lying(monkeypatch, kind, lie)
    with pytest.raises(
        RuntimeError, match=f"Client 2.* failed the tree query {found!r}"
    ) as error:
        _fit(_federation(**params), data, backend)
    assert words in str(error.value)


@pytest.mark.parametrize("case", sorted(LIES))
def test_a_client_contradicting_itself_is_left_out_with_skip(data, monkeypatch, case):
    kind, lie, params = LIES[case]
    _lying(monkeypatch, kind, lie)
    federation = _federation(**params).set_params(on_client_error="skip")
    # Ids that are not the clients' positions: the record names the id.
    ids = np.array(["north", "south", "west"])[data.clients]
    fitted = federation.fit(data.data, data.target, clients=ids)
    skipped = [r for r in fitted.history_ if r.get("stage")]
    assert [r["client"] for r in skipped] == ["west"]
    assert fitted.client_sizes_[2] == 0
    assert FOUND[kind][1] in skipped[0]["skipped"]


# -- what the clients must share ------------------------------------------------
#
# Columns, dtypes, which features are categorical and the kind of each
# feature's categories: one client's differing answer (a careless node or a
# lie) is that client's fault when the others agree, named with the column,
# and left out under "skip"; never numpy's TypeError from mixing categories.


@pytest.fixture(scope="module")
def frame(data):
    X = pd.DataFrame(data.data, columns=[f"x{j}" for j in range(4)])
    labels = np.array(["a", "b", "c"], dtype=object)
    X["kind"] = pd.Categorical(labels[np.arange(len(X)) % 3])
    return X


def _numbered_categories(query, out):
    return {**out, "categories": [np.arange(len(out["categories"][0]))]}


def _mixed_categories(query, out):
    return {**out, "categories": [np.array(["a", 1, "c"], dtype=object)]}


def _no_categorical_feature(query, out):
    flags = np.zeros_like(np.asarray(out["is_categorical"]))
    return {**out, "is_categorical": flags, "categories": []}


def _other_dtypes(query, out):
    return {**out, "dtypes": ["float64"] * len(out["dtypes"])}


SHARED = {
    "categories of numbers among strings": (
        "prepare",
        _numbered_categories,
        r"its categories of column 'kind' are numbers where Client 0.*'s are strings",
    ),
    "categories mixing numbers and strings": (
        "prepare",
        _mixed_categories,
        "categorical feature 0's categories mix numbers and strings",
    ),
    "no categorical feature": (
        "prepare",
        _no_categorical_feature,
        r"it reads columns \[\] as categorical where Client 0.* reads \['kind'\]",
    ),
    "other dtypes": (
        "describe",
        _other_dtypes,
        r"other columns or dtypes than Client 0.*'s \(x0: float64",
    ),
}


def _fit_frame(federation, data, frame, backend, clients=None):
    if backend == "in-process":
        clients = data.clients if clients is None else clients
        return clone(federation).fit(frame, data.target, clients=clients)
    pytest.importorskip("flwr")
    from skfedida.flower import make_client_app, make_server_app, run_in_process

    def load(context):
        rows = data.clients == context.node_config["partition-id"]
        return {"X": frame[rows], "y": data.target[rows]}

    return run_in_process(
        make_server_app(federation),
        make_client_app(federation, load),
        num_partitions=3,
    )


@pytest.mark.parametrize("backend", ["in-process", "flower"])
@pytest.mark.parametrize("case", sorted(SHARED))
def test_a_client_differing_from_the_others_is_named(
    data, frame, monkeypatch, case, backend
):
    kind, lie, words = SHARED[case]
    _lying(monkeypatch, kind, lie)
    with pytest.raises(
        RuntimeError, match=f"Client 2.* failed the tree query {kind!r}"
    ) as error:
        _fit_frame(_federation(), data, frame, backend)
    assert re.search(words, str(error.value))


@pytest.mark.parametrize("case", sorted(SHARED))
def test_a_client_differing_from_the_others_is_left_out_with_skip(
    data, frame, monkeypatch, case
):
    kind, lie, words = SHARED[case]
    _lying(monkeypatch, kind, lie)
    federation = _federation().set_params(on_client_error="skip")
    fitted = _fit_frame(federation, data, frame, "in-process")
    skipped = [r for r in fitted.history_ if r.get("stage")]
    assert [r["client"] for r in skipped] == [2]
    assert re.search(words, skipped[0]["skipped"])
    # The fit of the two others alone.
    kept = data.clients < 2
    honest = clone(_federation()).fit(
        frame[kept], data.target[kept], clients=data.clients[kept]
    )
    np.testing.assert_array_equal(
        fitted.predict_proba(frame), honest.predict_proba(frame)
    )


# -- early stopping: what no check can see --------------------------------------


def _rising_validation_loss(monkeypatch):
    """Client 2 reports a validation loss 20% higher every tree."""
    original = TreeFederationClient.answer

    def answer(self, query):
        out = original(self, query)
        if (
            query["kind"] in ("init", "apply")
            and self.y.shape[0] == SIZES[2]
            and len(out.get("val_loss", []))
        ):
            self.lies = getattr(self, "lies", 0) + 1
            loss = np.array(out["val_loss"], dtype=float)
            loss[0] *= 1 + 0.2 * self.lies
            out = {**out, "val_loss": loss}
        return out

    monkeypatch.setattr(TreeFederationClient, "answer", answer)


def _stopping(aggregation):
    trees = FairHistGradientBoostingClassifier(
        max_iter=40,
        early_stopping=True,
        n_iter_no_change=5,
        validation_fraction=0.2,
        random_state=0,
    )
    return FederatedEstimator(
        trees, random_state=0, early_stopping_aggregation=aggregation
    )


def test_the_median_rule_keeps_one_lying_client_from_ending_the_fit(data, monkeypatch):
    honest = {
        aggregation: _fit(_stopping(aggregation), data, "in-process").estimator_
        for aggregation in ("mean", "median")
    }
    # Honest clients: the rules stop at nearby trees (the median ignores
    # the clients' sizes).
    assert (honest["mean"].n_iter_, honest["median"].n_iter_) == (35, 32)
    _rising_validation_loss(monkeypatch)
    # Through the pooled loss one client of three ends the fit at 5 trees;
    # the median of the clients' improvements is the smaller of the two
    # honest ones, and goes on to 16.
    lied = _fit(_stopping("mean"), data, "in-process").estimator_
    assert lied.n_iter_ == 5
    robust = _fit(_stopping("median"), data, "in-process")
    assert robust.estimator_.n_iter_ == 16
    on_flower = _fit(_stopping("median"), data, "flower")
    np.testing.assert_array_equal(
        on_flower.predict_proba(data.data), robust.predict_proba(data.data)
    )


def test_the_median_rule_is_scikit_learns_for_one_client():
    # One client: the median of one improvement is the pooled one, and the
    # rule is scikit-learn's _should_stop on the negated losses.
    rng = np.random.default_rng(0)
    model = FairHistGradientBoostingClassifier(n_iter_no_change=3, tol=1e-3)
    for _ in range(200):
        losses = np.cumsum(rng.uniform(-0.01, 0.003, size=rng.integers(1, 9))) + 1
        history = [{0: Losses(None, float(loss))} for loss in losses]
        assert median_should_stop(history, "validation", 3, 1e-3) == model._should_stop(
            list(-losses)
        )


def test_the_median_rule_reads_the_clients_that_answered_both_trees():
    def train_loss(value):
        return Losses(value, None)

    improving = [
        {0: train_loss(1.0), 1: train_loss(1.0)},
        {0: train_loss(0.5), 1: train_loss(0.5)},
    ]
    assert not median_should_stop(improving, "train", 1, 0.0)
    # A client that joined later, or left, has no improvement to count.
    joined = [{0: train_loss(1.0)}, {0: train_loss(1.0), 1: train_loss(0.1)}]
    assert median_should_stop(joined, "train", 1, 0.0)
    # Two of three flat: the third's gain is not the median's.
    one_gains = [
        {0: train_loss(1.0), 1: train_loss(1.0), 2: train_loss(1.0)},
        {0: train_loss(1.0), 1: train_loss(1.0), 2: train_loss(0.0)},
    ]
    assert median_should_stop(one_gains, "train", 1, 0.0)


def test_early_stopping_aggregation_is_refused_off_the_trees():
    from skfedida.linear_model import FairPenaltyLogisticRegression

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), early_stopping_aggregation="median"
    )
    with pytest.raises(ValueError, match="early_stopping_aggregation='median'"):
        federation.fit(np.zeros((4, 1)), [0, 1, 0, 1], clients=[0, 0, 1, 1])


# -- bin edges: the others' scale -----------------------------------------------


def _shifted_columns(monkeypatch, shift, feature=0):
    """Client 2 answers every bin-edge query for its values plus ``shift``."""
    original = TreeFederationClient.answer

    def answer(self, query):
        if (
            query["kind"] in ("bin summary", "counts at most", "weight at most")
            and self.y.shape[0] == SIZES[2]
            and not getattr(self, "shifted", False)
        ):
            self.shifted = True
            self.columns.columns[feature] = self.columns.columns[feature] + shift
        return original(self, query)

    monkeypatch.setattr(TreeFederationClient, "answer", answer)


@pytest.mark.parametrize("backend", ["in-process", "flower"])
def test_bin_summaries_far_beyond_the_others_range_are_named(
    data, monkeypatch, backend
):
    # The others' values of feature 0 lie in about [-4, 4]: a client whose
    # values all sit 1000 higher (consistent in every count it sends)
    # would make the top edge 1000 and more.
    _shifted_columns(monkeypatch, 1000.0)
    with pytest.raises(
        RuntimeError,
        match=r"Client 2.* failed the tree query 'bin summary'.*feature 0's values "
        r"reach 10\d\d\.\d+, more than 100 times the scale",
    ):
        _fit(_federation(), data, backend)


def test_bin_summaries_far_beyond_are_left_out_with_skip(data, monkeypatch):
    _shifted_columns(monkeypatch, 1000.0)
    federation = _federation().set_params(on_client_error="skip")
    fitted = federation.fit(data.data, data.target, clients=data.clients)
    skipped = [r for r in fitted.history_ if r.get("stage")]
    assert [(r["client"], r["stage"]) for r in skipped] == [
        (2, "tree query 'bin summary'")
    ]
    edges = fitted.estimator_._bin_mapper.bin_thresholds_[0]
    assert edges.max() < np.abs(data.data[:, 0]).max()


def test_a_shift_within_the_rule_and_infinite_values_pass(data, monkeypatch):
    # What the rule leaves: a shift of a few widths passes (its bound is
    # 100 times the others' scale); an honest client's infinities (binned by
    # scikit-learn) are compared by none.
    X = data.data.copy()
    X[data.clients == 2, 1] = np.where(
        np.arange(SIZES[2]) % 50 == 0, np.inf, X[data.clients == 2, 1]
    )
    _shifted_columns(monkeypatch, 20.0)
    fitted = clone(_federation()).fit(X, data.target, clients=data.clients)
    assert not [r for r in fitted.history_ if r.get("stage")]
    assert fitted.estimator_._bin_mapper.bin_thresholds_[0].max() > 15


def test_two_clients_that_differ_stop_the_fit_naming_both(data, frame, monkeypatch):
    # No strict majority: the server cannot tell the careless client from the
    # honest one, so "skip" cannot choose either.
    from skfedida._gate._checks import NoConsensus

    _lying(monkeypatch, "describe", _other_dtypes)
    two = data.clients > 0
    federation = _federation().set_params(on_client_error="skip")
    with pytest.raises(NoConsensus, match=r"Client 1 says .*; Client 2 says"):
        federation.fit(frame[two], data.target[two], clients=data.clients[two])


def test_the_median_rule_goes_on_across_a_warm_start(data):
    # As scikit-learn's scores: 30 trees, then a warm start to 40 stops
    # where one fit of 40 does, two trees on (not n_iter_no_change + 1
    # trees after the start, as a history begun anew would).
    whole = _fit(_stopping("median"), data, "in-process")
    warm = _stopping("median").set_params(warm_start=True, estimator__max_iter=30)
    warm.fit(data.data, data.target, clients=data.clients)
    assert warm.estimator_.n_iter_ == 30
    warm.set_params(estimator__max_iter=40)
    warm.fit(data.data, data.target, clients=data.clients)
    assert warm.estimator_.n_iter_ == whole.estimator_.n_iter_ == 32
