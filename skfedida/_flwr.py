"""Flower's per-process task identity, for messages built outside a Flower run.

``flwr.app.Message()`` reads the run, node and task ids of the process it is
built in. The in-process grid (``skfedida.flower``) builds every node's
messages in one process, and a Flower strategy used as a federation's
aggregation (``skfedida.federated``) builds its reply messages outside any
run: both set the identity here, and restore it after. Importing this module
imports Flower (an optional dependency): import it where Flower is used.
"""

import contextlib

from flwr.supercore.task_identity import TaskIdentity


@contextlib.contextmanager
def task_identity(run_id, node_id, task_id):
    """Set Flower's per-process task identity for a block, then restore it.

    Parameters
    ----------
    run_id, node_id, task_id : int
        The ids ``Message()`` reads while the block runs.

    Yields
    ------
    None
        Inside the block the identity is set.
    """
    saved = tuple(_current(name) for name in _IDS)
    TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = (
        run_id,
        node_id,
        task_id,
    )
    try:
        yield
    finally:
        # None (unset) is restored through the same public setters.
        TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = saved


_IDS = ("run_id", "node_id", "task_id")


def _current(name):
    """The identity's ``name`` id, or None where this process has not set it."""
    try:
        return getattr(TaskIdentity, name)
    except RuntimeError:  # Flower's getters refuse an unset id
        return None
