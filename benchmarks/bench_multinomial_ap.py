"""Liang et al. (2007) Fig. 3(j), scaled down: log p(c, X) against time on AP.

DPMultinomialClustering's samplers (gibbs, gibbs+split-merge, gibbs+permutation,
gibbs+split-merge+permutation) from the sequential start and from one cluster, one
chain each, alpha resampled (Gamma(1, 1) prior). Prints, per sampler and start, the
log joint and the number of clusters after each sweep, with the elapsed time.

    python benchmarks/bench_multinomial_ap.py [--sweeps 10] [--docs 2246]
"""

import argparse
import time
from pathlib import Path

import numpy as np
from scipy import sparse

from rankmix._collapsed_chain import CollapsedChain
from rankmix._multinomial_kernels import DirichletMultinomial

AP = Path(__file__).resolve().parents[2] / "shared" / "data" / "ap" / "ap.dat"


def _read_lda_c(path, n_features=10473):
    """TO BE REPLACED by rankmix.datasets.load_lda_c: lda-c lines, 0-based ids."""
    rows, cols, vals = [], [], []
    for r, line in enumerate(Path(path).read_text().splitlines()):
        for pair in line.split()[1:]:
            k, v = pair.split(":")
            rows.append(r), cols.append(int(k)), vals.append(int(v))
    return sparse.csr_matrix((vals, (rows, cols)), shape=(r + 1, n_features))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--docs", type=int, default=2246)
    args = parser.parse_args()
    X = _read_lda_c(AP)[: args.docs]
    model = DirichletMultinomial(
        np.full(X.shape[1], 0.1), np.asarray(X.sum(0)).ravel(), int(X.sum())
    )
    family = model.family(X)
    samplers = {
        "gibbs": (True, 0, None),
        "gibbs+split-merge": (True, 10, None),
        "gibbs+perm": (True, 0, "beta"),
        "gibbs+split-merge+perm": (True, 10, "beta"),
    }
    print(f"AP: {X.shape[0]} documents, {X.shape[1]} words, nnz {X.nnz}")
    for start in ("sequential", "one cluster"):
        for name, (gibbs, n_sm, perm) in samplers.items():
            t0 = time.perf_counter()
            chain = CollapsedChain(
                family,
                1.0,
                gibbs,
                n_sm,
                (1.0, 1.0),
                1,
                np.random.PCG64(0),
                permutation=perm,
                burn_in=args.sweeps,
                sequential_init=start == "sequential",
            )
            line = []
            for _ in range(args.sweeps):
                chain.sweep()
                line.append(
                    f"{time.perf_counter() - t0:.1f}s:{chain.log_joint:.0f}"
                    f"/K{chain.n_clusters}"
                )
            print(f"{start:12s} {name:24s} " + " ".join(line), flush=True)
    chain = CollapsedChain(
        family, 1.0, True, 0, None, 1, np.random.PCG64(1), sequential_init=True
    )
    t0 = time.perf_counter()
    chain.sweep(5)
    print(
        f"Gibbs sweep: {(time.perf_counter() - t0) / 5 * 1000:.0f} ms "
        f"({chain.n_clusters} clusters)"
    )


if __name__ == "__main__":
    main()
