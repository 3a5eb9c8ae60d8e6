"""
========================================================
Choosing alpha and nu by cross-validation (GridSearchCV)
========================================================

:class:`~rankmix.DPMallowsClustering` has two prior parameters that matter most:

- ``alpha``, the concentration of the Dirichlet process: a larger value
  favours more clusters;
- ``nu``, the strength of the conjugate prior on the dispersions theta: a
  larger value pulls every theta_j harder towards the prior's value (set by
  ``r``), so that clusters are assumed more alike in spread.

Both are ordinary estimator parameters, so scikit-learn's
:class:`~sklearn.model_selection.GridSearchCV` can choose them. Two criteria
are shown here:

- the default: the estimator's ``score``, the mean held-out log-likelihood per
  ranking. It needs no labels.
- :data:`rankmix.metrics.vi_scorer`: the variation of information between the
  clustering of the held-out rankings (by ``predict``) and known labels. Lower
  VI is better, so scikit-learn's scorer is its negative.

The data are synthetic rankings from a mixture of Mallows models
(:func:`~rankmix.datasets.make_mallows_mixture`): the true labels are known. Pass
``n_items``: a cross-validation fold need not contain every item, and
log-likelihoods over different numbers of items cannot be compared.

The quick run uses a 4 x 3 grid and one chain of 50 sweeps per fit. Set
``RANKMIX_EXAMPLES_FULL=1`` for a 6 x 4 grid and 200 sweeps.
"""

# %%
# Data
# ----
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold

from rankmix import DPMallowsClustering
from rankmix.datasets import make_mallows_mixture
from rankmix.metrics import variation_of_information, vi_scorer

FULL = os.environ.get("RANKMIX_EXAMPLES_FULL", "0") == "1"
N_ITER = 200 if FULL else 50
ALPHAS = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0] if FULL else [0.01, 1.0, 100.0, 1000.0]
NUS = [0.1, 1.0, 10.0, 100.0] if FULL else [0.1, 1.0, 10.0]

N_ITEMS = 12
X, y, centres = make_mallows_mixture(
    n_clusters=4,
    n_per_cluster=[120, 80, 60, 40],
    n_items=N_ITEMS,
    t=5,
    theta=0.8,
    random_state=0,
)
print(f"{len(X)} top-5 rankings of {N_ITEMS} items, 4 clusters of 120, 80, 60, 40")

# %%
# The search
# ----------
# Both searches use the same folds. Each fit in the search runs one short
# chain, to keep the search fast. ``refit=False`` skips the search's own
# refit: the chosen parameters are refitted below with the default two chains
# of 200 sweeps. Short chains can raise a ConvergenceWarning, which is
# silenced here.
model = DPMallowsClustering(
    n_items=N_ITEMS,
    n_iter=N_ITER,
    burn_in=N_ITER // 2,
    thin=2,
    n_chains=1,
    random_state=0,
)
grid = {"alpha": ALPHAS, "nu": NUS}


def fit(model, X):
    """Fit; return whether the chains disagreed (a ConvergenceWarning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model.fit(X)
    disagree = False
    for warning in caught:
        if issubclass(warning.category, ConvergenceWarning):
            disagree = True
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return disagree


folds = KFold(n_splits=3, shuffle=True, random_state=0)

searches = {}
for name, scoring in [
    ("held-out log-likelihood", None),  # None: the estimator's score
    ("VI to the true labels", vi_scorer),
]:
    search = GridSearchCV(model, grid, scoring=scoring, cv=folds, refit=False)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        search.fit(X, y)  # the default scoring ignores y
    seconds = time.perf_counter() - start
    searches[name] = search
    final = DPMallowsClustering(n_items=N_ITEMS, random_state=0, **search.best_params_)
    disagree = fit(final, X)
    print(
        f"{name}: best {search.best_params_} ({seconds:.0f} s); refitted: "
        f"{final.n_clusters_} clusters, VI to the true labels "
        f"{variation_of_information(y, final.labels_):.3f}"
        + (" (ConvergenceWarning: the chains disagree)" if disagree else "")
    )

# %%
# The two criteria over the grid
# ------------------------------
# Each cell is the mean over the three held-out folds. The best cell has a
# frame.
#
# Both criteria reject a large ``alpha``. At alpha = 1000 the held-out
# log-likelihood is 1.6 to 1.9 nats per ranking below the best, and the VI is
# between 0.07 and 1.1. For alpha <= 1 the cells differ by a few hundredths,
# which three folds and one short chain per fit cannot resolve. So the two
# searches pick different values of ``nu`` (10 and 0.1), and both refits find
# the four true clusters exactly. On these data ``nu`` matters much less than
# ``alpha``. The held-out log-likelihood needs no labels, so it is the
# criterion to use on real data. The VI needs known labels, as in a simulation
# study like this one.
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, (name, search) in zip(axes, searches.items()):
    # cv_results_ lists the grid with the last parameter (nu) varying fastest.
    scores = search.cv_results_["mean_test_score"].reshape(len(ALPHAS), len(NUS))
    if search.scoring is vi_scorer:
        # the scorer is minus the VI; VI >= 0 (abs also turns -0.0 into 0.0)
        scores, cmap, label = np.abs(scores), "viridis_r", "VI (lower is better)"
    else:
        cmap, label = "viridis", "log-likelihood per ranking (higher is better)"
    image = ax.imshow(scores.T, cmap=cmap, origin="lower", aspect="auto")
    middle = (scores.min() + scores.max()) / 2
    for i in range(len(ALPHAS)):
        for j in range(len(NUS)):
            dark = (scores[i, j] < middle) == (cmap == "viridis")
            ax.text(
                i,
                j,
                f"{scores[i, j]:.2f}",
                ha="center",
                va="center",
                color="white" if dark else "black",
                fontsize=9,
            )
    i_best = ALPHAS.index(search.best_params_["alpha"])
    j_best = NUS.index(search.best_params_["nu"])
    ax.add_patch(
        plt.Rectangle(
            (i_best - 0.5, j_best - 0.5),
            1,
            1,
            fill=False,
            edgecolor="red",
            linewidth=2.5,
        )
    )
    ax.set_xticks(range(len(ALPHAS)), [f"{a:g}" for a in ALPHAS])
    ax.set_yticks(range(len(NUS)), [f"{n:g}" for n in NUS])
    ax.set_xlabel("alpha")
    ax.set_ylabel("nu")
    ax.set_title(name)
    fig.colorbar(image, ax=ax, label=label)
fig.tight_layout()
plt.show()
