# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""warm_start: a second fit continues the chains of the first."""

import pickle
import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPGaussianClustering, DPMallowsClustering, DPMultinomialClustering
from rankmix.datasets import make_mallows_mixture

RANKINGS = make_mallows_mixture(
    n_clusters=2, n_per_cluster=30, n_items=5, t=3, theta=1.0, random_state=0
)[0]
VECTORS = np.random.default_rng(0).normal(size=(60, 2)) + np.repeat(
    [[0.0, 0.0], [3.0, 3.0]], 30, axis=0
)
COUNTS = np.random.default_rng(0).poisson(2.0, size=(50, 8))
CASES = [
    # every move of each model, and a sampled alpha, so that every piece of
    # chain state (RNG, alpha, the permutation move's burn-in statistics) must
    # survive between fits
    (DPMallowsClustering, RANKINGS, {"n_split_merge": 1, "alpha_prior": (1, 1)}),
    (
        DPGaussianClustering,
        VECTORS,
        {"sampler": "gibbs+split-merge+permutation", "alpha_prior": (1, 1)},
    ),
    (DPMultinomialClustering, COUNTS, {"sampler": "gibbs+permutation"}),
]


def make(Estimator, **params):
    return Estimator(**{"burn_in": 10, "thin": 3, "random_state": 0, **params})


