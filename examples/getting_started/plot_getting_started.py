"""
===============
Getting started
===============

rankmix clusters rankings, and ordinary vectors, without being told how many
clusters there are. Its estimators follow the scikit-learn API: build one with
its parameters, call ``fit``, and read the fitted attributes, which end with an
underscore.

This example simulates rankings from three known clusters and lets
:class:`~rankmix.DPMallowsClustering` find them. It then reads what the fit
learned: the clusters, how sure the posterior is of their number, and each
cluster's central ranking. It assigns new rankings to the clusters and scores
them. Last, :class:`~rankmix.DPGaussianClustering` does the same for points in
the plane, in five lines. The whole example runs in a few seconds.
"""

# %%
# Rankings
# --------
# A ranking lists item ids best first. Here there are 20 items (ids 0 to 19),
# and each person ranks only their 10 favourites, a *top-10 ranking*. A data set
# is an integer array with one ranking per row; rankings shorter than the
# longest would be padded with -1.
#
# :func:`~rankmix.datasets.make_mallows_mixture` draws rankings from a mixture
# of Mallows models: each cluster has a central ranking, and its rankings are
# noisy copies of it. ``dataset=1`` takes the setting of Meila & Chen (2010):
# 20 items, top-10 rankings, dispersion theta = 1. We draw 100 rankings in each
# of 3 clusters, and keep a quarter of them aside to test the fit.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import train_test_split

from rankmix import DPGaussianClustering, DPMallowsClustering
from rankmix.datasets import make_mallows_mixture
from rankmix.plotting import plot_n_clusters

X, y, centres = make_mallows_mixture(
    n_clusters=3, n_per_cluster=100, dataset=1, random_state=0
)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.25, random_state=0
)
print(f"{X.shape[0]} rankings of length {X.shape[1]}; the first three:")
print(X[:3])

# %%
# Fit
# ---
# :class:`~rankmix.DPMallowsClustering` is a Dirichlet-process mixture of
# Mallows models: the number of clusters is not a parameter. ``fit`` runs two
# Markov chains of 200 sweeps each and keeps a draw of the clustering every
# second sweep after the first 100 (the defaults). Its point estimate is the
# kept draw that agrees best with all the others.
model = DPMallowsClustering(random_state=0).fit(X_train)
print(f"clusters found: {model.n_clusters_}")
print(f"share of the rankings in each: {np.round(model.weights_, 2)}")
print(
    f"adjusted Rand index to the true clusters: "
    f"{adjusted_rand_score(y_train, model.labels_):.3f}"
)

# %%
# How sure is the number of clusters?
# -----------------------------------
# ``label_samples_`` holds every kept draw of the clustering (one row per draw,
# the chains stacked). The number of distinct labels in each draw is a draw
# from the posterior of the number of clusters K.
K = np.array([len(np.unique(draw)) for draw in model.label_samples_])
values, counts = np.unique(K, return_counts=True)
for k, share in zip(values, counts / counts.sum()):
    print(f"P(K = {k} | data) = {share:.2f}")

# :func:`~rankmix.plotting.plot_n_clusters` draws these frequencies; the
# dashed line is the number of clusters of the point estimate ``labels_``.
fig, ax = plt.subplots(figsize=(4.5, 3))
plot_n_clusters(model, ax=ax)
fig.tight_layout()

# %%
# Central rankings
# ----------------
# Each cluster is summarised by its central ranking, the typical ranking of its
# members (``central_rankings_``, best first, all 20 items), and by its
# dispersion theta_j at each rank j (``thetas_``; a larger theta means that the
# members agree more closely with the central ranking; the true theta is 1).
# We print the top 10 of each central ranking beside the true centre of the
# cluster that most of its members come from.
for k in range(model.n_clusters_):
    true = np.bincount(y_train[model.labels_ == k]).argmax()
    print(f"cluster {k}: found {model.central_rankings_[k, :10]}")
    print(f"           true  {centres[true, :10]}")
    theta = np.round(model.thetas_[k, :3], 2)
    print(f"           theta at ranks 1 to 3: {theta}")

# %%
# New rankings: predict and score
# -------------------------------
# ``predict`` assigns each new ranking to a cluster of the point estimate, and
# ``predict_proba`` gives the probabilities of each cluster. ``score`` is the
# mean log-likelihood per ranking under the posterior predictive distribution:
# higher is better, and it compares models on the same held-out rankings. Here
# it is far above that of a uniformly random top-10 ranking of 20 items,
# log(10!/20!).
labels_test = model.predict(X_test)
print(
    f"adjusted Rand index on the held-out rankings: "
    f"{adjusted_rand_score(y_test, labels_test):.3f}"
)
print(f"held-out log-likelihood per ranking: {model.score(X_test):.2f}")
uniform = -np.log(np.arange(11, 21)).sum()  # log(10! / 20!)
print(f"uniform over top-10 rankings:        {uniform:.2f}")

# %%
# Vectors, in five lines
# ----------------------
# :class:`~rankmix.DPGaussianClustering` is the same engine for ordinary
# vectors: a Dirichlet-process mixture of Gaussians. Here it finds the four
# blobs of scikit-learn's :func:`~sklearn.datasets.make_blobs`.
X_blobs, y_blobs = make_blobs(n_samples=400, centers=4, random_state=3)
gauss = DPGaussianClustering(random_state=0).fit(X_blobs)
print(
    f"clusters found: {gauss.n_clusters_}, adjusted Rand index: "
    f"{adjusted_rand_score(y_blobs, gauss.labels_):.3f}"
)

fig, ax = plt.subplots(figsize=(4.5, 4))
ax.scatter(*X_blobs.T, c=gauss.labels_, s=10, cmap="tab10", vmax=9)
ax.plot(*gauss.means_.T, "kx", markersize=10, markeredgewidth=2)
ax.set_title(f"DPGaussianClustering: {gauss.n_clusters_} clusters")
ax.set_aspect("equal")
fig.tight_layout()
plt.show()

# %%
# Where next
# ----------
# - The :doc:`user guide </user_guide>` explains the model, the samplers, how
#   to read the posterior and how to choose ``alpha`` and ``nu``.
# - The other examples of this gallery cluster real rankings (election ballots,
#   sushi preferences, jokes), compare with scikit-learn on vectors, and choose
#   the prior parameters by cross-validation.
#
# sphinx_gallery_thumbnail_number = 2
