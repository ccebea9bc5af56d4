"""What a mutant is, and the test files that cover each area of the code.

A mutant's ``tests`` are the files that cover the code it changes: the runner
runs them first and the whole suite only when they pass, so a mutant costs
seconds when a focused test kills it and the suite's time only when none does.
"""

from dataclasses import dataclass

from ._locate import locate


@dataclass(frozen=True)
class Mutant:
    #: The mistake, said as a user would see it.
    name: str
    #: The qualified name of the function, method or class it changes
    #: (``"TreeChannel._round"``): ``_locate.py`` finds its file.
    where: str
    #: Text that occurs exactly once in that definition, and what replaces it.
    original: str
    mutated: str
    #: The test files that cover the changed code (run first).
    tests: tuple
    #: The public features (names in ``doc/api.rst``, or ``reply:<kind>``)
    #: whose behaviour the mutant changes.
    features: tuple = ()
    #: Why it cannot be caught, when it is equivalent to the original.
    equivalent: str = ""

    @property
    def path(self):
        """The file that now holds the definition, from the project root."""
        return locate(self.where).path


METRICS_TESTS = (
    "tests/test_mutants.py",
    "tests/test_metrics.py",
    "tests/test_scorers.py",
)
SAMPLER_TESTS = ("tests/test_mutants.py", "tests/test_over_sampling.py")
MINIBATCH_TESTS = ("tests/test_minibatch_resampling.py",)
PENALTY_TESTS = (
    "tests/test_penalty.py",
    "tests/test_penalty_large_k.py",
    "tests/test_operating_point.py",
)
FEDERATED_TESTS = (
    "tests/test_mutants.py",
    "tests/test_federated.py",
    "tests/test_determinism.py",
    "tests/test_operating_point.py",
)
SELECTION_TESTS = (
    "tests/test_mutants.py",
    "tests/test_model_selection.py",
    "tests/test_operating_point.py",
)
EVALUATION_TESTS = (
    "tests/test_mutants.py",
    "tests/test_operating_point.py",
    "tests/test_federated.py",
)
ESTIMATOR_TESTS = (
    "tests/test_mutants.py",
    "tests/test_fair_estimators.py",
    "tests/test_operating_point.py",
)
GATE_TESTS = (
    "tests/test_reply_gate.py",
    "tests/test_reply_gate_variants.py",
    "tests/test_preprocessing.py",
)
OPERATING_POINT_TESTS = (
    "tests/test_mutants.py",
    "tests/test_operating_point.py",
    "tests/test_exact_operating_point.py",
)
