# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""log p(c, X) of a given clustering under a DPGaussianClustering's prior."""

import numpy as np
from scipy.special import gammaln


def log_joint(model, X, labels):
    """The CRP prior of ``labels`` times the clusters' marginal likelihoods.

    ``model`` is a DPGaussianClustering whose priors are resolved (fitted, or
    after ``_prepare(X)``); the value is the chains' ``log_joint`` for that
    clustering, so that a chain's state and the truth can be compared.
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
