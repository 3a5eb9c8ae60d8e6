# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Validation of ranking data sets.

A ranking data set is a 2-D integer array of shape ``(n_rankings, t_max)``. Row
``i`` lists the items of ranking ``i``, best first, as integer ids in
``[0, n_items)``; a top-``t`` ranking with ``t < t_max`` is padded with ``-1``
after its last item. A list of sequences of unequal length is accepted and padded
with ``-1``.

The compiled kernels index arrays by item id with bounds checks off, so
:func:`check_rankings` must be airtight: every entry of the array it returns is
either ``-1`` padding or an id in ``[0, n_items)``, every row holds at least one
item, its items are distinct and ``-1`` only pads the end. Anything else raises
an error naming the first bad row, before any compiled code runs.
"""

import contextlib
import numbers
import reprlib
from collections.abc import Mapping, Set
from itertools import chain, repeat

import numpy as np
from scipy import sparse
from sklearn.utils.validation import validate_data

from ._sklearn_compat import _get_feature_names
from ._warnings import warn

__all__ = [
    "check_known_items",
    "check_permutations",
    "check_rankings",
    "check_theta",
    "ranking_lengths",
]

# The largest value of a count that compiled code takes as an np.intp.
INTP_MAX = int(np.iinfo(np.intp).max)

# The strongest prior any model takes, in pseudo-observations (Mallows' nu and
# nu r_j, the Gaussian nu_0, the sum of the Dirichlet's parameters). The
# densities are differences of terms of order strength x log(strength) (log
# gammas, a prior's log-density), each exact to about 1e-16 of its size: 1e-3
# nats at 1e12, tens of nats beyond 1e15, where scores turn positive and the
# chains split at random. Such a prior fixes its parameter to double precision
# anyway.
MAX_PRIOR_STRENGTH = 1e12

# Later code allocates arrays of size n_items; no real ranking data set has more
# items than this, so larger ids are almost certainly a mistake (and could
# overflow 32-bit indices).
_MAX_ITEM_ID = 2**31 - 1
_MAX_N_ITEMS = _MAX_ITEM_ID + 1


def check_rankings(
    X, *, n_items=None, input_name="X", ensure_min_samples=1, first_row=0
):
    """Validate rankings and return them as an array padded with -1.

    Parameters
    ----------
    X : array-like of shape (n_rankings, t_max)
        Rankings, one per row, best item first, as integer item ids. Shorter
        (top-t) rankings are padded with -1 after their last item. May be a
        NumPy array of any integer dtype, a float array whose values are all
        integers, or a list (or tuple) of sequences, possibly of unequal
        lengths, which are then padded with -1; a 1-D container of such
        sequences (a pandas Series of lists, an object array of arrays) reads
        as that list.

    n_items : int, default=None
        Number of items. If given, every item id must lie in ``[0, n_items)``
        and no ranking may hold more than ``n_items`` items. If None, item ids
        must only be non-negative (and at most ``2**31 - 1``): the caller
        infers ``n_items`` as the largest id plus one.

    input_name : str, default="X"
        Name of the input, used in error messages.

    ensure_min_samples : int, default=1
        Minimum number of rankings ``X`` must hold.

    first_row : int, default=0
        The index of X's first row in the data it belongs to (a chunk of a dask
        array's), added to the row an error names.

    Returns
    -------
    X_checked : ndarray of shape (n_rankings, t_max), dtype=np.intp
        A fresh C-contiguous copy of the rankings, padded with -1. It never
        shares memory with ``X``.

    Raises
    ------
    TypeError
        If ``X`` is sparse or holds values that are not real numbers (booleans,
        complex numbers, strings, other objects), or if ``n_items`` or
        ``ensure_min_samples`` is not an integer.
    ValueError
        If ``X`` is not 2-D, is empty or holds fewer than
        ``ensure_min_samples`` rankings, or if a row is malformed: NaN or
        infinite value, non-integer value, negative id other than -1, id not
        below ``n_items`` (or above ``2**31 - 1``), -1 padding followed by an
        item, no item at all, more than ``n_items`` items, or an item ranked
        twice. The message names the first bad row (0-based, plus
        ``first_row``) and its fault.

    Examples
    --------
    >>> from rankmix._validation import check_rankings
    >>> check_rankings([[2, 0], [1]])
    array([[ 2,  0],
           [ 1, -1]])
    >>> check_rankings([[0.0, 1.0], [2.0, -1.0]], n_items=3)
    array([[ 0,  1],
           [ 2, -1]])
    >>> check_rankings([[0, 1], [2, 0, 2]])
    Traceback (most recent call last):
        ...
    ValueError: Row 1 of X ranks item 2 more than once (at positions 0 and 2): \
