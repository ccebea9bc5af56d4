"""The vectorised FedIDA epochs train on the resampled rows without copying them.

``_ResampledEpochs`` hands the loop the client's rows and the resampled
minibatches' positions in them (``train_minibatches(rows=...)``); synthetic
rows with noise are written once after the client's rows. The oracle is
what the epochs did before: materialise ``X[rows]``, add the noise at the
synthetic rows' noised columns, take ``y[rows]`` and the groups of the
rows, weigh each position, and train on that. Same draws, same steps, to
the bit.
"""

import numpy as np
import pytest

from skfedida.federated._client import (
    _ClientData,
    _minibatch_prior_weights,
    _ResampledEpochs,
    _Trainer,
)
from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE
from skfedida.over_sampling._minibatches import resample_minibatches


def _client(noised):
    rng = np.random.RandomState(3)
    n = 700
    S = rng.choice(["a", "b", "c"], n, p=[0.6, 0.3, 0.1])
    binary = rng.randint(0, 2, (n, 3)).astype(float)
    continuous = rng.randn(n, 2)
    X = np.c_[binary, continuous] if noised else binary
    y = ((X[:, 0] + rng.randn(n) + (S == "c")) > 1).astype(int)
    return X, y, S


def _materialised(epochs, random_state):
    """The former epoch: the resampled rows copied, then trained on."""
    n_samples = epochs.y.shape[0]
    order = random_state.permutation(n_samples)
    rows, bounds, synthetic, noise = resample_minibatches(
        epochs.sampler,
        order,
        epochs.trainer.batch_size,
        epochs.sampler_groups.codes,
        epochs.sampler_groups.n_groups,
        epochs.labels,
        epochs.X,
        epochs.sampler_random_state,
        noised_columns=epochs.noised,
        n_labels=epochs.n_labels,
    )
    X = epochs.X[rows]
    if noise is not None:
        X[synthetic[:, None], epochs.noised] += noise
    weight = None
    if epochs.trainer.prior_correction == "weights":
        weight = _minibatch_prior_weights(
            epochs.labels, order, epochs.trainer.batch_size, rows, bounds
        )
    epochs.estimator.train_minibatches(
        X, epochs.y[rows], epochs.groups.take(rows), bounds, sample_weight=weight
    )
    return synthetic.size, noise is not None


@pytest.mark.parametrize("noised", [False, True], ids=["no-noise", "noise"])
@pytest.mark.parametrize("prior_correction", [None, "weights"])
@pytest.mark.parametrize(
    "make", [FairPenaltyLogisticRegression, FairMLPClassifier], ids=["lr", "mlp"]
)
@pytest.mark.parametrize(
    "fused_rows", [700, 1500, 1 << 16], ids=["epoch-by-epoch", "two-by-two", "all"]
)
def test_epochs_train_as_on_the_materialised_rows(
    noised, prior_correction, make, fused_rows, monkeypatch
):
    # A round's epochs are resampled several at a time (as many as fit in
    # FUSED_ROWS rows of 700-row epochs: 1, 2 then 1, or all 3) and
    # trained on in one call per epoch with weights, else one or two.
    monkeypatch.setattr("skfedida._minibatch.FUSED_ROWS", fused_rows)
    X, y, S = _client(noised)
    trainer = _Trainer(
        sampler=FairnessAwareROSE(),
        resample="batch",
        batch_size=64,
        classes=np.array([0, 1]),
        strategy="fedavg",
        inner_learning_rate=0.1,
        outer_learning_rate=None,
        prior_correction=prior_correction,
    )
    fitted = []
    for epoch in (None, _materialised):
        estimator = make(fairness=1.0, random_state=0).partial_fit(
            X[:2], y[:2], classes=[0, 1], sensitive_features=S[:2]
        )
        data = _ClientData(X, y, None)
        sampler = FairnessAwareROSE(random_state=np.random.RandomState(5))
        epochs = _ResampledEpochs.of(trainer, estimator, sampler, data)
        # The sampler's groups from S, as a federation encodes them.
        epochs.sampler_groups = sampler.sensitive_groups(X, sensitive_features=S)
        epochs.groups = estimator.check_rows(X, y, sensitive_features=S).groups
        random_state = np.random.RandomState(11)
        if epoch is None:
            epochs(random_state, 3)
        else:
            for _ in range(3):
                n_synthetic, has_noise = epoch(epochs, random_state)
                assert n_synthetic > 0 and has_noise == noised
        fitted.append(estimator)
    (got, expected) = fitted
    for a, b in zip(got._get_params_list(), expected._get_params_list(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert (got.n_iter_, got.n_samples_seen_, got.loss_) == (
        expected.n_iter_,
        expected.n_samples_seen_,
        expected.loss_,
    )


class _EntryOfBefore(FairPenaltyLogisticRegression):
    """A subclass whose train_minibatches predates its ``rows`` parameter."""

    def train_minibatches(self, X, y, groups, bounds, *, sample_weight=None):
        return super().train_minibatches(
            X, y, groups, bounds, sample_weight=sample_weight
        )


@pytest.mark.parametrize("prior_correction", [None, "weights"])
def test_a_train_minibatches_without_rows_gets_the_rows_laid_out(prior_correction):
    # The vectorised epochs pass rows= only to an entry that takes it; one
    # written before gets X[rows] (and the weights of its positions), and
    # trains the same model.
    from skfedida.datasets import make_federated_classification
    from skfedida.federated import FederatedEstimator

    data = make_federated_classification(1200, n_clients=3, random_state=0)
    fitted = [
        FederatedEstimator(
            make(fairness=1.0),
            sampler=FairnessAwareROSE(),
            prior_correction=prior_correction,
            n_rounds=2,
            local_epochs=2,
            random_state=0,
        ).fit(
            data.data,
            data.target,
            clients=data.clients,
            sensitive_features=data.sensitive,
        )
        for make in (FairPenaltyLogisticRegression, _EntryOfBefore)
    ]
    np.testing.assert_array_equal(
        fitted[0].estimator_.coef_, fitted[1].estimator_.coef_
    )
