# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The base class of conjugate cluster families (declarations in ``_family.pxd``)."""

import numpy as np

from ._rng cimport bitgen_pointer


cdef class Family:
    """A conjugate cluster family bound to one data set, for ``CollapsedChain``.

    A subclass fills ``c`` (the ``ConjugateFamily`` callbacks, with a context it
    owns and that holds the data and the callbacks' scratch) and ``n_points``, and
    provides the Python methods below. It must pickle (``__reduce__``): chain
    factories run chains in other processes, and :meth:`copy` relies on it.
    """

    failure_message = "A cluster's state is not numerically valid."
    # whether ``rows`` gives a sparse matrix (rows of counts): a chain whose rows
    # are held elsewhere then counts what a read brings by the rows' stored
    # values, not by rows x features
    sparse_rows = False
    # None, or H: the block moments' columns from H on hold integers that
    # ``moments_merge`` adds, small enough to be summed exactly in doubles (the
    # same sum in any order), so rows held elsewhere send them summed over
    # their blocks (``_subcluster_chain.SplitMoments``)
    exact_moments_from = None

    def copy(self):
        """A family of the same model and data with scratch of its own.

        The callbacks write to the context's scratch, so each chain runs on its own
        copy. The model and the data are shared, not copied.
        """
        factory, arguments = self.__reduce__()
        return factory(*arguments)

    def describe(self, states):
        """The parameter tuple of a snapshot from its ``(K, width)`` states.

        The chain's ``snapshot()`` returns ``(labels, *describe(states), alpha,
        sizes)``; what comes in between is the estimator's business.
        """
        raise NotImplementedError

    def rebound(self, X):
        """The same model bound to other rows ``X`` (its tables, sized for the
        training rows, are shared): a Dask worker's block of rows, or the one row a
        client-side move reads. A subclass whose ``__reduce__`` arguments are not
        ``(model, X)`` overrides this."""
        factory, arguments = self.__reduce__()
        return factory(arguments[0], X)

    def log_prior_predictive(self):
        """(n_points,) log p(x_i) of each point under the prior (an empty cluster's
        predictive): the new-cluster weights of the samplers, less log alpha."""
        cdef intp_t i, n = self.n_points
        cdef double[::1] state = np.empty(self.c.segments.width)
        cdef double[::1] out = np.empty(n)
        self.c.segments.reset(self.c.segments.context, &state[0])
        for i in range(n):
            out[i] = self.c.log_predictive(self.c.segments.context, &state[0], i)
        return np.asarray(out)

    def rows(self, indices):
        """The rows ``indices`` of the data as given to the family (for ``fixed``:
        not whitened; a sparse matrix stays sparse), a copy."""
        data = self.__reduce__()[1][1]
        indices = np.asarray(indices, dtype=np.intp)
        if hasattr(data, "tocsr"):
            return data[indices]
        return np.asarray(data)[indices]

    @property
    def has_block_moments(self):
        """Whether the family builds states from block moments (``_family.pxd``)."""
        return self.c.moments_width > 0

    def blocked_state(self, members, intp_t row_block):
        """The state of the rows ``members`` (sorted) from block moments, as the
        sub-cluster chain builds it (a trimmed Gaussian draw is rebuilt so):
        the moments of each run of members within a block of ``row_block`` rows,
        merged in block order."""
        if not self.has_block_moments:
            raise ValueError("this family has no block moments")
        cdef const intp_t[::1] idx = np.ascontiguousarray(members, dtype=np.intp)
        cdef intp_t M = self.c.moments_width, start = 0, stop, n = idx.shape[0]
        # the members come from a fit's stored labels, which a user may edit:
        # a row past the data would be read (and, for counts, written) blindly
        if n and not 0 <= np.min(idx) <= np.max(idx) < self.n_points:
            raise ValueError(
                f"members must be rows 0..{self.n_points - 1} of the family's data."
            )
        # as the chain: an empty accumulator has only its count set (its other
        # entries are whatever the scratch held: NaN here, so that a family that
        # read them would show it)
        cdef double[::1] acc = np.full(M, np.nan)
        cdef double[::1] part = np.full(M, np.nan)
        acc[0] = 0.0
        cdef double[::1] state = np.empty(self.c.segments.width)
        while start < n:
            stop = start
            while stop < n and idx[stop] // row_block == idx[start] // row_block:
                stop += 1
            self.c.moments(self.c.segments.context, &idx[start], stop - start, &part[0])
            self.c.moments_merge(self.c.segments.context, &acc[0], &part[0])
            start = stop
        if self.c.moments_state(self.c.segments.context, &acc[0], &state[0]) < 0:
            raise FloatingPointError(self.failure_message)
        return np.asarray(state)

    @property
    def has_explicit_parameters(self):
        """Whether the family draws explicit parameters (the sub-cluster sampler)."""
        return self.c.param_width > 0

    def _rebuilt_state(self, const intp_t[::1] members):
        """The state of the points ``members`` (``rebuild``; for the checks below)."""
        cdef double[::1] state = np.empty(self.c.segments.width)
        if self.c.rebuild(self.c.segments.context, &state[0],
                          &members[0] if members.shape[0] else NULL,
                          members.shape[0]) < 0:
            raise FloatingPointError(self.failure_message)
        return np.asarray(state)

    def _explicit_check(self, members, bit_generator, intp_t n_draws, points):
        """Explicit parameters against the collapsed predictive (for tests).

        Returns ``(log_likelihoods, log_predictive)``: (n_draws, len(points)) values
        of log f(x_p | theta_r) for draws theta_r | the points ``members``, and the
        (len(points),) log p(x_p | members). The mean over r of f(x_p | theta_r)
        estimates the predictive.
        """
        if not self.has_explicit_parameters:
            raise ValueError("this family has no explicit parameters")
        cdef const intp_t[::1] idx = np.ascontiguousarray(members, dtype=np.intp)
        cdef const intp_t[::1] at = np.ascontiguousarray(points, dtype=np.intp)
        cdef double[::1] state = self._rebuilt_state(idx)
        cdef double[::1] params = np.empty(self.c.param_width)
        cdef double[::1] work = np.empty(max(self.c.work_width, 1))
        cdef double[:, ::1] out = np.empty((n_draws, at.shape[0]))
        cdef double[::1] predictive = np.empty(at.shape[0])
        cdef intp_t r, k
        for k in range(at.shape[0]):
            predictive[k] = self.c.log_predictive(self.c.segments.context, &state[0], at[k])
        rng = bitgen_pointer(bit_generator)
        for r in range(n_draws):
            if self.c.draw_params(self.c.segments.context, &state[0], rng, &params[0]) < 0:
                raise FloatingPointError(self.failure_message)
            for k in range(at.shape[0]):
                out[r, k] = self.c.log_likelihood(
                    self.c.segments.context, &params[0], at[k], &work[0])
        return np.asarray(out), np.asarray(predictive)

    def _rows_check(self, members, bit_generator, points):
        """One draw of theta | the points ``members``, and log f(x_p | theta) of the
        rows ``points`` two ways (for tests): row by row (``log_likelihood``) and in
        blocks of ``ROWS_BLOCK`` (``family_log_likelihood_rows``, with the row
        indices; and from a first row, where ``points`` run consecutively)."""
        if not self.has_explicit_parameters:
            raise ValueError("this family has no explicit parameters")
        cdef const intp_t[::1] idx = np.ascontiguousarray(members, dtype=np.intp)
        cdef const intp_t[::1] at = np.ascontiguousarray(points, dtype=np.intp)
        cdef intp_t n = at.shape[0], k, m, first
        cdef double[::1] state = self._rebuilt_state(idx)
        cdef double[::1] params = np.empty(self.c.param_width)
        cdef double[::1] work = np.empty(
            max(self.c.work_width, family_rows_work_width(&self.c), 1))
        cdef double[::1] by_row = np.empty(n)
        cdef double[::1] by_block = np.empty(n)
        cdef double[::1] by_range = np.full(n, np.nan)
        if self.c.draw_params(self.c.segments.context, &state[0],
                              bitgen_pointer(bit_generator), &params[0]) < 0:
            raise FloatingPointError(self.failure_message)
        consecutive = n > 0 and bool(np.all(np.diff(np.asarray(at)) == 1))
        for k in range(n):
            by_row[k] = self.c.log_likelihood(
                self.c.segments.context, &params[0], at[k], &work[0])
        for first in range(0, n, ROWS_BLOCK):
            m = min(ROWS_BLOCK, n - first)
            family_log_likelihood_rows(&self.c, &params[0], &at[first], 0, m,
                                       &by_block[first], &work[0])
            if consecutive:
                family_log_likelihood_rows(&self.c, &params[0], NULL, at[first], m,
                                           &by_range[first], &work[0])
        return np.asarray(by_row), np.asarray(by_block), np.asarray(by_range)

    def _own_weight_check(self, members):
        """A member's Gibbs weight for its cluster as if removed (for tests): for
        each p of ``members``, ``own_log_weight`` from the state of all of them
        (NaN where the family has none), and ``state[log_weight] + log_kernel``
        from the state ``remove`` leaves and from the state rebuilt without p."""
        cdef const intp_t[::1] idx = np.ascontiguousarray(members, dtype=np.intp)
        cdef intp_t k, n = idx.shape[0]
        cdef double[::1] whole = self._rebuilt_state(idx)
        cdef double[::1] state
        cdef double[::1] own = np.full(n, np.nan)
        cdef double[::1] removed = np.empty(n)
        cdef double[::1] rebuilt = np.empty(n)
        for k in range(n):
            if self.c.own_log_weight != NULL:
                own[k] = self.c.own_log_weight(self.c.segments.context, &whole[0],
                                               idx[k])
            state = np.array(whole)
            if self.c.remove(self.c.segments.context, &state[0], idx[k]) < 0:
                raise FloatingPointError(self.failure_message)
            removed[k] = state[self.c.log_weight] + self.c.log_kernel(
                self.c.segments.context, &state[0], idx[k])
            state = self._rebuilt_state(np.delete(np.asarray(idx), k))
            rebuilt[k] = state[self.c.log_weight] + self.c.log_kernel(
                self.c.segments.context, &state[0], idx[k])
        return np.asarray(own), np.asarray(removed), np.asarray(rebuilt)

    def _kernel_rows_check(self, members, intp_t first, intp_t m):
        """``log_kernel_rows`` of the points first..first+m-1 (m <= ROWS_BLOCK) for
        the state of ``members``, and ``log_kernel`` of each (for tests)."""
        if self.c.log_kernel_rows == NULL:
            raise ValueError("this family has no log_kernel_rows")
        if not 0 < m <= ROWS_BLOCK or first < 0 or first + m > self.n_points:
            raise ValueError("the points must be m <= ROWS_BLOCK rows of the data")
        cdef double[::1] state = self._rebuilt_state(
            np.ascontiguousarray(members, dtype=np.intp))
        cdef double[::1] by_rows = np.empty(m)
        cdef double[::1] one_by_one = np.empty(m)
        cdef intp_t r
        self.c.log_kernel_rows(self.c.segments.context, &state[0], first, m,
                               &by_rows[0])
        for r in range(m):
            one_by_one[r] = self.c.log_kernel(self.c.segments.context, &state[0],
                                              first + r)
        return np.asarray(by_rows), np.asarray(one_by_one)

    def _merged_state_check(self, members_a, members_b):
        """The state of two sets of points together (for tests): merged from the
        two states' moments (``family_merged_state``, as a merge proposal builds
        it) and rebuilt from the union."""
        if self.c.state_moments == NULL:
            raise ValueError("this family has no state_moments")
        cdef double[::1] state_a = self._rebuilt_state(
            np.ascontiguousarray(members_a, dtype=np.intp))
        cdef double[::1] state_b = self._rebuilt_state(
            np.ascontiguousarray(members_b, dtype=np.intp))
        cdef double[::1] moments = np.empty(2 * self.c.moments_width)
        cdef double[::1] merged = np.empty(self.c.segments.width)
        if family_merged_state(&self.c, &state_a[0], &state_b[0], &moments[0],
                               &merged[0]) < 0:
            raise FloatingPointError(self.failure_message)
        union = np.concatenate([np.asarray(members_a), np.asarray(members_b)])
        return np.asarray(merged), self._rebuilt_state(
            np.ascontiguousarray(np.sort(union), dtype=np.intp))
