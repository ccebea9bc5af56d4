"""The examples run as written (the README's main job is one of them)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
EXPECTED = {
    "quickstart.py": [
        "Legend",
        "FedAvg: matched threshold",
        "FedIDA: matched threshold",
        "DPD mat.",
        "Brier",
        "mean",
    ],
    "select_lambda_gamma.py": [
        "lambda range",
        "chosen gamma",
        "coarse",
        "fine",
        "matched-rate DPD: FedIDA",
    ],
    "rose_in_imblearn_pipeline.py": ["subgroup", "none of them sensitive: True"],
    "federated_sgdclassifier.py": ["FedAvg + ROSE", "soft_dpd"],
    "fairness_scorers_grid_search.py": ["chosen: alpha"],
    "plot_fairness_plots.py": [],
    "raw_adult_pipeline.py": [
        "fitted from raw tables",
        "model inputs: 92",
        "FedIDA, raw table + federated preprocessing",
        "DPD matched",
    ],
    "group_thresholds.py": [
        "server's counts",
        "FedAvg + group thresholds",
    ],
    "plot_rate_constraints.py": [
        "trees, constraint (tolerance) (accuracy / DPD)",
        "logistic, constraint (tolerance)",
        "trees + group thresholds",
    ],
    "boosted_trees.py": [
        "FedIDA trees, fairness=1: training penalty",
        "selection_rate",
        "dpd",
    ],
    "multiclass_federation.py": [
        "share 3 high",
        "FedIDA lambda=5.0 vs FedAvg: EOD",
        "Legend",
    ],
}


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs(script):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    for text in EXPECTED[script]:
        assert text in result.stdout
    if script == "select_lambda_gamma.py":
        # The selected model must be fairer than FedAvg where users act.
        last = result.stdout.strip().splitlines()[-1].split()
        fedida, fedavg = float(last[3]), float(last[-1])
        assert fedida < fedavg, result.stdout[-500:]


def test_every_example_is_tested():
    assert {path.name for path in EXAMPLES.glob("*.py")} == set(EXPECTED)
