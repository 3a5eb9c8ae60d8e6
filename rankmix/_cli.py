# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The command line of rankmix: ``python -m rankmix {demo,fit}``.

``demo`` fits :class:`~rankmix.DPMallowsClustering` to one of the synthetic data
sets of Meila & Chen (2010) and compares it with the truth, then
:class:`~rankmix.DPGaussianClustering` to the four measurements of Fisher's iris
flowers (embedded in scikit-learn) against scikit-learn's BayesianGaussianMixture;
``fit`` clusters a text file of rankings, one per line, item names separated by
commas, best first.
"""

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np
from scipy.special import logsumexp

from . import __version__, mallows
from ._gaussian import DPGaussianClustering
from ._mallows import DPMallowsClustering
from .datasets import make_mallows_mixture
from .datasets._samples_generator import PAPER_DATASETS
from .metrics import variation_of_information

PROG = "python -m rankmix"
SAMPLERS = ("beta-gibbs", "slice-gibbs")

# The demo: data set 1 of Meila & Chen (20 items, top-10 rankings, theta = 1) with
# 10 clusters, fewer rankings per cluster than the paper's 500 so that it runs in a
# few seconds; held-out rankings come from the same centres and theta.
DEMO_DATASET = 1
DEMO_N_CLUSTERS = 10
DEMO_N_PER_CLUSTER = 200
DEMO_N_ITER = 100

# Central rankings of at most this many items are shown whole by default; longer
# ones are cut after DEFAULT_TOP items.
SHOW_ALL_ITEMS = 15
DEFAULT_TOP = 10


class InputError(Exception):
    """A problem with the user's input, reported without a traceback."""


def main(argv=None):
    """Run the command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments, without the program name. None reads ``sys.argv[1:]``.

    Returns
    -------
    exit_code : int
        0 on success, 2 for bad arguments or a bad input file, 130 when
        interrupted.
    """
    parser = _build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        parser.print_help()
        return 0
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version or a usage error
        return _exit_code(exc)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        if args.command == "demo":
            return _run_demo(args)
        return _run_fit(args)
    except InputError as exc:
        print(f"{PROG} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout (head, for instance) has gone: stop quietly. Point
        # stdout at devnull so that the flush at exit does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _exit_code(exc):
    """The integer exit code carried by a SystemExit."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def _build_parser():
    """The argument parser, with one subcommand per task.

    Returns
    -------
    parser : argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Cluster rankings with Dirichlet-process mixtures of generalized Mallows "
            "models, fitted by MCMC. The number of clusters is inferred from the data."
        ),
        epilog=f"Run '{PROG} COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

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
            "flowers and compare it with scikit-learn's BayesianGaussianMixture."
        ),
    )
    _add_sampler_options(demo, n_iter=DEMO_N_ITER)
    demo.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help="seed of the data and of the chains (default: %(default)s)",
    )
    # Advanced: shrinks the demo (for tests); the held-out set is half as large.
    demo.add_argument(
        "--n-per-cluster",
        type=_positive_int,
        default=DEMO_N_PER_CLUSTER,
        help=argparse.SUPPRESS,
    )

    fit = commands.add_parser(
        "fit",
        help="cluster a text file of rankings",
        description=(
            "Cluster the rankings of FILE: one ranking per line, item names separated "
            "by commas, best first, of any length. Blank lines and lines starting "
            "with '#' are skipped. Prints each cluster, largest first, with its "
            "central ranking and its dispersion theta per rank (larger theta: the "
            "rankings agree more closely with the central ranking at that rank)."
        ),
    )
    fit.add_argument("file", metavar="FILE", help="the rankings, one per line")
    fit.add_argument(
        "--alpha",
        type=_positive_float,
        default=1.0,
        help="DP concentration; larger values favour more clusters "
        "(default: %(default)s)",
    )
    fit.add_argument(
        "--nu",
        type=_positive_float,
        default=1.0,
        help="strength of the prior on theta (default: %(default)s)",
    )
    _add_sampler_options(fit, n_iter=200)
    fit.add_argument(
        "--burn-in",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="sweeps discarded at the start of each chain (default: half of --n-iter)",
    )
    fit.add_argument(
        "--chains",
        type=_positive_int,
        default=2,
        metavar="N",
        help="independent chains (default: %(default)s)",
    )
    fit.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help="seed of the chains (default: %(default)s)",
    )
    fit.add_argument(
        "--top",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"items of each central ranking to show (default: all up to "
        f"{SHOW_ALL_ITEMS} items, else {DEFAULT_TOP})",
    )
    return parser


