"""What both backends do alike, decided where they once differed (issue 48).

Each test fits one federation in-process and on Flower (``run_in_process``:
the real ClientApp and ServerApp in one process) and pins the behaviour
chosen for a divergence of the audit listed in ``doc/flower.rst`` ("Where
the backends once differed"); the id (D4, D12...) is the audit's.
"""

import logging
import re
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr")

from _helpers import partition_loader, skip_records
from sklearn.base import clone
from sklearn.utils import Bunch

from skfedida.datasets import make_federated_classification
from skfedida.federated import FairFed, FederatedEstimator
from skfedida.flower import (
    make_client_app,
    make_server_app,
    run_in_process,
)
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier

logging.getLogger("flwr").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(600, n_clients=3, random_state=0)


def _both(federation, data):
    return _in_process(federation, data), _both_flower(federation, data)


def _in_process(federation, data):
    return clone(federation).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )


def _both_flower(federation, data):
    return run_in_process(
        make_server_app(federation),
        make_client_app(federation, partition_loader(data)),
        num_partitions=3,
    )


def _errors_both_ways(federation, data):
    """The fit's error in-process and on Flower, the node's id left out."""
    messages = []
    for run in (_in_process, _both_flower):
        with pytest.raises(RuntimeError) as info:
            run(federation, data)
        messages.append(re.sub(r" \(node \d+\)", "", str(info.value)))
    return messages


def test_d4_d12_the_history_is_in_one_order_with_one_shape(data):
    # Half the clients are selected each round, in a seeded random order;
    # every client evaluates its held-out rows every round.
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=3,
        local_epochs=1,
        client_fraction=0.5,
        validation_fraction=0.25,
        random_state=0,
    )
    in_process, on_flower = _both(federation, data)
    # D4: by round, then client, whatever order the clients were selected
    # in (in-process history was in the order of selection).
    order = [(r["round"], r["client"]) for r in in_process.history_]
    assert order == [(r["round"], r["client"]) for r in on_flower.history_]
    assert order == sorted(order)
    selected = {(r["round"], r["client"]) for r in in_process.history_}
    assert len(selected) == 9
    # D12: a client selected in a round has its train_loss, a client only
    # evaluated in that round has none (in-process wrote None).
    for ours, theirs in zip(in_process.history_, on_flower.history_, strict=True):
        assert sorted(ours) == sorted(theirs)
        if "train_loss" in ours:
            assert ours["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-12)
    trained = [r for r in in_process.history_ if "train_loss" in r]
    assert 0 < len(trained) < len(in_process.history_)
    assert all(r["train_loss"] is not None for r in trained)
    np.testing.assert_array_equal(
        in_process.estimator_.coef_, on_flower.estimator_.coef_
    )


def test_d13_what_only_in_process_runs_is_refused_on_flower(data):
    # A warm start continues in-process; on Flower the ServerApp starts from
    # the unfitted federation, which for averaged models used to start
    # afresh without a word (boosted trees were refused already).
    from sklearn.callback import ProgressBar

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=1,
        local_epochs=1,
        random_state=0,
        warm_start=True,
    )
    continued = clone(federation)
    for _ in range(2):
        continued.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
    assert max(r["round"] for r in continued.history_) == 2
    with pytest.raises(ValueError, match=r"warm_start=True on Flower.*in-process"):
        _both(federation, data)
    with_callbacks = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0), n_rounds=1, random_state=0
    ).set_callbacks(ProgressBar())
    with pytest.raises(ValueError, match="Callbacks on Flower"):
        _both(with_callbacks, data)


class EvaluationFailing(FairPenaltyLogisticRegression):
    """Scores every set of rows but those of one size (a client's held-out)."""

    failing_rows = -1

    def predict_proba(self, X):
        if len(X) == self.failing_rows:
            raise FloatingPointError("simulated evaluation failure")
        return super().predict_proba(X)


