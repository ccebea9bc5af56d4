"""Bad input to the federation, preprocessing and post-processing is named.

Guards the project's rule for skfedida.federated, skfedida.preprocessing
and skfedida.postprocessing (the Flower apps: test_bad_input_flower.py):
bad input gets a clear error naming the parameter, column or client, and
nothing is silently dropped. Where a check is a comparison, both sides of
its boundary are tested: the first refused value and the last accepted
one, so that a check loosened by one (``<`` for ``<=``) fails a test. Some
of skfedida's checks repeat scikit-learn's parameter validation; they are
what guards a fit run with ``sklearn.config_context(
skip_parameter_validation=True)``, and are tested there.
"""

import importlib
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import make_federation, small_federation
from imblearn.over_sampling import SMOTE
from sklearn import config_context
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skfedida.exceptions import ClientDataWarning
from skfedida.federated import (
    ClientStratifiedKFold,
    DifferentialPrivacy,
    FairFed,
    QFedAvg,
    TrimmedMean,
    evaluate_clients,
    n_samples_seen,
)
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.postprocessing import FederatedThresholdOptimizer
from skfedida.preprocessing import (
    FederatedMinMaxScaler,
    FederatedSimpleImputer,
    FederatedStandardScaler,
)


@pytest.fixture(scope="module")
def data():
    X, y, clients, S = make_federation(n=300, frame=False)
    return X, y, clients, S


def _fit(federation, data, **fit):
    X, y, clients, S = data
    return federation.fit(X, y, clients=clients, sensitive_features=S, **fit)


def test_the_flower_backend_without_flower_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "flwr", None)  # import flwr fails
    monkeypatch.delitem(sys.modules, "skfedida.flower", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'skfedida\[flower\]'"):
        importlib.import_module("skfedida.flower")


# -- aggregators ----------------------------------------------------------------


@pytest.mark.parametrize("beta", [-0.1, 0.5, "0.2"])
def test_a_trimmed_mean_beta_outside_zero_to_half_is_refused(data, beta):
    with pytest.raises(ValueError, match=r"TrimmedMean's beta must be in \[0, 0\.5\)"):
        _fit(small_federation(aggregation=TrimmedMean(beta=beta)), data)


@pytest.mark.parametrize("beta", [0.0, 0.49])
def test_a_trimmed_mean_beta_at_the_edges_of_its_range_is_accepted(data, beta):
    assert _fit(small_federation(aggregation=TrimmedMean(beta=beta)), data).n_rounds


@pytest.mark.parametrize("q", [-1e-9, np.nan, True, "1"])
def test_a_qfedavg_q_that_is_not_a_finite_number_of_zero_or_more_is_refused(data, q):
    with pytest.raises(ValueError, match=r"QFedAvg needs a finite q >= 0; got q="):
        _fit(small_federation(aggregation=QFedAvg(q=q)), data)


@pytest.mark.parametrize("rate", [0, -0.1, np.inf, True])
def test_a_qfedavg_client_learning_rate_not_above_zero_is_refused(data, rate):
    with pytest.raises(ValueError, match=r"finite client_learning_rate > 0; got"):
        _fit(small_federation(aggregation=QFedAvg(client_learning_rate=rate)), data)


def test_qfedavg_with_q_zero_and_a_small_client_learning_rate_is_accepted(data):
    aggregation = QFedAvg(q=0, client_learning_rate=1e-3)
    assert _fit(small_federation(aggregation=aggregation), data).n_rounds


@pytest.mark.parametrize(
    "options",
    [
        {"metric": "auc"},
        {"beta": -0.1},
        {"beta": "1"},
        {"min_group_size": True},
        {"min_group_size": 1.5},
    ],
    ids=["metric", "negative beta", "string beta", "bool size", "float size"],
)
def test_fairfed_options_out_of_range_are_named(data, options):
    with pytest.raises(ValueError, match=r"FairFed needs metric .* beta >= 0 and"):
        _fit(small_federation(aggregation=FairFed(**options)), data)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"aggregation": "max"}, r"aggregation must be one of .*got 'max'"),
        ({"aggregation": object()}, r"aggregation must be .*or an aggregator"),
        ({"dp": "yes"}, r"dp must be a DifferentialPrivacy object or None"),
        ({"max_update_norm": "mean"}, r"max_update_norm must be a number > 0"),
        ({"max_update_norm": 0.0}, r"max_update_norm must be a number > 0"),
    ],
)
def test_the_federations_own_checks_hold_with_sklearn_validation_skipped(
    data, options, message
):
    # sklearn's validation refuses these first; skipped, skfedida's own checks
    # must still refuse them before any round.
    with (
        config_context(skip_parameter_validation=True),
        pytest.raises(ValueError, match=message),
    ):
        _fit(small_federation(**options), data)


