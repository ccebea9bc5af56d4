"""Statistics the benchmark reports share: is a change a change?"""

import numpy as np


def change_interval(differences, confidence=0.95, n_resamples=2000, seed=0):
    """Bootstrap interval of a mean paired difference, over seeds and clients.

    ``differences`` has one row per seed and one column per client (NaN where
    a client's metric is undefined). Seeds and clients are resampled with
    replacement (two levels), so the interval holds both the spread of the
    training across seeds and the spread of the effect across clients.

    Returns
    -------
    mean, low, high : float
        The mean difference and its interval.
    """
    differences = np.atleast_2d(np.asarray(differences, dtype=float))
    rng = np.random.default_rng(seed)
    n_seeds, n_clients = differences.shape
    seeds = rng.integers(0, n_seeds, size=(n_resamples, n_seeds))
    clients = rng.integers(0, n_clients, size=(n_resamples, n_clients))
    draws = np.array(
        [
            np.nanmean(differences[np.ix_(s, c)])
            for s, c in zip(seeds, clients, strict=True)
        ]
    )
    tail = (1 - confidence) / 2
    low, high = np.nanquantile(draws, [tail, 1 - tail])
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
