"""Plain reference implementation of the generalized Mallows (GM) model.

This module is an independent, deliberately slow re-implementation of the
quantities that rankmix computes with Cython kernels. The test suite compares
the kernels against it on tiny problems (``n <= 6`` items), where everything
can be enumerated. It uses only the standard library, NumPy and SciPy, and
never imports rankmix.

Conventions (the same as the package, notation of Meila & Chen, 2010):

- Items are the integers ``0..n-1``.
- A ranking ``x`` is a sequence of distinct items, best first. It may be a
  top-t ranking (``t <= n`` items). A data set ``X`` is a 2-D int array of
  shape ``(N, t_max)`` whose rows are padded with ``-1`` after their last item
  (a list of sequences of varying lengths is accepted too).
- A central ranking ``sigma`` is a full permutation, ``sigma[r]`` is the item
  at rank ``r`` (0-based), best first.
- ``theta`` is indexed by stage: ``theta[0]`` is theta_1. Stage ``j = n`` of
  a full ranking always has ``s_n = 0`` and ``psi_0 = 1``, so ``theta_n`` is
  never needed: a ``theta`` of length ``n - 1`` is enough for full rankings.
- Code ``s_j(x | sigma)``, ``j = 1..t``: the number of items not among
  ``x_1..x_{j-1}`` that ``sigma`` places before ``x_j``; in ``0..n-j``.
- ``psi_m(theta) = sum_{k=0}^{m} exp(-k theta)``.
- GM log-likelihood of a top-t ranking:
  ``sum_{j<=t} [-theta_j s_j(x | sigma) - log psi_{n-j}(theta_j)]``.

Distributions over permutations are returned as dicts
``{tuple(sigma): probability}``.
"""

import itertools
import math

import numpy as np
from scipy import integrate, optimize

__all__ = [
    "log_psi",
    "psi",
    "as_rankings",
    "all_permutations",
    "all_top_t",
    "codes",
    "codes_array",
    "kendall_distance",
    "gm_log_likelihood",
    "gm_log_likelihood_array",
    "gm_code_pmf",
    "gm_pmf_table",
    "energy",
    "sufficient_matrix",
    "energy_from_matrix",
    "exact_sigma_posterior",
    "stagewise_proposal_logprob",
    "stagewise_proposal_distribution",
    "stagewise_sample",
    "first_item_distribution",
    "rank_marginals",
    "empirical_distribution",
    "total_variation",
    "theta_log_density",
    "theta_mode",
    "theta_log_normalizer",
    "theta_pdf",
    "theta_cdf",
    "theta_sample_exact",
]


# ---------------------------------------------------------------------------
# psi and small helpers
# ---------------------------------------------------------------------------


def log_psi(m, theta):
    """Return ``log psi_m(theta) = log sum_{k=0}^{m} exp(-k theta)``.

    Computed as a log-sum-exp of the ``m + 1`` terms, so it is exact and stable
    for every real ``theta`` (including 0, where it is ``log(m + 1)``, and
    negative values). ``theta`` may be a scalar or an array; the result has
    the same shape (a float for a scalar).
    """
    m = int(m)
    if m < 0:
        raise ValueError(f"m must be >= 0, got {m}")
    th = np.asarray(theta, dtype=float)
    expo = -np.multiply.outer(th, np.arange(m + 1))  # shape th.shape + (m+1,)
    top = expo.max(axis=-1)
    out = top + np.log(np.exp(expo - top[..., None]).sum(axis=-1))
    return float(out) if out.ndim == 0 else out


def _log_psi_scalar(m, theta):
    """Scalar ``log psi_m(theta)`` with the math module (fast inside quad)."""
    top = max(0.0, -m * theta)
    return top + math.log(sum(math.exp(-k * theta - top) for k in range(m + 1)))


def psi(m, theta):
    """Return ``psi_m(theta) = sum_{k=0}^{m} exp(-k theta)`` (see `log_psi`)."""
    return np.exp(log_psi(m, theta))


def _as_rng(rng):
    """Return a NumPy Generator/RandomState from None, an int or an RNG object."""
    if isinstance(rng, (np.random.Generator, np.random.RandomState)):
        return rng
    return np.random.default_rng(rng)


