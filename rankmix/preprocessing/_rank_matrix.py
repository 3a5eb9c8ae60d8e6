"""Conversions between rank matrices (BayesMallows, PLMIX) and rankmix's orderings.

rankmix's ``X`` holds *orderings*: row i lists item ids best first. BayesMallows'
``rankings`` and PLMIX's ranking format hold *rank matrices*: row i gives, in
column j, the rank of item j (1 = best). Both are permutations when complete,
so validation cannot tell one from the other: a full rank matrix passed as X is
read silently as the inverse permutations. These two functions convert.
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import numbers
from collections.abc import Sized

import numpy as np

from .._validation import _as_numeric_array, check_rankings, sized_by

__all__ = ["orderings_to_ranks", "ranks_to_orderings"]


def ranks_to_orderings(ranks, *, missing=np.nan):
    """Turn a rank matrix (item -> rank) into best-first orderings (rank -> item).

    The rank matrix is the layout of BayesMallows' ``rankings`` argument and of
    PLMIX's ranking format: one row per judge, one column per item, the entry
    being the rank the judge gave the item, 1 for the best. This is the inverse
    of BayesMallows' ``create_ranking`` and does what its ``create_ordering``
    and PLMIX's ``rank_ord_switch(format_input="ranking")`` do, with rankmix's
    0-based item ids (item j is column j) and -1 padding.

    Parameters
    ----------
    ranks : array-like of shape (n_judges, n_items)
        Ranks, 1 (best) to t in each row, as integers or integer-valued floats.
        The items a judge did not rank hold ``missing``. A row with the ranks
        1..t of t items is a top-t ranking; its other items are unranked.

    missing : float or int, default=np.nan
        The entry that marks an unranked item: NaN (BayesMallows' ``NA``) or an
        integer from -2**53 to 0, such as 0 (PLMIX's convention).

    Returns
    -------
    orderings : ndarray of shape (n_judges, t_max), dtype=np.intp
        Row i lists the items of judge i best first, padded with -1 after its
        ``t_i`` ranked items; ``t_max`` is the longest row's length. This is the
        ``X`` of :class:`~rankmix.DPMallowsClustering`; pass
        ``n_items=ranks.shape[1]`` to it so that items nobody ranked count.

    Raises
    ------
    ValueError
        If a row ranks no item, holds a rank that is not an integer, is below 1
        (other than ``missing``) or above the number of items, gives two items
        the same rank (a tie: rankmix models strict rankings), or skips a rank
        (ranks 1, 2, 4: a top-t ranking holds the ranks 1..t). The message names
        the first bad row (0-based).
    TypeError
        If ``ranks`` is sparse or holds values that are not real numbers.

    See Also
    --------
    orderings_to_ranks : The inverse conversion.

    Examples
    --------
    Two judges rank four items; the second ranks only its top two:

    >>> import numpy as np
    >>> from rankmix.preprocessing import ranks_to_orderings
    >>> ranks = np.array([[2, 1, 4, 3], [np.nan, 2, np.nan, 1]])
    >>> ranks_to_orderings(ranks)
    array([[ 1,  0,  3,  2],
           [ 3,  1, -1, -1]])

    PLMIX marks unranked items with 0:

    >>> ranks_to_orderings([[0, 2, 0, 1]], missing=0)
    array([[3, 1]])
    """
    missing = _check_missing(missing)
    _check_rectangular(ranks)
    ranks = _as_numeric_array(ranks, "ranks")
    if ranks.ndim != 2 or ranks.shape[0] == 0 or ranks.shape[1] == 0:
        raise ValueError(
            "ranks must be a non-empty 2-D array (one row per judge, one column "
            f"per item), got shape {ranks.shape}."
        )
    n_judges, n_items = ranks.shape
    ranks = ranks.astype(np.float64)
    if np.isnan(missing):
        unranked = np.isnan(ranks)
    else:
        unranked = ranks == missing
        if np.isnan(ranks).any():
            row = int(np.argmax(np.isnan(ranks).any(axis=1)))
            raise ValueError(
                f"Row {row} of ranks holds NaN, but missing={missing!r} marks the "
                "unranked items. Pass missing=np.nan if NaN marks them."
            )
    lengths = n_items - unranked.sum(axis=1)
    filled = np.where(unranked, 0.0, ranks)
    # A row is a top-t ranking when its ranked entries are exactly 1..t: each
    # rank is an integer in [1, t] and no two items share one.
    bad_value = ~unranked & ((filled != np.floor(filled)) | (filled < 1))
    bad_value |= ~unranked & (filled > lengths[:, None])
    rank_index = np.where(bad_value, 0, filled).astype(np.intp)
    seen = np.zeros((n_judges, n_items + 1), dtype=np.intp)
    rows = np.repeat(np.arange(n_judges), n_items)
    np.add.at(seen, (rows, rank_index.ravel()), 1)
    tied = (seen[:, 1:] > 1).any(axis=1)
    faulty = (lengths == 0) | bad_value.any(axis=1) | tied
    if faulty.any():
        row = int(np.argmax(faulty))
        raise ValueError(_describe_rank_fault(ranks[row], unranked[row], row))

    t_max = int(lengths.max())
    orderings = np.full((n_judges, t_max), -1, dtype=np.intp)
    judge, item = np.nonzero(~unranked)
    orderings[judge, rank_index[judge, item] - 1] = item
    return orderings


def orderings_to_ranks(X, *, n_items=None, missing=np.nan):
    """Turn best-first orderings (rank -> item) into a rank matrix (item -> rank).

    The inverse of :func:`ranks_to_orderings`: the layout of BayesMallows'
    ``create_ranking`` and of PLMIX's ``rank_ord_switch(format_input="ordering")``,
    for passing rankmix data to those packages or reading them side by side.

    Parameters
    ----------
    X : array-like of shape (n_judges, t_max)
        Rankings in rankmix's format: item ids best first, -1 padded.

    n_items : int, default=None
        Number of items (columns of the result). Default: the largest item id
        in ``X`` plus one.

    missing : float or int, default=np.nan
        The entry given to the items a row does not rank: NaN (a float result,
        BayesMallows' ``NA``) or an integer from -2**53 to 0, such as 0
        (PLMIX's convention; the result is then an integer array).

    Returns
    -------
    ranks : ndarray of shape (n_judges, n_items)
        ``ranks[i, j]`` is the rank (1 = best) judge i gave item j, or
        ``missing``. Float64 when ``missing`` is NaN, intp otherwise.

    Raises
    ------
    ValueError, TypeError
        As :class:`~rankmix.DPMallowsClustering` does for a malformed ``X``,
        naming the first bad row.

    See Also
    --------
    ranks_to_orderings : The inverse conversion.

    Examples
    --------
    >>> from rankmix.preprocessing import orderings_to_ranks
    >>> orderings_to_ranks([[1, 0, 3, 2], [3, 1, -1, -1]])
    array([[ 2.,  1.,  4.,  3.],
           [nan,  2., nan,  1.]])
    >>> orderings_to_ranks([[3, 1]], n_items=4, missing=0)
    array([[0, 2, 0, 1]])
    """
    missing = _check_missing(missing)
    X = check_rankings(X, n_items=n_items)
    if n_items is None:
        n_items = int(X.max()) + 1
    with sized_by("n_items", n_items):  # (n_judges, n_items) ranks
        if np.isnan(missing):
            ranks = np.full((X.shape[0], n_items), np.nan)
        else:
            ranks = np.full((X.shape[0], n_items), int(missing), dtype=np.intp)
    judge, position = np.nonzero(X >= 0)
    ranks[judge, X[judge, position]] = position + 1
    return ranks


def _check_rectangular(ranks):
    """Refuse a list of rows of unequal lengths: a rank matrix has a column per
    item (the padding of ragged orderings would read as ranks)."""
    if not isinstance(ranks, (list, tuple)) or not all(
        isinstance(row, Sized) and not isinstance(row, (str, bytes)) for row in ranks
    ):
        return
    widths = [len(row) for row in ranks]
    bad = next((i for i, width in enumerate(widths) if width != widths[0]), None)
    if bad is not None:
        raise ValueError(
            f"ranks must have a column per item in every row: row 0 has "
            f"{widths[0]} entries, row {bad} has {widths[bad]}. Mark the items a "
            "judge did not rank with `missing` (NaN by default) instead of "
            "leaving them out."
        )


def _check_missing(missing):
    """``missing`` as a float: NaN or an integer in [-2**53, 0] (never a valid
    rank, and exact as a float and as an integer)."""
    valid = False
    if isinstance(missing, (bool, np.bool_)):
        pass  # a flag passed to the wrong argument, not the number 0 or 1
    elif isinstance(missing, numbers.Integral):
        # compared as an integer: -2**53 - 1 would round to -2**53 as a float
        valid = -(2**53) <= int(missing) < 1
    elif isinstance(missing, numbers.Real):
        value = float(missing)
        valid = math.isnan(value) or (value.is_integer() and -(2**53) <= value < 1)
    if not valid:
        raise ValueError(
            "missing must be NaN or an integer below 1 (such as 0) and at least "
            f"-2**53, which no rank can equal; got {missing!r}."
        )
    return float(missing)


def _describe_rank_fault(values, unranked, row):
    """The message for the first fault of one row of a rank matrix."""
    ranked = values[~unranked]
    if ranked.size == 0:
        return f"Row {row} of ranks ranks no item: every entry is missing."
    for value in ranked:
        if value != np.floor(value) or not np.isfinite(value):
            return f"Row {row} of ranks holds {value:g}, which is not an integer rank."
        if value < 1:
            return (
                f"Row {row} of ranks holds the rank {value:g}: ranks start at 1 "
                "(the best item). Mark unranked items with `missing`."
            )
    uniques, counts = np.unique(ranked, return_counts=True)
    if (counts > 1).any():
        tie = uniques[np.argmax(counts > 1)]
        items = np.flatnonzero(~unranked & (values == tie)).tolist()
        return (
            f"Row {row} of ranks gives the rank {tie:g} to items {items}: ties "
            "are not supported, a ranking must be strict."
        )
    absent = sorted(set(range(1, ranked.size + 1)) - set(uniques.astype(int)))
    return (
        f"Row {row} of ranks ranks {ranked.size} items but lacks the rank "
        f"{absent[0]}: a top-t ranking holds the ranks 1 to t, each once."
    )
