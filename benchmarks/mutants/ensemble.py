"""Mutants of ``skfedida/ensemble`` (issue 36: boosted trees with the penalty)."""

from ._base import Mutant

ENSEMBLE_TESTS = (
    "tests/ensemble/test_boosting.py",
    "tests/ensemble/test_fair_hist_gradient_boosting.py",
)
BOOSTING = "skfedida/ensemble/_boosting.py"
GROWING = "skfedida/ensemble/_growing.py"
FEATURES = ("FairHistGradientBoostingClassifier",)

MUTANTS = [
    Mutant(
        "a client's histogram counts are not added to the others'",
        GROWING,
        '    for field in ("sum_gradients", "sum_hessians", "count"):',
        '    for field in ("sum_gradients", "sum_hessians"):',
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the trees are fitted without the penalty's gradient",
        BOOSTING,
        "            self.gradients += extra.astype(G_H_DTYPE)\n",
        "            pass\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "a cell's penalty gradient is not per unit of weight",
        BOOSTING,
        "    out[present] = gradient / rep_weight\n",
        "    out[present] = gradient\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the leaves keep the log-loss's step, ignoring the penalty's curvature",
        BOOSTING,
        "    system += scale * np.asarray(curvature, dtype=np.float64)\n",
        "    system += 0.0 * np.asarray(curvature, dtype=np.float64)\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the penalised leaves are not shrunk by the learning rate",
        BOOSTING,
        "            leaf.value = learning_rate * float(value)\n",
        "            leaf.value = float(value)\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the baseline ignores the clients' weights",
        BOOSTING,
        "[np.dot(self.row_weight, self.y), self.row_weight.sum()]",
        "[self.y.sum(), float(self.n_samples)]",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
]
MUTANTS += [
    Mutant(
        "the leaves' curvature is not per unit of the cells' weight",
        BOOSTING,
        "        products[leaf, present] = gradient / rep_weight\n",
        "        products[leaf, present] = gradient\n",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
]
MUTANTS += [
    Mutant(
        "the penalised fit reads the categorical flags in the frame's order",
        "skfedida/ensemble/_gradient_boosting.py",
        "else np.asarray(self._is_categorical_remapped, dtype=np.uint8)",
        "else np.asarray(self.is_categorical_, dtype=np.uint8)",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the clients' histograms of features outside a constraint set are added",
        GROWING,
        "slice(None) if features is None else np.asarray(features, dtype=np.intp)",
        "slice(None)",
        ENSEMBLE_TESTS,
        features=FEATURES,
    ),
]

# -- federated bin edges --------------------------------------------------------
BINNING = "skfedida/ensemble/_binning.py"
BINNING_TESTS = ("tests/ensemble/test_binning.py",)
MUTANTS += [
    Mutant(
        "a bisection pivot is the mean of the keys, overflowing across zero",
        BINNING,
        "        mid = lo // 2 + hi // 2 + (lo % 2 + hi % 2) // 2\n",
        "        mid = (lo + hi) // 2\n",
        BINNING_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "an order statistic is the largest value below its rank",
        BINNING,
        "        enough = counts >= ranks + 1\n",
        "        enough = counts > ranks + 1\n",
        BINNING_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "the midpoints path takes features with one value more than max_bins",
        BINNING,
        "        if distinct.size <= max_bins:\n",
        "        if distinct.size <= max_bins + 1:\n",
        BINNING_TESTS,
        features=FEATURES,
    ),
]
MUTANTS += [
    Mutant(
        "the midpoints path keeps duplicate and infinite edges",
        BINNING,
        '                return "edges", _finished(\n',
        '                return "edges", np.asarray(\n',
        BINNING_TESTS,
        features=FEATURES,
    ),
    Mutant(
        "an integer percentile position reads the next value, not the previous",
        BINNING,
        "    below = np.where(half, above - 1, np.maximum(above - 1, 0))\n",
        "    below = np.where(half, above - 1, above)\n",
        BINNING_TESTS,
        features=FEATURES,
    ),
]
