# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The command line of rankmix: ``rankmix {demo,fit}``, or ``python -m rankmix``.

``demo`` (:mod:`rankmix._demo`) fits the two estimators to data whose answer is
known; ``fit`` clusters a file of rankings: a text file, one ranking per line,
item names best first, or a PrefLib file (:mod:`rankmix._cli_read` reads both).
The user's documentation is doc/cli.rst.
"""

import argparse
import csv
import json
import math
import os
import sys

import numpy as np

from . import __version__
from ._base import MAX_CHAINS
from ._cli_common import (
    SAMPLERS,
    InputError,
    fit_model,
    n_clusters_per_draw,
    plural,
    posterior_n_clusters,
    print_warnings,
)
from ._cli_read import is_preflib, parse_delimiter, read_rankings
from ._demo import add_parser as add_demo_parser
from ._demo import run_demo
from ._diagnostics import RHAT_THRESHOLD, rhat
from ._mallows import SUBCLUSTER_SPLIT_MERGE, DPMallowsClustering, _check_chain_memory
from ._validation import INTP_MAX

# The name in usage lines and errors when it cannot be told from sys.argv[0].
DEFAULT_PROG = "python -m rankmix"

# Central rankings and thetas of at most this many entries are shown whole by
# default; longer ones are cut after DEFAULT_TOP entries.
SHOW_ALL_ITEMS = 15
DEFAULT_TOP = 10

# Clusters "that matter" in the summary hold at least this share of the rankings,
# and at least MIN_CLUSTER_SIZE of them: the point estimate and most draws also
# hold singletons and pairs that come and go between draws, and counting them
# makes the number of clusters look larger than the structure of the data.
MIN_CLUSTER_SHARE = 0.01
MIN_CLUSTER_SIZE = 2

POINT_ESTIMATE = (
    "the kept draw with the least mean variation of information to the other kept draws"
)


def main(argv=None, prog=None):
    """Run the command line.

    Parameters
    ----------
    argv : list of str, default=None
        The arguments, without the program name. None reads ``sys.argv[1:]``.
    prog : str, default=None
        The program name shown in usage lines and errors. None derives it from
        ``sys.argv[0]``: ``rankmix`` for the console script, else ``python -m
        rankmix``.

    Returns
    -------
    exit_code : int
        0 on success, 2 for bad arguments, a bad input file or an output file
        that cannot be written, 1 when stdout is closed early (a pipe into
        ``head``), 130 when interrupted.
    """
    prog = _prog_name(sys.argv[0] if sys.argv else "") if prog is None else prog
    parser = _build_parser(prog)
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
            return run_demo(args)
        return _run_fit(args)
    except InputError as exc:
        sys.stdout.flush()
        print(f"{prog} {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of stdout (head, for instance) has gone: stop quietly. Point
        # stdout at devnull so that the flush at exit does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _prog_name(argv0):
    """The program name for usage lines, from ``sys.argv[0]``.

    The console script runs as ``.../bin/rankmix`` (``rankmix.exe`` or
    ``rankmix-script.py`` on Windows); ``python -m rankmix`` runs
    ``.../rankmix/__main__.py``. Anything else (a test runner, an embedding
    program) gets the ``python -m`` form, which works wherever rankmix is
    installed.
    """
    name = os.path.basename(argv0 or "").lower()
    for suffix in (".exe", "-script.py", ".py"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return "rankmix" if name == "rankmix" else DEFAULT_PROG


def _exit_code(exc):
    """The integer exit code carried by a SystemExit."""
    if exc.code is None:
        return 0
    return exc.code if isinstance(exc.code, int) else 1


def _build_parser(prog=DEFAULT_PROG):
    """The argument parser, with one subcommand per task.

    Parameters
    ----------
    prog : str, default="python -m rankmix"
        The program name in usage lines.

    Returns
    -------
    parser : argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            "Cluster rankings with Dirichlet-process mixtures of generalized Mallows "
            "models, fitted by MCMC. The number of clusters is inferred from the data."
        ),
        epilog=f"Run '{prog} COMMAND --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=__version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_demo_parser(commands, _add_sampler_options, _seed, _positive_int)
    _add_fit_parser(commands)
    return parser


