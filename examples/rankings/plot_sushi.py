"""
===========================================
Sushi tastes, and how sure the posterior is
===========================================

Kamishima (2003) asked 5,000 people to rank 10 kinds of sushi from the one
they like best to the one they like least. Do they share one taste with
individual noise, or are there distinct tastes? A Dirichlet-process mixture of
Mallows models answers without being told how many tastes to look for. Its
posterior draws also say how sure that answer is. If two people fall in the
same cluster in nearly every draw, the model is sure that they share a taste.
If they do so in only a quarter of the draws, it is not.

:func:`~rankmix.datasets.fetch_sushi` downloads PrefLib's copy of the data once
into ``~/rankmix_data``, or into the folder named by ``RANKMIX_DATA``, and
corrects its item labels. Kamishima's terms forbid redistributing the data, so
each user downloads their own copy.

The quick run fits 2,000 of the rankings with 100 sweeps per chain. Set
``RANKMIX_EXAMPLES_FULL=1`` for all 5,000 and 400 sweeps per chain.
"""

# %%
# The rankings
# ------------
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPMallowsClustering
from rankmix.datasets import fetch_sushi
from rankmix.metrics import expected_loss, minimize_expected_loss
from rankmix.plotting import (
    plot_coclustering,
    plot_n_clusters,
    plot_rank_heatmap,
    plot_trace,
)

FULL = os.environ.get("RANKMIX_EXAMPLES_FULL", "0") == "1"
N_RANKINGS = None if FULL else 2000
N_ITER = 400 if FULL else 100

sushi = fetch_sushi()
names = [name.split(" (")[1].rstrip(")") for name in sushi.item_names]
n_items = sushi.n_items

# Position of each sushi in each ranking (0 = best).
positions = np.argsort(sushi.data, axis=1)
mean_rank = positions.mean(axis=0) + 1
by_taste = np.argsort(mean_rank)  # the sushi from most to least liked overall
print(f"{len(sushi.data)} complete rankings of {n_items} sushi; mean rank (1 = best):")
for item in by_taste:
    print(f"  {names[item]:14s} {mean_rank[item]:.2f}")

# %%
# Fit
# ---
# The prior is the default one. ``thin=1`` keeps every sweep after burn-in, so
# that the co-clustering matrix below averages over more draws.
rng = np.random.RandomState(0)
X = sushi.data[rng.permutation(len(sushi.data))[:N_RANKINGS]]
model = DPMallowsClustering(n_iter=N_ITER, burn_in=N_ITER // 2, thin=1, random_state=0)
start = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ConvergenceWarning)
    model.fit(X)
print(
    f"{len(X)} rankings, 2 chains x {model.n_iter_} sweeps in "
    f"{time.perf_counter() - start:.1f} s: {model.n_clusters_} clusters"
)
for warning in caught:  # say so if the two chains disagree
    if issubclass(warning.category, ConvergenceWarning):
        print("ConvergenceWarning:", str(warning.message).split(". ")[0])
    else:
        warnings.warn_explicit(
            warning.message, warning.category, warning.filename, warning.lineno
        )
# The kept draws of each chain, and how many clusters each has.
draws_per_chain = np.split(model.label_samples_, model.n_chains)
for chain, draws in enumerate(draws_per_chain, start=1):
    counts = [len(np.unique(draw)) for draw in draws]
    print(
        f"chain {chain}: {len(draws)} draws with {min(counts)} to {max(counts)} "
        f"clusters (median {np.median(counts):.0f})"
    )

# %%
# The number of clusters sweep by sweep in each chain (burn-in shaded, R-hat
# in the title), and its posterior over the kept draws of both chains; the
# dashed line is the number of clusters of ``labels_``.
fig, (ax_trace, ax_k) = plt.subplots(1, 2, figsize=(10, 3.4))
plot_trace(model, "n_clusters", ax=ax_trace)
plot_n_clusters(model, ax=ax_k)
fig.tight_layout()

