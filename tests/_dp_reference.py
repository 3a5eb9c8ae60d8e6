"""Plain reference for the Dirichlet-process mixture of generalized Mallows models.

The test suite uses this module to check rankmix's MCMC samplers against the
EXACT posterior over clusterings on tiny problems (``n <= 5`` items,
``N <= 6`` rankings), where every set partition of the data and every central
permutation can be enumerated. It is deliberately slow and simple, uses only
the standard library, NumPy, SciPy and the single-GM reference
``tests/_reference.py``, and never imports rankmix.

Conventions (the package's; notation of Meila & Chen, 2010)
----------------------------------------------------------
- Items are ``0..n-1``. A data set ``X`` is an int array ``(N, t_max)`` whose
  rows are top-t rankings, best first, padded with ``-1`` (a list of sequences
  of different lengths is accepted too). Row ``i`` has length ``t_i``.
- ``sigma`` is a full permutation, ``sigma[r]`` is the item at rank ``r``;
  ``s_j(x | sigma)``, ``j = 1..t(x)``, are the codes of ``_reference.codes``.
- ``GM(x | sigma, theta) = prod_{j<=t(x)} exp(-theta_j s_j) / psi_{n-j}(theta_j)``.
- Prior of one cluster: ``sigma`` uniform over the ``n!`` permutations and,
  independently for each stage ``j = 1..T``, ``theta_j >= 0`` with density
  ``P0(theta_j) = exp(-nu [theta_j r_j + log psi_{n-j}(theta_j)]) / Z0_j``.
  ``r`` is a scalar (the same ``r_j`` for every stage) or a vector whose entry
  ``r[j-1]`` is ``r_j`` (its length must be at least the longest ranking;
  extra entries are unused). ``nu * r_j > 0`` is needed for ``Z0_j < inf``.
- Cluster marginal likelihood of a set ``C`` of rankings::

      m(C) = (1/n!) sum_sigma prod_j  I(nu r_j + S_j(sigma), nu + N_j, n-j)
                                      / I(nu r_j, nu, n-j)

  with ``I(a, b, m) = int_0^inf exp(-a theta - b log psi_m(theta)) dtheta``,
  ``S_j(sigma) = sum_{x in C, t(x) >= j} s_j(x | sigma)`` and
  ``N_j = #{x in C : t(x) >= j}``. A stage with ``N_j = 0`` contributes a factor
  exactly 1 (the prior of ``theta_j`` integrates to one), and so does stage
  ``j = n`` (``s_n = 0``, ``psi_0 = 1``). Hence ``m(C)`` does not depend on the
  number of stages ``T`` as long as ``T >= max t(x)``: ``T`` only says how
  many entries of ``r`` are needed. Lemma 1: ``m({x}) = (n-t)!/n!``.
- DP prior over clusterings (Chinese restaurant process)::

      P(c) = alpha^K prod_k (|C_k| - 1)! / prod_{i=0}^{N-1} (alpha + i).

- Exact posterior: ``P(c | X) ∝ P(c) prod_k m(C_k)`` over all set partitions.

A clustering is represented by its canonical label tuple (restricted growth
string): ranking 0 has label 0 and each new cluster met from left to right
gets the next unused label, e.g. labels ``[2, 2, 0, 1]`` -> ``(0, 0, 1, 2)``.
Posterior distributions are dicts ``{label tuple: probability}``.

All 1-D theta integrals go through ``_reference.theta_log_normalizer`` (quad
on ``[0, inf)`` split at the mode, with the integrand shifted by its log-max)
and are cached by ``(a, b, m)``.
"""

import functools
import itertools
import math

import numpy as np
from scipy import integrate, optimize

try:  # imported as part of the ``tests`` package
    from . import _reference as ref
except ImportError:  # imported with ``tests/`` on sys.path
    import _reference as ref

