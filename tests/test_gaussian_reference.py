"""Sanity checks of the exact Gaussian DP-mixture reference ``_gaussian_reference.py``.

The reference is checked against independent computations -- the chain rule of
sequential Student-t predictives (``scipy.stats.multivariate_t``, rank-one
updates), brute-force 2-D integration of likelihood times prior
(``scipy.integrate.dblquad``), Chib's identity with ``scipy.stats.invwishart``
-- and against normalisation identities (posteriors sum to one, predictive
densities integrate to one, the alpha-integrated posterior matches a fine grid
over alpha), so that it can in turn be trusted to check the samplers. The
Liang, Jordan & Taskar (2007) brute-force enumeration is checked against the
counts implied by the paper (2^(N-1) consistent clusterings per ordering,
|Pi(C)| = |C|! prod |c|! of Eq. 3), the paper's own dynamic-programming
recursions (Section 3.1 and Eq. 6) and the invariance of the exact posterior
under the augmented blocked Gibbs sweep. It never imports rankmix.
"""

import itertools
import math
import os
import sys

import numpy as np
import pytest
from scipy import integrate, stats

sys.path.insert(0, os.path.dirname(__file__))
import _dp_reference as dpr  # noqa: E402
import _gaussian_reference as gr  # noqa: E402

BELL = [1, 1, 2, 5, 15, 52, 203, 877]

# Tiny data sets used below (fixed numbers, no RNG dependence).
X1 = np.array([[0.3], [-1.2], [0.9], [2.6], [2.2]])
X2 = np.array([[0.1, -0.4], [0.5, 0.2], [2.0, 1.6], [2.3, 1.2], [-1.0, 0.7]])
X3 = np.array([[0.1, -0.4, 1.0], [0.5, 0.2, 0.8], [2.0, 1.6, -0.3], [2.3, 1.2, 0.1]])
PSI2 = np.array([[1.0, 0.3], [0.3, 0.5]])
PSI3 = np.array([[1.0, 0.2, 0.0], [0.2, 0.7, -0.1], [0.0, -0.1, 1.5]])

# (X, m0, kappa0, nu0, Psi0) for the full model
FULL_CASES = [
    (X1, 0.0, 1.0, 3.0, np.array([[1.0]])),
    (X1, 0.5, 0.2, 0.7, np.array([[2.5]])),  # nu0 < 1 allowed for d = 1
    (X2, np.array([0.2, -0.1]), 0.5, 2.5, PSI2),
    (X2, 0.0, 3.0, 1.2, 0.4 * np.eye(2)),  # nu0 in (d - 1, d]
    (X3, np.array([0.0, 0.5, 0.0]), 0.8, 4.0, PSI3),
]


# ---------------------------------------------------------------- helpers


def chain_rule_log_marginal(X_C, m0, kappa0, nu0, Psi0):
    """``sum_i log t(x_i | x_1..x_{i-1})`` with sequential (rank-one) NIW updates.

    Independent of the reference's batch formulas: the NIW parameters are
    updated one point at a time (``Psi <- Psi + k/(k+1) (x-m)(x-m)^T``,
    ``m <- (k m + x)/(k+1)``) and the predictive is
    ``scipy.stats.multivariate_t``.
    """
    X_C = np.asarray(X_C, dtype=float)
    d = X_C.shape[1]
    m = np.broadcast_to(np.asarray(m0, dtype=float), (d,)).copy()
    P = np.array(Psi0, dtype=float).reshape(d, d)
    k, v = float(kappa0), float(nu0)
    total = 0.0
    for x in X_C:
        df = v - d + 1
        shape = P * (k + 1) / (k * df)
        total += float(stats.multivariate_t(loc=m, shape=shape, df=df).logpdf(x))
        r = (x - m)[:, None]
        P = P + k / (k + 1) * (r @ r.T)
        m = (k * m + x) / (k + 1)
        k += 1
        v += 1
    return total


def _norm_logpdf(x, mu, var):
    """Plain normal log density (checked against scipy.stats.norm below)."""
    return -0.5 * math.log(2 * math.pi * var) - 0.5 * (x - mu) ** 2 / var


