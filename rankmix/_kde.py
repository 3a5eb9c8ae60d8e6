# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""MallowsKernelDensity: the kernel density estimator of Lebanon & Mao (2008)."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils import check_random_state, gen_batches
from sklearn.utils.validation import check_is_fitted

from . import _kde_kernels, _kernels
from ._base import INTP_MAX
from ._sklearn_compat import Interval, _fit_context, check_parameters
from ._validation import (
    check_query_rankings,
    check_rank_names,
    check_training_rankings,
    column_names,
    record_column_names,
    sized_by,
)
from .mallows import _check_count, _sample_codes

# The largest bandwidth (``_parameter_constraints``).
MAX_BANDWIDTH = 1e12

# Most completions' entries (draws x n_items) `sample` holds at once.
SAMPLE_BATCH_ENTRIES = 2**20


class MallowsKernelDensity(DensityMixin, BaseEstimator):
    """Kernel density estimate over top-t rankings with a Mallows kernel.

    The density of a top-t ranking is the average over the training rankings of a
    Mallows kernel centred at each of them (Lebanon & Mao, 2008): the Mallows
    model with one dispersion ``theta``, the bandwidth, summed over the
    completions of both partial rankings (see Notes). Training and query
    rankings may be top-t rankings of any lengths.

    Read more in the :ref:`User Guide <kde>`.

    Parameters
    ----------
    bandwidth : float, default=1.0
        The kernel's dispersion theta, 0 < theta <= 1e12. Unlike a Gaussian kernel's
        width, a **larger theta means a narrower kernel**: theta -> 0 spreads
        each kernel uniformly over all rankings, theta -> infinity concentrates
        it on the completions of its training ranking.
    n_items : int, default=None
        Number of items n; item ids are 0 to n - 1. None takes the largest item
        id of the training data + 1 (and warns if item 0 is in no ranking); pass
        it when held-out rankings may hold ids the training data miss
        (cross-validation).

    Attributes
    ----------
    rankings_ : ndarray of shape (n_samples, t_max)
        The training rankings, padded with -1 (the estimate keeps them all).
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
    DPMallowsClustering : A DP mixture of Mallows models: a few clusters, one
        dispersion per rank, fitted by MCMC.
    sklearn.neighbors.KernelDensity : The same estimator for vectors.

    Notes
    -----
    With training rankings :math:`\\pi_1, \\dots, \\pi_N` over :math:`n` items, the
    density of a top-t ranking :math:`\\pi` is

    .. math::

        p(\\pi) = \\frac{1}{N} \\sum_{i=1}^{N} K_\\theta(\\pi, \\pi_i), \\qquad
        K_\\theta(\\pi, \\pi_i) = \\frac{1}{|S_{\\pi_i}|}
        \\sum_{\\sigma \\in S_{\\pi_i}} \\sum_{\\tau \\in S_\\pi}
        \\frac{e^{-\\theta d(\\tau, \\sigma)}}{Z_n(\\theta)},

    where :math:`S_\\pi` is the coset of :math:`\\pi` (its :math:`(n-t)!` completions
    to full rankings), :math:`d` the Kendall distance and :math:`Z_n(\\theta) =
    \\prod_{j=1}^{n} \\psi_{n-j}(\\theta)` the Mallows normaliser. The kernel is the
    probability of the coset :math:`S_\\pi` when :math:`\\sigma` is drawn uniformly
    among the completions of :math:`\\pi_i` and a full ranking from the Mallows
    model centred at :math:`\\sigma`. It has the closed form

    .. math::

        K_\\theta(\\pi, \\pi_i) = e^{-\\theta D(\\pi, \\pi_i)}
        \\frac{\\prod_{j=1}^{k} \\psi_{m-j}(\\theta) / (m - j + 1)}
        {\\prod_{j=1}^{t} \\psi_{n-j}(\\theta)},

    with :math:`m = n - t_i` the number of items :math:`\\pi_i` leaves unranked,
    :math:`k` the number of items of :math:`\\pi` among them, and :math:`D` the
    number of pairs that :math:`\\pi` puts in one order and :math:`\\pi_i` in the
    other (a pair is ordered by a top-t ranking when it ranks both items, or
    ranks one, which then comes first). Derivation: the sum over
    :math:`\\tau \\in S_\\pi` is the GM probability :math:`\\prod_{j \\le t}
    e^{-\\theta s_j(\\pi | \\sigma)} / \\psi_{n-j}(\\theta)`; the codes sum to
    :math:`D` plus the discordances among the :math:`m` items that
    :math:`\\pi_i` leaves free, whose order under :math:`\\sigma` is uniform.
    Those discordances are the codes of the :math:`k` items that :math:`\\pi`
    ranks among them against a uniform permutation of :math:`m` items:
    independent and uniform on :math:`0..m-j`, so their exponential moment
    factorises by stage into :math:`\\psi_{m-j}(\\theta) / (m - j + 1)`.

    **What is normalised.** Each kernel is a probability over the cosets of one
    length, and the top-t cosets partition the full rankings, so for every
    :math:`t` the density sums to one over the :math:`n!/(n-t)!` top-t rankings,
    whatever the lengths of the training rankings. A query row of length
    :math:`t` is scored among the top-t rankings of its own length; rows of
    different lengths in one ``X`` are each scored that way. The densities of
    the different lengths are the marginals of one distribution over full
    rankings, so :math:`p(\\pi)` is the sum of :math:`p` over the top-(t+1)
    rankings that extend :math:`\\pi`.

    **Cost.** A query-training pair costs at most :math:`O(t_i + t^2)` integer work
    (independent of :math:`n`): ``score_samples`` on :math:`M` queries takes
    :math:`O(M N (t_{max} + t^2))` time, linear in the training size :math:`N`,
    and :math:`O(n)` memory besides the inputs and the output (no :math:`M \\times
    N` array). ``fit`` only validates and stores the rankings, in :math:`O(N
    t_{max})`. ``sample`` costs :math:`O(n \\log n + n t)` per draw (a uniform
    completion, then the Mallows draw).

    References
    ----------
    .. [1] G. Lebanon and Y. Mao, "Non-parametric modeling of partially ranked
       data", Journal of Machine Learning Research 9, 2401-2429, 2008.
    .. [2] M. Meila and H. Chen, "Dirichlet process mixtures of generalized
       Mallows models", UAI 2010, section 7.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmix import MallowsKernelDensity
    >>> X = [[0, 1, 2], [0, 2, 1], [1, 0], [0]]
    >>> kde = MallowsKernelDensity(bandwidth=1.0, n_items=4).fit(X)
    >>> np.round(np.exp(kde.score_samples([[0, 1, 2], [3, 2, 1], [0]])), 4)
    array([0.1536, 0.003 , 0.5422])
    >>> kde.sample(2, random_state=0, t=2).shape
    (2, 2)
    """

    _parameter_constraints: dict = {
        # past e^-theta's underflow (theta ~ 745) the kernel is a point mass on
        # its ranking's completions already; 1e12 keeps theta times any
        # distance (at most n^2 / 2 < 2**61) finite
        "bandwidth": [Interval(Real, 0, MAX_BANDWIDTH, closed="right")],
        # n_items sizes an O(n) scratch array and reaches compiled code as a C
        # integer (np.intp)
        "n_items": [Interval(Integral, 1, INTP_MAX, closed="both"), None],
    }

    def __init__(self, bandwidth=1.0, *, n_items=None):
        self.bandwidth = bandwidth
        self.n_items = n_items

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Store the training rankings.

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
        self.rankings_, self.n_items_ = check_training_rankings(X, self.n_items)
        self.n_features_in_ = self.rankings_.shape[1]
        record_column_names(self, names)
        return self

    def score_samples(self, X):
        """Log density of each top-t ranking, among the rankings of its length.

        Parameters
        ----------
        X : array-like of shape (n_queries, t_max) or list of sequences
            Top-t rankings, best first, padded with -1; any lengths, ids in
            ``[0, n_items_)``.

        Returns
        -------
        log_density : ndarray of shape (n_queries,)
            ``log p(X[i])``; for each length t these densities sum to one over
            all top-t rankings.
        """
        check_is_fitted(self)
        check_parameters(self)  # the bandwidth is read here, not at fit
        check_rank_names(self, X)
        X = check_query_rankings(X, self.n_items_, inferred=self.n_items is None)
        with sized_by("n_items", self.n_items_):  # work vectors of n_items
            return _kde_kernels.log_density(
                X, self.rankings_, self.n_items_, float(self.bandwidth)
            )

    def score(self, X, y=None):
        """Total log-likelihood of the rankings (higher is better).

        As in :class:`sklearn.neighbors.KernelDensity`, so that ``GridSearchCV``
        selects ``bandwidth`` by held-out likelihood.

        Parameters
        ----------
        X : array-like of shape (n_queries, t_max) or list of sequences
            Top-t rankings, best first, padded with -1.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        log_likelihood : float
            The sum of :meth:`score_samples`.
        """
        return float(self.score_samples(X).sum())

    def sample(self, n_samples=1, random_state=None, *, t=None):
        """Draw top-t rankings from the density, exactly.

        Each draw picks a training ranking uniformly, completes it uniformly at
        random to a full ranking sigma, and draws a top-t ranking from the
        Mallows model centred at sigma with dispersion ``bandwidth``.

        Parameters
        ----------
        n_samples : int, default=1
            Number of rankings to draw.
        random_state : int, RandomState instance or None, default=None
            Pass an int for reproducible output across multiple function calls.
            See :term:`Glossary <random_state>`.
        t : int, default=None
            Length of each drawn ranking, in ``1..n_items_``; None means the
            longest training ranking, `n_features_in_`. The first ``t'`` items of
            a draw are a draw of a top-t' ranking.

        Returns
        -------
        X : ndarray of shape (n_samples, t)
            The rankings, best first.
        """
        check_is_fitted(self)
        check_parameters(self)
        n_samples = _check_count(n_samples, "n_samples", minimum=1)
        t = self.n_features_in_ if t is None else _check_count(t, "t", minimum=1)
        if t > self.n_items_:
            raise ValueError(
                f"t={t} exceeds the number of items n_items_={self.n_items_}."
            )
        rng = check_random_state(random_state)
        theta = np.full(t, float(self.bandwidth))
        with sized_by("n_samples", n_samples):
            out = np.empty((n_samples, t), dtype=np.intp)
        # in batches of draws: each completion is a full ranking, n_items_
        # sorting keys a draw (a fixed batch, so that the draws of a
        # random_state do not depend on any setting)
        batch = max(1, SAMPLE_BATCH_ENTRIES // self.n_items_)
        for rows in gen_batches(n_samples, batch):
            n_rows = rows.stop - rows.start
            picked = self.rankings_[rng.randint(len(self.rankings_), size=n_rows)]
            with sized_by("n_items", self.n_items_):  # n_items keys a draw
                sigmas = _uniform_completions(picked, self.n_items_, rng)
            codes = _sample_codes(theta, self.n_items_, n_rows, rng)
            out[rows] = _kernels.rankings_from_codes_rows(codes, sigmas)
        return out


def _uniform_completions(rows, n_items, rng):
    """Each top-t row completed to a full ranking, the rest in uniform random order.

    Sorting keys: the ranked items get negative keys in their order, the others
    independent uniforms on [0, 1), whose order is a uniform permutation.
    """
    keys = rng.random_sample((len(rows), n_items))
    which, place = np.nonzero(rows >= 0)
    keys[which, rows[which, place]] = place - rows.shape[1]
    return np.argsort(keys, axis=1, kind="stable").astype(np.intp)