the items of a ranking must be distinct.
    """
    n_items = _check_n_items(n_items)
    ensure_min_samples = _check_ensure_min_samples(ensure_min_samples)

    X = _as_numeric_array(X, input_name)
    _check_shape(X, input_name, ensure_min_samples)

    X_checked = _validate_fast(X, n_items)
    if X_checked is None:
        _raise_first_row_fault(X, input_name, n_items, first_row)
    return X_checked


def ranking_lengths(X):
    """Return the number of items of each ranking.

    Parameters
    ----------
    X : ndarray of shape (n_rankings, t_max)
        Rankings already validated by :func:`check_rankings`, padded with -1.

    Returns
    -------
    lengths : ndarray of shape (n_rankings,), dtype=np.intp
        Number of entries of each row that are not -1 padding.

    Raises
    ------
    ValueError
        If ``X`` is not 2-D.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmix._validation import ranking_lengths
    >>> ranking_lengths(np.array([[2, 0, 1], [1, -1, -1], [0, 2, -1]]))
    array([3, 1, 2])
    """
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(
            f"Expected a 2-D array of rankings, got an array of shape {X.shape}."
        )
    # Padding is only ever trailing in validated data, so counting the
    # non-padding entries gives the length.
    return np.count_nonzero(X != -1, axis=1).astype(np.intp, copy=False)


def check_known_items(X, n_items, *, inferred, input_name="X"):
    """Refuse item ids that a fitted ranking model does not know.

    Parameters
    ----------
    X : ndarray of shape (n_rankings, t_max)
        Rankings already validated by :func:`check_rankings`, padded with -1.
    n_items : int
        The fitted model's number of items: ids must lie in ``[0, n_items)``.
    inferred : bool
        Whether the model took ``n_items`` from its training data (the
        estimator's ``n_items=None``): the message then says to pass it, the
        usual fix when a cross-validation fold misses the highest ids.
    input_name : str, default="X"
        Name of the input, used in error messages.

    Returns
    -------
    X : ndarray
        The same array.

    Raises
    ------
    ValueError
        Naming the first row that holds an id not below ``n_items``.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmix._validation import check_known_items
    >>> check_known_items(np.array([[0, 3]]), 3, inferred=False)
    Traceback (most recent call last):
    ...
    ValueError: Row 0 of X holds item 3, but n_items=3: item ids must lie in [0, 3).
    """
    if X.max() < n_items:
        return X
    row = int(np.argmax((X >= n_items).any(axis=1)))
    message = (
        f"Row {row} of {input_name} holds item {int(X[row].max())}, but n_items="
        f"{n_items}: item ids must lie in [0, {n_items})."
    )
    if inferred:
        # typical of cross-validation: a fold's training rankings missed the
        # highest item ids
        message += (
            " The model took n_items from the largest item id of its training "
            "data; pass n_items (the number of items) to the estimator, for "
            "example in cross-validation."
        )
    raise ValueError(message)


def check_training_rankings(X, n_items, space=None):
    """Validate training rankings for an estimator with an ``n_items`` parameter.

    Parameters
    ----------
    X : array-like of shape (n_rankings, t_max) or list of sequences
        Rankings, as for :func:`check_rankings`.
    n_items : int or None
        The estimator's ``n_items``; None infers it from the data.
    space : array-like or list of sequences, default=None
        Rankings that belong to the data's items and stages without being
        fitted (rows of ``sample_weight`` 0): the width and the inferred number
        of items cover them too.

    Returns
    -------
    X_checked : ndarray of shape (n_rankings, t), dtype=np.intp
        The rankings without the columns that only pad (they would cost a
        look-up per pair for nothing in the kernels): ``t`` is the longest length
        (of ``space`` too, padding X with -1 if need be).
    n_items_ : int
        ``n_items``, or the largest item id + 1 when it is None.
    """
    X = check_rankings(X, n_items=n_items)
    width, inferred = ranking_lengths(X).max(), int(X.max()) + 1
    if space is not None:
        space = check_rankings(space, n_items=n_items)
        width = max(width, ranking_lengths(space).max())
        inferred = max(inferred, int(space.max()) + 1)
    if n_items is None and not _holds_item_zero(X, space):
        warn_item_zero_unranked(inferred)
    # np.pad copies: the result never shares memory with the input
    X = np.pad(
        X[:, :width], ((0, 0), (0, width - min(width, X.shape[1]))), constant_values=-1
    )
    return X, inferred if n_items is None else n_items


# NumPy's words for an array beyond the address space (see sized_by)
_TOO_BIG = ("array is too big", "Maximum allowed dimension exceeded")


@contextlib.contextmanager
def sized_by(name, value):
    """Name the argument when NumPy cannot allocate the arrays it sizes.

    NumPy refuses an array larger than the address space with a ValueError
    ("array is too big", or "Maximum allowed dimension exceeded" for a
    dimension past 2**63 - 1) and one larger than the memory with a
    MemoryError; neither says which argument asked for it. Inside this context
    they become a ValueError naming ``name`` and its ``value``.
    """
    try:
        yield
    except MemoryError:
        raise ValueError(
            f"{name}={value!r} asks for more memory than is available."
        ) from None
    except ValueError as error:
        if not any(words in str(error) for words in _TOO_BIG):
            raise
        raise ValueError(
            f"{name}={value!r} asks for an array larger than NumPy can allocate."
        ) from None


def check_flag(value, name):
    """Refuse a ``value`` other than True or False (a string such as "no" is
    truthy: it would silently mean True)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def real_parameter(value, name):
    """``value`` as a float64 array, or a TypeError naming the parameter ``name``.

    Only real numbers pass: not booleans (NumPy reads [1, True] as [1, 1]),
    strings, None, ragged sequences or complex numbers (NumPy would drop a
    complex array's imaginary part with only a warning). An integer beyond the
    float range becomes inf, for the caller's range check to refuse.
    """
    if isinstance(value, (list, tuple)):
        value = np.asarray(value, dtype=object)
    array = np.asarray(value)
    if array.dtype.kind == "O":
        flat = array.ravel()
        for position, item in enumerate(flat):
            if isinstance(item, (bool, np.bool_)) or not isinstance(item, numbers.Real):
                raise TypeError(
                    f"{name} must hold real numbers, got {reprlib.repr(item)} of "
                    f"type {type(item).__name__} at position {position}."
                )
        with np.errstate(over="ignore"):
            return np.array([_as_float(item) for item in flat]).reshape(array.shape)
    if array.dtype.kind not in "iuf":
        raise TypeError(
            f"{name} must be a real number or an array of real numbers, got "
            f"{reprlib.repr(value)} (dtype {array.dtype})."
        )
    return array.astype(np.float64)


def _as_float(number):
    """``float(number)``, with inf of its sign for an integer beyond the range."""
    try:
        return float(number)
    except OverflowError:
        return float("inf") if number > 0 else float("-inf")


def check_sparse_structure(X):
    """Raise a ValueError if the sparse matrix X is malformed.

    SciPy builds a CSR, CSC or BSR matrix from (data, indices, indptr), and
    lets a COO or LIL matrix's index arrays be changed in place, without
    checking that the indices lie inside its shape or that indptr never
    decreases; compiled code (SciPy's own conversions and indexing among it)
    would then read and write out of bounds. The arrays are only read here:
    SciPy's ``check_format`` would rewrite the caller's. A LIL matrix is
    checked through its CSR copy (SciPy's conversion only copies its lists);
    DOK and DIA matrices, whose conversions check or mask their indices, and
    other inputs pass.
    """
    if not sparse.issparse(X):
        return
    if X.format == "coo":
        fault = _coo_fault(X)
    elif X.format in ("csr", "csc", "bsr"):
        fault = _compressed_fault(X)
    elif X.format == "lil":
        fault = _compressed_fault(X.tocsr())
    else:
        return
    if fault is not None:
        raise ValueError(
            f"X is a malformed {X.format.upper()} sparse matrix: {fault} (SciPy "
            "does not check this when its index arrays are given or changed)."
        )


def _compressed_fault(X):
    """What is wrong with the CSR, CSC or BSR matrix X's arrays, or None."""
    block_rows, block_columns = X.blocksize if X.format == "bsr" else (1, 1)
    rows, columns = X.shape[0] // block_rows, X.shape[1] // block_columns
    major, minor = (columns, rows) if X.format == "csc" else (rows, columns)
    indptr, indices = np.asarray(X.indptr), np.asarray(X.indices)
    if indptr.ndim != 1 or indices.ndim != 1 or len(indptr) != major + 1:
        return f"indptr must have shape ({major + 1},), got {indptr.shape}"
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0):
        return "indptr must start at 0 and never decrease"
    if indptr[-1] > min(len(indices), len(X.data)):
        return f"indptr ends at {indptr[-1]}, past the {len(indices)} indices"
    used = indices[: indptr[-1]]
    if used.size and not (0 <= used.min() and used.max() < minor):
        return f"its indices must lie in [0, {minor})"
    return None


