# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""``rankmix demo``: the two estimators on data whose answer is known.

:class:`~rankmix.DPMallowsClustering` is fitted to one of the synthetic data sets
of Meila & Chen (2010) and compared with the truth, then
:class:`~rankmix.DPGaussianClustering` to the four measurements of Fisher's iris
flowers (embedded in scikit-learn) against scikit-learn's BayesianGaussianMixture.
"""

import argparse

import numpy as np
from scipy.special import logsumexp

from . import mallows
from ._cli_common import (
    fit_model,
    posterior_n_clusters,
    print_warnings,
)
from ._gaussian import DPGaussianClustering
from ._mallows import DPMallowsClustering
from .datasets import make_mallows_mixture
from .datasets._samples_generator import PAPER_DATASETS
from .metrics import variation_of_information

# Data set 1 of Meila & Chen (20 items, top-10 rankings, theta = 1) with 10
# clusters, fewer rankings per cluster than the paper's 500 so that the demo runs
# in about ten seconds; held-out rankings come from the same centres and theta.
DEMO_DATASET = 1
DEMO_N_CLUSTERS = 10
DEMO_N_PER_CLUSTER = 200
DEMO_N_ITER = 100

# Short names of the four iris measurements, in the order of load_iris().data.
IRIS_COLUMNS = ("sepal length", "sepal width", "petal length", "petal width")


def add_parser(commands, add_sampler_options, seed_type, positive_int):
    """Add the ``demo`` subcommand to the subparsers ``commands``.

    Parameters
    ----------
    commands : argparse._SubParsersAction
        The subparsers of the main parser.
    add_sampler_options : callable
        ``add_sampler_options(parser, n_iter)`` adds ``--sampler`` and
        ``--n-iter``, shared with ``fit``.
    seed_type, positive_int : callable
        The argparse types of a seed and of a positive integer.
    """
    demo = commands.add_parser(
        "demo",
        help=(
            "fit a synthetic data set of Meila & Chen (2010), compare with the "
            "truth; then cluster iris flowers against scikit-learn"
        ),
        description=(
            f"Draw {DEMO_N_CLUSTERS} clusters of rankings from data set {DEMO_DATASET} "
            "of Meila & Chen (2010) (20 items, top-10 rankings, theta = 1), fit "
            "DPMallowsClustering to the training part and report the clusters found, "
            "the variation of information to the true labels and the held-out "
            "log-likelihood of the model and of the true mixture. Then fit "
            "DPGaussianClustering to the four measurements of Fisher's iris "
            "flowers and compare it with scikit-learn's BayesianGaussianMixture. "
            "Takes about ten seconds."
        ),
    )
    add_sampler_options(demo, n_iter=DEMO_N_ITER)
    demo.add_argument(
        "--seed",
        type=seed_type,
        default=0,
        help="seed of the data and of the chains (default: %(default)s)",
    )
    # Advanced: shrinks the demo (for tests); the held-out set is half as large.
    demo.add_argument(
        "--n-per-cluster",
        type=positive_int,
        default=DEMO_N_PER_CLUSTER,
        help=argparse.SUPPRESS,
    )


def run_demo(args):
    """``demo``: fit a synthetic data set of Meila & Chen and compare with the truth.

    Parameters
    ----------
    args : argparse.Namespace
        ``sampler``, ``n_iter``, ``seed`` and ``n_per_cluster``.

    Returns
    -------
    exit_code : int
    """
    n_train = args.n_per_cluster
    n_test = max(1, n_train // 2)
    true_theta = PAPER_DATASETS[DEMO_DATASET]["theta"]
    X, y, centres = make_mallows_mixture(
        n_clusters=DEMO_N_CLUSTERS,
        n_per_cluster=n_train + n_test,
        dataset=DEMO_DATASET,
        random_state=args.seed,
    )
    order = np.random.RandomState(args.seed).permutation(len(X))
    train, test = order[: DEMO_N_CLUSTERS * n_train], order[DEMO_N_CLUSTERS * n_train :]
    X_train, y_train, X_test = X[train], y[train], X[test]

    burn_in = args.n_iter // 2
    model = DPMallowsClustering(
        sampler=args.sampler,
        n_iter=args.n_iter,
        burn_in=burn_in,
        n_chains=2,
        random_state=args.seed,
    )
    print(
        f"Data set {DEMO_DATASET} of Meila & Chen (2010): {centres.shape[1]} items, "
        f"top-{X.shape[1]} rankings, theta = {true_theta[0]:g} at every rank, "
        f"{DEMO_N_CLUSTERS} clusters"
    )
    print(
        f"  {len(X_train)} training rankings, {len(X_test)} held-out rankings "
        "from the same centres and theta"
    )
    print(
        f"DPMallowsClustering(sampler={args.sampler!r}, n_iter={args.n_iter}, "
        f"burn_in={burn_in}, n_chains=2, random_state={args.seed})"
    )
    fit_time, messages = fit_model(model, X_train)

    log_lik = mallows.log_likelihood(X_test, centres, true_theta)
    true_score = float(np.mean(logsumexp(log_lik, axis=1) - np.log(len(centres))))
    vi = variation_of_information(y_train, model.labels_)
    sizes = np.sort(np.bincount(model.labels_))[::-1]

    print(f"fit time: {fit_time:.1f} s")
    print(f"clusters found: {model.n_clusters_} (true: {DEMO_N_CLUSTERS})")
    print(f"posterior number of clusters: {posterior_n_clusters(model.label_samples_)}")
    print(
        f"VI to the true labels: {vi:.3f} nats "
        f"(0 = same clustering, at most log N = {np.log(len(X_train)):.2f})"
    )
    print(
        f"held-out log-likelihood per ranking: {model.score(X_test):.3f} (model), "
        f"{true_score:.3f} (true mixture)"
    )
    true_sizes = np.sort(np.bincount(y_train))[::-1]
    print(f"cluster sizes: {' '.join(map(str, sizes))}")
    print(f"  true sizes:  {' '.join(map(str, true_sizes))}")
    print_warnings(messages)
    print()
    _run_gaussian_demo(args)
    return 0


def _run_gaussian_demo(args):
    """The vector half of ``demo``: iris flowers, rankmix against scikit-learn."""
    from sklearn.datasets import load_iris
    from sklearn.metrics import adjusted_rand_score
    from sklearn.mixture import BayesianGaussianMixture
    from sklearn.model_selection import train_test_split

    iris = load_iris()
    X_train, X_test, y_train, _ = train_test_split(
        iris.data,
        iris.target,
        test_size=0.3,
        random_state=args.seed,
        stratify=iris.target,
    )
    burn_in = args.n_iter // 2
    print(
        f"Fisher's iris (sepal and petal length and width, cm): {len(X_train)} "
        f"training flowers, {len(X_test)} held out; 3 species"
    )
    print(
        f"DPGaussianClustering(n_iter={args.n_iter}, burn_in={burn_in}, "
        f"n_chains=2, random_state={args.seed})"
    )
    model = DPGaussianClustering(
        n_iter=args.n_iter, burn_in=burn_in, n_chains=2, random_state=args.seed
    )
    fit_time, messages = fit_model(model, X_train)
    peer = BayesianGaussianMixture(
        n_components=10,
        weight_concentration_prior_type="dirichlet_process",
        random_state=args.seed,
    )
    peer_time, _ = fit_model(peer, X_train)  # its warnings are not rankmix's
    peer_labels = peer.predict(X_train)
    print(f"{'':36}{'clusters':>9}{'ARI':>7}{'held-out ll':>13}{'fit s':>7}")
    for name, labels, score, seconds in (
        ("rankmix DPGaussianClustering", model.labels_, model.score(X_test), fit_time),
        ("sklearn BayesianGaussianMixture", peer_labels, peer.score(X_test), peer_time),
    ):
        print(
            f"  {name:<34}{len(np.unique(labels)):>9}"
            f"{adjusted_rand_score(y_train, labels):7.3f}{score:13.3f}{seconds:7.2f}"
        )
    # All four means: clusters that differ only in the sepals would otherwise
    # print at the same place and read like duplicates.
    print(f"clusters found by rankmix (mean {', '.join(IRIS_COLUMNS)}, cm):")
    for k in np.argsort(model.means_[:, 2], kind="stable"):  # by petal length
        members = model.labels_ == k
        counts = np.bincount(y_train[members], minlength=3)
        species = ", ".join(
            f"{n} {name}" for n, name in zip(counts, iris.target_names) if n
        )
        means = ", ".join(f"{value:.2f}" for value in model.means_[k])
        flowers = "flower" if members.sum() == 1 else "flowers"
        print(f"  ({means}): {members.sum()} {flowers}: {species}")
    print(
        "  (versicolor and virginica overlap in these measurements, so a "
        "cluster may hold both)"
    )
    print_warnings(messages)
