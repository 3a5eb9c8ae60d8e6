"""
===============================================
News topics: clustering AP articles by words
===============================================

:class:`~rankmix.DPMultinomialClustering` clusters rows of counts, here the
word counts of 2,246 Associated Press news articles over a 10,473-word
vocabulary: the AP corpus that David Blei distributes with his lda-c program,
and the multinomial data set of Liang, Jordan & Taskar (2007, Figure 3(j)).
Each cluster is a multinomial distribution over the words, with a Dirichlet
prior; the Dirichlet process lets the data choose how many clusters there are.
A document belongs to one cluster (unlike a topic model such as LDA, where a
document mixes topics), so a cluster is a kind of article rather than a topic.

The example reads ``<data home>/ap/ap.dat`` (the corpus, in lda-c's sparse
format) and ``<data home>/ap/vocab.txt`` (one word per line) with
:func:`~rankmix.datasets.load_lda_c`. The data home is ``~/rankmix_data``, or
the folder named by ``RANKMIX_DATA``. rankmix does not ship or download the
corpus: lda-c's ``ap.tgz`` holds both files.

The quick run fits one chain of 20 sweeps (10 of burn-in) on the whole corpus,
in 10 to 20 seconds; set ``RANKMIX_EXAMPLES_FULL=1`` for two chains of 200
sweeps (100 of burn-in).
``benchmarks/bench_multinomial_ap.py`` compares the samplers on this corpus.
"""

# %%
# Read the corpus
# ---------------
import os
import time

import matplotlib.pyplot as plt
import numpy as np

from rankmix import DPMultinomialClustering
from rankmix.datasets import get_data_home, load_lda_c
from rankmix.plotting import plot_trace

FULL = os.environ.get("RANKMIX_EXAMPLES_FULL", "0") == "1"
N_ITER, N_CHAINS = (200, 2) if FULL else (20, 1)
BURN_IN = N_ITER // 2

folder = os.path.join(get_data_home(), "ap")
corpus, vocabulary = (os.path.join(folder, name) for name in ("ap.dat", "vocab.txt"))
if not (os.path.isfile(corpus) and os.path.isfile(vocabulary)):
    raise FileNotFoundError(
        f"No AP corpus at {corpus} and {vocabulary}. This example needs the AP "
        "sample data of David Blei's lda-c (ap.tgz, from "
        "http://www.cs.columbia.edu/~blei/lda-c/): put its ap.dat and vocab.txt "
        f"in {folder}, or set RANKMIX_DATA to a data home that has them in ap/."
    )
ap = load_lda_c(corpus, vocabulary=vocabulary)
X, words = ap.data, ap.feature_names
print(
    f"{X.shape[0]} documents, {X.shape[1]} words, {X.sum()} tokens "
    f"({X.sum(axis=1).mean():.0f} per document), {X.nnz / np.prod(X.shape):.1%} "
    "of the matrix non-zero"
)

# %%
# Fit the DP mixture of multinomials
# ----------------------------------
# The counts stay sparse (CSR): a sweep costs time in proportion to the
# non-zero entries times the number of clusters. The defaults are kept: a
# symmetric Dirichlet(0.1) prior per cluster, alpha = 1, and sweeps of Gibbs
# and split-merge moves from a sequential-prediction start.
model = DPMultinomialClustering(
    n_iter=N_ITER, burn_in=BURN_IN, n_chains=N_CHAINS, n_jobs=N_CHAINS, random_state=0
)
begin = time.perf_counter()
model.fit(X)
print(f"fitted in {time.perf_counter() - begin:.1f} s")
sizes = np.bincount(model.labels_)
print(
    f"{model.n_clusters_} clusters; the 10 largest hold "
    f"{np.sort(sizes)[::-1][:10].tolist()} documents, and "
    f"{np.sum(sizes < 10)} hold fewer than 10"
)

