# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The compiled VI between posterior draws against the pure-Python metric."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from threadpoolctl import threadpool_limits

from rankmix import _consensus
from rankmix._consensus import _smallest_label_dtype, pairwise_vi, vi_consensus
from rankmix.metrics import variation_of_information

from ._threads import thread_counts

# dense_limit values that send every pair of the tests below through one path:
# None (the default: small tables, scanned whole, or the touched-cell list),
# 0 (every pair grouped by the clusters of the first draw) and a huge buffer
# (every pair counted densely).
LIMITS = [None, 0, 1 << 40]


def reference_matrix(labels):
    labels = np.asarray(labels)
    n_draws = labels.shape[0]
    out = np.zeros((n_draws, n_draws))
    for s in range(n_draws):
        for t in range(n_draws):
            out[s, t] = variation_of_information(labels[s], labels[t])
    return out


def random_draws(rng, n_draws, n_samples, n_clusters):
    """Draws around one random clustering, each with 30% of its points moved."""
    base = rng.randint(n_clusters, size=n_samples)
    labels = np.tile(base, (n_draws, 1))
    for s in range(n_draws):
        moved = rng.rand(n_samples) < 0.3
        labels[s, moved] = rng.randint(n_clusters, size=moved.sum())
    return labels


def check_vi_matrix(vi, labels):
    n_draws = np.asarray(labels).shape[0]
    assert vi.shape == (n_draws, n_draws)
    assert vi.dtype == np.float64
    assert_array_equal(vi, vi.T)
    assert_array_equal(np.diag(vi), 0.0)
    assert_allclose(vi, reference_matrix(labels), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dense_limit", LIMITS)
@pytest.mark.parametrize("n_clusters", [1, 2, 5, 12, 40, 200])
def test_pairwise_vi_matches_metric(n_clusters, dense_limit):
    rng = np.random.RandomState(n_clusters)
    labels = random_draws(rng, 6, 200, n_clusters)
    check_vi_matrix(pairwise_vi(labels, dense_limit=dense_limit), labels)


@pytest.mark.parametrize("dense_limit", LIMITS)
def test_pairwise_vi_mixed_cluster_counts(dense_limit):
    # One cluster, all singletons, few and many clusters, in one call.
    rng = np.random.RandomState(0)
    n = 200
    labels = np.vstack(
        [
            np.zeros(n, dtype=np.intp),
            np.arange(n),
            rng.permutation(n),
            rng.randint(3, size=n),
            rng.randint(40, size=n),
            rng.randint(150, size=n),
        ]
    )
    vi = pairwise_vi(labels, dense_limit=dense_limit)
    check_vi_matrix(vi, labels)
    # One cluster against N singletons is the largest VI, log N.
    assert vi[0, 1] == pytest.approx(math.log(n), rel=1e-14)
    assert vi.max() <= math.log(n) * (1 + 1e-14)
    assert vi.min() >= 0.0
    # All-singleton clusterings are all the same clustering.
    assert vi[1, 2] == 0.0


@pytest.mark.parametrize("dense_limit", [None, 0, 100, 1 << 40])
def test_pairwise_vi_code_paths_agree(dense_limit):
    # N = 60 and about 40 clusters per draw: 1600 cells, more than N / 4, so the
    # default counts them through the touched-cell list; 100 sends the pairs of
    # big draws to the grouped path and keeps the pairs of small draws dense.
    rng = np.random.RandomState(1)
    n = 60
    labels = np.vstack(
        [rng.randint(40, size=n) for _ in range(4)]
        + [rng.randint(3, size=n) for _ in range(3)]
    )
    expected = reference_matrix(labels)
    assert_allclose(
        pairwise_vi(labels, dense_limit=dense_limit), expected, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("dense_limit", [None, 0, 100, 1 << 40])
def test_pairwise_vi_is_the_same_on_any_number_of_threads(dense_limit):
    # 40 draws of 6,000 points (above the size run on one thread), of 3 to 80
    # clusters, so that each path runs on two threads with its own buffers;
    # each pair computed alone is the reference
    rng = np.random.RandomState(2)
    labels = np.vstack(
        [random_draws(rng, 1, 6000, k) for k in rng.randint(3, 80, size=40)]
    )
    with threadpool_limits(1, user_api="openmp"):
        one = pairwise_vi(labels, dense_limit=dense_limit)
    for n_threads in thread_counts(2):
        with threadpool_limits(n_threads, user_api="openmp"):
            assert_array_equal(pairwise_vi(labels, dense_limit=dense_limit), one)
            best = vi_consensus(labels, dense_limit=dense_limit)
        assert best == np.argmin(one.sum(axis=1))
    pairs = [(0, 1), (5, 39), (38, 39)]
    for s, t in pairs:
        alone = pairwise_vi(labels[[s, t]], dense_limit=dense_limit)[0, 1]
        assert one[s, t] == one[t, s] == alone


@pytest.mark.parametrize(
    "n_clusters, n_samples, top_label, dtype",
    [
        (5, 500, 127, np.int8),  # at most 128 codes: one byte
        (5, 500, 128, np.int16),
        (200, 500, 199, np.int16),
        (5, 40001, 40000, np.int32),  # codes up to min(N, top label + 1) - 1
        (5, 500, 10**15, np.int8),  # labels past the look-up table: factorised
    ],
)
def test_codes_take_the_smallest_dtype_and_give_the_same_vi(
    n_clusters, n_samples, top_label, dtype
):
    # pairwise_vi and vi_consensus code the draws in the smallest integer dtype
    # that holds min(N, largest label + 1) codes: the matrix of the int32 codes
    # to the bit, on the small, dense and grouped counting paths (limits None,
    # 10 and 0), from read-only codes too
    rng = np.random.RandomState(3)
    labels = random_draws(rng, 4, n_samples, n_clusters).astype(np.int64)
    labels[0, 0] = top_label
    codes, n_labels = _consensus._check_labels(labels, compact=True)
    wide, wide_n_labels = _consensus._check_labels(labels)
    assert codes.dtype == dtype and wide.dtype == np.int32
    assert_array_equal(codes, wide)
    assert_array_equal(n_labels, wide_n_labels)
    codes.setflags(write=False)
    for limit in (_consensus.DENSE_LIMIT, 10, 0):
        assert_array_equal(
            _consensus._pairwise_codes(codes, n_labels, limit),
            _consensus._pairwise_codes(wide, n_labels, limit),
        )
    check_vi_matrix(pairwise_vi(labels), labels)


def test_module_dense_limit_is_used(monkeypatch):
    rng = np.random.RandomState(2)
    labels = rng.randint(50, size=(5, 50))
    expected = reference_matrix(labels)
    for limit in [0, 10, 1 << 30]:
        monkeypatch.setattr(_consensus, "DENSE_LIMIT", limit)
        assert_allclose(pairwise_vi(labels), expected, rtol=1e-12, atol=1e-12)
        assert_allclose(
            pairwise_vi(labels, dense_limit=None), expected, rtol=1e-12, atol=1e-12
        )


@pytest.mark.parametrize("dense_limit", [0, 1 << 20])
def test_kernels_give_exact_zero_on_equal_rows(dense_limit):
    # Bypass the removal of repeated draws to check the kernels themselves:
    # identical rows give exactly 0, through the grouped, small and dense paths.
    rng = np.random.RandomState(3)
    for n_clusters in [1, 3, 30, 300]:
        row = rng.randint(n_clusters, size=300)
        codes, k = _consensus._check_labels(np.vstack([row, row, row[::-1]]))
        vi = _consensus._pairwise_codes(codes, k, dense_limit)
        assert vi[0, 1] == 0.0
        assert vi[1, 0] == 0.0
        assert_array_equal(vi, vi.T)
        assert_allclose(
            vi[0, 2], variation_of_information(row, row[::-1]), rtol=1e-12, atol=1e-12
        )


def test_non_contiguous_labels():
    labels = [[5, 5, 9], [0, 1, 1], [2, 2, 0], [100, 7, 100]]
    vi = pairwise_vi(labels)
    check_vi_matrix(vi, labels)
    assert vi[0, 2] == 0.0
    assert vi[0, 1] == pytest.approx(variation_of_information([5, 5, 9], [0, 1, 1]))


@pytest.mark.parametrize("dense_limit", LIMITS)
def test_relabelled_copies_are_exactly_zero(dense_limit):
    rng = np.random.RandomState(4)
    base = random_draws(rng, 3, 150, 8)
    renamed = [rng.permutation(1000)[:8][row] for row in base]  # same partitions
    labels = np.vstack([base, renamed])
    vi = pairwise_vi(labels, dense_limit=dense_limit)
    for s in range(3):
        assert vi[s, s + 3] == 0.0
        assert_array_equal(vi[s], vi[s + 3])  # bitwise equal rows
    check_vi_matrix(vi, labels)


def test_label_types_and_layouts():
    rng = np.random.RandomState(5)
    labels = rng.randint(7, size=(5, 80))
    expected = pairwise_vi(labels)
    assert_array_equal(pairwise_vi(labels.astype(np.int32)), expected)
    assert_array_equal(pairwise_vi(labels.astype(np.uint8)), expected)
    assert_array_equal(pairwise_vi(labels.tolist()), expected)
    assert_array_equal(pairwise_vi(np.asfortranarray(labels)), expected)
    # A strided view, and labels too large for a look-up table.
    wide = np.repeat(labels, 2, axis=1)[:, ::2]
    assert_array_equal(pairwise_vi(wide), expected)
    big = labels.astype(np.uint64) * np.uint64(2**61) + np.uint64(12345)
    assert_array_equal(pairwise_vi(big), expected)
    assert_array_equal(pairwise_vi(labels * 10**12), expected)
    bools = rng.rand(3, 40) < 0.5
    check_vi_matrix(pairwise_vi(bools), bools.astype(int))


def test_degenerate_shapes():
    assert_array_equal(pairwise_vi([[3, 1, 2]]), [[0.0]])
    assert_array_equal(pairwise_vi(np.zeros((3, 0), dtype=int)), np.zeros((3, 3)))
    assert vi_consensus([[3, 1, 2]]) == 0
    assert vi_consensus(np.zeros((3, 0), dtype=int)) == 0
    assert_array_equal(pairwise_vi([[0], [4]]), np.zeros((2, 2)))


def test_repeated_draws():
    rng = np.random.RandomState(6)
    labels = rng.randint(4, size=(4, 50))
    picks = rng.randint(4, size=15)
    vi = pairwise_vi(labels[picks])
    assert_array_equal(vi, pairwise_vi(labels)[np.ix_(picks, picks)])


@pytest.mark.parametrize("dense_limit", LIMITS)
@pytest.mark.parametrize("seed", range(4))
def test_vi_consensus_is_argmin_of_mean(seed, dense_limit):
    rng = np.random.RandomState(seed)
    labels = random_draws(rng, 12, 120, rng.randint(2, 30))
    labels[rng.randint(12)] = labels[rng.randint(12)]  # a repeated draw or not
    index = vi_consensus(labels, dense_limit=dense_limit)
    assert isinstance(index, int)
    vi = pairwise_vi(labels, dense_limit=dense_limit)
    mean = vi.sum(axis=1) / (labels.shape[0] - 1)
    assert index == int(np.argmin(mean))
    assert_allclose(mean[index], mean.min(), rtol=1e-12)
    assert index == int(np.argmin(reference_matrix(labels).sum(axis=1)))


@pytest.mark.parametrize("dense_limit", LIMITS)
def test_vi_consensus_known_answer(dense_limit):
    # Five relabelled copies of one clustering and three unrelated draws: the
    # first copy wins.
    rng = np.random.RandomState(7)
    n = 300
    truth = rng.randint(6, size=n)
    outliers = [rng.randint(k, size=n) for k in (2, 9, 40)]
    copies = [rng.permutation(6)[truth] + 10 * c for c in range(5)]
    labels = np.vstack(outliers[:2] + copies[:3] + outliers[2:] + copies[3:])
    assert vi_consensus(labels, dense_limit=dense_limit) == 2
    # A slightly perturbed clustering among copies of the truth loses to them.
    noisy = truth.copy()
    noisy[:10] = (noisy[:10] + 1) % 6
    labels = np.vstack([noisy, truth, truth, outliers[0]])
    assert vi_consensus(labels, dense_limit=dense_limit) == 1


def test_vi_consensus_ties_go_to_smallest_index():
    a = np.array([0, 0, 0, 1, 1, 1])
    b = np.array([0, 1, 2, 0, 1, 2])
    # Two clusterings, each drawn twice: their mean VIs are equal.
    assert vi_consensus([a, b, 5 - a, b + 7]) == 0
    assert vi_consensus([b, a, b, a]) == 0
    assert vi_consensus([[1, 2, 3]] * 4) == 0


BAD_LABELS = [
    ([0, 1, 1], "2-D"),
    ([[[0, 1]]], "2-D"),
    (np.zeros((0, 5), dtype=int), "at least one draw"),
    ([[0, 1, -1], [0, 0, 0]], "non-negative"),
    ([[0.0, 1.0]], "integer labels"),
    ([["a", "b"]], "integer labels"),
]


@pytest.mark.parametrize("func", [pairwise_vi, vi_consensus])
@pytest.mark.parametrize("labels, match", BAD_LABELS)
def test_bad_labels(func, labels, match):
    with pytest.raises(ValueError, match=match):
        func(labels)


@pytest.mark.parametrize("func", [pairwise_vi, vi_consensus])
@pytest.mark.parametrize("dense_limit", [-1, 1.5, "big"])
def test_bad_dense_limit(func, dense_limit):
    with pytest.raises(ValueError, match="dense_limit"):
        func([[0, 1], [1, 1]], dense_limit=dense_limit)


# --- numbering a chain's labels, and the dtype of the kept draws --------------


def _first_appearance_reference(labels):
    numbers, firsts = {}, []
    for x in labels:
        if x not in numbers:
            numbers[x] = len(numbers)
            firsts.append(x)
    return [numbers[x] for x in labels], firsts


@pytest.mark.parametrize("seed", range(5))
def test_number_by_first_appearance_matches_a_reference(seed):
    rng = np.random.default_rng(seed)
    n_labels = int(rng.integers(1, 50))
    labels = rng.integers(0, n_labels, size=int(rng.integers(1, 200)))
    codes, firsts = _consensus.number_by_first_appearance(labels, n_labels)
    expected_codes, expected_firsts = _first_appearance_reference(labels.tolist())
    assert codes.dtype == np.int32 and firsts.dtype == np.intp
    assert codes.tolist() == expected_codes
    assert firsts.tolist() == expected_firsts
    # the work table is left clean: a second call gives the same answer
    again = _consensus.number_by_first_appearance(labels, n_labels)
    assert_array_equal(again[0], codes)


def test_number_by_first_appearance_of_nothing():
    codes, firsts = _consensus.number_by_first_appearance(np.empty(0, np.intp), 3)
    assert codes.shape == (0,) and firsts.shape == (0,)


@pytest.mark.parametrize(
    "max_label, dtype",
    [
        (0, np.int8),
        (127, np.int8),
        (128, np.int16),
        (32767, np.int16),
        (32768, np.int32),
        (2**31 - 1, np.int32),
        (2**31, np.int64),
    ],
)
def test_the_smallest_label_dtype(max_label, dtype):
    assert _smallest_label_dtype(max_label) == dtype


def test_kept_draws_are_stored_in_the_smallest_dtype():
    from rankmix import DPGaussianClustering

    X = np.concatenate([np.zeros((20, 1)), np.full((20, 1), 50.0)])
    X += np.random.default_rng(0).normal(size=X.shape)
    model = DPGaussianClustering(
        n_iter=6, burn_in=2, n_chains=2, alpha=1e3, random_state=0
    ).fit(X)
    samples = model.label_samples_
    assert samples.dtype == np.int8
    # every draw numbered 0..K-1 by first appearance
    for row in samples:
        assert row.tolist() == _first_appearance_reference(row.tolist())[0]


def test_a_chain_keeps_its_draws_in_the_smallest_dtype_from_the_start():
    # the draws are staged in int8 and widened once a draw numbers more than
    # 128 clusters (staged in the snapshots' int32, a fit peaked at 5 times its
    # label_samples_), with no draw changed by the widening
    from rankmix import _engine

    n_rows = 300
    # draw s has 50 * (s + 1) clusters: 50, 100, 150, 200 (int16 from the third)
    snapshots = [np.arange(n_rows, dtype=np.int32) % (50 * (s + 1)) for s in range(4)]

    class Chain:
        n_clusters, log_joint = 1, 0.0

        def __init__(self):
            self.done = 0

        def sweep(self):
            self.done += 1

        def snapshot(self):
            return snapshots[self.done - 1], self.done

    class Progress:
        def update(self, *args):
            pass

    result = _engine._run_chain(Chain, 4, 0, 1, 0, 0, Progress(), (), False, None)
    assert result.labels.dtype == np.int16
    assert_array_equal(result.labels, np.stack(snapshots))
    assert [p[0] for p in result.parameters] == [1, 2, 3, 4]

    first_two = _engine._run_chain(Chain, 2, 0, 1, 0, 0, Progress(), (), False, None)
    assert first_two.labels.dtype == np.int8
    assert_array_equal(first_two.labels, np.stack(snapshots[:2]))