def test_d3_a_failed_evaluation_is_a_client_failure_on_both():
    # In-process the server computed the held-out metrics itself, outside
    # the gate: an evaluation that failed stopped the fit whatever
    # on_client_error said. Both backends now hand it to the same failure
    # policy: skipped and recorded, or an error naming the client.
    data = make_federated_classification(
        600, n_clients=3, client_sizes=[0.3, 0.45, 0.25], random_state=0
    )
    sizes = np.bincount(data.clients)
    held_out = np.ceil(0.25 * sizes).astype(int)
    assert np.sum(held_out == held_out[1]) == 1
    assert held_out[1] not in sizes - held_out
    federation = FederatedEstimator(
        EvaluationFailing(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        validation_fraction=0.25,
        on_client_error="skip",
        random_state=0,
    )
    EvaluationFailing.failing_rows = int(held_out[1])
    try:
        in_process, on_flower = _both(federation, data)
        with pytest.raises(RuntimeError, match=r"Client 1 failed in round 1"):
            clone(federation).set_params(on_client_error="raise").fit(
                data.data,
                data.target,
                clients=data.clients,
                sensitive_features=data.sensitive,
            )
    finally:
        EvaluationFailing.failing_rows = -1
    for fitted in (in_process, on_flower):
        skipped = [
            (r["round"], r["client"])
            for r in fitted.history_
            if "evaluation_skipped" in r
        ]
        assert skipped == [(1, 1), (2, 1)]
        assert all(
            "simulated evaluation failure" in r["evaluation_skipped"]
            for r in fitted.history_
            if "evaluation_skipped" in r
        )
        assert not any(
            key.startswith("val_")
            for r in fitted.history_
            if r["client"] == 1
            for key in r
        )
    # The summaries rest on the two other clients, alike on both.
    assert in_process.federated_metrics_.keys() == on_flower.federated_metrics_.keys()
    for round_, theirs in on_flower.federated_metrics_.items():
        for key, value in theirs.items():
            assert in_process.federated_metrics_[round_][key] == pytest.approx(
                value, rel=1e-12, nan_ok=True
            ), key


def test_d1_d2_a_client_failure_is_worded_alike(data):
    # In-process said "Client 1 failed in round 1: ArithmeticError: ...";
    # Flower said "... round 1 (training): <class 'ArithmeticError'>:<'...'>".
    # Both now give the first form with the round's kind; Flower names the
    # node too, and only in-process can chain the client's own exception.
    from _helpers import FailingLogistic

    def federation(policy):
        return FederatedEstimator(
            FailingLogistic(fairness=1.0),
            n_rounds=2,
            local_epochs=1,
            on_client_error=policy,
            random_state=0,
        )

    seeds = federation("raise").set_params(n_rounds=1)
    seeds.fit(data.data, data.target, clients=data.clients)
    FailingLogistic.failing_seeds = {int(seeds.client_seeds_[1])}
    try:
        messages = _errors_both_ways(federation("raise"), data)
        in_process, on_flower = _both(federation("skip"), data)
    finally:
        FailingLogistic.failing_seeds = frozenset()
    assert messages[0] == messages[1]
    assert messages[0].startswith(
        "Client 1 failed in round 1 (training): ArithmeticError: simulated client "
        "failure"
    )
    skipped = skip_records((in_process, on_flower), "round", "client", "skipped")
    assert skipped[0] == skipped[1]
    assert skipped[0] == [
        (1, 1, "ArithmeticError: simulated client failure"),
        (2, 1, "ArithmeticError: simulated client failure"),
    ]


def test_d20_verbose_shows_the_rounds_on_both(data, capsys):
    # The ServerApp used to ignore verbose; both now run the one round loop,
    # which shows a progress bar (or, without tqdm, a line per round).
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
        verbose=1,
    )
    shown = []
    for fit in (
        lambda: _both(federation, data)[0],
        lambda: _both_flower(federation, data),
    ):
        capsys.readouterr()
        fit()
        captured = capsys.readouterr()
        shown.append(captured.out + captured.err)
    for text in shown:
        assert "FederatedEstimator" in text
        assert "2/2" in text


def test_d11_predict_with_clients_says_when_no_client_model_is_kept(data):
    # Per-FedAvg's personalised models stay on their clients' nodes on
    # Flower: predict(X, clients=...) gave the global model without a word,
    # where in-process each row gets its client's personalised model.
    from skfedida.exceptions import ClientDataWarning

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        strategy="pfedavg",
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    )
    in_process, on_flower = _both(federation, data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClientDataWarning)
        personal = in_process.predict_proba(data.data, clients=data.clients)
    assert not np.array_equal(personal, in_process.predict_proba(data.data))
    with pytest.warns(ClientDataWarning, match="stay on their nodes"):
        served = on_flower.predict_proba(data.data, clients=data.clients)
    np.testing.assert_array_equal(served, on_flower.predict_proba(data.data))


