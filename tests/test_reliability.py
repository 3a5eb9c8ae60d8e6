# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Regression tests for the reliability review (shared/reviews/reliability.md).

Every reproducer of the review's "Defects" section is here. Bad input must raise
a ValueError or TypeError naming the parameter, the row or the file and line,
before compiled code runs: never a crash, a hang, a MemoryError, an
OverflowError, a FloatingPointError, or a silent NaN, inf or wrong answer.
"""

import io
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

from rankmix import (
    DPGaussianClustering,
    DPMallowsClustering,
    DPMultinomialClustering,
    MallowsBlurringMeanShift,
    MallowsKernelDensity,
    mallows,
)
from rankmix._gaussian import _student_t_log_density
from rankmix._sklearn_compat import InvalidParameterError
from rankmix._validation import check_rankings
from rankmix.datasets import _preflib, load_preflib
from rankmix.metrics import (
    expected_loss,
    minimize_expected_loss,
    variation_of_information,
)
from rankmix.preprocessing import (
    ScoresToRankings,
    orderings_to_ranks,
    ranks_to_orderings,
)

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

SHORT = dict(n_iter=4, burn_in=2, random_state=0)
RANKINGS = [[0, 1, 2], [2, 1, 0], [1, 0, 2], [0, 1, 2]]
COUNTS = [[1, 0, 2], [0, 3, 1], [2, 2, 0]]
BLOBS, BLOB_LABELS = make_blobs(120, centers=3, random_state=0)


def mallows_fit(X=RANKINGS, **params):
    return lambda: DPMallowsClustering(**{**SHORT, **params}).fit(X)


def gaussian_fit(X=BLOBS, **params):
    return lambda: DPGaussianClustering(**{**SHORT, **params}).fit(X)


def fitted_gaussian():
    return gaussian_fit()()


def fitted_mallows():
    return mallows_fit()()


def preflib(text):
    return lambda: load_preflib(io.StringIO(text))


def malformed_csr(column):
    """A 2 x 3 CSR matrix whose row 0 holds a count in ``column`` (3 or more),
    which SciPy accepts without a check."""
    return sparse.csr_matrix(
        (np.array([1, 2, 3, 1]), np.array([0, column, 1, 2]), np.array([0, 2, 4])),
        shape=(2, 3),
    )


def malformed_coo(axis, index):
    """The counts of ``COUNTS`` as a COO matrix whose first entry's row (axis 0)
    or column (axis 1) was set to ``index`` in place, which SciPy allows."""
    matrix = sparse.coo_matrix(COUNTS)
    (matrix.row if axis == 0 else matrix.col)[0] = index
    return matrix


def malformed_lil(column):
    """``COUNTS`` as a LIL matrix whose first entry was moved to ``column``."""
    matrix = sparse.lil_matrix(COUNTS)
    matrix.rows[0][0] = column
    return matrix


# (call, exception type, regex the message must match), labelled by defect.
BAD_INPUT = {
    # 1 and 8: theta errors name theta, not item ids
    "1-theta-None": (
        lambda: mallows.log_likelihood([[0, 1, 2]], [0, 1, 2], None),
        TypeError,
        "theta must be .* got None",
    ),
    "8-theta-string": (
        lambda: mallows.log_likelihood([[0, 1]], [0, 1, 2], "a"),
        TypeError,
        "theta holds strings .*dispersions",
    ),
    "8-theta-list-with-string": (
        lambda: mallows.log_likelihood([[0, 1]], [0, 1, 2], [1, "a", 2]),
        TypeError,
        "theta holds strings",
    ),
    "8-theta-object": (
        lambda: mallows.log_likelihood([[0, 1]], [0, 1, 2], [1.0, None]),
        TypeError,
        "theta holds None",
    ),
    "8-theta-bool": (
        lambda: mallows.sample([0, 1, 2], True, 2, 2),
        TypeError,
        "theta holds booleans",
    ),
    "8-theta-short": (
        lambda: mallows.log_likelihood([[0, 1, 2]], [0, 1, 2], [1.0]),
        ValueError,
        "theta has 1 stages, but the rankings need 2 .*full ranking excepted",
    ),
    "8-theta-nan": (
        lambda: mallows.log_likelihood([[0, 1]], [0, 1, 2], [1.0, np.nan]),
        ValueError,
        "theta must be finite and >= 0 .* nan at stage 1",
    ),
    "8-theta-negative": (
        lambda: mallows.sample([0, 1, 2], [1.0, -1.0], 2, 2),
        ValueError,
        "theta must be finite and >= 0 .* -1.0 at stage 1",
    ),
    # 2 and 8: nu * r overflowing or underflowing, named
    "2-nu-r-1e200": (mallows_fit(nu=1e200, r=1e200), ValueError, "nu=1e\\+200"),
    "2-nu-r-1e155": (mallows_fit(nu=1e155, r=1e155), ValueError, "nu=1e\\+155"),
    "2-nu-1e308-slice": (
        mallows_fit(nu=1e308, r=10, sampler="slice-gibbs"),
        ValueError,
        "nu=1e\\+308 is too large",
    ),
    "2-nu-r-overflow-only-product": (
        mallows_fit(nu=1e10, r=1e10),
        ValueError,
        r"nu \* r\[0\] = 1e\+20",
    ),
    "8-r-1e-310": (mallows_fit(r=1e-310), ValueError, r"nu \* r\[0\] = 1e-310"),
    "8-r-5e-324": (mallows_fit(r=5e-324), ValueError, r"nu \* r\[0\]"),
    "8-nu-r-underflow": (
        mallows_fit(nu=1e-300, r=1e-300),
        ValueError,
        r"nu \* r\[0\] = 0 \(nu=1e-300",
    ),
    "8-nu-1e-8-r-1e-300": (mallows_fit(nu=1e-8, r=1e-300), ValueError, r"nu \* r"),
    "8-r-per-rank": (
        mallows_fit(r=[1.0, 1e300, 1.0]),
        ValueError,
        r"nu \* r\[1\] = 1e\+300",
    ),
    "6-nu-1e300": (mallows_fit(nu=1e300), ValueError, "nu=1e\\+300"),
    "6-r-1e300": (mallows_fit(r=1e300), ValueError, r"nu \* r\[0\]"),
    "8-r-with-string": (mallows_fit(r=[1, 2, "a", 4]), TypeError, "r must .* 'a'"),
    "8-r-with-bool": (mallows_fit(r=[1, True, 1]), TypeError, "r must .* True"),
    # 3a: the chain's n_items x n_items matrix
    "3a-large-item-id": (
        mallows_fit([[0], [59999]]),
        ValueError,
        "n_items=60000 is too large .* 26.8 GiB .* map the ids",
    ),
    "3a-large-n_items": (
        mallows_fit([[0, 1], [1, 0]], n_items=100000),
        ValueError,
        "n_items=100000 is too large .* 74.5 GiB",
    ),
    # 3b and 7: init_clusters too large for a C integer
    "3b-init_clusters-2**63-mallows": (
        mallows_fit(init_clusters=2**63),
        ValueError,
        "'init_clusters' parameter",
    ),
    "3b-init_clusters-2**63-gaussian": (
        gaussian_fit([[0.0], [1.0]], init_clusters=2**63),
        ValueError,
        "'init_clusters' parameter",
    ),
    "7-n_gibbs-2**63": (mallows_fit(n_gibbs=2**63), ValueError, "'n_gibbs'"),
    "7-n_slices-2**63": (mallows_fit(n_slices=2**63), ValueError, "'n_slices'"),
    "7-n_split_merge-2**63": (
        gaussian_fit(n_split_merge=2**63),
        ValueError,
        "'n_split_merge'",
    ),
    "7-n_chains-2**63": (mallows_fit(n_chains=2**63), ValueError, "'n_chains'"),
    # 3c, 7 and 8: PrefLib files of a few bytes
    "3c-preflib-alternatives-2**31-1": (
        preflib("# NUMBER ALTERNATIVES: 2147483647\n1: 1,2\n"),
        ValueError,
        "<file object>, line 1: NUMBER ALTERNATIVES is 2147483647, .* mention only 2",
    ),
    "3c-preflib-alternatives-1e7": (
        preflib("# NUMBER ALTERNATIVES: 10000000\n1: 1,2\n"),
        ValueError,
        "<file object>, line 1: NUMBER ALTERNATIVES is 10000000",
    ),
    "3c-preflib-alternatives-large-label": (
        preflib("# NUMBER ALTERNATIVES: 2000000000\n1: 1,2000000000\n"),
        ValueError,
        "<file object>, line 1: NUMBER ALTERNATIVES is 2000000000",
    ),
    "3c-preflib-count-1e8": (
        preflib("# NUMBER ALTERNATIVES: 3\n100000000: 1,2\n"),
        ValueError,
        "<file object>, line 2: the counts .* 100000000 voters",
    ),
    "3c-preflib-count-1e9": (
        preflib("# NUMBER ALTERNATIVES: 3\n1000000000: 1,2\n"),
        ValueError,
        "<file object>, line 2: count 1000000000 is too large",
    ),
    "3c-preflib-counts-add-up": (
        preflib("# NUMBER ALTERNATIVES: 3\n60000000: 1,2\n10000000: 2,1\n"),
        ValueError,
        "<file object>, line 3: the counts .* 70000000 voters",
    ),
    "7-preflib-count-1e20": (
        preflib("# NUMBER ALTERNATIVES: 3\n100000000000000000000: 1,2\n"),
        ValueError,
        "<file object>, line 2: count 100000000000000000000 is too large",
    ),
    "7-preflib-count-2**63": (
        preflib(f"# NUMBER ALTERNATIVES: 3\n{2**63}: 1,2\n"),
        ValueError,
        "<file object>, line 2: count",
    ),
    "7-preflib-count-5000-digits": (
        preflib("# NUMBER ALTERNATIVES: 3\n" + "9" * 5000 + ": 1,2\n"),
        ValueError,
        r"<file object>, line 2: count 9+\.\.\. \(5000 digits\) is too large",
    ),
    "8-preflib-alternatives-20-digits": (
        preflib("# NUMBER ALTERNATIVES: 99999999999999999999\n1: 1,2\n"),
        ValueError,
        "<file object>, line 1: NUMBER ALTERNATIVES 99999999999999999999 is too",
    ),
    "8-preflib-voters-100-digits": (
        preflib("# NUMBER ALTERNATIVES: 3\n# NUMBER VOTERS: " + "9" * 100 + "\n1: 1\n"),
        ValueError,
        "<file object>, line 2: NUMBER VOTERS",
    ),
    # 4b, 5a and 7: data whose variances double precision cannot hold
    "4b-gaussian-1e155-diag": (
        gaussian_fit(BLOBS * 1e155, covariance_type="diag"),
        ValueError,
        "X's scale is too large .* Standardise X",
    ),
    "4b-gaussian-1e155-full": (
        gaussian_fit(BLOBS * 1e155),
        ValueError,
        "X's scale is too large .* Standardise X",
    ),
    "4b-gaussian-1e300": (
        gaussian_fit(BLOBS * 1e300),
        ValueError,
        "X's scale is too large",
    ),
    "5a-gaussian-1e-155-diag": (
        gaussian_fit(BLOBS * 1e-155, covariance_type="diag"),
        ValueError,
        "X's scale is too small .* Standardise X",
    ),
    "5a-gaussian-1e-160-full": (
        gaussian_fit(BLOBS * 1e-160),
        ValueError,
        "X's scale is too small .* Standardise X",
    ),
    # 7: FloatingPointError from the chains becomes a ValueError naming priors
    "7-covariance_prior-1e-300": (
        gaussian_fit(covariance_prior=1e-300),
        ValueError,
        "failed numerically .*covariance_prior",
    ),
    "7-mean_prior-1e300-full": (
        gaussian_fit(mean_prior=[1e300, -1e300]),
        ValueError,
        "mean_prior",
    ),
    "7-mean_prior-1e300-diag": (
        gaussian_fit(mean_prior=[1e300, -1e300], covariance_type="diag"),
        ValueError,
        "mean_prior",
    ),
    # 7: a Python int beyond float64 in X
    "7-gaussian-10**400-row-0": (
        gaussian_fit([[10**400, 0.0], [1.0, 2.0], [3.0, 4.0]]),
        ValueError,
        "Row 0 of X holds a number too large for double precision",
    ),
    "7-gaussian-10**400-row-1": (
        gaussian_fit([[1.0, 2.0], [1.0, 10**400], [3.0, 4.0]]),
        ValueError,
        "Row 1 of X holds a number too large",
    ),
    # 5e: non-numeric strings are refused, naming X
    "5e-gaussian-non-numeric-string": (
        gaussian_fit([["0.1", "a"], ["3", "4"], ["5", "6"]]),
        ValueError,
        "X holds a value that is not a number",
    ),
    # 6: an alpha prior whose draws overflow
    "6-alpha_prior-1e300-1e-300": (
        gaussian_fit(alpha_prior=(1e300, 1e-300)),
        ValueError,
        "alpha_prior=.* lets alpha reach",
    ),
    "6-alpha_prior-string": (
        gaussian_fit(alpha_prior=("a", 1)),
        TypeError,
        "alpha_prior must hold real numbers",
    ),
    # 5b: booleans inside lists are not item ids, for every function
    "5b-fit-bool": (
        mallows_fit([[0, True], [1, 0]]),
        TypeError,
        "Row 0 of X holds True of type bool",
    ),
    "5b-fit-numpy-bool-ragged": (
        mallows_fit([[0, 1], [1], [2, np.False_]]),
        TypeError,
        "Row 2 of X holds np.False_",
    ),
    "5b-codes": (
        lambda: mallows.codes([[0, 1], [1, True]], [0, 1, 2]),
        TypeError,
        "Row 1 of X holds True",
    ),
    "5b-kendall_distance": (
        lambda: mallows.kendall_distance([[False, 1]], [0, 1, 2]),
        TypeError,
        "Row 0 of X holds False",
    ),
    "5b-log_likelihood": (
        lambda: mallows.log_likelihood([[0, 1], [True]], [0, 1, 2], 1.0),
        TypeError,
        "Row 1 of X holds True",
    ),
    "5b-sigma": (
        lambda: mallows.sample([0, True, 2], 1.0, 2, 2),
        TypeError,
        "sigma holds True at position 1",
    ),
    "5b-check_rankings-array-rows": (
        lambda: check_rankings([np.array([0, 1]), np.array([True, False])]),
        TypeError,
        "Row 1 of X holds",
    ),
    # 5c: integer scores float64 would round, where they cannot be ranked exactly
    "5c-sparse-integers-beyond-2**53": (
        lambda: ScoresToRankings(t=2).fit_transform(
            sparse.csr_matrix(np.array([[2**62, 2**62 + 1]]))
        ),
        ValueError,
        "Row 0 of X holds the integer score 4611686018427387904, beyond 2\\*\\*53",
    ),
    "5c-object-integers-beyond-2**53": (
        lambda: ScoresToRankings(t=2).fit_transform([[2**62, None], [2**70, 1]]),
        ValueError,
        r"Row 0 of X \(column 0\) holds the integer score",
    ),
    # a list that NumPy turns into float64 because of a NaN: 2**62 + 1 rounded
    # to 2**62, a tie the column order broke
    "5c-list-integers-with-nan-beyond-2**53": (
        lambda: ScoresToRankings(t=2).fit_transform([[2**62, 2**62 + 1, np.nan]]),
        ValueError,
        r"Row 0 of X \(column 0\) holds the integer score 4611686018427387904",
    ),
    # 8: booleans are not counts or rates
    "8-n_iter-True": (mallows_fit(n_iter=True), ValueError, "'n_iter' parameter"),
    "8-burn_in-False": (
        gaussian_fit(n_iter=5, burn_in=False),
        ValueError,
        "'burn_in' parameter",
    ),
    "8-alpha-True": (mallows_fit(alpha=True), ValueError, "'alpha' parameter"),
    "8-nu-True": (gaussian_fit(nu=True), ValueError, "'nu' parameter"),
    "8-thin-True": (mallows_fit(thin=True), ValueError, "'thin' parameter"),
    "8-n_jobs-True": (gaussian_fit(n_jobs=True), ValueError, "'n_jobs' parameter"),
    # joblib's "n_jobs == 0 in Parallel has no meaning", late: refused up front
    # a truthy string silently meant True
    "fuzz-to_inference_data-log_likelihood-string": (
        lambda: fitted_gaussian().to_inference_data(log_likelihood="no"),
        TypeError,
        "log_likelihood must be True or False, got 'no'",
    ),
    "fuzz-consensus_rankings-string": (
        lambda: fitted_mallows().consensus_rankings(return_rank_cdf="yes"),
        TypeError,
        "return_rank_cdf must be True or False, got 'yes'",
    ),
    # the cast to intp wrapped 1e19 into -2**63 in the message
    "fuzz-sigma-beyond-int64": (
        lambda: mallows.codes([[0]], [1e19, 0]),
        ValueError,
        r"got \[10000000000000000000, 0\]",
    ),
    "fuzz-n_jobs-0": (
        mallows_fit(n_jobs=0),
        ValueError,
        r"'n_jobs' parameter .* range \(-inf, -1\], an int in the range \[1",
    ),
    # 8: variation_of_information with labels that are sequences
    "8-vi-nested-labels_pred": (
        lambda: variation_of_information([0, 1], [[1], 2]),
        ValueError,
        "labels_pred must be a 1-D array-like of hashable scalar labels",
    ),
    "8-vi-nested-labels_true": (
        lambda: variation_of_information([[1], 2], [0, 1]),
        ValueError,
        "labels_true must be a 1-D array-like of hashable scalar labels",
    ),
    "8-vi-unhashable": (
        lambda: variation_of_information([0, 1], [{1}, 2]),
        TypeError,
        "labels_pred holds an unhashable label",
    ),
    # A second fuzzing of the public boundary (2026-11-27). Crashes first: the
    # sub-cluster sampler's buffer of 12 n_split_merge row numbers wrapped its
    # byte count (segfault); a CSR matrix with a column index beyond its shape,
    # which SciPy builds unchecked, was read out of bounds; counts whose totals
    # wrap int64 read uninitialised memory.
    "fuzz-n_split_merge-2**59-mallows-subcluster": (
        mallows_fit(sampler="subcluster", n_split_merge=2**59),
        ValueError,
        "'n_split_merge' parameter .* range \\[0, 1000000\\]",
    ),
    "fuzz-n_split_merge-10**6+1-multinomial": (
        lambda: DPMultinomialClustering(**SHORT, n_split_merge=10**6 + 1).fit(COUNTS),
        ValueError,
        "'n_split_merge' parameter",
    ),
    **{
        f"fuzz-malformed-csr-{sampler}-{column}": (
            lambda sampler=sampler, column=column: DPMultinomialClustering(
                **SHORT, sampler=sampler
            ).fit(malformed_csr(column)),
            ValueError,
            "X is a malformed CSR sparse matrix: its indices must lie in \\[0, 3\\)",
        )
        for sampler in ("gibbs+split-merge", "subcluster")
        for column in (5, 10**8)
    },
    "fuzz-counts-wrap-int64": (
        lambda: DPMultinomialClustering(**SHORT).fit(
            np.array([[2**62, 0], [2**62, 0], [2**62, 0]])
        ),
        ValueError,
        "X's counts sum to 1.384e\\+19, more than 2\\*\\*40 .* row 0",
    ),
    "fuzz-counts-uint64-max": (
        lambda: DPMultinomialClustering(**SHORT).fit(
            np.array([[1, 0], [2**64 - 1, 3]], dtype=np.uint64)
        ),
        ValueError,
        "X's counts sum to .* row 1 holds the largest total",
    ),
    # SciPy sums a sparse integer matrix in int64 whatever dtype= says
    "fuzz-counts-sparse-int64-wrap": (
        lambda: DPMultinomialClustering(**SHORT).fit(
            sparse.csr_matrix(np.array([[2**62] * 4, [1, 0, 0, 0], [0, 1, 0, 0]]))
        ),
        ValueError,
        "X's counts sum to 1.845e\\+19",
    ),
    "fuzz-malformed-csc-indptr-decreasing-no-entries": (
        lambda: DPMultinomialClustering(**SHORT).fit(
            sparse.csc_matrix(
                (np.array([]), np.array([], dtype=np.int32), np.array([0, 3, 0])),
                shape=(2, 2),
            )
        ),
        ValueError,
        "malformed CSC sparse matrix: indptr must start at 0 and never decrease",
    ),
    "fuzz-malformed-csc-with-sample_weight": (
        lambda: DPMultinomialClustering(**SHORT).fit(
            sparse.csc_matrix(
                (np.array([1.0, 2.0]), np.array([0, 10**7]), np.array([0, 1, 2])),
                shape=(2, 2),
            ),
            sample_weight=[1, 2],
        ),
        ValueError,
        "malformed CSC sparse matrix: its indices must lie in \\[0, 2\\)",
    ),
    # a third audit (2026-11-28): COO and LIL matrices whose index arrays were
    # changed in place reached SciPy's conversion (a segfault for a row past
    # the shape) and the compiled counts (out of bounds reads, or a wrong score
    # for a column just past the shape)
    **{
        f"fuzz-malformed-coo-{what}-axis{axis}-{index}": (
            lambda what=what, axis=axis, index=index: (
                DPMultinomialClustering(**SHORT).fit(malformed_coo(axis, index))
                if what == "fit"
                else DPMultinomialClustering(**SHORT)
                .fit(COUNTS)
                .score_samples(malformed_coo(axis, index))
            ),
            ValueError,
            "X is a malformed COO sparse matrix: its "
            + ("row" if axis == 0 else "col")
            + " indices must lie in \\[0, "
            + str(np.shape(COUNTS)[axis])
            + "\\)",
        )
        for what in ("fit", "score")
        for axis, index in ((0, 10**6), (1, 10**8), (1, np.shape(COUNTS)[1]))
    },
    # sizes no parameter bounded (the same audit): bare MemoryErrors, an N x N
    # table for N singletons, and a hang spawning 2**62 chains
    "fuzz-ebms-n_items-10**5": (
        lambda: MallowsBlurringMeanShift().fit([[0, 99999], [1, 0]]),
        ValueError,
        "n_items=100000 is too large for MallowsBlurringMeanShift: each "
        "blurring step",
    ),
    "fuzz-top-k-10**6": (
        lambda: mallows.top_k_probabilities(np.arange(10**6), 1.0, k=10**6),
        ValueError,
        "k=1000000 asks for",
    ),
    "fuzz-n_chains-2**62": (
        lambda: DPMallowsClustering(n_chains=2**62).fit(RANKINGS),
        InvalidParameterError,
        "'n_chains' parameter .* range \\[1, 100000\\]",
    ),
    "fuzz-multinomial-n_features-2**40": (
        lambda: DPMultinomialClustering(**SHORT).fit(
            sparse.csr_matrix(
                (np.array([1, 2, 3]), np.array([0, 5, 7]), np.array([0, 1, 2, 3])),
                shape=(3, 2**40),
            )
        ),
        ValueError,
        "n_features=1099511627776 asks for",
    ),
    "fuzz-malformed-lil-fit": (
        lambda: DPMultinomialClustering(**SHORT).fit(malformed_lil(10**8)),
        ValueError,
        "X is a malformed LIL sparse matrix: its indices must lie in \\[0, 3\\)",
    ),
    "fuzz-malformed-lil-scores": (
        lambda: ScoresToRankings().fit_transform(malformed_lil(10**8).astype(float)),
        ValueError,
        "X is a malformed LIL sparse matrix",
    ),
    "fuzz-malformed-csr-scores": (
        lambda: ScoresToRankings().fit_transform(malformed_csr(10**7)),
        ValueError,
        "malformed CSR sparse matrix: its indices must lie in \\[0, 3\\)",
    ),
    "fuzz-counts-float-2**63": (
        lambda: DPMultinomialClustering(**SHORT).fit([[2.0**63, 0.0], [1.0, 1.0]]),
        ValueError,
        "X's counts sum to",
    ),
    # silent NaN: kernels beyond theta * distance's reach, a subnormal kappa
    "fuzz-predict-row-total-past-2**40": (
        lambda: DPMultinomialClustering(**SHORT)
        .fit(COUNTS)
        .predict_proba(sparse.csr_matrix(np.array([[2**62, 2**62, 0]]))),
        ValueError,
        "Row 0 of X holds 9.223e\\+18 counts, more than 2\\*\\*40",
    ),
    "fuzz-kde-bandwidth-1e308": (
        lambda: MallowsKernelDensity(bandwidth=1e308).fit(RANKINGS),
        ValueError,
        "'bandwidth' parameter .* range \\(0.0, 1000000000000.0\\]",
    ),
    "fuzz-kappa-subnormal": (
        gaussian_fit(kappa=5e-324, sampler="permutation"),
        ValueError,
        "'kappa' parameter .* range \\[1e-300, inf\\)",
    ),
    # messages that named no parameter, or the wrong one
    "fuzz-mean_prior-string": (
        gaussian_fit(mean_prior=["a", "b"]),
        TypeError,
        "mean_prior must hold real numbers, got 'a' of type str at position 0",
    ),
    "fuzz-mean_prior-complex": (
        gaussian_fit(mean_prior=[1j, 0]),
        TypeError,
        "mean_prior must hold real numbers",
    ),
    "fuzz-mean_prior-bool": (
        gaussian_fit(mean_prior=[True, 0.5]),
        TypeError,
        "mean_prior must hold real numbers, got True of type bool at position 0",
    ),
    "fuzz-covariance_prior-beyond-floats": (
        gaussian_fit(covariance_prior=10**400),
        ValueError,
        "covariance_prior must be finite",
    ),
    "fuzz-mean_prior-nan": (
        gaussian_fit(mean_prior=[np.nan, 0.0]),
        ValueError,
        "mean_prior must be finite",
    ),
    "fuzz-covariance_prior-strings": (
        gaussian_fit(covariance_prior=[["a", "b"], ["c", "d"]]),
        TypeError,
        "covariance_prior must hold real numbers",
    ),
    "fuzz-covariance_prior-complex-array": (
        gaussian_fit(covariance_prior=np.eye(2) * (1 + 5j)),
        TypeError,
        "covariance_prior must be a real number or an array of real numbers",
    ),
    "fuzz-dirichlet_prior-string": (
        lambda: DPMultinomialClustering(**SHORT, dirichlet_prior=["x", "y"]).fit(
            COUNTS
        ),
        TypeError,
        "dirichlet_prior must hold real numbers",
    ),
    "fuzz-minimize_expected_loss-negative-start": (
        lambda: minimize_expected_loss([[0, 1, 1]], start=[-1, 0, 2]),
        ValueError,
        "start must hold non-negative labels",
    ),
    "fuzz-minimize_expected_loss-float-start": (
        lambda: minimize_expected_loss([[0, 1, 1]], start=[0.5, 0, 1]),
        ValueError,
        "start must hold integer labels",
    ),
    "fuzz-expected_loss-float-labels": (
        lambda: expected_loss([0.5, 1.0], [[0, 1]]),
        ValueError,
        "labels must hold integer labels",
    ),
    # NumPy's "array is too big" named no argument
    "fuzz-n_iter-2**62": (
        mallows_fit(n_iter=2**62, n_jobs=1),
        ValueError,
        "n_iter=4611686018427387904 asks for an array larger than NumPy can",
    ),
    "fuzz-sample-2**62": (
        lambda: DPGaussianClustering(**SHORT).fit(BLOBS).sample(2**62),
        ValueError,
        "n_samples=4611686018427387904 asks for an array larger",
    ),
    "fuzz-kde-sample-2**62": (
        lambda: MallowsKernelDensity().fit(RANKINGS).sample(2**62),
        ValueError,
        "n_samples=4611686018427387904 asks for an array larger",
    ),
    "fuzz-mallows-sample-2**62": (
        lambda: mallows.sample([0, 1, 2], 1.0, 2**62, 2),
        ValueError,
        "n_samples=4611686018427387904 asks for an array larger",
    ),
    "fuzz-minimize_expected_loss-n_runs-2**62": (
        lambda: minimize_expected_loss([[0, 1, 1]], n_runs=2**62),
        ValueError,
        "n_runs=4611686018427387904 asks for an array larger",
    ),
    "fuzz-orderings_to_ranks-missing-10**30": (
        lambda: orderings_to_ranks([[0, -1]], n_items=3, missing=10**30),
        ValueError,
        "missing must be NaN or an integer below 1",
    ),
    "fuzz-orderings_to_ranks-missing-10**400": (
        lambda: orderings_to_ranks([[0, -1]], n_items=3, missing=-(10**400)),
        ValueError,
        "missing must be NaN or an integer below 1 .* at least -2\\*\\*53",
    ),
    "fuzz-orderings_to_ranks-missing-below-2**53": (
        # -2**53 - 1 rounds to -2**53 as a float
        lambda: orderings_to_ranks([[0, -1]], n_items=3, missing=-(2**53) - 1),
        ValueError,
        "missing must be NaN or an integer below 1",
    ),
    "fuzz-ranks_to_orderings-ragged": (
        lambda: ranks_to_orderings([[1, 2], [1]]),
        ValueError,
        "ranks must have a column per item in every row: row 0 has 2 entries, "
        "row 1 has 1",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_raises_a_named_error(case):
    # Each reproducer raises exactly a ValueError or TypeError (scikit-learn's
    # InvalidParameterError, a subclass of both, for declared parameters)
    # whose message names the parameter, the row or the file and line.
    call, expected, message = BAD_INPUT[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(expected, match=message) as info:
            call()
    assert type(info.value) in (expected, InvalidParameterError)


def _run_isolated(code, timeout=60):
    """Run ``code`` in a fresh interpreter: a crash or a hang fails only the test."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_log_likelihood_theta_none_does_not_crash():
    # Defect 1: theta=None reached a compiled memoryview and segfaulted.
    result = _run_isolated(
        """
        from rankmix import mallows
        try:
            mallows.log_likelihood([[0, 1, 2]], [0, 1, 2], None)
        except TypeError as error:
            print("TypeError:", error)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "TypeError: theta must be" in result.stdout


@pytest.mark.parametrize("sampler", ["beta-gibbs", "slice-gibbs"])
@pytest.mark.parametrize("nu, r", [(1e200, 1e200), (1e155, 1e155), (1e308, 10.0)])
def test_overflowing_prior_does_not_hang(nu, r, sampler):
    # Defect 2: nu * r = inf made the theta sampler loop for ever in nogil code.
    result = _run_isolated(
        f"""
        from rankmix import DPMallowsClustering
        try:
            DPMallowsClustering(nu={nu!r}, r={r!r}, sampler={sampler!r}).fit(
                [[0, 1], [1, 0]]
            )
        except ValueError as error:
            print("ValueError:", error)
        """
    )
    assert result.returncode == 0, result.stderr
    assert "ValueError: nu=" in result.stdout


@pytest.mark.parametrize("sampler", ["beta-gibbs", "slice-gibbs"])
@pytest.mark.parametrize(
    "nu, r",
    [(1e12, 1.0), (1.0, 1e12), (1e-300, 1.0), (1.0, 1e-300), (1e12, 1e-12)],
)
def test_prior_at_the_edges_of_its_range_gives_finite_traces(nu, r, sampler):
    # Defect 6: the extreme priors that are accepted give finite traces, thetas
    # and scores.
    X = RANKINGS + [[0, 1, 2]] * 3
    model = DPMallowsClustering(nu=nu, r=r, sampler=sampler, **SHORT).fit(X)
    assert np.all(np.isfinite(model.trace_["log_joint"]))
    # The last stage of the full rankings [0, 1, 2] is NaN by design.
    assert np.all(np.isfinite(model.thetas_[:, :2]))
    assert np.all(np.isfinite(model.score_samples(X)))


@pytest.mark.parametrize("estimator", [DPMallowsClustering, DPGaussianClustering])
def test_init_clusters_larger_than_n_is_capped(estimator):
    # Defect 3b: 10**9 initial clusters allocated 32 GB of slots before the cap.
    X = [[0, 1], [1, 0], [0, 1]] if estimator is DPMallowsClustering else BLOBS[:3]
    model = estimator(init_clusters=10**9, **SHORT)
    if estimator is DPGaussianClustering:
        model.set_params(init="random")
    assert model.fit(X).n_clusters_ <= 3


@pytest.mark.parametrize("estimator", [DPMallowsClustering, DPGaussianClustering])
@pytest.mark.parametrize(
    "n_samples, error", [(True, TypeError), (1.5, TypeError), (0, ValueError)]
)
def test_sample_refuses_non_counts(estimator, n_samples, error):
    # Defect 8: sample(True) failed inside NumPy; booleans are not counts.
    X = RANKINGS if estimator is DPMallowsClustering else BLOBS
    model = estimator(**SHORT).fit(X)
    with pytest.raises(error, match="n_samples must be a positive integer"):
        model.sample(n_samples)


def test_sample_weight_beyond_memory_names_its_sum(monkeypatch):
    # rows repeated as sample_weight says: a sum near its 2**32 bound asked for
    # 32 GiB in a bare MemoryError (the repeat made to fail here)
    from rankmix import _base

    def no_memory(X, counts):
        raise MemoryError("Unable to allocate 32.0 GiB")

    monkeypatch.setattr(_base, "repeat_rows", no_memory)
    with pytest.raises(ValueError, match=r"sum\(sample_weight\)=4294967294 asks"):
        DPGaussianClustering().fit(np.zeros((2, 2)), sample_weight=[2**31, 2**31 - 2])


def test_kde_work_beyond_memory_names_n_items(monkeypatch):
    # n_items up to 2**31 passes fit; score_samples and sample then hold
    # n_items-long work (16 GiB there), which failed in a bare MemoryError (made
    # to fail here: allocating it could succeed, and fill a large machine)
    from rankmix import _kde, _kde_kernels

    def no_memory(*args):
        raise MemoryError("Unable to allocate 16.0 GiB")

    kde = MallowsKernelDensity(n_items=2**31).fit([[0, 1]])
    monkeypatch.setattr(_kde_kernels, "log_density", no_memory)
    monkeypatch.setattr(_kde, "_uniform_completions", no_memory)
    for call in (lambda: kde.score_samples([[0]]), lambda: kde.sample(1)):
        with pytest.raises(ValueError, match="n_items=2147483648 asks for"):
            call()


def test_expected_loss_of_many_singletons_is_linear_in_memory():
    # N singletons against one cluster: an N x N table before (74.5 GiB at
    # N = 10**5), the occupied cells only now
    n = 10**5
    assert_allclose(
        expected_loss(np.arange(n), [np.zeros(n, dtype=int)]), np.log(n), rtol=1e-12
    )


def test_chain_memory_limit_is_inclusive():
    # Defect 3a: the largest supported n_items still fits (the check costs
    # nothing when the limit holds).
    from rankmix._mallows import MAX_CHAIN_ITEMS, _check_chain_memory

    _check_chain_memory(MAX_CHAIN_ITEMS, inferred=True)
    with pytest.raises(ValueError, match=f"n_items={MAX_CHAIN_ITEMS + 1} "):
        _check_chain_memory(MAX_CHAIN_ITEMS + 1, inferred=False)


@pytest.fixture(scope="module")
def blob_models():
    X, _ = make_blobs(300, centers=3, random_state=0)
    return {
        covariance_type: DPGaussianClustering(
            covariance_type=covariance_type, n_iter=20, burn_in=10, random_state=0
        ).fit(X)
        for covariance_type in ("full", "diag")
    }


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
def test_far_points_get_finite_densities(blob_models, covariance_type):
    # Defect 4a: (u * u).sum() overflowed past |x| ~ 1e154, so every cluster got
    # -inf, predict_proba NaN and predict a silent cluster 0.
    model = blob_models[covariance_type]
    far = np.array([[1e155, 0.0], [1e300, -1e300], [1.7e308, -1.7e308], [0.0, -1e200]])
    proba = model.predict_proba(far)
    assert np.all(np.isfinite(proba))
    assert_allclose(proba.sum(axis=1), 1.0)
    assert_array_equal(model.predict(far), proba.argmax(axis=1))
    scores = model.score_samples(far)
    assert np.all(np.isfinite(scores))
    # Farther is less likely, and the tail is polynomial: ten times farther
    # costs a constant number of nats once the heaviest tail dominates.
    line = np.array([[1e100, 0.0], [1e150, 0.0], [1e200, 0.0], [1e250, 0.0]])
    log_density = model.score_samples(line)
    assert np.all(np.diff(log_density) < 0)
    assert_allclose(np.diff(log_density, n=2), 0.0, atol=1e-6)


@pytest.mark.parametrize("kind", ["full", "diag", "spherical"])
def test_far_branch_matches_the_direct_formula(kind):
    # The overflow-safe branch of _student_t_log_density computes the same
    # density as the direct one: compare them on each side of the switch, and
    # on points where both are finite by rescaling the model with the data.
    rng = np.random.RandomState(0)
    d = 3
    means = rng.normal(size=(2, d))
    factors = {
        "full": np.array([np.linalg.cholesky(np.eye(d) * s) for s in (1.0, 4.0)]),
        "diag": np.array([[1.0, 2.0, 0.5], [3.0, 1.0, 1.0]]),
        "spherical": np.array([1.0, 2.5]),
    }[kind]
    dfs = np.array([3.5, 7.0])
    X = rng.normal(size=(5, d)) * 1e150
    direct = _student_t_log_density(X, means, factors, dfs, kind)
    scale = 1e10
    # x -> x * c scales the density by c^-d: the rescaled far points must agree
    far = _student_t_log_density(X * scale, means * scale, factors * scale, dfs, kind)
    assert np.all(np.isfinite(far))
    assert_allclose(far, direct - d * np.log(scale), rtol=1e-12)


@pytest.mark.parametrize("covariance_type", ["full", "diag"])
@pytest.mark.parametrize("scale", [1e153, 2.0**510, 1e-150, 2.0**-500])
def test_gaussian_is_scale_invariant_at_extreme_scales(covariance_type, scale):
    # Defects 4b and 5a: at scales 1e153 and 1e-155 the fit gave 300 singletons
    # or NaN. The chains now run on an exact power-of-two rescaling of X, so the
    # clustering is that of the unscaled data and the densities shift by the
    # Jacobian.
    params = dict(covariance_type=covariance_type, n_iter=20, burn_in=10)
    reference = DPGaussianClustering(random_state=0, **params).fit(BLOBS)
    model = DPGaussianClustering(random_state=0, **params).fit(BLOBS * scale)
    assert adjusted_rand_score(reference.labels_, model.labels_) == 1.0
    d = BLOBS.shape[1]
    assert_allclose(
        model.score(BLOBS * scale), reference.score(BLOBS) - d * np.log(scale)
    )
    assert_allclose(model.means_, reference.means_ * scale, rtol=1e-6)
    assert np.all(np.isfinite(model.covariances_))
    assert np.all(np.isfinite(model.trace_["log_joint"]))
    assert np.all(np.isfinite(model.sample(5, random_state=0)[0]))


def test_permutation_sampler_on_large_scale_data():
    # Defect 7: the permutation move on diag data at 1e153 raised
    # "FloatingPointError: every segment ending at position 1 has zero weight".
    model = DPGaussianClustering(
        sampler="gibbs+permutation", covariance_type="diag", **SHORT
    ).fit(BLOBS * 1e153)
    assert np.all(np.isfinite(model.trace_["log_joint"]))


def test_gaussian_accepts_numeric_strings_as_scikit_learn_does():
    # Defect 5e, decided: numeric strings are converted (scikit-learn's
    # check_array with dtype=float64 does so, and BayesianGaussianMixture
    # accepts them); they give the same model as the floats.
    X = np.array([[0.1, 2.0], [3.0, 4.0], [5.0, 1.0], [0.2, 2.5]])
    as_floats = DPGaussianClustering(**SHORT).fit(X)
    for strings in (X.astype(str), X.astype(str).tolist()):
        as_strings = DPGaussianClustering(**SHORT).fit(strings)
        assert_array_equal(as_strings.labels_, as_floats.labels_)
        assert_allclose(as_strings.score(X), as_floats.score(X))


def test_alpha_prior_at_the_edge_gives_finite_scores():
    # Defect 6: alpha_prior=(1e300, 1e-300) gave alpha = NaN; a strong but
    # representable prior keeps every draw finite.
    model = DPGaussianClustering(alpha_prior=(1e300, 1.0), **SHORT).fit(BLOBS)
    assert np.all(np.isfinite(model.trace_["alpha"]))
    assert np.all(np.isfinite(model.score_samples(BLOBS)))


@pytest.mark.parametrize(
    "scores, expected",
    [
        ([[2**62, 2**62 + 1]], [[1, 0]]),
        ([[2**62 + 1, 2**62]], [[0, 1]]),
        (np.array([[2**64 - 1, 2**64 - 2, 0]], dtype=np.uint64), [[0, 1]]),
        (np.array([[-(2**63), 2**63 - 1, 0]]), [[1, 2]]),
        ([[2**53 + 1, 2**53 + 2, 3]], [[1, 0]]),
    ],
)
def test_large_integer_scores_are_ranked_exactly(scores, expected):
    # Defect 5c: integer scores were cast to float64, so 2**62 and 2**62 + 1
    # tied and the column order decided.
    assert_array_equal(ScoresToRankings(t=2).fit_transform(scores), expected)


def test_large_integer_scores_in_a_mixed_data_frame_are_refused():
    # int64 and float columns make float64 in np.asarray: 2**62 + 1 became a
    # tie with 2**62, broken by the column order
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [2**62, 1], "b": [2**62 + 1, 2], "c": [np.nan, 1.0]})
    message = r"Row 0 of X \(column 0\) holds the integer score 4611686018427387904"
    with pytest.raises(ValueError, match=message):
        ScoresToRankings(t=2).fit_transform(frame)
    # large floats are floats: ranked as they are
    assert_array_equal(
        ScoresToRankings(t=2).fit_transform([[1e20, 3e20, np.nan]]), [[1, 0]]
    )


def test_large_integer_scores_with_random_ties():
    # The exact keys also order ties="random": the two equal top scores come
    # first, in either order.
    scores = [[2**62, 2**62 + 1, 2**62 + 1]] * 50
    rankings = ScoresToRankings(t=2, ties="random", random_state=0).fit_transform(
        scores
    )
    assert set(map(tuple, rankings)) == {(1, 2), (2, 1)}


@pytest.mark.parametrize("theta", [5e-324, 1e-320, 1e-300, 0.0])
def test_sample_with_tiny_theta_is_uniform(theta):
    # Defect 5d: a subnormal theta gave first-item frequencies (0.1, 0.2, 0.2,
    # 0.2, 0.3) instead of uniform.
    X = mallows.sample([0, 1, 2, 3, 4], theta, 100_000, 1, random_state=0)
    frequencies = np.bincount(X[:, 0], minlength=5) / len(X)
    assert_allclose(frequencies, 0.2, atol=0.006)


def test_preflib_limits_leave_real_files_alone(monkeypatch):
    # Defect 3c: the limits are on what a file can declare without content;
    # files at the limits load, one beyond raises naming the file and line.
    unmentioned = _preflib._MAX_UNMENTIONED
    text = f"# NUMBER ALTERNATIVES: {unmentioned + 2}\n1: 1,2\n"
    assert load_preflib(io.StringIO(text)).n_items == unmentioned + 2
    with pytest.raises(ValueError, match="<file object>, line 1: NUMBER ALTERN"):
        load_preflib(
            io.StringIO(text.replace(f"{unmentioned + 2}", f"{unmentioned + 3}"))
        )
    # every alternative named: any number (here 3 unranked of 70,000) is fine
    names = "".join(f"# ALTERNATIVE NAME {i}: a{i}\n" for i in range(1, 70_001))
    election = load_preflib(
        io.StringIO(f"# NUMBER ALTERNATIVES: 70000\n{names}1: 1,2\n")
    )
    assert election.item_names[-1] == "a70000"
    # the expanded data: up to the limit, then the line that goes beyond
    monkeypatch.setattr(_preflib, "_MAX_DATA_ENTRIES", 20)
    at_limit = load_preflib(io.StringIO("# NUMBER ALTERNATIVES: 2\n10: 1,2\n"))
    assert at_limit.data.shape == (10, 2)
    with pytest.raises(ValueError, match="<file object>, line 3: the counts"):
        load_preflib(io.StringIO("# NUMBER ALTERNATIVES: 2\n5: 1\n6: 2,1\n"))


@pytest.mark.parametrize("a", [1e-300, 1e-100, 1e-8, 1e-3, 1.0, 1e3, 1e8, 1e12])
@pytest.mark.parametrize("b", [1e-8, 1.0, 1e4])
def test_prior_normaliser_over_its_range(a, b):
    # Defects 2, 6 and 8: the theta prior's normaliser is finite and accurate
    # over the whole accepted range of nu * r_j. Closed forms: psi_0 = 1, so
    # m = 0 gives exactly 1 / a; a large a pins theta at 0, where psi_m = m + 1.
    from rankmix._mallows import log_theta_normaliser

    assert_allclose(log_theta_normaliser(a, b, 0), -np.log(a), rtol=1e-12, atol=1e-12)
    value = log_theta_normaliser(a, b, 5)
    assert np.isfinite(value)
    if a >= 1e8 * max(b, 1.0):
        assert_allclose(value, -np.log(a) - b * np.log(6.0), rtol=1e-7)
    if a <= 1e-3 and b <= 1e-8:
        assert_allclose(value, -np.log(a), rtol=1e-9)


def test_large_counts_keep_the_log_gamma_tables_bounded(monkeypatch):
    # Fuzzing: one count of 10**8 tabulated 10**8 log-gammas (2.5 GB at fit),
    # 10**9 would need 25 GB. The tables now stop at TABLE_LIMIT, past which
    # the kernels call lgamma: the densities are those of full tables.
    from rankmix import _multinomial_kernels

    model = DPMultinomialClustering(**SHORT).fit([[10**8, 0], [0, 1], [1, 1]])
    _, limits, total_limit = model._model.__reduce__()[1]
    assert limits.max() == total_limit == _multinomial_kernels.TABLE_LIMIT
    assert np.all(np.isfinite(model.score_samples([[10**8, 0], [3, 4]])))

    rng = np.random.RandomState(0)
    X = sparse.csr_matrix(rng.poisson(3.0, size=(20, 6)))
    clusters = sparse.csr_matrix(rng.poisson(4.0, size=(3, 6)))
    symmetric, asymmetric = np.full(6, 0.5), rng.uniform(0.1, 2.0, 6)
    limits = np.array([40, 3, 40, 10, 0, 40])
    # each capping: per table (TABLE_LIMIT), and an asymmetric prior's tables
    # together (FEATURE_TABLES_LIMIT: 6 tables of at most 4 entries in 24)
    for prior, name, value, expected in [
        (symmetric, "TABLE_LIMIT", 2, [2, 2, 2, 2, 0, 2]),
        (asymmetric, "TABLE_LIMIT", 2, [2, 2, 2, 2, 0, 2]),
        (asymmetric, "FEATURE_TABLES_LIMIT", 24, [3, 3, 3, 3, 0, 3]),
    ]:
        arguments = (prior, limits, 200)
        full = _multinomial_kernels.DirichletMultinomial(*arguments)
        monkeypatch.setattr(_multinomial_kernels, name, value)
        capped = _multinomial_kernels.DirichletMultinomial(*arguments)
        monkeypatch.undo()
        assert_array_equal(capped.__reduce__()[1][1], expected)
        assert_allclose(
            capped.log_predictive(clusters, X),
            full.log_predictive(clusters, X),
            rtol=1e-12,
        )


@pytest.mark.parametrize("covariance_type", ["diag", "spherical", "full-1d"])
def test_tiny_nu_keeps_the_posterior_finite(covariance_type):
    # Fuzzing: with "diag" a nu below 1e-16 vanished from nu - 1 + 1, the
    # degrees of freedom of the predictive, so scores were NaN and sample()
    # raised NumPy's "df <= 0"; so did "full" in one dimension.
    X = BLOBS[:, :1] if covariance_type == "full-1d" else BLOBS
    kind = "full" if covariance_type == "full-1d" else covariance_type
    for nu in (1e-300, 1e-30):
        model = DPGaussianClustering(
            **SHORT, nu=nu, covariance_type=kind, n_jobs=1
        ).fit(X)
        assert np.all(np.isfinite(model.score_samples(X)))
        assert np.all(np.isfinite(model.covariances_))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # tails past 1e308
            samples, _ = model.sample(50, random_state=0)
        assert samples.shape == (50, X.shape[1])


def test_sample_warns_when_heavy_tails_pass_the_double_range():
    # Fuzzing: nu = 1.0001 (valid: > d - 1) gives a new cluster's Student-t
    # 1e-4 degrees of freedom, whose draws pass 1e308; they came back as inf
    # with only NumPy's "divide by zero". Now one warning says why.
    model = DPGaussianClustering(**SHORT, nu=1.0001, n_chains=1).fit(BLOBS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        samples, _ = model.sample(2000, random_state=0)
    beyond = np.count_nonzero(~np.all(np.isfinite(samples), axis=1))
    assert beyond > 0
    assert [str(w.message)[:40] for w in caught] == [
        f"{beyond} of the 2000 samples lie beyond the double range"[:40]
    ]
    assert caught[0].category is RuntimeWarning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPGaussianClustering(**SHORT, n_chains=1).fit(BLOBS).sample(2000)


def test_float16_rankings_raise_no_overflow_warning():
    # Fuzzing: comparing a float16 maximum with 2**31 cast 2**31 to float16.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        X = check_rankings(np.array(RANKINGS, dtype=np.float16))
    assert_array_equal(X, RANKINGS)


def test_expected_loss_of_no_samples_is_zero():
    # Fuzzing: the empty list [] (float64 to NumPy) was refused as labels.
    assert expected_loss([], np.empty((2, 0), dtype=int)) == 0.0


def test_sized_by_names_the_argument_of_a_failed_allocation():
    from rankmix._validation import sized_by

    with pytest.raises(ValueError, match="n_samples=3 asks for more memory"):
        with sized_by("n_samples", 3):
            raise MemoryError
    with pytest.raises(ValueError, match="n_samples=3 asks for an array larger"):
        with sized_by("n_samples", 3):
            np.empty(2**62)
    with pytest.raises(ValueError, match="^another fault$"):  # left alone
        with sized_by("n_samples", 3):
            raise ValueError("another fault")


# A second fuzzing round (2026-11-27), of stateful paths: refits that fail,
# set_params after a fit.


@pytest.mark.parametrize("refused", ["n_items", "nu"])
def test_a_refused_refit_leaves_the_fitted_model_as_it_was(refused):
    # _prepare set n_items_ (and the priors) of the refused data before its
    # later checks raised; the old draws, read with the new sizes, let a query
    # of huge ids reach compiled code (segfault).
    X = np.array([[0, 1, 2, 3], [3, 2, 1, 0], [1, 0, 3, 2]] * 5)
    model = DPMallowsClustering(**SHORT, n_chains=1).fit(X)
    before = model.score_samples(X)
    bad = [[0, 1, 2, 99_999_999]] if refused == "n_items" else X
    with pytest.raises(ValueError):
        model.set_params(nu=1e13 if refused == "nu" else 1.0).fit(bad)
    model.set_params(nu=1.0)
    assert model.n_items_ == 4
    assert_array_equal(model.score_samples(X), before)
    with pytest.raises(ValueError, match="item 99999999, but n_items=4"):
        model.score_samples([[99_999_999, 50_000_000, 3, 70_000_000]])
    # a refused first fit leaves the estimator unfitted
    fresh = DPMallowsClustering(**SHORT)
    with pytest.raises(ValueError):
        fresh.fit([[0, 1, 2, 99_999_999]])
    assert not hasattr(fresh, "n_items_")


def test_parameters_changed_after_the_fit_do_not_change_its_posterior():
    # covariance_type and burn_in were read again by the predictive methods and
    # to_inference_data: wrong shapes, NaN, AttributeError or empty groups.
    model = DPGaussianClustering(**SHORT, n_chains=2).fit(BLOBS)
    scores = model.score_samples(BLOBS)
    samples, _ = model.sample(5, random_state=0)
    for kind in ("diag", "spherical", "fixed"):
        model.set_params(covariance_type=kind, burn_in=3)
        assert_array_equal(model.score_samples(BLOBS), scores)
        assert_array_equal(model.sample(5, random_state=0)[0], samples)
    pytest.importorskip("arviz")
    posterior = model.to_inference_data(log_likelihood=False).posterior
    assert posterior.sizes["draw"] == SHORT["n_iter"] - SHORT["burn_in"]


def test_parameters_read_after_the_fit_are_validated():
    # KernelDensity's bandwidth and ScoresToRankings' t, ties and min_rated are
    # read by score_samples, sample and transform: set_params to a value fit
    # refuses gave NaN densities or an empty transform.
    kde = MallowsKernelDensity().fit(RANKINGS)
    for bandwidth in (float("nan"), float("inf"), -1.0):
        kde.set_params(bandwidth=bandwidth)
        for call in (lambda: kde.score_samples(RANKINGS), lambda: kde.sample(2)):
            with pytest.raises(ValueError, match="'bandwidth' parameter"):
                call()
    scores = np.random.RandomState(0).rand(10, 6)
    transformer = ScoresToRankings(t=3).fit(scores)
    for name, value in (("t", 0), ("ties", "bogus"), ("min_rated", -5)):
        transformer.set_params(**{name: value})
        with pytest.raises(ValueError, match=f"'{name}' parameter"):
            transformer.transform(scores)
        transformer = ScoresToRankings(t=3).fit(scores)


def test_far_points_get_probabilities_under_a_known_covariance():
    # Gaussian tails: past |x| ~ 1e154 every cluster's log-density is -inf
    # (the true values lie below the double range), and predict_proba was NaN.
    # The responsibilities come from the limit instead: the widest predictive
    # (the smallest cluster's) wins, then the mean farthest out along x.
    model = DPGaussianClustering(
        **SHORT, n_chains=1, covariance_type="fixed"
    ).fit(BLOBS)
    far = np.array([[1e200, 0.0], [1e300, -1e300], [1.7e308, -1.7e308], [0, -1e160]])
    assert np.all(np.isneginf(model.score_samples(far)))
    for draws in ("all", "point"):
        proba = model.predict_proba(far, draws=draws)
        assert np.all(np.isfinite(proba))
        assert_allclose(proba.sum(axis=1), 1.0)
    # in the point-estimate draw the limit is the direct computation's answer
    # wherever that one still resolves the clusters (1e40: q ~ 1e80)
    for direction in ([1.0, 0.0], [1.0, -1.0], [0.0, -1.0]):
        direction = np.array([direction])
        assert_array_equal(
            model.predict_proba(1e200 * direction, draws="point"),
            model.predict_proba(1e40 * direction, draws="point").round(),
        )


def test_responsibilities_of_rows_of_huge_log_densities_sum_to_one():
    # logsumexp of two equal terms of magnitude 1e200 gave each probability
    # one (a + log 2 == a): rows of predict_proba summed to 2.
    from rankmix._base import BaseDPMixture

    log_density = np.array([[-1e200, -1e200, -3e200], [-1.0, -1.0, -2.0]])
    proba = BaseDPMixture._responsibilities(log_density, np.array([2, 2, 1]))
    assert_allclose(proba, [[0.5, 0.5, 0.0], [0.5 / (1 + np.exp(-1) / 4)] * 2
                            + [np.exp(-1) / 4 / (1 + np.exp(-1) / 4)]])


# A third fuzzing round (2026-11-27): memory layouts and dtypes.


@pytest.mark.parametrize(
    "kind", [sparse.bsr_matrix, sparse.coo_matrix, sparse.dia_matrix, memoryview]
)
def test_weighted_rows_of_any_sparse_format_or_a_memoryview(kind):
    # sample_weight's repetition indexed X before any conversion: BSR raised
    # NotImplementedError, COO and DIA "not subscriptable", a memoryview
    # "invalid slice key", though each fits without weights.
    weights = np.arange(20) % 3  # rows of weight 0 included
    if kind is memoryview:
        X, estimator = np.array(RANKINGS * 5), DPMallowsClustering
    else:
        X = np.random.RandomState(0).poisson(2, (20, 5)) + np.eye(20, 5, dtype=int)
        estimator = DPMultinomialClustering
    expected = estimator(**SHORT, n_chains=1).fit(X, sample_weight=weights)
    model = estimator(**SHORT, n_chains=1).fit(kind(X), sample_weight=weights)
    assert_array_equal(model.label_samples_, expected.label_samples_)
    assert_array_equal(model.trace_["log_joint"], expected.trace_["log_joint"])


def test_big_endian_sparse_scores_rank_as_native_ones():
    # SciPy's copy refused the big-endian data with its own message.
    scores = sparse.csr_matrix(np.array([[3.0, 0, 1], [0, 2, 5]]))
    swapped = scores.copy()
    swapped.data = swapped.data.astype(">f8")
    assert_array_equal(
        ScoresToRankings(t=2).fit_transform(swapped),
        ScoresToRankings(t=2).fit_transform(scores),
    )


def test_object_integer_labels_are_labels_for_every_metric():
    # variation_of_information took object arrays of integers, the metrics on
    # label_samples refused them ("got dtype object").
    from rankmix.metrics import coclustering_matrix

    draws = [[0, 1, 1, 2], [0, 0, 1, 1]]
    as_objects = np.array(draws, dtype=object)
    assert_array_equal(coclustering_matrix(as_objects), coclustering_matrix(draws))
    assert_array_equal(
        minimize_expected_loss(as_objects, random_state=0),
        minimize_expected_loss(draws, random_state=0),
    )
    for bad, message in (("a", "got 'a' of type str"), (2**70, "beyond the int64")):
        with pytest.raises(ValueError, match=message):
            coclustering_matrix(np.array([[0, bad, 1]], dtype=object))


@pytest.mark.parametrize("estimator", [DPGaussianClustering, DPMultinomialClustering])
def test_record_arrays_are_refused_naming_x(estimator):
    # scikit-learn's message ("Cannot cast array data from dtype([...])")
    # named neither X nor what to do.
    records = np.zeros(10, dtype=[("a", "f8"), ("b", "f8")])
    with pytest.raises(TypeError, match="X must hold .*, not records of dtype"):
        estimator(**SHORT).fit(records)


# Fitted state edited by hand (2026-11-28): the compiled kernels index tables
# with a fitted model's central rankings, rankings and counts, which a user may
# edit or unpickle. Each edit below segfaulted, corrupted the heap or read
# uninitialised or foreign memory; the kernels now check what they index with.

RANKINGS_6 = mallows.sample(np.arange(6), 1.0, 40, 3, random_state=0)


def _edit(model, name, index, value):
    getattr(model, name)[index] = value
    return model


def _mallows_fitted():
    return DPMallowsClustering(**SHORT, n_chains=1).fit(RANKINGS_6)


def _ebms_fitted():
    return MallowsBlurringMeanShift().fit(RANKINGS_6)


def _kde_fitted():
    return MallowsKernelDensity().fit(RANKINGS_6)


NOT_A_PERMUTATION = "row 0 of the central rankings is not a permutation of the items"
OUTSIDE = "holds an item outside 0..{} or more than {} items"


@pytest.mark.parametrize(
    "edit, call, message",
    [
        (
            lambda: _edit(_mallows_fitted(), "central_rankings_", (0, 0), 10**12),
            lambda m: m.predict(RANKINGS_6, draws="point"),
            NOT_A_PERMUTATION,
        ),
        (
            lambda: _edit(_mallows_fitted(), "central_rankings_", (0, 0), -1),
            lambda m: m.score_samples(RANKINGS_6),
            NOT_A_PERMUTATION,
        ),
        (  # a repeated item left a position unset: uninitialised memory read
            lambda: _edit(_mallows_fitted(), "central_rankings_", (0, 1), 0),
            lambda m: m.predict_proba(RANKINGS_6, draws="point"),
            NOT_A_PERMUTATION,
        ),
        (  # queries of an item past the draws' centres pass n_items_ = 16
            lambda: _edit(_mallows_fitted(), "__dict__", "n_items_", 16),
            lambda m: m.score_samples([[15, 0, 1]]),
            OUTSIDE.format(5, 6),
        ),
        (  # longer queries pass n_features_in_ = 5; the draws hold 3 thetas
            lambda: _edit(_mallows_fitted(), "__dict__", "n_features_in_", 5),
            lambda m: m.score_samples([[0, 1, 2, 3, 4]]),
            r"thetas has shape \(\d+, 3\), expected \(\d+, >= 5\)",
        ),
        (
            lambda: _edit(_ebms_fitted(), "central_rankings_", (0, 0), 10**12),
            lambda m: m.predict(RANKINGS_6),
            NOT_A_PERMUTATION,
        ),
        (
            lambda: _edit(_ebms_fitted(), "__dict__", "thetas_", np.ones(1)),
            lambda m: m.score_samples(RANKINGS_6),
            r"thetas has shape \(1, 3\)",
        ),
        (
            lambda: _edit(_kde_fitted(), "rankings_", (0, 0), 10**12),
            lambda m: m.score_samples(RANKINGS_6),
            "row 0 of the rankings " + OUTSIDE.format(5, 6),
        ),
        (  # n_items_ lowered below the ids the rankings hold
            lambda: _edit(_kde_fitted(), "__dict__", "n_items_", 3),
            lambda m: m.score_samples([[0, 1, 2]]),
            "of the rankings " + OUTSIDE.format(2, 3),
        ),
    ],
    ids=[
        "mallows-centre-huge",
        "mallows-centre-negative",
        "mallows-centre-repeated",
        "mallows-n_items_",
        "mallows-n_features_in_",
        "ebms-centre",
        "ebms-thetas_",
        "kde-rankings_",
        "kde-n_items_",
    ],
)
def test_fitted_rankings_edited_by_hand_raise(edit, call, message):
    model = edit()
    with pytest.raises(ValueError, match=message):
        call(model)


def _multinomial_fitted():
    return DPMultinomialClustering(**SHORT, n_chains=1).fit(np.array(COUNTS * 4))


@pytest.mark.parametrize("fault", ["column", "negative", "n_features_in_"])
def test_fitted_counts_edited_by_hand_raise(fault):
    model = _multinomial_fitted()
    X = np.array(COUNTS)
    counts = model._best_parameters[0]
    if fault == "column":  # an entry past the V features: a write past a state
        counts.indices[0] = 10**9
        message = "the clusters' counts must have 3 columns .* columns 0..1000000000"
    elif fault == "negative":  # a log-gamma table read at a negative index
        counts.data[0] = -5
        message = "the clusters' counts must hold non-negative counts"
    else:  # wider rows pass the check of n_features_in_
        model.n_features_in_ = 10**9
        X = sparse.csr_matrix(([1], ([0], [10**9 - 1])), shape=(1, 10**9))
        message = "X must have 3 columns of counts, the model's features"
    with pytest.raises(ValueError, match=message):
        model.predict_proba(X, draws="point")


def test_a_tampered_pickle_raises_instead_of_crashing():
    import pickle

    model = _kde_fitted()
    model.rankings_[0, 0] = 10**12
    loaded = pickle.loads(pickle.dumps(model))
    with pytest.raises(ValueError, match="row 0 of the rankings holds an item"):
        loaded.score(RANKINGS_6)


# The same, for the state a warm fit continues and a trimmed draw is rebuilt
# from: labels of more rows than the training data made the rebuild read past
# the rows (and, for counts, write past a state: a segfault).

COUNTS_400 = np.r_[
    np.random.default_rng(0).poisson([8, 8, 1, 1, 1, 1], size=(200, 6)),
    np.random.default_rng(1).poisson([1, 1, 1, 1, 8, 8], size=(200, 6)),
]


@pytest.mark.parametrize("sampler", ["gibbs+split-merge", "subcluster"])
def test_a_warm_fit_refuses_label_samples_edited_to_other_rows(sampler):
    model = DPMultinomialClustering(
        n_iter=30, burn_in=0, thin=1, n_chains=1, sampler=sampler,
        warm_start=True, random_state=0,
    ).fit(COUNTS_400)
    model._chain_label_samples = np.tile(model._chain_label_samples, (1, 2))
    with pytest.raises(ValueError, match=r"found label samples of shape \(30, 800\)"):
        model.fit(COUNTS_400)


def test_a_trimmed_draw_is_not_rebuilt_from_rows_it_does_not_have():
    # more than 20 kept draws: some are trimmed and rebuilt from the rows
    model = DPMultinomialClustering(
        n_iter=30, burn_in=0, thin=1, n_chains=1, random_state=0
    ).fit(COUNTS_400)
    trimmed = next(d for d, p in enumerate(model._draws) if p[0] is None)
    family, _ = source = model._rebuild_source()
    with pytest.raises(ValueError, match="members must be rows 0..399"):
        family.blocked_state(np.array([0, 400]), 64)
    model._X_fit = model._X_fit[:1]
    with pytest.raises(ValueError, match="members must be rows 0..0"):
        model._rebuilt_draw(trimmed, model._rebuild_source())
    model._chain_label_samples = model._chain_label_samples[:, :10]
    with pytest.raises(ValueError, match=rf"labels of kept draw {trimmed} have"):
        model._rebuilt_draw(trimmed, source)


@pytest.mark.parametrize("covariance_type", ["full", "diag", "spherical"])
def test_gaussian_nu_is_capped_where_the_densities_keep_their_digits(covariance_type):
    # nu = 1e16 scored unit-variance data at +35.7 per row: log-gamma terms of
    # order 1e17 cancelled to tens of nats. Up to the cap the scores agree
    # with a merely strong prior's.
    X = np.random.default_rng(0).normal(size=(100, 2))

    def score(nu):
        model = DPGaussianClustering(
            nu=nu,
            covariance_type=covariance_type,
            n_iter=40,
            burn_in=20,
            n_chains=1,
            random_state=0,
        )
        return model.fit(X).score(X)

    assert abs(score(1e12) - score(1e8)) < 0.05
    with pytest.raises(ValueError, match="nu=1.1e\\+12 is too large.*'fixed'"):
        score(1.1e12)


def test_dirichlet_prior_is_capped_in_total():
    # a uniform 1e15 over 10 words gave 46 clusters of one-cluster data and a
    # positive log-probability of counts (+56.8)
    X = np.random.default_rng(0).multinomial(20, np.ones(10) / 10, size=100)

    def fit(prior):
        return DPMultinomialClustering(
            dirichlet_prior=prior, n_iter=40, burn_in=20, n_chains=1, random_state=0
        ).fit(X)

    # sums to 1e12, the largest allowed: a prior that fixes the word
    # probabilities to uniform, as 1e6 does
    assert abs(fit(1e11).score(X) - fit(1e6).score(X)) < 0.01
    with pytest.raises(ValueError, match="sums to 1.1e\\+12 over the features"):
        fit(1.1e11)
