"""lambda_range, CoarseToFineSearchCV, fairest_within and make_fedida."""

from functools import partial

import numpy as np
import pytest
from _helpers import PROXY_GROUPS, make_federation
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import make_scorer
from sklearn.model_selection import GridSearchCV, KFold

from skfedida.federated import ClientStratifiedKFold, FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import (
    make_fairness_scorer,
    make_tradeoff_scorer,
    selection_rate,
)
from skfedida.model_selection import (
    CoarseToFineSearchCV,
    fairest_within,
    lambda_range,
    make_fedida,
)
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE


class KnownOptimum(ClassifierMixin, BaseEstimator):
    """Its score is -(value - target)^2, whatever the data."""

    def __init__(self, value=0.0, target=0.037):
        self.value = value
        self.target = target

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        return self

    def predict(self, X):
        return np.zeros(len(X), dtype=int)

    def score(self, X, y):
        return -((self.value - self.target) ** 2)


X_DUMMY = np.zeros((30, 1))
Y_DUMMY = np.tile([0, 1], 15)


@pytest.mark.parametrize("target", [0.037, 1e-4, 0.1, 0.0555])
@pytest.mark.parametrize("spacing", ["linear", "log"])
def test_two_stage_search_refines_to_the_known_optimum(target, spacing):
    search = CoarseToFineSearchCV(
        KnownOptimum(target=target),
        "value",
        1e-4,
        0.1,
        n_coarse=10,
        n_fine=5,
        spacing=spacing,
        cv=3,
    )
    search.fit(X_DUMMY, Y_DUMMY)
    results = search.cv_results_
    assert len(results["params"]) == 10 + len(search.fine_values_)
    assert len(search.fine_values_) <= 5
    assert list(results["stage"]).count("coarse") == 10
    assert set(results["stage"][10:]) <= {"fine"}
    # Within one fine step of the truth.
    grid = np.sort(np.r_[search.coarse_values_, search.fine_values_])
    i = np.searchsorted(grid, search.best_params_["value"])
    step = np.max(np.diff(grid[max(i - 1, 0) : i + 2]))
    assert abs(search.best_params_["value"] - target) <= step + 1e-12
    # Fine values lie between the neighbours of the best coarse value.
    coarse = search.coarse_values_
    best_coarse = np.argmax(results["mean_test_score"][:10])
    low = coarse[max(best_coarse - 1, 0)]
    high = coarse[min(best_coarse + 1, 9)]
    assert np.all((search.fine_values_ > low) & (search.fine_values_ < high))


def test_coinciding_values_are_evaluated_once():
    # An odd number of fine values puts the middle one on the best coarse value.
    search = CoarseToFineSearchCV(
        KnownOptimum(target=0.5), "value", 0.0, 1.0, n_coarse=3, n_fine=3, cv=2
    )
    search.fit(X_DUMMY, Y_DUMMY)
    values = [p["value"] for p in search.cv_results_["params"]]
    assert len(values) == len(set(np.round(values, 12))) == 5


_federation = partial(make_federation, n=900, **PROXY_GROUPS)


def test_search_of_a_federated_model_with_fairness_scorers_and_routing():
    X, y, clients, S = _federation()
    scoring = {
        "auc": "roc_auc",
        "dpd": make_fairness_scorer("dpd"),
        "trade": make_tradeoff_scorer("roc_auc", "dpd"),
    }
    runs = []
    for _ in range(2):
        with config_context(enable_metadata_routing=True):
            search = CoarseToFineSearchCV(
                FederatedEstimator(
                    FairPenaltyLogisticRegression(),
                    n_rounds=2,
                    local_epochs=1,
                    sampler=FairnessAwareROSE(),
                    random_state=0,
                ),
                "estimator__alpha",
                1e-4,
                0.1,
                n_coarse=4,
                n_fine=2,
                scoring=scoring,
                refit="trade",
                cv=ClientStratifiedKFold(3, shuffle=True, random_state=0),
            ).fit(X, y, clients=clients, sensitive_features=S)
        runs.append(search.best_params_["estimator__alpha"])
        assert len(search.cv_results_["params"]) == 4 + len(search.fine_values_)
        assert hasattr(search, "best_estimator_")
    assert runs[0] == runs[1]


