"""Each branch of a compound validation condition is tested on its own.

A check such as ``if a or b: raise`` guards two kinds of bad input; a test
that only ever triggers ``a`` leaves ``b`` free to be dropped. Here every
disjunct (every ``or`` branch, every part of ``not (x and y)``, every type
of an ``isinstance`` over several types) that leads to a raise is exercised
by its own input, with the accepted value beside it where the check is a
comparison. Also the central strategy's epochs with per-client
``local_epochs``.
"""

import joblib
import numpy as np
import pytest
from _helpers import assert_same_parameters, make_federation, small_federation
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from skfedida.federated import evaluate_clients
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.postprocessing import FederatedThresholdOptimizer
from skfedida.preprocessing import FederatedStandardScaler


@pytest.fixture(scope="module")
def data():
    return make_federation(n=240, frame=False)


def _fit(federation, data, **fit):
    X, y, clients, S = data
    return federation.fit(X, y, clients=clients, sensitive_features=S, **fit)


@pytest.fixture(scope="module")
def model(data):
    X, y, _, _ = data
    return LogisticRegression().fit(X, y)


# -- central strategy: the most epochs any client has ---------------------------


def test_central_trains_for_the_most_epochs_of_any_client(data):
    def central(epochs):
        federation = small_federation(strategy="central", local_epochs=epochs)
        return _fit(federation, data).estimator_

    most = central(3)
    assert_same_parameters(central([1, 3, 2]), most)
    assert_same_parameters(central(np.array([3, 1, 1])), most)
    fewest = central(1)
    assert not np.array_equal(most.coef_, fewest.coef_)
    assert not np.array_equal(central([1, 3, 2]).coef_, fewest.coef_)


# -- evaluate_clients: labels the model does not know --------------------------


def test_evaluate_clients_refuses_labels_the_model_does_not_know(model, data):
    X, y, clients, S = data
    kw = dict(clients=clients, sensitive_features=S, n_bootstrap=2, random_state=0)
    bad = np.where(np.arange(y.size) == 5, 2, y)
    with pytest.raises(ValueError, match=r"y has labels \[2\] that are not the"):
        evaluate_clients(model, X, bad, **kw)
    with pytest.raises(ValueError, match=r"y has labels \['0', '1'\] that are not"):
        evaluate_clients(model, X, y.astype(str), **kw)


def test_evaluate_clients_accepts_a_subset_of_the_model_classes(data):
    X, y, clients, S = data
    three = LogisticRegression().fit(X, np.where(np.arange(y.size) % 7 == 0, 2, y))
    assert three.classes_.tolist() == [0, 1, 2]
    report = evaluate_clients(
        three,
        X,
        y,  # only 0 and 1
        clients=clients,
        sensitive_features=S,
        metrics=["accuracy"],
        n_bootstrap=2,
        random_state=0,
    )
    assert len(report.per_client) == 3


# -- a cached Pipeline inside a federation -------------------------------------


def _in_federation(preprocessing, outer_memory=None):
    return small_federation(
        Pipeline(
            [("pre", preprocessing), ("model", FairPenaltyLogisticRegression())],
            memory=outer_memory,
        )
    )


@pytest.mark.parametrize("kind", ["str", "Memory"])
@pytest.mark.parametrize("where", ["nested", "outer"])
def test_a_pipeline_with_any_memory_is_refused(data, tmp_path, kind, where):
    memory = str(tmp_path) if kind == "str" else joblib.Memory(tmp_path, verbose=0)
    if where == "nested":
        federation = _in_federation(
            Pipeline([("scale", FederatedStandardScaler())], memory=memory)
        )
        path = r"estimator\['pre'\]"
    else:
        federation = _in_federation(FederatedStandardScaler(), outer_memory=memory)
        path = r"estimator"
    with pytest.raises(ValueError, match=path + r" is a Pipeline with memory="):
        _fit(federation, data)


def test_a_pipeline_with_memory_none_is_accepted(data):
    nested = Pipeline([("scale", FederatedStandardScaler())], memory=None)
    assert _fit(_in_federation(nested), data).n_rounds == 1


# -- FederatedThresholdOptimizer: tolerance with a selection_rate ----------------


@pytest.mark.parametrize("selection_rate", [0.0, 0.3, 1.0])
def test_tolerance_with_any_selection_rate_is_refused(model, data, selection_rate):
    X, y, _, S = data
    post = FederatedThresholdOptimizer(
        model, tolerance=0.1, selection_rate=selection_rate, prefit=True
    )
    with pytest.raises(ValueError, match="cannot be combined with tolerance > 0"):
        post.fit(X, y, sensitive_features=S)


