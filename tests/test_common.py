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

import pickle

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
