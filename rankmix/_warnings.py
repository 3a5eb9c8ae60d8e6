# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Warnings attributed to the user's line, however deep in rankmix they arise.

A fixed ``stacklevel`` names the right line from one call path only: the
chains-disagree warning is raised the same number of frames below ``fit`` and
below ``fit_predict``, ``GridSearchCV`` or a warm fit only by chance. `warn` walks
out of rankmix's own frames (and scikit-learn's ``_fit_context`` wrapper around
``fit``) and names the first frame beyond them: the user's code, or the
library that called rankmix. Python 3.12's ``skip_file_prefixes`` does the same;
rankmix supports 3.10 and 3.11 too.
"""

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
# scikit-learn's wrappers around an estimator's methods (fit's _fit_context,
# the output wrapper of transform and fit_transform) and functions (parameter
# validation)
_WRAPPERS = (
    os.path.join("sklearn", "base.py"),
    os.path.join("sklearn", "utils", "_set_output.py"),
    os.path.join("sklearn", "utils", "_param_validation.py"),
)


def _is_internal(filename):
    filename = os.path.abspath(filename)
    return filename.startswith(_PACKAGE) or filename.endswith(_WRAPPERS)


def warn(message, category=UserWarning):
    """``warnings.warn(message, category)`` at the first frame outside rankmix."""
    frame, level = sys._getframe(1), 2  # stacklevel 2: warn's caller
    while frame.f_back is not None and _is_internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
