"""Neural networks with the fairness penalty on their logits.

The estimator is defined with the other fairness-penalised classifiers in
``skfedida._models`` (their shared base, penalties and compiled loops); this
module is where users import it from.
"""

from ._models._mlp import FairMLPClassifier

__all__ = ["FairMLPClassifier"]
