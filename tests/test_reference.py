"""Sanity checks of the plain reference implementation in ``_reference.py``.

These tests check the reference against closed forms, hand-computed values
and identities between independently written functions, so that it can in
turn be trusted to check the Cython kernels.
"""

import functools
import math
import os
import sys

import numpy as np
import pytest
from scipy import integrate, stats

sys.path.insert(0, os.path.dirname(__file__))
import _reference as ref  # noqa: E402


def _random_dataset(rng, n, n_rows, min_t=1):
    """Rankings of random lengths in ``min_t..n``, padded with -1 to width n."""
    X = np.full((n_rows, n), -1, dtype=np.int64)
    for i in range(n_rows):
        t = rng.integers(min_t, n + 1)
        X[i, :t] = rng.permutation(n)[:t]
    return X


# --------------------------------------------------------------------------- psi


@pytest.mark.parametrize("m", [0, 1, 2, 5])
@pytest.mark.parametrize("theta", [1e-9, 0.3, 1.0, 7.5, 40.0])
def test_log_psi_matches_closed_form(m, theta):
    closed = math.expm1(-(m + 1) * theta) / math.expm1(-theta)
    assert ref.log_psi(m, theta) == pytest.approx(math.log(closed), rel=1e-9)
    assert ref._log_psi_scalar(m, theta) == pytest.approx(math.log(closed), rel=1e-9)


def test_log_psi_at_zero_negative_and_vectorised():
    assert ref.log_psi(4, 0.0) == pytest.approx(math.log(5))
    # negative theta: direct sum, no overflow problems for moderate values
    assert ref.log_psi(3, -2.0) == pytest.approx(
        math.log(sum(math.exp(2.0 * k) for k in range(4))))
    th = np.array([0.0, 0.5, 3.0])
    np.testing.assert_allclose(ref.log_psi(2, th),
                               [ref.log_psi(2, v) for v in th])
    assert ref.log_psi(0, 123.0) == 0.0


# ------------------------------------------------------------------------- codes


def test_codes_hand_example():
    sigma = [2, 0, 3, 1]
    # x = (1, 3): s_1 = #items before 1 in sigma = 3;
    # s_2 = #items other than 1 before 3 in sigma = 2 (2 and 0)
    assert ref.codes([1, 3], sigma) == [3, 2]
    assert ref.codes([1, 3, -1, -1], sigma) == [3, 2]
    assert ref.codes(sigma, sigma) == [0, 0, 0, 0]
    assert ref.codes([0, 2, 1, 3], sigma) == [1, 0, 1, 0]


def test_codes_range_and_bijection():
    # For a fixed sigma, x -> (s_1..s_t) is a bijection from top-t rankings
    # onto prod_j {0..n-j}.
    n = 4
    sigma = (3, 1, 0, 2)
    for t in range(1, n + 1):
        seen = set()
        for x in ref.all_top_t(n, t):
            c = tuple(ref.codes(x, sigma))
            assert all(0 <= c[j] <= n - 1 - j for j in range(t))
            seen.add(c)
        assert len(seen) == math.perm(n, t)


def test_codes_array_padding():
    X = np.array([[1, 3, -1, -1], [0, 2, 1, 3]])
    out = ref.codes_array(X, [2, 0, 3, 1])
    np.testing.assert_array_equal(out, [[3, 2, -1, -1], [1, 0, 1, 0]])


def test_invalid_rankings_raise():
    with pytest.raises(ValueError, match="repeats"):
        ref.codes([1, 1], [0, 1, 2])
    with pytest.raises(ValueError, match="outside"):
        ref.codes([1, -1, 2], [0, 1, 2])
    with pytest.raises(ValueError, match="permutation"):
        ref.codes([1], [0, 0, 2])


# ---------------------------------------------------------------------- Kendall


@pytest.mark.parametrize("n", [2, 3, 4])
def test_kendall_equals_sum_of_codes(n):
    rng = np.random.default_rng(0)
    for _ in range(3):
        sigma = tuple(rng.permutation(n))
        for t in range(n + 1):
            for x in ref.all_top_t(n, t):
                assert ref.kendall_distance(x, sigma) == sum(ref.codes(x, sigma))


def test_kendall_full_rankings_is_symmetric_discordance():
    n = 4
    for x in ref.all_permutations(n):
        for s in [(0, 1, 2, 3), (2, 3, 0, 1)]:
            d = ref.kendall_distance(x, s)
            assert d == ref.kendall_distance(s, x)
            # discordant pairs via positions, a third formulation
            px = np.argsort(x)
            ps = np.argsort(s)
            disc = sum((px[a] - px[b]) * (ps[a] - ps[b]) < 0
                       for a in range(n) for b in range(a + 1, n))
            assert d == disc
    assert ref.kendall_distance((3, 2, 1, 0), (0, 1, 2, 3)) == 6