def _add_fit_parser(commands):
    """Add the ``fit`` subcommand to the subparsers ``commands``."""
    fit = commands.add_parser(
        "fit",
        help="cluster a file of rankings (text or PrefLib)",
        description=(
            "Cluster the rankings of FILE and print each cluster, largest first, "
            "with its central ranking and its dispersion theta per rank (larger "
            "theta: the rankings agree more closely with the central ranking at "
            "that rank). A text file holds one ranking per line, item names best "
            "first, separated by commas (see --delimiter), of any length; a name "
            'in double quotes may hold the delimiter ("Smith, J"). Blank lines and '
            "lines starting with '#' are skipped. Files named .soc, .soi, .toc or "
            ".toi are read as PrefLib files, one ranking per ballot."
        ),
        epilog=(
            "Exit codes: 0 success; 1 the reader of stdout closed it early "
            "(the output files are written); 2 bad options, a malformed or "
            "misread file (the message names the line), or an output file that "
            "cannot be written; 130 interrupted."
        ),
    )
    fit.add_argument("file", metavar="FILE", help="the rankings")

    reading = fit.add_argument_group("reading FILE")
    reading.add_argument(
        "--format",
        choices=("auto", "text", "preflib"),
        default="auto",
        help="'auto' reads .soc, .soi, .toc and .toi files as PrefLib files and "
        "any other file as text (default: %(default)s)",
    )
    reading.add_argument(
        "--delimiter",
        type=parse_delimiter,
        default=None,
        metavar="CHAR",
        help="the character between item names in a text file: one character, "
        "or comma, tab (or \\t), semicolon, pipe, space (default: comma)",
    )
    header = reading.add_mutually_exclusive_group()
    header.add_argument(
        "--header",
        action="store_true",
        default=None,
        help="skip the first line that is not blank or a comment (column names)",
    )
    header.add_argument(
        "--no-header",
        dest="header",
        action="store_false",
        help="read the first line as a ranking even if it looks like a header "
        "(by default, a first line whose items appear on no other line is refused)",
    )
    reading.add_argument(
        "--missing",
        default=None,
        metavar="TOKEN",
        help="a token that marks unfilled positions at the end of a line, as in "
        "top-t files padded to a fixed width (--missing 0 for '5,2,0,0,0'); "
        "trailing empty fields are dropped too",
    )
    reading.add_argument(
        "--ties",
        choices=("raise", "truncate"),
        default=None,
        help="PrefLib orders with ties ({a,b}): 'raise' refuses the file, "
        "'truncate' keeps each order up to its first tie (default: raise)",
    )
    items = reading.add_mutually_exclusive_group()
    items.add_argument(
        "--items",
        type=_item_list,
        default=None,
        metavar="NAME,NAME,...",
        help="the item set of a text file, comma-separated: every name of FILE "
        "must be among them, and the others count as items no ranking mentions",
    )
    items.add_argument(
        "--n-items",
        type=_positive_int,
        default=None,
        metavar="N",
        help="the number of items, at least the number of distinct items of "
        "FILE; the items no ranking mentions are named '(unseen item 1)', ...",
    )
    reading.add_argument(
        "--subsample",
        type=_positive_int,
        default=None,
        metavar="N",
        help="fit a random subsample of N rankings (drawn with --seed), for a "
        "quick look at a large file; --labels then gives the others the cluster "
        "the model predicts for them",
    )

    model = fit.add_argument_group("model and sampler")
    model.add_argument(
        "--alpha",
        type=_positive_float,
        default=1.0,
        help="DP concentration; larger values favour more clusters "
        "(default: %(default)s)",
    )
    model.add_argument(
        "--nu",
        type=_positive_float,
        default=1.0,
        help="strength of the prior on theta (default: %(default)s)",
    )
    _add_sampler_options(model, n_iter=200)
    model.add_argument(
        "--burn-in",
        type=_non_negative_int,
        default=None,
        metavar="N",
        help="sweeps discarded at the start of each chain (default: half of --n-iter)",
    )
    model.add_argument(
        "--chains",
        type=_n_chains,
        default=2,
        metavar="N",
        help="independent chains (default: %(default)s)",
    )
    model.add_argument(
        "--jobs",
        type=_n_jobs,
        default=None,
        metavar="N",
        help="chains run in parallel, -1 for one per processor; the result does "
        "not depend on it (default: as many as the cores OpenMP may use, at most "
        "--chains)",
    )
    model.add_argument(
        "--seed",
        type=_seed,
        default=0,
        help="seed of the chains and of --subsample (default: %(default)s)",
    )
    model.add_argument(
        "--verbose",
        action="store_true",
        help="show the progress of the chains on stderr",
    )

    output = fit.add_argument_group("output")
    output.add_argument(
        "--top",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"items of each central ranking, and thetas, to show (default: all "
        f"up to {SHOW_ALL_ITEMS}, else {DEFAULT_TOP})",
    )
    output.add_argument(
        "--labels",
        default=None,
        metavar="OUT",
        help="write the cluster of each ranking to OUT, one number per line in "
        "the order of FILE's rankings (not counting blank, comment and header "
        "lines; for a PrefLib file, one line per ballot, the ballots of each "
        "order line together); clusters are numbered as printed, 1 the largest",
    )
    output.add_argument(
        "--json",
        default=None,
        metavar="OUT",
        help="write the clusters (sizes, central rankings, thetas), the "
        "posterior of the number of clusters, R-hat and the settings to OUT as JSON",
    )
    output.add_argument(
        "--save",
        default=None,
        metavar="OUT",
        help="save the fitted DPMallowsClustering to OUT with joblib.dump; its "
        "item ids index the 'items' list of --json",
    )