def _check_sigma(sigma, n=None):
    """Return ``sigma`` as a tuple of ints after checking it is a permutation."""
    sig = tuple(int(v) for v in np.asarray(sigma).ravel())
    if sorted(sig) != list(range(len(sig))):
        raise ValueError(f"sigma must be a permutation of 0..n-1, got {sig}")
    if n is not None and len(sig) != n:
        raise ValueError(f"sigma has length {len(sig)}, expected n={n}")
    return sig


def _check_ranking(x, n):
    """Return ``x`` (padding removed) as a tuple after checking it is valid."""
    vals = [int(v) for v in np.asarray(x).ravel()]
    t = len(vals)
    while t > 0 and vals[t - 1] == -1:
        t -= 1
    items = vals[:t]
    if any(v < 0 or v >= n for v in items):
        raise ValueError(f"ranking {vals} has items outside 0..{n - 1} "
                         "or -1 padding before its last item")
    if len(set(items)) != len(items):
        raise ValueError(f"ranking {vals} repeats an item")
    return tuple(items)


def as_rankings(X, n):
    """Return the data set ``X`` as a list of tuples, padding removed.

    ``X`` is a 2-D int array ``(N, t_max)`` padded with -1, a list of
    sequences (possibly of different lengths), or a single ranking (a 1-D
    array or a flat list of ints), which is treated as a data set of one row.
    Each ranking is checked: distinct items in ``0..n-1``, -1 only trailing.
    """
    if isinstance(X, np.ndarray):
        rows = [X] if X.ndim == 1 else list(X)
    else:
        X = list(X)
        if len(X) > 0 and isinstance(X[0], (int, np.integer)):
            rows = [X]
        else:
            rows = X
    return [_check_ranking(row, n) for row in rows]


def _stage_theta(theta, j, n):
    """Return theta_j (``j`` 1-based), allowing theta to omit stage ``j = n``.

    Stage ``n`` always has code 0 and ``psi_0 = 1``, so its parameter never
    matters; 0.0 is returned when ``theta`` does not provide it.
    """
    if j - 1 < len(theta):
        return float(theta[j - 1])
    if j == n:
        return 0.0
    raise ValueError(f"theta has length {len(theta)} but stage {j} is needed")


def all_permutations(n):
    """Return all ``n!`` full rankings of ``0..n-1`` as tuples (lexicographic)."""
    return list(itertools.permutations(range(n)))


def all_top_t(n, t):
    """Return all ``n!/(n-t)!`` top-t rankings of ``n`` items as tuples."""
    return list(itertools.permutations(range(n), t))


# ---------------------------------------------------------------------------
# Codes, Kendall distance, GM likelihood
# ---------------------------------------------------------------------------


def codes(x, sigma):
    """Return the codes ``[s_1, ..., s_t]`` of ranking ``x`` w.r.t. ``sigma``.

    ``s_j`` is the number of items ``l`` not among ``x_1..x_{j-1}`` such that
    ``sigma`` places ``l`` before ``x_j``. Padding (-1) in ``x`` is ignored.
    """
    sig = _check_sigma(sigma)
    n = len(sig)
    x = _check_ranking(x, n)
    rank = {item: r for r, item in enumerate(sig)}
    out = []
    for j in range(len(x)):
        earlier = set(x[:j])
        out.append(sum(1 for item in range(n)
                       if item not in earlier and rank[item] < rank[x[j]]))
    return out


def codes_array(X, sigma):
    """Return an int array shaped like ``X`` with ``s_j(X[i] | sigma)``, -1 on padding.

    Mirrors ``rankmix.mallows.codes``. ``X`` must be a 2-D array (or a list of
    equal-length rows) padded with -1.
    """
    X = np.atleast_2d(np.asarray(X))
    sig = _check_sigma(sigma)
    out = np.full(X.shape, -1, dtype=np.int64)
    for i, row in enumerate(X):
        c = codes(row, sig)
        out[i, :len(c)] = c
    return out


