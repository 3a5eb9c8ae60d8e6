# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The dynamic program of the permutation-augmented sampler (Liang et al. 2007, sec. 3).

Given an ordering pi of the N points, a clustering is *consistent* with pi when
every cluster is a run of consecutive positions; it is then described by the end
positions ``ends[0] < ... < ends[K - 1] = N`` of its K segments (a segment of size
m ending at position r holds the points pi_{r-m+1}, ..., pi_r). The program sums and
samples over all 2^(N - 1) consistent clusterings, for any weight of the form

    w(C) = A(K) prod_{segments c} B(c),   log B(c) = log m(x_c) + log_size[|c|],

with m(x_c) the family's segment marginal likelihood, read through a
``SegmentModel`` (see the .pxd), and ``log_size`` a table supplied by the caller.

Exact pass (sec. 3.1), O(N^2) space, O(N^3) time. With the table
g(r, K) = sum_m g(r - m, K - 1) B(pi_{r-m+1..r}), the normaliser is
Z = sum_K A(K) g(N, K); a clustering is drawn by choosing K with probability
A(K) g(N, K) / Z, then the last segment's size m with probability
g(r - m, K - 1) B(.) / g(r, K), and so on back to r = 0. The DP mixture with the
uniform p(pi | C) of eq. 3 has A(K) = alpha^K / K! and log_size[m] = -log m, and
the draw is then exactly from p(C | pi, x).

Beam pass (sec. 3.2 and 3.3), the case A(K) = 1 (every factor per segment). With
g'(r) = sum_{m in M_r} g'(r - m) B(pi_{r-m+1..r}), the sets of kept sizes are built
incrementally: N_r = {m + 1 : m in M_{r-1}} u {1}, and M_r is the smallest subset
of N_r whose terms hold at least 1 - epsilon of the sum over N_r (the smallest
terms are dropped while their running total stays within epsilon of the sum). A
segment start that is dropped is never extended again, so each step costs
O(|M_r|) segment updates. epsilon = 0 keeps every term: the full O(N^2) pass of
eq. 6. The draw follows the kept terms back from r = N, so a clustering has
probability

    q(C) = prod_c B(c) / g'(N)   if every segment (r, m) of C has m in M_r,
    q(C) = 0                      otherwise,

which ``log_prob`` returns: the sampler of the package uses it as a
Metropolis-Hastings proposal, whose acceptance needs q of the current clustering.