# ------------------------------------------------------------------ GM pmf


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_gm_pmf_sums_to_one_for_every_t(n):
    rng = np.random.default_rng(n)
    for theta in [rng.uniform(0, 3, size=n), np.zeros(n),
                  rng.uniform(-0.5, 2, size=n)]:
        sigma = tuple(rng.permutation(n))
        for t in range(1, n + 1):
            table = ref.gm_pmf_table(sigma, theta, t)
            assert len(table) == math.perm(n, t)
            assert sum(table.values()) == pytest.approx(1.0, abs=1e-12)
            assert max(table, key=table.get) == sigma[:t] or np.any(theta <= 0)


def test_gm_uniform_at_theta_zero_and_code_marginals():
    n, t = 4, 3
    table = ref.gm_pmf_table((1, 0, 3, 2), np.zeros(n), t)
    np.testing.assert_allclose(list(table.values()), (n - t) / math.factorial(n))
    theta = np.array([0.7, 1.9, 0.2])
    sigma = (2, 0, 3, 1)
    table = ref.gm_pmf_table(sigma, theta, t)
    for j in range(t):
        marg = np.zeros(n - j)
        for x, p in table.items():
            marg[ref.codes(x, sigma)[j]] += p
        np.testing.assert_allclose(marg, ref.gm_code_pmf(theta[j], n - j - 1))


def test_full_ranking_needs_no_last_theta():
    sigma = (2, 1, 0)
    x = (1, 2, 0)
    assert ref.gm_log_likelihood(x, sigma, [0.4, 1.1]) == pytest.approx(
        ref.gm_log_likelihood(x, sigma, [0.4, 1.1, 99.0]))
    with pytest.raises(ValueError, match="stage 2"):
        ref.gm_log_likelihood(x, sigma, [0.4])


def test_log_likelihood_array_matches_rows():
    rng = np.random.default_rng(1)
    X = _random_dataset(rng, 5, 8)
    sigma = rng.permutation(5)
    theta = rng.uniform(0, 2, size=5)
    out = ref.gm_log_likelihood_array(X, sigma, theta)
    for i, row in enumerate(X):
        s = ref.codes(row, sigma)
        expect = sum(-theta[j] * s[j] - ref.log_psi(5 - j - 1, theta[j])
                     for j in range(len(s)))
        assert out[i] == pytest.approx(expect)


# --------------------------------------------------------------- energy


@pytest.mark.parametrize("n", [3, 4, 5])
def test_energy_code_form_equals_matrix_form(n):
    rng = np.random.default_rng(10 + n)
    X = _random_dataset(rng, n, 6)
    theta = rng.uniform(0, 2, size=n)
    R = ref.sufficient_matrix(X, theta, n)
    assert np.all(np.diag(R) == 0)
    for sigma in ref.all_permutations(n):
        assert ref.energy(sigma, X, theta) == pytest.approx(
            ref.energy_from_matrix(sigma, R), abs=1e-12)


def test_energy_equal_theta_is_sum_of_kendall_distances():
    rng = np.random.default_rng(3)
    n = 4
    X = _random_dataset(rng, n, 5)
    for sigma in ref.all_permutations(n):
        total = sum(ref.kendall_distance(x, sigma) for x in ref.as_rankings(X, n))
        assert ref.energy(sigma, X, np.full(n, 0.8)) == pytest.approx(0.8 * total)


def test_sufficient_matrix_hand_example():
    R = ref.sufficient_matrix([[0, 1, 2]], [1.0, 0.3, 0.7], 3)
    np.testing.assert_allclose(R, [[0, 1, 1], [0, 0, 0.3], [0, 0, 0]])
    R = ref.sufficient_matrix([[2, -1, -1]], [0.5], 3)
    np.testing.assert_allclose(R, [[0, 0, 0], [0, 0, 0], [0.5, 0.5, 0]])


# -------------------------------------------------- exact conditional of sigma


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_exact_posterior_matches_normalised_likelihood(n):
    # exp(-L_sigma) must be proportional to prod_x GM(x | sigma, theta): the
    # log psi terms do not depend on sigma.
    rng = np.random.default_rng(20 + n)
    X = _random_dataset(rng, n, 4)
    theta = rng.uniform(0, 1.5, size=n)
    post = ref.exact_sigma_posterior(X, theta, n)
    assert len(post) == math.factorial(n)
    assert sum(post.values()) == pytest.approx(1.0, abs=1e-12)
    loglik = {s: ref.gm_log_likelihood_array(X, s, theta).sum() for s in post}
    top = max(loglik.values())
    z = sum(math.exp(v - top) for v in loglik.values())
    for s, p in post.items():
        assert p == pytest.approx(math.exp(loglik[s] - top) / z, rel=1e-10)


