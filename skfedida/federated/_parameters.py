"""The parameter protocol: what a federated server needs from an estimator.

A federated round moves only parameter arrays and example counts. An
estimator can be federated if its trainable parameters are held in ndarray
attributes, in one of sklearn's two layouts:

- ``coefs_`` and ``intercepts_`` (lists of arrays), as
  :class:`sklearn.neural_network.MLPClassifier` and
  :class:`~skfedida.neural_network.FairMLPClassifier`;
- ``coef_`` and ``intercept_`` (arrays), as
  :class:`sklearn.linear_model.SGDClassifier`,
  :class:`sklearn.linear_model.LogisticRegression` and
  :class:`~skfedida.linear_model.FairPenaltyLogisticRegression`.

and if ``partial_fit`` continues training from those arrays.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._compat import HasMethods, Hidden, validate_params

__all__ = ["get_parameters", "n_samples_seen", "set_parameters"]

_LAYOUTS = (("coefs_", "intercepts_"), ("coef_", "intercept_"))

# Any estimator; whether it holds its parameters in one of the two layouts (or
# records the rows it has seen) is checked by the functions, which say so.
_ESTIMATOR = [HasMethods(["fit"])]


def _layout(estimator):
    for weights, biases in _LAYOUTS:
        if hasattr(estimator, weights) and hasattr(estimator, biases):
            return weights, biases
    raise TypeError(
        f"{type(estimator).__name__} holds no parameters in coefs_/intercepts_ or "
        "coef_/intercept_; fit it (or call partial_fit once) first, or use an "
        "estimator that keeps its parameters in these attributes."
    )


@validate_params({"estimator": _ESTIMATOR}, prefer_skip_nested_validation=True)
def get_parameters(estimator):
    """Return copies of an estimator's trainable arrays, in a fixed order.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator following the parameter protocol.

    Returns
    -------
    parameters : list of ndarray
        ``[*coefs_, *intercepts_]`` or ``[coef_, intercept_]``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import SGDClassifier
    >>> from skfedida.federated import get_parameters
    >>> clf = SGDClassifier(loss="log_loss", random_state=0)
    >>> clf = clf.fit(np.eye(4), [0, 1, 0, 1])
    >>> [p.shape for p in get_parameters(clf)]
    [(1, 4), (1,)]
    """
    return parameter_arrays(estimator)


def _held_arrays(estimator):
    """The estimator's trainable arrays themselves (no copy), in protocol order."""
    weights, _ = _layout(estimator)
    if weights == "coefs_":
        return [*estimator.coefs_, *estimator.intercepts_]
    return [estimator.coef_, np.atleast_1d(estimator.intercept_)]


def parameter_arrays(estimator):
    """``get_parameters`` without its argument validation.

    For the federation's own calls, several per client and round, on
    estimators it made: the decorator's validation cost more than the copy.
    """
    return [
        np.array(array, dtype=np.float64, copy=True)
        for array in _held_arrays(estimator)
    ]


def assign_parameters(estimator, parameters):
    """``set_parameters`` without its argument validation and fitted check.

    The shapes are still checked: a server's arrays of other shapes are an
    error, not a model of another architecture.
    """
    current = _held_arrays(estimator)
    parameters = list(parameters)
    if len(parameters) != len(current) or any(
        np.shape(new) != np.shape(old)
        for new, old in zip(parameters, current, strict=False)
    ):
        raise ValueError(
            f"{type(estimator).__name__} has parameters of shapes "
            f"{[np.shape(p) for p in current]}; got "
            f"{[np.shape(p) for p in parameters]}."
        )
    copies = [np.array(p, dtype=np.float64, copy=True) for p in parameters]
    weights, _ = _layout(estimator)
    if weights == "coefs_":
        half = len(copies) // 2
        estimator.coefs_, estimator.intercepts_ = copies[:half], copies[half:]
    else:
        estimator.coef_, estimator.intercept_ = copies
    return estimator


@validate_params(
    {
        "estimator": _ESTIMATOR,
        # A list of arrays; any iterable of them works.
        "parameters": ["array-like", Hidden(Iterable)],
    },
    prefer_skip_nested_validation=True,
)
def set_parameters(estimator, parameters):
    """Replace an estimator's trainable arrays, in place.

    Shapes and order are those of :func:`get_parameters`. The estimator must
    be fitted already (or have had one ``partial_fit``), so that its other
    fitted attributes (``classes_``, layer counts, ...) exist.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator following the parameter protocol.
    parameters : list of ndarray
        New arrays.

    Returns
    -------
    estimator : estimator
        The same estimator.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import SGDClassifier
    >>> from skfedida.federated import get_parameters, set_parameters
    >>> clf = SGDClassifier(loss="log_loss", random_state=0)
    >>> clf = clf.fit(np.eye(4), [0, 1, 0, 1])
    >>> zeros = [np.zeros_like(p) for p in get_parameters(clf)]
    >>> set_parameters(clf, zeros).decision_function(np.eye(4)[:1])
    array([0.])
    """
    check_is_fitted(estimator)
    return assign_parameters(estimator, parameters)


@validate_params({"estimator": _ESTIMATOR}, prefer_skip_nested_validation=True)
def n_samples_seen(estimator):
    """Training rows an estimator has processed, as far as it records them.

    ``n_samples_seen_`` for skfedida's estimators; ``t_`` for
    ``MLPClassifier`` (rows seen by its solver); ``t_ - 1`` for
    ``SGDClassifier`` (its count of single-row updates). The federated
    meta-estimator weights clients by their own row counts, not by this.

    Parameters
    ----------
    estimator : estimator
        A fitted estimator.

    Returns
    -------
    n : int
        Number of training rows the estimator has processed, counted as
        described above.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.linear_model import FairPenaltyLogisticRegression
    >>> from skfedida.federated import n_samples_seen
    >>> clf = FairPenaltyLogisticRegression(fairness=0)
    >>> n_samples_seen(clf.fit(np.eye(4), [0, 1, 0, 1]))
    4
    """
    check_is_fitted(estimator)
    if hasattr(estimator, "n_samples_seen_"):
        return int(estimator.n_samples_seen_)
    if hasattr(estimator, "coefs_") and hasattr(estimator, "t_"):
        return int(estimator.t_)
    if hasattr(estimator, "t_"):
        return int(estimator.t_) - 1
    raise TypeError(f"{type(estimator).__name__} does not record rows seen.")
