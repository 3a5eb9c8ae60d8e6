"""Build the compiled modules of rankmix.

Every ``rankmix/*.pyx`` is cythonized with bounds checks and wrap-around off. Set
``RANKMIX_DEBUG_CYTHON=1`` in the environment when building to turn bounds checks,
wrap-around checks and initialisation checks back on (and optimisation off), for
debugging out-of-range reads::

    RANKMIX_DEBUG_CYTHON=1 pip install -e . --no-build-isolation

The kernels draw their random numbers from NumPy bit generators through NumPy's
``npyrandom`` static library (the route NumPy documents in "Extending via Cython").

Loops written with Cython's ``prange`` run on OpenMP threads when the compiler
supports OpenMP (gcc does; Apple's clang needs ``libomp``). The build tries a
small OpenMP program first and, if it does not compile and link, builds without
OpenMP: the same code then runs on one thread, with the same results. Set
``RANKMIX_NO_OPENMP=1`` to build without OpenMP on purpose.
"""

import os
import shutil
import tempfile
import textwrap
import warnings
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

# -ffp-contract=off: no fused multiply-adds where the target has them (aarch64,
# -march=native), so that every product is rounded before its sum, as on
# baseline x86-64, and both versions of rankmix/_simd.pxd's loops round alike.
# (MSVC fuses only under /fp:contract.)
if DEBUG:
    EXTRA_COMPILE_ARGS = ["-O0", "-g", "-ffp-contract=off"]
elif os.name == "nt":
    EXTRA_COMPILE_ARGS = ["/O2"]
else:
    # -g0 overrides the -g of Python's own CFLAGS: debug information would be
    # most of each module's size (GCC's code is the same with or without it)
    EXTRA_COMPILE_ARGS = ["-O3", "-ffp-contract=off", "-g0"]


def openmp_flags():
    """Compile and link flags for OpenMP, or ``([], [])`` where it is not there."""
    if os.environ.get("RANKMIX_NO_OPENMP", "0") not in ("", "0"):
        return [], []
    if os.name == "nt":
        return ["/openmp"], []
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    compiler = new_compiler()
    customize_compiler(compiler)
    folder = tempfile.mkdtemp()
    source = os.path.join(folder, "check_openmp.c")
    with open(source, "w") as file:
        file.write(
            textwrap.dedent(
                """
                #include <omp.h>
                int main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }
                """
            )
        )
    try:
        objects = compiler.compile(
            [source], output_dir=folder, extra_postargs=["-fopenmp"]
        )
        compiler.link_executable(
            objects, "check_openmp", output_dir=folder, extra_postargs=["-fopenmp"]
        )
    except Exception:  # any compile or link failure means: no OpenMP here
        warnings.warn(
            "rankmix: the C compiler does not support OpenMP (-fopenmp); the "
            "compiled loops will run on one thread. See the installation guide.",
            stacklevel=1,
        )
        return [], []
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return ["-fopenmp"], ["-fopenmp"]


OPENMP_COMPILE_ARGS, OPENMP_LINK_ARGS = openmp_flags()


def make_extension(pyx_path):
    module = os.path.splitext(pyx_path)[0].replace(os.sep, ".")
    return Extension(
        module,
        [pyx_path],
        include_dirs=[np.get_include()],
        library_dirs=LIBRARY_DIRS,
        libraries=["npyrandom", "npymath"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=EXTRA_COMPILE_ARGS + OPENMP_COMPILE_ARGS,
        extra_link_args=OPENMP_LINK_ARGS,
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
