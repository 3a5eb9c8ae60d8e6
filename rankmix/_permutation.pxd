# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Declarations of the permutation-augmented dynamic program (Liang et al. 2007).

The dynamic program knows nothing of the mixture family. It sees a segment of the
ordering only through a ``SegmentModel``: an opaque ``context`` and three callbacks
that act on a segment's sufficient statistics, a block of ``width`` doubles that the
program owns (Gaussian: the NIW state; any conjugate family fits the same mould).
"""

from numpy.random cimport bitgen_t

ctypedef Py_ssize_t intp_t

# state <- the statistics of an empty segment
ctypedef void (*segment_reset_t)(void* context, double* state) noexcept nogil
# state <- state plus data point ``point`` (an index into the family's data)
ctypedef void (*segment_add_t)(void* context, double* state, intp_t point) noexcept nogil
# log m(x_segment): the segment's marginal likelihood, parameters integrated out
ctypedef double (*segment_log_marginal_t)(void* context, const double* state) noexcept nogil


cdef struct SegmentModel:
    void* context
    intp_t width                         # doubles per segment state
    segment_reset_t reset
    segment_add_t add
    segment_log_marginal_t log_marginal


cdef double digamma(double x) noexcept nogil


cdef class SegmentDP:
    # sizes
    cdef intp_t N                 # points of the last forward pass
    cdef intp_t n_capacity, states_capacity, kept_capacity, table_capacity
    cdef public double log_norm   # log of the last pass's normaliser
    # beam pass (also the full single-index pass with epsilon = 0)
    cdef double* g                # (N + 1,) log g'(r), the sum over the kept terms
    cdef intp_t* kept_start       # (N + 2,) kept sizes at r: kept_m[kept_start[r]:kept_start[r + 1]]
    cdef intp_t* kept_m           # (kept_capacity,)
    cdef double* kept_term        # (kept_capacity,) log g'(r - m) + log B'(segment)
    # open segments
    cdef double* states           # (states_capacity,): the open segments' states, width each
    cdef intp_t* active_start     # (N,) start position of each open segment
    cdef double* term             # (N + 1,) scratch
    cdef void* sort_buffer        # (N,) scratch records for sorting
    cdef char* keep               # (N,) scratch
    # exact pass
    cdef double* table_g          # ((N + 1)^2,) log g(r, K)
    cdef double* table_b          # ((N + 1)^2,) log B of the segment of size m ending at r
    cdef double* log_A            # (N + 1,) log A(K)
    cdef bint exact               # which pass ran last

    cdef int _reserve(self, intp_t N) except -1 nogil
    cdef int _reserve_states(self, intp_t n_open, intp_t width, intp_t N) except -1 nogil
    cdef int _reserve_kept(self, intp_t size) except -1 nogil
    cdef int beam_forward(
        self, const SegmentModel* model, const intp_t* order, intp_t N,
        const double* log_size, double epsilon,
    ) except -1 nogil
    cdef int exact_forward(
        self, const SegmentModel* model, const intp_t* order, intp_t N,
        const double* log_size, const double* log_A,
    ) except -1 nogil
    cdef intp_t sample(self, bitgen_t* rng, intp_t* ends) except -1 nogil
    cdef double log_prob(self, const intp_t* ends, intp_t K) noexcept nogil
    cdef double mean_beam_width(self) noexcept nogil
