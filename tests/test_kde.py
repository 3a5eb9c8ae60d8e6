# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""MallowsKernelDensity: the closed-form kernel and the density against brute force
over the cosets, normalisation for every length, exact sampling, model selection,
input validation."""

import itertools
import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold

from rankmix import MallowsKernelDensity, _kde_kernels
from rankmix import _kde as kde_module
from rankmix.datasets import make_mallows_mixture

# -- a plain reference: enumerate the completions, sum full Mallows probabilities --


def kendall(a, b):
    """Kendall distance between two full rankings (best first)."""
    position = np.empty(len(b), dtype=int)
    position[list(b)] = np.arange(len(b))
    p = position[list(a)]
    return sum(p[i] > p[j] for i in range(len(p)) for j in range(i + 1, len(p)))


def completions(ranking, n_items):
    """The coset of a top-t ranking: every full ranking that starts with it."""
    ranking = tuple(int(i) for i in ranking if i >= 0)
    rest = [i for i in range(n_items) if i not in ranking]
    return [ranking + tail for tail in itertools.permutations(rest)]


def brute_kernel(query, data, n_items, theta):
    """(1/|S_data|) sum over both cosets of the full Mallows probabilities."""
    identity = tuple(range(n_items))
    log_z = np.log(
        sum(
            np.exp(-theta * kendall(p, identity))
            for p in itertools.permutations(identity)
        )
    )
    centres = completions(data, n_items)
    total = sum(
        np.exp(-theta * kendall(tau, sigma) - log_z)
        for tau in completions(query, n_items)
        for sigma in centres
    )
    return total / len(centres)


def brute_density(queries, X, n_items, theta):
    return np.array(
        [np.mean([brute_kernel(q, x, n_items, theta) for x in X]) for q in queries]
    )


def top_t_rankings(n_items, t):
    return np.array(list(itertools.permutations(range(n_items), t)), dtype=np.intp)


def random_rankings(rng, n_rankings, n_items, min_length=1):
    """Rankings of random lengths in min_length..n_items, padded to n_items."""
    X = np.full((n_rankings, n_items), -1, dtype=np.intp)
    for row in X:
        t = rng.integers(min_length, n_items + 1)
        row[:t] = rng.permutation(n_items)[:t]
    return X


# Mixed lengths on purpose: the data rankings' lengths differ from the queries'.
TRAIN_4 = [[0, 1, 2, 3], [0, 2, 1], [1, 0], [3], [2, 3, 0]]


# -- the compiled kernel -----------------------------------------------------------


@pytest.mark.parametrize("n_items", [4, 5])
@pytest.mark.parametrize("theta", [0.05, 0.7, 3.0])
def test_compiled_kernel_equals_brute_force_on_random_pairs(n_items, theta):
    rng = np.random.default_rng(n_items)
    Q = random_rankings(rng, 30, n_items)
    X = random_rankings(rng, 30, n_items)
    expected = [brute_kernel(q, x, n_items, theta) for q, x in zip(Q, X)]
    got = _kde_kernels.log_kernel_pairs(Q, X, n_items, theta)
    assert_allclose(np.exp(got), expected, rtol=1e-10)


def test_kernel_is_a_mallows_probability_for_full_data_rankings():
    # a full data ranking is its own only completion: the kernel of a full query
    # is then exp(-theta d) / Z, with Z the Mallows normaliser
    n_items, theta = 5, 0.4
    x = np.array([[3, 0, 4, 1, 2]])
    q = np.array([[0, 3, 4, 2, 1]])
    log_z = sum(
        np.log(np.sum(np.exp(-theta * np.arange(m + 1)))) for m in range(n_items)
    )
    expected = -theta * kendall(q[0], x[0]) - log_z
    assert_allclose(_kde_kernels.log_kernel_pairs(q, x, n_items, theta), [expected])


# -- the density -------------------------------------------------------------------


@pytest.mark.parametrize("n_items", [4, 5])
@pytest.mark.parametrize("bandwidth", [0.1, 1.0, 4.0])
def test_density_sums_to_one_over_the_top_t_rankings_for_every_t(n_items, bandwidth):
    rng = np.random.default_rng(0)
    X = random_rankings(rng, 7, n_items)
    kde = MallowsKernelDensity(bandwidth=bandwidth, n_items=n_items).fit(X)
    for t in range(1, n_items + 1):
        total = np.exp(kde.score_samples(top_t_rankings(n_items, t))).sum()
        assert_allclose(total, 1.0, rtol=1e-12, err_msg=f"t={t}")


def test_the_brute_force_reference_sums_to_one():
    # the reference itself is a distribution over the top-t rankings
    for t in range(1, 5):
        total = brute_density(top_t_rankings(4, t), TRAIN_4, 4, 0.9).sum()
        assert_allclose(total, 1.0, rtol=1e-12, err_msg=f"t={t}")


@pytest.mark.parametrize("n_items", [4, 5])
def test_density_equals_brute_force_over_the_cosets(n_items):
    rng = np.random.default_rng(1)
    X = random_rankings(rng, 6, n_items)
    kde = MallowsKernelDensity(bandwidth=0.8, n_items=n_items).fit(X)
    queries = np.vstack(
        [
            np.pad(
                top_t_rankings(n_items, t),
                ((0, 0), (0, n_items - t)),
                constant_values=-1,
            )
            for t in (1, 2, n_items)
        ]
    )
    queries = queries[rng.permutation(len(queries))[:40]]
    assert_allclose(
        np.exp(kde.score_samples(queries)),
        brute_density(queries, X, n_items, 0.8),
        rtol=1e-10,
    )


def test_shorter_rankings_are_marginals_of_longer_ones():
    # one distribution over full rankings: p(pi) sums p over pi's extensions
    kde = MallowsKernelDensity(bandwidth=0.6, n_items=5).fit(
        random_rankings(np.random.default_rng(2), 9, 5)
    )
    pairs = top_t_rankings(5, 2)
    triples = top_t_rankings(5, 3)
    p_triples = np.exp(kde.score_samples(triples))
    summed = [p_triples[(triples[:, :2] == pair).all(axis=1)].sum() for pair in pairs]
    assert_allclose(np.exp(kde.score_samples(pairs)), summed, rtol=1e-12)


def test_extreme_bandwidths_stay_normalised_and_reach_their_limits():
    n_items = 5
    queries = top_t_rankings(n_items, 2)
    wide = MallowsKernelDensity(bandwidth=1e-12, n_items=n_items).fit(TRAIN_4)
    # theta -> 0: uniform over the top-2 rankings
    assert_allclose(np.exp(wide.score_samples(queries)), 1 / 20, rtol=1e-9)
    narrow = MallowsKernelDensity(bandwidth=500.0, n_items=n_items).fit([[2, 4, 1]])
    log_density = narrow.score_samples(queries)
    assert np.all(np.isfinite(log_density))
    assert_allclose(np.exp(log_density).sum(), 1.0, rtol=1e-12)
    # theta -> infinity: all the mass on the training ranking's prefix
    assert_allclose(np.exp(narrow.score_samples([[2, 4]])), [1.0])


def test_score_is_the_total_log_likelihood_and_rows_are_independent():
    kde = MallowsKernelDensity(n_items=4).fit(TRAIN_4)
    X = top_t_rankings(4, 3)
    full = kde.score_samples(X)
    assert_allclose(kde.score(X), full.sum())
    order = np.random.default_rng(0).permutation(len(X))
    assert_allclose(kde.score_samples(X[order]), full[order])
    assert_allclose(kde.score_samples(X[:5]), full[:5])


# -- sampling ----------------------------------------------------------------------


@pytest.mark.parametrize("batch_entries", [2**20, 4 * 777])
@pytest.mark.parametrize("t", [2, 4])
def test_sample_follows_score_samples(t, batch_entries, monkeypatch):
    # in one batch and in batches of 777 draws
    monkeypatch.setattr(kde_module, "SAMPLE_BATCH_ENTRIES", batch_entries)
    kde = MallowsKernelDensity(bandwidth=0.7, n_items=4).fit(TRAIN_4)
    draws = kde.sample(20000, random_state=0, t=t)
    categories = top_t_rankings(4, t)
    index = {tuple(row): i for i, row in enumerate(categories)}
    observed = np.bincount([index[tuple(row)] for row in draws], minlength=len(index))
    expected = len(draws) * np.exp(kde.score_samples(categories))
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    # the same test refuses the density of another bandwidth: it can fail
    other = clone(kde).set_params(bandwidth=1.2).fit(TRAIN_4)
    wrong = len(draws) * np.exp(other.score_samples(categories))
    assert stats.chisquare(observed, wrong).pvalue < 1e-6


def test_sample_is_reproducible_and_defaults_to_the_training_width():
    kde = MallowsKernelDensity(n_items=6).fit([[0, 1, 2], [5, 4]])
    first = kde.sample(50, random_state=3)
    assert first.shape == (50, 3)
    assert_array_equal(kde.sample(50, random_state=3), first)
    assert all(len(set(row)) == 3 and row.max() < 6 for row in first)


# -- model selection and persistence -----------------------------------------------


def test_grid_search_selects_the_bandwidth_by_held_out_likelihood():
    X, _, _ = make_mallows_mixture(
        n_clusters=2, n_per_cluster=60, n_items=6, t=3, theta=1.5, random_state=0
    )
    cv = KFold(3, shuffle=True, random_state=0)
    grid = [0.01, 1.0, 100.0]
    search = GridSearchCV(MallowsKernelDensity(n_items=6), {"bandwidth": grid}, cv=cv)
    search.fit(X)
    # a near-uniform and a near-empirical kernel both lose on held-out data
    assert search.best_params_ == {"bandwidth": 1.0}
    train, test = next(cv.split(X))
    by_hand = (
        MallowsKernelDensity(bandwidth=1.0, n_items=6).fit(X[train]).score(X[test])
    )
    assert_allclose(search.cv_results_["split0_test_score"][1], by_hand)


def test_pickle_round_trip_scores_and_samples_identically():
    kde = MallowsKernelDensity(bandwidth=0.3, n_items=4).fit(TRAIN_4)
    restored = pickle.loads(pickle.dumps(kde))
    X = top_t_rankings(4, 2)
    assert_array_equal(restored.score_samples(X), kde.score_samples(X))
    assert_array_equal(
        restored.sample(7, random_state=1), kde.sample(7, random_state=1)
    )


# -- bad input ---------------------------------------------------------------------


@pytest.mark.parametrize("bandwidth", [0.0, -1.0, np.nan, np.inf, True, "1"])
def test_bad_bandwidth_is_refused_naming_it(bandwidth):
    with pytest.raises((ValueError, TypeError), match="bandwidth"):
        MallowsKernelDensity(bandwidth=bandwidth).fit(TRAIN_4)


@pytest.mark.parametrize(
    "X, message",
    [
        ([[0, 1], [2, np.nan]], "Row 1 of X holds a non-finite value"),
        ([[0, 1, 2], [1, 3, 1]], "Row 1 of X"),
        ([[0, -1, 2]], "Row 0 of X"),
        ([[0, 1], [5, 2]], "Row 1 of X holds item 5, but n_items=4"),
    ],
)
def test_bad_training_rankings_are_refused_naming_the_row(X, message):
    with pytest.raises(ValueError, match=message):
        MallowsKernelDensity(n_items=4).fit(X)


def test_an_item_beyond_n_items_at_score_time_is_refused():
    kde = MallowsKernelDensity().fit([[0, 1, 2], [2, 1]])
    with pytest.raises(ValueError, match="Row 1 of X holds item 3.*pass n_items"):
        kde.score_samples([[0, 1], [3, 0]])
    with pytest.raises(ValueError, match="n_items=5"):
        MallowsKernelDensity(n_items=5).fit([[0, 1]]).score([[5]])


def test_bad_sample_arguments_are_refused():
    kde = MallowsKernelDensity(n_items=4).fit(TRAIN_4)
    with pytest.raises(ValueError, match="t=5 exceeds"):
        kde.sample(3, t=5)
    with pytest.raises(ValueError, match="n_samples"):
        kde.sample(0)
    with pytest.raises(TypeError, match="n_samples"):
        kde.sample(2.5)