def _add_sampler_options(parser, n_iter):
    """Add ``--sampler`` and ``--n-iter`` to a subcommand's parser."""
    parser.add_argument(
        "--sampler",
        choices=SAMPLERS,
        default=DPMallowsClustering().sampler,
        help=(
            "MCMC sampler: Meila & Chen's slice-gibbs (exact, with one split-merge "
            "proposal per sweep) or beta-gibbs (approximate), or subcluster "
            f"(parallel, with {SUBCLUSTER_SPLIT_MERGE} split-merge proposals per "
            "sweep) (default: %(default)s)"
        ),
    )
    parser.add_argument(
        "--n-iter",
        type=_positive_int,
        default=n_iter,
        metavar="N",
        help="sweeps per chain, burn-in included (default: %(default)s)",
    )


def _integer_type(low, high, expected):
    """argparse type: an integer in [low, high], else "expected ``expected``"."""

    def parse(text):
        value = _parse(text, int, "an integer")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


_positive_int = _integer_type(1, INTP_MAX, "a positive integer below 2**63")
_non_negative_int = _integer_type(0, INTP_MAX, "an integer >= 0 and below 2**63")
# a number of chains, bounded as the estimators' n_chains
_n_chains = _integer_type(1, MAX_CHAINS, f"a positive integer at most {MAX_CHAINS:,}")


def _n_jobs(text):
    """argparse type: a number of jobs, an integer other than 0 (-1: all)."""
    value = _parse(text, int, "an integer")
    if value == 0:
        raise argparse.ArgumentTypeError(
            "expected a positive integer, or -1 for all processors; got '0'"
        )
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


def _item_list(text):
    """argparse type of ``--items``: comma-separated names, quoted like the file."""
    try:
        names = next(csv.reader([text], skipinitialspace=True, strict=True), [])
    except csv.Error as exc:
        raise argparse.ArgumentTypeError(f"bad quoting in {text!r} ({exc})") from None
    names = [name.strip() for name in names]
    if not names or not all(names):
        raise argparse.ArgumentTypeError(f"expected NAME,NAME,... got {text!r}")
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise argparse.ArgumentTypeError(f"{duplicates[0]!r} is listed twice")
    return names


