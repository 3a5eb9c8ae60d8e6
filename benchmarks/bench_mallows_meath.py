"""Does DPMallowsClustering converge on the full Meath ballots? R-hat over 4 chains.

Data: the 64,081 ballots of the 2002 Irish general election in Meath (14
candidates; PrefLib 00001-00000003.soi, read with ``fetch_irish("meath")`` from
the data home, as the gallery does). For each configuration of the sampler,
``n_chains`` chains (default 4) of ``n_iter`` sweeps run side by side (joblib
threads, ``n_jobs`` = the number of chains); printed are:

* seconds per sweep (wall time of the fit / n_iter, all chains running at
  once, so on fewer cores than chains it is the time of the slowest share);
* the trace of the number of clusters per chain, every ``--every`` sweeps, and
  each chain's mean log joint over its last tenth of the sweeps;
* the split R-hat (rank-normalised, Vehtari et al. 2021) of the number of
  clusters and of the log joint over the chains, over the second half of the
  sweeps, and the first sweep count (in steps of ``--every``, second halves of
  the traces so far) at which both fall below 1.05, if any;
* the sizes and the three first-choice candidates of the largest clusters of
  the point estimate.

Configurations: the defaults; ``alpha_prior=(1, 1)``; each other sampler with
its own defaults (``sampler=...``). ``--only`` picks some by label; ``--params``
adds any other, as ``name=value`` pairs.

Usage::

    python benchmarks/bench_mallows_meath.py [--n-iter 400] [--n-chains 4]
        [--n-ballots 64081] [--every 25] [--params n_split_merge=4 ...]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import ast
import time
import warnings

import numpy as np
from _machine import print_machine

from rankmix import DPMallowsClustering
from rankmix._diagnostics import rhat
from rankmix.datasets import fetch_irish

RHAT_TARGET = 1.05


def configurations(extra):
    """``{label: parameters}``: the defaults, then the shared moves that exist."""
    accepted = DPMallowsClustering().get_params()
    found = {"defaults": {}}
    if "alpha_prior" in accepted:
        found["alpha_prior=(1, 1)"] = {"alpha_prior": (1.0, 1.0)}
    # the other samplers, each with its own defaults ("auto" start and proposals)
    for sampler in ("beta-gibbs", "slice-gibbs", "subcluster"):
        if sampler != accepted["sampler"]:
            found[f"sampler={sampler}"] = {"sampler": sampler}
    if extra:
        found[" ".join(extra)] = {
            name: ast.literal_eval(value)
            for name, value in (pair.split("=", 1) for pair in extra)
        }
    return found


PARTY_CODES = {"F.F.", "F.G.", "Lab", "G.P.", "S.F.", "C.C.", "Csp", "Non-P"}


def surname(name):
    """ "Michael Redmond C.C. Csp" -> "Redmond": the name less its party codes."""
    words = name.split()
    while len(words) > 1 and words[-1] in PARTY_CODES:
        words.pop()
    return words[-1]


def first_converged(trace, every):
    """First sweep count (a multiple of ``every``) at which both R-hats < target."""
    n_iter = trace["n_clusters"].shape[1]
    for sweeps in range(2 * every, n_iter + 1, every):
        values = [rhat(trace[name][:, sweeps // 2 : sweeps]) for name in trace]
        if max(values) < RHAT_TARGET:
            return sweeps
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-iter", type=int, default=400)
    parser.add_argument("--n-chains", type=int, default=4)
    parser.add_argument("--n-ballots", type=int, default=None)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--params", nargs="*", default=[])
    parser.add_argument("--only", nargs="*", default=None, help="configuration labels")
    args = parser.parse_args()

    print_machine(f"{args.n_chains} chains on joblib threads")
    meath = fetch_irish("meath")
    X = meath.data
    if args.n_ballots is not None:
        X = X[np.random.RandomState(0).permutation(len(X))[: args.n_ballots]]
    surnames = [surname(name) for name in meath.item_names]
    print(
        f"Meath: {len(X)} ballots of {meath.n_items} candidates; "
        f"{args.n_chains} chains x {args.n_iter} sweeps; R-hat over the second "
        f"half of the sweeps; target {RHAT_TARGET}"
    )
    for label, params in configurations(args.params).items():
        if args.only and label not in args.only:
            continue
        model = DPMallowsClustering(
            n_items=meath.n_items,
            n_iter=args.n_iter,
            burn_in=args.n_iter // 2,
            thin=5,
            n_chains=args.n_chains,
            n_jobs=args.n_chains,
            random_state=args.seed,
            **params,
        )
        begin = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X)
        seconds = time.perf_counter() - begin
        trace = {name: model.trace_[name] for name in ("n_clusters", "log_joint")}
        print(f"\n== {label}: {params or 'defaults'}")
        print(
            f"{seconds:.0f} s, {seconds / args.n_iter:.2f} s per sweep "
            f"({args.n_chains} chains at once)"
        )
        marks = list(range(0, args.n_iter, args.every)) + [args.n_iter - 1]
        print("clusters per chain at sweeps " + " ".join(f"{m + 1:>4d}" for m in marks))
        for chain, row in enumerate(trace["n_clusters"]):
            print(
                f"  chain {chain}" + " " * 22 + " ".join(f"{row[m]:>4d}" for m in marks)
            )
        # which chains sit higher: the log joint of each over its last tenth
        tail = trace["log_joint"][:, -max(1, args.n_iter // 10):].mean(axis=1)
        print("log joint per chain, mean of the last tenth: "
              + " ".join(f"{value:.0f}" for value in tail))
        half = slice(args.n_iter // 2, None)
        r_k, r_joint = (rhat(trace[name][:, half]) for name in trace)
        print(f"R-hat (second half): n_clusters {r_k:.3f}, log joint {r_joint:.3f}")
        converged = first_converged(trace, args.every)
        print(
            f"both below {RHAT_TARGET} from sweep {converged}"
            if converged
            else f"not below {RHAT_TARGET} within {args.n_iter} sweeps"
        )
        if "alpha" in model.trace_:
            alpha = model.trace_["alpha"][:, half].mean()
            print(f"alpha, mean of the second half: {alpha:.2f}")
        sizes = np.bincount(model.labels_)
        print(f"point estimate: {model.n_clusters_} clusters; the largest:")
        for k in np.argsort(-sizes)[:6]:
            top = ", ".join(surnames[i] for i in model.central_rankings_[k, :3])
            print(f"  {sizes[k] / len(X):6.1%}  {top}")


if __name__ == "__main__":
    main()
