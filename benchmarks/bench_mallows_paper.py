"""Figure 6 of Meila & Chen (2010): Beta-Gibbs vs Slice-Gibbs on the four data sets.

Each data set has N = 5000 rankings (10 clusters x 500) of n = 20 items, drawn by
``make_mallows_mixture(dataset=1..4)``: t = 10 or 19, theta* constant or decreasing
with the stage. Both samplers start as ``--init`` says (the paper: a random
clustering into 20 clusters, ``--init random``; the estimator's default is the
sequential start), with alpha = nu = r = 1 and the exact Metropolis-Hastings sigma
update. The chain is driven directly (``MallowsChain``, built as
``DPMallowsClustering`` builds it): after every sweep the clustering is compared with
the true labels by the variation of information (VI, nats). Only the sweeps are
timed, not the snapshots nor the VI.

Each replicate draws a fresh data set and a fresh chain start; figures are medians
over replicates. Printed per data set and sampler: VI at iterations 1, 5, 10, 25,
50, 100, the number of clusters at the last iteration, the first iteration with
VI <= 0.01 and the milliseconds per sweep (median over replicates of each chain's
median sweep time, with min and max).

The chain is built by the estimator's factory, so each sampler runs its own
defaults (``--init auto``, ``--n-split-merge auto``): Slice-Gibbs starts from
Beta-Gibbs's sequential prediction and makes one split-merge proposal a sweep.

Targets, for the estimator's default sampler (``"slice-gibbs"``; the script
names it): VI <= 0.01 within 100 iterations in every replicate, at <= 13 ms per
iteration for t = 10 and <= 26 ms for t = 19 on one core (Beta-Gibbs's times
when the target was set, when it was the default).

Usage::

    python benchmarks/bench_mallows_paper.py [--quick] [--replicates 3]
        [--n-iter 100] [--init sequential] [--init-clusters 20]
        [--n-split-merge 0] [--datasets 1 2 3 4]
        [--samplers subcluster beta-gibbs slice-gibbs] [--seed 0]
        [--plot fig6.png]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import time

import numpy as np
from _machine import print_machine

from rankmix import DPMallowsClustering
from rankmix.datasets import make_mallows_mixture
from rankmix.metrics import variation_of_information

CHECKPOINTS = (1, 5, 10, 25, 50, 100)
VI_TARGET = 0.01
MS_TARGET = {10: 13.0, 19: 26.0}  # by t
DEFAULT_SAMPLER = DPMallowsClustering().sampler


def run_chain(X, y, sampler, args, seed_seq):
    """VI, number of clusters and sweep time after each of ``args.n_iter`` sweeps."""
    model = DPMallowsClustering(
        alpha=1.0,
        nu=1.0,
        r=1.0,
        sampler=sampler,
        sigma_update=args.sigma_update,
        init=args.init,
        init_clusters=args.init_clusters,
        n_split_merge=args.n_split_merge,
        n_chains=1,
        n_jobs=1,
    )
    X = model._prepare(X)
    make_chain = model._chain_factory(X)
    chain = make_chain(np.random.PCG64(seed_seq))
    vi = np.empty(args.n_iter)
    n_clusters = np.empty(args.n_iter, dtype=int)
    seconds = np.empty(args.n_iter)
    for it in range(args.n_iter):
        start = time.perf_counter()
        chain.sweep()
        seconds[it] = time.perf_counter() - start
        labels = chain.snapshot()[0]
        vi[it] = variation_of_information(y, labels)
        n_clusters[it] = chain.n_clusters
    return vi, n_clusters, seconds


def first_hit(vi):
    """1-based first iteration with VI <= target, or None."""
    hits = np.flatnonzero(vi <= VI_TARGET)
    return int(hits[0]) + 1 if len(hits) else None


def format_hits(hits):
    reached = [h for h in hits if h is not None]
    if not reached:
        return "never"
    return f"{int(np.median(reached))} ({len(reached)}/{len(hits)})"


def plot(results, datasets, samplers, n_iter, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"matplotlib is not importable: no plot written to {path}")
        return
    n_panels = len(datasets)
    n_cols = 2 if n_panels > 1 else 1
    n_rows = (n_panels + n_cols - 1) // n_cols
    fig, axes = plt.subplots(
        n_rows, n_cols, figsize=(5 * n_cols, 3.6 * n_rows), squeeze=False
    )
    colours = {"beta-gibbs": "tab:blue", "slice-gibbs": "tab:red"}
    iterations = np.arange(1, n_iter + 1)
    floor = 1e-4  # VI = 0 has no place on a log axis: draw it at the floor
    for ax, dataset in zip(axes.ravel(), datasets):
        for sampler in samplers:
            vi = np.array([r[0] for r in results[dataset, sampler]])
            colour = colours.get(sampler)
            for row in vi:
                ax.plot(
                    iterations, np.maximum(row, floor), color=colour, alpha=0.25, lw=0.8
                )
            ax.plot(
                iterations,
                np.maximum(np.median(vi, axis=0), floor),
                color=colour,
                lw=2,
                label=sampler,
            )
        ax.axhline(VI_TARGET, color="grey", ls=":", lw=1)
        ax.set_yscale("log")
        ax.set_ylim(floor / 2, 10)
        ax.set_title(f"Dataset {dataset}")
        ax.set_xlabel("iteration")
        ax.set_ylabel("VI to the true clustering")
        ax.legend()
    for ax in axes.ravel()[n_panels:]:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="25 iterations, 1 replicate (under a minute)",
    )
    parser.add_argument(
        "--datasets", type=int, nargs="+", default=[1, 2, 3, 4], choices=[1, 2, 3, 4]
    )
    parser.add_argument(
        "--samplers",
        nargs="+",
        default=["subcluster", "beta-gibbs", "slice-gibbs"],
        choices=["subcluster", "beta-gibbs", "slice-gibbs"],
    )
    parser.add_argument("--sigma-update", default="mh", choices=["mh", "stagewise"])
    parser.add_argument(
        "--n-iter",
        type=int,
        default=None,
        help="sweeps per chain (default 100, quick 25)",
    )
    parser.add_argument(
        "--n-per-cluster",
        type=int,
        default=500,
        help="rankings per cluster (10 clusters)",
    )
    parser.add_argument(
        "--init-clusters",
        type=int,
        default=20,
        help="size of the random initial clustering (try 1 vs 20)",
    )
    parser.add_argument(
        "--init",
        default="auto",
        choices=["auto", "sequential", "random"],
        help="the estimator's init ('auto': sequential for the Gibbs samplers, "
        "one cluster for subcluster)",
    )
    parser.add_argument(
        "--n-split-merge",
        type=lambda value: value if value == "auto" else int(value),
        default="auto",
        help="split-merge proposals per sweep (0: none; 'auto': the estimator's, "
        "1 for slice-gibbs, 0 for beta-gibbs, 4 for subcluster)",
    )
    parser.add_argument(
        "--replicates",
        "--repeats",
        dest="replicates",
        type=int,
        default=None,
        help="fresh data set and chain per replicate; timings are "
        "the median over them (default 3, quick 1)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        default=None,
        help="write VI vs iteration, one panel per data set",
    )
    args = parser.parse_args()
    if args.n_iter is None:
        args.n_iter = 25 if args.quick else 100
    if args.replicates is None:
        args.replicates = 1 if args.quick else 3

    print_machine("one core, one chain")
    print(
        f"Figure 6: N = 10 x {args.n_per_cluster} rankings, n = 20 items; "
        f"alpha = nu = r = 1; sigma_update={args.sigma_update!r}; "
        f"init={args.init!r}; init_clusters={args.init_clusters}; "
        f"n_split_merge={args.n_split_merge}; {args.n_iter} iterations; "
        f"{args.replicates} replicate(s); seed {args.seed}"
    )
    print()

    checkpoints = [c for c in CHECKPOINTS if c <= args.n_iter]
    if args.n_iter not in checkpoints:
        checkpoints.append(args.n_iter)
    results = {}
    for dataset in args.datasets:
        for rep in range(args.replicates):
            data_seed = np.random.SeedSequence([args.seed, dataset, rep, 0])
            X, y, _ = make_mallows_mixture(
                n_clusters=10,
                n_per_cluster=args.n_per_cluster,
                dataset=dataset,
                random_state=np.random.RandomState(np.random.MT19937(data_seed)),
            )
            for sampler in args.samplers:
                # Both samplers start from the same stream on the same data.
                chain_seed = np.random.SeedSequence([args.seed, dataset, rep, 1])
                results.setdefault((dataset, sampler), []).append(
                    run_chain(X, y, sampler, args, chain_seed)
                )

    vi_head = " ".join(f"{'VI@' + str(c):>8}" for c in checkpoints)
    header = (
        f"{'data':>4} {'t':>3} {'sampler':<12} {vi_head} {'K@end':>6} "
        f"{'VI<=0.01 at':>12} {'ms/iter median [min, max]':>27}"
    )
    print(header)
    print("-" * len(header))
    summary = {}
    for dataset in args.datasets:
        t = 10 if dataset in (1, 3) else 19
        for sampler in args.samplers:
            runs = results[dataset, sampler]
            vi = np.array([r[0] for r in runs])
            k_end = np.array([r[1][-1] for r in runs])
            ms = np.array([np.median(r[2]) * 1e3 for r in runs])
            hits = [first_hit(r[0]) for r in runs]
            vi_cols = " ".join(f"{np.median(vi[:, c - 1]):8.4f}" for c in checkpoints)
            k_text = (
                f"{int(np.median(k_end))}"
                if len(k_end) == 1
                else f"{np.median(k_end):g}"
            )
            ms_text = f"{np.median(ms):7.1f} [{ms.min():6.1f}, {ms.max():6.1f}]"
            print(
                f"{dataset:>4} {t:>3} {sampler:<12} {vi_cols} {k_text:>6} "
                f"{format_hits(hits):>12} {ms_text:>27}"
            )
            summary[dataset, sampler] = (hits, np.median(ms))
    print()
    print(
        "VI: median over replicates, nats (true clustering: 10 clusters). "
        "'VI<=0.01 at': median first iteration (replicates that got there)."
    )
    print(
        "ms/iter: each chain's median sweep time; median [min, max] over "
        "replicates. Snapshots and VI are not timed."
    )

    if DEFAULT_SAMPLER in args.samplers:
        print()
        print(
            f"Targets (the default sampler, {DEFAULT_SAMPLER}): VI <= {VI_TARGET} "
            f"within {args.n_iter} iterations, <= 13 (t = 10) or 26 (t = 19) ms "
            "per iteration"
        )
        for dataset in args.datasets:
            hits, ms = summary[dataset, DEFAULT_SAMPLER]
            reached = sum(h is not None for h in hits)
            vi_ok = "PASS" if reached == len(hits) else "FAIL"
            target = MS_TARGET[10 if dataset in (1, 3) else 19]
            ms_ok = "PASS" if ms <= target else "FAIL"
            print(
                f"  dataset {dataset}: VI {vi_ok} ({reached}/{len(hits)} "
                f"replicates reach VI <= {VI_TARGET}); time {ms_ok} "
                f"({ms:.1f} ms/iter)"
            )
        if args.n_iter < 100:
            print(
                f"  (only {args.n_iter} iterations were run: the paper's "
                "criterion is 100)"
            )

    if args.plot:
        plot(results, args.datasets, args.samplers, args.n_iter, args.plot)


if __name__ == "__main__":
    main()