def _invgamma_logpdf(s2, shape, scale):
    """Plain inverse-gamma log density (checked against scipy.stats.invgamma)."""
    return (
        shape * math.log(scale)
        - math.lgamma(shape)
        - (shape + 1) * math.log(s2)
        - scale / s2
    )


def dblquad_log_marginal(x, m0, kappa0, nu0, psi0):
    """``log int int prod_i N(x_i; mu, s2) N(mu; m0, s2/kappa0)
    InvGamma(s2; nu0/2, psi0/2)``.

    d = 1 only. Outer variable ``t = log s2`` (Jacobian ``s2``), inner ``mu``;
    the windows are generous (centred with elementary data summaries) and the
    outer range is split so that ``quad`` cannot miss the peak.
    """
    x = np.asarray(x, dtype=float).ravel()
    n = len(x)
    kn = kappa0 + n
    mc = (kappa0 * m0 + x.sum()) / kn
    spread = psi0 + ((x - x.mean()) ** 2).sum() + kappa0 * n / kn * (x.mean() - m0) ** 2
    tc = math.log(spread / (nu0 + n + 2))

    def log_f(mu, t):
        s2 = math.exp(t)
        return (
            sum(_norm_logpdf(xi, mu, s2) for xi in x)
            + _norm_logpdf(mu, m0, s2 / kappa0)
            + _invgamma_logpdf(s2, 0.5 * nu0, 0.5 * psi0)
            + t
        )

    log_f0 = log_f(mc, tc)  # rescale so that the integral is O(1)

    def f(mu, t):
        return math.exp(log_f(mu, t) - log_f0)

    def lo(t):
        return mc - 10 * math.sqrt(math.exp(t) / kn)

    def hi(t):
        return mc + 10 * math.sqrt(math.exp(t) / kn)

    edges = [tc - 30, tc - 2, tc + 2, tc + 30]
    total = 0.0
    for a, b in zip(edges[:-1], edges[1:]):
        total += integrate.dblquad(f, a, b, lo, hi, epsabs=1e-10, epsrel=1e-8)[0]
    return math.log(total) + log_f0


def sinh_grid(center, scale, half_width_u, n):
    """1-D nodes ``center + scale sinh(u)`` and trapezoid weights (incl. Jacobian)."""
    u = np.linspace(-half_width_u, half_width_u, n)
    du = u[1] - u[0]
    w = np.full(n, du)
    w[0] = w[-1] = du / 2
    return center + scale * np.sinh(u), w * scale * np.cosh(u)


# ------------------------------------------------------- single cluster


def test_elementary_densities_match_scipy():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x, mu = rng.normal(size=2)
        var, shape, scale = rng.uniform(0.1, 3.0, size=3)
        assert _norm_logpdf(x, mu, var) == pytest.approx(
            stats.norm.logpdf(x, mu, math.sqrt(var)), abs=1e-12
        )
        assert _invgamma_logpdf(var, shape, scale) == pytest.approx(
            stats.invgamma.logpdf(var, shape, scale=scale), abs=1e-12
        )


def test_invwishart_1d_is_invgamma():
    """The diag model's per-dimension prior: InvWishart_1(df, psi) =
    InvGamma(df/2, psi/2)."""
    for nu0, psi in [(3.0, 1.0), (0.7, 2.5), (5.5, 0.3)]:
        s2 = np.array([0.05, 0.4, 1.0, 3.7])
        iw = [stats.invwishart(df=nu0, scale=psi).logpdf(v) for v in s2]
        ig = stats.invgamma.logpdf(s2, 0.5 * nu0, scale=0.5 * psi)
        np.testing.assert_allclose(iw, ig, rtol=0, atol=1e-10)


def test_empty_cluster_has_log_marginal_zero():
    assert gr.log_marginal_full(np.zeros((0, 2)), 0.0, 1.0, 3.0, PSI2) == 0.0
    assert gr.log_marginal_diag(np.zeros((0, 2)), 0.0, 1.0, 3.0, [1, 2]) == 0.0
    assert gr.log_marginal(np.zeros((0, 1)), "full", 0.0, 1.0, 3.0, 1.0) == 0.0


