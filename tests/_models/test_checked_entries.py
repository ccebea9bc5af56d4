"""The estimators' and sampler's entries for checked rows refuse bad input.

``check_rows``, ``train_minibatches`` and ``predict_proba_checked`` (and the
sampler's ``noised_columns``) are public methods meant for the federated
client trainer: they skip the per-call checks of ``partial_fit``, but not
the cheap ones that keep a caller from training on rows the loops cannot
index (a numpy loop would train silently on them).
"""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE

ESTIMATORS = [
    FairPenaltyLogisticRegression,
    FairMLPClassifier,
    # The numpy loop (no compiled path for Adam): it used to train on rows
    # past the bounds and on label codes outside the classes.
    lambda: FairMLPClassifier(solver="adam"),
]


def _case():
    rng = np.random.RandomState(0)
    X = rng.randn(8, 2)
    y = np.array([0, 1] * 4)
    S = np.array(list("aabbaabb"))
    return X, y, S


def _primed(make):
    X, y, S = _case()
    model = make().partial_fit(X, y, classes=[0, 1], sensitive_features=S)
    return model, *model.check_rows(X, y, sensitive_features=S)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_unfitted_estimator_says_so(make):
    X, y, _ = _case()
    with pytest.raises(NotFittedError):
        make().check_rows(X, y)
    with pytest.raises(NotFittedError):
        make().predict_proba_checked(X)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_labels_must_match_the_rows(make):
    model, *_ = _primed(make)
    X, y, _ = _case()
    with pytest.raises(ValueError, match="y has 2 labels but X has 8 rows"):
        model.check_rows(X, y[:2])


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize(
    "bounds, message",
    [
        (np.array([0, 4, 100]), "must increase within the rows"),
        (np.array([0, 6, 4, 8]), "must increase within the rows"),
        (np.array([-1, 8]), "must increase within the rows"),
        (np.array([0.0, 4.0, 8.0]), "integer row positions"),
        (np.array([[0, 8]]), "1-D array"),
    ],
)
def test_bounds_outside_the_rows_are_refused(make, bounds, message):
    model, X_model, y_codes, groups = _primed(make)
    with pytest.raises(ValueError, match=message):
        model.train_minibatches(X_model, y_codes, groups, bounds)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_label_codes_outside_the_classes_are_refused(make):
    model, X_model, y_codes, groups = _primed(make)
    y_codes = y_codes.copy()
    y_codes[-1] = 7.0
    with pytest.raises(ValueError, match=r"label codes outside 0\.\.1"):
        model.train_minibatches(X_model, y_codes, groups, np.array([0, 4, 8]))


@pytest.mark.parametrize("make", ESTIMATORS)
def test_groups_must_be_the_encoded_groups(make):
    model, X_model, y_codes, groups = _primed(make)
    with pytest.raises(TypeError, match="SensitiveGroups"):
        model.train_minibatches(X_model, y_codes, groups.codes, np.array([0, 8]))


@pytest.mark.parametrize("make", ESTIMATORS)
def test_model_inputs_of_another_width_or_kind_are_refused(make):
    model, X_model, y_codes, groups = _primed(make)
    with pytest.raises(ValueError, match="X has 4 columns; the model takes 2"):
        model.predict_proba_checked(np.c_[X_model, X_model])
    with pytest.raises(TypeError, match="got list"):
        model.predict_proba_checked(X_model.tolist())
    with pytest.raises(ValueError, match="X has 3 columns"):
        model.train_minibatches(
            np.c_[X_model, X_model[:, 0]], y_codes, groups, np.array([0, 8])
        )


def test_checked_entries_train_as_partial_fit_does():
    # The checks change nothing on good input: one call of two minibatches
    # takes the steps of two partial_fit calls on the same rows.
    X, y, S = _case()
    make = FairPenaltyLogisticRegression
    model, X_model, y_codes, groups = _primed(make)
    reference = make().partial_fit(X, y, classes=[0, 1], sensitive_features=S)
    model.train_minibatches(X_model, y_codes, groups, [0, 4, 8])
    for rows in (slice(0, 4), slice(4, 8)):
        reference.partial_fit(X[rows], y[rows], sensitive_features=S[rows])
    np.testing.assert_allclose(
        model.predict_proba_checked(X_model), reference.predict_proba(X), rtol=1e-6
    )


def test_sampler_noised_columns_takes_array_likes_and_refuses_1d():
    sampler = FairnessAwareROSE()
    assert sampler.noised_columns([[0.5, 1.0], [1.5, 0.0]]).tolist() == [True, False]
    with pytest.raises(ValueError, match="X must be 2-D"):
        sampler.noised_columns(np.array([1.0, 2.0]))
