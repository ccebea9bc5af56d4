"""End to end: a SuperLink and three SuperNodes on 127.0.0.1, driven by ``flwr run``.

The deployment is the one doc/flower.rst recommends: TLS on every connection
(a certificate authority and a server certificate generated here with the
``cryptography`` package) and SuperNode authentication
(``--enable-supernode-auth``: only SuperNodes whose public keys were
registered with ``flwr supernode register`` may connect); a SuperNode with
an unregistered key, or without TLS, is refused.

Selected with ``-m e2e`` (deselect with ``-m "not e2e"``); about two
minutes, most of it Flower's 3-second polling. Everything listens on loopback ports
chosen free at start, Flower's telemetry and update checks are off, the
SuperLink installs no app dependencies, and every process the test starts is
stopped through its own process id (and its process group) at the end.
"""

import contextlib
import datetime
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("flwr")
pytest.importorskip("cryptography")

from _helpers import assert_same_parameters
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from skfedida.flower import (
    load_result,
    make_client_app,
    make_server_app,
    run_in_process,
)

pytestmark = pytest.mark.e2e

APP = Path(__file__).resolve().parents[1] / "examples" / "flower_app"
N_NODES = 3
RUN_TIMEOUT = 300

FAILING_TASK = """
from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.linear_model import FairPenaltyLogisticRegression

federation = FederatedEstimator(FairPenaltyLogisticRegression(), random_state=0)


def load_partition(context):
    k = context.node_config["partition-id"]
    if k == context.run_config["fail-partition"] and "skfedida" in context.state:
        raise OSError(f"partition {k} lost its data after initialisation")
    data = make_federated_classification(600, n_clients=3, random_state=0)
    rows = data.clients == k
    return {"X": data.data[rows], "y": data.target[rows]}
"""


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _command(name):
    path = shutil.which(name) or str(Path(sys.executable).parent / name)
    if not os.path.exists(path):
        pytest.skip(f"{name} is not installed")
    return path


class _Processes:
    """The processes this test started, each in its own process group."""

    def __init__(self, env, logs):
        self.env, self.logs, self.started = env, logs, []

    def start(self, name, *args):
        log = open(self.logs / f"{name}-{len(self.started)}.log", "w")  # noqa: SIM115
        process = subprocess.Popen(
            [_command(name), *args],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.started.append((process, log))
        return process

    def stop(self):
        for process, _ in self.started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + 20
        for process, log in self.started:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
            log.close()
        # Children (Flower's superexec, app processes) share the group.
        for process, _ in self.started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


def _certificate(subject, issuer, public_key, signing_key, *extensions):
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(signing_key, hashes.SHA256()).public_bytes(
        serialization.Encoding.PEM
    )


def _write_credentials(folder, node_names):
    """A CA, the SuperLink's certificate for 127.0.0.1, SuperNode key pairs.

    Node keys are EC P-384 in OpenSSH format, as Flower's SuperNode
    authentication reads them.
    """
    ca_key = ec.generate_private_key(ec.SECP384R1())
    (folder / "ca.crt").write_bytes(
        _certificate(
            "skfedida test CA",
            "skfedida test CA",
            ca_key.public_key(),
            ca_key,
            (x509.BasicConstraints(ca=True, path_length=None), True),
        )
    )
    server_key = ec.generate_private_key(ec.SECP384R1())
    names = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    (folder / "server.pem").write_bytes(
        _certificate(
            "127.0.0.1",
            "skfedida test CA",
            server_key.public_key(),
            ca_key,
            (x509.SubjectAlternativeName(names), False),
        )
    )
    (folder / "server.key").write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    for name in node_names:
        key = ec.generate_private_key(ec.SECP384R1())
        (folder / name).write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.OpenSSH,
                serialization.NoEncryption(),
            )
        )
        (folder / f"{name}.pub").write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
            )
        )


def _wait_healthy(port, process, ca_file, timeout=60):
    context = ssl.create_default_context(cafile=str(ca_file))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "the SuperLink exited at start"
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/health", timeout=2, context=context
            ):
                return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"the SuperLink on 127.0.0.1:{port} never became healthy")


