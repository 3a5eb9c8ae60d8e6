# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPGaussianClustering: kernels, exactness against enumeration, normalisation, API."""

import pickle
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate, stats
from scipy.special import gammaln, logsumexp
from sklearn.datasets import make_blobs
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits

from rankmix import DPGaussianClustering
from rankmix import _gaussian as gaussian_module
from rankmix._collapsed_chain import CollapsedChain
from rankmix._engine import whole_draw_indices
from rankmix._gaussian_kernels import (
    NIWModel,
    _chol_update_wrapper,
    _cholesky_wrapper,
    _log_product_wrapper,
    _lower_rows_wrapper,
    _scaled_squares_wrapper,
    _simd_loops_wrapper,
    student_t_log_density,
)

from . import _dp_reference as dpref
from . import _gaussian_reference as gref
from ._threads import thread_counts


def random_spd(rng, d):
    A = rng.normal(size=(d, d))
    return A @ A.T + d * np.eye(d)


def prior_args(covariance_type, d):
    """A proper prior (m0, kappa0, nu0, psi0) for the tiny exactness problems."""
    m0 = np.full(d, 0.5)
    psi0 = 0.5 * np.eye(d) if covariance_type == "full" else np.full(d, 0.5)
    return m0, 0.8, d + 1.5, psi0


# Six points in two loose groups and a straggler, so the posterior spreads over
# many clusterings (the number of clusters ranges over 1..5).
TINY_X2 = np.array(
    [[0.0, 0.1], [0.3, -0.2], [2.0, 2.1], [2.4, 1.8], [1.0, 1.2], [-0.5, 2.0]]
)
TINY_X1 = TINY_X2[:, :1] + TINY_X2[:, 1:]


# -- kernels ---------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 5, 40])
def test_cholesky_update_and_downdate_match_numpy(d):
    rng = np.random.default_rng(d)
    A = random_spd(rng, d)
    L = np.linalg.cholesky(A)
    v = rng.normal(size=d)
    assert_allclose(
        _chol_update_wrapper(L, v), np.linalg.cholesky(A + np.outer(v, v)), atol=1e-12
    )
    w = (
        0.5 * v / np.sqrt(v @ np.linalg.solve(A, v))
    )  # keeps A - w w^T positive definite
    assert_allclose(
        _chol_update_wrapper(L, w, downdate=True),
        np.linalg.cholesky(A - np.outer(w, w)),
        atol=1e-12,
    )
    assert_allclose(_cholesky_wrapper(A), L, atol=1e-12)


def _linpack_rank_one(L, v, down):
    """LINPACK's dchud (dchdd if down), one column at a time, in NumPy."""
    L, v = np.array(L, dtype=np.float64), np.array(v, dtype=np.float64)
    for k in range(len(v)):
        lkk = L[k, k]
        r2 = (lkk - v[k]) * (lkk + v[k]) if down else lkk * lkk + v[k] * v[k]
        r = np.sqrt(r2)
        c, s = r / lkk, v[k] / lkk
        L[k, k] = r
        L[k + 1 :, k] = (L[k + 1 :, k] + (-s if down else s) * v[k + 1 :]) / c
        v[k + 1 :] = c * v[k + 1 :] - s * L[k + 1 :, k]
    return L


@pytest.mark.parametrize("d", [1, 3, 4, 6, 9, 40, 41])
def test_cholesky_rank_one_is_linpacks_to_the_bit(d):
    # the rotations run through rankmix/_simd's loops (cloned, inline below 8
    # entries): every entry must see LINPACK's operations, in the same order
    rng = np.random.default_rng(d)
    A = random_spd(rng, d)
    L = np.linalg.cholesky(A)
    v = rng.normal(size=d)
    assert_array_equal(_chol_update_wrapper(L, v), _linpack_rank_one(L, v, False))
    w = 0.5 * v / np.sqrt(v @ np.linalg.solve(A, v))
    assert_array_equal(
        _chol_update_wrapper(L, w, downdate=True), _linpack_rank_one(L, w, True)
    )


@pytest.mark.parametrize("n", [1, 3, 4, 7, 64, 81])
def test_simd_loops_round_as_numpys_separate_multiplies_and_adds(n):
    # the innermost loops of the Gaussian kernels (rankmix/_simd.pxd),
    # compiled for AVX2 and for the baseline, must round each product and each
    # sum apart, in the written order, as NumPy does: a fused multiply-add, or
    # sums reordered across vector lanes, would make the draws depend on the
    # machine
    rng = np.random.default_rng(n)
    z, x, m = rng.normal(size=(3, n))
    rows, ys = rng.normal(size=(4, n)), rng.normal(size=4)
    c, s = 1.3, 0.4
    z4, z1, zd, col, v = _simd_loops_wrapper(z, rows, ys, x, m, c, -s, s)
    expected = z.copy()
    for r, y in zip(rows, ys):
        expected = expected + r * y
    assert_array_equal(z4, expected)
    assert_array_equal(z1, z + rows[0] * ys[0])
    assert_array_equal(zd, z + ys[0] * (x - m))
    expected_col = (z + (-s) * x) / c
    assert_array_equal(col, expected_col)
    assert_array_equal(v, c * x - s * expected_col)
    d = min(n, 12)
    C, Y = rng.normal(size=(d, d)), rng.normal(size=(d, min(n, 16)))
    expected = np.zeros_like(Y)
    for j in range(d):
        for k in range(j + 1):
            expected[k] = expected[k] + C[j, k] * Y[j]
    assert_array_equal(_lower_rows_wrapper(C, Y), expected)
    # the diagonal likelihood's sum of squares: four running sums (j mod 4),
    # then (q0 + q1) + (q2 + q3)
    for scale in (rows[1], None):
        y = (x - m) if scale is None else (x - m) * scale
        sums = [0.0, 0.0, 0.0, 0.0]
        for j in range(n):
            lane = j % 4 if j < n - n % 4 else 0
            sums[lane] = sums[lane] + y[j] * y[j]
        expected = (sums[0] + sums[1]) + (sums[2] + sums[3])
        assert _scaled_squares_wrapper(x, m, scale) == expected


def test_log_product_is_the_sum_of_logs_without_overflow():
    # the log-determinant of every refresh: mantissas multiplied, exponents summed
    rng = np.random.default_rng(0)
    for values in (
        rng.uniform(0.1, 10.0, size=7),
        np.exp(rng.normal(0.0, 300.0, size=200)),  # products far beyond 1e308
        np.array([1e300, 1e300, 1e-300, 5e-324, 2.2e-308, 1.0]),  # subnormals
        np.array([0.75]),
    ):
        assert_allclose(_log_product_wrapper(values), np.log(values).sum(), rtol=1e-13)
    # what overflowed upstream still shows: inf and NaN propagate as with log
    assert _log_product_wrapper([2.0, np.inf]) == np.inf
    assert np.isnan(_log_product_wrapper([2.0, np.nan]))
    assert np.isnan(_log_product_wrapper([2.0, -1.0]))
    # strided: the diagonal of a column-major matrix
    L = np.tril(rng.uniform(0.5, 2.0, size=(5, 5)))
    assert_allclose(
        _log_product_wrapper(L.T.ravel(), stride=6), np.log(np.diag(L)).sum()
    )


