# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The one place where rankmix imports scikit-learn's private API.

rankmix declares its parameters the way scikit-learn does (``_parameter_constraints``
checked by ``_fit_context``, ``validate_params`` on public functions) and reuses
``_check_feature_names_in`` for ``get_feature_names_out`` and ``_get_feature_names``
for a data frame's column names (of rankings, and in a warm fit). Those helpers live in
scikit-learn's private modules, which may change in any release. Every rankmix
module imports them from here, so a change in scikit-learn costs one edit in one
file, and ``pyproject.toml`` bounds scikit-learn above by the newest release that
the test suite has passed against (CI also runs the estimator checks against the
newest release on the package index, so the bound is raised deliberately).

This follows imbalanced-learn's ``imblearn/utils/_sklearn_compat.py`` in spirit;
the ``sklearn-compat`` package covers only ``_fit_context`` and
``validate_params``, not the constraint classes, so it would not remove the
private imports.
"""

import numpy as np

try:
    from sklearn.base import _fit_context
    from sklearn.utils import _safe_indexing
    from sklearn.utils._param_validation import (
        HasMethods,
        InvalidParameterError,
        StrOptions,
        validate_params,
    )
    from sklearn.utils._param_validation import Interval as _Interval
    from sklearn.utils.validation import (
        _check_feature_names_in,
        _get_feature_names,
        _num_samples,
    )
except ImportError as error:  # pragma: no cover - only with an untested release
    import sklearn

    raise ImportError(
        f"rankmix needs scikit-learn's parameter-validation helpers, which "
        f"scikit-learn {sklearn.__version__} no longer provides ({error}). "
        f"Install a supported release: pip install 'scikit-learn>=1.6,<1.10'."
    ) from error


class Interval(_Interval):
    """scikit-learn's ``Interval`` constraint, refusing booleans.

    ``bool`` is a subclass of ``int``, so scikit-learn accepts ``n_iter=True``
    as the integer 1 and ``alpha=True`` as the number 1.0; in rankmix a boolean
    for a count or a rate is a mistake (a flag passed to the wrong
    parameter), so every rankmix interval refuses it with the usual
    ``InvalidParameterError`` naming the parameter.
    """

    def is_satisfied_by(self, val):
        if isinstance(val, (bool, np.bool_)):
            return False
        return super().is_satisfied_by(val)


def check_parameters(estimator):
    """Validate ``estimator``'s parameters against its ``_parameter_constraints``
    outside ``fit`` (as ``_fit_context`` does in it): for methods that read a
    parameter after the fit, which ``set_params`` may have changed."""
    estimator._validate_params()


__all__ = [
    "HasMethods",
    "check_parameters",
    "Interval",
    "InvalidParameterError",
    "StrOptions",
    "_check_feature_names_in",
    "_fit_context",
    "_get_feature_names",
    "_num_samples",
    "_safe_indexing",
    "validate_params",
]
