# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The Mallows kernel between top-t rankings (Lebanon & Mao 2008), in closed form.

The kernel between a query top-t ranking ``q`` and a data top-t' ranking ``x``
over ``n`` items, with one dispersion ``theta``, is the probability of the coset of
``q`` (all its completions) under "draw sigma uniformly among the completions of
``x``, then a full ranking from the Mallows model centred at sigma"::

    log K(q, x) = -theta D(q, x) + sum_{j=1}^{k} log(psi_{m-j}(theta) / (m-j+1))
                  - sum_{j=1}^{t} log psi_{n-j}(theta),

with ``m = n - t'`` the number of items ``x`` leaves unranked, ``k`` the number of
items of ``q`` among them, and ``D`` the number of pairs whose order ``q`` fixes
and ``x`` fixes the other way (see MallowsKernelDensity's Notes for the
derivation). With ``c_j`` the position in ``x`` of the ``j``-th item of ``q``
(``t'`` when ``x`` leaves it unranked),

    D = sum_j [c_j - #{l < j : c_l < c_j}],

the same inversion count as the codes of ``q`` against a central ranking, so it
is computed by ``codes_one`` over the positions ``c``. A pair costs at most
O(t' + t^2) integer work, whatever ``n``.

Every input reaching these functions has been validated in Python (ids in
``[0, n_items)``, rows well formed): with bounds checks off, they trust it.
"""

import numpy as np

from libc.math cimport INFINITY, exp, log

from ._kernels cimport check_rankings, codes_one, intp_t, log_psi, row_length


def _tables(intp_t n_items, intp_t t_data, intp_t t_query, double theta):
    """The buffers behind a ``Tables``, as NumPy arrays the caller keeps alive.

    ``log_free[tx, k] = sum_{j=1}^{k} log(psi_{m-j}(theta) / (m - j + 1))`` with
    ``m = n - tx``: log E exp(-theta * free discordances) for a data ranking of
    length ``tx`` that leaves ``k`` of the query's items unranked.
    ``log_norm[t] = sum_{j=1}^{t} log psi_{n-j}(theta)``: the GM normaliser of a
    top-t query.
    """
    cdef intp_t tx, k, m
    cdef intp_t width = max(t_query, 1)
    cdef double[:, ::1] log_free = np.zeros((t_data + 1, t_query + 1))
    cdef double[::1] log_norm = np.zeros(t_query + 1)
    for tx in range(1, t_data + 1):
        m = n_items - tx
        for k in range(1, min(t_query, m) + 1):
            log_free[tx, k] = (
                log_free[tx, k - 1] + log_psi(m - k, theta) - log(m - k + 1.0)
            )
    for k in range(1, t_query + 1):
        log_norm[k] = log_norm[k - 1] + log_psi(n_items - k, theta)
    return (
        np.asarray(log_free),
        np.asarray(log_norm),
        np.full(n_items, -1, dtype=np.intp),
        np.empty(width, dtype=np.intp),
        np.empty(width, dtype=np.intp),
        np.arange(width, dtype=np.intp),
    )


cdef Tables point_tables(tuple buffers, double theta):
    cdef double[:, ::1] log_free = buffers[0]
    cdef double[::1] log_norm = buffers[1]
    cdef intp_t[::1] query_position = buffers[2], position = buffers[3]
    cdef intp_t[::1] code = buffers[4], order = buffers[5]
    cdef Tables tables
    tables.theta = theta
    tables.free_width = log_free.shape[1]
    tables.log_free = &log_free[0, 0]
    tables.log_norm = &log_norm[0]
    tables.query_position = &query_position[0]
    tables.position = &position[0]
    tables.code = &code[0]
    tables.order = &order[0]
    return tables


cdef double log_kernel_one(
    const Tables* tables,
    intp_t t,                         # length of the query, marked in query_position
    const intp_t* x,                  # IN (tx,) data ranking
    intp_t tx,
) noexcept nogil:
    """log K(q, x) without the query's normaliser ``log_norm[t]``."""
    cdef intp_t* c = tables.position
    cdef intp_t* code = tables.code
    cdef intp_t j, p, r, discordant = 0, unranked = 0
    for j in range(t):
        c[j] = tx
    for p in range(tx):
        r = tables.query_position[x[p]]
        if r >= 0:
            c[r] = p
    codes_one(tables.order, t, c, code)
    for j in range(t):
        discordant += code[j]
        unranked += c[j] == tx
    return (
        -tables.theta * discordant
        + tables.log_free[tx * tables.free_width + unranked]
    )


def log_density(
    const intp_t[:, ::1] Q,      # IN (M, t_query) queries, -1 padded
    const intp_t[:, ::1] X,      # IN (N, t_data) data rankings, -1 padded
    intp_t n_items,
    double theta,
):
    """log (1/N) sum_i K(Q[q], X[i]) for every query, shape (M,).

    The sum over the data is a running log-sum-exp per query: O(n + t) memory
    besides the inputs and the output, O(M N (t_data + t_query^2)) time.
    """
    cdef intp_t n_queries = Q.shape[0], t_query = Q.shape[1]
    cdef intp_t n_data = X.shape[0], t_data = X.shape[1]
    # the fitted rankings index the query's table: checked, as a user may
    # have edited them (see _kernels.check_rankings)
    check_rankings(Q, n_items, "the queries")
    check_rankings(X, n_items, "the rankings")
    cdef tuple buffers = _tables(n_items, t_data, t_query, theta)
    cdef Tables tables = point_tables(buffers, theta)
    cdef double[::1] out = np.empty(n_queries, dtype=np.float64)
    cdef intp_t[::1] data_length = np.empty(n_data, dtype=np.intp)
    cdef intp_t a, i, t
    cdef double value, top, total
    with nogil:
        for i in range(n_data):
            data_length[i] = row_length(&X[i, 0], t_data)
        for a in range(n_queries):
            t = row_length(&Q[a, 0], t_query)
            mark_query(&Q[a, 0], t, tables.query_position, True)
            top = -INFINITY
            total = 0.0
            for i in range(n_data):
                value = log_kernel_one(&tables, t, &X[i, 0], data_length[i])
                # streaming log-sum-exp: rescale the running sum on a new maximum
                if value > top:
                    total = total * exp(top - value) + 1.0
                    top = value
                else:
                    total += exp(value - top)
            mark_query(&Q[a, 0], t, tables.query_position, False)
            out[a] = top + log(total) - log(<double>n_data) - tables.log_norm[t]
    return np.asarray(out)


def log_kernel_pairs(
    const intp_t[:, ::1] Q,      # IN (M, t_query) queries, -1 padded
    const intp_t[:, ::1] X,      # IN (M, t_data) data rankings, -1 padded
    intp_t n_items,
    double theta,
):
    """log K(Q[a], X[a]) for each row a, shape (M,): the kernel, for the tests."""
    cdef intp_t n_pairs = Q.shape[0], t_query = Q.shape[1], t_data = X.shape[1]
    if X.shape[0] != n_pairs:
        raise ValueError("Q and X must have the same number of rows.")
    check_rankings(Q, n_items, "the queries")
    check_rankings(X, n_items, "the rankings")
    cdef tuple buffers = _tables(n_items, t_data, t_query, theta)
    cdef Tables tables = point_tables(buffers, theta)
    cdef double[::1] out = np.empty(n_pairs, dtype=np.float64)
    cdef intp_t a, t
    with nogil:
        for a in range(n_pairs):
            t = row_length(&Q[a, 0], t_query)
            mark_query(&Q[a, 0], t, tables.query_position, True)
            out[a] = log_kernel_one(
                &tables, t, &X[a, 0], row_length(&X[a, 0], t_data)
            ) - tables.log_norm[t]
            mark_query(&Q[a, 0], t, tables.query_position, False)
    return np.asarray(out)
