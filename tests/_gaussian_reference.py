"""Plain reference for Dirichlet-process mixtures of Gaussians (conjugate NIW).

The test suite uses this module to check rankmix's Gaussian DP-mixture samplers
against the EXACT posterior over clusterings on tiny data sets (``N <= 7``
points), where every set partition can be enumerated. It is deliberately slow
and simple (plain NumPy / SciPy, clarity over speed) and never imports rankmix.
Its own sanity checks live in ``tests/test_gaussian_reference.py``.

Model (the package's conventions)
---------------------------------
Data ``X`` is a float array ``(N, d)``. DP mixture with concentration
``alpha``; given the clustering, the clusters are independent and each has a
conjugate prior on its parameters:

- ``covariance_type="full"``::

      Sigma      ~ InvWishart(df=nu0, scale=Psi0)   (scipy.stats.invwishart)
      mu | Sigma ~ N(m0, Sigma / kappa0)
      x  | mu, Sigma ~ N(mu, Sigma)

  ``Psi0`` (the "covariance_prior") is a ``(d, d)`` SPD matrix, ``nu0 > d - 1``.

- ``covariance_type="diag"``: the dimensions are independent and each one is
  EXACTLY the ``d = 1`` case of the full model::

      sigma_k^2 ~ InvWishart_1(df=nu0, scale=psi0[k])
                = InvGamma(shape=nu0/2, scale=psi0[k]/2)
      mu_k | sigma_k^2 ~ N(m0[k], sigma_k^2 / kappa0)

  ``psi0`` (the "covariance_prior") is a length-``d`` positive vector, ``nu0 > 0``.

Scalars are broadcast: ``m0`` scalar -> ``m0 * ones(d)``; ``psi0`` scalar ->
``psi0 * I`` ("full") or ``psi0 * ones(d)`` ("diag").

Cluster marginal likelihood (Murphy 2007, "Conjugate Bayesian analysis of the
Gaussian distribution", NIW marginal likelihood) of ``n`` points ``X_C``
(always a 2-D array ``(n, d)``, also when ``d = 1``)::

    kappa_n = kappa0 + n,   nu_n = nu0 + n,
    m_n     = (kappa0 m0 + n xbar) / kappa_n,
    Psi_n   = Psi0 + S + kappa0 n / kappa_n (xbar - m0)(xbar - m0)^T,
    S       = sum_i (x_i - xbar)(x_i - xbar)^T,
    log p(X_C) = - n d / 2 log(pi) + log Gamma_d(nu_n / 2) - log Gamma_d(nu0 / 2)
                 + nu0 / 2 log|Psi0| - nu_n / 2 log|Psi_n|
                 + d / 2 (log kappa0 - log kappa_n),

and ``log p(empty) = 0``. The posterior predictive of a new point given
``X_C`` (``n = 0``: the prior predictive, i.e. the density of a new cluster) is
the multivariate Student t::

    df = nu_n - d + 1,  loc = m_n,  shape = Psi_n (kappa_n + 1) / (kappa_n df),

written out in `student_t_logpdf` (same parametrisation as
``scipy.stats.multivariate_t``; the tests compare the two and check
``p(x | X_C) = p(X_C + x) / p(X_C)``).

DP prior over clusterings (Chinese restaurant process, Antoniak 1974)::

    P(c | alpha) = alpha^K prod_k (|C_k| - 1)!
                   / (alpha (alpha + 1) ... (alpha + N - 1)).

Exact posterior: ``P(c | X) ∝ P(c | alpha) prod_k p(X_{C_k})`` over the Bell(N)
set partitions. Clusterings are canonical label tuples (restricted growth
strings, see ``_dp_reference.canonical_labels``); distributions over
clusterings are dicts ``{label tuple: probability}``, so the helpers of
``_dp_reference`` (`coclustering_matrix`, `n_clusters_distribution`,
`empirical_partition_distribution`) apply to them directly (they are
re-exported here).

Concentration with a prior (Escobar & West 1995): ``alpha ~ Gamma(shape=a,
rate=b)``. Since ``P(c | alpha)`` depends on ``alpha`` only through
``alpha^K / AF(alpha, N)``, integrating ``alpha`` out gives::

    P(c | X) ∝ W(K(c)) prod_k (|C_k| - 1)! p(X_{C_k}),
    W(K)     = int_0^inf Gamma(alpha; a, b) alpha^K / AF(alpha, N) d alpha,
    p(alpha | X) = sum_K P(K | X) Gamma(alpha; a, b) alpha^K / AF(alpha, N) / W(K).

The 1-D integrals are done by ``scipy.integrate.quad`` in ``t = log(alpha)``.

Permutation-augmented sampler (Liang, Jordan & Taskar, ICML 2007)
-----------------------------------------------------------------
See `dp_sum_over_consistent_clusterings`. Section 3 of the paper: a clustering
``C`` is CONSISTENT with a permutation (ordering) ``pi = (pi_1, ..., pi_N)`` of
the points when it "partition[s] this ordering into contiguous segments", i.e.
every cluster is a set ``{pi_{s+1}, ..., pi_{s+m}}`` of consecutive positions;
``Pi(C)`` is the set of permutations consistent with ``C``. The augmented
model (their Eq. 3) takes ``p(pi | C)`` uniform on ``Pi(C)``, with
``|Pi(C)| = |C|! prod_c |c|!``, which gives their joint (Eq. 4)::

    p(C, pi, x) = A(|C|) prod_{c in C} B(c)   if pi in Pi(C), else 0,
    A(K) = alpha^K / (AF(alpha, N) K!),   B(c) = p(x_c) / |c|,

(Eq. 1 CRP prior times Eq. 2 likelihood times Eq. 3). The clustering step
samples ``C ~ p(C | pi, x) ∝ p(C, pi, x)`` -- "a clustering is sampled with
probability proportional to p(C, pi, x), which includes p(pi | C)" (Section
3.1) -- over the ``2^(N-1)`` clusterings consistent with ``pi`` (each of the
``N - 1`` gaps between consecutive positions is a cut or not;
``binom(N-1, K-1)`` of them have ``K`` clusters; the paper only says
"exponentially many", these counts follow from its definition).
The normaliser ``p(pi, x) = sum_K A(K) g(N, K)`` is what the paper's dynamic
program computes with ``g(r, K) = sum_m g(r-m, K-1) B({pi_{r-m+1}..pi_r})``
(Section 3.1, unnumbered display). This module computes the same quantities by
BRUTE-FORCE enumeration. With ``beta`` given, the Metropolis-Hastings proposal
of Section 3.2 is used instead: Eq. 5, ``q_beta(C, pi, x) = A' prod_c B'(c)``
with ``A' = 1 / AF(alpha, N)`` and ``B'(c) = p(x_c) alpha / (|c| beta)``
(``beta`` is taken as given; the paper adapts it as ``exp Psi(|C_old|)``).
Only the uniform ``p(pi | C)`` of Eq. 3 is covered, not the data-dependent
permutation proposals of Section 4.
"""

