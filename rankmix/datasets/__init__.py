# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Data sets: synthetic Mallows mixtures and real ranking data."""

from ._fetchers import (
    fetch_apa,
    fetch_irish,
    fetch_preflib,
    fetch_sushi,
    get_data_home,
    load_apa1980,
)
from ._loaders import load_lda_c, load_mnist
from ._preflib import load_preflib
from ._samples_generator import make_mallows_mixture

__all__ = [
    "fetch_apa",
    "fetch_irish",
    "fetch_preflib",
    "fetch_sushi",
    "get_data_home",
    "load_apa1980",
    "load_lda_c",
    "load_mnist",
    "load_preflib",
    "make_mallows_mixture",
]