@pytest.mark.parametrize("case", range(len(FULL_CASES)))
def test_closed_form_matches_chain_rule(case):
    X, m0, kappa0, nu0, Psi0 = FULL_CASES[case]
    for n in range(1, X.shape[0] + 1):
        for rows in itertools.combinations(range(X.shape[0]), n):
            Xc = X[list(rows)]
            closed = gr.log_marginal_full(Xc, m0, kappa0, nu0, Psi0)
            chain = chain_rule_log_marginal(Xc, m0, kappa0, nu0, Psi0)
            assert closed == pytest.approx(chain, abs=1e-8)
            # the chain rule in reverse order too (exchangeability)
            chain_rev = chain_rule_log_marginal(Xc[::-1], m0, kappa0, nu0, Psi0)
            assert closed == pytest.approx(chain_rev, abs=1e-8)


def test_diag_closed_form_matches_chain_rule():
    m0, kappa0, nu0, psi0 = np.array([0.0, 0.5]), 0.7, 2.2, np.array([1.3, 0.4])
    for rows in [(0,), (1, 2), (0, 2, 3), (0, 1, 2, 3, 4)]:
        Xc = X2[list(rows)]
        want = sum(
            chain_rule_log_marginal(Xc[:, [k]], m0[k], kappa0, nu0, [[psi0[k]]])
            for k in range(2)
        )
        assert gr.log_marginal_diag(Xc, m0, kappa0, nu0, psi0) == pytest.approx(
            want, abs=1e-8
        )


@pytest.mark.parametrize(
    "x, prior",
    [
        ([0.3], (0.0, 1.0, 3.0, 1.0)),
        ([0.3, -1.2], (0.5, 0.5, 2.5, 2.0)),
        ([2.0, 2.5], (0.0, 2.0, 1.5, 0.3)),
    ],
)
def test_closed_form_matches_dblquad_d1(x, prior):
    m0, kappa0, nu0, psi0 = prior
    Xc = np.array(x)[:, None]
    want = dblquad_log_marginal(x, m0, kappa0, nu0, psi0)
    assert gr.log_marginal_full(Xc, m0, kappa0, nu0, [[psi0]]) == pytest.approx(
        want, abs=1e-6
    )
    assert gr.log_marginal_diag(Xc, m0, kappa0, nu0, [psi0]) == pytest.approx(
        want, abs=1e-6
    )


@pytest.mark.parametrize("case", [2, 3, 4])
def test_closed_form_matches_chib_identity(case):
    """``p(X) = p(X | mu, S) p(mu, S) / p(mu, S | X)`` at arbitrary (mu, S).

    Ties the NIW convention (and the posterior update) to
    ``scipy.stats.invwishart(df, scale)`` and ``multivariate_normal`` in d > 1.
    """
    X, m0, kappa0, nu0, Psi0 = FULL_CASES[case]
    d = X.shape[1]
    m0v = np.broadcast_to(np.asarray(m0, float), (d,))
    m_n, k_n, nu_n, Psi_n = gr.niw_posterior(X, m0, kappa0, nu0, Psi0)
    closed = gr.log_marginal_full(X, m0, kappa0, nu0, Psi0)
    rng = np.random.default_rng(case)
    for _ in range(3):
        A = rng.normal(size=(d, d))
        S = A @ A.T + 0.5 * np.eye(d)
        mu = rng.normal(size=d)
        loglik = stats.multivariate_normal(mu, S).logpdf(X).sum()
        logprior = stats.invwishart(df=nu0, scale=Psi0).logpdf(
            S
        ) + stats.multivariate_normal(m0v, S / kappa0).logpdf(mu)
        logpost = stats.invwishart(df=nu_n, scale=Psi_n).logpdf(
            S
        ) + stats.multivariate_normal(m_n, S / k_n).logpdf(mu)
        assert closed == pytest.approx(loglik + logprior - logpost, abs=1e-8)


