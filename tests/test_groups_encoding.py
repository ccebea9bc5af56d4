"""The fast encodings of string columns give exactly the reference encoding.

The reference is the encoding skfedida used before the fast paths (issue 34),
copied here: a per-value check of the kinds, then ``pd.factorize(column,
sort=True)`` with pandas, or ``np.unique`` without it. Codes, uniques (values
and types), labels and every error message must be the same.
"""

import numbers

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import skfedida._groups as groups_module
from skfedida._groups import check_sensitive_features, encode_groups

# -- the reference: the encoding before issue 34, copied ----------------------


def _reference_kind(value_type):
    if issubclass(value_type, (bool, np.bool_)):
        return "boolean"
    if issubclass(value_type, numbers.Number):
        return "number"
    if issubclass(value_type, str):
        return "string"
    return value_type.__name__


def _reference_missing(values):
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind == "O":
        return np.equal(values, None) | (values != values)
    return np.zeros(values.shape, dtype=bool)


def _reference_check_one_kind(values, what, use_pandas):
    values = np.asarray(values)
    if values.dtype.kind != "O":
        return
    values = values.ravel()
    present = ~pd.isna(values) if use_pandas else ~_reference_missing(values)
    kinds = sorted({_reference_kind(t) for t in set(map(type, values[present]))})
    if len(kinds) > 1:
        raise ValueError(
            f"{what} mixes values of different kinds ({', '.join(kinds)}), which "
            "would silently merge (True and 1) or split (1 and '1') groups; "
            "give every value the same type."
        )


def _reference_factorize(column, name, use_pandas=True):
    param_name = "sensitive_features"
    _reference_check_one_kind(column, f"{param_name} column {name!r}", use_pandas)
    if use_pandas:
        try:
            codes, uniques = pd.factorize(column, sort=True, use_na_sentinel=True)
        except TypeError as exc:
            raise ValueError(
                f"{param_name} column {name!r} mixes values that cannot be "
                f"compared ({exc}); give each attribute values of one type."
            ) from exc
        return np.asarray(codes, dtype=np.intp), np.asarray(uniques).tolist()
    array = np.asarray(column)
    missing = _reference_missing(array)
    try:
        uniques, codes = np.unique(array[~missing], return_inverse=True)
    except TypeError as exc:
        raise ValueError(
            f"{param_name} column {name!r} mixes values that cannot be "
            f"compared ({exc}); give each attribute values of one type."
        ) from exc
    full_codes = np.full(array.shape, -1, dtype=np.intp)
    full_codes[~missing] = codes.ravel()
    return full_codes, uniques.tolist()


def _reference_check(columns, use_pandas=True):
    """The reference's (codes, uniques) per column of a dict of columns."""
    all_codes, all_uniques = [], []
    for name, column in columns.items():
        if not isinstance(column, pd.Series):
            column = np.asarray(column)
        codes, uniques = _reference_factorize(column, name, use_pandas)
        n_missing = int(np.count_nonzero(codes < 0))
        if n_missing:
            first = int(np.flatnonzero(codes < 0)[0])
            raise ValueError(
                f"sensitive_features column {name!r} has {n_missing} missing "
                f"value(s) (first at row position {first}); sensitive attributes "
                "must be complete. Impute them or drop those rows before fitting."
            )
        all_codes.append(codes)
        all_uniques.append(uniques)
    return all_codes, all_uniques


def _outcome(function):
    """What a call gives: its result, or the type and text of its error."""
    try:
        return "ok", function()
    except (TypeError, ValueError) as exc:
        return "error", (type(exc), str(exc))


def _assert_same_as_reference(columns, use_pandas=True):
    kind, got = _outcome(lambda: check_sensitive_features(columns))
    ref_kind, expected = _outcome(lambda: _reference_check(columns, use_pandas))
    assert kind == ref_kind, (got, expected)
    if kind == "error":
        assert got == expected
        return
    codes, uniques, names = got
    assert names == list(columns)
    for ours, theirs in zip(codes, expected[0], strict=True):
        assert ours.dtype == np.intp
        np.testing.assert_array_equal(ours, theirs)
    assert uniques == expected[1]
    # Same values of the same types: 1 and 1.0 or str and np.str_ are equal.
    assert [list(map(type, u)) for u in uniques] == [
        list(map(type, u)) for u in expected[1]
    ]


