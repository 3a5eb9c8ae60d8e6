# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Convergence diagnostics, ArviZ export, progress reporting, parallel chains."""

import sys
import types
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPGaussianClustering, DPMallowsClustering, _engine
from rankmix._diagnostics import ess, rhat

from .test_dp_mallows import TINY_X

VECTORS = np.random.default_rng(0).normal(size=(60, 2))


def fit(Estimator, X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return Estimator(
            **{"n_iter": 30, "burn_in": 10, "random_state": 0, **params}
        ).fit(X)


def test_rhat_is_near_one_for_iid_chains_and_large_for_shifted_ones():
    rng = np.random.default_rng(0)
    assert abs(rhat(rng.normal(size=(4, 1000))) - 1.0) < 0.01
    shifted = rng.normal(size=(2, 1000)) + np.array([[0.0], [3.0]])
    assert rhat(shifted) > 1.5
    # a chain stuck in its second half is caught by the split
    drifting = np.concatenate(
        [rng.normal(size=(2, 500)), rng.normal(3, 1, (2, 500))], 1
    )
    assert rhat(drifting) > 1.5
    # a scale difference only shows in the tails (the folded draws)
    wide = rng.normal(size=(2, 2000)) * np.array([[1.0], [5.0]])
    assert rhat(wide) > 1.1
    assert np.isnan(rhat(np.zeros((2, 3))))
    assert rhat(np.zeros((2, 10))) == 1.0


def test_rhat_equals_arviz():
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(1)
    for draws in (
        rng.normal(size=(3, 101)),
        rng.poisson(2.0, size=(2, 60)).astype(float),  # ties, as n_clusters
        np.cumsum(rng.normal(size=(2, 80)), axis=1),
    ):
        expected = float(az.rhat(az.convert_to_dataset(draws)).x)
        assert_allclose(rhat(draws), expected, rtol=1e-10)


@pytest.mark.parametrize(
    "Estimator, X, params",
    [
        (DPGaussianClustering, VECTORS, {"alpha_prior": (1.0, 1.0)}),
        (DPMallowsClustering, TINY_X, {}),
    ],
)
def test_to_inference_data_exports_the_traces(Estimator, X, params):
    pytest.importorskip("arviz")
    model = fit(Estimator, X, n_chains=3, **params)
    idata = model.to_inference_data()
    names = {"n_clusters", "log_joint", *(("alpha",) if params else ())}
    if Estimator is DPGaussianClustering:  # the collapsed models trace it too
        names.add("largest_cluster_size")
    posterior, warmup = idata["posterior"], idata["warmup_posterior"]
    assert set(posterior.data_vars) == names
    for name in names:
        assert posterior[name].shape == (3, 20)
        assert warmup[name].shape == (3, 10)
        assert_array_equal(posterior[name].values, model.trace_[name][:, 10:])


def test_to_inference_data_speaks_the_arviz_1_api(monkeypatch):
    # ArviZ >= 1.0 takes one dict of groups; warmup groups need save_warmup
    calls = []
    fake = types.SimpleNamespace(
        __version__="1.3.0",
        from_dict=lambda *args, **kwargs: calls.append((args, kwargs)) or "tree",
    )
    model = fit(DPGaussianClustering, VECTORS, n_chains=2)
    monkeypatch.setitem(sys.modules, "arviz", fake)
    assert model.to_inference_data() == "tree"
    (groups,), kwargs = calls[0]
    assert kwargs == {"save_warmup": True}
    assert set(groups) == {"posterior", "warmup_posterior"}
    assert_array_equal(
        groups["posterior"]["log_joint"], model.trace_["log_joint"][:, 10:]
    )
    assert_array_equal(
        groups["warmup_posterior"]["n_clusters"], model.trace_["n_clusters"][:, :10]
    )


def test_to_inference_data_without_arviz_says_what_to_install(monkeypatch):
    model = fit(DPGaussianClustering, VECTORS)
    monkeypatch.setitem(sys.modules, "arviz", None)
    with pytest.raises(ImportError, match="pip install arviz"):
        model.to_inference_data()


def test_verbose_shows_a_progress_bar_with_tqdm(capsys):
    pytest.importorskip("tqdm")
    fit(DPGaussianClustering, VECTORS, n_chains=2, verbose=1)
    captured = capsys.readouterr()
    assert captured.out == ""
    # the bar counts both chains' sweeps and is cleared when the fit ends
    assert "rankmix:" in captured.err and "/60" in captured.err


def test_verbose_two_prints_every_sweep(capsys):
    fit(DPGaussianClustering, VECTORS, n_chains=1, verbose=2)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 30 and "left" in lines[-1]


def test_progress_lines_without_tqdm(capsys, monkeypatch):
    monkeypatch.setattr(_engine, "tqdm", None)
    fit(DPGaussianClustering, VECTORS, n_chains=1, verbose=1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 10 and "sweep 30/30" in lines[-1]


@pytest.mark.parametrize(
    "Estimator, X", [(DPGaussianClustering, VECTORS), (DPMallowsClustering, TINY_X)]
)
def test_draws_depend_on_random_state_only_not_n_jobs(Estimator, X):
    runs = [fit(Estimator, X, n_chains=3, n_jobs=n_jobs) for n_jobs in (1, 2, 3)]
    for other in runs[1:]:
        assert_array_equal(other.label_samples_, runs[0].label_samples_)
        for name in runs[0].trace_:
            assert_array_equal(other.trace_[name], runs[0].trace_[name])
    different = fit(Estimator, X, n_chains=3, random_state=1)
    assert not np.array_equal(
        different.trace_["log_joint"], runs[0].trace_["log_joint"]
    )


@pytest.mark.parametrize(
    "Estimator, X", [(DPGaussianClustering, VECTORS), (DPMallowsClustering, TINY_X)]
)
def test_chains_run_unchanged_on_a_process_backend(Estimator, X):
    # what a cluster backend (dask's) needs: the chain factory and the model
    # pickle, and the draws are those of the default threads
    joblib = pytest.importorskip("joblib")
    expected = fit(Estimator, X, n_chains=2).label_samples_
    with joblib.parallel_config(backend="loky", n_jobs=2):
        model = fit(Estimator, X, n_chains=2)
    assert_array_equal(model.label_samples_, expected)


def _autoregressive(phi, n_chains, n_draws, rng):
    x = np.zeros((n_chains, n_draws))
    noise = rng.normal(size=(n_chains, n_draws))
    for t in range(1, n_draws):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x


def test_ess_equals_arviz_bulk_ess():
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(2)
    for draws in (
        rng.normal(size=(4, 1000)),  # about the number of draws
        _autoregressive(0.9, 2, 300, rng),  # about 300 * 0.1 / 1.9 per chain
        _autoregressive(0.99, 2, 50, rng),  # the positive sequence ends early
        _autoregressive(-0.5, 3, 40, rng),  # antithetic: more than the draws
        rng.poisson(2.0, size=(2, 60)).astype(float),  # ties, as n_clusters
        rng.normal(size=(1, 9)),  # one chain, the lags run out
    ):
        expected = float(az.ess(az.convert_to_dataset(draws), method="bulk").x)
        assert_allclose(ess(draws), expected, rtol=1e-10)
    assert ess(np.zeros((2, 10))) == 20.0
    assert np.isnan(ess(np.zeros((2, 3))))


def test_ess_is_near_the_number_of_draws_for_iid_and_small_for_sticky_chains():
    rng = np.random.default_rng(3)
    assert 3000 < ess(rng.normal(size=(4, 1000))) < 5000
    assert ess(_autoregressive(0.95, 4, 1000, rng)) < 200


@pytest.mark.parametrize(
    "Estimator, X, params",
    [
        (DPMallowsClustering, TINY_X, {}),
        (DPGaussianClustering, VECTORS, {"alpha_prior": (1.0, 1.0)}),
    ],
)
def test_rhat_and_ess_are_fitted_attributes(Estimator, X, params):
    model = fit(Estimator, X, n_chains=2, **params)
    assert set(model.rhat_) == set(model.ess_) == set(model.trace_)
    for name, values in model.trace_.items():
        kept = values[:, model.burn_in :]
        assert_array_equal(model.rhat_[name], rhat(kept))  # NaN for constant alpha
        assert_array_equal(model.ess_[name], ess(kept))
        assert np.isfinite(model.ess_[name])
