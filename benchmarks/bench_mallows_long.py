"""Full rankings of many items: one sub-cluster chain on 1 and more threads.

With full rankings of hundreds of items the work of ``DPMallowsClustering(
sampler="subcluster")`` is not its label step but its clusters' compact
statistics (up to n^2 (n - 1) precedence pairs a cluster), which the
split-merge proposals build for each side and their union, and the parameter
step for each cluster. This script fits ``make_mallows_mixture(n_clusters=4,
n_per_cluster=1000, n_items=300, t=300, theta=0.05, centre_n_rankings=0)``
(full rankings, uniformly random centres) with the sub-cluster sampler, one
chain of ``--n-iter`` sweeps (half burn-in) from its default start, on each
number of OpenMP threads of ``--threads``, each fit in a fresh process so that
its peak resident memory is its own. It prints, for each number of threads, the
median fit time over ``--repeats`` runs [min, max], the speed-up against the
first number, the clusters at the end, the ARI of ``labels_`` to the true
clusters, the peak resident memory, and whether the draws (``label_samples_``
and the log joint's trace) are those of the first number's fit.

With ``--workers W ...`` it also fits the rankings as a dask array of W chunks
on a ``LocalCluster`` of W one-thread worker processes (``dask.distributed``),
the client on one thread, and prints the same figures, the client's peak
memory and the workers' largest.

Usage::

    python benchmarks/bench_mallows_long.py [--threads 1 2] [--workers 2]
        [--repeats 3] [--n-items 300] [--n-per-cluster 1000] [--n-iter 4]
        [--seed 0]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time

import numpy as np
from _machine import print_machine


def one_fit(args):
    """Fit once on ``args.one_run`` threads, or with ``args.on_workers``
    workers; print a JSON line of the figures."""
    from sklearn.metrics import adjusted_rand_score
    from threadpoolctl import threadpool_limits

    from rankmix import DPMallowsClustering
    from rankmix.datasets import make_mallows_mixture

    def peak_gib():
        # ru_maxrss is in KiB on Linux
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    X, y, _ = make_mallows_mixture(
        n_clusters=args.n_clusters, n_per_cluster=args.n_per_cluster,
        n_items=args.n_items, t=args.n_items, theta=args.theta,
        centre_n_rankings=0, random_state=args.seed,
    )
    model = DPMallowsClustering(
        sampler="subcluster", n_iter=args.n_iter, burn_in=args.n_iter // 2,
        n_chains=1, n_jobs=1, random_state=args.seed,
    )
    workers_gib = None
    if args.on_workers:
        import dask.array as da
        from distributed import Client, LocalCluster

        with (
            LocalCluster(n_workers=args.on_workers, threads_per_worker=1,
                         processes=True, dashboard_address=None) as cluster,
            Client(cluster) as client,
            threadpool_limits(1, user_api="openmp"),
        ):
            rows = -(-len(X) // args.on_workers)
            start = time.perf_counter()
            model.fit(da.from_array(X, chunks=(rows, X.shape[1])))
            seconds = time.perf_counter() - start
            workers_gib = max(client.run(peak_gib).values())
    else:
        with threadpool_limits(args.one_run, user_api="openmp"):
            start = time.perf_counter()
            model.fit(X)
            seconds = time.perf_counter() - start
    draws = hashlib.sha256(
        model.label_samples_.tobytes() + model.trace_["log_joint"].tobytes()
    ).hexdigest()
    print(json.dumps({
        "seconds": seconds,
        "n_clusters": int(model.n_clusters_),
        "ari": adjusted_rand_score(y, model.labels_),
        "peak_gib": peak_gib(),
        "workers_gib": workers_gib,
        "draws": draws,
    }))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--workers", type=int, nargs="*", default=[])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-items", type=int, default=300)
    parser.add_argument("--n-clusters", type=int, default=4)
    parser.add_argument("--n-per-cluster", type=int, default=1000)
    parser.add_argument("--theta", type=float, default=0.05)
    parser.add_argument("--n-iter", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one-run", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--on-workers", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_run is not None:
        one_fit(args)
        return

    print_machine(
        f"{args.n_clusters} x {args.n_per_cluster} full rankings of "
        f"{args.n_items} items (theta = {args.theta}), sampler='subcluster', "
        f"{args.n_iter} sweeps, one chain; {args.repeats} runs a thread count, "
        "each in a fresh process"
    )
    child = [sys.executable, __file__] + [
        f"--{name.replace('_', '-')}={value}"
        for name, value in vars(args).items()
        if name not in ("threads", "workers", "repeats", "one_run", "on_workers")
    ]
    configs = [(f"{n} thread{'s' * (n > 1)}", [f"--one-run={n}"]) for n in args.threads]
    configs += [
        (f"{w} workers", ["--one-run=1", f"--on-workers={w}"]) for w in args.workers
    ]
    runs = {name: [] for name, _ in configs}
    for _ in range(args.repeats):   # the configurations alternate
        for name, flags in configs:
            out = subprocess.run(child + flags, capture_output=True, text=True,
                                 check=True)
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))

    first = runs[configs[0][0]]
    base = np.median([run["seconds"] for run in first])
    print(f"{'':>10} {'fit s median [min, max]':>26} {'speed-up':>8} "
          f"{'K':>4} {'ARI':>6} {'peak GiB':>8} {'workers':>8}  same draws")
    for name, done in runs.items():
        seconds = [run["seconds"] for run in done]
        median = np.median(seconds)
        same = all(run["draws"] == first[0]["draws"] for run in done)
        spread = f"{median:.2f} [{min(seconds):.2f}, {max(seconds):.2f}]"
        workers = [run["workers_gib"] for run in done if run["workers_gib"]]
        print(f"{name:>10} {spread:>26} {f'{base / median:.2f}x':>8} "
              f"{done[0]['n_clusters']:>4} {done[0]['ari']:>6.3f} "
              f"{max(run['peak_gib'] for run in done):>8.2f} "
              f"{f'{max(workers):.2f}' if workers else '':>8}  "
              f"{'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
