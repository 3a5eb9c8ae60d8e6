# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Cluster slots, shared by the compiled chains of every model.

A chain keeps its clusters in slots ``0..capacity-1`` of growable arrays. The
active slots are listed in ``active`` (``active_pos`` is the inverse, -1 for a free
slot) and the free ones on a stack, so opening and closing a cluster is O(1) and
no relabelling pass over the data is ever needed. The chain owns its per-slot
payload (parameters, statistics) and grows it alongside with :func:`grow_array`.
"""

from libc.stdint cimport int32_t
from libc.stdlib cimport free, realloc

ctypedef Py_ssize_t intp_t


cdef struct Slots:
    intp_t capacity, n_active, n_free
    intp_t* active          # (capacity,) active slot ids
    intp_t* active_pos      # (capacity,) index of a slot in active, -1 if free
    intp_t* free_slots      # (capacity,) stack of free slot ids
    intp_t* member_start    # (capacity + 1,) see slots_group


cdef inline void* grow_array(void* pointer, size_t size) except NULL nogil:
    """realloc that raises MemoryError instead of returning NULL."""
    cdef void* grown = realloc(pointer, size if size > 0 else 1)
    if grown == NULL:
        with gil:
            raise MemoryError(f"could not allocate {size} bytes")
    return grown


cdef inline int slots_grow(Slots* s, intp_t capacity) except -1 nogil:
    """Room for ``capacity`` slots; the new ones go on the free stack, lowest on top."""
    cdef intp_t old = s.capacity, c
    if capacity <= old:
        return 0
    s.active = <intp_t*> grow_array(s.active, capacity * sizeof(intp_t))
    s.active_pos = <intp_t*> grow_array(s.active_pos, capacity * sizeof(intp_t))
    s.free_slots = <intp_t*> grow_array(s.free_slots, capacity * sizeof(intp_t))
    s.member_start = <intp_t*> grow_array(s.member_start, (capacity + 1) * sizeof(intp_t))
    for c in range(capacity - 1, old - 1, -1):
        s.active_pos[c] = -1
        s.free_slots[s.n_free] = c
        s.n_free += 1
    s.capacity = capacity
    return 0


cdef inline intp_t slots_open(Slots* s) noexcept nogil:
    """Activate the slot on top of the free stack (the caller ensured there is one)."""
    cdef intp_t c
    s.n_free -= 1
    c = s.free_slots[s.n_free]
    s.active_pos[c] = s.n_active
    s.active[s.n_active] = c
    s.n_active += 1
    return c


cdef inline void slots_close(Slots* s, intp_t c) noexcept nogil:
    """Free slot c: the last active slot takes its place in ``active``."""
    cdef intp_t p = s.active_pos[c], last = s.active[s.n_active - 1]
    s.active[p] = last
    s.active_pos[last] = p
    s.n_active -= 1
    s.active_pos[c] = -1
    s.free_slots[s.n_free] = c
    s.n_free += 1


cdef inline void slots_group(
    Slots* s, const intp_t* labels, intp_t n_points, intp_t* members
) noexcept nogil:
    """Counting sort of the points by slot.

    Afterwards ``members[member_start[c]:member_start[c + 1]]`` are the points of
    slot c, in increasing order; a point labelled -1 (in no cluster yet, as during
    a sampled start) is in none. O(n_points + capacity).
    """
    cdef intp_t i, c
    for c in range(s.capacity + 1):
        s.member_start[c] = 0
    for i in range(n_points):
        if labels[i] >= 0:
            s.member_start[labels[i] + 1] += 1
    for c in range(s.capacity):
        s.member_start[c + 1] += s.member_start[c]
    for i in range(n_points):
        c = labels[i]
        if c >= 0:
            members[s.member_start[c]] = i
            s.member_start[c] += 1
    # member_start[c] now holds the end of slot c: shift back to the starts.
    for c in range(s.capacity, 0, -1):
        s.member_start[c] = s.member_start[c - 1]
    s.member_start[0] = 0


cdef inline void slots_free(Slots* s) noexcept nogil:
    free(s.active)
    free(s.active_pos)
    free(s.free_slots)
    free(s.member_start)
    s.active = NULL
    s.active_pos = NULL
    s.free_slots = NULL
    s.member_start = NULL
    s.capacity = 0
    s.n_active = 0
    s.n_free = 0


cdef inline intp_t relabel_first_appearance(
    const intp_t* labels,   # IN (n,) labels in 0..lut_size-1 (slot ids, say)
    intp_t n,
    intp_t* lut,            # WORK (lut_size,) all -1 on entry and on exit
    intp_t* firsts,         # OUT (K,) firsts[k] is the label numbered k
    int32_t* codes,         # OUT (n,) codes 0..K-1 in order of first appearance
) noexcept nogil:
    """Number the labels of a row 0..K-1 in order of first appearance; return K.

    This is how a chain's snapshot numbers its clusters (slot ids mean nothing to
    the user) and how the point estimate compares draws: two rows equal up to a
    renaming of their labels get identical codes. O(n + K), no allocation.
    """
    cdef intp_t p, x, c, k = 0
    for p in range(n):
        x = labels[p]
        c = lut[x]
        if c < 0:
            c = k
            lut[x] = k
            firsts[k] = x
            k += 1
        codes[p] = <int32_t> c
    for c in range(k):
        lut[firsts[c]] = -1
    return k
