# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""ScoresToRankings: from a score or rating matrix to top-t rankings."""

import numbers
from numbers import Integral

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .._sklearn_compat import (
    Interval,
    StrOptions,
    _check_feature_names_in,
    _fit_context,
    check_parameters,
)
from .._validation import check_sparse_structure
from .._warnings import warn

__all__ = ["ScoresToRankings"]


class ScoresToRankings(TransformerMixin, BaseEstimator):
    """Turn a score or rating matrix into top-t rankings.

    Each row of the input holds one judge's scores of the items (the columns):
    higher is better and NaN means "not rated". Row ``i`` of the output lists the
    ``t`` items judge ``i`` scored highest, best first, as column indices, padded
    with -1: the ranking format of :class:`~rankmix.DPMallowsClustering`. A judge
    who rated fewer than ``t`` items gets a shorter (top-k) ranking of every item
    they rated.

    Each row is transformed on its own (with ``ties="random"``, only in
    distribution: see ``random_state``); ``fit`` only records the number of
    items (columns) and their names, and checks the scores.

    Parameters
    ----------
    t : int or None, default=5
        Length of the rankings: the number of best items kept per judge. None
        ranks every item a judge rated. A ``t`` larger than the number of items
        ranks every rated item too, with a warning at fit time.

    ties : {"stable", "random"}, default="stable"
        How items with equal scores are ordered.

        - "stable": the item with the lower column index comes first. Simple
          and reproducible, but it favours the first columns: a judge who gave
          the same top score to items 3 and 7 always ranks 3 above 7.
        - "random": every order of the tied items is equally likely, whatever
          their columns, drawn from ``random_state``.

        Ties only change which of the equally scored items comes first, or
        which of them make the cut at rank ``t``; an item scored strictly
        higher is always ranked above.

    min_rated : int, default=1
        Least number of items a judge must have rated. A ranking needs at least
        one item, so judges who rated nothing are always "too few"; a larger
        value (for instance ``min_rated=t``) also flags judges too sparse to give
        a full top-t ranking.

    handle_few_rated : {"error", "empty"}, default="error"
        What to do with a judge who rated fewer than ``min_rated`` items.

        - "error": raise a ValueError naming the first such row. A transformer
          cannot drop rows, least of all inside a
          :class:`~sklearn.pipeline.Pipeline` (the rankings must stay aligned
          with the rows of ``X``), so such judges must be removed from ``X``
          before it reaches the transformer.
        - "empty": the judge's output row is all -1 (no ranking). Such rows are
          not valid input to the clustering estimators; this is meant for use
          outside a pipeline, where row ``i`` of the output must still be
          judge ``i``: keep the rankings with ``rankings[:, 0] != -1``.

    random_state : int, RandomState instance or None, default=None
        Breaks ties when ``ties="random"`` (ignored otherwise). Each call to
        ``transform`` draws one random order of all the rated entries of its
        ``X`` from it: an int gives the same rankings for the same ``X`` at
        every call, but which of a judge's tied items comes first also depends
        on the other rows transformed with it (in distribution it does not).
        Pass an int for reproducible output across multiple function calls.
        See :term:`Glossary <random_state>`.

    Attributes
    ----------
    n_features_in_ : int
        Number of items (columns) seen during :term:`fit`.

    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of the items seen during :term:`fit`. Defined only when ``X``
        has feature names that are all strings (a pandas DataFrame).

    See Also
    --------
    rankmix.DPMallowsClustering : Clusters the rankings this transformer makes.

    Notes
    -----
    **Input.** A dense array-like of real numbers (a NumPy array, a list of
    rows, a pandas DataFrame), NaN, None or ``pandas.NA`` where a judge did not
    rate an item, or a SciPy sparse matrix whose *stored* entries are the
    ratings: an item not stored in a row was not rated by that judge, and an
    explicitly stored zero is a rating of zero (the convention of rating
    matrices such as recommenderlab's). Many SciPy operations drop explicit
    zeros (``eliminate_zeros``, arithmetic), so build the matrix from the
    (judge, item, rating) triples directly. A stored NaN also means "not
    rated", and duplicate entries are summed, as SciPy does. Scores must be
    finite; boolean arrays are refused because False could mean either "did not
    like" or "not rated".

    **Output.** An integer array of shape ``(n_samples, w)``, where
    ``w = min(t, n_features_in_)`` (``n_features_in_`` when ``t`` is None): the
    same width for any input, with feature names ``"rank1"``, ``"rank2"``, ...

    **In a pipeline.** Item ids are column indices, so there are
    ``n_features_in_`` items, but a fold of cross-validation need not contain
    the highest one. :class:`~rankmix.DPMallowsClustering` with ``n_items=None``
    takes the largest id of its training data plus one as the number of items:
    it then fails on held-out rankings holding a higher id, and its held-out
    log-likelihoods (which depend on the number of items) are not comparable
    across folds. Pass the number of columns explicitly, as in the example
    below. With ``t=None`` the rankings' length varies with the judges, and the
    clusterer cannot score a held-out ranking longer than every training
    ranking, so prefer a fixed ``t`` there.

    Do not select ``t`` by the clusterer's default ``score``: the held-out
    log-likelihood of top-3 rankings is a density over a different (smaller)
    space than that of top-5 rankings, and the smaller ``t`` looks better (a
    top-5 ranking is a rarer event than its top-3 prefix). Select ``t``
    against known labels instead (for instance with
    :data:`rankmix.metrics.vi_scorer`); ``alpha`` or ``nu`` can be selected by
    the default score for a fixed ``t``.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmix.preprocessing import ScoresToRankings
    >>> scores = np.array([[4.0, np.nan, 5.0, 1.0],
    ...                    [2.0, 3.0, np.nan, 3.0],
    ...                    [np.nan, 1.0, np.nan, np.nan]])
    >>> to_rankings = ScoresToRankings(t=2).fit(scores)
    >>> to_rankings.transform(scores)
    array([[ 2,  0],
           [ 1,  3],
           [ 1, -1]])
    >>> to_rankings.get_feature_names_out()
    array(['rank1', 'rank2'], dtype=object)

    Clustering judges from their ratings in a pipeline:

    >>> from sklearn.pipeline import make_pipeline
    >>> from rankmix import DPMallowsClustering
    >>> rng = np.random.RandomState(0)
    >>> taste = np.vstack([np.arange(8.0), np.arange(8.0)[::-1]])  # two tastes
    >>> ratings = taste[np.repeat([0, 1], 30)] + rng.normal(size=(60, 8))
    >>> ratings[rng.uniform(size=ratings.shape) < 0.1] = np.nan  # not rated
    >>> pipe = make_pipeline(
    ...     ScoresToRankings(t=3),
    ...     DPMallowsClustering(alpha=0.05, n_items=ratings.shape[1], random_state=0),
    ... )
    >>> labels = pipe.fit_predict(ratings)
    >>> pipe[-1].n_clusters_
    2
    >>> from sklearn.metrics import adjusted_rand_score
    >>> adjusted_rand_score(np.repeat([0, 1], 30), labels)  # one cluster per taste
    1.0
    """

    _parameter_constraints: dict = {
        "t": [Interval(Integral, 1, None, closed="left"), None],
        "ties": [StrOptions({"stable", "random"})],
        "min_rated": [Interval(Integral, 1, None, closed="left")],
        "handle_few_rated": [StrOptions({"error", "empty"})],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        t=5,
        *,
        ties="stable",
        min_rated=1,
        handle_few_rated="error",
        random_state=None,
    ):
        self.t = t
        self.ties = ties
        self.min_rated = min_rated
        self.handle_few_rated = handle_few_rated
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Record the number of items and check the scores.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_items)
            Scores, one row per judge and one column per item, higher is
            better, NaN (or, in a sparse matrix, not stored) where not rated.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The fitted transformer.
        """
        scores, _ = self._validate_scores(X, reset=True)
        n_items = self.n_features_in_
        if self.t is not None and self.t > n_items:
            warn(
                f"t={self.t} is greater than the number of items "
                f"(n_features_in_={n_items}): every rated item will be ranked, "
                "as with t=None.",
                UserWarning,
            )
        if self.min_rated > n_items:
            raise ValueError(
                f"min_rated={self.min_rated} is greater than the number of items "
                f"(n_features_in_={n_items}): no judge can rate that many."
            )
        # Fail at fit time on data that transform would refuse.
        self._check_n_rated(_n_rated(scores), sparse.issparse(scores))
        return self

    def transform(self, X):
        """Rank the best-scored items of each judge.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_items)
            Scores, one row per judge and one column per item, higher is
            better, NaN (or, in a sparse matrix, not stored) where not rated.

        Returns
        -------
        rankings : ndarray of shape (n_samples, min(t, n_items)), dtype=np.intp
            Row ``i`` lists the column indices of judge ``i``'s best-scored
            items, best first, padded with -1 when the judge rated fewer
            items than the width.
        """
        check_is_fitted(self)
        check_parameters(self)  # t, ties and min_rated are read here too
        scores, exact = self._validate_scores(X, reset=False)
        n_rated = _n_rated(scores)
        few = self._check_n_rated(n_rated, sparse.issparse(scores))
        tie_keys = None
        if self.ties == "random":
            # One random permutation of all rated entries, in row-major order
            # (the order of a canonical CSR matrix): tied items are ranked in
            # the order of their keys, so every order of them is equally likely
            # and the dense and sparse forms of the same ratings agree.
            rng = check_random_state(self.random_state)
            tie_keys = rng.permutation(int(n_rated.sum()))
        if sparse.issparse(scores):
            rankings = _rank_sparse(scores, n_rated, self._width(), tie_keys)
        else:
            rankings = _rank_dense(
                scores, n_rated, self._width(), tie_keys, exact=exact
            )
        rankings[few] = -1
        return rankings

    def get_feature_names_out(self, input_features=None):
        """Get output feature names for transformation.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Only checked against ``feature_names_in_`` (if defined) and
            ``n_features_in_``: the output columns are ranks, not items.

        Returns
        -------
        feature_names_out : ndarray of str objects
            ``["rank1", "rank2", ..., "rank<w>"]``, ``w`` the output width.
        """
        check_is_fitted(self, "n_features_in_")
        check_parameters(self)
        _check_feature_names_in(self, input_features, generate_names=False)
        return np.asarray(
            [f"rank{j}" for j in range(1, self._width() + 1)], dtype=object
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        # The output holds integer item ids whatever the input dtype.
        tags.transformer_tags.preserves_dtype = []
        return tags

    # -- helpers -----------------------------------------------------------

    def _width(self):
        """Number of output columns: the longest ranking the parameters allow."""
        if self.t is None:
            return self.n_features_in_
        return min(self.t, self.n_features_in_)

    def _validate_scores(self, X, *, reset):
        """Return ``X`` as a float64 array or canonical CSR matrix, and exact keys.

        Converts and checks the values first, for errors that name the faulty
        row, then lets scikit-learn record or check the number of features and
        their names on the original ``X``. The second value is None, or for a
        dense integer ``X`` holding scores beyond 2**53 (which float64 rounds,
        turning distinct scores into ties) the integers themselves, to rank by.
        """
        scores, exact = _as_scores(X)
        validate_data(self, X, skip_check_array=True, reset=reset)
        values = scores.data if sparse.issparse(scores) else scores
        infinite = np.isinf(values)
        if infinite.any():
            if sparse.issparse(scores):
                flat = int(np.argmax(infinite))
                row = int(np.searchsorted(scores.indptr, flat, side="right")) - 1
                column = int(scores.indices[flat])
            else:
                row, column = np.unravel_index(int(np.argmax(infinite)), values.shape)
            raise ValueError(
                f"Row {row} of X holds an infinite score ({values[infinite][0]} "
                f"in column {column}): scores must be finite. Mark the items a "
                "judge did not rate with NaN."
            )
        return scores, exact

    def _check_n_rated(self, n_rated, is_sparse):
        """Apply ``min_rated``: raise, or return the mask of rows to empty."""
        few = n_rated < self.min_rated
        if self.handle_few_rated == "error" and few.any():
            rows = np.flatnonzero(few)
            row = int(rows[0])
            others = len(rows) - 1
            more = f" (so do {others} other rows)" if others > 1 else ""
            if others == 1:
                more = " (so does 1 other row)"
            raise ValueError(
                f"Row {row} of X rates {n_rated[row]} item"
                f"{'' if n_rated[row] == 1 else 's'}, fewer than "
                f"min_rated={self.min_rated}{more}. A transformer cannot drop "
                "rows, so remove such judges from X first, for example "
                "X[np.sum(~np.isnan(X), axis=1) >= min_rated] for a dense X, or "
                "pass handle_few_rated='empty' to get an all -1 row for them."
                + (
                    " In a sparse X, an item not stored in a row is not rated."
                    if is_sparse
                    else ""
                )
            )
        return few


def _as_scores(X):
    """Convert ``X`` to a float64 ndarray or a canonical float64 CSR matrix.

    Refuses what is not a 2-D, non-empty matrix of real numbers, naming the row
    of the first value that is not a number. Infinite values are left to the
    caller. Also returns the integer array itself when ``X`` is a dense
    integer array holding scores that float64 cannot represent exactly (else
    None); sparse or mixed (object) input holding such integers is refused.
    """
    exact = None
    if sparse.issparse(X):
        check_sparse_structure(X)
        _check_kind(X.dtype, "X")
        if not X.dtype.isnative:  # SciPy's conversions refuse big-endian data
            X = X.astype(X.dtype.newbyteorder("="))
        if X.dtype.kind in "iu":
            _refuse_inexact_integers(sparse.csr_matrix(X))
        scores = sparse.csr_matrix(X, dtype=np.float64, copy=True)
        # Rows are read in column order from indptr/indices below, and the
        # random tie keys are drawn in that order.
        scores.sum_duplicates()
    else:
        try:
            array = np.asarray(X)
            if array.dtype.kind in "US" and isinstance(X, (list, tuple)):
                # A list mixing numbers and strings: keep the values as they
                # are, to name the first one that is not a number.
                array = np.asarray(X, dtype=object)
        except ValueError:
            # NumPy refuses inhomogeneous nesting: rows of unequal length.
            raise ValueError(
                "X must be a 2-D array of scores, but its rows have different "
                "lengths. Fill the items a judge did not rate with NaN."
            ) from None
        if array.dtype.kind == "f":
            given = _values_if_rounded(X, array)
            if given is not None:
                array = given
        if array.dtype.kind == "O":
            scores = _object_to_float(array)
        else:
            _check_kind(array.dtype, "X")
            scores = array.astype(np.float64)
            if array.dtype.kind in "iu" and array.size and _beyond_float(array):
                exact = array
    if scores.ndim != 2:
        hint = (
            " Reshape your data with X.reshape(1, -1) if it holds the scores of "
            "a single judge."
            if scores.ndim == 1
            else ""
        )
        raise ValueError(
            "Expected a 2-D array of scores (one row per judge, one column per "
            f"item), got an array of shape {scores.shape}.{hint}"
        )
    # The wording of scikit-learn's check_array, which estimator checks expect.
    if scores.shape[0] == 0:
        raise ValueError(
            f"Found array with 0 sample(s) (shape={scores.shape}) while a minimum "
            "of 1 is required: X holds no judge."
        )
    if scores.shape[1] == 0:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={scores.shape}) while a "
            "minimum of 1 is required: X holds no item."
        )
    return scores, exact


# Integers of larger magnitude are not all exact in float64.
_MAX_EXACT_INTEGER = 2**53


def _values_if_rounded(X, array):
    """``X``'s own values as an object array if the float64 ``array`` NumPy
    made of the list or data frame ``X`` rounded an integer beyond 2**53
    (mixed with floats, such as NaN for a missing score), else None: two
    distinct scores may then have become a tie.

    Only values beyond 2**53 can have been rounded: those are compared, as
    Python objects, with what they became (an int equals a float only if the
    float is exact). A frame without integer columns has none.
    """
    if isinstance(X, np.ndarray):
        return None
    if _is_frame(X):
        if not any(dtype.kind in "iu" for dtype in _numpy_dtypes(X)):
            return None
        X = X.astype(object)  # its own conversion to objects goes via float64
    suspect = np.isfinite(array) & (np.abs(array) > _MAX_EXACT_INTEGER)
    if not suspect.any():
        return None
    given = np.asarray(X, dtype=object)
    if given.shape == array.shape and np.any(given[suspect] != array[suspect]):
        return given
    return None


def _is_frame(X):
    """Whether ``X`` is a pandas (or alike) data frame."""
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "astype")


def _numpy_dtypes(frame):
    """The NumPy dtypes of a frame's columns (object for extension types)."""
    for dtype in frame.dtypes:
        try:
            yield np.dtype(dtype)
        except TypeError:  # pandas' nullable Int64 and the like
            yield np.dtype(getattr(dtype, "numpy_dtype", object))


