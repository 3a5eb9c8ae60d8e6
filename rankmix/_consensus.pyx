# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Compiled variation of information between posterior draws of a clustering.

The MCMC engine keeps ``S`` posterior draws of a clustering of ``N`` points as an
integer array ``label_samples`` of shape ``(S, N)``. This module compares all the
draws two by two with the variation of information (VI) of Meila (2007), in nats,
and picks as point estimate the draw with the least mean VI to the others.

Functions
---------
pairwise_vi
    The ``(S, S)`` matrix of the VI between every two draws.
vi_consensus
    Index of the draw with the least mean VI to the other draws.

Notes
-----
Every draw is first relabelled to the codes ``0..K_s-1`` in order of first
appearance, so labels need not be contiguous, and two draws equal up to a
renaming of the clusters get identical code rows. Identical draws (frequent in a
sticky chain) are then compared only once: the work is :math:`O(M^2 N)` for
:math:`M \\le S` distinct draws, in :math:`O(N + \\sum_s K_s)` memory plus a
dense count buffer of at most :data:`DENSE_LIMIT` cells.

Each pair of draws ``(U, V)`` costs one pass over the ``N`` points plus the
non-zero cells of their contingency table:

* when ``K_U K_V <= DENSE_LIMIT``, the joint codes ``i K_V + j`` are counted in
  a dense buffer. If four copies of that table fit in ``N`` cells, the points
  are dealt to the four in turn (so that runs of points in one cell do not
  serialise on its count), and the tables are scanned whole and cleared with
  ``memset``; otherwise the cells touched are listed as they are first hit and
  only those are read and reset, an :math:`O(N)` cost however large
  ``K_U K_V`` is;
* otherwise (very many clusters), the points are grouped by their cluster of
  ``U`` with a counting sort (done once per draw ``U``, stable, :math:`O(N +
  K_U)`), and within each group the clusters of ``V`` are counted in a buffer of
  ``K_V`` cells, touched cells listed and reset. This sorts the joint codes by
  their first key in linear time and counts the second densely, so the cost
  stays :math:`O(N)` per pair and the memory :math:`O(N)`, never
  :math:`O(N^2)` nor :math:`O(K_U K_V)`.

The VI is summed over the non-zero cells as
:math:`\\sum_{ij} n_{ij} (\\log a_i + \\log b_j - 2 \\log n_{ij}) / N` from one
table of :math:`\\log k`, ``k = 0..N``, so the pair loops call no ``log``; every
term is non-negative and equal clusterings give exactly ``0.0``.

The codes are stored in the smallest of ``int8``, ``int16`` and ``int32`` that
holds them (one byte a point for the estimators' draws of up to 128 clusters:
the draws are the largest array of a fit at 10**6 points), which limits ``N``
to ``2**31 - 1`` points per draw.

The rows of pairs ``(s, t > s)`` are shared out over OpenMP threads (limited
by ``OMP_NUM_THREADS`` or threadpoolctl), each with its own count buffers:
every pair is computed as it would be alone, so the result does not depend on
the number of threads. A matrix of fewer than about 2**22 point visits runs
on one thread.

References
----------
.. [1] M. Meila, "Comparing clusterings -- an information based distance",
   Journal of Multivariate Analysis, 98(5):873-895, 2007.
   https://doi.org/10.1016/j.jmva.2006.11.013
