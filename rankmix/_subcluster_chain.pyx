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
   singletons that a sequential start or a split leaves, and move the rows of
   small clusters one at a time;
6. runs ``n_split_merge`` pair scans (below), restricted collapsed Gibbs scans
   of a cluster's and another's rows, which dissolve larger cut-offs;
7. draws alpha | K by Escobar & West's step when alpha has a prior.

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
  directions of the move. Those numbers are keyed by (sweep, proposal): the rows'
  by their Philox counters, the sides' parameters by a stream of their own
  (``CounterStream``), so a launch takes nothing from the chain's stream;
* the last scan's allocation is the proposal: a split draws it, with probability
  q(A, B) = the product of the chosen sides' probabilities; a merge computes the
  q(A, B) of the current pair of clusters;
* the Metropolis-Hastings ratio of a split of c (K clusters) into A and B is

      alpha Gamma(n_A) Gamma(n_B) / Gamma(n_c) * m(A) m(B) / m(c)
      * [1 / ((K + 1) K n_A n_B)] / [1 / (K n_c (n_c - 1)) q(A, B)],

  with m the cluster's marginal likelihood (parameters integrated out), and a
  merge's is its inverse. The target is p(c | X, alpha); the explicit parameters
  of step 1 are redrawn from their conditional at the start of every sweep;
* a merge's ratio is R q(A, B) with q(A, B) <= 1, so it draws its uniform first
  and, where log u >= log R, is rejected without its launch: most merges the
  chain proposes join clusters that the data keep apart, and end there. Since a
  launch draws nothing from the chain's stream, skipping one changes no other
  draw: the chain is the same, draw for draw, as one that runs every launch
  (``_launch_every_merge``, tested). R needs the merged cluster's state: where
  the family reads moments off a state (``family_merged_state``; every family
  of vectors or counts), it is built from the two clusters' states, and such
  a merge reads no row until its launch (with rows on Dask workers, no round
  trip); otherwise, or where that state is not numerically valid, from the
  rows of S.

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
  K Z / (2 alpha p(x_a) N), p(x_a) the prior predictive;
