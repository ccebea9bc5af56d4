"""Mutants of ``skfedida/estimators``."""

from ._base import ESTIMATOR_TESTS, PENALTY_TESTS, Mutant

MUTANTS = [
    Mutant(
        "group penalty value doubled",
        "skfedida/penalty.py",
        "value = max(value / W, 0.0)",
        "value = max(2.0 * value / W, 0.0)",
        PENALTY_TESTS,
    ),
    Mutant(
        "group penalty gradient: wrong sign of one moment",
        "skfedida/penalty.py",
        "R = np.concatenate((-M[:L, L:].T, M[:L, :L])) * (2.0 / W)",
        "R = np.concatenate((M[:L, L:].T, M[:L, :L])) * (2.0 / W)",
        PENALTY_TESTS,
    ),
    Mutant(
        "individual penalty counts ordered pairs",
        "skfedida/penalty.py",
        "value = 0.5 * ordered.sum() / W",
        "value = ordered.sum() / W",
        PENALTY_TESTS,
    ),
    Mutant(
        "standardized penalty: variance gradient added, not subtracted",
        "skfedida/penalty.py",
        "return ratio, (gradient - ratio * variance_gradient) / variance",
        "return ratio, (gradient + ratio * variance_gradient) / variance",
        PENALTY_TESTS,
    ),
    Mutant(
        "fairness weight doubled in the objective's value",
        "skfedida/_fair_base.py",
        "value += self.fairness * penalty",
        "value += 2.0 * self.fairness * penalty",
        ESTIMATOR_TESTS,
    ),
    Mutant(
        "fairness weight doubled in the objective's gradient",
        "skfedida/_fair_base.py",
        "score_gradient += self.fairness * penalty_gradient",
        "score_gradient += 2.0 * self.fairness * penalty_gradient",
        ESTIMATOR_TESTS,
    ),
    Mutant(
        "L2 term on the intercept too",
        "skfedida/linear_model.py",
        "return [params[0]]",
        "return [params[0], params[1]]",
        ESTIMATOR_TESTS,
    ),
    Mutant(
        "Armijo accepts any decrease",
        "skfedida/_fair_base.py",
        "if trial_value <= value - _ARMIJO * step * squared_norm:",
        "if trial_value <= value:",
        ESTIMATOR_TESTS,
    ),
]