def test_cholesky_downdate_reports_loss_of_definiteness():
    L = np.linalg.cholesky(np.eye(2))
    assert _chol_update_wrapper(L, [2.0, 0.0], downdate=True) is None
    assert _cholesky_wrapper(np.array([[1.0, 2.0], [2.0, 1.0]])) is None


def fitted_state(model, X):
    state = model.empty_state()
    for x in X:
        model.add(state, x)
    return state


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_predictive_is_the_student_t_of_scipy(covariance_type):
    rng = np.random.default_rng(0)
    d = 3
    full = covariance_type == "full"
    m0, kappa0, nu0 = rng.normal(size=d), 0.7, d + 0.5
    psi0 = random_spd(rng, d) if full else rng.uniform(0.5, 2.0, size=d)
    model = NIWModel(m0, kappa0, nu0, psi0, full, 20)
    X = 3 * rng.normal(size=(7, d))
    state = fitted_state(model, X)
    x = rng.normal(size=(5, d))
    n, mean, psi = model.unpack(state)
    kn, nun = kappa0 + n, nu0 + n
    if full:
        df = nun - d + 1
        expected = stats.multivariate_t(mean, psi * (kn + 1) / (kn * df), df=df).logpdf(
            x
        )
    else:
        scale = np.sqrt(psi * (kn + 1) / (kn * nun))
        expected = stats.t(df=nun, loc=mean, scale=scale).logpdf(x).sum(axis=1)
    assert_allclose(model.log_predictive(state, x), expected, rtol=1e-10)
    # the prior predictive (n = 0) too
    assert_allclose(
        model.log_predictive(model.empty_state(), x),
        gref.log_prior_predictive(x, covariance_type, m0, kappa0, nu0, psi0),
        rtol=1e-10,
    )


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_log_marginal_matches_the_closed_form(covariance_type):
    rng = np.random.default_rng(1)
    d = 3
    full = covariance_type == "full"
    m0, kappa0, nu0 = rng.normal(size=d), 1.3, d + 1.0
    psi0 = random_spd(rng, d) if full else rng.uniform(0.5, 2.0, size=d)
    model = NIWModel(m0, kappa0, nu0, psi0, full, 20)
    X = 2 * rng.normal(size=(9, d)) + 5
    for n in [0, 1, 4, 9]:
        state = fitted_state(model, X[:n])
        expected = gref.log_marginal(X[:n], covariance_type, m0, kappa0, nu0, psi0)
        assert_allclose(model.log_marginal(state), expected, rtol=1e-10, atol=1e-10)
    # the predictive is the ratio of marginals (what the samplers rely on)
    state = fitted_state(model, X[:8])
    assert_allclose(
        model.log_predictive(state, X[8:]),
        model.log_marginal(fitted_state(model, X)) - model.log_marginal(state),
        rtol=1e-10,
    )


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_removing_points_undoes_adding_them(covariance_type):
    rng = np.random.default_rng(2)
    d = 4
    full = covariance_type == "full"
    psi0 = random_spd(rng, d) if full else np.ones(d)
    model = NIWModel(np.zeros(d), 0.5, d + 2.0, psi0, full, 50)
    X = 100 + 10 * rng.normal(size=(30, d))  # unscaled data: an offset and a scale
    state = fitted_state(model, X)
    for x in X[:20]:
        assert model.remove(state, x) == 0
    rebuilt = model.empty_state()
    assert model.rebuild(rebuilt, X[20:]) == 0
    assert_allclose(state, rebuilt, rtol=1e-9, atol=1e-9)
    assert_allclose(fitted_state(model, X[20:]), rebuilt, rtol=1e-10, atol=1e-10)


def test_gibbs_weights_are_size_times_predictive():
    # the compiled chain's assignment weights are n_k p(x | C_k) and alpha p(x)
    m0, kappa0, nu0, psi0 = prior_args("full", 2)
    model = NIWModel(m0, kappa0, nu0, psi0, True, len(TINY_X2))
    chain = CollapsedChain(
        model.family(TINY_X2), 0.7, True, 0, None, 2, np.random.PCG64(3)
    )
    chain.sweep(3)
    labels = chain.snapshot()[0]
    for i in range(len(TINY_X2)):
        weights, new = chain.assignment_log_weights(i)
        for k in range(labels.max() + 1):
            others = np.flatnonzero((labels == k) & (np.arange(len(labels)) != i))
            if len(others) == 0:
                assert weights[k] == -np.inf
                continue
            expected = np.log(len(others)) + gref.log_posterior_predictive(
                TINY_X2[i], TINY_X2[others], "full", m0, kappa0, nu0, psi0
            )
            assert_allclose(weights[k], expected, rtol=1e-10)
        expected_new = np.log(0.7) + gref.log_prior_predictive(
            TINY_X2[i], "full", m0, kappa0, nu0, psi0
        )
        assert_allclose(new, expected_new, rtol=1e-10)


@pytest.mark.parametrize("d", [1, 3, 6, 40])
def test_own_weight_is_the_weight_after_removing_the_point(d):
    # own_log_weight: a member's Gibbs weight for its own cluster computed from
    # the state with it (determinant lemma and Sherman-Morrison), against the
    # weight from the state that remove leaves and from the state rebuilt without
    # it, for clusters of 2, 3 and 30 points of unscaled data; the Gibbs scan
    # weighs with it and removes a point only if it moves
    # (full covariances, and diagonal ones feature by feature)
    rng = np.random.default_rng(d)
    X = 5.0 + 2.0 * rng.normal(size=(60, d))
    full = NIWModel(np.zeros(d), 0.5, d + 2.0, random_spd(rng, d), True, 80)
    diag = NIWModel(np.zeros(d), 0.5, 3.0, rng.uniform(0.5, 2.0, size=d), False, 80)
    for family in (full.family(X), diag.family(X)):
        for members in ([0, 1], [3, 9, 20], list(range(0, 60, 2))):
            own, removed, rebuilt = family._own_weight_check(members)
            assert np.all(np.isfinite(own))
            assert_allclose(own, rebuilt, rtol=1e-12, atol=1e-11)
            assert_allclose(removed, rebuilt, rtol=1e-12, atol=1e-11)
    # a pair under a prior of almost no mass (kappa and psi 1e-12): |Psi_1| /
    # |Psi_2| = 1 - c a is about 1e-12, lost to cancellation, so NaN, and the scan
    # removes the point instead
    tiny = NIWModel(np.zeros(d), 1e-12, d + 1.0, 1e-12 * np.eye(d), True, 80)
    own, removed, rebuilt = tiny.family(X)._own_weight_check([0, 1])
    assert np.all(np.isnan(own)) and np.all(np.isfinite(rebuilt))


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
@pytest.mark.parametrize("d", [1, 3, 4, 7, 16, 41])
def test_kernels_of_consecutive_points_are_theirs_one_by_one(covariance_type, d):
    # log_kernel_rows: the Student-t kernels of up to 16 consecutive points at
    # once, the rows innermost, each to the last bit what log_kernel gives it
    # alone (full, d = 1 to 41: whole groups of four columns and tails of one to
    # three; blocks of 16 rows, of 1 and of 5)
    rng = np.random.default_rng(d)
    X = 5.0 + 2.0 * rng.normal(size=(40, d))
    full = covariance_type == "full"
    family = NIWModel(np.zeros(d), 0.5, d + 2.0, random_spd(rng, d) if full
                      else rng.uniform(0.5, 2.0, size=d), full, 80).family(X)
    for first, m in ((0, 16), (17, 1), (30, 5), (24, 16)):
        by_rows, one_by_one = family._kernel_rows_check(range(0, 40, 3), first, m)
        assert np.all(np.isfinite(one_by_one)) and (m == 1 or np.ptp(one_by_one) > 0)
        assert_array_equal(by_rows, one_by_one)


