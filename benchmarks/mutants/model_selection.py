"""Mutants of ``skfedida/model_selection``."""

from ._base import SELECTION_TESTS, Mutant

MUTANTS = [
    Mutant(
        "one fine candidate too few",
        "skfedida/model_selection.py",
        "fine = self._grid(left, right, self.n_fine + 2)[1:-1]",
        "fine = self._grid(left, right, self.n_fine + 1)[1:-1]",
        SELECTION_TESTS,
    ),
    Mutant(
        "fine window half as wide",
        "skfedida/model_selection.py",
        "right = coarse[min(i + 1, len(coarse) - 1)]",
        "right = coarse[i]",
        SELECTION_TESTS,
    ),
    Mutant(
        "fairest_within ignores the upper end of the band",
        "skfedida/model_selection.py",
        "usable = (rate >= low) & (rate <= high)",
        "usable = rate >= low",
        SELECTION_TESTS,
    ),
    Mutant(
        "fairest_within ignores its tolerance",
        "skfedida/model_selection.py",
        "eligible = candidates[perf[candidates] >= best - self.tolerance]",
        "eligible = candidates[perf[candidates] >= best]",
        SELECTION_TESTS,
    ),
    Mutant(
        "lambda_range takes the value that failed as the bound",
        "skfedida/model_selection.py",
        "bound = lambdas[len(scores) - 2] if stopped else lambdas[len(scores) - 1]",
        "bound = lambdas[len(scores) - 1]",
        SELECTION_TESTS,
    ),
]