__all__ = [
    "set_partitions",
    "canonical_labels",
    "crp_log_prior",
    "log_cluster_marginal",
    "exact_partition_posterior",
    "log_evidence",
    "coclustering_matrix",
    "n_clusters_distribution",
    "log_predictive",
    "empirical_partition_distribution",
    "log_alpha_integral",
    "alpha_integrated_posterior",
    "exact_partition_posterior_with_alpha",
    "sequential_prediction_law",
]


# ---------------------------------------------------------------------------
# Set partitions and labels
# ---------------------------------------------------------------------------


def set_partitions(N):
    """All set partitions of ``{0..N-1}`` as canonical label tuples.

    Each partition is a restricted growth string ``c`` of length ``N``:
    ``c[0] = 0`` and ``c[i] <= max(c[:i]) + 1``. There are Bell(N) of them
    (1, 1, 2, 5, 15, 52, 203 for N = 0..6); ``set_partitions(0) == [()]``.
    """
    N = int(N)
    if N < 0:
        raise ValueError(f"N must be >= 0, got {N}")
    if N == 0:
        return [()]
    out = []

    def grow(prefix, top):
        if len(prefix) == N:
            out.append(tuple(prefix))
            return
        for lab in range(top + 2):
            prefix.append(lab)
            grow(prefix, max(top, lab))
            prefix.pop()

    grow([0], 0)
    return out


def canonical_labels(labels):
    """Relabel a label vector to restricted growth form (first occurrence order).

    ``canonical_labels([2, 2, 0, 1]) == (0, 0, 1, 2)``. Two label vectors give
    the same tuple iff they describe the same clustering, so a sampler's draws
    can be compared with `exact_partition_posterior`.
    """
    mapping = {}
    out = []
    for lab in np.asarray(labels).ravel().tolist():
        if lab not in mapping:
            mapping[lab] = len(mapping)
        out.append(mapping[lab])
    return tuple(out)


def _blocks(partition):
    """Return the blocks of a label tuple as a list of index tuples."""
    K = max(partition) + 1 if partition else 0
    return [tuple(i for i, c in enumerate(partition) if c == k) for k in range(K)]


def crp_log_prior(partition, alpha):
    """Log Chinese-restaurant-process prior of a clustering.

    ``log P(c) = K log alpha + sum_k log (|C_k| - 1)! - sum_{i<N} log(alpha + i)``
    for the label vector ``partition`` (any labelling; it is canonicalised).
    """
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    part = canonical_labels(partition)
    N = len(part)
    blocks = _blocks(part)
    out = len(blocks) * math.log(alpha)
    out += sum(math.lgamma(len(b)) for b in blocks)
    out -= sum(math.log(alpha + i) for i in range(N))
    return out


# ---------------------------------------------------------------------------
# Cluster marginal likelihood
# ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _log_I(a, b, m):
    """Cached ``log int_0^inf exp(-a theta - b log psi_m(theta)) dtheta``."""
    return ref.theta_log_normalizer(a, b, m)


@functools.lru_cache(maxsize=None)
def _codes(x, sigma):
    """Cached codes ``(s_1, ..., s_t)`` of ranking tuple ``x`` w.r.t. ``sigma``."""
    return tuple(ref.codes(x, sigma))


@functools.lru_cache(maxsize=None)
def _perms(n):
    return tuple(ref.all_permutations(n))


def _rows(X, n):
    """Data set as a list of tuples (padding removed); empty input allowed."""
    if X is None:
        return []
    if isinstance(X, np.ndarray) and X.size == 0:
        return []
    if not isinstance(X, np.ndarray) and len(X) == 0:
        return []
    return [tuple(x) for x in ref.as_rankings(X, n)]


def _r_vector(r, T):
    """Return ``r_1..r_T`` as a tuple of floats (scalar broadcast)."""
    arr = np.atleast_1d(np.asarray(r, dtype=float))
    if arr.ndim != 1:
        raise ValueError("r must be a scalar or a 1-D vector")
    if arr.size == 1:
        arr = np.full(T, arr[0])
    if arr.size < T:
        raise ValueError(f"r has length {arr.size} but {T} stages are needed")
    return tuple(float(v) for v in arr[:T])