def _coo_fault(X):
    """What is wrong with the COO matrix X's row and col arrays, or None."""
    data = np.asarray(X.data)
    for name, index, size in (("row", X.row, X.shape[0]), ("col", X.col, X.shape[1])):
        index = np.asarray(index)
        if index.ndim != 1 or len(index) != len(data):
            return f"{name} must have the shape of data, {data.shape}"
        if index.size and not (0 <= index.min() and index.max() < size):
            return f"its {name} indices must lie in [0, {size})"
    return None


def validate_numbers(estimator, X, expected, **params):
    """scikit-learn's ``validate_data``, naming X when a string is not a number.

    NumPy's message for such a string ("could not convert string to float:
    'a'") names neither X nor what it should hold; ``expected`` says the
    latter ("real numbers"). Numeric strings ("0.5") are converted, as
    scikit-learn's estimators convert them. A malformed sparse X is refused
    first (:func:`check_sparse_structure`).
    """
    check_sparse_structure(X)
    try:
        return validate_data(estimator, X, **params)
    except ValueError as error:
        if not str(error).startswith("could not convert"):
            raise  # scikit-learn's own messages name X
        raise ValueError(
            f"X holds a value that is not a number ({error}): X must hold "
            f"{expected} (numeric strings such as '2' are converted, as "
            "scikit-learn does)."
        ) from None
    except TypeError as error:
        if not str(error).startswith("Cannot cast array data"):
            raise
        # a structured (record) array: NumPy's message names neither X nor why
        raise TypeError(
            f"X must hold {expected}, not records of dtype {np.asarray(X).dtype}: "
            "pass its fields as columns of a plain array, for example with "
            "numpy.lib.recfunctions.structured_to_unstructured."
        ) from None


def warn_item_zero_unranked(n_items_):
    """Warn that item 0 is in no ranking of data whose ``n_items_`` was inferred.

    Ids that start at 1 (R's habit, or ranks 1..n passed as orderings) leave a
    phantom item 0 that changes the model; top-t rankings may also leave out a
    real item 0, and then n_items says how many items there are.
    """
    if n_items_ > 1:
        warn(
            f"Item 0 appears in no ranking, so n_items_ = {n_items_} (the largest "
            "id + 1) counts an item that no one ranked. Item ids start at 0: if "
            "yours start at 1, subtract 1 from them; if item 0 is a real item "
            "that no (top-t) ranking holds, pass n_items, which also silences "
            "this warning.",
            UserWarning,
        )


