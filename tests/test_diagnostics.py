# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Convergence diagnostics, ArviZ export, progress reporting, parallel chains."""

import sys
import time
import types
import warnings
from functools import partial

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.special import gammaln, logsumexp
from sklearn.exceptions import ConvergenceWarning

from rankmix import (
    DPGaussianClustering,
    DPMallowsClustering,
    DPMultinomialClustering,
    _engine,
    mallows,
)
from rankmix._diagnostics import ess, rhat
from rankmix.datasets import make_mallows_mixture

from .test_dp_mallows import TINY_X, disagreeing_chains

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


def test_values_apart_by_rounding_alone_tie():
    # two chains on one clustering, whose log joints their running sums left
    # a few units in the last place apart (found on easy data: R-hat 9.8e15,
    # as ArviZ gives, and a warning that the chains disagree)
    from rankmix._diagnostics import warn_if_chains_disagree

    value = -298.218416585553
    same = np.array([[value] * 100, [np.nextafter(value, 0)] * 100])
    same[1, 40:60] = np.nextafter(np.nextafter(value, 0), 0)
    assert rhat(same) == 1.0 and ess(same) == same.size
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        warn_if_chains_disagree(same)
    # apart by more than rounding: a state that differs
    apart = np.array([[value] * 100, [value + 1e-6] * 100])
    assert rhat(apart) > 1e6
    # each chain in one state: the warning says so, not R-hat's 1e15 or so
    with pytest.warns(ConvergenceWarning, match="chains disagree") as record:
        warn_if_chains_disagree(apart)
    message = str(record[0].message)
    assert "each chain stayed in one state" in message
    assert "-298.218" in message and "R-hat" not in message
    # a chain that moves: R-hat itself
    moving = apart.copy()
    moving[0, ::2] -= 1.0
    with pytest.warns(ConvergenceWarning, match="R-hat of the log joint"):
        warn_if_chains_disagree(moving)
    # a discrete trace's ties survive a nudge of a few units in the last place
    # in one chain, wherever the values stand
    rng = np.random.default_rng(0)
    draws = rng.choice([-1e3, -1e3 + 0.5, -999.0, 2.0], size=(2, 60))
    nudged = draws.copy()
    nudged[1] = np.nextafter(np.nextafter(draws[1], np.inf), np.inf)
    assert rhat(nudged) == rhat(draws) and ess(nudged) == ess(draws)
    # a trace that is not finite keeps its values: no tolerance from inf
    broken = np.array([[value] * 100, [value + 1.0] * 100])
    broken[0, 3] = np.nan
    assert np.isnan(rhat(broken)) or rhat(broken) > 1.1
    broken[0, 3] = -np.inf
    assert rhat(broken) > 1.1


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


class _FakeTree(dict):
    """What ArviZ 1's ``from_dict`` returns, as far as rankmix reads it: a
    DataTree (which has ``to_dataset``) whose groups are nodes with
    ``to_dataset``."""

    def to_dataset(self):  # the root's own variables: none
        return None

    def __init__(self, groups):
        xr = pytest.importorskip("xarray")
        super().__init__()
        for name, variables in groups.items():
            dataset = xr.Dataset(
                {
                    key: (("chain", "draw", "row")[: np.ndim(value)], value)
                    for key, value in variables.items()
                }
            )
            self[name] = types.SimpleNamespace(to_dataset=lambda d=dataset: d)


def test_to_inference_data_speaks_the_arviz_1_api(monkeypatch):
    # ArviZ >= 1.0 takes one dict of groups; warmup groups need save_warmup
    calls = []

    def from_dict(*args, **kwargs):
        calls.append((args, kwargs))
        return _FakeTree(args[0])

    fake = types.SimpleNamespace(__version__="1.3.0", from_dict=from_dict)
    model = fit(DPGaussianClustering, VECTORS, n_chains=2, thin=3)
    monkeypatch.setitem(sys.modules, "arviz", fake)
    tree = model.to_inference_data()
    # the node replaced by a dataset whose draws number the kept sweeps
    assert_array_equal(tree["log_likelihood"]["draw"], [0, 3, 6, 9, 12, 15, 18])
    (groups,), kwargs = calls[0]
    assert kwargs == {"save_warmup": True, "dims": {"x": ["row"]}}
    assert set(groups) == {
        "posterior",
        "warmup_posterior",
        "sample_stats",
        "warmup_sample_stats",
        "log_likelihood",
    }
    assert_array_equal(
        groups["posterior"]["log_joint"], model.trace_["log_joint"][:, 10:]
    )
    assert_array_equal(
        groups["warmup_posterior"]["n_clusters"], model.trace_["n_clusters"][:, :10]
    )