def _parse(text, kind, description):
    """Convert ``text`` with ``kind``, or raise the error argparse reports."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected {description}, got {text!r}"
        ) from None


# -- formatting -------------------------------------------------------------------


def _shown(values, top):
    """How many of ``values`` to show: ``top``, or all of a short list."""
    if top is None:
        top = len(values) if len(values) <= SHOW_ALL_ITEMS else DEFAULT_TOP
    return min(top, len(values))


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
    theta : array-like of shape (n_ranks,)
        The dispersion of each rank that carries information.
    names : list of str
        Item names by id.
    top : int, default=None
        Items of the central ranking, and thetas, to show. None shows all of a
        list of up to ``SHOW_ALL_ITEMS`` entries, else the first ``DEFAULT_TOP``.

    Returns
    -------
    text : str
        The lines, without a final newline.
    """
    n_items = _shown(central, top)
    items = [names[item] for item in central[:n_items]]
    if n_items < len(central):
        items.append("...")
    n_thetas = _shown(theta, top)
    thetas = [f"{value:.2f}" for value in theta[:n_thetas]]
    if n_thetas < len(theta):
        thetas.append("...")
    share = f"{100 * size / n_total:.1f}%"
    return "\n".join(
        [
            f"cluster {number}: {plural(size, 'ranking')} ({share})",
            f"  central ranking: {' > '.join(items)}",
            f"  theta per rank:  {' '.join(thetas)}",
        ]
    )


def _span(lengths):
    """The range of ranking lengths, as text: "3" or "1 to 14"."""
    low, high = int(lengths.min()), int(lengths.max())
    return f"{low}" if low == high else f"{low} to {high}"


def _rhat_or_none(trace):
    """R-hat of a (n_chains, n_draws) trace, None where it is not defined."""
    value = rhat(trace)
    return None if not np.isfinite(value) else float(value)


def _json_number(value):
    """A float for JSON: NaN and infinities, which JSON lacks, become None."""
    value = float(value)
    return value if math.isfinite(value) else None


# -- fit ----------------------------------------------------------------------


def _run_fit(args):
    """``fit``: cluster a file of rankings and print the clusters.

    Parameters
    ----------
    args : argparse.Namespace
        The options of ``fit`` (see ``_add_fit_parser``).

    Returns
    -------
    exit_code : int

    Raises
    ------
    InputError
        For a bad file, too few rankings, options that contradict each other or
        the file's kind, or an output file that cannot be written.
    """
    burn_in = args.n_iter // 2 if args.burn_in is None else args.burn_in
    if burn_in >= args.n_iter:
        raise InputError(
            f"--burn-in ({burn_in}) must be smaller than --n-iter ({args.n_iter}): "
            "no draw would be kept"
        )
    _check_outputs(args)
    if args.n_items is not None:
        # before the reader names the items no ranking mentions, one by one
        try:
            _check_chain_memory(args.n_items, inferred=False)
        except ValueError as exc:
            raise InputError(f"--n-items {args.n_items}: {exc}") from None
    preflib = args.format == "preflib" or (
        args.format == "auto" and is_preflib(args.file)
    )
    _check_options_for_kind(args, preflib)
    delimiter = "," if args.delimiter is None else args.delimiter
    data = read_rankings(
        args.file,
        file_format=args.format,
        delimiter=delimiter,
        header=args.header,
        missing=args.missing,
        items=args.items,
        n_items=args.n_items,
        ties=args.ties or "raise",
    )
    # Shown before the fit, which may take minutes: a misread file is stopped
    # with Ctrl-C rather than discovered afterwards.
    print_warnings(data.warnings)
    X, names = data.X, data.names
    if len(X) < 2:
        raise InputError(
            f"{args.file}: found {plural(len(X), 'ranking')}; "
            "at least 2 are needed to cluster"
        )
    fitted = np.arange(len(X))
    if args.subsample is not None and args.subsample < len(X):
        if args.subsample < 2:
            raise InputError("--subsample must be at least 2 to cluster")
        rng = np.random.RandomState(args.seed)
        fitted = np.sort(rng.choice(len(X), size=args.subsample, replace=False))
    model = DPMallowsClustering(
        alpha=args.alpha,
        nu=args.nu,
        sampler=args.sampler,
        n_items=len(names),
        n_iter=args.n_iter,
        burn_in=burn_in,
        n_chains=args.chains,
        n_jobs=args.jobs,
        random_state=args.seed,
        verbose=int(args.verbose),
    )
    fit_time, messages = fit_model(model, X[fitted])
    if args.labels is not None and len(fitted) < len(X) and args.verbose:
        # after the progress bar ends: predicting many rankings takes a while
        print(
            f"predicting the clusters of the {len(X) - len(fitted)} rankings left "
            "out by --subsample",
            file=sys.stderr,
        )
    summary = _summarise(model, X, fitted, names, labels=args.labels is not None)
    # The files first: a reader of stdout that stops early (head) must not
    # cost the results of a long fit.
    _write_outputs(args, data, model, summary, burn_in, fit_time, messages)
    _print_summary(args, data, model, summary, burn_in, fit_time)
    for option, what in (
        ("labels", "the cluster of each ranking"),
        ("json", "the clusters and the posterior"),
        ("save", "the fitted model"),
    ):
        if getattr(args, option) is not None:
            print(f"wrote {what} to {getattr(args, option)}")
    print_warnings(messages)
    return 0


