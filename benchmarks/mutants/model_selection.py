"""Mutants of ``skfedida/model_selection``."""

from ._base import SELECTION_TESTS, Mutant

FILE = "skfedida/model_selection.py"
SEARCH = ("CoarseToFineSearchCV",)
RANGE = ("lambda_range",)
RULE = ("fairest_within",)

MUTANTS = [
    Mutant(
        "one fine candidate too few",
        FILE,
        "fine = self._grid(left, right, self.n_fine + 2)[1:-1]",
        "fine = self._grid(left, right, self.n_fine + 1)[1:-1]",
        SELECTION_TESTS,
        features=SEARCH,
    ),
    Mutant(
        "fine window half as wide",
        FILE,
        "right = coarse[min(i + 1, len(coarse) - 1)]",
        "right = coarse[i]",
        SELECTION_TESTS,
        features=SEARCH,
    ),
    Mutant(
        "log spacing read as exponents",
        FILE,
        "return np.geomspace(low, high, n)",
        "return np.logspace(low, high, n)",
        SELECTION_TESTS,
        features=SEARCH,
    ),
    Mutant(
        "an integer parameter's grid truncated, not rounded",
        FILE,
        "return np.unique(np.rint(values).astype(np.int64))",
        "return np.unique(np.floor(values).astype(np.int64))",
        SELECTION_TESTS,
        features=SEARCH,
    ),
    Mutant(
        "fine values equal to coarse ones evaluated again",
        FILE,
        "fine = fine[~np.isclose(fine[:, None], coarse[None, :]).any(axis=1)]",
        "fine = fine[~np.equal(fine[:, None], coarse[None, :]).all(axis=1)]",
        SELECTION_TESTS,
        features=SEARCH,
    ),
    Mutant(
        "fairest_within ignores the upper end of the band",
        FILE,
        "usable = (rate >= low) & (rate <= high)",
        "usable = rate >= low",
        SELECTION_TESTS,
        features=RULE,
    ),
    Mutant(
        "fairest_within ignores its tolerance",
        FILE,
        "eligible = candidates[perf[candidates] >= best - self.tolerance]",
        "eligible = candidates[perf[candidates] >= best]",
        SELECTION_TESTS,
        features=RULE,
    ),
    Mutant(
        "fairest_within breaks ties toward the worse performance",
        FILE,
        "order = np.lexsort((-perf[eligible], -fair[eligible]))",
        "order = np.lexsort((perf[eligible], -fair[eligible]))",
        SELECTION_TESTS,
        features=RULE,
    ),
    Mutant(
        "fairest_within's best taken over the degenerate candidates too",
        FILE,
        "best = perf[candidates].max()",
        "best = perf.max()",
        SELECTION_TESTS,
        features=RULE,
    ),
    Mutant(
        "lambda_range takes the value that failed as the bound",
        FILE,
        "bound = lambdas[len(scores) - 2] if stopped else lambdas[len(scores) - 1]",
        "bound = lambdas[len(scores) - 1]",
        SELECTION_TESTS,
        features=RANGE,
    ),
    Mutant(
        "lambda_range's range ends at the largest client bound",
        FILE,
        'high = min(record["bound"] for record in per_client)',
        'high = max(record["bound"] for record in per_client)',
        SELECTION_TESTS,
        features=RANGE,
    ),
    Mutant(
        "lambda_range compares with the tolerance of the previous score",
        FILE,
        "if score < tolerance * baseline:",
        "if score < tolerance * scores[-2]:",
        SELECTION_TESTS,
        features=RANGE,
    ),
    Mutant(
        "lambda_range keeps the band when the baseline is degenerate",
        FILE,
        "                if _outside_band(model, X_valid, band):\n"
        "                    # Unpenalised",
        "                if False:\n                    # Unpenalised",
        SELECTION_TESTS,
        features=RANGE,
    ),
    Mutant(
        "a collapse of the scores is not a degenerate model",
        FILE,
        "_score_spread(model, X_valid) < _COLLAPSED_SPREAD * baseline_spread",
        "_score_spread(model, X_valid) < 0.0 * baseline_spread",
        (*SELECTION_TESTS, "tests/test_multiclass.py"),
        features=(*RANGE, "DegenerateModelWarning"),
    ),
    Mutant(
        "a multi-class model is degenerate by its rarest class",
        FILE,
        "return float(counts.max() / pred.shape[0]) > band[1]",
        "return float(counts.min() / pred.shape[0]) < band[0]",
        ("tests/test_model_selection.py",),
        features=RANGE,
    ),
    Mutant(
        "no DegenerateModelWarning for collapsed scores",
        FILE,
        'if reason in ("selection rate", "score spread"):',
        'if reason == "selection rate":',
        (*SELECTION_TESTS, "tests/test_multiclass.py"),
        features=("DegenerateModelWarning",),
    ),
    Mutant(
        "no EmptyRangeWarning for an empty range",
        FILE,
        "    if high == 0:\n        first = next(",
        "    if high < 0:\n        first = next(",
        (*SELECTION_TESTS, "tests/test_warnings.py"),
        features=("EmptyRangeWarning",),
    ),
]