# %%
# The words that set each cluster apart
# -------------------------------------
# ``feature_probs_[k]`` is cluster k's word distribution :math:`p_k` (its
# posterior mean given ``labels_``). Its most probable words are mostly the
# corpus's common words ("i", "new", "percent", "people", "year"), whatever the
# cluster. So the words are ranked instead by
#
# .. math:: p_{kv} \log (p_{kv} / q_v),
#
# with :math:`q_v` the frequency of word :math:`v` in the whole corpus: the
# word's term in the Kullback-Leibler divergence of the cluster from the
# corpus. It is large for a word that is frequent in the cluster *and* several
# times more frequent there than in the corpus. The lift
# :math:`p_{kv} / q_v` alone would favour rare names that occur in a handful
# of the cluster's articles, and the probability alone the common words. No
# stop-word list is needed.
corpus_freq = np.asarray(X.sum(axis=0)).ravel() / X.sum()
probs = model.feature_probs_
distinctive = probs * np.log(probs / corpus_freq)
N_SHOWN, N_WORDS = 9, 8
largest = np.argsort(-model.weights_)[:N_SHOWN]
for k in largest:
    top = np.argsort(-distinctive[k])[:N_WORDS]
    print(f"cluster {k:3d} ({sizes[k]:3d} documents): {' '.join(words[top])}")
print(
    f"the {N_SHOWN} largest clusters hold {sizes[largest].sum() / X.shape[0]:.0%} "
    "of the documents"
)

# %%
# The bars give each top word's frequency in the cluster (per 1,000 words), and
# the black ticks its frequency in the whole corpus.
fig, axes = plt.subplots(3, 3, figsize=(10, 8.5))
for ax, k in zip(axes.ravel(), largest):
    top = np.argsort(-distinctive[k])[:N_WORDS][::-1]
    ax.barh(words[top], 1000 * probs[k, top], color="C0")
    ax.plot(1000 * corpus_freq[top], words[top], "k|", markersize=12)
    ax.set_title(f"cluster {k}: {sizes[k]} documents", fontsize=10)
    ax.tick_params(labelsize=9)
for ax in axes[-1]:
    ax.set_xlabel("per 1,000 words")
fig.suptitle(f"AP: the {N_SHOWN} largest of {model.n_clusters_} clusters")
fig.tight_layout()
plt.show()

# %%
# The largest clusters read as the beats of a news agency in the late 1980s:
# crime and accidents (police, hospital, shot), armed conflict (army,
# soldiers, guerrillas), the 1988 presidential campaign (Dukakis, Bush,
# Jackson), East-West relations and trade, the politics of the Soviet bloc
# (party, communist, republics, Tass), the stock market, culture (music, band,
# theater, film, and "i": features quote people), the weather, and economic
# figures (percent, sales, rate, quarter). The model is told nothing about
# topics: it finds groups of articles that use the same words.
#
# Below these come many small clusters. A document belongs to one cluster, so
# the model cannot say that an article is half about trade and half about the
# campaign, as a topic model (LDA) would; with ``alpha = 1`` and the weak
# Dirichlet(0.1) prior, the posterior prefers about 100 clusters, many of
# them narrow: a running story (a coup in Haiti, the Drexel fraud case) or a
# small beat (Korea, abortion law) makes a cluster of 10 to 30 articles.

# %%
# The chains
# ----------
# ``trace_`` records the number of clusters and log p(c, X) after every
# sweep, burn-in included (shaded); the titles give the R-hat of each.
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
plot_trace(model, ("n_clusters", "log_joint"), ax=(left, right))
left.set_ylabel("number of clusters")
right.set_ylabel("log p(c, X)")
fig.tight_layout()
plt.show()

# %%
# In the quick run both curves still climb after the 10 sweeps of burn-in:
# the chain has not settled. The large clusters above are already there (a
# longer run finds the same ones), while the small clusters still form, split
# and merge. ``benchmarks/bench_multinomial_ap.py`` shows the same slow climb
# for every sampler on this corpus. The full run's chains are longer, and with
# two of them ``fit`` can compare the chains: it warns
# (``ConvergenceWarning``) when their log joints disagree after burn-in.
