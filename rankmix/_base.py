# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Base class of the Dirichlet-process mixture estimators."""

from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import joblib
import numpy as np
from scipy import sparse
from sklearn import get_config
from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin
from sklearn.utils import check_random_state, gen_batches
from sklearn.utils.validation import check_is_fitted

from ._diagnostics import convergence_summary
from ._distributed import DaskRows, is_dask_array
from ._engine import (
    Posterior,
    extend_posterior,
    point_estimate,
    run_chains,
    whole_draw_indices,
)
from ._posterior import PosteriorSummaryMixin, contingency_table
from ._sklearn_compat import Interval, StrOptions, _fit_context
from ._validation import (
    INTP_MAX,
    check_flag,
    column_names,
    real_parameter,
    record_column_names,
    sized_by,
)
from ._warnings import warn
from ._weights import check_count_weights, first_copies, repeat_rows, take_rows
from .metrics import coclustering_matrix

# The largest concentration alpha_prior may let the chains draw.
MAX_ALPHA = 1e300


# The most chains a fit runs: each gets its own generator and kept draws up
# front, and 2**62 chains spawned generators until the memory ran out.
MAX_CHAINS = 10**5


def rows_per_batch(row_bytes):
    """How many rows of ``row_bytes`` bytes of work each fit in scikit-learn's
    ``working_memory`` (at least one)."""
    return max(1, int(get_config()["working_memory"] * 2**20) // row_bytes)


def row_batches(X, batch):
    """``(rows, X[rows])`` for consecutive slices ``rows`` of ``batch`` rows of
    ``X``; ``X`` itself when one batch holds every row (slicing a sparse
    matrix copies it)."""
    if batch >= X.shape[0]:
        yield slice(0, X.shape[0]), X
        return
    for rows in gen_batches(X.shape[0], batch):
        yield rows, X[rows]


def logsumexp_overwrite(a, axis):
    """``log(sum(exp(a), axis))`` of a float array ``a``, which it overwrites.

    scipy.special.logsumexp holds about five temporaries the size of ``a``
    (SciPy 1.17); this holds none: ``a`` becomes ``exp(a - max)``, the max
    along ``axis`` (0 where it is infinite, as scipy's). A slice of all -inf
    gives -inf, one holding +inf gives +inf, one holding NaN gives NaN, an
    empty one -inf.
    """
    if a.shape[axis] == 0:
        return np.full(np.delete(a.shape, axis), -np.inf)
    top = a.max(axis=axis, keepdims=True)
    top[~np.isfinite(top)] = 0.0
    a -= top
    np.exp(a, out=a)
    with np.errstate(divide="ignore"):
        return np.log(a.sum(axis=axis)) + np.squeeze(top, axis=axis)


class SampledAlphaMixin:
    """``alpha_prior``: alpha ~ Gamma(shape, rate), resampled by the chains.

    Shared by every estimator whose chains draw alpha by Escobar & West's step
    (``_dp_prior.pxd``) and whose draws' parameters end with ``(alpha, sizes)``.
    ``_parameter_constraints`` entries are in ``SHARED_MOVE_CONSTRAINTS``.
    """

    def _resolve_alpha_prior(self, n_samples):
        """``alpha_prior`` as ``(shape, rate)``, or None; a ValueError if unusable."""
        if self.alpha_prior is None:
            return None
        prior = real_parameter(self.alpha_prior, "alpha_prior")
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
        if not reach <= MAX_ALPHA:
            raise ValueError(
                f"alpha_prior={self.alpha_prior!r} lets alpha reach about "
                f"(shape + n_samples) / rate = {reach:g}, beyond {MAX_ALPHA:g}: "
                "its draws would overflow. Use a larger rate or a smaller shape."
            )
        return shape, rate

    def _draw_alpha(self, parameters):
        """The concentration of one draw (sampled when ``alpha_prior`` is set)."""
        return parameters[-2]

    def _extra_traces(self):
        return ("alpha",) if self.alpha_prior is not None else ()


# The most split-merge proposals a sweep may make (SHARED_MOVE_CONSTRAINTS).
MAX_SPLIT_MERGE = 10**6

# How many kept draws keep their large parameters (a "full" Gaussian's K d x d
# predictive factors, a multinomial's K x V counts) when the model trims the
# others: the predictive methods average over these (``_predictive_draws_kept``).
PREDICTIVE_DRAWS = 20

# The constraints of the moves every model's chains share (alpha_prior, split-merge,
# the sequential start).
SHARED_MOVE_CONSTRAINTS = {
    "alpha_prior": ["array-like", None],
    # a sweep draws 12 numbers per proposal up front (two rows, and the ten
    # singleton proposals' rows): past a million that is a mistake, and near
    # 2**59 the byte count would wrap
    "n_split_merge": [Interval(Integral, 0, MAX_SPLIT_MERGE, closed="both")],
    "init": [StrOptions({"sequential", "random"})],
}


class BaseDPMixture(
    PosteriorSummaryMixin,
    ClusterMixin,
    DensityMixin,
    BaseEstimator,
    metaclass=ABCMeta,
):
    """Shared fitting, prediction and scoring of the DP mixture estimators.

    Subclasses supply the model through hooks: ``_prepare`` (validate the training
    data and resolve the priors), ``_chain_factory`` (the compiled chain),
    ``_component_log_density`` (each cluster's log-density in one draw),
    ``_new_cluster_log_density`` (the prior predictive of a new cluster),
    ``_describe_clusters`` (fitted attributes from the point-estimate draw),
    ``_check_new_data``, ``_sample_components`` and ``_sample_new_clusters``.

    A draw's parameters are a tuple whose last element is the cluster sizes.

    A model whose draws are large may keep most of them trimmed (see
    ``_draw_trimmer``): the predictive methods then average over the whole draws
    (``_predictive_draws``), at most ``_predictive_draws_kept`` of them, and a
    method that needs a trimmed draw whole has it rebuilt (``_whole_draw``).
    """

    # How many kept draws keep every parameter the predictive reads, when the
    # model trims the others (``_draw_trimmer``); None: all of them.
    _predictive_draws_kept = None
    # During a fit whose rows are on Dask workers, those rows (``_rebuild_source``).
    _rows_elsewhere = None

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        # Counts reach compiled code as C integers (np.intp): bound them there,
        # so that 2**63 is an InvalidParameterError, not an OverflowError.
        "n_iter": [Interval(Integral, 1, INTP_MAX, closed="both")],
        "burn_in": [Interval(Integral, 0, INTP_MAX, closed="both")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_chains": [Interval(Integral, 1, MAX_CHAINS, closed="both")],
        # joblib's meaning: -1 all cores, -2 all but one, ...; 0 means nothing
        "n_jobs": [
            Interval(Integral, None, -1, closed="right"),
            Interval(Integral, 1, None, closed="left"),
            None,
        ],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
    }

    @abstractmethod
    def __init__(
        self,
        *,
        alpha,
        n_iter,
        burn_in,
        thin,
        n_chains,
        n_jobs,
        random_state,
        verbose,
        warm_start,
    ):
        self.alpha = alpha
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start

    # -- hooks ---------------------------------------------------------------

    @abstractmethod
    def _prepare(self, X, space=None):
        """Validate training data, set priors and input attributes; return X.

        ``space``: rows of weight 0 (``sample_weight``), validated already, that
        take no part in the fit but belong to the data's space (a model that
        infers its space from the data, such as the items of rankings, counts
        them in).
        """

    @abstractmethod
    def _chain_factory(self, X):
        """A callable ``make_chain(bit_generator)`` for the engine."""

    @abstractmethod
    def _component_log_density(self, X, parameters):
        """(n_samples, K) log-densities of each cluster of one draw."""

    def _component_log_weights(self, X, parameters):
        """``_component_log_density`` up to a constant per row, which the
        responsibilities do not see: a model whose densities all underflow on
        a row may give there the values whose differences it can still tell."""
        return self._component_log_density(X, parameters)

    def _density_row_bytes(self, X):
        """Bytes of work per row of validated ``X`` that
        `_component_log_density` holds besides its (n_samples, K) result
        (which `score_samples` counts itself); a model whose work grows with
        a row's content says so."""
        return 0

    def _left_out_row_bytes(self, X):
        """Bytes of work per training row that `_own_cluster_loo_log_density`
        holds; the default reads one density a row."""
        return 0

    @abstractmethod
    def _new_cluster_log_density(self, X):
        """(n_samples,) log prior-predictive density of a new cluster."""

    @abstractmethod
    def _describe_clusters(self, parameters):
        """Set the model's fitted attributes from the point-estimate draw."""

    @abstractmethod
    def _check_new_data(self, X):
        """Validate data at predict time; return it."""

    @abstractmethod
    def _sample_components(self, components, parameters, rng):
        """One sample from each listed cluster of a draw."""

    @abstractmethod
    def _sample_new_clusters(self, n_samples, rng):
        """Samples from the prior predictive of a new cluster."""

    def _extra_traces(self):
        """Names of chain attributes to trace besides n_clusters and log_joint."""
        return ()

    def _draw_alpha(self, parameters):
        """The DP concentration of one draw (fixed unless the model samples it)."""
        return self.alpha

    def _draw_trimmer(self, data_units=False):
        """``trim(parameters, whole)`` for the engine (``run_chains``'s
        ``trim_draw``), or None to keep every draw as the chains give it.
        ``data_units``: for draws already in the units of the data
        (``_to_data_units``), as the fit's end trims them.

        A model that trims must also say which draws are whole
        (``_draw_is_whole``) and rebuild the others (``_rebuilt_draw``).
        """
        return None

    def _draw_is_whole(self, parameters):
        """Whether a kept draw holds every parameter the predictive reads."""
        return True

    def _rebuild_source(self):
        """What ``_rebuilt_draw`` rebuilds draws from (the training rows, say),
        made once for all the draws one call rebuilds. During a fit whose rows
        are on Dask workers, ``self._rows_elsewhere`` holds them (``DaskRows``:
        ``cluster_states`` sums the clusters' rows there)."""
        return None

    def _rebuilt_draw(self, d, source):
        """Kept draw d whole, rebuilt from its labels and ``source``."""
        raise NotImplementedError(f"{type(self).__name__} trims no draw")

    def _whole_draw(self, d):
        """Kept draw d's parameters with everything the predictive reads."""
        return next(self._whole_draws([d]))[1]

    def _whole_draws(self, draws):
        """``(d, parameters)`` of each kept draw d in ``draws``, whole; the draws
        rebuilt share one ``_rebuild_source()``."""
        source = None
        for d in draws:
            parameters = self._draws[d]
            if not self._draw_is_whole(parameters):
                if source is None:
                    source = self._rebuild_source()
                parameters = self._rebuilt_draw(d, source)
            yield d, parameters

    def _predictive_draws(self):
        """Indices of the kept draws the predictive methods average over."""
        return [d for d, p in enumerate(self._draws) if self._draw_is_whole(p)]

    def _whole_per_chain(self):
        """``ceil(_predictive_draws_kept / n_chains)``: how many draws of each
        chain keep every parameter the predictive reads; None: all of them."""
        if self._predictive_draws_kept is None:
            return None
        return -(-self._predictive_draws_kept // self.n_chains)

    def _keep_predictive_draws(self):
        """Keep whole the ``_whole_per_chain()`` draws evenly spaced over each
        chain's kept draws, and trim the others.

        Within one run the engine kept exactly those whole. A warm fit's runs
        each kept their own, so the draws of one long run are chosen afresh
        (rebuilding those trimmed).
        """
        trim, per_chain = self._draw_trimmer(data_units=True), self._whole_per_chain()
        if trim is None or per_chain is None:
            return
        keep = set()
        for draws in np.array_split(np.arange(len(self._draws)), self.n_chains):
            keep.update(draws[whole_draw_indices(len(draws), per_chain)].tolist())
        draws = self._draws
        rebuilt = dict(self._whole_draws(
            d for d in sorted(keep) if not self._draw_is_whole(draws[d])
        ))
        self._draws = [
            rebuilt.get(d, p) if d in keep else trim(p, False)
            for d, p in enumerate(draws)
        ]

    def _to_data_units(self, posterior):
        """The chains' posterior in the units of the training data.

        A model whose chains run on transformed data (DPGaussianClustering
        rescales extreme data) maps the draws and traces back here; it may
        also raise a ValueError when they do not fit in double precision.
        """
        return posterior

    def _numerical_failure(self, error):
        """The ValueError to raise when a chain fails numerically."""
        return ValueError(
            f"The MCMC chains failed numerically ({error}): the data or the "
            "prior parameters are out of the range double precision can handle."
        )

    # -- fitting ---------------------------------------------------------------

    def fit(self, X, y=None, sample_weight=None):
        """Run the MCMC chains and summarise the posterior.

        Parameters
        ----------
        X : array-like
            Training data.
        y : Ignored
            Not used, present for API consistency by convention.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative integer counts: a row of weight w stands for w
            identical rows, and the fit is exactly the fit of X with each row
            repeated (see Notes of ``fit_predict``), at most 2**32 rows in all.
            None gives every row weight 1.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        self.fit_predict(X, y, sample_weight=sample_weight)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_predict(self, X, y=None, sample_weight=None):
        """Fit the model and return the point estimate of the clustering.

        With ``warm_start=True`` and the chains of an earlier fit on the same
        ``X``, continue them for ``n_iter`` more sweeps and summarise all the
        draws (see ``warm_start`` in the class's parameters).

        Parameters
        ----------
        X : array-like
            Training data.
        y : Ignored
            Not used, present for API consistency by convention.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative integer counts: a row of weight w stands for w
            identical rows (at most 2**32 rows in all). None gives every row
            weight 1.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            ``labels_``: the kept draw with the least mean variation of information
            to the other kept draws.

        Notes
        -----
        With ``sample_weight`` the chains run on X with row i repeated
        ``sample_weight[i]`` times, so every draw, trace and score is exactly
        that of a fit on the repeated rows with the same ``random_state``. The
        per-row attributes speak of the rows of X: in each draw a row has the
        label of its first copy (copies are exchangeable, so that label has the
        row's posterior law), and a row of weight 0, which takes no part in the
        fit, has its most probable cluster of each draw (in ``labels_``, as
        ``predict(X, draws="point")`` gives it). Fractional weights are
        refused: a DP mixture has no weighted likelihood that keeps its
        posterior exact.
        ``GridSearchCV(...).fit(X, sample_weight=w)`` passes each fold its
        weights, to `fit` and (scikit-learn >= 1.7) to `score`; with metadata
        routing on, call ``set_fit_request(sample_weight=True)`` and
        ``set_score_request(sample_weight=True)`` (or ``False``) first, as for
        any scikit-learn estimator whose ``score`` takes weights.
        """
        before = dict(self.__dict__)
        try:
            return self._fit(X, sample_weight)
        except BaseException:
            # A refused or failed fit leaves the estimator as it was before it:
            # _prepare sets the data's attributes (n_items_, n_features_in_, the
            # resolved priors) before its later checks, and the earlier draws
            # read with the refused data's sizes would reach compiled code out of
            # bounds. Only the chains stay as the fit left them: dropped if it
            # stopped while they ran (_fit), kept if it refused the data first.
            chains = self.__dict__.get("_chains")
            self.__dict__.clear()
            self.__dict__.update(before)
            if "_chains" in before:
                self._chains = chains
            raise

    def _fit(self, X, sample_weight):
        """``fit_predict``'s work, which may leave the estimator half-updated
        when it raises (``fit_predict`` then restores it)."""
        if is_dask_array(X):
            self._check_rows_elsewhere(sample_weight)
        counts = check_count_weights(sample_weight, X)
        X_given, space = X, None
        if counts is not None:
            with sized_by("sum(sample_weight)", int(counts.sum())):
                X = repeat_rows(X, counts)
            if not counts.all():  # rows of weight 0: in the data space, not the fit
                space = take_rows(X_given, np.flatnonzero(counts == 0))
        previous = self._continued_posterior(X_given, X, counts)
        if previous is None:
            if self.burn_in >= self.n_iter:
                raise ValueError(
                    f"burn_in={self.burn_in} must be smaller than "
                    f"n_iter={self.n_iter}: no draw would be kept after burn-in."
                )
            if counts is not None:
                self._prepare(X_given)  # validate the rows as given: errors name them
            X_fit = X
            X = self._prepare(X, space=space)
        try:
            if previous is None:
                if self.warm_start:
                    # chains that a warm fit continues get rows of their own,
                    # never the caller's array (which _X_fit then shares)
                    X = private_rows(X, X_fit)
                make_chain, chains, sweeps_done = self._chain_factory(X), None, 0
            else:
                X_fit, make_chain = None, None
                chains, sweeps_done = self._chains, self.n_iter_
            return self._fit_chains(
                make_chain, chains, sweeps_done, previous, X, X_fit, X_given, counts
            )
        finally:
            if isinstance(X, DaskRows):
                # the actors on its workers go now, whatever happened, not at
                # the next run of the cycle collector (_prepare makes none)
                X.close()

    def _fit_chains(
        self, make_chain, chains, sweeps_done, previous, X, X_fit, X_given, counts
    ):
        """``_fit``'s sampling and summary, once the rows are prepared."""
        try:
            posterior = self._sample(
                make_chain, chains, sweeps_done, previous, X, X_fit
            )
        except BaseException:
            # Chains stopped part-way (an interrupt, a numerical failure) or
            # whose draws were refused cannot be continued: a later warm fit
            # starts afresh rather than from a state no summary describes.
            self._chains = None
            raise
        # compiled chains, kept only to be continued (they hold work arrays)
        self._chains = posterior.chains if self.warm_start else None
        best_draw = point_estimate(posterior, self.burn_in)
        # the chains' own rows (X repeated by sample_weight): what the overlaps,
        # the pointwise log-likelihood and a warm fit read
        self._chain_label_samples = posterior.label_samples
        self._chain_labels = posterior.label_samples[best_draw].astype(np.intp)
        self._best_draw = best_draw
        self.label_samples_ = posterior.label_samples
        self.trace_ = posterior.trace
        self._moves = posterior.moves
        self.rhat_, self.ess_ = convergence_summary(self.trace_, self.burn_in)
        # the traces' split and the kept draws' spacing, whatever set_params does
        self._burn_in, self._thin = self.burn_in, self.thin
        self.n_iter_ = sweeps_done + self.n_iter
        self._draws = posterior.parameters
        # A Dask fit's trimmed draws are rebuilt where its rows are, while the
        # fit holds them (``_rebuild_source``); later ones fetch the rows.
        self._rows_elsewhere = X if isinstance(X, DaskRows) else None
        try:
            self._summarise(posterior, best_draw, X_given, counts)
        finally:
            del self._rows_elsewhere
        return self.labels_

    def _summarise(self, posterior, best_draw, X_given, counts):
        """The fitted attributes of the point-estimate draw; the draws trimmed."""
        best = self._whole_draw(best_draw)
        # intp, as scikit-learn's clusterers give, whatever the draws' dtype
        self.labels_ = posterior.label_samples[best_draw].astype(np.intp)
        self.n_clusters_ = len(best[-1])
        self.weights_ = best[-1] / best[-1].sum()
        self._best_parameters = best
        self._describe_clusters(best)
        if counts is not None:
            self._labels_of_given_rows(X_given, counts)
        self._keep_predictive_draws()

    def _sample(self, make_chain, chains, sweeps_done, previous, X, X_fit):
        """Run (or continue) the chains; the posterior in X's units, checked.

        ``X_fit`` is the training data as given to ``fit`` (rows repeated by
        ``sample_weight``), or None when ``previous`` is continued.
        """
        trim, whole_per_chain = self._draw_trimmer(), self._whole_per_chain()
        try:
            new = run_chains(
                make_chain,
                n_iter=self.n_iter,
                burn_in=self.burn_in,
                thin=self.thin,
                n_chains=self.n_chains,
                n_jobs=self.n_jobs,
                random_state=self.random_state,
                verbose=self.verbose,
                extra_traces=self._extra_traces(),
                chains=chains,
                sweeps_done=sweeps_done,
                keep_chains=self.warm_start,
                trim_draw=trim,
                whole_per_chain=whole_per_chain,
            )
        except FloatingPointError as error:
            # An ArithmeticError from compiled code (a posterior scale matrix
            # that lost positive definiteness, a move whose weights all
            # underflow): user input caused it, so it is a ValueError.
            raise self._numerical_failure(error) from error
        if previous is None:
            self._n_train = X.shape[0]  # _to_data_units reads it
        new = self._to_data_units(new)
        for name, values in new.trace.items():
            if not np.all(np.isfinite(values)):
                # The parameters are validated so that this cannot happen;
                # never hand back a trace that would poison R-hat silently.
                raise self._numerical_failure(f"the trace of {name} is not finite")
        if previous is not None:
            return extend_posterior(previous, new, self.n_chains)
        # the training rows in the units of new data, for the pointwise
        # log-likelihood of to_inference_data and the data check of warm fits
        self._X_fit = self._training_rows(X_fit, X)
        self._chain_parameters = self._parameters_of_the_chains()
        return new

    def _training_rows(self, X, chain_rows=None):
        """The training rows as ``_X_fit`` keeps them (validated, in X's units);
        rows on Dask workers stay there (``to_inference_data`` computes them).

        Never the caller's own array: where validation passed it through, the
        chains' ``chain_rows`` when they are a private copy of the same values
        (one copy of X for both), else a copy.
        """
        if is_dask_array(X):
            return X
        rows = self._check_new_data(X)
        if not shares_memory(rows, X):
            return rows
        if (
            isinstance(chain_rows, np.ndarray)
            and not shares_memory(chain_rows, X)
            and chain_rows.dtype == rows.dtype
            and np.array_equal(chain_rows, rows)
        ):
            return chain_rows
        return rows.copy()

    def _check_rows_elsewhere(self, sample_weight):
        """Refuse what a fit of rows held by Dask workers cannot do: only the
        sub-cluster sampler keeps them there."""
        if self.sampler != "subcluster":
            raise ValueError(
                "X is a dask array: only sampler='subcluster' keeps its rows on the "
                f"workers (got sampler={self.sampler!r}). Set sampler='subcluster', "
                "or pass X.compute() to fit in this process."
            )
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with a dask array X.")
        if self.warm_start:
            raise ValueError("warm_start=True is not supported with a dask array X.")

    def _labels_of_given_rows(self, X_given, counts):
        """``label_samples_`` and ``labels_`` of a weighted fit, one per given row.

        The chains labelled the repeated rows: a row of weight > 0 takes its
        first copy's label, a row of weight 0 its most probable cluster of each
        draw (the cluster's size times its density, as ``predict`` does).
        """
        repeated = self._chain_label_samples
        samples = np.empty((repeated.shape[0], len(counts)), dtype=repeated.dtype)
        samples[:, counts > 0] = repeated[:, first_copies(counts)]
        absent = np.flatnonzero(counts == 0)
        if len(absent):
            X_absent = self._check_new_data(take_rows(X_given, absent))
            for d, parameters in self._whole_draws(range(len(self._draws))):
                log_density = self._component_log_density(X_absent, parameters)
                samples[d, absent] = (log_density + np.log(parameters[-1])).argmax(1)
        self.label_samples_ = samples
        self.labels_ = samples[self._best_draw].astype(np.intp)

    # -- continuing the chains (warm_start) ----------------------------------------

    # Parameters a warm fit may change: they do not enter the chains' model or
    # moves. random_state only seeds chains that start.
    _WARM_FREE = frozenset(
        {"n_iter", "warm_start", "verbose", "n_jobs", "random_state"}
    )

    def _parameters_of_the_chains(self):
        """Hashes of the parameters the chains were built with."""
        return {
            name: joblib.hash(value)
            for name, value in self.get_params(deep=False).items()
            if name not in self._WARM_FREE
        }

    def _continued_posterior(self, X_given, X, counts):
        """The posterior whose chains a warm fit continues, or None to start.

        ``X`` is ``X_given`` repeated by the counts of ``sample_weight`` (or
        ``X_given`` itself). A ValueError when the chains cannot go on: the
        data or a parameter of the chains changed.
        """
        if not self.warm_start or not hasattr(self, "label_samples_"):
            return None
        if getattr(self, "_chains", None) is None:
            warn(
                "warm_start=True found no chains to continue: only a fit with "
                "warm_start=True keeps them, and pickling drops them. The chains "
                "start afresh.",
                UserWarning,
            )
            return None
        old, now = self._chain_parameters, self._parameters_of_the_chains()
        changed = sorted(name for name in now if now[name] != old[name])
        if changed:
            raise ValueError(
                f"warm_start=True continues the chains of the previous fit, which "
                f"ran with other values of {', '.join(changed)}. Restore them, or "
                "set warm_start=False to start new chains."
            )
        # a fit records X's column names, as scikit-learn's fit does, even when
        # it continues the chains: only the rows must be the previous fit's
        record_column_names(self, column_names(X_given))
        if counts is not None:
            self._check_new_data(X_given)  # errors name the rows as given
        if not _same_rows(self._check_new_data(X), self._X_fit):
            raise ValueError(
                "warm_start=True continues the chains of the previous fit on its "
                "training data, and X differs from it (its rows repeated by "
                "sample_weight, if given). Pass the same X and sample_weight, or "
                "set warm_start=False to fit new chains."
            )
        if self._chain_label_samples.shape != (len(self._draws), self._n_train):
            # stored state edited by hand: the chains would go on with labels
            # of other rows (and a trimmed draw's rebuild read past the data)
            raise ValueError(
                "warm_start=True found label samples of shape "
                f"{self._chain_label_samples.shape}, expected ({len(self._draws)}, "
                f"{self._n_train}): one row of labels per kept draw, one label per "
                "training row. Set warm_start=False to fit new chains."
            )
        return Posterior(
            self._chain_label_samples,
            self._draws,
            self.trace_,
            self._moves,
            self._chains,
        )

    def __getstate__(self):
        # The compiled chains do not pickle: a restored estimator has none to
        # continue (a warm fit then starts afresh, with a warning).
        state = super().__getstate__()
        return {name: value for name, value in state.items() if name != "_chains"}

    # -- prediction and scoring --------------------------------------------------

    def _check_draws(self, draws):
        if draws not in ("all", "point"):
            raise ValueError(f"draws must be 'all' or 'point', got {draws!r}.")

    def _cluster_overlap(self, d):
        """(K_d, `n_clusters_`): rows draw d's cluster j shares with each
        cluster of ``labels_`` (a contingency table of the chains' rows)."""
        return contingency_table(
            self._chain_label_samples[d],
            self._chain_labels,
            len(self._draws[d][-1]),
            self.n_clusters_,
        ).astype(np.float64)

    def _cluster_shares(self, d):
        """(K_d, `n_clusters_`): the share of draw d's cluster j's rows in each
        cluster of ``labels_`` (rows sum to one): how `predict_proba` and
        `sample` hand a draw's clusters to the point estimate's."""
        overlap = self._cluster_overlap(d)
        return overlap / overlap.sum(axis=1, keepdims=True)

    @staticmethod
    def _responsibilities(log_density, sizes):
        """Rows' probabilities of each existing cluster of a draw; overwrites
        ``log_density`` (n_samples, K) with them."""
        weighted = log_density
        weighted += np.log(sizes)
        # from the row's largest term: at magnitudes past 1e16, a + log 2 == a,
        # and exp(a - logsumexp) of two equal terms would give each probability
        # one, where exp(a - max) / sum gives each one half
        weighted -= weighted.max(axis=1, keepdims=True)
        np.exp(weighted, out=weighted)
        weighted /= weighted.sum(axis=1, keepdims=True)
        return weighted

    def predict_proba(self, X, *, draws="all"):
        """Probability of each cluster of ``labels_`` for new samples.

        Parameters
        ----------
        X : array-like
            New samples.
        draws : {"all", "point"}, default="all"
            "all" averages over every kept draw (the posterior predictive, see
            Notes; DPGaussianClustering with ``covariance_type="full"`` over
            about 20 of them, see its Notes); "point" uses the point-estimate
            draw alone, a plug-in
            estimate ``n_draws_`` times cheaper that ignores the posterior's
            uncertainty about the clusters.

        Returns
        -------
        proba : ndarray of shape (n_samples, `n_clusters_`)
            Rows sum to one.

        Notes
        -----
        In one draw with clusters j of sizes n_j and densities f_j, a new row x
        joins cluster j with probability r_j(x) = n_j f_j(x) / sum_l n_l f_l(x)
        (only existing clusters compete: a row is not offered a new cluster).
        The draws number their clusters independently, so each draw's cluster
        j hands its probability to the clusters c of ``labels_`` in proportion
        to the training rows they share:

        .. math::

            P(c \\mid x) = \\frac{1}{D} \\sum_{d=1}^{D} \\sum_j r^{(d)}_j(x)
            \\frac{|j \\cap c|}{|j|},

        D the number of draws averaged. Every cluster of a draw holds training rows,
        so nothing is lost; in the point-estimate draw each cluster is its own
        match, and ``draws="point"`` is that one term.

        The rows are scored in batches whose work fits scikit-learn's
        ``working_memory`` (``sklearn.set_config``), besides the result.

        Examples
        --------
        >>> from rankmix import DPGaussianClustering
        >>> import numpy as np
        >>> X = np.r_[np.zeros((20, 2)), np.full((20, 2), 8.0)]
        >>> X += np.random.default_rng(0).normal(size=X.shape)
        >>> model = DPGaussianClustering(n_iter=60, burn_in=20, random_state=0).fit(X)
        >>> model.predict_proba([[0.0, 0.0], [8.0, 8.0]]).round(3)
        array([[1., 0.],
               [0., 1.]])
        """
        check_is_fitted(self)
        self._check_draws(draws)
        X = self._check_new_data(X)
        proba = np.zeros((X.shape[0], self.n_clusters_))
        if draws == "point":
            # the point-estimate draw's clusters are those of labels_
            parameters = self._best_parameters
            batch = self._rows_per_batch(X, [self._best_draw])
            for rows, X_rows in row_batches(X, batch):
                proba[rows] = self._responsibilities(
                    self._component_log_weights(X_rows, parameters), parameters[-1]
                )
            return proba
        draws = self._predictive_draws()
        # besides a draw's densities (made probabilities in place), the batch
        # holds their (rows, n_clusters_) share; draws outermost, so that one
        # draw's (K, n_clusters_) shares exist at a time
        batch = self._rows_per_batch(X, draws, floats_per_row=self.n_clusters_)
        for d in draws:
            parameters, share = self._draws[d], self._cluster_shares(d)
            for rows, X_rows in row_batches(X, batch):
                proba[rows] += (
                    self._responsibilities(
                        self._component_log_weights(X_rows, parameters),
                        parameters[-1],
                    )
                    @ share
                )
        proba /= len(draws)
        return proba

    def predict(self, X, *, draws="all"):
        """The most probable cluster of ``labels_`` for each new sample.

        The argmax of `predict_proba`. ``labels_`` (what `fit_predict` returns)
        is a clustering of the training rows taken from one draw: on rows the
        draws disagree about, ``predict`` of the training data may differ from
        it.

        Parameters
        ----------
        X : array-like
            New samples.
        draws : {"all", "point"}, default="all"
            As for `predict_proba`.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        return self.predict_proba(X, draws=draws).argmax(axis=1)

    def score_samples(self, X):
        """Log posterior-predictive density of each sample.

        For every kept draw the predictive is the DP mixture
        ``sum_k n_k / (N + alpha) f_k(x) + alpha / (N + alpha) f_0(x)``, with
        ``f_0`` the prior predictive of a new cluster; the draws' densities are
        averaged (DPGaussianClustering with ``covariance_type="full"``: over
        about 20 of the kept draws, see its Notes). Each draw's mixture is
        normalised, so the result is a normalised density whatever the sampler.
        The rows are scored in batches whose work fits scikit-learn's
        ``working_memory`` (``sklearn.set_config``).

        Parameters
        ----------
        X : array-like
            New samples.

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        return self._log_predictive(self._check_new_data(X))

    def _rows_per_batch(self, X, draws, floats_per_row=0, row_bytes=0):
        """Rows of validated ``X`` per batch whose work fits scikit-learn's
        ``working_memory``: per row, the densities of the clusters of the kept
        draws ``draws`` (K + 1 of them, K the draws' most clusters, counted
        four times: one such row is held, the rest is a margin for the
        models' kernels), the model's own work (`_density_row_bytes`), and
        the caller's ``floats_per_row`` float64s and ``row_bytes`` bytes."""
        n_clusters = max(len(self._draws[d][-1]) for d in draws)
        return rows_per_batch(
            8 * (4 * (n_clusters + 1) + floats_per_row)
            + self._density_row_bytes(X)
            + row_bytes
        )

    def _log_predictive(self, X):
        """`score_samples` of validated rows, in batches of rows whose work fits
        scikit-learn's ``working_memory`` (`_rows_per_batch`, with the
        (n_draws, batch) table of per-draw densities)."""
        draws = self._predictive_draws()
        n_rows, n_draws = X.shape[0], len(draws)
        batch = self._rows_per_batch(X, draws, floats_per_row=n_draws)
        out = np.empty(n_rows)
        for rows, X_rows in row_batches(X, batch):
            per_draw = self._log_predictive_per_draw(X_rows)
            out[rows] = logsumexp_overwrite(per_draw, axis=0) - np.log(n_draws)
        return out

    def _log_predictive_per_draw(self, X, training=False):
        """(n_draws, n_samples): log of each kept draw's DP predictive of each row.

        For new rows (``training=False``), the draws are the predictive draws
        (``_predictive_draws``) and row d is
        ``log sum_k n_k / (N + alpha) f_k(x) + alpha / (N + alpha) f_0(x)`` for
        draw d, the densities `score_samples` averages. For the training rows
        (``training=True``, ``X`` the training data) each row is left out of its
        own cluster first: the conditional predictive
        ``p(x_i | c_-i, X_-i)`` of `to_inference_data` (see its Notes), for
        every kept draw (trimmed ones rebuilt in turn). ``X`` is validated
        already.
        """
        draws = range(len(self._draws)) if training else self._predictive_draws()
        per_draw = np.empty((len(draws), X.shape[0]))
        if not training:  # the caller batches the rows
            log_new_density = self._new_cluster_log_density(X)
            for i, (_, parameters) in enumerate(self._whole_draws(draws)):
                per_draw[i] = self._draw_log_predictive(X, parameters, log_new_density)
            return per_draw
        # (draws, N) is the result; each draw's (rows, K) work comes in
        # batches within working_memory, the draw rebuilt (if trimmed) once
        batch = self._rows_per_batch(X, draws, row_bytes=self._left_out_row_bytes(X))
        log_new_density = np.empty(X.shape[0])
        for rows, X_rows in row_batches(X, batch):
            log_new_density[rows] = self._new_cluster_log_density(X_rows)
        for i, (d, parameters) in enumerate(self._whole_draws(draws)):
            for rows, X_rows in row_batches(X, batch):
                per_draw[i, rows] = self._draw_log_predictive(
                    X_rows,
                    parameters,
                    log_new_density[rows],
                    own=self._chain_label_samples[d][rows],
                )
        return per_draw

    def _draw_log_predictive(self, X, parameters, log_new_density, own=None):
        """(n_samples,) log of one draw's DP predictive of validated rows,
        ``sum_k n_k f_k(x) + alpha f_0(x)`` over ``N + alpha``.

        With ``own``, the training rows' clusters in the draw, each row is
        left out of its own cluster first (the sizes and ``N`` less one).
        ``log_new_density`` is ``_new_cluster_log_density(X)``.
        """
        alpha = self._draw_alpha(parameters)
        sizes = parameters[-1]
        density = self._component_log_density(X, parameters)
        # the left-out densities below read density: a copy in training only
        terms = density if own is None else density.copy()
        terms += np.log(sizes)
        n_others = self._n_train
        if own is not None:
            n_others -= 1
            others = sizes[own] - 1
            with np.errstate(all="ignore"):
                left_out = np.log(others) + self._own_cluster_loo_log_density(
                    X, own, parameters, density
                )
            # a row alone in its cluster leaves no cluster behind
            terms[np.arange(X.shape[0]), own] = np.where(others > 0, left_out, -np.inf)
        return np.logaddexp(
            logsumexp_overwrite(terms, axis=1), np.log(alpha) + log_new_density
        ) - np.log(n_others + alpha)

    def _own_cluster_loo_log_density(self, X, labels, parameters, density):
        """(n_samples,) log f_k(x_i) of each training row's own cluster k = c_i,
        with row i left out of the cluster.

        ``density`` is ``_component_log_density(X, parameters)``. The default
        serves models whose draws hold each cluster's parameters explicitly
        (DPMallowsClustering's (sigma, theta)): the density given the parameters
        does not depend on the members. Collapsed models, whose f_k is the
        posterior predictive given the members, downdate it. Rows alone in their
        cluster may get any value: it is discarded.
        """
        return density[np.arange(X.shape[0]), labels]

    def score(self, X, y=None, sample_weight=None):
        """Mean log posterior-predictive density of the samples (higher is better).

        Parameters
        ----------
        X : array-like
            New samples.
        y : Ignored
            Not used, present for API consistency by convention.
        sample_weight : array-like of shape (n_samples,), default=None
            Counts of identical rows, as in `fit`: the mean is over the rows
            repeated by them. ``GridSearchCV(...).fit(X, sample_weight=w)``
            scores each held-out fold with its weights (scikit-learn >= 1.7;
            ``cross_validate`` does not pass them without metadata routing;
            with routing on, ``set_score_request(sample_weight=True)``, or
            ``False`` to score unweighted).

        Returns
        -------
        score : float
        """
        log_density = self.score_samples(X)
        counts = check_count_weights(sample_weight, log_density, purpose="score")
        return float(np.average(log_density, weights=counts))

    def sample(self, n_samples=1, random_state=None, *, draws="all"):
        """Draw samples from the posterior predictive distribution.

        Parameters
        ----------
        n_samples : int, default=1
            Number of samples.
        random_state : int, RandomState instance or None, default=None
            Pass an int for reproducible output across multiple function calls.
        draws : {"all", "point"}, default="all"
            "all": each sample comes from the DP predictive of a kept draw
            chosen uniformly (among those `score_samples` averages), new
            clusters included: the distribution whose log-density is
            `score_samples`. "point": from the clusters of
            ``labels_`` alone, in proportion to ``weights_`` (a plug-in that
            offers no new cluster).

        Returns
        -------
        X : ndarray
            The samples.
        labels : ndarray of shape (n_samples,)
            The cluster of ``labels_`` of each sample, -1 for a sample from a
            new cluster. A sample from cluster j of a draw is given a cluster c
            of ``labels_`` at random, with probability the share of j's training
            rows in c (the matching of `predict_proba`).

        Notes
        -----
        With draws="all", a sample picks a kept draw d uniformly, then cluster
        j of that draw with probability n_j / (N + alpha) or a new cluster with
        probability alpha / (N + alpha), and is drawn from that cluster's
        density (a new cluster's is the prior predictive). The samples come
        grouped by draw, not shuffled.
        """
        check_is_fitted(self)
        self._check_draws(draws)
        # bool is an Integral, but sample(True) is a mistake, not one sample
        if isinstance(n_samples, (bool, np.bool_)) or not isinstance(
            n_samples, Integral
        ):
            raise TypeError(
                f"n_samples must be a positive integer, got {n_samples!r} of "
                f"type {type(n_samples).__name__}."
            )
        if not 1 <= n_samples <= INTP_MAX:
            raise ValueError(
                f"n_samples must be a positive integer, got {n_samples!r}."
            )
        rng = check_random_state(random_state)
        with sized_by("n_samples", n_samples):
            samples, labels = self._draw_samples(n_samples, rng, draws)
        return self._check_samples(samples), labels

    def _draw_samples(self, n_samples, rng, draws):
        """``sample``'s rows and labels, drawn with ``rng``."""
        if draws == "point":
            labels = np.sort(
                rng.choice(self.n_clusters_, size=n_samples, p=self.weights_)
            )
            return self._sample_components(labels, self._best_parameters, rng), labels
        kept = self._predictive_draws()
        counts = np.bincount(
            rng.randint(len(kept), size=n_samples), minlength=len(kept)
        )
        samples, labels = [], []
        for i in np.flatnonzero(counts):
            d = kept[i]
            parameters = self._draws[d]
            sizes, alpha = parameters[-1], self._draw_alpha(parameters)
            weights = np.append(sizes, alpha) / (self._n_train + alpha)
            components = np.sort(rng.choice(len(weights), size=counts[i], p=weights))
            old = components[components < len(sizes)]
            n_new = counts[i] - len(old)
            shares = self._cluster_shares(d)
            matched = [rng.choice(self.n_clusters_, p=shares[j]) for j in old]
            if len(old):
                samples.append(self._sample_components(old, parameters, rng))
            if n_new:
                samples.append(self._sample_new_clusters(n_new, rng))
            labels.append(np.r_[matched, np.full(n_new, -1)].astype(np.intp))
        return np.concatenate(samples), np.concatenate(labels)

    def _check_samples(self, samples):
        """``sample``'s rows, after a model's checks (a warning, say)."""
        return samples

    def to_inference_data(self, *, log_likelihood=True):
        """The posterior as an ArviZ ``InferenceData``: diagnostics and LOO/WAIC.

        Requires the optional dependency ArviZ (``pip install arviz``). Groups:

        * ``posterior``: every sweep after burn-in of every chain (dims ``chain``
          and ``draw``) of the traced scalars: ``n_clusters``, ``log_joint`` and,
          when sampled, ``alpha``; ``warmup_posterior`` holds the burn-in sweeps.
        * ``sample_stats``: ``lp``, the log joint of the same sweeps (ArviZ's
          name for it; ``warmup_sample_stats`` for burn-in), and the acceptance
          rate in each sweep of the Metropolis-Hastings moves the chains count,
          where the sampler uses them: ``split_merge_acceptance`` and
          ``permutation_acceptance`` (accepted / proposed, NaN in a sweep
          that proposed none). The Mallows chains' Metropolis-Hastings steps
          for sigma are not counted.
        * ``log_likelihood`` (when ``log_likelihood=True``): variable ``x`` with
          dims (``chain``, ``draw``, ``row``), for every kept draw (thinned, as
          ``label_samples_``) and every training row, the log predictive density
          of the row under that draw with the row left out of its cluster (see
          Notes). ``arviz.loo``, ``arviz.waic`` and ``arviz.compare`` read it.
          Its ``draw`` coordinate numbers the sweeps after burn-in, as the
          ``posterior``'s does: with ``thin=2`` its draws are 0, 2, 4, ...,
          so xarray lines each kept draw up with the traces of its own sweep.
          With ``sample_weight`` the rows are those the chains fitted: each row
          of X as often as its weight (``sum(sample_weight)`` of them, rows of
          weight 0 absent), the observations of the repeated data.

        The convergence warning of ``fit`` uses the same rank-normalised R-hat
        as ``arviz.rhat``, but ties values apart by rounding alone first (the
        log joints of one clustering summed in different orders), which
        ``arviz.rhat`` of the exported traces tells apart.

        Parameters
        ----------
        log_likelihood : bool, default=True
            Whether to compute the ``log_likelihood`` group. It holds
            ``n_draws_ * n_samples`` float64 values (8 bytes each: 800 MB for
            100 draws of a million rows) and costs one `score_samples` pass over
            the training data; pass False when only the traces are needed.

        Returns
        -------
        idata : arviz.InferenceData
            (an xarray ``DataTree`` with ArviZ 1.0 and later).

        Notes
        -----
        For a kept draw with clustering c, cluster sizes n_k and concentration
        alpha, over N training rows, the pointwise log-likelihood of row x_i is
        the draw's DP predictive of x_i with x_i left out of its own cluster:

        .. math::

            \\log p(x_i \\mid c_{-i}, X_{-i}) = \\log\\Big(\\sum_k
            \\frac{n_k^{-i}}{N - 1 + \\alpha} f_k^{-i}(x_i)
            + \\frac{\\alpha}{N - 1 + \\alpha} f_0(x_i)\\Big),

        where n_k^{-i} is n_k less one for x_i's cluster (a cluster x_i was alone
        in disappears), f_k the cluster's density (the GM model of its draw of
        (sigma, theta) for rankings; the posterior predictive given its members,
        x_i left out, for the collapsed Gaussian and multinomial models) and f_0
        the prior predictive of a new cluster. By exchangeability this is the
        conditional the Gibbs step of x_i samples from, and
        p(c_{-i} | X_{-i}) is p(c_{-i} | X) reweighted by its inverse: PSIS-LOO
        with these values estimates p(x_i | X_{-i}), the leave-one-out
        predictive, which `score` measures on held-out data. (The in-sample
        value of `score_samples`, x_i counted in its cluster, would be biased
        upwards for the collapsed models: x_i would predict itself.) The row's
        cluster is integrated out, as ArviZ recommends for mixtures.

        When every draw gives a row the same density (a posterior concentrated
        on one clustering), its importance weights are constant and LOO is
        exact, but ArviZ's Pareto k cannot be fitted to constant weights and
        may read "very bad" there. ``arviz.loo`` estimates the relative
        efficiency of the draws from the ``posterior`` group, whose traces are
        not thinned; the ``log_likelihood`` group holds the thinned draws,
        whose effective sample size is about that of the unthinned traces.

        The (draws, rows) table is the result; each draw's work on the rows
        comes in batches that fit scikit-learn's ``working_memory``
        (``sklearn.set_config``).

        Examples
        --------
        >>> import arviz as az  # doctest: +SKIP
        >>> idata = model.to_inference_data()  # doctest: +SKIP
        >>> az.summary(idata)  # doctest: +SKIP
        >>> az.loo(idata)  # doctest: +SKIP
        """
        check_is_fitted(self)
        log_likelihood = check_flag(log_likelihood, "log_likelihood")
        try:
            import arviz
        except ImportError:
            raise ImportError(
                "to_inference_data needs ArviZ: pip install arviz"
            ) from None
        trace, burn_in = self.trace_, self._burn_in
        stats = {"lp": trace["log_joint"], **self._acceptance_rates()}
        groups = {
            "posterior": {k: v[:, burn_in:] for k, v in trace.items()},
            "sample_stats": {k: v[:, burn_in:] for k, v in stats.items()},
        }
        if burn_in > 0:
            groups["warmup_posterior"] = {k: v[:, :burn_in] for k, v in trace.items()}
            groups["warmup_sample_stats"] = {
                k: v[:, :burn_in] for k, v in stats.items()
            }
        dims = {}
        if log_likelihood:
            rows = self._X_fit
            if is_dask_array(rows):  # rows kept on Dask workers: fetched here
                rows = self._check_new_data(rows.compute())
            per_draw = self._log_predictive_per_draw(rows, training=True)
            # label_samples_ stacks the chains: chain-major, so a reshape splits them
            groups["log_likelihood"] = {
                "x": per_draw.reshape(trace["log_joint"].shape[0], -1, self._n_train)
            }
            dims = {"x": ["row"]}
        # save_warmup: both APIs drop warmup groups unless told (their rcParams
        # default is False)
        options = {"dims": dims, "save_warmup": burn_in > 0}
        if int(arviz.__version__.split(".")[0]) >= 1:
            idata = arviz.from_dict(groups, **options)
        else:
            idata = arviz.from_dict(**groups, **options)
        if log_likelihood:
            # ArviZ numbers every group's draws 0, 1, 2, ...: the thinned draws
            # would line up with the wrong sweeps of the posterior's traces
            n_sweeps = trace["log_joint"].shape[1] - burn_in
            kept = np.arange(0, n_sweeps, self._thin)
            if hasattr(idata, "to_dataset"):  # ArviZ 1: a DataTree
                group = idata["log_likelihood"].to_dataset()
                idata["log_likelihood"] = group.assign_coords(draw=kept)
            else:
                # not idata["log_likelihood"] = ...: ArviZ 0.x's __setitem__
                # lists an existing group twice (az.concat then doubles it)
                idata.map(
                    lambda group: group.assign_coords(draw=kept),
                    groups="log_likelihood",
                    inplace=True,
                )
        return idata

    def _acceptance_rates(self):
        """``<move>_acceptance`` per sweep of the Metropolis-Hastings moves that
        proposed anything: accepted / proposed, NaN in a sweep with no proposal."""
        rates = {}
        for name, proposed in self._moves.items():
            if name.endswith("_proposed") and proposed.any():
                move = name[: -len("_proposed")]
                accepted = self._moves[f"{move}_accepted"]
                with np.errstate(divide="ignore", invalid="ignore"):
                    rates[f"{move}_acceptance"] = accepted / proposed
        return rates

    def coclustering_matrix(self, rows=None):
        """P(two rows share a cluster) over the kept draws: see
        :func:`rankmix.metrics.coclustering_matrix`."""
        check_is_fitted(self)
        return coclustering_matrix(self.label_samples_, rows=rows)

    @property
    def n_draws_(self):
        """Number of kept draws, all chains together."""
        check_is_fitted(self)
        return self.label_samples_.shape[0]


def shares_memory(rows, given):
    """Whether validated ``rows`` may share memory with the caller's ``given``
    (an array, a sparse matrix or a data frame of one dtype, whose values may
    be a view of its block; validation copied anything else)."""

    def buffers(m):
        if sparse.issparse(m):
            return [m.data, m.indices, m.indptr]
        if isinstance(m, np.ndarray):
            return [m]
        if hasattr(m, "columns") and m.dtypes.nunique() == 1:
            return [np.asarray(m)]
        return []

    return not is_dask_array(given) and any(
        np.may_share_memory(mine, theirs)
        for mine in buffers(rows)
        for theirs in buffers(given)
    )


def private_rows(rows, given):
    """``rows``, copied if they may share memory with the caller's ``given``.

    Validation passes a float64 array through as it is: a model that kept it
    would change when the caller reuses its array (``X *= 2``), and a warm fit
    would compare the new X with itself and continue the chains on other data
    (179 clusters where a copy of the same data gave 3).
    """
    return rows.copy() if shares_memory(rows, given) else rows


def _same_rows(X, Y):
    """Whether two validated data sets (arrays or sparse matrices) are equal."""
    if X.shape != Y.shape:
        return False
    if sparse.issparse(X) or sparse.issparse(Y):
        return (sparse.csr_matrix(X) != sparse.csr_matrix(Y)).nnz == 0
    return np.array_equal(X, Y)
