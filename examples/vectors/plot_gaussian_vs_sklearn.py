"""
====================================================================
DP Gaussian mixture: MCMC (rankmix) vs variational (scikit-learn)
====================================================================

Both :class:`~rankmix.DPGaussianClustering` and scikit-learn's
:class:`~sklearn.mixture.BayesianGaussianMixture` fit a Dirichlet-process mixture
of Gaussians with full covariances, and neither is told the number of clusters.
rankmix integrates the means and covariances out and samples the clustering by
collapsed Gibbs sweeps and split-merge moves; scikit-learn fits a variational
approximation truncated at 50 components.

The data are six 2-D Gaussian blobs of different sizes, widths and orientations,
in their raw units (no scaling). Each panel shows the clustering of the training
points, the cluster means (crosses) and the 2-sigma ellipses of the cluster
covariances: ``covariances_`` for rankmix, and for scikit-learn the components
whose weight exceeds 0.01. The titles give the number of clusters, the adjusted
Rand index (ARI) to the true blobs and the held-out log-likelihood per point on
new points of the same mixture, beside that of the true mixture.

The quick run uses 1,000 training points; set ``RANKMIX_EXAMPLES_FULL=1`` for
5,000.
"""

# %%
# Data
# ----
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Ellipse
from scipy.special import logsumexp
from scipy.stats import multivariate_normal
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import BayesianGaussianMixture
from threadpoolctl import threadpool_limits

from rankmix import DPGaussianClustering

FULL = os.environ.get("RANKMIX_EXAMPLES_FULL", "0") == "1"
N_TRAIN = 5000 if FULL else 1000
N_TEST = 2000


