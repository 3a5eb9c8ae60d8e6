"""The sub-cluster sampler (``sampler="subcluster"``) against its peers.

Sections (``--sections``, all by default):

* ``dpmm``: DPMMSubClusters' README setting, 10,000 points in 2-d from 10
  Gaussians (means ~ N(0, 100 I), unit covariances), 100 iterations from one
  cluster, one thread: time and ARI of rankmix's sub-cluster sampler against
  ``BayesianGaussianMixture(50, dirichlet_process, max_iter=500)`` in the same
  process (goal: under DPMMSubClusters' reported 0.6 s and at most 0.1x
  scikit-learn's time at equal or better ARI). Each rankmix fit's ARI is given
  twice: of ``labels_`` (a posterior draw of the clustering) and of
  ``predict(X)`` (each row's most probable cluster, the clustering that
  scikit-learn's mixtures give).
* ``liang``: Liang et al.'s (d, K) = (10, 10), (40, 40), (80, 40), N = 10,000
  training and 2,000 test points (means ~ N(0, 2 I), identity covariances), one
  thread: ARI, held-out log-likelihood per point and fit time of the sub-cluster
  sampler (``covariance_type`` "full" and "diag") and of the collapsed default
  ("gibbs+split-merge"), against the same scikit-learn model; and of the
  sub-cluster sampler with "full" covariances under a prior that knows the
  clusters' scale (``nu = 2 d``, ``covariance_prior = nu`` times the pooled
  covariance within the clusters of the "diag" fit; its time includes that fit's).
* ``defaults``: the estimator as a user types it, ``DPGaussianClustering(
  random_state=seed).fit(X)`` (every default: the collapsed sampler, two chains
  of 200 sweeps side by side on the cores), at Liang et al.'s settings against
  the same scikit-learn model on one thread: ARI, held-out log-likelihood, wall
  time (the issue's goal for the defaults: better ARI and held-out
  log-likelihood in less time).
* ``scale``: N = 10^6 points in d = 10 from K = 20 Gaussians: seconds per sweep
  of the sub-cluster sampler with 1 and 2 OpenMP threads (threadpoolctl; more
  with ``--threads``), copies of the chain running the same sweeps, their ratio
  (goal >= 1.8x on 2 threads), and the peak resident memory of the process.
* ``dask``: the same problem with its rows generated on, and kept on, a
  ``LocalCluster`` of 2 worker processes (more with ``--workers``): seconds per
  sweep of the chain on the workers, the client's peak memory, and the seconds
  per sweep of the same chain in process on one thread over the same sweeps
  (whose draws, checked, are identical), and a sweep's round trips to the
  workers and megabytes they send back (and, of those, of rows read).
* ``dask_counts``: the same for ``DPMultinomialClustering``'s sub-cluster
  sampler on documents of 100 words over a vocabulary of 10,000 (``--words``)
  from 20 topics, generated on the workers as scipy.sparse chunks: 262,144
  documents in chunks of 131,072 (two row blocks), or with ``--quick`` 131,072
  in chunks of 65,536.

Every time is the median of ``--repeats`` runs (fresh data seed and random_state
per repeat), each method on the same data in the same process.

Usage::

    python benchmarks/bench_subcluster.py [--quick] [--repeats 3]
        [--sections dpmm liang defaults scale dask dask_counts] [--n-iter 60]
        [--threads 1 2] [--workers 2] [--words 10000]
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import os

# the BLAS pools read these when numpy is first imported: one thread for
# scikit-learn, whose EM would otherwise use every core; rankmix's OpenMP loops
# are limited with threadpoolctl section by section
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import functools  # noqa: E402
import resource  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from _dask_trips import (  # noqa: E402
    megabytes_from_workers_per_sweep,
    megabytes_read_per_sweep,
    round_trips_per_sweep,
)
from _liang import chain_factory, make_data  # noqa: E402
from _machine import print_machine  # noqa: E402
from scipy import sparse, stats  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402
from sklearn.metrics import adjusted_rand_score  # noqa: E402
from sklearn.mixture import BayesianGaussianMixture  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from rankmix import DPGaussianClustering, DPMultinomialClustering  # noqa: E402

DPMM_REPORTED_SECONDS = 0.6


def blobs(n, d, k, mean_variance, seed):
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, np.sqrt(mean_variance), size=(k, d))
    y = rng.integers(k, size=n)
    return means[y] + rng.standard_normal((n, d)), y


def fit_timed(model, X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        start = time.perf_counter()
        model.fit(X)
        return model, time.perf_counter() - start


def sklearn_model(seed):
    return BayesianGaussianMixture(
        n_components=50,
        weight_concentration_prior_type="dirichlet_process",
        max_iter=500,
        random_state=seed,
    )


def rankmix_model(seed, n_iter, **params):
    return DPGaussianClustering(
        n_iter=n_iter, burn_in=n_iter // 2, thin=2, n_chains=1, n_jobs=1,
        random_state=seed, **params,
    )


# The two ARI columns: rankmix's clustering (labels_, a posterior draw) and the
# most probable cluster of each training row (predict, what scikit-learn's
# mixtures report as their clustering).
ARI_NOTE = ("ARI: of labels_ (rankmix: the kept draw of least mean VI to the "
            "others; scikit-learn: predict); predict: of predict(X), each row's "
            "most probable cluster")


def rankmix_row(model, X, y, seconds, **extra):
    """A fitted rankmix model's figures: both ARIs, K, the fit time."""
    return dict(ari=adjusted_rand_score(y, model.labels_),
                ari_predict=adjusted_rand_score(y, model.predict(X)),
                k=model.n_clusters_, seconds=seconds, **extra)