def test_exact_posterior_no_data_is_uniform():
    post = ref.exact_sigma_posterior(np.empty((0, 3), dtype=int), [1.0, 1.0], 3)
    np.testing.assert_allclose(list(post.values()), 1 / 6)


# --------------------------------------------------------------- stagewise


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_stagewise_distribution_sums_to_one(n):
    rng = np.random.default_rng(30 + n)
    X = _random_dataset(rng, n, 5)
    theta = rng.uniform(0, 2, size=n)
    prop = ref.stagewise_proposal_distribution(X, theta, n)
    assert len(prop) == math.factorial(n)
    assert sum(prop.values()) == pytest.approx(1.0, abs=1e-12)
    for s in list(prop)[:10]:
        assert ref.stagewise_proposal_logprob(s, X, theta, n) == pytest.approx(
            math.log(prop[s]))


def test_stagewise_no_data_or_zero_tail_is_uniform():
    prop = ref.stagewise_proposal_distribution(np.empty((0, 4), int), [1.0] * 4, 4)
    np.testing.assert_allclose(list(prop.values()), 1 / 24)
    # a top-1 ranking: after item 0 is placed (or not) the rest is uniform
    prop = ref.stagewise_proposal_distribution([[0]], [2.0], 3)
    first = ref.first_item_distribution(prop)
    np.testing.assert_allclose(first, np.array([1, math.exp(-2), math.exp(-2)])
                               / (1 + 2 * math.exp(-2)))


@pytest.mark.parametrize("n", [3, 4])
def test_stagewise_exact_for_single_full_ranking_equal_theta(n):
    # Design note: exact for a single (full) ranking with equal theta_j.
    x = tuple(np.random.default_rng(n).permutation(n))
    theta = np.full(n, 0.9)
    exact = ref.exact_sigma_posterior([x], theta, n)
    prop = ref.stagewise_proposal_distribution([x], theta, n)
    assert ref.total_variation(exact, prop) < 1e-12


def test_stagewise_is_not_exact_in_general():
    theta = [1.0, 0.3, 0.7]
    exact = ref.exact_sigma_posterior([[0, 1, 2]], theta, 3)
    prop = ref.stagewise_proposal_distribution([[0, 1, 2]], theta, 3)
    assert ref.total_variation(exact, prop) > 0.03


def test_design_document_example():
    # One full ranking (0, 1, 2), n = 3, theta = (1.0, 0.3) (theta_3 irrelevant).
    e1, e2, e3, e13, e23 = (math.exp(-v) for v in (1.0, 2.0, 0.3, 1.3, 2.3))
    exact_closed = np.array([1 + e3, e1 + e2, e13 + e23])
    exact_closed /= exact_closed.sum()
    stage_closed = np.array([1.0, e1, e13]) / (1 + e1 + e13)
    for X, theta in [([[0, 1, 2]], [1.0, 0.3, 0.7]),
                     ([[0, 1, 2]], [1.0, 0.3]),
                     ([[0, 1, -1]], [1.0, 0.3])]:
        exact = ref.first_item_distribution(ref.exact_sigma_posterior(X, theta, 3))
        stage = ref.first_item_distribution(
            ref.stagewise_proposal_distribution(X, theta, 3))
        np.testing.assert_allclose(exact, exact_closed, rtol=1e-12)
        np.testing.assert_allclose(stage, stage_closed, rtol=1e-12)
        # The design document's 3-decimal values. Exact P(sigma[0] = 2) is
        # 0.142459..., which rounds to 0.142; the document prints 0.143.
        np.testing.assert_allclose(exact, [0.665, 0.192, 0.143], atol=6e-4)
        np.testing.assert_allclose(np.round(exact, 3), [0.665, 0.192, 0.142])
        np.testing.assert_allclose(np.round(stage, 3), [0.610, 0.224, 0.166])


def test_stagewise_sample_matches_distribution():
    rng = np.random.default_rng(5)
    X = [[0, 1, 2], [1, 0, -1]]
    theta = [0.8, 0.4]
    prop = ref.stagewise_proposal_distribution(X, theta, 3)
    draws = []
    for _ in range(1500):
        s, logp = ref.stagewise_sample(X, theta, 3, rng)
        assert logp == pytest.approx(math.log(prop[tuple(s)]))
        draws.append(s)
    emp = ref.empirical_distribution(draws)
    keys = list(prop)
    counts = np.array([emp.get(k, 0.0) for k in keys]) * len(draws)
    expected = np.array([prop[k] for k in keys]) * len(draws)
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_rank_marginals_are_doubly_stochastic():
    rng = np.random.default_rng(6)
    X = _random_dataset(rng, 4, 3)
    M = ref.rank_marginals(ref.exact_sigma_posterior(X, [1.0, 0.5, 0.2, 0.1], 4))
    np.testing.assert_allclose(M.sum(axis=0), 1)
    np.testing.assert_allclose(M.sum(axis=1), 1)


