"""JSON for the statistics rounds: queries, answers and fitted states, no pickle.

What a client answers (counts, sums, categories) and what the server sends
back (a transformer's fitted state) travel as JSON text, so that neither side
unpickles what the other sent (unpickling runs code). Numbers round-trip
exactly (Python writes the shortest repr of a float, a Decimal its text);
numpy arrays keep their dtype and shape, object arrays their strings, None
and NaN; arrays of
records of numbers (a tree's histograms and nodes) travel as their bytes,
read back with ``frombuffer``; the only object
a state may hold is scikit-learn's MissingIndicator (SimpleImputer's
``indicator_``), rebuilt from its parameters and fitted attributes.
"""

from __future__ import annotations

import base64
import contextvars
import datetime
import decimal
import itertools
import json

import numpy as np
from sklearn.impute import MissingIndicator

__all__ = ["decode", "encode"]

#: Objects a state may hold, rebuilt from parameters and attributes.
_ESTIMATORS = {"MissingIndicator": MissingIndicator}
#: Dates and times (categories of a date column), by their ISO text.
_TIMES = (datetime.datetime, datetime.date, datetime.time)


def _time_from(kind, iso):
    if kind == "Timestamp":
        import pandas as pd

        return pd.Timestamp(iso)
    return {
        "datetime": datetime.datetime,
        "date": datetime.date,
        "time": datetime.time,
    }[kind].fromisoformat(iso)


def _plain(value):
    if isinstance(value, np.generic) and value.dtype.kind in "Mm":
        return {"__scalar__": value.dtype.str, "ticks": int(value.view(np.int64))}
    if isinstance(value, np.generic):
        return {"__scalar__": value.dtype.str, "value": value.item()}
    if isinstance(value, np.ndarray) and value.dtype.names is not None:
        return _records(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "Mm":
        return {
            "__array__": value.dtype.str,
            "shape": list(value.shape),
            "ticks": value.view(np.int64).ravel().tolist(),
        }
    if isinstance(value, _TIMES):
        return {"__time__": type(value).__name__, "iso": value.isoformat()}
    if isinstance(value, decimal.Decimal):
        # Exactly, by its text (a float would round it): a category of an
        # amount column read from a database.
        return {"__decimal__": str(value)}
    if isinstance(value, np.ndarray):
        kind = "O" if value.dtype.kind == "O" else value.dtype.str
        data = value.ravel().tolist()
        if value.dtype.kind == "O":
            data = [_plain(item) for item in data]
        elif value.dtype.kind == "S":
            # JSON has no bytes: latin-1 maps each byte to one character and
            # back, so any byte string survives the trip.
            data = [item.decode("latin-1") for item in data]
        return {"__array__": kind, "shape": list(value.shape), "data": data}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError(f"Only string keys can be sent; got {list(value)}.")
        return {"__dict__": {key: _plain(item) for key, item in value.items()}}
    if isinstance(value, tuple):
        return {"__tuple__": [_plain(item) for item in value]}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if type(value).__name__ in _ESTIMATORS and isinstance(
        value, _ESTIMATORS[type(value).__name__]
    ):
        params = value.get_params(deep=False)
        state = {k: v for k, v in vars(value).items() if k not in params}
        return {
            "__estimator__": type(value).__name__,
            "params": _plain(params),
            "state": _plain(state),
        }
    if isinstance(value, type) and issubclass(value, np.generic):
        return {"__dtype__": np.dtype(value).str}
    if isinstance(value, np.dtype):
        return {"__dtype__": value.str}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"Cannot send a {type(value).__name__} in a statistics round.")


def _records(value):
    """A structured array of numbers (a tree's histograms or nodes) as bytes.

    Its fields' names, dtypes and offsets, then its raw bytes in base64:
    read back with ``frombuffer`` only, never unpickled; fields that are not
    fixed-size numbers are refused.
    """
    fields = []
    for name in value.dtype.names:
        dtype, offset = value.dtype.fields[name][:2]
        if dtype.kind not in "biuf" or dtype.shape:
            raise TypeError(
                f"Cannot send a record field {name!r} of dtype {dtype} in a query."
            )
        fields.append([name, dtype.str, int(offset)])
    return {
        "__records__": fields,
        "itemsize": int(value.dtype.itemsize),
        "shape": list(value.shape),
        "bytes": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode(),
    }


