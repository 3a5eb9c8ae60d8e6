# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""MallowsBlurringMeanShift: exponential blurring mean-shift (EBMS) over rankings."""

from numbers import Integral

import numpy as np
from scipy.optimize import brentq
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from . import _ebms_kernels, _kernels
from ._base import INTP_MAX, logsumexp_overwrite, row_batches, rows_per_batch
from ._mallows import _check_chain_memory
from ._sklearn_compat import Interval, _fit_context
from ._validation import (
    check_query_rankings,
    check_rank_names,
    check_training_rankings,
    column_names,
    record_column_names,
)
from ._warnings import warn

# Largest dispersion: every pair that a ranking reverses costs a factor e^-20, a
# point mass for any data set; it stands for the infinite maximum-likelihood
# estimate of rankings that never disagree with their centre.
_THETA_MAX = 20.0


class MallowsBlurringMeanShift(ClusterMixin, BaseEstimator):
    """Exponential blurring mean-shift (EBMS) clustering of top-t rankings.

    The nonparametric clustering of Meila & Bao (2008), Meila & Chen's (2010)
    third method: every ranking moves, again and again, to the consensus of all
    rankings weighted by a Mallows kernel with one dispersion (equal thetas)
    around it, until no ranking moves; the rankings that meet form a cluster.
    The kernel width is set from the data (the dispersion of one GM model
    fitted to all of it), so the method has no parameter to tune and no
    stopping rule. For held-out scoring
    the clusters become a mixture of GM models (see Notes).

    Read more in the :ref:`User Guide <ebms>`.

    Parameters
    ----------
    n_items : int, default=None
        Number of items n; item ids are 0 to n - 1. None takes the largest item
        id of the training data + 1 (and warns if item 0 is in no ranking); pass
        it when held-out rankings may hold ids the training data miss
        (cross-validation). At most 16,384: each blurring step holds an
        n x n float64 matrix (2 GiB there).

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Cluster of each training ranking, numbered by first appearance.
    n_clusters_ : int
        Number of clusters K (distinct rankings where the blurring stopped).
    central_rankings_ : ndarray of shape (n_clusters, n_items)
        The cluster centres, full rankings best first: the first
        `n_features_in_` items are where the cluster's rankings stopped (the
        top-t centre), the rest in the consensus order of the cluster's
        training rankings.
    weights_ : ndarray of shape (n_clusters,)
        Share of the training rankings in each cluster.
    thetas_ : ndarray of shape (n_clusters,)
        Dispersion of each cluster's GM model (equal at every stage), the
        maximum-likelihood estimate from its rankings; used by
        :meth:`score_samples` and :meth:`predict`.
    bandwidth_ : float
        The kernel width theta used by the blurring (larger is narrower).
    n_iter_ : int
        Number of blurring steps, the last one moving nothing.
    n_items_ : int
        Number of items.
    n_features_in_ : int
        Width t_max of the training array (its longest ranking).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the training data's first `n_features_in_` columns, its ranks.
        Defined only when X has column names that are all strings (a pandas
        data frame). Rankings given later as a frame must name their columns
        alike and in this order, as scikit-learn checks features; they may hold
        fewer of them (shorter rankings).

    See Also
    --------
    MallowsKernelDensity : The kernel density whose kernel EBMS blurs with.
    DPMallowsClustering : A DP mixture of GM models, fitted by MCMC.
    sklearn.cluster.MeanShift : (Non-blurring) mean-shift for vectors.

    Notes
    -----
    Our reading of Meila & Bao (2008) and Meila & Chen (2010, section 7); the
    text of Meila & Bao was not at hand, so the kernel-width rule and the
    scoring model below are stated as what this class does.

    **Blurring step.** Let :math:`\\sigma_1, \\dots, \\sigma_N` be the current
    points, top-t rankings with :math:`t = t_{max}` (at the start, the training
    rankings). Every point moves at once to

    .. math::

        \\sigma_i \\leftarrow \\operatorname{top}_t \\arg\\min_{\\sigma}
        \\sum_{j=1}^{N} K_\\theta(\\sigma_i \\mid \\sigma_j)\\, d(\\sigma_j, \\sigma),

    where :math:`K_\\theta(\\cdot \\mid \\sigma_j)` is the Mallows kernel of
    :class:`MallowsKernelDensity` centred at :math:`\\sigma_j` (the GM model
    with all thetas equal to :math:`\\theta`, averaged over the completions
    of :math:`\\sigma_j`) and :math:`d(\\pi, \\sigma) = \\sum_j s_j(\\pi \\mid
    \\sigma)` the number of pairs that :math:`\\pi` orders and :math:`\\sigma`
    reverses. The minimiser is the maximum-likelihood central ranking of the
    weighted points under the equal-theta GM model: the weighted mean of
    mean-shift, taken in the space of the exponential family's sufficient
    statistics (hence "exponential", as we read the name), mapped back to a
    ranking; "blurring" because the points themselves move, not copies of
    them. It is a weighted
    Kemeny problem, solved by the greedy stagewise rule then adjacent
    transpositions while they lower the sum (locally optimal, deterministic).

    **Stopping and clusters.** The points live in a finite set, so there is no
    tolerance: the iteration stops when a step moves no point (a fixed point);
    the distinct final points are the clusters. Points that meet stay together
    (they have the same weights from then on), so they are merged and each
    step costs :math:`O(U^2 t^2 + U n^2)` for :math:`U` distinct points
    (:math:`U \\le N`, falling fast). Should the steps cycle (a finite
    deterministic map either stops or cycles), it stops at the first repeated
    state with a :class:`~sklearn.exceptions.ConvergenceWarning`.

    **Kernel width.** :math:`\\theta` is the maximum-likelihood dispersion of
    one equal-theta GM model fitted to all the training rankings (their
    consensus as centre): the kernel is as wide as the data's overall spread,
    no outside parameter. With several groups that spread is wide, so each
    group's rankings outvote every single one of them and the group collapses
    to one point, while the few votes that cross between well-separated
    groups do not move them. On Meila & Chen's Fig. 8 data (K = 3,
    theta = 1, n = 12, t = 5; ``benchmarks/bench_mallows_heldout.py``) the
    kernel width is 0.25 to 0.38 and EBMS finds the 3 groups, or splits one
    in two on its last place (VI to the truth about 0.2): two top-t rankings
    that differ only there are far apart under the kernel, which averages
    over the completions.
    The limit of the rule: a single tight group gets a kernel as narrow as the
    group, too narrow for a ranking's neighbours to outvote it, and EBMS then
    splits it into many small clusters.

    **Held-out likelihood (Meila & Chen's Fig. 8).** EBMS is not a
    generative model; its clusters are scored as the mixture

    .. math::

        p(\\pi) = \\sum_{k=1}^{K} w_k\\, GM(\\pi \\mid \\sigma_k, \\theta_k),

    with :math:`w_k` the share of the training rankings in cluster :math:`k`,
    :math:`\\sigma_k` its centre (completed below its first t places by the
    consensus of the cluster's rankings) and :math:`\\theta_k` (equal at
    every stage) the maximum-likelihood dispersion of its rankings around
    :math:`\\sigma_k`; when those show no spread (every code zero, e.g. a
    single ranking) the likelihood has no maximum and :math:`\\theta_k =`
    ``bandwidth_``. Each GM model is normalised over the top-t rankings for
    every t, so :math:`p` is too.

    **Cost.** Each blurring step is quadratic in the number :math:`U` of
    distinct points, :math:`O(U^2 (t + t^2) + U n^2)` for :math:`n` items
    and rankings of length :math:`t`, and :math:`O(U t + n^2)` memory;
    the first step has :math:`U \\le N` (the distinct training rankings),
    later ones far fewer; the kernel width costs :math:`O(N t^2 + n^2)`;
    ``score_samples`` on :math:`M` rankings costs :math:`O(M K t^2)`.

    References
    ----------
    .. [1] M. Meila and L. Bao, "Estimation and clustering with infinite
       rankings", UAI 2008.
    .. [2] M. Meila and H. Chen, "Dirichlet process mixtures of generalized
       Mallows models", UAI 2010, section 7 and Figure 8.
    .. [3] G. Lebanon and Y. Mao, "Non-parametric modeling of partially ranked
       data", Journal of Machine Learning Research 9, 2401-2429, 2008.

    Examples
    --------
    >>> from rankmix import MallowsBlurringMeanShift
    >>> from rankmix.datasets import make_mallows_mixture
    >>> X, y, _ = make_mallows_mixture(n_clusters=2, n_per_cluster=40, n_items=8,
    ...                                t=4, theta=2.0, random_state=0)
    >>> model = MallowsBlurringMeanShift().fit(X)
    >>> model.n_clusters_
    2
    >>> model.central_rankings_.shape
    (2, 8)
    """

    _parameter_constraints: dict = {
        # n_items sizes O(n^2) scratch and reaches compiled code as np.intp
        "n_items": [Interval(Integral, 1, INTP_MAX, closed="both"), None],
    }

    def __init__(self, *, n_items=None):
        self.n_items = n_items

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Cluster the rankings by blurring them to their modes.

        Parameters
        ----------
        X : array-like of shape (n_samples, t_max) or list of sequences
            Top-t rankings, best first, padded with -1.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        names = column_names(X)
        X, n_items = check_training_rankings(X, self.n_items)
        _check_chain_memory(
            n_items, self.n_items is None, type(self).__name__, "each blurring step"
        )
        points, owner = np.unique(X, axis=0, return_inverse=True)
        owner = owner.ravel()
        counts = np.bincount(owner).astype(np.float64)
        theta = _kernel_width(X, n_items)
        points, owner, n_iter = _blur(points, counts, owner, n_items, theta)
        # number the clusters by the first training ranking in each
        _, first = np.unique(owner, return_index=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        labels = rank[owner].astype(np.intp)
        centres = _complete_centres(X, labels, points[order], n_items)
        thetas = _cluster_dispersions(X, labels, centres, theta)
        # set only now: a fit that raised before left the estimator as it was
        self.labels_, self.central_rankings_, self.thetas_ = labels, centres, thetas
        self.n_clusters_ = len(order)
        self.weights_ = np.bincount(labels) / len(X)
        self.bandwidth_ = theta
        self.n_iter_ = n_iter
        self.n_items_ = n_items
        self.n_features_in_ = X.shape[1]
        record_column_names(self, names)
        return self

    def _reduced_log_joint(self, X, reduce, dtype):
        """``reduce`` of the (rows, K) table log w_k + log GM(x | sigma_k,
        theta_k) of each batch of rows whose table fits scikit-learn's
        ``working_memory``; ``reduce`` may overwrite the table."""
        check_is_fitted(self)
        check_rank_names(self, X)
        X = check_query_rankings(X, self.n_items_, inferred=self.n_items is None)
        thetas = np.repeat(self.thetas_[:, None], X.shape[1], axis=1)
        log_weights = np.log(self.weights_)  # every cluster holds a ranking
        out = np.empty(X.shape[0], dtype=dtype)
        # the table and a margin of one more
        for rows, X_rows in row_batches(X, rows_per_batch(16 * len(log_weights))):
            table = _kernels.log_likelihood(X_rows, self.central_rankings_, thetas)
            table += log_weights
            out[rows] = reduce(table)
        return out

    def predict(self, X):
        """The most probable cluster of each ranking under the scoring mixture.

        Scored in batches, as `score_samples`.

        Parameters
        ----------
        X : array-like of shape (n_queries, t_max) or list of sequences
            Top-t rankings, best first, padded with -1.

        Returns
        -------
        labels : ndarray of shape (n_queries,)
            ``argmax_k w_k GM(x | sigma_k, theta_k)``. On the training data it
            mostly, not always, agrees with ``labels_`` (the blurring's clusters).
        """
        return self._reduced_log_joint(X, lambda table: table.argmax(axis=1), np.intp)

    def score_samples(self, X):
        """Log density of each top-t ranking under the clusters' GM mixture.

        The rankings are scored in batches whose (rows, K) table fits
        scikit-learn's ``working_memory`` (``sklearn.set_config``).

        Parameters
        ----------
        X : array-like of shape (n_queries, t_max) or list of sequences
            Top-t rankings, best first, padded with -1; ids in ``[0, n_items_)``.

        Returns
        -------
        log_density : ndarray of shape (n_queries,)
            ``log sum_k w_k GM(x | sigma_k, theta_k)``; for each length t these
            densities sum to one over all top-t rankings.
        """
        # each batch's table is fresh: summed in place, without scipy's
        # temporaries
        return self._reduced_log_joint(
            X, lambda table: logsumexp_overwrite(table, axis=1), np.float64
        )

    def score(self, X, y=None):
        """Mean log-likelihood per ranking (higher is better).

        Parameters
        ----------
        X : array-like of shape (n_queries, t_max) or list of sequences
            Top-t rankings, best first, padded with -1.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        log_likelihood : float
            The mean of :meth:`score_samples`, as DPMallowsClustering's.
        """
        return float(self.score_samples(X).mean())


def _kernel_width(X, n_items):
    """The dispersion of one GM model fitted to all the rankings (see Notes)."""
    sigma = _ebms_kernels.weighted_consensus(X, np.ones(len(X)), n_items)
    return _dispersion_ml(X, sigma, _THETA_MAX)


def _blur(points, counts, owner, n_items, theta):
    """Blurring steps until no point moves.

    Returns the final distinct points, the point of each training ranking and
    the number of steps.
    """
    # the states met so far (points sorted as np.unique sorts them, and counts)
    seen = {points.tobytes() + counts.tobytes()}
    n_iter = 0
    while True:
        moved = _ebms_kernels.blur_step(points, counts, n_items, theta)
        n_iter += 1
        if np.array_equal(moved, points):
            return points, owner, n_iter
        points, merged = np.unique(moved, axis=0, return_inverse=True)
        merged = merged.ravel()
        counts = np.bincount(merged, weights=counts)
        owner = merged[owner]
        state = points.tobytes() + counts.tobytes()
        if state in seen:
            warn(
                f"The blurring mean-shift cycled after {n_iter} steps instead of "
                "stopping; the clusters are those of the first repeated state.",
                ConvergenceWarning,
            )
            return points, owner, n_iter
        seen.add(state)


def _complete_centres(X, labels, tops, n_items):
    """Each cluster's top-t centre, then the other items in its rankings' order.

    The blurring fixes only the first t places (its points are top-t rankings,
    which say nothing of the order of the items below them); the rest follow
    the consensus of the cluster's training rankings.
    """
    centres = np.empty((len(tops), n_items), dtype=np.intp)
    for k, top in enumerate(tops):
        members = np.ascontiguousarray(X[labels == k])
        full = _ebms_kernels.weighted_consensus(members, np.ones(len(members)), n_items)
        centres[k] = np.concatenate([top, full[~np.isin(full, top)]])
    return centres


def _cluster_dispersions(X, labels, centres, fallback):
    """Maximum-likelihood equal-stage theta of each cluster around its centre."""
    thetas = np.empty(len(centres))
    for k, centre in enumerate(centres):
        members = np.ascontiguousarray(X[labels == k])
        thetas[k] = _dispersion_ml(members, centre, fallback)
    return thetas


def _dispersion_ml(X, sigma, fallback):
    """Maximum-likelihood theta (equal at every stage) of GM(X | sigma, theta).

    The GM log-likelihood with one theta is concave, its derivative zero where
    the expected summed codes equal the observed ``total``; ``E_theta[s_j]``
    falls from ``(n-1-j)/2`` at theta = 0 to 0, so the root is unique when it
    exists. ``fallback`` when every code is zero (no maximum).
    """
    n_items = len(sigma)
    codes = _kernels.codes(X, sigma[None, :])[0]
    # rankings that reach stage j, whose code ranges over 0..n-1-j
    per_stage = np.count_nonzero(codes >= 0, axis=0)
    total = float(codes[codes > 0].sum())
    if total == 0:
        return fallback
    top = n_items - np.arange(len(per_stage))  # stage j takes top[j] values
    k = np.arange(n_items)

    def excess(theta):
        mass = np.exp(-theta * k)[None, :] * (k[None, :] < top[:, None])
        mean = (mass @ k) / mass.sum(axis=1)
        return float(per_stage @ mean) - total

    if excess(0.0) <= 0:
        return 0.0
    if excess(_THETA_MAX) >= 0:
        return _THETA_MAX
    return float(brentq(excess, 0.0, _THETA_MAX, xtol=1e-10))
