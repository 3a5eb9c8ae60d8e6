"""Wall time of a default fit's chains: one chain, two side by side, two in turn.

A default fit runs ``n_chains=2`` chains; with ``n_jobs=None`` they run side by
side on the cores OpenMP may use (at most ``n_chains``), in threads of this
process. For each estimator, on data of its kind, this prints the median wall
time of ``--repeats`` fits of ``n_iter`` sweeps with one chain, with two chains
and the default ``n_jobs``, and with two chains and ``n_jobs=1`` (one after
the other), and the ratios to one chain. **Target** (issue "One chain on every
core"): two chains on a two-core machine take well under twice one chain's wall
time. The draws do not depend on ``n_jobs`` (the test suite checks it).

Usage::

    python benchmarks/bench_parallel_chains.py [--repeats 3] [--n-iter 60]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import time
import warnings

import numpy as np
from _machine import print_machine
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPGaussianClustering, DPMallowsClustering, DPMultinomialClustering
from rankmix.datasets import make_mallows_mixture


def datasets():
    """(name, estimator, X): 3,000 vectors, 2,000 rankings, 2,000 count rows."""
    rng = np.random.default_rng(0)
    centres = rng.normal(0.0, 4.0, size=(6, 5))
    vectors = np.repeat(centres, 500, axis=0) + rng.normal(size=(3000, 5))
    rankings = make_mallows_mixture(dataset=1, random_state=0)[0][:2000]
    profiles = rng.dirichlet(np.full(50, 0.2), size=5)
    counts = np.vstack([rng.multinomial(40, profiles[k % 5]) for k in range(2000)])
    return [
        ("DPGaussianClustering", DPGaussianClustering, vectors),
        ("DPMallowsClustering", DPMallowsClustering, rankings),
        ("DPMultinomialClustering", DPMultinomialClustering, counts),
    ]


def median_seconds(Estimator, X, repeats, **params):
    times = []
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            start = time.perf_counter()
            Estimator(random_state=0, **params).fit(X)
            times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-iter", type=int, default=60)
    args = parser.parse_args()
    print_machine(f"{args.repeats} repeat(s), {args.n_iter} sweeps per chain")
    common = dict(n_iter=args.n_iter, burn_in=args.n_iter // 2)
    print(f"{'estimator':<25} {'1 chain s':>10} {'2, default':>11} {'ratio':>6} "
          f"{'2, n_jobs=1':>12} {'ratio':>6}")
    for name, Estimator, X in datasets():
        one = median_seconds(Estimator, X, args.repeats, n_chains=1, **common)
        together = median_seconds(Estimator, X, args.repeats, n_chains=2, **common)
        in_turn = median_seconds(
            Estimator, X, args.repeats, n_chains=2, n_jobs=1, **common
        )
        print(f"{name:<25} {one:10.2f} {together:11.2f} {together / one:6.2f} "
              f"{in_turn:12.2f} {in_turn / one:6.2f}")


if __name__ == "__main__":
    main()