The segment statistics are built one point at a time (``SegmentModel.add``): each
open segment gains the point pi_r at step r, so all segments cost O(N^2) updates
for the exact pass and O(sum_r |M_r|) with the beam.
"""

import numpy as np

from libc.math cimport INFINITY, exp, isfinite, log
from libc.stdlib cimport free, qsort, realloc
from libc.string cimport memcpy
from numpy.random cimport bitgen_t

from ._rng cimport bitgen_pointer, log_add, uniform
from ._slots cimport grow_array


cdef struct TermRecord:
    double term
    intp_t index


cdef int _compare_terms(const void* a, const void* b) noexcept nogil:
    cdef double ta = (<const TermRecord*> a).term, tb = (<const TermRecord*> b).term
    if ta < tb:
        return -1
    if ta > tb:
        return 1
    # ties: by index, so that the order (and the beam) is deterministic
    return <int> ((<const TermRecord*> a).index - (<const TermRecord*> b).index)


cdef double digamma(double x) noexcept nogil:
    """Psi(x) = d log Gamma(x) / dx for x > 0 (recurrence, then the asymptotic series)."""
    cdef double result = 0.0, inv, inv2
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return result + log(x) - 0.5 * inv - inv2 * (
        1.0 / 12.0 - inv2 * (1.0 / 120.0 - inv2 * (1.0 / 252.0 - inv2 * (
            1.0 / 240.0 - inv2 / 132.0))))


cdef class SegmentDP:
    """Workspace of the dynamic program over the clusterings consistent with an order.

    One per chain: the buffers grow to the largest problem seen and are reused. The
    passes and the sampler are ``cdef ... nogil`` methods (module docstring); the
    last pass run is the one that ``sample`` and ``log_prob`` refer to.
    """

    def __cinit__(self):
        self.N = 0
        self.n_capacity = 0
        self.states_capacity = 0
        self.kept_capacity = 0
        self.table_capacity = 0
        self.log_norm = -INFINITY
        self.exact = False

    def __dealloc__(self):
        free(self.g); free(self.kept_start); free(self.kept_m); free(self.kept_term)
        free(self.states); free(self.active_start); free(self.term)
        free(self.sort_buffer); free(self.keep)
        free(self.table_g); free(self.table_b); free(self.log_A)

    cdef int _reserve(self, intp_t N) except -1 nogil:
        cdef intp_t n = max(N, 1)
        if n > self.n_capacity:
            self.g = <double*> grow_array(self.g, (n + 1) * sizeof(double))
            self.kept_start = <intp_t*> grow_array(self.kept_start, (n + 2) * sizeof(intp_t))
            self.active_start = <intp_t*> grow_array(self.active_start, n * sizeof(intp_t))
            self.term = <double*> grow_array(self.term, (n + 1) * sizeof(double))
            self.sort_buffer = grow_array(self.sort_buffer, n * sizeof(TermRecord))
            self.keep = <char*> grow_array(self.keep, n * sizeof(char))
            self.log_A = <double*> grow_array(self.log_A, (n + 1) * sizeof(double))
        self.n_capacity = max(n, self.n_capacity)
        return 0

    cdef int _reserve_states(self, intp_t n_open, intp_t width, intp_t N) except -1 nogil:
        """Room for ``n_open`` open segments' states of ``width`` doubles; the
        first ones are kept. The beam keeps few segments open, so its states
        grow with them (doubling, up to the N of a pass that opens every
        start), not with N (N x width is 0.49 GiB for 10,000 points of the
        full Gaussian family at d = 80)."""
        cdef intp_t size = n_open * width
        if size > self.states_capacity:
            size = min(max(size, 2 * self.states_capacity), max(N, 1) * width)
            self.states = <double*> grow_array(self.states, size * sizeof(double))
            self.states_capacity = size
        return 0

    cdef int _reserve_kept(self, intp_t size) except -1 nogil:
        if size <= self.kept_capacity:
            return 0
        size = max(size, 2 * self.kept_capacity)
        self.kept_m = <intp_t*> grow_array(self.kept_m, size * sizeof(intp_t))
        self.kept_term = <double*> grow_array(self.kept_term, size * sizeof(double))
        self.kept_capacity = size
        return 0

    cdef int beam_forward(
        self,
        const SegmentModel* model,
        const intp_t* order,       # IN (N,) the points in their order
        intp_t N,
        const double* log_size,    # IN (N + 1,) log_size[m]: per-segment term of size m
        double epsilon,            # beam tolerance in [0, 1); 0 keeps every term
    ) except -1 nogil:
        """The single-index pass g'(r) with the beam (module docstring)."""
        cdef intp_t W = model.width, r, a, j, s, m, n_open = 0, n_kept = 0, n_drop, n_candidates, j_high
        cdef double high, total, tail, limit, weight, t
        cdef double* st
        cdef TermRecord* records
        self._reserve(N)
        self._reserve_kept(4 * N + 16)
        records = <TermRecord*> self.sort_buffer
        self.N = N
        self.exact = False
        self.g[0] = 0.0
        self.kept_start[0] = 0
        self.kept_start[1] = 0
        for r in range(1, N + 1):
            # open the segment that starts at position r - 1, then add pi_r to all
            self._reserve_states(n_open + 1, W, N)
            model.reset(model.context, self.states + n_open * W)
            self.active_start[n_open] = r - 1
            n_open += 1
            high = -INFINITY
            j_high = 0
            for a in range(n_open):
                st = self.states + a * W
                model.add(model.context, st, order[r - 1])
                s = self.active_start[a]
                t = self.g[s] + model.log_marginal(model.context, st) + log_size[r - s]
                self.term[a] = t
                if t > high:
                    high = t
                    j_high = a
            if not isfinite(high):
                with gil:
                    raise FloatingPointError(
                        "every segment ending at position %d has zero weight" % r)
            total = 0.0
            for a in range(n_open):
                self.keep[a] = 1
                total += exp(self.term[a] - high)
            if epsilon > 0.0 and n_open > 1:
                # Drop the smallest terms while they hold at most epsilon of the sum.
                # Only terms below that bound can go: sort just those (and never the
                # largest term).
                limit = epsilon * total
                n_candidates = 0
                for a in range(n_open):
                    if a != j_high and exp(self.term[a] - high) <= limit:
                        records[n_candidates].term = self.term[a]
                        records[n_candidates].index = a
                        n_candidates += 1
                qsort(records, n_candidates, sizeof(TermRecord), _compare_terms)
                tail = 0.0
                n_drop = 0
                for j in range(n_candidates):
                    weight = exp(records[j].term - high)
                    if tail + weight > limit:
                        break
                    tail += weight
                    self.keep[records[j].index] = 0
                    n_drop += 1
                if n_drop > 0:
                    total = 0.0
                    j = 0
                    for a in range(n_open):
                        if not self.keep[a]:
                            continue
                        total += exp(self.term[a] - high)
                        if j != a:
                            memcpy(self.states + j * W, self.states + a * W, W * sizeof(double))
                            self.active_start[j] = self.active_start[a]
                            self.term[j] = self.term[a]
                        j += 1
                    n_open = j
            self.g[r] = high + log(total)
            self._reserve_kept(n_kept + n_open)
            for a in range(n_open):
                self.kept_m[n_kept] = r - self.active_start[a]
                self.kept_term[n_kept] = self.term[a]
                n_kept += 1
            self.kept_start[r + 1] = n_kept
        self.log_norm = self.g[N]
        return 0

    cdef int exact_forward(
        self,
        const SegmentModel* model,
        const intp_t* order,       # IN (N,)
        intp_t N,
        const double* log_size,    # IN (N + 1,) log_size[m]
        const double* log_A,       # IN (N + 1,) log A(K), K = 1..N
    ) except -1 nogil:
        """The exact pass over (r, K), O(N^2) space and O(N^3) time."""
        cdef intp_t W = model.width, r, a, m, k, s, n1 = N + 1
        cdef double high, total, t
        cdef double* st
        self._reserve(N)
        self._reserve_states(N, W, N)  # every start stays open
        if n1 * n1 > self.table_capacity:
            self.table_g = <double*> grow_array(self.table_g, n1 * n1 * sizeof(double))
            self.table_b = <double*> grow_array(self.table_b, n1 * n1 * sizeof(double))
            self.table_capacity = n1 * n1
        self.N = N
        self.exact = True
        for k in range(n1 * n1):
            self.table_g[k] = -INFINITY
            self.table_b[k] = -INFINITY
        self.table_g[0] = 0.0
        for k in range(n1):
            self.log_A[k] = log_A[k] if k > 0 else -INFINITY
        for r in range(1, N + 1):
            # every start stays open: segment statistics for all m = 1..r
            model.reset(model.context, self.states + (r - 1) * W)
            self.active_start[r - 1] = r - 1
            for a in range(r):
                st = self.states + a * W
                model.add(model.context, st, order[r - 1])
                s = self.active_start[a]
                self.table_b[r * n1 + r - s] = model.log_marginal(model.context, st) + log_size[r - s]
            for k in range(1, r + 1):
                high = -INFINITY
                for m in range(1, r - k + 2):
                    t = self.table_g[(r - m) * n1 + k - 1] + self.table_b[r * n1 + m]
                    self.term[m] = t
                    if t > high:
                        high = t
                if high == -INFINITY:
                    continue
                total = 0.0
                for m in range(1, r - k + 2):
                    total += exp(self.term[m] - high)
                self.table_g[r * n1 + k] = high + log(total)
        self.log_norm = -INFINITY
        for k in range(1, N + 1):
            self.log_norm = log_add(self.log_norm, self.log_A[k] + self.table_g[N * n1 + k])
        return 0

    cdef intp_t sample(
        self,
        bitgen_t* rng,
        intp_t* ends,   # OUT (K,) end positions of the drawn segments, increasing
    ) except -1 nogil:
        """Draw a clustering from the last pass; returns its number of segments K."""
        cdef intp_t r = self.N, K = 0, k, m, j, lo, hi, n1 = self.N + 1, tmp
        cdef double u
        if self.exact:
            u = uniform(rng)
            k = self.N
            for j in range(1, self.N + 1):
                u -= exp(self.log_A[j] + self.table_g[self.N * n1 + j] - self.log_norm)
                if u < 0.0:
                    k = j
                    break
            while r > 0:
                ends[K] = r
                K += 1
                if k == 1:
                    break
                u = uniform(rng)
                m = r - k + 1
                for j in range(1, r - k + 2):
                    u -= exp(self.table_g[(r - j) * n1 + k - 1] + self.table_b[r * n1 + j]
                             - self.table_g[r * n1 + k])
                    if u < 0.0:
                        m = j
                        break
                r -= m
                k -= 1
        else:
            while r > 0:
                ends[K] = r
                K += 1
                lo = self.kept_start[r]
                hi = self.kept_start[r + 1]
                u = uniform(rng)
                m = self.kept_m[hi - 1]
                for j in range(lo, hi):
                    u -= exp(self.kept_term[j] - self.g[r])
                    if u < 0.0:
                        m = self.kept_m[j]
                        break
                r -= m
        for j in range(K // 2):
            tmp = ends[j]
            ends[j] = ends[K - 1 - j]
            ends[K - 1 - j] = tmp
        return K

    cdef double log_prob(
        self,
        const intp_t* ends,   # IN (K,) increasing end positions, ends[K - 1] = N
        intp_t K,
    ) noexcept nogil:
        """log of the probability that ``sample`` draws this clustering (-inf if pruned)."""
        cdef intp_t k, r, m, prev = 0, j, n1 = self.N + 1
        cdef double value = 0.0
        cdef bint found
        if K < 1 or ends[K - 1] != self.N:
            return -INFINITY
        if self.exact:
            value = self.log_A[K] - self.log_norm
            for k in range(K):
                value += self.table_b[ends[k] * n1 + ends[k] - prev]
                prev = ends[k]
            return value
        for k in range(K):
            r = ends[k]
            m = r - prev
            found = False
            for j in range(self.kept_start[r], self.kept_start[r + 1]):
                if self.kept_m[j] == m:
                    value += self.kept_term[j] - self.g[r]
                    found = True
                    break
            if not found:
                return -INFINITY
            prev = r
        return value

    cdef double mean_beam_width(self) noexcept nogil:
        """Mean number of kept sizes |M_r| over r in the last beam pass."""
        if self.exact or self.N == 0:
            return <double> (self.N + 1) / 2.0
        return <double> self.kept_start[self.N + 1] / self.N


# -- a segment model read from a table, for tests ---------------------------------------


cdef struct TableContext:
    const double* table       # (N, N): table[s, e] = log m of the positions s..e
    const intp_t* position    # (N,) position of each point in the order
    intp_t N


cdef void _table_reset(void* context, double* state) noexcept nogil:
    state[0] = -1.0   # first position
    state[1] = 0.0    # length


cdef void _table_add(void* context, double* state, intp_t point) noexcept nogil:
    cdef TableContext* c = <TableContext*> context
    if state[1] == 0.0:
        state[0] = c.position[point]
    state[1] += 1.0


cdef double _table_log_marginal(void* context, const double* state) noexcept nogil:
    cdef TableContext* c = <TableContext*> context
    cdef intp_t s = <intp_t> state[0], e = s + <intp_t> state[1] - 1
    return c.table[s * c.N + e]


def _dp_wrapper(order, segment_log_marginal, log_size, log_A=None, double epsilon=0.0,
                clusterings=(), intp_t n_samples=0, seed=0):
    """Run one pass on a table of segment log-marginals (for tests).

    Parameters
    ----------
    order : array-like of shape (N,)
        The points in their order.
    segment_log_marginal : ndarray of shape (N, N)
        ``[s, e]``: log m of the points at positions s..e of ``order`` (s <= e).
    log_size : ndarray of shape (N + 1,)
        Per-segment term of each size.
    log_A : ndarray of shape (N + 1,) or None
        log A(K): the exact pass; None runs the beam pass with ``epsilon``.
    epsilon : float
        Beam tolerance (0 keeps every term).
    clusterings : sequence of sequences of int
        End positions of clusterings whose log-probability to return.
    n_samples : int
        Clusterings to draw.
    seed : int
        Seed of the draws.

    Returns
    -------
    log_norm : float
    log_probs : ndarray of shape (len(clusterings),)
    samples : list of tuple
        The drawn clusterings as end positions.
    beam_width : float
        Mean |M_r|.
    states_capacity : int
        Doubles held for the open segments' states (width 2 each).
    """
    cdef intp_t[::1] order_ = np.ascontiguousarray(order, dtype=np.intp)
    cdef intp_t N = order_.shape[0], i, K
    cdef const double[:, ::1] table = np.ascontiguousarray(segment_log_marginal, dtype=np.float64)
    cdef const double[::1] sizes = np.ascontiguousarray(log_size, dtype=np.float64)
    cdef const double[::1] A
    position = np.empty(N, dtype=np.intp)
    position[np.asarray(order_)] = np.arange(N)
    cdef intp_t[::1] position_ = position
    if table.shape[0] != N or table.shape[1] != N or sizes.shape[0] != N + 1:
        raise ValueError("the table must be (N, N) and log_size (N + 1,)")
    cdef TableContext context
    context.table = &table[0, 0]
    context.position = &position_[0]
    context.N = N
    cdef SegmentModel model
    model.context = &context
    model.width = 2
    model.reset = _table_reset
    model.add = _table_add
    model.log_marginal = _table_log_marginal
    cdef SegmentDP dp = SegmentDP()
    if log_A is None:
        dp.beam_forward(&model, &order_[0], N, &sizes[0], epsilon)
    else:
        A = np.ascontiguousarray(log_A, dtype=np.float64)
        dp.exact_forward(&model, &order_[0], N, &sizes[0], &A[0])
    cdef intp_t[::1] ends
    log_probs = np.empty(len(clusterings))
    for i, c in enumerate(clusterings):
        ends = np.ascontiguousarray(c, dtype=np.intp)
        log_probs[i] = dp.log_prob(&ends[0], ends.shape[0])
    bit_generator = np.random.PCG64(seed)
    cdef bitgen_t* rng = bitgen_pointer(bit_generator)
    ends = np.empty(N, dtype=np.intp)
    samples = []
    with bit_generator.lock:
        for i in range(n_samples):
            K = dp.sample(rng, &ends[0])
            samples.append(tuple(np.asarray(ends[:K]).tolist()))
    return dp.log_norm, log_probs, samples, dp.mean_beam_width(), dp.states_capacity
