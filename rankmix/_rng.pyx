# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Random-number plumbing between Python and the compiled kernels.

Python code holds NumPy bit generators (one per chain, spawned from the user's
``random_state`` before any parallel work); compiled code receives the underlying
``bitgen_t*`` and draws from it with the GIL released, under the generator's lock.
"""

import numpy as np
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from libc.stdint cimport uint64_t
from sklearn.utils import check_random_state

from ._counter_rng cimport philox4x64_10

# Largest seed drawn from a RandomState: numpy's legacy RandomState.randint needs a
# value that fits a C long on every platform (32 bits on Windows).
_MAX_SEED = np.iinfo(np.int32).max


cdef bitgen_t* bitgen_pointer(object bit_generator) except NULL:
    """The ``bitgen_t*`` of a NumPy BitGenerator or Generator."""
    bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
    capsule = getattr(bit_generator, "capsule", None)
    if capsule is None or not PyCapsule_IsValid(capsule, "BitGenerator"):
        raise TypeError(
            "Expected a numpy.random.BitGenerator or Generator, got "
            f"{type(bit_generator).__name__}."
        )
    return <bitgen_t*> PyCapsule_GetPointer(capsule, "BitGenerator")


def as_bit_generator(random_state):
    """Turn ``random_state`` into a NumPy bit generator for the compiled kernels.

    Parameters
    ----------
    random_state : None, int, RandomState, Generator or BitGenerator
        A Generator or BitGenerator is used as it is (so its stream advances); an int,
        None or RandomState seeds a fresh ``PCG64`` from
        ``check_random_state(random_state)``.

    Returns
    -------
    bit_generator : numpy.random.BitGenerator
    """
    if isinstance(random_state, np.random.Generator):
        return random_state.bit_generator
    if isinstance(random_state, np.random.BitGenerator):
        return random_state
    seed = check_random_state(random_state).randint(_MAX_SEED)
    return np.random.PCG64(seed)


def spawn_bit_generators(random_state, n):
    """``n`` independent ``PCG64`` generators, all fixed by ``random_state``.

    The seeds are drawn once, before any parallel work, so each chain's stream
    depends on ``random_state`` and on its index only, never on ``n_jobs``.
    """
    seed = check_random_state(random_state).randint(_MAX_SEED)
    return [np.random.PCG64(s) for s in np.random.SeedSequence(seed).spawn(n)]


def _uniform_wrapper(bit_generator, Py_ssize_t size):
    """Draw ``size`` uniforms with the nogil helper (for tests)."""
    cdef double[::1] out = np.empty(size, dtype=np.float64)
    cdef bitgen_t* rng = bitgen_pointer(bit_generator)
    cdef Py_ssize_t i
    bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
    with bit_generator.lock, nogil:
        for i in range(size):
            out[i] = uniform(rng)
    return np.asarray(out)


def _philox_wrapper(counter, key):
    """Philox4x64-10 of ``counter`` (4 words) under ``key`` (2 words), for tests."""
    cdef uint64_t[::1] c = np.asarray(counter, dtype=np.uint64).copy()
    cdef uint64_t[::1] k = np.asarray(key, dtype=np.uint64).copy()
    cdef uint64_t[::1] out = np.empty(4, dtype=np.uint64)
    if c.shape[0] != 4 or k.shape[0] != 2:
        raise ValueError("counter takes 4 words and key 2")
    philox4x64_10(&c[0], &k[0], &out[0])
    return np.asarray(out)
