# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Normal-inverse-Wishart kernels: Cholesky updates, Student-t predictives, marginals.

One cluster of the DP Gaussian mixture has the conjugate prior

    Sigma ~ InvWishart(Psi_0, nu_0),    mu | Sigma ~ N(m_0, Sigma / kappa_0)

(``full``), or, for ``diag``, the product over dimensions j of the one-dimensional
case sigma_j^2 ~ InvGamma(nu_0 / 2, psi_0j / 2), mu_j | sigma_j^2 ~ N(m_0j,
sigma_j^2 / kappa_0). With both mu and Sigma integrated out, a cluster of n points
is summarised by kappa_n = kappa_0 + n, nu_n = nu_0 + n, m_n and Psi_n, which a
new point x changes by the rank-one update

    Psi_{n+1} = Psi_n + kappa_n / (kappa_n + 1) (x - m_n)(x - m_n)^T,
    m_{n+1} = (kappa_n m_n + x) / (kappa_n + 1).

A state stores m_n and the Cholesky factor L of Psi_n (column-major lower, so that
both the rank-one update and the column-oriented triangular solve run along
contiguous memory), updated in O(d^2) per added or removed point; ``diag`` stores
the vector psi_n. The predictive of x is the Student-t

    t_{nu_n - d + 1}(x | m_n, Psi_n (kappa_n + 1) / (kappa_n (nu_n - d + 1))),

whose log-density, with u = L^{-1} (x - m_n), is

    C_n - (nu_n + 1) / 2 log(1 + kappa_n / (kappa_n + 1) |u|^2),
    C_n = lgamma((nu_n + 1) / 2) - lgamma((nu_n - d + 1) / 2)
          - d / 2 log(pi (kappa_n + 1) / kappa_n) - 1/2 log |Psi_n|.

C_n is cached in the state and refreshed when the cluster changes, so one (point,
cluster) pair costs one triangular solve, O(d^2), and one log; the log-gamma terms
come from a table over n. The log marginal likelihood of the cluster is

    -n d / 2 log pi + log Gamma_d(nu_n / 2) - log Gamma_d(nu_0 / 2)
    + nu_0 / 2 log |Psi_0| - nu_n / 2 log |Psi_n| + d / 2 log(kappa_0 / kappa_n)

(Murphy 2007, "Conjugate Bayesian analysis of the Gaussian distribution", eq. 266;
``diag`` sums the d one-dimensional cases).

Explicit parameters (the sub-cluster sampler) are a posterior draw of (mu, Sigma)
kept as mu, the lower Cholesky factor C of the precision Sigma^{-1} and the log
normaliser, so that a row costs one triangular product, O(d^2 / 2):

    log N(x | mu, Sigma) = -d / 2 log(2 pi) + sum_j log C_jj - |C^T (x - mu)|^2 / 2.

C is kept by rows (row j, C_j0 .. C_jj, at j * d), so that z = C^T y is built as
z[:j + 1] += C[j, :j + 1] y_j for j = 0..d-1: an update of independent entries,
which the compiler runs in SIMD lanes, where a dot product per entry of z is a
chain of dependent additions it may not reorder. Each z_k still sums its terms
in the order j = k..d-1, as the dot product did, so the value is the same.

