# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the PrefLib reader, the download cache and the named data sets.

No test touches the internet: the real files come from the shared data folder
next to the repository, and downloads are served by a local HTTP server.
"""

import functools
import http.server
import io
import shutil
import socket
import threading
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from rankmix._validation import check_rankings, ranking_lengths
from rankmix.datasets import (
    _fetchers,
    fetch_apa,
    fetch_irish,
    fetch_preflib,
    fetch_sushi,
    get_data_home,
    load_apa1980,
    load_preflib,
)

# N, n, distinct orders and length distribution {t: count}, from
# shared/data/irish/PROVENANCE.txt.
IRISH = {
    "dublin_north": (
        "00001-00000001.soi",
        "2002 Dublin North",
        43942,
        12,
        19299,
        {1: 1688, 2: 2796, 3: 12589, 4: 7861, 5: 6163, 6: 3713, 7: 2184, 8: 1327,
         9: 686, 10: 676, 11: 597, 12: 3662},
    ),
    "dublin_west": (
        "00001-00000002.soi",
        "2002 Dublin West",
        29988,
        9,
        10335,
        {1: 1743, 2: 3243, 3: 8753, 4: 5157, 5: 3389, 6: 1866, 7: 1027, 8: 1010,
         9: 3800},
    ),
    "meath": (
        "00001-00000003.soi",
        "2002 Meath",
        64081,
        14,
        25101,
        {1: 3184, 2: 4250, 3: 21102, 4: 12004, 5: 8347, 6: 4866, 7: 2627, 8: 1736,
         9: 1053, 10: 880, 11: 425, 12: 441, 13: 676, 14: 2490},
    ),
}  # fmt: skip

HEADER = """\
# FILE NAME: tiny.soi
# TITLE: Tiny
# DATA TYPE: soi
# NUMBER ALTERNATIVES: 3
# NUMBER VOTERS: 4
# NUMBER UNIQUE ORDERS: 2
# ALTERNATIVE NAME 1: a
# ALTERNATIVE NAME 2: b
# ALTERNATIVE NAME 3: c
"""  # 9 lines: the first order is on line 10


def fill_cache(data_home, *files):
    """Copy shared data files into a cache folder, as fetch_preflib lays it out."""
    folder = Path(data_home) / "preflib"
    folder.mkdir(parents=True, exist_ok=True)
    for file in files:
        shutil.copy(file, folder / file.name)
    return folder


def read_csv(path):
    """The integer rows of a CSV file with '#' comments and one header line."""
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = [line for line in lines if line and not line.startswith("#")][1:]
    return np.array([row.split(",") for row in rows], dtype=np.intp)


def sorted_rows(X):
    """The rows of X in lexicographic order: equal iff equal multisets of rows."""
    return X[np.lexsort(X.T[::-1])]


def write(tmp_path, text, name="test.soi"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- load_preflib on the real files -----------------------------------------


@pytest.mark.parametrize("constituency", IRISH)
def test_irish_files_match_provenance(shared_data, constituency):
    file, title, n_voters, n_items, n_unique, lengths = IRISH[constituency]
    election = load_preflib(shared_data / "irish" / file)

    assert election.data.shape == (n_voters, n_items)
    assert election.n_items == n_items
    assert len(election.orders) == n_unique
    assert election.counts.sum() == n_voters
    assert election.title == title
    assert election.data_type == "soi"
    found = np.bincount(ranking_lengths(election.data), minlength=n_items + 1)
    assert dict(enumerate(found[1:], start=1)) == lengths
    # The data is in the rankmix format, and the expansion of the counts.
    assert_array_equal(check_rankings(election.data, n_items=n_items), election.data)
    assert_array_equal(
        np.repeat(election.orders, election.counts, axis=0), election.data
    )


def test_meath_item_names_and_first_order(shared_data):
    meath = load_preflib(shared_data / "irish" / "00001-00000003.soi")
    assert len(meath.item_names) == 14
    assert meath.item_names[0] == "Johnny Brady F.F."
    assert meath.item_names[13] == "Peter Ward Lab"
    # First line of the file: "1618: 1,4,13" (1-based labels).
    assert_array_equal(meath.orders[0, :4], [0, 3, 12, -1])
    assert meath.counts[0] == 1618
    assert meath.header["NUMBER VOTERS"] == "64081"
    assert "64081 voters" in meath.DESCR


def test_file_object_text_and_binary(shared_data):
    path = shared_data / "irish" / "00001-00000002.soi"
    expected = load_preflib(path)
    with open(path, encoding="utf-8") as text, open(path, "rb") as binary:
        for stream in (text, binary):
            loaded = load_preflib(stream)
            assert_array_equal(loaded.data, expected.data)
            assert loaded.item_names == expected.item_names
    unnamed = load_preflib(io.StringIO(path.read_text(encoding="utf-8")))
    assert unnamed.filename is None
    assert_array_equal(unnamed.data, expected.data)


def test_orders_of_length_n_minus_1_are_kept(tmp_path):
    election = load_preflib(write(tmp_path, "# NUMBER ALTERNATIVES: 3\n2: 3,1\n"))
    assert_array_equal(election.data, [[2, 0], [2, 0]])


def test_equal_orders_are_merged(tmp_path):
    path = write(tmp_path, "# NUMBER ALTERNATIVES: 3\n2: 3,1\n1: 2\n4: 3,1\n")
    election = load_preflib(path)
    assert_array_equal(election.orders, [[2, 0], [1, -1]])
    assert_array_equal(election.counts, [6, 1])


def test_missing_names_get_a_default(tmp_path):
    path = write(tmp_path, "# NUMBER ALTERNATIVES: 2\n# ALTERNATIVE NAME 2: b\n1: 1\n")
    assert load_preflib(path).item_names == ["Alternative 1", "b"]


# --- malformed files --------------------------------------------------------


@pytest.mark.parametrize(
    "orders, line, fault",
    [
        ("x: 1,2\n", 10, "bad count 'x'"),
        ("0: 1,2\n", 10, "bad count '0'"),
        ("-1: 1,2\n", 10, "bad count '-1'"),
        ("2.5: 1,2\n", 10, "bad count"),
        ("3 1,2\n", 10, "missing ':'"),
        ("3: 1,2\n1: 1,4\n", 11, "alternative 4 out of range"),
        ("3: 1,2\n1: 0,2\n", 11, "bad alternative label '0'"),
        ("3: 1,2\n1: 1,b\n", 11, "bad alternative label 'b'"),
        ("3: 1,2\n1: 1,,2\n", 11, "bad alternative label ''"),
        ("3: 1,2\n1: 2,1,2\n", 11, "alternative 2 appears twice"),
        ("3: 1,2\n1: \n", 11, "empty order"),
        ("3: 1,2\n1: 1,{2,3\n", 11, "unbalanced braces"),
        ("3: 1,2\n1: {1,{2}},3\n", 11, "braces"),
        ("3: 1,2\n1: 1,{2,3}\n", 11, "ties alternatives {2,3}"),
        ("3: 1,2\n# NUMBER VOTERS: 4\n1: 1\n", 11, "header line after the orders"),
        ("3: 1,2\n2: 3\n", 5, "NUMBER VOTERS is 4, but the counts add up to 5"),
        ("3: 1,2\n", 5, "NUMBER VOTERS is 4, but the counts add up to 3"),
        ("1: 1,2\n2: 3\n1: 2\n", 6, "NUMBER UNIQUE ORDERS is 2, but the file has"),
    ],
)
def test_malformed_orders_name_file_and_line(tmp_path, orders, line, fault):
    path = write(tmp_path, HEADER + orders)
    with pytest.raises(ValueError, match=f"line {line}: ") as excinfo:
        load_preflib(path)
    message = str(excinfo.value)
    assert message.startswith(str(path))
    assert fault in message


@pytest.mark.parametrize(
    "text, line, fault",
    [
        ("1: 1\n", 1, "before any '# NUMBER ALTERNATIVES:'"),
        ("# NUMBER ALTERNATIVES: three\n1: 1\n", 1, "bad NUMBER ALTERNATIVES"),
        ("# NUMBER ALTERNATIVES: 0\n1: 1\n", 1, "bad NUMBER ALTERNATIVES '0'"),
        ("# NUMBER ALTERNATIVES: 2\n# ALTERNATIVE NAME 3: c\n1: 1\n", 2, "name for"),
        ("# ALTERNATIVE NAME 1: a\n# ALTERNATIVE NAME 1: b\n", 2, "second name"),
        ("# NUMBER ALTERNATIVES: 2\n# DATA TYPE: cat\n1: 1\n", 2, "'cat' holds no"),
        ("# DATA TYPE: soc\n# NUMBER ALTERNATIVES: 3\n1: 1,2\n", 3, "ranks 2 of"),
        ("# DATA TYPE: toc\n# NUMBER ALTERNATIVES: 3\n1: 1,{2}\n", 3, "ranks 2 of"),
    ],
)
def test_malformed_header_names_line(tmp_path, text, line, fault):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=f"line {line}: ") as excinfo:
        load_preflib(path, ties="truncate")
    assert fault in str(excinfo.value)


def test_soc_extension_requires_complete_orders(tmp_path):
    path = write(tmp_path, "# NUMBER ALTERNATIVES: 3\n1: 1,2,3\n1: 2,1\n", "x.soc")
    with pytest.raises(ValueError, match="line 3: a .soc file holds complete"):
        load_preflib(path)


@pytest.mark.parametrize("text", ["", "# NUMBER ALTERNATIVES: 3\n\n"])
def test_file_without_orders(tmp_path, text):
    with pytest.raises(ValueError, match="holds no orders"):
        load_preflib(write(tmp_path, text))


def test_bad_ties_option(tmp_path):
    with pytest.raises(ValueError, match="ties"):
        load_preflib(write(tmp_path, HEADER + "4: 1\n"), ties="break")


# --- ties -------------------------------------------------------------------


def imbue(soi_text):
    """The .toc that PrefLib derives from a .soi: unranked alternatives tied last."""
    lines = []
    n_items = None
    for line in soi_text.splitlines():
        if line.startswith("# NUMBER ALTERNATIVES:"):
            n_items = int(line.split(":")[1])
        if line.startswith("# DATA TYPE:"):
            line = "# DATA TYPE: toc"
        if not line.startswith("#"):
            count, order = line.split(":")
            ranked = [int(label) for label in order.split(",")]
            rest = [str(a) for a in range(1, n_items + 1) if a not in ranked]
            if len(rest) > 1:
                order += ",{" + ",".join(rest) + "}"
            elif rest:
                order += "," + rest[0]
            line = f"{count}:{order}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def test_truncate_reads_an_imbued_toc_back_as_its_soi(shared_data, tmp_path):
    soi_path = shared_data / "irish" / "00001-00000002.soi"
    toc_path = write(tmp_path, imbue(soi_path.read_text(encoding="utf-8")), "w.toc")
    soi = load_preflib(soi_path)
    toc = load_preflib(toc_path, ties="truncate")

    # Imbuing completes the orders of length n - 1 (which then merge with equal
    # complete orders, so the rows come in another order); complete them in the
    # soi too.
    expected = soi.data.copy()
    n = soi.n_items
    almost = ranking_lengths(expected) == n - 1
    expected[almost, n - 1] = n * (n - 1) // 2 - expected[almost, : n - 1].sum(axis=1)
    assert toc.data_type == "toc"
    assert toc.n_voters_dropped == 0
    assert_array_equal(sorted_rows(toc.data), sorted_rows(expected))

    with pytest.raises(ValueError, match=r"line \d+: the order ties alternatives"):
        load_preflib(toc_path)


def test_truncate_cuts_at_the_first_tie_and_drops_leading_ties(tmp_path):
    text = (
        "# NUMBER ALTERNATIVES: 4\n# NUMBER VOTERS: 10\n"
        "4: 2,{1,3},4\n3: {1,2},3,4\n2: 1,{3},4,2\n1: 2,{3,4}\n"
    )
    election = load_preflib(write(tmp_path, text, "t.toi"), ties="truncate")
    # "2,{1,3},4" and "2,{3,4}" both truncate to "2"; "{3}" is no tie.
    assert_array_equal(election.orders, [[1, -1, -1, -1], [0, 2, 3, 1]])
    assert_array_equal(election.counts, [5, 2])
    assert election.n_voters_dropped == 3
    assert len(election.data) == 7
    assert "3 voters whose order starts with a tie were dropped" in election.DESCR


def test_truncate_with_only_leading_ties(tmp_path):
    path = write(tmp_path, "# NUMBER ALTERNATIVES: 2\n1: {1,2}\n", "t.toc")
    with pytest.raises(ValueError, match="leaves no ranking"):
        load_preflib(path, ties="truncate")


# --- the cache --------------------------------------------------------------


def test_get_data_home(tmp_path, monkeypatch):
    monkeypatch.delenv("RANKMIX_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == str(tmp_path / "rankmix_data")
    assert (tmp_path / "rankmix_data").is_dir()

    monkeypatch.setenv("RANKMIX_DATA", str(tmp_path / "from_env"))
    assert get_data_home() == str(tmp_path / "from_env")
    assert get_data_home(tmp_path / "explicit") == str(tmp_path / "explicit")
    assert (tmp_path / "explicit").is_dir()


def test_cached_file_is_read_without_network(shared_data, tmp_path, no_network):
    fill_cache(tmp_path, shared_data / "irish" / "00001-00000003.soi")
    meath = fetch_irish("meath", data_home=tmp_path)
    assert meath.data.shape == (64081, 14)
    assert meath.filename == str(tmp_path / "preflib" / "00001-00000003.soi")
    assert "OpenSTV" in meath.DESCR and "GPL" in meath.DESCR


def test_rankmix_data_environment_variable(
    shared_data, tmp_path, no_network, monkeypatch
):
    fill_cache(tmp_path / "env", shared_data / "irish" / "00001-00000002.soi")
    monkeypatch.setenv("RANKMIX_DATA", str(tmp_path / "env"))
    west = fetch_preflib("00001-00000002.soi")
    assert west.title == "2002 Dublin West"
    assert Path(west.filename).parent == tmp_path / "env" / "preflib"


def test_not_cached_and_offline(tmp_path, monkeypatch):
    def urlopen(*args, **kwargs):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    with pytest.raises(OSError, match="Cannot download .*00001-00000003.soi") as exc:
        fetch_irish("meath", data_home=tmp_path)
    assert "Name or service not known" in str(exc.value)
    assert "not in the cache folder" in str(exc.value)
    assert list((tmp_path / "preflib").iterdir()) == []  # no partial file left


def test_not_cached_and_no_download(tmp_path, no_network):
    with pytest.raises(OSError, match="download_if_missing=False"):
        fetch_apa(2000, data_home=tmp_path, download_if_missing=False)


@pytest.mark.parametrize(
    "name", ["00001-00000003.csv", "00001-00000003", "../x/00001-00000003.soi"]
)
def test_fetch_refuses_names_of_other_files(name, tmp_path, no_network):
    with pytest.raises(ValueError, match="not a PrefLib file of orders"):
        fetch_preflib(name, data_home=tmp_path)


def test_fetch_needs_a_relative_path_for_unknown_series(tmp_path, no_network):
    with pytest.raises(ValueError, match="series '00007'"):
        fetch_preflib("00007-00000001.soi", data_home=tmp_path)


# --- downloads from a local HTTP server -------------------------------------


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Serve tmp_path/site on 127.0.0.1; yield (base_url, site, request paths)."""
    # Keep any proxy configured in the environment out of the way.
    monkeypatch.setenv("no_proxy", "*")
    site = tmp_path / "site"
    site.mkdir()
    requests = []

    class Handler(_QuietHandler):
        def do_GET(self):
            requests.append(self.path)
            super().do_GET()

    handler = functools.partial(Handler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/datasets/", site, requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_download_once_then_read_from_cache(shared_data, tmp_path, server):
    base_url, site, requests = server
    folder = site / "datasets" / "00001 - irish"
    folder.mkdir(parents=True)
    shutil.copy(shared_data / "irish" / "00001-00000002.soi", folder)
    data_home = tmp_path / "home"

    west = fetch_irish("dublin_west", data_home=data_home, base_url=base_url)
    assert requests == ["/datasets/00001%20-%20irish/00001-00000002.soi"]
    cached = data_home / "preflib" / "00001-00000002.soi"
    assert cached.read_bytes() == (folder / "00001-00000002.soi").read_bytes()
    assert sorted(p.name for p in cached.parent.iterdir()) == [cached.name]
    assert west.data.shape == (29988, 9)

    again = fetch_irish("dublin_west", data_home=data_home, base_url=base_url)
    assert len(requests) == 1
    assert_array_equal(again.data, west.data)


def test_download_with_a_relative_path(shared_data, tmp_path, server):
    base_url, site, requests = server
    folder = site / "datasets" / "apa"
    folder.mkdir(parents=True)
    shutil.copy(shared_data / "apa_preflib" / "00028-00000001.soi", folder)
    apa = fetch_preflib(
        "apa/00028-00000001.soi", data_home=tmp_path / "home", base_url=base_url
    )
    assert requests == ["/datasets/apa/00028-00000001.soi"]
    assert apa.title == "APA_1998"


def test_download_of_a_missing_file(tmp_path, server):
    base_url, _, _ = server
    with pytest.raises(OSError, match="answered 404"):
        fetch_apa(2001, data_home=tmp_path / "home", base_url=base_url)
    assert list((tmp_path / "home" / "preflib").iterdir()) == []


def test_download_of_a_broken_file_is_not_cached(tmp_path, server):
    base_url, site, _ = server
    folder = site / "datasets" / "00028 - apa"
    folder.mkdir(parents=True)
    (folder / "00028-00000003.soi").write_text("<html>Not PrefLib</html>\n")
    with pytest.raises(ValueError, match="not a valid PrefLib file, so it was not"):
        fetch_apa(2000, data_home=tmp_path / "home", base_url=base_url)
    assert list((tmp_path / "home" / "preflib").iterdir()) == []


def test_a_downloaded_file_with_ties_is_cached_whatever_ties_says(tmp_path, server):
    # refusing ties is the reader's decision, not a reason to download again
    base_url, site, requests = server
    folder = site / "datasets" / "toy"
    folder.mkdir(parents=True)
    (folder / "t.toc").write_text(
        "# NUMBER ALTERNATIVES: 3\n# NUMBER VOTERS: 2\n1: 1,{2,3}\n1: 2,1,3\n"
    )
    home = tmp_path / "home"
    with pytest.raises(ValueError, match="tie"):
        fetch_preflib("toy/t.toc", data_home=home, base_url=base_url)
    assert (home / "preflib" / "t.toc").is_file()
    bunch = fetch_preflib(
        "toy/t.toc", data_home=home, base_url=base_url, ties="truncate"
    )
    assert len(requests) == 1
    assert bunch.data.tolist() == [[0, -1, -1], [1, 0, 2]]


def test_the_checksum_registry_matches_the_shared_files(shared_data):
    # the shared copies come from PREFLIB_COMMIT (see their PROVENANCE.txt)
    folders = {"00001": "irish", "00014": "sushi", "00028": "apa_preflib"}
    assert len(_fetchers._PREFLIB_SHA256) == 16
    for relative_path, sha256 in _fetchers._PREFLIB_SHA256.items():
        file_name = relative_path.rsplit("/", 1)[-1]
        local = shared_data / folders[file_name[:5]] / file_name
        assert _fetchers._sha256(local) == sha256, file_name
    assert _fetchers.PREFLIB_COMMIT in _fetchers.PREFLIB_BASE_URL


def test_the_default_url_checks_the_checksum(tmp_path, monkeypatch):
    # a file that changed at its source is refused, and nothing is cached
    urls = []

    def urlopen(url, timeout):
        urls.append(url)
        return io.BytesIO(b"# NUMBER ALTERNATIVES: 2\n1: 1,2\n")

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    home = tmp_path / "home"
    with pytest.raises(OSError, match="SHA-256 .* not the expected .*not cached"):
        fetch_irish("meath", data_home=home)
    assert urls == [_fetchers.PREFLIB_BASE_URL + "00001%20-%20irish/00001-00000003.soi"]
    assert list((home / "preflib").iterdir()) == []


def test_a_checked_download_is_cached(shared_data, tmp_path, server):
    base_url, site, requests = server
    folder = site / "datasets" / "00028 - apa"
    folder.mkdir(parents=True)
    shutil.copy(shared_data / "apa_preflib" / "00028-00000001.soi", folder)
    url = base_url + "00028%20-%20apa/00028-00000001.soi"
    sha256 = _fetchers._PREFLIB_SHA256["00028 - apa/00028-00000001.soi"]
    cache = tmp_path / "cache"
    cache.mkdir()
    _fetchers._download(url, str(cache / "good.soi"), sha256=sha256)
    with pytest.raises(OSError, match="not the expected"):
        _fetchers._download(url, str(cache / "bad.soi"), sha256="0" * 64)
    assert [p.name for p in cache.iterdir()] == ["good.soi"]
    assert _fetchers._sha256(cache / "good.soi") == sha256


@pytest.fixture
def flaky_server(tmp_path, monkeypatch):
    """A local server that answers 503 to the first two requests, then the file."""
    monkeypatch.setenv("no_proxy", "*")
    body = b"# NUMBER ALTERNATIVES: 2\n1: 1,2\n1: 2,1\n"
    requests = []

    class Handler(_QuietHandler):
        def do_GET(self):
            requests.append(self.path)
            if self.path.startswith("/missing") or len(requests) <= 2:
                code = 404 if self.path.startswith("/missing") else 503
                self.send_error(code)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", requests
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_passing_failures_are_retried(tmp_path, flaky_server):
    base_url, requests = flaky_server
    path = tmp_path / "t.soc"
    _fetchers._download(base_url + "t.soc", str(path), n_retries=3, delay=0.01)
    assert len(requests) == 3  # two 503 answers, then the file
    assert path.read_bytes().startswith(b"# NUMBER ALTERNATIVES: 2")


def test_a_404_is_not_retried(tmp_path, flaky_server):
    base_url, requests = flaky_server
    with pytest.raises(OSError, match="answered 404"):
        _fetchers._download(
            base_url + "missing/t.soc", str(tmp_path / "t.soc"), delay=0.01
        )
    assert len(requests) == 1
    assert list(tmp_path.iterdir()) == []


def test_retries_give_up(tmp_path, flaky_server):
    base_url, requests = flaky_server
    with pytest.raises(OSError, match="answered 503"):
        _fetchers._download(
            base_url + "t.soc", str(tmp_path / "t.soc"), n_retries=1, delay=0.01
        )
    assert len(requests) == 2
    assert list(tmp_path.iterdir()) == []


def test_a_name_that_does_not_resolve_is_not_retried(tmp_path, monkeypatch):
    # offline: the host name will not resolve on a second try either
    calls = []

    def urlopen(url, timeout):
        calls.append(url)
        raise urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))

    monkeypatch.setattr(urllib.request, "urlopen", urlopen)
    with pytest.raises(OSError, match=r"Name or service not known; 1 try\)"):
        _fetchers._download(
            "https://example.invalid/t.soc", str(tmp_path / "t.soc"), delay=10.0
        )
    assert len(calls) == 1
    assert list(tmp_path.iterdir()) == []
    # a temporary failure of the name server is retried
    calls.clear()

    def urlopen_again(url, timeout):
        calls.append(url)
        raise urllib.error.URLError(
            socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        )

    monkeypatch.setattr(urllib.request, "urlopen", urlopen_again)
    with pytest.raises(OSError, match="3 tries"):
        _fetchers._download(
            "https://example.invalid/t.soc",
            str(tmp_path / "t.soc"),
            n_retries=2,
            delay=0.001,
        )
    assert len(calls) == 3


