"""Information-theoretic comparison of two clusterings."""

# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause


import numpy as np
from sklearn.metrics import make_scorer
from sklearn.utils import check_array, check_consistent_length

from .._sklearn_compat import validate_params
from .._warnings import warn

__all__ = ["variation_of_information", "vi_scorer"]

# Integer labels whose value range is at most this many times the number of
# samples (or at most _MIN_DENSE_SPAN) are factorised with ``np.bincount`` in
# O(N + range) instead of an O(N log N) sort.  The same bound caps the size of
# the dense joint-count array used for the contingency cells, so memory stays
# O(N) however many clusters there are.
_DENSE_SPAN_FACTOR = 2
_MIN_DENSE_SPAN = 1 << 16


def _check_clusterings(labels_true, labels_pred):
    """Validate two labelings as scikit-learn's clustering metrics do.

    The checks, messages and the warning for continuous labels are those of
    ``sklearn.metrics.cluster._supervised.check_clusterings`` (private).  It is
    not called directly because its ``type_of_target`` call sorts every
    labeling once more (about 0.1 s for 10**6 integers, as long as the whole
    metric) and rejects object arrays whose first label is a tuple as a
    "legacy multi-label" representation, while any hashable label is valid
    here.
    """
    labels_true = _as_labels(labels_true, "labels_true")
    labels_pred = _as_labels(labels_pred, "labels_pred")

    continuous_true = _is_continuous(labels_true)
    continuous_pred = _is_continuous(labels_pred)
    if continuous_true or continuous_pred:
        type_label = "continuous" if continuous_true else "discrete"
        type_pred = "continuous" if continuous_pred else "discrete"
        warn(
            "Clustering metrics expects discrete values but received"
            f" {type_label} values for label, and {type_pred} values "
            "for target",
            UserWarning,
        )

    if labels_true.ndim != 1:
        raise ValueError("labels_true must be 1D: shape is %r" % (labels_true.shape,))
    if labels_pred.ndim != 1:
        raise ValueError("labels_pred must be 1D: shape is %r" % (labels_pred.shape,))
    check_consistent_length(labels_true, labels_pred)
    return labels_true, labels_pred


def _as_labels(labels, input_name):
    """``check_array`` on one labeling, with errors that name it."""
    try:
        return check_array(
            labels,
            ensure_2d=False,
            ensure_min_samples=0,
            dtype=None,
            input_name=input_name,
        )
    except ValueError as error:
        if input_name in str(error):
            raise
        # NumPy's own messages (a label that is a sequence: "setting an array
        # element with a sequence ... inhomogeneous shape") name nothing.
        raise ValueError(
            f"{input_name} must be a 1-D array-like of hashable scalar labels "
            f"(integers, strings, ...), not of sequences: {error}"
        ) from None


def _is_continuous(labels):
    """Whether floating-point labels hold non-integral values.

    Mirrors the "continuous" rule of :func:`sklearn.utils.multiclass.type_of_target`.
    """
    if labels.dtype.kind != "f" or labels.size == 0:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.any(labels != np.trunc(labels)))


def _factorize(labels, input_name="labels"):
    """Map labels to dense integer codes.

    Parameters
    ----------
    labels : ndarray of shape (n_samples,)
        Validated labels.

    input_name : str, default="labels"
        Name of the labeling, used in error messages.

    Returns
    -------
    codes : ndarray of shape (n_samples,), dtype=intp
        ``codes[k]`` is the index of the cluster of sample ``k``, in
        ``range(n_clusters)``.

    counts : ndarray of shape (n_clusters,), dtype=intp
        The (all positive) cluster sizes.
    """
    n_samples = labels.shape[0]
    if n_samples == 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)

    kind = labels.dtype.kind
    if kind == "b":
        labels = labels.view(np.uint8)
        kind = "u"
    if kind in "iu":
        low, high = int(labels.min()), int(labels.max())
        span = high - low + 1
        if span <= max(_DENSE_SPAN_FACTOR * n_samples, _MIN_DENSE_SPAN):
            if kind == "i":
                # Widen first: ``x - min`` can overflow a narrow signed dtype
                # (int8 labels in [-128, 127] span 256 values).
                shifted = labels.astype(np.int64, copy=False) - low
            else:
                # Unsigned values may exceed the int64 range; x >= min so the
                # difference cannot wrap.
                shifted = labels - labels.dtype.type(low)
            shifted = shifted.astype(np.intp, copy=False)
            value_counts = np.bincount(shifted, minlength=span)
            present = value_counts > 0
            remap = np.cumsum(present, dtype=np.intp) - 1
            return remap[shifted], value_counts[present].astype(np.intp, copy=False)

    if kind in "OUS":
        # Sorting Python objects is slower than hashing them, and wrong for
        # types without a total order (mixed ints and strings, None, sets).
        # Even fixed-width strings hash faster than NumPy sorts them (by
        # about 1.5x at 1e5 to 1e6 labels).
        return _factorize_hashable(labels, input_name)

    try:
        _, codes, counts = np.unique(labels, return_inverse=True, return_counts=True)
    except TypeError:
        return _factorize_hashable(labels, input_name)
    return codes.reshape(-1).astype(np.intp, copy=False), counts.astype(
        np.intp, copy=False
    )


