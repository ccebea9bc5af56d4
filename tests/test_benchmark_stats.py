"""The verdict logic of benchmarks/reproduce_paper.py (issue 23)."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _stats import change_interval, direction


def test_a_change_inside_its_spread_is_not_called_a_change():
    rng = np.random.default_rng(0)
    # Mean -0.09 against a spread of 0.27 across seeds: no clear change, even
    # though the mean has the paper's sign.
    noisy = -0.09 + rng.normal(0, 0.27, size=(3, 4))
    word, _, low, high = direction(noisy, paper_change=-0.07)
    assert word == "no clear change" and low < 0 < high
    # The same mean with a small spread is a change, in the paper's direction
    # or against it.
    steady = -0.09 + rng.normal(0, 0.01, size=(3, 4))
    assert direction(steady, paper_change=-0.07)[0] == "as in the paper"
    assert direction(steady, paper_change=+0.07)[0] == "opposite to the paper"


def test_undefined_clients_are_left_out_and_the_interval_covers_the_mean():
    differences = np.array([[0.1, np.nan, 0.12], [0.11, np.nan, 0.13]])
    mean, low, high = change_interval(differences)
    assert mean == np.nanmean(differences)
    assert low <= mean <= high
    assert direction(np.full((2, 3), np.nan), paper_change=1.0)[0] == "undefined"
