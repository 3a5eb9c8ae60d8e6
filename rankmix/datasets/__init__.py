# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Data sets: synthetic mixtures of Mallows models."""

from ._samples_generator import make_mallows_mixture

__all__ = ["make_mallows_mixture"]