# ----------------------------------------------------------- theta target

THETA_PARAMS = [
    (2.0, 1.0, 3),  # mode at 0 (a >= b m / 2)
    (1.0, 5.0, 4),  # interior mode
    (0.5, 2.0, 1),  # interior mode, m = 1
    (5000.0, 3000.0, 5),  # very concentrated
    (3.0, 2.0, 0),  # m = 0: exponential(a)
]


@pytest.mark.parametrize("a", [0.5, 3.0, 5000.0])
@pytest.mark.parametrize("b, m", [(0.0, 4), (7.0, 0)])
def test_theta_normalizer_closed_form(a, b, m):
    # b = 0 or m = 0: the target is exp(-a theta), Z = 1 / a
    assert ref.theta_log_normalizer(a, b, m) == pytest.approx(-math.log(a), rel=1e-10)


@pytest.mark.parametrize("a, b, m", [(0.7, 2.0, 2), (1.5, 6.0, 5),
                                     (5000.0, 3000.0, 5), (20.0, 3.5, 3)])
def test_theta_normalizer_recursion(a, b, m):
    # sum_{s=0}^{m} Z(a + s, b, m) = integral e^{-a theta} psi_m^{1-b} = Z(a, b - 1, m)
    # (the identity behind Lemma 1 of the paper).
    lhs = [ref.theta_log_normalizer(a + s, b, m) for s in range(m + 1)]
    top = max(lhs)
    lhs = top + math.log(sum(math.exp(v - top) for v in lhs))
    assert lhs == pytest.approx(ref.theta_log_normalizer(a, b - 1, m), rel=1e-9)


@pytest.mark.parametrize("a, b, m", THETA_PARAMS)
def test_theta_density_integrates_to_one(a, b, m):
    # independent quadrature: composite Simpson on a dense grid over the support
    mode, top, lo, hi = ref._theta_support(a, b, m)
    grid = np.linspace(lo, hi, 20001)
    total = integrate.simpson(ref.theta_pdf(grid, a, b, m), x=grid)
    assert total == pytest.approx(1.0, abs=1e-8)
    assert ref.theta_cdf(0.0, a, b, m) == 0.0
    assert ref.theta_cdf(hi, a, b, m) == pytest.approx(1.0, abs=1e-12)
    assert ref.theta_log_density(-0.1, a, b, m) == -np.inf


def test_theta_mode_is_stationary_point():
    a, b, m = 1.0, 5.0, 4
    mode = ref.theta_mode(a, b, m)
    h = 1e-6
    f = ref.theta_log_density
    assert f(mode, a, b, m) > f(mode - h, a, b, m)
    assert f(mode, a, b, m) > f(mode + h, a, b, m)
    assert ref.theta_mode(2.0, 1.0, 3) == 0.0


@pytest.mark.parametrize("a, b, m", THETA_PARAMS)
def test_theta_sample_exact_ks(a, b, m):
    rng = np.random.default_rng(2024)
    draws = ref.theta_sample_exact(400, a, b, m, rng)
    assert np.all(draws >= 0)
    res = stats.kstest(draws, lambda x: ref.theta_cdf(x, a, b, m))
    assert res.pvalue > 1e-3


def test_theta_sample_exact_is_inverse_cdf():
    # Same seed -> same uniforms: the CDF of each draw gives back its uniform.
    a, b, m = 1.0, 5.0, 4
    draws = ref.theta_sample_exact(50, a, b, m, np.random.default_rng(7))
    u = np.random.default_rng(7).uniform(size=50)
    np.testing.assert_allclose(ref.theta_cdf(draws, a, b, m), u, atol=1e-9)
    # RandomState and int seeds are accepted too
    assert ref.theta_sample_exact(3, a, b, m, np.random.RandomState(0)).shape == (3,)
    assert ref.theta_sample_exact(3, a, b, m, 0).shape == (3,)


def test_lemma1_prior_predictive():
    # Lemma 1: under the conjugate prior with uniform sigma, one top-t ranking
    # has prior predictive probability (n - t)! / n!.
    n, nu, r = 4, 1.5, 0.8
    log_z = functools.lru_cache(maxsize=None)(ref.theta_log_normalizer)
    for x in [(2, 0), (1, 3, 0, 2), (3,)]:
        t = len(x)
        total = 0.0
        for sigma in ref.all_permutations(n):
            s = ref.codes(x, sigma)
            logp = sum(log_z(nu * r + s[j], nu + 1, n - j - 1)
                       - log_z(nu * r, nu, n - j - 1)
                       for j in range(t) if n - j - 1 > 0)
            total += math.exp(logp) / math.factorial(n)
        assert total == pytest.approx(math.factorial(n - t) / math.factorial(n),
                                      rel=1e-8)
