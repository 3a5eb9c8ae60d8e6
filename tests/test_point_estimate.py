"""The clustering of least posterior expected loss (VI, Binder), against brute force."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from rankmix import DPGaussianClustering
from rankmix.metrics import (
    expected_loss,
    minimize_expected_loss,
    variation_of_information,
)

from ._dp_reference import canonical_labels, set_partitions
from ._threads import thread_counts


def _binder(u, v):
    """Pairs of points that one clustering puts together and the other apart."""
    u, v = np.asarray(u), np.asarray(v)
    together_u = u[:, None] == u[None, :]
    together_v = v[:, None] == v[None, :]
    return int(np.triu(together_u != together_v, 1).sum())


LOSSES = {"vi": variation_of_information, "binder": _binder}


def _reference_loss(labels, draws, loss):
    return float(np.mean([LOSSES[loss](draw, labels) for draw in draws]))


def _random_draws(rng, n_draws, n_samples, n_clusters):
    """Draws scattered around a random clustering: a few points relabelled each."""
    centre = rng.integers(n_clusters, size=n_samples)
    draws = np.tile(centre, (n_draws, 1))
    for draw in draws:
        moved = rng.random(n_samples) < 0.3
        draw[moved] = rng.integers(n_clusters + 1, size=moved.sum())
    return draws


@pytest.mark.parametrize("loss", ["vi", "binder"])
def test_expected_loss_is_the_mean_loss_to_the_draws(loss):
    rng = np.random.default_rng(0)
    draws = _random_draws(rng, 25, 12, 3)
    for labels in (draws[0], rng.integers(4, size=12), np.zeros(12, int)):
        assert_allclose(
            expected_loss(labels, draws, loss=loss),
            _reference_loss(labels, draws, loss),
            rtol=1e-12,
            atol=1e-12,
        )
    # many clusters: the contingency tables (300 x about 150 cells, more than
    # 4 N + 1024) are counted by their occupied cells only
    draws = _random_draws(rng, 5, 300, 150)
    for labels in (np.arange(300), draws[1]):
        assert_allclose(
            expected_loss(labels, draws, loss=loss),
            _reference_loss(labels, draws, loss),
            rtol=1e-12,
        )


@pytest.mark.parametrize("loss", ["vi", "binder"])
@pytest.mark.parametrize("seed", range(6))
def test_search_finds_the_minimum_over_all_clusterings(loss, seed):
    # Every set partition of 7 points (Bell(7) = 877) scored by brute force,
    # with expected_loss (checked against the plain losses above).
    rng = np.random.default_rng(seed)
    draws = _random_draws(rng, 20, 7, 1 + seed % 3)
    best = min(
        expected_loss(partition, draws, loss=loss) for partition in set_partitions(7)
    )
    found = minimize_expected_loss(draws, loss=loss, random_state=seed)
    assert_allclose(_reference_loss(found, draws, loss), best, rtol=1e-10, atol=1e-12)
    assert tuple(found) == canonical_labels(found)


def test_the_result_need_not_be_a_draw_and_beats_the_best_draw():
    # Each draw splits off a different point; the least-VI clustering keeps
    # them all together, which no draw does.
    draws = np.zeros((6, 6), dtype=int)
    draws[np.arange(6), np.arange(6)] = 1
    found = minimize_expected_loss(draws, random_state=0)
    assert_array_equal(found, np.zeros(6))
    best_draw = min(expected_loss(draw, draws) for draw in draws)
    assert expected_loss(found, draws) < best_draw


def test_start_is_never_made_worse_and_the_seed_fixes_the_result():
    rng = np.random.default_rng(1)
    draws = _random_draws(rng, 40, 60, 4)
    start = draws[3]
    found = minimize_expected_loss(draws, n_runs=0, start=start)
    assert expected_loss(found, draws) <= expected_loss(start, draws) + 1e-12
    again = minimize_expected_loss(draws, random_state=5)
    assert_array_equal(again, minimize_expected_loss(draws, random_state=5))
    # labels are numbered by first appearance, whatever the draws' labels
    shifted = minimize_expected_loss(draws * 7 + 3, random_state=5)
    assert_array_equal(shifted, again)


def test_max_clusters_bounds_the_result():
    draws = np.tile(np.arange(8), (3, 1))
    assert len(np.unique(minimize_expected_loss(draws, random_state=0))) == 8
    found = minimize_expected_loss(draws, max_clusters=3, random_state=0)
    assert len(np.unique(found)) <= 3


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_fitted_draws_give_a_point_estimate_no_worse_than_labels_():
    X = np.concatenate(
        [np.random.default_rng(0).normal(c, 1.0, (40, 2)) for c in (-4, 0, 4)]
    )
    model = DPGaussianClustering(n_iter=30, burn_in=10, n_chains=2, random_state=0).fit(
        X
    )
    found = minimize_expected_loss(
        model.label_samples_, start=model.labels_, random_state=0
    )
    draws = model.label_samples_
    assert expected_loss(found, draws) <= expected_loss(model.labels_, draws)


def test_edge_cases():
    assert minimize_expected_loss(np.zeros((3, 0), int)).shape == (0,)
    assert_array_equal(minimize_expected_loss([[0, 0, 0]]), [0, 0, 0])
    assert_array_equal(minimize_expected_loss([[4, 2, 9]]), [0, 1, 2])
    assert expected_loss(np.zeros(0, int), np.zeros((2, 0), int)) == 0.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"loss": "l2"}, "loss must be one of"),
        ({"n_runs": -1}, "n_runs must be at least 0"),
        ({"n_runs": 0}, "n_runs must be at least 1 when start is None"),
        ({"n_runs": 2.5}, "n_runs must be an integer"),
        ({"max_clusters": 0}, "max_clusters must be at least 1"),
        ({"max_sweeps": True}, "max_sweeps must be an integer"),
        ({"start": [0, 1]}, "start has 2 labels, but label_samples has 3"),
        ({"start": [0, -1, 2]}, "non-negative"),
    ],
)
def test_bad_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        minimize_expected_loss([[0, 1, 1], [0, 0, 1]], **kwargs)


def test_bad_draws_are_refused():
    with pytest.raises(ValueError, match="2-D"):
        minimize_expected_loss([0, 1])
    with pytest.raises(ValueError, match="integer labels"):
        minimize_expected_loss([[0.5, 1.0]])
    with pytest.raises(ValueError, match="labels has 2 entries"):
        expected_loss([0, 1], [[0, 1, 1]])
    with pytest.raises(ValueError, match="loss must be one of"):
        expected_loss([0, 1], [[0, 1]], loss="l2")


def test_a_count_table_past_its_limit_is_refused(monkeypatch):
    # 20,000 near-singletons in 10 distinct draws asked 7.5 GiB a thread; here
    # the limit is patched: 2 x (2 + 3) int32 = 40 bytes pass, 41 do not
    from rankmix.metrics import _point_estimate

    draws = [[0, 0, 1], [0, 1, 2]]
    monkeypatch.setattr(_point_estimate, "MAX_TABLE_BYTES", 40)
    minimize_expected_loss(draws, max_clusters=2, random_state=0)
    monkeypatch.setattr(_point_estimate, "MAX_TABLE_BYTES", 39)
    with pytest.raises(ValueError, match="max_clusters=2 x 5 .* int32 per thread"):
        minimize_expected_loss(draws, max_clusters=2, random_state=0)


def test_the_result_does_not_depend_on_the_number_of_threads():
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(4)
    draws = _random_draws(rng, 50, 300, 5)
    results = []
    for n_threads in thread_counts(1, 2, 3):
        with threadpool_limits(limits=n_threads, user_api="openmp"):
            results.append(
                minimize_expected_loss(draws, n_runs=5, start=draws[0], random_state=0)
            )
    for labels in results[1:]:
        assert_array_equal(labels, results[0])


def peak_bytes(compute):
    """Peak bytes that ``compute()`` allocates, traced by tracemalloc (NumPy
    reports its buffers to it)."""
    import tracemalloc

    tracemalloc.start()
    try:
        compute()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# 20 draws of 50,000 points, a byte a label, as the estimators keep them
DRAWS = np.random.default_rng(0).integers(0, 5, size=(20, 50_000)).astype(np.int8)


@pytest.mark.parametrize(
    "compute, most",
    [
        # coded in int32, every distinct draw widened to int64 at once: 16.4
        (lambda: expected_loss(DRAWS[0], DRAWS), 4),
        # searched an int32 copy of the distinct draws' int32 codes: 8.6
        (lambda: minimize_expected_loss(DRAWS, n_runs=1, max_sweeps=1), 3),
    ],
    ids=["expected_loss", "minimize_expected_loss"],
)
def test_the_point_estimates_copy_the_draws_at_most_a_few_times(compute, most):
    assert peak_bytes(compute) <= most * DRAWS.nbytes


def test_the_search_reads_codes_of_any_width_alike():
    # the search reads the draws' codes as int8, int16 or int32 (the smallest
    # that holds them): the same clustering and loss from each
    from rankmix._partition_search import search_partition

    rng = np.random.default_rng(3)
    # every draw numbered 0..L-1 by first appearance, as _check_labels codes it
    codes = np.stack([canonical_labels(row) for row in rng.integers(0, 6, (7, 40))])
    n_labels = codes.max(axis=1) + 1
    weights = np.full(len(codes), 1 / len(codes))
    orders = np.stack([rng.permutation(40) for _ in range(3)]).astype(np.int32)
    found = [
        search_partition(
            np.ascontiguousarray(codes, dtype=dtype),
            n_labels.astype(np.intp),
            weights,
            orders,
            3,
            None,
            False,
            12,
            50,
        )
        for dtype in (np.int8, np.int16, np.int32)
    ]
    for labels, loss in found[1:]:
        assert_array_equal(labels, found[0][0])
        assert loss == found[0][1]
