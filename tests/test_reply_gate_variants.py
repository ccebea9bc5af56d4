"""The reply gate holds for variants of issue 31's attacks (rules, not cases).

An adversarial tester found that the gate of ``test_reply_gate.py`` let
through: rows counted in a group the client never declared (FairFed
reports, histograms), self-reported extremes that widen every statistics
bound, a two-client federation where the hostile client defines the
consensus, unchecked initialisation descriptions, an unbounded imputer
``n_bins``, a discovery count cast to a negative int64, and a ClientApp
that raises aborting a run under ``on_client_error="skip"``. Each test here
failed before its fix.
"""

import json

import numpy as np
import pytest
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

pytest.importorskip("flwr")

from _helpers import (
    RewritingClientApp,
    hostile_on_flower,
    partition_loader,
    small_federation,
)
from flwr.app import ArrayRecord, MessageType

from skfedida._codec import decode, encode
from skfedida._gate._checks import NoConsensus, consensus
from skfedida._gate._rows import REPORT_KEYS
from skfedida.datasets import make_federated_classification
from skfedida.federated import FairFed
from skfedida.flower import make_client_app, make_server_app, run_in_process
from skfedida.flower._protocol import _HISTOGRAMS, _INIT, _STATISTICS
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.postprocessing import FederatedThresholdOptimizer
from skfedida.preprocessing import (
    FederatedMinMaxScaler,
    FederatedSimpleImputer,
    FederatedStandardScaler,
)

N_CLIENTS, HOSTILE = 3, 2


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(900, n_clients=N_CLIENTS, random_state=0)


# -- 1. only the groups a client declared -----------------------------------------


def _invent_group(content):
    # ff2.py: one row of a real group moved into a new group ["A", "Zed"].
    arrays = dict(
        zip(REPORT_KEYS, content["fairness"].to_numpy_ndarrays(), strict=True)
    )
    labels = json.loads(content["config"]["group-labels"])
    g = int(np.argmax(arrays["n"] - arrays["n_positive"]))
    new = {k: np.append(v.astype(float), 0.0) for k, v in arrays.items()}
    new["n"][g] -= 1
    new["n"][-1] = 1
    new["selected"][g] = min(new["selected"][g], new["n"][g])
    new["selected"][-1] = 1
    new["true_positive"][g] = min(
        new["true_positive"][g], new["selected"][g], new["n_positive"][g]
    )
    content["fairness"] = ArrayRecord([new[k] for k in REPORT_KEYS])
    content["config"]["group-labels"] = json.dumps([*labels, ["A", "Zed"]])


def test_fairfed_report_in_an_undeclared_group_fails_on_flower(data):
    options = {"aggregation": FairFed(metric="dpd"), "n_rounds": 2}
    with pytest.raises(
        RuntimeError,
        match=r"Client 2 \(node \d+\) failed in round 1.*group \['A', 'Zed'\].*"
        "did not declare",
    ):
        hostile_on_flower(
            small_federation(**options), data, _invent_group, MessageType.TRAIN
        )
    fitted = hostile_on_flower(
        small_federation(on_client_error="skip", **options),
        data,
        _invent_group,
        MessageType.TRAIN,
    )
    assert {r["client"] for r in fitted.history_ if r.get("skipped")} == {HOSTILE}


def _move_one_row(report, groups):
    # A row of the largest group counted in the next group: totals kept,
    # the same every round (the ledger's cross-round check sees nothing).
    n = report["n"].copy()
    g = int(np.argmax(n))
    n[g] -= 1
    n[(g + 1) % n.size] += 1
    positive = np.minimum(report["n_positive"], n)
    return {
        "n": n,
        "selected": np.minimum(report["selected"], n),
        "n_positive": positive,
        "true_positive": np.minimum(report["true_positive"], positive),
    }


