"""FairnessAwareROSE on every minibatch of an epoch at once (Algorithm 2's hot path).

``resample_minibatches`` must draw what ``fit_resample`` on each minibatch
draws, in distribution: the same subgroup counts, kept rows without
repetition, seeds uniform within their subgroup, and noise of the
smoothed-bootstrap covariance. The federation uses it for skfedida's own
sampler and estimators; column mode must then learn what metadata mode does.
"""

import collections

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from skfedida.federated import FederatedEstimator
from skfedida.federated._client import (
    _minibatch_prior_weights,
    _prior_weights,
    _ResampledEpochs,
)
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.over_sampling import FairnessAwareROSE, _minibatches
from skfedida.over_sampling._minibatches import resample_minibatches, vectorises


def _rows(n=460, n_groups=3, seed=0, n_labels=2):
    rng = np.random.default_rng(seed)
    groups = rng.choice(
        n_groups, n, p=np.linspace(1, 3, n_groups) / np.linspace(1, 3, n_groups).sum()
    )
    y = (rng.random(n) < 0.2 + 0.2 * (groups == 0)).astype(np.intp)
    if n_labels > 2:  # the third class mostly in the last group
        third = rng.random(n) < 0.1 + 0.3 * (groups == n_groups - 1)
        y = np.where(third, 2, y)
    X = rng.normal(size=(n, 3)) + groups[:, None]
    return X, y, groups


def _subgroup_counts(groups, y):
    return collections.Counter(zip(groups.tolist(), y.tolist(), strict=True))


@pytest.mark.parametrize("n_target", ["mean", "max", "median", "group_mean", 7, 0.5])
@pytest.mark.parametrize("undersample", [True, False])
@pytest.mark.parametrize("n_labels", [2, 3])
def test_subgroup_counts_are_fit_resamples_minibatch_by_minibatch(
    n_target, undersample, n_labels
):
    X, y, groups = _rows(n_labels=n_labels)
    rose = FairnessAwareROSE(n_target=n_target, undersample=undersample)
    order = np.random.RandomState(1).permutation(y.size)
    batch_size = 64
    rows, bounds, synthetic, noise = resample_minibatches(
        rose,
        order,
        batch_size,
        groups,
        3,
        y,
        X,
        np.random.RandomState(2),
        n_labels=n_labels,
    )
    assert bounds[0] == 0 and bounds[-1] == rows.size
    assert noise.shape == (synthetic.size, 3)
    is_synthetic = np.zeros(rows.size, dtype=bool)
    is_synthetic[synthetic] = True
    for b in range(bounds.size - 1):
        batch = order[b * batch_size : (b + 1) * batch_size]
        out = rows[bounds[b] : bounds[b + 1]]
        if np.unique(y[batch]).size < 2:  # nothing to balance (see below)
            expected = _subgroup_counts(groups[batch], y[batch])
        else:
            reference = FairnessAwareROSE(
                n_target=n_target, undersample=undersample, random_state=0
            )
            reference.fit_resample(X[batch], y[batch], sensitive_features=groups[batch])
            expected = collections.Counter(
                {(g[0], c): k for (g, c), k in reference.subgroup_counts_after_.items()}
            )
        assert _subgroup_counts(groups[out], y[out]) == expected
        # Every row comes from this minibatch; original rows are not repeated.
        assert np.isin(out, batch).all()
        kept = out[~is_synthetic[bounds[b] : bounds[b + 1]]]
        assert np.unique(kept).size == kept.size


def test_a_minibatch_of_one_class_is_kept_as_it_is():
    X, y, groups = _rows(n=100)
    y[:50] = 0
    order = np.arange(100)  # the first minibatch holds one class only
    rows, bounds, synthetic, _ = resample_minibatches(
        FairnessAwareROSE(), order, 50, groups, 3, y, X, np.random.RandomState(0)
    )
    np.testing.assert_array_equal(np.sort(rows[: bounds[1]]), np.arange(50))
    assert not np.any(synthetic < bounds[1])


def test_seed_rows_are_uniform_within_their_subgroup():
    # A subgroup of 4 rows among 40 brought to 40: 36 seeds per draw.
    y = np.array([1] * 4 + [0] * 40)
    groups = np.zeros(44, dtype=np.intp)
    rose = FairnessAwareROSE(n_target="max")
    random_state = np.random.RandomState(0)
    seeds = []
    for _ in range(100):
        rows, _, synthetic, _ = resample_minibatches(
            rose, np.arange(44), 44, groups, 1, y, None, random_state
        )
        seeds.append(rows[synthetic])
    frequencies = np.bincount(np.concatenate(seeds), minlength=4)[:4]
    assert frequencies.sum() == 3600
    # Fixed seed: a deterministic check, false alarm rate 1e-3 over seeds.
    assert stats.chisquare(frequencies).pvalue > 1e-3


