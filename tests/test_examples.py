# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The gallery examples run (in their quick mode) without error.

The examples on real data read them as a user would, from the data home
(``RANKMIX_DATA``, see :func:`rankmix.datasets.get_data_home`). Here the data
home is a temporary folder filled from the shared data folder next to the
repository, laid out as the loaders expect, and any attempt to reach the
network fails the test.
"""

import importlib.util
import runpy
import shutil
from pathlib import Path

import pytest

from .conftest import SHARED_DATA

# The gallery has one folder per section (examples/<section>/plot_*.py).
EXAMPLES_DIR = Path(__file__).parent.parent / "examples"
EXAMPLES = sorted(EXAMPLES_DIR.glob("**/plot_*.py"))

# The files each example on real data reads: (file in the shared data folder,
# folder under the data home). fetch_irish and fetch_sushi read
# <data home>/preflib/<PrefLib file name>; plot_jester.py reads
# <data home>/jester/jester5k_ratings.csv; plot_ap_topics.py reads
# <data home>/ap/ap.dat and <data home>/ap/vocab.txt; plot_mnist.py reads
# <data home>/mnist/mnist.npz.
DATA_FILES = {
    "plot_irish_election.py": [("irish/00001-00000003.soi", "preflib")],
    "plot_sushi.py": [("sushi/00014-00000001.soc", "preflib")],
    "plot_jester.py": [("jester/jester5k_ratings.csv", "jester")],
    "plot_ap_topics.py": [("ap/ap.dat", "ap"), ("ap/vocab.txt", "ap")],
    "plot_mnist.py": [("mnist/mnist.npz", "mnist")],
}


def fill_data_home(data_home, files):
    """Copy shared data files into a data home, as the loaders lay it out."""
    for source, folder in files:
        target = Path(data_home) / folder
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(SHARED_DATA / source, target / Path(source).name)


def test_gallery_layout():
    """Each example is in a section folder with a README.txt, in reading order.

    The gallery has one section per folder of examples/ (sphinx-gallery needs
    the folder's README.txt), and doc/sphinxext/gallery_order.py gives the
    reading order within each section.
    """
    assert len(EXAMPLES) >= 10
    assert set(DATA_FILES) <= {path.name for path in EXAMPLES}
    spec = importlib.util.spec_from_file_location(
        "gallery_order", EXAMPLES_DIR.parent / "doc" / "sphinxext" / "gallery_order.py"
    )
    gallery_order = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gallery_order)
    for path in EXAMPLES:
        assert path.parent.parent == EXAMPLES_DIR, f"{path} is not in a section"
        assert (path.parent / "README.txt").is_file(), f"{path.parent} has no README"
        assert path.name in gallery_order.ORDER, f"{path.name} has no place in ORDER"


@pytest.mark.parametrize(
    "path", EXAMPLES, ids=lambda path: path.relative_to(EXAMPLES_DIR).as_posix()
)
def test_example_runs(path, monkeypatch, tmp_path, no_network):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    monkeypatch.delenv("RANKMIX_EXAMPLES_FULL", raising=False)
    monkeypatch.delenv("JESTER_RATINGS", raising=False)
    files = DATA_FILES.get(path.name, [])
    if files and not all((SHARED_DATA / source).is_file() for source, _ in files):
        pytest.skip(f"{path.name} needs data from {SHARED_DATA}, which is absent")
    fill_data_home(tmp_path, files)
    monkeypatch.setenv("RANKMIX_DATA", str(tmp_path))

    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda: None)
    runpy.run_path(str(path), run_name="__main__")
    plt.close("all")
