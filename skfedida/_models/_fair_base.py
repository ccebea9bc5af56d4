"""What the fairness-penalised classifiers share.

Both estimators minimise, over a set of parameter arrays,

    mean log-loss + fairness * f(scores) + alpha * ||weights||^2

where the scores are the model's logits (one per row for two classes, one per
row and class, under a softmax, for more) and f is a penalty of
:mod:`skfedida.penalty`. A subclass provides the model (initial parameters,
scores, and the back-propagation of a gradient in the scores); this module
provides input handling (sensitive attributes in both modes, labels), the
objective and its gradient, and minibatch training with a step-size safeguard.
"""

from __future__ import annotations

import contextlib
import itertools
import numbers
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_softmax, softmax
from sklearn import get_config
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import check_random_state, column_or_1d
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._compat import (
    CachedParamNamesMixin,
    Interval,
    StrOptions,
    check_partial_fit_first_call,
)
from .._doc_links import DocLinkMixin
from .._groups import (
    SensitiveGroups,
    check_labels_complete,
    check_not_resampled_with,
    column_positions,
    encode_groups,
    resolve_sensitive,
)
from .._minibatch import epoch_minibatches, epochs_per_call, minibatch_bounds
from .._validation import (
    checked_float_matrix,
    columns_named_on_error,
    sample_weight_of,
)
from ..exceptions import (
    DataScaleWarning,
    InactivePenaltyWarning,
    SensitiveFeaturesWarning,
    caller_stacklevel,
)
from ._constraints import (
    CONSTRAINT_PARAMETERS,
    RateConstraint,
    constraint_fitted_attributes,
    constraint_rates,
    constraint_request,
    fairness_levers,
    forget_constraint,
    rate_histograms,
    term_gradient,
    term_value,
)
from ._penalty import PENALTIES

# Armijo condition for the minibatch step: accept a step of size eta when the
# batch objective falls by at least ARMIJO * eta * ||g||^2; otherwise halve.
# With 1/2 an accepted step never passes the minimum along the gradient of a
# quadratic (Vaswani et al., 2019, "Painless stochastic gradient").
ARMIJO = 0.5
# After this many halvings the search goes on only while the decrease it asks
# for is above the round-off of the objective (see ``_search_goes_on``): on
# features of a huge scale the curvature along the gradient grows with the
# square of the scale, so the step must shrink far below learning_rate * 2**-40
# (about 2**-130 of it at 1e20), and giving up there took no step at all,
# silently; at the round-off limit no step can pass the test, so the search
# stops.
MAX_HALVINGS = 40
_EPS = float(np.finfo(np.float64).eps)


#: Inputs beyond this magnitude make squared gradient norms overflow.
_MAX_MAGNITUDE = 1e100

#: Rounds of a full-batch fit under a rate constraint: the multipliers step
#: before each (the trees step once per tree, 100 by default).
CONSTRAINT_ROUNDS = 50

#: A full-batch fit under a rate constraint keeps, of its rounds whose
#: largest gap beyond the tolerance is within this of the smallest, the one
#: of the lowest objective.
BEST_ROUND_SLACK = 0.01

#: Features whose largest absolute values differ by more than this factor
#: make one step size wrong for some of them.
_SCALE_RATIO = 1e4


def largest_input(estimator):
    """The largest feature value ``estimator`` trains well on, if it has one.

    A network's hidden units saturate beyond it (``FairMLPClassifier``: 1e3).
    What a federation of the estimator checks its clients' rows against.

    Parameters
    ----------
    estimator : estimator instance
        Any estimator.

    Returns
    -------
    largest : float or None
        The limit, or None for a model without one.
    """
    return getattr(estimator, "_largest_input", None)


def warn_if_unscaled(X, owner, largest=None):
    """Warn when SGD would see features on very different scales.

    With ``largest``, also when some feature's largest absolute value
    exceeds it (a network's inputs: see ``FairMLPClassifier._largest_input``).
    """
    if sp.issparse(X):
        scale = np.asarray(abs(X).max(axis=0).todense()).ravel()
    else:
        scale = np.max(np.abs(X), axis=0) if X.shape[0] else np.zeros(0)
    scale = scale[scale > 0].astype(np.float64)
    if largest is not None and scale.size and scale.max() > largest:
        warnings.warn(
            f"{owner}'s features reach {scale.max():.3g} in absolute value: its "
            "hidden units start from weights meant for features on a scale of "
            f"order 1, so beyond about {largest:g} they saturate and the network may "
            "learn nothing (AUROC 0.5). Scale the features first, e.g. with "
            "sklearn.preprocessing.StandardScaler.",
            DataScaleWarning,
            stacklevel=caller_stacklevel(),
        )
        return
    if scale.size and scale.max() > _SCALE_RATIO * scale.min():
        warnings.warn(
            f"{owner} trains by stochastic gradient steps, and its features "
            f"differ in scale by a factor of {scale.max() / scale.min():.3g} "
            f"(largest absolute values from {scale.min():.3g} to "
            f"{scale.max():.3g}): one step size cannot suit them all, and the "
            "model may learn nothing (AUROC 0.5). Scale the features first, "
            "e.g. with sklearn.preprocessing.StandardScaler.",
            DataScaleWarning,
            stacklevel=caller_stacklevel(),
        )


#: Columns larger than this (in absolute value) are optimised in units of
#: their magnitude by ``FairPenaltyLogisticRegression.fit``; smaller ones, as
#: standardized features are, in their own units, unchanged.
_UNIT_THRESHOLD = 2.0**10


def coefficient_units(X):
    """Per column of X, the unit in which L-BFGS takes its coefficient.

    L-BFGS's first step moves the parameters by about 1 whatever the scale of
    the features: on columns near 1e18 that makes the scores near 1e18, the
    squared penalty near 1e36, and its line search ended at the zero start,
    "converged" (AUROC 0.5). Optimising ``theta_j = unit_j * coef_j`` instead,
    with ``unit_j`` the power of two nearest above the column's largest
    absolute value, is the same problem (the division by a power of two is
    exact) on columns of magnitude about 1. Columns up to ``_UNIT_THRESHOLD``
    keep the unit 1, so ordinary (scaled) data are optimised as before.
    """
    if sp.issparse(X):
        largest = np.asarray(abs(X).max(axis=0).todense(), dtype=np.float64).ravel()
    else:
        largest = (
            np.max(np.abs(X), axis=0).astype(np.float64)
            if X.shape[0]
            else np.zeros(X.shape[1])
        )
    units = np.ones(X.shape[1])
    large = largest > _UNIT_THRESHOLD
    # frexp: largest = mantissa * 2**exponent with mantissa in [0.5, 1).
    units[large] = np.ldexp(1.0, np.frexp(largest[large])[1])
    return units


def normalised_weight(weight):
    """Row weights scaled to a largest value of 1.

    The objective (a weighted mean loss, and a penalty of ratios of weighted
    group sums) does not change when every weight is multiplied by one
    factor; its group sums and their products would overflow (weights near
    1e160) or underflow (near 1e-170, silently switching the penalty off).
    """
    largest = weight.max() if weight.size else 0.0
    return weight / largest if largest > 0 else weight