# --- named data sets --------------------------------------------------------


def test_fetch_sushi_corrects_the_labels(shared_data, tmp_path, no_network):
    fill_cache(tmp_path, shared_data / "sushi" / "00014-00000001.soc")
    sushi = fetch_sushi(data_home=tmp_path)
    assert sushi.data.shape == (5000, 10)
    assert len(sushi.orders) == 4926

    # The same multiset of orderings as Kamishima's ids in sushi3a.
    expected = read_csv(shared_data / "sushi" / "sushi3a_orderings.csv")
    assert expected.shape == (5000, 10)
    assert_array_equal(sorted_rows(sushi.data), sorted_rows(expected))

    # Fatty tuna is the most common favourite, and has the best mean rank.
    favourite = np.bincount(sushi.data[:, 0]).argmax()
    assert sushi.item_names[favourite] == "toro (fatty tuna)"
    mean_rank = np.argsort(sushi.data, axis=1).mean(axis=0) + 1
    assert round(mean_rank[favourite], 2) == 3.11
    assert sushi.item_names[0] == "ebi (shrimp)"
    assert "Kamishima" in sushi.DESCR and "redistribut" in sushi.DESCR


def test_fetch_sushi_refuses_a_changed_file(shared_data, tmp_path, no_network):
    folder = fill_cache(tmp_path, shared_data / "sushi" / "00014-00000001.soc")
    path = folder / "00014-00000001.soc"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("NAME 1: ebi", "NAME 1: shrimp"), encoding="utf-8")
    with pytest.raises(ValueError, match="correction may no longer apply"):
        fetch_sushi(data_home=tmp_path)


