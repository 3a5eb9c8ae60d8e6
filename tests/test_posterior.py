"""Posterior summaries: per-draw arrays, matching to the point estimate,
intervals and consensus rankings (rankmix/_posterior.py)."""

import itertools

import numpy as np
import pytest

from rankmix import DPGaussianClustering, DPMallowsClustering, DPMultinomialClustering
from rankmix._posterior import (
    cumulative_probability_consensus,
    match_clusters,
    stack_padded,
)
from rankmix.datasets import make_mallows_mixture


def _match_reference(label_samples, labels, n_clusters):
    """Plain loops: for each draw and reference cluster, the draw cluster with
    the most of its rows (smallest label on a tie) and that fraction."""
    matched = np.empty((len(label_samples), n_clusters), dtype=int)
    share = np.empty((len(label_samples), n_clusters))
    for d, draw in enumerate(label_samples):
        for j in range(n_clusters):
            members = draw[labels == j]
            counts = {k: int(np.sum(members == k)) for k in range(draw.max() + 1)}
            best = max(counts, key=lambda k: (counts[k], -k))
            matched[d, j] = best
            share[d, j] = counts[best] / max(len(members), 1)
    return matched, share


def test_match_clusters_against_loops():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 4, size=60)
    draws = np.stack([rng.integers(0, k, size=60) for k in (1, 3, 5, 7, 4)])
    matched, share = match_clusters(draws, labels, 4)
    expected_matched, expected_share = _match_reference(draws, labels, 4)
    np.testing.assert_array_equal(matched, expected_matched)
    np.testing.assert_allclose(share, expected_share)


def test_match_clusters_recovers_a_relabelling():
    labels = np.array([0, 0, 1, 1, 2, 2, 2])
    draw = np.array([2, 2, 0, 0, 1, 1, 1])  # the same clustering, renamed
    matched, share = match_clusters(draw[None], labels, 3)
    np.testing.assert_array_equal(matched[0], [2, 0, 1])
    np.testing.assert_array_equal(share[0], 1.0)


def test_stack_padded():
    out = stack_padded([np.ones((2, 3)), np.zeros((1, 3))], np.nan)
    assert out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out[0], 1.0)
    np.testing.assert_array_equal(out[1, 0], 0.0)
    assert np.isnan(out[1, 1]).all()


def _consensus_reference(orderings, n_items):
    """Vitelli et al.'s CP consensus written out with explicit loops."""
    n_draws = len(orderings)
    cdf = np.zeros((n_items, n_items))
    for ordering in orderings:
        for position, item in enumerate(ordering):
            cdf[item, position:] += 1.0 / n_draws
    consensus, placed = [], set()
    for j in range(n_items):
        free = [i for i in range(n_items) if i not in placed]
        item = max(free, key=lambda i: (cdf[i, j], -i))
        consensus.append(item)
        placed.add(item)
    return np.array(consensus), cdf


@pytest.mark.parametrize("seed", range(5))
def test_cumulative_probability_consensus_against_loops(seed):
    rng = np.random.default_rng(seed)
    base = rng.permutation(6)
    # draws near a common ordering: a few random adjacent swaps each
    orderings = []
    for _ in range(25):
        ordering = base.copy()
        for _ in range(rng.integers(0, 4)):
            p = rng.integers(0, 5)
            ordering[[p, p + 1]] = ordering[[p + 1, p]]
        orderings.append(ordering)
    orderings = np.array(orderings)
    consensus, cdf = cumulative_probability_consensus(orderings, 6)
    expected_consensus, expected_cdf = _consensus_reference(orderings, 6)
    np.testing.assert_array_equal(consensus, expected_consensus)
    np.testing.assert_allclose(cdf, expected_cdf)
    assert sorted(consensus) == list(range(6))
    np.testing.assert_allclose(cdf[:, -1], 1.0)  # every item is placed somewhere


@pytest.mark.parametrize("seed", range(3))
def test_consensus_alone_is_the_consensus_of_the_table(seed):
    # the consensus without the n x n table (O(n) memory): the same items, ties
    # included (few draws of many items tie often)
    rng = np.random.default_rng(seed)
    orderings = np.array([rng.permutation(40) for _ in range(3)])
    alone = cumulative_probability_consensus(orderings, 40, return_rank_cdf=False)
    consensus, _ = cumulative_probability_consensus(orderings, 40)
    np.testing.assert_array_equal(alone, consensus)
    np.testing.assert_array_equal(alone, _consensus_reference(orderings, 40)[0])


