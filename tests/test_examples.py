"""The examples run as written (the README's main job is one of them)."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    "script, expected",
    [
        ("quickstart.py", ["FedAvg: test split", "FedIDA: test split", "mean"]),
        ("select_lambda_gamma.py", ["lambda range", "chosen gamma", "coarse", "fine"]),
    ],
)
def test_example_runs(script, expected):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    for text in expected:
        assert text in result.stdout
