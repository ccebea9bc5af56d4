"""The run config's overrides of a federation's parameters, on both sides.

A Flower run's config (``[tool.flwr.app.config]``, ``flwr run
--run-config``) may change a federation's rounds, local epochs and seed;
the server and every client apply the same overrides to the federation
they were given, so one run config changes both.
"""

from __future__ import annotations

from ._estimator import make_plan

#: Run-config keys (``[tool.flwr.app.config]``) that override the federation's
#: parameters on both sides, so one ``flwr run --run-config`` changes both.
RUN_CONFIG_PARAMETERS = {
    "num-server-rounds": "n_rounds",
    "local-epochs": "local_epochs",
    "seed": "random_state",
}


def plan_for_run(federation, run_config):
    """The federation's plan for this run (run config overrides applied).

    Parameters
    ----------
    federation : FederatedEstimator
        The unfitted federation a Flower app runs.
    run_config : mapping
        The run's config; its keys of ``RUN_CONFIG_PARAMETERS`` (rounds,
        local epochs, seed) replace the federation's parameters, on the
        server and every client alike.

    Returns
    -------
    plan : FederationPlan
        What the server and every client need to run the federation.
    """
    overrides = {
        parameter: run_config[key]
        for key, parameter in RUN_CONFIG_PARAMETERS.items()
        if key in run_config
    }
    return make_plan(federation, overrides)
