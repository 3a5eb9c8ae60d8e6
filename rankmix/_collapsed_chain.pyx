# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The collapsed sampler core: one MCMC chain of a DP mixture of a conjugate family.

The chain is collapsed: the cluster parameters are integrated out, and the state is
the clustering plus, per cluster, the family's state (sufficient statistics), kept
up to date as points move. The core knows nothing of the family beyond a
``ConjugateFamily`` (``_family.pxd``); ``NIWModel.family(X)`` (the Gaussian) is one.
A sweep releases the GIL for all its work:

1. ``n_split_merge`` sequentially-allocated merge-split proposals (SAMS, Dahl
   2003), each an exact Metropolis-Hastings step;
2. one collapsed Gibbs scan (Neal 2000, algorithm 3): each point in turn leaves
   its cluster and joins cluster k with probability proportional to n_k p(x | k),
   or a new cluster with probability proportional to alpha p(x) (where the family
   can weigh a point's own cluster as if it had left, the point leaves only if
   it moves; and the scan may weigh 16 points at a time: ``_gibbs_scan``);
3. after a Gibbs scan, every cluster's state that changed since it was last
   rebuilt is rebuilt from its members, so that the round-off of the removals
   never outlives a sweep;
4. optionally, one permutation-augmented move (Liang, Jordan & Taskar 2007), below;
5. optionally, alpha | K by Escobar & West (1995)'s auxiliary-variable step.

Clusters live in slots of one growable array of states, reused when a cluster
empties, so no relabelling pass over the data is ever needed.

What a family provides
----------------------
A ``_family.Family`` subclass bound to N data points, whose ``c`` holds:

* ``segments.width``: doubles per cluster state; ``segments.context``: the opaque
  pointer every callback gets (the data and the callbacks' scratch);
* ``segments.reset(state)``: the prior (empty) state; ``segments.add(state, i)``
  and ``remove(state, i)``: add or remove point i; ``rebuild(state, members, n)``:
  the state of a set of points from scratch. ``remove`` and ``rebuild`` return < 0
  on a numerical failure: after a failed ``remove`` the core rebuilds the cluster
  from its members, and a failed ``rebuild`` raises FloatingPointError with the
  family's ``failure_message``;
* ``log_kernel(state, i)`` and ``log_predictive(state, i)``: the point-dependent
  part and the whole of log p(x_i | cluster); ``segments.log_marginal(state)``:
  log m(cluster), the cluster's marginal likelihood;
* ``key_dim``, ``point_key(i, u)`` and ``cluster_key(state, u)``: the keys of the
  burn-in's random projections, u . x_i and u . (cluster location), for a
  direction u of ``key_dim`` standard normals;
* in Python, ``describe(states)``: the snapshot's parameter tuple from (K, width)
  states, ``failure_message``, and pickling (``copy()``: every chain runs on its
  own copy, since the callbacks write to the context's scratch).

The state layout convention, the only entries the core reads: ``state[0]`` is n,
and ``state[log_weight]`` is log n + the x-independent part of log p(x | cluster)
(-inf when n = 0), so that point i's Gibbs weight for the cluster is
``state[log_weight] + log_kernel(state, i)`` and a new cluster's is
log alpha + log_predictive(prior, i). ``segments`` is the ``SegmentModel`` of the
permutation dynamic program (``_permutation``), passed to it as is.

Which moves are exact
---------------------
Gibbs, SAMS, the alpha update and the permutation move after burn-in each leave the
posterior p(c, alpha | X) invariant, given exact family callbacks; the burn-in hill
climbing does not (below), and only runs during burn-in.

SAMS (Dahl 2003). Pick an ordered pair of distinct points (i, j) uniformly and a
uniform random order of the other points S of c_i's and c_j's clusters. Starting
from {i} and {j}, allocate the points of S in that order, each to the side A (of
i) with probability

    q_k = n_A p(x_k | A) / (n_A p(x_k | A) + n_B p(x_k | B)),

given the points already allocated. If c_i = c_j this proposes the split (A, B),
with proposal probability q(split) = prod_k (q_k or 1 - q_k); otherwise it proposes
the merge A u B, and q(split) is the probability that the same allocation, forced
to follow the current clusters, reproduces them. The reverse of each proposal is
deterministic given (i, j, order), which both directions draw alike, so the
Metropolis-Hastings ratios are

    split:  alpha Gamma(n_A) Gamma(n_B) / Gamma(n_A + n_B)
            * m(A) m(B) / m(A u B) / q(split),
    merge:  the inverse, times q(split),

with m the cluster marginal likelihood. Both leave the posterior invariant, and
together they can reach every clustering, so split-merge alone is a valid sampler.
A merge's q(split) is at most 1, so a merge whose uniform u has log u >= log of
the rest of its ratio is rejected without the forced allocation (which draws
nothing: the chain is the same either way); most merges end there.

Permutation move (Liang et al. 2007). The state is augmented with an ordering pi
of the points; a clustering is consistent with pi when its clusters are runs of
consecutive positions. The move draws pi given the clustering C, then a new
clustering among the 2^(N - 1) consistent with pi by the dynamic program of
``_permutation`` (segment statistics built by the family's ``add``, one update per
point and open segment). After burn-in it is exact:

* pi is uniform on Pi(C) (eq. 3): a uniform order of the clusters, and of the
  points within each cluster;
* ``"exact"``: C' ~ p(C' | pi, x) proportional to A(|C'|) prod_c B(c) (eq. 4),
  A(K) = alpha^K / K!, B(c) = m(c) / |c|, by the O(N^2)-space table over (r, K):
  a blocked Gibbs step of the augmented chain;
* ``"beta"``: C' is proposed from q_beta (eq. 5 and 6), which replaces K! by
  beta^K so that every factor is per segment, by the beam pass with tolerance
  epsilon (sec. 3.3; epsilon = 0 is the full pass), and accepted with probability
  min(1, p(C', pi, x) q(C) / (p(C, pi, x) q(C'))). The segment factors cancel and
  the ratio is beta^K' / K'! * K! / beta^K. If the current clustering's path was
  pruned from the beam, q(C) = 0 and the proposal is rejected (counted in
  ``permutation_counts["pruned"]``): the beam depends on pi and x only, so it is
  an independence proposal given pi and the step stays exact. beta is fixed
  after burn-in to exp Psi(Kbar + 1), Kbar the mean number of clusters over the
  second half of burn-in (the tangent of log K! there; the paper adapts it during
  burn-in and then fixes it), so the proposal does not depend on the state.

During the first ``burn_in`` sweeps (the chain counts its own sweeps) the move is
instead the paper's stochastic hill climbing (sec. 4.2): pi comes from a random
projection u (clusters sorted by their ``cluster_key``, points within a cluster by
their ``point_key``) and C' is drawn with probability proportional to
p(C', x) 1[pi in Pi(C')], whose factors alpha Gamma(|c|) m(c) are per segment, by
the beam pass. p(pi | C) of a projection order is not computable, so this step
does NOT leave the posterior invariant: it only ever runs during burn-in, whose
draws the engine discards.
"""

import numpy as np

from libc.math cimport INFINITY, exp, lgamma, log
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy, memset
from numpy.random cimport bitgen_t

from ._family cimport (
    ROWS_BLOCK, STATE_COUNT, ConjugateFamily, Family, family_add, family_log_kernel,
    family_log_kernel_t, family_log_marginal, family_merged_state, family_rebuild,
    family_remove, family_reset,
)
from ._permutation cimport digamma, intp_t
from ._consensus import number_by_first_appearance
from ._dp_prior cimport (
    crp_log_normaliser, escobar_west, gamma_log_density, split_merge_pair,
)
from ._rng cimport (
    bitgen_pointer, draw_from_logs, log_pair, random_standard_normal, shuffle,
    uniform, uniform_index,
)
from ._slots cimport (
    Slots, grow_array, slots_close, slots_free, slots_group, slots_grow, slots_open,
)

# The permutation move's variants after burn-in (``permutation`` argument).
cdef enum:
    PERMUTATION_NONE = 0
    PERMUTATION_EXACT = 1
    PERMUTATION_BETA = 2

_PERMUTATION_MODES = {None: PERMUTATION_NONE, "exact": PERMUTATION_EXACT,
                      "beta": PERMUTATION_BETA}


cdef int _compare_projections(const void* a, const void* b) noexcept nogil:
    cdef const ProjectionRecord* x = <const ProjectionRecord*> a
    cdef const ProjectionRecord* y = <const ProjectionRecord*> b
    if x.cluster_key != y.cluster_key:
        return -1 if x.cluster_key < y.cluster_key else 1
    if x.cluster != y.cluster:
        return -1 if x.cluster < y.cluster else 1
    if x.key != y.key:
        return -1 if x.key < y.key else 1
    return -1 if x.point < y.point else (1 if x.point > y.point else 0)


cdef class CollapsedChain:
    """State and sweeps of one chain (see the module docstring).

    Parameters
    ----------
    family : Family
        The cluster family bound to the data (e.g. ``NIWModel.family(X)``). The
        chain runs on its own ``family.copy()``.
    alpha : float
        Initial (or fixed) DP concentration.
    gibbs : bool
        Run a collapsed Gibbs scan each sweep.
    n_split_merge : int
        SAMS proposals per sweep (0 for none).
    alpha_prior : tuple (shape, rate) or None
        Gamma prior of alpha, resampled each sweep; None keeps alpha fixed.
    init_clusters : int
        Number of clusters of the random initial clustering.
    bit_generator : numpy.random.BitGenerator
        This chain's own random stream.
    permutation : {None, "exact", "beta"}, default=None
        The permutation move's variant after burn-in (module docstring); None runs
        no permutation move.
    beam_tolerance : float, default=1e-32
        epsilon of the beam (``"beta"`` and the burn-in hill climbing); 0 keeps
        every segment.
    burn_in : int, default=0
        Sweeps during which the permutation move hill-climbs with random
        projections; the chain counts its sweeps, so the engine need not tell it.
    sequential_init : bool, default=False
        Start from sequential prediction (``_initialise_sequential``) instead of
        the random clustering into ``init_clusters``.
    prior_predictive : array-like of shape (N,), default=None
        log p(x_i) under the prior, for a chain whose rows the family does not
        hold (N is its length); None computes it from the family's rows.
    """

    def __init__(
        self, Family family, double alpha, bint gibbs, intp_t n_split_merge,
        alpha_prior, intp_t init_clusters, bit_generator, permutation=None,
        double beam_tolerance=1e-32, intp_t burn_in=0, bint sequential_init=False,
        prior_predictive=None,
    ):
        cdef intp_t n_init
        self.family = family.copy()
        self.f = self.family.c
        # a chain whose rows are elsewhere (Dask workers: ``_subcluster_chain``)
        # is given log p(x_i) of its rows, and its family holds none of them
        self.N = (self.family.n_points if prior_predictive is None
                  else len(prior_predictive))
        self.W = self.f.segments.width
        self.alpha = alpha
        self.gibbs = gibbs
        self.n_split_merge = n_split_merge if self.N >= 2 else 0
        self.sample_alpha = alpha_prior is not None
        if self.sample_alpha:
            self.alpha_shape, self.alpha_rate = alpha_prior
        self.bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
        self._kernel_blocks = True
        self._rebuild_every = False
        self.rng = bitgen_pointer(self.bit_generator)
        self.labels = np.empty(self.N, dtype=np.intp)

        self.direction = <double*> malloc(max(self.f.key_dim, 1) * sizeof(double))
        self.members = <intp_t*> malloc(max(self.N, 1) * sizeof(intp_t))
        self.side = <char*> malloc(max(self.N, 1) * sizeof(char))
        self.state_a = <double*> malloc(self.W * sizeof(double))
        self.state_b = <double*> malloc(self.W * sizeof(double))
        self.state_m = <double*> malloc(self.W * sizeof(double))
        self.merge_moments = <double*> malloc(
            2 * max(self.f.moments_width, 1) * sizeof(double))
        if (self.direction == NULL or self.members == NULL or self.side == NULL
                or self.state_a == NULL or self.state_b == NULL or self.state_m == NULL
                or self.merge_moments == NULL):
            raise MemoryError("could not allocate the chain's work arrays")
        # log p(x_i) under the prior: the new-cluster weight less log alpha
        self.log_prior_predictive = np.array(
            self.family.log_prior_predictive() if prior_predictive is None
            else prior_predictive, dtype=np.float64)
        if permutation not in _PERMUTATION_MODES:
            raise ValueError(f"permutation must be None, 'exact' or 'beta', got {permutation!r}")
        if not 0.0 <= beam_tolerance < 1.0:
            raise ValueError(f"beam_tolerance must be in [0, 1), got {beam_tolerance}")
        self.permutation = _PERMUTATION_MODES[permutation]
        self.beam_tolerance = beam_tolerance
        self.burn_in = burn_in
        self.n_sweeps_done = 0
        self.permutation_beta = float("nan")
        self.dp = SegmentDP()
        self.order = <intp_t*> malloc(max(self.N, 1) * sizeof(intp_t))
        self.ends_old = <intp_t*> malloc(max(self.N, 1) * sizeof(intp_t))
        self.ends_new = <intp_t*> malloc(max(self.N, 1) * sizeof(intp_t))
        self.log_size = <double*> malloc((self.N + 1) * sizeof(double))
        self.log_A = <double*> malloc((self.N + 1) * sizeof(double))
        self.records = <ProjectionRecord*> malloc(max(self.N, 1) * sizeof(ProjectionRecord))
        if (self.order == NULL or self.ends_old == NULL or self.ends_new == NULL
                or self.log_size == NULL or self.log_A == NULL or self.records == NULL):
            raise MemoryError("could not allocate the chain's work arrays")
        self._grow(max(2 * init_clusters, 16))

        n_init = max(1, min(init_clusters, self.N))
        with self.bit_generator.lock, nogil:
            if sequential_init and self.N > 0:
                self._initialise_sequential()
            else:
                self._initialise(n_init)
        self._count_split_merge()

    def __dealloc__(self):
        slots_free(&self.slots)
        free(self.states); free(self.log_prob)
        free(self.kernel_table); free(self.dirty)
        free(self.direction); free(self.members); free(self.side)
        free(self.state_a); free(self.state_b); free(self.state_m)
        free(self.merge_moments)
        free(self.order); free(self.ends_old); free(self.ends_new)
        free(self.log_size); free(self.log_A); free(self.records)

    # -- slots ---------------------------------------------------------------

    cdef int _grow(self, intp_t capacity) except -1 nogil:
        """Reallocate every per-slot array for ``capacity`` slots."""
        if capacity <= self.slots.capacity:
            return 0
        self.states = <double*> grow_array(self.states, capacity * self.W * sizeof(double))
        self.log_prob = <double*> grow_array(self.log_prob, (capacity + 1) * sizeof(double))
        if self.f.log_kernel_rows != NULL:
            self.kernel_table = <double*> grow_array(
                self.kernel_table, capacity * ROWS_BLOCK * sizeof(double))
        self.dirty = <char*> grow_array(self.dirty, capacity * sizeof(char))
        memset(self.dirty + self.slots.capacity, 1, capacity - self.slots.capacity)
        slots_grow(&self.slots, capacity)
        return 0

    cdef intp_t _open_slot(self) except -1 nogil:
        """An empty cluster (the prior's state). May move ``states``: re-read pointers."""
        cdef intp_t c
        if self.slots.n_free == 0:
            self._grow(2 * self.slots.capacity)
        c = slots_open(&self.slots)
        family_reset(&self.f, self._state(c))
        self.dirty[c] = 1
        return c

    cdef void _close_slot(self, intp_t c) noexcept nogil:
        slots_close(&self.slots, c)

    # -- rebuilding states from the data ----------------------------------------------

    cdef void _group_members(self) noexcept nogil:
        """members[member_start[c]:member_start[c + 1]]: the points of slot c."""
        slots_group(&self.slots, &self.labels[0], self.N, self.members)

    cdef int _rebuild_all(self) except -1 nogil:
        """Every active cluster's state afresh from its members."""
        return self._rebuild(True)

    cdef int _rebuild(self, bint every) except -1 nogil:
        """The active clusters' states afresh from their members: every one, or
        those whose state changed since their last rebuild (``dirty``). A rebuild
        undoes the drift of rank-one updates; a state left alone since its
        rebuild is that rebuild's to the bit, its members and their order (by
        index) the same, so skipping it changes nothing."""
        cdef intp_t a, c
        self._group_members()
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            if not (every or self.dirty[c]):
                continue
            if family_rebuild(
                &self.f, self._state(c), self.members + self.slots.member_start[c],
                self.slots.member_start[c + 1] - self.slots.member_start[c],
            ) < 0:
                self._fail()
            self.dirty[c] = 0
        return 0

    cdef int _rebuild_slot(self, intp_t c, intp_t exclude) except -1 nogil:
        """Slot c's state from its members other than point ``exclude``, O(N) + rebuild.

        The fallback when a removal fails numerically (rare; NIW: a downdate that
        loses positive definiteness).
        """
        cdef intp_t i, n = 0
        for i in range(self.N):
            if self.labels[i] == c and i != exclude:
                self.members[n] = i
                n += 1
        if family_rebuild(&self.f, self._state(c), self.members, n) < 0:
            self._fail()
        return 0

    cdef int _fail(self) except -1 nogil:
        with gil:
            raise FloatingPointError(self.family.failure_message)

    # -- moves ---------------------------------------------------------------------

    cdef intp_t _weigh(self, intp_t i, double log_alpha, intp_t own,
                       double own_weight, const double* kernels) noexcept nogil:
        """Draw point i's cluster from its collapsed conditional: the index into
        ``slots.active``, or ``n_active`` for a new cluster. The active cluster at
        index ``own`` (-1: none) has the weight ``own_weight``, given; slot c's
        kernel is ``kernels[c * ROWS_BLOCK]`` (``_gibbs_scan``), or the
        family's ``log_kernel`` where ``kernels`` is NULL."""
        cdef intp_t a, c
        # The hot loop: K calls through the family's pointer per point. The callee is
        # opaque to the compiler, so what it would otherwise re-read from self after
        # every call is read once here.
        cdef intp_t n_active = self.slots.n_active, width = self.W
        cdef intp_t weight_offset = self.f.log_weight
        cdef const intp_t* active = self.slots.active
        cdef double* states = self.states
        cdef double* log_prob = self.log_prob
        cdef family_log_kernel_t log_kernel = self.f.log_kernel
        cdef void* context = self.f.segments.context
        cdef double* s
        for a in range(n_active):
            if a == own:
                log_prob[a] = own_weight
                continue
            c = active[a]
            s = states + c * width
            if kernels != NULL:
                log_prob[a] = s[weight_offset] + kernels[c * ROWS_BLOCK]
            else:
                log_prob[a] = s[weight_offset] + log_kernel(context, s, i)
        log_prob[n_active] = log_alpha + self.log_prior_predictive[i]
        return draw_from_logs(log_prob, n_active + 1, self.rng)

    cdef intp_t _place(self, intp_t i, intp_t choice) except -1 nogil:
        """Add point i (in no cluster) to the cluster ``_weigh`` drew; its slot."""
        cdef intp_t c
        if choice == self.slots.n_active:
            c = self._open_slot()
        else:
            c = self.slots.active[choice]
        family_add(&self.f, self._state(c), i)
        self.dirty[c] = 1
        self.labels[i] = c
        return c

    cdef int _seat(self, intp_t i, double log_alpha) except -1 nogil:
        """Draw point i (in no cluster) into a cluster from its collapsed conditional."""
        self._place(i, self._weigh(i, log_alpha, -1, 0.0, NULL))
        return 0

    cdef int _remove(self, intp_t i) except -1 nogil:
        """Take point i out of its cluster, closing the cluster if i was alone."""
        cdef intp_t c_old = self.labels[i]
        cdef double* s = self._state(c_old)
        self.dirty[c_old] = 1
        if s[STATE_COUNT] <= 1.0:
            self._close_slot(c_old)
        elif family_remove(&self.f, s, i) < 0:
            self._rebuild_slot(c_old, i)
        return 0

    cdef void _block_kernels(self, intp_t c, intp_t first, intp_t m) noexcept nogil:
        """``kernel_table``'s row of slot c <- the kernels of points first..first+m-1,
        from the slot's state now (columns ``first % ROWS_BLOCK`` on)."""
        self.f.log_kernel_rows(self.f.segments.context, self._state(c), first, m,
                               self.kernel_table + c * ROWS_BLOCK + first % ROWS_BLOCK)

    cdef int _gibbs_scan(self) except -1 nogil:
        """One collapsed Gibbs scan (Neal 2000, algorithm 3).

        Where the family has ``own_log_weight`` (``_family.pxd``), a member of a
        cluster of two or more is weighed before it is removed, its own cluster's
        weight computed as if it were not there, and removed only if it moves: the
        conditional is the same, and a point that stays costs no update.

        Where it has ``log_kernel_rows``, the points are weighed by blocks of
        ``ROWS_BLOCK``: at a block's start every cluster's kernels of its points
        (a factor read once for the block), and after each change of a state (a
        point out of or into a cluster) that cluster's kernels of the block's later
        points again. So every weight comes from the state as it is when the point
        is weighed, the same doubles as point by point, and so are the draws."""
        cdef intp_t first = 0, last, i, a, c_old, c_new, own, choice
        cdef double log_alpha = log(self.alpha), own_weight
        cdef double* s
        cdef const double* kernels = NULL
        cdef bint blocks = self.f.log_kernel_rows != NULL and self._kernel_blocks
        cdef bint alone
        while first < self.N:
            last = min(first + ROWS_BLOCK, self.N)
            if blocks:
                for a in range(self.slots.n_active):
                    self._block_kernels(self.slots.active[a], first, last - first)
            for i in range(first, last):
                if blocks:
                    kernels = self.kernel_table + (i - first)
                c_old = self.labels[i]
                s = self._state(c_old)
                if self.f.own_log_weight != NULL and s[STATE_COUNT] >= 2.0:
                    own_weight = self.f.own_log_weight(self.f.segments.context, s, i)
                    if own_weight == own_weight:     # not NaN
                        own = self.slots.active_pos[c_old]
                        choice = self._weigh(i, log_alpha, own, own_weight, kernels)
                        if choice != own:
                            self._remove(i)
                            c_new = self._place(i, choice)
                            if blocks and i + 1 < last:
                                self._block_kernels(c_old, i + 1, last - i - 1)
                                self._block_kernels(c_new, i + 1, last - i - 1)
                        continue
                alone = s[STATE_COUNT] < 2.0
                self._remove(i)
                if blocks and not alone:
                    # its state changed: the kernels of this point on
                    self._block_kernels(c_old, i, last - i)
                c_new = self._place(i, self._weigh(i, log_alpha, -1, 0.0, kernels))
                if blocks and i + 1 < last:
                    self._block_kernels(c_new, i + 1, last - i - 1)
            first = last
        return 0

    cdef int _split_merge(self) except -1 nogil:
        """One SAMS proposal and its Metropolis-Hastings decision (module docstring)."""
        cdef intp_t i, j, k, r, m, ci, cj, c_new
        cdef double log_q, log_ratio
        m = split_merge_pair(self.rng, &self.labels[0], self.N, &i, &j, self.members)
        ci = self.labels[i]
        cj = self.labels[j]
        if ci != cj:
            return self._sams_merge(i, j, ci, cj, m)
        log_q = self._sams_pass(i, j, m, ci, True)
        log_ratio = (self._pair_log_ratio(self.state_a, self.state_b) - log_q
                     - family_log_marginal(&self.f, self._state(ci)))
        self.n_split += 1
        if log(uniform(self.rng)) < log_ratio:
            self.n_split_accepted += 1
            c_new = self._open_slot()
            memcpy(self._state(ci), self.state_a, self.W * sizeof(double))
            memcpy(self._state(c_new), self.state_b, self.W * sizeof(double))
            self.dirty[ci] = 1
            self.labels[j] = c_new
            for r in range(m):
                k = self.members[r]
                if not self.side[k]:
                    self.labels[k] = c_new
        return 0

    cdef double _pair_log_ratio(self, const double* state_a,
                                const double* state_b) noexcept nogil:
        """log alpha + log Gamma(n_A) Gamma(n_B) / Gamma(n_A + n_B) + log m(A) +
        log m(B): the two clusters' side of a split's (or merge's) ratio."""
        cdef double n_a = state_a[STATE_COUNT], n_b = state_b[STATE_COUNT]
        return (log(self.alpha) + lgamma(n_a) + lgamma(n_b) - lgamma(n_a + n_b)
                + family_log_marginal(&self.f, state_a)
                + family_log_marginal(&self.f, state_b))

    cdef double _sams_pass(self, intp_t i, intp_t j, intp_t m, intp_t ci,
                           bint split) noexcept nogil:
        """The sequential allocation of the pair's other points ``members[:m]``
        into ``state_a`` (with i) and ``state_b`` (with j), drawn (a split) or
        forced to the current clusters (a merge; ``ci`` is i's); its log q."""
        cdef intp_t k, r
        cdef bint to_a
        cdef double la, lb, log_a, log_b, log_q = 0.0
        family_reset(&self.f, self.state_a)
        family_reset(&self.f, self.state_b)
        family_add(&self.f, self.state_a, i)
        family_add(&self.f, self.state_b, j)
        for r in range(m):
            k = self.members[r]
            la = self.state_a[self.f.log_weight] + family_log_kernel(&self.f, self.state_a, k)
            lb = self.state_b[self.f.log_weight] + family_log_kernel(&self.f, self.state_b, k)
            log_pair(la, lb, &log_a, &log_b)
            if split:
                to_a = log(uniform(self.rng)) < log_a
            else:
                to_a = self.labels[k] == ci
            log_q += log_a if to_a else log_b
            self.side[k] = to_a
            family_add(&self.f, self.state_a if to_a else self.state_b, k)
        return log_q

    cdef int _sams_merge(self, intp_t i, intp_t j, intp_t ci, intp_t cj,
                         intp_t m) except -1 nogil:
        """The merge of i's cluster ci and j's cj (their other points
        ``members[:m]``): the inverse of the split that the SAMS pass would
        propose, with ratio R q(ci, cj), R = m(M) / [alpha Gamma(n_i) Gamma(n_j) /
        Gamma(n) m(ci) m(cj)] and q(ci, cj) <= 1 the probability of that split.
        The uniform is drawn first: where log u >= log R the merge is rejected
        whatever q, without the pass (most merges a chain proposes end there).
        The pass draws nothing, so the chain's draws are those of a pass always
        run."""
        cdef intp_t k, r, c_big, c_small
        cdef double log_u = log(uniform(self.rng)), log_ratio
        cdef double* s_i = self._state(ci)
        cdef double* s_j = self._state(cj)
        self.n_merge += 1
        # the merged state M: from the two states' moments where the family reads
        # them off a state (O(d^3) for a full covariance, whatever the sizes)
        if s_i[STATE_COUNT] >= s_j[STATE_COUNT]:
            c_big, c_small = ci, cj
        else:
            c_big, c_small = cj, ci
        if family_merged_state(&self.f, self._state(c_big), self._state(c_small),
                               self.merge_moments, self.state_m) < 0:
            # the larger cluster's state plus the smaller's points
            memcpy(self.state_m, self._state(c_big), self.W * sizeof(double))
            family_add(&self.f, self.state_m, i if c_small == ci else j)
            for r in range(m):
                k = self.members[r]
                if self.labels[k] == c_small:
                    family_add(&self.f, self.state_m, k)
        log_ratio = (family_log_marginal(&self.f, self.state_m)
                     - self._pair_log_ratio(s_i, s_j))
        if log_u >= log_ratio:
            return 0
        if log_u >= log_ratio + self._sams_pass(i, j, m, ci, False):
            return 0
        self.n_merge_accepted += 1
        memcpy(self._state(ci), self.state_m, self.W * sizeof(double))
        self.dirty[ci] = 1
        self.labels[j] = ci
        for r in range(m):
            k = self.members[r]
            self.labels[k] = ci
        self._close_slot(cj)
        return 0

    cdef intp_t _uniform_order(self) noexcept nogil:
        """pi uniform on Pi(C) (eq. 3) into ``order``; C's segment ends into ``ends_old``.

        Returns K. ``ends_new`` is used as scratch for the order of the clusters.
        """
        cdef intp_t a, c, lo, n, pos = 0, K = self.slots.n_active
        cdef intp_t* clusters = self.ends_new
        self._group_members()
        for a in range(K):
            clusters[a] = self.slots.active[a]
        shuffle(clusters, K, self.rng)
        for a in range(K):
            c = clusters[a]
            lo = self.slots.member_start[c]
            n = self.slots.member_start[c + 1] - lo
            memcpy(self.order + pos, self.members + lo, n * sizeof(intp_t))
            shuffle(self.order + pos, n, self.rng)
            pos += n
            self.ends_old[a] = pos
        return K

    cdef intp_t _projection_order(self) noexcept nogil:
        """pi from a random projection (sec. 4.2) into ``order``; returns K.

        Clusters sorted by the family's ``cluster_key`` (NIW: u . m_n), points
        within a cluster by its ``point_key`` (u . x), for u a random direction (a
        standard normal vector: its direction is uniform, and the order does not
        depend on its length).
        """
        cdef intp_t i, j, c, K = 0
        cdef double* u = self.direction
        for j in range(self.f.key_dim):
            u[j] = random_standard_normal(self.rng)
        for i in range(self.N):
            c = self.labels[i]
            self.records[i].cluster_key = self.f.cluster_key(
                self.f.segments.context, self._state(c), u)
            self.records[i].cluster = c
            self.records[i].key = self.f.point_key(self.f.segments.context, i, u)
            self.records[i].point = i
        qsort(self.records, self.N, sizeof(ProjectionRecord), _compare_projections)
        for i in range(self.N):
            self.order[i] = self.records[i].point
            if i > 0 and self.records[i].cluster != self.records[i - 1].cluster:
                self.ends_old[K] = i
                K += 1
        self.ends_old[K] = self.N
        return K + 1

    cdef int _permutation_move(self) except -1 nogil:
        """One permutation-augmented move (module docstring)."""
        cdef bint burning = self.n_sweeps_done < self.burn_in, accept = True
        cdef intp_t m, k, K_old, K_new
        cdef double log_alpha = log(self.alpha), log_beta, log_ratio
        if burning:
            K_old = self._projection_order()
            for m in range(1, self.N + 1):
                self.log_size[m] = log_alpha + lgamma(<double> m)
            self.dp.beam_forward(&self.f.segments, self.order, self.N, self.log_size,
                                 self.beam_tolerance)
            self.permutation_beam_width = self.dp.mean_beam_width()
            K_new = self.dp.sample(self.rng, self.ends_new)
        else:
            K_old = self._uniform_order()
            self.n_perm += 1
            if self.permutation == PERMUTATION_EXACT:
                for m in range(1, self.N + 1):
                    self.log_size[m] = -log(<double> m)
                    self.log_A[m] = m * log_alpha - lgamma(m + 1.0)
                self.dp.exact_forward(&self.f.segments, self.order, self.N,
                                      self.log_size, self.log_A)
                K_new = self.dp.sample(self.rng, self.ends_new)
            else:
                if self.permutation_beta != self.permutation_beta:   # nan: fix it now
                    self.permutation_beta = exp(digamma(
                        (self.k_sum / self.k_count if self.k_count > 0 else K_old) + 1.0))
                log_beta = log(self.permutation_beta)
                for m in range(1, self.N + 1):
                    self.log_size[m] = log_alpha - log_beta - log(<double> m)
                self.dp.beam_forward(&self.f.segments, self.order, self.N,
                                     self.log_size, self.beam_tolerance)
                self.permutation_beam_width = self.dp.mean_beam_width()
                K_new = self.dp.sample(self.rng, self.ends_new)
                if self.dp.log_prob(self.ends_old, K_old) == -INFINITY:
                    self.n_perm_pruned += 1
                    accept = False
                else:
                    log_ratio = ((K_new - K_old) * log_beta
                                 - lgamma(K_new + 1.0) + lgamma(K_old + 1.0))
                    accept = log_ratio >= 0.0 or log(uniform(self.rng)) < log_ratio
            if accept:
                self.n_perm_accepted += 1
        if not accept:
            return 0
        if K_new == K_old:
            for k in range(K_new):
                if self.ends_new[k] != self.ends_old[k]:
                    break
            else:
                return 0   # the same clustering
        self._apply_segments(K_new)
        return 0

    cdef int _apply_segments(self, intp_t K) except -1 nogil:
        """The clustering of the segments ``ends_new[:K]`` of ``order`` becomes the state."""
        cdef intp_t k, r, c, prev = 0
        while self.slots.n_active > 0:
            self._close_slot(self.slots.active[self.slots.n_active - 1])
        for k in range(K):
            c = self._open_slot()
            for r in range(prev, self.ends_new[k]):
                self.labels[self.order[r]] = c
            prev = self.ends_new[k]
        self._rebuild_all()
        return 0

    cdef double _compute_log_joint(self) noexcept nogil:
        """log p(c, X | alpha) (+ log p(alpha) if alpha is sampled), constants included.

        The CRP prior alpha^K prod_k Gamma(n_k) Gamma(alpha) / Gamma(alpha + N) times
        the clusters' marginal likelihoods.
        """
        cdef intp_t a
        cdef double* s
        cdef double value = crp_log_normaliser(self.alpha, self.slots.n_active, self.N)
        for a in range(self.slots.n_active):
            s = self._state(self.slots.active[a])
            value += lgamma(s[STATE_COUNT]) + family_log_marginal(&self.f, s)
        if self.sample_alpha:
            value += gamma_log_density(self.alpha, self.alpha_shape, self.alpha_rate)
        return value

    cdef int _initialise(self, intp_t n_init) except -1 nogil:
        """A uniformly random clustering into (at most) n_init clusters."""
        cdef intp_t i, k
        cdef intp_t* map_ = self.members  # scratch: cluster index -> slot
        for k in range(n_init):
            map_[k] = -1
        for i in range(self.N):
            k = uniform_index(self.rng, n_init)
            if map_[k] < 0:
                map_[k] = self._open_slot()
            self.labels[i] = map_[k]
        self._rebuild_all()
        self.log_joint = self._compute_log_joint()
        return 0

    cdef int _initialise_sequential(self) except -1 nogil:
        """Sequential prediction (Liang et al. 2007, sec. 5.1).

        The points are added one at a time in a uniformly random order, each
        drawn into an existing cluster or a new one from its collapsed
        conditional given the points added before it: the Chinese restaurant
        process run once over the data, at the cost of one Gibbs scan. Unlike
        a random start, whose every cluster is a blend of the true ones, it
        starts from clusters that each hold similar points, which single-site
        Gibbs cannot reach from a blend when d is large (the blends are a
        local mode it does not leave).
        """
        cdef intp_t r
        cdef double log_alpha = log(self.alpha)
        for r in range(self.N):
            self.order[r] = r
        shuffle(self.order, self.N, self.rng)
        for r in range(self.N):
            self._seat(self.order[r], log_alpha)
        self._rebuild_all()
        self.log_joint = self._compute_log_joint()
        return 0

    cdef int _sweep(self) except -1 nogil:
        cdef intp_t t
        for t in range(self.n_split_merge):
            self._split_merge()
        if self.gibbs:
            self._gibbs_scan()
            self._rebuild(self._rebuild_every)
        if self.permutation != PERMUTATION_NONE:
            self._permutation_move()
        if self.sample_alpha:   # Escobar & West (1995), sec. 6
            self.alpha = escobar_west(self.rng, self.alpha, self.slots.n_active, self.N,
                                      self.alpha_shape, self.alpha_rate)
        # beta of the "beta" variant: the mean K over the second half of burn-in
        if self.n_sweeps_done < self.burn_in and 2 * self.n_sweeps_done >= self.burn_in - 1:
            self.k_sum += self.slots.n_active
            self.k_count += 1
        self.n_sweeps_done += 1
        return 0

    # -- Python interface ------------------------------------------------------------

    def sweep(self, intp_t n_sweeps=1):
        """Run ``n_sweeps`` full sweeps with the GIL released."""
        cdef intp_t s
        with self.bit_generator.lock, nogil:
            for s in range(n_sweeps):
                self._sweep()
            self.log_joint = self._compute_log_joint()
        self._count_split_merge()

    def _count_split_merge(self):
        self.split_merge_counts = {
            "split_proposed": self.n_split, "split_accepted": self.n_split_accepted,
            "merge_proposed": self.n_merge, "merge_accepted": self.n_merge_accepted,
        }
        # after burn-in only: proposed, accepted, rejected because q(C) = 0 (pruned)
        self.permutation_counts = {
            "proposed": self.n_perm, "accepted": self.n_perm_accepted,
            "pruned": self.n_perm_pruned,
        }

    @property
    def n_clusters(self):
        return self.slots.n_active

    @property
    def largest_cluster_size(self):
        """The size of the largest cluster, O(K): Liang et al.'s second mixing
        statistic (their Fig. 3(l)), traced by the estimators."""
        cdef intp_t a
        cdef double largest = 0.0
        for a in range(self.slots.n_active):
            largest = max(largest, self._state(self.slots.active[a])[STATE_COUNT])
        return <intp_t> largest

    @property
    def in_burn_in(self):
        """True while the next sweep is a burn-in sweep (random-projection orders)."""
        return self.n_sweeps_done < self.burn_in

    def permutation_conditional(self, order, clusterings, variant="exact", double beta=1.0,
                                double epsilon=0.0):
        """Run the permutation DP of this chain's model on ``order`` (for tests).

        ``variant="exact"``: the pass over (r, K) with A(K) = alpha^K / K!,
        B(c) = m(c) / |c|; ``"beta"``: the beam pass with B'(c) = alpha m(c) /
        (|c| beta). Returns the log normaliser, the log-probability of each
        clustering of ``clusterings`` (given by its segment ends along ``order``)
        and the mean beam width. The state is not changed.
        """
        cdef intp_t[::1] order_ = np.ascontiguousarray(order, dtype=np.intp)
        cdef intp_t[::1] ends
        cdef intp_t m
        if order_.shape[0] != self.N or sorted(np.asarray(order_).tolist()) != list(range(self.N)):
            raise ValueError("order must be a permutation of the points")
        log_size = np.empty(self.N + 1)
        log_A = np.empty(self.N + 1)
        cdef double[::1] ls = log_size, la = log_A
        for m in range(1, self.N + 1):
            ls[m] = -log(<double> m)
            la[m] = m * log(self.alpha) - lgamma(m + 1.0)
            if variant == "beta":
                ls[m] += log(self.alpha) - log(beta)
        if variant == "exact":
            self.dp.exact_forward(&self.f.segments, &order_[0], self.N, &ls[0], &la[0])
        elif variant == "beta":
            self.dp.beam_forward(&self.f.segments, &order_[0], self.N, &ls[0], epsilon)
        else:
            raise ValueError(f"unknown variant {variant!r}")
        log_probs = np.empty(len(clusterings))
        for k, c in enumerate(clusterings):
            ends = np.ascontiguousarray(c, dtype=np.intp)
            log_probs[k] = self.dp.log_prob(&ends[0], ends.shape[0])
        return self.dp.log_norm, log_probs, self.dp.mean_beam_width()

    def snapshot(self):
        """The current state, clusters numbered by first appearance in the data.

        Returns ``(labels, *family.describe(states), alpha, sizes)``.

        Returns
        -------
        labels : ndarray of shape (N,), dtype int32
        *parameters
            The family's ``describe`` of the (K, width) states in that numbering.
            NIW: ``means`` (K, d), the posterior means m_n of the cluster means;
            ``covariances`` (K, d, d) or (K, d), Psi_n / (nu_n - d - 1) when
            nu_n > d + 1, else Psi_n / nu_n, the inverse of the posterior mean of
            the precision (``diag``: per dimension, with d = 1);
            ``predictive_factors`` (K, d, d) or (K, d), the lower Cholesky factor
            of each cluster's Student-t predictive shape matrix
            Psi_n (kappa_n + 1) / (kappa_n df_n) (``diag``: the per-dimension
            scales); ``predictive_dfs`` (K,), nu_n - d + 1 (``diag``: nu_n).
        alpha : float
            The concentration of this state.
        sizes : ndarray of shape (K,)
        """
        labels, order = number_by_first_appearance(
            self.labels, self.slots.capacity)
        states = np.asarray(<double[:self.slots.capacity * self.W]> self.states).reshape(
            self.slots.capacity, self.W)[order]
        return (labels, *self.family.describe(states), self.alpha,
                states[:, STATE_COUNT].astype(np.intp))

    def assignment_log_weights(self, intp_t i):
        """Unnormalised log-probabilities of point i's next Gibbs assignment (tests).

        ``weights[k]`` is the weight of the cluster numbered ``k`` in
        :meth:`snapshot` with point i removed (-inf for point i's own cluster if i
        is alone in it), ``new`` that of a new cluster. The state is not changed.
        """
        cdef intp_t c_old = self.labels[i], k
        labels = self.snapshot()[0]
        slots = {}
        for r in range(self.N):
            slots.setdefault(labels[r], self.labels[r])
        state = np.empty(self.W, dtype=np.float64)
        cdef double[::1] view = state
        weights = np.full(len(slots), -np.inf)
        for k, c in slots.items():
            memcpy(&view[0], self._state(c), self.W * sizeof(double))
            if c == c_old:
                if state[STATE_COUNT] <= 1.0:
                    continue
                if family_remove(&self.f, &view[0], i) < 0:
                    raise FloatingPointError("downdate failed")
            weights[k] = state[self.f.log_weight] + family_log_kernel(&self.f, &view[0], i)
        return weights, log(self.alpha) + self.log_prior_predictive[i]

    def cluster_states(self):
        """(K, width) copy of the active clusters' states, in slot order (for tests)."""
        states = np.asarray(<double[:self.slots.capacity * self.W]> self.states).reshape(
            self.slots.capacity, self.W)
        return states[[self.slots.active[a] for a in range(self.slots.n_active)]].copy()