def test_diag_equals_full_in_one_dimension():
    for X, m0, kappa0, nu0, Psi0 in FULL_CASES[:2]:
        for rows in [(0,), (1, 3), (0, 1, 2, 3, 4)]:
            Xc = X[list(rows)]
            assert gr.log_marginal_diag(
                Xc, m0, kappa0, nu0, [Psi0[0, 0]]
            ) == pytest.approx(
                gr.log_marginal_full(Xc, m0, kappa0, nu0, Psi0), abs=1e-12
            )
        x = np.array([0.4])
        assert gr.log_posterior_predictive(
            x, X[:3], "diag", m0, kappa0, nu0, [Psi0[0, 0]]
        ) == pytest.approx(
            gr.log_posterior_predictive(x, X[:3], "full", m0, kappa0, nu0, Psi0),
            abs=1e-12,
        )
        post_d = gr.exact_partition_posterior(
            X, 1.3, "diag", m0, kappa0, nu0, [Psi0[0, 0]]
        )
        post_f = gr.exact_partition_posterior(X, 1.3, "full", m0, kappa0, nu0, Psi0)
        for c in post_f:
            assert post_d[c] == pytest.approx(post_f[c], abs=1e-12)


def test_diag_is_sum_over_columns_and_full_with_diagonal_scale_differs():
    psi0 = np.array([1.3, 0.4])
    want = sum(
        gr.log_marginal_full(X2[:, [k]], 0.1, 0.7, 2.2, [[psi0[k]]]) for k in range(2)
    )
    assert gr.log_marginal_diag(X2, 0.1, 0.7, 2.2, psi0) == pytest.approx(
        want, abs=1e-12
    )
    # the full model with a diagonal scale is NOT the diag model when d > 1
    assert abs(gr.log_marginal_full(X2, 0.1, 0.7, 2.2, np.diag(psi0)) - want) > 1e-3


def test_student_t_matches_scipy():
    rng = np.random.default_rng(1)
    for d, df in [(1, 0.7), (1, 4.0), (2, 2.5), (3, 6.0)]:
        A = rng.normal(size=(d, d))
        shape = A @ A.T + 0.3 * np.eye(d)
        loc = rng.normal(size=d)
        pts = rng.normal(size=(6, d)) * 2
        want = stats.multivariate_t(loc=loc, shape=shape, df=df).logpdf(pts)
        np.testing.assert_allclose(
            gr.student_t_logpdf(pts, loc, shape, df), want, rtol=0, atol=1e-10
        )
        if d == 1:
            want1 = stats.t.logpdf(
                pts[:, 0], df=df, loc=loc[0], scale=math.sqrt(shape[0, 0])
            )
            np.testing.assert_allclose(
                gr.student_t_logpdf(pts, loc, shape, df), want1, rtol=0, atol=1e-10
            )


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_predictive_is_ratio_of_marginals(covariance_type):
    m0, kappa0, nu0 = np.array([0.2, -0.1]), 0.5, 2.5
    psi0 = PSI2 if covariance_type == "full" else np.array([1.0, 0.5])
    x = np.array([0.7, 0.3])
    for rows in [(), (0,), (2, 3), (0, 1, 4)]:
        Xc = X2[list(rows)].reshape(len(rows), 2)
        want = gr.log_marginal(
            np.vstack([Xc, x]), covariance_type, m0, kappa0, nu0, psi0
        ) - gr.log_marginal(Xc, covariance_type, m0, kappa0, nu0, psi0)
        got = gr.log_posterior_predictive(x, Xc, covariance_type, m0, kappa0, nu0, psi0)
        assert got == pytest.approx(want, abs=1e-10)
        # vectorised form
        many = gr.log_posterior_predictive(
            np.vstack([x, x + 1]), Xc, covariance_type, m0, kappa0, nu0, psi0
        )
        assert many.shape == (2,) and many[0] == pytest.approx(got, abs=1e-12)
    prior = gr.log_prior_predictive(x, covariance_type, m0, kappa0, nu0, psi0)
    assert prior == pytest.approx(
        gr.log_marginal(x[None, :], covariance_type, m0, kappa0, nu0, psi0), abs=1e-10
    )


# --------------------------------------------- exact posterior over clusterings


