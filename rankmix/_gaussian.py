# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPGaussianClustering: Dirichlet-process mixtures of Gaussians, collapsed MCMC."""

from functools import partial
from numbers import Real

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import gammaln

from . import _subcluster_chain
from ._base import PREDICTIVE_DRAWS
from ._collapsed import BaseCollapsedDPMixture
from ._distributed import block_moments, is_dask_array, merge_moments
from ._gaussian_kernels import NIWModel, student_t_log_density
from ._gaussian_kernels import describe_states as describe_niw_states
from ._isotropic_kernels import IsotropicModel
from ._isotropic_kernels import describe_states as describe_isotropic_states
from ._sklearn_compat import Interval, StrOptions
from ._validation import MAX_PRIOR_STRENGTH, real_parameter, validate_numbers
from ._warnings import warn

# Default prior (see the class Notes): the prior mean of a cluster's precision is
# PRIOR_SHRINK times the inverse of the data covariance, i.e. a typical cluster is
# 1 / sqrt(PRIOR_SHRINK) as wide as the data in each direction.
PRIOR_SHRINK = 10.0
# Relative ridge on the empirical covariance, so that the default prior scale is
# positive definite for collinear or constant features (as sklearn's reg_covar).
COVARIANCE_RIDGE = 1e-6


# The smallest kappa_0 (``_parameter_constraints``).
MIN_KAPPA = 1e-300


