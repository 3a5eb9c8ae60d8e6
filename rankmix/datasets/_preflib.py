# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Reading the PrefLib file format into rankings.

PrefLib (Mattei & Walsh 2013, https://www.preflib.org) stores preference data in
a small text format (2022 edition): ``#`` header lines, among them ``NUMBER
ALTERNATIVES``, ``NUMBER VOTERS`` and ``ALTERNATIVE NAME k``, then one line per
distinct order, ``count: a1,a2,...,at``, with 1-based labels, most preferred
first. Orders with ties write the tied alternatives as a group, ``{a,b}``.
:func:`load_preflib` reads any such file; the download cache and the named data
sets are in :mod:`rankmix.datasets._fetchers`.
"""

import os
import re
from contextlib import contextmanager

import numpy as np
from sklearn.utils import Bunch

from .._sklearn_compat import HasMethods, StrOptions, validate_params
from .._validation import _MAX_N_ITEMS, check_rankings

__all__ = ["load_preflib"]

_DATA_TYPES = {
    "soc": "strict orders, complete",
    "soi": "strict orders, incomplete (top-t)",
    "toc": "orders with ties, complete",
    "toi": "orders with ties, incomplete",
}
_COMPLETE_TYPES = ("soc", "toc")

_INTEGER = re.compile(r"\s*([0-9]+)\s*")
_STRICT_ORDER = re.compile(r"\s*[0-9]+\s*(?:,\s*[0-9]+\s*)*")
_ALTERNATIVE_NAME = re.compile(r"ALTERNATIVE NAME\s+(\S+)")
# A comma that is not inside braces: "1,{2,3},4" splits into "1", "{2,3}", "4".
_TOP_LEVEL_COMMA = re.compile(r",(?![^{]*\})")

# Limits on what a file may declare, so that a file of a few bytes cannot make
# the reader allocate gigabytes (see "Limits" in the load_preflib docstring).
# ``data`` expands the counts: at most 2**27 entries (1 GiB of np.intp).
_MAX_DATA_ENTRIES = 2**27
# Alternatives that no line of the file mentions (in an order or an
# ALTERNATIVE NAME line) each get a generated name and count as an item nobody
# ranked. A 2022 file names every alternative; this leaves room for older files
# that omit names while keeping the item list proportional to the file.
_MAX_UNMENTIONED = 2**16
# Integers longer than this are refused before Python converts them.
_MAX_DIGITS = 30


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
        refused too, and so are files beyond the limits below.

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

    Limits. A file of a few bytes can declare any number, so the reader bounds
    what it allocates, naming the file and line that goes beyond:
    ``NUMBER ALTERNATIVES`` is at most 2**31 (the item ids of the model), and
    at most 65,536 alternatives may go unmentioned by every line of the file
    (a 2022 file names all of them in ``ALTERNATIVE NAME`` lines; each
    unmentioned one gets a generated name); ``data``, the counts expanded, may
    hold at most 2**27 entries (voters times the longest ranking, 1 GiB); an
    integer may have at most 30 digits. Real PrefLib files are far below
    these limits.

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
        self.n_kept = 0  # voters whose ranking goes into data
        self.t_max = 0  # longest ranking kept
        self.mentioned = set()  # labels of the orders' slow path (ties, faults)

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

    def integer(self, text, lineno, what, minimum=1, maximum=None):
        match = _INTEGER.fullmatch(text)
        # Refuse very long digit strings before int() (Python limits how long a
        # string it converts, with a message that names no file).
        digits = match.group(1).lstrip("0") if match is not None else ""
        if match is not None and len(digits) > _MAX_DIGITS:
            raise self.fault(
                lineno,
                f"{what} {digits[:12]}... ({len(digits)} digits) is too large.",
            )
        if match is None or int(match.group(1)) < minimum:
            kind = "positive" if minimum > 0 else "non-negative"
            raise self.fault(
                lineno, f"bad {what} {text.strip()!r}: expected a {kind} integer."
            )
        value = int(match.group(1))
        if maximum is not None and value > maximum:
            raise self.fault(
                lineno, f"{what} {value} is too large: rankmix reads at most {maximum}."
            )
        return value

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
            maximum=_MAX_N_ITEMS,
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
        count = self.integer(count_text, lineno, "count", maximum=_MAX_DATA_ENTRIES)
        ranking = self.strict_ranking(order_text)
        if ranking is None:
            ranking = self.ranking(self.groups(order_text, lineno), lineno)
        self.add(ranking, count, lineno)

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

    def add(self, ranking, count, lineno=None):
        """Count ``count`` voters for ``ranking``; an empty one is dropped.

        ``lineno`` (of the order, for the message if the voters get too many)
        is None for readers of other formats that count one voter a line.
        """
        if not ranking:
            self.n_dropped += count
            return
        self.n_kept += count
        self.t_max = max(self.t_max, len(ranking))
        if self.n_kept * self.t_max > _MAX_DATA_ENTRIES:
            message = (
                f"the counts up to this line add up to {self.n_kept} voters "
                f"with rankings of up to {self.t_max} alternatives: expanded "
                f"into `data`, they would exceed the {_MAX_DATA_ENTRIES} "
                f"entries ({_MAX_DATA_ENTRIES * 8 // 2**30} GiB) rankmix reads."
            )
            if lineno is None:
                raise ValueError(f"{self.source}: {message}")
            raise self.fault(lineno, message)
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
        self.mentioned.update(seen)
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
        self.check_mentions()

    def check_mentions(self):
        """Refuse a NUMBER ALTERNATIVES far beyond what the file's lines mention."""
        if self.n_items <= _MAX_UNMENTIONED:
            return
        mentioned = set(self.names).union(self.mentioned)
        for ranking in self.orders:
            mentioned.update(item + 1 for item in ranking)
        unmentioned = self.n_items - len(mentioned)
        if unmentioned > _MAX_UNMENTIONED:
            raise self.fault(
                self.header_lines["NUMBER ALTERNATIVES"],
                f"NUMBER ALTERNATIVES is {self.n_items}, but the file's orders and "
                f"ALTERNATIVE NAME lines mention only {len(mentioned)} of them. "
                f"rankmix reads at most {_MAX_UNMENTIONED} alternatives that no "
                "line mentions (each would get a generated name and enter the "
                "model as an item nobody ranked); is NUMBER ALTERNATIVES right?",
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
