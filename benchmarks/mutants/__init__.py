"""The mutants of ``benchmarks/mutation.py``, one module per area of the code.

``SUITE`` is the maintained set: every public feature has at least one mutant
(``python benchmarks/mutation.py --coverage`` lists any that has none).
``BLIND`` holds sets written from the source alone, without reading the tests
or the other mutants, to estimate how the suite does against mistakes nobody
wrote a test for.
"""

import re
from pathlib import Path

from . import (
    blind,
    blind2,
    blind3,
    blind4,
    blind5,
    blind6,
    constraints,
    datasets,
    ensemble,
    estimators,
    federated,
    federated_client,
    flower,
    metrics,
    model_selection,
    over_sampling,
    plotting,
    postprocessing,
    preprocessing,
    tree_gate,
)
from ._base import Mutant

__all__ = [
    "BLIND",
    "BLIND_SETS",
    "BY_MODULE",
    "REPLY_KINDS",
    "SUITE",
    "Mutant",
    "public_features",
]

#: The maintained mutants by the module of ``benchmarks/mutants`` listing them.
BY_MODULE = {
    module.__name__.rsplit(".", 1)[-1]: module.MUTANTS
    for module in (
        metrics,
        federated,
        federated_client,
        flower,
        estimators,
        ensemble,
        constraints,
        tree_gate,
        over_sampling,
        model_selection,
        preprocessing,
        postprocessing,
        datasets,
        plotting,
    )
}
SUITE = [mutant for listed in BY_MODULE.values() for mutant in listed]
#: Sets written from the source alone, without reading the tests: the first
#: before the tests of issue 32 were written, the second after them, the third
#: after the tests for the second set's survivors, the fourth after the third
#: set's survivors were tested and while every validation check was audited,
#: the fifth after that audit (its writer knew which lines were mutated), the
#: sixth after the audit of every branch of a compound condition.
BLIND_SETS = {
    "blind": blind.MUTANTS,
    "blind2": blind2.MUTANTS,
    "blind3": blind3.MUTANTS,
    "blind4": blind4.MUTANTS,
    "blind5": blind5.MUTANTS,
    "blind6": blind6.MUTANTS,
}
BLIND = [mutant for listed in BLIND_SETS.values() for mutant in listed]

#: Every kind of reply a server reads and checks (``skfedida/_gate``).
REPLY_KINDS = (
    "reply:training",
    "reply:evaluation",
    "reply:initialisation",
    "reply:histogram",
    "reply:fairness_report",
    "reply:group_declaration",
    "reply:standard_scaler",
    "reply:min_max_scaler",
    "reply:one_hot_encoder",
    "reply:simple_imputer",
    "reply:tree_bin_edges",
    "reply:tree_histograms",
    "reply:tree_split",
    "reply:tree_leaf_cells",
    "reply:tree_rate_histograms",
    "reply:rate_histograms",
)


def public_features(root):
    """Every name the API reference lists, then every reply kind."""
    text = (Path(root) / "doc" / "api.rst").read_text(encoding="utf-8")
    names = []
    for block in re.split(r"\n(?=\.\. currentmodule::)", text):
        found = re.findall(r"^   ([A-Za-z_][\w.]*)$", block, flags=re.M)
        names += [name.rsplit(".", 1)[-1] for name in found]
    return [*names, *REPLY_KINDS]