def test_nan_scores_stop_the_search():
    X, y, _, _ = _federation(n=300)
    # Routing off: the fairness scorer never receives sensitive features.
    search = CoarseToFineSearchCV(
        FairPenaltyLogisticRegression(fairness=0),
        "alpha",
        1e-4,
        0.1,
        n_coarse=3,
        n_fine=2,
        scoring={"auc": "roc_auc", "dpd": make_fairness_scorer("dpd")},
        refit="auc",
        cv=KFold(2),
    )
    with (
        pytest.warns(UserWarning),
        pytest.raises(ValueError, match="NaN mean_test_dpd"),
    ):
        search.fit(X, y)


def test_multi_metric_needs_a_rule():
    search = CoarseToFineSearchCV(
        FairPenaltyLogisticRegression(fairness=0),
        "alpha",
        1e-4,
        0.1,
        n_coarse=2,
        n_fine=1,
        scoring={"auc": "roc_auc", "acc": "accuracy"},
        refit=False,
        cv=2,
    )
    X, y, _, _ = _federation(n=200)
    with pytest.raises(ValueError, match="refit must name"):
        search.fit(X, y)
    with pytest.raises(ValueError, match="low"):
        CoarseToFineSearchCV(KnownOptimum(), "value", 1.0, 0.5, cv=2).fit(
            X_DUMMY, Y_DUMMY
        )


def test_fairest_within():
    results = {
        "mean_test_auc": np.array([0.86, 0.858, 0.855, 0.80]),
        "mean_test_dpd": np.array([-0.30, -0.20, -0.20, -0.01]),
        "mean_test_selection_rate": np.array([0.2, 0.2, 0.2, 0.2]),
    }
    # Within 0.01 of 0.86: candidates 0-2; the fairest are 1 and 2, and 1
    # performs better.
    assert fairest_within("auc", "dpd", 0.01)(results) == 1
    assert fairest_within("auc", "dpd", 0.0)(results) == 0
    assert fairest_within("auc", "dpd", 1.0)(results) == 3
    # A candidate selecting (almost) nobody is never chosen, however fair.
    results["mean_test_selection_rate"][3] = 0.005
    assert fairest_within("auc", "dpd", 1.0)(results) == 1
    assert fairest_within("auc", "dpd", 1.0, selection_rate=None)(results) == 3
    results["mean_test_selection_rate"][:] = 0.995
    with pytest.raises(ValueError, match="degenerate"):
        fairest_within("auc", "dpd", 1.0)(results)
    with pytest.raises(ValueError, match="make_scorer"):
        fairest_within("auc", "dpd")({k: results[k] for k in list(results)[:2]})
    with pytest.raises(ValueError, match="band"):
        fairest_within("auc", "dpd", band=(0.5, 0.2))
    results["mean_test_dpd"][0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fairest_within("auc", "dpd")(results)
    with pytest.raises(ValueError, match="tolerance"):
        fairest_within("auc", "dpd", -1)


def test_fairest_within_as_refit_in_grid_search():
    X, y, _, S = _federation(n=900)
    with config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            FairPenaltyLogisticRegression(),
            {"fairness": [0.0, 0.5, 2.0]},
            scoring={
                "auc": "roc_auc",
                "dpd": make_fairness_scorer("dpd", threshold="prevalence"),
                "selection_rate": make_scorer(selection_rate),
            },
            refit=fairest_within("auc", "dpd", tolerance=0.05),
            cv=3,
        ).fit(X, y, sensitive_features=S)
    results = search.cv_results_
    eligible = results["mean_test_auc"] >= results["mean_test_auc"].max() - 0.05
    assert (
        search.best_index_
        == np.flatnonzero(eligible)[np.argmax(results["mean_test_dpd"][eligible])]
    )