# -- the string forms a user may hold -------------------------------------------


def _forms(values):
    """One column of str values as every form skfedida reads strings in."""
    values = list(values)
    return {
        "object array": np.array(values, dtype=object),
        "object series": pd.Series(values, dtype=object),
        "str series": pd.Series(values, dtype="str"),
        "string series": pd.Series(values, dtype="string"),
        "category": pd.Series(values, dtype="category"),
        "numpy <U": np.array(values, dtype=str),
        "list": values,
    }


_TRICKY = [
    "b",
    "B",
    "a",
    "A",
    "",
    " a",
    "a ",
    "abcdefghij1",
    "abcdefghij2",
    "abcdefgh",
    "é",
    "Zoë",
    "日本",
    "😀",
    "a\x00b",
]


@pytest.mark.parametrize("form", list(_forms(["x"])))
@pytest.mark.parametrize(
    "values",
    [
        ["White", "Black", "White", "Asian", "Black"] * 3,
        ["b", "B", "a", "A", "b", "a"],
        _TRICKY + _TRICKY[::-1],
        ["only"] * 5,
        ["ab", "abcdefghijklmnopq", "abcdefghijklmnopr", "ab"],
        ["<30", "30-45", ">60", "45-60"],
    ],
    ids=["groups", "mixed-case", "tricky", "one-value", "long", "bands"],
)
def test_every_string_form_encodes_as_the_reference(form, values):
    column = _forms(values)[form]
    _assert_same_as_reference({"race": column})
    groups = encode_groups({"race": column})
    uniques, inverse = np.unique(np.array(values, dtype=object), return_inverse=True)
    np.testing.assert_array_equal(groups.codes, inverse)
    assert groups.labels == tuple((value,) for value in uniques.tolist())


def test_bytes_columns_encode_as_the_reference():
    values = [b"b", b"a", b"\xff", b"abcdefghij", b"", b"a"]
    _assert_same_as_reference({"s": np.array(values)})
    _assert_same_as_reference({"s": np.array(values, dtype=object)})


def test_categories_keep_their_order_and_drop_the_unused():
    for ordered in (False, True):
        column = pd.Series(
            pd.Categorical(
                ["old", "young", "old", "mid"],
                categories=["young", "unused", "old", "mid"],
                ordered=ordered,
            )
        )
        _assert_same_as_reference({"band": column})
        groups = encode_groups({"band": column})
        assert groups.labels == (("young",), ("old",), ("mid",))
        np.testing.assert_array_equal(groups.codes, [1, 0, 1, 2])
    numbers_ = pd.Series(pd.Categorical([3, 1, 3], categories=[3, 2, 1]))
    _assert_same_as_reference({"site": numbers_})


def test_a_two_dimensional_string_array_encodes_as_the_reference():
    rng = np.random.default_rng(0)
    race = rng.choice(["White", "Black", "Asian"], size=300)
    sex = rng.choice(["Female", "Male"], size=300)
    array = np.column_stack([race, sex])
    expected = encode_groups(pd.DataFrame({"a": race, "b": sex}))
    groups = encode_groups(array)
    np.testing.assert_array_equal(groups.codes, expected.codes)
    assert groups.labels == expected.labels
    _assert_same_as_reference({"a": array[:, 0], "b": array[:, 1]})


def test_strings_and_integer_codes_of_the_same_groups_give_the_same_codes():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(
        {
            "race": rng.choice(["White", "Black", "Asian", "Other"], size=2000),
            "sex": rng.choice(["Female", "Male"], size=2000),
        }
    )
    integer = frame.apply(lambda column: column.factorize(sort=True)[0])
    for form in ("str", object, "string", "category"):
        groups = encode_groups(frame.astype(form))
        np.testing.assert_array_equal(groups.codes, encode_groups(integer).codes)
        assert groups.labels == encode_groups(frame).labels