def _holds_item_zero(X, space):
    """Whether item 0 is in a ranking of X or of ``space`` (None for none)."""
    return bool((X == 0).any()) or (space is not None and bool((space == 0).any()))


def check_query_rankings(X, n_items_, *, inferred):
    """Validate rankings to score with a fitted model over ``n_items_`` items.

    As :func:`check_training_rankings`, and ids must lie in ``[0, n_items_)``
    (:func:`check_known_items`, ``inferred`` as there).
    """
    X = check_known_items(check_rankings(X), n_items_, inferred=inferred)
    return X[:, : ranking_lengths(X).max()].copy()


def column_names(X):
    """The string column names of ``X`` (a pandas data frame's), or None.

    scikit-learn's rule: None unless every name is a string, and a TypeError for
    names of mixed types. A ``fit`` reads them before its work, and keeps them
    with :func:`record_column_names` once ``n_features_in_`` is known.
    """
    return _get_feature_names(X)


def record_column_names(estimator, names):
    """Set ``feature_names_in_`` to the first ``n_features_in_`` of ``names``, or
    delete it when ``names`` is None, as scikit-learn's
    ``validate_data(reset=True)`` does (for rankings, the columns past
    ``n_features_in_`` only pad)."""
    if names is not None:
        estimator.feature_names_in_ = names[: estimator.n_features_in_]
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_


def check_rank_names(estimator, X):
    """Check the column names of rankings ``X`` against the fit's.

    As scikit-learn's ``validate_data(reset=False)`` checks features, except
    that a query may hold fewer ranks.

    Parameters
    ----------
    estimator : estimator instance
        A fitted ranking estimator (``feature_names_in_`` if its training
        rankings had names).
    X : array-like, data frame or list of sequences
        The rankings as the user passed them, before :func:`check_rankings`.

    Raises
    ------
    ValueError
        When a column of ``X`` and the fit's column of the same rank have
        different names. A column holds the items at one rank, so a frame whose
        columns come in another order would read as other rankings. The
        columns they share are compared: a query of top-2 rankings may hold
        the first two columns only, and a wider one may end in columns of any
        name. Those hold only padding for DPMallowsClustering, which refuses
        rankings longer than its training ones; the kernel density and the
        blurring mean shift score such rankings, their last ranks unnamed by
        the fit and so unchecked.

    Warns
    -----
    UserWarning
        As scikit-learn, when only one of the fit and ``X`` had names.
    """
    names = column_names(X)
    fitted = getattr(estimator, "feature_names_in_", None)
    kind = type(estimator).__name__
    if fitted is None and names is not None:
        warn(f"X has feature names, but {kind} was fitted without feature names")
    elif fitted is not None and names is None:
        warn(
            f"X does not have valid feature names, but {kind} was fitted with "
            "feature names"
        )
    elif fitted is not None:
        shared = min(len(names), len(fitted))
        differ = np.flatnonzero(names[:shared] != fitted[:shared])
        if len(differ):
            j = int(differ[0])
            raise ValueError(
                "The feature names should match those that were passed during "
                f"fit. Column {j} of X is named {names[j]!r}, but the fit's column "
                f"{j} (rank {j + 1}) was {fitted[j]!r}: the columns of rankings "
                "are ranks, best first, and must come in the fit's order (a "
                "query may hold fewer of them). feature_names_in_: "
                f"{reprlib.repr(fitted.tolist())}."
            )


def _check_n_items(n_items):
    """Validate ``n_items``: None or a positive integer of reasonable size."""
    if n_items is None:
        return None
    if isinstance(n_items, (bool, np.bool_)) or not isinstance(
        n_items, numbers.Integral
    ):
        raise TypeError(
            "n_items must be a positive integer or None, got "
            f"{n_items!r} of type {type(n_items).__name__}."
        )
    n_items = int(n_items)
    if n_items < 1:
        raise ValueError(f"n_items must be a positive integer, got {n_items}.")
    if n_items > _MAX_N_ITEMS:
        raise ValueError(
            f"n_items={n_items} exceeds the largest supported number of items, "
            f"{_MAX_N_ITEMS} (2**31)."
        )
    return n_items


def _check_ensure_min_samples(ensure_min_samples):
    """Validate ``ensure_min_samples``: a positive integer.

    Empty input is always an error, so a minimum below 1 is meaningless.
    """
    if isinstance(ensure_min_samples, (bool, np.bool_)) or not isinstance(
        ensure_min_samples, numbers.Integral
    ):
        raise TypeError(
            "ensure_min_samples must be a positive integer, got "
            f"{ensure_min_samples!r} of type {type(ensure_min_samples).__name__}."
        )
    if ensure_min_samples < 1:
        raise ValueError(
            f"ensure_min_samples must be a positive integer, got {ensure_min_samples}."
        )
    return int(ensure_min_samples)