#: What decoding a message may allocate: this many bytes per byte of its text,
#: plus ``_BUDGET_FLOOR``. The encoder never needs more than about 4 bytes
#: per character (a unicode string), so an honest message fits; a dtype
#: naming huge items (``"S2000000000"``, ``"(8000,)<f8"``) in a few bytes of
#: JSON would make the reader allocate gigabytes, and is refused first.
_BUDGET_PER_BYTE = 64
_BUDGET_FLOOR = 1 << 20
_BUDGET = contextvars.ContextVar("skfedida_codec_budget", default=None)


def _dtype(spec, count=1):
    """The dtype a message names for ``count`` items, within the budget."""
    dtype = np.dtype(spec)
    if dtype.subdtype is not None or dtype.fields is not None:
        raise ValueError(
            f"A received array's dtype {spec!r} has sub-arrays or fields; "
            "only plain items are read."
        )
    budget = _BUDGET.get()
    size = dtype.itemsize * max(int(count), 1)
    if budget is not None:
        if size > budget[0]:
            raise ValueError(
                f"A received array of {count} items of dtype {spec!r} would take "
                f"{size} bytes, more than its message's size allows."
            )
        budget[0] -= size
    return dtype


def _from_records(value):
    fields = value["__records__"]
    itemsize = int(value["itemsize"])
    if not 0 < itemsize <= 4096:
        raise ValueError(f"A received record's itemsize {itemsize} is not read.")
    # As the encoder writes them: fixed-size numbers, side by side.
    spans = []
    for name, spec, offset in fields:
        dtype = np.dtype(spec)
        if dtype.kind not in "biuf" or dtype.shape or dtype.fields is not None:
            raise ValueError(f"A received record field {name!r} is not a number.")
        spans.append((int(offset), int(offset) + dtype.itemsize))
    spans.sort()
    if spans and (
        spans[0][0] < 0
        or spans[-1][1] > itemsize
        or any(a[1] > b[0] for a, b in itertools.pairwise(spans))
    ):
        raise ValueError("A received record's fields overlap or overrun it.")
    shape = [int(n) for n in value["shape"]]
    if any(n < 0 for n in shape):
        raise ValueError(f"A received array's shape {shape} is not read.")
    names, formats, offsets = zip(*fields, strict=True)
    dtype = np.dtype(
        {
            "names": list(names),
            "formats": list(formats),
            "offsets": list(offsets),
            "itemsize": itemsize,
        }
    )
    data = base64.b64decode(value["bytes"], validate=True)
    # The shape must account for the bytes exactly (reshape checks).
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _restore(value):
    if isinstance(value, list):
        return [_restore(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "__records__" in value:
        return _from_records(value)
    if "__scalar__" in value and "ticks" in value:
        return np.array(value["ticks"], np.int64).view(_dtype(value["__scalar__"]))[()]
    if "__scalar__" in value:
        return np.array(value["value"], dtype=_dtype(value["__scalar__"]))[()]
    if "__array__" in value and "ticks" in value:
        ticks = np.array(value["ticks"], dtype=np.int64)
        return ticks.view(np.dtype(value["__array__"])).reshape(value["shape"])
    if "__time__" in value:
        return _time_from(value["__time__"], value["iso"])
    if "__decimal__" in value:
        return decimal.Decimal(value["__decimal__"])
    if "__array__" in value:
        kind = value["__array__"]
        if kind == "O":
            array = np.empty(len(value["data"]), dtype=object)
            array[:] = [_restore(item) for item in value["data"]]
        elif _dtype(kind, len(value["data"])).kind == "S":
            array = np.array(
                [item.encode("latin-1") for item in value["data"]], dtype=kind
            )
        else:
            array = np.array(value["data"], dtype=np.dtype(kind))
        return array.reshape(value["shape"])
    if "__dict__" in value:
        return {key: _restore(item) for key, item in value["__dict__"].items()}
    if "__tuple__" in value:
        return tuple(_restore(item) for item in value["__tuple__"])
    if "__dtype__" in value:
        return np.dtype(value["__dtype__"])
    if "__estimator__" in value:
        cls = _ESTIMATORS[value["__estimator__"]]
        estimator = cls(**_restore(value["params"]))
        for name, item in _restore(value["state"]).items():
            setattr(estimator, name, item)
        return estimator
    raise ValueError(f"Unknown encoded value with keys {sorted(value)}.")


def encode(value):
    """JSON text of a query, answer or state (see the module docstring)."""
    return json.dumps(_plain(value), allow_nan=True)


def decode(text):
    """The value ``encode`` wrote (refused if it would take far more memory)."""
    token = _BUDGET.set([_BUDGET_FLOOR + _BUDGET_PER_BYTE * len(text)])
    try:
        return _restore(json.loads(text))
    finally:
        _BUDGET.reset(token)