@pytest.mark.parametrize(
    "column",
    [
        np.array(["a", None, "b", None], dtype=object),
        np.array(["a", "b", np.nan], dtype=object),
        pd.Series(["a", None, "b"], dtype=object),
        pd.Series(["a", None, "b"], dtype="str"),
        pd.Series(["a", pd.NA, "b"], dtype="string"),
        pd.Series(["a", None, "b"], dtype="category"),
        np.array([None, None], dtype=object),
    ],
    ids=["none", "nan", "series-none", "str", "string", "category", "all-none"],
)
def test_missing_values_are_refused_as_before(column):
    with pytest.raises(ValueError, match=r"'race' has \d missing value"):
        check_sensitive_features({"race": column})
    _assert_same_as_reference({"race": column})


@pytest.mark.parametrize(
    "values",
    [
        [1, "1", 1],
        [True, 1, 0],
        ["a", b"a"],
        ["a", 1.5, None],
        ["a", ["a"]],
        [["a"], ["b"]],
        [("a", 1), ("b", 2), ("a", 1)],
        ["a", np.str_("a"), "b"],
        [np.str_("b"), np.str_("a")],
        [1j, 2j],
        [b"b", b"a", None],
    ],
    ids=[
        "int-str",
        "bool-int",
        "str-bytes",
        "str-float",
        "str-list",
        "lists",
        "tuples",
        "str-np-str",
        "np-str",
        "complex",
        "bytes-none",
    ],
)
@pytest.mark.parametrize("container", ["array", "series", "category"])
def test_mixed_and_unusual_objects_are_treated_as_before(values, container):
    array = np.empty(len(values), dtype=object)
    array[:] = values
    if container == "array":
        column = array
    else:
        try:
            column = pd.Series(array, dtype=object)
            if container == "category":
                column = column.astype("category")
        except TypeError:  # unhashable values make no categories
            pytest.skip("pandas cannot make this column")
    _assert_same_as_reference({"race": column})


@pytest.mark.parametrize(
    "values",
    [
        ["b", "a", "b", "c"],
        ["a", np.str_("a"), "B"],
        ["b", None, "a"],
        ["b", np.nan, "a"],
        [1, "1"],
        ["a", ["a"]],
        ["x"] * 3,
    ],
)
def test_without_pandas_object_strings_encode_as_the_reference(monkeypatch, values):
    array = np.empty(len(values), dtype=object)
    array[:] = values
    monkeypatch.setattr(groups_module, "pd", None)
    _assert_same_as_reference({"race": array}, use_pandas=False)
    _assert_same_as_reference({"race": np.array(["b", "a", "é", "b"])}, False)


def test_empty_columns_encode_as_the_reference():
    for column in (np.array([], dtype=str), np.array([], dtype=object)):
        _assert_same_as_reference({"race": column})


def test_high_cardinality_columns_encode_as_the_reference():
    rng = np.random.default_rng(2)
    values = [f"id{k}" for k in rng.integers(0, 5000, size=20000)]
    for column in (np.array(values, dtype=object), np.array(values)):
        _assert_same_as_reference({"race": column})


# -- random columns --------------------------------------------------------------

_PIECES = st.sampled_from(["a", "A", "b", "é", "日", " ", "z9", "abcdefghi"])


@settings(max_examples=40, deadline=None)
@given(
    common=st.lists(st.lists(_PIECES, max_size=3).map("".join), min_size=1, max_size=4),
    rare=st.lists(st.lists(_PIECES, max_size=4).map("".join), max_size=2),
    size=st.integers(1, 60),
    seed=st.integers(0, 2**32 - 1),
    form=st.sampled_from(list(_forms(["x"]))),
)
def test_random_string_columns_encode_as_the_reference(common, rare, size, seed, form):
    rng = np.random.default_rng(seed)
    values = [common[k] for k in rng.integers(0, len(common), size=size)]
    for value in rare:  # values of one row, at random places
        values.insert(int(rng.integers(0, len(values) + 1)), value)
    column = _forms(values)[form]
    other = _forms(values[::-1])[form]
    _assert_same_as_reference({"race": column, "sex": other})
    groups = encode_groups({"race": column, "sex": other})
    pairs = list(zip(values, values[::-1], strict=True))
    assert groups.labels == tuple(sorted(set(pairs)))
    assert [groups.labels[code] for code in groups.codes] == pairs
