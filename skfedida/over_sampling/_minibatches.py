"""FairnessAwareROSE on every minibatch of an epoch, drawn at once.

The paper's Algorithm 2 resamples each minibatch of a client (Algorithm 1 on
its rows). Called per minibatch, ``fit_resample`` costs ~20 numpy calls per
subgroup; a federation's epoch has hundreds of minibatches. Here every
minibatch of one epoch is resampled with a fixed number of vectorised steps:
subgroup sizes of all minibatches from one ``bincount``, one draw of uniform
ranks for the cuts, one of seed rows and one noise matrix. The distribution
is Algorithm 1's, minibatch by minibatch (tested: subgroup counts exact,
seeds uniform within their subgroup, noise of the smoothed-bootstrap
covariance); the random stream differs from per-minibatch ``fit_resample``.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping

import numpy as np
from sklearn.utils import check_random_state

from .._minibatch import epoch_minibatches
from ._fairness_aware_rose import (
    FairnessAwareROSE,
    _diagonal_noise,
    _silverman_factor,
    _subgroup_sizes,
    _subgroup_targets,
)

#: FairnessAwareROSE methods whose behaviour the vectorised epochs reproduce:
#: a subclass that overrides one takes the per-minibatch path.
_ROSE_METHODS = ("fit_resample", "_fit_resample", "_resample_groups", "_noise")


def vectorises(sampler):
    """Whether ``resample_minibatches`` covers this sampler and its parameters.

    A :class:`FairnessAwareROSE` whose resampling is the class's own.
    Subgroup-specific targets or shrinkages (dicts, callables) and the
    ``"full"`` or explicit covariances take the per-minibatch path.
    """
    if not isinstance(sampler, FairnessAwareROSE) or any(
        getattr(type(sampler), name) is not getattr(FairnessAwareROSE, name)
        for name in _ROSE_METHODS
    ):
        return False
    n_target = sampler.n_target
    return (
        not isinstance(n_target, Mapping)
        and not callable(n_target)
        and isinstance(sampler.shrinkage, numbers.Real)
        and isinstance(sampler.covariance, str)
        and sampler.covariance == "diag"
    )


def resample_minibatches(
    sampler,
    order,
    batch_size,
    groups,
    n_groups,
    y,
    X_noised,
    random_state=None,
    noised_columns=None,
    n_labels=2,
    epochs=1,
):
    """Algorithm 1 on each minibatch of ``order``, all minibatches at once.

    Parameters
    ----------
    sampler : FairnessAwareROSE
        Its ``n_target``, ``undersample`` and ``shrinkage`` apply (see
        :func:`vectorises`).
    order : ndarray of shape (epochs * n_samples,)
        The rows in epoch order, epoch after epoch; minibatch b of an epoch
        is its ``b * batch_size``-th row on, up to ``batch_size`` rows.
    batch_size : int
        Rows per minibatch (the last may be shorter).
    groups : ndarray of shape (n_samples,)
        Sensitive group code of every row, in ``range(n_groups)``.
    n_groups : int
        Number of group codes.
    y : ndarray of shape (n_samples,)
        Labels coded ``0 .. n_labels - 1`` (0/1 for two classes).
    X_noised : ndarray of shape (n_samples, n_features) or None
        The rows' noised columns (float64), or all columns with
        ``noised_columns`` naming the noised ones; None when no column is
        noised.
    random_state : RandomState, default=None
        The draws' stream (the sampler's own when None).
    noised_columns : ndarray of int, default=None
        The noised columns of ``X_noised`` (None: all). Selected per epoch,
        so that a federation does not hold a copy of its clients' columns.
    n_labels : int, default=2
        Number of label codes; subgroups are the (group, label) cells.
    epochs : int, default=1
        How many epochs ``order`` holds. The random draws are made epoch by
        epoch, in the order one call per epoch makes them, so several epochs
        in one call resample as that many calls do, to the bit, with one
        call's fixed cost (~45 numpy calls) instead of ``epochs``.

    Returns
    -------
    rows : ndarray of shape (n_resampled,)
        Source row of every output row, minibatch after minibatch (an
        epoch's ``ceil(n_samples / batch_size)`` minibatches, then the next
        epoch's).
    bounds : ndarray of shape (n_minibatches + 1,)
        Minibatch b is ``rows[bounds[b]:bounds[b + 1]]``.
    synthetic : ndarray of shape (n_synthetic,)
        Positions (in ``rows``) of the synthetic rows.
    noise : ndarray of shape (n_synthetic, n_noised) or None
        What to add to the noised columns of the synthetic rows.
    """
    if random_state is None:
        random_state = check_random_state(sampler.random_state)
    n_rows = order.shape[0]
    n_samples = n_rows // epochs
    epoch_batches = -(-n_samples // batch_size)
    n_batches = epochs * epoch_batches
    n_cells = n_labels * n_groups
    positions = np.arange(n_rows)
    batch_of, rows_per_batch = epoch_minibatches(n_samples, batch_size, epochs)
    cell = groups[order] * n_labels + y[order].astype(np.intp)
    key = batch_of * n_cells + cell
    counts = np.bincount(key, minlength=n_batches * n_cells).reshape(n_batches, n_cells)
    present = counts > 0
    label_counts = counts.reshape(n_batches, n_groups, n_labels).sum(axis=1)
    # A minibatch of one class has nothing to balance: it is kept as it is.
    mixed = (label_counts > 0).sum(axis=1) > 1
    target = np.where(
        present & mixed[:, None],
        _subgroup_targets(sampler.n_target, counts, present, n_labels),
        counts,
    )
    kept_size, new_size = _subgroup_sizes(counts, target, sampler.undersample)

    # Rows sorted by (minibatch, subgroup). ``order`` is a uniform random
    # permutation, so within a subgroup of a minibatch the rows come in
    # uniform random order, which a stable sort keeps: the first kept_size
    # are a draw without replacement.
    sort_key = key.astype(np.uint16) if n_batches * n_cells <= 2**16 else key
    sort = np.argsort(sort_key, kind="stable")  # radix sort for 16-bit keys
    sorted_key = key[sort]
    starts = np.concatenate(([0], np.cumsum(counts.ravel())))
    rank = positions - starts[sorted_key]
    kept = sort[rank < kept_size.ravel()[sorted_key]]

    new_cells = np.repeat(np.arange(n_batches * n_cells), new_size.ravel())
    if noised_columns is not None and X_noised is not None and not noised_columns.size:
        X_noised = None
    noised = X_noised is not None and X_noised.shape[1] and new_cells.size
    scaled_std = None
    if noised:
        sorted_rows = order[sort]
        if noised_columns is None or noised_columns.size == X_noised.shape[1]:
            block = X_noised[sorted_rows]
        else:  # one gather of rows and columns
            block = X_noised[np.ix_(sorted_rows, noised_columns)]
        scaled_std = _noise_scale(
            sampler,
            block,
            sorted_key,
            counts,
            starts,
            new_cells,
            n_cells,
            rows_per_batch,
        )
    # The draws, epoch by epoch (its seed rows, then its noise), as one call
    # per epoch makes them: the new rows of an epoch are contiguous, its
    # minibatches being.
    epoch_ends = np.searchsorted(
        new_cells, epoch_batches * n_cells * np.arange(1, epochs + 1)
    )
    seeds = np.empty(new_cells.size, dtype=np.intp)
    noise = None if not noised else np.empty((new_cells.size, block.shape[1]))
    start = 0
    for end in epoch_ends.tolist():
        cells = new_cells[start:end]
        seeds[start:end] = sort[
            starts[cells] + random_state.randint(0, counts.ravel()[cells])
        ]
        if noised and end > start:
            noise[start:end] = _diagonal_noise(
                random_state, end - start, *scaled_std(start, end)
            )
        start = end
    # Each minibatch's kept rows, then its synthetic rows. Both sequences are
    # already in minibatch order (kept by the sort, seeds by np.repeat), so
    # every row's output position is arithmetic, not another sort.
    kept_per_batch = kept_size.sum(axis=1)
    new_per_batch = new_size.sum(axis=1)
    bounds = np.concatenate(([0], np.cumsum(kept_per_batch + new_per_batch)))
    kept_start = np.concatenate(([0], np.cumsum(kept_per_batch)))[:-1]
    new_start = np.concatenate(([0], np.cumsum(new_per_batch)))[:-1]
    kept_batch = np.repeat(np.arange(n_batches), kept_per_batch)
    new_batch = np.repeat(np.arange(n_batches), new_per_batch)
    rows = np.empty(bounds[-1], dtype=np.intp)
    # order[...] of the epochs' sort positions: each row of its own epoch.
    rows[bounds[kept_batch] + np.arange(kept.size) - kept_start[kept_batch]] = order[
        kept
    ]
    synthetic = (
        bounds[new_batch]
        + kept_per_batch[new_batch]
        + np.arange(seeds.size)
        - new_start[new_batch]
    )
    rows[synthetic] = order[seeds]
    bounds = bounds.astype(np.intp)
    return rows, bounds, synthetic, noise


def _noise_scale(
    sampler,
    X_sorted,
    sorted_key,
    counts,
    starts,
    new_cells,
    n_cells,
    rows_per_batch,
):
    """The smoothed-bootstrap noise's scale and std of every synthetic row.

    Returns a function of a range of synthetic rows: the ``scale`` and
    ``std`` of ``_diagonal_noise`` for those rows (``_noise`` for "diag").
    """
    n_noised = X_sorted.shape[1]
    flat = counts.ravel()
    nonempty = np.flatnonzero(flat)
    cell_starts = starts[nonempty]
    # Per subgroup of every minibatch: the standard deviation of each noised
    # column (np.std's two passes: the mean, then the mean squared deviation).
    size = flat[nonempty][:, None]
    mean = np.add.reduceat(X_sorted, cell_starts, axis=0) / size
    position = np.empty(flat.size, dtype=np.intp)
    position[nonempty] = np.arange(nonempty.size)
    deviation = X_sorted - mean[position[sorted_key]]
    deviation *= deviation
    std = np.sqrt(np.add.reduceat(deviation, cell_starts, axis=0) / size)
    # Silverman's factor on each minibatch's own row count, as fit_resample.
    bandwidth = _silverman_factor(rows_per_batch, n_noised)
    scale = (float(sampler.shrinkage) * bandwidth[new_cells // n_cells])[:, None]
    std = std[position[new_cells]]
    return lambda start, end: (scale[start:end], std[start:end])