@pytest.mark.parametrize("thin", [1, 3])
def test_to_inference_data_lines_kept_draws_up_with_their_sweeps(thin):
    # the posterior holds every sweep after burn-in, the log-likelihood the
    # kept ones: their draw coordinates must name the same sweeps, or xarray
    # pairs a kept draw with another sweep's trace
    pytest.importorskip("arviz")
    model = fit(DPGaussianClustering, VECTORS, n_chains=2, thin=thin)
    idata = model.to_inference_data()
    posterior, kept = idata["posterior"], idata["log_likelihood"]
    assert_array_equal(posterior["draw"], np.arange(20))
    assert_array_equal(kept["draw"], np.arange(0, 20, thin))
    # a kept draw's pointwise values are those of its own sweep's clustering:
    # the clustering's number of clusters is the trace's at that sweep
    per_draw = model.label_samples_.reshape(2, -1, len(VECTORS))
    n_clusters = np.array([[len(np.unique(d)) for d in chain] for chain in per_draw])
    aligned = posterior["n_clusters"].sel(draw=kept["draw"])
    assert_array_equal(aligned.values, n_clusters)
    # arithmetic across the groups keeps the kept sweeps only
    both = posterior["log_joint"] + kept["x"].sum("row")
    assert_array_equal(both["draw"], np.arange(0, 20, thin))
    # each group once (ArviZ 0.x's __setitem__ listed it twice, and az.concat
    # then doubled its chains)
    groups = idata.groups()
    assert len(groups) == len(set(groups))
    if hasattr(idata, "map"):
        import arviz as az

        both = az.concat(idata, model.to_inference_data(), dim="chain")
        assert both["log_likelihood"].sizes["chain"] == 4
    # set_params after the fit does not move the coordinates
    model.set_params(thin=7)
    assert_array_equal(
        model.to_inference_data()["log_likelihood"]["draw"], kept["draw"]
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


def test_progress_lines_of_chains_side_by_side_stay_whole(monkeypatch):
    # two chains report from two threads: print() wrote a line's text and its
    # end separately, and lines ran together ("...left[rankmix] chain 2/2 ...")
    class Recorder:
        def __init__(self):
            self.writes = []

        def write(self, text):
            self.writes.append(text)

        def flush(self):
            pass

    recorder = Recorder()
    monkeypatch.setattr(sys, "stdout", recorder)
    fit(DPGaussianClustering, VECTORS, n_chains=2, n_jobs=2, verbose=2)
    assert len(recorder.writes) == 60
    for text in recorder.writes:
        assert text.startswith("[rankmix] chain ") and text.endswith("left\n")
        assert text.count("\n") == 1


def test_progress_lines_without_a_console(monkeypatch):
    # pythonw and some service hosts have no sys.stdout; print wrote nothing
    monkeypatch.setattr(sys, "stdout", None)
    fit(DPGaussianClustering, VECTORS, n_chains=1, verbose=2)


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


def test_n_jobs_none_runs_the_chains_on_the_cores_openmp_may_use():
    joblib = pytest.importorskip("joblib")
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(3, user_api="openmp"):
        if _engine.openmp_threads() < 3:
            pytest.skip("rankmix was built without OpenMP: one thread")
        assert _engine.chains_at_once(None, 2) == 2  # at most n_chains
        assert _engine.chains_at_once(None, 5) == 3  # at most the cores
        assert _engine.chains_at_once(1, 5) == 1  # an explicit n_jobs stands
        with joblib.parallel_config(backend="threading"):
            assert _engine.chains_at_once(None, 5) == 3
        # a context that sets n_jobs or another backend decides
        with joblib.parallel_config(n_jobs=2):
            assert _engine.chains_at_once(None, 5) is None
        with joblib.parallel_config(backend="sequential"):
            assert _engine.chains_at_once(None, 5) is None
    with threadpoolctl.threadpool_limits(1, user_api="openmp"):
        assert _engine.chains_at_once(None, 4) == 1


def test_default_n_jobs_runs_the_chains_side_by_side(monkeypatch):
    # the chains of a default fit overlap in time (threads), and draw what they
    # draw one at a time
    threadpoolctl = pytest.importorskip("threadpoolctl")
    running, overlapped = [0], [False]
    original = _engine._run_chain

    def watched(*args, **kwargs):
        running[0] += 1
        try:
            for _ in range(200):  # the other chain has time to start
                overlapped[0] |= running[0] > 1
                if overlapped[0]:
                    break
                time.sleep(0.005)
            return original(*args, **kwargs)
        finally:
            running[0] -= 1

    monkeypatch.setattr(_engine, "_run_chain", watched)
    with threadpoolctl.threadpool_limits(2, user_api="openmp"):
        if _engine.openmp_threads() < 2:
            pytest.skip("rankmix was built without OpenMP: one thread")
        together = fit(DPGaussianClustering, VECTORS, n_chains=2)
    assert overlapped[0]
    one_by_one = fit(DPGaussianClustering, VECTORS, n_chains=2, n_jobs=1)
    assert_array_equal(together.label_samples_, one_by_one.label_samples_)


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


# -- the log_likelihood group: LOO and WAIC ------------------------------------------


def _rankings(n, seed):
    X, _, _ = make_mallows_mixture(
        n_clusters=2,
        n_per_cluster=n // 2,
        n_items=6,
        t=4,
        theta=1.0,
        random_state=seed,
    )
    return X


def _counts(n, seed, V=20):
    topics = np.random.default_rng([seed, 1]).dirichlet(np.full(V, 0.3), size=2)
    rng = np.random.default_rng([seed, n])
    return np.array([rng.multinomial(30, topics[k]) for k in rng.integers(2, size=n)])


def _vectors(n, seed):
    rng = np.random.default_rng([seed, n])
    centres = np.array([[0.0, 0.0], [5.0, 5.0]])
    return rng.normal(size=(n, 2)) + centres[rng.integers(2, size=n)]


def _gm_density(model, draw):
    """Each cluster's GM density, from the draw's (sigma, theta) alone."""
    sigmas, thetas = draw[:2]

    def density(members, k, x):
        if k is None:  # a new cluster: Lemma 1, (n - t)! / n!
            n, t = model.n_items_, np.sum(x >= 0)
            return gammaln(n - t + 1) - gammaln(n + 1)
        return mallows.log_likelihood(x[None], sigmas[k], thetas[k])[0]

    return density


def _niw_predictive(model, draw):
    """The NIW posterior predictive given a set of rows, from the prior."""
    k0, nu0 = model.kappa_, model.nu_
    m0, psi0 = model.mean_prior_, model.covariance_prior_

    def density(members, k, x):
        n, d = members.shape
        kn, nun = k0 + n, nu0 + n
        mean = members.mean(axis=0) if n else m0
        mn = (k0 * m0 + n * mean) / kn
        scatter = (members - mean).T @ (members - mean)
        psin = psi0 + scatter + k0 * n / kn * np.outer(mean - m0, mean - m0)
        df = nun - d + 1
        shape = psin * (kn + 1) / (kn * df)
        return stats.multivariate_t(loc=mn, shape=shape, df=df).logpdf(x)

    return density


def _isotropic_predictive(model, draw):
    """The spherical (Normal-Gamma) or fixed-covariance posterior predictive
    given a set of rows, from the prior."""
    k0, m0 = model.kappa_, model.mean_prior_

    def density(members, k, x):
        n, d = members.shape
        kn = k0 + n
        mean = members.mean(axis=0) if n else m0
        mn = (k0 * m0 + n * mean) / kn
        if model.covariance_type == "fixed":
            covariance = model.covariance_prior_ * (kn + 1) / kn
            return stats.multivariate_normal(mn, covariance).logpdf(x)
        nun = model.nu_ + n * d
        psin = (
            model.covariance_prior_
            + ((members - mean) ** 2).sum()
            + k0 * n / kn * ((mean - m0) ** 2).sum()
        )
        shape = psin * (kn + 1) / (kn * nun) * np.eye(d)
        return stats.multivariate_t(loc=mn, shape=shape, df=nun).logpdf(x)

    return density


def _dirichlet_multinomial(model, draw):
    """The Dirichlet-multinomial predictive given a set of rows, written out."""
    a = model.dirichlet_prior_

    def density(members, k, x):
        c = members.sum(axis=0)
        A, T, m = a.sum(), c.sum(), x.sum()
        return (
            gammaln(m + 1)
            - gammaln(x + 1).sum()
            + gammaln(A + T)
            - gammaln(A + T + m)
            + (gammaln(a + c + x) - gammaln(a + c)).sum()
        )

    return density


LOO_CASES = [
    (DPMallowsClustering, _rankings, _gm_density),
    (DPGaussianClustering, _vectors, _niw_predictive),
    (DPMultinomialClustering, _counts, _dirichlet_multinomial),
]
ISOTROPIC_CASES = [
    (
        partial(DPGaussianClustering, covariance_type=kind),
        _vectors,
        _isotropic_predictive,
    )
    for kind in ("spherical", "fixed")
]


@pytest.mark.parametrize(
    "Estimator, make, cluster_density", LOO_CASES + ISOTROPIC_CASES
)
def test_log_likelihood_group_is_the_left_out_predictive_of_each_row(
    Estimator, make, cluster_density
):
    pytest.importorskip("arviz")
    from sklearn import config_context

    X = make(40, 0)
    model = fit(Estimator, X, n_chains=2, thin=3)
    idata = model.to_inference_data()
    values = idata["log_likelihood"]["x"]
    # in batches of a few rows, each with its own labels and densities
    with config_context(working_memory=1e-3):
        assert_allclose(
            model.to_inference_data()["log_likelihood"]["x"], values, rtol=1e-13
        )
    n_kept = len(range(10, 30, 3))
    assert values.shape == (2, n_kept, len(X))
    assert values.dims == ("chain", "draw", "row")
    assert_array_equal(
        idata["sample_stats"]["lp"].values, model.trace_["log_joint"][:, 10:]
    )
    # the second draw of the second chain, every row, written out: the row left
    # out of its own cluster, a new cluster with weight alpha
    d = n_kept + 1
    labels = model.label_samples_[d]
    density = cluster_density(model, model._draws[d])
    alpha, N = model.alpha, len(X)
    for i in range(N):
        terms = [np.log(alpha) + density(X[:0], None, X[i])]
        for k in range(labels.max() + 1):
            members = X[(labels == k) & (np.arange(N) != i)]
            if len(members):
                terms.append(np.log(len(members)) + density(members, k, X[i]))
        expected = logsumexp(terms) - np.log(N - 1 + alpha)
        assert_allclose(values.values[1, 1, i], expected, rtol=1e-10)


@pytest.mark.parametrize(
    "Estimator, make, cluster_density", LOO_CASES + ISOTROPIC_CASES
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_loo_agrees_with_the_held_out_score(Estimator, make, cluster_density, seed):
    # PSIS-LOO estimates the expected log predictive density of a new row, which
    # score measures on fresh rows of the same generator: the two agree within
    # their standard errors (2.5 of them: a two-sided 1% tolerance per seed).
    az = pytest.importorskip("arviz")
    n = 200
    X, X_test = make(n, seed), make(2000, seed)
    model = fit(Estimator, X, n_iter=100, burn_in=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Pareto k: see to_inference_data's Notes
        loo = az.loo(model.to_inference_data())
    held_out = model.score_samples(X_test)
    error = np.hypot(loo.se / n, held_out.std() / np.sqrt(len(held_out)))
    assert abs(loo.elpd_loo / n - held_out.mean()) < 2.5 * error


def test_waic_and_compare_read_the_log_likelihood_group():
    az = pytest.importorskip("arviz")
    X = _vectors(200, 0)
    models = {
        f"alpha={alpha}": fit(DPGaussianClustering, X, alpha=alpha).to_inference_data()
        for alpha in (1.0, 0.01)
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        waic = az.waic(models["alpha=1.0"])
        loo = az.loo(models["alpha=1.0"])
        table = az.compare(models)
    assert abs(waic.elpd_waic - loo.elpd_loo) < loo.se
    assert set(table.index) == set(models)


def test_to_inference_data_can_leave_the_log_likelihood_out():
    pytest.importorskip("arviz")
    idata = fit(DPGaussianClustering, VECTORS).to_inference_data(log_likelihood=False)
    assert "log_likelihood" not in idata.groups()


@pytest.mark.parametrize(
    "Estimator, X, params, moves",
    [
        (DPMallowsClustering, TINY_X, {"n_split_merge": 2}, ["split_merge"]),
        (
            DPGaussianClustering,
            VECTORS,
            {"sampler": "gibbs+split-merge+permutation"},
            ["split_merge", "permutation"],
        ),
        (DPGaussianClustering, VECTORS, {"sampler": "gibbs"}, []),
    ],
)
def test_sample_stats_hold_the_acceptance_rates_the_chains_count(
    Estimator, X, params, moves
):
    pytest.importorskip("arviz")
    model = fit(Estimator, X, n_chains=2, warm_start=True, **params)
    stats = model.to_inference_data()["sample_stats"]
    assert set(stats.data_vars) == {"lp", *(f"{m}_acceptance" for m in moves)}
    for move in moves:
        proposed = model._moves[f"{move}_proposed"]
        accepted = model._moves[f"{move}_accepted"]
        # the per-sweep counts add up to the chains' own counters
        keys = {"split_merge": ("split", "merge"), "permutation": ("",)}[move]
        attribute = f"{move}_counts"
        for chain, p, a in zip(model._chains, proposed, accepted):
            counts = getattr(chain, attribute)
            names = [f"{k}_" if k else "" for k in keys]
            assert p.sum() == sum(counts[f"{k}proposed"] for k in names)
            assert a.sum() == sum(counts[f"{k}accepted"] for k in names)
        with np.errstate(invalid="ignore"):
            expected = (accepted / proposed)[:, model.burn_in :]
        assert_array_equal(stats[f"{move}_acceptance"].values, expected)
    if "permutation" in moves:
        # the permutation move is counted after burn-in only
        assert np.all(model._moves["permutation_proposed"][:, : model.burn_in] == 0)
        assert np.all(model._moves["permutation_proposed"][:, model.burn_in :] == 1)


@pytest.mark.parametrize("method", ["fit", "fit_predict"])
def test_convergence_warning_names_the_callers_line(method):
    # a fixed stacklevel named a line of rankmix/_base.py from fit, and another
    # frame from fit_predict; the warning is the user's, and names their line
    model, X = disagreeing_chains()
    with pytest.warns(ConvergenceWarning, match="R-hat") as record:
        getattr(model, method)(X)
    assert {w.filename for w in record} == {__file__}


def test_other_warnings_name_the_callers_line():
    from rankmix.metrics import variation_of_information
    from rankmix.preprocessing import ScoresToRankings

    with pytest.warns(UserWarning, match="greater than the number") as record:
        ScoresToRankings(t=5).fit(np.array([[1.0, 3.0, 2.0]]))
        ScoresToRankings(t=5).fit_transform(np.array([[1.0, 3.0, 2.0]]))
    assert len(record) == 2
    with pytest.warns(UserWarning, match="continuous values") as more:
        variation_of_information([0.5, 1.5], [0, 1])
    model = DPGaussianClustering(n_iter=4, burn_in=2, warm_start=True)
    model.fit(VECTORS)
    model._chains = None  # as after pickling
    with pytest.warns(UserWarning, match="no chains to continue") as warm:
        model.fit(VECTORS)
    assert {w.filename for w in [*record, *more, *warm]} == {__file__}
