# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures shared by the tests: the shared data folder, no network, a Dask cluster."""

import os
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


@pytest.fixture(scope="module")
def dask_client():
    """A client of a LocalCluster of 2 worker processes (or the environment
    variable ``RANKMIX_TEST_DASK_WORKERS``), one thread each, for the tests of
    fits on Dask of one module (skips them without dask.distributed); closed after
    the module, so that no other test finds it active."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=int(os.environ.get("RANKMIX_TEST_DASK_WORKERS", 2)),
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client
