# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Random numbers for nogil code, drawn from a NumPy bit generator.

Every kernel that needs randomness takes a ``bitgen_t*`` owned by one chain: there is
no global RNG state, so chains run side by side in threads and the draws depend only
on the chain's seed.
"""

from libc.math cimport INFINITY, exp, log, log1p
from numpy.random cimport bitgen_t


cdef bitgen_t* bitgen_pointer(object bit_generator) except NULL

# NumPy's own samplers (numpy/random/distributions.h, in the npyrandom library)
cdef extern from "numpy/random/distributions.h":
    double random_beta(bitgen_t* bitgen_state, double a, double b) nogil
    double random_standard_gamma(bitgen_t* bitgen_state, double shape) nogil
    double random_standard_normal(bitgen_t* bitgen_state) nogil


cdef inline double uniform(bitgen_t* rng) noexcept nogil:
    """A double uniform on [0, 1)."""
    return rng.next_double(rng.state)


cdef inline double standard_exponential(bitgen_t* rng) noexcept nogil:
    """A draw from Exp(1), by inversion (1 - u lies in (0, 1], so the log is finite)."""
    return -log(1.0 - rng.next_double(rng.state))


cdef inline Py_ssize_t uniform_index(bitgen_t* rng, Py_ssize_t n) noexcept nogil:
    """An integer uniform on {0, ..., n - 1}, for n >= 1."""
    cdef Py_ssize_t i = <Py_ssize_t>(rng.next_double(rng.state) * n)
    # next_double < 1, but guard against round-off at the top end all the same.
    return i if i < n else n - 1


cdef inline double log_sum_exp(const double* log_weights, Py_ssize_t n) noexcept nogil:
    """log sum_k exp(log_weights[k]), shifted by the largest (-inf entries add
    nothing; at least one must be finite)."""
    cdef Py_ssize_t k
    cdef double high = -INFINITY, total = 0.0
    for k in range(n):
        if log_weights[k] > high:
            high = log_weights[k]
    for k in range(n):
        if log_weights[k] > -INFINITY:
            total += exp(log_weights[k] - high)
    return high + log(total)


cdef inline Py_ssize_t draw_from_logs(
    double* log_weights, Py_ssize_t n, bitgen_t* rng
) noexcept nogil:
    """An index in 0..n-1 drawn with probability proportional to exp(log_weights).

    One uniform from ``rng`` per draw; see :func:`draw_index`.
    """
    return draw_index(log_weights, n, uniform(rng))


cdef inline Py_ssize_t draw_index(double* log_weights, Py_ssize_t n, double u) noexcept nogil:
    """The index of ``draw_from_logs`` for a given uniform u on [0, 1).

    Overwrites ``log_weights`` with the weights relative to the largest. A weight
    below exp(-50) of the largest (which contributes 1) cannot change the total or
    the draw in double precision, even summed over 10^5 entries, so its exp is
    skipped, and it is never drawn (nor is a -inf weight: at least one weight must
    be finite). Round-off at the top end returns the last index of positive
    weight. The parallel samplers pass each row's own counter-based uniform.
    """
    cdef Py_ssize_t k, last = 0
    cdef double high = -1e308, total = 0.0
    for k in range(n):
        if log_weights[k] > high:
            high = log_weights[k]
    for k in range(n):
        if log_weights[k] - high < -50.0:
            log_weights[k] = 0.0
        else:
            log_weights[k] = exp(log_weights[k] - high)
            last = k
        total += log_weights[k]
    u *= total
    for k in range(n):
        u -= log_weights[k]
        if u < 0.0 and log_weights[k] > 0.0:
            return k
    return last


cdef inline void shuffle(Py_ssize_t* values, Py_ssize_t n, bitgen_t* rng) noexcept nogil:
    """Put ``values[:n]`` in a uniformly random order, in place (Fisher-Yates)."""
    cdef Py_ssize_t r, t, value
    for r in range(n - 1, 0, -1):
        t = uniform_index(rng, r + 1)
        value = values[r]
        values[r] = values[t]
        values[t] = value


cdef inline double log_add(double a, double b) noexcept nogil:
    """log(e^a + e^b)."""
    if a == -INFINITY:
        return b
    if b == -INFINITY:
        return a
    if a > b:
        return a + log(1.0 + exp(b - a))
    return b + log(1.0 + exp(a - b))


cdef inline void log_pair(double la, double lb, double* log_a, double* log_b) noexcept nogil:
    """log(e^la / (e^la + e^lb)) and log(e^lb / (e^la + e^lb)), without overflow.

    The two-way choice of the split-merge moves (a point goes with i or with j).
    """
    cdef double diff = lb - la
    if diff > 0.0:
        log_b[0] = -log1p(exp(-diff))
        log_a[0] = -diff + log_b[0]
    else:
        log_a[0] = -log1p(exp(diff))
        log_b[0] = diff + log_a[0]


cdef inline double log_gamma_variate(bitgen_t* rng, double shape) noexcept nogil:
    """log of a Gamma(shape, 1) draw, finite even where the draw itself underflows.

    A Gamma draw of small shape is often below the smallest double (shape 0.01:
    about once in three draws below 1e-30, and far below). Then
    G(a) = G(a + 1) U^(1 / a) (Marsaglia & Tsang 2000, sec. 7) is taken in logs.
    """
    if shape >= 1.0:
        return log(random_standard_gamma(rng, shape))
    return (log(random_standard_gamma(rng, shape + 1.0))
            + log(1.0 - rng.next_double(rng.state)) / shape)
