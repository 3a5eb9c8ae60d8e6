"""Plots of a fitted DP mixture: rank heat maps, co-clustering, traces, K.

Every function takes a fitted estimator (or, where it makes sense, the posterior
draws as an array) and an optional matplotlib ``ax``, draws on it and returns
it, like scikit-learn's display helpers. matplotlib is an optional dependency
(the ``plot`` extra: ``pip install "rankmix[plot]"``), imported only when a
function is called.

- :func:`plot_rank_heatmap`: for rankings, the item-by-rank heat map of a
  cluster, items in the order of its central ranking (BayesMallows'
  ``heat_plot``).
- :func:`plot_coclustering`: the co-clustering matrix, rows ordered by the
  point estimate.
- :func:`plot_trace`: traces of the number of clusters and the log joint per
  chain, burn-in shaded, R-hat in the title (BayesMallows'
  ``assess_convergence``).
- :func:`plot_n_clusters`: the posterior of the number of clusters.
"""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._base import BaseDPMixture
from ._consensus import _check_labels, vi_consensus
from ._mallows import DPMallowsClustering
from ._validation import check_rankings
from ._weights import check_count_weights
from .metrics import coclustering_matrix
from .metrics._coclustering import _check_rows

__all__ = [
    "plot_coclustering",
    "plot_n_clusters",
    "plot_rank_heatmap",
    "plot_trace",
]


