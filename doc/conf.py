# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Sphinx configuration of the rankmix documentation.

Build with ``make -C doc html`` (warnings are errors). The gallery runs the
scripts of ``examples/`` in their quick mode, one section per folder; an example
whose data are missing is shown without running it (see
``_skip_examples_without_data``).
"""

import os
import re
import shutil
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sphinx.util import logging

# The gallery always runs the examples' quick mode: the full-size runs take far
# longer than a documentation build should (and than CI allows).
os.environ["RANKMIX_EXAMPLES_FULL"] = "0"
# Figures are written to files, never shown.
os.environ["MPLBACKEND"] = "Agg"

import rankmix  # noqa: E402

_DOC_DIR = Path(__file__).resolve().parent
# The build's own helpers (the reading order of the gallery).
sys.path.insert(0, str(_DOC_DIR / "sphinxext"))

# -- Data for the real-data examples ---------------------------------------------
# The examples read real data from the data home, the folder named by
# RANKMIX_DATA (rankmix.datasets.get_data_home): the fetchers download PrefLib
# files into <data_home>/preflib/ the first time, plot_jester.py reads
# <data_home>/jester/jester5k_ratings.csv and plot_ap_topics.py reads
# <data_home>/ap/ap.dat and vocab.txt. When RANKMIX_DATA is not set and the
# project's shared data folder is beside the clone (../shared/data, as in CI),
# the build fills a data home of its own from it: every PrefLib file into
# preflib/, every other file of shared/data/<name>/ into <name>/. Set
# RANKMIX_DATA to use another data home instead (an empty folder builds the
# documentation as a user without the data would, offline).
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

# -- Examples whose data are missing -----------------------------------------------
# Before the gallery runs, each real-data example's data are fetched as the
# example would fetch them: from the data home, else downloaded into it (the
# fetchers raise OSError when offline). An example whose data cannot be had is
# not run, rather than failing the build: its page shows the code without output,
# under a note that says why (see _skip_examples_without_data).


def _jester_ratings():
    from rankmix.datasets import get_data_home

    default = Path(get_data_home(), "jester", "jester5k_ratings.csv")
    path = Path(os.environ.get("JESTER_RATINGS", default))
    if not path.is_file():
        raise OSError(f"No Jester ratings at {path}.")


def _ap_corpus():
    from rankmix.datasets import get_data_home

    for name in ("ap.dat", "vocab.txt"):
        path = Path(get_data_home(), "ap", name)
        if not path.is_file():
            raise OSError(f"No AP corpus file at {path}.")


def _mnist_digits():
    from rankmix.datasets import get_data_home

    path = Path(get_data_home(), "mnist", "mnist.npz")
    if not path.is_file():
        raise OSError(f"No MNIST digits at {path}.")


def _irish_ballots():
    from rankmix.datasets import fetch_irish

    fetch_irish("meath")


def _sushi_rankings():
    from rankmix.datasets import fetch_sushi

    fetch_sushi()


# Example (relative to examples/) -> (what its data are, how to get them).
_EXAMPLE_DATA = {
    "rankings/plot_irish_election.py": (
        "The ballots of the 2002 Irish election (PrefLib)",
        _irish_ballots,
    ),
    "rankings/plot_sushi.py": ("Kamishima's sushi rankings (PrefLib)", _sushi_rankings),
    "rankings/plot_jester.py": ("The Jester5k joke ratings", _jester_ratings),
    "counts/plot_ap_topics.py": (
        "The AP articles of lda-c (ap.dat, vocab.txt)",
        _ap_corpus,
    ),
    "vectors/plot_mnist.py": ("The MNIST digits (mnist.npz)", _mnist_digits),
}
# The examples of _EXAMPLE_DATA that this build does not run, with the reason.
_SKIPPED = {}
_logger = logging.getLogger("rankmix.doc")

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
# The "On this page" sidebar of a class lists its methods as "fit()", not
# "DPMallowsClustering.fit()", which the narrow sidebar would clip.
toc_object_entries_show_parents = "hide"
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


def _missing_data(example):
    """Why the data of an example cannot be had, or None if they can."""
    what, fetch = _EXAMPLE_DATA[example]
    try:
        fetch()
    except OSError as exc:
        return f"{what}: {exc}"
    return None


def _skip_examples_without_data(app):
    """Run no example whose data are missing; note why on its page.

    Runs at builder-inited, after sphinx-gallery has read ``plot_gallery`` and
    before it generates the gallery. The examples to skip are left out of
    ``filename_pattern``, so sphinx-gallery renders them without running them.
    """
    gallery_conf = app.config.sphinx_gallery_conf
    _SKIPPED.clear()
    if not gallery_conf["plot_gallery"]:  # html-noplot runs no example anyway
        return
    with ThreadPoolExecutor(len(_EXAMPLE_DATA)) as pool:  # downloads wait in parallel
        reasons = dict(zip(_EXAMPLE_DATA, pool.map(_missing_data, _EXAMPLE_DATA)))
    skipped = {example: reason for example, reason in reasons.items() if reason}
    if not skipped:
        return
    names = "|".join(re.escape(example) for example in sorted(skipped))
    gallery_conf["filename_pattern"] = rf"^(?!.*/(?:{names})$).*/plot_"
    out_dir = _DOC_DIR / sphinx_gallery_conf["gallery_dirs"]
    for example, reason in sorted(skipped.items()):
        _logger.info(f"rankmix: not running {example}: {reason}")
        # Drop the output of an earlier build that had the data: sphinx-gallery
        # would reuse it (its MD5 is current) and its figures as the thumbnail.
        target = out_dir / example
        stem = target.stem
        for stale in [
            target.with_name(target.name + ".md5"),
            *target.parent.glob(f"images/sphx_glr_{stem}_[0-9][0-9][0-9].*"),
            *target.parent.glob(f"images/thumb/sphx_glr_{stem}_thumb.*"),
        ]:
            stale.unlink(missing_ok=True)
    _SKIPPED.update(skipped)


_SKIP_NOTE = """
.. admonition:: This example was not run when this page was built
   :class: warning

   {what} were neither in the data home (``RANKMIX_DATA``, see
   :func:`~rankmix.datasets.get_data_home`) nor downloadable, so the code below
   is shown without its output and figures. The introduction says where the
   example reads its data; with the data in place, it runs as it is.