def twin_chains(X, covariance_type, n_split_merge, init_clusters, seed, switch,
                values, alpha=1.0):
    """Collapsed chains on X (unit prior scale, d + 2 degrees of freedom), one
    for each value of the test attribute ``switch``, from the same seed."""
    d = X.shape[1]
    full = covariance_type == "full"
    model = NIWModel(np.zeros(d), 0.5, d + 2.0, np.eye(d) if full else np.ones(d),
                     full, len(X))
    chains = []
    for value in values:
        chain = CollapsedChain(model.family(X), alpha, True, n_split_merge, None,
                               init_clusters, np.random.PCG64(seed))
        setattr(chain, switch, value)
        chains.append(chain)
    return chains


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_gibbs_scan_by_blocks_grows_its_slots_within_a_block(covariance_type):
    # from one cluster (16 slots) with alpha = 200, the first scan opens new
    # clusters point after point, so the slots (states, kernel table, dirty
    # flags) grow in the middle of a block: the draws are still the
    # point-by-point scan's
    rng = np.random.default_rng(8)
    X = rng.normal(size=(150, 3))
    chains = twin_chains(X, covariance_type, 0, 1, 4, "_kernel_blocks",
                         (True, False), alpha=200.0)
    for chain in chains:
        chain.sweep(1)
    by_blocks, by_points = (chain.snapshot()[0] for chain in chains)
    assert len(np.unique(by_blocks)) > 32
    assert_array_equal(by_blocks, by_points)
    assert chains[0].log_joint == chains[1].log_joint


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_gibbs_scan_by_blocks_draws_what_it_draws_point_by_point(covariance_type):
    # the Gibbs scan weighs points in blocks where the family has log_kernel_rows,
    # refreshing a cluster's kernels whenever a point moves into or out of it:
    # from a random start of 20 clusters, where many points move and clusters
    # open and close, the chain draws what the point-by-point scan draws, to the
    # bit, sweep by sweep
    rng = np.random.default_rng(7)
    X = np.concatenate([rng.normal(size=(70, 5)) + 4.0 * c for c in range(3)])[:203]
    chains = twin_chains(X, covariance_type, 0, 20, 11, "_kernel_blocks",
                         (True, False))
    moved = 0
    for _ in range(6):
        before = chains[0].snapshot()[0]
        for chain in chains:
            chain.sweep(1)
        by_blocks, by_points = (chain.snapshot()[0] for chain in chains)
        assert_array_equal(by_blocks, by_points)
        assert chains[0].log_joint == chains[1].log_joint
        moved += np.sum(by_blocks != before)
    assert moved > 50


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
@pytest.mark.parametrize("d", [1, 3, 40])
def test_merged_state_from_moments_is_the_union_rebuilt(covariance_type, d):
    # a merge proposal's state: the two states' moments read off them
    # (state_moments), merged and made a state again, against the state rebuilt
    # from the union, for pairs of 1 and 1, 3 and 2, 30 and 30 points of data
    # far from the prior mean (its rank-one term dominates Psi_n, the worst case
    # for reading the scatter back)
    rng = np.random.default_rng(d)
    X = 100.0 + 10.0 * rng.normal(size=(60, d))
    full = covariance_type == "full"
    psi0 = random_spd(rng, d)
    family = NIWModel(rng.normal(size=d), 0.5, d + 2.0,
                      psi0 if full else np.diag(psi0), full, 80).family(X)
    scale = slice(4 + d, 4 + d + d * d if full else 4 + 2 * d)
    for a, b in (([0], [1]), ([0, 1, 2], [5, 7]),
                 (list(range(0, 60, 2)), list(range(1, 60, 2)))):
        merged, rebuilt = family._merged_state_check(a, b)
        assert merged[0] == rebuilt[0] == len(a) + len(b)
        # log |Psi_n|, the predictive constant, the location, the factor
        assert_allclose(merged[1:3], rebuilt[1:3], rtol=1e-13, atol=1e-12)
        assert_allclose(merged[4:4 + d], rebuilt[4:4 + d], rtol=1e-13)
        assert_allclose(merged[scale], rebuilt[scale], rtol=0,
                        atol=1e-13 * np.abs(rebuilt[scale]).max())


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_rebuilding_only_the_changed_states_draws_the_same(covariance_type):
    # after each Gibbs scan the chain rebuilds the states that changed since
    # their last rebuild (a point in or out, a split or merge accepted), not all
    # of them: a state left alone is its rebuild's to the bit. From a random
    # start with split-merge moves, against a chain that rebuilds every state,
    # sweep by sweep: the same labels, log joint and cluster parameters
    rng = np.random.default_rng(5)
    X = np.concatenate([rng.normal(size=(60, 4)) + 5.0 * c for c in range(4)])
    chains = twin_chains(X, covariance_type, 5, 12, 3, "_rebuild_every",
                         (False, True))
    for _ in range(30):
        for chain in chains:
            chain.sweep(1)
        changed, every = (chain.snapshot() for chain in chains)
        assert_array_equal(changed[0], every[0])
        for ours, theirs in zip(changed[1:3], every[1:3]):
            assert_array_equal(ours, theirs)
        assert chains[0].log_joint == chains[1].log_joint
    counts = chains[0].split_merge_counts
    assert counts["split_accepted"] > 0 and counts["merge_accepted"] > 0


# -- the NIW family in the sampler core ----------------------------------------


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_chains_sharing_one_family_object_do_not_share_scratch(covariance_type):
    # each chain runs on its own copy of the family (the callbacks write scratch):
    # two chains built from one family object and swept at once in two threads
    # draw exactly what chains built from their own families draw one by one
    X = np.ascontiguousarray(make_blobs(400, n_features=3, random_state=1)[0])
    prior = prior_args(covariance_type, 3)
    model = NIWModel(*prior, covariance_type == "full", len(X))
    shared = model.family(X)

    def chain(family, seed):
        return CollapsedChain(
            family,
            1.0,
            True,
            3,
            (1.0, 1.0),
            4,
            np.random.PCG64(seed),
            permutation="beta",
            burn_in=2,
        )

    pair = [chain(shared, 0), chain(shared, 1)]
    alone = [chain(model.family(X), 0), chain(model.family(X), 1)]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda c: c.sweep(20), pair))
    for c in alone:
        c.sweep(20)
    for a, b in zip(pair, alone):
        assert_array_equal(a.snapshot()[0], b.snapshot()[0])
        assert a.log_joint == b.log_joint


