# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Declarations of the Mallows sub-cluster chain's operations on its rankings."""

from libc.stdint cimport int32_t, uint64_t

from ._kernels cimport codes_one, intp_t

# The parallel loops give each OpenMP thread at least this many rows: on fewer,
# starting and joining the threads costs more than the rows (a busy core makes
# each join wait for a time slice). The draws do not depend on it.
cdef enum:
    MIN_ROWS_PER_THREAD = 128


cdef inline double gm_from_codes(
    const intp_t* code, intp_t t, const double* th, const double* norm,
) noexcept nogil:
    """log GM of a top-t ranking from its codes ``code`` (t,) against sigma."""
    cdef intp_t j
    cdef double value = -norm[t]
    for j in range(t):
        value -= th[j] * code[j]
    return value


cdef inline double gm_log_density(
    const intp_t* x, intp_t t, const intp_t* pos, const double* th, const double* norm,
    intp_t* code,
) noexcept nogil:
    """log GM(x | sigma, theta) of the top-t ranking x, sigma given by its inverse
    ``pos`` and theta's cumulative log psi by ``norm``; ``code`` (t,) is the
    caller's scratch, so that threads each pass their own."""
    codes_one(x, t, pos, code)
    return gm_from_codes(code, t, th, norm)


cdef int threads_for(intp_t rows) noexcept nogil
cdef int threads_for_codes(intp_t rows, intp_t T) noexcept nogil

cdef size_t label_scratch_stride(intp_t K, intp_t T) noexcept nogil

cdef void label_rows(
    const intp_t* X, const intp_t* lengths, intp_t T, intp_t n_rows,
    intp_t first_row, const intp_t* labels, intp_t* new_labels, const uint64_t* key,
    uint64_t sweep, const intp_t* active, intp_t K, const double* log_pi,
    const double* anchor_priority, const intp_t* anchor_row,
    const int32_t* positions, const double* stage_theta, const double* stage_norm,
    double* scratch, int n_threads,
) noexcept nogil

cdef void density_rows(
    const intp_t* X, const intp_t* lengths, intp_t T, intp_t first_row,
    const intp_t* points, intp_t m,
    const intp_t* pos_a, const double* th_a, const double* norm_a,
    const intp_t* pos_b, const double* th_b, const double* norm_b,
    double* gm_a, double* gm_b, intp_t* codes, int n_threads,
) noexcept nogil

cdef void code_total_rows(
    const intp_t* X, const intp_t* lengths, intp_t T, intp_t first_row,
    const intp_t* points, intp_t m, const intp_t* pos_a, const intp_t* pos_b,
    double* total_a, double* total_b, intp_t* codes, int n_threads,
) noexcept nogil
