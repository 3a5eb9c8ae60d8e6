# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Dirichlet-multinomial kernels: the count family of the collapsed sampler core.

One cluster of the DP mixture of multinomials has probabilities p ~ Dirichlet(a)
over V features, A = sum_v a_v, and a row x of counts (|x| = sum_v x_v) the
likelihood Multinomial(x | |x|, p), coefficient included. With p integrated out, a
cluster of n rows with T tokens and per-feature counts c_v predicts x with

    log p(x | c) = log |x|! - sum_v log x_v!
                   + lgamma(A + T) - lgamma(A + T + |x|)
                   + sum_{v: x_v > 0} [lgamma(a_v + c_v + x_v) - lgamma(a_v + c_v)],

and its rows have the log marginal likelihood

    log m = lgamma(A) - lgamma(A + T) + sum_v [lgamma(a_v + c_v) - lgamma(a_v)]
            + sum over the rows of (log |x|! - sum_v log x_v!).

Every argument of a log-gamma above is a_v or A plus an integer, so the family
tabulates lgamma(a_v + m) (one table when the prior is symmetric, else one per
feature, m up to the feature's total count in the data) and lgamma(A + m) (m up to
the data's total count), m at most 2**20: a (row, cluster) pair costs two table
reads per non-zero entry of the row and no log or log-gamma call. Past the tables
(rows not in the training data, or counts past 2**20) the kernels call lgamma.
The state caches the sum over v in the marginal, updated with the same
differences when a row is added or removed, so ``log_marginal`` is O(1), and
adding or removing a row is O(nnz of the row).

The rows are kept as CSR (indptr, indices, counts), whatever the input's format.
An all-zero row has likelihood 1 in every cluster: it carries no information
and follows the CRP prior alone.

The explicit parameters of a cluster (for the sub-cluster sampler) are log p, a
draw of p | c ~ Dirichlet(a + c) made as V independent Gamma(a_v + c_v) draws in
logs (``log_gamma_variate``: a small a_v + c_v gives draws below the smallest
double), normalised; a row then costs O(nnz): log f(x | p) = log |x|! -
sum_v log x_v! + sum_{v: x_v > 0} x_v log p_v.
"""

import numpy as np
from scipy import sparse
from scipy.special import gammaln

from libc.math cimport INFINITY, lgamma, log, rint
from libc.stdint cimport int64_t
from libc.string cimport memcpy, memset

from numpy.random cimport bitgen_t

from ._family cimport (
    STATE_COUNT, Family, block_moments, conjugate_family, explicit_parameters,
    moments_of_states,
)
from ._rng cimport log_gamma_variate, log_sum_exp
from ._permutation cimport intp_t

# Layout of a state block (offsets in doubles); state[0] is n (STATE_COUNT).
cdef enum:
    S_TOTAL = 1        # T, the cluster's tokens
    S_LOG_WEIGHT = 2   # log n + lgamma(A + T) (-inf if n = 0)
    S_LOG_GAMMA = 3    # sum_v [lgamma(a_v + c_v) - lgamma(a_v)]
    S_COEF = 4         # sum over the rows of their log multinomial coefficients
    S_COUNTS = 5       # (V,) c_v


cdef struct DM:
    # The Dirichlet prior and its log-gamma tables.
    intp_t V
    double A                  # sum_v a_v
    const double* prior       # (V,) a_v
    bint symmetric            # one feature table for all v
    const double* lg_feature  # lgamma(a_v + m): m < feature_limit (symmetric), else
    const intp_t* offset      # (V + 1,) feature v's table is [offset[v], offset[v + 1])
    intp_t feature_limit
    const double* lg_total    # (total_limit,) lgamma(A + m)
    intp_t total_limit


cdef struct Rows:
    # Rows of counts, CSR, with their totals and log multinomial coefficients.
    const intp_t* indptr
    const intp_t* indices
    const intp_t* counts
    const intp_t* totals
    const double* coefs


cdef struct Context:
    # What the callbacks read; no scratch, so chains could even share one.
    const DM* p
    Rows rows


cdef inline double lg_feature(const DM* p, intp_t v, intp_t m) noexcept nogil:
    """lgamma(a_v + m), from the table when it covers m."""
    cdef intp_t base = 0, limit = p.feature_limit
    if not p.symmetric:
        base = p.offset[v]
        limit = p.offset[v + 1] - base
    if m < limit:
        return p.lg_feature[base + m]
    return lgamma(p.prior[v] + m)


cdef inline double lg_total(const DM* p, intp_t m) noexcept nogil:
    """lgamma(A + m), from the table when it covers m."""
    if m < p.total_limit:
        return p.lg_total[m]
    return lgamma(p.A + m)


cdef inline double row_gain(const DM* p, const double* s, const Rows* x, intp_t i) noexcept nogil:
    """sum_{v in row i} [lgamma(a_v + c_v + x_v) - lgamma(a_v + c_v)], O(nnz)."""
    cdef intp_t e, v, c
    cdef double gain = 0.0
    for e in range(x.indptr[i], x.indptr[i + 1]):
        v = x.indices[e]
        c = <intp_t> s[S_COUNTS + v]
        gain += lg_feature(p, v, c + x.counts[e]) - lg_feature(p, v, c)
    return gain


cdef void state_reset(const DM* p, double* s) noexcept nogil:
    memset(s, 0, (S_COUNTS + p.V) * sizeof(double))
    s[S_LOG_WEIGHT] = -INFINITY


cdef void state_move(const DM* p, double* s, const Rows* x, intp_t i, double sign) noexcept nogil:
    """Add (sign = 1) or remove (sign = -1) row i: O(nnz of the row)."""
    cdef intp_t e
    if sign > 0:
        s[S_LOG_GAMMA] += row_gain(p, s, x, i)
    for e in range(x.indptr[i], x.indptr[i + 1]):
        s[S_COUNTS + x.indices[e]] += sign * x.counts[e]
    if sign < 0:
        s[S_LOG_GAMMA] -= row_gain(p, s, x, i)
    s[STATE_COUNT] += sign
    s[S_TOTAL] += sign * x.totals[i]
    s[S_COEF] += sign * x.coefs[i]
    set_log_weight(p, s)


cdef inline void set_log_weight(const DM* p, double* s) noexcept nogil:
    """s[S_LOG_WEIGHT] <- log n + lgamma(A + T) (-inf if n = 0), from s's n and T."""
    if s[STATE_COUNT] > 0:
        s[S_LOG_WEIGHT] = log(s[STATE_COUNT]) + lg_total(p, <intp_t> s[S_TOTAL])
    else:
        s[S_LOG_WEIGHT] = -INFINITY


cdef inline double state_log_kernel(const DM* p, const double* s, const Rows* x, intp_t i) noexcept nogil:
    """log p(x_i | state) less lgamma(A + T), the part in the log weight."""
    return x.coefs[i] + row_gain(p, s, x, i) - lg_total(p, <intp_t> s[S_TOTAL] + x.totals[i])


cdef inline double state_log_marginal(const DM* p, const double* s) noexcept nogil:
    return p.lg_total[0] - lg_total(p, <intp_t> s[S_TOTAL]) + s[S_LOG_GAMMA] + s[S_COEF]


def row_statistics(X):
    """(indptr, indices, counts, totals, coefs) of a CSR matrix of counts, as intp.

    ``coefs[i]`` is log |x_i|! - sum_v log x_iv!, the log multinomial coefficient.
    """
    X = sparse.csr_matrix(X)
    if not X.has_canonical_format:
        # a repeated (row, column) entry counts once, summed (a Dask worker's chunk
        # as given; the estimator's own X is already canonical)
        X = X.copy()
        X.sum_duplicates()
    counts = np.asarray(X.data, dtype=np.intp)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    totals = np.bincount(rows, weights=counts, minlength=X.shape[0]).astype(np.intp)
    coefs = gammaln(totals + 1.0) - np.bincount(
        rows, weights=gammaln(counts + 1.0), minlength=X.shape[0])
    return (np.asarray(X.indptr, dtype=np.intp), np.asarray(X.indices, dtype=np.intp),
            counts, totals, coefs)


def _check_counts(intp_t n_columns, tuple arrays, intp_t V, str name):
    """ValueError unless ``row_statistics``' arrays describe V columns of
    non-negative counts."""
    indices, counts = arrays[1], arrays[2]
    if n_columns != V or (indices.size and not 0 <= indices.min() <= indices.max() < V):
        held = (f" with entries in columns {indices.min()}..{indices.max()}"
                if indices.size else "")
        raise ValueError(
            f"{name} must have {V} columns of counts, the model's features; "
            f"got {n_columns} columns{held}."
        )
    # (the totals are the rows' sums of these counts)
    if counts.size and counts.min() < 0:
        raise ValueError(f"{name} must hold non-negative counts.")


cdef void bind_rows(Rows* x, tuple arrays):
    cdef const intp_t[::1] indptr = arrays[0], indices = arrays[1], counts = arrays[2]
    cdef const intp_t[::1] totals = arrays[3]
    cdef const double[::1] coefs = arrays[4]
    x.indptr = &indptr[0]
    x.indices = &indices[0] if indices.shape[0] else NULL
    x.counts = &counts[0] if counts.shape[0] else NULL
    x.totals = &totals[0] if totals.shape[0] else NULL
    x.coefs = &coefs[0] if coefs.shape[0] else NULL


# The largest m whose lgamma(a_v + m) and lgamma(A + m) are tabulated (8 MiB a
# table; corpora's counts rarely come near), and the most entries the per-feature
# tables of an asymmetric prior hold together (128 MiB): past the tables the
# kernels call lgamma, so their memory stays bounded whatever the counts.
TABLE_LIMIT = 1 << 20
FEATURE_TABLES_LIMIT = 1 << 24


def _feature_table_limits(limits):
    """``limits`` capped at the largest level L <= TABLE_LIMIT whose tables,
    min(limit_v, L) + 1 entries each, hold at most FEATURE_TABLES_LIMIT in all
    (the features with the smaller counts keep their whole tables)."""
    def size(level):
        return int(np.minimum(limits, level).sum()) + len(limits)

    low, high = -1, TABLE_LIMIT  # size(low) fits (nothing tabulated past m = 0)
    if size(high) <= FEATURE_TABLES_LIMIT:
        return np.minimum(limits, high)
    while high - low > 1:
        middle = (low + high) // 2
        if size(middle) <= FEATURE_TABLES_LIMIT:
            low = middle
        else:
            high = middle
    return np.minimum(limits, max(low, 0))


cdef class DirichletMultinomial:
    """The Dirichlet prior of one cluster, with its log-gamma tables.

    Parameters
    ----------
    prior : ndarray of shape (V,)
        a_v > 0.
    feature_limits : ndarray of int of shape (V,)
        lgamma(a_v + m) is tabulated for m <= feature_limits[v] (the largest of
        them for every v when the prior is symmetric), at most ``TABLE_LIMIT``
        (and with an asymmetric prior, at most ``FEATURE_TABLES_LIMIT`` entries
        in all, ``_feature_table_limits``).
    total_limit : int
        lgamma(A + m) is tabulated for m <= total_limit, at most ``TABLE_LIMIT``.
    """

    cdef DM p
    cdef object _arrays      # the NumPy buffers behind p's pointers
    cdef object _arguments   # for pickling

    def __init__(self, prior, feature_limits, intp_t total_limit):
        prior = np.array(prior, dtype=np.float64).ravel()
        limits = np.broadcast_to(np.asarray(feature_limits, dtype=np.intp), prior.shape)
        if not (prior.size and np.all(prior > 0) and np.all(np.isfinite(prior))):
            raise ValueError("the Dirichlet prior must be positive and finite")
        symmetric = bool(np.all(prior == prior[0]))
        # the tables' memory stays bounded whatever the counts (TABLE_LIMIT)
        if symmetric:
            limits = np.minimum(limits, TABLE_LIMIT)
        else:
            limits = _feature_table_limits(limits)
        total_limit = min(total_limit, TABLE_LIMIT)
        self._arguments = (prior, np.array(limits), total_limit)
        if symmetric:
            offset = np.zeros(2, dtype=np.intp)
            table = gammaln(prior[0] + np.arange(limits.max() + 1.0))
        else:
            sizes = limits + 1
            offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.intp)
            table = gammaln(np.repeat(prior, sizes) + np.arange(offset[prior.shape[0]])
                            - np.repeat(offset[:prior.shape[0]], sizes))
        A = float(prior.sum())
        self._arrays = (prior, offset, table, gammaln(A + np.arange(total_limit + 1.0)))
        cdef const double[::1] view
        cdef const intp_t[::1] index = offset
        self.p.V = prior.shape[0]
        self.p.A = A
        self.p.symmetric = symmetric
        self.p.offset = &index[0]
        self.p.feature_limit = table.shape[0]
        self.p.total_limit = total_limit + 1
        view = prior
        self.p.prior = &view[0]
        view = table
        self.p.lg_feature = &view[0]
        view = self._arrays[3]
        self.p.lg_total = &view[0]

    def __reduce__(self):
        return DirichletMultinomial, self._arguments

    @property
    def width(self):
        """Doubles per state."""
        return S_COUNTS + self.p.V

    def family(self, X):
        """This prior bound to the CSR counts X, for ``CollapsedChain``."""
        return MultinomialFamily(self, X)

    def log_predictive(self, clusters, X):
        """(n_rows, K) log p(x_i | cluster k): the rows of the CSR counts X given the
        clusters' CSR counts (K, V) (a row of zeros: the prior predictive).

        Both are checked first (O(nnz)): the clusters' counts are a fitted
        model's state, which a user may edit or unpickle, and a column past V
        or a negative count would index past a state or a table."""
        cdef tuple arrays = row_statistics(X), cluster_arrays = row_statistics(clusters)
        _check_counts(X.shape[1], arrays, self.p.V, "X")
        _check_counts(clusters.shape[1], cluster_arrays, self.p.V, "the clusters' counts")
        cdef Rows x, c
        bind_rows(&x, arrays)
        bind_rows(&c, cluster_arrays)
        cdef intp_t i, k, e, n = X.shape[0], K = clusters.shape[0]
        out = np.empty((n, K), dtype=np.float64)
        state = np.empty(self.width, dtype=np.float64)
        cdef double[:, ::1] result = out
        cdef double[::1] s = state
        with nogil:
            for k in range(K):
                state_reset(&self.p, &s[0])
                for e in range(c.indptr[k], c.indptr[k + 1]):
                    s[S_COUNTS + c.indices[e]] = c.counts[e]
                s[S_TOTAL] = c.totals[k]
                for i in range(n):
                    result[i, k] = (state_log_kernel(&self.p, &s[0], &x, i)
                                    + lg_total(&self.p, c.totals[k]))
        return out

    def log_marginal(self, X):
        """log m of the rows of the CSR counts X as one cluster (for tests)."""
        family = MultinomialFamily(self, X)
        state = np.empty(self.width, dtype=np.float64)
        members = np.arange(X.shape[0], dtype=np.intp)
        family._rebuild(state, members)
        return family._log_marginal(state)


