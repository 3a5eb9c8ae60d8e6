# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPMallowsClustering: Dirichlet-process mixtures of generalized Mallows models."""

import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from scipy import integrate, optimize
from scipy.special import gammaln
from sklearn.utils import gen_batches
from sklearn.utils.validation import check_is_fitted

from . import _kernels, mallows
from ._base import (
    INTP_MAX,
    SHARED_MOVE_CONSTRAINTS,
    BaseDPMixture,
    SampledAlphaMixin,
    rows_per_batch,
)
from ._consensus import _smallest_label_dtype
from ._distributed import active_client, is_dask_array
from ._distributed_rankings import DaskRankings
from ._mallows_chain import MallowsChain
from ._posterior import cumulative_probability_consensus
from ._sklearn_compat import Interval, StrOptions
from ._validation import (
    MAX_PRIOR_STRENGTH,
    check_flag,
    check_query_rankings,
    check_rank_names,
    check_training_rankings,
    column_names,
    ranking_lengths,
    real_parameter,
    record_column_names,
    sized_by,
    warn_item_zero_unranked,
)

# Split-merge proposals per sweep of sampler="subcluster" with n_split_merge="auto".
# On Meila & Chen's four data sets (bench_mallows_paper.py) 4 reached VI <= 0.01
# in every replicate (3 of 3 and 5 of 5 with another seed; median first sweep 12
# to 64 per data set), at 6 and 14 ms per sweep (t = 10, 19) on one thread; 10 did
# as well without the singleton moves, at 15 and 36 ms.
SUBCLUSTER_SPLIT_MERGE = 4
# n_split_merge="auto" per sampler. Slice-Gibbs: one proposal a sweep, whose merge
# picks the partner cluster by the similarity of the centres (the chain's
# ``_cluster_pair``), joins the two halves of a true cluster that its sequential
# start sometimes leaves and single-site Gibbs keeps (bench_mallows_paper.py:
# VI <= 0.01 by sweep 100 in 59 of 60 replicates over three seeds of 5, against 56
# of 60 without; 2 or 3 proposals did no better), for about 0.6 ms a sweep at
# t = 10 and 1.3 ms at t = 19. Beta-Gibbs: none (the move targets the exact
# posterior, not its approximation).
AUTO_SPLIT_MERGE = {
    "slice-gibbs": 1,
    "beta-gibbs": 0,
    "subcluster": SUBCLUSTER_SPLIT_MERGE,
}


# The sequential start has failed when more than this share of the distinct
# rankings (at least START_MIN_RANKINGS of them; fewer may well be alone) sit
# alone in their clusters, with no ranking but their own copies: the chain then
# starts at random (``_chain_from_beta_gibbs_start``). A lower share would
# also catch outliers among tight clusters of long rankings, which the chain
# keeps alone, but short rankings left alone are soon placed, and a random
# start serves them worse: a tenth fired on 2,000 Jester top-5 rankings (11%
# alone), whose chains then ended 350 to 3,000 nats lower after 200 sweeps,
# and a quarter on 1,000 of them in some streams (23 to 26% alone).
START_MAX_ALONE = 0.5
START_MIN_RANKINGS = 100


def _chain_from_beta_gibbs_start(make_start, make_chain, bit_generator, rankings=None):
    """A chain that starts from the clustering of Beta-Gibbs's sequential prediction.

    Slice-Gibbs's sequential start seats each ranking by the exact assignment
    step, where a new cluster's theta comes from the prior (one ranking carries no
    information on it): the clusters it opens are too dispersed to attract the
    rankings that follow, so the start splits the true clusters into fragments
    (VI 0.87 to 1.15 from the truth on Meila & Chen's data sets, against 0.01 to
    0.07 for Beta-Gibbs's start), which single-site Gibbs merges slowly. Beta-Gibbs's
    predictive integrates theta out (approximately), so its start is kept and the
    exact chain then fits each cluster's (sigma, theta) to its members. The start
    draws from ``bit_generator`` before the chain does: one random stream.

    Beta-Gibbs's start fails the other way on dispersed rankings: a cluster of
    one ranking is given the dispersion of the prior's mean code (1 a rank by
    default), far too concentrated for rankings whose codes are many times
    larger, so each ranking that follows opens a cluster of its own (all of
    1,000 full rankings of 100 items at theta = 0.1; the chain then weighs
    every ranking against every cluster and stays there). With
    ``rankings`` (each row's distinct ranking, ``_distinct_rankings``), where
    the start leaves rankings alone (``_left_alone``), the chain starts from
    ``init_clusters`` random clusters instead (``init="random"``).
    """
    labels = make_start(bit_generator).snapshot()[0].astype(np.intp)
    if rankings is not None and _left_alone(labels, rankings):
        return make_chain(bit_generator, sequential_init=False)
    return make_chain(bit_generator, init_labels=labels)


def _chain_from_sequential_start(make_chain, rankings, bit_generator):
    """Beta-Gibbs's chain from its sequential start, or, where that start leaves
    rankings alone (``_left_alone``), from ``init_clusters`` random clusters,
    drawn from the stream after it."""
    chain = make_chain(bit_generator)
    if not _left_alone(chain.snapshot()[0], rankings):
        return chain
    del chain   # (its work arrays grow with n_items squared)
    return make_chain(bit_generator, sequential_init=False)


def _distinct_rankings(X):
    """Each row's distinct ranking, as an index: the copies that
    ``sample_weight`` makes of a ranking, or repeated rows, share one."""
    return np.unique(X, axis=0, return_inverse=True)[1].reshape(-1).astype(np.intp)


def _left_alone(labels, rankings):
    """Whether a start leaves more than ``START_MAX_ALONE`` of the distinct
    ``rankings`` (at least ``START_MIN_RANKINGS`` of them) alone in clusters
    that hold nothing but their copies."""
    alone, n_distinct = _alone(labels, rankings)
    return n_distinct >= START_MIN_RANKINGS and alone > START_MAX_ALONE * n_distinct


