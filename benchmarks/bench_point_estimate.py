"""Compare the point estimates of a clustering on the gallery's ranking data.

For the sushi rankings and the Meath ballots (PrefLib files in the data home,
as the gallery reads them), fit DPMallowsClustering as the gallery does (quick
settings by default) and print, for each point estimate, its number of
clusters, its posterior expected VI and Binder's loss to the kept draws, and
the time to compute it:

* ``labels_``: the draw with the least mean VI to the other draws (medoid);
* ``minimize_expected_loss(loss="vi")``: the search over all clusterings for
  the least expected VI, started also from ``labels_``;
* ``minimize_expected_loss(loss="binder")``: the same for Binder's loss.

Usage::

    python benchmarks/bench_point_estimate.py [--n-rankings 2000] [--n-iter 100]
        [--data sushi,meath]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPMallowsClustering
from rankmix.datasets import fetch_irish, fetch_sushi
from rankmix.metrics import expected_loss, minimize_expected_loss

LOADERS = {"sushi": fetch_sushi, "meath": lambda: fetch_irish("meath")}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-rankings", type=int, default=2000)
    parser.add_argument("--n-iter", type=int, default=100)
    parser.add_argument("--data", default="sushi,meath")
    args = parser.parse_args()
    for name in args.data.split(","):
        bunch = LOADERS[name]()
        rng = np.random.RandomState(0)
        X = bunch.data[rng.permutation(len(bunch.data))[: args.n_rankings]]
        model = DPMallowsClustering(
            n_items=bunch.n_items,
            n_iter=args.n_iter,
            burn_in=args.n_iter // 2,
            thin=1,
            random_state=0,
        )
        begin = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X)
        draws = model.label_samples_
        counts = [len(np.unique(draw)) for draw in draws]
        print(
            f"\n{name}: {len(X)} rankings, {model.n_chains} chains x "
            f"{args.n_iter} sweeps in {time.perf_counter() - begin:.1f} s; "
            f"{len(draws)} kept draws, K from {min(counts)} to {max(counts)} "
            f"(median {np.median(counts):g})"
        )
        print(f"{'estimate':28s} {'K':>4s} {'E[VI]':>8s} {'E[Binder]':>11s} {'s':>6s}")
        estimates = [("labels_ (medoid draw)", lambda: model.labels_)]
        for loss in ("vi", "binder"):
            estimates.append(
                (
                    f"least expected {loss}",
                    lambda loss=loss: minimize_expected_loss(
                        draws, loss=loss, start=model.labels_, random_state=0
                    ),
                )
            )
        for label, estimate in estimates:
            begin = time.perf_counter()
            labels = estimate()
            seconds = time.perf_counter() - begin
            print(
                f"{label:28s} {len(np.unique(labels)):4d} "
                f"{expected_loss(labels, draws):8.4f} "
                f"{expected_loss(labels, draws, loss='binder'):11.0f} {seconds:6.2f}"
            )


if __name__ == "__main__":
    main()
