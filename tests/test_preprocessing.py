# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of ScoresToRankings, from score matrices to top-t rankings."""

import csv
import math
import pickle
import warnings
from itertools import permutations

import joblib
import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmix import DPMallowsClustering
from rankmix._sklearn_compat import InvalidParameterError
from rankmix._validation import check_rankings
from rankmix.metrics import vi_scorer
from rankmix.preprocessing import ScoresToRankings

from .conftest import SHARED_DATA

JESTER = SHARED_DATA / "jester"


# -- a plain-Python reference ----------------------------------------------------


def reference_rankings(scores, t):
    """Top-t rankings of a dense score matrix, ties by lower column, one by one."""
    n_items = len(scores[0])
    width = n_items if t is None else min(t, n_items)
    rankings = []
    for row in scores:
        rated = [j for j in range(n_items) if not math.isnan(row[j])]
        rated.sort(key=lambda j: (-row[j], j))
        kept = rated[:width]
        rankings.append(kept + [-1] * (width - len(kept)))
    return np.array(rankings, dtype=np.intp).reshape(len(scores), width)


def random_scores(seed, n_samples=60, n_items=9, missing=0.3, levels=4):
    """Scores on a few levels, so that ties are frequent, with NaN holes."""
    rng = np.random.RandomState(seed)
    scores = rng.randint(levels, size=(n_samples, n_items)).astype(float)
    scores[rng.uniform(size=scores.shape) < missing] = np.nan
    # Some judges rate a single item, some every item.
    scores[1, 1:] = np.nan
    scores[2] = rng.randint(levels, size=n_items)
    # Every judge rates at least one item.
    empty = np.isnan(scores).all(axis=1)
    scores[empty, 0] = 1.0
    return scores


def to_sparse(scores, fmt="csr"):
    """Sparse form of dense scores: the rated entries are stored, zeros included."""
    rows, columns = np.nonzero(~np.isnan(scores))
    matrix = sparse.coo_matrix(
        (scores[rows, columns], (rows, columns)), shape=scores.shape
    )
    return matrix.asformat(fmt)


# -- the documented ranking rule ---------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("t", [1, 3, 9, None])
@pytest.mark.parametrize("container", ["dense", "csr", "csc", "coo"])
def test_stable_ties_match_reference(seed, t, container):
    scores = random_scores(seed)
    X = scores if container == "dense" else to_sparse(scores, container)
    rankings = ScoresToRankings(t=t).fit_transform(X)
    assert rankings.dtype == np.intp
    assert_array_equal(rankings, reference_rankings(scores, t))


def test_stable_ties_lower_column_first():
    scores = np.array([[1.0, 3.0, np.nan, 3.0, 3.0, 2.0]])
    rankings = ScoresToRankings(t=4).fit_transform(scores)
    assert_array_equal(rankings, [[1, 3, 4, 5]])
    # The cut at rank t falls inside the tie: the lower columns make it.
    assert_array_equal(ScoresToRankings(t=2).fit_transform(scores), [[1, 3]])


def test_negative_zero_ties_with_zero():
    scores = np.array([[-0.0, 0.0, -1.0], [0.0, -0.0, -1.0]])
    assert_array_equal(ScoresToRankings(t=2).fit_transform(scores), [[0, 1], [0, 1]])


def test_output_is_valid_ranking_data():
    scores = random_scores(0)
    rankings = ScoresToRankings(t=4).fit_transform(scores)
    assert_array_equal(check_rankings(rankings, n_items=scores.shape[1]), rankings)


def test_transform_is_row_wise():
    scores = random_scores(1)
    transformer = ScoresToRankings(t=3).fit(scores)
    full = transformer.transform(scores)
    for i in range(len(scores)):
        assert_array_equal(transformer.transform(scores[i : i + 1]), full[i : i + 1])


