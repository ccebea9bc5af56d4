"""Mutants of ``skfedida/plotting``."""

from ._base import Mutant

PLOTTING_TESTS = ("tests/test_plotting.py",)

MUTANTS = [
    Mutant(
        "ClientMetricsDisplay draws the interval columns as metrics",
        "skfedida/plotting.py",
        'else [c for c in first.columns if not c.endswith(("_low", "_high"))]',
        "else list(first.columns)",
        PLOTTING_TESTS,
        features=("ClientMetricsDisplay",),
    ),
    Mutant(
        "ClientMetricsDisplay reads each report's clients in its own order",
        "skfedida/plotting.py",
        "table = report.per_client.loc[clients]",
        "table = report.per_client",
        PLOTTING_TESTS,
        features=("ClientMetricsDisplay",),
    ),
    Mutant(
        "TradeoffDisplay draws performance along the disparity axis",
        "skfedida/plotting.py",
        'ax.plot(disparity, performance, "o-", label=name)',
        'ax.plot(performance, disparity, "o-", label=name)',
        PLOTTING_TESTS,
        features=("TradeoffDisplay",),
    ),
    Mutant(
        "TradeoffDisplay.from_cv_results negates the disparity when told not to",
        "skfedida/plotting.py",
        "            if negated_fairness:\n",
        "            if not negated_fairness:\n",
        PLOTTING_TESTS,
        features=("TradeoffDisplay",),
    ),
]
