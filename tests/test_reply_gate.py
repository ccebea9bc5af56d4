"""One gate for every kind of reply a server reads, on both backends.

Issue 31, part 2: initialisation replies (class counts), score histograms
(group thresholds), preprocessing statistics and FairFed reports were used
unchecked. A hostile client is partition 2 of three, rewriting its replies
on Flower (``RewritingClientApp``) or, in-process, the library's own client
code patched to answer falsely. Every listed case and variants of our own
(infinity, 2.5 rows, bool and object arrays, extra and missing keys, a count
above the declared rows) must be a failure naming the client, and with
``on_client_error="skip"`` the client is left out: the result is the honest
federation's without it.

Before this change each case below was accepted (the issue's measurements),
or failed with an error naming no client (the histogram of the wrong shape,
the NaN sums): none of these tests passes without the gate.
"""

import json

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.utils._param_validation import InvalidParameterError

pytest.importorskip("flwr")

from _helpers import (
    hostile_on_flower,
    partition_loader,
    small_federation,
)
from flwr.app import ArrayRecord

from skfedida._codec import decode, encode
from skfedida._gate._checks import (
    count_array,
    parse_groups,
    squares_problem,
    sum_within_extremes_problem,
)
from skfedida._gate._ledger import ClientLedger
from skfedida._gate._rows import (
    fairness_report_problem,
    histogram_reply_problem,
    initialisation_reply_problem,
)
from skfedida.datasets import make_federated_classification
from skfedida.federated import FairFed, QFedAvg
from skfedida.federated._aggregation import class_prior
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.flower._protocol import _HISTOGRAMS, _INIT, _STATISTICS
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.postprocessing import FederatedThresholdOptimizer
from skfedida.preprocessing import (
    FederatedMinMaxScaler,
    FederatedOneHotEncoder,
    FederatedSimpleImputer,
    FederatedStandardScaler,
)

N_CLIENTS = 3
HOSTILE = 2


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(900, n_clients=N_CLIENTS, random_state=0)


def _honest_rows(data):
    return data.clients != HOSTILE


def _fails_then_is_skipped(data, rewrite, message_type, stage, message, **kwargs):
    """Raise: an error naming client 2; skip: a run without it, recorded."""
    post = kwargs.pop("postprocessor", None)
    with pytest.raises(
        RuntimeError,
        match=rf"Client 2 \(node \d+\) failed the {stage}.*cannot be used: .*{message}",
    ):
        hostile_on_flower(small_federation(**kwargs), data, rewrite, message_type, post)
    skipping = small_federation(on_client_error="skip", **kwargs)
    if post is not None:
        post = FederatedThresholdOptimizer(skipping, random_state=0)
    return hostile_on_flower(skipping, data, rewrite, message_type, post)


def _skipped(records, stage):
    return [r for r in records if r.get("stage", "").startswith(stage)]


# -- initialisation: class counts -> class_prior_ ------------------------------


def _class_counts(change):
    def rewrite(content):
        counts = list(content["config"]["class-counts"])
        content["config"]["class-counts"] = change(counts)

    return rewrite


INIT_REWRITES = {
    "[1, 10**7] (the issue's)": (lambda c: [1, 10**7], "more than the 300 rows"),
    "negative counts": (lambda c: [-5, c[0] + c[1] + 5], "negative counts"),
    "2.5 rows": (lambda c: [c[0] - 0.5, c[1] + 0.5], "not whole numbers"),
    "one count more than the rows": (lambda c: [c[0], c[1] + 1], "add up to 301"),
    "a third class": (lambda c: [*c, 0], r"shape \(3,\)"),
    "text": (lambda c: ["223", "77"], "dtype <U"),
    "booleans": (lambda c: [True, False], "dtype bool"),
}


