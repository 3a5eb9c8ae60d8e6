"""
====================================================
Held-out log-likelihood of the DP mixture of Mallows
====================================================

The setting of Meila & Chen (2010, Figure 8): three Mallows clusters over n = 12
items, top-5 rankings, theta = 1. We fit the DP mixture on N training rankings,
N from 100 up, and score 3,000 held-out rankings of the same mixture. The true
mixture's held-out log-likelihood is the ceiling; the DP mixture, which does not
know the number of clusters, should approach it as N grows.

The quick run stops at N = 1,000; set ``RANKMIX_EXAMPLES_FULL=1`` to go to 10,000.
"""

# %%
# Data
# ----
import os

import matplotlib.pyplot as plt
import numpy as np
from scipy.special import logsumexp

from rankmix import DPMallowsClustering, mallows
from rankmix.datasets import make_mallows_mixture

FULL = os.environ.get("RANKMIX_EXAMPLES_FULL", "0") == "1"
SIZES = [100, 300, 1000, 3000, 10000] if FULL else [100, 300, 1000]
N_TEST = 3000

X_all, y_all, centres = make_mallows_mixture(
    n_clusters=3,
    n_per_cluster=(max(SIZES) + N_TEST) // 3 + 1,
    n_items=12,
    t=5,
    theta=1.0,
    random_state=0,
)
X_test, X_pool = X_all[:N_TEST], X_all[N_TEST:]

# The true model: equal weights over the three true centres, theta = 1.
true_loglik = np.mean(
    logsumexp(mallows.log_likelihood(X_test, centres, 1.0), axis=1) - np.log(3)
)

# %%
# Fit on growing training sets
# ----------------------------
scores, n_clusters = [], []
for n_train in SIZES:
    model = DPMallowsClustering(n_iter=60, burn_in=30, thin=3, random_state=0)
    model.fit(X_pool[:n_train])
    scores.append(model.score(X_test))
    n_clusters.append(model.n_clusters_)
    print(
        f"N = {n_train:5d}: {model.n_clusters_} clusters, held-out log-likelihood "
        f"{scores[-1]:.4f} (true model {true_loglik:.4f})"
    )

# %%
# Plot
# ----
fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogx(SIZES, scores, "o-", label="DP mixture of Mallows")
ax.axhline(true_loglik, color="k", linestyle="--", label="true model")
ax.set_xlabel("training rankings N")
ax.set_ylabel("held-out log-likelihood per ranking")
ax.legend()
fig.tight_layout()
plt.show()