@pytest.mark.parametrize(
    "options",
    [
        {"tolerance": 0.0, "selection_rate": 0.0},
        {"tolerance": 0.0, "selection_rate": 1.0},
        {"tolerance": 0.1, "selection_rate": None},
    ],
)
def test_tolerance_or_selection_rate_alone_is_accepted(model, data, options):
    X, y, _, S = data
    post = FederatedThresholdOptimizer(model, prefit=True, **options)
    assert post.fit(X, y, sensitive_features=S).predict(X, sensitive_features=S).size


# -- the broader audit: branches no other test triggers on its own --------------


@pytest.mark.parametrize(
    "epochs",
    [[True, True, True], [2.0, np.nan, 1.0], [np.inf, 1.0, 1.0]],
    ids=["bool", "nan", "inf"],
)
def test_local_epochs_of_booleans_or_non_finite_floats_are_refused(data, epochs):
    # epochs.dtype.kind == "b", and a float array that is not all finite.
    with pytest.raises(ValueError, match="local_epochs must be whole numbers"):
        _fit(small_federation(local_epochs=epochs), data)


def test_local_epochs_as_whole_floats_are_accepted(data):
    assert _fit(small_federation(local_epochs=[1.0, 2.0, 1.0]), data).n_rounds == 1


def test_fairfed_min_group_size_zero_is_refused(data):
    from skfedida.federated import FairFed

    with pytest.raises(
        ValueError, match=r"FairFed needs metric .* min_group_size >= 1"
    ):
        _fit(small_federation(aggregation=FairFed(min_group_size=0)), data)


@pytest.mark.parametrize(
    "scores", [[0.2, np.nan], [0.2, -1e-12], [0.2, 1 + 1e-12]], ids=["nan", "<0", ">1"]
)
def test_score_histogram_refuses_scores_outside_zero_to_one(scores):
    from skfedida.metrics import score_histogram

    with pytest.raises(ValueError, match=r"scores must be probabilities in \[0, 1\]"):
        score_histogram(scores)


def test_score_histogram_accepts_zero_and_one():
    from skfedida.metrics import score_histogram

    assert score_histogram([0.0, 1.0]).sum() == 2


@pytest.mark.parametrize(
    "histograms, message",
    [
        (np.ones((2, 2, 3)), "histograms must be one histogram of shape"),
        (np.zeros((0, 3)), "histograms must be one histogram of shape"),
        ([[1.0, 2.0], [[1.0], [2.0]]], r"histogram 1 must be a non-empty 1-D array"),
        ([[1.0, 2.0], []], r"histogram 1 must be a non-empty 1-D array"),
    ],
    ids=["3-D array", "no rows", "2-D row", "empty row"],
)
def test_threshold_at_rate_refuses_histograms_of_the_wrong_shape(histograms, message):
    from skfedida.metrics import threshold_at_rate

    with pytest.raises(ValueError, match=message):
        threshold_at_rate(histograms, 0.5)


@pytest.mark.parametrize(
    "attributes", [{}, {"race": ["A", "B"], "gender": []}], ids=["none", "empty"]
)
def test_sensitive_attributes_without_values_are_refused(attributes):
    from skfedida.datasets import make_federated_classification

    with pytest.raises(ValueError, match="sensitive_attributes needs at least one"):
        make_federated_classification(50, sensitive_attributes=attributes)


@pytest.mark.parametrize(
    "config",
    [
        {"partition-id": "0", "num-partitions": 2},
        {"partition-id": 0, "num-partitions": 2.0},
        {"partition-id": True, "num-partitions": 2},
        {"partition-id": -1, "num-partitions": 2},
        {"partition-id": 2, "num-partitions": 2},
    ],
    ids=["str id", "float count", "bool id", "negative", "id == count"],
)
def test_a_node_config_outside_its_partitions_is_refused(config):
    pytest.importorskip("flwr")
    from types import SimpleNamespace

    from skfedida.flower._client_app import _node_partition

    with pytest.raises(ValueError, match="needs integers 0 <= partition-id < num"):
        _node_partition(SimpleNamespace(node_config=config))
    assert _node_partition(
        SimpleNamespace(node_config={**config, "partition-id": 1, "num-partitions": 2})
    ) == (1, 2)


