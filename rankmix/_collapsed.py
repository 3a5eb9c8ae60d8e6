# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The base class of the estimators sampled by the collapsed core."""

from functools import partial
from numbers import Integral, Real

import numpy as np

from . import _subcluster_chain
from ._base import (
    INTP_MAX,
    SHARED_MOVE_CONSTRAINTS,
    BaseDPMixture,
    SampledAlphaMixin,
)
from ._collapsed_chain import CollapsedChain
from ._distributed import DaskRows, active_client
from ._sklearn_compat import Interval, StrOptions
from ._subcluster_chain import SubclusterChain

# The most points for the permutation move's O(N^2) tables (the exact dynamic
# program's, or the beam's with tolerance 0): 4 GiB of exact tables.
MAX_QUADRATIC_POINTS = 2**14

# The moves, in the order a sweep runs them; ``sampler`` joins a subset with "+".
_MOVES = ("gibbs", "split-merge", "permutation")
_SAMPLERS = {
    "+".join(m for m, keep in zip(_MOVES, mask) if keep)
    for mask in np.ndindex(2, 2, 2)
    if any(mask)
} | {"subcluster"}


class BaseCollapsedDPMixture(SampledAlphaMixin, BaseDPMixture):
    """A DP mixture of a conjugate family, sampled by ``CollapsedChain``.

    Holds what every such estimator shares: the sampler's parameters and their
    constraints (documented in :class:`DPGaussianClustering`), the Gamma prior of
    alpha, and the chain factory. A subclass adds its priors, validation and
    scoring hooks, and builds the chain with ``self._collapsed_chain(family)``.
    A draw's parameters end with ``(alpha, sizes)``, as ``CollapsedChain.snapshot``
    returns them.
    """

    _parameter_constraints: dict = {
        **BaseDPMixture._parameter_constraints,
        "sampler": [StrOptions(_SAMPLERS)],
        "permutation_dp": [StrOptions({"beta", "exact"})],
        "beam_tolerance": [Interval(Real, 0, 1, closed="left")],
        **SHARED_MOVE_CONSTRAINTS,
        "init_clusters": [Interval(Integral, 1, INTP_MAX, closed="both")],
    }

    def _store_parameters(self, arguments):
        """The body of a subclass's ``__init__``: store its arguments as given.

        ``arguments`` is the ``locals()`` of ``__init__``, whose explicit signature
        is what scikit-learn's ``get_params`` reads.
        """
        for name in self._get_param_names():
            setattr(self, name, arguments[name])

    def _extra_traces(self):
        # the size of the largest cluster mixes slower than K when whole groups
        # must move (Liang et al. 2007, Fig. 3(l)); it is cheap to trace
        return (*super()._extra_traces(), "largest_cluster_size")

    def _check_sampler(self):
        """Refuse a sampler that would never move."""
        if self.sampler.split("+") == ["split-merge"] and self.n_split_merge == 0:
            raise ValueError(
                "sampler='split-merge' with n_split_merge=0 would never move; "
                "set n_split_merge >= 1."
            )
        if self.sampler == "subcluster" and self.n_split_merge == 0:
            raise ValueError(
                "sampler='subcluster' with n_split_merge=0 could never open a "
                "cluster (its splits are its only new clusters); set "
                "n_split_merge >= 1."
            )

    def _rows_on_workers(self, X):
        """The dask array X as ``DaskRows`` of the active client, its shape checked
        as scikit-learn checks an X in process (``n_features_in_`` set)."""
        rows = DaskRows(X, active_client())
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        self.n_features_in_ = rows.shape[1]
        return rows

    def _chain_over(self, model, X, empty):
        """The chain factory over ``model.family(X)``; for rows on Dask workers
        (``DaskRows``), over a family of the rows ``empty`` (none), the workers
        binding ``model`` to their own rows."""
        if isinstance(X, DaskRows):
            return self._collapsed_chain(model.family(empty), rows=X.bind(model))
        return self._collapsed_chain(model.family(X))

    # -- rebuilding a trimmed draw from the training rows --------------------------

    def _family_over(self, rows, n_rows):
        """The chains' model's family over ``rows``, the chains' rows (None: over
        no rows, to read the states of ``n_rows`` rows held elsewhere)."""
        raise NotImplementedError(f"{type(self).__name__} trims no draw")

    def _chain_rows(self):
        """The training rows as the chains saw them (in their units; fetched
        here once if they are on Dask workers)."""
        raise NotImplementedError(f"{type(self).__name__} trims no draw")

    def _whole_from_described(self, parameters, described):
        """A trimmed draw's ``parameters`` made whole from ``described``, what
        the family's ``describe`` gives of the draw's cluster states."""
        raise NotImplementedError(f"{type(self).__name__} trims no draw")

    def _rebuild_source(self):
        """``(family, rows)``: in process the family over the chains' rows, as
        both; during a Dask fit a family of no rows (to read the states) and the
        rows as ``DaskRows`` on the workers."""
        rows = self._rows_elsewhere
        if rows is not None:
            return self._family_over(None, rows.shape[0]), rows
        rows = self._chain_rows()
        family = self._family_over(rows, rows.shape[0])
        return family, family

    def _rebuilt_draw(self, d, source):
        """Kept draw d made whole from the training rows and its labels.

        Each cluster's state comes from the block moments of its rows, merged
        in block order as the sub-cluster chain builds its states (the collapsed
        chains' running updates agree with it to rounding); on Dask the workers
        sum the moments, and no row is fetched. One pass over the rows:
        O(nnz(X) + K V) for counts (K V per block of ``ROW_BLOCK`` rows),
        O(N d^2) for full covariances. ``source``: ``_rebuild_source()``.
        """
        family, rows = source
        parameters = self._draws[d]
        labels, n_clusters = self._chain_label_samples[d], len(parameters[-1])
        if labels.shape != (self._n_train,):
            raise ValueError(
                f"the labels of kept draw {d} have shape {labels.shape}, expected "
                f"({self._n_train},): one per training row. The fitted state was "
                "edited; fit again."
            )
        try:
            if isinstance(rows, DaskRows):
                states = rows.cluster_states(family, labels, n_clusters)
            else:
                members = np.split(
                    np.argsort(labels, kind="stable"),
                    np.cumsum(np.bincount(labels, minlength=n_clusters))[:-1],
                )
                block = _subcluster_chain.ROW_BLOCK  # read here: tests may patch it
                states = None
                for k, rows_of in enumerate(members):
                    state = rows.blocked_state(rows_of, block)
                    if states is None:  # one (K, width) array, filled row by row
                        states = np.empty((n_clusters, len(state)))
                    states[k] = state
        except FloatingPointError as error:
            raise self._numerical_failure(error) from error
        return self._whole_from_described(parameters, family.describe(states))

    def _collapsed_chain(self, family, rows=None):
        """``make_chain(bit_generator)`` for the engine, over ``family``.

        A partial, not a closure: it pickles, so that chains can run in other
        processes; the engine passes the bit generator. The family is read-only
        during sweeps, and each chain runs on its own copy of its scratch.
        ``rows`` (sub-cluster sampler only) holds the rows elsewhere
        (``_distributed.DaskRows``), and ``family`` then none.
        """
        n_points = family.n_points if rows is None else rows.shape[0]
        if self.sampler == "subcluster":
            return partial(
                _make_subcluster_chain,
                family,
                alpha=float(self.alpha),
                n_split_merge=self.n_split_merge,
                alpha_prior=self._alpha_prior,
                init_clusters=min(self.init_clusters, n_points),
                sequential_init=self.init == "sequential",
                remote=rows,
            )
        moves = self.sampler.split("+")
        if "permutation" in moves:
            self._check_permutation_memory(n_points)
        return partial(
            _make_chain,
            family,
            alpha=float(self.alpha),
            gibbs="gibbs" in moves,
            n_split_merge=self.n_split_merge if "split-merge" in moves else 0,
            alpha_prior=self._alpha_prior,
            # more initial clusters than points would only size slot arrays
            init_clusters=min(self.init_clusters, family.n_points),
            permutation=self.permutation_dp if "permutation" in moves else None,
            beam_tolerance=float(self.beam_tolerance),
            burn_in=self.burn_in,
            sequential_init=self.init == "sequential",
        )

    def _check_permutation_memory(self, n_points):
        """Refuse a permutation move whose O(N^2) tables would not fit in memory.

        The exact dynamic program holds two (N + 1) x (N + 1) float64 tables, and
        the beam with ``beam_tolerance=0`` keeps every start open, N (N + 1) / 2
        entries of 16 bytes; the default beam keeps about O(N).
        """
        if n_points <= MAX_QUADRATIC_POINTS:
            return
        if self.permutation_dp == "exact":
            what = "permutation_dp='exact'", 16 * (n_points + 1) ** 2
        elif self.beam_tolerance == 0:
            what = "beam_tolerance=0", 8 * n_points * (n_points + 1)
        else:
            return
        raise ValueError(
            f"{what[0]} with the permutation move holds tables that grow with "
            f"the square of the number of points: {what[1] / 2**30:,.1f} GiB for "
            f"{n_points:,} points (the rows of X, each repeated as often as its "
            f"sample_weight says). It is meant for small data, at most "
            f"{MAX_QUADRATIC_POINTS:,} points; use permutation_dp='beta' with "
            "beam_tolerance > 0 (the defaults)."
        )


def _make_chain(family, bit_generator, **options):
    """``CollapsedChain(family, bit_generator=bit_generator, **options)``."""
    return CollapsedChain(family, bit_generator=bit_generator, **options)


def _make_subcluster_chain(family, bit_generator, **options):
    """``SubclusterChain(family, bit_generator=bit_generator, **options)``."""
    return SubclusterChain(family, bit_generator=bit_generator, **options)