def _check_model(n, nu):
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if not nu > 0:
        raise ValueError(f"nu must be > 0, got {nu}")
    return n, float(nu)


def _log_marginal_rows(rows, n, nu, rvec):
    """``log m(C)`` for a list of ranking tuples (see module docstring)."""
    if not rows:
        return 0.0
    T = max(len(x) for x in rows)
    N_j = [sum(1 for x in rows if len(x) >= j) for j in range(1, T + 1)]
    # Stages that contribute: N_j > 0 and m = n - j > 0.
    stages = [j for j in range(1, T + 1) if N_j[j - 1] > 0 and n - j > 0]
    log_z0 = {j: _log_I(nu * rvec[j - 1], nu, n - j) for j in stages}
    terms = []
    for sigma in _perms(n):
        S = [0] * (T + 1)
        for x in rows:
            for j, s in enumerate(_codes(x, sigma), start=1):
                S[j] += s
        terms.append(
            sum(
                _log_I(nu * rvec[j - 1] + S[j], nu + N_j[j - 1], n - j) - log_z0[j]
                for j in stages
            )
        )
    terms = np.asarray(terms)
    top = terms.max()
    return float(top + math.log(np.exp(terms - top).sum()) - math.lgamma(n + 1))


def log_cluster_marginal(X_subset, n, nu, r, T=None):
    """Log marginal likelihood ``log m(C)`` of a set of rankings in one cluster.

    ``m(C) = (1/n!) sum_sigma prod_j [I(nu r_j + S_j(sigma), nu + N_j, n-j)
    / I(nu r_j, nu, n-j)]`` (module docstring), by enumeration of the ``n!``
    permutations and quadrature of each 1-D theta integral.

    ``X_subset``: rankings (array padded with -1 or list of sequences); an
    empty set gives 0.0. ``T``: number of prior stages (default: the longest
    ranking of ``X_subset``); it must be at least the longest ranking and only
    fixes how many entries of ``r`` are required -- the value does not depend
    on it. ``r``: scalar or vector (``r[j-1] = r_j``) of length >= T.
    """
    n, nu = _check_model(n, nu)
    rows = _rows(X_subset, n)
    t_max = max((len(x) for x in rows), default=0)
    T = t_max if T is None else int(T)
    if T < t_max:
        raise ValueError(f"T={T} is less than the longest ranking ({t_max})")
    if T > n:
        raise ValueError(f"T={T} exceeds n={n}")
    return _log_marginal_rows(rows, n, nu, _r_vector(r, max(T, 1)))


# ---------------------------------------------------------------------------
# Exact posterior over clusterings
# ---------------------------------------------------------------------------


def _partition_log_weights(rows, n, alpha, nu, rvec):
    """Return ``(partitions, log P(c) + sum_k log m(C_k))`` for all partitions."""
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    N = len(rows)
    cache = {}

    def lm(block):
        if block not in cache:
            cache[block] = _log_marginal_rows([rows[i] for i in block], n, nu, rvec)
        return cache[block]

    parts = set_partitions(N)
    logw = []
    for c in parts:
        logw.append(crp_log_prior(c, alpha) + sum(lm(b) for b in _blocks(c)))
    return parts, np.asarray(logw, dtype=float), lm


def _logsumexp(v):
    v = np.asarray(v, dtype=float)
    top = v.max()
    return float(top + math.log(np.exp(v - top).sum()))


def _setup(X, n, nu, r, extra_len=0, T=None):
    n, nu = _check_model(n, nu)
    rows = _rows(X, n)
    t_max = max([len(x) for x in rows] + [extra_len, 1])
    T = t_max if T is None else int(T)
    if T < t_max:
        raise ValueError(f"T={T} is less than the longest ranking ({t_max})")
    return n, nu, rows, _r_vector(r, T)


