# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The public GM functions of rankmix.mallows and the synthetic data generator."""

import itertools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

from rankmix import mallows
from rankmix.datasets import make_mallows_mixture

from . import _reference as ref


@pytest.mark.parametrize("n_items", [1, 2, 3, 4, 5])
def test_log_likelihood_sums_to_one_for_every_t(n_items):
    # GM^s is a normalised distribution over the top-t rankings, for each t
    rng = np.random.RandomState(n_items)
    sigma = rng.permutation(n_items)
    theta = rng.exponential(1.0, size=n_items)
    theta[0] = 0.0
    for t in range(1, n_items + 1):
        X = np.array(ref.all_top_t(n_items, t))
        assert_allclose(np.exp(mallows.log_likelihood(X, sigma, theta)).sum(), 1.0)


def test_log_likelihood_handles_mixed_lengths_and_lists():
    # a ragged list is scored row by row, each at its own length
    sigma = [2, 0, 1, 3]
    theta = [0.5, 1.0, 2.0, 0.1]
    X = [[0, 2], [3, 1, 0, 2], [1]]
    expected = [ref.gm_log_likelihood(x, sigma, theta) for x in X]
    assert_allclose(mallows.log_likelihood(X, sigma, theta), expected)


def test_many_centres_give_one_column_each():
    # 2-D sigma and theta: one column per centre, equal to the single-centre result
    rng = np.random.RandomState(0)
    X = ref.all_top_t(4, 2)
    sigmas = np.array([rng.permutation(4) for _ in range(3)])
    thetas = rng.exponential(size=(3, 2))
    both = mallows.log_likelihood(X, sigmas, thetas)
    codes = mallows.codes(X, sigmas)
    distances = mallows.kendall_distance(X, sigmas)
    assert both.shape == (len(X), 3) and codes.shape == (3, len(X), 2)
    for k in range(3):
        assert_allclose(both[:, k], mallows.log_likelihood(X, sigmas[k], thetas[k]))
        assert_array_equal(codes[k], mallows.codes(X, sigmas[k]))
        assert_array_equal(distances[:, k], codes[k].sum(axis=1))


@pytest.mark.parametrize("theta", [0.0, 0.4, [1.5, 0.2, 0.8]])
def test_sample_matches_pmf(theta):
    # exact draws: chi-square of the sampled top-3 rankings of 5 items against the pmf
    sigma = [3, 0, 4, 1, 2]
    theta_vec = np.broadcast_to(theta, (3,))
    table = ref.gm_pmf_table(sigma, theta_vec, 3)
    keys = list(table)
    index = {k: i for i, k in enumerate(keys)}
    X = mallows.sample(sigma, theta, n_samples=30000, t=3, random_state=0)
    counts = np.bincount([index[tuple(x)] for x in X], minlength=len(keys))
    expected = np.array([table[k] for k in keys]) * len(X)
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_sample_is_reproducible_and_valid():
    # same seed, same draws; rows are distinct items of sigma
    a = mallows.sample(np.arange(8), 0.3, 50, 4, random_state=1)
    b = mallows.sample(np.arange(8), 0.3, 50, 4, random_state=1)
    assert_array_equal(a, b)
    assert a.shape == (50, 4)
    assert all(len(set(row)) == 4 for row in a.tolist())
    assert mallows.sample(np.arange(3), 1.0, 0, 2).shape == (0, 2)


def test_large_theta_concentrates_on_sigma():
    # theta -> infinity: every draw is the top of sigma, and it has probability 1
    sigma = [4, 2, 0, 1, 3]
    X = mallows.sample(sigma, 60.0, 20, 5, random_state=0)
    assert_array_equal(X, np.tile(sigma, (20, 1)))
    assert_allclose(mallows.log_likelihood([sigma], sigma, 60.0), [0.0], atol=1e-20)


