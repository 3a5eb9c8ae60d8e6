"""DPMultinomialClustering and its Dirichlet-multinomial family.

The family's predictive and marginal are checked against plain SciPy formulas and
normalisation, and every sampler against the posterior over clusterings
enumerated with the family-agnostic helpers of ``_gaussian_reference``.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse, stats
from scipy.special import gammaln, logsumexp
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPMultinomialClustering
from rankmix import _multinomial as multinomial_module
from rankmix._multinomial_kernels import DirichletMultinomial

from . import _dp_reference as dpref
from . import _gaussian_reference as gref

# Tiny exactness problem: 5 documents over 3 words.
TINY = np.array([[3, 0, 1], [2, 1, 0], [0, 1, 3], [0, 2, 2], [1, 1, 1]])
PRIORS = [np.full(3, 0.5), np.array([0.5, 1.0, 0.3])]


def dm_log_marginal(X, a):
    """log m of the rows X as one cluster: Dirichlet-multinomial, direct formula."""
    X = np.atleast_2d(X)
    if len(X) == 0:
        return 0.0
    c, A = X.sum(axis=0), a.sum()
    coefs = gammaln(X.sum(axis=1) + 1.0) - gammaln(X + 1.0).sum(axis=1)
    return float(
        gammaln(A)
        - gammaln(A + c.sum())
        + (gammaln(a + c) - gammaln(a)).sum()
        + coefs.sum()
    )


def dm_log_predictive(x, members, a):
    """log p(x | members) by integrating p ~ Dirichlet(a + c) numerically (MC-free):
    the Dirichlet-multinomial pmf E[Multinomial(x | |x|, p)] in closed form."""
    c = np.asarray(members).sum(axis=0) if len(members) else np.zeros_like(a)
    b = a + c
    n = x.sum()
    return float(
        gammaln(n + 1.0)
        - gammaln(x + 1.0).sum()
        + gammaln(b.sum())
        - gammaln(b.sum() + n)
        + (gammaln(b + x) - gammaln(b)).sum()
    )


def compositions(total, V):
    """Every count vector of V features summing to ``total``."""
    for cuts in itertools.combinations(range(total + V - 1), V - 1):
        edges = (-1, *cuts, total + V - 1)
        yield np.array([edges[k + 1] - edges[k] - 1 for k in range(V)])


def model_for(X, a):
    return DirichletMultinomial(a, X.sum(axis=0), int(X.sum()))


# -- the family ----------------------------------------------------------------------


def test_merged_state_from_moments_is_the_union_rebuilt():
    # a merge proposal's state: the two states' sums read off them, added and
    # made a state again (the cached log-gammas from the counts), against the
    # state rebuilt from the union
    rng = np.random.default_rng(3)
    X = rng.poisson(1.5, size=(30, 6))
    family = model_for(X, np.full(6, 0.7)).family(sparse.csr_matrix(X))
    for a, b in (([0], [1]), ([0, 1, 2], [5, 7]),
                 (list(range(0, 30, 2)), list(range(1, 30, 2)))):
        merged, rebuilt = family._merged_state_check(a, b)
        assert merged[0] == rebuilt[0] == len(a) + len(b)
        assert_allclose(merged, rebuilt, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("a", PRIORS)
def test_log_marginal_matches_the_direct_formula(a):
    model = model_for(TINY, a)
    for n in range(1, 6):
        for rows in itertools.combinations(range(5), n):
            X = TINY[list(rows)]
            assert_allclose(
                model.log_marginal(sparse.csr_matrix(X)),
                dm_log_marginal(X, a),
                rtol=1e-12,
                atol=1e-10,
            )


def test_direct_formula_is_the_multinomial_averaged_over_the_dirichlet():
    # the reference itself: E_p[Multinomial(x | n, p)], p ~ Dirichlet(b), by Monte Carlo
    rng = np.random.default_rng(0)
    b, x = np.array([0.7, 1.5, 0.4]), np.array([2, 1, 3])
    p = stats.dirichlet(b).rvs(200_000, random_state=rng)
    mc = stats.multinomial(x.sum(), p).pmf(x).mean()
    assert_allclose(np.exp(dm_log_predictive(x, [], b)), mc, rtol=0.02)


@pytest.mark.parametrize("a", PRIORS)
def test_log_predictive_matches_the_reference_dense_and_sparse(a):
    model = model_for(TINY, a)
    clusters = np.array([[0, 0, 0], TINY[:2].sum(axis=0), TINY[2:].sum(axis=0)])
    members = [TINY[:0], TINY[:2], TINY[2:]]
    expected = np.array([[dm_log_predictive(x, m, a) for m in members] for x in TINY])
    got = model.log_predictive(sparse.csr_matrix(clusters), sparse.csr_matrix(TINY))
    assert_allclose(got, expected, rtol=1e-12, atol=1e-10)
    # a row beyond the tables (new data): the kernels fall back to lgamma
    big = np.array([[40, 0, 7]])
    assert_allclose(
        model.log_predictive(sparse.csr_matrix(clusters), sparse.csr_matrix(big))[0],
        [dm_log_predictive(big[0], m, a) for m in members],
        rtol=1e-12,
    )
    # the estimator: dense and CSR input score alike
    fitted = DPMultinomialClustering(
        dirichlet_prior=a, n_iter=6, burn_in=2, n_chains=1, random_state=0
    ).fit(TINY)
    assert_array_equal(
        fitted.score_samples(TINY), fitted.score_samples(sparse.csr_matrix(TINY))
    )


@pytest.mark.parametrize("a", PRIORS)
@pytest.mark.parametrize("total", [0, 1, 4])
def test_predictive_sums_to_one_over_the_vectors_of_a_total(a, total):
    model = model_for(TINY, a)
    vectors = sparse.csr_matrix(np.array(list(compositions(total, 3))))
    clusters = sparse.csr_matrix(np.array([[0, 0, 0], [5, 1, 2]]))
    assert_allclose(np.exp(model.log_predictive(clusters, vectors)).sum(axis=0), 1.0)
    fitted = DPMultinomialClustering(
        dirichlet_prior=a, n_iter=20, burn_in=10, random_state=0
    ).fit(TINY)
    assert_allclose(np.exp(fitted.score_samples(vectors)).sum(), 1.0)
    assert_allclose(fitted.predict_proba(vectors).sum(axis=1), 1.0)


def test_an_all_zero_row_has_probability_one():
    model = model_for(TINY, PRIORS[1])
    clusters = sparse.csr_matrix(np.array([[0, 0, 0], [5, 1, 2]]))
    assert_array_equal(model.log_predictive(clusters, sparse.csr_matrix((1, 3))), 0.0)


@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (4, 9), (30, 400)])
def test_csr_entries_read_the_matrix_at_the_given_entries(shape):
    # the left-out predictive reads its clusters' counts at the rows' entries
    rng = np.random.default_rng(0)
    dense = rng.integers(0, 4, size=shape) * (rng.random(shape) < 0.3)
    rows = rng.integers(0, max(shape[0], 1), size=50 if shape[0] else 0)
    columns = rng.integers(0, shape[1], size=len(rows))
    matrix = sparse.csr_matrix(dense)
    expected = dense[rows, columns].astype(np.float64)
    entries = multinomial_module._csr_entries(matrix, rows, columns)
    assert_array_equal(entries, expected)
    # stored out of order within the rows
    bounds = zip(matrix.indptr[:-1], matrix.indptr[1:])
    order = np.concatenate([np.arange(0)] + [np.arange(a, b)[::-1] for a, b in bounds])
    unsorted = sparse.csr_matrix(
        (matrix.data[order], matrix.indices[order], matrix.indptr), shape=shape
    )
    unsorted.has_sorted_indices = False  # scipy would trust a cached True
    entries = multinomial_module._csr_entries(unsorted, rows, columns)
    assert_array_equal(entries, expected)
    # an entry stored twice counts twice, as SciPy reads it
    doubled = sparse.csr_matrix(([1.0, 2.0], [3, 3], [0, 2, 2]), shape=(2, 5))
    entries = multinomial_module._csr_entries(doubled, np.arange(2), np.full(2, 3))
    assert_array_equal(entries, [3.0, 0.0])


@pytest.mark.parametrize("n_clusters", [0, 1, 4])
def test_describe_gives_the_states_counts_as_canonical_csr(n_clusters):
    # a state is 5 summaries, then the V counts; clusters with no count and
    # features absent from every cluster included
    rng = np.random.default_rng(0)
    V = TINY.shape[1]
    counts = rng.integers(0, 4, size=(n_clusters, V))
    counts[rng.random((n_clusters, V)) < 0.6] = 0
    if n_clusters > 1:
        counts[1] = 0
    states = np.hstack([rng.random((n_clusters, 5)), counts.astype(np.float64)])
    family = model_for(TINY, PRIORS[1]).family(sparse.csr_matrix(TINY))
    (described,) = family.describe(states)
    assert sparse.isspmatrix_csr(described) and described.has_canonical_format
    assert described.shape == (n_clusters, V) and described.dtype == np.int64
    assert described.nnz == np.count_nonzero(counts)  # no explicit zero
    assert_array_equal(described.toarray(), counts)


# -- every sampler against the enumerated posterior ------------------------------------


def exact_posterior(X, a, alpha_prior=None):
    """{clustering: probability} by enumeration; with alpha ~ Gamma integrated out."""
    N = len(X)

    def log_marginal(rows):
        return dm_log_marginal(X[list(rows)], a)

    if alpha_prior is None:
        parts, logw = gref.partition_log_weights(N, log_marginal, 1.0)
    else:
        parts = gref.set_partitions(N)
        logw = np.array(
            [
                gref.log_alpha_integral(len(gref.blocks(c)), N, *alpha_prior)
                + sum(math.lgamma(len(b)) + log_marginal(b) for b in gref.blocks(c))
                for c in parts
            ]
        )
    weights = np.exp(logw - logsumexp(logw))
    return dict(zip(parts, weights))


SAMPLERS = [
    dict(sampler="gibbs"),
    dict(sampler="split-merge"),
    dict(sampler="gibbs+split-merge"),
    dict(sampler="permutation", permutation_dp="exact"),
    dict(sampler="permutation", permutation_dp="beta"),
    dict(sampler="gibbs+split-merge+permutation", alpha_prior=(2.0, 1.0)),
    dict(sampler="subcluster"),
    dict(sampler="subcluster", alpha_prior=(2.0, 1.0)),
]


@pytest.mark.parametrize(
    "params", SAMPLERS, ids=lambda p: "-".join(map(str, p.values()))
)
def test_samplers_match_the_exact_posterior(params):
    assert_matches_exact_posterior(params)


def assert_matches_exact_posterior(params):
    """A fit of TINY with ``params`` against the enumerated posterior."""
    a = PRIORS[1]
    posterior = exact_posterior(TINY, a, params.get("alpha_prior"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = DPMultinomialClustering(
            dirichlet_prior=a,
            n_split_merge=3,
            n_iter=15000,
            burn_in=200,
            thin=1,
            n_chains=1,
            init="random",
            init_clusters=2,
            random_state=0,
            **params,
        ).fit(TINY)
    cocluster, k_dist = dpref.draw_statistics(model.label_samples_)
    assert_allclose(cocluster, gref.coclustering_matrix(posterior), atol=0.05)
    assert_allclose(k_dist, gref.n_clusters_distribution(posterior), atol=0.05)


def test_log_joint_is_the_crp_prior_times_the_marginals():
    a = PRIORS[0]
    model = DPMultinomialClustering(
        dirichlet_prior=a, n_iter=3, burn_in=1, thin=1, n_chains=1, random_state=0
    ).fit(TINY)
    labels = model.label_samples_[-1]
    blocks = gref.blocks(tuple(labels))
    expected = gref.crp_log_prior(tuple(labels), 1.0) + sum(
        dm_log_marginal(TINY[list(b)], a) for b in blocks
    )
    assert_allclose(model.trace_["log_joint"][0, -1], expected, rtol=1e-10)


# -- the estimator -------------------------------------------------------------------


def documents(seed=0, n=60, V=30):
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(V, 0.2), size=3)
    y = rng.integers(3, size=n)
    X = np.array([rng.multinomial(rng.integers(20, 60), topics[k]) for k in y])
    return X, y


@pytest.mark.parametrize("sampler", ["gibbs+split-merge", "gibbs+permutation"])
def test_sparse_and_dense_give_identical_draws(sampler):
    X, _ = documents()
    params = dict(sampler=sampler, n_iter=12, burn_in=4, random_state=0)
    dense = DPMultinomialClustering(**params).fit(X)
    csr = DPMultinomialClustering(**params).fit(sparse.csr_matrix(X))
    assert_array_equal(dense.label_samples_, csr.label_samples_)
    assert_array_equal(dense.trace_["log_joint"], csr.trace_["log_joint"])
    assert_array_equal(dense.feature_probs_, csr.feature_probs_)
    assert_array_equal(dense.score_samples(X), csr.score_samples(sparse.csr_matrix(X)))


@pytest.mark.parametrize("sample", [30, 4096])
def test_subcluster_start_from_a_sample_sparse_and_dense(sample, monkeypatch):
    # the sequential start on a sample of the documents (or all of them) reads
    # sparse rows as sparse, and gives the same draws as dense rows
    from rankmix import _subcluster_chain

    monkeypatch.setattr(_subcluster_chain, "SEQUENTIAL_SAMPLE", sample)
    X, y = documents(n=120)
    params = dict(sampler="subcluster", n_iter=8, burn_in=4, random_state=0)
    dense = DPMultinomialClustering(**params).fit(X)
    csr = DPMultinomialClustering(**params).fit(sparse.csr_matrix(X))
    assert_array_equal(dense.label_samples_, csr.label_samples_)
    assert_array_equal(dense.trace_["log_joint"], csr.trace_["log_joint"])


def test_fit_finds_the_topics_and_keeps_sparse_draws():
    from sklearn.metrics import adjusted_rand_score

    X, y = documents()
    model = DPMultinomialClustering(n_iter=30, burn_in=10, random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.9
    assert model.feature_probs_.shape == (model.n_clusters_, X.shape[1])
    assert_allclose(model.feature_probs_.sum(axis=1), 1.0)
    assert_allclose(model.weights_.sum(), 1.0)
    for draw in model._draws:
        assert sparse.issparse(draw[0]) and draw[0].nnz <= np.count_nonzero(X)
    assert_array_equal(model.predict(X), model.predict(sparse.csr_matrix(X)))
    samples, labels = model.sample(50, random_state=0)
    assert samples.shape == (50, X.shape[1]) and samples.min() >= 0
    assert set(samples.sum(axis=1)) <= set(X.sum(axis=1))
    assert labels.shape == (50,)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("sampler", ["gibbs+split-merge", "subcluster"])
def test_draws_keep_few_counts_and_rebuild_the_others_exactly(monkeypatch, sampler):
    # 20 of the 60 kept draws keep their K x V counts, 10 evenly spaced in each
    # chain, and the predictive averages over those; every other draw's counts
    # are summed again from the training rows by its labels, equal to the
    # chain's. Weighted rows (copies, rows of weight 0) and explicit zeros too.
    X, _ = documents(n=40)
    X = sparse.csr_matrix(X)
    X.data[::5] = 0  # explicit zeros, which the clusters' counts do not store
    weights = np.arange(X.shape[0]) % 3
    params = dict(sampler=sampler, n_iter=40, burn_in=10, thin=1, random_state=0)
    trimmed = DPMultinomialClustering(**params).fit(X, sample_weight=weights)
    with monkeypatch.context() as patch:
        patch.setattr(multinomial_module, "PREDICTIVE_DRAWS", 10**9)
        untrimmed = DPMultinomialClustering(**params).fit(X, sample_weight=weights)
    assert_array_equal(trimmed.label_samples_, untrimmed.label_samples_)
    per_chain = [0, 3, 6, 10, 13, 16, 19, 23, 26, 29]  # 10 of 30, ends included
    whole = trimmed._predictive_draws()
    assert whole == per_chain + [30 + d for d in per_chain]
    assert len(untrimmed._predictive_draws()) == 60
    for d, draw in enumerate(trimmed._draws):
        assert (draw[0] is not None) == (d in whole)
        rebuilt, chains = trimmed._whole_draw(d), untrimmed._draws[d]
        assert_array_equal(rebuilt[0].toarray(), chains[0].toarray())
        assert rebuilt[0].nnz == chains[0].nnz
        assert rebuilt[1:-1] == chains[1:-1]
        assert_array_equal(rebuilt[-1], chains[-1])
    assert_array_equal(trimmed.feature_probs_, untrimmed.feature_probs_)
    new = X[::3].toarray() + 1
    per_draw = untrimmed._log_predictive_per_draw(untrimmed._check_new_data(new))
    assert_allclose(
        trimmed.score_samples(new),
        logsumexp(per_draw[whole], axis=0) - np.log(len(whole)),
        rtol=1e-12,
    )


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[1, 2], [-1, 0]]), "row 1, column 0"),
        (np.array([[1.0, 2.5], [1, 0]]), "row 0, column 1"),
        (sparse.csr_matrix(np.array([[1, 0], [0, 0.5]])), "row 1, column 1"),
        (sparse.csr_matrix(np.array([[1, 0], [-2, 0]])), "row 1, column 0"),
        (np.array([[1.0, np.nan]]), "NaN"),
        (np.array([[1.0, np.inf]]), "infinity"),
        (np.array([1, 2, 3]), "2D array"),
        ([["1", "a"], ["2", "3"]], "X holds a value that is not a number .* counts"),
    ],
)
def test_bad_input_is_refused(X, match):
    with pytest.raises(ValueError, match=match):
        DPMultinomialClustering(n_iter=3, burn_in=1).fit(X)


def test_bad_input_at_predict_time_is_refused():
    model = DPMultinomialClustering(n_iter=3, burn_in=1, n_chains=1).fit(TINY)
    with pytest.raises(ValueError, match="features"):
        model.predict(np.ones((2, 4), dtype=int))
    with pytest.raises(ValueError, match="row 1, column 2"):
        model.score_samples(np.array([[1, 1, 1], [0, 0, -3]]))
    with pytest.raises(ValueError, match="dirichlet_prior"):
        DPMultinomialClustering(dirichlet_prior=[1.0, 2.0]).fit(TINY)


def test_boolean_input_counts_as_zero_one():
    X = TINY > 0
    params = dict(n_iter=6, burn_in=2, random_state=0)
    assert_array_equal(
        DPMultinomialClustering(**params).fit(X).label_samples_,
        DPMultinomialClustering(**params).fit(X.astype(int)).label_samples_,
    )


def test_input_is_not_modified():
    X = sparse.csr_matrix(np.array([[1, 0, 2], [0, 3, 0]]))
    X.indices = X.indices[::-1].copy()  # a non-canonical matrix
    before = (X.data.copy(), X.indices.copy())
    DPMultinomialClustering(n_iter=3, burn_in=1).fit(X)
    assert_array_equal(X.data, before[0])
    assert_array_equal(X.indices, before[1])