cdef class MultinomialFamily(Family):
    """The Dirichlet prior bound to rows of counts: the family ``CollapsedChain`` samples.

    Parameters
    ----------
    model : DirichletMultinomial
        The prior; shared, read-only.
    X : scipy.sparse CSR matrix of shape (N, V)
        Validated non-negative integer counts (the arrays are copied as intp).
    """

    cdef readonly DirichletMultinomial model
    cdef object data         # X as given, for pickling
    cdef tuple arrays        # row_statistics(X)
    cdef Context context

    def __init__(self, DirichletMultinomial model, X):
        if X.shape[1] != model.p.V:
            raise ValueError("the model does not match the data")
        self.model = model
        self.data = X
        self.arrays = row_statistics(X)
        bind_rows(&self.context.rows, self.arrays)
        self.context.p = &model.p
        self.n_points = X.shape[0]
        self.c = conjugate_family(
            &self.context, S_COUNTS + model.p.V, _reset, _add, _log_marginal,
            _remove, _log_kernel, _log_predictive, _rebuild,
            S_LOG_WEIGHT, model.p.V, _point_key, _cluster_key)
        explicit_parameters(&self.c, model.p.V, 0, _draw_params, _log_likelihood)
        block_moments(&self.c, S_COUNTS + model.p.V, _moments, _moments_merge,
                      _moments_state)
        moments_of_states(&self.c, _state_moments)

    sparse_rows = True
    exact_moments_from = S_COUNTS   # the counts (n and T too, but kept by block)

    def __reduce__(self):
        return MultinomialFamily, (self.model, self.data)

    def rows(self, indices):
        """The rows ``indices`` (0 to n_points - 1) as a CSR matrix of their
        stored counts (repeated entries summed), a copy: counts travel sparse,
        whether the rows were given dense or sparse. O(the rows' stored
        counts), gathered from the family's arrays."""
        indptr, columns, counts = self.arrays[:3]
        indices = np.asarray(indices, dtype=np.intp)
        starts = indptr[indices]
        lengths = indptr[indices + 1] - starts
        out = np.zeros(len(indices) + 1, dtype=np.intp)
        np.cumsum(lengths, out=out[1:])
        # each entry's place in the arrays: its row's start, plus its rank in it
        taken = np.repeat(starts - out[:-1], lengths) + np.arange(out[-1])
        return sparse.csr_matrix((counts[taken], columns[taken], out),
                                 shape=(len(indices), self.model.p.V))

    def copy(self):
        """This family itself: the callbacks write nothing (no scratch), so
        chains and threads share it, and the rows are not copied again."""
        return self

    def describe(self, states):
        """``(counts,)``: the clusters' per-feature counts, a (K, V) CSR matrix."""
        # The CSR arrays read straight off the states, in two passes (count,
        # then fill): every snapshot of a chain describes its states, and
        # NumPy's nonzero and rint over the dense K x V table cost ten times
        # more. The counts are sums of integers, exact in doubles; rint only
        # guards the cast.
        cdef const double[:, ::1] s = np.ascontiguousarray(states, dtype=np.float64)
        cdef intp_t K = s.shape[0], V = s.shape[1] - S_COUNTS, k, v, e = 0
        indptr_ = np.empty(K + 1, dtype=np.intp)
        cdef intp_t[::1] indptr = indptr_
        with nogil:
            indptr[0] = 0
            for k in range(K):
                for v in range(V):
                    if s[k, S_COUNTS + v] != 0.0:
                        e += 1
                indptr[k + 1] = e
        indices_ = np.empty(e, dtype=np.intp)
        data_ = np.empty(e, dtype=np.int64)
        cdef intp_t[::1] indices = indices_
        cdef int64_t[::1] data = data_
        e = 0
        with nogil:
            for k in range(K):
                for v in range(V):
                    if s[k, S_COUNTS + v] != 0.0:
                        indices[e] = v
                        data[e] = <int64_t> rint(s[k, S_COUNTS + v])
                        e += 1
        # (scipy stores the indices as int32 where they fit)
        return (sparse.csr_matrix((data_, indices_, indptr_), shape=(K, V)),)

    def _rebuild(self, double[::1] state, const intp_t[::1] members):
        return _rebuild(&self.context, &state[0], &members[0] if members.shape[0] else NULL,
                        members.shape[0])

    def _log_marginal(self, double[::1] state):
        return _log_marginal(&self.context, &state[0])


