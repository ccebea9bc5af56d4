"""sklearn's callback API through a federation and the searches (issue 20, part 1)."""

import numpy as np
import pandas as pd
import pytest
from sklearn import config_context
from sklearn.callback import AutoPropagatedCallback, ProgressBar, ScoringMonitor
from sklearn.callback._callback_context import get_context_path
from sklearn.metrics import roc_auc_score

from skfedida.datasets import make_federated_classification
from skfedida.federated import ClientStratifiedKFold, FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.model_selection import CoarseToFineSearchCV


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(1200, n_clients=3, random_state=0)


def _federation(**options):
    options = {"n_rounds": 4, "local_epochs": 1, "random_state": 0, **options}
    return FederatedEstimator(FairPenaltyLogisticRegression(fairness=1.0), **options)


def _fit(federation, data):
    return federation.fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )


class Recorder:
    """Every task a callback sees begin: its path of task names.

    Propagated to the estimators a search fits, as ProgressBar is.
    """

    max_propagation_depth = None

    def __init__(self):
        self.paths = []

    def setup(self, estimator, context):
        pass

    def teardown(self, estimator, context):
        pass

    def on_fit_task_begin(self, estimator, context):
        self.paths.append(tuple(ctx.task_name for ctx in get_context_path(context)))

    def on_fit_task_end(self, estimator, context):
        return False


class StopWhenFlat:
    """Early stopping: stop when a round improves training AUROC by < ``tol``."""

    def __init__(self, tol):
        self.tol, self.scores = tol, []

    def setup(self, estimator, context):
        self.scores = []

    def teardown(self, estimator, context):
        pass

    def on_fit_task_begin(self, estimator, context):
        pass

    def on_fit_task_end(self, estimator, context, *, fitted_estimator, X, y):
        if context.task_name != "round" or fitted_estimator is None:
            return False
        self.scores.append(roc_auc_score(y, fitted_estimator.predict_proba(X)[:, 1]))
        return len(self.scores) > 1 and self.scores[-1] - self.scores[-2] < self.tol


def test_scoring_monitor_scores_every_rounds_model(data):
    monitor = ScoringMonitor(scoring="roc_auc")
    fitted = _fit(_federation().set_callbacks(monitor), data)
    logged = monitor.get_logs().data_as_pandas
    assert list(logged["task_name"]) == ["round"] * 4
    # Round k's score is that of the model of k rounds.
    for k in (1, 4):
        model = _fit(_federation(n_rounds=k), data)
        expected = roc_auc_score(data.target, model.predict_proba(data.data)[:, 1])
        assert logged["roc_auc"].iloc[k - 1] == pytest.approx(expected, abs=1e-12)
    final = roc_auc_score(data.target, fitted.predict_proba(data.data)[:, 1])
    assert logged["roc_auc"].iloc[-1] == pytest.approx(final, abs=1e-12)


def test_a_callback_can_stop_the_federation_early(data):
    stopper = StopWhenFlat(tol=1e-3)
    stopped = _fit(_federation(n_rounds=30).set_callbacks(stopper), data)
    rounds = max(r["round"] for r in stopped.history_)
    assert 1 < rounds < 30
    assert len(stopper.scores) == rounds
    # The model is the federation of that many rounds.
    plain = _fit(_federation(n_rounds=rounds), data)
    np.testing.assert_array_equal(
        stopped.predict_proba(data.data), plain.predict_proba(data.data)
    )


def test_clients_are_subtasks_of_their_round(data):
    recorder = Recorder()
    _fit(_federation(n_rounds=2, client_fraction=0.67).set_callbacks(recorder), data)
    clients = [p for p in recorder.paths if p[-1].startswith("client")]
    assert len(clients) == 2 * 2  # two of three clients in each of two rounds
    assert all(p[:-1] == ("fit", "round") for p in clients)


def test_the_search_passes_its_context_to_the_federations(data):
    recorder = Recorder()
    search = CoarseToFineSearchCV(
        _federation(n_rounds=2),
        "estimator__alpha",
        low=1e-4,
        high=1e-1,
        n_coarse=2,
        n_fine=1,
        cv=ClientStratifiedKFold(2),
    ).set_callbacks(recorder, ProgressBar())
    assert isinstance(recorder, AutoPropagatedCallback)
    with config_context(enable_metadata_routing=True):
        search.fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=pd.DataFrame(data.sensitive),
        )
    deepest = {p for p in recorder.paths if p[-1].startswith("client")}
    # search -> stage -> candidate x split -> the federation's fit -> round -> client
    stages = {p[2] for p in deepest if len(p) > 2 and p[1] == "search"}
    assert stages == {"coarse search", "fine search"}
    assert any(p[-3:-1] == ("fit", "round") for p in deepest)


# A lambda grid this coarse ends some clients' ranges at once: not the point.
@pytest.mark.filterwarnings("ignore::skfedida.exceptions.EmptyRangeWarning")
def test_lambda_range_makes_clients_and_lambdas_tasks(data):
    from skfedida.model_selection import lambda_range

    recorder = Recorder()
    common = dict(
        clients=data.clients,
        sensitive_features=data.sensitive,
        lambdas=(0, 0.5),
        param="estimator__fairness",
        random_state=0,
    )
    federation = _federation(n_rounds=2)
    with_callbacks = lambda_range(
        federation, data.data, data.target, callbacks=[recorder], **common
    )
    without = lambda_range(federation, data.data, data.target, **common)
    assert with_callbacks.per_client == without.per_client
    names = {path[1:3] for path in recorder.paths if len(path) >= 3}
    assert {("client 0", "lambda 0"), ("client 2", "lambda 0.5")} <= names
    # Propagated into each federation's fit (merged with its lambda's task):
    # its rounds and their clients below the client of lambda_range.
    # (each of them fits one client's rows: one client, 0, in each round).
    assert ("fit", "client 2", "fit", "round", "client 0") in recorder.paths