def kendall_distance(x, sigma):
    """Kendall distance between a top-t ranking ``x`` and a full ranking ``sigma``.

    Counted pair by pair (not through the codes): the number of ordered pairs
    ``(a, b)`` such that ``x`` implies "a before b" (both in ``x`` with ``a``
    earlier, or ``a`` in ``x`` and ``b`` not in ``x``) while ``sigma`` puts
    ``b`` before ``a``. For full rankings this is the usual number of
    discordant pairs.
    """
    sig = _check_sigma(sigma)
    n = len(sig)
    x = _check_ranking(x, n)
    pos_x = {item: r for r, item in enumerate(x)}
    pos_s = {item: r for r, item in enumerate(sig)}
    d = 0
    for a in range(n):
        for b in range(n):
            if a == b or a not in pos_x:
                continue
            x_says_a_first = b not in pos_x or pos_x[a] < pos_x[b]
            if x_says_a_first and pos_s[b] < pos_s[a]:
                d += 1
    return d


def gm_log_likelihood(x, sigma, theta):
    """Log GM^s probability of one top-t ranking ``x`` given ``sigma`` and ``theta``.

    ``sum_{j<=t} [-theta_j s_j(x | sigma) - log psi_{n-j}(theta_j)]`` with
    ``n = len(sigma)``.
    """
    sig = _check_sigma(sigma)
    n = len(sig)
    s = codes(x, sig)
    total = 0.0
    for j, sj in enumerate(s, start=1):
        th = _stage_theta(theta, j, n)
        total += -th * sj - log_psi(n - j, th)
    return total


def gm_log_likelihood_array(X, sigma, theta):
    """Log GM^s probability of each row of ``X`` (padded with -1), shape ``(N,)``.

    Mirrors ``rankmix.mallows.log_likelihood``.
    """
    sig = _check_sigma(sigma)
    rows = as_rankings(X, len(sig))
    return np.array([gm_log_likelihood(x, sig, theta) for x in rows])


def gm_code_pmf(theta_j, m):
    """Return the pmf of one code under GM: ``P[s_j = k] = e^{-theta_j k} / psi_m``.

    ``m = n - j``; the result is an array of length ``m + 1`` (k = 0..m).
    """
    k = np.arange(m + 1)
    return np.exp(-theta_j * k - log_psi(m, theta_j))


def gm_pmf_table(sigma, theta, t):
    """Return ``{x: P(x)}`` for all top-t rankings ``x`` under GM^s(sigma, theta).

    The probabilities are ``exp(gm_log_likelihood(x, sigma, theta))``; they sum
    to one over ``all_top_t(n, t)``.
    """
    sig = _check_sigma(sigma)
    return {x: math.exp(gm_log_likelihood(x, sig, theta))
            for x in all_top_t(len(sig), t)}


# ---------------------------------------------------------------------------
# Energy of a central ranking and its exact conditional
# ---------------------------------------------------------------------------


def energy(sigma, X, theta):
    """Energy ``L_sigma(R) = sum_{x in X} sum_{j <= t(x)} theta_j s_j(x | sigma)``.

    Code form. ``-energy`` is the log of the unnormalised conditional of
    ``sigma`` given ``theta`` and the data (uniform prior on ``sigma``).
    """
    sig = _check_sigma(sigma)
    n = len(sig)
    total = 0.0
    for x in as_rankings(X, n):
        for j, sj in enumerate(codes(x, sig), start=1):
            total += _stage_theta(theta, j, n) * sj
    return total


def sufficient_matrix(X, theta, n):
    """Return the dense ``n x n`` matrix ``R = sum_x sum_j theta_j R_j(x)``.

    ``R_j(x)[a, c] = 1`` if ``x_j == a``, ``c != a`` and ``c`` is not ranked
    before ``a`` in ``x`` (an item absent from ``x`` counts as "not before").
    Rows are the item at stage j, columns the items it is compared with.
    """
    R = np.zeros((n, n))
    for x in as_rankings(X, n):
        for j, a in enumerate(x, start=1):
            before = set(x[:j - 1])
            th = _stage_theta(theta, j, n)
            for c in range(n):
                if c != a and c not in before:
                    R[a, c] += th
    return R


def energy_from_matrix(sigma, R):
    """Matrix form of the energy: sum of ``R[a, c]`` over ``c`` before ``a`` in sigma.

    This is the paper's ``L_sigma(R)`` (lower triangle of R after permuting its
    rows and columns by sigma).
    """
    sig = _check_sigma(sigma)
    n = len(sig)
    pos = {item: r for r, item in enumerate(sig)}
    return float(sum(R[a, c] for a in range(n) for c in range(n)
                     if pos[c] < pos[a]))


