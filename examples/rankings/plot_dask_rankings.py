"""
=====================================================
One chain over rankings that stay on a Dask cluster
=====================================================

:class:`~rankmix.DPMallowsClustering` with ``sampler="subcluster"`` fits a
``dask.array.Array`` of rankings where they are: each chunk is validated on the
worker that holds it (an error names the ranking's row of X), each sweep sends
the clusters' central rankings and dispersions to the workers and brings back
the rankings' labels and, per cluster, the compact statistics its parameters
are drawn from (the items it ranks, how often each stands at each rank, the
precedences that occur). Split and merge proposals send the indices of the
rankings concerned and bring back their densities and statistics. The weights,
the Metropolis-Hastings decisions and alpha are drawn here, in the client. The
rankings are never gathered.

The draws are the same, to the last bit, as those of the same fit with the
rankings in this process: they depend on ``random_state`` and the data, not on
the chunks, the workers or the threads. This page checks it.

Each sweep waits for a few round trips to the workers (milliseconds each), so a
cluster pays off only for rankings that do not fit one machine; on one machine,
the threads of a plain fit are faster.
"""

# %%
# Rankings in chunks on two workers
# ---------------------------------
# Three groups of top-6 ballots over 12 candidates, from generalized Mallows
# models around three central rankings.
import warnings

import dask.array as da
import numpy as np
from distributed import Client, LocalCluster
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from rankmix import DPMallowsClustering
from rankmix.datasets import make_mallows_mixture

X, y, centres = make_mallows_mixture(
    n_clusters=3, n_per_cluster=400, n_items=12, t=6, theta=0.8, random_state=0
)
cluster = LocalCluster(
    n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
)
client = Client(cluster)
X_dask = da.from_array(X, chunks=(300, -1))  # four chunks, on the workers
X_dask

# %%
# The same fit, on the workers and in process
# -------------------------------------------
params = dict(sampler="subcluster", n_iter=30, burn_in=10, n_chains=1, random_state=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # a short chain
    on_workers = DPMallowsClustering(**params).fit(X_dask)
    in_process = DPMallowsClustering(**params).fit(X)
client.close()
cluster.close()

print(
    "identical draws:",
    np.array_equal(on_workers.label_samples_, in_process.label_samples_),
)
print("ARI against the groups:", round(adjusted_rand_score(y, on_workers.labels_), 3))
print("cluster sizes:", np.sort(np.bincount(on_workers.labels_))[::-1])

# %%
# The fitted model is an ordinary one: its central rankings, its predictions
# and its scores need no cluster.
consensus, _ = on_workers.consensus_rankings()
for k, centre in enumerate(consensus):
    print(f"cluster {k}: consensus top 6 {centre[:6]}")
print("true centres' top 6:", *(c[:6] for c in centres), sep="\n  ")
