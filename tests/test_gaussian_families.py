# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The spherical and fixed-covariance Gaussian families: kernels against SciPy
and normalisation.

The references here are written from the model, not from the kernels' formulas:
the marginal likelihood is a Gaussian density of the stacked data (the cluster
mean integrated out) mixed over sigma^2 by quadrature, and the predictives are
SciPy's Student-t and normal densities.
"""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate, stats

from rankmix._collapsed_chain import CollapsedChain
from rankmix._isotropic_kernels import IsotropicModel

TYPES = ["spherical", "fixed"]

# Six points in two loose groups and a straggler (as in test_gaussian.py), so the
# posterior spreads over many clusterings.
TINY_X2 = np.array(
    [[0.0, 0.1], [0.3, -0.2], [2.0, 2.1], [2.4, 1.8], [1.0, 1.2], [-0.5, 2.0]]
)
TINY_X1 = TINY_X2[:, :1] + TINY_X2[:, 1:]


def random_spd(rng, d):
    A = rng.normal(size=(d, d))
    return A @ A.T + d * np.eye(d)


def make_model(covariance_type, m0, kappa0, nu0, prior, n_max=30):
    """The compiled prior; ``prior`` is psi_0 (spherical) or Sigma (fixed)."""
    return IsotropicModel(m0, kappa0, nu0, prior, covariance_type == "fixed", n_max)


def fitted_state(model, X):
    state = model.empty_state()
    for x in X:
        model.add(state, x)
    return state


# -- plain references ------------------------------------------------------------


def stacked_log_density(X, m0, kappa0, Sigma):
    """log p(x_1..x_n | Sigma), mu ~ N(m0, Sigma / kappa0) integrated out.

    The stacked vector (x_1, ..., x_n) is Gaussian with mean (m0, ..., m0) and
    covariance I_n (x) Sigma + (1 (x) Sigma) / kappa0 (all pairs share mu).
    """
    n, d = X.shape
    if n == 0:
        return 0.0
    cov = np.kron(np.eye(n), Sigma) + np.kron(np.ones((n, n)), Sigma) / kappa0
    return stats.multivariate_normal(np.tile(m0, n), cov).logpdf(X.ravel())


def reference_log_marginal(X, covariance_type, m0, kappa0, nu0, prior):
    """log m(X): the fixed case directly, the spherical case by quadrature over
    sigma^2 ~ InvGamma(nu0 / 2, scale=psi0 / 2)."""
    d = X.shape[1]
    if covariance_type == "fixed":
        return stacked_log_density(X, m0, kappa0, np.asarray(prior))
    inv_gamma = stats.invgamma(nu0 / 2, scale=prior / 2)
    # integrate over t = log sigma^2, around the posterior's bulk, relative to a peak
    def log_integrand(t):
        s2 = np.exp(t)
        return (
            stacked_log_density(X, m0, kappa0, s2 * np.eye(d))
            + inv_gamma.logpdf(s2)
            + t
        )

    grid = np.linspace(-20, 10, 301)
    values = [log_integrand(t) for t in grid]
    peak, mode = max(values), grid[np.argmax(values)]
    value, _ = integrate.quad(
        lambda t: np.exp(log_integrand(t) - peak), mode - 40, mode + 40,
        points=[mode], limit=400, epsabs=0, epsrel=1e-12,
    )
    return peak + np.log(value)


def reference_log_predictive(x, X, covariance_type, m0, kappa0, nu0, prior):
    """SciPy's predictive: multivariate Student-t (spherical) or normal (fixed)."""
    n, d = X.shape
    kn = kappa0 + n
    xbar = X.mean(axis=0) if n else np.zeros(d)
    mn = (kappa0 * m0 + n * xbar) / kn
    if covariance_type == "fixed":
        return stats.multivariate_normal(mn, prior * (1 + 1 / kn)).logpdf(x)
    psin = prior + ((X - xbar) ** 2).sum() + kappa0 * n / kn * ((xbar - m0) ** 2).sum()
    nun = nu0 + n * d
    shape = psin * (kn + 1) / (kn * nun) * np.eye(d)
    return stats.multivariate_t(mn, shape, df=nun).logpdf(x)