import functools
import itertools
import math

import numpy as np
from scipy import special

try:  # imported as part of the ``tests`` package
    from . import _dp_reference as dpr
except ImportError:  # imported with ``tests/`` on sys.path
    import _dp_reference as dpr

set_partitions = dpr.set_partitions
canonical_labels = dpr.canonical_labels
crp_log_prior = dpr.crp_log_prior
coclustering_matrix = dpr.coclustering_matrix
n_clusters_distribution = dpr.n_clusters_distribution
empirical_partition_distribution = dpr.empirical_partition_distribution
log_alpha_integral = dpr.log_alpha_integral

__all__ = [
    # re-exported from _dp_reference
    "set_partitions",
    "canonical_labels",
    "crp_log_prior",
    "coclustering_matrix",
    "n_clusters_distribution",
    "empirical_partition_distribution",
    # cluster marginals and predictives
    "niw_posterior",
    "log_marginal_full",
    "log_marginal_diag",
    "log_marginal",
    "student_t_logpdf",
    "log_prior_predictive",
    "log_posterior_predictive",
    "make_log_marginal_fn",
    # exact posterior with fixed alpha
    "partition_log_weights",
    "exact_partition_posterior",
    "log_evidence",
    "predictive_components",
    "log_predictive_density",
    # alpha ~ Gamma(a, b)
    "log_alpha_integral",
    "exact_joint_posterior_with_alpha",
    "alpha_posterior_pdf",
    # Liang, Jordan & Taskar (2007)
    "blocks",
    "is_consistent",
    "consistent_clusterings",
    "permutations_consistent_with",
    "log_augmented_joint",
    "brute_force_g_table",
    "dp_sum_over_consistent_clusterings",
    "permutation_augmented_kernel",
]


# ---------------------------------------------------------------------------
# Argument handling
# ---------------------------------------------------------------------------


