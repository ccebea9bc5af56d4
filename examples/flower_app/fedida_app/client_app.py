"""The ClientApp every SuperNode runs: FederatedEstimator's client routine."""

from fedida_app.task import federation, load_partition
from skfedida.flower import make_client_app

app = make_client_app(federation, load_partition)