def test_the_smallest_update_bound_is_accepted_with_validation_skipped(data):
    with config_context(skip_parameter_validation=True):
        assert _fit(small_federation(max_update_norm=1e-12), data).n_rounds


# -- differential privacy -------------------------------------------------------


@pytest.mark.parametrize("name", ["noise_multiplier", "clipping_norm"])
@pytest.mark.parametrize("value", [0, 0.0, -1.0, np.inf, np.nan, True, "1"])
def test_dp_noise_and_clipping_not_finite_and_positive_are_refused(data, name, value):
    dp = DifferentialPrivacy(**{name: value}, noise_seed=0)
    with pytest.raises(ValueError, match=rf"DifferentialPrivacy's {name} must be a"):
        _fit(small_federation(dp=dp), data)


@pytest.mark.parametrize("name", ["noise_multiplier", "clipping_norm"])
def test_dp_noise_and_clipping_just_above_zero_are_accepted(data, name):
    dp = DifferentialPrivacy(**{name: 1e-9}, noise_seed=0)
    assert _fit(small_federation(dp=dp), data).privacy_.n_releases == 1


@pytest.mark.parametrize("delta", [0, 0.0, 1, np.nan, True])
def test_a_dp_target_delta_outside_zero_to_one_is_refused(data, delta):
    dp = DifferentialPrivacy(target_delta=delta, noise_seed=0)
    with pytest.raises(ValueError, match=r"target_delta must be in \(0, 1\)"):
        _fit(small_federation(dp=dp), data)


@pytest.mark.parametrize("seed", [-1, True, 1.5, "0"])
def test_a_dp_noise_seed_that_is_not_an_int_of_zero_or_more_is_refused(data, seed):
    dp = DifferentialPrivacy(noise_seed=seed)
    with pytest.raises(ValueError, match=r"noise_seed must be None or an int >= 0"):
        _fit(small_federation(dp=dp), data)


def test_a_dp_noise_seed_of_zero_is_accepted(data):
    dp = DifferentialPrivacy(noise_seed=0)
    assert _fit(small_federation(dp=dp), data).privacy_.n_releases == 1


@pytest.mark.parametrize("n_rounds", [-1, True, 1.0])
def test_epsilon_of_a_round_count_that_is_not_an_int_of_zero_or_more_is_refused(
    n_rounds,
):
    with pytest.raises(ValueError, match=r"n_rounds must be an int >= 0; got"):
        DifferentialPrivacy().epsilon(n_rounds)


def test_epsilon_of_zero_rounds_is_zero():
    assert DifferentialPrivacy().epsilon(0) == 0.0


# -- the federation's fit and predict -------------------------------------------


def test_a_federation_fitted_without_y_says_y_is_required(data):
    X, _, clients, S = data
    with pytest.raises(ValueError, match="requires y to be passed"):
        small_federation().fit(X, None, clients=clients, sensitive_features=S)


@pytest.mark.parametrize("epochs", [True, [True, True, True]])
def test_boolean_local_epochs_are_refused_not_read_as_one_epoch(data, epochs):
    with pytest.raises(ValueError, match="local_epochs must be whole numbers"):
        _fit(small_federation(local_epochs=epochs), data)


@pytest.mark.parametrize("shape", ["short", "long", "column"])
def test_client_ids_not_one_per_row_are_refused_in_fit(data, shape):
    X, y, clients, S = data
    clients = {
        "short": clients[:-1],
        "long": np.append(clients, 0),
        "column": clients[:, None],
    }[shape]
    with pytest.raises(ValueError, match=r"clients must hold one id per row: 300"):
        small_federation().fit(X, y, clients=clients, sensitive_features=S)


@pytest.mark.parametrize("offset", [-1, 1])
def test_client_ids_not_one_per_row_are_refused_in_predict(data, offset):
    X, _, clients, _ = data
    local = _fit(small_federation(strategy="local"), data)
    ids = np.resize(clients, clients.size + offset)
    with pytest.raises(ValueError, match=rf"clients has {ids.size} ids for 300 rows"):
        local.predict(X, clients=ids)
    assert local.predict(X, clients=clients).shape == (300,)


def test_warm_start_with_another_strategy_is_refused(data):
    fitted = _fit(small_federation(warm_start=True), data)
    fitted.set_params(strategy="pfedavg")
    with pytest.raises(ValueError, match=r"strategy='fedavg'.*strategy='pfedavg'"):
        _fit(fitted, data)


