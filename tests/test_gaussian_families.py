# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The spherical and fixed-covariance Gaussian families: kernels against SciPy,
normalisation, exactness of every sampler against enumeration, the estimator.

The references here are written from the model, not from the kernels' formulas:
the marginal likelihood is a Gaussian density of the stacked data (the cluster
mean integrated out) mixed over sigma^2 by quadrature, and the predictives are
SciPy's Student-t and normal densities.
"""

import functools
import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate, stats
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPGaussianClustering
from rankmix._collapsed_chain import CollapsedChain
from rankmix._isotropic_kernels import IsotropicModel

from . import _dp_reference as dpref
from . import _gaussian_reference as gref

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
    n, d = X.shape
    if covariance_type == "fixed":
        return stacked_log_density(X, m0, kappa0, np.asarray(prior))
    if n == 0:
        return 0.0
    # the stacked covariance is sigma^2 C0 with C0 that of sigma^2 = 1: one
    # factorisation, then log N(r; 0, s2 C0) is cheap in s2 (checked at s2 = 1)
    C0 = np.kron(np.eye(n), np.eye(d)) + np.kron(np.ones((n, n)), np.eye(d)) / kappa0
    r = X.ravel() - np.tile(m0, n)
    mahalanobis = r @ np.linalg.solve(C0, r)
    log_det = np.linalg.slogdet(C0)[1]

    def log_gaussian(s2):
        return -0.5 * (n * d * np.log(2 * np.pi * s2) + log_det + mahalanobis / s2)

    assert np.isclose(log_gaussian(1.0), stacked_log_density(X, m0, kappa0, np.eye(d)))
    inv_gamma = stats.invgamma(nu0 / 2, scale=prior / 2)

    # integrate over t = log sigma^2, relative to the integrand's peak
    def log_integrand(t):
        return log_gaussian(np.exp(t)) + inv_gamma.logpdf(np.exp(t)) + t

    grid = np.linspace(-20, 10, 301)
    values = log_integrand(grid)
    peak, mode = values.max(), grid[np.argmax(values)]
    value, _ = integrate.quad(
        lambda t: np.exp(log_integrand(t) - peak),
        mode - 40,
        mode + 40,
        points=[mode],
        limit=400,
        epsabs=0,
        epsrel=1e-12,
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
    nu0, prior = (
        (None, random_spd(rng, d)) if covariance_type == "fixed" else (2.5, 1.7)
    )
    model = make_model(covariance_type, m0, kappa0, nu0 or 1.0, prior)
    X = 1.5 * rng.normal(size=(5, d)) + 1.0
    for n in [0, 1, 2, 5]:
        expected = reference_log_marginal(
            X[:n], covariance_type, m0, kappa0, nu0, prior
        )
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
        expected = reference_log_predictive(
            x, X[:n], covariance_type, m0, kappa0, nu0, prior
        )
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
            -np.inf,
            np.inf,
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
        def f(r):
            return r * np.exp(model.log_predictive(state, mean + r * direction)[0])

        return integrate.quad(f, 0, np.inf)[0]

    total, _ = integrate.quad(radial, 0, 2 * np.pi, epsabs=1e-10)
    assert_allclose(total, 1.0, rtol=1e-7)


def model_and_far_data(covariance_type, seed, d=4):
    """A model and 30 rows far from its prior mean (an offset and a scale)."""
    rng = np.random.default_rng(seed)
    prior = random_spd(rng, d) if covariance_type == "fixed" else 1.0
    model = make_model(covariance_type, np.zeros(d), 0.5, 2.0, prior, n_max=50)
    return model, 100 + 10 * rng.normal(size=(30, d))


@pytest.mark.parametrize("covariance_type", TYPES)
def test_removing_points_undoes_adding_them(covariance_type):
    model, X = model_and_far_data(covariance_type, 6)
    state = fitted_state(model, X)
    for x in X[:20]:
        assert model.remove(state, x) == 0
    rebuilt = model.empty_state()
    assert model.rebuild(rebuilt, X[20:]) == 0
    assert_allclose(state, rebuilt, rtol=1e-9, atol=1e-9)
    assert_allclose(fitted_state(model, X[20:]), rebuilt, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_merged_state_from_moments_is_the_union_rebuilt(covariance_type):
    # a merge proposal's state: the two states' moments read off them, merged
    # and made a state again, against the state rebuilt from the union, for
    # pairs of 1 and 1, 3 and 2, 15 and 15 points far from the prior mean
    model, X = model_and_far_data(covariance_type, 7)
    family = model.family(X)
    for a, b in (([0], [1]), ([0, 1, 2], [5, 7]),
                 (list(range(0, 30, 2)), list(range(1, 30, 2)))):
        merged, rebuilt = family._merged_state_check(a, b)
        assert merged[0] == rebuilt[0] == len(a) + len(b)
        if covariance_type == "fixed":  # its power (entry 5) is unused, unset
            merged, rebuilt = np.delete(merged, 5), np.delete(rebuilt, 5)
        assert_allclose(merged, rebuilt, rtol=1e-12, atol=1e-12)


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
    assert_allclose(covariances, [2.0])  # E[sigma^2] = psi_0 / (nu_0 - 2)
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


# -- exactness ----------------------------------------------------------------------


EXACT_SAMPLERS = [
    # (sampler, permutation_dp)
    ("gibbs", "beta"),
    ("split-merge", "beta"),
    ("permutation", "beta"),
    ("permutation", "exact"),
    ("gibbs+split-merge", "beta"),
    ("gibbs+permutation", "beta"),
    ("gibbs+split-merge+permutation", "beta"),
    ("subcluster", "beta"),
]


_POSTERIORS = {}


def exact_posterior(X, covariance_type, kappa_factor=1.0):
    """The enumerated posterior over clusterings, from the plain reference marginal
    (of the prior of ``prior_args``, kappa_0 times ``kappa_factor``); memoised,
    as several tests share it."""
    key = (X.tobytes(), X.shape, covariance_type, kappa_factor)
    if key not in _POSTERIORS:
        m0, kappa0, nu0, prior = prior_args(covariance_type, X.shape[1])
        kappa0 = kappa0 * kappa_factor

        @functools.lru_cache(maxsize=None)
        def log_marginal(block):
            return reference_log_marginal(
                X[list(block)], covariance_type, m0, kappa0, nu0, prior
            )

        parts, logw = gref.partition_log_weights(
            len(X), lambda b: log_marginal(tuple(sorted(b))), 1.0
        )
        weights = np.exp(logw - logw.max())
        _POSTERIORS[key] = dict(zip(parts, weights / weights.sum()))
    return _POSTERIORS[key]


def fit_tiny(
    X, covariance_type, sampler, permutation_dp="beta", init="sequential", n_iter=20000
):
    m0, kappa0, nu0, prior = prior_args(covariance_type, X.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return DPGaussianClustering(
            sampler=sampler,
            permutation_dp=permutation_dp,
            covariance_type=covariance_type,
            mean_prior=m0,
            kappa=kappa0,
            nu=nu0,
            covariance_prior=prior,
            n_split_merge=3,
            n_iter=n_iter,
            burn_in=200,
            thin=1,
            n_chains=1,
            init=init,
            init_clusters=2,
            random_state=0,
        ).fit(X)


def assert_matches_posterior(model, X, covariance_type):
    """The draws' co-clustering and number of clusters match the enumeration."""
    posterior = exact_posterior(X, covariance_type)
    cocluster, k_dist = dpref.draw_statistics(model.label_samples_)
    assert_allclose(cocluster, dpref.coclustering_matrix(posterior), atol=0.03)
    assert_allclose(k_dist, dpref.n_clusters_distribution(posterior), atol=0.03)


