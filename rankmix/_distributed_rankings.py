# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The rankings of a Mallows chain on Dask workers: ``sampler="subcluster"`` past
one machine.

A :class:`DaskRankings` keeps the rankings of a ``dask.array.Array`` where they
are: each chunk is validated on its worker (an error names the row of X), cut to
the data's stages and kept there (``_mallows_rows.ChunkRankings``). The Mallows
sub-cluster chain (``MallowsChain`` with ``remote``) then reads them only through
the operations below, each run by the workers over their own rows
(``_mallows_rows.chunk_*``):

* the label step: the chain's label tables (K x (n + 2 T + 1) numbers) go out,
  each chunk's labels both ways (8 bytes a ranking), with the statistics of the
  clusters by the new labels;
* the statistics of the clusters (the labels go out again; where the label
  step's are not the ones needed), or of given sets of rankings (a split-merge
  proposal's two sides at once, their indices out):
  each chunk sends back its compact statistics
  (items, stage counts, observed precedences), merged here exactly
  (``_kernels.merge_statistics``): a pair per distinct (stage, item, earlier
  item) that occurs, not an n x n matrix per stage (though full rankings of a
  large cluster reach that size, n^2 t pairs);
* the GM densities and the code totals of a proposal's rankings (two doubles a
  ranking back);
* each ranking's log-likelihood in its cluster, once per call of ``sweep`` (the
  labels and the clusters' parameters out, a double a ranking back);
* the rankings a singleton move or a proposal's anchors read (a few a sweep),
  and those of a proposal's two clusters (their indices out, t_max integers a
  ranking back).

