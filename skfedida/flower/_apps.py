"""The Flower apps, by the names of the first release (see the split modules).

``_client_app`` (ClientApp), ``_server_app`` (ServerApp), ``_result`` (the
result file); what a client may send is ``skfedida.federated._transport``'s,
the run config's overrides ``skfedida.federated._wire``'s.
"""

from ..federated._run_config import RUN_CONFIG_PARAMETERS
from ..federated._transport import REPLY_CONFIG, REPLY_METRICS
from ._client_app import make_client_app
from ._result import load_result
from ._server_app import make_server_app

__all__ = [
    "REPLY_CONFIG",
    "REPLY_METRICS",
    "RUN_CONFIG_PARAMETERS",
    "load_result",
    "make_client_app",
    "make_server_app",
]
