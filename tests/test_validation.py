# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the validation of ranking data sets."""

import re

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import sparse

from rankmix._validation import check_rankings, ranking_lengths

EXPECTED = np.array([[2, 0, 1], [1, -1, -1], [0, 2, -1]])


@pytest.mark.parametrize(
    "X",
    [
        EXPECTED,
        EXPECTED.astype(np.int8),
        EXPECTED.astype(np.int32),
        EXPECTED.astype(np.float64),
        EXPECTED.astype(np.float32),
        np.asfortranarray(EXPECTED),
        EXPECTED.astype(object),
        EXPECTED.tolist(),
        [tuple(row) for row in EXPECTED.tolist()],
        tuple(EXPECTED.tolist()),
        [[2, 0, 1], [1], [0, 2]],
        ((2, 0, 1), (1,), (0, 2)),
        [[2, 0, 1], [1, -1], [0, 2]],
        [[2.0, 0.0, 1.0], [1.0], [0.0, 2.0, -1.0]],
        [np.array([2, 0, 1]), np.array([1]), np.array([0, 2])],
        [[np.int64(2), np.int8(0), 1], [np.uint8(1)], [0, np.int32(2)]],
    ],
    ids=[
        "int64",
        "int8",
        "int32",
        "float64",
        "float32",
        "fortran",
        "object",
        "list",
        "list-of-tuples",
        "tuple-of-lists",
        "ragged-list",
        "ragged-tuple",
        "ragged-explicit-padding",
        "ragged-floats",
        "ragged-arrays",
        "numpy-scalars",
    ],
)
def test_valid_input_round_trip(X):
    X_checked = check_rankings(X)
    assert_array_equal(X_checked, EXPECTED)


def test_unsigned_input():
    X = np.array([[2, 0, 1], [1, 2, 0]], dtype=np.uint8)
    assert_array_equal(check_rankings(X, n_items=3), X.astype(np.intp))


def test_ragged_rows_all_padded_to_longest():
    X_checked = check_rankings([[0, -1], [1, 2, 3], [4]])
    assert_array_equal(X_checked, [[0, -1, -1], [1, 2, 3], [4, -1, -1]])


@pytest.mark.parametrize(
    "X",
    [
        EXPECTED,
        np.asfortranarray(EXPECTED),
        EXPECTED[:, ::-1][:, ::-1],
        EXPECTED.astype(np.float32),
        EXPECTED.tolist(),
    ],
)
def test_output_is_fresh_c_contiguous_intp(X):
    X_checked = check_rankings(X)
    assert X_checked.dtype == np.intp
    assert X_checked.flags.c_contiguous
    assert X_checked.flags.writeable
    if isinstance(X, np.ndarray):
        assert not np.shares_memory(X_checked, X)


def test_no_aliasing_of_valid_intp_input():
    X = EXPECTED.astype(np.intp, order="C")
    X_checked = check_rankings(X)
    assert X_checked is not X
    assert not np.shares_memory(X_checked, X)
    X_checked[0, 0] = 1
    assert X[0, 0] == 2


@pytest.mark.parametrize(
    "X, n_items, message",
    [
        ([[0, 1], [1, 1]], None, "Row 1 of X ranks item 1 more than once"),
        ([[0, 1, 2], [2, 0, 2]], 3, "Row 1 of X ranks item 2 more than once"),
        ([[0, 70, 70]], None, "Row 0 of X ranks item 70 more than once"),
        ([[0, 1], [0, -3]], None, "Row 1 of X holds item -3: item ids must be non"),
        ([[0, -1, 2]], None, "Row 0 of X has -1 padding in the middle"),
        ([[0, 1], [-1, 0]], None, "Row 1 of X has -1 padding in the middle"),
        ([[0, 1], [-1, -1]], None, "Row 1 of X holds no item"),
        ([[0, 1], []], None, "Row 1 of X holds no item"),
        (
            [[0.0, 1.0], [2.0, np.nan]],
            None,
            r"Row 1 of X holds a non-finite value \(nan\)",
        ),
        ([[0.0, np.inf]], None, r"Row 0 of X holds a non-finite value \(inf\)"),
        (
            [[0.0, 1.0], [1.5, 0.0]],
            None,
            "Row 1 of X holds 1.5, which is not an integer",
        ),
        (
            [[0, 1], [2, 3], [1, 2], [3, 0], [12, 1]],
            10,
            re.escape(
                "Row 4 of X holds item 12, but n_items=10: item ids must lie in "
                "[0, 10)."
            ),
        ),
        ([[0.0, 1.0], [10.0, 1.0]], 10, re.escape("Row 1 of X holds item 10, but")),
        ([[0, 1, 2, 3]], 3, "Row 0 of X holds item 3, but n_items=3"),
        ([[0, 2**62]], None, "Row 0 of X holds item 4611686018427387904, larger"),
        ([[0, 2**31]], None, "Row 0 of X holds item 2147483648, larger"),
        ([[0, 2**70]], None, "Row 0 of X holds item 1180591620717411303424, larger"),
        ([[0, 1, 2, 0]], 3, "Row 0 of X ranks 4 items, but n_items=3"),
    ],
)
def test_malformed_row_names_row_and_fault(X, n_items, message):
    with pytest.raises(ValueError, match=message):
        check_rankings(X, n_items=n_items)


