"""The sub-cluster chain with its rows in blocks, in process and on Dask workers.

The states are built from block moments merged in block order, so that the draws
do not depend on where the rows are: the same chain with its rows held by Dask
workers (``_distributed.DaskRows``) draws exactly what it draws in process.
"""

import contextlib
import gc
import os
import signal
import time
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from rankmix import (
    DPGaussianClustering,
    DPMultinomialClustering,
    _collapsed,
    _distributed,
)
from rankmix import _subcluster_chain as chain_module
from rankmix._distributed import (
    ChunkHolder,
    DaskRows,
    aligned_chunks,
    block_moments,
    merge_moments,
    worker_lanes,
)
from rankmix._gaussian_kernels import NIWModel
from rankmix._isotropic_kernels import IsotropicModel
from rankmix._multinomial_kernels import DirichletMultinomial
from rankmix._subcluster_chain import SubclusterChain

from .test_gaussian import EXACT_CASES, assert_matches_posterior, fit_tiny
from .test_multinomial import SAMPLERS as MULTINOMIAL_SAMPLERS
from .test_multinomial import assert_matches_exact_posterior

da = pytest.importorskip("dask.array")

KINDS = ["full", "diag", "spherical", "fixed"]


def make_model(kind, d, n_max):
    if kind == "counts":
        return DirichletMultinomial(np.full(d, 0.5), 64, 256)
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

    key = None  # held by no worker (``SerialClient.who_has``)
    status = "finished"

    def __init__(self, value):
        self.value = value

    def result(self, timeout=None):
        return self.value

    def release(self):
        pass


class _SerialActor:
    """An actor in process: its methods' results as known futures."""

    def __init__(self, instance):
        self.instance = instance

    def __getattr__(self, name):
        method = getattr(self.instance, name)
        return lambda *args: _Done(method(*args))


class SerialClient:
    """The part of ``distributed.Client`` that ``DaskRows`` uses, run in process:
    the rows' operations without a cluster, for fast exact comparisons."""

    def submit(self, function, *args, pure=True, actor=False, **where):
        def value(a):
            if isinstance(a, list):
                return [value(item) for item in a]
            return a.value if isinstance(a, _Done) else a

        result = function(*[value(a) for a in args])
        return _Done(_SerialActor(result) if actor else result)

    def gather(self, futures):
        return [future.value for future in futures]

    def who_has(self, futures):
        return {}

    def nthreads(self):
        return {}

    def compute(self, collections):
        return [_Done(c.compute()) for c in collections]


def chain_pair(kind, X, chunks, row_block, client, seed=1, **options):
    """The same chain twice, with its rows in process and on ``client``'s rows
    (in blocks of ``row_block`` rows both), and those rows: ``(local, remote,
    rows)``. ``options`` add to or replace the chains' defaults here."""
    model = make_model(kind, X.shape[1], len(X))
    rows = DaskRows(da.from_array(X, chunks=(chunks, -1)), client, row_block).bind(
        model
    )
    empty = np.empty((0, X.shape[1]))
    options = {
        "alpha": 1.0, "n_split_merge": 3, "alpha_prior": (1.0, 1.0),
        "init_clusters": 3, **options,
    }
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
    return local, remote, rows


def run_pair(kind, X, chunks, row_block, client, n_sweeps=25, seed=1, **options):
    """A chain with its rows in process and the same chain on ``client``'s rows;
    asserts every sweep's labels and log joint are identical."""
    local, remote, _ = chain_pair(kind, X, chunks, row_block, client, seed, **options)
    assert_same_sweeps(local, remote, n_sweeps)
    return local


def assert_same_sweeps(local, remote, n_sweeps):
    """Sweep both chains ``n_sweeps`` times, asserting the same labels, log joint
    and alpha at the start and after every sweep, and the same move counts."""
    assert_array_equal(local.snapshot()[0], remote.snapshot()[0])
    assert local.log_joint == remote.log_joint
    for sweep in range(n_sweeps):
        local.sweep()
        remote.sweep()
        assert_array_equal(local.snapshot()[0], remote.snapshot()[0], err_msg=sweep)
        assert local.log_joint == remote.log_joint, sweep
        assert local.alpha == remote.alpha
    assert local.split_merge_counts == remote.split_merge_counts


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
        blocked = family.blocked_state(members, row_block)
        assert_allclose(blocked, rebuilt, rtol=1e-10, atol=1e-12)
    # an empty set of rows is the prior
    assert_array_equal(
        family.blocked_state(np.empty(0, np.intp), 4), model.empty_state()
    )


def test_count_moments_give_the_state_of_a_rebuild():
    # counts add up exactly; the cached log-gamma sum is recomputed from them
    rng = np.random.default_rng(2)
    X = sparse.csr_matrix(rng.poisson(0.8, size=(97, 9)))
    model = DirichletMultinomial(rng.uniform(0.2, 2.0, 9), X.sum(0).A1, X.sum())
    family = model.family(X)
    members = np.sort(rng.choice(97, 60, replace=False)).astype(np.intp)
    rebuilt = np.empty(model.width)
    family._rebuild(rebuilt, members)
    for row_block in (1, 7, 32, 1000):
        blocked = family.blocked_state(members, row_block)
        assert_allclose(blocked, rebuilt, rtol=1e-12)
        assert_array_equal(blocked[5:], rebuilt[5:])  # the counts, exactly
    empty = np.empty(model.width)
    family._rebuild(empty, np.empty(0, np.intp))
    assert_array_equal(family.blocked_state(np.empty(0, np.intp), 4), empty)


