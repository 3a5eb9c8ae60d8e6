# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Isotropic Gaussian families: spherical (Normal-Gamma) and fixed (known) covariance.

Two cluster priors of the DP Gaussian mixture whose statistics are a location and
one scalar, so that a (point, cluster) pair costs O(d):

``spherical``, Sigma = sigma^2 I with the conjugate Normal-Gamma prior

    sigma^2 ~ InvGamma(nu_0 / 2, psi_0 / 2),    mu | sigma^2 ~ N(m_0, sigma^2 I / kappa_0).

A cluster of n points has kappa_n = kappa_0 + n, nu_n = nu_0 + n d,
m_n = (kappa_0 m_0 + sum x) / kappa_n and the scalar

    psi_n = psi_0 + sum_i |x_i - xbar|^2 + kappa_0 n / kappa_n |xbar - m_0|^2,

which a new point x changes by psi_{n+1} = psi_n + kappa_n / (kappa_n + 1) |x - m_n|^2
(the trace of the NIW rank-one update). The predictive of x is the multivariate
Student-t with nu_n degrees of freedom, location m_n and shape
psi_n (kappa_n + 1) / (kappa_n nu_n) I:

    log p(x | cluster) = C_n - (nu_n + d) / 2 log(1 + kappa_n / ((kappa_n + 1) psi_n) |x - m_n|^2),
    C_n = lgamma((nu_n + d) / 2) - lgamma(nu_n / 2) - d / 2 log(pi psi_n (kappa_n + 1) / kappa_n),

and the log marginal likelihood of the cluster is

    -n d / 2 log pi + lgamma(nu_n / 2) - lgamma(nu_0 / 2)
    + nu_0 / 2 log psi_0 - nu_n / 2 log psi_n + d / 2 log(kappa_0 / kappa_n).

``fixed``, Sigma known and shared by the clusters, mu ~ N(m_0, Sigma / kappa_0).
With L the lower Cholesky factor of Sigma, the data are whitened once, y = L^{-1} x,
when the model is bound to them (``IsotropicModel.family``): the whitened model has
unit covariance, so the cluster keeps the whitened m_n and the scalar q_n, defined
as psi_n above with psi_0 = 0. The predictive is N(m_n, Sigma (1 + 1 / kappa_n)),

    log p(x | cluster) = C_n - kappa_n / (2 (kappa_n + 1)) |y - m_n|^2,
    C_n = -d / 2 log(2 pi (kappa_n + 1) / kappa_n) - log |L|,

and the log marginal likelihood is

    -n d / 2 log(2 pi) - n log |L| + d / 2 log(kappa_0 / kappa_n) - q_n / 2.

A state caches C_n and the kernel's coefficient and power, refreshed when the
cluster changes (one log), so the Gibbs kernel of a pair is |x - m_n|^2 and, for
``spherical``, one log1p. The helpers it shares with the NIW family (``dot``,
``members_mean``, ``location_add`` and ``location_remove``) are declared in
``_gaussian_kernels.pxd``.

