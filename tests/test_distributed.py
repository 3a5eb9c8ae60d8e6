"""The sub-cluster chain with its rows in blocks, in process and on Dask workers.

The states are built from block moments merged in block order, so that the draws
do not depend on where the rows are: the same chain with its rows held by Dask
workers (``_distributed.DaskRows``) draws exactly what it draws in process.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from rankmix import _subcluster_chain as chain_module
from rankmix._distributed import (
    DaskRows,
    aligned_chunks,
    block_moments,
    merge_moments,
)
from rankmix._gaussian_kernels import NIWModel
from rankmix._isotropic_kernels import IsotropicModel
from rankmix._subcluster_chain import SubclusterChain

from .test_gaussian import EXACT_CASES, assert_matches_posterior, fit_tiny

da = pytest.importorskip("dask.array")

KINDS = ["full", "diag", "spherical", "fixed"]


def make_model(kind, d, n_max):
    if kind in ("full", "diag"):
        psi = np.eye(d) if kind == "full" else np.ones(d)
        return NIWModel(np.zeros(d), 0.5, d + 2.0, psi, kind == "full", n_max)
    psi = np.array(1.5) if kind == "spherical" else np.diag(np.arange(1.0, d + 1))
    return IsotropicModel(np.zeros(d), 0.5, 3.0, psi, kind == "fixed", n_max)


def two_blobs(n=300, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[n // 2 :] += 6.0
    return X


class _Done:
    """A future whose value is known."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class SerialClient:
    """The part of ``distributed.Client`` that ``DaskRows`` uses, run in process:
    the rows' operations without a cluster, for fast exact comparisons."""

    def submit(self, function, *args, pure=True):
        return _Done(function(*[a.value if isinstance(a, _Done) else a for a in args]))

    def gather(self, futures):
        return [future.value for future in futures]

    def compute(self, collections):
        return [_Done(c.compute()) for c in collections]


def run_pair(kind, X, chunks, row_block, client, n_sweeps=25, seed=1):
    """A chain with its rows in process and the same chain on ``client``'s rows;
    asserts every sweep's labels and log joint are identical."""
    model = make_model(kind, X.shape[1], len(X))
    rows = DaskRows(da.from_array(X, chunks=(chunks, -1)), client, row_block).bind(model)
    empty = np.empty((0, X.shape[1]))
    options = dict(alpha=1.0, n_split_merge=3, alpha_prior=(1.0, 1.0), init_clusters=3)
    chain_module.ROW_BLOCK, saved = row_block, chain_module.ROW_BLOCK
    try:
        local = SubclusterChain(
            model.family(X), bit_generator=np.random.PCG64(seed), **options
        )
    finally:
        chain_module.ROW_BLOCK = saved
    remote = SubclusterChain(
        model.family(empty), bit_generator=np.random.PCG64(seed), remote=rows, **options
    )
    for sweep in range(n_sweeps):
        local.sweep()
        remote.sweep()
        assert_array_equal(local.snapshot()[0], remote.snapshot()[0], err_msg=sweep)
        assert local.log_joint == remote.log_joint, sweep
        assert local.alpha == remote.alpha
    assert local.split_merge_counts == remote.split_merge_counts
    return local


# -- block moments ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_block_moments_give_the_state_of_a_rebuild(kind):
    # merged block by block, the moments give the state a rebuild gives (to
    # rounding), whatever the block size
    X = two_blobs(97, 3)
    model = make_model(kind, 3, len(X))
    family = model.family(X)
    members = np.sort(np.random.default_rng(1).choice(len(X), 60, replace=False))
    rebuilt = model.empty_state()
    assert model.rebuild(rebuilt, X[members]) == 0
    for row_block in (1, 7, 32, 1000):
        blocked = family._blocked_state(members, row_block)
        assert_allclose(blocked, rebuilt, rtol=1e-10, atol=1e-12)
    # an empty set of rows is the prior
    assert_array_equal(family._blocked_state(np.empty(0, np.intp), 4), model.empty_state())


def test_merged_data_moments_match_numpy():
    X = two_blobs(1000, 4)
    n, mean, M2 = merge_moments(block_moments(X, 64))
    assert n == 1000
    assert_allclose(mean, X.mean(axis=0), rtol=1e-12)
    assert_allclose(M2 / n, np.cov(X, rowvar=False, bias=True), rtol=1e-10)


def test_aligned_chunks_cut_at_blocks():
    assert aligned_chunks((50, 50, 50, 50, 50, 50), 300, 16) == (48, 48, 48, 48, 64, 44)
    # a chunk smaller than half a block disappears into its neighbour
    assert aligned_chunks((5, 295), 300, 16) == (300,)
    assert aligned_chunks((300,), 300, 16) == (300,)
    assert sum(aligned_chunks((7,) * 100, 700, 64)) == 700


# -- exactness with many blocks ------------------------------------------------------


@pytest.mark.parametrize("X, covariance_type", EXACT_CASES)
def test_subcluster_over_many_blocks_matches_the_exact_posterior(
    X, covariance_type, monkeypatch
):
    # blocks of 2 rows: every state is merged from several blocks' moments
    monkeypatch.setattr(chain_module, "ROW_BLOCK", 2)
    model = fit_tiny(X, covariance_type, "subcluster")
    assert_matches_posterior(model, X, covariance_type)


# -- rows elsewhere, in process ------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_rows_in_chunks_draw_what_rows_in_process_draw(kind):
    run_pair(kind, two_blobs(), 50, 16, SerialClient())


def test_rows_in_chunks_identical_with_large_launches():
    # scans over more rows than PARALLEL_LAUNCH_ROWS run threaded on each chunk
    X = two_blobs(6000, 3, seed=2)
    run_pair("diag", X, 1500, 512, SerialClient(), n_sweeps=6)


def test_rows_elsewhere_refuse_a_sequential_start():
    X = two_blobs()
    model = make_model("full", 2, len(X))
    rows = DaskRows(da.from_array(X, chunks=(100, -1)), SerialClient(), 16).bind(model)
    with pytest.raises(ValueError, match="sequential"):
        SubclusterChain(
            model.family(np.empty((0, 2))), 1.0, 3, None, 3, np.random.PCG64(0),
            sequential_init=True, remote=rows,
        )
