# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the command line, ``rankmix`` and ``python -m rankmix``."""

import json
import re
import subprocess
import sys
from collections import Counter

import joblib
import numpy as np
import pytest

import rankmix
from rankmix import DPMallowsClustering
from rankmix._cli import _format_cluster, _prog_name, main
from rankmix._cli_common import fit_model
from rankmix._cli_read import parse_delimiter, read_rankings, read_text_rankings
from rankmix._diagnostics import warn_if_chains_disagree
from rankmix._mallows import SUBCLUSTER_SPLIT_MERGE

FAST = ["--n-iter", "10", "--burn-in", "5", "--chains", "1", "--seed", "0"]
# For the large PrefLib files: read every ballot, fit a few of them.
TINY = ["--subsample", "40", "--n-iter", "2", "--burn-in", "1", "--chains", "1"]

# Three obvious groups of rankings, of unequal lengths, with stray spaces.
GROUPS = {
    "apple, pear, plum, fig": 6,
    "fig,plum,pear,apple": 5,
    " plum , apple , fig": 4,
}
N_GROUPS = sum(GROUPS.values())

# The shared PrefLib files: (folder, file) -> (ballots, alternatives, distinct
# orders), from each folder's PROVENANCE.txt and the files' headers.
PREFLIB_FILES = {
    ("irish", "00001-00000001.soi"): (43942, 12, 19299),
    ("irish", "00001-00000002.soi"): (29988, 9, 10335),
    ("irish", "00001-00000003.soi"): (64081, 14, 25101),
    ("apa_preflib", "00028-00000001.soi"): (18723, 5, 292),
    ("apa_preflib", "00028-00000002.soi"): (17469, 5, 299),
    ("apa_preflib", "00028-00000003.soi"): (20239, 5, 300),
    ("apa_preflib", "00028-00000004.soi"): (17911, 5, 302),
    ("apa_preflib", "00028-00000005.soi"): (17094, 5, 302),
    ("apa_preflib", "00028-00000006.soi"): (17956, 5, 286),
    ("apa_preflib", "00028-00000007.soi"): (16245, 5, 303),
    ("apa_preflib", "00028-00000008.soi"): (14506, 5, 289),
    ("apa_preflib", "00028-00000009.soi"): (16836, 5, 289),
    ("apa_preflib", "00028-00000010.soi"): (13318, 5, 289),
    ("apa_preflib", "00028-00000011.soi"): (18286, 5, 297),
    ("apa_preflib", "00028-00000012.soi"): (15313, 5, 292),
    ("sushi", "00014-00000001.soc"): (5000, 10, 4926),
}

# Ballot lengths {t: count} of the Irish files (irish/PROVENANCE.txt) and of
# APA 1998 (apa_preflib/PROVENANCE.txt).
LENGTHS = {
    "00001-00000001.soi": {1: 1688, 2: 2796, 3: 12589, 4: 7861, 5: 6163, 6: 3713,
                           7: 2184, 8: 1327, 9: 686, 10: 676, 11: 597, 12: 3662},
    "00001-00000002.soi": {1: 1743, 2: 3243, 3: 8753, 4: 5157, 5: 3389, 6: 1866,
                           7: 1027, 8: 1010, 9: 3800},
    "00001-00000003.soi": {1: 3184, 2: 4250, 3: 21102, 4: 12004, 5: 8347, 6: 4866,
                           7: 2627, 8: 1736, 9: 1053, 10: 880, 11: 425, 12: 441,
                           13: 676, 14: 2490},
    "00028-00000001.soi": {1: 3743, 2: 2571, 3: 1431, 4: 269, 5: 10709},
}  # fmt: skip

SMALL_SOI = """# TITLE: A small election
# DATA TYPE: soi
# NUMBER ALTERNATIVES: 4
# NUMBER VOTERS: 9
# NUMBER UNIQUE ORDERS: 3
# ALTERNATIVE NAME 1: Ann
# ALTERNATIVE NAME 2: Bob
# ALTERNATIVE NAME 3: Cy
# ALTERNATIVE NAME 4: Di
4: 2,1
3: 3,1,2
2: 1,2,3,4
"""


@pytest.fixture
def rankings_file(tmp_path):
    lines = ["# three groups of fruit lovers", ""]
    for line, count in GROUPS.items():
        lines += [line] * count
    path = tmp_path / "fruit.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write(tmp_path, text, name="rankings.txt"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return str(path)


def run(argv, capsys):
    """Run the command line in this process: exit code, stdout, stderr."""
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def printed_sizes(out):
    return [int(size) for size in re.findall(r"^cluster \d+: (\d+) ranking", out, re.M)]


# -- reading text files ----------------------------------------------------------------