"""

from numbers import Integral
from operator import index as operator_index

import numpy as np

from libc.math cimport log
from libc.stdint cimport int8_t, int16_t, int32_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memset

from cython.parallel cimport prange, threadid

from ._openmp cimport max_threads
from ._slots cimport intp_t, relabel_first_appearance

#: Largest contingency table, in cells, that is counted in a dense buffer; pairs
#: of draws with ``K_U * K_V`` above it go through the grouped (sorted) path. The
#: buffer holds ``min(DENSE_LIMIT, max K_U * K_V)`` counts of 4 bytes (512 KiB at
#: most by default: beyond about that size, random increments miss the cache and
#: the grouped path, whose counts stay in L1, is faster).
#: ``pairwise_vi(..., dense_limit=0)`` forces the grouped path for every pair.
DENSE_LIMIT = 1 << 17

# Labels up to max(_LUT_FACTOR * N, _MIN_LUT) are relabelled with a look-up
# table of that size; larger labels are first factorised with np.unique.
_LUT_FACTOR = 8
_MIN_LUT = 1 << 16

# Codes are stored as int32 (half the memory traffic of intp in the pair loops),
# or for the pairwise VI in the smallest of int8, int16 and int32 that holds
# them (module Notes).
INT32_MAX = 2**31 - 1

ctypedef fused code_t:
    int8_t
    int16_t
    int32_t


# ---------------------------------------------------------------------------
# Relabelling
# ---------------------------------------------------------------------------

def number_by_first_appearance(const intp_t[::1] labels, intp_t n_labels):
    """Number labels ``0..n_labels-1`` by order of first appearance.

    How a chain's snapshot names its clusters: slot ids mean nothing to the
    user, and two states equal up to a renaming of the slots get equal labels.

    Parameters
    ----------
    labels : ndarray of intp of shape (n,)
        Labels in ``0..n_labels-1``.
    n_labels : int
        One more than the largest label that may occur.

    Returns
    -------
    codes : ndarray of int32 of shape (n,)
        ``0..K-1``, the first label met numbered 0.
    firsts : ndarray of intp of shape (K,)
        The label numbered ``k``, for each ``k``.
    """
    cdef intp_t n = labels.shape[0], k
    if n == 0:
        return np.empty(0, dtype=np.int32), np.empty(0, dtype=np.intp)
    cdef int32_t[::1] codes = np.empty(n, dtype=np.int32)
    cdef intp_t[::1] firsts = np.empty(max(min(n, n_labels), 1), dtype=np.intp)
    cdef intp_t[::1] lut = np.full(max(n_labels, 1), -1, dtype=np.intp)
    with nogil:
        k = relabel_first_appearance(&labels[0], n, &lut[0], &firsts[0], &codes[0])
    return np.asarray(codes), np.asarray(firsts[:k])


def _integer_objects(labels, name):
    """An object array of Python or NumPy integers as int64, or a ValueError."""
    for item in labels.flat:
        if not isinstance(item, Integral):
            raise ValueError(
                f"{name} must hold integer labels; got {item!r} of type "
                f"{type(item).__name__}."
            )
    try:
        return labels.astype(np.int64)
    except OverflowError:
        raise ValueError(f"{name} holds a label beyond the int64 range.") from None


def _check_labels(label_samples, name="label_samples", compact=False):
    """Validate ``label_samples`` and relabel every row to codes ``0..K-1``.

    Returns ``codes`` (S, N) int32, C-contiguous, with the clusters of each row
    numbered in order of first appearance, and ``n_clusters`` (S,) intp. Errors
    name the argument ``name``. ``compact``: codes in the smallest of int8,
    int16 and int32 that holds them (a byte a label for the estimators'
    draws: the VI, the least-expected-loss search and the plots read them so).
    """
    labels = np.asarray(label_samples)
    if labels.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_draws, n_samples); "
            f"got an array with {labels.ndim} dimension(s)."
        )
    n_draws, n_samples = labels.shape
    if n_draws == 0:
        raise ValueError(f"{name} must hold at least one draw; got 0 rows.")
    if labels.size == 0:
        labels = labels.astype(np.intp)  # np.asarray([]) is float64
    elif labels.dtype.kind == "O":
        labels = _integer_objects(labels, name)  # as variation_of_information
    if labels.dtype.kind not in "biu":
        raise ValueError(
            f"{name} must hold integer labels; got dtype {labels.dtype}."
        )
    if labels.dtype.kind == "b":
        labels = labels.astype(np.intp)
    if n_samples > INT32_MAX:
        raise ValueError(
            f"{name} may have at most {INT32_MAX} columns; got {n_samples}."
        )
    if n_samples == 0:
        return (np.zeros((n_draws, 0), dtype=np.int32),
                np.zeros(n_draws, dtype=np.intp))

    low = int(labels.min())
    if low < 0:
        raise ValueError(
            f"{name} must hold non-negative labels; got the label {low}."
        )
    high = int(labels.max())
    lut_limit = max(_LUT_FACTOR * n_samples, _MIN_LUT)
    if high >= lut_limit:
        # Huge label values: factorise them all first (codes < S * N).
        labels = np.unique(labels, return_inverse=True)[1].reshape(n_draws, n_samples)
        high = int(labels.max())
    # a row has at most min(N, high + 1) clusters, coded from 0 (N < 2**31:
    # int32 at most)
    dtype = _smallest_label_dtype(min(n_samples, high + 1) - 1) if compact else np.int32
    codes = np.empty((n_draws, n_samples), dtype=dtype)
    n_clusters = np.empty(n_draws, dtype=np.intp)
    # each row is coded here, then copied into codes (in place when int32)
    row_codes = codes if dtype == np.int32 else np.empty((1, n_samples), np.int32)
    cdef int32_t[:, ::1] codes_view = row_codes
    cdef intp_t[::1] n_clusters_view = n_clusters
    cdef const intp_t[::1] row_view
    cdef intp_t s, p, n = n_samples, lut_size = high + 1
    cdef intp_t* lut = <intp_t*> malloc(lut_size * sizeof(intp_t))
    cdef intp_t* firsts = <intp_t*> malloc(n_samples * sizeof(intp_t))
    if lut == NULL or firsts == NULL:
        free(lut)
        free(firsts)
        raise MemoryError()
    for p in range(lut_size):
        lut[p] = -1
    try:
        # One row at a time: the engine's draws come in the smallest integer
        # dtype that holds them, and a whole (S, N) copy as intp would be the
        # largest array of the fit.
        for s in range(n_draws):
            row_view = np.ascontiguousarray(labels[s], dtype=np.intp)
            row = s if dtype == np.int32 else 0
            with nogil:
                n_clusters_view[s] = relabel_first_appearance(
                    &row_view[0], n, lut, firsts, &codes_view[row, 0])
            if dtype != np.int32:
                codes[s] = row_codes[0]
    finally:
        free(lut)
        free(firsts)
    return codes, n_clusters


def _smallest_label_dtype(max_label):
    """The smallest signed integer dtype that holds ``0..max_label``: the dtype
    of the engine's stored draws and of the compact codes."""
    for dtype in (np.int8, np.int16, np.int32):
        if max_label <= np.iinfo(dtype).max:
            return np.dtype(dtype)
    return np.dtype(np.int64)