def test_warm_start_with_other_classes_is_refused(data):
    X, y, clients, S = data
    fitted = _fit(small_federation(warm_start=True), data)
    with pytest.raises(ValueError, match=r"same clients \[0, 1, 2\] and classes"):
        fitted.fit(X, y + 1, clients=clients, sensitive_features=S)


def _client_of(data, n_rows):
    """The data with client 2 cut to ``n_rows`` rows (one of each class)."""
    X, y, clients, S = data
    own = np.flatnonzero(clients == 2)
    first = [own[y[own] == 0][0], own[y[own] == 1][0]][:n_rows]
    keep = np.sort(np.concatenate([np.flatnonzero(clients != 2), first]))
    return X[keep], y[keep], clients[keep], S[keep]


def test_a_client_of_two_rows_keeps_one_with_half_held_out(data):
    # ceil(0.5 * 2) = 1 held-out row: the smallest client that can train.
    federation = small_federation(validation_fraction=0.5)
    with pytest.warns(ClientDataWarning, match="Client 2 has a single class"):
        _fit(federation, _client_of(data, 2))
    assert federation.client_sizes_[-1] == 1


def test_a_client_of_one_row_with_rows_held_out_is_refused(data):
    federation = small_federation(validation_fraction=0.5)
    with pytest.raises(ValueError, match=r"Client 2 has 1 row\(s\).*no training"):
        _fit(federation, _client_of(data, 1))


class _FixedStepLogistic(FairPenaltyLogisticRegression):
    """A model whose step size is no parameter (Per-FedAvg cannot set it)."""

    def __init__(self, fairness=1.0):
        super().__init__(fairness=fairness)


def test_per_fedavg_names_a_model_whose_step_size_it_cannot_set(data):
    federation = small_federation(_FixedStepLogistic(), strategy="pfedavg")
    with pytest.raises(
        RuntimeError, match=r"step size of _FixedStepLogistic.*learning_rate, eta0"
    ):
        _fit(federation, data)


@pytest.mark.parametrize("resample", ["batch", "client"])
def test_a_sampler_that_loses_the_sensitive_features_is_named(data, resample):
    # SMOTE's synthetic rows have no source row, so no sensitive group.
    federation = small_federation(sampler=SMOTE(random_state=0), resample=resample)
    with pytest.raises(RuntimeError, match="SMOTE does not report sample_indices_"):
        _fit(federation, data)


def test_rows_seen_of_a_model_that_does_not_record_them_is_refused(data):
    X, y, _, _ = data
    with pytest.raises(TypeError, match="LogisticRegression does not record rows"):
        n_samples_seen(LogisticRegression().fit(X, y))


@pytest.mark.parametrize("offset", [-1, 1])
def test_client_folds_need_one_client_id_per_row(data, offset):
    X, y, clients, _ = data
    ids = np.resize(clients, clients.size + offset)
    with pytest.raises(ValueError, match=rf"clients has {ids.size} ids for 300 rows"):
        list(ClientStratifiedKFold(n_splits=3).split(X, y, clients=ids))


# -- evaluate_clients -------------------------------------------------------------


@pytest.fixture(scope="module")
def model(data):
    X, y, _, S = data
    return FairPenaltyLogisticRegression().fit(X, y, sensitive_features=S)


def _evaluate(model, data, **options):
    X, y, clients, S = data
    options = {"n_bootstrap": 0, "clients": clients, "sensitive_features": S, **options}
    return evaluate_clients(model, X, options.pop("y", y), **options)


def test_evaluate_clients_without_a_threshold_says_to_give_one(model, data):
    with pytest.raises(ValueError, match="threshold must be given"):
        _evaluate(model, data, threshold=None)


@pytest.mark.parametrize("offset", [-1, 1])
def test_evaluate_clients_refuses_a_y_not_one_label_per_row(model, data, offset):
    y = np.resize(data[1], 300 + offset)
    with pytest.raises(ValueError, match=r"y must hold one label per row of X: 300"):
        _evaluate(model, data, y=y)


@pytest.mark.parametrize(
    "options, message",
    [
        ({"confidence": 0}, r"confidence must be in \(0, 1\); got 0"),
        ({"confidence": 1}, r"confidence must be in \(0, 1\); got 1"),
        ({"prevalence": -0.01}, r"prevalence must be in \[0, 1\]; got -0.01"),
        ({"prevalence": 1.01}, r"prevalence must be in \[0, 1\]; got 1.01"),
        ({"prevalence": "0.5"}, r"prevalence must be in \[0, 1\]"),
        ({"min_group_size": 0}, r"min_group_size must be an int >= 1; got 0"),
        ({"min_group_size": 1.0}, r"min_group_size must be an int >= 1; got 1.0"),
    ],
)
def test_evaluate_clients_own_checks_hold_with_sklearn_validation_skipped(
    model, data, options, message
):
    with (
        config_context(skip_parameter_validation=True),
        pytest.raises(ValueError, match=message),
    ):
        _evaluate(model, data, threshold="prevalence", **options)


