"""Input checks at the cost of the input: plain arrays skip the generic path.

A federation calls ``fit_resample`` and ``partial_fit`` once per minibatch,
tens of thousands of times per fit, on arrays it has validated once. sklearn's
generic checks (``check_array``, ``type_of_target``, feature-name discovery
through narwhals) cost 50-100 microseconds per call whatever the size of the
input, more than the minibatch step itself. The functions here give the same
answer as those checks for the plain NumPy arrays a federation passes, in a
few microseconds, and defer to sklearn for anything else (DataFrames, lists,
sparse matrices, object arrays), so users' errors and warnings are unchanged.
"""

from __future__ import annotations

import contextlib

import numpy as np
from sklearn import get_config
from sklearn.utils import assert_all_finite
from sklearn.utils.validation import validate_data

from ._compat import check_sample_weight

_FLOAT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


def is_plain_array(a):
    """Whether ``a`` is an ndarray or a memory map of one (joblib's workers get
    large arrays as ``np.memmap``), not another subclass such as np.matrix."""
    return type(a) is np.ndarray or type(a) is np.memmap


def is_plain_float_matrix(X):
    """Whether X is a 2-D float64/float32 ndarray with at least one row and column."""
    return (
        is_plain_array(X)
        and X.ndim == 2
        and X.dtype in _FLOAT_DTYPES
        and X.shape[0] > 0
        and X.shape[1] > 0
    )


def checked_float_matrix(estimator, X):
    """X for a fitted estimator's later call, if plain; None to use check_array.

    What ``validate_data(estimator, X, reset=False, dtype=[float64, float32])``
    returns for a plain float ndarray: X itself, after the number of columns
    and (unless sklearn's ``assume_finite`` is set) finiteness are checked.
    An estimator fitted on named columns goes the generic way, which warns
    that X has no names.
    """
    if not is_plain_float_matrix(X):
        return None
    if getattr(estimator, "feature_names_in_", None) is not None:
        return None
    if X.shape[1] != getattr(estimator, "n_features_in_", None):
        return None  # the generic check raises sklearn's error
    if not get_config()["assume_finite"]:
        assert_all_finite(X, input_name="X")
    return X


def plain_labels(y):
    """Classes and codes of integer, boolean or string 1-D labels, else None.

    For such arrays ``type_of_target`` decides binary or multiclass by the
    number of distinct values alone, which every caller wants anyway; None
    sends other labels (floats, objects, lists, 2-D) to the generic check.
    """
    if is_plain_array(y) and y.ndim == 1 and y.dtype.kind in "biuU" and y.size:
        return np.unique(y, return_inverse=True)
    return None


def reset_input_columns(estimator, X):
    """``validate_data(estimator, X, reset=True, skip_check_array=True)``.

    Records the number (and names) of X's columns for a fit. An ndarray has
    no column names, so a refit on one only forgets the names of an earlier
    fit; it is handled directly, without the generic name discovery.
    """
    if is_plain_array(X):
        estimator.n_features_in_ = X.shape[1]
        estimator.__dict__.pop("feature_names_in_", None)
        return
    validate_data(estimator, X, reset=True, skip_check_array=True)


def sample_weight_of(sample_weight, X, *, allow_all_zero_weights=False):
    """float64 row weights, checked: ``check_sample_weight``'s answer.

    None gives ones; a float64 1-D array of the right length is checked for
    finite, non-negative values (and, unless allowed, a positive sum) in
    place of the generic path.
    """
    n_samples = X.shape[0]
    if sample_weight is None:
        return np.ones(n_samples, dtype=np.float64)
    if (
        is_plain_array(sample_weight)
        and sample_weight.ndim == 1
        and sample_weight.dtype == np.float64
        and sample_weight.shape[0] == n_samples
        and np.isfinite(sample_weight).all()
        and not (sample_weight < 0).any()
        and (allow_all_zero_weights or sample_weight.any())
    ):
        return sample_weight
    return check_sample_weight(
        sample_weight,
        X,
        dtype=np.float64,
        ensure_non_negative=True,
        allow_all_zero_weights=allow_all_zero_weights,
    )


