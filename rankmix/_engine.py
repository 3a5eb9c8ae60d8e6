# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The MCMC engine shared by every DP mixture: chains, draws, traces, diagnostics.

The engine knows nothing of rankings or vectors. A model hands it a factory that
builds one compiled chain from a bit generator; a chain object offers

* ``sweep(n_sweeps=1)``: run full sweeps with the GIL released,
* ``n_clusters`` and ``log_joint``: the current number of clusters and log p(state, X),
* ``snapshot()``: ``(labels, *parameters)`` of the current state, labels numbered by
  first appearance.

The engine runs ``n_chains`` chains through joblib threads, each on its own
``PCG64`` stream spawned from ``random_state`` before any parallel work, so the draws
depend on ``random_state`` and never on ``n_jobs``.
"""

import time
import warnings
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from sklearn.exceptions import ConvergenceWarning

from ._consensus import vi_consensus
from ._rng import spawn_bit_generators

# Split R-hat of the log joint above this means the chains disagree (Vehtari et al.
# 2021 recommend 1.01 for final inference; 1.1 flags clear disagreement only).
RHAT_THRESHOLD = 1.1


@dataclass
class ChainResult:
    """Everything one chain returns: kept draws and per-sweep traces."""

    labels: np.ndarray  # (n_kept, N)
    parameters: list  # per kept draw, the snapshot's parameter tuple
    trace: dict  # name -> (n_iter,): "n_clusters", "log_joint" and any extras


@dataclass
class Posterior:
    """The pooled output of all chains."""

    label_samples: np.ndarray  # (n_draws, N), chains stacked
    parameters: list  # per draw, as label_samples
    trace: dict  # name -> (n_chains, n_iter)
    best_draw: int  # index of the point estimate in label_samples


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
):
    """Run the chains and pool their draws.

    Parameters
    ----------
    make_chain : callable
        ``make_chain(bit_generator)`` returns a fresh chain (see module docstring).
    n_iter, burn_in, thin : int
        Sweeps in all (burn-in included), sweeps discarded, and the keep interval.
    n_chains, n_jobs : int
        Number of chains and of joblib threads running them.
    random_state : int, RandomState instance or None
        Fixes every chain's stream.
    verbose : int
        0 is silent; 1 or more prints progress lines.
    extra_traces : tuple of str
        Names of further chain attributes to record after every sweep (for
        example ``"alpha"`` when the model samples it).

    Returns
    -------
    posterior : Posterior
    """
    bit_generators = spawn_bit_generators(random_state, n_chains)
    progress = _Progress(n_iter, n_chains, verbose)
    # Threads: the sweeps release the GIL, and the chains share the data read-only.
    results = Parallel(n_jobs=n_jobs, prefer="threads")(
        delayed(_run_chain)(
            make_chain,
            bit_generator,
            n_iter,
            burn_in,
            thin,
            index,
            progress,
            extra_traces,
        )
        for index, bit_generator in enumerate(bit_generators)
    )
    label_samples = np.concatenate([result.labels for result in results])
    parameters = [p for result in results for p in result.parameters]
    trace = {
        name: np.stack([result.trace[name] for result in results])
        for name in results[0].trace
    }
    best_draw = vi_consensus(label_samples)
    _warn_if_chains_disagree(trace["log_joint"][:, burn_in:])
    return Posterior(label_samples, parameters, trace, best_draw)


def _run_chain(
    make_chain, bit_generator, n_iter, burn_in, thin, index, progress, extra
):
    chain = make_chain(bit_generator)
    trace = {"n_clusters": np.empty(n_iter, dtype=np.intp)}
    for name in ("log_joint", *extra):
        trace[name] = np.empty(n_iter, dtype=np.float64)
    kept_labels, kept_parameters = [], []
    for sweep in range(n_iter):
        chain.sweep()
        trace["n_clusters"][sweep] = chain.n_clusters
        trace["log_joint"][sweep] = chain.log_joint
        for name in extra:
            trace[name][sweep] = getattr(chain, name)
        if sweep >= burn_in and (sweep - burn_in) % thin == 0:
            labels, *parameters = chain.snapshot()
            kept_labels.append(labels)
            kept_parameters.append(tuple(parameters))
        progress.update(index, sweep, chain.n_clusters, chain.log_joint)
    return ChainResult(np.array(kept_labels), kept_parameters, trace)


def n_kept_draws(n_iter, burn_in, thin):
    """Number of draws one chain keeps."""
    return len(range(burn_in, n_iter, thin))


def split_rhat(draws):
    """Split R-hat of a scalar across chains (Gelman et al., BDA3 sec. 11.4).

    Each chain is cut in halves, which then count as chains; R-hat compares the
    between-half and within-half variances. Values near 1 mean the halves agree.

    Parameters
    ----------
    draws : ndarray of shape (n_chains, n_draws)

    Returns
    -------
    rhat : float
        NaN when there are fewer than 4 draws per chain or no variation at all.
    """
    draws = np.asarray(draws, dtype=np.float64)
    half = draws.shape[1] // 2
    if half < 2:
        return np.nan
    halves = np.concatenate([draws[:, :half], draws[:, half : 2 * half]])
    within = halves.var(axis=1, ddof=1).mean()
    between = half * halves.mean(axis=1).var(ddof=1)
    if within == 0:
        return 1.0 if between == 0 else np.inf
    pooled = (half - 1) / half * within + between / half
    return float(np.sqrt(pooled / within))


def _warn_if_chains_disagree(log_joint):
    if log_joint.shape[0] < 2:
        return
    rhat = split_rhat(log_joint)
    if rhat > RHAT_THRESHOLD:
        warnings.warn(
            f"The chains disagree: split R-hat of the log joint after burn-in is "
            f"{rhat:.3f} > {RHAT_THRESHOLD}. The posterior summaries mix chains stuck "
            "in different modes. Increase n_iter and burn_in, or try another "
            "sampler; inspect trace_ to see where the chains part.",
            ConvergenceWarning,
            stacklevel=3,
        )


class _Progress:
    """Periodic progress lines with an estimate of the time left."""

    def __init__(self, n_iter, n_chains, verbose):
        self.n_iter = n_iter
        self.n_chains = n_chains
        self.verbose = verbose
        self.start = time.perf_counter()
        self.every = max(1, n_iter // 10) if verbose == 1 else 1

    def update(self, chain, sweep, n_clusters, log_joint):
        if not self.verbose or (sweep + 1) % self.every and sweep + 1 != self.n_iter:
            return
        elapsed = time.perf_counter() - self.start
        # Chains run side by side, so the time left scales with this chain's share.
        left = elapsed * (self.n_iter - sweep - 1) / (sweep + 1)
        print(
            f"[rankmix] chain {chain + 1}/{self.n_chains} sweep {sweep + 1}/"
            f"{self.n_iter}: {n_clusters} clusters, log joint {log_joint:.1f}, "
            f"{elapsed:.1f}s elapsed, ~{left:.1f}s left",
            flush=True,
        )