@pytest.mark.parametrize("case", list(INIT_REWRITES))
def test_hostile_class_counts_on_flower(data, case):
    change, message = INIT_REWRITES[case]
    fitted = _fails_then_is_skipped(
        data, _class_counts(change), _INIT, "initialisation", message
    )
    # Left out of class_prior_: the honest clients' prevalence.
    honest = data.target[_honest_rows(data)]
    np.testing.assert_allclose(fitted.class_prior_, np.bincount(honest) / honest.size)
    (record,) = _skipped(fitted.history_, "initialisation")
    assert record["round"] == 0 and record["client"] == HOSTILE


def test_missing_class_counts_and_a_bad_initial_model_on_flower(data):
    def drop(content):
        del content["config"]["class-counts"]

    with pytest.raises(RuntimeError, match=r"Client 2 .*initialisation.*malformed"):
        hostile_on_flower(small_federation(), data, drop, _INIT)

    def infinite_model(content):
        arrays = content["arrays"].to_numpy_ndarrays()
        content["arrays"] = ArrayRecord([arrays[0] + np.inf, arrays[1]])

    with pytest.raises(RuntimeError, match=r"Client 2 .*initialisation.*infinity"):
        hostile_on_flower(small_federation(), data, infinite_model, _INIT)


def _patched_counts(monkeypatch, change):
    from skfedida.federated import _estimator

    real = _estimator.class_counts
    calls = []

    def counts(y, classes):
        calls.append(None)
        answer = real(y, classes)
        return change(answer) if len(calls) % N_CLIENTS == 0 else answer

    monkeypatch.setattr(_estimator, "class_counts", counts)


@pytest.mark.parametrize("case", list(INIT_REWRITES))
def test_hostile_class_counts_in_process(data, monkeypatch, case):
    change, message = INIT_REWRITES[case]
    _patched_counts(monkeypatch, lambda c: np.asarray(change(c.tolist())))
    X, y = data.data, data.target
    fit = {"clients": data.clients, "sensitive_features": data.sensitive}
    with pytest.raises(
        RuntimeError, match=rf"Client 2 failed the initialisation.*{message}"
    ):
        small_federation().fit(X, y, **fit)
    fitted = small_federation(on_client_error="skip").fit(X, y, **fit)
    honest = y[_honest_rows(data)]
    np.testing.assert_allclose(fitted.class_prior_, np.bincount(honest) / honest.size)
    assert _skipped(fitted.history_, "initialisation")[0]["client"] == HOSTILE


def test_swapped_labels_move_the_prior_by_at_most_the_client_share(data, monkeypatch):
    # What no check can see: client 2 reports its negatives as positives,
    # with the right total. It moves the prevalence by at most its share of
    # the rows (1/3); the median of the clients' shares keeps it within the
    # honest clients' range.
    X, y, clients = data.data, data.target, data.clients
    fit = {"clients": clients, "sensitive_features": data.sensitive}
    honest = small_federation().fit(X, y, **fit).class_prior_
    _patched_counts(monkeypatch, lambda c: c[::-1].copy())
    swapped = small_federation().fit(X, y, **fit).class_prior_
    share = np.mean(clients == HOSTILE)
    shift = abs(swapped[1] - honest[1])
    assert 0 < shift <= share
    np.testing.assert_allclose(honest[1], 222 / 900)
    np.testing.assert_allclose(swapped[1], 368 / 900)
    median = small_federation(prior_aggregation="median").fit(X, y, **fit)
    rates = [np.mean(y[clients == k]) for k in range(N_CLIENTS) if k != HOSTILE]
    assert min(rates) <= median.class_prior_[1] <= max(rates)


def test_prior_aggregation_median_is_the_same_on_flower(data):
    federation = small_federation(prior_aggregation="median")
    fitted = run_in_process(
        make_server_app(federation),
        make_client_app(federation, partition_loader(data)),
        num_partitions=N_CLIENTS,
    )
    local = small_federation(prior_aggregation="median").fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )
    np.testing.assert_array_equal(fitted.class_prior_, local.class_prior_)
    rates = [np.mean(data.target[data.clients == k]) for k in range(N_CLIENTS)]
    np.testing.assert_allclose(fitted.class_prior_[1], np.median(rates))
    with pytest.raises(InvalidParameterError, match="prior_aggregation"):
        small_federation(prior_aggregation="max").fit(data.data, data.target)


