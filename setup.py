"""Build the compiled modules of rankmix.

Every ``rankmix/*.pyx`` is cythonized with bounds checks and wrap-around off. Set
``RANKMIX_DEBUG_CYTHON=1`` in the environment when building to turn bounds checks,
wrap-around checks and initialisation checks back on (and optimisation off), for
debugging out-of-range reads::

    RANKMIX_DEBUG_CYTHON=1 pip install -e . --no-build-isolation

The kernels draw their random numbers from NumPy bit generators through NumPy's
``npyrandom`` static library (the route NumPy documents in "Extending via Cython").
"""

import os
from glob import glob

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("RANKMIX_DEBUG_CYTHON", "0") not in ("", "0")

NUMPY_DIR = os.path.dirname(np.__file__)
LIBRARY_DIRS = [
    os.path.join(NUMPY_DIR, "random", "lib"),
    os.path.join(NUMPY_DIR, "_core", "lib"),
]

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "nonecheck": DEBUG,
    "cdivision": True,
}

if DEBUG:
    EXTRA_COMPILE_ARGS = ["-O0", "-g"]
elif os.name == "nt":
    EXTRA_COMPILE_ARGS = ["/O2"]
else:
    EXTRA_COMPILE_ARGS = ["-O3"]


def make_extension(pyx_path):
    module = os.path.splitext(pyx_path)[0].replace(os.sep, ".")
    return Extension(
        module,
        [pyx_path],
        include_dirs=[np.get_include()],
        library_dirs=LIBRARY_DIRS,
        libraries=["npyrandom", "npymath"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=EXTRA_COMPILE_ARGS,
    )


extensions = [
    make_extension(path) for path in sorted(glob(os.path.join("rankmix", "*.pyx")))
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=COMPILER_DIRECTIVES,
        # The build depends on the debug switch: rebuild when it changes.
        force=DEBUG,
    ),
)
