# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Declarations of the ranking kernels, for other compiled modules (the samplers)."""

from numpy.random cimport bitgen_t

from libc.stdint cimport int32_t, int64_t

ctypedef Py_ssize_t intp_t


cdef struct Statistics:
    # Compact sufficient statistics of a set of rankings (see _kernels.pyx).
    intp_t n_ranked, n_stages, n_pairs
    intp_t* items           # (D,) ranked items, increasing
    double* counts          # (D, n_stages)
    intp_t* row_start       # (n_stages D + 1,) row j D + d: the pairs of stage j
                            # and second item d, [row_start[j D + d], the next)
    int32_t* pair_first     # (n_pairs,) the earlier item, increasing in a row
    int32_t* pair_count     # (n_pairs,) how many rankings show the pair
    # growable work buffers and capacities
    int64_t* keys
    int32_t* dense          # the dense path's tables of counts
    intp_t cap_items, cap_counts, cap_rows, cap_pairs, cap_keys, cap_dense


cdef enum:
    # what a pair of the statistics holds: its first item and its count
    PAIR_BYTES = 8   # 2 sizeof(int32_t)


cdef void statistics_init(Statistics* st) noexcept nogil
cdef void statistics_free(Statistics* st) noexcept nogil
cdef int statistics_build(
    Statistics* st, const intp_t* X, intp_t t_max, const intp_t* members,
    intp_t n_members, intp_t n_items, intp_t* local, int n_threads,
) except -1 nogil
cdef double statistics_bytes_bound(
    double n_keys, intp_t n_members, intp_t n_items, intp_t t_max,
) noexcept nogil
cdef int statistics_view(
    Statistics* st, statistics, intp_t n_stages, intp_t n_items,
) except -1


cdef double log_psi(intp_t m, double theta) noexcept nogil

cdef intp_t row_length(const intp_t* row, intp_t t_max) noexcept nogil

cdef int check_rankings(const intp_t[:, ::1] X, intp_t n_items, str name) except -1

cdef void codes_one(
    const intp_t* x, intp_t t, const intp_t* position, intp_t* out
) noexcept nogil


cdef inline void codes_from_positions(intp_t* out, intp_t t) noexcept nogil:
    """``codes_one``'s second half, in place: ``out[j]``, the rank in sigma of
    item x_j on entry, becomes s_j(x | sigma).

    Inversions are counted back to front, so that the positions of the earlier
    items are still in ``out`` when they are needed; the comparisons are summed,
    not branched on (their outcome is unpredictable).
    """
    cdef intp_t j, k, p, s
    for j in range(t - 1, -1, -1):
        p = out[j]
        s = p
        for k in range(j):
            s -= out[k] < p
        out[j] = s

cdef void weighted_statistics(
    const Statistics* st, const double* theta, double* weight, double* preceded,
    int n_threads,
) noexcept nogil

cdef void stage_sums(
    const Statistics* st, const intp_t* position, double* out, intp_t* at,
    int n_threads,
) noexcept nogil

cdef double energy(
    intp_t n_ranked, const intp_t* items, const double* weight,
    const double* preceded, const intp_t* position,
) noexcept nogil

cdef double stagewise(
    intp_t n_items, intp_t n_ranked, const intp_t* items, const double* weight,
    const double* preceded, bitgen_t* rng, intp_t* sigma, double* log_norm,
    intp_t* local, double* rho, char* placed, intp_t* unranked,
) noexcept nogil

cdef bint mh_sigma(
    intp_t n_items, intp_t n_ranked, const intp_t* items, const double* weight,
    const double* preceded, bitgen_t* rng, intp_t* sigma, intp_t* proposal,
    intp_t* local, double* rho, char* placed, intp_t* unranked,
) noexcept nogil

cdef intp_t transposition_pass(
    intp_t n_items, intp_t n_ranked, const intp_t* items, const double* weight,
    const double* preceded, bitgen_t* rng, intp_t* sigma, intp_t* local,
) noexcept nogil

cdef double slice_theta(
    double theta, double a, double b, intp_t m, double width, intp_t n_steps,
    bitgen_t* rng,
) noexcept nogil

cdef double theta_exact(double a, double b, intp_t m, bitgen_t* rng) noexcept nogil

cdef double theta_log_normaliser(double a, double b, intp_t m) noexcept nogil
