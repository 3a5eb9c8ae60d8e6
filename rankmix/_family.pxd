# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Declarations of a conjugate cluster family: what the collapsed sampler core sees.

The core (``_collapsed_chain``) runs Gibbs, split-merge and the permutation move for
any family whose cluster parameters integrate out in closed form. It sees a cluster
only as a block of ``width`` doubles, its "state" (sufficient statistics plus any
cached terms the family likes), and acts on it only through the callbacks of a
``ConjugateFamily``; data points are indices 0..N-1 into data the family's context
owns. Two entries of a state have a fixed meaning, which is all the core reads
directly:

* ``state[STATE_COUNT]`` (= state[0]) is n, the number of points, as a double;
* ``state[family.log_weight]`` is log n + the part of log p(x | cluster) that does
  not depend on x (-inf when n = 0), so that the Gibbs weight of point i for the
  cluster is ``state[log_weight] + log_kernel(context, state, i)``.

A family may also set, with ``own_weight(&family.c, ...)``, ``own_log_weight(context,
state, point)``: the Gibbs weight of a member for its own cluster as if it had been
removed, ``state'[log_weight] + log_kernel(context, state', point)`` for the state'
without the point (n >= 2), computed from ``state`` without changing it; NaN where
the family cannot compute it accurately. The Gibbs scan then weighs a point's
clusters before removing it, and removes it only if it moves (most points stay,
and a full covariance's removal and re-addition are two rank-one updates of a
Cholesky factor, each costing more than a weight).

And it may set, with ``kernel_rows(&family.c, ...)``, ``log_kernel_rows(context,
state, first, m, out)``: ``out[r]`` <- ``log_kernel(context, state, first + r)`` for
m <= ``ROWS_BLOCK`` consecutive points, each to the last bit, the state read once
for the m. The Gibbs scan then weighs its points in blocks: a state is the same
from one point to the next unless a point moved into or out of it, so a block's
kernels are computed cluster by cluster and only a changed cluster's again.

Every callback runs without the GIL and may write to scratch in ``context``, so a
context serves one chain at a time (``Family.copy`` makes another), except
``log_likelihood``, which the parallel samplers call from many threads at once: it
reads ``context`` and writes only to the ``work`` it is given.

Explicit parameters (the sub-cluster sampler, ``_subcluster_chain``)
-------------------------------------------------------------------
A family that also offers its cluster parameters theta explicitly sets, with
``explicit_parameters(&family.c, ...)``:

* ``param_width``: doubles per parameter block; ``work_width``: doubles of scratch
  per thread for ``log_likelihood``;