def prior_args(covariance_type, d):
    """A proper prior (m0, kappa0, nu0, psi0 or Sigma) for the exactness problems."""
    m0 = np.full(d, 0.5)
    if covariance_type == "fixed":
        return m0, 0.8, None, 0.4 * np.eye(d) + 0.1
    return m0, 0.8, 1.5, 0.5


# -- kernels ---------------------------------------------------------------------


@pytest.mark.parametrize("covariance_type", TYPES)
@pytest.mark.parametrize("d", [1, 3])
def test_log_marginal_matches_the_integral_over_the_parameters(covariance_type, d):
    rng = np.random.default_rng(d)
    m0, kappa0 = rng.normal(size=d), 1.3
    nu0, prior = (None, random_spd(rng, d)) if covariance_type == "fixed" else (2.5, 1.7)
    model = make_model(covariance_type, m0, kappa0, nu0 or 1.0, prior)
    X = 1.5 * rng.normal(size=(5, d)) + 1.0
    for n in [0, 1, 2, 5]:
        expected = reference_log_marginal(X[:n], covariance_type, m0, kappa0, nu0, prior)
        got = model.log_marginal(fitted_state(model, X[:n]))
        assert_allclose(got, expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_predictive_is_the_scipy_density(covariance_type):
    rng = np.random.default_rng(4)
    d = 4
    m0, kappa0 = rng.normal(size=d), 0.7
    nu0, prior = (1.0, random_spd(rng, d)) if covariance_type == "fixed" else (3.5, 2.0)
    model = make_model(covariance_type, m0, kappa0, nu0, prior)
    X = 3 * rng.normal(size=(7, d))
    x = rng.normal(size=(5, d))
    for n in [0, 1, 7]:
        expected = reference_log_predictive(x, X[:n], covariance_type, m0, kappa0, nu0, prior)
        got = model.log_predictive(fitted_state(model, X[:n]), x)
        assert_allclose(got, expected, rtol=1e-10)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_marginal_is_the_product_of_predictives_in_any_order(covariance_type):
    # the chain rule: m(X) = prod_i p(x_i | x_<i), whatever the order
    rng = np.random.default_rng(5)
    d = 3
    m0, kappa0, nu0 = rng.normal(size=d), 0.4, 2.0
    prior = random_spd(rng, d) if covariance_type == "fixed" else 0.9
    model = make_model(covariance_type, m0, kappa0, nu0, prior)
    X = 2 * rng.normal(size=(6, d)) - 1
    expected = model.log_marginal(fitted_state(model, X))
    for order in [range(6), [5, 2, 0, 4, 1, 3]]:
        state, total = model.empty_state(), 0.0
        for i in order:
            total += model.log_predictive(state, X[i])[0]
            model.add(state, X[i])
        assert_allclose(total, expected, rtol=1e-11)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_predictive_integrates_to_one_in_1d(covariance_type):
    prior = np.array([[0.8]]) if covariance_type == "fixed" else 0.8
    model = make_model(covariance_type, np.array([0.3]), 0.5, 1.2, prior)
    state = fitted_state(model, np.array([[0.0], [1.0], [0.4]]))
    for s in [model.empty_state(), state]:
        total, _ = integrate.quad(
            lambda t: np.exp(model.log_predictive(s, np.array([t]))[0]),
            -np.inf, np.inf,
        )
        assert_allclose(total, 1.0, rtol=1e-8)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_predictive_integrates_to_one_in_2d(covariance_type):
    prior = np.array([[1.0, 0.3], [0.3, 0.5]]) if covariance_type == "fixed" else 0.6
    model = make_model(covariance_type, np.zeros(2), 1.0, 2.0, prior)
    state = fitted_state(model, np.array([[0.0, 1.0], [0.5, 0.2]]))
    # x = m + r (cos t, sin t) in polar coordinates; the radial integral to infinity
    n, mean, _ = model.unpack(state)

    def radial(t):
        direction = np.array([np.cos(t), np.sin(t)])
        f = lambda r: r * np.exp(model.log_predictive(state, mean + r * direction)[0])
        return integrate.quad(f, 0, np.inf)[0]

    total, _ = integrate.quad(radial, 0, 2 * np.pi, epsabs=1e-10)
    assert_allclose(total, 1.0, rtol=1e-7)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_removing_points_undoes_adding_them(covariance_type):
    rng = np.random.default_rng(6)
    d = 4
    prior = random_spd(rng, d) if covariance_type == "fixed" else 1.0
    model = make_model(covariance_type, np.zeros(d), 0.5, 2.0, prior, n_max=50)
    X = 100 + 10 * rng.normal(size=(30, d))  # an offset and a scale
    state = fitted_state(model, X)
    for x in X[:20]:
        assert model.remove(state, x) == 0
    rebuilt = model.empty_state()
    assert model.rebuild(rebuilt, X[20:]) == 0
    assert_allclose(state, rebuilt, rtol=1e-9, atol=1e-9)
    assert_allclose(fitted_state(model, X[20:]), rebuilt, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_gibbs_weights_are_size_times_predictive(covariance_type):
    # the compiled chain's assignment weights are n_k p(x | C_k) and alpha p(x)
    X = TINY_X2
    m0, kappa0, nu0, prior = prior_args(covariance_type, 2)
    model = make_model(covariance_type, m0, kappa0, nu0 or 1.0, prior, len(X))
    chain = CollapsedChain(model.family(X), 0.7, True, 0, None, 2, np.random.PCG64(3))
    chain.sweep(3)
    labels = chain.snapshot()[0]
    for i in range(len(X)):
        weights, new = chain.assignment_log_weights(i)
        for k in range(labels.max() + 1):
            others = np.flatnonzero((labels == k) & (np.arange(len(labels)) != i))
            if len(others) == 0:
                assert weights[k] == -np.inf
                continue
            expected = np.log(len(others)) + reference_log_predictive(
                X[i], X[others], covariance_type, m0, kappa0, nu0, prior
            )
            assert_allclose(weights[k], expected, rtol=1e-10)
        expected_new = np.log(0.7) + reference_log_predictive(
            X[i], X[:0], covariance_type, m0, kappa0, nu0, prior
        )
        assert_allclose(new, expected_new, rtol=1e-10)


def test_model_and_family_pickle_and_describe_the_prior():
    Sigma = np.array([[2.0, 0.5], [0.5, 1.0]])
    model = make_model("fixed", np.array([1.0, -1.0]), 0.5, 1.0, Sigma, len(TINY_X2))
    family = pickle.loads(pickle.dumps(model.family(TINY_X2)))
    assert family.n_points == len(TINY_X2)
    assert_array_equal(family.model.empty_state(), model.empty_state())
    means, covariances, factors, dfs = family.describe(model.empty_state()[None])
    assert_allclose(means[0], [1.0, -1.0])
    assert_allclose(covariances, Sigma)
    assert_allclose(factors, [np.sqrt(3.0)])  # sqrt((kappa + 1) / kappa)
    assert dfs[0] == np.inf
    spherical = make_model("spherical", np.zeros(2), 0.5, 3.0, 2.0, 4)
    means, covariances, factors, dfs = spherical.family(TINY_X2[:4]).describe(
        spherical.empty_state()[None]
    )
    assert_allclose(covariances, [2.0])   # E[sigma^2] = psi_0 / (nu_0 - 2)
    assert_allclose(dfs, [3.0])
    with pytest.raises(ValueError, match="does not match"):
        model.family(np.zeros((len(TINY_X2) + 1, 2)))


@pytest.mark.parametrize(
    "args, match",
    [
        ((np.zeros(2), 1.0, 1.0, np.eye(3), True, 4), "shape"),
        ((np.zeros(2), 0.0, 1.0, 1.0, False, 4), "kappa"),
        ((np.zeros(2), 1.0, 0.0, 1.0, False, 4), "nu"),
        ((np.zeros(2), 1.0, 1.0, -1.0, False, 4), "covariance_prior"),
    ],
)
def test_model_refuses_bad_priors(args, match):
    with pytest.raises(ValueError, match=match):
        IsotropicModel(*args)