def _as_data(X_C, d=None):
    """Return ``X_C`` as a float array ``(n, d)`` (``n = 0`` allowed; 1-D input is
    rejected, to avoid mistaking ``N`` scalar observations for one point)."""
    arr = np.asarray(X_C, dtype=float)
    if arr.size == 0:
        if d is None:
            d = arr.shape[-1] if arr.ndim == 2 else 0
        return np.zeros((0, d))
    if arr.ndim != 2:
        raise ValueError(f"data must be 2-D (n, d), got shape {arr.shape}")
    if d is not None and arr.shape[1] != d:
        raise ValueError(f"data has {arr.shape[1]} columns, expected {d}")
    return arr


def _as_points(x, d):
    """Return ``(points (M, d), single)``; ``x`` is ``(d,)``, ``(M, d)`` or a
    scalar if d == 1."""
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        if d != 1:
            raise ValueError("a scalar point needs d == 1")
        return arr.reshape(1, 1), True
    if arr.ndim == 1:
        if arr.shape[0] != d:
            raise ValueError(f"a single point must have length d={d}")
        return arr.reshape(1, d), True
    if arr.ndim == 2 and arr.shape[1] == d:
        return arr, False
    raise ValueError(f"points must have shape (d,) or (M, d) with d={d}")


def _check_full(m0, kappa0, nu0, Psi0, d):
    m0 = np.broadcast_to(np.asarray(m0, dtype=float), (d,)).copy()
    Psi0 = np.asarray(Psi0, dtype=float)
    if Psi0.ndim == 0:
        Psi0 = float(Psi0) * np.eye(d)
    if Psi0.shape != (d, d):
        raise ValueError(f"Psi0 must be ({d}, {d}), got {Psi0.shape}")
    if not kappa0 > 0:
        raise ValueError(f"kappa0 must be > 0, got {kappa0}")
    if not nu0 > d - 1:
        raise ValueError(f"nu0 must be > d - 1 = {d - 1}, got {nu0}")
    if np.abs(Psi0 - Psi0.T).max() > 1e-10 * np.abs(Psi0).max():
        raise ValueError("Psi0 must be symmetric")
    try:
        np.linalg.cholesky(Psi0)
    except np.linalg.LinAlgError:
        raise ValueError("Psi0 must be positive definite") from None
    return m0, float(kappa0), float(nu0), Psi0


def _check_diag(m0, kappa0, nu0, psi0, d):
    m0 = np.broadcast_to(np.asarray(m0, dtype=float), (d,)).copy()
    psi0 = np.broadcast_to(np.asarray(psi0, dtype=float), (d,)).copy()
    if not kappa0 > 0:
        raise ValueError(f"kappa0 must be > 0, got {kappa0}")
    if not nu0 > 0:
        raise ValueError(f"nu0 must be > 0, got {nu0}")
    if np.any(psi0 <= 0):
        raise ValueError("psi0 must be positive")
    return m0, float(kappa0), float(nu0), psi0


def _logsumexp(v):
    v = np.asarray(v, dtype=float)
    top = v.max()
    if not np.isfinite(top):
        return float(top)
    return float(top + math.log(np.exp(v - top).sum()))


def _log_ascending_factorial(alpha, N):
    """``log AF(alpha, N) = log alpha (alpha + 1) ... (alpha + N - 1)``."""
    return sum(math.log(alpha + i) for i in range(N))


# ---------------------------------------------------------------------------
# One cluster: NIW posterior, marginal likelihood, predictive
# ---------------------------------------------------------------------------


def niw_posterior(X_C, m0, kappa0, nu0, Psi0):
    """NIW posterior parameters ``(m_n, kappa_n, nu_n, Psi_n)`` after the points
    ``X_C``.

    ``X_C`` is ``(n, d)`` (``n = 0`` gives the prior back). Batch formulas of the
    module docstring.
    """
    X_C = np.asarray(X_C, dtype=float)
    if X_C.size:
        X_C = _as_data(X_C)
        d = X_C.shape[1]
    elif np.ndim(Psi0) == 2:
        d = np.shape(Psi0)[0]
    else:
        d = np.atleast_1d(np.asarray(m0, dtype=float)).shape[0]
    X_C = _as_data(X_C, d)
    m0, kappa0, nu0, Psi0 = _check_full(m0, kappa0, nu0, Psi0, d)
    n = X_C.shape[0]
    if n == 0:
        return m0, kappa0, nu0, Psi0.copy()
    xbar = X_C.mean(axis=0)
    R = X_C - xbar
    S = R.T @ R
    kappa_n = kappa0 + n
    nu_n = nu0 + n
    m_n = (kappa0 * m0 + n * xbar) / kappa_n
    dm = (xbar - m0)[:, None]
    Psi_n = Psi0 + S + (kappa0 * n / kappa_n) * (dm @ dm.T)
    return m_n, kappa_n, nu_n, Psi_n