def fit(model, X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.set_params(**params).fit(X)


def assert_same_posterior(one, other):
    assert_array_equal(one.label_samples_, other.label_samples_)
    assert set(one.trace_) == set(other.trace_)
    for name in one.trace_:
        assert_array_equal(one.trace_[name], other.trace_[name])
    assert set(one._moves) == set(other._moves)
    for name in one._moves:
        assert_array_equal(one._moves[name], other._moves[name])
    assert len(one._draws) == len(other._draws)
    for a, b in zip(one._draws, other._draws):
        for x, y in zip(a, b):
            x, y = (v.toarray() if hasattr(v, "toarray") else v for v in (x, y))
            assert_array_equal(x, y)
    assert_array_equal(one.labels_, other.labels_)
    assert one.n_iter_ == other.n_iter_
    assert one.n_draws_ == other.n_draws_ == one.label_samples_.shape[0]


@pytest.mark.parametrize("Estimator, X, params", CASES)
def test_continued_chains_give_the_draws_of_one_long_run(Estimator, X, params):
    one = fit(make(Estimator, n_iter=40, **params), X)
    warm = make(Estimator, warm_start=True, **params)
    # 20 + 1 + 19 sweeps: a fit whose sweeps straddle the thinning, and one
    # that keeps no draw; n_jobs differs between fits
    fit(warm, X, n_iter=20)
    assert warm.n_iter_ == 20 and warm.trace_["log_joint"].shape == (2, 20)
    fit(warm, X, n_iter=1, n_jobs=2)
    fit(warm, X, n_iter=19, n_jobs=1)
    assert warm.n_iter_ == 40
    assert_same_posterior(one, warm)


@pytest.mark.parametrize("Estimator, X, params", CASES)
def test_without_warm_start_a_second_fit_starts_again(Estimator, X, params):
    model = fit(make(Estimator, n_iter=20, **params), X)
    first = model.label_samples_.copy()
    fit(model, X)
    assert model._chains is None and model.n_iter_ == 20
    assert_array_equal(model.label_samples_, first)


def test_the_burn_in_check_is_for_the_first_fit_only():
    model = fit(make(DPGaussianClustering, n_iter=20, warm_start=True), VECTORS)
    fit(model, VECTORS, n_iter=5)  # fewer sweeps than burn_in: all kept
    assert model.n_iter_ == 25
    assert model.trace_["n_clusters"].shape == (2, 25)
    with pytest.raises(ValueError, match="burn_in=10 must be smaller"):
        fit(clone(model), VECTORS, n_iter=5)


def test_a_warm_fit_on_other_data_is_an_error():
    model = fit(make(DPMallowsClustering, n_iter=20, warm_start=True), RANKINGS)
    other = RANKINGS.copy()
    other[0, :2] = other[0, 1::-1]
    with pytest.raises(ValueError, match="X differs"):
        fit(model, other)
    with pytest.raises(ValueError, match="X differs"):
        fit(model, RANKINGS[:-1])


@pytest.mark.parametrize("Estimator, X, params", CASES)
def test_a_warm_fit_records_the_column_names_as_any_fit(Estimator, X, params):
    # the chains go on if the rows are the same; a data frame's column names
    # are the new fit's, as in scikit-learn (no warning, no name check)
    pd = pytest.importorskip("pandas")
    model = fit(make(Estimator, n_iter=12, warm_start=True, **params), X)
    named = [f"x{j}" for j in range(X.shape[1])]
    for names in (named, named[::-1], None):
        frame = X if names is None else pd.DataFrame(X, columns=names)
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            fit(model, frame, n_iter=1)
            weighted = np.ones(len(X), dtype=np.intp)
            model.set_params(n_iter=1).fit(frame, sample_weight=weighted)
        if names is None:
            assert not hasattr(model, "feature_names_in_")
        else:
            assert_array_equal(model.feature_names_in_, names)
    assert model.n_iter_ == 18


@pytest.mark.parametrize("warm_start", [False, True])
def test_a_fit_keeps_no_reference_to_the_callers_array(warm_start):
    # a float64 X passed validation as it was: the Gaussian model kept the
    # caller's array, its chains read it, and after the caller changed it in
    # place (X *= 2) a warm fit compared X with itself and continued the
    # chains on the new values (179 clusters where a copy gave 3), and the
    # pointwise log-likelihood of to_inference_data read the new values. (A
    # data frame's values are not shared with pandas' copy-on-write.)
    given = VECTORS.copy()
    model = fit(make(DPGaussianClustering, n_iter=20, warm_start=warm_start), given)
    assert not np.may_share_memory(model._X_fit, given)
    log_likelihood = model._log_predictive_per_draw(model._X_fit, training=True)
    given[:] = VECTORS[::-1]  # still valid data, in other rows
    assert_array_equal(model._X_fit, VECTORS)
    pointwise = model._log_predictive_per_draw(model._X_fit, training=True)
    assert_array_equal(pointwise, log_likelihood)
    if warm_start:
        with pytest.raises(ValueError, match="X differs"):
            fit(model, given)


@pytest.mark.parametrize("name, value", [("alpha", 2.0), ("thin", 1), ("burn_in", 5)])
def test_a_warm_fit_with_other_chain_parameters_is_an_error(name, value):
    model = fit(make(DPGaussianClustering, n_iter=20, warm_start=True), VECTORS)
    with pytest.raises(ValueError, match=f"other values of {name}"):
        fit(model, VECTORS, **{name: value})


def test_a_warm_fit_may_change_what_does_not_enter_the_chains():
    model = fit(make(DPGaussianClustering, n_iter=20, warm_start=True), VECTORS)
    fit(model, VECTORS, n_iter=10, random_state=5, n_jobs=2, verbose=0)
    expected = fit(make(DPGaussianClustering, n_iter=30), VECTORS)
    assert_same_posterior(expected, model)


def test_pickling_drops_the_chains_and_a_restored_warm_fit_starts_afresh():
    model = fit(make(DPMallowsClustering, n_iter=20, warm_start=True), RANKINGS)
    assert len(model._chains) == 2
    restored = pickle.loads(pickle.dumps(model))
    assert not hasattr(restored, "_chains")
    assert_array_equal(restored.predict(RANKINGS), model.predict(RANKINGS))
    assert len(model._chains) == 2  # pickling left the original alone
    with pytest.warns(UserWarning, match="no chains to continue"):
        fit(restored, RANKINGS)
    assert restored.n_iter_ == 20
    assert_array_equal(restored.label_samples_, model.label_samples_)


def test_a_warm_fit_after_a_cold_one_starts_afresh_with_a_warning():
    model = fit(make(DPMultinomialClustering, n_iter=20), COUNTS)
    with pytest.warns(UserWarning, match="only a fit with warm_start=True"):
        fit(model, COUNTS, warm_start=True)
    assert model.n_iter_ == 20 and len(model._chains) == 2


def test_the_log_likelihood_group_covers_every_fit():
    pytest.importorskip("arviz")
    model = fit(make(DPGaussianClustering, n_iter=20, warm_start=True), VECTORS)
    fit(model, VECTORS, n_iter=15)
    idata = model.to_inference_data()
    assert idata["log_likelihood"]["x"].shape == (2, len(range(10, 35, 3)), 60)
    assert idata["posterior"]["log_joint"].shape == (2, 25)


def test_kept_chains_run_in_threads_under_a_process_backend():
    # compiled chains do not pickle: the chains to keep stay in this process,
    # and the draws are those of the default threads
    joblib = pytest.importorskip("joblib")
    expected = fit(make(DPGaussianClustering, n_iter=30), VECTORS)
    model = make(DPGaussianClustering, n_iter=20, warm_start=True)
    with joblib.parallel_config(backend="loky", n_jobs=2):
        fit(model, VECTORS)
        fit(model, VECTORS, n_iter=10)
    assert_same_posterior(expected, model)
