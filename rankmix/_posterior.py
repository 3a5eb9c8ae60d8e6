# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The kept draws as arrays, matched to the point estimate: intervals, consensus.

A draw of a DP mixture numbers its clusters its own way (by first appearance in
the data), and its number of clusters varies, so "cluster 2" means different
clusters in different draws: the label-switching problem of mixture posteriors.
Every summary here first matches each draw's clusters to the point estimate
``labels_`` by overlap (:func:`match_clusters`), the way BayesMallows' and
mcclust's summaries condition on a reference clustering, and summarises a
point-estimate cluster by the draws' clusters matched to it.
"""

from numbers import Real

import numpy as np
from sklearn.utils.validation import check_is_fitted


def contingency_table(draw, labels, n_draw_clusters, n_clusters):
    """(n_draw_clusters, n_clusters) counts of rows in each pair of clusters."""
    table = np.bincount(
        draw.astype(np.intp, copy=False) * n_clusters + labels,
        minlength=n_draw_clusters * n_clusters,
    )
    return table.reshape(n_draw_clusters, n_clusters)


def match_clusters(label_samples, labels, n_clusters):
    """For each draw, the draw's cluster that holds most of each reference cluster.

    Parameters
    ----------
    label_samples : ndarray of shape (n_draws, n_samples)
        The draws' labels, each numbered 0..K_d - 1.
    labels : ndarray of shape (n_samples,)
        The reference clustering, numbered 0..n_clusters - 1.
    n_clusters : int
        Number of reference clusters.

    Returns
    -------
    matched : ndarray of shape (n_draws, n_clusters), dtype intp
        ``matched[d, j]`` is the cluster of draw d that holds the most rows of
        reference cluster j (the smallest such label on a tie).
    share : ndarray of shape (n_draws, n_clusters)
        The fraction of reference cluster j's rows that it holds: 1 when the
        draw keeps the cluster whole, lower when the draw splits it.

    Notes
    -----
    Two reference clusters that one draw merges are matched to the same
    cluster of that draw, so they share its parameters there: a summary then
    shows the merge rather than hiding it. Costs O(n_samples + K_d n_clusters)
    per draw through one contingency table.
    """
    labels = np.asarray(labels, dtype=np.intp)
    sizes = np.bincount(labels, minlength=n_clusters)
    columns = np.arange(n_clusters)
    matched = np.empty((len(label_samples), n_clusters), dtype=np.intp)
    share = np.empty((len(label_samples), n_clusters), dtype=np.float64)
    for d, draw in enumerate(label_samples):
        table = contingency_table(draw, labels, int(draw.max()) + 1, n_clusters)
        matched[d] = table.argmax(axis=0)
        share[d] = table[matched[d], columns] / np.maximum(sizes, 1)
    return matched, share


def stack_padded(arrays, fill):
    """Per-draw arrays of shape (K_d, ...) as one (n_draws, max K_d, ...) array.

    Rows past a draw's own K_d hold ``fill``.
    """
    k_max = max(len(a) for a in arrays)
    first = np.asarray(arrays[0])
    out = np.full((len(arrays), k_max, *first.shape[1:]), fill, dtype=first.dtype)
    for d, values in enumerate(arrays):
        out[d, : len(values)] = values
    return out


def cumulative_probability_consensus(orderings, n_items, return_rank_cdf=True):
    """The cumulative-probability consensus of best-first orderings.

    Parameters
    ----------
    orderings : ndarray of shape (n_draws, n_items)
        Full orderings, item ids best first (one central ranking per draw).
    n_items : int
    return_rank_cdf : bool, default=True
        Also return the (n_items, n_items) table of ranks; the consensus alone
        takes O(n_items) memory.

    Returns
    -------
    consensus : ndarray of shape (n_items,)
        Item ids, best first.
    rank_cdf : ndarray of shape (n_items, n_items)
        ``rank_cdf[i, j]``: the fraction of draws that rank item i at position
        j or better (0-based). Only with ``return_rank_cdf``.

    Notes
    -----
    Vitelli et al. (2018, JMLR, sec. 4.3), as BayesMallows' ``compute_consensus
    (type = "CP")``: position 1 goes to the item most often ranked first; then
    position j goes to the item, among those not yet placed, with the largest
    probability of a position of j or better. Ties go to the smaller item id.
    The counts of draws are compared, not their fractions: the same order and
    ties, in integers.
    """
    consensus = np.empty(n_items, dtype=np.intp)
    placed = np.zeros(n_items, dtype=np.int64)  # draws with item i at <= j
    free = np.ones(n_items, dtype=bool)
    for j in range(n_items):
        placed += np.bincount(orderings[:, j], minlength=n_items)
        item = int(np.argmax(np.where(free, placed, -1)))
        consensus[j] = item
        free[item] = False
    if not return_rank_cdf:
        return consensus
    positions = np.broadcast_to(np.arange(n_items), orderings.shape)
    counts = np.bincount(
        (orderings * n_items + positions).ravel(), minlength=n_items * n_items
    ).reshape(n_items, n_items)
    return consensus, np.cumsum(counts, axis=1) / len(orderings)


class PosteriorSummaryMixin:
    """Per-draw parameters, posterior intervals and the draw-to-estimate matching.

    A model names the fields of its draws' parameter tuples in
    ``_draw_fields``: ``{name: (index in the tuple, fill value)}``; the float
    fields among them get intervals. Every draw tuple ends with (..., alpha,
    sizes).
    """

    _draw_fields: dict = {}

    def _draw_field_values(self, name, values):
        """A hook to post-process a stacked per-draw field (identity here)."""
        return values

    def match_clusters(self):
        """Match every kept draw's clusters to the point estimate ``labels_``.

        Returns
        -------
        matched : ndarray of shape (``n_draws_``, ``n_clusters_``)
            ``matched[d, j]``: the cluster of draw d (in the numbering of
            ``label_samples_[d]``) that holds the most rows of point-estimate
            cluster j.
        share : ndarray of shape (``n_draws_``, ``n_clusters_``)
            The fraction of cluster j's rows that this cluster of draw d holds.

        Notes
        -----
        Clusters have no names across draws (label switching). Matching by
        overlap with a reference clustering is the usual remedy; two clusters
        that a draw merges are both matched to the merged cluster, and a low
        ``share`` marks a draw that splits the cluster. The overlap counts the
        rows the chains fitted: with ``sample_weight``, a row as often as its
        weight (and rows of weight 0 not at all).
        """
        check_is_fitted(self)
        return match_clusters(
            self._chain_label_samples, self._chain_labels, self.n_clusters_
        )

    def posterior_samples(self):
        """The parameters of every kept draw, as arrays aligned with ``label_samples_``.

        Returns
        -------
        samples : dict of ndarray
            ``"weights"`` of shape (``n_draws_``, K_max): each draw's cluster
            shares, in the numbering of its row of ``label_samples_`` (0 past
            the draw's own number of clusters; K_max is the largest); ``"alpha"``
            of shape (``n_draws_``,); and the model's own per-cluster
            parameters, padded likewise (see the estimator's docstring).
        """
        check_is_fitted(self)
        return self._posterior_samples(self._draw_fields)

    def _posterior_samples(self, fields):
        """:meth:`posterior_samples` with only the model's ``fields`` of
        ``_draw_fields`` (a subset)."""
        draws = self._draws
        sizes = [np.asarray(p[-1], dtype=np.float64) for p in draws]
        samples = {
            "weights": stack_padded([s / s.sum() for s in sizes], 0.0),
            "alpha": np.array([p[-2] for p in draws], dtype=np.float64),
        }
        for name in fields:
            index, fill = self._draw_fields[name]
            stacked = stack_padded([p[index] for p in draws], fill)
            samples[name] = self._draw_field_values(name, stacked)
        return samples

    def posterior_intervals(self, level=0.9):
        """Equal-tailed posterior intervals of each point-estimate cluster's parameters.

        Parameters
        ----------
        level : float, default=0.9
            Posterior probability inside each interval, in (0, 1).

        Returns
        -------
        intervals : dict of ndarray
            ``"weights"`` of shape (``n_clusters_``, 2), then each float
            parameter of the model with a last axis of 2 (lower, upper): for
            example ``"thetas"`` of shape (``n_clusters_``, t_max, 2). Row j
            summarises, over the kept draws, the draw cluster matched to
            cluster j of ``labels_`` (see :meth:`match_clusters`).

        Notes
        -----
        The quantiles (1 - level) / 2 and (1 + level) / 2 of the matched
        values, across all chains' kept draws. A parameter that is NaN in the
        draws (the last stage of full rankings) has a NaN interval.
        """
        check_is_fitted(self)
        if not isinstance(level, Real) or not 0.0 < level < 1.0:
            raise ValueError(f"level must be a number in (0, 1), got {level!r}.")
        matched, _ = self.match_clusters()
        # the float fields alone: the others (a Mallows draw's K central
        # rankings of n_items) have no interval and need not be stacked
        samples = self._posterior_samples(
            [
                name
                for name, (index, _) in self._draw_fields.items()
                if np.issubdtype(np.asarray(self._draws[0][index]).dtype, np.floating)
            ]
        )
        draws = np.arange(len(matched))[:, None]
        quantiles = [(1.0 - level) / 2.0, (1.0 + level) / 2.0]
        intervals = {}
        for name, values in samples.items():
            if values.ndim < 2:  # alpha: one value a draw, not a cluster
                continue
            picked = values[draws, matched]  # (n_draws, n_clusters_, ...)
            intervals[name] = np.moveaxis(np.quantile(picked, quantiles, axis=0), 0, -1)
        return intervals