Explicit parameters (the sub-cluster sampler): ``spherical`` draws
sigma^2 = (psi_n / 2) / Gamma(nu_n / 2) and mu ~ N(m_n, sigma^2 I / kappa_n),
``fixed`` the whitened mu ~ N(m_n, I / kappa_n); a row then costs O(d),
log N(x | mu, Sigma) = const - |y - mu|^2 / (2 sigma^2) (sigma = 1 for ``fixed``,
whose const holds -log |L|).
"""

import numpy as np
from scipy.special import gammaln

from libc.math cimport INFINITY, M_PI, isfinite, log, log1p, sqrt
from libc.string cimport memcpy

from numpy.random cimport bitgen_t

from ._family cimport (
    STATE_COUNT, Family, block_moments, conjugate_family, explicit_parameters,
    likelihood_rows, moments_of_states,
)
from ._rng cimport random_standard_gamma, random_standard_normal
from ._simd cimport squared_distance as simd_squared_distance
from ._simd cimport squares_rows
from ._gaussian_kernels cimport dot, location_add, location_remove, members_mean
from ._permutation cimport intp_t

# Layout of a state block (offsets in doubles); state[0] is n (STATE_COUNT).
cdef enum:
    S_LOG_CONST = 1    # C_n, the predictive's log constant (module docstring)
    S_SCATTER = 2      # psi_n (spherical) or q_n (fixed)
    S_LOG_WEIGHT = 3   # log n + C_n (-inf if n = 0)
    S_COEF = 4         # spherical: kappa_n / ((kappa_n + 1) psi_n); fixed: -kappa_n / (2 (kappa_n + 1))
    S_POWER = 5        # spherical: -(nu_n + d) / 2
    S_MEAN = 6         # (d,) m_n (whitened for fixed)


cdef struct Iso:
    # The prior of one cluster and the tables shared by its states.
    intp_t d
    intp_t width
    bint fixed           # known covariance (whitened data) or Normal-Gamma
    double kappa         # kappa_0
    double nu            # nu_0 (spherical)
    double psi           # psi_0 (spherical), 0 (fixed)
    double log_det       # log |L| (fixed), 0 (spherical)
    const double* mean   # (d,) m_0, whitened for fixed
    const double* prior  # (width,) the state of an empty cluster
    intp_t n_max         # the tables cover n = 0..n_max
    const double* lg_pred  # (n_max + 1,) lgamma((nu_n + d) / 2) - lgamma(nu_n / 2)
    const double* lg_marg  # (n_max + 1,) lgamma(nu_n / 2)


# -- cluster states -----------------------------------------------------------------


cdef inline double squared_distance(
        const double* x, const double* m, intp_t d) noexcept nogil:
    """|x - m|^2, in four running sums (``_simd``: the same order on every target)."""
    return simd_squared_distance(d, x, m)


cdef void state_refresh(const Iso* p, double* s) noexcept nogil:
    """Recompute the cached constant, coefficient and power of a state (one log)."""
    cdef intp_t n = <intp_t> s[STATE_COUNT]
    cdef double kn = p.kappa + n
    if p.fixed:
        s[S_COEF] = -0.5 * kn / (kn + 1.0)
        s[S_LOG_CONST] = -0.5 * p.d * log(2.0 * M_PI * (kn + 1.0) / kn) - p.log_det
    else:
        s[S_COEF] = kn / ((kn + 1.0) * s[S_SCATTER])
        s[S_POWER] = -0.5 * (p.nu + (n + 1) * p.d)
        s[S_LOG_CONST] = (
            p.lg_pred[n] - 0.5 * p.d * log(M_PI * s[S_SCATTER] * (kn + 1.0) / kn)
        )
    s[S_LOG_WEIGHT] = log(<double> n) + s[S_LOG_CONST] if n > 0 else -INFINITY


cdef void state_add(
        const Iso* p,
        double* s,          # INOUT state
        const double* x,    # IN (d,) whitened for fixed
) noexcept nogil:
    """Add point x to the cluster, O(d)."""
    cdef double kn = p.kappa + s[STATE_COUNT]
    cdef double* mean = s + S_MEAN
    s[S_SCATTER] += kn / (kn + 1.0) * squared_distance(x, mean, p.d)
    location_add(s, mean, x, p.d, kn)
    state_refresh(p, s)


cdef int state_remove(
        const Iso* p,
        double* s,          # INOUT state, with x among its n >= 2 points
        const double* x,    # IN (d,)
) noexcept nogil:
    """Remove point x from the cluster, O(d): the inverse of ``state_add``.

    x - m_{n-1} = kappa' / kappa (x - m_n) with kappa' = kappa_0 + n and
    kappa = kappa' - 1, so the scalar loses kappa' / kappa |x - m_n|^2. It never
    falls below its prior value psi_0 (0 for fixed) in exact arithmetic; below
    it, cancellation ate it: -1 (the caller rebuilds from the members).
    """
    cdef double kn1 = p.kappa + s[STATE_COUNT]
    cdef double kn = kn1 - 1.0
    cdef double* mean = s + S_MEAN
    s[S_SCATTER] -= kn1 / kn * squared_distance(x, mean, p.d)
    location_remove(s, mean, x, p.d, kn1)
    if not (s[S_SCATTER] >= (1.0 - 1e-8) * p.psi):
        return -1
    state_refresh(p, s)
    return 0


cdef int state_rebuild(
        const Iso* p,
        double* s,                # OUT state
        const double* X,          # IN (N, d) row-major data (whitened for fixed)
        const intp_t* members,    # IN (n,) rows of X in the cluster
        intp_t n,
) noexcept nogil:
    """The state of a set of points from scratch (two passes), O(n d).

    -1 if the scalar is not finite (or, spherical, not positive).
    """
    cdef intp_t d = p.d
    cdef double* mean = s + S_MEAN   # holds xbar until state_set
    cdef double scatter, w
    if n == 0:
        memcpy(s, p.prior, p.width * sizeof(double))
        return 0
    members_mean(X, members, n, d, mean)
    w = p.kappa * n / (p.kappa + n)
    scatter = add_scatter(p, X, members, n, mean,
                          p.psi + w * squared_distance(mean, p.mean, d))
    return state_set(p, s, n, mean, scatter)


cdef inline double add_scatter(
        const Iso* p, const double* X, const intp_t* members, intp_t n,
        const double* xbar, double total) noexcept nogil:
    """total + sum_i |x_i - xbar|^2, a row at a time."""
    cdef intp_t i
    for i in range(n):
        total += squared_distance(X + members[i] * p.d, xbar, p.d)
    return total


cdef int state_set(const Iso* p, double* s, double n, const double* xbar,
                   double scatter) noexcept nogil:
    """``s`` <- the state of n >= 1 points of mean ``xbar`` (which may be the
    state's own m_n entries) and scalar ``scatter`` (psi_n or q_n); -1 if the
    scalar is not finite (or, spherical, not positive)."""
    cdef intp_t j
    for j in range(p.d):
        s[S_MEAN + j] = (p.kappa * p.mean[j] + n * xbar[j]) / (p.kappa + n)
    s[S_SCATTER] = scatter
    s[STATE_COUNT] = n
    if not (isfinite(scatter) and (p.fixed or scatter > 0.0)):
        return -1
    state_refresh(p, s)
    return 0


# -- block moments (``_family.pxd``): [n, xbar (d), M2], M2 = sum_i |x_i - xbar|^2 --


# The context of the family's callbacks (``_family.pxd``).
cdef struct IsoContext:
    const Iso* p
    intp_t d
    const double* X     # (N, d) row-major data, whitened for fixed


cdef inline bint empty_moments(double* out, double n, intp_t d) noexcept nogil:
    """``out[0]`` <- n; where n is 0, the mean and scatter of the empty set (zeros)
    too. Whether the set is empty."""
    cdef intp_t j
    out[0] = n
    if n != 0.0:
        return False
    for j in range(d + 1):
        out[1 + j] = 0.0
    return True


cdef void _moments(
        void* context, const intp_t* members, intp_t n, double* out) noexcept nogil:
    """The moments of the rows ``members`` of X (two passes, as ``state_rebuild``)."""
    cdef const Iso* p = (<IsoContext*> context).p
    cdef const double* X = (<IsoContext*> context).X
    cdef intp_t d = p.d
    cdef double* xbar = out + 1
    if empty_moments(out, n, d):
        return
    members_mean(X, members, n, d, xbar)
    out[1 + d] = add_scatter(p, X, members, n, xbar, 0.0)


cdef void _moments_merge(void* context, double* acc, const double* other) noexcept nogil:
    """acc <- the moments of the union (Chan, Golub & LeVeque's pairwise update)."""
    cdef const Iso* p = (<IsoContext*> context).p
    cdef intp_t j, d = p.d
    cdef double na = acc[0], nb = other[0], n = na + nb
    if nb == 0.0:
        return
    if na == 0.0:
        memcpy(acc, other, (d + 2) * sizeof(double))
        return
    acc[1 + d] += other[1 + d] + na * nb / n * squared_distance(other + 1, acc + 1, d)
    for j in range(1, d + 1):
        acc[j] += (other[j] - acc[j]) * (nb / n)
    acc[0] = n


cdef int _moments_state(void* context, const double* moments, double* s) noexcept nogil:
    """The state of the points the moments summarise; -1 as ``state_rebuild``."""
    cdef const Iso* p = (<IsoContext*> context).p
    cdef intp_t d = p.d
    cdef double n = moments[0], scatter
    cdef const double* xbar = moments + 1
    memcpy(s, p.prior, p.width * sizeof(double))   # the entries fixed leaves unused
    if n == 0.0:
        return 0
    scatter = (p.psi + p.kappa * n / (p.kappa + n) * squared_distance(xbar, p.mean, d)
               + moments[1 + d])
    return state_set(p, s, n, xbar, scatter)


cdef void _state_moments(void* context, const double* s, double* out) noexcept nogil:
    """The moments of the points a state summarises, read off it (the inverse of
    ``_moments_state``): xbar = ((kappa_0 + n) m_n - kappa_0 m_0) / n and M2 =
    scalar - psi_0 - kappa_0 n / (kappa_0 + n) |xbar - m_0|^2. What
    ``_moments_state`` adds back makes any rounding here small against the
    scalar."""
    cdef const Iso* p = (<IsoContext*> context).p
    cdef intp_t j, d = p.d
    cdef double n = s[STATE_COUNT], kn = p.kappa + n
    cdef double* xbar = out + 1
    if empty_moments(out, n, d):
        return
    for j in range(d):
        xbar[j] = (kn * s[S_MEAN + j] - p.kappa * p.mean[j]) / n
    out[1 + d] = (s[S_SCATTER] - p.psi
                  - p.kappa * n / kn * squared_distance(xbar, p.mean, d))


cdef inline double state_log_kernel(
        const Iso* p, const double* s, const double* x) noexcept nogil:
    """The part of log p(x | cluster) that depends on x, O(d)."""
    cdef double r2 = squared_distance(x, s + S_MEAN, p.d)
    if p.fixed:
        return s[S_COEF] * r2
    return s[S_POWER] * log1p(s[S_COEF] * r2)


cdef double state_log_marginal(const Iso* p, const double* s) noexcept nogil:
    """log p(points of the cluster), parameters integrated out (closed form)."""
    cdef double n = s[STATE_COUNT]
    cdef double log_kappa_ratio = 0.5 * p.d * log(p.kappa / (p.kappa + n))
    if p.fixed:
        return (-0.5 * n * p.d * log(2.0 * M_PI) - n * p.log_det
                + log_kappa_ratio - 0.5 * s[S_SCATTER])
    return (
        -0.5 * n * p.d * log(M_PI)
        + p.lg_marg[<intp_t> n] - p.lg_marg[0]
        + 0.5 * p.nu * log(p.psi) - 0.5 * (p.nu + n * p.d) * log(s[S_SCATTER])
        + log_kappa_ratio
    )


# -- the prior and its tables, owned by a Python object ---------------------------------


cdef class IsotropicModel:
    """The spherical or fixed-covariance prior of one cluster, with its tables.

    The Python methods wrap the state kernels for tests (they are not used in
    fitting); they take points in the data's units (whitened inside for
    ``fixed``).

    Parameters
    ----------
    mean_prior : ndarray of shape (d,)
        m_0, the prior mean of a cluster's mean, in the data's units.
    kappa : float
        kappa_0 > 0, the weight of m_0 in points.
    nu : float
        nu_0 > 0 (spherical); ignored (fixed).
    covariance_prior : float or ndarray of shape (d, d)
        psi_0 > 0 (spherical), or the known covariance Sigma, symmetric positive
        definite (fixed).
    fixed : bool
        Known covariance or Normal-Gamma.
    n_max : int
        Largest cluster size the tables cover.
    """

    cdef Iso p
    cdef readonly object cholesky   # (d, d) lower factor L of Sigma (fixed), else None
    cdef object _arrays             # keeps the buffers behind p's pointers alive
    cdef object _arguments          # the constructor's arguments, for pickling

    def __init__(self, mean_prior, double kappa, double nu, covariance_prior,
                 bint fixed, intp_t n_max):
        mean = np.array(mean_prior, dtype=np.float64).ravel()
        d = mean.shape[0]
        if kappa <= 0:
            raise ValueError(f"kappa must be > 0, got {kappa}.")
        if fixed:
            sigma = np.array(covariance_prior, dtype=np.float64)
            if sigma.shape != (d, d):
                raise ValueError(f"covariance_prior must have shape {(d, d)}, got {sigma.shape}.")
            self.cholesky = np.linalg.cholesky(sigma)  # LinAlgError if not PD
            # the model lives in whitened coordinates: m_0 too
            mean = self.whiten(mean[None])[0]
            psi, nu, log_det = 0.0, 0.0, float(np.log(np.diag(self.cholesky)).sum())
            covariance_prior = sigma
        else:
            psi = float(covariance_prior)
            if not psi > 0:
                raise ValueError(f"covariance_prior must be > 0, got {psi}.")
            if nu <= 0:
                raise ValueError(f"nu must be > 0, got {nu}.")
            self.cholesky = None
            log_det = 0.0
        width = S_MEAN + d
        counts = np.arange(n_max + 1, dtype=np.float64)
        nun = nu + counts * d
        prior = np.zeros(width, dtype=np.float64)
        prior[S_MEAN:] = mean
        prior[S_SCATTER] = psi
        arrays = dict(
            mean=mean, prior=prior,
            lg_pred=gammaln((nun + d) / 2) - gammaln(nun / 2),
            lg_marg=gammaln(nun / 2),
        )
        self._arrays = arrays
        self._arguments = (mean_prior, kappa, nu, covariance_prior, fixed, n_max)
        self.p.d = d
        self.p.width = width
        self.p.fixed = fixed
        self.p.kappa = kappa
        self.p.nu = nu
        self.p.psi = psi
        self.p.log_det = log_det
        self.p.n_max = n_max
        self.p.mean = _pointer(arrays["mean"])
        self.p.prior = _pointer(arrays["prior"])
        self.p.lg_pred = _pointer(arrays["lg_pred"])
        self.p.lg_marg = _pointer(arrays["lg_marg"])
        state_refresh(&self.p, _pointer(arrays["prior"]))

    def __reduce__(self):
        return IsotropicModel, self._arguments

    def whiten(self, X):
        """L^{-1} x of each row of X (fixed); X as a C-contiguous float64 array else.

        Row by row, in a fixed order of operations: a row's whitened values do not
        depend on the rows beside it (a BLAS solve over many right-hand sides may
        block them differently), so that rows whitened in blocks on Dask workers
        equal the rows whitened in one piece.
        """
        X = np.ascontiguousarray(X, dtype=np.float64)
        if self.cholesky is not None:
            X = _forward_substitution(self.cholesky, X)
        return X

    def family(self, X):
        """This prior bound to the data X, for ``CollapsedChain`` (``IsotropicFamily``)."""
        return IsotropicFamily(self, X)

    def empty_state(self):
        """A fresh state of an empty cluster."""
        return self._arrays["prior"].copy()

    def add(self, double[::1] state, x):
        """Add x to state in place (``state_add``)."""
        cdef const double[::1] y = self._point(state, x)
        state_add(&self.p, &state[0], &y[0])

    def remove(self, double[::1] state, x):
        """Remove x from state in place (``state_remove``); returns the status."""
        cdef const double[::1] y = self._point(state, x)
        return state_remove(&self.p, &state[0], &y[0])

    def rebuild(self, double[::1] state, X):
        """Set state to that of the rows of X (``state_rebuild``); returns the status."""
        cdef const double[:, ::1] data = self.whiten(np.reshape(X, (-1, self.p.d)))
        if state.shape[0] != self.p.width or data.shape[0] > self.p.n_max:
            raise ValueError("state of the wrong width or too many points")
        cdef const intp_t[::1] idx = np.arange(data.shape[0], dtype=np.intp)
        if data.shape[0] == 0:
            return state_rebuild(&self.p, &state[0], NULL, NULL, 0)
        return state_rebuild(&self.p, &state[0], &data[0, 0], &idx[0], data.shape[0])

    def log_predictive(self, const double[::1] state, X):
        """log p(x | state) of each row of X."""
        cdef const double[:, ::1] data = self.whiten(np.reshape(X, (-1, self.p.d)))
        self._check(state)
        out = np.empty(data.shape[0], dtype=np.float64)
        cdef intp_t i
        for i in range(data.shape[0]):
            out[i] = state[S_LOG_CONST] + state_log_kernel(&self.p, &state[0], &data[i, 0])
        return out

    def log_marginal(self, const double[::1] state):
        """log p(points of state) (``state_log_marginal``)."""
        self._check(state)
        return state_log_marginal(&self.p, &state[0])

    def unpack(self, state):
        """(n, m_n, scalar) of a state: m_n in the data's units; psi_n or q_n."""
        state = np.asarray(state)
        mean = state[S_MEAN:S_MEAN + self.p.d]
        if self.cholesky is not None:
            mean = self.cholesky @ mean
        return int(state[STATE_COUNT]), np.array(mean), float(state[S_SCATTER])

    def _point(self, state, x):
        self._check(state)
        if np.shape(x) != (self.p.d,):
            raise ValueError(f"x must have {self.p.d} entries")
        return self.whiten(np.reshape(x, (1, -1)))[0]

    def _check(self, state):
        if state.shape[0] != self.p.width:
            raise ValueError(f"state must have {self.p.width} entries")
        if state[STATE_COUNT] + 1 > self.p.n_max:
            raise ValueError("the state has more points than the tables cover")


def _forward_substitution(const double[:, ::1] L, const double[:, ::1] X):
    """L^{-1} x for each row x of X, L lower triangular: (N, d), row by row."""
    cdef intp_t i, j, k, N = X.shape[0], d = X.shape[1]
    cdef double[:, ::1] Y = np.empty((N, d))
    cdef double s
    with nogil:
        for i in range(N):
            for j in range(d):
                s = X[i, j]
                for k in range(j):
                    s -= L[j, k] * Y[i, k]
                Y[i, j] = s / L[j, j]
    return np.asarray(Y)


cdef double* _pointer(double[::1] array):
    return &array[0]


def describe_states(IsotropicModel model, states):
    """Posterior means and predictive parameters of a stack of states.

    Returns ``(means, covariances, predictive_factors, predictive_dfs)``, means in
    the data's units. Spherical: covariances (K,) the posterior mean of sigma^2,
    psi_n / (nu_n - 2) (psi_n / nu_n, the inverse of the posterior mean of the
    precision, when nu_n <= 2), factors (K,) the Student-t's scale
    sqrt(psi_n (kappa_n + 1) / (kappa_n nu_n)) and dfs nu_n. Fixed: covariances
    the known (d, d) Sigma, factors (K,) sqrt((kappa_n + 1) / kappa_n), relative
    to L (unitless), and dfs inf (a Gaussian).
    """
    cdef Iso* p = &model.p
    n = states[:, STATE_COUNT]
    kn = p.kappa + n
    means = states[:, S_MEAN:S_MEAN + p.d].copy()
    if p.fixed:
        L = model.cholesky
        return (means @ L.T, L @ L.T, np.sqrt((kn + 1.0) / kn), np.full(len(n), np.inf))
    nun = p.nu + n * p.d
    psi = states[:, S_SCATTER]
    covariances = psi / np.where(nun > 2.0, nun - 2.0, nun)
    return means, covariances, np.sqrt(psi * (kn + 1.0) / (kn * nun)), nun


# -- the prior as a conjugate family of the collapsed sampler core ----------------------


cdef void _reset(void* context, double* state) noexcept nogil:
    cdef IsoContext* c = <IsoContext*> context
    memcpy(state, c.p.prior, c.p.width * sizeof(double))


cdef void _add(void* context, double* state, intp_t point) noexcept nogil:
    cdef IsoContext* c = <IsoContext*> context
    state_add(c.p, state, c.X + point * c.d)


cdef int _remove(void* context, double* state, intp_t point) noexcept nogil:
    cdef IsoContext* c = <IsoContext*> context
    return state_remove(c.p, state, c.X + point * c.d)


cdef double _log_kernel(void* context, const double* state, intp_t point) noexcept nogil:
    cdef IsoContext* c = <IsoContext*> context
    return state_log_kernel(c.p, state, c.X + point * c.d)


cdef double _log_predictive(void* context, const double* state, intp_t point) noexcept nogil:
    cdef IsoContext* c = <IsoContext*> context
    return state[S_LOG_CONST] + state_log_kernel(c.p, state, c.X + point * c.d)


cdef double _log_marginal(void* context, const double* state) noexcept nogil:
    return state_log_marginal((<IsoContext*> context).p, state)


cdef int _rebuild(void* context, double* state, const intp_t* members, intp_t n) noexcept nogil:
    cdef IsoContext* c = <IsoContext*> context
    return state_rebuild(c.p, state, c.X, members, n)


cdef double _point_key(void* context, intp_t point, const double* u) noexcept nogil:
    """u . x (whitened for fixed)."""
    cdef IsoContext* c = <IsoContext*> context
    return dot(u, c.X + point * c.d, c.d)


cdef double _cluster_key(void* context, const double* state, const double* u) noexcept nogil:
    """u . m_n, the cluster's posterior location, in the coordinates of the points."""
    return dot(u, state + S_MEAN, (<IsoContext*> context).d)


cdef int _draw_params(void* context, const double* state, bitgen_t* rng,
                      double* params) noexcept nogil:
    """(mu, 1 / sigma^2, log normaliser): a draw of the cluster's Gaussian."""
    cdef IsoContext* c = <IsoContext*> context
    cdef const Iso* p = c.p
    cdef intp_t j, d = p.d
    cdef double n = state[STATE_COUNT], kn = p.kappa + n, precision = 1.0
    if not p.fixed:
        # sigma^2 ~ InvGamma(nu_n / 2, psi_n / 2), nu_n = nu_0 + n d
        precision = 2.0 * random_standard_gamma(rng, 0.5 * (p.nu + n * d)) / state[S_SCATTER]
        if not (precision > 0.0 and isfinite(precision)):
            return -1
    for j in range(d):
        params[j] = state[S_MEAN + j] + random_standard_normal(rng) / sqrt(precision * kn)
    params[d] = precision
    params[d + 1] = 0.5 * d * log(precision / (2.0 * M_PI)) - p.log_det
    return 0


cdef double _log_likelihood(void* context, const double* params, intp_t point,
                            double* work) noexcept nogil:
    """log N(x | mu, sigma^2 I) (whitened for fixed, less log |L|), O(d)."""
    cdef IsoContext* c = <IsoContext*> context
    return params[c.d + 1] - 0.5 * params[c.d] * squared_distance(
        c.X + point * c.d, params, c.d)


cdef void _log_likelihood_rows(
        void* context, const double* params, const intp_t* points, intp_t first,
        intp_t m, double* out, double* work) noexcept nogil:
    """``_log_likelihood`` of m <= ROWS_BLOCK rows (``_family.pxd``), four at a
    time (``_simd.squares_rows``: each row's sum in the order of one row
    alone, so each value is that row's to the last bit; the four rows' chains
    of adds run side by side)."""
    cdef IsoContext* c = <IsoContext*> context
    cdef intp_t r, d = c.d
    squares_rows(c.X, d, points, first, m, params, NULL, out)
    for r in range(m):
        out[r] = params[d + 1] - 0.5 * params[d] * out[r]


cdef class IsotropicFamily(Family):
    """An ``IsotropicModel`` bound to data X: the family ``CollapsedChain`` samples.

    The callbacks need no scratch, so every chain shares one family (``copy``).

    Parameters
    ----------
    model : IsotropicModel
        The cluster prior; its tables must cover n = 0..N. Shared, read-only.
    X : ndarray of shape (N, d)
        The data, in its units; ``fixed`` keeps a whitened copy.
    """

    failure_message = (
        "A cluster's posterior scale is not numerically positive and finite. "
        "Standardise the data or pass a better-conditioned covariance_prior."
    )

    cdef readonly IsotropicModel model
    cdef object data            # X as given, for pickling
    cdef const double[:, ::1] X
    cdef IsoContext context

    def __init__(self, IsotropicModel model, X):
        self.X = model.whiten(X)
        if model.p.d != self.X.shape[1] or model.p.n_max < self.X.shape[0]:
            raise ValueError("the model does not match the data")
        self.model = model
        self.data = X
        self.n_points = self.X.shape[0]
        self.context.p = &model.p
        self.context.d = model.p.d
        self.context.X = &self.X[0, 0] if self.X.shape[0] > 0 else NULL
        self.c = conjugate_family(
            &self.context, model.p.width, _reset, _add, _log_marginal,
            _remove, _log_kernel, _log_predictive, _rebuild,
            S_LOG_WEIGHT, model.p.d, _point_key, _cluster_key)
        explicit_parameters(&self.c, model.p.d + 2, 0, _draw_params, _log_likelihood)
        likelihood_rows(&self.c, _log_likelihood_rows, 0)
        block_moments(&self.c, model.p.d + 2, _moments, _moments_merge, _moments_state)
        moments_of_states(&self.c, _state_moments)

    def __reduce__(self):
        return IsotropicFamily, (self.model, self.data)

    def copy(self):
        """This family itself: the callbacks write nothing, so chains can share it
        (and ``fixed`` whitens the data once, not once per chain)."""
        return self

    def describe(self, states):
        """``(means, covariances, predictive_factors, predictive_dfs)``.

        See ``describe_states``.
        """
        return describe_states(self.model, states)
