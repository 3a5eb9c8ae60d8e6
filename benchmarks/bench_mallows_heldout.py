"""Figure 8 of Meila & Chen (2010): held-out log-likelihood, DPM, EBMS, KDE, truth.

Data: a mixture of K = 3 generalized Mallows models with equal weights, n = 12
items, top-t rankings with t = 5, theta = 1 at every stage. For each training size
N, one ``make_mallows_mixture`` call draws N + 3,000 rankings (cluster counts drawn
from the multinomial with weights 1/3, so the rows are i.i.d. from the mixture);
the rows are split at random into the training set and 3,000 test rankings.

For each N and sampler (beta-gibbs, slice-gibbs; sigma_update="mh", alpha = nu =
r = 1, one chain, one core) ``DPMallowsClustering`` is fitted on the training set
and scored on the test set with ``model.score`` (mean log posterior-predictive
density per ranking, nats). The reference is the TRUE model: equal weights, the
true centres, theta = 1, ``log mean_k GM(x | centre_k, 1)``. Also printed: the
difference DPM - true, the number of clusters and the VI between the fitted
clustering (``labels_``) and the true labels of the training set (with, as a
reference, the VI of the true model's maximum a posteriori clustering, which
misplaces the rankings that another cluster explains better), the VI of
``predict`` on the test set, and the fit time. Each replicate draws a fresh
data set; figures are medians over replicates, fit times median [min, max].

EBMS (``MallowsBlurringMeanShift``, Meila & Bao 2008; no parameter) is fitted
on the same training set; its held-out log-likelihood is ``model.score`` (the
mixture of GM models at its cluster centres, weights the cluster shares, one
maximum-likelihood theta per cluster), with the same VI figures.

Target: at the largest N the DPM's held-out log-likelihood is within a small gap
(default 0.05 nats per ranking) of the true model's (the paper shows them almost
equal). Also checked, the paper's other findings: the DPM above the KDE and
above EBMS at every N, and EBMS's training VI beside the DPM's.

Usage::

    python benchmarks/bench_mallows_heldout.py [--quick] [--replicates 3]
        [--n-train 100 300 1000 3000 10000] [--n-iter 200] [--burn-in 100]
        [--gap-target 0.05] [--seed 0]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import argparse
import time
import warnings

import numpy as np
from _machine import print_machine
from scipy.special import logsumexp

from rankmix import (
    DPMallowsClustering,
    MallowsBlurringMeanShift,
    MallowsKernelDensity,
    mallows,
)
from rankmix.datasets import make_mallows_mixture
from rankmix.metrics import variation_of_information


def make_split(n_train, args, seed_seq):
    """Train and test rankings (with true labels) and the true centres."""
    rng = np.random.default_rng(seed_seq)
    total = n_train + args.n_test
    counts = rng.multinomial(total, np.full(args.n_clusters, 1.0 / args.n_clusters))
    # make_mallows_mixture needs every cluster non-empty: an empty one (only
    # possible for tiny N) gets one ranking taken from the largest.
    while (counts == 0).any():
        counts[counts.argmax()] -= 1
        counts[counts.argmin()] += 1
    X, y, centres = make_mallows_mixture(
        n_clusters=args.n_clusters,
        n_per_cluster=counts,
        n_items=args.n_items,
        t=args.t,
        theta=args.theta,
        random_state=int(rng.integers(2**31)),
    )
    order = rng.permutation(total)
    test, train = order[: args.n_test], order[args.n_test :]
    return X[train], y[train], X[test], y[test], centres


def true_log_likelihood(X, centres, theta):
    """(n_rankings, K) log GM(x | centre_k, theta) and the mixture's log density."""
    log_gm = mallows.log_likelihood(X, centres, theta)
    return log_gm, logsumexp(log_gm, axis=1) - np.log(len(centres))


def clustering_figures(model, y_train, X_test, y_test):
    """Number of clusters, VI of labels_ to the truth and of predict on the test set."""
    return dict(
        k=model.n_clusters_,
        vi=variation_of_information(y_train, model.labels_),
        vi_test=variation_of_information(y_test, model.predict(X_test)),
    )


