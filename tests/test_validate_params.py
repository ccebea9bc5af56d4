"""``@validate_params`` on the public functions, as sklearn's own functions.

A parameter of the wrong type is an ``InvalidParameterError`` naming it; what
the functions accepted before (documented or not) is still accepted, and the
functions' own, clearer messages about values stay (tests elsewhere check them).
"""

import inspect
import types
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn import get_config
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.utils._param_validation import InvalidParameterError

from skfedida import datasets, federated, metrics, model_selection, penalty
from skfedida._groups import encode_groups
from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator, evaluate_clients, set_parameters
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import (
    demographic_parity_difference,
    federated_threshold,
    make_fairness_scorer,
)
from skfedida.neural_network import FairMLPClassifier


def _public_functions():
    functions = {}
    for module in (metrics, datasets, penalty, federated, model_selection):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                functions[name] = obj
    return functions


FUNCTIONS = _public_functions()

_METRIC_DATA = dict(y_true=[0, 1], y_pred=[0, 1], sensitive_features=["a", "b"])
_PENALTY_DATA = dict(scores=np.zeros(2), y=np.zeros(2, int), groups=np.arange(2))
_EVALUATION_DATA = dict(
    X=np.zeros((2, 1)), y=[0, 1], clients=[0, 0], sensitive_features=["a", "b"]
)