def _unique_draws(codes):
    """Group identical code rows (draws equal up to a renaming of clusters).

    Returns ``first`` (M,), the index of the first draw of each distinct
    clustering in order of first appearance, and ``inverse`` (S,), the distinct
    clustering of each draw.
    """
    n_draws = codes.shape[0]
    buckets = {}
    first = []
    inverse = np.empty(n_draws, dtype=np.intp)
    for s in range(n_draws):
        row = codes[s]
        candidates = buckets.setdefault(hash(row.tobytes()), [])
        for m in candidates:
            if np.array_equal(codes[first[m]], row):
                inverse[s] = m
                break
        else:
            inverse[s] = len(first)
            candidates.append(len(first))
            first.append(s)
    return np.asarray(first, dtype=np.intp), inverse


# ---------------------------------------------------------------------------
# VI of one pair of draws
# ---------------------------------------------------------------------------

cdef double _vi_small(
    const code_t* u, const code_t* v, intp_t n, intp_t ku, intp_t kv,
    const double* log_u,    # IN (ku,) log of the cluster sizes of u
    const double* log_v,    # IN (kv,)
    const double* log_k,    # IN (n + 1,) log k
    int32_t* count,         # WORK (4 * ku * kv,) all 0 on entry and on exit
) noexcept nogil:
    """VI for a table of ``4 ku kv <= n`` cells: count, scan it all, memset.

    Four copies of the table take every fourth point, so that consecutive points
    in the same cell do not wait on each other's increments.
    """
    cdef intp_t p, i, j, c, n_ij, cells = ku * kv
    cdef int32_t* count1 = count + cells
    cdef int32_t* count2 = count + 2 * cells
    cdef int32_t* count3 = count + 3 * cells
    cdef double lu, total = 0.0
    p = 0
    while p + 4 <= n:
        count[u[p] * kv + v[p]] += 1
        count1[u[p + 1] * kv + v[p + 1]] += 1
        count2[u[p + 2] * kv + v[p + 2]] += 1
        count3[u[p + 3] * kv + v[p + 3]] += 1
        p += 4
    while p < n:
        count[u[p] * kv + v[p]] += 1
        p += 1
    c = 0
    for i in range(ku):
        lu = log_u[i]
        for j in range(kv):
            n_ij = count[c] + count1[c] + count2[c] + count3[c]
            if n_ij:
                total += n_ij * ((lu + log_v[j]) - 2.0 * log_k[n_ij])
            c += 1
    memset(count, 0, 4 * cells * sizeof(int32_t))
    return total / n