def sklearn_row(model, X, y, seconds, **extra):
    """A fitted BayesianGaussianMixture's figures: its predict's ARI twice."""
    labels = model.predict(X)
    ari = adjusted_rand_score(y, labels)
    return dict(ari=ari, ari_predict=ari, k=len(np.unique(labels)),
                seconds=seconds, **extra)


def summary(rows):
    """Median of each column over the repeats."""
    return {key: float(np.median([row[key] for row in rows])) for key in rows[0]}


def paired_difference(ours, theirs, key):
    """Mean over the repeats of ours - theirs (same data set) for ``key``, and
    its 95% t-interval (the paired t-test's); None for fewer than two repeats."""
    if len(ours) < 2:
        return None
    mine = np.array([row[key] for row in ours])
    other = np.array([row[key] for row in theirs])
    interval = stats.ttest_rel(mine, other).confidence_interval(0.95)
    return float(np.mean(mine - other)), interval.low, interval.high


def section_dpmm(args):
    print("\n== DPMMSubClusters' README setting: N = 10,000, d = 2, K = 10, "
          "100 iterations from one cluster, one thread ==")
    results = {"rankmix subcluster": [], "sklearn BGM": []}
    for repeat in range(args.repeats):
        X, y = blobs(10_000, 2, 10, 100.0, seed=repeat)
        with threadpool_limits(1):
            model, seconds = fit_timed(
                rankmix_model(repeat, 100, sampler="subcluster", init="random",
                              init_clusters=1), X)
            results["rankmix subcluster"].append(
                rankmix_row(model, X, y, seconds))
            model, seconds = fit_timed(sklearn_model(repeat), X)
            results["sklearn BGM"].append(sklearn_row(model, X, y, seconds))
    print(f"{'method':<20} {'ARI':>6} {'predict':>8} {'K':>5} {'fit s':>8}")
    for name, rows in results.items():
        s = summary(rows)
        print(f"{name:<20} {s['ari']:6.3f} {s['ari_predict']:8.3f} {s['k']:5.0f} "
              f"{s['seconds']:8.2f}")
    print(ARI_NOTE)
    # "equal or better ARI" is a claim about the mean over data sets: the
    # difference on the same data, with its interval, says whether it holds
    for key, name in (("ari", "labels_"), ("ari_predict", "predict")):
        found = paired_difference(results["rankmix subcluster"],
                                  results["sklearn BGM"], key)
        if found is not None:
            print(f"ARI of {name} minus scikit-learn's, paired by data set: mean "
                  f"{found[0]:+.4f}, 95% t-interval [{found[1]:+.4f}, "
                  f"{found[2]:+.4f}] ({args.repeats} data sets)")
    ours = summary(results["rankmix subcluster"])["seconds"]
    theirs = summary(results["sklearn BGM"])["seconds"]
    print(f"time vs scikit-learn: {ours / theirs:.3f}x (goal <= 0.1x); vs "
          f"DPMMSubClusters' reported {DPMM_REPORTED_SECONDS} s: {ours:.2f} s")


