# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The rows of a chain on Dask workers: ``sampler="subcluster"`` past one machine.

A :class:`DaskRows` keeps the rows of a ``dask.array.Array`` where they are: each
chunk, cut at multiples of the chain's row block (``ROW_BLOCK`` rows), is bound to
the model on the worker that holds it, once. A sweep of the sub-cluster chain
(``_subcluster_chain``) then sends each chunk the parameters and gets back its
rows' labels with the moments of their clusters, block by block; a split or merge
proposal sends the rows of the clusters concerned and gets back their
allocations; the rows the proposals start from (their anchors, with the sample
of rows each launch's first scan weighs, which that scan then weighs on the
client) and those the singleton moves read are read in one go, once a sweep and
again after each accepted move; a pair scan reads its two clusters' rows (at
most ``_subcluster_chain.PAIR_SCAN_ROWS``) that are not read yet. The global steps
(parameters, weights, the Metropolis-Hastings decisions, alpha) run on the
client, in the chain.

The blocks, not the chunks, fix the order of every floating-point sum, and the
chunks hold whole blocks, so the draws equal, to the last bit, those of the same
chain with the rows in process: they depend on ``random_state`` and the data, not
on the chunks, the workers or the threads.

What travels per sweep: the labels (8 bytes a row, both ways), the parameters
(K x the family's parameter width) and, back, the moments of each block's
clusters (blocks x K x (1 + d + d^2) doubles for ``full``). For counts over V
features, blocks x K x 5 doubles, and from each chunk its clusters' word counts
summed over its blocks (K x V, sparse where most are 0): integers, exact in any
order (``SplitMoments``). Each split or merge proposal sends the indices of
its rows and gets one byte and one double a row back, per launch scan after the
first (the first weighs a sample of about 1,000 rows, read ahead with the
anchors, up to ``_subcluster_chain.LAUNCH_PREFETCH_VALUES`` values a read).
Rows read to the client travel as given, except counts, which travel sparse
(CSR), whatever their chunks: a document brings its distinct words' counts,
not the vocabulary's width.

A sweep is a few round trips (the label step, the reads, and each launched
proposal's last scan), so what a round trip costs decides how a chain scales.
Dask's scheduler spends milliseconds on each task (about 5 ms on a 2-core
machine), so a task per chunk would make an array of many chunks pay for each
of them in every round trip, whatever the work. Instead:

* the chain's operations on the bound chunks, the reading of rows included,
  call one actor per worker (``ChunkHolder``, Dask's actors), which holds that
  worker's families and runs the operation on them, on as many threads as the
  worker has: no task at all;
* the summaries of the chunks before they are bound (validation, the priors'
  data summaries), and the reading of rows before then, run one task per
  worker thread that holds chunks (its "lane", ``worker_lanes``), on those
  chunks in turn.

An actor goes with its worker: a call that fails because the worker left makes
new actors, where Dask has recomputed or moved the families, and runs again
(once), so the draws do not change. While a fit runs, its actors keep their
workers from being retired gracefully (``retire_workers``, an adaptive
cluster's scaling down); the fit releases them when it ends (``close``).
"""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral

import numpy as np
from scipy import sparse

from . import _subcluster_chain as chain_module
from ._validation import check_sparse_structure

# Seconds between checks, while an actor call is awaited, that its worker is
# still there (a check is one question to the scheduler).
CALL_CHECK_SECONDS = 1.0
# Seconds an actor call that lost its connection waits for the scheduler to
# remove the worker, before its error is taken for the operation's own.
LOSS_WAIT_SECONDS = 30.0


def is_dask_array(X):
    """Whether X is a ``dask.array.Array`` (without importing dask otherwise)."""
    module = type(X).__module__
    if not module.startswith("dask"):
        return False
    import dask.array as da

    return isinstance(X, da.Array)


def active_client():
    """The active ``dask.distributed.Client``; a ValueError saying how to start one."""
    try:
        from distributed import default_client
    except ImportError:
        raise ImportError(
            "Fitting a dask array needs dask.distributed: pip install "
            "'rankmix[distributed]'."
        ) from None
    try:
        return default_client()
    except ValueError:
        raise ValueError(
            "X is a dask array, but no dask.distributed Client is active: start "
            "one first (client = dask.distributed.Client(...)), or pass a NumPy "
            "array."
        ) from None


def aligned_chunks(chunks, n_rows, row_block):
    """Row chunk sizes near ``chunks`` whose boundaries are multiples of the block.

    Each boundary moves to the nearest multiple (the last one is ``n_rows``), and
    chunks that would be empty disappear.
    """
    bounds = np.cumsum(chunks)[:-1]
    moved = np.unique(np.rint(bounds / row_block).astype(np.int64) * row_block)
    moved = moved[(moved > 0) & (moved < n_rows)]
    edges = np.concatenate([[0], moved, [n_rows]])
    return tuple(int(size) for size in np.diff(edges) if size > 0)


def block_moments(X, row_block):
    """(n, mean, M2) of each block of ``row_block`` rows of the array X, in order.

    M2 is the scatter about the block's mean, X_c^T X_c. NumPy on each block alone,
    so the values depend on the rows of the block only.
    """
    out = []
    for start in range(0, X.shape[0], row_block):
        block = np.ascontiguousarray(X[start : start + row_block], dtype=np.float64)
        mean = block.sum(axis=0) / block.shape[0]
        centred = block - mean
        out.append((block.shape[0], mean, centred.T @ centred))
    return out


def merge_moments(blocks):
    """(n, mean, M2) of the union of blocks, merged in their order (Chan et al.)."""
    n, mean, M2 = 0, None, None
    for n_b, mean_b, M2_b in blocks:
        if n == 0:
            n, mean, M2 = n_b, mean_b.copy(), M2_b.copy()
            continue
        total = n + n_b
        delta = mean_b - mean
        M2 = M2 + M2_b + np.outer(delta, delta) * (n * n_b / total)
        mean = mean + delta * (n_b / total)
        n = total
    return n, mean, M2


def worker_lanes(homes, threads):
    """The chunks in lanes: those of each worker dealt among at most its threads.

    Parameters
    ----------
    homes : sequence
        The worker holding each chunk (None where unknown).
    threads : dict
        The number of threads of each worker.

    Returns
    -------
    lanes : list of (worker, list of int)
        Each lane's worker and its chunks, in increasing order; every chunk is
        in one lane. A worker of t threads and c chunks has min(t, c) lanes, so
        that its threads run one task each.
    """
    by_worker = {}
    for chunk, worker in enumerate(homes):
        by_worker.setdefault(worker, []).append(chunk)
    lanes = []
    for worker, chunks in by_worker.items():
        n_lanes = max(1, min(len(chunks), threads.get(worker, 1)))
        lanes.extend((worker, chunks[k::n_lanes]) for k in range(n_lanes))
    return lanes


class _HolderGone(Exception):
    """An actor call that will not be answered: its worker left."""


def _on_chunks(function, values, arguments):
    """``function(value, *args)`` for each chunk's value and arguments, in turn:
    the task of one lane."""
    return [function(value, *args) for value, args in zip(values, arguments)]


class ChunkHolder:
    """A Dask actor on one worker: the chunks bound there, and the chain's
    operations on them.

    A call reaches it from the client without a task: no key, no scheduling, no
    task state on the scheduler, which a round trip of tasks pays for on every
    sweep. Dask runs every actor call of a worker on one thread of its own, in
    turn (two chains sharing the rows queue there); a call's chunks run on a
    pool of as many threads as the worker has.

    Parameters
    ----------
    chunks : list of int
        The indices of the chunks it holds.
    families : list
        Their families (``model.family(rows)``), in the same order.
    n_threads : int
        The worker's threads.
    """

    def __init__(self, chunks, families, n_threads):
        self.families = dict(zip(chunks, families))
        self.n_threads = max(1, min(int(n_threads), len(chunks)))
        self._pool = None

    def run(self, function, chunks, arguments):
        """``function(family, *args)`` for each chunk of ``chunks`` and its
        arguments; the results in that order."""
        families = [self.families[c] for c in chunks]
        if self.n_threads == 1 or len(families) < 2:
            return _on_chunks(function, families, arguments)
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_threads)
        calls = self._pool.map(
            lambda family, args: function(family, *args), families, arguments
        )
        return list(calls)


def _chunk_max_abs(block):
    return float(np.max(np.abs(block))) if block.size else 0.0


def _first_bad_row(block):
    """The index of the first row holding NaN or inf, or -1."""
    bad = ~np.isfinite(block).all(axis=1)
    return int(np.argmax(bad)) if bad.any() else -1


def _not_counts(values):
    """Where ``values`` are not non-negative integer counts (NaN and inf included)."""
    with np.errstate(invalid="ignore"):
        return ~(np.isfinite(values) & (values >= 0) & (values == np.round(values)))


def _first_bad_count(block):
    """(row, column, value) of the first entry, in row order, that is not a
    non-negative integer count, or None."""
    if hasattr(block, "tocsr"):
        check_sparse_structure(block)
        block = block.tocsr()
        bad = _not_counts(block.data)
        if not bad.any():
            return None
        entry = int(np.argmax(bad))
        row = int(np.searchsorted(block.indptr, entry, side="right")) - 1
        return row, int(block.indices[entry]), block.data[entry].item()
    block = np.asarray(block)
    bad = _not_counts(block)
    if not bad.any():
        return None
    row, column = (int(k) for k in np.argwhere(bad)[0])
    return row, column, block[row, column].item()


def float_sums(block, axis):
    """The sums of a dense or sparse block of counts along ``axis``, as float64:
    exact below 2**53, and checked against the model's bound before any cast to
    int64 (which would wrap a total past 2**63). SciPy sums a sparse matrix in
    its own dtype, however ``dtype`` is set, so its entries are cast first."""
    if hasattr(block, "tocsr"):
        block = block.astype(np.float64)
    return np.asarray(block.sum(axis=axis, dtype=np.float64)).ravel()


def _count_totals(block):
    """(column totals, row totals) of a block of valid counts (``float_sums``)."""
    return float_sums(block, 0), float_sums(block, 1)


def _scaled(block, exponent):
    block = np.ascontiguousarray(block, dtype=np.float64)
    return np.ldexp(block, -exponent) if exponent else block


class DaskRows:
    """The rows of a dask array on the workers, and the chain's four operations.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        The rows, chunked along the rows only (the columns are made one chunk).
    client : distributed.Client
        The active client.
    row_block : int, default=None
        Rows per block; None takes ``_subcluster_chain.ROW_BLOCK``.
    """

    def __init__(self, X, client, row_block=None):
        self.row_block = int(chain_module.ROW_BLOCK if row_block is None else row_block)
        if X.ndim != 2:
            raise ValueError(
                f"X must be a 2-d dask array (n_samples, n_features), got "
                f"{X.ndim} dimensions."
            )
        if X.dtype.kind not in "biuf":
            raise TypeError(f"X must hold real numbers, got a dask array of {X.dtype}.")
        n_rows = X.shape[0]
        if not isinstance(n_rows, Integral) or np.isnan(n_rows):
            raise ValueError(
                "X has chunks of unknown size: call X.compute_chunk_sizes() first."
            )
        if n_rows < 1 or X.shape[1] < 1:
            raise ValueError(
                f"Found array with shape {X.shape}: X needs at least one row and "
                "one column."
            )
        self.client = client
        self.n_rows = int(n_rows)
        self.n_features = int(X.shape[1])
        sizes = aligned_chunks(X.chunks[0], self.n_rows, self.row_block)
        X = X.rechunk({0: sizes, 1: -1})
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.intp)
        self.sizes = np.asarray(sizes, dtype=np.intp)
        # the chunks, persisted: they stay on the workers from here on
        self._chunks = client.compute(list(X.to_delayed()[:, 0]))
        self._families = None
        self._row_values = None
        self._lanes = None
        self._holders = None
        self._holders_lock = threading.Lock()
        self._closed = False

    @property
    def shape(self):
        return (self.n_rows, self.n_features)

    # -- the data's summaries, for validation and the data-dependent priors -------

    def _placement(self):
        """The lanes (``worker_lanes``) of the chunks where they are now; found
        once, when first needed (the chunks computed, or bound if they are)."""
        if self._lanes is None:
            futures = self._chunks if self._families is None else self._families
            self._lanes = worker_lanes(self._homes(futures), self.client.nthreads())
        return self._lanes

    def _homes(self, futures):
        """The worker holding each future's value, once they are computed."""
        from distributed import futures_of, wait

        if futures_of(futures):
            wait(futures)
        who_has = self.client.who_has(futures)
        return [next(iter(who_has.get(f.key, ())), None) for f in futures]

    def _on_lanes(self, function, values, arguments, chunks=None):
        """``function(values[c], *arguments(c))`` for the chunks ``chunks`` (all by
        default), one task per lane, on the lane's worker; the results in the
        order of ``chunks``.

        A worker that left is no error: its lanes' tasks run where Dask puts
        them (``allow_other_workers``), their chunks recomputed or moved.
        """
        chunks = range(len(values)) if chunks is None else chunks
        wanted = set(chunks)
        tasks, lanes = [], []
        for worker, lane in self._placement():
            mine = [c for c in lane if c in wanted]
            if not mine:
                continue
            tasks.append(
                self.client.submit(
                    _on_chunks,
                    function,
                    [values[c] for c in mine],
                    [arguments(c) for c in mine],
                    workers=None if worker is None else [worker],
                    allow_other_workers=True,
                    pure=False,
                )
            )
            lanes.append(mine)
        results = {}
        for mine, parts in zip(lanes, self.client.gather(tasks)):
            results.update(zip(mine, parts))
        return [results[c] for c in chunks]

    def _map(self, function, *args):
        """``function(chunk, *args)`` for every chunk, on its worker; the results."""
        return self._on_lanes(function, self._chunks, lambda c: args)

    def first_bad_row(self):
        """The first row holding NaN or inf, or None."""
        for offset, row in zip(self.offsets, self._map(_first_bad_row)):
            if row >= 0:
                return int(offset + row)
        return None

    def first_bad_count(self):
        """(row, column, value) of the first entry that is not a non-negative
        integer count, or None."""
        for offset, bad in zip(self.offsets, self._map(_first_bad_count)):
            if bad is not None:
                return (int(offset + bad[0]), *bad[1:])
        return None

    def count_totals(self):
        """(column totals, row totals) of valid counts, as float64 (exact below
        2**53)."""
        parts = self._map(_count_totals)
        return (
            np.sum([columns for columns, _ in parts], axis=0, dtype=np.float64),
            np.concatenate([rows for _, rows in parts]),
        )

    def max_abs(self):
        return max(self._map(_chunk_max_abs), default=0.0)

    def rescale(self, exponent):
        """Divide the rows by 2**exponent, exactly, where they are (0: float64 only)."""
        self._chunks = [
            self.client.submit(_scaled, chunk, exponent, pure=False)
            for chunk in self._chunks
        ]

    def moments(self):
        """(n, mean, M2) of all rows, merged block by block in row order."""
        blocks = [b for part in self._map(block_moments, self.row_block) for b in part]
        return merge_moments(blocks)

    # -- the chain's operations -----------------------------------------------------

    def bind(self, model):
        """Bind ``model`` to each chunk, on its worker (``model.family(rows)``)."""
        self._families = [
            self.client.submit(model.family, chunk, pure=False)
            for chunk in self._chunks
        ]
        self._row_values = None   # (the family decides how rows travel)
        self._drop_holders(self._holders)
        return self

    def _chunk_holders(self):
        """One ``ChunkHolder`` actor per worker holding bound chunks, each with
        the chunks it holds: [(actor future, actor, chunks)], made when first
        needed (a lock, since two chains may share the rows)."""
        with self._holders_lock:
            if self._closed:
                raise RuntimeError(
                    "These rows on Dask workers were closed: the fit that held "
                    "them ended."
                )
            if self._holders is None:
                threads = self.client.nthreads()
                holders = []
                for worker, chunks in worker_lanes(self._homes(self._families), {}):
                    future = self.client.submit(
                        ChunkHolder,
                        chunks,
                        [self._families[c] for c in chunks],
                        threads.get(worker, 1),
                        actor=True,
                        workers=None if worker is None else [worker],
                        allow_other_workers=True,
                        pure=False,
                    )
                    holders.append((future, future.result(), chunks))
                self._holders = holders
            return self._holders

    def _drop_holders(self, holders):
        """Forget ``holders`` (if they are the current ones) and release them.

        Each call of a Dask actor leaves closures in reference cycles that hold
        its proxy, and the proxy holds a future of its own (``_future``, Dask's
        private attribute): unless both futures are released, the actors and
        the families they hold stay on the workers (and keep them from
        retiring) until Python's cycle collector runs.
        """
        with self._holders_lock:
            if self._holders is holders:
                self._holders = None
        for future, actor, _ in holders or ():
            future.release()
            proxy_future = getattr(actor, "_future", None)
            if proxy_future is not None:
                proxy_future.release()

    def close(self):
        """Release the actors, now; any later operation on the bound chunks
        raises (a chain still running after its fit ended stops there)."""
        with self._holders_lock:
            self._closed = True
        self._drop_holders(self._holders)

    def _holders_lost(self, holders):
        """Whether a worker holding one of ``holders`` left (the actors then go
        with it; their chunks' families are recomputed or moved by Dask); False
        when the scheduler cannot say."""
        futures = [future for future, _, _ in holders]
        if any(future.status != "finished" for future in futures):
            return True
        try:
            who_has = self.client.who_has(futures)
        except Exception:
            return False
        return any(not who_has.get(future.key) for future in futures)

    def _answer(self, call, holders):
        """The result of an actor call. It is awaited in slices, checking the
        holders in between: Dask never answers a call whose actor went without
        dropping the connection (a worker restarted at the same address)."""
        while True:
            try:
                return call.result(timeout=CALL_CHECK_SECONDS)
            except TimeoutError:
                if self._holders_lost(holders):
                    raise _HolderGone() from None

    def _lost(self, error, holders):
        """Whether the ``error`` of an actor call came from a worker that left.

        A dropped connection (``OSError``) or Dask's "Worker holding Actor was
        lost" may come before the scheduler has removed the worker: those wait
        up to ``LOSS_WAIT_SECONDS`` for it to. Any other error is the
        operation's own, unless the scheduler already knows of a loss.
        """
        patient = isinstance(error, OSError) or (
            isinstance(error, RuntimeError) and "Actor was lost" in str(error)
        )
        deadline = time.monotonic() + (LOSS_WAIT_SECONDS if patient else 0.0)
        while not self._closed:
            if self._holders_lost(holders):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return False

    def _submit(self, function, *args_per_chunk, chunks=None):
        """``function(family, offset, *args)`` on chosen chunks; results in order.

        ``args_per_chunk[i]`` is a callable of the chunk's index giving its
        arguments, or a value shared by every chunk. A worker that left during
        the call takes its actor: new actors are made where Dask has recomputed
        or moved the chunks, and the call runs again, once.
        """
        if self._families is None:
            raise RuntimeError("bind a model to the rows first")
        chunks = range(len(self._families)) if chunks is None else chunks
        wanted = set(chunks)

        def arguments(c):
            return (
                int(self.offsets[c]),
                *[a(c) if callable(a) else a for a in args_per_chunk],
            )

        for attempt in range(2):
            holders = self._chunk_holders()
            try:
                calls = []
                for _, actor, held in holders:
                    mine = [c for c in held if c in wanted]
                    if mine:
                        args = [arguments(c) for c in mine]
                        calls.append((mine, actor.run(function, mine, args)))
                results = {}
                for mine, call in calls:
                    results.update(zip(mine, self._answer(call, holders)))
                return [results[c] for c in chunks]
            except _HolderGone:
                if attempt:
                    raise RuntimeError(
                        "Workers holding the rows left twice during one step of "
                        "the chain; the fit cannot go on."
                    ) from None
            except Exception as error:
                if attempt or not self._lost(error, holders):
                    raise
            self._drop_holders(holders)

    def _slice(self, array):
        return lambda c: array[self.offsets[c] : self.offsets[c] + self.sizes[c]]

    def prior_predictive(self):
        parts = self._submit(_prior_predictive)
        return np.concatenate(parts) if parts else np.empty(0)

    def label_step(self, labels, *args):
        """``rows_label_step`` on every chunk, with its part of ``labels``: the new
        labels, and the block moments of the rows by their new clusters."""
        parts = self._submit(_label_step, self._slice(labels), *args)
        return (
            np.concatenate([labels for labels, _ in parts]),
            chain_module.joined_moments([moments for _, moments in parts]),
        )

    def group_partials(self, labels, *args):
        """``rows_group_moments`` on every chunk: block moments by cluster."""
        return chain_module.joined_moments(
            self._submit(_group_moments, self._slice(labels), *args)
        )

    def cluster_states(self, family, labels, n_clusters):
        """The states under ``family`` of the clusters 0..n_clusters-1 of
        ``labels`` (one per row), from the block moments of their rows, merged
        in block order as the sub-cluster chain merges them."""
        partials = self.group_partials(
            labels, np.arange(n_clusters), n_clusters, self.row_block
        )
        return chain_module.states_from_partials(family, partials)

    def _chunk_of(self, rows):
        return np.searchsorted(self.offsets, rows, side="right") - 1

    def _split(self, rows, *also):
        """The chunks holding ``rows`` (increasing) or the rows ``also``, and each
        one's part of ``rows`` (start, stop)."""
        # where each chunk's rows begin in ``rows``: a search per chunk, not per
        # row (a proposal's rows are tens of thousands, the chunks few)
        edges = np.searchsorted(rows, np.append(self.offsets, self.n_rows))
        held = np.flatnonzero(np.diff(edges))
        chunks = np.union1d(held, self._chunk_of(np.asarray(also, dtype=np.intp)))
        chunks = [int(c) for c in chunks]
        return chunks, {c: (int(edges[c]), int(edges[c + 1])) for c in chunks}

    def row_partials(self, rows, groups, n_groups, row_block):
        """Block moments of ``rows`` (increasing) by ``groups``, from the chunks
        holding them: (n_blocks, n_groups, M)."""
        if len(rows) == 0:
            return np.empty((0, n_groups, 0))
        chunks, parts = self._split(rows)
        out = self._submit(
            _moments,
            lambda c: rows[parts[c][0] : parts[c][1]],
            lambda c: groups[parts[c][0] : parts[c][1]],
            n_groups,
            row_block,
            chunks=chunks,
        )
        return chain_module.joined_moments(out)

    def scan(
        self,
        rows,
        key,
        sweep,
        purpose,
        theta_a,
        theta_b,
        log_n_a,
        log_n_b,
        rate,
        evaluate,
        sides,
        i,
        j,
        moments,
        row_block,
    ):
        """A launch scan over ``rows`` on the chunks holding them or i or j."""
        chunks, parts = self._split(rows, i, j)
        out = self._submit(
            _scan,
            lambda c: rows[parts[c][0] : parts[c][1]],
            key,
            sweep,
            purpose,
            theta_a,
            theta_b,
            log_n_a,
            log_n_b,
            rate,
            evaluate,
            (lambda c: sides[parts[c][0] : parts[c][1]]) if evaluate else None,
            i,
            j,
            moments,
            row_block,
            chunks=chunks,
        )
        return (
            np.concatenate([proposed for proposed, _, _ in out]),
            np.concatenate([log_q for _, log_q, _ in out]),
            chain_module.joined_moments([moments for _, _, moments in out]),
        )

    def rows(self, indices):
        """The rows ``indices`` (increasing) as given (rescaled, not whitened), from
        their workers: (len(indices), n_features), an array, or a CSR matrix for
        counts bound to their family and for sparse chunks (counts travel
        sparse: a row of a few hundred words of a vocabulary of tens of
        thousands sends its few hundred counts); no rows, an empty array."""
        indices = np.asarray(indices, dtype=np.intp)
        if len(indices) == 0:
            return np.empty((0, self.n_features))
        chunks, parts = self._split(indices)

        def local(c):
            return indices[parts[c][0] : parts[c][1]] - self.offsets[c]

        if self._families is not None:  # bound: the actors hold the rows, no task
            return _stacked(self._submit(_family_rows, local, chunks=chunks))
        return _stacked(
            self._on_lanes(_rows, self._chunks, lambda c: (local(c),), chunks)
        )

    def row_values(self):
        """(n_rows,) how many values reading each row with ``rows`` brings (its
        stored counts if it travels sparse, else n_features), from the bound
        families; found on the workers once (one round trip)."""
        if self._row_values is None:
            self._row_values = np.concatenate(self._submit(_family_row_values))
        return self._row_values


def _prior_predictive(family, offset):
    return family.log_prior_predictive()


# The chain's operations on a chunk, their block moments as they travel
# (``split``: counts' summed over the chunk's blocks, sparse, ``SplitMoments``).


def _label_step(family, offset, *args):
    return chain_module.rows_label_step(family, offset, *args, split=True)


def _group_moments(family, offset, *args):
    return chain_module.rows_group_moments(family, offset, *args, split=True)


def _moments(family, offset, *args):
    return chain_module.rows_moments(family, offset, *args, split=True)


def _scan(family, offset, *args):
    return chain_module.rows_scan(family, offset, *args, split=True)


def _rows(block, indices):
    return _as_sent(block[indices])


def _family_rows(family, offset, indices):
    return _as_sent(family.rows(indices))


def _family_row_values(family, offset):
    rows = family.rows(np.arange(family.n_points))
    if hasattr(rows, "tocsr"):
        return np.diff(rows.tocsr().indptr).astype(np.intp)
    return np.full(family.n_points, rows.shape[1], dtype=np.intp)


def _as_sent(rows):
    """Rows as they travel: scipy.sparse as CSR, anything else as float64."""
    if hasattr(rows, "tocsr"):
        return rows.tocsr()
    return np.array(rows, dtype=np.float64)


def _stacked(parts):
    """Chunks' rows (``_as_sent``) as one: CSR if any part is sparse."""
    if any(hasattr(part, "tocsr") for part in parts):
        return sparse.vstack([sparse.csr_matrix(part) for part in parts], format="csr")
    return np.concatenate(parts)