cdef double _vi_dense(
    const code_t* u, const code_t* v, intp_t n, intp_t kv,
    const double* log_u, const double* log_v, const double* log_k,
    int32_t* count,         # WORK (ku * kv,) all 0 on entry and on exit
    intp_t* touched,        # WORK (n,)
) noexcept nogil:
    """VI through a dense table, reading and resetting only the cells touched.

    ``touched`` lists the first point of each cell hit, which gives the cell's
    ``(i, j)`` without a division.
    """
    cdef intp_t p, q, i, j, c, n_ij, m = 0
    cdef double total = 0.0
    for p in range(n):
        c = <intp_t> u[p] * kv + v[p]
        # Branch-free: the test is unpredictable when most cells are new.
        touched[m] = p
        m += count[c] == 0
        count[c] += 1
    for q in range(m):
        p = touched[q]
        i = u[p]
        j = v[p]
        c = i * kv + j
        n_ij = count[c]
        count[c] = 0
        total += n_ij * ((log_u[i] + log_v[j]) - 2.0 * log_k[n_ij])
    return total / n


cdef void _group(
    const code_t* u, intp_t n, intp_t ku,
    intp_t* order,          # OUT (n,) points sorted by cluster of u (stable)
    intp_t* start,          # OUT (ku + 1,) group i is order[start[i]:start[i+1]]
) noexcept nogil:
    """Counting sort of the points by their cluster in ``u``."""
    cdef intp_t p, i
    for i in range(ku + 1):
        start[i] = 0
    for p in range(n):
        start[u[p] + 1] += 1
    for i in range(ku):
        start[i + 1] += start[i]
    for p in range(n):
        i = u[p]
        order[start[i]] = p
        start[i] += 1
    # start[i] now holds the end of group i: shift back by one.
    for i in range(ku, 0, -1):
        start[i] = start[i - 1]
    start[0] = 0


cdef double _vi_grouped(
    const code_t* v, intp_t n, intp_t ku,
    const intp_t* order, const intp_t* start,   # IN the grouping of u
    const double* log_u, const double* log_v, const double* log_k,
    int32_t* count,         # WORK (kv,) all 0 on entry and on exit
    intp_t* touched,        # WORK (kv,)
) noexcept nogil:
    """VI with the points grouped by cluster of u, counting v within a group."""
    cdef intp_t i, q, j, n_ij, m
    cdef double lu, total = 0.0
    for i in range(ku):
        m = 0
        for q in range(start[i], start[i + 1]):
            j = v[order[q]]
            touched[m] = j
            m += count[j] == 0
            count[j] += 1
        lu = log_u[i]
        for q in range(m):
            j = touched[q]
            n_ij = count[j]
            count[j] = 0
            total += n_ij * ((lu + log_v[j]) - 2.0 * log_k[n_ij])
    return total / n