def _alone(labels, rankings):
    """``(alone, n_distinct)``: how many of the distinct ``rankings`` sit alone
    in clusters (``labels``) that hold nothing but their copies, and of how
    many."""
    n_distinct = int(rankings.max()) + 1 if len(rankings) else 0
    if n_distinct == 0:
        return 0, 0
    pairs = np.unique(labels.astype(np.int64) * n_distinct + rankings)
    kinds = np.bincount(pairs // n_distinct)   # distinct rankings in each cluster
    return int((kinds == 1).sum()), n_distinct


class DPMallowsClustering(SampledAlphaMixin, BaseDPMixture):
    """Cluster top-t rankings with a Dirichlet-process mixture of Mallows models.

    Each cluster is a generalized Mallows model GM(sigma, theta) over top-t
    rankings (a central ranking and one dispersion per rank); a Dirichlet process
    prior lets the data choose the number of clusters. The posterior is sampled by
    the Slice-Gibbs or Beta-Gibbs samplers of Meila & Chen (2010), or by a
    parallel sub-cluster sampler (Chang & Fisher 2013, made exact).

    Parameters
    ----------
    alpha : float, default=1.0
        Concentration of the Dirichlet process: larger values favour more clusters.
        With ``alpha_prior`` it is only the starting value.
    nu : float, default=1.0
        Strength (equivalent sample size) of the conjugate prior on theta; at
        most 1e12.
    r : float or array-like of shape (t_max,), default=1.0
        The prior's r_j > 0 (equivalent mean code per rank): larger values favour
        smaller theta, that is more dispersed clusters. Each rate ``nu * r_j``
        must lie in [1e-300, 1e12], the range in which double precision can
        normalise and sample the prior; other values raise a ValueError. An
        array may be longer than t_max (say one value per rank of a full
        ranking, for top-k data): the values past t_max are checked but not
        used.
    sampler : {"slice-gibbs", "beta-gibbs", "subcluster"}, default="slice-gibbs"
        "slice-gibbs" (Figure 1 of the paper) samples theta explicitly by slice
        sampling; with ``sigma_update="mh"`` it is an exact MCMC for the model.
        By default it starts from Beta-Gibbs's sequential prediction and makes
        one split-merge proposal a sweep (``init`` and ``n_split_merge``).
        "beta-gibbs" (Figure 5) integrates theta out of the assignment step with
        the paper's Beta approximation: approximate by design, it keeps more
        clusters than the exact posterior and predicts held-out rankings less
        well (Notes, "Choice of the default").
        "subcluster" keeps Slice-Gibbs's explicit sigma and theta but draws all
        the labels at once, in parallel, given the clusters' parameters and
        weights (the restricted step of Chang & Fisher 2013, made exact by
        anchors, see Notes); new clusters then come from the split-merge moves
        and from 10 singleton proposals per split-merge proposal, so it
        requires ``n_split_merge >= 1`` (``"auto"`` gives 4), and by default it
        starts from one cluster (``init="auto"``). With ``sigma_update="mh"``
        it is an exact MCMC for the model. The label step runs on all cores
        through OpenMP, limited by ``OMP_NUM_THREADS`` or
        ``threadpoolctl.threadpool_limits(user_api="openmp")``; its draws come
        from a counter-based generator (Philox) keyed by the chain's seed, so
        the results do not depend on the number of threads. It also fits a
        ``dask.array.Array`` X on a ``dask.distributed`` cluster, the rankings
        staying on the workers (validated there), with the draws of the same
        fit in process (user guide, "Scaling out").
    sigma_update : {"mh", "stagewise"}, default="mh"
        "mh": the stagewise proposal corrected by a Metropolis-Hastings step, then
        a Metropolis pass of adjacent transpositions; both leave the exact
        conditional of sigma invariant. "stagewise": the paper's rule as
        published, which is not exact (see Notes).
    n_gibbs : int, default=10
        Rounds of (sigma | theta, theta | sigma) per cluster and sweep (T_Gibbs).
    n_slices : int, default=3
        Slice-sampling steps per theta_j and round (T_Slices), for "slice-gibbs".
    init : {"auto", "sequential", "random"}, default="auto"
        How each chain starts. ``"auto"``: ``"sequential"`` for the Gibbs
        samplers, except that a chain starts as ``"random"`` does where its
        sequential start leaves more than half of the distinct rankings (of
        100 or more) alone in clusters of their own copies: dispersed
        rankings, such as 1,000 full rankings of 100 items at theta = 0.1,
        where it left every ranking alone and each sweep then weighed every
        ranking against 1,000 clusters (Beta-Gibbs's own assignment step opens
        such clusters again, so there it still keeps many). Short rankings
        left alone find clusters in a few sweeps (11 to 26% of Jester's top-5
        rankings; from random starts the chains ended lower in log joint);
        long ones stay alone, and so may outliers (15 to 30% of the rankings,
        measured) among tight clusters of full rankings: check ``trace_["n_clusters"]``,
        and try ``"random"``. For ``"subcluster"``, one cluster holding every
        ranking, which its splits take apart (as Chang & Fisher's sampler
        starts). ``"sequential"``:
        sequential prediction (Liang et al. 2007, sec. 5.1), the rankings added
        one at a time in a random order, each drawn into a cluster given the
        rankings before it by the assignment step (the cost of one sweep).
        Slice-Gibbs starts from Beta-Gibbs's sequential prediction, the same
        stream, then fits each cluster's (sigma, theta) to its members: its own
        assignment step draws a new cluster's theta from the prior (one ranking
        says nothing of it), so the clusters it opens are too dispersed to
        attract the rankings that follow, and its own start was VI 0.87 to 1.15
        from the truth on Meila & Chen's data sets, where Beta-Gibbs's is 0.01
        to 0.07 (``benchmarks/bench_mallows_paper.py``).
        ``"random"``: each ranking uniformly in one of ``init_clusters``
        clusters. Random clusters are blends of the true ones, which Gibbs
        sweeps take long to take apart: on Meila & Chen's data sets 3 and 4
        (5,000 rankings of 20 items) the sequential start was within VI 0.15 of
        the truth before the first sweep, where random starts still missed VI
        0.01 after 100 sweeps. With ``sampler="subcluster"`` sequential
        prediction runs on a random sample of at most 4,096 rankings, and every
        ranking is then drawn into one of the sample's clusters given their
        parameters, in parallel. It opens too many clusters for that sampler,
        whose merges of a cluster's fragments are rarely accepted: on 3,000
        rankings of 10 Mallows clusters (20 items, top 10) it began with 478
        clusters and held 456 to 475 after 60 sweeps (ARI 0.76 to 0.79), where
        from one cluster the splits found the 10 within 10 sweeps (ARI 0.999).
    init_clusters : int, default=20
        Size of the random initial clustering (``init="random"``, or
        ``init="auto"`` where the sequential start leaves rankings alone).
    alpha_prior : tuple (shape, rate), default=None
        A Gamma(shape, rate) prior on alpha (rate = 1 / scale), which is then
        resampled every sweep (Escobar & West 1995) and traced as
        ``trace_["alpha"]``. None keeps alpha fixed. ``(shape + n_samples) /
        rate`` must stay below 1e300, the reach of the draws.
    n_split_merge : int or "auto", default="auto"
        Split-merge proposals per sweep (at most 10**6), after the parameter
        updates; 0 turns them off, which ``sampler="subcluster"`` refuses: its
        clusters come from split-merge and from the 10 singleton proposals that
        go with each split-merge proposal. ``"auto"``: 4 for ``"subcluster"``
        (on Meila & Chen's four data sets it reached VI <= 0.01 in every
        replicate, as 10 did, at about half the time per sweep; at the
        college-applications scale both reach the same clustering in the same
        time), 1 for ``"slice-gibbs"``, 0 for ``"beta-gibbs"`` (the move
        targets the exact posterior, not Beta-Gibbs's approximation). Each is
        an exact Metropolis-Hastings step for the clustering and the clusters'
        (sigma, theta) (see Notes), which moves many rankings at once: it joins
        the halves of a split cluster that single-site Gibbs merges only
        slowly. With the Gibbs samplers a merge picks the partner cluster by
        the similarity of the central rankings, so it finds those halves; one
        proposal a sweep costs Slice-Gibbs about 0.6 ms at t = 10 and 1.3 ms at
        t = 19 on 5,000 rankings of 20 items (a sweep without it takes 3.3 and
        7.4 ms).
    n_items : int, default=None
        Number of items n; item ids are 0 to n - 1. None takes the largest item
        id of the training data + 1 (and warns if item 0 is in no ranking: ids
        that start at 1 would add a phantom item 0). Pass it when other
        rankings may hold items the training data lack: ``predict`` and
        ``score`` refuse ids of ``n_items_`` or more, so a cross-validation
        fold without the highest ids makes the other folds' scores NaN. At
        most 2**14 = 16384: each chain allocates an n x n float64 work matrix
        (2 GiB at that size), so a larger n raises a ValueError before fitting;
        with ``sampler="subcluster"`` a chain holds one such matrix for each
        OpenMP thread its parameter step uses (at most one per cluster; limit
        them with ``OMP_NUM_THREADS`` or threadpoolctl when n is large).
        Map sparse ids (product ids, say) to 0..n-1 first.
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
        Keep the chains, so that the next ``fit`` on the same data continues
        them for ``n_iter`` more sweeps, pooling the draws as if one fit had
        run them all; see :class:`DPGaussianClustering` for the details.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Point estimate of the clustering: the kept draw with the least mean
        variation of information to the other kept draws.
        It is one draw: a ranking between overlapping clusters sits where
        that draw put it. ``predict(X)`` gives each ranking's most probable
        cluster instead.
    n_clusters_ : int
        Number of clusters of ``labels_``.
    weights_ : ndarray of shape (`n_clusters_`,)
        Proportion of the training rankings in each cluster of ``labels_``.
    central_rankings_ : ndarray of shape (`n_clusters_`, `n_items_`)
        Central ranking sigma of each cluster (best first), in the same draw.
    thetas_ : ndarray of shape (`n_clusters_`, t_max)
        Dispersion theta_j of each cluster and rank, in the same draw. When the
        training data hold full rankings (t_max = `n_items_`), the last column
        is NaN: at the last rank a single item remains, every ranking agrees
        on it whatever theta is, so the data say nothing of that theta (its
        draw is the prior's, or for beta-gibbs an artefact of the Beta
        approximation, about log of the cluster size) and it must not be read
        as strong agreement.
    label_samples_ : ndarray of shape (n_draws, n_samples)
        Every kept draw of the clustering, chains stacked; clusters are numbered by
        first appearance within each draw.
    trace_ : dict of ndarray of shape (n_chains, n_iter)
        ``"n_clusters"`` and ``"log_joint"`` (log p(c, sigma, theta, X), constants
        included, plus log p(alpha) when alpha is sampled) after every sweep, and
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
    n_items_ : int
        Number of items.
    r_ : ndarray of shape (t_max,)
        The prior parameters r_j used.
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
    DPGaussianClustering : The same engine for vectors.
    rankmix.mallows : The GM model's functions.

    Notes
    -----
    The model, for rankings pi_1..pi_N of lengths t_i over n items:

    .. math::

        G \\sim DP(\\alpha, P_0), \\quad (\\sigma_i, \\theta_i) \\sim G, \\quad
        \\pi_i \\sim GM(\\cdot \\mid \\sigma_i, \\theta_i),

        P_0(\\sigma, \\theta) \\propto \\exp\\Big(-\\nu \\sum_j
        [\\theta_j r_j + \\ln \\psi_{n-j}(\\theta_j)]\\Big),

    sigma uniform. A new cluster's prior predictive is exactly
    ``(n - t)! / n!`` (Lemma 1).

    The paper's Lemma 2 says that Sample-sigma-Stagewise draws sigma exactly from
    P(sigma | theta, data). It does not in general: the stage probabilities ignore
    how the later stages normalise. With one full ranking (0, 1, 2) and
    theta = (1, 0.3) the exact first-item probabilities are (0.665, 0.192, 0.142),
    the stagewise rule's (0.610, 0.224, 0.166). Its proposal probability is cheap,
    so ``sigma_update="mh"`` uses it as an independence Metropolis-Hastings
    proposal, whose acceptance ratio reduces to a ratio of the stage normalisers.
    An independence sampler alone can stall for good in a state where the
    target-to-proposal ratio is far above its value at the proposal's draws (a
    cluster reaches such centres while its members and theta change), so each
    round also makes one Metropolis pass of adjacent transpositions over sigma, a
    local move whose energy change costs O(1) per pair.

    Beta-Gibbs replaces B~eta(a, b, n) by Beta(a, b), the limit of infinitely many
    items, in the assignment step and in the theta update (12); it targets an
    approximation of the posterior. ``score_samples`` uses the explicit theta of
    every draw, so it is a normalised density for both samplers.

    Split-merge (Jain & Neal 2004, restricted Gibbs launch). A proposal picks
    two rankings i and j. The Gibbs samplers pick by clusters: a split (with
    probability 1/2) takes a cluster uniformly and an ordered pair of its
    rankings; a merge takes a cluster A uniformly, a partner B with probability
    proportional to GM(sigma_A | sigma_B, theta_B) (sigma_A read as a top-t
    ranking: how well B's model explains A's centre), then i in A and j in B
    uniformly. So the merges that matter, of two clusters with nearly the same
    centre, are proposed at once, where a uniform pair of rankings picks two
    halves of 100 and 400 of 5,000 rankings once in 300 proposals. The
    sub-cluster sampler picks two rankings uniformly (if they share a cluster
    it proposes to split it, else to merge their clusters). A launch state,
    drawn from the two clusters' union alone (the same whichever way the move
    goes), allocates the other rankings to i's or j's side by a few restricted
    Gibbs scans; a final scan gives the split. Each new cluster's sigma is
    drawn from the stagewise proposal of the MH sigma step, given its members
    and a launch theta, and its theta from the exact conditional given sigma
    (density (10), normalised by quadrature); except that, by a fair coin drawn
    with the pair, i's cluster may keep its own (sigma, theta) (a split then
    draws j's side's only, a merge gives the union i's cluster's). On a cluster
    of thousands of rankings the stagewise proposal and the exact conditional
    of sigma are both sharp, at different rankings, so the move that draws
    every cluster's parameters is almost never accepted there and the one that
    keeps them is. The acceptance ratio holds the model's ratio, alpha
    Gamma(n_A) Gamma(n_B) / Gamma(n_C) times the clusters' P0(sigma, theta)
    prod GM, and every proposal density: the pick's in both directions (for a
    split, the reverse merge's choice of B as A's partner among the clusters
    the split makes), the allocation's, the new parameters', and the reverse
    move's proposal of the parameters it would restore. So the move leaves the
    posterior of (c, sigma, theta) invariant, and with ``sampler="slice-gibbs",
    sigma_update="mh"`` the chain stays exact. With ``"beta-gibbs"`` the same
    step runs: it preserves that exact posterior, not the Beta approximation
    the other Beta-Gibbs moves target, so there it is a mixing aid only.

    Choice of the default. Slice-Gibbs is the default: it is exact, and it
    predicts best. Held-out log-likelihood per ranking
    (``benchmarks/bench_mallows_real.py``: 2,000 rankings fitted, 3,000 others
    scored, every other parameter at its default, two seeds) on sushi, Jester,
    APA and the Meath ballots: Slice-Gibbs -13.606, -19.630, -3.685, -8.900;
    Beta-Gibbs -13.697, -19.639, -3.705, -8.918; the sub-cluster sampler
    -13.659, -19.728, -3.690, -8.962 (means of the two seeds; Slice-Gibbs above
    Beta-Gibbs in all eight fits). Beta-Gibbs's approximation keeps more
    clusters than the exact posterior (on sushi about 30 where the exact
    samplers settle near 20; on Meila & Chen's data set 4 an extra one of about
    100 rankings, which the exact samplers merge and split-merge does not
    remove): VI <= 0.01 within 100 sweeps missed in 1 of 3 replicates on data
    set 4, and in 1 of 5 on data set 1 with another seed. With its start and
    split-merge move above, Slice-Gibbs reaches VI <= 0.01 within 100 sweeps in
    3 of 3 replicates on all four data sets of the paper (59 of 60 over three
    seeds of 5; 56 of 60 without split-merge) at 3.9 to 4.2 ms per sweep for t =
    10 and 8.7 to 8.8 ms for t = 19, and takes 0.49 s per sweep at the scale of
    the paper's college applications (53,757 rankings of 533 items; Beta-Gibbs
    0.69 s). The sub-cluster sampler from its one-cluster start climbs slowly on
    diffuse data (on sushi 10 or 11 clusters after 200 sweeps, 14 to 16 after
    800); prefer it for large, well-separated data and many cores, run until its
    chains agree. On diffuse real data no sampler's chains agree within the
    default 200 sweeps every time: check ``rhat_`` and run longer where they do
    not.

    Sub-cluster sampler (``sampler="subcluster"``). Given the clusters'
    (sigma, theta) and weights pi, the labels are independent, so they can be
    drawn in parallel; each sweep draws pi_k ~ Gamma(n_k, 1) (only the ratios
    pi_k / pi_j matter: the Dirichlet(n_1, ..., n_K, alpha) weights given the
    clustering, unnormalised), then each ranking's cluster with probability
    proportional to pi_k GM(pi_i | sigma_k, theta_k). Chang & Fisher (2013)'s
    restricted step may empty a cluster, a move with no reverse, so it does not
    leave the DP posterior invariant. Here every ranking gets a random priority
    each sweep; each cluster's ranking of lowest priority (its anchor) keeps its
    cluster, and another ranking may join a cluster only if its priority exceeds
    that cluster's anchor's. No cluster empties, the reachable set of clusterings
    is the same from each of them, and the step is an exact blocked Gibbs step
    on (clustering, pi); then come the Slice-Gibbs parameter updates, the
    split-merge moves (which create and remove clusters), 10 x ``n_split_merge``
    singleton proposals and the alpha step. A singleton proposal, with
    probability 1/2 each, picks a cluster uniformly and, if it holds one ranking
    pi_a, proposes it into another cluster k drawn with probability
    proportional to n_k GM(pi_a | sigma_k, theta_k) (Z their sum); or picks a
    ranking uniformly and, if its cluster has others, proposes it as a new
    cluster whose (sigma, theta) are drawn from their exact conditional given
    pi_a alone. With p(pi_a) = (n - t_a)! / n!, the prior predictive of a new
    cluster, the absorption is accepted with probability
    min(1, K Z / (alpha p(pi_a) N)) and the split-off with the inverse ratio
    computed in the proposed state, as in DPGaussianClustering's sub-cluster
    sampler: the new cluster's P0(sigma, theta) GM(pi_a | sigma, theta) over
    its proposal density is p(pi_a) whatever (sigma, theta). Without them a
    cluster of one ranking, which the anchored step never empties, left only
    by a merge: on 300 rankings of 3 clusters the two chains disagreed on the
    number of clusters in 3 to 6 of 12 fits (R-hat above 1.1, one chain
    keeping a singleton to the end), and in none with them.
    The priorities and the labels are drawn by Philox from (seed, ranking,
    sweep), whichever thread draws them. The clusters' parameter updates run in
    parallel too (over the clusters, on the same threads), each cluster's from
    its own Philox stream keyed by (seed, cluster slot, update round), so the
    draws do not depend on the number of threads either.

    With ``alpha_prior`` = (a, b), each sweep ends with alpha | K, N drawn by
    Escobar & West's auxiliary-variable step (eta ~ Beta(alpha + 1, N), then a
    two-component Gamma mixture); given the clustering, alpha is independent of
    the clusters' parameters and of the data, so the step leaves the joint
    posterior of (c, sigma, theta, alpha) invariant. Each draw's own alpha
    weighs its new-cluster term in ``score_samples``.

    Memory of the draws. Every kept draw keeps its clusters' central rankings
    and dispersions whole (``posterior_samples``, ``consensus_rankings`` and
    the predictive methods read them all): K x ``n_items_`` item ids, stored
    in the smallest integer type that holds them (a byte for up to 128 items,
    two for up to 32,768), and K x t_max float64 dispersions. 1,000 draws of
    20 clusters of 1,000 items take 40 MB of central rankings, and 160 MB of
    dispersions if the rankings are full (t_max = 1,000); lower ``n_iter`` or
    raise ``thin`` where that is too much. ``posterior_samples`` returns the
    central rankings padded to the most clusters of a draw, as intp (8 bytes
    an entry).

    References
    ----------
    M. Meila and H. Chen. Dirichlet process mixtures of generalized Mallows
    models. UAI 2010.

    R. M. Neal. Markov chain sampling methods for Dirichlet process mixture
    models. J. Comput. Graph. Stat. 9(2), 2000.

    S. Jain and R. M. Neal. A split-merge Markov chain Monte Carlo procedure for
    the Dirichlet process mixture model. J. Comput. Graph. Stat. 13(1), 2004.

    M. D. Escobar and M. West. Bayesian density estimation and inference using
    mixtures. J. Am. Stat. Assoc. 90(430), 1995.

    J. Chang and J. W. Fisher III. Parallel sampling of DP mixture models using
    sub-cluster splits. NIPS 2013.

    Examples
    --------
    >>> from rankmix import DPMallowsClustering
    >>> from rankmix.datasets import make_mallows_mixture
    >>> X, y, _ = make_mallows_mixture(n_clusters=3, n_per_cluster=60, n_items=8,
    ...                                t=4, theta=2.0, random_state=0)
    >>> model = DPMallowsClustering(random_state=0).fit(X)
    >>> model.n_clusters_
    3
    >>> model.central_rankings_.shape
    (3, 8)
    """

    _parameter_constraints: dict = {
        **BaseDPMixture._parameter_constraints,
        "nu": [Interval(Real, 0, None, closed="neither")],
        "r": [Interval(Real, 0, None, closed="neither"), "array-like"],
        "sampler": [StrOptions({"beta-gibbs", "slice-gibbs", "subcluster"})],
        "sigma_update": [StrOptions({"mh", "stagewise"})],
        "n_gibbs": [Interval(Integral, 1, INTP_MAX, closed="both")],
        "n_slices": [Interval(Integral, 1, INTP_MAX, closed="both")],
        "init_clusters": [Interval(Integral, 1, INTP_MAX, closed="both")],
        "n_items": [Interval(Integral, 1, None, closed="left"), None],
        **SHARED_MOVE_CONSTRAINTS,
        # "auto": what suits the sampler (the docstring, _start and _split_merges)
        "n_split_merge": [
            *SHARED_MOVE_CONSTRAINTS["n_split_merge"],
            StrOptions({"auto"}),
        ],
        "init": [StrOptions({"auto", "sequential", "random"})],
    }

    def __init__(
        self,
        *,
        alpha=1.0,
        nu=1.0,
        r=1.0,
        sampler="slice-gibbs",
        sigma_update="mh",
        n_gibbs=10,
        n_slices=3,
        init="auto",
        init_clusters=20,
        alpha_prior=None,
        n_split_merge="auto",
        n_items=None,
        n_iter=200,
        burn_in=100,
        thin=2,
        n_chains=2,
        n_jobs=None,
        random_state=None,
        verbose=0,
        warm_start=False,
    ):
        super().__init__(
            alpha=alpha,
            n_iter=n_iter,
            burn_in=burn_in,
            thin=thin,
            n_chains=n_chains,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
            warm_start=warm_start,
        )
        self.nu = nu
        self.r = r
        self.sampler = sampler
        self.sigma_update = sigma_update
        self.n_gibbs = n_gibbs
        self.n_slices = n_slices
        self.init = init
        self.init_clusters = init_clusters
        self.alpha_prior = alpha_prior
        self.n_split_merge = n_split_merge
        self.n_items = n_items

    # -- top-k summaries -------------------------------------------------------

    def top_k_probabilities(self, k):
        """Probability that each item is among a cluster's first ``k``.

        Parameters
        ----------
        k : int
            Number of leading places, 1 <= k <= ``n_features_in_`` (the model
            has a theta for the first ``n_features_in_`` places only).

        Returns
        -------
        proba : ndarray of shape (`n_clusters_`, `n_items_`)
            ``proba[c, i]``: P(item i is among the first k of a ranking of
            cluster c of ``labels_``). Each row sums to k.

        Notes
        -----
        Each kept draw d gives its clusters j a GM model (sigma_j, theta_j),
        under which P_j(i in top k) is exact (see
        :func:`rankmix.mallows.top_k_probabilities`). The draws number their
        clusters independently, so cluster c of ``labels_`` is read through its
        training rankings: each is in some cluster j of draw d, and

        .. math::

            P(i \\in \\text{top } k \\mid c) = \\frac{1}{D} \\sum_{d=1}^{D}
            \\sum_j \\frac{|j \\cap c|}{|c|} P_j(i \\in \\text{top } k),

        the average over the draws and over c's rankings of the probability
        under the model of the ranking's cluster.

        Examples
        --------
        >>> import numpy as np
        >>> from rankmix import DPMallowsClustering
        >>> from rankmix.datasets import make_mallows_mixture
        >>> X, _, centres = make_mallows_mixture(
        ...     n_clusters=2, n_per_cluster=50, n_items=6, t=3, theta=2.0,
        ...     random_state=0)
        >>> model = DPMallowsClustering(random_state=0).fit(X)
        >>> proba = model.top_k_probabilities(3)  # (n_clusters_, n_items)
        >>> bool(np.allclose(proba.sum(axis=1), 3))  # k items in each top k
        True
        """
        check_is_fitted(self)
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, Integral):
            raise TypeError(f"k must be an integer, got {k!r}.")
        if not 1 <= k <= self.n_features_in_:
            raise ValueError(
                f"k must be in [1, n_features_in_={self.n_features_in_}], got {k}: "
                "the model has a theta for the places of the training rankings only."
            )
        proba = np.zeros((self.n_clusters_, self.n_items_))
        for d, (sigmas, thetas, *_) in enumerate(self._draws):
            overlap = self._cluster_overlap(d)
            overlap /= overlap.sum(axis=0, keepdims=True)
            proba += overlap.T @ mallows.top_k_probabilities(_wide(sigmas), thetas, k)
        return proba / len(self._draws)

    def predict_next_proba(self, X):
        """Probability of each item coming next after each partial ranking.

        Parameters
        ----------
        X : array-like of shape (n_samples, t_max) or list of sequences
            Partial rankings, best first, padded with -1; each shorter than the
            longest training ranking (the model has no theta past it).

        Returns
        -------
        proba : ndarray of shape (n_samples, `n_items_`)
            ``proba[r, i]``: P(item i is ranked next after ranking r), zero for
            the items r holds already. Rows sum to one.

        Notes
        -----
        From the posterior predictive of `score_samples`, p(x | X_train), the
        average over the kept draws of each draw's DP mixture (new cluster
        included): for a ranking x of length t and an item i not in it,

        .. math::

            P(\\text{next} = i \\mid x) = \\frac{p(x \\oplus i)}{p(x)},

        x (+) i the ranking of length t + 1 that extends x by i. Each GM model
        and the new cluster's (n - t)! / n! give top-(t + 1) probabilities
        that sum over i to the top-t probability of x, so the rows sum to one;
        the clusters are weighted by how well they explain x itself.

        Examples
        --------
        >>> from rankmix import DPMallowsClustering
        >>> model = DPMallowsClustering(random_state=0)
        >>> model = model.fit([[0, 1, 2], [0, 1, 2], [0, 2, 1], [1, 0, 2]])
        >>> proba = model.predict_next_proba([[0]])
        >>> proba.shape, proba[0, 0]
        ((1, 3), np.float64(0.0))
        """
        check_is_fitted(self)
        X = self._check_new_data(X)
        lengths = ranking_lengths(X)
        if lengths.max() >= self.n_features_in_:
            r = int(np.argmax(lengths >= self.n_features_in_))
            raise ValueError(
                f"Ranking {r} has length {lengths[r]}: the model predicts places "
                f"up to the longest training ranking's ({self.n_features_in_}) "
                "only, so a ranking must be shorter than that."
            )
        # in batches of rankings whose extensions (by every item: n_items_
        # rankings one place longer than X's rows, their indices, densities and
        # copies; about 16 n_items_ (width + 4) bytes a ranking) fit
        # scikit-learn's working_memory
        proba = np.empty((len(X), self.n_items_))
        batch = rows_per_batch(16 * self.n_items_ * (X.shape[1] + 4))
        for rows in gen_batches(len(X), batch):
            proba[rows] = self._next_proba(X[rows], lengths[rows])
        return proba

    def _next_proba(self, X, lengths):
        """`predict_next_proba` of validated rankings ``X`` of ``lengths``."""
        # every ranking extended by every item it lacks, scored in one pass
        taken = np.zeros((len(X), self.n_items_), dtype=bool)
        rows, places = np.nonzero(X >= 0)
        taken[rows, X[rows, places]] = True
        rows, items = np.nonzero(~taken)
        extended = np.full((len(rows), X.shape[1] + 1), -1, dtype=np.intp)
        extended[:, :-1] = X[rows]
        extended[np.arange(len(rows)), lengths[rows]] = items
        log_density = [self._log_predictive(x) for x in (X, extended)]
        proba = np.zeros((len(X), self.n_items_))
        proba[rows, items] = np.exp(log_density[1] - log_density[0][rows])
        return proba

    # -- hooks ---------------------------------------------------------------

    def _prepare(self, X, space=None):
        # Columns that only pad would add stages without data; rows of weight 0
        # (space) count towards the stages and items, as if given by n_items.
        if self.sampler == "subcluster" and self._split_merges() == 0:
            raise ValueError(
                "sampler='subcluster' with n_split_merge=0 would "
                "never create a cluster (its label step only moves rankings "
                "between the existing ones); set n_split_merge >= 1, or pass "
                "sampler='beta-gibbs' or 'slice-gibbs' to run without split-merge."
            )
        names = column_names(X)
        if is_dask_array(X):  # the rankings stay on the workers, validated there
            X = DaskRankings(X, active_client(), self.n_items)
            self.n_items_ = X.n_items
            if self.n_items is None and not X.holds_item_zero:
                warn_item_zero_unranked(self.n_items_)
        else:
            X, self.n_items_ = check_training_rankings(X, self.n_items, space)
        _check_chain_memory(self.n_items_, self.n_items is None)
        self.n_features_in_ = X.shape[1]
        record_column_names(self, names)
        t_max = X.shape[1]
        r = real_parameter(self.r, "r")
        if r.ndim > 1 or (r.ndim == 1 and len(r) < t_max):
            raise ValueError(
                f"r must be a scalar or have one value per rank (t_max={t_max}), "
                f"got shape {r.shape}."
            )
        if not np.all(np.isfinite(r)) or np.any(r <= 0):
            raise ValueError(f"r must be finite and > 0, got {self.r!r}.")
        self.r_ = np.full(t_max, float(r)) if r.ndim == 0 else r[:t_max].copy()
        _check_prior_range(float(self.nu), self.r_)
        self._log_prior_norm = np.array(
            [
                log_theta_normaliser(
                    self.nu * self.r_[j], self.nu, self.n_items_ - 1 - j
                )
                for j in range(t_max)
            ]
        )
        if not np.all(np.isfinite(self._log_prior_norm)):
            j = int(np.argmax(~np.isfinite(self._log_prior_norm)))
            raise ValueError(
                f"The prior on theta_{j + 1} (nu={self.nu}, r[{j}]={self.r_[j]}) "
                "cannot be normalised in double precision; choose nu and r "
                "closer to 1."
            )
        lengths = X.lengths() if isinstance(X, DaskRankings) else ranking_lengths(X)
        length_counts = np.bincount(lengths, minlength=t_max + 1)
        self._length_probs = length_counts[1:] / len(lengths)
        self._alpha_prior = self._resolve_alpha_prior(len(lengths))
        return X

    def _chain_factory(self, X):
        n_items, alpha, nu, r = (
            self.n_items_,
            float(self.alpha),
            float(self.nu),
            self.r_,
        )
        log_norm = self._log_prior_norm
        use_mh = self.sigma_update == "mh"
        n_gibbs, n_slices = self.n_gibbs, self.n_slices
        sequential_init, init_clusters = self._start(X.shape[0])
        remote = None
        if isinstance(X, DaskRankings):  # the chain reads them through X's holder
            X, remote = np.empty((0, X.shape[1]), dtype=np.intp), X

        def chain(beta_gibbs, **keywords):
            # a partial, not a closure: it pickles, so that chains can run in
            # other processes; the engine passes the bit generator, the last
            # positional
            return partial(
                MallowsChain,
                X,
                n_items,
                alpha,
                nu,
                r,
                log_norm,
                beta_gibbs,
                use_mh,
                n_gibbs,
                n_slices,
                init_clusters,
                **keywords,
            )

        make_chain = chain(
            self.sampler == "beta-gibbs",
            alpha_prior=self._alpha_prior,
            n_split_merge=self._split_merges(),
            sequential_init=sequential_init,
            subcluster=self.sampler == "subcluster",
            remote=remote,
        )
        # the Gibbs samplers' starts are checked for rankings left alone
        checked = self.init == "auto" and self.sampler != "subcluster"
        rankings = _distinct_rankings(X) if checked else None
        if rankings is not None and self.sampler == "beta-gibbs":
            return partial(_chain_from_sequential_start, make_chain, rankings)
        if not (sequential_init and self.sampler == "slice-gibbs"):
            return make_chain
        # Slice-Gibbs starts where Beta-Gibbs's sequential prediction ends
        make_start = chain(True, sequential_init=True)
        return partial(_chain_from_beta_gibbs_start, make_start, make_chain,
                       rankings=rankings)

    def _split_merges(self):
        """``n_split_merge``, "auto" resolved (``AUTO_SPLIT_MERGE``): 4 for
        "subcluster", whose splits and singleton moves (10 per split-merge
        proposal) are its only sources of new clusters; 1 for "slice-gibbs"; 0
        (off) for "beta-gibbs"."""
        if self.n_split_merge == "auto":
            return AUTO_SPLIT_MERGE[self.sampler]
        return self.n_split_merge

    def _start(self, n_samples):
        """``(sequential_init, init_clusters)`` of the chains, ``init="auto"``
        resolved: one cluster, which the splits take apart, for "subcluster";
        the sequential start for the others."""
        if self.init == "auto" and self.sampler == "subcluster":
            return False, 1
        # more initial clusters than rankings only sizes slot arrays for nothing
        # (2 * init_clusters slots are allocated up front)
        return self.init != "random", min(self.init_clusters, n_samples)

    def _check_new_data(self, X):
        check_rank_names(self, X)
        X = check_query_rankings(X, self.n_items_, inferred=self.n_items is None)
        if X.shape[1] > self.n_features_in_:
            raise ValueError(
                f"X holds a ranking of length {X.shape[1]}, longer than the longest "
                f"training ranking ({self.n_features_in_}): the model has no theta "
                "for those ranks. Refit with longer rankings among the training data."
            )
        return X

    def _component_log_density(self, X, parameters):
        sigmas, thetas, _, _ = parameters
        return _kernels.log_likelihood(X, _wide(sigmas), thetas)

    def _new_cluster_log_density(self, X):
        n = self.n_items_
        return gammaln(n - ranking_lengths(X) + 1.0) - gammaln(n + 1.0)

    def _describe_clusters(self, parameters):
        sigmas, thetas, *rest = parameters
        self.central_rankings_ = _wide(sigmas)
        # the point-estimate draw keeps central_rankings_ itself, as before the
        # draws were kept compactly: what the predictive methods read of it is
        # what the attribute shows
        self._best_parameters = (self.central_rankings_, thetas, *rest)
        self._draws[self._best_draw] = self._best_parameters
        self.thetas_ = self._mask_uninformative_stages(thetas)

    def _mask_uninformative_stages(self, thetas):
        """A copy of ``thetas`` (..., t_max) with NaN from stage n_items - 1 on.

        Stage n - 1 of a full ranking has one item left and code 0 whatever
        theta is: its likelihood is constant, so its draw carries no
        information (see ``thetas_`` in the class docstring). The draws used
        by sample and score_samples keep their value, which cancels there.
        """
        thetas = np.array(thetas, dtype=np.float64)
        thetas[..., self.n_items_ - 1 :] = np.nan
        return thetas

    # -- posterior summaries (PosteriorSummaryMixin) -----------------------------

    _draw_fields = {"central_rankings": (0, -1), "thetas": (1, np.nan)}

    def _draw_field_values(self, name, values):
        if name == "thetas":
            return self._mask_uninformative_stages(values)
        return _wide(values)

    def _draw_trimmer(self, data_units=False):
        return _compact_draw

    def consensus_rankings(self, *, return_rank_cdf=True):
        """Each cluster's consensus central ranking over the kept draws.

        Parameters
        ----------
        return_rank_cdf : bool, default=True
            Also return ``rank_cdf``, ``n_clusters_`` x ``n_items_`` x
            ``n_items_`` floats (20 clusters of 16,384 items: 40 GiB); False
            returns the consensus alone, in O(``n_items_``) memory a cluster.

        Returns
        -------
        consensus : ndarray of shape (``n_clusters_``, ``n_items_``)
            Row j: the items best first, the cumulative-probability consensus
            of the central rankings of the draw clusters matched to cluster j
            of ``labels_`` (see :meth:`match_clusters`).
        rank_cdf : ndarray of shape (``n_clusters_``, ``n_items_``, ``n_items_``)
            ``rank_cdf[j, i, p]``: the posterior probability that cluster j's
            central ranking places item i at position p or better (0-based).
            Only with ``return_rank_cdf=True``.

        Notes
        -----
        BayesMallows' ``compute_consensus(type = "CP")`` (Vitelli et al. 2018):
        position 1 goes to the item most often first; position p to the item
        not yet placed with the largest probability of a position of p or
        better. ``central_rankings_`` is one draw's sigma; the consensus pools
        every kept draw, so it is the better summary when the draws disagree.

        Examples
        --------
        >>> from rankmix import DPMallowsClustering
        >>> from rankmix.datasets import make_mallows_mixture
        >>> X, _, _ = make_mallows_mixture(n_clusters=2, n_per_cluster=40,
        ...                                n_items=5, t=3, theta=2.0, random_state=0)
        >>> model = DPMallowsClustering(random_state=0).fit(X)
        >>> consensus, rank_cdf = model.consensus_rankings()
        >>> consensus.shape[1], rank_cdf.shape[1:]
        (5, (5, 5))
        """
        return_rank_cdf = check_flag(return_rank_cdf, "return_rank_cdf")
        matched, _ = self.match_clusters()
        draws = self._draws

        def matched_sigmas(j):
            # one cluster's central rankings at a time (n_draws x n_items), not
            # every draw's padded to the most clusters at once
            return _wide([draws[d][0][c] for d, c in enumerate(matched[:, j])])

        with sized_by("n_items", self.n_items_):  # rank_cdf: K n^2 probabilities
            pooled = [
                cumulative_probability_consensus(
                    matched_sigmas(j), self.n_items_, return_rank_cdf
                )
                for j in range(self.n_clusters_)
            ]
            if not return_rank_cdf:
                return np.stack(pooled)
            consensus, rank_cdf = zip(*pooled)
            return np.stack(consensus), np.stack(rank_cdf)

    def _sample_components(self, components, parameters, rng):
        sigmas, thetas, _, _ = parameters
        t_max = self.n_features_in_
        X = np.full((len(components), t_max), -1, dtype=np.intp)
        for k in np.unique(components):
            rows = np.flatnonzero(components == k)
            X[rows] = mallows.sample(
                _wide(sigmas[k]), thetas[k], len(rows), t_max, random_state=rng
            )
        return self._cut_to_training_lengths(X, rng)

    def _sample_new_clusters(self, n_samples, rng):
        # Lemma 1: a new cluster's prior predictive is (n - t)! / n!, uniform
        # over the top-t rankings: the first items of a uniform permutation
        X = rng.random((n_samples, self.n_items_)).argsort(axis=1)
        return self._cut_to_training_lengths(X[:, : self.n_features_in_], rng)

    def _cut_to_training_lengths(self, X, rng):
        """Top-t_max rankings cut to lengths drawn as the training data's are."""
        t_max = self.n_features_in_
        lengths = rng.choice(np.arange(1, t_max + 1), size=len(X), p=self._length_probs)
        X[np.arange(t_max) >= lengths[:, None]] = -1
        return X


