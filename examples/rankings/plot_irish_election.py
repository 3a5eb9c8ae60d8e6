"""
===============================================
Voting blocs in the 2002 Irish election (Meath)
===============================================

Irish general elections use the single transferable vote: each voter ranks as
many candidates as they like, best first. In the Meath constituency in 2002,
64,081 voters ranked some of 14 candidates (ten from six parties, and four
independents), on average 4.65 of them. The generalized Mallows model
describes such partial ballots (top-t rankings). A Dirichlet-process mixture
of such models groups the voters into clusters. Each cluster has a central
ranking, which is its typical ballot, and a dispersion theta_j for each rank j.
The model is not told how many clusters there are.

This example repeats the analyses of Meila & Chen (2010, sec. 8) on data anyone
can download: the central rankings of the largest clusters (their Table 1), the
cluster sizes (Figure 10) and theta_j against the rank (Figure 11). Their data
were Irish college applications, which are not public.

:func:`~rankmix.datasets.fetch_irish` downloads the ballots from PrefLib once
(0.5 MB) into ``~/rankmix_data``, or into the folder that the environment
variable ``RANKMIX_DATA`` names. After that it reads the copy on disk and needs
no network.

The quick run fits a random sample of 5,000 ballots with 60 sweeps per chain.
Set ``RANKMIX_EXAMPLES_FULL=1`` to fit all 64,081 ballots with 400 sweeps per
chain (10 to 15 minutes).
"""

# %%
# The ballots
# -----------
# Each candidate's name ends with their party. The data hold one row per
# ballot, and each row lists candidate ids, best first, padded with -1.
import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Rectangle
from sklearn.exceptions import ConvergenceWarning

from rankmix import DPMallowsClustering
from rankmix.datasets import fetch_irish
from rankmix.plotting import plot_rank_heatmap, plot_trace

FULL = os.environ.get("RANKMIX_EXAMPLES_FULL", "0") == "1"
N_BALLOTS = None if FULL else 5000
N_ITER = 400 if FULL else 60

meath = fetch_irish("meath")
n_items = meath.n_items

# "Johnny Brady F.F." -> ("Brady", "F.F."); "Michael Redmond C.C. Csp" -> ...
PARTIES = {
    "F.F.": ("Fianna Fáil", "#3d9a3d"),
    "F.G.": ("Fine Gael", "#3465c0"),
    "Lab": ("Labour", "#d62728"),
    "G.P.": ("Green Party", "#a6cf3a"),
    "S.F.": ("Sinn Féin", "#24574f"),
    "C.C. Csp": ("Christian Solidarity", "#9c6b30"),
    "Non-P": ("independent", "#b0b0b0"),
}
surname, party = [], []
for name in meath.item_names:
    code = next(code for code in PARTIES if name.endswith(" " + code))
    surname.append(name[: -len(code) - 1].split()[-1])
    party.append(code)

lengths = np.count_nonzero(meath.data != -1, axis=1)
print(f"{len(meath.data)} ballots, {n_items} candidates, {lengths.mean():.2f} ranked")
first = np.bincount(meath.data[:, 0], minlength=n_items) / len(meath.data)
for code, (party_name, _) in PARTIES.items():
    members = [surname[i] for i in range(n_items) if party[i] == code]
    share = sum(first[i] for i in range(n_items) if party[i] == code)
    print(f"  {party_name:21s} {share:6.1%} of first preferences: {', '.join(members)}")

# %%
# Fit the DP mixture
# ------------------
# The ballots come grouped by their content, so the subsample of the quick run is
# drawn at random. ``n_items`` is given, so that a candidate missing from the
# sample would still count. The prior is the default one (alpha = nu = r = 1),
# as in the paper's synthetic experiments. (For the college data of its
# sec. 8 the paper set alpha and nu to 100, for a finer clustering.)
#
# Many voters cast the same ballot. ``sample_weight`` takes the count of each
# distinct ballot: the fit is exactly the fit of the repeated ballots (draw for
# draw, with the same ``random_state``), and the labels come one per distinct
# ballot.
rng = np.random.RandomState(0)
X = meath.data[rng.permutation(len(meath.data))[:N_BALLOTS]]
ballots, counts = np.unique(X, axis=0, return_counts=True)

