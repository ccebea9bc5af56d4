"""Mutants of ``skfedida/estimators``: the penalties and the fair estimators."""

from ._base import ESTIMATOR_TESTS, PENALTY_TESTS, Mutant

LR = "FairPenaltyLogisticRegression"
MLP = "FairMLPClassifier"
BOTH = (LR, MLP)
MULTICLASS_TESTS = ("tests/test_multiclass.py",)
WARNING_TESTS = ("tests/test_warnings.py", "tests/test_fair_estimators.py")
SCALE_TESTS = ("tests/test_bad_input_estimators.py",)
GUARD_TESTS = ("tests/test_guard_estimators.py",)

MUTANTS = [
    # -- the penalties (penalty.py) ------------------------------------------
    Mutant(
        "group penalty value doubled",
        "_group_1d",
        "value = max(value / W, 0.0)",
        "value = max(2.0 * value / W, 0.0)",
        PENALTY_TESTS,
        features=("group_penalty", "standardized_group_penalty"),
    ),
    Mutant(
        "group penalty gradient: wrong sign of one moment",
        "_group_1d",
        "R = np.concatenate((-M[:L, L:].T, M[:L, :L])) * (2.0 / W)",
        "R = np.concatenate((M[:L, L:].T, M[:L, :L])) * (2.0 / W)",
        PENALTY_TESTS,
        features=("group_penalty", "standardized_group_penalty"),
    ),
    Mutant(
        "individual penalty counts ordered pairs",
        "_individual_1d",
        "value = 0.5 * ordered.sum() / W",
        "value = ordered.sum() / W",
        PENALTY_TESTS,
        features=("individual_penalty",),
    ),
    Mutant(
        "individual penalty gradient: other groups' sum added",
        "_individual_1d",
        "slope.ravel()[index] * scores - offset.ravel()[index]",
        "slope.ravel()[index] * scores + offset.ravel()[index]",
        PENALTY_TESTS,
        features=("individual_penalty",),
    ),
    Mutant(
        "standardized penalty: variance gradient added, not subtracted",
        "_standardized_1d",
        "return ratio, (gradient - ratio * variance_gradient) / variance",
        "return ratio, (gradient + ratio * variance_gradient) / variance",
        PENALTY_TESTS,
        features=("standardized_group_penalty",),
    ),
    Mutant(
        "standardized penalty: variance around the overall mean, not the label's",
        "_standardized_1d",
        "residual = scores - label_mean[labels]",
        "residual = scores - np.average(scores, weights=weight)",
        PENALTY_TESTS,
        features=("standardized_group_penalty",),
    ),
    Mutant(
        "penalties ignore the row weights in the group sizes",
        "_Cells.__init__",
        "self.weight = np.ones(n_rows) if sample_weight is None else sample_weight",
        "self.weight = np.ones(n_rows)",
        PENALTY_TESTS,
        features=("group_penalty", "individual_penalty", "standardized_group_penalty"),
    ),
    Mutant(
        "pair weights normalised by ordered pairs",
        "_pair_normaliser",
        "return 0.5 * (totals.sum() ** 2 - np.dot(totals, totals)), totals",
        "return totals.sum() ** 2 - np.dot(totals, totals), totals",
        PENALTY_TESTS,
        features=("group_penalty", "individual_penalty"),
    ),
    Mutant(
        "class_weight ignored in the multi-class penalty's value",
        "_columns",
        "value += class_weight[column] * column_value",
        "value += column_value",
        PENALTY_TESTS,
        features=("group_penalty", "individual_penalty"),
    ),
    Mutant(
        "row weights left out of the penalty's gradient",
        "_columns",
        "    if sample_weight is not None:\n        gradient = gradient * (",
        "    if False:\n        gradient = gradient * (",
        PENALTY_TESTS,
        features=("group_penalty", "individual_penalty"),
    ),
    # -- the objective and training (_fair_base.py) --------------------------
    Mutant(
        "fairness weight doubled in the objective's value",
        "BaseFairClassifier._objective",
        "value += self.fairness * penalty",
        "value += 2.0 * self.fairness * penalty",
        ESTIMATOR_TESTS,
        features=BOTH,
    ),
    Mutant(
        "fairness weight doubled in the objective's gradient",
        "BaseFairClassifier._objective",
        "score_gradient += self.fairness * penalty_gradient",
        "score_gradient += 2.0 * self.fairness * penalty_gradient",
        ESTIMATOR_TESTS,
        features=BOTH,
    ),
    Mutant(
        "Armijo accepts any decrease",
        "BaseFairClassifier._armijo_step",
        "if trial_value <= value - ARMIJO * step * squared_norm:",
        "if trial_value <= value:",
        ESTIMATOR_TESTS,
        features=BOTH,
    ),
    Mutant(
        "weighted log-loss divided by the row count, not the weights' sum",
        "BaseFairClassifier._objective",
        "y, weight, total = batch.y, batch.weight, batch.weight_sum or 1.0",
        "y, weight, total = batch.y, batch.weight, batch.y.shape[0] or 1.0",
        ESTIMATOR_TESTS,
        features=BOTH,
    ),
    Mutant(
        "multi-class penalty taken of the logits uncentred",
        "_centred_logits",
        "    return scores - scores.mean(axis=1, keepdims=True)\n",
        "    return scores\n",
        MULTICLASS_TESTS,
        features=BOTH,
    ),
    Mutant(
        "predict_log_proba's columns swapped",
        "predict_log_proba",
        "[-np.logaddexp(0.0, scores), -np.logaddexp(0.0, -scores)]",
        "[-np.logaddexp(0.0, -scores), -np.logaddexp(0.0, scores)]",
        ESTIMATOR_TESTS,
        features=BOTH,
    ),
    Mutant(
        "SensitiveFeaturesWarning only for more groups than rows",
        "_groups_of",
        "groups.n_groups > max(n_samples // 2, 1)",
        "groups.n_groups > max(n_samples, 1)",
        WARNING_TESTS,
        features=("SensitiveFeaturesWarning",),
    ),
    Mutant(
        "no InactivePenaltyWarning for a single group",
        "_groups_of",
        "if warn and groups.n_groups < 2 and levers:",
        "if warn and groups.n_groups < 1 and levers:",
        WARNING_TESTS,
        features=("InactivePenaltyWarning",),
    ),
    Mutant(
        "DataScaleWarning for a network only when every feature is too large",
        "warn_if_unscaled",
        "if largest is not None and scale.size and scale.max() > largest:",
        "if largest is not None and scale.size and scale.min() > largest:",
        GUARD_TESTS,
        features=("DataScaleWarning", MLP),
    ),
    Mutant(
        "DataScaleWarning's scale ratio a hundred times too lax",
        "_SCALE_RATIO",
        "_SCALE_RATIO = 1e4",
        "_SCALE_RATIO = 1e6",
        GUARD_TESTS,
        features=("DataScaleWarning",),
    ),
    # -- the logistic model (linear_model.py) --------------------------------
    Mutant(
        "L2 term on the intercept too",
        "FairPenaltyLogisticRegression._penalised",
        "return [params[0]]",
        "return [params[0], params[1]]",
        ESTIMATOR_TESTS,
        features=(LR,),
    ),
    Mutant(
        "fit ignores tol",
        "FairPenaltyLogisticRegression.fit",
        '"gtol": self.tol,',
        '"gtol": 1e-6,',
        GUARD_TESTS,
        features=(LR,),
    ),
    Mutant(
        "fit ignores warm_start",
        "FairPenaltyLogisticRegression.fit",
        '                self.warm_start\n                and hasattr(self, "coef_")',
        '                False\n                and hasattr(self, "coef_")',
        GUARD_TESTS,
        features=(LR,),
    ),
    Mutant(
        "partial_fit's compiled steps ignore alpha",
        "FairPenaltyLogisticRegression._compiled_steps",
        "            float(self.alpha),\n            PENALTY_CODES[self.penalty],",
        "            0.0,\n            PENALTY_CODES[self.penalty],",
        ("tests/test_sgd_compiled.py",),
        features=(LR,),
    ),
    Mutant(
        "huge columns' coefficients not scaled back from their units",
        "unpack",
        "coef = theta[:n_coef].reshape(n_outputs, n_features) / units",
        "coef = theta[:n_coef].reshape(n_outputs, n_features)",
        SCALE_TESTS,
        features=(LR,),
    ),
    # -- the network (neural_network.py) -------------------------------------
    Mutant(
        "Glorot factors of logistic and other activations swapped",
        "FairMLPClassifier._initial_parameters",
        'factor = 2.0 if self.activation == "logistic" else 6.0',
        'factor = 6.0 if self.activation == "logistic" else 2.0',
        GUARD_TESTS,
        features=(MLP,),
    ),
    Mutant(
        "Adam without bias correction",
        "_Adam.step",
        "correction = np.sqrt(1 - self.beta_2**self.t) / (1 - self.beta_1**self.t)",
        "correction = 1.0",
        GUARD_TESTS,
        features=(MLP,),
    ),
    Mutant(
        "tanh derivative taken as 1 - a",
        "_ACTIVATIONS",
        '"tanh": (np.tanh, lambda z, a: 1.0 - a**2),',
        '"tanh": (np.tanh, lambda z, a: 1.0 - a),',
        ESTIMATOR_TESTS,
        features=(MLP,),
    ),
    Mutant(
        "early stopping keeps the last epoch, not the best",
        "FairMLPClassifier.fit",
        "        if best_params is not None:\n            params = best_params\n",
        "",
        GUARD_TESTS,
        features=(MLP,),
    ),
    Mutant(
        "n_iter_no_change needs one more stalled epoch",
        "FairMLPClassifier.fit",
        "if stalled >= self.n_iter_no_change:",
        "if stalled > self.n_iter_no_change:",
        GUARD_TESTS,
        features=(MLP,),
    ),
    # -- groups and inputs (_groups.py, _validation.py) -----------------------
    Mutant(
        "compact numbers the present groups from 1",
        "SensitiveGroups.compact",
        "lookup = np.cumsum(present, dtype=np.intp) - 1\n        labels = tuple(",
        "lookup = np.cumsum(present, dtype=np.intp)\n        labels = tuple(",
        ("tests/test_groups.py",),
        features=BOTH,
    ),
    Mutant(
        "negative sample weights accepted",
        "sample_weight_of",
        "and not (sample_weight < 0).any()",
        "and True",
        GUARD_TESTS,
        features=BOTH,
    ),
]

# -- issue 34: the entries for checked rows ------------------------------------
CHECKED_TESTS = ("tests/_models/test_checked_entries.py",)
MUTANTS += [
    Mutant(
        "train_epochs runs averaged epochs in one loop call",
        "_train_epochs",
        "            or self.average\n",
        "",
        CHECKED_TESTS,
        features=BOTH,
    ),
    Mutant(
        "train_minibatches trains on X's rows in order, not on rows",
        "steps",
        "                average=False,\n                order=rows,",
        "                average=False,\n                order=None,",
        CHECKED_TESTS,
        features=BOTH,
    ),
]

# -- issue 35: the HTML repr's documentation links -----------------------------
MUTANTS += [
    Mutant(
        "the HTML repr links a class to its private module's page",
        "public_module",
        "            return module.__name__\n",
        "            return None\n",
        ("tests/test_project.py",),
        features=("FairPenaltyLogisticRegression",),
    ),
]
