"""FederatedEstimator(Pipeline([...transformers..., estimator])): preprocessing first.

The transformers are fitted from the clients' statistics (one round each,
in pipeline order, ``skfedida.preprocessing``); each client then transforms
its own rows, and the final estimator is trained on them by the same
federation. In column mode the sensitive columns are taken out of X before
the preprocessing (they are never model inputs) and reach the sampler and
the final estimator as metadata.
"""

from __future__ import annotations

import inspect
import numbers
import warnings

import joblib
import numpy as np
from scipy import sparse
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils import get_tags

from .._compat import routing_enabled
from .._groups import resolve_sensitive
from ..exceptions import ClientDataWarning, caller_stacklevel
from ..over_sampling import FairnessAwareROSE
from ..preprocessing._base import (
    FederatedTransformerMixin,
    client_parts,
    federated_transformers,
    fit_in_process,
)

__all__ = ["PipelineFederation", "is_pipeline", "warn_if_pooled_preprocessing"]


def warn_if_pooled_preprocessing(federation):
    """Warn when a Pipeline fitted its transformers on every client's rows pooled.

    ``Pipeline([ColumnTransformer(...), FederatedEstimator(...)])`` fits the
    transformers on all rows before the federation starts: rows of every
    client meet in one place. The Pipeline's frame is found on the stack.
    """
    frame = inspect.currentframe()
    try:
        for _ in range(40):
            frame = frame.f_back
            if frame is None:
                return
            owner = frame.f_locals.get("self")
            if not isinstance(owner, Pipeline) or frame.f_code.co_name != "fit":
                continue
            names = [name for name, step in owner.steps]
            steps = [step for name, step in owner.steps]
            if not any(step is federation for step in steps):
                continue
            position = next(i for i, step in enumerate(steps) if step is federation)
            params = frame.f_locals.get("params") or {}
            pooled = [
                names[i]
                for i in range(position)
                if steps[i] not in (None, "passthrough")
                and get_tags(steps[i]).requires_fit
                and not _fitted_across_clients(names[i], steps[i], params)
            ]
            if pooled:
                warnings.warn(
                    f"The Pipeline fitted {pooled} on the rows of every client "
                    "pooled, before the federation: rows left their clients. Put "
                    "the transformers inside the federation instead, with "
                    "skfedida.preprocessing's federated transformers: "
                    "FederatedEstimator(Pipeline([..., ('model', estimator)])).",
                    ClientDataWarning,
                    stacklevel=caller_stacklevel(),
                )
            return
    finally:
        del frame


def _fitted_across_clients(name, step, params):
    """Whether a Pipeline step was fitted from each client's statistics.

    A federated transformer given the rows' clients (``step__clients``, or
    ``clients`` routed to it, which it requests) combines per-client
    statistics only: no row leaves its client's share of the fit. A nested
    Pipeline, ColumnTransformer or FeatureUnion is, when every stateful
    transformer inside it is.
    """
    if isinstance(step, FederatedTransformerMixin):
        if params.get(f"{name}__clients") is not None:
            return True
        if params.get("clients") is None or not routing_enabled():
            return False
        # Requested under its own name (an alias routes another key).
        return step.get_metadata_routing().fit.requests.get("clients") is True
    if isinstance(step, Pipeline):
        parts = [(f"{name}__{sub}", part) for sub, part in step.steps]
    elif isinstance(step, ColumnTransformer):
        parts = [(f"{name}__{sub}", part) for sub, part, _ in step.transformers]
    elif isinstance(step, FeatureUnion):
        parts = [(f"{name}__{sub}", part) for sub, part in step.transformer_list]
    else:
        return False
    return all(
        _fitted_across_clients(sub, part, params)
        for sub, part in parts
        if part not in (None, "passthrough", "drop") and get_tags(part).requires_fit
    )


def is_pipeline(estimator):
    """Whether FederatedEstimator's estimator is a Pipeline of preprocessing + model."""
    return isinstance(estimator, Pipeline)


def final_step(estimator):
    """The estimator a pipeline ends with (the estimator itself otherwise)."""
    return estimator.steps[-1][1] if is_pipeline(estimator) else estimator


def drop_columns(X, columns):
    """X without ``columns`` (names of a DataFrame, or positions)."""
    if hasattr(X, "drop"):
        return X.drop(columns=columns)
    keep = np.setdiff1d(np.arange(X.shape[1]), np.atleast_1d(columns))
    return X[:, keep]


def _kept_names(transformer, input_features):
    """Output names of ``drop_columns`` (FunctionTransformer's feature_names_out)."""
    columns = set(np.atleast_1d(transformer.kw_args["columns"]).tolist())
    return np.asarray([name for name in input_features if name not in columns])


def _without_sensitive(component):
    if component is None or "sensitive" not in component.get_params(deep=False):
        return component
    return clone(component).set_params(sensitive=None)