def median(runs, key):
    """Median over replicates of one figure."""
    return float(np.median([r[key] for r in runs]))


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="N in (100, 300, 1000), 1 replicate, 60 sweeps",
    )
    parser.add_argument(
        "--n-train",
        type=int,
        nargs="+",
        default=None,
        help="training sizes (default 100 300 1000 3000 10000)",
    )
    parser.add_argument("--n-test", type=int, default=3000)
    parser.add_argument("--n-clusters", type=int, default=3)
    parser.add_argument("--n-items", type=int, default=12)
    parser.add_argument("--t", type=int, default=5)
    parser.add_argument("--theta", type=float, default=1.0)
    parser.add_argument(
        "--samplers",
        nargs="+",
        default=["beta-gibbs", "slice-gibbs"],
        choices=["beta-gibbs", "slice-gibbs"],
    )
    parser.add_argument(
        "--n-iter",
        type=int,
        default=None,
        help="sweeps per chain (default 200, quick 60)",
    )
    parser.add_argument(
        "--burn-in",
        type=int,
        default=None,
        help="discarded sweeps (default 100, quick 30)",
    )
    parser.add_argument("--thin", type=int, default=2)
    parser.add_argument(
        "--replicates",
        "--repeats",
        dest="replicates",
        type=int,
        default=None,
        help="fresh data set per replicate (default 3, quick 1)",
    )
    parser.add_argument(
        "--gap-target",
        type=float,
        default=0.05,
        help="largest allowed true - DPM held-out log-likelihood "
        "per ranking at the largest N, nats",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.n_train is None:
        args.n_train = [100, 300, 1000] if args.quick else [100, 300, 1000, 3000, 10000]
    if args.n_iter is None:
        args.n_iter = 60 if args.quick else 200
    if args.burn_in is None:
        args.burn_in = 30 if args.quick else 100
    if args.replicates is None:
        args.replicates = 1 if args.quick else 3

    print_machine("one core, one chain")
    print(
        f"Figure 8: K = {args.n_clusters} equal-weight GM clusters, n = "
        f"{args.n_items}, t = {args.t}, theta = {args.theta:g}; {args.n_test} test "
        f"rankings; alpha = nu = r = 1, sigma_update='mh'; n_iter={args.n_iter}, "
        f"burn_in={args.burn_in}, thin={args.thin}, n_chains=1; "
        f"{args.replicates} replicate(s); seed {args.seed}"
    )
    print()

    rows = {}
    for n_train in args.n_train:
        for rep in range(args.replicates):
            seed_seq = np.random.SeedSequence([args.seed, n_train, rep])
            X_train, y_train, X_test, y_test, centres = make_split(
                n_train, args, seed_seq
            )
            log_gm_train, _ = true_log_likelihood(X_train, centres, args.theta)
            log_gm_test, true_test = true_log_likelihood(X_test, centres, args.theta)
            true_ll = float(true_test.mean())
            true_vi = variation_of_information(y_train, log_gm_train.argmax(axis=1))
            true_vi_test = variation_of_information(y_test, log_gm_test.argmax(axis=1))
            ebms = MallowsBlurringMeanShift(n_items=args.n_items)
            start = time.perf_counter()
            ebms.fit(X_train)
            ebms_seconds = time.perf_counter() - start
            ebms_ll = ebms.score(X_test)
            rows.setdefault((n_train, "ebms"), []).append(
                dict(
                    ll=ebms_ll,
                    diff=ebms_ll - true_ll,
                    **clustering_figures(ebms, y_train, X_test, y_test),
                    true_vi_test=true_vi_test,
                    width=ebms.bandwidth_,
                    seconds=ebms_seconds,
                )
            )
            # The paper's KDE (Lebanon & Mao 2008) at its most favourable
            # bandwidth: the true theta.
            kde = MallowsKernelDensity(bandwidth=args.theta, n_items=args.n_items)
            kde_ll = kde.fit(X_train).score(X_test) / len(X_test)
            for sampler in args.samplers:
                model = DPMallowsClustering(
                    alpha=1.0,
                    nu=1.0,
                    r=1.0,
                    sampler=sampler,
                    sigma_update="mh",
                    n_items=args.n_items,
                    n_iter=args.n_iter,
                    burn_in=args.burn_in,
                    thin=args.thin,
                    n_chains=1,
                    n_jobs=1,
                    random_state=int(seed_seq.generate_state(1)[0]),
                )
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    model.fit(X_train)
                    fit_seconds = time.perf_counter() - start
                dpm_ll = model.score(X_test)
                rows.setdefault((n_train, sampler), []).append(
                    dict(
                        dpm=dpm_ll,
                        true=true_ll,
                        kde=kde_ll,
                        diff=dpm_ll - true_ll,
                        over_kde=dpm_ll - kde_ll,
                        ebms=ebms_ll,
                        over_ebms=dpm_ll - ebms_ll,
                        **clustering_figures(model, y_train, X_test, y_test),
                        true_vi=true_vi,
                        seconds=fit_seconds,
                    )
                )

    header = (
        f"{'N':>6} {'sampler':<12} {'DPM ll':>9} {'true ll':>9} {'KDE ll':>9} "
        f"{'DPM-true':>9} {'DPM-KDE':>8} {'K':>4} {'VI train':>9} {'VI true':>8} "
        f"{'fit s median [min, max]':>25}"
    )
    print(header)
    print("-" * len(header))
    med, beats_kde, beats_ebms, vi_train = {}, {}, {}, {}
    for n_train in args.n_train:
        for sampler in args.samplers:
            runs = rows[n_train, sampler]

            def m(key, runs=runs):
                return median(runs, key)

            secs = np.array([r["seconds"] for r in runs])
            med[n_train, sampler] = m("diff")
            beats_kde[n_train, sampler] = min(r["over_kde"] for r in runs) > 0
            beats_ebms[n_train, sampler] = min(r["over_ebms"] for r in runs) > 0
            vi_train[n_train, sampler] = m("vi")
            print(
                f"{n_train:>6} {sampler:<12} {m('dpm'):9.4f} {m('true'):9.4f} "
                f"{m('kde'):9.4f} {m('diff'):+9.4f} {m('over_kde'):+8.4f} "
                f"{m('k'):>4g} {m('vi'):9.4f} "
                f"{m('true_vi'):8.4f} {np.median(secs):9.2f} "
                f"[{secs.min():6.2f}, {secs.max():6.2f}]"
            )
    print()
    print(
        "ll: mean held-out log-likelihood per test ranking (nats), DPM = "
        "model.score (posterior predictive over the kept draws), true = the "
        "generating mixture, KDE = MallowsKernelDensity with bandwidth = the "
        "true theta (Lebanon & Mao's kernel density, the paper's most "
        "favourable setting for it)."
    )
    print(
        "K: clusters of labels_; VI train: labels_ vs the true labels; VI true: "
        "the true model's MAP clustering vs the true labels (a reference, "
        "not a bound). Medians over replicates."
    )

    print()
    header = (
        f"{'N':>6} {'EBMS ll':>9} {'EBMS-true':>9} {'DPM-EBMS':>9} {'K':>4} "
        f"{'width':>6} {'VI train':>9} {'VI test':>8} {'true test':>9} "
        f"{'DPM VI test':>11} {'fit s median [min, max]':>25}"
    )
    print(header)
    print("-" * len(header))
    first = args.samplers[0]
    for n_train in args.n_train:
        runs = rows[n_train, "ebms"]

        def m(key, runs=runs):
            return median(runs, key)

        vi_train[n_train, "ebms"] = m("vi")
        secs = np.array([r["seconds"] for r in runs])
        print(
            f"{n_train:>6} {m('ll'):9.4f} {m('diff'):+9.4f} "
            f"{median(rows[n_train, first], 'over_ebms'):+9.4f} "
            f"{m('k'):>4g} {m('width'):6.3f} {m('vi'):9.4f} "
            f"{m('vi_test'):8.4f} {m('true_vi_test'):9.4f} "
            f"{median(rows[n_train, first], 'vi_test'):11.4f} "
            f"{np.median(secs):9.2f} [{secs.min():6.2f}, {secs.max():6.2f}]"
        )
    print()
    print(
        "EBMS: MallowsBlurringMeanShift (no parameter); ll = model.score, the "
        "mixture of GM models at its centres (weights the cluster shares, one "
        "ML theta per cluster); width: the kernel width it chose; VI test: "
        "predict (the mixture's MAP) on the test set vs the true labels; true "
        f"test: the true model's MAP; DPM-EBMS and DPM VI test: {first}."
    )

    largest = max(args.n_train)
    print()
    print(
        f"Target: at N = {largest}, DPM within {args.gap_target:g} nats per "
        "ranking of the true model"
    )
    for sampler in args.samplers:
        gap = -med[largest, sampler]
        ok = "PASS" if gap <= args.gap_target else "FAIL"
        print(f"  {sampler}: {ok} (true - DPM = {gap:+.4f} nats per ranking)")
    print("Paper: the DPM above the KDE at every N, in every replicate")
    for sampler in args.samplers:
        missed = [n for n in args.n_train if not beats_kde[n, sampler]]
        verdict = "PASS" if not missed else f"FAIL at N = {missed}"
        print(f"  {sampler}: {verdict}")
    print("Paper: the DPM above EBMS in likelihood at every N, in every replicate")
    for sampler in args.samplers:
        missed = [n for n in args.n_train if not beats_ebms[n, sampler]]
        verdict = "PASS" if not missed else f"FAIL at N = {missed}"
        print(f"  {sampler}: {verdict}")
    print(
        "Paper: EBMS 'performs surprisingly well on the training data [VI], "
        "occasionally surpassing DPM, but produces poor clusters on the test data'"
    )
    for n_train in args.n_train:
        print(
            f"  N = {n_train}: VI train EBMS {vi_train[n_train, 'ebms']:.4f}, "
            + ", ".join(f"{s} {vi_train[n_train, s]:.4f}" for s in args.samplers)
        )
    if largest < 10000:
        print(f"  (largest N here is {largest}; the paper's is 10000)")


if __name__ == "__main__":
    main()
