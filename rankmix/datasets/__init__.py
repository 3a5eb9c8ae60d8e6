# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Data sets: synthetic mixtures of Mallows models."""

from ._preflib import (
    fetch_apa,
    fetch_irish,
    fetch_preflib,
    fetch_sushi,
    get_data_home,
    load_apa1980,
    load_preflib,
)
from ._samples_generator import make_mallows_mixture

__all__ = [
    "fetch_apa",
    "fetch_irish",
    "fetch_preflib",
    "fetch_sushi",
    "get_data_home",
    "load_apa1980",
    "load_preflib",
    "make_mallows_mixture",
]
