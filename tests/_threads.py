# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Fitting on a given number of OpenMP threads, for the thread-invariance tests."""

import os
import warnings

from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits


def thread_counts(*counts):
    """The numbers of OpenMP threads a thread-invariance test compares: its own
    ``counts`` (small, for CI's two cores), then those of the environment variable
    ``RANKMIX_TEST_THREADS`` (comma-separated, such as ``7,16``) that it lacks.

    On a machine of many cores, ``RANKMIX_TEST_THREADS=5,16 pytest -k thread``
    checks that the draws stay the same when the rows and clusters are split among
    more threads, and unevenly.
    """
    extra = os.environ.get("RANKMIX_TEST_THREADS", "")
    more = [int(n) for n in extra.split(",") if n.strip()]
    return tuple(dict.fromkeys([*counts, *more]))


def fit_on_threads(model, X, n_threads):
    """``model.fit(X)`` on at most ``n_threads`` OpenMP threads; the chains' short
    runs may disagree, so their convergence warnings are silenced."""
    with threadpool_limits(n_threads, user_api="openmp"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return model.fit(X)
