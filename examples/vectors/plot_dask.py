"""
=================================================
One chain over rows that stay on a Dask cluster
=================================================

:class:`~rankmix.DPGaussianClustering` with ``sampler="subcluster"`` fits a
``dask.array.Array`` where its rows are: each chunk is bound to the model on the
worker that holds it, each sweep sends the clusters' parameters to the workers
and brings back the rows' labels and their clusters' sufficient statistics, and
the global steps (weights, split and merge decisions, alpha) run here, in the
client. The rows are never gathered.

The draws are the same, to the last bit, as those of the same fit with the rows
in this process: they depend on ``random_state`` and the data, not on the
chunks, the workers or the threads. This page checks it.

On a real cluster, connect with ``Client("scheduler-address:8786")`` and read X
with dask (``da.from_zarr``, ``dd.read_parquet(...).to_dask_array(lengths=True)``,
...). Here a :class:`~distributed.LocalCluster` of two workers runs in this
process. Each sweep costs about a dozen round trips to the workers (milliseconds
each), so a cluster pays off when a sweep over the rows takes longer than that:
millions of rows, not thousands.
"""

# %%
# Rows in chunks on two workers
# -----------------------------
import warnings

import dask.array as da
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import adjusted_rand_score

from rankmix import DPGaussianClustering

rng = np.random.default_rng(0)
angles = np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False)
centres = 10.0 * np.c_[np.cos(angles), np.sin(angles)]
y = rng.integers(8, size=2 * 65_536)
X = centres[y] + rng.standard_normal((len(y), 2))

cluster = LocalCluster(
    n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
)
client = Client(cluster)
X_dask = da.from_array(X, chunks=(65_536, 2))  # the chunks go to the workers
X_dask

# %%
# The same fit, on the workers and in process
# -------------------------------------------
params = dict(
    sampler="subcluster",
    covariance_type="spherical",  # the blobs' own covariance
    n_iter=12,
    burn_in=6,
    n_chains=1,
    random_state=0,
)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)  # short chains
    on_workers = DPGaussianClustering(**params).fit(X_dask)
    in_process = DPGaussianClustering(**params).fit(X)
client.close()
cluster.close()

print(
    "identical draws:",
    np.array_equal(on_workers.label_samples_, in_process.label_samples_),
)
print("ARI against the blobs:", round(adjusted_rand_score(y, on_workers.labels_), 3))
print("cluster sizes:", np.sort(np.bincount(on_workers.labels_))[::-1])

# %%
# Twelve sweeps are a short chain: besides the eight blobs, the point estimate
# may hold a few small clusters that longer chains absorb or keep (a DP mixture
# puts some posterior mass on small extra clusters).

# %%
# Every tenth row, coloured by its cluster in the point-estimate draw.
fig, ax = plt.subplots(figsize=(5, 4.5))
ax.scatter(*X[::10].T, c=on_workers.labels_[::10], s=2, cmap="tab10")
ax.set_title(f"{on_workers.n_clusters_} clusters, fitted on the workers")
ax.set_xlabel("x1")
ax.set_ylabel("x2")
plt.show()
