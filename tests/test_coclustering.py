# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""coclustering_matrix: a NumPy reference, its properties, rows=, the memory guard."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from rankmix import DPGaussianClustering
from rankmix.metrics import MAX_COCLUSTERING_BYTES, coclustering_matrix


def reference(label_samples):
    """The definition: the mean over draws of [c_i == c_j], one draw at a time."""
    label_samples = np.asarray(label_samples)
    total = np.zeros((label_samples.shape[1],) * 2)
    for draw in label_samples:
        total += draw[:, None] == draw[None, :]
    return total / len(label_samples)


def random_draws(rng, n_draws, n_samples, n_labels, dtype=np.int64):
    return rng.integers(0, n_labels, size=(n_draws, n_samples)).astype(dtype)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16])
@pytest.mark.parametrize("n_labels", [1, 3, 40])
def test_matches_numpy_reference(dtype, n_labels):
    rng = np.random.default_rng(n_labels)
    draws = random_draws(rng, 30, 25, n_labels, dtype)
    assert_allclose(coclustering_matrix(draws), reference(draws), rtol=0, atol=1e-15)


def test_repeated_draws_are_weighted_by_their_multiplicity():
    # identical draws (and draws equal up to a renaming) are counted once with
    # their multiplicity: the result must still be the plain mean over draws
    rng = np.random.default_rng(0)
    distinct = random_draws(rng, 4, 12, 3)
    picks = rng.integers(0, 4, size=50)
    draws = distinct[picks]
    renamed = draws.copy()
    renamed[::2] = 2 - renamed[::2]  # a renaming of the labels 0, 1, 2
    assert_allclose(coclustering_matrix(renamed), reference(draws), atol=1e-15)


def test_properties():
    rng = np.random.default_rng(1)
    draws = random_draws(rng, 20, 30, 5)
    matrix = coclustering_matrix(draws)
    assert matrix.shape == (30, 30)
    assert matrix.dtype == np.float64
    assert_array_equal(matrix, matrix.T)
    assert_array_equal(np.diag(matrix), 1.0)
    assert matrix.min() >= 0.0 and matrix.max() <= 1.0
    # every entry is a multiple of 1 / n_draws
    assert_allclose(matrix * 20, np.round(matrix * 20), atol=1e-12)


def test_invariant_to_relabelling_within_each_draw():
    rng = np.random.default_rng(2)
    draws = random_draws(rng, 15, 20, 6)
    relabelled = np.empty_like(draws)
    for s, draw in enumerate(draws):
        # a different injective renaming per draw, with huge label values
        names = rng.choice(10**12, size=6, replace=False)
        relabelled[s] = names[draw]
    assert_allclose(coclustering_matrix(relabelled), coclustering_matrix(draws))


def test_extremes():
    # all in one cluster in every draw: all ones; all apart: the identity
    assert_array_equal(coclustering_matrix(np.zeros((3, 5), dtype=int)), 1.0)
    apart = np.tile(np.arange(5), (3, 1))
    assert_array_equal(coclustering_matrix(apart), np.eye(5))


def test_rows_select_and_order_a_subset():
    rng = np.random.default_rng(3)
    draws = random_draws(rng, 10, 40, 4)
    full = coclustering_matrix(draws)
    rows = np.array([7, 3, 3, 39, 0])
    assert_allclose(coclustering_matrix(draws, rows=rows), full[np.ix_(rows, rows)])
    mask = np.zeros(40, dtype=bool)
    mask[[1, 5, 20]] = True
    assert_allclose(
        coclustering_matrix(draws, rows=mask), full[np.ix_([1, 5, 20], [1, 5, 20])]
    )
    assert coclustering_matrix(draws, rows=[]).shape == (0, 0)


def test_memory_guard_points_to_rows():
    n_too_many = int(np.sqrt(MAX_COCLUSTERING_BYTES / 8)) + 1
    draws = np.zeros((1, n_too_many), dtype=np.int8)
    with pytest.raises(ValueError, match=r"8 \* n\*\*2 bytes.*pass rows="):
        coclustering_matrix(draws)
    # the same draws with a subset are fine
    assert coclustering_matrix(draws, rows=[0, n_too_many - 1]).shape == (2, 2)


@pytest.mark.parametrize(
    "label_samples, rows, match",
    [
        (np.zeros(4, dtype=int), None, "2-D array"),
        (np.zeros((0, 4), dtype=int), None, "at least one draw"),
        (np.zeros((2, 4)), None, "integer labels"),
        (-np.ones((2, 4), dtype=int), None, "non-negative"),
        (np.zeros((2, 4), dtype=int), [0, 4], r"rows\[1\] = 4 is out of range"),
        (np.zeros((2, 4), dtype=int), [-1], r"rows\[0\] = -1"),
        (np.zeros((2, 4), dtype=int), [True, False], "one entry per sample"),
        (np.zeros((2, 4), dtype=int), [0.5], "integer indices or booleans"),
        (np.zeros((2, 4), dtype=int), [[0]], "1-D array"),
    ],
)
def test_bad_arguments_are_refused(label_samples, rows, match):
    with pytest.raises(ValueError, match=match):
        coclustering_matrix(label_samples, rows=rows)


def test_estimator_method_is_the_function_on_its_draws():
    X = np.r_[np.zeros((6, 2)), np.full((6, 2), 5.0)]
    X += np.random.default_rng(0).normal(scale=0.3, size=X.shape)
    model = DPGaussianClustering(n_iter=40, burn_in=10, n_chains=2, random_state=0)
    model.fit(X)
    assert_allclose(
        model.coclustering_matrix(), coclustering_matrix(model.label_samples_)
    )
    assert_allclose(
        model.coclustering_matrix(rows=[3, 8]),
        reference(model.label_samples_[:, [3, 8]]),
    )
    with pytest.raises(Exception, match="not fitted"):
        DPGaussianClustering().coclustering_matrix()