def _beyond_float(array):
    """Whether the integer ``array`` holds a value float64 may round."""
    return (
        int(array.max()) > _MAX_EXACT_INTEGER or int(array.min()) < -_MAX_EXACT_INTEGER
    )


def _refuse_inexact_integers(matrix):
    """Refuse a sparse integer matrix holding scores float64 would round."""
    values = matrix.data
    if values.size == 0 or not _beyond_float(values):
        return
    flat = int(np.argmax(np.abs(values.astype(np.float64)) > _MAX_EXACT_INTEGER))
    row = int(np.searchsorted(matrix.indptr, flat, side="right")) - 1
    raise ValueError(
        f"Row {row} of X holds the integer score {int(values[flat])}, beyond "
        "2**53: float64 would round it and could turn distinct scores into "
        "ties. Pass a dense integer array, which is ranked exactly, or rescale "
        "the scores."
    )


def _check_kind(dtype, input_name):
    """Refuse a dtype that does not hold real-valued scores."""
    kind = dtype.kind
    if kind in "iuf":
        return
    if kind == "b":
        raise TypeError(
            f"{input_name} has boolean dtype: expected real-valued scores. False "
            "could mean 'disliked' or 'not rated'; convert to float, with NaN "
            "for the items not rated."
        )
    if kind in "US":
        raise TypeError(
            f"{input_name} holds strings (dtype {dtype}): expected real-valued "
            "scores. Convert them to numbers first."
        )
    if kind == "c":
        # ValueError with scikit-learn's wording, which estimator checks expect.
        raise ValueError(
            f"Complex data not supported: {input_name} has dtype {dtype}, "
            "expected real-valued scores."
        )
    raise TypeError(
        f"{input_name} has dtype {dtype}, which is not real-valued: expected "
        "real-valued scores."
    )


