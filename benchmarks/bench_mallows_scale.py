"""Time and memory at the scale of the paper's college applications (sec. 8).

The paper clusters N = 53,757 rankings of up to t = 10 of n = 533 courses, with
alpha = nu = 100, running samplers to 500 iterations. That data set is not public
here, so this benchmark draws synthetic data of the same shape with
``make_mallows_mixture``:

* 30 clusters of unequal sizes, proportional to 0.9^k (k = 0..29: from 10.4% down
  to 0.5% of the rankings), summing to 53,757;
* ranking lengths 1..10 with probabilities
  (0.05, 0.07, 0.08, 0.09, 0.10, 0.10, 0.10, 0.10, 0.09, 0.22), mean 6.40 (many
  applicants fill all ten places);
* theta* decreasing with the stage from 1.0 to 0.3 (the trend of the paper's
  Figure 11);
* ``centre_n_rankings=0``: uniformly random centres. Each centre of the generator
  is drawn around its own uniformly random sigma0, so the centres are uniform and
  independent whatever ``centre_n_rankings``; a positive value only costs time
  (about 1 s per centre at n = 533 with the default 100, 3.6 s on the same
  machine before the statistics' radix sort, 2026-11-28).

Each sampler (Beta-Gibbs, then Slice-Gibbs; sigma_update="mh", one chain, one
core) runs in a fresh Python process, so that its peak resident memory
(``ru_maxrss``) is its own: a few warm-up sweeps (default 5), then timed sweeps
(default 20); the figure is the median seconds per sweep over the timed sweeps,
with their min and max. The set-up (``_prepare``: priors' normalisers; chain
construction: random initial clustering) is timed apart. Data generation runs in
its own process too and is timed separately. The parent process imports neither
numpy nor rankmix, so that it stays small: on Linux a child started by vfork/exec
inherits the parent's high-water mark into its ``ru_maxrss``.

Targets: <= 1.0 s per iteration of either Gibbs sampler on one core (set for
Beta-Gibbs, the default until 2026-11-27; Slice-Gibbs is now), <= 2 GiB peak memory;
500 iterations (the paper's run length) within 10 minutes.

``--subcluster-threads 1 2`` adds a section for ``sampler="subcluster"`` (its
label step runs on OpenMP threads, with ``n_split_merge=1`` and
``init="sequential"``, whose sampled start opens about 700 clusters): the seconds per
sweep with each number of threads, set by ``threadpoolctl.threadpool_limits(n,
user_api="openmp")`` in the child process, as the median over ``--repeats``
runs (use 3) of each run's median timed sweep. Each run starts the same chain
(the same seed): its draws do not depend on the number of threads, so the runs
differ in time only. ``--subcluster-workers 2 4`` times the same chain with its
rankings on a ``dask.distributed`` LocalCluster of that many one-thread worker
processes (the rankings chunked evenly among them), and says whether its
draws equal the in-process run's (the first ``--subcluster-threads`` entry).

Usage::

    python benchmarks/bench_mallows_scale.py [--quick] [--n-iter 20] [--n-warmup 5]
        [--repeats 1] [--samplers beta-gibbs slice-gibbs] [--seed 0]
        [--subcluster-threads 1 2] [--subcluster-workers 2]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from _machine import print_machine

from rankmix._mallows import SUBCLUSTER_SPLIT_MERGE

N_RANKINGS = 53_757
N_ITEMS = 533
N_CLUSTERS = 30
SIZE_RATIO = 0.9
LENGTH_PROBS = (0.05, 0.07, 0.08, 0.09, 0.10, 0.10, 0.10, 0.10, 0.09, 0.22)
THETA_FIRST, THETA_LAST = 1.0, 0.3
ALPHA = NU = 100.0

SECONDS_TARGET = 1.0  # per iteration of the Gibbs samplers (set for Beta-Gibbs)
MEMORY_TARGET_GIB = 2.0
PAPER_ITERATIONS = 500
PAPER_MINUTES_TARGET = 10.0

RESULT_TAG = "RESULT-JSON "


def peak_rss_kib():
    """Peak resident set size of this process, KiB (ru_maxrss is KiB on Linux)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform == "darwin" else peak  # bytes on macOS