def test_duplicate_message_names_positions():
    msg = re.escape(
        "Row 0 of X ranks item 3 more than once (at positions 1 and 3): the items "
        "of a ranking must be distinct."
    )
    with pytest.raises(ValueError, match=msg):
        check_rankings([[0, 3, 1, 3]])


def test_middle_padding_message_names_positions():
    msg = re.escape("position 1 is -1 but position 2 holds item 4.")
    with pytest.raises(ValueError, match=msg):
        check_rankings([[0, -1, 4]])


@pytest.mark.parametrize("dtype", [np.int64, np.uint64, np.float64])
def test_huge_ids_do_not_overflow(dtype):
    X = np.array([[0, 1], [np.iinfo(np.int64).max, 2]]).astype(dtype)
    with pytest.raises(ValueError, match="Row 1 of X holds item .*, larger than"):
        check_rankings(X)


def test_largest_supported_id_is_accepted():
    X_checked = check_rankings([[2**31 - 1, 0]])
    assert_array_equal(X_checked, [[2**31 - 1, 0]])


def test_first_bad_row_is_reported():
    # Row 2 holds a duplicate, row 4 a NaN: the first bad row wins, whatever the
    # kind of its fault.
    X = [[0.0, 1.0], [1.0, 0.0], [2.0, 2.0], [0.0, 2.0], [np.nan, 1.0], [-3.0, 1.0]]
    with pytest.raises(ValueError, match="^Row 2 of X ranks item 2 more than once"):
        check_rankings(X)


def test_first_bad_row_is_reported_in_large_input():
    rng = np.random.default_rng(0)
    X = np.argsort(rng.random((100_000, 10)), axis=1)
    X[90_000, 3] = -5
    X[70_001, 4] = X[70_001, 2]
    X[80_000, 9] = 10
    with pytest.raises(ValueError, match="^Row 70001 of X ranks item"):
        check_rankings(X)
    with pytest.raises(ValueError, match="^Row 70001 of X ranks item"):
        check_rankings(X, n_items=10)


def test_large_random_input_is_validated():
    rng = np.random.default_rng(0)
    n_rankings, t_max, n_items = 100_000, 10, 15
    X = np.argsort(rng.random((n_rankings, n_items)), axis=1)[:, :t_max]
    lengths = rng.integers(1, t_max + 1, size=n_rankings)
    X[np.arange(t_max) >= lengths[:, np.newaxis]] = -1

    X_checked = check_rankings(X, n_items=n_items)
    assert_array_equal(X_checked, X)
    assert_array_equal(ranking_lengths(X_checked), lengths)
    assert_array_equal(check_rankings(X.astype(np.float64)), X)

    X[-1, 1] = X[-1, 0]
    with pytest.raises(ValueError, match=f"^Row {n_rankings - 1} of X ranks item"):
        check_rankings(X)


@pytest.mark.parametrize("offset", [0, 100])
def test_duplicate_detection_with_few_and_many_items(offset):
    # Ids below 63 and ids above it go through different duplicate detections.
    rng = np.random.default_rng(0)
    X = np.argsort(rng.random((2_000, 8)), axis=1) + offset
    X[:, -2:][rng.random((2_000, 2)) < 0.5] = -1
    X[:, -1][X[:, -2] == -1] = -1
    assert_array_equal(check_rankings(X), X)
    for row, column in [(1_500, 1), (700, 7), (3, 5)]:
        X_bad = X.copy()
        X_bad[row] = np.arange(8) + offset
        X_bad[row, column] = offset
        msg = f"^Row {row} of X ranks item {offset} more than once"
        with pytest.raises(ValueError, match=msg):
            check_rankings(X_bad)