# -- score histograms -> group thresholds ----------------------------------------


def _histogram(change=None, labels=None):
    def rewrite(content):
        if change is not None:
            (counts,) = content["arrays"].to_numpy_ndarrays()
            content["arrays"] = ArrayRecord([np.asarray(a) for a in change(counts)])
        if labels is not None:
            content["config"]["group-labels"] = labels(
                json.loads(content["config"]["group-labels"])
            )

    return rewrite


def _group_z(counts):
    # An invented group "Z" with 1e6 positives in the top bin.
    extra = np.zeros((1, *counts.shape[1:]))
    extra[0, 1, -1] = 1e6
    return [np.concatenate([counts, extra])]


HISTOGRAM_REWRITES = {
    "negated counts": (_histogram(lambda c: [-c]), "negative counts"),
    "counts x 1e6": (_histogram(lambda c: [c * 1e6]), "more than the 300 rows"),
    "a flattened histogram": (
        _histogram(lambda c: [np.where(np.arange(c.size) == 7, np.nan, c.ravel())]),
        "shape",
    ),
    "a NaN bin in place": (
        _histogram(lambda c: [c + np.where(c == c.max(), np.nan, 0.0)]),
        "NaN or infinity",
    ),
    "an infinite bin": (
        _histogram(lambda c: [c + np.where(c == c.max(), np.inf, 0.0)]),
        "NaN or infinity",
    ),
    "group Z with 1e6 positives": (
        _histogram(
            _group_z,
            lambda labels: json.dumps([*labels, ["Z"] * len(labels[0])]),
        ),
        "more than the 300 rows",
    ),
    "a wrong shape": (_histogram(lambda c: [c[:, :, :-1]]), "shape"),
    "2.5 rows": (_histogram(lambda c: [c + 0.5 * (c == c.max())]), "whole"),
    "bool counts": (_histogram(lambda c: [c > 0]), "dtype bool"),
    "two arrays": (_histogram(lambda c: [c, c]), "2 arrays"),
    "one row more": (
        _histogram(lambda c: [c + (np.arange(c.size).reshape(c.shape) == 0)]),
        "301 rows",
    ),
    # A client that leaves rows out of its histogram hides them from the
    # thresholds: it must count every row it declared, no fewer.
    "one row fewer": (
        _histogram(lambda c: [c - (np.arange(c.size).reshape(c.shape) == c.argmax())]),
        "299 rows",
    ),
    "a group of one value": (
        _histogram(labels=lambda labels: json.dumps([[v[0]] for v in labels])),
        "2 values",
    ),
    "unreadable groups": (_histogram(labels=lambda labels: "{"), "cannot be read"),
}


@pytest.mark.parametrize("case", list(HISTOGRAM_REWRITES))
def test_hostile_histograms_on_flower(data, case):
    rewrite, message = HISTOGRAM_REWRITES[case]
    post = FederatedThresholdOptimizer(small_federation(), random_state=0)
    fitted = _fails_then_is_skipped(
        data, rewrite, _HISTOGRAMS, "histogram query", message, postprocessor=post
    )
    assert [r["client"] for r in fitted.history_] == [HOSTILE]
    # The thresholds come from the honest clients' counts alone.
    assert not fitted.client_histograms_[HOSTILE].any()
    np.testing.assert_array_equal(
        fitted.histograms_, fitted.client_histograms_[:HOSTILE].sum(axis=0)
    )
    assert fitted.histograms_.sum() == np.sum(_honest_rows(data))


