# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The reading order of the examples within each section of the gallery.

``conf.py`` names :class:`ExampleOrder` as sphinx-gallery's
``within_subsection_order`` by its import path (a class defined in ``conf.py``
could not be pickled with the Sphinx environment).
"""

from pathlib import Path

#: The examples of each section, in reading order: an introduction to the
#: estimator first, samplers and their internals last. An example not listed
#: comes after the listed ones of its section, by file name.
ORDER = [
    "plot_getting_started.py",
    # rankings
    "plot_irish_election.py",
    "plot_sushi.py",
    "plot_jester.py",
    "plot_sampler_convergence.py",
    "plot_dask_rankings.py",
    # vectors
    "plot_gaussian_vs_sklearn.py",
    "plot_digits.py",
    "plot_burn_in.py",
    "plot_mnist.py",
    "plot_dask.py",
    # counts
    "plot_ap_topics.py",
    # model selection
    "plot_grid_search.py",
    "plot_heldout_likelihood.py",
]


class ExampleOrder:
    """Sort key of sphinx-gallery's ``within_subsection_order``.

    Parameters
    ----------
    src_dir : str or path-like
        The section's folder (unused: the order is by file name).
    """

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        name = Path(filename).name
        rank = ORDER.index(name) if name in ORDER else len(ORDER)
        return rank, name

    def __repr__(self):
        return f"<{type(self).__name__}>"
