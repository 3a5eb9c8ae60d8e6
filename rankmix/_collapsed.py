# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The base class of the estimators sampled by the collapsed core."""

from functools import partial
from numbers import Integral, Real

import numpy as np

from ._base import INTP_MAX, BaseDPMixture
from ._collapsed_chain import CollapsedChain
from ._sklearn_compat import Interval, StrOptions

# The moves, in the order a sweep runs them; ``sampler`` joins a subset with "+".
_MOVES = ("gibbs", "split-merge", "permutation")
_SAMPLERS = {
    "+".join(m for m, keep in zip(_MOVES, mask) if keep)
    for mask in np.ndindex(2, 2, 2)
    if any(mask)
}
# The largest concentration alpha_prior may let the chains draw.
_MAX_ALPHA = 1e300


class BaseCollapsedDPMixture(BaseDPMixture):
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
        # counts reach compiled code as np.intp: 2**63 is a parameter error
        "n_split_merge": [Interval(Integral, 0, INTP_MAX, closed="both")],
        "alpha_prior": ["array-like", None],
        "init": [StrOptions({"sequential", "random"})],
        "init_clusters": [Interval(Integral, 1, INTP_MAX, closed="both")],
    }

    def _store_parameters(self, arguments):
        """The body of a subclass's ``__init__``: store its arguments as given.

        ``arguments`` is the ``locals()`` of ``__init__``, whose explicit signature
        is what scikit-learn's ``get_params`` reads.
        """
        for name in self._get_param_names():
            setattr(self, name, arguments[name])

    def _check_sampler(self):
        """Refuse a sampler that would never move."""
        if self.sampler.split("+") == ["split-merge"] and self.n_split_merge == 0:
            raise ValueError(
                "sampler='split-merge' with n_split_merge=0 would never move; "
                "set n_split_merge >= 1."
            )

    def _resolve_alpha_prior(self, n_samples):
        if self.alpha_prior is None:
            return None
        try:
            prior = np.asarray(self.alpha_prior, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"alpha_prior must hold real numbers, got {self.alpha_prior!r}."
            ) from None
        if prior.shape != (2,) or not np.all(np.isfinite(prior)) or np.any(prior <= 0):
            raise ValueError(
                "alpha_prior must be None or (shape, rate), two positive numbers, "
                f"got {self.alpha_prior!r}."
            )
        shape, rate = float(prior[0]), float(prior[1])
        # A draw of alpha is Gamma(shape + K, rate + something >= 0), K <= N:
        # it stays below about (shape + N) / rate, which must leave the DP's
        # weights (log alpha, N + alpha) far from the double range's end.
        with np.errstate(over="ignore"):
            reach = (shape + n_samples) / rate
        if not reach <= _MAX_ALPHA:
            raise ValueError(
                f"alpha_prior={self.alpha_prior!r} lets alpha reach about "
                f"(shape + n_samples) / rate = {reach:g}, beyond {_MAX_ALPHA:g}: "
                "its draws would overflow. Use a larger rate or a smaller shape."
            )
        return shape, rate

    def _collapsed_chain(self, family):
        """``make_chain(bit_generator)`` for the engine, over ``family``.

        A partial, not a closure: it pickles, so that chains can run in other
        processes; the engine passes the bit generator. The family is read-only
        during sweeps, and each chain runs on its own copy of its scratch.
        """
        moves = self.sampler.split("+")
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

    def _draw_alpha(self, parameters):
        """The concentration of one draw (sampled when ``alpha_prior`` is set)."""
        return parameters[-2]

    def _extra_traces(self):
        return ("alpha",) if self.alpha_prior is not None else ()


def _make_chain(family, bit_generator, **options):
    """``CollapsedChain(family, bit_generator=bit_generator, **options)``."""
    return CollapsedChain(family, bit_generator=bit_generator, **options)
