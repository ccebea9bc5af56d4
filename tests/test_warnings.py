"""skfedida's warnings: one class per kind, all under SkfedidaWarning."""

import ast
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn import exceptions as sklearn_exceptions
from sklearn.exceptions import UndefinedMetricWarning

import skfedida
from skfedida import exceptions
from skfedida.exceptions import (
    ClientDataWarning,
    DataScaleWarning,
    DegenerateModelWarning,
    EmptyRangeWarning,
    OperatingPointWarning,
    SensitiveFeaturesWarning,
    SkfedidaWarning,
)
from skfedida.federated import FederatedEstimator, evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import demographic_parity_difference
from skfedida.model_selection import lambda_range

ROOT = Path(skfedida.__file__).resolve().parent


def _data(n=90, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    y = (X[:, 0] + 0.5 * rng.randn(n) > 0).astype(int)
    S = rng.choice(["a", "b", "c"], n)
    clients = np.arange(n) % 3
    return X, y, S, clients


def test_every_warning_class_is_a_skfedida_warning_and_a_user_warning():
    for name in exceptions.__all__:
        cls = getattr(exceptions, name)
        assert issubclass(cls, SkfedidaWarning) and issubclass(cls, UserWarning)
        assert getattr(skfedida, name) is cls


def test_skfedida_warns_only_with_its_own_classes_or_sklearns():
    # A plain UserWarning (or no category) could only be filtered by its text.
    allowed = set(exceptions.__all__) | {
        name for name in dir(sklearn_exceptions) if name.endswith("Warning")
    }
    offending = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "warn"
            ):
                continue
            category = node.args[1] if len(node.args) > 1 else None
            for keyword in node.keywords:
                if keyword.arg == "category":
                    category = keyword.value
            name = getattr(category, "id", None)
            if name not in allowed:
                offending.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}")
    assert not offending, offending


def _unscaled_features():
    X, y, _, _ = _data()
    X[:, 0] *= 1e8
    FairPenaltyLogisticRegression(fairness=0).partial_fit(X, y, classes=[0, 1])


def _identifier_as_sensitive_attribute():
    X, y, _, _ = _data()
    FairPenaltyLogisticRegression(fairness=1.0).fit(
        X, y, sensitive_features=np.arange(len(y))
    )


def _single_class_client():
    X, y, S, clients = _data()
    y[clients == 2] = 1
    FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1).fit(
        X, y, clients=clients, sensitive_features=S
    )


def _unseen_client_at_predict():
    X, y, S, clients = _data()
    fed = FederatedEstimator(
        FairPenaltyLogisticRegression(), strategy="local", n_rounds=1
    ).fit(X, y, clients=clients, sensitive_features=S)
    fed.predict(X[:4], clients=[9, 9, 0, 0])


class _Tied:
    classes_ = np.array([0, 1])

    def predict_proba(self, X):
        p = np.where(np.arange(len(X)) % 5 == 0, 0.9, 0.3)
        return np.column_stack([1 - p, p])


def _tied_scores_at_the_threshold():
    n = 500
    evaluate_clients(
        _Tied(),
        np.zeros((n, 1)),
        np.arange(n) % 2,
        clients=np.zeros(n, int),
        sensitive_features=np.arange(n) % 3,
        threshold="prevalence",
        n_bootstrap=0,
    )


class _ConstantOncePenalised(FairPenaltyLogisticRegression):
    """Predicts one class for every row once fairness > 0."""

    def predict(self, X):
        pred = super().predict(X)
        return np.zeros_like(pred) if self.fairness > 0 else pred


def _empty_lambda_range(**kwargs):
    X, y, S, clients = _data(300)
    lambda_range(
        _ConstantOncePenalised(),
        X,
        y,
        clients=clients,
        sensitive_features=S,
        lambdas=(0, 0.1, 1.0),
        **{"band": None, "random_state": 0, **kwargs},
    )


def _degenerate_lambda_range():
    # The score never drops: the range ends on the degenerate decisions.
    _empty_lambda_range(band=(0.01, 0.99), scoring=lambda estimator, X, y: 1.0)


