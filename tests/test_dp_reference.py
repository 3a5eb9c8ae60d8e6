"""Sanity checks of the exact DP-mixture-of-GM reference in ``_dp_reference.py``.

The reference is checked against closed forms (Bell numbers, Lemma 1, the
CRP's number-of-tables law), an independent brute-force 2-D integration,
normalisation identities (joint marginals and predictives sum to one) and
limits in ``alpha``, so that it can in turn be trusted to check the samplers.
It never imports rankmix.
"""

import itertools
import math
import os
import sys

import numpy as np
import pytest
from scipy import integrate

sys.path.insert(0, os.path.dirname(__file__))
import _dp_reference as dpr  # noqa: E402
import _reference as ref  # noqa: E402

# The case used by the package's sampler test (n = 4, T = 4).
TARGET_X = np.array([[0, 1, 2, 3],
                     [0, 1, 3, 2],
                     [3, 2, 1, 0],
                     [3, 2, -1, -1],
                     [1, 0, -1, -1]])
TARGET_COCLUSTER = np.array([
    [1.00000, 0.66267, 0.09103, 0.09413, 0.57749],
    [0.66267, 1.00000, 0.10009, 0.10458, 0.57732],
    [0.09103, 0.10009, 1.00000, 0.71423, 0.11880],
    [0.09413, 0.10458, 0.71423, 1.00000, 0.11751],
    [0.57749, 0.57732, 0.11880, 0.11751, 1.00000],
])
TARGET_K = np.array([0.0, 0.02533, 0.42502, 0.41318, 0.12501, 0.01146])


# --------------------------------------------------------------- partitions


@pytest.mark.parametrize("N, bell", [(0, 1), (1, 1), (2, 2), (3, 5), (4, 15),
                                     (5, 52), (6, 203)])
def test_number_of_partitions_is_bell(N, bell):
    parts = dpr.set_partitions(N)
    assert len(parts) == bell
    assert len(set(parts)) == bell
    for c in parts:  # each is already canonical (restricted growth)
        assert dpr.canonical_labels(c) == c


def test_canonical_labels():
    assert dpr.canonical_labels([2, 2, 0, 1]) == (0, 0, 1, 2)
    assert dpr.canonical_labels(np.array([5, 3, 5, 3, 9])) == (0, 1, 0, 1, 2)
    assert dpr.canonical_labels([0, 1, 2]) == (0, 1, 2)
    emp = dpr.empirical_partition_distribution([[1, 1, 0], [0, 0, 1], [4, 2, 2]])
    assert emp == {(0, 0, 1): pytest.approx(2 / 3), (0, 1, 1): pytest.approx(1 / 3)}


def _unsigned_stirling1(N):
    """|s(N, k)| for k = 0..N by the recursion c(n+1,k) = n c(n,k) + c(n,k-1)."""
    c = [1]
    for m in range(N):
        new = [0] * (len(c) + 1)
        for k, v in enumerate(c):
            new[k] += m * v
            new[k + 1] += v
        c = new
    return np.array(c, dtype=float)


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.7])
@pytest.mark.parametrize("N", [1, 3, 5, 6])
def test_crp_prior_normalised_and_number_of_tables(N, alpha):
    prior = {c: math.exp(dpr.crp_log_prior(c, alpha)) for c in dpr.set_partitions(N)}
    assert sum(prior.values()) == pytest.approx(1.0, abs=1e-12)
    rising = np.prod([alpha + i for i in range(N)])
    expected = _unsigned_stirling1(N) * alpha ** np.arange(N + 1) / rising
    np.testing.assert_allclose(dpr.n_clusters_distribution(prior), expected,
                               atol=1e-12)


# --------------------------------------------------------- cluster marginal


@pytest.mark.parametrize("n", [2, 3, 4, 5])
@pytest.mark.parametrize("nu, r", [(1.0, 1.0), (0.3, 2.0), (4.0, 0.2),
                                   (1.5, [0.4, 1.0, 2.5, 0.7, 1.0])])
def test_lemma1_single_ranking(n, nu, r):
    rng = np.random.default_rng(n)
    rv = r if np.isscalar(r) else r[:n]
    for t in range(1, n + 1):
        x = rng.permutation(n)[:t]
        got = dpr.log_cluster_marginal([x], n, nu, rv)
        assert got == pytest.approx(math.lgamma(n - t + 1) - math.lgamma(n + 1),
                                    abs=1e-9)
        # T larger than t does not change the value (extra stages give 1).
        got_T = dpr.log_cluster_marginal([x], n, nu, rv, T=n)
        assert got_T == pytest.approx(got, abs=1e-12)


