"""Bad input to the models, sampler, metrics, model selection and data generators.

Guards the project's rule that bad input gets a clear error naming the
parameter or column, for the checks outside the federation, Flower and the
pre- and post-processing: the fair estimators, FairnessAwareROSE, the
penalties, the metrics and scorers, the operating-point functions, the
model-selection helpers and the synthetic data generators. Each check is
reached through the public API and, where it compares, tested on both sides
of its boundary: the first refused value and the last accepted one.

Some checks repeat a constraint that ``@validate_params`` applies first;
they are reached here with sklearn's ``skip_parameter_validation=True``,
where they are the only check left.
"""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn import config_context
from sklearn.linear_model import LogisticRegression

from skfedida.datasets import make_federated_classification
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import (
    demographic_parity_difference,
    equalized_odds_difference,
    federated_operating_point,
    federated_threshold,
    group_report,
    make_fairness_scorer,
    make_tradeoff_scorer,
    selection_rate,
    threshold_at_rate,
)
from skfedida.metrics._operating_point import MAX_N_BINS
from skfedida.model_selection import (
    CoarseToFineSearchCV,
    fairest_within,
    lambda_range,
)
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE
from skfedida.penalty import (
    group_penalty,
    individual_penalty,
    standardized_group_penalty,
)

# Fits of one or two epochs, to reach the checks fast: they do not converge.
pytestmark = pytest.mark.filterwarnings(
    "ignore::sklearn.exceptions.ConvergenceWarning",
    "ignore::skfedida.exceptions.InactivePenaltyWarning",
)

TINY = np.nextafter(0.0, 1.0)  # the smallest positive float
BELOW_ONE = np.nextafter(1.0, 0.0)
ABOVE_ONE = np.nextafter(1.0, 2.0)

PENALTIES = [group_penalty, individual_penalty, standardized_group_penalty]


