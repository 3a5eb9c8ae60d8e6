# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The gallery examples run (in their quick mode) without error."""

import runpy
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("plot_*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_example_runs(path, monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    monkeypatch.delenv("RANKMIX_EXAMPLES_FULL", raising=False)
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda: None)
    runpy.run_path(str(path), run_name="__main__")
    plt.close("all")