def test_d18_an_inactive_fairness_penalty_is_said_on_both(data):
    # Without sensitive features a fairness penalty cannot act. In-process
    # the federation said so once per fit; the ServerApp said nothing. Both
    # now warn from what the server knows: the rows' groups in-process, the
    # groups the clients declared at initialisation on Flower.
    from skfedida.exceptions import InactivePenaltyWarning

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=1,
        local_epochs=1,
        random_state=0,
    )

    def without_groups(context):
        rows = data.clients == context.node_config["partition-id"]
        return {"X": data.data[rows], "y": data.target[rows]}

    messages = []
    with pytest.warns(InactivePenaltyWarning) as caught:
        clone(federation).fit(data.data, data.target, clients=data.clients)
    messages.append({str(w.message) for w in caught})
    with pytest.warns(InactivePenaltyWarning) as caught:
        run_in_process(
            make_server_app(federation),
            make_client_app(federation, without_groups),
            num_partitions=3,
        )
    messages.append({str(w.message) for w in caught})
    assert (
        messages[0]
        == messages[1]
        == {
            "fairness=1.0 has no effect: no sensitive attributes were given (pass "
            "sensitive_features); the federation trains the unpenalised, "
            "unconstrained model."
        }
    )
    # With the groups declared, neither warns.
    with warnings.catch_warnings():
        warnings.simplefilter("error", InactivePenaltyWarning)
        _both(federation, data)


def test_d20_clients_are_partition_ids_and_row_weights_are_refused_on_flower(data):
    # Kept and documented (doc/flower.rst): a Flower fit knows its clients by
    # partition id, and a node refuses row weights before any round rather
    # than train without them; in-process both are the user's.
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=1, local_epochs=1, random_state=0
    )
    names = np.array(["north", "south", "west"])[data.clients]
    in_process = clone(federation).fit(
        data.data, data.target, clients=names, sensitive_features=data.sensitive
    )
    on_flower = _both_flower(federation, data)
    assert in_process.clients_.tolist() == ["north", "south", "west"]
    assert on_flower.clients_.tolist() == [0, 1, 2]
    # Position k is the same client on both: its rows, seed and model.
    np.testing.assert_array_equal(in_process.client_sizes_, on_flower.client_sizes_)
    np.testing.assert_array_equal(in_process.client_seeds_, on_flower.client_seeds_)
    np.testing.assert_array_equal(
        in_process.predict_proba(data.data), on_flower.predict_proba(data.data)
    )
    weights = np.linspace(0.5, 1.5, data.target.size)
    clone(federation).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
        sample_weight=weights,
    )
    load = partition_loader(data)

    def weighted(context):
        loaded = load(context)
        rows = data.clients == context.node_config["partition-id"]
        return {**loaded, "sample_weight": weights[rows]}

    with pytest.raises(RuntimeError, match="returns 'sample_weight'"):
        run_in_process(
            make_server_app(federation),
            make_client_app(federation, weighted),
            num_partitions=3,
        )


def _fitted_attributes(estimator):
    """An estimator's fitted state, comparable across fits (no RNG objects)."""
    return {
        name: value
        for name, value in vars(estimator).items()
        if not isinstance(value, np.random.RandomState)
        and not type(value).__module__.startswith("sklearn._loss")
    }


@pytest.mark.parametrize("estimator", ["logistic", "mlp", "sgd"])
def test_d8_the_global_estimator_is_the_servers_template_on_both(data, estimator):
    # In-process estimator_ was a copy of client 0's model with the global
    # parameters: its counters (n_iter_, t_, n_samples_seen_) and its last
    # loss_ were client 0's, not the federation's. On Flower it was the
    # server's template, primed on no client's rows. Both now build it so.
    from sklearn.linear_model import SGDClassifier

    from skfedida.neural_network import FairMLPClassifier

    if estimator == "logistic":
        estimator = FairPenaltyLogisticRegression(fairness=1.0)
    elif estimator == "mlp":
        estimator = FairMLPClassifier(hidden_layer_sizes=(4,), fairness=1.0)
    elif estimator == "sgd":
        estimator = SGDClassifier(loss="log_loss")
    federation = FederatedEstimator(
        estimator, n_rounds=2, local_epochs=1, random_state=0
    )
    in_process, on_flower = _both(federation, data)
    ours = _fitted_attributes(in_process.estimator_)
    theirs = _fitted_attributes(on_flower.estimator_)
    assert sorted(ours) == sorted(theirs)
    for name, value in theirs.items():
        if isinstance(value, list):
            for mine, other in zip(ours[name], value, strict=True):
                np.testing.assert_array_equal(mine, other)
        else:
            np.testing.assert_array_equal(ours[name], value, err_msg=name)
    assert "loss_" not in ours
    # Primed on rows of zeros: at most sklearn's one partial_fit call, and
    # no client's rows (client 0 trained on 133 rows for 2 epochs).
    assert ours["n_iter_"] <= 1
    assert ours.get("n_samples_seen_", 0) == 0
    assert ours.get("t_", 0) <= 1 + len(in_process.classes_)
    # Local training's mean model is built the same way.
    local = clone(federation).set_params(strategy="local")
    local.fit(data.data, data.target, clients=data.clients)
    assert "loss_" not in vars(local.estimator_)


