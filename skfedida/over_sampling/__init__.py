"""Samplers that balance (sensitive group, outcome) subgroups.

As imbalanced-learn's ``imblearn.over_sampling``: one module per sampler,
each an imbalanced-learn sampler usable in its Pipeline.
"""

from ._fairness_aware_rose import FairnessAwareROSE

__all__ = ["FairnessAwareROSE"]