# %%
# The tastes
# ----------
# Each row is a cluster with at least 2% of the people, largest first. Each
# column is a sushi, in the order of the whole sample's mean rank. The number
# in a cell is the sushi's rank in the cluster's central ranking. Green is liked
# and red is disliked. theta_1 is the cluster's dispersion at the first rank.
#
# Fatty tuna is first or second in most of the large clusters, and cucumber
# roll and egg are near the bottom of most. The tastes split most over sea
# urchin and salmon roe: some clusters put both in their top three, and others
# put them last. Smaller clusters put shrimp, sea eel or egg first. Every
# theta_1 is below 1, so even within a cluster people's first choices vary a
# lot.
sizes = np.bincount(model.labels_)
order = np.argsort(-sizes, kind="stable")
shown = order[sizes[order] >= 0.02 * len(X)]
rank_in_centre = np.argsort(model.central_rankings_, axis=1) + 1
table = rank_in_centre[np.ix_(shown, by_taste)]

fig, ax = plt.subplots(figsize=(9, 0.5 * len(shown) + 1.8))
image = ax.imshow(table, cmap="RdYlGn_r", vmin=1, vmax=n_items, aspect="auto")
for row in range(table.shape[0]):
    for col in range(table.shape[1]):
        ax.text(col, row, table[row, col], ha="center", va="center", fontsize=9)
ax.set_xticks(range(n_items), [names[i] for i in by_taste], rotation=35, ha="right")
ax.set_yticks(
    range(len(shown)),
    [f"{sizes[k] / len(X):.0%}, theta_1 = {model.thetas_[k, 0]:.2f}" for k in shown],
)
ax.set_ylabel("cluster (share of people)")
fig.colorbar(image, ax=ax, label="rank in the central ranking")
ax.set_title("Central ranking of each cluster")
fig.tight_layout()

for k in shown:
    top = ", ".join(names[i] for i in model.central_rankings_[k, :3])
    bottom = ", ".join(names[i] for i in model.central_rankings_[k, -2:])
    print(f"{sizes[k] / len(X):4.0%}  best: {top}; worst: {bottom}")

# %%
# Within a cluster
# ----------------
# A central ranking is one ranking; the members of a cluster spread around it.
# For the two largest clusters, each cell is the share of the members that put
# the sushi of the row at the rank of the column. The rows follow the
# cluster's central ranking, so a bright diagonal means that the members
# agree with it. The diagonal is brightest at both ends and blurs in the
# middle: people agree more on what they like most and least than on the
# sushi in between (the theta_j of ``thetas_`` say the same).
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, k in zip(axes, order[:2]):
    plot_rank_heatmap(model, X, cluster=k, item_names=names, ax=ax)
fig.tight_layout()

# %%
# How sure is the posterior?
# --------------------------
# The co-clustering matrix gives, for every pair of people, the fraction of the
# posterior draws that put them in the same cluster. The draws are every kept
# sweep of both chains. Clusters are numbered anew in each draw, so these
# pairwise frequencies can be compared across draws and the cluster numbers
# cannot.
#
# On the left are 600 people taken at random, sorted by their cluster in
# ``labels_`` (the red lines separate the clusters). On the right the same
# frequencies are averaged over all pairs of people from two clusters. The
# clusters are those of the table above, in the same order. A dark diagonal
# cell means the draws keep that cluster together. An off-diagonal cell that
# is not white means two clusters are often merged, or share members.
#
# The matrix of all the people would take 8 bytes per pair (200 MB for 5,000
# people), hence ``rows=``; :func:`~rankmix.plotting.plot_coclustering` sorts
# them by cluster, largest first.
subset = rng.choice(len(X), size=min(600, len(X)), replace=False)

# Block averages over all the people: with n[a, c] the number of members of
# cluster a (of labels_) in cluster c of a draw, the pairs of a and b that the
# draw puts together number sum_c n[a, c] n[b, c].
members = np.eye(model.n_clusters_)[model.labels_][:, shown]  # (people, clusters)
together = np.zeros((len(shown), len(shown)))
for draw in model.label_samples_:
    counts = members.T @ np.eye(draw.max() + 1)[draw]
    together += counts @ counts.T