@pytest.mark.parametrize("year", range(1998, 2010))
def test_fetch_apa_years(shared_data, tmp_path, no_network, year):
    fill_cache(tmp_path, *sorted((shared_data / "apa_preflib").glob("*.soi")))
    apa = fetch_apa(year, data_home=tmp_path)
    assert apa.title == f"APA_{year}"
    assert apa.n_items == 5
    assert apa.item_names == [f"Candidate {k}" for k in range(1, 6)]
    assert 13318 <= len(apa.data) <= 20239
    if year == 1998:
        lengths = np.bincount(ranking_lengths(apa.data))[1:]
        assert_array_equal(lengths, [3743, 2571, 1431, 269, 10709])
    assert "Popov" in apa.DESCR


@pytest.mark.parametrize("year", [1997, 2010, 2000.0])
def test_fetch_apa_bad_year(year, tmp_path, no_network):
    with pytest.raises(ValueError, match="year"):
        fetch_apa(year, data_home=tmp_path)


def test_fetch_irish_bad_constituency(tmp_path, no_network):
    with pytest.raises(ValueError, match="constituency"):
        fetch_irish("dublin_south", data_home=tmp_path)


def test_load_apa1980(shared_data):
    apa = load_apa1980(shared_data / "apa1980" / "apa1980_top_orderings.csv")
    assert apa.data.shape == (15449, 5)
    lengths = np.bincount(ranking_lengths(apa.data), minlength=6)
    assert dict(enumerate(lengths)) == {0: 0, 1: 5141, 2: 2462, 3: 2108, 4: 0, 5: 5738}
    assert apa.item_names == [f"Candidate {k}" for k in range(1, 6)]
    assert_array_equal(check_rankings(apa.data, n_items=5), apa.data)

    # The complete ballots are the PerMallows data set, which stores ranks.
    ranks = read_csv(shared_data / "apa1980" / "apa1980_complete_permallows.csv")
    complete = apa.data[ranking_lengths(apa.data) == 5]
    assert_array_equal(sorted_rows(complete), sorted_rows(np.argsort(ranks, axis=1)))