# Each chain allocates an n_items x n_items float64 work matrix (the weighted
# "preceded" table of Sample-sigma, _mallows_chain.pyx) and two n_items vectors
# per cluster slot (the sub-cluster chain one matrix per thread of its parameter
# step). 2**14 items make that matrix 2 GiB, and a Gibbs
# round over full rankings of n items costs O(n^2): beyond that, a fit would
# exhaust the memory of most machines (each of n_jobs chains holds its own) or
# run for days, so a larger n_items is refused before any allocation.
MAX_CHAIN_ITEMS = 2**14

# The usable range of the prior's strength nu and of its rates nu * r_j. The
# log-density of the theta prior is of order nu (and nu r_j): beyond 1e12 it
# pins theta to one value to double precision, its normaliser loses its
# quadrature and the log joint keeps no significant digit (nu = 1e14 already
# gives a log joint of -inf, nu * r = 1e15 a sampler that never returns). A
# rate below 1e-300 leaves the prior flat up to theta ~ 1e300, the edge of the
# double range, and its normaliser cannot be integrated.
MIN_PRIOR_RATE = 1e-300


def _compact_draw(parameters, whole):
    """A kept draw as DPMallowsClustering keeps it (the engine's ``trim_draw``;
    every draw is whole): its K central rankings in the smallest integer dtype
    that holds the items (int16 up to 32,768 items), not the chains' intp, a
    quarter of the memory or less (``_wide`` reads them back)."""
    sigmas, *rest = parameters
    return (sigmas.astype(_smallest_label_dtype(max(sigmas.shape[-1] - 1, 0))), *rest)


