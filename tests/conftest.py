# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures shared by the tests of real data: the shared data folder, no network."""

import urllib.request
from pathlib import Path

import pytest

#: The real data sets of the project (see its README), beside the repository.
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data():
    """The shared data folder; skips the test if it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"the shared data folder {SHARED_DATA} is absent")
    return SHARED_DATA


@pytest.fixture
def no_network(monkeypatch):
    """Make any attempt to open a URL fail the test."""

    def urlopen(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args[0]!r}")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
