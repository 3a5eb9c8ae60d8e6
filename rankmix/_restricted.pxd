# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The parallel label step of the sub-cluster samplers, exact, for every model.

Given explicit cluster parameters theta_k and weights pi_k, the rows' labels are
conditionally independent, so they can be drawn in parallel: the step behind
Chang & Fisher (2013)'s sampler. Their restricted step draws z_i from
pi_k f(x_i | theta_k) over the K instantiated clusters and lets a cluster empty.
Emptying a cluster changes K, and the reverse move (re-creating that cluster with
those parameters) has no proposal in the step, so a step that may empty a cluster
is not reversible: its chain does not leave the DP posterior invariant. We keep the
step exact by never emptying a cluster:

* The augmented target is p(c | X) p(pi | c) p(theta | c, X), with
  (pi_1, ..., pi_K, pi_rest) | c ~ Dirichlet(n_1, ..., n_K, alpha) and theta_k the
  cluster's posterior. Written out, it is proportional to
  alpha^K prod_k pi_k^(n_k - 1) pi_rest^(alpha - 1) p0(theta_k) prod_i f(x_i | theta_(z_i)),
  so moving one row from cluster j to k multiplies it by
  pi_k f(x_i | theta_k) / (pi_j f(x_i | theta_j)), as long as K does not change.
* Each sweep, every row gets a priority u_i (a Philox uniform of (row, sweep)). The
  member of lowest priority of each cluster is its anchor. Anchors keep their
  labels, and any other row may move to cluster k only if its priority exceeds the
  anchor of k's. The allowed moves then keep every anchor the lowest member of its
  cluster, so the set of labellings the step can reach is the same from each of
  them, and the row's choices are independent: the step draws the labels exactly
  from the augmented target restricted to that set (a blocked Gibbs step). The
  priorities are drawn afresh each sweep, independently of the state, so the sweep
  is a mixture of exact steps, and exact.
* Only the ratios pi_k / pi_j matter, so pi_k is drawn as an unnormalised
  Gamma(n_k, 1) variable and the remainder pi_rest is never drawn.

New clusters come only from the split moves, as in Chang & Fisher's sampler. A
cluster's anchor is its lowest-priority member, so a large cluster's anchor has a
priority near 0 and every row may join it; a row of low priority is held back from
few clusters, and never for two sweeps in a row by chance alone.

Every draw of a row comes from Philox keyed by the chain's key and counted by
(row, sweep, purpose), so the labels do not depend on which thread or worker
computes them.
"""

from cython.parallel cimport prange
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc

from ._counter_rng cimport philox_uniforms

ctypedef Py_ssize_t intp_t

# The ``purpose`` word of a row's Philox counter: one per use within a sweep.
cdef enum:
    PURPOSE_LABEL = 0      # (priority, label draw, sub-allocation draw, spare)
    PURPOSE_LAUNCH = 1     # split-merge launches: + the launch's index


cdef inline void row_draws(
        const uint64_t* key, intp_t row, uint64_t sweep, uint64_t purpose,
        double* out) noexcept nogil:
    """Four uniforms of row ``row`` for ``purpose`` in sweep ``sweep``."""
    philox_uniforms(key, <uint64_t> row, sweep, purpose, out)


cdef inline bint precedes(double priority_a, intp_t row_a,
                          double priority_b, intp_t row_b) noexcept nogil:
    """(priority, row) order: a strict total order, ties broken by row index."""
    return priority_a < priority_b or (priority_a == priority_b and row_a < row_b)


cdef inline void anchors_of_rows(
        const uint64_t* key, uint64_t sweep, const intp_t* labels, intp_t lo,
        intp_t hi, intp_t capacity, double* priority, intp_t* anchor, double* u,
        double* row_uniforms) noexcept nogil:
    """The lowest-priority member of each slot among rows lo..hi-1 (priority 2 and
    row -1 where none); ``u`` holds four doubles of scratch; ``row_uniforms``, if
    not NULL, gets each row's priority and label draw, ``(n_rows, 2)``."""
    cdef intp_t i, c
    for c in range(capacity):
        priority[c] = 2.0
        anchor[c] = -1
    for i in range(lo, hi):
        row_draws(key, i, sweep, PURPOSE_LABEL, u)
        if row_uniforms != NULL:
            row_uniforms[2 * i] = u[0]
            row_uniforms[2 * i + 1] = u[1]
        c = labels[i]
        if precedes(u[0], i, priority[c], anchor[c]):
            priority[c] = u[0]
            anchor[c] = i


cdef inline void find_anchors(
        const uint64_t* key, uint64_t sweep, const intp_t* labels, intp_t n_rows,
        intp_t capacity,
        double* anchor_priority,   # OUT (capacity,) the anchor's priority (2 if none)
        intp_t* anchor_row,        # OUT (capacity,) the anchor's row (-1 if none)
        double* row_uniforms,      # OUT (n_rows, 2) or NULL: see anchors_of_rows
        intp_t n_threads,
) noexcept nogil:
    """The lowest-priority member of each slot, in one pass over the rows.

    With ``n_threads`` > 1 each thread takes a contiguous range of rows and the
    ranges' anchors are merged: the anchor is the least member in the strict
    (priority, row) order, so it is the same for any number of threads. The
    pass draws a Philox block per row: on one thread it took about 9 ms at
    N = 10^6 (2-core VM), a serial part of every sweep that would bound the
    speed-up of many threads."""
    cdef intp_t t, c, lo, hi, chunk
    cdef double u[4]
    cdef double* part_priority = NULL
    cdef intp_t* part_row = NULL
    n_threads = max(1, min(n_threads, n_rows))
    if n_threads > 1:
        part_priority = <double*> malloc(n_threads * (capacity + 4) * sizeof(double))
        part_row = <intp_t*> malloc(n_threads * capacity * sizeof(intp_t))
    if part_priority == NULL or part_row == NULL:   # one thread, or no memory
        free(part_priority)
        free(part_row)
        anchors_of_rows(key, sweep, labels, 0, n_rows, capacity, anchor_priority,
                        anchor_row, u, row_uniforms)
        return
    chunk = (n_rows + n_threads - 1) // n_threads
    for t in prange(n_threads, schedule="static", num_threads=n_threads):
        lo = t * chunk
        hi = min(n_rows, lo + chunk)
        anchors_of_rows(key, sweep, labels, lo, hi, capacity,
                        part_priority + t * capacity, part_row + t * capacity,
                        part_priority + n_threads * capacity + 4 * t, row_uniforms)
    for c in range(capacity):
        anchor_priority[c] = 2.0
        anchor_row[c] = -1
        for t in range(n_threads):
            if precedes(part_priority[t * capacity + c], part_row[t * capacity + c],
                        anchor_priority[c], anchor_row[c]):
                anchor_priority[c] = part_priority[t * capacity + c]
                anchor_row[c] = part_row[t * capacity + c]
    free(part_priority)
    free(part_row)