def log_marginal_full(X_C, m0, kappa0, nu0, Psi0):
    """``log p(X_C)`` of the points of one cluster, full-covariance NIW prior.

    Closed form of Murphy (2007) (module docstring); ``0.0`` for an empty
    cluster.

    >>> round(log_marginal_full(np.zeros((0, 2)), 0.0, 1.0, 3.0, np.eye(2)), 12)
    0.0
    """
    X_C = np.asarray(X_C, dtype=float)
    if X_C.size == 0:
        return 0.0
    X_C = _as_data(X_C)
    n, d = X_C.shape
    m0, kappa0, nu0, Psi0 = _check_full(m0, kappa0, nu0, Psi0, d)
    _, kappa_n, nu_n, Psi_n = niw_posterior(X_C, m0, kappa0, nu0, Psi0)
    sign0, logdet0 = np.linalg.slogdet(Psi0)
    signn, logdetn = np.linalg.slogdet(Psi_n)
    assert sign0 > 0 and signn > 0
    return float(
        -0.5 * n * d * math.log(math.pi)
        + special.multigammaln(0.5 * nu_n, d)
        - special.multigammaln(0.5 * nu0, d)
        + 0.5 * nu0 * logdet0
        - 0.5 * nu_n * logdetn
        + 0.5 * d * (math.log(kappa0) - math.log(kappa_n))
    )


def log_marginal_diag(X_C, m0, kappa0, nu0, psi0):
    """``log p(X_C)``, diagonal model: sum over dimensions of the ``d = 1`` full case.

    ``psi0`` is a length-``d`` vector (or a scalar, broadcast); ``X_C`` is
    ``(n, d)``; ``0.0`` for an empty cluster.
    """
    X_C = np.asarray(X_C, dtype=float)
    if X_C.size == 0:
        return 0.0
    X_C = _as_data(X_C)
    d = X_C.shape[1]
    m0, kappa0, nu0, psi0 = _check_diag(m0, kappa0, nu0, psi0, d)
    return float(
        sum(
            log_marginal_full(X_C[:, [k]], m0[k], kappa0, nu0, [[psi0[k]]])
            for k in range(d)
        )
    )


def log_marginal(X_C, covariance_type, m0, kappa0, nu0, psi0):
    """Dispatch to `log_marginal_full` / `log_marginal_diag`."""
    if covariance_type == "full":
        return log_marginal_full(X_C, m0, kappa0, nu0, psi0)
    if covariance_type == "diag":
        return log_marginal_diag(X_C, m0, kappa0, nu0, psi0)
    raise ValueError(
        f"covariance_type must be 'full' or 'diag', got {covariance_type!r}"
    )


def _point_dim(x):
    """Dimension of ``x``: a point ``(d,)``, points ``(M, d)`` or a scalar (d = 1)."""
    nd = np.ndim(x)
    if nd == 0:
        return 1
    if nd in (1, 2):
        return np.shape(x)[-1]
    raise ValueError(f"points must have shape (d,) or (M, d), got {np.shape(x)}")


def student_t_logpdf(pts, loc, shape, df):
    """Multivariate Student-t log density at the rows of ``pts`` (``(M, d)`` ->
    ``(M,)``).

    ``log Gamma((df+d)/2) - log Gamma(df/2) - d/2 log(df pi) - 1/2 log|shape|
    - (df+d)/2 log(1 + (x-loc)^T shape^{-1} (x-loc) / df)``; the same
    parametrisation as ``scipy.stats.multivariate_t(loc, shape, df)`` (the
    tests compare the two).
    """
    pts = np.asarray(pts, dtype=float)
    loc = np.asarray(loc, dtype=float)
    shape = np.asarray(shape, dtype=float)
    d = loc.shape[0]
    L = np.linalg.cholesky(shape)
    z = np.linalg.solve(L, (pts - loc).T)  # (d, M)
    maha = (z**2).sum(axis=0)
    logdet = 2.0 * np.log(np.diag(L)).sum()
    return (
        special.gammaln(0.5 * (df + d))
        - special.gammaln(0.5 * df)
        - 0.5 * d * math.log(df * math.pi)
        - 0.5 * logdet
        - 0.5 * (df + d) * np.log1p(maha / df)
    )