# == second pass: the remaining compound conditions, module by module ==========


# -- _fair_base: the compiled loops' inputs (internal invariants) ---------------


def _batch(n=4, **parts):
    from skfedida._models._fair_base import Batch

    rows = {
        "X": np.zeros((n, 2)),
        "y": np.zeros(n),
        "groups": np.zeros(n, dtype=np.intp),
        "n_groups": 2,
        "weight": np.ones(n),
        **parts,
    }
    return Batch(**rows)


@pytest.mark.parametrize(
    "parts, bounds, message",
    [
        ({"y": np.zeros(3)}, [0, 4], "X, y, groups and weight must have one entry"),
        ({"groups": np.zeros(3)}, [0, 4], "X, y, groups and weight must have one"),
        ({"weight": np.ones(3)}, [0, 4], "X, y, groups and weight must have one"),
        ({"y": np.array([0.0, -1.0, 0.0, 1.0])}, [0, 4], r"label codes outside 0"),
        ({"y": np.array([0.0, 2.0, 0.0, 1.0])}, [0, 4], r"label codes outside 0"),
        ({"groups": np.array([0, -1, 0, 1])}, [0, 4], r"group codes outside 0\.\.1"),
        ({"groups": np.array([0, 2, 0, 1])}, [0, 4], r"group codes outside 0\.\.1"),
        ({}, [-1, 4], "minibatch bounds must increase within the rows"),
        ({}, [0, 5], "minibatch bounds must increase within the rows"),
        ({}, [0, 3, 2, 4], "minibatch bounds must increase within the rows"),
    ],
    ids=[
        "y-rows",
        "groups-rows",
        "weight-rows",
        "label-negative",
        "label-too-high",
        "group-negative",
        "group-too-high",
        "bounds-below",
        "bounds-beyond",
        "bounds-decreasing",
    ],
)
def test_the_compiled_loops_refuse_inputs_that_would_index_past_a_buffer(
    parts, bounds, message
):
    # Internal invariants (the estimators encode labels and groups first);
    # the loops index without bounds checks, so each part is checked here.
    from skfedida._models._fair_base import compiled_loop_inputs

    with pytest.raises(ValueError, match=message):
        compiled_loop_inputs(_batch(**parts), np.array(bounds))


@pytest.mark.parametrize(
    "order, bounds, message",
    [
        ([0, 4, 1], [0, 3], r"rows holds positions outside 0\.\.3"),
        ([0, -1], [0, 2], r"rows holds positions outside 0\.\.3"),
        ([0, 1], [0, 3], "minibatch bounds must increase within rows"),
    ],
    ids=["beyond", "negative", "bounds-beyond-order"],
)
@pytest.mark.parametrize("checked", [False, True])
def test_the_compiled_loops_refuse_an_order_past_the_rows(
    order, bounds, message, checked
):
    # The loops gather rows by their order without bounds checks: an order
    # is checked too, also for rows whose codes were checked already.
    from skfedida._models._fair_base import compiled_loop_inputs

    batch = _batch()
    batch.rows_checked = 2 if checked else 0
    with pytest.raises(ValueError, match=message):
        compiled_loop_inputs(batch, np.array(bounds), order=np.array(order))


def test_the_compiled_loops_take_codes_and_bounds_at_their_limits():
    from skfedida._models._fair_base import compiled_loop_inputs

    batch = _batch(y=np.array([0.0, 1.0, 1.0, 0.0]), groups=np.array([0, 1, 1, 0]))
    out = compiled_loop_inputs(batch, np.array([0, 2, 2, 4]))
    assert out[5].tolist() == [0, 2, 2, 4]
    assert out[6] is None
    assert compiled_loop_inputs(_batch(n=0), np.array([0, 0]))[0].shape == (0, 2)


# -- model_selection --------------------------------------------------------------


_RULE_RESULTS = {
    "mean_test_auc": np.array([0.8, 0.7]),
    "mean_test_dpd": np.array([-0.2, -0.1]),
}


@pytest.mark.parametrize("column", ["mean_test_auc", "mean_test_dpd"])
def test_fairest_within_refuses_nan_in_performance_or_fairness(column):
    from skfedida.model_selection import fairest_within

    results = {**_RULE_RESULTS, column: np.array([np.nan, 0.5])}
    with pytest.raises(ValueError, match=r"NaN in mean_test_auc or mean_test_dpd"):
        fairest_within("auc", "dpd", selection_rate=None)(results)


