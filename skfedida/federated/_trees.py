"""Boosted trees as a federation's model: FederatedEstimator's tree fit.

``FederatedEstimator(FairHistGradientBoostingClassifier(...))`` trains one
ensemble of trees across clients that never send a row. The server runs
scikit-learn's fit of ``HistGradientBoostingClassifier`` step by step and
asks the clients, by queries, for what each step needs of their rows
(``skfedida.ensemble._boosting``; every answer through the reply gate of
``skfedida._gate``):

1. ``"prepare"``: each client resamples its training rows once with the
   federation's ``sampler`` (its own seed), holds out its early-stopping
   rows when the trees stop early, and sends its rows' count and, per
   categorical feature, the categories it has;
2. ``"encode"``: the categories of all clients, sorted, become every
   client's ordinal codes (scikit-learn's ``OrdinalEncoder`` on the pooled
   rows would learn the same);
3. the numeric features' bin edges (``skfedida.ensemble._binning``:
   scikit-learn's on the pooled rows), and ``"bins"``: each client bins;
4. the boosting loop (``skfedida.ensemble._boosting.boost``): per tree,
   the clients' gradients, node histograms and partitions, and with the
   group penalty their cell sums and leaves' cell weights.

With ``fairness=0``, no sampler and numeric features, the trees are
scikit-learn's on the pooled rows, bit for bit (``tests/federated``).
``strategy="central"`` fits the estimator on the pooled rows (the
reference), ``"local"`` one per client on its own rows.
"""

from __future__ import annotations

import copy
import numbers
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import FunctionTransformer, OrdinalEncoder
from sklearn.utils import check_array, check_random_state, column_or_1d
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import validate_data

from .._compat import (
    BinMapper,
    is_scalar_nan,
    num_samples,
    safe_indexing,
    unique_values,
)
from .._gate._policy import ReplyGate
from .._gate._tree_rules import category_kind, disagreement_problems
from .._groups import check_labels_complete, client_ids, encode_groups, take_rows
from .._models._constraints import (
    CONSTRAINT_ATTRIBUTES,
    RateConstraint,
    constraint_fitted_attributes,
    population_rate_weight,
)
from ..ensemble._batch import ClientBatch
from ..ensemble._binning import ClientColumns, federated_bin_mapper
from ..ensemble._boosting import (
    BoostingClient,
    Restart,
    TreeChannel,
    boost,
    in_process,
    tree_message,
    tree_predictor,
)
from ..ensemble._gradient_boosting import monotonic_constraints, preprocessed_columns
from ..ensemble._growing import ROWS_FOR_THREADS
from ..exceptions import InactivePenaltyWarning, caller_stacklevel
from ._client import (
    _client_seeds,
    _ClientData,
    _resample,
    _round_sampler,
    _split_client,
)
from ._pipeline import placeholder_rows, raw_schema

__all__ = ["TREE_ONLY_DEFAULTS", "fit_trees", "is_boosted_trees"]


