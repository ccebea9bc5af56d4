"""A federation's plan: what its clients and server run, outside ``fit``.

``FederatedEstimator.fit`` runs clients and server in one process. A Flower
deployment (``skfedida.flower``) runs them apart, and needs the same steps:
the checks and split of a client's rows, its trainer and seeds, one client
round, the held-out metrics, the server's client selection and aggregator,
and the fitted estimator it reports. ``FederatedEstimator._plan`` builds this
object, the one entry point through which other code reaches those steps, so
the Flower apps call no private method of the estimator.
"""

from __future__ import annotations

import numpy as np

from .._compat import safe_indexing
from .._gate._history import ordered_records
from .._groups import check_sendable_labels, encode_groups
from ..exceptions import (
    warn_if_outlying_updates,
)
from ..metrics._registry import PERSONAL_PREFIX, VALIDATION_PREFIX
from ..preprocessing._base import client_answer, fitted_tree
from ._aggregation import check_aggregation
from ._client import (
    PERSONAL_METRICS,
    _client_round,
    _client_seeds,
    _ClientData,
    _reporting_client_round,
    _round_seed,
    _split_client,
    _validation_metrics,
    clone_fitted,
)
from ._client import selection_stream as _selection_stream
from ._constraint_rounds import (
    FederatedConstraint,
    client_rate_histograms,
    federation_groups,
)
from ._parameters import assign_parameters
from ._pipeline import drop_columns, placeholder_rows
from ._privacy import privacy_report, updates_bounded


class _ClientPart:
    """One client's prepared rows: training data, evaluation rows, epochs, classes.

    ``train`` and ``evaluation`` are ``_ClientData`` (rows, labels, groups).
    """

    def __init__(self, train, evaluation, epochs, classes, partition, has_eval_rows):
        self.train = train
        self.evaluation = evaluation
        # Evaluation rows of its own (X_eval), not its held-out or training rows.
        self.has_eval_rows = has_eval_rows
        self.n_evaluation = evaluation.n
        self.epochs = epochs
        self.classes = classes
        self.partition = partition