def exact_partition_posterior(X, n, alpha, nu, r):
    """Exact posterior ``P(c | X)`` over all set partitions of the ``N`` rankings.

    ``P(c | X) ∝ P_CRP(c; alpha) prod_k m(C_k)``; returns
    ``{canonical label tuple: probability}`` over the Bell(N) partitions
    (practical for ``N <= 6``). ``T`` is the longest ranking of ``X``; ``r`` is a
    scalar or a vector of length >= T. The ``2^N - 1`` cluster marginals are
    computed once each.
    """
    n, nu, rows, rvec = _setup(X, n, nu, r)
    parts, logw, _ = _partition_log_weights(rows, n, alpha, nu, rvec)
    lse = _logsumexp(logw)
    return {c: math.exp(w - lse) for c, w in zip(parts, logw)}


def log_evidence(X, n, alpha, nu, r):
    """Log marginal probability of the data ``log P(X) = log sum_c P(c) prod_k m(C_k)``.

    With an empty ``X`` this is 0. ``log_evidence(X + [x]) - log_evidence(X)``
    equals `log_predictive` ``(x, X)`` (exchangeability).
    """
    n, nu, rows, rvec = _setup(X, n, nu, r)
    _, logw, _ = _partition_log_weights(rows, n, alpha, nu, rvec)
    return _logsumexp(logw)


# ---------------------------------------------------------------------------
# alpha ~ Gamma(shape a, rate b) integrated out (Escobar & West 1995)
# ---------------------------------------------------------------------------
#
# P(c | alpha) depends on alpha only through alpha^K / AF(alpha, N), AF the
# ascending factorial alpha (alpha + 1) ... (alpha + N - 1), so integrating alpha
# out of P(c | alpha) Gamma(alpha; a, b) gives W(K) prod_k (|C_k| - 1)!, with
# W(K) = int Gamma(alpha; a, b) alpha^K / AF(alpha, N) d alpha (1-D quad).


def _log_alpha_integrand(t, K, N, a, b, power):
    """log of ``alpha^power Gamma(alpha; a, b) alpha^K / AF(alpha, N) * alpha``.

    At ``alpha = e^t``.

    The trailing ``alpha`` is the Jacobian of ``alpha = e^t``. Uses
    ``alpha^K / AF(alpha, N) = alpha^(K-1) Gamma(alpha+1) / Gamma(alpha+N)`` so
    that it stays finite as ``alpha -> 0``.
    """
    alpha = math.exp(t) if t < 700 else math.inf
    if alpha == math.inf:
        return -math.inf
    return (
        a * math.log(b)
        - math.lgamma(a)
        + (a + K + power - 1) * t
        - b * alpha
        - math.lgamma(alpha + N)
        + math.lgamma(alpha + 1)
    )


@functools.lru_cache(maxsize=None)
def log_alpha_integral(K, N, a, b, power=0):
    """``log int_0^inf alpha^power Gamma(alpha; a, b) alpha^K / AF(alpha, N) d alpha``.

    ``Gamma(.; a, b)`` is shape ``a``, RATE ``b``. Computed with ``quad`` in
    ``t = log alpha`` on both sides of the mode of the integrand.
    """
    K, N, power = int(K), int(N), int(power)
    a, b = float(a), float(b)
    if not (a > 0 and b > 0):
        raise ValueError("a and b must be > 0")
    if not 1 <= K <= N:
        raise ValueError(f"need 1 <= K <= N, got K={K}, N={N}")

    def h(t):
        return _log_alpha_integrand(t, K, N, a, b, power)

    # h is concave in t; its derivative c - b alpha - sum_{i<N} alpha/(alpha+i)
    # decreases from c = a + K + power - 1 > 0 to -inf: the mode is its root.
    c = a + K + power - 1

    def dh(t):
        alpha = math.exp(t)
        return c - b * alpha - sum(alpha / (alpha + i) for i in range(1, N))

    t_lo, t_hi = -60.0, math.log(c / b) + 1.0
    tm = optimize.brentq(dh, t_lo, t_hi, xtol=1e-12) if dh(t_lo) > 0 else t_lo
    hm = h(tm)

    def f(t):
        return math.exp(h(t) - hm)

    opts = dict(epsabs=0.0, epsrel=1e-12, limit=500)
    left = integrate.quad(f, -np.inf, tm, **opts)[0]
    right = integrate.quad(f, tm, np.inf, **opts)[0]
    return hm + math.log(left + right)


