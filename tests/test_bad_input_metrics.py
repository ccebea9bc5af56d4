"""Bad input to the metrics, scorers and model selection (issue 31, parts 3 and 4).

Each test here gave a wrong or misleading number, or an unclear error, before
its fix: probabilities read as labels, a callable metric returning a string,
a differential-privacy delta that guarantees nothing, a lambda range from an
inactive penalty, and search errors that named nothing.
"""

import numbers
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline

from skfedida.datasets import make_federated_classification
from skfedida.federated import DifferentialPrivacy, FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.metrics import (
    demographic_parity_difference,
    demographic_parity_ratio,
    equal_opportunity_difference,
    equalized_odds_difference,
    equalized_odds_ratio,
    fairness_summary,
    false_positive_rate_difference,
    group_report,
    make_fairness_scorer,
    positive_predictive_value_difference,
    true_positive_rate_difference,
)
from skfedida.model_selection import CoarseToFineSearchCV, fairest_within, lambda_range


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    n = 200
    X = rng.normal(size=(n, 3))
    S = rng.choice(["a", "b"], size=n)
    y = (X[:, 0] + 0.5 * (S == "a") + rng.normal(scale=0.5, size=n) > 0).astype(int)
    return X, y, S


# -- a callable metric must return a number (3.7) ---------------------------------


def text_metric(y_true, y_pred, *, sensitive_features, **kwargs):
    """A user metric that returns a formatted string instead of a number."""
    return ""


def none_metric(y_true, y_pred, *, sensitive_features, **kwargs):
    return None


@pytest.mark.parametrize("metric", [text_metric, none_metric])
@pytest.mark.parametrize("threshold", [None, 0.5])
def test_scorer_refuses_a_non_numeric_metric(problem, metric, threshold):
    X, y, S = problem
    clf = LogisticRegression().fit(X, y)
    scorer = make_fairness_scorer(metric, threshold=threshold)
    with pytest.raises(TypeError, match=metric.__name__):
        scorer(clf, X, y, sensitive_features=S)


def test_scorer_keeps_a_numeric_callable_metric(problem):
    X, y, S = problem
    clf = LogisticRegression().fit(X, y)

    def numpy_metric(y_true, y_pred, *, sensitive_features, **kwargs):
        return np.float32(0.25)

    def array_metric(y_true, y_pred, *, sensitive_features, **kwargs):
        return np.array(0.25)

    for metric in (numpy_metric, array_metric):
        assert make_fairness_scorer(metric)(clf, X, y, sensitive_features=S) == -0.25


# -- probabilities passed as labels (3.1, and 4's equalized odds) -----------------

LABEL_METRICS = [
    demographic_parity_difference,
    demographic_parity_ratio,
    false_positive_rate_difference,
    true_positive_rate_difference,
    positive_predictive_value_difference,
    equalized_odds_difference,
    equalized_odds_ratio,
    equal_opportunity_difference,
    fairness_summary,
    group_report,
]