def _undefined_metric():
    demographic_parity_difference(
        [0, 1], [0, 1], sensitive_features=["a", "b"], min_group_size=5
    )


@pytest.mark.parametrize(
    "trigger, category, message",
    [
        (_unscaled_features, DataScaleWarning, "differ in scale"),
        (
            _identifier_as_sensitive_attribute,
            SensitiveFeaturesWarning,
            "look like an identifier",
        ),
        (_single_class_client, ClientDataWarning, "Client 2 has a single class"),
        (_unseen_client_at_predict, ClientDataWarning, r"Clients \[9\] were not seen"),
        (_tied_scores_at_the_threshold, OperatingPointWarning, "tied"),
        (_empty_lambda_range, EmptyRangeWarning, "the range is empty"),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_each_warning_has_its_own_class(trigger, category, message):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trigger()
    ours = [w for w in caught if issubclass(w.category, SkfedidaWarning)]
    assert [w.category for w in ours] == [category], ours
    assert re.search(message, str(ours[0].message))


@pytest.mark.parametrize(
    "trigger, categories",
    [
        (_tied_scores_at_the_threshold, {OperatingPointWarning}),
        (_empty_lambda_range, {EmptyRangeWarning}),
        (_degenerate_lambda_range, {DegenerateModelWarning, EmptyRangeWarning}),
        (_undefined_metric, {UndefinedMetricWarning}),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_warnings_of_the_public_functions_point_at_their_caller(trigger, categories):
    # Past the function and its @validate_params wrapper, to the user's line.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trigger()
    ours = [w for w in caught if w.category in categories]
    assert {w.category for w in ours} == categories
    assert all(w.filename == __file__ for w in ours), [w.filename for w in ours]


def _unscaled_partial_fit():
    X, y, _, _ = _data()
    FairPenaltyLogisticRegression().partial_fit(X * [1, 1, 1e6], y, classes=[0, 1])


def _identifier_like_groups_in_fit():
    X, y, _, _ = _data()
    FairPenaltyLogisticRegression(fairness=1.0).fit(
        X, y, sensitive_features=np.arange(len(y))
    )


def _penalty_without_groups_in_fit():
    X, y, _, _ = _data()
    FairPenaltyLogisticRegression(fairness=1.0).fit(X, y)


def _single_class_client_in_a_federation():
    X, y, S, clients = _data()
    y = y.copy()
    y[clients == 0] = 1
    FederatedEstimator(FairPenaltyLogisticRegression(), n_rounds=1).fit(
        X, y, clients=clients, sensitive_features=S
    )


@pytest.mark.parametrize(
    "trigger, category",
    [
        (_unscaled_partial_fit, DataScaleWarning),
        (_identifier_like_groups_in_fit, SensitiveFeaturesWarning),
        (_penalty_without_groups_in_fit, exceptions.InactivePenaltyWarning),
        (_single_class_client_in_a_federation, ClientDataWarning),
    ],
    ids=lambda value: getattr(value, "__name__", None),
)
def test_warnings_raised_inside_fit_point_at_the_users_call(trigger, category):
    # However deep in the package, past sklearn's fit wrappers, to this file.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trigger()
    ours = [w for w in caught if issubclass(w.category, category)]
    assert ours, [w.category for w in caught]
    assert all(w.filename == __file__ for w in ours), [
        (w.filename, w.lineno) for w in ours
    ]


def _norm_history(*rounds):
    return [
        {"round": r, "client": client, "update_norm": norm}
        for r, norms in enumerate(rounds, start=1)
        for client, norm in norms.items()
    ]


@pytest.mark.parametrize(
    "norms, warned, ratio",
    [
        ({"a": 1.0, "b": 100.0}, "b", "100"),  # two clients: the other is 1
        ({"a": 1.0, "b": 2.0, "c": 100.0}, "c", "66.7"),  # 100 / median(1, 2)
        ({"a": 1.0, "b": 1.0, "c": 1.0, "d": 12.0}, "d", "12"),
    ],
)
def test_an_outlying_update_is_measured_against_the_other_clients(norms, warned, ratio):
    # Stated behaviour: a client's update norm is compared with the median of
    # the *other* clients' norms. Its own norm in that median would hide it
    # whenever it is half the clients (two clients: the median of 1 and 100
    # is 50.5, "only" twice). The warning names it, its round, and its ratio.
    from skfedida.exceptions import OutlyingUpdateWarning, warn_if_outlying_updates

    with pytest.warns(OutlyingUpdateWarning) as record:
        warn_if_outlying_updates(_norm_history(norms), bounded=False)
    (message,) = [str(w.message) for w in record]
    assert f"client {warned!r} in round(s) [1] (up to {ratio} times)" in message
    assert all(f"client {k!r}" not in message for k in norms if k != warned)
    # Within the ratio of the others' median: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", OutlyingUpdateWarning)
        warn_if_outlying_updates(_norm_history({"a": 1.0, "b": 9.0}), bounded=False)
        warn_if_outlying_updates(_norm_history(norms), bounded=True)


def test_a_two_client_federation_warns_about_an_outlying_update(monkeypatch):
    # The same behaviour end to end: of two clients, the one whose parameter
    # protocol returns its parameters x 1e6 is named.
    from skfedida.exceptions import OutlyingUpdateWarning
    from skfedida.federated import _client

    X, y, S, clients = _data(n=120)
    clients = clients % 2
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(), n_rounds=2, local_epochs=1, random_state=0
    )
    seeds = federation.fit(X, y, clients=clients, sensitive_features=S).client_seeds_
    real = _client.parameter_arrays

    def scaled_for_client_1(estimator):
        arrays = real(estimator)
        if estimator.random_state == int(seeds[1]):
            arrays = [a * 1e6 for a in arrays]
        return arrays

    monkeypatch.setattr(_client, "parameter_arrays", scaled_for_client_1)
    with pytest.warns(OutlyingUpdateWarning, match=r"client 1 in round\(s\) \[1"):
        federation.fit(X, y, clients=clients, sensitive_features=S)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8, 31])
@pytest.mark.parametrize("kind", ["spread", "ties", "with-nan", "zeros"])
def test_the_median_of_the_other_clients_is_np_median_without_each(n, kind):
    # The one-pass median of the others (1,000 clients used to cost O(n^2)
    # lists per round) is np.median without each value, to the bit: ties
    # (equal norms), an odd and even number of others, NaN and zero norms.
    from skfedida.exceptions import _median_of_others

    rng = np.random.RandomState(n)
    values = {
        "spread": rng.lognormal(size=n) * 1e3,
        "ties": rng.randint(0, 3, n).astype(float),
        "with-nan": np.where(rng.rand(n) < 0.3, np.nan, rng.rand(n)),
        "zeros": np.where(rng.rand(n) < 0.6, 0.0, rng.rand(n)),
    }[kind]
    expected = [np.median(np.delete(values, i)) for i in range(n)]
    assert _median_of_others(values).tobytes() == np.array(expected).tobytes()


def test_outlying_updates_are_found_per_round_among_many_clients():
    # The same clients, rounds and ratios as the per-client lists found.
    from skfedida.exceptions import OutlyingUpdateWarning, warn_if_outlying_updates

    rng = np.random.RandomState(0)
    rounds = [
        {f"c{k}": float(v) for k, v in enumerate(rng.uniform(1, 2, 300))}
        for _ in range(3)
    ]
    rounds[1]["c7"] = 40.0
    rounds[2]["c7"] = 60.0
    rounds[2]["c250"] = 25.0
    with pytest.warns(OutlyingUpdateWarning) as record:
        warn_if_outlying_updates(_norm_history(*rounds), bounded=False)
    (message,) = [str(w.message) for w in record]
    others = np.median([v for k, v in rounds[2].items() if k != "c7"])
    assert f"client 'c7' in round(s) [2, 3] (up to {60.0 / others:.3g} times)" in (
        message
    )
    assert "client 'c250' in round(s) [3]" in message
    assert message.index("'c7'") < message.index("'c250'")
