# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Say in words when rankmix is imported from a source folder that was never built.

Python imports the folder it stands in before any installed package. So
``pip install . && python -m rankmix demo``, run from the root of a clone,
imports the clone's ``rankmix/``, whose compiled modules were built into the
installed package only, and fails with an obscure "partially initialized module"
error. scikit-learn catches the same trap in ``sklearn/__check_build``; this is
rankmix's version of it.
"""

import glob
import os

try:
    from . import _rng  # noqa: F401  (the smallest compiled module)
except ImportError:
    _folder = os.path.dirname(os.path.abspath(__file__))
    # _rng.so or _rng.<tag>.so (.pyd on Windows), of this Python or another
    if glob.glob(os.path.join(_folder, "_rng*.so")) or glob.glob(
        os.path.join(_folder, "_rng*.pyd")
    ):
        raise  # built, but it does not load: the original error says why
    raise ImportError(
        f"rankmix was imported from its source folder {_folder}, which is not "
        "built; run the command from another folder (the installed `rankmix` "
        "command works anywhere), or build in place with `pip install -e .`."
    ) from None  # the "partially initialized module" error would only confuse