@pytest.mark.parametrize("n_words", [9, 400])
def test_split_count_moments_give_the_states_of_whole_ones(n_words):
    # a chunk of counts sends its block moments' counts summed over its blocks
    # (sparse over a wide vocabulary), and its coefficients' sums by block: the
    # states merged from them are those of the whole block moments, to the bit,
    # whatever the chunks. Rows of very different totals (so that the blocks'
    # coefficients' sums round differently in another order), groups absent
    # from some blocks, one group absent from all.
    rng = np.random.default_rng(4)
    n, n_groups, row_block = 300, 6, 16
    X = np.zeros((n, n_words), dtype=np.int64)
    words = rng.choice(n_words, size=min(n_words, 30), replace=False)
    for row, length in enumerate(rng.choice([1, 5, 300], size=n)):
        np.add.at(X[row], rng.choice(words, size=length), 1)
    X[[3, 200], words[0]] = 2**25 + 1   # sums past float32's integers
    X = sparse.csr_matrix(X)
    model = DirichletMultinomial(rng.uniform(0.2, 2.0, n_words), 512, 2**16)
    groups = rng.choice([-1, 0, 1, 2, 3, 5], size=n)
    groups[:40] = 1   # blocks of one group only
    whole = chain_module.rows_group_moments(
        model.family(X), 0, np.arange(n), groups, n_groups, row_block)
    expected = chain_module.states_from_partials(model.family(X), whole)
    for cuts in ([0, n], [0, 48, 160, n], [0, 16, 32, 48, 96, 208, 288, n]):
        parts = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            family = model.family(X[a:b])
            args = (family, a, np.arange(b - a), groups[a:b], n_groups, row_block)
            part = chain_module.rows_group_moments(*args, split=True)
            # what travels: the first five columns by block, the counts summed
            # over the blocks (NumPy's sums of the whole block moments)
            table = chain_module.rows_group_moments(*args)
            assert_array_equal(part.headers, table[:, :, :5])
            exact = part.exact.toarray() if sparse.issparse(part.exact) else part.exact
            assert_array_equal(exact, table[:, :, 5:].sum(axis=0))
            # sparse where most sums are 0: 30 of 400 words; all 9 in one chunk
            if n_words == 400 or len(cuts) == 2:
                assert sparse.issparse(part.exact) == (n_words == 400)
            parts.append(part)
        joined = chain_module.joined_moments(parts)
        assert_array_equal(joined.exact, whole[:, :, 5:].sum(axis=0))
        states = chain_module.states_from_partials(model.family(X), joined)
        assert_array_equal(states, expected)
    # a family whose moments are all rounded sums sends them whole
    vectors = make_model("full", 3, 40).family(two_blobs(40, 3))
    args = (vectors, 0, np.arange(40), np.zeros(40, np.intp), 1, 16)
    assert_array_equal(chain_module.rows_group_moments(*args, split=True),
                       chain_module.rows_group_moments(*args))


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


def test_worker_lanes_deal_each_workers_chunks_among_its_threads():
    homes = ["a", "b", "a", "a", None, "b", "a"]
    lanes = worker_lanes(homes, {"a": 2, "b": 4})
    assert lanes == [("a", [0, 3]), ("a", [2, 6]), ("b", [1]), ("b", [5]), (None, [4])]
    # every chunk in one lane; a worker of unknown threads runs one
    assert worker_lanes(["a"] * 3, {}) == [("a", [0, 1, 2])]
    assert worker_lanes([], {"a": 2}) == []


def _count_calls(rows, name, record):
    """Record ``record(*args)`` of each call of ``rows.<name>`` from here on."""
    calls, method = [], getattr(rows, name)

    def counting(*args):
        calls.append(record(*args))
        return method(*args)

    setattr(rows, name, counting)
    return calls


