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

from libc.math cimport exp, log1p
from libc.stdint cimport uint64_t

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


cdef inline void find_anchors(
        const uint64_t* key, uint64_t sweep, const intp_t* labels, intp_t n_rows,
        intp_t capacity,
        double* anchor_priority,   # OUT (capacity,) the anchor's priority (2 if none)
        intp_t* anchor_row,        # OUT (capacity,) the anchor's row (-1 if none)
) noexcept nogil:
    """The lowest-priority member of each slot, one pass over the rows."""
    cdef intp_t i, c
    cdef double u[4]
    for c in range(capacity):
        anchor_priority[c] = 2.0
        anchor_row[c] = -1
    for i in range(n_rows):
        row_draws(key, i, sweep, PURPOSE_LABEL, u)
        c = labels[i]
        if precedes(u[0], i, anchor_priority[c], anchor_row[c]):
            anchor_priority[c] = u[0]
            anchor_row[c] = i


cdef inline double log_share(double la, double lb) noexcept nogil:
    """log(e^la / (e^la + e^lb)), without overflow.

    ``log_pair`` (``_rng.pxd``) returns both shares through pointers, which a
    ``prange`` body cannot take of its private variables; this returns one.
    """
    if lb > la:
        return -(lb - la) - log1p(exp(la - lb))
    return -log1p(exp(lb - la))