# -- the callbacks ------------------------------------------------------------------


cdef void _reset(void* context, double* state) noexcept nogil:
    state_reset((<Context*> context).p, state)


cdef void _add(void* context, double* state, intp_t point) noexcept nogil:
    cdef Context* c = <Context*> context
    state_move(c.p, state, &c.rows, point, 1.0)


cdef int _remove(void* context, double* state, intp_t point) noexcept nogil:
    cdef Context* c = <Context*> context
    state_move(c.p, state, &c.rows, point, -1.0)
    return 0


cdef int _rebuild(void* context, double* state, const intp_t* members, intp_t n) noexcept nogil:
    cdef Context* c = <Context*> context
    cdef intp_t r
    state_reset(c.p, state)
    for r in range(n):
        state_move(c.p, state, &c.rows, members[r], 1.0)
    return 0


cdef double _log_kernel(void* context, const double* state, intp_t point) noexcept nogil:
    cdef Context* c = <Context*> context
    return state_log_kernel(c.p, state, &c.rows, point)


cdef double _log_predictive(void* context, const double* state, intp_t point) noexcept nogil:
    cdef Context* c = <Context*> context
    return (state_log_kernel(c.p, state, &c.rows, point)
            + lg_total(c.p, <intp_t> state[S_TOTAL]))


