# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Compiled kernels for top-t rankings under the generalized Mallows (GM) model.

Conventions (those of :mod:`rankmix.mallows`): items are integers ``0..n-1``; a
ranking is a row of item ids, best first, padded with ``-1``; a central ranking
``sigma`` is a full permutation with ``sigma[r]`` the item at rank ``r``; its
``position`` array is the inverse, ``position[sigma[r]] = r``. Stages ``j`` are
0-based here (``j = 0`` is the paper's ``j = 1``).

Every input reaching these functions has been validated in Python (ids in range,
rows well formed, ``sigma`` a permutation): with bounds checks off, the kernels
trust it. The functions Python calls on a fitted model's state (``codes``,
``kendall_distance``, ``log_likelihood``; ``_kde_kernels.log_density``,
``_ebms_kernels.blur_step``) check
again what they index tables with, at O(N t + K n) against their O(N K t^2):
that state is the user's to edit or unpickle, and a bad id must raise a
ValueError, not reach memory past a table (``check_rankings``,
``inverted_centres``).

Sufficient statistics of a cluster
----------------------------------
Meila & Chen write the statistics as matrices ``R_j`` with ``R_j[a, c] = #{rankings
with a at stage j and c not before a}``, and ``L_sigma(R)``, the sum of ``R`` over
the pairs that ``sigma`` puts in the order (c, a). Stored densely, ``R_1..R_t`` would
take ``n x n x t`` numbers. Here they are kept in a compact form over the ``D``
distinct items the cluster ranks:

* ``counts[d, j]``: how many rankings put item ``items[d]`` at stage ``j``;
* sparse pairs ``(first, second, stage, count)``: ``count`` rankings put
  ``items[second]`` at ``stage`` after ``items[first]``. They are sorted by
  (stage, second, first) and stored by rows, one a (stage, second): the pairs
  of row ``stage * D + second`` are ``row_start[row]`` to ``row_start[row +
  1]``, each its ``first`` and its ``count`` (int32, 4 bytes each: a set of
  statistics holds fewer than 2^31 rankings). With full rankings of a large
  cluster nearly every one of the n^2 t cells holds a pair, and 8 bytes a pair
  hold them in a quarter of the 32 that a pair's three indices and count
  took.

so that ``R_j[a, c] = counts[a, j] - pairs_j[a, c]``. For given stage weights
theta the stagewise sampler needs ``R = sum_j theta_j R_j``, which becomes the
per-item ``weight[d] = sum_j theta_j counts[d, j]`` and a ``D x D`` matrix
``preceded[a, c]`` (theta-weighted count of "c came before a"); items no ranking
mentions have zero rows and identical columns and are handled as one block.
"""

import numpy as np
from collections import namedtuple

from libc.math cimport INFINITY, exp, expm1, fabs, floor, fmax, fmin, log, log1p, sqrt
from libc.stdint cimport INT32_MAX, int32_t, int64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy, memset
from numpy.random cimport bitgen_t
from cython.parallel cimport prange

from ._rng cimport bitgen_pointer, standard_exponential, uniform, uniform_index

# Neal's (2003) step-out limit: at most this many widths in all.
cdef intp_t MAX_STEP_OUT = 64

# Below this theta, log psi_m(theta) uses its Taylor series: the closed form
# divides two numbers that both vanish.
cdef double SMALL_THETA = 1e-8
# Above this theta, log psi_m(theta) takes log(1 - e^-x) as log1p(-e^-x), which
# keeps its relative precision; below, the expm1 form loses at most 1e-16 /
# e^-10 = 2e-12 of it. (The switch is not at log 2, where either form is
# exact: the draws of ordinary fits, whose thetas lie below 10, stay those
# they were to the bit.)
cdef double LARGE_THETA = 10.0


RankingStatistics = namedtuple(
    "RankingStatistics", ["items", "counts", "row_start", "pair_first", "pair_count"]
)
RankingStatistics.__doc__ = """Compact sufficient statistics of a set of rankings.

items : ndarray of shape (D,)
    The distinct items the rankings mention, in increasing order.
counts : ndarray of shape (D, n_stages)
    ``counts[d, j]``: number of rankings with ``items[d]`` at stage ``j``.
row_start : ndarray of shape (n_stages * D + 1,)
    The distinct precedences by row, a row per (stage, second item): those where
    ``items[second]`` stands at ``stage`` are ``row_start[stage * D + second]``
    to ``row_start[stage * D + second + 1]``, in the pairs' arrays. Starts at 0,
    ends at n_pairs.
pair_first : ndarray of int32 of shape (n_pairs,)
    Each precedence's earlier item, a local index (``items[first]`` came
    before), increasing within a row.
pair_count : ndarray of int32 of shape (n_pairs,)
    How many rankings show that precedence.
