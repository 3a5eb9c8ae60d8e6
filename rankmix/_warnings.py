# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Warnings attributed to the user's line, however deep in rankmix they arise.

A fixed ``stacklevel`` names the right line from one call path only: the
chains-disagree warning is raised the same number of frames below ``fit`` and
below ``fit_predict``, ``GridSearchCV`` or a warm fit only by chance. `warn` walks
out of rankmix's own frames (and scikit-learn's wrappers around ``fit``,
``fit_transform`` and validated functions) and names the first frame beyond
them: the user's code, or the library that called rankmix. Frames are told by
their module's name, which holds wherever and however the package is installed
(a file's path would not in a frozen application). Python 3.12's
``skip_file_prefixes`` does the same by path; rankmix supports 3.10 and 3.11 too.
"""

import sys
import warnings

# scikit-learn's wrappers: fit's _fit_context (sklearn.base), the output wrapper
# of transform and fit_transform, and the parameter validation of functions
_WRAPPERS = frozenset(
    {"sklearn.base", "sklearn.utils._set_output", "sklearn.utils._param_validation"}
)


def _is_internal(frame):
    module = frame.f_globals.get("__name__", "")
    return module == "rankmix" or module.startswith("rankmix.") or module in _WRAPPERS


def warn(message, category=UserWarning):
    """``warnings.warn(message, category)`` at the first frame outside rankmix."""
    frame, level = sys._getframe(1), 2  # stacklevel 2: warn's caller
    while frame.f_back is not None and _is_internal(frame):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
