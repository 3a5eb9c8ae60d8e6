# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Liang, Jordan & Taskar's synthetic setting, for the DPGaussianClustering scripts.

The data (means ~ N(0, 2 I), equal weights, identity covariances), the compiled
chain an estimator would run on them, and log p(c, X) of any clustering, so that
a chain's state can be compared with the truth.
"""

import numpy as np
from scipy.special import gammaln

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
    alpha = float(model.alpha)
    value = gammaln(alpha) - gammaln(alpha + len(X))
    for k in np.unique(labels):
        members = X[labels == k]
        state = niw.empty_state()
        niw.rebuild(state, members)
        value += np.log(alpha) + gammaln(len(members)) + niw.log_marginal(state)
    return value