@pytest.mark.parametrize("N", range(1, 8))
def test_number_of_partitions_is_bell(N):
    X = np.linspace(-1.0, 2.0, N)[:, None] * np.array([1.0, 0.5])
    post = gr.exact_partition_posterior(X, 0.8, "full", 0.0, 1.0, 3.0, PSI2)
    assert len(post) == BELL[N]
    assert set(post) == set(dpr.set_partitions(N))
    assert sum(post.values()) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_posterior_sums_to_one_and_matches_bruteforce(covariance_type):
    psi0 = PSI2 if covariance_type == "full" else np.array([1.0, 0.5])
    alpha = 0.9
    post = gr.exact_partition_posterior(X2, alpha, covariance_type, 0.0, 0.5, 2.5, psi0)
    assert sum(post.values()) == pytest.approx(1.0, abs=1e-12)
    # unnormalised weights straight from the definition
    logw = {}
    for c in dpr.set_partitions(len(X2)):
        logw[c] = dpr.crp_log_prior(c, alpha) + sum(
            gr.log_marginal(X2[list(b)], covariance_type, 0.0, 0.5, 2.5, psi0)
            for b in gr.blocks(c)
        )
    top = max(logw.values())
    Z = sum(math.exp(v - top) for v in logw.values())
    for c, v in logw.items():
        assert post[c] == pytest.approx(math.exp(v - top) / Z, abs=1e-12)
    assert gr.log_evidence(
        X2, alpha, covariance_type, 0.0, 0.5, 2.5, psi0
    ) == pytest.approx(top + math.log(Z), abs=1e-10)


def test_two_points_closed_form():
    X = X2[:2]
    alpha = 1.7
    args = ("full", 0.0, 1.0, 3.0, PSI2)
    post = gr.exact_partition_posterior(X, alpha, *args)
    lm = lambda Y: gr.log_marginal(Y, *args)  # noqa: E731
    together = math.exp(lm(X))
    apart = alpha * math.exp(lm(X[:1]) + lm(X[1:]))
    assert post[(0, 0)] == pytest.approx(together / (together + apart), abs=1e-12)


def test_posterior_helpers_from_dp_reference_apply():
    post = gr.exact_partition_posterior(X2, 1.0, "full", 0.0, 1.0, 3.0, PSI2)
    M = gr.coclustering_matrix(post)
    assert np.allclose(np.diag(M), 1.0) and np.allclose(M, M.T)
    pK = gr.n_clusters_distribution(post)
    assert pK[0] == 0 and pK.sum() == pytest.approx(1.0)
    # well separated groups {0,1,4} vs {2,3}: co-clustering 2-3 likely
    assert M[2, 3] > M[0, 2]


# --------------------------------------------------------------- predictive


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_predictive_density_equals_evidence_ratio(covariance_type):
    psi0 = PSI2 if covariance_type == "full" else np.array([1.0, 0.5])
    args = (1.2, covariance_type, np.array([0.2, -0.1]), 0.5, 2.5, psi0)
    X = X2[:4]
    pts = np.array([[0.0, 0.0], [2.1, 1.4], [-3.0, 5.0]])
    got = gr.log_predictive_density(pts, X, *args)
    for p, g in zip(pts, got):
        want = gr.log_evidence(np.vstack([X, p]), *args) - gr.log_evidence(X, *args)
        assert g == pytest.approx(want, abs=1e-10)
        assert gr.log_predictive_density(p, X, *args) == pytest.approx(g, abs=1e-12)
    # the mixture weights sum to one
    comps = gr.predictive_components(X, *args)
    assert sum(w for w, _ in comps) == pytest.approx(1.0, abs=1e-12)
    # no data: the predictive is the prior predictive
    assert gr.log_predictive_density(pts[0], np.zeros((0, 2)), *args) == pytest.approx(
        gr.log_prior_predictive(pts[0], *args[1:]), abs=1e-12
    )


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_predictive_integrates_to_one_d1(covariance_type):
    X = X1[:3]
    psi0 = [[1.0]] if covariance_type == "full" else [1.0]
    args = (1.0, covariance_type, 0.0, 1.0, 3.0, psi0)

    def f(x):
        return math.exp(gr.log_predictive_density([x], X, *args))

    opts = dict(epsabs=1e-10, epsrel=1e-8)
    lo, hi = X.min() - 3.0, X.max() + 3.0
    total = (
        integrate.quad(f, -np.inf, lo, **opts)[0]
        + integrate.quad(f, lo, hi, points=sorted(X.ravel()), **opts)[0]
        + integrate.quad(f, hi, np.inf, **opts)[0]
    )
    assert total == pytest.approx(1.0, abs=1e-7)


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_predictive_integrates_to_one_d2_grid(covariance_type):
    X = X2[:3]
    psi0 = PSI2 if covariance_type == "full" else np.array([1.0, 0.5])
    # nu0 = 6 keeps the Student-t tails (df >= nu0 - 1 = 5) light enough for a grid
    args = (1.0, covariance_type, 0.0, 1.0, 6.0, psi0)
    gx, wx = sinh_grid(X[:, 0].mean(), 0.5, 7.0, 301)
    gy, wy = sinh_grid(X[:, 1].mean(), 0.5, 7.0, 301)
    P = np.array(np.meshgrid(gx, gy, indexing="ij")).reshape(2, -1).T
    dens = np.exp(gr.log_predictive_density(P, X, *args)).reshape(len(gx), len(gy))
    total = wx @ dens @ wy
    assert total == pytest.approx(1.0, abs=1e-6)