def test_histograms_must_agree_with_the_class_counts_on_flower(data):
    # Without held-out or evaluation rows a client evaluates on its training
    # rows: its histogram's labels must be its class counts. Moving rows from
    # negative to positive keeps the total and is caught.
    def relabel(counts):
        moved = counts.copy()
        g = int(np.argmax(moved[:, 0].sum(axis=1)))
        j = int(np.argmax(moved[g, 0]))
        moved[g, 0, j] -= 1
        moved[g, 1, j] += 1
        return [moved]

    post = FederatedThresholdOptimizer(small_federation(), random_state=0)
    with pytest.raises(RuntimeError, match=r"Client 2 .*histogram.*earlier reply"):
        hostile_on_flower(
            small_federation(), data, _histogram(relabel), _HISTOGRAMS, post
        )


HISTOGRAM_CHANGES = {
    "negated counts": (lambda c: -c, "negative counts"),
    "counts x 1e6": (lambda c: c * 1e6, "more than the 300 rows"),
    "a NaN bin": (lambda c: c + np.where(c == c.max(), np.nan, 0.0), "NaN"),
    "a wrong shape": (lambda c: c[:, :, :-1], "shape"),
    "2.5 rows": (lambda c: c + 0.5 * (c == c.max()), "whole"),
    "bool counts": (lambda c: c > 0, "dtype bool"),
    "object counts": (lambda c: c.astype(object), "dtype object"),
}


@pytest.mark.parametrize("case", list(HISTOGRAM_CHANGES))
def test_hostile_histograms_in_process(data, monkeypatch, case):
    from skfedida.postprocessing import _threshold_optimizer

    change, message = HISTOGRAM_CHANGES[case]
    real = _threshold_optimizer.client_histogram
    calls = []

    def negated_for_client_2(*args):
        calls.append(None)
        counts = real(*args)
        return change(counts) if len(calls) % N_CLIENTS == 0 else counts

    fit = {"clients": data.clients, "sensitive_features": data.sensitive}
    honest = FederatedThresholdOptimizer(small_federation(), random_state=0).fit(
        data.data, data.target, **fit
    )
    monkeypatch.setattr(_threshold_optimizer, "client_histogram", negated_for_client_2)
    with pytest.raises(
        RuntimeError, match=rf"Client 2 failed the histogram query.*{message}"
    ):
        FederatedThresholdOptimizer(small_federation(), random_state=0).fit(
            data.data, data.target, **fit
        )
    post = FederatedThresholdOptimizer(
        small_federation(on_client_error="skip"), random_state=0
    ).fit(data.data, data.target, **fit)
    assert [r["client"] for r in post.history_] == [HOSTILE]
    np.testing.assert_array_equal(
        post.histograms_, honest.client_histograms_[:HOSTILE].sum(axis=0)
    )
    assert honest.history_ == []
    # One set of thresholds per client: the one left out gets the federation's.
    per_client = FederatedThresholdOptimizer(
        small_federation(on_client_error="skip"), per_client=True, random_state=0
    ).fit(data.data, data.target, **fit)
    federation = per_client._solve(per_client.histograms_)[0]
    np.testing.assert_array_equal(
        per_client.rules_["thresholds"][HOSTILE], federation["thresholds"]
    )
    assert np.isnan(per_client.constrained_rates_[HOSTILE]).all()


# -- preprocessing statistics ------------------------------------------------------


def _pipeline_federation(**options):
    return small_federation(
        estimator=Pipeline(
            [
                ("impute", FederatedSimpleImputer()),
                ("scale", FederatedStandardScaler()),
                ("model", FairPenaltyLogisticRegression(fairness=1.0)),
            ]
        ),
        **options,
    )


def _statistics(transformer, statistic, change):
    def rewrite(content):
        name, answer = decode(content["config"]["answer"])
        if name == transformer and statistic in answer:
            answer = change(dict(answer))
            content["config"]["answer"] = encode((name, answer))

    return rewrite


def _set(key, value):
    def change(answer):
        answer[key] = value(answer[key]) if callable(value) else value
        return answer

    return change


