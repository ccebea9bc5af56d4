"""The server of a federation of boosted trees: the queries and the fit.

``federated_trees`` runs scikit-learn's fit of
``HistGradientBoostingClassifier`` step by step over a ``TreeChannel``:
it asks the clients to describe their data and agrees on it (classes,
schema, categories, groups), asks for the bin edges' counts, then boosts
(``skfedida.ensemble._boosting.boost``), with early stopping decided on
the clients' losses (``median_should_stop``) and a warm start continued
(``_continued``). Whatever carries the queries (in-process calls or Flower
messages), this is the one server.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import validate_data

from .._compat import (
    unique_values,
)
from .._gate._tree_rules import category_kind, disagreement_problems
from .._groups import encode_groups
from .._models._constraints import (
    CONSTRAINT_ATTRIBUTES,
    RateConstraint,
    constraint_fitted_attributes,
)
from ..ensemble._binning import federated_bin_mapper
from ..ensemble._boosting import (
    Restart,
    boost,
)
from ..ensemble._gradient_boosting import monotonic_constraints
from ..exceptions import InactivePenaltyWarning, caller_stacklevel
from ._pipeline import placeholder_rows
from ._tree_client import bin_mapper_of, tree_preprocessor


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
    fit_inputs(
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
        Per tree (the baseline's first), per client index, its mean losses
        (``Losses``: ``train`` and ``validation``, None where it has none).
    which : {"train", "validation"}
        The losses the rule reads.
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
            getattr(reference[k], which) - getattr(recent[k], which)
            for k in recent
            if k in reference
            and getattr(reference[k], which) is not None
            and getattr(recent[k], which) is not None
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

    # Per tree, each client's own Losses (training, validation): what the
    # median rule reads (kept on the model, so that a warm start goes on).
    client_losses = model._client_losses

    def on_iteration(predictors, scores):
        stop = False
        if scores is not None:  # early stopping's scores, as scikit-learn's
            model.train_score_.append(-scores.train)
            if scores.validation is not None:
                model.validation_score_.append(-scores.validation)
            client_losses.append(scores.by_client)
            if predictors and do_early_stopping and stopping == "median":
                stop = median_should_stop(
                    client_losses,
                    "validation" if model._use_validation_data else "train",
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


def fit_inputs(model, is_categorical, categories, X, classes):
    """A model's fitted input checks and classes, from the federation's.

    scikit-learn's preprocessing with the federation's categories (or its
    plain validation), fitted on rows whose values are not used (a
    server's placeholder, a client's own); what its ``_encode_y`` sets for
    two classes; its loss. The server calls it for its fitted model, and a
    Flower client for the model it rebuilds from the server's message.

    Parameters
    ----------
    model : HistGradientBoostingClassifier
        The model to set up, in place.
    is_categorical : array-like of bool or None
        The federation's categorical input features; None when it has none
        (the plain validation of numeric inputs).
    categories : list of array-like or None
        The federation's categories of each categorical feature.
    X : array-like or DataFrame
        Rows of the right columns and dtypes (their values are not used).
    classes : array-like
        The federation's classes.
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
