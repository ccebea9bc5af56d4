"""Sensitive attributes: validation and intersectional group codes.

Every component of skfedida that needs the sensitive attributes S (samplers,
penalties, scorers, reports) goes through this module, so that S is read,
checked and turned into groups in exactly one way.

S arrives either as metadata (``sensitive_features=``: a Series, a DataFrame,
a 1-D or 2-D array or a dict of columns) or as the names of columns of X
(a ``sensitive=`` constructor parameter).  Each distinct combination of the
values of all attributes is one intersectional group.
"""

from __future__ import annotations

import collections
import json
import numbers
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ._compat import safe_indexing
from ._messages import GROUP_LABELS, SENSITIVE_NAMES

try:  # pandas is optional; it only makes factorising faster and reads frames.
    import pandas as pd
except ImportError:  # pragma: no cover - exercised in environments without pandas
    pd = None

__all__ = [
    "SensitiveGroups",
    "check_sensitive_features",
    "client_ids",
    "column_positions",
    "encode_groups",
    "resolve_sensitive",
    "take_rows",
]

# Above this many possible combinations the dense look-up table used to number
# the observed combinations would cost more memory than sorting.
_MAX_DENSE_COMBINATIONS = 1 << 24


@dataclass(frozen=True, eq=False)
class SensitiveGroups:
    """Intersectional groups of a sample: S read, checked and encoded once.

    The value every component of skfedida accepts wherever it accepts
    sensitive features, and passes on unchanged: a federation encodes S once
    per fit, and its clients, batches, sampler, estimators and metrics work
    on the codes (``take`` selects rows without re-reading any value).

    Attributes
    ----------
    codes : ndarray of shape (n_samples,), dtype=intp
        Group code of every row, in ``range(n_groups)``.
    labels : tuple of tuple
        ``labels[k]`` holds the value of every sensitive attribute for group
        ``k``, in the order of ``names``; e.g. ``("Black", "Female")``. Groups
        are sorted by these values, attribute by attribute.
    names : tuple of str
        Names of the sensitive attributes.

    Notes
    -----
    After :meth:`take`, some groups may have no row; :meth:`compact` (which
    :func:`encode_groups` applies) drops them, keeping the order, so a
    consumer sees only the groups present, numbered as if S had been encoded
    from those rows.
    """

    codes: np.ndarray
    labels: tuple
    names: tuple

    @property
    def n_groups(self):
        """Number of groups (after ``take``, some may have no row)."""
        return len(self.labels)

    def __len__(self):
        return self.codes.shape[0]

    @property
    def shape(self):
        """``(n_samples,)``, so sklearn's length checks read it as one column."""
        return self.codes.shape

    def counts(self, sample_weight=None):
        """Number of rows (or total weight) in every group."""
        return np.bincount(self.codes, weights=sample_weight, minlength=self.n_groups)

    def take(self, rows):
        """The groups of some rows (positions, repeats allowed); same labels."""
        return SensitiveGroups(self.codes[rows], self.labels, self.names)

    def __getitem__(self, rows):
        # Row selection as sklearn's safe_indexing does it for array-likes
        # (positions, slices, boolean masks): cross-validation folds of S.
        return self.take(rows)

    def compact(self):
        """These groups without those that have no row (self if none is empty)."""
        present = np.bincount(self.codes, minlength=self.n_groups) > 0
        if present.all():
            return self
        lookup = np.cumsum(present, dtype=np.intp) - 1
        labels = tuple(self.labels[k] for k in np.flatnonzero(present).tolist())
        return SensitiveGroups(lookup[self.codes], labels, self.names)

    def values(self):
        """The sensitive values of every row, as a dict of columns by name."""
        return {
            name: np.asarray([label[j] for label in self.labels], dtype=object)[
                self.codes
            ]
            for j, name in enumerate(self.names)
        }

    def label_strings(self, sep=", "):
        """Readable group names, e.g. ``"Black, Female"``."""
        return [sep.join(str(value) for value in label) for label in self.labels]


