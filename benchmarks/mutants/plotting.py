"""Mutants of ``skfedida/plotting``."""

from ._base import Mutant

PLOTTING_TESTS = ("tests/test_plotting.py",)

MUTANTS = [
    Mutant(
        "ClientMetricsDisplay draws the interval columns as metrics",
        "ClientMetricsDisplay.plot",
        'else [c for c in first.columns if not c.endswith(("_low", "_high"))]',
        "else list(first.columns)",
        PLOTTING_TESTS,
        features=("ClientMetricsDisplay",),
    ),
    Mutant(
        "ClientMetricsDisplay reads each report's clients in its own order",
        "ClientMetricsDisplay.plot",
        "table = report.per_client.loc[clients]",
        "table = report.per_client",
        PLOTTING_TESTS,
        features=("ClientMetricsDisplay",),
    ),
    Mutant(
        "TradeoffDisplay draws performance along the disparity axis",
        "TradeoffDisplay.plot",
        'ax.plot(disparity, performance, "o-", label=name)',
        'ax.plot(performance, disparity, "o-", label=name)',
        PLOTTING_TESTS,
        features=("TradeoffDisplay",),
    ),
    Mutant(
        "TradeoffDisplay.from_cv_results negates the disparity when told not to",
        "from_cv_results",
        "            if negated_fairness:\n",
        "            if not negated_fairness:\n",
        PLOTTING_TESTS,
        features=("TradeoffDisplay",),
    ),
]

# -- issue 35: the plot of a FederatedThresholdOptimizer's rules --------------
THRESHOLD_PLOT_TESTS = ("tests/test_threshold_plot.py",)
MUTANTS += [
    Mutant(
        "a group's point is its first threshold, not its randomised rule",
        "operating_points",
        "(1 - p_constant) * (p * r[first] + (1 - p) * r[second])",
        "(1 - p_constant) * r[first]",
        THRESHOLD_PLOT_TESTS,
        features=("ThresholdOptimizerDisplay", "plot_threshold_optimizer"),
    ),
    Mutant(
        "a group's objective is read at its first threshold only",
        "operating_points",
        "chosen_y = p * accuracy[first] + (1 - p) * accuracy[second]",
        "chosen_y = accuracy[first]",
        THRESHOLD_PLOT_TESTS,
        features=("ThresholdOptimizerDisplay", "plot_threshold_optimizer"),
    ),
    Mutant(
        "a named client's curves are the federation's counts",
        "operating_points",
        "        histograms = post.client_histograms_[k]\n",
        "        histograms = post.histograms_\n",
        THRESHOLD_PLOT_TESTS,
        features=("ThresholdOptimizerDisplay",),
    ),
]