def print_table(results, width):
    """The medians of each method's rows, its time against scikit-learn's."""
    reference = summary(results["sklearn BGM"])
    print(f"{'method':<{width}} {'ARI':>6} {'predict':>8} {'K':>5} "
          f"{'held-out ll':>12} {'fit s':>8} {'time / sklearn':>15}")
    for name, rows in results.items():
        found = summary(rows)
        print(f"{name:<{width}} {found['ari']:6.3f} {found['ari_predict']:8.3f} "
              f"{found['k']:5.0f} {found['ll']:12.4f} {found['seconds']:8.2f} "
              f"{found['seconds'] / reference['seconds']:15.3f}")
    print(ARI_NOTE)


def pooled_covariance(X, labels):
    """The covariance of the rows about their clusters' means, pooled."""
    sums = np.zeros((labels.max() + 1, X.shape[1]))
    np.add.at(sums, labels, X)
    residuals = X - (sums / np.bincount(labels)[:, None])[labels]
    return residuals.T @ residuals / len(X)


def section_liang(args):
    settings = ((10, 10),) if args.quick else ((10, 10), (40, 40), (80, 40))
    for d, k in settings:
        print(f"\n== Liang et al. (d, K) = ({d}, {k}): N = 10,000 train, 2,000 "
              f"test, {args.n_iter} sweeps, one thread ==")
        methods = {
            "subcluster full": dict(sampler="subcluster", covariance_type="full"),
            "subcluster diag": dict(sampler="subcluster", covariance_type="diag"),
            "gibbs+sm full": dict(sampler="gibbs+split-merge", covariance_type="full"),
            "gibbs+sm diag": dict(sampler="gibbs+split-merge", covariance_type="diag"),
        }
        informed = "subcluster full, prior from diag"
        results = {name: [] for name in [*methods, informed, "sklearn BGM"]}
        for repeat in range(args.repeats):
            X, y, _ = make_data(d, k, 12_000, seed=repeat)
            X_test, X, y = X[:2000], X[2000:], y[2000:]
            with threadpool_limits(1):
                for name, params in methods.items():
                    model, seconds = fit_timed(
                        rankmix_model(repeat, args.n_iter, **params), X)
                    results[name].append(rankmix_row(
                        model, X, y, seconds, ll=model.score(X_test)))
                    if name == "subcluster diag":
                        pilot, pilot_seconds = model, seconds
                # under the default prior, weak and not centred on the clusters'
                # covariance, the full model's posterior merges clusters at d = 40
                # and 80; under a prior on the clusters' own scale, taken from the
                # diag fit, it does not (the user guide's recipe, "Which sampler
                # to choose")
                nu = 2 * d
                model, seconds = fit_timed(rankmix_model(
                    repeat, args.n_iter, sampler="subcluster", nu=nu,
                    covariance_prior=nu * pooled_covariance(X, pilot.labels_)), X)
                results[informed].append(rankmix_row(
                    model, X, y, pilot_seconds + seconds, ll=model.score(X_test)))
                model, seconds = fit_timed(sklearn_model(repeat), X)
                results["sklearn BGM"].append(sklearn_row(
                    model, X, y, seconds, ll=model.score(X_test)))
        print_table(results, 33)


def section_defaults(args):
    settings = ((10, 10),) if args.quick else ((10, 10), (40, 40), (80, 40))
    for d, k in settings:
        print(f"\n== Liang et al. (d, K) = ({d}, {k}), N = 10,000 train, 2,000 test: "
              "DPGaussianClustering() with every default (two chains side by side "
              "on the cores) against scikit-learn on one thread ==")
        results = {"rankmix defaults": [], "sklearn BGM": []}
        for repeat in range(args.repeats):
            X, y, _ = make_data(d, k, 12_000, seed=repeat)
            X_test, X, y = X[:2000], X[2000:], y[2000:]
            model, seconds = fit_timed(DPGaussianClustering(random_state=repeat), X)
            results["rankmix defaults"].append(rankmix_row(
                model, X, y, seconds, ll=model.score(X_test)))
            with threadpool_limits(1):
                model, seconds = fit_timed(sklearn_model(repeat), X)
            results["sklearn BGM"].append(sklearn_row(
                model, X, y, seconds, ll=model.score(X_test)))
        print_table(results, 20)