# ---------------------------------------------------------------------------
# All pairs
# ---------------------------------------------------------------------------

cdef void _log_sizes(
    const code_t[:, ::1] codes, const intp_t[::1] n_clusters,
    const intp_t* offset, const double* log_k,
    intp_t* size,           # WORK (max K,)
    double* log_size,       # OUT (sum K,) row s at log_size[offset[s]:]
) noexcept nogil:
    cdef intp_t s, p, i
    cdef intp_t n_draws = codes.shape[0], n = codes.shape[1]
    for s in range(n_draws):
        for i in range(n_clusters[s]):
            size[i] = 0
        for p in range(n):
            size[codes[s, p]] += 1
        for i in range(n_clusters[s]):
            log_size[offset[s] + i] = log_k[size[i]]


cdef void _all_pairs(
    const code_t[:, ::1] codes, const intp_t[::1] n_clusters,
    const intp_t* offset, const double* log_size, const double* log_k,
    intp_t dense_limit,
    int32_t* count,         # WORK (n_threads, count_stride) all 0
    intp_t count_stride,
    intp_t* touched,        # WORK (n_threads, n)
    intp_t* order,          # WORK (n_threads, n) or NULL if no pair needs grouping
    intp_t* start,          # WORK (n_threads, start_stride) or NULL
    intp_t start_stride,
    double[:, ::1] out,
    int n_threads,
) noexcept nogil:
    """Every pair (s, t), s < t, on ``n_threads`` threads, each row s on one
    thread with its own work buffers: a pair's VI does not depend on which."""
    cdef intp_t s, tid, n_draws = codes.shape[0], n = codes.shape[1]
    if n_threads == 1:
        for s in range(n_draws):
            _row_pairs(s, codes, n_clusters, offset, log_size, log_k, dense_limit,
                       count, touched, order, start, out)
        return
    # row s holds n_draws - 1 - s pairs: dynamic scheduling evens the threads
    for s in prange(n_draws, schedule="dynamic", num_threads=n_threads):
        tid = threadid()
        _row_pairs(s, codes, n_clusters, offset, log_size, log_k, dense_limit,
                   count + tid * count_stride, touched + tid * n,
                   order + tid * n if order != NULL else NULL,
                   start + tid * start_stride if start != NULL else NULL, out)


cdef void _row_pairs(
    intp_t s, const code_t[:, ::1] codes, const intp_t[::1] n_clusters,
    const intp_t* offset, const double* log_size, const double* log_k,
    intp_t dense_limit, int32_t* count, intp_t* touched, intp_t* order,
    intp_t* start, double[:, ::1] out,
) noexcept nogil:
    """The pairs (s, t > s) of row s, with one thread's work buffers."""
    cdef intp_t t, kv, cells
    cdef intp_t n_draws = codes.shape[0], n = codes.shape[1], ku = n_clusters[s]
    cdef bint grouped = False
    cdef double vi
    out[s, s] = 0.0
    for t in range(s + 1, n_draws):
        kv = n_clusters[t]
        cells = ku * kv
        if cells <= n // 4 and cells <= dense_limit:
            vi = _vi_small(&codes[s, 0], &codes[t, 0], n, ku, kv,
                           log_size + offset[s], log_size + offset[t], log_k,
                           count)
        elif cells <= dense_limit:
            vi = _vi_dense(&codes[s, 0], &codes[t, 0], n, kv,
                           log_size + offset[s], log_size + offset[t], log_k,
                           count, touched)
        else:
            if not grouped:
                _group(&codes[s, 0], n, ku, order, start)
                grouped = True
            vi = _vi_grouped(&codes[t, 0], n, ku, order, start,
                             log_size + offset[s], log_size + offset[t], log_k,
                             count, touched)
        if vi < 0.0:  # cannot happen (every term is >= 0); kept as a guard
            vi = 0.0
        out[s, t] = vi
        out[t, s] = vi


