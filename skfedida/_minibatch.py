"""How rows are cut into minibatches: one rule for every path that trains.

The estimators' minibatch loops (numpy and compiled), the sampler's
vectorised epochs (``over_sampling._minibatches``) and the federated client
trainer must cut a client's rows at the same places, or the vectorised
epochs would not be the per-minibatch ones bit for bit; the rule sits below
all three.
"""

import numpy as np


def minibatch_bounds(n_samples, batch_size):
    """Bounds of consecutive minibatches of ``batch_size`` rows (last shorter)."""
    return np.append(np.arange(0, n_samples, batch_size), n_samples).astype(np.intp)


def epoch_minibatches(n_samples, batch_size, epochs=1):
    """Epochs of ``n_samples`` rows laid end to end, each cut into minibatches.

    Returns the minibatch of every position (epoch e's minibatches numbered
    after epoch e - 1's) and the rows of every minibatch: the cut of
    ``minibatch_bounds`` in every epoch.
    """
    sizes = np.diff(minibatch_bounds(n_samples, batch_size))
    batch_of = np.arange(n_samples) // batch_size
    if epochs > 1:
        batch_of = (batch_of[None, :] + sizes.size * np.arange(epochs)[:, None]).ravel()
        sizes = np.tile(sizes, epochs)
    return batch_of, sizes


#: Rows of epochs (epochs x rows) one call trains on, or resamples, at once.
#: A call has a fixed cost (its inputs, buffers and checks: ~15-100 us), which
#: a small client pays per epoch unless its epochs share calls; the bound
#: keeps the arrays of such a call (shuffles, resampled rows) a few MB.
FUSED_ROWS = 1 << 13


def epochs_per_call(n_samples):
    """How many epochs of ``n_samples`` rows one call takes (at least one)."""
    return max(1, FUSED_ROWS // max(n_samples, 1))
