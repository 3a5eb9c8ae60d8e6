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
  the point estimate (not with ``--max-seconds``).

With ``--max-seconds S`` the chains instead run ``--every`` sweeps at a time
(``warm_start=True``) until both R-hats over the second half fall below 1.05 or
S seconds have passed, printing about 30 times the sweeps, the wall time, the
clusters per chain and the two R-hats: the wall time until convergence,
measured, or a lower bound for it. Only a few draws are kept (one every 20
steps and chain): each step's fit recomputes the VI medoid of the kept draws,
whose cost grows with their number squared.

Configurations: the defaults; ``alpha_prior=(1, 1)``; each other sampler with
its own defaults (``sampler=...``). ``--only`` picks some by label; ``--params``
adds any other, as ``name=value`` pairs.

Usage::

    python benchmarks/bench_mallows_meath.py [--n-iter 400] [--n-chains 4]
        [--n-ballots 64081] [--every 25] [--params n_split_merge=4 ...]
        [--max-seconds 600]
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


def side_by_side(n_items, params, args, **schedule):
    """``args.n_chains`` chains at once (one joblib thread each), seeded by
    ``args.seed``, with the sweeps' ``schedule`` and the configuration's
    ``params``."""
    return DPMallowsClustering(
        n_items=n_items,
        n_chains=args.n_chains,
        n_jobs=args.n_chains,
        random_state=args.seed,
        **schedule,
        **params,
    )


def fit_quietly(model, X):
    """``model.fit(X)`` without the warnings (R-hat is printed instead)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)


def fit_once(X, n_items, params, args):
    """The chains of one fit of ``args.n_iter`` sweeps, and its wall time."""
    model = side_by_side(
        n_items, params, args, n_iter=args.n_iter, burn_in=args.n_iter // 2, thin=5
    )
    begin = time.perf_counter()
    fit_quietly(model, X)
    return model, time.perf_counter() - begin


def fit_until_converged(X, n_items, params, args):
    """Continue the chains ``args.every`` sweeps at a time (``warm_start``).

    Stops when both R-hats over the second half of the sweeps so far fall below
    the target, or when ``args.max_seconds`` have passed; prints a line every
    thirtieth of them.
    One draw every 20 steps and chain is kept (``thin=20 * every``, no
    burn-in): each fit recomputes the VI medoid of the kept draws, at a cost
    that grows with their number squared (seconds a step at a few hundred draws
    of the full ballots), and chunks do not change the draws. The point
    estimate would pick among those few draws, early ones too, so ``main`` does
    not print it; the traces, which the R-hats read, hold every sweep.
    """
    model = side_by_side(
        n_items,
        params,
        args,
        n_iter=args.every,
        burn_in=0,
        thin=20 * args.every,
        warm_start=True,
    )
    print("  sweeps  seconds  clusters (min-max)  R-hat K  R-hat log joint")
    begin = time.perf_counter()
    printed = -np.inf
    while True:
        fit_quietly(model, X)
        seconds = time.perf_counter() - begin
        n_clusters, log_joint = model.trace_["n_clusters"], model.trace_["log_joint"]
        sweeps = n_clusters.shape[1]
        r_k, r_joint = (rhat(t[:, sweeps // 2 :]) for t in (n_clusters, log_joint))
        done = max(r_k, r_joint) < RHAT_TARGET or seconds > args.max_seconds
        if done or seconds - printed >= args.max_seconds / 30:  # about 30 lines
            printed = seconds
            print(
                f"  {sweeps:6d} {seconds:8.0f}  {n_clusters[:, -1].min():8d}-"
                f"{n_clusters[:, -1].max():<9d} {r_k:8.3f} {r_joint:16.3f}",
                flush=True,
            )
        if done:
            return model, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-iter", type=int, default=400)
    parser.add_argument("--n-chains", type=int, default=4)
    parser.add_argument("--n-ballots", type=int, default=None)
    parser.add_argument("--every", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--params", nargs="*", default=[])
    parser.add_argument("--only", nargs="*", default=None, help="configuration labels")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=None,
        help="run --every sweeps at a time until converged or this many seconds",
    )
    args = parser.parse_args()

    print_machine(f"{args.n_chains} chains on joblib threads")
    meath = fetch_irish("meath")
    X = meath.data
    if args.n_ballots is not None:
        X = X[np.random.RandomState(0).permutation(len(X))[: args.n_ballots]]
    surnames = [surname(name) for name in meath.item_names]
    print(
        f"Meath: {len(X)} ballots of {meath.n_items} candidates; "
        f"{args.n_chains} chains x "
        + (
            f"{args.n_iter} sweeps"
            if args.max_seconds is None
            else f"up to {args.max_seconds:.0f} s"
        )
        + "; R-hat over the second "
        f"half of the sweeps; target {RHAT_TARGET}"
    )
    for label, params in configurations(args.params).items():
        if args.only and label not in args.only:
            continue
        print(f"\n== {label}: {params or 'defaults'}", flush=True)
        if args.max_seconds is None:
            model, seconds = fit_once(X, meath.n_items, params, args)
        else:
            model, seconds = fit_until_converged(X, meath.n_items, params, args)
        trace = {name: model.trace_[name] for name in ("n_clusters", "log_joint")}
        n_iter = trace["n_clusters"].shape[1]
        # at most 13 columns of the trace, at multiples of --every
        step = args.every * -(-n_iter // (12 * args.every))
        print(
            f"{seconds:.0f} s, {seconds / n_iter:.2f} s per sweep "
            f"({args.n_chains} chains at once)"
        )
        marks = list(range(0, n_iter, step)) + [n_iter - 1]
        print("clusters per chain at sweeps " + " ".join(f"{m + 1:>4d}" for m in marks))
        for chain, row in enumerate(trace["n_clusters"]):
            print(
                f"  chain {chain}" + " " * 22 + " ".join(f"{row[m]:>4d}" for m in marks)
            )
        # which chains sit higher: the log joint of each over its last tenth
        tail = trace["log_joint"][:, -max(1, n_iter // 10) :].mean(axis=1)
        print(
            "log joint per chain, mean of the last tenth: "
            + " ".join(f"{value:.0f}" for value in tail)
        )
        half = slice(n_iter // 2, None)
        r_k, r_joint = (rhat(trace[name][:, half]) for name in trace)
        print(f"R-hat (second half): n_clusters {r_k:.3f}, log joint {r_joint:.3f}")
        converged = first_converged(trace, args.every)
        print(
            f"both below {RHAT_TARGET} from sweep {converged}"
            if converged
            else f"not below {RHAT_TARGET} within {n_iter} sweeps"
        )
        if "alpha" in model.trace_:
            alpha = model.trace_["alpha"][:, half].mean()
            print(f"alpha, mean of the second half: {alpha:.2f}")
        if args.max_seconds is not None:
            continue  # no burn-in: the point estimate would pick an early draw
        sizes = np.bincount(model.labels_)
        print(f"point estimate: {model.n_clusters_} clusters; the largest:")
        for k in np.argsort(-sizes)[:6]:
            top = ", ".join(surnames[i] for i in model.central_rankings_[k, :3])
            print(f"  {sizes[k] / len(X):6.1%}  {top}")


if __name__ == "__main__":
    main()
