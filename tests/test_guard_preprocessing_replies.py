"""The gate's rules for the preprocessing statistics, one lie at a time.

Each federated transformer's server checks every client's answer before it
combines it (``skfedida/_statistics_replies.py``), in-process as on
Flower. Here the last of three clients answers honestly but for one lie, and
the fit must stop naming that client and the rule its answer breaks: each
rule catches its own lie, in the round it is told (a rule left out may let a
later one catch the lie in another round, or let it through).
"""

import copy

import numpy as np
import pytest

from skfedida.preprocessing import (
    FederatedMinMaxScaler,
    FederatedOneHotEncoder,
    FederatedSimpleImputer,
    FederatedStandardScaler,
)

N_CLIENTS = 3
CLIENTS = np.repeat(np.arange(N_CLIENTS), 20)


def _numbers(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(5.0, 2.0, size=(CLIENTS.size, 2))
    X[rng.random(X.shape) < 0.1] = np.nan
    return X


def _categories():
    values = np.array(["a", "b", "c"], dtype=object)
    return values[np.arange(CLIENTS.size) % 3][:, None]


def _last_client_lies(monkeypatch, cls, lie):
    """The third client's answers pass through ``lie(answer, query)``."""
    real = cls._answer
    calls = []

    def answer(self, X, query):
        result = real(self, X, query)
        calls.append(None)
        if len(calls) % N_CLIENTS == 0:  # clients answer in order, every round
            return lie(copy.deepcopy(result), query)
        return result

    monkeypatch.setattr(cls, "_answer", answer)


def _fails(transformer, X, rule):
    with pytest.raises(RuntimeError, match=rf"Client 2 failed .*{rule}"):
        transformer.fit(X, clients=CLIENTS)


def test_a_scaler_sum_outside_its_extremes_fails_in_its_own_round(monkeypatch):
    """n values in [min, max] sum to within n * [min, max]: a sum beyond is
    refused when it is sent, before the federation's mean is made of it."""

    def lie(answer, query):
        if query["statistic"] == "sums":
            answer["sum"] = answer["sum"] + 1e6
        return answer

    _last_client_lies(monkeypatch, FederatedStandardScaler, lie)
    _fails(FederatedStandardScaler(), _numbers(), "lies outside")


def test_a_scaler_second_round_must_count_the_first_rounds_values(monkeypatch):
    """Both rounds describe the same values: a second answer counting one
    value fewer of a feature is refused for its counts."""

    def lie(answer, query):
        if query["statistic"] == "moments about":
            answer["n"] = answer["n"] - np.array([1.0, 0.0])
        return answer

    _last_client_lies(monkeypatch, FederatedStandardScaler, lie)
    _fails(FederatedStandardScaler(), _numbers(), "differ from those it sent")


def test_a_min_max_client_must_count_the_rows_it_holds(monkeypatch):
    """Its row count (n_samples_seen_'s share) is the rows it declared."""

    def lie(answer, query):
        answer["n"] = np.int64(answer["n"] - 1)
        return answer

    _last_client_lies(monkeypatch, FederatedMinMaxScaler, lie)
    _fails(FederatedMinMaxScaler(), _numbers(), "it counts 19 rows; it declared 20")


def test_a_min_max_client_minimum_may_not_lie_above_its_maximum(monkeypatch):
    def lie(answer, query):
        answer["min"], answer["max"] = answer["max"], answer["min"]
        return answer

    _last_client_lies(monkeypatch, FederatedMinMaxScaler, lie)
    _fails(FederatedMinMaxScaler(), _numbers(), "minimum is above its maximum")


def test_an_encoders_category_counts_add_up_to_its_rows(monkeypatch):
    """With categories="auto" every row takes one category of each feature."""

    def lie(answer, query):
        answer["counts"][0][0] -= 1
        return answer

    _last_client_lies(monkeypatch, FederatedOneHotEncoder, lie)
    _fails(FederatedOneHotEncoder(), _categories(), "category counts add up to 19")


def test_an_encoders_categories_are_its_categories_parameter(monkeypatch):
    """Given categories, every client answers for exactly those."""

    def lie(answer, query):
        answer["categories"] = [np.array(["a", "b", "z"], dtype=object)]
        return answer

    _last_client_lies(monkeypatch, FederatedOneHotEncoder, lie)
    encoder = FederatedOneHotEncoder(categories=[["a", "b", "c"]])
    _fails(encoder, _categories(), "not the encoder's categories parameter")


def test_an_imputers_value_counts_add_up_to_its_values(monkeypatch):
    """most_frequent: the counts of a feature's values are its values."""

    def lie(answer, query):
        answer["counts"][0][0] -= 1
        return answer

    _last_client_lies(monkeypatch, FederatedSimpleImputer, lie)
    imputer = FederatedSimpleImputer(strategy="most_frequent")
    _fails(imputer, np.round(_numbers()), "value counts add up to")


def test_a_median_interval_and_the_values_below_it_fit_in_the_values(monkeypatch):
    """The values below an interval and those in it are distinct values of
    the feature: together at most its count."""

    def lie(answer, query):
        if query["statistic"] == "interval counts":
            j = int(query["intervals"][0][0])
            answer["below"][0] = np.int64(answer["n"][j])
        return answer

    _last_client_lies(monkeypatch, FederatedSimpleImputer, lie)
    imputer = FederatedSimpleImputer(strategy="median")
    _fails(imputer, _numbers(), "counts and those below it add up to")


def test_an_imputers_object_flag_is_the_other_clients(monkeypatch):
    """Whether the columns hold objects is one fact of the federation."""

    def lie(answer, query):
        answer["object"] = not answer["object"]
        return answer

    _last_client_lies(monkeypatch, FederatedSimpleImputer, lie)
    _fails(FederatedSimpleImputer(), _numbers(), "flag is not the other clients'")