@pytest.mark.parametrize(
    "options",
    [
        {"confidence": 1e-3},
        {"confidence": 0.999},
        {"prevalence": 0},
        {"prevalence": 1},
        {"min_group_size": 1},
    ],
)
def test_evaluate_clients_accepts_the_edges_with_sklearn_validation_skipped(
    model, data, options
):
    with config_context(skip_parameter_validation=True):
        report = _evaluate(model, data, threshold="prevalence", **options)
    assert len(report.per_client) == 3


# -- the threshold optimizer ----------------------------------------------------


def test_threshold_optimizer_names_labels_the_model_does_not_know(model, data):
    X, y, _, S = data
    post = FederatedThresholdOptimizer(model, prefit=True)
    with pytest.raises(ValueError, match=r"y has labels \[2\] that are not the"):
        post.fit(X, np.where(np.arange(300) == 7, 2, y), sensitive_features=S)


# -- preprocessing ----------------------------------------------------------------


def _with_preprocessing(preprocessing):
    return small_federation(
        Pipeline([("pre", preprocessing), ("model", FairPenaltyLogisticRegression())])
    )


def test_a_cached_pipeline_inside_a_federation_is_refused(data, tmp_path):
    cached = Pipeline([("scale", FederatedStandardScaler())], memory=str(tmp_path))
    with pytest.raises(ValueError, match=r"estimator\['pre'\] is a Pipeline with mem"):
        _fit(_with_preprocessing(cached), data)
    cached.set_params(memory=None)
    assert _fit(_with_preprocessing(cached), data).n_rounds


@pytest.mark.parametrize(
    "empty, then, message",
    [
        # The tree's fit ends before the empty transformer's turn.
        (FederatedMinMaxScaler(), FederatedMinMaxScaler(), "tree's fit ended before"),
        # The next one answers the query, for another kind of transformer.
        (
            FederatedSimpleImputer(strategy="median"),
            FederatedMinMaxScaler(),
            r"answered for a FederatedMinMaxScaler where estimator\['pre'\]\['empty'\]",
        ),
        # The next one cannot answer the query at all.
        (
            FederatedStandardScaler(),
            FederatedMinMaxScaler(),
            "does not fit this client's transformer. A ColumnTransformer skips",
        ),
    ],
    ids=["same kind", "answers for another", "cannot answer"],
)
def test_a_federated_transformer_of_no_column_is_named(data, empty, then, message):
    tree = ColumnTransformer(
        [("empty", empty, []), ("then", then, [0, 1])], remainder="passthrough"
    )
    # Where every client's answer fails, the fit fails naming the first, as
    # on Flower (issue 48's D9: a RuntimeError); where the answers disagree
    # with the query, the server says so (a ValueError). Both in the
    # cause's own words.
    with pytest.raises((ValueError, RuntimeError), match=message) as error:
        _fit(_with_preprocessing(tree), data)
    assert "at least one column" in str(error.value)


def test_the_federated_min_max_scaler_refuses_sparse_input(data):
    X, _, clients, _ = data
    with pytest.raises(TypeError, match="MinMaxScaler does not support sparse input"):
        FederatedMinMaxScaler().fit(sp.csr_matrix(X), clients=clients)


@pytest.mark.parametrize("feature_range", [(1, 1), (2, 1)])
def test_a_feature_range_whose_minimum_is_not_below_its_maximum_is_refused(
    data, feature_range
):
    X, _, clients, _ = data
    scaler = FederatedMinMaxScaler(feature_range=feature_range)
    with pytest.raises(ValueError, match=r"feature range must be smaller.*Got \("):
        scaler.fit(X, clients=clients)


def test_the_narrowest_feature_range_is_accepted(data):
    X, _, clients, _ = data
    scaled = FederatedMinMaxScaler(feature_range=(0, 1e-9)).fit(X, clients=clients)
    assert scaled.transform(X).max() == pytest.approx(1e-9)


def test_a_median_imputer_of_two_bins_finds_the_median(data):
    # n_bins >= 2: the fewest bins that can split an interval (1 is refused).
    X, _, clients, _ = data
    imputer = FederatedSimpleImputer(strategy="median", n_bins=2)
    imputer.fit(X, clients=clients)
    np.testing.assert_array_equal(imputer.statistics_, np.median(X, axis=0))