def test_load_apa1980_refuses_a_rank_matrix(shared_data, tmp_path):
    # PerMallows' file holds each candidate's rank: its rows are valid
    # orderings too, the inverse permutations, so only the header tells
    path = shared_data / "apa1980" / "apa1980_complete_permallows.csv"
    with pytest.raises(ValueError, match="line 3: expected the header") as excinfo:
        load_apa1980(path)
    assert "'rank_of_c1," in str(excinfo.value)
    assert "ranks_to_orderings" in str(excinfo.value)
    # another header of 5 fields says what it expects, without the hint
    other = write(tmp_path, "a,b,c,d,e\n5,0,0,0,0\n")
    with pytest.raises(ValueError, match="line 1: expected the header") as excinfo:
        load_apa1980(other)
    assert "ranks_to_orderings" not in str(excinfo.value)
    # case and spaces do not matter
    spaced = write(tmp_path, "Rank1, RANK2,rank3 ,rank4,rank5\n5,0,0,0,0\n")
    assert_array_equal(load_apa1980(spaced).data, [[4]])


@pytest.mark.parametrize(
    "row, fault",
    [
        ("1,2,3\n", "expected 5 comma-separated fields"),
        ("1,0,3,0,0\n", "follows an unfilled position"),
        ("1,6,0,0,0\n", "alternative 6 out of range"),
        ("1,1,0,0,0\n", "alternative 1 appears twice"),
        ("0,0,0,0,0\n", "empty ballot"),
        ("a,0,0,0,0\n", "bad candidate 'a'"),
    ],
)
def test_load_apa1980_malformed(tmp_path, row, fault):
    path = write(
        tmp_path, "# comment\nrank1,rank2,rank3,rank4,rank5\n5,0,0,0,0\n" + row
    )
    with pytest.raises(ValueError, match="line 4: ") as excinfo:
        load_apa1980(path)
    assert fault in str(excinfo.value)