cdef double _log_marginal(void* context, const double* state) noexcept nogil:
    return state_log_marginal((<Context*> context).p, state)


# -- block moments (``_family.pxd``): a state's layout with its sums alone -----------
# n, T, the coefficients' sum and the counts add up over disjoint rows; the two
# cached fields (S_LOG_WEIGHT, S_LOG_GAMMA) are left 0 and filled in from the
# counts by ``_moments_state``, O(V), so a state does not depend on the order in
# which its rows were added. The counts and T are integers, exact in any order;
# only the coefficients' sum is a rounded one, and the blocks fix its order.


cdef void _moments(void* context, const intp_t* members, intp_t n,
                   double* out) noexcept nogil:
    cdef Context* c = <Context*> context
    cdef const Rows* x = &c.rows
    cdef intp_t r, e, i
    memset(out, 0, (S_COUNTS + c.p.V) * sizeof(double))
    for r in range(n):
        i = members[r]
        for e in range(x.indptr[i], x.indptr[i + 1]):
            out[S_COUNTS + x.indices[e]] += x.counts[e]
        out[S_TOTAL] += x.totals[i]
        out[S_COEF] += x.coefs[i]
    out[STATE_COUNT] = n


cdef void _moments_merge(void* context, double* acc, const double* other) noexcept nogil:
    cdef intp_t k, width = S_COUNTS + (<Context*> context).p.V
    if other[STATE_COUNT] == 0:
        return
    if acc[STATE_COUNT] == 0:   # an empty acc holds only its count
        memcpy(acc, other, width * sizeof(double))
        return
    for k in range(width):
        acc[k] += other[k]   # the cached fields stay 0, as they are in other