SCALER, IMPUTER = "FederatedStandardScaler", "FederatedSimpleImputer"
STATISTICS_REWRITES = {
    "a negative n (the issue's)": (
        _statistics(SCALER, "sum", _set("n", lambda n: -n)),
        "negative counts",
    ),
    "squares x 1e12 (the issue's)": (
        _statistics(
            SCALER, "shifted_squares", _set("shifted_squares", lambda q: q * 1e12)
        ),
        "sum of squared deviations",
    ),
    "imputer sums + 1e6 (the issue's)": (
        _statistics(IMPUTER, "sum", _set("sum", lambda s: s + 1e6)),
        "lies outside",
    ),
    "NaN sums (the issue's)": (
        _statistics(SCALER, "sum", _set("sum", lambda s: s * np.nan)),
        "holds NaN",
    ),
    "infinite imputer sums": (
        _statistics(IMPUTER, "sum", _set("sum", lambda s: s + np.inf)),
        "infinity",
    ),
    "2.5 values": (
        _statistics(IMPUTER, "sum", _set("n", lambda n: n + 0.5)),
        "whole",
    ),
    "more values than rows": (
        _statistics(SCALER, "sum", _set("n", lambda n: n + 1)),
        "more than the 300 rows",
    ),
    "an extra key": (
        _statistics(SCALER, "sum", _set("rows", np.arange(300.0))),
        r"unexpected \['rows'\]",
    ),
    "a missing key": (
        _statistics(SCALER, "shifted_sum", lambda a: {"n": a["n"]}),
        "missing",
    ),
    "an object array": (
        _statistics(SCALER, "sum", _set("sum", lambda s: s.astype(object))),
        "dtype object",
    ),
    "boolean flags as counts": (
        _statistics(IMPUTER, "sum", _set("n", lambda n: n > 0)),
        "dtype bool",
    ),
    "a second round that moves the sum": (
        _statistics(SCALER, "shifted_sum", _set("shifted_sum", lambda s: s + 10.0)),
        "first round's sum",
    ),
    "a wrong shape": (
        _statistics(SCALER, "sum", _set("sum", lambda s: s[:-1])),
        "shape",
    ),
    "flags disagreeing with the counts": (
        _statistics(IMPUTER, "sum", _set("any_missing", lambda m: ~m)),
        "missing-value flags",
    ),
}


@pytest.mark.parametrize("case", list(STATISTICS_REWRITES))
def test_hostile_statistics_on_flower(data, case):
    rewrite, message = STATISTICS_REWRITES[case]
    with pytest.raises(
        RuntimeError,
        match=rf"Client 2 \(node \d+\) failed the statistics query.*{message}",
    ):
        hostile_on_flower(_pipeline_federation(), data, rewrite, _STATISTICS)
    skipping = _pipeline_federation(on_client_error="skip")
    fitted = hostile_on_flower(skipping, data, rewrite, _STATISTICS)
    (record,) = _skipped(fitted.history_, "statistics")
    assert record["client"] == HOSTILE and record["round"] == 0
    # Left out of every statistics round: the preprocessing of the honest
    # clients' rows alone.
    rows = _honest_rows(data)
    imputer = FederatedSimpleImputer().fit(data.data[rows], clients=data.clients[rows])
    scaler = FederatedStandardScaler().fit(
        imputer.transform(data.data[rows]), clients=data.clients[rows]
    )
    np.testing.assert_allclose(
        fitted.estimator_.named_steps["scale"].mean_, scaler.mean_, rtol=1e-12
    )
    np.testing.assert_allclose(
        fitted.estimator_.named_steps["scale"].scale_, scaler.scale_, rtol=1e-12
    )


def _patched_answers(monkeypatch, cls, change):
    real = cls._answer
    calls = []

    def answer(self, X, query):
        calls.append(None)
        result = real(self, X, query)
        return change(dict(result)) if len(calls) % N_CLIENTS == 0 else result

    monkeypatch.setattr(cls, "_answer", answer)