def is_frame(obj):
    return pd is not None and isinstance(obj, pd.DataFrame)


def _is_series(obj):
    return pd is not None and isinstance(obj, pd.Series)


def _columns_of(sensitive_features, param_name):
    """Split sensitive features into a list of 1-D columns and their names."""
    if sp.issparse(sensitive_features):
        raise TypeError(
            f"{param_name} must be dense (a Series, DataFrame, array or dict of "
            "columns); got a sparse matrix."
        )
    if is_frame(sensitive_features):
        names = [str(name) for name in sensitive_features.columns]
        columns = [sensitive_features.iloc[:, j] for j in range(len(names))]
    elif _is_series(sensitive_features):
        name = sensitive_features.name
        names = ["sensitive_feature_0" if name is None else str(name)]
        columns = [sensitive_features]
    elif isinstance(sensitive_features, Mapping):
        names = [str(name) for name in sensitive_features]
        columns = [
            _as_1d(col, param_name, name) for name, col in sensitive_features.items()
        ]
    else:
        array = np.asarray(sensitive_features)
        if array.ndim == 1:
            columns = [array]
        elif array.ndim == 2:
            columns = [array[:, j] for j in range(array.shape[1])]
        else:
            raise ValueError(
                f"{param_name} must be 1-D or 2-D; got an array of shape {array.shape}."
            )
        names = [f"sensitive_feature_{j}" for j in range(len(columns))]
    if not columns:
        raise ValueError(f"{param_name} has no columns.")
    if len(set(names)) != len(names):
        raise ValueError(f"{param_name} has duplicate column names: {names}.")
    return columns, names


def _as_1d(column, param_name, name):
    if _is_series(column):
        return column
    array = np.asarray(column)
    if array.ndim != 1:
        raise ValueError(
            f"{param_name}[{name!r}] must be 1-D; got an array of shape {array.shape}."
        )
    return array


def _kind(value_type):
    if issubclass(value_type, (bool, np.bool_)):
        return "boolean"
    if issubclass(value_type, numbers.Number):
        return "number"
    if issubclass(value_type, str):
        return "string"
    return value_type.__name__


def value_kinds(values):
    """Kinds ("boolean", "number", "string", or a type name) of object values.

    Compared by type, not by value: ``True == 1`` and ``1 == 1.0`` merge in a
    set or a hash table, so mixed kinds would silently merge or split groups.
    """
    return sorted({_kind(t) for t in set(map(type, values))})


def check_one_kind(values, what):
    """Refuse an object array mixing kinds of values (e.g. 1 and "1")."""
    values = np.asarray(values)
    if values.dtype.kind != "O":
        return
    values = values.ravel()
    # Missing values (None, NaN, pd.NA) are reported as such elsewhere.
    present = ~pd.isna(values) if pd is not None else ~missing_mask(values)
    _check_kinds(value_kinds(values[present].tolist()), what)


def _check_kinds(kinds, what):
    if len(kinds) > 1:
        raise ValueError(
            f"{what} mixes values of different kinds ({', '.join(kinds)}), which "
            "would silently merge (True and 1) or split (1 and '1') groups; "
            "give every value the same type."
        )


# The (resampled X, consumed S) pairs of the last few resamplings in metadata
# mode, as weak references: nothing is kept alive by them.
_RECENT_RESAMPLINGS = collections.deque(maxlen=16)


def remember_resampling(X_resampled, sensitive_features):
    """Note that a sampler turned rows with these S into ``X_resampled``."""
    try:
        pair = (weakref.ref(X_resampled), weakref.ref(sensitive_features))
    except TypeError:  # lists and other objects without weak references
        return
    _RECENT_RESAMPLINGS.append(pair)


