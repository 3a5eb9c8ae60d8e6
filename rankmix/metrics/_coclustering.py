"""The co-clustering (posterior similarity) matrix of posterior draws."""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

from .._coclustering import add_pair_counts, symmetrise
from .._consensus import _check_labels, _unique_draws
from .._sklearn_compat import validate_params

__all__ = ["coclustering_matrix", "MAX_COCLUSTERING_BYTES"]

#: Largest co-clustering matrix, in bytes, that :func:`coclustering_matrix`
#: builds (2 GiB: 16,384 rows of float64). Larger requests are refused with an
#: error that points to ``rows``.
MAX_COCLUSTERING_BYTES = 2**31


@validate_params(
    {"label_samples": ["array-like"], "rows": [None, "array-like"]},
    prefer_skip_nested_validation=True,
)
def coclustering_matrix(label_samples, *, rows=None):
    """Posterior probability that two samples share a cluster.

    Parameters
    ----------
    label_samples : array-like of int of shape (n_draws, n_samples)
        Posterior draws of a clustering, one per row, such as a fitted
        estimator's ``label_samples_``. Labels are compared within a row only,
        so the draws need not name their clusters consistently.
    rows : array-like of int of shape (n_rows,) or of bool of shape \
            (n_samples,), default=None
        The samples to compare, as indices (in the order of the output) or a
        boolean mask; None compares all of them. For a large data set, pass a
        subset: the matrix needs ``8 * n_rows**2`` bytes.

    Returns
    -------
    coclustering : ndarray of float64 of shape (n_rows, n_rows)
        ``coclustering[a, b]`` is the fraction of the draws that put samples
        ``rows[a]`` and ``rows[b]`` in one cluster: symmetric, with entries in
        [0, 1] and ones on the diagonal.

    Raises
    ------
    ValueError
        If the matrix would need more than :data:`MAX_COCLUSTERING_BYTES`
        (2 GiB, 16,384 rows), or ``rows`` holds an index out of range.

    See Also
    --------
    rankmix.plotting.plot_coclustering : Draw this matrix.

    Notes
    -----
    With :math:`c^{(s)}_i` the cluster of sample :math:`i` in draw
    :math:`s = 1..S`, the matrix is the Monte Carlo estimate

    .. math::

        P_{ij} = \\frac{1}{S} \\sum_{s=1}^{S} [c^{(s)}_i = c^{(s)}_j]
        \\approx P(c_i = c_j \\mid \\text{data}),

    invariant to a renaming of the clusters within any draw (label switching).
    It is inherently :math:`n \\times n`: 8 bytes per entry, so 200 MB for
    5,000 rows and 33 GB for the 64,081 ballots of the Meath election; above
    2 GiB it is refused, and ``rows`` selects the samples to show.

    Draws equal up to a renaming of their clusters (frequent when a chain
    stays put) are counted once with their multiplicity. Each distinct draw
    adds one to the pairs inside each of its clusters, a compiled loop over
    :math:`\\sum_k n_k^2 / 2` pairs for clusters of sizes :math:`n_k`; no
    array larger than the output is made.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmix.metrics import coclustering_matrix
    >>> draws = np.array([[0, 0, 1], [1, 1, 0], [0, 1, 1], [0, 0, 0]])
    >>> coclustering_matrix(draws)
    array([[1.  , 0.75, 0.25],
           [0.75, 1.  , 0.5 ],
           [0.25, 0.5 , 1.  ]])
    >>> coclustering_matrix(draws, rows=[2, 0])
    array([[1.  , 0.25],
           [0.25, 1.  ]])
    """
    labels = np.asarray(label_samples)
    if labels.ndim != 2:
        raise ValueError(
            "label_samples must be a 2-D array of shape (n_draws, n_samples); "
            f"got an array with {labels.ndim} dimension(s)."
        )
    rows = _check_rows(rows, labels.shape[1])
    if rows is not None:
        labels = labels[:, rows]
    n_rows = labels.shape[1]
    n_bytes = 8 * n_rows**2
    if n_bytes > MAX_COCLUSTERING_BYTES:
        raise ValueError(
            f"The co-clustering matrix of {n_rows} samples needs {n_bytes / 2**30:.1f}"
            f" GiB (8 * n**2 bytes), more than the "
            f"{MAX_COCLUSTERING_BYTES / 2**30:.0f} GiB allowed; pass rows= (indices "
            "or a boolean mask) to compare a subset of the samples."
        )
    codes, n_clusters = _check_labels(labels)
    first, inverse = _unique_draws(codes)
    multiplicity = np.bincount(inverse, minlength=len(first)).astype(np.float64)
    counts = np.zeros((n_rows, n_rows))
    for draw, weight in zip(first, multiplicity):
        # A stable sort keeps the points ascending within each cluster, which
        # add_pair_counts needs to stay in the upper triangle.
        order = np.argsort(codes[draw], kind="stable")
        starts = np.zeros(n_clusters[draw] + 1, dtype=np.intp)
        np.cumsum(np.bincount(codes[draw], minlength=n_clusters[draw]), out=starts[1:])
        add_pair_counts(counts, order, starts, weight)
    counts /= len(codes)
    symmetrise(counts, 1.0)
    return counts


def _check_rows(rows, n_samples, name="rows"):
    """Indices of ``rows`` (None for all), validated against ``n_samples``;
    ``name`` is the argument the messages name."""
    if rows is None:
        return None
    rows = np.asarray(rows)
    if rows.ndim != 1:
        raise ValueError(
            f"{name} must be a 1-D array of indices or a boolean mask; got an array "
            f"with {rows.ndim} dimension(s)."
        )
    if rows.dtype.kind == "b":
        if len(rows) != n_samples:
            raise ValueError(
                f"{name} as a boolean mask must have one entry per sample "
                f"({n_samples}); got {len(rows)}."
            )
        return np.flatnonzero(rows)
    if rows.size == 0:
        return rows.astype(np.intp)
    if rows.dtype.kind not in "iu":
        raise ValueError(
            f"{name} must hold integer indices or booleans; got dtype {rows.dtype}."
        )
    bad = (rows < 0) | (rows >= n_samples)
    if bad.any():
        position = int(np.argmax(bad))
        raise ValueError(
            f"{name}[{position}] = {rows[position]} is out of range: indices must "
            f"lie in [0, {n_samples})."
        )
    return rows.astype(np.intp)
