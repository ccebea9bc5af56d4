"""Run FedIDA across institutions on Flower (``pip install 'skfedida[flower]'``).

:func:`make_client_app` and :func:`make_server_app` turn a
:class:`~skfedida.federated.FederatedEstimator` into a Flower ClientApp (the
client routine ``FederatedEstimator`` runs per client and round) and a
ServerApp (Flower's own FedAvg), which produce the same model as the
in-process federation. :func:`run_in_process` runs both in one process.
"""

try:
    import flwr  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "skfedida.flower needs Flower: pip install 'skfedida[flower]'"
    ) from exc

from ._client_app import make_client_app
from ._grid import InProcessGrid, run_in_process
from ._result import load_result
from ._server_app import make_server_app

__all__ = [
    "InProcessGrid",
    "load_result",
    "make_client_app",
    "make_server_app",
    "run_in_process",
]