def test_fairfed_report_against_declared_group_sizes_in_process(data, monkeypatch):
    from skfedida.federated import _client
    from skfedida.federated._client import _client_seeds

    seeds = _client_seeds(0, N_CLIENTS)
    real = _client._fairness_report

    def moved_for_client_2(estimator, rows, classes):
        report = real(estimator, rows, classes)
        if estimator.random_state == int(seeds[HOSTILE]):
            report = _move_one_row(report, None)
        return report

    monkeypatch.setattr(_client, "_fairness_report", moved_for_client_2)
    fit = {"clients": data.clients, "sensitive_features": data.sensitive}
    with pytest.raises(
        RuntimeError, match=r"Client 2 failed in round 1.*declared \d+ at init"
    ):
        small_federation(aggregation=FairFed(), n_rounds=2).fit(
            data.data, data.target, **fit
        )


def _two_rows_to_new_group(content):
    # hist2.py: two rows of group 0 counted in a new group ["A", "Other"].
    (c,) = content["arrays"].to_numpy_ndarrays()
    labels = json.loads(content["config"]["group-labels"])
    c = c.copy()
    for label in (0, 1):
        j = int(np.flatnonzero(c[0, label])[0])
        c[0, label, j] -= 1
    new = np.zeros((1, 2, c.shape[2]))
    new[0, :, c.shape[2] // 2] = 1
    content["arrays"] = ArrayRecord([np.concatenate([c, new])])
    content["config"]["group-labels"] = json.dumps([*labels, ["A", "Other"]])


def test_histogram_in_an_undeclared_group_fails_on_flower(data):
    post = FederatedThresholdOptimizer(
        small_federation(), constraints="equalized_odds", random_state=0
    )
    with pytest.raises(
        RuntimeError,
        match=r"Client 2 \(node \d+\) failed the histogram query.*"
        r"\['A', 'Other'\].*did not declare",
    ):
        hostile_on_flower(
            small_federation(), data, _two_rows_to_new_group, _HISTOGRAMS, post
        )
    skipping = small_federation(on_client_error="skip")
    post = FederatedThresholdOptimizer(
        skipping, constraints="equalized_odds", random_state=0
    )
    fitted = hostile_on_flower(
        skipping, data, _two_rows_to_new_group, _HISTOGRAMS, post
    )
    assert [r["client"] for r in fitted.history_] == [HOSTILE]
    assert len(fitted.groups_) == 4  # no invented group among the thresholds


def _scores_moved_to_the_extremes(content):
    # Every per-group, per-label total kept; every score moved to an end of
    # the grid (positives up and negatives down for group 0, the reverse for
    # the others): no check can see it.
    (c,) = content["arrays"].to_numpy_ndarrays()
    moved = np.zeros_like(c)
    for g in range(c.shape[0]):
        top, bottom = (1, 0) if g == 0 else (0, 1)
        moved[g, top, -1] = c[g, top].sum()
        moved[g, bottom, 0] = c[g, bottom].sum()
    content["arrays"] = ArrayRecord([moved])


def test_per_client_thresholds_are_the_robust_option_against_moved_scores(data):
    # Pooled, one client of three with its scores moved to the extremes gets
    # demographic-parity thresholds that select none of the honest clients'
    # rows (its own top bin meets the rate); per client, the honest clients'
    # thresholds are their own, whatever it sends.
    honest = data.clients != HOSTILE
    S = data.sensitive

    def decisions(rewrite, per_client):
        federation = small_federation(n_rounds=2)
        post = FederatedThresholdOptimizer(
            federation, per_client=per_client, random_state=0
        )
        fitted = hostile_on_flower(federation, data, rewrite, _HISTOGRAMS, post)
        return fitted.predict(data.data, sensitive_features=S, clients=data.clients)

    attacked = decisions(_scores_moved_to_the_extremes, per_client=False)
    assert attacked[honest].mean() == 0.0
    np.testing.assert_array_equal(
        decisions(_scores_moved_to_the_extremes, per_client=True)[honest],
        decisions(lambda content: None, per_client=True)[honest],
    )


def test_histogram_against_declared_group_sizes_in_process(data, monkeypatch):
    from skfedida.postprocessing import _threshold_optimizer

    real = _threshold_optimizer.client_histogram
    calls = []

    def moved_for_client_2(*args):
        calls.append(None)
        counts = real(*args)
        if len(calls) % N_CLIENTS == 0:
            counts = counts.copy()
            j = int(np.argmax(counts[0, 0]))
            counts[0, 0, j] -= 1
            counts[1, 0, j] += 1
        return counts

    monkeypatch.setattr(_threshold_optimizer, "client_histogram", moved_for_client_2)
    fit = {"clients": data.clients, "sensitive_features": data.sensitive}
    with pytest.raises(
        RuntimeError, match=r"Client 2 failed the histogram query.*declared \d+"
    ):
        FederatedThresholdOptimizer(small_federation(), random_state=0).fit(
            data.data, data.target, **fit
        )


def test_fairfed_min_group_size_bounds_a_declared_tiny_group():
    # A group of one row, declared and reported consistently, set every gap
    # to 1 and gave its client all the weight (ff2.py: {0: 0, 1: 0, 2: 1}).
    reports = []
    for k in range(3):
        report = {
            "n": np.array([100.0, 100.0, 0.0]),
            "selected": np.array([20.0, 22.0 + k, 0.0]),
            "n_positive": np.array([30.0, 30.0, 0.0]),
            "true_positive": np.array([15.0, 15.0, 0.0]),
        }
        reports.append(report)
    reports[2]["n"] = np.array([100.0, 99.0, 1.0])
    reports[2]["selected"] = np.array([20.0, 23.0, 1.0])
    parameters = [[np.array([1.0])], [np.array([1.0])], [np.array([-3.0])]]
    weights = {}
    for size in (1, 30):
        memory = {}
        FairFed(min_group_size=size).aggregate(
            parameters,
            [200, 200, 200],
            reports=reports,
            clients=[0, 1, 2],
            memory=memory,
        )
        weights[size] = memory["weights"]
    assert weights[1][2] > 0.8
    assert max(weights[30].values()) < 0.4
    with pytest.raises(ValueError, match="min_group_size"):
        small_federation(aggregation=FairFed(min_group_size=0)).fit(
            np.zeros((4, 2)), [0, 1, 0, 1]
        )


# -- 2. self-reported extremes ------------------------------------------------------


def _pipeline(scaler=FederatedStandardScaler, **options):
    return small_federation(
        Pipeline(
            [
                ("impute", FederatedSimpleImputer()),
                ("scale", scaler()),
                ("model", FairPenaltyLogisticRegression(fairness=1.0)),
            ]
        ),
        **options,
    )


def _statistics(transformer, change):
    state = {"round": 0}

    def rewrite(content):
        name, answer = decode(content["config"]["answer"])
        if name == transformer:
            state["round"] += 1
            answer = change(dict(answer), state["round"])
            content["config"]["answer"] = encode((name, answer))

    return rewrite


def _widen(answer, round_):
    if "min" in answer:
        answer["min"] = np.where(np.isnan(answer["min"]), np.nan, -1e300)
        answer["max"] = np.where(np.isnan(answer["max"]), np.nan, 1e300)
    return answer


def _widen_then(change):
    return lambda a, r: _widen(a, r) if r == 1 else change(a)


STAT_VARIANTS = {
    "scaler squares x 1e12 behind extremes of 1e300": (
        "FederatedStandardScaler",
        _widen_then(lambda a: {**a, "shifted_squares": a["shifted_squares"] * 1e12}),
        FederatedStandardScaler,
        "100 times the scale",
    ),
    "imputer sums + 1e6 behind extremes of 1e300": (
        "FederatedSimpleImputer",
        lambda a, r: {**_widen(a, r), "sum": a["sum"] + 1e6},
        FederatedStandardScaler,
        "100 times the scale",
    ),
    "imputer n * max overflows": (
        "FederatedSimpleImputer",
        lambda a, r: {
            **a,
            "max": np.full_like(a["max"], 1e306),
            "sum": np.full_like(a["sum"], 1.7e308),
        },
        FederatedStandardScaler,
        "overflow",
    ),
    "min-max scaler min = -1e6": (
        "FederatedMinMaxScaler",
        lambda a, r: {**a, "min": np.full_like(a["min"], -1e6)},
        FederatedMinMaxScaler,
        "100 times the scale",
    ),
    "min-max scaler +-1.7e308": (
        "FederatedMinMaxScaler",
        lambda a, r: {
            **a,
            "min": np.full_like(a["min"], -1.7e308),
            "max": np.full_like(a["max"], 1.7e308),
        },
        FederatedMinMaxScaler,
        "100 times the scale",
    ),
}


@pytest.fixture(scope="module")
def missing_data(data):
    X = data.data.copy()
    X[np.random.default_rng(1).random(X.shape) < 0.1] = np.nan
    return X


def _missing_loader(data, X):
    def load(context):
        rows = data.clients == context.node_config["partition-id"]
        return {
            "X": X[rows],
            "y": data.target[rows],
            "sensitive_features": {k: v[rows] for k, v in data.sensitive.items()},
        }

    return load


@pytest.mark.parametrize("case", list(STAT_VARIANTS))
def test_self_reported_extremes_cannot_widen_the_bounds(data, missing_data, case):
    transformer, change, scaler, message = STAT_VARIANTS[case]

    def run(**options):
        federation = _pipeline(scaler, **options)
        app = RewritingClientApp(
            make_client_app(federation, _missing_loader(data, missing_data)),
            _statistics(transformer, change),
            _STATISTICS,
            partition=HOSTILE,
        )
        return run_in_process(make_server_app(federation), app, num_partitions=3)

    with pytest.raises(
        RuntimeError,
        match=rf"Client 2 \(node \d+\) failed the statistics query.*{message}",
    ):
        run()
    fitted = run(on_client_error="skip")
    (record,) = [r for r in fitted.history_ if r.get("stage")]
    assert record["client"] == HOSTILE
    scale = fitted.estimator_.named_steps["scale"]
    spread = scale.scale_ if hasattr(scale, "mean_") else scale.data_range_
    assert np.all(np.isfinite(spread)) and np.all(spread < 20)


def test_an_honest_outlier_is_named_with_what_to_do(data):
    # One client's genuine values lie 1000 times beyond the others' range
    # (a unit mistake, or a real extreme): a clear error naming it, never a
    # silently stretched scaler.
    X = data.data.copy()
    X[np.flatnonzero(data.clients == HOSTILE)[0], 0] = 1e4
    with pytest.raises(
        RuntimeError,
        match=r"Client 2 failed the statistics.*feature 0's values reach 10000.0.*"
        r"clip or transform.*on_client_error='skip'",
    ):
        FederatedStandardScaler().fit(X, clients=data.clients)
    # Within the factor: accepted.
    X[np.flatnonzero(data.clients == HOSTILE)[0], 0] = 50.0
    FederatedStandardScaler().fit(X, clients=data.clients)


def test_values_far_from_zero_with_a_narrow_spread_are_honest():
    # Stated behaviour: the range check measures a client against the other
    # clients' scale, which for values far from 0 is their magnitude, not
    # only their spread. A sensor reading near 1000 with a spread of 0.001
    # on two sites and a calibration 1.0 higher on the third (0.1%, though
    # 1000 of the others' widths) is honest: the federated scalers fit it and
    # match scikit-learn's on the pooled rows.
    rng = np.random.default_rng(0)
    clients = np.repeat([0, 1, 2], 100)
    X = np.column_stack(
        [
            rng.normal(size=300),
            1000.0 + (clients == 2) * 1.0 + rng.uniform(0, 1e-3, size=300),
        ]
    )
    standard = FederatedStandardScaler().fit(X, clients=clients)
    reference = StandardScaler().fit(X)
    np.testing.assert_allclose(standard.mean_, reference.mean_, rtol=1e-12)
    np.testing.assert_allclose(standard.var_, reference.var_, rtol=1e-9)
    min_max = FederatedMinMaxScaler().fit(X, clients=clients)
    reference = MinMaxScaler().fit(X)
    np.testing.assert_array_equal(min_max.data_min_, reference.data_min_)
    np.testing.assert_array_equal(min_max.data_max_, reference.data_max_)


# -- 3. a strict majority, or no consensus ------------------------------------------


def test_consensus_needs_a_strict_majority():
    assert consensus([3, 3, 4]) == 3
    with pytest.raises(NoConsensus, match=r"a says 3; b says 4.*cannot tell"):
        consensus([3, 4], "n", names=["a", "b"])
    with pytest.raises(NoConsensus):
        consensus([1, 1, 2, 2])


def test_two_clients_the_hostile_one_cannot_define_the_consensus():
    # cons.py: client 0 of two widens its statistics by one feature; it is
    # the earliest, so it used to be the consensus and client 1 failed.
    data = make_federated_classification(600, n_clients=2, random_state=0)

    def one_more_feature(content):
        name, a = decode(content["config"]["answer"])
        a = {
            k: np.append(v, v[-1]) if isinstance(v, np.ndarray) and v.ndim == 1 else v
            for k, v in a.items()
        }
        content["config"]["answer"] = encode((name, a))

    federation = small_federation(
        Pipeline(
            [("s", FederatedStandardScaler()), ("m", FairPenaltyLogisticRegression())]
        ),
        on_client_error="skip",
    )
    app = RewritingClientApp(
        make_client_app(federation, partition_loader(data)),
        one_more_feature,
        _STATISTICS,
        partition=0,
    )
    with pytest.raises(
        NoConsensus,
        match=r"Client 0 \(node \d+\) says 11; Client 1 \(node \d+\) says 10",
    ):
        run_in_process(make_server_app(federation), app, num_partitions=2)


# -- 4. the initialisation's description ---------------------------------------------


def _config(key, value):
    def rewrite(content):
        content["config"][key] = value

    return rewrite


@pytest.mark.parametrize(
    ("partition", "key", "value", "message"),
    [
        (2, "n-features", "x", "n-features is 'x', not a count"),
        (2, "classes", [1, 0], r"classes \[1, 0\] are not those of the majority"),
        (0, "classes", [1, 0], r"classes \[1, 0\] are not those of the majority"),
        (2, "classes", [0, 1, 2], "not those of the majority"),
        (2, "classes", "ab", "not two or more distinct labels"),
        (2, "feature-names", [1, 2], "not a list of names"),
    ],
)
def test_initialisation_descriptions_pass_the_gate(
    data, partition, key, value, message
):
    def run(**options):
        federation = small_federation(**options)
        app = RewritingClientApp(
            make_client_app(federation, partition_loader(data)),
            _config(key, value),
            _INIT,
            partition=partition,
        )
        return run_in_process(
            make_server_app(federation), app, num_partitions=N_CLIENTS
        )

    with pytest.raises(
        RuntimeError,
        match=rf"Client {partition} \(node \d+\) failed the initialisation.*{message}",
    ):
        run()
    fitted = run(on_client_error="skip")
    (record,) = [r for r in fitted.history_ if r.get("stage") == "initialisation"]
    assert record["client"] == partition
    np.testing.assert_array_equal(fitted.classes_, [0, 1])


def test_raw_schema_is_the_majority_s(data):
    federation = small_federation(
        Pipeline(
            [("s", FederatedStandardScaler()), ("m", FairPenaltyLogisticRegression())]
        )
    )
    app = RewritingClientApp(
        make_client_app(federation, partition_loader(data)),
        _config("raw-dtypes", ["object"] * 10),
        _INIT,
        partition=0,
    )
    with pytest.raises(RuntimeError, match=r"Client 0 .*raw-dtypes.*majority"):
        run_in_process(make_server_app(federation), app, num_partitions=N_CLIENTS)


# -- 5.-7. bounds, counts as sent, a ClientApp that raises --------------------------


def test_imputer_bounds_n_bins():
    with pytest.raises(InvalidParameterError, match="'n_bins' parameter"):
        FederatedSimpleImputer(strategy="median", n_bins=10**12).fit(
            np.arange(6.0).reshape(3, 2)
        )


def test_a_huge_discovery_count_is_reported_as_sent(data):
    def huge(content):
        content["metrics"]["num-rows"] = 1e19

    federation = small_federation()
    app = RewritingClientApp(
        make_client_app(federation, partition_loader(data)),
        huge,
        MessageType.QUERY,
        partition=HOSTILE,
    )
    with pytest.raises(RuntimeError, match=r"Client 2 .*1e\+19") as error:
        run_in_process(make_server_app(federation), app, num_partitions=N_CLIENTS)
    assert "-9223372036854775808" not in str(error.value)


def test_a_client_app_that_raises_is_skipped_under_skip(data):
    # zero.py: a client with no rows fails its own checks at initialisation.
    def loader(context):
        k = context.node_config["partition-id"]
        rows = (data.clients == k) & (k != HOSTILE)
        return {
            "X": data.data[rows],
            "y": data.target[rows],
            "sensitive_features": {n: v[rows] for n, v in data.sensitive.items()},
        }

    def run(**options):
        federation = small_federation(**options)
        return run_in_process(
            make_server_app(federation),
            make_client_app(federation, loader),
            num_partitions=N_CLIENTS,
        )

    with pytest.raises(
        RuntimeError, match=r"Client 2 \(node \d+\) failed the initialisation.*0 sample"
    ):
        run()
    fitted = run(on_client_error="skip")
    skipped = {r["client"] for r in fitted.history_ if r.get("skipped")}
    assert skipped == {HOSTILE}
    honest = data.target[data.clients != HOSTILE]
    np.testing.assert_allclose(fitted.class_prior_[1], honest.mean())


def test_a_column_only_one_client_has_values_in_is_honest():
    # An indicator of a category only client 2 holds (zeros everywhere else)
    # gave the others a scale of 0, and any 1.0 was "100 times beyond it":
    # 7 of 9 random 300-row splits of the shipped Adult table were refused.
    rng = np.random.default_rng(0)
    clients = np.arange(300) % 3
    X = rng.normal(size=(300, 2))
    X[:, 1] = np.where(clients == HOSTILE, rng.integers(0, 2, 300), 0.0)
    X = np.column_stack([X, np.where(clients == HOSTILE, 4356.0, 0.0)])
    for transformer in (
        FederatedStandardScaler(),
        FederatedMinMaxScaler(),
        FederatedSimpleImputer(),
    ):
        transformer.fit(X, clients=clients)


def test_fairfed_says_when_min_group_size_leaves_no_gap_to_measure():
    # 150 rows in 4 groups: no group reaches 30 rows in every rate, and
    # FairFed's weights silently became FedAvg's.
    from skfedida.exceptions import InactivePenaltyWarning

    small = make_federated_classification(150, n_clients=3, random_state=0)
    federation = small_federation(aggregation=FairFed(min_group_size=1000), n_rounds=2)
    with pytest.warns(InactivePenaltyWarning, match="min_group_size=1000"):
        federation.fit(
            small.data,
            small.target,
            clients=small.clients,
            sensitive_features=small.sensitive,
        )


def _declaration(change):
    def rewrite(content):
        declared = json.loads(content["config"]["declared-groups"])
        change(declared["rowsets"])
        content["config"]["declared-groups"] = json.dumps(declared)

    return rewrite


def _one_row_fewer(rowsets):
    rowsets["train"]["rows"][0] -= 1


def _rows_it_does_not_have(rowsets):
    rowsets["eval"] = rowsets["train"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_one_row_fewer, r"rows per group of 'train' rows add up to \d+; it declared"),
        (_rows_it_does_not_have, r"groups for 'eval' rows; its sets of rows are"),
    ],
    ids=["one row fewer", "a set of rows it does not have"],
)
def test_group_declarations_must_describe_the_declared_rows(data, change, message):
    # The declared groups bound every later count per group (FairFed
    # reports, histograms): they must cover exactly the client's declared
    # rows, on the sets of rows it has, or its later counts could hide rows.
    def run(**options):
        federation = small_federation(**options)
        app = RewritingClientApp(
            make_client_app(federation, partition_loader(data)),
            _declaration(change),
            _INIT,
        )
        return run_in_process(
            make_server_app(federation), app, num_partitions=N_CLIENTS
        )

    with pytest.raises(
        RuntimeError,
        match=rf"Client 2 \(node \d+\) failed the initialisation.*{message}",
    ):
        run()
    fitted = run(on_client_error="skip")
    (record,) = [r for r in fitted.history_ if r.get("stage") == "initialisation"]
    assert record["client"] == HOSTILE
