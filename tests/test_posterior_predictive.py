# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Predictions and samples averaged over the kept draws; top-k summaries."""

import itertools
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import gammaln, logsumexp
from sklearn.exceptions import ConvergenceWarning

from rankmix import (
    DPGaussianClustering,
    DPMallowsClustering,
    DPMultinomialClustering,
    mallows,
)
from rankmix.datasets import make_mallows_mixture

RANKINGS = make_mallows_mixture(
    n_clusters=2, n_per_cluster=30, n_items=5, t=3, theta=1.0, random_state=0
)[0]
VECTORS = np.random.default_rng(0).normal(size=(60, 2)) + np.repeat(
    [[0.0, 0.0], [3.0, 3.0]], 30, axis=0
)
COUNTS = np.random.default_rng(0).poisson(2.0, size=(50, 8)) * np.repeat(
    [[1, 1, 1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 1, 1, 1, 1]], 25, axis=0
)
CASES = [
    (DPMallowsClustering, RANKINGS),
    (DPGaussianClustering, VECTORS),
    (DPMultinomialClustering, COUNTS),
]


def fit(Estimator, X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return Estimator(
            **{"n_iter": 30, "burn_in": 10, "random_state": 0, **params}
        ).fit(X)


@pytest.mark.parametrize("Estimator, X", CASES)
def test_predict_proba_averages_the_draws_matched_by_shared_rows(Estimator, X):
    # a weak prior on alpha keeps the draws' clusterings apart
    model = fit(Estimator, X, alpha=3.0)
    assert len({len(p[-1]) for p in model._draws}) > 1  # the draws disagree
    new = model._check_new_data(X[::3])
    n_new = new.shape[0]
    expected = np.zeros((n_new, model.n_clusters_))
    for d, parameters in enumerate(model._draws):
        sizes = parameters[-1]
        weighted = model._component_log_density(new, parameters) + np.log(sizes)
        for r in range(n_new):
            joins = np.exp(weighted[r] - logsumexp(weighted[r]))
            for j, size in enumerate(sizes):
                for c in range(model.n_clusters_):
                    shared = np.sum(
                        (model.label_samples_[d] == j) & (model.labels_ == c)
                    )
                    expected[r, c] += joins[j] * shared / size
    expected /= len(model._draws)
    proba = model.predict_proba(X[::3])
    assert_allclose(proba, expected, rtol=1e-10, atol=1e-15)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(model.predict(X[::3]), proba.argmax(axis=1))


@pytest.mark.parametrize("Estimator, X", CASES)
def test_draws_point_is_the_plug_in_of_the_point_estimate(Estimator, X):
    model = fit(Estimator, X)
    weighted = model._component_log_density(
        model._check_new_data(X), model._best_parameters
    ) + np.log(model.weights_)
    expected = np.exp(weighted - logsumexp(weighted, axis=1, keepdims=True))
    assert_allclose(model.predict_proba(X, draws="point"), expected)
    assert_array_equal(model.predict(X, draws="point"), expected.argmax(axis=1))
    samples, labels = model.sample(20, random_state=0, draws="point")
    assert len(samples) == 20 and labels.min() >= 0


@pytest.mark.parametrize("method", ["predict_proba", "predict"])
def test_draws_must_be_all_or_point(method):
    model = fit(DPGaussianClustering, VECTORS)
    with pytest.raises(ValueError, match="draws must be 'all' or 'point'"):
        getattr(model, method)(VECTORS, draws="mean")
    with pytest.raises(ValueError, match="draws must be 'all' or 'point'"):
        model.sample(3, draws="best")


def test_sample_draws_from_the_density_of_score_samples():
    # top-2 rankings of 4 items: 12 outcomes, whose predictive probabilities
    # exp(score_samples) sum to one; new clusters included, so every outcome
    # has mass
    X = make_mallows_mixture(
        n_clusters=2, n_per_cluster=15, n_items=4, t=2, theta=1.5, random_state=0
    )[0]
    model = fit(DPMallowsClustering, X, alpha=2.0)
    outcomes = np.array(list(itertools.permutations(range(4), 2)))
    p = np.exp(model.score_samples(outcomes))
    assert_allclose(p.sum(), 1.0)
    n = 40000
    samples, labels = model.sample(n, random_state=0)
    found = (samples[:, None, :] == outcomes[None]).all(axis=2)
    assert_array_equal(found.sum(axis=1), 1)
    frequency = found.mean(axis=0)
    # within 4 standard errors, outcome by outcome
    assert np.all(np.abs(frequency - p) < 4 * np.sqrt(p * (1 - p) / n))
    assert labels.min() == -1 and labels.max() < model.n_clusters_


def test_sample_mean_is_the_posterior_predictive_mean_for_vectors():
    model = fit(DPGaussianClustering, VECTORS, alpha=2.0)
    # each draw's predictive: Student-t's centred on the clusters' posterior
    # means and, for a new cluster, the prior mean
    N, alpha = len(VECTORS), model.alpha
    means = [
        (p[-1] @ p[0] + alpha * model.mean_prior_) / (N + alpha) for p in model._draws
    ]
    n = 50000
    samples, labels = model.sample(n, random_state=0)
    spread = samples.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(samples.mean(axis=0) - np.mean(means, axis=0)) < 4 * spread)
    new_share = alpha / (N + alpha)
    assert abs(np.mean(labels == -1) - new_share) < 4 * np.sqrt(new_share / n)


