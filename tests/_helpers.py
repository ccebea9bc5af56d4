"""Helpers shared by several test modules."""

from skfedida.federated import get_parameters
from skfedida.linear_model import FairPenaltyLogisticRegression


def assert_same_parameters(a, b):
    """Two fitted estimators hold the same parameters, to the last bit."""
    for p, q in zip(get_parameters(a), get_parameters(b), strict=True):
        assert p.dtype == q.dtype and p.shape == q.shape
        assert p.tobytes() == q.tobytes()


class FailingLogistic(FairPenaltyLogisticRegression):
    """Raises in training (not in its zero-weight initialisation) for some seeds.

    Set ``FailingLogistic.failing_seeds`` to the ``random_state`` values (the
    federation's client seeds) whose clients should fail.
    """

    failing_seeds = frozenset()

    def partial_fit(
        self, X, y, classes=None, *, sensitive_features=None, sample_weight=None
    ):
        if sample_weight is None and self.random_state in self.failing_seeds:
            raise ArithmeticError("simulated client failure")
        return super().partial_fit(
            X,
            y,
            classes,
            sensitive_features=sensitive_features,
            sample_weight=sample_weight,
        )
