# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""rankmix.plotting: each plot draws the model's arrays, on the given ax, and
refuses what it cannot draw."""

import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rankmix import DPGaussianClustering, DPMallowsClustering  # noqa: E402
from rankmix.datasets import make_mallows_mixture  # noqa: E402
from rankmix.metrics import coclustering_matrix  # noqa: E402
from rankmix.plotting import (  # noqa: E402
    plot_coclustering,
    plot_n_clusters,
    plot_rank_heatmap,
    plot_trace,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def rankings():
    X = make_mallows_mixture(3, 20, n_items=6, t=4, random_state=0)[0]
    # a few shorter rankings, so that the columns of the heat map differ
    X[::7, 2:] = -1
    model = DPMallowsClustering(n_iter=40, burn_in=15, random_state=0).fit(X)
    return model, X


@pytest.fixture(scope="module")
def vectors():
    X = np.random.default_rng(0).normal(size=(25, 2))
    X[:12] += 6
    model = DPGaussianClustering(n_iter=30, burn_in=10, n_chains=3, random_state=0)
    return model.fit(X)


# -- plot_rank_heatmap -------------------------------------------------------------


def test_rank_heatmap_draws_member_frequencies_in_central_order(rankings):
    model, X = rankings
    for cluster in range(model.n_clusters_):
        members = X[model.labels_ == cluster]
        centre = model.central_rankings_[cluster]
        # plain reference: P(item i at rank j) among the members, a loop per cell
        expected = np.zeros((model.n_items_, X.shape[1]))
        for a, item in enumerate(centre):
            for j in range(X.shape[1]):
                expected[a, j] = np.mean(members[:, j] == item)
        names = [f"item {i}" for i in range(model.n_items_)]
        _, ax = plt.subplots()
        returned = plot_rank_heatmap(model, X, cluster=cluster, item_names=names, ax=ax)
        assert returned is ax
        assert_allclose(ax.images[0].get_array(), expected)
        assert [t.get_text() for t in ax.get_yticklabels()] == [
            f"item {i}" for i in centre
        ]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2", "3", "4"]


def test_rank_heatmap_defaults_to_the_largest_cluster(rankings):
    model, X = rankings
    largest = int(np.argmax(np.bincount(model.labels_)))
    default = plot_rank_heatmap(model, X).images[0].get_array()
    chosen = plot_rank_heatmap(model, X, cluster=largest).images[0].get_array()
    assert_array_equal(default, chosen)
    # full columns sum to one; a column with padded rows sums to the share
    # of members that rank that far
    members = X[model.labels_ == largest]
    assert_allclose(default.sum(axis=0), (members >= 0).mean(axis=0))


def test_rank_heatmap_titles_the_cluster_by_its_rankings(rankings):
    # an integer count, and its share of all rankings, counts included (the
    # title read "100.0 rankings", and its share was out of the distinct rows)
    model, X = rankings
    counts = np.arange(len(X)) % 4  # 90 rankings in all
    sizes = np.bincount(model.labels_, weights=counts).astype(int)
    title = plot_rank_heatmap(model, X, cluster=0, sample_weight=counts).get_title()
    assert title == f"Cluster 0: {sizes[0]} rankings ({sizes[0] / counts.sum():.0%})"
    size = int(np.sum(model.labels_ == 0))
    title = plot_rank_heatmap(model, X, cluster=0).get_title()
    assert title == f"Cluster 0: {size} rankings ({size / len(X):.0%})"


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"cluster": -1}, "cluster must be an integer"),
        ({"cluster": 1.0}, "cluster must be an integer"),
        ({"cluster": 10**6}, "cluster must be an integer"),
        ({"item_names": ["a", "b"]}, "item_names must name the 6 items"),
    ],
)
def test_rank_heatmap_refuses_bad_arguments(rankings, kwargs, match):
    model, X = rankings
    with pytest.raises(ValueError, match=match):
        plot_rank_heatmap(model, X, **kwargs)


def test_rank_heatmap_refuses_other_data_and_estimators(rankings, vectors):
    model, X = rankings
    with pytest.raises(ValueError, match="must be the 60 rankings"):
        plot_rank_heatmap(model, X[:10])
    with pytest.raises(TypeError, match="takes a fitted DPMallowsClustering"):
        plot_rank_heatmap(vectors, X)
    with pytest.raises(Exception, match="not fitted"):
        plot_rank_heatmap(DPMallowsClustering(), X)


# -- plot_coclustering -------------------------------------------------------------


def test_coclustering_of_a_model_is_ordered_by_labels(vectors):
    _, ax = plt.subplots()
    assert plot_coclustering(vectors, ax=ax) is ax
    labels = vectors.labels_
    sizes = np.bincount(labels)
    # largest cluster first, stable within a cluster
    size_rank = np.empty_like(sizes)
    size_rank[np.argsort(-sizes, kind="stable")] = np.arange(len(sizes))
    order = np.argsort(size_rank[labels], kind="stable")
    expected = coclustering_matrix(vectors.label_samples_)[np.ix_(order, order)]
    assert_allclose(ax.images[0].get_array(), expected)
    # one red line per boundary between clusters, each way
    assert len(ax.lines) == 2 * (len(sizes) - 1)


def test_coclustering_orders_and_subsets(vectors):
    full = coclustering_matrix(vectors.label_samples_)
    data_order = plot_coclustering(vectors, order=None).images[0].get_array()
    assert_allclose(data_order, full)
    explicit = [5, 0, 20]
    shown = plot_coclustering(vectors, order=explicit).images[0].get_array()
    assert_allclose(shown, full[np.ix_(explicit, explicit)])
    rows = np.arange(0, 25, 3)
    subset = plot_coclustering(vectors, rows=rows, order=None).images[0].get_array()
    assert_allclose(subset, full[np.ix_(rows, rows)])
    # another point estimate orders the samples instead of labels_
    other = np.arange(25) % 2
    by_other = plot_coclustering(vectors, labels=other).images[0].get_array()
    order = np.r_[np.arange(0, 25, 2), np.arange(1, 25, 2)]  # 13 even ones first
    assert_allclose(by_other, full[np.ix_(order, order)])


def test_coclustering_of_an_array_takes_labels_or_the_vi_medoid():
    draws = np.array([[0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 1, 1], [1, 1, 1, 0]])
    medoid = plot_coclustering(draws).images[0].get_array()
    assert_allclose(medoid, coclustering_matrix(draws))  # draw 0 is in data order
    given = plot_coclustering(draws, labels=[1, 0, 0, 0]).images[0].get_array()
    order = [1, 2, 3, 0]
    assert_allclose(given, coclustering_matrix(draws)[np.ix_(order, order)])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"order": "size"}, 'order must be "labels"'),
        ({"order": [0, 1], "rows": [0, 1]}, "either as order"),
        ({"labels": [0, 1]}, "labels must have one entry per sample"),
        ({"rows": [0, 99]}, r"rows\[1\] = 99 is out of range"),
        # the argument the user gave is named
        ({"order": [0, 99]}, r"order\[1\] = 99 is out of range"),
    ],
)
def test_coclustering_refuses_bad_arguments(kwargs, match):
    draws = np.zeros((3, 4), dtype=int)
    with pytest.raises(ValueError, match=match):
        plot_coclustering(draws, **kwargs)


def test_plots_refuse_an_ax_that_is_not_axes():
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None"):
        plot_coclustering(np.zeros((3, 4), dtype=int), ax="x")


def test_coclustering_refuses_bad_labels_with_a_model_and_bad_draws(vectors):
    with pytest.raises(ValueError, match="labels must have one entry per sample"):
        plot_coclustering(vectors, labels=vectors.labels_[:-1])
    with pytest.raises(ValueError, match="integer labels"):
        plot_coclustering(np.zeros((2, 3)))
    with pytest.raises(TypeError, match="takes a fitted BaseDPMixture"):
        plot_coclustering(object.__new__(type("Other", (), {"fit": None})))


# -- plot_trace --------------------------------------------------------------------


def test_trace_draws_every_chain_with_burn_in_and_rhat(vectors):
    axes = plot_trace(vectors)
    assert len(axes) == 2
    for ax, name in zip(axes, ("n_clusters", "log_joint")):
        values = vectors.trace_[name]
        assert len(ax.lines) == vectors.n_chains
        for line, trace in zip(ax.lines, values):
            assert_array_equal(line.get_xdata(), np.arange(1, vectors.n_iter + 1))
            assert_array_equal(line.get_ydata(), trace)
        (span,) = ax.patches
        # a Rectangle since matplotlib 3.9, a Polygon before
        if hasattr(span, "get_width"):
            x = [span.get_x(), span.get_x() + span.get_width()]
        else:
            x = span.get_xy()[:, 0]
        assert (min(x), max(x)) == (0.5, vectors.burn_in + 0.5)
        assert ax.get_title() == f"{name}, R-hat = {vectors.rhat_[name]:.3f}"


def test_trace_accepts_ax_and_a_single_name(vectors):
    _, ax = plt.subplots()
    (returned,) = plot_trace(vectors, "log_joint", ax=ax)
    assert returned is ax
    _, pair = plt.subplots(1, 2)
    assert list(plot_trace(vectors, ax=pair)) == list(pair)


def test_trace_refuses_bad_arguments(vectors):
    with pytest.raises(ValueError, match="names must be keys of trace_"):
        plot_trace(vectors, names=("n_clusters", "theta"))
    with pytest.raises(ValueError, match="one Axes per name"):
        plot_trace(vectors, ax=plt.subplots()[1])
    with pytest.raises(TypeError, match="takes a fitted BaseDPMixture"):
        plot_trace(np.zeros((2, 3)))
    with pytest.raises(Exception, match="not fitted"):
        plot_trace(DPGaussianClustering())


# -- plot_n_clusters ---------------------------------------------------------------


def test_n_clusters_bars_are_the_draws_frequencies(vectors):
    _, ax = plt.subplots()
    assert plot_n_clusters(vectors, ax=ax) is ax
    counts = np.array([len(np.unique(draw)) for draw in vectors.label_samples_])
    values, frequencies = np.unique(counts, return_counts=True)
    bars = ax.patches
    assert_allclose([b.get_x() + b.get_width() / 2 for b in bars], values)
    assert_allclose([b.get_height() for b in bars], frequencies / len(counts))
    (marker,) = ax.lines
    assert_array_equal(marker.get_xdata(), [vectors.n_clusters_] * 2)


def test_n_clusters_of_an_array_and_bad_input():
    draws = np.array([[0, 5, 0], [7, 7, 7], [0, 1, 2], [3, 1, 1]])  # K = 2, 1, 3, 2
    ax = plot_n_clusters(draws)
    assert_allclose([b.get_height() for b in ax.patches], [0.25, 0.5, 0.25])
    assert not ax.lines
    with pytest.raises(ValueError, match="2-D array"):
        plot_n_clusters(np.zeros(3, dtype=int))
    with pytest.raises(Exception, match="not fitted"):
        plot_n_clusters(DPGaussianClustering())


def test_missing_matplotlib_names_the_plot_extra(vectors, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"rankmix\[plot\]"):
        plot_n_clusters(vectors)


def _plot_some_coclustering(draws):
    return plot_coclustering(draws, rows=np.arange(100))


@pytest.mark.parametrize("plot", [plot_n_clusters, _plot_some_coclustering])
def test_the_plots_of_draws_copy_them_at_most_three_times(plot):
    # the plots coded the estimators' int8 draws in int32 to check them or to
    # count their clusters: 17.8 and 4.8 times the draws' bytes at peak
    from .test_point_estimate import DRAWS, peak_bytes

    assert peak_bytes(lambda: plot(DRAWS)) <= 3 * DRAWS.nbytes
    plt.close("all")
