# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The parallel sub-cluster sampler: one chain of a conjugate DP mixture on every core.

After Chang & Fisher (2013), "Parallel sampling of DP mixture models using
sub-cluster splits", for any family of the core that draws explicit parameters
(``_family.pxd``). A sweep:

1. draws, per cluster, its parameters theta_k | its points (the family's
   ``draw_params``) and an unnormalised weight pi_k ~ Gamma(n_k, 1);
2. draws every row's label given them, in parallel over the rows (OpenMP), by the
   exact anchored restricted step of ``_restricted.pxd``: conditionally on the
   parameters the rows are independent, so a row costs K likelihoods and no
   communication;
3. rebuilds the clusters' states (sufficient statistics) from the labels, the
   clusters shared among the threads;
4. runs ``n_split_merge`` split or merge proposals, each from two sub-clusters
   fitted to the points concerned (below), an exact Metropolis-Hastings step;
5. runs 10 x ``n_split_merge`` singleton proposals (below), which absorb the
   singletons that a sequential start or a split leaves;
6. draws alpha | K by Escobar & West's step when alpha has a prior.

Steps 1 and 3 are where a sweep over sharded rows would send the parameters out
and bring the statistics back. Every random number of a row comes from Philox
counted by (row, sweep, purpose), so the labels do not depend on the number of
threads. The split and singleton moves are the only source of new clusters.

Sub-clusters and exactness
--------------------------
Chang & Fisher keep two sub-clusters per cluster in the state, update them with
the labels, and propose to split a cluster along them. Their split's Hastings
ratio leaves out the probability of the sub-cluster state itself, which depends
on the clusters' data through a normaliser that cannot be computed (a sum over
the 2^n sub-labellings), and a new cluster's sub-clusters are started afresh: the
chain's stationary law is then not known to be the DP posterior. We fit the two
sub-clusters afresh for each proposal instead, as Jain & Neal (2004)'s launch
state, which makes the move exact and keeps what the sub-clusters are for:

* a split-type proposal (probability 1/2) picks a cluster c uniformly among the K
  and an ordered pair (i, j) of its points; a merge-type proposal picks an ordered
  pair of clusters (A, B) and i in A, j in B uniformly. S is the union of the
  clusters concerned;
* the launch: ``n_launch`` restricted scans each draw the two sides'
  parameters theta_A, theta_B given their points (i and j alone in the first
  scan; a random sample of about 1,000 of them when S is larger, each row's
  own draw deciding) and re-allocate every point of S \\ {i, j} independently
  (in parallel) with probability proportional to n_A f(x | theta_A) or
  n_B f(x | theta_B): a stochastic 2-means seeded at i and j. The launch
  depends only on (i, j, S) and fresh random numbers, so it is the same in both
  directions of the move;
* the last scan's allocation is the proposal: a split draws it, with probability
  q(A, B) = the product of the chosen sides' probabilities; a merge computes the
  q(A, B) of the current pair of clusters;
* the Metropolis-Hastings ratio of a split of c (K clusters) into A and B is

      alpha Gamma(n_A) Gamma(n_B) / Gamma(n_c) * m(A) m(B) / m(c)
      * [1 / ((K + 1) K n_A n_B)] / [1 / (K n_c (n_c - 1)) q(A, B)],

  with m the cluster's marginal likelihood (parameters integrated out), and a
  merge's is its inverse. The target is p(c | X, alpha); the explicit parameters
  of step 1 are redrawn from their conditional at the start of every sweep.

Singletons
----------
A cluster never empties in the label step (its anchor stays), so a singleton
leaves only by a merge, and a merge of {a} into B is accepted only if the launch
happens to put a alone on its side, which it rarely does when a lies near B (the
launch from a and a point of B splits B). The singleton move is a cheap exact
Metropolis-Hastings pair (each proposal O(K) collapsed predictives):

* absorb (probability 1/2): pick a cluster uniformly among the K; if it is a
  singleton {a} (and K > 1), propose a into cluster k drawn with probability
  n_k p(x_a | k) / Z, Z = sum over the other clusters; ratio
  K Z / (alpha p(x_a) (K - 1) (n_k + 1)), p(x_a) the prior predictive;