@pytest.mark.parametrize(
    ("cls", "change", "message"),
    [
        (FederatedStandardScaler, _set("n", lambda n: -n), "negative counts"),
        (
            FederatedStandardScaler,
            lambda a: (
                _set("shifted_squares", lambda q: q * 1e12)(a)
                if "shifted_squares" in a
                else a
            ),
            "squared deviations",
        ),
        (FederatedSimpleImputer, _set("sum", lambda s: s + 1e6), "lies outside"),
        (FederatedMinMaxScaler, _set("min", lambda m: m + np.inf), "infinity"),
        (FederatedMinMaxScaler, _set("n", 10**6), "more than the 300 rows"),
        (
            FederatedOneHotEncoder,
            _set("counts", lambda c: [x * 2 for x in c]),
            "more than|add up",
        ),
        (
            FederatedOneHotEncoder,
            _set("categories", lambda c: [np.array([["a"]], dtype=object)] * len(c)),
            "not a 1-D array",
        ),
    ],
)
def test_hostile_statistics_in_process_name_the_client(
    data, monkeypatch, cls, change, message
):
    X = data.data
    if cls is FederatedOneHotEncoder:
        X = np.round(X[:, :2]).astype(int)
    _patched_answers(monkeypatch, cls, change)
    with pytest.raises(
        RuntimeError, match=rf"Client 2 failed the statistics.*{message}"
    ):
        cls().fit(X, clients=data.clients)


def test_a_pipeline_federation_skips_a_hostile_client_in_process(data, monkeypatch):
    _patched_answers(monkeypatch, FederatedStandardScaler, _set("n", lambda n: -n))
    X, y, clients = data.data, data.target, data.clients
    fit = {"clients": clients, "sensitive_features": data.sensitive}
    with pytest.raises(RuntimeError, match=r"Client 2 failed the statistics"):
        _pipeline_federation().fit(X, y, **fit)
    fitted = _pipeline_federation(on_client_error="skip").fit(X, y, **fit)
    (record,) = _skipped(fitted.history_, "statistics")
    assert record["client"] == HOSTILE
    rows = _honest_rows(data)
    monkeypatch.undo()
    imputer = FederatedSimpleImputer().fit(X[rows], clients=clients[rows])
    scaler = FederatedStandardScaler().fit(
        imputer.transform(X[rows]), clients=clients[rows]
    )
    np.testing.assert_allclose(
        fitted.estimator_.named_steps["scale"].var_, scaler.var_, rtol=1e-12
    )


# -- FairFed reports ----------------------------------------------------------------


def _report(change):
    def rewrite(content):
        arrays = content["fairness"].to_numpy_ndarrays()
        content["fairness"] = ArrayRecord([np.asarray(a) for a in change(arrays)])

    return rewrite


REPORT_REWRITES = {
    "negated rows": (lambda a: [-a[0], *a[1:]], "negative counts"),
    "rows x 1e6": (lambda a: [a[0] * 1e6, *a[1:]], "more than the"),
    "NaN decisions": (lambda a: [a[0], a[1] * np.nan, *a[2:]], "NaN"),
    "more decisions than rows": (lambda a: [a[0], a[0] + 1, *a[2:]], "more decisions"),
    # Rows left out of one group move that group's rates: every declared row
    # must be counted.
    "one row fewer": (
        lambda a: [a[0] - (np.arange(a[0].size) == a[0].argmax()), *a[1:]],
        r"counts \d+ rows; it declared",
    ),
    "a missing array": (lambda a: a[:3], "3 arrays"),
}


@pytest.mark.parametrize("case", list(REPORT_REWRITES))
def test_hostile_fairfed_reports_on_flower(data, case):
    change, message = REPORT_REWRITES[case]
    options = {"aggregation": FairFed(metric="dpd"), "n_rounds": 2}
    federation = small_federation(**options)
    with pytest.raises(
        RuntimeError, match=rf"Client 2 \(node \d+\) failed in round 1.*{message}"
    ):
        hostile_on_flower(federation, data, _report(change), "train")
    fitted = hostile_on_flower(
        small_federation(on_client_error="skip", **options),
        data,
        _report(change),
        "train",
    )
    skipped = [r for r in fitted.history_ if r.get("skipped")]
    assert {r["client"] for r in skipped} == {HOSTILE}