def test_input_not_modified():
    scores = random_scores(2)
    original = scores.copy()
    matrix = to_sparse(scores)
    matrix_data = matrix.data.copy()
    transformer = ScoresToRankings(t=3, ties="random", random_state=0)
    transformer.fit_transform(scores)
    transformer.transform(matrix)
    assert_array_equal(scores, original)
    assert_array_equal(matrix.data, matrix_data)


# -- random ties -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("t", [1, 3, None])
def test_random_ties_only_reorder_equal_scores(seed, t):
    scores = random_scores(seed)
    rankings = ScoresToRankings(t=t, ties="random", random_state=seed).fit_transform(
        scores
    )
    reference = reference_rankings(scores, t)
    # The same score at every rank as the reference (hence the same items
    # above the cut at rank t) and the same padding; only tied items differ.
    rows = np.arange(len(scores))[:, np.newaxis]
    assert_array_equal(rankings == -1, reference == -1)
    kept = rankings != -1
    assert_array_equal(scores[rows, rankings][kept], scores[rows, reference][kept])
    # Distinct items in every row.
    assert_array_equal(check_rankings(rankings, n_items=scores.shape[1]), rankings)


def test_random_ties_reproducible():
    scores = random_scores(3, n_samples=200)
    first = ScoresToRankings(t=3, ties="random", random_state=7).fit(scores)
    again = first.transform(scores)
    assert_array_equal(again, first.transform(scores))
    assert_array_equal(
        again,
        ScoresToRankings(t=3, ties="random", random_state=7).fit_transform(scores),
    )
    other = ScoresToRankings(t=3, ties="random", random_state=8).fit_transform(scores)
    assert (other != again).any()
    assert (reference_rankings(scores, 3) != again).any()
    # random_state=None draws afresh; the result is still a valid tie order.
    ScoresToRankings(t=3, ties="random").fit_transform(scores)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_random_ties_dense_and_sparse_agree(fmt):
    scores = random_scores(4, n_samples=100)
    transformer = ScoresToRankings(t=4, ties="random", random_state=0).fit(scores)
    assert_array_equal(
        transformer.transform(to_sparse(scores, fmt)), transformer.transform(scores)
    )


@pytest.mark.parametrize(
    "tied_columns",
    [(0, 1, 2), (3, 7, 9), (9, 4, 0)],
    ids=["first-columns", "spread", "reversed"],
)
def test_random_ties_uniform_whatever_the_columns(tied_columns):
    # 30,000 judges give the same top score to three items: each of the six
    # orders of them must be about equally likely, wherever their columns are.
    n_samples = 30_000
    scores = np.tile(np.linspace(0.0, 1.0, 10), (n_samples, 1))
    scores[:, list(tied_columns)] = 5.0
    rankings = ScoresToRankings(t=3, ties="random", random_state=0).fit_transform(
        scores
    )
    counts = {order: 0 for order in permutations(sorted(tied_columns))}
    for order, count in zip(*np.unique(rankings, axis=0, return_counts=True)):
        counts[tuple(order)] = count
    assert len(counts) == 6
    expected = n_samples / 6
    # Binomial standard deviation: about 65; 6 deviations is far from flaky.
    for count in counts.values():
        assert abs(count - expected) < 6 * math.sqrt(expected * 5 / 6)


@pytest.mark.parametrize("seed", range(3))
def test_random_ties_without_ties_do_not_depend_on_column_order(seed):
    rng = np.random.RandomState(seed)
    scores = rng.normal(size=(50, 8))
    scores[rng.uniform(size=scores.shape) < 0.3] = np.nan
    scores[np.isnan(scores).all(axis=1), 0] = 0.0
    permutation = rng.permutation(8)
    transformer = ScoresToRankings(t=3, ties="random", random_state=seed)
    permuted = transformer.fit_transform(scores[:, permutation])
    # Map the permuted columns back to the original item ids.
    mapped = np.where(permuted == -1, -1, permutation[permuted])
    assert_array_equal(mapped, reference_rankings(scores, 3))


# -- short and empty rows ------------------------------------------------------------