def test_fairest_within_without_a_band_needs_no_selection_rate_column():
    from skfedida.model_selection import fairest_within

    rule = fairest_within("auc", "dpd", 1.0, selection_rate="selection_rate", band=None)
    assert rule(_RULE_RESULTS) == 1


def test_a_coarse_to_fine_search_with_one_named_scorer_needs_refit_to_name_it():
    from skfedida.model_selection import CoarseToFineSearchCV

    X, y = np.arange(40.0).reshape(-1, 1), np.arange(40) % 2

    def search(refit):
        return CoarseToFineSearchCV(
            LogisticRegression(),
            "C",
            0.1,
            1.0,
            n_coarse=2,
            n_fine=1,
            scoring={"acc": "accuracy"},
            refit=refit,
            cv=2,
        )

    with pytest.raises(ValueError, match="refit must name the one that picks"):
        search(False).fit(X, y)
    assert search("acc").fit(X, y).best_params_["C"] > 0


# -- metrics: scorers ---------------------------------------------------------------


def _metric_returning(value):
    def metric(y_true, y_pred, *, sensitive_features, **kwargs):
        return value

    return metric


@pytest.mark.parametrize(
    "value",
    [np.array([0.1, 0.2]), np.array("0.5"), np.array(None, dtype=object)],
    ids=["1-D array", "0-D string array", "0-D object array"],
)
def test_a_fairness_metric_returning_a_non_scalar_array_is_refused(value):
    from skfedida.metrics import make_fairness_scorer

    X, y = np.arange(20.0).reshape(-1, 1), np.arange(20) % 2
    S = np.arange(20) % 3
    scorer = make_fairness_scorer(_metric_returning(value))
    with pytest.raises(TypeError, match=r"returned .* a scorer needs a real number"):
        scorer(LogisticRegression().fit(X, y), X, y, sensitive_features=S)


@pytest.mark.parametrize("value", [np.array(0.25), np.int64(1), np.bool_(True)])
def test_a_fairness_metric_returning_a_numeric_scalar_is_accepted(value):
    from skfedida.metrics import make_fairness_scorer

    X, y = np.arange(20.0).reshape(-1, 1), np.arange(20) % 2
    scorer = make_fairness_scorer(_metric_returning(value))
    model = LogisticRegression().fit(X, y)
    assert abs(scorer(model, X, y, sensitive_features=np.arange(20) % 3)) == value


@pytest.mark.parametrize(
    "classes", [["no", "yes"], [1, 2]], ids=["strings", "numbers beyond 1"]
)
def test_a_thresholded_scorer_refuses_classes_that_name_no_favourable_label(classes):
    from skfedida.metrics import make_fairness_scorer

    X = np.arange(20.0).reshape(-1, 1)
    y = np.asarray(classes)[np.arange(20) % 2]
    model = LogisticRegression().fit(X, y)
    scorer = make_fairness_scorer("dpd", threshold=0.5)
    with pytest.raises(ValueError, match="do not say which one it is: pass pos_label"):
        scorer(model, X, y, sensitive_features=np.arange(20) % 2)
    named = make_fairness_scorer("dpd", threshold=0.5, pos_label=classes[1])
    assert np.isfinite(named(model, X, y, sensitive_features=np.arange(20) % 2))


def test_a_thresholded_scorer_reads_minus_one_and_one_itself():
    from skfedida.metrics import make_fairness_scorer

    X, y = np.arange(20.0).reshape(-1, 1), np.where(np.arange(20) % 2, 1, -1)
    model = LogisticRegression().fit(X, y)
    scorer = make_fairness_scorer("dpd", threshold=0.5)
    assert np.isfinite(scorer(model, X, y, sensitive_features=np.arange(20) % 2))


# -- metrics: fairness metrics --------------------------------------------------------


@pytest.mark.parametrize(
    "y_pred",
    [[0.2, np.nan, 0.1], [0.2, -1e-12, 0.1], [0.2, 1 + 1e-12, 0.1]],
    ids=["nan", "<0", ">1"],
)
def test_soft_predictions_outside_zero_to_one_are_refused(y_pred):
    from skfedida.metrics import demographic_parity_difference

    with pytest.raises(ValueError, match=r"y_pred must hold probabilities .* \[0, "):
        demographic_parity_difference(
            [0, 1, 1], y_pred, sensitive_features=["a", "b", "a"], soft=True
        )


