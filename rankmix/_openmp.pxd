# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The number of OpenMP threads a parallel loop may use, with or without OpenMP.

``max_threads()`` is ``omp_get_max_threads()`` where the build has OpenMP, so
that ``OMP_NUM_THREADS`` and ``threadpoolctl.threadpool_limits(user_api=
"openmp")`` limit it, and 1 where it has not (``prange`` then runs serially).
Results never depend on it: parallel loops are written so that each iteration's
outcome depends only on its index.
"""

cdef extern from *:
    """
    #ifdef _OPENMP
    #include <omp.h>
    static int rankmix_max_threads(void) { return omp_get_max_threads(); }
    #else
    static int rankmix_max_threads(void) { return 1; }
    #endif
    """
    int max_threads "rankmix_max_threads"() noexcept nogil