def test_empty_cluster_and_bad_input():
    assert dpr.log_cluster_marginal([], 3, 1.0, 1.0) == 0.0
    with pytest.raises(ValueError):
        dpr.log_cluster_marginal([[0, 1, 2]], 3, 1.0, [1.0, 1.0], T=3)
    with pytest.raises(ValueError):
        dpr.log_cluster_marginal([[0, 1, 2]], 3, 1.0, 1.0, T=2)
    with pytest.raises(ValueError):
        dpr.log_cluster_marginal([[0, 0, 2]], 3, 1.0, 1.0)


def _brute_force_marginal_n3(rankings, nu, r1, r2):
    """m(C) for n = 3 by 2-D quadrature over (theta_1, theta_2), written from scratch.

    Codes are read off the positions in sigma; psi_2, psi_1 are written out;
    the prior normalisers are separate plain quad calls.
    """
    def psi2(th):
        return 1.0 + math.exp(-th) + math.exp(-2 * th)

    def psi1(th):
        return 1.0 + math.exp(-th)

    z1 = integrate.quad(lambda th: math.exp(-nu * r1 * th) * psi2(th) ** -nu,
                        0, np.inf, epsabs=0, epsrel=1e-12, limit=200)[0]
    z2 = integrate.quad(lambda th: math.exp(-nu * r2 * th) * psi1(th) ** -nu,
                        0, np.inf, epsabs=0, epsrel=1e-12, limit=200)[0]
    code_list = []  # per sigma: list of (s1, s2 or None)
    for sigma in itertools.permutations(range(3)):
        pos = {item: k for k, item in enumerate(sigma)}
        cs = []
        for x in rankings:
            s1 = pos[x[0]]
            s2 = None
            if len(x) >= 2:
                s2 = pos[x[1]] - (1 if pos[x[0]] < pos[x[1]] else 0)
            cs.append((s1, s2))
        code_list.append(cs)

    def integrand(th2, th1):
        p1, p2 = psi2(th1), psi1(th2)
        total = 0.0
        for cs in code_list:
            lik = 1.0
            for s1, s2 in cs:
                lik *= math.exp(-th1 * s1) / p1
                if s2 is not None:
                    lik *= math.exp(-th2 * s2) / p2
            total += lik
        prior = (math.exp(-nu * r1 * th1) * p1 ** -nu / z1
                 * math.exp(-nu * r2 * th2) * p2 ** -nu / z2)
        return total / 6.0 * prior

    val, _ = integrate.dblquad(integrand, 0, np.inf, 0, np.inf,
                               epsabs=0, epsrel=1e-10)
    return val


@pytest.mark.parametrize("rankings, nu, r", [
    ([(0, 1, 2), (0, 1, 2)], 1.0, (1.0, 1.0)),
    ([(0, 1, 2), (2, 1, 0)], 0.7, (0.5, 1.3)),
    ([(0, 1, 2), (1,), (1, 0)], 2.0, (1.0, 0.6)),
])
def test_marginal_against_2d_quadrature(rankings, nu, r):
    expected = _brute_force_marginal_n3(rankings, nu, r[0], r[1])
    got = dpr.log_cluster_marginal([list(x) for x in rankings], 3, nu,
                                   [r[0], r[1], 1.0], T=3)
    assert math.exp(got) == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize("n, lengths", [(3, (1, 1)), (3, (2, 3)), (3, (3, 3)),
                                        (3, (1, 3)), (3, (2, 2, 2)),
                                        (3, (1, 3, 2)), (4, (2, 4))])
def test_joint_marginal_sums_to_one(n, lengths):
    """sum over all x, y (, z) of m({x, y (, z)}) = 1: exchangeable joint law."""
    nu, r = 1.3, [0.8, 1.1, 0.5, 1.0]
    total = 0.0
    for combo in itertools.product(*[ref.all_top_t(n, t) for t in lengths]):
        total += math.exp(dpr.log_cluster_marginal([list(x) for x in combo],
                                                   n, nu, r[:n], T=n))
    assert total == pytest.approx(1.0, abs=1e-9)


# ------------------------------------------------------------ posterior