def rotated(major, minor, degrees):
    """Covariance with standard deviations ``major``, ``minor`` at an angle."""
    angle = np.deg2rad(degrees)
    rotation = np.array(
        [[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]
    )
    return rotation @ np.diag([major**2, minor**2]) @ rotation.T


# (mean, covariance, weight) of each blob, in the data's own units
BLOBS = [
    ((0.0, 0.0), rotated(6.0, 2.0, 30), 0.30),
    ((28.0, 2.0), rotated(3.0, 3.0, 0), 0.15),
    ((8.0, 32.0), rotated(8.0, 1.5, -45), 0.20),
    ((-22.0, 24.0), rotated(2.0, 1.0, 0), 0.05),
    ((40.0, 38.0), rotated(5.0, 3.0, 80), 0.18),
    ((-18.0, -22.0), rotated(4.0, 1.0, 10), 0.12),
]
true_means = np.array([blob[0] for blob in BLOBS])
true_covariances = np.array([blob[1] for blob in BLOBS])
true_weights = np.array([blob[2] for blob in BLOBS])

rng = np.random.default_rng(0)


def draw(n_samples):
    labels = rng.choice(len(BLOBS), size=n_samples, p=true_weights)
    X = np.empty((n_samples, 2))
    for k, (mean, covariance, _) in enumerate(BLOBS):
        mask = labels == k
        X[mask] = rng.multivariate_normal(mean, covariance, size=mask.sum())
    return X, labels


X, y = draw(N_TRAIN)
X_test, _ = draw(N_TEST)

# The true mixture's held-out log-likelihood per point: the ceiling.
true_log_density = np.column_stack(
    [
        multivariate_normal(mean, covariance).logpdf(X_test)
        for mean, covariance in zip(true_means, true_covariances)
    ]
)
true_loglik = logsumexp(true_log_density + np.log(true_weights), axis=1).mean()

# %%
# Fit both models
# ---------------
# rankmix with its default prior and sampler (two chains of 200 sweeps, 100 of
# burn-in, run one after the other); scikit-learn with 50 components and its
# defaults otherwise. Both run and score on one core: their many small matrix
# products gain nothing from BLAS threads, and on a busy machine lose a lot.
with threadpool_limits(limits=1):
    start = time.perf_counter()
    dpgc = DPGaussianClustering(random_state=0).fit(X)
    dpgc_seconds = time.perf_counter() - start
    dpgc_loglik = dpgc.score(X_test)

    bgm = BayesianGaussianMixture(
        n_components=50,
        weight_concentration_prior_type="dirichlet_process",
        random_state=0,
    )
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        bgm.fit(X)
    bgm_seconds = time.perf_counter() - start
    bgm_loglik = bgm.score(X_test)
bgm_labels = bgm.predict(X)

# Each method's labels, the (means, covariances) drawn and their colour indices.
kept = np.flatnonzero(bgm.weights_ > 0.01)
fits = [
    (
        "rankmix DPGaussianClustering",
        dpgc.labels_,
        dpgc.n_clusters_,
        dpgc.means_,
        dpgc.covariances_,
        np.arange(dpgc.n_clusters_),
        dpgc_loglik,
        dpgc_seconds,
    ),
    (
        "scikit-learn BayesianGaussianMixture",
        bgm_labels,
        len(np.unique(bgm_labels)),
        bgm.means_[kept],
        bgm.covariances_[kept],
        kept,
        bgm_loglik,
        bgm_seconds,
    ),
]
print(f"true mixture: {len(BLOBS)} clusters, held-out log-likelihood {true_loglik:.4f}")
for name, labels, n_clusters, _, _, _, loglik, seconds in fits:
    print(
        f"{name}: {n_clusters} clusters, ARI {adjusted_rand_score(y, labels):.3f}, "
        f"held-out log-likelihood {loglik:.4f}, fit {seconds:.1f} s"
    )

# %%
# Plot
# ----
# Points are coloured by cluster; crosses mark the means and the ellipses hold
# about 86% of each Gaussian's mass (2 standard deviations along each axis). A
# cluster takes the colour of the true blob most of its points come from (the
# largest such cluster only; any other gets a colour of its own), so that the
# panels can be compared; ellipses of components that hold no training point
# are grey.


def draw_ellipse(ax, mean, covariance, color):
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    angle = np.degrees(np.arctan2(eigenvectors[1, 1], eigenvectors[0, 1]))
    width, height = 2 * 2 * np.sqrt(eigenvalues[::-1])
    ax.add_patch(
        Ellipse(
            mean, width, height, angle=angle, fill=False, color=color, linewidth=1.5
        )
    )


colors = plt.get_cmap("tab20").colors[::2] + plt.get_cmap("tab20").colors[1::2]


def cluster_colors(labels):
    """A colour index per used label, matched to the true blobs."""
    used, sizes = np.unique(labels, return_counts=True)
    index = {}
    spare = len(BLOBS)
    for label in used[np.argsort(-sizes, kind="stable")]:
        blob = np.bincount(y[labels == label], minlength=len(BLOBS)).argmax()
        if blob in index.values():
            index[label], spare = spare, spare + 1
        else:
            index[label] = blob
    return {label: colors[i % len(colors)] for label, i in index.items()}


fig, axes = plt.subplots(1, 2, figsize=(11, 5), sharex=True, sharey=True)
for ax, fit in zip(axes, fits):
    name, labels, n_clusters, means, covariances, indices, loglik, _ = fit
    color_of = cluster_colors(labels)
    ax.scatter(
        X[:, 0],
        X[:, 1],
        c=[color_of[label] for label in labels],
        s=6,
        alpha=0.6,
        linewidths=0,
    )
    for mean, covariance, index in zip(means, covariances, indices):
        draw_ellipse(ax, mean, covariance, color_of.get(index, "0.5"))
        ax.plot(*mean, "x", color="k", markersize=8, markeredgewidth=2)
    ax.set_title(
        f"{name}\n{n_clusters} clusters, ARI {adjusted_rand_score(y, labels):.3f}, "
        f"held-out ll {loglik:.3f}\n(true mixture: {len(BLOBS)} clusters, "
        f"held-out ll {true_loglik:.3f})",
        fontsize=10,
    )
    ax.set_aspect("equal")
fig.tight_layout()
plt.show()