# (function, keyword arguments with one of the wrong type, that parameter)
WRONG_TYPES = [
    *[
        (name, {**_METRIC_DATA, "pos_label": [1]}, "pos_label")
        for name in (
            "demographic_parity_difference",
            "demographic_parity_ratio",
            "false_positive_rate_difference",
            "true_positive_rate_difference",
            "positive_predictive_value_difference",
            "equalized_odds_difference",
            "equalized_odds_ratio",
            "equal_opportunity_difference",
            "fairness_summary",
            "group_report",
        )
    ],
    ("demographic_parity_difference", {**_METRIC_DATA, "method": 1}, "method"),
    ("group_report", {**_METRIC_DATA, "metrics": [len]}, "metrics"),
    ("demographic_parity_difference", {**_METRIC_DATA, "soft": "yes"}, "soft"),
    (
        "demographic_parity_ratio",
        {**_METRIC_DATA, "sensitive_features": None},
        "sensitive_features",
    ),
    ("fairness_summary", {**_METRIC_DATA, "min_group_size": 1.5}, "min_group_size"),
    ("group_report", {**_METRIC_DATA, "sample_weight": "equal"}, "sample_weight"),
    ("equalized_odds_difference", {**_METRIC_DATA, "agg": max}, "agg"),
    ("score_histogram", {"scores": [0.5], "n_bins": "10"}, "n_bins"),
    ("score_histogram", {"scores": 0.5}, "scores"),
    ("threshold_at_rate", {"histograms": [1.0], "rate": "0.5"}, "rate"),
    ("federated_threshold", {"client_scores": 0.5, "rate": 0.5}, "client_scores"),
    ("federated_threshold", {"client_scores": [[0.5]], "rate": None}, "rate"),
    ("federated_operating_point", {"client_scores": 0.5, "rate": 0.5}, "client_scores"),
    (
        "federated_operating_point",
        {"client_scores": [[0.5]], "rate": 0.5, "n_bins": 2.0},
        "n_bins",
    ),
    ("selection_rate", {"y_true": [0], "y_pred": [0], "pos_label": {1}}, "pos_label"),
    ("make_fairness_scorer", {"metric": 3}, "metric"),
    ("make_fairness_scorer", {"greater_is_better": "yes"}, "greater_is_better"),
    ("make_fairness_scorer", {"sensitive": 1.5}, "sensitive"),
    ("make_tradeoff_scorer", {"fairness": 3}, "fairness"),
    ("make_tradeoff_scorer", {"weight": "1"}, "weight"),
    (
        "make_tradeoff_scorer",
        {"fairness_response_method": "decision_function"},
        "fairness_response_method",
    ),
    ("evaluate_clients", {"estimator": object(), **_EVALUATION_DATA}, "estimator"),
    (
        "evaluate_clients",
        {"estimator": LogisticRegression(), **_EVALUATION_DATA, "n_bootstrap": 0.5},
        "n_bootstrap",
    ),
    (
        "evaluate_clients",
        {"estimator": LogisticRegression(), **_EVALUATION_DATA, "metrics": "dpd"},
        "metrics",
    ),
    ("get_parameters", {"estimator": np.zeros(3)}, "estimator"),
    (
        "set_parameters",
        {"estimator": SGDClassifier(), "parameters": 3},
        "parameters",
    ),
    ("n_samples_seen", {"estimator": "model"}, "estimator"),
    ("group_penalty", {**_PENALTY_DATA, "n_groups": 2.0}, "n_groups"),
    ("individual_penalty", {**_PENALTY_DATA, "sample_weight": 1.0}, "sample_weight"),
    ("standardized_group_penalty", {**_PENALTY_DATA, "scores": None}, "scores"),
    (
        "lambda_range",
        {
            "estimator": FairPenaltyLogisticRegression(),
            "X": [[0.0]],
            "y": [0],
            "clients": [0],
            "scoring": 3,
        },
        "scoring",
    ),
    (
        "lambda_range",
        {
            "estimator": FairPenaltyLogisticRegression(),
            "X": [[0.0]],
            "y": [0],
            "clients": [0],
            "n_candidates": 5.0,
        },
        "n_candidates",
    ),
    ("fairest_within", {"performance": 1, "fairness": "dpd"}, "performance"),
    ("fairest_within", {"performance": "auc", "fairness": "dpd", "band": 0.5}, "band"),
    ("make_fedida", {"fairness": "high"}, "fairness"),
    ("make_fedida", {"sampler": "rose"}, "sampler"),
    ("load_adult", {"split": 3}, "split"),
    ("make_federated_classification", {"n_samples": 100.0}, "n_samples"),
    (
        "make_federated_classification",
        {"sensitive_attributes": ["race"]},
        "sensitive_attributes",
    ),
    ("make_roc_like", {"n_features": "7"}, "n_features"),
]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_every_public_function_constrains_each_of_its_parameters(name):
    function = FUNCTIONS[name]
    constraints = getattr(function, "_skl_parameter_constraints", None)
    assert constraints is not None, f"{name} is not decorated with @validate_params"
    parameters = [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    assert sorted(constraints) == sorted(parameters)


def test_every_public_function_has_a_wrong_type_case():
    assert {name for name, _, _ in WRONG_TYPES} == set(FUNCTIONS)


@pytest.mark.parametrize(
    "name, kwargs, parameter",
    WRONG_TYPES,
    ids=[f"{name}-{parameter}" for name, _, parameter in WRONG_TYPES],
)
def test_a_wrong_type_is_an_invalid_parameter_error_naming_it(name, kwargs, parameter):
    function = FUNCTIONS[name]
    with pytest.raises(
        InvalidParameterError,
        match=rf"^The '{parameter}' parameter of {name} must be .* Got .* instead\.$",
    ):
        function(**kwargs)


def test_errors_of_nested_functions_name_the_function_called():
    # make_roc_like passes **kwargs on to make_federated_classification.
    with pytest.raises(
        InvalidParameterError, match="The 'class_sep' parameter of make_roc_like"
    ):
        datasets.make_roc_like(class_sep="wide")


def test_inputs_accepted_before_are_still_accepted():
    y = np.array([0, 1, 1, 0, 1, 0])
    S = np.array(["a", "a", "a", "b", "b", "b"])
    expected = demographic_parity_difference(y, y, sensitive_features=S)
    # Any Mapping of columns, encoded groups, one weight for every row, a
    # numpy scalar label.
    for kwargs in (
        dict(sensitive_features=types.MappingProxyType({"s": S})),
        dict(sensitive_features=encode_groups(S)),
        dict(sensitive_features=S, sample_weight=2.0),
        dict(sensitive_features=S, pos_label=np.int64(1)),
    ):
        assert demographic_parity_difference(y, y, **kwargs) == expected
    # Iterables of per-client arrays.
    scores = [np.linspace(0, 1, 11), np.linspace(0, 1, 5)]
    assert federated_threshold(iter(scores), 0.5) == federated_threshold(scores, 0.5)
    model = SGDClassifier(loss="log_loss", random_state=0).fit(np.eye(2), [0, 1])
    set_parameters(model, (np.zeros_like(p) for p in (model.coef_, model.intercept_)))
    assert not model.coef_.any()
    # Columns of X given as an Index; one number as every group's share.
    scorer = make_fairness_scorer("dpd", sensitive=pd.Index(["s"]))
    assert "sensitive=Index" in repr(scorer)
    data = make_federated_classification(50, n_clients=2, group_proportions=1.0)
    assert data.group_proportions.shape == (2, 4)
    # No clients: every row is one client's.
    report = evaluate_clients(
        LogisticRegression().fit(data.data, data.target),
        data.data,
        data.target,
        clients=None,
        sensitive_features=data.sensitive,
        n_bootstrap=0,
    )
    assert len(report.per_client) == 1


def test_the_estimators_call_the_penalties_with_validation_skipped(monkeypatch):
    # The check costs about 40 us a call, the skipped one about 0.3 us: the
    # penalties run once per objective evaluation, tens of thousands of times
    # in a minibatch fit, so they must always be called in the fit context.
    skipped = []
    for name, function in penalty.PENALTIES.items():

        def spy(*args, _function=function, **kwargs):
            skipped.append(get_config()["skip_parameter_validation"])
            return _function(*args, **kwargs)

        monkeypatch.setitem(penalty.PENALTIES, name, spy)
    data = make_federated_classification(300, n_clients=2, random_state=0)
    X, y, S = data.data, data.target, data.sensitive
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        FairPenaltyLogisticRegression(fairness=1).fit(X, y, sensitive_features=S)
        FairPenaltyLogisticRegression(fairness=1, penalty="individual").partial_fit(
            X, y, classes=[0, 1], sensitive_features=S
        )
        FairMLPClassifier(
            fairness=1, penalty="group_standardized", max_iter=2, random_state=0
        ).fit(X, y, sensitive_features=S)
        for strategy in ("fedavg", "pfedavg"):
            FederatedEstimator(
                FairPenaltyLogisticRegression(fairness=1),
                strategy=strategy,
                n_rounds=1,
                random_state=0,
            ).fit(X, y, clients=data.clients, sensitive_features=S)
    assert skipped and all(skipped)
