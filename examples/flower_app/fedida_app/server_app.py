"""The ServerApp: Flower's FedAvg over the clients, result written to result-path."""

from fedida_app.task import federation
from skfedida.flower import make_server_app

app = make_server_app(federation)