@pytest.mark.parametrize("sampler, permutation_dp", EXACT_SAMPLERS)
@pytest.mark.parametrize("covariance_type", TYPES)
def test_samplers_match_the_exact_posterior(covariance_type, sampler, permutation_dp):
    # every move, alone and in combination, leaves the enumerated posterior
    # over clusterings invariant (co-clustering and number of clusters)
    model = fit_tiny(TINY_X2, covariance_type, sampler, permutation_dp)
    assert_matches_posterior(model, TINY_X2, covariance_type)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_one_dimensional_data_and_a_random_start_match_the_posterior(covariance_type):
    model = fit_tiny(TINY_X1, covariance_type, "gibbs+split-merge", init="random")
    assert_matches_posterior(model, TINY_X1, covariance_type)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_exactness_test_catches_a_wrong_prior(covariance_type):
    # the test above can fail: the same draws against the posterior of a prior
    # with kappa_0 off by a factor 3 miss by more than its tolerance
    model = fit_tiny(TINY_X2, covariance_type, "gibbs+split-merge", n_iter=4000)
    posterior = exact_posterior(TINY_X2, covariance_type, kappa_factor=3.0)
    cocluster, _ = dpref.draw_statistics(model.label_samples_)
    assert np.abs(cocluster - dpref.coclustering_matrix(posterior)).max() > 0.04