* split off (probability 1/2): pick a cluster c uniformly and a point a of it
  uniformly (n_c >= 2), and propose {a} as a new cluster; the ratio is the
  inverse of the absorption back, alpha p(x_a) K n_c / ((K + 1) Z'), with Z'
  computed in the proposed state (c without a).
"""

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, exp, lgamma, log
from libc.stdint cimport uint64_t
from libc.stdlib cimport free
from libc.string cimport memcpy

from ._collapsed_chain cimport CollapsedChain
from ._dp_prior cimport escobar_west
from ._family cimport (
    STATE_COUNT, ConjugateFamily, Family, family_add, family_log_kernel,
    family_log_likelihood_t, family_log_marginal, family_rebuild, family_remove,
    family_reset,
)
from ._openmp cimport max_threads
from ._permutation cimport intp_t
from ._restricted cimport (
    PURPOSE_LABEL, PURPOSE_LAUNCH, find_anchors, log_share, precedes, row_draws,
)
from ._rng cimport (
    draw_from_logs, draw_index, log_gamma_variate, uniform, uniform_index,
)
from ._slots cimport grow_array

# Rows of S below which a launch scan runs on one thread (OpenMP's start-up
# costs more than the work), and the fewest rows a thread of the label step
# gets; the results are the same either way.
cdef intp_t PARALLEL_LAUNCH_ROWS = 2048
cdef intp_t MIN_ROWS_PER_THREAD = 128
# Singleton proposals per split-merge proposal: each costs K collapsed
# predictives, about what a launch spends on K rows.
cdef intp_t SINGLETON_MOVES = 10

# The bits of a launch row's allocation (``proposed``): its side (1 for i's), not
# yet allocated (the first scan), and in the sample of the next scan.
cdef enum:
    SIDE = 1
    UNALLOCATED = 2
    SAMPLED = 4


cdef class SubclusterChain(CollapsedChain):
    """State and sweeps of one sub-cluster chain (see the module docstring).

    Parameters
    ----------
    family : Family
        The cluster family bound to the data; it must draw explicit parameters.
    alpha : float
        Initial (or fixed) DP concentration.
    n_split_merge : int
        Split or merge proposals per sweep (>= 1: they are the only source of new
        clusters).
    alpha_prior : tuple (shape, rate) or None
        Gamma prior of alpha, resampled each sweep; None keeps alpha fixed.
    init_clusters : int
        Number of clusters of the random initial clustering.
    bit_generator : numpy.random.BitGenerator
        This chain's own random stream; the rows' Philox key is drawn from it.
    sequential_init : bool, default=False
        Start from sequential prediction instead of a random clustering.
    n_launch : int, default=2
        Restricted scans of each proposal's launch.
    launch_sample_rows : float, default=1024
        About how many rows of S a launch scan draws the sides' parameters from
        (all of them when S is smaller; tests set it low to exercise the sample).
    """

    cdef public intp_t thread_cap    # at most this many threads (0: no cap)
    cdef uint64_t key[2]
    cdef intp_t P                    # doubles per parameter block
    cdef intp_t n_proposals, n_launch
    cdef double launch_sample_rows
    cdef double* params              # (capacity, P)
    cdef double* log_pi              # (capacity,) unnormalised log weights
    cdef double* anchor_priority     # (capacity,)
    cdef intp_t* anchor_row          # (capacity,)
    cdef intp_t* new_labels          # (N,)
    cdef double* scratch             # per thread: (capacity + 1) weights, 4 draws, work
    cdef intp_t scratch_size
    # launch
    cdef intp_t* launch_rows         # (N,) S less i and j
    cdef double* launch_log_q        # (N,) log-probability of each row's final side
    cdef double* side_params         # (2, P) theta_A, theta_B
    cdef intp_t* side_members        # (N,) the members of one side, for rebuilds
    cdef char* proposed              # (N,) the launch's allocation, 1 for i's side
    # parallel rebuilds: one family copy (own scratch) per thread
    cdef list thread_families
    cdef ConjugateFamily* thread_tables
    cdef intp_t n_tables
    cdef int* rebuild_status          # (capacity,)

    def __init__(self, Family family, double alpha, intp_t n_split_merge, alpha_prior,
                 intp_t init_clusters, bit_generator, bint sequential_init=False,
                 intp_t n_launch=2, double launch_sample_rows=1024.0):
        if family.c.param_width <= 0:
            raise ValueError(
                f"{type(family).__name__} has no explicit parameters: the sub-cluster "
                "sampler cannot run on it.")
        if n_split_merge < 1:
            raise ValueError(
                "the sub-cluster sampler needs n_split_merge >= 1: its split moves are "
                f"its only source of new clusters (got {n_split_merge}).")
        if n_launch < 1:
            raise ValueError(f"n_launch must be >= 1, got {n_launch}")
        if not launch_sample_rows >= 1.0:
            raise ValueError(f"launch_sample_rows must be >= 1, got {launch_sample_rows}")
        self.launch_sample_rows = launch_sample_rows
        self.P = family.c.param_width
        super().__init__(family, alpha, False, 0, alpha_prior, init_clusters,
                         bit_generator, None, 1e-32, 0, sequential_init)
        self.n_proposals = n_split_merge
        self.n_launch = n_launch
        keys = np.random.Generator(self.bit_generator).integers(
            0, 2**64, size=2, dtype=np.uint64, endpoint=False)
        self.key[0] = keys[0]
        self.key[1] = keys[1]
        n = max(self.N, 1)
        self.new_labels = <intp_t*> grow_array(NULL, n * sizeof(intp_t))
        self.launch_rows = <intp_t*> grow_array(NULL, n * sizeof(intp_t))
        self.launch_log_q = <double*> grow_array(NULL, n * sizeof(double))
        self.side_members = <intp_t*> grow_array(NULL, n * sizeof(intp_t))
        self.proposed = <char*> grow_array(NULL, n * sizeof(char))
        self.side_params = <double*> grow_array(NULL, 2 * self.P * sizeof(double))
        # a family's callbacks write to its context's scratch: a thread that
        # rebuilds states needs a copy of its own (the data are shared)
        self.thread_families = [self.family.copy() for _ in range(max(1, max_threads()))]
        self.n_tables = len(self.thread_families)
        self.thread_tables = <ConjugateFamily*> grow_array(
            NULL, self.n_tables * sizeof(ConjugateFamily))
        for t, copy in enumerate(self.thread_families):
            self.thread_tables[t] = (<Family> copy).c

    def __dealloc__(self):
        free(self.params); free(self.log_pi)
        free(self.anchor_priority); free(self.anchor_row)
        free(self.new_labels); free(self.scratch)
        free(self.launch_rows); free(self.launch_log_q)
        free(self.side_params); free(self.side_members); free(self.proposed)
        free(self.thread_tables); free(self.rebuild_status)

    cdef int _grow(self, intp_t capacity) except -1 nogil:
        """The base's slot arrays, and the per-slot parameters and anchors."""
        if capacity <= self.slots.capacity:
            return 0
        self.params = <double*> grow_array(self.params, capacity * self.P * sizeof(double))
        self.log_pi = <double*> grow_array(self.log_pi, capacity * sizeof(double))
        self.anchor_priority = <double*> grow_array(
            self.anchor_priority, capacity * sizeof(double))
        self.anchor_row = <intp_t*> grow_array(self.anchor_row, capacity * sizeof(intp_t))
        self.rebuild_status = <int*> grow_array(self.rebuild_status, capacity * sizeof(int))
        CollapsedChain._grow(self, capacity)
        return 0

    cdef intp_t _n_threads(self, intp_t n_rows) noexcept nogil:
        """Threads for a loop over ``n_rows`` rows: OpenMP's limit (threadpoolctl,
        OMP_NUM_THREADS), the engine's cap when chains run side by side, and no
        more than the rows."""
        cdef intp_t n = max_threads()
        if self.thread_cap > 0 and self.thread_cap < n:
            n = self.thread_cap
        return max(1, min(n, n_rows // MIN_ROWS_PER_THREAD))

    cdef double* _thread_scratch(self, intp_t n_threads) except NULL nogil:
        """Per-thread scratch for the parallel loops, grown to the slots and threads."""
        cdef intp_t size = n_threads * self._scratch_stride()
        if size > self.scratch_size:
            self.scratch = <double*> grow_array(self.scratch, size * sizeof(double))
            self.scratch_size = size
        return self.scratch

    cdef inline intp_t _scratch_stride(self) noexcept nogil:
        # weights (capacity + 1), four draws, the family's work; rounded up to
        # 8 doubles (64 bytes) so that threads do not share cache lines
        cdef intp_t size = self.slots.capacity + 1 + 4 + self.f.work_width
        return (size + 7) // 8 * 8

    cdef int _rebuild_all(self) except -1 nogil:
        """Every active cluster's state afresh from its members, the clusters
        shared among the threads (each cluster's state is one thread's work, so
        the states do not depend on the number of threads)."""
        cdef intp_t a, c, tid, n_active = self.slots.n_active, W = self.W
        cdef intp_t n_threads = min(self._n_threads(self.N), self.n_tables, n_active)
        cdef double* states = self.states
        cdef const intp_t* members = self.members
        cdef const intp_t* start = self.slots.member_start
        cdef const intp_t* active = self.slots.active
        cdef ConjugateFamily* tables = self.thread_tables
        cdef int* status = self.rebuild_status
        if self.n_tables == 0:   # the base's start, before __init__ made the copies
            return CollapsedChain._rebuild_all(self)
        self._group_members()
        for a in prange(n_active, schedule="dynamic", num_threads=max(1, n_threads)):
            tid = threadid()
            c = active[a]
            status[a] = family_rebuild(&tables[tid], states + c * W, members + start[c],
                                       start[c + 1] - start[c])
        for a in range(n_active):
            if status[a] < 0:
                self._fail()
        return 0

    # -- the sweep -----------------------------------------------------------------

    cdef int _draw_parameters(self) except -1 nogil:
        """theta_k | points and pi_k ~ Gamma(n_k, 1), for every cluster (step 1)."""
        cdef intp_t a, c
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            if self.f.draw_params(self.f.segments.context, self._state(c), self.rng,
                                  self.params + c * self.P) < 0:
                self._fail()
            self.log_pi[c] = log_gamma_variate(self.rng, self._state(c)[STATE_COUNT])
        return 0

    cdef int _label_step(self, uint64_t sweep) except -1 nogil:
        """Every row's label given the parameters, in parallel (step 2)."""
        cdef intp_t i, a, c, c_old, tid
        cdef intp_t N = self.N, P = self.P, n_active = self.slots.n_active
        cdef intp_t n_threads = self._n_threads(N)
        cdef intp_t stride = self._scratch_stride(), capacity = self.slots.capacity
        cdef double* scratch = self._thread_scratch(n_threads)
        cdef double* weights
        cdef double* draws
        cdef const intp_t* active = self.slots.active
        cdef intp_t* labels = &self.labels[0]
        cdef intp_t* new_labels = self.new_labels
        cdef const double* params = self.params
        cdef const double* log_pi = self.log_pi
        cdef const double* anchor_priority = self.anchor_priority
        cdef const intp_t* anchor_row = self.anchor_row
        cdef const uint64_t* key = self.key
        cdef family_log_likelihood_t log_likelihood = self.f.log_likelihood
        cdef void* context = self.f.segments.context
        find_anchors(key, sweep, labels, N, capacity,
                     self.anchor_priority, self.anchor_row)
        for i in prange(N, schedule="static", num_threads=n_threads):
            tid = threadid()
            weights = scratch + tid * stride
            draws = weights + capacity + 1
            c_old = labels[i]
            if anchor_row[c_old] == i:
                new_labels[i] = c_old
                continue
            row_draws(key, i, sweep, PURPOSE_LABEL, draws)
            for a in range(n_active):
                c = active[a]
                if precedes(anchor_priority[c], anchor_row[c], draws[0], i):
                    weights[a] = log_pi[c] + log_likelihood(
                        context, params + c * P, i, draws + 4)
                else:
                    weights[a] = -INFINITY
            new_labels[i] = active[draw_index(weights, n_active, draws[1])]
        memcpy(labels, new_labels, N * sizeof(intp_t))
        return 0

    cdef int _sweep(self) except -1 nogil:
        cdef intp_t t
        cdef uint64_t sweep = <uint64_t> self.n_sweeps_done
        self._draw_parameters()
        self._label_step(sweep)
        self._rebuild_all()            # also groups the members by slot
        for t in range(self.n_proposals):
            if self._propose(sweep, t):
                self._group_members()  # an accepted move changed the labels
        # a fixed number: a number that depends on the state (K, say) would make
        # the sweep a state-dependent power of an invariant kernel, which is not
        # invariant itself
        for t in range(SINGLETON_MOVES * self.n_proposals):
            if self._singleton_move():
                self._group_members()
        if self.sample_alpha:
            self.alpha = escobar_west(self.rng, self.alpha, self.slots.n_active, self.N,
                                      self.alpha_shape, self.alpha_rate)
        self.n_sweeps_done += 1
        return 0

    # -- split and merge ---------------------------------------------------------------

    cdef inline intp_t _size(self, intp_t c) noexcept nogil:
        return self.slots.member_start[c + 1] - self.slots.member_start[c]

    cdef inline intp_t _member(self, intp_t c, intp_t r) noexcept nogil:
        return self.members[self.slots.member_start[c] + r]

    cdef bint _propose(self, uint64_t sweep, intp_t t) except -1 nogil:
        """One split or merge proposal (module docstring); True if accepted.

        ``members`` must hold the points of each slot (``_group_members``).
        """
        cdef intp_t K = self.slots.n_active, c, c_a, c_b, i, j, r, k, m = 0, n_c
        cdef intp_t n_a, n_b, c_new
        cdef bint split = uniform(self.rng) < 0.5
        cdef double log_q, log_ratio, log_select
        if split:
            c = self.slots.active[uniform_index(self.rng, K)]
            n_c = self._size(c)
            if n_c < 2:
                return False
            r = uniform_index(self.rng, n_c)
            k = uniform_index(self.rng, n_c - 1)
            i = self._member(c, r)
            j = self._member(c, k + (k >= r))
            c_a = c_b = c
        else:
            if K < 2:
                return False
            r = uniform_index(self.rng, K)
            k = uniform_index(self.rng, K - 1)
            c_a = self.slots.active[r]
            c_b = self.slots.active[k + (k >= r)]
            i = self._member(c_a, uniform_index(self.rng, self._size(c_a)))
            j = self._member(c_b, uniform_index(self.rng, self._size(c_b)))
            n_c = self._size(c_a) + self._size(c_b)
        # S less i and j; side[r] = 1 for i's side (the current clusters, for a merge)
        for k in range(self.slots.member_start[c_a], self.slots.member_start[c_a + 1]):
            r = self.members[k]
            if r != i and r != j:
                self.launch_rows[m] = r
                self.side[r] = 1
                m += 1
        if not split:
            for k in range(self.slots.member_start[c_b], self.slots.member_start[c_b + 1]):
                r = self.members[k]
                if r != j:
                    self.launch_rows[m] = r
                    self.side[r] = 0
                    m += 1
        log_q = self._launch(sweep, t, i, j, m, split)

        # the sides' states: the proposed split's, or the current clusters'
        if split:
            n_a = self._side_state(self.state_a, i, m, self.side, 1, SIDE)
            n_b = self._side_state(self.state_b, j, m, self.side, 0, SIDE)
        else:
            n_a = self._size(c_a)
            n_b = self._size(c_b)
            memcpy(self.state_a, self._state(c_a), self.W * sizeof(double))
            memcpy(self.state_b, self._state(c_b), self.W * sizeof(double))
        log_ratio = (log(self.alpha) + lgamma(<double> n_a) + lgamma(<double> n_b)
                     - lgamma(<double> n_c)
                     + family_log_marginal(&self.f, self.state_a)
                     + family_log_marginal(&self.f, self.state_b))
        if split:
            self.n_split += 1
            # select the merge back / select this split: K -> K + 1 clusters
            log_select = (-log(<double> (K + 1) * K) - log(<double> n_a * n_b)
                          + log(<double> K) + log(<double> n_c * (n_c - 1)))
            log_ratio += (log_select - log_q
                          - family_log_marginal(&self.f, self._state(c_a)))
            if log(uniform(self.rng)) >= log_ratio:
                return False
            self.n_split_accepted += 1
            c_new = self._open_slot()
            memcpy(self._state(c_a), self.state_a, self.W * sizeof(double))
            memcpy(self._state(c_new), self.state_b, self.W * sizeof(double))
            self.labels[j] = c_new
            for k in range(m):
                r = self.launch_rows[k]
                if not self.side[r]:
                    self.labels[r] = c_new
            return True
        self.n_merge += 1
        # the merged cluster's state, from S
        self.side_members[0] = i
        self.side_members[1] = j
        memcpy(self.side_members + 2, self.launch_rows, m * sizeof(intp_t))
        if family_rebuild(&self.f, self.state_m, self.side_members, m + 2) < 0:
            self._fail()
        # select the split back (K - 1 clusters) / select this merge (K clusters)
        log_select = (-log(<double> (K - 1)) - log(<double> n_c * (n_c - 1))
                      + log(<double> K * (K - 1)) + log(<double> n_a * n_b))
        log_ratio = family_log_marginal(&self.f, self.state_m) - log_ratio + log_q + log_select
        if log(uniform(self.rng)) >= log_ratio:
            return False
        self.n_merge_accepted += 1
        memcpy(self._state(c_a), self.state_m, self.W * sizeof(double))
        self.labels[j] = c_a
        for k in range(m):
            self.labels[self.launch_rows[k]] = c_a
        self._close_slot(c_b)
        return True

    cdef double _absorb_weights(self, intp_t a, intp_t skip, const double* replaced,
                                intp_t replaced_slot) noexcept nogil:
        """log n_k + log p(x_a | k) of every active cluster but ``skip`` into
        ``log_prob`` (slot ``replaced_slot`` read from ``replaced``); returns
        their log-sum-exp."""
        cdef intp_t b, k, n_active = self.slots.n_active
        cdef const double* state
        cdef double high = -INFINITY, total = 0.0
        for b in range(n_active):
            k = self.slots.active[b]
            if k == skip:
                self.log_prob[b] = -INFINITY
                continue
            state = replaced if k == replaced_slot else self._state(k)
            self.log_prob[b] = state[self.f.log_weight] + family_log_kernel(&self.f, state, a)
            if self.log_prob[b] > high:
                high = self.log_prob[b]
        for b in range(n_active):
            if self.log_prob[b] > -INFINITY:
                total += exp(self.log_prob[b] - high)
        return high + log(total)

    cdef bint _singleton_move(self) except -1 nogil:
        """One absorb or split-off proposal (module docstring); True if accepted.

        ``members`` must hold the points of each slot.
        """
        cdef intp_t K = self.slots.n_active, c, k, a, b, n_c
        cdef double log_z, log_ratio
        cdef bint absorb = uniform(self.rng) < 0.5
        c = self.slots.active[uniform_index(self.rng, K)]
        n_c = self._size(c)
        if absorb:
            if n_c != 1 or K < 2:
                return False
            a = self._member(c, 0)
            log_z = self._absorb_weights(a, c, NULL, -1)
            b = draw_from_logs(self.log_prob, K, self.rng)   # never c: its weight is 0
            k = self.slots.active[b]
            log_ratio = (log(<double> K) + log_z - log(self.alpha)
                         - self.log_prior_predictive[a] - log(<double> (K - 1))
                         - log(self._state(k)[STATE_COUNT] + 1.0))
            if log(uniform(self.rng)) >= log_ratio:
                return False
            family_add(&self.f, self._state(k), a)
            self.labels[a] = k
            self._close_slot(c)
            return True
        if n_c < 2:
            return False
        a = self._member(c, uniform_index(self.rng, n_c))
        # c without a, in scratch: a removal, or (if it fails numerically) a
        # rebuild from c's other members
        memcpy(self.state_m, self._state(c), self.W * sizeof(double))
        if family_remove(&self.f, self.state_m, a) < 0:
            for b in range(n_c):
                self.side_members[b] = self._member(c, b)
                if self.side_members[b] == a:
                    self.side_members[b] = self._member(c, n_c - 1)
            if family_rebuild(&self.f, self.state_m, self.side_members, n_c - 1) < 0:
                self._fail()
        log_z = self._absorb_weights(a, -1, self.state_m, c)
        log_ratio = (log(self.alpha) + self.log_prior_predictive[a] - log_z
                     - log(<double> (K + 1)) + log(<double> K) + log(<double> n_c))
        if log(uniform(self.rng)) >= log_ratio:
            return False
        memcpy(self._state(c), self.state_m, self.W * sizeof(double))
        k = self._open_slot()
        family_reset(&self.f, self._state(k))
        family_add(&self.f, self._state(k), a)
        self.labels[a] = k
        return True

    cdef intp_t _side_state(self, double* state, intp_t anchor, intp_t m,
                            const char* sides, char value, char mask) except -1 nogil:
        """``state`` <- the statistics of ``anchor`` and the launch rows r with
        ``sides[r] & mask == value``; returns their number."""
        cdef intp_t k, r, n = 1
        self.side_members[0] = anchor
        for k in range(m):
            r = self.launch_rows[k]
            if sides[r] & mask == value:
                self.side_members[n] = r
                n += 1
        if family_rebuild(&self.f, state, self.side_members, n) < 0:
            self._fail()
        return n

    cdef double _launch(self, uint64_t sweep, intp_t t, intp_t i, intp_t j, intp_t m,
                        bint split) except? -1.0 nogil:
        """Fit two sub-clusters to S from (i, j); return log q of the final allocation.

        On entry ``side`` holds the current clusters' sides (1 for i's; a merge
        reads them), and on exit the proposed allocation (a split) or still the
        current one (a merge), whose log-probability under the last scan is
        returned. Everything random here is a function of (i, j, S) and fresh
        draws keyed by the rows, the same for a split and a merge.

        A scan's sides' parameters are drawn given a random sample of about
        ``launch_sample_rows`` of their rows (each row's own Philox draw decides), so
        that a launch over a large S costs its parallel allocations, not
        sequential rebuilds; only the last scan's allocation is proposed, and
        it covers every row.
        """
        cdef intp_t k, r, s, tid, P = self.P
        cdef intp_t n_threads = self._n_threads(m) if m >= PARALLEL_LAUNCH_ROWS else 1
        cdef intp_t stride = self._scratch_stride()
        cdef double* scratch = self._thread_scratch(n_threads)
        cdef double* draws
        cdef double la, lb, log_a, log_b, log_n_a, log_n_b, log_q = 0.0
        cdef double rate = min(1.0, self.launch_sample_rows / (m + 1.0))
        cdef const char* side = self.side
        cdef char* proposed = self.proposed
        cdef const intp_t* rows = self.launch_rows
        cdef double* log_q_rows = self.launch_log_q
        cdef const double* theta_a = self.side_params
        cdef const double* theta_b = self.side_params + P
        cdef const uint64_t* key = self.key
        cdef family_log_likelihood_t log_likelihood = self.f.log_likelihood
        cdef void* context = self.f.segments.context
        cdef uint64_t purpose = PURPOSE_LAUNCH + <uint64_t> t * (self.n_launch + 1)
        cdef bint evaluate
        # the first scan's sides are i and j alone
        for k in range(m):
            proposed[rows[k]] = UNALLOCATED
        for s in range(1, self.n_launch + 1):
            # the sides' parameters given the sampled rows of the allocation so far
            log_n_a = log(<double> self._side_state(
                self.state_a, i, m, proposed, SAMPLED | 1, SAMPLED | SIDE))
            log_n_b = log(<double> self._side_state(
                self.state_b, j, m, proposed, SAMPLED, SAMPLED | SIDE))
            if (self.f.draw_params(context, self.state_a, self.rng, self.side_params) < 0
                    or self.f.draw_params(context, self.state_b, self.rng,
                                          self.side_params + P) < 0):
                self._fail()
            # the last scan of a merge evaluates the current sides instead of drawing
            evaluate = s == self.n_launch and not split
            for k in prange(m, schedule="static", num_threads=n_threads):
                tid = threadid()
                draws = scratch + tid * stride
                r = rows[k]
                row_draws(key, r, sweep, purpose + s, draws)
                la = log_n_a + log_likelihood(context, theta_a, r, draws + 4)
                lb = log_n_b + log_likelihood(context, theta_b, r, draws + 4)
                log_a = log_share(la, lb)
                log_b = log_share(lb, la)
                if not evaluate:
                    proposed[r] = (log(draws[0]) < log_a) | (SAMPLED if draws[1] < rate else 0)
                if (side[r] if evaluate else proposed[r] & SIDE):
                    log_q_rows[k] = log_a
                else:
                    log_q_rows[k] = log_b
        for k in range(m):
            log_q += log_q_rows[k]
            if split:
                self.side[rows[k]] = proposed[rows[k]] & SIDE
        return log_q

    # -- Python interface ------------------------------------------------------------

    @property
    def in_burn_in(self):
        return False

    @property
    def threads(self):
        """The number of threads the next sweep's label step may use."""
        return self._n_threads(self.N)


def openmp_threads():
    """OpenMP's current thread limit (1 in a build without OpenMP)."""
    return max_threads()
