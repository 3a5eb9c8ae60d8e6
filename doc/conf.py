# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Sphinx configuration of the rankmix documentation.

Build with ``make -C doc html`` (warnings are errors). The gallery runs the
scripts of ``examples/`` in their quick mode.
"""

import os
import re
import shutil
import warnings
from pathlib import Path

# The gallery always runs the examples' quick mode: the full-size runs take far
# longer than a documentation build should (and than CI allows).
os.environ["RANKMIX_EXAMPLES_FULL"] = "0"
# Figures are written to files, never shown.
os.environ["MPLBACKEND"] = "Agg"

import rankmix  # noqa: E402

# -- Data for the real-data examples ---------------------------------------------
# The examples read real data from the cache folder named by RANKMIX_DATA
# (rankmix.datasets.get_data_home): the fetchers download PrefLib files into
# <data_home>/preflib/ the first time, and plot_jester.py reads
# <data_home>/jester/jester5k_ratings.csv. CI has no internet, but it has the
# project's shared data folder beside the clone. When RANKMIX_DATA is not set and
# that folder exists, the build fills a cache of its own from it: every PrefLib
# file into preflib/, every other file of shared/data/<name>/ into <name>/.
_DOC_DIR = Path(__file__).resolve().parent
_SHARED_DATA = _DOC_DIR.parents[1] / "shared" / "data"
_PREFLIB_SUFFIXES = {".soc", ".soi", ".toc", ".toi"}


def _fill_data_cache(shared, data_home):
    for path in sorted(shared.glob("*/*")):
        if not path.is_file():
            continue
        if path.suffix in _PREFLIB_SUFFIXES:
            target = data_home / "preflib" / path.name
        else:
            target = data_home / path.parent.name / path.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return data_home


if "RANKMIX_DATA" not in os.environ and _SHARED_DATA.is_dir():
    os.environ["RANKMIX_DATA"] = str(
        _fill_data_cache(_SHARED_DATA, _DOC_DIR / "_build" / "rankmix_data")
    )

# -- Project -----------------------------------------------------------------

project = "rankmix"
author = "The rankmix developers"
copyright = author
version = rankmix.__version__
release = rankmix.__version__

# -- General -----------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
# Single backquotes render as code, as in scikit-learn's docstrings (numpydoc
# shapes such as (`n_features_in_`,) need them: a bare trailing underscore is a
# reStructuredText link).
default_role = "literal"
# No reference to another project's pages: the build must work offline (no
# intersphinx inventories to download).

# -- autodoc, autosummary, numpydoc -------------------------------------------

autosummary_generate = True  # writes doc/generated/*.rst
autodoc_typehints = "none"
# The class template lists the methods; numpydoc must not add a second list.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False


def _unlink_scikit_learn_refs(app, what, name, obj, options, lines):
    """Turn the cross-references of inherited scikit-learn docstrings into text.

    The estimators inherit methods such as ``get_metadata_routing`` and
    ``set_output`` from scikit-learn, whose docstrings point into scikit-learn's
    own user guide and gallery. Those labels do not exist in this build (and
    intersphinx needs the network), so they are rendered as plain text naming
    scikit-learn's documentation. rankmix's own docstrings are left alone.
    """
    module = getattr(obj, "__module__", None) or ""
    if not module.startswith("sklearn"):
        return
    for i, line in enumerate(lines):
        line = _SKLEARN_REF_WITH_TEXT.sub(r"\1 (scikit-learn documentation)", line)
        lines[i] = _SKLEARN_REF.sub(r"``\1`` (scikit-learn documentation)", line)


_SKLEARN_REF_WITH_TEXT = re.compile(r":(?:ref|term|doc):`([^`<]+?)\s*<[^`>]+>`")
_SKLEARN_REF = re.compile(r":(?:ref|term|doc):`([^`]+)`")


def setup(app):
    # Before numpydoc (priority 500) parses the docstring.
    app.connect("autodoc-process-docstring", _unlink_scikit_learn_refs, priority=400)


# -- sphinx-gallery --------------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py|/_",
    "within_subsection_order": "FileNameSortKey",
    # Links from the API pages to the examples that use each object.
    "doc_module": ("rankmix",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"rankmix": None},
    # Close figures and reset matplotlib's settings between examples.
    "reset_modules": ("matplotlib",),
    "remove_config_comments": True,
    # An example that raises fails the build (after all examples have run).
    "only_warn_on_example_error": False,
    "show_memory": False,
    "download_all_examples": False,
    "image_scrapers": ("matplotlib",),
}

# The examples end with plt.show(), which warns under the Agg backend; the gallery
# saves the figures itself, so the warning would only clutter the rendered output.
# (Other warnings of the examples, such as a ConvergenceWarning, are shown.)
warnings.filterwarnings(
    "ignore", message="FigureCanvasAgg is non-interactive", category=UserWarning
)

# -- HTML --------------------------------------------------------------------

try:
    import pydata_sphinx_theme  # noqa: F401
except ImportError:  # the theme is in the "doc" extra; fall back to Sphinx's own
    html_theme = "alabaster"
    html_theme_options = {"description": "Dirichlet-process mixtures of rankings"}
else:
    html_theme = "pydata_sphinx_theme"
    html_theme_options = {
        "navbar_align": "left",
        "show_prev_next": False,
        "secondary_sidebar_items": ["page-toc"],
        "footer_start": ["copyright"],
        "footer_end": ["sphinx-version"],
    }
    html_sidebars = {"install": [], "glossary": []}

html_title = f"rankmix {release}"
html_static_path = []
html_show_sourcelink = False
