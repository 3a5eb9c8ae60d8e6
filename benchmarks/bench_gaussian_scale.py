"""Time and memory of DPGaussianClustering against the number of points.

Liang et al.'s synthetic setting at d = 10 with 10 clusters (means ~ N(0, 2 I),
identity covariances) at N = 10^4, 10^5 and 10^6 points. Each N runs in a fresh
Python process, so that its peak resident memory (``ru_maxrss``) is its own:

1. draw the data (float64, 80 N bytes) and note the resident memory;
2. build the chain DPGaussianClustering runs (``covariance_type``, default prior,
   default sampler gibbs+split-merge, sequential-prediction start; the start is
   timed apart), then time ``--n-sweeps`` sweeps (default 3): median seconds
   per sweep, and per point;
3. the resident memory after the sweeps minus that after step 1 (what the
   sampler holds), and the peak resident memory of the whole process.

The targets are linear growth: seconds per sweep and the sampler's memory
should grow by about 10x from one N to the next. The state is O(N + K d^2):
labels and a few index arrays of N entries and one sufficient statistic and
Cholesky factor per cluster; there is no N x N array.

A fit also keeps ``label_samples_``, n_draws x N integers: with the defaults
(2 chains, 100 sweeps after burn-in, thin 2: 100 draws) 800 bytes per point,
0.8 GB at N = 10^6, linear in N; fewer draws (``thin``) shrink it.

Usage::

    python benchmarks/bench_gaussian_scale.py [--quick] [--sizes 10000 100000 1000000]
        [--n-sweeps 3] [--covariance-type full] [--seed 0]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import json
import os
import subprocess
import sys

from _machine import print_machine

D, K = 10, 10

CHILD = r"""
import json, os, resource, sys, time
for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[v] = "1"
import numpy as np
from _liang import chain_factory, make_data
from rankmix import DPGaussianClustering

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

n, d, k, n_sweeps, covariance_type, seed = json.loads(sys.argv[1])
X = make_data(d, k, n, seed)[0]
after_data = rss_mib()
model = DPGaussianClustering(covariance_type=covariance_type, n_chains=1,
                             random_state=seed)
make_chain, X = chain_factory(model, X)
start = time.perf_counter()
chain = make_chain(np.random.PCG64(seed))
setup = time.perf_counter() - start
times = []
for _ in range(n_sweeps):
    start = time.perf_counter()
    chain.sweep()
    times.append(time.perf_counter() - start)
after_sweeps = rss_mib()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(dict(setup=setup, times=times, k=chain.n_clusters,
                      added=after_sweeps - after_data, peak=peak)))
"""


def run_child(n, args):
    arguments = json.dumps([n, D, K, args.n_sweeps, args.covariance_type, args.seed])
    child = subprocess.run(
        [sys.executable, "-c", CHILD, arguments],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    )
    if child.returncode != 0:
        raise RuntimeError(f"the run at N={n} failed:\n{child.stderr}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10^4 and 10^5")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000]
    )
    parser.add_argument("--n-sweeps", type=int, default=3)
    parser.add_argument("--covariance-type", default="full", choices=["full", "diag"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.quick:
        args.sizes = [10_000, 100_000]
    print_machine(
        f"one core, one chain; d={D}, K={K}, covariance_type="
        f"'{args.covariance_type}', default prior and sampler, sequential start"
    )
    header = (
        f"{'N':>10} {'start s':>8} {'s/sweep':>8} {'[min, max]':>17} {'us/point':>9}"
        f" {'K':>4} {'peak MiB':>9} {'added MiB':>10} {'x time':>7} {'x mem':>6}"
    )
    print(header)
    print("-" * len(header))
    previous = None
    for n in args.sizes:
        r = run_child(n, args)
        times = sorted(r["times"])
        median = times[len(times) // 2]
        added = r["added"]
        growth = (
            f"{median / previous[0]:7.1f} {added / previous[1]:6.1f}"
            if previous
            else f"{'-':>7} {'-':>6}"
        )
        print(
            f"{n:>10,} {r['setup']:8.2f} {median:8.3f} "
            f"[{times[0]:7.3f}, {times[-1]:7.3f}] {1e6 * median / n:9.2f} "
            f"{r['k']:>4} {r['peak']:9.1f} {added:10.1f} {growth}",
            flush=True,
        )
        previous = (median, added)
    print(
        "x time, x mem: ratios to the previous row (linear growth: the ratio of "
        "the sizes). 'added MiB' = resident memory minus that after drawing "
        "the data, measured after the sweeps."
    )


if __name__ == "__main__":
    main()