"""


# ---------------------------------------------------------------------------
# The GM model
# ---------------------------------------------------------------------------

cdef double log_psi(intp_t m, double theta) noexcept nogil:
    """log psi_m(theta) = log sum_{k=0}^{m} exp(-k theta), for theta >= 0."""
    if m == 0:
        return 0.0
    if theta < SMALL_THETA:
        # log(m + 1) - m theta / 2 + m (m + 2) theta^2 / 24 + O(theta^3)
        return log(m + 1.0) - 0.5 * m * theta + m * (m + 2.0) * theta * theta / 24.0
    if theta > LARGE_THETA:
        # log(1 - e^-x) as log1p(-e^-x): log(-expm1(-x)) rounds 1 - e^-x near
        # 1 and keeps about 1e-16 / e^-theta of log psi's value (1.7e-4 at
        # log psi_20(30), 5.6e-2 at log psi_16383(35): 1e-5 nats in the theta
        # prior's normaliser at nu = 1e12)
        return log1p(-exp(-(m + 1) * theta)) - log1p(-exp(-theta))
    return log(-expm1(-(m + 1) * theta)) - log(-expm1(-theta))


cdef enum:
    # A ranking's codes by a Fenwick tree from this many items on, where its
    # positions lie below TREE_SPAN times its length (else the t^2 / 2
    # comparisons, which the compiler vectorises, take less time than the tree
    # of the positions: top-64 rankings of 1,000 to 4,000 items took 15 to
    # 30% longer by a tree; from 80 items and full rankings on, the tree wins)
    TREE_MIN_ITEMS = 80
    TREE_SPAN = 16
    TREE_MAX_POSITIONS = 4096   # the tree's room on the stack (16 KiB)


cdef intp_t row_length(const intp_t* row, intp_t t_max) noexcept nogil:
    """Number of items in a -1 padded row (padding is only ever trailing)."""
    cdef intp_t t = 0
    while t < t_max and row[t] >= 0:
        t += 1
    return t


cdef void codes_one(
    const intp_t* x,          # IN (t,) items, best first
    intp_t t,
    const intp_t* position,   # IN (n,) rank of each item in sigma
    intp_t* out,              # OUT (t,)
) noexcept nogil:
    """s_j(x | sigma), j < t, from the items' positions in sigma's inverse.

    s_j is the rank of x_j in sigma minus the number of earlier items of x that
    sigma also places before x_j: what is left counts the items not in
    x_1..x_{j-1} that sigma puts before x_j. Those numbers are counted by
    O(t^2) comparisons (``codes_from_positions``), or from TREE_MIN_ITEMS
    items on, the positions below TREE_SPAN t, by a Fenwick tree over the
    positions (``_codes_by_tree``, O(t log t)); the codes are the same
    integers either way.
    """
    cdef intp_t j, top = 0
    if t < TREE_MIN_ITEMS:
        for j in range(t):   # the positions, loaded once
            out[j] = position[x[j]]
        codes_from_positions(out, t)
        return
    for j in range(t):
        out[j] = position[x[j]]
        top = max(top, out[j])
    if top < min(<intp_t> TREE_MAX_POSITIONS, TREE_SPAN * t):
        _codes_by_tree(out, t, top + 1)
    else:
        codes_from_positions(out, t)


cdef void _codes_by_tree(intp_t* out, intp_t t, intp_t size) noexcept nogil:
    """``codes_from_positions`` in O(t log size), the positions below ``size``
    (at most TREE_MAX_POSITIONS): front to back, each item's earlier items
    that sigma places before it are a prefix sum of a Fenwick tree (a binary
    indexed tree) of the positions seen, on the stack."""
    cdef int32_t tree[TREE_MAX_POSITIONS + 1]
    cdef intp_t j, i, p, before
    memset(tree, 0, (size + 1) * sizeof(int32_t))
    for j in range(t):
        p = out[j]
        before = 0
        i = p   # the positions 0..p-1 are the tree's entries 1..p
        while i > 0:
            before += tree[i]
            i -= i & -i
        out[j] = p - before
        i = p + 1
        while i <= size:
            tree[i] += 1
            i += i & -i


cdef int check_rankings(const intp_t[:, ::1] X, intp_t n_items, str name) except -1:
    """Raise ValueError unless each -1 padded row of X holds at most n_items
    items, each in 0..n_items - 1: the range of the tables the kernels index
    with them (after the first -1 a row is not read)."""
    cdef intp_t i, j, t, bad = -1
    with nogil:
        for i in range(X.shape[0]):
            t = row_length(&X[i, 0], X.shape[1])
            if t > n_items:
                bad = i
            for j in range(t):
                if X[i, j] >= n_items:
                    bad = i
            if bad >= 0:
                break
    if bad >= 0:
        raise ValueError(
            f"row {bad} of {name} holds an item outside 0..{n_items - 1} or more "
            f"than {n_items} items: not a ranking of the model's {n_items} items."
        )
    return 0


cdef inline void invert(const intp_t* sigma, intp_t n, intp_t* position) noexcept nogil:
    cdef intp_t r
    for r in range(n):
        position[sigma[r]] = r


cdef object inverted_centres(const intp_t[:, ::1] sigmas, str name):
    """(K, n) positions, the inverse of each row of ``sigmas``; ValueError
    unless every row is a permutation of 0..n - 1."""
    cdef intp_t n_centres = sigmas.shape[0], n_items = sigmas.shape[1]
    positions_array = np.full((n_centres, n_items), -1, dtype=np.intp)
    cdef intp_t[:, ::1] positions = positions_array
    cdef intp_t k, r, item, bad = -1
    with nogil:
        for k in range(n_centres):
            for r in range(n_items):
                item = sigmas[k, r]
                if item < 0 or item >= n_items or positions[k, item] >= 0:
                    bad = k
                    break
                positions[k, item] = r
            if bad >= 0:
                break
    if bad >= 0:
        raise ValueError(
            f"row {bad} of {name} is not a permutation of the items 0..{n_items - 1}."
        )
    return positions_array


def codes(
    const intp_t[:, ::1] X,        # IN (N, t_max)
    const intp_t[:, ::1] sigmas,   # IN (K, n)
):
    """Codes of every ranking against every centre, shape (K, N, t_max), -1 padded."""
    cdef intp_t n_rankings = X.shape[0], t_max = X.shape[1]
    cdef intp_t n_centres = sigmas.shape[0], n_items = sigmas.shape[1]
    cdef intp_t[:, ::1] positions = inverted_centres(sigmas, "the central rankings")
    check_rankings(X, n_items, "the rankings")
    cdef intp_t[:, :, ::1] out = np.full((n_centres, n_rankings, t_max), -1, dtype=np.intp)
    cdef intp_t i, k, t
    with nogil:
        for k in range(n_centres):
            for i in range(n_rankings):
                t = row_length(&X[i, 0], t_max)
                codes_one(&X[i, 0], t, &positions[k, 0], &out[k, i, 0])
    return np.asarray(out)


def log_likelihood(
    const intp_t[:, ::1] X,          # IN (N, t_max)
    const intp_t[:, ::1] sigmas,     # IN (K, n)
    const double[:, ::1] thetas,     # IN (K, >= t_max), theta >= 0
):
    """GM^s log-probability of every ranking under every centre, shape (N, K).

    log GM(x | sigma, theta) = -sum_{j < t} [theta_j s_j + log psi_{n-1-j}(theta_j)]
    (0-based j). The normalisers are tabulated once per centre, so a pair costs
    at most O(t^2) integer work (``codes_one``) and O(t) table look-ups.
    """
    cdef intp_t n_rankings = X.shape[0], t_max = X.shape[1]
    cdef intp_t n_centres = sigmas.shape[0], n_items = sigmas.shape[1]
    cdef intp_t n_stages = min(t_max, n_items)
    if thetas.shape[0] != n_centres or thetas.shape[1] < n_stages:
        raise ValueError(
            f"thetas has shape ({thetas.shape[0]}, {thetas.shape[1]}), expected ({n_centres}, "
            f">= {n_stages}): one row per central ranking, one value per stage."
        )
    cdef intp_t[:, ::1] positions = inverted_centres(sigmas, "the central rankings")
    check_rankings(X, n_items, "the rankings")
    cdef double[:, ::1] out = np.empty((n_rankings, n_centres), dtype=np.float64)
    # cumulative normalisers: log_norm[k, t] = sum_{j < t} log psi_{n-1-j}(theta_kj)
    cdef double[:, ::1] log_norm = np.zeros((n_centres, n_stages + 1), dtype=np.float64)
    cdef intp_t[::1] code = np.empty(max(t_max, 1), dtype=np.intp)
    cdef intp_t i, j, k, t
    cdef double value
    with nogil:
        for k in range(n_centres):
            for j in range(n_stages):
                log_norm[k, j + 1] = log_norm[k, j] + log_psi(n_items - 1 - j, thetas[k, j])
        for i in range(n_rankings):
            t = row_length(&X[i, 0], t_max)
            for k in range(n_centres):
                codes_one(&X[i, 0], t, &positions[k, 0], &code[0])
                value = -log_norm[k, t]
                for j in range(t):
                    value -= thetas[k, j] * code[j]
                out[i, k] = value
    return np.asarray(out)


def kendall_distance(
    const intp_t[:, ::1] X,         # IN (N, t_max)
    const intp_t[:, ::1] sigmas,    # IN (K, n)
):
    """Kendall distance of every top-t ranking to every full ranking, shape (N, K).

    The number of pairs whose order the top-t ranking fixes (both ranked, or one
    ranked and one not) and sigma reverses; it is the sum of the codes.
    """
    cdef intp_t n_rankings = X.shape[0], t_max = X.shape[1]
    cdef intp_t n_centres = sigmas.shape[0], n_items = sigmas.shape[1]
    cdef intp_t[:, ::1] positions = inverted_centres(sigmas, "the central rankings")
    check_rankings(X, n_items, "the rankings")
    cdef intp_t[:, ::1] out = np.empty((n_rankings, n_centres), dtype=np.intp)
    cdef intp_t[::1] code = np.empty(max(t_max, 1), dtype=np.intp)
    cdef intp_t i, j, k, t, total
    with nogil:
        for i in range(n_rankings):
            t = row_length(&X[i, 0], t_max)
            for k in range(n_centres):
                codes_one(&X[i, 0], t, &positions[k, 0], &code[0])
                total = 0
                for j in range(t):
                    total += code[j]
                out[i, k] = total
    return np.asarray(out)


cdef void read_off_codes(
    const intp_t* s,          # IN (t,) codes, s[j] in [0, n - 1 - j]
    intp_t t,
    const intp_t* sigma,      # IN (n,)
    intp_t n_items,
    intp_t* left,             # scratch (n,)
    intp_t* out,              # OUT (t,)
) noexcept nogil:
    """The top-t ranking with codes s against sigma: the inverse of codes_one.

    Stage j takes the s[j]-th item (0-based) of sigma among those not yet placed.
    """
    cdef intp_t j, r
    for r in range(n_items):
        left[r] = sigma[r]
    for j in range(t):
        out[j] = left[s[j]]
        # close the gap: O(n) per stage, O(t n) per ranking
        for r in range(s[j], n_items - 1 - j):
            left[r] = left[r + 1]


def rankings_from_codes(
    const intp_t[:, ::1] S,       # IN (N, t) codes, S[i, j] in [0, n - 1 - j]
    const intp_t[::1] sigma,      # IN (n,)
):
    """The top-t rankings with the given codes against one sigma, shape (N, t)."""
    cdef intp_t n_rankings = S.shape[0], t = S.shape[1], n_items = sigma.shape[0]
    cdef intp_t[:, ::1] out = np.empty((n_rankings, t), dtype=np.intp)
    cdef intp_t[::1] left = np.empty(n_items, dtype=np.intp)
    cdef intp_t i
    with nogil:
        for i in range(n_rankings):
            read_off_codes(&S[i, 0], t, &sigma[0], n_items, &left[0], &out[i, 0])
    return np.asarray(out)


def rankings_from_codes_rows(
    const intp_t[:, ::1] S,           # IN (N, t) codes, S[i, j] in [0, n - 1 - j]
    const intp_t[:, ::1] sigmas,      # IN (N, n) one central ranking per row
):
    """Row i read off its own sigma, ``sigmas[i]``, by its codes ``S[i]``: (N, t)."""
    cdef intp_t n_rankings = S.shape[0], t = S.shape[1], n_items = sigmas.shape[1]
    cdef intp_t[:, ::1] out = np.empty((n_rankings, t), dtype=np.intp)
    cdef intp_t[::1] left = np.empty(n_items, dtype=np.intp)
    cdef intp_t i
    with nogil:
        for i in range(n_rankings):
            read_off_codes(
                &S[i, 0], t, &sigmas[i, 0], n_items, &left[0], &out[i, 0]
            )
    return np.asarray(out)


# ---------------------------------------------------------------------------
# Sufficient statistics
# ---------------------------------------------------------------------------

cdef int compare_int64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*> a)[0]
    cdef int64_t y = (<const int64_t*> b)[0]
    return (x > y) - (x < y)


cdef enum:
    RADIX_BITS = 11                   # a pass's counts (2**11 of them) stay in L1
    RADIX_BUCKETS = 1 << RADIX_BITS
    RADIX_MIN_KEYS = 1024             # fewer keys: qsort, not 2**11 counts a pass
    DENSE_GROUP_CELLS = 1 << 19       # a dense group's table: 2 MiB of int32, in cache


# The statistics kernels take the threads they are given from these sizes on
# (fewer are not worth waking them for: a parallel region costs some
# microseconds, and a build of 2^18 precedences about a millisecond). Variables,
# not constants, so that a test can run every case on the threads
# (``_parallel_thresholds``); the results are the same either way.
cdef intp_t parallel_min_precedences = 1 << 18
cdef intp_t parallel_min_pairs = 1 << 16


def _parallel_thresholds(precedences=None, pairs=None):
    """Set the statistics kernels' thresholds for threads (None: keep one),
    for tests; returns the previous (precedences, pairs)."""
    global parallel_min_precedences, parallel_min_pairs
    previous = (parallel_min_precedences, parallel_min_pairs)
    if precedences is not None:
        parallel_min_precedences = precedences
    if pairs is not None:
        parallel_min_pairs = pairs
    return previous


cdef void sort_keys(int64_t* keys, int64_t* scratch, intp_t n, int64_t top) noexcept nogil:
    """Sort n keys in [0, top] in place, increasing; ``scratch`` holds n keys.

    Least-significant-digit radix sort, RADIX_BITS a pass, one pass per digit
    of ``top`` (a pass where every key has the same digit is skipped): O(n)
    a pass. The keys are integers, so the order is qsort's, to the key. At
    5 * 10^7 keys (``ranking_statistics`` of 100 full rankings of 1,000 items:
    the sort path, as in clusters of long rankings of many items) it saved
    5.6 of the 12.9 s that the call took with qsort, whose comparisons go
    through a function pointer: the sort became about 4.5 times faster.
    """
    cdef intp_t counts[RADIX_BUCKETS]
    cdef intp_t i, b, total, count
    cdef int shift = 0
    cdef int64_t* source = keys
    cdef int64_t* target = scratch
    cdef int64_t* swap
    if n < RADIX_MIN_KEYS:
        qsort(keys, n, sizeof(int64_t), compare_int64)
        return
    while shift < 63 and (top >> shift) > 0:
        memset(counts, 0, sizeof(counts))
        for i in range(n):
            counts[(source[i] >> shift) & (RADIX_BUCKETS - 1)] += 1
        if counts[(source[0] >> shift) & (RADIX_BUCKETS - 1)] != n:
            total = 0
            for b in range(RADIX_BUCKETS):
                count = counts[b]
                counts[b] = total
                total += count
            for i in range(n):
                b = (source[i] >> shift) & (RADIX_BUCKETS - 1)
                target[counts[b]] = source[i]
                counts[b] += 1
            swap = source
            source = target
            target = swap
        shift += RADIX_BITS
    if source != keys:
        memcpy(keys, source, n * sizeof(int64_t))


cdef int _reserve(void** buffer, intp_t* capacity, intp_t needed, size_t item) except -1 nogil:
    """Grow a malloc'd buffer to hold at least ``needed`` items (doubling)."""
    cdef void* grown
    cdef intp_t new_capacity
    if needed <= capacity[0]:
        return 0
    new_capacity = max(needed, 2 * capacity[0], 16)
    grown = realloc(buffer[0], new_capacity * item)
    if grown == NULL:
        with gil:
            raise MemoryError(f"could not allocate {new_capacity * item} bytes")
    buffer[0] = grown
    capacity[0] = new_capacity
    return 0


cdef void statistics_init(Statistics* st) noexcept nogil:
    memset(st, 0, sizeof(Statistics))


cdef void statistics_free(Statistics* st) noexcept nogil:
    free(st.items)
    free(st.counts)
    free(st.row_start)
    free(st.pair_first)
    free(st.pair_count)
    free(st.keys)
    free(st.dense)
    statistics_init(st)