@pytest.mark.parametrize(
    "kind, sample_rows, n_launch, budget",
    [
        (kind, 1024.0, 2, None) for kind in KINDS
    ] + [
        # samples of a few rows of S, across its blocks; three scans a launch
        ("full", 40.0, 2, None),
        ("spherical", 40.0, 3, None),
        # no room for samples: every launch scans where the rows are
        ("diag", 40.0, 2, 0),
    ],
)
def test_proposals_fetch_rows_once_a_sweep_until_a_move_is_accepted(
    kind, sample_rows, n_launch, budget, monkeypatch
):
    # the rows the sweep's launches start from are read in one go: their
    # anchors and the sample each one's first scan weighs (their picks drawn in
    # advance, right until a move is accepted, then again), and that first scan
    # runs here; a merge's merged state comes from the two clusters' states
    # (their moments read off them). So no proposal asks for rows' moments, and
    # a launch scans where the rows are n_launch - 1 times.
    X = two_blobs(600, 2)
    X[:200] -= 6.0
    if budget is not None:
        monkeypatch.setattr(chain_module, "LAUNCH_PREFETCH_VALUES", budget)
    local, chain, rows = chain_pair(
        kind, X, 64, 64, SerialClient(), n_split_merge=5, alpha_prior=None,
        launch_sample_rows=sample_rows, n_launch=n_launch,
    )
    remote_first = budget == 0   # no room for samples
    # counted from here on, sweep by sweep
    trips = _count_calls(rows, "row_partials", lambda *args: args)
    reads = _count_calls(rows, "rows", len)
    scans = _count_calls(rows, "scan", lambda *args: args[3])   # the purpose
    quiet = merges = launched = read_once = 0
    for _ in range(30):
        counts = chain.split_merge_counts
        before = (len(reads), len(scans), chain._merges_rejected_early,
                  chain._scan_reads)
        most_ahead = 2 * 5 + 10 * 5 + 5 * chain.n_clusters   # without samples
        chain.sweep()
        after = chain.split_merge_counts
        moved = sum(
            after[k] - counts[k] for k in ("split_accepted", "merge_accepted")
        )
        quiet += not moved
        merges += after["merge_proposed"] - counts["merge_proposed"]
        launches = (
            after["split_proposed"] - counts["split_proposed"]
            + after["merge_proposed"] - counts["merge_proposed"]
            - (chain._merges_rejected_early - before[2])
        )
        launched += launches
        assert trips == []
        assert len(scans) - before[1] == launches * (n_launch - (not remote_first))
        if not remote_first:
            # no scan where the rows are is a launch's first
            assert all((p - 1) % (n_launch + 1) != 1 for p in scans[before[1] :])
        # the reads: the proposals' anchors (two a proposal at most) with the
        # first scans' samples and the singleton moves' rows (one a move at
        # most, and those of the clusters of up to five rows, the small ones and
        # those a move out of leaves small), again after each
        # accepted move; a singleton the singleton moves make themselves is
        # read when picked; and each pair scan reads its two clusters' rows
        # not read yet
        ahead, *others = reads[before[0] :]
        scan_reads = chain._scan_reads - before[3]
        assert scan_reads <= 5
        assert len(others) <= moved + 1 + scan_reads
        assert 0 < ahead and (ahead <= most_ahead or not remote_first)
        read_once += not moved and len(others) == scan_reads
    assert quiet >= 10 and merges >= 10 and launched >= 10
    assert read_once >= quiet // 2
    assert chain._scans_accepted > 0
    # the same draws as with the rows in process
    local.sweep(30)
    assert_array_equal(local.snapshot()[0], chain.snapshot()[0])
    assert local.log_joint == chain.log_joint


def test_samples_are_read_ahead_within_the_budget(monkeypatch):
    # room for 30 rows of samples a read (60 values of 2 features): the
    # launches whose samples fit run their first scan here, the others on the
    # workers, and the draws are those of the rows in process
    monkeypatch.setattr(chain_module, "LAUNCH_PREFETCH_VALUES", 60)
    X = two_blobs(600, 2)
    X[:200] -= 6.0
    local, chain, rows = chain_pair(
        "full", X, 64, 64, SerialClient(), n_split_merge=5, alpha_prior=None,
        launch_sample_rows=20.0,
    )
    scans = _count_calls(rows, "scan", lambda *args: args[3])   # the purpose
    chain.sweep(30)
    assert 40 <= chain._most_read_ahead <= 60
    assert_some_first_scans_ran_here(local, chain, scans, 30)


def assert_some_first_scans_ran_here(local, chain, scans, n_sweeps):
    """After ``n_sweeps`` sweeps of ``chain`` (two scans a launch), whose scans
    on the workers had the purposes ``scans``: at least 10 launches, of which
    some, not all, ran their first scan on the workers, and every last scan;
    ``local``, the same chain with its rows in process, draws the same."""
    counts = chain.split_merge_counts
    launches = (
        counts["split_proposed"] + counts["merge_proposed"]
        - chain._merges_rejected_early
    )
    on_workers = sum((p - 1) % 3 == 1 for p in scans)   # first scans there
    assert launches >= 10
    assert 0 < on_workers < launches == len(scans) - on_workers
    local.sweep(n_sweeps)
    assert_array_equal(local.snapshot()[0], chain.snapshot()[0])
    assert local.log_joint == chain.log_joint


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n_launch", [2, 3])
def test_first_scans_here_draw_what_scans_on_the_workers_draw(
    kind, n_launch, monkeypatch
):
    # a first scan run on the client from its sample read ahead gives its sides'
    # states to the bit: the next scan's parameters, drawn from them, are those
    # of the same chain whose first scans run where the rows are. Samples of a
    # few rows of S, in many blocks of rows.
    X = two_blobs(600, 3)
    X[:200] -= 6.0
    options = {"n_split_merge": 5, "launch_sample_rows": 40.0, "n_launch": n_launch}
    parameters = []
    for budget in (chain_module.LAUNCH_PREFETCH_VALUES, 0):
        monkeypatch.setattr(chain_module, "LAUNCH_PREFETCH_VALUES", budget)
        _, chain, rows = chain_pair(kind, X, 64, 32, SerialClient(), **options)
        # the sides' parameters of every scan after a launch's first
        scans = _count_calls(rows, "scan", lambda *args: (args[3], args[4], args[5]))
        chain.sweep(20)
        parameters.append(
            [(p, a, b) for p, a, b in scans if (p - 1) % (n_launch + 1) != 1]
        )
    here, there = parameters
    assert len(here) == len(there) >= 20
    for (purpose, a, b), (purpose_there, a_there, b_there) in zip(here, there):
        assert purpose == purpose_there
        assert_array_equal(a, a_there)
        assert_array_equal(b, b_there)