cdef void _state_moments(void* context, const double* state, double* out) noexcept nogil:
    """A state's moments, read off it: its sums (n, T, the coefficients' sum and
    the counts), with the cached fields 0 as ``_moments`` leaves them."""
    memcpy(out, state, (S_COUNTS + (<Context*> context).p.V) * sizeof(double))
    out[S_LOG_WEIGHT] = 0.0
    out[S_LOG_GAMMA] = 0.0


cdef int _moments_state(void* context, const double* moments, double* state) noexcept nogil:
    cdef const DM* p = (<Context*> context).p
    cdef intp_t v
    cdef double log_gamma = 0.0
    if moments[STATE_COUNT] == 0:   # only the count of an empty block is set
        state_reset(p, state)
        return 0
    memcpy(state, moments, (S_COUNTS + p.V) * sizeof(double))
    for v in range(p.V):
        if moments[S_COUNTS + v] > 0:
            log_gamma += (lg_feature(p, v, <intp_t> moments[S_COUNTS + v])
                          - lg_feature(p, v, 0))
    state[S_LOG_GAMMA] = log_gamma
    set_log_weight(p, state)
    return 0


cdef double _point_key(void* context, intp_t point, const double* u) noexcept nogil:
    """u . (x / |x|), the row's proportions (0 for an empty row)."""
    cdef const Rows* x = &(<Context*> context).rows
    cdef intp_t e
    cdef double key = 0.0
    for e in range(x.indptr[point], x.indptr[point + 1]):
        key += u[x.indices[e]] * x.counts[e]
    return key / x.totals[point] if x.totals[point] > 0 else 0.0


