# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""scikit-learn's estimator checks, and their ranking counterparts.

DPGaussianClustering passes every check (run with covariance_type "full",
"spherical" and "fixed"). DPMallowsClustering (and MallowsKernelDensity and
MallowsBlurringMeanShift, for the same reasons) takes rankings
(integer item ids, best first, -1 padding), while most of scikit-learn's checks
feed real-valued features: those are listed in ``MALLOWS_EXPECTED_FAILURES`` with
the reason, and the properties they test are tested below on ranking data.
"""

import importlib
import pickle
import warnings

import joblib
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from rankmix import (
    DPGaussianClustering,
    DPMallowsClustering,
    DPMultinomialClustering,
    MallowsBlurringMeanShift,
    MallowsKernelDensity,
)
from rankmix.datasets import make_mallows_mixture
from rankmix.metrics import variation_of_information, vi_scorer

SHORT = dict(n_iter=6, burn_in=2, n_chains=1, random_state=0)

# Short chains may disagree; that warning is beside the point of these tests.
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

_REAL_VALUED = (
    "feeds real-valued features; X must hold integer item ids (rankings), "
    "so the input is refused with a ValueError naming the row"
)
MALLOWS_EXPECTED_FAILURES = {
    name: _REAL_VALUED
    for name in [
        "check_fit_score_takes_y",
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_fit_returns_self",
        "check_readonly_memmap_input",
        "check_n_features_in_after_fitting",
        "check_estimators_dtypes",
        "check_dtype_object",
        "check_pipeline_consistency",
        "check_estimators_nan_inf",
        "check_estimators_pickle",
        "check_f_contiguous_array_estimator",
        "check_clustering",
        "check_methods_sample_order_invariance",
        "check_methods_subset_invariance",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_dict_unchanged",
        "check_fit_idempotent",
        "check_fit_check_is_fitted",
        "check_n_features_in",
        "check_fit2d_predict1d",
    ]
}
MALLOWS_EXPECTED_FAILURES.update(
    check_positive_only_tag_during_fit=(
        "feeds real-valued features; rankings are not positive-only either (-1 pads)"
    ),
    check_complex_data=(
        "complex input is a dtype fault, refused with TypeError (the check wants "
        "ValueError)"
    ),
)

_NOT_COUNTS = (
    "feeds real-valued features; X must hold non-negative integer counts, so the "
    "input is refused with a ValueError naming the row and column"
)
MULTINOMIAL_EXPECTED_FAILURES = {
    name: _NOT_COUNTS
    for name in [
        *(n for n in MALLOWS_EXPECTED_FAILURES if n != "check_complex_data"),
        "check_estimator_sparse_tag",
        "check_estimator_sparse_array",
        "check_estimator_sparse_matrix",
        "check_estimators_pickle(readonly_memmap=True)",
        "check_clustering(readonly_memmap=True)",
    ]
}
MULTINOMIAL_EXPECTED_FAILURES.pop("check_positive_only_tag_during_fit")


# sample_weight: counts, so a weighted fit is draw for draw the fit of the
# repeated rows in their order (tests/test_weights.py); these checks shuffle the
# rows first, and an MCMC fit depends on their order through its random stream
# (the posterior does not: test_weighted_fit_matches_the_enumerated_posterior).
_SHUFFLED = (
    "compares a weighted fit with a fit of the repeated rows shuffled; the two "
    "chains see the rows in different orders, so their draws differ (equal in "
    "law, not draw for draw)"
)
SAMPLE_WEIGHT_EXPECTED_FAILURES = {
    "check_sample_weight_equivalence_on_dense_data": _SHUFFLED,
    "check_sample_weight_equivalence_on_sparse_data": _SHUFFLED,
}
# the weight checks that fit real-valued X (test_weights.py runs them on rankings)
MALLOWS_WEIGHT_FAILURES = {
    name: _REAL_VALUED
    for name in [
        "check_sample_weights_list",
        "check_sample_weights_not_an_array",
        "check_sample_weights_not_overwritten",
        "check_sample_weights_pandas_series",
        "check_sample_weights_shape",
    ]
}


def expected_failed_checks(estimator):
    if isinstance(estimator, (MallowsKernelDensity, MallowsBlurringMeanShift)):
        return MALLOWS_EXPECTED_FAILURES
    if isinstance(estimator, DPMallowsClustering):
        return {
            **MALLOWS_EXPECTED_FAILURES,
            **MALLOWS_WEIGHT_FAILURES,
            **SAMPLE_WEIGHT_EXPECTED_FAILURES,
        }
    if isinstance(estimator, DPMultinomialClustering):
        return {
            **MULTINOMIAL_EXPECTED_FAILURES,
            "check_sample_weights_list": _NOT_COUNTS,
            **SAMPLE_WEIGHT_EXPECTED_FAILURES,
        }
    return SAMPLE_WEIGHT_EXPECTED_FAILURES


@parametrize_with_checks(
    [
        DPGaussianClustering(**SHORT),
        DPGaussianClustering(covariance_type="spherical", **SHORT),
        DPGaussianClustering(covariance_type="fixed", **SHORT),
        DPMallowsClustering(**SHORT),
        DPMultinomialClustering(**SHORT),
        MallowsKernelDensity(),
        MallowsBlurringMeanShift(),
    ],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


# -- the listed checks' properties, on rankings ------------------------------------


@pytest.fixture(scope="module")
def rankings():
    X, y, _ = make_mallows_mixture(
        n_clusters=2, n_per_cluster=60, n_items=6, t=4, theta=1.5, random_state=0
    )
    return X, y


def test_mallows_fit_is_idempotent_returns_self_and_keeps_params(rankings):
    X, _ = rankings
    model = DPMallowsClustering(**SHORT)
    params = model.get_params()
    assert model.fit(X) is model
    assert model.get_params() == params
    first = (model.labels_.copy(), model.score_samples(X))
    model.fit(X)
    assert_array_equal(model.labels_, first[0])
    assert_allclose(model.score_samples(X), first[1])
    assert model.n_features_in_ == X.shape[1]


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
@pytest.mark.parametrize("order", ["C", "F"])
def test_mallows_accepts_every_integer_layout(rankings, dtype, order):
    X, _ = rankings
    expected = DPMallowsClustering(**SHORT).fit(X).labels_
    model = DPMallowsClustering(**SHORT).fit(np.asarray(X, dtype, order=order))
    assert_array_equal(model.labels_, expected)


def test_mallows_reads_readonly_memmaps(rankings, tmp_path):
    X, _ = rankings
    expected = DPMallowsClustering(**SHORT).fit(X).labels_
    path = tmp_path / "X.npy"
    np.save(path, X)
    X_map = np.load(path, mmap_mode="r")
    assert_array_equal(DPMallowsClustering(**SHORT).fit(X_map).labels_, expected)


def test_mallows_methods_are_row_wise(rankings):
    # sample order and subset invariance of every per-row method, and the methods
    # leave the fitted state as it was
    X, _ = rankings
    model = DPMallowsClustering(**SHORT).fit(X)
    state = joblib.hash(vars(model))
    order = np.random.default_rng(0).permutation(len(X))
    for method in ("predict", "predict_proba", "score_samples"):
        full = getattr(model, method)(X)
        assert_allclose(getattr(model, method)(X[order]), full[order])
        assert_allclose(getattr(model, method)(X[:10]), full[:10])
    model.sample(5, random_state=0)
    assert joblib.hash(vars(model)) == state


def test_kernel_density_checks_on_rankings(rankings, tmp_path):
    # the listed checks' properties for MallowsKernelDensity: fit returns self,
    # keeps its parameters, is idempotent, and reads every integer layout and
    # read-only memmaps alike
    X, _ = rankings
    model = MallowsKernelDensity(bandwidth=0.5)
    params = model.get_params()
    assert model.fit(X) is model
    assert model.get_params() == params
    assert model.n_features_in_ == X.shape[1]
    expected = model.score_samples(X)
    np.save(tmp_path / "X.npy", X)
    layouts = [np.asarray(X, d, order=o) for d in (np.int32, np.float64) for o in "CF"]
    for other in (*layouts, np.load(tmp_path / "X.npy", mmap_mode="r")):
        assert_array_equal(clone(model).fit(other).score_samples(other), expected)
    state = joblib.hash(vars(model))
    model.sample(5, random_state=0)
    assert joblib.hash(vars(model)) == state


def test_blurring_mean_shift_checks_on_rankings(rankings, tmp_path):
    # the listed checks' properties for MallowsBlurringMeanShift: fit returns
    # self, keeps its parameters, is idempotent, reads every integer layout and
    # read-only memmaps alike, and its per-row methods are row-wise
    X, _ = rankings
    model = MallowsBlurringMeanShift()
    params = model.get_params()
    assert model.fit(X) is model
    assert model.get_params() == params
    assert model.n_features_in_ == X.shape[1]
    expected = (model.labels_.copy(), model.score_samples(X))
    np.save(tmp_path / "X.npy", X)
    layouts = [np.asarray(X, d, order=o) for d in (np.int32, np.float64) for o in "CF"]
    for other in (X, *layouts, np.load(tmp_path / "X.npy", mmap_mode="r")):
        refit = clone(model).fit(other)
        assert_array_equal(refit.labels_, expected[0])
        assert_array_equal(refit.score_samples(other), expected[1])
    state = joblib.hash(vars(model))
    order = np.random.default_rng(0).permutation(len(X))
    for method in ("predict", "score_samples"):
        full = getattr(model, method)(X)
        assert_allclose(getattr(model, method)(X[order]), full[order])
        assert_allclose(getattr(model, method)(X[:10]), full[:10])
    restored = pickle.loads(pickle.dumps(model))
    assert_array_equal(restored.score_samples(X), expected[1])
    assert joblib.hash(vars(model)) == state


def test_mallows_fits_a_single_ranking():
    # check_fit2d_1sample's property: one ranking is a valid (if tiny) data set
    model = DPMallowsClustering(**SHORT).fit([[0, 1, 2]])
    assert model.n_clusters_ == 1
    assert_array_equal(model.predict([[2, 1, 0]]), [0])


@pytest.mark.parametrize("Estimator", [DPMallowsClustering, DPGaussianClustering])
def test_pickle_and_joblib_round_trips_predict_identically(
    rankings, tmp_path, Estimator
):
    X = (
        rankings[0]
        if Estimator is DPMallowsClustering
        else (
            np.random.default_rng(0).normal(size=(80, 2))
            + np.repeat([[0, 0], [6, 6]], 40, 0)
        )
    )
    model = Estimator(**SHORT).fit(X)
    restored = pickle.loads(pickle.dumps(model))
    joblib.dump(model, tmp_path / "model.joblib")
    loaded = joblib.load(tmp_path / "model.joblib")
    for other in (restored, loaded):
        assert_array_equal(other.predict(X), model.predict(X))
        assert_array_equal(other.score_samples(X), model.score_samples(X))
        assert_array_equal(other.labels_, model.labels_)
        assert_array_equal(
            other.sample(5, random_state=1)[0], model.sample(5, random_state=1)[0]
        )


# -- model selection -----------------------------------------------------------------


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_grid_search_over_alpha_and_nu_by_held_out_likelihood(rankings, n_jobs):
    X, _ = rankings
    search = GridSearchCV(
        DPMallowsClustering(n_items=6, **SHORT),
        {"alpha": [0.5, 2.0], "nu": [0.5, 2.0]},
        cv=KFold(3, shuffle=True, random_state=0),
        n_jobs=n_jobs,
    )
    search.fit(X)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    # the default criterion is the held-out log-likelihood of `score`
    assert_allclose(
        search.cv_results_["split0_test_score"][1],
        first_fold_score(search, X, lambda model, X_test, _: model.score(X_test)),
    )


def test_grid_search_over_alpha_and_nu_for_vectors_with_n_jobs():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(m, 1.0, size=(40, 2)) for m in (0.0, 8.0)])
    search = GridSearchCV(
        DPGaussianClustering(**SHORT),
        {"alpha": [0.1, 1.0], "nu": [3.0, 10.0]},
        cv=3,
        n_jobs=2,
    )
    search.fit(X)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_grid_search_with_vi_scorer_against_known_labels(rankings):
    X, y = rankings
    search = GridSearchCV(
        DPMallowsClustering(n_items=6, **SHORT),
        {"alpha": [0.1, 5.0]},
        scoring=vi_scorer,
        cv=KFold(3, shuffle=True, random_state=0),
    )
    search.fit(X, y)
    # minus the VI between the held-out fold's labels and the predicted clusters
    assert_allclose(
        search.cv_results_["split0_test_score"][1],
        first_fold_score(
            search,
            X,
            lambda model, X_test, y_test: (
                -variation_of_information(y_test, model.predict(X_test))
            ),
            y,
        ),
    )


def first_fold_score(search, X, score, y=None):
    """The score of the grid's second candidate on the first fold, by hand."""
    train, test = next(search.cv.split(X))
    model = clone(search.estimator).set_params(**search.cv_results_["params"][1])
    model.fit(X[train], None if y is None else y[train])
    return score(model, X[test], None if y is None else y[test])


