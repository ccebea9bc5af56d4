"""A client of a federation of boosted trees: its answers to the queries.

``TreeFederationClient`` holds one client's rows and answers the queries
that come before the trees (``"describe"``, ``"prepare"``, ``"encode"``,
``"bins"``); ``tree_client`` builds the client whole (its training rows,
resampled once, and the ``BoostingClient`` that answers the boosting
loop's queries). Nothing here sees another client's rows or the server's
state: the same code answers in-process and behind a Flower ClientApp.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import FunctionTransformer, OrdinalEncoder
from sklearn.utils import check_array

from .._compat import (
    BinMapper,
    is_scalar_nan,
    safe_indexing,
)
from .._groups import encode_groups, take_rows
from .._models._constraints import (
    population_rate_weight,
)
from ..ensemble._binning import ClientColumns
from ..ensemble._boosting import (
    BoostingClient,
)
from ..ensemble._gradient_boosting import preprocessed_columns
from ..ensemble._growing import ROWS_FOR_THREADS
from ._client import (
    _ClientData,
    _resample,
    _round_sampler,
    _split_client,
)
from ._pipeline import raw_schema


class TreeFederationClient:
    """One client of a federation of trees: its rows, and its answers.

    The same object answers in-process and behind a Flower ClientApp: it
    holds only its own rows and what the server's queries told it.

    Parameters
    ----------
    estimator : HistGradientBoostingClassifier
        The federation's (unfitted) estimator: its parameters.
    X : array-like or DataFrame
        The client's training rows.
    y : array-like
        Their labels, as the user gave them.
    sensitive : array-like, DataFrame or dict, or None
        Their sensitive attributes (the sampler's and the penalty's), as the
        user gave them.
    sampler : object or None
        The federation's sampler.
    seed : int
        The client's seed (its sampler's and early-stopping split's).
    prior_correction : {"weights"} or None
        Whether resampled rows are weighted back to the client's label shares.
    sample_weight : ndarray of shape (n_samples,), default=None
        The rows' sample weights.
    """

    def __init__(
        self,
        estimator,
        X,
        y,
        sensitive=None,
        *,
        sampler,
        seed,
        prior_correction,
        sample_weight=None,
    ):
        self.estimator = estimator
        self.sample_weight = sample_weight
        self.X, self.y = X, np.asarray(y)
        self.sensitive = sensitive
        self.sampler, self.seed = sampler, int(seed)
        self.prior_correction = prior_correction
        self.columns = self.boosting = None
        self.groups = (
            None
            if sensitive is None
            else encode_groups(sensitive, n_samples=self.y.shape[0])
        )

    def answer(self, query):
        """The client's answer to one of the server's queries.

        Parameters
        ----------
        query : dict
            A query of the tree fit (the module's docstring lists them).

        Returns
        -------
        answer : dict
            Arrays, numbers, strings and lists of them only.
        """
        kind = query["kind"]
        if kind in self._OWN:
            return self._OWN[kind](self, query)
        if kind in ("bin summary", "counts at most", "weight at most"):
            return self.columns.answer(query)
        return self.boosting.answer(query)

    def _describe(self, query):
        """Its rows' count, labels and groups (categories, no row), its columns."""
        classes, codes, counts = np.unique(
            self.y, return_inverse=True, return_counts=True
        )
        columns, dtypes = raw_schema(self.X)
        answer = {
            "n": int(self.y.shape[0]),
            "classes": classes,
            "class_counts": counts,
            "group_labels": (
                None
                if self.groups is None
                else [list(label) for label in self.groups.labels]
            ),
            "sensitive_names": (
                None if self.groups is None else [str(n) for n in self.groups.names]
            ),
            "columns": columns,
            "dtypes": dtypes,
        }
        if query.get("weighted"):
            # Its rows' weight per label (the federation's class prior).
            weight = (
                np.ones(self.y.shape[0])
                if self.sample_weight is None
                else (self.sample_weight)
            )
            answer["class_weights"] = np.bincount(
                codes, weights=weight, minlength=classes.size
            )
        return answer

    def _prepare(self, query):
        """Resample once; the rows' count, class counts and categories."""
        classes = np.asarray(query["classes"])
        unknown = np.setdiff1d(self.y, classes)
        if unknown.size:
            raise ValueError(
                f"This client has labels {unknown.tolist()} that are not the "
                f"federation's classes {classes.tolist()}."
            )
        y_codes = np.searchsorted(classes, self.y)
        self.rng = np.random.RandomState(self.seed)
        data = _ClientData(
            self.X,
            y_codes,
            self.groups,
            self.sample_weight,
            source=self.sensitive,
            positions=None if self.groups is None else np.arange(len(y_codes)),
        )
        rows = data
        data = _resample(
            _round_sampler(self.sampler, self.rng), data, self.prior_correction
        )
        y = np.asarray(data.y)
        groups = None
        if query["grouped"]:
            # The penalty's group of every row, by the federation's labels.
            union = {tuple(label): k for k, label in enumerate(query["group_labels"])}
            own = np.array([union[tuple(label)] for label in self.groups.labels])
            groups = own[data.groups.codes]
        # The rows' weights: in the loss (class weights are added when the
        # federation's are known) and in a rate constraint's rates, where
        # each cell weighs what it does in the rows before resampling.
        self.rows = (data.X, y, groups, data.weight, _rate_weight(rows, data))
        # Which features are categorical and the categories this client has:
        # scikit-learn's own reading of the rows (dtypes or the parameter),
        # before its early-stopping split, as in its fit.
        reader = clone(self.estimator)
        preprocessed_columns(reader, data.X, reset=True)
        self.is_categorical = reader.is_categorical_
        categories = []
        if reader._preprocessor is not None:
            encoder = reader._preprocessor.named_transformers_["encoder"]
            categories = [_without_missing(c) for c in encoder.categories_]
        return {
            "n": len(y),
            "class_counts": np.bincount(y, minlength=2),
            "is_categorical": (
                np.zeros(0, dtype=bool)
                if self.is_categorical is None
                else np.asarray(self.is_categorical, dtype=bool)
            ),
            "categories": categories,
        }

    def _encode(self, query):
        """The federation's categories and class weights; the early-stopping split."""
        X, y, groups, weight, rate_weight = self.rows
        class_weight = query["class_weight"]
        if class_weight is not None:
            scale = np.asarray(class_weight, dtype=np.float64)[y]
            weight = scale if weight is None else weight * scale
        self.val = None
        fraction = query["validation_fraction"]
        if fraction is not None:
            # scikit-learn's split of its training rows, on the client's own.
            _, counts = np.unique(y, return_counts=True)
            stratify = y if counts.size > 1 and counts.min() > 1 else None
            train, val = train_test_split(
                np.arange(len(y)),
                test_size=fraction,
                stratify=stratify,
                random_state=self.rng.randint(np.iinfo(np.int32).max),
            )
            train, val = np.sort(train), np.sort(val)
            self.val = (
                safe_indexing(X, val),
                y[val],
                None if weight is None else weight[val],
            )
            X, y = safe_indexing(X, train), y[train]
            groups = None if groups is None else groups[train]
            weight = None if weight is None else weight[train]
            rate_weight = None if rate_weight is None else rate_weight[train]
        self.rows = (X, y, groups, weight, rate_weight)
        self.preprocessor = tree_preprocessor(self.is_categorical, query["categories"])
        self.encoded = self._encoded(X, fit=True)
        self.encoded_val = None if self.val is None else self._encoded(self.val[0])
        # Weighted edges bin with the loss's weights, as scikit-learn's fit.
        self.columns = ClientColumns(
            self.encoded[:, len(query["categories"]) :],
            weight if query.get("weighted") else None,
        )
        return {"n": len(y), "n_val": 0 if self.val is None else len(self.val[1])}

    def _encoded(self, X, fit=False):
        if self.preprocessor is None:
            return check_array(X, dtype=np.float64, ensure_all_finite=False)
        if fit:
            return self.preprocessor.fit_transform(X)
        return self.preprocessor.transform(X)

    def _bins(self, query):
        mapper = bin_mapper_of(query)
        if np.size(self.encoded) < ROWS_FOR_THREADS:
            # A small client bins faster alone (see ClientRows), and its
            # bins are the same.
            mapper.set_params(n_threads=1)
        _, y, groups, weight, rate_weight = self.rows
        X_binned = mapper.transform(self.encoded)
        val = {}
        if self.val is not None:
            val = {
                "X_binned_val": mapper.transform(self.encoded_val),
                "y_val": self.val[1],
                "sample_weight_val": self.val[2],
            }
        self.boosting = BoostingClient(
            X_binned,
            y,
            weight,
            groups,
            missing_values_bin_idx=mapper.missing_values_bin_idx_,
            rate_weight=rate_weight,
            **val,
        )
        self.encoded = self.encoded_val = self.columns = None
        return {"n": len(y)}


#: The clients' own ``answer`` (a batch answers only for it).
_OWN_ANSWER = TreeFederationClient.answer


TreeFederationClient._OWN = {
    "describe": TreeFederationClient._describe,
    "prepare": TreeFederationClient._prepare,
    "encode": TreeFederationClient._encode,
    "bins": TreeFederationClient._bins,
}


def _without_missing(categories):
    """An encoder's categories without the NaN it lists last.

    As scikit-learn's ``_check_categories``: only NaN is the missing value
    (its own bin); ``None`` in a column of objects is a category of its own.
    """
    categories = np.asarray(categories)
    if categories.size and is_scalar_nan(categories[-1]):
        return categories[:-1]
    return categories


def tree_preprocessor(is_categorical, categories):
    """Build scikit-learn's preprocessing of a boosted model, with given categories.

    Parameters
    ----------
    is_categorical : ndarray of bool or None
        Which input features are categorical.
    categories : list of ndarray
        Per categorical feature, its categories (the federation's).

    Returns
    -------
    preprocessor : ColumnTransformer or None
        As ``HistGradientBoostingClassifier._preprocess_X`` builds it (the
        categorical features ordinal-encoded first, the others checked),
        with the categories fixed; None without categorical features.
    """
    if is_categorical is None or not np.any(is_categorical):
        return None
    encoder = OrdinalEncoder(
        # A feature without a value on any client: its one "category" is the
        # missing value, every row in the missing values' bin.
        categories=[list(c) if len(c) else [np.nan] for c in categories],
        handle_unknown="use_encoded_value",
        unknown_value=np.nan,
        encoded_missing_value=np.nan,
        dtype=np.float64,
    )
    numeric = FunctionTransformer(
        check_array, kw_args={"dtype": [np.float64], "ensure_all_finite": False}
    )
    is_categorical = np.asarray(is_categorical, dtype=bool)
    preprocessor = ColumnTransformer(
        [("encoder", encoder, is_categorical), ("numerical", numeric, ~is_categorical)]
    )
    return preprocessor.set_output(transform="default")


def bin_mapper_of(query):
    """Build the federation's fitted ``_BinMapper`` from a ``"bins"`` query.

    Parameters
    ----------
    query : dict
        The query: ``n_bins``, ``is_categorical`` and every feature's
        ``edges`` (a categorical feature's: its codes).

    Returns
    -------
    mapper : _BinMapper
        Fitted, to transform a client's encoded rows.
    """
    mapper = BinMapper(n_bins=int(query["n_bins"]))
    mapper.is_categorical_ = np.asarray(query["is_categorical"], dtype=np.uint8)
    mapper.missing_values_bin_idx_ = int(query["n_bins"]) - 1
    mapper.bin_thresholds_ = [np.asarray(t, dtype=np.float64) for t in query["edges"]]
    mapper.n_bins_non_missing_ = np.array(
        [
            len(t) if categorical else len(t) + 1
            for t, categorical in zip(
                mapper.bin_thresholds_, mapper.is_categorical_, strict=True
            )
        ],
        dtype=np.uint32,
    )
    return mapper


@dataclass(frozen=True)
class TrainingRows:
    """A client's training rows, in the containers it gave them.

    ``X`` (array-like or DataFrame), ``y``, ``sensitive`` (its sensitive
    attributes, None without) and ``weight`` (its sample weights, None
    without), of the same rows.
    """

    X: object
    y: np.ndarray
    sensitive: object
    weight: np.ndarray | None


def client_training_rows(federation, X, y, sensitive, seed, client, weight=None):
    """A client's training rows, as the federation splits them (held-out rows out).

    The same split in-process and on a Flower node, from the client's own
    rows and seed (``validation_fraction`` of the federation: its held-out
    rows, for metrics).

    Parameters
    ----------
    federation : FederatedEstimator
        The federation (its ``validation_fraction``).
    X : array-like or DataFrame
        The client's rows.
    y : array-like
        Their labels.
    sensitive : array-like, DataFrame or dict, or None
        Their sensitive attributes.
    seed : int
        The client's seed.
    client : object
        The client's id, for errors.
    weight : ndarray of shape (n_samples,), default=None
        Their sample weights.

    Returns
    -------
    rows : TrainingRows
        Its training rows, in the same containers.
    """
    y = np.asarray(y)
    train, _ = _split_client(y, federation.validation_fraction, seed, client)
    return TrainingRows(
        safe_indexing(X, train),
        y[train],
        None if sensitive is None else take_rows(sensitive, train),
        None if weight is None else weight[train],
    )


def tree_client(federation, X, y, sensitive, seed, client, weight=None):
    """The federation's client of a node's (or a client's) rows.

    Parameters
    ----------
    federation : FederatedEstimator
        The federation.
    X : array-like or DataFrame
        All of the client's rows.
    y : array-like
        Their labels.
    sensitive : array-like, DataFrame or dict, or None
        Their sensitive attributes.
    seed : int
        The client's seed.
    client : object
        The client's id, for errors.
    weight : ndarray of shape (n_samples,), default=None
        Their sample weights.

    Returns
    -------
    client : TreeFederationClient
        Holding its training rows.
    """
    rows = client_training_rows(federation, X, y, sensitive, seed, client, weight)
    return TreeFederationClient(
        federation.estimator,
        rows.X,
        rows.y,
        rows.sensitive,
        sampler=federation.sampler,
        seed=seed,
        prior_correction=federation.prior_correction,
        sample_weight=rows.weight,
    )


def _rate_weight(rows, resampled):
    """The resampled rows' weights in a constraint's rates (the rows' mix).

    Without resampling, the rows' own weights.
    """
    if resampled is rows or rows.groups is None:
        return resampled.weight
    n_cells = 2 * rows.groups.n_groups
    return population_rate_weight(
        2 * resampled.groups.codes + np.asarray(resampled.y, dtype=np.intp),
        resampled.weight,
        2 * rows.groups.codes + np.asarray(rows.y, dtype=np.intp),
        rows.weight,
        n_cells,
    )
