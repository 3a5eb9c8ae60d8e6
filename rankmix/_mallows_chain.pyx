# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""One MCMC chain of the DP mixture of generalized Mallows models, compiled.

The chain holds the clustering and, per cluster, its central ranking sigma and stage
dispersions theta (Meila & Chen 2010). A sweep releases the GIL for all its work:
the assignment step (eq. 11 for Slice-Gibbs; the Beta-function predictive of
Figure 5 for Beta-Gibbs), then per cluster ``n_gibbs`` rounds of sigma | theta and
theta | sigma, then ``n_split_merge`` split-merge proposals (``_split_merge``: an
exact Metropolis-Hastings step that proposes the new clusters' sigma and theta),
then (with ``alpha_prior``) alpha | K by Escobar & West's step, the DP prior's
terms shared with every chain (``_dp_prior.pxd``). The sub-cluster sampler
(``subcluster=True``) replaces the sequential assignment step by the exact anchored
parallel label step of ``_restricted.pxd`` (:meth:`_parallel_labels`), run on
OpenMP threads, and updates the clusters' parameters in parallel over the
clusters (:meth:`_update_parameters`, each cluster in a ``ClusterWork`` of its
thread); its draws come from Philox keyed by the chain (by row, or by cluster slot
and update round), so they do not depend on the number of threads. Its clusters
come and go by split-merge and by 10 x ``n_split_merge`` singleton proposals a
sweep (:meth:`_singleton_move`), which absorb a cluster of one ranking or split
one ranking off, since its label step never empties a cluster. Clusters live
in slots that are
reused when a cluster empties, so no relabelling pass over the data is ever needed.

A sub-cluster chain may hold its rankings elsewhere (``remote``: chunks on Dask
workers, ``_distributed_rankings``): it then reads them only through the
operations of ``_mallows_rows`` (the label step, the densities and code totals
of a proposal's rankings, the statistics of sets of rankings, the log-likelihood
of each) and the rankings a move reads, fetched into a cache for the sweep, in
one go at its start (``_read_ahead``): a singleton move's, and a split-merge
proposal's, whose launch and decision then run on them here, with the same
kernels, where they are few enough (``rows_here``); its draws equal those of
the same chain with the rankings in X.

New clusters (Neal 2000, algorithm 2) are chosen with the exact prior predictive
alpha (n - t_i)! / n! (Lemma 1) and their parameters are then drawn given the one
ranking pi_i. For Slice-Gibbs that draw is exact: summing over sigma shows that
one ranking carries no information on theta (its codes sweep every value equally
often), so theta comes from the prior (by adaptive rejection sampling) and sigma |
theta, pi_i has independent truncated-geometric codes. Beta-Gibbs uses the paper's
Sample-sigma-N1 (its Beta approximation) instead.
"""

import numpy as np

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, exp, expm1, lgamma, log
from libc.stdint cimport int32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from numpy.random cimport bitgen_t

from ._kernels cimport (
    PAIR_BYTES, Statistics, codes_one, intp_t, log_psi, mh_sigma,
    row_length, slice_theta,
    stage_sums, stagewise, statistics_build, statistics_bytes_bound,
    statistics_free, statistics_init, statistics_view,
    theta_exact, theta_log_normaliser, transposition_pass,
    weighted_statistics,
)
from . import _subcluster_chain
from ._consensus import number_by_first_appearance
from ._kernels import merge_statistics
from ._dp_prior cimport (
    crp_log_normaliser, escobar_west, gamma_log_density, split_merge_others,
    split_select_log_ratio,
)
from ._counter_rng cimport CounterStream, counter_stream_start
from ._mallows_rows cimport (
    code_total_rows, density_rows, gm_log_density, label_rows, label_scratch_stride,
    threads_for, threads_for_codes,
)
from ._openmp cimport max_threads
from ._restricted cimport find_anchors
from ._rng cimport (
    bitgen_pointer, draw_from_logs, draw_index, log_pair, log_sum_exp, random_beta,
    random_standard_gamma, shuffle, uniform, uniform_index,
)
from ._slots cimport (
    Slots, grow_array, slots_close, slots_free, slots_group, slots_grow, slots_open,
)

# The sweep number that keys the random numbers of the sampled start's label step
# (``_initialise_sequential``), which no sweep uses.
cdef uint64_t START_SWEEP = 0xFFFFFFFFFFFFFFFF

# Parameter sets of the split-merge scratch (rows of sm_sigma, sm_theta, ...): the
# launch's two sides, the proposed (or current) sides and merged cluster, the
# merge launch's draw, and the merge launch's reference theta.
cdef enum:
    SM_LAUNCH_A = 0
    SM_LAUNCH_B = 1
    SM_A = 2
    SM_B = 3
    SM_MERGED = 4
    SM_LAUNCH_MERGED = 5
    SM_REFERENCE = 6
    SM_SETS = 7

# Restricted Gibbs scans of the split-merge launch (Jain & Neal 2004's intermediate
# scans): two took the launch from the anchors' allocation to a stable one on the
# paper's data sets; each costs two parameter proposals and |S| two-way choices.
cdef intp_t N_LAUNCH_SCANS = 2

# Sub-cluster sampler: singleton proposals (``_singleton_move``) per split-merge
# proposal, as in the Gaussian sub-cluster chain.
cdef intp_t SINGLETON_MOVES = 10

# a sub-cluster launch's scan computes its rankings' densities on the threads
# from this many rankings (fewer are not worth waking them for); read by each
# chain when it is made (a test sets it to compare with the sequential scan)
PARALLEL_SCAN_ROWS = 2048

# The sub-cluster parameter step updates clusters on as many threads as hold
# about this many bytes of statistics at once (``_parameter_threads``), or one
# when a single cluster needs more; read by each chain when it is made.
PARALLEL_STATISTICS_BYTES = 1 << 30


# What _propose_set does with a parameter set.
cdef enum:
    PROPOSE_LAUNCH = 0     # draw, by the cheap Beta update; no density
    PROPOSE_DRAW = 1       # draw, and return the log proposal density
    PROPOSE_EVALUATE = 2   # the log proposal density of the set's parameters


# The counter of a cluster's parameter stream (``ClusterWork``): (slot, round,
# PURPOSE_PARAMETERS, draw), a purpose no row stream uses.
cdef uint64_t PURPOSE_PARAMETERS = 0xC1A55E5000000000


cdef struct ClusterWork:
    # What one cluster's parameter update (``_update_cluster``) writes besides the
    # cluster's own arrays: the chain has one for its sequential work (updates in
    # turn, split-merge proposals), and a sub-cluster chain one per thread.
    Statistics st
    intp_t* local        # (n,) all -1 between uses
    intp_t* st_local     # (n,) scratch of the sigma kernels and stage_sums
    intp_t* unranked     # (n,)
    intp_t* proposal     # (n,)
    char* placed         # (n,)
    double* rho          # (n,)
    double* weight       # (n,)
    double* preceded     # (n, n)
    double* sums         # (T,)
    double* stage_n      # (T,)
    # a counter-based stream (Philox, as the rows'): the draws of a cluster's
    # update depend on (key, slot, round) alone, not on the thread that runs it
    CounterStream stream


cdef int work_allocate(ClusterWork* w, intp_t n, intp_t T) except -1 nogil:
    """``w``'s buffers, for n items and T stages (``work_free`` frees them)."""
    cdef intp_t j
    memset(w, 0, sizeof(ClusterWork))
    statistics_init(&w.st)
    w.local = <intp_t*> malloc(n * sizeof(intp_t))
    w.st_local = <intp_t*> malloc(n * sizeof(intp_t))
    w.unranked = <intp_t*> malloc(n * sizeof(intp_t))
    w.proposal = <intp_t*> malloc(n * sizeof(intp_t))
    w.placed = <char*> malloc(n * sizeof(char))
    w.rho = <double*> malloc(n * sizeof(double))
    w.weight = <double*> malloc(n * sizeof(double))
    w.preceded = <double*> malloc(n * n * sizeof(double))
    w.sums = <double*> malloc(max(T, 1) * sizeof(double))
    w.stage_n = <double*> malloc(max(T, 1) * sizeof(double))
    if (w.local == NULL or w.st_local == NULL or w.unranked == NULL
            or w.proposal == NULL or w.placed == NULL or w.rho == NULL
            or w.weight == NULL or w.preceded == NULL or w.sums == NULL
            or w.stage_n == NULL):
        with gil:
            raise MemoryError("could not allocate a thread's work arrays")
    for j in range(n):
        w.local[j] = -1
    return 0


cdef void work_free(ClusterWork* w) noexcept nogil:
    statistics_free(&w.st)
    free(w.local); free(w.st_local); free(w.unranked); free(w.proposal)
    free(w.placed); free(w.rho); free(w.weight); free(w.preceded)
    free(w.sums); free(w.stage_n)
    memset(w, 0, sizeof(ClusterWork))


def set_key(members):
    """A set of rankings' key in ``known_statistics``: its sorted indices."""
    return np.sort(members).tobytes()


cdef inline void stage_counts(const Statistics* st, double* out) noexcept nogil:
    """``out`` (n_stages,) <- N_j: how many of the rankings ``st`` summarises
    reach stage j (the sum of its items' counts there)."""
    cdef intp_t j, d
    for j in range(st.n_stages):
        out[j] = 0.0
        for d in range(st.n_ranked):
            out[j] += st.counts[d * st.n_stages + j]


cdef int sent_view(Statistics* st, statistics, intp_t T, intp_t n) except -1:
    """``statistics_view`` of the statistics of a set of rankings that another
    process sent (T stages, n items), which rank one item at least."""
    statistics_view(st, statistics, T, n)
    if st.n_ranked == 0:
        raise ValueError("malformed ranking statistics: a set of rankings ranking "
                         "no item")
    return 0


cdef class MallowsChain:
    """State and sweeps of one chain (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (N, T), dtype=np.intp
        Validated rankings, -1 padded; ``T`` stages are modelled.
    n_items : int
        Number of items n (every id in X is below it).
    alpha, nu : float
        DP concentration and prior strength.
    r : ndarray of shape (T,)
        Prior parameters r_j.
    log_z0 : ndarray of shape (T,)
        log of the normaliser of the theta_j prior, exp(-nu (theta r_j + log psi)).
    beta_gibbs : bool
        Beta-Gibbs (Figure 5) if True, Slice-Gibbs (Figure 1) otherwise.
    use_mh : bool
        Metropolis-Hastings sigma update (exact) if True, the plain stagewise rule
        otherwise.
    n_gibbs, n_slices : int
        The paper's T_Gibbs and T_Slices.
    init_clusters : int
        Number of clusters of the random initial clustering.
    bit_generator : numpy.random.BitGenerator
        This chain's own random stream.
    alpha_prior : tuple (shape, rate) or None
        Gamma prior of alpha, resampled each sweep by Escobar & West's step
        (``_dp_prior.pxd``); None keeps alpha fixed.
    n_split_merge : int
        Split-merge proposals per sweep (:meth:`_split_merge`); 0 turns them off.
    sequential_init : bool
        Start by sequential prediction (:meth:`_initialise_sequential`) instead of
        the random clustering into ``init_clusters``.
    subcluster : bool
        Replace the sequential assignment step by the anchored parallel label step
        (:meth:`_parallel_labels`); requires explicit theta (``beta_gibbs``
        False). Draws the chain's Philox key from ``bit_generator`` first.
    init_labels : ndarray of shape (N,), dtype=np.intp, default=None
        Start from this clustering (cluster indices 0 to K - 1, K <= N), each
        cluster's parameters then fitted to its members, instead of
        ``sequential_init`` or the random clustering.
    remote : object, default=None
        The holder of rankings kept elsewhere (``_distributed_rankings.
        DaskRankings``: chunks on Dask workers), for a sub-cluster chain; X is
        then an empty (0, T) array. The chain reads its rankings only through
        the holder's operations (``_mallows_rows``), and draws what it draws
        with the same rankings in X.
    """

    cdef object bit_generator
    cdef bitgen_t* rng
    cdef const intp_t[:, ::1] X
    cdef intp_t[::1] lengths
    cdef intp_t[::1] labels
    cdef intp_t N, n, T
    cdef double nu, slice_width, log_n_factorial, log_alpha
    cdef public double alpha
    cdef bint sample_alpha
    cdef double alpha_shape, alpha_rate
    cdef intp_t n_split_merge
    cdef public object split_merge_counts   # proposed / accepted splits and merges
    cdef intp_t n_split, n_split_accepted, n_merge, n_merge_accepted
    cdef double[::1] r, log_z0, log_new
    cdef bint beta_gibbs, use_mh
    cdef intp_t n_gibbs, n_slices
    cdef public double log_joint

    # sub-cluster sampler (see _restricted.pxd)
    cdef bint subcluster
    cdef uint64_t key[2]       # the chain's Philox key
    cdef readonly uint64_t sweep_count  # sweeps run since the chain started
    cdef intp_t* new_labels    # (N,) labels drawn by the parallel step
    cdef double* log_pi        # (capacity,) log of the unnormalised weight pi_c
    cdef double* anchor_priority  # (capacity,)
    cdef intp_t* anchor_row    # (capacity,)
    cdef double* thread_scratch   # per thread: the label step's (_parallel_labels)
    cdef size_t thread_scratch_size
    # the label step's tables, by active index a (_parallel_labels): the position of
    # each item in sigma (n, K), theta (T, K) and the log normalisers (T + 1, K)
    cdef int32_t* label_position
    cdef double* label_theta
    cdef double* label_norm
    cdef size_t label_tables_size    # K for which they are allocated

    # cluster slots
    cdef Slots slots           # which slots hold clusters (see _slots.pxd)
    cdef intp_t* size          # (capacity,)
    cdef double* log_size      # (capacity,) log of size, kept in step with it
    cdef intp_t* sigma         # (capacity, n)
    cdef intp_t* position      # (capacity, n) inverse of sigma
    cdef double* theta         # (capacity, T)
    cdef double* log_norm      # (capacity, T + 1) cumulative log psi_{n-1-j}(theta_j)
    cdef double* code_sum      # (capacity, T) Beta-Gibbs: S_j(sigma) of the members
    cdef double* stage_count   # (capacity, T) Beta-Gibbs: N_j of the members
    cdef double* beta_base     # (capacity, T) Beta-Gibbs: log B - L_a(S) + L_b(M)
    cdef intp_t* beta_lo       # (capacity, T) Beta-Gibbs: S, the stage's code sum
    cdef intp_t* beta_hi       # (capacity, T) Beta-Gibbs: M + 1 = S + N + 2
    # Log-gamma ladders L(k) = lgamma(offset + k) - lgamma(offset), grown on demand
    # and shared by the stages with equal offsets (see _refresh_stage).
    cdef intp_t n_ladders
    cdef double** ladder       # (2 T,) the ladders
    cdef intp_t* ladder_size   # (2 T,) entries computed
    cdef double* ladder_offset # (2 T,)
    cdef intp_t* ladder_a      # (T,) ladder of nu r_j for stage j
    cdef intp_t* ladder_b      # (T,) ladder of nu r_j + nu for stage j
    cdef double* log_prob      # (capacity + 1,) assignment scratch
    # Rows equal to the row before them (np.repeat order, as sample_weight
    # gives) reuse each cluster's likelihood term of that row where the cluster
    # did not change in between: the same numbers, fewer evaluations.
    cdef double* score_cache   # (capacity,) cluster c's term for the last row scored
    cdef char* cache_valid     # (capacity,) score_cache[c] still holds
    cdef char* repeats_previous  # (N,) row i equals row i - 1
    cdef public bint reuse_repeated_rows  # the cache on (tests turn it off)
    cdef public intp_t thread_cap   # subcluster: at most this many threads (0: none)
    cdef readonly intp_t parameter_threads  # the threads of the last parameter step

    # scratch
    cdef intp_t* code          # (T,)
    cdef intp_t* old_code      # (T,)
    cdef intp_t* members       # (N,)
    cdef char* taken           # (n,)
    cdef double* code_logw     # (n,)
    cdef ClusterWork work      # the statistics and sigma | theta buffers of the
                               # sequential updates and the split-merge proposals
    cdef ClusterWork* works        # sub-cluster: one per thread
    cdef intp_t n_works
    cdef uint64_t param_round      # sub-cluster: calls of _update_parameters so far
    cdef intp_t sequential_sample  # sub-cluster: rows of the sequential start's sample

    # split-merge scratch
    cdef intp_t* sm_points     # (N,) the pair's other points S, in random order
    cdef intp_t* sm_list       # (N,) the members of one side (or of the union)
    cdef char* sm_side         # (N,) 1 if the point goes with i, 0 with j
    cdef intp_t* sm_sigma      # (SM_SETS, n)
    cdef intp_t* sm_pos        # (SM_SETS, n) inverse of sm_sigma
    cdef double* sm_theta      # (SM_SETS, T)
    cdef double* sm_norm       # (SM_SETS, T + 1) cumulative log psi_{n-1-j}
    cdef double* sm_sums       # (SM_SETS, T) S_j(sigma) of the set's members
    cdef double* sm_counts     # (SM_SETS, T) N_j of the set's members
    cdef double* sm_gm         # (2, N) S's code totals under the launch's anchors,
                               # then (sub-cluster) its log GM under launch A and B
    cdef intp_t* sm_codes      # sub-cluster: (threads, T) their scratch
    cdef double pick_log_partner  # a merge's log P(B | A) (_cluster_pair)
    cdef intp_t sm_codes_threads
    cdef intp_t parallel_scan_rows  # PARALLEL_SCAN_ROWS when the chain was made
    cdef intp_t parallel_statistics_bytes  # PARALLEL_STATISTICS_BYTES then

    # rankings held elsewhere (``remote``): the rows a move reads, fetched into
    # ``cache_rows`` (row ``cache_list[s]`` at slot s) for one sweep
    cdef object remote
    cdef dict known_statistics  # the last sides' statistics, by set (remote)
    cdef object known_union     # (set, statistics) of a proposal's union (remote)
    cdef Statistics set_view    # a set's statistics from elsewhere, read in place
    cdef object set_view_object  # ... whose arrays it points at
    cdef const Statistics* set_st  # the last set's: &work.st, or &set_view
    cdef bint sm_list_union    # sm_list holds a proposal's union (_gather_union)
    cdef bint union_built      # work.st holds the statistics of that union
    cdef object label_statistics  # (slots, statistics) the last label step sent
    cdef double total_precedences  # sum_i t_i (t_i - 1) / 2 over the rankings
    cdef double total_ranked   # sum_i t_i
    cdef intp_t n_chunks       # the chunks holding the rankings (remote)
    cdef intp_t* cache_slot    # (N,) a row's slot in cache_rows, -1 if none
    cdef intp_t* cache_rows    # (cache_capacity, T)
    cdef intp_t* cache_list    # (cache_capacity,)
    cdef intp_t* cache_lengths  # (cache_capacity,) their lengths
    cdef intp_t n_cached, cache_capacity
    cdef bint rows_here        # a split-merge proposal's rankings are all cached
    cdef intp_t* local_points  # (N + 2,) a set's rankings as cache slots (rows_here)
    cdef intp_t launch_values  # LAUNCH_PREFETCH_VALUES when the chain was made
    cdef public intp_t _most_read_ahead  # the most ranks of clusters one read held
    cdef intp_t* move_rows     # a sub-cluster sweep's proposals' pairs (i, j),
                               # then its singleton moves' rows (-1: absorb)
    cdef intp_t n_move_rows

    def __cinit__(self):
        memset(&self.work, 0, sizeof(ClusterWork))   # so that work_free may run

    def __init__(
        self, const intp_t[:, ::1] X, intp_t n_items, double alpha, double nu,
        const double[::1] r, const double[::1] log_z0, bint beta_gibbs, bint use_mh,
        intp_t n_gibbs, intp_t n_slices, intp_t init_clusters, bit_generator,
        double slice_width=1.0, alpha_prior=None, intp_t n_split_merge=0,
        bint sequential_init=False, bint subcluster=False, init_labels=None,
        remote=None,
    ):
        cdef intp_t t, i, j, k, n_init
        if remote is not None and not subcluster:
            raise ValueError("only a sub-cluster chain reads rankings held elsewhere")
        if remote is not None and (remote.n_features != X.shape[1]
                                   or remote.n_items != n_items):
            raise ValueError(
                f"the rankings held elsewhere have {remote.n_features} stages of "
                f"{remote.n_items} items, not {X.shape[1]} of {n_items}")
        self.X = X
        self.remote = remote
        self.known_statistics = {}
        self.N = X.shape[0] if remote is None else remote.n_rows
        self.T = X.shape[1]
        self.n = n_items
        self.alpha = alpha
        self.log_alpha = log(alpha)
        self.sample_alpha = alpha_prior is not None
        if self.sample_alpha:
            self.alpha_shape, self.alpha_rate = alpha_prior
        self.n_split_merge = n_split_merge if self.N >= 2 else 0
        self.nu = nu
        self.r = np.array(r, dtype=np.float64)
        self.log_z0 = np.array(log_z0, dtype=np.float64)
        self.beta_gibbs = beta_gibbs
        self.use_mh = use_mh
        self.n_gibbs = n_gibbs
        self.n_slices = n_slices
        self.slice_width = slice_width
        self.bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
        self.rng = bitgen_pointer(self.bit_generator)
        if subcluster and beta_gibbs:
            raise ValueError("the sub-cluster step needs explicit theta (not Beta-Gibbs)")
        self.subcluster = subcluster
        self.sweep_count = 0
        # read when the chain is built, as the Gaussian sub-cluster chain does
        self.sequential_sample = max(1, _subcluster_chain.SEQUENTIAL_SAMPLE)
        if subcluster:
            # drawn once, before anything else, so that the key is the seed's
            with self.bit_generator.lock:
                self.key[0] = self.rng.next_uint64(self.rng.state)
                self.key[1] = self.rng.next_uint64(self.rng.state)
        # (the in-process label step's output; a remote chain's is the workers')
        self.new_labels = <intp_t*> grow_array(
            NULL, (max(self.N, 1) if remote is None else 1) * sizeof(intp_t))
        self.log_n_factorial = lgamma(n_items + 1.0)
        if remote is None:
            self.lengths = np.empty(self.N, dtype=np.intp)
            for i in range(self.N):
                self.lengths[i] = row_length(&X[i, 0], self.T)
        else:
            self.lengths = np.array(remote.lengths(), dtype=np.intp)
            if self.lengths.shape[0] != self.N or not np.all(
                    (np.asarray(self.lengths) >= 1) & (np.asarray(self.lengths) <= self.T)):
                raise ValueError("the rankings held elsewhere have malformed lengths")
            self.total_precedences = 0.0
            self.total_ranked = 0.0
            for i in range(self.N):
                self.total_precedences += self.lengths[i] * (self.lengths[i] - 1) // 2
                self.total_ranked += self.lengths[i]
            self.n_chunks = len(remote.offsets)
            self.cache_slot = <intp_t*> grow_array(NULL, self.N * sizeof(intp_t))
            for i in range(self.N):
                self.cache_slot[i] = -1
            self.local_points = <intp_t*> grow_array(NULL, (self.N + 2) * sizeof(intp_t))
            self.launch_values = _subcluster_chain.LAUNCH_PREFETCH_VALUES
        # log (n - t)! / n!: the new-cluster term of eq. (11) less log alpha, by
        # length t (alpha changes when it is sampled)
        self.log_new = np.array(
            [lgamma(n_items - t + 1.0) - self.log_n_factorial
             for t in range(self.T + 1)]
        )
        self.labels = np.empty(self.N, dtype=np.intp)
        self.reuse_repeated_rows = True
        self.repeats_previous = <char*> malloc(max(self.N, 1) * sizeof(char))
        if self.repeats_previous == NULL:
            raise MemoryError("could not allocate the chain's work arrays")
        for i in range(self.N):
            # (rankings held elsewhere are scored without the cache: the same
            # numbers; only the sequential start scores rows one by one)
            self.repeats_previous[i] = i > 0 and remote is None
            for j in range(self.T):
                if not self.repeats_previous[i] or X[i, j] != X[i - 1, j]:
                    self.repeats_previous[i] = 0
                    break

        self.code = <intp_t*> malloc(max(self.T, 1) * sizeof(intp_t))
        self.old_code = <intp_t*> malloc(max(self.T, 1) * sizeof(intp_t))
        self.members = <intp_t*> malloc(max(self.N, 1) * sizeof(intp_t))
        self.taken = <char*> malloc(self.n * sizeof(char))
        self.code_logw = <double*> malloc(self.n * sizeof(double))
        self.sm_points = <intp_t*> grow_array(NULL, self.N * sizeof(intp_t))
        self.sm_list = <intp_t*> grow_array(NULL, self.N * sizeof(intp_t))
        self.sm_side = <char*> grow_array(NULL, self.N * sizeof(char))
        self.sm_sigma = <intp_t*> grow_array(NULL, SM_SETS * self.n * sizeof(intp_t))
        self.sm_pos = <intp_t*> grow_array(NULL, SM_SETS * self.n * sizeof(intp_t))
        self.sm_theta = <double*> grow_array(NULL, SM_SETS * self.T * sizeof(double))
        self.sm_norm = <double*> grow_array(NULL, SM_SETS * (self.T + 1) * sizeof(double))
        self.sm_sums = <double*> grow_array(NULL, SM_SETS * self.T * sizeof(double))
        self.sm_counts = <double*> grow_array(NULL, SM_SETS * self.T * sizeof(double))
        self.sm_gm = <double*> grow_array(NULL, 2 * max(self.N, 1) * sizeof(double))
        if subcluster:
            self.parallel_scan_rows = max(1, PARALLEL_SCAN_ROWS)
            self.parallel_statistics_bytes = max(1, PARALLEL_STATISTICS_BYTES)
        if (self.code == NULL or self.old_code == NULL or self.members == NULL
                or self.taken == NULL or self.code_logw == NULL):
            raise MemoryError("could not allocate the chain's work arrays")
        work_allocate(&self.work, self.n, self.T)
        if beta_gibbs:
            self._make_ladders()
        self._grow(max(2 * init_clusters, 16))

        cdef bint given = init_labels is not None
        n_init = max(1, min(init_clusters, self.N))
        if given:
            np.asarray(self.labels)[:] = init_labels
            n_init = int(np.max(init_labels)) + 1
        with self.bit_generator.lock, nogil:
            if sequential_init and not given:
                self._initialise_sequential()
            else:
                self._initialise(n_init, not given)

    def __dealloc__(self):
        work_free(&self.work)
        if self.works != NULL:
            for j in range(self.n_works):
                work_free(&self.works[j])
            free(self.works)
        slots_free(&self.slots)
        free(self.size); free(self.log_size); free(self.sigma); free(self.position); free(self.theta)
        free(self.log_norm); free(self.code_sum); free(self.stage_count)
        free(self.beta_base); free(self.beta_lo); free(self.beta_hi)
        if self.ladder != NULL:
            for j in range(self.n_ladders):
                free(self.ladder[j])
        free(self.ladder); free(self.ladder_size); free(self.ladder_offset)
        free(self.ladder_a); free(self.ladder_b)
        free(self.log_prob); free(self.code); free(self.old_code)
        free(self.score_cache); free(self.cache_valid); free(self.repeats_previous)
        free(self.members); free(self.taken); free(self.code_logw)
        free(self.sm_points); free(self.sm_list); free(self.sm_side)
        free(self.sm_sigma); free(self.sm_pos); free(self.sm_theta); free(self.sm_norm)
        free(self.sm_sums); free(self.sm_counts); free(self.sm_gm); free(self.sm_codes)
        free(self.new_labels); free(self.log_pi); free(self.anchor_priority)
        free(self.anchor_row); free(self.thread_scratch); free(self.label_position)
        free(self.label_theta); free(self.label_norm)
        free(self.cache_slot); free(self.cache_rows); free(self.cache_list)
        free(self.cache_lengths); free(self.local_points)
        free(self.move_rows)

    # -- slots ---------------------------------------------------------------

    cdef int _grow(self, intp_t capacity) except -1 nogil:
        """Reallocate every per-slot array for ``capacity`` slots."""
        cdef intp_t c, old = self.slots.capacity
        if capacity <= old:
            return 0
        self.size = <intp_t*> grow_array(self.size, capacity * sizeof(intp_t))
        self.log_size = <double*> grow_array(self.log_size, capacity * sizeof(double))
        self.sigma = <intp_t*> grow_array(self.sigma, capacity * self.n * sizeof(intp_t))
        self.position = <intp_t*> grow_array(self.position, capacity * self.n * sizeof(intp_t))
        self.theta = <double*> grow_array(self.theta, capacity * self.T * sizeof(double))
        self.log_norm = <double*> grow_array(self.log_norm, capacity * (self.T + 1) * sizeof(double))
        self.log_prob = <double*> grow_array(self.log_prob, (capacity + 1) * sizeof(double))
        self.score_cache = <double*> grow_array(self.score_cache, capacity * sizeof(double))
        self.cache_valid = <char*> grow_array(self.cache_valid, capacity * sizeof(char))
        if self.subcluster:
            self.log_pi = <double*> grow_array(self.log_pi, capacity * sizeof(double))
            self.anchor_priority = <double*> grow_array(
                self.anchor_priority, capacity * sizeof(double))
            self.anchor_row = <intp_t*> grow_array(self.anchor_row, capacity * sizeof(intp_t))
        if self.beta_gibbs:
            self.code_sum = <double*> grow_array(self.code_sum, capacity * self.T * sizeof(double))
            self.stage_count = <double*> grow_array(self.stage_count, capacity * self.T * sizeof(double))
            self.beta_base = <double*> grow_array(self.beta_base, capacity * self.T * sizeof(double))
            self.beta_lo = <intp_t*> grow_array(self.beta_lo, capacity * self.T * sizeof(intp_t))
            self.beta_hi = <intp_t*> grow_array(self.beta_hi, capacity * self.T * sizeof(intp_t))
        for c in range(old, capacity):
            self.size[c] = 0
            self.cache_valid[c] = 0
        slots_grow(&self.slots, capacity)
        return 0

    cdef intp_t _open_slot(self) except -1 nogil:
        cdef intp_t c
        if self.slots.n_free == 0:
            self._grow(2 * self.slots.capacity)
        c = slots_open(&self.slots)
        self.size[c] = 0
        return c

    cdef void _open_slot_id(self, intp_t c) noexcept nogil:
        """Reopen slot c, which _close_slot just pushed on the free stack."""
        slots_open(&self.slots)

    cdef inline void _resize(self, intp_t c, intp_t change) noexcept nogil:
        self.size[c] += change
        self.log_size[c] = log(<double> self.size[c]) if self.size[c] > 0 else -INFINITY

    cdef void _close_slot(self, intp_t c) noexcept nogil:
        slots_close(&self.slots, c)

    # -- per-cluster derived tables -------------------------------------------

    cdef int _refresh(self, intp_t c) except -1 nogil:
        """Recompute what depends on (sigma, theta) and, for Beta-Gibbs, the stats."""
        cdef intp_t j, s, r, top
        cdef intp_t* sig = self.sigma + c * self.n
        cdef intp_t* pos = self.position + c * self.n
        cdef double* th = self.theta + c * self.T
        cdef double* norm = self.log_norm + c * (self.T + 1)
        self.cache_valid[c] = 0
        for r in range(self.n):
            pos[sig[r]] = r
        norm[0] = 0.0
        for j in range(self.T):
            norm[j + 1] = norm[j] + log_psi(self.n - 1 - j, th[j])
        if self.beta_gibbs:
            for j in range(self.T):
                self._refresh_stage(c, j)
        return 0

    def _make_ladders(self):
        """One ladder per distinct offset nu r_j and nu r_j + nu."""
        cdef intp_t j, m, found
        cdef double offset
        self.ladder = <double**> malloc(2 * self.T * sizeof(double*))
        self.ladder_size = <intp_t*> malloc(2 * self.T * sizeof(intp_t))
        self.ladder_offset = <double*> malloc(2 * self.T * sizeof(double))
        self.ladder_a = <intp_t*> malloc(self.T * sizeof(intp_t))
        self.ladder_b = <intp_t*> malloc(self.T * sizeof(intp_t))
        if (self.ladder == NULL or self.ladder_size == NULL or self.ladder_offset == NULL
                or self.ladder_a == NULL or self.ladder_b == NULL):
            raise MemoryError("could not allocate the log-gamma ladders")
        self.n_ladders = 0
        for j in range(2 * self.T):
            offset = self.nu * self.r[j % self.T] + (self.nu if j >= self.T else 0.0)
            found = -1
            for m in range(self.n_ladders):
                if self.ladder_offset[m] == offset:
                    found = m
            if found < 0:
                found = self.n_ladders
                self.ladder[found] = NULL
                self.ladder_size[found] = 0
                self.ladder_offset[found] = offset
                self.n_ladders += 1
            if j < self.T:
                self.ladder_a[j] = found
            else:
                self.ladder_b[j - self.T] = found

    cdef double* _ladder(self, intp_t m, intp_t size) except NULL nogil:
        """Ladder m with at least ``size`` entries L(k) = lgamma(o + k) - lgamma(o).

        Each entry is its own log-gamma (not a running sum of logs), so a
        difference L(k + s) - L(k) carries the rounding of two values only.
        """
        cdef intp_t k, old = self.ladder_size[m], grown
        cdef double offset = self.ladder_offset[m], base
        if size <= old:
            return self.ladder[m]
        grown = max(size, 2 * old, 1024)
        self.ladder[m] = <double*> grow_array(self.ladder[m], grown * sizeof(double))
        base = lgamma(offset)
        for k in range(old, grown):
            self.ladder[m][k] = lgamma(offset + k) - base
        self.ladder_size[m] = grown
        return self.ladder[m]

    cdef int _refresh_stage(self, intp_t c, intp_t j) except -1 nogil:
        """Cache the Beta-Gibbs predictive of stage j of cluster c (Figure 5).

        With A = nu r_j + S_j and B = nu + N_j + 1 the term of a code s is

            log Beta(s + A, B + 1) / Beta(A, B)
              = log B + sum_{u<s} log(A + u) - sum_{u<=s} log(A + B + u)
              = log B + L_a(S + s) - L_a(S) - L_b(M + 1 + s) + L_b(M),

        M = S + N_j + 1, since the code sum S and the count N_j are integers and
        A + B = (nu r_j + nu) + M. So a change of the cluster's statistics costs
        O(1) here, and a (ranking, cluster) pair two look-ups per stage.
        """
        cdef intp_t S = <intp_t> (self.code_sum[c * self.T + j] + 0.5)
        cdef intp_t N = <intp_t> (self.stage_count[c * self.T + j] + 0.5)
        cdef intp_t M = S + N + 1
        cdef double* la = self._ladder(self.ladder_a[j], S + self.n + 1)
        cdef double* lb = self._ladder(self.ladder_b[j], M + self.n + 2)
        self.cache_valid[c] = 0
        self.beta_base[c * self.T + j] = log(self.nu + N + 1.0) - la[S] + lb[M]
        self.beta_lo[c * self.T + j] = S
        self.beta_hi[c * self.T + j] = M + 1
        return 0

    cdef inline const intp_t* _row(self, intp_t i) noexcept nogil:
        """Ranking i: in X, or, held elsewhere, among the rows fetched this sweep
        (``_fetch_rows``, which every move calls first for the rows it reads)."""
        if self.cache_slot == NULL:
            return &self.X[i, 0]
        return self.cache_rows + self.cache_slot[i] * self.T

    cdef int _fetch_rows(self, const intp_t* rows, intp_t m) except -1 nogil:
        """Read the rankings ``rows[:m]`` (those >= 0) held elsewhere that are not
        cached yet, in one round trip (nothing to do for rankings in X)."""
        cdef intp_t s, k, n_new = 0, T = self.T
        cdef const intp_t[:, ::1] fetched
        if self.cache_slot == NULL:
            return 0
        for s in range(m):
            n_new += rows[s] >= 0 and self.cache_slot[rows[s]] < 0
        if n_new == 0:
            return 0
        with gil:
            wanted = np.unique(np.array(
                [rows[s] for s in range(m) if rows[s] >= 0 and self.cache_slot[rows[s]] < 0],
                dtype=np.intp))
            n_new = len(wanted)
            if n_new == 0:
                return 0
            fetched = np.ascontiguousarray(self.remote.rows(wanted), dtype=np.intp)
            if fetched.shape[0] != n_new or fetched.shape[1] != T:
                raise RuntimeError("the rankings fetched have the wrong shape")
            if self.n_cached + n_new > self.cache_capacity:
                s = max(2 * self.cache_capacity, self.n_cached + n_new)
                self.cache_rows = <intp_t*> grow_array(
                    self.cache_rows, s * max(T, 1) * sizeof(intp_t))
                self.cache_list = <intp_t*> grow_array(self.cache_list, s * sizeof(intp_t))
                self.cache_lengths = <intp_t*> grow_array(
                    self.cache_lengths, s * sizeof(intp_t))
                self.cache_capacity = s
            for s in range(n_new):
                k = wanted[s]
                self.cache_list[self.n_cached] = k
                self.cache_slot[k] = self.n_cached
                self.cache_lengths[self.n_cached] = self.lengths[k]
                memcpy(self.cache_rows + self.n_cached * T, &fetched[s, 0],
                       T * sizeof(intp_t))
                self.n_cached += 1
        return 0

    cdef void _clear_rows(self) noexcept nogil:
        """Forget the rows fetched (at each sweep's start: the cache stays small)."""
        cdef intp_t s
        for s in range(self.n_cached):
            self.cache_slot[self.cache_list[s]] = -1
        self.n_cached = 0

    cdef inline bint _fits_here(self, intp_t n) noexcept nogil:
        """Whether the n rankings of a proposal's two clusters are few enough to
        be read here: at most ``launch_values`` ranks."""
        return 0 < self.launch_values and n * self.T <= self.launch_values

    cdef inline bint _reads_here(self) noexcept nogil:
        """Whether the kernels over rankings run here: on X, or on the cached rows
        of a proposal whose rankings were all read (``rows_here``)."""
        return self.remote is None or self.rows_here

    cdef inline const intp_t* _rankings(self) noexcept nogil:
        """The rankings the kernels read here: X, or the cached rows."""
        return &self.X[0, 0] if self.remote is None else self.cache_rows

    cdef inline const intp_t* _lengths_here(self) noexcept nogil:
        """Their lengths, in the same order."""
        return &self.lengths[0] if self.remote is None else self.cache_lengths

    cdef const intp_t* _points_here(self, const intp_t* points, intp_t m) noexcept nogil:
        """``points[:m]`` as rows of ``_rankings()``: themselves, or their cache
        slots (in ``local_points``, which the next call overwrites)."""
        cdef intp_t r
        if self.remote is None:
            return points
        for r in range(m):
            self.local_points[r] = self.cache_slot[points[r]]
        return self.local_points

    cdef inline void _codes(self, intp_t i, intp_t c, intp_t* out) noexcept nogil:
        codes_one(self._row(i), self.lengths[i], self.position + c * self.n, out)

    cdef inline double _gm_log_likelihood(self, intp_t i, intp_t c) noexcept nogil:
        return self._gm_at(i, self.position + c * self.n, self.theta + c * self.T,
                           self.log_norm + c * (self.T + 1))

    cdef inline double _gm_at(
        self, intp_t i, const intp_t* pos, const double* th, const double* norm,
    ) noexcept nogil:
        """log GM(pi_i | sigma, theta), sigma given by its inverse ``pos`` and theta's
        cumulative log psi by ``norm``. Uses the chain's scratch: not for threads
        (they call ``gm_log_density`` with their own)."""
        return gm_log_density(self._row(i), self.lengths[i], pos, th, norm, self.code)

    cdef double _beta_from_table(self, intp_t i, intp_t c) noexcept nogil:
        """The Beta-Gibbs predictive of ranking i in cluster c, from c's cache."""
        cdef intp_t j, t = self.lengths[i], at
        cdef double value = 0.0
        self._codes(i, c, self.code)
        for j in range(t):
            at = c * self.T + j
            value += (self.beta_base[at]
                      + self.ladder[self.ladder_a[j]][self.beta_lo[at] + self.code[j]]
                      - self.ladder[self.ladder_b[j]][self.beta_hi[at] + self.code[j]])
        return value

    cdef double _beta_direct(self, intp_t i, intp_t c, const intp_t* codes) noexcept nogil:
        """The Beta-Gibbs predictive of ranking i in cluster c, from c's current stats.

        Used for the ranking's own cluster, whose stats have just lost it and whose
        cache is left as it was: if the ranking stays, nothing needs refreshing.
        """
        cdef intp_t j, t = self.lengths[i], S, N, M
        cdef double value = 0.0
        cdef double* la
        cdef double* lb
        for j in range(t):
            S = <intp_t> (self.code_sum[c * self.T + j] + 0.5)
            N = <intp_t> (self.stage_count[c * self.T + j] + 0.5)
            M = S + N + 1
            # No growth needed: the ladders cover c's full statistics, and taking
            # the ranking out only lowers S and M.
            la = self.ladder[self.ladder_a[j]]
            lb = self.ladder[self.ladder_b[j]]
            value += (log(self.nu + N + 1.0) + la[S + codes[j]] - la[S]
                      - lb[M + 1 + codes[j]] + lb[M])
        return value

    cdef void _add_stats(self, intp_t c, intp_t i, const intp_t* codes, double sign) noexcept nogil:
        cdef intp_t j
        self.cache_valid[c] = 0
        for j in range(self.lengths[i]):
            self.code_sum[c * self.T + j] += sign * codes[j]
            self.stage_count[c * self.T + j] += sign

    # -- new clusters -----------------------------------------------------------

    cdef void _place_codes(self, intp_t c, intp_t i) noexcept nogil:
        """sigma with s_j(pi_i | sigma) = code[j]: pi_i(j) takes the code[j]-th free
        position; the other items fill the remaining positions in uniform order."""
        cdef intp_t j, r, k, count, m, slot, t = self.lengths[i]
        cdef intp_t* sig = self.sigma + c * self.n
        cdef const intp_t* x = self._row(i)
        for r in range(self.n):
            sig[r] = -1
        for j in range(t):
            count = -1
            for r in range(self.n):
                if sig[r] < 0:
                    count += 1
                    if count == self.code[j]:
                        sig[r] = x[j]
                        break
        # The unranked items, shuffled into the free positions (Fisher-Yates).
        for k in range(self.n):
            self.taken[k] = 0
        for j in range(t):
            self.taken[x[j]] = 1
        m = 0
        for k in range(self.n):
            if not self.taken[k]:
                self.work.unranked[m] = k
                m += 1
        for r in range(self.n):
            if sig[r] < 0:
                slot = uniform_index(self.rng, m)
                sig[r] = self.work.unranked[slot]
                self.work.unranked[slot] = self.work.unranked[m - 1]
                m -= 1

    cdef intp_t _draw_code(self, intp_t top) noexcept nogil:
        """A code in 0..top-1 with P(k) proportional to exp(code_logw[k])."""
        return draw_from_logs(self.code_logw, top, self.rng)

    cdef int _new_cluster(self, intp_t c, intp_t i) except -1 nogil:
        """Parameters of a new cluster given its one ranking pi_i (module docstring)."""
        cdef intp_t j, k, t = self.lengths[i], top
        cdef double a, b, beta
        cdef double* th = self.theta + c * self.T
        if not self.beta_gibbs:
            for j in range(self.T):
                th[j] = theta_exact(self.nu * self.r[j], self.nu, self.n - 1 - j, self.rng)
            for j in range(t):
                top = self.n - j
                for k in range(top):
                    self.code_logw[k] = -th[j] * k
                self.code[j] = self._draw_code(top)
            self._place_codes(c, i)
        else:
            self._sample_sigma_n1(c, i)
            for j in range(self.T):
                self.code_sum[c * self.T + j] = self.code[j] if j < t else 0.0
                self.stage_count[c * self.T + j] = 1.0 if j < t else 0.0
            self._beta_theta(c)
        self._refresh(c)
        return 0

    cdef void _sample_sigma_n1(self, intp_t c, intp_t i) noexcept nogil:
        """Sample-sigma-N1 (Figure 4): P(V_j = k) proportional to Beta(nu r_j + k, nu + 2).

        This is the paper's Beta approximation of the exact law, used by Beta-Gibbs
        only. Consecutive Beta ratios are (a + k - 1) / (a + k - 1 + b).
        """
        cdef intp_t j, k, top, t = self.lengths[i]
        cdef double a, b = self.nu + 2.0
        for j in range(t):
            a = self.nu * self.r[j]
            top = self.n - j
            self.code_logw[0] = 0.0
            for k in range(1, top):
                self.code_logw[k] = self.code_logw[k - 1] + log((a + k - 1.0) / (a + k - 1.0 + b))
            self.code[j] = self._draw_code(top)
        self._place_codes(c, i)

    cdef void _beta_theta(self, intp_t c) noexcept nogil:
        """theta_j | sigma by eq. (12): exp(-theta_j) ~ Beta(nu r_j + S_j, nu + N_j + 1)."""
        cdef intp_t j
        cdef double x
        for j in range(self.T):
            x = random_beta(
                self.rng, self.nu * self.r[j] + self.code_sum[c * self.T + j],
                self.nu + self.stage_count[c * self.T + j] + 1.0,
            )
            self.theta[c * self.T + j] = -log(x) if x > 1e-300 else 690.0

    # -- the sweep ------------------------------------------------------------------

    cdef void _remove(self, intp_t i) noexcept nogil:
        """Take ranking i out of its cluster (closing it if it empties)."""
        cdef intp_t c_old = self.labels[i]
        self._resize(c_old, -1)
        if self.beta_gibbs:
            self._codes(i, c_old, self.old_code)
            self._add_stats(c_old, i, self.old_code, -1.0)
        if self.size[c_old] == 0:
            self._close_slot(c_old)

    cdef double _score(self, intp_t i, bint reuse) noexcept nogil:
        """log_prob[a]: log weight of active cluster a for ranking i (removed from
        its cluster), log_prob[n_active]: of a new cluster. Returns the maximum.

        With ``reuse`` (ranking i equals the ranking scored before it), a
        cluster's likelihood term is taken from score_cache where no change of
        the cluster has cleared cache_valid since: the value it would compute.
        """
        cdef intp_t a, c, c_old = self.labels[i]
        cdef double high = -INFINITY, term
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            if reuse and self.cache_valid[c] and c != c_old:
                term = self.score_cache[c]
            elif self.beta_gibbs and c == c_old:
                # its own cluster, from the codes it was removed with
                term = self._beta_direct(i, c, self.old_code)
                self.cache_valid[c] = 0
            else:
                if self.beta_gibbs:
                    term = self._beta_from_table(i, c)
                else:
                    term = self._gm_log_likelihood(i, c)
                self.score_cache[c] = term
                self.cache_valid[c] = 1
            self.log_prob[a] = self.log_size[c] + term
            if self.log_prob[a] > high:
                high = self.log_prob[a]
        self.log_prob[self.slots.n_active] = self.log_alpha + self.log_new[self.lengths[i]]
        if self.log_prob[self.slots.n_active] > high:
            high = self.log_prob[self.slots.n_active]
        return high

    cdef int _assign(self) except -1 nogil:
        """Resample every c_i given the others (eq. 11, or Figure 5's predictive)."""
        cdef intp_t i, c_old
        # parameters and clusters changed since the last pass
        memset(self.cache_valid, 0, self.slots.capacity * sizeof(char))
        for i in range(self.N):
            c_old = self.labels[i]
            self._remove(i)
            self._seat(
                i, c_old, self.size[c_old] > 0,
                self.reuse_repeated_rows and self.repeats_previous[i],
            )
        return 0

    cdef int _label_tables(self) except -1 nogil:
        """The label step's tables, cluster-minor: for active cluster a, the position
        of item v in its sigma at ``label_position[v * K + a]`` (int32: n < 2^31),
        theta_aj at ``label_theta[j * K + a]`` and its cumulative log normaliser to
        stage j at ``label_norm[j * K + a]``. O(K (n + T)) a sweep, against the
        step's O(N K t^2): built afresh, not kept in step with every update."""
        cdef intp_t a, c, j, v, K = self.slots.n_active, n = self.n, T = self.T
        cdef const intp_t* pos
        if <size_t> K > self.label_tables_size:
            self.label_position = <int32_t*> grow_array(
                self.label_position, K * n * sizeof(int32_t))
            self.label_theta = <double*> grow_array(self.label_theta, K * T * sizeof(double))
            self.label_norm = <double*> grow_array(
                self.label_norm, K * (T + 1) * sizeof(double))
            self.label_tables_size = K
        for a in range(K):
            c = self.slots.active[a]
            pos = self.position + c * n
            for v in range(n):
                self.label_position[v * K + a] = <int32_t> pos[v]
            for j in range(T):
                self.label_theta[j * K + a] = self.theta[c * T + j]
            for j in range(T + 1):
                self.label_norm[j * K + a] = self.log_norm[c * (T + 1) + j]
        return 0

    cdef int _parallel_labels(self, uint64_t sweep, bint free=False) except -1 nogil:
        """The anchored parallel label step (``_restricted.pxd``), exact.

        pi_c ~ Gamma(n_c, 1) per active cluster (unnormalised: only ratios
        matter), drawn from the chain's stream in the order of ``slots.active``.
        Then each row gets its priority u_i from Philox (key, row, sweep); each
        cluster's lowest-priority member, its anchor, keeps its label, and every
        other row i draws its cluster from pi_c GM(pi_i | sigma_c, theta_c) over
        the active clusters whose anchor precedes it (its own always does), by its
        own Philox uniform. The rows are independent given (pi, sigma, theta), so
        they are drawn in a ``prange`` (``_mallows_rows.label_rows``), each thread
        with its own scratch (at most ``max_threads()`` threads, each with at
        least ``MIN_ROWS_PER_THREAD`` rows: ``threads_for``), or by the workers
        holding them (``remote``);
        a row's draw depends on its index alone, never on the thread or worker.
        No cluster empties (its anchor stays) and none is created, so the slots
        stay as they are and only the sizes are recounted. ``free``: no anchors,
        and rows may have no label yet (-1): every row draws from every cluster
        (the sampled start's step, which may empty a cluster).
        """
        cdef intp_t a, c, i, K = self.slots.n_active, N = self.N
        cdef intp_t capacity = self.slots.capacity
        cdef int n_threads = self._capped(threads_for(N))
        cdef size_t stride = label_scratch_stride(K, self.T)
        cdef intp_t* labels = &self.labels[0]
        cdef const intp_t* active = self.slots.active
        for a in range(K):
            c = active[a]
            self.log_pi[c] = log(random_standard_gamma(self.rng, <double> self.size[c]))
        if free:
            for c in range(capacity):
                self.anchor_priority[c] = -1.0
                self.anchor_row[c] = -1
        else:
            find_anchors(self.key, sweep, labels, N, capacity,
                         self.anchor_priority, self.anchor_row, NULL, n_threads)
        self._label_tables()
        if self.remote is not None:
            with gil:
                new_labels, statistics = self.remote.label_step(
                    np.asarray(self.labels),
                    np.array([self.key[0], self.key[1]], dtype=np.uint64), sweep,
                    np.asarray(<const intp_t[:K]> active),
                    np.asarray(<double[:capacity]> self.log_pi),
                    np.asarray(<double[:capacity]> self.anchor_priority),
                    np.asarray(<intp_t[:capacity]> self.anchor_row),
                    np.asarray(<int32_t[:K * self.n]> self.label_position),
                    np.asarray(<double[:K * self.T]> self.label_theta),
                    np.asarray(<double[:K * (self.T + 1)]> self.label_norm),
                    statistics=self._statistics_at_once(K))
                if np.shape(new_labels) != (N,):
                    raise RuntimeError("the label step returned the wrong number of rows")
                np.asarray(self.labels)[:] = new_labels
                # the clusters' statistics by the new labels, for the parameter
                # update that follows (``_update_parameters``)
                self.label_statistics = (
                    None if statistics is None
                    else (np.asarray(<const intp_t[:K]> active).copy(), statistics))
        else:
            if n_threads * stride > self.thread_scratch_size:
                self.thread_scratch = <double*> grow_array(
                    self.thread_scratch, n_threads * stride * sizeof(double))
                self.thread_scratch_size = n_threads * stride
            label_rows(&self.X[0, 0], &self.lengths[0], self.T, N, 0, labels,
                       self.new_labels, self.key, sweep, active, K, self.log_pi,
                       self.anchor_priority, self.anchor_row, self.label_position,
                       self.label_theta, self.label_norm, self.thread_scratch,
                       n_threads)
            memcpy(labels, self.new_labels, N * sizeof(intp_t))
        for a in range(K):
            self.size[active[a]] = 0
        for i in range(N):
            self.size[labels[i]] += 1
        for a in range(K):
            self._resize(active[a], 0)
        return 0

    cdef int _seat(self, intp_t i, intp_t c_old, bint alive, bint reuse) except -1 nogil:
        """Draw ranking i's cluster given the clusters of the others.

        Ranking i is in no cluster; it left ``c_old`` (-1 if none: the sequential
        start), which still holds rankings if ``alive``. ``reuse``: see _score.
        """
        cdef intp_t c, choice, j
        self._score(i, reuse)
        choice = draw_from_logs(self.log_prob, self.slots.n_active + 1, self.rng)
        if choice == self.slots.n_active:
            c = self._open_slot()
            self._new_cluster(c, i)
        else:
            c = self.slots.active[choice]
            if self.beta_gibbs:
                if c == c_old:
                    self._add_stats(c, i, self.old_code, 1.0)
                else:
                    self._codes(i, c, self.code)
                    self._add_stats(c, i, self.code, 1.0)
                    # a ranking of length t changes the statistics of its
                    # first t stages only
                    for j in range(self.lengths[i]):
                        self._refresh_stage(c, j)
        if self.beta_gibbs and alive and c != c_old:
            for j in range(self.lengths[i]):
                self._refresh_stage(c_old, j)
        self._resize(c, 1)
        self.labels[i] = c
        return 0

    cdef void _group_members(self) noexcept nogil:
        """members[member_start[c]:member_start[c + 1]]: the rankings of slot c."""
        slots_group(&self.slots, &self.labels[0], self.N, self.members)

    cdef bint _statistics_at_once(self, intp_t K) noexcept nogil:
        """Rankings held elsewhere: whether K clusters' statistics, and the
        chunks' parts of them that the client merges, hold at most
        ``parallel_statistics_bytes`` whatever the clustering (PAIR_BYTES a
        pair, at most one pair a precedence in the parts and in the merge, and
        the items, stage counts and rows' starts of each cluster and of each
        part, ``_items_bytes``). Then the label step sends them with the
        labels; else the parameter step fetches them in batches
        (``_statistics_batch_end``), so that the client holds about as much as
        a chain in process (full rankings of hundreds of items: gigabytes a
        cluster)."""
        return (2.0 * PAIR_BYTES * self.total_precedences
                + self._items_bytes(self.N, self.total_ranked, K)
                <= <double> self.parallel_statistics_bytes)

    cdef inline double _items_bytes(self, double n_rankings, double ranked,
                                    intp_t n_sets) noexcept nogil:
        """Rankings held elsewhere: about the most bytes of the per-item arrays
        (items, stage counts, rows' starts: 8 (2 T + 1) an item) of the
        statistics of ``n_sets`` sets of ``n_rankings`` rankings that rank
        ``ranked`` items in all, merged and in the chunks' parts: an item a
        ranked place at most, and n a set in the merge and a set and chunk in
        the parts."""
        cdef double per_item = 8.0 * (2 * self.T + 1)
        return per_item * (<double> n_sets * self.n
                           + min(ranked, <double> n_sets * self.n
                                 * min(n_rankings, <double> self.n_chunks)))

    cdef intp_t _statistics_batch_end(self, intp_t start, intp_t K,
                                      const double* cost) noexcept nogil:
        """The end of the batch of active clusters from ``start`` whose
        statistics the remote parameter step fetches and holds at once: as
        many as cost (``cost[a]``: cluster a's statistics and their parts,
        bounded) ``parallel_statistics_bytes`` in all, and one at least."""
        cdef intp_t stop = start + 1
        cdef double held = cost[start]
        while stop < K and held + cost[stop] <= <double> self.parallel_statistics_bytes:
            held += cost[stop]
            stop += 1
        return stop

    cdef object _clusters_statistics(self, intp_t start, intp_t stop):
        """Rankings held elsewhere: the statistics of the active clusters
        [start, stop), by slot. Those the label step sent with the labels where
        it is the step just before (the labels are its own) and sent every
        active slot's (the sequential start closes the clusters it emptied, and
        moves others to their places); else from the holders, one round trip."""
        slots = np.asarray(<intp_t[:stop]> self.slots.active)[start:].copy()
        sent, self.label_statistics = self.label_statistics, None
        if sent is not None:
            by_slot = dict(zip(sent[0].tolist(), sent[1]))
            kept = [by_slot.get(c) for c in slots.tolist()]
            if all(statistics is not None for statistics in kept):
                return kept
        kept = self.remote.cluster_statistics(np.asarray(self.labels), slots)
        if any(statistics is None for statistics in kept):
            raise RuntimeError("an active cluster holds no ranking")
        return kept

    cdef int _update_parameters(self) except -1 nogil:
        """Per cluster, n_gibbs rounds of sigma | theta, data and theta | sigma, data.

        A sub-cluster chain updates its clusters in parallel (OpenMP, over the
        clusters), each from its own counter-based stream keyed by (slot, round):
        the draws do not depend on the number of threads. Where the step runs
        on one thread (one cluster, or clusters whose statistics are too large
        to build side by side: ``_parameter_threads``), it updates them in turn
        with the statistics kernels on the threads instead. Other chains update them
        in turn from the chain's stream. With rankings held elsewhere, the
        clusters' statistics come with the label step just before, or else from
        their holders first, in one round trip (``_clusters_statistics``), or,
        where all of them would not fit ``parallel_statistics_bytes``
        (``_statistics_at_once``), a batch of clusters a round trip.
        """
        cdef intp_t a, c, j, K = self.slots.n_active
        cdef int n_threads
        cdef bint at_once = True
        if self.remote is None:   # (a remote chain's statistics come grouped)
            self._group_members()
        else:
            with gil:
                at_once = self.label_statistics is not None
        if self.subcluster:
            n_threads = self._capped(max(1, min(max_threads(), K)))
            if at_once:
                self._update_batch(0, K, n_threads)
            else:
                self._update_in_batches(K, n_threads)
            self.param_round += 1
            return 0
        for a in range(K):
            c = self.slots.active[a]
            if self.beta_gibbs and self.size[c] == 1:
                # Figure 5: a singleton's centre by Sample-sigma-N1, theta by (12).
                self._sample_sigma_n1(c, self.members[self.slots.member_start[c]])
                for j in range(self.T):
                    self.code_sum[c * self.T + j] = self.code[j] if j < self.lengths[self.members[self.slots.member_start[c]]] else 0.0
                    self.stage_count[c * self.T + j] = 1.0 if j < self.lengths[self.members[self.slots.member_start[c]]] else 0.0
                self._beta_theta(c)
                self._refresh(c)
                continue
            self._update_cluster(c, &self.work, self.rng, NULL, 1)
        return 0

    cdef int _update_in_batches(self, intp_t K, int n_threads) except -1 nogil:
        """Rankings held elsewhere, their statistics past the budget: the
        parameter step a batch of clusters at a time (``_statistics_batch_end``),
        each cluster's cost, its statistics and their parts (at most a pair a
        precedence), bounded from its rankings' precedences."""
        cdef intp_t a, c, i, t, start = 0, stop
        cdef double* cost = <double*> grow_array(
            NULL, (2 * self.slots.capacity + K) * sizeof(double))
        cdef double* precedences = cost + K   # by slot
        cdef double* ranked = precedences + self.slots.capacity   # by slot
        try:
            for c in range(self.slots.capacity):
                precedences[c] = 0.0
                ranked[c] = 0.0
            for i in range(self.N):
                if self.labels[i] >= 0:   # (the sequential start seats some)
                    t = self.lengths[i]
                    precedences[self.labels[i]] += t * (t - 1) // 2
                    ranked[self.labels[i]] += t
            for a in range(K):
                c = self.slots.active[a]
                cost[a] = (PAIR_BYTES * precedences[c]
                           + self._items_bytes(self.size[c], ranked[c], 1)
                           + statistics_bytes_bound(precedences[c], self.size[c],
                                                    self.n, self.T))
            while start < K:
                stop = self._statistics_batch_end(start, K, cost)
                self._update_batch(start, stop, n_threads)
                start = stop
        finally:
            free(cost)
        return 0

    cdef int _update_batch(self, intp_t start, intp_t stop, int n_threads) except -1 nogil:
        """The sub-cluster parameter step on the active clusters [start, stop),
        on at most ``n_threads`` threads (``_parameter_threads``), their
        statistics built here or, with rankings held elsewhere, fetched first
        (``_clusters_statistics``) and released after."""
        cdef intp_t a
        cdef Statistics* given = NULL
        if self.remote is not None:
            with gil:
                kept = self._clusters_statistics(start, stop)
        try:
            if self.remote is not None:
                with gil:
                    given = <Statistics*> grow_array(
                        NULL, max(stop - start, 1) * sizeof(Statistics))
                    for a in range(start, stop):
                        sent_view(&given[a - start], kept[a - start], self.T, self.n)
            n_threads = <int> min(n_threads, stop - start)
            if given == NULL:   # (statistics from elsewhere are read in place)
                n_threads = self._parameter_threads(start, stop, n_threads)
            self.parameter_threads = n_threads
            self._grow_works(n_threads)
            if n_threads == 1:   # the statistics kernels take the threads
                for a in range(start, stop):
                    self._update_active(a, 0, NULL if given == NULL else &given[a - start],
                                        self._kernel_threads())
            else:
                for a in prange(start, stop, schedule="dynamic", num_threads=n_threads):
                    self._update_active(a, threadid(),
                                        NULL if given == NULL else &given[a - start], 1)
        finally:
            free(given)
            if self.remote is not None:
                with gil:
                    kept = None
        return 0

    cdef int _update_active(self, intp_t a, int tid, const Statistics* given,
                            int n_threads) except -1 nogil:
        """The sub-cluster parameter step's update of active cluster a, in
        thread ``tid``'s work, from the cluster's stream of this round
        (``given``: its statistics, built elsewhere, or NULL), its statistics
        kernels on ``n_threads`` threads."""
        cdef intp_t c = self.slots.active[a]
        cdef bitgen_t* stream = counter_stream_start(
            &self.works[tid].stream, self.key, c, self.param_round, PURPOSE_PARAMETERS)
        return self._update_cluster(c, &self.works[tid], stream, given, n_threads)

    cdef int _kernel_threads(self) noexcept nogil:
        """The threads of the statistics kernels (``statistics_build``,
        ``weighted_statistics``, ``stage_sums``) in a step that runs on one
        thread: a split-merge proposal, or a sub-cluster parameter step that
        runs on one (its clusters' statistics too large to build side by side,
        or one cluster). A sub-cluster chain's threads, at most ``thread_cap``;
        one for the other chains, which keep to one core. The kernels give the
        same results on any number of threads."""
        if not self.subcluster:
            return 1
        return self._capped(max_threads())

    cdef inline int _capped(self, int n_threads) noexcept nogil:
        """``n_threads``, at most ``thread_cap`` where the engine runs chains
        side by side."""
        if 0 < self.thread_cap < n_threads:
            return <int> self.thread_cap
        return n_threads

    cdef int _parameter_threads(self, intp_t start, intp_t stop,
                                int n_threads) noexcept nogil:
        """The threads of a sub-cluster chain's parameter step on the active
        clusters [start, stop), their statistics built here: at most
        ``n_threads``, and few enough that the statistics they build at once
        hold about ``parallel_statistics_bytes`` in all, or one thread when the
        largest cluster's alone need more (``statistics_bytes_bound``). Full
        rankings of hundreds of items need up to n^2 (n - 1) pairs a cluster,
        gigabytes, each of which a thread would hold: so the step's memory stays
        near a one-thread chain's. (Statistics from elsewhere come in batches
        within that budget, ``_statistics_batch_end``, and are read in place.)
        The draws do not depend on the threads."""
        cdef intp_t a, c, p, t, first
        cdef double n_keys, needed, largest = 0.0
        cdef double budget = <double> self.parallel_statistics_bytes
        for a in range(start, stop):
            c = self.slots.active[a]
            first = self.slots.member_start[c]
            n_keys = 0.0
            for p in range(first, first + self.size[c]):
                t = self.lengths[self.members[p]]
                n_keys += t * (t - 1) // 2
            needed = statistics_bytes_bound(n_keys, self.size[c], self.n, self.T)
            largest = max(largest, needed)
        if largest * n_threads <= budget:
            return n_threads
        return max(1, <int> min(<double> n_threads, budget / largest))

    cdef int _grow_works(self, intp_t n_threads) except -1 nogil:
        """At least ``n_threads`` per-thread works (``ClusterWork``)."""
        cdef intp_t t
        if n_threads <= self.n_works:
            return 0
        self.works = <ClusterWork*> grow_array(self.works, n_threads * sizeof(ClusterWork))
        for t in range(self.n_works, n_threads):
            self.n_works = t + 1   # freed by __dealloc__ even if the next one fails
            work_allocate(&self.works[t], self.n, self.T)
        return 0

    cdef int _update_cluster(
        self, intp_t c, ClusterWork* w, bitgen_t* rng, const Statistics* given,
        int n_threads,
    ) except -1 nogil:
        """n_gibbs rounds of sigma | theta and theta | sigma for cluster c (of two
        members or more for Beta-Gibbs), in ``w``'s buffers, from ``rng``. Writes
        only cluster c's arrays: clusters may be updated in parallel. ``given``:
        the members' statistics, built where they are (NULL: built here);
        ``n_threads``: the statistics kernels' threads."""
        cdef intp_t g, j, D
        cdef double log_z
        cdef intp_t* sig = self.sigma + c * self.n
        cdef intp_t* pos = self.position + c * self.n
        cdef double* th = self.theta + c * self.T
        cdef const Statistics* st
        if given == NULL:
            statistics_build(
                &w.st, &self.X[0, 0], self.T, self.members + self.slots.member_start[c],
                self.size[c], self.n, w.local, n_threads,
            )
            st = &w.st
        else:   # read where they are, not copied (they may take gigabytes)
            st = given
        D = st.n_ranked
        stage_counts(st, w.stage_n)
        for g in range(self.n_gibbs):
            weighted_statistics(st, th, w.weight, w.preceded, n_threads)
            if self.use_mh:
                mh_sigma(self.n, D, st.items, w.weight, w.preceded, rng, sig,
                         w.proposal, w.st_local, w.rho, w.placed, w.unranked)
                transposition_pass(self.n, D, st.items, w.weight, w.preceded,
                                   rng, sig, w.st_local)
            else:
                stagewise(self.n, D, st.items, w.weight, w.preceded, rng, sig,
                          &log_z, w.st_local, w.rho, w.placed, w.unranked)
            for j in range(self.n):
                pos[sig[j]] = j
            stage_sums(st, pos, w.sums, w.st_local, n_threads)
            if self.beta_gibbs:   # sequential only: the chain's stream
                for j in range(self.T):
                    self.code_sum[c * self.T + j] = w.sums[j]
                    self.stage_count[c * self.T + j] = w.stage_n[j]
                self._beta_theta(c)
            else:
                for j in range(self.T):
                    th[j] = slice_theta(
                        th[j], self.nu * self.r[j] + w.sums[j],
                        self.nu + w.stage_n[j], self.n - 1 - j,
                        self.slice_width, self.n_slices, rng,
                    )
        self._refresh(c)
        return 0

    cdef double _compute_log_joint(self) except? -1 nogil:
        """log p(c, sigma, theta, X | alpha) with the exact model (constants included),
        plus log p(alpha) when alpha is sampled. The rankings' log-likelihoods are
        summed in row order, wherever they are computed."""
        cdef intp_t a, c, i, j, capacity = self.slots.capacity
        cdef double value = crp_log_normaliser(self.alpha, self.slots.n_active, self.N)
        cdef double* th
        cdef const double[::1] row_values
        if self.sample_alpha:
            value += gamma_log_density(self.alpha, self.alpha_shape, self.alpha_rate)
        if self.remote is None:
            for i in range(self.N):
                value += self._gm_log_likelihood(i, self.labels[i])
        else:
            with gil:
                row_values = np.ascontiguousarray(self.remote.log_likelihoods(
                    np.asarray(self.labels),
                    np.asarray(<intp_t[:capacity * self.n]> self.position),
                    np.asarray(<double[:capacity * self.T]> self.theta),
                    np.asarray(<double[:capacity * (self.T + 1)]> self.log_norm),
                ), dtype=np.float64)
                if row_values.shape[0] != self.N:
                    raise RuntimeError("the log-likelihoods have the wrong length")
            for i in range(self.N):
                value += row_values[i]
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            th = self.theta + c * self.T
            value += lgamma(<double> self.size[c]) - self.log_n_factorial
            for j in range(self.T):
                value -= self.nu * (th[j] * self.r[j] + log_psi(self.n - 1 - j, th[j]))
                value -= self.log_z0[j]
        return value

    cdef int _initialise_sequential(self) except -1 nogil:
        """Sequential prediction (Liang et al. 2007, sec. 5.1), as the collapsed core.

        The rankings join one at a time in a uniformly random order, each drawn
        into an existing cluster or a new one given those placed before it (the
        assignment step over a growing data set, one scan's cost); a new cluster's
        parameters are drawn from its first ranking, as in the assignment step.
        Then every cluster's parameters are updated from all its members.

        A sub-cluster chain runs sequential prediction on the first
        ``SEQUENTIAL_SAMPLE`` rankings of that order only (all of them when there
        are no more), updates those clusters' parameters from their sample
        members, and then draws every ranking's cluster given them, in parallel
        (its label step with no anchors), dropping the clusters no ranking
        joins: the start costs about one sweep, and it has about the number of
        clusters the model gives that many rankings, which the chain (whose only
        new clusters come from splits) then refines, where a pass over every
        ranking at a large alpha opens thousands that its merges rarely close.
        """
        cdef intp_t r, i, a, c
        cdef intp_t n_sample = self.N
        cdef intp_t* order = self.sm_points   # split-merge scratch, unused yet
        if self.subcluster:
            n_sample = min(self.N, self.sequential_sample)
        for r in range(self.N):
            order[r] = r
            self.labels[r] = -1
        shuffle(order, self.N, self.rng)
        self._fetch_rows(order, n_sample)
        for r in range(n_sample):
            i = order[r]
            self._seat(i, -1, False, False)
        if n_sample < self.N:
            self._update_parameters()           # from the sample's members
            self._parallel_labels(START_SWEEP, True)
            for a in range(self.slots.n_active - 1, -1, -1):
                c = self.slots.active[a]
                if self.size[c] == 0:
                    self._close_slot(c)
        self._update_parameters()
        self.log_joint = self._compute_log_joint()
        return 0

    cdef int _initialise(self, intp_t n_init, bint draw) except -1 nogil:
        """A clustering into n_init clusters, drawn uniformly (``draw``) or given
        in ``labels`` (0 to n_init - 1), then parameters fitted to it."""
        cdef intp_t i, a, c, k, j, r
        cdef intp_t* map_ = self.members  # scratch: cluster index -> slot
        for k in range(n_init):
            map_[k] = -1
        for i in range(self.N):
            k = uniform_index(self.rng, n_init) if draw else self.labels[i]
            if map_[k] < 0:
                map_[k] = self._open_slot()
            self.labels[i] = map_[k]
            self._resize(map_[k], 1)
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            for j in range(self.T):
                self.theta[c * self.T + j] = theta_exact(
                    self.nu * self.r[j], self.nu, self.n - 1 - j, self.rng)
            for r in range(self.n):
                self.sigma[c * self.n + r] = r
            shuffle(self.sigma + c * self.n, self.n, self.rng)
            if self.beta_gibbs:
                for j in range(self.T):
                    self.code_sum[c * self.T + j] = 0.0
                    self.stage_count[c * self.T + j] = 0.0
            self._refresh(c)
        self._update_parameters()
        self.log_joint = self._compute_log_joint()
        return 0

    # -- split-merge (Jain & Neal 2004, with explicit cluster parameters) ----------

    cdef double _set_log_score(self, intp_t k) noexcept nogil:
        """log P0(sigma, theta) + sum of log GM over the members, for parameter set k.

        From the set's stage sums S_j and counts N_j: the GM log-likelihood of the
        members is sum_j [-theta_j S_j - N_j log psi_{n-1-j}(theta_j)], so this is a
        cluster's term of the log joint less its CRP factor Gamma(n_k).
        """
        cdef intp_t j
        cdef double lp, value = -self.log_n_factorial
        cdef double* th = self.sm_theta + k * self.T
        for j in range(self.T):
            lp = log_psi(self.n - 1 - j, th[j])
            value -= (self.nu * (th[j] * self.r[j] + lp) + self.log_z0[j]
                      + th[j] * self.sm_sums[k * self.T + j]
                      + self.sm_counts[k * self.T + j] * lp)
        return value

    cdef double _propose_set(
        self, const intp_t* points, intp_t m, const double* theta_ref, intp_t k,
        int how,
    ) except? -1 nogil:
        """Draw or evaluate (``how``) parameter set k for ``points``.

        The proposal Q(sigma, theta | points, theta_ref): sigma by the stagewise
        proposal of the MH sigma step under theta_ref, then each theta_j from its
        exact conditional given sigma, density (10) with a = nu r_j + S_j(sigma),
        b = nu + N_j, drawn by ``theta_exact`` and evaluated with the normaliser
        ``theta_log_normaliser``. Returns log Q of the set's (sigma, theta)
        (PROPOSE_DRAW, PROPOSE_EVALUATE); PROPOSE_LAUNCH draws theta by the
        Beta-Gibbs update (12) instead, cheaper and with no density, which the
        launch does not need. Leaves S_j and N_j in the set's rows of sm_sums
        and sm_counts and fills its sm_pos and sm_norm. ``theta_ref`` is read
        before the set's theta is written (they may alias).
        """
        cdef intp_t j, D
        cdef double log_z, log_q, a, b, x
        cdef intp_t* sig = self.sm_sigma + k * self.n
        cdef intp_t* pos = self.sm_pos + k * self.n
        cdef double* th = self.sm_theta + k * self.T
        cdef double* sums = self.sm_sums + k * self.T
        cdef double* counts = self.sm_counts + k * self.T
        cdef ClusterWork* w = &self.work
        cdef int n_threads = self._kernel_threads()
        cdef const Statistics* st
        D = self._set_statistics(points, m, k)
        st = self.set_st
        weighted_statistics(st, theta_ref, w.weight, w.preceded, n_threads)
        log_q = stagewise(self.n, D, st.items, w.weight, w.preceded,
                          NULL if how == PROPOSE_EVALUATE else self.rng, sig, &log_z,
                          w.st_local, w.rho, w.placed, w.unranked)
        for j in range(self.n):
            pos[sig[j]] = j
        stage_sums(st, pos, sums, w.st_local, n_threads)
        for j in range(self.T):
            a = self.nu * self.r[j] + sums[j]
            b = self.nu + counts[j]
            if how == PROPOSE_LAUNCH:
                x = random_beta(self.rng, a, b + 1.0)
                th[j] = -log(x) if x > 1e-300 else 690.0
                continue
            if how == PROPOSE_DRAW:
                th[j] = theta_exact(a, b, self.n - 1 - j, self.rng)
            # a stage no member reaches keeps the prior, whose normaliser is known
            log_q += (-a * th[j] - b * log_psi(self.n - 1 - j, th[j])
                      - (self.log_z0[j] if counts[j] == 0.0
                         else theta_log_normaliser(a, b, self.n - 1 - j)))
        self._fill_norm(k)
        return log_q

    cdef intp_t _set_statistics(self, const intp_t* points, intp_t m, intp_t k) except -1 nogil:
        """``set_st``: the statistics of ``points[:m]``, built in the work (or,
        with rankings held elsewhere, as the holders sent them), and set k's
        stage counts N_j; returns the number of items they rank."""
        cdef bint union
        cdef ClusterWork* w = &self.work
        cdef double* counts = self.sm_counts + k * self.T
        if self._reads_here():
            # a proposal reads its union twice running where the merge launch
            # builds it ("fresh"): then it is built once
            union = points == self.sm_list and self.sm_list_union
            if not (union and self.union_built):
                statistics_build(&w.st, self._rankings(), self.T,
                                 self._points_here(points, m), m, self.n, w.local,
                                 self._kernel_threads())
            self.union_built = union
            self.set_st = &w.st
        else:
            # read where they are, not copied: with full rankings of hundreds
            # of items a set's statistics take gigabytes
            with gil:
                members = np.array(<intp_t[:m]> <intp_t*> points)
                key = set_key(members)
                merged = self.known_statistics.get(key)
                if merged is None and self.known_union is not None:
                    if self.known_union[0] == key:
                        merged = self.known_union[1]
                if merged is None:
                    self.set_view_object = None
                    merged = self.remote.statistics([members])[0]
                sent_view(&self.set_view, merged, self.T, self.n)
                self.set_view_object = merged
            self.set_st = &self.set_view
        stage_counts(self.set_st, counts)
        return self.set_st.n_ranked

    cdef double _inherited_score(
        self, const intp_t* points, intp_t m, intp_t c, intp_t k,
    ) except? -1 nogil:
        """Parameter set k <- slot c's (sigma, theta), with its stage sums and
        counts over ``points[:m]``; returns its ``_set_log_score``: the cluster of
        those points with c's parameters."""
        self._copy_slot(c, k)
        memcpy(self.sm_pos + k * self.n, self.position + c * self.n,
               self.n * sizeof(intp_t))
        self._set_statistics(points, m, k)
        stage_sums(self.set_st, self.sm_pos + k * self.n, self.sm_sums + k * self.T,
                   self.work.st_local, self._kernel_threads())
        self._fill_norm(k)
        return self._set_log_score(k)

    cdef int _prefetch_sides(self, intp_t i, intp_t j, intp_t m, bint union) except -1 nogil:
        """With rankings held elsewhere and not read here (``rows_here``): the
        statistics of the sides (i with S's points on its side, j with the
        others) in one round trip, kept for
        ``_set_statistics`` in place of the sides before (read by then); with
        ``union``, those of S u {i, j} too, merged from them (a launch's sides
        partition the union the merge proposals read), kept for the proposal.
        So the client holds the statistics of at most two sides and a union, or,
        where those would take more than ``parallel_statistics_bytes``, of one
        set at a time."""
        cdef intp_t r, t, N = self.N
        cdef double precedences = 0.0, ranked = 0.0
        if self._reads_here():
            return 0
        # Past the budget, each set is asked for when it is read instead
        # (``_set_statistics``, a round trip each): the sides, the union and the
        # chunks' parts of them (at most a pair a precedence each) would hold
        # gigabytes at once with full rankings of hundreds of items.
        for r in range(-2, m):
            t = self.lengths[i if r == -2 else j if r == -1 else self.sm_points[r]]
            precedences += t * (t - 1) // 2
            ranked += t
        if (3.0 * PAIR_BYTES * precedences + self._items_bytes(m + 2, ranked, 3)
                > <double> self.parallel_statistics_bytes):
            return 0
        with gil:
            points = (np.array(<intp_t[:m]> self.sm_points) if m
                      else np.empty(0, dtype=np.intp))
            with_i = np.asarray(<signed char[:N]> <signed char*> self.sm_side)[points] != 0
            sides = [np.concatenate([[i], points[with_i]]).astype(np.intp),
                     np.concatenate([[j], points[~with_i]]).astype(np.intp)]
            self.known_statistics.clear()
            self.set_view_object = None
            fetched = self.remote.statistics(sides)
            for members, statistics in zip(sides, fetched):
                self.known_statistics[set_key(members)] = statistics
            if union:
                self.known_union = (set_key(np.concatenate(sides)),
                                    merge_statistics(fetched, self.T))
        return 0

    cdef void _forget_sets(self):
        """Release the statistics of a proposal's sets (rankings held
        elsewhere)."""
        self.known_statistics.clear()
        self.known_union = None
        self.set_view_object = None

    cdef void _fill_norm(self, intp_t k) noexcept nogil:
        cdef intp_t j
        cdef double* th = self.sm_theta + k * self.T
        cdef double* norm = self.sm_norm + k * (self.T + 1)
        norm[0] = 0.0
        for j in range(self.T):
            norm[j + 1] = norm[j] + log_psi(self.n - 1 - j, th[j])

    cdef intp_t _gather(self, intp_t anchor, intp_t m, int side) noexcept nogil:
        """sm_list: the anchor, then the points of S on ``side`` (1: i's, 0: j's,
        -1: all of S). Returns their number."""
        cdef intp_t r, k, count = 1
        self.sm_list[0] = anchor
        self.sm_list_union = False
        for r in range(m):
            k = self.sm_points[r]
            if side < 0 or self.sm_side[k] == side:
                self.sm_list[count] = k
                count += 1
        return count

    cdef double _restricted_scan(self, intp_t m, intp_t forced_a) except? -1 nogil:
        """One restricted Gibbs scan of S between the launch's two sides.

        Each point k of S in turn goes with i with probability proportional to
        n_A(-k) GM(pi_k | launch A), else with j, given the others' current sides
        and the launch parameters. With ``forced_a`` >= 0 nothing is drawn: k goes
        with i iff it is in slot ``forced_a``. Returns the log-probability of the
        sides taken. The sub-cluster chain computes the GM densities, which do not
        depend on the sides, first and on the threads (``_launch_densities``);
        the scan then reads them, so its draws are the same. With rankings held
        elsewhere, always: on the proposal's rankings read here (``rows_here``),
        or by their holders.
        """
        cdef intp_t r, k, n_a = 1, n_b = 1
        cdef double la, lb, log_a, log_b, log_q = 0.0
        cdef bint to_a
        cdef bint ahead = self._ahead(m)
        if ahead:
            self._launch_densities(m)
        for r in range(m):
            if self.sm_side[self.sm_points[r]]:
                n_a += 1
            else:
                n_b += 1
        for r in range(m):
            k = self.sm_points[r]
            if self.sm_side[k]:
                n_a -= 1
            else:
                n_b -= 1
            if ahead:
                la = log(<double> n_a) + self.sm_gm[r]
                lb = log(<double> n_b) + self.sm_gm[self.N + r]
            else:
                la = log(<double> n_a) + self._gm_at(
                    k, self.sm_pos + SM_LAUNCH_A * self.n,
                    self.sm_theta + SM_LAUNCH_A * self.T,
                    self.sm_norm + SM_LAUNCH_A * (self.T + 1))
                lb = log(<double> n_b) + self._gm_at(
                    k, self.sm_pos + SM_LAUNCH_B * self.n,
                    self.sm_theta + SM_LAUNCH_B * self.T,
                    self.sm_norm + SM_LAUNCH_B * (self.T + 1))
            log_pair(la, lb, &log_a, &log_b)
            if forced_a >= 0:
                to_a = self.labels[k] == forced_a
            else:
                to_a = log(uniform(self.rng)) < log_a
            log_q += log_a if to_a else log_b
            self.sm_side[k] = to_a
            if to_a:
                n_a += 1
            else:
                n_b += 1
        return log_q

    cdef inline bint _ahead(self, intp_t m) noexcept nogil:
        """Whether a sub-cluster launch computes the codes of its m rankings
        first, on the threads (``_launch_densities``, the code totals of
        ``_launch``), rather than one by one: with rankings held elsewhere,
        always; else from PARALLEL_SCAN_ROWS rankings of up to 10 items, or as
        much work in longer ones (T^2 codes a ranking). The draws are the same
        either way."""
        return self.subcluster and (
            self.remote is not None
            or m * max(self.T * self.T, 100) >= self.parallel_scan_rows * 100)

    cdef int _code_threads(self, intp_t m) except -1 nogil:
        """The threads for the codes of m of a proposal's rankings
        (``threads_for_codes``, at most ``thread_cap``), sm_codes grown to hold
        their scratch."""
        cdef int n_threads = self._capped(threads_for_codes(m, self.T))
        if n_threads > self.sm_codes_threads:
            self.sm_codes = <intp_t*> grow_array(
                self.sm_codes, n_threads * max(self.T, 1) * sizeof(intp_t))
            self.sm_codes_threads = n_threads
        return n_threads

    cdef int _launch_densities(self, intp_t m) except -1 nogil:
        """sm_gm: log GM(pi_k | launch A) and (| launch B) of S's m rankings, in
        S's order, on the threads (``_code_threads``), or by the
        holders of the rankings where the proposal's were not read here
        (``rows_here``)."""
        cdef intp_t T = self.T, n = self.n, N = self.N
        cdef int n_threads
        cdef const intp_t* pos_a = self.sm_pos + SM_LAUNCH_A * n
        cdef const intp_t* pos_b = self.sm_pos + SM_LAUNCH_B * n
        cdef double* th_a = self.sm_theta + SM_LAUNCH_A * T
        cdef double* th_b = self.sm_theta + SM_LAUNCH_B * T
        cdef double* norm_a = self.sm_norm + SM_LAUNCH_A * (T + 1)
        cdef double* norm_b = self.sm_norm + SM_LAUNCH_B * (T + 1)
        if m == 0:
            return 0
        if not self._reads_here():
            with gil:
                gm_a, gm_b = self.remote.densities(
                    np.array(<intp_t[:m]> self.sm_points),
                    np.array(<intp_t[:n]> <intp_t*> pos_a), np.array(<double[:T]> th_a),
                    np.array(<double[:T + 1]> norm_a),
                    np.array(<intp_t[:n]> <intp_t*> pos_b), np.array(<double[:T]> th_b),
                    np.array(<double[:T + 1]> norm_b))
                np.asarray(<double[:m]> self.sm_gm)[:] = gm_a
                np.asarray(<double[:m]> (self.sm_gm + N))[:] = gm_b
            return 0
        n_threads = self._code_threads(m)
        density_rows(self._rankings(), self._lengths_here(), T, 0,
                     self._points_here(self.sm_points, m), m,
                     pos_a, th_a, norm_a, pos_b, th_b, norm_b, self.sm_gm,
                     self.sm_gm + N, self.sm_codes, n_threads)
        return 0

    cdef void _anchor_positions(self, intp_t i, intp_t k) noexcept nogil:
        """sm_pos of set k: pi_i's items first, in its order, then the others by id."""
        cdef intp_t j, item, r
        cdef intp_t* pos = self.sm_pos + k * self.n
        cdef const intp_t* x = self._row(i)
        for item in range(self.n):
            pos[item] = -1
        for j in range(self.lengths[i]):
            pos[x[j]] = j
        r = self.lengths[i]
        for item in range(self.n):
            if pos[item] < 0:
                pos[item] = r
                r += 1

    cdef int _launch(self, intp_t i, intp_t j, intp_t m) except -1 nogil:
        """The launch state, drawn from (i, j, S) alone, alike for a split and a merge.

        S's points first go with the anchor whose ranking (completed by item id) is
        nearer in code total (a tie by a coin); then N_LAUNCH_SCANS rounds of:
        each side's parameters from Q(. | side, its previous theta; 1 at first),
        then a restricted Gibbs scan.
        """
        cdef intp_t r, k, s, n_a, n_b, n = self.n
        cdef int n_threads = 1
        cdef intp_t* codes = self.code   # (T,), or sm_codes' per thread
        cdef double* d_a = self.sm_gm            # S's code totals under A and B
        cdef double* d_b = self.sm_gm + self.N
        self._anchor_positions(i, SM_LAUNCH_A)
        self._anchor_positions(j, SM_LAUNCH_B)
        if self._reads_here():
            if self._ahead(m):
                n_threads = self._code_threads(m)   # (may move sm_codes)
                codes = self.sm_codes
            code_total_rows(self._rankings(), self._lengths_here(), self.T, 0,
                            self._points_here(self.sm_points, m), m,
                            self.sm_pos + SM_LAUNCH_A * n,
                            self.sm_pos + SM_LAUNCH_B * n, d_a, d_b, codes, n_threads)
        elif m:
            with gil:
                total_a, total_b = self.remote.code_totals(
                    np.array(<intp_t[:m]> self.sm_points),
                    np.array(<intp_t[:n]> (self.sm_pos + SM_LAUNCH_A * n)),
                    np.array(<intp_t[:n]> (self.sm_pos + SM_LAUNCH_B * n)))
                np.asarray(<double[:m]> d_a)[:] = total_a
                np.asarray(<double[:m]> d_b)[:] = total_b
        for r in range(m):
            k = self.sm_points[r]
            self.sm_side[k] = d_a[r] < d_b[r] or (d_a[r] == d_b[r] and uniform(self.rng) < 0.5)
        for r in range(self.T):
            self.sm_theta[SM_LAUNCH_A * self.T + r] = 1.0
            self.sm_theta[SM_LAUNCH_B * self.T + r] = 1.0
        for s in range(N_LAUNCH_SCANS):
            self._prefetch_sides(i, j, m, s == 0)
            n_a = self._gather(i, m, 1)
            self._propose_set(self.sm_list, n_a, self.sm_theta + SM_LAUNCH_A * self.T,
                              SM_LAUNCH_A, PROPOSE_LAUNCH)
            n_b = self._gather(j, m, 0)
            self._propose_set(self.sm_list, n_b, self.sm_theta + SM_LAUNCH_B * self.T,
                              SM_LAUNCH_B, PROPOSE_LAUNCH)
            self._restricted_scan(m, -1)
        return 0

    cdef int _merge_launch(self, intp_t i, intp_t j, intp_t m) except -1 nogil:
        """The merge launch of the fresh kernel: sigma, theta from Q(. | S u {i, j},
        the launch sides' size-weighted theta), whose theta is the merged
        proposal's reference."""
        cdef intp_t r, n_a, n_b, total
        cdef double* ref = self.sm_theta + SM_REFERENCE * self.T
        n_a = self._gather(i, m, 1)
        n_b = m + 2 - n_a
        for r in range(self.T):
            ref[r] = (n_a * self.sm_theta[SM_LAUNCH_A * self.T + r]
                      + n_b * self.sm_theta[SM_LAUNCH_B * self.T + r]) / (m + 2.0)
        total = self._gather_union(i, j, m)
        self._propose_set(self.sm_list, total, ref, SM_LAUNCH_MERGED, PROPOSE_LAUNCH)
        return 0

    cdef intp_t _gather_union(self, intp_t i, intp_t j, intp_t m) noexcept nogil:
        """sm_list: i, S, then j. Returns m + 2."""
        self._gather(i, m, -1)
        self.sm_list[m + 1] = j
        self.sm_list_union = True
        return m + 2

    cdef void _copy_slot(self, intp_t c, intp_t k) noexcept nogil:
        """Slot c's (sigma, theta) into parameter set k."""
        memcpy(self.sm_sigma + k * self.n, self.sigma + c * self.n, self.n * sizeof(intp_t))
        memcpy(self.sm_theta + k * self.T, self.theta + c * self.T, self.T * sizeof(double))

    cdef int _install(self, intp_t c, intp_t k) except -1 nogil:
        """Parameter set k becomes slot c's (sigma, theta) (and Beta-Gibbs stats)."""
        memcpy(self.sigma + c * self.n, self.sm_sigma + k * self.n, self.n * sizeof(intp_t))
        memcpy(self.theta + c * self.T, self.sm_theta + k * self.T, self.T * sizeof(double))
        if self.beta_gibbs:
            memcpy(self.code_sum + c * self.T, self.sm_sums + k * self.T, self.T * sizeof(double))
            memcpy(self.stage_count + c * self.T, self.sm_counts + k * self.T,
                   self.T * sizeof(double))
        self._refresh(c)
        return 0

    cdef inline double _centre_log_gm(self, const intp_t* centre, intp_t k) noexcept nogil:
        """log GM(centre | sigma_k, theta_k) of slot k, ``centre`` a cluster's sigma
        read as a top-T ranking."""
        return gm_log_density(centre, self.T, self.position + k * self.n,
                              self.theta + k * self.T, self.log_norm + k * (self.T + 1),
                              self.code)

    cdef double _partner_log_weights(
        self, const intp_t* centre, intp_t skip, intp_t extra,
    ) noexcept nogil:
        """``log_prob[b]`` <- log GM(centre | sigma_k, theta_k) for each active slot
        k = ``active[b]`` (-inf for ``skip``), and ``log_prob[K]`` <- the same
        under parameter set ``extra`` of the split-merge scratch (if ``extra`` >=
        0); ``centre`` is a cluster's sigma, read as a top-T ranking. Returns the
        log of their sum: the normaliser of the merge partner's probability."""
        cdef intp_t b, k, K = self.slots.n_active
        for b in range(K):
            k = self.slots.active[b]
            if k == skip:
                self.log_prob[b] = -INFINITY
                continue
            self.log_prob[b] = self._centre_log_gm(centre, k)
        if extra < 0:
            return log_sum_exp(self.log_prob, K)
        self.log_prob[K] = gm_log_density(
            centre, self.T, self.sm_pos + extra * self.n, self.sm_theta + extra * self.T,
            self.sm_norm + extra * (self.T + 1), self.code)
        return log_sum_exp(self.log_prob, K + 1)

    cdef intp_t _cluster_pair(self, intp_t* i, intp_t* j) noexcept nogil:
        """The Gibbs samplers' pick of (i, j) and S: by clusters, a merge by
        similar centres (the ``_split_merge`` docstring).

        A split (probability 1/2) picks a cluster uniformly among the K and an
        ordered pair (i, j) of its rankings. A merge picks a cluster A uniformly,
        then B with probability GM(sigma_A | sigma_B, theta_B) / Z_A over the
        other clusters (Z_A their sum), then i in A and j in B uniformly; it
        leaves log GM(sigma_A | B) - log Z_A in ``pick_log_partner``. S, the
        other rankings of those clusters, goes to ``sm_points`` in a uniform
        random order. Returns |S|, or -1 when there is nothing to propose (a
        singleton picked for a split; K = 1 for a merge).
        """
        cdef intp_t K = self.slots.n_active, c_a, c_b, r, k, m = 0
        cdef intp_t pick_i, pick_j, seen_a = 0, seen_b = 0
        cdef bint split = uniform(self.rng) < 0.5
        cdef double log_z
        if split:
            c_a = c_b = self.slots.active[uniform_index(self.rng, K)]
            if self.size[c_a] < 2:
                return -1
            pick_i = uniform_index(self.rng, self.size[c_a])
            pick_j = uniform_index(self.rng, self.size[c_a] - 1)
            pick_j += pick_j >= pick_i
        else:
            if K < 2:
                return -1
            c_a = self.slots.active[uniform_index(self.rng, K)]
            log_z = self._partner_log_weights(self.sigma + c_a * self.n, c_a, -1)
            # never A (its weight is 0); the draw overwrites the weights
            c_b = self.slots.active[draw_from_logs(self.log_prob, K, self.rng)]
            self.pick_log_partner = (
                self._centre_log_gm(self.sigma + c_a * self.n, c_b) - log_z)
            pick_i = uniform_index(self.rng, self.size[c_a])
            pick_j = uniform_index(self.rng, self.size[c_b])
        for r in range(self.N):
            k = self.labels[r]
            if k == c_a:
                if seen_a == pick_i:
                    i[0] = r
                elif split and seen_a == pick_j:
                    j[0] = r
                else:
                    self.sm_points[m] = r
                    m += 1
                seen_a += 1
            elif k == c_b:
                if seen_b == pick_j:
                    j[0] = r
                else:
                    self.sm_points[m] = r
                    m += 1
                seen_b += 1
        shuffle(self.sm_points, m, self.rng)
        return m

    cdef int _split_merge(self, intp_t proposal) except -1 nogil:
        """Split-merge proposal number ``proposal`` of the sweep, and its
        Metropolis-Hastings decision.

        The state is the clustering c and each cluster's (sigma, theta); the target
        is p(c, sigma, theta | X, alpha) proportional to the CRP prior times, per
        cluster k, P0(sigma_k, theta_k) prod_{x in k} GM(x | sigma_k, theta_k)
        (``_set_log_score`` is the log of that cluster factor, F(k), less
        log Gamma(n_k)).

        Proposal (Jain & Neal 2004's restricted Gibbs split-merge, here with
        explicit parameters). Pick an ordered pair (i, j) of distinct rankings:
        the sub-cluster sampler uniformly (at the sweep's start), whose pick has the same probability
        in both directions of the move; the Gibbs samplers by clusters
        (:meth:`_cluster_pair`), a merge's partner by the similarity of the
        centres, whose pick probabilities enter the ratio below
        (``split_select_log_ratio`` and log P(B | A) in the state the split
        makes, or in the merge's). Then draw a uniform random order of S, the
        other rankings of c_i's and c_j's clusters, and a fair coin that picks
        the kernel, "kept" or "fresh";
        build the launch state (:meth:`_launch`) from (i, j, S) alone: a two-way
        allocation of S with launch parameters (sigma^A, theta^A), (sigma^B,
        theta^B) for i's and j's sides (and, for "fresh", a reference theta^M for
        the union U = S u {i, j}, :meth:`_merge_launch`). Let Q(sigma, theta | D,
        theta_ref) be the parameter proposal of :meth:`_propose_set` (stagewise
        sigma under theta_ref, then theta from its exact conditional given
        sigma), a density we can evaluate at any (sigma, theta).

        * Split, if c_i = c_j = C. One restricted Gibbs scan from the launch
          allocates S to A (with i) and B (with j), with probability
          q_alloc(A, B) = prod over S of the chosen side's probability; then
          (sigma_B, theta_B) ~ Q(. | B, theta^B), and A's parameters are C's
          ("kept") or (sigma_A, theta_A) ~ Q(. | A, theta^A) ("fresh"). Its
          reverse is the merge of A and B proposed from the same (i, j, order,
          coin, launch): "kept" gives C i's side's parameters, C's own, with
          probability one; "fresh" proposes them with density Q(sigma_C, theta_C
          | U, theta^M). So

              log r = log alpha + log Gamma(n_A) + log Gamma(n_B) - log Gamma(n_C)
                      + F(A) + F(B) - F(C) + log Q_merge - log q_alloc(A, B)
                      - log Q(sigma_B, theta_B | B, theta^B) [- log Q(sigma_A,
                      theta_A | A, theta^A), "fresh"] [+ the pick's terms],

          with log Q_merge = 0 ("kept") or log Q(sigma_C, theta_C | U, theta^M).

        * Merge, if c_i != c_j. U takes c_i's parameters ("kept") or (sigma_M,
          theta_M) ~ Q(. | U, theta^M) ("fresh"). Its reverse is the split of U
          from the same launch and coin that restores the current clusters: the
          restricted scan forced to the current sides (q_alloc of the current
          allocation, A = c_i's cluster) and the densities of the current
          parameters that split would propose. log r is minus the split's
          formula with the roles swapped.

        The order, the coin and the launch are drawn alike whichever the state
        (they depend on the two clusters' union only), and the pair's
        probability is in the ratio where it differs between the directions, so
        they are auxiliary variables of a Metropolis-Hastings step on the
        augmented space,
        and each kernel leaves the posterior p(c, sigma, theta | X, alpha)
        invariant (Jain & Neal 2004, sec. 3; Tierney 1998): "kept" maps (C's
        parameters, B's proposed ones) to (A's, B's) by a copy, a bijection. The
        kernels' strengths differ. "fresh" refits both sides, which is what
        small clusters need (on 45 rankings of 7 items it accepted 6 of 22 and 7 of
        23 splits, "kept" alone 0 of 20 and 25); on large ones its merged
        proposal fails: the
        stagewise proposal and the exact conditional of sigma are both sharp
        there, at different rankings, and evaluating the current cluster's sigma
        under the former cost tens of thousands of nats on 5,000 full rankings
        of 20 items, where "kept" splits one cluster into the ten true ones.

        With ``sampler="beta-gibbs"`` the same step is run: it preserves the
        exact posterior above (the Slice-Gibbs target, with the GM likelihood and
        the B~eta prior), not the Beta approximation that the Beta-Gibbs moves
        target, so that chain is exact for neither; there the move only helps the
        clustering mix. Its Beta-Gibbs statistics are rebuilt for the new clusters.
        """
        cdef intp_t i, j, k, r, m, ci, cj, c_new, n_a, n_b, n_u
        cdef double log_ratio, log_q, log_back, f_a, f_b, f_u, log_z
        cdef const double* ref_a = self.sm_theta + SM_LAUNCH_A * self.T
        cdef const double* ref_b = self.sm_theta + SM_LAUNCH_B * self.T
        cdef const double* ref_m = self.sm_theta + SM_LAUNCH_MERGED * self.T
        cdef bint kept
        cdef intp_t K = self.slots.n_active
        cdef bint by_cluster = not self.subcluster
        if by_cluster:
            m = self._cluster_pair(&i, &j)
            if m < 0:
                return 0
        else:   # the pair drawn at the sweep's start (_draw_move_rows)
            i = self.move_rows[2 * proposal]
            j = self.move_rows[2 * proposal + 1]
            m = split_merge_others(self.rng, &self.labels[0], self.N, i, j, self.sm_points)
        if self.remote is not None:
            # the proposal's rankings read in one go where they are few enough
            # (i and j are, with the sweep's move rows): its launch and decision
            # then run here, on them, with no other round trip
            self.rows_here = self._fits_here(m + 2)
            if self.rows_here:
                self._fetch_rows(self.sm_points, m)
        ci = self.labels[i]
        cj = self.labels[j]
        kept = uniform(self.rng) < 0.5
        self.union_built = False   # (the work's statistics are another set's)
        self._launch(i, j, m)
        if not kept:
            self._merge_launch(i, j, m)
        if ci == cj:
            self.n_split += 1
            log_q = self._restricted_scan(m, -1)
            # the union first: it draws nothing (so the draws are those of any
            # order), and its statistics are still those the merge launch built
            n_u = self._gather_union(i, j, m)
            if kept:
                f_u = self._inherited_score(self.sm_list, n_u, ci, SM_MERGED)
                log_back = 0.0
            else:
                self._copy_slot(ci, SM_MERGED)
                log_back = self._propose_set(
                    self.sm_list, n_u, ref_m, SM_MERGED, PROPOSE_EVALUATE)
                f_u = self._set_log_score(SM_MERGED)
            self._prefetch_sides(i, j, m, False)
            n_a = self._gather(i, m, 1)
            if kept:
                f_a = self._inherited_score(self.sm_list, n_a, ci, SM_A)
            else:
                log_q += self._propose_set(self.sm_list, n_a, ref_a, SM_A, PROPOSE_DRAW)
                f_a = self._set_log_score(SM_A)
            n_b = self._gather(j, m, 0)
            log_q += self._propose_set(self.sm_list, n_b, ref_b, SM_B, PROPOSE_DRAW)
            f_b = self._set_log_score(SM_B)
            log_ratio = (log(self.alpha) + lgamma(<double> n_a) + lgamma(<double> n_b)
                         - lgamma(<double> n_u) + f_a + f_b - f_u + log_back - log_q)
            if by_cluster:   # the merge back picks B as A's partner among K + 1
                log_z = self._partner_log_weights(self.sm_sigma + SM_A * self.n, ci, SM_B)
                log_ratio += self.log_prob[K] - log_z + split_select_log_ratio(K, n_a, n_b)
            if log(uniform(self.rng)) < log_ratio:
                self.n_split_accepted += 1
                c_new = self._open_slot()
                self._install(ci, SM_A)
                self._install(c_new, SM_B)
                self.labels[j] = c_new
                for r in range(m):
                    k = self.sm_points[r]
                    if not self.sm_side[k]:
                        self.labels[k] = c_new
                self._resize(ci, -n_b)
                self._resize(c_new, n_b)
            return 0

        self.n_merge += 1
        n_u = self._gather_union(i, j, m)
        if kept:
            f_u = self._inherited_score(self.sm_list, n_u, ci, SM_MERGED)
            log_q = 0.0
        else:
            log_q = self._propose_set(self.sm_list, n_u, ref_m, SM_MERGED, PROPOSE_DRAW)
            f_u = self._set_log_score(SM_MERGED)
        log_back = self._restricted_scan(m, ci)
        self._prefetch_sides(i, j, m, False)
        n_a = self._gather(i, m, 1)
        if kept:
            f_a = self._inherited_score(self.sm_list, n_a, ci, SM_A)
        else:
            self._copy_slot(ci, SM_A)
            log_back += self._propose_set(self.sm_list, n_a, ref_a, SM_A, PROPOSE_EVALUATE)
            f_a = self._set_log_score(SM_A)
        n_b = self._gather(j, m, 0)
        self._copy_slot(cj, SM_B)
        log_back += self._propose_set(self.sm_list, n_b, ref_b, SM_B, PROPOSE_EVALUATE)
        f_b = self._set_log_score(SM_B)
        # minus the split's log ratio, whose merge proposal density is log_q here
        # and whose split proposal density log_back
        log_ratio = -(log(self.alpha) + lgamma(<double> n_a) + lgamma(<double> n_b)
                      - lgamma(<double> n_u) + f_a + f_b - f_u + log_q - log_back)
        if by_cluster:
            log_ratio -= self.pick_log_partner + split_select_log_ratio(K - 1, n_a, n_b)
        if log(uniform(self.rng)) < log_ratio:
            self.n_merge_accepted += 1
            for r in range(m):
                k = self.sm_points[r]
                self.labels[k] = ci
            self.labels[j] = ci
            self._install(ci, SM_MERGED)
            self._resize(ci, n_b)
            self._resize(cj, -n_b)
            self._close_slot(cj)
        return 0

    cdef double _singleton_log_weights(self, intp_t a, intp_t skip, intp_t less) noexcept nogil:
        """``log_prob[b]`` <- log n_k + log GM(pi_a | sigma_k, theta_k) for each active
        slot k = ``active[b]`` (-inf for ``skip``; slot ``less`` counted one member
        smaller); returns log Z, the log of their sum."""
        cdef intp_t b, k, K = self.slots.n_active
        cdef double size
        for b in range(K):
            k = self.slots.active[b]
            size = <double> (self.size[k] - (k == less))
            if k == skip or size <= 0.0:
                self.log_prob[b] = -INFINITY
                continue
            self.log_prob[b] = log(size) + self._gm_log_likelihood(a, k)
        return log_sum_exp(self.log_prob, K)

    cdef int _draw_move_rows(self) except -1 nogil:
        """The rankings a sub-cluster sweep's moves read, drawn before any move
        runs (they do not depend on the state), so that rankings held
        elsewhere are fetched at once: each split-merge proposal's ordered pair
        (i, j), uniform over distinct rankings, then each singleton proposal's
        type and the ranking a split-off reads (-1: an absorb)."""
        cdef intp_t t, n_pairs = 2 * self.n_split_merge
        cdef intp_t n_rows = n_pairs + SINGLETON_MOVES * self.n_split_merge
        if n_rows > self.n_move_rows:
            self.move_rows = <intp_t*> grow_array(self.move_rows, n_rows * sizeof(intp_t))
            self.n_move_rows = n_rows
        for t in range(0, n_pairs, 2):
            self.move_rows[t] = uniform_index(self.rng, self.N)
            self.move_rows[t + 1] = uniform_index(self.rng, self.N - 1)
            self.move_rows[t + 1] += self.move_rows[t + 1] >= self.move_rows[t]
        for t in range(n_pairs, n_rows):
            self.move_rows[t] = (-1 if uniform(self.rng) < 0.5
                                 else uniform_index(self.rng, self.N))
        if self.cache_slot != NULL:
            with gil:
                self._read_ahead(n_pairs, n_rows)
        return 0

    cdef int _read_ahead(self, intp_t n_pairs, intp_t n_rows) except -1:
        """Rankings held elsewhere: read in one go the rankings the sweep's moves
        will read, as far as the state at its start tells them: the moves' own
        (``move_rows[:n_rows]``), those of each proposal's two clusters that
        the proposal would read (``rows_here``; right until a move is
        accepted, after which a proposal reads what it lacks), and those of the
        clusters of one or two rankings (the singleton moves'). The proposals'
        clusters are read while they hold at most ``launch_values`` ranks in
        all."""
        cdef intp_t t, a, b, c, n_values = 0
        cdef signed char[::1] wanted = self._slot_marks()
        for t in range(0, n_pairs, 2):
            a = self.labels[self.move_rows[t]]
            b = self.labels[self.move_rows[t + 1]]
            # the ranks of the clusters not yet wanted
            c = ((not wanted[a]) * self.size[a]
                 + (b != a and not wanted[b]) * self.size[b]) * self.T
            if (self._fits_here(self.size[a] + (self.size[b] if b != a else 0))
                    and n_values + c <= self.launch_values):
                n_values += c
                wanted[a] = wanted[b] = 1
        self._most_read_ahead = max(self._most_read_ahead, n_values)
        self._fetch_array(np.concatenate([
            np.asarray(<intp_t[:n_rows]> self.move_rows) if n_rows
            else np.empty(0, dtype=np.intp),   # (no proposal: N < 2)
            self._rows_of(np.asarray(wanted) | self._slot_marks(small=True)),
        ]))
        return 0

    cdef object _slot_marks(self, bint small=False):
        """A mark per slot (capacity,): none, or (``small``) those of the clusters
        of one or two rankings, which the singleton moves may read (an absorb
        may pick a singleton, and a split-off leaves one where it takes a
        ranking of two)."""
        cdef intp_t a, c
        marks = np.zeros(max(self.slots.capacity, 1), dtype=np.int8)
        if small:
            for a in range(self.slots.n_active):
                c = self.slots.active[a]
                if self.size[c] <= 2:
                    marks[c] = 1
        return marks

    cdef object _rows_of(self, marks):
        """The rankings whose cluster is marked in ``marks`` (``_slot_marks``)."""
        return np.flatnonzero(np.asarray(marks)[np.asarray(self.labels)])

    cdef int _fetch_array(self, rows) except -1:
        """``_fetch_rows`` of an array of rankings' indices (any integer dtype)."""
        cdef const intp_t[::1] wanted = np.ascontiguousarray(rows, dtype=np.intp)
        if wanted.shape[0]:
            self._fetch_rows(&wanted[0], wanted.shape[0])
        return 0

    cdef int _singleton_phase(self) except -1 nogil:
        """SINGLETON_MOVES x ``n_split_merge`` singleton proposals, of the types
        and rankings ``_draw_move_rows`` drew.

        Rankings held elsewhere: those of the clusters of one or two rankings
        (``_slot_marks``) are read first, in one go, where the sweep's read
        ahead did not read them; a singleton made otherwise is read when
        picked."""
        cdef intp_t t, first = 2 * self.n_split_merge
        if self.cache_slot != NULL:
            with gil:
                self._fetch_array(self._rows_of(self._slot_marks(small=True)))
        for t in range(SINGLETON_MOVES * self.n_split_merge):
            self._singleton_move(self.move_rows[first + t])
        return 0

    cdef int _singleton_move(self, intp_t a) except -1 nogil:
        """One proposal of the sub-cluster sampler's exact singleton pair: an
        absorb (``a`` < 0) or the split-off of ranking ``a``.

        A cluster never empties in the anchored label step, so a cluster of one
        ranking leaves only by a merge, which rarely proposes it. The pair is the
        Gaussian sub-cluster chain's (``_subcluster_chain``), here with explicit
        parameters:

        * absorb (probability 1/2): pick a cluster c uniformly among the K; if it
          is a singleton {a} (and K > 1), propose a into cluster k drawn with
          probability n_k GM(pi_a | sigma_k, theta_k) / Z, Z the sum over the
          other clusters, c's (sigma, theta) dropped; log r = log K + log Z -
          log alpha - log p(pi_a) - log N;
        * split off (probability 1/2): pick a ranking a uniformly among the N; if
          its cluster c has n_c >= 2, propose {a} as a new cluster, c keeping its
          parameters, with (sigma, theta) drawn from their exact conditional
          given pi_a alone (:meth:`_new_cluster`); log r = log alpha +
          log p(pi_a) + log N - log (K + 1) - log Z', Z' computed with c one
          ranking smaller.

        p(pi_a) = (n - t_a)! / n! is the exact prior predictive of a new cluster
        (Lemma 1), and the ratio P0(sigma, theta) GM(pi_a | sigma, theta) /
        p(sigma, theta | pi_a) of the new cluster's term in the target to its
        proposal density is p(pi_a) for every (sigma, theta): the ratios do not
        depend on the singleton's parameters, so a split-off draws them only once
        accepted. The CRP factors and c's likelihood of pi_a cancel against the
        target's probability in the reverse absorption.
        """
        cdef intp_t K = self.slots.n_active, b, c, k, r
        cdef double log_z, log_ratio
        cdef double log_n = log(<double> self.N)
        if a < 0:
            c = self.slots.active[uniform_index(self.rng, K)]
            if self.size[c] != 1 or K < 2:
                return 0
            a = 0
            for r in range(self.N):
                if self.labels[r] == c:
                    a = r
                    break
            self._fetch_rows(&a, 1)
            log_z = self._singleton_log_weights(a, c, -1)
            b = draw_from_logs(self.log_prob, K, self.rng)  # never c: its weight is 0
            k = self.slots.active[b]
            log_ratio = (log(<double> K) + log_z - log(self.alpha)
                         - self.log_new[self.lengths[a]] - log_n)
            if log(uniform(self.rng)) < log_ratio:
                self.labels[a] = k
                self._resize(k, 1)
                self._resize(c, -1)
                self._close_slot(c)
            return 0
        c = self.labels[a]
        if self.size[c] < 2:
            return 0
        log_z = self._singleton_log_weights(a, -1, c)
        log_ratio = (log(self.alpha) + self.log_new[self.lengths[a]] + log_n
                     - log(<double> (K + 1)) - log_z)
        if log(uniform(self.rng)) < log_ratio:
            k = self._open_slot()
            self._new_cluster(k, a)
            self.labels[a] = k
            self._resize(c, -1)
            self._resize(k, 1)
        return 0

    cdef void _update_alpha(self) noexcept nogil:
        """alpha | K, N by Escobar & West (1995): given the clustering, alpha is
        independent of sigma, theta and the data."""
        self.alpha = escobar_west(self.rng, self.alpha, self.slots.n_active, self.N,
                                  self.alpha_shape, self.alpha_rate)
        self.log_alpha = log(self.alpha)

    # -- Python interface ------------------------------------------------------------

    @property
    def n_repeated_rows(self):
        """Rows equal to the row before them, whose scores can reuse its terms."""
        return sum(self.repeats_previous[i] for i in range(self.N))

    def sweep(self, intp_t n_sweeps=1):
        """Run ``n_sweeps`` full sweeps with the GIL released."""
        cdef intp_t s, t
        with self.bit_generator.lock, nogil:
            for s in range(n_sweeps):
                self._clear_rows()
                if self.subcluster:
                    self._parallel_labels(self.sweep_count)
                else:
                    self._assign()
                self._update_parameters()
                if self.subcluster:
                    self._draw_move_rows()
                for t in range(self.n_split_merge):
                    self._split_merge(t)
                    if self.remote is not None:   # the proposal's sets, read
                        with gil:
                            self._forget_sets()
                self.rows_here = False   # the cache holds no other sets' rankings
                if self.subcluster:
                    self._singleton_phase()
                if self.sample_alpha:
                    self._update_alpha()
                self.sweep_count += 1
            self.log_joint = self._compute_log_joint()
        self.split_merge_counts = {
            "split_proposed": self.n_split, "split_accepted": self.n_split_accepted,
            "merge_proposed": self.n_merge, "merge_accepted": self.n_merge_accepted,
        }

    @property
    def n_clusters(self):
        return self.slots.n_active

    def snapshot(self):
        """The current state, clusters numbered by first appearance in the data.

        Returns
        -------
        labels : ndarray of shape (N,), dtype int32
        sigmas : ndarray of shape (K, n)
        thetas : ndarray of shape (K, T)
        alpha : float
            The concentration of this state.
        sizes : ndarray of shape (K,)
        """
        labels, order = number_by_first_appearance(
            self.labels, self.slots.capacity)
        cdef intp_t capacity = self.slots.capacity
        sigmas = np.asarray(<intp_t[:capacity * self.n]> self.sigma).reshape(capacity, self.n)[order]
        thetas = np.asarray(<double[:capacity * self.T]> self.theta).reshape(capacity, self.T)[order]
        sizes = np.asarray(<intp_t[:capacity]> self.size)[order]
        return labels, sigmas, thetas, self.alpha, sizes

    def assignment_log_weights(self, intp_t i):
        """The unnormalised log-probabilities of ranking i's next assignment.

        For tests: ``weights[k]`` is the weight of the cluster numbered ``k`` in
        :meth:`snapshot` (-inf for ranking i's own cluster if i is alone in it), and
        ``new`` that of a new cluster. The state is left as it was, up to the
        internal order of the clusters.
        """
        cdef intp_t a, c_old = self.labels[i]
        labels = self.snapshot()[0]
        slot_of_label = {}
        for r in range(self.N):
            slot_of_label.setdefault(labels[r], self.labels[r])
        with nogil:
            self._fetch_rows(&i, 1)
            self._remove(i)
            self._score(i, False)
        scores = {self.slots.active[a]: self.log_prob[a] for a in range(self.slots.n_active)}
        new = self.log_prob[self.slots.n_active]
        with nogil:
            if self.size[c_old] == 0:
                self._open_slot_id(c_old)
            self._resize(c_old, 1)
            if self.beta_gibbs:
                self._add_stats(c_old, i, self.old_code, 1.0)
        weights = np.array([scores.get(slot_of_label[k], -np.inf) for k in range(len(slot_of_label))])
        return weights, new
