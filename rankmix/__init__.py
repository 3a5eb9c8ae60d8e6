# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""rankmix: Dirichlet-process mixtures of rankings, vectors and counts, by MCMC."""

# First, so that an unbuilt source folder fails with a message that says so.
from . import _check_build  # noqa: F401  isort: skip
from . import mallows
from ._ebms import MallowsBlurringMeanShift
from ._gaussian import DPGaussianClustering
from ._kde import MallowsKernelDensity
from ._mallows import DPMallowsClustering
from ._multinomial import DPMultinomialClustering

__version__ = "0.1.0.dev0"

__all__ = [
    "DPGaussianClustering",
    "DPMallowsClustering",
    "DPMultinomialClustering",
    "MallowsBlurringMeanShift",
    "MallowsKernelDensity",
    "mallows",
    "__version__",
]