cdef void _buffer_sizes(
    const intp_t[::1] n_clusters, intp_t n, intp_t dense_limit,
    intp_t* k_max, intp_t* dense_cells, bint* any_grouped,
) noexcept nogil:
    """Largest K, largest table counted densely, and whether a pair is grouped."""
    cdef intp_t s, t, cells, n_draws = n_clusters.shape[0]
    k_max[0] = 0
    dense_cells[0] = 0
    any_grouped[0] = False
    for s in range(n_draws):
        if n_clusters[s] > k_max[0]:
            k_max[0] = n_clusters[s]
        for t in range(s + 1, n_draws):
            cells = n_clusters[s] * n_clusters[t]
            if cells > dense_limit:
                any_grouped[0] = True
                continue
            if cells <= n // 4:
                cells *= 4  # the small path keeps four copies of the table
            if cells > dense_cells[0]:
                dense_cells[0] = cells


def _pairwise_codes(const code_t[:, ::1] codes_view, n_clusters, dense_limit):
    """VI matrix of relabelled, distinct code rows (see :func:`pairwise_vi`)."""
    cdef const intp_t[::1] k_view = n_clusters
    cdef intp_t n_draws = codes_view.shape[0], n = codes_view.shape[1]
    out = np.zeros((n_draws, n_draws), dtype=np.float64)
    if n_draws < 2 or n == 0:
        return out
    cdef double[:, ::1] out_view = out
    cdef intp_t limit = max(0, min(int(dense_limit), n * n))

    # Buffer sizes: the largest dense table used, and whether any pair is grouped.
    cdef intp_t k_max = 0, dense_cells = 0
    cdef bint any_grouped = False
    with nogil:
        _buffer_sizes(k_view, n, limit, &k_max, &dense_cells, &any_grouped)
    cdef intp_t count_cells = max(dense_cells, k_max if any_grouped else 0, 1)
    # Threads: at most one per row of pairs, and one in all for a small matrix
    # (about 2**22 point visits), where starting them would cost more.
    cdef int n_threads = max(1, min(max_threads(), n_draws - 1))
    if n_draws * (n_draws - 1) // 2 * n < (1 << 22):
        n_threads = 1

    offset = np.zeros(n_draws + 1, dtype=np.intp)
    np.cumsum(n_clusters, out=offset[1:])
    log_size = np.empty(int(offset[n_draws]), dtype=np.float64)
    cdef const intp_t[::1] offset_view = offset
    cdef double[::1] log_size_view = log_size

    cdef double* log_k = <double*> malloc((n + 1) * sizeof(double))
    cdef int32_t* count = <int32_t*> calloc(n_threads * count_cells, sizeof(int32_t))
    cdef intp_t* touched = <intp_t*> malloc(n_threads * n * sizeof(intp_t))
    cdef intp_t* order = NULL
    cdef intp_t* start = NULL
    if any_grouped:
        order = <intp_t*> malloc(n_threads * n * sizeof(intp_t))
        start = <intp_t*> malloc(n_threads * (k_max + 1) * sizeof(intp_t))
    if (log_k == NULL or count == NULL or touched == NULL
            or (any_grouped and (order == NULL or start == NULL))):
        free(log_k)
        free(count)
        free(touched)
        free(order)
        free(start)
        raise MemoryError()

    cdef intp_t k
    with nogil:
        log_k[0] = 0.0
        for k in range(1, n + 1):
            log_k[k] = log(<double> k)
        # `touched` doubles as the size buffer here (max K <= n).
        _log_sizes(codes_view, k_view, &offset_view[0], log_k, touched,
                   &log_size_view[0])
        _all_pairs(codes_view, k_view, &offset_view[0], &log_size_view[0], log_k,
                   limit, count, count_cells, touched, order, start, k_max + 1,
                   out_view, n_threads)
    free(log_k)
    free(count)
    free(touched)
    free(order)
    free(start)
    return out


