"""End to end: ``flwr run .`` on the example app with Flower's simulation runtime.

What the example's pyproject tells a user to type, in a copy of the app:
``flwr run . --stream --federation-config "num-supernodes=5"``. ``flwr``
starts its local SuperLink, which installs the app's (empty) dependencies
into a run environment with ``uv sync`` and runs the five simulated
SuperNodes on Ray. The run must finish and write its result file, and with
the example's own settings the model must be a sensible one: it ranks well
and selects people (the example's earlier settings gave a model selecting
nobody), and it is the model the same apps give in-process.

Selected with ``-m e2e``; about 25 seconds. Flower's home is a temporary
folder (the user's ``~/.flwr`` is not touched), telemetry and update checks
are off, and the local SuperLink is stopped at the end.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("flwr")
pytest.importorskip("ray", reason="flwr[simulation] (Ray) is not installed")

from _helpers import assert_same_parameters

from skfedida.flower import (
    load_result,
    make_client_app,
    make_server_app,
    run_in_process,
)

pytestmark = pytest.mark.e2e

APP = Path(__file__).resolve().parents[1] / "examples" / "flower_app"
RUN_TIMEOUT = 300


def _stop_local_superlink(home):
    """Stop the SuperLink ``flwr run`` started for this Flower home, if any.

    ``flwr run`` leaves its local SuperLink running for the next run; it is
    found by the Flower home in its command line (its ``--log-file``).
    """
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"flower-superlink" in command and str(home).encode() in command:
            with contextlib.suppress(OSError):
                os.kill(int(proc.name), signal.SIGTERM)


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("simulation")
    app = root / "flower_app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__"))
    home = root / "flwr-home"
    home.mkdir()
    env = {
        **os.environ,
        "PATH": os.pathsep.join(
            [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
        ),
        "FLWR_HOME": str(home),
        "HOME": str(root),
        "FLWR_TELEMETRY_ENABLED": "0",
        "FLWR_DISABLE_UPDATE_CHECK": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    try:
        result = subprocess.run(
            [
                str(Path(sys.executable).parent / "flwr"),
                "run",
                ".",
                "--stream",
                "--federation-config",
                "num-supernodes=5",
            ],
            cwd=app,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
    finally:
        _stop_local_superlink(home)
    yield app, result.stdout + result.stderr


def test_flwr_run_with_the_simulation_runtime_gives_a_sensible_model(simulated_run):
    app, output = simulated_run
    path = app / "fedida-result.joblib"
    assert path.exists(), output[-4000:]
    fitted = load_result(path)
    assert fitted.client_sizes_.shape == (5,)
    last = fitted.federated_metrics_[max(fitted.federated_metrics_)]
    # The example's own settings (10 rounds of 5 epochs): it ranks as the
    # README's FedIDA does (AUROC 0.850 over the same 10 groups), and selects
    # people at 0.5 (0.157 of them; Adult's prevalence is 0.25).
    assert len(fitted.federated_metrics_) == 10
    assert last["val_roc_auc"] > 0.84, last
    assert 0.1 < last["val_selection_rate"] < 0.4, last
    assert last["val_brier"] < 0.14, last


def test_the_simulated_run_is_the_in_process_run_of_the_same_apps(simulated_run):
    app, _output = simulated_run
    fitted = load_result(app / "fedida-result.joblib")
    sys.path.insert(0, str(app))
    try:
        from fedida_app.task import federation, load_partition
    finally:
        sys.path.remove(str(app))
    run_config = tomllib.loads((app / "pyproject.toml").read_text())["tool"]["flwr"][
        "app"
    ]["config"]
    local = run_in_process(
        make_server_app(federation),
        make_client_app(federation, load_partition),
        num_partitions=5,
        run_config=run_config,
    )
    assert_same_parameters(fitted.estimator_, local.estimator_)
