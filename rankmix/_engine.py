# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The MCMC engine shared by every DP mixture: chains, draws, traces, diagnostics.

The engine knows nothing of rankings or vectors. A model hands it a factory that
builds one compiled chain from a bit generator; a chain object offers

* ``sweep(n_sweeps=1)``: run full sweeps with the GIL released,
* ``n_clusters`` and ``log_joint``: the current number of clusters and log p(state, X),
* ``snapshot()``: ``(labels, *parameters)`` of the current state, labels numbered by
  first appearance.

A model whose draws are large (K x d x d factors) may pass ``trim_draw``, which the
engine applies to each snapshot as it is kept, so that the kept draws hold what is
read later and no more: ``trim_draw(parameters, whole)``, ``whole`` true for
``whole_per_chain`` draws of the run evenly spaced in each chain (all of them when
``whole_per_chain`` is None).

The engine runs ``n_chains`` chains through joblib threads, each on its own
``PCG64`` stream spawned from ``random_state`` before any parallel work, so the draws
depend on ``random_state`` and never on ``n_jobs`` or the backend. Threads are only
joblib's default here (``prefer="threads"``: the sweeps release the GIL and the chains
share the data): under ``joblib.parallel_config(backend=...)`` the chains run on that
backend, processes or a cluster (dask's), for which the chain factories and the
models they hold pickle.

A run may keep its chains (the estimators' ``warm_start``), and a later run continue
them: burn-in and thinning count sweeps from the chains' start, and
`extend_posterior` appends each chain's new draws to its old ones, so that the runs
together give the draws of one long run.
"""

import sys
import threading
import time
from dataclasses import dataclass
from functools import partial

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from joblib.parallel import get_active_backend

try:  # an optional progress bar for verbose=1
    from tqdm.auto import tqdm
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    tqdm = None

from ._consensus import _smallest_label_dtype, vi_consensus
from ._diagnostics import warn_if_chains_disagree
from ._rng import spawn_bit_generators
from ._subcluster_chain import openmp_threads
from ._validation import sized_by


@dataclass
class ChainResult:
    """Everything one chain returns: kept draws and per-sweep traces."""

    labels: np.ndarray  # (n_kept, N), smallest integer dtype; None: no draw kept
    parameters: list  # per kept draw, the snapshot's parameter tuple
    trace: dict  # name -> (n_iter,): "n_clusters", "log_joint" and any extras
    moves: dict  # "<move>_proposed"/"<move>_accepted" -> (n_iter,) per sweep
    chain: object  # the chain itself, when kept to be continued; else None


@dataclass
class Posterior:
    """The pooled output of all chains."""

    label_samples: np.ndarray  # (n_draws, N), chains stacked, smallest int dtype
    parameters: list  # per draw, as label_samples
    trace: dict  # name -> (n_chains, n_iter)
    moves: dict  # proposals and acceptances per sweep, (n_chains, n_iter) each
    chains: list  # the chains, to continue them (None entries when not kept)


def run_chains(
    make_chain,
    *,
    n_iter,
    burn_in,
    thin,
    n_chains,
    n_jobs,
    random_state,
    verbose=0,
    extra_traces=(),
    chains=None,
    sweeps_done=0,
    keep_chains=False,
    trim_draw=None,
    whole_per_chain=None,
):
    """Run the chains and pool their draws.

    Parameters
    ----------
    make_chain : callable
        ``make_chain(bit_generator)`` returns a fresh chain (see module docstring).
    n_iter, burn_in, thin : int
        Sweeps to run now, sweeps discarded at the start of every chain, and the
        keep interval.
    n_chains, n_jobs : int
        Number of chains and of joblib workers running them (threads unless a
        joblib.parallel_config says otherwise); ``n_jobs=None``: see
        `chains_at_once`.
    random_state : int, RandomState instance or None
        Fixes every chain's stream (unused when ``chains`` are continued).
    verbose : int
        0 is silent; 1 a progress bar (tqdm) or periodic lines; 2 a line a sweep.
    extra_traces : tuple of str
        Names of further chain attributes to record after every sweep (for
        example ``"alpha"`` when the model samples it).
    chains : list or None
        Chains to continue (``Posterior.chains`` of an earlier run, kept with
        ``keep_chains``) instead of starting fresh ones.
    sweeps_done : int
        Sweeps the ``chains`` have run: burn-in and thinning count sweeps from
        each chain's start, so that a run continued is the same as one run.
    keep_chains : bool
        Return the chain objects in ``Posterior.chains``. They must live in this
        process (the compiled chains do not pickle), so such chains, and chains
        continued, run in threads whatever joblib's backend.
    trim_draw : callable or None
        ``trim_draw(parameters, whole)`` gives the parameter tuple to keep of a
        snapshot: the whole draw when ``whole`` is true, less otherwise. It must
        pickle when the chains run in other processes. None keeps every snapshot
        as it is.
    whole_per_chain : int or None
        How many draws of this run each chain's ``trim_draw`` is told to keep
        whole, evenly spaced among its kept draws (see `whole_draw_indices`).
        None: all of them.

    Returns
    -------
    posterior : Posterior
        The draws and traces of this run only (see `extend_posterior`).
    """
    if chains is None:
        starts = [
            partial(make_chain, bit_generator)
            for bit_generator in spawn_bit_generators(random_state, n_chains)
        ]
    else:
        starts = [partial(_same, chain) for chain in chains]
    progress = _Progress(n_iter, n_chains, verbose)
    n_jobs = chains_at_once(n_jobs, n_chains)
    # A chain with parallel loops (``thread_cap``) shares the cores with the
    # chains beside it: n_jobs chains at once on OpenMP's threads would
    # oversubscribe the cores, which busy-waiting threads make far slower than
    # running them in turn.
    side_by_side = max(1, min(effective_n_jobs(n_jobs), n_chains))
    thread_cap = max(1, openmp_threads() // side_by_side)
    try:
        # Threads by default: the sweeps release the GIL and the chains share the
        # data; joblib.parallel_config(backend=...) overrides the preference,
        # except for chains to keep, which must stay in this process (compiled,
        # they do not pickle): sharedmem makes joblib run those in threads.
        results = Parallel(
            n_jobs=n_jobs,
            prefer="threads",
            require="sharedmem" if keep_chains or chains is not None else None,
        )(
            delayed(_run_chain)(
                start,
                n_iter,
                burn_in,
                thin,
                sweeps_done,
                index,
                progress,
                extra_traces,
                keep_chains,
                thread_cap,
                trim_draw,
                whole_per_chain,
            )
            for index, start in enumerate(starts)
        )
    finally:  # also when a chain fails or the user interrupts
        progress.close()
    parameters = [p for result in results for p in result.parameters]
    trace, moves = (
        {name: np.stack([getattr(r, group)[name] for r in results]) for name in names}
        for group, names in (("trace", results[0].trace), ("moves", results[0].moves))
    )
    blocks = [result.labels for result in results if result.labels is not None]
    label_samples = _pool_labels(blocks) if blocks else None
    chains = [result.chain for result in results]
    return Posterior(label_samples, parameters, trace, moves, chains)


def extend_posterior(previous, new, n_chains):
    """``previous`` followed, chain by chain, by the draws of its continuation.

    Each chain's kept draws come in a block (chains stacked), so the result is
    the posterior one run of all the sweeps would have given.
    """
    if new.label_samples is None:  # the continuation kept no draw
        labels, parameters = previous.label_samples, previous.parameters
    else:
        n_samples = previous.label_samples.shape[1]
        old = previous.label_samples.reshape(n_chains, -1, n_samples)
        added = new.label_samples.reshape(n_chains, -1, n_samples)
        labels = _pool_labels(list(old) + list(added), order=_interleave(n_chains))
        n_old, n_added = old.shape[1], added.shape[1]
        parameters = [
            p
            for c in range(n_chains)
            for p in (
                previous.parameters[c * n_old : (c + 1) * n_old]
                + new.parameters[c * n_added : (c + 1) * n_added]
            )
        ]
    trace, moves = (
        {name: np.concatenate([old[name], added[name]], axis=1) for name in old}
        for old, added in ((previous.trace, new.trace), (previous.moves, new.moves))
    )
    return Posterior(labels, parameters, trace, moves, new.chains)


def point_estimate(posterior, burn_in):
    """Index of the VI medoid among the draws; warns if the chains disagree."""
    warn_if_chains_disagree(posterior.trace["log_joint"][:, burn_in:])
    return vi_consensus(posterior.label_samples)


def _interleave(n_chains):
    """Block order: chain 0's old and new draws, then chain 1's, and so on."""
    return [i for c in range(n_chains) for i in (c, n_chains + c)]


def _pool_labels(blocks, order=None):
    # The snapshots number clusters 0..K-1, so the largest label is the largest
    # K less one: store the draws in the smallest integer dtype that holds it
    # (int8 for up to 128 clusters), copied once from the blocks (not at all
    # from a single block of that dtype).
    if order is not None:
        blocks = [blocks[i] for i in order]
    n_clusters_max = max(int(block.max(initial=0)) for block in blocks) + 1
    dtype = _smallest_label_dtype(n_clusters_max - 1)
    if len(blocks) == 1 and blocks[0].dtype == dtype:
        return blocks[0]  # one chain's draws: no copy
    return np.concatenate(blocks, dtype=dtype, casting="same_kind")


def _holding(kept_labels, labels):
    """``kept_labels``, widened (one copy) if ``labels`` has a cluster number it
    cannot hold.

    The draws are the largest array of a fit at 10**6 points: they are kept in
    the smallest integer dtype from the start (a byte a label up to 128
    clusters), not in the snapshots' int32 (with every chain's int32 draws
    alive while they were pooled, a fit peaked at 5 times its
    ``label_samples_``).
    """
    dtype = _smallest_label_dtype(int(labels.max(initial=0)))
    if dtype.itemsize > kept_labels.dtype.itemsize:
        return kept_labels.astype(dtype)
    return kept_labels


def _same(chain):
    """The chain to continue (a start that builds nothing)."""
    return chain


def _run_chain(
    start,
    n_iter,
    burn_in,
    thin,
    sweeps_done,
    index,
    progress,
    extra,
    keep,
    thread_cap,
    trim_draw=None,
    whole_per_chain=None,
):
    chain = start()
    if hasattr(chain, "thread_cap"):
        chain.thread_cap = thread_cap
    with sized_by("n_iter", n_iter):
        trace = {"n_clusters": np.empty(n_iter, dtype=np.intp)}
        for name in ("log_joint", *extra):
            trace[name] = np.empty(n_iter, dtype=np.float64)
    kept_labels, kept_parameters = None, []
    counted = _move_counts(chain)
    moves = {
        f"{move}_{what}": np.zeros(n_iter, dtype=np.intp)
        for move in counted
        for what in ("proposed", "accepted")
    }
    n_kept = n_kept_draws(sweeps_done + n_iter, burn_in, thin) - n_kept_draws(
        sweeps_done, burn_in, thin
    )
    whole = set(whole_draw_indices(n_kept, whole_per_chain).tolist())
    for sweep in range(n_iter):
        chain.sweep()
        for name, values in trace.items():
            values[sweep] = getattr(chain, name)
        # the chains count proposals since their start: this sweep's is the change
        now = _move_counts(chain)
        for move, (proposed, accepted) in now.items():
            moves[f"{move}_proposed"][sweep] = proposed - counted[move][0]
            moves[f"{move}_accepted"][sweep] = accepted - counted[move][1]
        counted = now
        # burn-in and thinning count from the chain's start, not this run's
        done = sweeps_done + sweep
        if done >= burn_in and (done - burn_in) % thin == 0:
            labels, *parameters = chain.snapshot()
            if kept_labels is None:
                kept_labels = np.empty((n_kept, labels.shape[0]), dtype=np.int8)
            kept_labels = _holding(kept_labels, labels)
            kept_labels[len(kept_parameters)] = labels
            if trim_draw is not None:
                parameters = trim_draw(parameters, len(kept_parameters) in whole)
            kept_parameters.append(tuple(parameters))
        progress.update(index, sweep, chain.n_clusters, chain.log_joint)
    return ChainResult(
        kept_labels, kept_parameters, trace, moves, chain if keep else None
    )


# The Metropolis-Hastings moves whose proposals the chains count, from their
# start: move -> (chain attribute, its keys of proposals, of acceptances).
_COUNTED_MOVES = {
    "split_merge": (
        "split_merge_counts",
        ("split_proposed", "merge_proposed"),
        ("split_accepted", "merge_accepted"),
    ),
    "permutation": ("permutation_counts", ("proposed",), ("accepted",)),
}


def _move_counts(chain):
    """move -> (proposals, acceptances) so far, for the moves the chain counts."""
    counts = {}
    for move, (attribute, proposed, accepted) in _COUNTED_MOVES.items():
        if not hasattr(chain, attribute):
            continue
        # None before a chain's first sweep: nothing counted yet
        found = getattr(chain, attribute) or {}
        counts[move] = tuple(
            sum(found.get(key, 0) for key in keys) for keys in (proposed, accepted)
        )
    return counts


def chains_at_once(n_jobs, n_chains):
    """The ``n_jobs`` the chains run with: ``n_jobs`` itself unless it is None.

    None means as many chains at once as OpenMP may use threads (all cores, unless
    OMP_NUM_THREADS or threadpoolctl limit them), at most ``n_chains``: the
    convention of scikit-learn's threaded estimators (KMeans, the histogram
    gradient boosting), so that a default fit's chains share the machine's cores
    and two chains on two cores take about one chain's wall time. Inside a joblib
    worker, joblib limits OpenMP to that worker's share of the cores, so a
    parallel grid search does not oversubscribe them. A joblib context that sets
    ``n_jobs``, or a backend other than joblib's loky or threading, decides
    instead (None is passed on); joblib does not say whether its loky backend was
    chosen by a context or is its default, so ``parallel_config(backend="loky")``
    alone runs that many chains in processes.
    """
    if n_jobs is not None:
        return n_jobs
    backend, context_n_jobs = get_active_backend()
    if context_n_jobs is not None or type(backend).__name__ not in (
        "LokyBackend",
        "ThreadingBackend",
    ):
        return None
    return max(1, min(n_chains, openmp_threads()))


def whole_draw_indices(n_draws, n_whole):
    """``min(n_draws, n_whole)`` indices evenly spaced over ``range(n_draws)``:
    the first and the last included, the last alone when ``n_whole`` is 1, all
    of them when ``n_whole`` is None."""
    if n_whole is None or n_draws <= n_whole:
        return np.arange(n_draws)
    if n_whole <= 1:
        return np.arange(n_draws - n_whole, n_draws)
    return np.unique(np.rint(np.linspace(0, n_draws - 1, n_whole)).astype(np.intp))


def n_kept_draws(n_iter, burn_in, thin):
    """Number of draws one chain keeps."""
    return len(range(burn_in, n_iter, thin))


class _Progress:
    """Progress of the chains with an estimate of the time left.

    ``verbose=1``: a tqdm progress bar over all chains' sweeps when tqdm is
    installed, otherwise about ten lines per chain; ``verbose >= 2``: a line
    every sweep. Chains run side by side, so the time left scales with a
    chain's remaining share.
    """

    def __init__(self, n_iter, n_chains, verbose):
        self.n_iter = n_iter
        self.n_chains = n_chains
        self.verbose = verbose
        self.start = time.perf_counter()
        self.every = max(1, n_iter // 10) if verbose == 1 else 1
        self.bar = None
        # the chains report from their threads: one line at a time, each whole
        self.lock = threading.Lock()
        if verbose == 1 and tqdm is not None:
            self.bar = tqdm(
                total=n_iter * n_chains, desc="rankmix", unit="sweep", leave=False
            )

    def update(self, chain, sweep, n_clusters, log_joint):
        if self.bar is not None:
            with self.lock:
                self.bar.set_postfix(clusters=n_clusters, log_joint=f"{log_joint:.1f}")
                self.bar.update()
            return
        if not self.verbose or (sweep + 1) % self.every and sweep + 1 != self.n_iter:
            return
        elapsed = time.perf_counter() - self.start
        left = elapsed * (self.n_iter - sweep - 1) / (sweep + 1)
        line = (
            f"[rankmix] chain {chain + 1}/{self.n_chains} sweep {sweep + 1}/"
            f"{self.n_iter}: {n_clusters} clusters, log joint {log_joint:.1f}, "
            f"{elapsed:.1f}s elapsed, ~{left:.1f}s left\n"
        )
        # print(line) writes the text and its end separately, so two chains'
        # lines could run together: one write of the whole line, under the lock
        out = sys.stdout
        if out is None:  # no console (pythonw), where print writes nothing
            return
        with self.lock:
            out.write(line)
            out.flush()

    def close(self):
        if self.bar is not None:
            self.bar.close()

    def __getstate__(self):
        # a chain run in another process (a process or cluster backend of
        # joblib) reports in lines there: the bar stays in this process
        return {**self.__dict__, "bar": None, "lock": None}

    def __setstate__(self, state):
        self.__dict__.update(state, lock=threading.Lock())