class FederationPlan:
    """The steps of one federation's clients and server, with its parameters.

    Parameters
    ----------
    federation : FederatedEstimator
        A validated, unfitted copy (run-time overrides applied); the plan
        fits this copy's input checks (``n_features_in_``) as a client reads
        its rows, and returns it fitted from :meth:`fitted`.
    pipeline : PipelineFederation, default=None
        For a federation whose estimator is a Pipeline: its preprocessing
        (fitted from statistics rounds first) and the original federation;
        ``federation`` is then the inner federation of the final estimator.
    """

    def __init__(self, federation, pipeline=None):
        self.federation = federation
        self.pipeline = pipeline

    # -- federated preprocessing -------------------------------------------------

    @property
    def preprocessing(self):
        """The Pipeline's transformers (None without preprocessing)."""
        return None if self.pipeline is None else self.pipeline.preprocessing

    def statistics_answer(self, loaded, states, query):
        """This client's answer in a statistics round, from its own raw rows."""
        X_model, _ = self.pipeline.split(loaded["X"], loaded.get("sensitive_features"))
        return client_answer(self.preprocessing, X_model, states, query)

    def _transformed(self, loaded, states):
        """A client's rows through the federation's fitted preprocessing."""
        pipeline = self.pipeline
        fitted = None
        out = dict(loaded)
        for suffix in ("", "_eval"):
            if f"X{suffix}" not in loaded:
                continue
            X_model, S = pipeline.split(
                loaded[f"X{suffix}"], loaded.get(f"sensitive_features{suffix}")
            )
            if fitted is None and self.preprocessing is not None:
                fitted = fitted_tree(self.preprocessing, X_model, states)
            out[f"X{suffix}"] = pipeline.model_inputs(fitted, X_model)
            out[f"sensitive_features{suffix}"] = S
        return out

    # -- the parameters both sides read ----------------------------------------

    @property
    def n_rounds(self):
        return self.federation.n_rounds

    @property
    def strategy(self):
        return self.federation.strategy

    @property
    def on_client_error(self):
        return self.federation.on_client_error

    @property
    def aggregator(self):
        return check_aggregation(self.federation.aggregation)

    @property
    def n_features_in_(self):
        return self.federation.n_features_in_

    @property
    def feature_names_in_(self):
        return getattr(self.federation, "feature_names_in_", None)

    # -- a client ---------------------------------------------------------------

    def client(self, loaded, partition, n_partitions, seed, classes=None, states=None):
        """A client's rows, checked and split as ``fit`` does for client k.

        ``loaded`` maps ``"X"``, ``"y"`` and optionally
        ``"sensitive_features"``, ``"X_eval"``, ``"y_eval"``,
        ``"sensitive_features_eval"`` to this client's rows; with a
        pipeline, they go through the preprocessing fitted with ``states``.
        """
        federation = self.federation
        if self.pipeline is not None:
            loaded = self._transformed(loaded, states)
        X, y, S, S_metrics = federation._validated_rows(
            loaded["X"], loaded["y"], loaded.get("sensitive_features"), reset=True
        )
        classes = self._classes(y, classes, partition)
        epochs = int(federation._client_epochs(n_partitions)[partition])
        train, held_out = _split_client(
            y, federation.validation_fraction, seed, partition
        )
        groups = None if S is None else check_sendable_labels(encode_groups(S))
        train_data = federation._client_data(X, y, S, groups, train)
        if "X_eval" in loaded:
            X_eval, y_eval, _, S_eval = federation._validated_rows(
                loaded["X_eval"],
                loaded["y_eval"],
                loaded.get("sensitive_features_eval"),
                reset=False,
                suffix="_eval",
            )
            evaluation = _ClientData(
                X_eval,
                y_eval,
                None
                if S_eval is None
                else check_sendable_labels(
                    encode_groups(S_eval), "sensitive_features_eval"
                ),
            )
        else:
            rows = train if held_out is None else held_out
            evaluation = _ClientData(
                safe_indexing(X, rows),
                y[rows],
                None
                if S_metrics is None
                else check_sendable_labels(encode_groups(S_metrics)).take(rows),
            )
        if held_out is not None and "X_eval" not in loaded:
            # As in-process: fairness reports (FairFed) on the held-out rows.
            train_data.held_out = evaluation
        return _ClientPart(
            train_data, evaluation, epochs, classes, partition, "X_eval" in loaded
        )

    @staticmethod
    def _classes(y, classes, partition):
        present = np.unique(y)
        if classes is None:
            if present.size < 2:
                raise ValueError(
                    f"Client {partition} has a single class "
                    f"{present.tolist()} in its rows; give make_client_app the "
                    "classes of the whole federation (classes=[...])."
                )
            return present
        classes = np.asarray(classes)
        unknown = np.setdiff1d(present, classes)
        if unknown.size:
            raise ValueError(
                f"Client {partition} has labels {unknown.tolist()} that are "
                f"not in classes={classes.tolist()}."
            )
        return np.unique(classes)

    def _trainer(self, classes, part=None):
        """The client routine; S goes where metadata routing sends it, if on.

        As in ``fit``: with sklearn's metadata routing enabled (in the
        process running this client), the components' requests decide which
        of them get S; otherwise their signatures.
        """
        groups = None if part is None else part.train.groups
        return self.federation._trainer(
            classes, self.federation._sensitive_routing(sensitive_features=groups)
        )

    def initial_estimator(self, part, seed):
        """Client's estimator, seeded and primed on its rows (not yet trained)."""
        return self._trainer(part.classes, part).prime(
            self.federation._client_estimator(seed), part.train
        )

    def train_round(
        self,
        part,
        estimator,
        parameters,
        seed,
        round_,
        proximal_mu=None,
        rate_term=None,
    ):
        """One client round (0-based ``round_``): a ``RoundReply``.

        With an aggregator that needs fairness reports (FairFed), its
        ``report``: the client's counts per group for the global model it got.
        ``proximal_mu``: FedProx's weight the server's message asks for
        (Flower's ``FedProx`` sends it), instead of the federation's own.
        ``rate_term``: the round's rate-constraint term the server sent.
        """
        reporting = self.aggregator.report_metric is not None
        client_round = _reporting_client_round if reporting else _client_round
        trainer = self._trainer(part.classes, part)
        if proximal_mu is not None:
            trainer.proximal_mu = float(proximal_mu)
        trainer.rate_term = rate_term
        return client_round(
            trainer,
            estimator,
            parameters,
            part.train,
            part.epochs,
            _round_seed(seed, round_),
        )

    def evaluate(self, part, estimator, parameters, seed, round_):
        """Held-out metrics of the global model (and, Per-FedAvg, the personal one).

        Returns the ``val_*`` metrics and the model the client would use
        after ``round_`` (1-based) rounds.
        """
        model = assign_parameters(clone_fitted(estimator), parameters)
        evaluation = part.evaluation
        X_eval, y_eval, S_eval = evaluation.X, evaluation.y, evaluation.groups
        metrics = {
            VALIDATION_PREFIX + name: value
            for name, value in _validation_metrics(
                model, X_eval, y_eval, S_eval, part.classes
            ).items()
        }
        if self.strategy == "pfedavg":
            self._personalise(part, model, seed, round_)
            personal = _validation_metrics(model, X_eval, y_eval, S_eval, part.classes)
            for name in PERSONAL_METRICS:
                metrics[PERSONAL_PREFIX + name] = personal[name]
        return metrics, model

    def final_model(self, part, estimator, parameters, seed):
        """The model this client uses after the last round.

        The global one; under Per-FedAvg, its personalised model, as
        ``client_estimators_`` holds it in-process.
        """
        model = assign_parameters(clone_fitted(estimator), parameters)
        if self.strategy == "pfedavg":
            self._personalise(part, model, seed, self.n_rounds)
        return model

    def _personalise(self, part, model, seed, round_):
        # The personalised model this client would use after this round.
        self._trainer(part.classes, part).personalised(
            model, part.train, self.federation.personalization_steps, seed, round_
        )

    def rate_histograms(self, part, estimator, parameters, n_bins):
        """A client's rate-constraint counts of its training rows, and groups."""
        return client_rate_histograms(
            estimator, parameters, part.train, part.classes, n_bins
        )

    # -- the server ---------------------------------------------------------------

    def holds_constraint(self):
        """Whether the server holds a rate constraint over the rounds."""
        return self.federation._server_constraint()

    def server_constraint(self, labels):
        """The server's rate constraint over the clients' groups (None: none)."""
        labels = federation_groups(labels)
        if not self.holds_constraint() or len(labels) < 2:
            return None
        return FederatedConstraint(self.federation.estimator, labels)

    def client_seeds(self, n_clients):
        """Every client's seed, as ``fit`` draws ``client_seeds_``."""
        return _client_seeds(self.federation.random_state, n_clients)

    def selection_stream(self, seeds):
        """The seeded stream that selects each round's clients."""
        return _selection_stream(seeds)

    def template(self, seed, n_features, feature_names, classes):
        """A fitted estimator of the federation's kind, built without client data."""
        return self.federation._template(seed, n_features, feature_names, classes)

    def fitted(
        self,
        *,
        classes,
        client_sizes,
        class_prior,
        seeds,
        n_features,
        feature_names,
        global_parameters,
        history,
        federated_metrics,
        constraint_attributes=None,
    ):
        """The federation, fitted with what the server learnt from its clients."""
        fitted = self.federation
        n_clients = len(client_sizes)
        fitted.classes_ = np.asarray(classes)
        fitted.clients_ = np.arange(n_clients)
        fitted.client_sizes_ = np.asarray(client_sizes)
        # The clients' checked counts, combined by prior_aggregation.
        fitted.class_prior_ = np.asarray(class_prior, dtype=np.float64)
        fitted.client_seeds_ = seeds
        fitted.n_features_in_ = n_features
        if feature_names is not None:
            fitted.feature_names_in_ = np.asarray(feature_names, dtype=object)
        fitted.estimator_ = fitted._global_estimator(global_parameters)
        if constraint_attributes is not None:
            fitted.estimator_.set_params(constraints=fitted.estimator.constraints)
            for name, value in constraint_attributes.items():
                setattr(fitted.estimator_, name, value)
        # Personalised (Per-FedAvg) models stay on their clients.
        fitted.client_estimators_ = {}
        fitted.history_ = ordered_records(history, range(n_clients))
        fitted.federated_metrics_ = federated_metrics
        fitted.privacy_ = privacy_report(fitted.dp, self.n_rounds)
        warn_if_outlying_updates(fitted.history_, bounded=updates_bounded(fitted))
        return fitted