def test_sample_mean_is_the_posterior_predictive_mean_for_counts():
    model = fit(DPMultinomialClustering, COUNTS, alpha=2.0)
    N, alpha, a = len(COUNTS), model.alpha, model.dirichlet_prior_
    probs = []
    for counts, *_, sizes in model._draws:
        posterior = counts.toarray() + a
        clusters = posterior / posterior.sum(axis=1, keepdims=True)
        probs.append((sizes @ clusters + alpha * a / a.sum()) / (N + alpha))
    expected = COUNTS.sum(axis=1).mean() * np.mean(probs, axis=0)
    n = 50000
    samples, _ = model.sample(n, random_state=0)
    spread = samples.std(axis=0) / np.sqrt(n)
    assert np.all(np.abs(samples.mean(axis=0) - expected) < 4 * spread)


# -- top-k ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_items", [3, 4, 5])
def test_gm_top_k_probabilities_equal_enumeration(n_items):
    rng = np.random.default_rng(n_items)
    sigma = rng.permutation(n_items)
    theta = rng.uniform(0.0, 2.0, size=n_items)
    for k in range(1, n_items + 1):
        tops = np.array(list(itertools.permutations(range(n_items), k)))
        p = np.exp(mallows.log_likelihood(tops, sigma, theta))
        expected = [p[(tops == i).any(axis=1)].sum() for i in range(n_items)]
        got = mallows.top_k_probabilities(sigma, theta, k)
        assert_allclose(got, expected, atol=1e-12)
        assert_allclose(got.sum(), k)
    # several centres at once, and a large theta (all mass on sigma's order)
    both = mallows.top_k_probabilities([sigma, sigma[::-1]], [theta, theta], 2)
    assert_allclose(both[0], mallows.top_k_probabilities(sigma, theta, 2))
    sharp = mallows.top_k_probabilities(sigma, 800.0, 2)
    assert_array_equal(sharp[sigma], [1.0, 1.0] + [0.0] * (n_items - 2))


def _top_k_dense(sigma, theta, k):
    """The place chain of ``top_k_probabilities`` on the full n x n table."""
    n_items = len(sigma)
    unranked = np.eye(n_items)
    for j in range(k):
        pmf = np.exp(-theta[j] * np.arange(n_items - j))
        pmf /= pmf.sum()
        above = np.cumsum(pmf[::-1])[::-1][1:]
        unranked = unranked[:, 1:] * (1.0 - above) + unranked[:, :-1] * above
    out = np.empty(n_items)
    out[sigma] = 1.0 - unranked.sum(axis=1)
    return out


def test_top_k_probabilities_band_equals_the_full_place_table():
    # The item at rank p stays within k places of p, so the chain runs on a
    # band of k + 1 places per item; the full table is the reference.
    rng = np.random.default_rng(7)
    for n_items in [1, 2, 6, 25]:
        sigmas = np.array([rng.permutation(n_items) for _ in range(4)])
        thetas = rng.uniform(0.0, 3.0, size=(4, n_items))
        for k in range(1, n_items + 1):
            got = mallows.top_k_probabilities(sigmas, thetas, k)
            expected = [_top_k_dense(s, t, k) for s, t in zip(sigmas, thetas)]
            assert_allclose(got, expected, rtol=0, atol=1e-13)


