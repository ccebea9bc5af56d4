"""Mutants of ``skfedida/metrics``."""

from ._base import METRICS_TESTS, OPERATING_POINT_TESTS, Mutant

MUTANTS = [
    Mutant(
        "FPR min_group_size counts all rows, not negatives",
        "skfedida/metrics/_fairness.py",
        '"false_positive_rate": ("false_positive", "negative", "n_negative", '
        '"no negatives")',
        '"false_positive_rate": ("false_positive", "negative", "n", "no negatives")',
        METRICS_TESTS,
    ),
    Mutant(
        "difference is max, not max - min",
        "skfedida/metrics/_fairness.py",
        "return float(defined.max() - defined.min())",
        "return float(defined.max())",
        METRICS_TESTS,
    ),
    Mutant(
        "DPR of all-zero rates is 0, not 1",
        "skfedida/metrics/_fairness.py",
        "return 1.0 if highest == 0 else float(defined.min() / highest)",
        "return 0.0 if highest == 0 else float(defined.min() / highest)",
        METRICS_TESTS,
    ),
    Mutant(
        "selection rate ignores sample weights",
        "skfedida/metrics/_fairness.py",
        '"selection_rate": ("predicted", "weight", "n", "empty group")',
        '"selection_rate": ("predicted", "n", "n", "empty group")',
        METRICS_TESTS,
    ),
    Mutant(
        "threshold_at_rate does not interpolate within its bin",
        "skfedida/metrics/_operating_point.py",
        "fraction = 0.0 if inside <= 0 else (above[j] - wanted) / inside",
        "fraction = 0.0",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "score_histogram puts 1.0 in the wrong bin",
        "skfedida/metrics/_operating_point.py",
        "return np.minimum((scores * n_bins).astype(np.intp), n_bins - 1)",
        "return np.minimum((scores * n_bins).astype(np.intp), n_bins - 2)",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "tied rows all selected, not with the probability that meets the rate",
        "skfedida/metrics/_operating_point.py",
        "decisions[self._tied(scores)] = self.tie_probability",
        "decisions[self._tied(scores)] = 1.0",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "narrowing stops at a bin of one float value plus its neighbour",
        "skfedida/metrics/_operating_point.py",
        "if n_rows[j] <= 1 or block_high - block_low <= 1:",
        "if n_rows[j] <= 1 or block_high - block_low <= 2:",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "the first grid leaves out a score of 1.0",
        "skfedida/metrics/_operating_point.py",
        "_TOP = int(ordinal(1.0)) + 1",
        "_TOP = int(ordinal(1.0))",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "set_score_request drops the scorer's sensitive_features request",
        "skfedida/metrics/_scorer.py",
        "if param not in kwargs and alias is not None:",
        "if param not in kwargs and alias is None:",
        OPERATING_POINT_TESTS,
    ),
    Mutant(
        "a threshold scorer guesses the favourable label of string classes",
        "skfedida/metrics/_scorer.py",
        'numeric.dtype.kind in "biuf" and np.isin(numeric, [-1, 0, 1]).all()',
        "True",
        OPERATING_POINT_TESTS,
    ),
]
