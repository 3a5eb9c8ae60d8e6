# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Liang, Jordan & Taskar's synthetic setting, for the DPGaussianClustering scripts.

The data (means ~ N(0, 2 I), equal weights, identity covariances), the compiled
chain an estimator would run on them, and log p(c, X) of any clustering, so that
a chain's state can be compared with the truth.
"""

import numpy as np
from scipy.optimize import minimize
from scipy.special import gammaln, multigammaln

MEAN_VARIANCE = 2.0
# The four samplers of Liang et al.'s Figure 3.
SAMPLERS = (
    "gibbs",
    "gibbs+split-merge",
    "gibbs+permutation",
    "gibbs+split-merge+permutation",
)


def make_data(d, n_clusters, n_samples, seed):
    """``(X, labels, means)``: each point's cluster uniform, unit covariances."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, np.sqrt(MEAN_VARIANCE), size=(n_clusters, d))
    labels = rng.integers(n_clusters, size=n_samples)
    X = means[labels] + rng.standard_normal((n_samples, d))
    return X, labels, means


def chain_factory(model, X):
    """The estimator's compiled-chain factory for X (priors resolved from X).

    Returns ``(make_chain, X)``: ``make_chain(bit_generator)`` builds the chain
    ``fit`` would run, on the validated ``X``.
    """
    model._validate_params()
    X = model._prepare(X)
    return model._chain_factory(X), X


def log_joint(model, X, labels):
    """The CRP prior of ``labels`` times the clusters' marginal likelihoods.

    ``model`` is a DPGaussianClustering whose priors are resolved (fitted, or
    after `chain_factory`); the value is the chains' ``log_joint`` for that
    clustering.
    """
    niw = model._model(len(X))
    value = crp_log_prior(float(model.alpha), np.bincount(labels))
    for k in np.unique(labels):
        state = niw.empty_state()
        niw.rebuild(state, X[labels == k])
        value += niw.log_marginal(state)
    return value


def crp_log_prior(alpha, sizes):
    """log p(c) of a clustering with clusters of ``sizes`` (zeros ignored) under
    the Chinese restaurant process of concentration alpha."""
    sizes = np.asarray(sizes, dtype=float)
    sizes = sizes[sizes > 0]
    return (
        len(sizes) * np.log(alpha)
        + gammaln(sizes).sum()
        + gammaln(alpha)
        - gammaln(alpha + sizes.sum())
    )


def log_joint_learnt_prior(model, X, labels):
    """max over (s, nu_0) of log p(c, X) under Psi_0 = s ``covariance_prior_``.

    The empirical-Bayes value of ``labels`` under the "full" model whose
    inverse-Wishart prior has its scale and degrees of freedom learnt, the rest
    (m_0, kappa_0, alpha) as fitted: each clustering gets its own best (s, nu_0),
    as a prior on them would let the chain pick. Returns ``(value, s, nu_0)``.

    With Psi_0 = s B and B = V V^T, |s B + A_k| = |B| prod_i (s + lambda_ki),
    lambda_ki the eigenvalues of V^-1 A_k V^-T, A_k = S_k + kappa_0 n_k /
    (kappa_0 + n_k) (xbar_k - m_0)(xbar_k - m_0)^T; so one eigendecomposition per
    cluster gives log p(X | c, s, nu_0) for every (s, nu_0). The terms in |B| add
    up to -N/2 log |B| for every clustering and are left out, so only differences
    between clusterings of the same X are meaningful.
    """
    d = X.shape[1]
    kappa, m0 = model.kappa_, model.mean_prior_
    inverse_root = np.linalg.inv(np.linalg.cholesky(model.covariance_prior_))
    sizes, eigenvalues = [], []
    for k in np.unique(labels):
        members = X[labels == k]
        n = len(members)
        centred = members - members.mean(axis=0)
        offset = members.mean(axis=0) - m0
        A = centred.T @ centred + kappa * n / (kappa + n) * np.outer(offset, offset)
        sizes.append(n)
        eigenvalues.append(
            np.clip(np.linalg.eigvalsh(inverse_root @ A @ inverse_root.T), 0, None)
        )
    crp = crp_log_prior(float(model.alpha), sizes)

    def degrees(log_excess):
        # nu_0 > d - 1 (the excess kept off 0, where Gamma_d(nu_0 / 2) is infinite)
        return d - 1 + max(np.exp(log_excess), 1e-9)

    def negative(p):
        s, nu = np.exp(p[0]), degrees(p[1])
        value = 0.0
        for n, lam in zip(sizes, eigenvalues):
            value += (
                multigammaln((nu + n) / 2, d)
                - multigammaln(nu / 2, d)
                + nu * d / 2 * np.log(s)
                - (nu + n) / 2 * np.log(s + lam).sum()
                + d / 2 * np.log(kappa / (kappa + n))
                - n * d / 2 * np.log(np.pi)
            )
        return -value

    best = min(
        (
            minimize(
                negative,
                [np.log(s0), np.log(excess)],
                method="Nelder-Mead",
                options=dict(maxiter=4000, xatol=1e-7, fatol=1e-4),
            )
            for s0 in (0.1, 3.0, 100.0)
            for excess in (3.0, 100.0)
        ),
        key=lambda result: result.fun,
    )
    return crp - best.fun, float(np.exp(best.x[0])), float(degrees(best.x[1]))
