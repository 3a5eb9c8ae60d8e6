# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the command line, ``python -m rankmix``."""

import re
import subprocess
import sys

import numpy as np
import pytest

import rankmix
from rankmix._cli import _format_cluster, _read_rankings, main

FAST = ["--n-iter", "10", "--burn-in", "5", "--chains", "1", "--seed", "0"]

# Three obvious groups of rankings, of unequal lengths, with stray spaces.
GROUPS = {
    "apple, pear, plum, fig": 6,
    "fig,plum,pear,apple": 5,
    " plum , apple , fig": 4,
}


@pytest.fixture
def rankings_file(tmp_path):
    lines = ["# three groups of fruit lovers", ""]
    for line, count in GROUPS.items():
        lines += [line] * count
    path = tmp_path / "fruit.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write(tmp_path, text):
    path = tmp_path / "rankings.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_read_rankings(tmp_path):
    path = write(tmp_path, "# header\n b , a\n\nc,b,a\r\n  # indented comment\na\n")
    X, names = _read_rankings(path)
    assert names == ["b", "a", "c"]
    np.testing.assert_array_equal(X, [[0, 1, -1], [2, 0, 1], [1, -1, -1]])
    assert X.dtype == np.intp


def test_format_cluster():
    names = [f"item{i}" for i in range(20)]
    text = _format_cluster(2, 3, 12, np.arange(20)[::-1], [1.234, 0.5], names)
    lines = text.splitlines()
    assert lines[0] == "cluster 2: 3 rankings (25.0%)"
    assert lines[1].endswith(
        "item19 > item18 > item17 > item16 > item15 > item14 "
        "> item13 > item12 > item11 > item10 > ..."
    )
    assert lines[2].split(":")[1].split() == ["1.23", "0.50"]
    short = _format_cluster(1, 1, 1, np.array([1, 0]), [2.0], ["x", "y"])
    assert "y > x" in short and "..." not in short and "1 ranking " in short


def test_fit(rankings_file, capsys):
    assert main(["fit", str(rankings_file), *FAST]) == 0
    out = capsys.readouterr().out
    n_rankings = sum(GROUPS.values())
    assert f"{n_rankings} rankings of 4 items" in out
    sizes = [
        int(size) for size in re.findall(r"^cluster \d+: (\d+) ranking", out, re.M)
    ]
    assert len(sizes) >= 1 and sum(sizes) == n_rankings
    assert sizes == sorted(sizes, reverse=True)
    for name in ["apple", "pear", "plum", "fig"]:
        assert name in out
    assert "theta per rank" in out


def test_fit_top(rankings_file, capsys):
    assert main(["fit", str(rankings_file), *FAST, "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"central ranking: \w+ > \.\.\.$", out, re.M)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "a,b,c\nb,a\n\n# comment\nc,a\nc,b\na,b\nb,a\nc,b,b\n",
            "line 9: item 'b' appears twice",
        ),
        ("a,b\nb,a\n , ,\n", "line 3: empty ranking (the line holds only commas)"),
        ("a,b\nb,,a\n", "line 2: item 2 has no name"),
        ("# one ranking\na,b\n", "found 1 ranking; at least 2 are needed"),
        ("", "found 0 rankings"),
    ],
)
def test_fit_bad_file(tmp_path, capsys, text, message):
    path = write(tmp_path, text)
    assert main(["fit", path, *FAST]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert path in captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""


def test_fit_missing_file(tmp_path, capsys):
    path = str(tmp_path / "missing.txt")
    assert main(["fit", path]) == 2
    assert f"{path}: no such file" in capsys.readouterr().err


def test_fit_bad_options(rankings_file, capsys):
    assert main(["fit", str(rankings_file), "--n-iter", "5", "--burn-in", "5"]) == 2
    assert "--burn-in (5) must be smaller than --n-iter (5)" in capsys.readouterr().err
    assert main(["fit", str(rankings_file), "--alpha", "0"]) == 2
    assert "--alpha" in capsys.readouterr().err


def test_demo(capsys):
    argv = ["demo", "--n-iter", "6", "--n-per-cluster", "20", "--seed", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "n_iter=6, burn_in=3" in out
    assert "200 training rankings, 100 held-out rankings" in out
    assert re.search(r"^VI to the true labels: \d+\.\d+ nats", out, re.M)
    match = re.search(
        r"^held-out log-likelihood per ranking: (-\d+\.\d+) \(model\), "
        r"(-\d+\.\d+) \(true mixture\)",
        out,
        re.M,
    )
    assert match
    sizes = re.search(r"^cluster sizes: ([\d ]+)$", out, re.M).group(1).split()
    assert sum(map(int, sizes)) == 200
    # the vector half: iris, rankmix and scikit-learn side by side
    assert "105 training flowers, 45 held out" in out
    for name in ("rankmix DPGaussianClustering", "sklearn BayesianGaussianMixture"):
        assert re.search(rf"^  {name} +\d+ +-?\d\.\d+ +-\d+\.\d+ ", out, re.M)
    flowers = re.findall(r"^  \(.*\): (\d+) flowers?:", out, re.M)
    assert sum(map(int, flowers)) == 105


def test_usage(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m rankmix") and "demo" in out and "fit" in out
    assert main(["--help"]) == 0
    assert "usage:" in capsys.readouterr().out
    assert main(["nonsense"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_version_subprocess():
    result = subprocess.run(
        [sys.executable, "-m", "rankmix", "--version"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0
    assert result.stdout.strip() == rankmix.__version__
