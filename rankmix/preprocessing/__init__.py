"""Preprocessing: from raw data to rankings in the rankmix format.

:class:`ScoresToRankings` turns a score or rating matrix (rows are judges,
columns are items, higher is better, NaN where not rated) into top-t rankings,
so that a pipeline such as ``make_pipeline(ScoresToRankings(t=5),
DPMallowsClustering(n_items=n_columns))`` clusters judges from raw ratings.
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

from ._scores import ScoresToRankings

__all__ = ["ScoresToRankings"]