# ------------------------------------------------- alpha ~ Gamma(a, rate b)


def test_alpha_integral_special_cases():
    # N = 1: int Gamma(alpha) alpha^1 / alpha = 1, and E[alpha | K=1] = a / b
    for a, b in [(1.0, 1.0), (2.0, 0.5), (0.5, 3.0)]:
        assert gr.log_alpha_integral(1, 1, a, b) == pytest.approx(0.0, abs=1e-10)
        assert math.exp(gr.log_alpha_integral(1, 1, a, b, 1)) == pytest.approx(
            a / b, rel=1e-10
        )
    # N = 2, K = 2: alpha^2 / (alpha (alpha + 1)) = alpha / (alpha + 1)
    a, b = 2.0, 1.0
    want = integrate.quad(
        lambda al: stats.gamma.pdf(al, a, scale=1 / b) * al / (al + 1),
        0,
        np.inf,
        epsabs=0,
        epsrel=1e-12,
    )[0]
    assert math.exp(gr.log_alpha_integral(2, 2, a, b)) == pytest.approx(want, rel=1e-9)


@pytest.mark.parametrize(
    "a, b, covariance_type",
    [(2.0, 1.0, "full"), (1.0, 0.5, "diag"), (0.6, 2.0, "full")],
)
def test_alpha_integrated_posterior_matches_fine_grid(a, b, covariance_type):
    X = X2[:4]
    psi0 = PSI2 if covariance_type == "full" else np.array([1.0, 0.5])
    model = (covariance_type, 0.0, 1.0, 3.0, psi0)
    post, alpha_mean = gr.exact_joint_posterior_with_alpha(X, a, b, *model)
    assert len(post) == BELL[4]
    assert sum(post.values()) == pytest.approx(1.0, abs=1e-12)

    # independent: joint p(c, alpha | X) on a fine grid in t = log(alpha),
    # CRP prior from _dp_reference, trapezoid rule, then normalise.
    lm = gr.make_log_marginal_fn(X, *model)
    t = np.linspace(-60.0, math.log(a / b) + 8.0, 601)
    alphas = np.exp(t)
    log_prior = stats.gamma.logpdf(alphas, a, scale=1.0 / b) + t  # + Jacobian
    parts = dpr.set_partitions(len(X))
    logj = np.array([[dpr.crp_log_prior(c, al) for al in alphas] for c in parts])
    logj += log_prior[None, :]
    logj += np.array([sum(lm(B) for B in gr.blocks(c)) for c in parts])[:, None]
    top = logj.max()
    J = np.exp(logj - top)
    mass = integrate.trapezoid(J, t, axis=1)
    Z = mass.sum()
    for c, m in zip(parts, mass):
        assert post[c] == pytest.approx(m / Z, abs=1e-7)
    grid_mean = integrate.trapezoid((J * alphas[None, :]).sum(axis=0), t) / Z
    assert alpha_mean == pytest.approx(grid_mean, rel=1e-7)

    # the posterior density of alpha integrates to one and has that mean
    pdf = gr.alpha_posterior_pdf(alphas, X, a, b, *model)
    assert integrate.trapezoid(pdf * alphas, t) == pytest.approx(1.0, abs=1e-7)
    assert integrate.trapezoid(pdf * alphas**2, t) == pytest.approx(
        alpha_mean, rel=1e-7
    )
    np.testing.assert_allclose(pdf * alphas, J.sum(axis=0) / Z, rtol=1e-6, atol=1e-12)


