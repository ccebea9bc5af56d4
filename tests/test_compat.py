"""skfedida._compat: scikit-learn's private helpers, and the cached names."""

import inspect

import pytest
from sklearn.base import clone

from skfedida.linear_model import FairPenaltyLogisticRegression
from skfedida.neural_network import FairMLPClassifier
from skfedida.over_sampling import FairnessAwareROSE


@pytest.mark.parametrize(
    "cls", [FairPenaltyLogisticRegression, FairMLPClassifier, FairnessAwareROSE]
)
def test_cached_parameter_names_are_scikit_learns(cls):
    expected = sorted(
        name for name in inspect.signature(cls.__init__).parameters if name != "self"
    )
    assert cls._get_param_names() == expected
    # A list the caller may change without changing the next call's.
    cls._get_param_names().append("changed")
    assert cls._get_param_names() == expected


def test_each_class_keeps_its_own_parameter_names():
    # The cache is per class: a subclass with another signature gets its own
    # names, and get_params, set_params and clone see them.
    class Tuned(FairPenaltyLogisticRegression):
        def __init__(self, *, fairness=1.0, extra=3):
            super().__init__(fairness=fairness)
            self.extra = extra

    assert Tuned._get_param_names() == ["extra", "fairness"]
    assert FairPenaltyLogisticRegression._get_param_names() != ["extra", "fairness"]
    model = clone(Tuned(extra=5).set_params(fairness=2.0))
    assert model.get_params() == {"extra": 5, "fairness": 2.0}