def _as_numeric_array(X, input_name):
    """Convert ``X`` to an integer or float ndarray, padding ragged lists.

    The result may share memory with ``X``; its values are not validated yet.
    """
    if sparse.issparse(X):
        # An implicit zero of a sparse matrix would read as item 0.
        raise TypeError(
            f"Sparse input is not supported: {input_name} must be a dense 2-D "
            f"array of item ids, got {type(X).__name__}."
        )
    if isinstance(X, (list, tuple)):
        try:
            array = np.asarray(X)
        except ValueError:
            # NumPy refuses inhomogeneous nesting: rankings of unequal length.
            return _pad_ragged(X, input_name)
        if array.dtype.kind in "iuf":
            # NumPy reads True as 1 among numbers: look for booleans in X itself
            _refuse_booleans(X, input_name)
    else:
        # Also covers pandas DataFrames and other array-likes.
        array = np.asarray(X)
        if (
            array.dtype == object
            and array.ndim == 1
            and len(array)
            and any(map(isinstance, array, repeat(_ROW_TYPES)))
        ):
            # a 1-D container of rankings (a pandas Series of lists, an object
            # array of arrays): its rows, as a list of them would give (and
            # the same errors, for a missing row)
            return _as_numeric_array(list(array), input_name)

    def locate(position):
        if array.ndim == 2 and array.shape[1] > 0:
            return position // array.shape[1]
        return None

    return _to_numeric_dtype(array, input_name, locate)


_BOOLEAN_TYPES = frozenset({bool, np.bool_})
_ROW_TYPES = (list, tuple, np.ndarray)


def _refuse_booleans(X, input_name):
    """Raise a TypeError if the list ``X`` or one of its rows holds a boolean.

    NumPy converts ``[[0, True]]`` to an integer array, which would read
    ``True`` as item 1, so booleans must be caught in the list itself. The
    scans run in C (``map(type, ...)``); only the error path loops in Python.
    """
    if _BOOLEAN_TYPES.intersection(map(type, X)):
        position = next(i for i, v in enumerate(X) if type(v) in _BOOLEAN_TYPES)
        raise TypeError(
            f"{input_name} holds {X[position]!r} at position {position}: booleans "
            "are not item ids. Expected integer item ids."
        )
    if not all(map(isinstance, X, repeat(_ROW_TYPES))):
        return  # other rows are refused later, with their own message
    if not _BOOLEAN_TYPES.intersection(map(type, chain.from_iterable(X))):
        return
    for row, values in enumerate(X):
        for value in values:
            if type(value) in _BOOLEAN_TYPES:
                raise TypeError(
                    f"Row {row} of {input_name} holds {value!r} of type "
                    f"{type(value).__name__}: booleans are not item ids. "
                    "Expected integer item ids."
                )


def _pad_ragged(X, input_name):
    """Turn a list of sequences of unequal length into a -1 padded array."""
    lengths = np.empty(len(X), dtype=np.intp)
    for i, row in enumerate(X):
        length = None
        # Strings, sets and mappings have a length but are not rankings.
        if not isinstance(row, (str, bytes, Set, Mapping)):
            try:
                length = len(row)
            except TypeError:
                pass
        if length is None:
            raise ValueError(
                f"Row {i} of {input_name} is not a sequence of item ids (got "
                f"{type(row).__name__}): {input_name} must be a 2-D array or a "
                "list of rankings."
            )
        lengths[i] = length

    try:
        flat = np.asarray(list(chain.from_iterable(X)))
    except ValueError:
        flat = None
    if flat is None or flat.ndim != 1:
        raise ValueError(
            f"Expected a 2-D array of rankings for {input_name}, but its rows "
            "hold nested sequences: it has more than 2 dimensions."
        )
    if flat.dtype.kind in "iuf":
        _refuse_booleans(X, input_name)
    ends = np.cumsum(lengths)

    def locate(position):
        return int(np.searchsorted(ends, position, side="right"))

    flat = _to_numeric_dtype(flat, input_name, locate)

    t_max = int(lengths.max()) if len(lengths) else 0
    padded = np.full((len(X), t_max), -1, dtype=flat.dtype)
    # Boolean mask assignment fills in row-major order, the order of ``flat``.
    padded[np.arange(t_max) < lengths[:, np.newaxis]] = flat
    return padded


def _to_numeric_dtype(array, input_name, locate):
    """Check the dtype of ``array`` and convert object arrays to float.

    ``locate`` maps a position in ``array.ravel()`` to its row index (or None),
    to name the row of a value that is not a number.
    """
    kind = array.dtype.kind
    if kind in "iuf":
        return array
    if kind == "b":
        raise TypeError(
            f"{input_name} has boolean dtype: expected integer item ids. A "
            "boolean array is not a ranking data set."
        )
    if kind == "c":
        raise TypeError(
            f"{input_name} has complex dtype {array.dtype}: expected integer item ids."
        )
    if kind in "US":
        raise TypeError(
            f"{input_name} holds strings (dtype {array.dtype}): expected integer "
            "item ids. Map item labels to integer ids first, for example with "
            "numpy.unique(..., return_inverse=True)."
        )
    if kind != "O":
        raise TypeError(
            f"{input_name} has dtype {array.dtype}, which is not numeric: "
            "expected integer item ids."
        )

    # Object arrays come from lists mixing types (e.g. None), Python integers
    # too large for int64 or pandas frames of mixed dtypes. Check every value
    # explicitly: NumPy would happily convert the string "1" to 1.0.
    flat = array.ravel()
    values = np.empty(flat.shape, dtype=np.float64)
    for position, value in enumerate(flat):
        if value is None or type(value).__name__ == "NAType":  # pandas' NA
            raise TypeError(
                f"{_where(input_name, locate(position))} holds {value!r}, a missing "
                "value: expected integer item ids. Pad shorter rankings with -1, "
                f"not {value!r}."
            )
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(
                f"{_where(input_name, locate(position))} holds {value!r} of type "
                f"{type(value).__name__}, which is not a number: expected "
                "integer item ids."
            )
        try:
            values[position] = float(value)
        except OverflowError:
            # Only integers beyond the float range get here: far too large.
            raise ValueError(
                f"{_where(input_name, locate(position))} holds item {value}, "
                "larger than the largest supported item id "
                f"{_MAX_ITEM_ID} (2**31 - 1)."
            ) from None
    return values.reshape(array.shape)