def check_not_resampled_with(X, sensitive_features, owner):
    """Refuse S that belongs to the rows a sampler had *before* producing X.

    In an imbalanced-learn Pipeline every step receives the original routed
    metadata (imbalanced-learn issue #1085), so a fair estimator after
    FairnessAwareROSE would pair resampled rows with the original S: a
    misalignment that trains without error whenever the lengths happen to
    agree.
    """
    if sensitive_features is None:
        return
    for X_ref, S_ref in _RECENT_RESAMPLINGS:
        if X_ref() is X and S_ref() is sensitive_features:
            raise ValueError(
                f"{owner} received the sensitive_features that a sampler used "
                "to produce its X: they describe the rows before resampling, "
                "not these rows. In an imbalanced-learn Pipeline every step "
                "receives the original metadata (imbalanced-learn issue #1085); "
                "use column mode instead (sensitive=[columns of X] on the "
                "sampler and the estimator), or FederatedEstimator(sampler=...), "
                "which resamples X, y and S together."
            )


def missing_mask(values):
    """Where a 1-D array holds None or NaN (NaN is the one value unequal to itself)."""
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind == "O":
        return np.equal(values, None) | (values != values)
    return np.zeros(values.shape, dtype=bool)


def check_labels_complete(y, name="y"):
    """Refuse labels with missing values (None or NaN), naming the first."""
    missing = missing_mask(np.asarray(y))
    if missing.any():
        raise ValueError(
            f"{name} has {int(missing.sum())} missing value(s) (first at row "
            f"position {int(np.flatnonzero(missing)[0])}); every row needs a label."
        )


def _factorize(column, param_name, name):
    """Sorted codes and unique values of one column; -1 marks a missing value."""
    if pd is not None:
        return _factorize_pandas(column, param_name, name)
    array = np.asarray(column)
    what = f"{param_name} column {name!r}"
    if array.dtype.kind == "O":
        missing = missing_mask(array)
        present = array[~missing]
        types = set(map(type, present.tolist()))
        if types == {str}:
            # Sorting a million Python strings (np.unique) costs far more than
            # hashing them: number the few distinct values, then look them up.
            return _factorize_strings(array, missing, present)
        _check_kinds(sorted({_kind(t) for t in types}), what)
    else:
        missing = missing_mask(array)
    try:
        uniques, codes = np.unique(array[~missing], return_inverse=True)
    except TypeError as exc:
        raise ValueError(
            f"{what} mixes values that cannot be "
            f"compared ({exc}); give each attribute values of one type."
        ) from exc
    full_codes = np.full(array.shape, -1, dtype=np.intp)
    full_codes[~missing] = codes.ravel()
    return full_codes, uniques.tolist()


def _factorize_strings(array, missing, present):
    """Codes of an object array of ``str`` values (and missing values), no pandas."""
    uniques = sorted(set(present.tolist()))
    position = {value: code for code, value in enumerate(uniques)}
    full_codes = np.full(array.shape, -1, dtype=np.intp)
    full_codes[~missing] = np.fromiter(
        map(position.__getitem__, present.tolist()), dtype=np.intp, count=len(present)
    )
    return full_codes, uniques


def _factorize_pandas(column, param_name, name):
    what = f"{param_name} column {name!r}"
    if _is_series(column) and isinstance(column.dtype, pd.CategoricalDtype):
        # The categories are the only values: checking the ones in use is
        # checking every row, without materialising a million objects.
        codes, uniques = pd.factorize(column, sort=True, use_na_sentinel=True)
        check_one_kind(np.asarray(uniques), what)
        return np.asarray(codes, dtype=np.intp), np.asarray(uniques).tolist()
    if (
        isinstance(column, np.ndarray)
        and column.dtype.kind in "US"
        and column.size
        and column.dtype.itemsize
    ):
        return _factorize_fixed_width(column)
    strings = _is_series(column) and isinstance(column.dtype, pd.StringDtype)
    objects = not strings and column.dtype == object
    if strings or objects:
        # pandas factorises the object array behind a string column with a C
        # string table, several times faster than StringArray.factorize.
        column = np.asarray(column, dtype=object)
    else:
        check_one_kind(column, what)
    try:
        codes, uniques = pd.factorize(
            column, sort=True, use_na_sentinel=True, size_hint=_size_hint(column)
        )
    except TypeError as exc:
        if objects:  # mixed kinds are the likelier cause; name them first
            check_one_kind(column, what)
        raise ValueError(
            f"{what} mixes values that cannot be "
            f"compared ({exc}); give each attribute values of one type."
        ) from exc
    uniques = np.asarray(uniques).tolist()
    # A string column holds only str or missing values: one kind. In an object
    # column, every present value equals one of the uniques, and no value of
    # another built-in kind equals a str; so uniques all str (the usual case)
    # mean one kind, without typing a million values. Otherwise type them all,
    # as True and 1 (or 1 and 1.0) merge into one unique.
    if objects and set(map(type, uniques)) != {str}:
        check_one_kind(column, what)
    return np.asarray(codes, dtype=np.intp), uniques