def _pyplot():
    """matplotlib.pyplot, or an ImportError that names the ``plot`` extra."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(
            "rankmix.plotting needs matplotlib: pip install 'rankmix[plot]' "
            "(or pip install matplotlib)."
        ) from None
    return plt


def _new_axes(ax):
    """``ax``, or the axes of a new figure when it is None."""
    if ax is None:
        _, ax = _pyplot().subplots()
        return ax
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise TypeError(
            f"ax must be a matplotlib Axes or None; got {type(ax).__name__}."
        )
    return ax


def _check_model(model, function, kind=BaseDPMixture):
    """Refuse anything but a fitted estimator of ``kind``, naming ``function``."""
    if not isinstance(model, kind):
        raise TypeError(
            f"{function} takes a fitted {kind.__name__}; got {type(model).__name__}."
        )
    check_is_fitted(model)


def _draws_and_labels(model_or_label_samples, labels, function):
    """The draws and the point estimate of an estimator, or of an array of draws.

    ``labels`` when given, else the estimator's ``labels_``; None for an array
    without ``labels``.
    """
    if isinstance(model_or_label_samples, BaseDPMixture):
        _check_model(model_or_label_samples, function)
        draws = model_or_label_samples.label_samples_
        if labels is None:
            return draws, model_or_label_samples.labels_
    else:
        if hasattr(model_or_label_samples, "fit"):
            _check_model(model_or_label_samples, function)  # raises the TypeError
        draws = np.asarray(model_or_label_samples)
        # the errors of coclustering_matrix, before drawing (compact: codes of
        # a byte a label, not an int32 copy of all the draws)
        _check_labels(draws, compact=True)
        if labels is None:
            return draws, None
    labels = np.asarray(labels)
    if labels.shape != draws.shape[1:]:
        raise ValueError(
            f"{function}: labels must have one entry per sample "
            f"({draws.shape[1]}); got shape {labels.shape}."
        )
    return draws, labels


def _largest_first(labels):
    """Position of each label when the clusters are sorted by size, largest first."""
    names, inverse, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    rank = np.empty(len(names), dtype=np.intp)
    rank[np.argsort(-sizes, kind="stable")] = np.arange(len(names))
    return rank[inverse.ravel()]


def _rank_probabilities(model, X, cluster, counts):
    """P(item i at rank j) among the members of ``cluster`` in ``labels_``.

    Returns an array of shape (``n_items_``, t_max), rows in item-id order. The
    members are the rankings of ``X`` (the training rankings) labelled
    ``cluster``, each counted ``counts`` times; a top-t ranking counts at ranks
    1..t only, so a column sums to the share of members that rank at least
    that many items.
    """
    in_cluster = model.labels_ == cluster
    members, weights = X[in_cluster], counts[in_cluster]
    if weights.sum() == 0:
        # with counts, a cluster can hold only copies that a draw split off
        # rows labelled elsewhere (see sample_weight in fit_predict)
        raise ValueError(
            f"plot_rank_heatmap: no ranking of X is labelled {cluster} in labels_."
        )
    probabilities = np.zeros((model.n_items_, X.shape[1]))
    for rank, column in enumerate(members.T):
        ranked = column >= 0
        probabilities[:, rank] = np.bincount(
            column[ranked], weights=weights[ranked], minlength=model.n_items_
        )
    return probabilities / weights.sum()


def plot_rank_heatmap(
    model,
    X,
    *,
    sample_weight=None,
    cluster=None,
    item_names=None,
    ax=None,
    cmap="viridis",
):
    """Heat map of P(item at rank) within a cluster of rankings.

    Parameters
    ----------
    model : DPMallowsClustering
        A fitted estimator.
    X : array-like of shape (n_samples, t_max)
        The rankings it was fitted on (best first, top-t rows padded with -1),
        passed again: the copy the estimator keeps for its diagnostics is
        private.
    sample_weight : array-like of shape (n_samples,), default=None
        The counts the model was fitted with (``fit(X, sample_weight=...)``):
        each ranking counts that many times. None counts each once.
    cluster : int, default=None
        A cluster of ``labels_``, in ``[0, n_clusters_)``; None draws the
        largest.
    item_names : array-like of str of shape (``n_items_``,), default=None
        Names of the items by id; None shows the ids.
    ax : matplotlib Axes, default=None
        Where to draw; None makes a new figure.
    cmap : str or Colormap, default="viridis"
        Colour map of the probabilities, from 0 to 1.

    Returns
    -------
    ax : matplotlib Axes
        Row ``a`` is the item at rank ``a + 1`` of the cluster's central ranking
        (``central_rankings_[cluster]``), column ``j`` rank ``j + 1``; the
        image's array holds the probabilities.

    Notes
    -----
    With :math:`\\mathcal{C}_k` the rankings labelled :math:`k` in
    ``labels_`` and :math:`\\pi_m(j)` the item at rank :math:`j` of ranking
    :math:`m`, the cell of item :math:`i` and rank :math:`j` is

    .. math::

        p_{ij} = \\frac{1}{\\sum_{m \\in \\mathcal{C}_k} w_m}
        \\sum_{m \\in \\mathcal{C}_k} w_m [\\pi_m(j) = i],

    with :math:`w_m` the counts of ``sample_weight`` (1 without).

    Each row sums to the share of members that rank the item at all, and each
    column to the share that rank at least :math:`j` items (one for full
    rankings). A cluster that agrees with its central ranking shows a bright
    diagonal. This is the empirical counterpart of BayesMallows'
    ``heat_plot``, which shows the posterior of the central ranking instead.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from rankmix import DPMallowsClustering
    >>> from rankmix.datasets import make_mallows_mixture
    >>> from rankmix.plotting import plot_rank_heatmap
    >>> X = make_mallows_mixture(2, 30, n_items=5, t=5, random_state=0)[0]
    >>> model = DPMallowsClustering(n_iter=40, burn_in=20, n_chains=1, random_state=0)
    >>> model = model.fit(X)
    >>> ax = plot_rank_heatmap(model, X, item_names=list("ABCDE"))
    >>> ax.images[0].get_array().shape
    (5, 5)
    """
    function = "plot_rank_heatmap"
    _check_model(model, function, DPMallowsClustering)
    X = check_rankings(X, n_items=model.n_items_)
    if len(X) != len(model.labels_):
        raise ValueError(
            f"{function}: X must be the {len(model.labels_)} rankings the model "
            f"was fitted on; got {len(X)} rankings."
        )
    counts = check_count_weights(sample_weight, X, purpose="plot")
    counts = np.ones(len(X), dtype=np.intp) if counts is None else counts
    # bincount weighs in floats: the counts are integers, and so are the sizes
    sizes = np.bincount(model.labels_, weights=counts, minlength=model.n_clusters_)
    sizes = sizes.astype(np.intp)
    if cluster is None:
        cluster = int(np.argmax(sizes))
    elif not isinstance(cluster, Integral) or not 0 <= cluster < model.n_clusters_:
        raise ValueError(
            f"{function}: cluster must be an integer in [0, {model.n_clusters_}); "
            f"got {cluster!r}."
        )
    if item_names is None:
        item_names = [str(i) for i in range(model.n_items_)]
    elif len(item_names) != model.n_items_:
        raise ValueError(
            f"{function}: item_names must name the {model.n_items_} items; got "
            f"{len(item_names)} names."
        )
    centre = model.central_rankings_[cluster]
    probabilities = _rank_probabilities(model, X, cluster, counts)[centre]

    ax = _new_axes(ax)
    image = ax.imshow(
        probabilities,
        cmap=cmap,
        vmin=0,
        vmax=1,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xticks(range(X.shape[1]), range(1, X.shape[1] + 1))
    ax.set_yticks(range(model.n_items_), [str(item_names[i]) for i in centre])
    ax.set_xlabel("rank")
    ax.set_ylabel("item, in the order of the central ranking")
    ax.set_title(
        f"Cluster {cluster}: {sizes[cluster]} rankings "
        f"({sizes[cluster] / counts.sum():.0%})"
    )
    ax.figure.colorbar(image, ax=ax, label="P(item at rank)")
    return ax


def plot_coclustering(
    model_or_label_samples,
    *,
    order="labels",
    labels=None,
    rows=None,
    ax=None,
    cmap="magma_r",
):
    """The co-clustering matrix, samples ordered by the point estimate.

    Parameters
    ----------
    model_or_label_samples : fitted estimator or array-like of shape \
            (n_draws, n_samples)
        A fitted rankmix estimator (its ``label_samples_`` and ``labels_``), or
        posterior draws of a clustering.
    order : {"labels"} or array-like of int or None, default="labels"
        "labels": the samples sorted by their cluster in the point estimate,
        largest cluster first, with lines between the clusters; None: in data
        order; an array: these sample indices, in this order (then ``rows`` must
        be None).
    labels : array-like of shape (n_samples,), default=None
        The clustering to order by, such as
        :func:`~rankmix.metrics.minimize_expected_loss` of the draws. None: an
        estimator's ``labels_``, or for an array the draw with the least mean
        VI to the others (as the estimators' ``labels_``).
    rows : array-like of int or bool, default=None
        The samples to show (indices or a mask); the matrix needs ``8 *
        n_rows**2`` bytes, so pass a subset for large data (see
        :func:`rankmix.metrics.coclustering_matrix`).
    ax : matplotlib Axes, default=None
        Where to draw; None makes a new figure.
    cmap : str or Colormap, default="magma_r"
        Colour map of the probabilities, from 0 to 1.

    Returns
    -------
    ax : matplotlib Axes
        The image's array is the co-clustering matrix of the samples shown, in
        the order shown.

    Notes
    -----
    Entry :math:`(a, b)` is the fraction of the draws that put the samples
    shown at :math:`a` and :math:`b` in one cluster. A dark block on the
    diagonal is a cluster the draws keep together; shading off the blocks
    shows clusters the draws merge or share members between. See
    :func:`rankmix.metrics.coclustering_matrix`.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from rankmix.plotting import plot_coclustering
    >>> draws = np.array([[0, 1, 0, 1], [0, 1, 0, 0], [0, 1, 0, 1]])
    >>> ax = plot_coclustering(draws)
    >>> ax.images[0].get_array().data.round(2)  # samples 0, 2, 1, 3
    array([[1.  , 1.  , 0.  , 0.33],
           [1.  , 1.  , 0.  , 0.33],
           [0.  , 0.  , 1.  , 0.67],
           [0.33, 0.33, 0.67, 1.  ]])
    """
    function = "plot_coclustering"
    draws, labels = _draws_and_labels(model_or_label_samples, labels, function)
    n_samples = draws.shape[1]
    name = "rows"  # the argument that gave the samples shown
    if isinstance(order, str):
        if order != "labels":
            raise ValueError(
                f'{function}: order must be "labels", None or an array of sample '
                f"indices; got {order!r}."
            )
    elif order is not None:
        if rows is not None:
            raise ValueError(
                f"{function}: give the samples to show either as order (an array) "
                "or as rows, not both."
            )
        rows, order, name = order, None, "order"
    shown = _check_rows(rows, n_samples, name)
    if shown is None:
        shown = np.arange(n_samples)
    boundaries = []
    if order == "labels":
        if labels is None:
            # the point estimate of the estimators: the VI medoid of the draws
            labels = draws[vi_consensus(draws)]
        size_rank = _largest_first(labels)
        shown = shown[np.argsort(size_rank[shown], kind="stable")]
        boundaries = np.flatnonzero(np.diff(size_rank[shown])) + 0.5
    matrix = coclustering_matrix(draws, rows=shown)

    ax = _new_axes(ax)
    image = ax.imshow(matrix, cmap=cmap, vmin=0, vmax=1, interpolation="nearest")
    for boundary in boundaries:
        ax.axhline(boundary, color="tab:red", linewidth=0.5)
        ax.axvline(boundary, color="tab:red", linewidth=0.5)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(
        f"{len(shown)} samples"
        + (", sorted by cluster (largest first)" if order == "labels" else "")
    )
    ax.set_title("P(same cluster)")
    ax.figure.colorbar(image, ax=ax, label="P(same cluster)")
    return ax


def plot_trace(model, names=("n_clusters", "log_joint"), *, ax=None):
    """Trace plots per chain, burn-in shaded, R-hat in the titles.

    Parameters
    ----------
    model : fitted estimator
        A fitted rankmix estimator (its ``trace_``, ``burn_in`` and ``rhat_``).
    names : str or sequence of str, default=("n_clusters", "log_joint")
        Keys of ``trace_`` to draw, one Axes each.
    ax : matplotlib Axes or sequence of Axes, default=None
        One Axes per name; None makes a new figure with a row of Axes.

    Returns
    -------
    axes : ndarray of matplotlib Axes of shape (len(names),)
        Axes ``a`` holds one line per chain (sweep 1..``n_iter`` against the
        traced value) and a shaded span over the burn-in sweeps.

    Notes
    -----
    R-hat is the rank-normalised split R-hat of Vehtari et al. (2021) over the
    sweeps after burn-in (``model.rhat_``); values above about 1.01 say the
    chains have not mixed. With one chain it compares the chain's halves.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from rankmix import DPGaussianClustering
    >>> from rankmix.plotting import plot_trace
    >>> X = np.random.default_rng(0).normal(size=(30, 2))
    >>> model = DPGaussianClustering(n_iter=30, burn_in=10, random_state=0).fit(X)
    >>> axes = plot_trace(model)
    >>> [len(ax.lines) for ax in axes]  # one line per chain
    [2, 2]
    """
    function = "plot_trace"
    _check_model(model, function)
    names = [names] if isinstance(names, str) else list(names)
    unknown = [name for name in names if name not in model.trace_]
    if unknown or not names:
        raise ValueError(
            f"{function}: names must be keys of trace_ ({sorted(model.trace_)}); "
            f"got {unknown or names!r}."
        )
    if ax is None:
        # constrained layout keeps each Axes' labels clear of its neighbour's
        _, ax = _pyplot().subplots(
            1,
            len(names),
            figsize=(4.5 * len(names), 3.2),
            squeeze=False,
            layout="constrained",
        )
    axes = np.ravel(np.asarray(ax, dtype=object))
    if len(axes) != len(names):
        raise ValueError(
            f"{function}: ax must hold one Axes per name ({len(names)}); got "
            f"{len(axes)}."
        )
    for axis, name in zip(axes, names):
        values = model.trace_[name]
        sweeps = np.arange(1, values.shape[1] + 1)
        for chain, trace in enumerate(values):
            axis.plot(sweeps, trace, linewidth=0.8, label=f"chain {chain + 1}")
        if model._burn_in > 0:  # the fit's (set_params may have changed burn_in)
            axis.axvspan(0.5, model._burn_in + 0.5, color="0.9", label="burn-in")
        axis.set_xlabel("sweep")
        axis.set_ylabel(name)
        axis.set_title(f"{name}, R-hat = {model.rhat_[name]:.3f}")
    axes[0].legend(fontsize="small", framealpha=0.6)
    return axes


def plot_n_clusters(model_or_label_samples, *, ax=None):
    """The posterior of the number of clusters, pooled over chains.

    Parameters
    ----------
    model_or_label_samples : fitted estimator or array-like of shape \
            (n_draws, n_samples)
        A fitted rankmix estimator (its ``label_samples_``: the kept draws of
        every chain), or posterior draws of a clustering.
    ax : matplotlib Axes, default=None
        Where to draw; None makes a new figure.

    Returns
    -------
    ax : matplotlib Axes
        One bar per number of clusters ``K`` met in the draws, of height the
        fraction of the draws with ``K`` clusters; for an estimator, a dashed
        line marks ``n_clusters_``, the point estimate's.

    Notes
    -----
    The heights estimate :math:`P(K = k \\mid \\text{data})` by the frequency
    of :math:`k` among the kept draws; with a DP prior, :math:`K` grows with
    the data, so this is the answer to "how many clusters" that BayesMallows'
    ``plot_elbow`` (one fit per :math:`K`) approximates.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from rankmix.plotting import plot_n_clusters
    >>> draws = np.array([[0, 1, 0], [0, 0, 0], [0, 1, 2], [0, 1, 1]])
    >>> ax = plot_n_clusters(draws)
    >>> [float(bar.get_height()) for bar in ax.patches]  # K = 1, 2, 3
    [0.25, 0.5, 0.25]
    """
    function = "plot_n_clusters"
    is_model = isinstance(model_or_label_samples, BaseDPMixture)
    if is_model or hasattr(model_or_label_samples, "fit"):
        _check_model(model_or_label_samples, function)
        draws = model_or_label_samples.label_samples_
    else:
        draws = model_or_label_samples
    _, n_clusters = _check_labels(draws, compact=True)
    values, counts = np.unique(n_clusters, return_counts=True)

    ax = _new_axes(ax)
    ax.bar(values, counts / len(n_clusters), width=0.8, color="0.35")
    if is_model:
        ax.axvline(
            model_or_label_samples.n_clusters_,
            color="tab:red",
            linestyle="--",
            label="labels_",
        )
        ax.legend()
    ax.set_xlabel("number of clusters K")
    ax.set_ylabel("posterior probability")
    ax.set_title(f"Posterior of K ({len(n_clusters)} draws)")
    return ax
