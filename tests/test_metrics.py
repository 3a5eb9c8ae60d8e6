# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import pickle
from itertools import product

import numpy as np
import pytest
from scipy.stats import entropy
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import mutual_info_score
from sklearn.model_selection import GridSearchCV, cross_val_score

from rankmix.metrics import _clustering, variation_of_information, vi_scorer


def naive_vi(labels_true, labels_pred):
    """Textbook H(U) + H(V) - 2 I(U, V) over a dense contingency table."""
    labels_true = list(labels_true)
    labels_pred = list(labels_pred)
    n = len(labels_true)
    if n == 0:
        return 0.0
    cells = {}
    for u, v in zip(labels_true, labels_pred):
        cells[u, v] = cells.get((u, v), 0) + 1
    rows = list(dict.fromkeys(labels_true))
    cols = list(dict.fromkeys(labels_pred))
    table = [[cells.get((u, v), 0) for v in cols] for u in rows]
    a = [sum(row) for row in table]
    b = [sum(table[i][j] for i in range(len(rows))) for j in range(len(cols))]
    h_u = -sum(x / n * math.log(x / n) for x in a)
    h_v = -sum(x / n * math.log(x / n) for x in b)
    mi = 0.0
    for i in range(len(rows)):
        for j in range(len(cols)):
            n_ij = table[i][j]
            if n_ij:
                mi += n_ij / n * math.log(n * n_ij / (a[i] * b[j]))
    return h_u + h_v - 2 * mi