def test_read_rankings(tmp_path):
    path = write(tmp_path, "# header\n b , a\n\nc,b,a\r\n  # indented comment\na\n")
    data = read_text_rankings(path)
    assert data.names == ["b", "a", "c"]
    np.testing.assert_array_equal(data.X, [[0, 1, -1], [2, 0, 1], [1, -1, -1]])
    assert data.X.dtype == np.intp
    assert data.kind == "text" and data.warnings == []


def test_read_line_endings_and_bom(tmp_path):
    path = write(tmp_path, "\ufeffa,b\rb,a\r\nc,a\n".encode())
    data = read_text_rankings(path)
    assert data.names == ["a", "b", "c"]
    np.testing.assert_array_equal(data.X, [[0, 1], [1, 0], [2, 0]])


@pytest.mark.parametrize(
    "text, names",
    [
        ('"Smith, J", Doe\nDoe,"Smith, J"\n', ["Smith, J", "Doe"]),
        # a space after the closing quote is what a person typing meant
        ('"Smith, J" , Doe\nDoe , "Smith, J"\n', ["Smith, J", "Doe"]),
        ('"say ""hi""",b\nb,"say ""hi"""\n', ['say "hi"', "b"]),
        ('O"Neil,b\nb,O"Neil\n', ['O"Neil', "b"]),  # a quote inside a bare name
    ],
)
def test_read_quoting(tmp_path, text, names):
    data = read_text_rankings(write(tmp_path, text))
    assert data.names == names
    np.testing.assert_array_equal(data.X, [[0, 1], [1, 0]])


@pytest.mark.parametrize(
    "option, text",
    [
        ("tab", "a\tb\tc\nb\ta\nc\ta\tb\n"),
        ("\\t", "a\tb\tc\nb\ta\nc\ta\tb\n"),
        ("\t", "a\tb\tc\nb\ta\nc\ta\tb\n"),
        (";", "a;b;c\nb;a\nc;a;b\n"),
        ("semicolon", "a; b; c\nb; a\nc; a; b\n"),
        ("|", "a|b|c\nb|a\nc|a|b\n"),
        (">", "a > b > c\nb > a\nc > a > b\n"),
        ("space", "a b  c\nb a\n c a b \n"),
    ],
)
def test_read_delimiter(tmp_path, option, text):
    data = read_text_rankings(write(tmp_path, text), delimiter=parse_delimiter(option))
    assert data.names == ["a", "b", "c"]
    np.testing.assert_array_equal(data.X, [[0, 1, 2], [1, 0, -1], [2, 0, 1]])
    assert data.warnings == []


@pytest.mark.parametrize("text", ["ab", '"', "x", "7", "#", ""])
def test_parse_delimiter_refuses(text):
    import argparse

    with pytest.raises(argparse.ArgumentTypeError, match="single character"):
        parse_delimiter(text)


def test_read_header(tmp_path):
    text = "# comment\npos1,pos2,pos3\nb,a,c\nc,a,b\na,b,c\n"
    path = write(tmp_path, text)
    data = read_text_rankings(path, header=True)
    assert data.names == ["b", "a", "c"] and len(data.X) == 3
    # False reads the line as a ranking, None refuses it (see the corpus)
    assert len(read_text_rankings(path, header=False).X) == 4


def test_read_missing(tmp_path):
    path = write(tmp_path, "rank1,rank2,rank3\n5,0,0\n2,5,0\n3,2,5\n5,,\n")
    data = read_text_rankings(path, header=True, missing="0")
    assert data.names == ["5", "2", "3"]
    np.testing.assert_array_equal(
        data.X, [[0, -1, -1], [1, 0, -1], [2, 1, 0], [0, -1, -1]]
    )


def test_read_items(tmp_path):
    path = write(tmp_path, "b,a\na,b\n")
    data = read_rankings(path, items=["a", "b", "c", "d"])
    assert data.names == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(data.X, [[1, 0], [0, 1]])
    data = read_rankings(path, n_items=4)
    assert data.names == ["b", "a", "(unseen item 1)", "(unseen item 2)"]


# -- the malformed-file corpus ---------------------------------------------------------