def test_noise_has_the_smoothed_bootstrap_covariance():
    rng = np.random.default_rng(0)
    n_small, n_large = 6, 60
    y = np.array([1] * n_small + [0] * n_large)
    groups = np.zeros(y.size, dtype=np.intp)
    X = rng.normal(size=(y.size, 2)) * [1.0, 5.0]
    rose = FairnessAwareROSE(n_target="max", shrinkage=0.7)
    random_state = np.random.RandomState(0)
    noise = np.concatenate(
        [
            resample_minibatches(
                rose, np.arange(y.size), y.size, groups, 1, y, X, random_state
            )[3]
            for _ in range(400)
        ]
    )
    assert noise.shape == (400 * (n_large - n_small), 2)
    # Silverman's factor on the minibatch's rows and 2 noised columns.
    h = (4.0 / (4 * y.size)) ** (1.0 / 6)
    expected_sd = 0.7 * h * X[:n_small].std(axis=0)
    np.testing.assert_allclose(noise.std(axis=0), expected_sd, rtol=0.03)
    np.testing.assert_allclose(noise.mean(axis=0), 0, atol=0.03 * expected_sd.max())
    assert abs(np.corrcoef(noise.T)[0, 1]) < 0.03


def test_a_short_last_minibatch_is_noised_with_its_own_bandwidth():
    # Algorithm 1 runs on each minibatch as on a data set of its own: the
    # sampler's bandwidth h = (4 / ((p + 2) n)) ** (1 / (p + 4)) takes the
    # minibatch's own row count n, so the short last minibatch of an epoch
    # (33 rows here, batch_size 100) is noised more widely than a full one.
    rng = np.random.default_rng(1)
    batch_size, n_small, n_large = 100, 6, 27
    # First minibatch: one class, kept as it is (no synthetic row, no noise).
    # Last minibatch: 6 minority rows brought to 27, all the epoch's noise.
    y = np.array([0] * batch_size + [1] * n_small + [0] * n_large)
    groups = np.zeros(y.size, dtype=np.intp)
    X = rng.normal(size=(y.size, 2)) * [2.0, 0.5]
    rose = FairnessAwareROSE(n_target="max", shrinkage=1.3)
    random_state = np.random.RandomState(0)
    noise = np.concatenate(
        [
            resample_minibatches(
                rose, np.arange(y.size), batch_size, groups, 1, y, X, random_state
            )[3]
            for _ in range(400)
        ]
    )
    assert noise.shape == (400 * (n_large - n_small), 2)
    n_last, p = n_small + n_large, 2
    h = (4.0 / ((p + 2) * n_last)) ** (1.0 / (p + 4))
    minority = X[batch_size : batch_size + n_small]
    expected_sd = 1.3 * h * minority.std(axis=0)
    np.testing.assert_allclose(noise.std(axis=0), expected_sd, rtol=0.03)


@pytest.mark.parametrize("n_labels", [2, 3])
def test_prior_weights_are_those_of_every_minibatch(n_labels):
    X, y, groups = _rows(n_labels=n_labels)
    order = np.random.RandomState(3).permutation(y.size)
    rows, bounds, _, _ = resample_minibatches(
        FairnessAwareROSE(),
        order,
        64,
        groups,
        3,
        y,
        X,
        np.random.RandomState(0),
        n_labels=n_labels,
    )
    weight = _minibatch_prior_weights(y, order, 64, rows, bounds, n_labels)
    assert np.unique(y).size == n_labels
    for b in range(bounds.size - 1):
        batch = order[b * 64 : (b + 1) * 64]
        out = rows[bounds[b] : bounds[b + 1]]
        # As the per-minibatch path computes them, over the classes present.
        classes, codes = np.unique(y[batch], return_inverse=True)
        np.testing.assert_allclose(
            weight[bounds[b] : bounds[b + 1]],
            _prior_weights(codes, np.searchsorted(classes, y[out]), classes.size),
        )


def test_which_samplers_vectorise():
    assert vectorises(FairnessAwareROSE())
    assert vectorises(FairnessAwareROSE(n_target=10, shrinkage=0.5))
    assert not vectorises(FairnessAwareROSE(n_target={((0,), 1): 5}))
    assert not vectorises(FairnessAwareROSE(n_target=lambda counts: 5))
    assert not vectorises(FairnessAwareROSE(covariance="full"))
    assert not vectorises(FairnessAwareROSE(shrinkage={((0,), 1): 1.0}))