def test_input_name_is_used_in_messages():
    with pytest.raises(ValueError, match="Row 0 of X_test holds no item"):
        check_rankings([[-1]], input_name="X_test")
    with pytest.raises(TypeError, match="X_test has boolean dtype"):
        check_rankings(np.ones((2, 2), dtype=bool), input_name="X_test")


@pytest.mark.parametrize(
    "X, message",
    [
        (np.ones((2, 2), dtype=bool), "X has boolean dtype"),
        ([[True, False]], "X has boolean dtype"),
        (np.ones((2, 2), dtype=complex), "X has complex dtype"),
        ([[1 + 2j, 0]], "X has complex dtype"),
        ([["a", "b"]], "X holds strings"),
        ([["1", 2]], "X holds strings"),
        (np.array([[1, 2]], dtype="datetime64[D]"), "not numeric"),
        ([[0, None]], "Row 0 of X holds None, a missing value"),
        (np.array([[0, 1], [2, "1"]], dtype=object), "Row 1 of X holds '1' of type"),
        (np.array([[0, 1], [True, 2]], dtype=object), "Row 1 of X holds True of type"),
        ([[0, 1], [2, None, 3]], "Row 1 of X holds None"),
        ([[0, 1], [2, "x", 3]], "X holds strings"),
        (object(), "X holds <object .*> of type object, which is not a number"),
    ],
)
def test_non_numeric_input_raises_type_error(X, message):
    with pytest.raises(TypeError, match=message):
        check_rankings(X)


@pytest.mark.parametrize(
    "make", [sparse.csr_matrix, sparse.csc_matrix, sparse.coo_array]
)
def test_sparse_input_is_rejected(make):
    with pytest.raises(TypeError, match="Sparse input is not supported"):
        check_rankings(make(np.array([[1, 0], [0, 1]])))


def test_1d_input_suggests_reshape():
    msg = "Expected a 2-D array of rankings for X, got a 1-D array of shape"
    with pytest.raises(ValueError, match=msg) as excinfo:
        check_rankings(np.array([2, 0, 1]))
    assert "X.reshape(1, -1)" in str(excinfo.value)
    with pytest.raises(ValueError, match=re.escape("X.reshape(1, -1)")):
        check_rankings([2, 0, 1])


@pytest.mark.parametrize(
    "X, message",
    [
        (5, "got a scalar"),
        (np.zeros((2, 2, 2), dtype=int), "got a 3-D array of shape"),
        ([[[0, 1]], [[1, 0]]], "got a 3-D array of shape"),
        ([[0, 1], [[1, 0], [2]]], "nested sequences"),
        ([[0, 1], 3], "Row 1 of X is not a sequence of item ids"),
        ([[0, 1], "ab"], "Row 1 of X is not a sequence of item ids"),
        ([[0, 1], {2}], "Row 1 of X is not a sequence of item ids"),
    ],
)
def test_bad_shape_raises_value_error(X, message):
    with pytest.raises(ValueError, match=message):
        check_rankings(X)


@pytest.mark.parametrize(
    "X, message",
    [
        ([], "X is empty: it holds 0 rankings"),
        (np.empty((0, 3), dtype=int), re.escape("X is empty: it holds 0 rankings")),
        (
            np.empty((3, 0), dtype=int),
            re.escape("X is empty: it has 0 feature(s) (shape=(3, 0))"),
        ),
        ([[], []], re.escape("X is empty: it has 0 feature(s) (shape=(2, 0))")),
    ],
)
def test_empty_input_raises_value_error(X, message):
    with pytest.raises(ValueError, match=message):
        check_rankings(X)


def test_ensure_min_samples():
    msg = re.escape(
        "X holds 2 rankings (shape=(2, 2)), while a minimum of 3 is required "
        "(ensure_min_samples=3)."
    )
    with pytest.raises(ValueError, match=msg):
        check_rankings([[0, 1], [1, 0]], ensure_min_samples=3)
    with pytest.raises(ValueError, match="ensure_min_samples=1"):
        check_rankings(np.empty((0, 2), dtype=int))
    assert check_rankings([[0, 1], [1, 0]], ensure_min_samples=2).shape == (2, 2)