def _where(input_name, row):
    if row is None:
        return input_name
    return f"Row {row} of {input_name}"


def _check_shape(X, input_name, ensure_min_samples):
    """Check that ``X`` is 2-D and non-empty."""
    if X.ndim == 0:
        raise ValueError(
            f"Expected a 2-D array of rankings for {input_name}, got a scalar: "
            f"{X.item()!r}."
        )
    if X.ndim == 1:
        if X.size == 0:
            raise ValueError(
                f"{input_name} is empty: it holds 0 rankings, while a minimum of "
                f"{ensure_min_samples} is required "
                f"(ensure_min_samples={ensure_min_samples})."
            )
        raise ValueError(
            f"Expected a 2-D array of rankings for {input_name}, got a 1-D array "
            f"of shape {X.shape}. If it holds a single ranking, pass a list of "
            f"one ranking, [{input_name}], or {input_name}.reshape(1, -1)."
        )
    if X.ndim > 2:
        raise ValueError(
            f"Expected a 2-D array of rankings for {input_name}, got a "
            f"{X.ndim}-D array of shape {X.shape}."
        )
    n_rankings, t_max = X.shape
    if n_rankings < ensure_min_samples:
        empty = f"{input_name} is empty: it" if n_rankings == 0 else input_name
        plural = "" if n_rankings == 1 else "s"
        raise ValueError(
            f"{empty} holds {n_rankings} ranking{plural} (shape={X.shape}), while a "
            f"minimum of {ensure_min_samples} is required "
            f"(ensure_min_samples={ensure_min_samples})."
        )
    if t_max == 0:
        raise ValueError(
            f"{input_name} is empty: it has 0 feature(s) (shape={X.shape}) while a "
            "minimum of 1 is required, so no ranking holds any item."
        )


def _validate_fast(X, n_items):
    """Return a validated np.intp copy of 2-D ``X``, or None if it has a fault.

    Valid data is the common case, so this only runs whole-array reductions
    that are cheap, and leaves finding and explaining the first bad row to
    :func:`_raise_first_row_fault`. Each test below is sufficient on its own:
    None is returned unless every row is valid.
    """
    upper = _MAX_N_ITEMS if n_items is None else n_items
    # Python numbers: NumPy would cast ``upper`` to X's dtype, and overflow
    # float16
    low, high = X.min().item(), X.max().item()
    # NaN propagates through min and max and fails both comparisons, and inf
    # fails the second one, so this also ensures that all values are finite.
    if not (low >= -1 and high < upper):
        return None
    # All values lie in [-1, 2**31), so the cast cannot overflow. np.array
    # copies by default: the result never aliases the caller's data.
    X_checked = np.array(X, dtype=np.intp, order="C")
    if X.dtype.kind == "f" and not (X_checked == X).all():
        return None  # a value with a fractional part was truncated
    padding = X_checked == -1
    # -1 followed by an item: padding in the middle of a row.
    if (padding[:, :-1] > padding[:, 1:]).any():
        return None
    # Padding is only trailing now, so a row without items starts with -1...
    if padding[:, 0].any():
        return None
    # ...and a row holds more than n_items items iff its entry n_items is one.
    if n_items is not None and X.shape[1] > n_items:
        if not padding[:, n_items].all():
            return None
    if _has_duplicates_fast(X_checked, padding, int(high)).any():
        return None
    return X_checked


def _has_duplicates_fast(X, padding, max_id):
    """Return whether each row of ``X`` ranks an item twice.

    ``X`` is an np.intp array whose values lie in [-1, ``max_id``] and whose
    padding is only trailing; ``padding`` is ``X == -1``.
    """
    if max_id >= 63:
        return _has_duplicates(X)
    # Few items (the common case): set bit ``item + 1`` of a 64-bit word per
    # row and compare the number of bits set with the number of items. This
    # costs a few passes over the columns, much less than sorting every row.
    one = np.uint64(1)
    seen = np.zeros(X.shape[0], dtype=np.uint64)
    # Preallocated buffers: no temporary arrays inside the loop.
    shifts = np.empty_like(seen)
    bits = np.empty_like(seen)
    for column in X.T:
        np.add(column, 1, out=shifts, casting="unsafe")  # in [0, 63]: exact
        np.left_shift(one, shifts, out=bits)
        seen |= bits
    seen &= ~one  # bit 0 stands for the -1 padding
    lengths = X.shape[1] - np.count_nonzero(padding, axis=1)
    return np.bitwise_count(seen) != lengths


def _raise_first_row_fault(X, input_name, n_items, first_row=0):
    """Raise a ValueError naming the first malformed row of 2-D ``X`` (its index
    plus ``first_row``)."""
    faults = _row_faults(X, n_items)
    bad = np.logical_or.reduce(list(faults.values()))
    if not bad.any():  # pragma: no cover
        # Unreachable unless _validate_fast and _row_faults disagree; never
        # let such data through.
        raise ValueError(f"{input_name} is not a valid ranking data set.")
    row = int(np.argmax(bad))
    # ``faults`` is ordered by priority: report the first fault of that row.
    fault = next(name for name, mask in faults.items() if mask[row])
    raise ValueError(
        _describe_fault(fault, X[row], first_row + row, input_name, n_items)
    )


