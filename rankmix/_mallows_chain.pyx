# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""One MCMC chain of the DP mixture of generalized Mallows models, compiled.

The chain holds the clustering and, per cluster, its central ranking sigma and stage
dispersions theta (Meila & Chen 2010). A sweep releases the GIL for all its work:
the assignment step (eq. 11 for Slice-Gibbs; the Beta-function predictive of
Figure 5 for Beta-Gibbs), then per cluster ``n_gibbs`` rounds of sigma | theta and
theta | sigma, then (with ``alpha_prior``) alpha | K by Escobar & West's step, the
DP prior's terms shared with every chain (``_dp_prior.pxd``). Clusters live in slots that are reused when a cluster empties, so
no relabelling pass over the data is ever needed.

New clusters (Neal 2000, algorithm 2) are chosen with the exact prior predictive
alpha (n - t_i)! / n! (Lemma 1) and their parameters are then drawn given the one
ranking pi_i. For Slice-Gibbs that draw is exact: summing over sigma shows that
one ranking carries no information on theta (its codes sweep every value equally
often), so theta comes from the prior (by adaptive rejection sampling) and sigma |
theta, pi_i has independent truncated-geometric codes. Beta-Gibbs uses the paper's
Sample-sigma-N1 (its Beta approximation) instead.
"""

import numpy as np

from libc.math cimport INFINITY, exp, lgamma, log
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset
from numpy.random cimport bitgen_t

from ._kernels cimport (
    Statistics, codes_one, intp_t, log_psi, mh_sigma, row_length, slice_theta,
    stage_sums, stagewise, statistics_build, statistics_free, statistics_init,
    theta_exact, transposition_pass, weighted_statistics,
)
from ._consensus import number_by_first_appearance
from ._dp_prior cimport crp_log_normaliser, escobar_west, gamma_log_density
from ._rng cimport (
    bitgen_pointer, draw_from_logs, random_beta, shuffle, uniform, uniform_index,
)
from ._slots cimport (
    Slots, grow_array, slots_close, slots_free, slots_group, slots_grow, slots_open,
)


cdef class MallowsChain:
    """State and sweeps of one chain (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (N, T), dtype=np.intp
        Validated rankings, -1 padded; ``T`` stages are modelled.
    n_items : int
        Number of items n (every id in X is below it).
    alpha, nu : float
        DP concentration and prior strength.
    r : ndarray of shape (T,)
        Prior parameters r_j.
    log_z0 : ndarray of shape (T,)
        log of the normaliser of the theta_j prior, exp(-nu (theta r_j + log psi)).
    beta_gibbs : bool
        Beta-Gibbs (Figure 5) if True, Slice-Gibbs (Figure 1) otherwise.
    use_mh : bool
        Metropolis-Hastings sigma update (exact) if True, the plain stagewise rule
        otherwise.
    n_gibbs, n_slices : int
        The paper's T_Gibbs and T_Slices.
    init_clusters : int
        Number of clusters of the random initial clustering.
    bit_generator : numpy.random.BitGenerator
        This chain's own random stream.
    alpha_prior : tuple (shape, rate) or None
        Gamma prior of alpha, resampled each sweep by Escobar & West's step
        (``_dp_prior.pxd``); None keeps alpha fixed.
    """

    cdef object bit_generator
    cdef bitgen_t* rng
    cdef const intp_t[:, ::1] X
    cdef intp_t[::1] lengths
    cdef intp_t[::1] labels
    cdef intp_t N, n, T
    cdef double nu, slice_width, log_n_factorial, log_alpha
    cdef public double alpha
    cdef bint sample_alpha
    cdef double alpha_shape, alpha_rate
    cdef double[::1] r, log_z0, log_new
    cdef bint beta_gibbs, use_mh
    cdef intp_t n_gibbs, n_slices
    cdef public double log_joint

    # cluster slots
    cdef Slots slots           # which slots hold clusters (see _slots.pxd)
    cdef intp_t* size          # (capacity,)
    cdef double* log_size      # (capacity,) log of size, kept in step with it
    cdef intp_t* sigma         # (capacity, n)
    cdef intp_t* position      # (capacity, n) inverse of sigma
    cdef double* theta         # (capacity, T)
    cdef double* log_norm      # (capacity, T + 1) cumulative log psi_{n-1-j}(theta_j)
    cdef double* code_sum      # (capacity, T) Beta-Gibbs: S_j(sigma) of the members
    cdef double* stage_count   # (capacity, T) Beta-Gibbs: N_j of the members
    cdef double* beta_base     # (capacity, T) Beta-Gibbs: log B - L_a(S) + L_b(M)
    cdef intp_t* beta_lo       # (capacity, T) Beta-Gibbs: S, the stage's code sum
    cdef intp_t* beta_hi       # (capacity, T) Beta-Gibbs: M + 1 = S + N + 2
    # Log-gamma ladders L(k) = lgamma(offset + k) - lgamma(offset), grown on demand
    # and shared by the stages with equal offsets (see _refresh_stage).
    cdef intp_t n_ladders
    cdef double** ladder       # (2 T,) the ladders
    cdef intp_t* ladder_size   # (2 T,) entries computed
    cdef double* ladder_offset # (2 T,)
    cdef intp_t* ladder_a      # (T,) ladder of nu r_j for stage j
    cdef intp_t* ladder_b      # (T,) ladder of nu r_j + nu for stage j
    cdef double* log_prob      # (capacity + 1,) assignment scratch

    # scratch
    cdef intp_t* code          # (T,)
    cdef intp_t* old_code      # (T,)
    cdef intp_t* members       # (N,)
    cdef intp_t* local         # (n,) all -1 between uses
    cdef intp_t* st_local      # (n,) stagewise scratch
    cdef intp_t* unranked      # (n,)
    cdef intp_t* proposal      # (n,)
    cdef char* placed          # (n,)
    cdef char* taken           # (n,)
    cdef double* rho           # (n,)
    cdef double* weight        # (n,)
    cdef double* preceded      # (n, n)
    cdef double* sums          # (T,)
    cdef double* stage_n       # (T,)
    cdef double* code_logw     # (n,)
    cdef Statistics st

    def __cinit__(self):
        statistics_init(&self.st)

    def __init__(
        self, const intp_t[:, ::1] X, intp_t n_items, double alpha, double nu,
        const double[::1] r, const double[::1] log_z0, bint beta_gibbs, bint use_mh,
        intp_t n_gibbs, intp_t n_slices, intp_t init_clusters, bit_generator,
        double slice_width=1.0, alpha_prior=None,
    ):
        cdef intp_t t, i, j, k, n_init
        self.X = X
        self.N = X.shape[0]
        self.T = X.shape[1]
        self.n = n_items
        self.alpha = alpha
        self.log_alpha = log(alpha)
        self.sample_alpha = alpha_prior is not None
        if self.sample_alpha:
            self.alpha_shape, self.alpha_rate = alpha_prior
        self.nu = nu
        self.r = np.array(r, dtype=np.float64)
        self.log_z0 = np.array(log_z0, dtype=np.float64)
        self.beta_gibbs = beta_gibbs
        self.use_mh = use_mh
        self.n_gibbs = n_gibbs
        self.n_slices = n_slices
        self.slice_width = slice_width
        self.bit_generator = getattr(bit_generator, "bit_generator", bit_generator)
        self.rng = bitgen_pointer(self.bit_generator)
        self.log_n_factorial = lgamma(n_items + 1.0)
        self.lengths = np.empty(self.N, dtype=np.intp)
        for i in range(self.N):
            self.lengths[i] = row_length(&X[i, 0], self.T)
        # log (n - t)! / n!: the new-cluster term of eq. (11) less log alpha, by
        # length t (alpha changes when it is sampled)
        self.log_new = np.array(
            [lgamma(n_items - t + 1.0) - self.log_n_factorial
             for t in range(self.T + 1)]
        )
        self.labels = np.empty(self.N, dtype=np.intp)

        self.code = <intp_t*> malloc(max(self.T, 1) * sizeof(intp_t))
        self.old_code = <intp_t*> malloc(max(self.T, 1) * sizeof(intp_t))
        self.members = <intp_t*> malloc(max(self.N, 1) * sizeof(intp_t))
        self.local = <intp_t*> malloc(self.n * sizeof(intp_t))
        self.st_local = <intp_t*> malloc(self.n * sizeof(intp_t))
        self.unranked = <intp_t*> malloc(self.n * sizeof(intp_t))
        self.proposal = <intp_t*> malloc(self.n * sizeof(intp_t))
        self.placed = <char*> malloc(self.n * sizeof(char))
        self.taken = <char*> malloc(self.n * sizeof(char))
        self.rho = <double*> malloc(self.n * sizeof(double))
        self.weight = <double*> malloc(self.n * sizeof(double))
        self.preceded = <double*> malloc(self.n * self.n * sizeof(double))
        self.sums = <double*> malloc(max(self.T, 1) * sizeof(double))
        self.stage_n = <double*> malloc(max(self.T, 1) * sizeof(double))
        self.code_logw = <double*> malloc(self.n * sizeof(double))
        if (self.code == NULL or self.old_code == NULL or self.members == NULL
                or self.local == NULL or self.st_local == NULL or self.unranked == NULL
                or self.proposal == NULL or self.placed == NULL or self.taken == NULL
                or self.rho == NULL or self.weight == NULL or self.preceded == NULL
                or self.sums == NULL or self.stage_n == NULL or self.code_logw == NULL):
            raise MemoryError("could not allocate the chain's work arrays")
        for j in range(self.n):
            self.local[j] = -1
        if beta_gibbs:
            self._make_ladders()
        self._grow(max(2 * init_clusters, 16))

        n_init = max(1, min(init_clusters, self.N))
        with self.bit_generator.lock, nogil:
            self._initialise(n_init)

    def __dealloc__(self):
        statistics_free(&self.st)
        slots_free(&self.slots)
        free(self.size); free(self.log_size); free(self.sigma); free(self.position); free(self.theta)
        free(self.log_norm); free(self.code_sum); free(self.stage_count)
        free(self.beta_base); free(self.beta_lo); free(self.beta_hi)
        if self.ladder != NULL:
            for j in range(self.n_ladders):
                free(self.ladder[j])
        free(self.ladder); free(self.ladder_size); free(self.ladder_offset)
        free(self.ladder_a); free(self.ladder_b)
        free(self.log_prob); free(self.code); free(self.old_code)
        free(self.members); free(self.local)
        free(self.st_local); free(self.unranked); free(self.proposal)
        free(self.placed); free(self.taken); free(self.rho); free(self.weight)
        free(self.preceded); free(self.sums); free(self.stage_n); free(self.code_logw)

    # -- slots ---------------------------------------------------------------

    cdef int _grow(self, intp_t capacity) except -1 nogil:
        """Reallocate every per-slot array for ``capacity`` slots."""
        cdef intp_t c, old = self.slots.capacity
        if capacity <= old:
            return 0
        self.size = <intp_t*> grow_array(self.size, capacity * sizeof(intp_t))
        self.log_size = <double*> grow_array(self.log_size, capacity * sizeof(double))
        self.sigma = <intp_t*> grow_array(self.sigma, capacity * self.n * sizeof(intp_t))
        self.position = <intp_t*> grow_array(self.position, capacity * self.n * sizeof(intp_t))
        self.theta = <double*> grow_array(self.theta, capacity * self.T * sizeof(double))
        self.log_norm = <double*> grow_array(self.log_norm, capacity * (self.T + 1) * sizeof(double))
        self.log_prob = <double*> grow_array(self.log_prob, (capacity + 1) * sizeof(double))
        if self.beta_gibbs:
            self.code_sum = <double*> grow_array(self.code_sum, capacity * self.T * sizeof(double))
            self.stage_count = <double*> grow_array(self.stage_count, capacity * self.T * sizeof(double))
            self.beta_base = <double*> grow_array(self.beta_base, capacity * self.T * sizeof(double))
            self.beta_lo = <intp_t*> grow_array(self.beta_lo, capacity * self.T * sizeof(intp_t))
            self.beta_hi = <intp_t*> grow_array(self.beta_hi, capacity * self.T * sizeof(intp_t))
        for c in range(old, capacity):
            self.size[c] = 0
        slots_grow(&self.slots, capacity)
        return 0

    cdef intp_t _open_slot(self) except -1 nogil:
        cdef intp_t c
        if self.slots.n_free == 0:
            self._grow(2 * self.slots.capacity)
        c = slots_open(&self.slots)
        self.size[c] = 0
        return c

    cdef void _open_slot_id(self, intp_t c) noexcept nogil:
        """Reopen slot c, which _close_slot just pushed on the free stack."""
        slots_open(&self.slots)

    cdef inline void _resize(self, intp_t c, intp_t change) noexcept nogil:
        self.size[c] += change
        self.log_size[c] = log(<double> self.size[c]) if self.size[c] > 0 else -INFINITY

    cdef void _close_slot(self, intp_t c) noexcept nogil:
        slots_close(&self.slots, c)

    # -- per-cluster derived tables -------------------------------------------

    cdef int _refresh(self, intp_t c) except -1 nogil:
        """Recompute what depends on (sigma, theta) and, for Beta-Gibbs, the stats."""
        cdef intp_t j, s, r, top
        cdef intp_t* sig = self.sigma + c * self.n
        cdef intp_t* pos = self.position + c * self.n
        cdef double* th = self.theta + c * self.T
        cdef double* norm = self.log_norm + c * (self.T + 1)
        for r in range(self.n):
            pos[sig[r]] = r
        norm[0] = 0.0
        for j in range(self.T):
            norm[j + 1] = norm[j] + log_psi(self.n - 1 - j, th[j])
        if self.beta_gibbs:
            for j in range(self.T):
                self._refresh_stage(c, j)
        return 0

    def _make_ladders(self):
        """One ladder per distinct offset nu r_j and nu r_j + nu."""
        cdef intp_t j, m, found
        cdef double offset
        self.ladder = <double**> malloc(2 * self.T * sizeof(double*))
        self.ladder_size = <intp_t*> malloc(2 * self.T * sizeof(intp_t))
        self.ladder_offset = <double*> malloc(2 * self.T * sizeof(double))
        self.ladder_a = <intp_t*> malloc(self.T * sizeof(intp_t))
        self.ladder_b = <intp_t*> malloc(self.T * sizeof(intp_t))
        if (self.ladder == NULL or self.ladder_size == NULL or self.ladder_offset == NULL
                or self.ladder_a == NULL or self.ladder_b == NULL):
            raise MemoryError("could not allocate the log-gamma ladders")
        self.n_ladders = 0
        for j in range(2 * self.T):
            offset = self.nu * self.r[j % self.T] + (self.nu if j >= self.T else 0.0)
            found = -1
            for m in range(self.n_ladders):
                if self.ladder_offset[m] == offset:
                    found = m
            if found < 0:
                found = self.n_ladders
                self.ladder[found] = NULL
                self.ladder_size[found] = 0
                self.ladder_offset[found] = offset
                self.n_ladders += 1
            if j < self.T:
                self.ladder_a[j] = found
            else:
                self.ladder_b[j - self.T] = found

    cdef double* _ladder(self, intp_t m, intp_t size) except NULL nogil:
        """Ladder m with at least ``size`` entries L(k) = lgamma(o + k) - lgamma(o).

        Each entry is its own log-gamma (not a running sum of logs), so a
        difference L(k + s) - L(k) carries the rounding of two values only.
        """
        cdef intp_t k, old = self.ladder_size[m], grown
        cdef double offset = self.ladder_offset[m], base
        if size <= old:
            return self.ladder[m]
        grown = max(size, 2 * old, 1024)
        self.ladder[m] = <double*> grow_array(self.ladder[m], grown * sizeof(double))
        base = lgamma(offset)
        for k in range(old, grown):
            self.ladder[m][k] = lgamma(offset + k) - base
        self.ladder_size[m] = grown
        return self.ladder[m]

    cdef int _refresh_stage(self, intp_t c, intp_t j) except -1 nogil:
        """Cache the Beta-Gibbs predictive of stage j of cluster c (Figure 5).

        With A = nu r_j + S_j and B = nu + N_j + 1 the term of a code s is

            log Beta(s + A, B + 1) / Beta(A, B)
              = log B + sum_{u<s} log(A + u) - sum_{u<=s} log(A + B + u)
              = log B + L_a(S + s) - L_a(S) - L_b(M + 1 + s) + L_b(M),

        M = S + N_j + 1, since the code sum S and the count N_j are integers and
        A + B = (nu r_j + nu) + M. So a change of the cluster's statistics costs
        O(1) here, and a (ranking, cluster) pair two look-ups per stage.
        """
        cdef intp_t S = <intp_t> (self.code_sum[c * self.T + j] + 0.5)
        cdef intp_t N = <intp_t> (self.stage_count[c * self.T + j] + 0.5)
        cdef intp_t M = S + N + 1
        cdef double* la = self._ladder(self.ladder_a[j], S + self.n + 1)
        cdef double* lb = self._ladder(self.ladder_b[j], M + self.n + 2)
        self.beta_base[c * self.T + j] = log(self.nu + N + 1.0) - la[S] + lb[M]
        self.beta_lo[c * self.T + j] = S
        self.beta_hi[c * self.T + j] = M + 1
        return 0

    cdef inline void _codes(self, intp_t i, intp_t c, intp_t* out) noexcept nogil:
        codes_one(&self.X[i, 0], self.lengths[i], self.position + c * self.n, out)

    cdef double _gm_log_likelihood(self, intp_t i, intp_t c) noexcept nogil:
        cdef intp_t j, t = self.lengths[i]
        cdef double* th = self.theta + c * self.T
        cdef double value = -self.log_norm[c * (self.T + 1) + t]
        self._codes(i, c, self.code)
        for j in range(t):
            value -= th[j] * self.code[j]
        return value

    cdef double _beta_from_table(self, intp_t i, intp_t c) noexcept nogil:
        """The Beta-Gibbs predictive of ranking i in cluster c, from c's cache."""
        cdef intp_t j, t = self.lengths[i], at
        cdef double value = 0.0
        self._codes(i, c, self.code)
        for j in range(t):
            at = c * self.T + j
            value += (self.beta_base[at]
                      + self.ladder[self.ladder_a[j]][self.beta_lo[at] + self.code[j]]
                      - self.ladder[self.ladder_b[j]][self.beta_hi[at] + self.code[j]])
        return value

    cdef double _beta_direct(self, intp_t i, intp_t c, const intp_t* codes) noexcept nogil:
        """The Beta-Gibbs predictive of ranking i in cluster c, from c's current stats.

        Used for the ranking's own cluster, whose stats have just lost it and whose
        cache is left as it was: if the ranking stays, nothing needs refreshing.
        """
        cdef intp_t j, t = self.lengths[i], S, N, M
        cdef double value = 0.0
        cdef double* la
        cdef double* lb
        for j in range(t):
            S = <intp_t> (self.code_sum[c * self.T + j] + 0.5)
            N = <intp_t> (self.stage_count[c * self.T + j] + 0.5)
            M = S + N + 1
            # No growth needed: the ladders cover c's full statistics, and taking
            # the ranking out only lowers S and M.
            la = self.ladder[self.ladder_a[j]]
            lb = self.ladder[self.ladder_b[j]]
            value += (log(self.nu + N + 1.0) + la[S + codes[j]] - la[S]
                      - lb[M + 1 + codes[j]] + lb[M])
        return value

    cdef void _add_stats(self, intp_t c, intp_t i, const intp_t* codes, double sign) noexcept nogil:
        cdef intp_t j
        for j in range(self.lengths[i]):
            self.code_sum[c * self.T + j] += sign * codes[j]
            self.stage_count[c * self.T + j] += sign

    # -- new clusters -----------------------------------------------------------

    cdef void _place_codes(self, intp_t c, intp_t i) noexcept nogil:
        """sigma with s_j(pi_i | sigma) = code[j]: pi_i(j) takes the code[j]-th free
        position; the other items fill the remaining positions in uniform order."""
        cdef intp_t j, r, k, count, m, slot, t = self.lengths[i]
        cdef intp_t* sig = self.sigma + c * self.n
        cdef const intp_t* x = &self.X[i, 0]
        for r in range(self.n):
            sig[r] = -1
        for j in range(t):
            count = -1
            for r in range(self.n):
                if sig[r] < 0:
                    count += 1
                    if count == self.code[j]:
                        sig[r] = x[j]
                        break
        # The unranked items, shuffled into the free positions (Fisher-Yates).
        for k in range(self.n):
            self.taken[k] = 0
        for j in range(t):
            self.taken[x[j]] = 1
        m = 0
        for k in range(self.n):
            if not self.taken[k]:
                self.unranked[m] = k
                m += 1
        for r in range(self.n):
            if sig[r] < 0:
                slot = uniform_index(self.rng, m)
                sig[r] = self.unranked[slot]
                self.unranked[slot] = self.unranked[m - 1]
                m -= 1

    cdef intp_t _draw_code(self, intp_t top) noexcept nogil:
        """A code in 0..top-1 with P(k) proportional to exp(code_logw[k])."""
        return draw_from_logs(self.code_logw, top, self.rng)

    cdef int _new_cluster(self, intp_t c, intp_t i) except -1 nogil:
        """Parameters of a new cluster given its one ranking pi_i (module docstring)."""
        cdef intp_t j, k, t = self.lengths[i], top
        cdef double a, b, beta
        cdef double* th = self.theta + c * self.T
        if not self.beta_gibbs:
            for j in range(self.T):
                th[j] = theta_exact(self.nu * self.r[j], self.nu, self.n - 1 - j, self.rng)
            for j in range(t):
                top = self.n - j
                for k in range(top):
                    self.code_logw[k] = -th[j] * k
                self.code[j] = self._draw_code(top)
            self._place_codes(c, i)
        else:
            self._sample_sigma_n1(c, i)
            for j in range(self.T):
                self.code_sum[c * self.T + j] = self.code[j] if j < t else 0.0
                self.stage_count[c * self.T + j] = 1.0 if j < t else 0.0
            self._beta_theta(c)
        self._refresh(c)
        return 0

    cdef void _sample_sigma_n1(self, intp_t c, intp_t i) noexcept nogil:
        """Sample-sigma-N1 (Figure 4): P(V_j = k) proportional to Beta(nu r_j + k, nu + 2).

        This is the paper's Beta approximation of the exact law, used by Beta-Gibbs
        only. Consecutive Beta ratios are (a + k - 1) / (a + k - 1 + b).
        """
        cdef intp_t j, k, top, t = self.lengths[i]
        cdef double a, b = self.nu + 2.0
        for j in range(t):
            a = self.nu * self.r[j]
            top = self.n - j
            self.code_logw[0] = 0.0
            for k in range(1, top):
                self.code_logw[k] = self.code_logw[k - 1] + log((a + k - 1.0) / (a + k - 1.0 + b))
            self.code[j] = self._draw_code(top)
        self._place_codes(c, i)

    cdef void _beta_theta(self, intp_t c) noexcept nogil:
        """theta_j | sigma by eq. (12): exp(-theta_j) ~ Beta(nu r_j + S_j, nu + N_j + 1)."""
        cdef intp_t j
        cdef double x
        for j in range(self.T):
            x = random_beta(
                self.rng, self.nu * self.r[j] + self.code_sum[c * self.T + j],
                self.nu + self.stage_count[c * self.T + j] + 1.0,
            )
            self.theta[c * self.T + j] = -log(x) if x > 1e-300 else 690.0

    # -- the sweep ------------------------------------------------------------------

    cdef void _remove(self, intp_t i) noexcept nogil:
        """Take ranking i out of its cluster (closing it if it empties)."""
        cdef intp_t c_old = self.labels[i]
        self._resize(c_old, -1)
        if self.beta_gibbs:
            self._codes(i, c_old, self.old_code)
            self._add_stats(c_old, i, self.old_code, -1.0)
        if self.size[c_old] == 0:
            self._close_slot(c_old)

    cdef double _score(self, intp_t i) noexcept nogil:
        """log_prob[a]: log weight of active cluster a for ranking i (removed from
        its cluster), log_prob[n_active]: of a new cluster. Returns the maximum."""
        cdef intp_t a, c, c_old = self.labels[i]
        cdef double high = -INFINITY
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            if not self.beta_gibbs:
                self.log_prob[a] = self.log_size[c] + self._gm_log_likelihood(i, c)
            elif c == c_old:
                self.log_prob[a] = self.log_size[c] + self._beta_direct(i, c, self.old_code)
            else:
                self.log_prob[a] = self.log_size[c] + self._beta_from_table(i, c)
            if self.log_prob[a] > high:
                high = self.log_prob[a]
        self.log_prob[self.slots.n_active] = self.log_alpha + self.log_new[self.lengths[i]]
        if self.log_prob[self.slots.n_active] > high:
            high = self.log_prob[self.slots.n_active]
        return high

    cdef int _assign(self) except -1 nogil:
        """Resample every c_i given the others (eq. 11, or Figure 5's predictive)."""
        cdef intp_t i, c, c_old, choice, j
        cdef bint alive
        for i in range(self.N):
            c_old = self.labels[i]
            self._remove(i)
            alive = self.size[c_old] > 0
            self._score(i)
            choice = draw_from_logs(self.log_prob, self.slots.n_active + 1, self.rng)
            if choice == self.slots.n_active:
                c = self._open_slot()
                self._new_cluster(c, i)
            else:
                c = self.slots.active[choice]
                if self.beta_gibbs:
                    if c == c_old:
                        self._add_stats(c, i, self.old_code, 1.0)
                    else:
                        self._codes(i, c, self.code)
                        self._add_stats(c, i, self.code, 1.0)
                        # a ranking of length t changes the statistics of its
                        # first t stages only
                        for j in range(self.lengths[i]):
                            self._refresh_stage(c, j)
            if self.beta_gibbs and alive and c != c_old:
                for j in range(self.lengths[i]):
                    self._refresh_stage(c_old, j)
            self._resize(c, 1)
            self.labels[i] = c
        return 0

    cdef void _group_members(self) noexcept nogil:
        """members[member_start[c]:member_start[c + 1]]: the rankings of slot c."""
        slots_group(&self.slots, &self.labels[0], self.N, self.members)

    cdef int _update_parameters(self) except -1 nogil:
        """Per cluster, n_gibbs rounds of sigma | theta, data and theta | sigma, data."""
        cdef intp_t a, c, g, j, d, D
        cdef double log_z
        cdef intp_t* sig
        cdef intp_t* pos
        cdef double* th
        self._group_members()
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            sig = self.sigma + c * self.n
            pos = self.position + c * self.n
            th = self.theta + c * self.T
            if self.beta_gibbs and self.size[c] == 1:
                # Figure 5: a singleton's centre by Sample-sigma-N1, theta by (12).
                self._sample_sigma_n1(c, self.members[self.slots.member_start[c]])
                for j in range(self.T):
                    self.code_sum[c * self.T + j] = self.code[j] if j < self.lengths[self.members[self.slots.member_start[c]]] else 0.0
                    self.stage_count[c * self.T + j] = 1.0 if j < self.lengths[self.members[self.slots.member_start[c]]] else 0.0
                self._beta_theta(c)
                self._refresh(c)
                continue
            statistics_build(
                &self.st, &self.X[0, 0], self.T, self.members + self.slots.member_start[c],
                self.size[c], self.n, self.local,
            )
            D = self.st.n_ranked
            for j in range(self.T):
                self.stage_n[j] = 0.0
                for d in range(D):
                    self.stage_n[j] += self.st.counts[d * self.T + j]
            for g in range(self.n_gibbs):
                weighted_statistics(
                    D, self.T, self.st.counts, self.st.n_pairs, self.st.pair_first,
                    self.st.pair_second, self.st.pair_stage, self.st.pair_count, th,
                    self.weight, self.preceded,
                )
                if self.use_mh:
                    mh_sigma(self.n, D, self.st.items, self.weight, self.preceded,
                             self.rng, sig, self.proposal, self.st_local, self.rho,
                             self.placed, self.unranked)
                    transposition_pass(self.n, D, self.st.items, self.weight,
                                       self.preceded, self.rng, sig, self.st_local)
                else:
                    stagewise(self.n, D, self.st.items, self.weight, self.preceded,
                              self.rng, sig, &log_z, self.st_local, self.rho,
                              self.placed, self.unranked)
                for j in range(self.n):
                    pos[sig[j]] = j
                stage_sums(
                    D, self.T, self.st.items, self.st.counts, self.st.n_pairs,
                    self.st.pair_first, self.st.pair_second, self.st.pair_stage,
                    self.st.pair_count, pos, self.sums,
                )
                if self.beta_gibbs:
                    for j in range(self.T):
                        self.code_sum[c * self.T + j] = self.sums[j]
                        self.stage_count[c * self.T + j] = self.stage_n[j]
                    self._beta_theta(c)
                else:
                    for j in range(self.T):
                        th[j] = slice_theta(
                            th[j], self.nu * self.r[j] + self.sums[j],
                            self.nu + self.stage_n[j], self.n - 1 - j,
                            self.slice_width, self.n_slices, self.rng,
                        )
            self._refresh(c)
        return 0

    cdef double _compute_log_joint(self) noexcept nogil:
        """log p(c, sigma, theta, X | alpha) with the exact model (constants included),
        plus log p(alpha) when alpha is sampled."""
        cdef intp_t a, c, i, j
        cdef double value = crp_log_normaliser(self.alpha, self.slots.n_active, self.N)
        cdef double* th
        if self.sample_alpha:
            value += gamma_log_density(self.alpha, self.alpha_shape, self.alpha_rate)
        for i in range(self.N):
            value += self._gm_log_likelihood(i, self.labels[i])
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            th = self.theta + c * self.T
            value += lgamma(<double> self.size[c]) - self.log_n_factorial
            for j in range(self.T):
                value -= self.nu * (th[j] * self.r[j] + log_psi(self.n - 1 - j, th[j]))
                value -= self.log_z0[j]
        return value

    cdef int _initialise(self, intp_t n_init) except -1 nogil:
        """A random clustering with n_init clusters, then parameters fitted to it."""
        cdef intp_t i, a, c, k, j, r
        cdef intp_t* map_ = self.members  # scratch: cluster index -> slot
        for k in range(n_init):
            map_[k] = -1
        for i in range(self.N):
            k = uniform_index(self.rng, n_init)
            if map_[k] < 0:
                map_[k] = self._open_slot()
            self.labels[i] = map_[k]
            self._resize(map_[k], 1)
        for a in range(self.slots.n_active):
            c = self.slots.active[a]
            for j in range(self.T):
                self.theta[c * self.T + j] = theta_exact(
                    self.nu * self.r[j], self.nu, self.n - 1 - j, self.rng)
            for r in range(self.n):
                self.sigma[c * self.n + r] = r
            shuffle(self.sigma + c * self.n, self.n, self.rng)
            if self.beta_gibbs:
                for j in range(self.T):
                    self.code_sum[c * self.T + j] = 0.0
                    self.stage_count[c * self.T + j] = 0.0
            self._refresh(c)
        self._update_parameters()
        self.log_joint = self._compute_log_joint()
        return 0

    cdef void _update_alpha(self) noexcept nogil:
        """alpha | K, N by Escobar & West (1995): given the clustering, alpha is
        independent of sigma, theta and the data."""
        self.alpha = escobar_west(self.rng, self.alpha, self.slots.n_active, self.N,
                                  self.alpha_shape, self.alpha_rate)
        self.log_alpha = log(self.alpha)

    # -- Python interface ------------------------------------------------------------

    def sweep(self, intp_t n_sweeps=1):
        """Run ``n_sweeps`` full sweeps with the GIL released."""
        cdef intp_t s
        with self.bit_generator.lock, nogil:
            for s in range(n_sweeps):
                self._assign()
                self._update_parameters()
                if self.sample_alpha:
                    self._update_alpha()
            self.log_joint = self._compute_log_joint()

    @property
    def n_clusters(self):
        return self.slots.n_active

    def snapshot(self):
        """The current state, clusters numbered by first appearance in the data.

        Returns
        -------
        labels : ndarray of shape (N,), dtype int32
        sigmas : ndarray of shape (K, n)
        thetas : ndarray of shape (K, T)
        alpha : float
            The concentration of this state.
        sizes : ndarray of shape (K,)
        """
        labels, order = number_by_first_appearance(
            self.labels, self.slots.capacity)
        cdef intp_t capacity = self.slots.capacity
        sigmas = np.asarray(<intp_t[:capacity * self.n]> self.sigma).reshape(capacity, self.n)[order]
        thetas = np.asarray(<double[:capacity * self.T]> self.theta).reshape(capacity, self.T)[order]
        sizes = np.asarray(<intp_t[:capacity]> self.size)[order]
        return labels, sigmas, thetas, self.alpha, sizes

    def assignment_log_weights(self, intp_t i):
        """The unnormalised log-probabilities of ranking i's next assignment.

        For tests: ``weights[k]`` is the weight of the cluster numbered ``k`` in
        :meth:`snapshot` (-inf for ranking i's own cluster if i is alone in it), and
        ``new`` that of a new cluster. The state is left as it was, up to the
        internal order of the clusters.
        """
        cdef intp_t a, c_old = self.labels[i]
        labels = self.snapshot()[0]
        slot_of_label = {}
        for r in range(self.N):
            slot_of_label.setdefault(labels[r], self.labels[r])
        with nogil:
            self._remove(i)
            self._score(i)
        scores = {self.slots.active[a]: self.log_prob[a] for a in range(self.slots.n_active)}
        new = self.log_prob[self.slots.n_active]
        with nogil:
            if self.size[c_old] == 0:
                self._open_slot_id(c_old)
            self._resize(c_old, 1)
            if self.beta_gibbs:
                self._add_stats(c_old, i, self.old_code, 1.0)
        weights = np.array([scores.get(slot_of_label[k], -np.inf) for k in range(len(slot_of_label))])
        return weights, new