@pytest.mark.parametrize("metric", LABEL_METRICS, ids=lambda f: f.__name__)
def test_probabilities_as_labels_are_refused(problem, metric):
    # Before: DPD 0.004 (0.2 at 0.5), a group_report row per distinct float,
    # equalized odds NaN with a warning per "class".
    X, y, S = problem
    proba = LogisticRegression().fit(X, y).predict_proba(X)[:, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning before the error
        with pytest.raises(ValueError, match=r"soft=True.*threshold"):
            metric(y, proba, sensitive_features=S)
    # The same probabilities with soft=True are what the metric scores.
    metric(y, proba, sensitive_features=S, soft=True)


@pytest.mark.parametrize(
    "y_true, y_pred",
    [
        ([0, 1, 0, 1], [0.3, 0.7, 0.3, 0.7]),  # read as four classes before
        ([0.0, 1.0, 0.0, 1.0], [0.3, 0.7, 0.7, 0.3]),
        (["no", "yes", "no", "yes"], [0.3, 0.7, 0.3, 0.7]),
        ([0, 1, 2, 1], [0.2, 0.5, 0.9, 0.5]),  # multi-class
        ([0, 1, 0, 1], [0.0, 1.0, np.nan, 1.0]),
    ],
)
def test_float_predictions_must_be_labels(y_true, y_pred):
    S = ["a", "a", "b", "b"]
    with pytest.raises(ValueError, match=r"y_pred.*soft=True"):
        demographic_parity_difference(
            y_true, y_pred, sensitive_features=S, pos_label=y_true[1]
        )
    with pytest.raises(ValueError, match=r"y_pred.*soft=True"):
        group_report(y_true, y_pred, sensitive_features=S, pos_label=y_true[1])


@pytest.mark.parametrize(
    "y_true, y_pred, pos_label",
    [
        ([0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 1.0, 1.0], None),
        ([0, 1, 0, 1], [0.0, 1.0, 1.0, 1.0], None),
        ([-1.0, 1.0, -1.0, 1.0], [-1.0, 1.0, 1.0, 1.0], None),
        ([0.5, 2.5, 0.5, 2.5], [0.5, 2.5, 2.5, 2.5], 2.5),
        # A fold without positives: 1.0 is the label sklearn reads 0/1 with.
        ([0, 0, 0, 0], [0.0, 1.0, 1.0, 1.0], None),
        ([0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0], 1.0),
        (["no", "no", "no", "no"], ["no", "yes", "yes", "yes"], "yes"),
    ],
)
def test_float_labels_still_work(y_true, y_pred, pos_label):
    S = ["a", "a", "b", "b"]
    dpd = demographic_parity_difference(
        y_true, y_pred, sensitive_features=S, pos_label=pos_label
    )
    assert dpd == pytest.approx(0.5)
    assert (
        len(group_report(y_true, y_pred, sensitive_features=S, pos_label=pos_label))
        == 2
    )


def test_soft_accepts_fractional_decisions():
    # The expected decisions of a randomised rule at a matched rate: 1 above a
    # tied block, its probability inside, 0 below, scored with soft=True.
    y = np.array([0, 1, 0, 1, 0, 1])
    decisions = np.array([0.0, 1.0, 0.25, 0.25, 0.0, 1.0])
    S = np.array(["a", "a", "a", "b", "b", "b"])
    dpd = demographic_parity_difference(y, decisions, sensitive_features=S, soft=True)
    assert dpd == pytest.approx((1.25 - 1.25) / 3)
    dfpr = false_positive_rate_difference(y, decisions, sensitive_features=S, soft=True)
    assert dfpr == pytest.approx(0.125)


@pytest.mark.parametrize("metric", LABEL_METRICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "y_pred",
    [
        [-0.4, 1.3, -2.0, 0.8],  # decision_function scores, not probabilities
        [-0.1, 0.7, 0.2, 0.9],  # one value just below 0
        [0.1, 1.2, 0.2, 0.9],  # one value just above 1
        [0.1, np.inf, 0.2, 0.9],
    ],
    ids=["scores", "below-0", "above-1", "inf"],
)
def test_soft_predictions_outside_unit_interval_are_refused(metric, y_pred):
    # Stated behaviour: with soft=True y_pred are probabilities of the
    # positive class, so any value outside [0, 1] (a negative score from
    # decision_function included) is an error naming y_pred, [0, 1] and
    # soft=True -- not a rate below 0 or above 1 read as a disparity.
    y = [0, 1, 0, 1]
    S = ["a", "a", "b", "b"]
    with pytest.raises(ValueError, match=r"y_pred.*\[0, 1\].*soft=True"):
        metric(y, y_pred, sensitive_features=S, soft=True)
    # The same predictions clipped into [0, 1] are scored.
    metric(y, np.clip(y_pred, 0, 1), sensitive_features=S, soft=True)


def test_multiclass_integer_predictions_still_compare_every_class():
    y = [0, 1, 2, 1, 0, 2]
    S = ["a", "a", "a", "b", "b", "b"]
    assert demographic_parity_difference(
        y, [0.0, 1.0, 2.0, 1.0, 1.0, 2.0], sensitive_features=S
    ) == demographic_parity_difference(y, [0, 1, 2, 1, 1, 2], sensitive_features=S)


# -- a differential-privacy delta that guarantees nothing (3.4) -------------------


@pytest.fixture(scope="module")
def federation_data():
    return make_federated_classification(300, n_clients=5, random_state=0)


def _private_fit(data, delta):
    pytest.importorskip("dp_accounting")
    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(),
        n_rounds=1,
        random_state=0,
        dp=DifferentialPrivacy(target_delta=delta, noise_seed=0),
    )
    return federation.fit(
        data.data, data.target, clients=data.clients, sensitive_features=data.sensitive
    )


@pytest.mark.parametrize("delta", [0.9, 0.5, 0.2])
def test_a_delta_of_one_over_the_clients_or_more_is_refused(federation_data, delta):
    # Before: target_delta=0.9 reported privacy_.epsilon == 0.0, a perfect
    # guarantee, for a delta that allows publishing a client's data outright.
    with pytest.raises(ValueError, match=r"target_delta=.*5 clients.*0\.2"):
        _private_fit(federation_data, delta)


def test_a_delta_below_one_over_the_clients_is_accepted(federation_data):
    fitted = _private_fit(federation_data, 0.19)
    assert fitted.privacy_.delta == 0.19 and fitted.privacy_.epsilon > 0
    # The number of clients is known at fit, not at construction.
    assert DifferentialPrivacy(target_delta=0.9).epsilon(1) >= 0


# -- lambda_range (3.5 and 4) ------------------------------------------------------


@pytest.fixture(scope="module")
def small_federation():
    return make_federated_classification(450, n_clients=3, random_state=0)


