"""Behaviours of the federation's server side that mutants showed unguarded (issue 32).

Each test states what the server, the aggregators, the reply checks or the
evaluation must do, at options other than the defaults where the defaults
hide a mistake; ``benchmarks/mutants/federated.py`` lists the mistakes.
"""

import numpy as np
import pytest
from _helpers import small_federation

from skfedida.datasets import make_federated_classification
from skfedida.federated import evaluate_clients


@pytest.fixture(scope="module")
def data():
    return make_federated_classification(900, n_clients=3, random_state=0)


def _fit(federation, data, **fit):
    return federation.fit(
        data.data,
        data.target,
        clients=data.clients,
        sensitive_features=data.sensitive,
        **fit,
    )


# -- evaluate_clients ----------------------------------------------------------


def test_prevalence_threshold_matches_the_training_prevalence(data):
    # threshold="prevalence" compares models at the share of positives they
    # were trained on (class_prior_), whatever the evaluation rows hold: on
    # rows with half positives the target stays the training share.
    federation = _fit(small_federation(n_rounds=2), data)
    prior = federation.class_prior_[-1]
    positives = np.flatnonzero(data.target == 1)
    negatives = np.flatnonzero(data.target == 0)[: positives.size]
    rows = np.sort(np.r_[positives, negatives])
    assert data.target[rows].mean() == 0.5 and abs(prior - 0.5) > 0.1
    report = evaluate_clients(
        federation,
        data.data[rows],
        data.target[rows],
        clients=data.clients[rows],
        sensitive_features={k: v[rows] for k, v in data.sensitive.items()},
        threshold="prevalence",
        n_bootstrap=0,
    )
    assert report.target_rate == pytest.approx(prior, abs=1e-12)
    assert report.achieved_rate == pytest.approx(prior, abs=1e-12)
