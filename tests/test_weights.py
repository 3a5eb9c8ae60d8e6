"""sample_weight as counts: a weighted fit is the fit of the repeated rows."""

import warnings
from functools import partial

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import GridSearchCV

from rankmix import DPGaussianClustering, DPMallowsClustering, DPMultinomialClustering
from rankmix.datasets import make_mallows_mixture

from . import _dp_reference as dpref

RANKINGS, _, _ = make_mallows_mixture(
    n_clusters=2, n_per_cluster=15, n_items=5, t=3, theta=2.0, random_state=0
)
VECTORS = np.random.default_rng(1).normal(size=(30, 2))
VECTORS += np.repeat([[-3.0, 0.0], [3.0, 0.0]], 15, axis=0)
COUNTS = np.random.default_rng(2).poisson(2.0, size=(30, 6))
COUNTS[:15, :3] += 4

CASES = {
    "mallows": (DPMallowsClustering, RANKINGS),
    "gaussian": (DPGaussianClustering, VECTORS),
    "multinomial": (DPMultinomialClustering, COUNTS),
    "multinomial-csr": (DPMultinomialClustering, sp.csr_matrix(COUNTS)),
}


def _fit(estimator, X, **fit_params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return estimator(n_iter=20, burn_in=5, random_state=0).fit(X, **fit_params)


def _repeat(X, counts):
    index = np.repeat(np.arange(len(counts)), counts)
    return X[index]


@pytest.mark.parametrize("case", CASES)
def test_weighted_fit_is_the_fit_of_the_repeated_rows(case):
    estimator, X = CASES[case]
    counts = np.random.default_rng(3).integers(0, 4, size=X.shape[0])
    weighted = _fit(estimator, X, sample_weight=counts)
    repeated = _fit(estimator, _repeat(X, counts))
    for name in repeated.trace_:
        assert_array_equal(weighted.trace_[name], repeated.trace_[name])
    first = (np.cumsum(counts) - counts)[counts > 0]
    assert weighted.label_samples_.shape == (repeated.n_draws_, X.shape[0])
    assert_array_equal(
        weighted.label_samples_[:, counts > 0], repeated.label_samples_[:, first]
    )
    assert_array_equal(weighted.labels_[counts > 0], repeated.labels_[first])
    assert_allclose(weighted.weights_, repeated.weights_)
    assert_allclose(weighted.score_samples(X), repeated.score_samples(X))


@pytest.mark.parametrize("case", CASES)
def test_rows_of_weight_zero_get_their_most_probable_cluster(case):
    estimator, X = CASES[case]
    counts = np.tile([1, 0, 2], X.shape[0] // 3)
    model = _fit(estimator, X, sample_weight=counts)
    absent = np.flatnonzero(counts == 0)
    assert_array_equal(model.labels_[absent], model.predict(X[absent], draws="point"))
    for d, draw in enumerate(model.label_samples_):
        assert draw.max() < len(model._draws[d][-1])


def test_scalar_weight_repeats_every_row():
    twice = _fit(DPMallowsClustering, RANKINGS, sample_weight=2)
    repeated = _fit(DPMallowsClustering, np.repeat(RANKINGS, 2, axis=0))
    assert_array_equal(twice.trace_["log_joint"], repeated.trace_["log_joint"])


def test_weighted_fit_matches_the_enumerated_posterior():
    """The exact sampler with counts reproduces the enumerated posterior of the
    repeated rankings: co-clustering of the given rows (their first copies) and
    the number of clusters (which counts copies that a draw splits)."""
    X = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [3, 2, -1, -1], [1, 0, -1, -1]])
    counts = np.array([2, 1, 1, 1])
    repeated = np.repeat(X, counts, axis=0)
    posterior = dpref.exact_partition_posterior(repeated, 4, 1.0, 1.0, 1.0)
    first = np.cumsum(counts) - counts
    exact_cocluster = dpref.coclustering_matrix(posterior)[np.ix_(first, first)]
    exact_k = dpref.n_clusters_distribution(posterior)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = DPMallowsClustering(
            sampler="slice-gibbs",
            n_iter=12000,
            burn_in=500,
            thin=1,
            n_chains=2,
            init_clusters=2,
            n_items=4,
            random_state=0,
        ).fit(X, sample_weight=counts)
    cocluster, _ = dpref.draw_statistics(model.label_samples_)
    assert_allclose(cocluster, exact_cocluster, atol=0.05)
    k = model.trace_["n_clusters"][:, model.burn_in :].ravel()
    k_dist = np.bincount(k, minlength=len(exact_k))[: len(exact_k)] / len(k)
    assert_allclose(k_dist, exact_k, atol=0.05)