class CountingLogistic(FairPenaltyLogisticRegression):
    """Records the fairness values each client fits (in the fitting process)."""

    fitted = []

    def fit(self, X, y, *, sensitive_features=None, sample_weight=None):
        CountingLogistic.fitted.append((len(y), self.fairness))
        return super().fit(
            X, y, sensitive_features=sensitive_features, sample_weight=sample_weight
        )


def test_lambda_range_stops_at_the_first_value_below_the_tolerance():
    X, y, clients, S = _federation(n=1500, seed=1)
    CountingLogistic.fitted = []
    lambdas = (0.0, 0.1, 0.5, 2.0, 10.0, 50.0)
    result = lambda_range(
        CountingLogistic(),
        X,
        y,
        clients=clients,
        sensitive_features=S,
        lambdas=lambdas,
        tolerance=0.995,
        n_candidates=4,
        random_state=0,
    )
    bounds = []
    for record in result.per_client:
        scores = list(record["scores"].values())
        tried = list(record["scores"])
        baseline = scores[0]
        below = [s < 0.995 * baseline for s in scores[1:]]
        if record["stopped_at"] is not None:
            # Stopped at the first value below, and at no earlier one.
            assert below[-1] and not any(below[:-1])
            assert record["stopped_at"] == tried[-1]
            assert record["bound"] == tried[-2]
        else:
            assert not any(below) and tried == list(lambdas)
            assert record["bound"] == lambdas[-1]
        bounds.append(record["bound"])
    assert result.range == (0.0, min(bounds))
    assert any(r["stopped_at"] is not None for r in result.per_client)
    np.testing.assert_allclose(result.candidates, np.linspace(0, min(bounds), 4))
    # No client tried a value after the one where it stopped.
    assert len(CountingLogistic.fitted) == sum(
        len(r["scores"]) for r in result.per_client
    )


def test_lambda_range_bad_input():
    X, y, clients, S = _federation(n=300)
    with pytest.raises(ValueError, match="starting at 0"):
        lambda_range(
            FairPenaltyLogisticRegression(),
            X,
            y,
            clients=clients,
            sensitive_features=S,
            lambdas=(0.1, 1.0),
        )
    with pytest.raises(ValueError, match="needs clients"):
        lambda_range(
            FairPenaltyLogisticRegression(), X, y, clients=None, sensitive_features=S
        )


@pytest.mark.parametrize(
    "model, Estimator",
    [("logistic", FairPenaltyLogisticRegression), ("mlp", FairMLPClassifier)],
)
def test_make_fedida_has_the_paper_defaults_and_tunable_names(model, Estimator):
    fedida = make_fedida(model, "pfedavg", fairness=2.0, random_state=0)
    assert isinstance(fedida, FederatedEstimator)
    assert isinstance(fedida.estimator, Estimator)
    assert isinstance(fedida.sampler, FairnessAwareROSE)
    params = fedida.get_params()
    assert params["n_rounds"] == 10 and params["local_epochs"] == 5
    assert params["estimator__learning_rate"] == 0.1
    assert params["estimator__batch_size"] == params["batch_size"] == 128
    assert params["estimator__fairness"] == 2.0 and params["strategy"] == "pfedavg"
    assert params["resample"] == "batch"
    with pytest.raises(ValueError, match="model must be"):
        make_fedida("svm")
    with pytest.raises(ValueError, match="strategy must be"):
        make_fedida(strategy="local")


def test_make_fedida_in_three_lines():
    X, y, clients, S = _federation(n=900)
    fedida = make_fedida(n_rounds=2, random_state=0)
    fedida.fit(X, y, clients=clients, sensitive_features=S)
    assert fedida.predict(X).shape == (len(y),)


