# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Compiled search for the clustering of least posterior expected loss.

Given draws ``c_1..c_M`` of a clustering (distinct ones, with weights ``w_m``),
the expected loss of a clustering ``c`` of the same ``N`` points is

    E[L(c)] = sum_m w_m L(c, c_m) / W,   W = sum_m w_m.

For both losses here, L depends on the contingency table n_kl of ``c`` against
``c_m`` (cluster sizes n_k of c, m_l of c_m) through one function g:

    L(c, c_m) * Z = sum_k g(n_k) + sum_l g(m_l) - 2 sum_kl g(n_kl),

* variation of information (Meila 2007): g(x) = x log x, Z = N (nats);
* Binder's loss with equal costs: g(x) = x (x - 1) / 2, Z = 1 (the number of
  pairs of points that one clustering puts together and the other apart).

So moving a point into cluster b changes the expected loss by
dg(n_b) - 2 sum_m w_m dg(n^m_{b, l_m}) / W, with dg(x) = g(x + 1) - g(x) and
l_m the point's cluster in draw m: O(M) per candidate cluster, with one count
table per distinct draw. The search is SALSO's (Dahl, Johnson & Mueller 2022):
sequential allocation of the points in a random order, each to its best cluster
(an existing one or a new one) given the points placed so far, then sweeps of
single-point reassignment until no point moves, and "zealous" updates that
dissolve a whole cluster and deal its points anew (which can merge clusters,
as single-point moves cannot); several runs, and the best one kept. Each step never increases the loss of the points it considers, but the
search is greedy: it finds a local minimum, not always the global one.
"""

import numpy as np

from libc.math cimport log
from libc.stdlib cimport free, malloc
from libc.string cimport memset
from cython.parallel cimport parallel, prange

from ._openmp cimport max_threads

from libc.stdint cimport int8_t, int16_t, int32_t

ctypedef Py_ssize_t intp_t

# Relative gain below which a move is not made: keeps float round-off from
# making two equally good clusters trade a point back and forth.
cdef double TOLERANCE = 1e-12


cdef struct Search:
    intp_t n_points, n_draws, capacity
    const void* codes         # (n_draws, n_points) the draws, codes 0..L_m - 1,
    int code_bytes            # of int8, int16 or int32 (1, 2 or 4 bytes)
    const intp_t* n_labels    # (n_draws,) L_m
    const double* weight      # (n_draws,) w_m / W
    double* dg                # (n_points + 1,) g(x + 1) - g(x)
    double* g                 # (n_points + 1,) g(x)
    intp_t* offset            # (n_draws,) start of draw m's table
    # Draw m's table is (L_m, capacity): the counts n^m_{k, l} of a point's
    # cluster l in draw m are contiguous over the candidate clusters k.
    int32_t* table
    intp_t* size              # (capacity,) n_k
    double* cost              # (capacity,) scratch
    char* seen                # (capacity,) scratch
    intp_t* targets           # (capacity,) scratch
    int32_t* members          # (n_points,) scratch
    int32_t* label            # (n_points,) current cluster, -1 if not placed


cdef inline intp_t _code(const Search* s, intp_t index) noexcept nogil:
    """Entry ``index`` of the draws' codes, whatever their width (a branch
    the processor predicts: one width per search)."""
    if s.code_bytes == 1:
        return (<const int8_t*> s.codes)[index]
    if s.code_bytes == 2:
        return (<const int16_t*> s.codes)[index]
    return (<const int32_t*> s.codes)[index]


cdef inline int32_t* _row(Search* s, intp_t m, intp_t point) noexcept nogil:
    """Draw m's counts, over the clusters k, of the point's cluster in draw m."""
    return s.table + s.offset[m] + _code(s, m * s.n_points + point) * s.capacity


cdef inline void _place(Search* s, intp_t point, intp_t k, int change) noexcept nogil:
    """Add (change = 1) or remove (change = -1) a point to cluster k's counts."""
    cdef intp_t m
    s.size[k] += change
    for m in range(s.n_draws):
        _row(s, m, point)[k] += change


cdef intp_t _best_cluster(Search* s, intp_t point, intp_t current) noexcept nogil:
    """The cluster of least cost for an unplaced point: `current` unless beaten.

    The cost of cluster k is the change of the scaled expected loss when the
    point joins it. Candidates are the occupied clusters and the first empty
    slot (a new cluster), if any. ``current`` is -1 for a point never placed.
    """
    cdef intp_t k, m, best = current, empty = -1
    cdef double best_cost = 0.0, scale, twice_weight
    cdef int32_t* row
    for k in range(s.capacity):
        s.cost[k] = s.dg[s.size[k]]
    for m in range(s.n_draws):
        row = _row(s, m, point)
        twice_weight = 2.0 * s.weight[m]
        for k in range(s.capacity):
            s.cost[k] -= twice_weight * s.dg[row[k]]
    if current >= 0:
        best_cost = s.cost[current]
    for k in range(s.capacity):
        if k == current:
            continue
        if s.size[k] == 0:
            if empty >= 0:
                continue
            empty = k
        scale = TOLERANCE * (1.0 + (s.cost[k] if s.cost[k] > 0 else -s.cost[k]))
        if best < 0 or s.cost[k] < best_cost - scale:
            best, best_cost = k, s.cost[k]
    return best


