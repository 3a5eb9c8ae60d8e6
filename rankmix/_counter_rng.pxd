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

Where a step needs an open-ended number of draws keyed by its own counter (a
cluster's parameter update, a split-merge launch's parameters), a
``CounterStream`` serves them through a NumPy ``bitgen_t``, so that NumPy's own
samplers (gamma, normal, beta) read it: the words of (c0, c1, c2, 0), then of
(c0, c1, c2, 1), and so on.
"""

from libc.stdint cimport uint32_t, uint64_t
from numpy.random cimport bitgen_t

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


cdef struct CounterStream:
    # the words of Philox(counter, key), counter[3] counting the blocks drawn
    uint64_t key[2]
    uint64_t counter[4]
    uint64_t words[4]
    int next_word          # the next unread word of ``words`` (4: none left)
    bitgen_t bitgen        # its state is the stream itself


cdef inline uint64_t _counter_stream_next64(void* state) noexcept nogil:
    cdef CounterStream* s = <CounterStream*> state
    if s.next_word == 4:
        philox4x64_10(s.counter, s.key, s.words)
        s.counter[3] += 1
        s.next_word = 0
    s.next_word += 1
    return s.words[s.next_word - 1]


cdef inline uint32_t _counter_stream_next32(void* state) noexcept nogil:
    return <uint32_t> (_counter_stream_next64(state) >> 32)


cdef inline double _counter_stream_next_double(void* state) noexcept nogil:
    return philox_uniform(_counter_stream_next64(state))


cdef inline bitgen_t* counter_stream_start(
        CounterStream* s, const uint64_t* key, uint64_t c0, uint64_t c1,
        uint64_t c2) noexcept nogil:
    """Point ``s`` at the stream of counters (c0, c1, c2, n) under ``key``, n from 0,
    and return its bit generator. ``s`` must not move while the generator is used
    (the generator's state points at it)."""
    s.key[0] = key[0]
    s.key[1] = key[1]
    s.counter[0] = c0
    s.counter[1] = c1
    s.counter[2] = c2
    s.counter[3] = 0
    s.next_word = 4
    s.bitgen.state = s
    s.bitgen.next_uint64 = _counter_stream_next64
    s.bitgen.next_uint32 = _counter_stream_next32
    s.bitgen.next_double = _counter_stream_next_double
    s.bitgen.next_raw = _counter_stream_next64
    return &s.bitgen