def server_preprocessing(plan, states, columns, dtypes):
    """The fitted preprocessing a server rebuilds, without a row.

    From the federation's ``states`` and a placeholder row of the clients'
    raw columns and dtypes (the federated transformers output only their
    shape there). Returns the fitted preprocessing (None without one) and
    the placeholder row.
    """
    pipeline = plan.pipeline
    placeholder = placeholder_rows(columns, dtypes)
    if pipeline.preprocessing is None:
        return None, placeholder
    sensitive = pipeline.federation.sensitive
    X_model = placeholder if sensitive is None else drop_columns(placeholder, sensitive)
    fitted = fitted_tree(pipeline.preprocessing, X_model, states, schema=True)
    return fitted, placeholder


def fitted_pipeline(plan, inner, fitted_preprocessing, placeholder):
    """The fitted pipeline federation a server returns.

    ``inner`` is the fitted federation of the final estimator, and
    ``fitted_preprocessing`` / ``placeholder`` what
    :func:`server_preprocessing` rebuilt.
    """
    pipeline = plan.pipeline
    outer = pipeline.federation
    outer.n_features_in_ = placeholder.shape[1]
    if hasattr(placeholder, "columns"):
        outer.feature_names_in_ = np.asarray(placeholder.columns, dtype=object)
    # Personalised models stay on their clients: inner has none to wrap.
    return pipeline.adopt(outer, inner, fitted_preprocessing, placeholder)


__all__ = ["FederationPlan"]
