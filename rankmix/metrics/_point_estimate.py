"""Point estimates of a clustering from its posterior draws: least expected loss."""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import numbers

import numpy as np
from sklearn.utils import check_random_state

from .._consensus import _check_labels, _distinct, _unique_draws
from .._partition_search import search_partition
from .._validation import sized_by

__all__ = ["expected_loss", "minimize_expected_loss"]

_LOSSES = ("vi", "binder")


def minimize_expected_loss(
    label_samples,
    *,
    loss="vi",
    n_runs=4,
    max_clusters=None,
    max_sweeps=100,
    start=None,
    random_state=None,
):
    """The clustering of least posterior expected loss, found by a greedy search.

    A point estimate of a clustering from its posterior draws, as SALSO (Dahl,
    Johnson & Mueller 2022) and mcclust.ext's ``minVI`` (Wade & Ghahramani
    2018) compute it. Unlike the estimators' ``labels_`` (the draw with the
    least mean VI to the others), the result need not be one of the draws.

    Parameters
    ----------
    label_samples : array-like of int of shape (n_draws, n_samples)
        The posterior draws, one clustering per row, such as a fitted
        estimator's ``label_samples_``. Labels need not be contiguous.

    loss : {"vi", "binder"}, default="vi"
        ``"vi"``: the variation of information (Meila 2007), in nats;
        ``"binder"``: Binder's loss with equal costs, the number of pairs of
        points that the two clusterings treat differently (together in one,
        apart in the other). Binder's loss favours splitting off small
        uncertain clusters; VI favours fewer, larger ones (Wade & Ghahramani
        2018).

    n_runs : int, default=4
        Searches from random orders of the points; the best is kept. More runs
        find a better minimum more often.

    max_clusters : int, default=None
        Most clusters the result may have. Default: twice the largest number
        of clusters among the draws (at most ``n_samples``).

    max_sweeps : int, default=100
        Most reassignment sweeps per run (a run stops earlier, as soon as a
        sweep moves no point).

    start : array-like of int of shape (n_samples,), default=None
        A clustering to improve on (for example ``model.labels_``): one extra
        run sweeps from it, so the result is never worse than ``start``.

    random_state : int, RandomState instance or None, default=None
        Fixes the orders of the runs.

    Returns
    -------
    labels : ndarray of shape (n_samples,), dtype=np.intp
        The clustering found, clusters numbered by first appearance.

    Raises
    ------
    ValueError
        If ``label_samples`` is not a 2-D array of non-negative integer labels
        with at least one row, if a parameter is out of its range, or if the
        count table of a thread (see Notes) would pass 2 GiB.

    See Also
    --------
    expected_loss : The posterior expected loss of a given clustering.

    Notes
    -----
    For both losses, with n_k the cluster sizes of c, m_l those of a draw c'
    and n_kl their contingency table, L(c, c') Z = sum_k g(n_k) + sum_l g(m_l)
    - 2 sum_kl g(n_kl), with g(x) = x log x and Z = N for VI, g(x) = x (x - 1)
    / 2 and Z = 1 for Binder's loss. The expected loss is the mean over the
    draws; moving one point changes it by a sum over the distinct draws, so a
    sweep costs O(N K M) for K clusters and M distinct draws. Its memory is one
    count table of ``max_clusters`` x sum_m K_m int32 per thread (the runs
    share out over OpenMP threads, at most ``n_runs`` of them), K_m the
    clusters of distinct draw m. A run places the points one at a time in a
    random order, each in the cluster (or a new one) of least expected loss
    given those placed, then moves single points while that lowers the loss,
    and dissolves whole clusters (dealing their points anew) when that lowers
    it, as SALSO's "zealous" updates do. The search is greedy: it reaches a
    local minimum, which more runs make more likely to be the global one. At
    2,000 rankings and 100 draws (the gallery's sushi data) a run takes about
    1 to 3 s on one core (``benchmarks/bench_point_estimate.py``).

    Examples
    --------
    >>> from rankmix.metrics import minimize_expected_loss
    >>> draws = [[0, 0, 1, 1, 2], [0, 0, 1, 1, 1], [0, 0, 1, 1, 2], [0, 1, 2, 2, 3]]
    >>> minimize_expected_loss(draws, random_state=0)
    array([0, 0, 1, 1, 2])
    """
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}; got {loss!r}.")
    n_runs = _check_count(n_runs, "n_runs", low=0)
    max_sweeps = _check_count(max_sweeps, "max_sweeps", low=0)
    # codes of a byte a label up to 128 clusters, as the estimators keep
    # their draws (the search reads them in any of int8, int16 and int32)
    codes, n_labels = _check_labels(label_samples, compact=True)
    n_samples = codes.shape[1]
    if n_samples == 0:
        return np.zeros(0, dtype=np.intp)
    if max_clusters is None:
        max_clusters = min(n_samples, 2 * int(n_labels.max()))
    max_clusters = _check_count(max_clusters, "max_clusters", low=1)
    start_codes = None
    if start is not None:
        start_codes, n_start = _check_labels(np.asarray(start).reshape(1, -1), "start")
        if start_codes.shape[1] != n_samples:
            raise ValueError(
                f"start has {start_codes.shape[1]} labels, but label_samples has "
                f"{n_samples} columns."
            )
        max_clusters = max(max_clusters, int(n_start[0]))
        start_codes = start_codes[0]
    elif n_runs == 0:
        raise ValueError("n_runs must be at least 1 when start is None.")
    first, inverse = _unique_draws(codes)
    _check_table_size(min(max_clusters, n_samples), int(n_labels[first].sum()))
    weights = np.bincount(inverse).astype(np.float64) / codes.shape[0]
    rng = check_random_state(random_state)
    with sized_by("n_runs", n_runs):
        orders = np.empty((max(n_runs, 1), n_samples), dtype=np.int32)
    for run in range(orders.shape[0]):
        orders[run] = rng.permutation(n_samples)
    labels, _ = search_partition(
        _distinct(codes, first),
        n_labels[first],
        weights,
        orders,
        n_runs,
        start_codes,
        loss == "binder",
        min(max_clusters, n_samples),
        max_sweeps,
    )
    relabelled, _ = _check_labels(labels.reshape(1, -1))
    return relabelled[0].astype(np.intp)