def test_consensus_of_identical_draws_is_that_ordering():
    ordering = np.array([3, 0, 2, 1])
    consensus, _ = cumulative_probability_consensus(np.tile(ordering, (7, 1)), 4)
    np.testing.assert_array_equal(consensus, ordering)


@pytest.fixture(scope="module")
def mallows_fit():
    X, y, centres = make_mallows_mixture(
        n_clusters=2, n_per_cluster=60, n_items=5, t=5, theta=2.0, random_state=1
    )
    model = DPMallowsClustering(
        n_iter=60, burn_in=20, n_chains=2, random_state=0
    ).fit(X)
    return model, X, y, centres


def test_posterior_samples_align_with_label_samples(mallows_fit):
    model, X, _, _ = mallows_fit
    samples = model.posterior_samples()
    n_draws = model.n_draws_
    assert samples["alpha"].shape == (n_draws,)
    k_max = samples["weights"].shape[1]
    assert samples["central_rankings"].shape == (n_draws, k_max, model.n_items_)
    assert samples["thetas"].shape == (n_draws, k_max, X.shape[1])
    for d, draw in enumerate(model.label_samples_):
        sizes = np.bincount(draw.astype(int))
        k = len(sizes)
        np.testing.assert_allclose(samples["weights"][d, :k], sizes / len(draw))
        np.testing.assert_array_equal(samples["weights"][d, k:], 0.0)
        assert (samples["central_rankings"][d, k:] == -1).all()
        # every cluster of a draw holds a full central ranking
        assert (np.sort(samples["central_rankings"][d, :k], axis=1)
                == np.arange(model.n_items_)).all()
    # full rankings: the last stage's theta carries no information (thetas_)
    assert np.isnan(samples["thetas"][:, :, -1]).all()
    assert np.isnan(model.thetas_[:, -1]).all()


def test_point_estimate_draw_matches_itself(mallows_fit):
    model = mallows_fit[0]
    best = [
        d for d, draw in enumerate(model.label_samples_)
        if np.array_equal(draw, model.labels_)
    ]
    matched, share = model.match_clusters()
    samples = model.posterior_samples()
    for d in best:
        np.testing.assert_array_equal(matched[d], np.arange(model.n_clusters_))
        np.testing.assert_array_equal(share[d], 1.0)
    d = best[0]
    np.testing.assert_array_equal(
        samples["central_rankings"][d, : model.n_clusters_], model.central_rankings_
    )


def test_intervals_bracket_the_draws(mallows_fit):
    model = mallows_fit[0]
    intervals = model.posterior_intervals(level=0.8)
    K, t = model.n_clusters_, model.thetas_.shape[1]
    assert intervals["weights"].shape == (K, 2)
    assert intervals["thetas"].shape == (K, t, 2)
    assert "central_rankings" not in intervals  # orderings have no interval
    lower, upper = intervals["thetas"][..., 0], intervals["thetas"][..., 1]
    finite = ~np.isnan(lower)
    assert (lower[finite] <= upper[finite]).all()
    assert np.isnan(upper[:, -1]).all()
    # a wider level gives wider intervals
    wide = model.posterior_intervals(level=0.99)["weights"]
    assert (wide[:, 0] <= intervals["weights"][:, 0] + 1e-12).all()
    assert (wide[:, 1] >= intervals["weights"][:, 1] - 1e-12).all()


def test_intervals_are_quantiles_of_the_matched_draws(mallows_fit):
    model = mallows_fit[0]
    matched, _ = model.match_clusters()
    thetas = model.posterior_samples()["thetas"]
    intervals = model.posterior_intervals(level=0.5)["thetas"]
    for j, stage in itertools.product(range(model.n_clusters_), range(3)):
        values = [thetas[d, matched[d, j], stage] for d in range(len(matched))]
        np.testing.assert_allclose(
            intervals[j, stage], np.quantile(values, [0.25, 0.75])
        )


