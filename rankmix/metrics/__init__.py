"""Metrics to compare clusterings.

:func:`variation_of_information` is the variation of information of
Meila (2007), a distance between two clusterings in nats (lower is better).
:data:`vi_scorer` wraps it for scikit-learn model selection and returns
``-variation_of_information(y, estimator.predict(X))``, so that greater is
better, like scikit-learn's ``neg_*`` scorers.

:func:`minimize_expected_loss` finds the clustering of least posterior
expected VI (or Binder's loss) given posterior draws, and
:func:`expected_loss` scores a clustering against the draws.
:func:`coclustering_matrix` is the posterior probability that two samples
share a cluster, from the draws of a fitted estimator's ``label_samples_``.
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

from ._clustering import variation_of_information, vi_scorer
from ._coclustering import MAX_COCLUSTERING_BYTES, coclustering_matrix
from ._point_estimate import expected_loss, minimize_expected_loss

__all__ = [
    "MAX_COCLUSTERING_BYTES",
    "coclustering_matrix",
    "expected_loss",
    "minimize_expected_loss",
    "variation_of_information",
    "vi_scorer",
]