def _factorize_hashable(labels, input_name="labels"):
    """Factorise arbitrary hashable labels through a dict, in O(N).

    Labels equal under ``==`` (and so of equal hash) share a code, as Python
    sets and dicts consider them: ``1``, ``1.0`` and ``True`` are one label.
    """
    values = labels.tolist()
    try:
        # ``dict.fromkeys`` and ``map`` keep the per-sample loops in C; only
        # the loop over the distinct labels runs in Python.
        table = dict.fromkeys(values)
    except TypeError as exc:
        raise TypeError(
            f"Clustering labels must be hashable; {input_name} holds an "
            f"unhashable label: {exc}."
        ) from exc
    for code, key in enumerate(table):
        table[key] = code
    codes = np.fromiter(
        map(table.__getitem__, values), dtype=np.intp, count=len(values)
    )
    counts = np.bincount(codes, minlength=len(table)).astype(np.intp, copy=False)
    return codes, counts


def _contingency_cells(codes_true, n_true, codes_pred, n_pred):
    """Non-zero cells of the contingency table, without ever building it.

    Returns
    -------
    rows, cols : ndarray of shape (n_cells,), dtype=int64
        Cluster indices of each non-zero cell.

    cell_counts : ndarray of shape (n_cells,), dtype=int64
        Number of samples in each cell.
    """
    n_samples = codes_true.shape[0]
    joint = codes_true.astype(np.int64) * n_pred + codes_pred
    n_table = n_true * n_pred  # Python int: cannot overflow.
    if n_table <= max(_DENSE_SPAN_FACTOR * n_samples, _MIN_DENSE_SPAN):
        table = np.bincount(joint.astype(np.intp, copy=False), minlength=n_table)
        cells = np.flatnonzero(table)
        cell_counts = table[cells].astype(np.int64, copy=False)
        cells = cells.astype(np.int64, copy=False)
    else:
        joint.sort()
        starts = np.flatnonzero(np.concatenate(([True], joint[1:] != joint[:-1])))
        cells = joint[starts]
        cell_counts = np.diff(np.append(starts, n_samples)).astype(np.int64)
    # Floor division by a scalar is several times faster than ``np.divmod``.
    rows = cells // n_pred
    cols = cells - rows * n_pred
    return rows, cols, cell_counts