def test_lambda_range_without_sensitive_features_is_refused(small_federation):
    # Before: (0, 100) from flat scores, its own InactivePenaltyWarning silenced.
    data = small_federation
    with pytest.raises(ValueError, match="sensitive_features"):
        lambda_range(
            FairPenaltyLogisticRegression(),
            data.data,
            data.target,
            clients=data.clients,
        )


def test_lambda_range_reads_sensitive_columns_of_the_estimator(small_federation):
    # Column mode: the estimator reads S from X, so the penalty acts.
    data = small_federation
    X = np.column_stack([data.data, data.sensitive["race"] == "A"]).astype(float)
    result = lambda_range(
        FairPenaltyLogisticRegression(sensitive=[X.shape[1] - 1]),
        X,
        data.target,
        clients=data.clients,
        lambdas=(0.0, 1.0),
        tolerance=0.5,
        band=None,
        random_state=0,
    )
    assert result.range == (0.0, 1.0)


def test_lambda_range_names_a_client_too_small_to_hold_out_rows(small_federation):
    data = small_federation
    clients = np.asarray(data.clients).copy()
    rows = np.flatnonzero(clients == 0)
    # Client 0 keeps 11 negatives and 1 positive: no stratified split exists.
    keep = np.r_[rows[data.target[rows] == 0][:11], rows[data.target[rows] == 1][:1]]
    clients[np.setdiff1d(rows, keep)] = 1
    with pytest.raises(
        ValueError, match=r"Client 0 has 12 rows.*validation_fraction.*validation="
    ):
        lambda_range(
            FairPenaltyLogisticRegression(),
            data.data,
            data.target,
            clients=clients,
            sensitive_features=data.sensitive,
            random_state=0,
        )


# -- fairest_within's names (4) ----------------------------------------------------


def test_fairest_within_lists_the_scorers_it_can_use():
    results = {
        "mean_test_roc_auc": np.array([0.8, 0.79]),
        "mean_test_dpd": np.array([-0.2, -0.1]),
        "mean_test_selection_rate": np.array([0.3, 0.3]),
    }
    assert fairest_within("roc_auc", "dpd")(results) == 1
    for rule, name in [
        (fairest_within("auc", "dpd"), "performance='auc'"),
        (fairest_within("roc_auc", "eod"), "fairness='eod'"),
    ]:
        with pytest.raises(ValueError, match=name) as error:
            rule(results)
        assert "'roc_auc', 'dpd', 'selection_rate'" in str(error.value)


# -- CoarseToFineSearchCV over an integer parameter (4) ----------------------------


@pytest.mark.parametrize("spacing", ["linear", "log"])
def test_coarse_to_fine_search_keeps_an_integer_parameter_integer(spacing):
    # Before: floats reached n_neighbors and "All the 6 fits failed".
    X, y = make_classification(120, random_state=0)
    search = CoarseToFineSearchCV(
        Pipeline([("knn", KNeighborsClassifier())]),
        "knn__n_neighbors",
        1,
        40,
        n_coarse=4,
        n_fine=5,
        spacing=spacing,
        cv=3,
    ).fit(X, y)
    values = [p["knn__n_neighbors"] for p in search.cv_results_["params"]]
    assert all(isinstance(v, numbers.Integral) for v in values)
    assert len(values) == len(set(values))  # rounded values evaluated once
    assert not np.isnan(search.cv_results_["mean_test_score"]).any()
    assert search.coarse_values_.dtype.kind == search.fine_values_.dtype.kind == "i"


def test_coarse_to_fine_search_keeps_a_real_parameter_real():
    # Integer bounds of a real parameter (C) still give real values.
    X, y = make_classification(120, random_state=0)
    search = CoarseToFineSearchCV(
        LogisticRegression(), "C", 1, 2, n_coarse=3, n_fine=3, cv=3
    ).fit(X, y)
    assert search.fine_values_.dtype.kind == "f" and search.fine_values_.size


def test_whole_float_predictions_are_labels_as_integers_are():
    # A fold may lack a label the model predicts: pos_label=2.0 with y_true
    # all 2.0, or a third class 3.0; such floats read as the integers do.
    S = np.array(["a", "a", "a", "b", "b", "b"])
    got = demographic_parity_difference(
        np.full(6, 2.0),
        [1.0, 2.0, 1.0, 2.0, 2.0, 1.0],
        sensitive_features=S,
        pos_label=2.0,
    )
    assert got == pytest.approx(
        demographic_parity_difference(
            np.full(6, 2), [1, 2, 1, 2, 2, 1], sensitive_features=S, pos_label=2
        )
    )
    # A predicted class y_true lacks is a class, as for integers (the
    # metrics then compare each class one-vs-rest).
    assert demographic_parity_difference(
        [0, 1, 0, 1], [0.0, 1.0, 3.0, 1.0], sensitive_features=S[:4]
    ) == demographic_parity_difference(
        [0, 1, 0, 1], [0, 1, 3, 1], sensitive_features=S[:4]
    )