@pytest.mark.parametrize(
    "sample_weight, error, match",
    [
        ([1, 2, -1] + [1] * 27, ValueError, "row 2 has -1"),
        ([1, 0.5] + [1] * 28, ValueError, "row 1 has 0.5"),
        ([np.nan] + [1] * 29, ValueError, "row 0 has nan"),
        ([np.inf] + [1] * 29, ValueError, "row 0 has inf"),
        ([1] * 29, ValueError, "one count per row of X .30 rows"),
        ([[1] * 30], ValueError, "one count per row"),
        (["a"] * 30, TypeError, "sample_weight must hold numbers"),
        ([1j] + [1] * 29, TypeError, "sample_weight must hold numbers"),
        ([0] * 30, ValueError, "zero for every row"),
        (-1, ValueError, "row 0 has -1"),
    ],
)
def test_bad_weights(sample_weight, error, match):
    with pytest.raises(error, match=match):
        DPMallowsClustering(n_iter=2, burn_in=1).fit(
            RANKINGS, sample_weight=sample_weight
        )


def test_bad_rows_are_named_by_their_index_before_repetition():
    X = RANKINGS.copy()
    X[4] = [1, 1, 2]
    with pytest.raises(ValueError, match="Row 4 of X"):
        DPMallowsClustering(n_iter=2, burn_in=1).fit(X, sample_weight=[3] * 30)


_sklearn_version = tuple(int(part) for part in sklearn.__version__.split(".")[:2])


