"""Mutants of ``skfedida/over_sampling``."""

from ._base import MINIBATCH_TESTS, SAMPLER_TESTS, Mutant

MUTANTS = [
    Mutant(
        "undersampling draws with replacement",
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "rows = rows[random_state.permutation(size)[:target]]",
        "rows = rows[random_state.randint(0, size, size=target)]",
        SAMPLER_TESTS,
    ),
    Mutant(
        "a per-subgroup shrinkage dict is ignored",
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "return {k: given.get(k, 0.0) for k in keys}",
        "return dict.fromkeys(keys, 1.0)",
        SAMPLER_TESTS,
    ),
    Mutant(
        'covariance="full" ignores shrinkage',
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "return scale * (draws @ factor.T) * unit",
        "return (draws @ factor.T) * unit",
        SAMPLER_TESTS,
    ),
    Mutant(
        "Silverman's factor with p + 1",
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "return (4.0 / ((n_noised + 2) * n_samples)) ** (1.0 / (n_noised + 4))",
        "return (4.0 / ((n_noised + 1) * n_samples)) ** (1.0 / (n_noised + 4))",
        SAMPLER_TESTS,
    ),
    Mutant(
        'n_target="group_mean" rounds the group\'s mean down',
        "skfedida/over_sampling/_fairness_aware_rose.py",
        "key: max(round(group_rows[key[0]] / group_cells[key[0]]), 1)",
        "key: max(group_rows[key[0]] // group_cells[key[0]], 1)",
        SAMPLER_TESTS,
    ),
    Mutant(
        'per-minibatch "group_mean" counts absent cells in the mean',
        "skfedida/over_sampling/_minibatches.py",
        "value = np.round(by_group.sum(axis=2) / np.maximum(n_present, 1))",
        "value = np.round(by_group.sum(axis=2) / n_labels)",
        MINIBATCH_TESTS,
    ),
]
