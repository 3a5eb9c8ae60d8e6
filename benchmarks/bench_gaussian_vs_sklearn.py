"""DPGaussianClustering against scikit-learn's BayesianGaussianMixture.

The synthetic setting of Liang, Jordan & Taskar (2007): for each (d, K) in (2, 5),
(10, 10), (40, 40), (80, 40), K means drawn from N(0, 2 I_d), equal mixing weights
(each point's cluster uniform over the K), identity covariances. One draw of
N = 10,000 training points and 2,000 test points of the same mixture per replicate.
With d = 2 and K = 5 the clusters overlap heavily: no method can recover them,
which the true model's row shows.

Methods, on the same data, in the same process, on one core:

* scikit-learn: ``BayesianGaussianMixture(n_components=50,
  weight_concentration_prior_type="dirichlet_process")``, defaults otherwise
  (full covariances, k-means initialisation, max_iter=100, n_init=1). Labels are
  ``predict(X_train)``; the number of clusters is the number of components that
  ``predict`` uses.
* rankmix: ``DPGaussianClustering(n_chains=1, n_jobs=1)`` with
  ``covariance_type="full"`` (the default, the same family as scikit-learn's) and
  ``"diag"`` (the smaller model, which holds the truth too), the default prior and
  sampler (Gibbs + split-merge) and start (sequential prediction), 30 sweeps
  of which 10 are burn-in, thin 2 (10 kept draws). Fewer sweeps than the
  defaults (200, 100) keep the comparison of wall times fair: from the
  sequential start the number of clusters settles within about 10 sweeps, and
  at (10, 10) (seed 0) 30 sweeps gave the ARI of 60 sweeps to 0.01 and the
  held-out log-likelihood to 0.02 (full) and 0.001 (diag); 150 sweeps with 100
  of burn-in raised the full model's ARI from 0.74 to 0.79.
  Labels are ``labels_``, the number of clusters ``n_clusters_``.

For rankmix also "lj - truth": log p(c, X) of ``labels_`` minus that of the
true labels under the fitted prior (median over repeats). Positive means the
model's posterior prefers the clustering found to the truth, so a low ARI is
the model's answer, not a sampler that failed to find the truth. For "full",
"(prior learnt)" is the same difference with the inverse-Wishart prior's scale
and degrees of freedom learnt: Psi_0 = s Psi_0(default) and nu_0 chosen, for
each of the two clusterings, to maximise its log p(c, X) (``_liang``'s
``log_joint_learnt_prior``). Negative means that, each at its best prior, the
truth beats this clustering; it says nothing of the clusterings a chain under
a learnt prior would find. With ``--oracle-prior`` the row "full, oracle" is a
"full" fit whose prior is fixed at the true clustering's best (s, nu_0): what
the sampler finds when the prior suits the truth best, a best case for the
prior, not a bound on the ARI (it uses the true labels, so it is not one of the
targets). Its "lj - truth" settles the question: where it is positive, the
clustering found beats the truth at the truth's best (s, nu_0), hence at every
(s, nu_0) at which the truth could be, and a posterior over (c, s, nu_0), with
the prior learnt along with the clustering (Rasmussen 2000), also prefers
clusterings other than the truth.

Measured: ARI (``sklearn.metrics.adjusted_rand_score``) and VI
(``rankmix.metrics.variation_of_information``, nats) of the training labels to
the true labels; the number of clusters; the held-out log-likelihood per test
point (``score(X_test)``; for rankmix the posterior predictive averaged over the
kept draws); the wall time of ``fit`` only. The true model's held-out
log-likelihood, mean over the test points of log sum_k (1/K) N(x; mu_k, I), is
the ceiling; its row also gives the ARI and VI of its MAP labels (the Bayes
classifier), the best any clustering can be expected to do.

Each replicate draws a fresh data set and a fresh seed (shared by both methods).
Metrics are medians over replicates; fit times the median [min, max].

Targets, per setting and rankmix variant: ARI and held-out log-likelihood at
least scikit-learn's, wall time at most scikit-learn's.

Usage::

    python benchmarks/bench_gaussian_vs_sklearn.py [--quick] [--repeats 3]
        [--settings 2,5 10,10 40,40 80,40] [--n-train 10000] [--n-test 2000]
        [--n-iter 30] [--burn-in 10] [--thin 2] [--covariance-types full diag]
        [--seed 0]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

# One core: the BLAS and OpenMP pools read these when numpy is first imported,
# so they are set before any import that may import numpy.
import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"

import argparse  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from _liang import (  # noqa: E402
    MEAN_VARIANCE,
    log_joint,
    log_joint_learnt_prior,
    make_data,
)
from _machine import package_version, print_machine  # noqa: E402
from scipy.special import logsumexp  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402
from sklearn.mixture import BayesianGaussianMixture  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from rankmix import DPGaussianClustering  # noqa: E402
from rankmix.metrics import variation_of_information  # noqa: E402

SETTINGS = ((2, 5), (10, 10), (40, 40), (80, 40))
QUICK_SETTINGS = ((2, 5), (10, 10))
ORACLE = "full, oracle"


def true_log_joint(X, means):
    """(n_samples, K) log of (1/K) N(x; mu_k, I)."""
    squared = (
        (X * X).sum(axis=1)[:, None]
        - 2.0 * X @ means.T
        + (means * means).sum(axis=1)[None, :]
    )
    d, n_clusters = X.shape[1], len(means)
    return -0.5 * squared - 0.5 * d * np.log(2 * np.pi) - np.log(n_clusters)


def metrics(y, labels, n_clusters, heldout, seconds, **extra):
    return dict(
        ari=adjusted_rand_score(y, labels),
        vi=variation_of_information(y, labels),
        k=n_clusters,
        ll=heldout,
        seconds=seconds,
        **extra,
    )


def run_true(X, y, X_test, means):
    labels = true_log_joint(X, means).argmax(axis=1)
    heldout = float(logsumexp(true_log_joint(X_test, means), axis=1).mean())
    return metrics(y, labels, len(means), heldout, np.nan)


def run_sklearn(X, y, X_test, seed, args):
    model = BayesianGaussianMixture(
        n_components=args.n_components,
        weight_concentration_prior_type="dirichlet_process",
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        model.fit(X)
        seconds = time.perf_counter() - start
    labels = model.predict(X)
    return metrics(
        y,
        labels,
        len(np.unique(labels)),
        model.score(X_test),
        seconds,
        converged=model.converged_,
        n_iter=model.n_iter_,
    )


def run_rankmix(X, y, X_test, seed, covariance_type, args, **params):
    model = DPGaussianClustering(
        covariance_type=covariance_type,
        n_iter=args.n_iter,
        burn_in=args.burn_in,
        thin=args.thin,
        n_chains=1,
        n_jobs=1,
        random_state=seed,
        **params,
    )
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    # > 0: the model's posterior prefers the clustering found to the truth
    gap = log_joint(model, X, model.labels_) - log_joint(model, X, y)
    extra = dict(gap=gap)
    if covariance_type == "full" and not params:
        # the same with the prior's scale and degrees of freedom learnt, each
        # clustering at its own best (module docstring)
        truth, s, nu = log_joint_learnt_prior(model, X, y)
        extra["gap_learnt"] = log_joint_learnt_prior(model, X, model.labels_)[0] - truth
        extra["oracle_prior"] = dict(
            nu=nu, covariance_prior=s * model.covariance_prior_
        )
    return metrics(
        y, model.labels_, model.n_clusters_, model.score(X_test), seconds, **extra
    )


def median(runs, key):
    return float(np.median([run[key] for run in runs]))


def format_k(runs):
    k = median(runs, "k")
    return f"{k:.0f}" if k == int(k) else f"{k:.1f}"


def format_time(runs):
    seconds = np.array([run["seconds"] for run in runs])
    if np.all(np.isnan(seconds)):
        return "-"
    return f"{np.median(seconds):8.2f} [{seconds.min():7.2f}, {seconds.max():7.2f}]"


def format_gap(runs, key="gap"):
    if key not in runs[0]:
        return "-"
    return f"{median(runs, key):.1f}"


def print_setting(d, n_clusters, names, results, args):
    print(
        f"(d, K) = ({d}, {n_clusters}): N = {args.n_train:,} train, "
        f"{args.n_test:,} test, {args.repeats} repeat(s)"
    )
    header = (
        f"{'method':<16} {'ARI':>6} {'VI':>7} {'K':>5} {'held-out ll':>12} "
        f"{'vs true':>8} {'fit s median [min, max]':>26} {'lj - truth':>11} "
        f"{'(prior learnt)':>14}"
    )
    print(header)
    print("-" * len(header))
    ceiling = median(results["true model"], "ll")
    for name in names:
        runs = results[name]
        ll = median(runs, "ll")
        print(
            f"{name:<16} {median(runs, 'ari'):6.3f} {median(runs, 'vi'):7.3f} "
            f"{format_k(runs):>5} {ll:12.4f} {ll - ceiling:8.4f} "
            f"{format_time(runs):>26} {format_gap(runs):>11} "
            f"{format_gap(runs, 'gap_learnt'):>14}"
        )
    sk = results["sklearn BGM"]
    converged = sum(run["converged"] for run in sk)
    iterations = int(np.median([run["n_iter"] for run in sk]))
    print(
        f"  sklearn converged in {converged}/{len(sk)} repeat(s) "
        f"(median {iterations} EM iterations, max_iter=100)"
    )


def check_targets(d, n_clusters, covariance_types, results):
    """PASS/FAIL lines for one setting; returns the list of (variant, all passed)."""
    sk = results["sklearn BGM"]
    sk_ari, sk_ll = median(sk, "ari"), median(sk, "ll")
    sk_time = median(sk, "seconds")
    outcome = []
    for covariance_type in covariance_types:
        name = f"rankmix {covariance_type}"
        runs = results[name]
        ari, ll = median(runs, "ari"), median(runs, "ll")
        seconds = median(runs, "seconds")
        checks = (ari >= sk_ari, ll >= sk_ll, seconds <= sk_time)
        flags = ["PASS" if ok else "FAIL" for ok in checks]
        print(
            f"  ({d}, {n_clusters}) {name}: ARI {flags[0]} ({ari:.3f} vs "
            f"{sk_ari:.3f}); held-out ll {flags[1]} ({ll:.4f} vs {sk_ll:.4f}); "
            f"time {flags[2]} (ratio rankmix/sklearn {seconds / sk_time:.3f})"
        )
        outcome.append((name, all(checks)))
    return outcome


def parse_setting(text):
    try:
        d, n_clusters = (int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a setting is 'd,K', two integers, got {text!r}"
        ) from None
    if d < 1 or n_clusters < 1:
        raise argparse.ArgumentTypeError(f"d and K must be positive, got {text!r}")
    return d, n_clusters


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="N = 2,000, settings (2, 5) and (10, 10), 1 repeat (under a minute)",
    )
    parser.add_argument(
        "--settings",
        type=parse_setting,
        nargs="+",
        default=None,
        metavar="D,K",
        help="(d, K) pairs (default 2,5 10,10 40,40 80,40; quick 2,5 10,10)",
    )
    parser.add_argument(
        "--n-train",
        type=int,
        default=None,
        help="training points (default 10,000; quick 2,000)",
    )
    parser.add_argument("--n-test", type=int, default=2000, help="held-out points")
    parser.add_argument(
        "--repeats",
        "--replicates",
        dest="repeats",
        type=int,
        default=None,
        help="fresh data set and seed per repeat (default 3, quick 1)",
    )
    parser.add_argument("--n-iter", type=int, default=30, help="rankmix sweeps")
    parser.add_argument(
        "--burn-in", type=int, default=10, help="rankmix sweeps discarded"
    )
    parser.add_argument("--thin", type=int, default=2, help="rankmix thinning")
    parser.add_argument(
        "--covariance-types",
        nargs="+",
        default=["full", "diag"],
        choices=["full", "diag"],
        help="rankmix variants",
    )
    parser.add_argument(
        "--n-components", type=int, default=50, help="sklearn truncation level"
    )
    parser.add_argument(
        "--oracle-prior",
        action="store_true",
        help="also fit 'full' under the truth's learnt (s, nu_0) (module docstring)",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.oracle_prior and "full" not in args.covariance_types:
        parser.error("--oracle-prior needs 'full' among --covariance-types")
    if args.settings is None:
        args.settings = list(QUICK_SETTINGS if args.quick else SETTINGS)
    if args.n_train is None:
        args.n_train = 2000 if args.quick else 10000
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3

    print_machine(
        "one core (OMP/OPENBLAS/MKL_NUM_THREADS=1 and threadpoolctl limit 1), "
        f"one chain; scikit-learn {package_version('scikit-learn')}"
    )
    print(
        f"Liang et al. setting: means ~ N(0, {MEAN_VARIANCE:g} I), equal weights, "
        f"identity covariances; sklearn BayesianGaussianMixture(n_components="
        f"{args.n_components}, dirichlet_process, defaults); rankmix "
        f"DPGaussianClustering(n_iter={args.n_iter}, burn_in={args.burn_in}, "
        f"thin={args.thin}, n_chains=1, default prior and sampler); seed {args.seed}"
    )
    print()

    names = ["true model", "sklearn BGM"] + [
        f"rankmix {c}" for c in args.covariance_types
    ]
    if args.oracle_prior:
        names.append(ORACLE)
    outcomes = []
    with threadpool_limits(limits=1):
        for d, n_clusters in args.settings:
            results = {name: [] for name in names}
            for rep in range(args.repeats):
                data_seed = np.random.SeedSequence([args.seed, d, n_clusters, rep, 0])
                X, y, means = make_data(
                    d, n_clusters, args.n_train + args.n_test, data_seed
                )
                X, y, X_test = X[: args.n_train], y[: args.n_train], X[args.n_train :]
                fit_seed = int(
                    np.random.SeedSequence(
                        [args.seed, d, n_clusters, rep, 1]
                    ).generate_state(1)[0]
                    % (2**31 - 1)
                )
                results["true model"].append(run_true(X, y, X_test, means))
                results["sklearn BGM"].append(run_sklearn(X, y, X_test, fit_seed, args))
                for covariance_type in args.covariance_types:
                    results[f"rankmix {covariance_type}"].append(
                        run_rankmix(X, y, X_test, fit_seed, covariance_type, args)
                    )
                if args.oracle_prior:
                    prior = results["rankmix full"][-1]["oracle_prior"]
                    results[ORACLE].append(
                        run_rankmix(X, y, X_test, fit_seed, "full", args, **prior)
                    )
            print_setting(d, n_clusters, names, results, args)
            outcomes.extend(
                check_targets(d, n_clusters, args.covariance_types, results)
            )
            print()

    print(
        "ARI, VI (nats), K, held-out ll (nats per point): medians over repeats; "
        "'vs true' = held-out ll minus the true model's (the ceiling, <= 0 up to "
        "noise). The true model's ARI and VI are those of its MAP labels. "
        "Fit times exclude scoring."
    )
    print()
    print(
        "Targets: ARI >= sklearn, held-out ll >= sklearn, fit time <= sklearn "
        "(medians over repeats)"
    )
    for name in [f"rankmix {c}" for c in args.covariance_types]:
        passed = [ok for variant, ok in outcomes if variant == name]
        print(
            f"  {name}: all three met in {sum(passed)}/{len(passed)} setting(s): "
            f"{'PASS' if all(passed) else 'FAIL'}"
        )
    if args.quick or args.n_train != 10000:
        print(
            f"  (N = {args.n_train:,}: the issue's targets are stated for N = 10,000)"
        )


if __name__ == "__main__":
    main()
