"""The permutation-augmented move (Liang, Jordan & Taskar 2007): DP and exactness."""

import math
from collections import Counter

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from rankmix import DPGaussianClustering
from rankmix import _collapsed as collapsed_module
from rankmix._collapsed_chain import CollapsedChain
from rankmix._gaussian_kernels import NIWModel
from rankmix._permutation import _dp_wrapper

from . import _gaussian_reference as gref
from .test_gaussian import (
    EXACT_CASES,
    TINY_X2,
    assert_matches_posterior,
    blobs,
    fit_tiny,
    prior_args,
)


def ends_along(labels, order):
    """End positions of the segments of a clustering consistent with ``order``."""
    along = [labels[i] for i in order]
    N = len(order)
    return [p for p in range(1, N) if along[p] != along[p - 1]] + [N]


def log_af(alpha, N):
    return sum(math.log(alpha + i) for i in range(N))


def table_problem(seed, N, covariance_type="full", alpha=0.7):
    """Random data and order, the segment table and the reference's log-marginals."""
    rng = np.random.default_rng(seed)
    d = 2
    X = rng.normal(size=(N, d)) + np.repeat(
        rng.normal(scale=2.0, size=(2, d)), [N // 2, N - N // 2], axis=0
    )
    order = rng.permutation(N)
    log_marginal = gref.make_log_marginal_fn(
        X, covariance_type, *prior_args(covariance_type, d)
    )
    table = np.full((N, N), -np.inf)
    for s in range(N):
        for e in range(s, N):
            table[s, e] = log_marginal(tuple(order[s : e + 1]))
    return X, order, log_marginal, table


def size_terms(N, alpha, beta=None):
    m = np.arange(N + 1, dtype=float)
    m[0] = 1.0
    log_size = -np.log(m)
    if beta is not None:
        log_size += math.log(alpha) - math.log(beta)
    K = np.arange(N + 1)
    log_A = K * math.log(alpha) - np.array([math.lgamma(k + 1.0) for k in K])
    return log_size, log_A


# -- the generic dynamic program, on a table of segment log-marginals ------------------


@pytest.mark.parametrize("N", [5, 6, 7])
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_dp_matches_brute_force(N, seed):
    # normaliser p(pi, x) and p(C | pi, x) of every consistent clustering (eq. 4)
    alpha = 0.7
    _, order, log_marginal, table = table_problem(seed, N)
    log_norm, conditional = gref.dp_sum_over_consistent_clusterings(
        order, log_marginal, alpha
    )
    clusterings = list(conditional)
    log_size, log_A = size_terms(N, alpha)
    norm, log_probs, _, _, _ = _dp_wrapper(
        order,
        table,
        log_size,
        log_A,
        clusterings=[ends_along(c, order) for c in clusterings],
    )
    assert_allclose(norm - log_af(alpha, N), log_norm, rtol=1e-12)
    assert_allclose(
        np.exp(log_probs), [conditional[c] for c in clusterings], atol=1e-12
    )
    # the g table of sec. 3.1 is the brute-force one (through the normaliser at each N)
    G = gref.brute_force_g_table(order, log_marginal)
    assert_allclose(
        norm,
        np.logaddexp.reduce([G[N, k] + log_A[k] for k in range(1, N + 1)]),
        rtol=1e-12,
    )


@pytest.mark.parametrize("N", [5, 7])
@pytest.mark.parametrize("beta", [0.5, 2.5])
def test_beta_proposal_matches_brute_force(N, beta):
    # q_beta(pi, x) and q_beta(C | pi, x) of eq. 5 and 6, with the full pass
    alpha = 1.3
    _, order, log_marginal, table = table_problem(N, N, "diag")
    log_norm, conditional = gref.dp_sum_over_consistent_clusterings(
        order, log_marginal, alpha, beta
    )
    clusterings = list(conditional)
    log_size, _ = size_terms(N, alpha, beta)
    norm, log_probs, _, width, _ = _dp_wrapper(
        order,
        table,
        log_size,
        None,
        epsilon=0.0,
        clusterings=[ends_along(c, order) for c in clusterings],
    )
    assert_allclose(norm - log_af(alpha, N), log_norm, rtol=1e-12)
    assert_allclose(
        np.exp(log_probs), [conditional[c] for c in clusterings], atol=1e-12
    )
    assert width == (N + 1) / 2  # every term kept


@pytest.mark.parametrize("exact", [True, False])
def test_samples_follow_the_dp_probabilities(exact):
    N, alpha, n = 6, 0.9, 40000
    _, order, log_marginal, table = table_problem(3, N)
    log_size, log_A = size_terms(N, alpha, None if exact else 1.5)
    clusterings = [ends_along(c, order) for c in gref.consistent_clusterings(order)]
    _, log_probs, samples, _, _ = _dp_wrapper(
        order,
        table,
        log_size,
        log_A if exact else None,
        clusterings=clusterings,
        n_samples=n,
        seed=1,
    )
    counts = Counter(samples)
    empirical = np.array([counts[tuple(c)] / n for c in clusterings])
    assert_allclose(np.exp(log_probs).sum(), 1.0, rtol=1e-12)
    assert_allclose(empirical, np.exp(log_probs), atol=0.01)


def test_beam_with_vanishing_epsilon_is_the_full_pass():
    N, alpha = 7, 0.8
    _, order, _, table = table_problem(5, N)
    log_size, _ = size_terms(N, alpha, 2.0)
    clusterings = [ends_along(c, order) for c in gref.consistent_clusterings(order)]
    full = _dp_wrapper(order, table, log_size, None, 0.0, clusterings)
    for epsilon in [1e-300, 1e-32]:
        beam = _dp_wrapper(order, table, log_size, None, epsilon, clusterings)
        # the pruned mass is at most 1 - (1 - epsilon)^N of g'(N)
        assert_allclose(beam[0], full[0], rtol=0, atol=N * epsilon * 10)
        kept = np.isfinite(beam[1])
        assert_allclose(beam[1][kept], full[1][kept], atol=N * epsilon * 10)
        assert np.exp(full[1][~kept]).sum() <= N * epsilon


def test_beam_pruned_clusterings_have_zero_probability():
    # a coarse beam: the kept clusterings' probabilities still sum to one, and a
    # pruned one is never drawn
    N, alpha = 7, 0.8
    _, order, _, table = table_problem(6, N)
    log_size, _ = size_terms(N, alpha, 2.0)
    clusterings = [ends_along(c, order) for c in gref.consistent_clusterings(order)]
    _, log_probs, samples, width, _ = _dp_wrapper(
        order, table, log_size, None, 0.2, clusterings, n_samples=2000
    )
    assert np.isinf(log_probs).any() and width < (N + 1) / 2
    assert_allclose(np.exp(log_probs).sum(), 1.0, rtol=1e-12)
    drawable = {tuple(c) for c, lp in zip(clusterings, log_probs) if np.isfinite(lp)}
    assert set(samples) <= drawable


def test_beam_holds_states_for_its_open_segments_only():
    # segments that grow costly keep few starts open: the states grow with
    # them, not with N (they were N x width for every pass, 0.49 GiB for
    # 10,000 points of the full Gaussian family at d = 80)
    N = 2000
    position = np.arange(N)
    table = -5.0 * (position[None, :] - position[:, None]) ** 2
    log_size = np.zeros(N + 1)
    *_, width, capacity = _dp_wrapper(np.arange(N), table, log_size, None, 1e-8)
    assert width < 10 and capacity <= 4 * 2 * 10
    # the exact pass, and the beam of epsilon = 0, keep every start open: N
    # states, however the doubling falls
    log_A = np.zeros(N + 1)
    *_, capacity = _dp_wrapper(np.arange(50), table[:50, :50], log_size[:51], log_A)
    assert capacity == 50 * 2
    n = 1025
    *_, capacity = _dp_wrapper(np.arange(n), table[:n, :n], log_size[: n + 1], None)
    assert capacity == n * 2


# -- the Gaussian segment model in the chain -------------------------------------------


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
@pytest.mark.parametrize("N", [5, 7])
def test_chain_dp_matches_brute_force(covariance_type, N):
    # the NIW statistics built point by point give the reference's segment marginals
    alpha, beta = 0.6, 1.7
    rng = np.random.default_rng(N)
    X = rng.normal(size=(N, 2))
    X[N // 2 :] += 2.5
    m0, kappa0, nu0, psi0 = prior_args(covariance_type, 2)
    model = NIWModel(m0, kappa0, nu0, psi0, covariance_type == "full", N)
    chain = CollapsedChain(model.family(X), alpha, True, 0, None, 2, np.random.PCG64(0))
    log_marginal = gref.make_log_marginal_fn(X, covariance_type, m0, kappa0, nu0, psi0)
    for _ in range(2):
        order = rng.permutation(N)
        for variant, b in [("exact", None), ("beta", beta)]:
            log_norm, conditional = gref.dp_sum_over_consistent_clusterings(
                order, log_marginal, alpha, b
            )
            clusterings = list(conditional)
            norm, log_probs, _ = chain.permutation_conditional(
                order,
                [ends_along(c, order) for c in clusterings],
                variant,
                beta=beta,
                epsilon=0.0,
            )
            assert_allclose(norm - log_af(alpha, N), log_norm, rtol=1e-10)
            assert_allclose(
                np.exp(log_probs), [conditional[c] for c in clusterings], atol=1e-10
            )


def test_beam_keeps_few_sizes_and_loses_little_mass():
    X, y = make_blobs(n_samples=150, centers=3, cluster_std=0.5, random_state=0)
    X = np.ascontiguousarray(X)
    N = len(X)
    model = NIWModel(X.mean(axis=0), 0.1, 4.0, 0.4 * np.cov(X.T), True, N)
    chain = CollapsedChain(model.family(X), 1.0, True, 0, None, 2, np.random.PCG64(0))
    # an order consistent with the true clusters, random within them
    rng = np.random.default_rng(0)
    order = np.concatenate([rng.permutation(np.flatnonzero(y == k)) for k in range(3)])
    truth = [ends_along(y, order)]
    full_norm, full_lp, full_width = chain.permutation_conditional(
        order, truth, "beta", beta=2.0, epsilon=0.0
    )
    norm, lp, width = chain.permutation_conditional(
        order, truth, "beta", beta=2.0, epsilon=1e-32
    )
    assert full_width == (N + 1) / 2 and width < 0.7 * full_width
    assert_allclose(norm, full_norm, atol=1e-20 * N + 1e-12)
    assert_allclose(lp, full_lp, atol=1e-12)


# -- exactness of the sampler ----------------------------------------------------------


@pytest.mark.parametrize(
    "sampler", ["permutation", "gibbs+permutation", "gibbs+split-merge+permutation"]
)
@pytest.mark.parametrize("X, covariance_type", EXACT_CASES)
def test_beta_samplers_match_the_exact_posterior(X, covariance_type, sampler):
    # the beam Metropolis-Hastings move (default) after a hill-climbing burn-in
    model = fit_tiny(X, covariance_type, sampler, permutation_dp="beta")
    assert_matches_posterior(model, X, covariance_type)


@pytest.mark.parametrize("X, covariance_type", EXACT_CASES)
def test_exact_dp_sampler_matches_the_exact_posterior(X, covariance_type):
    model = fit_tiny(X, covariance_type, "permutation", permutation_dp="exact")
    assert_matches_posterior(model, X, covariance_type)


def test_coarse_beam_rejects_pruned_states_and_stays_exact():
    # with epsilon = 0.2 the current clustering often falls out of the beam: those
    # proposals are rejected, and the chain still targets the posterior
    model = fit_tiny(
        TINY_X2, "full", "permutation", permutation_dp="beta", beam_tolerance=0.2
    )
    assert_matches_posterior(model, TINY_X2, "full")


def test_chain_counts_its_burn_in_and_fixes_beta_after_it():
    m0, kappa0, nu0, psi0 = prior_args("full", 2)
    model = NIWModel(m0, kappa0, nu0, psi0, True, len(TINY_X2))
    chain = CollapsedChain(
        model.family(TINY_X2),
        1.0,
        False,
        0,
        None,
        3,
        np.random.PCG64(0),
        permutation="beta",
        beam_tolerance=0.2,
        burn_in=4,
    )
    assert chain.in_burn_in
    chain.sweep(4)
    assert not chain.in_burn_in and np.isnan(chain.permutation_beta)
    assert chain.permutation_counts["proposed"] == 0  # hill climbing during burn-in
    chain.sweep(300)
    counts = chain.permutation_counts
    assert (
        counts["proposed"] == 300
        and 0 < counts["accepted"] < 300
        and counts["pruned"] > 0
    )
    assert chain.permutation_beta > 1.0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_permutation_sampler_finds_blobs():
    # the hill-climbing burn-in, then the exact move alone
    X, y = blobs(n_samples=400, centers=4, random_state=0)
    model = DPGaussianClustering(
        sampler="permutation", n_iter=30, burn_in=15, random_state=0
    ).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.95


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(permutation_dp="exact"), r"'exact'.* 2\.0 GiB for 11,585 points"),
        (dict(beam_tolerance=0.0), r"tolerance=0 .* 1\.0 GiB for 11,585 points"),
    ],
)
def test_quadratic_permutation_tables_are_refused_past_their_limit(
    params, match, monkeypatch
):
    # the O(N^2) tables of the exact pass and of the beam that keeps every
    # term: past MAX_QUADRATIC_POINTS a ValueError, before any chain runs
    # (patched to 10 points here; 2.0 GiB is what 11,585 points would take)
    monkeypatch.setattr(collapsed_module, "MAX_QUADRATIC_POINTS", 10)
    X, _ = blobs(n_samples=11, centers=2, random_state=0)
    model = DPGaussianClustering(sampler="gibbs+permutation", n_iter=4, burn_in=2)
    model.set_params(**params).fit(X[:10])  # at the limit: runs
    with pytest.raises(ValueError, match="grow with the square.* 11 points"):
        model.fit(X)
    # a row of weight w is w points of the chain
    model.fit(X[:5], sample_weight=[2, 2, 2, 2, 2])
    with pytest.raises(ValueError, match="grow with the square.* 12 points"):
        model.fit(X[:6], sample_weight=[2, 2, 2, 2, 2, 2])
    monkeypatch.setattr(collapsed_module, "MAX_QUADRATIC_POINTS", 11584)
    with pytest.raises(ValueError, match=match):
        model.fit(np.repeat(X, [11585 - 10] + [1] * 10, axis=0))
    # the default beam is not refused
    model.set_params(permutation_dp="beta", beam_tolerance=1e-32).fit(X)