def _counting_submits(client, monkeypatch):
    """The functions ``client.submit`` is given from here on."""
    submitted = []
    submit = client.submit

    def counting(*args, **kwargs):
        submitted.append(args[0])
        return submit(*args, **kwargs)

    monkeypatch.setattr(client, "submit", counting)
    return submitted


def test_round_trips_cost_a_task_per_lane_or_none(dask_client, monkeypatch):
    # 12 chunks on the workers. A summary of the chunks (validation) submits one
    # task per lane (a worker thread holding chunks), not one per chunk; the
    # chain's operations on the bound chunks call one actor per worker, made
    # once, and submit no task at all. Both give what the rows in process give.
    X = two_blobs(768, 2)
    model = make_model("full", 2, len(X))
    rows = DaskRows(da.from_array(X, chunks=(64, -1)), dask_client, 64)
    assert len(rows.sizes) == 12
    submitted = _counting_submits(dask_client, monkeypatch)
    assert rows.max_abs() == np.abs(X).max()
    threads = sum(dask_client.nthreads().values())
    assert 1 <= len(submitted) == len(rows._placement()) <= threads
    rows.bind(model)
    submitted.clear()
    first = rows.prior_predictive()
    assert submitted.count(ChunkHolder) == len(submitted) <= len(dask_client.nthreads())
    submitted.clear()
    assert_array_equal(rows.prior_predictive(), first)
    assert submitted == []
    assert_array_equal(first, model.family(X).log_prior_predictive())
    rows.close()


