"""The Adult census data, split into 5 clients, shipped with the package."""

from __future__ import annotations

import csv
import gzip
import io
from functools import lru_cache
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

from .._compat import validate_params

__all__ = ["load_adult"]

_SPLITS = ("train", "val", "test")
_SENSITIVE = ["race", "gender"]
_TARGET = "income.new"
# Columns never returned as predictors: the sensitive attributes, the target
# and its raw text, and the bookkeeping columns added when packing.
_NOT_PREDICTORS = {*_SENSITIVE, _TARGET, "income", "split", "client"}
_PAPER_PREDICTORS = ["workclass", "education", "marital.status"]


def _require_pandas():
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is in every test env
        raise ImportError(
            "load_adult(as_frame=True) returns pandas DataFrames; install pandas "
            "with `pip install skfedida[pandas]`, or pass as_frame=False for "
            "numpy arrays."
        ) from exc
    return pd


@lru_cache(maxsize=1)
def _read_packaged():
    pd = _require_pandas()
    source = resources.files("skfedida.datasets") / "data" / "adult_c5.csv.gz"
    with resources.as_file(source) as path:
        return pd.read_csv(path, compression="gzip")


@lru_cache(maxsize=1)
def _read_packaged_arrays():
    """The packaged table as numpy columns, read without pandas.

    Integer columns become int64 arrays, the others object arrays of str.
    """
    source = resources.files("skfedida.datasets") / "data" / "adult_c5.csv.gz"
    with source.open("rb") as raw, gzip.open(raw) as unzipped:
        rows = list(csv.reader(io.TextIOWrapper(unzipped, encoding="utf-8")))
    header, rows = rows[0], rows[1:]
    columns = {}
    for j, name in enumerate(header):
        values = [row[j] for row in rows]
        try:
            columns[name] = np.array([int(v) for v in values], dtype=np.int64)
        except ValueError:
            columns[name] = np.array(values, dtype=object)
    return columns


def _one_hot(columns, names):
    """Dummy columns as pandas.get_dummies writes them (sorted categories)."""
    blocks, feature_names = [], []
    for name in names:
        categories = sorted(set(columns[name].tolist()))
        blocks.append(
            (columns[name][:, None] == np.array(categories, dtype=object)).astype(
                np.float64
            )
        )
        feature_names += [f"{name}_{category}" for category in categories]
    return np.hstack(blocks), feature_names


def _load_arrays(split, raw):
    columns = _read_packaged_arrays()
    if split == "all":
        rows = np.ones(len(columns["split"]), dtype=bool)
    else:
        rows = columns["split"] == split
    if raw:
        feature_names = [c for c in columns if c not in _NOT_PREDICTORS]
        data = np.empty((int(rows.sum()), len(feature_names)), dtype=object)
        for j, name in enumerate(feature_names):
            data[:, j] = columns[name][rows]
    else:
        encoded, feature_names = _one_hot(columns, _PAPER_PREDICTORS)
        data = encoded[rows]
    return Bunch(
        data=data,
        target=columns[_TARGET][rows].astype(np.int64),
        sensitive={name: columns[name][rows] for name in _SENSITIVE},
        clients=columns["client"][rows],
        feature_names=feature_names,
        DESCR=_descr(),
    )


@lru_cache(maxsize=1)
def _descr():
    return (resources.files("skfedida.datasets") / "descr" / "adult.rst").read_text(
        encoding="utf-8"
    )


@validate_params(
    {
        # Checked by the function, which lists the splits and refuses any raw
        # that is not a bool.
        "split": [str],
        "raw": "no_validation",
        "as_frame": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_adult(split="train", *, raw=False, as_frame=True):
    """Load the Adult census data split into 5 clients (the FedIDA paper's split).

    The data ship inside the package, so this works offline. Read more in
    the dataset description (``DESCR``).

    Parameters
    ----------
    split : {"train", "val", "test", "all"}, default="train"
        Which split of every client to return; ``"all"`` returns the 45,222
        rows of all three splits.
    raw : bool, default=False
        If False, ``data`` holds the paper's predictors (workclass, education,
        marital status) one-hot encoded into a numeric DataFrame with the same
        columns for every split. If True, ``data`` holds every original
        non-sensitive predictor, unencoded.
    as_frame : bool, default=True
        If True, pandas objects (needs pandas: ``skfedida[pandas]``). If
        False, numpy arrays, read without pandas: ``data`` a float64 array
        (an object array of ints and strings with ``raw=True``), ``target``
        and ``clients`` int64 arrays, ``sensitive`` a dict of object arrays
        (``race``, ``gender``), which every skfedida function accepts.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the fields:

        data : DataFrame of shape (n_samples, n_features)
            Predictors; race and gender are never among them.
        target : Series of shape (n_samples,)
            1 when income is above 50K, else 0.
        sensitive : DataFrame of shape (n_samples, 2)
            Columns ``race`` and ``gender``.
        clients : Series of shape (n_samples,)
            Client id of every row, 1 to 5.
        feature_names : list of str
            Columns of ``data``.
        DESCR : str
            Description of the data set, with its origin and licence.

    Examples
    --------
    >>> from skfedida.datasets import load_adult
    >>> adult = load_adult("train")
    >>> adult.data.shape
    (27130, 30)
    >>> adult.clients.value_counts().sort_index().tolist()
    [2712, 4069, 5426, 6783, 8140]
    >>> list(adult.sensitive.columns)
    ['race', 'gender']
    >>> load_adult("train", as_frame=False).data.shape
    (27130, 30)
    """
    if split not in (*_SPLITS, "all"):
        raise ValueError(f"split must be one of {[*_SPLITS, 'all']}; got {split!r}.")
    if not isinstance(raw, bool):
        raise ValueError(f"raw must be a bool; got {raw!r}.")
    if not as_frame:
        return _load_arrays(split, raw)
    pd = _require_pandas()
    frame = _read_packaged()
    if raw:
        predictors = frame[[c for c in frame.columns if c not in _NOT_PREDICTORS]]
    else:
        # Encoding the whole frame fixes the categories, hence the columns,
        # whatever the split.
        predictors = pd.get_dummies(
            frame[_PAPER_PREDICTORS], prefix_sep="_", dtype="float64"
        )
    rows = slice(None) if split == "all" else (frame["split"] == split).to_numpy()
    data = predictors.loc[rows].reset_index(drop=True)
    selected = frame.loc[rows].reset_index(drop=True)
    return Bunch(
        data=data,
        target=selected[_TARGET].astype("int64").rename("income"),
        sensitive=selected[_SENSITIVE].copy(),
        clients=selected["client"].astype("int64"),
        feature_names=list(data.columns),
        DESCR=_descr(),
    )