* split off (probability 1/4): pick a row a uniformly among the N; if its
  cluster c has n_c >= 2, propose {a} as a new cluster; the ratio is the
  inverse of the absorption back, 2 alpha p(x_a) N / ((K + 1) Z'), with Z'
  computed in the proposed state (c without a).

Picking the row among all N (not a cluster, then one of its rows) makes the
split-off's row independent of the state: the rows of all the sweep's
proposals are drawn first, and rows held elsewhere are read in one go.

Small clusters
--------------
A few points cut off their cluster (by the sequential start, or a split) stay
cut off: their explicit parameters, drawn from those points alone, fit them
better than their cluster's do, so the label step keeps them; a merge back
needs a launch that cuts exactly them off again, which it seldom does (on
Liang et al.'s d = 80, K = 40 data, both chains kept two clusters of two
points for all 60 sweeps, 80 nats each below the merged clustering, and the
chains disagreed). The singleton phase therefore also moves rows out of and
into small clusters (at most ``SMALL_CLUSTER_ROWS`` rows), one at a time, with
the collapsed predictives (``_point_move``):

* the cluster the absorb picks, if it has 2 to ``SMALL_CLUSTER_ROWS`` rows:
  one of its rows a, uniformly, proposed into another cluster k drawn with
  probability w_k / Z_{-c}, w_j = n_j p(x_a | j) (c's without a) and Z_{-c}
  their sum over j != c;
* split off's other half (probability 1/4): a row a uniformly among the N,
  whose cluster has n_c >= 2, proposed into a cluster k != c that stays small
  (n_k < ``SMALL_CLUSTER_ROWS``) with probability w_k over the sum of those
  clusters' weights.

A move from a small cluster into one that stays small can come from either
kind, so the ratio sums both kinds' proposal probabilities each way
(``_point_move``). Neither empties a cluster, so K
stays, and each move is undone by one of the two kinds.

Cut-offs
--------
Larger pieces cut off a cluster (tens to hundreds of rows) stay for the same
reasons, out of reach of the point moves: on Liang et al.'s d = 10 data with
full covariances, clusters of 7 to 248 rows beside their own, 600 nats of log
p(c, X) below the clustering without them. The pair scans of a sweep pick a
cluster A uniformly, and each (``_pair_scan``) a partner B, mostly by how much
the posterior favours their merge (a cut-off and its own cluster favour each
other most), and draws the label of each row of A + B in turn, in a random
order, between A and B from its collapsed conditional, the last row of each
staying: exact Gibbs steps of p(c | X) restricted to the two clusters,
accepted with the ratio of the partner's pick after and before, since the
pick depends on the state. A cut-off then shrinks or grows row by row, and
once down to one row the singleton moves absorb it. Only pairs whose merge
the posterior favours are scanned (``PAIR_SCAN_MIN_MERGE_LOG_ODDS``), as a
cut-off and its cluster are: the others' rows seldom move. A's partners'
odds cost K merged states (O(d^3) each for a full covariance, O(V) for
counts over V words), once a sweep and again after each scan that moves rows,
which is why the sweep's scans share one A. Pairs of more than
``PAIR_SCAN_ROWS`` rows are not scanned either, so that a scan's cost
(O(|S| d^2) for a full covariance) and, with rows held elsewhere, its one
read stay bounded.

Rows in blocks, in-process or on Dask workers
---------------------------------------------
Where the family has block moments (``_family.pxd``; the Gaussian families), every
state is built from them: the rows are cut into fixed blocks of ``ROW_BLOCK`` rows,
the moments of a cluster's rows within each block are computed alone and merged in
block order. The order of every floating-point sum is then a property of the
rows, not of the threads or of where the rows are, and the chain touches its
rows only through four operations: the label step (with the moments of the new
clusters, block by block), the moments of given rows, a launch scan over given
rows (with the moments the launch needs next), and the reading of given rows
(the singleton moves', the proposals' anchors and the sequential start's).
``remote``, when given, does them where the rows are (``_distributed.DaskRows``:
blocks of rows on Dask workers); the chain's global steps (parameters, split,
merge and singleton decisions, alpha) run where the chain is, and the draws are
the same to the last bit as with the rows in process
(``tests/test_distributed.py``).

With the rows elsewhere, each of those operations is a round trip, so a sweep
reads ahead what it can tell in advance, in one go: the rows its proposals
launch from, and the sample of rows each launch's first scan weighs, which
then runs where the chain is, and the rows the singleton moves will read
(``_read_ahead``). A launch then makes one round trip a scan after its first
(``n_launch - 1``: one by default).
"""

import copy

import numpy as np
from scipy import sparse

from cython.parallel cimport prange, threadid
from libc.math cimport INFINITY, NAN, exp, log
from libc.stdint cimport uint64_t
from libc.stdlib cimport free
from libc.string cimport memcpy, memmove, memset
from numpy.random cimport bitgen_t

from ._collapsed_chain cimport CollapsedChain
from ._collapsed_chain import CollapsedChain as _CollapsedChain
from ._counter_rng cimport CounterStream, counter_stream_start
from ._dp_prior cimport escobar_west, split_select_log_ratio
from ._family cimport (
    STATE_COUNT, ConjugateFamily, Family, family_add, family_log_kernel,
    family_log_likelihood_rows, family_log_marginal, family_merged_state,
    family_rebuild, family_remove, family_reset, family_rows_work_width,
)
from ._openmp cimport max_threads
from ._permutation cimport intp_t
from ._restricted cimport (
    PURPOSE_LABEL, PURPOSE_LAUNCH, find_anchors, precedes, row_draws,
)
from ._rng cimport (
    bitgen_pointer, draw_from_logs, draw_index, log_add, log_gamma_variate, log_pair,
    log_sum_exp, shuffle, uniform, uniform_index,
)
from ._slots cimport grow_array

# Rows per block of the block moments (module docstring): Dask chunks are cut at
# multiples of it. Larger blocks send fewer moments back from the workers; the
# draws depend on it (through the order of sums), so it is fixed, not tuned per
# machine. A Python global, so that tests can lower it on small data.
ROW_BLOCK = 65536

# Rows held elsewhere: at most this many values of the rows launches read ahead
# are read to the client. Here, the values of the first scans' samples in one
# read (``SubclusterChain._read_ahead``: one a sweep, and one more after each
# accepted move): rows x features, or for counts, which travel sparse, their
# stored counts and one more a row; launches past it run their first scan where
# the rows are. For rankings (``_mallows_chain``), ranks of a proposal's two
# clusters, whose launch and decision then run in the client. About 8 MB of
# doubles (12 bytes a stored count), a few milliseconds on a network, against
# round trips of tens of milliseconds saved; 0 reads none ahead. A Python
# global, read when a chain is made, so that tests can change it.
LAUNCH_PREFETCH_VALUES = 1 << 20

# A pair scan runs on two clusters whose merge the posterior favours at least
# this much (log odds; the scan's result must pass it too, so that the scan
# can be undone), where cut-offs are: elsewhere it would cost its rows and
# seldom move one. A Python global, read when a chain is made, so that tests
# can change it.
PAIR_SCAN_MIN_MERGE_LOG_ODDS = 0.0

# A pair scan runs on two clusters of at most this many rows together, so that
# its cost (and with rows held elsewhere, its read: one round trip) stays
# bounded. A Python global, read when a chain is made, so that tests can change
# it.
PAIR_SCAN_ROWS = 4096

# A row read here is found by its read and its position in it, one int
# (read << READ_SHIFT) + position in ``SubclusterChain.row_cache``.
READ_SHIFT = 32

# Rows of S below which a launch scan runs on one thread (OpenMP's start-up
# costs more than the work), and the fewest rows a thread of the label step
# gets; the results are the same either way.
cdef intp_t PARALLEL_LAUNCH_ROWS = 2048
cdef intp_t MIN_ROWS_PER_THREAD = 128
# Rows of the sequential start's sample (``_initialise_sequential``; a Python
# global, as ROW_BLOCK), and the sweep number that keys the random numbers of its
# label step.
SEQUENTIAL_SAMPLE = 4096
cdef uint64_t START_SWEEP = 0xFFFFFFFFFFFFFFFF
# Singleton proposals per split-merge proposal: each costs K collapsed
# predictives, about what a launch spends on K rows.
cdef intp_t SINGLETON_MOVES = 10
# Clusters of at most this many rows are small: the singleton phase moves their
# rows one at a time (``_point_move``). A few points cut off a cluster then
# rejoin it; the label step keeps them, whose explicit parameters fit them
# alone, and a merge into their cluster needs a launch that cuts them off again.
cdef intp_t SMALL_CLUSTER_ROWS = 4
cdef double LOG_2 = 0.6931471805599453
# The share of a pair scan's partner drawn uniformly (``_pair_scan``; the rest
# by how much the data favour the merge).
cdef double PARTNER_UNIFORM = 0.25
# The counter of a launch's parameter stream: (proposal, sweep,
# PURPOSE_LAUNCH_PARAMETERS, draw), a purpose no row's counter uses.
cdef uint64_t PURPOSE_LAUNCH_PARAMETERS = 0x1A0C4A9A00000000

# The bits of a launch row's allocation (``proposed``): its side (1 for i's), not
# yet allocated (the first scan), and in the sample of the next scan.
cdef enum:
    SIDE = 1
    UNALLOCATED = 2
    SAMPLED = 4

# The moments a launch scan of rows held elsewhere sends back (``rows_scan``): the
# sides' sampled rows (for the next scan), all their rows (a split's proposal), or
# none (a merge's last scan: its merged state is built before its launch).
cdef enum:
    MOMENTS_SAMPLED = 0
    MOMENTS_SIDES = 1
    MOMENTS_NONE = 2


# -- the row kernels, shared by the chain and by the blocks of rows on workers -------
# A family holds rows offset, offset + 1, ...; ``rows`` and anchors are global row
# indices (they key the random numbers), the family's points local ones.


cdef inline intp_t threads_for(intp_t n_rows, intp_t cap) noexcept nogil:
    """OpenMP's limit (threadpoolctl, OMP_NUM_THREADS), at most ``cap`` (0: none),
    and no more than the rows need."""
    cdef intp_t n = max_threads()
    if cap > 0 and cap < n:
        n = cap
    return max(1, min(n, n_rows // MIN_ROWS_PER_THREAD))


# rows a thread labels together: each cluster's parameters are read once per block
# of rows, not once per row (at d = 80 a full-covariance cluster's factor is 51 kB,
# and K of them do not stay in a core's cache from one row to the next)
cdef intp_t LABEL_BLOCK = 16


cdef inline intp_t label_stride(intp_t capacity, intp_t work_width) noexcept nogil:
    # per row of a block: weights (capacity + 1), four draws and one likelihood; then
    # the family's work for a block of rows; rounded up to 8 doubles (64 bytes) so
    # that threads do not share cache lines
    return (LABEL_BLOCK * (capacity + 1 + 4 + 1) + work_width + 7) // 8 * 8


cdef inline intp_t scan_stride(intp_t work_width) noexcept nogil:
    # per row of a block: four draws, the two sides' likelihoods, and the row and
    # its position among the rows weighed; then the family's work for a block of
    # rows; whole cache lines, as label_stride
    return (LABEL_BLOCK * (4 + 2 + 2) + work_width + 7) // 8 * 8


cdef void label_rows(
        const ConjugateFamily* f, intp_t n_rows, intp_t offset,
        const intp_t* labels, intp_t* new_labels, const uint64_t* key, uint64_t sweep,
        const double* row_uniforms, const intp_t* active, intp_t n_active,
        intp_t capacity,
        const double* params, intp_t P, const double* log_pi,
        const double* anchor_priority, const intp_t* anchor_row,
        double* scratch, intp_t n_threads) noexcept nogil:
    """The anchored label step (step 2) of the family's rows: ``new_labels``, which
    may be ``labels`` itself (a row reads its own old label only, before it
    writes its new one).

    A thread takes ``LABEL_BLOCK`` rows at a time and, cluster by cluster, weighs
    each of them; a row's weights and draw do not depend on the block it is in.
    ``row_uniforms``: the rows' priorities and label draws as ``find_anchors``
    kept them, or NULL to draw them here (the same values)."""
    cdef intp_t block, first, m, k, i, a, c, tid
    cdef intp_t n_blocks = (n_rows + LABEL_BLOCK - 1) // LABEL_BLOCK
    cdef intp_t stride = label_stride(capacity, family_rows_work_width(f))
    cdef intp_t row_width = capacity + 1
    cdef double* weights
    cdef double* draws
    cdef double* likelihood
    cdef double* work
    for block in prange(n_blocks, schedule="static", num_threads=n_threads):
        tid = threadid()
        weights = scratch + tid * stride                # (LABEL_BLOCK, capacity + 1)
        draws = weights + LABEL_BLOCK * row_width       # (LABEL_BLOCK, 4)
        likelihood = draws + LABEL_BLOCK * 4            # (LABEL_BLOCK,)
        work = likelihood + LABEL_BLOCK
        first = block * LABEL_BLOCK
        m = min(LABEL_BLOCK, n_rows - first)
        for k in range(m):
            if row_uniforms == NULL:
                row_draws(key, offset + first + k, sweep, PURPOSE_LABEL, draws + 4 * k)
            else:
                draws[4 * k] = row_uniforms[2 * (first + k)]
                draws[4 * k + 1] = row_uniforms[2 * (first + k) + 1]
        for a in range(n_active):
            c = active[a]
            # every row of the block, those the anchor excludes included (cheaper
            # than a branch per row; their values are not used)
            family_log_likelihood_rows(f, params + c * P, NULL, first, m, likelihood,
                                       work)
            for k in range(m):
                i = offset + first + k
                if precedes(anchor_priority[c], anchor_row[c], draws[4 * k], i):
                    weights[k * row_width + a] = log_pi[c] + likelihood[k]
                else:
                    weights[k * row_width + a] = -INFINITY
        for k in range(m):
            i = offset + first + k
            c = labels[first + k]
            if anchor_row[c] == i:
                new_labels[first + k] = c
            else:
                new_labels[first + k] = active[draw_index(
                    weights + k * row_width, n_active, draws[4 * k + 1])]


cdef void scan_rows(
        const ConjugateFamily* f, const intp_t* rows, intp_t m, intp_t offset,
        const uint64_t* key, uint64_t sweep, uint64_t purpose,
        const double* theta_a, const double* theta_b, double log_n_a, double log_n_b,
        double rate, bint evaluate, bint sampled_only, const char* sides,
        char* proposed, double* log_q, double* scratch, intp_t n_threads,
        const intp_t* points=NULL) noexcept nogil:
    """One restricted scan of a launch over ``rows[:m]``: each row's allocation
    ``proposed[k]`` (its side and whether it is sampled; not when ``evaluate``)
    and ``log_q[k]``, the log-probability of its side (``sides[k]`` when
    evaluating the current clusters).

    Row ``rows[k]`` (global: it keys the draws) is the family's point
    ``rows[k] - offset``, or ``points[k]`` where ``points`` is given (a family
    bound to some rows read from elsewhere, ``SubclusterChain._first_scan_here``).

    With ``sampled_only`` (a scan before the last, whose allocation serves only
    to draw the next scan's parameters from its sampled rows) the rows outside
    the sample are not weighed: their ``proposed[k]`` is 0 (no side, not
    sampled) and their ``log_q[k]`` 0. A sampled row's values are the same
    either way: its draws are its own, its likelihoods do not depend on the
    other rows of its block."""
    cdef intp_t block, first, n, n_weighed, k, q, r, tid
    cdef intp_t n_blocks = (m + LABEL_BLOCK - 1) // LABEL_BLOCK
    cdef intp_t stride = scan_stride(family_rows_work_width(f))
    cdef double* draws
    cdef double* like_a
    cdef double* like_b
    cdef intp_t* weighed      # the rows of the block that are weighed
    cdef intp_t* position     # and their positions in the block
    cdef double log_a, log_b
    for block in prange(n_blocks, schedule="static", num_threads=n_threads):
        tid = threadid()
        draws = scratch + tid * stride                  # (LABEL_BLOCK, 4)
        like_a = draws + 4 * LABEL_BLOCK                # (LABEL_BLOCK,)
        like_b = like_a + LABEL_BLOCK
        weighed = <intp_t*> (like_b + LABEL_BLOCK)      # (LABEL_BLOCK,)
        position = weighed + LABEL_BLOCK
        first = block * LABEL_BLOCK
        n = min(LABEL_BLOCK, m - first)
        n_weighed = 0
        for q in range(n):
            k = first + q
            row_draws(key, rows[k], sweep, purpose, draws + 4 * q)
            if sampled_only and not draws[4 * q + 1] < rate:
                proposed[k] = 0
                log_q[k] = 0.0
            else:
                weighed[n_weighed] = rows[k] if points == NULL else points[k] + offset
                position[n_weighed] = q
                n_weighed = n_weighed + 1
        if n_weighed > 0:
            family_log_likelihood_rows(f, theta_a, weighed, offset, n_weighed, like_a,
                                       <double*> (position + LABEL_BLOCK))
            family_log_likelihood_rows(f, theta_b, weighed, offset, n_weighed, like_b,
                                       <double*> (position + LABEL_BLOCK))
        for r in range(n_weighed):
            q = position[r]
            k = first + q
            # the shares overwrite the likelihoods (a prange body cannot take
            # the address of a private variable)
            log_pair(log_n_a + like_a[r], log_n_b + like_b[r], like_a + r, like_b + r)
            log_a = like_a[r]
            log_b = like_b[r]
            if not evaluate:
                proposed[k] = ((log(draws[4 * q]) < log_a)
                               | (SAMPLED if draws[4 * q + 1] < rate else 0))
            if (sides[k] if evaluate else proposed[k] & SIDE):
                log_q[k] = log_a
            else:
                log_q[k] = log_b


cdef inline intp_t block_of(const intp_t* rows, intp_t point, intp_t row_block) noexcept nogil:
    """The block of a family's point: of its row ``rows[point]`` (global), or of
    the point itself where ``rows`` is NULL (a family of consecutive rows)."""
    return (point if rows == NULL else rows[point]) // row_block


cdef void fold_runs(
        const ConjugateFamily* f, const intp_t* points, intp_t n, intp_t row_block,
        double* acc, double* part, const intp_t* rows=NULL) noexcept nogil:
    """Merge into ``acc`` the moments of each run of ``points[:n]`` (sorted) that
    lies within one block of ``row_block`` rows, in block order (``block_of``:
    a point's block is that of its global row ``rows[point]`` where given)."""
    cdef intp_t start = 0, stop, block
    while start < n:
        stop = start + 1
        block = block_of(rows, points[start], row_block)
        while stop < n and block_of(rows, points[stop], row_block) == block:
            stop += 1
        f.moments(f.segments.context, points + start, stop - start, part)
        f.moments_merge(f.segments.context, acc, part)
        start = stop


cdef int blocked_state(
        const ConjugateFamily* f, double* state, const intp_t* points, intp_t n,
        intp_t row_block, double* acc, double* part, const intp_t* rows=NULL) noexcept nogil:
    """``state`` <- the state of ``points[:n]`` (sorted) from block moments
    (``rows``: as in ``fold_runs``)."""
    acc[0] = 0.0
    fold_runs(f, points, n, row_block, acc, part, rows)
    return f.moments_state(f.segments.context, acc, state)


cdef void fold_partials(
        const ConjugateFamily* f, const double* partials, intp_t n_blocks,
        intp_t n_groups, intp_t group, double* acc) noexcept nogil:
    """``acc`` <- the merge, in block order, of one group's block moments
    ``partials[b, group]`` of an (n_blocks, n_groups, moments_width) array."""
    cdef intp_t b, M = f.moments_width
    acc[0] = 0.0
    for b in range(n_blocks):
        f.moments_merge(f.segments.context, acc, partials + (b * n_groups + group) * M)


cdef void fold_split(
        const ConjugateFamily* f, const double* headers, intp_t n_blocks,
        intp_t n_groups, intp_t group, intp_t H, const double* exact, double* acc,
        double* part) noexcept nogil:
    """``acc`` <- one group's block moments merged in block order, as
    ``fold_partials`` merges them, from ``SplitMoments``: their first H columns
    by block (``headers[b, group]`` of an (n_blocks, n_groups, H) array) and the
    sums over the blocks of the others (``exact``, M - H). Those columns hold
    integers that the family's merge adds (``Family.exact_moments_from``), so
    their sum is the same in any order and the merge is ``fold_partials``'s to
    the bit. ``part`` is scratch of M doubles."""
    cdef intp_t b, k, M = f.moments_width
    acc[0] = 0.0
    memset(part + H, 0, (M - H) * sizeof(double))
    for b in range(n_blocks):
        memcpy(part, headers + (b * n_groups + group) * H, H * sizeof(double))
        f.moments_merge(f.segments.context, acc, part)
    if acc[STATE_COUNT] != 0.0:   # (an empty group's moments hold only their count)
        for k in range(M - H):
            acc[H + k] += exact[k]


cdef inline void sort_block(
        intp_t lo, intp_t hi, const intp_t* groups, intp_t n_groups, intp_t* order,
        intp_t* start) noexcept nogil:
    """Counting sort of the rows lo..hi-1 by group (``groups[k]``, -1 for none), in
    row order: order[:] <- the rows of group 0, then of group 1, ..., and
    start[g] <- the end of group g's in ``order`` (``start``: n_groups + 1)."""
    cdef intp_t g, k
    for g in range(n_groups + 1):
        start[g] = 0
    for k in range(lo, hi):
        if groups[k] >= 0:
            start[groups[k] + 1] += 1
    for g in range(n_groups):
        start[g + 1] += start[g]
    for k in range(lo, hi):
        if groups[k] >= 0:
            order[start[groups[k]]] = k
            start[groups[k]] += 1


cdef void group_moments(
        const ConjugateFamily* f, intp_t n_rows, const intp_t* groups, intp_t n_groups,
        intp_t row_block, double* out, intp_t* order, intp_t* counts,
        intp_t n_threads) noexcept nogil:
    """out[b, g] <- the moments of the rows of group g (``groups[k]``, -1 for none)
    in block b, for every block of the family's ``n_rows`` rows (which start at a
    block boundary). ``order`` (n_rows,) and ``counts`` (n_blocks, n_groups + 1)
    are scratch; the blocks are shared among the threads."""
    cdef intp_t b, g, lo, hi, M = f.moments_width
    cdef intp_t n_blocks = (n_rows + row_block - 1) // row_block
    cdef intp_t* start
    for b in prange(n_blocks, schedule="dynamic", num_threads=n_threads):
        lo = b * row_block
        hi = min(lo + row_block, n_rows)
        start = counts + b * (n_groups + 1)
        sort_block(lo, hi, groups, n_groups, order + lo, start)
        for g in range(n_groups):
            f.moments(f.segments.context, order + lo + (start[g - 1] if g > 0 else 0),
                      start[g] - (start[g - 1] if g > 0 else 0),
                      out + (b * n_groups + g) * M)


cdef void split_group_moments(
        const ConjugateFamily* f, intp_t n_rows, const intp_t* groups, intp_t n_groups,
        intp_t row_block, intp_t H, double* headers, double* exact, double* scratch,
        intp_t* order, intp_t* start, intp_t n_threads) noexcept nogil:
    """``SplitMoments`` of the family's rows by group without their blocks' table:
    headers[b, g] <- the first H moments of the rows of group g in block b, and
    exact[g] <- the others summed over the blocks (integers: the same sum in any
    order). The blocks are taken in turn, a block's groups shared among the
    threads, so that the scratch is one block's: ``scratch`` (n_groups, M),
    ``order`` (row_block,), ``start`` (n_groups + 1,)."""
    cdef intp_t b, g, k, lo, hi, first, M = f.moments_width, E = f.moments_width - H
    cdef intp_t n_blocks = (n_rows + row_block - 1) // row_block
    memset(exact, 0, n_groups * E * sizeof(double))
    for b in range(n_blocks):
        lo = b * row_block
        hi = min(lo + row_block, n_rows)
        sort_block(lo, hi, groups, n_groups, order, start)
        for g in prange(n_groups, schedule="dynamic", num_threads=n_threads):
            first = start[g - 1] if g > 0 else 0
            f.moments(f.segments.context, order + first, start[g] - first,
                      scratch + g * M)
            memcpy(headers + (b * n_groups + g) * H, scratch + g * M, H * sizeof(double))
            for k in range(E):
                exact[g * E + k] += scratch[g * M + H + k]


cdef class SubclusterChain(CollapsedChain):
    """State and sweeps of one sub-cluster chain (see the module docstring).

    Parameters
    ----------
    family : Family
        The cluster family bound to the data (with ``remote``: to no rows); it must
        draw explicit parameters.
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
    remote : object, default=None
        Where the rows are, when not in this process (``_distributed.DaskRows``);
        the family must then have block moments.
    """

    cdef public intp_t thread_cap    # at most this many threads (0: no cap)
    cdef uint64_t key[2]
    cdef intp_t P                    # doubles per parameter block
    cdef intp_t M                    # doubles per moments block (0: none)
    cdef intp_t row_block
    cdef intp_t sequential_sample
    cdef object remote               # None, or the holder of the rows
    cdef object row_family           # remote: the family bound to the row a move reads
    cdef dict row_cache              # remote: rows read this sweep: index ->
                                     # its place (``_places``)
    cdef list reads                  # remote: the reads of this sweep, as read,
    cdef list read_rows              # their global rows (increasing),
    cdef list read_families          # and a family bound to each (None: not yet)
    cdef dict launch_samples         # remote: the first scans' samples read, by proposal
    cdef intp_t prefetch_values      # remote: LAUNCH_PREFETCH_VALUES when made
    cdef object row_values           # remote: stored counts of each row of counts
                                     # (None: rows travel dense)
    cdef double mean_row_values      # remote: values a read brings a row, on average
    cdef object scan_moments         # remote: the moments the last scan sent back
    cdef intp_t* singleton_rows      # (10 n_split_merge,) the singleton proposals
    cdef intp_t pair_scan_rows       # PAIR_SCAN_ROWS when made
    cdef double min_merge_log_odds   # PAIR_SCAN_MIN_MERGE_LOG_ODDS when made
    cdef intp_t* scan_points         # (pair_scan_rows,) the rows a pair scan visits, as
                                     # points of the family that reads them
    cdef ConjugateFamily row_table
    cdef intp_t n_proposals, n_launch
    cdef double launch_sample_rows
    cdef CounterStream launch_stream  # the sides' parameter draws of a launch
    # (tests) run the launch of every merge, also where the ratio before it
    # rejects the merge: the draws are the same either way; and the number of
    # merges so rejected
    cdef public bint _launch_every_merge
    cdef public bint _singleton_moves_only   # (tests) a sweep of singleton moves alone
    cdef public bint _pair_scans_only        # (tests) a sweep of pair scans alone
    cdef public intp_t _scans_accepted       # pair scans that moved rows and were kept
    cdef public intp_t _scan_reads           # rows held elsewhere: pair scans that read rows
    # (tests) compute A's partners' probabilities afresh for every pair scan:
    # the same draws as keeping them (``_pair_scan_phase``)
    cdef public bint _partner_odds_every_scan
    cdef public intp_t _merges_rejected_early
    cdef public intp_t _most_read_ahead   # the most sample values one read held
    cdef double* params              # (capacity, P)
    cdef double* log_pi              # (capacity,) unnormalised log weights
    cdef double* partner_kept        # (capacity,) a pair scan's partner probabilities
    cdef double* anchor_priority     # (capacity,)
    cdef intp_t* anchor_row          # (capacity,)
    cdef double* row_uniforms        # (N, 2) priorities and label draws (find_anchors)
    cdef double* scratch             # per thread: the label step's or a scan's
    cdef intp_t scratch_size
    cdef double* moments_scratch     # per thread: two moments blocks
    cdef intp_t* run_start           # (blocks + 1,) a state's runs of rows, by block
    cdef double* run_moments         # (blocks, M) their moments (_state_of)
    # launch; arrays indexed by k, the position in ``launch_rows`` (and ``side``,
    # the base's (N,) array, likewise: 1 for i's side)
    cdef intp_t* launch_rows         # (N,) S less i and j, in increasing order
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
                 intp_t n_launch=2, double launch_sample_rows=1024.0, remote=None):
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
        if remote is not None:
            if not family.has_block_moments:
                raise ValueError(
                    f"{type(family).__name__} has no block moments: its rows cannot "
                    "be held elsewhere.")
        self.remote = remote
        self.row_block = ROW_BLOCK if remote is None else remote.row_block
        if self.row_block < 1:
            raise ValueError(f"the row block must be >= 1, got {self.row_block}")
        self.launch_sample_rows = launch_sample_rows
        self.sequential_sample = max(1, SEQUENTIAL_SAMPLE)
        self.P = family.c.param_width
        self.M = family.c.moments_width
        # a family's callbacks write to its context's scratch: a thread that
        # rebuilds states needs a copy of its own (the data are shared). Made
        # before the base's start, which builds the first states.
        self.thread_families = [family.copy() for _ in range(max(1, max_threads()))]
        self.n_tables = len(self.thread_families)
        self.thread_tables = <ConjugateFamily*> grow_array(
            NULL, self.n_tables * sizeof(ConjugateFamily))
        for t, copy in enumerate(self.thread_families):
            self.thread_tables[t] = (<Family> copy).c
        self.moments_scratch = <double*> grow_array(
            NULL, self.n_tables * 2 * max(self.M, 1) * sizeof(double))
        n_blocks = family.n_points // self.row_block + 1
        self.run_start = <intp_t*> grow_array(NULL, (n_blocks + 1) * sizeof(intp_t))
        self.run_moments = <double*> grow_array(
            NULL, n_blocks * max(self.M, 1) * sizeof(double))
        # the rows' Philox key, before the start (whose label step uses it)
        keys = np.random.Generator(getattr(bit_generator, "bit_generator", bit_generator)
                                   ).integers(0, 2**64, size=2, dtype=np.uint64)
        self.key[0] = keys[0]
        self.key[1] = keys[1]
        self.n_proposals = n_split_merge
        self.n_launch = n_launch
        # the work arrays, before the start, which uses some of them
        n = max(family.n_points if remote is None else remote.n_rows, 1)
        # (the label step of rows held elsewhere draws their uniforms there)
        self.row_uniforms = <double*> grow_array(
            NULL, (2 * n if remote is None else 1) * sizeof(double))
        self.launch_rows = <intp_t*> grow_array(NULL, n * sizeof(intp_t))
        self.launch_log_q = <double*> grow_array(NULL, n * sizeof(double))
        self.side_members = <intp_t*> grow_array(NULL, n * sizeof(intp_t))
        self.proposed = <char*> grow_array(NULL, n * sizeof(char))
        self.side_params = <double*> grow_array(NULL, 2 * self.P * sizeof(double))
        self.singleton_rows = <intp_t*> grow_array(
            NULL, SINGLETON_MOVES * n_split_merge * sizeof(intp_t))
        self.pair_scan_rows = max(1, PAIR_SCAN_ROWS)
        self.min_merge_log_odds = PAIR_SCAN_MIN_MERGE_LOG_ODDS
        self.scan_points = <intp_t*> grow_array(
            NULL, min(n, self.pair_scan_rows) * sizeof(intp_t))
        self.row_cache = {}
        self.reads, self.read_rows, self.read_families = [], [], []
        self.launch_samples = {}
        self.prefetch_values = LAUNCH_PREFETCH_VALUES
        self.row_values = (remote.row_values() if remote is not None
                           and family.sparse_rows and self.prefetch_values > 0 else None)
        if remote is not None:
            self.mean_row_values = (max(1, remote.n_features) if self.row_values is None
                                    else 1.0 + np.mean(self.row_values))
        super().__init__(family, alpha, False, 0, alpha_prior, init_clusters,
                         bit_generator, None, 1e-32, 0, sequential_init,
                         None if remote is None else remote.prior_predictive())

    def __dealloc__(self):
        free(self.params); free(self.log_pi); free(self.partner_kept)
        free(self.anchor_priority); free(self.anchor_row)
        free(self.row_uniforms)
        free(self.scratch); free(self.moments_scratch)
        free(self.run_start); free(self.run_moments)
        free(self.launch_rows); free(self.launch_log_q)
        free(self.side_params); free(self.side_members); free(self.proposed)
        free(self.thread_tables); free(self.rebuild_status); free(self.singleton_rows)
        free(self.scan_points)

    cdef int _grow(self, intp_t capacity) except -1 nogil:
        """The base's slot arrays, and the per-slot parameters and anchors."""
        if capacity <= self.slots.capacity:
            return 0
        self.params = <double*> grow_array(self.params, capacity * self.P * sizeof(double))
        self.log_pi = <double*> grow_array(self.log_pi, capacity * sizeof(double))
        self.partner_kept = <double*> grow_array(self.partner_kept, capacity * sizeof(double))
        self.anchor_priority = <double*> grow_array(
            self.anchor_priority, capacity * sizeof(double))
        self.anchor_row = <intp_t*> grow_array(self.anchor_row, capacity * sizeof(intp_t))
        self.rebuild_status = <int*> grow_array(self.rebuild_status, capacity * sizeof(int))
        CollapsedChain._grow(self, capacity)
        return 0

    cdef intp_t _n_threads(self, intp_t n_rows) noexcept nogil:
        """Threads for a loop over ``n_rows`` rows (``threads_for``, the engine's
        cap when chains run side by side)."""
        return threads_for(n_rows, self.thread_cap)

    cdef double* _thread_scratch(self, intp_t n_threads) except NULL nogil:
        """Per-thread scratch for the parallel loops, grown to the slots and threads."""
        cdef intp_t width = family_rows_work_width(&self.f)
        cdef intp_t size = n_threads * max(label_stride(self.slots.capacity, width),
                                           scan_stride(width))
        if size > self.scratch_size:
            self.scratch = <double*> grow_array(self.scratch, size * sizeof(double))
            self.scratch_size = size
        return self.scratch

    # -- the states, from the rows wherever they are ------------------------------

    cdef int _rebuild_all(self) except -1 nogil:
        """Every active cluster's state afresh from its members, the clusters
        shared among the threads (each cluster's state is one thread's work, so
        the states do not depend on the number of threads)."""
        cdef intp_t a, c, tid, n_active = self.slots.n_active, W = self.W, M = self.M
        cdef intp_t n_threads = min(self._n_threads(self.N), self.n_tables, n_active)
        cdef intp_t row_block = self.row_block
        cdef bint blocked = M > 0
        cdef double* states = self.states
        cdef double* scratch = self.moments_scratch
        cdef const intp_t* members = self.members
        cdef const intp_t* start = self.slots.member_start
        cdef const intp_t* active = self.slots.active
        cdef ConjugateFamily* tables = self.thread_tables
        cdef int* status = self.rebuild_status
        self._group_members()
        if self.remote is not None:
            with gil:
                self._states_from_partials(self.remote.group_partials(
                    np.asarray(self.labels), self._group_of_slot(), n_active,
                    self.row_block))
            return 0
        for a in prange(n_active, schedule="dynamic", num_threads=max(1, n_threads)):
            tid = threadid()
            c = active[a]
            if blocked:
                status[a] = blocked_state(
                    &tables[tid], states + c * W, members + start[c],
                    start[c + 1] - start[c], row_block, scratch + 2 * M * tid,
                    scratch + 2 * M * tid + M)
            else:
                status[a] = family_rebuild(&tables[tid], states + c * W,
                                           members + start[c], start[c + 1] - start[c])
        for a in range(n_active):
            if status[a] < 0:
                self._fail()
        return 0

    cdef int _state_of(self, double* state, const intp_t* points, intp_t n) except -1 nogil:
        """``state`` <- the state of the rows ``points[:n]`` (sorted)."""
        cdef int status
        if self.M == 0:
            status = family_rebuild(&self.f, state, points, n)
        elif self.remote is not None:
            with gil:
                status = self._group_state(self.remote.row_partials(
                    np.asarray(<const intp_t[:n]> points).copy() if n
                    else np.empty(0, np.intp), np.zeros(n, np.intp), 1,
                    self.row_block), 0, state)
        elif n < PARALLEL_LAUNCH_ROWS or self._n_threads(n) == 1:
            status = blocked_state(&self.f, state, points, n, self.row_block,
                                   self.moments_scratch, self.moments_scratch + self.M)
        else:
            status = self._runs_state(state, points, n)
        if status < 0:
            self._fail()
        return 0

    cdef int _runs_state(self, double* state, const intp_t* points, intp_t n) noexcept nogil:
        """``blocked_state`` with the runs' moments computed in parallel (each by
        one thread, in its own family table) and merged in block order, as
        ``fold_runs`` merges them: the same state to the bit."""
        cdef intp_t r, tid, n_runs = 0, M = self.M, row_block = self.row_block
        cdef intp_t n_threads = min(self._n_threads(n), self.n_tables)
        cdef intp_t* start = self.run_start
        cdef double* part = self.run_moments
        cdef ConjugateFamily* tables = self.thread_tables
        start[0] = 0
        for r in range(1, n):
            if points[r] // row_block != points[r - 1] // row_block:
                n_runs += 1
                start[n_runs] = r
        n_runs += 1
        start[n_runs] = n
        for r in prange(n_runs, schedule="dynamic", num_threads=n_threads):
            tid = threadid()
            tables[tid].moments(tables[tid].segments.context, points + start[r],
                                start[r + 1] - start[r], part + r * M)
        self.moments_scratch[0] = 0.0
        for r in range(n_runs):
            self.f.moments_merge(self.f.segments.context, self.moments_scratch, part + r * M)
        return self.f.moments_state(self.f.segments.context, self.moments_scratch, state)

    cdef int _state_from_partials(self, double[:, :, ::1] partials, intp_t group,
                                  double* state) except? -1:
        """``state`` <- one group's state from (n_blocks, n_groups, M) block moments."""
        if partials.shape[0] and (partials.shape[2] != self.M
                                  or not 0 <= group < partials.shape[1]):
            raise RuntimeError(
                f"the rows' moments have shape {np.shape(partials)}, not "
                f"(blocks, > {group}, {self.M})")
        if partials.shape[0] == 0:
            family_reset(&self.f, state)
            return 0
        fold_partials(&self.f, &partials[0, 0, 0], partials.shape[0], partials.shape[1],
                      group, self.moments_scratch)
        return self.f.moments_state(self.f.segments.context, self.moments_scratch, state)

    cdef int _state_from_split(self, split, intp_t group, double* state) except? -1:
        """``state`` <- one group's state from ``SplitMoments``."""
        cdef const double[:, :, ::1] headers = split.headers
        cdef const double[:, ::1] exact = split.exact
        cdef intp_t H = headers.shape[2]
        if (H != self.family.exact_moments_from or exact.shape[1] != self.M - H
                or not 0 <= group < headers.shape[1] == exact.shape[0]):
            raise RuntimeError(
                f"the rows' moments have shapes {np.shape(split.headers)} and "
                f"{np.shape(split.exact)}, not (blocks, > {group}, "
                f"{self.family.exact_moments_from}) and (> {group}, "
                f"{self.M - (self.family.exact_moments_from or 0)})")
        if headers.shape[0] == 0:
            family_reset(&self.f, state)
            return 0
        fold_split(&self.f, &headers[0, 0, 0], headers.shape[0], headers.shape[1], group,
                   H, &exact[group, 0], self.moments_scratch,
                   self.moments_scratch + self.M)
        return self.f.moments_state(self.f.segments.context, self.moments_scratch, state)

    cdef int _group_state(self, partials, intp_t group, double* state) except? -1:
        """``state`` <- one group's state from block moments sent back by the rows'
        holder: an (n_blocks, n_groups, M) array, or ``SplitMoments``."""
        if isinstance(partials, SplitMoments):
            return self._state_from_split(partials, group, state)
        return self._state_from_partials(
            np.ascontiguousarray(partials, dtype=np.float64), group, state)

    cdef int _states_from_partials(self, partials) except -1:
        """Every active cluster's state from block moments grouped by active index
        (an array or ``SplitMoments``)."""
        cdef intp_t a
        for a in range(self.slots.n_active):
            if self._group_state(partials, a, self._state(self.slots.active[a])) < 0:
                self._fail()
        return 0

    cdef int _fetch_rows(self, rows) except -1:
        """Read the rows (those >= 0) held elsewhere into ``row_cache``, at once
        (those not read already; none, no round trip)."""
        wanted = np.array([row for row in np.unique(rows[rows >= 0])
                           if int(row) not in self.row_cache], dtype=np.intp)
        if len(wanted) == 0:
            return 0
        x = self.remote.rows(wanted)
        # kept as read (dense, or counts as CSR); each row found by its place
        x = x.tocsr() if hasattr(x, "tocsr") else np.ascontiguousarray(x, dtype=np.float64)
        read = len(self.reads)
        self.reads.append(x)
        self.read_rows.append(wanted)
        self.read_families.append(None)
        # (ints, not tuples: a dict of ints is not tracked by Python's cycle
        # collector, which would otherwise walk it as reads of 10^5 rows fill it)
        self.row_cache.update(zip(wanted.tolist(),
                                  ((read << READ_SHIFT) + np.arange(len(wanted))).tolist()))
        return 0

    cdef object _places(self, rows):
        """(len(rows), 2): the read of each of the rows ``rows`` (read here) and
        its position in that read."""
        codes = np.array([self.row_cache[int(row)] for row in rows], dtype=np.int64)
        return np.column_stack([codes >> READ_SHIFT, codes & ((1 << READ_SHIFT) - 1)]
                               ).astype(np.intp)

    cdef tuple _bound_rows(self, rows):
        """``(family, global_rows, points)``: a family bound to rows read here
        that holds the rows ``rows`` (global, increasing), the global row of
        each of its points, and the points of ``rows``. The family of the read
        that holds them all, bound once a read, so that a sweep binds a family
        to each read rather than to each launch's sample and each row a move
        reads; else a family bound to ``rows`` alone."""
        places = self._places(rows)
        if len(places) and np.all(places[:, 0] == places[0, 0]):
            read = int(places[0, 0])
            if self.read_families[read] is None:
                self.read_families[read] = self.family.rebound(self.reads[read])
            return self.read_families[read], self.read_rows[read], places[:, 1]
        return (self.family.rebound(self._rows_at(places)), rows,
                np.arange(len(rows), dtype=np.intp))

    cdef object _rows_at(self, places):
        """The rows read at ``places`` (``_places``: of rows of several reads), in
        that order, as one matrix to bind a family to: dense, or CSR as they
        were read (each read's rows taken at once, then put in order)."""
        reads = np.unique(places[:, 0])
        mine = [np.flatnonzero(places[:, 0] == read) for read in reads]
        parts = [self.reads[read][places[at, 1]] for read, at in zip(reads, mine)]
        stacked = (sparse.vstack(parts, format="csr") if sparse.issparse(parts[0])
                   else np.vstack(parts))
        return stacked[np.argsort(np.concatenate(mine))]

    cdef intp_t _read_values(self, rows) except -1:
        """How many values reading ``rows`` brings, counted before the read: a
        dense row n_features, a row of counts its stored counts and one more
        (its end, in the read's index)."""
        if self.row_values is None:
            return len(rows) * max(1, self.remote.n_features)
        return int(np.sum(self.row_values[rows])) + len(rows)

    cdef intp_t _values_read(self, rows) except -1:
        """How many values the rows ``rows`` brought when read (``row_cache``),
        counted as ``_read_values`` counts them."""
        if len(rows) == 0 or self.row_values is None:
            return len(rows) * max(1, self.remote.n_features)
        # (rows of counts: their reads are CSR, whose index gives each row's count)
        places = self._places(rows)
        total = len(rows)
        for read in np.unique(places[:, 0]):
            stored = np.diff(self.reads[read].indptr)
            total += int(stored[places[places[:, 0] == read, 1]].sum())
        return total

    cdef object _key_array(self):
        """The rows' Philox key, as an array to send where the rows are."""
        return np.array([self.key[0], self.key[1]], dtype=np.uint64)

    cdef object _group_of_slot(self):
        """(capacity,) each slot's position among the active ones, -1 if free."""
        cdef intp_t a
        groups = np.full(self.slots.capacity, -1, dtype=np.intp)
        for a in range(self.slots.n_active):
            groups[self.slots.active[a]] = a
        return groups

    cdef const ConjugateFamily* _row_table(self, intp_t row, intp_t* point) except NULL nogil:
        """The family table and point index under which a move reads row ``row``:
        the chain's own, or (rows held elsewhere) the family of the read that
        brought it (``_bound_rows``)."""
        if self.remote is None:
            point[0] = row
            return &self.f
        with gil:
            if row not in self.row_cache:
                self._fetch_rows(np.array([row], dtype=np.intp))
            self.row_family, _, points = self._bound_rows(np.array([row], dtype=np.intp))
            self.row_table = (<Family> self.row_family).c
            point[0] = points[0]
        return &self.row_table

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

    cdef int _label_step(self, uint64_t sweep, bint free=False) except -1 nogil:
        """Every row's label given the parameters, in parallel, and the clusters'
        states from them (steps 2 and 3). ``free``: no anchors, every row may
        join every cluster (the start's label step, which may empty a cluster)."""
        cdef intp_t c, N = self.N, capacity = self.slots.capacity
        cdef intp_t n_threads = self._n_threads(N)
        cdef intp_t* labels = &self.labels[0]
        # the rows' priorities and label draws, kept from the anchors' pass for the
        # label step where the rows are in process (the start's step draws its own)
        cdef double* uniforms = NULL
        if free:
            for c in range(capacity):
                self.anchor_priority[c] = -1.0
                self.anchor_row[c] = -1
        else:
            if self.remote is None:
                uniforms = self.row_uniforms
            find_anchors(self.key, sweep, labels, N, capacity, self.anchor_priority,
                         self.anchor_row, uniforms, n_threads)
        if self.remote is not None:
            with gil:
                new_labels, partials = self.remote.label_step(
                    np.asarray(self.labels), self._key_array(), sweep,
                    np.asarray(<intp_t[:self.slots.n_active]> self.slots.active),
                    np.asarray(<double[:capacity * self.P]> self.params),
                    np.asarray(<double[:capacity]> self.log_pi),
                    np.asarray(<double[:capacity]> self.anchor_priority),
                    np.asarray(<intp_t[:capacity]> self.anchor_row),
                    self._group_of_slot(), self.row_block)
                if np.shape(new_labels) != (N,):
                    raise RuntimeError("the label step returned the wrong number of rows")
                np.asarray(self.labels)[:] = new_labels
                self._group_members()
                self._states_from_partials(partials)
            return 0
        label_rows(&self.f, N, 0, labels, labels, self.key, sweep, uniforms,
                   self.slots.active, self.slots.n_active, capacity, self.params, self.P,
                   self.log_pi, self.anchor_priority, self.anchor_row,
                   self._thread_scratch(n_threads), n_threads)
        self._rebuild_all()            # also groups the members by slot
        return 0

    cdef int _initialise_sequential(self) except -1 nogil:
        """Sequential prediction over a random sample of the rows, then every row
        drawn given the sample's clusters.

        Sequential prediction (``CollapsedChain``'s start) reads the rows one at a
        time; here it runs on a uniform sample of at most ``SEQUENTIAL_SAMPLE``
        rows (all of them when there are no more), read at once wherever the rows
        are. Then each cluster's parameters and weight are drawn given its sample
        rows, and every row's label given them, in parallel (the label step with
        no anchors): a start next to the clusters a full sequential pass would
        find, at the cost of one sweep. Clusters that no row joins are dropped.
        """
        cdef intp_t r, a, n_sample = min(self.N, self.sequential_sample)
        if self.N == 0:
            return 0
        for r in range(self.N):
            self.order[r] = r
        shuffle(self.order, self.N, self.rng)
        with gil:
            self._sample_start(np.sort(np.asarray(<intp_t[:n_sample]> self.order)))
        if n_sample == self.N:
            self._rebuild_all()
        else:
            self._draw_parameters()
            for r in range(self.N):
                self.labels[r] = self.slots.active[0]
            self._label_step(START_SWEEP, True)
            for a in range(self.slots.n_active - 1, -1, -1):
                if self._state(self.slots.active[a])[STATE_COUNT] == 0:
                    self._close_slot(self.slots.active[a])
            self._group_members()
        self.log_joint = self._compute_log_joint()
        return 0

    cdef int _sample_start(self, rows) except -1:
        """Sequential prediction over ``rows`` (a CollapsedChain of their own, on a
        stream seeded from this chain's): their labels (``rows`` all the rows) or
        their clusters' states (a sample)."""
        cdef intp_t a, k, c, n = len(rows)
        cdef Family sample
        cdef const intp_t[::1] members
        x = self.family.rows(rows) if self.remote is None else self.remote.rows(rows)
        sample = self.family.rebound(x)
        seed = [int(uniform(self.rng) * 2.0**53) for _ in range(4)]
        labels = _CollapsedChain(sample, self.alpha, True, 0, None, 1,
                                 np.random.PCG64(seed), sequential_init=True).snapshot()[0]
        slots = [self._open_slot() for _ in range(int(labels.max()) + 1)]
        if n == self.N:
            for k in range(n):
                self.labels[k] = slots[labels[k]]
            return 0
        for a, c in enumerate(slots):
            members = np.flatnonzero(labels == a)
            if sample.c.rebuild(sample.c.segments.context, self._state(c), &members[0],
                                members.shape[0]) < 0:
                self._fail()
        return 0

    cdef int _sweep(self) except -1 nogil:
        cdef intp_t t
        cdef uint64_t sweep = <uint64_t> self.n_sweeps_done
        if self._singleton_moves_only or self._pair_scans_only:
            self._group_members()
            if self._singleton_moves_only:
                self._singleton_phase()
            if self._pair_scans_only:
                self._pair_scan_phase()
            self.n_sweeps_done += 1
            return 0
        self._draw_parameters()
        self._label_step(sweep)
        if self.remote is not None:
            with gil:
                self._read_ahead(sweep, 0)
        for t in range(self.n_proposals):
            if self._propose(sweep, t):
                self._group_members()  # an accepted move changed the labels
                if self.remote is not None:
                    with gil:   # and with them the later proposals' picks
                        self._read_ahead(sweep, t + 1)
        # a fixed number: a number that depends on the state (K, say) would make
        # the sweep a state-dependent power of an invariant kernel, which is not
        # invariant itself
        self._singleton_phase()
        self._pair_scan_phase()
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

    cdef intp_t _launch_set(self, intp_t c_a, intp_t c_b, intp_t i, intp_t j) noexcept nogil:
        """``launch_rows`` <- S less i and j in increasing order (the members of
        c_a, and of c_b unless it is c_a), with ``side[k]`` = 1 for a row of c_a;
        returns their number m."""
        cdef intp_t m = 0, r
        cdef intp_t ka = self.slots.member_start[c_a], ea = self.slots.member_start[c_a + 1]
        cdef intp_t kb = self.slots.member_start[c_b], eb = self.slots.member_start[c_b + 1]
        cdef char from_a
        if c_b == c_a:
            kb = eb
        while ka < ea or kb < eb:
            from_a = kb >= eb or (ka < ea and self.members[ka] < self.members[kb])
            if from_a:
                r = self.members[ka]
                ka += 1
            else:
                r = self.members[kb]
                kb += 1
            if r != i and r != j:
                self.launch_rows[m] = r
                self.side[m] = from_a
                m += 1
        return m

    cdef int _pick(self, bitgen_t* rng, intp_t* c_a, intp_t* c_b, intp_t* i,
                   intp_t* j) noexcept nogil:
        """A proposal's type, clusters and anchors, drawn from ``rng`` (module
        docstring): 1 for a split of c_a (= c_b), 0 for a merge of c_a and c_b,
        -1 for no proposal (a split of a singleton, a merge of one cluster).

        ``members`` must hold the points of each slot (``_group_members``).
        """
        cdef intp_t K = self.slots.n_active, c, n_c, r, k
        if uniform(rng) < 0.5:
            c = self.slots.active[uniform_index(rng, K)]
            n_c = self._size(c)
            if n_c < 2:
                return -1
            r = uniform_index(rng, n_c)
            k = uniform_index(rng, n_c - 1)
            i[0] = self._member(c, r)
            j[0] = self._member(c, k + (k >= r))
            c_a[0] = c_b[0] = c
            return 1
        if K < 2:
            return -1
        r = uniform_index(rng, K)
        k = uniform_index(rng, K - 1)
        c_a[0] = self.slots.active[r]
        c_b[0] = self.slots.active[k + (k >= r)]
        i[0] = self._member(c_a[0], uniform_index(rng, self._size(c_a[0])))
        j[0] = self._member(c_b[0], uniform_index(rng, self._size(c_b[0])))
        return 0

    cdef inline double _launch_rate(self, intp_t m) noexcept nogil:
        """The probability that a row of a launch's m rows is in a scan's sample."""
        return min(1.0, self.launch_sample_rows / (m + 1.0))

    cdef inline uint64_t _launch_purpose(self, intp_t t, intp_t s) noexcept nogil:
        """The purpose keying the row draws of scan s (from 1) of proposal t's launch."""
        return PURPOSE_LAUNCH + <uint64_t> t * (self.n_launch + 1) + <uint64_t> s

    cdef object _launch_key(self, intp_t i, intp_t j, intp_t m):
        """What identifies a launch's start: its anchors and its rows
        (``launch_rows[:m]``, by a digest), to match a sample read ahead."""
        rows = np.asarray(<intp_t[:m]> self.launch_rows) if m else np.empty(0, np.intp)
        return i, j, m, hash(rows.tobytes())

    cdef object _first_sample(self, uint64_t sweep, intp_t t, intp_t m):
        """The launch rows (``launch_rows[:m]``, proposal t's) that its first scan
        weighs: those whose own draw (``row_draws``, as ``scan_rows`` draws it)
        falls below the launch's rate."""
        cdef intp_t k, n = 0
        cdef double rate = self._launch_rate(m)
        cdef uint64_t purpose = self._launch_purpose(t, 1)
        cdef double draws[4]
        cdef intp_t[::1] out = np.empty(max(m, 1), dtype=np.intp)
        for k in range(m):
            row_draws(self.key, self.launch_rows[k], sweep, purpose, draws)
            if draws[1] < rate:
                out[n] = self.launch_rows[k]
                n += 1
        return np.asarray(out)[:n].copy()

    cdef int _read_ahead(self, uint64_t sweep, intp_t first) except -1:
        """Rows held elsewhere: read at once the rows the sweep's launches from
        proposal ``first`` on will start from, where they can be told in
        advance (``row_cache``): their anchors, and the sample each one's first
        scan weighs (``launch_samples``), whose scan then runs here
        (``_first_scan_here``); then the rows the singleton phase will read.

        Each proposal's picks are drawn as ``_propose`` draws them, with its
        acceptance uniform (a merge's first draw after its picks, a split's after
        its launch, which draws nothing from the chain's stream), from a copy of
        the chain's stream in the current state: the guesses are right up to the
        first accepted move, after which the sweep guesses the proposals left
        again (and reads what it has not read: one read a sweep, and one more
        after each accepted move). A merge whose uniform ends it before its
        launch (``_merge_log_ratio``, from the same states) needs no sample.
        With ``n_launch`` >= 2 a first scan weighs only its sample, and which
        rows are in it is known here: each row's own draw decides
        (``_first_sample``). A read holds samples of at most
        ``LAUNCH_PREFETCH_VALUES`` values in all (rows x features, or the rows'
        stored counts: ``_read_values``). A launch
        whose rows were not read asks the rows' holder (``_pair_states``,
        ``_scan``), and the chain's own stream is left as it was: the draws do
        not depend on the guesses.
        """
        cdef intp_t t, m, c_a, c_b, i, j, values, n_values = 0
        cdef int kind
        cdef double log_u
        cdef bitgen_t* rng
        shadow = copy.deepcopy(self.bit_generator)   # no fresh seed to draw
        rng = bitgen_pointer(shadow)
        wanted, samples = [], {}
        for t in range(first, self.n_proposals):
            kind = self._pick(rng, &c_a, &c_b, &i, &j)
            if kind < 0:
                continue
            wanted.append(np.array([i, j], dtype=np.intp))
            log_u = log(uniform(rng))
            if (self.n_launch < 2 or self.prefetch_values <= 0
                    or kind == 0 and self._merged_state(c_a, c_b) >= 0
                                     and log_u >= self._merge_log_ratio(c_a, c_b)):
                continue
            m = self._launch_set(c_a, c_b, i, j)
            # (a sample far past the room left is not drawn: m draws here)
            if (n_values + 0.5 * self._launch_rate(m) * m * self.mean_row_values
                    > self.prefetch_values):
                continue
            sample = self._first_sample(sweep, t, m)
            values = self._read_values(sample)
            if n_values + values > self.prefetch_values:
                continue
            n_values += values
            samples[t] = (self._launch_key(i, j, m), sample)
            wanted.append(sample)
        # the singleton phase's rows: its draws come next in the stream (each
        # proposal draws its picks and one uniform, whatever its outcome) and
        # do not depend on the state; the small clusters (and those one row
        # larger) are those of now, right unless a move is accepted, which
        # guesses again
        wanted.append(self._singleton_reads(self._draw_singleton_rows(rng)))
        if first == 0:
            self.row_cache = {}
            self.reads, self.read_rows, self.read_families = [], [], []
        self.launch_samples = {}
        if wanted:
            self._fetch_rows(np.concatenate(wanted))
        self.launch_samples = samples
        # what the samples brought, as read (the budget above counted it ahead)
        self._most_read_ahead = max(self._most_read_ahead, sum(
            [self._values_read(sample) for _, sample in samples.values()]))
        return 0

    cdef bint _propose(self, uint64_t sweep, intp_t t) except -1 nogil:
        """One split or merge proposal (module docstring); True if accepted.

        ``members`` must hold the points of each slot (``_group_members``).
        """
        cdef intp_t K = self.slots.n_active, c_a, c_b, i, j, k, m
        cdef intp_t n_a, n_b, c_new
        cdef int kind = self._pick(self.rng, &c_a, &c_b, &i, &j)
        cdef double log_q, log_ratio, log_select
        if kind < 0:
            return False
        m = self._launch_set(c_a, c_b, i, j)
        if kind == 0:
            return self._launch_merge(sweep, t, c_a, c_b, i, j, m)
        # the proposed split's states (state_a, state_b)
        log_q = self._launch(sweep, t, i, j, m, True)
        n_a = <intp_t> self.state_a[STATE_COUNT]
        n_b = <intp_t> self.state_b[STATE_COUNT]
        self.n_split += 1
        # pick the merge back / pick this split: K -> K + 1 clusters, the partner
        # uniform among the K others
        log_select = split_select_log_ratio(K, n_a, n_b) - log(<double> K)
        log_ratio = self._pair_log_ratio(self.state_a, self.state_b)
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
            if not self.side[k]:
                self.labels[self.launch_rows[k]] = c_new
        return True

    cdef bint _launch_merge(self, uint64_t sweep, intp_t t, intp_t c_a, intp_t c_b,
                            intp_t i, intp_t j, intp_t m) except -1 nogil:
        """The merge of clusters c_a and c_b (i in c_a, j in c_b, the launch rows
        S less i and j set): True if accepted.

        Its Metropolis-Hastings ratio is R q(A, B), with R the ratio of the
        posteriors and of the picks and q(A, B) <= 1 the probability that the
        launch proposes the split back. The uniform is drawn first: where log u
        >= log R the merge is rejected whatever q, and its launch (two scans of S
        by default) is not run. Most merges the chain proposes join clusters
        that the data keep apart, and end there."""
        cdef intp_t k, n
        cdef double log_u = log(uniform(self.rng)), log_ratio
        self.n_merge += 1
        if self._merged_state(c_a, c_b) < 0:
            n = self._side_rows(i, j, m, NULL, 0, 0)
            self._state_of(self.state_m, self.side_members, n)
        log_ratio = self._merge_log_ratio(c_a, c_b)
        if log_u >= log_ratio:
            self._merges_rejected_early += 1
            if self._launch_every_merge:
                self._launch(sweep, t, i, j, m, False)
            return False
        if log_u >= log_ratio + self._launch(sweep, t, i, j, m, False):
            return False
        self.n_merge_accepted += 1
        memcpy(self._state(c_a), self.state_m, self.W * sizeof(double))
        self.labels[j] = c_a
        for k in range(m):
            self.labels[self.launch_rows[k]] = c_a
        self._close_slot(c_b)
        return True

    cdef int _merged_state(self, intp_t c_a, intp_t c_b) noexcept nogil:
        """``state_m`` <- the merged state of clusters c_a and c_b from their
        states' moments, where the family reads them off a state (O(d^3) for a
        full covariance, and no round trip to rows held elsewhere, where most
        merges end before their launch); -1 where it does not, or the state is
        not numerically valid: then it comes from S's rows in block order, as
        every state (``_launch_merge``). Either way the same wherever the rows are.

        The larger cluster's state comes first (by the states' counts, which a
        pair scan keeps while it moves rows without regrouping ``members``; on
        a tie the lower slot), so that a pair's merged state is the same
        whichever of the two is named first.
        """
        cdef double n_a = self._state(c_a)[STATE_COUNT], n_b = self._state(c_b)[STATE_COUNT]
        cdef bint a_first = n_a > n_b or (n_a == n_b and c_a < c_b)
        return family_merged_state(&self.f, self._state(c_a if a_first else c_b),
                                   self._state(c_b if a_first else c_a),
                                   self.merge_moments, self.state_m)

    cdef double _merge_log_ratio(self, intp_t c_a, intp_t c_b) noexcept nogil:
        """log R of the merge of c_a and c_b (``_launch_merge``), their merged
        state in ``state_m``: the posteriors' ratio, and the picks' of the split
        back (K - 1 clusters) over this merge's (K clusters, the partner uniform
        among the K - 1 others)."""
        cdef intp_t K = self.slots.n_active
        return (family_log_marginal(&self.f, self.state_m)
                - self._pair_log_ratio(self._state(c_a), self._state(c_b))
                + log(<double> (K - 1))
                - split_select_log_ratio(K - 1, self._size(c_a), self._size(c_b)))

    cdef double _absorb_weights(self, const ConjugateFamily* table, intp_t point,
                                intp_t skip, const double* replaced,
                                intp_t replaced_slot) noexcept nogil:
        """log n_k + log p(x | k) of every active cluster but ``skip`` into
        ``log_prob``, x the point ``point`` of ``table`` (slot ``replaced_slot``
        read from ``replaced``); returns their log-sum-exp."""
        cdef intp_t b, k, n_active = self.slots.n_active
        cdef const double* state
        for b in range(n_active):
            k = self.slots.active[b]
            if k == skip:
                self.log_prob[b] = -INFINITY
                continue
            state = replaced if k == replaced_slot else self._state(k)
            self.log_prob[b] = state[self.f.log_weight] + family_log_kernel(table, state, point)
        return log_sum_exp(self.log_prob, n_active)

    cdef int _singleton_phase(self) except -1 nogil:
        """10 x ``n_split_merge`` singleton proposals (module docstring).

        Each proposal's type, and the row a row pick reads, are drawn before
        any proposal runs: they do not depend on the state, so that rows held
        elsewhere are fetched at once, with those of the small clusters and of
        the clusters one row larger: a cluster pick may land on a small
        cluster, and a split-off or a move out of a cluster one row larger
        leaves a small one (a small cluster made otherwise is read when
        picked).
        """
        cdef intp_t t, n_moves = self._draw_singleton_rows(self.rng)
        if self.remote is not None:
            with gil:   # those not read ahead (``_read_ahead``)
                self._fetch_rows(self._singleton_reads(n_moves))
        for t in range(n_moves):
            if self._singleton_move(self.singleton_rows[t]):
                self._group_members()
        return 0

    cdef intp_t _draw_singleton_rows(self, bitgen_t* rng) noexcept nogil:
        """``singleton_rows`` <- the singleton proposals' types and the rows they
        read: -1 picks a cluster (an absorb, or a move out of a small cluster),
        a row a split-off, a row + N a move into a small cluster; drawn from
        ``rng`` (the state plays no part). Returns their number."""
        cdef intp_t t, n_moves = SINGLETON_MOVES * self.n_proposals
        for t in range(n_moves):
            if uniform(rng) < 0.5:
                self.singleton_rows[t] = -1
            else:
                self.singleton_rows[t] = uniform_index(rng, self.N)
                if uniform(rng) < 0.5:   # a move into a small cluster
                    self.singleton_rows[t] += self.N
        return n_moves

    cdef object _singleton_reads(self, intp_t n_moves):
        """The rows the singleton phase reads: those it picks
        (``singleton_rows[:n_moves]``) and those of the small clusters, and of
        the clusters one row larger (a split-off or a move out of one leaves a
        small cluster)."""
        cdef intp_t a, c, k
        picked = np.asarray(<intp_t[:n_moves]> self.singleton_rows)
        wanted = list(picked[picked >= 0] % self.N)
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            if self._size(c) <= SMALL_CLUSTER_ROWS + 1:
                wanted += [self._member(c, k) for k in range(self._size(c))]
        return np.array(wanted, dtype=np.intp)

    cdef bint _singleton_move(self, intp_t a) except -1 nogil:
        """A cluster pick (``a`` < 0: an absorb of a singleton, or a point move
        out of a small cluster), the split-off of row ``a``, or (``a`` >= N) a
        point move of row a - N into a small cluster (module docstring); True
        if accepted.

        ``members`` must hold the points of each slot.
        """
        cdef intp_t K = self.slots.n_active, c, k, b, n_c, point
        cdef const ConjugateFamily* table
        cdef double log_z, log_ratio
        cdef double log_n = log(<double> self.N)
        if a >= self.N:
            return self._point_move(a - self.N, False)
        if a < 0:
            c = self.slots.active[uniform_index(self.rng, K)]
            n_c = self._size(c)
            if K < 2:
                return False
            if n_c > 1:
                if n_c > SMALL_CLUSTER_ROWS:
                    return False
                return self._point_move(self._member(c, uniform_index(self.rng, n_c)), True)
            a = self._member(c, 0)
            table = self._row_table(a, &point)
            log_z = self._absorb_weights(table, point, c, NULL, -1)
            b = draw_from_logs(self.log_prob, K, self.rng)   # never c: its weight is 0
            k = self.slots.active[b]
            log_ratio = (log(<double> K) + log_z - log(self.alpha)
                         - self.log_prior_predictive[a] - log_n - LOG_2)
            if log(uniform(self.rng)) >= log_ratio:
                return False
            family_add(table, self._state(k), point)
            self.labels[a] = k
            self._close_slot(c)
            return True
        c = self.labels[a]
        n_c = self._size(c)
        if n_c < 2:
            return False
        table = self._row_table(a, &point)
        self._state_without(c, a, table, point)
        log_z = self._absorb_weights(table, point, -1, self.state_m, c)
        log_ratio = (log(self.alpha) + self.log_prior_predictive[a] + log_n - log_z
                     - log(<double> (K + 1)) + LOG_2)
        if log(uniform(self.rng)) >= log_ratio:
            return False
        memcpy(self._state(c), self.state_m, self.W * sizeof(double))
        k = self._open_slot()
        family_reset(table, self._state(k))
        family_add(table, self._state(k), point)
        self.labels[a] = k
        return True

    cdef int _state_without(self, intp_t c, intp_t a, const ConjugateFamily* table,
                            intp_t point) except -1 nogil:
        """``state_m`` <- cluster c without its row a (``point`` of ``table``): a
        removal, or (if it fails numerically) a rebuild from c's other members."""
        cdef intp_t b, k = 0, n_c = self._size(c)
        memcpy(self.state_m, self._state(c), self.W * sizeof(double))
        if family_remove(table, self.state_m, point) < 0:
            for b in range(n_c):
                if self._member(c, b) != a:
                    self.side_members[k] = self._member(c, b)
                    k += 1
            self._state_of(self.state_m, self.side_members, n_c - 1)
        return 0

    cdef bint _point_move(self, intp_t a, bint out_of_small) except -1 nogil:
        """Row a from its cluster c to another, k (module docstring, "Small
        clusters"): ``out_of_small``, c small and k any, else k small; True if
        accepted.

        Both kinds propose the same move, a from c to k, so the ratio takes the
        sum of their probabilities each way: with w_j = n_j p(x_a | j), every
        cluster's weight with a removed (c's from c without a), the move's
        posterior ratio is w_k / w_c, and its proposal probability
        w_k A(c, k) with

            A(c, k) = [n_c small] / (2 K n_c Z_{-c}) + [n_k + 1 small] / (4 N Z^s_{-c}),

        Z_{-c} the sum of w_j over j != c and Z^s_{-c} over the small ones
        among them. The reverse's is w_c A(k, c) in the state after, where k
        has n_k + 1 rows and c n_c - 1; so the ratio is A(k, c) / A(c, k).
        Neither kind moves the last row of a cluster (the singleton moves do),
        so K stays and each move is undone by one of the two kinds."""
        cdef intp_t K = self.slots.n_active, c = self.labels[a], n_c = self._size(c)
        cdef intp_t b, b_c = self.slots.active_pos[c], b_k = -1, k, point, n_k
        cdef const ConjugateFamily* table
        cdef double u, log_forward, log_back
        if n_c < 2 or K < 2:
            return False
        if not out_of_small:
            # no cluster to move into (often, late in a chain): no row read
            for b in range(K):
                if self._move_target(b, b_c, True, b_c, n_c):
                    break
            else:
                return False
        table = self._row_table(a, &point)
        self._state_without(c, a, table, point)
        self._absorb_weights(table, point, -1, self.state_m, c)
        # k drawn with probability w_k / Z over the kind's targets (by inversion)
        log_forward = self._move_log_sum(b_c, not out_of_small, b_c, n_c)
        if not log_forward > -INFINITY:
            return False   # no target of positive weight
        u = uniform(self.rng)
        for b in range(K):
            if (self._move_target(b, b_c, not out_of_small, b_c, n_c)
                    and self.log_prob[b] > -INFINITY):
                b_k = b   # (round-off at the top end: the last of positive weight)
                u -= exp(self.log_prob[b] - log_forward)
                if u < 0.0:
                    break
        if b_k < 0:
            return False   # (weights that are not numbers: no move)
        k = self.slots.active[b_k]
        n_k = self._size(k)
        log_forward = self._move_log_weight(K, n_c, n_k, b_c, b_c, n_c)
        log_back = self._move_log_weight(K, n_k + 1, n_c - 1, b_k, b_c, n_c - 1)
        if log(uniform(self.rng)) >= log_back - log_forward:
            return False
        memcpy(self._state(c), self.state_m, self.W * sizeof(double))
        family_add(table, self._state(k), point)
        self.labels[a] = k
        return True

    cdef inline bint _move_target(self, intp_t b, intp_t skip, bint small_only,
                                  intp_t b_c, intp_t n_c) noexcept nogil:
        """Whether active cluster b is a target of ``_point_move``: not ``skip``,
        and small if ``small_only`` (c, at b_c, counted with n_c rows)."""
        if b == skip:
            return False
        if not small_only:
            return True
        return (n_c if b == b_c else self._size(self.slots.active[b])) < SMALL_CLUSTER_ROWS

    cdef double _move_log_sum(self, intp_t skip, bint small_only, intp_t b_c,
                              intp_t n_c) noexcept nogil:
        """log of the sum of ``log_prob``'s weights over ``_move_target``'s
        clusters (-inf for none)."""
        cdef intp_t b, K = self.slots.n_active
        cdef double high = -INFINITY, total = 0.0
        for b in range(K):
            if self._move_target(b, skip, small_only, b_c, n_c):
                high = max(high, self.log_prob[b])
        if high == -INFINITY:
            return high
        for b in range(K):
            if self._move_target(b, skip, small_only, b_c, n_c):
                total += exp(self.log_prob[b] - high)
        return high + log(total)

    cdef double _move_log_weight(self, intp_t K, intp_t n_source, intp_t n_target,
                                 intp_t b_source, intp_t b_c, intp_t n_c) noexcept nogil:
        """log A(source, target) of ``_point_move``: the source, at b_source,
        has n_source rows, the target n_target before the move; c, at b_c, is
        counted with n_c rows."""
        cdef double out = -INFINITY
        if n_source <= SMALL_CLUSTER_ROWS:
            out = (-log(2.0 * K * n_source)
                   - self._move_log_sum(b_source, False, b_c, n_c))
        if n_target < SMALL_CLUSTER_ROWS:
            out = log_add(out, -log(4.0 * self.N)
                          - self._move_log_sum(b_source, True, b_c, n_c))
        return out

    # -- restricted collapsed Gibbs scans of two clusters ---------------------------

    cdef int _pair_scan_phase(self) except -1 nogil:
        """``n_split_merge`` pair scans (``_pair_scan``) of one cluster A,
        drawn uniformly: a fixed number, and A independent of the state (K
        stays), so that the phase is a product of kernels that each keep the
        posterior. They share A's partners' probabilities (``log_prob``),
        computed once and again only after a scan that moved rows.

        ``members`` must hold the points of each slot."""
        cdef intp_t t, c_a
        if self.slots.n_active < 2:
            return 0
        c_a = self.slots.active[uniform_index(self.rng, self.slots.n_active)]
        self._partner_log_prob(c_a, c_a)
        for t in range(self.n_proposals):
            if self._partner_odds_every_scan:
                self._partner_log_prob(c_a, c_a)
            if self._pair_scan(c_a):
                self._group_members()
        return 0

    cdef double _merge_log_odds(self, intp_t c, intp_t k) noexcept nogil:
        """log p(c and k merged | X) / p(c | X): the posterior's odds of the
        clustering with clusters c and k merged (-inf where their merged state
        is not numerically valid, or the odds are not finite). O(d^3) for a
        full covariance."""
        cdef double log_odds = -INFINITY
        if self._merged_state(c, k) >= 0:
            log_odds = (family_log_marginal(&self.f, self.state_m)
                        - self._pair_log_ratio(self._state(c), self._state(k)))
            if not -INFINITY < log_odds < INFINITY:   # (NaN, or infinite)
                log_odds = -INFINITY
        return log_odds

    cdef double _partner_log_prob(self, intp_t c, intp_t target) noexcept nogil:
        """``log_prob[b]`` <- log P(partner = active cluster b | first = c) of
        ``_pair_scan`` (-inf at c); returns that of cluster ``target``.

        A share ``PARTNER_UNIFORM`` is uniform over the K - 1 others, the rest
        proportional to the posterior odds of merging c and b
        (``_merge_log_odds``): a cluster's own cut-offs are the partners whose
        merge the posterior favours most. A merged state that is not
        numerically valid gives b none of that share. Costs K - 1 merged states
        (O(d^3) each for a full covariance)."""
        cdef intp_t b, k, K = self.slots.n_active
        cdef double score, high = -INFINITY, total = 0.0
        cdef double uniform_share = PARTNER_UNIFORM / (K - 1)
        for b in range(K):
            k = self.slots.active[b]
            score = self._merge_log_odds(c, k) if k != c else -INFINITY
            self.log_prob[b] = score
            high = max(high, score)
        if high == -INFINITY:
            uniform_share = 1.0 / (K - 1)
        else:
            for b in range(K):
                total += exp(self.log_prob[b] - high)
        for b in range(K):
            if self.slots.active[b] == c:
                self.log_prob[b] = -INFINITY
            elif high == -INFINITY:
                self.log_prob[b] = log(uniform_share)
            else:
                self.log_prob[b] = log((1.0 - PARTNER_UNIFORM)
                                       * exp(self.log_prob[b] - high) / total
                                       + uniform_share)
        return self.log_prob[self.slots.active_pos[target]]

    cdef bint _pair_scan(self, intp_t c_a) except -1 nogil:
        """A restricted collapsed Gibbs scan of the rows of cluster A = c_a and
        of a partner's; True if accepted (module docstring, "Cut-offs").
        ``log_prob`` must hold A's partners' probabilities
        (``_partner_log_prob``), and holds them in the state it leaves.

        Pick a partner B with ``_partner_log_prob``. If S = A + B has at most
        ``PAIR_SCAN_ROWS`` rows and the posterior odds of their merge are at
        least exp(``PAIR_SCAN_MIN_MERGE_LOG_ODDS``), visit them all in a
        uniformly random order, and draw each visited row's label between A
        and B from its collapsed conditional, w_A against w_B (w_j = n_j p(x |
        j's other rows)), except the last row of either cluster, which stays. Each draw is a Gibbs step of p(c | X)
        restricted to the two clusters, so it is reversible, and so is the
        scan (its order is drawn uniformly, independently of the labels, and
        a sequence and its reverse are equally likely); K and S stay. The
        scan's kernel depends on the ordered pair (A, B) alone, and the pair's
        pick on the state: the scan is a Metropolis-Hastings proposal
        accepted with probability min(1, P(B | A) after / P(B | A) before),
        and only if the odds of the merge after it pass the bound too (else
        the scan back would not run: the bound on the odds makes the kernel
        depend on the state, and a proposal across it is refused).

        The states are updated as the rows move (each weighing and move
        O(d^2) for a full covariance), as the singleton moves update them;
        the next label step rebuilds them from the rows.
        """
        cdef intp_t K = self.slots.n_active, c_b, b, m, v, t, row
        cdef intp_t src, dst, point, moved = 0
        cdef const ConjugateFamily* table = &self.f
        cdef double* s
        cdef double* other
        cdef double u, log_forward, log_back, own, log_other
        cdef bint removed
        # the partner, by inversion (``log_prob`` sums to one)
        u = uniform(self.rng)
        c_b = -1
        for b in range(K):
            if self.log_prob[b] > -INFINITY:
                c_b = self.slots.active[b]
                u -= exp(self.log_prob[b])
                if u < 0.0:
                    break
        if c_b < 0 or self._size(c_a) + self._size(c_b) > self.pair_scan_rows:
            return False
        if self._merge_log_odds(c_a, c_b) < self.min_merge_log_odds:
            return False
        log_forward = self.log_prob[self.slots.active_pos[c_b]]
        m = self._launch_set(c_a, c_b, -1, -1)   # S, with side[k] = 1 for A's rows
        memcpy(self.order, self.launch_rows, m * sizeof(intp_t))
        shuffle(self.order, m, self.rng)
        if self.remote is not None:
            with gil:
                table = self._scan_table(m)
        memcpy(self.state_a, self._state(c_a), self.W * sizeof(double))
        memcpy(self.state_b, self._state(c_b), self.W * sizeof(double))
        for v in range(m):
            row = self.order[v]
            point = row if self.remote is None else self.scan_points[v]
            src = self.labels[row]
            dst = c_b if src == c_a else c_a
            s = self._state(src)
            other = self._state(dst)
            if s[STATE_COUNT] < 2.0:
                continue
            log_other = other[self.f.log_weight] + family_log_kernel(table, other, point)
            own = NAN
            if table.own_log_weight != NULL:
                own = table.own_log_weight(table.segments.context, s, point)
            removed = own != own   # (NaN: weighed after its removal)
            if removed:
                if family_remove(table, s, point) < 0:
                    moved = -1   # not numerically valid: the scan is undone
                    break
                own = s[self.f.log_weight] + family_log_kernel(table, s, point)
            # to the other cluster with probability w_other / (w_own + w_other)
            if uniform(self.rng) * (1.0 + exp(own - log_other)) < 1.0:
                if not removed and family_remove(table, s, point) < 0:
                    moved = -1
                    break
                family_add(table, other, point)
                self.labels[row] = dst
                moved += 1
            elif removed:
                family_add(table, s, point)
        if moved > 0:
            # A's partners after the scan; those before kept for an undo
            memcpy(self.partner_kept, self.log_prob, K * sizeof(double))
            log_back = self._partner_log_prob(c_a, c_b)
            if (log(uniform(self.rng)) < log_back - log_forward
                    and self._merge_log_odds(c_a, c_b) >= self.min_merge_log_odds):
                self._scans_accepted += 1
                return True
            memcpy(self.log_prob, self.partner_kept, K * sizeof(double))
        # undone: the labels and states as they were
        for t in range(m):
            self.labels[self.launch_rows[t]] = c_a if self.side[t] else c_b
        memcpy(self._state(c_a), self.state_a, self.W * sizeof(double))
        memcpy(self._state(c_b), self.state_b, self.W * sizeof(double))
        return False

    cdef const ConjugateFamily* _scan_table(self, intp_t m) except NULL:
        """Rows held elsewhere: read the rows a pair scan visits (``order[:m]``;
        one round trip, for those not read yet); ``scan_points`` <- their
        points in the family that reads them; returns its table."""
        cdef intp_t v
        rows = np.asarray(<intp_t[:m]> self.order).copy()
        n_reads = len(self.reads)
        self._fetch_rows(rows)
        self._scan_reads += len(self.reads) > n_reads
        ordered = np.sort(rows)
        self.row_family, _, points = self._bound_rows(ordered)
        points = np.asarray(points)[np.searchsorted(ordered, rows)]
        for v in range(m):
            self.scan_points[v] = points[v]
        self.row_table = (<Family> self.row_family).c
        return &self.row_table

    cdef intp_t _side_rows(self, intp_t first, intp_t second, intp_t m,
                           const char* bits, char value, char mask) noexcept nogil:
        """``side_members`` <- in increasing order, ``first``, ``second`` (if >= 0)
        and the launch rows k with ``bits[k] & mask == value`` (all of them if
        ``bits`` is NULL); returns their number."""
        cdef intp_t k, n = 0, t, anchor, lo, hi, mid
        for k in range(m):
            if bits == NULL or bits[k] & mask == value:
                self.side_members[n] = self.launch_rows[k]
                n += 1
        for t in range(2):
            anchor = first if t == 0 else second
            if anchor < 0:
                continue
            lo, hi = 0, n
            while lo < hi:
                mid = (lo + hi) // 2
                if self.side_members[mid] < anchor:
                    lo = mid + 1
                else:
                    hi = mid
            memmove(self.side_members + lo + 1, self.side_members + lo,
                    (n - lo) * sizeof(intp_t))
            self.side_members[lo] = anchor
            n += 1
        return n

    cdef int _side_state(self, double* state, intp_t anchor, intp_t m,
                         const char* bits, char value, char mask) except -1 nogil:
        """``state`` <- the statistics of ``anchor`` and the launch rows k with
        ``bits[k] & mask == value``."""
        return self._state_of(state, self.side_members,
                              self._side_rows(anchor, -1, m, bits, value, mask))

    cdef int _pair_states(self, intp_t i, intp_t j, intp_t m, const char* bits,
                          char value_a, char value_b, char mask) except -1 nogil:
        """``state_a`` <- the state of i and the launch rows k with
        ``bits[k] & mask == value_a``, ``state_b`` of j and those with ``value_b``;
        with rows elsewhere, from the moments the last scan brought back (or, before
        the first scan, of i and j alone)."""
        if self.remote is None:
            self._side_state(self.state_a, i, m, bits, value_a, mask)
            self._side_state(self.state_b, j, m, bits, value_b, mask)
            return 0
        with gil:
            if self.scan_moments is None:
                if i in self.row_cache and j in self.row_cache:
                    self._sides_here(0, 0, i, j, 0.0, np.empty(0, dtype=np.intp))
                    return 0
                self.scan_moments = self.remote.row_partials(
                    np.array(sorted((i, j)), dtype=np.intp),
                    np.array([0, 1] if i < j else [1, 0], dtype=np.intp), 2,
                    self.row_block)
            self._states_from_scan(self.state_a, self.state_b)
        return 0

    cdef bint _first_scan_here(self, uint64_t sweep, intp_t t, intp_t i, intp_t j,
                               intp_t m) except -1 nogil:
        """Rows held elsewhere: run proposal t's first launch scan here, on the
        sample read ahead for it (``_read_ahead``), if that sample is still
        the launch's (the same anchors and rows S: the guesses are made again
        after each accepted move, and the key checks it); True if it ran, the
        states of its sides then in ``state_a`` and ``state_b``."""
        if self.remote is None:
            return False
        with gil:
            read = self.launch_samples.get(t)
            if read is None or read[0] != self._launch_key(i, j, m):
                return False
            self._sides_here(sweep, self._launch_purpose(t, 1), i, j,
                             self._launch_rate(m), read[1])
        return True

    cdef int _sides_here(self, uint64_t sweep, uint64_t purpose, intp_t i, intp_t j,
                         double rate, sample) except -1:
        """``state_a``, ``state_b`` <- the states of a launch's two sides after its
        first scan (sampled rows only, ``scan_rows``), run here on the rows of
        ``sample`` (global, increasing: the rows that scan weighs) and i and j,
        read here (``row_cache``); with an empty sample, the states of i and of
        j alone, the first scan's start.

        The rows are read from a family bound to them (``_bound_rows``), and
        each side's moments are folded by runs in the blocks of their global
        rows (``blocked_state``):
        the same family code on the same values, in the same runs and order, as
        the rows' holder (``rows_scan``, ``rows_moments``) and the chain with
        its rows in process, so the states are theirs to the bit.
        """
        cdef intp_t n = len(sample)
        rows = np.union1d(sample, np.array([i, j], dtype=np.intp)).astype(np.intp)
        bound, bound_rows, local = self._bound_rows(rows)
        cdef Family here = bound
        cdef const intp_t[::1] global_rows = np.ascontiguousarray(bound_rows, dtype=np.intp)
        cdef const intp_t[::1] sampled = np.ascontiguousarray(sample, dtype=np.intp)
        cdef const intp_t[::1] points = np.ascontiguousarray(
            local[np.searchsorted(rows, sample)], dtype=np.intp)
        cdef signed char[::1] proposed = np.zeros(max(n, 1), dtype=np.int8)
        cdef double[::1] log_q = np.empty(max(n, 1))
        cdef double[::1] scratch = np.empty(scan_stride(family_rows_work_width(&here.c)))
        cdef const intp_t[::1] side_a
        cdef const intp_t[::1] side_b
        if n:
            scan_rows(&here.c, &sampled[0], n, 0, self.key, sweep, purpose,
                      self.side_params, self.side_params + self.P,
                      log(self.state_a[STATE_COUNT]), log(self.state_b[STATE_COUNT]),
                      rate, False, True, <const char*> &proposed[0],
                      <char*> &proposed[0], &log_q[0], &scratch[0], 1, &points[0])
        bits = np.asarray(proposed)[:n]
        if np.any((bits & SAMPLED) == 0):
            raise RuntimeError("a launch's first scan weighed rows outside its sample")
        on_a = (bits & SIDE) != 0
        side_a = np.sort(np.r_[local[rows.searchsorted(i)], np.asarray(points)[on_a]]
                         ).astype(np.intp)
        side_b = np.sort(np.r_[local[rows.searchsorted(j)], np.asarray(points)[~on_a]]
                         ).astype(np.intp)
        if (blocked_state(&here.c, self.state_a, &side_a[0], side_a.shape[0],
                          self.row_block, self.moments_scratch,
                          self.moments_scratch + self.M, &global_rows[0]) < 0
                or blocked_state(&here.c, self.state_b, &side_b[0], side_b.shape[0],
                                 self.row_block, self.moments_scratch,
                                 self.moments_scratch + self.M, &global_rows[0]) < 0):
            with nogil:
                self._fail()
        return 0

    cdef int _states_from_scan(self, double* first, double* second) except -1:
        """The two sides' states from the moments of the last scan."""
        moments, self.scan_moments = self.scan_moments, None
        if (self._group_state(moments, 0, first) < 0
                or self._group_state(moments, 1, second) < 0):
            with nogil:
                self._fail()
        return 0

    cdef int _scan(self, uint64_t sweep, uint64_t purpose, intp_t m, intp_t i, intp_t j,
                   double rate, bint evaluate, int moments) except -1 nogil:
        """One restricted scan over the launch rows (``scan_rows``), where they are;
        rows elsewhere also send back the ``moments`` the launch needs next
        (``rows_scan``). A scan before the last (``MOMENTS_SAMPLED``) weighs the
        sampled rows only: the next scan reads no other."""
        cdef intp_t n_threads = self._n_threads(m) if m >= PARALLEL_LAUNCH_ROWS else 1
        cdef intp_t P = self.P
        cdef double log_n_a = log(self.state_a[STATE_COUNT])
        cdef double log_n_b = log(self.state_b[STATE_COUNT])
        if self.remote is None:
            scan_rows(&self.f, self.launch_rows, m, 0, self.key, sweep, purpose,
                      self.side_params, self.side_params + P, log_n_a, log_n_b, rate,
                      evaluate, moments == MOMENTS_SAMPLED, self.side, self.proposed,
                      self.launch_log_q, self._thread_scratch(n_threads), n_threads)
            return 0
        with gil:
            self._remote_scan(sweep, purpose, m, i, j, log_n_a, log_n_b, rate, evaluate,
                              moments)
        return 0

    cdef int _remote_scan(self, uint64_t sweep, uint64_t purpose, intp_t m, intp_t i,
                          intp_t j, double log_n_a, double log_n_b, double rate,
                          bint evaluate, int moments) except -1:
        cdef intp_t k, P = self.P
        cdef const signed char[::1] proposed
        cdef const double[::1] log_q
        result = self.remote.scan(
            np.asarray(<intp_t[:m]> self.launch_rows).copy() if m else np.empty(0, np.intp),
            self._key_array(), sweep, purpose,
            np.asarray(<double[:P]> self.side_params).copy(),
            np.asarray(<double[:P]> (self.side_params + P)).copy(),
            log_n_a, log_n_b, rate, evaluate,
            (np.asarray(<signed char[:m]> <signed char*> self.side).copy() if m
             else np.empty(0, np.int8)) if evaluate else None,
            i, j, moments, self.row_block)
        proposed = np.ascontiguousarray(result[0], dtype=np.int8)
        log_q = np.ascontiguousarray(result[1], dtype=np.float64)
        if proposed.shape[0] != m or log_q.shape[0] != m:
            raise RuntimeError("a scan of the rows returned the wrong number of rows")
        for k in range(m):
            if not evaluate:
                self.proposed[k] = proposed[k]
            self.launch_log_q[k] = log_q[k]
        self.scan_moments = result[2]
        return 0

    cdef double _launch(self, uint64_t sweep, intp_t t, intp_t i, intp_t j, intp_t m,
                        bint split) except? -1.0 nogil:
        """Fit two sub-clusters to S from (i, j); return log q of the final allocation.

        On entry ``side`` holds the current clusters' sides (1 for i's; a merge
        reads them), and on exit the proposed allocation (a split) or still the
        current one (a merge), whose log-probability under the last scan is
        returned; ``state_a`` and ``state_b`` hold the proposed split's states (a
        split; scratch for a merge). Everything random here is a
        function of (i, j, S) and fresh draws keyed by the rows, the same for a
        split and a merge.

        A scan's sides' parameters are drawn given a random sample of about
        ``launch_sample_rows`` of their rows (each row's own Philox draw decides), so
        that a launch over a large S costs its parallel allocations, not
        sequential rebuilds, and the scans before the last weigh those rows
        only; only the last scan's allocation is proposed, and it covers every
        row. The parameters come from the launch's own stream, keyed by (t,
        sweep): a launch leaves the chain's stream as it found it.
        """
        cdef intp_t k, s, P = self.P
        cdef double log_q = 0.0
        cdef double rate = self._launch_rate(m)
        cdef void* context = self.f.segments.context
        cdef bint last, evaluate
        cdef bitgen_t* stream = counter_stream_start(
            &self.launch_stream, self.key, <uint64_t> t, sweep, PURPOSE_LAUNCH_PARAMETERS)
        # the first scan's sides are i and j alone
        for k in range(m):
            self.proposed[k] = UNALLOCATED
        self._pair_states(i, j, m, self.proposed, SAMPLED | 1, SAMPLED, SAMPLED | SIDE)
        for s in range(1, self.n_launch + 1):
            # the sides' parameters given the sampled rows of the allocation so far
            if (self.f.draw_params(context, self.state_a, stream, self.side_params) < 0
                    or self.f.draw_params(context, self.state_b, stream,
                                          self.side_params + P) < 0):
                self._fail()
            last = s == self.n_launch
            # rows held elsewhere: a first scan before the last weighs only its
            # sample, which may have been read ahead (``_read_ahead``)
            if s == 1 and not last and self._first_scan_here(sweep, t, i, j, m):
                continue
            # the last scan of a merge evaluates the current sides instead of drawing
            evaluate = last and not split
            self._scan(sweep, self._launch_purpose(t, s), m, i, j, rate, evaluate,
                       MOMENTS_SAMPLED if not last else
                       (MOMENTS_NONE if evaluate else MOMENTS_SIDES))
            if not last:
                self._pair_states(i, j, m, self.proposed, SAMPLED | 1, SAMPLED,
                                  SAMPLED | SIDE)
        for k in range(m):
            log_q += self.launch_log_q[k]
            if split:
                self.side[k] = self.proposed[k] & SIDE
        if split:
            self._pair_states(i, j, m, self.side, 1, 0, SIDE)
        elif self.remote is not None:
            with gil:   # a merge's last scan sends no moments (MOMENTS_NONE)
                self.scan_moments = None
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


def _find_anchors_wrapper(key, uint64_t sweep, labels, intp_t capacity,
                          intp_t n_threads):
    """``find_anchors`` of ``labels`` (in 0..capacity-1) on ``n_threads`` threads,
    for tests: (anchor priorities, anchor rows, the rows' (priority, label draw))."""
    cdef const uint64_t[::1] key_ = np.ascontiguousarray(key, dtype=np.uint64)
    cdef const intp_t[::1] labels_ = np.ascontiguousarray(labels, dtype=np.intp)
    cdef intp_t n = labels_.shape[0]
    cdef double[::1] priority = np.empty(capacity)
    cdef intp_t[::1] anchor = np.empty(capacity, dtype=np.intp)
    cdef double[:, ::1] uniforms = np.empty((max(n, 1), 2))
    if key_.shape[0] != 2 or capacity < 1 or n < 1:
        raise ValueError("a key of 2 words, capacity >= 1 and one row or more")
    if np.min(labels) < 0 or np.max(labels) >= capacity:
        raise ValueError("labels must lie in 0..capacity-1")
    with nogil:
        find_anchors(&key_[0], sweep, &labels_[0], n, capacity, &priority[0],
                     &anchor[0], &uniforms[0, 0], n_threads)
    return np.asarray(priority), np.asarray(anchor), np.asarray(uniforms)


# -- the operations on a block of rows held elsewhere (``_distributed``) ----------------
# Each takes the family bound to rows offset, offset + 1, ... (offset a multiple of
# the row block) and runs the same kernels as the chain, so that a chain whose
# rows are on Dask workers draws exactly what it would draw with them in process.


def _check_block_start(intp_t offset, intp_t row_block):
    if row_block < 1 or offset % row_block:
        raise ValueError(f"rows must start at a multiple of the row block {row_block}, "
                         f"not at {offset}")


def _group_moments(Family family, const intp_t[::1] groups, intp_t n_groups,
                   intp_t row_block, bint split=False):
    """(n_blocks, n_groups, M) block moments of the family's rows by group; with
    ``split``, for a family with exact columns, ``SplitMoments`` (the exact
    sums sparse where fewer than two thirds of them are nonzero: 12 bytes a
    sparse value, 8 a dense one)."""
    cdef intp_t n = family.n_points, M = family.c.moments_width
    cdef intp_t n_blocks = (n + row_block - 1) // row_block
    cdef object exact_from = family.exact_moments_from
    cdef intp_t H
    cdef double[:, :, ::1] headers
    cdef double[:, ::1] exact
    cdef double[::1] scratch
    cdef intp_t[::1] order_block, start
    if split and exact_from is not None:
        H = exact_from
        headers = np.empty((n_blocks, n_groups, H))
        exact = np.zeros((n_groups, M - H))
        scratch = np.empty(max(n_groups * M, 1))
        order_block = np.empty(max(min(n, row_block), 1), dtype=np.intp)
        start = np.empty(n_groups + 1, dtype=np.intp)
        if n_blocks and n_groups:
            with nogil:
                split_group_moments(
                    &family.c, n, &groups[0], n_groups, row_block, H, &headers[0, 0, 0],
                    &exact[0, 0], &scratch[0], &order_block[0], &start[0],
                    threads_for(n, n_groups))
        sums = np.asarray(exact)
        if 3 * np.count_nonzero(sums) < 2 * sums.size:
            sums = sparse.csr_matrix(sums)
        return SplitMoments(np.asarray(headers), sums)
    cdef double[:, :, ::1] out = np.empty((n_blocks, n_groups, M))
    cdef intp_t[::1] order = np.empty(max(n, 1), dtype=np.intp)
    cdef intp_t[::1] counts = np.empty(max(n_blocks * (n_groups + 1), 1), dtype=np.intp)
    if n_blocks and n_groups:
        with nogil:
            group_moments(&family.c, n, &groups[0], n_groups, row_block, &out[0, 0, 0],
                          &order[0], &counts[0], threads_for(n, 0))
    return np.asarray(out)


class SplitMoments:
    """Block moments as the rows' holder sends them back for a family whose
    moments end in integer columns that its merge adds
    (``Family.exact_moments_from`` = H; counts: the word counts).

    Only the first H columns, whose merge depends on the block order (a sum of
    doubles), are kept by block; the others are summed over the blocks where
    the rows are, exactly, in any order (the counts' total is bounded by 2**40,
    ``_multinomial.MAX_TOTAL_COUNT``, so every partial sum is an integer below
    2**53, held exactly in a double). So what travels is blocks x groups x
    H doubles and groups x (M - H) sums, sparse where that is smaller (a
    vocabulary of tens of thousands of words), instead of blocks x groups x M;
    ``fold_split`` merges them into the same moments as ``fold_partials``.

    Attributes
    ----------
    headers : ndarray of shape (n_blocks, n_groups, H)
    exact : ndarray or scipy.sparse CSR matrix of shape (n_groups, M - H)
    """

    __slots__ = ("headers", "exact")

    def __init__(self, headers, exact):
        self.headers = headers
        self.exact = exact


def joined_moments(parts):
    """The block moments sent back by the chunks (``_group_moments``), in block
    order, as one: an array, or ``SplitMoments`` whose exact sums are summed
    over the chunks (exactly) and dense here."""
    if not parts or not isinstance(parts[0], SplitMoments):
        return np.concatenate(parts)
    exact = np.zeros(parts[0].exact.shape)
    for part in parts:
        if isinstance(part.exact, np.ndarray):
            exact += part.exact
        else:   # its stored sums only (canonical CSR: no (group, column) twice)
            stored = part.exact.tocoo()
            exact[stored.row, stored.col] += stored.data
    return SplitMoments(np.concatenate([part.headers for part in parts]), exact)


def states_from_partials(Family family, partials):
    """(n_groups, W) states of the groups of (n_blocks, n_groups, M) block moments
    (or ``SplitMoments``), each merged in block order as the chain merges the
    moments of rows held elsewhere (``_state_from_partials``): a trimmed draw of
    a Dask fit is rebuilt so."""
    cdef double[:, :, ::1] table
    cdef const double[:, :, ::1] headers
    cdef const double[:, ::1] exact
    cdef intp_t g, n_blocks, n_groups, H = 0
    cdef intp_t M = family.c.moments_width
    cdef bint split = isinstance(partials, SplitMoments)
    if split:
        headers = partials.headers
        exact = partials.exact
        n_blocks, n_groups, H = headers.shape[0], headers.shape[1], headers.shape[2]
        if (M == 0 or H != family.exact_moments_from or exact.shape[0] != n_groups
                or exact.shape[1] != M - H):
            raise ValueError(f"split block moments of shapes {np.shape(partials.headers)}"
                             f" and {np.shape(partials.exact)} for a family of moments "
                             f"of width {M}")
    else:
        table = np.ascontiguousarray(partials, dtype=np.float64)
        n_blocks, n_groups = table.shape[0], table.shape[1]
        if M == 0 or (n_blocks and table.shape[2] != M):
            raise ValueError(f"block moments of shape {np.shape(partials)} for a "
                             f"family of moments of width {M}")
    cdef double[:, ::1] states = np.empty((n_groups, family.c.segments.width))
    cdef double[::1] acc = np.empty(M)
    cdef double[::1] part = np.empty(M)
    for g in range(n_groups):
        if n_blocks == 0:
            family_reset(&family.c, &states[g, 0])
            continue
        if split:
            fold_split(&family.c, &headers[0, 0, 0], n_blocks, n_groups, g, H,
                       &exact[g, 0], &acc[0], &part[0])
        else:
            fold_partials(&family.c, &table[0, 0, 0], n_blocks, n_groups, g, &acc[0])
        if family.c.moments_state(family.c.segments.context, &acc[0], &states[g, 0]) < 0:
            raise FloatingPointError(family.failure_message)
    return np.asarray(states)


def rows_group_moments(Family family, intp_t offset, labels, group_of_slot,
                       intp_t n_groups, intp_t row_block, bint split=False):
    """Block moments of the family's rows grouped by ``group_of_slot[labels]``
    (``split``: as they travel, ``_group_moments``)."""
    _check_block_start(offset, row_block)
    groups = np.ascontiguousarray(np.asarray(group_of_slot, dtype=np.intp)[labels])
    return _group_moments(family, groups, n_groups, row_block, split)


def rows_label_step(Family family, intp_t offset, labels, key, uint64_t sweep, active,
                    params, log_pi, anchor_priority, anchor_row, group_of_slot,
                    intp_t row_block, bint split=False):
    """The label step of the family's rows (``label_rows``): their new labels,
    and the block moments of the rows grouped by the new labels' active index
    (``split``: as they travel, ``_group_moments``)."""
    _check_block_start(offset, row_block)
    cdef const intp_t[::1] old = np.ascontiguousarray(labels, dtype=np.intp)
    cdef const uint64_t[::1] key_ = np.ascontiguousarray(key, dtype=np.uint64)
    cdef const intp_t[::1] active_ = np.ascontiguousarray(active, dtype=np.intp)
    cdef const double[::1] params_ = np.ascontiguousarray(params, dtype=np.float64)
    cdef const double[::1] log_pi_ = np.ascontiguousarray(log_pi, dtype=np.float64)
    cdef const double[::1] priority = np.ascontiguousarray(anchor_priority, dtype=np.float64)
    cdef const intp_t[::1] anchor = np.ascontiguousarray(anchor_row, dtype=np.intp)
    cdef intp_t n = family.n_points, capacity = log_pi_.shape[0]
    cdef intp_t n_threads = threads_for(n, 0)
    cdef intp_t[::1] new = np.empty(n, dtype=np.intp)
    cdef double[::1] scratch = np.empty(
        n_threads * label_stride(capacity, family_rows_work_width(&family.c)))
    if old.shape[0] != n or key_.shape[0] != 2 or anchor.shape[0] != capacity:
        raise ValueError("the label step's arrays do not match the rows")
    if n:
        with nogil:
            label_rows(&family.c, n, offset, &old[0], &new[0], &key_[0], sweep, NULL,
                       &active_[0], active_.shape[0], capacity, &params_[0],
                       family.c.param_width, &log_pi_[0], &priority[0], &anchor[0],
                       &scratch[0], n_threads)
    new_labels = np.asarray(new)
    return new_labels, rows_group_moments(family, offset, new_labels, group_of_slot,
                                          active_.shape[0], row_block, split)


def rows_moments(Family family, intp_t offset, rows, groups, intp_t n_groups,
                 intp_t row_block, bint split=False):
    """(n_blocks, n_groups, M) block moments of the given rows (global) of the
    family's rows, by their ``groups`` (-1: none; ``split``: as they travel,
    ``_group_moments``)."""
    _check_block_start(offset, row_block)
    by_row = np.full(family.n_points, -1, dtype=np.intp)
    by_row[np.asarray(rows, dtype=np.intp) - offset] = groups
    return _group_moments(family, by_row, n_groups, row_block, split)


def rows_scan(Family family, intp_t offset, rows, key, uint64_t sweep, uint64_t purpose,
              theta_a, theta_b, double log_n_a, double log_n_b, double rate,
              bint evaluate, sides, intp_t i, intp_t j, int moments, intp_t row_block,
              bint split=False):
    """A launch scan (``scan_rows``) over the given rows (global) of the family's
    rows: (allocations, log-probabilities, block moments). The allocations and
    log-probabilities are one per row; the moments are those the launch needs next
    (``moments``): of the sides' sampled rows with i and j (``MOMENTS_SAMPLED``) or
    of the sides' rows with i and j (``MOMENTS_SIDES``), from the rows of this block
    of rows; none (an empty table) with ``MOMENTS_NONE`` (``split``: as they
    travel, ``_group_moments``)."""
    cdef const intp_t[::1] rows_ = np.ascontiguousarray(rows, dtype=np.intp)
    cdef const uint64_t[::1] key_ = np.ascontiguousarray(key, dtype=np.uint64)
    cdef const double[::1] a = np.ascontiguousarray(theta_a, dtype=np.float64)
    cdef const double[::1] b = np.ascontiguousarray(theta_b, dtype=np.float64)
    cdef intp_t m = rows_.shape[0]
    cdef const signed char[::1] sides_ = np.ascontiguousarray(
        sides if evaluate else np.zeros(max(m, 1)), dtype=np.int8)
    cdef intp_t n_threads = threads_for(m, 0) if m >= PARALLEL_LAUNCH_ROWS else 1
    cdef signed char[::1] proposed = np.zeros(max(m, 1), dtype=np.int8)
    cdef double[::1] log_q = np.empty(max(m, 1))
    cdef double[::1] scratch = np.empty(
        n_threads * scan_stride(family_rows_work_width(&family.c)))
    if m and (np.min(rows) < offset or np.max(rows) >= offset + family.n_points):
        raise ValueError("a scan's rows lie outside the block of rows")
    if m:
        with nogil:
            scan_rows(&family.c, &rows_[0], m, offset, &key_[0], sweep, purpose, &a[0],
                      &b[0], log_n_a, log_n_b, rate, evaluate, moments == MOMENTS_SAMPLED,
                      <const char*> &sides_[0],
                      <char*> &proposed[0], &log_q[0], &scratch[0], n_threads)
    allocation = np.asarray(proposed)[:m]
    if moments == MOMENTS_NONE:
        return allocation, np.asarray(log_q)[:m], np.empty((0, 2, family.c.moments_width))
    # the groups of the moments: 0 for i's side, 1 for j's, -1 for no group
    groups = np.where(allocation & SIDE, 0, 1)
    if moments == MOMENTS_SAMPLED:
        groups[(allocation & SAMPLED) == 0] = -1
    # i and j join their groups where this block of rows holds them
    anchor_rows, anchor_groups = [], []
    for row, group in ((i, 0), (j, 1)):
        if offset <= row < offset + family.n_points:
            anchor_rows.append(row)
            anchor_groups.append(group)
    return allocation, np.asarray(log_q)[:m], rows_moments(
        family, offset, np.r_[np.asarray(rows_), anchor_rows].astype(np.intp),
        np.r_[groups, anchor_groups].astype(np.intp), 2, row_block, split)
