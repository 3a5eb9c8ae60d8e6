# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Declarations of the Normal-inverse-Wishart kernels and family.

A cluster's sufficient statistics live in one flat block of ``NIW.width`` doubles
(the "state", layout below), so that a chain's clusters are rows of one growable
array and scratch states for the split-merge move are plain buffers.
``NIWModel.family(X)`` binds the prior to data as a ``_family.Family``, the only
thing the collapsed sampler core (``_collapsed_chain``) sees.
"""

ctypedef Py_ssize_t intp_t

# Layout of a state block (offsets in doubles).
cdef enum:
    S_COUNT = 0       # n, number of members
    S_LOG_CONST = 1   # log-predictive constant (lgamma terms and log-det), see .pyx
    S_LOG_DET = 2     # log |Psi_n| (full) or sum_j log psi_nj (diag)
    S_LOG_WEIGHT = 3  # log n + S_LOG_CONST: the Gibbs weight's constant (-inf if n = 0)
    S_MEAN = 4        # (d,) posterior location m_n; then the scale, then its inverses


cdef struct NIW:
    # Prior of one cluster and the tables shared by its states.
    intp_t d             # dimension
    bint full            # full covariance (Cholesky scale) or diagonal (variances)
    intp_t scale_size    # d * d (full) or d (diag)
    intp_t scale_off     # offset of the scale: column-major lower Cholesky of Psi_n
                         # (full) or the vector psi_n (diag)
    intp_t inv_off       # offset of (d,) 1 / L_jj (full) or 1 / psi_nj (diag)
    intp_t width         # doubles per state
    double kappa, nu     # kappa_0, nu_0
    double* mean         # (d,) m_0
    double* psi          # (d, d) Psi_0, row-major (full); (d,) psi_0 (diag)
    double* prior        # (width,) the state of an empty cluster
    intp_t n_max         # the tables cover n = 0..n_max
    double* lg_pred      # (n_max + 1,) log-gamma part of the predictive constant
    double* lg_marg      # (n_max + 1,) log-gamma part of the log marginal likelihood


cdef int chol_update(double* L, double* v, intp_t d) noexcept nogil
cdef int chol_downdate(double* L, double* v, intp_t d) noexcept nogil
cdef int cholesky(double* A, intp_t d) noexcept nogil

# shared with the other Gaussian families (``_isotropic_kernels``)
cdef double dot(const double* u, const double* x, intp_t d) noexcept nogil
cdef void location_add(
    double* s, double* mean, const double* x, intp_t d, double kappa_n) noexcept nogil
cdef void location_remove(
    double* s, double* mean, const double* x, intp_t d, double kappa_n) noexcept nogil
cdef void members_mean(
    const double* X, const intp_t* members, intp_t n, intp_t d, double* xbar,
) noexcept nogil

cdef void state_refresh(const NIW* p, double* s) noexcept nogil
cdef void state_add(const NIW* p, double* s, const double* x, double* work) noexcept nogil
cdef int state_remove(const NIW* p, double* s, const double* x, double* work) noexcept nogil
cdef int state_rebuild(
    const NIW* p, double* s, const double* X, const intp_t* members, intp_t n,
    double* work,
) noexcept nogil
cdef double state_log_predictive(
    const NIW* p, const double* s, const double* x, double* work,
) noexcept nogil
cdef double state_log_kernel(
    const NIW* p, const double* s, const double* x, double* work,
) noexcept nogil
cdef double state_log_marginal(const NIW* p, const double* s) noexcept nogil


cdef class NIWModel:
    cdef NIW p
    cdef object _arrays   # keeps the NumPy buffers behind p's pointers alive
    cdef object _arguments  # the constructor's arguments, for pickling