def _object_to_float(array):
    """Convert an object array (mixed lists, pandas frames) to float64.

    Each value is checked explicitly, because NumPy would silently convert the
    string "1.5" to 1.5. None and pandas' NA mean "not rated".
    """
    flat = array.ravel()
    values = np.empty(flat.shape, dtype=np.float64)
    width = array.shape[1] if array.ndim == 2 and array.shape[1] > 0 else None
    for position, value in enumerate(flat):
        if value is None or _is_pandas_na(value):
            values[position] = np.nan
        elif isinstance(value, numbers.Real) and not isinstance(
            value, (bool, np.bool_)
        ):
            if isinstance(value, numbers.Integral) and (
                abs(int(value)) > _MAX_EXACT_INTEGER
            ):
                where = (
                    f"Row {position // width} of X (column {position % width})"
                    if width is not None
                    else "X"
                )
                raise ValueError(
                    f"{where} holds the integer score {value}, beyond 2**53, in "
                    "an array NumPy stores as objects (mixed values, or "
                    "integers beyond 64 bits): float64 would round it and "
                    "could turn distinct scores into ties. Pass an int64 array "
                    "without missing values, which is ranked exactly, or "
                    "rescale the scores."
                )
            values[position] = float(value)
        else:
            where = (
                f"Row {position // width} of X (column {position % width})"
                if width is not None
                else "X"
            )
            raise TypeError(
                f"{where} holds {value!r} of type {type(value).__name__}, which "
                "is not a real number: expected real-valued scores, NaN or None "
                "where not rated."
            )
    return values.reshape(array.shape)