def _size_hint(values):
    """A hash table size for factorising ``values``: small if few values recur.

    pandas sizes its table for one value per row unless told otherwise; for
    strings, filling a million-slot table for a handful of groups costs about
    as much as the hashing itself. A strided sample tells the two cases apart.
    """
    if not isinstance(values, np.ndarray) or values.dtype != object:
        return None
    sample = values[:: max(1, len(values) // 1024)]
    try:
        n_distinct = len(pd.unique(sample))
    except (TypeError, ValueError):  # unhashable: factorize reports it
        return None
    return 4 * n_distinct + 16 if 4 * n_distinct <= len(sample) else None


def _factorize_fixed_width(array):
    """Sorted codes and uniques of a numpy str or bytes array, in C.

    pandas would turn every value into a Python object first. The raw
    characters of each row are read as a few 64-bit integers instead, and the
    rows are factorised word by word; equal strings have equal bytes (numpy
    pads with zeros), so the codes are exactly those of the strings.
    """
    n_rows = array.shape[0]
    chars = np.ascontiguousarray(array).view(np.uint8).reshape(n_rows, -1)
    if array.dtype.kind == "U":
        points = chars.view(np.uint32)
        # Latin-1 text (the usual case) fits one byte per character: 4x fewer words.
        chars = points.astype(np.uint8) if points.max(initial=0) < 256 else chars
    width = -(-chars.shape[1] // 8) * 8
    if width != chars.shape[1]:
        padded = np.zeros((n_rows, width), dtype=np.uint8)
        padded[:, : chars.shape[1]] = chars
        chars = padded
    words = chars.view(np.int64)
    codes, _ = pd.factorize(words[:, 0])
    for j in range(1, words.shape[1]):
        # Below n_rows**2: a code pair is one int64 for any realistic n_rows.
        word_codes, word_uniques = pd.factorize(words[:, j])
        codes, _ = pd.factorize(codes * len(word_uniques) + word_codes)
    n_uniques = int(codes.max(initial=-1)) + 1
    first = np.empty(n_uniques, dtype=np.intp)
    # Any row of a code holds its string, so whichever write lands is right.
    first[codes] = np.arange(n_rows, dtype=np.intp)
    uniques = array[first].tolist()
    order = sorted(range(n_uniques), key=uniques.__getitem__)
    rank = np.empty(n_uniques, dtype=np.intp)
    rank[order] = np.arange(n_uniques, dtype=np.intp)
    return rank[codes], [uniques[k] for k in order]


def check_sensitive_features(
    sensitive_features, n_samples=None, *, param_name="sensitive_features"
):
    """Validate sensitive features and return their columns as code arrays.

    Parameters
    ----------
    sensitive_features : Series, DataFrame, array-like or dict of array-like
        One sensitive attribute (1-D) or several (DataFrame, 2-D array, or a
        dict mapping attribute names to columns).
    n_samples : int, default=None
        Number of rows the features must have (that of X or y).
    param_name : str, default="sensitive_features"
        Name used in error messages.

    Returns
    -------
    codes : list of ndarray of shape (n_samples,)
        Per attribute, the code of every row into ``uniques``.
    uniques : list of list
        Per attribute, its sorted distinct values.
    names : list of str
        Attribute names.

    Raises
    ------
    ValueError
        If the features have missing values, a length other than
        ``n_samples``, or columns of different lengths.
    """
    columns, names = _columns_of(sensitive_features, param_name)
    lengths = {name: len(col) for name, col in zip(names, columns, strict=True)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{param_name} has columns of different lengths: {lengths}.")
    length = next(iter(lengths.values()))
    if n_samples is not None and length != n_samples:
        hint = (
            " A dict of columns is not sliced per fold by sklearn's searches and "
            "cross-validation; pass a DataFrame there."
            if isinstance(sensitive_features, Mapping)
            else ""
        )
        raise ValueError(
            f"{param_name} has {length} rows but X and y have {n_samples}; "
            f"give one sensitive value per row.{hint}"
        )
    all_codes, all_uniques = [], []
    for name, column in zip(names, columns, strict=True):
        codes, uniques = _factorize(column, param_name, name)
        n_missing = int(np.count_nonzero(codes < 0))
        if n_missing:
            first = int(np.flatnonzero(codes < 0)[0])
            raise ValueError(
                f"{param_name} column {name!r} has {n_missing} missing value(s) "
                f"(first at row position {first}); sensitive attributes must be "
                "complete. Impute them or drop those rows before fitting."
            )
        all_codes.append(codes)
        all_uniques.append(uniques)
    return all_codes, all_uniques, names


def check_sendable_labels(groups, param_name="sensitive_features"):
    """Refuse group values that a federation's messages cannot carry.

    A client sends the server the values of its groups as JSON (text,
    numbers, booleans, None); a value of another type (a Decimal, a date)
    would reach the server as something else, so a federation refuses it
    on both backends alike, naming the attribute.

    Parameters
    ----------
    groups : SensitiveGroups
        The encoded groups.
    param_name : str, default="sensitive_features"
        Name used in the error.

    Returns
    -------
    groups : SensitiveGroups
        ``groups``, unchanged.
    """
    for label in groups.labels:
        for name, value in zip(groups.names, label, strict=True):
            if isinstance(value, np.generic) and value.dtype.kind in "biufU":
                value = value.item()
            if not isinstance(value, (str, int, float, bool, type(None))):
                raise ValueError(
                    f"{param_name} {name!r} holds a {type(value).__name__} "
                    f"({value!r}): a federation's clients send their groups' "
                    "values as JSON text, numbers, booleans or None. Convert "
                    "the attribute (e.g. to str)."
                )
    return groups


def encode_groups(
    sensitive_features, n_samples=None, *, param_name="sensitive_features"
):
    """Intersectional group codes of sensitive features.

    Each distinct combination of values of all attributes present in the data
    is one group; combinations that do not occur get no code.

    Parameters
    ----------
    sensitive_features : Series, DataFrame, array-like or dict of array-like
        See :func:`check_sensitive_features`.
    n_samples : int, default=None
        Number of rows the features must have.
    param_name : str, default="sensitive_features"
        Name used in error messages.

    Returns
    -------
    groups : SensitiveGroups
        Codes, labels and attribute names.

    Examples
    --------
    >>> from skfedida._groups import encode_groups
    >>> groups = encode_groups({"race": ["B", "W", "W", "B"],
    ...                         "sex": ["F", "M", "F", "F"]})
    >>> groups.codes
    array([0, 2, 1, 0])
    >>> groups.labels
    (('B', 'F'), ('W', 'F'), ('W', 'M'))
    """
    if isinstance(sensitive_features, SensitiveGroups):
        # Encoded already (once per fit): check the length, drop absent groups.
        if n_samples is not None and len(sensitive_features) != n_samples:
            raise ValueError(
                f"{param_name} has {len(sensitive_features)} rows but X and y "
                f"have {n_samples}; give one sensitive value per row."
            )
        return sensitive_features.compact()
    codes, uniques, names = check_sensitive_features(
        sensitive_features, n_samples, param_name=param_name
    )
    sizes = tuple(len(u) for u in uniques)
    if len(codes) == 1:
        combined = codes[0]
        n_combinations = sizes[0]
    else:
        n_combinations = int(np.prod(sizes, dtype=np.float64))
        combined = (
            np.ravel_multi_index(codes, sizes) if n_combinations < 2**62 else None
        )
    if combined is not None and n_combinations <= _MAX_DENSE_COMBINATIONS:
        present = np.bincount(combined, minlength=n_combinations) > 0
        observed = np.flatnonzero(present)
        lookup = np.cumsum(present, dtype=np.intp) - 1
        group_codes = lookup[combined]
    else:
        stacked = combined if combined is not None else np.column_stack(codes)
        observed, group_codes = np.unique(
            stacked, axis=0 if stacked.ndim > 1 else None, return_inverse=True
        )
        group_codes = group_codes.ravel().astype(np.intp, copy=False)
    if combined is not None:
        per_attribute = np.unravel_index(observed, sizes)
    else:
        per_attribute = observed.T
    labels = tuple(
        tuple(uniques[j][int(per_attribute[j][g])] for j in range(len(names)))
        for g in range(len(observed))
    )
    return SensitiveGroups(codes=group_codes, labels=labels, names=tuple(names))


def column_positions(X, columns, param_name):
    """Positions of columns of X given by names, positions or a boolean mask.

    Parameters
    ----------
    X : DataFrame or 2-D array
        The data whose columns are named.
    columns : str, int, list of str or int, or boolean mask
        Names (of a DataFrame's columns) or positions; a boolean mask needs
        one value per column.
    param_name : str
        Name used in error messages.

    Returns
    -------
    positions : ndarray of int
    """
    n_features = X.shape[1]
    if isinstance(columns, (str, numbers.Integral)):
        columns = [columns]
    keys = list(columns)
    if keys and all(isinstance(key, (bool, np.bool_)) for key in keys):
        if len(keys) != n_features:
            raise ValueError(
                f"{param_name} as a boolean mask needs {n_features} values; "
                f"got {len(keys)}."
            )
        return np.flatnonzero(keys)
    names = list(X.columns) if is_frame(X) else None
    positions = []
    for key in keys:
        if names is not None and key in names:
            positions.append(names.index(key))
        elif isinstance(key, (numbers.Integral, np.integer)):
            if not -n_features <= key < n_features:
                raise ValueError(
                    f"{param_name} gives column position {key} outside X's "
                    f"{n_features} columns."
                )
            positions.append(int(key) % n_features)
        else:
            where = (
                f"X has columns {names}"
                if names is not None
                else "X is an array, so give column positions (or pass a DataFrame)"
            )
            raise ValueError(
                f"{param_name} names column {key!r}, which is not in X; {where}."
            )
    return np.asarray(positions, dtype=np.intp)


def resolve_sensitive(X, *, sensitive_features=None, sensitive=None, drop=True):
    """Find the sensitive features of a call and the model inputs without them.

    S has exactly one source: explicit metadata (``sensitive_features``) or
    columns of X (``sensitive``). Both at once is an error rather than a
    precedence rule, since the two could disagree and either choice would
    silently ignore one of them.

    Parameters
    ----------
    X : array-like or DataFrame of shape (n_samples, n_features)
        Input data.
    sensitive_features : array-like, DataFrame or dict, default=None
        Sensitive features passed as metadata.
    sensitive : str, int or list of str or int, default=None
        Columns of X (names for a DataFrame, positions for an array) that hold
        the sensitive features.
    drop : bool, default=True
        Whether to remove the ``sensitive`` columns from the returned X.

    Returns
    -------
    X_model : array-like or DataFrame
        X without the sensitive columns (X itself in metadata mode).
    sensitive_features : DataFrame, dict, array-like or None
        The sensitive features, or None if neither source was given.

    Raises
    ------
    ValueError
        If both sources are given, or a named column is not in X.
    """
    if sensitive is None:
        return X, sensitive_features
    if sensitive_features is not None:
        raise ValueError(
            "Sensitive attributes were given twice: as the sensitive_features "
            f"metadata and as columns of X (sensitive={sensitive!r}). Pass one."
        )
    if not isinstance(sensitive, (str, numbers.Integral)) and len(sensitive) == 0:
        raise ValueError("sensitive must name at least one column of X; got [].")
    if sp.issparse(X):
        raise TypeError(
            "sensitive columns cannot be read from a sparse X; pass them as the "
            "sensitive_features metadata instead."
        )
    if not is_frame(X):
        X = np.asarray(X)
    positions = column_positions(X, sensitive, "sensitive")
    if is_frame(X):
        S = X.iloc[:, positions]
        return (X.drop(columns=X.columns[positions]) if drop else X), S
    S = {f"x{pos}": X[:, pos] for pos in positions}
    return (np.delete(X, positions, axis=1) if drop else X), S


def take_rows(values, indices):
    """Rows of per-row values (sensitive features, client ids, weights).

    Keeps the container: a DataFrame or Series (with a fresh RangeIndex, as
    resampled rows have no index of their own), an array, a list, or a dict of
    columns (each indexed).

    Parameters
    ----------
    values : array-like, Series, DataFrame, list or dict of array-like
        One value (or one row) per sample.
    indices : ndarray of int
        Positions to take, repeats allowed.

    Returns
    -------
    taken : same type as ``values``
    """
    if isinstance(values, SensitiveGroups):
        return values.take(indices)
    if isinstance(values, Mapping):
        return {name: take_rows(column, indices) for name, column in values.items()}
    taken = safe_indexing(values, indices)
    if pd is not None and isinstance(taken, (pd.DataFrame, pd.Series)):
        taken = taken.reset_index(drop=True)
    return taken


class ClientCodes(NamedTuple):
    """The federation's client ids, sorted, and every row's position among them.

    ``ids[codes[i]]`` is row i's client; what ``client_ids`` gives, read
    and checked once at a fit's entry and handed to every stage after.
    """

    ids: np.ndarray
    codes: np.ndarray


def client_ids(clients, n_samples):
    """Sorted client ids and every row's position among them, checked.

    ``None`` is one client (``0``) holding every row: the non-federated case,
    as sklearn's estimator checks and plain pipelines use it. Returns a
    ``ClientCodes``.
    """
    if clients is None:
        return ClientCodes(np.array([0]), np.zeros(n_samples, dtype=np.intp))
    clients = np.asarray(clients)
    if clients.ndim != 1 or clients.shape[0] != n_samples:
        raise ValueError(
            f"clients must hold one id per row: {n_samples} rows, got "
            f"shape {clients.shape}."
        )
    if missing_mask(clients).any():
        raise ValueError("clients has missing values; every row needs a client.")
    check_one_kind(clients, "clients")
    if clients.dtype.kind == "O":
        # Python strings (pandas' string and categorical ids, object arrays)
        # or numbers become a plain numpy array of one type.
        clients = np.asarray(clients.tolist())
    return ClientCodes(*np.unique(clients, return_inverse=True))


def merged_groups(configs):
    """The union of the clients' groups, and each client's codes in it.

    ``configs`` are what the clients sent of their groups (``group-labels``
    and ``sensitive-names``, JSON); the union is in the order
    ``encode_groups`` gives the pooled rows, as in-process.
    """
    labels = [
        [tuple(label) for label in json.loads(config[GROUP_LABELS])]
        for config in configs
    ]
    names = json.loads(configs[0][SENSITIVE_NAMES])
    union = sorted(set().union(*labels), key=repr)
    merged = encode_groups(
        {name: [label[j] for label in union] for j, name in enumerate(names)}
    )
    code = {label: k for k, label in enumerate(merged.labels)}
    return merged, [[code[label] for label in client] for client in labels]