def log_posterior_predictive(x, X_C, covariance_type, m0, kappa0, nu0, psi0):
    """``log p(x | X_C)`` for one cluster (Student t, module docstring).

    ``x`` is one point ``(d,)`` (returns a float) or ``(M, d)`` points (returns
    an array ``(M,)``); a scalar is a point with ``d = 1``. ``X_C`` is
    ``(n, d)`` and may be empty: then this is the prior predictive. "diag" is
    the sum over dimensions of the ``d = 1`` case of "full".
    """
    d = _point_dim(x)
    pts, single = _as_points(x, d)
    X_C = _as_data(X_C, d)
    if covariance_type == "full":
        m0v, kappa0, nu0, Psi0 = _check_full(m0, kappa0, nu0, psi0, d)
        m_n, kappa_n, nu_n, Psi_n = niw_posterior(X_C, m0v, kappa0, nu0, Psi0)
        df = nu_n - d + 1
        shape = Psi_n * (kappa_n + 1) / (kappa_n * df)
        out = student_t_logpdf(pts, m_n, shape, df)
    elif covariance_type == "diag":
        m0v, kappa0, nu0, psi0v = _check_diag(m0, kappa0, nu0, psi0, d)
        out = np.zeros(pts.shape[0])
        for k in range(d):
            m_n, kappa_n, nu_n, Psi_n = niw_posterior(
                X_C[:, [k]], m0v[k], kappa0, nu0, [[psi0v[k]]]
            )
            df = nu_n  # nu_n - d + 1 with d = 1
            shape = Psi_n * (kappa_n + 1) / (kappa_n * df)
            out = out + student_t_logpdf(pts[:, [k]], m_n, shape, df)
    else:
        raise ValueError(
            f"covariance_type must be 'full' or 'diag', got {covariance_type!r}"
        )
    return float(out[0]) if single else out


def log_prior_predictive(x, covariance_type, m0, kappa0, nu0, psi0):
    """``log p(x)`` under the base measure: the density of a point opening a new
    cluster.

    Same as `log_posterior_predictive` with an empty cluster.
    """
    return log_posterior_predictive(
        x, np.zeros((0, _point_dim(x))), covariance_type, m0, kappa0, nu0, psi0
    )


def make_log_marginal_fn(X, covariance_type, m0, kappa0, nu0, psi0):
    """Cached ``f(indices) = log p(X[indices])`` (order of ``indices`` is irrelevant).

    This is the ``log_marginal_fn`` expected by the Liang-Jordan-Taskar
    functions below and used by the exact posterior.
    """
    X = _as_data(X)
    if covariance_type not in ("full", "diag"):
        raise ValueError(
            f"covariance_type must be 'full' or 'diag', got {covariance_type!r}"
        )

    @functools.lru_cache(maxsize=None)
    def _cached(key):
        return log_marginal(X[list(key)], covariance_type, m0, kappa0, nu0, psi0)

    def log_marginal_fn(indices):
        return _cached(tuple(sorted(int(i) for i in indices)))

    return log_marginal_fn


# ---------------------------------------------------------------------------
# Exact posterior over clusterings (fixed alpha)
# ---------------------------------------------------------------------------


def blocks(partition):
    """The clusters of a label tuple as a list of index tuples, in label order."""
    part = canonical_labels(partition)
    K = max(part) + 1 if part else 0
    return [tuple(i for i, c in enumerate(part) if c == k) for k in range(K)]


def partition_log_weights(N, log_marginal_fn, alpha):
    """``(partitions, log P(c | alpha) + sum_k log p(X_{C_k}))`` for all Bell(N)
    partitions."""
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    parts = set_partitions(N)
    logw = np.array(
        [
            crp_log_prior(c, alpha) + sum(log_marginal_fn(b) for b in blocks(c))
            for c in parts
        ]
    )
    return parts, logw


def _check_N(X):
    X = _as_data(X)
    if X.shape[0] > 7:
        raise ValueError(f"exact enumeration is meant for N <= 7, got N={X.shape[0]}")
    return X


def exact_partition_posterior(X, alpha, covariance_type, m0, kappa0, nu0, psi0):
    """Exact ``P(c | X) ∝ P(c | alpha) prod_k p(X_{C_k})`` over all set partitions.

    Returns ``{canonical label tuple: probability}`` with Bell(N) entries
    (``N <= 7``: at most 877 partitions and 127 distinct cluster marginals).
    """
    X = _check_N(X)
    lm = make_log_marginal_fn(X, covariance_type, m0, kappa0, nu0, psi0)
    parts, logw = partition_log_weights(X.shape[0], lm, alpha)
    lse = _logsumexp(logw)
    return {c: math.exp(w - lse) for c, w in zip(parts, logw)}