def test_failed_rebuild_raises_the_familys_message():
    # the core raises FloatingPointError with the text the family supplies: here the
    # scatter of a cluster overflows, so its Cholesky factorisation fails
    X = np.array([[0.0, 0.0], [1e160, -1e160], [1.0, 2.0]])
    model = NIWModel(np.zeros(2), 1.0, 4.0, np.eye(2), True, len(X))
    with pytest.raises(FloatingPointError, match="not numerically positive definite"):
        CollapsedChain(model.family(X), 1.0, True, 0, None, 1, np.random.PCG64(0))


def test_family_pickles_and_describes_the_prior():
    # the chain factory pickles (joblib's process backends); describe() of the
    # empty state is the prior predictive
    m0, kappa0, nu0, psi0 = prior_args("full", 2)
    model = NIWModel(m0, kappa0, nu0, psi0, True, len(TINY_X2))
    family = pickle.loads(pickle.dumps(model.family(TINY_X2)))
    assert family.n_points == len(TINY_X2)
    assert_array_equal(family.model.empty_state(), model.empty_state())
    means, _, factors, dfs = family.describe(model.empty_state()[None])
    assert_allclose(means[0], m0)
    assert dfs[0] == nu0 - 2 + 1
    with pytest.raises(ValueError, match="does not match"):
        model.family(np.zeros((len(TINY_X2) + 1, 2)))


# -- exactness ----------------------------------------------------------------------


EXACT_CASES = [
    # (data, covariance_type)
    (TINY_X1, "full"),
    (TINY_X2, "full"),
    (TINY_X2, "diag"),
]


