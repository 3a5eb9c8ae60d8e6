# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The Mallows sub-cluster chain's operations on its rankings, wherever they are.

The chain (``_mallows_chain.MallowsChain`` with ``subcluster=True``) reads its
rankings in six ways only: the label step (every ranking's new cluster given
the parameters), the GM densities of given rankings under a split-merge launch's
two sides, their code totals (the launch's first allocation), the compact
sufficient statistics of sets of rankings (``_kernels.statistics_build``), the
log-likelihood of every ranking in its cluster (the log joint), and the few
rankings a move reads whole (a proposal's anchors, a singleton move's). The
first three are written here once, over a run of consecutive rows (``first_row`` on): the
chain runs them over all its rows, and a Dask worker (``_distributed_rankings``)
over the rows of its chunk, by the ``chunk_*`` functions below. Each row's result
depends on its global index and the parameters only, and the statistics are
integer counts in a canonical order, merged exactly (``_kernels.merge_statistics``),
so the chain draws the same with its rankings in process or on workers.
"""

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY
from libc.stdint cimport int32_t, uint64_t

from ._kernels import ranking_statistics
from ._validation import ranking_lengths
from ._openmp cimport max_threads
from ._restricted cimport PURPOSE_LABEL, precedes, row_draws
from ._rng cimport draw_index


cdef size_t label_scratch_stride(intp_t K, intp_t T) noexcept nogil:
    """Doubles of scratch ``label_rows`` needs per thread: u (4), log weights
    (K + 1), the row's items' offsets (T, as intp_t in doubles' room: both are 8
    bytes), its log densities (K) and one stage's codes (K int32, in (K + 1) // 2
    doubles)."""
    return 4 + (K + 1) + T + K + (K + 1) // 2


cdef void label_rows(
    const intp_t* X, const intp_t* lengths, intp_t T, intp_t n_rows,
    intp_t first_row, const intp_t* labels, intp_t* new_labels, const uint64_t* key,
    uint64_t sweep, const intp_t* active, intp_t K, const double* log_pi,
    const double* anchor_priority, const intp_t* anchor_row,
    const int32_t* positions, const double* stage_theta, const double* stage_norm,
    double* scratch, int n_threads,
) noexcept nogil:
    """The anchored label step of rows ``first_row`` to ``first_row + n_rows - 1``
    (``MallowsChain._parallel_labels``), in a ``prange``.

    ``X``, ``lengths``, ``labels`` and ``new_labels`` hold those rows' parts;
    ``positions``, ``stage_theta`` and ``stage_norm`` are the step's tables,
    cluster-minor (``MallowsChain._label_tables``); ``log_pi``, ``anchor_priority``
    and ``anchor_row`` are by slot. ``scratch`` holds ``n_threads`` x
    ``label_scratch_stride(K, T)`` doubles. A row keeps its label if it anchors its
    cluster, and otherwise draws it from pi_c GM(x_i | sigma_c, theta_c) over the
    clusters whose anchor precedes it, by its own Philox uniforms (key, global
    row, sweep): its draw depends on its index alone, never on the thread.
    """
    cdef intp_t a, c, i, j, k, t, tid, row
    cdef size_t stride = label_scratch_stride(K, T)
    cdef double* u
    cdef double* logw
    cdef intp_t* row_items
    cdef double* value
    cdef int32_t* code
    cdef const int32_t* p_j
    cdef const int32_t* p_k
    cdef const double* th_j
    for i in prange(n_rows, nogil=True, schedule="static", num_threads=n_threads):
        tid = threadid()
        u = scratch + tid * stride
        logw = u + 4
        row_items = <intp_t*> (logw + K + 1)
        value = logw + K + 1 + T
        code = <int32_t*> (value + K)
        row = first_row + i
        c = labels[i]
        if c >= 0 and anchor_row[c] == row:
            new_labels[i] = c
            continue
        row_draws(key, row, sweep, PURPOSE_LABEL, u)
        t = lengths[i]
        for j in range(t):
            row_items[j] = X[i * T + j] * K
        # log GM(x_i | sigma_a, theta_a) for every cluster a at once, stage by
        # stage: the loops run over the clusters, in SIMD lanes. Stage j's code
        # is x_j's position in sigma_a less the earlier items placed before it
        # (codes_from_positions), and the terms are subtracted in gm_from_codes'
        # order, so each value is that of gm_log_density to the bit.
        for a in range(K):
            value[a] = -stage_norm[t * K + a]
        for j in range(t):
            p_j = positions + row_items[j]
            for a in range(K):
                code[a] = p_j[a]
            for k in range(j):
                p_k = positions + row_items[k]
                for a in range(K):
                    code[a] -= p_k[a] < p_j[a]
            th_j = stage_theta + j * K
            for a in range(K):
                value[a] -= th_j[a] * code[a]
        for a in range(K):
            c = active[a]
            if precedes(anchor_priority[c], anchor_row[c], u[0], row):
                logw[a] = log_pi[c] + value[a]
            else:
                logw[a] = -INFINITY
        new_labels[i] = active[draw_index(logw, K, u[1])]


cdef void density_rows(
    const intp_t* X, const intp_t* lengths, intp_t T, intp_t first_row,
    const intp_t* points, intp_t m,
    const intp_t* pos_a, const double* th_a, const double* norm_a,
    const intp_t* pos_b, const double* th_b, const double* norm_b,
    double* gm_a, double* gm_b, intp_t* codes, int n_threads,
) noexcept nogil:
    """``gm_a[r]``, ``gm_b[r]``: log GM of ranking ``points[r]`` (a global row;
    ``X`` and ``lengths`` start at ``first_row``) under the two parameter sets, in
    a ``prange``; ``codes`` holds ``n_threads`` x T scratch."""
    cdef intp_t r, k, tid
    cdef intp_t* code
    for r in prange(m, nogil=True, schedule="static", num_threads=n_threads):
        tid = threadid()
        code = codes + tid * T
        k = points[r] - first_row
        gm_a[r] = gm_log_density(X + k * T, lengths[k], pos_a, th_a, norm_a, code)
        gm_b[r] = gm_log_density(X + k * T, lengths[k], pos_b, th_b, norm_b, code)


cdef inline double code_total(
    const intp_t* x, intp_t t, const intp_t* pos, intp_t* code,
) noexcept nogil:
    """The sum of the codes of the top-t ranking x against the ranking whose
    inverse is ``pos`` (an integer, exact in a double)."""
    cdef intp_t j, total = 0
    codes_one(x, t, pos, code)
    for j in range(t):
        total += code[j]
    return <double> total


cdef void code_total_rows(
    const intp_t* X, const intp_t* lengths, intp_t T, intp_t first_row,
    const intp_t* points, intp_t m, const intp_t* pos_a, const intp_t* pos_b,
    double* total_a, double* total_b, intp_t* codes, int n_threads,
) noexcept nogil:
    """``total_a[r]``, ``total_b[r]``: the sum of the codes of ranking
    ``points[r]`` against the rankings whose inverses are ``pos_a`` and ``pos_b``
    (integers, exact in doubles), in a ``prange``; ``codes`` holds
    ``n_threads`` x T scratch."""
    cdef intp_t r, k, tid
    cdef intp_t* code
    for r in prange(m, nogil=True, schedule="static", num_threads=n_threads):
        tid = threadid()
        code = codes + tid * T
        k = points[r] - first_row
        total_a[r] = code_total(X + k * T, lengths[k], pos_a, code)
        total_b[r] = code_total(X + k * T, lengths[k], pos_b, code)


cdef int threads_for(intp_t rows) noexcept nogil:
    """OpenMP threads for a loop over ``rows`` rows: at most ``max_threads()``,
    each with at least MIN_ROWS_PER_THREAD rows."""
    return max(1, min(max_threads(), rows // MIN_ROWS_PER_THREAD))


cdef int threads_for_codes(intp_t rows, intp_t T) noexcept nogil:
    """OpenMP threads for a loop that computes the codes of ``rows`` rankings
    of up to T items (O(T^2) each at most: from 80 items ``codes_one`` may
    take a tree, O(T log T)): ``threads_for`` counting a ranking of more than
    10 items as (T / 10)^2 rankings of 10, so that a few hundred full
    rankings of hundreds of items get the threads."""
    return threads_for(min(rows * max(T * T, 100) // 100, <intp_t> 1 << 40))


# -- a chunk of rankings on a Dask worker ---------------------------------------


class ChunkRankings:
    """The validated rankings of one chunk, on the worker that holds them.

    Parameters
    ----------
    X : ndarray of shape (n_rows, T)
        Rankings as ``check_rankings`` returns them (np.intp, padded with -1),
        cut to the data's T stages.
    n_items : int
        The number of items n.
    """

    def __init__(self, X, n_items):
        self.X = np.ascontiguousarray(X, dtype=np.intp)
        self.lengths = ranking_lengths(self.X)
        self.n_items = int(n_items)


def chunk_label_step(
    rows, intp_t offset, const intp_t[::1] labels, const uint64_t[::1] key,
    uint64_t sweep, const intp_t[::1] active, const double[::1] log_pi,
    const double[::1] anchor_priority, const intp_t[::1] anchor_row,
    const int32_t[::1] positions, const double[::1] theta, const double[::1] norm,
):
    """``label_rows`` over a chunk's rows (``offset``: its first row's index):
    their new labels."""
    cdef const intp_t[:, ::1] X = rows.X
    cdef const intp_t[::1] lengths = rows.lengths
    cdef intp_t n_rows = X.shape[0], K = active.shape[0], T = X.shape[1]
    cdef int n_threads = threads_for(n_rows)
    cdef intp_t[::1] new_labels = np.empty(n_rows, dtype=np.intp)
    cdef double[::1] scratch = np.empty(
        n_threads * label_scratch_stride(K, T), dtype=np.float64)
    if n_rows:
        with nogil:
            label_rows(&X[0, 0], &lengths[0], T, n_rows, offset, &labels[0],
                       &new_labels[0], &key[0], sweep, &active[0], K, &log_pi[0],
                       &anchor_priority[0], &anchor_row[0], &positions[0],
                       &theta[0], &norm[0], &scratch[0], n_threads)
    return np.asarray(new_labels)


def chunk_densities(
    rows, intp_t offset, const intp_t[::1] points,
    const intp_t[::1] pos_a, const double[::1] th_a, const double[::1] norm_a,
    const intp_t[::1] pos_b, const double[::1] th_b, const double[::1] norm_b,
):
    """``density_rows`` over rows of the chunk: (log GM under A, under B)."""
    cdef const intp_t[:, ::1] X = rows.X
    cdef const intp_t[::1] lengths = rows.lengths
    cdef intp_t m = points.shape[0], T = X.shape[1]
    cdef int n_threads = threads_for_codes(m, T)
    cdef double[::1] gm_a = np.empty(m)
    cdef double[::1] gm_b = np.empty(m)
    cdef intp_t[::1] codes = np.empty(n_threads * T, dtype=np.intp)
    if m:
        with nogil:
            density_rows(&X[0, 0], &lengths[0], T, offset, &points[0], m,
                         &pos_a[0], &th_a[0], &norm_a[0], &pos_b[0], &th_b[0],
                         &norm_b[0], &gm_a[0], &gm_b[0], &codes[0], n_threads)
    return np.asarray(gm_a), np.asarray(gm_b)


def chunk_code_totals(
    rows, intp_t offset, const intp_t[::1] points, const intp_t[::1] pos_a,
    const intp_t[::1] pos_b,
):
    """``code_total_rows`` over rows of the chunk: (totals under A, under B)."""
    cdef const intp_t[:, ::1] X = rows.X
    cdef const intp_t[::1] lengths = rows.lengths
    cdef intp_t m = points.shape[0], T = X.shape[1]
    cdef int n_threads = threads_for_codes(m, T)
    cdef double[::1] total_a = np.empty(m)
    cdef double[::1] total_b = np.empty(m)
    cdef intp_t[::1] codes = np.empty(n_threads * max(T, 1), dtype=np.intp)
    if m:
        with nogil:
            code_total_rows(&X[0, 0], &lengths[0], T, offset, &points[0], m,
                            &pos_a[0], &pos_b[0], &total_a[0], &total_b[0],
                            &codes[0], n_threads)
    return np.asarray(total_a), np.asarray(total_b)


def chunk_log_likelihoods(
    rows, intp_t offset, const intp_t[::1] labels, const intp_t[::1] position,
    const double[::1] theta, const double[::1] log_norm,
):
    """log GM(x_i | sigma_c, theta_c) of each row i of the chunk in its cluster c
    = ``labels[i]``, the parameters by slot (``position`` (capacity, n), ``theta``
    (capacity, T), ``log_norm`` (capacity, T + 1), flattened)."""
    cdef const intp_t[:, ::1] X = rows.X
    cdef const intp_t[::1] lengths = rows.lengths
    cdef intp_t i, c, n_rows = X.shape[0], T = X.shape[1], n = rows.n_items
    cdef double[::1] out = np.empty(n_rows)
    cdef intp_t[::1] code = np.empty(T, dtype=np.intp)
    with nogil:
        for i in range(n_rows):
            c = labels[i]
            out[i] = gm_log_density(&X[i, 0], lengths[i], &position[c * n],
                                    &theta[c * T], &log_norm[c * (T + 1)], &code[0])
    return np.asarray(out)


def chunk_statistics(rows, intp_t offset, point_sets):
    """The statistics (``ranking_statistics``) of each set of the chunk's rows
    (global indices), None for a set with none here."""
    return [
        ranking_statistics(rows.X, np.asarray(points, dtype=np.intp) - offset,
                           rows.n_items) if len(points) else None
        for points in point_sets
    ]


def chunk_label_step_statistics(rows, intp_t offset, labels, key, sweep, active,
                                 *tables):
    """``chunk_label_step``, then the statistics of the chunk's rows in each
    slot of ``active`` by their new labels (``chunk_cluster_statistics``): what
    the chain's parameter update reads next, in the same round trip."""
    new_labels = chunk_label_step(rows, offset, labels, key, sweep, active, *tables)
    return new_labels, chunk_cluster_statistics(rows, offset, new_labels, active)


def chunk_cluster_statistics(rows, intp_t offset, labels, slots):
    """The statistics of the chunk's rows in each slot of ``slots``, by
    ``labels`` (the chunk's part), None for a slot with none here."""
    labels = np.asarray(labels)
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], slots, side="left")
    stops = np.searchsorted(labels[order], slots, side="right")
    return [
        ranking_statistics(rows.X, order[start:stop], rows.n_items)
        if stop > start else None
        for start, stop in zip(starts, stops)
    ]


def chunk_rows(rows, intp_t offset, indices):
    """The rankings ``indices`` (global) of the chunk."""
    return rows.X[np.asarray(indices, dtype=np.intp) - offset]