def log_evidence(X, alpha, covariance_type, m0, kappa0, nu0, psi0):
    """``log p(X) = log sum_c P(c | alpha) prod_k p(X_{C_k})`` (0 for empty ``X``)."""
    X = _check_N(X)
    if X.shape[0] == 0:
        return 0.0
    lm = make_log_marginal_fn(X, covariance_type, m0, kappa0, nu0, psi0)
    _, logw = partition_log_weights(X.shape[0], lm, alpha)
    return _logsumexp(logw)


def predictive_components(X, alpha, covariance_type, m0, kappa0, nu0, psi0):
    """Mixture form of the exact posterior predictive: ``[(weight, cluster), ...]``.

    Regrouping the sum over clusterings in `log_predictive_density` by cluster,
    ``p(x | X) = sum_S w_S p(x | X_S) + alpha / (N + alpha) p(x)`` with
    ``w_S = |S| / (N + alpha) * P(S is a cluster | X)``. Returned as a list of
    ``(w_S, S)`` (``S`` an index tuple) followed by ``(alpha / (N + alpha), ())``
    for a new cluster; the weights sum to one.
    """
    X = _check_N(X)
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    return list(
        _predictive_components_cached(
            _freeze(X),
            float(alpha),
            covariance_type,
            _freeze(m0),
            float(kappa0),
            float(nu0),
            _freeze(psi0),
        )
    )


def _freeze(a):
    """Hashable ``(shape, values)`` of an array-like (for caching)."""
    a = np.asarray(a, dtype=float)
    return a.shape, tuple(a.ravel().tolist())


def _thaw(f):
    shape, values = f
    return np.array(values, dtype=float).reshape(shape)


@functools.lru_cache(maxsize=64)
def _predictive_components_cached(Xf, alpha, covariance_type, m0f, kappa0, nu0, psi0f):
    X, m0, psi0 = _thaw(Xf), _thaw(m0f), _thaw(psi0f)
    N = X.shape[0]
    comps = {}
    if N:
        post = exact_partition_posterior(
            X, alpha, covariance_type, m0, kappa0, nu0, psi0
        )
        for c, p in post.items():
            for b in blocks(c):
                comps[b] = comps.get(b, 0.0) + p * len(b) / (N + alpha)
    out = [(w, S) for S, w in sorted(comps.items())]
    out.append((alpha / (N + alpha), ()))
    return tuple(out)


def log_predictive_density(x_new, X, alpha, covariance_type, m0, kappa0, nu0, psi0):
    """Exact log posterior-predictive density of a new point.

    ``p(x | X) = sum_c P(c | X) [ sum_k n_k / (N + alpha) p(x | X_{C_k})
    + alpha / (N + alpha) p(x) ]``, evaluated through the equivalent mixture of
    `predictive_components`. ``x_new`` is ``(d,)`` (float returned) or
    ``(M, d)`` (array ``(M,)`` returned). By exchangeability it equals
    ``log_evidence(X + [x]) - log_evidence(X)``.
    """
    X = _check_N(X)
    d = X.shape[1] if X.shape[0] else _point_dim(x_new)
    pts, single = _as_points(x_new, d)
    terms = []
    for w, S in predictive_components(X, alpha, covariance_type, m0, kappa0, nu0, psi0):
        X_S = X[list(S)] if S else np.zeros((0, d))
        terms.append(
            math.log(w)
            + log_posterior_predictive(pts, X_S, covariance_type, m0, kappa0, nu0, psi0)
        )
    terms = np.array(terms)
    top = terms.max(axis=0)
    out = top + np.log(np.exp(terms - top).sum(axis=0))
    return float(out[0]) if single else out


# ---------------------------------------------------------------------------
# alpha ~ Gamma(shape a, rate b) integrated out (Escobar & West 1995)
# ---------------------------------------------------------------------------


def exact_joint_posterior_with_alpha(X, a, b, covariance_type, m0, kappa0, nu0, psi0):
    """Posterior over clusterings with ``alpha ~ Gamma(shape=a, rate=b)`` out.

    Returns ``(posterior, alpha_mean)``: ``posterior`` is ``{label tuple:
    P(c | X)}`` with ``P(c | X) ∝ int Gamma(alpha; a, b) P(c | alpha) d alpha
    prod_k p(X_{C_k})`` and ``alpha_mean = E[alpha | X]`` (see
    `_dp_reference.alpha_integrated_posterior`).
    """
    X = _check_N(X)
    lm = make_log_marginal_fn(X, covariance_type, m0, kappa0, nu0, psi0)
    return dpr.alpha_integrated_posterior(X.shape[0], lm, a, b)