def _wide(sigmas):
    """Central rankings as the compiled code and the public functions take
    them: intp (a copy of a kept draw's compact ones; no copy of the
    point-estimate draw's, which are intp)."""
    return np.asarray(sigmas, dtype=np.intp)


def _check_chain_memory(
    n_items, inferred, estimator="DPMallowsClustering", holder="each chain"
):
    """Refuse an ``n_items`` whose n_items x n_items work matrices (one for
    ``holder``) would not fit in memory."""
    if n_items <= MAX_CHAIN_ITEMS:
        return
    gib = 8 * n_items**2 / 2**30
    message = (
        f"n_items={n_items} is too large for {estimator}: {holder} allocates "
        f"an n_items x n_items float64 work matrix, {gib:,.1f} GiB here. At "
        f"most {MAX_CHAIN_ITEMS} items are supported "
        f"({8 * MAX_CHAIN_ITEMS**2 // 2**30} GiB for {holder})."
    )
    if inferred:
        message += (
            " n_items was taken from the largest item id of X plus one: if the "
            "ids are sparse (product or movie ids, say), map the ids used to "
            "0..n-1 first (numpy.unique with return_inverse=True), keeping -1 "
            "as padding."
        )
    raise ValueError(message)


def _check_prior_range(nu, r):
    """Refuse a theta prior whose strength is outside the usable double range."""
    if nu > MAX_PRIOR_STRENGTH:
        raise ValueError(
            f"nu={nu} is too large: the theta prior's strength must be at most "
            f"{MAX_PRIOR_STRENGTH:g}. A prior worth more rankings than that "
            "fixes theta to double precision and leaves no significant digit in "
            "the log joint; to fix theta, use a large but moderate nu (1e6)."
        )
    with np.errstate(over="ignore", under="ignore"):
        rates = nu * r
    bad = ~((rates >= MIN_PRIOR_RATE) & (rates <= MAX_PRIOR_STRENGTH))
    if bad.any():
        j = int(np.argmax(bad))
        raise ValueError(
            f"nu * r[{j}] = {rates[j]:g} (nu={nu:g}, r[{j}]={r[j]:g}) is outside "
            f"[{MIN_PRIOR_RATE:g}, {MAX_PRIOR_STRENGTH:g}], the range of the "
            "theta prior's rate nu * r_j that double precision can normalise "
            "and sample. Choose nu and r so that their product lies in it."
        )


