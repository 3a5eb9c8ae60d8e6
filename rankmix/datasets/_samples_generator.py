# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Synthetic mixtures of generalized Mallows models (Meila & Chen 2010, sec. 6)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state

from .. import _kernels, mallows
from .._rng import as_bit_generator
from .._sklearn_compat import Interval, validate_params
from .._validation import INTP_MAX, check_theta, sized_by

# The four synthetic data sets of Meila & Chen (2010), Section 6: n = 20 items,
# 10 clusters of 500 rankings, theta* constant or decreasing with the stage.
PAPER_DATASETS = {
    1: dict(n_items=20, t=10, theta=np.full(10, 1.0)),
    2: dict(n_items=20, t=19, theta=np.full(19, 1.0)),
    3: dict(n_items=20, t=10, theta=1.5 - 0.1 * np.arange(10)),
    4: dict(n_items=20, t=19, theta=1.5 - 0.05 * np.arange(19)),
}

# Metropolis-Hastings steps (stagewise proposal) per centre draw. The sigma-posterior
# of 100 rankings at theta = 0.7 is so concentrated that the stagewise proposal is
# accepted nearly always; a few steps forget the starting point.
_CENTRE_MH_STEPS = 20


@validate_params(
    {
        "n_clusters": [Interval(Integral, 1, None, closed="left")],
        "n_per_cluster": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "n_items": [Interval(Integral, 1, None, closed="left"), None],
        "t": [Interval(Integral, 1, None, closed="left"), "array-like", None],
        "theta": [Interval(Real, 0, None, closed="left"), "array-like", None],
        "dataset": [Interval(Integral, 1, 4, closed="both"), None],
        "centre_theta": [Interval(Real, 0, None, closed="left")],
        "centre_n_rankings": [Interval(Integral, 0, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_mallows_mixture(
    n_clusters=10,
    n_per_cluster=500,
    n_items=None,
    t=None,
    theta=None,
    *,
    dataset=None,
    centre_theta=0.7,
    centre_n_rankings=100,
    shuffle=True,
    random_state=None,
):
    """Rankings from a mixture of generalized Mallows models, as in Meila & Chen.

    Each centre is drawn from the posterior of sigma given ``centre_n_rankings``
    full rankings of a GM(random sigma0, ``centre_theta``), so that centres are
    random but not uniformly spread; then each cluster's rankings are drawn from
    GM(centre, ``theta``).

    Parameters
    ----------
    n_clusters : int, default=10
        Number of clusters.
    n_per_cluster : int or array-like of shape (n_clusters,), default=500
        Rankings per cluster.
    n_items : int, default=None
        Number of items n. None takes the value of ``dataset``, or 20.
    t : int or array-like of shape (t_max,), default=None
        Ranking length: an int for a fixed length, or probabilities ``p`` with
        ``p[k]`` the probability of length ``k + 1`` (rows are then padded with -1
        to ``t_max = len(p)``). None takes the value of ``dataset``, or 10.
    theta : float or array-like of shape (t_max,), default=None
        theta* of every cluster, per stage. None takes the value of ``dataset``,
        or 1.0.
    dataset : {1, 2, 3, 4}, default=None
        One of the paper's four data sets (n = 20; t = 10, 19, 10, 19; theta*
        constant 1 for 1 and 2, ``1.5 - 0.1 (j-1)`` for 3, ``1.5 - 0.05 (j-1)``
        for 4). Explicit ``n_items``, ``t`` and ``theta`` override it.
    centre_theta : float, default=0.7
        Dispersion of the rankings that shape each centre's posterior.
    centre_n_rankings : int, default=100
        How many rankings shape each centre; 0 gives uniform random centres.
    shuffle : bool, default=True
        Shuffle the rankings (otherwise they come cluster by cluster).
    random_state : int, RandomState instance or None, default=None
        Pass an int for reproducible output across multiple function calls.

    Returns
    -------
    X : ndarray of shape (n_rankings, t_max)
        The rankings, best first, padded with -1.
    labels : ndarray of shape (n_rankings,)
        The cluster of each ranking.
    centres : ndarray of shape (n_clusters, n_items)
        The central ranking of each cluster.

    Notes
    -----
    A centre is drawn from P(sigma | theta = centre_theta, pi_1..pi_100), which is
    proportional to ``exp(-centre_theta * sum_i sum_j s_j(pi_i | sigma))``, by
    Metropolis-Hastings with the stagewise proposal (exact, unlike the stagewise
    rule alone). That draw sorts the ``centre_n_rankings`` n (n - 1) / 2
    precedences of its full rankings, 16 bytes each (a key and the sort's
    scratch), and costs O(``centre_n_rankings`` n^2) time per centre: about
    1 s and 0.33 GiB at 533 items, 4 s and 1.1 GiB at 1,000 (one core), 7 TiB
    at 100,000. For many items pass ``centre_n_rankings=0`` (uniform random
    centres, O(n) each).

    References
    ----------
    M. Meila and H. Chen. Dirichlet process mixtures of generalized Mallows
    models. UAI 2010, Section 6.

    Examples
    --------
    >>> from rankmix.datasets import make_mallows_mixture
    >>> X, labels, centres = make_mallows_mixture(
    ...     n_clusters=3, n_per_cluster=50, dataset=1, random_state=0)
    >>> X.shape, labels.shape, centres.shape
    ((150, 10), (150,), (3, 20))
    """
    defaults = PAPER_DATASETS.get(dataset, dict(n_items=20, t=10, theta=1.0))
    n_items = defaults["n_items"] if n_items is None else n_items
    t = defaults["t"] if t is None else t
    theta = defaults["theta"] if theta is None else theta

    with sized_by("n_clusters", n_clusters):
        sizes = np.broadcast_to(np.asarray(n_per_cluster), (n_clusters,))
        bad_sizes = (
            sizes.ndim != 1
            or not np.issubdtype(sizes.dtype, np.integer)
            or (sizes < 1).any()
        )
    if bad_sizes:
        raise ValueError(
            "n_per_cluster must be a positive int or n_clusters positive ints, "
            f"got {n_per_cluster!r}."
        )
    length_probs = _check_lengths(t, n_items)
    t_max = length_probs.shape[0]
    # the number of rankings in Python integers: an int64 sum could wrap, and
    # NumPy would then allocate (and np.repeat write past) too small an array
    if np.ndim(n_per_cluster) == 0:
        n_samples = int(n_per_cluster) * n_clusters
    else:
        n_samples = sum(int(size) for size in sizes)
    if n_samples * t_max > INTP_MAX // 8:
        raise ValueError(
            f"n_per_cluster={n_per_cluster!r} asks for {n_samples:,} rankings "
            f"of {t_max} places in {n_clusters} clusters, more than NumPy can "
            "allocate."
        )
    thetas = check_theta(theta, n_stages=t_max, n_items=n_items)[0, :t_max]

    rng = check_random_state(random_state)
    with sized_by("n_items", n_items):
        centres = np.array(
            [
                _draw_centre(n_items, centre_theta, centre_n_rankings, rng)
                for _ in range(n_clusters)
            ]
        )
    with sized_by("n_per_cluster", n_per_cluster):
        X = np.full((sizes.sum(), t_max), -1, dtype=np.intp)
        labels = np.repeat(np.arange(n_clusters), sizes)
        lengths = rng.choice(np.arange(1, t_max + 1), size=len(labels), p=length_probs)
    for k in range(n_clusters):
        rows = np.flatnonzero(labels == k)
        # Draw full-length rankings and cut: the first stages of a GM ranking do
        # not depend on the later ones.
        X[rows] = mallows.sample(centres[k], thetas, len(rows), t_max, random_state=rng)
    X[np.arange(t_max) >= lengths[:, None]] = -1

    if shuffle:
        order = rng.permutation(len(labels))
        X, labels = X[order], labels[order]
    return X, labels, centres


def _check_lengths(t, n_items):
    """Probabilities of the lengths 1..t_max, from a fixed length or a distribution."""
    if np.ndim(t) == 0:
        if t > n_items:
            raise ValueError(f"t={t} exceeds n_items={n_items}.")
        probs = np.zeros(int(t))
        probs[-1] = 1.0
        return probs
    probs = np.asarray(t, dtype=np.float64)
    if (
        probs.ndim != 1
        or len(probs) == 0
        or not np.isfinite(probs).all()
        or (probs < 0).any()
        or not np.isclose(probs.sum(), 1.0)
    ):
        raise ValueError(
            "t must be an int or probabilities of the lengths 1..t_max summing to 1, "
            f"got {t!r}."
        )
    if len(probs) > n_items:
        raise ValueError(f"t_max={len(probs)} exceeds n_items={n_items}.")
    return probs / probs.sum()


def _draw_centre(n_items, centre_theta, n_rankings, rng):
    """A central ranking drawn from the sigma-posterior of GM(sigma0) rankings."""
    sigma0 = rng.permutation(n_items).astype(np.intp)
    if n_rankings == 0:
        return sigma0
    rankings = mallows.sample(
        sigma0, centre_theta, n_rankings, n_items, random_state=rng
    )
    stats = _kernels.ranking_statistics(rankings, np.arange(n_rankings), n_items)
    weight, preceded = _kernels.theta_weighted_statistics(
        stats, np.full(n_items, float(centre_theta))
    )
    sigma = sigma0.copy()
    _kernels.mh_sigma_update(
        stats.items, weight, preceded, sigma, as_bit_generator(rng), _CENTRE_MH_STEPS
    )
    return sigma