def _row_faults(X, n_items):
    """Return a boolean mask of faulty rows per kind of fault, by priority.

    Priority matters when a row has several faults: a NaN would otherwise also
    count as an item, for example, so the non-finite check comes first.
    """
    faults = {}
    if X.dtype.kind == "f":
        finite = np.isfinite(X)
        faults["non_finite"] = ~finite.all(axis=1)
        faults["non_integer"] = (finite & (X != np.floor(X))).any(axis=1)
    # NumPy compares integer arrays with out-of-range Python integers exactly,
    # so these comparisons are safe for unsigned and narrow dtypes too.
    faults["negative"] = (X < -1).any(axis=1)
    upper = _MAX_N_ITEMS if n_items is None else n_items
    faults["too_large"] = (X >= upper).any(axis=1)
    padding = X == -1
    faults["inner_padding"] = (padding[:, :-1] & ~padding[:, 1:]).any(axis=1)
    lengths = X.shape[1] - np.count_nonzero(padding, axis=1)
    faults["no_item"] = lengths == 0
    if n_items is not None:
        faults["too_long"] = lengths > n_items
    faults["duplicate"] = _has_duplicates(X)
    return faults


def _has_duplicates(X):
    """Return whether each row of ``X`` holds an item (not -1) twice."""
    # Equal values are neighbours once each row is sorted. NaN never compares
    # equal, so it cannot create a false duplicate.
    X_sorted = np.sort(X, axis=1)
    repeated = X_sorted[:, 1:] == X_sorted[:, :-1]
    return (repeated & (X_sorted[:, 1:] != -1)).any(axis=1)


def _describe_fault(fault, x, row, input_name, n_items):
    """Explain ``fault`` in row ``x`` (1-D), the ``row``-th row of the input."""
    where = f"Row {row} of {input_name}"
    if fault == "non_finite":
        value = x[~np.isfinite(x)][0]
        return (
            f"{where} holds a non-finite value ({_format(value)}): item ids must "
            "be finite integers. Pad shorter rankings with -1, not NaN."
        )
    if fault == "non_integer":
        value = x[np.isfinite(x) & (x != np.floor(x))][0]
        return (
            f"{where} holds {_format(value)}, which is not an integer: item ids "
            "must be integers."
        )
    if fault == "negative":
        value = x[x < -1][0]
        return (
            f"{where} holds item {_format(value)}: item ids must be non-negative "
            "(-1 may only pad the end of a ranking)."
        )
    if fault == "too_large":
        if n_items is None:
            value = x[x >= _MAX_N_ITEMS][0]
            return (
                f"{where} holds item {_format(value)}, larger than the largest "
                f"supported item id {_MAX_ITEM_ID} (2**31 - 1)."
            )
        value = x[x >= n_items][0]
        return (
            f"{where} holds item {_format(value)}, but n_items={n_items}: item "
            f"ids must lie in [0, {n_items})."
        )
    if fault == "inner_padding":
        padding = x == -1
        position = int(np.flatnonzero(padding[:-1] & ~padding[1:])[0])
        return (
            f"{where} has -1 padding in the middle: position {position} is -1 but "
            f"position {position + 1} holds item {_format(x[position + 1])}. "
            "-1 may only pad the end of a ranking."
        )
    if fault == "no_item":
        return f"{where} holds no item: every ranking must rank at least one item."
    if fault == "too_long":
        length = int(np.count_nonzero(x != -1))
        return (
            f"{where} ranks {length} items, but n_items={n_items}: a ranking "
            "cannot hold more items than there are."
        )
    if fault == "duplicate":
        x_sorted = np.sort(x)
        repeated = (x_sorted[1:] == x_sorted[:-1]) & (x_sorted[1:] != -1)
        value = x_sorted[1:][repeated][0]
        first, second = np.flatnonzero(x == value)[:2]
        return (
            f"{where} ranks item {_format(value)} more than once (at positions "
            f"{first} and {second}): the items of a ranking must be distinct."
        )
    raise AssertionError(f"unknown fault {fault!r}")  # pragma: no cover


def _format(value):
    """Format a scalar id for a message: ``12.0`` as ``12``, ``nan`` as is."""
    if isinstance(value, (float, np.floating)) and np.isfinite(value):
        if value == np.floor(value):
            return str(int(value))
    if isinstance(value, np.generic):
        value = value.item()
    return str(value)