class CheckedRows(NamedTuple):
    """Rows checked once by :meth:`BaseFairClassifier.check_rows`.

    A named tuple, so ``X_model, y_codes, groups = model.check_rows(...)``
    reads it as before, and callers that need one part name it.

    Attributes
    ----------
    X_model : {ndarray, sparse matrix} of shape (n_samples, n_model_features)
        The model's inputs: X checked, without the sensitive columns.
    y_codes : ndarray of shape (n_samples,) or None
        The labels as float codes; None when no labels were checked.
    groups : SensitiveGroups
        The rows' groups.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> X, y = np.array([[0.0], [1.0], [2.0], [3.0]]), np.array([0, 1, 0, 1])
    >>> model = FairPenaltyLogisticRegression().partial_fit(X, y, classes=[0, 1])
    >>> model.check_rows(X).y_codes is None
    True
    """

    X_model: object
    y_codes: object
    groups: object


class Scores(NamedTuple):
    """A model's logits of some rows, and what back-propagation needs of them.

    ``cache`` is None unless asked for (``_scores(..., cache=True)``).
    """

    logits: np.ndarray
    cache: object


class Objective(NamedTuple):
    """The training objective of a batch, and its gradient (None unless asked)."""

    value: float
    gradients: list | None


class Batch:
    """Model inputs, labels (0/1), group codes and weights of some rows."""

    __slots__ = (
        "X",
        "groups",
        "labels",
        "n_groups",
        "rows_checked",
        "weight",
        "weight_sum",
        "y",
    )

    def __init__(self, X, y, groups, n_groups, weight, *, rows_checked=0, labels=None):
        self.X, self.y, self.groups, self.n_groups = X, y, groups, n_groups
        self.weight = weight
        self.weight_sum = float(weight.sum())
        # The groups' labels (attribute values) of the codes, where known:
        # a rate constraint's term is per group label.
        self.labels = labels
        # The number of labels check_minibatch_rows passed these rows and
        # their bounds for (train_minibatches' entry), 0 if not checked: a
        # loop for as many labels need not check them again; one whose
        # parameters are for another number (a failed fit can leave classes_
        # and the parameters out of step) checks them itself.
        self.rows_checked = rows_checked

    def take(self, rows):
        return Batch(
            self.X[rows],
            self.y[rows],
            self.groups[rows],
            self.n_groups,
            self.weight[rows],
            labels=self.labels,
        )

    def slice(self, start, stop):
        """Rows ``start:stop``, as views."""
        return Batch(
            self.X[start:stop],
            self.y[start:stop],
            self.groups[start:stop],
            self.n_groups,
            self.weight[start:stop],
            labels=self.labels,
        )


def compiled_loop_inputs(batch, bounds, n_labels=2, order=None):
    """A ``Batch``'s rows and minibatch bounds as the compiled loops take them.

    X, y, groups, n_groups, weight, bounds and order: float64 / intp,
    contiguous but for X when an order is given (order None: the rows as
    they lie). The loops index their buffers
    by label and group code, and the rows by ``order``, without bounds
    checks, so these are checked here (O(n), once per call): an
    out-of-range code or row is an error, not a read or write past a buffer.
    """
    if order is None:
        X = np.ascontiguousarray(batch.X, dtype=np.float64)
    else:
        # Gathered a minibatch at a time: any strides (a DataFrame's values
        # are column-major), without a copy of all the rows.
        X = np.asarray(batch.X, dtype=np.float64)
        if X.strides[0] % X.itemsize or X.strides[1] % X.itemsize or min(X.strides) < 0:
            X = np.ascontiguousarray(X)
    y = np.ascontiguousarray(batch.y, dtype=np.float64)
    groups = np.ascontiguousarray(batch.groups, dtype=np.intp)
    weight = np.ascontiguousarray(batch.weight, dtype=np.float64)
    bounds = np.ascontiguousarray(bounds, dtype=np.intp)
    if order is not None:
        order = np.ascontiguousarray(order, dtype=np.intp)
    n_groups = int(batch.n_groups)
    if batch.rows_checked != n_labels:
        check_minibatch_rows(
            X.shape[0], y, groups, n_groups, weight, bounds, n_labels, order=order
        )
    elif order is not None:
        check_order(order, X.shape[0], bounds)
    return X, y, groups, n_groups, weight, bounds, order


def check_order(order, n, bounds):
    """Refuse an order of rows outside ``0 .. n - 1`` or shorter than ``bounds``.

    ``order`` is ``train_minibatches``' ``rows``, as its messages say.
    """
    if order.ndim != 1 or (order.size and order.dtype.kind not in "iu"):
        raise ValueError(
            "rows must be a 1-D array of integer row positions; got "
            f"{order.ndim} dimension(s) of dtype {order.dtype}."
        )
    if order.size and not (order.min() >= 0 and order.max() < n):
        raise ValueError(f"rows holds positions outside 0..{n - 1} (X has {n} rows).")
    if bounds.size and (bounds[0] < 0 or bounds[-1] > order.size):
        raise ValueError("minibatch bounds must increase within rows.")


def check_minibatch_rows(
    n, y, groups, n_groups, weight, bounds, n_labels, *, order=None
):
    """Refuse rows a minibatch loop cannot index: the one rule of every loop.

    ``y``, ``groups`` and ``weight`` hold one entry per row of the ``n``;
    label codes lie in ``0 .. n_labels - 1`` and group codes in
    ``0 .. n_groups - 1`` (the compiled loops index their buffers by them
    without bounds checks); ``bounds`` are non-decreasing positions within
    the rows, or within ``order`` (row positions in ``0 .. n - 1``, the rows
    laid out as the minibatches take them) where one is given.
    """
    if y.shape[0] != n or groups.shape[0] != n or weight.shape[0] != n:
        raise ValueError("X, y, groups and weight must have one entry per row.")
    if n and y.dtype.kind not in "biu" and np.any(y != np.floor(y)):
        raise ValueError(
            "y must hold whole label codes (check_rows returns them); got "
            "fractional values."
        )
    if n and not (y.min() >= 0 and y.max() < n_labels):
        raise ValueError(
            f"label codes outside 0..{n_labels - 1}: the model's parameters are "
            f"for {n_labels} classes (an earlier fit that failed part way can "
            "leave classes_ and the parameters out of step: fit again)."
        )
    if n and not (groups.min() >= 0 and groups.max() < max(n_groups, 1)):
        raise ValueError(f"group codes outside 0..{n_groups - 1}.")
    if np.any(np.diff(bounds.astype(np.intp)) < 0):
        raise ValueError("minibatch bounds must increase within the rows.")
    if order is not None:
        check_order(order, n, bounds)
    elif bounds.size and (bounds[0] < 0 or bounds[-1] > n):
        raise ValueError("minibatch bounds must increase within the rows.")


def _search_goes_on(halvings, step, squared_norm, value):
    """Whether the Armijo search halves ``step`` again (every loop's rule).

    The first ``MAX_HALVINGS`` halvings always; after them, while the
    decrease the test asks for, ``ARMIJO * step * squared_norm``, is above
    the round-off of the objective ``value``: below it a trial passes or
    fails by rounding alone. It also ends a search whose value is not finite
    and, once the step underflows, every search.
    """
    return halvings < MAX_HALVINGS or ARMIJO * step * squared_norm > _EPS * abs(value)


def non_finite_gradient():
    """The error of a minibatch whose gradient is not finite (every loop)."""
    return FloatingPointError(
        "The minibatch gradient is not finite; check X for extreme "
        "values (scale the features) and sample_weight, and lower alpha or "
        "fairness if they are very large."
    )


