"""The result file of a skfedida ServerApp: written atomically, read back checked."""

from __future__ import annotations

import os
import tempfile

import joblib


def _write(path, payload):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=directory, suffix=".partial")
    os.close(handle)
    joblib.dump(payload, scratch)
    os.replace(scratch, path)


def load_result(path):
    """Read the fitted FederatedEstimator written by a skfedida ServerApp.

    Parameters
    ----------
    path : str or path-like
        The ServerApp's ``result_path`` (or run config ``result-path``).

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
    A result file is a joblib (pickle) file, and loading a pickle can run
    code: load only results written by a ServerApp you trust.

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
    try:
        payload = joblib.load(path)
    except Exception as exc:  # empty, truncated, text or foreign files
        raise ValueError(
            f"{os.fspath(path)!r} is not a skfedida result file: it could not be "
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
