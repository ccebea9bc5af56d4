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

This module is the estimator's entry (``fit_trees``: the in-process
clients, their batch, and the fitted attributes, ``adopt_trees``); the
clients' side is ``_tree_client``, the server's queries ``_tree_server``,
and the message a Flower client rebuilds the trees from lives with the
Flower protocol (``skfedida.flower._protocol``).
"""

from __future__ import annotations

import copy
import numbers

import numpy as np
from sklearn.base import clone
from sklearn.utils import column_or_1d
from sklearn.utils.validation import validate_data

from .._compat import (
    num_samples,
    safe_indexing,
)
from .._gate._policy import ReplyGate
from .._groups import check_labels_complete, encode_groups, take_rows
from ..ensemble._batch import ClientBatch
from ..ensemble._boosting import (
    TreeChannel,
    in_process,
)
from ._client import (
    _client_seeds,
    _ClientData,
    _resample,
    _round_sampler,
)
from ._tree_client import (
    _OWN_ANSWER,
    TrainingRows,
    TreeFederationClient,
    _rate_weight,
    client_training_rows,
    tree_client,
)
from ._tree_server import federated_trees, prior_weighted


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
    ids, codes = federation._client_codes(clients, n_samples)
    n_clients = len(ids)
    seeds = _client_seeds(federation.random_state, n_clients)
    parts = [np.flatnonzero(codes == k) for k in range(n_clients)]

    def weight_of(k):
        return None if sample_weight is None else sample_weight[parts[k]]

    def rows_of(k):
        """Client k's rows, seed and id: the keywords of its client's entries."""
        rows = parts[k]
        return {
            "X": safe_indexing(X, rows),
            "y": y[rows],
            "sensitive": (
                None
                if sensitive_features is None
                else take_rows(sensitive_features, rows)
            ),
            "seed": seeds[k],
            "client": ids[k].tolist(),
            "weight": weight_of(k),
        }

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
            client_training_rows(federation, **rows_of(k)) for k in range(n_clients)
        ]
        if federation.strategy == "central":
            models = [_one_machine(federation, _pooled(trained), seeds[0])]
        else:
            models = [
                _one_machine(federation, rows, seed)
                for rows, seed in zip(trained, seeds, strict=True)
            ]
        described = {
            "classes": classes,
            "class_counts": np.sum(
                [
                    np.bincount(
                        np.searchsorted(classes, rows.y),
                        weights=rows.weight,
                        minlength=2,
                    )
                    for rows in trained
                ],
                axis=0,
            ),
            "rows": {k: len(rows.y) for k, rows in enumerate(trained)},
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
    members = [tree_client(federation, **rows_of(k)) for k in range(n_clients)]
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


def _pooled(trained):
    """The clients' training rows (``TrainingRows``), pooled in client order."""
    first = trained[0]
    return TrainingRows(
        _concat_rows([rows.X for rows in trained]),
        np.concatenate([rows.y for rows in trained]),
        None
        if first.sensitive is None
        else _concat_rows([rows.sensitive for rows in trained]),
        None
        if first.weight is None
        else np.concatenate([rows.weight for rows in trained]),
    )


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


def _one_machine(federation, training_rows, seed):
    """The estimator fitted on rows of one machine (central, or one client)."""
    X, y = training_rows.X, training_rows.y
    sensitive, weight = training_rows.sensitive, training_rows.weight
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
