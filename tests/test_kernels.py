# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The compiled ranking kernels against the plain reference in ``_reference.py``."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats

from rankmix import _kernels
from rankmix._rng import _uniform_wrapper, as_bit_generator, spawn_bit_generators

from . import _reference as ref

# A significance level that a correct sampler fails with probability 1e-3 per seed
# and an incorrect one passes only when the sample is far too small to tell.
ALPHA = 1e-3


def random_rankings(rng, n_rankings, n_items, t_max, min_length=1):
    """Random top-t rankings of random lengths, padded with -1."""
    X = np.full((n_rankings, t_max), -1, dtype=np.intp)
    for i in range(n_rankings):
        t = rng.randint(min_length, t_max + 1)
        X[i, :t] = rng.permutation(n_items)[:t]
    return X


def compact_R(X, theta, n_items, members=None):
    """(stats, weight, preceded) of the kernels for the rows ``members`` of X."""
    members = np.arange(len(X)) if members is None else members
    stats = _kernels.ranking_statistics(X, np.asarray(members, dtype=np.intp), n_items)
    weight, preceded = _kernels.theta_weighted_statistics(stats, theta)
    return stats, weight, preceded


def chi_square_pvalue(counts, probs, min_expected=5.0):
    """Pearson chi-square p-value, pooling the cells with small expectations."""
    counts = np.asarray(counts, dtype=float)
    expected = np.asarray(probs, dtype=float) * counts.sum()
    big = expected >= min_expected
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep]).pvalue


# (n_items, t_max) grid of small cases: full and top-t, with and without items that
# no ranking mentions (the stagewise "block").
SMALL_CASES = [(3, 3), (4, 2), (4, 4), (5, 3), (5, 5), (6, 2)]


@pytest.mark.parametrize("n_items, t_max", SMALL_CASES)
def test_codes_match_reference(n_items, t_max):
    # codes of random top-t rankings against several centres
    rng = np.random.RandomState(0)
    X = random_rankings(rng, 30, n_items, t_max)
    sigmas = np.array([rng.permutation(n_items) for _ in range(4)], dtype=np.intp)
    out = _kernels.codes(X, sigmas)
    for k, sigma in enumerate(sigmas):
        assert_array_equal(out[k], ref.codes_array(X, sigma))


@pytest.mark.parametrize(
    "n_items, t_max",
    # either side of the Fenwick tree's least length (TREE_MIN_ITEMS, 80), of
    # its span (positions below TREE_SPAN t: 16 x 80 = 1,280) and of its most
    # positions (TREE_MAX_POSITIONS, 4096), past which the t^2 comparisons
    # count them again
    [(79, 79), (80, 80), (1280, 80), (1281, 80), (300, 300), (4096, 300),
     (4097, 300), (5000, 400)],
)
def test_long_rankings_codes_match_reference(n_items, t_max):
    rng = np.random.RandomState(n_items)
    X = random_rankings(rng, 12, n_items, t_max, min_length=t_max - 8)
    sigmas = np.array([rng.permutation(n_items) for _ in range(3)], dtype=np.intp)
    # a centre that puts the rankings' items last: their positions at the top
    unranked = np.setdiff1d(np.arange(n_items), X[X >= 0])
    ranked = np.setdiff1d(np.arange(n_items), unranked)
    sigmas[0] = np.concatenate([unranked, rng.permutation(ranked)])
    out = _kernels.codes(X, sigmas)
    for k, sigma in enumerate(sigmas):
        assert_array_equal(out[k], ref.codes_array(X, sigma))


@pytest.mark.parametrize("n_items, t_max", SMALL_CASES)
def test_log_likelihood_and_kendall_match_reference(n_items, t_max):
    # GM log-likelihood and Kendall distance of every (ranking, centre) pair
    rng = np.random.RandomState(1)
    X = random_rankings(rng, 25, n_items, t_max)
    sigmas = np.array([rng.permutation(n_items) for _ in range(3)], dtype=np.intp)
    thetas = rng.exponential(1.0, size=(3, t_max))
    thetas[0, 0] = 0.0  # the theta = 0 limit of psi
    loglik = _kernels.log_likelihood(X, sigmas, thetas)
    kendall = _kernels.kendall_distance(X, sigmas)
    for k, sigma in enumerate(sigmas):
        assert_allclose(loglik[:, k], ref.gm_log_likelihood_array(X, sigma, thetas[k]))
        expected = [ref.kendall_distance(x, sigma) for x in ref.as_rankings(X, n_items)]
        assert_array_equal(kendall[:, k], expected)


