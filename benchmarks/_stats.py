"""Statistics the benchmark reports share: is a change a change?"""

import warnings

import numpy as np


def change_interval(
    differences,
    row_draws=None,
    shared_rows=False,
    confidence=0.95,
    n_resamples=2000,
    seed=0,
):
    """Bootstrap interval of a mean paired difference, over seeds, clients and rows.

    ``differences`` has one row per seed and one column per client (NaN where
    a client's metric is undefined). Seeds and clients are resampled with
    replacement (two levels), so the interval holds both the spread of the
    training across seeds and the spread of the effect across clients.

    ``row_draws``, of shape (seeds, clients, draws), adds the third level:
    paired bootstrap resamples of each client's test rows (the difference of
    the two models' metrics on the same resampled rows, ``evaluate_clients``'s
    ``draws`` with one ``random_state``). Each resampled (seed, client) cell
    then takes its point value plus the deviation of one of its row draws
    from their mean, so the interval also holds the sampling noise of the
    test rows (a change a client's few test rows cannot tell from 0 is not
    called a change) without the bootstrap's bias moving it.

    ``shared_rows=True`` says every seed was evaluated on the same test rows,
    with the same resamples (one ``random_state`` for all seeds): a client's
    row noise is then one draw for all its seeds, not an independent one per
    seed, which averaging over seeds would wrongly shrink. Draw b must be the
    same resample of rows for every seed.

    A draw that is undefined (NaN) for a defined cell is left out of that
    cell's choices (with ``shared_rows``, of the client's, for every seed);
    a defined cell with no defined draw is an error, never a silent change.

    Returns
    -------
    mean, low, high : float
        The mean difference and its interval.
    """
    differences = np.atleast_2d(np.asarray(differences, dtype=float))
    if np.isnan(differences).all():  # no client has the metric defined
        return np.nan, np.nan, np.nan
    rng = np.random.default_rng(seed)
    n_seeds, n_clients = differences.shape
    seeds = rng.integers(0, n_seeds, size=(n_resamples, n_seeds))
    clients = rng.integers(0, n_clients, size=(n_resamples, n_clients))
    picked = (seeds[:, :, None], clients[:, None, :])
    if row_draws is None:
        cells = differences[picked]
    else:
        row_draws = np.asarray(row_draws, dtype=float)
        if row_draws.ndim != 3 or row_draws.shape[:2] != differences.shape:
            raise ValueError(
                f"row_draws has shape {row_draws.shape}; its first two axes must "
                f"be the (seeds, clients) of differences, {differences.shape}."
            )
        defined = ~np.isnan(differences)
        # Usable draws: defined ones; with shared rows, defined for every
        # seed of the client (draw b is one resample of the client's rows).
        usable = np.isfinite(row_draws) | ~defined[:, :, None]
        if shared_rows:
            usable = np.broadcast_to(usable.all(axis=0, keepdims=True), usable.shape)
        counts = usable.sum(axis=2)
        empty = defined & (counts == 0)
        if empty.any():
            seed_, client = np.argwhere(empty)[0]
            raise ValueError(
                f"Seed {seed_}, client {client}: its difference is defined but "
                "none of its row draws is (on every seed, with shared_rows)."
            )
        # Each row draw enters as its deviation from the cell's mean draw,
        # around the cell's point value: the resamples give the spread of the
        # test rows, not a location (a bootstrap of a max - min gap is biased
        # upward, and the bias need not cancel between two models).
        masked = np.where(usable, row_draws, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # undefined cells
            centred = masked - np.nanmean(masked, axis=2, keepdims=True)
        centred += differences[:, :, None]
        # The usable draws of every cell first, in their order (stable), so
        # a uniform position among the first `counts` picks one of them, and
        # with shared rows the same resample b for every seed.
        order = np.argsort(~usable, axis=2, kind="stable")
        uniform = rng.random(
            size=(n_resamples, 1 if shared_rows else n_seeds, n_clients)
        )
        position = np.minimum(
            (uniform * np.maximum(counts[picked], 1)).astype(np.intp),
            np.maximum(counts[picked], 1) - 1,
        )
        draw = order[(*picked, position)]
        cells = centred[(*picked, draw)]
        # A client whose metric is undefined stays left out, whatever its draws.
        cells[~defined[picked]] = np.nan
    with warnings.catch_warnings():
        # A resample of only undefined cells has no mean: left out below.
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(cells.reshape(n_resamples, -1), axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means[np.isfinite(means)], [tail, 1 - tail])
    return float(np.nanmean(differences)), float(low), float(high)


def direction(differences, paper_change, **options):
    """How a change compares with the paper's: a word and the interval.

    A change counts only when its interval excludes 0; otherwise it is
    "no clear change", whatever the sign of its mean.
    """
    mean, low, high = change_interval(differences, **options)
    if not np.isfinite(mean):
        return "undefined", mean, low, high
    if low <= 0 <= high:
        return "no clear change", mean, low, high
    ours = np.sign(mean)
    return (
        "as in the paper" if ours == np.sign(paper_change) else "opposite to the paper",
        mean,
        low,
        high,
    )
