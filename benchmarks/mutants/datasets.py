"""Mutants of ``skfedida/datasets``."""

from ._base import Mutant

DATASETS_TESTS = ("tests/test_datasets.py",)

MUTANTS = [
    Mutant(
        "load_adult(raw=True) keeps the income text among the predictors",
        "_NOT_PREDICTORS",
        '_NOT_PREDICTORS = {*_SENSITIVE, _TARGET, "income", "split", "client"}',
        '_NOT_PREDICTORS = {*_SENSITIVE, _TARGET, "split", "client"}',
        DATASETS_TESTS,
        features=("load_adult",),
    ),
    Mutant(
        "load_adult(as_frame=False) returns every split's sensitive values",
        "_load_arrays",
        "sensitive={name: columns[name][rows] for name in _SENSITIVE},",
        "sensitive={name: columns[name] for name in _SENSITIVE},",
        DATASETS_TESTS,
        features=("load_adult",),
    ),
    Mutant(
        "heterogeneity concentrates the clients' shares instead of spreading them",
        "make_federated_classification",
        "concentration = proportions / heterogeneity",
        "concentration = proportions * heterogeneity",
        DATASETS_TESTS,
        features=("make_federated_classification",),
    ),
    Mutant(
        "every client's groups are drawn with the first client's shares",
        "make_federated_classification",
        'np.searchsorted(cumulative[k], uniforms[rows], side="right")',
        'np.searchsorted(cumulative[0], uniforms[rows], side="right")',
        DATASETS_TESTS,
        features=("make_federated_classification", "make_roc_like"),
    ),
    Mutant(
        "group proportions are not normalised to shares",
        "_per_client_table",
        "        table = table / totals\n",
        "",
        DATASETS_TESTS,
        features=("make_federated_classification", "make_roc_like"),
    ),
    Mutant(
        "make_roc_like lists the genders in the other order than its tables",
        "make_roc_like",
        '"gender": ["Male", "Female"],',
        '"gender": ["Female", "Male"],',
        DATASETS_TESTS,
        features=("make_roc_like",),
    ),
    Mutant(
        "make_roc_like's default size is mistyped",
        "_ROC_N_SAMPLES",
        "_ROC_N_SAMPLES = 7425",
        "_ROC_N_SAMPLES = 7245",
        DATASETS_TESTS,
        features=("make_roc_like",),
    ),
]