def test_d18_the_degenerate_model_warning_is_one_rule_on_both():
    # In-process the warning read the clients' training decisions, each by
    # the model it uses; the ServerApp read the last evaluation's selection
    # rate (held-out rows, the global model) and worded it otherwise. Both
    # now sum the clients' counts of their training decisions, each from the
    # model it uses (Per-FedAvg: its personalised one), through the gate.
    from skfedida.exceptions import DegenerateModelWarning

    data = make_federated_classification(
        600, n_clients=3, class_sep=0.0, random_state=5
    )
    data.target = np.ones_like(data.target)
    # Three rows of the other class per client, so that each has both.
    for k in range(3):
        data.target[np.flatnonzero(data.clients == k)[:3]] = 0
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        strategy="pfedavg",
        n_rounds=2,
        local_epochs=1,
        validation_fraction=0.25,
        random_state=0,
    )
    messages = []
    for fit in (_in_process, _both_flower):
        with pytest.warns(DegenerateModelWarning) as caught:
            fit(federation, data)
        messages.append(
            [str(w.message) for w in caught if w.category is DegenerateModelWarning]
        )
    assert messages[0] == messages[1]
    assert len(messages[0]) == 1
    assert re.match(
        r"FederatedEstimator predicts the positive class for 9\d\.\d% of its "
        r"training rows:",
        messages[0][0],
    )


class _MiscountingNode:
    """A ClientApp whose node 1 miscounts its decisions after the last round."""

    def __init__(self, app):
        self.app = app

    def __call__(self, message, context):
        reply = self.app(message, context)
        if (
            message.metadata.message_type.endswith("skfedida_decisions")
            and context.node_config["partition-id"] == 1
        ):
            config = reply.content.config_records["config"]
            config["decision-counts"] = [0, 1]
        return reply


def test_d18_decision_counts_pass_the_gate_on_both(data):
    # What a client counts is held to the rows it declared: one that
    # miscounts fails the decision query naming it, or is left out of the
    # sum and recorded after the last round.
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    )
    app = make_client_app(federation, partition_loader(data))
    with pytest.raises(
        RuntimeError,
        match=r"Client 1 \(node \d+\) failed the decision query: its reply cannot "
        r"be used: its decision counts add up to 1 rows; it declared \d+ training",
    ):
        run_in_process(
            make_server_app(federation), _MiscountingNode(app), num_partitions=3
        )
    skipping = clone(federation).set_params(on_client_error="skip")
    fitted = run_in_process(
        make_server_app(skipping),
        _MiscountingNode(make_client_app(skipping, partition_loader(data))),
        num_partitions=3,
    )
    recorded = [r for r in fitted.history_ if r.get("stage") == "decision query"]
    assert [(r["round"], r["client"]) for r in recorded] == [(2, 1)]
    assert "its decision counts add up to 1 rows" in recorded[0]["skipped"]


def test_d7_only_clients_with_evaluation_rows_are_evaluated(data):
    # In-process a federation without validation_fraction evaluates nothing;
    # the ServerApp asked every client to evaluate every round, and a client
    # without evaluation rows scored its training rows. Both now evaluate
    # only on evaluation rows: held-out (validation_fraction) or a node's own
    # X_eval.
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    )
    in_process, on_flower = _both(federation, data)
    for fitted in (in_process, on_flower):
        assert fitted.federated_metrics_ == {}
        assert not any(key.startswith("val_") for r in fitted.history_ for key in r)
    assert in_process.history_ == on_flower.history_
    # A node with evaluation rows of its own is evaluated; the others not.
    load = partition_loader(data)

    def only_node_0_holds_evaluation_rows(context):
        loaded = load(context)
        if context.node_config["partition-id"] == 0:
            loaded["X_eval"] = loaded["X"][:50]
            loaded["y_eval"] = loaded["y"][:50]
            loaded["sensitive_features_eval"] = {
                name: values[:50]
                for name, values in loaded["sensitive_features"].items()
            }
        return loaded

    fitted = run_in_process(
        make_server_app(federation),
        make_client_app(federation, only_node_0_holds_evaluation_rows),
        num_partitions=3,
    )
    evaluated = sorted(
        {
            (r["round"], r["client"])
            for r in fitted.history_
            if any(key.startswith("val_") for key in r)
        }
    )
    assert evaluated == [(1, 0), (2, 0)]
    assert sorted(fitted.federated_metrics_) == [1, 2]
    # With held-out rows, every client on both, as before.
    held_out = clone(federation).set_params(validation_fraction=0.25)
    in_process, on_flower = _both(held_out, data)
    for fitted in (in_process, on_flower):
        assert sorted(fitted.federated_metrics_) == [1, 2]
        evaluated = {
            (r["round"], r["client"])
            for r in fitted.history_
            if any(key.startswith("val_") for key in r)
        }
        assert len(evaluated) == 6


