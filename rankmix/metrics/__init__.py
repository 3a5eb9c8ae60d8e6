"""Metrics to compare clusterings.

:func:`variation_of_information` is the variation of information of
Meila (2007), a distance between two clusterings in nats (lower is better).
:data:`vi_scorer` wraps it for scikit-learn model selection and returns
``-variation_of_information(y, estimator.predict(X))``, so that greater is
better, like scikit-learn's ``neg_*`` scorers.
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

from ._clustering import variation_of_information, vi_scorer

__all__ = ["variation_of_information", "vi_scorer"]
