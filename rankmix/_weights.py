# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""``sample_weight`` as counts: a row of weight w stands for w identical rows.

A DP mixture has no likelihood weight that keeps its posterior a posterior: a
row's weight would have to multiply its log-likelihood, and copies of one row
may sit in different clusters. Integer counts have an exact meaning, the data
set with each row repeated, and that is what the estimators fit: the chains run
on the repeated rows, so a weighted fit is draw for draw the fit of the repeated
data. The fitted per-row attributes then speak of the rows as given: a row's
label in a draw is that of its first copy (the copies are exchangeable, so each
copy's label has the row's posterior law; copies that a draw splits are not
visible in ``label_samples_``). The repeated rows come in runs of copies, which
DPMallowsClustering's chains exploit: a copy reuses the likelihood terms of the
copy before it for every cluster that has not changed since.
"""

import numpy as np
from scipy import sparse

from ._sklearn_compat import _num_samples, _safe_indexing
from ._validation import check_sparse_structure

# The most rows sample_weight may stand for: the repeated rows are made in
# memory (2**32 rows of one int64 each are 32 GiB), and their count stays far
# below the np.intp range.
MAX_WEIGHTED_ROWS = 2**32


def check_count_weights(sample_weight, X, purpose="fit"):
    """Validate ``sample_weight`` as non-negative integer counts, one per row of X.

    Returns None for None, else an intp array. Raises ValueError naming the
    first bad row, or TypeError for non-numeric weights. ``purpose`` is "fit",
    which repeats the rows in memory (their total is capped at 2**32), or what
    else the counts are for ("score", "plot"; at most 2**53 in all).
    """
    if sample_weight is None:
        return None
    n_rows = _num_samples(X)
    weights = np.asarray(sample_weight)
    if weights.ndim == 0:  # one count for every row, as scikit-learn allows
        weights = np.full(n_rows, weights)
    if (
        weights.dtype == object
        or np.iscomplexobj(weights)
        or not (np.issubdtype(weights.dtype, np.number) or weights.dtype == bool)
    ):
        raise TypeError(
            f"sample_weight must hold numbers (counts of identical rows), got "
            f"dtype {weights.dtype}."
        )
    if weights.ndim != 1 or len(weights) != n_rows:
        raise ValueError(
            f"sample_weight must be a 1-D array with one count per row of X "
            f"({n_rows} rows), got shape {weights.shape}."
        )
    values = weights.astype(np.float64)
    bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        value = weights[row].item()
        raise ValueError(
            f"sample_weight must hold non-negative integers (a row of weight w "
            f"stands for w identical rows); row {row} has {value!r}. A "
            "fractional weight has no exact meaning in a DP mixture."
        )
    if purpose == "fit" and values.sum() > MAX_WEIGHTED_ROWS:
        raise ValueError(
            f"sample_weight sums to {values.sum():.3g} rows, more than the "
            f"{MAX_WEIGHTED_ROWS:.3g} (2**32) a fit holds: the rows are repeated in "
            "memory."
        )
    if values.sum() > 2**53:
        raise ValueError(
            f"sample_weight sums to {values.sum():.3g} rows, more than 2**53, "
            "past which counts are not exact integers."
        )
    counts = values.astype(np.intp)
    if counts.sum() == 0:
        raise ValueError(f"sample_weight is zero for every row: nothing to {purpose}.")
    # each estimator's own minimum applies to the repeated rows (_prepare)
    return counts


def repeat_rows(X, counts):
    """X with row i repeated ``counts[i]`` times (arrays, lists, sparse, frames)."""
    return take_rows(X, np.repeat(np.arange(len(counts)), counts))


def take_rows(X, rows):
    """The ``rows`` of X, in X's own kind (arrays, lists, sparse, frames).

    X has not been validated yet: the estimator validates both X and the rows
    taken. A sparse X's structure is checked here, before SciPy indexes it.
    """
    if sparse.issparse(X):
        check_sparse_structure(X)
        X = X.tocsr()  # COO, DIA and BSR matrices have no row indexing
    elif isinstance(X, memoryview) or not (
        hasattr(X, "shape") or isinstance(X, list | tuple)
    ):
        X = np.asarray(X)  # an array-like that only converts (``__array__``)
    return _safe_indexing(X, rows)


def first_copies(counts):
    """Index, among the repeated rows, of the first copy of each row of weight > 0."""
    return (np.cumsum(counts) - counts)[counts > 0]
