"""FairnessAwareROSE: balance every (sensitive group, outcome) subgroup.

The paper's Algorithm 1 as an imbalanced-learn sampler. Subgroups are the
combinations of an intersectional sensitive group and an outcome class. Each
subgroup is brought to a target size: subgroups above it are cut by sampling
without replacement, subgroups below it keep all their rows and receive
synthetic rows ``x0 + eps``, where ``x0`` is drawn from the subgroup and
``eps ~ N(0, Sigma)`` is the smoothed-bootstrap (ROSE) kernel.
"""

from __future__ import annotations

import numbers
import os
import warnings
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from imblearn.base import BaseSampler
from sklearn.preprocessing import label_binarize
from sklearn.utils import check_random_state, column_or_1d
from sklearn.utils.multiclass import type_of_target

from .._compat import (
    CachedParamNamesMixin,
    Interval,
    StrOptions,
    check_target_type,
    fit_context,
)
from .._doc_links import DocLinkMixin
from .._groups import (
    SensitiveGroups,
    column_positions,
    encode_groups,
    is_frame,
    pd,
    remember_resampling,
    resolve_sensitive,
    take_rows,
)
from .._validation import is_plain_float_matrix, plain_labels, reset_input_columns
from ..exceptions import InactiveGroupBalancingWarning, caller_stacklevel

__all__ = ["FairnessAwareROSE"]


def _column_names(X):
    if is_frame(X):
        return [str(c) for c in X.columns]
    return [f"x{j}" for j in range(X.shape[1])]


def _column_kinds(X):
    """Per column: 'binary', 'integer', 'categorical', 'float' or 'other'."""
    kinds = []
    if is_frame(X):
        # X.dtypes, not a column object per column: a federation's minibatches
        # ask this for every batch.
        for dtype in X.dtypes:
            if isinstance(dtype, pd.SparseDtype):
                dtype = dtype.subtype
            if (
                isinstance(dtype, pd.CategoricalDtype)
                or pd.api.types.is_bool_dtype(dtype)
                or pd.api.types.is_string_dtype(dtype)
                or pd.api.types.is_object_dtype(dtype)
            ):
                kinds.append("categorical")
            elif pd.api.types.is_integer_dtype(dtype):
                kinds.append("integer")
            elif pd.api.types.is_float_dtype(dtype):
                kinds.append("float")
            else:
                kinds.append("other")
        return kinds
    kind = X.dtype.kind
    if kind in "b":
        return ["categorical"] * X.shape[1]
    if kind in "iu":
        return ["integer"] * X.shape[1]
    if kind == "f":
        return ["float"] * X.shape[1]
    if kind in "OUS":
        return ["categorical"] * X.shape[1]
    return ["other"] * X.shape[1]


def _float_block(X, columns, copy=False):
    """The given columns as a float64 array; ``copy=True`` makes it writable."""
    if is_frame(X):
        return X.iloc[:, columns].to_numpy(dtype=np.float64, copy=copy)
    return np.array(X[:, columns], dtype=np.float64, copy=copy or None)