The global steps (parameters, weights, the Metropolis-Hastings decisions, alpha)
run where the chain is. Every result depends on the rows and the parameters
only, so the chain draws the same as with its rankings in process, whatever the
chunks, the workers or the threads (``tests/test_distributed_rankings.py``),
provided the client and the workers run the same build of rankmix. A sweep
costs about 3 round trips: the label step with the clusters' statistics, the
log-likelihoods, and one read of the rankings its moves will read (the
proposals' pairs and the singleton moves' rankings, drawn first; the rankings
of each proposal's two clusters, up to ``LAUNCH_PREFETCH_VALUES`` ranks in all;
those of the clusters of one or two). Each proposal's launch and decision then
run in the client on those rankings, as in process; after an accepted move, a
proposal reads the rankings it lacks (one round trip). A proposal whose two
clusters hold more than
``_subcluster_chain.LAUNCH_PREFETCH_VALUES`` ranks (2^20: 100,000 top-10
rankings) asks the workers instead: the launch's code totals, per launch scan
the two sides' statistics and the densities, then the final scan's densities
and sides' statistics (7 round trips). On one machine, threads are faster
than a cluster of processes.
"""

import numpy as np

from . import _mallows_rows as rows_module
from ._distributed import DaskRows
from ._kernels import merge_statistics
from ._validation import check_rankings, ranking_lengths


def _checked(chunk, first_row, n_items):
    """The chunk's rankings validated (``check_rankings``), or the error that
    names its first bad row (as X's row), returned, not raised, so that the
    client reports the first one in row order."""
    try:
        return check_rankings(np.asarray(chunk), n_items=n_items, first_row=first_row)
    except (TypeError, ValueError) as error:
        return error


def _summary(checked):
    """The error, or (the longest ranking's length, the largest item id, whether
    item 0 is in a ranking)."""
    if isinstance(checked, Exception):
        return checked
    return (
        int(ranking_lengths(checked).max()),
        int(checked.max()),
        bool((checked == 0).any()),
    )


def _chunk_rankings(checked, n_stages, n_items):
    return rows_module.ChunkRankings(checked[:, :n_stages], n_items)


def _lengths(rows, offset):
    return rows.lengths


class DaskRankings(DaskRows):
    """The rankings of a dask array on the workers, and the chain's operations.

    Parameters
    ----------
    X : dask.array.Array of shape (n_rankings, t_max)
        Rankings as for ``check_rankings`` (item ids, padded with -1), chunked
        along the rows (the columns are made one chunk).
    client : distributed.Client
        The active client.
    n_items : int or None
        The estimator's ``n_items``; None infers it from the data.

    Attributes
    ----------
    n_items : int
        ``n_items``, or the largest item id + 1.
    holds_item_zero : bool
        Whether item 0 is in a ranking.
    n_features : int
        The longest ranking's length, the chain's number of stages T.
    """

    def __init__(self, X, client, n_items):
        # each chunk holds whole rankings: no block of rows to align to
        super().__init__(X, client, row_block=1)
        checked = [
            client.submit(_checked, chunk, int(offset), n_items, pure=False)
            for chunk, offset in zip(self._chunks, self.offsets)
        ]
        summaries = client.gather(
            [client.submit(_summary, c, pure=False) for c in checked]
        )
        for summary in summaries:  # in row order: the first bad row is named
            if isinstance(summary, Exception):
                raise summary
        self.n_features = max(width for width, _, _ in summaries)
        largest = max(item for _, item, _ in summaries)
        self.n_items = largest + 1 if n_items is None else int(n_items)
        self.holds_item_zero = any(zero for _, _, zero in summaries)
        self._families = [
            client.submit(_chunk_rankings, c, self.n_features, self.n_items, pure=False)
            for c in checked
        ]
        self._chunks = None  # the unvalidated chunks are no longer needed

    def lengths(self):
        """Each ranking's length, (n_rankings,). A task per lane, not the actors:
        ``_prepare`` calls it, before the fit that closes the rows begins."""
        return np.concatenate(
            self._on_lanes(_lengths, self._families, lambda c: (int(self.offsets[c]),))
        )

    # -- the chain's operations (``_mallows_rows``) ---------------------------------

    def label_step(self, labels, key, sweep, active, *tables, statistics=True):
        """``chunk_label_step`` on every chunk with its part of ``labels``: the
        new labels, and the merged statistics of the rankings in each slot of
        ``active`` by them (``cluster_statistics``, in the same round trip), or
        None without ``statistics`` (where they would not fit the client's
        memory at once: the chain then fetches them in batches).
        ``tables``: log_pi, anchor_priority, anchor_row, positions, theta, norm,
        as ``MallowsChain._parallel_labels`` has them."""
        parts = self._submit(
            rows_module.chunk_label_step_statistics if statistics
            else rows_module.chunk_label_step,
            self._slice(labels),
            key,
            sweep,
            active,
            *tables,
        )
        if not statistics:
            return np.concatenate(parts), None
        return (
            np.concatenate([new_labels for new_labels, _ in parts]),
            self._merged_by_slot([statistics for _, statistics in parts], len(active)),
        )

    def cluster_statistics(self, labels, slots):
        """The merged statistics of the rankings in each slot of ``slots``."""
        parts = self._submit(
            rows_module.chunk_cluster_statistics, self._slice(labels), slots
        )
        return self._merged_by_slot(parts, len(slots))

    def _merged_by_slot(self, parts, n_slots):
        """Each slot's statistics merged over the chunks' ``parts`` (a list per
        chunk of each slot's statistics, None where it has none); None for a
        slot no chunk has (a cluster the sequential start's label step
        emptied)."""
        merged = []
        for a in range(n_slots):
            found = [part[a] for part in parts if part[a] is not None]
            merged.append(merge_statistics(found, self.n_features) if found else None)
        return merged

    def statistics(self, point_sets):
        """The merged statistics of each set of rankings (any order), in one
        round trip."""
        chunk_of = [self._chunk_of(points) for points in point_sets]
        chunks = [int(c) for c in np.unique(np.concatenate(chunk_of))]
        parts = self._submit(
            rows_module.chunk_statistics,
            lambda c: [p[where == c] for p, where in zip(point_sets, chunk_of)],
            chunks=chunks,
        )
        return [
            merge_statistics([part[s] for part in parts], self.n_features)
            for s in range(len(point_sets))
        ]

    def densities(self, points, *parameters):
        """(log GM under launch A, under B) of the rankings ``points``, in their
        order. ``parameters``: pos_a, th_a, norm_a, pos_b, th_b, norm_b."""
        return self._per_point(rows_module.chunk_densities, points, *parameters)

    def code_totals(self, points, pos_a, pos_b):
        """(code totals against A, against B) of the rankings ``points``."""
        return self._per_point(rows_module.chunk_code_totals, points, pos_a, pos_b)

    def log_likelihoods(self, labels, position, theta, log_norm):
        """Each ranking's log GM in its cluster, the parameters by slot."""
        return np.concatenate(
            self._submit(
                rows_module.chunk_log_likelihoods,
                self._slice(labels),
                position,
                theta,
                log_norm,
            )
        )

    def rows(self, indices):
        """The rankings ``indices`` (any order): (len(indices), n_features)."""
        indices = np.asarray(indices, dtype=np.intp)
        out = np.empty((len(indices), self.n_features), dtype=np.intp)
        for mask, part in self._on_chunks_holding(rows_module.chunk_rows, indices):
            out[mask] = part
        return out

    def _per_point(self, function, points, *args):
        """``function``'s two arrays for ``points``, in ``points``' order."""
        first, second = np.empty(len(points)), np.empty(len(points))
        for mask, (a, b) in self._on_chunks_holding(function, points, *args):
            first[mask] = a
            second[mask] = b
        return first, second

    def _on_chunks_holding(self, function, points, *args):
        """``function`` on each chunk holding any of ``points``, with its points:
        (the mask of that chunk's points in ``points``, its result) per chunk."""
        chunk_of = self._chunk_of(points)
        chunks = [int(c) for c in np.unique(chunk_of)]
        parts = self._submit(
            function, lambda c: points[chunk_of == c], *args, chunks=chunks
        )
        return [(chunk_of == c, part) for c, part in zip(chunks, parts)]
