# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Helpers shared by the commands of the command line (see :mod:`rankmix._cli`)."""

import sys
import time
import warnings

import numpy as np

from ._diagnostics import CHAINS_DISAGREE_ADVICE

# The --sampler choices, DPMallowsClustering's samplers.
SAMPLERS = ("beta-gibbs", "slice-gibbs", "subcluster")


class InputError(Exception):
    """A problem with the user's input, reported without a traceback (exit code 2)."""


def fit_model(model, X):
    """Fit ``model`` to ``X``; return the time taken and the warnings raised.

    Warnings (chains that disagree, for instance) are returned rather than shown,
    so that they can be printed as one line each after the summary.

    Parameters
    ----------
    model : estimator
        The estimator to fit.
    X : array-like
        Its training data.

    Returns
    -------
    seconds : float
        Wall-clock time of the fit.
    messages : list of str
        The distinct warning messages, in the order they were raised.

    Raises
    ------
    InputError
        If the estimator refuses the data (a ValueError).
    """
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    messages = list(dict.fromkeys(_for_the_command_line(w.message) for w in caught))
    return time.perf_counter() - start, messages


def _for_the_command_line(message):
    """A warning's text, its advice in the command line's options: the Python
    advice (``warm_start``, ``trace_``) has nothing to act on there."""
    return str(message).replace(
        CHAINS_DISAGREE_ADVICE,
        "Run more sweeps (--n-iter, and --burn-in with them) or try another "
        "--sampler; --json keeps the R-hats, --save the traces (trace_ of the "
        "saved model).",
    )


def n_clusters_per_draw(label_samples, min_size=1):
    """Number of clusters of each kept draw, counting those of ``min_size`` or more.

    Parameters
    ----------
    label_samples : ndarray of shape (n_draws, n_samples)
        The kept draws of the clustering (``label_samples_``).
    min_size : int, default=1
        Clusters with fewer members are not counted.

    Returns
    -------
    counts : ndarray of shape (n_draws,)
    """
    return np.array(
        [int((np.bincount(draw) >= min_size).sum()) for draw in label_samples]
    )


def posterior_n_clusters(label_samples, min_size=1):
    """The posterior distribution of the number of clusters, as text.

    Parameters
    ----------
    label_samples : ndarray of shape (n_draws, n_samples)
        The kept draws of the clustering.
    min_size : int, default=1
        Count only the clusters of at least this many members.

    Returns
    -------
    text : str
        ``"K (percent of draws), ..."``, most frequent first.
    """
    counts = n_clusters_per_draw(label_samples, min_size)
    values, freq = np.unique(counts, return_counts=True)
    order = np.argsort(-freq, kind="stable")
    return ", ".join(f"{values[i]} ({100 * freq[i] / len(counts):.0f}%)" for i in order)


def plural(count, noun):
    """``count`` and ``noun``, with an 's' unless ``count`` is 1."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def print_warnings(messages):
    """Print each warning message as one line on stderr, after stdout's lines."""
    sys.stdout.flush()  # keep the order of the two streams on a terminal
    for message in messages:
        print(f"warning: {message}", file=sys.stderr)