def timed_sweeps(chain, n_sweeps, repeats, threads):
    """Median seconds per sweep of ``repeats`` runs of ``n_sweeps`` sweeps."""
    times = []
    with threadpool_limits(threads, user_api="openmp"):
        for repeat in range(repeats):
            start = time.perf_counter()
            chain.sweep(n_sweeps)
            times.append((time.perf_counter() - start) / n_sweeps)
    return float(np.median(times))


def section_scale(args):
    n = 100_000 if args.quick else 1_000_000
    print(f"\n== N = {n:,}, d = 10, K = 20: seconds per sweep of the sub-cluster "
          "sampler by OpenMP threads (the chain's sweeps alone, after its start "
          "and three sweeps). Copies of the chain (same seed) run the same "
          f"sweeps, one on each of {args.threads} threads: their draws are "
          "identical, so is their work ==")
    X, y = blobs(n, 10, 20, 20.0, seed=0)
    model = DPGaussianClustering(sampler="subcluster", covariance_type="full",
                                 random_state=0)
    make_chain, X_valid = chain_factory(model, X)
    chains = {threads: make_chain(np.random.PCG64(0)) for threads in args.threads}
    per_sweep = {}
    for threads, chain in chains.items():
        chain.sweep(3)   # past the start
        per_sweep[threads] = timed_sweeps(chain, 2, args.repeats, threads)
        print(f"{threads} thread(s): {per_sweep[threads]:.3f} s per sweep "
              f"(median of {args.repeats} runs of 2 sweeps; {chain.n_clusters} "
              "clusters)")
    first, *others = args.threads
    for threads in others:
        same = np.array_equal(chains[first].snapshot()[0],
                              chains[threads].snapshot()[0])
        print(f"speed-up of {threads} threads over {first}: "
              f"{per_sweep[first] / per_sweep[threads]:.2f}x"
              f"{' (goal >= 1.8x on 2 over 1)' if threads == 2 else ''}; "
              f"identical draws: {same}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"peak resident memory of this process: {peak:.2f} GiB, with "
          f"{len(chains)} chains "
          f"(the data: {X.nbytes / 2**30:.2f} GiB)")


def _blob_chunk(block_info=None, d=10, k=20, mean_variance=20.0):
    """One chunk of `blobs`-like data, generated on its worker from its position."""
    start, stop = block_info[None]["array-location"][0]
    means = np.random.default_rng(0).normal(0.0, np.sqrt(mean_variance), size=(k, d))
    rng = np.random.default_rng([1, start])
    return means[rng.integers(k, size=stop - start)] + rng.standard_normal(
        (stop - start, d))