class PipelineFederation:
    """The preprocessing and the inner federation of a pipeline FederatedEstimator."""

    def __init__(self, federation):
        self.federation = federation
        steps = federation.estimator.steps
        self.final_name, self.final = steps[-1]
        # The outer Pipeline's memory stays with its steps, to be refused as
        # a nested one's is (it was dropped here, silently).
        self.preprocessing = (
            Pipeline(steps[:-1], memory=federation.estimator.memory)
            if len(steps) > 1
            else None
        )
        if self.preprocessing is not None:
            # A stateful transformer that is not federated is refused here,
            # before any statistics round.
            federated_transformers(self.preprocessing, "estimator")
            sensitive = federation.sensitive
            if sensitive is not None and any(
                isinstance(column, numbers.Integral)
                for column in np.atleast_1d(np.asarray(sensitive, dtype=object))
            ):
                raise ValueError(
                    "Column mode with a preprocessing pipeline needs the sensitive "
                    "columns by name (X a DataFrame): they are taken out of X "
                    "before the preprocessing, so positions in its "
                    f"ColumnTransformer would shift; got sensitive={sensitive!r}. "
                    "Name them, or pass sensitive_features= instead."
                )

    def preprocessing_key(self):
        """A hash of the unfitted preprocessing's parameters (None without one)."""
        if self.preprocessing is None:
            return None
        return joblib.hash(clone(self.preprocessing))

    def split(self, X, sensitive_features):
        """Model inputs and sensitive features (the columns out, in column mode)."""
        sensitive = self.federation.sensitive
        if sensitive is None:
            return X, sensitive_features
        _, S = resolve_sensitive(
            X, sensitive_features=sensitive_features, sensitive=sensitive, drop=False
        )
        return drop_columns(X, sensitive), S

    def fit_preprocessing(self, X_model, clients, gate=None, encoded=None):
        """The preprocessing fitted from every client's statistics (or None).

        ``gate`` checks every answer and applies ``on_client_error``;
        ``encoded`` is the fit's ``client_ids`` (coded once, at its entry).
        """
        if self.preprocessing is None:
            return None, []
        return fit_in_process(
            self.preprocessing, client_parts(X_model, clients, encoded), gate
        )

    def model_inputs(self, fitted_preprocessing, X_model):
        """A client's rows as the final estimator takes them."""
        X = (
            X_model
            if fitted_preprocessing is None
            else fitted_preprocessing.transform(X_model)
        )
        if sparse.issparse(X) and isinstance(
            self.federation.sampler, FairnessAwareROSE
        ):
            # ROSE's synthetic rows are dense; one-hot output is sparse.
            X = X.toarray()
        return X

    def adopt(self, outer, inner, fitted_preprocessing, X):
        """Make ``outer`` the fitted pipeline federation of a fitted ``inner``.

        Its fitted attributes are the inner federation's, with the models
        behind the fitted preprocessing; ``n_features_in_`` and
        ``feature_names_in_`` stay those of the raw rows (set by the caller).
        """
        for name, value in vars(inner).items():
            if (
                name.endswith("_")
                and not name.startswith("_")
                and name not in ("n_features_in_", "feature_names_in_")
            ):
                setattr(outer, name, value)
        outer.estimator_ = self.wrap(fitted_preprocessing, inner.estimator_, X)
        outer.client_estimators_ = {
            client: self.wrap(fitted_preprocessing, model, X)
            for client, model in inner.client_estimators_.items()
        }
        outer._pipeline_parts = (fitted_preprocessing, inner)
        outer._pipeline_preprocessing = self.preprocessing_key()
        return outer

    def inner(self):
        """The federation that trains the final estimator on transformed rows."""
        federation = self.federation
        inner = clone(federation).set_params(
            estimator=_without_sensitive(self.final),
            sampler=_without_sensitive(federation.sampler),
            sensitive=None,
            warm_start=False,
        )
        return inner

    def wrap(self, fitted_preprocessing, model, X):
        """A fitted model behind the fitted preprocessing (and the column drop)."""
        steps = []
        if self.federation.sensitive is not None:
            drop = FunctionTransformer(
                drop_columns,
                kw_args={"columns": self.federation.sensitive},
                feature_names_out=_kept_names,
            )
            steps.append(("drop_sensitive", drop.fit(X)))
        if fitted_preprocessing is not None:
            steps.extend(fitted_preprocessing.steps)
        steps.append((self.final_name, model))
        return Pipeline(steps)


def raw_schema(X):
    """What a client tells the server of its raw table: column names and kinds.

    Per column its dtype (pandas' name, nullable ones included) and, for
    columns of Python objects, whether they hold numbers: enough to build a
    placeholder row that every transformer accepts, no value of a row.
    """
    if hasattr(X, "dtypes"):
        return [str(c) for c in X.columns], [
            _dtype_name(X[c].dtype, X[c].to_numpy()) for c in X.columns
        ]
    X = np.asarray(X)
    return None, [_dtype_name(X.dtype, X[:, j]) for j in range(X.shape[1])]


def _dtype_name(dtype, values):
    name = str(dtype)
    if name == "object":
        present = [v for v in values.tolist() if v is not None and v == v]
        if present and all(
            isinstance(v, numbers.Number) and not isinstance(v, bool) for v in present
        ):
            return "object:number"
    return name


def placeholder_rows(columns, dtypes):
    """One row of a table's columns and dtypes, holding no client's value."""

    def value(dtype):
        if dtype == "object:number":
            return 0
        try:
            import pandas as pd

            kind = pd.api.types.pandas_dtype(dtype)
            if pd.api.types.is_bool_dtype(kind):
                return False
            return 0 if pd.api.types.is_numeric_dtype(kind) else ""
        except (ImportError, TypeError):
            return 0 if np.dtype(dtype).kind in "iufb" else ""

    def storage(dtype):
        return "object" if dtype.startswith("object") else dtype

    if columns is None:
        row = np.empty((1, len(dtypes)), dtype=object)
        row[0] = [value(d) for d in dtypes]
        kinds = {storage(d) for d in dtypes}
        return row.astype(kinds.pop()) if len(kinds) == 1 else row
    import pandas as pd

    return pd.DataFrame(
        {
            column: pd.Series([value(dtype)], dtype=storage(dtype))
            for column, dtype in zip(columns, dtypes, strict=True)
        }
    )
