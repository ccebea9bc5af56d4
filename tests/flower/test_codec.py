"""_codec.py: the JSON of the statistics rounds, called directly.

test_guard_flower.py checks one value of every dtype and the refusal of
non-string dict keys; here nested structures, exact floats (NaN, infinity,
-0.0, the int64 extremes), dates and durations, the one estimator a state
may hold, and what the codec refuses to send or to rebuild.
"""

import datetime
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.impute import MissingIndicator
from sklearn.preprocessing import StandardScaler

pytest.importorskip("flwr")

from skfedida._codec import decode, encode


def _same(a, b):
    """Equal values of the same type, arrays with the same dtype and shape."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        if a.dtype.kind == "O":
            for x, y in zip(a.ravel().tolist(), b.ravel().tolist(), strict=True):
                _same(x, y)
        else:
            np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, float) and a != a:
        assert b != b
    else:
        assert a == b


def test_nested_containers_come_back_with_their_types():
    value = {
        "queries": [({"j": 0, "lo": np.int64(-3)}, [np.arange(3)]), ()],
        "inner": {"deeper": {"tuple": (1, (2.5, None), "x")}},
        "empty": {"list": [], "dict": {}, "array": np.empty((0, 3))},
        "objects": np.array([[{"k": [1, 2]}, ("t", 1)]], dtype=object),
    }
    _same(decode(encode(value)), value)


def test_a_dict_with_the_codecs_own_tag_keys_is_just_a_dict():
    # A user's dict whose keys look like the codec's tags must not be read
    # back as an array, a dtype or an estimator.
    value = {"__array__": "<f8", "shape": [1], "data": [1.0], "__dtype__": "x"}
    _same(decode(encode(value)), value)


def test_floats_come_back_to_the_last_bit():
    value = np.array([np.nan, np.inf, -np.inf, -0.0, 5e-324, 0.1, 1e308])
    back = decode(encode(value))
    assert back.tobytes() == value.tobytes()
    for scalar in (float("nan"), float("-inf"), -0.0, 0.1 + 0.2):
        got = decode(encode(scalar))
        assert type(got) is float
        assert np.array([got]).tobytes() == np.array([scalar]).tobytes()


@settings(max_examples=40, deadline=None)
@given(
    hnp.arrays(
        st.sampled_from([np.float64, np.float32, np.int64, np.uint8, np.int32]),
        hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
    )
)
def test_any_numeric_array_comes_back_exactly(array):
    back = decode(encode(array))
    assert back.dtype == array.dtype and back.shape == array.shape
    # Every value, NaN where NaN was (JSON has one NaN: neither its sign nor
    # its payload bits are kept), and the sign of every zero.
    np.testing.assert_array_equal(back, array)
    number = ~np.isnan(array)
    np.testing.assert_array_equal(np.signbit(back)[number], np.signbit(array)[number])


def test_the_int64_extremes_are_exact():
    value = np.array([2**63 - 1, -(2**63)], dtype=np.int64)
    assert decode(encode(value)).tolist() == value.tolist()
    assert decode(encode(np.uint64(2**64 - 1))) == np.uint64(2**64 - 1)


@pytest.mark.parametrize(
    "value",
    [
        np.datetime64("2020-02-29T10:11:12.123456789", "ns"),
        np.datetime64("NaT"),
        np.timedelta64(-5, "ms"),
        np.array([1, 2, -3], dtype="timedelta64[s]").reshape(3, 1),
        datetime.datetime(2021, 3, 4, 5, 6, 7, 8),
        datetime.date(1999, 12, 31),
        datetime.time(23, 59, 1),
        pd.Timestamp("2024-01-02 03:04:05.000006"),
    ],
    ids=lambda v: type(v).__name__,
)
def test_dates_and_durations_come_back_exactly(value):
    back = decode(encode(value))
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and back.shape == value.shape
        np.testing.assert_array_equal(back, value)
    elif isinstance(value, np.generic):
        assert back.dtype == value.dtype
        assert back.view(np.int64) == value.view(np.int64)  # NaT included
    else:
        assert back == value


def test_a_dtype_given_as_a_type_is_sent_as_its_dtype():
    assert decode(encode(np.float32)) == np.dtype("float32")
    assert decode(encode([np.dtype("<U3"), np.int16])) == [
        np.dtype("<U3"),
        np.dtype("int16"),
    ]


def test_a_missing_indicator_is_rebuilt_from_its_parameters_and_state():
    X = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, 3.0]])
    fitted = MissingIndicator(features="all", sparse=False).fit(X)
    back = decode(encode({"indicator_": fitted}))["indicator_"]
    assert type(back) is MissingIndicator
    assert repr(back.get_params()) == repr(fitted.get_params())  # NaN != NaN
    assert np.isnan(back.missing_values)
    np.testing.assert_array_equal(back.features_, fitted.features_)
    np.testing.assert_array_equal(back.transform(X), fitted.transform(X))


def test_the_text_is_plain_json():
    text = encode({"counts": np.array([1, 2]), "name": "x"})
    assert isinstance(json.loads(text), dict)


@pytest.mark.parametrize(
    "value, name",
    [
        ({1, 2}, "set"),
        (StandardScaler(), "StandardScaler"),
        (object(), "object"),
        ([1, pd.NA], "NAType"),
        (np.array([b"x", 1], dtype=object), "bytes"),
    ],
)
def test_values_it_cannot_give_back_are_refused_by_name(value, name):
    with pytest.raises(TypeError, match=f"Cannot send a {name}"):
        encode(value)


def test_a_complex_number_is_refused():
    with pytest.raises(TypeError, match="complex"):
        encode(np.array([1 + 2j]))


def test_a_bytes_array_comes_back_with_its_dtype():
    # Any byte, not only ASCII (the codec used to fail on every bytes array).
    value = np.array([b"a", b"bc", bytes([0xFF, 0x01])])
    back = decode(encode(value))
    assert back.dtype == value.dtype
    np.testing.assert_array_equal(back, value)


def test_decoding_builds_no_object_it_does_not_know():
    # The decoder rebuilds MissingIndicator and nothing else: a sender cannot
    # name any other class (it would run that class's code on the server).
    text = json.dumps(
        {"__estimator__": "Pipeline", "params": {"__dict__": {}}, "state": {}}
    )
    with pytest.raises(KeyError):
        decode(text)
    with pytest.raises(ValueError, match="Unknown encoded value with keys"):
        decode(json.dumps({"__pickle__": "gASV"}))


@pytest.mark.parametrize(
    "text, words",
    [
        ('{"__array__":"S2000000000","shape":[1],"data":["a"]}', "size allows"),
        ('{"__scalar__":"S900000000","value":"a"}', "size allows"),
        (
            '{"__array__":"<U16384","shape":[500],"data":['
            + ",".join(['""'] * 500)
            + "]}",
            "size allows",
        ),
        ('{"__array__":"(8000,)<f8","shape":[1],"data":[0]}', "sub-arrays"),
        (
            '{"__records__":[["a","<f8",0],["b","<f8",4]],"itemsize":16,'
            '"shape":[1],"bytes":"AAAAAAAAAAAAAAAAAAAAAA=="}',
            "overlap",
        ),
        (
            '{"__records__":[["a","<U2",0]],"itemsize":8,"shape":[1],'
            '"bytes":"AAAAAAAAAAA="}',
            "not a number",
        ),
        (
            '{"__records__":[["a","<f8",0]],"itemsize":8,"shape":[-1],'
            '"bytes":"AAAAAAAAAAA="}',
            "shape",
        ),
        (
            '{"__records__":[["a","<f8",0]],"itemsize":8,"shape":[2],'
            '"bytes":"AAAAAAAAAAA="}',
            "cannot reshape",
        ),
    ],
)
def test_a_hostile_message_allocates_nothing_large_and_is_refused(text, words):
    with pytest.raises(ValueError, match=words):
        decode(text)


def test_records_of_numbers_travel_as_their_bytes():
    from skfedida._compat import HISTOGRAM_DTYPE

    histograms = np.zeros((3, 4), HISTOGRAM_DTYPE)
    histograms["sum_gradients"] = np.arange(12.0).reshape(3, 4) / 7
    histograms["count"] = 5
    back = decode(encode(histograms))
    assert back.dtype == HISTOGRAM_DTYPE
    assert back.tobytes() == histograms.tobytes()


def test_long_strings_and_many_values_still_travel():
    # The allocation budget scales with the message: honest values fit.
    values = {
        "category": np.array(["x" * 20000, "y"]),
        "label": np.str_("z" * 17000),
        "many": np.arange(200_000, dtype=np.float64),
        "bytes": np.array([b"a" * 70000]),
    }
    back = decode(encode(values))
    for key, value in values.items():
        np.testing.assert_array_equal(back[key], value)