def _is_pandas_na(value):
    """Whether ``value`` is ``pandas.NA``, without importing pandas."""
    kind = type(value)
    return kind.__name__ == "NAType" and kind.__module__.startswith("pandas")


def _n_rated(scores):
    """Number of rated (not NaN, and for sparse input stored) items per row."""
    if sparse.issparse(scores):
        rows = np.repeat(np.arange(scores.shape[0]), np.diff(scores.indptr))
        n_nan = np.bincount(rows[np.isnan(scores.data)], minlength=scores.shape[0])
        return np.diff(scores.indptr) - n_nan
    return scores.shape[1] - np.count_nonzero(np.isnan(scores), axis=1)


def _rank_dense(scores, n_rated, width, tie_keys, exact=None):
    """Top-``width`` rankings of a float array.

    ``tie_keys`` (one distinct integer per rated entry, in row-major order)
    orders equal scores; None keeps them in column order. ``exact``, an
    integer array of the same scores, is ranked instead of ``scores`` if given.
    """
    rated = ~np.isnan(scores)
    if exact is not None:
        # ~x = -x - 1 reverses the order of signed and unsigned integers alike
        # and, unlike -x, never overflows; an integer array has no NaN.
        keys = np.invert(exact)
    else:
        # Negate so an ascending sort puts the best first; unrated entries go
        # last.
        keys = np.negative(scores)
        keys[~rated] = np.inf
    # A full sort of each row: O(n log n) per judge, 0.4 s for 73,421 x 100.
    # argpartition would avoid sorting the tail, but needs a second pass to
    # resolve ties at rank t in the documented order, which costs as much at
    # this width.
    if tie_keys is None:
        # A stable sort keeps equal scores in column order.
        order = np.argsort(keys, axis=1, kind="stable")
    else:
        # Boolean-mask assignment fills in row-major order.
        secondary = np.zeros(scores.shape, dtype=np.intp)
        secondary[rated] = tie_keys
        order = np.lexsort((secondary, keys), axis=1)
    rankings = np.ascontiguousarray(order[:, :width], dtype=np.intp)
    rankings[np.arange(width) >= n_rated[:, np.newaxis]] = -1
    return rankings