def _check_options_for_kind(args, preflib):
    """Refuse options that do not apply to the kind of FILE."""
    if preflib:
        text_only = {
            "--delimiter": args.delimiter is not None,
            "--header/--no-header": args.header is not None,
            "--missing": args.missing is not None,
            "--items": args.items is not None,
        }
        for option, given in text_only.items():
            if given:
                raise InputError(
                    f"{option} applies to text files; {args.file} is read as a "
                    "PrefLib file (which names its alternatives; see --format)"
                )
    elif args.ties is not None:
        raise InputError(
            f"--ties applies to PrefLib files; {args.file} is read as a text "
            "file (see --format)"
        )


def _check_outputs(args):
    """Refuse output files that cannot be written, before a fit of minutes.

    Also refuses writing over FILE, or two outputs to the same file.
    """
    targets = {}
    source = os.path.realpath(args.file)
    for option in ("labels", "json", "save"):
        path = getattr(args, option)
        if path is None:
            continue
        where = f"--{option} {path}"
        real = os.path.realpath(path)
        if real == source:
            raise InputError(f"{where}: would overwrite the input file")
        if real in targets:
            raise InputError(f"{where}: the same file as --{targets[real]}")
        targets[real] = option
        if os.path.isdir(path):
            raise InputError(f"{where}: is a directory")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise InputError(f"{where}: no such directory {folder}")
        if not os.access(folder, os.W_OK) or (
            os.path.exists(path) and not os.access(path, os.W_OK)
        ):
            raise InputError(f"{where}: cannot write there (permission denied)")