@contextlib.contextmanager
def cycle_collector_off():
    """Python's cycle collector held off, so that only an explicit release
    frees what reference cycles hold (a Dask actor's proxy)."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def assert_no_actor_left(client):
    """Assert that no ``ChunkHolder`` actor stays on the workers, once the
    releases have reached the scheduler (10 s at most)."""

    def actors():
        held = client.has_what().values()
        return [key for keys in held for key in keys if "ChunkHolder" in str(key)]

    deadline = time.monotonic() + 10
    while actors() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert actors() == []


def test_a_fit_leaves_no_actor_on_the_workers(dask_client):
    # the actors (and the families they hold) go when the fit ends, not when
    # the cycle collector next runs
    X = two_blobs(400, 2)
    with cycle_collector_off(), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        DPGaussianClustering(**SHORT_FIT).fit(da.from_array(X, chunks=(100, -1)))
        assert_no_actor_left(dask_client)


def _chunk_summary(family, offset, scale):
    return offset * scale + family.n_points


def test_a_chunk_holder_answers_in_the_order_asked_on_its_threads():
    # in process: the holder's pool of 3 threads runs 5 chunks, the results in
    # the order of the chunks asked for, with each chunk's own arguments
    families = [
        make_model("full", 2, 12).family(two_blobs(n, 2)) for n in (4, 6, 8, 10, 12)
    ]
    holder = ChunkHolder([10, 11, 12, 13, 14], families, n_threads=3)
    asked = [14, 10, 12, 11]
    answers = holder.run(_chunk_summary, asked, [(c, 100) for c in asked])
    assert answers == [c * 100 + families[c - 10].n_points for c in asked]
    alone = ChunkHolder([0], families[:1], n_threads=1)
    assert alone.run(_chunk_summary, [0], [(5, 2)]) == [14]


def test_an_error_of_an_operation_on_the_workers_is_raised_as_it_is(dask_client):
    # an error raised on a worker by the operation itself (here blocks of 7
    # rows, at which no chunk but the first starts) reaches the caller as it
    # was raised, and is not taken for a lost worker: the same actors stay
    X = two_blobs(256, 2)
    rows = DaskRows(da.from_array(X, chunks=(64, -1)), dask_client, 64)
    rows.bind(make_model("full", 2, len(X)))
    labels = np.zeros(len(X), dtype=np.intp)
    rows.group_partials(labels, np.arange(1), 1, 64)
    holders = rows._chunk_holders()
    with pytest.raises(ValueError, match=r"multiple of the row block 7, not at \d+"):
        rows.group_partials(labels, np.arange(1), 1, 7)
    assert rows._chunk_holders() is holders
    rows.close()
    with pytest.raises(RuntimeError, match="were closed"):
        rows.prior_predictive()


class _Unanswered:
    """An actor call that times out ``silent`` times, then answers ``value``
    (never, for ``silent=None``): an actor that went without the connection
    dropping is never answered."""

    def __init__(self, value, silent=None):
        self.value, self.silent, self.waits = value, silent, 0

    def result(self, timeout=None):
        # a wait without a timeout, or without end, would never return
        assert timeout is not None and self.waits < 100, "awaited for ever"
        if self.silent is None or self.waits < self.silent:
            self.waits += 1
            raise TimeoutError
        return self.value


class _Raising:
    """An actor call that failed with ``error``."""

    def __init__(self, error):
        self.error = error

    def result(self, timeout=None):
        raise self.error


def _fail_first_calls(monkeypatch, make_call, n_calls=1):
    """Every call of ``run`` on the first ``n_calls`` sets of holders that rows
    make gives ``make_call()``, and the scheduler says those holders' workers
    left. Returns the sets of holders made, in order."""
    made, lost = [], set()
    chunk_holders = DaskRows._chunk_holders

    def holders_made(self):
        holders = chunk_holders(self)
        if not made or made[-1] is not holders:
            made.append(holders)
            if len(made) <= n_calls:
                lost.add(id(holders))
                for _, actor, _ in holders:
                    actor.run = lambda *args: make_call()
        return holders

    monkeypatch.setattr(DaskRows, "_chunk_holders", holders_made)
    monkeypatch.setattr(DaskRows, "_holders_lost", lambda self, h: id(h) in lost)
    return made


def _serial_rows(n=256, chunks=64):
    X = two_blobs(n, 2)
    model = make_model("full", 2, n)
    rows = DaskRows(da.from_array(X, chunks=(chunks, -1)), SerialClient(), chunks)
    return rows.bind(model), model.family(X).log_prior_predictive()


def test_an_actor_call_is_awaited_in_slices_until_it_answers(monkeypatch):
    rows, _ = _serial_rows()
    monkeypatch.setattr(DaskRows, "_holders_lost", lambda self, holders: False)
    call = _Unanswered("answer", silent=3)
    assert rows._answer(call, []) == "answer"
    assert call.waits == 3


def test_a_call_to_an_actor_that_went_silently_runs_again_on_new_ones(monkeypatch):
    # the worker restarted at its own address: Dask never answers the call, the
    # scheduler sees the old worker go; new actors are made and the call runs
    # again, once
    rows, expected = _serial_rows()
    made = _fail_first_calls(monkeypatch, lambda: _Unanswered(None))
    assert_array_equal(rows.prior_predictive(), expected)
    assert len(made) == 2 and made[0] is not made[1]
    assert rows._holders is made[1]  # the first ones forgotten
    # gone on both attempts: the step cannot go on
    rows, _ = _serial_rows()
    _fail_first_calls(monkeypatch, lambda: _Unanswered(None), n_calls=2)
    with pytest.raises(RuntimeError, match="left twice during one step"):
        rows.prior_predictive()


def test_a_dropped_connection_waits_for_the_scheduler_to_see_the_loss(monkeypatch):
    # the connection to a killed worker may drop before the scheduler removes
    # the worker: an OSError (or Dask's "Actor was lost") waits for it, up to
    # LOSS_WAIT_SECONDS; the call then runs again on new actors
    rows, expected = _serial_rows()
    checks = []

    def seen_after_three_checks(self, holders):
        checks.append(holders)
        return len(checks) > 3

    monkeypatch.setattr(DaskRows, "_holders_lost", seen_after_three_checks)
    for error in (OSError("connection closed"), RuntimeError("Actor was lost")):
        checks.clear()
        assert rows._lost(error, [])
        assert len(checks) == 4
    # the operation's own error is not waited on
    checks.clear()
    assert not rows._lost(ValueError("the operation's own"), [])
    assert len(checks) == 1
    # a loss the scheduler never reports: the error is the operation's, after
    # the wait
    monkeypatch.setattr(_distributed, "LOSS_WAIT_SECONDS", 0.3)
    monkeypatch.setattr(DaskRows, "_holders_lost", lambda self, holders: False)
    start = time.monotonic()
    assert not rows._lost(OSError("connection closed"), [])
    assert time.monotonic() - start >= 0.3
    # through a round trip: the call runs again, on new actors
    monkeypatch.undo()
    rows, expected = _serial_rows()
    made = _fail_first_calls(monkeypatch, lambda: _Raising(OSError("closed")))
    assert_array_equal(rows.prior_predictive(), expected)
    assert len(made) == 2


@pytest.mark.parametrize("how", ["retired", "killed"])
def test_a_worker_that_leaves_takes_no_draw_with_it(how):
    # the actors holding the chunks go with their worker, whether it leaves
    # in order (the cluster scaled down) or is killed; the chunks are
    # recomputed elsewhere, new actors made, the old ones released, and the
    # results are the same.
    distributed = pytest.importorskip("distributed")
    X = two_blobs(768, 2)
    model = make_model("full", 2, len(X))
    with cycle_collector_off():
        with (
            distributed.LocalCluster(
                n_workers=3,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
            ) as cluster,
            distributed.Client(cluster) as client,
        ):
            rows = DaskRows(da.from_array(X, chunks=(64, -1)), client, 64).bind(model)
            first = rows.prior_predictive()
            assert len(rows._chunk_holders()) == 3
            if how == "retired":
                cluster.scale(2)
                deadline = time.monotonic() + 60
                while len(client.nthreads()) > 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
            else:
                _, pid = next(iter(client.run(os.getpid).items()))
                os.kill(pid, signal.SIGKILL)
            assert_array_equal(rows.prior_predictive(), first)
            holders = rows._chunk_holders()
            assert len(holders) == 2 if how == "retired" else len(holders) >= 2
            rows.close()
            assert_no_actor_left(client)


# -- exactness with many blocks ------------------------------------------------------


@pytest.mark.parametrize("X, covariance_type", EXACT_CASES)
def test_subcluster_over_many_blocks_matches_the_exact_posterior(
    X, covariance_type, monkeypatch
):
    # blocks of 2 rows: every state is merged from several blocks' moments
    monkeypatch.setattr(chain_module, "ROW_BLOCK", 2)
    model = fit_tiny(X, covariance_type, "subcluster")
    assert_matches_posterior(model, X, covariance_type)


@pytest.mark.parametrize(
    "params", [p for p in MULTINOMIAL_SAMPLERS if p["sampler"] == "subcluster"]
)
def test_multinomial_subcluster_over_many_blocks_matches_the_exact_posterior(
    params, monkeypatch
):
    # blocks of 2 rows, as above
    monkeypatch.setattr(chain_module, "ROW_BLOCK", 2)
    assert_matches_exact_posterior(params)


# -- rows elsewhere, in process ------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_rows_in_chunks_draw_what_rows_in_process_draw(kind):
    run_pair(kind, two_blobs(), 50, 16, SerialClient())


def test_rows_in_chunks_identical_with_large_launches():
    # scans over more rows than PARALLEL_LAUNCH_ROWS run threaded on each chunk
    X = two_blobs(6000, 3, seed=2)
    run_pair("diag", X, 1500, 512, SerialClient(), n_sweeps=6)


@pytest.mark.parametrize("sample", [100, 4096])
def test_sequential_start_is_the_same_wherever_the_rows_are(sample, monkeypatch):
    # a sample of 100 of the 300 rows (their clusters, then every row labelled
    # given them), or all of them
    monkeypatch.setattr(chain_module, "SEQUENTIAL_SAMPLE", sample)
    run_pair(
        "full", two_blobs(), 50, 16, SerialClient(), n_sweeps=5, sequential_init=True
    )


def two_topics(n=600, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack(
        [
            rng.multinomial(30, [0.6, 0.1, 0.1, 0.1, 0.1], size=n // 2),
            rng.multinomial(20, [0.1, 0.1, 0.1, 0.1, 0.6], size=n - n // 2),
        ]
    )


# a short sub-cluster fit of two chains, for the comparisons of draws
SHORT_FIT = dict(
    sampler="subcluster",
    n_split_merge=2,
    n_iter=6,
    burn_in=3,
    thin=1,
    n_chains=2,
    random_state=0,
)


def csr_with_duplicates(block):
    """``block``'s counts as a valid CSR matrix that lists each entry twice (two
    parts of it), as scipy allows before ``sum_duplicates``."""
    coo = sparse.coo_matrix(np.asarray(block))
    order = np.lexsort((coo.col, coo.row))
    rows, columns, values = coo.row[order], coo.col[order], coo.data[order]
    half = values // 2
    per_row = np.bincount(rows, minlength=block.shape[0]) * 2
    return sparse.csr_matrix(
        (
            np.column_stack([half, values - half]).ravel(),
            np.repeat(columns, 2),
            np.concatenate([[0], np.cumsum(per_row)]),
        ),
        shape=block.shape,
    )


@pytest.mark.parametrize("chunk", [np.asarray, sparse.csr_matrix, csr_with_duplicates])
def test_multinomial_fit_is_the_same_wherever_the_counts_are(chunk, monkeypatch):
    # dense or scipy.sparse chunks (canonical or with repeated entries); the
    # sequential start from a sample included
    monkeypatch.setattr(chain_module, "ROW_BLOCK", 64)
    monkeypatch.setattr(chain_module, "SEQUENTIAL_SAMPLE", 200)
    monkeypatch.setattr(_collapsed, "active_client", SerialClient)
    X = two_topics()
    here = DPMultinomialClustering(**SHORT_FIT).fit(X)
    there = DPMultinomialClustering(**SHORT_FIT).fit(
        da.from_array(X, chunks=(150, 5)).map_blocks(chunk)
    )
    assert_array_equal(here.label_samples_, there.label_samples_)
    assert_array_equal(here.trace_["log_joint"], there.trace_["log_joint"])
    assert_array_equal(here.feature_probs_, there.feature_probs_)
    assert here.n_clusters_ >= 2


def test_dask_counts_are_checked_as_in_process_counts(monkeypatch):
    # totals that wrap int64, and a CSR chunk with a column beyond its shape
    # (which SciPy builds unchecked), are refused before the chain reads them
    monkeypatch.setattr(_collapsed, "active_client", SerialClient)
    wrapping = da.from_array(np.array([[2**62, 2**62]] * 4), chunks=(2, 2))
    for chunks in (wrapping, wrapping.map_blocks(sparse.csr_matrix, dtype=np.int64)):
        with pytest.raises(ValueError, match=r"X's counts sum to 3.689e\+19"):
            DPMultinomialClustering(**SHORT_FIT).fit(chunks)

    def malformed(block):
        return sparse.csr_matrix(
            (np.ones(2), np.array([0, 7]), np.array([0, 1, 2])), shape=block.shape
        )

    counts = da.ones((4, 3), chunks=(2, 3)).map_blocks(malformed, dtype=np.float64)
    with pytest.raises(ValueError, match="malformed CSR sparse matrix"):
        DPMultinomialClustering(**SHORT_FIT).fit(counts)


def wide_topics(n=600, n_words=400, seed=0):
    """Two topics of documents of 2, 8 or 60 words over ``n_words`` words (each
    topic's own half): rows of a few counts of unequal number, in columns far
    apart."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n, n_words), dtype=np.int64)
    half = n_words // 2
    for row, length in enumerate(rng.choice([2, 8, 60], size=n)):
        words = rng.integers(0, half, size=length) + (half if row % 2 else 0)
        np.add.at(X[row], words, 1)
    return X


@pytest.mark.parametrize("chunk", [np.asarray, csr_with_duplicates])
def test_counts_travel_sparse(chunk):
    # read from the bound families, a row of counts brings its stored counts
    # (repeated entries summed), whether its chunk is dense or sparse
    X = wide_topics(60)
    model = make_model("counts", X.shape[1], len(X))
    rows = DaskRows(
        da.from_array(X, chunks=(16, -1)).map_blocks(chunk), SerialClient(), 8
    ).bind(model)
    for wanted in ([0, 3, 17, 40, 59], [5], [16, 17, 18], np.arange(60)):
        read = rows.rows(np.array(wanted))
        assert sparse.issparse(read) and read.format == "csr"
        assert read.has_canonical_format
        assert_array_equal(read.toarray(), X[wanted])
        assert_array_equal(np.diff(read.indptr), np.count_nonzero(X[wanted], axis=1))
    assert_array_equal(rows.row_values(), np.count_nonzero(X, axis=1))
    # vectors travel dense, n_features values a row
    vectors = DaskRows(da.from_array(two_blobs(40, 3), chunks=(16, -1)),
                       SerialClient(), 8).bind(make_model("diag", 3, 40))
    assert isinstance(vectors.rows([0, 20, 39]), np.ndarray)
    assert_array_equal(vectors.row_values(), np.full(40, 3))


def test_samples_of_counts_are_read_ahead_by_their_stored_counts(monkeypatch):
    # room for 2,000 values a read. The samples of about 40 rows of 400 words
    # would take 16,000 as dense rows; of 2 to 60 stored counts a row (about
    # 900 values a sample), some fit: their first scans run here, on rows read
    # sparse, the others' on the workers, the samples of no read hold more than
    # 2,000 values as read, and the draws are those of the rows in process
    monkeypatch.setattr(chain_module, "LAUNCH_PREFETCH_VALUES", 2000)
    X = wide_topics()
    local, chain, rows = chain_pair(
        "counts", X, 64, 64, SerialClient(), n_split_merge=5, alpha_prior=None,
        launch_sample_rows=40.0,
    )
    read = []
    fetch = rows.rows
    rows.rows = lambda indices: read.append(fetch(indices)) or read[-1]
    scans = _count_calls(rows, "scan", lambda *args: args[3])   # the purpose
    # what the workers send back: the word counts summed (SplitMoments)
    sent = []
    for name, moments in (("label_step", 1), ("scan", 2), ("row_partials", None)):
        method = getattr(rows, name)

        def recording(*args, _method=method, _moments=moments):
            out = _method(*args)
            sent.append(out if _moments is None else out[_moments])
            return out

        setattr(rows, name, recording)
    chain.sweep(30)
    # (an empty table: a merge's last scan, which sends no moments)
    sent = [m for m in sent if not (isinstance(m, np.ndarray) and m.size == 0)]
    assert len(sent) >= 30
    assert all(isinstance(m, chain_module.SplitMoments) for m in sent)
    assert 1000 < chain._most_read_ahead <= 2000
    assert read and all(sparse.issparse(r) for r in read)
    assert_some_first_scans_ran_here(local, chain, scans, 30)


def test_sequential_start_from_a_sample_finds_the_clusters(monkeypatch):
    # 6 separated clusters, 3000 rows: the clusters of a 300-row sample label
    # every row right (measured: the same ARI as a pass over all rows, or better)
    rng = np.random.default_rng(3)
    centres = np.vstack([30.0 * np.eye(3), -30.0 * np.eye(3)])
    y = rng.integers(6, size=3000)
    X = centres[y] + rng.normal(size=(3000, 3))
    monkeypatch.setattr(chain_module, "SEQUENTIAL_SAMPLE", 300)
    for seed in range(4):
        model = DPGaussianClustering(
            covariance_type="diag",
            sampler="subcluster",
            n_iter=1,
            burn_in=0,
            thin=1,
            n_chains=1,
            random_state=seed,
        ).fit(X)
        assert adjusted_rand_score(y, model.labels_) > 0.99, seed


# -- the estimator on a LocalCluster ----------------------------------------------


def record_rebuilds(estimator, monkeypatch):
    """Make ``estimator``'s fits record, at the point estimate, every kept draw
    whole (its first large parameter: the Gaussian's predictive factors, the
    multinomial's counts) and what a trimmed one was rebuilt from (None for a
    draw kept whole): ``[(source, parameter), ...]`` over the fits in turn."""
    records = []
    summarise = estimator._summarise

    def recording(self, *args):
        source = self._rebuild_source()
        rows = source[1]  # (family, rows)
        for d, parameters in enumerate(self._draws):
            whole = self._draw_is_whole(parameters)
            large = 2 if estimator is DPGaussianClustering else 0
            parameter = (parameters if whole else self._rebuilt_draw(d, source))[large]
            records.append((None if whole else type(rows).__name__, parameter))
        return summarise(self, *args)

    monkeypatch.setattr(estimator, "_summarise", recording)
    return records


@pytest.mark.parametrize("covariance_type", ["full", "spherical"])
def test_dask_fit_draws_what_an_in_process_fit_draws(
    covariance_type, dask_client, monkeypatch
):
    # 2 worker processes, 4 chunks of whole blocks; the default priors and the
    # sequential start (from a sample) included; two chains side by side
    monkeypatch.setattr(chain_module, "ROW_BLOCK", 64)
    monkeypatch.setattr(chain_module, "SEQUENTIAL_SAMPLE", 200)
    X = two_blobs(600, 3, seed=4)
    # 27 draws a chain: "full" keeps 10 a chain whole
    params = dict(SHORT_FIT, covariance_type=covariance_type, n_jobs=2, n_iter=30)
    rebuilt_there = record_rebuilds(DPGaussianClustering, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        here = DPGaussianClustering(**params).fit(X)
        there = DPGaussianClustering(**params).fit(da.from_array(X, chunks=(150, 3)))
    assert_array_equal(here.label_samples_, there.label_samples_)
    assert_array_equal(here.trace_["log_joint"], there.trace_["log_joint"])
    assert_array_equal(here.means_, there.means_)
    assert_array_equal(here.mean_prior_, there.mean_prior_)
    assert_array_equal(here.covariance_prior_, there.covariance_prior_)
    assert_array_equal(here.predict(X), there.predict(X))
    # "full": the draws kept whole (the predictive's) are the same ones, though
    # a Dask fit trims them only after its point estimate
    assert here._predictive_draws() == there._predictive_draws()
    assert len(there._predictive_draws()) == (20 if covariance_type == "full" else 54)
    assert_array_equal(here.score_samples(X), there.score_samples(X))
    assert_array_equal(here._best_parameters[2], there._best_parameters[2])
    # the Dask fit trimmed its draws as they came, and rebuilt them on the
    # workers from its rows' block moments: the in-process fit's draws, whole
    assert len(rebuilt_there) == 2 * 54
    for d, (source, factors) in enumerate(rebuilt_there[54:]):
        assert source == ("DaskRows" if d not in here._predictive_draws() else None)
        assert_array_equal(factors, here._whole_draw(d)[2])


def test_dask_multinomial_fit_draws_what_an_in_process_fit_draws(
    dask_client, monkeypatch
):
    monkeypatch.setattr(chain_module, "ROW_BLOCK", 64)
    monkeypatch.setattr(chain_module, "SEQUENTIAL_SAMPLE", 200)
    X = two_topics(seed=1)
    # 27 draws a chain, of which 10 keep their counts
    params = dict(SHORT_FIT, n_jobs=2, n_iter=30)
    rebuilt_there = record_rebuilds(DPMultinomialClustering, monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        here = DPMultinomialClustering(**params).fit(X)
        there = DPMultinomialClustering(**params).fit(da.from_array(X, chunks=(150, 5)))
    assert_array_equal(here.label_samples_, there.label_samples_)
    assert_array_equal(here.trace_["log_joint"], there.trace_["log_joint"])
    assert_array_equal(here.predict(X), there.predict(X))
    # the draws that keep their counts (the predictive's) are the same ones,
    # the others rebuilt alike (the Dask fit's from rows fetched from the workers)
    assert here._predictive_draws() == there._predictive_draws()
    assert len(here._predictive_draws()) == 20 < len(here._draws) == 54
    assert_array_equal(here.score_samples(X), there.score_samples(X))
    for d in [1, len(here._draws) - 2]:
        assert_array_equal(
            here._whole_draw(d)[0].toarray(), there._whole_draw(d)[0].toarray()
        )
    # rebuilt on the workers during the Dask fit, as in process
    assert len(rebuilt_there) == 2 * 54
    for d, (source, counts) in enumerate(rebuilt_there[54:]):
        assert source == ("DaskRows" if d not in here._predictive_draws() else None)
        assert_array_equal(counts.toarray(), here._whole_draw(d)[0].toarray())


def test_dask_fit_refuses_what_it_cannot_do(dask_client):
    X = da.from_array(two_blobs(), chunks=(100, 2))
    with pytest.raises(ValueError, match="sampler='subcluster'"):
        DPGaussianClustering().fit(X)
    with pytest.raises(ValueError, match="sample_weight"):
        DPGaussianClustering(sampler="subcluster").fit(X, sample_weight=np.ones(300))
    bad = two_blobs()
    bad[123, 1] = np.nan
    with pytest.raises(ValueError, match="Row 123 of X"):
        DPGaussianClustering(sampler="subcluster").fit(da.from_array(bad, chunks=50))
    counts = two_topics(100).astype(float)
    counts[57, 3] = 1.5
    with pytest.raises(ValueError, match="row 57, column 3 holds 1.5"):
        DPMultinomialClustering(sampler="subcluster").fit(
            da.from_array(counts, chunks=20)
        )
    counts[57, 3] = -2
    with pytest.raises(ValueError, match="Negative values in data: .* row 57"):
        DPMultinomialClustering(sampler="subcluster").fit(
            da.from_array(counts, chunks=20)
        )
    counts[57, 3] = np.inf
    with pytest.raises(ValueError, match="row 57, column 3 holds inf"):
        DPMultinomialClustering(sampler="subcluster").fit(
            da.from_array(counts, chunks=20)
        )
    with pytest.raises(ValueError, match="sampler='subcluster'"):
        DPMultinomialClustering().fit(da.from_array(two_topics(100), chunks=20))


def test_rows_of_a_dask_array_are_checked_before_any_work():
    client = SerialClient()
    with pytest.raises(ValueError, match="2-d"):
        DaskRows(da.ones(10, chunks=5), client)
    with pytest.raises(TypeError, match="real numbers"):
        DaskRows(da.from_array(np.array([["a", "b"]] * 4), chunks=2), client)
    unknown = da.ones((10, 2), chunks=(5, 2))
    unknown = unknown[unknown[:, 0] > 0]  # row count unknown until computed
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        DaskRows(unknown, client)
    # columns in several chunks are joined; rows cut at block boundaries
    rows = DaskRows(da.ones((100, 4), chunks=(30, 2)), client, row_block=16)
    assert rows.shape == (100, 4)
    assert rows.offsets.tolist() == [0, 32, 64, 96]