# (file name, content, the message) for files that must stop with exit code 2,
# naming the line where there is one, and print nothing on stdout.
MALFORMED = {
    "duplicate": (
        "rankings.txt",
        "a,b,c\nb,a\n\n# comment\nc,a\nc,b\na,b\nb,a\nc,b,b\n",
        "line 9: item 'b' appears twice",
    ),
    "padding without --missing": (
        "top3.csv",
        "3,1,2\n2,0,0\n1,3,2\n",
        "line 2: item '0' appears twice (positions 2 and 3); the items of a ranking "
        "must be distinct; if '0' pads shorter rankings, pass --missing 0",
    ),
    "only commas": (
        "rankings.txt",
        "a,b\nb,a\n , ,\n",
        "line 3: empty ranking (the line holds only commas)",
    ),
    "empty name": ("rankings.txt", "a,b\nb,,a\n", "line 2: item 2 has no name"),
    "trailing comma": ("rankings.txt", "a,b\nb,a,\n", "line 2: item 3 has no name"),
    "one ranking": ("rankings.txt", "# one ranking\na,b\n", "found 1 ranking; at"),
    "empty file": ("rankings.txt", "", "found 0 rankings"),
    "only comments": ("rankings.txt", "# a\n\n   # b\n\n", "found 0 rankings"),
    "unclosed quote": (
        "rankings.txt",
        'a,b\nb,"a,c\n',
        "line 2: bad quoting (unexpected end of data)",
    ),
    "text after a quote": (
        "rankings.txt",
        'a,b\n"b"a,c\n',
        "line 2: bad quoting (',' expected after '\"')",
    ),
    "NUL byte": ("rankings.txt", "a,b\nb\x00,a\n", "line 2: the line holds a NUL"),
    "control character": (
        "rankings.txt",
        "a,b\nb,a\x1b[2J\n",
        r"line 2: item name 'a\x1b[2J' holds the control character '\x1b'",
    ),
    "TSV read as CSV": (
        "rankings.txt",
        "a\tb\tc\nb\ta\tc\n",
        r"line 1: item name 'a\tb\tc' holds a tab; is the file tab-separated? "
        "pass --delimiter tab",
    ),
    "semicolons read as CSV": (
        "rankings.txt",
        "a;b;c\nb;a;c\nc;a\n",
        "every ranking holds a single item, and every name holds ';' (line 1: "
        "'a;b;c'); is the file semicolon-separated? pass --delimiter ';'",
    ),
    "arrows read as CSV": (
        "rankings.txt",
        "a > b > c\nb > a\n",
        "is the file '>'-separated? pass --delimiter '>'",
    ),
    "header": (
        "rankings.txt",
        "# sushi\nfirst,second,third\nb,a,c\nc,a,b\na,b\n",
        "line 2: this line looks like a header, not a ranking: its items (first, "
        "second, third) appear on no other line. Pass --header",
    ),
    "header with a duplicate": (
        "rankings.txt",
        "rank,rank\na,b\nb,a\n",
        "line 1: item 'rank' appears twice (positions 1 and 2); the items of a "
        "ranking must be distinct; if this line is a header, pass --header",
    ),
    "invalid UTF-8": ("rankings.txt", b"a,b\nb,a\nc,\xe9\n", "line 3: not UTF-8"),
    "UTF-16": (
        "rankings.txt",
        "a,b\nb,a\n".encode("utf-16"),
        "the file is UTF-16 text",
    ),
    "PrefLib named .txt": (
        "election.txt",
        "# NUMBER ALTERNATIVES: 3\n3: 1,2\n2: 2,1\n",
        "line 1: this looks like a PrefLib file",
    ),
    "PrefLib orders without header": (
        "election.csv",
        "3: 1,2\n2: 2,1\n",
        "pass --format preflib",
    ),
    ".soi with a bad line": (
        "election.soi",
        SMALL_SOI.replace("3: 3,1,2", "3 3,1,2"),
        "line 11: missing ':' between the count and the order",
    ),
    ".soi with a label out of range": (
        "election.soi",
        SMALL_SOI.replace("3: 3,1,2", "3: 3,1,7"),
        "line 11: alternative 7 out of range",
    ),
    ".soi with wrong counts": (
        "election.soi",
        SMALL_SOI.replace("VOTERS: 9", "VOTERS: 10"),
        "line 4: NUMBER VOTERS is 10, but the counts add up to 9",
    ),
    ".soi holding text": (
        "election.soi",
        "a,b\nb,a\n",
        "line 1: order line before any '# NUMBER ALTERNATIVES:' header line; is "
        "this a PrefLib file in the 2022 format? (pass --format text",
    ),
    ".soi with no orders": ("election.soi", "# NUMBER ALTERNATIVES: 3\n", "no orders"),
    ".soi invalid UTF-8": (
        "election.soi",
        SMALL_SOI.encode().replace(b"Cy", b"C\xff"),
        "not UTF-8",
    ),
    ".soi NUL in a name": (
        "election.soi",
        SMALL_SOI.replace("Cy", "C\x00y"),
        r"ALTERNATIVE NAME 3: item name 'C\x00y' holds a NUL byte",
    ),
    ".toc with ties": (
        "election.toc",
        "# NUMBER ALTERNATIVES: 3\n3: 1,{2,3}\n2: 2,1,3\n",
        "line 2: the order ties alternatives {2,3}. The Mallows model has no ties, "
        "so rankmix refuses them by default; pass --ties truncate",
    ),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_fit_malformed_file(tmp_path, capsys, case):
    name, text, message = MALFORMED[case]
    path = write(tmp_path, text, name)
    code, out, err = run(["fit", path, *FAST], capsys)
    assert code == 2
    assert message in err
    assert err.startswith(f"python -m rankmix fit: error: {path}")
    assert "Traceback" not in err
    assert out == ""


@pytest.mark.parametrize(
    "options, text, message",
    [
        (["--missing", "0"], "a,0,b\nb,a\n", "line 1: position 2 is '0' (--missing)"),
        (["--items", "a,b"], "a,b\nb,c\n", "line 2: item 'c' is not among"),
        (["--n-items", "2"], "a,b,c\nb,a\n", "--n-items 2 is smaller than the 3"),
        # refused before the reader names ~10**11 unseen items one by one
        (["--n-items", "99999999999"], "a,b\nb,a\n", "n_items=99999999999 is too"),
        # the message names --n-iter, not the --burn-in derived from it
        (["--n-iter", str(2**70)], "a,b\nb,a\n", "--n-iter: expected a positive"),
        (["--delimiter", ";"], "a;b\n\tb;a\n", None),  # stripped: no error
    ],
)
def test_fit_option_faults(tmp_path, capsys, options, text, message):
    path = write(tmp_path, text)
    code, out, err = run(["fit", path, *FAST, *options], capsys)
    if message is None:
        assert code == 0, err
    else:
        assert code == 2 and message in err and out == ""


@pytest.mark.parametrize(
    "text, warning",
    [
        (
            "a\nb\nc\na\n",
            "warning: every ranking holds a single item (line 1: 'a'); is the file "
            "comma-separated? If not, pass --delimiter",
        ),
        (
            "a b c\nb a c\nc a b\n",
            "every name holds a space (line 1: 'a b c'); is the file "
            "space-separated? pass --delimiter space",
        ),
        (
            "a;x,b\nb,a;x\nc,b\n",
            "warning: 2 of 3 rankings hold item names with ';' (first: line 1, "
            "'a;x'); if ';' separates the items, pass --delimiter ';'",
        ),
    ],
)
def test_fit_misread_warnings(tmp_path, capsys, text, warning):
    code, out, err = run(["fit", write(tmp_path, text), *FAST], capsys)
    assert code == 0
    assert warning in err
    # shown before the fit: before the summary when both go to a terminal
    assert "rankings of" in out


def test_quoted_names_do_not_warn(tmp_path, capsys):
    text = '"Smith, J"\tDoe\nDoe\t"Smith, J"\n"Smith, J"\tDoe\n'
    code, out, err = run(
        ["fit", write(tmp_path, text), *FAST, "--delimiter", "tab"], capsys
    )
    assert code == 0 and "warning" not in err
    assert "Smith, J > Doe" in out or "Doe > Smith, J" in out


# -- fit: the summary ------------------------------------------------------------------


def test_fit(rankings_file, capsys):
    code, out, err = run(["fit", str(rankings_file), *FAST], capsys)
    assert code == 0
    assert f"{N_GROUPS} rankings of 4 items (each ranks 3 to 4 items)" in out
    sizes = printed_sizes(out)
    assert len(sizes) >= 1 and sum(sizes) == N_GROUPS
    assert sizes == sorted(sizes, reverse=True)
    for name in ["apple", "pear", "plum", "fig"]:
        assert name in out
    assert "theta per rank" in out
    # the point estimate is explained next to the posterior of K, and the
    # clusters that hold at least 2 rankings are counted apart
    match = re.search(
        r"^clusters: (\d+) in the point estimate, (\d+) of them with at least 2 "
        r"rankings$",
        out,
        re.M,
    )
    assert match and int(match[1]) == len(sizes)
    assert int(match[2]) == sum(size >= 2 for size in sizes)
    assert "least mean variation of" in out
    assert re.search(r"^posterior number of clusters: \d+ \(\d+%\)", out, re.M)
    assert re.search(
        r"^  counting only clusters of at least 2 rankings: \d+", out, re.M
    )


def test_fit_subcluster_sampler(rankings_file, capsys, monkeypatch):
    # --sampler subcluster runs the parallel sampler with the split-merge
    # proposals it needs (the estimator's n_split_merge="auto")
    from rankmix import _cli

    fitted = []
    original = _cli.fit_model
    monkeypatch.setattr(
        _cli, "fit_model", lambda model, X: fitted.append(model) or original(model, X)
    )
    code, out, _ = run(
        ["fit", str(rankings_file), *FAST, "--sampler", "subcluster"], capsys
    )
    assert code == 0
    assert sum(printed_sizes(out)) == N_GROUPS
    assert fitted[0].sampler == "subcluster"
    proposed = fitted[0]._moves["split_merge_proposed"]
    assert np.all(proposed == SUBCLUSTER_SPLIT_MERGE)


def test_fit_top(rankings_file, capsys):
    code, out, _ = run(["fit", str(rankings_file), *FAST, "--top", "1"], capsys)
    assert code == 0
    assert re.search(r"central ranking: \w+ > \.\.\.$", out, re.M)
    # --top limits the thetas too
    assert re.search(r"theta per rank:  \d+\.\d\d \.\.\.$", out, re.M)


def test_fit_long_rankings_limit_thetas(tmp_path, capsys):
    # 30 items: 10 items and 10 thetas by default, not 30 (or 3,000)
    items = [f"i{k}" for k in range(30)]
    rng = np.random.RandomState(0)
    text = "".join(",".join(rng.permutation(items)[:20]) + "\n" for _ in range(6))
    code, out, _ = run(["fit", write(tmp_path, text), *FAST], capsys)
    assert code == 0
    for line in re.findall(r"^  theta per rank:  (.*)$", out, re.M):
        assert len(line.split()) == 11 and line.endswith("...")
    for line in re.findall(r"^  central ranking: (.*)$", out, re.M):
        assert len(line.split(" > ")) == 11


def test_fit_full_rankings_hide_last_theta(tmp_path, capsys):
    text = "a,b,c,d\nb,a,c,d\na,b,d,c\nd,c,b,a\nc,d,b,a\nd,c,a,b\n"
    code, out, _ = run(["fit", write(tmp_path, text), *FAST], capsys)
    assert code == 0
    assert out.count("theta of rank 4 not shown") == 1
    thetas = re.findall(r"^  theta per rank:  (.*)$", out, re.M)
    assert thetas and all(len(line.split()) == 3 for line in thetas)


def test_fit_top_t_rankings_show_every_theta(rankings_file, capsys):
    # With a fifth item that no ranking mentions, the fourth rank of the
    # rankings of 4 items still has two items to choose from: every theta shows.
    code, out, _ = run(["fit", str(rankings_file), *FAST, "--n-items", "5"], capsys)
    assert code == 0
    assert "not shown" not in out and "(unseen item 1)" in out
    thetas = re.findall(r"^  theta per rank:  (.*)$", out, re.M)
    assert all(len(line.split()) == 4 for line in thetas)


def test_fit_header_and_delimiter(tmp_path, capsys):
    text = "first;second;third\nb;a;c\nc;a;b\na;b\n"
    path = write(tmp_path, text, "votes.csv")
    code, out, err = run(["fit", path, *FAST, "--delimiter", ";"], capsys)
    assert code == 2 and "looks like a header" in err
    code, out, err = run(["fit", path, *FAST, "--delimiter", ";", "--header"], capsys)
    assert code == 0 and "3 rankings of 3 items" in out
    code, out, err = run(
        ["fit", path, *FAST, "--delimiter", ";", "--no-header"], capsys
    )
    assert code == 0 and "4 rankings of 6 items" in out


def test_fit_options_for_the_kind_of_file(tmp_path, capsys):
    soi = write(tmp_path, SMALL_SOI, "election.soi")
    for option in (
        ["--delimiter", ";"],
        ["--header"],
        ["--missing", "0"],
        ["--items", "a,b"],
    ):
        code, _, err = run(["fit", soi, *FAST, *option], capsys)
        assert code == 2 and "applies to text files" in err
    code, _, err = run(
        ["fit", write(tmp_path, "a,b\nb,a\n"), "--ties", "raise"], capsys
    )
    assert code == 2 and "--ties applies to PrefLib files" in err


# -- fit: PrefLib files ----------------------------------------------------------------


def test_fit_preflib_counts_expand_to_ballots(tmp_path, capsys):
    path = write(tmp_path, SMALL_SOI, "election.soi")
    labels = tmp_path / "labels.txt"
    code, out, _ = run(["fit", path, *FAST, "--labels", str(labels)], capsys)
    assert code == 0
    assert out.startswith(
        f"{path} (A small election, PrefLib soi): 9 rankings of 4 items "
        "(each ranks 2 to 4 items)"
    )
    assert "Bob > Ann" in out or "Ann > Bob" in out
    # one label per ballot, the ballots of each order line together
    lines = labels.read_text().split()
    assert len(lines) == 9
    assert len(set(lines[:4])) == 1 and len(set(lines[4:7])) == 1


def test_fit_preflib_ties_truncate(tmp_path, capsys):
    text = "# NUMBER ALTERNATIVES: 3\n3: 1,{2,3}\n2: 2,1,3\n1: {1,2},3\n"
    path = write(tmp_path, text, "election.toc")
    code, out, _ = run(["fit", path, *FAST, "--ties", "truncate"], capsys)
    assert code == 0
    assert "5 rankings of 3 items (each ranks 1 to 3 items)" in out
    assert "dropped 1 ballot whose order starts with a tie" in out


def test_fit_format_text(tmp_path, capsys):
    # --format text reads PrefLib-looking lines as names when the user says so
    path = write(tmp_path, "3: 1,2\n2: 2,1\n1: 1,3\n")
    code, out, err = run(["fit", path, *FAST, "--format", "text"], capsys)
    assert code == 0, err
    assert "3 rankings of 6 items" in out
    # times of day are not PrefLib orders
    path = write(tmp_path, "10:30, lunch\nlunch, 10:30\n")
    assert run(["fit", path, *FAST], capsys)[0] == 0


def test_fit_format_preflib(tmp_path, capsys):
    path = write(tmp_path, SMALL_SOI, "election.txt")
    code, out, _ = run(["fit", path, *FAST, "--format", "preflib"], capsys)
    assert code == 0 and "9 rankings of 4 items" in out


@pytest.mark.parametrize("folder, name", PREFLIB_FILES, ids=lambda v: str(v))
def test_fit_shared_preflib_files(shared_data, capsys, tmp_path, folder, name):
    """Every shared PrefLib file: the right numbers of ballots and items.

    Every ballot is read and counted; only a subsample of 40 is fitted, for 2
    sweeps, so that the 17 files take a second or two in all.
    """
    n_ballots, n_items, n_orders = PREFLIB_FILES[folder, name]
    path = str(shared_data / folder / name)
    data = read_rankings(path)
    assert data.X.shape[0] == n_ballots and len(data.names) == n_items
    assert len(np.unique(data.X, axis=0)) == n_orders
    if name in LENGTHS:
        lengths = Counter((data.X != -1).sum(axis=1).tolist())
        assert dict(lengths) == LENGTHS[name]

    labels = tmp_path / "labels.txt"
    code, out, err = run(["fit", path, *TINY, "--labels", str(labels)], capsys)
    assert code == 0, err
    first = out.splitlines()[0]
    assert re.search(rf": {n_ballots} rankings of {n_items} items ", first), first
    assert "fitted a random subsample of 40 rankings" in out
    assert sum(printed_sizes(out)) == 40
    # --labels covers every ballot, not only the subsample
    assert len(labels.read_text().split()) == n_ballots


def test_chains_that_disagree_get_advice_in_options():
    # the estimators' advice (warm_start, trace_) has nothing to act on here
    class Disagreeing:
        def fit(self, X):
            warn_if_chains_disagree(
                np.array([[0.0, 1.0, 0.0, 1.0], [9.0, 8.0, 9.0, 8.0]])
            )

    _, messages = fit_model(Disagreeing(), None)
    (message,) = messages
    assert message.startswith("The chains disagree: R-hat of the log joint")
    assert "--n-iter" in message and "--sampler" in message
    assert "warm_start" not in message


def test_subsample_predicts_the_left_out_rankings_only_for_labels(
    rankings_file, capsys, tmp_path, monkeypatch
):
    # predicting every ballot of a large file costs more than the short fit
    # --subsample is for: only --labels needs it, and only the left-out rows
    predicted = []
    predict = DPMallowsClustering.predict

    def recording(self, X):
        predicted.append(len(X))
        return predict(self, X)

    monkeypatch.setattr(DPMallowsClustering, "predict", recording)
    options = ["fit", str(rankings_file), *FAST, "--subsample", "9"]
    code, out, err = run([*options, "--verbose"], capsys)
    assert code == 0 and predicted == [] and "predicting" not in err
    labels = tmp_path / "labels.txt"
    code, out, err = run([*options, "--verbose", "--labels", str(labels)], capsys)
    assert code == 0 and predicted == [N_GROUPS - 9]
    assert f"predicting the clusters of the {N_GROUPS - 9} rankings left out" in err
    written = labels.read_text().split()
    assert len(written) == N_GROUPS and all(int(label) >= 1 for label in written)
    # without --subsample nothing is predicted
    code, _, _ = run(
        ["fit", str(rankings_file), *FAST, "--labels", str(labels)], capsys
    )
    assert code == 0 and predicted == [N_GROUPS - 9]


@pytest.mark.parametrize(
    "folder, name, options, expected",
    [
        ("sushi", "sushi3a_orderings.csv", ["--header"], "5000 rankings of 10 items"),
        (
            "apa1980",
            "apa1980_top_orderings.csv",
            ["--header", "--missing", "0"],
            "15449 rankings of 5 items (each ranks 1 to 5 items)",
        ),
    ],
    ids=["sushi", "apa1980"],
)
def test_fit_shared_csv_files(shared_data, capsys, folder, name, options, expected):
    path = str(shared_data / folder / name)
    code, out, err = run(["fit", path, *TINY, *options], capsys)
    assert code == 0, err
    assert expected in out
    # without --header the column names would be a ranking: refused
    code, out, err = run(["fit", path, *TINY, *options[1:]], capsys)
    assert code == 2 and "looks like a header" in err


# -- fit: outputs ----------------------------------------------------------------------


def test_fit_outputs(rankings_file, tmp_path, capsys):
    labels, report, saved = (tmp_path / name for name in ("l.txt", "r.json", "m.pkl"))
    argv = ["fit", str(rankings_file), *FAST, "--labels", str(labels)]
    argv += ["--json", str(report), "--save", str(saved)]
    code, out, _ = run(argv, capsys)
    assert code == 0
    sizes = printed_sizes(out)

    numbers = [int(line) for line in labels.read_text().splitlines()]
    assert len(numbers) == N_GROUPS
    # clusters are numbered as printed: 1 is the largest
    assert [numbers.count(k) for k in range(1, len(sizes) + 1)] == sizes

    result = json.loads(report.read_text(encoding="utf-8"))
    assert result["n_rankings"] == result["n_fitted"] == N_GROUPS
    assert result["items"] == ["apple", "pear", "plum", "fig"]
    assert [c["size"] for c in result["clusters"]] == sizes
    assert [c["cluster"] for c in result["clusters"]] == list(range(1, len(sizes) + 1))
    assert sum(c["weight"] for c in result["clusters"]) == pytest.approx(1)
    for cluster in result["clusters"]:
        assert sorted(cluster["central_ranking"]) == sorted(result["items"])
        # rankings of 4 items: the fourth theta carries no information
        assert len(cluster["theta"]) == 4 and cluster["theta"][3] is None
        assert all(value > 0 for value in cluster["theta"][:3])
    assert sum(result["n_clusters_posterior"].values()) == pytest.approx(1)
    assert result["n_clusters"] == len(sizes)
    assert set(result["rhat"]) == {"log_joint", "n_clusters"}
    assert result["settings"]["n_iter"] == 10 and result["settings"]["burn_in"] == 5
    assert "variation of information" in result["point_estimate"]

    model = joblib.load(saved)
    assert isinstance(model, DPMallowsClustering)
    assert model.n_items_ == 4 and len(model.labels_) == N_GROUPS
    number_of = {c["model_label"]: c["cluster"] for c in result["clusters"]}
    assert [number_of[k] for k in model.labels_] == numbers
    assert f"wrote the cluster of each ranking to {labels}" in out


def test_fit_items_json(tmp_path, capsys):
    path = write(tmp_path, "b,a\na,b\nb,a\n")
    report = tmp_path / "r.json"
    argv = [
        "fit",
        path,
        *FAST,
        "--items",
        "a, b, 'c d', \"e, f\"",
        "--json",
        str(report),
    ]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    result = json.loads(report.read_text(encoding="utf-8"))
    assert result["items"] == ["a", "b", "'c d'", "e, f"]
    assert "3 rankings of 4 items" in out
    # 4 items, rankings of 2: every theta informative, none null
    assert all(None not in c["theta"] for c in result["clusters"])


def test_fit_verbose_and_jobs(rankings_file, tmp_path, capsys):
    saved = tmp_path / "m.pkl"
    argv = ["fit", str(rankings_file), "--n-iter", "10", "--chains", "2"]
    code, out, err = run(
        [*argv, "--verbose", "--jobs", "2", "--save", str(saved)], capsys
    )
    assert code == 0
    model = joblib.load(saved)
    assert model.verbose == 1 and model.n_jobs == 2 and model.n_chains == 2


@pytest.mark.parametrize(
    "outputs, message",
    [
        (
            ["--labels", "{missing}/l.txt"],
            "--labels {missing}/l.txt: no such directory",
        ),
        (["--json", "{tmp}"], "is a directory"),
        (["--save", "{input}"], "would overwrite the input file"),
        (["--labels", "{tmp}/x", "--json", "{tmp}/x"], "the same file as --labels"),
    ],
)
def test_fit_bad_outputs_fail_before_the_fit(
    rankings_file, tmp_path, capsys, outputs, message
):
    names = {
        "missing": str(tmp_path / "nowhere"),
        "tmp": str(tmp_path),
        "input": str(rankings_file),
    }
    outputs = [option.format(**names) for option in outputs]
    code, out, err = run(["fit", str(rankings_file), *FAST, *outputs], capsys)
    assert code == 2 and message.format(**names) in err
    assert out == ""  # nothing fitted


# -- fit: errors and exit codes --------------------------------------------------------


def test_fit_missing_file(tmp_path, capsys):
    path = str(tmp_path / "missing.txt")
    assert main(["fit", path]) == 2
    assert f"{path}: no such file" in capsys.readouterr().err
    assert main(["fit", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_fit_bad_options(rankings_file, capsys):
    assert main(["fit", str(rankings_file), "--n-iter", "5", "--burn-in", "5"]) == 2
    assert "--burn-in (5) must be smaller than --n-iter (5)" in capsys.readouterr().err
    for option in (
        ["--alpha", "0"],
        ["--jobs", "0"],
        ["--delimiter", "ab"],
        ["--items", "a,a"],
        ["--format", "xml"],
        ["--header", "--no-header"],
    ):
        assert main(["fit", str(rankings_file), *option]) == 2
        assert option[0] in capsys.readouterr().err


def test_fit_interrupted(rankings_file, capsys, monkeypatch):
    def interrupt(self, X, y=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(DPMallowsClustering, "fit", interrupt)
    assert main(["fit", str(rankings_file), *FAST]) == 130
    assert "interrupted" in capsys.readouterr().err


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
    cut = _format_cluster(1, 1, 1, np.array([1, 0]), [2.0, 1.0], ["x", "y"], top=1)
    assert cut.splitlines()[2].split(":")[1].split() == ["2.00", "..."]


# -- demo, usage, program name ---------------------------------------------------------


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
    # all four means of each cluster, so that no two clusters print alike
    assert "sepal length, sepal width, petal length, petal width" in out
    clusters = re.findall(r"^  \(([\d., ]+)\): (\d+) flowers?:", out, re.M)
    assert sum(int(n) for _, n in clusters) == 105
    means = [tuple(map(float, m.split(", "))) for m, _ in clusters]
    assert all(len(m) == 4 for m in means) and len(set(means)) == len(means)


def test_usage(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m rankmix") and "demo" in out and "fit" in out
    assert main(["--help"]) == 0
    assert "usage:" in capsys.readouterr().out
    assert main(["nonsense"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert main(["fit", "--help"]) == 0
    out = capsys.readouterr().out
    for option in (
        "--delimiter",
        "--header",
        "--labels",
        "--json",
        "--save",
        "--verbose",
        "--jobs",
        "--n-items",
        "--items",
        "--subsample",
        "--missing",
        "--ties",
        "--format",
        "Exit codes",
    ):
        assert option in out


@pytest.mark.parametrize(
    "argv0, prog",
    [
        ("/venv/bin/rankmix", "rankmix"),
        ("rankmix", "rankmix"),
        ("rankmix.exe", "rankmix"),
        ("rankmix-script.py", "rankmix"),
        ("/src/rankmix/__main__.py", "python -m rankmix"),
        ("/venv/bin/pytest", "python -m rankmix"),
        ("", "python -m rankmix"),
    ],
)
def test_prog_name(argv0, prog):
    assert _prog_name(argv0) == prog


def test_console_script_name(rankings_file, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/rankmix"])
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("usage: rankmix [-h]")
    assert main(["fit", str(rankings_file), "--alpha", "-1"]) == 2
    assert capsys.readouterr().err.startswith("usage: rankmix fit")
    assert main(["fit", str(rankings_file) + ".gone"]) == 2
    assert capsys.readouterr().err.startswith("rankmix fit: error: ")
    assert main([], prog="custom") == 0
    assert capsys.readouterr().out.startswith("usage: custom")


@pytest.mark.parametrize("chains", ["0", "100001", str(2**62)])
def test_chains_out_of_range_named_by_option(rankings_file, capsys, chains):
    # the option's own name and bound, not the estimator's n_chains, and before
    # any chain is built
    code, _, err = run(["fit", str(rankings_file), "--chains", chains], capsys)
    assert code == 2
    expected = f"expected a positive integer at most 100,000, got '{chains}'"
    assert f"argument --chains: {expected}" in err
    assert "n_chains" not in err


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == rankmix.__version__


def test_python_m_subprocess(tmp_path):
    """``python -m rankmix`` runs, and names itself so in its errors."""
    result = subprocess.run(
        [sys.executable, "-m", "rankmix", "fit", str(tmp_path / "gone.txt")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("python -m rankmix fit: error: ")
    assert result.stderr.rstrip().endswith("gone.txt: no such file")