"""


def _note_skipped_example(app, docname, source):
    """Put the note of _skip_examples_without_data under the title of a page."""
    gallery = sphinx_gallery_conf["gallery_dirs"] + "/"
    example = docname.removeprefix(gallery) + ".py"
    if not docname.startswith(gallery) or example not in _SKIPPED:
        return
    what = _EXAMPLE_DATA[example][0]
    # The note goes under the page's title: the first line of text after the
    # example's label that is underlined with "=".
    lines = source[0].split("\n")
    start = lines.index(".. _sphx_glr_" + docname.replace("/", "_") + ".py:")
    title = next(
        i
        for i in range(start + 1, len(lines) - 1)
        if lines[i].strip() and lines[i + 1].startswith("=") and lines[i][0] != "="
    )
    lines.insert(title + 2, _SKIP_NOTE.format(what=what))
    source[0] = "\n".join(lines)


def setup(app):
    # Before numpydoc (priority 500) parses the docstring.
    app.connect("autodoc-process-docstring", _unlink_scikit_learn_refs, priority=400)
    # After sphinx-gallery reads plot_gallery (10), before it runs the examples (500).
    app.connect("builder-inited", _skip_examples_without_data, priority=100)
    app.connect("source-read", _note_skipped_example)


# -- sphinx-gallery --------------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # Every example runs, except those whose data are missing (see
    # _skip_examples_without_data).
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py|/_",
    # One section per folder of examples/ (each with a README.txt), in this
    # order; within a section, the reading order of sphinxext/gallery_order.py.
    "subsection_order": [
        "../examples/getting_started",
        "../examples/rankings",
        "../examples/vectors",
        "../examples/counts",
        "../examples/model_selection",
    ],
    "within_subsection_order": "gallery_order.ExampleOrder",
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
    # No left sidebar on the pages that have no sub-pages to list: the text gets
    # the width (the right sidebar lists the page's sections).
    html_sidebars = {
        "install": [],
        "user_guide": [],
        "developer_notes": [],
        "coming_from_r": [],
        "cli": [],
        "glossary": [],
    }

html_title = f"rankmix {release}"
html_static_path = ["_static"]
html_css_files = ["rankmix.css"]
html_show_sourcelink = False
