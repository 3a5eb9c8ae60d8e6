# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Fitting on a given number of OpenMP threads, for the thread-invariance tests."""

import warnings

from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits


def fit_on_threads(model, X, n_threads):
    """``model.fit(X)`` on at most ``n_threads`` OpenMP threads; the chains' short
    runs may disagree, so their convergence warnings are silenced."""
    with threadpool_limits(n_threads, user_api="openmp"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return model.fit(X)