def test_short_rows_give_shorter_rankings():
    scores = np.array(
        [
            [1.0, 2.0, 3.0, 4.0],
            [np.nan, 2.0, np.nan, 1.0],
            [np.nan, np.nan, 7.0, np.nan],
        ]
    )
    assert_array_equal(
        ScoresToRankings(t=3).fit_transform(scores),
        [[3, 2, 1], [1, 3, -1], [2, -1, -1]],
    )


def test_t_none_ranks_every_rated_item():
    scores = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, np.nan]])
    transformer = ScoresToRankings(t=None).fit(scores)
    assert_array_equal(transformer.transform(scores), [[2, 0, -1], [1, -1, -1]])
    # The width is the number of items, whatever the data transformed.
    assert transformer.transform(scores[1:]).shape == (1, 3)


def test_t_above_n_items_warns_and_ranks_all():
    scores = np.array([[1.0, 3.0, 2.0]])
    with pytest.warns(UserWarning, match=r"t=5 is greater than the number of items"):
        transformer = ScoresToRankings(t=5).fit(scores)
    assert_array_equal(transformer.transform(scores), [[1, 2, 0]])
    assert_array_equal(transformer.get_feature_names_out(), ["rank1", "rank2", "rank3"])


@pytest.mark.parametrize("method", ["fit", "fit_transform"])
def test_row_without_rating_raises_naming_it(method):
    scores = np.array([[1.0, 2.0], [np.nan, np.nan], [3.0, np.nan], [np.nan, np.nan]])
    with pytest.raises(
        ValueError,
        match=r"Row 1 of X rates 0 items, fewer than min_rated=1 \(so does 1 other "
        r"row\)\. A transformer cannot drop rows",
    ):
        getattr(ScoresToRankings(t=2), method)(scores)


def test_row_without_rating_at_transform_time():
    transformer = ScoresToRankings(t=2).fit([[1.0, 2.0]])
    with pytest.raises(ValueError, match="Row 2 of X rates 0 items"):
        transformer.transform([[1.0, 2.0], [2.0, 1.0], [np.nan, np.nan]])