def _normalise_log_weights(keys, logw):
    """Return ``{key: exp(logw - logsumexp(logw))}``."""
    logw = np.asarray(logw, dtype=float)
    top = logw.max()
    lse = top + math.log(np.exp(logw - top).sum())
    return {k: math.exp(lw - lse) for k, lw in zip(keys, logw)}


def exact_sigma_posterior(X, theta, n):
    """Exact ``P(sigma | theta, X)`` for a uniform prior on sigma, by enumeration.

    ``P(sigma) ∝ exp(-L_sigma(R))`` over all ``n!`` permutations; returns
    ``{tuple(sigma): probability}``.
    """
    perms = all_permutations(n)
    return _normalise_log_weights(perms, [-energy(s, X, theta) for s in perms])


def _stagewise_logprob_from_matrix(sigma, R):
    """Log-probability that the stagewise rule on matrix ``R`` picks ``sigma``."""
    n = len(sigma)
    remaining = list(range(n))
    logp = 0.0
    for k in range(n):
        # rho_c = sum_{a in U} R[a, c]; P(c) = exp(-rho_c) / sum_c' exp(-rho_c')
        rho = np.array([sum(R[a, c] for a in remaining) for c in remaining])
        top = (-rho).max()
        lse = top + math.log(np.exp(-rho - top).sum())
        chosen = sigma[k]
        logp += -rho[remaining.index(chosen)] - lse
        remaining.remove(chosen)
    return logp


def stagewise_proposal_logprob(sigma, X, theta, n):
    """Log-probability of ``sigma`` under Sample-sigma-Stagewise (paper's Figure 2).

    With ``U`` the unchosen items (initially all), stage ``k = 0..n-1`` picks
    ``sigma[k] = c in U`` with probability ``exp(-rho_c) / sum_{c' in U}
    exp(-rho_c')``, ``rho_c = sum_{a in U} R[a, c]`` (R from
    `sufficient_matrix`), then removes ``c``. Returns the sum of the log
    chosen probabilities. When R restricted to U is zero the choice is
    uniform, which is the paper's "fill in the remaining ranks uniformly".
    """
    sig = _check_sigma(sigma, n)
    return _stagewise_logprob_from_matrix(sig, sufficient_matrix(X, theta, n))


def stagewise_proposal_distribution(X, theta, n):
    """Full stagewise proposal distribution ``{tuple(sigma): probability}``.

    Enumerates all ``n!`` permutations with `stagewise_proposal_logprob`; the
    probabilities sum to one because the rule is a sequence of normalised
    choices.
    """
    R = sufficient_matrix(X, theta, n)
    return {s: math.exp(_stagewise_logprob_from_matrix(s, R))
            for s in all_permutations(n)}


def stagewise_sample(X, theta, n, rng=None):
    """Draw one sigma by the stagewise rule; returns ``(sigma array, log-prob)``.

    ``rng``: None, an int seed, a ``numpy.random.Generator`` or ``RandomState``.
    """
    rng = _as_rng(rng)
    R = sufficient_matrix(X, theta, n)
    remaining = list(range(n))
    sigma = []
    logp = 0.0
    for _ in range(n):
        rho = np.array([sum(R[a, c] for a in remaining) for c in remaining])
        logw = -rho - (-rho).max()
        p = np.exp(logw) / np.exp(logw).sum()
        idx = int(np.searchsorted(np.cumsum(p), rng.uniform() * p.sum(),
                                  side="right"))
        idx = min(idx, len(remaining) - 1)
        logp += math.log(p[idx])
        c = remaining.pop(idx)
        sigma.append(c)
    return np.array(sigma), logp


# ---------------------------------------------------------------------------
# Summaries of distributions over permutations
# ---------------------------------------------------------------------------


def rank_marginals(dist):
    """Return ``M`` with ``M[r, i] = P(sigma[r] = i)`` from ``{tuple(sigma): prob}``."""
    n = len(next(iter(dist)))
    M = np.zeros((n, n))
    for s, p in dist.items():
        for r, item in enumerate(s):
            M[r, item] += p
    return M


def first_item_distribution(dist):
    """Return ``P(sigma[0] = i)`` for ``i = 0..n-1`` from ``{tuple(sigma): prob}``."""
    return rank_marginals(dist)[0]