def _flwr(env, *args, timeout=60):
    return subprocess.run(
        [_command("flwr"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )


def _start_supernode(processes, link_port, *options, retries=20):
    return processes.start(
        "flower-supernode",
        *options,
        "--superlink",
        f"127.0.0.1:{link_port}",
        "--host",
        "127.0.0.1",
        "--port",
        str(_free_port()),
        "--max-retries",
        str(retries),
    )


@pytest.fixture(scope="module")
def deployment(tmp_path_factory):
    root = tmp_path_factory.mktemp("flower")
    home = root / "flwr-home"
    home.mkdir()
    credentials = root / "credentials"
    credentials.mkdir()
    _write_credentials(credentials, [f"node{k}" for k in range(N_NODES)] + ["intruder"])
    ca_file = credentials / "ca.crt"
    env = {
        **os.environ,
        # The SuperLink starts flower-superexec by name: the interpreter's own
        # bin folder first, so that a virtual environment that was not
        # activated still finds it.
        "PATH": os.pathsep.join(
            [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
        ),
        "FLWR_HOME": str(home),
        "FLWR_TELEMETRY_ENABLED": "0",
        "FLWR_DISABLE_UPDATE_CHECK": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    processes = _Processes(env, root)
    link_port = _free_port()
    try:
        link = processes.start(
            "flower-superlink",
            "--ssl-ca-certfile",
            str(ca_file),
            "--ssl-certfile",
            str(credentials / "server.pem"),
            "--ssl-keyfile",
            str(credentials / "server.key"),
            "--enable-supernode-auth",
            "--host",
            "127.0.0.1",
            "--port",
            str(link_port),
            "--disable-runtime-dependency-installation",
        )
        _wait_healthy(link_port, link, ca_file)
        (home / "config.toml").write_text(
            '[superlink]\ndefault = "loopback"\n\n[superlink.loopback]\n'
            f'address = "127.0.0.1:{link_port}"\n'
            f'root-certificates = "{ca_file}"\n'
        )
        for k in range(N_NODES):
            _flwr(env, "supernode", "register", str(credentials / f"node{k}.pub"))
            _start_supernode(
                processes,
                link_port,
                "--root-certificates",
                str(ca_file),
                "--auth-supernode-private-key",
                str(credentials / f"node{k}"),
                "--node-config",
                f"partition-id={k} num-partitions={N_NODES}",
            )
        yield env, root, processes, link_port, credentials
    finally:
        processes.stop()
        assert all(process.poll() is not None for process, _ in processes.started)


def _flwr_run(env, app, run_config):
    result = subprocess.run(
        [
            _command("flwr"),
            "run",
            str(app),
            "loopback",
            "--stream",
            "--run-config",
            run_config,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    # `flwr run` exits 0 even when the run failed: its status tells.
    listing = subprocess.run(
        [_command("flwr"), "ls", "loopback", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    runs = json.loads(listing.stdout)["runs"]
    latest = max(runs, key=lambda run: run["pending-at"])
    return latest["status"], result.stdout + result.stderr


def test_flwr_run_on_loopback_matches_the_in_process_federation(deployment):
    env, root, *_ = deployment
    path = root / "result.joblib"
    status, output = _flwr_run(
        env, APP, f"num-server-rounds=1 local-epochs=1 result-path='{path}'"
    )
    assert status == "finished:completed", output[-3000:]
    deployed = load_result(path)

    sys.path.insert(0, str(APP))
    try:
        from fedida_app.task import federation, load_partition
    finally:
        sys.path.remove(str(APP))
    local = run_in_process(
        make_server_app(federation),
        make_client_app(federation, load_partition),
        num_partitions=N_NODES,
        run_config={"num-server-rounds": 1, "local-epochs": 1},
    )
    assert_same_parameters(deployed.estimator_, local.estimator_)
    assert [r["train_loss"] for r in deployed.history_] == [
        r["train_loss"] for r in local.history_
    ]
    np.testing.assert_array_equal(deployed.client_sizes_, local.client_sizes_)


def test_a_failing_client_fails_the_deployed_run_with_a_clear_error(deployment):
    env, root, *_ = deployment
    app = root / "failing_app"
    shutil.copytree(APP, app, ignore=shutil.ignore_patterns("__pycache__"))
    (app / "fedida_app" / "task.py").write_text(FAILING_TASK)
    pyproject = (app / "pyproject.toml").read_text()
    (app / "pyproject.toml").write_text(
        pyproject.replace("seed = 0\n", "seed = 0\nfail-partition = -1\n")
    )
    path = root / "failed.joblib"
    status, output = _flwr_run(
        env, app, f"num-server-rounds=1 fail-partition=1 result-path='{path}'"
    )
    assert status == "finished:failed", output[-3000:]
    with pytest.raises(
        RuntimeError,
        match=r"Client 1 \(node \d+\) failed in round 1 \(training\).*lost its data",
    ):
        load_result(path)


def test_a_supernode_the_superlink_does_not_know_is_refused(deployment):
    env, _, processes, link_port, credentials = deployment
    intruders = {
        "an unregistered key": [
            "--root-certificates",
            str(credentials / "ca.crt"),
            "--auth-supernode-private-key",
            str(credentials / "intruder"),
        ],
        "no TLS": ["--insecure"],
    }
    started = {
        who: _start_supernode(
            processes,
            link_port,
            *options,
            "--max-wait-time",
            "20",
            "--node-config",
            f"partition-id=0 num-partitions={N_NODES}",
            retries=2,
        )
        for who, options in intruders.items()
    }
    for who, intruder in started.items():
        # A node the SuperLink accepted would keep running (and time out here).
        intruder.wait(timeout=120)
        assert intruder.returncode != 0, who
    listing = json.loads(_flwr(env, "supernode", "ls", "--format", "json").stdout)
    online = [node for node in listing["nodes"] if node["status"] == "online"]
    # Only the registered SuperNodes: neither intruder joined.
    assert len(online) == N_NODES
