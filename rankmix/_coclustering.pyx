# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Compiled accumulation of the co-clustering counts of posterior draws.

For ``S`` draws of a clustering of ``N`` points, the count of pair ``(i, j)`` is
the (weighted) number of draws that put ``i`` and ``j`` in one cluster.
:func:`add_pair_counts` adds one draw, given its points grouped by cluster, to
the upper triangle of an ``(N, N)`` float64 array; :func:`symmetrise` copies the
upper triangle down once at the end.

Visiting only the pairs inside each cluster costs :math:`\\sum_k n_k^2 / 2` per
draw (``n_k`` the cluster sizes) instead of :math:`N^2 / 2` for a comparison
of every pair of labels, and the only memory besides the output is the draw's
grouping, :math:`O(N)`: no ``(N, N)`` temporary per draw and no
``(N, N, S)`` array.
"""

from ._slots cimport intp_t


def add_pair_counts(
    double[:, ::1] counts,
    const intp_t[::1] order,
    const intp_t[::1] starts,
    double weight,
):
    """Add ``weight`` to ``counts[i, j]`` for every pair ``i < j`` of a cluster.

    Parameters
    ----------
    counts : ndarray of float64 of shape (N, N)
        Accumulator; only its upper triangle (``i < j``) is written.
    order : ndarray of intp of shape (N,)
        The points sorted by cluster, ascending within each cluster.
    starts : ndarray of intp of shape (K + 1,)
        Cluster ``k`` is ``order[starts[k]:starts[k + 1]]``.
    weight : float
        How many draws this grouping stands for.
    """
    cdef intp_t k, a, b, i
    cdef intp_t n_groups = starts.shape[0] - 1
    with nogil:
        for k in range(n_groups):
            for a in range(starts[k], starts[k + 1]):
                i = order[a]
                # ``order`` is ascending within a group, so order[b] > i.
                for b in range(a + 1, starts[k + 1]):
                    counts[i, order[b]] += weight


def symmetrise(double[:, ::1] counts, double diagonal):
    """Copy the upper triangle onto the lower one and set the diagonal, in place."""
    cdef intp_t i, j, n = counts.shape[0]
    with nogil:
        for i in range(n):
            counts[i, i] = diagonal
            for j in range(i + 1, n):
                counts[j, i] = counts[i, j]