def _summarise(model, X, fitted, names, labels=True):
    """What the printed summary and the JSON file share.

    Parameters
    ----------
    model : DPMallowsClustering
        The fitted model.
    X : ndarray of shape (n_rankings, t_max)
        All rankings of the file.
    fitted : ndarray of shape (n_fitted,)
        The rows of ``X`` the model was fitted to (all, unless --subsample).
    names : list of str
        Item names by id.
    labels : bool, default=True
        Whether to give the cluster of every ranking (for --labels): the
        rankings left out by --subsample are then predicted, which costs more
        than a short fit of a large file.

    Returns
    -------
    summary : dict
        ``order`` (model labels, largest cluster first), ``sizes``,
        ``number`` (the printed number of each model label), ``labels`` (the
        printed cluster of every ranking of ``X``, or None), ``n_ranks`` (the
        thetas that carry information), ``min_size`` and the R-hats.
    """
    sizes = np.bincount(model.labels_, minlength=model.n_clusters_)
    order = np.argsort(-sizes, kind="stable")
    number = np.empty_like(order)
    number[order] = np.arange(1, len(order) + 1)
    if labels:
        labels = np.empty(len(X), dtype=np.intp)
        left_out = np.ones(len(X), dtype=bool)
        left_out[fitted] = False
        if left_out.any():
            # The rankings left out by --subsample get the cluster the model
            # predicts; cut to the fitted width, the model has no theta beyond it.
            labels[left_out] = model.predict(X[left_out, : model.n_features_in_])
        labels[fitted] = model.labels_
        labels = number[labels]
    else:
        labels = None
    # The last stage of a full ranking has one item left: its theta has no
    # data to tell it (beta-gibbs returns about log n_k, an artefact of the
    # infinite-items approximation). Stages j < n_items - 1 remain.
    n_ranks = min(model.thetas_.shape[1], len(names) - 1)
    burn_in = model.burn_in
    return {
        "sizes": sizes,
        "order": order,
        "number": number,
        "labels": labels,
        "n_ranks": n_ranks,
        "min_size": max(MIN_CLUSTER_SIZE, math.ceil(MIN_CLUSTER_SHARE * len(fitted))),
        "rhat_log_joint": _rhat_or_none(model.trace_["log_joint"][:, burn_in:]),
        "rhat_n_clusters": _rhat_or_none(model.trace_["n_clusters"][:, burn_in:]),
    }


def _print_summary(args, data, model, summary, burn_in, fit_time):
    """Print what was read, the settings, the number of clusters, the clusters."""
    X, names = data.X, data.names
    model_sizes = summary["sizes"]
    n_fitted = int(model_sizes.sum())
    lengths = (X != -1).sum(axis=1)
    what = f" ({data.description})" if data.description else ""
    print(
        f"{args.file}{what}: {len(X)} rankings of {plural(len(names), 'item')} "
        f"(each ranks {_span(lengths)} item{'' if lengths.max() == 1 else 's'})"
    )
    if data.n_dropped:
        print(
            f"  dropped {plural(data.n_dropped, 'ballot')} whose order starts with "
            "a tie (--ties truncate)"
        )
    if n_fitted < len(X):
        print(
            f"  fitted a random subsample of {n_fitted} rankings (--subsample, "
            f"seed {args.seed})"
        )
    print(
        f"sampler {args.sampler}, alpha={args.alpha:g}, nu={args.nu:g}: "
        f"{plural(args.chains, 'chain')} x {args.n_iter} "
        f"sweeps (burn-in {burn_in}), seed {args.seed}, {fit_time:.1f} s"
    )
    min_size = summary["min_size"]
    n_large = int((model_sizes >= min_size).sum())
    print(
        f"clusters: {len(model_sizes)} in the point estimate, {n_large} of them "
        f"with at least {min_size} rankings"
    )
    # POINT_ESTIMATE, wrapped by hand for an 80-column terminal
    print("  (the point estimate is the kept draw with the least mean variation of")
    print("  information to the other kept draws; small clusters come and go")
    print("  between draws)")
    label_samples = model.label_samples_
    print(f"posterior number of clusters: {posterior_n_clusters(label_samples)}")
    print(
        f"  counting only clusters of at least {min_size} rankings: "
        f"{posterior_n_clusters(label_samples, min_size)}"
    )
    rhats = [summary["rhat_log_joint"], summary["rhat_n_clusters"]]
    if all(value is not None for value in rhats):
        print(f"R-hat after burn-in (above {RHAT_THRESHOLD}: not converged):")
        print(f"  log joint {rhats[0]:.3f}, number of clusters {rhats[1]:.3f}")
    n_ranks = summary["n_ranks"]
    if n_ranks < model.thetas_.shape[1]:
        print(
            f"theta of rank {n_ranks + 1} not shown: with one item left to place, "
            "it carries no information"
        )
    for k in summary["order"]:
        print()
        print(
            _format_cluster(
                int(summary["number"][k]),
                int(model_sizes[k]),
                n_fitted,
                model.central_rankings_[k],
                model.thetas_[k, :n_ranks],
                names,
                top=args.top,
            )
        )