def log_theta_normaliser(a, b, m):
    """log of the integral over theta >= 0 of exp(-a theta - b log psi_m(theta)).

    The normaliser of the theta_j prior (a = nu r_j, b = nu, m = n - j). The
    integrand is log-concave. Its mode is 0 where the slope there, -a + b m / 2,
    is not positive, and otherwise the root of the slope. On each side of the
    mode the distance d at which the log-density has fallen by one nat is
    bracketed and solved for; concavity then bounds the log-density by -t at
    t d beyond it, so the side is integrated by quadrature in units of d out to
    t = 50 (the mass left is below e^-50), after shifting by the log-density at
    the mode so that large a and b do not underflow. (Stepping in units of 1 /
    a missed the mass right of an inner mode when b Var k >> a^2, log 2 too
    small at nu = nu r = 1e8 and 12 nats at 1e12; the Laplace width alone
    misses a mode at 0 narrower than it.) The compiled
    ``_kernels.theta_log_normaliser`` brackets its sides alike and integrates
    by Simpson's rule; tests hold the two together.
    """
    moments = _CodeMoments(m)

    def log_density(theta):
        return -a * theta - b * _kernels._log_psi_wrapper(m, theta)

    def slope(theta):
        return -a + b * moments.mean(theta)

    if m == 0 or b <= 0.0 or slope(0.0) <= 0.0:
        mode = 0.0
    else:
        high = 1.0
        while slope(high) > 0.0:
            high *= 2.0
        mode = optimize.brentq(slope, 0.0, high, xtol=1e-300, rtol=4 * _EPS)
    top = log_density(mode)

    def one_nat(sign):
        """Where the log-density has fallen by a nat on this side of the mode,
        or None on the left if it does not fall that far before 0."""
        if sign < 0 and (mode == 0.0 or log_density(0.0) - top > -1.0):
            return None

        def fall(distance):
            return log_density(mode + sign * distance) - top + 1.0

        far = mode if sign < 0 else 1.0 / a
        while sign > 0 and fall(far) > 0.0:
            far *= 2.0
        near = far / 2.0
        while near > 0.0 and fall(near) <= 0.0:
            near /= 2.0
        return optimize.brentq(fall, near, far, rtol=1e-6)

    # With b near its cap (1e12) the log-density's terms cancel to about 1e-4
    # nats, noise that quad reports as roundoff while the integral stays
    # right to that (tested against the compiled normaliser).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", integrate.IntegrationWarning)
        total = sum(
            _side_integral(log_density, top, mode, one_nat(sign), sign)
            for sign in (-1.0, 1.0)
        )
    return top + np.log(total)


