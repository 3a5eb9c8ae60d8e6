# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Exponential blurring mean-shift over top-t rankings: the per-pair loops.

The points of the blurring are *distinct* top-t rankings ``S[u]``, each standing
for ``counts[u]`` training rankings (points that reach the same ranking move
together from then on, so they are merged; see MallowsBlurringMeanShift's Notes).
One blurring step moves every point to the weighted consensus of all points,

    sigma_u <- argmin_sigma sum_v w_uv d(S[v], sigma),
    w_uv = counts[v] K_theta(S[u] | S[v]),

with ``K_theta`` the Mallows kernel of Lebanon & Mao (the kernel density's, from
``_kde_kernels``: the point ``u`` as the query, ``v`` as the kernel's centre, as
in the gradient of the kernel density at ``u``) and ``d`` the GM distance with
equal thetas: the number of pairs that the top-t ranking ``S[v]`` orders and
``sigma`` reverses. The weighted sum of ``d`` is linear in the weighted
precedence matrix

    P[a, b] = sum_v w_uv [S[v] puts a before b]  (a ranked; b later or unranked)
            = A[a] - C[b, a],

    A[a] = sum_v w_uv [a in S[v]],   C[b, a] = sum_v w_uv [b before a, both ranked],

so a pair costs O(t^2) to accumulate (A and C), and a point's consensus O(n^2).

Every input reaching these functions has been validated in Python (ids in
``[0, n_items)``, rows well formed, counts >= 1): with bounds checks off, they
trust it.
"""

import numpy as np

from libc.math cimport INFINITY, exp, log
from libc.string cimport memset

from . import _kde_kernels
from ._kde_kernels cimport Tables, log_kernel_one, mark_query, point_tables
from ._kernels cimport check_rankings, intp_t, row_length


cdef void accumulate(
    const intp_t* x,          # IN (tx,) a ranking, best first
    intp_t tx,
    double w,
    intp_t n,
    double* ranked,           # INOUT (n,) A
    double* before,           # INOUT (n, n) C, row-major: C[a, b] at a * n + b
) noexcept nogil:
    """Add ``w`` times the precedence statistics of one ranking to A and C."""
    cdef intp_t p, q, a
    for p in range(tx):
        a = x[p]
        ranked[a] += w
        for q in range(p + 1, tx):
            before[a * n + x[q]] += w


cdef void consensus(
    intp_t n,
    const double* ranked,     # IN (n,) A
    const double* before,     # IN (n, n) C
    intp_t* sigma,            # OUT (n,) the consensus, best first
    double* cost_first,       # scratch (n,)
    char* placed,             # scratch (n,)
) noexcept nogil:
    """A full ranking sigma of small weighted disagreement sum_{a<b in sigma} P[b, a].

    The exact minimiser (a weighted Kemeny problem) is NP-hard in n; this is the
    greedy stagewise rule (put next the item that the fewest weighted votes want
    behind one of the items left) followed by adjacent transpositions while one
    lowers the disagreement, so the result is at least locally optimal. Ties go
    to the smaller item id, so the result is deterministic.
    """
    cdef intp_t a, b, r, best
    cdef double total = 0.0
    cdef bint changed = True
    for a in range(n):
        total += ranked[a]
    # cost_first[a] = sum_{b != a} P[b, a] = sum_{b != a} (A[b] - C[a, b]): the
    # weighted votes for some other item before a (C[a, a] = 0)
    for a in range(n):
        cost_first[a] = total - ranked[a]
        for b in range(n):
            cost_first[a] -= before[a * n + b]
        placed[a] = 0
    for r in range(n):
        best = -1
        for a in range(n):
            if not placed[a] and (best < 0 or cost_first[a] < cost_first[best]):
                best = a
        sigma[r] = best
        placed[best] = 1
        # best is no longer among the items left: drop its votes P[best, a]
        for a in range(n):
            if not placed[a]:
                cost_first[a] -= ranked[best] - before[a * n + best]
    while changed:
        changed = False
        for r in range(n - 1):
            a = sigma[r]
            b = sigma[r + 1]
            # P[b, a] = A[b] - C[a, b] is what "a before b" costs, P[a, b] the swap
            if ranked[b] - before[a * n + b] > ranked[a] - before[b * n + a]:
                sigma[r] = b
                sigma[r + 1] = a
                changed = True


def weighted_consensus(
    const intp_t[:, ::1] X,        # IN (N, t_max) rankings, -1 padded
    const double[::1] weights,     # IN (N,) non-negative
    intp_t n_items,
):
    """The consensus of rankings with weights, a full ranking (for the tests)."""
    cdef intp_t n = n_items, t_max = X.shape[1], i
    cdef double[::1] ranked = np.zeros(n)
    cdef double[:, ::1] before = np.zeros((n, n))
    cdef double[::1] cost_first = np.empty(n)
    cdef char[::1] placed = np.empty(n, dtype=np.int8)
    cdef intp_t[::1] sigma = np.empty(n, dtype=np.intp)
    with nogil:
        for i in range(X.shape[0]):
            accumulate(&X[i, 0], row_length(&X[i, 0], t_max), weights[i], n,
                       &ranked[0], &before[0, 0])
        consensus(n, &ranked[0], &before[0, 0], &sigma[0], &cost_first[0],
                  &placed[0])
    return np.asarray(sigma)


def blur_step(
    const intp_t[:, ::1] S,        # IN (U, t_max) distinct points, -1 padded
    const double[::1] counts,      # IN (U,) training rankings per point, >= 1
    intp_t n_items,
    double theta,
):
    """One blurring step: the first t_max items of the weighted consensus of
    every point, shape (U, t_max), the points' new places.

    O(U^2 (t_max + t_max^2) + U n^2) time, O(U + n^2) memory besides the output
    (U x n for the whole consensuses would take more than the rest at a few
    thousand items).
    """
    cdef intp_t U = S.shape[0], t_max = S.shape[1], n = n_items
    check_rankings(S, n, "the points")
    cdef tuple buffers = _kde_kernels._tables(n, t_max, t_max, theta)
    cdef Tables tables = point_tables(buffers, theta)
    cdef intp_t[::1] length = np.empty(U, dtype=np.intp)
    cdef double[::1] log_weight = np.empty(U)
    cdef double[::1] ranked = np.empty(n)
    cdef double[:, ::1] before = np.empty((n, n))
    cdef double[::1] cost_first = np.empty(n)
    cdef char[::1] placed = np.empty(n, dtype=np.int8)
    cdef intp_t[::1] sigma = np.empty(n, dtype=np.intp)
    cdef intp_t[:, ::1] out = np.empty((U, t_max), dtype=np.intp)
    cdef intp_t u, v
    cdef double top, w
    with nogil:
        for u in range(U):
            length[u] = row_length(&S[u, 0], t_max)
        for u in range(U):
            mark_query(&S[u, 0], length[u], tables.query_position, True)
            top = -INFINITY
            for v in range(U):
                # the query's normaliser is common to all v: left out
                log_weight[v] = log(counts[v]) + log_kernel_one(
                    &tables, length[u], &S[v, 0], length[v]
                )
                if log_weight[v] > top:
                    top = log_weight[v]
            mark_query(&S[u, 0], length[u], tables.query_position, False)
            memset(&ranked[0], 0, n * sizeof(double))
            memset(&before[0, 0], 0, n * n * sizeof(double))
            for v in range(U):
                # weights relative to the largest, so that none overflows
                w = exp(log_weight[v] - top)
                if w > 0.0:
                    accumulate(&S[v, 0], length[v], w, n, &ranked[0],
                               &before[0, 0])
            consensus(n, &ranked[0], &before[0, 0], &sigma[0], &cost_first[0],
                      &placed[0])
            # a point holds at most n items: columns past n stay padding
            for v in range(t_max):
                out[u, v] = sigma[v] if v < n else -1
    return np.asarray(out)
