"""How the Gibbs samplers' chains start on dispersed rankings.

``DPMallowsClustering`` starts Slice-Gibbs from Beta-Gibbs's sequential
prediction. On dispersed rankings that start leaves most rankings alone in
clusters of their own, and the chain kept them so; ``init="auto"`` then starts
from ``init_clusters`` random clusters instead (its docstring). This script
fits the same data with ``init="sequential"`` (what ``"auto"`` did before) and
with ``init="auto"``, one chain of ``--n-iter`` sweeps each (half burn-in), and
prints for each: the share of the distinct rankings the sequential start left
alone, the fit time, the number of clusters along the sweeps, the last log
joint, and, where the truth is known, the ARI of ``labels_``.

Data sets:

* ``jester``: the Jester5k ratings (``jester/jester5k_ratings.csv`` in the data
  home, ``RANKMIX_DATA``; nothing is downloaded) of the first ``--n-users``
  users, turned into rankings by ``ScoresToRankings(t=...)`` for each ``t`` of
  ``--jester-t`` (0: every joke a user rated, ``t=None``);
* ``synthetic``: ``make_mallows_mixture(n_clusters=4, n_per_cluster=500,
  n_items=100, t=100, theta=0.1, centre_n_rankings=0)``, full rankings.

Usage::

    python benchmarks/bench_mallows_starts.py [--datasets jester synthetic]
        [--n-iter 20] [--n-users 1000] [--jester-t 0 20 10 5] [--seed 0]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import os
import time
import warnings

import numpy as np
from _machine import print_machine
from sklearn.metrics import adjusted_rand_score

from rankmix import DPMallowsClustering
from rankmix._mallows import _alone, _distinct_rankings
from rankmix.datasets import get_data_home, make_mallows_mixture
from rankmix.preprocessing import ScoresToRankings


def jester_ratings():
    """The Jester5k ratings as a (users, 100) matrix, NaN where not rated."""
    path = os.path.join(get_data_home(), "jester", "jester5k_ratings.csv")
    with open(path, encoding="utf-8") as file:
        next(line for line in file if line[:1] != "#")  # the header
        fields = np.loadtxt(file, delimiter=",", dtype=str, ndmin=2)
    users, rows = np.unique(fields[:, 0], return_inverse=True)
    # the users in the file's order, as recommenderlab lists them
    order = np.argsort(np.unique(rows, return_index=True)[1])
    ratings = np.full((len(users), 100), np.nan)
    ratings[np.argsort(order)[rows], fields[:, 1].astype(int) - 1] = (
        fields[:, 2].astype(float))
    return ratings


def data_sets(args):
    """``(name, X, true labels or None)`` of each data set asked for."""
    if "jester" in args.datasets:
        ratings = jester_ratings()[: args.n_users]
        for t in args.jester_t:
            X = ScoresToRankings(t=t or None).fit_transform(ratings)
            yield f"jester, t={t or None}", X, None
    if "synthetic" in args.datasets:
        X, y, _ = make_mallows_mixture(
            n_clusters=4, n_per_cluster=500, n_items=100, t=100, theta=0.1,
            centre_n_rankings=0, random_state=args.seed,
        )
        yield "synthetic, theta = 0.1", X, y


def left_alone(X, seed):
    """The share of X's distinct rankings that the sequential start (the
    stream of ``seed``) leaves alone in clusters of their own copies."""
    model = DPMallowsClustering(sampler="beta-gibbs", init="sequential")
    start = model._chain_factory(model._prepare(X))(np.random.PCG64(seed))
    alone, n_distinct = _alone(start.snapshot()[0], _distinct_rankings(X))
    return alone / n_distinct


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["jester", "synthetic"])
    parser.add_argument("--n-iter", type=int, default=20)
    parser.add_argument("--n-users", type=int, default=1000)
    parser.add_argument("--jester-t", type=int, nargs="+", default=[0, 20, 10, 5])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print_machine(f"one chain of {args.n_iter} sweeps a fit, seed {args.seed}")
    for name, X, y in data_sets(args):
        print(f"\n== {name}: {X.shape[0]} rankings, mean length "
              f"{(X >= 0).sum(axis=1).mean():.1f}; the sequential start leaves "
              f"{left_alone(X, args.seed):.0%} of the distinct rankings alone ==")
        for init in ("sequential", "auto"):
            model = DPMallowsClustering(
                init=init, n_iter=args.n_iter, burn_in=args.n_iter // 2,
                n_chains=1, n_jobs=1, random_state=args.seed,
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                model.fit(X)
                seconds = time.perf_counter() - start
            clusters = model.trace_["n_clusters"][0]
            steps = sorted({0, 1, 2, 4, 9, len(clusters) - 1} & set(range(args.n_iter)))
            ari = ("" if y is None else
                   f", ARI {adjusted_rand_score(y, model.labels_):.3f}")
            print(f"init={init!r:13} {seconds:6.1f} s, clusters at sweeps "
                  f"{[step + 1 for step in steps]}: {clusters[steps].tolist()}, "
                  f"last log joint {model.trace_['log_joint'][0, -1]:,.0f}{ari}")


if __name__ == "__main__":
    main()