@validate_params(
    {
        "labels_true": ["array-like"],
        "labels_pred": ["array-like"],
    },
    prefer_skip_nested_validation=True,
)
def variation_of_information(labels_true, labels_pred):
    """Variation of information between two clusterings.

    The variation of information (VI) of Meila (2007) is the information lost
    plus the information gained when going from clustering :math:`U` to
    clustering :math:`V`.  It is a true metric on the set of partitions of the
    samples: zero if and only if the two clusterings are equal up to a
    renaming of the labels, symmetric, and it satisfies the triangle
    inequality.  Unlike most clustering scores, lower is better.

    The value is exact: it is computed from the non-zero cells of the
    contingency table only, in :math:`O(N)` time for integer labels in a
    moderate range and :math:`O(N \\log N)` otherwise, with :math:`O(N)`
    memory however many clusters there are.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        A clustering of the data into disjoint subsets, :math:`U` in the
        formula below.  Labels may be any hashable values: integers
        (including negative ones, such as ``-1`` for noise), strings, or
        objects such as tuples or ``None`` in an object array.  Labels are
        only compared with each other, so their values and order do not
        matter.  A list is converted with :func:`numpy.asarray`, which turns
        ``[1, "a"]`` into the strings ``["1", "a"]``; pass an object array to
        keep labels of mixed types distinct.

    labels_pred : array-like of shape (n_samples,)
        A clustering of the same samples, :math:`V` in the formula below.
        Same conventions as ``labels_true``.

    Returns
    -------
    vi : float
        The variation of information, in nats (natural logarithm), between
        ``0.0`` and :math:`\\log N`.  It is ``0.0`` for empty labelings,
        which, as in scikit-learn's clustering metrics, are treated as
        identical clusterings.

    Raises
    ------
    ValueError
        If a labeling is not one-dimensional, the two labelings differ in
        length, or a labeling contains NaN or infinity.

    See Also
    --------
    vi_scorer : Scorer for model selection, returning ``-vi``.
    sklearn.metrics.mutual_info_score : Mutual information :math:`I(U, V)`.
    sklearn.metrics.normalized_mutual_info_score : Mutual information scaled
        to :math:`[0, 1]`.
    sklearn.metrics.adjusted_rand_score : Pair-counting similarity, adjusted
        for chance.

    Notes
    -----
    Let :math:`N` be the number of samples, :math:`a_i = |U_i|` and
    :math:`b_j = |V_j|` the cluster sizes and :math:`n_{ij} = |U_i \\cap V_j|`
    the cells of the contingency table.  With the empirical probabilities
    :math:`P(i) = a_i / N`, :math:`P'(j) = b_j / N` and
    :math:`P(i, j) = n_{ij} / N`,

    .. math::

        \\mathrm{VI}(U, V) = H(U) + H(V) - 2 I(U, V)
                          = H(U \\mid V) + H(V \\mid U)
                          = \\sum_{i, j \\,:\\, n_{ij} > 0} \\frac{n_{ij}}{N}
                            \\log \\frac{a_i \\, b_j}{n_{ij}^2},

    where :math:`H(U) = -\\sum_i P(i) \\log P(i)` is the entropy and
    :math:`I(U, V) = \\sum_{i, j} P(i, j) \\log \\frac{P(i, j)}{P(i) P'(j)}`
    the mutual information.  Since :math:`n_{ij} \\le \\min(a_i, b_j)`, every
    term of the last sum is non-negative; summing them, rather than
    subtracting entropies, avoids cancellation, so that equal clusterings
    give exactly ``0.0`` and nearly equal ones a small value with full
    relative accuracy.  As in scikit-learn, any negative round-off would be
    clipped to ``0.0``.

    The bounds :math:`0 \\le \\mathrm{VI}(U, V) \\le \\log N` hold, the upper
    one being reached by one cluster against :math:`N` singletons
    (Meila, 2007, Property 5).

    References
    ----------
    .. [1] M. Meila, "Comparing clusterings -- an information based distance",
       Journal of Multivariate Analysis, 98(5):873-895, 2007.
       https://doi.org/10.1016/j.jmva.2006.11.013

    Examples
    --------
    >>> from rankmix.metrics import variation_of_information
    >>> variation_of_information([0, 0, 1, 1], [0, 0, 1, 1])
    0.0

    Renaming clusters does not change the clustering:

    >>> variation_of_information([0, 0, 1, 1], ["b", "b", "a", "a"])
    0.0

    Merging two equal halves into one cluster loses :math:`\\log 2` nats:

    >>> round(variation_of_information([0, 0, 1, 1], [0, 0, 0, 0]), 4)
    0.6931

    Labels may be any hashable objects, given as an object array:

    >>> import numpy as np
    >>> labels = np.empty(4, dtype=object)
    >>> labels[:] = [("a", 1), ("a", 1), None, -1]
    >>> round(variation_of_information([0, 0, 1, 1], labels), 4)
    0.3466
    """
    labels_true, labels_pred = _check_clusterings(labels_true, labels_pred)
    n_samples = labels_true.shape[0]
    if n_samples == 0:
        return 0.0

    codes_true, sizes_true = _factorize(labels_true, "labels_true")
    codes_pred, sizes_pred = _factorize(labels_pred, "labels_pred")
    rows, cols, cell_counts = _contingency_cells(
        codes_true, sizes_true.shape[0], codes_pred, sizes_pred.shape[0]
    )

    # Float products: a_i * b_j can exceed the int64 range for N > 3e9, and
    # the ratio is >= 1 after rounding too, since rounding is monotonic.
    n_ij = cell_counts.astype(np.float64)
    ratio = sizes_true.astype(np.float64)[rows]
    ratio *= sizes_pred.astype(np.float64)[cols]
    ratio /= n_ij * n_ij
    np.log(ratio, out=ratio)
    vi = float(np.dot(n_ij, ratio)) / n_samples
    return max(vi, 0.0)


#: Scorer for :func:`variation_of_information`, for model selection.
#:
#: Built as ``make_scorer(variation_of_information, greater_is_better=False)``:
#: ``vi_scorer(estimator, X, y)`` compares ``y`` with ``estimator.predict(X)``
#: and returns **minus** the variation of information, so that greater is
#: better, as for scikit-learn's ``neg_*`` scorers.  Scores are therefore
#: ``<= 0`` and the best is ``0.0``; negate ``best_score_`` or
#: ``cross_val_score`` results to read them as VI.  Use it as
#: ``GridSearchCV(clusterer, param_grid, scoring=vi_scorer)`` with clusterers
#: that implement ``predict``.
vi_scorer = make_scorer(variation_of_information, greater_is_better=False)