@pytest.mark.parametrize("covariance_type", TYPES)
def test_log_joint_is_the_crp_prior_times_the_marginals(covariance_type):
    model = fit_tiny(TINY_X2, covariance_type, "gibbs", n_iter=220)
    m0, kappa0, nu0, prior = prior_args(covariance_type, 2)
    labels = model.label_samples_[-1]
    expected = dpref.crp_log_prior(tuple(labels), 1.0) + sum(
        reference_log_marginal(
            TINY_X2[labels == k], covariance_type, m0, kappa0, nu0, prior
        )
        for k in np.unique(labels)
    )
    assert_allclose(model.trace_["log_joint"][0, -1], expected, rtol=1e-8)


# -- the estimator ---------------------------------------------------------------


def blobs(n_samples=200, n_features=3, random_state=0):
    rng = np.random.default_rng(random_state)
    centres = 6.0 * rng.normal(size=(3, n_features))
    labels = rng.integers(3, size=n_samples)
    return centres[labels] + rng.normal(size=(n_samples, n_features)), labels


def short_fit(X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return DPGaussianClustering(
            n_iter=20, burn_in=10, n_chains=1, random_state=0, **params
        ).fit(X)


def test_default_priors_are_resolved_from_the_data():
    X, _ = blobs()
    spherical = short_fit(X, covariance_type="spherical")
    assert spherical.nu_ == 3.0 and isinstance(spherical.covariance_prior_, float)
    assert_allclose(
        spherical.covariance_prior_, X.var(axis=0).mean() * 3.0 / 10.0, rtol=1e-5
    )
    fixed = short_fit(X, covariance_type="fixed")
    assert fixed.nu_ is None
    assert_allclose(
        fixed.covariance_prior_, np.cov(X, rowvar=False, bias=True) / 10.0, rtol=1e-5
    )
    assert fixed.covariance_prior is None and fixed.nu is None  # arguments untouched


def test_fitted_covariances_have_scikit_learns_shapes():
    X, y = blobs()
    spherical = short_fit(X, covariance_type="spherical")
    assert spherical.covariances_.shape == (spherical.n_clusters_,)
    assert np.all(spherical.covariances_ > 0)
    Sigma = np.diag([1.0, 1.5, 1.2])
    fixed = short_fit(X, covariance_type="fixed", covariance_prior=Sigma)
    assert_allclose(fixed.covariances_, Sigma)
    for model in (spherical, fixed):
        assert model.means_.shape == (model.n_clusters_, 3)
        # the blobs are found; the predicted probabilities are distributions
        assert model.n_clusters_ == 3
        assert_allclose(model.predict_proba(X).sum(axis=1), 1.0)
        assert np.mean(model.predict(X) == model.labels_) > 0.95


def test_fixed_covariance_accepts_a_scalar_a_vector_or_a_matrix():
    X, _ = blobs()
    draws = [
        short_fit(X, covariance_type="fixed", covariance_prior=prior).label_samples_
        for prior in (2.0, np.full(3, 2.0), 2.0 * np.eye(3))
    ]
    assert_array_equal(draws[0], draws[1])
    assert_array_equal(draws[0], draws[2])


@pytest.mark.parametrize("covariance_type", TYPES)
def test_rescaled_data_give_the_same_clustering_in_its_units(covariance_type):
    # the chains run on X / 2**k for extreme X: every output comes back in X's
    # units (the fixed type's factors are relative to its Cholesky factor)
    X, _ = blobs(n_samples=60, n_features=2)
    scale = 2.0**300
    prior = 1.5 * np.eye(2) if covariance_type == "fixed" else 1.5
    small = short_fit(X, covariance_type=covariance_type, covariance_prior=prior)
    big = short_fit(
        X * scale, covariance_type=covariance_type, covariance_prior=prior * scale**2
    )
    assert_array_equal(small.label_samples_, big.label_samples_)
    assert_allclose(big.means_, small.means_ * scale)
    assert_allclose(big.covariances_, small.covariances_ * scale**2)
    assert_allclose(
        big.score_samples(X[:5] * scale),
        small.score_samples(X[:5]) - 2 * np.log(scale),
        rtol=1e-10,
    )
    assert_allclose(
        big.sample(5, random_state=0)[0],
        small.sample(5, random_state=0)[0] * scale,
        rtol=1e-10,
    )


@pytest.mark.parametrize("covariance_type", TYPES)
def test_sample_draws_from_the_clusters_predictives(covariance_type):
    X, _ = blobs(n_features=2)
    prior = np.array([[1.0, 0.4], [0.4, 0.6]]) if covariance_type == "fixed" else None
    model = short_fit(
        X, covariance_type=covariance_type, covariance_prior=prior, nu=50.0
    )
    # the point estimate's clusters (draws="all" mixes the draws' predictives)
    samples, labels = model.sample(20000, random_state=0, draws="point")
    _, _, factors, dfs = model._best_parameters[:4]
    for k in np.flatnonzero(model.weights_ > 0.2):
        drawn = samples[labels == k]
        assert_allclose(drawn.mean(axis=0), model.means_[k], atol=0.1)
        # the predictive's covariance: c^2 Sigma (Gaussian), or s^2 df / (df - 2) I
        if covariance_type == "fixed":
            expected = factors[k] ** 2 * prior
        else:
            expected = factors[k] ** 2 * dfs[k] / (dfs[k] - 2) * np.eye(2)
        assert_allclose(np.cov(drawn, rowvar=False), expected, rtol=0.1, atol=0.03)


@pytest.mark.parametrize(
    "params, match",
    [
        (
            dict(covariance_type="spherical", covariance_prior=np.ones(3)),
            "positive float .* covariance_type='spherical'",
        ),
        (
            dict(covariance_type="spherical", covariance_prior=np.inf),
            "covariance_prior",
        ),
        (dict(covariance_type="spherical", nu=0.0), "nu"),
        (dict(covariance_type="fixed", covariance_prior=np.eye(2)), r"shape \(3, 3\)"),
        (
            dict(covariance_type="fixed", covariance_prior=[1.0, -1.0, 1.0]),
            "positive vector of length 3",
        ),
        (
            dict(covariance_type="fixed", covariance_prior=np.ones((3, 3))),
            "positive definite",
        ),
        (
            dict(
                covariance_type="fixed",
                covariance_prior=[[1, 2, 0], [0, 1, 0], [0, 0, 1]],
            ),
            "symmetric",
        ),
        (dict(covariance_type="fixed", covariance_prior=-1.0), "covariance_prior"),
    ],
)
def test_bad_priors_are_refused_with_the_parameters_name(params, match):
    X, _ = blobs()
    with pytest.raises(ValueError, match=match):
        DPGaussianClustering(**params).fit(X)


@pytest.mark.parametrize("covariance_type", TYPES)
def test_sequential_start_has_the_sequential_prediction_law(covariance_type):
    # the sequential start (init="sequential") seats the points one at a time
    # from their collapsed conditionals: its law is enumerated over the 4! orders
    X = TINY_X2[:4]
    m0, kappa0, nu0, prior = prior_args(covariance_type, 2)
    law = dpref.sequential_prediction_law(
        X,
        0.7,
        lambda x, rows: reference_log_predictive(
            x, rows, covariance_type, m0, kappa0, nu0, prior
        ),
    )
    model = make_model(covariance_type, m0, kappa0, nu0 or 1.0, prior, len(X))
    counts = {}
    for seed in np.random.SeedSequence(5).spawn(4000):
        chain = CollapsedChain(
            model.family(X), 0.7, True, 0, None, 2, np.random.PCG64(seed),
            sequential_init=True,
        )
        key = dpref.canonical_labels(chain.snapshot()[0])
        counts[key] = counts.get(key, 0) + 1
    assert_allclose(sum(law.values()), 1.0)
    for key, probability in law.items():
        # binomial standard error <= 0.008 at 4000 draws
        assert abs(counts.get(key, 0) / 4000 - probability) < 0.03, key


def test_largest_cluster_size_is_traced():
    # trace_["largest_cluster_size"] (Liang et al.'s Fig. 3(l) statistic) is the
    # largest cluster of the state after each sweep: check it on the kept draws
    X, _ = blobs(n_samples=80)
    model = DPGaussianClustering(
        covariance_type="spherical", n_iter=12, burn_in=4, thin=2, n_chains=2,
        random_state=0,
    ).fit(X)
    trace = model.trace_["largest_cluster_size"]
    assert trace.shape == (2, 12) and set(model.rhat_) == set(model.trace_)
    kept = trace[:, 4::2].ravel()
    expected = [np.bincount(labels).max() for labels in model.label_samples_]
    assert_array_equal(kept, expected)