def test_alpha_posterior_concentrates_to_fixed_alpha():
    """A very tight Gamma prior around alpha* reproduces the fixed-alpha posterior."""
    X = X2[:4]
    model = ("full", 0.0, 1.0, 3.0, PSI2)
    alpha_star = 1.5
    b = 1e5
    post, mean = gr.exact_joint_posterior_with_alpha(X, alpha_star * b, b, *model)
    fixed = gr.exact_partition_posterior(X, alpha_star, *model)
    assert mean == pytest.approx(alpha_star, rel=1e-3)
    for c in fixed:
        assert post[c] == pytest.approx(fixed[c], abs=1e-4)


# ------------------------------------ Liang, Jordan & Taskar (2007), Section 3


@pytest.mark.parametrize("N", range(1, 7))
def test_number_of_consistent_clusterings(N):
    rng = np.random.default_rng(N)
    for order in [tuple(range(N)), tuple(rng.permutation(N).tolist())]:
        clus = gr.consistent_clusterings(order)
        # 2^(N-1) of them (one per subset of the N-1 gaps), all distinct
        assert len(clus) == 2 ** (N - 1)
        assert len(set(clus)) == len(clus)
        counts = np.bincount([max(c) + 1 for c in clus], minlength=N + 1)
        for K in range(1, N + 1):
            assert counts[K] == math.comb(N - 1, K - 1)
        # they are exactly the partitions passing the contiguity test
        brute = [c for c in dpr.set_partitions(N) if gr.is_consistent(c, order)]
        assert set(brute) == set(clus)


def test_is_consistent_examples():
    # order pi = (2, 0, 3, 1): segments must be contiguous along the order
    order = (2, 0, 3, 1)
    assert gr.is_consistent((0, 1, 0, 1), order)  # {0,2} {1,3}: 2,0 | 3,1
    assert not gr.is_consistent((0, 0, 1, 1), order)  # {0,1} not contiguous
    assert gr.is_consistent((0, 0, 0, 0), order)
    assert gr.is_consistent((0, 1, 2, 3), order)


@pytest.mark.parametrize("N", range(1, 6))
def test_number_of_consistent_permutations_eq3(N):
    """|Pi(C)| = |C|! prod_c |c|! (Eq. 3), and sum_C |Pi(C)| = N! 2^(N-1)."""
    total = 0
    for c in dpr.set_partitions(N):
        bl = gr.blocks(c)
        n_pi = len(gr.permutations_consistent_with(c))
        assert n_pi == math.factorial(len(bl)) * math.prod(
            math.factorial(len(b)) for b in bl
        )
        total += n_pi
    assert total == math.factorial(N) * 2 ** (N - 1)


def _lmfn(N=5, covariance_type="full"):
    psi0 = PSI2 if covariance_type == "full" else np.array([1.0, 0.5])
    return gr.make_log_marginal_fn(X2[:N], covariance_type, 0.0, 1.0, 3.0, psi0)


def test_augmented_joint_eq4_marginalises_to_dp_posterior():
    """sum_{pi in Pi(C)} p(C, pi, x) = p(C) p(x | C)  (Eqs. 1-4)."""
    N, alpha = 4, 0.7
    lm = _lmfn(N)
    for c in dpr.set_partitions(N):
        vals = [
            gr.log_augmented_joint(c, p, lm, alpha)
            for p in gr.permutations_consistent_with(c)
        ]
        want = dpr.crp_log_prior(c, alpha) + sum(lm(b) for b in gr.blocks(c))
        assert gr._logsumexp(vals) == pytest.approx(want, abs=1e-10)
    # and -inf for an inconsistent ordering
    assert gr.log_augmented_joint((0, 0, 1, 1), (0, 2, 1, 3), lm, alpha) == -math.inf


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_sum_over_orders_is_evidence(covariance_type):
    N, alpha = 4, 1.3
    lm = _lmfn(N, covariance_type)
    psi0 = PSI2 if covariance_type == "full" else np.array([1.0, 0.5])
    norms = []
    for order in itertools.permutations(range(N)):
        log_norm, cond = gr.dp_sum_over_consistent_clusterings(order, lm, alpha)
        assert len(cond) == 2 ** (N - 1)
        assert sum(cond.values()) == pytest.approx(1.0, abs=1e-12)
        norms.append(log_norm)
    want = gr.log_evidence(X2[:N], alpha, covariance_type, 0.0, 1.0, 3.0, psi0)
    assert gr._logsumexp(norms) == pytest.approx(want, abs=1e-10)