cdef double _scaled_loss(Search* s) noexcept nogil:
    """sum_k g(n_k) + sum_m w_m (sum_l g(m_l) - 2 sum_kl g(n_kl))."""
    cdef intp_t k, m, l, cluster_size
    cdef double total = 0.0, draw_part
    cdef int32_t* row
    for k in range(s.capacity):
        total += s.g[s.size[k]]
    for m in range(s.n_draws):
        draw_part = 0.0
        for l in range(s.n_labels[m]):
            row = s.table + s.offset[m] + l * s.capacity
            cluster_size = 0
            for k in range(s.capacity):
                cluster_size += row[k]
                draw_part -= 2.0 * s.g[row[k]]
            draw_part += s.g[cluster_size]
        total += s.weight[m] * draw_part
    return total


cdef bint _sweep(Search* s, const int32_t* order) noexcept nogil:
    """Move every point, in ``order``, to its best cluster; whether one moved."""
    cdef intp_t i, p, k
    cdef bint moved = False
    for i in range(s.n_points):
        p = order[i]
        k = s.label[p]
        _place(s, p, k, -1)
        k = _best_cluster(s, p, k)
        if k != s.label[p]:
            moved = True
            s.label[p] = <int32_t> k
        _place(s, p, k, 1)
    return moved


cdef bint _dissolve_clusters(Search* s, const int32_t* order) noexcept nogil:
    """SALSO's zealous update: empty each cluster and deal its points anew.

    The clusters are taken in order of first appearance along ``order``. The
    points of one are removed, then placed one at a time, in ``order``, each in
    its best cluster (possibly a new one). The result is kept when it lowers
    the expected loss, undone otherwise. Single-point moves cannot merge two
    clusters (the first point to leave would raise the loss); this can.
    Returns whether a dissolution was kept.
    """
    cdef intp_t i, j, p, k, n_targets = 0, n_members
    cdef double before, after
    cdef bint improved = False
    for k in range(s.capacity):
        s.seen[k] = 0
    for i in range(s.n_points):
        k = s.label[order[i]]
        if not s.seen[k]:
            s.seen[k] = 1
            s.targets[n_targets] = k
            n_targets += 1
    for j in range(n_targets):
        k = s.targets[j]
        if s.size[k] == 0:
            continue
        before = _scaled_loss(s)
        n_members = 0
        for i in range(s.n_points):
            p = order[i]
            if s.label[p] == k:
                s.members[n_members] = <int32_t> p
                n_members += 1
                _place(s, p, k, -1)
                s.label[p] = -1
        for i in range(n_members):
            p = s.members[i]
            s.label[p] = <int32_t> _best_cluster(s, p, -1)
            _place(s, p, s.label[p], 1)
        after = _scaled_loss(s)
        if after < before - TOLERANCE * (1.0 + (before if before > 0 else -before)):
            improved = True
            continue
        for i in range(n_members):
            p = s.members[i]
            _place(s, p, s.label[p], -1)
            s.label[p] = <int32_t> k
            _place(s, p, k, 1)
    return improved


cdef void _run(
    Search* s, const int32_t* order, const int32_t* start, intp_t max_sweeps
) noexcept nogil:
    """One run: place the points (from `start`, or sequentially), then improve.

    Sweeps of single-point moves until none moves; then one pass of cluster
    dissolutions, and sweeps again if it helped; ``max_sweeps`` passes in all.
    """
    cdef intp_t i, p, k, sweep, table_size = s.offset[s.n_draws - 1] + (
        s.capacity * s.n_labels[s.n_draws - 1])
    memset(s.table, 0, table_size * sizeof(int32_t))
    memset(s.size, 0, s.capacity * sizeof(intp_t))
    for p in range(s.n_points):
        s.label[p] = -1
    for i in range(s.n_points):
        p = order[i]
        k = start[p] if start != NULL else _best_cluster(s, p, -1)
        s.label[p] = <int32_t> k
        _place(s, p, k, 1)
    for sweep in range(max_sweeps):
        if not _sweep(s, order) and not _dissolve_clusters(s, order):
            break


cdef Search* _workspace(const Search* shared, intp_t table_size) noexcept nogil:
    """A copy of ``shared`` with scratch of its own, for one thread; NULL if no memory."""
    cdef Search* w = <Search*> malloc(sizeof(Search))
    if w == NULL:
        return NULL
    w[0] = shared[0]
    w.table = <int32_t*> malloc(table_size * sizeof(int32_t))
    w.size = <intp_t*> malloc(w.capacity * sizeof(intp_t))
    w.cost = <double*> malloc(w.capacity * sizeof(double))
    w.seen = <char*> malloc(w.capacity * sizeof(char))
    w.targets = <intp_t*> malloc(w.capacity * sizeof(intp_t))
    w.members = <int32_t*> malloc(w.n_points * sizeof(int32_t))
    if (w.table == NULL or w.size == NULL or w.cost == NULL or w.seen == NULL
            or w.targets == NULL or w.members == NULL):
        _free_workspace(w)
        return NULL
    return w