# ---------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------

def _check_dense_limit(dense_limit):
    if dense_limit is None:
        dense_limit = DENSE_LIMIT
    try:
        limit = operator_index(dense_limit)
    except TypeError:
        raise ValueError(
            f"dense_limit must be a non-negative integer or None; got {dense_limit!r}."
        ) from None
    if limit < 0:
        raise ValueError(
            f"dense_limit must be a non-negative integer or None; got {dense_limit!r}."
        )
    return limit


def pairwise_vi(labels, *, dense_limit=None):
    """Variation of information between every two draws of a clustering.

    Parameters
    ----------
    labels : array-like of int of shape (n_draws, n_samples)
        One clustering of the same ``n_samples`` points per row, as non-negative
        integer labels. Labels are only compared with each other within a row:
        they need not be contiguous (``[5, 5, 9]`` is two clusters), and rows
        equal up to a renaming of the clusters are the same clustering.

    dense_limit : int, default=None
        Largest contingency table, in cells, counted in a dense buffer; pairs with
        more cells go through the grouped path (see Notes). ``None`` uses the
        module variable :data:`DENSE_LIMIT` (``2**17``). Only speed and memory
        depend on it, not the result beyond round-off; ``0`` forces the grouped
        path for every pair.

    Returns
    -------
    vi : ndarray of shape (n_draws, n_draws), dtype float64
        ``vi[s, t]`` is the variation of information between draws ``s`` and
        ``t``, in nats, between ``0.0`` and ``log(n_samples)``. The matrix is
        exactly symmetric with a zero diagonal, and exactly zero between draws
        equal up to relabelling. With ``n_samples == 0`` it is all zeros.

    Raises
    ------
    ValueError
        If ``labels`` is not 2-D, has no row, holds non-integer or negative
        labels, or if ``dense_limit`` is not a non-negative integer.

    See Also
    --------
    vi_consensus : Draw with the least mean VI to the others.
    rankmix.metrics.variation_of_information : VI of two clusterings with any
        hashable labels.

    Notes
    -----
    For two clusterings :math:`U` and :math:`V` of :math:`N` points, with
    cluster sizes :math:`a_i = |U_i|`, :math:`b_j = |V_j|` and contingency
    counts :math:`n_{ij} = |U_i \\cap V_j|`, the variation of information of
    Meila (2007) is

    .. math::

        \\mathrm{VI}(U, V) = H(U) + H(V) - 2 I(U, V)
                          = \\sum_{i, j \\,:\\, n_{ij} > 0} \\frac{n_{ij}}{N}
                            \\log \\frac{a_i \\, b_j}{n_{ij}^2}.

    It is summed in the last form, as
    :math:`n_{ij} (\\log a_i + \\log b_j - 2 \\log n_{ij})` with the logarithms
    read from one table: every term is non-negative (:math:`n_{ij} \\le a_i,
    b_j`), so there is no cancellation and equal clusterings give exactly 0.

    Draws are relabelled once in :math:`O(SN)`; each pair of distinct draws then
    costs :math:`O(N)` (one pass over the points, plus the non-zero cells of the
    contingency table), :math:`O(M^2 N)` in all for :math:`M \\le S` distinct
    clusterings, with the GIL released. Memory is :math:`SN` codes of the
    smallest integer type that holds every row's cluster numbers, up to
    min(N, largest label + 1) - 1 (a byte each for the estimators' draws of
    up to 128 clusters) plus a count buffer of at most ``dense_limit`` cells;
    the pairs beyond it sort the points by their first cluster (counting sort,
    once per draw) and count the second cluster in :math:`O(N)` memory.

    References
    ----------
    .. [1] M. Meila, "Comparing clusterings -- an information based distance",
       Journal of Multivariate Analysis, 98(5):873-895, 2007.

    Examples
    --------
    >>> from rankmix._consensus import pairwise_vi
    >>> vi = pairwise_vi([[0, 0, 1, 1], [7, 7, 3, 3], [0, 0, 0, 0]])
    >>> vi.round(4)
    array([[0.    , 0.    , 0.6931],
           [0.    , 0.    , 0.6931],
           [0.6931, 0.6931, 0.    ]])
    """
    limit = _check_dense_limit(dense_limit)
    codes, n_clusters = _check_labels(labels, "labels", compact=True)
    first, inverse = _unique_draws(codes)
    vi = _pairwise_codes(_distinct(codes, first), n_clusters[first], limit)
    return vi[np.ix_(inverse, inverse)]


