"""Time :func:`rankmix.metrics.variation_of_information` and the point estimate.

The reference is what a user would otherwise write with scikit-learn and
SciPy: ``VI = H(U) + H(V) - 2 MI(U, V)`` with
:func:`sklearn.metrics.mutual_info_score` and the entropies of the label
counts from :func:`scipy.stats.entropy`.  Both are timed on the same labels
in the same run; the printed ratio is reference time / rankmix time (above 1
means rankmix is faster).

Last, the point estimate every fit computes (the draw with the least mean VI
to the others, all pairs of ``--draws`` draws of ``--draw-samples`` points
around one clustering of 30 clusters, as a chain gives them, in int8 as a fit
keeps them) is timed on each number of OpenMP threads of ``--threads``, with
its speed-up over the first, and its peak memory above the draws is printed
(NumPy's arrays, by tracemalloc).

Usage::

    python benchmarks/bench_vi.py [--n-samples 1000000] [--n-clusters 1000]
        [--repeats 7] [--draws 100] [--draw-samples 100000] [--threads 1 2]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import platform
import time
import tracemalloc

import numpy as np
import scipy
import sklearn
from scipy.stats import entropy
from sklearn.metrics import mutual_info_score
from threadpoolctl import threadpool_limits

from rankmix._consensus import vi_consensus
from rankmix.metrics import variation_of_information


def sklearn_vi(labels_true, labels_pred):
    """VI by the scikit-learn + SciPy route."""
    h_true = entropy(np.unique(labels_true, return_counts=True)[1])
    h_pred = entropy(np.unique(labels_pred, return_counts=True)[1])
    mi = mutual_info_score(labels_true, labels_pred)
    return max(h_true + h_pred - 2.0 * mi, 0.0)


def time_call(func, labels_true, labels_pred, repeats):
    """Return the value and the wall-clock times of ``repeats`` calls.

    One untimed call first, so that imports and first-touch page faults are
    not charged to the first repeat.
    """
    value = func(labels_true, labels_pred)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func(labels_true, labels_pred)
        times.append(time.perf_counter() - start)
    return value, np.array(times)


def run_case(name, labels_true, labels_pred, repeats, with_reference=True):
    vi, ours = time_call(variation_of_information, labels_true, labels_pred, repeats)
    line = (
        f"{name:<34} rankmix median {np.median(ours) * 1e3:8.1f} ms"
        f" (min {ours.min() * 1e3:7.1f})"
    )
    if with_reference:
        vi_ref, ref = time_call(sklearn_vi, labels_true, labels_pred, repeats)
        line += (
            f" | sklearn median {np.median(ref) * 1e3:8.1f} ms"
            f" (min {ref.min() * 1e3:7.1f})"
            f" | ratio {np.median(ref) / np.median(ours):5.1f}x"
            f" | |diff| {abs(vi - vi_ref):.1e}"
        )
    else:
        line += " | sklearn route: n/a (mixed types are not sortable)"
    print(f"{line} | VI {vi:.6f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-samples", type=int, default=10**6)
    parser.add_argument("--n-clusters", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--n-samples-strings",
        type=int,
        default=10**5,
        help="number of string and object labels",
    )
    parser.add_argument(
        "--many-clusters",
        type=int,
        default=10**5,
        help="number of clusters in the many-clusters case (0 to skip)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--draw-samples", type=int, default=10**5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()

    print(
        f"numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-learn {sklearn.__version__}, Python {platform.python_version()}; "
        f"{args.repeats} repeats"
    )
    rng = np.random.default_rng(args.seed)
    n, k = args.n_samples, args.n_clusters

    labels_true = rng.integers(0, k, n)
    labels_pred = rng.integers(0, k, n)
    run_case(f"int64, N={n:.0e}, K={k}", labels_true, labels_pred, args.repeats)

    if args.many_clusters:
        many = args.many_clusters
        labels_true = rng.integers(0, many, n)
        labels_pred = rng.integers(0, many, n)
        run_case(f"int64, N={n:.0e}, K={many}", labels_true, labels_pred, args.repeats)

    n_str = args.n_samples_strings
    names = np.array([f"cluster-{i:06d}" for i in range(k)])
    labels_true = names[rng.integers(0, k, n_str)]
    labels_pred = names[rng.integers(0, k, n_str)]
    run_case(f"str, N={n_str:.0e}, K={k}", labels_true, labels_pred, args.repeats)

    # Tuples, strings, ints and None: no total order, so np.unique fails.
    kinds = [lambda i: (i, "a"), str, int]
    pool = np.empty(k, dtype=object)
    pool[:] = [kinds[i % 3](i) for i in range(k)]
    pool[0] = None
    labels_true = pool[rng.integers(0, k, n_str)]
    labels_pred = pool[rng.integers(0, k, n_str)]
    run_case(
        f"mixed objects, N={n_str:.0e}, K={k}",
        labels_true,
        labels_pred,
        args.repeats,
        with_reference=False,
    )

    run_point_estimate(rng, args.draws, args.draw_samples, args.threads, args.repeats)


def run_point_estimate(rng, n_draws, n_samples, threads, repeats):
    """Median time of ``vi_consensus`` on each number of threads."""
    base = rng.integers(0, 30, n_samples)
    draws = np.tile(base, (n_draws, 1))
    for draw in draws:  # each draw moves 2% of the points
        moved = rng.integers(0, n_samples, n_samples // 50)
        draw[moved] = rng.integers(0, 32, len(moved))
    draws = draws.astype(np.int8)  # as a fit stores draws of up to 128 clusters
    medians = []
    for n_threads in threads:
        with threadpool_limits(n_threads, user_api="openmp"):
            best, times = time_call(lambda d, _: vi_consensus(d), draws, None, repeats)
        medians.append(np.median(times))
        print(
            f"point estimate, {n_draws} draws x N={n_samples:.0e}, {n_threads} "
            f"thread(s): median {medians[-1]:.3f} s (min {times.min():.3f})"
            f" | speed-up {medians[0] / medians[-1]:4.2f}x | draw {best}",
            flush=True,
        )
    tracemalloc.start()
    vi_consensus(draws)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(
        f"point estimate memory: peak {peak / 2**20:.1f} MiB above the draws' "
        f"{draws.nbytes / 2**20:.1f} MiB (int8)"
    )


if __name__ == "__main__":
    main()
