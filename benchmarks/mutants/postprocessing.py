"""Mutants of ``skfedida/postprocessing``."""

from ._base import Mutant

POSTPROCESSING_TESTS = ("tests/test_postprocessing.py",)

MUTANTS = [
    Mutant(
        "the in-process optimizer counts training rows too",
        "FederatedThresholdOptimizer.fit",
        "if not self.prefit and held_out is not None:",
        "if False:",
        ("tests/test_backend_parity.py",),
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "the trade-off hull keeps collinear points as vertices",
        "_upper_hull",
        "            if cross >= 0:\n",
        "            if cross > 0:\n",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "tolerance's window is one grid step narrower than the tolerance",
        "_best_with_tolerance",
        "width = int(np.floor(tolerance / (grid[1] - grid[0]) + 1e-9)) + 1",
        "width = int(np.floor(tolerance / (grid[1] - grid[0]) + 1e-9))",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "a one-label group is not refused",
        "_solve",
        "undefined = bool(np.isnan(tpr[0]) or np.isnan(fpr[0]))",
        "undefined = bool(np.isnan(tpr[0]) and np.isnan(fpr[0]))",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "a matched selection_rate averages the groups' rates unweighted",
        "_solve",
        "overall = np.nansum(selection_curves * weights[:, None], axis=0)",
        "overall = np.nanmean(selection_curves, axis=0)",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "a score in a threshold's own bin fails the threshold",
        "_positive_probability",
        "above_first = binned >= np.round(thresholds[:, 0] * self.n_bins)",
        "above_first = binned > np.round(thresholds[:, 0] * self.n_bins)",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "equalized odds mixes a group with the constant from the origin",
        "_solve_equalized_odds",
        'rules["p_constant"][g] = (own - tpr) / (own - fpr)',
        'rules["p_constant"][g] = (own - tpr) / own',
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "a client's counts put the label on the group's axis",
        "client_histogram",
        "cells = (groups * 2 + labels) * n_bins + score_bins(scores, n_bins)",
        "cells = (labels * n_groups + groups) * n_bins + score_bins(scores, n_bins)",
        POSTPROCESSING_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "a client's counts need not hold the rows it declared in each group",
        "_claim_per_group",
        "        labels=per_group.sum(axis=0),\n"
        "        groups=dict(zip(labels, per_group, strict=True)),\n    )",
        "        labels=None,\n        groups=None,\n    )",
        (*POSTPROCESSING_TESTS, "tests/test_reply_gate.py"),
        features=("FederatedThresholdOptimizer", "reply:histogram"),
    ),
]

# -- issue 35: the drop-in for fairlearn --------------------------------------
INTEROP_TESTS = ("tests/test_threshold_interop.py",)
MUTANTS += [
    Mutant(
        "a plain classifier's fit is sent sensitive_features it does not name",
        "_fit_params",
        'if takes("sensitive_features"):',
        "if True:",
        INTEROP_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "score ignores sample_weight",
        "score",
        "accuracy_score(y, decisions, sample_weight=sample_weight)",
        "accuracy_score(y, decisions)",
        INTEROP_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "fairlearn's TNR parity takes TPR parity's rule",
        "CONSTRAINT_ALIASES",
        '"true_negative_rate_parity": "false_positive_rate_parity",',
        '"true_negative_rate_parity": "true_positive_rate_parity",',
        INTEROP_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "selection_rate='model' keeps the prevalence",
        "_target_rate",
        'if self.selection_rate == "prevalence":',
        'if self.selection_rate in ("prevalence", "model"):',
        INTEROP_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
    Mutant(
        "predict_method='decision_function' bins the raw margin",
        "FederatedThresholdOptimizer._scores",
        "return expit(np.asarray(self.estimator_.decision_function(X), float))",
        "return np.asarray(self.estimator_.decision_function(X), float)",
        INTEROP_TESTS,
        features=("FederatedThresholdOptimizer",),
    ),
]