@pytest.mark.parametrize("m", [0, 1, 5, 40])
@pytest.mark.parametrize("theta", [0.0, 1e-12, 1e-9, 1e-7, 0.3, 2.0, 50.0, 800.0])
def test_log_psi_matches_reference(m, theta):
    # log psi_m(theta) is accurate across the small-theta switch and at large theta
    expected = np.log(np.sum(np.exp(-np.arange(m + 1) * theta)))
    assert_allclose(
        _kernels._log_psi_wrapper(m, theta), expected, rtol=1e-12, atol=1e-14
    )


@pytest.mark.parametrize("m", [1, 20, 533, 16383])
@pytest.mark.parametrize("theta", [0.3, 5.0, 9.9, 10.1, 20.0, 30.0, 35.0, 300.0])
def test_log_psi_keeps_its_relative_precision_at_large_theta(m, theta):
    # log(-expm1(-x)) rounds 1 - e^-x near 1: log psi_20(30) was 1.7e-4 off
    # relatively, log psi_16383(35) 5.6e-2 (the absolute test above cannot see
    # it), which a prior of nu = 1e12 pseudo-rankings multiplies
    expected = np.log1p(np.sum(np.exp(-np.arange(1, m + 1) * theta)))
    rtol = 1e-14 if theta > 10 else 1e-11  # the expm1 form below theta = 10
    assert_allclose(_kernels._log_psi_wrapper(m, theta), expected, rtol=rtol)


def test_rankings_from_codes_inverts_codes():
    # reading rankings off sigma from their codes gives the rankings back
    rng = np.random.RandomState(2)
    n_items, t = 7, 5
    sigma = rng.permutation(n_items).astype(np.intp)
    X = random_rankings(rng, 50, n_items, t, min_length=t)
    S = _kernels.codes(X, sigma[None])[0]
    assert_array_equal(_kernels.rankings_from_codes(S, sigma), X)


def test_rankings_from_codes_rows_reads_each_row_off_its_own_sigma():
    rng = np.random.RandomState(3)
    n_items, t = 7, 4
    sigmas = np.array([rng.permutation(n_items) for _ in range(40)], dtype=np.intp)
    X = random_rankings(rng, 40, n_items, t, min_length=t)
    S = np.array([_kernels.codes(x[None], s[None])[0, 0] for x, s in zip(X, sigmas)])
    assert_array_equal(_kernels.rankings_from_codes_rows(S, sigmas), X)


@pytest.mark.parametrize("n_items, t_max", SMALL_CASES)
def test_ranking_statistics_rebuild_R(n_items, t_max):
    # the compact statistics reproduce the paper's dense R = sum_j theta_j R_j
    rng = np.random.RandomState(3)
    X = random_rankings(rng, 12, n_items, t_max)
    members = rng.choice(len(X), size=8, replace=False)
    theta = rng.exponential(1.0, size=t_max)
    stats, weight, preceded = compact_R(X, theta, n_items, members)

    dense = np.zeros((n_items, n_items))
    items = stats.items
    for a, item_a in enumerate(items):
        for c in range(n_items):
            if c != item_a:
                dense[item_a, c] = weight[a]
        for c, item_c in enumerate(items):
            dense[item_a, item_c] -= preceded[a, c]
    assert_allclose(
        dense, ref.sufficient_matrix(X[members], theta, n_items), atol=1e-12
    )
    # items are the distinct ranked items, in increasing order
    assert_array_equal(items, np.unique(X[members][X[members] >= 0]))