@pytest.mark.parametrize(
    "sigma, match",
    [
        ([0, 1, 1], "not a permutation"),
        ([0, 2], "not a permutation"),
        ([[0, 1], [1, 1]], "Row 1 of sigma is not a permutation"),
        ([], "non-empty"),
        ([0.5, 1], "integer"),
    ],
)
def test_bad_sigma_is_refused(sigma, match):
    with pytest.raises(ValueError, match=match):
        mallows.codes([[0]], sigma)


@pytest.mark.parametrize(
    "theta, match",
    [
        ([1.0], "has 1 stages, but the rankings need 2"),
        ([1.0, -0.5], "finite and >= 0"),
        ([1.0, np.nan], "finite and >= 0"),
        (np.ones((2, 2)), "shape"),
    ],
)
def test_bad_theta_is_refused(theta, match):
    with pytest.raises(ValueError, match=match):
        mallows.log_likelihood([[0, 1]], [0, 1, 2], theta)


def test_full_rankings_need_no_theta_for_their_last_place():
    # one item is left at the last place: code 0, normaliser 1, whatever theta
    # (the user guide's example has full rankings of 3 items and theta (1, 0.3))
    full = np.array(list(itertools.permutations(range(3))))
    short, padded = [1.0, 0.3], [1.0, 0.3, 7.0]
    log_prob = mallows.log_likelihood(full, [0, 1, 2], short)
    assert_array_equal(log_prob, mallows.log_likelihood(full, [0, 1, 2], padded))
    assert_allclose(np.exp(log_prob).sum(), 1.0, rtol=1e-12)
    assert_array_equal(
        mallows.sample([0, 1, 2], short, 20, 3, random_state=0),
        mallows.sample([0, 1, 2], padded, 20, 3, random_state=0),
    )
    assert_array_equal(
        mallows.top_k_probabilities([0, 1, 2], short, k=3),
        mallows.top_k_probabilities([0, 1, 2], padded, k=3),
    )
    X, _, _ = make_mallows_mixture(2, 5, n_items=3, t=3, theta=short, random_state=0)
    assert X.shape == (10, 3)
    # a top-2 ranking's second place is not the last: its theta is needed
    with pytest.raises(ValueError, match="need 2"):
        mallows.log_likelihood([[0, 1]], [0, 1, 2], [1.0])


def test_rankings_are_checked_against_sigma():
    # an item id beyond sigma's items is caught before compiled code runs
    with pytest.raises(ValueError, match="Row 1 of X holds item 3, but n_items=3"):
        mallows.log_likelihood([[0, 1], [3]], [0, 1, 2], 1.0)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(n_samples=-1, t=2), ValueError, "n_samples must be >= 0"),
        (dict(n_samples=2.5, t=2), TypeError, "n_samples must be an integer"),
        (dict(n_samples=2, t=4), ValueError, "t=4 exceeds"),
        (dict(n_samples=2, t=0), ValueError, "t must be >= 1"),
    ],
)
def test_sample_arguments_are_checked(kwargs, error, match):
    with pytest.raises(error, match=match):
        mallows.sample([0, 1, 2], 1.0, **kwargs)


# make_mallows_mixture


@pytest.mark.parametrize(
    "dataset, t, theta_first, theta_last",
    [(1, 10, 1.0, 1.0), (2, 19, 1.0, 1.0), (3, 10, 1.5, 0.6), (4, 19, 1.5, 0.6)],
)
def test_paper_datasets_are_one_argument_away(dataset, t, theta_first, theta_last):
    # the four data sets of Meila & Chen sec. 6, at a reduced size
    X, labels, centres = make_mallows_mixture(
        n_clusters=4, n_per_cluster=30, dataset=dataset, random_state=0
    )
    assert X.shape == (120, t) and centres.shape == (4, 20)
    assert (X >= 0).all()
    assert_array_equal(np.bincount(labels), [30] * 4)
    # each centre is a permutation, and its cluster's rankings are close to it
    for k in range(4):
        assert_array_equal(np.sort(centres[k]), np.arange(20))
        own = mallows.kendall_distance(X[labels == k], centres[k]).mean()
        others = mallows.kendall_distance(X[labels != k], centres[k]).mean()
        assert own < others


