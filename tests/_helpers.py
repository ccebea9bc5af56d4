"""Helpers shared by several test modules (shared fixtures are in conftest.py)."""

import numpy as np
import pandas as pd

from skfedida.datasets import make_federated_classification
from skfedida.federated import FederatedEstimator, get_parameters
from skfedida.linear_model import FairPenaltyLogisticRegression

# Groups that differ in prevalence and in feature means (so features are proxies).
PROXY_GROUPS = dict(
    n_features=5, prevalence=[0.4, 0.3, 0.2, 0.1], group_shift=1.0, class_sep=1.5
)


def make_federation(n=600, n_clients=3, seed=0, *, frame=True, **generator_options):
    """X, y, clients, S of ``make_federated_classification``.

    ``generator_options`` go to the generator unchanged. S is a DataFrame of
    the sensitive attributes (the generator's own with ``as_frame=True``), or
    with ``frame=False`` one 2-D array of them.
    """
    data = make_federated_classification(
        n, n_clients=n_clients, random_state=seed, **generator_options
    )
    S = data.sensitive
    if not isinstance(S, pd.DataFrame):
        S = pd.DataFrame(S) if frame else np.column_stack(list(S.values()))
    return data.data, data.target, data.clients, S


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


def skip_records(fitted, *fields):
    """Per fit, its skip records as tuples of ``fields`` (None where absent)."""
    return [
        [tuple(r.get(name) for name in fields) for r in f.history_ if "skipped" in r]
        for f in fitted
    ]


def partition_loader(data):
    """A Flower ``load_data``: partition K holds the rows of client K."""

    def load_data(context):
        rows = data.clients == context.node_config["partition-id"]
        return {
            "X": data.data[rows],
            "y": data.target[rows],
            "sensitive_features": {
                name: values[rows] for name, values in data.sensitive.items()
            },
        }

    return load_data


class RewritingClientApp:
    """A real ClientApp whose replies one partition rewrites (a hostile client).

    ``rewrite(content)`` changes the reply's RecordDict in place for the
    messages of ``message_type`` that partition ``partition`` answers.
    """

    def __init__(self, app, rewrite, message_type="train", partition=2):
        self.app, self.rewrite = app, rewrite
        self.message_type, self.partition = message_type, partition

    def __call__(self, message, context):
        reply = self.app(message=message, context=context)
        if (
            context.node_config["partition-id"] == self.partition
            and message.metadata.message_type == self.message_type
        ):
            self.rewrite(reply.content)
        return reply


def small_federation(estimator=None, **options):
    """A seeded federation of one round of one epoch (the fair LR by default)."""
    options = {"n_rounds": 1, "local_epochs": 1, "random_state": 0, **options}
    if estimator is None:
        estimator = FairPenaltyLogisticRegression(fairness=1.0)
    return FederatedEstimator(estimator, **options)


def hostile_on_flower(
    federation,
    data,
    rewrite,
    message_type,
    postprocessor=None,
    *,
    partition=2,
    num_partitions=3,
):
    """``federation`` fitted on Flower in one process, one partition hostile.

    Partition ``partition`` rewrites its replies to ``message_type`` with
    ``rewrite`` (see :class:`RewritingClientApp`); None leaves it honest.
    """
    from skfedida.flower import make_client_app, make_server_app, run_in_process

    app = make_client_app(federation, partition_loader(data))
    if rewrite is not None:
        app = RewritingClientApp(app, rewrite, message_type, partition=partition)
    return run_in_process(
        make_server_app(federation, postprocessor=postprocessor),
        app,
        num_partitions=num_partitions,
    )
