# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Convergence diagnostics of scalar traces: R-hat and effective sample size.

Both are the rank-normalised statistics of Vehtari, Gelman, Simpson, Carpenter
& Buerkner (2021), "Rank-normalization, folding, and localization: an improved
R-hat for assessing convergence of MCMC", the ones ArviZ and Stan report,
computed here so that fitted estimators carry them without an optional
dependency (tests check that they equal ArviZ's, but for values apart by
rounding alone, which tie here: `_ties_within_rounding`).
"""

import numpy as np
from scipy.fft import next_fast_len
from scipy.special import ndtri
from scipy.stats import rankdata
from sklearn.exceptions import ConvergenceWarning

from ._warnings import warn

# R-hat of the log joint above this means the chains disagree (Vehtari et al. 2021
# recommend 1.01 for final inference; 1.1 flags clear disagreement only).
RHAT_THRESHOLD = 1.1

# What the warning of chains that disagree advises in Python; the command line
# puts its own options in its place.
CHAINS_DISAGREE_ADVICE = (
    "Increase n_iter and burn_in (or, for data in memory, fit again with "
    "warm_start=True to continue the chains), or try another sampler; inspect "
    "trace_ to see where the chains part."
)

# Values of a trace this close, relative to its largest magnitude, count as
# equal (see `_ties_within_rounding`).
ROUNDING_TOLERANCE = 1e-11


def convergence_summary(trace, burn_in):
    """R-hat and bulk effective sample size of every trace after burn-in.

    Parameters
    ----------
    trace : dict of ndarray of shape (n_chains, n_iter)
        The estimator's ``trace_``.
    burn_in : int
        Sweeps to leave out at the start of every chain.

    Returns
    -------
    rhat, ess : dict of float
        Keyed as ``trace``; NaN where a chain has fewer than 4 sweeps after
        burn-in.
    """
    kept = {name: values[:, burn_in:] for name, values in trace.items()}
    return (
        {name: rhat(values) for name, values in kept.items()},
        {name: ess(values) for name, values in kept.items()},
    )


def rhat(draws):
    """Rank-normalised split R-hat of a scalar across chains (Vehtari et al. 2021).

    The statistic ArviZ reports (``arviz.rhat(..., method="rank")``); a test
    checks that the two agree.

    Parameters
    ----------
    draws : ndarray of shape (n_chains, n_draws)

    Returns
    -------
    rhat : float
        NaN when there are fewer than 4 draws per chain.

    Notes
    -----
    Each chain is cut in halves, which then count as chains. The draws are
    replaced by normal scores of their pooled ranks, z = Phi^{-1}((r - 3/8) /
    (S + 1/4)), and the classic R-hat sqrt(((n - 1) / n W + B / n) / W) (W the
    mean within-half variance, B / n the variance of the half means) is taken
    of z ("bulk") and of the normal scores of |x - median(x)| ("tail"). R-hat
    is the larger. Ranks make it robust to heavy tails and to the ties of a
    discrete trace such as the number of clusters. Values that differ by
    rounding alone (relative 1e-11) tie first: ArviZ has no such step, and
    reads chains that sit on one clustering, their log joints a few units in
    the last place apart, as chains that disagree.
    """
    halves = _split_halves(draws)
    if halves is None:
        return np.nan
    folded = np.abs(halves - np.median(halves))
    return max(
        _classic_rhat(_normal_scores(halves)), _classic_rhat(_normal_scores(folded))
    )


def _normal_scores(x):
    ranks = rankdata(x, axis=None).reshape(x.shape)
    return ndtri((ranks - 0.375) / (x.size + 0.25))


def _classic_rhat(x):
    n = x.shape[1]
    within = x.var(axis=1, ddof=1).mean()
    between = n * x.mean(axis=1).var(ddof=1)
    if within == 0:
        return 1.0 if between == 0 else np.inf
    return float(np.sqrt(((n - 1) / n * within + between / n) / within))


def warn_if_chains_disagree(log_joint):
    """Warn (ConvergenceWarning) when the log joint's R-hat passes the threshold."""
    if log_joint.shape[0] < 2:
        return
    value = rhat(log_joint)
    if not value > RHAT_THRESHOLD:
        return
    tied = _ties_within_rounding(np.asarray(log_joint, dtype=np.float64))
    if np.isfinite(tied).all() and (tied == tied[:, :1]).all():
        # each chain's log joint one value: its variance within chains is
        # zero, and R-hat (some 1e15, as ArviZ gives) says only that
        values = np.unique(tied[:, 0])
        shown = ", ".join(f"{v:.6g}" for v in values[:4])
        found = (f"{shown} among {len(values)} values" if len(values) > 4
                 else shown)
        warn(
            f"The chains disagree: after burn-in each chain stayed in one state, "
            f"and the chains' states differ (log joints {found}). The posterior "
            f"summaries mix chains stuck in different modes. "
            f"{CHAINS_DISAGREE_ADVICE}",
            ConvergenceWarning,
        )
        return
    warn(
        f"The chains disagree: R-hat of the log joint after burn-in is "
        f"{value:.3f} > {RHAT_THRESHOLD}. The posterior summaries mix chains stuck "
        f"in different modes. {CHAINS_DISAGREE_ADVICE}",
        ConvergenceWarning,
    )


