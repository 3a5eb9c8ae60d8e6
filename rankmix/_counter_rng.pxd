# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Counter-based random numbers: a draw is a function of (key, counter), not of a stream.

The parallel samplers draw each row's random numbers from Philox4x64-10 (Salmon,
Moraes, Dror & Shaw 2011, "Parallel random numbers: as easy as 1, 2, 3"), keyed by
the chain's seed and counted by (row, sweep, purpose, 0). A row's draws are then the
same whichever thread, shard or Dask worker computes them, and in whatever order:
the results of a sweep never depend on the number of threads or workers. This is
the generator NumPy ships as ``numpy.random.Philox`` (the same rounds and
constants; ``tests/test_subcluster.py`` checks the outputs against it), written
here as plain C so that it runs without the GIL and without any shared state.

Each call returns four independent 64-bit words; ``philox_uniform`` turns one into
a double on [0, 1) the way NumPy does (the top 53 bits).
"""

from libc.stdint cimport uint64_t

cdef extern from *:
    """
    /* 64 x 64 -> 128-bit product, high and low words. */
    static inline uint64_t rankmix_mulhilo64(uint64_t a, uint64_t b, uint64_t* hi) {
    #if defined(__SIZEOF_INT128__)
        __uint128_t product = (__uint128_t) a * b;
        *hi = (uint64_t) (product >> 64);
        return (uint64_t) product;
    #else
        /* portable: four 32 x 32 products */
        uint64_t a_lo = (uint32_t) a, a_hi = a >> 32, b_lo = (uint32_t) b, b_hi = b >> 32;
        uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo, lo_hi = a_lo * b_hi;
        uint64_t hi_hi = a_hi * b_hi;
        uint64_t cross = (lo_lo >> 32) + (uint32_t) hi_lo + lo_hi;
        *hi = (hi_lo >> 32) + (cross >> 32) + hi_hi;
        return (cross << 32) | (uint32_t) lo_lo;
    #endif
    }

    /* Philox4x64 with 10 rounds: out = philox(counter, key). */
    static inline void rankmix_philox4x64_10(const uint64_t* counter, const uint64_t* key,
                                             uint64_t* out) {
        uint64_t c0 = counter[0], c1 = counter[1], c2 = counter[2], c3 = counter[3];
        uint64_t k0 = key[0], k1 = key[1], hi0, hi1, lo0, lo1;
        int round;
        for (round = 0; round < 10; round++) {
            if (round > 0) {
                k0 += 0x9E3779B97F4A7C15ULL;   /* the golden ratio */
                k1 += 0xBB67AE8584CAA73BULL;   /* sqrt(3) - 1 */
            }
            lo0 = rankmix_mulhilo64(0xD2E7470EE14C6C93ULL, c0, &hi0);
            lo1 = rankmix_mulhilo64(0xCA5A826395121157ULL, c2, &hi1);
            c0 = hi1 ^ c1 ^ k0;
            c1 = lo1;
            c2 = hi0 ^ c3 ^ k1;
            c3 = lo0;
        }
        out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
    }
    """
    void philox4x64_10 "rankmix_philox4x64_10"(
        const uint64_t* counter, const uint64_t* key, uint64_t* out) noexcept nogil


cdef inline double philox_uniform(uint64_t word) noexcept nogil:
    """A double on [0, 1) from the top 53 bits of a word (as NumPy's next_double)."""
    return (word >> 11) * (1.0 / 9007199254740992.0)


cdef inline void philox_uniforms(
        const uint64_t* key, uint64_t row, uint64_t sweep, uint64_t purpose,
        double* out) noexcept nogil:
    """Four uniforms on [0, 1) for (row, sweep, purpose) under the chain's ``key``."""
    cdef uint64_t counter[4]
    cdef uint64_t words[4]
    counter[0] = row
    counter[1] = sweep
    counter[2] = purpose
    counter[3] = 0
    philox4x64_10(counter, key, words)
    out[0] = philox_uniform(words[0])
    out[1] = philox_uniform(words[1])
    out[2] = philox_uniform(words[2])
    out[3] = philox_uniform(words[3])
