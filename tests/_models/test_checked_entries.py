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


def _fitted_attributes(model):
    params = [np.array(w) for w in model._get_params_list()]
    return params, model.n_iter_, model.n_samples_seen_, model.loss_


def _assert_same_fit(model, reference):
    got, expected = _fitted_attributes(model), _fitted_attributes(reference)
    for w, v in zip(got[0], expected[0], strict=True):
        np.testing.assert_array_equal(w, v)
    assert got[1:] == expected[1:]


def _rows(n=300, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, 3)
    y = (X[:, 0] + rng.randn(n) > 0).astype(int)
    S = rng.choice(list("abc"), n)
    return X, y, S


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("average", [False, True])
@pytest.mark.parametrize("fused_rows", [300, 600, 1 << 16])
def test_train_epochs_are_partial_fit_calls_to_the_bit(
    make, weighted, average, fused_rows, monkeypatch
):
    # The client trainer's epochs on rows checked once per fit: the same
    # shuffles, steps and fitted attributes as partial_fit's, epoch after
    # epoch. Several epochs share a loop call (as many as fit in FUSED_ROWS
    # rows of 300-row epochs: 1, 2, or all; the last epoch alone); averaged
    # ones run one by one.
    monkeypatch.setattr("skfedida._minibatch.FUSED_ROWS", fused_rows)
    X, y, S = _rows()
    weight = np.random.RandomState(1).uniform(0.5, 2.0, y.size) if weighted else None

    def primed():
        model = make().set_params(random_state=0, batch_size=32, average=average)
        return model.partial_fit(X, y, classes=[0, 1], sensitive_features=S)

    model, reference = primed(), primed()
    checked = model.check_rows(X, y, sensitive_features=S)
    for epochs in (1, 3, 4):
        model.train_epochs(*checked, epochs=epochs, sample_weight=weight)
        for _ in range(epochs):
            reference.partial_fit(X, y, sensitive_features=S, sample_weight=weight)
        _assert_same_fit(model, reference)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_train_epochs_refuses_what_train_minibatches_refuses(make):
    model, X_model, y_codes, groups = _primed(make)
    with pytest.raises(NotFittedError):
        make().train_epochs(X_model, y_codes, groups)
    with pytest.raises(TypeError, match="SensitiveGroups"):
        model.train_epochs(X_model, y_codes, groups.codes)
    with pytest.raises(ValueError, match="one entry per row"):
        model.train_epochs(X_model, y_codes[:3], groups)
    with pytest.raises(ValueError, match=r"label codes outside 0\.\.1"):
        model.train_epochs(X_model, y_codes + 2, groups)
    with pytest.raises(ValueError, match="X has 3 columns"):
        model.train_epochs(np.c_[X_model, X_model[:, 0]], y_codes, groups)
    with pytest.raises(ValueError, match="sample_weight"):
        model.train_epochs(X_model, y_codes, groups, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="got None"):
        model.train_epochs(X_model, None, groups)
    with pytest.raises(ValueError, match="whole label codes"):
        model.train_epochs(X_model, y_codes * 0.5, groups)
    with pytest.raises(ValueError, match="must increase"):
        model.train_minibatches(
            X_model, y_codes, groups, np.array([0, 5, 3], np.uint64)
        )
    for epochs in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="epochs must be a positive integer"):
            model.train_epochs(X_model, y_codes, groups, epochs=epochs)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_train_minibatches_rows_are_the_rows_laid_out(make):
    # rows (repeats allowed) lay X's rows out as the minibatches: the steps
    # are those on X[rows], y[rows], ... without the copy, to the bit.
    X, y, S = _rows()
    rows = np.random.RandomState(2).randint(0, y.size, 450)
    bounds = np.array([0, 100, 100, 230, 450])

    def primed():
        model = make().set_params(random_state=0)
        return model.partial_fit(X, y, classes=[0, 1], sensitive_features=S)

    model, reference = primed(), primed()
    X_model, y_codes, groups = model.check_rows(X, y, sensitive_features=S)
    model.train_minibatches(X_model, y_codes, groups, bounds, rows=rows)
    reference.train_minibatches(X_model[rows], y_codes[rows], groups.take(rows), bounds)
    _assert_same_fit(model, reference)


@pytest.mark.parametrize("make", ESTIMATORS)
@pytest.mark.parametrize(
    "rows, bounds, message",
    [
        (np.array([0, 8, 1]), [0, 3], r"rows holds positions outside 0\.\.7"),
        (np.array([0, -1, 1]), [0, 3], r"rows holds positions outside 0\.\.7"),
        (np.array([0, 1, 2]), [0, 4], "minibatch bounds must increase within rows"),
        (np.array([0.0, 1.0]), [0, 2], "rows must be a 1-D array of integer"),
        (np.array([[0, 1]]), [0, 2], "rows must be a 1-D array of integer"),
        (np.array([0, 1, 2]), [0, 2, 1], "minibatch bounds must increase"),
    ],
    ids=["beyond", "negative", "bounds-beyond", "float", "2-d", "decreasing"],
)
def test_train_minibatches_refuses_rows_outside_x(make, rows, bounds, message):
    model, X_model, y_codes, groups = _primed(make)
    with pytest.raises(ValueError, match=message):
        model.train_minibatches(X_model, y_codes, groups, np.array(bounds), rows=rows)