def test_sparse_row_without_stored_entry_raises():
    matrix = sparse.csr_matrix(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(
        ValueError, match=r"Row 1 of X rates 0 items.*not stored in a row is not rated"
    ):
        ScoresToRankings(t=2).fit(matrix)


def test_min_rated_flags_short_rows():
    scores = np.array([[1.0, 2.0, 3.0], [np.nan, 2.0, 1.0]])
    with pytest.raises(
        ValueError, match=r"Row 1 of X rates 2 items, fewer than min_rated=3\. A"
    ):
        ScoresToRankings(t=3, min_rated=3).fit(scores)


def test_handle_few_rated_empty_keeps_rows_aligned():
    scores = np.array(
        [[1.0, 2.0, 3.0], [np.nan, np.nan, np.nan], [np.nan, 2.0, 1.0], [5, 4, 3]]
    )
    rankings = ScoresToRankings(
        t=2, min_rated=3, handle_few_rated="empty"
    ).fit_transform(scores)
    assert_array_equal(rankings, [[2, 1], [-1, -1], [-1, -1], [0, 1]])
    kept = rankings[rankings[:, 0] != -1]
    assert_array_equal(check_rankings(kept), kept)


def test_min_rated_above_n_items_raises():
    with pytest.raises(ValueError, match=r"min_rated=4 is greater than the number"):
        ScoresToRankings(t=2, min_rated=4).fit(np.ones((2, 3)))


# -- input containers ----------------------------------------------------------------


EXPECTED = np.array([[2, 0], [1, -1], [0, 1]])
SCORES = [[2.0, np.nan, 5.0], [np.nan, 1.5, np.nan], [4.0, 3.0, 3.0]]


@pytest.mark.parametrize(
    "X",
    [
        np.array(SCORES),
        np.array(SCORES, dtype=np.float32),
        np.asfortranarray(SCORES),
        np.array(SCORES, dtype=object),
        SCORES,
        tuple(tuple(row) for row in SCORES),
        [[2, None, 5], [None, 1.5, None], [4, 3, 3]],
        [[np.int64(2), np.nan, np.float32(5)], [np.nan, 1.5, np.nan], [4, 3, 3]],
        to_sparse(np.array(SCORES), "csr"),
        sparse.csr_array(to_sparse(np.array(SCORES))),
        to_sparse(np.array(SCORES), "lil"),
    ],
    ids=[
        "float64",
        "float32",
        "fortran",
        "object",
        "list",
        "tuple",
        "list-with-none",
        "numpy-scalars",
        "csr-matrix",
        "csr-array",
        "lil",
    ],
)
def test_input_containers(X):
    assert_array_equal(ScoresToRankings(t=2).fit_transform(X), EXPECTED)


def test_integer_scores():
    scores = np.array([[1, 5, 3], [2, 2, 9]], dtype=np.int8)
    assert_array_equal(ScoresToRankings(t=2).fit_transform(scores), [[1, 2], [2, 0]])


def test_sparse_explicit_zero_is_a_rating_and_nan_is_not():
    # Row 0 stores a zero (rated 0) and a NaN (not rated); column 2 is not
    # stored at all (not rated).
    matrix = sparse.csr_matrix(
        (np.array([0.0, np.nan, -1.0, 2.0]), np.array([0, 1, 0, 2]), [0, 2, 4]),
        shape=(2, 3),
    )
    assert_array_equal(
        ScoresToRankings(t=3).fit_transform(matrix), [[0, -1, -1], [2, 0, -1]]
    )


def test_pandas_dataframe_feature_names():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(np.array(SCORES), columns=["a", "b", "c"])
    transformer = ScoresToRankings(t=2).fit(frame)
    assert_array_equal(transformer.feature_names_in_, ["a", "b", "c"])
    assert_array_equal(transformer.transform(frame), EXPECTED)
    nullable = frame.astype("Float64")
    assert_array_equal(transformer.transform(nullable), EXPECTED)
    transformer.set_output(transform="pandas")
    output = transformer.transform(frame)
    assert list(output.columns) == ["rank1", "rank2"]


# -- errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, match",
    [
        ({"t": 0}, r"The 't' parameter of ScoresToRankings must be"),
        ({"t": -2}, r"The 't' parameter of ScoresToRankings must be"),
        ({"t": 2.5}, r"The 't' parameter of ScoresToRankings must be"),
        ({"ties": "first"}, r"The 'ties' parameter of ScoresToRankings must be"),
        ({"min_rated": 0}, r"The 'min_rated' parameter of ScoresToRankings must"),
        (
            {"handle_few_rated": "drop"},
            r"The 'handle_few_rated' parameter of ScoresToRankings must be",
        ),
        ({"random_state": "0"}, r"The 'random_state' parameter"),
    ],
)
def test_invalid_parameters(params, match):
    with pytest.raises(InvalidParameterError, match=match):
        ScoresToRankings(**params).fit(np.ones((2, 3)))