def _side_integral(log_density, top, mode, distance, sign):
    """The integral of exp(log_density - top) on one side of the mode, in units
    of ``distance``, where the log-density has fallen by a nat (None: the left
    side does not fall that far before 0)."""
    if distance is None:
        return integrate.quad(
            lambda theta: np.exp(log_density(theta) - top), 0.0, mode
        )[0]
    end = _NORMALISER_UNITS if sign > 0 else min(_NORMALISER_UNITS, mode / distance)
    integral, _ = integrate.quad(
        lambda t: np.exp(log_density(mode + sign * t * distance) - top),
        0.0,
        end,
        points=[t for t in (1.0, 5.0, 20.0) if t < end],
        limit=200,
    )
    return distance * integral


# How far each side of log_theta_normaliser's integral reaches, in units of
# the distance at which the density has fallen by a nat.
_NORMALISER_UNITS = 50.0
_EPS = np.finfo(np.float64).eps


class _CodeMoments:
    """E k for k in {0, ..., m} with P(k) proportional to exp(-k theta), theta
    >= 0: 1 / expm1(theta) - (m + 1) / expm1((m + 1) theta), or where (m + 1)
    theta < 0.01, whose two terms nearly cancel, a direct sum (as the compiled
    ``code_moments``; the sum alone cost 26 ms a call at m = 16,383)."""

    def __init__(self, m):
        self.m1 = m + 1.0
        self.k = np.arange(m + 1, dtype=np.float64)

    def mean(self, theta):
        if theta == 0.0:
            return (self.m1 - 1.0) / 2.0
        if self.m1 * theta >= 0.01:
            with np.errstate(over="ignore"):  # (m + 1) / inf = 0, as it should
                return 1.0 / np.expm1(theta) - self.m1 / np.expm1(self.m1 * theta)
        weights = np.exp(-theta * self.k)
        return float(weights @ self.k / weights.sum())