def expected_loss(labels, label_samples, *, loss="vi"):
    """Posterior expected loss of a clustering: its mean loss to the draws.

    Parameters
    ----------
    labels : array-like of int of shape (n_samples,)
        The clustering to score.

    label_samples : array-like of int of shape (n_draws, n_samples)
        The posterior draws.

    loss : {"vi", "binder"}, default="vi"
        As in :func:`minimize_expected_loss`.

    Returns
    -------
    loss : float
        The mean over the draws of VI (nats) or of Binder's loss (pairs).

    Examples
    --------
    >>> from rankmix.metrics import expected_loss
    >>> round(expected_loss([0, 0, 1, 1], [[0, 0, 1, 1], [0, 0, 0, 0]]), 4)
    0.3466
    """
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}; got {loss!r}.")
    # the draws' codes in a byte a label (up to 128 clusters), each distinct
    # draw widened to int64 alone: with int32 codes and every distinct draw in
    # int64 at once, the call peaked at 16 times the estimators' int8 draws
    codes, _ = _check_labels(label_samples, compact=True)
    own, _ = _check_labels(np.asarray(labels).reshape(1, -1), "labels")
    if own.shape[1] != codes.shape[1]:
        raise ValueError(
            f"labels has {own.shape[1]} entries, but label_samples has "
            f"{codes.shape[1]} columns."
        )
    n = codes.shape[1]
    if n == 0:
        return 0.0

    def g(counts):
        counts = counts[counts > 0].astype(np.float64)
        if loss == "binder":
            return float((counts * (counts - 1) / 2).sum())
        return float((counts * np.log(counts)).sum())

    own = own[0].astype(np.int64)
    first, inverse = _unique_draws(codes)
    weights = np.bincount(inverse) / codes.shape[0]
    own_part = g(np.bincount(own))
    total = 0.0
    for weight, row in zip(weights, first):
        draw = codes[row].astype(np.int64)
        cells = (own.max() + 1) * (draw.max() + 1)
        keys = own * (draw.max() + 1) + draw
        # the contingency table's cells, counted densely when the table is
        # small, else only the cells that occur (N singletons against N would
        # ask for an N x N table)
        if cells <= 4 * n + 1024:
            joint = np.bincount(keys)
        else:
            joint = np.unique(keys, return_counts=True)[1]
        total += weight * (own_part + g(np.bincount(draw)) - 2 * g(joint))
    return float(total / n if loss == "vi" else total)


# The most bytes of one thread's count table in minimize_expected_loss.
MAX_TABLE_BYTES = 2**31


def _check_table_size(max_clusters, total_labels):
    """Refuse a search whose per-thread count table, max_clusters x the distinct
    draws' clusters summed, int32, would pass MAX_TABLE_BYTES."""
    size = 4 * max_clusters * total_labels
    if size > MAX_TABLE_BYTES:
        raise ValueError(
            f"minimize_expected_loss would hold a count table of max_clusters="
            f"{max_clusters} x {total_labels} (the clusters of the distinct "
            f"draws, summed) int32 per thread, {size / 2**30:,.1f} GiB; at most "
            f"{MAX_TABLE_BYTES // 2**30} GiB. Pass a smaller max_clusters, or "
            "fewer draws."
        )


def _check_count(value, name, *, low):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer; got {value!r}.")
    if value < low:
        raise ValueError(f"{name} must be at least {low}; got {value}.")
    return int(value)
