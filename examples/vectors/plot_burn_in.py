"""
==========================================================
Burn-in of the Gibbs, split-merge and permutation moves
==========================================================

Liang, Jordan & Taskar (2007, Figure 3) follow the log joint probability
log p(c, X) of a Dirichlet-process mixture of Gaussians against time, for the
moves GIBBS, GIBBS+SPLITMERGE, GIBBS+PERM and GIBBS+SPLITMERGE+PERM, on 40
clusters in 40 dimensions, from a start with one cluster and from a random one.

Single-site Gibbs moves one point at a time: from one cluster it must peel the
true clusters off point by point, and from a random start its clusters are
blends of the true ones that it rarely pulls apart. Split-merge proposals move
whole groups. The permutation move draws a whole new clustering from the
clusterings consistent with an ordering of the points (here, during burn-in,
the order of their projections on a random direction), by dynamic programming.

Each curve is one chain of :class:`~rankmix.DPGaussianClustering` with the
diagonal model; the time axis spreads each fit's wall time evenly over its
sweeps (the sweeps of a move cost about the same once the number of clusters
settles). The dotted line is the log joint of the true clustering.

The quick run uses 1,000 points and 25 sweeps; set ``RANKMIX_EXAMPLES_FULL=1``
for 2,000 points and 150 sweeps. ``benchmarks/bench_gaussian_burn_in.py``
measures the same curves with exact per-sweep times.
"""

# %%
# Liang et al.'s synthetic data
# -----------------------------
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from rankmix import DPGaussianClustering

FULL = os.environ.get("RANKMIX_EXAMPLES_FULL", "0") == "1"
N, N_SWEEPS = (2000, 150) if FULL else (1000, 25)
D, K = 40, 40

rng = np.random.default_rng(0)
means = rng.normal(0.0, np.sqrt(2.0), size=(K, D))
y = rng.integers(K, size=N)
X = means[y] + rng.standard_normal((N, D))

# %%
# One chain per move and start
# ----------------------------
SAMPLERS = [
    "gibbs",
    "gibbs+split-merge",
    "gibbs+permutation",
    "gibbs+split-merge+permutation",
]
STARTS = {"one cluster": 1, f"random, {K} clusters": K}

runs = {}
for start, n_init in STARTS.items():
    for sampler in SAMPLERS:
        model = DPGaussianClustering(
            covariance_type="diag",
            sampler=sampler,
            init="random",
            init_clusters=n_init,
            n_iter=N_SWEEPS,
            burn_in=N_SWEEPS - 1,  # a burn-in study: projection orderings throughout
            thin=1,
            n_chains=1,
            random_state=0,
        )
        begin = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(X)
        seconds = time.perf_counter() - begin
        runs[start, sampler] = (model.trace_["log_joint"][0], seconds)
        print(
            f"{start:>20} | {sampler:<30} {model.n_clusters_:3d} clusters, "
            f"ARI {adjusted_rand_score(y, model.labels_):.3f}, {seconds:5.2f} s"
        )

# %%
# The log joint of the true clustering, for reference: a chain at this level
# has found clusters as probable as the truth. With the diagonal model each
# feature of a cluster has the one-dimensional Normal-inverse-chi-square
# marginal likelihood; the priors are those the fits resolved from X.
from scipy.special import gammaln  # noqa: E402


def log_marginal_diag(points, m0, kappa0, nu0, psi0):
    n = len(points)
    kappa_n, nu_n = kappa0 + n, nu0 + n
    mean = points.mean(axis=0)
    psi_n = (
        psi0
        + ((points - mean) ** 2).sum(axis=0)
        + kappa0 * n / kappa_n * (mean - m0) ** 2
    )
    return np.sum(
        -n / 2 * np.log(np.pi)
        + gammaln(nu_n / 2)
        - gammaln(nu0 / 2)
        + nu0 / 2 * np.log(psi0)
        - nu_n / 2 * np.log(psi_n)
        + 0.5 * np.log(kappa0 / kappa_n)
    )


prior = (model.mean_prior_, model.kappa_, model.nu_, model.covariance_prior_)
# the CRP prior with alpha = 1: prod_k Gamma(n_k) / Gamma(1 + N)
truth = -gammaln(1.0 + N) + sum(
    gammaln((y == k).sum()) + log_marginal_diag(X[y == k], *prior) for k in np.unique(y)
)
print(f"log p(c, X) of the true clustering: {truth:.1f}")

# %%
# Log joint against time
# ----------------------
fig, axes = plt.subplots(1, len(STARTS), figsize=(10, 4), sharey=True)
for ax, start in zip(axes, STARTS):
    for sampler in SAMPLERS:
        log_joint, seconds = runs[start, sampler]
        ax.plot(
            seconds * np.arange(1, N_SWEEPS + 1) / N_SWEEPS, log_joint, label=sampler
        )
    ax.axhline(truth, color="k", ls=":", lw=1, label="true clustering")
    ax.set_title(f"start: {start}")
    ax.set_xlabel("seconds (one core)")
    ax.set_ylim(truth - 0.15 * abs(truth), truth + 0.01 * abs(truth))
axes[0].set_ylabel("log p(c, X)")
axes[-1].legend(fontsize=8, loc="lower right")
fig.tight_layout()
plt.show()