def _centred_logits(scores):
    """Logits of more than two classes with each row's mean subtracted.

    Adding one number to every class's logit of a row leaves the softmax,
    so every prediction, unchanged: the penalty is taken of the centred
    logits so that no such shift can lower it (it would lower the
    standardized penalty's variances, and so the penalty, without treating
    any group differently). One logit per row (two classes) is returned as
    it is.
    """
    if scores.ndim == 1:
        return scores
    return scores - scores.mean(axis=1, keepdims=True)


def _probabilities(scores):
    """Class probabilities of logits: a softmax, or the sigmoid of one logit."""
    if scores.ndim == 2:
        return softmax(scores, axis=1)
    positive = expit(scores)
    return np.column_stack([1.0 - positive, positive])


class BaseFairClassifier(
    DocLinkMixin, CachedParamNamesMixin, ClassifierMixin, BaseEstimator
):
    """Base class of the fairness-penalised classifiers (not for direct use)."""

    __metadata_request__fit = {"sensitive_features": True}
    __metadata_request__partial_fit = {"sensitive_features": True}

    #: Takes skfedida's encoded groups (``SensitiveGroups``) as
    #: ``sensitive_features``: the federated client trainer passes them on
    #: as they are, instead of the values the user gave.
    accepts_encoded_groups = True

    # The largest feature magnitude the model trains well on, or None (any:
    # the logistic model's fit and Armijo steps adapt to the scale).
    _largest_input = None

    _parameter_constraints: dict = {
        "fairness": [Interval(numbers.Real, 0, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "penalty": [StrOptions(set(PENALTIES))],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_iter": [Interval(numbers.Integral, 1, None, closed="left")],
        "tol": [Interval(numbers.Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "average": ["boolean"],
        "sensitive": [str, numbers.Integral, list, tuple, None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        **CONSTRAINT_PARAMETERS,
    }

    # -- model interface, provided by subclasses ---------------------------

    def _initial_parameters(self, n_features, random_state):
        raise NotImplementedError

    def _get_params_list(self):
        raise NotImplementedError

    def _set_params_list(self, params):
        raise NotImplementedError

    def _scores(self, params, X, cache=False):
        """``Scores`` of X: its logits, and with ``cache=True`` what backprop needs."""
        raise NotImplementedError

    def _backprop(self, params, X, cache, score_gradient):
        """Gradient of every parameter array from the gradient in the scores."""
        raise NotImplementedError

    def _penalised(self, params):
        """Arrays under the L2 term (weights, not intercepts)."""
        raise NotImplementedError

    def _fixed(self, params):
        """Arrays training leaves as they are (an intercept not fitted)."""
        return []

    # -- sklearn plumbing ---------------------------------------------------

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _model_inputs(self, X, *, reset, sensitive_features=None):
        """Validated model inputs (sensitive columns dropped) and S, if any."""
        if self.sensitive is None:
            if not reset and (X_plain := checked_float_matrix(self, X)) is not None:
                return X_plain, sensitive_features
            with columns_named_on_error(X, type(self).__name__):
                X_model = validate_data(
                    self,
                    X,
                    reset=reset,
                    accept_sparse="csr",
                    dtype=[np.float64, np.float32],
                )
            if reset:
                self.model_feature_names_ = self._input_names(X_model.shape[1])
            return X_model, sensitive_features
        validate_data(self, X, reset=reset, skip_check_array=True)
        if sp.issparse(X):
            raise TypeError(
                "sensitive columns cannot be read from a sparse X; pass the "
                "sensitive attributes as sensitive_features instead."
            )
        if not hasattr(X, "columns"):
            X = np.asarray(X)
        X_model, S = resolve_sensitive(
            X,
            sensitive_features=sensitive_features,
            sensitive=self.sensitive,
            drop=True,
        )
        if reset:
            dropped = column_positions(X, self.sensitive, "sensitive")
            names = self._input_names(X.shape[1])
            self.model_feature_names_ = np.delete(names, dropped)
        with columns_named_on_error(X_model, type(self).__name__):
            X_model = check_array(
                X_model,
                accept_sparse="csr",
                dtype=[np.float64, np.float32],
                input_name="X (without the sensitive columns)",
            )
        return X_model, S

    def _input_names(self, n_features):
        names = getattr(self, "feature_names_in_", None)
        if names is not None:
            return np.asarray(names, dtype=object)
        return np.asarray([f"x{j}" for j in range(n_features)], dtype=object)

    def _encode_y(self, y, n_samples):
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected.",
                DataConversionWarning,
                stacklevel=caller_stacklevel(),
            )
            y = y.ravel()
        if y.shape[0] != n_samples:
            raise ValueError(f"X has {n_samples} rows but y has {y.shape[0]}.")
        check_labels_complete(y)
        if getattr(self, "classes_", None) is not None and y.ndim == 1:
            # Known classes: _label_codes checks every label against them, which is
            # all type_of_target would add (and it is slow on small batches).
            return y, None
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        if y_type not in ("binary", "multiclass"):
            raise ValueError(
                f"Unknown label type: {y_type!r}; y must hold class labels."
            )
        return y, y_type

    def _groups_of(self, S, n_samples, warn):
        """Group codes and labels of the rows; warn when no lever can act."""
        levers = fairness_levers(self)
        if S is None:
            if warn and levers:
                warnings.warn(
                    f"{levers} has no effect: no sensitive attributes were "
                    "given (pass sensitive_features, or name columns of X with "
                    "sensitive=).",
                    InactivePenaltyWarning,
                    stacklevel=caller_stacklevel(),
                )
            return np.zeros(n_samples, dtype=np.intp), 1, ((),)
        groups = encode_groups(S, n_samples=n_samples)
        if warn and levers and groups.n_groups > max(n_samples // 2, 1):
            warnings.warn(
                f"The sensitive attributes split {n_samples} rows into "
                f"{groups.n_groups} groups, most of them single rows: they look "
                "like an identifier, not a group membership, and the penalty "
                "then compares individuals. Check sensitive_features.",
                SensitiveFeaturesWarning,
                stacklevel=caller_stacklevel(),
            )
        if warn and groups.n_groups < 2 and levers:
            warnings.warn(
                f"The sensitive attributes take a single value {groups.labels[0]}, "
                f"so {levers} has no effect.",
                InactivePenaltyWarning,
                stacklevel=caller_stacklevel(),
            )
        return groups.codes, groups.n_groups, groups.labels

    def check_rows(self, X, y=None, *, sensitive_features=None):
        """Check rows once, for the entries that take checked rows.

        The checks ``partial_fit`` runs on every call, run once: a trusted
        caller (the federated client trainer) then trains on many subsets of
        these rows with :meth:`train_minibatches`, and predicts them with
        :meth:`predict_proba_checked`, as scikit-learn's
        ``fit(..., check_input=False)`` lets one skip the checks of rows
        checked already. The estimator must have been fitted (or primed by
        a first ``partial_fit``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows, with the sensitive columns in column mode.
        y : array-like of shape (n_samples,), default=None
            Labels, among ``classes_``; None to check X alone.
        sensitive_features : array-like, DataFrame, dict or SensitiveGroups, \
                default=None
            Sensitive attributes of the rows (metadata mode).

        Returns
        -------
        checked : CheckedRows
            A named tuple ``(X_model, y_codes, groups)``: the model's inputs
            (X checked, without the sensitive columns), the labels as float
            codes (0/1, 1 for ``classes_[1]``, for two classes, else
            ``0 .. n_classes - 1``; None without y) and the rows' groups
            (encoded with only the groups present; one group of every row
            without sensitive attributes).

        Examples
        --------
        >>> import numpy as np
        >>> from skfedida.linear_model import FairPenaltyLogisticRegression
        >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
        >>> y = np.array([0, 1, 0, 1])
        >>> S = np.array(["a", "a", "b", "b"])
        >>> model = FairPenaltyLogisticRegression().partial_fit(
        ...     X, y, classes=[0, 1], sensitive_features=S)
        >>> X_model, y_codes, groups = model.check_rows(X, y, sensitive_features=S)
        >>> y_codes, groups.codes
        (array([0., 1., 0., 1.]), array([0, 0, 1, 1]))
        >>> model = model.train_minibatches(
        ...     X_model, y_codes, groups, np.array([0, 2, 4]))
        >>> model.predict_proba_checked(X_model).shape
        (4, 2)
        """
        check_is_fitted(self)
        X_model, S = self._model_inputs(
            X, reset=False, sensitive_features=sensitive_features
        )
        n_samples = X_model.shape[0]
        if S is None:
            groups = SensitiveGroups(np.zeros(n_samples, dtype=np.intp), ((),), ())
        else:
            groups = encode_groups(S, n_samples=n_samples)
        y_codes = None
        if y is not None:
            y = column_or_1d(y, warn=True)
            if y.shape[0] != n_samples:
                raise ValueError(
                    f"y has {y.shape[0]} labels but X has {n_samples} rows; give "
                    "one label per row."
                )
            y_codes = self._label_codes(y)
        return CheckedRows(X_model, y_codes, groups)

    def _check_model_inputs(self, X):
        """Refuse what is not the model inputs ``check_rows`` returns."""
        if getattr(self, "classes_", None) is None:
            # check_is_fitted scans every attribute (~10 us): the client
            # trainer calls these entries several times per round.
            check_is_fitted(self)
        if not (isinstance(X, np.ndarray) or sp.issparse(X)) or X.ndim != 2:
            raise TypeError(
                "X must be the model inputs check_rows returns (a 2-D ndarray or "
                f"sparse matrix); got {type(X).__name__}"
                f"{f' of {X.ndim} dimensions' if hasattr(X, 'ndim') else ''}."
            )
        n_features = len(self.model_feature_names_)
        if X.shape[1] != n_features:
            raise ValueError(
                f"X has {X.shape[1]} columns; the model takes {n_features} "
                "(the model inputs check_rows returns, without sensitive columns)."
            )

    def _prepare(
        self,
        X,
        y,
        sensitive_features,
        sample_weight,
        *,
        reset,
        warn,
        allow_all_zero_weights=False,
    ):
        check_not_resampled_with(X, sensitive_features, type(self).__name__)
        X_model, S = self._model_inputs(
            X, reset=reset, sensitive_features=sensitive_features
        )
        y, _ = self._encode_y(y, X_model.shape[0])
        weight = sample_weight_of(
            sample_weight, X_model, allow_all_zero_weights=allow_all_zero_weights
        )
        if sample_weight is not None:
            weight = normalised_weight(weight)
        self._check_magnitude(X_model)
        groups, n_groups, labels = self._groups_of(S, X_model.shape[0], warn)
        return X_model, y, groups, n_groups, weight, labels

    @staticmethod
    def _check_magnitude(X):
        """Refuse inputs whose products with the weights overflow float64."""
        if get_config()["assume_finite"]:
            return  # checked once already (a federation's client rounds)
        # A Python float: comparing a float32 maximum with 1e100 would cast
        # the bound to float32 (inf, "overflow encountered in cast").
        largest = float(abs(X).max()) if X.shape[0] else 0.0
        if largest > _MAX_MAGNITUDE:
            raise ValueError(
                f"X holds values up to {largest:.3g}: scores and gradients "
                "of such inputs overflow float64, and training would stop "
                "silently at a constant model. Scale the features (e.g. "
                "sklearn.preprocessing.StandardScaler)."
            )

    def _class_labels(self, y):
        """The sorted classes of y; at least two, any number of them."""
        classes = np.unique(y)
        if len(classes) < 2:
            raise ValueError(
                f"{type(self).__name__} needs samples of at least 2 classes, but "
                f"the data contain only one class: {classes.tolist()}."
            )
        return classes

    def _n_score_columns(self):
        """1 (the logit of classes_[1]) for two classes, else one per class."""
        return 1 if len(self.classes_) == 2 else len(self.classes_)

    # -- the objective ------------------------------------------------------

    def _objective(self, params, batch, with_gradient=True, penalised=True):
        scores, cache = self._scores(params, batch.X, cache=with_gradient)
        # A minibatch of zero total weight contributes nothing (not NaN).
        y, weight, total = batch.y, batch.weight, batch.weight_sum or 1.0
        if scores.ndim == 2:  # softmax over the classes; y holds class codes
            codes = y.astype(np.intp, copy=False)
            rows = np.arange(scores.shape[0])
            # log-sum-exp of each row, shifted by its largest logit; plain
            # numpy, as scipy's logsumexp costs ~0.2 ms a call (a third of a
            # minibatch step).
            top = scores.max(axis=1, keepdims=True) if scores.size else scores
            exp_shifted = np.exp(scores - top)
            row_sum = exp_shifted.sum(axis=1)
            log_loss = top[:, 0] + np.log(row_sum) - scores[rows, codes]
        else:
            log_loss = np.logaddexp(0.0, scores) - y * scores
        value = float(np.dot(weight, log_loss) / total)
        penalty_fn = PENALTIES[self.penalty]
        if penalised and self.fairness > 0 and batch.n_groups > 1:
            penalty, penalty_gradient = penalty_fn(
                _centred_logits(scores), y, batch.groups, batch.n_groups, weight
            )
            if scores.ndim == 2:
                # Through the centring: d/ds = g - (row mean of g).
                penalty_gradient -= penalty_gradient.mean(axis=1, keepdims=True)
            value += self.fairness * penalty
        else:
            penalty_gradient = None
        # A rate constraint's term (while training under one): each row's
        # smoothed rate at the operating point, weighed by its cell.
        constrained = self._term_rows(batch) if scores.ndim == 1 else None
        if constrained is not None:
            term, cells, term_weight = constrained
            value += term_value(scores, cells, term_weight, term) / total
        penalised = self._penalised(params)
        value += self.alpha * sum(float(np.vdot(w, w)) for w in penalised)
        # FedProx's proximal term (mu / 2) ||w - w_round||^2 over every
        # array, while a federation's client trains (``proximal_term``).
        proximal = self.__dict__.get("_proximal")
        if proximal is not None:
            mu, anchor = proximal
            distance = sum(
                float(np.vdot(w - a, w - a))
                for w, a in zip(params, anchor, strict=True)
            )
            value += 0.5 * mu * distance
        if not with_gradient:
            return Objective(value, None)
        if scores.ndim == 2:
            score_gradient = exp_shifted / row_sum[:, None]  # the softmax
            score_gradient[rows, codes] -= 1.0
            score_gradient *= (weight / total)[:, None]
        else:
            score_gradient = weight * (expit(scores) - y) / total
        if penalty_gradient is not None:
            score_gradient += self.fairness * penalty_gradient
        if constrained is not None:
            score_gradient += term_gradient(scores, cells, term_weight, term) / total
        gradients = self._backprop(params, batch.X, cache, score_gradient)
        penalised_ids = {id(w) for w in penalised}
        for w, g in zip(params, gradients, strict=True):
            if id(w) in penalised_ids:
                g += 2.0 * self.alpha * w
        if proximal is not None:
            fixed = {id(w) for w in self._fixed(params)}
            for w, a, g in zip(params, anchor, gradients, strict=True):
                if id(w) not in fixed:
                    g += mu * (w - a)
        return Objective(value, gradients)

    def objective(self, X, y, *, sensitive_features=None, sample_weight=None):
        """Value of the training objective at the fitted parameters.

        ``mean log-loss + fairness * penalty + alpha * ||weights||^2`` on the
        given data, as minimised by ``fit``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data, with the sensitive columns in column mode.
        y : array-like of shape (n_samples,)
            Labels.
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes, in metadata mode.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights.

        Returns
        -------
        value : float
            The objective on ``X`` and ``y``, lower is better.
        """
        check_is_fitted(self)
        X_model, y, groups, n_groups, weight, _ = self._prepare(
            X, y, sensitive_features, sample_weight, reset=False, warn=False
        )
        batch = Batch(X_model, self._label_codes(y), groups, n_groups, weight)
        return self._objective(
            self._get_params_list(), batch, with_gradient=False
        ).value

    def _label_codes(self, y):
        """y as float codes: 0/1 (classes_[1] is 1) for two classes, else 0..C-1."""
        if len(self.classes_) == 2:
            positive = y == self.classes_[1]
            if not (positive | (y == self.classes_[0])).all():
                self._check_known(y)
            return positive.astype(np.float64)
        self._check_known(y)
        return np.searchsorted(self.classes_, y).astype(np.float64)

    def _check_known(self, y):
        unknown = ~np.isin(y, self.classes_)
        if unknown.any():
            raise ValueError(
                f"y has labels {np.unique(y[unknown]).tolist()} not among the "
                f"classes {self.classes_.tolist()} seen in the first fit."
            )

    # -- a rate constraint ----------------------------------------------------

    def _check_constraint_classes(self, n_groups):
        """Refuse a rate constraint that would act on more than two classes.

        Without groups it cannot act (``fit`` warns so), and the model is
        the unconstrained one, whatever its classes.
        """
        if (
            getattr(self, "constraints", None) is not None
            and n_groups > 1
            and len(self.classes_) != 2
        ):
            raise ValueError(
                f"constraints={self.constraints!r} needs a binary outcome; y has "
                f"{len(self.classes_)} classes (constraints=None fits them)."
            )

    def _constrains(self, batch):
        """Whether this estimator's own rate constraint can act on these rows.

        It does unless a federation's term is in force (``_under_constraint``).
        """
        return (
            getattr(self, "constraints", None) is not None
            and len(self.classes_) == 2
            and batch.weight_sum > 0
            and batch.labels is not None
            and len(batch.labels) > 1
        )

    def _term_table(self, labels, groups):
        """Each local group code's group in a term's ``groups`` (-1: none)."""
        cached = self.__dict__.get("_rate_table")
        if cached is not None and cached[0] is labels and cached[1] is groups:
            return cached[2]
        index = {tuple(label): i for i, label in enumerate(groups)}
        table = np.array([index.get(tuple(label), -1) for label in labels], np.intp)
        self._rate_table = (labels, groups, table)
        return table

    def _term_rows(self, batch):
        """The term in force, each row's cell in it and its weight; or None.

        Rows of a group the term does not know weigh nothing in it.
        """
        term = self.__dict__.get("_rate_term")
        if term is None:
            return None
        if batch.labels is None:  # codes already in the term's numbering
            codes = batch.groups
        else:
            codes = self._term_table(batch.labels, term["groups"])[batch.groups]
        inside = codes >= 0
        cells = np.where(inside, 2 * codes + batch.y.astype(np.intp), 0)
        return term, cells, np.where(inside, batch.weight, 0.0)

    def _constraint_histograms(self, params, batch):
        """The rows' histograms of their scores per cell of the own constraint."""
        constraint = self._rate_constraint
        codes = self._term_table(batch.labels, self.groups_)[batch.groups]
        scores = self._scores(params, batch.X).logits
        return rate_histograms(
            scores,
            2 * codes + batch.y.astype(np.intp),
            batch.weight,
            constraint.n_cells,
            constraint.n_bins,
        )

    def _step_own_constraint(self, params, batch):
        """Step the estimator's own multipliers on these rows; the term.

        The groups are kept by label (``groups_``) across calls, new ones
        added as they come, so that a multiplier stays with its groups.
        """
        constraint = self.__dict__.get("_rate_constraint")
        if constraint is not None and constraint.asked != constraint_request(self):
            # set_params changed the constraint since its last step.
            forget_constraint(self)
            constraint = None
        registry = list(self.__dict__.get("groups_", ()))
        known = set(registry)
        registry += [tuple(g) for g in batch.labels if tuple(g) not in known]
        if constraint is None:
            constraint = RateConstraint.of(
                self, len(known), multipliers=self._carried_multipliers(len(known))
            )
        constraint.add_groups(len(registry))
        self._rate_constraint = constraint
        self.groups_ = tuple(registry)
        term = constraint.propose(self._constraint_histograms(params, batch))
        constraint.commit()
        term["groups"] = self.groups_
        return term

    def _measure_own_constraint(self, params, batch):
        """Set the fitted constraint attributes from these rows' rates now."""
        constraint = self._rate_constraint
        constraint.measure(self._constraint_histograms(params, batch))
        for name, value in constraint_fitted_attributes(constraint).items():
            setattr(self, name, value)

    def _carried_multipliers(self, n_groups):
        """A federation's multipliers to continue from, when they fit; or None.

        A federated model's ``multipliers_`` are the server's; its own
        ``partial_fit`` continues from them rather than from zero.
        """
        multipliers = self.__dict__.get("multipliers_")
        shape = (len(constraint_rates(self.constraints)), n_groups, n_groups)
        if multipliers is None or np.shape(multipliers) != shape:
            return None
        return multipliers

    def _forget_constraint(self):
        """Drop a previous fit's constraint state (a new fit starts anew)."""
        forget_constraint(self)

    def _under_constraint(self, batch, train, *, measure=True):
        """``train()`` under the rate constraint in force, if any.

        A federation's term (:func:`rate_term`) is used as it is; otherwise
        the estimator's own constraint steps its multipliers on ``batch``'s
        rates first and, with ``measure``, reads them again after.
        """
        external = self.__dict__.get("_rate_term_external")
        if external is None:
            self._check_constraint_classes(batch.n_groups)
            if getattr(self, "constraints", None) is None:
                # set_params(constraints=None) since: no stale multipliers.
                forget_constraint(self)
        own = external is None and self._constrains(batch)
        if external is None and not own:
            return train()
        self._rate_term = (
            external
            if external is not None
            else self._step_own_constraint(self._get_params_list(), batch)
        )
        try:
            result = train()
        finally:
            del self._rate_term
        if own and measure:
            self._measure_own_constraint(self._get_params_list(), batch)
        return result

    # -- minibatch training -------------------------------------------------

    def _sgd_epoch(self, params, batch, random_state, optimizer=None):
        """One shuffled pass of minibatch steps; returns the mean batch objective.

        Plain SGD takes a step of ``learning_rate`` along the minibatch
        gradient, halved until the minibatch objective falls by at least half
        the decrease its gradient predicts (Armijo with c = 1/2, which never
        overshoots the minibatch minimum along the gradient). With a small
        penalty the first step is accepted, i.e. this is the paper's SGD; with
        a large one the step shrinks to what the penalty's curvature allows,
        so training stays stable for any ``fairness``. With ``average=True``
        the parameters end the epoch at the mean of its iterates
        (Polyak-Ruppert averaging), which removes most of the noise of a
        constant step.
        """
        n_samples = batch.X.shape[0]
        order = random_state.permutation(n_samples)
        bounds = minibatch_bounds(n_samples, self.batch_size)
        values = self._minibatch_steps(params, batch, bounds, optimizer, order=order)
        return float(values / n_samples) if n_samples else np.nan

    def _minibatch_steps(
        self, params, batch, bounds, optimizer=None, average=None, order=None
    ):
        """One step per minibatch ``bounds[b]:bounds[b + 1]`` of ``batch``'s rows.

        Updates ``params`` in place (ending at the mean of the iterates with
        ``average=True``) and returns the sum over minibatches of objective
        (before the step) x rows. A subclass's compiled loop
        (``_compiled_steps``) runs when it can; this loop is its reference.
        ``average`` overrides the estimator's ``average``. With an ``order``
        the minibatches are of ``batch.take(order)``, which the compiled
        loops gather a minibatch at a time.
        """
        average = self.average if average is None else average
        # The compiled loops have no rate constraint's term: its steps run in
        # numpy, the loops' reference.
        if optimizer is None and self.__dict__.get("_rate_term") is None:
            values = self._compiled_steps(params, batch, bounds, average, order)
            if values is not None:
                return values
        if order is not None:
            # One gather for the epoch: the minibatches are then slices of it.
            batch = batch.take(order)
        values = 0.0
        totals = [np.zeros_like(w) for w in params] if average else None
        for start, stop in itertools.pairwise(bounds.tolist()):
            minibatch = batch.slice(start, stop)
            value, gradients = self._objective(params, minibatch)
            values += value * (stop - start)
            if optimizer is not None:
                optimizer.step(params, gradients)
            else:
                self._armijo_step(params, minibatch, value, gradients)
            if totals is not None:
                for total, w in zip(totals, params, strict=True):
                    total += w
        if totals is not None and bounds.size > 1:
            for w, total in zip(params, totals, strict=True):
                w[...] = total / (bounds.size - 1)
        return values

    def _compiled_steps(self, params, batch, bounds, average, order=None):
        """``_minibatch_steps`` in compiled code, or None where there is none."""
        return None

    def train_epochs(self, X, y, groups, *, epochs=1, sample_weight=None):
        """Train epochs of minibatch steps on rows from :meth:`check_rows`.

        What ``epochs`` calls of ``partial_fit`` do with these rows (the same
        shuffles, from the estimator's ``random_state``, the same steps and
        fitted attributes, to the bit) without checking the rows on every
        call: a caller that trains many epochs on the same rows (the
        federated client trainer, every local epoch of every round) checks
        them once.

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_model_features)
            Model inputs, as :meth:`check_rows` returns them.
        y : ndarray of shape (n_samples,)
            Label codes, as :meth:`check_rows` returns them.
        groups : SensitiveGroups
            The rows' groups, as :meth:`check_rows` returns them.
        epochs : int, default=1
            How many epochs, each one ``partial_fit`` call's.
        sample_weight : array-like of shape (n_samples,), default=None
            Row weights, as ``partial_fit`` takes them; None weighs every
            row 1.

        Returns
        -------
        self : object
            The estimator, ``epochs`` epochs further.

        Examples
        --------
        >>> import numpy as np
        >>> from skfedida.linear_model import FairPenaltyLogisticRegression
        >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
        >>> y = np.array([0, 1, 0, 1])
        >>> S = np.array(["a", "a", "b", "b"])
        >>> model = FairPenaltyLogisticRegression(random_state=0).partial_fit(
        ...     X, y, classes=[0, 1], sensitive_features=S)
        >>> checked = model.check_rows(X, y, sensitive_features=S)
        >>> model.train_epochs(*checked, epochs=3).n_iter_
        4
        """
        if (
            not isinstance(epochs, numbers.Integral)
            or isinstance(epochs, bool)
            or epochs < 1
        ):
            raise ValueError(f"epochs must be a positive integer; got {epochs!r}.")
        self._check_model_inputs(X)
        groups = self._checked_groups(groups)
        y = self._checked_codes(y)
        weight = sample_weight_of(sample_weight, X, allow_all_zero_weights=True)
        if sample_weight is not None:
            weight = normalised_weight(weight)
        n_labels = len(self.classes_)
        check_minibatch_rows(
            X.shape[0],
            y,
            groups.codes,
            groups.n_groups,
            weight,
            np.array([0, X.shape[0]]),
            n_labels,
        )
        if not hasattr(self, "_random_state"):  # first epoch after fit
            self._random_state = check_random_state(self.random_state)
        if not hasattr(self, "_epochs"):
            self._epochs = 0
        batch = Batch(
            X,
            y,
            groups.codes,
            groups.n_groups,
            weight,
            rows_checked=n_labels,
            labels=groups.labels,
        )
        if self._constrains(batch):
            # The own constraint steps its multipliers before every epoch.
            for _ in range(epochs):
                self._under_constraint(batch, lambda: self._train_epoch(batch))
            return self
        return self._under_constraint(batch, lambda: self._train_epochs(batch, epochs))

    def _train_epochs(self, batch, epochs):
        """``train_epochs``' epochs, fused where they can be."""
        per_call = epochs_per_call(batch.X.shape[0])
        if (
            per_call == 1
            or epochs == 1
            or batch.weight_sum == 0
            or self.average
            # A subclass's own epoch is run as it is, epoch by epoch.
            or type(self)._train_epoch is not BaseFairClassifier._train_epoch
        ):
            for _ in range(epochs):
                self._train_epoch(batch)
            return self
        return self._fused_epochs(batch, epochs, per_call)

    def _fused_epochs(self, batch, epochs, per_call):
        """``epochs`` calls of ``_train_epoch``, ``per_call`` epochs per loop call.

        The epochs' shuffles are drawn in turn from the estimator's stream, as
        the calls draw them, and the minibatches of several epochs run back
        to back in one loop call; the last epoch runs in a call of its own,
        whose mean objective is ``loss_``. The same steps, with one loop
        call's fixed cost (~15 us: its inputs, buffers and checks) for
        several epochs. Without averaging only, whose means are per epoch.
        Parameters that turn non-finite stop the fit at the end of their
        call (``_check_finite``), not of their epoch; with the compiled loop
        the next step's gradient stops it first.
        """
        n_samples = batch.X.shape[0]
        epoch_bounds = minibatch_bounds(n_samples, self.batch_size)
        params = self._trainable_params()
        optimizer = self._partial_fit_optimizer(params)
        done = 0
        while done < epochs:
            n_epochs = min(per_call, epochs - done)
            done += n_epochs
            orders = [
                self._random_state.permutation(n_samples) for _ in range(n_epochs)
            ]
            if done == epochs:  # the round's last epoch alone: loss_ is its own
                last = orders.pop()
            if orders:
                _, sizes = epoch_minibatches(n_samples, self.batch_size, len(orders))
                bounds = np.concatenate(([0], np.cumsum(sizes)))
                self._minibatch_steps(
                    params, batch, bounds, optimizer, order=np.concatenate(orders)
                )
                self._check_finite(params)
        values = self._minibatch_steps(
            params, batch, epoch_bounds, optimizer, order=last
        )
        loss = float(values / n_samples) if n_samples else np.nan
        return self._record_training(params, epochs, epochs * n_samples, loss)

    @staticmethod
    def _checked_codes(y):
        if y is None:
            raise ValueError(
                "y must be the label codes check_rows returns; got None (pass "
                "y to check_rows)."
            )
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D label codes; got {y.ndim} dimensions.")
        return y

    @staticmethod
    def _checked_groups(groups):
        if not isinstance(groups, SensitiveGroups):
            raise TypeError(
                "groups must be the SensitiveGroups check_rows returns; got "
                f"{type(groups).__name__}."
            )
        return groups

    def train_minibatches(self, X, y, groups, bounds, *, sample_weight=None, rows=None):
        """One step per given minibatch of rows from :meth:`check_rows`.

        Minibatch b is rows ``bounds[b]:bounds[b + 1]`` (e.g. resampled
        minibatches laid end to end), or with ``rows`` the rows
        ``rows[bounds[b]:bounds[b + 1]]``. Each counts as one ``partial_fit``
        call of one step, as when the caller called ``partial_fit`` per
        minibatch: so ``average=True`` averages the iterates of one
        minibatch (one step), which leaves its last iterate. Nothing is
        checked again.

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_model_features)
            Model inputs, as :meth:`check_rows` returns them.
        y : ndarray of shape (n_samples,)
            Label codes, as :meth:`check_rows` returns them.
        groups : SensitiveGroups
            The rows' groups (codes in ``range(groups.n_groups)``).
        bounds : ndarray of shape (n_minibatches + 1,)
            Increasing row positions; the minibatches lie between them.
        sample_weight : ndarray of shape (n_samples,), default=None
            Weights of X's rows (with ``rows``, a row taken twice weighs the
            same both times); None weighs every row 1.
        rows : ndarray of shape (n_positions,), default=None
            Positions of X's rows (repeats allowed) laid out as the
            minibatches, which ``bounds`` then index: the steps are those on
            ``X[rows]``, ``y[rows]``, ``sample_weight[rows]`` without that
            copy. None: X's rows in order.

        Returns
        -------
        self : object
            The estimator, one step further per minibatch.

        Notes
        -----
        For the federated client trainer's epochs (Algorithm 2 of the
        paper), which resample every minibatch of a client and train on
        them all in one call. See :meth:`check_rows` for an example.
        """
        self._check_model_inputs(X)
        groups = self._checked_groups(groups)
        y = self._checked_codes(y)
        bounds = np.asarray(bounds)
        if bounds.ndim != 1 or bounds.dtype.kind not in "iu":
            raise ValueError(
                "bounds must be a 1-D array of integer row positions; got "
                f"{bounds.ndim} dimensions of dtype {bounds.dtype}."
            )
        weight = np.ones(X.shape[0]) if sample_weight is None else sample_weight
        weight = np.asarray(weight)
        n_labels = len(self.classes_)
        if rows is not None:
            rows = np.asarray(rows)
        check_minibatch_rows(
            X.shape[0],
            y,
            groups.codes,
            groups.n_groups,
            weight,
            bounds,
            n_labels,
            order=rows,
        )
        batch = Batch(
            X,
            y,
            groups.codes,
            groups.n_groups,
            weight,
            rows_checked=n_labels,
            labels=groups.labels,
        )

        def steps():
            params = self._trainable_params()
            values = self._minibatch_steps(
                params,
                batch,
                bounds,
                self._partial_fit_optimizer(params),
                average=False,
                order=rows,
            )
            n_positions = X.shape[0] if rows is None else rows.shape[0]
            loss = float(values / max(n_positions, 1))
            return self._record_training(params, bounds.size - 1, n_positions, loss)

        return self._under_constraint(batch, steps)

    def _armijo_step(self, params, minibatch, value, gradients):
        squared_norm = sum(float(np.vdot(g, g)) for g in gradients)
        if not np.isfinite(squared_norm):
            raise non_finite_gradient()
        if squared_norm == 0.0:
            return
        step = self.learning_rate
        # Passed only when it applies, so an _objective of a subclass that
        # does not know the keyword keeps working.
        unpenalised = (
            {"penalised": False} if self._penalty_undefined(params, minibatch) else {}
        )
        halvings = 0
        while True:
            trial = [w - step * g for w, g in zip(params, gradients, strict=True)]
            # A step far too long for huge features overflows the trial's
            # scores: its value is then inf or NaN, and the step is halved.
            with np.errstate(over="ignore", invalid="ignore"):
                trial_value, _ = self._objective(
                    trial, minibatch, with_gradient=False, **unpenalised
                )
            if trial_value <= value - ARMIJO * step * squared_norm:
                for w, t in zip(params, trial, strict=True):
                    w[...] = t
                return
            step *= 0.5
            halvings += 1
            if not _search_goes_on(halvings, step, squared_norm, value):
                return

    def _penalty_undefined(self, params, minibatch):
        """Whether the scale-invariant penalty is 0/0 at these parameters.

        ``penalty="group_standardized"`` divides by the within-label variance
        of the scores: where the scores are constant within each label (the
        zero start of training) it is undefined and taken as 0, while any
        step away costs ``fairness`` times the ratio of its direction at once,
        so no step from there would pass the Armijo test and training would
        never start. From such a point the step is judged on the rest of the
        objective; from the next step on the penalty is defined and counts.
        """
        if self.penalty != "group_standardized" or not self.fairness > 0:
            return False
        scores = _centred_logits(self._scores(params, minibatch.X).logits)
        labels = minibatch.y
        return all(
            np.ptp(scores[labels == label], axis=0).max() == 0
            for label in np.unique(labels)
        )

    def _partial_fit(self, X, y, classes, sensitive_features, sample_weight):
        known = getattr(self, "classes_", None)
        if known is not None and (classes is None or np.array_equal(classes, known)):
            # A later call with the classes of the first (a federation's
            # minibatches): what sklearn's check would find, without its cost.
            first_call = False
        else:
            first_call = check_partial_fit_first_call(self, classes)
        try:
            if first_call:
                self._class_labels(self.classes_)
            X_model, y, groups, n_groups, weight, labels = self._prepare(
                X,
                y,
                sensitive_features,
                sample_weight,
                reset=first_call,
                warn=first_call,
                allow_all_zero_weights=True,
            )
            if first_call:
                self._check_constraint_classes(n_groups)
        except Exception:
            if first_call:  # leave the estimator unfitted, not half-fitted
                del self.classes_
            raise
        batch = Batch(
            X_model, self._label_codes(y), groups, n_groups, weight, labels=labels
        )
        if first_call:
            if weight.any():  # not a federation's zero-weight initialisation
                warn_if_unscaled(
                    X_model, type(self).__name__, largest=self._largest_input
                )
            self._random_state = check_random_state(self.random_state)
            self._set_params_list(
                self._initial_parameters(X_model.shape[1], self._random_state)
            )
            self.n_samples_seen_ = 0
            self._forget_constraint()
        if not hasattr(self, "_random_state"):  # first epoch after fit
            self._random_state = check_random_state(self.random_state)
        if first_call or not hasattr(self, "_epochs"):
            self._epochs = 0
        return self._under_constraint(batch, lambda: self._train_epoch(batch))

    def _train_epoch(self, batch):
        """One epoch on validated rows (``Batch``); ``partial_fit``'s work."""
        if batch.weight_sum == 0:
            # Rows of zero total weight teach nothing: no step and no draw, so
            # a zero-weight first call only initialises the parameters.
            self.n_iter_ = self._epochs
            return self
        params = self._trainable_params()
        loss = self._sgd_epoch(
            params, batch, self._random_state, self._partial_fit_optimizer(params)
        )
        return self._record_training(params, 1, batch.X.shape[0], loss)

    def _record_training(self, params, n_steps, n_rows, loss):
        """Take trained parameters; count their epochs (or steps) and rows.

        What every training entry ends with (``partial_fit``'s epoch,
        ``train_epochs``, ``train_minibatches``): the parameters, refused if
        not finite, ``n_iter_``, ``n_samples_seen_``, ``loss_`` (and ``t_``).
        """
        self._set_params_list(params)
        self._check_finite(params)
        self._epochs = getattr(self, "_epochs", 0) + n_steps
        self.n_iter_ = self._epochs
        self.n_samples_seen_ = getattr(self, "n_samples_seen_", 0) + n_rows
        self.loss_ = loss
        if hasattr(self, "t_"):
            self.t_ = self.n_samples_seen_
        return self

    def _partial_fit_optimizer(self, params):
        return None

    def _trainable_params(self):
        """The parameter arrays, as arrays that training may update in place.

        A model loaded with ``joblib.load(..., mmap_mode="r")``, or whose
        arrays were frozen with ``setflags(write=False)``, holds read-only
        arrays, and the steps write into their parameters ("assignment
        destination is read-only"); a memory map opened for writing would
        carry the steps into its file. Such arrays are replaced by in-memory
        copies, which become the model's parameters (O(parameters), only
        when one is not a plain writable array).
        """
        params = self._get_params_list()
        if all(type(w) is np.ndarray and w.flags.writeable for w in params):
            return params
        params = [
            w if type(w) is np.ndarray and w.flags.writeable else np.array(w)
            for w in params
        ]
        self._set_params_list(params)
        return params

    @staticmethod
    def _check_finite(params):
        if not all(np.all(np.isfinite(w)) for w in params):
            raise FloatingPointError(
                "Training produced non-finite parameters; check X for extreme "
                "values (scale the features) or lower learning_rate (or alpha "
                "or fairness if they are very large)."
            )

    # -- prediction ---------------------------------------------------------

    def decision_function(self, X):
        """Confidence scores: logits of the classes.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data, with the sensitive columns in column mode (they are dropped).

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            For two classes, the logit of ``classes_[1]`` for every row
            (positive means ``classes_[1]`` is predicted); for more, the
            softmax logit of every class, columns in the order of
            ``classes_``.
        """
        check_is_fitted(self)
        X_model, _ = self._model_inputs(X, reset=False)
        return self._scores(self._get_params_list(), X_model).logits

    def predict_proba(self, X):
        """Probability of each class.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data, with the sensitive columns in column mode (they are dropped).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        return _probabilities(self.decision_function(X))

    def predict_proba_checked(self, X):
        """:meth:`predict_proba` of model inputs from :meth:`check_rows`.

        Parameters
        ----------
        X : {ndarray, sparse matrix} of shape (n_samples, n_model_features)
            Model inputs, as :meth:`check_rows` returns them.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.

        Notes
        -----
        For the federated client trainer, which predicts a client's rows
        every round and checks them once per fit. See :meth:`check_rows`
        for an example.
        """
        self._check_model_inputs(X)
        return _probabilities(self._scores(self._get_params_list(), X).logits)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probability of each class, columns in the order of ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 2:
            return log_softmax(scores, axis=1)
        return np.column_stack(
            [-np.logaddexp(0.0, scores), -np.logaddexp(0.0, -scores)]
        )

    def predict(self, X):
        """Predicted class of every row.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Data, with the sensitive columns in column mode (they are dropped).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted class of every row, one of ``classes_``.
        """
        scores = self.decision_function(X)
        if scores.ndim == 2:
            return self.classes_[np.argmax(scores, axis=1)]
        return self.classes_[(scores > 0).astype(np.intp)]


def proximal_loop_inputs(estimator):
    """Give FedProx's term as a compiled loop takes it: ``(mu, anchor)``.

    Parameters
    ----------
    estimator : BaseFairClassifier
        The estimator being trained.

    Returns
    -------
    mu : float
        The term's weight; 0.0 outside :func:`proximal_term`.
    anchor : ndarray or None
        The anchor's arrays in the order of the estimator's parameters, each
        raveled, as the loops lay the parameters out; None without a term.
    """
    proximal = estimator.__dict__.get("_proximal")
    if proximal is None:
        return 0.0, None
    mu, anchor = proximal
    return mu, np.concatenate([np.ravel(a) for a in anchor])


@contextlib.contextmanager
def proximal_term(estimator, mu):
    """Add FedProx's proximal term to the estimator's training in the block.

    FedProx (Li et al., MLSys 2020) adds ``(mu / 2) ||w - w_t||^2`` to every
    client's local objective, ``w_t`` being the round's global parameters:
    every parameter array (weights and intercepts alike) is pulled toward
    where the round started, which bounds how far heterogeneous clients
    drift. Inside the block the estimator's objective and gradients have the
    term, anchored at its parameters on entry (the round's start), in the
    compiled loops as in the numpy reference. On exit the estimator is as
    before but for what it learnt.

    Parameters
    ----------
    estimator : BaseFairClassifier
        A fitted (or primed) skfedida estimator.
    mu : float
        The term's weight (Flower's ``FedProx(proximal_mu=...)``); 0 adds
        nothing.

    Yields
    ------
    estimator : BaseFairClassifier
        The estimator, with the term while the block runs.
    """
    if not mu:
        yield estimator
        return
    anchor = [
        np.array(w, dtype=np.float64, copy=True) for w in estimator._get_params_list()
    ]
    estimator._proximal = (float(mu), anchor)
    try:
        yield estimator
    finally:
        del estimator._proximal


@contextlib.contextmanager
def rate_term(estimator, term):
    """Train the estimator under a federation's rate-constraint term in the block.

    A federation's server holds the constraint (:mod:`._constraints`): it
    reads the operating point and the rates from the clients' histograms,
    steps the multipliers, and sends every client the term of the round.
    Inside the block the estimator's training entries (``partial_fit``,
    ``train_epochs``, ``train_minibatches``) add that term to their
    objective and gradients, each row by its group's label in
    ``term["groups"]``, and never step multipliers of their own. On exit
    the estimator is as before but for what it learnt.

    Parameters
    ----------
    estimator : BaseFairClassifier
        A fitted (or primed) skfedida estimator with one score per row.
    term : dict or None
        ``threshold``, ``temperature``, ``coefficient`` (per cell ``2 *
        group + label``) and ``groups`` (the groups' labels); None adds
        nothing.

    Yields
    ------
    estimator : BaseFairClassifier
        The estimator, under the term while the block runs.
    """
    if term is None:
        yield estimator
        return
    estimator._rate_term_external = term
    try:
        yield estimator
    finally:
        del estimator._rate_term_external