def test_clone_keeps_every_parameter():
    for Estimator in (DPMallowsClustering, DPGaussianClustering):
        model = Estimator(alpha=0.3, n_iter=17, random_state=4)
        assert clone(model).get_params() == model.get_params()


def test_an_item_unseen_in_training_asks_for_n_items():
    # a cross-validation fold may miss the highest item ids
    model = DPMallowsClustering(**SHORT).fit([[0, 1, 2], [1, 0, 2]])
    with pytest.raises(ValueError, match="pass n_items"):
        model.score([[3, 0, 1]])
    model = DPMallowsClustering(n_items=4, **SHORT).fit([[0, 1, 2], [1, 0]])
    assert np.isfinite(model.score([[3, 0, 1]]))


# -- a data frame's column names: ranks, checked as scikit-learn checks features --

RANKING_ESTIMATORS = [
    DPMallowsClustering(**SHORT),
    MallowsKernelDensity(),
    MallowsBlurringMeanShift(),
]


def _class_name(estimator):
    return type(estimator).__name__


def _ranking_frame(X, names):
    pd = pytest.importorskip("pandas")
    return pd.DataFrame(X, columns=names)


@pytest.mark.parametrize("estimator", RANKING_ESTIMATORS, ids=_class_name)
def test_ranking_estimators_record_and_check_column_names(rankings, estimator):
    X, _ = rankings
    names = [f"rank{j}" for j in range(1, X.shape[1] + 1)]
    # a last column that only pads: the model has no such rank, so no name for it
    padded = np.hstack([X, np.full((len(X), 1), -1)])
    frame = _ranking_frame(padded, [*names, "rank_pad"])
    model = clone(estimator).fit(frame)
    assert model.n_features_in_ == X.shape[1]
    assert_array_equal(model.feature_names_in_, names)
    assert model.feature_names_in_.dtype == object
    reference = clone(estimator).fit(X)
    expected, expected_top2 = (reference.score_samples(Z) for Z in (X, X[:, :2]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matching names: no warning
        assert_allclose(model.score_samples(frame), expected)
        # a query may hold fewer ranks (its first columns) or more padding
        top2 = _ranking_frame(X[:, :2], names[:2])
        assert_allclose(model.score_samples(top2), expected_top2)
        wider = _ranking_frame(np.hstack([padded, padded[:, -1:]]), [*names, "a", "b"])
        assert_allclose(model.score_samples(wider), expected)
    # columns in another order would read as other rankings
    swapped = _ranking_frame(X[:, [1, 0, 2, 3]], [names[1], names[0], *names[2:]])
    with pytest.raises(ValueError, match="Column 0 of X is named 'rank2', but the fit"):
        model.score_samples(swapped)
    renamed = _ranking_frame(X, [*names[:2], "third", names[3]])
    with pytest.raises(ValueError, match=r"Column 2 of X .*'third'.*\(rank 3\)"):
        model.score_samples(renamed)
    # only one side named: scikit-learn's warnings
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        model.score_samples(X)
    refit = clone(estimator).fit(X)
    assert not hasattr(refit, "feature_names_in_")
    with pytest.warns(UserWarning, match="X has feature names, but"):
        refit.score_samples(frame)
    # a refit without names forgets the old ones
    assert not hasattr(model.fit(X), "feature_names_in_")


@pytest.mark.parametrize("estimator", RANKING_ESTIMATORS, ids=_class_name)
def test_ranking_column_names_of_mixed_types_are_refused_before_the_fit(
    rankings, estimator, monkeypatch
):
    # refused before the rankings are even validated (for DPMallowsClustering,
    # before its chains run: a failed fit restores its state either way)
    X, _ = rankings
    frame = _ranking_frame(X, ["a", "b", 2, 3])
    model = clone(estimator)
    module = importlib.import_module(type(model).__module__)

    def not_reached(*args, **kwargs):
        raise AssertionError("the rankings were validated before the names")

    with monkeypatch.context() as patch:
        patch.setattr(module, "check_training_rankings", not_reached)
        with pytest.raises(TypeError, match="Feature names are only supported if"):
            model.fit(frame)
    assert not hasattr(model, "n_features_in_")


def test_pipeline_of_scores_to_rankings_names_the_ranks():
    # set_output(transform="pandas"): the rankings reach the model as a frame whose
    # columns ScoresToRankings names rank1, rank2, ...
    pytest.importorskip("pandas")
    from sklearn.pipeline import make_pipeline

    from rankmix.preprocessing import ScoresToRankings

    rng = np.random.RandomState(0)
    taste = np.vstack([np.arange(8.0), np.arange(8.0)[::-1]])
    ratings = taste[np.repeat([0, 1], 20)] + rng.normal(size=(40, 8))
    pipe = make_pipeline(ScoresToRankings(t=3), DPMallowsClustering(**SHORT))
    pipe.set_output(transform="pandas")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        pipe.fit(ratings)
        labels = pipe.predict(ratings)
    assert_array_equal(pipe[-1].feature_names_in_, ["rank1", "rank2", "rank3"])
    rankings = pipe[0].transform(ratings)
    assert_array_equal(labels, pipe[-1].predict(rankings))
    with pytest.warns(UserWarning, match="X does not have valid feature names"):
        assert_array_equal(labels, pipe[-1].predict(rankings.to_numpy()))