@pytest.mark.parametrize(
    "X, error, match",
    [
        (
            [[1.0, 2.0], [3.0, np.inf]],
            ValueError,
            r"Row 1 of X holds an infinite score \(inf in column 1\)",
        ),
        (
            [[1.0, -np.inf], [3.0, 1.0]],
            ValueError,
            r"Row 0 of X holds an infinite score \(-inf in column 1\)",
        ),
        (
            sparse.csr_matrix(np.array([[1.0, 0.0], [0.0, np.inf]])),
            ValueError,
            r"Row 1 of X holds an infinite score \(inf in column 1\)",
        ),
        (
            [[1.0, 2.0], [3.0, "good"]],
            TypeError,
            r"Row 1 of X \(column 1\) holds 'good' of type str",
        ),
        (
            np.array([["1", "2"]]),
            TypeError,
            r"X holds strings \(dtype <U1\)",
        ),
        (
            np.array([[1.0, {"a": 1}]], dtype=object),
            TypeError,
            r"Row 0 of X \(column 1\) holds \{'a': 1\} of type dict",
        ),
        (
            np.array([[1.0, True]], dtype=object),
            TypeError,
            r"Row 0 of X \(column 1\) holds True of type bool",
        ),
        (np.array([[True, False]]), TypeError, r"X has boolean dtype"),
        (
            sparse.csr_matrix(np.array([[True, False]])),
            TypeError,
            r"X has boolean dtype",
        ),
        (np.array([[1 + 1j, 2.0]]), ValueError, r"Complex data not supported"),
        (
            [[1.0, 2.0], [3.0]],
            ValueError,
            r"rows have different lengths\. Fill the items a judge did not rate "
            r"with NaN",
        ),
        (
            np.array([1.0, 2.0]),
            ValueError,
            r"got an array of shape \(2,\)\. Reshape your data with "
            r"X.reshape\(1, -1\)",
        ),
        (np.ones((2, 2, 2)), ValueError, r"got an array of shape \(2, 2, 2\)\.$"),
        (3.0, ValueError, r"got an array of shape \(\)"),
        (np.ones((0, 3)), ValueError, r"0 sample\(s\) \(shape=\(0, 3\)\)"),
        (np.ones((3, 0)), ValueError, r"0 feature\(s\) \(shape=\(3, 0\)\)"),
    ],
    ids=[
        "inf",
        "minus-inf",
        "sparse-inf",
        "mixed-list",
        "string-array",
        "object-dict",
        "object-bool",
        "bool",
        "sparse-bool",
        "complex",
        "ragged",
        "1-D",
        "3-D",
        "scalar",
        "no-row",
        "no-column",
    ],
)
def test_invalid_input(X, error, match):
    with pytest.raises(error, match=match):
        ScoresToRankings(t=2).fit(X)


def test_invalid_input_at_transform_time():
    transformer = ScoresToRankings(t=2).fit(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"Row 1 of X holds an infinite score"):
        transformer.transform([[1.0, 2.0, 3.0], [1.0, np.inf, 3.0]])


def test_wrong_width_at_transform_time():
    transformer = ScoresToRankings(t=2).fit(np.ones((2, 3)))
    with pytest.raises(
        ValueError,
        match=r"X has 4 features, but ScoresToRankings is expecting 3 features",
    ):
        transformer.transform(np.ones((2, 4)))


def test_transform_before_fit():
    with pytest.raises(NotFittedError):
        ScoresToRankings().transform(np.ones((2, 3)))


# -- scikit-learn API --------------------------------------------------------------


def test_get_feature_names_out():
    scores = np.ones((2, 6))
    assert_array_equal(
        ScoresToRankings(t=3).fit(scores).get_feature_names_out(),
        np.array(["rank1", "rank2", "rank3"], dtype=object),
    )
    transformer = ScoresToRankings(t=None).fit(scores)
    assert len(transformer.get_feature_names_out()) == 6
    assert transformer.get_feature_names_out([f"x{j}" for j in range(6)]).shape == (6,)
    with pytest.raises(ValueError, match="input_features should have length"):
        transformer.get_feature_names_out(["a", "b"])
    with pytest.raises(NotFittedError):
        ScoresToRankings().get_feature_names_out()


def test_tags():
    tags = ScoresToRankings().__sklearn_tags__()
    assert tags.input_tags.allow_nan
    assert tags.input_tags.sparse
    assert tags.transformer_tags.preserves_dtype == []


def test_clone_and_params():
    transformer = ScoresToRankings(3, ties="random", min_rated=2, random_state=4)
    params = transformer.get_params()
    assert params == {
        "t": 3,
        "ties": "random",
        "min_rated": 2,
        "handle_few_rated": "error",
        "random_state": 4,
    }
    copy = clone(transformer)
    assert copy is not transformer and copy.get_params() == params
    copy.set_params(t=None, ties="stable")
    assert copy.t is None and transformer.t == 3
    with pytest.raises(TypeError):
        ScoresToRankings(3, "random")  # keyword-only after t