def section_dask(args):
    n = 100_000 if args.quick else 1_000_000
    chunk = 131_072   # 2 row blocks of 65,536
    chunks = ((chunk,) * (n // chunk) + ((n % chunk,) if n % chunk else ()), (10,))
    print(f"\n== N = {n:,}, d = 10, K = 20 on a LocalCluster of {args.workers} "
          f"worker processes (1 thread each; chunks of {chunk:,} rows): seconds per "
          "sweep of the sub-cluster sampler with the rows on the workers, against "
          "the same chain in process on 1 thread; the rows are generated on the "
          "workers ==")
    run_on_workers(args, DPGaussianClustering, chunks, _blob_chunk,
                   np.empty((0, 10)), f"(the data: {n * 10 * 8 / 2**30:.2f} GiB, "
                   "on the workers)")


def run_on_workers(args, estimator, chunks, make_chunk, meta, data):
    """Seconds per sweep of ``estimator``'s sub-cluster chain on the rows
    ``make_chunk`` makes on the workers of each cluster, its round trips and
    the megabytes sent back, and of the same chain in process (the draws
    compared)."""
    import dask.array as da
    from distributed import Client, LocalCluster

    labels = {}
    for workers in args.workers:
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster):
            X = da.map_blocks(make_chunk, chunks=chunks, dtype=meta.dtype, meta=meta)
            model = estimator(sampler="subcluster", random_state=0)
            start = time.perf_counter()
            make_chain, rows = chain_factory(model, X)
            chain = make_chain(np.random.PCG64(0))
            print(f"start (validation, priors, binding, sequential start): "
                  f"{time.perf_counter() - start:.2f} s")
            chain.sweep(3)
            dask_sweep = timed_sweeps(chain, 2, args.repeats, 1)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            print(f"Dask, {workers} workers: {dask_sweep:.3f} s per sweep "
                  f"({chain.n_clusters} clusters); peak resident memory of the "
                  f"client: {peak:.2f} GiB {data}")
            labels[workers] = (chain.snapshot()[0], dask_sweep)
            print(f"round trips to the workers a sweep: "
                  f"{round_trips_per_sweep(rows, chain):.1f}; sent back a sweep: "
                  f"{megabytes_from_workers_per_sweep(rows, chain):.2f} MB in all, "
                  f"of which rows read {megabytes_read_per_sweep(rows, chain):.2f} "
                  "MB (5 more sweeps each)")
            if len(labels) == 1:
                X_here = X.compute()
    # the same chain with the rows in process, on the same sweeps: identical
    # draws, so identical work
    make_chain, _ = chain_factory(estimator(sampler="subcluster", random_state=0),
                                  X_here)
    here = make_chain(np.random.PCG64(0))
    here.sweep(3)
    in_process = timed_sweeps(here, 2, args.repeats, 1)
    print(f"in process, 1 thread, the same sweeps: {in_process:.3f} s per sweep")
    for workers, (their_labels, dask_sweep) in labels.items():
        print(f"{workers} workers: Dask / in process: {dask_sweep / in_process:.2f}; "
              "identical draws: "
              f"{bool(np.array_equal(here.snapshot()[0], their_labels))}")


def _topic_chunk(block_info=None, n_words=10_000, n_topics=20, length=100):
    """One chunk of documents of ``length`` words, each from one of ``n_topics``
    topics (Dirichlet(0.1) over the words), as CSR counts, made on its worker
    from its position."""
    start, stop = block_info[None]["array-location"][0]
    topics = np.random.default_rng(0).dirichlet(np.full(n_words, 0.1), size=n_topics)
    bounds = np.cumsum(topics, axis=1)
    rng = np.random.default_rng([2, start])
    n = stop - start
    topic = rng.integers(n_topics, size=n)
    words = np.empty((n, length), dtype=np.intp)
    for t in range(n_topics):
        mine = np.flatnonzero(topic == t)
        words[mine] = np.minimum(
            np.searchsorted(bounds[t], rng.random((len(mine), length))), n_words - 1)
    return sparse.csr_matrix(
        (np.ones(n * length, dtype=np.int64), (np.repeat(np.arange(n), length),
                                               words.ravel())),
        shape=(n, n_words))


def section_dask_counts(args):
    n = 131_072 if args.quick else 262_144
    chunk = 65_536 if args.quick else 131_072   # one or two row blocks
    chunks = ((chunk,) * (n // chunk), (args.words,))
    print(f"\n== N = {n:,} documents of 100 words, vocabulary {args.words:,}, 20 "
          "topics, "
          f"on a LocalCluster of {args.workers} worker processes (1 thread each; "
          f"scipy.sparse chunks of {chunk:,} rows): DPMultinomialClustering's "
          "sub-cluster sampler with the counts on the workers, against the same "
          "chain in process on 1 thread; the counts are generated on the workers ==")
    meta = sparse.csr_matrix((0, args.words), dtype=np.int64)
    make_chunk = functools.partial(_topic_chunk, n_words=args.words)
    run_on_workers(args, DPMultinomialClustering, chunks, make_chunk, meta,
                   f"(the data: at most {n * 100 * 12 / 2**30:.2f} GiB as CSR, on the "
                   "workers)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-iter", type=int, default=60)
    parser.add_argument("--sections", nargs="*",
                        default=["dpmm", "liang", "defaults", "scale", "dask",
                                 "dask_counts"])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                        help="OpenMP threads of the scale section's chains")
    parser.add_argument("--workers", type=int, nargs="+", default=[2],
                        help="worker processes of the dask section's clusters")
    parser.add_argument("--words", type=int, default=10_000,
                        help="the vocabulary of the dask_counts section")
    args = parser.parse_args()
    if args.quick:
        args.repeats = 1
    print_machine(f"sections {args.sections}, {args.repeats} repeat(s)")
    for name in args.sections:
        globals()[f"section_{name}"](args)


if __name__ == "__main__":
    main()
