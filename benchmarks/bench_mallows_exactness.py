"""How far each sampler lands from the exact posterior, on a tiny enumerable problem.

Data: n = 4 items, five rankings of mixed lengths

    [0, 1, 2, 3], [0, 1, 3, 2], [3, 2, 1, 0], [3, 2], [1, 0]

with alpha = nu = r = 1. The exact posterior over the Bell(5) = 52 clusterings is
enumerated by ``tests/_dp_reference.py`` (sums over the 4! central rankings,
quadrature over theta; it never imports rankmix).

Each of the four combinations sampler x sigma_update runs
``DPMallowsClustering(n_iter=20000, burn_in=1000, thin=1, n_chains=2,
init_clusters=2)`` (38,000 kept draws) for ``--replicates`` seeds. Printed for each:
the largest absolute error of the co-clustering matrix P(c_i = c_j | X), the total
variation (TV) distance of the distribution of the number of clusters, and the TV
distance over the 52 clusterings, against the exact posterior.

Slice-Gibbs with sigma_update="mh" is an exact MCMC: its distances are pure Monte
Carlo error of correlated draws. A second reference is the same figures for the
same number of INDEPENDENT draws from the exact posterior (the floor any sampler
of that length can reach). Beta-Gibbs (approximate by design) and the plain
stagewise sigma rule (not exact, see ``DPMallowsClustering`` Notes) land further
away when their bias exceeds that noise.

Usage::

    python benchmarks/bench_mallows_exactness.py [--quick] [--replicates 3]
        [--n-iter 20000] [--burn-in 1000] [--iid-repeats 50] [--seed 0]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import sys
import time
import warnings

import numpy as np
from _machine import print_machine

from rankmix import DPMallowsClustering

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
from tests import _dp_reference as dpref  # noqa: E402

X_TINY = np.array(
    [[0, 1, 2, 3], [0, 1, 3, 2], [3, 2, 1, 0], [3, 2, -1, -1], [1, 0, -1, -1]]
)
N_ITEMS = 4
ALPHA = NU = R = 1.0
COMBINATIONS = [
    ("slice-gibbs", "mh"),
    ("slice-gibbs", "stagewise"),
    ("beta-gibbs", "mh"),
    ("beta-gibbs", "stagewise"),
]


class Exact:
    """The enumerated posterior and the distances of draws to it."""

    def __init__(self):
        self.posterior = dpref.exact_partition_posterior(X_TINY, N_ITEMS, ALPHA, NU, R)
        self.partitions = list(self.posterior)
        self.probs = np.array([self.posterior[c] for c in self.partitions])
        self.index = {c: i for i, c in enumerate(self.partitions)}
        self.cocluster = dpref.coclustering_matrix(self.posterior)
        self.k_dist = dpref.n_clusters_distribution(self.posterior)
        self.label_matrix = np.array(self.partitions)

    def distances(self, label_samples):
        """(max |co-clustering error|, TV of K, TV over partitions) of draws."""
        freq = np.zeros(len(self.partitions))
        for c, p in dpref.empirical_partition_distribution(label_samples).items():
            freq[self.index[c]] = p
        return self.distances_from_frequencies(freq)

    def distances_from_frequencies(self, freq):
        labels = self.label_matrix
        same = (labels[:, :, None] == labels[:, None, :]).astype(float)
        cocluster = np.tensordot(freq, same, axes=1)
        k = labels.max(axis=1) + 1
        k_dist = np.bincount(k, weights=freq, minlength=len(self.k_dist))
        return (
            float(np.abs(cocluster - self.cocluster).max()),
            0.5 * float(np.abs(k_dist - self.k_dist).sum()),
            0.5 * float(np.abs(freq - self.probs).sum()),
        ), k_dist


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--quick", action="store_true", help="3,000 sweeps per chain, 1 replicate"
    )
    parser.add_argument(
        "--n-iter",
        type=int,
        default=None,
        help="sweeps per chain (default 20000, quick 3000)",
    )
    parser.add_argument(
        "--burn-in",
        type=int,
        default=None,
        help="discarded sweeps (default 1000, quick 300)",
    )
    parser.add_argument("--n-chains", type=int, default=2)
    parser.add_argument("--init-clusters", type=int, default=2)
    parser.add_argument(
        "--replicates",
        "--repeats",
        dest="replicates",
        type=int,
        default=None,
        help="seeds per combination; distances are the median over "
        "them, fit times median [min, max] (default 3, quick 1)",
    )
    parser.add_argument(
        "--iid-repeats",
        type=int,
        default=50,
        help="repetitions of the independent-draws reference",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.n_iter is None:
        args.n_iter = 3000 if args.quick else 20000
    if args.burn_in is None:
        args.burn_in = 300 if args.quick else 1000
    if args.replicates is None:
        args.replicates = 1 if args.quick else 3

    print_machine("one core (n_jobs=1)")
    n_draws = args.n_chains * (args.n_iter - args.burn_in)
    print(
        f"Exact tiny problem: n = {N_ITEMS}, N = {len(X_TINY)} rankings, alpha = nu "
        f"= r = 1; n_iter={args.n_iter}, burn_in={args.burn_in}, thin=1, "
        f"n_chains={args.n_chains}, init_clusters={args.init_clusters} ({n_draws:,} "
        f"draws per fit); {args.replicates} replicate(s); seed {args.seed}"
    )
    start = time.perf_counter()
    exact = Exact()
    print(
        f"exact posterior: {len(exact.partitions)} clusterings enumerated in "
        f"{time.perf_counter() - start:.2f} s"
    )
    print()

    results, k_pooled = {}, {}
    for sampler, update in COMBINATIONS:
        for rep in range(args.replicates):
            model = DPMallowsClustering(
                alpha=ALPHA,
                nu=NU,
                r=R,
                sampler=sampler,
                sigma_update=update,
                n_iter=args.n_iter,
                burn_in=args.burn_in,
                thin=1,
                n_chains=args.n_chains,
                n_jobs=1,
                init_clusters=args.init_clusters,
                random_state=args.seed + rep,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                model.fit(X_TINY)
                seconds = time.perf_counter() - start
            dist, k_dist = exact.distances(model.label_samples_)
            results.setdefault((sampler, update), []).append((*dist, seconds))
            k_pooled.setdefault((sampler, update), []).append(k_dist)

    # Independent draws from the exact posterior, as many as one fit keeps.
    rng = np.random.default_rng(args.seed)
    iid = np.array(
        [
            exact.distances_from_frequencies(
                rng.multinomial(n_draws, exact.probs) / n_draws
            )[0]
            for _ in range(args.iid_repeats)
        ]
    )

    header = (
        f"{'sampler':<12} {'sigma':<10} {'max|cocl err|':>14} "
        f"{'TV(K)':>8} {'TV(partition)':>14} {'x exact-MCMC':>13} "
        f"{'fit s median [min, max]':>25}"
    )
    print(header)
    print("-" * len(header))
    reference_tv = np.median([r[2] for r in results["slice-gibbs", "mh"]])
    for sampler, update in COMBINATIONS:
        runs = np.array(results[sampler, update])
        med = np.median(runs, axis=0)
        secs = runs[:, 3]
        ratio = med[2] / reference_tv if reference_tv > 0 else float("nan")
        print(
            f"{sampler:<12} {update:<10} {med[0]:14.4f} {med[1]:8.4f} "
            f"{med[2]:14.4f} {ratio:13.1f} {np.median(secs):9.2f} "
            f"[{secs.min():6.2f}, {secs.max():6.2f}]"
        )
    iid_med = np.median(iid, axis=0)
    iid_q95 = np.quantile(iid, 0.95, axis=0)
    print(
        f"{'iid exact':<12} {'median':<10} {iid_med[0]:14.4f} {iid_med[1]:8.4f} "
        f"{iid_med[2]:14.4f} {iid_med[2] / reference_tv:13.2f}"
    )
    print(
        f"{'iid exact':<12} {'95%':<10} {iid_q95[0]:14.4f} {iid_q95[1]:8.4f} "
        f"{iid_q95[2]:14.4f} {iid_q95[2] / reference_tv:13.2f}"
    )
    print()
    print(
        "Distances to the exact posterior, median over replicates. 'x exact-MCMC': "
        "TV(partition) / that of slice-gibbs + mh (the exact sampler: pure Monte "
        "Carlo error)."
    )
    print(
        f"iid exact: {n_draws:,} independent draws from the exact posterior, "
        f"median and 95% quantile over {args.iid_repeats} repetitions (the Monte "
        "Carlo floor for that many draws)."
    )

    print()
    n_max = len(exact.k_dist) - 1
    print("P(number of clusters = K | X), draws pooled over replicates:")
    head = f"{'':<24}" + "".join(f"{'K=' + str(k):>9}" for k in range(1, n_max + 1))
    print(head)
    print(f"{'exact':<24}" + "".join(f"{p:9.4f}" for p in exact.k_dist[1:]))
    for sampler, update in COMBINATIONS:
        k_dist = np.mean(k_pooled[sampler, update], axis=0)
        print(
            f"{sampler + ' + ' + update:<24}" + "".join(f"{p:9.4f}" for p in k_dist[1:])
        )


if __name__ == "__main__":
    main()