def ess(draws):
    """Rank-normalised bulk effective sample size of a scalar (Vehtari et al. 2021).

    The statistic ArviZ reports as ``arviz.ess(..., method="bulk")``; a test
    checks that the two agree. Values apart by rounding alone tie first, as
    for `rhat`.

    Parameters
    ----------
    draws : ndarray of shape (n_chains, n_draws)

    Returns
    -------
    ess : float
        NaN when there are fewer than 4 draws per chain; the number of draws
        when the trace is constant.

    Notes
    -----
    The chains are split in halves and rank-normalised as for `rhat`. With
    W the mean within-half variance, var+ = (n - 1) / n W + B / n the pooled
    variance estimate and acov_t the mean over halves of the lag-t
    autocovariance, the autocorrelations are rho_t = 1 - (W - acov_t) / var+.
    Their sum is truncated by Geyer's initial positive sequence (pairs
    rho_{2k} + rho_{2k+1} are added while positive) made monotone, and
    ESS = M n / tau with tau = -1 + 2 sum_t rho_t.
    """
    halves = _split_halves(draws)
    if halves is None:
        return np.nan
    return _ess_of_normal_scores(_normal_scores(halves))


def _split_halves(draws):
    """(2 n_chains, n_draws // 2): each chain's first and last halves, values
    apart by rounding alone tied; None with fewer than 4 draws per chain."""
    draws = np.asarray(draws, dtype=np.float64)
    half = draws.shape[1] // 2
    if half < 2:
        return None
    return _ties_within_rounding(np.concatenate([draws[:, :half], draws[:, -half:]]))


def _ties_within_rounding(x):
    """``x`` with values that differ by rounding alone made equal.

    Sorted, a value within ``ROUNDING_TOLERANCE`` times the largest magnitude
    of the one before joins its group and takes the group's smallest value.
    The chains sum a state's log joint in their own order (running updates),
    so two chains on one clustering can give values a few units in the last
    place apart; ranks would tell them apart, and R-hat would read two chains
    that agree as chains in different modes. A state that differs in
    anything, a row in another cluster, moves the log joint by far more.
    """
    flat = x.ravel()
    if not np.isfinite(flat).all():
        # a tolerance from inf or NaN would tie everything; traces are
        # finite, and a non-finite one keeps its values (R-hat NaN or large)
        return x
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    tolerance = ROUNDING_TOLERANCE * np.abs(ordered).max(initial=0.0)
    starts = np.r_[True, np.diff(ordered) > tolerance]
    ordered = ordered[np.flatnonzero(starts)[np.cumsum(starts) - 1]]
    tied = np.empty_like(flat)
    tied[order] = ordered
    return tied.reshape(x.shape)


def _ess_of_normal_scores(z):
    n_chains, n = z.shape
    if np.ptp(z) < np.finfo(np.float64).resolution:
        return float(z.size)
    # Autocovariances of every chain at every lag at once, by FFT (O(n log n)).
    centred = z - z.mean(axis=1, keepdims=True)
    size = next_fast_len(2 * n)
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    autocov = np.fft.irfft(spectrum * spectrum.conj(), n=size, axis=1)[:, :n] / n
    within = autocov[:, 0].mean() * n / (n - 1)
    var_plus = within * (n - 1) / n + z.mean(axis=1).var(ddof=1)
    rho = 1.0 - (within - autocov.mean(axis=0)) / var_plus
    # Geyer's initial positive sequence over the pairs (rho_t, rho_t+1), t odd
    # from 1, read from lag 2 on (lags 0 and 1 always count): stop at the first
    # pair whose sum is negative, or when the lags run out.
    kept = np.zeros(n)
    kept[:2] = 1.0, rho[1]
    t, even, pair_sum = 1, 1.0, 1.0 + rho[1]
    while t < n - 3 and pair_sum > 0.0:
        even, odd = rho[t + 1], rho[t + 2]
        pair_sum = even + odd
        if pair_sum >= 0.0:
            kept[t + 1], kept[t + 2] = even, odd
        t += 2
    last = t - 2
    # The even lag of the pair that ended the sequence still counts, once.
    if even > 0.0:
        kept[last + 1] = even
    # Geyer's initial monotone sequence: no pair may exceed the one before.
    for t in range(1, last - 1, 2):
        if kept[t + 1] + kept[t + 2] > kept[t - 1] + kept[t]:
            kept[t + 1] = kept[t + 2] = (kept[t - 1] + kept[t]) / 2.0
    total = n_chains * n
    tau = -1.0 + 2.0 * kept[: last + 1].sum() + kept[last + 1 : last + 2].sum()
    # Antithetic chains can make tau tiny: cap the ESS as Stan does.
    tau = max(tau, 1.0 / np.log10(total))
    return float(total / tau)