def test_bruteforce_matches_paper_dynamic_programs():
    """The Section 3.1 recursion for g(r, K) and Eq. 6 for g'(r) reproduce the
    enumeration."""
    N, alpha, beta = 5, 0.8, 2.3
    lm = _lmfn(N)
    for order in [(0, 1, 2, 3, 4), (3, 0, 4, 2, 1)]:

        def logB(seg):
            return lm(seg) - math.log(len(seg))

        g = np.full((N + 1, N + 1), -np.inf)
        g[0, 0] = 0.0
        for r in range(1, N + 1):
            for K in range(1, r + 1):
                terms = [
                    g[r - m, K - 1] + logB(order[r - m : r]) for m in range(1, r + 1)
                ]
                g[r, K] = gr._logsumexp(terms)
        G = gr.brute_force_g_table(order, lm)
        finite = np.isfinite(G)
        assert np.array_equal(finite, np.isfinite(g))
        np.testing.assert_allclose(G[finite], g[finite], rtol=0, atol=1e-10)

        # p(pi, x) = sum_K A(K) g(N, K), A(K) = alpha^K / (AF(alpha, N) K!)
        log_AF = sum(math.log(alpha + i) for i in range(N))
        log_pi_x = gr._logsumexp(
            [
                K * math.log(alpha) - log_AF - math.lgamma(K + 1) + g[N, K]
                for K in range(1, N + 1)
            ]
        )
        log_norm, cond = gr.dp_sum_over_consistent_clusterings(order, lm, alpha)
        assert log_norm == pytest.approx(log_pi_x, abs=1e-10)

        # Eq. 6: g'(r) = sum_m g'(r-m) B'(segment), q_beta(pi, x) = A' g'(N)
        gp = np.full(N + 1, -np.inf)
        gp[0] = 0.0
        for r in range(1, N + 1):
            gp[r] = gr._logsumexp(
                [
                    gp[r - m]
                    + logB(order[r - m : r])
                    + math.log(alpha)
                    - math.log(beta)
                    for m in range(1, r + 1)
                ]
            )
        log_q, qcond = gr.dp_sum_over_consistent_clusterings(
            order, lm, alpha, beta=beta
        )
        assert log_q == pytest.approx(-log_AF + gp[N], abs=1e-10)
        # q_beta(C | pi) / p(C | pi) ∝ |C|! / beta^|C|
        ratios = [
            math.log(qcond[c] / cond[c])
            - (math.lgamma(max(c) + 2) - (max(c) + 1) * math.log(beta))
            for c in cond
        ]
        assert max(ratios) - min(ratios) < 1e-10


@pytest.mark.parametrize("N", [3, 4])
def test_blocked_gibbs_kernel_leaves_exact_posterior_invariant(N):
    alpha = 0.9
    lm = _lmfn(N)
    parts, T = gr.permutation_augmented_kernel(N, lm, alpha)
    assert np.allclose(T.sum(axis=1), 1.0)
    post = gr.exact_partition_posterior(X2[:N], alpha, "full", 0.0, 1.0, 3.0, PSI2)
    p = np.array([post[c] for c in parts])
    np.testing.assert_allclose(p @ T, p, rtol=0, atol=1e-12)
    flow = p[:, None] * T
    np.testing.assert_allclose(flow, flow.T, rtol=0, atol=1e-12)  # detailed balance
    # one sweep can reach every clustering (all-in-one is consistent with every order)
    assert np.all(T[:, parts.index((0,) * N)] > 0)


def test_order_validation():
    lm = _lmfn(3)
    with pytest.raises(ValueError):
        gr.dp_sum_over_consistent_clusterings((0, 0, 1), lm, 1.0)
    with pytest.raises(ValueError):
        gr.consistent_clusterings((1, 2))