cdef intp_t _dense_groups(
    const int64_t* lengths, intp_t n_members, intp_t t_max, intp_t n_ranked,
    intp_t group, int n_threads,
    intp_t* starts,               # OUT (t_max + 1,) the groups' first stages, then t_max
    intp_t* reach,                # scratch (t_max + 1,)
) noexcept nogil:
    """The dense path's groups of stages; returns their number.

    Each group holds at most ``group`` stages. On one thread that is all (the
    fewest passes over the members). On several, the groups are also cut
    where their work (a stage j's j + 1 counts a member that reaches it, and
    its D^2 cells) passes a share 1 / ``n_threads`` of the whole, so that a
    wave's groups take about as long: every stage of a few items makes
    ``n_threads`` groups, not one group and idle threads.
    """
    cdef intp_t i, j, n_groups = 0, size = 0
    cdef double work, share, total = 0.0, done = 0.0
    starts[0] = 0
    if n_threads <= 1:
        j = 0
        while j < t_max:
            j = min(t_max, j + group)
            n_groups += 1
            starts[n_groups] = j
        return n_groups
    for j in range(t_max + 1):
        reach[j] = 0
    for i in range(n_members):
        reach[lengths[i]] += 1
    for j in range(t_max - 1, -1, -1):   # reach[j]: members of length j or more
        reach[j] += reach[j + 1]
    for j in range(t_max):
        total += <double> reach[j + 1] * (j + 1) + <double> n_ranked * n_ranked
    share = total / n_threads
    for j in range(t_max):
        work = <double> reach[j + 1] * (j + 1) + <double> n_ranked * n_ranked
        if size and (size == group or done + work / 2.0 > share):
            n_groups += 1
            starts[n_groups] = j
            size = 0
            done = 0.0
        size += 1
        done += work
    n_groups += 1
    starts[n_groups] = t_max
    return n_groups


cdef intp_t _dense_group_count(
    Statistics* st, const intp_t* X, intp_t t_max, const intp_t* members,
    intp_t n_members, const intp_t* local, intp_t first_stage, intp_t stop,
    int32_t* table,               # OUT (stop - first_stage, D, D)
) noexcept nogil:
    """Count the precedences of stages [first_stage, stop) in ``table``, and
    the stage counts of those stages in ``st.counts`` (rows of other groups'
    stages are not touched, so groups may run side by side); returns the
    number of the table's non-zero cells. ``st.keys`` holds the lengths."""
    cdef intp_t i, j, k, t, d, count = 0
    cdef intp_t width = st.n_ranked
    cdef intp_t n_cells = (stop - first_stage) * width * width
    cdef const intp_t* row
    memset(table, 0, n_cells * sizeof(int32_t))
    for i in range(n_members):
        t = min(<intp_t> st.keys[i], stop)
        row = X + members[i] * t_max
        for j in range(first_stage, t):
            d = local[row[j]]
            st.counts[d * t_max + j] += 1.0
            for k in range(j):
                table[((j - first_stage) * width + d) * width + local[row[k]]] += 1
    for k in range(n_cells):
        count += table[k] != 0
    return count


cdef void _dense_group_write(
    Statistics* st, intp_t first_stage, intp_t stop, const int32_t* table,
    intp_t at,                    # the group's first pair
) noexcept nogil:
    """The pairs of a group's table, in (stage, second, first) order, from pair
    ``at`` on (their room reserved), and its rows' starts."""
    cdef intp_t row, first, width = st.n_ranked
    cdef intp_t n_rows = (stop - first_stage) * width
    cdef const int32_t* cells
    for row in range(n_rows):
        st.row_start[first_stage * width + row] = at
        cells = table + row * width
        for first in range(width):
            if cells[first] != 0:
                st.pair_first[at] = <int32_t> first
                st.pair_count[at] = cells[first]
                at += 1