def test_soft_predictions_of_zero_and_one_are_accepted():
    from skfedida.metrics import demographic_parity_difference

    value = demographic_parity_difference(
        [0, 1, 1, 0], [0.0, 1.0, 1.0, 0.0], sensitive_features=list("abab"), soft=True
    )
    assert value == pytest.approx(0.0)


def test_a_pos_label_absent_from_two_labels_is_refused_and_from_one_accepted():
    from skfedida.metrics import demographic_parity_difference

    S = ["a", "b", "a", "b"]
    with pytest.raises(ValueError, match=r"pos_label=7 is not a valid label"):
        demographic_parity_difference(
            [0, 1, 0, 1], [0, 1, 1, 1], sensitive_features=S, pos_label=7
        )
    # One label present: the absent pos_label is a fold where nobody is positive.
    assert demographic_parity_difference(
        [0, 0, 0, 0], [0, 0, 0, 0], sensitive_features=S, pos_label=7
    ) == pytest.approx(0.0)


# -- metrics: operating points --------------------------------------------------------


def test_histograms_on_different_grids_are_refused():
    from skfedida.metrics import threshold_at_rate

    with pytest.raises(
        ValueError, match=r"histogram 1 has 3 bins and histogram 0 has 2"
    ):
        threshold_at_rate([[1.0, 2.0], [1.0, 2.0, 3.0]], 0.5)


@pytest.mark.parametrize(
    "sample_weights, message",
    [
        ([[1.0, 1.0]], "sample_weights must hold one weight per score"),
        ([[1.0, 1.0], [1.0], [1.0]], "sample_weights must hold one weight per score"),
        ([[1.0], [1.0]], "sample_weights must hold one weight per score"),
        ([[1.0, np.nan], [1.0]], "sample_weights must be finite and non-negative"),
        ([[1.0, np.inf], [1.0]], "sample_weights must be finite and non-negative"),
        ([[1.0, 1.0], [-1e-12]], "sample_weights must be finite and non-negative"),
    ],
    ids=["fewer clients", "more clients", "fewer rows", "nan", "inf", "negative"],
)
def test_operating_point_sample_weights_that_do_not_fit_are_refused(
    sample_weights, message
):
    from skfedida.metrics import federated_operating_point

    with pytest.raises(ValueError, match=message):
        federated_operating_point(
            [[0.2, 0.7], [0.5]], 0.5, n_bins=10, sample_weights=sample_weights
        )


# -- penalty ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["group", "individual", "group_standardized"])
@pytest.mark.parametrize("class_weight", [[1.0], [1.0, 1.0, 1.0]], ids=["1", "3"])
def test_a_class_weight_not_one_per_score_column_is_refused(name, class_weight):
    from skfedida.penalty import PENALTIES

    scores = np.column_stack([[0.1, 0.2, 0.3, 0.4]] * 2)
    with pytest.raises(ValueError, match="class_weight must hold 2 non-negative"):
        PENALTIES[name](scores, [0, 1, 0, 1], [0, 0, 1, 1], class_weight=class_weight)


# -- over_sampling: FairnessAwareROSE ------------------------------------------------


def _rose(**options):
    import pandas as pd

    from skfedida.over_sampling import FairnessAwareROSE

    X = pd.DataFrame({"x": np.arange(8.0) ** 2, "z": np.arange(8.0)})
    y = np.array([0, 1, 0, 1, 0, 0, 0, 1])
    S = np.array(list("aabbaabb"))
    return FairnessAwareROSE(random_state=0, **options).fit_resample(
        X, y, sensitive_features=S
    )


_SUBGROUPS = [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(n_target={("a", 0, 1): 3}), r"n_target keys must be \(group, class\)"),
        (dict(n_target={("a",): 3}), r"n_target keys must be \(group, class\)"),
        (dict(n_target=lambda counts: 0), "n_target as a callable must return an int"),
        (
            dict(shrinkage={**dict.fromkeys(_SUBGROUPS, 0.0), ("a", 0): "1"}),
            "shrinkage for subgroup .* must be a number >= 0",
        ),
        (
            dict(shrinkage={**dict.fromkeys(_SUBGROUPS, 0.0), ("a", 0): np.nan}),
            "shrinkage for subgroup .* must be a number >= 0",
        ),
    ],
    ids=["key of three", "key of one", "callable zero", "shrinkage str", "nan"],
)
def test_more_bad_sampler_parameters_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        _rose(**options)