def alpha_posterior_pdf(alpha, X, a, b, covariance_type, m0, kappa0, nu0, psi0):
    """Density ``p(alpha | X)`` (array for array ``alpha``), ``alpha ~ Gamma(a,
    rate b)``.

    ``p(alpha | X) = sum_K P(K | X) Gamma(alpha; a, b) alpha^K / AF(alpha, N)
    / W(K)`` with ``P(K | X)`` from `exact_joint_posterior_with_alpha`.
    """
    X = _check_N(X)
    N = X.shape[0]
    post, _ = exact_joint_posterior_with_alpha(
        X, a, b, covariance_type, m0, kappa0, nu0, psi0
    )
    pK = n_clusters_distribution(post)
    al = np.atleast_1d(np.asarray(alpha, dtype=float))
    out = np.zeros_like(al)
    for j, x in enumerate(al):
        if x <= 0:
            continue
        t = math.log(x)
        for K in range(1, N + 1):
            if pK[K] == 0:
                continue
            # integrand in t divided by the Jacobian alpha gives the density in alpha
            out[j] += pK[K] * math.exp(
                dpr._log_alpha_integrand(t, K, N, a, b, 0)
                - t
                - log_alpha_integral(K, N, a, b)
            )
    return out if np.ndim(alpha) else float(out[0])


# ---------------------------------------------------------------------------
# Liang, Jordan & Taskar (2007): clusterings consistent with a permutation
# ---------------------------------------------------------------------------


def _check_order(order):
    order = tuple(int(i) for i in order)
    if sorted(order) != list(range(len(order))):
        raise ValueError(f"order must be a permutation of 0..N-1, got {order}")
    return order


def is_consistent(partition, order):
    """True iff every cluster of ``partition`` is a contiguous segment of ``order``.

    This is ``pi in Pi(C)`` of Liang, Jordan & Taskar (2007), Section 3:
    consistent clusterings "partition this ordering into contiguous segments".
    ``order[i]`` is the index of the ``(i+1)``-th point, i.e. ``pi_{i+1}``.
    """
    order = _check_order(order)
    part = canonical_labels(partition)
    if len(part) != len(order):
        raise ValueError("partition and order have different lengths")
    labels_along = [part[i] for i in order]
    # contiguous <=> each label appears in one run along the ordering
    seen = set()
    prev = None
    for lab in labels_along:
        if lab != prev:
            if lab in seen:
                return False
            seen.add(lab)
            prev = lab
    return True


def consistent_clusterings(order):
    """All clusterings consistent with ``order`` (canonical label tuples over
    point indices).

    Brute force: one clustering per subset of the ``N - 1`` gaps between
    consecutive positions of ``order`` (a chosen gap starts a new cluster), so
    there are ``2^(N-1)`` of them (``binom(N-1, K-1)`` with ``K`` clusters) and
    they are all distinct. ``N = 0`` gives ``[()]``.
    """
    order = _check_order(order)
    N = len(order)
    if N == 0:
        return [()]
    out = []
    for cuts in itertools.product((False, True), repeat=N - 1):
        labels = [0] * N
        lab = 0
        labels[order[0]] = 0
        for pos in range(1, N):
            if cuts[pos - 1]:
                lab += 1
            labels[order[pos]] = lab
        out.append(canonical_labels(labels))
    return out


def permutations_consistent_with(partition):
    """``Pi(C)``: all orderings (tuples) with which ``partition`` is consistent.

    Brute force over the ``N!`` permutations; Eq. 3 of the paper says there are
    ``|C|! prod_c |c|!`` of them.
    """
    part = canonical_labels(partition)
    return [
        p for p in itertools.permutations(range(len(part))) if is_consistent(part, p)
    ]


def log_augmented_joint(partition, order, log_marginal_fn, alpha, beta=None):
    """``log p(C, pi, x)`` of Eq. 4 (or ``log q_beta(C, pi, x)`` of Eq. 5 if ``beta``).

    Eq. 4: ``A(|C|) prod_c B(c)`` with ``A(K) = alpha^K / (AF(alpha, N) K!)`` and
    ``B(c) = p(x_c) / |c|`` when ``pi in Pi(C)``, ``-inf`` otherwise.
    Eq. 5: ``A' prod_c B'(c)``, ``A' = 1 / AF(alpha, N)``,
    ``B'(c) = p(x_c) alpha / (|c| beta)``.
    """
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    order = _check_order(order)
    if not is_consistent(partition, order):
        return -math.inf
    bl = blocks(partition)
    N, K = len(order), len(bl)
    log_AF = _log_ascending_factorial(alpha, N)
    sum_log_B = sum(log_marginal_fn(c) - math.log(len(c)) for c in bl)
    if beta is None:
        return K * math.log(alpha) - log_AF - math.lgamma(K + 1) + sum_log_B
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    return -log_AF + sum_log_B + K * (math.log(alpha) - math.log(beta))