The precision is drawn by Bartlett's decomposition: Sigma^{-1} ~ Wishart(Psi_n^{-1},
nu_n) is L^{-T} A A^T L^{-1} with L L^T = Psi_n (the state's factor), A lower
triangular, A_jj^2 ~ chi^2(nu_n - j) (j = 0..d-1) and A_ij ~ N(0, 1) below the
diagonal; then mu = m_n + C^{-T} z / sqrt(kappa_n), z ~ N(0, I), has covariance
Sigma / kappa_n. ``diag`` draws sigma_j^2 = (psi_nj / 2) / Gamma(nu_n / 2) and
mu_j ~ N(m_nj, sigma_j^2 / kappa_n), and keeps 1 / sigma_j in place of C.

Scoring new rows (``score_samples``, ``predict_proba``) evaluates the Student-t
predictives of a fitted draw's clusters, read off the states by
``describe_states``: ``student_t_log_density`` fills the (rows, clusters) table
in one compiled pass, parallel over blocks of rows, for the full, diagonal and
spherical (``_isotropic_kernels``) families alike.
"""

import numpy as np
from scipy.special import gammaln

from libc.math cimport (
    INFINITY, M_LN2, M_PI, NAN, exp, fabs, frexp, isfinite, ldexp, lgamma, log, log1p,
    sqrt,
)
from libc.stdint cimport uint64_t
from libc.string cimport memcpy

from cython.parallel cimport prange, threadid
from numpy.random cimport bitgen_t

from ._family cimport (
    ROWS_BLOCK, STATE_COUNT, Family, block_moments, conjugate_family,
    explicit_parameters, kernel_rows, likelihood_rows, moments_of_states,
    own_weight,
)
from ._openmp cimport max_threads
from ._rng cimport random_standard_gamma, random_standard_normal
from ._simd cimport (
    add1, add4, add_scaled_difference, forward_rows, lower_rows, rotate,
    scaled_squares, squared_distance, squares_rows,
)

# _simd.forward_rows keeps each of a block's rows in arrays of 16
if ROWS_BLOCK > 16:
    raise ImportError("ROWS_BLOCK exceeds the 16 rows _simd.forward_rows holds")

# The diagonal predictive multiplies the d factors (1 + ...) and takes one log; it
# flushes the running product to the log-sum before it can overflow.
cdef double PRODUCT_FLUSH = 1e150


cdef inline void flushed_product(double factor, double* log_sum, double* product) noexcept nogil:
    """Multiply ``factor`` (>= 1) into ``product``, moving it into ``log_sum`` in logs
    before it can overflow: sum_j log(factor_j) = log_sum + log(product) at the end."""
    if factor > PRODUCT_FLUSH:
        log_sum[0] += log(factor)
    else:
        product[0] *= factor
        if product[0] > PRODUCT_FLUSH:
            log_sum[0] += log(product[0])
            product[0] = 1.0


# -- Cholesky factors ---------------------------------------------------------------
# L is lower triangular, stored column-major: L_ik (i >= k) is L[k * d + i].


cdef int chol_update(
        double* L,   # INOUT (d, d) column-major lower factor
        double* v,   # INOUT (d,) destroyed
        intp_t d,
) noexcept nogil:
    """L L^T + v v^T, in place, by Givens rotations (LINPACK dchud). Returns 0."""
    cdef intp_t k
    cdef double r, c, s, lkk
    cdef double* col
    for k in range(d):
        col = L + k * d
        lkk = col[k]
        r = sqrt(lkk * lkk + v[k] * v[k])
        c = r / lkk
        s = v[k] / lkk
        col[k] = r
        rotate(d - k - 1, col + k + 1, v + k + 1, c, s, s)
    return 0


cdef int chol_downdate(
        double* L,   # INOUT (d, d) column-major lower factor
        double* v,   # INOUT (d,) destroyed
        intp_t d,
) noexcept nogil:
    """L L^T - v v^T, in place, by hyperbolic rotations (LINPACK dchdd).

    Returns -1, leaving L unusable, if the result is not numerically positive
    definite; the caller then refactorises from the data.
    """
    cdef intp_t k
    cdef double r2, r, c, s, lkk
    cdef double* col
    for k in range(d):
        col = L + k * d
        lkk = col[k]
        r2 = (lkk - v[k]) * (lkk + v[k])
        # A pivot that loses all but ~7 digits means the downdate is unreliable.
        if not (r2 > 1e-14 * lkk * lkk):
            return -1
        r = sqrt(r2)
        c = r / lkk
        s = v[k] / lkk
        col[k] = r
        rotate(d - k - 1, col + k + 1, v + k + 1, c, -s, s)
    return 0


cdef int cholesky(
        double* A,   # INOUT (d, d) symmetric in, column-major lower factor out
        intp_t d,
) noexcept nogil:
    """Cholesky factorisation in place; reads the lower triangle. -1 if not PD."""
    cdef intp_t i, j, k
    cdef double s, ljj
    for j in range(d):
        s = A[j * d + j]
        for k in range(j):
            s -= A[k * d + j] * A[k * d + j]
        if not (s > 0.0 and isfinite(s)):
            return -1
        ljj = sqrt(s)
        A[j * d + j] = ljj
        for i in range(j + 1, d):
            s = A[j * d + i]
            for k in range(j):
                s -= A[k * d + i] * A[k * d + j]
            A[j * d + i] = s / ljj
        for i in range(j):
            A[j * d + i] = 0.0
    return 0


# -- cluster states -----------------------------------------------------------------


cdef double dot(const double* u, const double* x, intp_t d) noexcept nogil:
    """u . x over d entries (the burn-in's projection keys of every Gaussian family)."""
    cdef double total = 0.0
    cdef intp_t j
    for j in range(d):
        total += u[j] * x[j]
    return total


cdef void location_add(
        double* s,          # INOUT state: its count s[STATE_COUNT], n -> n + 1
        double* mean,       # INOUT (d,) m_n -> m_{n+1}
        const double* x,    # IN (d,)
        intp_t d,
        double kappa_n,     # kappa_0 + n, before the point joins
) noexcept nogil:
    """m_{n+1} = (kappa_n m_n + x) / (kappa_n + 1), as m_n + (x - m_n) / (kappa_n + 1).

    Every Gaussian family's state starts with the count and the location, so the
    families' ``state_add`` end here and in their own ``state_refresh``.
    """
    cdef intp_t j
    for j in range(d):
        mean[j] += (x[j] - mean[j]) / (kappa_n + 1.0)
    s[STATE_COUNT] += 1.0


cdef void location_remove(
        double* s,          # INOUT state: its count s[STATE_COUNT], n -> n - 1
        double* mean,       # INOUT (d,) m_n -> m_{n-1}
        const double* x,    # IN (d,) a member
        intp_t d,
        double kappa_n,     # kappa_0 + n, before the point leaves
) noexcept nogil:
    """m_{n-1} = (kappa_n m_n - x) / (kappa_n - 1): the inverse of ``location_add``."""
    cdef intp_t j
    for j in range(d):
        mean[j] = (kappa_n * mean[j] - x[j]) / (kappa_n - 1.0)
    s[STATE_COUNT] -= 1.0


cdef void members_mean(
        const double* X,          # IN (N, d) row-major data
        const intp_t* members,    # IN (n,) rows of X, n >= 1
        intp_t n,
        intp_t d,
        double* xbar,             # OUT (d,)
) noexcept nogil:
    """The mean of the rows ``members`` of X: the first pass of a two-pass rebuild."""
    cdef intp_t i, j
    cdef const double* x
    for j in range(d):
        xbar[j] = 0.0
    for i in range(n):
        x = X + members[i] * d
        for j in range(d):
            xbar[j] += x[j]
    for j in range(d):
        xbar[j] /= n



cdef inline double log_product(const double* values, intp_t n, intp_t stride) noexcept nogil:
    """sum_j log(values[j * stride]) for positive finite values, with one log.

    Every point move refreshes a state, and d logs per refresh cost more than the
    rest of it: the mantissas (in [0.5, 1)) are multiplied and the binary
    exponents summed instead, renormalising every 32 factors (the product stays
    above 2^-33 before it does, so it never underflows). A non-positive,
    infinite or NaN value gives NaN or inf, as the sum of logs would.
    """
    cdef intp_t j
    cdef int exponent, total = 0
    cdef double product = 1.0
    for j in range(n):
        product *= _mantissa(values[j * stride], &exponent)
        total += exponent
        if j % 32 == 31:
            product = _mantissa(product, &exponent)
            total += exponent
    return log(product) + total * M_LN2


cdef inline double _mantissa(double value, int* exponent) noexcept nogil:
    """frexp, inline for positive normal doubles: value = m 2^e, m in [0.5, 1).

    Zero, subnormals, infinities, NaN and negative values (a sign bit makes the
    top bits >= 0x800) go to the library, so that they propagate as log would.
    """
    cdef uint64_t bits
    memcpy(&bits, &value, sizeof(double))
    if (bits >> 52) == 0 or (bits >> 52) >= 0x7FF:
        return frexp(value, exponent)
    exponent[0] = <int> (bits >> 52) - 1022
    # keep the 52 fraction bits, set the biased exponent to 1022 (2^-1)
    bits = (bits & (((<uint64_t> 1) << 52) - 1)) | ((<uint64_t> 1022) << 52)
    memcpy(&value, &bits, sizeof(double))
    return value


cdef void state_refresh(const NIW* p, double* s) noexcept nogil:
    """Recompute the cached inverses, log-det and predictive constant of a state."""
    cdef intp_t j, d = p.d, n = <intp_t> s[S_COUNT]
    cdef double* scale = s + p.scale_off
    cdef double* inv = s + p.inv_off
    cdef double log_det = 0.0, kn = p.kappa + n
    if p.full:
        for j in range(d):
            inv[j] = 1.0 / scale[j * d + j]
        log_det = 2.0 * log_product(scale, d, d + 1)
    else:
        for j in range(d):
            inv[j] = 1.0 / scale[j]
        log_det = log_product(scale, d, 1)
    s[S_LOG_DET] = log_det
    s[S_LOG_CONST] = p.lg_pred[n] - 0.5 * d * log(M_PI * (kn + 1.0) / kn) - 0.5 * log_det
    s[S_LOG_WEIGHT] = log(<double> n) + s[S_LOG_CONST] if n > 0 else -INFINITY


cdef void state_add(
        const NIW* p,
        double* s,          # INOUT state
        const double* x,    # IN (d,)
        double* work,       # scratch (d,)
) noexcept nogil:
    """Add point x to the cluster: rank-one update of L (or of psi), O(d^2)."""
    cdef intp_t j, d = p.d
    cdef double kn = p.kappa + s[S_COUNT]
    cdef double* mean = s + S_MEAN
    cdef double* scale = s + p.scale_off
    cdef double coef, diff
    if p.full:
        coef = sqrt(kn / (kn + 1.0))
        for j in range(d):
            work[j] = (x[j] - mean[j]) * coef
        chol_update(scale, work, d)
    else:
        coef = kn / (kn + 1.0)
        for j in range(d):
            diff = x[j] - mean[j]
            scale[j] += coef * diff * diff
    location_add(s, mean, x, d, kn)
    state_refresh(p, s)


cdef int state_remove(
        const NIW* p,
        double* s,          # INOUT state, with x among its n >= 2 points
        const double* x,    # IN (d,)
        double* work,       # scratch (d,)
) noexcept nogil:
    """Remove point x from the cluster, O(d^2): the inverse of ``state_add``.

    With kappa' = kappa_0 + n and kappa = kappa' - 1, x - m_{n-1} equals
    kappa' / kappa (x - m_n), so Psi_{n-1} = Psi_n - kappa' / kappa (x - m_n)(...)^T.
    Returns -1 if the downdate lost positive definiteness (the state is then
    invalid and must be rebuilt from its members), 0 otherwise.
    """
    cdef intp_t j, d = p.d
    cdef double kn1 = p.kappa + s[S_COUNT]
    cdef double kn = kn1 - 1.0
    cdef double* mean = s + S_MEAN
    cdef double* scale = s + p.scale_off
    cdef double coef, diff
    cdef int status = 0
    if p.full:
        coef = sqrt(kn1 / kn)
        for j in range(d):
            work[j] = (x[j] - mean[j]) * coef
        status = chol_downdate(scale, work, d)
    else:
        coef = kn1 / kn
        for j in range(d):
            diff = x[j] - mean[j]
            scale[j] -= coef * diff * diff
            # psi_n >= psi_0 exactly; falling below it means cancellation ate it.
            if not (scale[j] > (1.0 - 1e-8) * p.psi[j]):
                status = -1
    location_remove(s, mean, x, d, kn1)
    if status == 0:
        state_refresh(p, s)
    return status


cdef int state_rebuild(
        const NIW* p,
        double* s,                # OUT state
        const double* X,          # IN (N, d) row-major data
        const intp_t* members,    # IN (n,) rows of X in the cluster
        intp_t n,
        double* work,             # scratch (d * d + d,)
) noexcept nogil:
    """The state of a set of points from scratch (two-pass scatter), O(n d^2 + d^3).

    Psi_n = Psi_0 + sum_i (x_i - xbar)(x_i - xbar)^T
    + kappa_0 n / (kappa_0 + n) (xbar - m_0)(xbar - m_0)^T. Returns -1 if Psi_n is
    not numerically positive definite.
    """
    cdef intp_t j, d = p.d
    cdef double* xbar = work
    cdef double* P = work + d
    cdef double* scale = s + p.scale_off
    cdef double w
    if n == 0:
        memcpy(s, p.prior, p.width * sizeof(double))
        return 0
    members_mean(X, members, n, d, xbar)
    if p.full:
        memcpy(P, p.psi, d * d * sizeof(double))
        add_scatter(p, X, members, n, xbar, P)
        return state_finish(p, s, n, xbar, P, NULL)
    w = p.kappa * n / (p.kappa + n)
    for j in range(d):
        scale[j] = p.psi[j] + w * (xbar[j] - p.mean[j]) ** 2
    add_scatter(p, X, members, n, xbar, scale)
    return state_finish(p, s, n, xbar, NULL, NULL)


cdef void add_scatter(
        const NIW* p,
        const double* X,          # IN (N, d) row-major data
        const intp_t* members,    # IN (n,) rows of X
        intp_t n,
        const double* xbar,       # IN (d,) the rows' mean
        double* out,              # INOUT kept as the scale is (below)
) noexcept nogil:
    """out += sum_i (x_i - xbar)(x_i - xbar)^T, a row at a time: entries (k, j),
    k >= j, at j * d + k (full), the diagonal (diag)."""
    cdef intp_t i, j, d = p.d
    cdef const double* x
    cdef double yj
    for i in range(n):
        x = X + members[i] * d
        for j in range(d):
            yj = x[j] - xbar[j]
            if p.full:
                add_scaled_difference(d - j, out + j * d + j, x + j, xbar + j, yj)
            else:
                out[j] += yj * yj


cdef int state_finish(
        const NIW* p,
        double* s,                # INOUT state; diag: its scale is set
        double n,                 # >= 1 points
        const double* xbar,       # IN (d,) their mean
        double* P,                # full: INOUT (d, d) Psi_0 (+ their scatter); diag: NULL
        const double* M2,         # full: IN their scatter, or NULL if P holds it
) noexcept nogil:
    """The rest of the state of n points of mean ``xbar``: for full, Psi_n = P (+
    M2) + kappa_0 n / kappa_n (xbar - m_0)(xbar - m_0)^T and its Cholesky factor;
    then m_n, n and the cached terms. -1 if Psi_n is not numerically positive
    definite."""
    cdef intp_t j, k, d = p.d
    cdef double w = p.kappa * n / (p.kappa + n), yj
    if p.full:
        for j in range(d):
            yj = xbar[j] - p.mean[j]
            for k in range(j, d):
                P[j * d + k] += ((M2[j * d + k] if M2 != NULL else 0.0)
                                 + w * yj * (xbar[k] - p.mean[k]))
        if cholesky(P, d) < 0:
            return -1
        memcpy(s + p.scale_off, P, d * d * sizeof(double))
    for j in range(d):
        s[S_MEAN + j] = (p.kappa * p.mean[j] + n * xbar[j]) / (p.kappa + n)
    s[S_COUNT] = n
    state_refresh(p, s)
    return 0


# The context of the NIW family's callbacks (``_family.pxd``).
cdef struct NIWContext:
    const NIW* p
    intp_t d            # p.d, one load nearer for the per-point callbacks
    const double* X     # (N, d) row-major data
    double* work        # scratch: d * d + d (state_rebuild), ROWS_BLOCK * d
    intp_t n            # the rows of X
    double* rows_t      # (d, ROWS_BLOCK): rows rows_first.. of X, transposed
    intp_t rows_first   # -1 before the first block
    intp_t rows_count


# -- block moments (``_family.pxd``): [n, xbar (d), M2 (scale_size)] ---------------
# M2 is the scatter about xbar, sum_i (x_i - xbar)(x_i - xbar)^T, kept as the
# ``scale`` is: entries (k, j), k >= j, at j * d + k (full), the diagonal (diag).


cdef void _niw_moments(
        void* context,            # NIWContext
        const intp_t* members,    # IN (n,) rows of X
        intp_t n,
        double* out,              # OUT (1 + d + scale_size,)
) noexcept nogil:
    """The moments of the rows ``members`` (two passes, as ``state_rebuild``)."""
    cdef const NIW* p = (<NIWContext*> context).p
    cdef const double* X = (<NIWContext*> context).X
    cdef intp_t j, d = p.d
    cdef double* xbar = out + 1
    cdef double* M2 = out + 1 + d
    out[0] = n
    for j in range(p.scale_size):
        M2[j] = 0.0
    if n == 0:
        for j in range(d):
            xbar[j] = 0.0
        return
    members_mean(X, members, n, d, xbar)
    add_scatter(p, X, members, n, xbar, M2)


cdef void _niw_moments_merge(void* context, double* acc, const double* other) noexcept nogil:
    """acc <- the moments of the union (Chan, Golub & LeVeque's pairwise update)."""
    cdef const NIW* p = (<NIWContext*> context).p
    cdef intp_t j, k, d = p.d
    cdef double na = acc[0], nb = other[0], n = na + nb, c
    cdef double* xbar = acc + 1
    cdef double* M2 = acc + 1 + d
    cdef const double* xbar_b = other + 1
    cdef const double* M2_b = other + 1 + d
    if nb == 0.0:
        return
    if na == 0.0:
        memcpy(acc, other, (1 + d + p.scale_size) * sizeof(double))
        return
    c = na * nb / n
    for j in range(d):
        if p.full:
            for k in range(j, d):
                M2[j * d + k] += M2_b[j * d + k] + c * (xbar_b[j] - xbar[j]) * (
                    xbar_b[k] - xbar[k])
        else:
            M2[j] += M2_b[j] + c * (xbar_b[j] - xbar[j]) ** 2
    for j in range(d):
        xbar[j] += (xbar_b[j] - xbar[j]) * (nb / n)
    acc[0] = n


cdef void _niw_state_moments(
        void* context,            # NIWContext
        const double* s,          # IN state
        double* out,              # OUT (1 + d + scale_size,)
) noexcept nogil:
    """The moments of the points a state summarises, read off it: with kappa_n =
    kappa_0 + n, xbar = (kappa_n m_n - kappa_0 m_0) / n and M2 = Psi_n - Psi_0 -
    kappa_0 n / kappa_n (xbar - m_0)(xbar - m_0)^T, Psi_n = L L^T (O(d^3 / 6);
    the lower triangle, as ``_niw_moments`` keeps M2). What ``_niw_moments_state``
    adds back, Psi_0 included, makes any rounding here small against Psi_n."""
    cdef const NIW* p = (<NIWContext*> context).p
    cdef intp_t j, k, t, d = p.d
    cdef double n = s[S_COUNT], kn = p.kappa + n, w, yj, psi
    cdef double* xbar = out + 1
    cdef double* M2 = out + 1 + d
    cdef const double* L = s + p.scale_off
    out[0] = n
    if n == 0.0:
        for j in range(d):
            xbar[j] = 0.0
        for j in range(p.scale_size):
            M2[j] = 0.0
        return
    w = p.kappa * n / kn
    for j in range(d):
        xbar[j] = (kn * s[S_MEAN + j] - p.kappa * p.mean[j]) / n
    for j in range(d):
        yj = xbar[j] - p.mean[j]
        if not p.full:
            M2[j] = L[j] - p.psi[j] - w * yj * yj
            continue
        for k in range(j, d):
            psi = 0.0
            for t in range(j + 1):
                psi += L[t * d + k] * L[t * d + j]
            M2[j * d + k] = psi - p.psi[j * d + k] - w * yj * (xbar[k] - p.mean[k])


cdef int _niw_moments_state(
        void* context,            # NIWContext
        const double* moments,    # IN (1 + d + scale_size,)
        double* s,                # OUT state
) noexcept nogil:
    """The state of the points the moments summarise; -1 if Psi_n is not
    numerically positive definite (as ``state_rebuild``)."""
    cdef const NIW* p = (<NIWContext*> context).p
    cdef double* work = (<NIWContext*> context).work   # (d * d,) scratch
    cdef intp_t j, d = p.d
    cdef double n = moments[0], w
    cdef const double* xbar = moments + 1
    cdef const double* M2 = moments + 1 + d
    cdef double* scale = s + p.scale_off
    if n == 0.0:
        memcpy(s, p.prior, p.width * sizeof(double))
        return 0
    if p.full:
        memcpy(work, p.psi, d * d * sizeof(double))
        return state_finish(p, s, n, xbar, work, M2)
    w = p.kappa * n / (p.kappa + n)
    for j in range(d):
        scale[j] = p.psi[j] + w * (xbar[j] - p.mean[j]) ** 2 + M2[j]
    return state_finish(p, s, n, xbar, NULL, NULL)


cdef double state_log_predictive(
        const NIW* p,
        const double* s,    # IN state
        const double* x,    # IN (d,)
        double* work,       # scratch (d,)
) noexcept nogil:
    """log p(x | cluster): the Student-t predictive (module docstring), O(d^2)."""
    return s[S_LOG_CONST] + state_log_kernel(p, s, x, work)


cdef double full_quadratic(
        const NIW* p,
        const double* s,    # IN state, full
        const double* x,    # IN (d,)
        double* work,       # scratch (d,)
) noexcept nogil:
    """(x - m_n)^T Psi_n^{-1} (x - m_n) = |L^{-1} (x - m_n)|^2, O(d^2 / 2).

    Column-oriented forward substitution: u = L^{-1} (x - m), |u|^2 summed as the
    entries come out."""
    cdef intp_t j, k, d = p.d
    cdef const double* mean = s + S_MEAN
    cdef const double* scale = s + p.scale_off
    cdef const double* inv = s + p.inv_off
    cdef const double* col
    cdef const double* c1
    cdef const double* c2
    cdef const double* c3
    cdef double q = 0.0, z, z1, z2, z3
    for j in range(d):
        work[j] = x[j] - mean[j]
    k = 0
    while k + 4 <= d:
        # four columns at once: their 4 x 4 triangle column by column, then
        # each later entry less the four columns' terms in column order (the
        # subtractions of one column at a time, in the same order), which
        # loads and stores work[j] once per four terms
        col = scale + k * d
        c1 = col + d
        c2 = c1 + d
        c3 = c2 + d
        z = work[k] * inv[k]
        q += z * z
        work[k + 1] -= col[k + 1] * z
        work[k + 2] -= col[k + 2] * z
        work[k + 3] -= col[k + 3] * z
        z1 = work[k + 1] * inv[k + 1]
        q += z1 * z1
        work[k + 2] -= c1[k + 2] * z1
        work[k + 3] -= c1[k + 3] * z1
        z2 = work[k + 2] * inv[k + 2]
        q += z2 * z2
        work[k + 3] -= c2[k + 3] * z2
        z3 = work[k + 3] * inv[k + 3]
        q += z3 * z3
        # work[j] - col[j] z == work[j] + col[j] (-z), to the bit
        add4(d - k - 4, work + k + 4, col + k + 4, c1 + k + 4, c2 + k + 4,
             c3 + k + 4, -z, -z1, -z2, -z3)
        k += 4
    while k < d:
        z = work[k] * inv[k]
        q += z * z
        col = scale + k * d
        add1(d - k - 1, work + k + 1, col + k + 1, -z)   # work[j] -= col[j] z
        k += 1
    return q


cdef double state_log_kernel(
        const NIW* p,
        const double* s,    # IN state
        const double* x,    # IN (d,)
        double* work,       # scratch (d,)
) noexcept nogil:
    """The part of log p(x | cluster) that depends on x: -(nu_n + 1) / 2 log(1 + ...).

    The samplers add it to the cached S_LOG_WEIGHT = log n + S_LOG_CONST.
    """
    cdef intp_t j, d = p.d
    cdef double kn = p.kappa + s[S_COUNT]
    cdef double half_power = 0.5 * (p.nu + s[S_COUNT] + 1.0)
    cdef double coef = kn / (kn + 1.0)
    cdef const double* mean = s + S_MEAN
    cdef const double* inv = s + p.inv_off
    cdef double q = 0.0, diff, product = 1.0
    if p.full:
        return -half_power * log1p(coef * full_quadratic(p, s, x, work))
    # diag: a product of d one-dimensional Student-t terms, one log for all of them
    for j in range(d):
        diff = x[j] - mean[j]
        flushed_product(1.0 + coef * diff * diff * inv[j], &q, &product)
    return -half_power * (q + log(product))


# the own weight falls back on a removal where 1 - c a (below) is this small: the
# ratio of determinants |Psi_{n-1}| / |Psi_n| it stands for would have lost more
# than half its digits to cancellation
cdef double OWN_WEIGHT_MIN_RATIO = 1e-8


cdef double state_own_log_weight(
        const NIW* p,
        const double* s,    # IN state, with x among its n >= 2 points
        const double* x,    # IN (d,)
        double* work,       # scratch (d,)
) noexcept nogil:
    """The Gibbs weight of x for the cluster of ``s`` without x, from ``s``: what
    ``state_remove`` followed by S_LOG_WEIGHT + ``state_log_kernel`` give, O(d^2 /
    2) (full) or O(d) instead of an update; NaN where it would be inaccurate.

    With kappa = kappa_0 + n, u = x - m_n, a = u^T Psi_n^{-1} u and c = kappa /
    (kappa - 1) (``state_remove``: x - m_{n-1} = c u and Psi_{n-1} = Psi_n - c u
    u^T), the matrix determinant lemma and Sherman-Morrison give |Psi_{n-1}| =
    |Psi_n| (1 - c a) and (kappa - 1) / kappa (x - m_{n-1})^T Psi_{n-1}^{-1} (x -
    m_{n-1}) = c a / (1 - c a), so the weight is log(n - 1) + lg_pred[n - 1] -
    d / 2 log(pi kappa / (kappa - 1)) - log|Psi_n| / 2 + (nu_0 + n - 1) / 2
    log(1 - c a). Diagonal: the same for each feature j, with a_j = u_j^2 /
    psi_nj, log(1 - c a) becoming the sum over j of log(1 - c a_j) (one log of
    the product of the 1 / (1 - c a_j), as ``state_log_kernel`` takes)."""
    cdef intp_t j, d = p.d
    cdef double n = s[S_COUNT], kn = p.kappa + n, c = kn / (kn - 1.0)
    cdef double ca, diff, log_ratio, log_sum = 0.0, product = 1.0
    cdef const double* mean = s + S_MEAN
    cdef const double* inv = s + p.inv_off
    if p.full:
        ca = c * full_quadratic(p, s, x, work)
        if not (1.0 - ca > OWN_WEIGHT_MIN_RATIO):
            return NAN
        log_ratio = log1p(-ca)
    else:
        for j in range(d):
            diff = x[j] - mean[j]
            ca = c * diff * diff * inv[j]
            if not (1.0 - ca > OWN_WEIGHT_MIN_RATIO):
                return NAN
            flushed_product(1.0 / (1.0 - ca), &log_sum, &product)
        log_ratio = -(log_sum + log(product))
    return (log(n - 1.0) + p.lg_pred[<intp_t> n - 1]
            - 0.5 * d * log(M_PI * kn / (kn - 1.0)) - 0.5 * s[S_LOG_DET]
            + 0.5 * (p.nu + n - 1.0) * log_ratio)


cdef double state_log_marginal(const NIW* p, const double* s) noexcept nogil:
    """log p(points of the cluster) with mu and Sigma integrated out (closed form)."""
    cdef double n = s[S_COUNT]
    cdef intp_t count = <intp_t> n
    return (
        -0.5 * n * p.d * log(M_PI)
        + p.lg_marg[count] - p.lg_marg[0]
        + 0.5 * p.nu * p.prior[S_LOG_DET] - 0.5 * (p.nu + n) * s[S_LOG_DET]
        + 0.5 * p.d * log(p.kappa / (p.kappa + n))
    )


# -- the prior and its tables, owned by a Python object ---------------------------------


cdef class NIWModel:
    """The Normal-inverse-Wishart prior of one cluster, with its log-gamma tables.

    The compiled chain holds one and passes ``&model.p`` to the state kernels. The
    Python methods wrap those kernels for tests (they are not used in fitting).

    Parameters
    ----------
    mean_prior : ndarray of shape (d,)
        m_0.
    kappa : float
        kappa_0 > 0.
    nu : float
        nu_0 > d - 1 (full) or > 0 (diag).
    covariance_prior : ndarray of shape (d, d) or (d,)
        Psi_0 (symmetric positive definite) for ``full``; the vector psi_0 > 0 for
        ``diag``.
    full : bool
        Full or diagonal covariances.
    n_max : int
        Largest cluster size the tables cover.
    """

    def __init__(self, mean_prior, double kappa, double nu, covariance_prior, bint full,
                 intp_t n_max):
        # copies: p points into them, and the caller's arrays may change later
        mean = np.array(mean_prior, dtype=np.float64).ravel()
        d = mean.shape[0]
        psi = np.array(covariance_prior, dtype=np.float64)
        if full:
            if psi.shape != (d, d):
                raise ValueError(f"covariance_prior must have shape {(d, d)}, got {psi.shape}.")
            if nu <= d - 1:
                raise ValueError(f"nu must be > d - 1 = {d - 1}, got {nu}.")
            chol = np.linalg.cholesky(psi)  # LinAlgError if not positive definite
        else:
            psi = psi.ravel()
            if psi.shape != (d,) or not np.all(psi > 0):
                raise ValueError("covariance_prior must be a positive vector of length d.")
            if nu <= 0:
                raise ValueError(f"nu must be > 0, got {nu}.")
            chol = psi
        if kappa <= 0:
            raise ValueError(f"kappa must be > 0, got {kappa}.")
        scale_size = d * d if full else d
        width = S_MEAN + d + scale_size + d
        counts = np.arange(n_max + 1, dtype=np.float64)
        if full:
            # nu_n - (d - 1), not nu_n - d + 1: nu_0 may exceed d - 1 by less
            # than the rounding of nu_0 - d
            lg_pred = (gammaln((nu + counts + 1) / 2)
                       - gammaln((nu + counts - (d - 1)) / 2))
            lg_marg = sum(gammaln((nu + counts - (j - 1)) / 2) for j in range(1, d + 1))
        else:
            lg_pred = d * (gammaln((nu + counts + 1) / 2) - gammaln((nu + counts) / 2))
            lg_marg = d * gammaln((nu + counts) / 2)
        prior = np.zeros(width, dtype=np.float64)
        prior[S_MEAN:S_MEAN + d] = mean
        # column-major lower storage of L is the row-major storage of L^T
        prior[S_MEAN + d:S_MEAN + d + scale_size] = (chol.T if full else chol).ravel()
        arrays = dict(
            mean=mean, psi=np.ascontiguousarray(psi.ravel()), prior=prior,
            lg_pred=np.array(lg_pred, dtype=np.float64),
            lg_marg=np.array(np.broadcast_to(lg_marg, counts.shape), dtype=np.float64),
        )
        self._arrays = arrays
        self._arguments = (mean, kappa, nu, psi, full, n_max)
        cdef double[::1] view
        self.p.d = d
        self.p.full = full
        self.p.scale_size = scale_size
        self.p.scale_off = S_MEAN + d
        self.p.inv_off = S_MEAN + d + scale_size
        self.p.width = width
        self.p.kappa = kappa
        self.p.nu = nu
        self.p.n_max = n_max
        view = arrays["mean"]
        self.p.mean = &view[0]
        view = arrays["psi"]
        self.p.psi = &view[0]
        view = arrays["prior"]
        self.p.prior = &view[0]
        view = arrays["lg_pred"]
        self.p.lg_pred = &view[0]
        view = arrays["lg_marg"]
        self.p.lg_marg = &view[0]
        state_refresh(&self.p, self.p.prior)

    def __reduce__(self):
        # rebuilt from its arguments (p holds pointers), so that chains can run in
        # other processes (joblib's process and cluster backends)
        return NIWModel, self._arguments

    def family(self, X):
        """This prior bound to the data X, for ``CollapsedChain`` (``NIWFamily``)."""
        return NIWFamily(self, X)

    def empty_state(self):
        """A fresh state of an empty cluster."""
        return self._arrays["prior"].copy()

    def add(self, double[::1] state, const double[::1] x):
        """Add x to state in place (``state_add``)."""
        self._check(state, x)
        work = np.empty(self.p.d, dtype=np.float64)
        cdef double[::1] w = work
        state_add(&self.p, &state[0], &x[0], &w[0])

    def remove(self, double[::1] state, const double[::1] x):
        """Remove x from state in place (``state_remove``); returns the status."""
        self._check(state, x)
        work = np.empty(self.p.d, dtype=np.float64)
        cdef double[::1] w = work
        return state_remove(&self.p, &state[0], &x[0], &w[0])

    def rebuild(self, double[::1] state, X):
        """Set state to that of the rows of X (``state_rebuild``); returns the status."""
        cdef const double[:, ::1] data = np.ascontiguousarray(X, dtype=np.float64).reshape(-1, self.p.d)
        if state.shape[0] != self.p.width or data.shape[0] > self.p.n_max:
            raise ValueError("state of the wrong width or too many points")
        members = np.arange(data.shape[0], dtype=np.intp)
        cdef const intp_t[::1] idx = members
        work = np.empty(self.p.d * self.p.d + self.p.d, dtype=np.float64)
        cdef double[::1] w = work
        if data.shape[0] == 0:
            return state_rebuild(&self.p, &state[0], NULL, NULL, 0, &w[0])
        return state_rebuild(&self.p, &state[0], &data[0, 0], &idx[0], data.shape[0], &w[0])

    def log_predictive(self, const double[::1] state, X):
        """log p(x | state) of each row of X (``state_log_predictive``)."""
        cdef const double[:, ::1] data = np.ascontiguousarray(X, dtype=np.float64).reshape(-1, self.p.d)
        self._check(state, None)
        out = np.empty(data.shape[0], dtype=np.float64)
        work = np.empty(self.p.d, dtype=np.float64)
        cdef double[::1] w = work
        cdef intp_t i
        for i in range(data.shape[0]):
            out[i] = state_log_predictive(&self.p, &state[0], &data[i, 0], &w[0])
        return out

    def log_marginal(self, const double[::1] state):
        """log p(points of state) (``state_log_marginal``)."""
        self._check(state, None)
        return state_log_marginal(&self.p, &state[0])

    def unpack(self, state):
        """(n, m_n, Psi_n) of a state; Psi_n is (d, d) (full) or (d,) (diag)."""
        state = np.asarray(state)
        d = self.p.d
        scale = state[self.p.scale_off:self.p.scale_off + self.p.scale_size]
        if self.p.full:
            L = scale.reshape(d, d).T
            psi = L @ L.T
        else:
            psi = scale.copy()
        return int(state[S_COUNT]), state[S_MEAN:S_MEAN + d].copy(), psi

    def _check(self, state, x):
        if state.shape[0] != self.p.width:
            raise ValueError(f"state must have {self.p.width} entries")
        if x is not None and x.shape[0] != self.p.d:
            raise ValueError(f"x must have {self.p.d} entries")
        if state[S_COUNT] + 1 > self.p.n_max:
            raise ValueError("the state has more points than the tables cover")


def describe_states(NIWModel model, states):
    """Posterior means and Student-t predictive parameters of a stack of states.

    Returns ``(means, covariances, predictive_factors, predictive_dfs)``: see
    ``CollapsedChain.snapshot``, which returns them for the NIW family.
    """
    cdef NIW* p = &model.p
    d, full = p.d, p.full
    n = states[:, S_COUNT]
    kn = p.kappa + n
    nun = p.nu + n
    means = states[:, S_MEAN:S_MEAN + d].copy()
    scale = states[:, p.scale_off:p.scale_off + p.scale_size]
    d_eff = d if full else 1
    df = nun - (d_eff - 1.0)  # exact for d_eff = 1 however small nu_n is
    # E[Sigma] = Psi_n / (nu_n - d - 1) exists for nu_n > d + 1; otherwise report
    # Psi_n / nu_n, the inverse of the posterior mean of the precision.
    divisor = np.where(nun > d_eff + 1, nun - d_eff - 1, nun)
    shape_coef = np.sqrt((kn + 1.0) / (kn * df))
    if full:
        L = scale.reshape(-1, d, d).transpose(0, 2, 1)  # column-major -> lower
        covariances = L @ L.transpose(0, 2, 1) / divisor[:, None, None]
        factors = L * shape_coef[:, None, None]
    else:
        covariances = scale / divisor[:, None]
        factors = np.sqrt(scale) * shape_coef[:, None]
    return means, covariances, np.ascontiguousarray(factors), df


# -- the NIW prior as a conjugate family of the collapsed sampler core ------------------


cdef void _niw_reset(void* context, double* state) noexcept nogil:
    cdef NIWContext* c = <NIWContext*> context
    memcpy(state, c.p.prior, c.p.width * sizeof(double))


cdef void _niw_add(void* context, double* state, intp_t point) noexcept nogil:
    cdef NIWContext* c = <NIWContext*> context
    state_add(c.p, state, c.X + point * c.d, c.work)


cdef int _niw_remove(void* context, double* state, intp_t point) noexcept nogil:
    cdef NIWContext* c = <NIWContext*> context
    return state_remove(c.p, state, c.X + point * c.d, c.work)


cdef double _niw_log_kernel(void* context, const double* state, intp_t point) noexcept nogil:
    cdef NIWContext* c = <NIWContext*> context
    return state_log_kernel(c.p, state, c.X + point * c.d, c.work)


cdef inline const double* block_rows(
        NIWContext* c, intp_t first, intp_t m) noexcept nogil:
    """Rows first..first+m-1 of X transposed: a (d, ROWS_BLOCK) table whose column
    r is row first + r, from ``c.rows_t``, filled with up to ROWS_BLOCK rows from
    ``first`` unless it holds them already (the Gibbs scan asks for a block's rows
    once per cluster, and again for its later rows)."""
    cdef intp_t j, r, d = c.d
    if not (c.rows_first <= first and first + m <= c.rows_first + c.rows_count):
        c.rows_first = first
        c.rows_count = min(<intp_t> ROWS_BLOCK, c.n - first)
        for r in range(c.rows_count):
            for j in range(d):
                c.rows_t[j * ROWS_BLOCK + r] = c.X[(first + r) * d + j]
    return c.rows_t + (first - c.rows_first)


cdef void _niw_log_kernel_rows(
        void* context, const double* s, intp_t first, intp_t m,
        double* out) noexcept nogil:
    """``_niw_log_kernel`` of m <= ROWS_BLOCK consecutive points (``_family.pxd``),
    the rows innermost (``block_rows``): for full covariances their forward
    substitutions at once (``_simd.forward_rows``), so that the factor is read
    once for the m; for diagonal ones each row's product of (1 + ...) as
    ``state_log_kernel``'s, feature by feature. Each value is that point's to the
    last bit."""
    cdef NIWContext* c = <NIWContext*> context
    cdef const NIW* p = c.p
    cdef intp_t j, r, d = p.d
    cdef double kn = p.kappa + s[S_COUNT]
    cdef double half_power = 0.5 * (p.nu + s[S_COUNT] + 1.0)
    cdef double coef = kn / (kn + 1.0)
    cdef const double* mean = s + S_MEAN
    cdef const double* inv = s + p.inv_off
    cdef const double* rows = block_rows(c, first, m)
    cdef const double* row_j
    cdef double* W = c.work          # (d, ROWS_BLOCK): row r's x - m_n in column r
    cdef double* product = c.work    # diag: (ROWS_BLOCK,) each row's running product
    cdef double diff
    if not p.full:
        # the rows take turns feature by feature: one row's products wait on each
        # other, the rows' do not
        for r in range(m):
            out[r] = 0.0
            product[r] = 1.0
        for j in range(d):
            row_j = rows + j * ROWS_BLOCK
            for r in range(m):
                diff = row_j[r] - mean[j]
                flushed_product(1.0 + coef * diff * diff * inv[j], &out[r], &product[r])
        for r in range(m):
            out[r] = -half_power * (out[r] + log(product[r]))
        return
    for j in range(d):
        row_j = rows + j * ROWS_BLOCK
        for r in range(m):
            W[j * ROWS_BLOCK + r] = row_j[r] - mean[j]
    forward_rows(d, m, ROWS_BLOCK, s + p.scale_off, inv, W, out)
    for r in range(m):
        out[r] = -half_power * log1p(coef * out[r])


cdef double _niw_own_log_weight(
        void* context, const double* state, intp_t point) noexcept nogil:
    cdef NIWContext* c = <NIWContext*> context
    return state_own_log_weight(c.p, state, c.X + point * c.d, c.work)


cdef double _niw_log_predictive(
        void* context, const double* state, intp_t point) noexcept nogil:
    cdef NIWContext* c = <NIWContext*> context
    return state_log_predictive(c.p, state, c.X + point * c.d, c.work)


cdef double _niw_log_marginal(void* context, const double* state) noexcept nogil:
    return state_log_marginal((<NIWContext*> context).p, state)


cdef int _niw_rebuild(
        void* context, double* state, const intp_t* members, intp_t n) noexcept nogil:
    cdef NIWContext* c = <NIWContext*> context
    return state_rebuild(c.p, state, c.X, members, n, c.work)


cdef double _niw_point_key(void* context, intp_t point, const double* u) noexcept nogil:
    """u . x."""
    cdef NIWContext* c = <NIWContext*> context
    return dot(u, c.X + point * c.d, c.d)


cdef double _niw_cluster_key(void* context, const double* state, const double* u) noexcept nogil:
    """u . m_n, the cluster's posterior location."""
    cdef NIWContext* c = <NIWContext*> context
    return dot(u, state + S_MEAN, c.d)


cdef int _niw_draw_params(void* context, const double* state, bitgen_t* rng,
                          double* params) noexcept nogil:
    """(mu, C, log normaliser): a draw of the cluster's Gaussian (module docstring)."""
    cdef NIWContext* c = <NIWContext*> context
    cdef const NIW* p = c.p
    cdef intp_t i, j, k, d = p.d
    cdef double n = state[S_COUNT], kn = p.kappa + n, nun = p.nu + n, s, log_det = 0.0
    cdef const double* mean = state + S_MEAN
    cdef const double* L = state + p.scale_off
    cdef double* mu = params
    cdef double* C = params + d
    cdef double* B = c.work           # (d, d) column-major: L^{-T} A
    if not p.full:
        for j in range(d):
            # 1 / sigma_j = sqrt(Gamma(nu_n / 2) / (psi_nj / 2))
            C[j] = (2.0 * random_standard_gamma(rng, 0.5 * nun) / L[j]) ** 0.5
            if not (C[j] > 0.0 and isfinite(C[j])):
                return -1
            mu[j] = mean[j] + random_standard_normal(rng) / (C[j] * sqrt(kn))
            log_det += log(C[j])
        params[2 * d] = -0.5 * d * log(2.0 * M_PI) + log_det
        return 0
    # B = L^{-T} A, column by column: solve L^T b = a_k (back substitution)
    for k in range(d):
        for i in range(d):
            B[k * d + i] = 0.0
        B[k * d + k] = (2.0 * random_standard_gamma(rng, 0.5 * (nun - k))) ** 0.5
        for i in range(k + 1, d):
            B[k * d + i] = random_standard_normal(rng)
        for i in range(d - 1, -1, -1):
            s = B[k * d + i]
            for j in range(i + 1, d):
                s -= L[i * d + j] * B[k * d + j]     # (L^T)_ij = L_ji, column i of L
            B[k * d + i] = s / L[i * d + i]
    # the precision B B^T into C (symmetric, so either storage), then its factor
    for i in range(d):
        for j in range(i + 1):
            s = 0.0
            for k in range(d):
                s += B[k * d + i] * B[k * d + j]
            C[j * d + i] = s
            C[i * d + j] = s
    if cholesky(C, d) < 0:
        return -1
    # mu = m_n + C^{-T} z / sqrt(kappa_n): back substitution with C^T
    for j in range(d):
        mu[j] = random_standard_normal(rng) / sqrt(kn)
    for i in range(d - 1, -1, -1):
        s = mu[i]
        for j in range(i + 1, d):
            s -= C[i * d + j] * mu[j]
        mu[i] = s / C[i * d + i]
        log_det += log(C[i * d + i])
    for j in range(d):
        mu[j] += mean[j]
    # C by rows for ``_niw_log_likelihood`` (module docstring): row j at C + j * d
    for k in range(d):
        for j in range(k + 1, d):
            s = C[k * d + j]
            C[k * d + j] = C[j * d + k]
            C[j * d + k] = s
    params[d + d * d] = -0.5 * d * log(2.0 * M_PI) + log_det
    return 0


cdef inline void lower_step4(intp_t j, intp_t d, const double* x, const double* mu,
                             const double* C, double* z) noexcept nogil:
    """z[k] += C[j + i, k] (x_{j+i} - mu_{j+i}) for i = 0..3 (rows j..j+3 of C,
    stored by rows), k <= j + i: z[k] loaded and stored once per four terms, added
    in the same order (j, j + 1, j + 2, j + 3) as one row of C at a time."""
    cdef double y0 = x[j] - mu[j]
    cdef double y1 = x[j + 1] - mu[j + 1]
    cdef double y2 = x[j + 2] - mu[j + 2]
    cdef double y3 = x[j + 3] - mu[j + 3]
    cdef const double* r0 = C + j * d
    cdef const double* r1 = r0 + d
    cdef const double* r2 = r1 + d
    cdef const double* r3 = r2 + d
    add4(j + 1, z, r0, r1, r2, r3, y0, y1, y2, y3)
    # the triangle's corner: z[j + 1 .. j + 3] from rows j + 1 .. j + 3
    z[j + 1] = z[j + 1] + r1[j + 1] * y1 + r2[j + 1] * y2 + r3[j + 1] * y3
    z[j + 2] = z[j + 2] + r2[j + 2] * y2 + r3[j + 2] * y3
    z[j + 3] = z[j + 3] + r3[j + 3] * y3


cdef inline void lower_product(intp_t d, const double* x, const double* mu,
                               const double* C, double* z) noexcept nogil:
    """z <- C^T (x - mu) for C lower triangular stored by rows (row j at C + j * d):
    z[k] = sum over j >= k of C[j, k] (x_j - mu_j), j ascending."""
    cdef intp_t j = 0, k
    for k in range(d):
        z[k] = 0.0
    while j + 4 <= d:
        lower_step4(j, d, x, mu, C, z)
        j += 4
    while j < d:
        add1(j + 1, z, C + j * d, x[j] - mu[j])
        j += 1


cdef double _niw_log_likelihood(void* context, const double* params, intp_t point,
                                double* work) noexcept nogil:
    """log N(x | mu, Sigma) from (mu, C, constant), O(d^2 / 2) (full) or O(d)."""
    cdef NIWContext* c = <NIWContext*> context
    cdef intp_t k, d = c.d
    cdef const double* x = c.X + point * d
    cdef double* z = work
    cdef double q = 0.0
    if not c.p.full:
        return params[2 * d] - 0.5 * scaled_squares(d, x, params, params + d)
    lower_product(d, x, params, params + d, z)
    for k in range(d):
        q += z[k] * z[k]
    return params[d + d * d] - 0.5 * q


cdef void _niw_full_log_likelihood_quads(
        void* context, const double* params, const intp_t* points, intp_t first,
        intp_t m, double* out, double* work) noexcept nogil:
    """``_niw_log_likelihood`` of m <= ROWS_BLOCK rows (``_family.pxd``), full
    covariances, d > ``ROWS_FULL_MAX_D``, four rows at a time: each row's z = C^T
    (x - mu) as for one row alone (``lower_step4``), the four rows taking turns
    by groups of four rows of C, so that these are read once for the four (at d
    = 80, C is 51 kB, more than a core's first-level cache); then the four sums
    of squares side by side (a row's sum, in k order, is a chain of d adds that
    each wait on the one before; four rows' chains do not wait on each other).
    Each value is the row's to the last bit. Sub-cluster fits, 60 sweeps, same
    draws, against the row kernel: (30, 20) 1.06 to 1.07 s -> 0.95 to 0.96,
    (40, 40) 1.66 to 1.68 -> 1.47 to 1.51, (80, 40) 4.93 to 5.03 -> 4.70 to 4.74."""
    cdef NIWContext* c = <NIWContext*> context
    cdef intp_t j, k, r, t, d = c.d
    cdef const double* mu = params
    cdef const double* C = params + d
    cdef double* z0 = work
    cdef double* z1 = work + d
    cdef double* z2 = work + 2 * d
    cdef double* z3 = work + 3 * d
    cdef const double* x[4]
    cdef double q0, q1, q2, q3
    for r in range(0, m - 3, 4):
        for t in range(4):
            x[t] = c.X + (first + r + t if points == NULL
                          else points[r + t] - first) * d
        for k in range(4 * d):
            work[k] = 0.0
        # lower_product of the four rows, interleaved by groups of four rows of
        # C, which are read once for the four (at d = 80, C is 51 kB)
        j = 0
        while j + 4 <= d:
            for t in range(4):
                lower_step4(j, d, x[t], mu, C, work + t * d)
            j += 4
        while j < d:
            for t in range(4):
                add1(j + 1, work + t * d, C + j * d, x[t][j] - mu[j])
            j += 1
        q0 = q1 = q2 = q3 = 0.0
        for k in range(d):
            q0 += z0[k] * z0[k]
            q1 += z1[k] * z1[k]
            q2 += z2[k] * z2[k]
            q3 += z3[k] * z3[k]
        out[r] = params[d + d * d] - 0.5 * q0
        out[r + 1] = params[d + d * d] - 0.5 * q1
        out[r + 2] = params[d + d * d] - 0.5 * q2
        out[r + 3] = params[d + d * d] - 0.5 * q3
    for r in range(m - m % 4, m):
        out[r] = _niw_log_likelihood(
            context, params, first + r if points == NULL else points[r] - first, work)


# the largest d at which the full family's block likelihood has the rows innermost
# (below); above it, four rows at a time (``_niw_full_log_likelihood_quads``)
cdef intp_t ROWS_FULL_MAX_D = 16


cdef void _niw_log_likelihood_rows(
        void* context, const double* params, const intp_t* points, intp_t first,
        intp_t m, double* out, double* work) noexcept nogil:
    """``_niw_log_likelihood`` of m <= ROWS_BLOCK rows (``_family.pxd``), full
    covariances, the rows innermost: y = x - mu and z = C^T y as (d, ROWS_BLOCK)
    tables in ``work``, each z_k summed over j in the same order as one row at a
    time, so each value is that row's to the last bit, while an entry of C is read
    once per block and the loops over the rows vectorise.

    The family uses it up to d = ``ROWS_FULL_MAX_D`` only. Fits of the sub-cluster
    sampler (N = 10^4, one thread, draws identical): d = 2, 2.0x faster (0.60 to
    0.30 s); d = 4, 1.6x; d = 10, 1.3x; d = 16, even; d = 24, 40 and 80, 19 to
    30% slower than the row-at-a-time kernel, whose z updates run over k in SIMD
    lanes four rows of C at a time (measured before both kernels' inner loops
    moved to ``_simd``). With the AVX2 loops (60 sweeps, alternating, same
    draws), this kernel against the row kernel: d = 16, 0.43 to 0.47 s against
    0.49 to 0.51 s; d = 24, 0.80 to 0.81 against 0.84 to 0.85; d = 40, 1.86 to
    1.88 against 1.63 to 1.71; d = 80, 6.0 to 6.6 against 4.9 to 5.1. Against
    the four-row kernel (``_niw_full_log_likelihood_quads``): d = 10, 0.24 s
    against 0.27; d = 16, even (0.48 s); d = 24, 0.80 to 0.81 against 0.73 to
    0.74: hence 16. Diagonal covariances gained nothing from this layout (d = 2 to 4) or
    lost (d = 10 and 16); their block kernel is ``_niw_diag_log_likelihood_rows``,
    which keeps each row's features in the SIMD lanes."""
    cdef NIWContext* c = <NIWContext*> context
    cdef intp_t j, k, r, d = c.d
    cdef const double* mu = params
    cdef const double* C = params + d
    cdef double* y = work                  # y[j * ROWS_BLOCK + r]
    cdef double* z = work + d * ROWS_BLOCK # z[k * ROWS_BLOCK + r]
    cdef const double* x
    for r in range(m):
        x = c.X + (first + r if points == NULL else points[r] - first) * d
        for j in range(d):
            y[j * ROWS_BLOCK + r] = x[j] - mu[j]
    for r in range(m):
        out[r] = 0.0
    for k in range(d):
        for r in range(m):
            z[k * ROWS_BLOCK + r] = 0.0
    lower_rows(d, m, ROWS_BLOCK, C, y, z)
    for k in range(d):
        for r in range(m):
            out[r] += z[k * ROWS_BLOCK + r] * z[k * ROWS_BLOCK + r]
    for r in range(m):
        out[r] = params[d + d * d] - 0.5 * out[r]


cdef void _niw_diag_log_likelihood_rows(
        void* context, const double* params, const intp_t* points, intp_t first,
        intp_t m, double* out, double* work) noexcept nogil:
    """``_niw_log_likelihood`` of m <= ROWS_BLOCK rows (``_family.pxd``), diagonal
    covariances: four rows at a time (``_simd.squares_rows``), each row's sum
    of squares in the order of one row alone, so each value is that row's to the
    last bit. One row's sum is a chain of adds that each wait on the one before;
    four rows' chains run side by side. (A kernel with the rows innermost, as
    the full family's, gained nothing at d = 2 to 4 and lost at 10 and 16.)"""
    cdef NIWContext* c = <NIWContext*> context
    cdef intp_t r, d = c.d
    squares_rows(c.X, d, points, first, m, params, params + d, out)
    for r in range(m):
        out[r] = params[2 * d] - 0.5 * out[r]


cdef class NIWFamily(Family):
    """The NIW prior bound to data X: the family ``CollapsedChain`` samples.

    Parameters
    ----------
    model : NIWModel
        The cluster prior; its tables must cover n = 0..N. Shared, read-only.
    X : ndarray of shape (N, d), dtype=np.float64
        Validated, C-contiguous data. Shared, read-only.
    """

    failure_message = (
        "A cluster's posterior scale matrix is not numerically positive "
        "definite. Standardise the data or pass a better-conditioned "
        "covariance_prior."
    )

    cdef readonly NIWModel model
    cdef object data            # X as given, for pickling
    cdef const double[:, ::1] X
    cdef double[::1] work
    cdef double[::1] rows_t
    cdef NIWContext context

    def __init__(self, NIWModel model, const double[:, ::1] X):
        if model.p.d != X.shape[1] or model.p.n_max < X.shape[0]:
            raise ValueError("the model does not match the data")
        self.model = model
        self.data = X.base if X.base is not None else X
        self.X = X
        self.n_points = X.shape[0]
        # the callbacks' scratch: d^2 + d (a draw's factor), ROWS_BLOCK d (a block of
        # rows' forward substitutions)
        self.work = np.empty(max(model.p.d * model.p.d + model.p.d,
                                 ROWS_BLOCK * model.p.d), dtype=np.float64)
        self.context.p = &model.p
        self.context.d = model.p.d
        self.context.X = &X[0, 0] if X.shape[0] > 0 else NULL
        self.context.work = &self.work[0]
        self.context.n = X.shape[0]
        self.rows_t = np.empty(model.p.d * ROWS_BLOCK)
        self.context.rows_t = &self.rows_t[0]
        self.context.rows_first = -1
        self.context.rows_count = 0
        self.c = conjugate_family(
            &self.context, model.p.width, _niw_reset, _niw_add, _niw_log_marginal,
            _niw_remove, _niw_log_kernel, _niw_log_predictive, _niw_rebuild,
            S_LOG_WEIGHT, model.p.d, _niw_point_key, _niw_cluster_key)
        explicit_parameters(
            &self.c, model.p.d + model.p.scale_size + 1, model.p.d,
            _niw_draw_params, _niw_log_likelihood)
        own_weight(&self.c, _niw_own_log_weight)
        kernel_rows(&self.c, _niw_log_kernel_rows)
        if model.p.full and model.p.d <= ROWS_FULL_MAX_D:
            likelihood_rows(&self.c, _niw_log_likelihood_rows,
                            2 * model.p.d * ROWS_BLOCK)
        elif model.p.full:
            likelihood_rows(&self.c, _niw_full_log_likelihood_quads, 4 * model.p.d)
        else:
            likelihood_rows(&self.c, _niw_diag_log_likelihood_rows, 0)
        block_moments(&self.c, 1 + model.p.d + model.p.scale_size, _niw_moments,
                      _niw_moments_merge, _niw_moments_state)
        moments_of_states(&self.c, _niw_state_moments)

    def __reduce__(self):
        return NIWFamily, (self.model, self.data)

    def describe(self, states):
        """``(means, covariances, predictive_factors, predictive_dfs)``.

        See ``describe_states``.
        """
        return describe_states(self.model, states)


# -- Student-t predictives of fitted draws, for scoring new rows -----------------------


cdef enum:
    # Rows per block of ``student_t_log_density``: a block's differences are kept
    # feature-major, (d, SCORE_BLOCK), so that the inner loops run across the rows
    # of the block, with no reduction (which C may not reorder, hence not
    # vectorise), and every entry of a Cholesky factor read serves that many rows.
    SCORE_BLOCK = 8
    # The three Student-t families ``student_t_log_density`` scores.
    SCORE_FULL = 0
    SCORE_DIAG = 1
    SCORE_SPHERICAL = 2

# The scoring loop gives each OpenMP thread at least this many rows, so that a
# small batch does not pay for starting and joining threads. The values do not
# depend on it.
cdef intp_t SCORE_MIN_ROWS_PER_THREAD = 128

_SCORE_KINDS = {"full": SCORE_FULL, "diag": SCORE_DIAG, "spherical": SCORE_SPHERICAL}


cdef inline double log1p_exp(double a) noexcept nogil:
    """log(1 + e^a) without overflow: ``np.logaddexp(0, a)``."""
    if a > 0.0:
        return a + log1p(exp(-a))
    return log1p(exp(a))


cdef double far_log1p_q(
        int kind,
        const double* x,        # IN (d,)
        const double* mean,     # IN (d,)
        const double* factor,   # IN (d, d) row-major lower L (full) or &s (spherical)
        intp_t d,
        double df,
        double* u,              # scratch (d,)
) noexcept nogil:
    """log(1 + |u|^2 / df), u = L^{-1} (x - mean), for a point so far out that
    |u|^2 (or x - mean) overflows: in logarithms, from a rescaled difference.

    x / 2 - mean / 2 is finite for any finite input; its largest entry is brought
    to about 1 by a power of two (exact), the solve runs on that, and |u|^2 is
    summed relative to the largest |u_j|, whose logarithm carries the scale.
    """
    cdef intp_t j, m
    cdef double top = 0.0, s, log_q
    cdef int exponent
    for j in range(d):
        u[j] = x[j] * 0.5 - mean[j] * 0.5
        if fabs(u[j]) > top:
            top = fabs(u[j])
    if top == 0.0:
        return 0.0
    frexp(top, &exponent)
    for j in range(d):
        u[j] = ldexp(u[j], -exponent)
    if kind == SCORE_FULL:
        for j in range(d):
            s = u[j]
            for m in range(j):
                s -= factor[j * d + m] * u[m]
            u[j] = s / factor[j * d + j]
    else:
        for j in range(d):
            u[j] /= factor[0]
    top = 0.0
    for j in range(d):
        if fabs(u[j]) > top:
            top = fabs(u[j])
    s = 0.0
    for j in range(d):
        s += (u[j] / top) * (u[j] / top)
    log_q = log(s) + 2.0 * log(top) + 2.0 * (exponent + 1) * M_LN2
    return log1p_exp(log_q - log(df))


cdef double diag_log1p_sum(
        const double* diff,     # IN (d,) x - mean, with stride
        intp_t stride,
        const double* scale,    # IN (d,) per-feature scales
        intp_t d,
        double df,
) noexcept nogil:
    """sum_j log(1 + (diff_j / scale_j)^2 / df): the d factors multiplied, one log.

    As ``state_log_kernel``, the running product is flushed to the log-sum before
    it can overflow. inf or NaN when a term overflows (the caller's far branch).
    """
    cdef intp_t j
    cdef double total = 0.0, product = 1.0, u
    for j in range(d):
        u = diff[j * stride] / scale[j]
        flushed_product(1.0 + u * u / df, &total, &product)
    return total + log(product)


cdef double far_diag_log1p_sum(
        const double* x,        # IN (d,)
        const double* mean,     # IN (d,)
        const double* scale,    # IN (d,)
        intp_t d,
        double df,
) noexcept nogil:
    """``diag_log1p_sum`` in logarithms, for a point whose terms overflow.

    log |u_j| = log |x_j / 2 - mean_j / 2| + log 2 - log scale_j, finite (or
    -inf) for any finite input; log(1 + u_j^2 / df) = log1p_exp(2 log |u_j| -
    log df).
    """
    cdef intp_t j
    cdef double total = 0.0, log_u
    for j in range(d):
        log_u = log(fabs(x[j] * 0.5 - mean[j] * 0.5)) + M_LN2 - log(scale[j])
        total += log1p_exp(2.0 * log_u - log(df))
    return total


cdef void score_block(
        int kind,
        const double* X,          # IN (n, d) row-major rows
        intp_t first,             # the block's first row
        intp_t n_rows,            # its rows, 1..SCORE_BLOCK
        intp_t d,
        intp_t K,
        const double* means,      # IN (K, d)
        const double* factors,    # IN (K, d, d), (K, d) or (K,)
        const double* dfs,        # IN (K,)
        const double* log_const,  # IN (K,) log normaliser minus log |L|
        const double* power,      # IN (K,) (df + d) / 2, or (df + 1) / 2 for diag
        double* out,              # OUT (n, K) row-major
        double* work,             # scratch (d * SCORE_BLOCK + d,)
) noexcept nogil:
    """Fill the rows ``first .. first + n_rows - 1`` of the log-density table."""
    cdef intp_t b, j, m, k
    cdef double* U = work                        # (d, SCORE_BLOCK) feature-major
    cdef double* far_work = work + d * SCORE_BLOCK
    cdef const double* mean
    cdef const double* L
    cdef const double* row
    cdef double l, l_odd, s, df, value
    cdef double acc[SCORE_BLOCK]
    cdef double acc_odd[SCORE_BLOCK]
    cdef double q[SCORE_BLOCK]
    for k in range(K):
        mean = means + k * d
        df = dfs[k]
        for j in range(d):
            for b in range(n_rows):
                U[j * SCORE_BLOCK + b] = X[(first + b) * d + j] - mean[j]
            for b in range(n_rows, SCORE_BLOCK):
                U[j * SCORE_BLOCK + b] = 0.0   # padding: computed, never read
        for b in range(SCORE_BLOCK):
            q[b] = 0.0
        if kind == SCORE_FULL:
            # Row-oriented forward substitution, u_j = (diff_j - sum_{m<j} L_jm u_m)
            # / L_jj, for the block's rows at once; |u|^2 summed as entries come out.
            # The sum over m runs in two accumulators (even and odd m): with one,
            # each step waits for the previous subtraction, and the loop ran at
            # half the speed.
            L = factors + k * d * d
            for j in range(d):
                row = L + j * d
                for b in range(SCORE_BLOCK):
                    acc[b] = U[j * SCORE_BLOCK + b]
                    acc_odd[b] = 0.0
                for m in range(0, j - 1, 2):
                    l = row[m]
                    l_odd = row[m + 1]
                    for b in range(SCORE_BLOCK):
                        acc[b] -= l * U[m * SCORE_BLOCK + b]
                        acc_odd[b] -= l_odd * U[(m + 1) * SCORE_BLOCK + b]
                if j % 2:
                    l = row[j - 1]
                    for b in range(SCORE_BLOCK):
                        acc[b] -= l * U[(j - 1) * SCORE_BLOCK + b]
                for b in range(SCORE_BLOCK):
                    l = (acc[b] + acc_odd[b]) / row[j]
                    U[j * SCORE_BLOCK + b] = l
                    q[b] += l * l
        elif kind == SCORE_SPHERICAL:
            s = factors[k]
            for j in range(d):
                for b in range(SCORE_BLOCK):
                    l = U[j * SCORE_BLOCK + b] / s
                    q[b] += l * l
        for b in range(n_rows):
            if kind == SCORE_DIAG:
                value = diag_log1p_sum(U + b, SCORE_BLOCK, factors + k * d, d, df)
                if not isfinite(value):
                    value = far_diag_log1p_sum(
                        X + (first + b) * d, mean, factors + k * d, d, df)
            else:
                value = log1p(q[b] / df)
                if not isfinite(value):
                    value = far_log1p_q(
                        kind, X + (first + b) * d, mean,
                        factors + k * d * d if kind == SCORE_FULL else factors + k,
                        d, df, far_work)
            out[(first + b) * K + k] = log_const[k] - power[k] * value


def student_t_log_density(const double[:, ::1] X, const double[:, ::1] means,
                          factors, const double[::1] dfs, kind):
    """(n_samples, K) log-densities of K Student-t distributions, compiled.

    The predictives of a fitted draw's clusters (``describe_states``), for
    scoring new rows: one pass over the rows in blocks of SCORE_BLOCK, in
    parallel over the blocks (OpenMP, at most ``max_threads()`` threads); each
    row's values depend only on the row, so not on the number of threads. Points
    so far out that |u|^2 overflows are scored in logarithms (``far_log1p_q``).
    Besides the output, the memory is O(K + threads * d).

    Parameters
    ----------
    X : ndarray of shape (n_samples, d), C-contiguous float64
    means : ndarray of shape (K, d), C-contiguous float64
        Locations.
    factors : ndarray of shape (K, d, d), (K, d) or (K,)
        Lower Cholesky factors L of the shape matrices ("full"), the per-feature
        scales of a product of one-dimensional Student-t's ("diag"), or the
        scale s of a multivariate Student-t of shape s^2 I ("spherical").
    dfs : ndarray of shape (K,)
        Degrees of freedom, positive.
    kind : {"full", "diag", "spherical"}

    Returns
    -------
    log_density : ndarray of shape (n_samples, K)

    Notes
    -----
    With u = L^{-1} (x - m) the d-variate Student-t has

        log f(x) = lgamma((df + d) / 2) - lgamma(df / 2) - d / 2 log(df pi)
                   - log |L| - (df + d) / 2 log(1 + |u|^2 / df)

    ("spherical": L = s I); "diag" is the sum of d one-dimensional cases.
    """
    cdef int code = _SCORE_KINDS[kind]
    cdef intp_t n = X.shape[0], d = X.shape[1], K = means.shape[0]
    shapes = {SCORE_FULL: (K, d, d), SCORE_DIAG: (K, d), SCORE_SPHERICAL: (K,)}
    factor_array = np.ascontiguousarray(factors, dtype=np.float64)
    if means.shape[1] != d or dfs.shape[0] != K or factor_array.shape != shapes[code]:
        raise ValueError(
            f"means, factors and dfs must have shapes {(K, d)}, {shapes[code]} and "
            f"{(K,)} for kind={kind!r}")
    cdef const double[::1] F = factor_array.ravel()
    cdef double[:, ::1] out = np.empty((n, K), dtype=np.float64)
    cdef double[::1] log_const = np.empty(K, dtype=np.float64)
    cdef double[::1] power = np.empty(K, dtype=np.float64)
    cdef intp_t k, j, block
    cdef intp_t n_blocks = (n + SCORE_BLOCK - 1) // SCORE_BLOCK
    cdef int tid
    cdef int n_threads = max(1, min(max_threads(), n // SCORE_MIN_ROWS_PER_THREAD))
    # per thread: the block (d, SCORE_BLOCK) and one row for the far branch,
    # rounded up to 8 doubles (64 bytes) so that threads share no cache line
    cdef intp_t stride = (d * SCORE_BLOCK + d + 7) // 8 * 8
    cdef double[::1] scratch = np.empty(n_threads * stride, dtype=np.float64)
    cdef double df, d_eff, log_det
    if n == 0 or K == 0:
        return np.asarray(out)
    with nogil:
        # lgamma writes the global signgam: the constants are computed here, once,
        # outside the parallel loop
        d_eff = 1.0 if code == SCORE_DIAG else <double> d
        for k in range(K):
            df = dfs[k]
            log_det = 0.0
            for j in range(d):
                if code == SCORE_FULL:
                    log_det += log(F[k * d * d + j * d + j])
                elif code == SCORE_DIAG:
                    log_det += log(F[k * d + j])
                else:
                    log_det += log(F[k])
            log_const[k] = (
                (d / d_eff) * (lgamma(0.5 * (df + d_eff)) - lgamma(0.5 * df)
                               - 0.5 * d_eff * log(df * M_PI))
                - log_det
            )
            power[k] = 0.5 * (df + d_eff)
        for block in prange(n_blocks, schedule="static", num_threads=n_threads):
            tid = threadid()
            score_block(
                code, &X[0, 0], block * SCORE_BLOCK,
                min(SCORE_BLOCK, n - block * SCORE_BLOCK), d, K, &means[0, 0],
                &F[0], &dfs[0], &log_const[0], &power[0], &out[0, 0],
                &scratch[tid * stride])
    return np.asarray(out)


def _chol_update_wrapper(L, v, bint downdate=False):
    """L' with L' L'^T = L L^T +- v v^T, for a lower-triangular L (for tests).

    Returns None if a downdate fails.
    """
    L = np.asarray(L, dtype=np.float64)
    cdef intp_t d = L.shape[0]
    cdef double[::1] factor = np.array(L.T, order="C").ravel()   # column-major copy
    cdef double[::1] vec = np.array(v, dtype=np.float64).ravel()
    if vec.shape[0] != d or L.shape != (d, d):
        raise ValueError("L must be (d, d) and v (d,)")
    if downdate:
        if chol_downdate(&factor[0], &vec[0], d) < 0:
            return None
    else:
        chol_update(&factor[0], &vec[0], d)
    return np.asarray(factor).reshape(d, d).T.copy()


def _cholesky_wrapper(A):
    """Lower Cholesky factor of A by the in-place kernel, or None (for tests)."""
    A = np.asarray(A, dtype=np.float64)
    cdef intp_t d = A.shape[0]
    cdef double[::1] work = np.ascontiguousarray(A).ravel().copy()
    if cholesky(&work[0], d) < 0:
        return None
    return np.asarray(work).reshape(d, d).T.copy()


def _log_product_wrapper(values, intp_t stride=1):
    """sum_j log(values[j * stride]) through the compiled log_product (for tests)."""
    cdef double[::1] v = np.ascontiguousarray(values, dtype=np.float64)
    if v.shape[0] == 0 or (v.shape[0] - 1) % stride:
        raise ValueError("values must hold n * stride - stride + 1 entries")
    return log_product(&v[0], (v.shape[0] - 1) // stride + 1, stride)


def _simd_loops_wrapper(z, rows, ys, x, m, double c, double s_col, double s):
    """The loops of ``_simd`` on copies of the arrays (for tests): ``add4(z, rows,
    ys)``, ``add1(z, rows[0], ys[0])``, ``add_scaled_difference(z, x, m, ys[0])``
    and ``rotate(z, x, c, s_col, s)``'s two outputs."""
    cdef double[::1] z4 = np.array(z, dtype=np.float64)
    cdef double[::1] z1 = np.array(z, dtype=np.float64)
    cdef double[::1] zd = np.array(z, dtype=np.float64)
    cdef double[::1] col = np.array(z, dtype=np.float64)
    cdef double[::1] v = np.array(x, dtype=np.float64)
    cdef const double[:, ::1] r = np.ascontiguousarray(rows, dtype=np.float64)
    cdef const double[::1] y = np.ascontiguousarray(ys, dtype=np.float64)
    cdef const double[::1] x_ = np.ascontiguousarray(x, dtype=np.float64)
    cdef const double[::1] m_ = np.ascontiguousarray(m, dtype=np.float64)
    cdef intp_t n = z4.shape[0]
    if (r.shape[0] != 4 or r.shape[1] != n or y.shape[0] != 4 or x_.shape[0] != n
            or m_.shape[0] != n or n == 0):
        raise ValueError("rows must be (4, n), ys (4,), z, x and m (n,), n > 0")
    add4(n, &z4[0], &r[0, 0], &r[1, 0], &r[2, 0], &r[3, 0], y[0], y[1], y[2], y[3])
    add1(n, &z1[0], &r[0, 0], y[0])
    add_scaled_difference(n, &zd[0], &x_[0], &m_[0], y[0])
    rotate(n, &col[0], &v[0], c, s_col, s)
    return np.asarray(z4), np.asarray(z1), np.asarray(zd), np.asarray(col), np.asarray(v)


def _lower_rows_wrapper(C, Y):
    """``lower_rows``: Z[k] = sum over j >= k, j ascending, of C[j, k] Y[j], for a
    (d, d) C and a (d, m) table Y of m <= ROWS_BLOCK rows (for tests)."""
    cdef const double[:, ::1] C_ = np.ascontiguousarray(C, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    cdef intp_t d = C_.shape[0], m = Y.shape[1] if Y.ndim == 2 else -1
    if d < 1 or C_.shape[1] != d or Y.shape[0] != d or not 0 < m <= ROWS_BLOCK:
        raise ValueError(f"C must be (d, d) and Y (d, m), d > 0, 0 < m <= {ROWS_BLOCK}")
    cdef double[:, ::1] y = np.zeros((d, ROWS_BLOCK))
    cdef double[:, ::1] z = np.zeros((d, ROWS_BLOCK))
    np.asarray(y)[:, :m] = Y
    lower_rows(d, m, ROWS_BLOCK, &C_[0, 0], &y[0, 0], &z[0, 0])
    return np.asarray(z)[:, :m].copy()


def _scaled_squares_wrapper(x, m, c=None):
    """``scaled_squares`` of x, m and c, or ``squared_distance`` of x and m (c
    None) (for tests)."""
    cdef const double[::1] x_ = np.ascontiguousarray(x, dtype=np.float64)
    cdef const double[::1] m_ = np.ascontiguousarray(m, dtype=np.float64)
    cdef const double[::1] c_ = np.ascontiguousarray(
        np.ones(len(x_)) if c is None else c, dtype=np.float64)
    cdef intp_t n = x_.shape[0]
    if m_.shape[0] != n or c_.shape[0] != n or n == 0:
        raise ValueError("x, m and c must have the same length n > 0")
    if c is None:
        return squared_distance(n, &x_[0], &m_[0])
    return scaled_squares(n, &x_[0], &m_[0], &c_[0])