def test_a_callable_n_target_returning_subgroup_sizes_is_accepted():
    X_res, y_res = _rose(n_target=lambda counts: {("a", 1): 3})
    assert len(X_res) == len(y_res) >= 8


# -- flower: result files ------------------------------------------------------------


@pytest.mark.parametrize("key", [123, ["k"]], ids=["int", "list"])
def test_a_result_key_that_is_no_str_or_bytes_is_refused(tmp_path, key):
    from skfedida.flower._result import _write_result

    with pytest.raises(TypeError, match="result_key must be a non-empty str or bytes"):
        _write_result(tmp_path / "r.joblib", {"estimator": [1]}, key=key)
    assert not (tmp_path / "r.joblib").exists()


def test_a_long_foreign_file_is_no_result_file(tmp_path):
    from skfedida.flower import load_result

    path = tmp_path / "foreign.joblib"
    joblib.dump({"estimator": list(range(100))}, path)  # long, but no header
    assert path.stat().st_size > 100
    with pytest.raises(ValueError, match=r"not a skfedida result file \(no result"):
        load_result(path)


# -- federated: differential privacy and update bounds ------------------------------


@pytest.mark.parametrize("delta", ["1e-5", None], ids=repr)
def test_a_dp_target_delta_that_is_no_number_is_refused(data, delta):
    from skfedida.federated import DifferentialPrivacy

    dp = DifferentialPrivacy(target_delta=delta, noise_seed=0)
    with pytest.raises(ValueError, match=r"target_delta must be in \(0, 1\)"):
        _fit(small_federation(dp=dp), data)


@pytest.mark.parametrize("value", [np.nan, np.inf, True, [1.0]], ids=repr)
def test_the_update_bounds_own_check_refuses_non_finite_and_non_numbers(data, value):
    from sklearn import config_context

    with (
        config_context(skip_parameter_validation=True),
        pytest.raises(ValueError, match="max_update_norm must be a number > 0"),
    ):
        _fit(small_federation(max_update_norm=value), data)


def test_a_qfedavg_client_learning_rate_that_is_no_number_is_refused(data):
    from skfedida.federated import QFedAvg

    aggregation = QFedAvg(client_learning_rate="0.1")
    with pytest.raises(ValueError, match=r"finite client_learning_rate > 0; got"):
        _fit(small_federation(aggregation=aggregation), data)


# -- federated: parameters, clients, warm start, pipelines, evaluation --------------


@pytest.mark.parametrize("change", ["fewer", "more"])
def test_set_parameters_refuses_another_number_of_arrays(model, change):
    from skfedida.federated import get_parameters, set_parameters

    parameters = get_parameters(model)
    parameters = parameters[:-1] if change == "fewer" else [*parameters, np.zeros(1)]
    with pytest.raises(ValueError, match="LogisticRegression has parameters of shapes"):
        set_parameters(model, parameters)


def test_a_client_left_no_training_rows_by_validation_fraction_is_named(data):
    with pytest.raises(ValueError, match=r"Client .* leaves it no training rows"):
        _fit(small_federation(validation_fraction=0.999), data)


def test_warm_start_with_another_kind_of_model_is_refused(data):
    from sklearn.linear_model import SGDClassifier

    fitted = _fit(small_federation(warm_start=True), data)
    fitted.set_params(estimator=SGDClassifier(loss="log_loss", random_state=0))
    with pytest.raises(ValueError, match="cannot continue as SGDClassifier"):
        _fit(fitted, data)


@pytest.mark.parametrize("sensitive", [0, [0]], ids=repr)
def test_column_mode_with_a_pipeline_refuses_sensitive_columns_by_position(sensitive):
    X, y, clients, _ = make_federation(n=120, frame=True)
    model = FairPenaltyLogisticRegression(sensitive=sensitive)
    federation = small_federation(
        Pipeline([("pre", FederatedStandardScaler()), ("model", model)]),
        sensitive=sensitive,
    )
    with pytest.raises(ValueError, match="needs the sensitive columns by name"):
        federation.fit(X, y, clients=clients)


def test_evaluate_clients_refuses_any_threshold_for_a_post_processor(model, data):
    X, y, clients, S = data
    post = FederatedThresholdOptimizer(model, prefit=True).fit(
        X, y, sensitive_features=S
    )
    with pytest.raises(ValueError, match="makes its own decisions"):
        evaluate_clients(
            post, X, y, clients=clients, sensitive_features=S, threshold=0.3
        )


