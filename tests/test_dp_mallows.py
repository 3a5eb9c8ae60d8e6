# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPMallowsClustering: exactness against enumeration, normalisation, API contracts."""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPMallowsClustering, _engine
from rankmix.datasets import make_mallows_mixture
from rankmix.metrics import variation_of_information

from . import _dp_reference as dpref
from . import _reference as ref

# Tiny problem with rankings of mixed length: n = 4 items, 5 rankings.
TINY_X = np.array(
    [[0, 1, 2, 3], [0, 1, 3, 2], [3, 2, 1, 0], [3, 2, -1, -1], [1, 0, -1, -1]]
)
TINY_N_ITEMS = 4


@pytest.fixture(scope="module")
def exact_tiny_posterior():
    posterior = dpref.exact_partition_posterior(TINY_X, TINY_N_ITEMS, 1.0, 1.0, 1.0)
    return dpref.coclustering_matrix(posterior), dpref.n_clusters_distribution(
        posterior
    )


def _exact_sampler_statistics(**params):
    """Co-clustering matrix, K distribution and model of an exact-sampler fit."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = DPMallowsClustering(
            sampler="slice-gibbs",
            sigma_update="mh",
            thin=1,
            n_chains=2,
            init_clusters=2,
            **params,
        ).fit(TINY_X)
    return (*dpref.draw_statistics(model.label_samples_), model)


def test_slice_gibbs_with_mh_matches_exact_posterior(exact_tiny_posterior):
    # the exact sampler reproduces the enumerated posterior over clusterings
    exact_cocluster, exact_k = exact_tiny_posterior
    cocluster, k_dist, _ = _exact_sampler_statistics(
        n_iter=15000, burn_in=500, random_state=0
    )
    assert_allclose(cocluster, exact_cocluster, atol=0.03)
    assert_allclose(k_dist, exact_k, atol=0.03)


@pytest.fixture(scope="module")
def exact_tiny_posterior_with_alpha():
    # alpha ~ Gamma(2, 1) integrated out exactly
    posterior, alpha_mean = dpref.exact_partition_posterior_with_alpha(
        TINY_X, TINY_N_ITEMS, 2.0, 1.0, 1.0, 1.0
    )
    return (
        dpref.coclustering_matrix(posterior),
        dpref.n_clusters_distribution(posterior),
        alpha_mean,
    )


def test_alpha_prior_matches_exact_posterior(exact_tiny_posterior_with_alpha):
    # Escobar & West's step inside the exact sampler: the clusterings and E[alpha | X]
    # of the enumerated posterior with alpha integrated over its Gamma prior
    exact_cocluster, exact_k, alpha_mean = exact_tiny_posterior_with_alpha
    cocluster, k_dist, model = _exact_sampler_statistics(
        alpha_prior=(2.0, 1.0), n_iter=15000, burn_in=500, random_state=0
    )
    assert_allclose(cocluster, exact_cocluster, atol=0.03)
    assert_allclose(k_dist, exact_k, atol=0.03)
    assert_allclose(model.trace_["alpha"][:, 500:].mean(), alpha_mean, rtol=0.05)
    alphas = np.array([model._draw_alpha(draw) for draw in model._draws])
    assert_allclose(alphas.mean(), alpha_mean, rtol=0.05)


def test_alpha_prior_is_traced_used_in_log_joint_and_score_samples():
    # trace_["alpha"] follows the chain; the log joint adds log Gamma(alpha; a, b);
    # score_samples weighs each draw's new-cluster term with its own alpha and stays
    # normalised
    from scipy.stats import gamma

    model = DPMallowsClustering(
        sampler="slice-gibbs",
        alpha_prior=(2.0, 1.0),
        n_iter=30,
        burn_in=10,
        thin=5,
        n_chains=2,
        random_state=0,
    ).fit(TINY_X)
    assert model.trace_["alpha"].shape == (2, 30)
    assert np.ptp(model.trace_["alpha"]) > 0
    assert len({model._draw_alpha(draw) for draw in model._draws}) > 1
    for t in range(1, TINY_N_ITEMS + 1):
        X = np.array(ref.all_top_t(TINY_N_ITEMS, t))
        assert_allclose(np.exp(model.score_samples(X)).sum(), 1.0, rtol=1e-10)
    fixed = DPMallowsClustering(
        sampler="slice-gibbs", alpha=1.7, n_iter=3, burn_in=1, n_chains=1
    )
    sampled = DPMallowsClustering(
        sampler="slice-gibbs",
        alpha=1.7,
        alpha_prior=(2.0, 3.0),
        n_iter=3,
        burn_in=1,
        n_chains=1,
    )
    chains = []
    for model in (fixed, sampled):
        X = model._prepare(TINY_X)
        chains.append(model._chain_factory(X)(np.random.PCG64(0)))
    assert chains[1].alpha == 1.7  # not yet resampled
    assert_allclose(
        chains[1].log_joint - chains[0].log_joint, gamma.logpdf(1.7, 2.0, scale=1 / 3)
    )


@pytest.mark.parametrize("alpha_prior", [None, (2.0, 1.0)])
def test_split_merge_matches_exact_posterior(
    alpha_prior, exact_tiny_posterior, exact_tiny_posterior_with_alpha
):
    # the split-merge move with explicit (sigma, theta) proposals is an exact MH step:
    # with five proposals a sweep (most of the moves), the chain still reproduces the
    # enumerated posterior, alpha fixed or integrated over its Gamma prior
    exact = (
        exact_tiny_posterior if alpha_prior is None else exact_tiny_posterior_with_alpha
    )
    exact_cocluster, exact_k = exact[:2]
    cocluster, k_dist, model = _exact_sampler_statistics(
        alpha_prior=alpha_prior,
        n_split_merge=5,
        n_gibbs=2,
        n_iter=6000,
        burn_in=300,
        random_state=1,
    )
    assert_allclose(cocluster, exact_cocluster, atol=0.03)
    assert_allclose(k_dist, exact_k, atol=0.03)
    if alpha_prior is not None:
        alphas = np.array([model._draw_alpha(draw) for draw in model._draws])
        assert_allclose(alphas.mean(), exact[2], rtol=0.05)


def _split_merge_chain(X, n_split_merge, seed, sampler="slice-gibbs"):
    model = DPMallowsClustering(
        sampler=sampler, n_split_merge=n_split_merge, init="random", init_clusters=1
    )
    return model._chain_factory(model._prepare(X))(np.random.PCG64(seed))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_split_merge_splits_a_merged_start_that_gibbs_keeps(seed):
    # two clusters of full rankings started as one: single-site Gibbs cannot pull
    # either out of the blend in three sweeps, split proposals do (four a sweep,
    # of which half are splits: a merge needs two clusters)
    X, y, _ = make_mallows_mixture(
        n_clusters=2, n_per_cluster=40, n_items=8, t=8, theta=1.0, random_state=0
    )
    gibbs = _split_merge_chain(X, 0, seed)
    split_merge = _split_merge_chain(X, 4, seed)
    gibbs.sweep(3)
    nearest = np.inf
    for _ in range(3):
        split_merge.sweep()
        nearest = min(nearest, variation_of_information(y, split_merge.snapshot()[0]))
    assert variation_of_information(y, gibbs.snapshot()[0]) > 0.5
    assert nearest < 0.25
    assert split_merge.split_merge_counts["split_accepted"] >= 1


@pytest.mark.parametrize("sampler", ["beta-gibbs", "slice-gibbs"])
def test_sequential_start_groups_rankings_before_any_sweep(sampler):
    # sequential prediction starts near the truth, a random start from blends
    X, y, _ = make_mallows_mixture(
        n_clusters=3, n_per_cluster=80, n_items=8, t=5, theta=2.0, random_state=1
    )
    for seed in range(3):
        starts = {}
        for init in ("sequential", "random"):
            model = DPMallowsClustering(sampler=sampler, init=init)
            chain = model._chain_factory(model._prepare(X))(np.random.PCG64(seed))
            starts[init] = variation_of_information(y, chain.snapshot()[0])
            assert_allclose(chain.snapshot()[-1].sum(), len(X))  # every ranking placed
        assert starts["sequential"] < 1.2 < 3.5 < starts["random"]


@pytest.mark.parametrize("sampler", ["beta-gibbs", "slice-gibbs"])
def test_score_samples_sums_to_one_over_all_top_t_rankings(sampler):
    # the posterior predictive is a normalised distribution for each length t
    model = DPMallowsClustering(
        sampler=sampler, n_iter=30, burn_in=10, thin=5, n_chains=2, random_state=0
    ).fit(TINY_X)
    for t in range(1, TINY_N_ITEMS + 1):
        X = np.array(ref.all_top_t(TINY_N_ITEMS, t))
        assert_allclose(np.exp(model.score_samples(X)).sum(), 1.0, rtol=1e-10)


def test_score_samples_is_the_mean_of_the_draws_densities():
    # one draw: the DP mixture density n_k/(N+a) GM + a/(N+a) (n-t)!/n! by hand
    model = DPMallowsClustering(
        sampler="slice-gibbs", n_iter=5, burn_in=4, n_chains=1, random_state=1
    ).fit(TINY_X)
    ((sigmas, thetas, _, sizes),) = model._draws
    x = np.array([[2, 0, 1, 3]])
    density = (
        sum(
            sizes[k]
            / (5 + 1.0)
            * np.exp(ref.gm_log_likelihood(x[0], sigmas[k], thetas[k]))
            for k in range(len(sizes))
        )
        + 1.0 / (5 + 1.0) / 24
    )
    assert_allclose(np.exp(model.score_samples(x)), [density])


def test_fit_predict_equals_fit_labels_and_seed_fixes_everything():
    X, _, _ = make_mallows_mixture(
        n_clusters=3, n_per_cluster=30, n_items=8, t=4, theta=1.5, random_state=0
    )
    params = dict(n_iter=20, burn_in=10, random_state=3)
    labels = DPMallowsClustering(**params).fit_predict(X)
    model = DPMallowsClustering(**params).fit(X)
    assert_array_equal(labels, model.labels_)
    assert_array_equal(
        model.label_samples_, DPMallowsClustering(**params).fit(X).label_samples_
    )


def test_draws_do_not_depend_on_n_jobs():
    X, _, _ = make_mallows_mixture(
        n_clusters=3, n_per_cluster=30, n_items=8, t=4, theta=1.5, random_state=0
    )
    params = dict(n_iter=15, burn_in=5, n_chains=3, random_state=4)
    serial = DPMallowsClustering(n_jobs=1, **params).fit(X)
    threaded = DPMallowsClustering(n_jobs=2, **params).fit(X)
    assert_array_equal(serial.label_samples_, threaded.label_samples_)
    assert_array_equal(serial.trace_["log_joint"], threaded.trace_["log_joint"])


@pytest.mark.parametrize("sampler", ["beta-gibbs", "slice-gibbs"])
def test_recovers_well_separated_clusters(sampler):
    # three concentrated clusters of 8 items are found exactly
    X, y, centres = make_mallows_mixture(
        n_clusters=3, n_per_cluster=80, n_items=8, t=5, theta=2.0, random_state=1
    )
    model = DPMallowsClustering(
        sampler=sampler, n_iter=40, burn_in=20, random_state=0
    ).fit(X)
    assert variation_of_information(y, model.labels_) < 0.05
    assert model.n_clusters_ == 3
    # each fitted centre starts like a true centre; thetas are of the true size
    found = {tuple(s[:3]) for s in model.central_rankings_}
    assert found == {tuple(c[:3]) for c in centres}
    assert np.all(np.abs(np.median(model.thetas_, axis=1) - 2.0) < 0.6)
    assert_allclose(model.weights_.sum(), 1.0)
    # predict on the training data agrees with the point estimate
    assert np.mean(model.predict(X) == model.labels_) > 0.95


def test_fitted_attributes_are_consistent():
    X, _, _ = make_mallows_mixture(
        n_clusters=2, n_per_cluster=40, n_items=6, t=[0.3, 0.3, 0.4], random_state=2
    )
    model = DPMallowsClustering(
        n_iter=12, burn_in=6, thin=3, n_chains=2, random_state=0
    )
    model.fit(X)
    n_draws = 2 * len(range(6, 12, 3))
    assert model.label_samples_.shape == (n_draws, len(X)) == (model.n_draws_, len(X))
    assert model.trace_["n_clusters"].shape == (2, 12)
    assert model.trace_["log_joint"].shape == (2, 12)
    assert model.n_iter_ == 12
    assert model.central_rankings_.shape == (model.n_clusters_, 6)
    assert model.thetas_.shape == (model.n_clusters_, 3)
    assert len(model.weights_) == model.n_clusters_
    assert_array_equal(np.unique(model.labels_), np.arange(model.n_clusters_))
    assert_allclose(np.bincount(model.labels_) / len(X), model.weights_)
    assert model.n_features_in_ == 3 and model.n_items_ == 6
    proba = model.predict_proba(X)
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(proba.argmax(axis=1), model.predict(X))


@pytest.mark.parametrize("sampler", ["beta-gibbs", "slice-gibbs"])
def test_last_theta_of_full_rankings_is_nan(sampler):
    # At the last rank of a full ranking one item remains: no information.
    X, _, _ = make_mallows_mixture(
        n_clusters=2, n_per_cluster=30, n_items=5, t=5, random_state=0
    )
    model = DPMallowsClustering(
        sampler=sampler, n_iter=10, burn_in=5, n_chains=1, random_state=0
    ).fit(X)
    assert model.thetas_.shape == (model.n_clusters_, 5)
    assert np.all(np.isnan(model.thetas_[:, 4]))
    assert np.all(np.isfinite(model.thetas_[:, :4]))
    assert np.all(np.isfinite(model.score_samples(X)))
    assert model.sample(5, random_state=0)[0].shape == (5, 5)
    # top-4 rankings of 5 items keep every theta
    model.fit(X[:, :4])
    assert np.all(np.isfinite(model.thetas_))


def test_sample_draws_rankings_from_the_fitted_mixture():
    X, _, _ = make_mallows_mixture(
        n_clusters=2, n_per_cluster=40, n_items=6, t=[0.5, 0.0, 0.5], random_state=2
    )
    model = DPMallowsClustering(n_iter=10, burn_in=5, random_state=0).fit(X)
    samples, labels = model.sample(200, random_state=0)
    assert samples.shape == (200, 3)
    lengths = (samples >= 0).sum(axis=1)
    assert set(lengths) <= {1, 3}
    assert labels.shape == (200,) and labels.max() < model.n_clusters_
    # rankings are valid (distinct items) and scoreable
    assert np.isfinite(model.score_samples(samples)).all()


def disagreeing_chains():
    """``(model, X)``: chains stopped right after a random start, which disagree
    on the log joint."""
    X, _, _ = make_mallows_mixture(
        n_clusters=6, n_per_cluster=60, n_items=12, t=6, theta=0.6, random_state=0
    )
    model = DPMallowsClustering(
        sampler="slice-gibbs",
        n_iter=12,
        burn_in=0,
        n_chains=4,
        init="random",
        init_clusters=1,
        n_gibbs=1,
        random_state=0,
    )
    return model, X


def test_convergence_warning_when_chains_disagree():
    model, X = disagreeing_chains()
    with pytest.warns(ConvergenceWarning, match="R-hat"):
        model.fit(X)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(alpha=0), "alpha"),
        (dict(sampler="gibbs"), "sampler"),
        (dict(sigma_update="exact"), "sigma_update"),
        (dict(burn_in=10, n_iter=10), "burn_in=10 must be smaller than n_iter=10"),
        (dict(r=[1.0, -1.0, 1.0]), "r must be finite and > 0"),
        (dict(r=[1.0]), "one value per rank"),
        (dict(n_items=2), "n_items=2"),
        (dict(alpha_prior=(1.0,)), "alpha_prior"),
        (dict(alpha_prior=(1.0, 0.0)), "alpha_prior"),
        (dict(alpha_prior=(1.0, 1e-300)), "beyond 1e"),
        (dict(n_split_merge=-1), "n_split_merge"),
        (dict(init="kmeans"), "init"),
    ],
)
def test_bad_parameters_are_refused(params, match):
    with pytest.raises(ValueError, match=match):
        DPMallowsClustering(**params).fit([[0, 1, 2], [2, 1, -1]])


def test_an_r_longer_than_the_rankings_uses_its_first_t_max_values():
    # one r per rank of a full ranking, for top-2 data: the values past t_max
    # are checked (above) but not used
    X = [[0, 1], [1, 0], [2, 3], [3, 2]]
    long = DPMallowsClustering(
        r=[0.5, 2.0, 7.0, 9.0], n_iter=6, burn_in=2, random_state=0
    )
    short = DPMallowsClustering(r=[0.5, 2.0], n_iter=6, burn_in=2, random_state=0)
    long.fit(X), short.fit(X)
    assert_array_equal(long.r_, [0.5, 2.0])
    assert_array_equal(long.label_samples_, short.label_samples_)
    with pytest.raises(ValueError, match="r must be finite and > 0"):
        DPMallowsClustering(r=[0.5, 2.0, -1.0]).fit(X)


def test_new_rankings_are_validated():
    model = DPMallowsClustering(n_iter=4, burn_in=2, random_state=0).fit(
        [[0, 1], [1, 0], [2, 3]]
    )
    with pytest.raises(ValueError, match="longer than the longest training ranking"):
        model.score_samples([[0, 1, 2]])
    with pytest.raises(ValueError, match="Row 1 of X holds item 7"):
        model.predict([[0], [7]])


@pytest.mark.parametrize("n_split_merge", [0, 3])
@pytest.mark.parametrize("sampler", ["slice-gibbs", "beta-gibbs"])
def test_assignment_weights_match_the_papers_formulas(sampler, n_split_merge):
    # the compiled assignment step scores clusters by eq. (11) (Slice-Gibbs) or by
    # Figure 5's Beta predictive (Beta-Gibbs), new cluster alpha (n - t)!/n!; the
    # clusters that split-merge moves create carry consistent Beta-Gibbs statistics
    from scipy.special import betaln, gammaln

    X, _, _ = make_mallows_mixture(
        n_clusters=3, n_per_cluster=15, n_items=7, t=[0.2, 0.3, 0.5], random_state=5
    )
    alpha, nu, r = 0.7, 1.3, np.array([0.8, 1.1, 0.6])
    model = DPMallowsClustering(
        sampler=sampler,
        alpha=alpha,
        nu=nu,
        r=r,
        init_clusters=4,
        n_gibbs=2,
        n_split_merge=n_split_merge,
    )
    X = model._prepare(X)
    chain = model._chain_factory(X)(np.random.PCG64(0))
    chain.sweep(3)
    if n_split_merge:
        # sweep on until a split or merge has been accepted (after 17 sweeps
        # for Slice-Gibbs, 3 for Beta-Gibbs, on this seed), so that its clusters
        # are checked
        for _ in range(30):
            counts = chain.split_merge_counts
            if counts["split_accepted"] + counts["merge_accepted"] >= 1:
                break
            chain.sweep()
        assert counts["split_accepted"] + counts["merge_accepted"] >= 1
    for i in range(0, len(X), 4):
        labels, sigmas, thetas, _, sizes = chain.snapshot()
        weights, new = chain.assignment_log_weights(i)
        x = X[i][X[i] >= 0]
        t = len(x)
        assert_allclose(new, np.log(alpha) + gammaln(7 - t + 1) - gammaln(8))
        for k in range(len(sizes)):
            others = (labels == k) & (np.arange(len(X)) != i)
            if not others.any():
                assert weights[k] == -np.inf
                continue
            codes = np.array(ref.codes(x, sigmas[k]))
            if sampler == "slice-gibbs":
                expected = ref.gm_log_likelihood(x, sigmas[k], thetas[k])
            else:
                member_codes = ref.codes_array(X[others], sigmas[k])
                S = np.where(member_codes >= 0, member_codes, 0).sum(axis=0)[:t]
                N_j = (member_codes >= 0).sum(axis=0)[:t]
                A, B = nu * r[:t] + S, nu + N_j + 1.0
                expected = np.sum(betaln(codes + A, B + 1) - betaln(A, B))
            assert_allclose(weights[k], np.log(others.sum()) + expected, rtol=1e-10)
        # the state is unchanged
        assert_array_equal(chain.snapshot()[0], labels)


def test_verbose_prints_progress_with_time_left(capsys, monkeypatch):
    monkeypatch.setattr(_engine, "tqdm", None)  # the plain lines, without tqdm
    DPMallowsClustering(
        n_iter=10, burn_in=5, n_chains=1, verbose=1, random_state=0
    ).fit(TINY_X)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 10  # every sweep when n_iter <= 10, one line each
    assert "sweep 10/10" in lines[-1] and "clusters" in lines[-1]
    assert "log joint" in lines[-1] and "left" in lines[-1]
    DPMallowsClustering(n_iter=10, burn_in=5, n_chains=1, random_state=0).fit(TINY_X)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("sampler", ["beta-gibbs", "slice-gibbs"])
def test_repeated_rows_reuse_their_scores_without_changing_a_draw(sampler):
    # Rows equal to the row before them (np.repeat order, as sample_weight
    # gives) reuse each unchanged cluster's likelihood term: the same numbers,
    # so the chain's draws are those of a chain that recomputes every term.
    X, _, _ = make_mallows_mixture(
        n_clusters=3, n_per_cluster=40, n_items=8, t=4, theta=1.0, random_state=0
    )
    X = np.repeat(X, np.random.default_rng(0).integers(1, 5, size=len(X)), axis=0)
    model = DPMallowsClustering(sampler=sampler, n_split_merge=2, random_state=0)
    prepared = model._prepare(X)
    snapshots = []
    for reuse in (True, False):
        chain = model._chain_factory(prepared)(np.random.PCG64(3))
        assert chain.n_repeated_rows == np.all(X[1:] == X[:-1], axis=1).sum()
        chain.reuse_repeated_rows = reuse
        chain.sweep(15)
        snapshots.append(chain.snapshot())
    for cached, recomputed in zip(*snapshots):
        assert_array_equal(cached, recomputed)


@pytest.mark.parametrize(
    "Estimator",
    ["DPMallowsClustering", "MallowsKernelDensity", "MallowsBlurringMeanShift"],
)
def test_ids_that_start_at_one_warn_of_the_phantom_item_zero(Estimator):
    import rankmix

    Estimator = getattr(rankmix, Estimator)
    params = (
        {"n_iter": 4, "burn_in": 2, "random_state": 0}
        if Estimator is DPMallowsClustering
        else {}
    )
    one_based = [[1, 2, 3], [3, 2, 1], [2, 3, 1], [1, 3, 2]]
    with pytest.warns(UserWarning, match="Item 0 appears in no ranking, so n_items_"):
        model = Estimator(**params).fit(one_based)
    assert model.n_items_ == 4
    # n_items given, or item 0 in a ranking: no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        Estimator(n_items=4, **params).fit(one_based)
        Estimator(**params).fit(np.array(one_based) - 1)
