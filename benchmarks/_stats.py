"""Statistics the benchmark reports share: is a change a change?"""

import warnings

import numpy as np


def change_interval(
    differences, row_draws=None, confidence=0.95, n_resamples=2000, seed=0
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
    if row_draws is None:
        cells = differences[seeds[:, :, None], clients[:, None, :]]
    else:
        row_draws = np.asarray(row_draws, dtype=float)
        if row_draws.shape[:2] != differences.shape:
            raise ValueError(
                f"row_draws has shape {row_draws.shape}; its first two axes must "
                f"be the (seeds, clients) of differences, {differences.shape}."
            )
        draws = rng.integers(
            0, row_draws.shape[2], size=(n_resamples, n_seeds, n_clients)
        )
        # Each row draw enters as its deviation from the cell's mean draw,
        # around the cell's point value: the resamples give the spread of the
        # test rows, not a location (a bootstrap of a max - min gap is biased
        # upward, and the bias need not cancel between two models).
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells
            centred = row_draws - np.nanmean(row_draws, axis=2, keepdims=True)
        centred += differences[:, :, None]
        cells = centred[seeds[:, :, None], clients[:, None, :], draws]
        # A client whose metric is undefined stays left out, whatever its draws.
        cells[np.isnan(differences[seeds[:, :, None], clients[:, None, :]])] = np.nan
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