_SMALL_X = [[0, 1, 2], [0, 2, 1], [2, 1, 0], [1, -1, -1]]


@pytest.mark.parametrize("alpha", [0.5, 1.0, 3.0])
def test_posterior_normalised(alpha):
    post = dpr.exact_partition_posterior(_SMALL_X, 3, alpha, 1.0, 1.0)
    assert len(post) == 15
    assert sum(post.values()) == pytest.approx(1.0, abs=1e-12)
    assert all(p >= 0 for p in post.values())
    M = dpr.coclustering_matrix(post)
    np.testing.assert_allclose(M, M.T, atol=1e-14)
    np.testing.assert_allclose(np.diag(M), 1.0, atol=1e-12)
    K = dpr.n_clusters_distribution(post)
    assert K.shape == (5,) and K[0] == 0.0
    assert K.sum() == pytest.approx(1.0, abs=1e-12)


def test_posterior_two_rankings_closed_form():
    X = [[0, 1, 2], [1, 0, -1]]
    alpha, nu, r = 0.8, 1.2, [0.7, 1.4, 1.0]
    post = dpr.exact_partition_posterior(X, 3, alpha, nu, r)
    m12 = math.exp(dpr.log_cluster_marginal(X, 3, nu, r, T=3))
    m1 = math.exp(dpr.log_cluster_marginal(X[:1], 3, nu, r, T=3))
    m2 = math.exp(dpr.log_cluster_marginal(X[1:], 3, nu, r, T=3))
    assert m1 == pytest.approx(1 / 6) and m2 == pytest.approx(1 / 6)
    assert post[(0, 0)] == pytest.approx(m12 / (m12 + alpha * m1 * m2), rel=1e-12)


def test_posterior_alpha_limits():
    big = dpr.exact_partition_posterior(_SMALL_X, 3, 1e9, 1.0, 1.0)
    assert big[(0, 1, 2, 3)] > 0.999
    tiny = dpr.exact_partition_posterior(_SMALL_X, 3, 1e-9, 1.0, 1.0)
    assert tiny[(0, 0, 0, 0)] > 0.999


# ------------------------------------------------------------ predictive


@pytest.mark.parametrize("X, alpha, nu, r", [
    ([[0, 1, 2], [2, 0, -1]], 1.0, 1.0, 1.0),
    ([[0, 1, 2], [0, 2, 1], [1, -1, -1]], 0.5, 2.0, [0.6, 1.5, 1.0]),
])
@pytest.mark.parametrize("t", [1, 2, 3])
def test_predictive_sums_to_one(X, alpha, nu, r, t):
    logs = [dpr.log_predictive(list(x), X, 3, alpha, nu, r)
            for x in ref.all_top_t(3, t)]
    assert sum(math.exp(v) for v in logs) == pytest.approx(1.0, abs=1e-9)
    # Exchangeability: P(x | X) = P(X, x) / P(X), computed another way.
    ev = dpr.log_evidence(X, 3, alpha, nu, r)
    for x, v in zip(ref.all_top_t(3, t), logs):
        ev_x = dpr.log_evidence(list(X) + [list(x) + [-1] * (3 - t)],
                                3, alpha, nu, r)
        assert v == pytest.approx(ev_x - ev, abs=1e-10)


def test_predictive_n4_and_empty_data():
    X = [[0, 1, 2, 3], [3, 2, -1, -1]]
    total = sum(math.exp(dpr.log_predictive(list(x), X, 4, 1.0, 1.0, 1.0))
                for x in ref.all_top_t(4, 2))
    assert total == pytest.approx(1.0, abs=1e-9)
    assert dpr.log_predictive([2, 0], [], 4, 1.0, 1.0, 1.0) == pytest.approx(
        math.log(2 / 24), abs=1e-10)


# ----------------------------------------------------- the sampler-test case


def test_target_case_posterior(capsys):
    post = dpr.exact_partition_posterior(TARGET_X, 4, 1.0, 1.0, 1.0)
    M = dpr.coclustering_matrix(post)
    K = dpr.n_clusters_distribution(post)
    with capsys.disabled():
        with np.printoptions(precision=5, suppress=True):
            print("\nexact co-clustering matrix (n=4, alpha=nu=r=1):\n", M)
            print("exact P(K = 0..5):", K)
    assert sum(post.values()) == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(M, TARGET_COCLUSTER, atol=6e-6)
    np.testing.assert_allclose(K, TARGET_K, atol=6e-6)