def test_make_server_app_refuses_a_postprocessor_of_another_kind(model):
    pytest.importorskip("flwr")
    from skfedida.flower import make_server_app

    with pytest.raises(TypeError, match="postprocessor must be a FederatedThreshold"):
        make_server_app(small_federation(strategy="fedavg"), postprocessor=model)


# -- postprocessing and preprocessing ------------------------------------------------


def test_tolerance_with_equalized_odds_is_refused(model, data):
    X, y, _, S = data
    post = FederatedThresholdOptimizer(
        model, tolerance=0.1, constraints="equalized_odds", prefit=True
    )
    with pytest.raises(ValueError, match="constraints='equalized_odds' equalises two"):
        post.fit(X, y, sensitive_features=S)
    exact = FederatedThresholdOptimizer(
        model, tolerance=0.0, constraints="equalized_odds", prefit=True
    )
    assert exact.fit(X, y, sensitive_features=S).predict(X, sensitive_features=S).size


@pytest.mark.parametrize("n_bins", [1, 2.0, 0], ids=repr)
def test_the_imputers_own_check_refuses_n_bins_below_two_or_no_int(data, n_bins):
    from sklearn import config_context

    from skfedida.preprocessing import FederatedSimpleImputer

    X, _, clients, _ = data
    imputer = FederatedSimpleImputer(strategy="median", n_bins=n_bins)
    with (
        config_context(skip_parameter_validation=True),
        pytest.raises(ValueError, match="n_bins must be an int >= 2"),
    ):
        imputer.fit(X, clients=clients)
    with config_context(skip_parameter_validation=True):
        assert imputer.set_params(n_bins=2).fit(X, clients=clients).n_bins == 2


# -- datasets: make_federated_classification ------------------------------------


def _generate(**options):
    from skfedida.datasets import make_federated_classification

    return make_federated_classification(
        **{"n_samples": 40, "n_clients": 2, "random_state": 0, **options}
    )


@pytest.mark.parametrize(
    "options, message",
    [
        # NaN is neither < 0 nor > 1: only the finiteness check sees it.
        (dict(prevalence=np.nan), "prevalence must hold finite values in"),
        (dict(prevalence=[0.2, np.nan, 0.2, 0.2]), "prevalence must hold finite"),
        (
            dict(group_proportions=[1, 1, 1, np.nan]),
            "group_proportions must hold finite values >= 0",
        ),
        # Shares have no upper bound: an infinite one is caught as non-finite.
        (
            dict(group_proportions=[1, 1, 1, np.inf]),
            "group_proportions must hold finite values >= 0",
        ),
    ],
    ids=repr,
)
def test_generator_tables_refuse_non_finite_values(options, message):
    with pytest.raises(ValueError, match=message):
        _generate(**options)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(n_samples=40.0), "n_samples must be an int >= 1; got 40.0"),
        (dict(n_clients=2.0), "n_clients must be an int >= 1; got 2.0"),
        (dict(n_features=3.0), "n_features must be an int >= 1; got 3.0"),
        (dict(heterogeneity="0"), "heterogeneity must be a finite number >= 0"),
        (dict(class_sep=None), "class_sep must be a finite number >= 0"),
        (dict(n_classes=3.0), "n_classes must be an int >= 2; got 3.0"),
    ],
    ids=repr,
)
def test_the_generators_own_checks_refuse_the_wrong_type(options, message):
    # validate_params refuses these first; the function's own check is the
    # one left when validation is skipped.
    from sklearn import config_context

    with (
        config_context(skip_parameter_validation=True),
        pytest.raises(ValueError, match=message),
    ):
        _generate(**options)
    with config_context(skip_parameter_validation=True):
        assert _generate(n_samples=40, n_clients=2, n_features=3).data.shape == (40, 3)


@pytest.mark.parametrize("weight", [np.nan, np.inf], ids=repr)
def test_non_finite_client_sizes_are_named(weight):
    # NaN <= 0 is False and inf makes every share NaN: both failed later, in
    # np.repeat, with a message that named no parameter.
    with pytest.raises(ValueError, match="client_sizes"):
        _generate(client_sizes=[1.0, weight])


# -- preprocessing: the statistics rounds of a pipeline federation ---------------


