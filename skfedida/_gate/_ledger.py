"""What each client has claimed about each set of its rows, kept and held to."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class ClientLedger:
    """What each client has claimed about each set of its rows.

    A client's rows are a few fixed sets (``"rows"``: all it loaded,
    ``"train"``, ``"held_out"``, ``"eval"``); what it first claims about one
    (its size, its rows per label, its rows per group and label) is kept,
    and every later claim about the same set, in another round or another
    kind of reply, must agree.
    """

    def __init__(self):
        self._claims = {}

    def declare(self, k, rowset, rows):
        """The size of a set of rows, as declared when the client joined."""
        self._claims.setdefault((k, rowset), {})["rows"] = int(rows)

    def rows(self, k, rowset):
        """The declared size of a set of rows (None if never declared)."""
        return self._claims.get((k, rowset), {}).get("rows")

    def declare_groups(self, k, rowset, rows):
        """The groups of a set of rows and their sizes, declared at initialisation.

        ``rows`` maps each group label (a tuple) to its rows in the set;
        groups without rows are dropped. Every later reply about the set
        (FairFed reports, histograms) may count rows only in these groups,
        exactly as many in each.
        """
        self._claims.setdefault((k, rowset), {})["declared_groups"] = {
            tuple(label): int(n) for label, n in rows.items() if int(n) > 0
        }

    def declared_groups(self, k, rowset):
        """A set's declared rows per group (None if it declared none)."""
        return self._claims.get((k, rowset), {}).get("declared_groups")

    def claim(self, k, rowset, *, labels=None, groups=None):
        """Check a claim against earlier ones; keep it. Returns the problem.

        ``labels``: rows per label (an array); ``groups``: rows per label of
        each group, a dict from group label to array (groups without rows
        may be left out).
        """
        known = self._claims.setdefault((k, rowset), {})
        what = {
            "rows": "its rows",
            "train": "its training rows",
            "held_out": "its held-out rows",
            "eval": "its evaluation rows",
        }.get(rowset, rowset)
        if labels is not None:
            labels = np.asarray(labels, dtype=np.int64)
            before = known.get("labels")
            if before is not None and not np.array_equal(before, labels):
                return (
                    f"it counts {labels.tolist()} rows per label in {what}; it "
                    f"counted {before.tolist()} in an earlier reply"
                )
        if groups is not None:
            groups = {
                tuple(label): np.asarray(values, dtype=np.int64)
                for label, values in groups.items()
                if np.any(values)
            }
            problem = self._declared_problem(known, groups, what)
            if problem is not None:
                return problem
            before = known.get("groups")
            if before is not None and (
                set(before) != set(groups)
                or any(not np.array_equal(before[g], groups[g]) for g in groups)
            ):
                return (
                    f"its rows per group and label in {what} differ from those "
                    "of an earlier reply"
                )
        if labels is not None:
            known["labels"] = labels
        if groups is not None:
            known["groups"] = groups
        return None

    @staticmethod
    def _declared_problem(known, groups, what):
        """Rows per group against those declared at initialisation."""
        declared = known.get("declared_groups")
        if declared is None:
            return (
                f"it counts rows per sensitive group in {what}, and declared no "
                "groups for them at initialisation"
            )
        for label, values in groups.items():
            if label not in declared:
                return (
                    f"it counts {int(values.sum())} rows of group {list(label)} "
                    f"in {what}, a group it did not declare at initialisation "
                    f"(its groups: {[list(g) for g in declared]})"
                )
        for label, values in groups.items():
            if int(values.sum()) != declared[label]:
                return (
                    f"it counts {int(values.sum())} rows of group {list(label)} "
                    f"in {what}; it declared {declared[label]} at initialisation"
                )
        missing = [list(g) for g in declared if g not in groups]
        if missing:
            return (
                f"it counts no rows of groups {missing} in {what}; it declared "
                "rows of them at initialisation"
            )
        return None


@dataclass(frozen=True)
class DeclaredRows:
    """A client's sets of rows and their sizes, from what it declared.

    ``sizes`` maps each set (``rows``, ``train``, and ``held_out`` / ``eval``
    where it has them) to its rows; ``evaluation`` and ``reports`` name the
    set its evaluation and its fairness reports count.
    """

    sizes: dict
    evaluation: str
    reports: str


def declared_sets(n_rows, n_eval_rows, validation_fraction):
    """A client's sets of rows and their sizes, from what it declared.

    ``n_rows``: the rows it loaded; ``n_eval_rows``: its evaluation rows
    (None when it has none, and evaluates on its held-out rows or else its
    training rows). The split is ``_split_client``'s: ``ceil(fraction * n)``
    rows held out. Returns a ``DeclaredRows``.
    """
    held_out = (
        0 if validation_fraction is None else math.ceil(validation_fraction * n_rows)
    )
    sizes = {"rows": n_rows, "train": n_rows - held_out}
    if held_out:
        sizes["held_out"] = held_out
    if n_eval_rows is not None:
        sizes["eval"] = n_eval_rows
        evaluation = "eval"
    else:
        evaluation = "held_out" if held_out else "train"
    reports = "held_out" if held_out and n_eval_rows is None else "train"
    return DeclaredRows(sizes, evaluation, reports)