def test_mixture_recipe_matches_the_generating_model():
    # one cluster, centre fixed by a huge theta: rankings follow GM(centre, theta*)
    X, labels, centres = make_mallows_mixture(
        n_clusters=1,
        n_per_cluster=20000,
        n_items=4,
        t=2,
        theta=[0.8, 0.3],
        random_state=1,
    )
    table = ref.gm_pmf_table(centres[0], [0.8, 0.3], 2)
    keys = list(table)
    index = {k: i for i, k in enumerate(keys)}
    counts = np.bincount([index[tuple(x)] for x in X], minlength=len(keys))
    expected = np.array([table[k] for k in keys]) * len(X)
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_mixture_length_distribution_and_padding():
    # a distribution of lengths: -1 padding after each ranking's last item
    probs = [0.2, 0.3, 0.5]
    X, labels, _ = make_mallows_mixture(
        n_clusters=2, n_per_cluster=[3000, 1000], n_items=6, t=probs, random_state=2
    )
    lengths = (X >= 0).sum(axis=1)
    assert X.shape == (4000, 3)
    assert_allclose(np.bincount(lengths, minlength=4)[1:] / len(X), probs, atol=0.03)
    assert_array_equal(np.bincount(labels), [3000, 1000])
    for row, t in zip(X, lengths):
        assert (row[t:] == -1).all()


def test_mixture_centres_concentrate_on_their_shaping_rankings():
    # a centre is a posterior draw given 100 rankings of GM(sigma0, 0.7), which
    # concentrates near sigma0; with no shaping rankings it is sigma0 itself
    from rankmix.datasets._samples_generator import _draw_centre

    distances = []
    for seed in range(40):
        sigma0 = np.random.RandomState(seed).permutation(8)
        centre = _draw_centre(8, 0.7, 100, np.random.RandomState(seed))
        distances.append(mallows.kendall_distance([centre], sigma0)[0])
        assert_array_equal(_draw_centre(8, 0.7, 0, np.random.RandomState(seed)), sigma0)
    assert np.mean(distances) < 1.0


def test_mixture_is_reproducible():
    a = make_mallows_mixture(n_clusters=3, n_per_cluster=10, random_state=5)
    b = make_mallows_mixture(n_clusters=3, n_per_cluster=10, random_state=5)
    for x, y in zip(a, b):
        assert_array_equal(x, y)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(t=25), "t=25 exceeds n_items=20"),
        (dict(t=[0.5, 0.6]), "summing to 1"),
        (dict(n_per_cluster=[5, 0, 5], n_clusters=3), "n_per_cluster"),
        (dict(theta=-1.0), "theta"),
        (dict(dataset=5), "dataset"),
        # sizes beyond any memory: a ValueError naming the argument
        (dict(n_clusters=2**60, n_per_cluster=1), "n_clusters=.* asks for"),
        (dict(n_items=2**60, t=3), "n_items=.* asks for"),
        (dict(n_per_cluster=2**58, n_clusters=2), "n_per_cluster=.* asks for"),
        (dict(n_clusters=2**63, n_per_cluster=1), "n_clusters=.* asks for"),
        # sizes whose int64 sum wraps round to 5 (np.repeat wrote past the 5
        # rows allocated): counted exactly
        (
            dict(n_per_cluster=[2**62] * 4 + [5], n_clusters=5),
            "asks for 18,446,744,073,709,551,621 rankings",
        ),
    ],
)
def test_mixture_arguments_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_mallows_mixture(**kwargs)


def test_a_theta_near_the_double_range_end_pins_the_centre_quietly():
    # theta * k overflowed to inf (the right limit: weight 0 off the centre)
    # with a RuntimeWarning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        draws = mallows.sample([2, 0, 1], [1e308, 1e308], 3, 2, random_state=0)
        probabilities = mallows.top_k_probabilities([2, 0, 1], [1e308, 1e308], 2)
    assert_array_equal(draws, [[2, 0]] * 3)
    assert_allclose(probabilities, [1.0, 0.0, 1.0])  # items 2 and 0, by item