@pytest.mark.parametrize("dump", ["pickle", "joblib"])
def test_pickle_round_trip(dump, tmp_path):
    scores = random_scores(5)
    transformer = ScoresToRankings(t=3, ties="random", random_state=0).fit(scores)
    if dump == "pickle":
        restored = pickle.loads(pickle.dumps(transformer))
    else:
        joblib.dump(transformer, tmp_path / "transformer.joblib")
        restored = joblib.load(tmp_path / "transformer.joblib")
    assert restored.n_features_in_ == transformer.n_features_in_
    assert_array_equal(restored.transform(scores), transformer.transform(scores))


@parametrize_with_checks(
    [
        ScoresToRankings(),
        ScoresToRankings(t=None, ties="random", random_state=0),
    ],
    expected_failed_checks=lambda estimator: {
        "check_dtype_object": (
            "A value that is not a number is refused with a message naming its "
            "row and column, not NumPy's float() message; strings are refused "
            "too, not parsed."
        ),
        "check_estimator_sparse_tag": (
            "Sparse input is supported, but a structural zero means 'not rated', "
            "so the check's matrix has judges who rated nothing, which "
            "min_rated=1 refuses with a message."
        ),
    },
)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        # The checks use 2 or 3 items, fewer than the default t=5.
        warnings.filterwarnings("ignore", message="t=5 is greater than")
        check(estimator)


# -- pipelines ---------------------------------------------------------------------


def two_taste_ratings(n_per_taste=30, n_items=8, missing=0.1, seed=0):
    """Noisy ratings of judges with one of two opposite tastes, and the tastes."""
    rng = np.random.RandomState(seed)
    taste = np.vstack([np.arange(float(n_items)), np.arange(float(n_items))[::-1]])
    labels = np.repeat([0, 1], n_per_taste)
    ratings = taste[labels] + rng.normal(size=(2 * n_per_taste, n_items))
    ratings[rng.uniform(size=ratings.shape) < missing] = np.nan
    ratings[np.isnan(ratings).all(axis=1), 0] = 0.0
    return ratings, labels


def small_clusterer(n_items, **params):
    return DPMallowsClustering(
        n_items=n_items,
        alpha=0.05,
        n_iter=20,
        burn_in=10,
        n_chains=1,
        random_state=0,
        **params,
    )


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pipeline_fit_predict_score():
    ratings, labels = two_taste_ratings()
    pipe = make_pipeline(ScoresToRankings(t=3), small_clusterer(ratings.shape[1]))
    predicted = pipe.fit(ratings).predict(ratings)
    assert predicted.shape == labels.shape
    assert vi_scorer(pipe, ratings, labels) > -0.5
    assert np.isfinite(pipe.score(ratings))
    assert_array_equal(pipe[:-1].get_feature_names_out(), ["rank1", "rank2", "rank3"])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_grid_search_alpha_by_held_out_likelihood():
    ratings, _ = two_taste_ratings()
    n_items = ratings.shape[1]
    pipe = make_pipeline(ScoresToRankings(t=3), small_clusterer(n_items))
    search = GridSearchCV(
        pipe,
        {"dpmallowsclustering__alpha": [0.05, 1.0]},
        cv=KFold(3, shuffle=True, random_state=0),
        error_score="raise",
    ).fit(ratings)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_grid_search_t_against_known_labels():
    ratings, labels = two_taste_ratings()
    pipe = make_pipeline(ScoresToRankings(t=3), small_clusterer(ratings.shape[1]))
    search = GridSearchCV(
        pipe,
        {"scorestorankings__t": [1, 3]},
        scoring=vi_scorer,
        cv=KFold(3, shuffle=True, random_state=0),
        error_score="raise",
    ).fit(ratings, labels)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all()