def test_fairfed_reports_must_count_the_same_rows_every_round(data):
    # Round 2's positives differ from round 1's on the same rows.
    def moved(arrays):
        n, selected, n_positive, true_positive = arrays
        n_positive = n_positive.copy()
        n_positive[np.argmax(n - n_positive)] += 1
        return [n, selected, n_positive, true_positive]

    federation = small_federation(aggregation=FairFed(metric="dpd"), n_rounds=2)
    change = _report(moved)

    def rewrite(content):
        # Client 2's second training reply is round 2's.
        rewrite.calls += 1
        if rewrite.calls == 2:
            change(content)

    rewrite.calls = 0
    with pytest.raises(RuntimeError, match=r"Client 2 .*round 2.*earlier reply"):
        hostile_on_flower(federation, data, rewrite, "train")


def test_hostile_fairfed_reports_in_process(data, monkeypatch):
    from skfedida.federated import _client
    from skfedida.federated._client import _client_seeds

    seeds = _client_seeds(0, N_CLIENTS)
    real = _client._fairness_report

    def negated_for_client_2(estimator, rows, classes):
        report = real(estimator, rows, classes)
        if estimator.random_state == int(seeds[HOSTILE]):
            report = {**report, "n": -report["n"]}
        return report

    monkeypatch.setattr(_client, "_fairness_report", negated_for_client_2)
    fit = {"clients": data.clients, "sensitive_features": data.sensitive}
    with pytest.raises(RuntimeError, match=r"Client 2 failed in round 1.*negative"):
        small_federation(aggregation=FairFed()).fit(data.data, data.target, **fit)
    fitted = small_federation(aggregation=FairFed(), on_client_error="skip").fit(
        data.data, data.target, **fit
    )
    assert {r["client"] for r in fitted.history_ if r.get("skipped")} == {HOSTILE}


# -- evaluation replies: the declared evaluation rows ----------------------------------


@pytest.mark.parametrize("change", [1, -1], ids=["one more", "one fewer"])
def test_evaluation_rows_must_be_the_declared_ones(data, change):
    # num-examples weighs the client's metrics in federated_metrics_: more
    # rows, or fewer, than it declared would move its weight.
    def other_rows(content):
        rows = int(content["metrics"]["num-examples"])
        content["metrics"]["num-examples"] = rows + change

    with pytest.raises(RuntimeError, match=r"Client 2 .*evaluation.*declared"):
        hostile_on_flower(
            small_federation(validation_fraction=0.3), data, other_rows, "evaluate"
        )


# -- the rules themselves ---------------------------------------------------------


