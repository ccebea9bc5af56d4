"""Same seed, same model: every estimator, every strategy, n_jobs 1 and 2."""

import numpy as np
import pandas as pd
import pytest
from _helpers import assert_same_parameters
from sklearn import config_context
from sklearn.linear_model import SGDClassifier
from sklearn.neural_network import MLPClassifier

from skfedida.datasets import make_federated_classification
from skfedida.federated import (
    ClientStratifiedKFold,
    FederatedEstimator,
    get_parameters,
)
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import make_fairness_scorer
from skfedida.model_selection import CoarseToFineSearchCV, lambda_range
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

pytestmark = pytest.mark.usefixtures("quiet")


@pytest.fixture(scope="module")
def data():
    # Unequal client sizes, so that weighting by n_k matters in averaging.
    return make_federated_classification(
        900, n_clients=3, client_sizes=[0.5, 0.3, 0.2], random_state=5
    )


STANDALONE = {
    "logistic-fit": (
        lambda seed: FairPenaltyLogisticRegression(random_state=seed),
        "fit",
    ),
    "logistic-partial_fit": (
        lambda seed: FairPenaltyLogisticRegression(random_state=seed),
        "partial_fit",
    ),
    "mlp-sgd-fit": (
        lambda seed: FairMLPClassifier(solver="sgd", max_iter=5, random_state=seed),
        "fit",
    ),
    "mlp-adam-fit": (
        lambda seed: FairMLPClassifier(solver="adam", max_iter=5, random_state=seed),
        "fit",
    ),
    "mlp-adam-partial_fit": (
        lambda seed: FairMLPClassifier(solver="adam", random_state=seed),
        "partial_fit",
    ),
}


@pytest.mark.parametrize("name", sorted(STANDALONE))
def test_fair_estimators_are_reproducible(data, name):
    make, method = STANDALONE[name]
    kwargs = {"sensitive_features": data.sensitive}
    if method == "partial_fit":
        kwargs["classes"] = [0, 1]
    models = []
    for seed in (0, 0, 1):
        model = make(seed)
        for _ in range(1 if method == "fit" else 3):
            getattr(model, method)(data.data, data.target, **kwargs)
        models.append(model)
    assert_same_parameters(models[0], models[1])
    if name.startswith("mlp") or method == "partial_fit":
        # The seed matters where there is randomness (initial weights, shuffling).
        assert any(
            p.tobytes() != q.tobytes()
            for p, q in zip(
                get_parameters(models[0]), get_parameters(models[2]), strict=True
            )
        )


def test_fairness_aware_rose_is_reproducible(data):
    draws = [
        FairnessAwareROSE(random_state=seed).fit_resample(
            data.data, data.target, sensitive_features=data.sensitive
        )[0]
        for seed in (0, 0, 1)
    ]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert draws[0].shape != draws[2].shape or not np.array_equal(draws[0], draws[2])


FEDERATED_ESTIMATORS = {
    "logistic": lambda: FairPenaltyLogisticRegression(),
    "fair-mlp": lambda: FairMLPClassifier(hidden_layer_sizes=(6,), solver="adam"),
    "sklearn-mlp": lambda: MLPClassifier(hidden_layer_sizes=(6,)),
    "sklearn-sgd": lambda: SGDClassifier(loss="log_loss"),
}


@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg", "local", "central"])
@pytest.mark.parametrize("name", sorted(FEDERATED_ESTIMATORS))
def test_federated_fits_are_identical_across_repeats_and_n_jobs(data, name, strategy):
    sampler = None if name.startswith("sklearn") else FairnessAwareROSE()
    fits = []
    for n_jobs in (1, 1, 2):
        fits.append(
            FederatedEstimator(
                FEDERATED_ESTIMATORS[name](),
                strategy=strategy,
                sampler=sampler,
                n_rounds=2,
                local_epochs=1,
                client_fraction=0.67,
                n_jobs=n_jobs,
                random_state=11,
            ).fit(
                data.data,
                data.target,
                clients=data.clients,
                sensitive_features=data.sensitive,
            )
        )
    for other in fits[1:]:
        assert_same_parameters(fits[0].estimator_, other.estimator_)
        assert fits[0].client_estimators_.keys() == other.client_estimators_.keys()
        for client, model in fits[0].client_estimators_.items():
            assert_same_parameters(model, other.client_estimators_[client])
        assert [r["train_loss"] for r in fits[0].history_] == [
            r["train_loss"] for r in other.history_
        ]


def test_model_selection_is_identical_with_n_jobs(data):
    ranges = [
        lambda_range(
            FairPenaltyLogisticRegression(),
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
            lambdas=[0.0, 0.5, 1.0, 2.0, 4.0],
            n_jobs=n_jobs,
            random_state=0,
        )
        for n_jobs in (1, 2)
    ]
    assert ranges[0].range == ranges[1].range
    np.testing.assert_array_equal(ranges[0].candidates, ranges[1].candidates)
    results = []
    for n_jobs in (1, 2):
        with config_context(enable_metadata_routing=True):
            search = CoarseToFineSearchCV(
                FederatedEstimator(
                    FairPenaltyLogisticRegression(),
                    n_rounds=1,
                    local_epochs=1,
                    sampler=FairnessAwareROSE(),
                    random_state=0,
                ),
                "estimator__alpha",
                1e-4,
                0.1,
                n_coarse=3,
                n_fine=2,
                scoring={"auc": "roc_auc", "dpd": make_fairness_scorer("dpd")},
                refit="auc",
                cv=ClientStratifiedKFold(2, shuffle=True, random_state=0),
                n_jobs=n_jobs,
            ).fit(
                data.data,
                data.target,
                clients=data.clients,
                sensitive_features=pd.DataFrame(data.sensitive),
            )
        results.append(search)
    for key in ("mean_test_auc", "mean_test_dpd"):
        np.testing.assert_array_equal(
            results[0].cv_results_[key], results[1].cv_results_[key]
        )
    assert_same_parameters(
        results[0].best_estimator_.estimator_, results[1].best_estimator_.estimator_
    )
