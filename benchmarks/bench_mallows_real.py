"""The Mallows samplers on real rankings: held-out log-likelihood at the defaults.

What a user gets from ``DPMallowsClustering(sampler=...).fit(X)`` with every other
parameter at its default, on real data: for each data set, ``--n-train`` rankings
drawn at random are fitted and ``--n-test`` others are scored with
``model.score`` (the mean log posterior-predictive density per ranking, nats;
higher is better). The samplers compared are the default one (Slice-Gibbs),
Beta-Gibbs, and the exact sub-cluster sampler from its own start and from the
sequential start, with half the sweeps as burn-in (the default's share).
Printed per data set and sampler: the held-out log-likelihood, the number of
clusters at the last sweep of each chain, the R-hat of the number of clusters
and of the log joint (above 1.1: the chains disagree), and the fit time.

Data sets (from the data home, ``RANKMIX_DATA``; nothing is downloaded):

* ``sushi``: 5,000 full rankings of 10 sushi (PrefLib 00014);
* ``jester``: top-5 rankings of 70 jokes from Jester5k's ratings
  (``jester/jester5k_top5_of_70.csv``);
* ``apa``: the APA election of 2009, top-t ballots of 5 candidates (PrefLib 00028);
* ``meath``: the 2002 Irish ballots of Meath, top-t of 14 candidates (PrefLib 00001).

This is the comparison behind the choice of ``DPMallowsClustering``'s default
sampler (its Notes, "Choice of the default").

Usage::

    python benchmarks/bench_mallows_real.py [--datasets sushi jester apa meath]
        [--n-train 2000] [--n-test 3000] [--n-iter 200] [--seeds 0 1]
        [--samplers slice-gibbs beta-gibbs subcluster subcluster-sequential]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import time
import warnings

import numpy as np
from _machine import print_machine

from rankmix import DPMallowsClustering
from rankmix.datasets import fetch_apa, fetch_irish, fetch_sushi, get_data_home

SAMPLERS = {
    "beta-gibbs": {"sampler": "beta-gibbs"},
    "slice-gibbs": {"sampler": "slice-gibbs"},
    "subcluster": {"sampler": "subcluster"},
    "subcluster-sequential": {"sampler": "subcluster", "init": "sequential"},
}


def load_jester():
    """Top-5 rankings of 70 jokes (0-based joke ids), one row a user."""
    path = os.path.join(get_data_home(), "jester", "jester5k_top5_of_70.csv")
    with open(path, encoding="utf-8") as file:
        next(line for line in file if line[:1] != "#")  # the header
        fields = np.loadtxt(file, delimiter=",", dtype=str, comments="#", ndmin=2)
    return fields[:, 1:].astype(np.intp) - 1, 70


def load(name):
    """(rankings, n_items) of a data set."""
    if name == "jester":
        return load_jester()
    bunch = {
        "sushi": lambda: fetch_sushi(download_if_missing=False),
        "apa": lambda: fetch_apa(2009, download_if_missing=False),
        "meath": lambda: fetch_irish("meath", download_if_missing=False),
    }[name]()
    return bunch.data, len(bunch.item_names)


def run(X, n_items, sampler, args, seed, train, test):
    model = DPMallowsClustering(
        n_items=n_items,
        n_iter=args.n_iter,
        burn_in=args.n_iter // 2,
        random_state=seed,
        **SAMPLERS[sampler],
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # R-hat is printed below
        model.fit(X[train])
    seconds = time.perf_counter() - start
    K = model.trace_["n_clusters"][:, -1]
    rhat = model.rhat_
    return model.score(X[test]), K, rhat["n_clusters"], rhat["log_joint"], seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--datasets", nargs="+", default=["sushi", "jester", "apa", "meath"],
        choices=["sushi", "jester", "apa", "meath"],
    )
    parser.add_argument(
        "--samplers", nargs="+", choices=list(SAMPLERS), default=list(SAMPLERS),
    )
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--n-test", type=int, default=3000)
    parser.add_argument("--n-iter", type=int, default=DPMallowsClustering().n_iter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    print_machine("default number of chains, every core")
    print(
        f"{args.n_train} rankings fitted, {args.n_test} held out; n_iter="
        f"{args.n_iter}; default sampler: {DPMallowsClustering().sampler!r}"
    )
    header = (
        f"{'data':7s} {'sampler':22s} {'seed':>4s} {'held-out':>9s} "
        f"{'K per chain':>14s} {'R-hat K':>8s} {'R-hat lj':>8s} {'fit s':>7s}"
    )
    print(header)
    print("-" * len(header))
    for name in args.datasets:
        X, n_items = load(name)
        for seed in args.seeds:
            rows = np.random.RandomState(seed).permutation(len(X))
            train = rows[: args.n_train]
            test = rows[args.n_train : args.n_train + args.n_test]
            for sampler in args.samplers:
                score, K, rhat_k, rhat_lj, seconds = run(
                    X, n_items, sampler, args, seed, train, test
                )
                print(
                    f"{name:7s} {sampler:22s} {seed:4d} {score:9.3f} "
                    f"{str(K.tolist()):>14s} {rhat_k:8.2f} {rhat_lj:8.2f} "
                    f"{seconds:7.1f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
