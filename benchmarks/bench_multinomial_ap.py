"""Burn-in of DPMultinomialClustering's moves on AP: Fig. 3(j) of Liang et al. (2007).

Liang, Jordan & Taskar plot the log joint probability log p(c, X) against time for
GIBBS, GIBBS+SPLITMERGE, GIBBS+PERM and GIBBS+SPLITMERGE+PERM on the 2,246 AP news
documents of Blei's lda-c (10,473-word vocabulary, raw word counts), a DP mixture
of multinomials, from sequential prediction, five seeds. This script runs the
same four samplers on the same corpus (read by ``rankmix.datasets.load_lda_c``,
with its vocabulary), with the chain ``DPMultinomialClustering.fit`` would run:

* the default prior, a symmetric Dirichlet(0.1) per cluster (the paper does not
  give its value);
* alpha resampled every sweep (Escobar & West), Gamma(1, 1) prior, from alpha = 1;
* ``n_split_merge=10`` SAMS proposals per sweep;
* the permutation move in its burn-in form throughout (``burn_in`` larger than
  any run): orderings from random projections of the documents' word
  frequencies (Liang et al. sec. 4.2), the beta approximation and the beam
  (``beam_tolerance=1e-32``), as in the paper's burn-in phase;
* two starts: ``sequential`` (sequential prediction, the paper's start for
  Fig. 3(j)) and ``one`` (all documents in one cluster, an extra of this script).

Each (start, sampler, seed) runs one chain on one core for ``--seconds`` of wall
time (sweeps only; the chain's construction, which for ``sequential`` includes
one Gibbs-like pass over the data, is timed apart and reported as "setup s").
After every sweep it records the elapsed time and the chain's log joint. At the
end the script prints one table: per start and sampler, log p(c, X) at a few
time marks (the last value recorded by then) and after the last sweep, the
number of clusters at the end, the sweeps run and the seconds per sweep, and
beside each row what the paper reports for that sampler.

What can be compared with the paper, and what cannot
----------------------------------------------------
The paper reports Fig. 3(j) as a plot; its text says only that "GIBBS+PERM
underperforms GIBBS+SPLITMERGE, but is competitive when combined with split-merge
(GIBBS+SPLITMERGE+PERM)", and suspects that random projections separate raw word
counts with overlapping topics poorly. (The copy of the paper in
``shared/papers`` holds the text, not the figure's values.) So:

* comparable: the ranking of the samplers from the sequential start, in log
  p(c, X) at equal wall time, which is what the paper's sentence states;
* not comparable: the values of log p(c, X) (the paper's Dirichlet parameter and
  alpha prior are not given; here the log joint includes the multinomial
  coefficients of the documents, log p(alpha) and every constant), and the time
  axis (2007 hardware and code; the paper also interleaves the moves "dividing
  the CPU time roughly evenly among them", while a sweep here is 10 SAMS
  proposals, one Gibbs scan and one permutation move, whose shares of the time
  differ from sampler to sampler: see the seconds per sweep). The paper shows
  the range over five seeds; the default here is one seed (``--full``: five).
  The one-cluster start is not in Fig. 3(j).

Usage::

    python benchmarks/bench_multinomial_ap.py [--quick | --full] [--seconds 20]
        [--seeds 1] [--seed 0] [--docs 2246] [--sweeps N] [--data DIR]
        [--starts sequential one] [--plot fig3j.png]

The default (one seed, 20 s per run, 8 runs) takes about 3 minutes; ``--quick``
(5 s per run) under a minute; ``--full`` (five seeds, 60 s per run) about 40
minutes. ``--sweeps N`` also stops a run after N sweeps.
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from _liang import SAMPLERS, chain_factory  # noqa: E402
from _machine import print_machine  # noqa: E402

from rankmix import DPMultinomialClustering  # noqa: E402
from rankmix.datasets import load_lda_c  # noqa: E402

STARTS = ("sequential", "one")
MARKS = (1, 2, 5, 10, 20, 50, 100, 200, 500)
# The project's shared data folder, beside the clone (as in CI).
SHARED_AP = Path(__file__).resolve().parents[2] / "shared" / "data" / "ap"
# What Liang et al. (2007) report for Fig. 3(j) (sequential start), per sampler.
PAPER = {
    "gibbs": "not stated in the text",
    "gibbs+split-merge": "above gibbs+perm",
    "gibbs+permutation": "below gibbs+split-merge",
    "gibbs+split-merge+permutation": "competitive with g+split-merge",
}
SHORT = {
    "gibbs": "gibbs",
    "gibbs+split-merge": "gibbs+split-merge",
    "gibbs+permutation": "gibbs+perm",
    "gibbs+split-merge+permutation": "gibbs+split-merge+perm",
}


def find_data(folder):
    """The folder holding ap.dat and vocab.txt: ``folder``, else the shared data
    folder beside the clone, else ``<data home>/ap``."""
    candidates = [Path(folder)] if folder else [SHARED_AP]
    if not folder:
        home = os.path.expanduser(os.environ.get("RANKMIX_DATA", "~/rankmix_data"))
        candidates.append(Path(home) / "ap")
    for candidate in candidates:
        if (candidate / "ap.dat").is_file() and (candidate / "vocab.txt").is_file():
            return candidate
    raise SystemExit(
        "No AP corpus (ap.dat and vocab.txt of Blei's lda-c) in "
        + " or ".join(str(c) for c in candidates)
        + "; pass --data DIR."
    )


def make_chain(X, sampler, start, seed):
    """The compiled chain DPMultinomialClustering would run on X."""
    model = DPMultinomialClustering(
        sampler=sampler,
        alpha_prior=(1.0, 1.0),
        burn_in=10**9,  # projection orderings throughout: a burn-in study
        n_chains=1,
        random_state=seed,
        **(
            {"init": "sequential"}
            if start == "sequential"
            else {"init": "random", "init_clusters": 1}
        ),
    )
    return chain_factory(model, X)[0]


def run(X, sampler, start, seconds, max_sweeps, seed):
    factory = make_chain(X, sampler, start, seed)
    built = time.perf_counter()
    chain = factory(np.random.PCG64(seed))
    setup = time.perf_counter() - built
    times, log_joints = [0.0], [chain.log_joint]
    start_time = time.perf_counter()
    while times[-1] < seconds and len(times) <= max_sweeps:
        chain.sweep()
        times.append(time.perf_counter() - start_time)
        log_joints.append(chain.log_joint)
    return dict(
        times=np.array(times),
        log_joints=np.array(log_joints),
        setup=setup,
        n_clusters=chain.n_clusters,
        alpha=chain.alpha,
    )


def say(text):
    """Print a paragraph wrapped at 88 columns."""
    print(textwrap.fill(text, 88, break_on_hyphens=False))


def value_at(result, t):
    """The log joint recorded last by time t."""
    return result["log_joints"][np.searchsorted(result["times"], t, side="right") - 1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="5 s per run")
    size.add_argument(
        "--full", action="store_true", help="five seeds (as the paper), 60 s per run"
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="per run")
    parser.add_argument("--seeds", type=int, default=1, help="runs per sampler")
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--docs", type=int, default=2246, help="the first N documents")
    parser.add_argument("--sweeps", type=int, default=None, help="at most, per run")
    parser.add_argument("--data", default=None, help="folder of ap.dat and vocab.txt")
    parser.add_argument("--starts", nargs="+", default=list(STARTS), choices=STARTS)
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS))
    parser.add_argument("--plot", default=None, help="write the figure to this file")
    args = parser.parse_args()
    if args.quick:
        args.seconds = 5.0
    if args.full:
        args.seconds, args.seeds = 60.0, 5
    max_sweeps = args.sweeps if args.sweeps is not None else np.inf

    folder = find_data(args.data)
    ap = load_lda_c(folder / "ap.dat", vocabulary=folder / "vocab.txt")
    X = ap.data[: args.docs]
    seeds = list(range(args.seed, args.seed + args.seeds))
    print_machine(
        f"one core, one chain per run; {args.seconds:g} s per run, seeds {seeds}; "
        "Dirichlet(0.1), alpha ~ Gamma(1, 1), 10 split-merge proposals per sweep"
    )
    print(
        f"AP ({folder}): {X.shape[0]} documents, {X.shape[1]} words "
        f"({ap.feature_names[0]!r}, {ap.feature_names[1]!r}, ...), nnz {X.nnz}, "
        f"{X.sum()} tokens\n"
    )

    results = {}
    for start in args.starts:
        for sampler in args.samplers:
            for seed in seeds:
                result = run(X, sampler, start, args.seconds, max_sweeps, seed)
                results[start, sampler, seed] = result
                print(
                    f"  {start:<10} {SHORT.get(sampler, sampler):<23} seed {seed}: "
                    f"{len(result['times']) - 1} sweeps, log p(c, X) "
                    f"{result['log_joints'][0]:.0f} -> {result['log_joints'][-1]:.0f}, "
                    f"K {result['n_clusters']}, alpha {result['alpha']:.1f}",
                    flush=True,
                )
    print_table(results, args, seeds)
    if args.plot:
        plot(results, args, seeds)


def median(values):
    return float(np.median(values))


def print_table(results, args, seeds):
    marks = [t for t in MARKS if t < args.seconds]
    reference = max(r["log_joints"][-1] for r in results.values())
    many = len(seeds) > 1
    print()
    say(
        f"log p(c, X) minus {reference:.0f} (the best value at the end of any "
        "run), at each time mark (the last value recorded by then; sweeps only, "
        "setup apart) and after the last sweep"
        + (
            f"; medians over {len(seeds)} seeds, the end's range in brackets"
            if many
            else ""
        )
    )
    header = (
        f"{'start':<11}{'sampler':<23}"
        + "".join(f"{f'{t:g}s':>9}" for t in marks)
        + f"{'end':>9}"
        + (f"{'range':>17}" if many else "")
        + f"{'K':>5}{'sweeps':>7}{'s/sweep':>8}{'setup s':>8}  paper, Fig. 3(j)"
    )
    print(header)
    print("-" * len(header))
    for start in args.starts:
        for sampler in args.samplers:
            runs = [results[start, sampler, seed] for seed in seeds]

            cells = "".join(
                f"{median([value_at(r, t) for r in runs]) - reference:9.0f}"
                for t in marks
            )
            ends = [r["log_joints"][-1] - reference for r in runs]
            sweeps = [len(r["times"]) - 1 for r in runs]
            per_sweep = median(
                [r["times"][-1] / max(len(r["times"]) - 1, 1) for r in runs]
            )
            spread = f"  [{min(ends):6.0f}, {max(ends):6.0f}]" if many else ""
            paper = PAPER.get(sampler, "") if start == "sequential" else "(not run)"
            print(
                f"{start:<11}{SHORT.get(sampler, sampler):<23}{cells}"
                f"{median(ends):9.0f}{spread}"
                f"{median([r['n_clusters'] for r in runs]):5.0f}"
                f"{median(sweeps):7.0f}{per_sweep:8.3f}"
                f"{median([r['setup'] for r in runs]):8.2f}  {paper}"
            )
    print()
    say(
        "The paper (Liang et al. 2007, sec. 5.1, Fig. 3(j), sequential start, "
        'five seeds): "GIBBS+PERM underperforms GIBBS+SPLITMERGE, but is '
        'competitive when combined with split-merge (GIBBS+SPLITMERGE+PERM)". '
        "Its log p values and time axis are not comparable with these (see the "
        "docstring); the ranking of the samplers is."
    )
    if "sequential" in args.starts and set(PAPER) <= set(args.samplers):
        end = {
            sampler: np.median(
                [results["sequential", sampler, s]["log_joints"][-1] for s in seeds]
            )
            for sampler in PAPER
        }
        sm = end["gibbs+split-merge"]
        say(
            "Here, sequential start, at the end: gibbs+perm minus gibbs+split-merge "
            f"{end['gibbs+permutation'] - sm:+.0f} nats; gibbs+split-merge+perm "
            f"minus gibbs+split-merge {end['gibbs+split-merge+permutation'] - sm:+.0f}"
            f" nats; gibbs minus gibbs+split-merge {end['gibbs'] - sm:+.0f} nats."
        )


def plot(results, args, seeds):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(
        1, len(args.starts), figsize=(4.8 * len(args.starts), 3.8), sharey=True
    )
    axes = np.atleast_1d(axes)
    for ax, start in zip(axes, args.starts):
        for i, sampler in enumerate(args.samplers):
            for seed in seeds:
                result = results[start, sampler, seed]
                ax.plot(
                    result["times"][1:],
                    result["log_joints"][1:],
                    color=f"C{i}",
                    label=SHORT.get(sampler, sampler) if seed == seeds[0] else None,
                )
        ax.set_title(f"AP, {'one-cluster' if start == 'one' else start} start")
        ax.set_xlabel("seconds")
    axes[0].set_ylabel("log p(c, X)")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(args.plot, dpi=120)
    print(f"figure written to {args.plot}")


if __name__ == "__main__":
    main()
