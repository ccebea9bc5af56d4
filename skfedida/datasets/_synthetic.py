"""Seeded synthetic federations of clients x intersectional groups."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Mapping

import numpy as np
from sklearn.utils import Bunch, check_random_state

from .._compat import Hidden, validate_params

__all__ = ["make_federated_classification", "make_roc_like"]

# The paper's Table S2 (ROC Epistry): per client, the share of each race x gender
# group and the outcome prevalence within it, in percent. Clients in columns;
# groups in rows, in itertools.product(race, gender) order: White Male, White
# Female, Black Male, ..., Hispanic Female.
_ROC_PROPORTIONS = (
    np.array(
        [
            [16.1, 44.3, 36.8, 58.9],
            [39.7, 14.9, 35.1, 16.2],
            [16.4, 11.9, 9.9, 6.4],
            [8.0, 16.3, 11.4, 6.5],
            [9.6, 2.4, 2.1, 1.9],
            [3.5, 3.2, 0.8, 1.2],
            [4.4, 2.1, 3.0, 6.8],
            [2.3, 4.9, 0.9, 2.1],
        ]
    ).T
    / 100.0
)
_ROC_PREVALENCE = (
    np.array(
        [
            [9.9, 19.9, 16.6, 10.4],
            [6.8, 3.9, 10.0, 9.0],
            [10.5, 7.8, 5.9, 10.6],
            [5.2, 4.6, 10.8, 2.8],
            [15.1, 17.1, 14.0, 4.9],
            [6.0, 3.6, 5.9, 7.7],
            [7.8, 10.8, 19.4, 10.1],
            [6.1, 8.2, 0.0, 2.1],
        ]
    ).T
    / 100.0
)
_ROC_N_SAMPLES = 7425


def _per_client_table(value, n_clients, n_groups, name, *, probabilities):
    """Broadcast a scalar, a per-group or a per-client x group table."""
    table = np.asarray(value, dtype=np.float64)
    if table.ndim == 0:
        table = np.full((n_clients, n_groups), float(table))
    elif table.ndim == 1:
        if table.shape[0] != n_groups:
            raise ValueError(
                f"{name} has {table.shape[0]} values but there are {n_groups} "
                "intersectional groups."
            )
        table = np.tile(table, (n_clients, 1))
    elif table.shape != (n_clients, n_groups):
        raise ValueError(
            f"{name} must have shape ({n_clients}, {n_groups}) (clients x groups); "
            f"got {table.shape}."
        )
    if (
        not np.all(np.isfinite(table))
        or np.any(table < 0)
        or (not probabilities and np.any(table > 1))
    ):
        allowed = ">= 0" if probabilities else "in [0, 1]"
        raise ValueError(f"{name} must hold finite values {allowed}.")
    if probabilities:
        totals = table.sum(axis=1, keepdims=True)
        if np.any(totals <= 0):
            raise ValueError(f"every client needs a positive total in {name}.")
        table = table / totals
    return table


def _class_table(class_proportions, n_clients, n_groups, n_classes):
    """Class shares per (client, group): (n_clients, n_groups, n_classes)."""
    table = np.asarray(
        np.ones(n_classes) if class_proportions is None else class_proportions,
        dtype=np.float64,
    )
    shapes = [(n_classes,), (n_groups, n_classes), (n_clients, n_groups, n_classes)]
    if table.shape not in shapes:
        raise ValueError(
            f"class_proportions must have shape {shapes[0]}, {shapes[1]} "
            f"(groups x classes) or {shapes[2]} (clients x groups x classes); "
            f"got {table.shape}."
        )
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise ValueError("class_proportions must hold finite values >= 0.")
    table = np.broadcast_to(table, shapes[2])
    totals = table.sum(axis=2, keepdims=True)
    if np.any(totals <= 0):
        raise ValueError("every group needs a positive total in class_proportions.")
    return table / totals


def _client_sizes(n_samples, n_clients, client_sizes):
    if client_sizes is None:
        weights = np.ones(n_clients)
    else:
        weights = np.asarray(client_sizes, dtype=np.float64)
        if (
            weights.shape != (n_clients,)
            or not np.isfinite(weights).all()
            or np.any(weights <= 0)
        ):
            raise ValueError(
                f"client_sizes must hold {n_clients} positive weights, all finite; got "
                f"{client_sizes!r}."
            )
    # Largest-remainder rounding: sizes add up to n_samples exactly.
    exact = n_samples * weights / weights.sum()
    sizes = np.floor(exact).astype(np.int64)
    remainder = n_samples - sizes.sum()
    sizes[np.argsort(sizes - exact, kind="stable")[:remainder]] += 1
    return sizes


@validate_params(
    {
        # Types here; ranges checked by the function, whose messages name them.
        "n_samples": [numbers.Integral],
        "n_clients": [numbers.Integral],
        "n_features": [numbers.Integral],
        "sensitive_attributes": [Mapping, None],
        # One number is also a share for every group: equal shares.
        "group_proportions": ["array-like", Hidden(numbers.Real), None],
        "prevalence": [numbers.Real, "array-like", None],
        "n_classes": [numbers.Integral],
        "class_proportions": ["array-like", None],
        "client_sizes": ["array-like", None],
        "heterogeneity": [numbers.Real],
        "class_sep": [numbers.Real],
        "group_shift": [numbers.Real],
        "client_shift": [numbers.Real],
        "as_frame": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_federated_classification(
    n_samples=10_000,
    *,
    n_clients=5,
    n_features=10,
    sensitive_attributes=None,
    group_proportions=None,
    prevalence=None,
    n_classes=2,
    class_proportions=None,
    client_sizes=None,
    heterogeneity=0.0,
    class_sep=1.5,
    group_shift=0.5,
    client_shift=0.0,
    as_frame=False,
    random_state=None,
):
    """Generate a federated classification problem with sensitive groups.

    Every row belongs to a client and to an intersectional group (one value of
    each sensitive attribute). Per client, groups are drawn with
    ``group_proportions`` and the outcome within each (client, group) with
    probability ``prevalence`` (or, for more than two classes, with the
    shares ``class_proportions``); features are Gaussian around a mean that
    depends on the outcome (so they predict it), on the group (so they are
    proxies for the sensitive attributes, as real data are) and optionally on
    the client (covariate shift).

    Parameters
    ----------
    n_samples : int, default=10_000
        Total number of rows.
    n_clients : int, default=5
        Number of clients.
    n_features : int, default=10
        Number of (non-sensitive) features.
    sensitive_attributes : dict of str to list, default=None
        Attribute name to its values; groups are all combinations, in
        ``itertools.product`` order. Default:
        ``{"race": ["A", "B"], "gender": ["Female", "Male"]}``.
    group_proportions : array-like, default=None
        Share of each group: shape (n_groups,) for every client, or
        (n_clients, n_groups); rows are normalised to sum to one. Default:
        equal shares.
    prevalence : float or array-like, default=None
        Probability of the positive outcome: one value, one per group, or one
        per (client, group); None is 0.25. Two classes only.
    n_classes : int, default=2
        Number of outcome classes (``0 .. n_classes - 1``).
    class_proportions : array-like, default=None
        With more than two classes, the share of each class: shape
        (n_classes,), (n_groups, n_classes) for every client, or
        (n_clients, n_groups, n_classes); normalised to sum to one. Default:
        equal shares. Each class's features centre on their own random
        direction, ``class_sep / 2`` from the origin.
    client_sizes : array-like of shape (n_clients,), default=None
        Relative client sizes; default equal.
    heterogeneity : float, default=0.0
        0 keeps ``group_proportions`` for every client (homogeneous). A
        positive value draws each client's proportions from a Dirichlet
        distribution centred on them with concentration ``1 / heterogeneity``,
        so larger values make clients more different.
    class_sep : float, default=1.5
        Distance between the two outcome means, along a random unit direction.
    group_shift : float, default=0.5
        Standard deviation of each group's mean offset in feature space.
    client_shift : float, default=0.0
        Standard deviation of each client's mean offset in feature space.
    as_frame : bool, default=False
        Return pandas objects (requires pandas) instead of arrays.
    random_state : int, RandomState instance or None, default=None
        Seed for everything drawn.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With the fields of :func:`load_adult` (``data``, ``target``,
        ``sensitive``, ``clients``, ``feature_names``, ``DESCR``) and
        ``group_labels`` (the groups, in the order of the tables),
        ``group_proportions`` and ``prevalence`` (the (n_clients, n_groups)
        tables the rows were drawn from; with more than two classes,
        ``prevalence`` is the (n_clients, n_groups, n_classes) table of class
        shares). Without ``as_frame``,
        ``sensitive`` is a dict of attribute name to array.

    Examples
    --------
    >>> from skfedida.datasets import make_federated_classification
    >>> fed = make_federated_classification(1000, n_clients=4, random_state=0)
    >>> fed.data.shape, sorted(set(fed.clients.tolist()))
    ((1000, 10), [0, 1, 2, 3])
    >>> sorted(fed.sensitive)
    ['gender', 'race']
    """
    for name, value, low in (
        ("n_samples", n_samples, 1),
        ("n_clients", n_clients, 1),
        ("n_features", n_features, 1),
    ):
        if not isinstance(value, numbers.Integral) or value < low:
            raise ValueError(f"{name} must be an int >= {low}; got {value!r}.")
    if n_samples < n_clients:
        raise ValueError(
            f"n_samples ({n_samples}) must be at least n_clients ({n_clients})."
        )
    for name, value in (
        ("heterogeneity", heterogeneity),
        ("class_sep", class_sep),
        ("group_shift", group_shift),
        ("client_shift", client_shift),
    ):
        if not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite number >= 0; got {value!r}.")
    if not isinstance(n_classes, numbers.Integral) or n_classes < 2:
        raise ValueError(f"n_classes must be an int >= 2; got {n_classes!r}.")
    if n_classes > 2 and prevalence is not None:
        raise ValueError(
            f"prevalence is the positive share of two classes; with n_classes="
            f"{n_classes} give the class shares as class_proportions."
        )
    if n_classes == 2 and class_proportions is not None:
        raise ValueError(
            "class_proportions is for more than two classes; with two, give the "
            "positive share as prevalence."
        )
    if sensitive_attributes is None:
        sensitive_attributes = {"race": ["A", "B"], "gender": ["Female", "Male"]}
    if not sensitive_attributes or any(
        len(values) == 0 for values in sensitive_attributes.values()
    ):
        raise ValueError("sensitive_attributes needs at least one value per attribute.")
    names = list(sensitive_attributes)
    group_labels = list(itertools.product(*sensitive_attributes.values()))
    n_groups = len(group_labels)

    rng = check_random_state(random_state)
    proportions = _per_client_table(
        np.ones(n_groups) if group_proportions is None else group_proportions,
        n_clients,
        n_groups,
        "group_proportions",
        probabilities=True,
    )
    if heterogeneity > 0:
        concentration = proportions / heterogeneity
        # Dirichlet needs positive parameters; groups at 0 stay absent.
        drawn = np.zeros_like(proportions)
        for k in range(n_clients):
            present = concentration[k] > 0
            drawn[k, present] = rng.dirichlet(concentration[k, present])
        proportions = drawn
    if n_classes == 2:
        prevalence = _per_client_table(
            0.25 if prevalence is None else prevalence,
            n_clients,
            n_groups,
            "prevalence",
            probabilities=False,
        )
    else:
        prevalence = _class_table(class_proportions, n_clients, n_groups, n_classes)

    sizes = _client_sizes(n_samples, n_clients, client_sizes)
    clients = np.repeat(np.arange(n_clients), sizes)
    # Group of every row: inverse-CDF draws against its client's proportions.
    cumulative = np.cumsum(proportions, axis=1)
    cumulative[:, -1] = 1.0
    uniforms = rng.random_sample(n_samples)
    group = np.empty(n_samples, dtype=np.intp)
    for k in range(n_clients):
        rows = clients == k
        group[rows] = np.searchsorted(cumulative[k], uniforms[rows], side="right")
    if n_classes == 2:
        target = (rng.random_sample(n_samples) < prevalence[clients, group]).astype(
            np.int64
        )
        direction = rng.standard_normal(n_features)
        direction /= np.linalg.norm(direction)
        class_means = np.outer(target - 0.5, direction * class_sep)
    else:
        # Inverse-CDF draws against each row's (client, group) class shares.
        shares = np.cumsum(prevalence[clients, group], axis=1)
        shares[:, -1] = 1.0
        uniforms = rng.random_sample(n_samples)
        target = (shares <= uniforms[:, None]).sum(axis=1).astype(np.int64)
        centres = rng.standard_normal((n_classes, n_features))
        centres *= class_sep / 2 / np.linalg.norm(centres, axis=1, keepdims=True)
        class_means = centres[target]
    group_offsets = rng.standard_normal((n_groups, n_features)) * group_shift
    client_offsets = rng.standard_normal((n_clients, n_features)) * client_shift
    data = (
        rng.standard_normal((n_samples, n_features))
        + class_means
        + group_offsets[group]
        + client_offsets[clients]
    )
    label_values = np.array(group_labels, dtype=object)
    sensitive = {name: label_values[group, j] for j, name in enumerate(names)}
    feature_names = [f"x{j}" for j in range(n_features)]
    descr = (
        f"Synthetic federation: {n_samples} rows, {n_clients} clients, "
        f"{n_features} features, {n_groups} groups over {names}."
    )
    if as_frame:
        import pandas as pd

        data = pd.DataFrame(data, columns=feature_names)
        target = pd.Series(target, name="target")
        sensitive = pd.DataFrame(sensitive)
        clients = pd.Series(clients, name="client")
    return Bunch(
        data=data,
        target=target,
        sensitive=sensitive,
        clients=clients,
        feature_names=feature_names,
        DESCR=descr,
        group_labels=group_labels,
        group_proportions=proportions,
        prevalence=prevalence,
    )


@validate_params(
    {
        "n_samples": [numbers.Integral],
        "n_features": [numbers.Integral],
        "as_frame": ["boolean"],
        "random_state": ["random_state"],
    },
    # **kwargs go to make_federated_classification unchecked: it checks them.
    prefer_skip_nested_validation=False,
)
def make_roc_like(
    n_samples=_ROC_N_SAMPLES,
    *,
    n_features=7,
    as_frame=False,
    random_state=None,
    **kwargs,
):
    """Generate data with the composition of the paper's ROC dataset.

    The ROC Epistry data (out-of-hospital cardiac arrest outcomes) are
    restricted clinical data that cannot be shipped. This preset reproduces
    what the paper publishes about them (its Table S2): 4 clients, 8 race x
    gender groups with each client's group shares and the outcome prevalence
    per client and group (3% to 20%, 0% for one group of one client), 7
    predictors and 7,425 rows. The paper does not give the client sizes, so
    clients are of equal size. Features are synthetic
    (see :func:`make_federated_classification`).

    Parameters
    ----------
    n_samples : int, default=7425
        Total number of rows (the size of the paper's ROC cohort).
    n_features : int, default=7
        Number of predictors (7 in the paper).
    as_frame : bool, default=False
        Return pandas objects.
    random_state : int, RandomState instance or None, default=None
        Seed.
    **kwargs
        Further arguments of :func:`make_federated_classification`
        (``class_sep``, ``group_shift``, ``client_shift``, ``client_sizes``).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As :func:`make_federated_classification`; sensitive attributes
        ``race`` and ``gender``.

    Examples
    --------
    >>> from skfedida.datasets import make_roc_like
    >>> roc = make_roc_like(random_state=0)
    >>> roc.data.shape, roc.group_proportions.shape
    ((7425, 7), (4, 8))
    """
    for fixed in (
        "sensitive_attributes",
        "group_proportions",
        "prevalence",
        "n_clients",
        "heterogeneity",
    ):
        if fixed in kwargs:
            raise TypeError(f"make_roc_like fixes {fixed}; it cannot be passed.")
    bunch = make_federated_classification(
        n_samples,
        n_clients=4,
        n_features=n_features,
        sensitive_attributes={
            "race": ["White", "Black", "Asian", "Hispanic"],
            "gender": ["Male", "Female"],
        },
        group_proportions=_ROC_PROPORTIONS,
        prevalence=_ROC_PREVALENCE,
        as_frame=as_frame,
        random_state=random_state,
        **kwargs,
    )
    bunch.DESCR = (
        "ROC-like synthetic data: the client x race x gender composition and "
        "outcome prevalence of the FedIDA paper's Table S2, with synthetic "
        "features. " + bunch.DESCR
    )
    return bunch
