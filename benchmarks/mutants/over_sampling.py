"""Mutants of ``skfedida/over_sampling``."""

from ._base import MINIBATCH_TESTS, SAMPLER_TESTS, Mutant

ROSE = ("FairnessAwareROSE",)

MUTANTS = [
    Mutant(
        "undersampling draws with replacement",
        "_resample_groups",
        "rows = rows[random_state.permutation(size)[:n_kept_rows]]",
        "rows = rows[random_state.randint(0, size, size=n_kept_rows)]",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        "a per-subgroup shrinkage dict is ignored",
        "_shrinkages",
        "return {k: given.get(k, 0.0) for k in keys}",
        "return dict.fromkeys(keys, 1.0)",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        'covariance="full" ignores shrinkage',
        "_noise",
        "return scale * (draws @ factor.T) * unit",
        "return (draws @ factor.T) * unit",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        "Silverman's factor with p + 1",
        "_silverman_factor",
        "return (4.0 / ((n_noised + 2) * n_samples)) ** (1.0 / (n_noised + 4))",
        "return (4.0 / ((n_noised + 1) * n_samples)) ** (1.0 / (n_noised + 4))",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        'n_target="group_mean" rounds the group\'s mean down',
        "_subgroup_targets",
        "value = np.round(by_group.sum(axis=2) / np.maximum(n_present, 1))",
        "value = np.floor(by_group.sum(axis=2) / np.maximum(n_present, 1))",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        "a float n_target is a fraction of the smallest subgroup",
        "_subgroup_targets",
        "value = np.round(float(n_target) * counts.max(axis=1))",
        "value = np.round(float(n_target) * np.where(present, counts, np.inf).min(1))",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        '"auto" copies a column when any value is 0 or 1',
        "_noised_columns",
        "binary = ((block == 0.0) | (block == 1.0)).all(axis=0)",
        "binary = ((block == 0.0) | (block == 1.0)).any(axis=0)",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        "kept rows not in their input order",
        "_resample_groups",
        "kept = np.sort(np.concatenate(kept))",
        "kept = np.concatenate(kept)",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        "diag noise scaled by the variance, not the standard deviation",
        "_diagonal_noise",
        "    draws *= scale * std\n    return draws",
        "    draws *= scale * std**2\n    return draws",
        SAMPLER_TESTS,
        features=ROSE,
    ),
    Mutant(
        "no sensitive attributes warns a plain UserWarning",
        "_fit_resample",
        "                InactiveGroupBalancingWarning,\n                stacklevel",
        "                UserWarning,\n                stacklevel",
        (
            *SAMPLER_TESTS,
            "tests/test_warnings.py",
            "tests/test_bad_input_estimators.py",
        ),
        # Raised as a UserWarning it is no SkfedidaWarning either: a filter
        # on the base class no longer reaches it.
        features=("InactiveGroupBalancingWarning", "SkfedidaWarning"),
    ),
    # -- every minibatch of an epoch at once (_minibatches.py) ----------------
    Mutant(
        'per-minibatch "group_mean" counts absent cells in the mean',
        "_subgroup_targets",
        "value = np.round(by_group.sum(axis=2) / np.maximum(n_present, 1))",
        "value = np.round(by_group.sum(axis=2) / n_labels)",
        MINIBATCH_TESTS,
        features=ROSE,
    ),
    Mutant(
        "a short last minibatch's bandwidth uses batch_size",
        "resample_minibatches",
        "batch_of, rows_per_batch = epoch_minibatches(n_samples, batch_size, epochs)",
        "batch_of, rows_per_batch = epoch_minibatches(n_samples, batch_size, epochs)"
        "\n    rows_per_batch = np.full(n_batches, batch_size)",
        MINIBATCH_TESTS,
        features=ROSE,
    ),
    Mutant(
        "per-minibatch resampling ignores undersample=False",
        "_subgroup_sizes",
        "kept = np.minimum(counts, target) if undersample else counts",
        "kept = np.minimum(counts, target)",
        (*SAMPLER_TESTS, *MINIBATCH_TESTS),
        features=ROSE,
    ),
    Mutant(
        "a minibatch of one class is balanced too",
        "resample_minibatches",
        "mixed = (label_counts > 0).sum(axis=1) > 1",
        "mixed = (label_counts > 0).sum(axis=1) > 0",
        MINIBATCH_TESTS,
        features=ROSE,
    ),
    Mutant(
        "per-minibatch noise ignores shrinkage",
        "_noise_scale",
        "scale = (float(sampler.shrinkage) * bandwidth[new_cells // n_cells])[:, None]",
        "scale = bandwidth[new_cells // n_cells][:, None]",
        MINIBATCH_TESTS,
        features=ROSE,
    ),
    Mutant(
        "per-minibatch n_target as a fraction ignores the largest subgroup",
        "_subgroup_targets",
        "value = np.round(float(n_target) * counts.max(axis=1))",
        "value = np.round(float(n_target) * counts.sum(axis=1))",
        (*SAMPLER_TESTS, *MINIBATCH_TESTS),
        features=ROSE,
    ),
]