model = DPMallowsClustering(
    n_items=n_items, n_iter=N_ITER, burn_in=N_ITER // 2, thin=2, random_state=0
)
start = time.perf_counter()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ConvergenceWarning)
    model.fit(ballots, sample_weight=counts)
seconds = time.perf_counter() - start
print(
    f"{len(X)} ballots ({len(ballots)} distinct), {model.n_chains} chains x "
    f"{model.n_iter_} sweeps in {seconds:.0f} s: {model.n_clusters_} clusters"
)
for warning in caught:  # say so if the two chains disagree
    if issubclass(warning.category, ConvergenceWarning):
        print("ConvergenceWarning:", str(warning.message).split(". ")[0])
    else:
        warnings.warn_explicit(
            warning.message, warning.category, warning.filename, warning.lineno
        )

# %%
# The largest clusters and their typical ballots
# ----------------------------------------------
# Each row below is one cluster that holds at least 1% of the ballots. The bar
# on the left is its share of the ballots. On the right are the first five
# candidates of its central ranking, coloured by party. The number under each
# name is theta_j at that rank. A large theta_j means that the cluster's voters
# agree on that position. A small one means they scatter.
sizes = np.bincount(model.labels_, weights=counts, minlength=model.n_clusters_)
shares = sizes / counts.sum()
order = np.argsort(-sizes, kind="stable")
large = order[shares[order] >= 0.01]
# Group the rows by the party of the first choice, largest party bloc first.
first_party = [party[sigma[0]] for sigma in model.central_rankings_]
bloc_share = {}
for k in large:
    bloc_share[first_party[k]] = bloc_share.get(first_party[k], 0) + shares[k]
rows = sorted(
    large,
    key=lambda k: (-bloc_share[first_party[k]], -shares[k]),
)

n_show = 5
fig, (ax_bar, ax_ballot) = plt.subplots(
    1,
    2,
    figsize=(11, 0.42 * len(rows) + 2.0),
    gridspec_kw={"width_ratios": [1, 6.5], "wspace": 0.02},
    sharey=True,
    layout="constrained",
)
y = np.arange(len(rows))
ax_bar.barh(y, 100 * shares[rows], color="0.45")
ax_bar.invert_xaxis()
ax_bar.set_xlabel("% of ballots")
ax_bar.tick_params(axis="y", length=0)
for side in ("top", "left"):
    ax_bar.spines[side].set_visible(False)
dark = {"F.F.", "F.G.", "Lab", "S.F.", "C.C. Csp"}  # white text on these colours
for row, k in enumerate(rows):
    for j, item in enumerate(model.central_rankings_[k, :n_show]):
        ax_ballot.add_patch(
            Rectangle((j + 0.04, row - 0.42), 0.92, 0.84, color=PARTIES[party[item]][1])
        )
        text_color = "white" if party[item] in dark else "black"
        ax_ballot.text(
            j + 0.5,
            row - 0.1,
            surname[item],
            ha="center",
            va="center",
            fontsize=9,
            color=text_color,
        )
        ax_ballot.text(
            j + 0.5,
            row + 0.24,
            f"θ = {model.thetas_[k, j]:.1f}",
            ha="center",
            va="center",
            fontsize=6.5,
            color=text_color,
        )
# Separate the blocs (same party first) and name them on the right.
bloc_of_row = [first_party[k] for k in rows]
starts = [0] + [r for r in range(1, len(rows)) if bloc_of_row[r] != bloc_of_row[r - 1]]
for begin, stop in zip(starts, starts[1:] + [len(rows)]):
    if begin:
        ax_ballot.axhline(begin - 0.5, color="k", linewidth=1)
    code = bloc_of_row[begin]
    ax_ballot.text(
        n_show + 0.08,
        (begin + stop - 1) / 2,
        f"{PARTIES[code][0]} first\n{100 * bloc_share[code]:.0f}%",
        ha="left",
        va="center",
        fontsize=9,
    )