def _write_outputs(args, data, model, summary, burn_in, fit_time, messages):
    """Write the files of --labels, --json and --save."""
    if args.labels is not None:
        text = "".join(f"{label}\n" for label in summary["labels"])
        _write(args.labels, "--labels", lambda file: file.write(text))
    if args.json is not None:
        report = _json_report(args, data, model, summary, burn_in, fit_time, messages)
        _write(
            args.json,
            "--json",
            lambda file: file.write(
                json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
            ),
        )
    if args.save is not None:
        import joblib

        _write(args.save, "--save", lambda file: joblib.dump(model, file), "wb")


def _write(path, option, write, mode="w"):
    """Open ``path`` and ``write(file)``; an InputError naming the option if not."""
    encoding = None if "b" in mode else "utf-8"
    try:
        with open(path, mode, encoding=encoding) as file:
            write(file)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write ({exc.strerror})") from None


def _json_report(args, data, model, summary, burn_in, fit_time, messages):
    """The content of --json: the clusters, the posterior, the settings.

    Returns
    -------
    report : dict
        Only JSON types; a theta that carries no information is None (null).
    """
    names, n_ranks = data.names, summary["n_ranks"]
    sizes = summary["sizes"]
    clusters = []
    for k in summary["order"]:
        theta = [_json_number(value) for value in model.thetas_[k]]
        theta[n_ranks:] = [None] * (len(theta) - n_ranks)
        clusters.append(
            {
                "cluster": int(summary["number"][k]),
                "size": int(sizes[k]),
                "weight": float(model.weights_[k]),
                "central_ranking": [names[i] for i in model.central_rankings_[k]],
                "theta": theta,
                "model_label": int(k),
            }
        )

    def distribution(min_size):
        counts = n_clusters_per_draw(model.label_samples_, min_size)
        values, freq = np.unique(counts, return_counts=True)
        return {str(v): float(f / len(counts)) for v, f in zip(values, freq)}

    lengths = (data.X != -1).sum(axis=1)
    return {
        "rankmix_version": __version__,
        "file": args.file,
        "kind": data.kind,
        "description": data.description,
        "n_rankings": int(len(data.X)),
        "n_fitted": int(sizes.sum()),
        "n_items": len(names),
        "items": names,
        "ranking_lengths": {"min": int(lengths.min()), "max": int(lengths.max())},
        "n_clusters": int(model.n_clusters_),
        "point_estimate": POINT_ESTIMATE,
        "min_size": summary["min_size"],
        "n_clusters_large": int((sizes >= summary["min_size"]).sum()),
        "n_clusters_posterior": distribution(1),
        "n_clusters_posterior_large": distribution(summary["min_size"]),
        "rhat": {
            "log_joint": summary["rhat_log_joint"],
            "n_clusters": summary["rhat_n_clusters"],
        },
        "clusters": clusters,
        "fit_seconds": round(fit_time, 3),
        "warnings": list(data.warnings) + list(messages),
        "settings": {
            "format": args.format,
            "delimiter": None if data.kind == "preflib" else (args.delimiter or ","),
            "header": args.header,
            "missing": args.missing,
            "ties": args.ties,
            "items": args.items,
            "n_items": args.n_items,
            "subsample": args.subsample,
            "alpha": args.alpha,
            "nu": args.nu,
            "sampler": args.sampler,
            "n_iter": args.n_iter,
            "burn_in": burn_in,
            "thin": model.thin,
            "chains": args.chains,
            "jobs": args.jobs,
            "seed": args.seed,
        },
    }
