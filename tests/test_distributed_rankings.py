"""The Mallows sub-cluster chain with its rankings on Dask workers.

The chain reads its rankings only through the operations of ``_mallows_rows``,
whose results depend on the rows and the parameters alone, and the statistics of
a set of rankings merge exactly: the same chain with its rankings held elsewhere
(``_distributed_rankings.DaskRankings``) draws exactly what it draws in process.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from rankmix import DPMallowsClustering, _mallows, _mallows_chain, _subcluster_chain
from rankmix._distributed_rankings import DaskRankings
from rankmix._kernels import merge_statistics, ranking_statistics
from rankmix._mallows_chain import MallowsChain
from rankmix._validation import check_rankings
from rankmix.datasets import make_mallows_mixture

from .test_distributed import (
    SerialClient,
    _count_calls,
    assert_no_actor_left,
    assert_same_sweeps,
    cycle_collector_off,
)

da = pytest.importorskip("dask.array")


def two_groups(n=300, n_items=8, seed=0):
    """Top-5 and shorter rankings of 8 items, half of them starting 0, 1, 2."""
    rng = np.random.default_rng(seed)
    X = np.array([rng.permutation(n_items)[:5] for _ in range(n)])
    X[: n // 2] = [
        [0, 1, 2, *rng.permutation(np.arange(3, n_items))[:2]] for _ in range(n // 2)
    ]
    X[2 * n // 3 :, 4] = -1  # top-4
    X[5 * n // 6 :, 3] = -1  # top-3
    return X


def assert_same_statistics(a, b):
    for field in a._fields:
        assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        assert getattr(a, field).dtype == getattr(b, field).dtype, field


@pytest.mark.parametrize("n_parts", [1, 2, 7])
def test_merged_statistics_are_those_of_all_the_rankings(n_parts):
    # disjoint sets of rankings in any order; their merged statistics equal, array
    # for array, those of all the rankings at once
    X = check_rankings(two_groups(200, seed=n_parts))
    rng = np.random.default_rng(n_parts)
    members = rng.permutation(len(X))[:150]
    parts = np.array_split(members, n_parts)
    whole = ranking_statistics(X, np.sort(members), 8)
    merged = merge_statistics(
        [ranking_statistics(X, part, 8) for part in parts] + [None], X.shape[1]
    )
    assert_same_statistics(whole, merged)
    # a single ranking's statistics merged alone are its own
    one = ranking_statistics(X, np.array([3]), 8)
    assert_same_statistics(one, merge_statistics([one], X.shape[1]))
    with pytest.raises(ValueError, match="5 stages merged as 4"):
        merge_statistics([one], 4)
    # statistics from another process are checked before they are read:
    # pairs that name an item their statistics do not hold, rows past their
    # pairs, going back, or not a row per stage and item, items repeated or out
    # of order (more items than the union's room, or parts mapped wrongly), or
    # arrays of another dtype (an int64 first item past 2^32 must not wrap)
    rows = one.row_start
    items = whole.items
    malformed = [
        dict(pair_first=one.pair_first + len(one.items)),
        dict(pair_first=one.pair_first - len(one.items)),
        dict(row_start=rows + 1),
        dict(row_start=rows[::-1]),
        dict(row_start=rows[:-1]),
        dict(row_start=np.append(rows, rows[-1])),
        dict(row_start=np.where(np.arange(len(rows)) == 5, rows[-1] + 1, rows)),
        dict(pair_first=one.pair_first.astype(np.int64) + 2**32),
        dict(row_start=rows.astype(np.float64)),
        dict(pair_count=one.pair_count.astype(np.int64)),
        dict(pair_count=one.pair_count.astype(np.float64)),
        # counts below one: a negative count could wrap a merged sum back
        dict(pair_count=one.pair_count - 1),
        dict(pair_count=-one.pair_count),
        dict(items=-one.items - 1),
    ]
    for change in malformed:
        with pytest.raises(ValueError, match="malformed ranking statistics"):
            merge_statistics([whole, one._replace(**change)], X.shape[1])
    for bad_items in (np.repeat(items[:1], len(items)), items[::-1].copy()):
        with pytest.raises(ValueError, match="malformed ranking statistics"):
            merge_statistics([one, whole._replace(items=bad_items)], X.shape[1])
    # the counts are int32: a merge past 2^31 - 1 rankings is refused, not wrapped
    most = one._replace(pair_count=np.full_like(one.pair_count, 2**31 - 1))
    assert len(one.pair_count) and merge_statistics([most], X.shape[1]) is not None
    with pytest.raises(ValueError, match="more than 2147483647 rankings"):
        merge_statistics([most, one], X.shape[1])


def test_merges_of_random_parts_are_the_statistics_of_their_union():
    # random rankings of random lengths cut into 1 to 8 parts (some empty), and
    # merges of merges: a row comes from one part (copied), two (merged side by
    # side) or more (by the heap), and each way gives ranking_statistics' arrays
    rng = np.random.default_rng(3)
    for _ in range(150):
        n = int(rng.integers(1, 30))
        T = int(rng.integers(1, min(n, 10) + 1))
        N = int(rng.integers(1, 50))
        X = np.full((N, T), -1, dtype=np.intp)
        for i in range(N):
            t = int(rng.integers(1, T + 1))
            X[i, :t] = rng.permutation(n)[:t]
        members = rng.permutation(N)
        cuts = np.sort(rng.integers(0, N + 1, size=int(rng.integers(0, 8))))
        parts = [ranking_statistics(X, np.sort(p), n) if len(p) else None
                 for p in np.split(members, cuts)]
        whole = ranking_statistics(X, np.sort(members), n)
        assert_same_statistics(whole, merge_statistics(parts, T))
        half = len(parts) // 2
        if any(parts[:half]) and any(parts[half:]):
            assert_same_statistics(whole, merge_statistics(
                [merge_statistics(parts[:half], T), merge_statistics(parts[half:], T)],
                T))


def make_chain(X, remote, seed, sequential_init):
    model = DPMallowsClustering(sampler="subcluster", n_items=8)
    X = model._prepare(X)
    return MallowsChain(
        np.empty((0, X.shape[1]), dtype=np.intp) if remote is not None else X,
        8, 1.0, model.nu, model.r_, model._log_prior_norm, False, True, 1, 1,
        3 if sequential_init else 1, np.random.PCG64(seed), alpha_prior=(1.0, 1.0),
        n_split_merge=3, sequential_init=sequential_init, subcluster=True,
        remote=remote,
    )  # fmt: skip


@pytest.mark.parametrize(
    "chunks, sequential_init, seed",
    # seed 15: the sequential start's label step empties a cluster (not the
    # last active one), closed before the parameters are drawn
    [(70, False, 4), (300, False, 4), (37, True, 4), (37, True, 15)],
)
def test_rankings_in_chunks_draw_what_rankings_in_process_draw(
    chunks, sequential_init, seed, monkeypatch
):
    # every sweep's labels, log joint, alpha and move counts, and the last
    # sweep's parameters; the sequential start from a sample of 50 of the 300
    # rankings included
    monkeypatch.setattr(_subcluster_chain, "SEQUENTIAL_SAMPLE", 50)
    X = two_groups()
    rows = DaskRankings(da.from_array(X, chunks=(chunks, 5)), SerialClient(), 8)
    asked = _count_calls(rows, "cluster_statistics", lambda *args: None)
    local = make_chain(X, None, seed, sequential_init)
    remote = make_chain(X, rows, seed, sequential_init)
    # the start's parameters from its clusters' statistics, asked once: the
    # clusters of the sequential start's label step come with its labels,
    # those it emptied closed
    assert len(asked) == 1
    assert_same_sweeps(local, remote, 30)
    # the moves ran: splits and merges were proposed, and from one cluster
    # splits were accepted
    counts = local.split_merge_counts
    assert counts["split_proposed"] > 0 and counts["merge_proposed"] > 0
    assert sequential_init or counts["split_accepted"] > 0
    for k, x in enumerate(local.snapshot()[1:3]):
        assert_array_equal(x, remote.snapshot()[1 + k])


def test_parameter_step_on_statistics_from_elsewhere_keeps_to_the_budget(
    monkeypatch,
):
    # under a budget of one byte the label step sends no statistics, and the
    # parameter step asks for them a cluster at a time (as many as fit the
    # budget), so that the client holds one cluster's, and updates each on
    # one thread; the chain with its rankings elsewhere still draws what the
    # one with them here draws
    monkeypatch.setattr(_mallows_chain, "PARALLEL_STATISTICS_BYTES", 1)
    X = two_groups()
    rows = DaskRankings(da.from_array(X, chunks=(70, 5)), SerialClient(), 8)
    local = make_chain(X, None, 4, False)
    remote = make_chain(X, rows, 4, False)
    asked = _count_calls(rows, "cluster_statistics", lambda labels, slots: len(slots))
    assert_same_sweeps(local, remote, 5)
    assert local.parameter_threads == remote.parameter_threads == 1
    assert len(asked) >= 5 and set(asked) == {1}


@pytest.mark.parametrize("budget", [None, 800, 0])
def test_proposals_read_their_rankings_and_run_here(budget, monkeypatch):
    # a sweep reads in one go the rankings its moves will read: the moves' own,
    # those of each proposal's two clusters where they hold at most
    # LAUNCH_PREFETCH_VALUES ranks (right until a move is accepted, after
    # which a proposal reads what it lacks) and those of the clusters of one or
    # two; a proposal's launch and decision then run here: no statistics,
    # densities or code totals asked of the rankings' holders. With room for
    # some proposals (800 ranks: clusters of at most 160 of these rankings) or
    # none, the others ask the holders; the draws are the same either way.
    if budget is not None:
        monkeypatch.setattr(_subcluster_chain, "LAUNCH_PREFETCH_VALUES", budget)
    X = two_groups()
    rows = DaskRankings(da.from_array(X, chunks=(70, 5)), SerialClient(), 8)
    local = make_chain(X, None, 4, False)
    remote = make_chain(X, rows, 4, False)
    asked = {
        name: _count_calls(rows, name, lambda *args: None)
        for name in ("statistics", "densities", "code_totals")
    }
    # the clusters' statistics come with the labels
    clusters_asked = _count_calls(rows, "cluster_statistics", lambda *args: None)
    reads = _count_calls(rows, "rows", len)
    read_once = quiet = 0
    for _ in range(25):
        before, counts = len(reads), remote.split_merge_counts
        assert_same_sweeps(local, remote, 1)
        moved = sum(
            remote.split_merge_counts[k] - (counts or {}).get(k, 0)
            for k in ("split_accepted", "merge_accepted")
        )
        # one read, then one a proposal after an accepted move (3 proposals),
        # then a singleton the singleton moves made themselves
        assert 1 <= len(reads) - before <= 1 + (3 if moved else 0) + 1
        quiet += not moved
        read_once += not moved and len(reads) - before == 1
    assert clusters_asked == []
    n_asked = sum(len(calls) for calls in asked.values())
    assert (n_asked == 0) == (budget is None)
    # no read ahead held more than the budget
    assert remote._most_read_ahead <= (2**20 if budget is None else budget)
    assert (remote._most_read_ahead > 0) == (budget != 0)
    # the clusters' rankings (100 and more) read ahead where there is room
    assert (max(reads) > 100) == (budget != 0)
    assert quiet >= 10 and read_once >= quiet // 2
    counts = local.split_merge_counts
    assert counts["split_accepted"] > 0 and counts["merge_proposed"] > 0


def test_proposals_past_the_budget_ask_for_one_set_at_a_time(monkeypatch):
    # no room to read a proposal's rankings, and a statistics budget of one
    # byte: a proposal's sides and union are not asked for together (they
    # would take gigabytes with full rankings of hundreds of items), but each
    # set when it is read, one a round trip; the draws are the same
    monkeypatch.setattr(_subcluster_chain, "LAUNCH_PREFETCH_VALUES", 0)
    monkeypatch.setattr(_mallows_chain, "PARALLEL_STATISTICS_BYTES", 1)
    X = two_groups()
    rows = DaskRankings(da.from_array(X, chunks=(70, 5)), SerialClient(), 8)
    local = make_chain(X, None, 4, False)
    remote = make_chain(X, rows, 4, False)
    asked = _count_calls(rows, "statistics", len)
    assert_same_sweeps(local, remote, 8)
    assert len(asked) > 8 and set(asked) == {1}
    counts = local.split_merge_counts
    assert counts["split_accepted"] > 0 and counts["merge_proposed"] > 0


def test_chain_refuses_rankings_elsewhere_of_another_shape():
    rows = DaskRankings(da.from_array(two_groups(), chunks=100), SerialClient(), 8)
    for width, n_items in [(4, 8), (5, 9)]:
        with pytest.raises(ValueError, match="5 stages of 8 items"):
            MallowsChain(
                np.empty((0, width), dtype=np.intp), n_items, 1.0, 1.0,
                np.ones(width), np.zeros(width), False, True, 1, 1, 1,
                np.random.PCG64(0), n_split_merge=1, subcluster=True, remote=rows,
            )  # fmt: skip


@pytest.mark.parametrize("fault", ["no item", "an item repeated", "items past n"])
def test_chain_refuses_malformed_statistics_from_elsewhere(fault, monkeypatch):
    # the clusters' statistics a worker sends are checked before the kernels
    # read them: a set of rankings ranks one item at least, its items are
    # distinct and below n (the chain's buffers hold n), so a worker that
    # sends more is refused, not read or written past the buffers
    X = two_groups()
    rows = DaskRankings(da.from_array(X, chunks=(70, 5)), SerialClient(), 8)
    sent = rows.cluster_statistics

    def malformed(labels, slots):
        good = sent(labels, slots)
        one = good[0]
        if fault == "no item":
            bad = one._replace(items=one.items[:0], counts=one.counts[:0],
                               row_start=one.row_start[:1],
                               pair_first=one.pair_first[:0],
                               pair_count=one.pair_count[:0])
        elif fault == "an item repeated":   # 16 items for a chain of 8
            twice = np.repeat(np.arange(8), 2)
            T = one.counts.shape[1]
            bad = one._replace(items=twice, counts=np.ones((16, T)),
                               row_start=np.zeros(16 * T + 1, dtype=np.intp),
                               pair_first=one.pair_first[:0],
                               pair_count=one.pair_count[:0])
        else:
            bad = one._replace(items=one.items + 8)
        return [bad] + list(good[1:])

    monkeypatch.setattr(rows, "cluster_statistics", malformed)
    with pytest.raises(ValueError, match="malformed ranking statistics"):
        make_chain(X, rows, 0, False).sweep(2)   # (the start reads them)


def test_rankings_of_a_dask_array_are_validated_where_they_are():
    client = SerialClient()
    X = two_groups()
    rows = DaskRankings(da.from_array(X, chunks=(64, 2)), client, None)
    assert rows.shape == (300, 5)  # columns joined, the longest ranking's length
    assert rows.n_items == 8
    assert_array_equal(rows.lengths(), np.count_nonzero(X >= 0, axis=1))
    assert_array_equal(rows.rows([299, 0, 150]), X[[299, 0, 150]])
    # padding columns are cut, as check_training_rankings cuts them
    padded = np.hstack([X[:, :3], -np.ones((300, 2), dtype=int)])
    assert DaskRankings(da.from_array(padded, chunks=50), client, 10).shape == (300, 3)
    # a fault names the row of X, the first in row order
    bad = X.copy()
    bad[250, 1] = bad[250, 0]
    bad[123, 2] = 9
    with pytest.raises(ValueError, match=r"Row 123 of X holds item 9, but n_items=8"):
        DaskRankings(da.from_array(bad, chunks=50), client, 8)
    bad[123, 2] = bad[123, 0]
    with pytest.raises(ValueError, match="Row 123 of X ranks item"):
        DaskRankings(da.from_array(bad, chunks=50), client, None)
    with pytest.raises(ValueError, match="at least one row"):
        DaskRankings(da.from_array(X[:0], chunks=50), client, None)
    # whether item 0 is in a ranking, over the chunks (the phantom-item warning)
    assert rows.holds_item_zero
    shifted = da.from_array(np.where(X >= 0, X + 1, -1), chunks=64)
    one_based = DaskRankings(shifted, client, None)
    assert not one_based.holds_item_zero and one_based.n_items == 9


def test_dask_mallows_fit_of_one_ranking(monkeypatch):
    # a chain of one ranking makes no split-merge proposal: nothing to read ahead
    monkeypatch.setattr(_mallows, "active_client", SerialClient)
    X = two_groups()[:1]
    params = dict(sampler="subcluster", n_iter=4, burn_in=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        there = DPMallowsClustering(**params).fit(da.from_array(X, chunks=1))
        here = DPMallowsClustering(**params).fit(X)
    assert_array_equal(there.label_samples_, here.label_samples_)
    assert there.n_clusters_ == 1


def test_dask_mallows_fit_warns_of_a_phantom_item_zero(monkeypatch):
    monkeypatch.setattr(_mallows, "active_client", SerialClient)
    one_based = np.where(two_groups() >= 0, two_groups() + 1, -1)
    params = dict(sampler="subcluster", n_iter=2, burn_in=1, random_state=0)
    X = da.from_array(one_based, chunks=100)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        with pytest.warns(UserWarning, match="Item 0 appears in no ranking"):
            DPMallowsClustering(**params).fit(X)
        warnings.filterwarnings("error", "Item 0 appears")
        DPMallowsClustering(n_items=9, **params).fit(X)


def test_dask_mallows_fit_draws_what_an_in_process_fit_draws(dask_client):
    # 2 worker processes, 5 chunks, two chains side by side, n_items inferred
    X, y, _ = make_mallows_mixture(
        n_clusters=3, n_per_cluster=100, n_items=9, t=5, theta=1.0, random_state=1
    )
    params = dict(
        sampler="subcluster", n_iter=12, burn_in=4, n_chains=2, n_jobs=2,
        random_state=0,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        here = DPMallowsClustering(**params).fit(X)
        there = DPMallowsClustering(**params).fit(da.from_array(X, chunks=(64, 5)))
    assert_array_equal(here.label_samples_, there.label_samples_)
    assert_array_equal(here.trace_["log_joint"], there.trace_["log_joint"])
    assert here.n_items_ == there.n_items_
    assert here.n_features_in_ == there.n_features_in_
    assert_array_equal(here.predict(X), there.predict(X))
    assert_array_equal(here.score_samples(X), there.score_samples(X))
    assert adjusted_rand_score(y, there.labels_) > 0.8  # 0.90 measured
    # the pointwise log-likelihood reads the rankings back from the workers
    pytest.importorskip("arviz")  # in the test extra
    assert_array_equal(
        here.to_inference_data().log_likelihood["x"].values,
        there.to_inference_data().log_likelihood["x"].values,
    )


def test_dask_mallows_fits_leave_no_actor_on_the_workers(dask_client):
    # whether the fit ends, or is refused after the rankings went to the
    # workers (here by its alpha prior), no actor stays there; the cycle
    # collector is held off, so that only the fit's release can take them away
    X, _, _ = make_mallows_mixture(
        n_clusters=2, n_per_cluster=60, n_items=7, t=4, theta=1.0, random_state=3
    )
    X = da.from_array(X, chunks=(40, 4))
    params = dict(sampler="subcluster", n_iter=4, burn_in=1, random_state=0)
    with cycle_collector_off():
        with pytest.raises(ValueError, match="alpha_prior"):
            DPMallowsClustering(alpha_prior=(1.0, 1e-300), **params).fit(X)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            DPMallowsClustering(**params).fit(X)
        assert_no_actor_left(dask_client)


def test_dask_mallows_fit_refuses_what_it_cannot_do(monkeypatch):
    monkeypatch.setattr(_mallows, "active_client", SerialClient)
    X = da.from_array(two_groups(), chunks=100)
    with pytest.raises(ValueError, match="sampler='subcluster'"):
        DPMallowsClustering().fit(X)  # the default, Slice-Gibbs
    with pytest.raises(ValueError, match="sample_weight"):
        DPMallowsClustering(sampler="subcluster").fit(X, sample_weight=np.ones(300))
    with pytest.raises(ValueError, match="warm_start"):
        DPMallowsClustering(sampler="subcluster", warm_start=True).fit(X)
    first = int(np.argmax((two_groups() == 7).any(axis=1)))
    message = f"Row {first} of X holds item 7, but n_items=7"
    with pytest.raises(ValueError, match=message):
        DPMallowsClustering(sampler="subcluster", n_items=7).fit(X)
