"""Result files: checked against their digest (or key) before unpickling."""

import os

import numpy as np
import pytest

pytest.importorskip("flwr")

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator
from skfedida.flower import (
    load_result,
    make_client_app,
    make_server_app,
    run_in_process,
)
from skfedida.flower._result import _MAGIC, _write_result
from skfedida.linear_model import FairPenaltyLogisticRegression


class _Payload:
    """Unpickling this creates a file: the code a pickle can run."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_signed_result_is_loaded_with_its_key_only(tmp_path):
    path = tmp_path / "result.joblib"
    _write_result(path, {"estimator": [1, 2]}, key="secret")
    assert load_result(path, key="secret") == [1, 2]
    with pytest.raises(ValueError, match="signed with a result key"):
        load_result(path)
    with pytest.raises(ValueError, match="does not match the key"):
        load_result(path, key="other")


def test_a_changed_file_is_refused_before_its_pickle_runs(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "result.joblib"
    _write_result(path, {"estimator": [1]}, key="secret")
    # An attacker without the key puts a payload after a copied header.
    _write_result(tmp_path / "evil.joblib", {"estimator": _Payload(str(marker))})
    evil = (tmp_path / "evil.joblib").read_bytes()
    signed = path.read_bytes()
    header = len(_MAGIC) + 33
    path.write_bytes(signed[:header] + evil[header:])
    with pytest.raises(ValueError, match="does not match the key"):
        load_result(path, key="secret")
    assert not marker.exists()
    # An unsigned file offered where a key is expected is refused too.
    with pytest.raises(ValueError, match="not signed"):
        load_result(tmp_path / "evil.joblib", key="secret")
    assert not marker.exists()
    # Unsigned and corrupted: its digest catches it.
    corrupted = bytearray(evil)
    corrupted[-5] ^= 0xFF
    path.write_bytes(bytes(corrupted))
    with pytest.raises(ValueError, match="corrupted"):
        load_result(path)
    assert not marker.exists()


def test_the_server_app_signs_with_the_run_key(tmp_path):
    data = make_federated_classification(600, n_clients=2, random_state=0)

    def load_data(context):
        rows = data.clients == context.node_config["partition-id"]
        return {"X": data.data[rows], "y": data.target[rows]}

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), n_rounds=1, random_state=0
    )
    path = os.fspath(tmp_path / "result.joblib")
    fitted = run_in_process(
        make_server_app(federation, result_path=path, result_key="k"),
        make_client_app(federation, load_data),
        num_partitions=2,
        run_config={"result-path": path},
        result_key="k",
    )
    assert np.all(np.isfinite(fitted.estimator_.coef_))
    with pytest.raises(ValueError, match="signed with a result key"):
        load_result(path)
    assert (
        load_result(path, key="k").estimator_.coef_.shape
        == fitted.estimator_.coef_.shape
    )


@pytest.mark.parametrize("key", ["", b""], ids=["str", "bytes"])
def test_an_empty_result_key_is_refused(tmp_path, key):
    # Stated behaviour: a result key is a secret, and an empty one (an unset
    # environment variable read as "") signs nothing anyone could not forge.
    # Writing, loading and a ServerApp run with it are a TypeError naming
    # result_key, never a file "signed" with the empty key.
    path = tmp_path / "result.joblib"
    with pytest.raises(TypeError, match="result_key must be a non-empty"):
        _write_result(path, {"estimator": [1]}, key=key)
    assert not path.exists()
    _write_result(path, {"estimator": [1]}, key="secret")
    with pytest.raises(TypeError, match="result_key must be a non-empty"):
        load_result(path, key=key)

    data = make_federated_classification(400, n_clients=2, random_state=0)

    def load_data(context):
        rows = data.clients == context.node_config["partition-id"]
        return {"X": data.data[rows], "y": data.target[rows]}

    federation = FederatedEstimator(
        FairPenaltyLogisticRegression(fairness=0.0), n_rounds=1, random_state=0
    )
    run_path = os.fspath(tmp_path / "run.joblib")
    with pytest.raises(TypeError, match="result_key must be a non-empty"):
        run_in_process(
            make_server_app(federation, result_path=run_path, result_key=key),
            make_client_app(federation, load_data),
            num_partitions=2,
            result_key=key,
        )
