# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Base class of the Dirichlet-process mixture estimators."""

from abc import ABCMeta, abstractmethod
from numbers import Integral, Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._diagnostics import convergence_summary
from ._engine import n_kept_draws, run_chains
from ._posterior import PosteriorSummaryMixin
from ._sklearn_compat import Interval, StrOptions, _fit_context, _safe_indexing
from ._weights import check_count_weights, first_copies, repeat_rows
from .metrics import coclustering_matrix

# The largest value of a count that compiled code takes as an np.intp.
INTP_MAX = int(np.iinfo(np.intp).max)


# The largest concentration alpha_prior may let the chains draw.
MAX_ALPHA = 1e300


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


# The constraints of the moves every model's chains share (alpha_prior, split-merge,
# the sequential start).
SHARED_MOVE_CONSTRAINTS = {
    "alpha_prior": ["array-like", None],
    # counts reach compiled code as np.intp: 2**63 is a parameter error
    "n_split_merge": [Interval(Integral, 0, INTP_MAX, closed="both")],
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
    ``_check_new_data`` and ``_sample_components``.

    A draw's parameters are a tuple whose last element is the cluster sizes.
    """

    _parameter_constraints: dict = {
        "alpha": [Interval(Real, 0, None, closed="neither")],
        # Counts reach compiled code as C integers (np.intp): bound them there,
        # so that 2**63 is an InvalidParameterError, not an OverflowError.
        "n_iter": [Interval(Integral, 1, INTP_MAX, closed="both")],
        "burn_in": [Interval(Integral, 0, INTP_MAX, closed="both")],
        "thin": [Interval(Integral, 1, None, closed="left")],
        "n_chains": [Interval(Integral, 1, INTP_MAX, closed="both")],
        "n_jobs": [Interval(Integral, None, None, closed="neither"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    @abstractmethod
    def __init__(
        self, *, alpha, n_iter, burn_in, thin, n_chains, n_jobs, random_state, verbose
    ):
        self.alpha = alpha
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # -- hooks ---------------------------------------------------------------

    @abstractmethod
    def _prepare(self, X):
        """Validate training data, set priors and input attributes; return X."""

    @abstractmethod
    def _chain_factory(self, X):
        """A callable ``make_chain(bit_generator)`` for the engine."""

    @abstractmethod
    def _component_log_density(self, X, parameters):
        """(n_samples, K) log-densities of each cluster of one draw."""

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

    def _extra_traces(self):
        """Names of chain attributes to trace besides n_clusters and log_joint."""
        return ()

    def _draw_alpha(self, parameters):
        """The DP concentration of one draw (fixed unless the model samples it)."""
        return self.alpha

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
            repeated (see Notes of ``fit_predict``). None gives every row
            weight 1.

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

        Parameters
        ----------
        X : array-like
            Training data.
        y : Ignored
            Not used, present for API consistency by convention.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative integer counts: a row of weight w stands for w
            identical rows. None gives every row weight 1.

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
        fit, has its most probable cluster of each draw, as ``predict`` gives
        for the point estimate. Fractional weights are refused: a DP mixture
        has no weighted likelihood that keeps its posterior exact.
        ``GridSearchCV(...).fit(X, sample_weight=w)`` passes each fold its
        weights; with metadata routing on, call ``set_fit_request(
        sample_weight=True)`` first, as for any scikit-learn estimator.
        """
        if self.burn_in >= self.n_iter:
            raise ValueError(
                f"burn_in={self.burn_in} must be smaller than n_iter={self.n_iter}: "
                "no draw would be kept after burn-in."
            )
        counts = check_count_weights(sample_weight, X)
        if counts is not None:
            self._prepare(X)  # validate the rows as given: errors name their index
            X_given, X = X, repeat_rows(X, counts)
        X = self._prepare(X)
        try:
            posterior = run_chains(
                self._chain_factory(X),
                n_iter=self.n_iter,
                burn_in=self.burn_in,
                thin=self.thin,
                n_chains=self.n_chains,
                n_jobs=self.n_jobs,
                random_state=self.random_state,
                verbose=self.verbose,
                extra_traces=self._extra_traces(),
            )
        except FloatingPointError as error:
            # An ArithmeticError from compiled code (a posterior scale matrix
            # that lost positive definiteness, a move whose weights all
            # underflow): user input caused it, so it is a ValueError.
            raise self._numerical_failure(error) from error
        self._n_train = X.shape[0]
        posterior = self._to_data_units(posterior)
        for name, values in posterior.trace.items():
            if not np.all(np.isfinite(values)):
                # The parameters are validated so that this cannot happen;
                # never hand back a trace that would poison R-hat silently.
                raise self._numerical_failure(f"the trace of {name} is not finite")
        self.label_samples_ = posterior.label_samples
        self.trace_ = posterior.trace
        self.rhat_, self.ess_ = convergence_summary(self.trace_, self.burn_in)
        self.n_iter_ = self.n_iter
        self._draws = posterior.parameters
        best = posterior.parameters[posterior.best_draw]
        # intp, as scikit-learn's clusterers give, whatever the draws' dtype
        self.labels_ = posterior.label_samples[posterior.best_draw].astype(np.intp)
        self.n_clusters_ = len(best[-1])
        self.weights_ = best[-1] / best[-1].sum()
        self._best_parameters = best
        self._describe_clusters(best)
        if counts is not None:
            self._labels_of_given_rows(X_given, counts)
        return self.labels_

    def _labels_of_given_rows(self, X_given, counts):
        """``label_samples_`` and ``labels_`` of a weighted fit, one per given row.

        The chains labelled the repeated rows: a row of weight > 0 takes its
        first copy's label, a row of weight 0 its most probable cluster of each
        draw (the cluster's size times its density, as ``predict`` does).
        """
        repeated = self.label_samples_
        samples = np.empty((repeated.shape[0], len(counts)), dtype=repeated.dtype)
        samples[:, counts > 0] = repeated[:, first_copies(counts)]
        absent = np.flatnonzero(counts == 0)
        if len(absent):
            X_absent = self._check_new_data(_safe_indexing(X_given, absent))
            for d, parameters in enumerate(self._draws):
                log_density = self._component_log_density(X_absent, parameters)
                samples[d, absent] = (log_density + np.log(parameters[-1])).argmax(1)
        best = np.flatnonzero((repeated == self.labels_).all(axis=1))[0]
        self.label_samples_ = samples
        self.labels_ = samples[best].astype(np.intp)

    # -- prediction and scoring --------------------------------------------------

    def _estimate_weighted_log_prob(self, X):
        log_density = self._component_log_density(X, self._best_parameters)
        return log_density + np.log(self.weights_)

    def predict_proba(self, X):
        """Posterior probability of each cluster of ``labels_`` for new samples.

        Only the existing clusters compete (a sample is not offered a new cluster).

        Parameters
        ----------
        X : array-like
            New samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, `n_clusters_`)
        """
        check_is_fitted(self)
        X = self._check_new_data(X)
        weighted = self._estimate_weighted_log_prob(X)
        return np.exp(weighted - logsumexp(weighted, axis=1, keepdims=True))

    def predict(self, X):
        """The most probable cluster of ``labels_`` for each new sample.

        Parameters
        ----------
        X : array-like
            New samples.

        Returns
        -------
        labels : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = self._check_new_data(X)
        return self._estimate_weighted_log_prob(X).argmax(axis=1)

    def score_samples(self, X):
        """Log posterior-predictive density of each sample.

        For every kept draw the predictive is the DP mixture
        ``sum_k n_k / (N + alpha) f_k(x) + alpha / (N + alpha) f_0(x)``, with
        ``f_0`` the prior predictive of a new cluster; the draws' densities are
        averaged. Each draw's mixture is normalised, so the result is a normalised
        density whatever the sampler.

        Parameters
        ----------
        X : array-like
            New samples.

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = self._check_new_data(X)
        log_new_density = self._new_cluster_log_density(X)
        per_draw = np.empty((len(self._draws), X.shape[0]))
        for d, parameters in enumerate(self._draws):
            alpha = self._draw_alpha(parameters)
            terms = self._component_log_density(X, parameters) + np.log(parameters[-1])
            per_draw[d] = np.logaddexp(
                logsumexp(terms, axis=1), np.log(alpha) + log_new_density
            ) - np.log(self._n_train + alpha)
        return logsumexp(per_draw, axis=0) - np.log(len(self._draws))

    def score(self, X, y=None):
        """Mean log posterior-predictive density of the samples (higher is better).

        Parameters
        ----------
        X : array-like
            New samples.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        score : float
        """
        return float(self.score_samples(X).mean())

    def sample(self, n_samples=1, random_state=None):
        """Draw samples from the clusters of ``labels_``, in proportion to ``weights_``.

        Parameters
        ----------
        n_samples : int, default=1
            Number of samples.
        random_state : int, RandomState instance or None, default=None
            Pass an int for reproducible output across multiple function calls.

        Returns
        -------
        X : ndarray
            The samples.
        labels : ndarray of shape (n_samples,)
            The cluster of each sample.
        """
        check_is_fitted(self)
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
        labels = np.sort(rng.choice(self.n_clusters_, size=n_samples, p=self.weights_))
        return self._sample_components(labels, self._best_parameters, rng), labels

    def to_inference_data(self):
        """The traces as an ArviZ ``InferenceData``, for R-hat, ESS and trace plots.

        Requires the optional dependency ArviZ (``pip install arviz``). The
        ``posterior`` group holds every sweep after burn-in of every chain (dims
        ``chain`` and ``draw``) of the traced scalars: ``n_clusters``,
        ``log_joint`` and, when sampled, ``alpha``; the ``warmup_posterior``
        group holds the burn-in sweeps. The convergence warning of ``fit`` uses
        the same rank-normalised R-hat as ``arviz.rhat``.

        Returns
        -------
        idata : arviz.InferenceData
            (an xarray ``DataTree`` with ArviZ 1.0 and later).

        Examples
        --------
        >>> import arviz as az  # doctest: +SKIP
        >>> idata = model.to_inference_data()  # doctest: +SKIP
        >>> az.summary(idata)  # doctest: +SKIP
        """
        check_is_fitted(self)
        try:
            import arviz
        except ImportError:
            raise ImportError(
                "to_inference_data needs ArviZ: pip install arviz"
            ) from None
        trace, burn_in = self.trace_, self.burn_in
        groups = {"posterior": {k: v[:, burn_in:] for k, v in trace.items()}}
        if burn_in > 0:
            groups["warmup_posterior"] = {k: v[:, :burn_in] for k, v in trace.items()}
        # save_warmup: both APIs drop warmup groups unless told (their rcParams
        # default is False)
        if int(arviz.__version__.split(".")[0]) >= 1:
            return arviz.from_dict(groups, save_warmup=self.burn_in > 0)
        return arviz.from_dict(**groups, save_warmup=self.burn_in > 0)

    def coclustering_matrix(self, rows=None):
        """P(two rows share a cluster) over the kept draws: see
        :func:`rankmix.metrics.coclustering_matrix`."""
        check_is_fitted(self)
        return coclustering_matrix(self.label_samples_, rows=rows)

    @property
    def n_draws_(self):
        """Number of kept draws, all chains together."""
        check_is_fitted(self)
        return self.n_chains * n_kept_draws(self.n_iter, self.burn_in, self.thin)