@contextlib.contextmanager
def columns_named_on_error(X, owner):
    """Turn a conversion's error on an unusable column into one naming it.

    Around a conversion of ``X`` to numbers (``check_array``,
    ``validate_data``, a boosted model's ``_preprocess_X``): its TypeError
    or ValueError becomes :func:`unusable_column_error`'s, which names the
    column and what to do, where there is one; any other error is left as
    it is.
    """
    try:
        yield
    except (TypeError, ValueError) as error:
        clear = unusable_column_error(X, owner)
        if clear is None:
            raise
        raise clear from error


def unusable_column_error(X, owner):
    """The error for an X with a column that is not numbers, or None.

    A datetime or timedelta column first (numpy cannot put it with floats,
    and its ``DTypePromotionError`` names no column), then a column of
    strings.
    """
    if hasattr(X, "dtypes") and hasattr(X, "columns"):
        for name, dtype in zip(X.columns, X.dtypes, strict=True):
            if getattr(dtype, "kind", None) in ("M", "m"):
                what = "datetimes" if dtype.kind == "M" else "time spans"
                return ValueError(
                    f"X column {name!r} holds {what} ({dtype}), and {owner} "
                    "needs numbers. Turn it into numbers first (e.g. days since "
                    "a reference date, or the year and month as columns) or "
                    "drop it."
                )
    elif getattr(getattr(X, "dtype", None), "kind", None) in ("M", "m"):
        return ValueError(
            f"X holds {X.dtype} values, and {owner} needs numbers. Turn them "
            "into numbers first (e.g. days since a reference date)."
        )
    return string_column_error(X, owner)


def string_column_error(X, owner):
    """The error for an X with a column of strings, or None when it has none.

    Called after the generic conversion of X to floats failed, so the
    columns are only inspected on that path: sklearn's "could not convert
    string to float: 'north'" names neither the column nor what to do. Only
    a conversion that fails counts, so a categorical column of numbers is not
    reported; one pass over X's columns (not its rows).
    """
    if hasattr(X, "columns") and hasattr(X, "iloc"):
        columns = ((name, X.iloc[:, j]) for j, name in enumerate(X.columns))
    else:
        try:
            array = np.asarray(X)
        except (TypeError, ValueError):
            return None
        if array.ndim != 2 or array.dtype.kind not in "OUS":
            return None
        columns = ((j, array[:, j]) for j in range(array.shape[1]))
    for name, column in columns:
        try:
            np.asarray(column, dtype=np.float64)
        except (TypeError, ValueError):
            # An example for the message, from the first 100 values only.
            values = np.asarray(column, dtype=object)[:100]
            example = next((v for v in values if isinstance(v, (str, bytes))), None)
            if example is None:
                # Not strings (a dict, a list): the generic error says what.
                return None
            where = (
                f"X column {name!r}" if isinstance(name, str) else f"X column {name}"
            )
            if "GradientBoosting" in owner:
                # Boosted trees read categories themselves.
                fix = (
                    "Give the column pandas' category dtype "
                    "(X[column].astype('category')): the trees read its "
                    "categories (categorical_features='from_dtype')"
                )
            else:
                fix = (
                    "Encode the column first, e.g. with "
                    "skfedida.preprocessing.FederatedOneHotEncoder (fitted from "
                    "the clients' category counts; sklearn's OneHotEncoder on "
                    "pooled rows) in a ColumnTransformer"
                )
            return ValueError(
                f"{where} holds strings (such as {example!r}), and {owner} "
                f"needs numbers. {fix}; if it is a sensitive attribute, pass it "
                "as sensitive_features or name it in sensitive= instead."
            )
    return None