ax_ballot.set_xlim(0, n_show + 1.1)
ax_ballot.set_ylim(len(rows) - 0.5, -0.5)
ax_ballot.set_xticks(np.arange(n_show) + 0.5, [f"rank {j + 1}" for j in range(n_show)])
ax_ballot.xaxis.tick_top()
ax_ballot.tick_params(length=0)
ax_ballot.set_yticks([])
for side in ("top", "right", "bottom", "left"):
    ax_ballot.spines[side].set_visible(False)
fig.legend(
    [Rectangle((0, 0), 1, 1, color=color) for _, color in PARTIES.values()],
    [name for name, _ in PARTIES.values()],
    loc="outside lower center",
    ncol=len(PARTIES),
    fontsize=8,
    frameon=False,
)
fig.suptitle(
    f"Meath 2002: the {len(rows)} clusters with at least 1% of the "
    f"{len(X):,} ballots (together {100 * shares[large].sum():.0f}% of them)"
)

for k in rows:
    ranking = " > ".join(surname[i] for i in model.central_rankings_[k, :n_show])
    print(f"{100 * shares[k]:5.1f}%  {ranking}")

# %%
# Reading the blocs
# -----------------
# Party comes first. In the quick run, most of the large clusters headed by a
# Fianna Fáil candidate have central rankings that put the party's three
# candidates (Brady, Dempsey, Wallace) at ranks 1 to 3, in one order or
# another; the others bring in Sinn Féin's Reilly or Fine Gael early. These
# clusters differ mostly in where the ballot goes next: to Reilly, to Fine
# Gael or to the independent Fitzgerald. The Fine Gael clusters do the same
# with Bruton, English and Farrelly, then go on to Labour's Ward, to
# Fitzgerald or to Fianna Fáil. The clusters headed by Reilly go on to Fianna
# Fáil or to Fine Gael and Labour, one cluster ranks the Green O'Byrne first,
# then Labour's Ward, and Fitzgerald heads one of his own.
#
# The shares on the right are those of the clusters headed by a party's
# candidate, not first preferences: a cluster's ballots need not all start
# with its first candidate (theta_1 is below 1 in most clusters).
#
# Gormley and Murphy (2008) clustered ballots of the same election with
# mixtures of Plackett-Luce models; the constituency their article analyses
# is Dublin West. They describe the voting blocs they found as characterized
# by party politics, candidate profile and political ideology. The Meath
# clusters show structure of these kinds: party tickets, clusters built around
# one candidate (Fitzgerald), and a bloc that ranks Sinn Féin, the Greens,
# Labour and independents ahead of both large parties. The comparison goes no
# further than that: the models differ, and so do the constituencies.
# ``fetch_irish("dublin_west")`` gives theirs.
#
# I. C. Gormley and T. B. Murphy. Exploring voting blocs within the Irish
# electorate: a mixture modeling approach. Journal of the American
# Statistical Association 103(483), 2008.

# %%
# The largest cluster in full
# ---------------------------
# A central ranking is the typical ballot of a cluster, not every ballot.
# :func:`~rankmix.plotting.plot_rank_heatmap` shows how the cluster's own
# ballots spread: the cell of a candidate and a rank is the share of the
# cluster's ballots that put that candidate at that rank, candidates in the
# order of the central ranking; ``sample_weight`` counts each distinct ballot
# as often as it was cast. In the quick run the largest cluster is a Fine
# Gael ticket: Bruton, English and Farrelly share the first three ranks in one
# order or another (Bruton first on 37% of its ballots, English on 25%,
# Farrelly on 22%), then Labour's Ward follows and the preferences thin out.
# Ballots are top-t rankings, so the columns fade to the right: a column sums
# to the share of the ballots that rank that many candidates (in this cluster
# 59% name a fourth, 25% a sixth).
fig, ax = plt.subplots(figsize=(7, 4.8))
plot_rank_heatmap(
    model,
    ballots,
    sample_weight=counts,
    cluster=order[0],
    item_names=[f"{surname[i]} ({party[i]})" for i in range(n_items)],
    ax=ax,
)
fig.tight_layout()