def _binary_table(n=40, n_features=3, seed=0):
    """A small X of 0/1 columns (any of them a sensible attribute) and y."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, n_features)).astype(float)
    return X, np.arange(n) % 2


def _no_validation():
    """sklearn's switch that leaves only the functions' own checks."""
    return config_context(skip_parameter_validation=True)


# -- the fair estimators ---------------------------------------------------


def test_sensitive_columns_of_a_sparse_X_are_refused():
    X, y = _binary_table()
    model = FairPenaltyLogisticRegression(sensitive=[0], max_iter=1)
    with pytest.raises(TypeError, match="sensitive columns cannot be read from a"):
        model.fit(sp.csr_matrix(X), y)


def test_nan_beside_the_sensitive_columns_names_x_without_them():
    X, y = _binary_table()
    X[3, 1] = np.nan
    model = FairPenaltyLogisticRegression(sensitive=[0], max_iter=1)
    with pytest.raises(ValueError, match=r"X \(without the sensitive columns\).*NaN"):
        model.fit(X, y)


@pytest.mark.parametrize(
    "Estimator", [FairPenaltyLogisticRegression, FairMLPClassifier]
)
def test_fit_without_y_is_refused_naming_y(Estimator):
    X, _ = _binary_table()
    with pytest.raises(ValueError, match="requires y to be passed"):
        Estimator(max_iter=1).fit(X, None)


def test_a_continuous_y_is_refused_as_not_class_labels():
    X, _ = _binary_table()
    with pytest.raises(ValueError, match="'continuous'; y must hold class labels"):
        FairPenaltyLogisticRegression(max_iter=1).fit(X, np.linspace(0, 1, len(X)))


@pytest.mark.usefixtures("quiet")
def test_x_up_to_the_largest_magnitude_fits_and_beyond_it_is_refused():
    X, y = _binary_table()
    X = (2 * X - 1) * 1e100  # the largest magnitude the models take
    model = FairPenaltyLogisticRegression(max_iter=1).fit(X, y)
    assert np.all(np.isfinite(model.coef_))
    X[0, 0] = np.nextafter(1e100, np.inf)
    with pytest.raises(ValueError, match=r"X holds values up to 1e\+100.*Scale"):
        FairPenaltyLogisticRegression(max_iter=1).fit(X, y)


@pytest.mark.parametrize(
    "sizes", [(3, 0), (0,), (-1,), (2.5,), (True,), (10, True), ((2, 2),)], ids=repr
)
def test_hidden_layer_sizes_that_are_not_positive_ints_are_refused(sizes):
    # (2.5,) was cast to 2 units and trained without a word.
    X, y = _binary_table()
    model = FairMLPClassifier(hidden_layer_sizes=sizes, max_iter=1)
    with pytest.raises(ValueError, match="hidden_layer_sizes must hold positive ints"):
        model.fit(X, y)


@pytest.mark.usefixtures("quiet")
def test_hidden_layers_of_one_unit_are_accepted():
    X, y = _binary_table()
    model = FairMLPClassifier(hidden_layer_sizes=(3, 1), max_iter=1, random_state=0)
    assert [w.shape for w in model.fit(X, y).coefs_] == [(3, 3), (3, 1), (1, 1)]


@pytest.mark.usefixtures("quiet")
@pytest.mark.parametrize(
    "options, sparse, message",
    [
        # The compiled steps of the network.
        (dict(alpha=1e200), False, "gradient is not finite.*alpha or fairness"),
        (dict(fairness=1e300), False, "gradient is not finite.*alpha or fairness"),
        # The Python steps (sparse X).
        (dict(alpha=1e308), True, "gradient is not finite.*alpha or fairness"),
        # Adam's steps, which end in non-finite parameters.
        (dict(alpha=1e308, solver="adam"), False, "non-finite parameters.*alpha"),
        (
            dict(learning_rate=1e300, solver="adam", max_iter=5),
            False,
            "non-finite parameters.*learning_rate",
        ),
    ],
    ids=["alpha", "fairness", "alpha-sparse", "alpha-adam", "learning_rate-adam"],
)
def test_training_that_overflows_names_the_parameters_to_lower(
    options, sparse, message
):
    X, y = _binary_table()
    X = X - 0.5
    options = {"max_iter": 2, "random_state": 0, **options}
    model = FairMLPClassifier(hidden_layer_sizes=(4,), **options)
    with pytest.raises(FloatingPointError, match=message):
        model.fit(sp.csr_matrix(X) if sparse else X, y, sensitive_features=X[:, 0])


# -- sensitive attributes: columns of X and the metadata -------------------


@pytest.mark.parametrize(
    "sensitive_features",
    [
        pd.DataFrame({"race": [0, 0, 1, 1], "sex": [0, 1, 0, 1]}).rename(
            columns={"sex": "race"}
        ),
        {1: [0, 0, 1, 1], "1": [0, 1, 0, 1]},
    ],
    ids=["frame", "dict-1-and-'1'"],
)
def test_sensitive_features_with_duplicate_column_names_are_refused(
    sensitive_features,
):
    with pytest.raises(ValueError, match="sensitive_features has duplicate column"):
        demographic_parity_difference(
            [0, 1, 0, 1], [0, 1, 1, 0], sensitive_features=sensitive_features
        )


class _Unordered:
    """A value that can be hashed but not sorted."""


@pytest.mark.parametrize("pandas", [True, False], ids=["pandas", "no-pandas"])
def test_sensitive_values_that_cannot_be_sorted_are_refused(monkeypatch, pandas):
    if not pandas:
        import skfedida._groups as module

        monkeypatch.setattr(module, "pd", None)
    column = np.array([_Unordered() for _ in range(4)], dtype=object)
    with pytest.raises(ValueError, match="column 'race' mixes values that cannot"):
        demographic_parity_difference(
            [0, 1, 0, 1], [0, 1, 1, 0], sensitive_features={"race": column}
        )


@pytest.mark.parametrize("mask", [[True, False], [True, False, False, True]])
def test_a_sensitive_mask_of_another_length_than_the_columns_is_refused(mask):
    X, y = _binary_table()
    model = FairPenaltyLogisticRegression(sensitive=mask, max_iter=1)
    with pytest.raises(ValueError, match="sensitive as a boolean mask needs 3 values"):
        model.fit(X, y)


def test_a_sensitive_mask_of_one_value_per_column_is_accepted():
    X, y = _binary_table()
    model = FairPenaltyLogisticRegression(sensitive=[True, False, False], max_iter=1)
    assert list(model.fit(X, y).model_feature_names_) == ["x1", "x2"]


@pytest.mark.parametrize("position", [3, -4])
def test_a_sensitive_position_outside_the_columns_is_refused(position):
    X, y = _binary_table()
    model = FairPenaltyLogisticRegression(sensitive=position, max_iter=1)
    with pytest.raises(ValueError, match=f"position {position} outside X's 3 columns"):
        model.fit(X, y)


@pytest.mark.parametrize("position, dropped", [(2, "x2"), (-3, "x0")])
def test_the_first_and_last_sensitive_positions_are_accepted(position, dropped):
    X, y = _binary_table()
    model = FairPenaltyLogisticRegression(sensitive=position, max_iter=1).fit(X, y)
    assert dropped not in list(model.model_feature_names_)
    assert len(model.model_feature_names_) == 2


def test_a_scorer_refuses_sensitive_columns_of_a_sparse_X():
    X, y = _binary_table()
    model = LogisticRegression().fit(X, y)
    scorer = make_fairness_scorer("dpd", sensitive=[0])
    with pytest.raises(TypeError, match="sensitive columns cannot be read from a"):
        scorer(model, sp.csr_matrix(X), y)


# -- data generators -------------------------------------------------------


def _generate(**options):
    return make_federated_classification(
        **{"n_samples": 40, "n_clients": 2, "random_state": 0, **options}
    )


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(n_clients=0), "n_clients must be an int >= 1; got 0"),
        (dict(n_features=0), "n_features must be an int >= 1; got 0"),
        (dict(prevalence=ABOVE_ONE), "prevalence must hold finite values in"),
        (dict(prevalence=-TINY), "prevalence must hold finite values in"),
        (
            dict(group_proportions=[-TINY, 1, 1, 1]),
            "group_proportions must hold finite values >= 0",
        ),
        (
            dict(group_proportions=[0, 0, 0, 0]),
            "every client needs a positive total in group_proportions",
        ),
        (
            dict(group_proportions=[[1, 1, 1, 1], [0, 0, 0, 0]]),
            "every client needs a positive total in group_proportions",
        ),
        (dict(client_sizes=[1, 0]), "client_sizes must hold 2 positive weights"),
        (dict(heterogeneity=-TINY), "heterogeneity must be a finite number >= 0"),
        (dict(class_sep=np.inf), "class_sep must be a finite number >= 0"),
        (dict(n_classes=1), "n_classes must be an int >= 2; got 1"),
        (dict(n_classes=True), "n_classes must be an int >= 2; got True"),
        (
            dict(n_classes=3, prevalence=0.3),
            "prevalence is the positive share of two classes",
        ),
        (
            dict(n_classes=2, class_proportions=[1, 1]),
            "class_proportions is for more than two classes",
        ),
        (
            dict(n_classes=3, class_proportions=[1, 1]),
            r"class_proportions must have shape \(3,\), \(4, 3\)",
        ),
        (
            dict(n_classes=3, class_proportions=[1, -TINY, 1]),
            "class_proportions must hold finite values >= 0",
        ),
        (
            dict(n_classes=3, class_proportions=[1, np.nan, 1]),
            "class_proportions must hold finite values >= 0",
        ),
        (
            dict(n_classes=3, class_proportions=[0, 0, 0]),
            "every group needs a positive total in class_proportions",
        ),
        (
            dict(n_classes=3, class_proportions=[[1, 1, 1]] * 3 + [[0, 0, 0]]),
            "every group needs a positive total in class_proportions",
        ),
    ],
    ids=lambda v: repr(v) if isinstance(v, dict) else "",
)
def test_bad_generator_parameters_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        _generate(**options)


@pytest.mark.parametrize(
    "options",
    [
        dict(n_samples=1, n_clients=1),
        dict(n_samples=2, n_clients=2),
        dict(n_features=1),
        dict(prevalence=0.0),
        dict(prevalence=1.0),
        dict(group_proportions=[0, 0, 0, TINY]),
        dict(client_sizes=[1, TINY]),
        dict(heterogeneity=0.0, class_sep=0.0, group_shift=0.0, client_shift=0.0),
        dict(n_classes=2),
        dict(n_classes=3, class_proportions=[1, 0, TINY]),
    ],
    ids=repr,
)
def test_generator_parameters_at_their_bounds_are_accepted(options):
    data = _generate(**options)
    assert data.data.shape[0] == options.get("n_samples", 40)


# -- FairnessAwareROSE -------------------------------------------------------


def _rose_problem():
    X = pd.DataFrame({"x": np.arange(8.0) ** 2, "z": np.arange(8.0)})
    y = np.array([0, 1, 0, 1, 0, 0, 0, 1])
    return X, y, np.array(list("aabbaabb"))


_EVERY_SUBGROUP = [("a", 0), ("a", 1), ("b", 0), ("b", 1)]


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(n_target={"a": 3}), r"n_target keys must be \(group, class\) pairs"),
        (dict(n_target={("a", 0): 0}), r"n_target for subgroup .* int >= 1; got 0"),
        (dict(n_target={("a", 0): 2.0}), r"n_target for subgroup .* int >= 1"),
        (dict(n_target=lambda counts: 2.0), "n_target as a callable must return"),
        (dict(shrinkage={"a": 1.0}), r"shrinkage keys must be \(group, class\) pairs"),
        (
            dict(shrinkage={**dict.fromkeys(_EVERY_SUBGROUP, 0.0), ("a", 0): -TINY}),
            "shrinkage for subgroup .* must be a number >= 0",
        ),
        (
            dict(covariance=[[1.0, np.nan], [np.nan, 1.0]]),
            "covariance must be a finite symmetric matrix",
        ),
        (
            dict(covariance=[[1.0, np.inf], [np.inf, 1.0]]),
            "covariance must be a finite symmetric matrix",
        ),
        (
            dict(covariance=[[1.0, 0.5], [0.2, 1.0]]),
            "covariance must be a finite symmetric matrix",
        ),
        (dict(covariance=[[1.0, 2.0], [2.0, 1.0]]), "covariance must be positive semi"),
    ],
    ids=[
        "n_target-bare-key",
        "n_target-zero",
        "n_target-float",
        "n_target-callable-float",
        "shrinkage-bare-key",
        "shrinkage-negative",
        "covariance-nan",
        "covariance-inf",
        "covariance-asymmetric",
        "covariance-indefinite",
    ],
)
def test_bad_sampler_parameters_are_named(options, message):
    X, y, S = _rose_problem()
    with pytest.raises(ValueError, match=message):
        FairnessAwareROSE(random_state=0, **options).fit_resample(
            X, y, sensitive_features=S
        )


@pytest.mark.parametrize(
    "options",
    [
        dict(n_target={("a", 0): 1}),
        dict(n_target=lambda counts: 1),
        dict(shrinkage=dict.fromkeys(_EVERY_SUBGROUP, 0.0)),
        # Singular, positive semi-definite: its smallest eigenvalue computes
        # as about -1e-17, a rounding error the check must tolerate.
        dict(covariance=np.outer([1.0, 1 / 3], [1.0, 1 / 3])),
    ],
    ids=["n_target-one", "n_target-callable-one", "shrinkage-zero", "singular"],
)
def test_sampler_parameters_at_their_bounds_are_accepted(options):
    X, y, S = _rose_problem()
    X_res, y_res = FairnessAwareROSE(random_state=0, **options).fit_resample(
        X, y, sensitive_features=S
    )
    assert len(X_res) == len(y_res) > 0
    assert np.all(np.isfinite(X_res.to_numpy()))


@pytest.mark.usefixtures("quiet")
def test_the_sampler_takes_two_rows_of_one_column():
    # The smallest input it can balance: 1 row is refused (one class), and
    # so are 0 rows and 0 columns (sklearn's wording).
    X_res, y_res = FairnessAwareROSE(random_state=0).fit_resample(
        np.array([[0.0], [1.0]]), [0, 1]
    )
    assert X_res.shape == (2, 1) and sorted(y_res) == [0, 1]
    with pytest.raises(ValueError, match="one class only"):
        FairnessAwareROSE().fit_resample([[0.0]], [1])
    with pytest.raises(ValueError, match="0 sample"):
        FairnessAwareROSE().fit_resample(np.zeros((0, 1)), [])
    with pytest.raises(ValueError, match="0 feature"):
        FairnessAwareROSE().fit_resample(np.zeros((2, 0)), [0, 1])


@pytest.mark.usefixtures("quiet")
@pytest.mark.parametrize(
    "X, y, message",
    [
        (np.arange(4.0), [0, 1, 0, 1], r"X must be 2-D \(n_samples, n_features\)"),
        (np.zeros((4, 1)), [0.1, 0.2, 0.3, 0.4], "'continuous'; y must hold classes"),
    ],
    ids=["X-1-D", "y-continuous"],
)
def test_the_sampler_refuses_x_of_one_dimension_and_continuous_y(X, y, message):
    with pytest.raises(ValueError, match=message):
        FairnessAwareROSE().fit_resample(X, y)


# -- the penalties -----------------------------------------------------------


_SCORES, _Y, _GROUPS = [0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], [0, 0, 1, 1]


@pytest.mark.parametrize("penalty", PENALTIES, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(y=[0, 1, 0]), "scores, y and groups must have the same number of rows"),
        (dict(groups=[0, 1, 1]), "scores, y and groups must have the same number"),
        # A float code was truncated (0.5 -> group 0) without a word.
        (dict(groups=[0, 0.5, 1, 1]), "groups must hold group codes .* such as 0.5"),
        (dict(groups=[0, 0, 1, -1]), "groups must hold group codes .* it has -1"),
        (dict(groups=["a", "a", "b", "b"]), "groups must hold group codes .* dtype"),
        (dict(n_groups=1), r"groups has code 1, outside range\(n_groups\)"),
        (dict(sample_weight=[1.0, 1.0, 1.0]), "sample_weight must hold 4 finite"),
        (dict(sample_weight=[1.0, 1.0, 1.0, -TINY]), "sample_weight must hold 4"),
        (dict(sample_weight=[1.0, np.nan, 1.0, 1.0]), "sample_weight must hold 4"),
        (dict(sample_weight=[1.0, np.inf, 1.0, 1.0]), "sample_weight must hold 4"),
    ],
    ids=[
        "y-rows",
        "groups-rows",
        "groups-float",
        "groups-negative",
        "groups-strings",
        "groups-beyond-n_groups",
        "weight-rows",
        "weight-negative",
        "weight-nan",
        "weight-inf",
    ],
)
def test_penalty_inputs_that_do_not_fit_the_scores_are_named(penalty, kwargs, message):
    args = {"scores": _SCORES, "y": _Y, "groups": _GROUPS, **kwargs}
    with pytest.raises(ValueError, match=message):
        penalty(**args)


@pytest.mark.parametrize("penalty", PENALTIES, ids=lambda f: f.__name__)
def test_penalty_inputs_at_their_bounds_are_accepted(penalty):
    value, _ = penalty(_SCORES, _Y, _GROUPS, n_groups=2)
    # Whole-number float codes, a zero weight, and a zero class weight.
    assert penalty(_SCORES, _Y, [0.0, 0.0, 1.0, 1.0])[0] == pytest.approx(value)
    weighted, _ = penalty(_SCORES, _Y, _GROUPS, sample_weight=[1.0, 1.0, 1.0, 0.0])
    assert np.isfinite(weighted)
    scores = np.column_stack([_SCORES, _SCORES])
    assert np.isfinite(penalty(scores, _Y, _GROUPS, class_weight=[1.0, 0.0])[0])
    with pytest.raises(ValueError, match="class_weight must hold 2 non-negative"):
        penalty(scores, _Y, _GROUPS, class_weight=[1.0, -TINY])


# -- fairness metrics, selection rate and scorers -------------------------


def test_fairness_metrics_on_no_rows_are_refused():
    with pytest.raises(ValueError, match="y_true is empty"):
        demographic_parity_difference([], [], sensitive_features=[])


def test_the_selection_rate_of_no_rows_is_refused():
    with pytest.raises(ValueError, match="y_pred is empty"):
        selection_rate([], [])


def test_the_selection_rate_of_three_labels_is_refused():
    with pytest.raises(ValueError, match="defined for binary outcomes; y_true and"):
        selection_rate([0, 1, 2], [0, 1, 2])


def test_a_multiclass_group_report_without_pandas_asks_for_pos_label(monkeypatch):
    import skfedida.metrics._fairness as module

    monkeypatch.setattr(module, "pd", None)
    with pytest.raises(ValueError, match=r"needs pandas .* or pos_label"):
        group_report([0, 1, 2], [0, 1, 2], sensitive_features=["a", "a", "b"])
    report = group_report(
        [0, 1, 2], [0, 1, 2], sensitive_features=["a", "a", "b"], pos_label=2
    )
    np.testing.assert_array_equal(report.n, [2, 1])


_Y_TRUE, _Y_PRED, _S = [0, 1, 0, 1], [0, 1, 1, 1], ["a", "a", "b", "b"]


@pytest.mark.parametrize("min_group_size", [0, -1, 1.0], ids=repr)
def test_min_group_size_below_one_is_refused_by_the_metrics_themselves(min_group_size):
    with _no_validation(), pytest.raises(ValueError, match="min_group_size must be"):
        demographic_parity_difference(
            _Y_TRUE, _Y_PRED, sensitive_features=_S, min_group_size=min_group_size
        )
    with _no_validation(), pytest.raises(ValueError, match="min_group_size must be"):
        make_fairness_scorer("dpd", min_group_size=min_group_size)
    with _no_validation(), pytest.raises(ValueError, match="min_group_size must be"):
        make_tradeoff_scorer(min_group_size=min_group_size)


def test_min_group_size_of_one_is_accepted_by_the_metrics_themselves():
    with _no_validation():
        value = demographic_parity_difference(
            _Y_TRUE, _Y_PRED, sensitive_features=_S, min_group_size=1
        )
        make_fairness_scorer("dpd", min_group_size=1)
    assert value == pytest.approx(0.5)


def test_an_unknown_agg_is_refused_by_equalized_odds_itself():
    with _no_validation(), pytest.raises(ValueError, match="agg must be 'worst_case'"):
        equalized_odds_difference(_Y_TRUE, _Y_PRED, sensitive_features=_S, agg="max")


@pytest.mark.parametrize("weight", [-TINY, -1.0, np.nan], ids=repr)
def test_a_negative_or_nan_tradeoff_weight_is_refused(weight):
    with pytest.raises(ValueError, match="weight must be a non-negative number"):
        make_tradeoff_scorer(weight=weight)


def test_a_tradeoff_weight_that_is_no_number_is_refused_by_the_function_itself():
    with _no_validation(), pytest.raises(ValueError, match="weight must be a non"):
        make_tradeoff_scorer(weight="0.5")


def test_a_zero_tradeoff_weight_scores_the_performance_alone():
    X, y = _binary_table()
    model = LogisticRegression().fit(X, y)
    scorer = make_tradeoff_scorer("accuracy", "dpd", weight=0.0)
    score = scorer(model, X, y, sensitive_features=X[:, 0])
    assert score == pytest.approx(model.score(X, y))


# -- operating points: thresholds, rates and bins --------------------------


@pytest.mark.parametrize(
    "threshold",
    [
        0.0,
        1.0,
        True,
        {"selection_rate": -TINY},
        {"selection_rate": ABOVE_ONE},
        {"selection_rate": 0.5, "rate": 0.5},
        {"selection_rate": "half"},
    ],
    ids=repr,
)
def test_a_threshold_outside_its_range_is_refused(threshold):
    with pytest.raises(ValueError, match="threshold must be None, a probability in"):
        make_fairness_scorer("dpd", threshold=threshold)


@pytest.mark.parametrize(
    "threshold",
    [TINY, BELOW_ONE, {"selection_rate": 0.0}, {"selection_rate": 1.0}],
    ids=repr,
)
def test_a_threshold_at_its_bounds_is_accepted(threshold):
    X, y = _binary_table()
    model = LogisticRegression().fit(X, y)
    scorer = make_fairness_scorer("dpd", threshold=threshold)
    assert np.isfinite(scorer(model, X, y, sensitive_features=X[:, 0]))


@pytest.mark.parametrize("n_bins", [1, MAX_N_BINS + 1, True, 2.0], ids=repr)
def test_n_bins_outside_its_range_is_refused_by_the_scorer_itself(n_bins):
    with _no_validation(), pytest.raises(ValueError, match="n_bins must be an int in"):
        make_fairness_scorer("dpd", threshold=0.5, n_bins=n_bins)


@pytest.mark.parametrize("n_bins", [2, MAX_N_BINS])
def test_n_bins_at_its_bounds_is_accepted_by_the_scorer_itself(n_bins):
    with _no_validation():
        make_fairness_scorer("dpd", threshold=0.5, n_bins=n_bins)


_CLIENTS = [np.array([0.1, 0.4, 0.8]), np.array([0.3, 0.9])]
_RATE_FUNCTIONS = {
    "threshold_at_rate": lambda rate: threshold_at_rate([1.0, 2.0, 3.0], rate),
    "federated_operating_point": lambda rate: federated_operating_point(
        _CLIENTS, rate, n_bins=10
    ),
    "federated_threshold": lambda rate: federated_threshold(_CLIENTS, rate, n_bins=10),
}


@pytest.mark.parametrize("name", sorted(_RATE_FUNCTIONS))
@pytest.mark.parametrize("rate", [-TINY, ABOVE_ONE, np.nan, "0.5"], ids=repr)
def test_a_rate_outside_the_unit_interval_is_refused_by_the_function_itself(name, rate):
    with _no_validation(), pytest.raises(ValueError, match="rate must be a number in"):
        _RATE_FUNCTIONS[name](rate)


@pytest.mark.parametrize("name", sorted(_RATE_FUNCTIONS))
@pytest.mark.parametrize("rate", [0.0, 1.0])
def test_a_rate_at_the_ends_of_the_unit_interval_is_accepted(name, rate):
    with _no_validation():
        assert _RATE_FUNCTIONS[name](rate) is not None


@pytest.mark.parametrize("function", [federated_operating_point, federated_threshold])
@pytest.mark.parametrize(
    "client_scores, sample_weights",
    [([np.array([])], None), ([[0.2, 0.7], [0.5]], [[0.0, 0.0], [0.0]])],
    ids=["no-rows", "zero-weights"],
)
def test_clients_without_rows_or_weight_cannot_place_a_threshold(
    function, client_scores, sample_weights
):
    with pytest.raises(ValueError, match="the clients hold no rows"):
        function(client_scores, 0.5, n_bins=10, sample_weights=sample_weights)


def test_zero_and_tiny_sample_weights_place_a_threshold():
    point = federated_operating_point(
        [[0.2, 0.7], [0.5]], 0.5, n_bins=10, sample_weights=[[0.0, TINY], [0.0]]
    )
    # All the weight is on the score 0.7: half of it is selected.
    assert float(point.expected_decisions(np.array([0.7]))[0]) == pytest.approx(0.5)


# -- model selection ---------------------------------------------------------


_RESULTS = {
    "mean_test_auc": np.array([0.8, 0.7]),
    "mean_test_dpd": np.array([-0.2, -0.1]),
    "mean_test_selection_rate": np.array([0.0, 1.0]),
}


@pytest.mark.parametrize(
    "band",
    [(-TINY, 0.5), (0.5, 0.5), (0.6, 0.5), (0.2, ABOVE_ONE), (0.2,), (0.2, "x")],
    ids=repr,
)
def test_a_band_outside_the_unit_interval_or_empty_is_refused(band):
    with pytest.raises(ValueError, match=r"band must be \(low, high\) with 0 <= low"):
        fairest_within("auc", "dpd", band=band)


def test_a_band_of_the_whole_unit_interval_is_accepted():
    # Selection rates of exactly 0 and 1 lie in [0, 1]: both candidates are
    # usable, and the first performs best.
    assert fairest_within("auc", "dpd", band=(0.0, 1.0))(_RESULTS) == 0
    assert fairest_within("auc", "dpd", 1.0, band=(0.0, 1.0))(_RESULTS) == 1


@pytest.mark.parametrize("tolerance", [-TINY, np.nan, "0"], ids=repr)
def test_a_negative_fairest_within_tolerance_is_refused_by_the_function_itself(
    tolerance,
):
    with _no_validation(), pytest.raises(ValueError, match="tolerance must be >= 0"):
        fairest_within("auc", "dpd", tolerance)


def test_a_zero_fairest_within_tolerance_keeps_the_best_performance():
    with _no_validation():
        rule = fairest_within("auc", "dpd", 0.0, band=(0.0, 1.0))
    assert rule(_RESULTS) == 0


@pytest.fixture(scope="module")
def federation():
    data = make_federated_classification(60, n_clients=2, random_state=0)
    return data.data, data.target, data.clients, pd.DataFrame(data.sensitive)


def _lambda_range(federation, **options):
    X, y, clients, S = federation
    options = {"clients": clients, "sensitive_features": S, **options}
    return lambda_range(FairPenaltyLogisticRegression(max_iter=1), X, y, **options)


@pytest.mark.parametrize(
    "lambdas", [[0.0], [0.0, 1.0, 1.0], [0.1, 1.0], [[0.0, 1.0]]], ids=repr
)
def test_lambdas_not_increasing_from_zero_are_refused(federation, lambdas):
    with pytest.raises(ValueError, match="lambdas must be an increasing sequence"):
        _lambda_range(federation, lambdas=lambdas)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(tolerance=0.0), r"tolerance must be in \(0, 1\]"),
        (dict(tolerance=ABOVE_ONE), r"tolerance must be in \(0, 1\]"),
        (dict(n_candidates=1), "n_candidates must be an int >= 2"),
        (dict(n_candidates=2.0), "n_candidates must be an int >= 2"),
    ],
    ids=repr,
)
def test_lambda_range_options_out_of_range_are_refused_by_the_function_itself(
    federation, options, message
):
    with _no_validation(), pytest.raises(ValueError, match=message):
        _lambda_range(federation, **options)


@pytest.mark.parametrize(
    "options",
    [
        dict(lambdas=[0.0, 1.0]),
        dict(tolerance=TINY),
        dict(tolerance=1.0),
        dict(n_candidates=2),
    ],
    ids=repr,
)
def test_lambda_range_options_at_their_bounds_pass_to_the_next_check(
    federation, options
):
    # Accepted: the call goes on to ask for the clients of the rows.
    with _no_validation(), pytest.raises(ValueError, match="needs clients="):
        _lambda_range(federation, clients=None, **options)


@pytest.mark.parametrize("which", ["y", "clients"])
def test_lambda_range_with_rows_missing_from_y_or_clients_is_refused(federation, which):
    X, y, clients, S = federation
    parts = {"y": y, "clients": clients}
    parts[which] = parts[which][:-1]
    with pytest.raises(ValueError, match="X has 60 rows; y and clients must match"):
        _lambda_range((X, parts["y"], parts["clients"], S))


def test_lambda_range_validation_without_rows_of_a_client_is_refused(federation):
    X, y, clients, S = federation
    kept = clients == 0
    validation = (X[kept], y[kept], clients[kept], S[kept])
    with pytest.raises(ValueError, match=r"validation has no rows of clients \[1\]"):
        _lambda_range(federation, validation=validation)


def _coarse_to_fine(low, high, spacing):
    X, y = _binary_table(n=20, n_features=1)
    search = CoarseToFineSearchCV(
        LogisticRegression(), "C", low, high, n_coarse=2, n_fine=1, spacing=spacing
    )
    return search.fit(X, y)


@pytest.mark.parametrize("spacing", ["linear", "log"])
def test_a_search_range_of_one_value_is_refused(spacing):
    with pytest.raises(ValueError, match=r"low \(1.0\) must be below high \(1.0\)"):
        _coarse_to_fine(1.0, 1.0, spacing)


@pytest.mark.parametrize("low", [0.0, -1.0])
def test_a_log_spaced_search_from_zero_or_below_is_refused(low):
    with pytest.raises(ValueError, match="spacing='log' needs low > 0"):
        _coarse_to_fine(low, 1.0, "log")


def test_a_log_spaced_search_from_just_above_zero_is_accepted():
    search = _coarse_to_fine(1e-300, 1.0, "log")
    assert search.coarse_values_[0] == pytest.approx(1e-300)


@pytest.mark.parametrize("method", ["fit", "partial_fit"])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -1.0])
@pytest.mark.parametrize(
    "estimator",
    [
        FairPenaltyLogisticRegression(),
        FairMLPClassifier(hidden_layer_sizes=(3,), max_iter=2),
    ],
    ids=["logistic", "mlp"],
)
def test_a_float64_sample_weight_that_is_not_finite_and_non_negative_is_refused(
    estimator, bad, method
):
    # A float64 array of the right length takes a fast path past sklearn's
    # generic check; a NaN, an infinite or a negative weight must still be
    # refused naming sample_weight (a NaN would train a NaN model).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = np.tile([0, 1], 10)
    S = np.repeat([0, 1], 10)
    weight = np.ones(20)
    extra = {"classes": [0, 1]} if method == "partial_fit" else {}
    fitted = getattr(estimator, method)(
        X, y, sensitive_features=S, sample_weight=weight, **extra
    )
    assert np.isfinite(fitted.predict_proba(X)).all()
    weight[4] = bad
    with pytest.raises(ValueError, match="sample_weight"):
        getattr(estimator, method)(
            X, y, sensitive_features=S, sample_weight=weight, **extra
        )