def fit_tiny(X, covariance_type, sampler, **params):
    """A long single chain on a tiny exactness problem (prior of `prior_args`)."""
    m0, kappa0, nu0, psi0 = prior_args(covariance_type, X.shape[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return DPGaussianClustering(
            sampler=sampler,
            covariance_type=covariance_type,
            mean_prior=m0,
            kappa=kappa0,
            nu=nu0,
            covariance_prior=psi0,
            n_split_merge=3,
            n_iter=20000,
            burn_in=200,
            thin=1,
            n_chains=1,
            init_clusters=2,
            random_state=0,
            **params,
        ).fit(X)


def assert_matches_posterior(model, X, covariance_type):
    """The draws' co-clustering and number of clusters match the enumeration."""
    m0, kappa0, nu0, psi0 = prior_args(covariance_type, X.shape[1])
    posterior = gref.exact_partition_posterior(
        X, 1.0, covariance_type, m0, kappa0, nu0, psi0
    )
    cocluster, k_dist = dpref.draw_statistics(model.label_samples_)
    assert_allclose(cocluster, gref.coclustering_matrix(posterior), atol=0.03)
    assert_allclose(k_dist, gref.n_clusters_distribution(posterior), atol=0.03)


@pytest.mark.parametrize(
    "sampler", ["gibbs", "split-merge", "gibbs+split-merge", "subcluster"]
)
@pytest.mark.parametrize("X, covariance_type", EXACT_CASES)
def test_samplers_match_the_exact_posterior(X, covariance_type, sampler):
    # every move leaves the enumerated posterior over clusterings invariant
    model = fit_tiny(X, covariance_type, sampler)
    assert_matches_posterior(model, X, covariance_type)


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_sequential_start_has_the_sequential_prediction_law(covariance_type):
    X = TINY_X2[:4]
    prior = prior_args(covariance_type, 2)
    law = dpref.sequential_prediction_law(
        X,
        0.7,
        lambda x, rows: gref.log_posterior_predictive(x, rows, covariance_type, *prior),
    )
    model = NIWModel(*prior, covariance_type == "full", len(X))
    seeds = np.random.SeedSequence(5).spawn(4000)
    counts = {}
    for seed in seeds:
        chain = CollapsedChain(
            model.family(X),
            0.7,
            True,
            0,
            None,
            2,
            np.random.PCG64(seed),
            sequential_init=True,
        )
        key = dpref.canonical_labels(chain.snapshot()[0])
        counts[key] = counts.get(key, 0) + 1
    assert_allclose(sum(law.values()), 1.0)
    for key, probability in law.items():
        # binomial standard error <= 0.008 at 4000 draws
        assert abs(counts.get(key, 0) / len(seeds) - probability) < 0.03, key


def test_sequential_start_finds_clusters_in_high_dimension():
    # Liang et al.'s setting, scaled down: 20 clusters in 40 dimensions, means
    # ~ N(0, 2 I), unit covariances. A random start's clusters are blends of the
    # true ones, a mode that single-site Gibbs leaves only slowly; sequential
    # prediction starts next to the truth (measured over seeds 0-2 after 10
    # sweeps: ARI 1.0, against 0.85-0.90 from a random start)
    rng = np.random.default_rng(0)
    means = rng.normal(0.0, np.sqrt(2.0), size=(20, 40))
    y = rng.integers(20, size=2000)
    X = means[y] + rng.standard_normal((2000, 40))
    model = DPGaussianClustering(
        covariance_type="diag",
        sampler="gibbs",
        n_iter=10,
        burn_in=5,
        thin=1,
        n_chains=1,
        random_state=0,
    ).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.99


@pytest.mark.parametrize("sampler", ["gibbs+split-merge", "subcluster"])
def test_alpha_resampling_matches_the_exact_posterior(sampler):
    # with alpha ~ Gamma(2, 1) integrated out exactly, clusterings and E[alpha | X]
    m0, kappa0, nu0, psi0 = prior_args("full", 2)
    posterior, alpha_mean = gref.exact_joint_posterior_with_alpha(
        TINY_X2, 2.0, 1.0, "full", m0, kappa0, nu0, psi0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = DPGaussianClustering(
            alpha_prior=(2.0, 1.0),
            sampler=sampler,
            mean_prior=m0,
            kappa=kappa0,
            nu=nu0,
            covariance_prior=psi0,
            n_split_merge=3,
            n_iter=20000,
            burn_in=200,
            thin=1,
            n_chains=1,
            init_clusters=2,
            random_state=1,
        ).fit(TINY_X2)
    cocluster, k_dist = dpref.draw_statistics(model.label_samples_)
    assert_allclose(cocluster, gref.coclustering_matrix(posterior), atol=0.03)
    assert_allclose(k_dist, gref.n_clusters_distribution(posterior), atol=0.03)
    alphas = np.array([draw[4] for draw in model._draws])
    assert_allclose(alphas.mean(), alpha_mean, rtol=0.05)


def test_log_joint_is_the_crp_prior_times_the_marginals():
    m0, kappa0, nu0, psi0 = prior_args("full", 2)
    model = DPGaussianClustering(
        alpha=0.6,
        mean_prior=m0,
        kappa=kappa0,
        nu=nu0,
        covariance_prior=psi0,
        n_iter=5,
        burn_in=4,
        thin=1,
        n_chains=1,
        random_state=0,
    ).fit(TINY_X2)
    labels = model.label_samples_[-1]
    expected = gref.crp_log_prior(tuple(labels), 0.6) + sum(
        gref.log_marginal(TINY_X2[labels == k], "full", m0, kappa0, nu0, psi0)
        for k in range(labels.max() + 1)
    )
    assert_allclose(model.trace_["log_joint"][0, -1], expected, rtol=1e-10)


# -- densities -------------------------------------------------------------------------


@pytest.mark.parametrize("covariance_type", ["full", "diag", "spherical", "fixed"])
def test_score_samples_integrates_to_one_in_1d(covariance_type):
    X = np.random.default_rng(0).normal(size=(20, 1)) * 3 + 10
    model = DPGaussianClustering(
        covariance_type=covariance_type, n_iter=20, burn_in=10, thin=5, random_state=0
    ).fit(X)
    total = sum(
        integrate.quad(
            lambda x: np.exp(model.score_samples([[x]])[0]), lo, hi, limit=200
        )[0]
        for lo, hi in [(-np.inf, 0.0), (0.0, 20.0), (20.0, np.inf)]
    )
    assert_allclose(total, 1.0, rtol=1e-6)


@pytest.mark.parametrize("covariance_type", ["full", "diag", "spherical", "fixed"])
def test_score_samples_integrates_to_one_in_2d(covariance_type):
    # large nu: light tails, so a finite grid holds all the mass
    X, _ = make_blobs(n_samples=30, centers=2, cluster_std=0.5, random_state=0)
    model = DPGaussianClustering(
        covariance_type=covariance_type,
        nu=30.0,
        n_iter=20,
        burn_in=10,
        thin=5,
        random_state=0,
    ).fit(X)
    centre, half = X.mean(axis=0), 40.0
    grid = np.linspace(-half, half, 801)
    xx, yy = np.meshgrid(grid + centre[0], grid + centre[1])
    density = np.exp(model.score_samples(np.c_[xx.ravel(), yy.ravel()]))
    step = grid[1] - grid[0]
    assert_allclose(density.sum() * step**2, 1.0, rtol=2e-3)


def test_score_samples_is_the_mean_of_the_draws_mixtures():
    m0, kappa0, nu0, psi0 = prior_args("full", 2)
    model = DPGaussianClustering(
        alpha=0.5,
        mean_prior=m0,
        kappa=kappa0,
        nu=nu0,
        covariance_prior=psi0,
        n_iter=5,
        burn_in=4,
        thin=1,
        n_chains=1,
        random_state=2,
    ).fit(TINY_X2)
    labels = model.label_samples_[0]
    x = np.array([[0.7, 0.9], [3.0, -1.0]])
    density = (
        0.5 / 6.5 * np.exp(gref.log_prior_predictive(x, "full", m0, kappa0, nu0, psi0))
    )
    for k in range(labels.max() + 1):
        members = TINY_X2[labels == k]
        density += (
            len(members)
            / 6.5
            * np.exp(
                gref.log_posterior_predictive(x, members, "full", m0, kappa0, nu0, psi0)
            )
        )
    assert_allclose(np.exp(model.score_samples(x)), density, rtol=1e-10)


def student_t_problem(kind, d, n, seed=0, K=4):
    """Random locations, factors and dfs of K Student-t's, and n rows to score."""
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=3.0, size=(K, d))
    if kind == "full":
        spd = [random_spd(rng, d) / d for _ in range(K)]
        factors = np.linalg.cholesky(np.array(spd))
    elif kind == "diag":
        factors = rng.uniform(0.2, 3.0, size=(K, d))
    else:
        factors = rng.uniform(0.2, 3.0, size=K)
    dfs = rng.uniform(0.5, 40.0, size=K)
    return rng.normal(scale=4.0, size=(n, d)), means, factors, dfs


def scipy_student_t(X, mean, factor, df, kind):
    """log f(x) of one Student-t by SciPy, the reference of the compiled kernel."""
    d = X.shape[1]
    if kind == "diag":
        return stats.t(df=df, loc=mean, scale=factor).logpdf(X).sum(axis=1)
    shape = factor @ factor.T if kind == "full" else factor**2 * np.eye(d)
    return np.atleast_1d(stats.multivariate_t(mean, shape, df=df).logpdf(X))


@pytest.mark.parametrize("kind", ["full", "diag", "spherical"])
@pytest.mark.parametrize("d", [1, 2, 5, 40])
def test_student_t_kernel_is_the_scipy_density(kind, d):
    # 301 rows: whole blocks of the kernel and a last, partial one
    X, means, factors, dfs = student_t_problem(kind, d, 301, seed=d)
    density = student_t_log_density(X, means, factors, dfs, kind)
    assert density.shape == (301, len(means))
    for k in range(len(means)):
        assert_allclose(
            density[:, k], scipy_student_t(X, means[k], factors[k], dfs[k], kind),
            rtol=1e-10,
        )


@pytest.mark.parametrize("kind", ["full", "diag", "spherical"])
def test_student_t_kernel_does_not_depend_on_the_threads(kind):
    # 1001 rows, so that two threads each get their 128 and more; far rows too
    X, means, factors, dfs = student_t_problem(kind, 7, 1001)
    X[::50] *= 1e160
    with threadpool_limits(1, user_api="openmp"):
        one = student_t_log_density(X, means, factors, dfs, kind)
    for n_threads in thread_counts(2):
        with threadpool_limits(n_threads, user_api="openmp"):
            many = student_t_log_density(X, means, factors, dfs, kind)
        assert_array_equal(many, one)
    assert np.all(np.isfinite(one))


@pytest.mark.parametrize("kind", ["full", "diag", "spherical"])
def test_student_t_kernel_is_finite_and_right_for_far_points(kind):
    # Past |u| ~ 1e154 the squared distance overflows and the kernel works in
    # logarithms. x -> c x (with the locations and scales) shifts the density
    # by -d log c exactly; c = 2**600 takes ordinary rows across the switch,
    # where SciPy's density is finite, and exactly, a power of two.
    d = 3
    X, means, factors, dfs = student_t_problem(kind, d, 40)
    X[-1] = [0.0, 0.0, 0.0]
    X[-2] = means[1]  # at a location: u = 0 in both branches
    scale = 2.0**600
    far = student_t_log_density(X * scale, means * scale, factors * scale, dfs, kind)
    near = student_t_log_density(X, means, factors, dfs, kind)
    assert np.all(np.isfinite(far))
    assert_allclose(far, near - d * np.log(scale), rtol=1e-12)
    for k in range(len(means)):
        assert_allclose(
            near[:, k], scipy_student_t(X, means[k], factors[k], dfs[k], kind),
            rtol=1e-10,
        )
    # Beyond 1e308 - mean the difference itself overflows; the tails are
    # polynomial, so each factor of ten farther costs the same number of nats.
    line = np.zeros((6, d))
    line[:, 0] = [1e100, 1e150, 1e200, 1e250, 1e300, 1.7e308]
    line[-1, 1] = -1.7e308
    density = student_t_log_density(line, means, factors, dfs, kind)
    assert np.all(np.isfinite(density))
    assert np.all(np.diff(density, axis=0) < 0)
    assert_allclose(np.diff(density[:5], n=2, axis=0), 0.0, atol=1e-6)


def test_student_t_kernel_mixes_far_and_near_features_of_diag():
    # "diag" is a product over features: one far feature takes the row to the
    # far branch, whose other features must keep their ordinary terms.
    X, means, factors, dfs = student_t_problem("diag", 4, 10)
    X[:, 2] = 1e200
    density = student_t_log_density(X, means, factors, dfs, "diag")
    for k in range(len(means)):
        ordinary = [0, 1, 3]
        near = stats.t(
            df=dfs[k], loc=means[k, ordinary], scale=factors[k, ordinary]
        ).logpdf(X[:, ordinary])
        # t-density at 1e200 in logs: a 1-d Student-t's tail, log of its constant
        # minus (df + 1) / 2 log(u^2 / df) (the 1 is lost to rounding)
        u = (1e200 - means[k, 2]) / factors[k, 2]
        far = (
            gammaln((dfs[k] + 1) / 2) - gammaln(dfs[k] / 2)
            - 0.5 * np.log(dfs[k] * np.pi) - np.log(factors[k, 2])
            - (dfs[k] + 1) / 2 * (2 * np.log(u) - np.log(dfs[k]))
        )
        assert_allclose(density[:, k], near.sum(axis=1) + far, rtol=1e-12)


def test_student_t_kernel_refuses_mismatched_shapes():
    X, means, factors, dfs = student_t_problem("full", 3, 5)
    with pytest.raises(ValueError, match="shapes"):
        student_t_log_density(X, means, factors[:, 0], dfs, "full")
    with pytest.raises(ValueError, match="shapes"):
        student_t_log_density(X, means, factors, dfs[:2], "full")
    assert student_t_log_density(X[:0], means, factors, dfs, "full").shape == (0, 4)


@pytest.mark.parametrize("covariance_type", ["full", "diag", "spherical", "fixed"])
def test_each_draw_is_scored_by_its_familys_density(covariance_type):
    # every covariance_type reaches its own density: the Student-t predictive of
    # its family, or the Gaussian predictive N(m, c^2 Sigma) of "fixed"
    X, _ = make_blobs(n_samples=60, centers=3, n_features=3, random_state=0)
    model = DPGaussianClustering(
        covariance_type=covariance_type, n_iter=6, burn_in=4, thin=1, random_state=0
    ).fit(X)
    new = np.random.default_rng(1).normal(scale=5.0, size=(20, 3))
    for parameters in model._draws:
        means, _, factors, dfs = parameters[:4]
        density = model._component_log_density(new, parameters)
        for k in range(len(means)):
            if covariance_type == "fixed":
                expected = stats.multivariate_normal(
                    means[k], factors[k] ** 2 * model.covariance_prior_
                ).logpdf(new)
            else:
                expected = scipy_student_t(
                    new, means[k], factors[k], dfs[k], covariance_type
                )
            assert_allclose(density[:, k], expected, rtol=1e-10)


# -- estimator contracts ---------------------------------------------------------------


def blobs(n_samples=300, n_features=2, centers=4, random_state=0):
    """Well-separated, unscaled blobs: standard deviation 10, centres >= 80 apart."""
    rng = np.random.default_rng(random_state)
    means = np.empty((0, n_features))
    while len(means) < centers:  # draw centres in a box, rejecting near neighbours
        mean = rng.uniform(-100, 100, size=n_features)
        if np.all(np.linalg.norm(means - mean, axis=1) >= 80):
            means = np.vstack([means, mean])
    X, y = make_blobs(
        n_samples=n_samples, centers=means, cluster_std=10.0, random_state=random_state
    )
    return X + 50, y


def test_fit_predict_equals_fit_labels_and_seed_fixes_everything():
    X, _ = blobs()
    params = dict(n_iter=20, burn_in=10, random_state=3)
    labels = DPGaussianClustering(**params).fit_predict(X)
    model = DPGaussianClustering(**params).fit(X)
    assert_array_equal(labels, model.labels_)
    again = DPGaussianClustering(**params).fit(X)
    assert_array_equal(model.label_samples_, again.label_samples_)
    assert_array_equal(model.trace_["log_joint"], again.trace_["log_joint"])


def test_draws_do_not_depend_on_n_jobs():
    X, _ = blobs()
    params = dict(n_iter=15, burn_in=5, n_chains=3, random_state=4)
    serial = DPGaussianClustering(n_jobs=1, **params).fit(X)
    threaded = DPGaussianClustering(n_jobs=2, **params).fit(X)
    assert_array_equal(serial.label_samples_, threaded.label_samples_)
    assert_array_equal(serial.trace_["log_joint"], threaded.trace_["log_joint"])


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
@pytest.mark.parametrize("n_features, centers", [(2, 4), (10, 8)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recovers_well_separated_blobs(covariance_type, n_features, centers, seed):
    X, y = blobs(
        n_samples=400, n_features=n_features, centers=centers, random_state=seed
    )
    model = DPGaussianClustering(
        covariance_type=covariance_type, n_iter=60, burn_in=30, random_state=seed
    ).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.95
    assert model.means_.shape == (model.n_clusters_, n_features)
    expected_shape = (
        (n_features, n_features) if covariance_type == "full" else (n_features,)
    )
    assert model.covariances_.shape == (model.n_clusters_, *expected_shape)
    assert_allclose(model.weights_.sum(), 1.0)
    # predict on the training data agrees with the point estimate
    assert np.mean(model.predict(X) == model.labels_) > 0.95


def test_default_prior_is_resolved_from_the_data():
    X, _ = blobs(n_features=3)
    model = DPGaussianClustering(n_iter=2, burn_in=1).fit(X)
    assert_allclose(model.mean_prior_, X.mean(axis=0))
    assert model.nu_ == 5.0 and model.kappa_ == 0.1
    covariance = np.cov(X, rowvar=False, bias=True)
    assert_allclose(model.covariance_prior_, covariance * 5.0 / 10.0, rtol=1e-5)
    diag = DPGaussianClustering(covariance_type="diag", n_iter=2, burn_in=1).fit(X)
    assert diag.nu_ == 3.0
    assert_allclose(diag.covariance_prior_, X.var(axis=0) * 3.0 / 10.0, rtol=1e-5)
    assert model.nu is None and model.covariance_prior is None  # arguments untouched


def test_constant_and_single_sample_data_do_not_crash():
    model = DPGaussianClustering(n_iter=3, burn_in=1).fit(np.ones((10, 2)))
    assert model.n_clusters_ >= 1
    assert np.all(np.isfinite(model.score_samples(np.ones((2, 2)))))
    model = DPGaussianClustering(n_iter=3, burn_in=1).fit([[1.0, 2.0]])
    assert_array_equal(model.labels_, [0])


def test_sample_draws_from_the_clusters_predictives():
    X, _ = blobs(centers=2)
    model = DPGaussianClustering(nu=50.0, n_iter=20, burn_in=10, random_state=0).fit(X)
    samples, labels = model.sample(4000, random_state=0)
    assert samples.shape == (4000, 2)
    for k in np.flatnonzero(model.weights_ > 0.2):
        drawn = samples[labels == k]
        spread = np.sqrt(model.covariances_[k].diagonal().max())
        assert_allclose(drawn.mean(axis=0), model.means_[k], atol=0.15 * spread)


def test_full_samples_are_the_student_t_draws_of_their_clusters():
    # x = m + L z sqrt(df / g), the rows of each cluster transformed together:
    # the per-row product of the plain NumPy reference, to rounding
    X, _ = blobs(centers=3, n_features=3)
    model = DPGaussianClustering(n_iter=10, burn_in=5, random_state=0).fit(X)
    means, _, factors, dfs = model._best_parameters[:4]
    components = np.random.default_rng(1).integers(len(means), size=500)
    parameters = model._best_parameters
    got = model._sample_components(components, parameters, np.random.RandomState(2))
    rng = np.random.RandomState(2)
    z = rng.standard_normal((500, 3))
    z = np.einsum("nij,nj->ni", factors[components], z)
    g = rng.chisquare(dfs[components])[:, None]
    expected = means[components] + z * np.sqrt(dfs[components][:, None] / g)
    assert_allclose(got, expected, rtol=1e-13, atol=0)


def test_alpha_prior_changes_alpha_and_is_recorded_in_the_draws():
    X, _ = blobs()
    model = DPGaussianClustering(
        alpha_prior=(1.0, 1.0), n_iter=10, burn_in=5, random_state=0
    ).fit(X)
    alphas = {draw[4] for draw in model._draws}
    assert len(alphas) > 1
    fixed = DPGaussianClustering(alpha=0.3, n_iter=10, burn_in=5, random_state=0).fit(X)
    assert {draw[4] for draw in fixed._draws} == {0.3}


# -- validation ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, error, match",
    [
        (dict(covariance_type="tied"), ValueError, "covariance_type"),
        (dict(sampler="gibbs+metropolis"), ValueError, "sampler"),
        (dict(sampler="split-merge+gibbs"), ValueError, "sampler"),
        (dict(alpha=0.0), ValueError, "alpha"),
        (dict(kappa=-1.0), ValueError, "kappa"),
        (dict(nu=0.0), ValueError, "nu"),
        (dict(nu=1.5), ValueError, "nu must be > n_features - 1"),
        (dict(n_split_merge=-1), ValueError, "n_split_merge"),
        (dict(sampler="split-merge", n_split_merge=0), ValueError, "never move"),
        (dict(mean_prior=[0.0, 1.0]), ValueError, "mean_prior"),
        (dict(mean_prior=[0.0, np.nan, 1.0]), ValueError, "mean_prior"),
        (dict(covariance_prior=np.eye(2)), ValueError, "shape"),
        (dict(covariance_prior=-np.eye(3)), ValueError, "positive definite"),
        (
            dict(covariance_prior=[[1, 2, 0], [0, 1, 0], [0, 0, 1]]),
            ValueError,
            "symmetric",
        ),
        (
            dict(covariance_type="diag", covariance_prior=[1.0, -1.0, 1.0]),
            ValueError,
            "positive",
        ),
        (dict(alpha_prior=(1.0,)), ValueError, "alpha_prior"),
        (dict(alpha_prior=(1.0, 0.0)), ValueError, "alpha_prior"),
        (dict(init_clusters=0), ValueError, "init_clusters"),
        (dict(burn_in=10, n_iter=10), ValueError, "burn_in"),
    ],
)
def test_invalid_parameters_are_rejected_before_fitting(params, error, match):
    X, _ = blobs(n_features=3)
    with pytest.raises(error, match=match):
        DPGaussianClustering(**params).fit(X)


@pytest.mark.parametrize(
    "X, match",
    [
        ([[0.0, np.nan], [1.0, 2.0]], "NaN"),
        ([[0.0, np.inf], [1.0, 2.0]], "infinity"),
        (np.empty((0, 2)), "0 sample"),
        ([["a", "b"]], "convert"),
    ],
)
def test_bad_data_raise_value_errors(X, match):
    with pytest.raises(ValueError, match=match):
        DPGaussianClustering(n_iter=2, burn_in=1).fit(X)


def test_new_data_must_have_the_training_width():
    X, _ = blobs()
    model = DPGaussianClustering(n_iter=4, burn_in=2).fit(X)
    with pytest.raises(ValueError, match="features"):
        model.predict(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="NaN"):
        model.score_samples([[np.nan, 0.0]])


def test_sampled_alpha_is_traced_and_used_by_score_samples():
    # with alpha_prior, trace_["alpha"] follows the chain and each draw's own alpha
    # weighs its new-cluster term (the density still integrates to one, 1-D)
    from scipy import integrate

    X = np.array([[-3.0], [-2.6], [0.1], [2.9], [3.2]])
    model = DPGaussianClustering(
        alpha_prior=(2.0, 1.0),
        n_iter=40,
        burn_in=20,
        thin=4,
        n_chains=2,
        random_state=0,
    ).fit(X)
    assert model.trace_["alpha"].shape == (2, 40)
    assert np.ptp(model.trace_["alpha"]) > 0
    alphas = {model._draw_alpha(p) for p in model._draws}
    assert len(alphas) > 1
    total, _ = integrate.quad(
        lambda x: np.exp(model.score_samples(np.array([[x]])))[0],
        -np.inf,
        np.inf,
        limit=200,
    )
    assert abs(total - 1.0) < 1e-6


@pytest.mark.parametrize("covariance_type", ["full", "diag", "spherical", "fixed"])
@pytest.mark.parametrize("scale", [1.0, 2.0**480])
def test_draws_keep_no_covariances_and_covariances_are_rebuilt_exactly(
    covariance_type, scale
):
    # Per draw only what scoring reads is kept; covariances_ is rebuilt from
    # the predictive factors, equal to the family's own, also for rescaled data.
    X, _ = make_blobs(n_samples=80, centers=3, n_features=3, random_state=0)
    X = X * scale
    model = DPGaussianClustering(covariance_type=covariance_type, random_state=0)
    prepared = model._prepare(X)
    chain = model._chain_factory(prepared)(np.random.PCG64(0))
    chain.sweep(5)
    _, means, covariances, factors, dfs, alpha, sizes = chain.snapshot()
    k = model._scale_exponent
    covariances = np.ldexp(covariances, 2 * k)  # in X's units, as the draws
    kept = covariances if covariance_type == "spherical" else None
    factors = np.ldexp(factors, model._factor_exponent(k))
    rebuilt = model._covariances_of((means, kept, factors, dfs, alpha, sizes))
    assert_allclose(rebuilt, covariances, rtol=1e-12)
    fitted = DPGaussianClustering(
        covariance_type=covariance_type, n_iter=12, burn_in=4, random_state=0
    ).fit(X)
    if covariance_type != "spherical":
        assert all(draw[1] is None for draw in fitted._draws)
    assert np.all(np.isfinite(fitted.covariances_))


def _fit_untrimmed(monkeypatch, model, X, n_fits=1, **fit_params):
    """Fit ``model`` (``n_fits`` times) with every draw keeping its predictive
    factors: no trimming."""
    with monkeypatch.context() as patch:
        patch.setattr(gaussian_module, "PREDICTIVE_DRAWS", 10**9)
        for _ in range(n_fits):
            model.fit(X, **fit_params)
    return model


@pytest.mark.parametrize("sampler", ["gibbs+split-merge", "subcluster"])
@pytest.mark.parametrize("scale", [1.0, 2.0**400])
def test_full_draws_keep_few_factors_and_rebuild_the_others_exactly(
    monkeypatch, sampler, scale
):
    # covariance_type="full": 20 of the 60 kept draws keep their K d x d
    # predictive factors, 10 evenly spaced in each chain, and the predictive
    # averages over those; every other draw is rebuilt from the training rows
    # and its labels, equal to the factors the chain gave.
    X, _ = make_blobs(n_samples=120, centers=3, n_features=3, random_state=1)
    X = X * scale
    params = dict(sampler=sampler, n_iter=40, burn_in=10, thin=1, random_state=0)
    trimmed = DPGaussianClustering(**params).fit(X)
    untrimmed = _fit_untrimmed(monkeypatch, DPGaussianClustering(**params), X)
    assert_array_equal(trimmed.label_samples_, untrimmed.label_samples_)
    whole = trimmed._predictive_draws()
    assert whole == [0, 3, 6, 10, 13, 16, 19, 23, 26, 29] + [
        30 + d for d in [0, 3, 6, 10, 13, 16, 19, 23, 26, 29]
    ]
    assert len(untrimmed._predictive_draws()) == 60
    for d, draw in enumerate(trimmed._draws):
        assert (draw[2] is not None) == (d in whole)
        assert_allclose(
            trimmed._whole_draw(d)[2], untrimmed._draws[d][2], rtol=1e-10, atol=0
        )
    assert_allclose(trimmed.covariances_, untrimmed.covariances_, rtol=1e-12)
    # the predictive: the average over the whole draws
    new = X[::7] + 0.3
    per_draw = untrimmed._log_predictive_per_draw(untrimmed._check_new_data(new))
    assert_allclose(
        trimmed.score_samples(new),
        logsumexp(per_draw[whole], axis=0) - np.log(len(whole)),
        rtol=1e-12,
    )
    proba = sum(
        untrimmed._responsibilities(
            untrimmed._component_log_density(new, untrimmed._draws[d]),
            untrimmed._draws[d][-1],
        )
        @ untrimmed._cluster_shares(d)
        for d in whole
    ) / len(whole)
    assert_allclose(trimmed.predict_proba(new), proba, rtol=1e-12, atol=1e-300)
    samples, labels = trimmed.sample(50, random_state=0)
    assert samples.shape == (50, 3) and np.all(np.isfinite(samples))
    # the pointwise log-likelihood (to_inference_data) reads every draw
    rows = trimmed._check_new_data(X)
    assert_allclose(
        trimmed._log_predictive_per_draw(rows, training=True),
        untrimmed._log_predictive_per_draw(rows, training=True),
        rtol=1e-9,
    )


def test_full_draws_memory_does_not_grow_with_the_draws():
    # The kept factors are those of 20 draws whatever the number of draws.
    X, _ = make_blobs(n_samples=90, centers=3, n_features=4, random_state=0)
    kept = []
    for n_iter in (30, 90):
        model = DPGaussianClustering(n_iter=n_iter, burn_in=10, random_state=0)
        model.fit(X)
        kept.append(sum(draw[2] is not None for draw in model._draws))
        assert all(draw[1] is None for draw in model._draws)
    assert kept == [20, 20]
    # "diag" keeps every draw's K x d factors: they do not grow with d^2
    diag = DPGaussianClustering(
        covariance_type="diag", n_iter=90, burn_in=10, random_state=0
    ).fit(X)
    assert all(draw[2] is not None for draw in diag._draws)


def test_full_draws_of_warm_and_weighted_fits(monkeypatch):
    # A warm fit keeps whole the draws one long fit keeps (rebuilding those its
    # runs trimmed), so that its predictive is that fit's; the point estimate
    # and the rows of weight 0 read what an untrimmed fit reads.
    X, _ = make_blobs(n_samples=60, centers=2, n_features=2, random_state=3)
    weights = np.tile([1, 0, 2], 20)
    params = dict(burn_in=5, random_state=0, warm_start=True)
    warm = DPGaussianClustering(n_iter=30, **params)
    for _ in range(2):
        warm.fit(X, sample_weight=weights)
    long = DPGaussianClustering(n_iter=60, **params).fit(X, sample_weight=weights)
    untrimmed = _fit_untrimmed(
        monkeypatch,
        DPGaussianClustering(n_iter=30, **params),
        X,
        2,
        sample_weight=weights,
    )
    assert_array_equal(warm.label_samples_, long.label_samples_)
    assert_array_equal(warm.label_samples_, untrimmed.label_samples_)
    assert warm._predictive_draws() == long._predictive_draws()
    assert len(warm._predictive_draws()) == 20
    assert_allclose(warm.score_samples(X), long.score_samples(X), rtol=1e-10)
    assert_allclose(warm.means_, untrimmed.means_)
    assert_allclose(warm.covariances_, untrimmed.covariances_, rtol=1e-12)


@pytest.mark.parametrize(
    "covariance_type, message",
    [
        ("full", "failed numerically"),  # its chain fails first
        ("diag", "overflows double precision"),
        ("spherical", "overflows double precision"),
    ],
)
def test_draws_that_overflow_in_the_data_units_are_refused(covariance_type, message):
    # The trimmed draws are checked before their covariances go: a posterior
    # covariance that overflows in X's units is refused, as it was.
    X = np.random.default_rng(0).standard_normal((60, 2)) * 1e153
    model = DPGaussianClustering(
        covariance_type=covariance_type,
        mean_prior=[1e300, 1e300],
        n_iter=20,
        burn_in=5,
        random_state=0,
    )
    with pytest.raises(ValueError, match=message):
        model.fit(X)


def test_whole_draw_indices():
    assert whole_draw_indices(5, None).tolist() == [0, 1, 2, 3, 4]
    assert whole_draw_indices(5, 9).tolist() == [0, 1, 2, 3, 4]
    assert whole_draw_indices(30, 10).tolist() == [0, 3, 6, 10, 13, 16, 19, 23, 26, 29]
    assert whole_draw_indices(7, 1).tolist() == [6]  # the last: nearest the end
    assert whole_draw_indices(7, 0).tolist() == []
