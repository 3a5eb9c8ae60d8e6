"""Burn-in of DPGaussianClustering's moves: Figure 3 of Liang, Jordan & Taskar (2007).

Liang et al. plot the log joint probability log p(c, X) against time for GIBBS,
GIBBS+SPLITMERGE, GIBBS+PERM and GIBBS+SPLITMERGE+PERM on their synthetic data
(d = 40, 40 clusters, means ~ N(0, 2 I), identity covariances), from three
starts: one cluster, a random clustering, and many clusters. This script does
the same on one draw of N points (default 2,000: 50 per cluster), with:

* the diagonal model (``covariance_type="diag"``), which holds the truth. With
  full covariances and 50 points per cluster in 40 dimensions the posterior
  prefers merged clusters (the true clustering's log joint is far below the
  merged states the chains find), so "reaching the truth" would not mean
  reaching the posterior's bulk;
* the default prior, alpha = 1, ``n_split_merge=10`` proposals per sweep;
* the permutation move in its burn-in form throughout (``burn_in`` larger than
  any run): orderings from random projections (Liang et al. sec. 4.2), the
  beta approximation and the beam (``beam_tolerance=1e-32``);
* starts: ``one`` (all points in one cluster), ``random`` (each point uniformly
  in one of 40 clusters), ``many`` (each point uniformly in one of N clusters:
  about 0.63 N clusters) and, for comparison, ``sequential`` (rankmix's default,
  sequential prediction, Liang et al. sec. 5.1).

Each (start, sampler) runs one chain on one core for ``--seconds`` of wall time
(sweeps only; the chain's construction, which for ``sequential`` includes one
Gibbs-like pass, is timed apart and reported). After every sweep it records the
elapsed time and log p(c, X). The script prints, for each start and sampler,
log p(c, X) minus that of the true clustering at 1, 2, 5, 10, ... seconds
(the last value recorded by then: checkpoints 0.05, 0.2, 0.5, 1, 2, 5, 10, 20
and 50 s, up to ``--seconds``), the number of clusters and the ARI at the end,
and the sweeps run; ``--plot FILE`` draws the curves (matplotlib).

Usage::

    python benchmarks/bench_gaussian_burn_in.py [--quick] [--n-samples 2000]
        [--seconds 20] [--starts one random many sequential] [--plot fig3.png]
        [--seed 0]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from _liang import SAMPLERS, chain_factory, log_joint, make_data  # noqa: E402
from _machine import print_machine  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402

from rankmix import DPGaussianClustering  # noqa: E402

STARTS = ("one", "random", "many", "sequential")
D, K = 40, 40


def start_params(start, n_samples):
    if start == "sequential":
        return {"init": "sequential"}
    size = {"one": 1, "random": K, "many": n_samples}[start]
    return {"init": "random", "init_clusters": size}


def make_chain(X, sampler, start, seed):
    """The compiled chain DPGaussianClustering would run, and the estimator."""
    model = DPGaussianClustering(
        covariance_type="diag",
        sampler=sampler,
        burn_in=10**9,  # projections orderings throughout: a burn-in study
        n_chains=1,
        random_state=seed,
        **start_params(start, len(X)),
    )
    return chain_factory(model, X)[0], model


def run(X, sampler, start, seconds, seed):
    factory, _ = make_chain(X, sampler, start, seed)
    built = time.perf_counter()
    chain = factory(np.random.PCG64(seed))
    setup = time.perf_counter() - built
    times, log_joints = [0.0], [chain.log_joint]
    start_time = time.perf_counter()
    while times[-1] < seconds:
        chain.sweep()
        times.append(time.perf_counter() - start_time)
        log_joints.append(chain.log_joint)
    labels = chain.snapshot()[0]
    return dict(
        times=np.array(times),
        log_joints=np.array(log_joints),
        setup=setup,
        labels=labels,
        n_clusters=chain.n_clusters,
    )


def value_at(result, t):
    """The log joint recorded last by time t."""
    return result["log_joints"][np.searchsorted(result["times"], t, side="right") - 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N=600, 2 s per run")
    parser.add_argument("--n-samples", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--starts", nargs="+", default=list(STARTS), choices=STARTS)
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS))
    parser.add_argument("--plot", default=None, help="write the figure to this file")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.quick:
        args.n_samples, args.seconds = 600, 2.0

    print_machine(
        f"one core, one chain per run; d={D}, K={K}, N={args.n_samples}, "
        f"covariance_type='diag', default prior, alpha=1, {args.seconds:g} s per run"
    )
    X, y, _ = make_data(D, K, args.n_samples, args.seed)
    _, model = make_chain(X, "gibbs", "one", args.seed)
    truth = log_joint(model, X, y)
    print(f"log p(c, X) of the true clustering: {truth:.1f}\n")

    checkpoints = [
        t for t in (0.05, 0.2, 0.5, 1, 2, 5, 10, 20, 50) if t <= args.seconds
    ]
    results = {}
    for start in args.starts:
        print(f"start: {start}")
        header = (
            f"  {'sampler':<31}"
            + "".join(f"{f'{t:g}s':>9}" for t in checkpoints)
            + f"{'K':>5}{'ARI':>7}{'sweeps':>8}{'setup s':>9}"
        )
        print(header)
        for sampler in args.samplers:
            result = run(X, sampler, start, args.seconds, args.seed)
            results[start, sampler] = result
            gaps = "".join(f"{value_at(result, t) - truth:9.1f}" for t in checkpoints)
            ari = adjusted_rand_score(y, result["labels"])
            print(
                f"  {sampler:<31}{gaps}{result['n_clusters']:5d}{ari:7.3f}"
                f"{len(result['times']) - 1:8d}{result['setup']:9.2f}",
                flush=True,
            )
        print()
    print(
        "Columns: log p(c, X) minus the true clustering's, last value by that "
        "time (0 = as probable as the truth; > 0 happens: the truth is not the "
        "posterior mode); K, ARI at the end."
    )
    if args.plot:
        plot(results, truth, args)


def plot(results, truth, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, len(args.starts), figsize=(4.2 * len(args.starts), 3.6), sharey=True
    )
    axes = np.atleast_1d(axes)
    for ax, start in zip(axes, args.starts):
        for sampler in args.samplers:
            result = results[start, sampler]
            gap = result["log_joints"] - truth
            # a symmetric log scale shows both the far start and the last nats
            ax.plot(
                result["times"], np.sign(gap) * np.log10(1 + np.abs(gap)), label=sampler
            )
        ax.axhline(0.0, color="k", lw=0.8, ls=":")
        ax.set_title(f"{start} start")
        ax.set_xlabel("seconds")
    axes[0].set_ylabel("sign * log10(1 + |log p(c,X) - truth|)")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    print(f"figure written to {args.plot}")


if __name__ == "__main__":
    main()