def alpha_integrated_posterior(N, block_log_marginal, a, b):
    """Posterior over clusterings of N points with ``alpha ~ Gamma(a, rate b)`` out.

    ``block_log_marginal(block)`` is log m(block) for a tuple of point indices,
    whatever the model. Returns ``(posterior, alpha_mean)``: ``posterior`` is
    ``{label tuple: P(c | X)}`` with ``P(c | X) ∝ W(K) prod_k (|C_k| - 1)!
    m(C_k)`` and ``alpha_mean = E[alpha | X] = sum_c P(c | X) E[alpha | K(c)]``,
    ``E[alpha | K] = W_1(K) / W_0(K)`` (``W_p`` = `log_alpha_integral` with
    ``power=p``, exponentiated).
    """
    parts = set_partitions(N)
    logw, Ks = [], []
    for c in parts:
        bl = _blocks(c)
        Ks.append(len(bl))
        logw.append(
            log_alpha_integral(len(bl), N, a, b)
            + sum(math.lgamma(len(B)) for B in bl)
            + sum(block_log_marginal(B) for B in bl)
        )
    lse = _logsumexp(logw)
    post = {c: math.exp(w - lse) for c, w in zip(parts, logw)}
    mean = sum(
        p
        * math.exp(
            log_alpha_integral(K, N, a, b, 1) - log_alpha_integral(K, N, a, b, 0)
        )
        for p, K in zip(post.values(), Ks)
    )
    return post, float(mean)


def exact_partition_posterior_with_alpha(X, n, a, b, nu, r):
    """`exact_partition_posterior` with ``alpha ~ Gamma(shape a, rate b)`` out.

    Returns ``(posterior, alpha_mean)`` as `alpha_integrated_posterior`.
    """
    n, nu, rows, rvec = _setup(X, n, nu, r)
    return alpha_integrated_posterior(
        len(rows),
        lambda block: _log_marginal_rows([rows[i] for i in block], n, nu, rvec),
        a,
        b,
    )


def sequential_prediction_law(X, alpha, log_predictive):
    """Exact law of the clustering that sequential prediction starts from.

    The points arrive in a uniformly random order, each drawn into a cluster with
    probability n_k p(x | C_k) or alpha p(x) normalised over the choices; the law
    is the average over the N! orders of the product of those probabilities.
    ``log_predictive(x, rows)`` is log p(x | rows), the prior predictive for no
    rows. Returns ``{canonical label tuple: probability}``.
    """
    N = len(X)
    law = {}

    def seat(order, r, labels, probability):
        if r == N:
            key = canonical_labels(labels)
            law[key] = law.get(key, 0.0) + probability / math.factorial(N)
            return
        i = order[r]
        clusters = sorted({labels[j] for j in order[:r]})
        weights = [
            np.exp(
                np.log(sum(labels[j] == k for j in order[:r]))
                + log_predictive(X[i], X[[j for j in order[:r] if labels[j] == k]])
            )
            for k in clusters
        ]
        weights.append(alpha * np.exp(log_predictive(X[i], X[:0])))
        weights = np.array(weights) / sum(weights)
        for k, weight in zip([*clusters, len(clusters)], weights):
            labels[i] = k
            seat(order, r + 1, labels, probability * weight)
        labels[i] = -1

    for order in itertools.permutations(range(N)):
        seat(order, 0, [-1] * N, 1.0)
    return law