def _add_sampler_options(parser, n_iter):
    """Add ``--sampler`` and ``--n-iter`` to a subcommand's parser."""
    parser.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default="beta-gibbs",
        help="MCMC sampler of Meila & Chen (default: %(default)s)",
    )
    parser.add_argument(
        "--n-iter",
        type=_positive_int,
        default=n_iter,
        metavar="N",
        help="sweeps per chain, burn-in included (default: %(default)s)",
    )


def _positive_int(text):
    """argparse type: an integer >= 1."""
    value = _parse(text, int, "an integer")
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text):
    """argparse type: an integer >= 0."""
    value = _parse(text, int, "an integer")
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _positive_float(text):
    """argparse type: a finite number > 0."""
    value = _parse(text, float, "a number")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def _seed(text):
    """argparse type: a seed, an integer in [0, 2**32) as NumPy requires."""
    value = _parse(text, int, "an integer")
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(
            f"expected an integer between 0 and 2**32 - 1, got {text!r}"
        )
    return value


def _parse(text, kind, description):
    """Convert ``text`` with ``kind``, or raise the error argparse reports."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {description}, got {text!r}"
        ) from None


# -- reading and formatting -----------------------------------------------------


def _read_rankings(path):
    """Read a text file of rankings, one per line, item names separated by commas.

    Parameters
    ----------
    path : str
        The file, UTF-8. Each line lists item names, best first, separated by
        commas; whitespace around names is stripped. Blank lines and lines whose
        first non-blank character is '#' are skipped.

    Returns
    -------
    X : ndarray of shape (n_rankings, t_max), dtype=np.intp
        The rankings as item ids, padded with -1. Ids number the names in order of
        first appearance.
    names : list of str
        ``names[i]`` is the name of item ``i``.

    Raises
    ------
    InputError
        If the file cannot be read or is not UTF-8 text, or a line holds an empty
        item name (only commas, two commas in a row, a comma at an end) or an item
        twice. The message names the line.
    """
    try:
        with open(path, "rb") as file:
            raw = file.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file of rankings") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the file ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(f"{path}, line {line}: not UTF-8 text") from None

    ids = {}
    rankings = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path}, line {number}"
        fields = [name.strip() for name in line.split(",")]
        if not any(fields):
            raise InputError(f"{where}: empty ranking (the line holds only commas)")
        seen = {}
        for position, name in enumerate(fields, start=1):
            if not name:
                raise InputError(
                    f"{where}: item {position} has no name (two commas in a row, "
                    "or a comma at the start or end of the line)"
                )
            if name in seen:
                raise InputError(
                    f"{where}: item {name!r} appears twice (positions {seen[name]} "
                    f"and {position}); the items of a ranking must be distinct"
                )
            seen[name] = position
        rankings.append([ids.setdefault(name, len(ids)) for name in fields])

    t_max = max((len(ranking) for ranking in rankings), default=0)
    X = np.full((len(rankings), t_max), -1, dtype=np.intp)
    for row, ranking in zip(X, rankings):
        row[: len(ranking)] = ranking
    return X, list(ids)


def _format_cluster(number, size, n_total, central, theta, names, top=None):
    """Describe one cluster in three lines.

    Parameters
    ----------
    number : int
        The cluster's number in the listing (1 for the largest).
    size : int
        Rankings in the cluster.
    n_total : int
        Rankings in all clusters.
    central : ndarray of shape (n_items,)
        The central ranking, item ids best first.
    theta : ndarray of shape (t_max,)
        The dispersion per rank.
    names : list of str
        Item names by id.
    top : int, default=None
        Items of the central ranking to show. None shows all of them up to
        ``SHOW_ALL_ITEMS`` items, else the first ``DEFAULT_TOP``.

    Returns
    -------
    text : str
        The lines, without a final newline.
    """
    if top is None:
        top = len(central) if len(central) <= SHOW_ALL_ITEMS else DEFAULT_TOP
    shown = [names[item] for item in central[:top]]
    if top < len(central):
        shown.append("...")
    return "\n".join(
        [
            f"cluster {number}: {_plural(size, 'ranking')} "
            f"({100 * size / n_total:.1f}%)",
            f"  central ranking: {' > '.join(shown)}",
            f"  theta per rank:  {' '.join(f'{value:.2f}' for value in theta)}",
        ]
    )


def _posterior_n_clusters(label_samples):
    """The posterior distribution of the number of clusters, as text."""
    counts = np.array([len(np.unique(draw)) for draw in label_samples])
    values, freq = np.unique(counts, return_counts=True)
    order = np.argsort(-freq, kind="stable")
    return ", ".join(f"{values[i]} ({100 * freq[i] / len(counts):.0f}%)" for i in order)


def _fit_model(model, X):
    """Fit ``model`` to ``X``; return the time taken and the warnings raised.

    Warnings (chains that disagree, for instance) are returned rather than shown,
    so that they can be printed as one line each.
    """
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    messages = list(dict.fromkeys(str(warning.message) for warning in caught))
    return time.perf_counter() - start, messages


def _plural(count, noun):
    """``count`` and ``noun``, with an 's' unless ``count`` is 1."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _print_warnings(messages):
    """Print each warning message as one line on stderr, after stdout's lines."""
    sys.stdout.flush()  # keep the order of the two streams on a terminal
    for message in messages:
        print(f"warning: {message}", file=sys.stderr)