def test_d11_per_fedavg_reports_personal_metrics_on_both(data):
    # A Flower client under Per-FedAvg reports, besides the global model's
    # metrics, its personalised model's (val_personal_*); in-process the
    # server computed the global model's alone. Both now report both, of the
    # same personalised model: the one FederatedEstimator(n_rounds=round)
    # gives the client.
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        strategy="pfedavg",
        n_rounds=2,
        local_epochs=1,
        validation_fraction=0.25,
        random_state=0,
    )
    in_process, on_flower = _both(federation, data)
    assert len(in_process.history_) == len(on_flower.history_) == 6
    for ours, theirs in zip(in_process.history_, on_flower.history_, strict=True):
        assert sorted(ours) == sorted(theirs)
        assert "val_personal_roc_auc" in ours
        for key, value in theirs.items():
            if isinstance(value, float):
                assert ours[key] == pytest.approx(value, rel=1e-12, nan_ok=True), key
    for round_, theirs in on_flower.federated_metrics_.items():
        assert sorted(in_process.federated_metrics_[round_]) == sorted(theirs)
        for key, value in theirs.items():
            assert in_process.federated_metrics_[round_][key] == pytest.approx(
                value, rel=1e-12, nan_ok=True
            ), key
    # The last round's personal AUROC is that of client_estimators_.
    from sklearn.metrics import roc_auc_score

    last = [r for r in in_process.history_ if r["round"] == 2]
    for record in last:
        X_val, y_val = _held_out_rows(in_process, data, record["client"])
        personal = in_process.client_estimators_[record["client"]]
        assert record["val_personal_roc_auc"] == pytest.approx(
            roc_auc_score(y_val, personal.predict_proba(X_val)[:, 1]), abs=1e-12
        )


def _held_out_rows(fitted, data, client):
    """Client ``client``'s held-out rows, as fit split them."""
    from skfedida.federated._client import _split_client

    rows = np.flatnonzero(data.clients == client)
    _, held_out = _split_client(
        data.target[rows],
        fitted.validation_fraction,
        fitted.client_seeds_[client],
        client,
    )
    return data.data[rows[held_out]], data.target[rows[held_out]]


class _OnceHostileMLP(FairMLPClassifier):
    """Trains, then spoils a client's model at its n-th ``partial_fit``.

    ``how="inf"`` leaves a reply the gate refuses (a parameter is
    infinite); ``"raise"`` fails the client after the step has changed its
    model. Parameters, so that a worker process (n_jobs=2) gets them too.
    """

    def __init__(self, hostile_seed=None, hostile_fit=-1, how="inf", random_state=None):
        super().__init__(hidden_layer_sizes=(4,), random_state=random_state)
        self.hostile_seed = hostile_seed
        self.hostile_fit = hostile_fit
        self.how = how

    def partial_fit(self, X, y, classes=None, **kwargs):
        super().partial_fit(X, y, classes, **kwargs)
        self.fits_seen_ = getattr(self, "fits_seen_", 0) + 1
        if self.random_state == self.hostile_seed and (
            self.fits_seen_ == self.hostile_fit
        ):
            if self.how == "raise":
                raise ArithmeticError("simulated failure after a step")
            self.coefs_[0][0, 0] = np.inf
        return self


@pytest.mark.parametrize("how", ["inf", "raise"])
def test_d10_d19_a_refused_or_failed_client_keeps_its_state_on_both(data, how):
    # In-process with n_jobs=1 a client trained its own estimator in place,
    # so one whose reply was refused (or that failed after a step) carried
    # the spoilt state into the next round, where n_jobs=2 trained a copy
    # and dropped it; on Flower a node stored what it trained before the
    # server checked it. Each now keeps its estimator as it was before the
    # round unless the server admitted its reply: with Adam's moments and
    # counters in the state, the next rounds (and the model) tell them apart.
    federation = FederatedEstimator(
        _OnceHostileMLP(),
        n_rounds=3,
        local_epochs=1,
        on_client_error="skip",
        random_state=0,
    )
    seeds = clone(federation).set_params(n_rounds=1, strategy="local")
    seeds.fit(data.data, data.target, clients=data.clients)
    # Client 1 spoils the first fit of its second round.
    federation.set_params(
        estimator__hostile_seed=int(seeds.client_seeds_[1]),
        estimator__hostile_fit=seeds.client_estimators_[1].fits_seen_ + 1,
        estimator__how=how,
    )
    fitted = [
        _in_process(federation, data),
        _in_process(clone(federation).set_params(n_jobs=2), data),
        _both_flower(federation, data),
    ]
    skipped = skip_records(fitted, "round", "client")
    # Left as before round 2, client 1 spoils round 3's first step again.
    assert skipped == [[(2, 1), (3, 1)]] * 3
    for other in fitted[1:]:
        for ours, theirs in zip(
            fitted[0].estimator_.coefs_, other.estimator_.coefs_, strict=True
        ):
            np.testing.assert_array_equal(ours, theirs)