def test_top_k_probabilities_of_many_items_in_little_memory():
    # 100,000 items: the full place table would take 80 GB
    sigma = np.random.default_rng(0).permutation(100_000)
    proba = mallows.top_k_probabilities(sigma, 0.5, 3)
    assert_allclose(proba.sum(), 3.0)
    assert np.all((proba >= 0) & (proba <= 1))
    # far down sigma's order an item is never in the top 3 (e^-0.5 per place)
    assert proba[sigma[100:]].max() < 1e-20


def test_top_k_probabilities_average_the_draws_over_each_cluster_rows():
    model = fit(DPMallowsClustering, RANKINGS, alpha=3.0)
    k = 2
    expected = np.zeros((model.n_clusters_, model.n_items_))
    for c in range(model.n_clusters_):
        rows = np.flatnonzero(model.labels_ == c)
        # each ranking of c under its own cluster's model, in every draw
        for d, (sigmas, thetas, *_) in enumerate(model._draws):
            for j in model.label_samples_[d, rows]:
                expected[c] += mallows.top_k_probabilities(sigmas[j], thetas[j], k)
        expected[c] /= len(rows) * len(model._draws)
    assert_allclose(model.top_k_probabilities(k), expected)
    with pytest.raises(ValueError, match="k must be in"):
        model.top_k_probabilities(RANKINGS.shape[1] + 1)
    with pytest.raises(TypeError, match="k must be an integer"):
        model.top_k_probabilities(1.5)


def test_predict_next_proba_is_the_ratio_of_predictive_densities():
    model = fit(DPMallowsClustering, RANKINGS, alpha=3.0)
    partial = [[0], [3, 1], [4, -1]]
    proba = model.predict_next_proba(partial)
    assert proba.shape == (3, model.n_items_)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert proba[0, 0] == proba[1, 3] == proba[1, 1] == proba[2, 4] == 0.0
    # written out: each draw's DP mixture of GM models and the new cluster's
    # uniform (n - t)! / n!, averaged over the draws, at x and at x + [i]
    n, N = model.n_items_, len(RANKINGS)

    def density(x):
        x = np.asarray(x)
        total = 0.0
        for sigmas, thetas, alpha, sizes in model._draws:
            gm = np.exp(mallows.log_likelihood(x[None], sigmas, thetas)[0])
            new = np.exp(gammaln(n - len(x) + 1) - gammaln(n + 1))
            total += (sizes @ gm + alpha * new) / (N + alpha)
        return total

    for r, x in enumerate([[0], [3, 1], [4]]):
        for i in set(range(n)) - set(x):
            assert_allclose(proba[r, i], density(x + [i]) / density(x), rtol=1e-10)
    with pytest.raises(ValueError, match="must be shorter"):
        model.predict_next_proba([[0, 1, 2]])


def test_logsumexp_overwrite_is_scipys():
    from rankmix._base import logsumexp_overwrite

    rng = np.random.default_rng(0)
    a = rng.normal(scale=50, size=(6, 5))
    a[0] = -np.inf
    a[1, 2] = np.inf
    a[2, 1] = np.nan
    a[3, :4] = -np.inf
    for axis in (0, 1):
        assert_allclose(
            logsumexp_overwrite(a.copy(), axis), logsumexp(a, axis=axis), rtol=1e-14
        )
    for shape, axis in (((0, 3), 0), ((3, 0), 1)):
        assert_array_equal(
            logsumexp_overwrite(np.empty(shape), axis), np.full(3, -np.inf)
        )


def _traced(compute, working_memory):
    """``(result, peak bytes)`` of ``compute()`` under ``working_memory`` MiB,
    traced by tracemalloc (NumPy reports its buffers to it)."""
    import tracemalloc

    from sklearn import config_context

    with config_context(working_memory=working_memory):
        tracemalloc.start()
        try:
            return compute(), tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()


def _nbytes(X):
    """Bytes of an array's, or a sparse matrix's, buffers."""
    if hasattr(X, "indptr"):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