def vm_hwm_kib():
    """VmHWM of /proc/self/status (this address space only), or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def emit(result):
    print(RESULT_TAG + json.dumps(result), flush=True)


# -- child: generate the data ----------------------------------------------------


def cluster_sizes(n_rankings, n_clusters):
    import numpy as np

    weights = SIZE_RATIO ** np.arange(n_clusters)
    sizes = np.floor(weights / weights.sum() * n_rankings).astype(np.intp)
    sizes[0] += n_rankings - sizes.sum()
    return sizes


def generate(args):
    import numpy as np

    from rankmix.datasets import make_mallows_mixture

    sizes = cluster_sizes(args.n_rankings, args.n_clusters)
    t_max = len(LENGTH_PROBS)
    theta = np.linspace(THETA_FIRST, THETA_LAST, t_max)
    start = time.perf_counter()
    X, y, _ = make_mallows_mixture(
        n_clusters=args.n_clusters,
        n_per_cluster=sizes,
        n_items=args.n_items,
        t=np.array(LENGTH_PROBS),
        theta=theta,
        centre_n_rankings=args.centre_n_rankings,
        random_state=args.seed,
    )
    seconds = time.perf_counter() - start
    np.savez(args.generate, X=X, y=y)
    lengths = (X >= 0).sum(axis=1)
    emit(
        dict(
            seconds=seconds,
            shape=list(X.shape),
            n_items=args.n_items,
            mean_length=float(lengths.mean()),
            sizes_min=int(sizes.min()),
            sizes_max=int(sizes.max()),
            peak_rss_kib=peak_rss_kib(),
        )
    )


# -- child: one sampler ----------------------------------------------------------


def one_config(args):
    import contextlib
    import warnings

    import numpy as np
    from threadpoolctl import threadpool_limits

    from rankmix import DPMallowsClustering
    from rankmix.metrics import variation_of_information

    warnings.simplefilter("ignore")
    data = np.load(args.data)
    X, y = data["X"], data["y"]
    baseline_kib = peak_rss_kib()

    start = time.perf_counter()
    model = DPMallowsClustering(
        alpha=ALPHA,
        nu=NU,
        r=1.0,
        sampler=args.one_config,
        sigma_update="mh",
        # the sequential start for the Gibbs samplers; for "subcluster" the
        # start of --subcluster-start: "sequential" (about 700 clusters, the
        # figures of before init="auto") or the estimator's default, "auto"
        # (one cluster, SUBCLUSTER_SPLIT_MERGE = 4 split-merge proposals a sweep)
        init=args.subcluster_start if args.one_config == "subcluster" else "sequential",
        init_clusters=args.init_clusters,
        # the estimator's defaults (Slice-Gibbs 1, Beta-Gibbs 0, sub-cluster 4),
        # but 1 for the sub-cluster sampler's sequential start
        n_split_merge=(
            1 if args.one_config == "subcluster" and args.subcluster_start != "auto"
            else "auto"
        ),
        n_chains=1,
        n_jobs=1,
    )
    stack = contextlib.ExitStack()
    if args.workers:  # the rankings on the workers of a LocalCluster
        import dask.array as da
        from distributed import Client, LocalCluster

        cluster = stack.enter_context(
            LocalCluster(
                n_workers=args.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            )
        )
        stack.enter_context(Client(cluster))
        X = da.from_array(X, chunks=(-(-len(X) // args.workers), -1))
        start = time.perf_counter()
    X = model._prepare(X)
    make_chain = model._chain_factory(X)
    prepare_seconds = time.perf_counter() - start
    start = time.perf_counter()
    chain = make_chain(np.random.PCG64(args.seed))
    construct_seconds = time.perf_counter() - start

    warmup, timed, n_clusters = [], [], []
    limits = (
        threadpool_limits(args.threads, user_api="openmp")
        if args.threads
        else contextlib.nullcontext()
    )
    with limits:
        for it in range(args.n_warmup + args.n_iter):
            start = time.perf_counter()
            chain.sweep()
            seconds = time.perf_counter() - start
            (warmup if it < args.n_warmup else timed).append(seconds)
            n_clusters.append(int(chain.n_clusters))
    labels, _, _, _, sizes = chain.snapshot()
    round_trips = None
    if args.workers:
        from _dask_trips import round_trips_per_sweep

        round_trips = round_trips_per_sweep(X, chain)
    stack.close()
    emit(
        dict(
            sampler=args.one_config,
            threads=args.threads,
            workers=args.workers,
            round_trips=round_trips,
            labels_digest=hashlib.sha1(labels.tobytes()).hexdigest(),
            prepare_seconds=prepare_seconds,
            construct_seconds=construct_seconds,
            warmup=warmup,
            timed=timed,
            n_clusters=n_clusters,
            n_substantial=int((sizes >= 0.01 * len(labels)).sum()),
            n_singletons=int((sizes == 1).sum()),
            vi=float(variation_of_information(y, labels)),
            baseline_rss_kib=baseline_kib,
            peak_rss_kib=peak_rss_kib(),
            vm_hwm_kib=vm_hwm_kib(),
        )
    )


# -- parent ----------------------------------------------------------------------


def run_child(argv):
    """Run this script in a fresh interpreter; return its result dict."""
    completed = subprocess.run(
        [sys.executable, os.path.abspath(__file__), *argv],
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        sys.stdout.write(completed.stdout)
        raise SystemExit(f"child {argv} failed with exit code {completed.returncode}")
    for line in completed.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :])
    raise SystemExit(f"child {argv} printed no result")


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else 0.5 * (values[mid - 1] + values[mid])


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="N = 5,000 rankings, 2 warm-up and 3 timed sweeps",
    )
    parser.add_argument(
        "--n-rankings",
        type=int,
        default=None,
        help=f"number of rankings (default {N_RANKINGS}, quick 5000)",
    )
    parser.add_argument("--n-items", type=int, default=N_ITEMS)
    parser.add_argument("--n-clusters", type=int, default=N_CLUSTERS)
    parser.add_argument(
        "--centre-n-rankings",
        type=int,
        default=0,
        help="see make_mallows_mixture; 0 = uniform random centres",
    )
    parser.add_argument(
        "--samplers",
        nargs="*",
        default=["beta-gibbs", "slice-gibbs"],
        choices=["beta-gibbs", "slice-gibbs"],
    )
    parser.add_argument("--init-clusters", type=int, default=20)
    parser.add_argument(
        "--n-warmup",
        type=int,
        default=None,
        help="untimed-in-the-figure first sweeps (default 5, quick 2)",
    )
    parser.add_argument(
        "--n-iter",
        type=int,
        default=None,
        help="timed sweeps after warm-up (default 20, quick 3)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="fresh processes (chains with different seeds) per "
        "sampler; their timed sweeps are pooled",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--subcluster-threads",
        type=int,
        nargs="*",
        default=[],
        metavar="N",
        help="also time sampler='subcluster' (n_split_merge=1) with each of "
        "these numbers of OpenMP threads (threadpoolctl), the median over "
        "--repeats runs of the same chain",
    )
    parser.add_argument(
        "--subcluster-start",
        choices=["sequential", "auto"],
        default="sequential",
        help="the sub-cluster chain's start: sequential prediction on a sample "
        "(n_split_merge=1), or the estimator's defaults init='auto' and "
        "n_split_merge='auto' (one cluster, SUBCLUSTER_SPLIT_MERGE proposals a "
        "sweep)",
    )
    parser.add_argument(
        "--subcluster-workers",
        type=int,
        nargs="*",
        default=[],
        metavar="W",
        help="also time sampler='subcluster' with its rankings on a "
        "dask.distributed LocalCluster of W one-thread worker processes",
    )
    # internal: the child processes
    parser.add_argument("--generate", metavar="FILE.npz", help=argparse.SUPPRESS)
    parser.add_argument(
        "--one-config",
        choices=["beta-gibbs", "slice-gibbs", "subcluster"],
        help=argparse.SUPPRESS,
    )
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--data", metavar="FILE.npz", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.n_rankings is None:
        args.n_rankings = 5000 if args.quick else N_RANKINGS
    if args.n_warmup is None:
        args.n_warmup = 2 if args.quick else 5
    if args.n_iter is None:
        args.n_iter = 3 if args.quick else 20

    if args.generate:
        return generate(args)
    if args.one_config:
        return one_config(args)

    print_machine(
        "one core, one chain per run"
        + (
            "; subcluster: OpenMP threads as listed"
            if args.subcluster_threads
            else ""
        )
    )
    mean_length = sum((k + 1) * p for k, p in enumerate(LENGTH_PROBS))
    print(
        f"Synthetic college-applications shape: N = {args.n_rankings:,} rankings, "
        f"n = {args.n_items} items, {args.n_clusters} clusters (sizes ~ "
        f"{SIZE_RATIO}^k), lengths 1..{len(LENGTH_PROBS)} with probabilities "
        f"{LENGTH_PROBS} (mean {mean_length:.2f}), theta* {THETA_FIRST} -> "
        f"{THETA_LAST}; alpha = nu = {ALPHA:g}, r = 1, sigma_update='mh', "
        f"init_clusters={args.init_clusters}; {args.n_warmup} warm-up + "
        f"{args.n_iter} timed sweeps, {args.repeats} run(s) per sampler; seed "
        f"{args.seed}"
    )
    workdir = tempfile.mkdtemp(prefix="rankmix-bench-scale-")
    try:
        path = os.path.join(workdir, "data.npz")
        common = [
            "--n-rankings",
            str(args.n_rankings),
            "--n-items",
            str(args.n_items),
            "--n-clusters",
            str(args.n_clusters),
            "--init-clusters",
            str(args.init_clusters),
            "--n-warmup",
            str(args.n_warmup),
            "--n-iter",
            str(args.n_iter),
            "--subcluster-start",
            args.subcluster_start,
            "--centre-n-rankings",
            str(args.centre_n_rankings),
        ]
        gen = run_child(["--generate", path, "--seed", str(args.seed), *common])
        print(
            f"data generation: {gen['seconds']:.2f} s (make_mallows_mixture, own "
            f"process, peak RSS {gen['peak_rss_kib'] / 1024:.0f} MiB); X shape "
            f"{tuple(gen['shape'])}, mean length {gen['mean_length']:.2f}, cluster "
            f"sizes {gen['sizes_min']}..{gen['sizes_max']}"
        )
        print()
        runs = {}
        for sampler in args.samplers:
            for rep in range(args.repeats):
                runs.setdefault(sampler, []).append(
                    run_child(
                        [
                            "--one-config",
                            sampler,
                            "--data",
                            path,
                            "--seed",
                            str(args.seed + 1 + rep),
                            *common,
                        ]
                    )
                )
        subcluster_runs = {}
        for n_threads in args.subcluster_threads:
            for rep in range(args.repeats):
                subcluster_runs.setdefault(n_threads, []).append(
                    run_child(
                        [
                            "--one-config",
                            "subcluster",
                            "--threads",
                            str(n_threads),
                            "--data",
                            path,
                            "--seed",
                            str(args.seed + 1),
                            *common,
                        ]
                    )
                )
        for n_workers in args.subcluster_workers:
            for rep in range(args.repeats):
                subcluster_runs.setdefault(f"{n_workers} workers", []).append(
                    run_child(
                        [
                            "--one-config",
                            "subcluster",
                            "--workers",
                            str(n_workers),
                            "--data",
                            path,
                            "--seed",
                            str(args.seed + 1),
                            *common,
                        ]
                    )
                )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    header = (
        f"{'sampler':<12} {'setup s':>8} {'warm-up s/it':>13} "
        f"{'s/iter median [min, max]':>26} {'K end':>6} {'K>=1%':>6} "
        f"{'VI end':>7} {'RSS base':>9} {'peak RSS':>9} "
        f"{'500 it (min)':>12}"
    )
    print(header)
    print("-" * len(header))
    summary = {}
    for sampler, results in runs.items():
        timed = [s for r in results for s in r["timed"]]
        warm = [s for r in results for s in r["warmup"]]
        setup = median([r["prepare_seconds"] + r["construct_seconds"] for r in results])
        per_iter = median(timed)
        peak_mib = max(r["peak_rss_kib"] for r in results) / 1024
        base_mib = max(r["baseline_rss_kib"] for r in results) / 1024
        projected_min = (setup + PAPER_ITERATIONS * per_iter) / 60
        k_end = median([r["n_clusters"][-1] for r in results])
        k_big = median([r["n_substantial"] for r in results])
        vi_end = median([r["vi"] for r in results])
        warm_text = f"{median(warm):.3f}" if warm else "-"
        print(
            f"{sampler:<12} {setup:8.2f} {warm_text:>13} "
            f"{per_iter:9.3f} [{min(timed):6.3f}, {max(timed):6.3f}] "
            f"{k_end:>6g} {k_big:>6g} {vi_end:7.3f} {base_mib:6.0f} MiB "
            f"{peak_mib:5.0f} MiB {projected_min:12.1f}"
        )
        summary[sampler] = (per_iter, peak_mib, projected_min)
        hwm = [r["vm_hwm_kib"] for r in results if r["vm_hwm_kib"] is not None]
        if hwm and abs(max(hwm) / 1024 - peak_mib) > 1:
            print(f"{'':<12} (VmHWM {max(hwm) / 1024:.0f} MiB)")
    if subcluster_runs:
        print()
        start = (
            "init='sequential', n_split_merge=1"
            if args.subcluster_start == "sequential"
            else "init='auto', n_split_merge='auto': one cluster, "
            f"{SUBCLUSTER_SPLIT_MERGE} proposals"
        )
        print(
            f"sampler='subcluster' ({start}, sigma_update='mh'), one chain; "
            f"s/sweep: median over {args.repeats} run(s) of each run's median timed "
            "sweep"
        )
        header = (
            f"{'threads':>10} {'s/sweep median':>14} {'runs':>26} {'K end':>6} "
            f"{'VI end':>7} {'speed-up':>8} {'same draws':>10}"
        )
        print(header)
        print("-" * len(header))
        first = None
        for n_threads, results in subcluster_runs.items():
            per_run = [median(r["timed"]) for r in results]
            per_sweep = median(per_run)
            if first is None:
                first, digest = per_sweep, results[0]["labels_digest"]
            runs_text = ", ".join(f"{s:.3f}" for s in per_run)
            same = all(r["labels_digest"] == digest for r in results)
            print(
                f"{n_threads:>10} {per_sweep:14.3f} {runs_text:>26} "
                f"{results[0]['n_clusters'][-1]:>6} {results[0]['vi']:7.3f} "
                f"{first / per_sweep:8.2f} {'yes' if same else 'NO':>10}"
            )
        print(
            "same draws: the last sweep's labels equal the first row's run's "
            "(the same chain)."
        )
        for n_threads, results in subcluster_runs.items():
            trips = [r["round_trips"] for r in results if r.get("round_trips")]
            if trips:
                print(
                    f"{n_threads}: {median(trips):.1f} round trips to the workers "
                    "a sweep (over 5 sweeps after the timed ones)"
                )
    print()
    print(
        "setup: _prepare (prior normalisers) + chain construction (random initial "
        "clustering). s/iter: over the timed sweeps, after warm-up."
    )
    print(
        "K end: clusters after the last sweep; K>=1%: those with >= 1% of the "
        "rankings; VI end: to the true labels, after the last sweep (not converged)."
    )
    print(
        "RSS base: peak RSS after imports and loading the data; peak RSS: "
        "ru_maxrss of the sampler's own process at the end."
    )
    print(
        f"500 it: projected minutes for {PAPER_ITERATIONS} iterations "
        "(setup + 500 x median s/iter), one chain on one core."
    )

    print()
    print(
        f"Targets: <= {SECONDS_TARGET:g} s per Gibbs iteration, <= "
        f"{MEMORY_TARGET_GIB:g} GiB peak memory, {PAPER_ITERATIONS} iterations in "
        f"<= {PAPER_MINUTES_TARGET:g} min"
    )
    for sampler, (per_iter, peak_mib, projected_min) in summary.items():
        checks = []
        if sampler != "subcluster":
            ok = "PASS" if per_iter <= SECONDS_TARGET else "FAIL"
            checks.append(f"time {ok} ({per_iter:.3f} s/iter)")
        ok = "PASS" if peak_mib <= MEMORY_TARGET_GIB * 1024 else "FAIL"
        checks.append(f"memory {ok} ({peak_mib / 1024:.2f} GiB)")
        ok = "PASS" if projected_min <= PAPER_MINUTES_TARGET else "FAIL"
        checks.append(f"500 iterations {ok} ({projected_min:.1f} min)")
        print(f"  {sampler}: " + "; ".join(checks))
    if args.n_rankings != N_RANKINGS:
        print(
            f"  (N = {args.n_rankings:,}, not the paper's {N_RANKINGS:,}: the "
            "targets are for the full size)"
        )


if __name__ == "__main__":
    main()