cdef void _free_workspace(Search* w) noexcept nogil:
    if w != NULL:
        free(w.table)
        free(w.size)
        free(w.cost)
        free(w.seen)
        free(w.targets)
        free(w.members)
        free(w)


def search_partition(
    codes,
    const intp_t[::1] n_labels,
    const double[::1] weights,
    const int32_t[:, ::1] orders,
    intp_t n_random_runs,
    const int32_t[::1] start,
    bint binder,
    intp_t capacity,
    intp_t max_sweeps,
):
    """Least-expected-loss clustering over the runs; see the module docstring.

    ``codes`` (M, N), C-contiguous int8, int16 or int32 (the smallest that
    holds them: the estimators' draws take a byte a label, and int32 codes of
    every draw were 4 times their size): distinct draws coded 0..L_m - 1,
    with N > 0; ``weights`` (M,) sum to
    one; ``orders`` (max(R, 1), N): a permutation of the points for each of
    the ``R = n_random_runs`` runs from a random order; ``start`` (N,) or
    None: the clustering an extra run sweeps from (codes below ``capacity``),
    in the order ``orders[0]``. Returns ``(labels,
    scaled_loss)``, the loss times N for VI. The caller validates every
    argument.

    The runs go to OpenMP threads (``max_threads()`` of them, see
    ``_openmp.pxd``). Each run's clustering depends only on its order and
    start, and the best is the one of least loss, the first run on a tie, so
    the result is the same for any number of threads.
    """
    cdef Search shared
    cdef Search* w
    cdef const int8_t[:, ::1] codes8
    cdef const int16_t[:, ::1] codes16
    cdef const int32_t[:, ::1] codes32
    cdef intp_t m, x, run, total = 0
    cdef intp_t n_points = codes.shape[1]
    cdef bint has_start = start is not None
    cdef const int32_t* start_pointer = &start[0] if has_start else NULL
    # run 0 is the one from `start`, when there is one
    cdef intp_t first = 0 if has_start else 1, n_runs = n_random_runs + 1
    cdef int n_threads = max(1, min(max_threads(), n_runs - first))
    labels = np.zeros((n_runs, n_points), dtype=np.int32)
    losses = np.full(n_runs, np.inf)
    failed = np.zeros(1, dtype=np.intp)
    cdef int32_t[:, ::1] labels_view = labels
    cdef double[::1] losses_view = losses
    cdef intp_t[::1] failed_view = failed
    shared.n_points = n_points
    shared.n_draws = codes.shape[0]
    shared.capacity = capacity
    if codes.dtype == np.int8:
        codes8 = codes
        shared.codes, shared.code_bytes = &codes8[0, 0], 1
    elif codes.dtype == np.int16:
        codes16 = codes
        shared.codes, shared.code_bytes = &codes16[0, 0], 2
    else:
        codes32 = codes
        shared.codes, shared.code_bytes = &codes32[0, 0], 4
    shared.n_labels = &n_labels[0]
    shared.weight = &weights[0]
    shared.offset = <intp_t*> malloc(shared.n_draws * sizeof(intp_t))
    shared.g = <double*> malloc((n_points + 1) * sizeof(double))
    shared.dg = <double*> malloc((n_points + 1) * sizeof(double))
    try:
        if shared.offset == NULL or shared.g == NULL or shared.dg == NULL:
            raise MemoryError()
        with nogil:
            for m in range(shared.n_draws):
                shared.offset[m] = total
                total += capacity * n_labels[m]
            shared.g[0] = 0.0
            for x in range(1, n_points + 1):
                shared.g[x] = x * (x - 1) / 2.0 if binder else x * log(<double> x)
            for x in range(n_points):
                shared.dg[x] = shared.g[x + 1] - shared.g[x]
            shared.dg[n_points] = 0.0  # never read: a cluster has at most N - 1 others
            with parallel(num_threads=n_threads):
                w = _workspace(&shared, total)
                if w == NULL:
                    failed_view[0] = 1
                else:
                    for run in prange(first, n_runs, schedule="dynamic"):
                        w.label = &labels_view[run, 0]
                        _run(w, &orders[0 if run == 0 else run - 1, 0],
                             start_pointer if run == 0 else NULL, max_sweeps)
                        losses_view[run] = _scaled_loss(w)
                _free_workspace(w)
    finally:
        free(shared.offset)
        free(shared.g)
        free(shared.dg)
    if failed[0]:
        raise MemoryError()
    best = int(np.argmin(losses))  # the first of equal losses
    return labels[best], float(losses[best])