def test_the_rules_hold_for_variants():
    assert count_array([1, 2], "c", shape=(2,), at_most=3)[1] is None
    for values, message in [
        ([1, np.inf], "NaN or infinity"),
        ([1, 2.5], "whole"),
        (np.array([1, 2], dtype=object), "dtype object"),
        ([True, False], "dtype bool"),
        (["1", "2"], "dtype <U"),
        ([1, 4], "more than the 3 rows"),
        ([-1, 2], "negative"),
        ([[1, 2]], "shape"),
    ]:
        assert message in count_array(values, "c", shape=(2,), at_most=3)[1]
    assert initialisation_reply_problem([1, 2], n_classes=2, declared_rows=3) is None
    assert "add up to 3" in initialisation_reply_problem(
        [1, 2], n_classes=2, declared_rows=4
    )
    good = np.ones((2, 2, 4))
    assert histogram_reply_problem(good, n_groups=2, n_bins=4, declared_rows=16) is None
    assert "counts 16 rows" in histogram_reply_problem(
        good, n_groups=2, n_bins=4, declared_rows=15
    )
    report = {key: np.array([2.0, 1.0]) for key in ("n", "selected")}
    report.update(n_positive=np.array([1.0, 1.0]), true_positive=np.array([1.0, 0.0]))
    assert fairness_report_problem(report, n_groups=2, declared_rows=3) is None
    assert "true positives" in fairness_report_problem(
        {**report, "true_positive": np.array([2.0, 0.0])}, n_groups=2, declared_rows=3
    )
    # True positives are positive decisions too: no more than the decisions,
    # even when there are enough positive rows.
    more_hits_than_decisions = {
        "n": np.array([2.0, 1.0]),
        "selected": np.array([1.0, 1.0]),
        "n_positive": np.array([2.0, 1.0]),
        "true_positive": np.array([2.0, 0.0]),
    }
    assert "true positives" in fairness_report_problem(
        more_hits_than_decisions, n_groups=2, declared_rows=3
    )
    assert "has ['extra', 'n'" in fairness_report_problem(
        {**report, "extra": report["n"]}, n_groups=2, declared_rows=3
    )
    # Sums within n times the extremes; squares between s**2 / n and the
    # Bhatia-Davis bound.
    values = np.array([[1.0, 2.0, 4.0]]).T
    n, total = np.array([3.0]), values.sum(axis=0)
    low, high = values.min(axis=0), values.max(axis=0)
    assert sum_within_extremes_problem(n, total, low, high, "s") is None
    assert "outside" in sum_within_extremes_problem(n, total + 9, low, high, "s")
    about = np.array([2.0])
    s, q = (values - about).sum(axis=0), ((values - about) ** 2).sum(axis=0)
    assert squares_problem(n, s, q, about, low, high, "q") is None
    assert "outside" in squares_problem(n, s, q * 10, about, low, high, "q")
    assert "outside" in squares_problem(n, s, q * 0, about, low, high, "q")
    # Groups: one value per attribute, none twice.
    config = {"group-labels": '[["a", 1], ["b", 1]]', "sensitive-names": '["s", "t"]'}
    assert parse_groups(config)[1] is None
    config["group-labels"] = '[["a", 1], ["a", 1]]'
    assert "twice" in parse_groups(config)[1]
    config["group-labels"] = '[["a", [1]]]'
    assert "2 values" in parse_groups(config)[1]
    # The ledger: a second claim about the same rows must agree.
    ledger = ClientLedger()
    assert ledger.claim(0, "train", labels=[3, 1]) is None
    assert ledger.claim(0, "train", labels=[3, 1]) is None
    assert "earlier reply" in ledger.claim(0, "train", labels=[2, 2])
    assert class_prior([[3, 1], [1, 1], [9, 1]], "median").tolist() == [0.75, 0.25]


# -- part 4: errors that name the parameter ------------------------------------------


def test_qfedavg_refuses_an_infinite_q_at_fit(data):
    federation = small_federation(aggregation=QFedAvg(q=np.inf), n_rounds=2)
    with pytest.raises(ValueError, match=r"finite q >= 0; got q=inf"):
        federation.fit(data.data, data.target, clients=data.clients)
    with pytest.raises(ValueError, match="finite q >= 0"):
        make_server_app(federation)


def test_threshold_optimizer_says_to_wrap_a_plain_classifier(data):
    post = FederatedThresholdOptimizer(LogisticRegression())
    with pytest.raises(TypeError, match=r"FederatedEstimator.*prefit=True"):
        post.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )


def test_threshold_optimizer_bounds_grid_size(data):
    post = FederatedThresholdOptimizer(small_federation(), grid_size=10**9)
    with pytest.raises(InvalidParameterError, match="'grid_size' parameter"):
        post.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )


def test_a_target_delta_that_guarantees_nothing_is_refused_on_flower(data):
    # In-process fit refuses delta >= 1/n_clients; on Flower epsilon read 0.0.
    from skfedida.federated import DifferentialPrivacy

    federation = small_federation(
        dp=DifferentialPrivacy(
            noise_multiplier=1.0, clipping_norm=1.0, target_delta=0.9, noise_seed=0
        )
    )
    with pytest.raises(ValueError, match="target_delta"):
        hostile_on_flower(federation, data, None, None)