def _federation(frame):
    rng = np.random.default_rng(0)
    n = 600
    S = pd.DataFrame(
        {"race": rng.choice(["a", "b", "c"], n), "sex": rng.choice(["F", "M"], n)}
    )
    X = pd.DataFrame(
        {
            "age": rng.normal(size=n),  # continuous: noised
            "hours": rng.normal(size=n),
            "flag": rng.integers(0, 2, n).astype(float),  # binary: copied
        }
    )
    y = (X["age"] + (S["race"] == "a") + rng.normal(size=n) > 1).astype(int)
    clients = rng.integers(0, 3, n)
    if frame:
        return pd.concat([X, S], axis=1), y, clients, None
    return X.to_numpy(), y, clients, S


def _fit(frame, n_jobs=1, sampler=None):
    X, y, clients, S = _federation(frame)
    sensitive = ["race", "sex"] if frame else None
    return FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0, sensitive=sensitive),
        sampler=sampler or FairnessAwareROSE(sensitive=sensitive),
        sensitive=sensitive,
        n_rounds=2,
        local_epochs=2,
        batch_size=64,
        n_jobs=n_jobs,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)


def test_column_mode_learns_what_metadata_mode_learns():
    metadata, column = _fit(frame=False), _fit(frame=True)
    np.testing.assert_array_equal(column.estimator_.coef_, metadata.estimator_.coef_)
    np.testing.assert_array_equal(
        column.estimator_.intercept_, metadata.estimator_.intercept_
    )


def test_vectorised_epochs_are_reproducible_with_two_jobs():
    one, two = _fit(frame=False), _fit(frame=False, n_jobs=2)
    np.testing.assert_array_equal(one.estimator_.coef_, two.estimator_.coef_)


class _CustomNoise(FairnessAwareROSE):
    def _noise(self, *args):
        return 0.0 * super()._noise(*args)


@pytest.mark.parametrize(
    "sampler",
    [FairnessAwareROSE(n_target=lambda counts: 20), _CustomNoise()],
    ids=["callable-target", "subclass"],
)
def test_other_samplers_take_the_per_minibatch_path(monkeypatch, sampler):
    def fail(*args, **kwargs):
        raise AssertionError("vectorised epochs used")

    monkeypatch.setattr(_minibatches, "resample_minibatches", fail)
    monkeypatch.setattr("skfedida.federated._client.resample_minibatches", fail)
    _fit(frame=False, sampler=sampler)


def test_vectorised_epochs_apply_to_skfedidas_own_components():
    from skfedida.federated._client import _Trainer

    trainer = _Trainer(
        sampler=None,
        resample="batch",
        batch_size=64,
        classes=np.array([0, 1]),
        strategy="fedavg",
        inner_learning_rate=0.1,
        outer_learning_rate=None,
    )
    estimator = FairPenaltyLogisticRegression()
    estimator.classes_ = np.array([0, 1])
    from skfedida.federated._client import _ClientData

    data = _ClientData(np.zeros((4, 2)), np.array([0, 1, 0, 1]))
    assert _ResampledEpochs._applies(trainer, estimator, FairnessAwareROSE(), data)
    assert not _ResampledEpochs._applies(trainer, estimator, _CustomNoise(), data)


def test_noised_columns_are_selected_from_the_rows_as_given():
    X, y, groups = _rows()
    order = np.random.RandomState(5).permutation(y.size)
    columns = np.array([0, 2])
    draws = [
        resample_minibatches(
            FairnessAwareROSE(),
            order,
            64,
            groups,
            3,
            y,
            X_given,
            np.random.RandomState(0),
            noised_columns=selected,
        )
        for X_given, selected in ((X[:, columns], None), (X, columns))
    ]
    for first, second in zip(*draws, strict=True):
        np.testing.assert_array_equal(first, second)
    _, _, synthetic, noise = resample_minibatches(
        FairnessAwareROSE(),
        order,
        64,
        groups,
        3,
        y,
        X,
        np.random.RandomState(0),
        noised_columns=np.array([], dtype=np.intp),
    )
    assert noise is None and synthetic.size


def test_averaging_on_the_vectorised_path_is_per_minibatch_as_partial_fit():
    # Each resampled minibatch is one partial_fit call of one step, so
    # average=True (the mean of one iterate) changes nothing there.
    fitted = [
        FederatedEstimator(
            FairPenaltyLogisticRegression(fairness=1.0, average=average),
            sampler=FairnessAwareROSE(),
            n_rounds=2,
            local_epochs=1,
            batch_size=64,
            random_state=0,
        ).fit(
            *_federation(False)[:2],
            clients=_federation(False)[2],
            sensitive_features=_federation(False)[3],
        )
        for average in (False, True)
    ]
    np.testing.assert_array_equal(
        fitted[0].estimator_.coef_, fitted[1].estimator_.coef_
    )


