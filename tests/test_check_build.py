# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""The import guard: an unbuilt source folder says what to run instead."""

import shutil
import subprocess
import sys
from pathlib import Path

import rankmix


def test_an_unbuilt_source_folder_says_what_to_do(tmp_path):
    # A copy of the package without its compiled modules, imported the way
    # `python -m rankmix` imports the clone it stands in. -S keeps site-packages
    # (and an editable install's import hook, which would find the compiled
    # modules elsewhere) out of the way; the guard runs before NumPy is needed.
    shutil.copytree(
        Path(rankmix.__file__).parent,
        tmp_path / "rankmix",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__"),
    )
    result = subprocess.run(
        [sys.executable, "-S", "-c", "import rankmix"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 1
    message = result.stderr.strip().splitlines()[-1]
    assert message.startswith(
        f"ImportError: rankmix was imported from its source folder "
        f"{tmp_path / 'rankmix'}, which is not built;"
    )
    assert "pip install -e ." in message
    # the message alone, without the "partially initialized module" error before it
    assert "partially initialized" not in result.stderr