def _distinct(codes, first):
    """The rows ``first`` of codes: codes itself when they are all of them (a
    copy would double the largest array of the point estimate)."""
    return codes if len(first) == len(codes) else codes[first]


def vi_consensus(label_samples, *, dense_limit=None):
    """Index of the draw with the least mean variation of information to the others.

    The point estimate of a clustering from its posterior draws: the draw
    :math:`s` minimising :math:`\\frac{1}{S - 1} \\sum_{t \\ne s}
    \\mathrm{VI}(c_s, c_t)`, in nats (Meila, 2007).

    Parameters
    ----------
    label_samples : array-like of int of shape (n_draws, n_samples)
        The posterior draws, one clustering per row, as non-negative integer
        labels (not necessarily contiguous; see :func:`pairwise_vi`).

    dense_limit : int, default=None
        Largest contingency table counted in a dense buffer, as in
        :func:`pairwise_vi`; ``None`` uses :data:`DENSE_LIMIT`.

    Returns
    -------
    index : int
        Row of ``label_samples`` with the least mean VI to the other rows. Ties
        go to the smallest index: draws equal up to relabelling get bitwise
        equal scores, so the first of them is returned. With one draw, ``0``.

    Raises
    ------
    ValueError
        If ``label_samples`` is not 2-D, has no row, holds non-integer or
        negative labels, or if ``dense_limit`` is not a non-negative integer.

    See Also
    --------
    pairwise_vi : The matrix of VI between every two draws.

    Notes
    -----
    With :math:`\\mathrm{VI}(U, V) = \\sum_{ij,\\, n_{ij} > 0} \\frac{n_{ij}}{N}
    \\log \\frac{a_i b_j}{n_{ij}^2}` (see :func:`pairwise_vi`), the score of draw
    :math:`s` is :math:`\\sum_t w_t \\mathrm{VI}(c_s, c_t) / (S - 1)` over the
    :math:`M` distinct clusterings :math:`c_t` drawn :math:`w_t` times, so the
    cost is :math:`O(M^2 N)` rather than :math:`O(S^2 N)` when the chain repeats
    itself, and the memory :math:`O(SN + M^2)`.

    Examples
    --------
    >>> from rankmix._consensus import vi_consensus
    >>> vi_consensus([[0, 0, 1, 1], [0, 0, 0, 1], [5, 5, 2, 2], [0, 1, 2, 3]])
    0
    """
    limit = _check_dense_limit(dense_limit)
    codes, n_clusters = _check_labels(label_samples, compact=True)
    n_draws = codes.shape[0]
    if n_draws == 1:
        return 0
    first, inverse = _unique_draws(codes)
    weight = np.bincount(inverse, minlength=first.shape[0]).astype(np.float64)
    vi = _pairwise_codes(_distinct(codes, first), n_clusters[first], limit)
    score = (vi * weight).sum(axis=1) / (n_draws - 1)
    return int(np.argmin(score[inverse]))
