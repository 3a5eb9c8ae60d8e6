# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Declarations of ``CollapsedChain``, so that other chains of the core extend it.

``_subcluster_chain.SubclusterChain`` is a ``CollapsedChain`` with another sweep:
it reuses the slots, the states, their rebuilding from labels, the log joint, the
alpha step and the snapshot, which are declared here.
"""

from numpy.random cimport bitgen_t

from ._family cimport ConjugateFamily, Family
from ._permutation cimport SegmentDP, intp_t
from ._slots cimport Slots


cdef struct ProjectionRecord:
    double cluster_key   # the point's cluster's key (NIW: u . m_n)
    intp_t cluster       # its slot, to break ties between clusters
    double key           # the point's key (NIW: u . x)
    intp_t point


cdef class CollapsedChain:
    cdef object bit_generator
    cdef bitgen_t* rng
    cdef Family family         # this chain's own copy: the callbacks write scratch
    cdef ConjugateFamily f     # family.c: callbacks and context
    cdef intp_t N, W
    cdef bint gibbs, sample_alpha
    cdef intp_t n_split_merge
    cdef double alpha_shape, alpha_rate
    cdef public double alpha
    cdef public double log_joint
    cdef intp_t[::1] labels
    cdef double[::1] log_prior_predictive   # (N,) log p(x_i) under the prior
    cdef public object split_merge_counts   # proposed / accepted splits and merges
    cdef intp_t n_split, n_split_accepted, n_merge, n_merge_accepted

    # cluster slots
    cdef Slots slots           # which slots hold clusters (see _slots.pxd)
    cdef double* states        # (capacity, W)
    cdef double* log_prob      # (capacity + 1,) assignment scratch
    cdef double* kernel_table  # (capacity, ROWS_BLOCK): a block of points' kernels
    cdef char* dirty           # (capacity,) 1: the state changed since its rebuild
    cdef public bint _rebuild_every   # rebuild every state after a scan (tests)
    cdef public bint _kernel_blocks   # weigh in blocks where the family can (tests)

    # scratch
    cdef double* direction     # (key_dim,) the burn-in's projection direction u
    cdef intp_t* members       # (N,)
    cdef char* side            # (N,) split-merge: 1 if the point goes with i
    cdef double* state_a       # (W,) split-merge: i's side
    cdef double* state_b       # (W,) split-merge: j's side
    cdef double* state_m       # (W,) split-merge: the merged cluster
    cdef double* merge_moments # (2, moments_width) split-merge: the pair's moments

    # permutation move
    cdef int permutation
    cdef double beam_tolerance
    cdef public intp_t burn_in
    cdef public intp_t n_sweeps_done
    cdef public double permutation_beta     # beta after burn-in (nan until fixed)
    cdef double k_sum
    cdef intp_t k_count
    cdef SegmentDP dp
    cdef intp_t* order         # (N,) the ordering pi
    cdef intp_t* ends_old      # (N,) the current clustering's segment ends along pi
    cdef intp_t* ends_new      # (N,) the drawn clustering's
    cdef double* log_size      # (N + 1,)
    cdef double* log_A         # (N + 1,)
    cdef ProjectionRecord* records  # (N,)
    cdef intp_t n_perm, n_perm_accepted, n_perm_pruned
    cdef public double permutation_beam_width   # mean |M_r| of the last beam pass
    cdef public object permutation_counts

    cdef int _grow(self, intp_t capacity) except -1 nogil
    cdef intp_t _open_slot(self) except -1 nogil
    cdef void _close_slot(self, intp_t c) noexcept nogil
    cdef void _group_members(self) noexcept nogil
    cdef int _rebuild_all(self) except -1 nogil
    cdef int _rebuild(self, bint every) except -1 nogil
    cdef int _rebuild_slot(self, intp_t c, intp_t exclude) except -1 nogil
    cdef int _fail(self) except -1 nogil
    cdef intp_t _weigh(self, intp_t i, double log_alpha, intp_t own,
                       double own_weight, const double* kernels) noexcept nogil
    cdef intp_t _place(self, intp_t i, intp_t choice) except -1 nogil
    cdef int _seat(self, intp_t i, double log_alpha) except -1 nogil
    cdef int _remove(self, intp_t i) except -1 nogil
    cdef int _gibbs_scan(self) except -1 nogil
    cdef void _block_kernels(self, intp_t c, intp_t first, intp_t m) noexcept nogil
    cdef int _split_merge(self) except -1 nogil
    cdef double _pair_log_ratio(self, const double* state_a,
                                const double* state_b) noexcept nogil
    cdef double _sams_pass(self, intp_t i, intp_t j, intp_t m, intp_t ci,
                           bint split) noexcept nogil
    cdef int _sams_merge(self, intp_t i, intp_t j, intp_t ci, intp_t cj,
                         intp_t m) except -1 nogil
    cdef intp_t _uniform_order(self) noexcept nogil
    cdef intp_t _projection_order(self) noexcept nogil
    cdef int _permutation_move(self) except -1 nogil
    cdef int _apply_segments(self, intp_t K) except -1 nogil
    cdef double _compute_log_joint(self) noexcept nogil
    cdef int _initialise(self, intp_t n_init) except -1 nogil
    cdef int _initialise_sequential(self) except -1 nogil
    cdef int _sweep(self) except -1 nogil

    cdef inline double* _state(self, intp_t c) noexcept nogil:
        return self.states + c * self.W