def coclustering_matrix(posterior):
    """``N x N`` matrix ``P(c_i = c_k | X)`` from ``{label tuple: probability}``."""
    N = len(next(iter(posterior)))
    M = np.zeros((N, N))
    for c, p in posterior.items():
        lab = np.asarray(c)
        M += p * (lab[:, None] == lab[None, :])
    return M


def n_clusters_distribution(posterior):
    """Array ``p`` of length ``N + 1`` with ``p[K] = P(number of clusters = K | X)``."""
    N = len(next(iter(posterior)))
    p = np.zeros(N + 1)
    for c, prob in posterior.items():
        p[len(set(c))] += prob
    return p


def empirical_partition_distribution(label_samples):
    """``{canonical label tuple: frequency}`` of sampled clusterings (rows of
    labels)."""
    counts = {}
    for row in np.asarray(label_samples):
        key = canonical_labels(row)
        counts[key] = counts.get(key, 0) + 1
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()}


# ---------------------------------------------------------------------------
# Posterior predictive
# ---------------------------------------------------------------------------


def log_predictive(x_new, X, n, alpha, nu, r, T_new=None):
    """Exact log posterior-predictive probability of a new top-t ranking.

    ``P(x | X) = sum_c P(c | X) [ sum_k |C_k|/(N+alpha) m(C_k + x)/m(C_k)
    + alpha/(N+alpha) m({x}) ]``. ``x_new`` is one ranking (padding allowed);
    ``X`` may be empty (then this is Lemma 1, ``(n-t)!/n!``). ``T_new``: number
    of prior stages, default ``max(longest ranking of X, t(x_new))``; ``r`` must
    have at least that many entries (or be a scalar). For every ``t``, the
    predictive sums to one over the ``n!/(n-t)!`` top-t rankings.
    """
    n, nu = _check_model(n, nu)
    x = tuple(ref.as_rankings([list(np.asarray(x_new).ravel())], n)[0])
    if not x:
        raise ValueError("x_new must hold at least one item")
    n, nu, rows, rvec = _setup(X, n, nu, r, extra_len=len(x), T=T_new)
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    N = len(rows)
    log_new = _log_marginal_rows([x], n, nu, rvec)
    if N == 0:
        return log_new
    parts, logw, lm = _partition_log_weights(rows, n, alpha, nu, rvec)
    post = logw - _logsumexp(logw)
    with_x = {}

    def lm_plus(block):
        if block not in with_x:
            with_x[block] = _log_marginal_rows(
                [rows[i] for i in block] + [x], n, nu, rvec
            )
        return with_x[block]

    per_part = []
    for c, lp in zip(parts, post):
        terms = [math.log(len(b)) + lm_plus(b) - lm(b) for b in _blocks(c)]
        terms.append(math.log(alpha) + log_new)
        per_part.append(lp + _logsumexp(terms) - math.log(N + alpha))
    return _logsumexp(per_part)


def draw_statistics(label_samples):
    """Co-clustering matrix and distribution of the number of clusters of draws.

    ``label_samples`` is an int array (n_draws, N) whose rows number clusters
    0..K-1 (as the samplers' ``label_samples_``). Returns the (N, N) matrix of
    P(c_i = c_k) and p[K] for K = 0..N, the draws' frequencies, to compare with
    `coclustering_matrix` and `n_clusters_distribution` of an exact posterior.
    """
    label_samples = np.asarray(label_samples)
    same = label_samples[:, :, None] == label_samples[:, None, :]
    n_clusters = label_samples.max(axis=1) + 1
    k_dist = np.bincount(n_clusters, minlength=label_samples.shape[1] + 1)
    return same.mean(axis=0), k_dist / len(label_samples)