def test_grid_search_passes_each_fold_its_weights():
    # to fit and to score: a held-out fold's score is the mean over its rows
    # repeated by their counts (scikit-learn warned that score took none)
    counts = np.random.default_rng(4).integers(1, 4, size=30)
    grid = {"alpha": [0.5, 2.0]}
    estimator = DPMallowsClustering(n_iter=10, burn_in=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.filterwarnings("error", message=".*does not support sample_weight")
        search = GridSearchCV(estimator, grid, cv=2).fit(RANKINGS, sample_weight=counts)
        assert search.best_estimator_.label_samples_.shape[1] == 30
        # KFold(2): the first split holds out the first 15 rows; scikit-learn
        # passes the scorer weights since 1.7
        fold = clone(estimator).set_params(alpha=0.5)
        fold.fit(RANKINGS[15:], sample_weight=counts[15:])
        if _sklearn_version >= (1, 7):
            assert_allclose(
                search.cv_results_["split0_test_score"][0],
                fold.score(RANKINGS[:15], sample_weight=counts[:15]),
            )
        with sklearn.config_context(enable_metadata_routing=True):
            routed = clone(estimator).set_fit_request(sample_weight=True)
            routed.set_score_request(sample_weight=True)
            routed_search = GridSearchCV(routed, grid, cv=2).fit(
                RANKINGS, sample_weight=counts
            )
    assert routed_search.best_estimator_.label_samples_.shape[1] == 30
    assert_allclose(
        routed_search.cv_results_["mean_test_score"],
        search.cv_results_["mean_test_score"],
    )


def test_score_takes_counts_as_fit_does():
    counts = np.random.default_rng(6).integers(0, 4, size=30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = DPMallowsClustering(n_iter=10, burn_in=5, random_state=0).fit(RANKINGS)
    assert_allclose(
        model.score(RANKINGS, sample_weight=counts),
        model.score(np.repeat(RANKINGS, counts, axis=0)),
        rtol=1e-12,
    )
    assert model.score(RANKINGS, sample_weight=np.ones(30)) == model.score(RANKINGS)
    with pytest.raises(ValueError, match="row 1 has 0.5"):
        model.score(RANKINGS, sample_weight=[1, 0.5] + [1] * 28)
    with pytest.raises(ValueError, match="nothing to score"):
        model.score(RANKINGS, sample_weight=[0] * 30)
    # counts past exact float integers, which an intp sum would wrap
    with pytest.raises(ValueError, match=r"more than 2\*\*53"):
        model.score(RANKINGS, sample_weight=[2**62] * 4 + [0] * 26)
    # an unfitted model says so, whatever the weights
    with pytest.raises(NotFittedError):
        DPMallowsClustering().score(RANKINGS, sample_weight=[0.5] * 30)


@pytest.mark.parametrize("case", ["mallows", "multinomial-csr"])
def test_warm_start_continues_a_weighted_fit(case):
    estimator, X = CASES[case]
    counts = np.random.default_rng(5).integers(0, 3, size=X.shape[0])
    params = dict(burn_in=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        whole = estimator(n_iter=20, **params).fit(X, sample_weight=counts)
        warm = estimator(n_iter=12, warm_start=True, **params)
        warm.fit(X, sample_weight=counts)
        warm.set_params(n_iter=8).fit(X, sample_weight=counts)
        with pytest.raises(ValueError, match="X differs"):
            warm.fit(X, sample_weight=counts + 1)
    assert_array_equal(warm.label_samples_, whole.label_samples_)
    assert_array_equal(warm.labels_, whole.labels_)
    assert_array_equal(warm.trace_["log_joint"], whole.trace_["log_joint"])


def test_rows_of_weight_zero_count_in_the_items_and_stages():
    # item 3 and the third stage appear only in rows of weight 0: they belong
    # to the data's space (as n_items would give), so the rows can be labelled
    for X in (
        [[0, 1, 2], [1, 0, 2], [0, 2, 1], [3, 0, 1]],
        [[0, 1], [1, 0], [0, 2], [0, 1, 2]],
    ):
        model = _fit(DPMallowsClustering, X, sample_weight=[2, 1, 1, 0])
        assert model.labels_.shape == (4,)
        assert model.label_samples_.shape[1] == 4
        assert model.n_features_in_ == 3
    assert model.n_items_ == 3
    assert (
        _fit(
            DPMallowsClustering,
            [[0, 1, 2], [1, 0, 2], [0, 2, 1], [3, 0, 1]],
            sample_weight=[2, 1, 1, 0],
        ).n_items_
        == 4
    )


# 2**62 passed the old bound (2**63) and reached NumPy's "array is too big"
@pytest.mark.parametrize("total", [1e19, np.uint64(2**63), 2**62, 2**32 + 1])
def test_weights_too_large_to_count(total):
    with pytest.raises(ValueError, match="more than the 4.29e\\+09 \\(2\\*\\*32\\)"):
        DPMallowsClustering(n_iter=2, burn_in=1).fit(
            RANKINGS, sample_weight=[total] + [1] * 29
        )


def test_summaries_match_clusters_on_the_fitted_copies():
    # the matching counts each row as often as its weight: that of the fit on
    # the repeated rows, draw for draw
    counts = np.random.default_rng(6).integers(0, 4, size=30)
    weighted = _fit(DPMallowsClustering, RANKINGS, sample_weight=counts)
    repeated = _fit(DPMallowsClustering, _repeat(RANKINGS, counts))
    for got, expected in zip(weighted.match_clusters(), repeated.match_clusters()):
        assert_array_equal(got, expected)
    assert_allclose(
        weighted.posterior_intervals()["thetas"],
        repeated.posterior_intervals()["thetas"],
    )


def test_chains_stopped_part_way_are_not_continued(monkeypatch):
    import rankmix._base as base

    model = DPMallowsClustering(n_iter=10, burn_in=5, warm_start=True, random_state=0)
    _silently = warnings.catch_warnings()
    with _silently:
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(RANKINGS)

        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt

        monkeypatch.setattr(base, "run_chains", interrupted)
        with pytest.raises(KeyboardInterrupt):
            model.fit(RANKINGS)
        monkeypatch.undo()
        assert model._chains is None
        with pytest.warns(UserWarning, match="no chains to continue"):
            model.fit(RANKINGS)
    assert model.n_iter_ == 10  # a fresh start, not a continuation


def test_a_total_weight_of_one_fits_like_the_one_row():
    # the estimator's own minimum applies: one ranking is a (tiny) data set
    estimator = partial(DPMallowsClustering, n_items=5)
    one = _fit(estimator, RANKINGS, sample_weight=[0] * 29 + [1])
    alone = _fit(estimator, RANKINGS[-1:])
    assert_array_equal(one.trace_["log_joint"], alone.trace_["log_joint"])
    assert one.labels_.shape == (30,)