cdef double _cluster_key(void* context, const double* state, const double* u) noexcept nogil:
    """u . (a + c) / (A + T), the cluster's posterior mean probabilities, O(V)."""
    cdef const DM* p = (<Context*> context).p
    cdef intp_t v
    cdef double key = 0.0
    for v in range(p.V):
        key += u[v] * (p.prior[v] + state[S_COUNTS + v])
    return key / (p.A + state[S_TOTAL])


cdef int _draw_params(void* context, const double* state, bitgen_t* rng,
                      double* params) noexcept nogil:
    """log p, p ~ Dirichlet(a + c): normalised Gamma draws, in logs, O(V)."""
    cdef const DM* p = (<Context*> context).p
    cdef intp_t v
    cdef double log_total
    for v in range(p.V):
        params[v] = log_gamma_variate(rng, p.prior[v] + state[S_COUNTS + v])
    log_total = log_sum_exp(params, p.V)
    for v in range(p.V):
        params[v] -= log_total
    return 0


cdef double _log_likelihood(void* context, const double* params, intp_t point,
                            double* work) noexcept nogil:
    """log Multinomial(x | |x|, p), coefficient included, O(nnz of the row)."""
    cdef const Rows* x = &(<Context*> context).rows
    cdef intp_t e
    cdef double value = x.coefs[point]
    for e in range(x.indptr[point], x.indptr[point + 1]):
        value += x.counts[e] * params[x.indices[e]]
    return value