def object_array(values):
    """1-D object array, even when the values are tuples."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


@pytest.fixture(params=["dense", "sort"])
def code_path(request, monkeypatch):
    """Run a test through the bincount paths and through the sort paths."""
    if request.param == "sort":
        # With no dense budget, integer labels are factorised by np.unique
        # and the contingency cells are found by sorting the joint codes.
        monkeypatch.setattr(_clustering, "_DENSE_SPAN_FACTOR", 0)
        monkeypatch.setattr(_clustering, "_MIN_DENSE_SPAN", 0)
    return request.param


@pytest.mark.parametrize(
    "n_samples, n_true, n_pred",
    [
        (1, 1, 1),
        (2, 2, 1),
        (10, 1, 3),
        (10, 3, 3),
        (50, 5, 50),
        (200, 7, 13),
        (200, 200, 200),
        (500, 40, 3),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_naive_on_random_integer_labels(
    code_path, n_samples, n_true, n_pred, seed
):
    rng = np.random.default_rng(seed)
    labels_true = rng.integers(0, n_true, n_samples)
    labels_pred = rng.integers(0, n_pred, n_samples)
    expected = naive_vi(labels_true.tolist(), labels_pred.tolist())
    assert variation_of_information(labels_true, labels_pred) == pytest.approx(
        expected, rel=1e-12, abs=1e-12
    )


def test_matches_naive_with_singletons(code_path):
    rng = np.random.default_rng(2)
    singletons = rng.permutation(100)
    other = rng.integers(0, 4, 100)
    assert variation_of_information(singletons, other) == pytest.approx(
        naive_vi(singletons.tolist(), other.tolist()), rel=1e-12
    )


def test_matches_naive_on_string_labels(code_path):
    rng = np.random.default_rng(3)
    words = np.array(["apple", "pear", "fig", "", "kiwi fruit", "ä"])
    labels_true = words[rng.integers(0, 6, 300)]
    labels_pred = words[rng.integers(0, 3, 300)]
    assert variation_of_information(labels_true, labels_pred) == pytest.approx(
        naive_vi(labels_true.tolist(), labels_pred.tolist()), rel=1e-12
    )


def test_matches_naive_on_mixed_object_labels(code_path):
    rng = np.random.default_rng(4)
    pool = [0, -1, "a", "0", None, (1, "x"), (1, 2), 2.5, frozenset({1})]
    values_true = [pool[k] for k in rng.integers(0, len(pool), 300)]
    values_pred = [pool[k] for k in rng.integers(0, 4, 300)]
    result = variation_of_information(
        object_array(values_true), object_array(values_pred)
    )
    assert result == pytest.approx(naive_vi(values_true, values_pred), rel=1e-12)


@pytest.mark.parametrize(
    "dtype, values",
    [
        (np.int8, [-128, 127, -1, 0]),
        (np.int64, [np.iinfo(np.int64).min, np.iinfo(np.int64).max, -1, 0]),
        (np.uint64, [0, np.iinfo(np.uint64).max, 2**63, 1]),
        (np.uint8, [0, 255, 7, 8]),
        (bool, [True, False, True, True]),
        (np.float64, [-1.0, 0.0, 1e300, 3.0]),
    ],
)
def test_matches_naive_on_extreme_label_values(code_path, dtype, values):
    rng = np.random.default_rng(5)
    pool = np.array(values, dtype=dtype)
    labels_true = pool[rng.integers(0, len(pool), 200)]
    labels_pred = rng.integers(-1, 2, 200)  # -1 as a noise label
    assert variation_of_information(labels_true, labels_pred) == pytest.approx(
        naive_vi(labels_true.tolist(), labels_pred.tolist()), rel=1e-12
    )


def test_matches_scikit_learn_with_many_clusters(code_path):
    # 2e5 samples in about 5e4 clusters each: far too many cells for a dense
    # table, so this checks the sparse route at scale.
    rng = np.random.default_rng(6)
    labels_true = rng.integers(0, 50_000, 200_000)
    labels_pred = rng.integers(-(10**12), 10**12, 50_000)[
        rng.integers(0, 50_000, 200_000)
    ]

    def h(labels):
        return entropy(np.unique(labels, return_counts=True)[1])

    expected = (
        h(labels_true)
        + h(labels_pred)
        - 2 * mutual_info_score(labels_true, labels_pred)
    )
    assert variation_of_information(labels_true, labels_pred) == pytest.approx(
        expected, rel=1e-10
    )


def test_symmetric():
    rng = np.random.default_rng(7)
    for n_samples, k in product([5, 100, 1000], [2, 10, 300]):
        u = rng.integers(0, k, n_samples)
        v = rng.integers(0, 7, n_samples)
        assert variation_of_information(u, v) == pytest.approx(
            variation_of_information(v, u), rel=1e-14
        )


def test_zero_for_relabelled_clusterings(code_path):
    rng = np.random.default_rng(8)
    labels = rng.integers(0, 20, 500)
    permuted = rng.permutation(20)[labels] * 7 - 50
    as_strings = np.array([f"cluster {k}" for k in range(20)])[labels]
    as_objects = object_array([(k, None) if k % 2 else str(k) for k in labels])
    for other in (labels, permuted, as_strings, as_objects):
        assert variation_of_information(labels, other) == 0.0


def test_positive_for_different_clusterings():
    # Moving a single sample changes the partition, so the metric is > 0.
    labels = np.repeat(np.arange(10), 100)
    moved = labels.copy()
    moved[0] = 9
    vi = variation_of_information(labels, moved)
    assert vi > 0
    assert vi == pytest.approx(naive_vi(labels.tolist(), moved.tolist()), rel=1e-9)


def test_triangle_inequality():
    rng = np.random.default_rng(9)
    for _ in range(50):
        n_samples = int(rng.integers(1, 200))
        u, v, w = (rng.integers(0, rng.integers(1, 20), n_samples) for _ in range(3))
        assert variation_of_information(u, w) <= (
            variation_of_information(u, v) + variation_of_information(v, w) + 1e-12
        )


def test_bounds():
    rng = np.random.default_rng(10)
    for _ in range(50):
        n_samples = int(rng.integers(1, 300))
        u = rng.integers(0, rng.integers(1, n_samples + 1), n_samples)
        v = rng.integers(0, rng.integers(1, n_samples + 1), n_samples)
        vi = variation_of_information(u, v)
        assert 0.0 <= vi <= math.log(n_samples) + 1e-12


@pytest.mark.parametrize("n_samples", [1, 2, 17, 1000])
def test_one_cluster_against_singletons_is_log_n(n_samples):
    vi = variation_of_information(np.zeros(n_samples), np.arange(n_samples))
    assert vi == pytest.approx(math.log(n_samples), rel=1e-14, abs=0.0)


def test_against_one_cluster_is_entropy():
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 9, 400)
    expected = entropy(np.bincount(labels))
    assert variation_of_information(labels, np.zeros_like(labels)) == pytest.approx(
        expected, rel=1e-13
    )


@pytest.mark.parametrize("n_clusters, n_parts", [(1, 2), (3, 2), (5, 4)])
def test_refining_each_cluster_into_equal_parts_costs_log_parts(n_clusters, n_parts):
    coarse = np.repeat(np.arange(n_clusters), 12)
    fine = coarse * n_parts + np.tile(np.arange(12) % n_parts, n_clusters)
    assert variation_of_information(coarse, fine) == pytest.approx(
        math.log(n_parts), rel=1e-14
    )


def test_independent_clusterings_add_entropies():
    # Rows and columns of a 4 x 6 grid: I(U, V) = 0, so VI = log 4 + log 6.
    cells = np.arange(24)
    assert variation_of_information(cells % 4, cells // 4) == pytest.approx(
        math.log(4) + math.log(6), rel=1e-14
    )


def test_empty_labelings_give_zero():
    assert variation_of_information([], []) == 0.0


def test_returns_python_float():
    assert type(variation_of_information([0, 1, 1], [1, 1, 0])) is float
    assert type(variation_of_information([0, 0], [1, 1])) is float


def test_different_lengths_raise():
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        variation_of_information([0, 1, 1], [0, 1])


@pytest.mark.parametrize("argument", ["labels_true", "labels_pred"])
def test_two_dimensional_labels_raise(argument):
    labels = {"labels_true": [0, 1, 1, 0], "labels_pred": [1, 0, 0, 1]}
    labels[argument] = np.array(labels[argument]).reshape(2, 2)
    with pytest.raises(ValueError, match=f"{argument} must be 1D"):
        variation_of_information(**labels)


def test_nan_labels_raise():
    with pytest.raises(ValueError, match="NaN"):
        variation_of_information([0.0, np.nan], [0, 1])


def test_non_array_like_raises():
    with pytest.raises(ValueError, match="labels_true"):
        variation_of_information("abc", [0, 1, 2])


def test_unhashable_labels_raise():
    with pytest.raises(TypeError, match="hashable"):
        variation_of_information(object_array([[1], [2]]), [0, 1])


def test_continuous_labels_warn():
    with pytest.warns(UserWarning, match="expects discrete values"):
        variation_of_information([0.5, 1.5, 2.5], [0, 0, 1])


@pytest.fixture(scope="module")
def blobs():
    return make_blobs(n_samples=150, centers=3, cluster_std=0.5, random_state=0)


def test_scorer_returns_minus_vi(blobs):
    X, y = blobs
    estimator = KMeans(n_clusters=4, n_init=3, random_state=0).fit(X)
    expected = variation_of_information(y, estimator.predict(X))
    assert expected > 0
    assert vi_scorer(estimator, X, y) == pytest.approx(-expected, rel=1e-14)


def test_scorer_in_cross_val_score(blobs):
    X, y = blobs
    scores = cross_val_score(
        KMeans(n_clusters=3, n_init=3, random_state=0), X, y, scoring=vi_scorer
    )
    assert scores.shape == (5,)
    assert np.all(scores <= 0.0)
    # Well separated blobs: the clusters are recovered almost exactly.
    assert scores.mean() > -0.1


def test_scorer_in_grid_search_picks_true_number_of_clusters(blobs):
    X, y = blobs
    search = GridSearchCV(
        KMeans(n_init=3, random_state=0),
        {"n_clusters": [2, 3, 4, 6]},
        scoring=vi_scorer,
        cv=3,
    ).fit(X, y)
    assert search.best_params_ == {"n_clusters": 3}
    assert search.best_score_ <= 0.0


def test_scorer_survives_pickling(blobs):
    # Parallel model selection (n_jobs > 1) ships the scorer to workers.
    X, y = blobs
    estimator = KMeans(n_clusters=3, n_init=3, random_state=0).fit(X)
    restored = pickle.loads(pickle.dumps(vi_scorer))
    assert restored(estimator, X, y) == vi_scorer(estimator, X, y)