def test_d1_d2_a_refused_training_reply_is_worded_alike(data):
    # A training reply the gate refuses read "ValueError: its reply cannot
    # be used: ..." in-process and "its reply cannot be used: ..." on
    # Flower, in the error and in the skip record; both now say the latter.
    federation = FederatedEstimator(
        _OnceHostileMLP(), n_rounds=2, local_epochs=1, random_state=0
    )
    seeds = clone(federation).set_params(n_rounds=1, strategy="local")
    seeds.fit(data.data, data.target, clients=data.clients)
    federation.set_params(
        estimator__hostile_seed=int(seeds.client_seeds_[1]),
        estimator__hostile_fit=seeds.client_estimators_[1].fits_seen_ + 1,
    )
    messages = _errors_both_ways(federation, data)
    assert messages[0] == messages[1]
    assert messages[0].startswith(
        "Client 1 failed in round 2 (training): its reply cannot be used: "
        "parameter array 0 holds NaN or infinity"
    )
    skipping = clone(federation).set_params(on_client_error="skip")
    records = skip_records(
        (_in_process(skipping, data), _both_flower(skipping, data)), "skipped"
    )
    assert records[0] == records[1]
    assert records[0][0] == (
        "its reply cannot be used: parameter array 0 holds NaN or infinity",
    )


def _amounts(data, amount_of):
    """The rows as a frame with an ``amount`` column: ``amount_of(client, i)``."""
    import pandas as pd

    frame = pd.DataFrame(data.data[:, :2], columns=["a", "b"])
    frame["amount"] = pd.Series(
        [amount_of(k, i) for i, k in enumerate(data.clients)], dtype=object
    )
    return frame


def _encoded_amounts(encoder=None, **options):
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    from skfedida.preprocessing import FederatedOneHotEncoder

    pre = ColumnTransformer(
        [("encode", encoder or FederatedOneHotEncoder(), ["amount"])],
        remainder="passthrough",
    )
    model = FairPenaltyLogisticRegression(fairness=1.0)
    return FederatedEstimator(
        Pipeline([("pre", pre), ("model", model)]),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
        **options,
    )


def _fit_frame(federation, data, frame):
    """``federation`` fitted on ``frame`` in-process, then on Flower."""
    in_process = clone(federation).fit(
        frame, data.target, clients=data.clients, sensitive_features=data.sensitive
    )
    load = partition_loader(data)

    def with_frame(context):
        rows = data.clients == context.node_config["partition-id"]
        return {**load(context), "X": frame[rows].reset_index(drop=True)}

    on_flower = run_in_process(
        make_server_app(federation),
        make_client_app(federation, with_frame),
        num_partitions=3,
    )
    return in_process, on_flower


def test_d14_decimal_categories_travel_exactly_and_others_are_refused(data):
    # A Decimal category fitted in-process, and failed on Flower (JSON had
    # no Decimal). The statistics rounds now carry it exactly, by its text,
    # and an in-process answer goes through the same JSON, so both fit the
    # same encoder and model; what JSON cannot carry (a Fraction) is
    # refused on both, naming the transformer and the type.
    import decimal
    import fractions

    prices = [decimal.Decimal("1.10"), decimal.Decimal("2.5"), decimal.Decimal("7")]
    frame = _amounts(data, lambda k, i: prices[i % 3])
    in_process, on_flower = _fit_frame(_encoded_amounts(), data, frame)
    for fitted in (in_process, on_flower):
        encoder = fitted.estimator_[0].named_transformers_["encode"]
        assert encoder.categories_[0].tolist() == sorted(prices)
        assert all(type(c) is decimal.Decimal for c in encoder.categories_[0])
    np.testing.assert_array_equal(
        in_process.predict_proba(frame), on_flower.predict_proba(frame)
    )
    thirds = _amounts(data, lambda k, i: fractions.Fraction(i % 3, 3))
    for fit in (
        lambda: _fit_frame(_encoded_amounts(), data, thirds)[0],
        lambda: _fit_frame(_encoded_amounts(), data, thirds)[1],
    ):
        with pytest.raises(
            RuntimeError,
            match=r"Client 0.* failed the statistics query for "
            r"estimator\['pre'\]\['encode'\].*Cannot send a Fraction",
        ):
            fit()


