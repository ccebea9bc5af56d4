"""Mutants of ``skfedida/preprocessing`` and of the gate's rules for its statistics."""

from ._base import GATE_TESTS, Mutant

PREPROCESSING_TESTS = ("tests/test_preprocessing.py",)
#: One lie at a time against each rule, then the gate's own tests.
_REPLY_TESTS = ("tests/test_guard_preprocessing_replies.py", *GATE_TESTS)

MUTANTS = [
    Mutant(
        "a sparse column's implicit zeros subtract their squared deviations",
        "FederatedStandardScaler._answer",
        "+ implicit * shift**2,",
        "- implicit * shift**2,",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        "a sparse column's implicit zeros add the mean to the sum of deviations",
        "FederatedStandardScaler._answer",
        "- implicit * shift,",
        "+ implicit * shift,",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        "a sparse column's implicit zeros are not counted",
        "FederatedStandardScaler._answer",
        "n = np.array([values.size + implicit for values, implicit in columns])",
        "n = np.array([values.size for values, implicit in columns])",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        "the scaler's n_samples_seen_ is the largest count of any feature",
        "FederatedStandardScaler._fit_rounds",
        "self.n_samples_seen_ = n[0] if n.min() == n.max() else n",
        "self.n_samples_seen_ = n.max()",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        "a client's minimum of a column with a missing value is NaN",
        "FederatedMinMaxScaler._answer",
        '"min": np.nanmin(X, axis=0),',
        '"min": np.min(X, axis=0),',
        PREPROCESSING_TESTS,
        features=("FederatedMinMaxScaler",),
    ),
    Mutant(
        "the min-max scaler's n_samples_seen_ is the first client's rows",
        "FederatedMinMaxScaler._fit_rounds",
        'self.n_samples_seen_ = int(sum(int(a["n"]) for a in answers))',
        'self.n_samples_seen_ = int(answers[0]["n"])',
        PREPROCESSING_TESTS,
        features=("FederatedMinMaxScaler",),
    ),
    Mutant(
        "the min-max shift leaves out the feature range's minimum",
        "FederatedMinMaxScaler._fit_rounds",
        "self.min_ = feature_range[0] - data_min * self.scale_",
        "self.min_ = -data_min * self.scale_",
        PREPROCESSING_TESTS,
        features=("FederatedMinMaxScaler",),
    ),
    Mutant(
        "the encoder's categories are the first client's",
        "FederatedOneHotEncoder._fit_rounds",
        "union = unique_values(\n"
        '                    np.concatenate([a["categories"][j] for a in answers])\n'
        "                )",
        'union = answers[0]["categories"][j]',
        PREPROCESSING_TESTS,
        features=("FederatedOneHotEncoder",),
    ),
    Mutant(
        "a category's count is the last client's, not the sum",
        "FederatedOneHotEncoder._fit_rounds",
        '                np.add.at(total, positions, answer["counts"][j])\n'
        "            self.categories_.append(union)",
        '                total[positions] = answer["counts"][j]\n'
        "            self.categories_.append(union)",
        PREPROCESSING_TESTS,
        features=("FederatedOneHotEncoder",),
    ),
    Mutant(
        "min_frequency as a share counts the first client's rows",
        "FederatedOneHotEncoder._fit_rounds",
        'n_samples = int(sum(int(a["n"]) for a in answers))',
        'n_samples = int(answers[0]["n"])',
        PREPROCESSING_TESTS,
        features=("FederatedOneHotEncoder",),
    ),
    Mutant(
        "the imputer's median of an even count is the lower middle",
        "_median_rounds",
        "statistics[j] = np.mean(ranks)",
        "statistics[j] = ranks[0]",
        PREPROCESSING_TESTS,
        features=("FederatedSimpleImputer",),
    ),
    Mutant(
        "keep_empty_features fills the empty features the other way round",
        "FederatedSimpleImputer._fit_rounds",
        "statistics[empty] = 0 if self.keep_empty_features else np.nan",
        "statistics[empty] = np.nan if self.keep_empty_features else 0",
        PREPROCESSING_TESTS,
        features=("FederatedSimpleImputer",),
    ),
    Mutant(
        "the missing indicator keeps only features every client misses",
        "FederatedSimpleImputer._fit_rounds",
        'any_missing = np.logical_or.reduce([a["any_missing"] for a in answers])',
        'any_missing = np.logical_and.reduce([a["any_missing"] for a in answers])',
        PREPROCESSING_TESTS,
        features=("FederatedSimpleImputer",),
    ),
    Mutant(
        "most_frequent breaks a tie for the largest value",
        "_most_frequent",
        "statistics.append(union[np.argmax(total)])",
        "statistics.append(union[len(total) - 1 - np.argmax(total[::-1])])",
        PREPROCESSING_TESTS,
        features=("FederatedSimpleImputer",),
    ),
    # -- the gate's rules for the statistics replies --------------------------
    Mutant(
        "a scaler's sums are not checked against its extremes",
        "_standard_scaler",
        '        return sum_within_extremes_problem(n, total, low, high, "its sums")\n'
        "    problem = _same_counts(n, earlier)\n",
        "        return None\n    problem = _same_counts(n, earlier)\n",
        _REPLY_TESTS,
        features=("reply:standard_scaler", "FederatedStandardScaler"),
    ),
    Mutant(
        "a scaler's second round may count other values than its first",
        "_standard_scaler",
        "    problem = _same_counts(n, earlier)\n"
        "    if problem is not None:\n"
        "        return problem\n"
        "    shifted, problem",
        "    shifted, problem",
        _REPLY_TESTS,
        features=("reply:standard_scaler", "FederatedStandardScaler"),
    ),
    Mutant(
        "a scaler's sum of deviations need not be its first sum moved",
        "_standard_scaler",
        "off = np.abs(shifted - expected) > RTOL * n * magnitude + 1e-300",
        "off = np.zeros(shifted.shape, dtype=bool)",
        _REPLY_TESTS,
        features=("reply:standard_scaler", "FederatedStandardScaler"),
    ),
    Mutant(
        "a min-max client may count other rows than it declared",
        "_min_max_scaler",
        "    if rows is not None and n != rows:\n"
        '        return f"it counts {n} rows; it declared {rows}"\n'
        "    # A feature all missing",
        "    # A feature all missing",
        _REPLY_TESTS,
        features=("reply:min_max_scaler", "FederatedMinMaxScaler"),
    ),
    Mutant(
        "a min-max client's minimum may lie above its maximum",
        "_min_max_scaler",
        "    if np.any(low > high):\n"
        '        return "a feature\'s minimum is above its maximum"\n',
        "",
        _REPLY_TESTS,
        features=("reply:min_max_scaler", "FederatedMinMaxScaler"),
    ),
    Mutant(
        "an encoder's category counts may add up to fewer rows",
        "_one_hot_encoder",
        "if column.sum() > n or (auto and column.sum() != n):",
        "if column.sum() > n:",
        _REPLY_TESTS,
        features=("reply:one_hot_encoder", "FederatedOneHotEncoder"),
    ),
    Mutant(
        "an encoder's categories need not be its categories parameter",
        "is_the_parameter",
        "if auto or _same_values(",
        "if True or _same_values(",
        _REPLY_TESTS,
        features=("reply:one_hot_encoder", "FederatedOneHotEncoder"),
    ),
    Mutant(
        "an imputer's missing-value flags need not match its counts",
        "_simple_imputer",
        "if rows is not None and not np.array_equal(missing, n < rows):",
        "if False:",
        _REPLY_TESTS,
        features=("reply:simple_imputer", "FederatedSimpleImputer"),
    ),
    Mutant(
        "an imputer's value counts may add up to fewer values",
        "_simple_imputer",
        "if column.sum() != n[j]:",
        "if column.sum() > n[j]:",
        _REPLY_TESTS,
        features=("reply:simple_imputer", "FederatedSimpleImputer"),
    ),
    Mutant(
        "a median interval's counts leave out the counts below it",
        "_simple_imputer",
        "if count + inside.sum() > n[j]:",
        "if inside.sum() > n[j]:",
        _REPLY_TESTS,
        features=("reply:simple_imputer", "FederatedSimpleImputer"),
    ),
    Mutant(
        "an imputer's object flag need not be the other clients'",
        "_simple_imputer",
        '    if bool(answer["object"]) != bool(is_object):\n'
        "        return \"its 'object' flag is not the other clients'\"\n",
        "",
        _REPLY_TESTS,
        features=("reply:simple_imputer", "FederatedSimpleImputer"),
    ),
]

# -- issue 35: the transformers in an outer Pipeline --------------------------
MUTANTS += [
    Mutant(
        "the federated transformers request no clients",
        "FederatedTransformerMixin",
        '    __metadata_request__fit = {"clients": True}',
        "    __metadata_request__fit = {}",
        ("tests/test_preprocessing.py",),
        features=("FederatedStandardScaler", "FederatedSimpleImputer"),
    ),
    Mutant(
        "the median scaler takes the mean of the clients' statistics",
        "_median_of_clients",
        "present, np.nanmedian(np.where(present, per_value, 0.0), axis=0), 0.0",
        "present, np.nanmean(np.where(present, per_value, 0.0), axis=0), 0.0",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        "a client without values of a feature has a say of 0 in its median",
        "_median_of_clients",
        "    per_value = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)",
        "    per_value = sums / np.maximum(counts, 1)",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        "the median scaler's variance is the pooled one",
        "FederatedStandardScaler._fit_rounds",
        "            var = np.where(n > 0, spread, np.nan)",
        "            var = var",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
]