def test_an_integer_parameter_is_searched_on_the_grids_rounded_to_nearest():
    # n_neighbors takes integers only: the coarse grid 1, 3.33, 5.67, 8 is
    # searched as its nearest integers 1, 3, 6, 8 (not truncated to 1, 3, 5,
    # 8), each once.
    from sklearn.neighbors import KNeighborsClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = (X[:, 0] > 0).astype(int)
    search = CoarseToFineSearchCV(
        KNeighborsClassifier(), "n_neighbors", 1, 8, n_coarse=4, n_fine=2, cv=3
    ).fit(X, y)
    assert search.coarse_values_.tolist() == [1, 3, 6, 8]
    values = [p["n_neighbors"] for p in search.cv_results_["params"]]
    assert all(isinstance(v, int) for v in values)
    assert len(set(values)) == len(values)


def _table_scorer(table):
    """A scorer reading a fixed table of the model's fairness (an oracle)."""
    return lambda model, X, y: table[model.fairness]


def test_lambda_range_measures_every_score_against_the_baseline():
    # The paper's rule: stop at the first lambda whose score is below
    # tolerance * score(0). Scores that fall 0.3% a step each pass a test
    # against the previous score, but the third is 0.9% below the baseline.
    X, y, clients, S = _federation(n=300, seed=2)
    table = {0.0: 1.0, 0.1: 0.997, 0.2: 0.994, 0.5: 0.991, 1.0: 0.988}
    result = lambda_range(
        FairPenaltyLogisticRegression(),
        X,
        y,
        clients=clients,
        sensitive_features=S,
        lambdas=list(table),
        tolerance=0.995,
        scoring=_table_scorer(table),
        band=None,
        random_state=0,
    )
    for record in result.per_client:
        assert record["stopped_at"] == 0.2
        assert record["stopped_because"] == "score"
        assert record["bound"] == 0.1
    assert result.range == (0.0, 0.1)


class _ScriptedPredictions(FairPenaltyLogisticRegression):
    """Three-class decisions set by the fairness weight (a scripted model).

    0: each class for a third of the rows; 0.5: the third class for one row
    in 400 (a rare class, rarely predicted); 1.0 and more: the first class
    for every row (a degenerate model).
    """

    def predict(self, X):
        n = len(X)
        if self.fairness >= 1.0:
            return np.full(n, self.classes_[0])
        if self.fairness > 0:
            predicted = self.classes_[np.arange(n) % 2]
            predicted[0] = self.classes_[2]
            return predicted
        return self.classes_[np.arange(n) % 3]


def test_a_multiclass_model_is_degenerate_by_its_most_predicted_class():
    # With more than two classes, band[1] bounds the share of the most
    # predicted class; a rare class predicted for 0.25% of the rows (below
    # band[0]) is no sign of a degenerate model.
    from skfedida.exceptions import DegenerateModelWarning

    rng = np.random.default_rng(3)
    n_train, n_valid = 150, 400
    X = rng.normal(size=(n_train + n_valid, 3))
    y = np.arange(n_train + n_valid) % 3
    S = rng.integers(0, 2, n_train + n_valid)
    clients = np.zeros(n_train + n_valid, dtype=int)
    train, valid = slice(0, n_train), slice(n_train, None)
    with pytest.warns(DegenerateModelWarning, match="lambda = 1.0"):
        result = lambda_range(
            _ScriptedPredictions(),
            X[train],
            y[train],
            clients=clients[train],
            sensitive_features=S[train],
            validation=(X[valid], y[valid], clients[valid], S[valid]),
            lambdas=[0.0, 0.5, 1.0, 2.0],
            scoring=lambda model, X, y: 1.0,
        )
    (record,) = result.per_client
    assert record["stopped_because"] == "selection rate"
    assert record["stopped_at"] == 1.0
    assert record["bound"] == 0.5