def _num_rows(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _column_units(X):
    """Largest absolute value of every column (1 where a column is all 0)."""
    unit = np.max(np.abs(X), axis=0) if X.shape[0] else np.ones(X.shape[1])
    return np.where(unit > 0, unit, 1.0)


def _check_in_range(values, limits, names):
    """Refuse synthetic values beyond what their output column can hold.

    ``values`` are seed values plus noise, in float64; ``limits`` the largest
    finite value of each column's output dtype (float32's 3.4e38 for a
    float32 column). A value beyond it would be stored as inf, silently: on
    data near the dtype's largest value the noise carries a seed past it.
    """
    in_range = np.abs(values) <= limits  # False for inf and NaN too
    if in_range.all():
        return
    j = int(np.flatnonzero(~in_range.all(axis=0))[0])
    limit = float(np.atleast_1d(limits)[j] if np.ndim(limits) else limits)
    dtype = "float32" if limit < np.finfo(np.float64).max else "float64"
    advice = ", or pass X as float64" if dtype == "float32" else ""
    raise ValueError(
        f"Synthetic rows of X column {names[j]!r} would overflow {dtype} (largest "
        f"value {limit:.4g}): the column's values are so close to it that a seed "
        "value plus the smoothed-bootstrap noise passes it, and would be stored "
        "as inf. Scale the column first (e.g. sklearn.preprocessing."
        f"StandardScaler){advice}, or use shrinkage=0 (a plain bootstrap, with "
        "no noise)."
    )


def _physical_memory():
    """Bytes of physical memory of this machine, or None where unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # not a POSIX system
        return None


def _output_bytes(X, n_rows, n_synthetic, largest_new, n_noised):
    """What resampling to ``n_rows`` rows holds at its peak, in bytes.

    The output X (an array of X's dtype, float64 once noised columns are
    not float; a frame's columns at their dtypes' sizes, 8 bytes for an
    object's reference), ``sample_indices_`` (8 bytes a row) and the float64
    noise: for an array, the draws and the noised values of the largest
    subgroup's ``largest_new`` synthetic rows; for a frame, the noise of every
    synthetic row and the noised columns of every output row.
    """
    if is_frame(X):
        row = sum(getattr(dtype, "itemsize", 8) for dtype in X.dtypes)
        noise = (n_synthetic + n_rows) * n_noised * 8
    else:
        itemsize = X.dtype.itemsize
        if n_noised and X.dtype.kind != "f":
            itemsize = 8
        row = X.shape[1] * itemsize
        noise = 2 * largest_new * n_noised * 8
    return n_rows * (row + 8) + noise


def _output_limit(dtype):
    """Largest finite value a noised frame column of this dtype can hold."""
    subtype = dtype.subtype if isinstance(dtype, pd.SparseDtype) else dtype
    if pd.api.types.is_float_dtype(subtype):  # kept (also nullable Float32)
        return float(np.finfo(getattr(subtype, "numpy_dtype", subtype)).max)
    return float(np.finfo(np.float64).max)  # integer columns become float64


def _has_missing(X, j):
    if is_frame(X):
        return bool(X.iloc[:, j].isna().any())
    column = X[:, j]
    if column.dtype.kind == "f":
        return bool(np.isnan(column).any())
    if column.dtype.kind == "O":
        return bool((np.equal(column, None) | (column != column)).any())
    return False


def _restore_y(y_res, y, classes, binarize):
    """Give y_res the container type of the y the user passed."""
    if binarize:
        y_res = label_binarize(y_res, classes=classes)
    if isinstance(y, list):
        return y_res.tolist()
    if pd is not None and isinstance(y, pd.Series):
        return pd.Series(y_res, name=y.name, dtype=y.dtype)
    if pd is not None and isinstance(y, pd.DataFrame):
        frame = pd.DataFrame(y_res.reshape(len(y_res), -1), columns=y.columns)
        return frame.astype(y.dtypes)
    return y_res


def _subgroup_targets(n_target, counts, present, n_labels):
    """Target size of every subgroup (columns) of every sample (rows).

    ``n_target`` as an int, a float or a statistic's name, for
    ``fit_resample`` (one sample) and the minibatches of an epoch (one row
    each) alike. ``counts`` and ``present`` have one column per (group,
    label) cell, ``group * n_labels + label``; the targets broadcast to
    them.
    """
    n_batches = counts.shape[0]
    if isinstance(n_target, str) and n_target == "group_mean":
        # The mean size of each group's present cells: each group keeps its
        # rows and its labels become equal. Rounded half to even.
        by_group = counts.reshape(n_batches, -1, n_labels)
        n_present = (by_group > 0).sum(axis=2)
        value = np.round(by_group.sum(axis=2) / np.maximum(n_present, 1))
        value = np.repeat(value, n_labels, axis=1)
        return np.maximum(value, 1).astype(np.intp)
    n_present = present.sum(axis=1)
    if isinstance(n_target, str):
        if n_target == "mean":
            value = counts.sum(axis=1) / np.maximum(n_present, 1)
        elif n_target == "max":
            value = counts.max(axis=1)
        else:  # "median"
            sizes = np.where(present, counts, np.nan)
            value = np.nanmedian(sizes, axis=1)
        value = np.round(value)  # half to even
    elif isinstance(n_target, numbers.Integral):
        value = np.full(n_batches, int(n_target))
    else:
        value = np.round(float(n_target) * counts.max(axis=1))
    return np.maximum(value, 1).astype(np.intp)[:, None]


def _subgroup_sizes(counts, target, undersample):
    """Rows kept and synthetic rows added of subgroups of ``counts`` rows.

    A subgroup above its target is cut to it (with ``undersample``) or
    kept whole; one below it keeps its rows and gets the difference in
    synthetic rows.
    """
    kept = np.minimum(counts, target) if undersample else counts
    return kept, np.maximum(target - counts, 0)


def _silverman_factor(n_samples, n_noised):
    """Silverman's bandwidth factor of ``n_samples`` rows of ``n_noised`` columns.

    ``n_samples`` may be an array (each minibatch's own rows).
    """
    if n_noised == 0:
        return 0.0
    return (4.0 / ((n_noised + 2) * n_samples)) ** (1.0 / (n_noised + 4))


def _diagonal_noise(random_state, n_rows, scale, std):
    """The smoothed-bootstrap noise of ``n_rows`` synthetic rows: one draw each.

    ``scale`` is ``shrinkage`` times :func:`_silverman_factor`, ``std`` the
    subgroup's standard deviation of every noised column (both per row, or
    shared). The draws and formula of imblearn's
    ``RandomOverSampler(shrinkage=...)``.
    """
    draws = random_state.randn(n_rows, np.shape(std)[-1])
    draws *= scale * std
    return draws


class FairnessAwareROSE(DocLinkMixin, CachedParamNamesMixin, BaseSampler):
    """Balance every (sensitive group, outcome) subgroup by smoothed bootstrap.

    The paper's Algorithm 1. Rows are split into subgroups, one per
    combination of an intersectional sensitive group (see ``sensitive`` and
    ``sensitive_features``) and an outcome class. Each subgroup is brought to
    a target size ``N_target``:

    - a subgroup with at least ``N_target`` rows is cut to ``N_target`` rows
      drawn without replacement (``undersample=True``, as in Algorithm 1), or
      kept whole (``undersample=False``);
    - a smaller subgroup keeps all its rows and receives
      ``N_target - |G|`` synthetic rows ``x0 + eps``, with ``x0`` drawn with
      replacement from the subgroup and ``eps ~ N(0, Sigma)``.

    ``Sigma`` is by default the smoothed-bootstrap (ROSE) kernel of
    imbalanced-learn's ``RandomOverSampler(shrinkage=...)``: diagonal, with
    standard deviations ``shrinkage * h * std_G``, where ``std_G`` is the
    per-feature standard deviation in the subgroup and
    ``h = (4 / ((p + 2) n)) ** (1 / (p + 4))`` is Silverman's factor, ``n``
    the number of rows of X and ``p`` the number of noised columns. Noise is
    only added to continuous columns: sensitive, binary, integer-coded and
    categorical columns are copied from the seed row, so synthetic rows stay
    valid. A subgroup of one row, or of constant rows, gets zero noise.
    Subgroups absent from the data stay absent.

    Read more in the :ref:`User Guide <user_guide>`.

    Parameters
    ----------
    n_target : int, float, {"max", "mean", "median", "group_mean"}, dict or \
            callable, default="mean"
        Target size of every subgroup:

        - int: that many rows;
        - ``"max"``, ``"mean"``, ``"median"``: that statistic of the subgroup
          sizes (rounded);
        - ``"group_mean"``: the mean size of the subgroups of the same
          sensitive group (rounded), so that every group's classes become
          equal and (with ``undersample=True``, up to rounding) the group
          keeps its number of rows; a group holding one class is kept as it
          is. Weighted back to the classes' overall shares
          (``FederatedEstimator(prior_correction="weights")``), every group
          holding all classes then trains with the same class shares: the
          reweighing of Kamiran and Calders (2012), drawn by smoothed
          bootstrap. It is :func:`~skfedida.model_selection.make_fedida`'s
          sampler, where it was measured against ``"mean"``;
        - float in (0, 1]: that fraction of the largest subgroup;
        - dict: ``{(group, class): size}``; subgroups not listed keep their
          size. ``group`` is the tuple of sensitive values (a single value is
          accepted for one attribute; ``()`` without sensitive attributes);
        - callable: ``n_target(counts)`` with ``counts`` the dict of subgroup
          sizes, returning an int or such a dict.

        The default ``"mean"`` keeps the number of rows (and so the cost of an
        epoch and a client's weight in federated averaging) about the same
        while making every subgroup equal, and, unlike ``"max"``, it never
        multiplies the data by the number of subgroups (x20 on Adult). It uses
        both branches of Algorithm 1, and, applied per epoch or per batch,
        rows cut from large subgroups are seen in other draws. A target
        whose output would not fit in this machine's physical memory is
        refused before anything is allocated.
    undersample : bool, default=True
        Whether subgroups above the target are cut to it (Algorithm 1) or kept.
    shrinkage : float or dict, default=1.0
        Multiplier of the kernel bandwidth, >= 0, for every subgroup or per
        subgroup (keys as in ``n_target``; every subgroup that receives
        synthetic rows needs one). 0 gives a plain bootstrap. Ignored when
        ``covariance`` is a matrix.
    covariance : {"diag", "full"} or array-like of shape (p, p), default="diag"
        ``"diag"``: the smoothed-bootstrap kernel above. ``"full"``: the
        subgroup's covariance matrix of the noised columns, scaled by
        ``(shrinkage * h) ** 2``. A matrix: the noise covariance itself, over
        the noised columns in their order (symmetric positive semi-definite).
    categorical_features : "auto" or array-like, default="auto"
        Columns copied from the seed row, never noised. ``"auto"``: binary
        (0/1) float columns, integer columns, and boolean, categorical,
        string or object columns. Otherwise column names (DataFrame),
        positions, or a boolean mask; every other column must be numeric and
        is noised (integer columns then come out as float64).
    sensitive : str, int or list, default=None
        Columns of X holding the sensitive attributes (names for a DataFrame,
        positions for an array). They stay in the output, copied from the seed
        row. Leave None to pass ``sensitive_features`` to ``fit_resample``.
        Without either, all rows form one group and only the classes are
        balanced, with an
        :class:`~skfedida.exceptions.InactiveGroupBalancingWarning`.
    random_state : int, RandomState instance or None, default=None
        Controls every draw.

    Attributes
    ----------
    sample_indices_ : ndarray of shape (n_samples_resampled,)
        Position in X of the row each output row was copied from (its seed
        row for a synthetic row). Use it to resample the sensitive features,
        sample weights or client ids jointly.
    n_original_ : int
        Number of output rows that are original rows, unchanged; they come
        first, in their input order, followed by the synthetic rows.
    subgroups_ : list of tuple
        The ``(group, class)`` subgroups present in the input, in output order.
    subgroup_counts_before_ : dict
        Rows per subgroup in the input.
    subgroup_counts_after_ : dict
        Rows per subgroup in the output.
    n_target_ : dict
        Target size used for every subgroup.
    sampling_strategy_ : dict
        Same as ``n_target_`` (imbalanced-learn's name).
    shrinkage_ : dict
        Bandwidth multiplier used for every subgroup.
    noised_features_ : ndarray of shape (`n_features_in_`,), dtype=bool
        Columns that received noise.
    n_features_in_ : int
        Number of columns of X.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Column names of X, when X is a DataFrame with string column names.

    See Also
    --------
    imblearn.over_sampling.RandomOverSampler : The same kernel, by class only.

    Examples
    --------
    >>> import numpy as np
    >>> from skfedida.over_sampling import FairnessAwareROSE
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(100, 2))
    >>> y = np.r_[np.zeros(80, dtype=int), np.ones(20, dtype=int)]
    >>> sex = np.r_[["F"] * 60, ["M"] * 30, ["F"] * 10]
    >>> rose = FairnessAwareROSE(n_target="max", random_state=0)
    >>> X_res, y_res = rose.fit_resample(X, y, sensitive_features=sex)
    >>> rose.subgroup_counts_before_
    {(('F',), 0): 60, (('F',), 1): 10, (('M',), 0): 20, (('M',), 1): 10}
    >>> rose.subgroup_counts_after_
    {(('F',), 0): 60, (('F',), 1): 60, (('M',), 0): 60, (('M',), 1): 60}
    """

    _sampling_type = "over-sampling"

    #: Takes skfedida's encoded groups (``SensitiveGroups``) as
    #: ``sensitive_features``: the federated client trainer passes them on
    #: as they are, instead of the values the user gave.
    accepts_encoded_groups = True

    __metadata_request__fit = {"sensitive_features": True}
    __metadata_request__fit_resample = {"sensitive_features": True}

    _parameter_constraints: dict = {
        "n_target": [
            Interval(numbers.Integral, 1, None, closed="left"),
            Interval(numbers.Real, 0, 1, closed="right"),
            StrOptions({"max", "mean", "median", "group_mean"}),
            Mapping,
            callable,
        ],
        "undersample": ["boolean"],
        "shrinkage": [Interval(numbers.Real, 0, None, closed="left"), Mapping],
        "covariance": [StrOptions({"diag", "full"}), "array-like"],
        "categorical_features": [StrOptions({"auto"}), "array-like"],
        "sensitive": [str, numbers.Integral, list, tuple, None],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        n_target="mean",
        undersample=True,
        shrinkage=1.0,
        covariance="diag",
        categorical_features="auto",
        sensitive=None,
        random_state=None,
    ):
        self.n_target = n_target
        self.undersample = undersample
        self.shrinkage = shrinkage
        self.covariance = covariance
        self.categorical_features = categorical_features
        self.sensitive = sensitive
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # Synthetic rows add dense noise; frames keep their column dtypes and
        # categorical or string columns are copied from the seed row.
        tags.input_tags.sparse = False
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.input_tags.allow_nan = False
        tags.sampler_tags.sample_indices = True
        return tags

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None):
        """Find the subgroups and their targets, and draw the resampling.

        Use :meth:`fit_resample` to get the resampled data.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Data.
        y : array-like of shape (n_samples,)
            Outcome classes.
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes of every row, unless ``sensitive`` names
            columns of X.

        Returns
        -------
        self : object
            Fitted sampler.
        """
        self._fit_resample(X, y, sensitive_features)
        return self

    @fit_context(prefer_skip_nested_validation=True)
    def fit_resample(self, X, y, *, sensitive_features=None):
        """Resample the data so that every subgroup has its target size.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Data.
        y : array-like of shape (n_samples,)
            Outcome classes.
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes of every row, unless ``sensitive`` names
            columns of X.

        Returns
        -------
        X_resampled : {ndarray, DataFrame, list} of shape (n_samples_new, n_features)
            Resampled data, of the type of X (a DataFrame keeps its columns and
            dtypes; noised integer columns become float64).
        y_resampled : {ndarray, Series, list} of shape (n_samples_new,)
            Resampled outcomes, of the type of y.
        """
        X_res, y_res, _ = self._fit_resample(X, y, sensitive_features)
        indices = self.sample_indices_
        if indices.shape[0] != _num_rows(X) or np.any(
            indices != np.arange(indices.size)
        ):
            # Only rows that moved make the given S wrong for X_res.
            remember_resampling(X_res, sensitive_features)
        return X_res, y_res

    @fit_context(prefer_skip_nested_validation=True)
    def _fit_resample_all(self, X, y, sensitive_features):
        return self._fit_resample(X, y, sensitive_features)

    def fit_resample_with_sensitive(self, X, y, *, sensitive_features=None):
        """Resample X, y and the sensitive features together.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Data.
        y : array-like of shape (n_samples,)
            Outcome classes.
        sensitive_features : array-like, DataFrame or dict, default=None
            Sensitive attributes of every row, unless ``sensitive`` names
            columns of X.

        Returns
        -------
        X_resampled : {ndarray, DataFrame, list} of shape (n_samples_new, n_features)
            Resampled data, as returned by :meth:`fit_resample`.
        y_resampled : {ndarray, Series, list} of shape (n_samples_new,)
            Resampled outcomes, as returned by :meth:`fit_resample`.
        S_resampled : same type as the sensitive features
            The sensitive features of every output row (its seed row's), e.g.
            to fit a fairness-penalised estimator on the resampled data. In
            column mode, the ``sensitive`` columns of ``X_resampled``.

        Examples
        --------
        >>> import numpy as np
        >>> from skfedida.over_sampling import FairnessAwareROSE
        >>> X = np.arange(12.0).reshape(6, 2)
        >>> y = np.array([0, 0, 0, 1, 0, 1])
        >>> S = np.array(["a", "a", "b", "b", "a", "b"])
        >>> rose = FairnessAwareROSE(n_target=2, random_state=0)
        >>> X_res, y_res, S_res = rose.fit_resample_with_sensitive(
        ...     X, y, sensitive_features=S)
        >>> sorted(zip(S_res.tolist(), y_res.tolist()))
        [('a', 0), ('a', 0), ('b', 0), ('b', 0), ('b', 1), ('b', 1)]
        """
        X_res, y_res, S = self._fit_resample_all(X, y, sensitive_features)
        S_res = None if S is None else take_rows(S, self.sample_indices_)
        return X_res, y_res, S_res

    # -- the algorithm ----------------------------------------------------

    def sensitive_groups(self, X, *, sensitive_features=None):
        """The groups this sampler balances, of the rows of X.

        The sensitive attributes from ``sensitive_features`` or the
        ``sensitive`` columns of X, encoded with only the groups present;
        without either, one group of every row.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Data.
        sensitive_features : array-like, DataFrame, dict or SensitiveGroups, \
                default=None
            Sensitive attributes of every row, unless ``sensitive`` names
            columns of X.

        Returns
        -------
        groups : SensitiveGroups
            Group code of every row, the groups' values and attribute names.

        Notes
        -----
        For the federated client trainer, which encodes a client's groups
        once and resamples many minibatches of its rows.

        Examples
        --------
        >>> import numpy as np
        >>> from skfedida.over_sampling import FairnessAwareROSE
        >>> X = np.array([[0.5, 1.0], [1.5, 0.0], [2.5, 1.0]])
        >>> FairnessAwareROSE(sensitive=1).sensitive_groups(X).codes
        array([1, 0, 1])
        """
        return self._sensitive_groups(X, sensitive_features)[1]

    def _sensitive_groups(self, X, sensitive_features):
        """S as given or read from X (None if neither), and its groups."""
        _, S = resolve_sensitive(
            X,
            sensitive_features=sensitive_features,
            sensitive=self.sensitive,
            drop=False,
        )
        n_samples = _num_rows(X)
        if S is None:
            return None, SensitiveGroups(np.zeros(n_samples, dtype=np.intp), ((),), ())
        return S, encode_groups(S, n_samples=n_samples)

    def noised_columns(self, X):
        """Which columns of X this sampler adds noise to.

        ``categorical_features`` and ``sensitive`` applied to X's columns:
        with ``"auto"``, binary (0/1) float columns, integer columns and
        non-numeric columns are copied from the seed row, the others noised.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Data.

        Returns
        -------
        noised : ndarray of shape (n_features,), dtype=bool
            True for the columns that get noise.

        Notes
        -----
        For the federated client trainer, which decides the noised columns
        once on a client's rows and passes ``categorical_features=~noised``
        to the sampler of its minibatches: the ``"auto"`` rule applied to
        every minibatch could find a continuous column binary by chance, and
        change which columns get noise from one minibatch to the next.

        Examples
        --------
        >>> import numpy as np
        >>> from skfedida.over_sampling import FairnessAwareROSE
        >>> X = np.array([[0.5, 1.0, 3.0], [1.5, 0.0, 4.0]])
        >>> FairnessAwareROSE().noised_columns(X)
        array([ True, False,  True])
        """
        if not hasattr(X, "columns"):
            X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(
                f"X must be 2-D (rows and columns); got {X.ndim} dimensions."
            )
        return self._noised_columns(X)[0]

    def _fit_resample(self, X, y, sensitive_features=None):
        if sp.issparse(X):
            raise TypeError(
                "FairnessAwareROSE does not accept sparse X: synthetic rows "
                "add dense noise. Convert X with X.toarray()."
            )
        return_list = isinstance(X, list)
        if not is_frame(X):
            X = np.asarray(X)
            if X.ndim != 2:
                raise ValueError(
                    f"X must be 2-D (n_samples, n_features); got shape {X.shape}."
                )
        n_samples, n_features = X.shape
        # sklearn's wording, so the estimator checks recognise the errors.
        if n_samples < 1:
            raise ValueError(
                f"Found array with {n_samples} sample(s) (shape={X.shape}) while a "
                "minimum of 1 is required by FairnessAwareROSE."
            )
        if n_features < 1:
            raise ValueError(
                f"Found array with {n_features} feature(s) (shape={X.shape}) while "
                "a minimum of 1 is required by FairnessAwareROSE."
            )
        coded = plain_labels(y)
        if coded is not None:
            y_array, binarize_y = y, False
            classes, y_codes = coded
        else:
            y_type = type_of_target(y, input_name="y")
            if y_type not in ("binary", "multiclass", "multilabel-indicator"):
                raise ValueError(
                    f"Unknown label type: {y_type!r}; y must hold classes."
                )
            if y_type == "multilabel-indicator":
                y_array, binarize_y = check_target_type(y, indicate_one_vs_all=True)
            else:
                y_array, binarize_y = column_or_1d(y, warn=True), False
            classes, y_codes = np.unique(y_array, return_inverse=True)
        if y_array.shape[0] != n_samples:
            raise ValueError(f"X has {n_samples} rows but y has {y_array.shape[0]}.")
        if len(classes) < 2:
            raise ValueError(
                "FairnessAwareROSE needs at least 2 classes in y to balance "
                f"outcomes; got one class only: {classes.tolist()}."
            )
        reset_input_columns(self, X)

        S, groups = self._sensitive_groups(X, sensitive_features)
        if S is None:
            # The estimators warn InactivePenaltyWarning in the same case; this
            # warning is its subclass, so that the code silencing theirs (a
            # federation's clients, which warn once for the whole fit) also
            # silences the sampler's.
            warnings.warn(
                "FairnessAwareROSE was given no sensitive attributes, so all rows "
                "form one group and only the outcome classes are balanced (as "
                "imblearn's RandomOverSampler(shrinkage=...) does). Pass them as "
                "fit_resample(X, y, sensitive_features=S) (in a Pipeline, with "
                "sklearn.set_config(enable_metadata_routing=True)), or name "
                "columns of X with FairnessAwareROSE(sensitive=[...]).",
                InactiveGroupBalancingWarning,
                stacklevel=caller_stacklevel(),
            )
        noised, X_noised = self._noised_columns(X)
        X_res = self._resample_groups(
            X,
            y_codes,
            class_values=classes.tolist(),
            group_codes=groups.codes,
            group_labels=groups.labels,
            n_attributes=len(groups.names),
            noised=noised,
            X_noised=X_noised,
        )
        y_res = _restore_y(y_array[self.sample_indices_], y, classes, binarize_y)
        if return_list:
            X_res = X_res.tolist()
        return X_res, y_res, S

    def _resample_groups(
        self,
        X,
        y_codes,
        *,
        class_values,
        group_codes,
        group_labels,
        n_attributes,
        noised,
        X_noised,
    ):
        """Algorithm 1 on validated inputs: coded labels and groups."""
        self.noised_features_ = noised
        n_samples = X.shape[0]
        n_classes = len(class_values)
        subgroup_codes = group_codes * n_classes + y_codes
        counts = np.bincount(subgroup_codes, minlength=len(group_labels) * n_classes)
        present = np.flatnonzero(counts)
        present_codes = present.tolist()  # Python ints index tuples faster
        keys = [
            (group_labels[code // n_classes], class_values[code % n_classes])
            for code in present_codes
        ]
        before = dict(zip(keys, counts[present].tolist(), strict=True))
        targets = self._targets(before, n_attributes, counts, n_classes)
        shrinkage = self._shrinkages(keys, before, targets, n_attributes)

        random_state = check_random_state(self.random_state)
        order = np.argsort(subgroup_codes, kind="stable")
        starts = np.concatenate([[0], np.cumsum(counts)])
        noised_columns = np.flatnonzero(noised)
        bandwidth = _silverman_factor(n_samples, noised_columns.size)
        explicit_cov = self._explicit_covariance(noised_columns.size)

        # Output sizes are known before any draw, so the output is allocated once
        # and synthetic rows are written into it as they are drawn.
        kept_sizes, new_sizes = _subgroup_sizes(
            counts[present],
            np.fromiter((targets[key] for key in keys), np.intp, count=len(keys)),
            self.undersample,
        )
        n_kept, n_synthetic = int(kept_sizes.sum()), int(new_sizes.sum())
        self._check_output_size(
            X,
            n_kept + n_synthetic,
            n_synthetic,
            int(new_sizes.max(initial=0)),
            noised_columns.size,
        )
        output = (_FrameOutput if is_frame(X) else _ArrayOutput)(
            X, noised_columns, n_kept, n_synthetic
        )
        kept, seeds, after = [], [], {}
        offset = 0
        for key, code, n_kept_rows, n_new in zip(
            keys, present, kept_sizes.tolist(), new_sizes.tolist(), strict=True
        ):
            rows = order[starts[code] : starts[code + 1]]
            size = rows.size
            if not n_new:
                if n_kept_rows < size:
                    # RandomState.choice(rows, n_kept_rows, replace=False),
                    # the same draws without its per-call overhead.
                    rows = rows[random_state.permutation(size)[:n_kept_rows]]
                kept.append(rows)
                after[key] = int(rows.size)
                continue
            kept.append(rows)
            # RandomState.choice(rows, n_new, replace=True), the same draws.
            seed_rows = rows[random_state.randint(0, size, size=n_new)]
            seeds.append(seed_rows)
            noise = None
            if X_noised is not None:
                noise = self._noise(
                    random_state,
                    X_noised[rows],
                    n_new,
                    shrinkage[key] * bandwidth,
                    explicit_cov,
                )
            output.add_synthetic(offset, seed_rows, noise)
            offset += n_new
            after[key] = size + n_new

        kept = np.sort(np.concatenate(kept))
        seeds = np.concatenate(seeds) if seeds else np.empty(0, dtype=np.intp)
        self.sample_indices_ = np.concatenate([kept, seeds]).astype(np.intp)
        self.n_original_ = int(kept.size)
        self.subgroups_ = keys
        self.subgroup_counts_before_ = before
        self.subgroup_counts_after_ = after
        self.n_target_ = targets
        self.sampling_strategy_ = dict(targets)
        self.shrinkage_ = shrinkage

        return output.finish(kept, self.sample_indices_)

    def _check_output_size(self, X, n_rows, n_synthetic, largest_new, n_noised):
        """Refuse, before allocating it, an output larger than this machine.

        An output beyond the physical memory can never be held at once: numpy
        fails to allocate it (a MemoryError naming no parameter), or the
        machine swaps until the fit is killed. Smaller outputs are left to the
        allocation, as the memory free at that moment is not ours to judge.
        """
        memory = _physical_memory()
        size = _output_bytes(X, n_rows, n_synthetic, largest_new, n_noised)
        if memory is None or size <= memory:
            return
        raise ValueError(
            f"n_target={self.n_target!r} asks for {n_rows:,} resampled rows "
            f"({n_synthetic:,} of them synthetic), about {size / 2**30:,.1f} GiB, "
            f"more than this machine's {memory / 2**30:,.1f} GiB of memory. "
            "Choose a smaller n_target: the default 'mean' keeps about the "
            f"number of rows ({_num_rows(X):,} here); an int sets the rows of "
            "every (group, class) subgroup."
        )

    def _noised_columns(self, X):
        """Mask of the columns that get noise, and those columns as floats."""
        n_features = X.shape[1]
        if (
            self.sensitive is None
            and not isinstance(self.categorical_features, str)
            and is_plain_float_matrix(X)
        ):
            fixed = self._fixed_noised_columns(X)
            if fixed is not None:
                return fixed
        names = _column_names(X)
        kinds = np.array(_column_kinds(X))
        copied = np.zeros(n_features, dtype=bool)
        if self.sensitive is not None:
            copied[column_positions(X, self.sensitive, "sensitive")] = True
        auto = isinstance(self.categorical_features, str)
        if auto:
            copied |= np.isin(kinds, ["categorical", "integer"])
        else:
            copied[
                column_positions(X, self.categorical_features, "categorical_features")
            ] = True
        not_numeric = ~copied & np.isin(kinds, ["categorical", "other"])
        if not_numeric.any():
            raise ValueError(
                f"X column {names[np.flatnonzero(not_numeric)[0]]!r} is not "
                "numeric, so it cannot be noised; list it in categorical_features "
                "to copy it from the seed row."
            )
        # One float copy of the candidate columns serves every check and the noise.
        candidates = np.flatnonzero(~copied)
        block = _float_block(X, candidates) if candidates.size else None
        if block is not None:
            finite = np.isfinite(block).all(axis=0)
            if not finite.all():
                raise ValueError(
                    f"X column {names[candidates[~finite][0]]!r} has NaN or "
                    "infinity; FairnessAwareROSE needs finite values."
                )
            if auto:
                binary = ((block == 0.0) | (block == 1.0)).all(axis=0)
                copied[candidates[binary]] = True
                if binary.any():
                    block = block[:, ~binary] if not binary.all() else None
        copied_columns = np.flatnonzero(copied)
        if not is_frame(X) and X.dtype.kind == "f":
            missing = np.isnan(X[:, copied_columns]).any(axis=0)
        elif not is_frame(X) and X.dtype.kind in "biu":
            missing = np.zeros(copied_columns.size, dtype=bool)
        elif is_frame(X):
            # One isna over the copied columns instead of one per column.
            missing = X.iloc[:, copied_columns].isna().any(axis=0).to_numpy(bool)
        else:
            missing = np.array([_has_missing(X, j) for j in copied_columns], dtype=bool)
        if missing.any():
            raise ValueError(
                f"X column {names[copied_columns[missing][0]]!r} has missing values "
                "(NaN); FairnessAwareROSE needs complete data. Impute first."
            )
        return ~copied, block

    def _fixed_noised_columns(self, X):
        """``_noised_columns`` for a float ndarray and a boolean mask of copies.

        The case of a federation's minibatches (see :meth:`noised_columns`):
        every column is numeric, so the answer is the mask itself once the
        values are checked; None when they fail (the general path then names
        the column).
        """
        copied = np.asarray(self.categorical_features)
        if copied.dtype != bool or copied.shape != (X.shape[1],):
            return None
        # Checked even under sklearn's assume_finite, as the general path
        # does: a NaN here would spread into every synthetic row.
        if not np.isfinite(X).all():
            return None
        noised = ~copied
        block = X[:, noised].astype(np.float64, copy=False) if noised.any() else None
        return noised, block

    def _normalise_key(self, key, n_attributes, param_name, valid):
        """Accept (group, class) keys with a bare group value for one attribute."""
        if not (isinstance(key, tuple) and len(key) == 2):
            if n_attributes == 0:
                key = ((), key)
            else:
                raise ValueError(
                    f"{param_name} keys must be (group, class) pairs; got {key!r}. "
                    f"Subgroups present: {sorted(valid, key=repr)}."
                )
        group, klass = key
        if not isinstance(group, tuple):
            group = (group,)
        if (group, klass) not in valid:
            raise ValueError(
                f"{param_name} names subgroup {key!r}, which is not in the data. "
                f"Subgroups present: {sorted(valid, key=repr)}."
            )
        return group, klass

    def _targets(self, before, n_attributes, counts, n_labels):
        """Target of every subgroup of ``before`` (its present cells of counts)."""
        n_target = self.n_target
        if callable(n_target) and not isinstance(n_target, Mapping):
            n_target = n_target(dict(before))
            if not isinstance(n_target, (Mapping, numbers.Integral)) or (
                isinstance(n_target, numbers.Integral) and n_target < 1
            ):
                raise ValueError(
                    "n_target as a callable must return an int >= 1 or a dict of "
                    f"subgroup sizes; it returned {n_target!r}."
                )
        if isinstance(n_target, Mapping):
            targets = dict(before)
            for key, value in n_target.items():
                key = self._normalise_key(key, n_attributes, "n_target", before)
                if not isinstance(value, numbers.Integral) or value < 1:
                    raise ValueError(
                        f"n_target for subgroup {key!r} must be an int >= 1; got "
                        f"{value!r}."
                    )
                targets[key] = int(value)
            return targets
        present = counts > 0  # the cells of before, in its order
        value = _subgroup_targets(n_target, counts[None], present[None], n_labels)
        value = np.broadcast_to(value, counts[None].shape)[0, present].tolist()
        return dict(zip(before, value, strict=True))

    def _shrinkages(self, keys, before, targets, n_attributes):
        if not isinstance(self.shrinkage, Mapping):
            return dict.fromkeys(keys, float(self.shrinkage))
        given = {}
        for key, value in self.shrinkage.items():
            key = self._normalise_key(key, n_attributes, "shrinkage", before)
            if not isinstance(value, numbers.Real) or not value >= 0:
                raise ValueError(
                    f"shrinkage for subgroup {key!r} must be a number >= 0; got "
                    f"{value!r}."
                )
            given[key] = float(value)
        missing = [k for k in keys if before[k] < targets[k] and k not in given]
        if missing:
            raise ValueError(
                "shrinkage needs a factor for every subgroup that receives "
                f"synthetic rows; missing: {missing}."
            )
        return {k: given.get(k, 0.0) for k in keys}

    def _explicit_covariance(self, n_noised):
        if isinstance(self.covariance, str):
            return None
        sigma = np.asarray(self.covariance, dtype=np.float64)
        if sigma.shape != (n_noised, n_noised):
            raise ValueError(
                f"covariance as a matrix must be ({n_noised}, {n_noised}), one row "
                f"and column per noised column; got shape {sigma.shape}."
            )
        if not np.all(np.isfinite(sigma)) or not np.allclose(sigma, sigma.T):
            raise ValueError("covariance must be a finite symmetric matrix.")
        return self._matrix_square_root(sigma, "covariance")

    @staticmethod
    def _matrix_square_root(sigma, name):
        """A factor L with L @ L.T == sigma, for PSD (also singular) sigma."""
        eigenvalues, eigenvectors = np.linalg.eigh(sigma)
        tolerance = 1e-10 * max(1.0, float(np.abs(eigenvalues).max(initial=0.0)))
        if eigenvalues.min(initial=0.0) < -tolerance:
            raise ValueError(f"{name} must be positive semi-definite.")
        return eigenvectors * np.sqrt(np.clip(eigenvalues, 0.0, None))

    def _noise(self, random_state, X_group, n_new, scale, explicit_factor):
        n_noised = X_group.shape[1]
        if explicit_factor is not None:
            return random_state.standard_normal((n_new, n_noised)) @ explicit_factor.T
        if self.covariance == "full":
            # On columns divided by their largest absolute value, then scaled
            # back: squares of values near 1e200 would overflow.
            unit = _column_units(X_group)
            centred = (X_group - X_group.mean(axis=0)) / unit
            covariance = centred.T @ centred / X_group.shape[0]
            factor = self._matrix_square_root(covariance, "the subgroup covariance")
            draws = random_state.standard_normal((n_new, n_noised))
            return scale * (draws @ factor.T) * unit
        with np.errstate(over="ignore", invalid="ignore"):
            std = np.std(X_group, axis=0)
        if not np.all(np.isfinite(std)):
            # Squares overflowed (values near 1e155 or more): the same
            # standard deviation, computed on unit-scaled columns.
            unit = _column_units(X_group)
            std = np.std(X_group / unit, axis=0) * unit
        return _diagonal_noise(random_state, n_new, scale, std)


class _ArrayOutput:
    """Resampled ndarray, filled in place: original rows, then synthetic rows."""

    def __init__(self, X, noised_columns, n_kept, n_synthetic):
        self.X = X
        self.noised_columns = noised_columns
        self.all_noised = noised_columns.size == X.shape[1]
        dtype = X.dtype
        if noised_columns.size and dtype.kind != "f":
            dtype = np.dtype(np.float64)
        self.n_kept = n_kept
        self.array = np.empty((n_kept + n_synthetic, X.shape[1]), dtype=dtype)

    def _take(self, rows, out):
        if self.X.dtype == out.dtype:
            np.take(self.X, rows, axis=0, out=out)
        else:
            out[...] = self.X[rows]

    def add_synthetic(self, offset, seed_rows, noise):
        start = self.n_kept + offset
        block = self.array[start : start + seed_rows.size]
        self._take(seed_rows, block)
        if noise is None:
            return
        columns = slice(None) if self.all_noised else self.noised_columns
        # Seed plus noise in float64 (the noise's dtype), checked against the
        # output dtype's range before it is stored.
        with np.errstate(over="ignore", invalid="ignore"):
            values = block[:, columns] + noise
        _check_in_range(
            values,
            np.finfo(block.dtype).max,
            [f"x{j}" for j in np.arange(self.X.shape[1])[columns]],
        )
        block[:, columns] = values

    def finish(self, kept, sample_indices):
        self._take(kept, self.array[: self.n_kept])
        return self.array


class _FrameOutput:
    """Resampled DataFrame: rows taken once, noise added to the noised columns."""

    def __init__(self, X, noised_columns, n_kept, n_synthetic):
        self.X = X
        self.noised_columns = noised_columns
        self.n_kept = n_kept
        self.noise = (
            np.empty((n_synthetic, noised_columns.size))
            if noised_columns.size
            else None
        )

    def add_synthetic(self, offset, seed_rows, noise):
        if noise is not None:
            self.noise[offset : offset + seed_rows.size] = noise

    def finish(self, kept, sample_indices):
        X, columns = self.X, self.noised_columns
        X_res = X.iloc[sample_indices].reset_index(drop=True)
        if self.noise is None or self.noise.shape[0] == 0:
            return X_res
        block = _float_block(X_res, columns, copy=True)
        with np.errstate(over="ignore", invalid="ignore"):
            block[self.n_kept :] += self.noise
        # Float columns keep their dtype (float32's range is smaller); noised
        # integer columns become float64.
        limits = np.array([_output_limit(X.dtypes.iloc[j]) for j in columns])
        _check_in_range(
            block[self.n_kept :], limits, [str(X.columns[j]) for j in columns]
        )
        for position, j in enumerate(columns):
            dtype = X.dtypes.iloc[j]
            subtype = dtype.subtype if isinstance(dtype, pd.SparseDtype) else dtype
            values = block[:, position]
            # Float columns keep their dtype; noised integer columns become float64.
            if pd.api.types.is_float_dtype(subtype):
                values = pd.Series(values, dtype=subtype).astype(dtype)
            X_res[X.columns[j]] = values
        return X_res