def check_permutations(sigma, *, input_name="sigma"):
    """Validate one or several central rankings (full permutations).

    Parameters
    ----------
    sigma : array-like of shape (n_items,) or (n_centres, n_items)
        Each row a permutation of ``0..n_items-1``, best first.
    input_name : str, default="sigma"
        Name of the input, used in error messages.

    Returns
    -------
    sigmas : ndarray of shape (n_centres, n_items), dtype=np.intp
        A fresh C-contiguous copy, one central ranking per row.
    single : bool
        Whether ``sigma`` was one ranking (1-D).

    Raises
    ------
    ValueError
        If ``sigma`` is empty, not 1-D or 2-D, or a row is not a permutation.

    Examples
    --------
    >>> from rankmix._validation import check_permutations
    >>> check_permutations([2, 0, 1])
    (array([[2, 0, 1]]), True)
    """
    array = _as_numeric_array(sigma, input_name)
    if array.ndim not in (1, 2) or array.size == 0:
        raise ValueError(
            f"{input_name} must be a non-empty 1-D permutation or a 2-D array of "
            f"permutations, got shape {array.shape}."
        )
    single = array.ndim == 1
    array = np.atleast_2d(array)
    if not np.isfinite(array).all() or (array != np.round(array)).any():
        raise ValueError(f"{input_name} must hold integer item ids.")
    n_items = array.shape[1]
    # ids out of range first, as given: the cast to intp would wrap 1e19 or a
    # uint64 beyond 2**63 into a negative id
    bad = np.any((array < 0) | (array >= n_items), axis=1)
    if not bad.any():
        sigmas = np.ascontiguousarray(array, dtype=np.intp)
        bad = np.any(np.sort(sigmas, axis=1) != np.arange(n_items), axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        where = input_name if single else f"Row {row} of {input_name}"
        raise ValueError(
            f"{where} is not a permutation of 0..{n_items - 1}: every item id must "
            f"appear exactly once, got {[int(v) for v in array[row]]}."
        )
    return sigmas, single


def check_theta(theta, *, n_stages, n_centres=1, n_items=None, input_name="theta"):
    """Validate GM dispersions and broadcast them to (n_centres, n_stages).

    Parameters
    ----------
    theta : float or array-like of shape (n,) or (n_centres, n)
        Non-negative, finite dispersion per stage, ``n >= n_stages`` (or
        ``n_items - 1``, see ``n_items``); a scalar is the same theta at every
        stage, a 1-D array is shared by all centres.
    n_stages : int
        The number of stages needed (the longest ranking).
    n_centres : int, default=1
        The number of centres.
    n_items : int, default=None
        With it, the stage of the last place of a full ranking (``n_stages ==
        n_items``) may be left out, and gets theta 0: one item is left there,
        its code is 0 and its normaliser 1 whatever theta.
    input_name : str, default="theta"
        Name of the input, used in error messages.

    Returns
    -------
    thetas : ndarray of shape (n_centres, max(n, n_stages)), dtype=np.float64

    Examples
    --------
    >>> from rankmix._validation import check_theta
    >>> check_theta(0.5, n_stages=3)
    array([[0.5, 0.5, 0.5]])
    """
    array = _as_dispersions(theta, input_name)
    if array.ndim == 0:
        array = np.full(max(n_stages, 1), float(array))
    if array.ndim == 1:
        array = np.broadcast_to(array, (n_centres, array.shape[0]))
    if array.ndim != 2 or array.shape[0] != n_centres:
        raise ValueError(
            f"{input_name} must be a scalar, a 1-D array or an array of shape "
            f"({n_centres}, n_stages), got shape {array.shape}."
        )
    needed = n_stages if n_items is None else min(n_stages, n_items - 1)
    if array.shape[1] < needed:
        but = ", the last place of a full ranking excepted" if needed < n_stages else ""
        raise ValueError(
            f"{input_name} has {array.shape[1]} stages, but the rankings need "
            f"{needed} (one per place of the longest ranking{but})."
        )
    if not np.isfinite(array).all() or (array < 0).any():
        bad = ~np.isfinite(array) | (array < 0)
        centre, stage = np.unravel_index(int(np.argmax(bad)), array.shape)
        where = (
            f"stage {stage}" if n_centres == 1 else f"centre {centre}, stage {stage}"
        )
        raise ValueError(
            f"{input_name} must be finite and >= 0 at every stage, got "
            f"{float(array[centre, stage])} at {where}."
        )
    if array.shape[1] < n_stages:  # the last place of a full ranking
        array = np.pad(array, ((0, 0), (0, n_stages - array.shape[1])))
    return np.ascontiguousarray(array)


def _as_dispersions(theta, input_name):
    """Convert ``theta`` to a float64 array, refusing what is not real numbers.

    The compiled kernels read theta through typed memoryviews, so ``None`` (or
    anything else that is not an array of real numbers) must never get
    through: a TypeError names ``input_name`` instead.
    """
    if theta is None:
        raise TypeError(
            f"{input_name} must be a non-negative number or an array of them, got None."
        )
    if sparse.issparse(theta):
        raise TypeError(
            f"{input_name} must be a dense array of dispersions, got "
            f"{type(theta).__name__}."
        )
    try:
        array = np.asarray(theta)
    except ValueError:
        raise ValueError(
            f"{input_name} must be a scalar, a 1-D array or a 2-D array of "
            "dispersions, but its rows have different lengths."
        ) from None
    kind = array.dtype.kind
    if kind in "iuf":
        with np.errstate(over="ignore"):
            return array.astype(np.float64)
    if kind != "O":
        described = {"b": "booleans", "c": "complex numbers", "U": "strings"}
        raise TypeError(
            f"{input_name} holds {described.get(kind, 'non-numbers')} (dtype "
            f"{array.dtype}): expected non-negative real dispersions."
        )
    flat = array.ravel()
    values = np.empty(flat.shape, dtype=np.float64)
    for position, value in enumerate(flat):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(
                f"{input_name} holds {value!r} of type {type(value).__name__} at "
                f"position {position}: expected non-negative real dispersions."
            )
        try:
            values[position] = float(value)
        except OverflowError:
            values[position] = np.inf  # refused as not finite by the caller
    return values.reshape(array.shape)
