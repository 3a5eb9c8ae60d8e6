# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The generalized Mallows model over top-t rankings (Fligner & Verducci 1986).

Plain functions, vectorised over the rows of a ranking array, with compiled kernels
underneath. Conventions, shared by the whole package:

* a ranking data set ``X`` is an integer array of shape (n_rankings, t_max); row
  ``i`` lists the items of ranking ``i`` best first, padded with ``-1``;
* a central ranking ``sigma`` is a full permutation of ``0..n_items-1``, best first
  (``sigma[r]`` is the item at rank ``r``), so ``n_items = len(sigma)``;
* ``theta`` holds one dispersion per stage, ``theta[j]`` for the ``(j+1)``-th place.

The code of a top-t ranking ``pi`` against ``sigma`` is ``s_j(pi | sigma)``,
``j = 1..t``: one less than the rank of ``pi^{-1}(j)`` in ``sigma`` once the items
``pi^{-1}(1..j-1)`` are removed, a number in ``0..n-j``. The GM^s model gives

.. math::

    GM(\\pi \\mid \\sigma, \\theta) = \\prod_{j=1}^{t}
        \\frac{e^{-\\theta_j s_j(\\pi \\mid \\sigma)}}{\\psi_{n-j}(\\theta_j)},
    \\qquad \\psi_m(\\theta) = \\sum_{k=0}^{m} e^{-k\\theta}
        = \\frac{1 - e^{-(m+1)\\theta}}{1 - e^{-\\theta}},

