"""The result file of a skfedida ServerApp: written atomically, read back checked.

A result file is a header, a digest and a joblib (pickle) payload. The digest
is an HMAC-SHA256 of the payload with a key the run is given (``result_key``),
or, without a key, its SHA-256 (which catches corruption, not tampering).
``load_result`` checks the digest before it unpickles anything, so a file
changed by someone without the key is refused before any of its code runs.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import tempfile

import joblib

#: The first bytes of every result file.
_MAGIC = b"skfedida-result\x00v1\x00"
_SIGNED, _UNSIGNED = b"H", b"S"


def _write(path, payload):
    """Write a joblib file atomically (the nodes' model files)."""
    _write_bytes(path, _dumps(payload))


def _dumps(payload):
    buffer = io.BytesIO()
    joblib.dump(payload, buffer)
    return buffer.getvalue()


def _write_bytes(path, data):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=directory, suffix=".partial")
    with os.fdopen(handle, "wb") as file:
        file.write(data)
    os.replace(scratch, path)


def _key_bytes(key):
    if isinstance(key, str):
        key = key.encode("utf-8")
    if not isinstance(key, bytes) or not key:
        raise TypeError("result_key must be a non-empty str or bytes.")
    return key


def _write_result(path, payload, key=None):
    """Write a ServerApp's result with its digest (see the module docstring)."""
    data = _dumps(payload)
    if key is None:
        tag = _UNSIGNED + hashlib.sha256(data).digest()
    else:
        tag = _SIGNED + hmac.new(_key_bytes(key), data, hashlib.sha256).digest()
    _write_bytes(path, _MAGIC + tag + data)


def load_result(path, *, key=None):
    """Read the fitted FederatedEstimator written by a skfedida ServerApp.

    Parameters
    ----------
    path : str or path-like
        The ServerApp's ``result_path`` (or run config ``result-path``).
    key : str or bytes, default=None
        The ``result_key`` the ServerApp was given. A file signed with a key
        is refused without it, and so is a file whose digest does not match
        the key (changed, or signed with another key), before unpickling.

    Returns
    -------
    federation : FederatedEstimator or FederatedThresholdOptimizer
        Fitted; predicts with the global model (the fitted post-processor,
        when the ServerApp was given one).

    Raises
    ------
    RuntimeError
        When the run failed; the message is the ServerApp's error.
    FileNotFoundError
        When there is no result: the run did not reach its end.
    ValueError
        When the file is not a result file (empty, truncated, foreign).

    Warnings
    --------
    A result file holds a joblib (pickle) payload, and loading a pickle can
    run code: load only results of runs you trust. With a ``result_key``
    (``make_server_app(..., result_key=...)``) the file is checked against
    the key before anything is unpickled, so a file changed by someone
    without the key is refused.

    Examples
    --------
    >>> from skfedida.flower import load_result
    >>> load_result("no-such-run.joblib")
    Traceback (most recent call last):
    ...
    FileNotFoundError: No result at 'no-such-run.joblib': ...
    """
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"No result at {os.fspath(path)!r}: the ServerApp did not finish "
            "(see `flwr log <run-id>`)."
        )
    with open(path, "rb") as file:
        blob = file.read()
    name = os.fspath(path)
    if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + 33:
        raise ValueError(
            f"{name!r} is not a skfedida result file (no result header: an empty, "
            "text or foreign file, or a result written before skfedida signed "
            "its results)."
        )
    kind = blob[len(_MAGIC) : len(_MAGIC) + 1]
    digest = blob[len(_MAGIC) + 1 : len(_MAGIC) + 33]
    data = blob[len(_MAGIC) + 33 :]
    if kind == _SIGNED:
        if key is None:
            raise ValueError(
                f"{name!r} is signed with a result key: pass load_result(path, "
                "key=...) with the key the ServerApp was given."
            )
        expected = hmac.new(_key_bytes(key), data, hashlib.sha256).digest()
        if not hmac.compare_digest(digest, expected):
            raise ValueError(
                f"{name!r} does not match the key: it was changed after the run, "
                "or signed with another key. It was not loaded."
            )
    elif kind == _UNSIGNED:
        if key is not None:
            raise ValueError(
                f"{name!r} is not signed, but key= was given: it may have been "
                "replaced by a file written without the key. It was not loaded."
            )
        if not hmac.compare_digest(digest, hashlib.sha256(data).digest()):
            raise ValueError(f"{name!r} is corrupted: its digest does not match.")
    else:
        raise ValueError(f"{name!r} is not a skfedida result file (unknown kind).")
    try:
        payload = joblib.load(io.BytesIO(data))
    except Exception as exc:  # truncated or foreign payloads
        raise ValueError(
            f"{name!r} is not a skfedida result file: it could not be "
            f"read ({type(exc).__name__}: {exc})."
        ) from exc
    if not isinstance(payload, dict) or not ({"error", "estimator"} & set(payload)):
        raise ValueError(
            f"{os.fspath(path)!r} is not a skfedida result file: it holds a "
            f"{type(payload).__name__}, not a ServerApp's result."
        )
    if "error" in payload:
        raise RuntimeError(f"The Flower run failed: {payload['error']}")
    return payload["estimator"]
