"""MNIST with a fixed covariance: Fig. 3(i) and 3(k)-(l) of Liang, Jordan & Taskar 2007.

Figure 3(i) (burn-in). Liang et al. take 10,000 MNIST digits, normalise them,
reduce them to 50 dimensions by PCA, fix the covariance of every cluster to 16 I
and plot log p(c, X) against time for GIBBS, GIBBS+SPLITMERGE, GIBBS+PERM and
GIBBS+SPLITMERGE+PERM; the text says only that "using permutation moves
improves performance" (the figure's values are not given in the text). This
script does the same with ``DPGaussianClustering(covariance_type="fixed",
covariance_prior=16.0)``:

* 10,000 training digits drawn at random (``--seed``), pixels scaled to
  [0, 1] and "normalised" as each pixel standardised to mean 0 and variance 1
  over the sample (constant pixels left at 0), then the first 50 principal
  components. (On this scale the components' variances run from about 40 down
  to 3, so that 16 I is a cluster of digit-sized spread; on [0, 1] pixels all
  50 together have a variance of 44 and 16 I would put every digit in one
  cluster.)
* the default prior otherwise: m_0 the data mean, kappa_0 = 0.1 (the means
  ~ N(m_0, 160 I)), alpha = 1, ``n_split_merge=10``;
* the permutation move in its burn-in form throughout (random projections,
  beta approximation, beam), as in ``bench_gaussian_burn_in.py``;
* starts ``one`` (all points in one cluster; the default) and ``sequential``
  (rankmix's default start), ``--starts`` to choose.

Each (start, sampler, seed) runs one chain on one core for ``--seconds`` of
sweeps (the chain's construction is not timed). The script prints, for each
start and sampler, the median over seeds of log p(c, X) at 0.5, 1, 2, 5, ...
seconds and at the end, minus the best value any run from that start reached,
and the median K and sweeps at the end.

Figure 3(k)-(l) (mixing). 1,000 digits reduced to 2 dimensions, the
permutation move exact after burn-in (uniform permutations, the beam proposal
accepted by the exact ratio) as in the paper's section 5.2; after
``--mix-burn-in`` sweeps each sampler runs ``--mix-sweeps`` sweeps, recording
the number of clusters K and the size of the largest cluster after each (the
chain's ``n_clusters`` and ``largest_cluster_size``, O(K) reads, inside the
timing). The paper plots the autocorrelations of both: "for the number of
clusters, there is little difference between the various algorithms. In the
case of the largest cluster size, the samplers that include split-merge moves
mix faster." The script prints the autocorrelation at lags 1, 5, 10, 25, the
integrated autocorrelation time (N / ESS, ESS the bulk effective sample size
of ``rankmix._diagnostics``) and the ESS per second of sweeps. The paper does
not say which covariance it fixed in 2-d; this uses 16 I too (``--mix-cov``).

Usage::

    PYTHONPATH=. python benchmarks/bench_gaussian_mnist.py [--quick] [--seconds 10]
        [--seeds 0 1 2] [--starts one sequential] [--mix-sweeps 4000]
        [--only burn-in|mixing]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from _liang import SAMPLERS, chain_factory  # noqa: E402
from _machine import print_machine  # noqa: E402

from rankmix import DPGaussianClustering  # noqa: E402
from rankmix._diagnostics import ess  # noqa: E402
from rankmix.datasets import load_mnist  # noqa: E402

MNIST = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "mnist",
                     "mnist.npz")
STARTS = ("one", "random", "sequential")
PAPER_BURN_IN = "permutation moves improve performance (text of sec. 5.1; no values)"
PAPER_MIXING = (
    "K: little difference between the samplers; largest cluster: the samplers "
    "with split-merge mix faster (sec. 5.2; no values)"
)


def mnist_features(path, n_samples, n_components, seed):
    """n_samples training digits at random, pixels standardised, PCA."""
    digits = load_mnist(path, subset="train", scale=True)
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(digits.data), n_samples, replace=False)
    X = digits.data[rows]
    spread = X.std(axis=0)
    X = (X - X.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    _, _, components = np.linalg.svd(X, full_matrices=False)
    return X @ components[:n_components].T, digits.target[rows]


def estimator(sampler, start, seed, covariance, burn_in):
    init = {"one": dict(init="random", init_clusters=1),
            "random": dict(init="random", init_clusters=20),
            "sequential": dict(init="sequential")}[start]
    return DPGaussianClustering(
        covariance_type="fixed", covariance_prior=covariance, sampler=sampler,
        burn_in=burn_in, n_chains=1, random_state=seed, **init,
    )


def run_burn_in(X, sampler, start, seed, seconds):
    """log p(c, X) after every sweep for ``seconds`` of sweeps."""
    # burn_in larger than any run: projection orderings throughout (a burn-in study)
    factory, _ = chain_factory(estimator(sampler, start, seed, 16.0, 10**9), X)
    chain = factory(np.random.PCG64(seed))
    times, log_joints = [0.0], [chain.log_joint]
    began = time.perf_counter()
    while times[-1] < seconds:
        chain.sweep()
        times.append(time.perf_counter() - began)
        log_joints.append(chain.log_joint)
    return np.array(times), np.array(log_joints), chain.n_clusters


def value_at(times, values, t):
    return values[np.searchsorted(times, t, side="right") - 1]


def burn_in_table(args):
    X, _ = mnist_features(args.data, args.n_samples, 50, args.seeds[0])
    checkpoints = [t for t in (0.5, 1, 2, 5, 10, 20, 50, 100) if t <= args.seconds]
    print(f"Figure 3(i): N={len(X)}, d=50, Sigma = 16 I; {args.seconds:g} s per run, "
          f"seeds {args.seeds}, median over seeds")
    print(f"  paper: {PAPER_BURN_IN}")
    for start in args.starts:
        runs = {s: [run_burn_in(X, s, start, seed, args.seconds) for seed in args.seeds]
                for s in SAMPLERS}
        # the best log joint any run from this start reached: the columns' zero
        best = max(lj.max() for s in SAMPLERS for _, lj, _ in runs[s])
        print(f"start: {start} (zero: log p(c, X) = {best:.1f})")
        print(f"  {'sampler':<31}" + "".join(f"{f'{t:g}s':>10}" for t in checkpoints)
              + f"{'end':>10}{'K':>5}{'sweeps':>8}")
        for sampler in SAMPLERS:
            gaps = [[value_at(times, lj, t) - best for t in checkpoints]
                    for times, lj, _ in runs[sampler]]
            final = np.median([lj[-1] - best for _, lj, _ in runs[sampler]])
            k = np.median([k for _, _, k in runs[sampler]])
            sweeps = np.median([len(times) - 1 for times, _, _ in runs[sampler]])
            medians = np.median(gaps, axis=0)
            print(f"  {sampler:<31}" + "".join(f"{g:10.1f}" for g in medians)
                  + f"{final:10.1f}{k:5.0f}{sweeps:8.0f}", flush=True)
    print("Columns: median over seeds of log p(c, X) minus the best value any run "
          "from that start reached (0 = the best), by each time and at the end.\n")


def autocorrelation(x, lag):
    """Liang et al.'s footnote 7:
    sum (x_i - mu)(x_{i+lag} - mu) / ((n - lag - 1) var)."""
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean()
    variance = centred.var()
    if variance == 0 or lag >= len(x) - 1:
        return np.nan
    return (centred[:-lag] * centred[lag:]).sum() / ((len(x) - lag - 1) * variance)


def run_mixing(X, sampler, seed, burn_in, sweeps, covariance):
    """K and the largest cluster's size after each of ``sweeps`` sweeps past
    burn-in."""
    # after burn-in the permutation move draws pi uniformly given C and its beam
    # proposal is accepted by the exact ratio: a valid MCMC step, and O(N) where
    # permutation_dp="exact" costs O(N^3) per move
    model = estimator(sampler, "sequential", seed, covariance, burn_in)
    factory, _ = chain_factory(model, X)
    chain = factory(np.random.PCG64(seed))
    chain.sweep(burn_in)
    n_clusters = np.empty(sweeps, dtype=np.intp)
    largest = np.empty(sweeps, dtype=np.intp)
    began = time.perf_counter()
    for sweep in range(sweeps):
        chain.sweep()
        n_clusters[sweep], largest[sweep] = chain.n_clusters, chain.largest_cluster_size
    return n_clusters, largest, time.perf_counter() - began


def mixing_table(args):
    X, _ = mnist_features(args.data, args.mix_samples, 2, args.seeds[0])
    print(f"Figure 3(k)-(l): N={len(X)}, d=2, Sigma = {args.mix_cov:g} I, uniform "
          f"permutations after burn-in; {args.mix_burn_in} burn-in sweeps, then "
          f"{args.mix_sweeps}; seeds {args.seeds}, median over seeds")
    print(f"  paper: {PAPER_MIXING}")
    lags = (1, 5, 10, 25)
    rows = {}   # (statistic, sampler) -> one row per seed
    for sampler in SAMPLERS:
        for seed in args.seeds:
            n_clusters, largest, elapsed = run_mixing(
                X, sampler, seed, args.mix_burn_in, args.mix_sweeps, args.mix_cov)
            for name, trace in (("K", n_clusters), ("largest", largest)):
                n_eff = ess(trace[None])
                rows.setdefault((name, sampler), []).append(
                    [autocorrelation(trace, lag) for lag in lags]
                    + [len(trace) / n_eff, n_eff / elapsed, trace.mean(),
                       1000 * elapsed / len(trace)])
    print(f"  {'statistic':<10}{'sampler':<31}"
          + "".join(f"{f'ac({lag})':>8}" for lag in lags)
          + f"{'IACT':>8}{'ESS/s':>9}{'mean':>8}{'ms/sweep':>10}")
    for name, sampler in sorted(rows, key=lambda key: key[0] != "K"):
        v = np.nanmedian(np.array(rows[name, sampler], dtype=np.float64), axis=0)
        print(f"  {name:<10}{sampler:<31}" + "".join(f"{x:8.3f}" for x in v[:4])
              + f"{v[4]:8.2f}{v[5]:9.0f}{v[6]:8.1f}{v[7]:10.2f}", flush=True)
    print("Columns: autocorrelation at lags 1-25 sweeps; IACT = sweeps / ESS; "
          "ESS per second of sweeps; mean of the statistic; ms per sweep.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="N=2000, 2 s per run, one seed; 1000 mixing sweeps")
    parser.add_argument("--data", default=MNIST, help="mnist.npz or LeCun's folder")
    parser.add_argument("--n-samples", type=int, default=10000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--starts", nargs="+", default=["one", "sequential"],
                        choices=STARTS)
    parser.add_argument("--mix-samples", type=int, default=1000)
    parser.add_argument("--mix-burn-in", type=int, default=200)
    parser.add_argument("--mix-sweeps", type=int, default=4000)
    parser.add_argument("--mix-cov", type=float, default=16.0)
    parser.add_argument("--only", choices=("burn-in", "mixing"), default=None)
    args = parser.parse_args()
    if args.quick:
        args.n_samples, args.seconds, args.seeds = 2000, 2.0, args.seeds[:1]
        args.mix_sweeps, args.mix_burn_in = 1000, 100
    print_machine("one core, one chain per run; DPGaussianClustering("
                  "covariance_type='fixed'), alpha=1, kappa=0.1")
    if args.only != "mixing":
        burn_in_table(args)
    if args.only != "burn-in":
        mixing_table(args)


if __name__ == "__main__":
    main()