@pytest.mark.parametrize("Estimator, X", CASES)
def test_score_samples_and_predict_proba_work_within_working_memory(Estimator, X):
    # besides the result, score_samples holds one batch's work at a time, within
    # working_memory; scipy's logsumexp held five temporaries of each table
    # (0.47 to 0.55 MiB of work at 0.25 MiB here), and the multinomial's
    # per-entry statistics were not counted. predict_proba held every row's
    # densities and shares at once (8.7 to 11.4 MiB of work here)
    model = fit(Estimator, X, alpha=3.0)
    rows = model._check_new_data(np.concatenate([X] * 1000))
    budget = 0.25
    scores, peak = _traced(lambda: model._log_predictive(rows), budget)
    assert rows.shape[0] * len(model._predictive_draws()) * 8 > 16 * budget * 2**20
    assert peak - scores.nbytes <= 1.5 * budget * 2**20
    assert_allclose(scores, model.score_samples(X)[np.arange(len(scores)) % len(X)])
    # predict_proba: the result, the rows validated again, one batch's work
    proba, peak = _traced(lambda: model.predict_proba(rows), budget)
    copied = _nbytes(rows)
    assert peak - proba.nbytes - copied <= 1.5 * budget * 2**20
    assert_allclose(proba, model.predict_proba(X)[np.arange(len(proba)) % len(X)])
    # the point estimate's densities too (all rows at once, the Gaussian's
    # work was 0.52 MiB here, the multinomial's per-entry work 6.1 MiB)
    proba, peak = _traced(lambda: model.predict_proba(rows, draws="point"), budget)
    assert peak - proba.nbytes - copied <= 1.5 * budget * 2**20
    expected = model.predict_proba(X, draws="point")
    assert_allclose(proba, expected[np.arange(len(proba)) % len(X)])


WIDE_VECTORS = np.random.default_rng(1).normal(size=(2000, 20)) + 4.0 * (
    np.arange(2000)[:, None] % 3
)


@pytest.mark.parametrize(
    "Estimator, X, params",
    [
        (DPMallowsClustering, np.concatenate([RANKINGS] * 60), {}),
        (DPGaussianClustering, WIDE_VECTORS, {"covariance_type": "full"}),
        (DPGaussianClustering, WIDE_VECTORS, {"covariance_type": "diag"}),
        (DPMultinomialClustering, np.concatenate([COUNTS] * 60), {}),
    ],
)
def test_pointwise_log_likelihood_works_within_working_memory(Estimator, X, params):
    # to_inference_data's (draws, N) table is its result; each draw's (rows,
    # K) densities and the left-out predictive's (rows, d) or per-entry work
    # come in batches within working_memory (all rows at once: 1.1 to 2.7 MiB)
    model = fit(Estimator, X, **params)
    rows = model._X_fit
    expected = model._log_predictive_per_draw(rows, training=True)
    budget = 0.25
    loglik, peak = _traced(
        lambda: model._log_predictive_per_draw(rows, training=True), budget
    )
    # besides the result, the new cluster's density of every row and, when
    # draws were trimmed, the rebuild's own copy of the training rows and
    # their order by cluster
    held = loglik.nbytes + 8 * rows.shape[0]
    if len(model._predictive_draws()) < len(model._draws):
        held += _nbytes(rows) + 8 * rows.shape[0]
    assert peak - held <= 1.5 * budget * 2**20
    assert_allclose(loglik, expected, rtol=1e-13)


def test_densities_are_computed_in_batches_within_working_memory():
    # score_samples holds an (n_draws, rows) table, predict_next_proba also
    # each ranking extended by every item: a tiny working_memory splits the
    # rows into batches (one ranking at a time for predict_next_proba), which
    # changes no value beyond the last bits (the kernels' vectorised loops
    # round by batch length)
    from sklearn import config_context

    model = fit(DPMallowsClustering, RANKINGS)
    scores = model.score_samples(RANKINGS)
    next_items = model.predict_next_proba(RANKINGS[:, :1])
    with config_context(working_memory=1e-4):  # about 13 rows at 40 draws
        assert_allclose(model.score_samples(RANKINGS), scores, rtol=1e-14)
        assert_allclose(
            model.predict_next_proba(RANKINGS[:, :1]), next_items, rtol=1e-13
        )
