# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Real ranking data: PrefLib files, their download cache and named data sets.

PrefLib (Mattei & Walsh 2013, https://www.preflib.org) stores preference data in
a small text format (2022 edition): ``#`` header lines, among them ``NUMBER
ALTERNATIVES``, ``NUMBER VOTERS`` and ``ALTERNATIVE NAME k``, then one line per
distinct order, ``count: a1,a2,...,at``, with 1-based labels, most preferred
first. Orders with ties write the tied alternatives as a group, ``{a,b}``.

The files are never shipped with rankmix (their licences differ, and the sushi
data may not be redistributed): :func:`fetch_preflib` downloads a file once into
a cache folder on the user's machine, and :func:`load_preflib` reads any file.
"""

import os
import re
import shutil
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager, suppress
from numbers import Integral

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_params,
)

from .._validation import check_rankings

__all__ = [
    "PREFLIB_BASE_URL",
    "fetch_apa",
    "fetch_irish",
    "fetch_preflib",
    "fetch_sushi",
    "get_data_home",
    "load_apa1980",
    "load_preflib",
]

# The PrefLib-Data repository is PrefLib's own source of its files; GitHub serves
# them reliably and a commit hash in place of "main" pins a version.
PREFLIB_BASE_URL = (
    "https://raw.githubusercontent.com/PrefLib/PrefLib-Data/main/datasets/"
)

# Folders of the series whose files can be fetched by bare file name, in the
# layout of PrefLib-Data ("<series> - <abbreviation>/<file>").
_SERIES_FOLDERS = {
    "00001": "00001 - irish",
    "00014": "00014 - sushi",
    "00028": "00028 - apa",
}

_DATA_TYPES = {
    "soc": "strict orders, complete",
    "soi": "strict orders, incomplete (top-t)",
    "toc": "orders with ties, complete",
    "toi": "orders with ties, incomplete",
}
_COMPLETE_TYPES = ("soc", "toc")

# A download that stalls this long (seconds) is given up.
_TIMEOUT = 60

_INTEGER = re.compile(r"\s*([0-9]+)\s*")
_STRICT_ORDER = re.compile(r"\s*[0-9]+\s*(?:,\s*[0-9]+\s*)*")
_ALTERNATIVE_NAME = re.compile(r"ALTERNATIVE NAME\s+(\S+)")
# A comma that is not inside braces: "1,{2,3},4" splits into "1", "{2,3}", "4".
_TOP_LEVEL_COMMA = re.compile(r",(?![^{]*\})")


def get_data_home(data_home=None):
    """Return the folder that caches downloaded data sets, creating it.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder. None takes the environment variable ``RANKMIX_DATA`` if it
        is set, else ``~/rankmix_data``. A leading ``~`` is expanded.

    Returns
    -------
    data_home : str
        The folder, which exists on return.

    Examples
    --------
    >>> import os, tempfile
    >>> from rankmix.datasets import get_data_home
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     home = get_data_home(os.path.join(tmp, "cache"))
    ...     print(os.path.basename(home), os.path.isdir(home))
    cache True
    """
    if data_home is None:
        data_home = os.environ.get("RANKMIX_DATA", os.path.join("~", "rankmix_data"))
    data_home = os.path.expanduser(os.fspath(data_home))
    os.makedirs(data_home, exist_ok=True)
    return data_home


@validate_params(
    {
        "file": [str, os.PathLike, HasMethods(["read"])],
        "ties": [StrOptions({"raise", "truncate"})],
    },
    prefer_skip_nested_validation=True,
)
def load_preflib(file, *, ties="raise"):
    """Read a PrefLib file of orders (.soc, .soi, .toc, .toi) as rankings.

    Parameters
    ----------
    file : str, path-like or file object
        A PrefLib file in the 2022 format, or an open file (text or binary,
        UTF-8). Its type comes from the ``# DATA TYPE`` header line, else from
        the file name's extension.
    ties : {"raise", "truncate"}, default="raise"
        What to do with an order that ties alternatives (``{a,b}`` groups of
        .toc and .toi files). The Mallows model has no ties, so there is no
        faithful way to feed it a tied order:

        - ``"raise"``: raise a ValueError naming the first tied order.
        - ``"truncate"``: keep each order up to its first tie, i.e. its strict
          top-t prefix. Top-t rankings are exactly what the model describes,
          and the prefix is what the voter said without ambiguity. The
          imbued .toc files of PrefLib (a .soi file with the unranked
          alternatives appended as one tied group) thus read back as their
          .soi. Orders that start with a tie keep nothing and are dropped;
          ``n_voters_dropped`` counts them.

        Breaking ties at random is not offered: it would invent preferences.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the following attributes.

        data : ndarray of shape (n_voters, t_max), dtype=np.intp
            One ranking per voter (counts expanded), best first, as item ids
            ``label - 1``, padded with -1: the input format of
            :class:`~rankmix.DPMallowsClustering`. Rows come in file order,
            equal orders together: shuffle before taking a subsample.
        orders : ndarray of shape (n_orders, t_max), dtype=np.intp
            The distinct rankings, in the order of their first line.
        counts : ndarray of shape (n_orders,), dtype=np.intp
            Number of voters of each distinct ranking; ``data`` equals
            ``np.repeat(orders, counts, axis=0)``.
        item_names : list of str
            ``item_names[i]`` names item id ``i`` (PrefLib label ``i + 1``).
        n_items : int
            Number of alternatives.
        title : str
            The ``TITLE`` header ("" if absent).
        data_type : str or None
            "soc", "soi", "toc" or "toi"; None if neither the header nor the
            file name tells.
        header : dict of str to str
            Every ``# KEY: value`` header line except the alternative names.
        n_voters_dropped : int
            Voters whose order started with a tie (only with
            ``ties="truncate"``).
        filename : str or None
            The path read, or the file object's name.
        DESCR : str
            A description of the data set.

    Raises
    ------
    ValueError
        If the file is malformed, naming the file, the 1-based line and the
        fault: a count that is not a positive integer, a missing colon, a
        label that is not an integer in ``1..NUMBER ALTERNATIVES``, a repeated
        label, an empty order, unbalanced braces, an incomplete order in a
        .soc or .toc file, a tie (with ``ties="raise"``), a header line after
        the orders, or counts that disagree with ``NUMBER VOTERS`` or ``NUMBER
        UNIQUE ORDERS``. Files of other PrefLib types (e.g. ``.cat``) are
        refused too.

    See Also
    --------
    fetch_preflib : Download a PrefLib file into a cache, then read it.

    Notes
    -----
    Orders of length ``n_items - 1`` are kept as they are, not completed with
    the one missing item: under the generalized Mallows model they have the
    same likelihood as the completed ranking (the last stage offers a single
    choice), and keeping them leaves the data as the file has it. To complete
    them anyway, write the missing id, ``n_items * (n_items - 1) // 2`` minus
    the sum of the row's ``n_items - 1`` ids, into its last column.

    The labels of a file are taken as the file states them. PrefLib's sushi
    file (00014-00000001.soc) has wrong alternative names; use
    :func:`fetch_sushi`, which corrects them.

    References
    ----------
    N. Mattei and T. Walsh. PrefLib: A Library of Preference Data. ADT 2013.

    Examples
    --------
    >>> import io
    >>> from rankmix.datasets import load_preflib
    >>> text = '''# TITLE: A small election
    ... # DATA TYPE: soi
    ... # NUMBER ALTERNATIVES: 3
    ... # NUMBER VOTERS: 5
    ... # NUMBER UNIQUE ORDERS: 2
    ... # ALTERNATIVE NAME 1: Ann
    ... # ALTERNATIVE NAME 2: Bob
    ... # ALTERNATIVE NAME 3: Cy
    ... 3: 2,1
    ... 2: 3,1,2
    ... '''
    >>> election = load_preflib(io.StringIO(text))
    >>> election.data
    array([[ 1,  0, -1],
           [ 1,  0, -1],
           [ 1,  0, -1],
           [ 2,  0,  1],
           [ 2,  0,  1]])
    >>> election.item_names, election.counts
    (['Ann', 'Bob', 'Cy'], array([3, 2]))
    >>> ties = io.StringIO("# NUMBER ALTERNATIVES: 3\\n4: 2,{1,3}\\n1: {1,2},3\\n")
    >>> load_preflib(ties, ties="truncate").data.ravel()
    array([1, 1, 1, 1])
    """
    with _open_lines(file) as (source, lines):
        reader = _PrefLibReader(source, ties, _type_from_name(source))
        reader.read(lines)
    return reader.result()


@contextmanager
def _open_lines(file):
    """Yield a name for messages and an iterator over the text lines of ``file``."""
    if isinstance(file, (str, os.PathLike)):
        path = os.fspath(file)
        # utf-8-sig: a byte order mark must not stick to the first header key.
        with open(path, encoding="utf-8-sig") as stream:
            yield path, stream
        return
    name = getattr(file, "name", None)
    source = name if isinstance(name, str) else "<file object>"
    yield (
        source,
        (
            line.decode("utf-8-sig") if isinstance(line, bytes) else line
            for line in file
        ),
    )


def _type_from_name(source):
    extension = os.path.splitext(source)[1].lower().lstrip(".")
    return extension if extension in _DATA_TYPES else None


class _PrefLibReader:
    """Parse the lines of one PrefLib file; holds the state of the parse."""

    def __init__(self, source, ties, data_type):
        self.source = source
        self.ties = ties
        self.data_type = data_type
        self.header = {}  # key -> value
        self.header_lines = {}  # key -> line number, to point errors at it
        self.names = {}  # label -> (name, line number)
        self.n_items = None
        self.n_lines = 0  # order lines read
        self.index = {}  # ranking tuple -> row of self.orders
        self.orders = []
        self.counts = []
        self.n_dropped = 0

    def fault(self, lineno, message):
        return ValueError(f"{self.source}, line {lineno}: {message}")

    def read(self, lines):
        lineno = 0
        try:
            for lineno, line in enumerate(lines, start=1):
                line = line.strip()
                if not line:
                    continue
                if line.startswith("#"):
                    self.header_line(line, lineno)
                else:
                    self.order_line(line, lineno)
        except UnicodeDecodeError as exc:
            raise self.fault(lineno + 1, f"not UTF-8 text ({exc.reason}).") from None
        self.check_totals()

    def header_line(self, line, lineno):
        if self.n_lines:
            raise self.fault(
                lineno,
                "header line after the orders: all '#' lines must come first.",
            )
        key, colon, value = line[1:].partition(":")
        if not colon:
            return  # a comment, not a "# KEY: value" line
        key, value = key.strip(), value.strip()
        name_match = _ALTERNATIVE_NAME.fullmatch(key)
        if name_match:
            label = self.integer(name_match.group(1), lineno, "alternative label")
            if label in self.names:
                raise self.fault(lineno, f"second name for alternative {label}.")
            self.names[label] = (value, lineno)
            return
        self.header[key] = value
        self.header_lines[key] = lineno

    def integer(self, text, lineno, what, minimum=1):
        match = _INTEGER.fullmatch(text)
        if match is None or int(match.group(1)) < minimum:
            kind = "positive" if minimum > 0 else "non-negative"
            raise self.fault(
                lineno, f"bad {what} {text.strip()!r}: expected a {kind} integer."
            )
        return int(match.group(1))

    def start_orders(self, lineno):
        """Check the header once, when the first order line comes."""
        if "NUMBER ALTERNATIVES" not in self.header:
            raise self.fault(
                lineno,
                "order line before any '# NUMBER ALTERNATIVES:' header line; is "
                "this a PrefLib file in the 2022 format?",
            )
        self.n_items = self.integer(
            self.header["NUMBER ALTERNATIVES"],
            self.header_lines["NUMBER ALTERNATIVES"],
            "NUMBER ALTERNATIVES",
        )
        for label, (_, name_line) in self.names.items():
            if label > self.n_items:
                raise self.fault(
                    name_line,
                    f"name for alternative {label}, but the file has "
                    f"{self.n_items} alternatives.",
                )
        if "DATA TYPE" in self.header:
            self.data_type = self.header["DATA TYPE"].lower()
            if self.data_type not in _DATA_TYPES:
                raise self.fault(
                    self.header_lines["DATA TYPE"],
                    f"data type {self.data_type!r} holds no orders; rankmix reads "
                    f"the PrefLib types {', '.join(_DATA_TYPES)}.",
                )

    def order_line(self, line, lineno):
        if self.n_lines == 0:
            self.start_orders(lineno)
        self.n_lines += 1
        count_text, colon, order_text = line.partition(":")
        if not colon:
            raise self.fault(
                lineno,
                "missing ':' between the count and the order (count: a1,a2,...).",
            )
        count = self.integer(count_text, lineno, "count")
        ranking = self.strict_ranking(order_text)
        if ranking is None:
            ranking = self.ranking(self.groups(order_text, lineno), lineno)
        self.add(ranking, count)

    def strict_ranking(self, text):
        """The ranking of a valid strict order, or None for any other text.

        Most lines are valid strict orders; this checks them in a few calls, and
        leaves the rest to the slower path that names the fault.
        """
        if _STRICT_ORDER.fullmatch(text) is None:
            return None
        labels = [int(label) for label in text.split(",")]
        if (
            min(labels) < 1
            or max(labels) > self.n_items
            or len(set(labels)) < len(labels)
            or (self.data_type in _COMPLETE_TYPES and len(labels) < self.n_items)
        ):
            return None
        return tuple(label - 1 for label in labels)

    def add(self, ranking, count):
        """Count ``count`` voters for ``ranking``; an empty one is dropped."""
        if not ranking:
            self.n_dropped += count
            return
        row = self.index.setdefault(ranking, len(self.orders))
        if row == len(self.orders):
            self.orders.append(ranking)
            self.counts.append(count)
        else:
            self.counts[row] += count

    def groups(self, text, lineno):
        """Split an order into groups of labels: "1,{2,3}" -> [["1"], ["2", "3"]]."""
        if not text.strip():
            raise self.fault(lineno, "empty order: no alternative after the colon.")
        if "{" not in text and "}" not in text:
            return [[token] for token in text.split(",")]
        groups = []
        for token in _TOP_LEVEL_COMMA.split(text):
            token = token.strip()
            inner = token[1:-1]
            if token.startswith("{") and token.endswith("}"):
                if "{" in inner or "}" in inner:
                    raise self.fault(lineno, f"nested braces in {token!r}.")
                groups.append(inner.split(","))
            elif "{" in token or "}" in token:
                raise self.fault(lineno, f"unbalanced braces in {text.strip()!r}.")
            else:
                groups.append([token])
        return groups

    def ranking(self, groups, lineno):
        """Item ids of the strict prefix of an order, after checking every label."""
        seen = set()
        prefix = None  # ids before the first tie, once a tie is found
        ids = []
        for group in groups:
            group_ids = []
            for token in group:
                label = self.integer(token, lineno, "alternative label")
                if label > self.n_items:
                    raise self.fault(
                        lineno,
                        f"alternative {label} out of range: the file has "
                        f"{self.n_items} alternatives, labelled 1..{self.n_items}.",
                    )
                if label in seen:
                    raise self.fault(lineno, f"alternative {label} appears twice.")
                seen.add(label)
                group_ids.append(label - 1)
            if len(group_ids) > 1 and prefix is None:
                if self.ties == "raise":
                    tied = ",".join(str(i + 1) for i in group_ids)
                    raise self.fault(
                        lineno,
                        f"the order ties alternatives {{{tied}}}. The Mallows model "
                        "has no ties, so rankmix refuses them by default; pass "
                        "ties='truncate' to keep each order up to its first tie.",
                    )
                prefix = tuple(ids)
            ids.extend(group_ids)
        if self.data_type in _COMPLETE_TYPES and len(seen) != self.n_items:
            raise self.fault(
                lineno,
                f"a .{self.data_type} file holds complete orders, but this order "
                f"ranks {len(seen)} of the {self.n_items} alternatives.",
            )
        return tuple(ids) if prefix is None else prefix

    def check_totals(self):
        if self.n_lines == 0:
            raise ValueError(f"{self.source}: the file holds no orders.")
        n_voters = sum(self.counts) + self.n_dropped
        for key, found, what in [
            ("NUMBER VOTERS", n_voters, "the counts add up to"),
            ("NUMBER UNIQUE ORDERS", self.n_lines, "the file has order lines:"),
        ]:
            if key not in self.header:
                continue
            lineno = self.header_lines[key]
            stated = self.integer(self.header[key], lineno, key, minimum=0)
            if stated != found:
                raise self.fault(lineno, f"{key} is {stated}, but {what} {found}.")
        if not self.orders:
            raise ValueError(
                f"{self.source}: every order starts with a tie, so ties='truncate' "
                "leaves no ranking."
            )

    def result(self):
        t_max = max(len(ranking) for ranking in self.orders)
        orders = np.full((len(self.orders), t_max), -1, dtype=np.intp)
        for row, ranking in zip(orders, self.orders):
            row[: len(ranking)] = ranking
        # The parse already guarantees this; checking keeps the contract explicit.
        orders = check_rankings(orders, n_items=self.n_items, input_name="orders")
        counts = np.asarray(self.counts, dtype=np.intp)
        names = [
            self.names.get(label, (f"Alternative {label}", None))[0]
            for label in range(1, self.n_items + 1)
        ]
        title = self.header.get("TITLE", "")
        bunch = Bunch(
            data=np.repeat(orders, counts, axis=0),
            orders=orders,
            counts=counts,
            item_names=names,
            n_items=self.n_items,
            title=title,
            data_type=self.data_type,
            header=self.header,
            n_voters_dropped=self.n_dropped,
            filename=None if self.source == "<file object>" else self.source,
        )
        bunch.DESCR = _describe(bunch, self.header.get("DESCRIPTION", ""))
        return bunch


def _describe(bunch, description):
    lengths = np.count_nonzero(bunch.data != -1, axis=1)
    file_name = os.path.basename(bunch.filename or "")
    title = bunch.title or file_name or "PrefLib data"
    kind = _DATA_TYPES.get(bunch.data_type, "type unknown")
    lines = [
        title,
        "=" * len(title),
        "",
        f"PrefLib file {file_name or '(unnamed)'} ({kind}).",
        f"{len(bunch.data)} voters, {bunch.n_items} alternatives, "
        f"{len(bunch.orders)} distinct rankings; ranking lengths "
        f"{lengths.min()}..{lengths.max()}, mean {lengths.mean():.2f}.",
    ]
    if bunch.n_voters_dropped:
        lines.append(
            f"{bunch.n_voters_dropped} voters whose order starts with a tie were "
            "dropped; the other orders were cut at their first tie."
        )
    if description:
        lines += ["", description]
    return "\n".join(lines) + "\n"


_FETCH_PARAMS = {
    "data_home": [str, os.PathLike, None],
    "download_if_missing": ["boolean"],
    "base_url": [str],
}


@validate_params(
    {"name": [str], **_FETCH_PARAMS, "ties": [StrOptions({"raise", "truncate"})]},
    prefer_skip_nested_validation=True,
)
def fetch_preflib(
    name,
    *,
    data_home=None,
    download_if_missing=True,
    base_url=PREFLIB_BASE_URL,
    ties="raise",
):
    """Load a PrefLib file, downloading it into the cache folder the first time.

    The file is kept in ``<data_home>/preflib/<file name>``; once there it is
    read without any network access. A download is written to a temporary file
    and renamed into the cache only once it parses, so the cache never holds a
    partial or broken file.

    Parameters
    ----------
    name : str
        A PrefLib file name such as ``"00001-00000003.soi"``, for the series
        rankmix knows (00001 irish, 00014 sushi, 00028 apa), or the file's
        path relative to ``base_url``, such as
        ``"00001 - irish/00001-00000003.soi"``, for any series.
    data_home : str or path-like, default=None
        The cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If False, raise an OSError instead of downloading a file that is not
        in the cache.
    base_url : str, default=PREFLIB_BASE_URL
        URL of the folder that holds the series folders: PrefLib-Data on GitHub
        (``https://raw.githubusercontent.com/PrefLib/PrefLib-Data/main/datasets/``).
        Replace ``main`` by a commit hash to pin a version. PrefLib's web site,
        ``https://www.preflib.org/static/data/``, names its folders differently
        (``irish/...``), so pass relative paths with it.
    ties : {"raise", "truncate"}, default="raise"
        Handling of tied orders; see :func:`load_preflib`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As returned by :func:`load_preflib`; ``filename`` is the cached file.

    Raises
    ------
    OSError
        If the file is not cached and cannot be downloaded (no network, a
        wrong name, ``download_if_missing=False``).
    ValueError
        If the name is not that of a PrefLib file of orders, or the file is
        malformed.

    See Also
    --------
    load_preflib : Read a PrefLib file.
    fetch_irish, fetch_sushi, fetch_apa : Named PrefLib data sets.

    Examples
    --------
    >>> from rankmix.datasets import fetch_preflib
    >>> meath = fetch_preflib("00001-00000003.soi")  # doctest: +SKIP
    >>> meath.data.shape, meath.title  # doctest: +SKIP
    ((64081, 14), '2002 Meath')
    """
    relative_path = _relative_path(name)
    file_name = relative_path.rsplit("/", 1)[-1]
    folder = os.path.join(get_data_home(data_home), "preflib")
    path = os.path.join(folder, file_name)
    if not os.path.exists(path):
        if not download_if_missing:
            raise OSError(
                f"{file_name} is not in the cache folder {folder} and "
                "download_if_missing=False."
            )
        url = base_url.rstrip("/") + "/" + urllib.parse.quote(relative_path)
        os.makedirs(folder, exist_ok=True)
        _download(url, path, ties)
    return load_preflib(path, ties=ties)


def _relative_path(name):
    """The path of a PrefLib file relative to the base URL."""
    name = name.strip().strip("/")
    file_name = name.rsplit("/", 1)[-1]
    stem, extension = os.path.splitext(file_name)
    if extension.lstrip(".") not in _DATA_TYPES or ".." in name.split("/"):
        raise ValueError(
            f"{name!r} is not a PrefLib file of orders: expected a name such as "
            f"'00001-00000003.soi' with one of the extensions "
            f"{', '.join('.' + t for t in _DATA_TYPES)}."
        )
    if "/" in name:
        return name
    series = stem.split("-", 1)[0]
    if series not in _SERIES_FOLDERS:
        raise ValueError(
            f"rankmix does not know the folder of PrefLib series {series!r}: pass "
            "the path relative to base_url, such as "
            f"'{series} - <abbreviation>/{file_name}' (see the PrefLib-Data "
            "repository for the folder names)."
        )
    return f"{_SERIES_FOLDERS[series]}/{file_name}"


def _download(url, path, ties):
    """Download ``url`` to ``path`` atomically, keeping it only if it parses."""
    folder, file_name = os.path.split(path)
    # A hidden temporary name in the same folder: os.replace is then atomic, and
    # the extension still tells load_preflib the data type.
    descriptor, partial = tempfile.mkstemp(
        dir=folder, prefix=f".{file_name}.", suffix=os.path.splitext(file_name)[1]
    )
    try:
        try:
            with (
                os.fdopen(descriptor, "wb") as out,
                urllib.request.urlopen(url, timeout=_TIMEOUT) as response,
            ):
                shutil.copyfileobj(response, out)
        except urllib.error.HTTPError as exc:
            raise OSError(
                f"Downloading {url} failed: the server answered {exc.code} "
                f"{exc.reason}. Check the name and base_url."
            ) from exc
        except OSError as exc:  # URLError, timeouts, refused connections
            reason = getattr(exc, "reason", exc)
            raise OSError(
                f"Cannot download {url} ({reason}), and {file_name} is not in the "
                f"cache folder {folder}. Connect to the internet, or copy the file "
                "into that folder by hand."
            ) from exc
        try:
            load_preflib(partial, ties=ties)
        except ValueError as exc:
            raise ValueError(
                f"The file downloaded from {url} is not a valid PrefLib file, so it "
                f"was not cached: {exc}"
            ) from exc
        os.replace(partial, path)
    finally:
        with suppress(FileNotFoundError):
            os.remove(partial)


def _with_source(bunch, citation, licence):
    """Append the citation and licence of a named data set to its description."""
    bunch.DESCR += f"\nCitation: {citation}\n\nLicence: {licence}\n"
    return bunch


_PREFLIB_CITATION = (
    "N. Mattei and T. Walsh. PrefLib: A Library of Preference Data. ADT 2013."
)
_PREFLIB_LICENCE = (
    "PrefLib-Data is distributed under the GNU GPL v3 (its LICENSE.md); cite the "
    "data set's required citation and PrefLib."
)

_IRISH_FILES = {
    "dublin_north": "00001-00000001.soi",
    "dublin_west": "00001-00000002.soi",
    "meath": "00001-00000003.soi",
}


@validate_params(
    {"constituency": [StrOptions(set(_IRISH_FILES))], **_FETCH_PARAMS},
    prefer_skip_nested_validation=True,
)
def fetch_irish(
    constituency="meath",
    *,
    data_home=None,
    download_if_missing=True,
    base_url=PREFLIB_BASE_URL,
):
    """Load the 2002 Irish general election ballots of one constituency.

    PrefLib series 00001: single transferable vote ballots, top-t rankings of
    the candidates. Dublin North: 43,942 ballots, 12 candidates; Dublin West:
    29,988 ballots, 9 candidates; Meath: 64,081 ballots, 14 candidates. The
    names include the party (F.F. Fianna Fail, F.G. Fine Gael, Lab Labour,
    G.P. Green Party, S.F. Sinn Fein, S.P. Socialist Party, P.D. Progressive
    Democrats, C.C. Csp Christian Solidarity, Non-P non-party).

    Parameters
    ----------
    constituency : {"meath", "dublin_north", "dublin_west"}, default="meath"
        The constituency.
    data_home : str or path-like, default=None
        The cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If False, raise an OSError instead of downloading a missing file.
    base_url : str, default=PREFLIB_BASE_URL
        See :func:`fetch_preflib`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As returned by :func:`load_preflib`: ``data`` holds one top-t ranking
        per ballot, ``item_names`` the candidates.

    Notes
    -----
    Ballots ranking all but one candidate are kept as they are; see
    :func:`load_preflib`. The ballots were published by the Dublin County
    Returning Officer; the Meath file was donated to PrefLib by Jeffrey O'Neill.

    Citation: Jeffery O'Neill, Open STV, www.OpenSTV.org, 2013; and PrefLib
    (Mattei & Walsh, ADT 2013).

    Licence: PrefLib-Data, GNU GPL v3.

    Examples
    --------
    >>> from rankmix.datasets import fetch_irish
    >>> meath = fetch_irish("meath")  # doctest: +SKIP
    >>> meath.data.shape, meath.item_names[0]  # doctest: +SKIP
    ((64081, 14), 'Johnny Brady F.F.')
    """
    bunch = fetch_preflib(
        _IRISH_FILES[constituency],
        data_home=data_home,
        download_if_missing=download_if_missing,
        base_url=base_url,
    )
    return _with_source(
        bunch,
        "Jeffery O'Neill. Open STV. www.OpenSTV.org, 2013. " + _PREFLIB_CITATION,
        _PREFLIB_LICENCE + " The ballots are public election records.",
    )


# The ALTERNATIVE NAME header of PrefLib's sushi file, which lists Kamishima's
# names in the order of his ids 0..9 against the labels 1..10. The orders use
# label k = Kamishima id k for k = 1..9 and label 10 = id 0, so the header is
# off by one (checked against BayesMallows' sushi_rankings and sushi3a).
_SUSHI_NAMES = [
    "ebi (shrimp)",
    "anago (sea eel)",
    "maguro (tuna)",
    "ika (squid)",
    "uni (sea urchin)",
    "sake (salmon roe)",
    "tamago (egg)",
    "toro (fatty tuna)",
    "tekka-maki (tuna roll)",
    "kappa-maki (cucumber roll)",
]


@validate_params(_FETCH_PARAMS, prefer_skip_nested_validation=True)
def fetch_sushi(*, data_home=None, download_if_missing=True, base_url=PREFLIB_BASE_URL):
    """Load Kamishima's sushi preferences: 5,000 complete rankings of 10 sushi.

    The sushi3a data set, from PrefLib's file 00014-00000001.soc, with its item
    labels corrected. Item ids are Kamishima's: 0 shrimp, 1 sea eel, 2 tuna,
    3 squid, 4 sea urchin, 5 salmon roe, 6 egg, 7 fatty tuna, 8 tuna roll,
    9 cucumber roll.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If False, raise an OSError instead of downloading a missing file.
    base_url : str, default=PREFLIB_BASE_URL
        See :func:`fetch_preflib`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As returned by :func:`load_preflib`, with ``data`` and ``orders`` in
        Kamishima's ids and ``item_names`` to match.

    Raises
    ------
    ValueError
        If the file's alternative names differ from those of the file whose
        label issue is known: the correction could then be wrong.

    Notes
    -----
    The ``ALTERNATIVE NAME`` header of the PrefLib file is off by one: PrefLib
    label k (1..9) is Kamishima's id k and label 10 is his id 0 (shrimp), while
    the header names label k after id k - 1. Read literally, egg (tamago) would
    be the most common favourite; in fact fatty tuna (toro) is. This function
    maps label k to id ``k % 10``.

    Citation: T. Kamishima. Nantonac Collaborative Filtering: Recommendation
    Based on Order Responses. KDD 2003.

    Licence: Kamishima's terms: "You can use this data set for any research
    purpose. You must not redistribute without our permission." The data may
    therefore not be shipped with software: each user downloads it (which this
    function does, into the user's own cache) or obtains it from
    http://www.kamishima.net/sushi/.

    Examples
    --------
    >>> import numpy as np
    >>> from rankmix.datasets import fetch_sushi
    >>> sushi = fetch_sushi()  # doctest: +SKIP
    >>> favourite = np.bincount(sushi.data[:, 0]).argmax()  # doctest: +SKIP
    >>> sushi.item_names[favourite]  # doctest: +SKIP
    'toro (fatty tuna)'
    """
    bunch = fetch_preflib(
        "00014-00000001.soc",
        data_home=data_home,
        download_if_missing=download_if_missing,
        base_url=base_url,
    )
    if bunch.item_names != _SUSHI_NAMES:
        raise ValueError(
            f"{bunch.filename} names its alternatives {bunch.item_names}, not as the "
            "PrefLib sushi file whose off-by-one labels rankmix corrects; the "
            "file has changed, so the correction may no longer apply. Please "
            "report this to the rankmix developers."
        )
    # Loaded id = label - 1, Kamishima id = label % 10.
    to_kamishima = np.append((np.arange(10) + 1) % 10, -1)  # index -1 keeps padding
    bunch.data = to_kamishima[bunch.data]
    bunch.orders = to_kamishima[bunch.orders]
    bunch.DESCR += (
        "\nThe file's ALTERNATIVE NAME header is off by one; item ids here are "
        "Kamishima's (PrefLib label k -> id k % 10) and item_names match them.\n"
    )
    return _with_source(
        bunch,
        "T. Kamishima. Nantonac Collaborative Filtering: Recommendation Based on "
        "Order Responses. KDD 2003.",
        "Kamishima's terms: any research use; no redistribution without his "
        "permission. Do not ship or commit this file.",
    )


@validate_params(
    {"year": [Interval(Integral, 1998, 2009, closed="both")], **_FETCH_PARAMS},
    prefer_skip_nested_validation=True,
)
def fetch_apa(
    year, *, data_home=None, download_if_missing=True, base_url=PREFLIB_BASE_URL
):
    """Load the ballots of an American Psychological Association election.

    PrefLib series 00028: the APA presidential elections of 1998 to 2009, each
    with 5 candidates (named "Candidate 1" to "Candidate 5") and 13,318 to
    20,239 top-t ballots. These are not the classic 1980 APA data of Diaconis
    (1988), which PrefLib does not hold; see :func:`load_apa1980`.

    Parameters
    ----------
    year : int
        The election year, 1998 to 2009 (file 00028-000000NN.soi with
        NN = year - 1997).
    data_home : str or path-like, default=None
        The cache folder; see :func:`get_data_home`.
    download_if_missing : bool, default=True
        If False, raise an OSError instead of downloading a missing file.
    base_url : str, default=PREFLIB_BASE_URL
        See :func:`fetch_preflib`.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        As returned by :func:`load_preflib`.

    Notes
    -----
    Citation: S. Popov, A. Popova and M. Regenwetter. Consensus formation in
    organizations: Hunting for the social choice conundrum in American
    Psychological Association elections. Decision, 2015. The data were donated
    to PrefLib by M. Regenwetter and A. Popova with the APA's permission.

    Licence: PrefLib-Data, GNU GPL v3.

    Examples
    --------
    >>> from rankmix.datasets import fetch_apa
    >>> apa = fetch_apa(1998)  # doctest: +SKIP
    >>> apa.data.shape, apa.title  # doctest: +SKIP
    ((18723, 5), 'APA_1998')
    """
    bunch = fetch_preflib(
        f"00028-{year - 1997:08d}.soi",
        data_home=data_home,
        download_if_missing=download_if_missing,
        base_url=base_url,
    )
    return _with_source(
        bunch,
        "S. Popov, A. Popova and M. Regenwetter. Consensus formation in "
        "organizations: Hunting for the social choice conundrum in American "
        "Psychological Association elections. Decision, 2015. " + _PREFLIB_CITATION,
        _PREFLIB_LICENCE,
    )


_APA1980_N_CANDIDATES = 5


@validate_params(
    {"file": [str, os.PathLike, HasMethods(["read"])]},
    prefer_skip_nested_validation=True,
)
def load_apa1980(file):
    """Read the 1980 APA presidential election ballots (Diaconis 1988) from CSV.

    The classic "APA data" of the ranking literature: 15,449 ballots ranking
    some of 5 candidates (5,738 of them complete). PrefLib does not hold it;
    this reads a CSV file the user supplies, as derived from the R package
    PLMIX's ``d_apa``: ``#`` comment lines, a header ``rank1,...,rank5``, then
    one ballot per row, the candidates (1..5) from most to least preferred,
    with 0 for an unfilled position.

    Parameters
    ----------
    file : str, path-like or file object
        The CSV file.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        The attributes of :func:`load_preflib`'s result: ``data`` holds one
        ranking per ballot (candidate ``k`` is item ``k - 1``), equal ballots
        together; ``item_names`` are "Candidate 1" to "Candidate 5".

    Raises
    ------
    ValueError
        If a row is malformed, naming the line: not 5 fields, a value that is
        not an integer in 0..5, a candidate after an unfilled position, a
        repeated candidate, or an empty ballot.

    Notes
    -----
    PLMIX stores the ballots that rank 4 candidates completed with the fifth,
    so no ballot has length 4; see :func:`load_preflib` on why that does not
    change the model's likelihood.

    Citation: P. Diaconis. Group Representations in Probability and
    Statistics. IMS Lecture Notes 11, 1988, pp. 94-96; and the R package
    PLMIX (C. Mollica and L. Tardella), GPL (>= 2), from which the file is
    derived.

    Examples
    --------
    >>> import io
    >>> from rankmix.datasets import load_apa1980
    >>> csv = io.StringIO("rank1,rank2,rank3,rank4,rank5\\n5,0,0,0,0\\n3,1,0,0,0\\n")
    >>> load_apa1980(csv).data
    array([[ 4, -1],
           [ 2,  0]])
    """
    with _open_lines(file) as (source, lines):
        reader = _PrefLibReader(source, "raise", None)
        reader.n_items = _APA1980_N_CANDIDATES
        reader.names = {
            k: (f"Candidate {k}", None) for k in range(1, _APA1980_N_CANDIDATES + 1)
        }
        reader.header["TITLE"] = "APA 1980 presidential election"
        seen_header = False
        for lineno, line in enumerate(lines, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if not seen_header:
                if not line.lower().startswith("rank"):
                    raise reader.fault(
                        lineno, "expected the header line rank1,rank2,...,rank5."
                    )
                seen_header = True
                continue
            reader.n_lines += 1
            reader.add(_apa1980_ballot(reader, line, lineno), 1)
            if reader.n_dropped:
                raise reader.fault(lineno, "empty ballot: no candidate is ranked.")
        reader.check_totals()
    bunch = reader.result()
    bunch.DESCR = (
        "APA 1980 presidential election\n"
        "==============================\n\n"
        f"{len(bunch.data)} ballots ranking some of 5 candidates "
        f"({np.count_nonzero(bunch.data[:, -1] != -1)} complete), "
        f"{len(bunch.orders)} distinct rankings.\n\n"
        "Citation: P. Diaconis. Group Representations in Probability and "
        "Statistics. IMS Lecture Notes 11, 1988; R package PLMIX (GPL >= 2).\n"
    )
    return bunch


def _apa1980_ballot(reader, line, lineno):
    """The ranking of one CSV row of candidates, 0 marking unfilled positions."""
    fields = line.split(",")
    if len(fields) != _APA1980_N_CANDIDATES:
        raise reader.fault(
            lineno,
            f"expected {_APA1980_N_CANDIDATES} comma-separated fields, got "
            f"{len(fields)}.",
        )
    values = [reader.integer(field, lineno, "candidate", minimum=0) for field in fields]
    t = values.index(0) if 0 in values else len(values)
    if any(values[t:]):
        raise reader.fault(lineno, "a candidate follows an unfilled position (0).")
    return reader.ranking([[str(value)] for value in values[:t]], lineno)