cdef int statistics_build(
    Statistics* st,
    const intp_t* X,              # IN (N, t_max) rankings
    intp_t t_max,
    const intp_t* members,        # IN (n_members,) rows of X in the set
    intp_t n_members,
    intp_t n_items,
    intp_t* local,                # scratch (n_items,), all -1 on entry and on exit
    int n_threads,                # at most this many OpenMP threads
) except -1 nogil:
    """Fill ``st`` with the compact sufficient statistics of ``X[members]``.

    Precedences are counted in dense (stage, second, first) tables, a group of
    stages at a time (at most DENSE_GROUP_CELLS int32 counts, or one stage's D^2),
    when the cluster ranks few distinct items (D^2 t small next to the number
    of precedences), else by sorting their integer keys; both list the pairs
    in the same (stage, second, first) order. Buffers grow as needed and are
    reused from one call to the next. O(n_items + sum_i t_i^2) work plus the
    sort, or D^2 t for the tables and a pass over the members a group; the
    sort path holds 16 bytes per precedence (its key and the radix sort's
    scratch). The dense path runs its groups on up to ``n_threads`` OpenMP
    threads (from ``parallel_min_precedences`` precedences on), one group's
    table a thread (2 MiB, or one stage's D^2 counts past 724 items); the
    statistics are the same, to the bit, on any number.
    """
    cdef intp_t i, j, k, t, d, item, n_ranked = 0, n_keys = 0, n_pairs = 0
    cdef intp_t n_cells, group, n_groups, g, wave, r
    cdef intp_t* starts = NULL
    cdef intp_t* found = NULL
    cdef int64_t width
    cdef const intp_t* row

    # the lengths are kept in ``keys`` for the dense path (the sorted one
    # writes its keys over them)
    _reserve(<void**> &st.keys, &st.cap_keys, n_members, sizeof(int64_t))
    for i in range(n_members):
        row = X + members[i] * t_max
        t = row_length(row, t_max)
        st.keys[i] = t
        n_keys += t * (t - 1) // 2
        for j in range(t):
            local[row[j]] = 0
    _reserve(<void**> &st.items, &st.cap_items, n_items, sizeof(intp_t))
    # Items in increasing order, so that the statistics ignore the member order.
    for item in range(n_items):
        if local[item] == 0:
            local[item] = n_ranked
            st.items[n_ranked] = item
            n_ranked += 1
    if n_ranked > INT32_MAX or n_members > INT32_MAX:   # a pair's first and count
        for d in range(n_ranked):
            local[st.items[d]] = -1
        with gil:
            raise ValueError(f"statistics of {n_members} rankings of {n_ranked} "
                             f"items: more than {INT32_MAX}")
    st.n_ranked = n_ranked
    st.n_stages = t_max
    _reserve(<void**> &st.counts, &st.cap_counts, n_ranked * t_max, sizeof(double))
    _reserve(<void**> &st.row_start, &st.cap_rows, n_ranked * t_max + 1, sizeof(intp_t))
    memset(st.counts, 0, n_ranked * t_max * sizeof(double))
    width = n_ranked
    n_cells = n_ranked * n_ranked * t_max

    if n_cells <= 4 * n_keys + 1024:
        # The stages in groups, each group's (stage, second, first) table of at
        # most DENSE_GROUP_CELLS counts (or one stage's D^2), filled in one
        # pass over the members and read in the pairs' order. One group holds
        # every stage of a few items, as one table did before; a table of many
        # items' stages did not stay in cache (one of D^2 t doubles, 216 MB for
        # 1,000 full rankings of 300 items, each ranking's stages spread over
        # all of it: 0.67 s against 0.50 s by groups), and a pass over the
        # members for each stage, when they rank few items, cost more than the
        # table saved (10^6 full rankings of 10 items, scattered: 0.24 s in one
        # table, 0.59 s a stage at a time). On several threads the groups go
        # in waves, one group and one table a thread, each group's pairs
        # written after the wave's counts are known: the same pairs in the same
        # order, and no more memory than a table a thread (the pairs are
        # reserved as on one thread, not for every group's most).
        group = max(1, min(t_max, DENSE_GROUP_CELLS // max(1, n_ranked * n_ranked)))
        if n_keys < parallel_min_precedences:
            n_threads = 1
        n_threads = max(1, n_threads)
        starts = <intp_t*> malloc(2 * (t_max + 1) * sizeof(intp_t))
        found = <intp_t*> malloc(2 * n_threads * sizeof(intp_t))
        if starts == NULL or found == NULL:
            free(starts)
            free(found)
            with gil:
                raise MemoryError("could not allocate the dense groups")
        try:
            n_groups = _dense_groups(st.keys, n_members, t_max, n_ranked, group,
                                     n_threads, starts, starts + t_max + 1)
            n_threads = <int> max(1, min(n_threads, n_groups))
            _reserve(<void**> &st.dense, &st.cap_dense,
                     n_threads * group * n_ranked * n_ranked, sizeof(int32_t))
            g = 0
            while g < n_groups:
                wave = min(n_threads, n_groups - g)
                if wave == 1:
                    found[0] = _dense_group_count(
                        st, X, t_max, members, n_members, local,
                        starts[g], starts[g + 1], st.dense)
                else:
                    for r in prange(wave, num_threads=wave, schedule="static"):
                        found[r] = _dense_group_count(
                            st, X, t_max, members, n_members, local,
                            starts[g + r], starts[g + r + 1],
                            st.dense + r * group * n_ranked * n_ranked)
                for r in range(wave):
                    found[wave + r] = n_pairs   # the group's first pair
                    n_pairs += found[r]
                _reserve_pairs(st, n_pairs)
                if wave == 1:
                    _dense_group_write(st, starts[g], starts[g + 1], st.dense,
                                       found[1])
                else:
                    for r in prange(wave, num_threads=wave, schedule="static"):
                        _dense_group_write(
                            st, starts[g + r], starts[g + r + 1],
                            st.dense + r * group * n_ranked * n_ranked, found[wave + r])
                g += wave
        finally:
            free(starts)
            free(found)
    else:
        # the keys, then as many for the sort's scratch
        _reserve(<void**> &st.keys, &st.cap_keys, 2 * n_keys, sizeof(int64_t))
        n_keys = 0
        for i in range(n_members):
            row = X + members[i] * t_max
            t = row_length(row, t_max)
            for j in range(t):
                st.counts[local[row[j]] * t_max + j] += 1.0
                for k in range(j):
                    st.keys[n_keys] = (j * width + local[row[j]]) * width + local[row[k]]
                    n_keys += 1
        sort_keys(st.keys, st.keys + n_keys, n_keys, n_cells - 1)
        _reserve_pairs(st, n_keys)
        # each row's pairs counted one row on, then summed into the starts
        memset(st.row_start, 0, (n_ranked * t_max + 1) * sizeof(intp_t))
        for k in range(n_keys):
            if k == 0 or st.keys[k] != st.keys[k - 1]:
                st.pair_first[n_pairs] = <int32_t> (st.keys[k] % width)
                st.pair_count[n_pairs] = 0
                st.row_start[st.keys[k] // width + 1] += 1
                n_pairs += 1
            st.pair_count[n_pairs - 1] += 1
        for k in range(n_ranked * t_max):
            st.row_start[k + 1] += st.row_start[k]
    st.n_pairs = n_pairs
    st.row_start[n_ranked * t_max] = n_pairs
    for d in range(n_ranked):
        local[st.items[d]] = -1
    return 0


cdef double statistics_bytes_bound(
    double n_keys, intp_t n_members, intp_t n_items, intp_t t_max,
) noexcept nogil:
    """About the most bytes ``statistics_build`` needs for ``n_members`` rankings
    with ``n_keys`` precedences (sum_i t_i (t_i - 1) / 2) among ``n_items`` items
    over ``t_max`` stages, whichever path it takes: the pairs (PAIR_BYTES, at
    most one a precedence and one a (stage, second, first) cell), the sorted
    path's keys and their scratch (16 bytes a precedence, taken only with fewer
    precedences than a quarter of the cells) or the dense path's table of a
    group of stages and the lengths, the items, the stage counts and the rows'
    starts. (Buffers grow by doubling, so what they hold may reach twice what
    they need. On several threads the dense path holds a table a thread, 2 MiB
    each more, small next to the budgets this bound serves.)"""
    cdef double cells = <double> n_items * n_items * t_max
    return (<double> PAIR_BYTES * min(n_keys, cells)
            + 16.0 * min(n_keys, cells / 4.0 + 256.0)
            + 4.0 * max(min(cells, <double> DENSE_GROUP_CELLS),
                        <double> n_items * n_items)
            + 8.0 * n_members + 16.0 * n_items * t_max + 8.0 * n_items + 8.0)


def _statistics_bytes_bound(const intp_t[:, ::1] X, const intp_t[::1] members,
                            intp_t n_items):
    """``statistics_bytes_bound`` of the rankings ``X[members]``, for tests."""
    cdef double n_keys = 0.0
    cdef intp_t i, t
    if members.shape[0] and (np.min(members) < 0 or np.max(members) >= X.shape[0]):
        raise ValueError(f"members outside the {X.shape[0]} rows of X")
    for i in range(members.shape[0]):
        t = row_length(&X[members[i], 0], X.shape[1])
        n_keys += t * (t - 1) // 2
    return statistics_bytes_bound(n_keys, members.shape[0], n_items, X.shape[1])


cdef int _reserve_pairs(Statistics* st, intp_t n_pairs) except -1 nogil:
    cdef intp_t cap = st.cap_pairs
    _reserve(<void**> &st.pair_first, &cap, n_pairs, sizeof(int32_t))
    cap = st.cap_pairs
    _reserve(<void**> &st.pair_count, &cap, n_pairs, sizeof(int32_t))
    st.cap_pairs = cap
    return 0


cdef object _copied(const void* source, intp_t n, dtype):
    """A NumPy array of n items of ``dtype`` copied from ``source`` (which may
    be NULL when n is 0)."""
    out = np.empty(n, dtype=dtype)
    cdef char[::1] target = out.view(np.int8)
    if n:
        memcpy(&target[0], source, target.shape[0])
    return out


def ranking_statistics(
    const intp_t[:, ::1] X,          # IN (N, t_max)
    const intp_t[::1] members,       # IN (N_c,) rows of X in the set
    intp_t n_items,
    int n_threads=1,
):
    """Compact sufficient statistics of the rankings ``X[members]``.

    Returns a :class:`RankingStatistics`. The stage axis of ``counts`` has length
    ``t_max``. Memory O(n_items + min(sum_i t_i^2, n_items^2 t)): a pair per
    distinct (stage, item, earlier item) that occurs. Short rankings of many
    items stay far below n_items^2 t; full rankings of a large cluster reach
    it (n = 100 items, 2,000 rankings: 936,000 pairs, 7 MiB). ``n_threads``:
    at most this many OpenMP threads (the same statistics on any number).
    """
    cdef Statistics st
    cdef intp_t[::1] local = np.full(n_items, -1, dtype=np.intp)
    cdef intp_t t_max = X.shape[1]
    cdef intp_t p, D
    statistics_init(&st)
    try:
        with nogil:
            statistics_build(
                &st, &X[0, 0] if X.shape[0] else NULL, t_max,
                &members[0] if members.shape[0] else NULL, members.shape[0],
                n_items, &local[0] if n_items else NULL, n_threads,
            )
        # copied by memcpy: element by element through NumPy's indexing, the
        # copies took 4 s at 6.4 million pairs (sort_keys' example)
        D = st.n_ranked
        items = _copied(st.items, D, np.intp)
        counts = _copied(st.counts, D * t_max, np.float64).reshape(D, t_max)
        row_start = _copied(st.row_start, D * t_max + 1, np.intp)
        pair_first = _copied(st.pair_first, st.n_pairs, np.int32)
        pair_count = _copied(st.pair_count, st.n_pairs, np.int32)
    finally:
        statistics_free(&st)
    return RankingStatistics(items, counts, row_start, pair_first, pair_count)


def merge_statistics(parts, n_stages):
    """The statistics of the union of disjoint sets of rankings, from each set's.

    Parameters
    ----------
    parts : list of RankingStatistics or None
        Each set's statistics (None: an empty set), as ``ranking_statistics``
        or this function give them: items increasing, each row's pairs in
        increasing order of their first item, which the merge relies on.
    n_stages : int
        Length of the stage axis.

    Returns
    -------
    RankingStatistics
        Exactly what ``ranking_statistics`` gives for all the rankings at once:
        the items in increasing order, the pairs by row in increasing order of
        their first item, and the counts summed (integers, so in any order,
        exactly).

    Raises
    ------
    ValueError
        If a part is malformed (``statistics_view``'s checks: they may come
        from another process), or if a merged count passes 2^31 - 1 (int32).

    Notes
    -----
    Each part's items map to the union's in increasing order, so each part's
    row (stage, second), keyed in the union's local indices, is the union's
    row (stage, where[second]), its pairs still in order: each of the union's
    rows is the merge of the parts' rows that map to it, as sorted lists (a
    heap of the parts' next pairs), in one pass and with no memory but the
    result's. A sort of all the parts' keys (NumPy's unique) took several
    times the time and the memory, which with full rankings of hundreds of
    items on Dask workers (parts of tens of millions of pairs) held the
    client at ten times the memory of the same chain in process.
    """
    parts = [p for p in parts if p is not None]
    if not parts:
        raise ValueError("the statistics of no ranking")
    for p in parts:
        if p.counts.shape != (len(p.items), n_stages):
            raise ValueError(
                f"statistics of {p.counts.shape[1]} stages merged as {n_stages}")
    return _merged(parts, n_stages)


cdef void _sift_down(int64_t* keys, intp_t* part, intp_t size, intp_t at) noexcept nogil:
    """Restore the min-heap (by key, then part) below ``at``."""
    cdef intp_t child, swap_part
    cdef int64_t swap_key
    while True:
        child = 2 * at + 1
        if child >= size:
            return
        if child + 1 < size and (
            keys[child + 1] < keys[child]
            or (keys[child + 1] == keys[child] and part[child + 1] < part[child])
        ):
            child += 1
        if keys[at] < keys[child] or (keys[at] == keys[child] and part[at] < part[child]):
            return
        swap_key = keys[at]
        keys[at] = keys[child]
        keys[child] = swap_key
        swap_part = part[at]
        part[at] = part[child]
        part[child] = swap_part
        at = child


cdef bint _well_formed(rows, first, count, intp_t n_items, intp_t n_stages) except -1:
    """Whether a set's rows and pairs (``row_start``, ``pair_first``,
    ``pair_count``; ``n_items`` items, ``n_stages`` stages) hold together: a
    row per stage and item, their starts from 0 up to the pairs' number, never
    decreasing, every pair's first item one of the items and its count at
    least one (so a merge's sums only grow). O(n_pairs + n_stages n_items),
    in NumPy."""
    rows = np.asarray(rows)
    first = np.asarray(first)
    count = np.asarray(count)
    n_pairs = len(first)
    n_rows = n_stages * n_items   # (the module is compiled without wraparound)
    return bool(
        rows.ndim == 1 and rows.shape[0] == n_rows + 1
        and rows[0] == 0 and rows[n_rows] == n_pairs and len(count) == n_pairs
        and np.all(rows[1:] >= rows[:n_rows])
        and (n_pairs == 0 or (first.min() >= 0 and first.max() < n_items
                              and count.min() >= 1))
    )


cdef inline intp_t _copy_row(
    const Statistics* part, const intp_t* local, intp_t at, intp_t end,
    int32_t* o_first, int32_t* o_count, intp_t n_out,
) noexcept nogil:
    """A part's pairs [at, end) of one row to the union's, from pair ``n_out``
    on, their first items mapped by ``local``; returns the next pair."""
    cdef intp_t p
    for p in range(at, end):
        o_first[n_out] = <int32_t> local[part.pair_first[p]]
        o_count[n_out] = part.pair_count[p]
        n_out += 1
    return n_out


cdef intp_t _merge_two_rows(
    const Statistics* a, const intp_t* local_a, intp_t at_a, intp_t end_a,
    const Statistics* b, const intp_t* local_b, intp_t at_b, intp_t end_b,
    int32_t* o_first, int32_t* o_count, intp_t n_out, bint* overflow,
) noexcept nogil:
    """Two parts' pairs of one row merged by their first items (mapped by
    ``local_a``, ``local_b``), equal ones' counts summed, from pair ``n_out``
    on; returns the next pair. What the heap gives, without one."""
    cdef intp_t key_a, key_b
    cdef int64_t summed
    while at_a < end_a and at_b < end_b:
        key_a = local_a[a.pair_first[at_a]]
        key_b = local_b[b.pair_first[at_b]]
        if key_a < key_b:
            o_first[n_out] = <int32_t> key_a
            o_count[n_out] = a.pair_count[at_a]
            at_a += 1
        elif key_b < key_a:
            o_first[n_out] = <int32_t> key_b
            o_count[n_out] = b.pair_count[at_b]
            at_b += 1
        else:
            summed = <int64_t> a.pair_count[at_a] + b.pair_count[at_b]
            overflow[0] = overflow[0] or summed > INT32_MAX
            o_first[n_out] = <int32_t> key_a
            o_count[n_out] = <int32_t> summed
            at_a += 1
            at_b += 1
        n_out += 1
    n_out = _copy_row(a, local_a, at_a, end_a, o_first, o_count, n_out)
    return _copy_row(b, local_b, at_b, end_b, o_first, o_count, n_out)


cdef object _merged(list parts, intp_t n_stages):
    """``merge_statistics`` of checked parts: the union's items and stage
    counts, and each of its rows the merge of the parts' rows that map to it
    (``where[k]``: part k's local index -> the union's), equal first items'
    counts summed."""
    cdef intp_t k, j, u, r, p, size, n_parts = len(parts), total = 0, n_out = 0
    cdef intp_t width
    cdef int64_t key, last
    cdef intp_t n_ptr = max(n_parts, 1)
    # each part checked and read in place (``statistics_view``): no read may
    # fall outside a part, nor a write outside the union
    cdef Statistics* view = <Statistics*> malloc(n_ptr * sizeof(Statistics))
    cdef const intp_t** local = <const intp_t**> malloc(n_ptr * sizeof(void*))
    cdef intp_t* item = <intp_t*> malloc(n_ptr * sizeof(intp_t))     # next item
    cdef intp_t* at = <intp_t*> malloc(n_ptr * sizeof(intp_t))       # next pair
    cdef intp_t* end = <intp_t*> malloc(n_ptr * sizeof(intp_t))      # row's end
    cdef intp_t* heap_part = <intp_t*> malloc(n_ptr * sizeof(intp_t))
    cdef int64_t* heap_key = <int64_t*> malloc(n_ptr * sizeof(int64_t))
    cdef const intp_t[::1] where_view
    cdef intp_t[::1] o_start
    cdef int32_t[::1] o_first
    cdef int32_t[::1] o_count
    cdef int64_t summed
    cdef bint overflow = False
    try:
        if (view == NULL or local == NULL or item == NULL or at == NULL
                or end == NULL or heap_part == NULL or heap_key == NULL):
            raise MemoryError("could not allocate the merge's heap")
        for k in range(n_parts):
            statistics_view(&view[k], parts[k], n_stages, -1)
            total += view[k].n_pairs
        items = np.unique(np.concatenate([q.items for q in parts])).astype(np.intp)
        width = items.shape[0]
        counts = np.zeros((width, n_stages))
        where = []
        for k in range(n_parts):
            where.append(np.searchsorted(items, parts[k].items).astype(np.intp))
            counts[where[k]] += parts[k].counts
            local[k] = NULL
            if view[k].n_ranked:
                where_view = where[k]
                local[k] = &where_view[0]
        out_start = np.empty(n_stages * width + 1, dtype=np.intp)
        out_first = np.empty(total, dtype=np.int32)
        out_count = np.empty(total, dtype=np.int32)
        o_start = out_start
        o_first = out_first
        o_count = out_count
        with nogil:
            for j in range(n_stages):
                for k in range(n_parts):
                    item[k] = 0
                for u in range(width):
                    o_start[j * width + u] = n_out
                    size = 0
                    for k in range(n_parts):
                        # the parts' items map to the union's in increasing order
                        if item[k] < view[k].n_ranked and local[k][item[k]] == u:
                            r = j * view[k].n_ranked + item[k]
                            item[k] += 1
                            at[k] = view[k].row_start[r]
                            end[k] = view[k].row_start[r + 1]
                            if at[k] < end[k]:
                                heap_part[size] = k
                                heap_key[size] = local[k][view[k].pair_first[at[k]]]
                                size += 1
                    # one part's row is copied, two parts' rows merged side by
                    # side (a Dask array of two chunks: the client's merges
                    # took a quarter of its time by the heap), more by the heap
                    if size == 1:
                        k = heap_part[0]
                        n_out = _copy_row(&view[k], local[k], at[k], end[k],
                                          &o_first[0], &o_count[0], n_out)
                        size = 0
                    elif size == 2:
                        k = heap_part[0]
                        r = heap_part[1]
                        n_out = _merge_two_rows(
                            &view[k], local[k], at[k], end[k], &view[r], local[r],
                            at[r], end[r], &o_first[0], &o_count[0], n_out, &overflow)
                        size = 0
                    for p in range(size - 1, -1, -1):
                        _sift_down(heap_key, heap_part, size, p)
                    last = -1
                    while size:
                        k = heap_part[0]
                        key = heap_key[0]
                        if key != last:
                            o_first[n_out] = <int32_t> key
                            o_count[n_out] = 0
                            n_out += 1
                            last = key
                        summed = <int64_t> o_count[n_out - 1] + view[k].pair_count[at[k]]
                        overflow = overflow or summed > INT32_MAX
                        o_count[n_out - 1] = <int32_t> summed
                        at[k] += 1
                        if at[k] < end[k]:
                            heap_key[0] = local[k][view[k].pair_first[at[k]]]
                        else:   # the row is spent: its place goes to the heap's last
                            size -= 1
                            heap_key[0] = heap_key[size]
                            heap_part[0] = heap_part[size]
                        _sift_down(heap_key, heap_part, size, 0)
            o_start[n_stages * width] = n_out
        if overflow:
            raise ValueError(f"statistics of more than {INT32_MAX} rankings")
    finally:
        free(view)
        free(local)
        free(item)
        free(at)
        free(end)
        free(heap_part)
        free(heap_key)
    # give back the room of the pairs the parts shared, in place: the arrays
    # own their data, and nothing else refers to them once the views go
    o_first = None
    o_count = None
    for out in (out_first, out_count):
        out.resize(n_out, refcheck=False)
    return RankingStatistics(items, counts, out_start, out_first, out_count)


cdef int statistics_view(
    Statistics* st, statistics, intp_t n_stages, intp_t n_items,
) except -1:
    """Point ``st``'s arrays at those of ``statistics`` (a ``RankingStatistics``
    of ``n_stages`` stages, kept alive by the caller), for the kernels to read.
    Checked first, so that no kernel reads or writes past them or past the
    caller's buffers of ``n_items`` (unless it is negative): the arrays'
    dtypes and shapes, the items strictly increasing (so there are at most
    ``n_items`` of them) and below ``n_items``, the rows and pairs holding
    together (``_well_formed``). ValueError if not."""
    cdef const intp_t[::1] items
    cdef const double[:, ::1] counts
    cdef const intp_t[::1] row_start
    cdef const int32_t[::1] first
    cdef const int32_t[::1] pair_count
    try:
        items = statistics.items
        counts = statistics.counts
        row_start = statistics.row_start
        first = statistics.pair_first
        pair_count = statistics.pair_count
    except (AttributeError, TypeError, ValueError) as error:
        raise ValueError(f"malformed ranking statistics: {error}") from None
    cdef intp_t D = items.shape[0]
    ids = np.asarray(items)
    if not (counts.shape[0] == D and counts.shape[1] == n_stages
            and _well_formed(row_start, first, pair_count, D, n_stages)
            and (D == 0 or (ids[0] >= 0 and np.all(ids[1:] > ids[:D - 1])
                            and (n_items < 0 or ids[D - 1] < n_items)))):
        raise ValueError("malformed ranking statistics")
    statistics_init(st)
    st.n_ranked = D
    st.n_stages = n_stages
    st.n_pairs = first.shape[0]
    st.row_start = <intp_t*> &row_start[0]
    if D:
        st.items = <intp_t*> &items[0]
        if n_stages:
            st.counts = <double*> &counts[0, 0]
    if st.n_pairs:
        st.pair_first = <int32_t*> &first[0]
        st.pair_count = <int32_t*> &pair_count[0]
    return 0


cdef void _weighted_rows(
    intp_t lo, intp_t hi, const Statistics* st, const double* theta,
    double* weight, double* preceded,
) noexcept nogil:
    """``weighted_statistics`` on the rows [lo, hi) of ``weight`` and
    ``preceded``, stage by stage, so that each cell adds its stages' terms in
    stage order, whichever rows a call takes."""
    cdef intp_t a, j, p, D = st.n_ranked, T = st.n_stages
    cdef const intp_t* row
    cdef double total
    for a in range(lo, hi):
        total = 0.0
        for j in range(T):
            total += theta[j] * st.counts[a * T + j]
        weight[a] = total
    memset(preceded + lo * D, 0, (hi - lo) * D * sizeof(double))
    for j in range(T):
        row = st.row_start + j * D
        for a in range(lo, hi):
            for p in range(row[a], row[a + 1]):
                preceded[a * D + st.pair_first[p]] += theta[j] * st.pair_count[p]


cdef void weighted_statistics(
    const Statistics* st,
    const double* theta,              # IN (n_stages,)
    double* weight,                   # OUT (D,)
    double* preceded,                 # OUT (D, D)
    int n_threads,                    # at most this many OpenMP threads
) noexcept nogil:
    """R = sum_j theta_j R_j in compact form: item weights and the "preceded" matrix.

    ``weight[a] = sum_j theta_j counts[a, j]`` and ``preceded[a, c]`` is the
    theta-weighted number of times c came before a, so ``R[a, c] = weight[a] -
    preceded[a, c]`` for a != c. O(D t + D^2 + n_pairs).

    From ``parallel_min_pairs`` pairs on, up to ``n_threads`` threads take the
    rows in bands (``_weighted_rows``): each cell still adds its stages' terms
    in stage order, so the sums are the same to the bit.
    """
    cdef intp_t band, n_bands, D = st.n_ranked
    if n_threads <= 1 or st.n_pairs < parallel_min_pairs or D < 2:
        _weighted_rows(0, D, st, theta, weight, preceded)
        return
    n_bands = min(D, 4 * n_threads)
    for band in prange(n_bands, num_threads=n_threads, schedule="dynamic"):
        _weighted_rows(band * D // n_bands, (band + 1) * D // n_bands, st, theta,
                       weight, preceded)


cdef double _stage_sum(intp_t j, const Statistics* st, const intp_t* at) noexcept nogil:
    """``stage_sums``' S_j, from stage j's rows; ``at[d]``: sigma's position of
    ``items[d]``."""
    cdef intp_t a, p, later, D = st.n_ranked
    cdef const intp_t* row = st.row_start + j * D
    cdef double total = 0.0
    cdef int64_t before
    for a in range(D):
        total += st.counts[a * st.n_stages + j] * at[a]
    for a in range(D):
        later = at[a]
        # A row's terms are summed as integers, and not branched on (which
        # way each goes is unpredictable): the same total to the bit as
        # subtracting them one by one in doubles, whose chain of dependent
        # additions took twice the time.
        before = 0
        for p in range(row[a], row[a + 1]):
            before += st.pair_count[p] * (at[st.pair_first[p]] < later)
        total -= <double> before
    return total


cdef void stage_sums(
    const Statistics* st,
    const intp_t* position,           # IN (n,) inverse of sigma
    double* out,                      # OUT (n_stages,)
    intp_t* at,                       # scratch (D,)
    int n_threads,                    # at most this many OpenMP threads
) noexcept nogil:
    """S_j(sigma) = L_sigma(R_j) = sum over the set of s_j(x | sigma), per stage.

    Each ranking contributes position[x_j] minus the earlier items of x that sigma
    also ranks before x_j. O(D t + n_pairs). The positions of the set's items
    are read from ``at`` (filled first: one lookup a pair, not two). From
    ``parallel_min_pairs`` pairs on, up to ``n_threads`` threads take the
    stages (``_stage_sum``, each stage's sum in one order: the same sums to
    the bit).
    """
    cdef intp_t j, d
    for d in range(st.n_ranked):
        at[d] = position[st.items[d]]
    if n_threads <= 1 or st.n_pairs < parallel_min_pairs:
        for j in range(st.n_stages):
            out[j] = _stage_sum(j, st, at)
        return
    for j in prange(st.n_stages, num_threads=n_threads, schedule="dynamic"):
        out[j] = _stage_sum(j, st, at)


cdef double energy(
    intp_t n_ranked,
    const intp_t* items,       # IN (D,)
    const double* weight,      # IN (D,)
    const double* preceded,    # IN (D, D)
    const intp_t* position,    # IN (n,)
) noexcept nogil:
    """L_sigma(R): the sum of R[a, c] over the pairs sigma orders as (c, a).

    The target of the sigma update is P(sigma | theta, data) proportional to
    exp(-L_sigma(R)). O(D^2).
    """
    cdef intp_t a, c
    cdef double total = 0.0
    for a in range(n_ranked):
        total += weight[a] * position[items[a]]
        for c in range(n_ranked):
            if position[items[c]] < position[items[a]]:
                total -= preceded[a * n_ranked + c]
    return total


cdef double stagewise(
    intp_t n_items, intp_t n_ranked,
    const intp_t* items,          # IN (D,)
    const double* weight,         # IN (D,)
    const double* preceded,       # IN (D, D)
    bitgen_t* rng,                # IN: draw sigma; NULL: evaluate the given sigma
    intp_t* sigma,                # OUT (n,) when drawing, IN otherwise
    double* log_norm,             # OUT: sum over stages of log Z_k
    intp_t* local,                # scratch (n,)
    double* rho,                  # scratch (D,)
    char* placed,                 # scratch (D,)
    intp_t* unranked,             # scratch (n - D,)
) noexcept nogil:
    """Sample-sigma-Stagewise (Meila & Chen, Figure 2) or its log-probability.

    Stage k picks sigma[k] among the items U not yet placed with probability
    exp(-rho_c) / Z_k, where rho_c = sum_{a in U} R[a, c] is the column sum of R
    over U. Returns log q(sigma) = -L_sigma(R) - sum_k log Z_k (the product of the
    chosen exp(-rho) is exp(-L_sigma(R))); ``log_norm`` receives sum_k log Z_k,
    which is all the Metropolis-Hastings correction needs.

    Items that no ranking of the set mentions have zero rows and share one column
    sum (the weight of the ranked items still in U), so they are one block, chosen
    with probability m exp(-W_U) / Z_k, the item within it uniformly. Cost O(D^2 + n).
    """
    cdef intp_t a, c, k, pick, item, n_unranked = n_items - n_ranked, slot = 0
    cdef double w_left = 0.0, shift = 0.0, z_ranked = 0.0, z, u, acc
    cdef double log_q = 0.0
    cdef bint stale = True

    for item in range(n_items):
        local[item] = -1
    for a in range(n_ranked):
        local[items[a]] = a
        placed[a] = 0
        w_left += weight[a]
    for c in range(n_ranked):
        rho[c] = w_left - weight[c]
        for a in range(n_ranked):
            rho[c] -= preceded[a * n_ranked + c]
    if rng != NULL:
        for item in range(n_items):
            if local[item] < 0:
                unranked[slot] = item
                slot += 1
    log_norm[0] = 0.0

    for k in range(n_items):
        if stale:
            # Shift by the smallest column sum so that no exp overflows or underflows
            # to an all-zero normaliser; it changes only when a ranked item is placed.
            shift = w_left if n_unranked > 0 else INFINITY
            for c in range(n_ranked):
                if not placed[c] and rho[c] < shift:
                    shift = rho[c]
            z_ranked = 0.0
            for c in range(n_ranked):
                if not placed[c]:
                    z_ranked += exp(shift - rho[c])
            stale = False
        z = z_ranked + n_unranked * exp(shift - w_left)

        if rng != NULL:
            u = uniform(rng) * z
            acc = 0.0
            pick = -1
            for c in range(n_ranked):
                if not placed[c]:
                    acc += exp(shift - rho[c])
                    pick = c
                    if u < acc:
                        break
            if u >= acc and n_unranked > 0:
                slot = uniform_index(rng, n_unranked)
                item = unranked[slot]
                unranked[slot] = unranked[n_unranked - 1]
                pick = -1
            else:
                # pick is the chosen ranked item (or, if round-off left u >= acc and
                # no block remains, the last ranked candidate).
                item = items[pick]
            sigma[k] = item
        else:
            item = sigma[k]
            pick = local[item]

        log_norm[0] += log(z) - shift
        if pick >= 0:
            log_q += (shift - rho[pick]) - log(z)
            placed[pick] = 1
            w_left -= weight[pick]
            for c in range(n_ranked):
                if not placed[c]:
                    rho[c] -= weight[pick] - preceded[pick * n_ranked + c]
            stale = True
        else:
            log_q += (shift - w_left) - log(z)
            n_unranked -= 1
    return log_q


cdef bint mh_sigma(
    intp_t n_items, intp_t n_ranked,
    const intp_t* items, const double* weight, const double* preceded,
    bitgen_t* rng,
    intp_t* sigma,            # INOUT (n,)
    intp_t* proposal,         # scratch (n,)
    intp_t* local, double* rho, char* placed, intp_t* unranked,   # scratch
) noexcept nogil:
    """One Metropolis-Hastings step for P(sigma | theta, data), stagewise proposal.

    With an independence proposal q and target p proportional to exp(-L), the
    acceptance ratio p(s') q(s) / (p(s) q(s')) reduces to Z(s') / Z(s), where
    log Z(s) = -L_s(R) - log q(s) is the sum of the stage normalisers: no energy
    needs computing. The step leaves the exact conditional invariant, which the
    stagewise rule alone does not (see :func:`stagewise_draw`).
    """
    cdef double log_z_new, log_z_old, log_ratio
    cdef intp_t r
    stagewise(n_items, n_ranked, items, weight, preceded, rng, proposal, &log_z_new,
              local, rho, placed, unranked)
    stagewise(n_items, n_ranked, items, weight, preceded, NULL, sigma, &log_z_old,
              local, rho, placed, unranked)
    log_ratio = log_z_new - log_z_old
    if log_ratio >= 0.0 or standard_exponential(rng) > -log_ratio:
        for r in range(n_items):
            sigma[r] = proposal[r]
        return True
    return False


cdef intp_t transposition_pass(
    intp_t n_items, intp_t n_ranked,
    const intp_t* items, const double* weight, const double* preceded,
    bitgen_t* rng,
    intp_t* sigma,            # INOUT (n,)
    intp_t* local,            # scratch (n,)
) noexcept nogil:
    """One Metropolis pass of adjacent transpositions over sigma; returns the swaps.

    Swapping the neighbours a (rank r) and b (rank r + 1) changes the energy by
    R[a, b] - R[b, a] (the pair's term switches from R[b, a] to R[a, b]), with
    R[x, y] = weight[x] - preceded[x, y] for a ranked x and 0 for an unranked one;
    the proposal is symmetric, so the swap is accepted with probability
    min(1, exp(-delta)). O(n) per pass.

    The independence step alone can stall: from a state whose target-to-proposal
    ratio is far above that of the stagewise draws it accepts nothing (a cluster
    can reach such a centre while its members and theta were different). Local
    moves let sigma walk downhill from there.
    """
    cdef intp_t r, a, b, la, lb, n_swaps = 0
    cdef double r_ab, r_ba, delta
    for a in range(n_items):
        local[a] = -1
    for a in range(n_ranked):
        local[items[a]] = a
    for r in range(n_items - 1):
        a = sigma[r]
        b = sigma[r + 1]
        la = local[a]
        lb = local[b]
        r_ab = 0.0 if la < 0 else weight[la] - (preceded[la * n_ranked + lb] if lb >= 0 else 0.0)
        r_ba = 0.0 if lb < 0 else weight[lb] - (preceded[lb * n_ranked + la] if la >= 0 else 0.0)
        delta = r_ab - r_ba
        if delta <= 0.0 or standard_exponential(rng) > delta:
            sigma[r] = b
            sigma[r + 1] = a
            n_swaps += 1
    return n_swaps


# Python entry points over the compact statistics, used by the tests and by the
# Python-level samplers (the compiled sweeps call the cdef functions directly).

cdef class _Scratch:
    """Work arrays of the stagewise kernel for n items and D ranked items."""
    cdef intp_t[::1] local, unranked, proposal
    cdef double[::1] rho
    cdef char[::1] placed

    def __cinit__(self, intp_t n_items, intp_t n_ranked):
        self.local = np.empty(n_items, dtype=np.intp)
        self.unranked = np.empty(max(n_items - n_ranked, 1), dtype=np.intp)
        self.proposal = np.empty(n_items, dtype=np.intp)
        self.rho = np.empty(max(n_ranked, 1), dtype=np.float64)
        self.placed = np.empty(max(n_ranked, 1), dtype=np.int8)


def theta_weighted_statistics(stats, const double[::1] theta, int n_threads=1):
    """``(weight, preceded)``: R = sum_j theta_j R_j in compact form (see module
    doc), on at most ``n_threads`` OpenMP threads."""
    cdef Statistics st
    cdef intp_t n_ranked = len(stats.items)
    if theta.shape[0] < stats.counts.shape[1]:
        raise ValueError(f"theta has {theta.shape[0]} stages, the statistics "
                         f"{stats.counts.shape[1]}.")
    statistics_view(&st, stats, stats.counts.shape[1], -1)
    cdef double[::1] weight = np.empty(n_ranked, dtype=np.float64)
    cdef double[:, ::1] preceded = np.empty((n_ranked, n_ranked), dtype=np.float64)
    if n_ranked > 0:
        with nogil:
            weighted_statistics(&st, &theta[0], &weight[0], &preceded[0, 0], n_threads)
    return np.asarray(weight), np.asarray(preceded)


def code_sums(stats, const intp_t[::1] sigma, int n_threads=1):
    """S_j(sigma) for every stage j: the summed codes of the set against sigma,
    on at most ``n_threads`` OpenMP threads."""
    cdef Statistics st
    cdef intp_t n_stages = stats.counts.shape[1]
    statistics_view(&st, stats, n_stages, sigma.shape[0])
    inverted_centres(np.asarray(sigma)[None], "sigma")   # a permutation
    cdef intp_t[::1] position = np.empty(sigma.shape[0], dtype=np.intp)
    cdef intp_t[::1] at = np.empty(max(st.n_ranked, 1), dtype=np.intp)
    cdef double[::1] out = np.zeros(n_stages, dtype=np.float64)
    if st.n_ranked > 0 and n_stages > 0:
        with nogil:
            invert(&sigma[0], sigma.shape[0], &position[0])
            stage_sums(&st, &position[0], &out[0], &at[0], n_threads)
    return np.asarray(out)


def sigma_energy(
    const intp_t[::1] items, const double[::1] weight,
    const double[:, ::1] preceded, const intp_t[::1] sigma,
):
    """L_sigma(R), the exact negative log-target of the sigma update (up to a constant)."""
    cdef intp_t[::1] position = np.empty(sigma.shape[0], dtype=np.intp)
    cdef double value = 0.0
    if items.shape[0] == 0:
        return 0.0
    with nogil:
        invert(&sigma[0], sigma.shape[0], &position[0])
        value = energy(items.shape[0], &items[0], &weight[0], &preceded[0, 0], &position[0])
    return value


def stagewise_draw(
    const intp_t[::1] items, const double[::1] weight,
    const double[:, ::1] preceded, intp_t n_items, bit_generator,
):
    """One draw of Sample-sigma-Stagewise: ``(sigma, log_q)``.

    Not an exact draw from P(sigma | theta, data) in general (Meila & Chen's Lemma 2
    claims it is; the first stage's probabilities ignore how the later stages
    normalise): use it as the proposal of :func:`mh_sigma_update`.
    """
    cdef _Scratch work = _Scratch(n_items, items.shape[0])
    cdef intp_t[::1] sigma = np.empty(n_items, dtype=np.intp)
    cdef bitgen_t* rng = bitgen_pointer(bit_generator)
    cdef double log_q, log_z
    cdef intp_t n_ranked = items.shape[0]
    bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
    with bit_generator.lock, nogil:
        log_q = stagewise(
            n_items, n_ranked,
            &items[0] if n_ranked else NULL, &weight[0] if n_ranked else NULL,
            &preceded[0, 0] if n_ranked else NULL, rng, &sigma[0], &log_z,
            &work.local[0], &work.rho[0], &work.placed[0], &work.unranked[0],
        )
    return np.asarray(sigma), log_q


def stagewise_log_proposal(
    const intp_t[::1] items, const double[::1] weight,
    const double[:, ::1] preceded, const intp_t[::1] sigma,
):
    """log q(sigma): the probability that Sample-sigma-Stagewise draws ``sigma``."""
    cdef intp_t n_items = sigma.shape[0], n_ranked = items.shape[0]
    cdef _Scratch work = _Scratch(n_items, n_ranked)
    cdef double log_q, log_z
    with nogil:
        log_q = stagewise(
            n_items, n_ranked,
            &items[0] if n_ranked else NULL, &weight[0] if n_ranked else NULL,
            &preceded[0, 0] if n_ranked else NULL, NULL, <intp_t*> &sigma[0], &log_z,
            &work.local[0], &work.rho[0], &work.placed[0], &work.unranked[0],
        )
    return log_q


def mh_sigma_update(
    const intp_t[::1] items, const double[::1] weight,
    const double[:, ::1] preceded, intp_t[::1] sigma,   # INOUT
    bit_generator, intp_t n_steps=1,
):
    """``n_steps`` exact MH steps on sigma in place; returns the number accepted."""
    cdef intp_t n_items = sigma.shape[0], n_ranked = items.shape[0], step
    cdef intp_t n_accepted = 0
    cdef _Scratch work = _Scratch(n_items, n_ranked)
    cdef bitgen_t* rng = bitgen_pointer(bit_generator)
    bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
    with bit_generator.lock, nogil:
        for step in range(n_steps):
            n_accepted += mh_sigma(
                n_items, n_ranked,
                &items[0] if n_ranked else NULL, &weight[0] if n_ranked else NULL,
                &preceded[0, 0] if n_ranked else NULL, rng, &sigma[0],
                &work.proposal[0], &work.local[0], &work.rho[0], &work.placed[0],
                &work.unranked[0],
            )
    return n_accepted


def sigma_transposition_pass(
    const intp_t[::1] items, const double[::1] weight,
    const double[:, ::1] preceded, intp_t[::1] sigma,   # INOUT
    bit_generator, intp_t n_passes=1,
):
    """``n_passes`` Metropolis passes of adjacent transpositions on sigma, in place.

    Returns the number of swaps made.
    """
    cdef intp_t n_items = sigma.shape[0], n_ranked = items.shape[0], p, n_swaps = 0
    cdef _Scratch work = _Scratch(n_items, n_ranked)
    cdef bitgen_t* rng = bitgen_pointer(bit_generator)
    bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
    with bit_generator.lock, nogil:
        for p in range(n_passes):
            n_swaps += transposition_pass(
                n_items, n_ranked,
                &items[0] if n_ranked else NULL, &weight[0] if n_ranked else NULL,
                &preceded[0, 0] if n_ranked else NULL, rng, &sigma[0], &work.local[0],
            )
    return n_swaps


# ---------------------------------------------------------------------------
# theta | sigma by slice sampling
# ---------------------------------------------------------------------------

cdef inline double theta_log_density(double theta, double a, double b, intp_t m) noexcept nogil:
    """Log of density (10): -a theta - b log psi_m(theta) on theta >= 0."""
    if theta < 0.0:
        return -INFINITY
    return -a * theta - b * log_psi(m, theta)


cdef double slice_theta(
    double theta, double a, double b, intp_t m, double width, intp_t n_steps,
    bitgen_t* rng,
) noexcept nogil:
    """``n_steps`` slice-sampling updates of one theta_j (Neal 2003, step-out + shrink).

    The target, P(theta_j | sigma) proportional to exp(-a theta - b log psi_m(theta))
    with a = nu r_j + S_j(sigma), b = nu + N_j, m = n - j, is log-concave, so the
    slice is one interval. The step-out interval is clipped at 0, where the density
    vanishes: a deterministic map of the interval, which keeps the update reversible.
    """
    cdef double log_y, left, right, candidate
    cdef intp_t step, j_left, k_right
    for step in range(n_steps):
        log_y = theta_log_density(theta, a, b, m) - standard_exponential(rng)
        left = theta - width * uniform(rng)
        right = left + width
        j_left = <intp_t> floor(MAX_STEP_OUT * uniform(rng))
        k_right = MAX_STEP_OUT - 1 - j_left
        while j_left > 0 and log_y < theta_log_density(left, a, b, m):
            left -= width
            j_left -= 1
        while k_right > 0 and log_y < theta_log_density(right, a, b, m):
            right += width
            k_right -= 1
        if left < 0.0:
            left = 0.0
        while True:
            candidate = left + uniform(rng) * (right - left)
            if log_y < theta_log_density(candidate, a, b, m):
                theta = candidate
                break
            if candidate < theta:
                left = candidate
            else:
                right = candidate
            if right - left <= 1e-14 * (1.0 + theta):
                # Only reachable when log_y equals the density at theta (an Exp(1)
                # draw of exactly 0): stay put.
                break
    return theta


def slice_sample_theta(
    const double[::1] theta,     # IN (t,) current values
    const double[::1] a,         # IN (t,) nu r_j + S_j(sigma)
    const double[::1] b,         # IN (t,) nu + N_j
    const intp_t[::1] m,         # IN (t,) n - j (1-based j)
    bit_generator, intp_t n_steps=3, double width=1.0,
):
    """Slice-sample every theta_j from density (10) of Meila & Chen; returns new thetas."""
    cdef intp_t j, n_stages = theta.shape[0]
    cdef double[::1] out = np.empty(n_stages, dtype=np.float64)
    cdef bitgen_t* rng = bitgen_pointer(bit_generator)
    bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
    with bit_generator.lock, nogil:
        for j in range(n_stages):
            out[j] = slice_theta(theta[j], a[j], b[j], m[j], width, n_steps, rng)
    return np.asarray(out)


def _log_psi_wrapper(intp_t m, double theta):
    """log psi_m(theta) (for tests)."""
    return log_psi(m, theta)


# ---------------------------------------------------------------------------
# Exact draws of theta from density (10), by adaptive rejection sampling
# ---------------------------------------------------------------------------

# Abscissae of the adaptive rejection sampler; with tangents at the mode and about
# one standard deviation either side the first proposal is accepted most of the time,
# so the limit is never the binding one in practice.
DEF MAX_ABSCISSAE = 24


cdef inline void code_moments(double theta, intp_t m, double* mean, double* var) noexcept nogil:
    """Mean and variance of k on 0..m with P(k) proportional to exp(-k theta).

    Closed forms, E k = 1/expm1(theta) - (m+1)/expm1((m+1) theta) and the like for
    the variance, when (m + 1) theta >= 0.01; below that their two terms nearly
    cancel, and a direct sum over the m + 1 values is exact enough (and cheap,
    since theta is then tiny only for small m or in a rare corner).
    """
    cdef intp_t k
    cdef double w, total = 0.0, first = 0.0, second = 0.0, e1, e2, m1 = m + 1.0
    if m1 * theta >= 0.01:
        e1 = expm1(theta)
        e2 = expm1(m1 * theta)
        mean[0] = 1.0 / e1 - m1 / e2
        # Var = e^t / expm1(t)^2 - (m+1)^2 e^{(m+1)t} / expm1((m+1)t)^2; the second
        # term is written with 1/e2 + 1/e2^2 so that it cannot overflow.
        var[0] = (1.0 / e1 + 1.0 / (e1 * e1)) - m1 * m1 * (1.0 / e2 + 1.0 / (e2 * e2))
    else:
        for k in range(m + 1):
            w = exp(-k * theta)
            total += w
            first += k * w
            second += k * k * w
        mean[0] = first / total
        var[0] = second / total - mean[0] * mean[0]
    if var[0] < 0.0:
        var[0] = 0.0


cdef inline double theta_log_slope(double theta, double a, double b, intp_t m) noexcept nogil:
    """d/dtheta of log density (10): -a + b E[k], since -d log psi_m / dtheta = E[k]."""
    cdef double mean, var
    code_moments(theta, m, &mean, &var)
    return -a + b * mean


cdef double theta_mode(double a, double b, intp_t m) noexcept nogil:
    """Mode of density (10) on [0, inf): 0 if the slope at 0 is <= 0, else its root."""
    cdef double low = 0.0, high = 1.0, mid
    cdef intp_t it
    if m == 0 or b <= 0.0 or theta_log_slope(0.0, a, b, m) <= 0.0:
        return 0.0
    while theta_log_slope(high, a, b, m) > 0.0:
        high *= 2.0
    for it in range(200):
        mid = 0.5 * (low + high)
        if theta_log_slope(mid, a, b, m) > 0.0:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * (1.0 + high):
            break
    return 0.5 * (low + high)


# The log-density drop that ends each side of theta_log_normaliser's integral
# (beyond, concavity bounds the tail mass by about e^-30), and its quadrature:
# Simpson's rule on 16, 32, ... intervals until three successive values agree
# to NORMALISER_RTOL, then one Richardson step (Boole's rule), whose error is far
# below that. Simpson's rule only runs where log psi_m matters (theta below
# _flat_from, at most about 65); beyond, the integrand is exp(-a theta) and is
# integrated in closed form. Tested against scipy's quad to 1e-6 in the log, a
# bias of that many nats in a split-merge acceptance ratio. (A grid out to the
# 30-nat drop, 30 / a long, could not resolve log psi_m's bend near 0 for small
# a: 9e-5 nats off at a = 3e-3, 2e-5 at a = 1e-3.)
DEF NORMALISER_DROP = 30.0
DEF NORMALISER_RTOL = 1e-4
DEF NORMALISER_MAX_INTERVALS = 4096


cdef double _simpson_side(double a, double b, intp_t m, double top, double x0,
                          double x1) noexcept nogil:
    """The integral of exp(log density (10) - top) on [x0, x1], by Simpson's rule
    from successive trapezoid refinements (each reuses the previous points) and
    a last Richardson extrapolation."""
    cdef intp_t k, n = 8, agreed = 0
    cdef double h = (x1 - x0) / n, trap, simpson, previous = -1.0, fresh
    if h <= 0.0:
        return 0.0
    trap = 0.5 * (exp(theta_log_density(x0, a, b, m) - top)
                  + exp(theta_log_density(x1, a, b, m) - top))
    for k in range(1, n):
        trap += exp(theta_log_density(x0 + k * h, a, b, m) - top)
    trap *= h
    while True:
        fresh = 0.0
        for k in range(n):
            fresh += exp(theta_log_density(x0 + (k + 0.5) * h, a, b, m) - top)
        simpson = (4.0 * (0.5 * trap + 0.5 * h * fresh) - trap) / 3.0
        trap = 0.5 * trap + 0.5 * h * fresh
        n *= 2
        h *= 0.5
        # two agreements in a row: on a side long against the mode's peak,
        # two coarse grids that both straddle the peak can agree by chance
        # (0.018 nats off at a = 0.156, b = 215, m = 100, stopping at 32
        # intervals where 512 were needed)
        agreed = agreed + 1 if fabs(simpson - previous) <= NORMALISER_RTOL * simpson else 0
        if agreed == 2 or n >= NORMALISER_MAX_INTERVALS:
            return simpson + (simpson - previous) / 15.0
        previous = simpson


cdef double theta_log_normaliser(double a, double b, intp_t m) noexcept nogil:
    """log of I(a, b, m), the integral over theta >= 0 of exp(-a theta - b log psi_m).

    So that density (10) can be evaluated, not only sampled: the split-merge move
    proposes theta from it and needs its value. The integrand is log-concave:
    each side of the mode is bracketed where it has fallen by NORMALISER_DROP
    nats (beyond, concavity bounds the tail by e^-30 of the mass), doubling from
    where it has fallen by one nat, then integrated by ``_side_integral``. a > 0
    is required.

    The one-nat distance is searched from a guess: the Laplace width 1 / sqrt(b
    Var k) at an inner mode, at most 1 / |slope| at a mode at 0 (or 1 / a where
    the curvature vanishes). Bracketing from the Laplace width alone missed
    the mass of a mode at 0 narrower than it: at a = 1e8, b = 1, m = 1 the
    mass lies within 1e-8 of 0 and the width is 2, and the value was 4.8 nats
    too large.
    """
    cdef double mode = theta_mode(a, b, m), top, mean, var, guess, slope, flat, right
    top = theta_log_density(mode, a, b, m)
    code_moments(mode, m, &mean, &var)
    guess = 1.0 / sqrt(b * var) if b * var > 0.0 else INFINITY
    if mode == 0.0:
        slope = -theta_log_slope(0.0, a, b, m)  # >= 0 at a mode at 0
        if slope > 0.0:
            guess = fmin(guess, 1.0 / slope)
    if not guess < INFINITY:
        guess = 1.0 / a
    flat = _flat_from(b, m)
    right = _side_end(a, b, m, top, mode, _one_nat(a, b, m, top, mode, 1.0, guess))
    return top + log(
        _side_integral(a, b, m, top, _side_end(
            a, b, m, top, mode, -_one_nat(a, b, m, top, mode, -1.0, guess)), mode, flat)
        + _side_integral(a, b, m, top, mode, INFINITY if right > flat else right, flat))


cdef inline double _flat_from(double b, intp_t m) noexcept nogil:
    """A theta beyond which b log psi_m(theta) < 1e-16, where density (10) is
    exp(-a theta) to double precision: log psi_m(theta) is at most log(m + 1),
    and at most e^-theta / (1 - e^-theta) <= 1.6 e^-theta from theta = 1 on."""
    if m == 0 or b * log(m + 1.0) <= 1e-16:
        return 0.0
    return fmax(1.0, log(b) + 37.5)


cdef double _side_integral(double a, double b, intp_t m, double top, double x0,
                           double x1, double flat) noexcept nogil:
    """The integral of exp(log density (10) - top) on [x0, x1] (x1 may be
    infinite): in closed form beyond ``flat``, where the density is exp(-a
    theta), and below it by Simpson's rule on pieces that end at 1 / (m + 1),
    2 / (m + 1), 4 / (m + 1), ...: log psi_m bends at theta of about 1 / m and
    is close to -log theta between 1 / m and 1, which a grid uniform from 0 to
    flat resolves only with tens of thousands of points at m in the hundreds
    (7.6e-6 nats off at a = 0.36, b = 3e-3, m = 532 with one grid)."""
    cdef double total = 0.0, start = fmax(x0, flat), low = x0, high = fmin(x1, flat)
    cdef double edge = 1.0 / (m + 1.0)
    while low < high:
        while edge <= low:
            edge *= 2.0
        total += _simpson_side(a, b, m, top, low, fmin(edge, high))
        low = fmin(edge, high)
    if x1 > start:
        total += exp(-a * start - top) * -expm1(-a * (x1 - start)) / a
    return total


cdef double _one_nat(double a, double b, intp_t m, double top, double mode,
                     double sign, double guess) noexcept nogil:
    """How far from the mode, on the side ``sign`` gives, the log density has
    fallen by one nat, to a few percent (the mode itself on the left, if it does
    not fall that far before 0): bracketed from ``guess`` by doubling or
    halving, then bisected."""
    cdef double inner, outer = guess, mid
    cdef intp_t it
    if sign < 0.0:
        if mode <= 0.0:
            return 0.0
        if theta_log_density(0.0, a, b, m) - top > -1.0:
            return mode
        outer = fmin(outer, mode)
    if theta_log_density(mode + sign * outer, a, b, m) - top > -1.0:
        inner = outer
        while True:
            outer = inner * 2.0
            if sign < 0.0 and outer >= mode:
                outer = mode  # falls by a nat before 0, as checked above
                break
            if theta_log_density(mode + sign * outer, a, b, m) - top <= -1.0:
                break
            inner = outer
    else:
        for it in range(2200):  # down to the smallest doubles
            inner = 0.5 * outer
            if inner == 0.0 or theta_log_density(mode + sign * inner, a, b, m) - top > -1.0:
                break
            outer = inner
    for it in range(6):
        mid = 0.5 * (inner + outer)
        if theta_log_density(mode + sign * mid, a, b, m) - top > -1.0:
            inner = mid
        else:
            outer = mid
    return outer


cdef double _side_end(double a, double b, intp_t m, double top, double mode,
                      double width) noexcept nogil:
    """Where the log density falls NORMALISER_DROP below its top, on the side of the
    mode that ``width``'s sign gives (0 if it does not fall that far before 0):
    bracketed by doubling, then bisected to 1%, so that the Simpson grid spans
    the mass and no more."""
    cdef double inner = 0.0, outer = width, mid
    cdef intp_t it
    while theta_log_density(mode + outer, a, b, m) - top > -NORMALISER_DROP:
        if mode + outer <= 0.0:
            return 0.0
        inner = outer
        outer *= 2.0
    if mode + outer < 0.0:
        outer = -mode
        if theta_log_density(0.0, a, b, m) - top > -NORMALISER_DROP:
            return 0.0
    for it in range(7):
        mid = 0.5 * (inner + outer)
        if theta_log_density(mode + mid, a, b, m) - top > -NORMALISER_DROP:
            inner = mid
        else:
            outer = mid
    return mode + outer


def theta_log_normaliser_wrapper(double a, double b, intp_t m):
    """:func:`theta_log_normaliser` from Python (for tests)."""
    return theta_log_normaliser(a, b, m)


cdef double theta_exact(double a, double b, intp_t m, bitgen_t* rng) noexcept nogil:
    """An exact draw from density (10), exp(-a theta - b log psi_m(theta)) on [0, inf).

    The log-density is concave (log psi_m is a log-sum-exp of linear functions), so
    adaptive rejection sampling (Gilks & Wild 1992) applies: the upper hull of
    tangents is a piecewise exponential envelope; a rejected point becomes a new
    tangent. Starting tangents sit at the mode and one standard deviation beyond it
    (from the curvature there), so most draws are accepted at the first proposal.

    With a and b of 1e8 and more, the log-density (about -b log(m + 1)) is
    exact only to about 1e-16 b, and two tangents nearly parallel on the
    scale of that error meet anywhere: their breakpoint is clamped between
    their abscissae (it fell below 0 and made the envelope's masses infinite
    or NaN: draws far in the tail at nu = 1e8, an endless loop at 1e11). The
    envelope may then miss the density by that error, a bias of 1e-5 in the
    acceptance ratio at b = 1e11.
    """
    cdef double x[MAX_ABSCISSAE]
    cdef double h[MAX_ABSCISSAE]
    cdef double dh[MAX_ABSCISSAE]
    cdef double z[MAX_ABSCISSAE + 1]      # hull breakpoints, z[0] = 0, z[n] = inf
    cdef double mass[MAX_ABSCISSAE]       # envelope mass of each piece (shifted)
    cdef intp_t n = 0, i, k, piece
    cdef double mode, mean, var, sd, top, total, u, cum, lo, hi, slope, width
    cdef double cand, hull, value, span

    mode = theta_mode(a, b, m)
    code_moments(mode, m, &mean, &var)
    sd = 1.0 / (b * var) ** 0.5 if b * var > 0.0 else 1.0 / a
    if mode > 0.0:
        x[n] = mode - sd if mode - sd > 0.0 else 0.5 * mode
        n += 1
        x[n] = mode
        n += 1
    else:
        x[n] = 0.0
        n += 1
    # Right of the mode the slope is negative, so the last piece is integrable.
    span = sd if sd < 1.0 / a or mode > 0.0 else 1.0 / a
    x[n] = mode + span
    n += 1
    for i in range(n):
        h[i] = theta_log_density(x[i], a, b, m)
        dh[i] = theta_log_slope(x[i], a, b, m)

    while True:
        # Hull breakpoints: where consecutive tangents meet.
        z[0] = 0.0
        for i in range(n - 1):
            if dh[i] - dh[i + 1] > 1e-300:
                z[i + 1] = (h[i + 1] - h[i] - x[i + 1] * dh[i + 1] + x[i] * dh[i]) / (dh[i] - dh[i + 1])
                # concavity puts it between the abscissae; rounding may not
                if not z[i + 1] >= x[i]:
                    z[i + 1] = x[i]
                elif not z[i + 1] <= x[i + 1]:
                    z[i + 1] = x[i + 1]
            else:
                z[i + 1] = 0.5 * (x[i] + x[i + 1])
        z[n] = INFINITY
        top = h[0]
        for i in range(n):
            if h[i] > top:
                top = h[i]
        # Mass of exp(tangent_i - top) over [z[i], z[i+1]].
        total = 0.0
        for i in range(n):
            lo = h[i] - top + dh[i] * (z[i] - x[i])
            if i == n - 1:
                mass[i] = exp(lo) / (-dh[i])
            elif fabs(dh[i]) < 1e-12:
                mass[i] = exp(lo) * (z[i + 1] - z[i])
            else:
                hi = h[i] - top + dh[i] * (z[i + 1] - x[i])
                mass[i] = (exp(hi) - exp(lo)) / dh[i]
            total += mass[i]
        if not (total > 0.0 and total < INFINITY):
            # an envelope rounding has broken (none is known since the clamp
            # above): slice sampling from the mode, many steps, rather than a
            # loop without end
            return slice_theta(mode, a, b, m, span, 50, rng)
        # Draw a piece, then a point in it by inverting its exponential CDF.
        u = uniform(rng) * total
        cum = 0.0
        piece = n - 1
        for i in range(n):
            cum += mass[i]
            if u < cum:
                piece = i
                break
        u = uniform(rng)
        slope = dh[piece]
        lo = z[piece]
        if piece == n - 1:
            cand = lo - log(1.0 - u) / (-slope)
        elif fabs(slope) < 1e-12:
            cand = lo + u * (z[piece + 1] - lo)
        else:
            width = z[piece + 1] - lo
            if slope * width > 700.0:
                # the same solution, from the upper end, where a steeply rising
                # piece holds its mass: exp(slope width) overflows from 709 on
                # (b of 1e6 and more), and every draw of the piece fell on its
                # end
                cand = z[piece + 1] + log(u + (1.0 - u) * exp(-slope * width)) / slope
            else:
                # solve exp(slope (c - lo)) = 1 + u (exp(slope width) - 1)
                cand = lo + log(1.0 + u * expm1(slope * width)) / slope
            if cand > z[piece + 1]:
                cand = z[piece + 1]
            elif not cand >= lo:
                cand = lo
        hull = h[piece] + slope * (cand - x[piece])
        value = theta_log_density(cand, a, b, m)
        if log(uniform(rng)) <= value - hull:
            return cand
        if n < MAX_ABSCISSAE:
            # Insert the rejected point as a new tangent, keeping x sorted.
            k = n
            while k > 0 and x[k - 1] > cand:
                x[k] = x[k - 1]
                h[k] = h[k - 1]
                dh[k] = dh[k - 1]
                k -= 1
            x[k] = cand
            h[k] = value
            dh[k] = theta_log_slope(cand, a, b, m)
            n += 1


def exact_sample_theta(double a, double b, intp_t m, intp_t size, bit_generator):
    """``size`` exact draws from density (10) with parameters (a, b, m)."""
    cdef double[::1] out = np.empty(size, dtype=np.float64)
    cdef bitgen_t* rng = bitgen_pointer(bit_generator)
    cdef intp_t i
    if not a > 0.0 or not b >= 0.0 or m < 0:
        raise ValueError(f"need a > 0, b >= 0, m >= 0; got a={a}, b={b}, m={m}.")
    bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
    with bit_generator.lock, nogil:
        for i in range(size):
            out[i] = theta_exact(a, b, m, rng)
    return np.asarray(out)