a normalised distribution over the top-t rankings for every t: the codes are
independent truncated geometric variables.
"""

import numpy as np

from . import _kernels
from ._validation import check_permutations, check_rankings, check_theta, sized_by

__all__ = [
    "codes",
    "kendall_distance",
    "log_likelihood",
    "sample",
    "top_k_probabilities",
]


_NO_THETA = object()


def _check_model(X, sigma, theta=_NO_THETA):
    """Validate rankings against one or several centres (and their thetas).

    ``theta`` is left out by the functions that take none; any value passed,
    ``None`` included, is validated (the compiled log-likelihood would
    dereference a ``None`` theta).
    """
    sigmas, single = check_permutations(sigma)
    n_items = sigmas.shape[1]
    X = check_rankings(X, n_items=n_items)
    if theta is _NO_THETA:
        return X, sigmas, single, None
    thetas = check_theta(
        theta, n_stages=X.shape[1], n_centres=sigmas.shape[0], n_items=n_items
    )
    return X, sigmas, single, thetas


def codes(X, sigma):
    """Codes ``s_j(pi | sigma)`` of each ranking against a central ranking.

    Parameters
    ----------
    X : array-like of shape (n_rankings, t_max) or list of sequences
        Top-t rankings, best first, padded with -1.
    sigma : array-like of shape (n_items,) or (n_centres, n_items)
        Central ranking(s): permutations of ``0..n_items-1``, best first.

    Returns
    -------
    codes : ndarray of shape (n_rankings, t_max) or (n_centres, n_rankings, t_max)
        ``codes[i, j]`` is ``s_{j+1}(X[i] | sigma)``, in ``0..n_items-1-j``; -1 where
        ``X`` is padding.

    Notes
    -----
    ``s_j`` counts the items not among ``pi^{-1}(1..j-1)`` that ``sigma`` puts
    before ``pi^{-1}(j)``. Each pair costs at most O(t^2) integer work after t
    look-ups in the inverse of sigma, whatever the number of items.

    Examples
    --------
    >>> from rankmix import mallows
    >>> mallows.codes([[2, 0, 1], [1, -1, -1]], sigma=[0, 1, 2])
    array([[ 2,  0,  0],
           [ 1, -1, -1]])
    """
    X, sigmas, single, _ = _check_model(X, sigma)
    out = _kernels.codes(X, sigmas)
    return out[0] if single else out


def kendall_distance(X, sigma):
    """Kendall distance between top-t rankings and a full central ranking.

    Parameters
    ----------
    X : array-like of shape (n_rankings, t_max) or list of sequences
        Top-t rankings, best first, padded with -1.
    sigma : array-like of shape (n_items,) or (n_centres, n_items)
        Central ranking(s).

    Returns
    -------
    distance : ndarray of shape (n_rankings,) or (n_rankings, n_centres)
        The number of item pairs whose order the top-t ranking fixes (both items
        ranked, or one ranked and the other not, the ranked one first) and
        ``sigma`` reverses. For full rankings this is the usual Kendall tau
        distance.

    Notes
    -----
    The distance equals the sum of the codes, ``sum_j s_j(pi | sigma)``.

    Examples
    --------
    >>> from rankmix import mallows
    >>> mallows.kendall_distance([[2, 1, 0], [1]], sigma=[0, 1, 2])
    array([3, 1])
    """
    X, sigmas, single, _ = _check_model(X, sigma)
    out = _kernels.kendall_distance(X, sigmas)
    return out[:, 0] if single else out


def log_likelihood(X, sigma, theta):
    """Log-probability of each top-t ranking under a GM model.

    Parameters
    ----------
    X : array-like of shape (n_rankings, t_max) or list of sequences
        Top-t rankings, best first, padded with -1. Rows may have different lengths.
    sigma : array-like of shape (n_items,) or (n_centres, n_items)
        Central ranking(s); ``n_items = len(sigma)``.
    theta : float or array-like of shape (n_stages,) or (n_centres, n_stages)
        Non-negative dispersion per stage, ``n_stages >= t_max`` (later stages are
        ignored; full rankings may leave out their last place, whose theta
        changes nothing); a scalar means the same theta at every stage.

    Returns
    -------
    log_prob : ndarray of shape (n_rankings,) or (n_rankings, n_centres)
        ``log GM(X[i] | sigma, theta)``, the probability of the top-t ranking
        ``X[i]`` (with ``t`` its own length) among all top-t rankings.

    Notes
    -----
    .. math::

        \\log GM(\\pi \\mid \\sigma, \\theta) = -\\sum_{j=1}^{t} \\left[\\theta_j
        s_j(\\pi \\mid \\sigma) + \\log \\psi_{n-j}(\\theta_j)\\right].

    For each ``t`` these probabilities sum to one over all ``n!/(n-t)!`` top-t
    rankings.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmix import mallows
    >>> logp = mallows.log_likelihood([[0, 1, 2], [2, 1, 0]], [0, 1, 2], theta=1.0)
    >>> np.round(np.exp(logp), 4)
    array([0.4863, 0.0242])
    """
    X, sigmas, single, thetas = _check_model(X, sigma, theta)
    out = _kernels.log_likelihood(X, sigmas, thetas)
    return out[:, 0] if single else out


def sample(sigma, theta, n_samples, t, random_state=None):
    """Exact draws of top-t rankings from a GM model.

    Parameters
    ----------
    sigma : array-like of shape (n_items,)
        The central ranking.
    theta : float or array-like of shape (n_stages,)
        Non-negative dispersion per stage, ``n_stages >= t`` (``t - 1`` when
        ``t = n_items``: the last place's theta changes nothing).
    n_samples : int
        Number of rankings to draw.
    t : int
        Length of each ranking, ``1 <= t <= n_items``.
    random_state : int, RandomState instance or None, default=None
        Pass an int for reproducible output across multiple function calls.

    Returns
    -------
    X : ndarray of shape (n_samples, t)
        The rankings, best first.

    Notes
    -----
    The codes ``s_1..s_t`` are independent, ``P(s_j = k)`` proportional to
    ``exp(-theta_j k)`` on ``0..n-j``; each is drawn by inverting its CDF (the
    floor of a truncated exponential variable), then the ranking is read off sigma
    by the inverse of :func:`codes`.

    Examples
    --------
    >>> from rankmix import mallows
    >>> mallows.sample([3, 1, 0, 2], theta=2.0, n_samples=3, t=2, random_state=0)
    array([[3, 1],
           [3, 1],
           [3, 1]])
    """
    from sklearn.utils import check_random_state

    sigmas, single = check_permutations(sigma)
    if not single:
        raise ValueError(
            f"sample takes one central ranking; got sigma of shape {sigmas.shape}."
        )
    n_items = sigmas.shape[1]
    n_samples = _check_count(n_samples, "n_samples", minimum=0)
    t = _check_count(t, "t", minimum=1)
    if t > n_items:
        raise ValueError(f"t={t} exceeds the number of items n_items={n_items}.")
    thetas = check_theta(theta, n_stages=t, n_items=n_items)[0, :t]
    rng = check_random_state(random_state)
    with sized_by("n_samples", n_samples):
        stage_codes = _sample_codes(thetas, n_items, n_samples, rng)
        return _kernels.rankings_from_codes(stage_codes, sigmas[0])


def top_k_probabilities(sigma, theta, k):
    """Probability that each item is among the first ``k`` under a GM model.

    Parameters
    ----------
    sigma : array-like of shape (n_items,) or (n_centres, n_items)
        Central ranking(s).
    theta : float or array-like of shape (n_stages,) or (n_centres, n_stages)
        Non-negative dispersion per stage, ``n_stages >= k`` (``k - 1`` when
        ``k = n_items``).
    k : int
        Number of leading places, ``1 <= k <= n_items``.

    Returns
    -------
    proba : ndarray of shape (n_items,) or (n_centres, n_items)
        ``proba[i]``: P(item i is ranked among the first ``k``). Sums to ``k``.

    Notes
    -----
    Exact, from the stagewise structure of the model: stage j picks the item
    at place s_j, counted from 0, among the items still unranked, in the order
    of sigma, with P(s_j = s) proportional to exp(-theta_j s) for s in
    0..n-j. An unranked item at place p is picked at stage j with probability
    P(s_j = p); otherwise it moves to place p - 1 if s_j < p, and stays at p
    if s_j > p. So its place is a Markov chain, and the probability that it is
    still unranked after k stages is propagated over places, with no sum over
    the n! / (n - k)! top-k rankings. An item starts at its rank in sigma and
    moves down at most one place a stage, so after j stages it lies within j
    places of its start: the chain is kept on that band, in O(n k^2) time and
    O(n k) memory per centre (a full n x n table of places would need 80 GB at
    n = 100,000).

    Examples
    --------
    >>> from rankmix import mallows
    >>> mallows.top_k_probabilities([3, 0, 1, 2], theta=1.0, k=2).round(3)
    array([0.694, 0.306, 0.119, 0.881])
    """
    sigmas, single = check_permutations(sigma)
    n_centres, n_items = sigmas.shape
    k = _check_count(k, "k", minimum=1)
    if k > n_items:
        raise ValueError(f"k={k} exceeds the number of items n_items={n_items}.")
    thetas = check_theta(theta, n_stages=k, n_centres=n_centres, n_items=n_items)
    thetas = thetas[:, :k]
    out = np.empty(sigmas.shape, dtype=np.float64)
    # centres in blocks of about 2**20 band entries
    block = max(1, 2**20 // (n_items * (k + 1)))
    for start in range(0, n_centres, block):
        stop = min(start + block, n_centres)
        with sized_by("k", k):  # a band of n_items x (k + 1) a centre at least
            by_rank = _top_k_by_rank(thetas[start:stop], n_items, k)
        np.put_along_axis(out[start:stop], sigmas[start:stop], by_rank, axis=1)
    return out[0] if single else out


def _top_k_by_rank(thetas, n_items, k):
    """P(the item at each rank of sigma is among the first k), per centre.

    ``band[m, b, p]`` is the probability that, under centre b, the item at rank
    p of sigma is still unranked and at place p - m among the unranked items
    (m = 0..k; other places are out of its reach).
    """
    n_centres = thetas.shape[0]
    band = np.zeros((k + 1, n_centres, n_items))
    band[0] = 1.0
    for j in range(k):
        with np.errstate(over="ignore"):  # theta k beyond 1.8e308: weight 0
            weights = np.exp(-thetas[:, j, None] * np.arange(n_items - j))
        pmf = weights / weights.sum(axis=1, keepdims=True)
        # above[:, k + c] = P(s_j > c) for the places c = -k..n-1: 1 below 0 (no
        # item moves below place 0), 0 from n-j-1 on (the last place cannot be
        # passed); summed from the tail, with no 1 - cancellation
        above = np.zeros((n_centres, k + n_items))
        above[:, :k] = 1.0
        above[:, k : k + n_items - j - 1] = np.cumsum(pmf[:, ::-1], axis=1)[:, -2::-1]
        moved = np.empty_like(band)
        for m in range(k + 1):
            # P(s_j > c) at the place after the stage, c = p - m, for every p
            stays = above[:, k - m : k - m + n_items]
            np.multiply(band[m], stays, out=moved[m])
            if m:
                moved[m] += band[m - 1] * (1.0 - stays)
        band = moved
    return 1.0 - band.sum(axis=0)


# theta * (number of values) under this: the stage's codes are uniform.
_UNIFORM_BELOW = 2.0**-53


def _sample_codes(theta, n_items, n_samples, rng):
    """Independent codes: column j truncated-geometric on 0..n-1-j, rate theta[j]."""
    t = theta.shape[0]
    top = n_items - np.arange(t)  # number of values stage j can take
    u = rng.random_sample((n_samples, t))
    # theta near the double range's end: theta * top overflows to inf, whose
    # mass is 1, as it should be
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # P(s < x) = (1 - e^{-theta x}) / (1 - e^{-theta m}) on [0, m): invert it.
        rate = theta * top
        mass = -np.expm1(-rate)
        draws = np.floor(-np.log1p(-u * mass) / theta)
    uniform = np.floor(u * top)  # theta = 0: uniform codes
    # When theta * top is below double precision, the pmf exp(-theta k) is
    # uniform to the last bit, while the inversion above loses every digit
    # (subnormal theta): such stages are drawn as uniform, exactly.
    draws = np.where(rate >= _UNIFORM_BELOW, draws, uniform)
    # Round-off can land exactly on the upper end of the range.
    return np.minimum(draws, top - 1).astype(np.intp)


def _check_count(value, name, minimum):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}.")
    return int(value)