def brute_force_g_table(order, log_marginal_fn):
    """``log g(r, K)`` of Section 3.1 by enumeration, as an ``(N+1, N+1)`` array.

    ``g(r, K) = sum over the clusterings of the first r points of the ordering
    into K contiguous segments of prod_c B(c)``, ``B(c) = p(x_c) / |c|``;
    ``g(0, 0) = 1``; impossible entries are ``-inf``. The paper's recursion
    ``g(r, K) = sum_m g(r-m, K-1) B({pi_{r-m+1}, ..., pi_r})`` must reproduce it.
    """
    order = _check_order(order)
    N = len(order)
    G = np.full((N + 1, N + 1), -np.inf)
    G[0, 0] = 0.0
    for r in range(1, N + 1):
        prefix = order[:r]
        terms = {}
        for cuts in itertools.product((False, True), repeat=r - 1):
            starts = [0] + [p for p in range(1, r) if cuts[p - 1]]
            ends = starts[1:] + [r]
            segs = [prefix[s:e] for s, e in zip(starts, ends)]
            val = sum(log_marginal_fn(s) - math.log(len(s)) for s in segs)
            terms.setdefault(len(segs), []).append(val)
        for K, vals in terms.items():
            G[r, K] = _logsumexp(vals)
    return G


def dp_sum_over_consistent_clusterings(order, log_marginal_fn, alpha, beta=None):
    """Brute-force version of the paper's dynamic program for one permutation.

    Enumerates the ``2^(N-1)`` clusterings consistent with ``order``
    (`consistent_clusterings`), weighs each by Eq. 4 (`log_augmented_joint`,
    i.e. the CRP prior times the marginal likelihood times the augmentation
    factor ``p(pi | C) = 1 / (|C|! prod_c |c|!)`` of Eq. 3) -- or by Eq. 5 if
    ``beta`` is given -- and returns ``(log_norm, conditional)``:

    - ``log_norm = log p(pi, x) = log sum_{C: pi in Pi(C)} A(|C|) prod_c B(c)``
      (Section 3.1; with ``beta``: ``log q_beta(pi, x)``, Eq. 5 summed);
    - ``conditional = {label tuple: p(C | pi, x)}`` over the consistent
      clusterings (with ``beta``: ``q_beta(C | pi, x)``, the proposal of
      Section 3.2).

    ``order[i]`` is the index of the ``(i+1)``-th point (``pi_{i+1}``);
    ``log_marginal_fn(indices)`` returns ``log p(x_c)`` (see
    `make_log_marginal_fn`). Summing ``exp(log_norm)`` over all ``N!`` orders
    gives ``p(x)`` (`log_evidence`).
    """
    order = _check_order(order)
    clus = consistent_clusterings(order)
    logw = np.array(
        [log_augmented_joint(c, order, log_marginal_fn, alpha, beta) for c in clus]
    )
    lse = _logsumexp(logw)
    return lse, {c: math.exp(w - lse) for c, w in zip(clus, logw)}


def permutation_augmented_kernel(N, log_marginal_fn, alpha):
    """Exact transition matrix on clusterings of one blocked-Gibbs sweep (Section 3).

    One sweep from ``C``: draw ``pi ~ p(pi | C)`` uniform on ``Pi(C)`` (Eq. 3),
    then ``C' ~ p(C' | pi, x)`` (Eq. 4). Returns ``(partitions, T)`` with
    ``partitions = set_partitions(N)`` and ``T[i, j] = sum_{pi in Pi(C_i)}
    p(C_j | pi, x) / |Pi(C_i)|``. The exact posterior is stationary (and in
    detailed balance) for ``T``. Brute force over the ``N!`` orders.
    """
    parts = set_partitions(N)
    index = {c: i for i, c in enumerate(parts)}
    T = np.zeros((len(parts), len(parts)))
    n_pi = np.zeros(len(parts))
    for order in itertools.permutations(range(N)):
        _, cond = dp_sum_over_consistent_clusterings(order, log_marginal_fn, alpha)
        row = np.zeros(len(parts))
        for c, p in cond.items():
            row[index[c]] = p
        for c in cond:  # the clusterings C_i with pi in Pi(C_i)
            T[index[c]] += row
            n_pi[index[c]] += 1
    return parts, T / n_pi[:, None]