* ``draw_params(context, state, rng, params)``: a draw of theta | the cluster's
  points, from the conjugate posterior that ``state`` summarises (sequential: it
  may use ``context``'s scratch); < 0 on a numerical failure;
* ``log_likelihood(context, params, point, work)``: log f(x_point | theta), the
  whole density, normalising constants included.

It may also set, with ``likelihood_rows(&family.c, ...)``, a callback over up to
``ROWS_BLOCK`` rows at once, ``log_likelihood_rows(context, params, points, first, m,
out, work)``: ``out[k]`` <- log f(x_p | theta) for p = ``first + k`` (``points``
NULL) or ``points[k] - first``, to the last bit what ``log_likelihood`` gives, with
``rows_work_width`` doubles of scratch; one theta read once for the block, and loops
over the rows that vectorise. ``family_log_likelihood_rows`` falls back on
``log_likelihood`` row by row where a family has none.

The tests check both against the collapsed callbacks: the posterior mean of
f(x | theta) is the predictive p(x | state) (``tests/test_subcluster.py``).

Block moments (rows in blocks, in-process or on Dask workers)
--------------------------------------------------------------
A family whose statistics add up over disjoint sets of points also sets, with
``block_moments(&family.c, ...)``, a ``moments_width`` and three callbacks over a
"moments" block (the family's own additive summary, n first):

* ``moments(context, members, n, out)``: the moments of the points ``members[:n]``;
* ``moments_merge(context, acc, other)``: ``acc`` <- the moments of the union (an
  exact no-op when ``other`` is empty, a copy when ``acc`` is);
* ``moments_state(context, moments, state)``: the state of those points; < 0 on a
  numerical failure.

It may also set, with ``moments_of_states(&family.c, ...)``, ``state_moments(context,
state, moments)``: the moments of the points a state summarises, read off the state.
The merge proposals of both chains then merge two clusters' moments and build the
merged state from them (O(d^3) for a full covariance), where the collapsed chain
would otherwise add the smaller cluster's points to the larger one by one (a
rank-one update each) and the sub-cluster chain read the rows of both (a round
trip, with rows on Dask workers). Every family of vectors or counts sets it.

The sub-cluster chain builds every state from these: the rows are cut into fixed
blocks of ``row_block`` rows, each block's moments are computed on their own and
merged in block order. Floating-point sums depend on their order, and this order
is fixed by the rows alone, so a state is the same to the last bit whether the
blocks are computed by one thread, by many, or on Dask workers holding the rows.
"""

from numpy.random cimport bitgen_t

from ._permutation cimport (
    SegmentModel,
    intp_t,
    segment_add_t,
    segment_log_marginal_t,
    segment_reset_t,
)

# n, the number of points of a state, as a double: the one offset every family shares
cdef enum:
    STATE_COUNT = 0

# the most rows a ``log_likelihood_rows`` or ``log_kernel_rows`` call weighs (module
# docstring); _simd's forward_rows holds up to 16 (_gaussian_kernels checks it)
cdef enum:
    ROWS_BLOCK = 16

# state <- state minus data point ``point`` (a member, n >= 2). 0, or < 0 when the
# update failed numerically: the state is then invalid, and the core rebuilds it.
ctypedef int (*family_remove_t)(void* context, double* state, intp_t point) noexcept nogil
# the part of log p(x_point | state) that depends on the point (see log_weight)
ctypedef double (*family_log_kernel_t)(
    void* context, const double* state, intp_t point) noexcept nogil
# state <- the statistics of the points ``members[:n]`` from scratch; < 0 on failure
ctypedef int (*family_rebuild_t)(
    void* context, double* state, const intp_t* members, intp_t n) noexcept nogil
# log_kernel of m <= ROWS_BLOCK consecutive points (module docstring)
ctypedef void (*family_log_kernel_rows_t)(
    void* context, const double* state, intp_t first, intp_t m,
    double* out) noexcept nogil
# projection keys of the burn-in hill climbing: u . (point) and u . (cluster location)
# for a direction u of ``key_dim`` doubles
ctypedef double (*family_point_key_t)(
    void* context, intp_t point, const double* u) noexcept nogil
ctypedef double (*family_cluster_key_t)(
    void* context, const double* state, const double* u) noexcept nogil
# explicit parameters (module docstring)
ctypedef int (*family_draw_params_t)(
    void* context, const double* state, bitgen_t* rng, double* params) noexcept nogil
ctypedef double (*family_log_likelihood_t)(
    void* context, const double* params, intp_t point, double* work) noexcept nogil
ctypedef void (*family_log_likelihood_rows_t)(
    void* context, const double* params, const intp_t* points, intp_t first, intp_t m,
    double* out, double* work) noexcept nogil
# block moments (module docstring)
ctypedef void (*family_moments_t)(
    void* context, const intp_t* members, intp_t n, double* out) noexcept nogil
ctypedef void (*family_moments_merge_t)(
    void* context, double* acc, const double* other) noexcept nogil
ctypedef int (*family_moments_state_t)(
    void* context, const double* moments, double* state) noexcept nogil
# the moments of the points a state summarises (module docstring)
ctypedef void (*family_state_moments_t)(
    void* context, const double* state, double* moments) noexcept nogil


cdef struct ConjugateFamily:
    # What the permutation DP needs, first and by value: ``&family.segments`` is the
    # ``SegmentModel*`` it takes. ``segments.context`` and ``segments.width`` are the
    # family's context and state width for every callback below; ``reset`` writes the
    # prior (empty) state, ``add`` adds a point, ``log_marginal`` is log m(cluster).
    SegmentModel segments
    family_remove_t remove
    family_log_kernel_t log_kernel
    family_log_kernel_t log_predictive   # the whole log p(x_point | state)
    family_log_kernel_t own_log_weight   # NULL, or a member's weight as if removed
    family_log_kernel_rows_t log_kernel_rows   # NULL, or m consecutive points' kernels
    family_rebuild_t rebuild
    intp_t log_weight                    # offset of log n + constant (module docstring)
    intp_t key_dim                       # length of a projection direction u
    family_point_key_t point_key
    family_cluster_key_t cluster_key
    # explicit parameters; param_width = 0 where the family has none
    intp_t param_width
    intp_t work_width
    family_draw_params_t draw_params
    family_log_likelihood_t log_likelihood
    family_log_likelihood_rows_t log_likelihood_rows   # NULL: row by row
    intp_t rows_work_width
    # block moments; moments_width = 0 where the family has none
    intp_t moments_width
    family_moments_t moments
    family_moments_merge_t moments_merge
    family_moments_state_t moments_state
    family_state_moments_t state_moments   # NULL, or a state's moments


cdef class Family:
    # The Python face of a family: owns the context the struct points into.
    cdef ConjugateFamily c
    cdef readonly intp_t n_points        # N, the data points the callbacks index


cdef inline ConjugateFamily conjugate_family(
        void* context, intp_t width, segment_reset_t reset, segment_add_t add,
        segment_log_marginal_t log_marginal, family_remove_t remove,
        family_log_kernel_t log_kernel, family_log_kernel_t log_predictive,
        family_rebuild_t rebuild, intp_t log_weight, intp_t key_dim,
        family_point_key_t point_key, family_cluster_key_t cluster_key,
) noexcept:
    """The callback table of a family, its fields in declaration order: every
    family fills ``Family.c`` with one call, not a dozen assignments."""
    cdef ConjugateFamily f
    f.segments.context = context
    f.segments.width = width
    f.segments.reset = reset
    f.segments.add = add
    f.segments.log_marginal = log_marginal
    f.remove = remove
    f.log_kernel = log_kernel
    f.log_predictive = log_predictive
    f.own_log_weight = NULL
    f.log_kernel_rows = NULL
    f.rebuild = rebuild
    f.log_weight = log_weight
    f.key_dim = key_dim
    f.point_key = point_key
    f.cluster_key = cluster_key
    f.param_width = 0
    f.work_width = 0
    f.draw_params = NULL
    f.log_likelihood = NULL
    f.log_likelihood_rows = NULL
    f.rows_work_width = 0
    f.moments_width = 0
    f.moments = NULL
    f.moments_merge = NULL
    f.moments_state = NULL
    f.state_moments = NULL
    return f


cdef inline void own_weight(
        ConjugateFamily* f, family_log_kernel_t own_log_weight) noexcept:
    """Give a family's table a member's weight as if removed (module docstring)."""
    f.own_log_weight = own_log_weight


cdef inline void kernel_rows(
        ConjugateFamily* f, family_log_kernel_rows_t log_kernel_rows) noexcept:
    """Give a family's table the kernels of consecutive points (module docstring)."""
    f.log_kernel_rows = log_kernel_rows


cdef inline void explicit_parameters(
        ConjugateFamily* f, intp_t param_width, intp_t work_width,
        family_draw_params_t draw_params, family_log_likelihood_t log_likelihood,
) noexcept:
    """Give a family's table its explicit parameters (module docstring)."""
    f.param_width = param_width
    f.work_width = work_width
    f.draw_params = draw_params
    f.log_likelihood = log_likelihood


cdef inline void likelihood_rows(
        ConjugateFamily* f, family_log_likelihood_rows_t log_likelihood_rows,
        intp_t rows_work_width,
) noexcept:
    """Give a family's table its block of rows' likelihoods (module docstring)."""
    f.log_likelihood_rows = log_likelihood_rows
    f.rows_work_width = rows_work_width


cdef inline void moments_of_states(
        ConjugateFamily* f, family_state_moments_t state_moments) noexcept:
    """Give a family's table the moments of a state (module docstring)."""
    f.state_moments = state_moments


cdef inline void block_moments(
        ConjugateFamily* f, intp_t moments_width, family_moments_t moments,
        family_moments_merge_t moments_merge, family_moments_state_t moments_state,
) noexcept:
    """Give a family's table its block moments (module docstring)."""
    f.moments_width = moments_width
    f.moments = moments
    f.moments_merge = moments_merge
    f.moments_state = moments_state


# -- the calls, spelt once -----------------------------------------------------------

cdef inline void family_reset(const ConjugateFamily* f, double* state) noexcept nogil:
    f.segments.reset(f.segments.context, state)


cdef inline void family_add(
        const ConjugateFamily* f, double* state, intp_t point) noexcept nogil:
    f.segments.add(f.segments.context, state, point)


cdef inline int family_remove(
        const ConjugateFamily* f, double* state, intp_t point) noexcept nogil:
    return f.remove(f.segments.context, state, point)


cdef inline double family_log_kernel(
        const ConjugateFamily* f, const double* state, intp_t point) noexcept nogil:
    return f.log_kernel(f.segments.context, state, point)


cdef inline double family_log_marginal(
        const ConjugateFamily* f, const double* state) noexcept nogil:
    return f.segments.log_marginal(f.segments.context, state)


cdef inline int family_rebuild(
        const ConjugateFamily* f, double* state, const intp_t* members,
        intp_t n) noexcept nogil:
    return f.rebuild(f.segments.context, state, members, n)


cdef inline void family_log_likelihood_rows(
        const ConjugateFamily* f, const double* params, const intp_t* points,
        intp_t first, intp_t m, double* out, double* work) noexcept nogil:
    """``out[k]`` <- log f(x_p | params) of m <= ROWS_BLOCK rows (module docstring):
    the family's block callback, or ``log_likelihood`` row by row; ``work`` holds
    ``family_rows_work_width`` doubles."""
    cdef intp_t k
    if f.log_likelihood_rows != NULL:
        f.log_likelihood_rows(f.segments.context, params, points, first, m, out, work)
        return
    for k in range(m):
        out[k] = f.log_likelihood(
            f.segments.context, params, first + k if points == NULL else points[k] - first,
            work)


cdef inline intp_t family_rows_work_width(const ConjugateFamily* f) noexcept nogil:
    """The scratch of ``family_log_likelihood_rows``, per thread."""
    return f.rows_work_width if f.log_likelihood_rows != NULL else f.work_width


cdef inline int family_merged_state(
        const ConjugateFamily* f, const double* state_a, const double* state_b,
        double* moments, double* out) noexcept nogil:
    """``out`` <- the state of two states' points together, from their moments
    (``state_moments``, ``moments_merge``, ``moments_state``; module docstring),
    with ``moments`` holding 2 ``moments_width`` doubles of scratch. < 0 where the
    family has no ``state_moments`` or the merged state is not numerically valid
    (a merge proposal then adds the points one by one)."""
    cdef intp_t M = f.moments_width
    if f.state_moments == NULL:
        return -1
    f.state_moments(f.segments.context, state_a, moments)
    f.state_moments(f.segments.context, state_b, moments + M)
    f.moments_merge(f.segments.context, moments, moments + M)
    return f.moments_state(f.segments.context, moments, out)
