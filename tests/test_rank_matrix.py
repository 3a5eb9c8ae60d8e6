"""Conversions between rank matrices (BayesMallows, PLMIX) and orderings."""

import itertools

import numpy as np
import pytest

from rankmix.preprocessing import orderings_to_ranks, ranks_to_orderings


def _reference_ranks(orderings, n_items):
    """Rank matrix of -1 padded orderings, one item at a time."""
    ranks = np.full((len(orderings), n_items), np.nan)
    for i, row in enumerate(orderings):
        for position, item in enumerate(row):
            if item >= 0:
                ranks[i, item] = position + 1
    return ranks


def test_every_top_t_ranking_of_four_items_round_trips():
    n = 4
    rows = [
        list(p) + [-1] * (n - t)
        for t in range(1, n + 1)
        for p in itertools.permutations(range(n), t)
    ]
    X = np.array(rows)
    ranks = orderings_to_ranks(X, n_items=n)
    np.testing.assert_array_equal(ranks, _reference_ranks(X, n))
    np.testing.assert_array_equal(ranks_to_orderings(ranks), X)
    # PLMIX's convention: 0 for unranked items, an integer result.
    zeros = orderings_to_ranks(X, n_items=n, missing=0)
    assert zeros.dtype.kind == "i"
    np.testing.assert_array_equal(zeros, np.nan_to_num(ranks, nan=0))
    np.testing.assert_array_equal(ranks_to_orderings(zeros, missing=0), X)


def test_a_full_rank_matrix_is_the_inverse_permutation():
    rng = np.random.default_rng(0)
    X = np.array([rng.permutation(7) for _ in range(20)])
    ranks = orderings_to_ranks(X)
    np.testing.assert_array_equal(ranks - 1, np.argsort(X, axis=1))
    assert ranks_to_orderings(ranks).dtype == np.intp


def test_float_ranks_and_lists_are_accepted():
    assert ranks_to_orderings([[2.0, 1.0, np.nan]]).tolist() == [[1, 0]]
    assert ranks_to_orderings([[3, 1, 2]]).tolist() == [[1, 2, 0]]


def test_n_items_defaults_to_the_largest_id_plus_one():
    assert orderings_to_ranks([[2, 0]]).shape == (1, 3)
    assert orderings_to_ranks([[2, 0]], n_items=5).shape == (1, 5)


@pytest.mark.parametrize(
    "ranks, match",
    [
        ([[1, 1, 2]], r"Row 0 of ranks gives the rank 1 to items \[0, 1\]: ties"),
        ([[np.nan, np.nan]], "Row 0 of ranks ranks no item"),
        ([[1, 2], [1.5, np.nan]], "Row 1 of ranks holds 1.5, which is not an integer"),
        ([[1, 2], [0, 1]], "Row 1 of ranks holds the rank 0: ranks start at 1"),
        ([[1, np.inf]], "Row 0 of ranks holds inf"),
        ([[1, 4, 2]], "lacks the rank 3"),
    ],
)
def test_malformed_rank_rows_are_refused_by_row(ranks, match):
    with pytest.raises(ValueError, match=match):
        ranks_to_orderings(ranks)


def test_nan_with_an_integer_missing_marker_is_refused():
    with pytest.raises(ValueError, match="Row 1 of ranks holds NaN, but missing=0"):
        ranks_to_orderings([[1, 0], [np.nan, 1]], missing=0)


@pytest.mark.parametrize("missing", [1, 2.5, "NA", None, True, False, np.False_])
def test_missing_must_be_nan_or_an_integer_below_one(missing):
    with pytest.raises(ValueError, match="missing must be NaN or an integer below 1"):
        ranks_to_orderings([[1, 2]], missing=missing)


def test_bad_shapes_and_types_are_refused():
    with pytest.raises(ValueError, match="non-empty 2-D"):
        ranks_to_orderings([1, 2, 3])
    with pytest.raises(ValueError, match="non-empty 2-D"):
        ranks_to_orderings(np.empty((0, 3)))
    with pytest.raises(TypeError):
        ranks_to_orderings([["a", "b"]])
    with pytest.raises(ValueError, match="more than once"):
        orderings_to_ranks([[0, 0]])


def test_the_orderings_fit_a_ranking_model():
    from rankmix import DPMallowsClustering

    ranks = np.array([[1, 2, 3, 4], [2, 1, 3, 4], [1, 2, np.nan, np.nan]] * 5)
    X = ranks_to_orderings(ranks)
    model = DPMallowsClustering(
        n_items=4, n_iter=20, burn_in=10, n_chains=1, random_state=0
    )
    assert model.fit(X).labels_.shape == (15,)


def test_orderings_to_ranks_names_n_items_when_memory_runs_out(monkeypatch):
    # a (n_judges, n_items) table: NumPy's MemoryError named no argument
    def full(shape, *args, **kwargs):
        raise MemoryError(f"Unable to allocate an array with shape {shape}")

    monkeypatch.setattr(np, "full", full)
    with pytest.raises(ValueError, match="n_items=2147483648 asks for more memory"):
        orderings_to_ranks([[0, 1], [1, 0]], n_items=2**31)