def built_statistics(n_rankings, n_items, t_max):
    """Random rankings, their ``ranking_statistics`` and the path it took:
    ``(X, members, stats, n_keys, path)``, path "dense" (D^2 t <= 4 n_keys +
    1024), else "qsort" below 1,024 precedences and "radix" from there on."""
    rng = np.random.RandomState(n_items)
    X = random_rankings(rng, n_rankings, n_items, t_max)
    members = np.arange(n_rankings, dtype=np.intp)
    stats = _kernels.ranking_statistics(X, members, n_items)
    lengths = (X >= 0).sum(axis=1)
    n_keys = int((lengths * (lengths - 1) // 2).sum())
    dense = len(stats.items) ** 2 * t_max <= 4 * n_keys + 1024
    path = "dense" if dense else "qsort" if n_keys < 1024 else "radix"
    return X, members, stats, n_keys, path


# (n_rankings, n_items, t_max, the path statistics_build takes) of the
# statistics tests: each path of the build, and the bound's terms
STATISTICS_CASES = [
    (3, 40, 10, "qsort"),
    (60, 300, 12, "radix"),
    (40, 2000, 25, "radix"),
    # the keys and their scratch matter: more than a dense group's table
    (8000, 1000, 20, "radix"),
    (400, 8, 6, "dense"),
    (300, 30, 30, "dense"),
    (500, 12, 12, "dense"),
    # tables of 13 stages each (DENSE_GROUP_CELLS, 2^19 counts)
    (2500, 200, 30, "dense"),
    # no precedence: the table is all the build needs
    (500, 32, 1, "dense"),
]


@pytest.mark.parametrize("n_rankings, n_items, t_max, path", STATISTICS_CASES)
def test_ranking_statistics_list_every_precedence_once_in_order(
    n_rankings, n_items, t_max, path
):
    # the pairs are the distinct (stage, second, first) precedences of local
    # item indices, in increasing order, with their counts, as NumPy's unique
    # lists them, whichever way statistics_build counts them: dense tables, a
    # group of stages at a time, else sorted keys, by qsort or the radix sort
    X, _, stats, n_keys, taken = built_statistics(n_rankings, n_items, t_max)
    assert taken == path
    local = np.searchsorted(stats.items, np.maximum(X, 0))
    keys = [
        (j, local[i, j], local[i, k])
        for i in range(n_rankings)
        for j in range(t_max)
        if X[i, j] >= 0
        for k in range(j)
    ]
    assert len(keys) == n_keys
    expected, count = np.unique(np.array(keys, dtype=np.intp).reshape(-1, 3),
                                axis=0, return_counts=True)
    # stored by rows, a row per (stage, second item)
    D = len(stats.items)
    assert stats.pair_first.dtype == stats.pair_count.dtype == np.int32
    rows = np.repeat(np.arange(t_max * D), np.diff(stats.row_start))
    assert_array_equal(rows // D, expected[:, 0])
    assert_array_equal(rows % D, expected[:, 1])
    assert_array_equal(stats.pair_first, expected[:, 2])
    assert_array_equal(stats.pair_count, count)
    assert stats.row_start[0] == 0 and stats.row_start[-1] == len(count)
    # and each item's count of rankings that place it at each stage
    placed = np.zeros((len(stats.items), t_max))
    for i, j in zip(*np.nonzero(X >= 0)):
        placed[local[i, j], j] += 1
    assert_array_equal(stats.counts, placed)


@pytest.mark.parametrize("n_rankings, n_items, t_max, path", STATISTICS_CASES)
def test_statistics_bytes_bound_covers_what_a_build_needs(
    n_rankings, n_items, t_max, path
):
    # the bound the sub-cluster parameter step sizes its threads by covers what
    # statistics_build needs on either path: the pairs, the stage counts and
    # items, and the sort's keys with their scratch or the dense path's table
    # (one stage's D^2 int32 counts at least) and lengths; within a few times that
    # for full rankings, whose pairs (n^2 (n - 1) at most) it is for
    X, members, stats, n_keys, taken = built_statistics(n_rankings, n_items, t_max)
    assert taken == path
    D = len(stats.items)
    needed = (8 * len(stats.pair_first) + 8 * D * (t_max + 1)
              + 8 * len(stats.row_start)
              + (4 * D**2 + 8 * n_rankings if path == "dense" else 16 * n_keys))
    bound = _kernels._statistics_bytes_bound(X, members, n_items)
    assert needed <= bound
    if path == "dense":
        assert bound < 4 * needed


@pytest.fixture
def kernels_always_on_threads():
    """The statistics kernels on the threads they are given whatever their
    sizes (their thresholds at zero), for the test's duration."""
    previous = _kernels._parallel_thresholds(0, 0)
    yield
    _kernels._parallel_thresholds(*previous)


@pytest.mark.parametrize("n_rankings, n_items, t_max, path", STATISTICS_CASES)
def test_statistics_kernels_give_the_same_results_on_any_number_of_threads(
    n_rankings, n_items, t_max, path, kernels_always_on_threads
):
    # the build's dense groups in waves, one thread a group (regrouped by work
    # on several threads: the cases of one group split too), the theta-weighted
    # statistics by bands of rows and the stage sums by stages: the same
    # statistics, weights and sums to the bit on 2, 3 and 5 threads as on one.
    # theta is not integral, so a cell's terms summed in another order would
    # differ in the last bits
    X, members, stats, _, taken = built_statistics(n_rankings, n_items, t_max)
    assert taken == path
    rng = np.random.RandomState(n_rankings)
    theta = rng.exponential(1.0, size=t_max)
    sigma = rng.permutation(n_items).astype(np.intp)
    weight, preceded = _kernels.theta_weighted_statistics(stats, theta)
    sums = _kernels.code_sums(stats, sigma)
    for n_threads in (2, 3, 5):
        on_threads = _kernels.ranking_statistics(X, members, n_items, n_threads)
        for name, value in stats._asdict().items():
            assert_array_equal(getattr(on_threads, name), value, err_msg=name)
        weighted = _kernels.theta_weighted_statistics(stats, theta, n_threads)
        assert_array_equal(weighted[0], weight)
        assert_array_equal(weighted[1], preceded)
        assert_array_equal(_kernels.code_sums(stats, sigma, n_threads), sums)


def test_statistics_kernels_refuse_statistics_that_do_not_hold_together():
    # the kernels read rows and pairs where the statistics say they are: before
    # they run, each of these malformed statistics is refused, not read past
    X, _, stats, _, _ = built_statistics(300, 30, 30)
    theta = np.ones(30)
    sigma = np.arange(30, dtype=np.intp)
    rows = stats.row_start
    n_pairs = len(stats.pair_first)
    malformed = {
        "a first item past the items": dict(pair_first=stats.pair_first + 30),
        "a negative first item": dict(pair_first=stats.pair_first - 1),
        "rows past the pairs": dict(row_start=rows + 1),
        "a row going back": dict(row_start=np.where(np.arange(len(rows)) == 7,
                                                    n_pairs, rows)),
        "a row missing": dict(row_start=rows[:-1]),
        "counts missing": dict(pair_count=stats.pair_count[:-1]),
        "a pair that no ranking shows": dict(pair_count=stats.pair_count - 1),
        "an item past sigma's": dict(items=stats.items + 30),
        # more items than the kernels' buffers hold, or out of order
        "an item repeated": dict(items=np.sort(np.append(stats.items[1:],
                                                         stats.items[1]))),
        "items out of order": dict(items=stats.items[::-1].copy()),
        "first items as intp": dict(pair_first=stats.pair_first.astype(np.intp)),
        "no rows": dict(row_start=None),
    }
    for fault, change in malformed.items():
        bad = stats._replace(**change)
        with pytest.raises(ValueError, match="malformed ranking statistics"):
            _kernels.code_sums(bad, sigma)
        if fault != "an item past sigma's":   # (no sigma to be past)
            with pytest.raises(ValueError, match="malformed ranking statistics"):
                _kernels.theta_weighted_statistics(bad, theta)
    # nor is a sigma that is not a permutation read
    with pytest.raises(ValueError, match="not a permutation"):
        _kernels.code_sums(stats, np.full(30, 2**40, dtype=np.intp))
    # and the well formed ones are read
    _kernels.code_sums(stats, sigma)
    _kernels.theta_weighted_statistics(stats, theta)


@pytest.mark.parametrize("n_items, t_max", SMALL_CASES)
def test_energy_and_code_sums_match_reference(n_items, t_max):
    # L_sigma(R) from the compact R, and sum_j theta_j S_j(sigma), equal the reference
    rng = np.random.RandomState(4)
    X = random_rankings(rng, 10, n_items, t_max)
    theta = rng.exponential(1.0, size=t_max)
    stats, weight, preceded = compact_R(X, theta, n_items)
    for _ in range(10):
        sigma = rng.permutation(n_items).astype(np.intp)
        expected = ref.energy(sigma, X, theta)
        assert_allclose(
            _kernels.sigma_energy(stats.items, weight, preceded, sigma),
            expected,
            atol=1e-10,
        )
        sums = _kernels.code_sums(stats, sigma)
        codes = ref.codes_array(X, sigma)
        assert_allclose(sums, np.where(codes >= 0, codes, 0).sum(axis=0))
        assert_allclose(theta @ sums, expected, atol=1e-10)


@pytest.mark.parametrize("n_items, t_max", SMALL_CASES)
def test_stagewise_log_proposal_matches_reference(n_items, t_max):
    # log q(sigma) of the O(D^2 + n) kernel equals the dense n x n reference
    rng = np.random.RandomState(5)
    X = random_rankings(rng, 4, n_items, t_max)
    theta = rng.exponential(0.8, size=t_max)
    stats, weight, preceded = compact_R(X, theta, n_items)
    total = 0.0
    for sigma in ref.all_permutations(n_items):
        sigma = np.array(sigma, dtype=np.intp)
        log_q = _kernels.stagewise_log_proposal(stats.items, weight, preceded, sigma)
        assert_allclose(
            log_q, ref.stagewise_proposal_logprob(sigma, X, theta, n_items), atol=1e-10
        )
        total += np.exp(log_q)
    assert_allclose(total, 1.0)


def test_stagewise_draws_follow_their_log_proposal():
    # the draws of the stagewise kernel are distributed as the q it reports
    n_items = 5  # two items no ranking mentions: exercises the block
    X = np.array([[0, 1, 2], [1, 0, -1], [0, 2, -1]], dtype=np.intp)
    theta = np.array([1.2, 0.4, 0.7])
    stats, weight, preceded = compact_R(X, theta, n_items)
    perms = [np.array(p, dtype=np.intp) for p in ref.all_permutations(n_items)]
    index = {tuple(p): i for i, p in enumerate(perms)}
    probs = np.exp(
        [
            _kernels.stagewise_log_proposal(stats.items, weight, preceded, p)
            for p in perms
        ]
    )
    bit_generator = np.random.PCG64(6)
    counts = np.zeros(len(perms))
    for _ in range(30000):
        sigma, log_q = _kernels.stagewise_draw(
            stats.items, weight, preceded, n_items, bit_generator
        )
        counts[index[tuple(sigma)]] += 1
        assert_allclose(log_q, np.log(probs[index[tuple(sigma)]]))
    assert chi_square_pvalue(counts, probs) > ALPHA


# Several rankings of mixed lengths, unequal theta_j: the stagewise rule is off here.
MH_CASES = [
    (4, np.array([[0, 1, 2, 3], [1, 0, 3, 2], [2, 1, -1, -1]]), [1.0, 0.3, 0.6, 0.0]),
    (5, np.array([[0, 1, 2], [1, 0, -1], [3, 0, 2], [0, -1, -1]]), [1.5, 0.2, 0.8]),
    (3, np.array([[0, 1, 2]]), [1.0, 0.3, 0.0]),  # DESIGN.md's example
]


def stationarity_pvalue(step, n_items, X, theta, seed, n_draws=20000):
    """Apply ``step`` once to exact draws of P(sigma | theta, data).

    ``step(stats.items, weight, preceded, sigma, bit_generator)`` moves sigma in
    place and returns a count (acceptances, swaps). Returns the chi-square p-value
    of the moved draws against the exact law, and the summed counts: a kernel that
    leaves the law invariant passes, whatever its start.
    """
    X = np.asarray(X, dtype=np.intp)
    theta = np.asarray(theta, dtype=float)
    stats, weight, preceded = compact_R(X, theta, n_items)
    exact = ref.exact_sigma_posterior(X, theta, n_items)
    keys = list(exact)
    probs = np.array([exact[k] for k in keys])
    index = {k: i for i, k in enumerate(keys)}
    starts = np.random.RandomState(seed).choice(len(keys), size=n_draws, p=probs)
    bit_generator = np.random.PCG64(seed)
    counts = np.zeros(len(keys))
    n_moves = 0
    for start in starts:
        sigma = np.array(keys[start], dtype=np.intp)
        n_moves += step(stats.items, weight, preceded, sigma, bit_generator)
        counts[index[tuple(sigma)]] += 1
    return chi_square_pvalue(counts, probs), n_moves


@pytest.mark.parametrize("n_items, X, theta", MH_CASES)
def test_mh_sigma_update_leaves_exact_conditional_invariant(n_items, X, theta):
    # start from exact draws of P(sigma | theta, data); one MH step must keep that law
    pvalue, n_accepted = stationarity_pvalue(
        _kernels.mh_sigma_update, n_items, X, theta, seed=7
    )
    assert pvalue > ALPHA
    assert 0 < n_accepted < 20000  # the test exercised both branches


@pytest.mark.parametrize("n_items, X, theta", MH_CASES)
def test_mh_sigma_chain_converges_to_exact_conditional(n_items, X, theta):
    # a long chain from a poor start visits sigma with the exact probabilities
    X = np.asarray(X, dtype=np.intp)
    theta = np.asarray(theta, dtype=float)
    stats, weight, preceded = compact_R(X, theta, n_items)
    exact = ref.exact_sigma_posterior(X, theta, n_items)
    sigma = np.arange(n_items)[::-1].astype(np.intp).copy()
    bit_generator = np.random.PCG64(8)
    samples = []
    for _ in range(20000):
        _kernels.mh_sigma_update(stats.items, weight, preceded, sigma, bit_generator)
        samples.append(sigma.copy())
    assert ref.total_variation(ref.empirical_distribution(samples), exact) < 0.03


@pytest.mark.parametrize("n_items, X, theta", MH_CASES)
def test_stagewise_rule_alone_is_not_exact(n_items, X, theta):
    # Meila & Chen's Lemma 2 fails: the stagewise draws miss the exact conditional
    X = np.asarray(X, dtype=np.intp)
    theta = np.asarray(theta, dtype=float)
    stats, weight, preceded = compact_R(X, theta, n_items)
    exact = ref.exact_sigma_posterior(X, theta, n_items)
    keys = list(exact)
    index = {k: i for i, k in enumerate(keys)}
    bit_generator = np.random.PCG64(9)
    counts = np.zeros(len(keys))
    for _ in range(20000):
        sigma, _ = _kernels.stagewise_draw(
            stats.items, weight, preceded, n_items, bit_generator
        )
        counts[index[tuple(sigma)]] += 1
    assert chi_square_pvalue(counts, [exact[k] for k in keys]) < 1e-10


def test_stagewise_first_item_on_design_example():
    # DESIGN.md: one full ranking (0,1,2), theta = (1.0, 0.3); exact vs stagewise
    X = np.array([[0, 1, 2]], dtype=np.intp)
    theta = np.array([1.0, 0.3, 0.0])
    stats, weight, preceded = compact_R(X, theta, 3)
    perms = [np.array(p, dtype=np.intp) for p in ref.all_permutations(3)]
    q = np.exp(
        [
            _kernels.stagewise_log_proposal(stats.items, weight, preceded, p)
            for p in perms
        ]
    )
    energies = np.array(
        [_kernels.sigma_energy(stats.items, weight, preceded, p) for p in perms]
    )
    exact = np.exp(-energies) / np.exp(-energies).sum()
    first = np.array([p[0] for p in perms])
    exact_first = [exact[first == i].sum() for i in range(3)]
    stagewise_first = [q[first == i].sum() for i in range(3)]
    # (DESIGN.md prints 0.143 for the last exact value; it is 0.14246.)
    assert_allclose(exact_first, [0.66524, 0.19230, 0.14246], atol=1e-5)
    assert_allclose(stagewise_first, [0.60960, 0.22426, 0.16614], atol=1e-5)


def test_stagewise_without_data_is_uniform():
    # an empty cluster: the proposal is uniform over all n! rankings
    stats, weight, preceded = compact_R(np.zeros((0, 2), dtype=np.intp), np.ones(2), 4)
    sigma = np.array([2, 0, 3, 1], dtype=np.intp)
    log_q = _kernels.stagewise_log_proposal(stats.items, weight, preceded, sigma)
    assert_allclose(log_q, -np.log(24.0))
    assert (
        _kernels.mh_sigma_update(
            stats.items, weight, preceded, sigma, np.random.PCG64(0)
        )
        == 1
    )


THETA_CASES = [
    # (a, b, m): interior mode, mode at 0, exponential (m = 0), a big cluster
    (3.0, 4.0, 9),
    (12.0, 2.0, 5),
    (0.7, 3.0, 0),
    (1.0, 1.0, 19),
    (4000.0, 2500.0, 10),
]


@pytest.mark.parametrize("a, b, m", THETA_CASES)
@pytest.mark.parametrize("n_steps", [1, 3])
def test_slice_theta_leaves_target_invariant(a, b, m, n_steps):
    # exact draws of density (10), moved by the slice sampler, keep that density (KS)
    rng = np.random.RandomState(10)
    start = ref.theta_sample_exact(4000, a, b, m, rng=rng)
    bit_generator = np.random.PCG64(10)
    moved = np.array(
        [
            _kernels.slice_sample_theta(
                np.array([x]),
                np.array([a]),
                np.array([b]),
                np.array([m], dtype=np.intp),
                bit_generator,
                n_steps,
            )[0]
            for x in start
        ]
    )
    assert np.all(moved >= 0)
    assert not np.array_equal(moved, start)
    pvalue = stats.kstest(moved, lambda x: ref.theta_cdf(x, a, b, m)).pvalue
    assert pvalue > ALPHA


def test_slice_theta_forgets_a_poor_start():
    # from theta = 8, a few updates reach the bulk of a concentrated target
    a, b, m = 4000.0, 2500.0, 10
    bit_generator = np.random.PCG64(11)
    theta = np.full(500, 8.0)
    ones = np.ones(500)
    theta = _kernels.slice_sample_theta(
        theta, a * ones, b * ones, np.full(500, m, dtype=np.intp), bit_generator, 20
    )
    assert stats.kstest(theta, lambda x: ref.theta_cdf(x, a, b, m)).pvalue > ALPHA


def test_bit_generators_are_reproducible():
    # the same seed gives the same uniforms; spawned chains differ from each other
    first = _uniform_wrapper(as_bit_generator(3), 5)
    assert_array_equal(first, _uniform_wrapper(as_bit_generator(3), 5))
    assert np.all((first >= 0) & (first < 1))
    chains = spawn_bit_generators(3, 2)
    again = spawn_bit_generators(3, 2)
    assert_array_equal(_uniform_wrapper(chains[0], 4), _uniform_wrapper(again[0], 4))
    assert not np.array_equal(
        _uniform_wrapper(chains[0], 4), _uniform_wrapper(chains[1], 4)
    )
    with pytest.raises(TypeError, match="BitGenerator"):
        _uniform_wrapper(object(), 3)


@pytest.mark.parametrize(
    "a, b, m",
    THETA_CASES + [(100.0, 100.0, 532), (1.0, 1.0, 1), (0.05, 0.0, 5), (2.0, 50.0, 3)],
)
def test_exact_theta_sampler_matches_target(a, b, m):
    # adaptive rejection sampling draws exactly from density (10) (KS vs quadrature;
    # fewer draws for m = 532, where the reference CDF is slow to evaluate)
    size = 1000 if m > 100 else 4000
    draws = _kernels.exact_sample_theta(a, b, m, size, np.random.PCG64(12))
    assert np.all(draws >= 0)
    pvalue = stats.kstest(draws, lambda x: ref.theta_cdf(x, a, b, m)).pvalue
    assert pvalue > ALPHA


@pytest.mark.parametrize(
    "a, b, m",
    THETA_CASES
    + [(1.0, 1.0, 19), (1.0, 1.0, 0), (0.1, 0.5, 3), (250.0, 501.0, 12), (5.0, 0.0, 4)]
    # a side long against its peak, where two coarse Simpson grids agreed by
    # chance (0.018 nats off)
    + [(0.1559643865031249, 215.3384225953147, 100)]
    # small a: one grid out to the 30-nat drop, 30 / a long, missed log psi's
    # bend near 0 (9e-5, 2e-5 and 7.6e-6 nats off); now Simpson's rule runs on
    # geometric pieces up to where log psi vanishes, and beyond in closed form
    + [(3e-3, 1.381e-2, 10), (1e-3, 1.0, 10), (0.3593, 3.089e-3, 532)]
    + [(1e-12, 1.0, 5), (1e-8, 0.0, 5), (2.0, 1e-3, 16383), (1e-3, 1e3, 16383)],
)
def test_theta_log_normaliser_matches_quadrature(a, b, m):
    # the compiled normaliser of density (10), which the split-merge proposal
    # density needs, against scipy's quad (the estimator's prior normaliser)
    from rankmix._mallows import log_theta_normaliser

    assert_allclose(
        _kernels.theta_log_normaliser_wrapper(a, b, m),
        log_theta_normaliser(a, b, m),
        rtol=0,
        atol=1e-6,
    )


def _reference_log_normaliser(a, b, m):
    """log I(a, b, m) where one term dominates, by hand: at a mode at 0 the
    integrand is psi_m(0)^-b e^(-(a - b m / 2) theta) to first order (valid when
    a - b m / 2 >> sqrt(b Var k)); at an inner mode of a large b, Laplace's
    approximation (relative error O(1 / b))."""
    slope0 = -a + b * m / 2.0
    if slope0 <= 0:
        return -np.log(-slope0) - b * np.log(m + 1.0)
    from scipy.optimize import brentq

    mode = brentq(lambda t: -a + b * _code_moments(t, m)[0], 0.0, 50.0, xtol=1e-15)
    top = -a * mode - b * np.log(np.exp(-mode * np.arange(m + 1.0)).sum())
    return top + 0.5 * np.log(2 * np.pi / (b * _code_moments(mode, m)[1]))


@pytest.mark.parametrize(
    "a, b, m",
    [
        # inner modes narrower than 1 / a (b Var k >> a^2): the Python
        # normaliser stepped in units of 1 / a and lost the mass right of
        # the mode, log 2 and more
        (1e8, 1e8, 5),
        (1e10, 1e10, 19),
        (1e12, 1e12, 3),
        # modes at 0 narrower than the Laplace width: the compiled one
        # bracketed its sides from that width and missed the mass
        (1e8, 1.0, 1),
        (1e12, 1e-8, 1),
        (1e6, 10.0, 5),
    ],
)
def test_theta_log_normaliser_where_one_term_dominates(a, b, m):
    from rankmix._mallows import log_theta_normaliser

    expected = _reference_log_normaliser(a, b, m)
    # the log-density's terms cancel to |top| * 1e-15 or so in double precision
    atol = 1e-6 + 1e-14 * abs(expected)
    assert_allclose(_kernels.theta_log_normaliser_wrapper(a, b, m), expected, atol=atol)
    assert_allclose(log_theta_normaliser(a, b, m), expected, atol=atol)


def _code_moments(theta, m):
    k = np.arange(m + 1.0)
    w = np.exp(-theta * k)
    w /= w.sum()
    return w @ k, w @ k**2 - (w @ k) ** 2


@pytest.mark.parametrize("nu", [1e8, 1e11])
def test_exact_theta_sampler_with_a_strong_prior(nu):
    # The prior draw of a new cluster at nu = r nu: its log-density, about
    # -nu log(m + 1), is exact to 1e-16 nu. Nearly parallel tangents met
    # below 0 and the envelope's masses turned NaN: an endless loop at 1e11,
    # draws 2e7 nats into the tail at 1e8.
    # m = 1: a mode at 0 with slope -(a - b / 2): exponential to 1e-11.
    draws = _kernels.exact_sample_theta(nu, nu, 1, 20_000, np.random.PCG64(1))
    assert stats.kstest(draws * nu / 2, "expon").pvalue > ALPHA
    # m = 2: slope 0 at 0, a half-normal of sd 1 / sqrt(b Var k) to 1e-8.
    sd = 1.0 / np.sqrt(nu * _code_moments(0.0, 2)[1])
    draws = _kernels.exact_sample_theta(nu, nu, 2, 20_000, np.random.PCG64(5))
    assert draws.max() < 8 * sd
    assert stats.kstest(draws / sd, "halfnorm").pvalue > ALPHA


@pytest.mark.parametrize("b", [1e6, 1e9])
def test_exact_theta_sampler_at_an_inner_mode_of_a_large_b(b):
    # A cluster of 10^6 rankings: the rising piece left of the mode was
    # inverted through exp(slope x width), which overflows from 709, and all
    # its draws fell on its upper end (no draw below mode - sd). Laplace's
    # normal is exact to O(1 / sqrt(b)) here.
    from scipy.optimize import brentq

    m = 5
    mode = brentq(lambda t: _code_moments(t, m)[0] - 1.0, 1e-9, 50.0, xtol=1e-15)
    sd = 1.0 / np.sqrt(b * _code_moments(mode, m)[1])
    draws = _kernels.exact_sample_theta(b, b, m, 20_000, np.random.PCG64(0))
    assert stats.kstest((draws - mode) / sd, "norm").pvalue > ALPHA


def test_exact_theta_sampler_refuses_improper_targets():
    with pytest.raises(ValueError, match="a > 0"):
        _kernels.exact_sample_theta(0.0, 1.0, 3, 1, np.random.PCG64(0))


@pytest.mark.parametrize("n_items, X, theta", MH_CASES)
def test_transposition_pass_leaves_exact_conditional_invariant(n_items, X, theta):
    # exact draws of P(sigma | theta, data) keep their law after one pass
    pvalue, n_swaps = stationarity_pvalue(
        _kernels.sigma_transposition_pass, n_items, X, theta, seed=13
    )
    assert pvalue > ALPHA
    assert n_swaps > 0


def test_transpositions_free_a_centre_where_independence_mh_stalls():
    # an independence sampler stalls where target / proposal is far above its value
    # at the proposal's typical draws; the transposition passes walk out of there
    from rankmix import mallows

    n_items = 10
    truth = np.arange(n_items, dtype=np.intp)
    X = mallows.sample(truth, 1.0, 300, 6, random_state=0)
    stats, weight, preceded = compact_R(X, np.ones(6), n_items)
    rng = np.random.RandomState(0)

    def log_ratio(sigma):  # log p(sigma) - log q(sigma), up to a constant
        return -_kernels.sigma_energy(
            stats.items, weight, preceded, sigma
        ) - _kernels.stagewise_log_proposal(stats.items, weight, preceded, sigma)

    candidates = [rng.permutation(n_items).astype(np.intp) for _ in range(300)]
    stuck = max(candidates, key=log_ratio)
    sigma = stuck.copy()
    assert (
        _kernels.mh_sigma_update(
            stats.items, weight, preceded, sigma, np.random.PCG64(0), 200
        )
        == 0
    )
    _kernels.sigma_transposition_pass(
        stats.items, weight, preceded, sigma, np.random.PCG64(0), 100
    )
    best = _kernels.sigma_energy(stats.items, weight, preceded, truth)
    assert _kernels.sigma_energy(stats.items, weight, preceded, stuck) > best + 500
    assert _kernels.sigma_energy(stats.items, weight, preceded, sigma) < best + 10