def _scaled_federation(**options):
    return small_federation(
        Pipeline(
            [
                ("scale", FederatedStandardScaler()),
                ("model", FairPenaltyLogisticRegression(fairness=1.0)),
            ]
        ),
        **options,
    )


def _third_answer_changed(monkeypatch, change):
    """Each query's third answer (client 2's) passes through ``change``."""
    real = FederatedStandardScaler._answer
    calls = []

    def answer(self, X, query):
        calls.append(None)
        result = real(self, X, query)
        return change(dict(result)) if len(calls) % 3 == 0 else result

    monkeypatch.setattr(FederatedStandardScaler, "_answer", answer)


def _honest_scaler(data):
    X, _, clients, _ = data
    rows = clients != 2
    return FederatedStandardScaler().fit(X[rows], clients=clients[rows])


def test_one_client_answering_for_another_transformer_is_that_clients_failure(
    data, monkeypatch
):
    # Every client answering for another kind is the tree's fault (tested in
    # test_bad_input_federation); one client doing so is that client's.
    from skfedida.preprocessing import _base

    real = _base.client_answer
    calls = []

    def client_answer(tree, X, states, query):
        calls.append(None)
        name, answer = real(tree, X, states, query)
        return (
            ("FederatedMinMaxScaler", answer)
            if len(calls) % 3 == 0
            else (
                name,
                answer,
            )
        )

    monkeypatch.setattr(_base, "client_answer", client_answer)
    with pytest.raises(
        RuntimeError,
        match=r"Client 2 failed the statistics .*answered for a 'FederatedMinMaxS",
    ):
        _fit(_scaled_federation(), data)
    fitted = _fit(_scaled_federation(on_client_error="skip"), data)
    (record,) = [r for r in fitted.history_ if "stage" in r]
    assert record["client"] == 2 and "answered for a" in record["skipped"]
    monkeypatch.undo()
    np.testing.assert_allclose(
        fitted.estimator_.named_steps["scale"].mean_,
        _honest_scaler(data).mean_,
        rtol=1e-12,
    )


def test_a_client_failing_a_later_statistics_round_is_left_out_of_the_first(
    data, monkeypatch
):
    # Skipped in round 2, the client's round-1 sums must not stay counted.
    def change(answer):
        if "shifted_sum" in answer:
            answer["shifted_sum"] = answer["shifted_sum"] + 10.0
        return answer

    _third_answer_changed(monkeypatch, change)
    fitted = _fit(_scaled_federation(on_client_error="skip"), data)
    (record,) = [r for r in fitted.history_ if "stage" in r]
    assert record["client"] == 2
    monkeypatch.undo()
    honest = _honest_scaler(data)
    scale = fitted.estimator_.named_steps["scale"]
    np.testing.assert_allclose(scale.mean_, honest.mean_, rtol=1e-12)
    np.testing.assert_allclose(scale.var_, honest.var_, rtol=1e-12)


def test_every_client_failing_a_statistics_round_in_process_stops_a_skip(
    data, monkeypatch
):
    real = FederatedStandardScaler._answer

    def answer(self, X, query):
        result = dict(real(self, X, query))
        result["n"] = -result["n"]
        return result

    monkeypatch.setattr(FederatedStandardScaler, "_answer", answer)
    with pytest.raises(
        RuntimeError, match=r"Every client failed the statistics query.*negative"
    ):
        _fit(_scaled_federation(on_client_error="skip"), data)


# -- federated: y of one label per row -------------------------------------------


@pytest.mark.parametrize("shape", ["two columns", "short", "long", "scalar"], ids=str)
def test_a_federation_refuses_a_y_not_one_label_per_row(data, shape):
    X, y, clients, S = data
    bad = {
        "two columns": np.column_stack([y, y]),  # as many rows, not 1-D
        "short": y[:-1],
        "long": np.append(y, 0),
        "scalar": np.int64(1),
    }[shape]
    with pytest.raises(ValueError, match=r"y must hold one label per row of X: 240"):
        small_federation().fit(X, bad, clients=clients, sensitive_features=S)


def test_a_federation_takes_y_as_one_column():
    X, y, clients, S = make_federation(n=240, frame=False)
    with pytest.warns(Warning, match="column-vector y"):
        column = small_federation().fit(
            X, y[:, None], clients=clients, sensitive_features=S
        )
    flat = small_federation().fit(X, y, clients=clients, sensitive_features=S)
    assert_same_parameters(column.estimator_, flat.estimator_)
