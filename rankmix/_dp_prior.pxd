# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The Dirichlet-process prior's own terms, for every chain whatever its clusters.

The Chinese restaurant process gives a clustering of N points into clusters of
sizes n_1..n_K the probability

    p(c | alpha) = alpha^K prod_k Gamma(n_k) Gamma(alpha) / Gamma(alpha + N),

and, under a Gamma(a, b) prior (shape, rate), alpha | K, N is drawn by Escobar &
West (1995)'s auxiliary-variable step. Neither depends on the cluster family,
and neither does the draw that starts every split-merge move (the pair and the
other points of their clusters), which is here too.
"""

from libc.math cimport lgamma, log
from numpy.random cimport bitgen_t

from ._rng cimport random_beta, random_standard_gamma, shuffle, uniform, uniform_index


cdef inline double crp_log_normaliser(double alpha, Py_ssize_t K, Py_ssize_t N) noexcept nogil:
    """K log alpha + log Gamma(alpha) - log Gamma(alpha + N).

    log p(c | alpha) is this plus sum_k log Gamma(n_k), which the caller adds
    cluster by cluster.
    """
    return K * log(alpha) + lgamma(alpha) - lgamma(alpha + N)


cdef inline double gamma_log_density(double x, double shape, double rate) noexcept nogil:
    """log of the Gamma(shape, rate) density at x > 0."""
    return (shape * log(rate) - lgamma(shape)
            + (shape - 1.0) * log(x) - rate * x)


cdef inline double escobar_west(
        bitgen_t* rng, double alpha, Py_ssize_t n_clusters, Py_ssize_t N,
        double shape, double rate) noexcept nogil:
    """A draw of alpha | K, N under a Gamma(shape, rate) prior (Escobar & West 1995).

    With eta ~ Beta(alpha + 1, N), alpha | eta, K is the mixture
    pi Gamma(a + K, b - log eta) + (1 - pi) Gamma(a + K - 1, b - log eta),
    pi / (1 - pi) = (a + K - 1) / (N (b - log eta)), for a = shape, b = rate.
    Two uniforms' worth of draws: one Beta, one uniform, one Gamma.
    """
    cdef double eta, b, odds, a_post, K = n_clusters, draw
    eta = random_beta(rng, alpha + 1.0, <double> N)
    b = rate - log(eta)
    odds = (shape + K - 1.0) / (N * b)
    a_post = shape + K if uniform(rng) * (1.0 + odds) < odds else shape + K - 1.0
    draw = random_standard_gamma(rng, a_post) / b
    # a Gamma draw of tiny shape can round to 0, where log alpha is undefined
    if draw < 1e-300:
        draw = 1e-300
    return draw


cdef inline Py_ssize_t split_merge_pair(
        bitgen_t* rng, const Py_ssize_t* labels, Py_ssize_t N, Py_ssize_t* i,
        Py_ssize_t* j, Py_ssize_t* others) noexcept nogil:
    """The start of a split-merge move: a uniform ordered pair of distinct points.

    Sets ``i`` and ``j`` (N >= 2 is the caller's to check) and puts the other
    points of their clusters (by ``labels``) in ``others``, in a uniform random
    order; returns how many. Both directions of the move draw these alike, so
    they cancel from its Metropolis-Hastings ratio.
    """
    i[0] = uniform_index(rng, N)
    j[0] = uniform_index(rng, N - 1)
    if j[0] >= i[0]:
        j[0] += 1
    return split_merge_others(rng, labels, N, i[0], j[0], others)


cdef inline Py_ssize_t split_merge_others(
        bitgen_t* rng, const Py_ssize_t* labels, Py_ssize_t N, Py_ssize_t i,
        Py_ssize_t j, Py_ssize_t* others) noexcept nogil:
    """``split_merge_pair``'s second half, for a pair (i, j) drawn beforehand (a
    chain that reads the pair's rows first): the other points of their
    clusters, in a uniform random order, in ``others``; returns how many."""
    cdef Py_ssize_t k, m = 0, ci = labels[i], cj = labels[j]
    for k in range(N):
        if k != i and k != j and (labels[k] == ci or labels[k] == cj):
            others[m] = k
            m += 1
    shuffle(others, m, rng)
    return m


cdef inline double split_select_log_ratio(
        Py_ssize_t K, Py_ssize_t n_a, Py_ssize_t n_b) noexcept nogil:
    """log [pick the merge back] - log [pick the split], but a merge's partner.

    The samplers that pick a split-merge move by clusters pick a split by a
    cluster uniformly among the K and an ordered pair (i, j) of its n_c = n_a +
    n_b points, a merge by a cluster A uniformly, its partner B (uniformly, or
    as the chain weighs it) and i in A, j in B uniformly. A split of c into A
    (with i) and B (with j) is undone by the merge of A and B picking (i, j)
    among K + 1 clusters, so its Metropolis-Hastings ratio gains

        log [1 / ((K + 1) n_a n_b)] - log [1 / (K n_c (n_c - 1))]

    plus log P(B | A) in the split state; a merge of (A, B) among K clusters
    gains minus this at K - 1, less log P(B | A) in the merge's state.
    """
    cdef Py_ssize_t n_c = n_a + n_b
    return (-log(<double> (K + 1)) - log(<double> n_a * n_b)
            + log(<double> K) + log(<double> n_c * (n_c - 1)))