# %%
# Cluster sizes
# -------------
# As in the paper's Figure 10, the sizes span orders of magnitude. A few dozen
# clusters hold most of the ballots, and a tail of small clusters holds the
# rest, down to single ballots.
#
# The number of clusters does not settle. In the quick run the two chains
# have not agreed on a count by the end. The full run on all 64,081 ballots
# ends with 50 clusters in ``labels_``, while its draws after burn-in hold from
# 47 to 59. The count is still rising after 400 sweeps, and the chains
# disagree (a ConvergenceWarning). A DP mixture adds clusters as the data
# grow. With tens of thousands of ballots it can afford clusters for fine
# distinctions, such as the order of the three Fianna Fáil candidates. The
# large blocs above appear in both runs.
fig, (ax, ax_trace) = plt.subplots(
    1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [3, 2]}
)
ax.bar(np.arange(1, len(sizes) + 1), sizes[order], color="0.35", width=0.8)
ax.set_yscale("log")
ax.axhline(0.05 * len(X), color="tab:red", linestyle="--", linewidth=1, label="5%")
ax.axhline(0.01 * len(X), color="tab:orange", linestyle="--", linewidth=1, label="1%")
ax.set_xlabel("cluster, largest first")
ax.set_ylabel("ballots")
ax.set_title(
    f"{model.n_clusters_} clusters: {np.count_nonzero(shares >= 0.05)} with at least"
    f" 5% of the ballots,\n{np.count_nonzero(shares >= 0.01)} with at least 1%,"
    f" {np.count_nonzero(sizes == 1)} of a single ballot",
    fontsize=10,
)
ax.legend(title="share of ballots")
# How sure is the number of clusters? The trace of each chain, burn-in shaded:
plot_trace(model, "n_clusters", ax=ax_trace)
ax_trace.set_ylabel("clusters")
fig.tight_layout()

# %%
# Dispersion by rank
# ------------------
# The paper's Figure 11 averages theta_j over the clusters, weighted by their
# sizes, separately for large and small clusters (split at 5% of the data). On
# the right is the share of the ballots that rank at least j candidates: beyond
# the first few ranks, theta_j is estimated from fewer and fewer ballots.
#
# On the college applications of the paper, theta_j decreases with the rank.
# Here it does not. It peaks at rank 3, where the party-ticket clusters place
# their party's third candidate with little doubt (theta_3 above 2 in several
# of them). Beyond it theta_j stays near 0.4 to 0.5, and under 10% of the
# ballots rank 9 candidates or more, so read the last ranks with care.
max_rank = n_items - 1  # the last position of a full ranking is forced
ranks = np.arange(1, max_rank + 1)
big = shares >= 0.05
fig, (ax, ax_len) = plt.subplots(1, 2, figsize=(10, 3.8))
for mask, label, style in [
    (np.ones_like(big), "all clusters", "o-"),
    (big, "large clusters (at least 5%)", "s--"),
    (~big, "small clusters", "^:"),
]:
    if mask.any():
        mean_theta = np.average(
            model.thetas_[mask, :max_rank], axis=0, weights=sizes[mask]
        )
        ax.plot(ranks, mean_theta, style, label=label)
ax.set_xlabel("rank j")
ax.set_ylabel("size-weighted mean of theta_j")
ax.set_xticks(ranks)
ax.legend()
ax.set_title("Agreement within clusters, rank by rank")
reach = np.array([np.mean(np.count_nonzero(X != -1, axis=1) >= j) for j in ranks])
ax_len.bar(ranks, 100 * reach, color="0.6")
ax_len.set_xticks(ranks)
ax_len.set_xlabel("rank j")
ax_len.set_ylabel("% of ballots")
ax_len.set_title("Ballots that rank at least j candidates")
fig.tight_layout()

print("size-weighted mean theta_j, j = 1..6:")
print(np.round(np.average(model.thetas_[:, :6], axis=0, weights=sizes), 2))
plt.show()