def _rank_sparse(scores, n_rated, width, tie_keys):
    """Top-``width`` rankings of a canonical CSR matrix (stored = rated).

    ``tie_keys`` as for :func:`_rank_dense`, one per stored non-NaN entry.
    """
    n_samples = scores.shape[0]
    rows = np.repeat(np.arange(n_samples), np.diff(scores.indptr))
    columns, values = scores.indices, scores.data
    rated = ~np.isnan(values)
    if not rated.all():
        rows, columns, values = rows[rated], columns[rated], values[rated]
    # Sort by row, then by decreasing score. lexsort is stable and the columns
    # of a canonical CSR row are increasing, so ties stay in column order...
    if tie_keys is None:
        order = np.lexsort((np.negative(values), rows))
    else:
        # ...or in the order of the tie keys, if the entries are first put in
        # that order (cheaper than a third sort key).
        by_key = np.empty_like(tie_keys)
        by_key[tie_keys] = np.arange(len(tie_keys))
        order = by_key[np.lexsort((np.negative(values[by_key]), rows[by_key]))]
    starts = np.cumsum(n_rated) - n_rated
    sorted_rows = rows[order]
    position = np.arange(len(order)) - starts[sorted_rows]
    kept = position < width
    rankings = np.full((n_samples, width), -1, dtype=np.intp)
    rankings[sorted_rows[kept], position[kept]] = columns[order[kept]]
    return rankings