n_members = sizes[shown].astype(float)
pairs = np.outer(n_members, n_members)
np.fill_diagonal(pairs, n_members * (n_members - 1))  # pairs of distinct people
together[np.diag_indices_from(together)] -= n_members * len(model.label_samples_)
block = together / (pairs * len(model.label_samples_))

fig, (ax, ax_block) = plt.subplots(1, 2, figsize=(12, 5.4))
plot_coclustering(model, rows=subset, ax=ax)
ax.set_xlabel("600 people, sorted by cluster (largest first)")
ax.set_title("P(same cluster), person by person")

image = ax_block.imshow(block, cmap="magma_r", vmin=0, vmax=1)
for a in range(len(shown)):
    for b in range(len(shown)):
        value = block[a, b]
        ax_block.text(
            b,
            a,
            f"{value:.2f}"[1:] if value < 1 else "1",
            ha="center",
            va="center",
            fontsize=6.5,
            color="white" if value > 0.5 else "black",
        )
ticks = [f"{sizes[k] / len(X):.0%}" for k in shown]
ax_block.set_xticks(range(len(shown)), ticks, fontsize=8, rotation=90)
ax_block.set_yticks(range(len(shown)), ticks, fontsize=8)
ax_block.set_xlabel("cluster (share of people)")
ax_block.set_title("P(same cluster), cluster by cluster")
fig.colorbar(image, ax=ax_block, fraction=0.04, label="P(same cluster)")

certainty = np.diag(block)
print(
    "P(two members of a cluster shown are put together by a draw): "
    + ", ".join(f"{value:.2f}" for value in certainty)
)
off_diagonal = block[~np.eye(len(shown), dtype=bool)]
print(f"between two clusters: at most {off_diagonal.max():.2f}")

# %%
# A clustering of least expected loss
# -----------------------------------
# ``labels_`` is the kept draw closest, on average, to the other draws in
# variation of information (VI). A clustering no draw visited can be closer:
# :func:`~rankmix.metrics.minimize_expected_loss` searches for it, as SALSO does,
# starting from ``labels_``. On posteriors this diffuse the search finds a
# clustering with a lower expected VI that looks unlike any draw: in the quick
# run it merges the draws' groups into far fewer clusters; in the longer runs
# of ``benchmarks/bench_point_estimate.py`` it put half of the rankings into
# one cluster beside many small ones. ``labels_`` stays the default because
# its clusters have central rankings and thetas (those of its draw) and it
# costs nothing (see the user guide, "The point estimate").
start = time.perf_counter()
searched = minimize_expected_loss(
    model.label_samples_, start=model.labels_, random_state=0
)
seconds = time.perf_counter() - start
for name, labels in [("labels_ (medoid draw)", model.labels_), ("search", searched)]:
    print(
        f"{name:22s} {len(np.unique(labels)):3d} clusters, expected VI "
        f"{expected_loss(labels, model.label_samples_):.2f}"
    )
print(f"search time: {seconds:.1f} s")

# %%
# Reading the co-clustering
# -------------------------
# The posterior is far from sure who belongs with whom. Two members of one
# cluster of ``labels_`` are put together by only 20% to 38% of the draws, and
# members of two different clusters by up to 19%. The two chains of the quick
# run also disagree (the ConvergenceWarning): one holds 15 to 20 clusters, the
# other 16 to 23. The full run on all 5,000 rankings shows the same picture:
# 23 to 36 clusters, 11% to 37% within a cluster, and chains that still
# disagree after 400 sweeps (R-hat of the log joint 1.78). On a posterior this
# flat the exact sampler moves slowly; Beta-Gibbs's chains agree sooner, on an
# approximation that holds about 30 clusters on these 2,000 rankings where the
# exact posterior holds about 20, and predicts held-out rankings less well
# (``benchmarks/bench_mallows_real.py``).
#
# The tastes overlap. Many people's rankings fit two or three neighbouring
# tastes about equally well, and the draws move them between those. So
# ``labels_`` is one clustering among many that are nearly as probable. Read
# its clusters as directions of taste, such as "sea urchin and salmon roe
# first, or last", rather than as a partition of the people.
plt.show()