def test_consensus_recovers_the_centres(mallows_fit):
    model, _, y, centres = mallows_fit
    consensus, rank_cdf = model.consensus_rankings()
    assert consensus.shape == (model.n_clusters_, model.n_items_)
    np.testing.assert_allclose(rank_cdf[:, :, -1], 1.0)
    alone = model.consensus_rankings(return_rank_cdf=False)
    np.testing.assert_array_equal(alone, consensus)
    for c, centre in enumerate(centres):
        j = np.bincount(model.labels_[y == c]).argmax()
        np.testing.assert_array_equal(consensus[j], centre)


def test_mallows_draws_keep_their_central_rankings_a_byte_an_item(mallows_fit):
    # each kept draw's K x n_items central rankings were intp, 8 bytes an
    # entry; the summaries read them back as before
    model = mallows_fit[0]
    # 5 items: a byte each, but for the point-estimate draw, which keeps
    # central_rankings_ itself (edits of the attribute reach the predictions)
    best = model._best_draw
    assert all(d[0].dtype == np.int8 for i, d in enumerate(model._draws) if i != best)
    assert model._draws[best][0] is model.central_rankings_
    samples = model.posterior_samples()["central_rankings"]
    assert samples.dtype == np.intp
    assert model.central_rankings_.dtype == np.intp
    # consensus_rankings gathers each cluster's matched rankings draw by draw:
    # the same as from the padded samples
    matched, _ = model.match_clusters()
    consensus, rank_cdf = model.consensus_rankings()
    for j in range(model.n_clusters_):
        expected = cumulative_probability_consensus(
            samples[np.arange(len(matched)), matched[:, j]], model.n_items_
        )
        np.testing.assert_array_equal(consensus[j], expected[0])
        np.testing.assert_array_equal(rank_cdf[j], expected[1])


@pytest.mark.parametrize("level", [0, 1, -0.5, 2, "0.9", None])
def test_bad_level(mallows_fit, level):
    with pytest.raises(ValueError, match="level must be a number in"):
        mallows_fit[0].posterior_intervals(level=level)


def test_theta_intervals_cover_the_truth():
    """The 90% intervals of theta hold the true theta in about 90% of the
    clusters and stages over repeated fits of the exact sampler."""
    theta = np.array([1.5, 1.0, 0.6])
    hits = []
    for seed in range(12):
        X, y, _ = make_mallows_mixture(
            n_clusters=2, n_per_cluster=120, n_items=6, t=3, theta=theta,
            random_state=seed,
        )
        model = DPMallowsClustering(
            sampler="slice-gibbs", n_iter=300, burn_in=100, n_chains=1,
            random_state=seed,
        ).fit(X)
        intervals = model.posterior_intervals(level=0.9)["thetas"]
        for c in range(2):
            j = np.bincount(model.labels_[y == c]).argmax()
            hits.extend(
                (intervals[j, :, 0] <= theta) & (theta <= intervals[j, :, 1])
            )
    coverage = np.mean(hits)  # 72 checks: 0.9 +- 2 standard errors is 0.83..0.97
    assert 0.78 <= coverage <= 0.99, coverage


def test_gaussian_and_multinomial_summaries():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(-4, 1, (40, 2)), rng.normal(4, 1, (40, 2))])
    model = DPGaussianClustering(n_iter=30, burn_in=10, random_state=0).fit(X)
    samples = model.posterior_samples()
    assert samples["means"].shape[:1] == (model.n_draws_,)
    intervals = model.posterior_intervals()
    assert intervals["means"].shape == (model.n_clusters_, 2, 2)
    for j in range(model.n_clusters_):
        centre = X[model.labels_ == j].mean(axis=0)
        lower, upper = intervals["means"][j, :, 0], intervals["means"][j, :, 1]
        assert ((lower - 0.5 <= centre) & (centre <= upper + 0.5)).all()

    counts = rng.poisson(3.0, size=(30, 6))
    multinomial = DPMultinomialClustering(n_iter=20, burn_in=5, random_state=0)
    multinomial.fit(counts)
    assert set(multinomial.posterior_samples()) == {"weights", "alpha"}
    assert multinomial.posterior_intervals()["weights"].shape == (
        multinomial.n_clusters_, 2
    )