@pytest.mark.parametrize("strategy", ["fedavg", "pfedavg"])
@pytest.mark.parametrize(
    "sampler",
    [FairnessAwareROSE(n_target="max"), FairnessAwareROSE(n_target=lambda c: 30)],
    ids=["vectorised", "per-minibatch"],
)
def test_every_resampled_minibatch_is_one_step(monkeypatch, sampler, strategy):
    # Algorithm 2 takes one step per resampled minibatch, however many rows
    # the sampler made of it; Per-FedAvg's meta-gradient needs one step per
    # batch too. A per-minibatch partial_fit used to split a minibatch grown
    # past batch_size into several steps (a 360-row minibatch in batches of 16
    # into 23), so the two paths trained different models.
    from skfedida._models._fair_base import BaseFairClassifier

    steps = []
    original = BaseFairClassifier._minibatch_steps

    def counting(self, params, batch, bounds, *args, **kwargs):
        steps.append(bounds.size - 1)
        return original(self, params, batch, bounds, *args, **kwargs)

    monkeypatch.setattr(BaseFairClassifier, "_minibatch_steps", counting)
    X, y, clients, S = _federation(frame=False)
    FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=1.0, batch_size=16),
        sampler=sampler,
        strategy=strategy,
        n_rounds=1,
        local_epochs=1,
        batch_size=16,
        random_state=0,
    ).fit(X, y, clients=clients, sensitive_features=S)
    if strategy == "fedavg" and sampler.n_target == "max":
        # The vectorised path steps through a client's minibatches in one call.
        n_minibatches = sum(-(-np.sum(clients == c) // 16) for c in np.unique(clients))
        assert sum(steps) == n_minibatches
    else:
        assert steps and set(steps) == {1}


@pytest.mark.parametrize("seed", range(12))
def test_several_epochs_in_one_call_resample_as_one_call_per_epoch(seed):
    # epochs=E draws epoch by epoch (its seed rows, then its noise) as E calls
    # do: the same rows, minibatches, synthetic positions and noise, to the
    # bit, and the stream left in the same state. Epochs whose rows do not
    # fill their last minibatch, noised columns or none, undersampling, and
    # three labels are among the cases.
    rng = np.random.RandomState(seed)
    n, batch_size = rng.randint(1, 400), int(rng.choice([16, 64]))
    n_groups, n_labels = rng.randint(1, 4), int(rng.choice([2, 3]))
    groups, y = rng.randint(0, n_groups, n), rng.randint(0, n_labels, n)
    X = rng.randn(n, 4)
    noised = np.flatnonzero(rng.rand(4) < 0.5)
    sampler = FairnessAwareROSE(
        n_target=["max", "mean", 30][seed % 3], undersample=bool(seed % 2)
    )
    epochs = rng.randint(2, 5)
    orders = [rng.permutation(n) for _ in range(epochs)]
    apart, together = np.random.RandomState(seed), np.random.RandomState(seed)

    def call(order, stream, n_epochs=1):
        return resample_minibatches(
            sampler,
            order,
            batch_size,
            groups,
            n_groups,
            y,
            X,
            stream,
            noised_columns=noised,
            n_labels=n_labels,
            epochs=n_epochs,
        )

    one_by_one = [call(order, apart) for order in orders]
    rows, bounds, synthetic, noise = call(np.concatenate(orders), together, epochs)
    offsets = np.cumsum([0] + [b[-1] for _, b, _, _ in one_by_one])
    np.testing.assert_array_equal(rows, np.concatenate([r for r, *_ in one_by_one]))
    np.testing.assert_array_equal(
        bounds,
        np.concatenate(
            [[0]]
            + [
                b[1:] + o
                for (_, b, _, _), o in zip(one_by_one, offsets[:-1], strict=True)
            ]
        ),
    )
    np.testing.assert_array_equal(
        synthetic,
        np.concatenate(
            [s + o for (_, _, s, _), o in zip(one_by_one, offsets[:-1], strict=True)]
        ),
    )
    noises = [e for *_, e in one_by_one if e is not None]
    if noises:
        assert noise.tobytes() == np.concatenate(noises).tobytes()
    else:
        assert noise is None or noise.size == 0
    assert apart.randint(2**31) == together.randint(2**31)