def test_d9_a_client_whose_statistics_fail_is_skipped_on_both(data):
    # In-process a client's exception in a statistics round stopped the fit
    # even under on_client_error="skip"; on Flower the client was left out
    # and recorded. Both now leave it out: the same encoder, model and
    # records.
    import fractions

    frame = _amounts(
        data, lambda k, i: fractions.Fraction(1, 3) if k == 1 else float(i % 2)
    )
    from skfedida.preprocessing import FederatedOneHotEncoder

    # Client 1's own category is then unknown to the encoder: ignored.
    federation = _encoded_amounts(
        FederatedOneHotEncoder(handle_unknown="ignore"), on_client_error="skip"
    )
    in_process, on_flower = _fit_frame(federation, data, frame)
    for fitted in (in_process, on_flower):
        encoder = fitted.estimator_[0].named_transformers_["encode"]
        assert encoder.categories_[0].tolist() == [0.0, 1.0]
    np.testing.assert_array_equal(
        in_process.predict_proba(frame.iloc[:50]),
        on_flower.predict_proba(frame.iloc[:50]),
    )
    skipped = [
        [(r["client"], r["stage"]) for r in f.history_ if "stage" in r]
        for f in (in_process, on_flower)
    ]
    assert skipped[0] == skipped[1]
    assert skipped[0] and {client for client, _ in skipped[0]} == {1}


def test_d15_group_values_json_cannot_carry_are_refused_on_both(data):
    # A Decimal group value grouped in-process by the Decimal itself, and on
    # Flower by its text, which the server then held: both now refuse it,
    # naming the attribute.
    import decimal

    sensitive = {
        **data.sensitive,
        "band": np.array(
            [decimal.Decimal(k % 2) for k in range(len(data.target))], dtype=object
        ),
    }
    banded = Bunch(**{**data, "sensitive": sensitive})
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0), n_rounds=1, random_state=0
    )
    with pytest.raises(ValueError, match=r"sensitive_features 'band' holds a Decimal"):
        _in_process(federation, banded)
    with pytest.raises(
        RuntimeError, match=r"sensitive_features 'band' holds a Decimal"
    ):
        _both_flower(federation, banded)


def test_d16_the_threshold_optimizer_counts_held_out_rows_on_both(data):
    # With validation_fraction a Flower client counts its scores on its
    # held-out rows; in-process the optimizer counted every row it fitted
    # the federation on, training rows included. Both now count the
    # held-out rows, as the federation split them.
    from skfedida.postprocessing import FederatedThresholdOptimizer

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        validation_fraction=0.25,
        random_state=0,
    )
    post = FederatedThresholdOptimizer(federation, random_state=0)
    on_flower = run_in_process(
        make_server_app(federation, postprocessor=post),
        make_client_app(federation, partition_loader(data)),
        num_partitions=3,
    )
    in_process = clone(post).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )
    held_out = np.ceil(0.25 * np.bincount(data.clients))
    np.testing.assert_array_equal(
        in_process.client_histograms_.sum(axis=(1, 2, 3)), held_out
    )
    np.testing.assert_array_equal(
        in_process.client_histograms_, on_flower.client_histograms_
    )
    for key, value in in_process.rules_.items():
        np.testing.assert_array_equal(on_flower.rules_[key], value)
    # A fitted model given to the optimizer (prefit=True) counts the rows
    # it is given: the user chose them.
    given = FederatedThresholdOptimizer(
        in_process.estimator_, prefit=True, random_state=0
    ).fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
    )
    assert given.client_histograms_.sum() == len(data.target)


def test_d17_a_client_without_every_class_trains_on_both(data):
    # In-process the federation's classes are those of every client's rows,
    # so a client that lacks one trains (with a ClientDataWarning); on
    # Flower such a client refused to start unless make_client_app was given
    # classes=. Each client now declares its labels when it joins and the
    # server sends back their union, held against the class counts after.
    from skfedida.exceptions import ClientDataWarning

    one_class = Bunch(**data)
    one_class.target = data.target.copy()
    one_class.target[data.clients == 1] = 1
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0),
        n_rounds=2,
        local_epochs=1,
        random_state=0,
    )
    with pytest.warns(ClientDataWarning, match="Client 1 has a single class"):
        in_process = _in_process(federation, one_class)
    on_flower = _both_flower(federation, one_class)
    np.testing.assert_array_equal(in_process.classes_, on_flower.classes_)
    np.testing.assert_array_equal(
        in_process.estimator_.coef_, on_flower.estimator_.coef_
    )
    np.testing.assert_array_equal(in_process.class_prior_, on_flower.class_prior_)