def ratings_with_rare_last_item():
    """Ratings in which only the judges of the last third rate the last item.

    With unshuffled 3-fold cross-validation, the first two splits train on
    rankings without the highest item id and test on rankings holding it.
    """
    ratings, _ = two_taste_ratings()
    ratings[:40, -1] = np.nan
    ratings[40:, -1] = 100.0  # their favourite: first in every ranking
    return ratings


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_grid_search_folds_missing_the_last_item_with_n_items():
    ratings = ratings_with_rare_last_item()
    pipe = make_pipeline(ScoresToRankings(t=3), small_clusterer(ratings.shape[1]))
    search = GridSearchCV(
        pipe,
        {"dpmallowsclustering__alpha": [0.05, 1.0]},
        cv=KFold(3),
        error_score="raise",
    ).fit(ratings)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_grid_search_folds_missing_the_last_item_ask_for_n_items():
    # n_items=None takes n_items from the training fold (largest id + 1), so a
    # held-out ranking with a higher id is refused, with the fix in the message
    ratings = ratings_with_rare_last_item()
    pipe = make_pipeline(ScoresToRankings(t=3), small_clusterer(None))
    search = GridSearchCV(
        pipe,
        {"dpmallowsclustering__alpha": [0.05, 1.0]},
        cv=KFold(3),
        error_score="raise",
    )
    with pytest.raises(ValueError, match="pass n_items"):
        search.fit(ratings)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_pipeline_t_none_refuses_a_held_out_ranking_longer_than_training():
    # no theta for ranks beyond the longest training ranking, which t=None allows
    ratings, _ = two_taste_ratings(missing=0.0)
    train = ratings.copy()
    train[:, :2] = np.nan  # every training judge rates 6 of the 8 items
    pipe = make_pipeline(ScoresToRankings(t=None), small_clusterer(ratings.shape[1]))
    with pytest.raises(ValueError, match="longer than the longest training ranking"):
        pipe.fit(train).score(ratings)


# -- real data -----------------------------------------------------------------------


def read_jester(n_jokes=70):
    """Dense (users x jokes 1..n_jokes) ratings and the user ids, NaN if unrated."""
    users, user_index, entries = [], {}, []
    with open(JESTER / "jester5k_ratings.csv", newline="") as f:
        reader = csv.reader(line for line in f if not line.startswith("#"))
        assert next(reader) == ["user", "joke", "rating"]
        for user, joke, rating in reader:
            if user not in user_index:
                user_index[user] = len(users)
                users.append(user)
            entries.append((user_index[user], int(joke), float(rating)))
    rows, jokes, ratings = map(np.array, zip(*entries))
    kept = jokes <= n_jokes
    scores = np.full((len(users), n_jokes), np.nan)
    scores[rows[kept], jokes[kept] - 1] = ratings[kept]
    return scores, users


@pytest.mark.skipif(
    not (JESTER / "jester5k_ratings.csv").exists(),
    reason="the Jester5k files of shared/data are not available",
)
def test_reproduces_jester_top5_of_70():
    # PROVENANCE.txt: for each user, the 5 highest-rated of jokes 1..70, best
    # first, ties broken by lower joke id; joke ids 1-based.
    scores, users = read_jester()
    rankings = ScoresToRankings(t=5).fit_transform(scores)
    with open(JESTER / "jester5k_top5_of_70.csv", newline="") as f:
        reader = csv.reader(line for line in f if not line.startswith("#"))
        assert next(reader) == ["user", "top1", "top2", "top3", "top4", "top5"]
        expected = {user: [int(j) - 1 for j in top] for user, *top in reader}
    assert len(expected) == len(users) == 5000
    assert_array_equal(rankings, np.array([expected[user] for user in users]))
    # The same from the sparse form, in which zero ratings are stored.
    assert_array_equal(ScoresToRankings(t=5).fit_transform(to_sparse(scores)), rankings)
    # The provenance counts 897 users with a tie between their 5th and 6th.
    top6 = -np.sort(-np.nan_to_num(scores, nan=-np.inf), axis=1)[:, 4:6]
    assert np.count_nonzero(top6[:, 0] == top6[:, 1]) == 897