def empirical_distribution(samples):
    """Return ``{tuple(row): frequency}`` for a sequence of sampled rankings."""
    counts = {}
    for row in samples:
        key = tuple(int(v) for v in row)
        counts[key] = counts.get(key, 0) + 1
    total = sum(counts.values())
    return {k: c / total for k, c in counts.items()}


def total_variation(p, q):
    """Total variation distance between two dict distributions (missing keys = 0)."""
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in keys)


# ---------------------------------------------------------------------------
# Slice-sampler target for one stage parameter theta_j
# ---------------------------------------------------------------------------

#: Log-density drop (from the mode) at which the sampler's grid is truncated.
#: For a log-concave density the mass beyond it is below exp(-_DROP).
_DROP = 60.0


def _check_theta_params(a, b, m):
    if not a > 0:
        raise ValueError(f"a must be > 0, got {a}")
    if not b >= 0:
        raise ValueError(f"b must be >= 0, got {b}")
    if int(m) != m or m < 0:
        raise ValueError(f"m must be an integer >= 0, got {m}")
    return float(a), float(b), int(m)


def theta_log_density(theta, a, b, m):
    """Unnormalised log target ``-a theta - b log psi_m(theta)`` for ``theta >= 0``.

    ``-inf`` for ``theta < 0``. With ``a = nu r_j + S_j`` and ``b = nu + N_j``
    this is the paper's equation (10). Scalar in, float out; array in, array out.
    """
    a, b, m = _check_theta_params(a, b, m)
    th = np.asarray(theta, dtype=float)
    safe = np.where(th >= 0, th, 0.0)
    out = np.where(th >= 0, -a * safe - b * log_psi(m, safe), -np.inf)
    return float(out) if out.ndim == 0 else out


def _mean_code(theta, m):
    """``E[k]`` for ``P(k) ∝ exp(-k theta)``, ``k = 0..m`` (= -d/dtheta log psi_m)."""
    k = np.arange(m + 1)
    w = np.exp(-k * theta - max(0.0, -m * theta))
    return float((k * w).sum() / w.sum())


def theta_mode(a, b, m):
    """Mode of the theta target on ``[0, inf)``.

    The log-density is concave (``log psi_m`` is convex) with derivative
    ``-a + b E_theta[k]`` where ``E_theta[k]`` decreases from ``m/2`` to 0. So
    the mode is 0 when ``a >= b m / 2``, otherwise the root of the derivative,
    found with ``scipy.optimize.brentq``.
    """
    a, b, m = _check_theta_params(a, b, m)
    if a >= b * m / 2.0:
        return 0.0

    def slope(th):
        return -a + b * _mean_code(th, m)

    hi = 1.0
    while slope(hi) > 0:
        hi *= 2.0
    return optimize.brentq(slope, 0.0, hi, xtol=1e-14, rtol=1e-14)


def _theta_support(a, b, m):
    """Return ``(mode, log f(mode), lo, hi)``.

    ``[lo, hi]`` is where the log-density is within ``_DROP`` of its maximum.
    """
    mode = theta_mode(a, b, m)
    top = theta_log_density(mode, a, b, m)

    def gap(th):
        return theta_log_density(th, a, b, m) - top + _DROP

    step = 1.0 / max(a, 1e-300)  # scale of the exponential tail
    hi = mode + step
    while gap(hi) > 0:
        step *= 2.0
        hi = mode + step
    hi = optimize.brentq(gap, mode, hi, xtol=1e-14)
    lo = 0.0
    if mode > 0 and gap(0.0) < 0:
        lo = optimize.brentq(gap, 0.0, mode, xtol=1e-14)
    return mode, top, lo, hi


def _shifted_quad(lo, hi, a, b, m, top):
    """``quad`` of ``exp(log f - top)`` over ``[lo, hi]`` (``hi`` may be inf)."""
    if hi <= lo:
        return 0.0

    def f(th):
        return math.exp(-a * th - b * _log_psi_scalar(m, th) - top)

    val, _ = integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-12, limit=200)
    return val