class _UndeclaredClassNode:
    """A ClientApp whose node 1 counts rows of a class it did not declare."""

    def __init__(self, app):
        self.app = app

    def __call__(self, message, context):
        reply = self.app(message, context)
        if context.node_config["partition-id"] != 1 or reply.has_error():
            return reply
        config = reply.content.config_records.get("config")
        if message.metadata.message_type == "query" and config is not None:
            config["client-labels"] = "[1]"  # it holds rows of class 0 too
        return reply


def test_d17_class_counts_are_held_to_the_declared_labels(data):
    # A client that declares labels when it joins, then counts rows of
    # another class at initialisation, is refused naming it.
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0), n_rounds=1, random_state=0
    )
    app = make_client_app(federation, partition_loader(data))
    with pytest.raises(
        RuntimeError,
        match=r"Client 1 \(node \d+\) failed the initialisation: its reply cannot "
        r"be used: its class counts count rows of \[0\], labels it did not declare",
    ):
        run_in_process(
            make_server_app(federation), _UndeclaredClassNode(app), num_partitions=3
        )


def test_d8_the_global_estimator_reads_what_the_clients_read(data):
    # The clients' estimators of a DataFrame fit read arrays (metadata
    # mode), so estimator_ must too: a template primed on a named frame
    # warned "X does not have valid feature names" on every array it was
    # given (on Flower, and in-process once it became the template).
    import pandas as pd

    frame = pd.DataFrame(
        data.data, columns=[f"x{j}" for j in range(data.data.shape[1])]
    )
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0), n_rounds=1, random_state=0
    )
    load = partition_loader(data)

    def with_frame(context):
        rows = data.clients == context.node_config["partition-id"]
        return {**load(context), "X": frame[rows]}

    fitted = [
        clone(federation).fit(
            frame, data.target, clients=data.clients, sensitive_features=data.sensitive
        ),
        run_in_process(
            make_server_app(federation),
            make_client_app(federation, with_frame),
            num_partitions=3,
        ),
    ]
    for each in fitted:
        np.testing.assert_array_equal(each.feature_names_in_, frame.columns)
        assert not hasattr(each.estimator_, "feature_names_in_")
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            each.estimator_.predict_proba(data.data[:5])
            each.predict_proba(frame[:5])


@pytest.mark.parametrize("fairfed", [False, True], ids=["mean", "fairfed"])
def test_d5_d6_a_client_refused_at_initialisation_alike_on_both(data, fairfed):
    # In-process initialisation checked only the class counts, and the
    # global model started from client 0's initial model even when the gate
    # refused it; Flower checked every initialisation reply and started
    # from the first admitted client's. Both now check the initial model
    # (finite, the template's shapes), the counts and the declared groups
    # with one rule and one policy, and start from the first admitted
    # client's model; a refused client is left out of the class prior and
    # still trains in later rounds, whose replies are checked as anyone's:
    # under FairFed its fairness reports count groups it never declared,
    # so each is refused on both (in-process used to declare them itself).
    federation = FederatedEstimator(
        _OnceHostileMLP(),
        n_rounds=2,
        local_epochs=1,
        on_client_error="skip",
        aggregation=FairFed(metric="dpd", beta=0.5) if fairfed else "mean",
        random_state=0,
    )
    seeds = clone(federation).set_params(n_rounds=1, aggregation="mean")
    seeds.fit(data.data, data.target, clients=data.clients)
    # Client 0's model is spoilt by its first fit: its priming.
    federation.set_params(
        estimator__hostile_seed=int(seeds.client_seeds_[0]), estimator__hostile_fit=1
    )
    messages = _errors_both_ways(
        clone(federation).set_params(on_client_error="raise"), data
    )
    assert messages[0] == messages[1]
    assert messages[0].startswith(
        "Client 0 failed the initialisation: its reply cannot be used: parameter "
        "array 0 holds NaN or infinity"
    )
    fitted = _both(federation, data)
    skipped = skip_records(fitted, "round", "client", "stage", "skipped")
    assert skipped[0] == skipped[1]
    if fairfed:
        assert [record[:2] for record in skipped[0]] == [(0, 0), (1, 0), (2, 0)]
        assert "declared no groups" in skipped[0][1][3]
    else:
        assert [record[:3] for record in skipped[0]] == [(0, 0, "initialisation")]
        # Client 0 trained in both rounds, as the others did.
        for f in fitted:
            assert sorted(r["client"] for r in f.history_ if r.get("train_loss")) == [
                0,
                0,
                1,
                1,
                2,
                2,
            ]
    in_process, on_flower = fitted
    np.testing.assert_array_equal(in_process.class_prior_, on_flower.class_prior_)
    for ours, theirs in zip(
        in_process.estimator_.coefs_, on_flower.estimator_.coefs_, strict=True
    ):
        assert np.isfinite(ours).all()
        np.testing.assert_array_equal(ours, theirs)
