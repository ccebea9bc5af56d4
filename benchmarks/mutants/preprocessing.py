"""Mutants of ``skfedida/preprocessing`` and of the gate's rules for its statistics."""

from ._base import Mutant

PREPROCESSING_TESTS = ("tests/test_preprocessing.py",)

MUTANTS = [
    Mutant(
        "a sparse column's implicit zeros subtract their squared deviations",
        "skfedida/preprocessing/_data.py",
        "+ implicit * shift**2,",
        "- implicit * shift**2,",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
    Mutant(
        "a sparse column's implicit zeros add the mean to the sum of deviations",
        "skfedida/preprocessing/_data.py",
        "- implicit * shift,",
        "+ implicit * shift,",
        PREPROCESSING_TESTS,
        features=("FederatedStandardScaler",),
    ),
]