# -- the commands -----------------------------------------------------------------


def _run_demo(args):
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
    fit_time, messages = _fit_model(model, X_train)

    log_lik = mallows.log_likelihood(X_test, centres, true_theta)
    true_score = float(np.mean(logsumexp(log_lik, axis=1) - np.log(len(centres))))
    vi = variation_of_information(y_train, model.labels_)
    sizes = np.sort(np.bincount(model.labels_))[::-1]

    print(f"fit time: {fit_time:.1f} s")
    print(f"clusters found: {model.n_clusters_} (true: {DEMO_N_CLUSTERS})")
    print(
        f"posterior number of clusters: {_posterior_n_clusters(model.label_samples_)}"
    )
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
    _print_warnings(messages)
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
        iris.data, iris.target, test_size=0.3, random_state=args.seed,
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
    fit_time, messages = _fit_model(model, X_train)
    peer = BayesianGaussianMixture(
        n_components=10,
        weight_concentration_prior_type="dirichlet_process",
        random_state=args.seed,
    )
    peer_time, _ = _fit_model(peer, X_train)  # its warnings are not rankmix's
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
    print("clusters found by rankmix (mean petal length and width, cm):")
    for k in np.argsort(model.means_[:, 2]):
        counts = np.bincount(y_train[model.labels_ == k], minlength=3)
        species = ", ".join(
            f"{n} {name}" for n, name in zip(counts, iris.target_names) if n
        )
        print(
            f"  ({model.means_[k, 2]:.2f}, {model.means_[k, 3]:.2f}): "
            f"{(model.labels_ == k).sum()} flowers: {species}"
        )
    _print_warnings(messages)


def _run_fit(args):
    """``fit``: cluster a text file of rankings and print the clusters.

    Parameters
    ----------
    args : argparse.Namespace
        ``file``, ``alpha``, ``nu``, ``sampler``, ``n_iter``, ``burn_in``,
        ``chains``, ``seed`` and ``top``.

    Returns
    -------
    exit_code : int

    Raises
    ------
    InputError
        For a bad file, too few rankings or ``--burn-in`` >= ``--n-iter``.
    """
    burn_in = args.n_iter // 2 if args.burn_in is None else args.burn_in
    if burn_in >= args.n_iter:
        raise InputError(
            f"--burn-in ({burn_in}) must be smaller than --n-iter ({args.n_iter}): "
            "no draw would be kept"
        )
    X, names = _read_rankings(args.file)
    if len(X) < 2:
        raise InputError(
            f"{args.file}: found {_plural(len(X), 'ranking')}; "
            "at least 2 are needed to cluster"
        )
    lengths = (X != -1).sum(axis=1)
    model = DPMallowsClustering(
        alpha=args.alpha,
        nu=args.nu,
        sampler=args.sampler,
        n_iter=args.n_iter,
        burn_in=burn_in,
        n_chains=args.chains,
        random_state=args.seed,
    )
    fit_time, messages = _fit_model(model, X)

    span = (
        f"{lengths.min()}"
        if lengths.min() == lengths.max()
        else f"{lengths.min()} to {lengths.max()}"
    )
    print(
        f"{args.file}: {len(X)} rankings of {_plural(len(names), 'item')} "
        f"(each ranks {span} item{'' if lengths.max() == 1 else 's'})"
    )
    print(
        f"sampler {args.sampler}, alpha={args.alpha:g}, nu={args.nu:g}: "
        f"{_plural(args.chains, 'chain')} x {args.n_iter} "
        f"sweeps (burn-in {burn_in}), seed {args.seed}, {fit_time:.1f} s"
    )
    print(
        f"{_plural(model.n_clusters_, 'cluster')}; posterior number of clusters: "
        f"{_posterior_n_clusters(model.label_samples_)}"
    )
    sizes = np.bincount(model.labels_, minlength=model.n_clusters_)
    for number, k in enumerate(np.argsort(-sizes, kind="stable"), start=1):
        print()
        print(
            _format_cluster(
                number,
                int(sizes[k]),
                len(X),
                model.central_rankings_[k],
                model.thetas_[k],
                names,
                top=args.top,
            )
        )
    _print_warnings(messages)
    return 0
