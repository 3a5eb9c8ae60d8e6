# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The README's examples print what the README says they print."""

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

# A ```python block, then a line starting with "prints", then a ``` block.
_EXAMPLE = re.compile(
    r"```python\n(?P<code>.*?)```\n\n(?P<says>prints[^\n]*)\n\n```\n(?P<out>.*?)```",
    re.DOTALL,
)


def _examples():
    if not README.is_file():
        return []
    return [
        pytest.param(m["code"], m["out"], id=f"example-{k}")
        for k, m in enumerate(_EXAMPLE.finditer(README.read_text("utf-8")))
    ]


def test_the_readme_has_examples():
    if not README.is_file():
        pytest.skip("not run from a clone: no README.md beside the tests")
    assert len(_examples()) >= 2


@pytest.mark.parametrize("code, expected", _examples())
def test_a_readme_example_prints_what_the_readme_shows(code, expected):
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    assert printed.getvalue() == expected


def test_the_readme_command_line_example_prints_what_the_readme_shows(monkeypatch):
    if not README.is_file():
        pytest.skip("not run from a clone: no README.md beside the tests")
    from rankmix._cli import main

    shown = re.search(
        r"```\n\$ rankmix fit dinners.txt\n(?P<out>.*?)```",
        README.read_text("utf-8"),
        re.DOTALL,
    )["out"]
    monkeypatch.chdir(README.parent / "tests" / "data")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["fit", "dinners.txt"], prog="rankmix") == 0
    # the fit time is the one figure that differs between runs
    seconds = re.compile(r"seed 0, [0-9.]+ s$", re.MULTILINE)
    assert seconds.sub("seed 0, T s", printed.getvalue()) == seconds.sub(
        "seed 0, T s", shown
    )
