"""Preprocessing: from raw data to rankings in the rankmix format.

:class:`ScoresToRankings` turns a score or rating matrix (rows are judges,
columns are items, higher is better, NaN where not rated) into top-t rankings,
so that a pipeline such as ``make_pipeline(ScoresToRankings(t=5),
DPMallowsClustering(n_items=n_columns))`` clusters judges from raw ratings.

:func:`ranks_to_orderings` and :func:`orderings_to_ranks` convert between rank
matrices (column j holds the rank of item j, the layout of BayesMallows and
PLMIX) and rankmix's best-first orderings.
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

from ._rank_matrix import orderings_to_ranks, ranks_to_orderings
from ._scores import ScoresToRankings

__all__ = ["ScoresToRankings", "orderings_to_ranks", "ranks_to_orderings"]
