"""Fitted objects round-trip through pickle and joblib with identical predictions."""

import io
import pickle
import warnings

import joblib
import numpy as np
import pytest
from _helpers import make_federation
from sklearn.metrics import make_scorer

from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import (
    make_fairness_scorer,
    make_tradeoff_scorer,
    selection_rate,
)
from skfedida.model_selection import CoarseToFineSearchCV, fairest_within
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

X, y, CLIENTS, S = make_federation(600, as_frame=True)


def _fitted():
    with warnings.catch_warnings(action="ignore"):
        yield (
            "logistic",
            FairPenaltyLogisticRegression().fit(X, y, sensitive_features=S),
        )
        yield (
            "mlp",
            FairMLPClassifier(hidden_layer_sizes=(5,), max_iter=5, random_state=0).fit(
                X, y, sensitive_features=S
            ),
        )
        for strategy in ("fedavg", "pfedavg", "local", "central"):
            yield (
                strategy,
                FederatedEstimator(
                    FairPenaltyLogisticRegression(),
                    strategy=strategy,
                    n_rounds=2,
                    local_epochs=1,
                    sampler=FairnessAwareROSE(),
                    random_state=0,
                ).fit(X, y, clients=CLIENTS, sensitive_features=S),
            )
        yield (
            "search",
            CoarseToFineSearchCV(
                FairPenaltyLogisticRegression(fairness=0),
                "alpha",
                1e-4,
                0.1,
                n_coarse=2,
                n_fine=1,
                scoring={
                    "auc": "roc_auc",
                    "acc": "accuracy",
                    "selection_rate": make_scorer(selection_rate),
                },
                refit=fairest_within("auc", "acc", 0.01),
                cv=2,
            ).fit(X, y),
        )


@pytest.mark.parametrize(
    "name, model", list(_fitted()), ids=lambda v: v if isinstance(v, str) else ""
)
@pytest.mark.parametrize("dump", ["pickle", "joblib"])
def test_round_trip_keeps_predictions(name, model, dump):
    if dump == "pickle":
        restored = pickle.loads(pickle.dumps(model))
    else:
        buffer = io.BytesIO()
        joblib.dump(model, buffer)
        buffer.seek(0)
        restored = joblib.load(buffer)
    kwargs = {"clients": CLIENTS} if isinstance(model, FederatedEstimator) else {}
    np.testing.assert_array_equal(
        restored.predict_proba(X, **kwargs), model.predict_proba(X, **kwargs)
    )


def test_fitted_sampler_and_scorers_round_trip():
    rose = FairnessAwareROSE(random_state=0)
    rose.fit_resample(X, y, sensitive_features=S)
    restored = pickle.loads(pickle.dumps(rose))
    np.testing.assert_array_equal(restored.sample_indices_, rose.sample_indices_)
    model = FairPenaltyLogisticRegression().fit(X, y, sensitive_features=S)
    for scorer in (make_fairness_scorer("dpd"), make_tradeoff_scorer()):
        again = pickle.loads(pickle.dumps(scorer))
        assert again(model, X, y, sensitive_features=S) == scorer(
            model, X, y, sensitive_features=S
        )
