# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Declarations of the Mallows kernel between top-t rankings, for other compiled
modules (the blurring mean-shift reuses the kernel density's kernel)."""

from ._kernels cimport intp_t


cdef struct Tables:
    # Normalisers and scratch shared by every pair of one call (arrays owned by
    # the caller's NumPy buffers, see _tables).
    double theta
    intp_t free_width      # t_query + 1, the row stride of log_free
    double* log_free       # (t_data + 1, t_query + 1)
    double* log_norm       # (t_query + 1,)
    intp_t* query_position  # (n,) position of each item in q, or -1
    intp_t* position       # (t_query,) c_j
    intp_t* code           # (t_query,) the inversion counts
    intp_t* order          # (t_query,) 0..t-1: codes_one reads c in q's order


cdef Tables point_tables(tuple buffers, double theta)


cdef inline void mark_query(
    const intp_t* q, intp_t t, intp_t* query_position, bint on
) noexcept nogil:
    """Set (on) or clear the positions of q's items in the item-indexed array."""
    cdef intp_t j
    for j in range(t):
        query_position[q[j]] = j if on else -1


cdef double log_kernel_one(
    const Tables* tables, intp_t t, const intp_t* x, intp_t tx,
) noexcept nogil
