"""Mutants of ``skfedida/postprocessing``."""

from ._base import Mutant

POSTPROCESSING_TESTS = ("tests/test_postprocessing.py",)

MUTANTS = [
    Mutant(
        "the trade-off hull keeps collinear points as vertices",
        "skfedida/postprocessing/_threshold_optimizer.py",
        "            if cross >= 0:\n",
        "            if cross > 0:\n",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "tolerance's window is one grid step narrower than the tolerance",
        "skfedida/postprocessing/_threshold_optimizer.py",
        "width = int(np.floor(tolerance / (grid[1] - grid[0]) + 1e-9)) + 1",
        "width = int(np.floor(tolerance / (grid[1] - grid[0]) + 1e-9))",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "balanced accuracy of a one-label group is not refused",
        "skfedida/postprocessing/_threshold_optimizer.py",
        '                or self.objective == "balanced_accuracy"\n',
        "",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
]