class DPGaussianClustering(BaseCollapsedDPMixture):
    """Cluster vectors with a Dirichlet-process mixture of Gaussians.

    Each cluster is a Gaussian with unknown mean and covariance under the conjugate
    Normal-inverse-Wishart prior (or, with ``covariance_type``, a diagonal or
    spherical covariance under its conjugate prior, or a known covariance shared
    by all clusters); a Dirichlet process prior lets the data choose the
    number of clusters. Means and covariances are integrated out, and the
    clustering is sampled by collapsed Gibbs sweeps (Neal 2000, algorithm 3),
    exact split-merge moves (Dahl 2003) and permutation-augmented moves (Liang,
    Jordan & Taskar 2007), compiled and run with the GIL released.

    Parameters
    ----------
    alpha : float, default=1.0
        Concentration of the Dirichlet process: larger values favour more clusters.
        With ``alpha_prior`` it is only the starting value.
    nu : float, default=None
        Degrees of freedom nu_0 of the inverse-Wishart prior of each cluster's
        covariance (scikit-learn's ``degrees_of_freedom_prior``); must exceed
        ``n_features - 1`` (``"full"``) or 0 (``"diag"``, ``"spherical"``). None
        means ``n_features + 2`` (``"full"``) or 3 (``"diag"``, ``"spherical"``),
        the smallest integer for which the prior mean of the covariance exists
        (see Notes). For ``"spherical"`` it is twice the shape of the
        inverse-gamma prior of sigma^2, one for all features. At most 1e12,
        beyond which the densities keep no significant digit. Ignored for
        ``"fixed"``.
    kappa : float, default=0.1
        Precision scaling kappa_0 of the prior of each cluster's mean,
        mu | Sigma ~ N(mean_prior, Sigma / kappa) (scikit-learn's
        ``mean_precision_prior``): the prior counts as ``kappa`` observations
        at ``mean_prior``. At least 1e-300.
    mean_prior : array-like of shape (n_features,), default=None
        Prior mean m_0 of the cluster means. None means the mean of the data.
    covariance_prior : float or array-like, default=None
        Scale matrix Psi_0 of the inverse-Wishart prior (as scikit-learn's
        ``covariance_prior``): shape (n_features, n_features), symmetric positive
        definite, for ``"full"``; shape (n_features,), positive, for ``"diag"``; a
        float means that multiple of the identity (or of a vector of ones). For
        ``"spherical"``, the positive float psi_0 of sigma^2 ~
        InvGamma(nu / 2, psi_0 / 2). For ``"fixed"``, the known covariance
        itself, Sigma: a float s (s I), a positive vector (a diagonal matrix) or
        a symmetric positive definite matrix. None means
        ``nu_ * empirical covariance / 10`` (``"diag"``: the variances;
        ``"spherical"``: their mean) and, for ``"fixed"``, ``empirical
        covariance / 10``, the prior mean of the covariance under the other
        types; see Notes. A known covariance is never corrected by the data, so
        pass it for ``"fixed"``: the default is a guess.
    covariance_type : {"full", "diag", "spherical", "fixed"}, default="full"
        "full": each cluster has a full covariance matrix. "diag": diagonal
        covariances, the prior being the product over features of the
        one-dimensional case. "spherical": sigma_k^2 I, with the conjugate
        Normal-Gamma prior (see Notes). "fixed": every cluster has the known
        covariance ``covariance_prior`` (Liang et al.'s MNIST experiments fix
        it to 16 I); only the means are unknown. The last two cost O(d) per
        (point, cluster) pair. A full covariance costs d (d + 1) / 2 parameters
        per cluster, and the marginal likelihood charges for them: with few
        points per cluster in high dimension the posterior of "full" prefers
        fewer, merged clusters. With 40 clusters of 250 points in d = 40
        (identity covariances; ``benchmarks/bench_gaussian_vs_sklearn.py``,
        column "lj - truth") the clusterings "full" finds have about half as
        many clusters and a log joint thousands of nats above the true one,
        while "diag" finds the 40 true clusters. Prefer "diag" (or reduce d)
        when d is large against the cluster sizes. The merging comes from the
        default prior, weak (nu_0 = d + 2) and not centred on the clusters'
        own covariance: "full" with ``nu = 2 d`` and ``covariance_prior``
        ``nu`` times the covariance within the clusters of a "diag" fit finds
        the 40 clusters there (user guide, "Which sampler to choose").
    sampler : str, default="gibbs+split-merge"
        The moves of a sweep, joined by "+": "gibbs" (a collapsed Gibbs scan over
        the points), "split-merge" (``n_split_merge`` SAMS proposals),
        "permutation" (one permutation-augmented move, Liang et al. 2007: a draw
        over all the clusterings consistent with an ordering of the points, see
        Notes). After burn-in each move leaves the exact posterior invariant, and
        each alone is a valid sampler, if "split-merge" is a slow one for small
        changes. During burn-in the permutation move hill-climbs with orderings
        from random projections, which is not exact (those sweeps are discarded).
        Or ``"subcluster"``, alone: the parallel sub-cluster sampler (after Chang
        & Fisher 2013): each sweep draws the clusters' means and covariances,
        then every point's label given them on all cores (OpenMP threads,
        limited by ``OMP_NUM_THREADS`` or threadpoolctl), then runs
        ``n_split_merge`` split or merge proposals from two sub-clusters fitted
        to the points concerned, which are its only source of new clusters,
        and as many restricted collapsed Gibbs scans of two clusters' points
        (which dissolve pieces cut off a cluster). It is exact (see Notes),
        and its draws do not depend on the number of threads. It also fits a
        ``dask.array.Array`` X on a ``dask.distributed`` cluster, the rows
        staying on the workers, with the draws of the same fit in process (user
        guide, "Scaling out"). Its ``init="sequential"`` runs
        sequential prediction on a sample of at most 4,096 rows and then draws
        every row's label given the sample's clusters, in parallel.
    permutation_dp : {"beta", "exact"}, default="beta"
        The permutation move after burn-in. "exact": a draw from p(C | pi, x) by
        the dynamic program over (position, number of clusters), O(N^2) memory
        and O(N^3) time per move, for small data sets (at most 16,384 points;
        more raise a ValueError). "beta": a
        Metropolis-Hastings proposal from the paper's approximation of K! by
        beta^K, computed with the beam of tolerance ``beam_tolerance`` (about
        O(N) time per move) and accepted or rejected with the exact ratio.
        The dynamic program holds a cluster state per open segment, d^2 + 2 d
        + 4 doubles with "full" covariances, 3 d + 4 with "diag": the beam
        keeps a few open, "exact" (and ``beam_tolerance=0``) all N (0.8 GB at
        N = 10,000, d = 100, "full").
    beam_tolerance : float, default=1e-32
        epsilon of the beam (Liang et al., sec. 3.3): at each position the
        smallest terms holding at most this fraction of the sum are pruned. 0
        keeps every term (O(N^2) time and memory: at most 16,384 points). Used
        by "beta" and by the burn-in hill climbing.
    n_split_merge : int, default=10
        Split-merge proposals per sweep, at most 10**6. A proposal costs about
        two predictive evaluations per point of the two clusters involved;
        measured on 10,000 points in 10 clusters (d = 10, "full"), 10 proposals
        cost about half as much as one Gibbs scan there, so a default sweep
        costs about one and a half scans. They are what moves whole groups of
        points, which a Gibbs scan can only do one point at a time through
        improbable intermediate states, so a chain that mixes over splits and
        merges is worth that constant factor.
    alpha_prior : tuple (shape, rate), default=None
        If given, alpha has the prior Gamma(shape, rate) and is resampled after
        every sweep (Escobar & West 1995). None keeps alpha fixed.
    init : {"sequential", "random"}, default="sequential"
        How each chain starts. ``"sequential"``: sequential prediction (Liang
        et al. 2007, sec. 5.1), the points added one at a time in a random
        order, each drawn from its collapsed conditional given the points
        before it (the cost of one Gibbs scan). ``"random"``: each point
        uniformly in one of ``init_clusters`` clusters. Random clusters are
        blends of the true ones; in high dimension single-site Gibbs rarely
        pulls a blend apart. In ``benchmarks/bench_gaussian_burn_in.py`` (d =
        40, 40 clusters, 2,000 points) Gibbs from a random 40-cluster start
        still had 34 clusters (ARI 0.88) after 20 s, while from the sequential
        start it held the true clustering after its first sweep.
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
        When True, ``fit`` keeps the chains, and the next ``fit`` on the same
        data continues them for ``n_iter`` more sweeps instead of starting new
        ones. The draws and traces of the fits are pooled as if one fit had
        run all the sweeps: burn-in and thinning count sweeps from the chains'
        start, so the burn-in is that of the first fit only, and
        ``fit(n_iter=200)`` then ``fit(n_iter=200)`` gives the draws of one
        ``fit(n_iter=400)``: the same labels, traces and means, while the few
        draws whose predictive factors the warm fit rebuilds from the rows (see
        "Memory of the draws") may differ from the long fit's in the last bits,
        and so may ``covariances_`` and the predictive methods' values, by about
        1e-15 relative. A warm fit on other data, or with other parameters than
        ``n_iter``, ``verbose``, ``n_jobs`` and ``random_state`` (which only
        seeds chains that start), raises a ValueError. The chains hold
        their work arrays in memory, run in threads whatever joblib's
        backend (they cannot leave this process) and are not pickled: a
        restored estimator starts new chains, with a warning.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Point estimate of the clustering: the kept draw with the least mean
        variation of information to the other kept draws.
        It is one draw: a row on the border of overlapping clusters sits
        where that draw put it. ``predict(X)`` gives each row's most probable
        cluster instead, the clustering scikit-learn's mixtures report.
    n_clusters_ : int
        Number of clusters of ``labels_``.
    weights_ : ndarray of shape (`n_clusters_`,)
        Proportion of the training samples in each cluster of ``labels_``.
    means_ : ndarray of shape (`n_clusters_`, n_features)
        Posterior mean of each cluster's mean, given the clustering ``labels_``.
    covariances_ : ndarray of shape (`n_clusters_`, n_features, n_features), \
            (`n_clusters_`, n_features), (`n_clusters_`,) or \
            (n_features, n_features)
        Posterior mean of each cluster's covariance given ``labels_`` (see Notes):
        full matrices for ``"full"``, the variances for ``"diag"``, sigma_k^2 for
        ``"spherical"`` (scikit-learn's shapes), and for ``"fixed"`` the known
        covariance, one matrix shared by the clusters (as scikit-learn's
        ``"tied"``).
    label_samples_ : ndarray of shape (n_draws, n_samples)
        Every kept draw of the clustering, chains stacked; clusters are numbered by
        first appearance within each draw.
    trace_ : dict of ndarray of shape (n_chains, n_iter)
        ``"n_clusters"`` and ``"log_joint"`` (log p(c, X), means and covariances
        integrated out, constants included; plus log p(alpha) when alpha is
        sampled) and ``"largest_cluster_size"`` after every sweep, and
        ``"alpha"`` when ``alpha_prior`` is set.
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
    mean_prior_ : ndarray of shape (n_features,)
        The prior mean m_0 used.
    covariance_prior_ : ndarray of shape (n_features, n_features) or \
            (n_features,), or float
        The inverse-Wishart scale Psi_0 used (``"diag"``: the vector psi_0;
        ``"spherical"``: the float psi_0); for ``"fixed"``, the known
        covariance, (n_features, n_features).
    nu_ : float or None
        The degrees of freedom nu_0 used (None for ``"fixed"``).
    kappa_ : float
        The mean precision scaling kappa_0 used.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit. Defined only when `X` has feature
        names that are all strings.

    See Also
    --------
    DPMallowsClustering : The same engine for rankings.
    sklearn.mixture.BayesianGaussianMixture : A truncated DP mixture of Gaussians
        fitted by variational inference.

    Notes
    -----
    The model, for vectors x_1..x_N in R^d:

    .. math::

        G \\sim DP(\\alpha, P_0), \\quad (\\mu_i, \\Sigma_i) \\sim G, \\quad
        x_i \\sim N(\\mu_i, \\Sigma_i),

        P_0: \\quad \\Sigma \\sim IW(\\Psi_0, \\nu_0), \\quad
        \\mu \\mid \\Sigma \\sim N(m_0, \\Sigma / \\kappa_0).

    With mu and Sigma integrated out, a cluster of n points has
    kappa_n = kappa_0 + n, nu_n = nu_0 + n, m_n = (kappa_0 m_0 + sum x) / kappa_n,
    Psi_n = Psi_0 + S + kappa_0 n / kappa_n (xbar - m_0)(xbar - m_0)^T (S the
    scatter matrix), and the closed-form marginal likelihood

    .. math::

        m(C) = \\pi^{-nd/2} \\frac{\\Gamma_d(\\nu_n/2)}{\\Gamma_d(\\nu_0/2)}
        \\frac{|\\Psi_0|^{\\nu_0/2}}{|\\Psi_n|^{\\nu_n/2}}
        \\Big(\\frac{\\kappa_0}{\\kappa_n}\\Big)^{d/2}.

    The predictive of a new point in the cluster is the multivariate Student-t
    with nu_n - d + 1 degrees of freedom, location m_n and shape
    Psi_n (kappa_n + 1) / (kappa_n (nu_n - d + 1)); with n = 0 it is the prior
    predictive that weighs a new cluster (times alpha). The chains keep a Cholesky
    factor of Psi_n per cluster, changed by rank-one updates and downdates as points
    move, so a Gibbs scan costs O(N K d^2) (``"diag"``: O(N K d)).

    ``"spherical"`` takes Sigma = sigma^2 I with the Normal-Gamma prior

    .. math::

        \\sigma^2 \\sim IG(\\nu_0 / 2, \\psi_0 / 2), \\quad
        \\mu \\mid \\sigma^2 \\sim N(m_0, \\sigma^2 I / \\kappa_0).

    A cluster has nu_n = nu_0 + n d and the scalar
    ``psi_n = psi_0 + tr S + kappa_0 n / kappa_n |xbar - m_0|^2``, so that

    .. math::

        m(C) = \\pi^{-nd/2} \\frac{\\Gamma(\\nu_n/2)}{\\Gamma(\\nu_0/2)}
        \\frac{\\psi_0^{\\nu_0/2}}{\\psi_n^{\\nu_n/2}}
        \\Big(\\frac{\\kappa_0}{\\kappa_n}\\Big)^{d/2},

    and the predictive is the multivariate Student-t with nu_n degrees of
    freedom, location m_n and shape psi_n (kappa_n + 1) / (kappa_n nu_n) I.
    ``"fixed"`` knows Sigma (``covariance_prior``) and puts
    mu ~ N(m_0, Sigma / kappa_0). With Sigma = L L^T the chains whiten the data
    once, y = L^{-1} x, and with
    ``q_n = tr S_y + kappa_0 n / kappa_n |ybar - L^{-1} m_0|^2`` (the whitened
    scatter),

    .. math::

        m(C) = (2\\pi)^{-nd/2} |L|^{-n}
        \\Big(\\frac{\\kappa_0}{\\kappa_n}\\Big)^{d/2} e^{-q_n / 2},

    the predictive being N(m_n, Sigma (1 + 1 / kappa_n)). Both keep a location
    and one scalar per cluster: a Gibbs scan costs O(N K d).

    Split-merge is Dahl's sequentially-allocated merge-split (SAMS). For a random
    pair (i, j) and a random order of the other points of their clusters, the
    points are allocated one by one to i's side A or j's side B with probability
    q_k proportional to n_A p(x_k | A) and n_B p(x_k | B) given the points already
    placed. A split of c_i = c_j is accepted with probability

    .. math::

        \\min\\Big(1, \\alpha \\frac{\\Gamma(n_A)\\Gamma(n_B)}{\\Gamma(n_A + n_B)}
        \\frac{m(A)\\, m(B)}{m(A \\cup B)} \\frac{1}{q(A, B)}\\Big),

    q(A, B) the product of the allocation probabilities; a merge of c_i != c_j
    with the inverse ratio, q being then the probability that the allocation
    reproduces the current two clusters. The reverse of either move is
    deterministic, so this is an exact Metropolis-Hastings step. With
    ``alpha_prior`` = (a, b), alpha is resampled by Escobar & West's auxiliary
    variable eta ~ Beta(alpha + 1, N).

    The permutation move augments the state with an ordering pi of the points,
    p(pi | C) uniform over the ``|C|! prod_c |c|!`` orderings in which every cluster
    is a run of consecutive positions. Given pi, the clusterings consistent with
    it have

    .. math::

        p(C \\mid \\pi, x) \\propto \\frac{\\alpha^{|C|}}{|C|!}
        \\prod_{c \\in C} \\frac{m(c)}{|c|},

    which a dynamic program over the positions sums and samples exactly
    (``permutation_dp="exact"``). ``"beta"`` proposes from the same with ``|C|!``
    replaced by ``beta^|C|``, whose factors are all per segment so that a beam of
    the few best segment lengths at each position suffices, and accepts with
    probability min(1, beta^K' K! / (beta^K K'!)); if the current clustering fell
    out of the beam the proposal is rejected, which keeps the step exact. beta is
    fixed after burn-in to exp Psi(Kbar + 1), Kbar the mean number of clusters in
    the second half of burn-in. After burn-in pi is drawn uniformly given C, so
    the move leaves the posterior invariant. During burn-in pi is instead
    sorted along a random direction (clusters by their mean, points within a
    cluster), and C is drawn proportionally to p(C, x) over the clusterings
    consistent with pi: the paper's stochastic hill climbing, fast at finding
    good clusterings but not a valid MCMC step.

    The sub-cluster sampler (``sampler="subcluster"``, after Chang & Fisher
    2013) keeps the parameters explicit for its label step. Given the clustering,
    each cluster's (mu, Sigma) is drawn from its NIW posterior and its weight as
    pi_k ~ Gamma(n_k, 1) (the ratios of a Dirichlet(n_1, ..., n_K, alpha) draw);
    given them the labels are independent, and every point draws its label with
    probability proportional to pi_k N(x | mu_k, Sigma_k), in parallel. Chang &
    Fisher's step lets a cluster empty, which changes K with no reverse move and
    so is not reversible; here each point draws a random priority every sweep,
    the member of lowest priority of each cluster keeps its label, and a point
    may join only the clusters whose anchor has a lower priority than its own:
    the set of reachable labellings is then the same from each of them, and the
    step draws exactly from the target restricted to it. New clusters come from
    split proposals: for a random pair (i, j) of a cluster, two sub-clusters are
    fitted to its points by a few restricted scans seeded at i and j (a
    stochastic 2-means), and the last scan's allocation is proposed and
    accepted with the Metropolis-Hastings ratio above, including the
    probabilities of choosing the cluster and the pair; merges are the reverse,
    and cheap proposals absorb singletons, split off one point, or move the
    points of small clusters (up to 4 points) one at a time. Restricted
    collapsed Gibbs scans of two clusters' points (clusters of at most 4,096
    points together; the partner mostly the cluster whose merge the data
    favour) draw each point between the two from its collapsed conditional,
    each step a Gibbs step of the posterior restricted to the pair, accepted
    with the ratio of the pair's probabilities of being picked. The random
    numbers of each point come from Philox keyed by the chain's seed and counted
    by (point, sweep), so the draws do not depend on the number of threads. The
    clusters' statistics are summed block by block (65,536 rows a block) in a
    fixed order, so that they do not depend on where the rows are either: in
    process, or in the chunks of a dask array on a cluster's workers.

    Default prior. scikit-learn's BayesianGaussianMixture takes m_0 = data mean,
    nu_0 = d and Psi_0 = the empirical covariance, so a priori a cluster's
    precision has mean d times the data's: with d = 1 a cluster is expected to be
    as wide as the whole data set. A DP mixture with such a prior merges
    well-separated groups that are few points each, since a cluster narrower
    than the prior's scale gains nothing. Here the prior mean of the precision
    is 10 times the data's (Psi_0 = nu_0 Cov(X) / 10): a typical cluster is
    1/sqrt(10) ~ 0.3 times as wide as the data along each axis, comfortably
    narrower than the data whenever it holds separated groups, and the
    likelihood overrides the prior for a cluster of more than a few nu_0 points.
    nu_0 = d + 2 is the least integer for which E[Sigma] = Psi_0 / (nu_0 - d - 1)
    exists, and keeps the prior weak (worth d + 2 observations). kappa_0 = 0.1
    lets the cluster means range over the data: with Sigma at its typical value
    Cov(X) / 10, mu - m_0 has covariance Sigma / kappa_0 = Cov(X), so the prior
    predictive of a new cluster (mean plus noise, covariance about 1.1 Cov(X))
    covers the data. scikit-learn's kappa_0 = 1 would, with this narrower Sigma,
    confine the cluster means to about 0.3 data standard deviations around m_0
    and push small outlying groups into big clusters. The defaults depend only
    on the data's mean and covariance, so the model is the same for shifted,
    rotated or rescaled data. On well-separated blobs any of these choices finds
    the blobs; they matter for small or overlapping clusters. ``"spherical"``
    takes nu_0 = 3 and psi_0 the mean of the diagonal of nu_0 Cov(X) / 10, and
    ``"fixed"`` takes Sigma = Cov(X) / 10, the prior mean of the covariance
    under the other types. Unlike theirs, that guess is never corrected by the
    data: where the groups are separated along a direction of small variance
    of X, Cov(X) / 10 is narrower than the clusters and splits them (four
    ``make_blobs`` clusters in d = 3 give about 11 clusters), so pass the
    known covariance.

    Input and scale. X is converted to float64 as scikit-learn's estimators
    convert it, so numeric strings ("0.5") are accepted, as by
    BayesianGaussianMixture. The chains run on X / 2**k, an exact rescaling by
    a power of two with the priors rescaled alike, so that data of any
    magnitude whose covariances are normal doubles is clustered as its
    standardised version would be (k = 0 unless the largest magnitude of X
    lies outside 2**-100 to 2**100); the fitted attributes, densities and
    traces are in X's units. Data whose variances overflow or underflow double
    precision (for data of unit spread, magnitudes above about 1e154 or below
    about 1e-151) is refused with a ValueError asking to standardise it.

    ``covariances_`` holds E[Sigma | cluster] = Psi_n / (nu_n - d - 1) when
    nu_n > d + 1 (``"diag"``: psi_n / (nu_n - 2) per feature); for smaller nu_n
    that mean does not exist and Psi_n / nu_n, the inverse of the posterior mean of
    the precision, is reported instead; ``"spherical"``: psi_n / (nu_n - 2) if
    nu_n > 2, else psi_n / nu_n.

    Memory of the draws. Each kept draw keeps its clusters' means, sizes and
    predictive dfs, but no covariances (``covariances_`` is computed for its
    one draw). With ``"full"``, a draw's predictive factors are K matrices of
    d x d, so that keeping them all would make the fit's memory grow with
    d^2 times the number of draws (2 MiB a draw at d = 80, K = 40). Only about
    20 draws keep them, ceil(20 / n_chains) evenly spaced over each chain's kept
    draws (the first and the last included), and `score_samples`, `score`,
    `sample` and ``predict_proba(draws="all")`` average over those (every kept
    draw when there are fewer). Consecutive draws of a chain are close, so 20
    spread over the run give that average to within its Monte Carlo error. A
    warm fit keeps the draws one long fit would. The labels and traces of every
    draw are kept (``label_samples_``, ``trace_``), as are the point-estimate
    draw's factors. The pointwise log-likelihood of `to_inference_data` reads
    every draw: a draw without its factors has them rebuilt from the training
    rows and its labels, O(N d^2) a draw, one draw at a time. The model keeps
    its own copy of the training rows for this and for a warm fit's check of
    its data (N x d float64), never the caller's array, which the caller may
    change after the fit. A fit of a dask
    array trims its draws alike: the draws its end needs whole are rebuilt on
    the workers, from the block moments of each cluster's rows, to the bit as
    in process (no row is fetched; ``to_inference_data`` after the fit fetches
    them).

    References
    ----------
    R. M. Neal. Markov chain sampling methods for Dirichlet process mixture
    models. J. Comput. Graph. Stat. 9(2), 2000.

    D. B. Dahl. An improved merge-split sampler for conjugate Dirichlet process
    mixture models. Technical report 1086, University of Wisconsin, 2003.

    M. D. Escobar and M. West. Bayesian density estimation and inference using
    mixtures. J. Am. Stat. Assoc. 90(430), 1995.

    K. P. Murphy. Conjugate Bayesian analysis of the Gaussian distribution.
    Technical note, 2007.

    P. Liang, M. I. Jordan and B. Taskar. A permutation-augmented sampler for DP
    mixture models. ICML 2007.

    Examples
    --------
    >>> from sklearn.datasets import make_blobs
    >>> from rankmix import DPGaussianClustering
    >>> X, y = make_blobs(n_samples=300, centers=3, cluster_std=5.0,
    ...                   center_box=(-100, 100), random_state=0)
    >>> model = DPGaussianClustering(random_state=0).fit(X)
    >>> model.n_clusters_
    3
    >>> model.means_.shape, model.covariances_.shape
    ((3, 2), (3, 2, 2))
    """

    _parameter_constraints: dict = {
        **BaseCollapsedDPMixture._parameter_constraints,
        "nu": [Interval(Real, 0, None, closed="neither"), None],
        # a subnormal kappa_0 makes Sigma / kappa_0 overflow in the posterior
        "kappa": [Interval(Real, MIN_KAPPA, None, closed="left")],
        "mean_prior": ["array-like", None],
        "covariance_prior": [
            Interval(Real, 0, None, closed="neither"),
            "array-like",
            None,
        ],
        "covariance_type": [StrOptions({"full", "diag", "spherical", "fixed"})],
    }

    def __init__(
        self,
        *,
        alpha=1.0,
        nu=None,
        kappa=0.1,
        mean_prior=None,
        covariance_prior=None,
        covariance_type="full",
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

    # -- hooks ---------------------------------------------------------------

    def _prepare(self, X, space=None):
        self._check_sampler()
        # the kind the posterior is made of: what the predictive methods read,
        # whatever set_params does after the fit
        self._covariance_type = self.covariance_type
        # The chains run on X / 2**k, an exact rescaling that keeps the sums of
        # squares of data of magnitude 1e153 finite and those of data of
        # magnitude 1e-155 normal; k = 0 (X itself) for all ordinary data. The
        # model is the same (the priors are rescaled with X, see the Notes), and
        # every fitted attribute and density is given back in X's units. The
        # data's mean and covariance (the default priors) come from block
        # moments, the same wherever the rows are.
        if is_dask_array(X):
            rows = self._rows_on_workers(X)
            bad = rows.first_bad_row()
            if bad is not None:
                raise ValueError(
                    f"Row {bad} of X holds NaN or infinity: X must hold finite numbers."
                )
            k = self._scale_exponent = _scale_exponent(rows.max_abs())
            rows.rescale(k)
            summary = _DataSummary.of(rows.moments())
        else:
            X = _validate_vectors(self, X, reset=True)
            k = self._scale_exponent = _scale_exponent(
                float(np.max(np.abs(X))) if X.size else 0.0
            )
            rows = np.ldexp(X, -k) if k else X
            summary = _DataSummary.of(
                merge_moments(block_moments(rows, _subcluster_chain.ROW_BLOCK))
            )
        d = rows.shape[1]
        _check_data_scale(summary, k)
        self.kappa_ = float(self.kappa)
        mean_prior = self._resolve_mean_prior(summary, k)
        self.nu_ = self._resolve_nu(d)
        covariance_prior = self._resolve_covariance_prior(summary, k)
        self._chain_priors = (mean_prior, covariance_prior)
        with np.errstate(over="ignore", under="ignore"):
            self.mean_prior_ = np.ldexp(mean_prior, k)
            self.covariance_prior_ = np.ldexp(covariance_prior, 2 * k)
        if self._covariance_type == "spherical":
            self.covariance_prior_ = float(self.covariance_prior_)
        # "fixed": the known covariance's Cholesky factor, in X's units, whitens
        # new data for scoring and colours the draws of ``sample``
        self._known_cholesky = (
            np.linalg.cholesky(self.covariance_prior_)
            if self._covariance_type == "fixed"
            else None
        )
        self._alpha_prior = self._resolve_alpha_prior(rows.shape[0])
        model = self._model(rows.shape[0])
        means, _, factors, dfs = _DESCRIBE[self._covariance_type](
            model, model.empty_state()[None]
        )
        # the prior predictive (n = 0): location, shape factor, df, in X's units
        self._prior_predictive = (
            np.ldexp(means, k),
            np.ldexp(factors, self._factor_exponent(k)),
            dfs,
        )
        return rows

    def _factor_exponent(self, k):
        """The power of two that takes the predictive factors to X's units.

        They are scales (k) except for "fixed", whose factors multiply the
        known covariance's Cholesky factor and have no unit (0).
        """
        return 0 if self._covariance_type == "fixed" else k

    def _resolve_mean_prior(self, summary, k):
        if self.mean_prior is None:
            return summary.mean
        mean = real_parameter(self.mean_prior, "mean_prior")
        if mean.shape != summary.mean.shape:
            raise ValueError(
                f"mean_prior must be a vector of length n_features="
                f"{len(summary.mean)}, got shape {mean.shape}."
            )
        if not np.all(np.isfinite(mean)):
            raise ValueError(f"mean_prior must be finite, got {self.mean_prior!r}.")
        return np.ldexp(mean, -k)

    def _resolve_nu(self, d):
        full = self._covariance_type == "full"
        if self._covariance_type == "fixed":
            return None  # no prior on a known covariance
        if self.nu is None:
            return float(d + 2) if full else 3.0
        low = d - 1 if full else 0
        if self.nu <= low:
            raise ValueError(
                f"nu must be > n_features - 1 = {low} for covariance_type='full' "
                f"(the inverse-Wishart is improper otherwise), got {self.nu}."
            )
        if self.nu > MAX_PRIOR_STRENGTH:
            raise ValueError(
                f"nu={self.nu:g} is too large: the covariance prior's degrees of "
                f"freedom must be at most {MAX_PRIOR_STRENGTH:g}. Beyond, the "
                "predictive densities keep no significant digit; such a prior "
                "fixes the covariance anyway: pass it as covariance_prior with "
                "covariance_type='fixed'."
            )
        return float(self.nu)

    def _resolve_covariance_prior(self, summary, k):
        d = len(summary.mean)
        kind = self._covariance_type
        if self.covariance_prior is None:
            covariance = summary.covariance
            ridge = COVARIANCE_RIDGE * np.trace(covariance) / d
            if not ridge > 0:
                # constant data: unit scale, since there is no scale to learn from
                covariance, ridge = np.eye(d), 0.0
            covariance = covariance + ridge * np.eye(d)
            if kind == "fixed":
                # the prior mean of the covariance of the other types
                return covariance / PRIOR_SHRINK
            scale = covariance * (self.nu_ / PRIOR_SHRINK)
            return {
                "full": lambda: scale,
                "diag": lambda: np.diag(scale).copy(),
                "spherical": lambda: np.array(np.trace(scale) / d),
            }[kind]()
        psi = _check_covariance_prior(self.covariance_prior, kind, d)
        if not k:
            return psi.copy()
        with np.errstate(over="ignore", under="ignore"):
            scaled = np.ldexp(psi, -2 * k)
        diagonal = np.diag(scaled) if scaled.ndim == 2 else scaled
        if not (np.all(np.isfinite(scaled)) and np.all(diagonal >= _TINY)):
            raise ValueError(
                "covariance_prior is out of proportion to the scale of X (its "
                f"largest magnitude is about 2**{k}): the model cannot be "
                "computed in double precision. Standardise X (for example with "
                "sklearn.preprocessing.StandardScaler) and covariance_prior with "
                "it."
            )
        return scaled

    def _model(self, n_max):
        mean_prior, covariance_prior = self._chain_priors
        kind = self._covariance_type
        if kind in ("full", "diag"):
            return NIWModel(
                mean_prior,
                self.kappa_,
                self.nu_,
                covariance_prior,
                kind == "full",
                n_max,
            )
        nu = self.nu_ if kind == "spherical" else 0.0  # unused by "fixed"
        return IsotropicModel(
            mean_prior, self.kappa_, nu, covariance_prior, kind == "fixed", n_max
        )

    def _to_data_units(self, posterior):
        """Give the draws and the log joint back in the units of X (see _prepare).

        The draws come trimmed (``_trim_draw``): what a draw no longer holds is
        None, and stays so.
        """
        k = self._scale_exponent
        if k:
            factor_exponent = self._factor_exponent(k)
            with np.errstate(over="ignore", under="ignore"):
                posterior.parameters = [
                    (
                        np.ldexp(means, k),
                        _ldexp_kept(covariances, 2 * k),
                        _ldexp_kept(factors, factor_exponent),
                        *rest,
                    )
                    for means, covariances, factors, *rest in posterior.parameters
                ]
            # p(X) = p(X / 2**k) / 2**(k N d)
            n, d = self._n_train, self.n_features_in_
            posterior.trace["log_joint"] -= k * n * d * np.log(2.0)
        # _trim_draw keeps a draw whose covariances or factors overflow in X's
        # units whole, so that it is seen here
        for means, covariances, factors, *_ in posterior.parameters:
            if not (_fits(covariances) and _fits(factors)):
                raise _overflow_error()
        return posterior

    @property
    def _predictive_draws_kept(self):
        # "full" keeps the K d x d predictive factors of PREDICTIVE_DRAWS draws
        return PREDICTIVE_DRAWS if self._covariance_type == "full" else None

    def _draw_trimmer(self, data_units=False):
        k = 0 if data_units else self._scale_exponent
        return partial(
            _trim_draw,
            drop_covariances=self._covariance_type != "spherical",
            drop_factors=self._covariance_type == "full",
            exponents=(2 * k, self._factor_exponent(k)),
        )

    def _draw_is_whole(self, parameters):
        return parameters[2] is not None

    def _family_over(self, rows, n_rows):
        model = self._model(n_rows)
        if rows is None:
            rows = np.empty((0, self.n_features_in_))
        return model.family(np.ascontiguousarray(rows, dtype=np.float64))

    def _chain_rows(self):
        rows = self._X_fit
        if is_dask_array(rows):  # rows kept on Dask workers: fetched here
            rows = self._check_new_data(rows.compute())
        k = self._scale_exponent
        return np.ldexp(rows, -k) if k else rows

    def _whole_from_described(self, parameters, described):
        # the predictive factors, in X's units
        with np.errstate(over="ignore", under="ignore"):
            factors = np.ldexp(
                described[2], self._factor_exponent(self._scale_exponent)
            )
        if not _fits(factors):
            raise _overflow_error()
        return (parameters[0], None, factors, *parameters[3:])

    def _covariances_of(self, parameters):
        """A draw's ``covariances_`` from what it keeps (see ``_to_data_units``).

        The predictive factor of a "full" cluster is L sqrt((kappa_n + 1) /
        (kappa_n df_n)) with L L^T = Psi_n, and ``covariances_`` is
        Psi_n / (nu_n - d - 1) (Psi_n / nu_n when nu_n <= d + 1), with
        nu_n = df_n + d - 1 and kappa_n = kappa_0 + n; "diag" is the d = 1 case
        per feature. "fixed" has its known Sigma, "spherical" keeps its (K,).
        """
        kind = self._covariance_type
        if kind == "spherical":
            return parameters[1]
        if kind == "fixed":
            return self.covariance_prior_.copy()
        _, _, factors, dfs = parameters[:4]
        d_eff = self.n_features_in_ if kind == "full" else 1
        kappa_n = self.kappa_ + parameters[-1]
        nu_n = dfs + (d_eff - 1)
        divisor = np.where(nu_n > d_eff + 1, nu_n - d_eff - 1, nu_n)
        scale = kappa_n * dfs / ((kappa_n + 1) * divisor)
        if kind == "full":
            return scale[:, None, None] * (factors @ factors.transpose(0, 2, 1))
        return scale[:, None] * factors**2

    def _numerical_failure(self, error):
        return ValueError(
            f"The MCMC chains failed numerically ({error}). X or the prior "
            "parameters (covariance_prior, mean_prior, kappa, nu) are out of "
            "the range that double precision can handle: standardise X (for "
            "example with sklearn.preprocessing.StandardScaler) and pass "
            "priors on the data's scale, or leave them to their defaults."
        )

    def _chain_factory(self, X):
        return self._chain_over(
            self._model(X.shape[0]), X, np.empty((0, X.shape[1]))
        )

    def _check_new_data(self, X):
        return _validate_vectors(self, X, reset=False)

    def _component_log_density(self, X, parameters):
        means, _, factors, dfs = parameters[:4]
        return self._predictive_log_density(X, means, factors, dfs)

    def _component_log_weights(self, X, parameters):
        log_density = self._component_log_density(X, parameters)
        if self._covariance_type == "fixed":
            # Gaussian tails: past |x| ~ 1e154 (in the data's units) q is no
            # double and every density is 0; the Student-t kinds stay finite
            far = np.isneginf(log_density.max(axis=1))
            if far.any():
                means, _, factors = parameters[:3]
                log_density[far] = _far_gaussian_log_weights(
                    X[far], means, factors, self._known_cholesky
                )
        return log_density

    def _new_cluster_log_density(self, X):
        return self._predictive_log_density(X, *self._prior_predictive)[:, 0]

    def _density_row_bytes(self, X):
        # "fixed": the whitened rows and about four (rows, d) temporaries of
        # _gaussian_log_density; the Student-t kernels hold no row's work
        return 40 * X.shape[1] if self._covariance_type == "fixed" else 0

    def _left_out_row_bytes(self, X):
        # the (rows, d) temporaries of _left_out_log_density and
        # _left_out_isotropic_log_density: about ten for "diag", whose rows
        # hold d one-dimensional cases, five for "full", four for the others
        floats = {"full": 5, "diag": 10, "spherical": 4, "fixed": 4}
        return 8 * floats[self._covariance_type] * X.shape[1]

    def _predictive_log_density(self, X, means, factors, dfs):
        """(n_samples, K) log-densities of K clusters' predictives."""
        if self._covariance_type == "fixed":
            return _gaussian_log_density(X, means, factors, self._known_cholesky)
        return _student_t_log_density(X, means, factors, dfs, self._covariance_type)

    def _own_cluster_loo_log_density(self, X, labels, parameters, density):
        if self._covariance_type in ("spherical", "fixed"):
            return _left_out_isotropic_log_density(
                X, labels, parameters, self.kappa_, self._known_cholesky
            )
        return _left_out_log_density(
            X, labels, parameters, self.kappa_, self._covariance_type == "full"
        )

    # posterior_samples(): each draw's cluster means (PosteriorSummaryMixin)
    _draw_fields = {"means": (0, np.nan)}

    def _describe_clusters(self, parameters):
        self.means_ = parameters[0]
        self.covariances_ = self._covariances_of(parameters)

    def _sample_new_clusters(self, n_samples, rng):
        means, factors, dfs = self._prior_predictive
        components = np.zeros(n_samples, dtype=np.intp)
        return self._sample_components(components, (means, None, factors, dfs), rng)

    def _sample_components(self, components, parameters, rng):
        means, _, factors, dfs = parameters[:4]
        n, d = len(components), means.shape[1]
        z = rng.standard_normal((n, d))
        kind = self._covariance_type
        if kind == "fixed":
            # x = m + c L z: the Gaussian predictive N(m, c^2 Sigma)
            return means[components] + factors[components, None] * (
                z @ self._known_cholesky.T
            )
        if kind == "full":
            # x = m + L z sqrt(df / g), g ~ chi2(df): multivariate Student-t,
            # cluster by cluster (no n x d x d copy of the factors)
            for k in np.unique(components):
                rows = np.flatnonzero(components == k)
                z[rows] = z[rows] @ factors[k].T
            g = rng.chisquare(dfs[components])[:, None]
        elif kind == "spherical":
            # the same with L = s I
            z = z * factors[components, None]
            g = rng.chisquare(dfs[components])[:, None]
        else:
            # a product of independent one-dimensional Student-t's
            z = z * factors[components]
            g = rng.chisquare(np.repeat(dfs[components][:, None], d, axis=1))
        # g underflows to 0 at a small df: the draw lies beyond the double range
        # (_check_samples warns)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            return means[components] + z * np.sqrt(dfs[components][:, None] / g)

    def _check_samples(self, samples):
        beyond = np.count_nonzero(~np.all(np.isfinite(samples), axis=1))
        if beyond:
            warn(
                f"{beyond} of the {len(samples)} samples lie beyond the double "
                "range: a Student-t predictive with few degrees of freedom (a new "
                "cluster's: nu - d + 1 with full covariances, nu otherwise) has "
                "tails that reach past 1e308. A larger nu makes them lighter.",
                RuntimeWarning,
            )
        return samples


# Data whose largest magnitude lies in this range runs as it is; other data is
# rescaled by a power of two (see DPGaussianClustering._prepare).
_SCALE_RANGE = (2.0**-100, 2.0**100)
_TINY = np.finfo(np.float64).tiny


def _validate_vectors(estimator, X, *, reset):
    """``validate_data`` as float64, with a ValueError for numbers beyond float64.

    Like scikit-learn's estimators, this accepts numeric strings ("0.5"), which
    NumPy converts; a string that is not a number raises scikit-learn's
    ValueError. A Python integer too large for a double (10**400) raises a
    ValueError naming its row, not NumPy's OverflowError.
    """
    try:
        X = validate_numbers(
            estimator, X, "real numbers", dtype=[np.float64], reset=reset
        )
    except OverflowError:
        row = _first_overflowing_row(X)
        where = "X" if row is None else f"Row {row} of X"
        raise ValueError(
            f"{where} holds a number too large for double precision (beyond "
            f"{np.finfo(np.float64).max:g}): X must hold finite floats."
        ) from None
    return np.ascontiguousarray(X)


def _first_overflowing_row(X):
    """The first row of ``X`` holding a value that ``float`` cannot convert."""
    try:
        rows = list(np.asarray(X, dtype=object))
    except Exception:  # pragma: no cover - X is refused anyway
        return None
    for i, row in enumerate(rows):
        for value in np.ravel(row):
            try:
                float(value)
            except (OverflowError, TypeError, ValueError):
                return i
    return None


class _DataSummary:
    """The mean and the (biased) covariance of the training rows.

    Computed from block moments merged in block order (``_distributed``), the same
    to the last bit for rows in process and rows on Dask workers: the default
    priors, and so the draws, do not depend on where the rows are.
    """

    def __init__(self, n, mean, covariance):
        self.n, self.mean, self.covariance = n, mean, covariance

    @classmethod
    def of(cls, moments):
        n, mean, scatter = moments
        d = len(mean)
        if n < 2:
            return cls(n, mean, np.zeros((d, d)))
        return cls(n, mean, np.atleast_2d(scatter / n))


def _scale_exponent(top):
    """k such that X / 2**k has magnitude about 1, or 0 if X is ordinary.

    ``top`` is the largest magnitude of X.
    """
    if top == 0.0 or _SCALE_RANGE[0] <= top <= _SCALE_RANGE[1]:
        return 0
    return int(np.frexp(top)[1])


def _check_data_scale(summary, k):
    """Refuse data whose covariances double precision cannot hold in X's units.

    ``summary`` is that of the rescaled data, X / 2**k. Its mean variance, back
    in X's units, must be finite (or the covariances overflow) and, unless X is
    constant, large enough that the ridge added to the prior scale is a normal
    double.
    """
    variance = float(np.diag(summary.covariance).mean())
    if variance == 0.0:
        return  # constant data: the prior gets a unit scale
    with np.errstate(over="ignore", under="ignore"):
        spread = float(np.ldexp(variance, 2 * k))
    low = _TINY / COVARIANCE_RIDGE
    if np.isfinite(spread) and spread >= low:
        return
    size = "large" if not np.isfinite(spread) else "small"
    raise ValueError(
        f"X's scale is too {size} for double precision: its mean variance is "
        f"about 2**{2 * k + int(np.frexp(variance)[1])}, and the cluster "
        f"covariances must lie between {low:.1e} and "
        f"{np.finfo(np.float64).max:.1e}. Standardise X first, for example "
        "with sklearn.preprocessing.StandardScaler; the clustering does not "
        "depend on the scale of X."
    )


def _trim_draw(parameters, whole, drop_covariances, drop_factors, exponents=(0, 0)):
    """A kept draw as DPGaussianClustering keeps it (the engine's ``trim_draw``).

    The draws are read for their means, predictive factors and dfs (scoring,
    prediction, sampling): no draw keeps its covariances (K x d x d for "full",
    K x d for "diag", the known Sigma for "fixed"; ``covariances_`` rebuilds
    them for its one draw, ``_covariances_of``), and with ``drop_factors``
    ("full") only a ``whole`` draw keeps its K x d x d predictive factors, so
    that the memory of a fit does not grow with d^2 x draws. A draw whose
    covariances or factors overflow once scaled by 2**``exponents`` (to X's
    units) is kept as it is, for ``_to_data_units`` to refuse.
    """
    means, covariances, factors, *rest = parameters
    if not all(map(_fits, (covariances, factors), exponents)):
        return tuple(parameters)
    return (
        means,
        None if drop_covariances else covariances,
        factors if whole or not drop_factors else None,
        *rest,
    )


def _ldexp_kept(values, exponent):
    """``np.ldexp(values, exponent)``, None for a part the draw does not keep."""
    return None if values is None else np.ldexp(values, exponent)


def _fits(values, exponent=0):
    """Whether ``values`` (None: a part the draw does not keep) stay finite once
    scaled by 2**``exponent``: whether their largest magnitude does (NaN does
    not), so that no scaled copy is made."""
    if values is None or values.size == 0:
        return True
    peak = np.maximum(values.max(), -values.min())
    with np.errstate(over="ignore"):
        return bool(np.isfinite(np.ldexp(peak, exponent)))


def _overflow_error():
    return ValueError(
        "A cluster's posterior covariance overflows double precision: "
        "mean_prior or covariance_prior is far out of proportion to "
        "X (or X's scale is at the edge of the double range). Pass "
        "priors on the scale of the data, or leave them to their "
        "defaults, and standardise X (for example with "
        "sklearn.preprocessing.StandardScaler)."
    )


_DESCRIBE = {
    "full": describe_niw_states,
    "diag": describe_niw_states,
    "spherical": describe_isotropic_states,
    "fixed": describe_isotropic_states,
}


def _check_covariance_prior(value, kind, d):
    """The user's ``covariance_prior`` as an array of its type's shape, or a
    ValueError naming what is wrong.

    A scalar s means s I ("full", "fixed"), s (1, ..., 1) ("diag") or psi_0 = s
    ("spherical"); "fixed" also takes a vector, the diagonal of the known
    covariance. Matrices must be finite, symmetric and positive definite.
    """
    psi = real_parameter(value, "covariance_prior")
    if not np.all(np.isfinite(psi)):
        raise ValueError(f"covariance_prior must be finite, got {value!r}.")
    if kind == "spherical":
        if psi.ndim != 0 or not (np.isfinite(psi) and psi > 0):
            raise ValueError(
                "covariance_prior must be a positive float (psi_0 of the "
                "inverse-gamma prior of sigma^2) for covariance_type='spherical', "
                f"got {value!r}."
            )
        return psi
    if psi.ndim == 0:
        psi = psi * (np.ones(d) if kind == "diag" else np.eye(d))
    if kind == "fixed" and psi.ndim == 1:
        if psi.shape != (d,) or not np.all(np.isfinite(psi)) or np.any(psi <= 0):
            raise ValueError(
                f"covariance_prior must be a positive float, a positive vector of "
                f"length {d} or a ({d}, {d}) positive definite matrix for "
                f"covariance_type='fixed', got shape {psi.shape}."
            )
        psi = np.diag(psi)
    if kind == "diag":
        if psi.shape != (d,) or not np.all(np.isfinite(psi)) or np.any(psi <= 0):
            raise ValueError(
                f"covariance_prior must be a positive vector of length {d} for "
                f"covariance_type='diag', got shape {psi.shape}."
            )
        return psi
    if psi.shape != (d, d):
        raise ValueError(
            f"covariance_prior must have shape ({d}, {d}) for "
            f"covariance_type={kind!r}, got {psi.shape}."
        )
    if not np.all(np.isfinite(psi)) or not np.allclose(psi, psi.T):
        raise ValueError("covariance_prior must be a finite symmetric matrix.")
    try:
        np.linalg.cholesky(psi)
    except np.linalg.LinAlgError:
        raise ValueError("covariance_prior must be positive definite.") from None
    return psi


def _gaussian_log_density(X, means, factors, cholesky):
    """(n_samples, K) log-densities of N(means_k, factors_k^2 L L^T).

    Parameters
    ----------
    X : ndarray of shape (n_samples, d)
    means : ndarray of shape (K, d)
    factors : ndarray of shape (K,)
        Scales relative to ``cholesky``.
    cholesky : ndarray of shape (d, d)
        Lower Cholesky factor L of the shared covariance.

    Returns
    -------
    log_density : ndarray of shape (n_samples, K)
    """
    d = X.shape[1]
    # whitening X and the means once makes each cluster O(n d)
    Y = solve_triangular(cholesky, X.T, lower=True, check_finite=False).T
    M = solve_triangular(cholesky, means.T, lower=True, check_finite=False).T
    out = np.empty((len(X), len(means)))
    const = -0.5 * d * np.log(2 * np.pi) - np.log(np.diag(cholesky)).sum()
    for k, (mean, factor) in enumerate(zip(M, factors)):
        with np.errstate(over="ignore"):
            # a point too far for q to be a double has density 0: -inf is right
            q = (((Y - mean) / factor) ** 2).sum(axis=1)
        out[:, k] = const - d * np.log(factor) - 0.5 * q
    return out


def _far_gaussian_log_weights(X, means, factors, cholesky):
    """Rows too far for ``_gaussian_log_density``: log-densities up to a
    constant per row, in the limit of the rows' distance.

    With y = L^-1 x = s y' (s > 0, y' of order one) and whitened means m_k,
    -q_k / 2 = -s^2 |y'|^2 / (2 c_k^2) + s y'.m_k / c_k^2 - |m_k|^2 / (2 c_k^2).
    A row is far when s^2 is past the double range, so any difference in the
    first term (the largest c_k wins) and then in the second (the largest
    y'.m_k / c_k^2) decides by more nats than a double holds: those clusters
    get log-weight -inf, and the ones left, tied in both, keep their third term
    and -d log c_k, exact differences of their log-densities.
    """
    d = X.shape[1]
    # only y's direction matters below: scaled first, so that L^-1 x is finite
    X = X / np.max(np.abs(X), axis=1, keepdims=True)
    Y = solve_triangular(cholesky, X.T, lower=True, check_finite=False).T
    M = solve_triangular(cholesky, means.T, lower=True, check_finite=False).T
    inverse = 1.0 / factors**2
    second = np.where(inverse == inverse.min(), (Y @ M.T) * inverse, -np.inf)
    tied = second == second.max(axis=1, keepdims=True)
    third = -0.5 * (M**2).sum(axis=1) * inverse - d * np.log(factors)
    return np.where(tied, third, -np.inf)


def _student_t_log_density(X, means, factors, dfs, kind):
    """(n_samples, K) log-densities of K Student-t distributions.

    The compiled ``student_t_log_density`` (``_gaussian_kernels``): one pass
    over the rows, in parallel, finite for points so far out that their squared
    distance overflows.

    Parameters
    ----------
    X : ndarray of shape (n_samples, d)
    means : ndarray of shape (K, d)
        Locations.
    factors : ndarray of shape (K, d, d), (K, d) or (K,)
        Lower Cholesky factors of the shape matrices ("full"), the per-feature
        scales of a product of one-dimensional Student-t's ("diag"), or the
        scale s of a multivariate Student-t of shape s^2 I ("spherical").
    dfs : ndarray of shape (K,)
        Degrees of freedom.
    kind : {"full", "diag", "spherical"}

    Returns
    -------
    log_density : ndarray of shape (n_samples, K)
    """
    return student_t_log_density(
        np.ascontiguousarray(X, dtype=np.float64),
        np.ascontiguousarray(means, dtype=np.float64),
        factors,
        np.ascontiguousarray(dfs, dtype=np.float64),
        kind,
    )


def _student_t_log_normaliser(df, d):
    """log of the d-dimensional Student-t's constant, unit shape matrix."""
    return gammaln((df + d) / 2) - gammaln(df / 2) - d / 2 * np.log(df * np.pi)


def _left_out_log_density(X, labels, parameters, kappa, full):
    """(n_samples,) log-density of each training row under its own cluster's
    Student-t predictive, the row left out of the cluster.

    Parameters
    ----------
    X : ndarray of shape (n_samples, d)
        The training rows.
    labels : ndarray of shape (n_samples,)
        Each row's cluster in the draw.
    parameters : tuple
        The draw: ``(means, covariances, factors, dfs, ..., sizes)``.
    kappa : float
        The prior's kappa_0.
    full : bool

    Notes
    -----
    A cluster of n rows has the NIW posterior (kappa_n = kappa_0 + n, m_n,
    nu_n, Psi_n), and its predictive is a Student-t with df_n degrees of
    freedom, location m_n and shape S_n = Psi_n (kappa_n + 1) / (kappa_n
    df_n), whose Cholesky factor the draw holds. Removing a member x reverses
    the conjugate update: kappa = kappa_n - 1, df = df_n - 1, the location
    becomes (kappa_n m_n - x) / kappa and Psi = Psi_n - beta e e^T with
    e = x - m_n and beta = kappa_n / kappa. With g = e^T Psi_n^{-1} e the
    matrix determinant lemma and Sherman-Morrison give, at x itself,

    .. math::

        \\log f^{-x}(x) = \\log c_{df, d}
        - \\tfrac{d}{2} \\log \\frac{\\kappa_n}{\\kappa\\, df}
        - \\tfrac12 \\log |\\Psi_n|
        + \\tfrac{df + d - 1}{2} \\log(1 - \\beta g),

    c_{df, d} the Student-t constant: O(d^2) a row, no refactorisation. The
    diagonal model is d independent one-dimensional cases.
    """
    means, _, factors, dfs = parameters[:4]
    kappa_n = kappa + parameters[-1][labels]
    df_n = dfs[labels]
    e = X - means[labels]
    if full:
        d = X.shape[1]
        q = np.empty(len(X))
        log_det = np.empty(len(X))
        for k in np.unique(labels):  # u = L_k^{-1} e, q = |u|^2 under S_n
            rows = labels == k
            u = solve_triangular(factors[k], e[rows].T, lower=True, check_finite=False)
            q[rows] = (u * u).sum(axis=0)
            log_det[rows] = 2 * np.log(np.diag(factors[k])).sum()
    else:
        d = 1
        # one-dimensional cases side by side: every row holds d of them
        q = (e / factors[labels]) ** 2
        log_det = 2 * np.log(factors[labels])
        kappa_n, df_n = kappa_n[:, None], df_n[:, None]
    kappa_left, df = kappa_n - 1, df_n - 1
    g = q * (kappa_n + 1) / (kappa_n * df_n)
    log_det_psi = log_det + d * np.log(kappa_n * df_n / (kappa_n + 1))
    value = (
        _student_t_log_normaliser(df, d)
        - d / 2 * np.log(kappa_n / (kappa_left * df))
        - log_det_psi / 2
        + (df + d - 1) / 2 * np.log1p(-g * kappa_n / kappa_left)
    )
    return value if full else value.sum(axis=1)


def _left_out_isotropic_log_density(X, labels, parameters, kappa, cholesky):
    """``_left_out_log_density`` for the spherical and the fixed families.

    ``cholesky`` is the known covariance's factor L ("fixed"), or None
    ("spherical").

    Notes
    -----
    Removing a member x from a cluster with kappa_n and m_n leaves
    kappa = kappa_n - 1 and location m = (kappa_n m_n - x) / kappa, so that
    x - m = r e with e = x - m_n and r = kappa_n / kappa. "fixed": the
    predictive is N(m, Sigma (kappa + 1) / kappa) = N(m, r Sigma). "spherical":
    each member adds d to nu and ``kappa_n / (kappa_n + 1) |x - m_n|^2`` to psi,
    so nu = nu_n - d and ``psi = psi_n - r |e|^2`` (psi_n read off the draw's scale
    s_n^2 = psi_n (kappa_n + 1) / (kappa_n nu_n)); the predictive is the
    d-variate Student-t with nu degrees of freedom and shape
    psi (kappa + 1) / (kappa nu) I = r psi / nu I. O(d) a row ("fixed": one
    triangular solve, O(d^2)).
    """
    means, _, factors, dfs = parameters[:4]
    d = X.shape[1]
    kappa_n = kappa + parameters[-1][labels]
    ratio = kappa_n / (kappa_n - 1)
    e = X - means[labels]
    if cholesky is not None:
        w = solve_triangular(cholesky, e.T, lower=True, check_finite=False).T
        return (
            -0.5 * d * np.log(2 * np.pi)
            - np.log(np.diag(cholesky)).sum()
            - 0.5 * d * np.log(ratio)
            - 0.5 * ratio * (w * w).sum(axis=1)
        )
    nu_n = dfs[labels]
    psi_n = factors[labels] ** 2 * kappa_n * nu_n / (kappa_n + 1)
    squared = (e * e).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        psi, nu = psi_n - ratio * squared, nu_n - d
        shape = ratio * psi / nu
        return (
            _student_t_log_normaliser(nu, d)
            - 0.5 * d * np.log(shape)
            - 0.5 * (nu + d) * np.log1p(ratio**2 * squared / (nu * shape))
        )