@pytest.mark.parametrize(
    "ensure_min_samples, error", [(0, ValueError), (-1, ValueError), (1.5, TypeError)]
)
def test_invalid_ensure_min_samples(ensure_min_samples, error):
    with pytest.raises(error, match="ensure_min_samples must be a positive integer"):
        check_rankings([[0]], ensure_min_samples=ensure_min_samples)


@pytest.mark.parametrize(
    "n_items, error, message",
    [
        (0, ValueError, "n_items must be a positive integer, got 0"),
        (-2, ValueError, "n_items must be a positive integer, got -2"),
        (2.0, TypeError, "n_items must be a positive integer or None"),
        ("3", TypeError, "n_items must be a positive integer or None"),
        (True, TypeError, "n_items must be a positive integer or None"),
        (2**40, ValueError, "exceeds the largest supported number of items"),
    ],
)
def test_invalid_n_items(n_items, error, message):
    with pytest.raises(error, match=message):
        check_rankings([[0]], n_items=n_items)


def test_n_items_accepts_numpy_integer():
    assert_array_equal(check_rankings([[1, 0]], n_items=np.int64(2)), [[1, 0]])


def test_n_items_bound_is_exclusive():
    assert_array_equal(check_rankings([[4, 0]], n_items=5), [[4, 0]])
    with pytest.raises(ValueError, match="Row 0 of X holds item 5, but n_items=5"):
        check_rankings([[5, 0]], n_items=5)


def test_padded_array_may_be_wider_than_n_items():
    # t_max > n_items is fine as long as no row holds more than n_items items.
    X = [[0, 1, -1, -1], [1, -1, -1, -1]]
    assert_array_equal(check_rankings(X, n_items=2), X)


def test_every_returned_id_is_padding_or_in_range():
    rng = np.random.default_rng(1)
    for _ in range(300):
        X = rng.integers(-2, 6, size=(rng.integers(1, 4), rng.integers(1, 5)))
        n_items = rng.choice([3, 5])
        try:
            X_checked = check_rankings(X, n_items=n_items)
        except ValueError:
            continue
        for row in X_checked:
            items = row[row != -1]
            assert len(items) >= 1
            assert_array_equal(row[: len(items)], items)
            assert np.all((items >= 0) & (items < n_items))
            assert len(np.unique(items)) == len(items)


def test_pandas_dataframe():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(EXPECTED, columns=["first", "second", "third"])
    assert_array_equal(check_rankings(df), EXPECTED)


def test_one_dimensional_containers_of_rankings_read_as_their_rows():
    # a pandas Series of lists, an object array of arrays: the rankings of a
    # list of them (a newcomer's ragged data was refused as "not a number")
    rows = [[0, -1], [1, 2, 3], [4]]
    expected = check_rankings(rows)
    ragged = np.empty(3, dtype=object)
    ragged[:] = [np.array(row) for row in rows]
    assert_array_equal(check_rankings(ragged), expected)
    pd = pytest.importorskip("pandas")
    assert_array_equal(check_rankings(pd.Series(rows)), expected)
    assert_array_equal(check_rankings(pd.Series(map(tuple, rows))), expected)
    # a missing row is named as in a list
    with pytest.raises(ValueError, match="Row 1 of X is not a sequence"):
        check_rankings(pd.Series([[0, 1], None, [2]]))


@pytest.mark.parametrize("missing", [None, "pandas"])
def test_missing_values_are_named_as_such(missing):
    if missing == "pandas":
        pd = pytest.importorskip("pandas")
        X = pd.DataFrame([[0, 1, 2], [1, 0, None]]).astype("Int64")
    else:
        X = [[0, 1, 2], [1, 0, None]]
    with pytest.raises(TypeError, match="Row 1 of X holds .*a missing value.*with -1"):
        check_rankings(X)


def test_ranking_lengths():
    lengths = ranking_lengths(check_rankings([[2, 0, 1], [1], [0, 2]]))
    assert_array_equal(lengths, [3, 1, 2])
    assert lengths.dtype == np.intp
    with pytest.raises(ValueError, match="Expected a 2-D array"):
        ranking_lengths(np.array([0, 1]))
