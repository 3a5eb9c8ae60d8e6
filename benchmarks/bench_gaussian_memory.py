"""What a fitted DPGaussianClustering holds: the memory of its kept draws.

Liang et al.'s setting at d = 80 with K = 40 clusters (means ~ N(0, 2 I),
identity covariances), the default ``covariance_type="full"``, 100 kept draws
(one chain: ``n_iter = burn_in + 100``, ``thin = 1``). The memory of the draws
does not depend on N (only ``label_samples_`` does, one byte per row and draw
for up to 128 clusters), so the fit runs at a smaller N than the N = 10^5 it
reports for. The same fit runs twice, each in a fresh process: as rankmix
keeps its draws (about 20 of them keep their K x d x d predictive factors), and
with every draw keeping them (as before 2026-11-26; ``--keep-all-factors``
runs that one alone). Printed for each: the bytes of every kept draw's arrays,
what they would be with a K x d x d array pair per draw (the covariances and
the predictive factors both kept, as before 2026-11-24), ``label_samples_`` at
N = 10^5, and the peak RSS of the process.

Usage::

    python benchmarks/bench_gaussian_memory.py [--n-samples 10000] [--d 80]
        [--n-clusters 40] [--burn-in 10] [--n-draws 100] [--quick]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import resource
import subprocess
import sys
import time
import warnings

import numpy as np
from _machine import print_machine

from rankmix import DPGaussianClustering
from rankmix import _gaussian as gaussian_module

MIB = 2.0**20


def draws_bytes(model):
    """Bytes of the arrays in every kept draw's parameter tuple."""
    return sum(
        value.nbytes
        for parameters in model._draws
        for value in parameters
        if isinstance(value, np.ndarray)
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-samples", type=int, default=10_000)
    parser.add_argument("--d", type=int, default=80)
    parser.add_argument("--n-clusters", type=int, default=40)
    parser.add_argument("--burn-in", type=int, default=10)
    parser.add_argument("--n-draws", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="N = 2,000, 20 draws")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--keep-all-factors",
        action="store_true",
        help="run only the fit whose every draw keeps its predictive factors",
    )
    parser.add_argument("--kept", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.n_samples, args.n_draws, args.burn_in = 2000, 20, 5
    if args.kept or args.keep_all_factors:
        measure(args)
        return
    print_machine("one chain, one core; each fit in a fresh process")
    for flag in ("--kept", "--keep-all-factors"):
        subprocess.run([sys.executable, __file__, *sys.argv[1:], flag], check=True)


def measure(args):
    """Fit once in this process and print what the fit holds."""
    if args.keep_all_factors:
        gaussian_module.PREDICTIVE_DRAWS = 10**9
    rng = np.random.default_rng(args.seed)
    means = rng.normal(scale=np.sqrt(2.0), size=(args.n_clusters, args.d))
    X = means[rng.integers(args.n_clusters, size=args.n_samples)]
    X += rng.standard_normal(X.shape)
    model = DPGaussianClustering(
        n_iter=args.burn_in + args.n_draws,
        burn_in=args.burn_in,
        thin=1,
        n_chains=1,
        random_state=args.seed,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    seconds = time.perf_counter() - start
    held = draws_bytes(model)
    k_mean = np.mean([len(p[-1]) for p in model._draws])
    both = len(model._draws) * k_mean * 2 * args.d**2 * 8
    labels_at_1e5 = len(model._draws) * 100_000 * model.label_samples_.itemsize
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    which = "every draw's factors kept" if args.keep_all_factors else "as kept now"
    n_whole = len(model._predictive_draws())
    print(
        f"\n{which}: N = {args.n_samples}, d = {args.d}, K = {args.n_clusters}, "
        f"covariance_type='full', {len(model._draws)} kept draws ({n_whole} with "
        f"factors), fit {seconds:.1f} s, mean K {k_mean:.1f}"
    )
    print(f"kept draws' arrays:                      {held / MIB:8.1f} MiB")
    print(f"  with covariances and factors per draw: {both / MIB:8.1f} MiB")
    print(f"label_samples_ at N = 10^5:              {labels_at_1e5 / MIB:8.1f} MiB")
    print(f"peak RSS of this process:                {peak:8.1f} MiB")


if __name__ == "__main__":
    main()