def theta_log_normalizer(a, b, m):
    """Log of ``Z = integral_0^inf exp(-a theta - b log psi_m(theta)) dtheta``.

    Computed with ``scipy.integrate.quad`` on ``[0, inf)``, split at the mode
    and at the point where the density has dropped by ``exp(-60)``, after
    shifting the log-density by its value at the mode so that large ``a``,
    ``b`` (e.g. 5000, 3000) do not underflow.
    """
    a, b, m = _check_theta_params(a, b, m)
    mode, top, lo, hi = _theta_support(a, b, m)
    mass = (_shifted_quad(0.0, mode, a, b, m, top)
            + _shifted_quad(mode, hi, a, b, m, top)
            + _shifted_quad(hi, np.inf, a, b, m, top))
    return top + math.log(mass)


def theta_pdf(theta, a, b, m):
    """Normalised density of the theta target (0 for ``theta < 0``)."""
    return np.exp(theta_log_density(theta, a, b, m) - theta_log_normalizer(a, b, m))


def theta_cdf(x, a, b, m):
    """CDF of the normalised theta target, by ``quad`` (scalar or array ``x``).

    The points of ``x`` are sorted and the integral is accumulated piece by
    piece between consecutive points (split at the mode), each piece by
    ``scipy.integrate.quad`` of the shifted density.
    """
    a, b, m = _check_theta_params(a, b, m)
    xs = np.asarray(x, dtype=float)
    mode, top, lo, hi = _theta_support(a, b, m)
    log_z = theta_log_normalizer(a, b, m)
    flat = xs.ravel()
    order = np.argsort(flat)
    out = np.empty(flat.size)
    cum = 0.0
    prev = 0.0
    for idx in order:
        xi = flat[idx]
        if xi <= 0.0:
            out[idx] = 0.0
            continue
        if np.isinf(xi):
            out[idx] = 1.0
            continue
        if prev < mode < xi:
            cum += _shifted_quad(prev, mode, a, b, m, top)
            prev = mode
        cum += _shifted_quad(prev, xi, a, b, m, top)
        prev = xi
        out[idx] = min(1.0, cum * math.exp(top - log_z))
    out = out.reshape(xs.shape)
    return float(out) if out.ndim == 0 else out


# Gauss-Legendre rule used by the sampler's table (exact for smooth pieces).
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(12)


def _gl_integral(left, right, a, b, m, top):
    """Gauss-Legendre integral of ``exp(log f - top)`` on ``[left, right]``."""
    left = np.asarray(left, dtype=float)
    right = np.asarray(right, dtype=float)
    half = 0.5 * (right - left)
    mid = 0.5 * (right + left)
    nodes = mid[..., None] + half[..., None] * _GL_NODES
    vals = np.exp(-a * nodes - b * log_psi(m, nodes) - top)
    return half * (vals * _GL_WEIGHTS).sum(axis=-1)


def theta_sample_exact(size, a, b, m, rng=None, n_grid=2000):
    """Draw ``size`` independent theta's from the target by numerical inverse CDF.

    The CDF is tabulated on ``n_grid`` equal intervals covering the region
    where the density is within ``exp(-60)`` of its maximum (the omitted mass
    is below ``exp(-60)``, log-concavity), each interval's mass by a 12-point
    Gauss-Legendre rule. A uniform draw is located in the table and then
    inverted inside its interval by bisection (60 halvings) on the
    Gauss-Legendre partial integral, so the result is exact to rounding.
    ``rng``: None, int, ``numpy.random.Generator`` or ``RandomState``.
    """
    a, b, m = _check_theta_params(a, b, m)
    rng = _as_rng(rng)
    mode, top, lo, hi = _theta_support(a, b, m)
    grid = np.linspace(lo, hi, n_grid + 1)
    mass = _gl_integral(grid[:-1], grid[1:], a, b, m, top)
    cum = np.concatenate([[0.0], np.cumsum(mass)])
    u = rng.uniform(size=size) * cum[-1]
    i = np.clip(np.searchsorted(cum, u, side="right") - 1, 0, n_grid - 1)
    target = u - cum[i]  # mass still to cover inside interval i
    left = grid[i].copy()
    right = grid[i + 1].copy()
    base = grid[i]
    for _ in range(60):
        mid = 0.5 * (left + right)
        below = _gl_integral(base, mid, a, b, m, top) < target
        left = np.where(below, mid, left)
        right = np.where(below, right, mid)
    return 0.5 * (left + right)