def is_boosted_trees(estimator):
    """Whether a federation's estimator is scikit-learn's histogram boosting.

    Parameters
    ----------
    estimator : object
        The federation's estimator.

    Returns
    -------
    trees : bool
        True for a ``HistGradientBoostingClassifier`` (skfedida's included).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    return isinstance(estimator, HistGradientBoostingClassifier)


#: FederatedEstimator's parameters of rounds of ``partial_fit``, at their
#: defaults: boosted trees have no rounds of local epochs, so a value set
#: away from these would be silently unused. What to set instead.
TREE_ONLY_DEFAULTS = {
    "n_rounds": (10, "the trees are the estimator's max_iter"),
    "local_epochs": (5, "a tree is grown from all the clients' rows at once"),
    "batch_size": (128, "each tree reads every row of every client"),
    "resample": ("batch", "a client resamples its rows once, before the trees"),
    "client_fraction": (1.0, "every tree is grown from every client"),
    "aggregation": ("mean", "the clients' histograms are summed"),
    "max_update_norm": (None, "no parameters are averaged"),
    "dp": (None, "no differentially private trees yet"),
    "personalization_steps": (1, "there is one global model"),
    "inner_learning_rate": (0.01, "the trees' step is learning_rate"),
    "outer_learning_rate": (None, "the trees' step is learning_rate"),
    "validation_fraction": (
        None,
        "the trees stop early on the estimator's validation_fraction of each "
        "client's rows; score the federation with evaluate_clients",
    ),
}


def check_tree_federation(federation):
    """Refuse what a federation of boosted trees cannot do, naming it.

    Parameters
    ----------
    federation : FederatedEstimator
        The federation about to fit.
    """
    if federation.strategy == "pfedavg":
        raise ValueError(
            "strategy='pfedavg' personalises averaged parameters; boosted trees "
            "have none. Use strategy='fedavg' (one federated ensemble), "
            "'local' or 'central'."
        )
    for name, (default, instead) in TREE_ONLY_DEFAULTS.items():
        value = getattr(federation, name)
        same = value is default or (
            isinstance(value, str | numbers.Number)
            and not isinstance(value, bool)
            and value == default
        )
        if not same:
            raise ValueError(
                f"{name}={value!r} does not apply to boosted trees ({instead}); "
                f"leave it at its default, {default!r}."
            )
    estimator = federation.estimator
    fraction = estimator.validation_fraction
    if isinstance(fraction, numbers.Integral) and not isinstance(fraction, bool):
        raise ValueError(
            f"{type(estimator).__name__}(validation_fraction={fraction}) inside a "
            "federation: a count of rows cannot be held out by clients that each "
            "hold out their own; give a share of the rows (a float in (0, 1))."
        )
    if estimator.warm_start:
        raise ValueError(
            f"{type(estimator).__name__}(warm_start=True) inside a federation: "
            "the federation continues its fitted trees, not the estimator; set "
            "FederatedEstimator(warm_start=True) and leave the estimator's "
            "warm_start=False."
        )
    if federation.sensitive is not None:
        raise ValueError(
            "sensitive= (sensitive columns of X) is not read by a federation "
            "of boosted trees yet; pass the attributes as "
            "fit(..., sensitive_features=...)."
        )


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
    rows : tuple
        Its training rows ``(X, y, sensitive, weight)``, in the same
        containers.
    """
    y = np.asarray(y)
    train, _ = _split_client(y, federation.validation_fraction, seed, client)
    return (
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
    X, y, sensitive, weight = client_training_rows(
        federation, X, y, sensitive, seed, client, weight
    )
    return TreeFederationClient(
        federation.estimator,
        X,
        y,
        sensitive,
        sampler=federation.sampler,
        seed=seed,
        prior_correction=federation.prior_correction,
        sample_weight=weight,
    )


def adopt_trees(federation, model, described, *, clients, seeds, history):
    """Set a federation's fitted attributes from the server's tree fit.

    Parameters
    ----------
    federation : FederatedEstimator
        The federation, fitted in place.
    model : HistGradientBoostingClassifier
        The fitted global model.
    described : dict
        What :func:`federated_trees` returns besides the model.
    clients : ndarray
        The clients' ids (partition ids on Flower).
    seeds : ndarray
        The clients' seeds.
    history : list of dict
        The gate's records (round 0).

    Returns
    -------
    federation : FederatedEstimator
        Fitted.
    """
    federation.estimator_ = model
    # What a warm start may continue: the federation's own trees only.
    federation._trees_strategy = federation.strategy
    federation.classes_ = np.asarray(described["classes"])
    federation.clients_ = np.asarray(clients)
    federation.client_seeds_ = np.asarray(seeds)
    federation.client_sizes_ = np.array(
        [described["rows"].get(k, 0) for k in range(len(clients))]
    )
    counts = np.asarray(described["class_counts"], dtype=np.float64)
    federation.class_prior_ = counts / counts.sum()
    federation.client_estimators_ = {}
    federation.history_ = list(history)
    federation.federated_metrics_ = {}
    federation.privacy_ = None
    federation.n_features_in_ = model.n_features_in_
    if hasattr(model, "feature_names_in_"):
        federation.feature_names_in_ = model.feature_names_in_
    else:
        federation.__dict__.pop("feature_names_in_", None)
    return federation


def fit_trees(federation, X, y, clients, sensitive_features, sample_weight=None):
    """Fit a federation whose estimator is histogram gradient boosting.

    Parameters
    ----------
    federation : FederatedEstimator
        The federation (its parameters; fitted attributes are set on it).
    X : array-like or DataFrame of shape (n_samples, n_features)
        Every client's rows.
    y : array-like of shape (n_samples,)
        Binary labels.
    clients : array-like of shape (n_samples,) or None
        Each row's client.
    sensitive_features : array-like, DataFrame or dict, or None
        The rows' sensitive attributes (the penalty's groups, the sampler's).
    sample_weight : ndarray of shape (n_samples,), default=None
        The rows' weights (checked): each client's weigh its loss, its rates,
        its bin edges and the class prior.

    Returns
    -------
    federation : FederatedEstimator
        Fitted.
    """
    check_tree_federation(federation)
    federation.estimator._validate_params()
    validate_data(federation, X, reset=True, skip_check_array=True)
    n_samples = num_samples(X)
    if y is None:
        raise ValueError(
            "FederatedEstimator requires y to be passed, but the target y is None."
        )
    y = column_or_1d(np.asarray(y), warn=True)
    if y.shape[0] != n_samples:
        raise ValueError(
            f"y must hold one label per row of X: {n_samples} rows, got "
            f"{y.shape[0]} labels."
        )
    check_labels_complete(y, "y")
    classes = np.unique(y)
    if classes.size != 2:
        raise ValueError(
            "A federation of boosted trees trains a binary classifier; y has "
            f"{classes.size} classes {classes.tolist()[:10]}."
        )
    if sensitive_features is not None:
        encode_groups(sensitive_features, n_samples=n_samples)  # checked here
    ids, codes = client_ids(clients, n_samples)
    n_clients = len(ids)
    seeds = _client_seeds(federation.random_state, n_clients)
    parts = [np.flatnonzero(codes == k) for k in range(n_clients)]

    def rows_of(k):
        rows = parts[k]
        return (
            safe_indexing(X, rows),
            y[rows],
            None if sensitive_features is None else take_rows(sensitive_features, rows),
        )

    def weight_of(k):
        return None if sample_weight is None else sample_weight[parts[k]]

    if sample_weight is not None:
        for k in range(n_clients):
            if not weight_of(k).sum() > 0:
                raise ValueError(
                    f"Client {ids[k].tolist()!r}'s rows all have zero sample_weight: "
                    "it has nothing to train on. Give its rows weight, or leave "
                    "the client out."
                )

    gate = ReplyGate(
        federation.on_client_error,
        name=lambda k: f"Client {ids[k].tolist()!r}",
        client_id=lambda k: ids[k].tolist(),
    )
    if federation.strategy in ("central", "local"):
        if federation.warm_start:
            raise ValueError(
                f"warm_start=True with strategy={federation.strategy!r}: the "
                "estimator's own fits do not continue yet; use "
                "strategy='fedavg', or warm_start=False."
            )
        if getattr(federation, "_skl_callbacks", None):
            raise ValueError(
                f"Callbacks with strategy={federation.strategy!r}: they see the "
                "federation's trees, tree by tree; the estimator's own fits have "
                "no such trees to show. Use strategy='fedavg', or no callbacks."
            )
        trained = [
            client_training_rows(
                federation, *rows_of(k), seeds[k], ids[k].tolist(), weight_of(k)
            )
            for k in range(n_clients)
        ]
        if federation.strategy == "central":
            models = [_one_machine(federation, *_pooled(trained), seeds[0])]
        else:
            models = [
                _one_machine(federation, *rows, seed)
                for rows, seed in zip(trained, seeds, strict=True)
            ]
        described = {
            "classes": classes,
            "class_counts": np.sum(
                [
                    np.bincount(
                        np.searchsorted(classes, t[1]), weights=t[3], minlength=2
                    )
                    for t in trained
                ],
                axis=0,
            ),
            "rows": {k: len(t[1]) for k, t in enumerate(trained)},
        }
        adopt_trees(
            federation, models[0], described, clients=ids, seeds=seeds, history=[]
        )
        if federation.strategy == "local":
            federation.client_estimators_ = {
                ids[k].tolist(): model for k, model in enumerate(models)
            }
        return federation
    previous, history = None, []
    if federation.warm_start and is_boosted_trees(
        getattr(federation, "estimator_", None)
    ):
        # As a federation of averaged models: the same clients and classes,
        # each client with its seed (its resampling and held-out rows).
        if getattr(federation, "_trees_strategy", None) != "fedavg":
            raise ValueError(
                "warm_start continues a federation's trees; the fitted model is "
                "an estimator's own fit (strategy 'central' or 'local'). Set "
                "warm_start=False to fit anew."
            )
        if not (
            np.array_equal(ids, federation.clients_)
            and np.array_equal(classes, federation.classes_)
        ):
            raise ValueError(
                "warm_start continues a federation: fit it again with the same "
                f"clients {federation.clients_.tolist()} and classes "
                f"{federation.classes_.tolist()}."
            )
        left_out = ids[np.asarray(federation.client_sizes_) == 0].tolist()
        if left_out:
            raise ValueError(
                f"warm_start continues trees grown without clients {left_out} "
                "(left out of that fit, on_client_error='skip'): they cannot "
                "rejoin them. Set warm_start=False to fit anew."
            )
        seeds = federation.client_seeds_
        # A copy: the fitted federation stays as it was if the fit fails.
        previous = copy.deepcopy(federation.estimator_)
        history = list(federation.history_)
    members = [
        tree_client(federation, *rows_of(k), seeds[k], ids[k].tolist(), weight_of(k))
        for k in range(n_clients)
    ]
    # sklearn's callback API: the fit is the root task, each tree (each new
    # one, on a warm start) a subtask; at a tree's end a callback sees the
    # federation with the trees so far.
    callback_ctx = federation._init_callback_context(
        max_subtasks=max(
            1,
            federation.estimator.max_iter
            - (0 if previous is None else previous.n_iter_),
        )
    )
    callback_ctx.call_on_fit_task_begin(estimator=federation, X=X, y=y)

    def on_tree(model):
        tree_ctx = callback_ctx.subcontext(task_name="tree")
        tree_ctx.call_on_fit_task_begin(estimator=federation)

        def as_it_stands():
            # The model as it stands, apart from the one still growing.
            snapshot = copy.copy(model)
            snapshot._predictors = list(model._predictors)
            snapshot.train_score_ = np.array(model.train_score_)
            snapshot.validation_score_ = np.array(model.validation_score_)
            return {
                "estimator_": snapshot,
                "client_estimators_": {},
                "classes_": classes,
                "clients_": ids,
            }

        return tree_ctx.call_on_fit_task_end(
            estimator=federation,
            X=X,
            y=y,
            reconstruction_attributes=as_it_stands,
        )

    model, described = federated_trees(
        federation.estimator,
        TreeChannel(
            in_process(members, batch=_batch_of(members, X)),
            n_clients,
            gate=gate,
            rows=[len(member.y) for member in members],
        ),
        resampled=federation.sampler is not None,
        previous=previous,
        on_tree=on_tree,
        sample_weighted=sample_weight is not None,
        prior_weighted=prior_weighted(federation),
        stopping=federation.early_stopping_aggregation,
    )
    adopt_trees(
        federation,
        model,
        described,
        clients=ids,
        seeds=seeds,
        history=history + [{"round": 0, **record} for record in gate.records],
    )
    callback_ctx.call_on_fit_task_end(estimator=federation, X=X, y=y)
    return federation


#: In one process, clients of fewer binned values (rows x features) than
#: this on average grow their trees together (``ClientBatch``): below it a
#: client's few Python calls a round outweigh its rows, above it
#: scikit-learn's compiled histograms beat the batch's numpy.
BATCH_VALUES = 10_000


def _batch_of(members, X):
    """The batch that grows the members' trees together, or None.

    Only members that answer as this module's clients do: a client whose
    answers were replaced (a test's lying client) answers alone, as its
    answers are its own. Large clients answer alone too (``BATCH_VALUES``):
    the same answers, faster.
    """
    if TreeFederationClient.answer is not _OWN_ANSWER or any(
        type(member) is not TreeFederationClient for member in members
    ):
        return None
    if members and _n_values(X) / len(members) >= BATCH_VALUES:
        return None
    return ClientBatch(lambda: [member.boosting for member in members])


def _n_values(X):
    """The values of a table of rows (infinite when it is not one)."""
    try:
        shape = np.shape(X)
    except ValueError:  # ragged rows: refused later, by name
        return np.inf
    return shape[0] * shape[1] if len(shape) == 2 else np.inf


def prior_weighted(federation):
    """Tell whether a federation's resampled rows carry prior-correction weights.

    Parameters
    ----------
    federation : FederatedEstimator
        The federation (its ``sampler`` and ``prior_correction``).

    Returns
    -------
    weighted : bool
        True with a sampler and ``prior_correction="weights"``.
    """
    return federation.sampler is not None and federation.prior_correction == "weights"


def _pooled(trained):
    """The clients' training rows, pooled in client order."""
    Xs, ys, Ss, ws = zip(*trained, strict=True)
    X = _concat_rows(Xs)
    S = None if Ss[0] is None else _concat_rows(Ss)
    w = None if ws[0] is None else np.concatenate(ws)
    return X, np.concatenate(ys), S, w


def _concat_rows(parts):
    """Per-row values of several clients, one after the other."""
    first = parts[0]
    if isinstance(first, dict):
        return {
            key: np.concatenate([np.asarray(p[key]) for p in parts]) for key in first
        }
    if hasattr(first, "iloc"):
        import pandas as pd

        return pd.concat(parts, ignore_index=True)
    return np.concatenate([np.asarray(p) for p in parts])


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


def _one_machine(federation, X, y, sensitive, weight, seed):
    """The estimator fitted on rows of one machine (central, or one client)."""
    model = clone(federation.estimator)
    model.set_params(random_state=int(seed))
    groups = None if sensitive is None else encode_groups(sensitive, n_samples=len(y))
    data = _ClientData(
        X,
        np.asarray(y),
        groups,
        weight,
        source=sensitive,
        positions=None if groups is None else np.arange(len(y)),
    )
    rows = data
    data = _resample(
        _round_sampler(federation.sampler, np.random.RandomState(int(seed))),
        data,
        federation.prior_correction,
    )
    kwargs = {}
    if data.groups is not None and "fairness" in model.get_params():
        kwargs["sensitive_features"] = data.groups.codes
    if data is not rows and data.groups is not None:
        # A constraint's rates weigh each cell as the rows before
        # resampling do, as a federation's clients weigh theirs.
        codes = np.unique(rows.y, return_inverse=True)[1]
        resampled_codes = np.searchsorted(np.unique(rows.y), data.y)
        model._rate_weight = _rate_weight(
            _ClientData(X, codes, groups, weight),
            _ClientData(data.X, resampled_codes, data.groups, data.weight),
        )
    return model.fit(data.X, data.y, sample_weight=data.weight, **kwargs)


def _schema_disagreements(answers, name):
    """Clients whose table is not the others': columns and dtypes."""
    schemas = {
        k: (
            None if a["columns"] is None else tuple(a["columns"]),
            tuple(a["dtypes"]),
        )
        for k, a in answers.items()
    }
    return disagreement_problems(
        schemas,
        name,
        lambda own, majority, holder: (
            f"its table has other columns or dtypes than {holder}'s "
            f"({_schema_text(own)} against {_schema_text(majority)}): give "
            "every client the same columns, in the same order, of the same "
            "dtypes"
        ),
        "the columns and their dtypes",
        _schema_text,
    )


def _schema_text(schema):
    columns, dtypes = schema
    if columns is None:
        return f"unnamed columns of dtypes {list(dtypes)}"
    return ", ".join(f"{c}: {d}" for c, d in zip(columns, dtypes, strict=True))


def _categorical_disagreements(columns):
    """Clients whose categorical features, or their categories' kind, differ."""

    def named(flags):
        positions = np.flatnonzero(flags)
        if columns is None:
            return [int(j) for j in positions]
        return [columns[j] for j in positions]

    def rule(answers, name):
        flags = {
            k: tuple(np.asarray(a["is_categorical"]).tolist())
            for k, a in answers.items()
        }
        problems = disagreement_problems(
            flags,
            name,
            lambda own, majority, holder: (
                f"it reads columns {named(own)} as categorical where {holder} "
                f"reads {named(majority)} (categorical_features='from_dtype' "
                "reads the columns' dtypes): give every client the same "
                "dtypes, or set categorical_features explicitly"
            ),
            "which columns are categorical",
            lambda flags: str(named(flags)),
        )
        agreeing = {k: a for k, a in answers.items() if k not in problems}
        if not agreeing:
            return problems
        first = next(iter(agreeing))
        for j, column in enumerate(named(flags[first])):
            kinds = {
                k: category_kind(a["categories"][j])
                for k, a in agreeing.items()
                if k not in problems
            }
            problems.update(
                disagreement_problems(
                    kinds,
                    name,
                    lambda own, majority, holder, column=column: (
                        f"its categories of column {column!r} are {own} where "
                        f"{holder}'s are {majority}: give every client that "
                        "column with the same type of values"
                    ),
                    f"the type of column {column!r}'s categories",
                )
            )
        return problems

    return rule


def _class_weight(model, counts):
    """Per class code, the weight ``class_weight`` gives it (None: none).

    scikit-learn's own ``compute_class_weight`` on the federation's counts,
    with the classes coded 0 and 1 as its fit reads them (it weighs the
    encoded labels: a dict's keys are 0 and 1, whatever the labels).
    """
    if model.class_weight is None:
        return None
    codes = np.repeat(np.arange(2), np.asarray(counts, dtype=np.int64))
    return compute_class_weight(model.class_weight, classes=np.arange(2), y=codes)


def federated_trees(
    estimator,
    channel,
    *,
    resampled=False,
    previous=None,
    on_tree=None,
    sample_weighted=False,
    prior_weighted=False,
    stopping="mean",
):
    """The server's tree fit: queries to the clients, the fitted estimator.

    The same function runs in-process and in the Flower ServerApp; only
    ``channel``'s transport differs.

    Parameters
    ----------
    estimator : HistGradientBoostingClassifier
        The federation's estimator (its parameters).
    channel : TreeChannel
        The clients, through the reply gate.
    resampled : bool, default=False
        Whether the clients resample their rows (else each keeps the rows
        it declared).
    previous : HistGradientBoostingClassifier, default=None
        The federation's fitted model to continue (warm start): as
        scikit-learn's ``warm_start``, trees are added to its trees until
        there are ``estimator.max_iter``, on the same rows, categories and
        bin edges (an error says which changed), its seeds and feature
        stream continued, and ``estimator``'s other parameters applied.
    on_tree : callable, default=None
        ``on_tree(model)`` after each tree, the model as it stands; a true
        return value stops the trees (a callback's early stopping).
    sample_weighted : bool, default=False
        Whether the clients' rows carry sample weights: the class prior is
        then their weights', and the bin edges are weighted.
    prior_weighted : bool, default=False
        Whether resampled rows carry the prior correction's weights (the
        bin edges are then weighted, as scikit-learn's fit weighs them; so
        they are with class weights).
    stopping : {"mean", "median"}, default="mean"
        How early stopping combines the clients' losses (the federation's
        ``early_stopping_aggregation``; :func:`median_should_stop`).

    Returns
    -------
    model : HistGradientBoostingClassifier
        A clone of ``estimator`` (or ``previous``) fitted with the
        federation's trees.
    described : dict
        What the clients declared: ``classes``, ``class_counts`` (of their
        training rows, before resampling) and ``rows`` (per client index).
    """
    if previous is None:
        model = clone(estimator)
    else:
        model = previous
        model.set_params(**estimator.get_params(deep=False))
        if model.max_iter < model.n_iter_:
            raise ValueError(
                f"max_iter={model.max_iter} must be larger than or equal to "
                f"n_iter_={model.n_iter_} when warm_start==True"
            )
    fairness = float(getattr(model, "fairness", 0.0))
    # Rows of weight 1 each: every weight a client sends is a count of its
    # rows, which the gate holds it to.
    unit_weights = not (
        sample_weighted or prior_weighted or model.class_weight is not None
    )
    for ledger in channel.ledger.values():
        ledger.unit_weights = unit_weights
    while True:
        try:
            query = {"kind": "describe", "weighted": sample_weighted}
            described = channel.ask(query, across=_schema_disagreements)
            break
        except Restart:
            continue
    classes = _agreed_classes(described)
    first = next(iter(described.values()))
    columns, dtypes = first["columns"], first["dtypes"]
    group_labels = _merged_groups(described, channel)
    n_groups = 1 if group_labels is None else len(group_labels)
    penalised = fairness > 0 and n_groups > 1
    if penalised and model.monotonic_cst is not None:
        raise ValueError(
            f"monotonic_cst={model.monotonic_cst!r} with fairness={fairness}: the "
            "penalised trees' leaf values are a joint Newton step, which does "
            "not keep monotonic constraints yet. Leave monotonic_cst=None, or "
            "use fairness=0."
        )
    if penalised and model.max_leaf_nodes is None:
        raise ValueError(
            f"max_leaf_nodes=None with fairness={fairness}: the leaves' joint "
            "Newton step solves a leaves x leaves system every tree, so the "
            "leaves must be bounded. Set max_leaf_nodes (31 by default)."
        )
    constraints = getattr(model, "constraints", None)
    constrained = constraints is not None and n_groups > 1
    inactive = [f"fairness={fairness}"] if fairness > 0 and not penalised else []
    if constraints is not None and not constrained:
        inactive.append(f"constraints={constraints!r}")
    if inactive:
        reason = (
            "no sensitive attributes were given (pass sensitive_features)"
            if group_labels is None
            else "the sensitive attributes take a single value"
        )
        warnings.warn(
            f"{' and '.join(inactive)} has no effect: {reason}; the federation "
            "trains the unpenalised, unconstrained model.",
            InactivePenaltyWarning,
            stacklevel=caller_stacklevel(),
        )
    constraint = None
    if constrained:
        constraint = RateConstraint.of(
            model,
            n_groups,
            # A warm start continues the multipliers where the fit left them.
            multipliers=getattr(previous, "multipliers_", None),
        )
    while True:
        try:
            query = {
                "kind": "prepare",
                "classes": classes,
                "group_labels": group_labels,
                "grouped": penalised or constrained,
                "resampled": resampled,
            }
            prepared = channel.ask(query, across=_categorical_disagreements(columns))
            break
        except Restart:
            continue
    is_categorical = next(iter(prepared.values()))["is_categorical"]
    is_categorical = is_categorical if is_categorical.size else None
    n_categorical = 0 if is_categorical is None else int(np.sum(is_categorical))
    categories = []
    for j in range(n_categorical):
        values = [answer["categories"][j] for answer in prepared.values()]
        union = unique_values(np.concatenate(values)) if values else np.array([])
        if union.size > model.max_bins:
            raise ValueError(
                f"Categorical feature {j} (of the categorical features, in "
                f"order) has {union.size} categories across the clients; "
                f"max_bins={model.max_bins} allows at most that many."
            )
        categories.append(union)
    counts = np.sum([answer["class_counts"] for answer in prepared.values()], axis=0)
    n_samples = int(counts.sum())
    early = model.early_stopping
    do_early_stopping = n_samples > 10_000 if early == "auto" else bool(early)
    if do_early_stopping and model.scoring != "loss":
        raise ValueError(
            f"scoring={model.scoring!r} with early stopping inside a federation: "
            "the clients score their validation log-loss; set scoring='loss'."
        )
    fraction = model.validation_fraction if do_early_stopping else None
    # scikit-learn bins with the rows' weights (sample, prior correction's
    # and class weights): so does the federation.
    weighted_bins = sample_weighted or prior_weighted or model.class_weight is not None
    channel.ask(
        {
            "kind": "encode",
            "categories": categories,
            "validation_fraction": fraction,
            "class_weight": _class_weight(model, counts),
            "weighted": weighted_bins,
        },
        restart=False,
    )
    numeric = federated_bin_mapper(
        channel, n_bins=model.max_bins + 1, weighted=weighted_bins
    )
    bins = {
        "kind": "bins",
        "n_bins": model.max_bins + 1,
        "is_categorical": np.array(
            [1] * n_categorical + [0] * len(numeric.bin_thresholds_), dtype=np.uint8
        ),
        "edges": [np.arange(c.size, dtype=np.float64) for c in categories]
        + list(numeric.bin_thresholds_),
    }
    channel.ask(bins, restart=False)
    mapper = bin_mapper_of(bins)
    n_features = len(bins["edges"])
    if previous is not None:
        return _continued(
            model,
            channel,
            mapper,
            bins,
            categories,
            classes,
            described,
            fairness if penalised else 0.0,
            n_groups if penalised or constrained else 1,
            do_early_stopping,
            on_tree,
            constraint,
            stopping,
        )
    # The model's fitted input checks on a placeholder row of the clients'
    # columns and dtypes (no client's value is in it).
    _fit_inputs(
        model, is_categorical, categories, placeholder_rows(columns, dtypes), classes
    )
    # The seeds scikit-learn's fit draws, in its order: the validation
    # split's (here each client's own) and the feature subsampling's.
    rng = check_random_state(model.random_state)
    model._random_seed = rng.randint(np.iinfo(np.uint32).max, dtype="u8")
    feature_seed = rng.randint(np.iinfo(np.uint32).max, dtype="u8")
    model._feature_subsample_rng = np.random.default_rng(feature_seed)
    model._n_features = n_features
    model._monotonic_cst_remapped = monotonic_constraints(model)
    model._bin_mapper = mapper
    model.do_early_stopping_ = do_early_stopping
    model._use_validation_data = fraction is not None
    model.train_score_, model.validation_score_ = [], []
    model._client_losses = []
    _boost_model(
        model,
        channel,
        mapper,
        bins,
        fairness if penalised else 0.0,
        n_groups if penalised or constrained else 1,
        do_early_stopping,
        on_tree,
        constraint,
        stopping,
    )
    if "fairness" in model.get_params():
        model.n_groups_ = n_groups
    model.__dict__.pop("groups_", None)
    if constrained:
        model.groups_ = tuple(tuple(label) for label in group_labels)
    return model, _declared(described, channel, classes)


def _continued(
    model,
    channel,
    mapper,
    bins,
    categories,
    classes,
    described,
    fairness,
    n_groups,
    do_early_stopping,
    on_tree,
    constraint=None,
    stopping="mean",
):
    """A warm start: the same rows, categories and edges; more trees."""
    known = model._bin_mapper
    encoder = (
        None
        if model._preprocessor is None
        else model._preprocessor.named_transformers_["encoder"]
    )
    same = (
        np.array_equal(model.classes_, classes)
        and len(known.bin_thresholds_) == len(mapper.bin_thresholds_)
        and all(
            np.array_equal(a, b, equal_nan=True)
            for a, b in zip(known.bin_thresholds_, mapper.bin_thresholds_, strict=True)
        )
        and (
            (encoder is None and not categories)
            or (
                encoder is not None
                and encoder.categories
                == [list(c) if len(c) else [np.nan] for c in categories]
            )
        )
    )
    if not same:
        raise ValueError(
            "warm_start continues the federation's trees on the rows they were "
            "grown on: the clients' classes, categories or bin edges changed "
            "since. Set warm_start=False to fit anew."
        )
    if do_early_stopping != model.do_early_stopping_:
        raise ValueError(
            "warm_start cannot switch early stopping on or off (the clients' "
            "rows count differently): set warm_start=False to fit anew."
        )
    model.train_score_ = list(model.train_score_)
    model.validation_score_ = list(model.validation_score_)
    # The median rule's history goes on as scikit-learn's scores do (a model
    # fitted before the rule kept one starts it anew).
    model._client_losses = list(getattr(model, "_client_losses", []))
    model._monotonic_cst_remapped = monotonic_constraints(model)
    if "fairness" in model.get_params():
        model.n_groups_ = (
            n_groups if fairness > 0 or constraint is not None else model.n_groups_
        )
    _boost_model(
        model,
        channel,
        mapper,
        bins,
        fairness,
        n_groups,
        do_early_stopping,
        on_tree,
        constraint,
        stopping,
    )
    return model, _declared(described, channel, classes)


def median_should_stop(client_losses, which, n_iter_no_change, tol):
    """Early stopping on the clients' median loss improvement.

    scikit-learn's rule (``_should_stop``) on the pooled loss asks whether
    any of the last ``n_iter_no_change`` trees improved the score by more
    than ``tol`` over the tree before them. Here each tree's improvement is
    the median, over the clients, of each client's own loss decrease since
    that reference tree: clients fewer than half of those that answered
    both cannot move it beyond the honest clients' range, where one client's
    made-up losses move the pooled loss by its share of the rows.

    Parameters
    ----------
    client_losses : list of dict
        Per tree (the baseline's first), per client index, its (training,
        validation) mean losses; None where it has none.
    which : {0, 1}
        0 for the training losses, 1 for the validation losses.
    n_iter_no_change, tol : int, float
        The estimator's.

    Returns
    -------
    stop : bool
        Whether the trees stop here.
    """
    reference_position = n_iter_no_change + 1
    if len(client_losses) < reference_position:
        return False
    reference = client_losses[-reference_position]
    for recent in client_losses[-reference_position + 1 :]:
        improvements = [
            reference[k][which] - recent[k][which]
            for k in recent
            if k in reference
            and reference[k][which] is not None
            and recent[k][which] is not None
        ]
        if improvements and np.median(improvements) > tol:
            return False
    return True


def _boost_model(
    model,
    channel,
    mapper,
    bins,
    fairness,
    n_groups,
    do_early_stopping,
    on_tree=None,
    constraint=None,
    stopping="mean",
):
    """Grow the model's trees (more of them, on a warm start) from the clients.

    ``on_tree(model)``, after each tree, sees the model as it stands (its
    trees so far); a true return value stops the loop (a callback's). Under
    a rate ``constraint``, the model's constraint attributes are its own at
    the end.
    """
    n_features = len(bins["edges"])

    def on_start(baseline):
        model._baseline_prediction = np.array([[baseline]])

    # Per tree, each client's own (training, validation) losses: what the
    # median rule reads (kept on the model, so that a warm start goes on).
    client_losses = model._client_losses

    def on_iteration(predictors, scores):
        stop = False
        if scores is not None:  # early stopping's scores, as scikit-learn's
            model.train_score_.append(-scores[0])
            if scores[1] is not None:
                model.validation_score_.append(-scores[1])
            client_losses.append(scores[2])
            if predictors and do_early_stopping and stopping == "median":
                stop = median_should_stop(
                    client_losses,
                    1 if model._use_validation_data else 0,
                    model.n_iter_no_change,
                    model.tol,
                )
            elif predictors and do_early_stopping:
                stop = model._should_stop(
                    model.validation_score_
                    if model._use_validation_data
                    else model.train_score_
                )
        if predictors and on_tree is not None:
            model._predictors = predictors
            stop = bool(on_tree(model)) or stop
        return stop

    continued = list(getattr(model, "_predictors", []))
    baseline, model._predictors = boost(
        channel,
        bin_mapper=mapper,
        is_categorical=bins["is_categorical"],
        monotonic_cst=model._monotonic_cst_remapped,
        interaction_cst=model._check_interaction_cst(n_features),
        max_iter=model.max_iter,
        learning_rate=model.learning_rate,
        max_leaf_nodes=model.max_leaf_nodes,
        max_depth=model.max_depth,
        min_samples_leaf=model.min_samples_leaf,
        l2_regularization=model.l2_regularization,
        max_features=model.max_features,
        feature_rng=model._feature_subsample_rng,
        fairness=fairness,
        n_groups=n_groups,
        baseline=(float(model._baseline_prediction[0, 0]) if continued else None),
        score=do_early_stopping,
        on_start=on_start,
        on_iteration=on_iteration,
        predictors=continued or None,
        constraint=constraint,
    )
    model._baseline_prediction = np.array([[baseline]])
    for name in CONSTRAINT_ATTRIBUTES:
        model.__dict__.pop(name, None)
    if constraint is not None:
        for name, value in constraint_fitted_attributes(constraint).items():
            setattr(model, name, value)
    model.train_score_ = np.asarray(model.train_score_)
    model.validation_score_ = np.asarray(model.validation_score_)


def _declared(described, channel, classes):
    """What the clients still in the federation declared (sizes, prior)."""
    kept = {k: described[k] for k in channel.active}
    counts = np.zeros(2)
    for answer in kept.values():
        # Weighted rows: their weight per class (the class prior's).
        counts[np.searchsorted(classes, answer["classes"])] += answer.get(
            "class_weights", answer["class_counts"]
        )
    return {
        "classes": classes,
        "class_counts": counts,
        "rows": {k: int(answer["n"]) for k, answer in kept.items()},
    }


def _agreed_classes(described):
    """The federation's two classes (its rows per class: ``_declared``)."""
    labels = [answer["classes"] for answer in described.values()]
    classes = unique_values(np.concatenate(labels))
    if classes.size != 2:
        raise ValueError(
            "A federation of boosted trees trains a binary classifier; the "
            f"clients' labels are {classes.size} classes {classes.tolist()[:10]}."
        )
    return classes


def _merged_groups(described, channel):
    """The union of the clients' groups, in ``encode_groups``' order (or None)."""
    given = {k: a for k, a in described.items() if a["group_labels"] is not None}
    if not given:
        return None
    if len(given) != len(described):
        missing = sorted(set(described) - set(given))
        raise ValueError(
            f"{channel.gate.name(missing[0])} has no sensitive features where "
            "other clients have them: give every client its rows' attributes."
        )
    names = {tuple(a["sensitive_names"]) for a in given.values()}
    if len(names) != 1:
        raise ValueError(
            f"The clients name their sensitive attributes differently: {sorted(names)}."
        )
    (names,) = names
    union = sorted(
        {tuple(label) for a in given.values() for label in a["group_labels"]},
        key=repr,
    )
    merged = encode_groups(
        {name: [label[j] for label in union] for j, name in enumerate(names)}
    )
    return [list(label) for label in merged.labels]


def tree_model_message(model):
    """A fitted federation's trees as a message a client rebuilds them from.

    Parameters
    ----------
    model : HistGradientBoostingClassifier
        The federation's fitted model.

    Returns
    -------
    message : dict
        Its baseline, trees, bins and categories: numbers, arrays and lists.
    """
    encoder = (
        None
        if model._preprocessor is None
        else model._preprocessor.named_transformers_["encoder"]
    )
    return {
        "baseline": float(model._baseline_prediction[0, 0]),
        "trees": [tree_message(tree[0]) for tree in model._predictors],
        "n_bins": int(model._bin_mapper.n_bins),
        "is_categorical": np.asarray(model._bin_mapper.is_categorical_, np.uint8),
        "edges": [np.asarray(t, np.float64) for t in model._bin_mapper.bin_thresholds_],
        "input_categorical": (
            None
            if model.is_categorical_ is None
            else np.asarray(model.is_categorical_, dtype=bool)
        ),
        "categories": (
            None
            if encoder is None
            else [np.asarray(c, dtype=object) for c in encoder.categories]
        ),
        "classes": np.asarray(model.classes_),
    }


def tree_model_from_message(estimator, message, X):
    """The federation's fitted model, rebuilt on a client from its message.

    Parameters
    ----------
    estimator : HistGradientBoostingClassifier
        The federation's (unfitted) estimator.
    message : dict
        What :func:`tree_model_message` wrote.
    X : array-like or DataFrame
        Rows of the client's (their columns and dtypes only are read).

    Returns
    -------
    model : HistGradientBoostingClassifier
        Fitted: it predicts as the server's model does.
    """
    model = clone(estimator)
    _fit_inputs(
        model,
        message["input_categorical"],
        message["categories"],
        X,
        message["classes"],
    )
    model._bin_mapper = bin_mapper_of(message)
    model._predictors = [[tree_predictor(tree)] for tree in message["trees"]]
    model._baseline_prediction = np.array([[float(message["baseline"])]])
    return model


def _fit_inputs(model, is_categorical, categories, X, classes):
    """A model's fitted input checks and classes, from the federation's.

    scikit-learn's preprocessing with the federation's categories (or its
    plain validation), fitted on rows whose values are not used (a
    server's placeholder, a client's own); what its ``_encode_y`` sets for
    two classes; its loss.
    """
    model._preprocessor = (
        None
        if is_categorical is None
        else tree_preprocessor(is_categorical, categories)
    )
    if model._preprocessor is None:
        validate_data(model, X, dtype=[np.float64], ensure_all_finite=False)
        model.is_categorical_ = None
        model._is_categorical_remapped = None
    else:
        model._preprocessor.fit(X)
        model.is_categorical_ = np.asarray(is_categorical, dtype=bool)
        model.n_features_in_ = model._preprocessor.n_features_in_
        if hasattr(model._preprocessor, "feature_names_in_"):
            model.feature_names_in_ = model._preprocessor.feature_names_in_
        # The categorical features first, as the preprocessor outputs them.
        model._is_categorical_remapped = np.sort(model.is_categorical_)[::-1]
    model.classes_ = np.asarray(classes)
    model.n_trees_per_iteration_ = 1
    model._loss = model._get_loss(sample_weight=None)
