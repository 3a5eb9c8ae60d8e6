# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPMultinomialClustering: Dirichlet-process mixtures of multinomials, collapsed."""

from numbers import Real

import numpy as np
from scipy import sparse
from scipy.special import gammaln

from ._base import PREDICTIVE_DRAWS
from ._collapsed import BaseCollapsedDPMixture
from ._distributed import float_sums, is_dask_array
from ._multinomial_kernels import DirichletMultinomial, row_statistics
from ._sklearn_compat import Interval
from ._validation import (
    MAX_PRIOR_STRENGTH,
    real_parameter,
    sized_by,
    validate_numbers,
)

_DTYPES = [np.float64, np.float32, np.int64, np.int32, np.int16, np.int8, np.uint8]


class DPMultinomialClustering(BaseCollapsedDPMixture):
    """Cluster count vectors (documents x vocabulary) with a DP mixture of multinomials.

    Each cluster is a multinomial over the features with probabilities p ~
    Dirichlet(``dirichlet_prior``); a Dirichlet process prior lets the data choose
    the number of clusters. The probabilities are integrated out, and the
    clustering is sampled by the collapsed moves of :class:`DPGaussianClustering`
    (Gibbs, split-merge, permutation), compiled and run with the GIL released.
    X holds non-negative integer counts (dense or scipy.sparse), at most 2**40
    (about 1.1e12) in all: beyond, the model's log-gamma terms lose their
    precision.

    Parameters
    ----------
    alpha : float, default=1.0
        Concentration of the Dirichlet process; with ``alpha_prior`` only the
        starting value.
    dirichlet_prior : float or array-like of shape (n_features,), default=0.1
        a, the parameter of each cluster's Dirichlet prior (> 0); a float means a
        symmetric prior. Its sum over the features is at most 1e12, beyond which
        the densities keep no significant digit. See Notes for the default.
    sampler : str, default="gibbs+split-merge"
        The moves of a sweep, joined by "+": "gibbs", "split-merge",
        "permutation"; or "subcluster" alone, the parallel sub-cluster sampler,
        whose label step draws each cluster's probabilities p and then every
        row's label on all cores (see :class:`DPGaussianClustering`). It also
        fits a ``dask.array.Array`` X (dense or scipy.sparse chunks) on a
        ``dask.distributed`` cluster, the counts staying on the workers, with
        the draws of the same fit in process (user guide, "Scaling out").
    permutation_dp : {"beta", "exact"}, default="beta"
        The permutation move after burn-in (see :class:`DPGaussianClustering`;
        "exact" is for at most 16,384 rows). The move holds a cluster state of
        n_features + 5 doubles per open segment: the beam keeps a few open,
        "exact" (and ``beam_tolerance=0``) all N (0.8 GB at N = 10,000 rows of
        10,000 words).
    beam_tolerance : float, default=1e-32
        epsilon of the permutation move's beam (0 too is for at most 16,384
        rows: see :class:`DPGaussianClustering`).
    n_split_merge : int, default=10
        Split-merge proposals per sweep, at most 10**6.
    alpha_prior : tuple (shape, rate), default=None
        Gamma prior of alpha, resampled every sweep; None keeps alpha fixed.
    init : {"sequential", "random"}, default="sequential"
        Sequential prediction or a random clustering into ``init_clusters``.
    init_clusters : int, default=20
        Size of the random initial clustering (``init="random"`` only).
    n_iter : int, default=200
        Sweeps per chain, burn-in included.
    burn_in : int, default=100
        Sweeps discarded at the start of each chain.
    thin : int, default=2
        Keep one draw every ``thin`` sweeps after burn-in.
    n_chains : int, default=2
        Independent chains, at most 10**5; their draws are pooled.
    n_jobs : int, default=None
        Chains run at once, in threads (the sweeps release the GIL). None means
        as many as the cores OpenMP may use (``OMP_NUM_THREADS`` or threadpoolctl
        limit them), at most ``n_chains``; -1 means all processors; a joblib
        context may decide instead (user guide, :ref:`parallel_chains`). The
        draws do not depend on it.
    random_state : int, RandomState instance or None, default=None
        Fixes the initial clusterings and every draw of every chain. Pass an int for
        reproducible output across multiple function calls.
        See :term:`Glossary <random_state>`.
    verbose : int, default=0
        0 is silent. 1 shows a progress bar with the time left if tqdm is
        installed (``pip install tqdm``), else about ten progress lines per chain
        (sweep, clusters, log joint, time left); 2 prints a line every sweep.
    warm_start : bool, default=False
        Continue the chains of the previous fit on the same data for
        ``n_iter`` more sweeps, as for :class:`DPGaussianClustering`.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Point estimate of the clustering (the kept draw with the least mean
        variation of information to the others).
        It is one draw: a row on the border of overlapping clusters sits
        where that draw put it. ``predict(X)`` gives each row's most probable
        cluster instead, the clustering scikit-learn's mixtures report.
    n_clusters_ : int
        Number of clusters of ``labels_``.
    weights_ : ndarray of shape (`n_clusters_`,)
        Proportion of the training samples in each cluster of ``labels_``.
    feature_probs_ : ndarray of shape (`n_clusters_`, n_features)
        Posterior mean (a + c_k) / (A + T_k) of each cluster's probabilities given
        ``labels_`` (c_k the cluster's counts, T_k their sum, A = sum a).
    label_samples_ : ndarray of shape (n_draws, n_samples)
        Every kept draw of the clustering, chains stacked.
    trace_ : dict of ndarray of shape (n_chains, n_iter)
        ``"n_clusters"``, ``"log_joint"`` (log p(c, X), probabilities integrated
        out, multinomial coefficients included), ``"largest_cluster_size"`` and,
        with ``alpha_prior``, ``"alpha"``.
    rhat_ : dict of float
        Rank-normalised split R-hat (Vehtari et al. 2021) of each trace of
        ``trace_`` after burn-in, across chains; above 1.01 the chains have not
        mixed for final inference (a ConvergenceWarning flags log joint > 1.1).
        Values apart by rounding alone tie first (user guide, "Traces and
        convergence"), where ArviZ would tell them apart.
    ess_ : dict of float
        Bulk effective sample size of each trace after burn-in, all chains.
    n_iter_ : int
        Sweeps run per chain, by all the fits a warm start continued.
    dirichlet_prior_ : ndarray of shape (n_features,)
        The Dirichlet parameter a used.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit. Defined only when `X` has feature
        names that are all strings.

    See Also
    --------
    DPGaussianClustering : The same sampler for real vectors.

    Notes
    -----
    The model, for rows x_1..x_N of counts over V features:

    .. math::

        G \\sim DP(\\alpha, \\mathrm{Dir}(a)), \\quad p_i \\sim G, \\quad
        x_i \\sim \\mathrm{Multinomial}(|x_i|, p_i),

    the totals :math:`|x_i|` given. A cluster of rows with counts c (total T) has the
    marginal likelihood

    .. math::

        m(C) = \\frac{\\Gamma(A)}{\\Gamma(A + T)}
        \\prod_v \\frac{\\Gamma(a_v + c_v)}{\\Gamma(a_v)}
        \\prod_{i \\in C} \\frac{|x_i|!}{\\prod_v x_{iv}!},

    and a row's predictive in the cluster is the Dirichlet-multinomial with
    parameter a + c, a normalised distribution over the count vectors of the
    row's total: ``score_samples`` is :math:`\\log p(x \\mid |x|)`, the totals are not
    modelled. An all-zero row has probability 1 (log 0) under every cluster,
    so it carries no information and is clustered by the CRP prior alone. A
    Gibbs scan costs O(nnz(X) K) table reads (see ``_multinomial_kernels``).

    The default a = 0.1 per feature is the usual weak prior on word
    distributions (Griffiths & Steyvers 2004 use 0.1 for LDA's topics): with
    V = 10,473 words (the AP corpus of Liang et al. 2007, who do not give their
    value) it weighs about 1,000 pseudo-tokens, about five documents, so a
    cluster's distribution is set by its documents as soon as it holds a few.
    a = 1 (uniform) would weigh 10,473 pseudo-tokens, more than 50 documents,
    and blur the clusters of fewer documents. With few features and long rows
    (counts of a handful of categories) the opposite holds: 0.1 lets a row
    with zero counts found a cluster of its own, and a = 1 keeps it in its
    group (the example below).

    With ``sampler="subcluster"`` every cluster's state is built from block
    moments (``_family.pxd``): the counts, their total and their coefficients'
    sum over fixed blocks of rows, merged in block order, so that the draws do
    not depend on where the rows are. In process a cluster's state is merged
    from its blocks one at a time. On a cluster each chunk sends back, per
    sweep, its clusters' counts summed over its blocks (at most K x n_features
    numbers, sparse where most are zero: integers, whose sum is the same in any
    order below the bound of 2**40 on the total) and, by block and cluster,
    the five numbers whose merge order matters.

    Memory of the draws. A draw's clusters' counts are a K x V sparse matrix,
    as many entries as the clusters' rows hold distinct words (1.4 MiB a draw
    for the 96 clusters of a fit of the 2,246 AP documents, V = 10,473):
    keeping them all would make the fit's memory grow with the vocabulary
    times the number of draws, and each prediction reads every draw's counts
    (the defaults keep 100 draws). Only about 20 draws keep them, ceil(20 /
    n_chains) evenly spaced over each chain's kept draws, and `score_samples`,
    `score`, `sample` and ``predict_proba(draws="all")`` average over those
    (every kept draw when there are fewer), as :class:`DPGaussianClustering`
    does with its "full" predictive factors.
    Every draw keeps its labels (``label_samples_``) and traces; a draw
    without its counts that a method needs (the pointwise log-likelihood of
    `to_inference_data`) has them summed again from the training rows by its
    labels, O(nnz(X) + K V); during a fit of a dask array, on the workers
    that hold the rows.

    ``sample`` draws a cluster of ``labels_`` by ``weights_``, a total from the
    empirical distribution of the training rows' totals (the model leaves
    the totals free), then counts from the cluster's Dirichlet-multinomial
    predictive.

    References
    ----------
    P. Liang, M. I. Jordan and B. Taskar. A permutation-augmented sampler for DP
    mixture models. ICML 2007.

    T. L. Griffiths and M. Steyvers. Finding scientific topics. PNAS 101, 2004.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmix import DPMultinomialClustering
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.multinomial(30, [0.7, 0.1, 0.1, 0.1], size=20),
    ...                rng.multinomial(30, [0.1, 0.1, 0.1, 0.7], size=20)])
    >>> model = DPMultinomialClustering(n_iter=40, burn_in=20, random_state=0)
    >>> np.bincount(model.fit(X).labels_)  # the two groups, one row apart
    array([20, 19,  1])
    >>> X[model.labels_ == 2]  # a row of the second group, with two zero counts
    array([[ 0,  4,  0, 26]])

    A Dirichlet prior of 0.1 per feature makes zeros cheap for a cluster of its
    own; with few features and many counts per row, a uniform prior
    (``dirichlet_prior=1.0``) keeps such rows in their group (``GridSearchCV``
    picks it here by held-out log-likelihood):

    >>> model.set_params(dirichlet_prior=1.0, n_iter=60).fit(X).n_clusters_
    2
    >>> model.predict([[25, 2, 2, 1], [1, 2, 2, 25]])
    array([0, 1])
    """

    _parameter_constraints: dict = {
        **BaseCollapsedDPMixture._parameter_constraints,
        "dirichlet_prior": [Interval(Real, 0, None, closed="neither"), "array-like"],
    }

    def __init__(
        self,
        *,
        alpha=1.0,
        dirichlet_prior=0.1,
        sampler="gibbs+split-merge",
        permutation_dp="beta",
        beam_tolerance=1e-32,
        n_split_merge=10,
        alpha_prior=None,
        init="sequential",
        init_clusters=20,
        n_iter=200,
        burn_in=100,
        thin=2,
        n_chains=2,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
    ):
        self._store_parameters(locals())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags

    # -- hooks ---------------------------------------------------------------

    def _prepare(self, X, space=None):
        self._check_sampler()
        if is_dask_array(X):
            # the counts stay on the Dask workers, checked and summed there
            X = self._rows_on_workers(X)
            bad = X.first_bad_count()
            if bad is not None:
                raise ValueError(_bad_count_message(*bad))
            column_totals, totals = X.count_totals()
            check_total_count(totals)
            column_totals = column_totals.astype(np.intp)
            totals = totals.astype(np.intp)
        else:
            X = self._validate_counts(X, reset=True)
            totals = np.asarray(X.sum(axis=1), dtype=np.intp).ravel()
            with sized_by("n_features", X.shape[1]):  # (V,) totals, the prior's
                column_totals = np.asarray(X.sum(axis=0), dtype=np.intp).ravel()
        prior = real_parameter(self.dirichlet_prior, "dirichlet_prior")
        V = X.shape[1]
        if prior.ndim == 0:
            with sized_by("n_features", V):
                prior = np.full(V, float(prior))
        if prior.shape != (V,) or not np.all(np.isfinite(prior) & (prior > 0)):
            raise ValueError(
                f"dirichlet_prior must be a positive number or a positive vector of "
                f"length n_features={V}, got shape {prior.shape}."
            )
        if prior.sum() > MAX_PRIOR_STRENGTH:
            raise ValueError(
                f"dirichlet_prior sums to {prior.sum():g} over the features: at "
                f"most {MAX_PRIOR_STRENGTH:g} is supported. Beyond, the "
                "Dirichlet-multinomial densities keep no significant digit; "
                "such a prior fixes the word probabilities anyway."
            )
        self.dirichlet_prior_ = prior
        self._alpha_prior = self._resolve_alpha_prior(X.shape[0])
        self._row_totals = totals
        self._model = DirichletMultinomial(prior, column_totals, int(totals.sum()))
        return X

    def _validate_counts(self, X, reset):
        """X as CSR non-negative integer counts; a ValueError names a bad entry."""
        X = validate_numbers(
            self, X, "non-negative integer counts", accept_sparse="csr",
            dtype=_DTYPES, reset=reset,
        )
        values = X.data if sparse.issparse(X) else X
        # negative values first: scikit-learn's own wording for them
        bad = values < 0
        if not np.any(bad):
            bad = values != np.round(values)
        if np.any(bad):
            if sparse.issparse(X):
                e = int(np.flatnonzero(bad)[0])
                row = int(np.searchsorted(X.indptr, e, side="right")) - 1
                column, value = int(X.indices[e]), X.data[e]
            else:
                row, column = (int(k) for k in np.argwhere(bad)[0])
                value = X[row, column]
            raise ValueError(_bad_count_message(row, column, value))
        # before the cast to int64, which would wrap a total past 2**63; new rows
        # meet the training counts one at a time
        check_total_count(float_sums(X, 1), each_row=not reset)
        # a canonical CSR copy (the caller's matrix is left alone)
        X = sparse.csr_matrix(X, dtype=np.int64, copy=True)
        X.sum_duplicates()
        return X

    def _chain_factory(self, X):
        empty = sparse.csr_matrix((0, X.shape[1]), dtype=np.int64)
        return self._chain_over(self._model, X, empty)

    def _check_new_data(self, X):
        return self._validate_counts(X, reset=False)

    def _component_log_density(self, X, parameters):
        return self._model.log_predictive(parameters[0], X)

    def _density_row_bytes(self, X):
        # row_statistics: about six intp or double arrays over the entries
        return -(-48 * X.nnz // max(X.shape[0], 1))

    def _left_out_row_bytes(self, X):
        # row_statistics again, and about six arrays over the entries of
        # the left-out predictive's gain
        return -(-96 * X.nnz // max(X.shape[0], 1))

    def _own_cluster_loo_log_density(self, X, labels, parameters, density):
        # The Dirichlet-multinomial predictive of x given its cluster's counts
        # less x itself, c' = c - x (T' = T - |x| tokens):
        #   log |x|! - sum_v log x_v! + lgamma(A + T - |x|) - lgamma(A + T)
        #   + sum_{v: x_v > 0} [lgamma(a_v + c_v) - lgamma(a_v + c_v - x_v)],
        # the kernel's formula (_multinomial_kernels.pyx) with c' put in.
        counts = parameters[0]
        _, indices, values, totals, coefs = row_statistics(X)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        prior = self.dirichlet_prior_[indices]
        held = _csr_entries(counts, labels[rows], indices)
        gain = np.bincount(
            rows,
            weights=gammaln(prior + held) - gammaln(prior + held - values),
            minlength=X.shape[0],
        )
        total_prior = self.dirichlet_prior_.sum()
        cluster_totals = np.asarray(counts.sum(axis=1)).ravel()[labels]
        return (
            coefs
            + gammaln(total_prior + cluster_totals - totals)
            - gammaln(total_prior + cluster_totals)
            + gain
        )

    # -- draws: only PREDICTIVE_DRAWS of them keep their K x V counts ----------

    @property
    def _predictive_draws_kept(self):
        return PREDICTIVE_DRAWS  # read when called: tests may patch it

    def _draw_trimmer(self, data_units=False):
        return _trim_draw

    def _draw_is_whole(self, parameters):
        return parameters[0] is not None

    def _family_over(self, rows, n_rows):
        if rows is None:
            rows = sparse.csr_matrix((0, self.n_features_in_), dtype=np.int64)
        return self._model.family(rows)

    def _chain_rows(self):
        rows = self._X_fit
        return self._check_new_data(rows.compute()) if is_dask_array(rows) else rows

    def _whole_from_described(self, parameters, described):
        return (*described, *parameters[1:])  # described: (counts,)

    def _new_cluster_log_density(self, X):
        empty = sparse.csr_matrix((1, X.shape[1]), dtype=np.int64)
        return self._model.log_predictive(empty, X)[:, 0]

    def _posterior_parameters(self, counts):
        """a + c_k, dense (K, n_features), for the clusters of one draw."""
        return counts.toarray() + self.dirichlet_prior_

    def _describe_clusters(self, parameters):
        posterior = self._posterior_parameters(parameters[0])
        self.feature_probs_ = posterior / posterior.sum(axis=1, keepdims=True)

    def _sample_new_clusters(self, n_samples, rng):
        empty = sparse.csr_matrix((1, self.n_features_in_), dtype=np.int64)
        components = np.zeros(n_samples, dtype=np.intp)
        return self._sample_components(components, (empty,), rng)

    def _sample_components(self, components, parameters, rng):
        posterior = self._posterior_parameters(parameters[0])
        totals = rng.choice(self._row_totals, size=len(components))
        out = np.empty((len(components), posterior.shape[1]), dtype=np.int64)
        for r, (k, total) in enumerate(zip(components, totals)):
            out[r] = rng.multinomial(total, rng.dirichlet(posterior[k]))
        return out


# The most counts X may hold in all. The likelihood is made of differences of
# lgamma(a + m), which is near m log m: at m = 2**40 about 3e13, whose last bit
# is 0.004, so that beyond this bound the differences lose their precision (and
# int64 sums come within reach of wrapping). Float64 sums of such counts are
# exact (below 2**53), so the bound is checked before any cast to int64.
MAX_TOTAL_COUNT = 2**40


def check_total_count(row_totals, *, each_row=False):
    """Raise a ValueError if the counts, of float64 ``row_totals``, sum past
    ``MAX_TOTAL_COUNT`` (``each_row``: if a row's total does), naming the row of
    the largest total."""
    row = int(np.argmax(row_totals))
    largest = row_totals[row]
    if each_row:
        if not largest <= MAX_TOTAL_COUNT:
            raise ValueError(
                f"Row {row} of X holds {largest:.4g} counts, more than 2**40 = "
                f"{MAX_TOTAL_COUNT:.4g}, beyond which the model's log-gamma terms "
                "lose their precision. Scale the counts down."
            )
        return
    total = float(np.sum(row_totals, dtype=np.float64))
    if not total <= MAX_TOTAL_COUNT:
        raise ValueError(
            f"X's counts sum to {total:.4g}, more than 2**40 = {MAX_TOTAL_COUNT:.4g}, "
            "beyond which the model's log-gamma terms lose their precision; row "
            f"{row} holds the largest total, {largest:.4g}. Scale the counts down "
            "or fit a sample of the rows."
        )


def _trim_draw(parameters, whole):
    """A kept draw as DPMultinomialClustering keeps it (the engine's
    ``trim_draw``): only a ``whole`` draw keeps its K x V counts, so that the
    memory of a fit does not grow with the vocabulary times the draws."""
    return tuple(parameters) if whole else (None, *parameters[1:])


def _bad_count_message(row, column, value):
    # negative values in scikit-learn's own wording
    return (
        ("Negative values in data: " if value < 0 else "")
        + f"X must hold non-negative integer counts; row {row}, column {column} "
        f"holds {value}."
    )


def _csr_entries(matrix, rows, columns):
    """``matrix[rows, columns]`` of a CSR matrix, as a float array.

    A binary search over the stored entries, ordered by (row, column), without
    SciPy's broadcast copies of the indices: O(nnz(matrix)) memory and time to
    order the keys, then O(log nnz(matrix)) an entry.
    """
    if not matrix.has_canonical_format:  # sorted, duplicates summed
        matrix = matrix.copy()
        matrix.sum_duplicates()
    n_columns = matrix.shape[1]
    keys = np.repeat(
        np.arange(matrix.shape[0], dtype=np.int64) * n_columns, np.diff(matrix.indptr)
    )
    keys += matrix.indices
    wanted = rows.astype(np.int64) * n_columns + columns
    if not len(keys):
        return np.zeros(len(wanted))
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    entries = np.where(keys[at] == wanted, matrix.data[at], 0.0)
    return entries.astype(np.float64, copy=False)
