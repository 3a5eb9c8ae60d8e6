# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Reading the files of ``rankmix fit``: text files of item names, PrefLib files.

A text file holds one ranking per line, item names best first, separated by a
delimiter (a comma by default) and read with the :mod:`csv` module, so that a
quoted name may hold the delimiter. PrefLib files (.soc, .soi, .toc, .toi) go
through :func:`rankmix.datasets.load_preflib`.

A file read the wrong way gives rankings that look plausible to the sampler: a
tab-separated file read as comma-separated is one item per ranking, a header
becomes a ranking of items that exist nowhere else. Such misreads are refused
(exit code 2, naming the line) when the evidence is strong, and reported as
warnings before the fit when it is not, never passed on in silence.
"""

import argparse
import csv
import os
import re
import unicodedata
from dataclasses import dataclass, field

import numpy as np

from ._cli_common import InputError, plural
from .datasets import load_preflib

#: Extensions of the PrefLib files of orders, read with load_preflib.
PREFLIB_EXTENSIONS = (".soc", ".soi", ".toc", ".toi")

# Spelled-out delimiters that --delimiter accepts besides a single character;
# "\t" is the two characters a user types in a shell for a tab.
DELIMITER_NAMES = {
    "comma": ",",
    "tab": "\t",
    "\\t": "\t",
    "semicolon": ";",
    "pipe": "|",
    "space": " ",
}

# Characters that separate items in other people's files. A name that holds one
# of them hints that the file was split with the wrong delimiter.
OTHER_DELIMITERS = (",", ";", "|", ">", " ")

# The header line of a PrefLib file, and an order line "count: a,b,...".
_PREFLIB_HEADER = re.compile(r"#\s*NUMBER ALTERNATIVES\s*:", re.IGNORECASE)
_PREFLIB_ORDER = re.compile(r"\d+\s*:\s*[{\d][\d,{}\s]*")

# Spaces between a closing quote and the next delimiter: '"Smith, J" , b'. The
# csv module refuses them in strict mode; a second parse without them accepts
# what a person typing the file meant.
_SPACE_AFTER_QUOTE = '"[ \t]+(?={})'


@dataclass
class RankingData:
    """Rankings read from a file, ready for DPMallowsClustering.

    Attributes
    ----------
    X : ndarray of shape (n_rankings, t_max), dtype=np.intp
        The rankings as item ids, best first, padded with -1, in file order (for
        PrefLib files, one row per ballot).
    names : list of str
        ``names[i]`` is the name of item ``i``; the number of items is
        ``len(names)``, which may exceed the items the rankings mention.
    kind : {"text", "preflib"}
        How the file was read.
    description : str
        What the file is, for the summary ("" for a text file).
    n_dropped : int
        PrefLib ballots dropped because they start with a tie (``--ties
        truncate``).
    warnings : list of str
        Signs that the file may be misread, to show before the fit.
    """

    X: np.ndarray
    names: list
    kind: str
    description: str = ""
    n_dropped: int = 0
    warnings: list = field(default_factory=list)


def parse_delimiter(text):
    """argparse type of ``--delimiter``: one character, or a spelled-out name.

    Parameters
    ----------
    text : str
        A single character, or one of "comma", "tab", "\\t", "semicolon",
        "pipe", "space".

    Returns
    -------
    delimiter : str
        The single character.
    """
    value = DELIMITER_NAMES.get(text.lower(), text)
    if len(value) != 1 or value in '"#\r\n' or value.isalnum():
        raise argparse.ArgumentTypeError(
            f"expected a single character that is not a letter, a digit, a quote "
            f"or '#', or one of {', '.join(DELIMITER_NAMES)}; got {text!r}"
        )
    return value


def is_preflib(path):
    """Whether ``path`` has the extension of a PrefLib file of orders."""
    return os.path.splitext(os.fspath(path))[1].lower() in PREFLIB_EXTENSIONS


def read_rankings(
    path,
    *,
    file_format="auto",
    delimiter=",",
    header=None,
    missing=None,
    items=None,
    n_items=None,
    ties="raise",
):
    """Read a file of rankings, a text file or a PrefLib file.

    Parameters
    ----------
    path : str
        The file.
    file_format : {"auto", "text", "preflib"}, default="auto"
        "auto" reads files named .soc, .soi, .toc or .toi as PrefLib files and
        any other as text.
    delimiter, header, missing, items
        Options of a text file; see :func:`read_text_rankings`.
    n_items : int, default=None
        Number of items, at least the number of distinct items of the file;
        the items beyond those are named ``(unseen item 1)`` and so on. None
        keeps the file's items.
    ties : {"raise", "truncate"}, default="raise"
        Orders with ties in a PrefLib file; see
        :func:`~rankmix.datasets.load_preflib`.

    Returns
    -------
    data : RankingData

    Raises
    ------
    InputError
        If the file cannot be read, is malformed or looks misread; the message
        names the file and, where there is one, the line.
    """
    if file_format == "preflib" or (file_format == "auto" and is_preflib(path)):
        data = read_preflib_rankings(path, ties=ties)
    else:
        data = read_text_rankings(
            path,
            delimiter=delimiter,
            header=header,
            missing=missing,
            items=items,
            # named text explicitly: the user has seen the PrefLib refusal
            check_preflib=file_format == "auto",
        )
    if n_items is not None:
        if n_items < len(data.names):
            raise InputError(
                f"--n-items {n_items} is smaller than the "
                f"{plural(len(data.names), 'item')} of {path}"
            )
        data.names += [
            f"(unseen item {i})" for i in range(1, n_items - len(data.names) + 1)
        ]
    return data


def _read_bytes(path, size=-1):
    """The bytes of ``path`` (``size`` at most), or an InputError that says why not."""
    try:
        with open(path, "rb") as file:
            return file.read(size)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file of rankings") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the file ({exc.strerror})") from None


def _decode(path, raw):
    """``raw`` as text (UTF-8, with or without a byte order mark)."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(
            f"{path}: the file is UTF-16 text (it starts with a UTF-16 byte order "
            "mark); save it as UTF-8"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{path}, line {line}: not UTF-8 text; save the file as UTF-8"
        ) from None


def _check_name(name, where, hint=""):
    """Refuse a name with control characters: printed raw, they garble output.

    A NUL byte, for instance, prints as nothing, so 'b\\0' and 'b' would show
    as the same name.
    """
    bad = [char for char in name if unicodedata.category(char) == "Cc"]
    if not bad:
        return
    char = bad[0]
    what = {"\t": "a tab", "\x00": "a NUL byte"}.get(
        char, f"the control character {char!r}"
    )
    raise InputError(f"{where}: item name {name!r} holds {what}{hint}")


def read_text_rankings(
    path, *, delimiter=",", header=None, missing=None, items=None, check_preflib=True
):
    """Read a text file of rankings, one per line, item names best first.

    Parameters
    ----------
    path : str
        The file, UTF-8 (a byte order mark is skipped), with any line endings.
        Blank lines and lines whose first non-blank character is '#' are
        skipped. The other lines are split at ``delimiter`` by the :mod:`csv`
        module: a name in double quotes may hold the delimiter (``"Smith,
        J"``), a doubled quote inside stands for one. Whitespace around names is
        stripped.
    delimiter : str, default=","
        The character between names.
    header : bool or None, default=None
        True skips the first line that is not blank or a comment; False reads
        it as a ranking; None reads it as a ranking but refuses a file whose
        first line looks like a header (see Notes).
    missing : str, default=None
        A token that marks an unfilled position at the end of a row, as in top-t
        files padded to a fixed width (``5,2,0,0,0`` with ``missing="0"``).
        Trailing fields equal to it or empty are dropped. None: every field is an
        item name.
    items : list of str, default=None
        The item set, in id order. Every name of the file must be among them;
        the others count as items no ranking mentions. None takes the names of
        the file, numbered in order of first appearance.
    check_preflib : bool, default=True
        Refuse a file that looks like a PrefLib file ("count: a,b" lines).

    Returns
    -------
    data : RankingData

    Raises
    ------
    InputError
        If the file cannot be read or is not UTF-8 text; or a line holds a NUL
        byte, bad quoting, an empty ranking, an item without a name, a name
        with a control character (a tab: the file is tab-separated), an item
        twice, or an item not among ``items``; or every ranking holds a single
        item whose name holds another common delimiter; or the file looks like
        a PrefLib file or has a header (with ``header=None``). The message
        names the file and the line.

    Notes
    -----
    The first line looks like a header when the file has at least three
    rankings, the other rankings share items among themselves, none of the
    first line's items appears in them, and the first line is at least as long
    as any of them: a line of column names such as ``pos1,pos2,pos3``.
    """
    text = _decode(path, _read_bytes(path))
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if check_preflib:
        _refuse_preflib_text(path, lines)
    dialect = {
        "delimiter": delimiter,
        "quotechar": '"',
        "doublequote": True,
        "skipinitialspace": True,
        "strict": True,
    }
    ids = {} if items is None else {name: i for i, name in enumerate(items)}
    rows = []  # (line number, names, whether the line quotes a name)
    header_skipped = header is not True
    for number, line in enumerate(lines, start=1):
        where = f"{path}, line {number}"
        if "\x00" in line:
            raise InputError(
                f"{where}: the line holds a NUL byte; is this a binary file, or "
                "UTF-16 text? Save it as UTF-8 text"
            )
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not header_skipped:
            header_skipped = True
            continue
        names = _split(line, dialect, where)
        # A duplicate or an empty field on the first line is typical of a header
        # (rank,rank,rank); say so next to the fault.
        hint = (
            "; if this line is a header, pass --header to skip it"
            if not rows and header is None
            else ""
        )
        names = _check_ranking(names, where, delimiter, missing, hint)
        if items is not None:
            for name in names:
                if name not in ids:
                    raise InputError(
                        f"{where}: item {name!r} is not among the names of "
                        f"--items{hint}"
                    )
        rows.append((number, names, '"' in line))

    if header is None:
        _refuse_header(path, rows)
    warnings = _misread_warnings(path, rows, delimiter)
    rankings = [
        [ids.setdefault(name, len(ids)) for name in names] for _, names, _ in rows
    ]
    t_max = max((len(ranking) for ranking in rankings), default=0)
    X = np.full((len(rankings), t_max), -1, dtype=np.intp)
    for row, ranking in zip(X, rankings):
        row[: len(ranking)] = ranking
    return RankingData(X=X, names=list(ids), kind="text", warnings=warnings)


def _refuse_preflib_text(path, lines):
    """Refuse a PrefLib file read as a text file: "count: a,b" lines misread."""
    for number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line:
            continue
        if _PREFLIB_HEADER.match(line) or (
            not line.startswith("#") and _PREFLIB_ORDER.fullmatch(line)
        ):
            raise InputError(
                f"{path}, line {number}: this looks like a PrefLib file "
                "('# NUMBER ALTERNATIVES:' header, 'count: a,b,...' orders), not "
                "a text file of item names; pass --format preflib, or name it "
                ".soc, .soi, .toc or .toi (--format text reads it as text)"
            )
        if not line.startswith("#"):
            return  # the first ranking decides; later lines are names


def _split(line, dialect, where):
    """The fields of one line, with the csv module; an InputError for bad quoting."""
    try:
        return next(csv.reader([line], **dialect))
    except csv.Error as exc:
        error = exc
    # Spaces after a closing quote ('"Smith, J" , b') are refused by strict
    # parsing; retry without them, and report the first error if that fails too.
    relaxed = re.sub(
        _SPACE_AFTER_QUOTE.format(re.escape(dialect["delimiter"])), '"', line
    )
    try:
        return next(csv.reader([relaxed], **dialect))
    except csv.Error:
        pass
    raise InputError(
        f"{where}: bad quoting ({error}); a quoted name starts and ends with "
        "'\"' and writes a quote inside as '\"\"'"
    )


# Fillers of the unfilled positions of fixed-width top-t files, lower case:
# one repeated to the end of a line suggests --missing.
_PADDING_TOKENS = frozenset({"0", "-1", "-", ".", "na", "n/a", "nan", "none", "null"})


def _check_ranking(names, where, delimiter, missing, hint):
    """The stripped names of one line, after checking them; an InputError if bad."""
    names = [name.strip() for name in names]
    if missing is not None:
        while names and names[-1] in (missing, ""):
            names.pop()
        if missing in names:
            position = names.index(missing) + 1
            raise InputError(
                f"{where}: position {position} is {missing!r} (--missing) but a "
                "later position is filled; unfilled positions must come last"
            )
    one, many = _delimiter_words(delimiter)
    if not any(names):
        what = "nothing" if missing is not None else f"only {many}"
        raise InputError(f"{where}: empty ranking (the line holds {what}){hint}")
    seen = {}
    tab_hint = (
        "; is the file tab-separated? pass --delimiter tab" if delimiter != "\t" else ""
    )
    for position, name in enumerate(names, start=1):
        if not name:
            raise InputError(
                f"{where}: item {position} has no name (two {many} in a row, or a "
                f"{one} at the start or end of the line){hint}"
            )
        _check_name(name, where, tab_hint if "\t" in name else "")
        if name in seen:
            padding = ""
            if (
                missing is None
                and name.lower() in _PADDING_TOKENS
                and all(n == name for n in names[seen[name] - 1 :])
            ):
                # a usual filler to the end of the line: top-t rankings padded
                # to a fixed width
                padding = f"; if {name!r} pads shorter rankings, pass --missing {name}"
            raise InputError(
                f"{where}: item {name!r} appears twice (positions {seen[name]} "
                f"and {position}); the items of a ranking must be distinct"
                f"{padding}{hint}"
            )
        seen[name] = position
    return names


def _delimiter_words(delimiter):
    """The singular and plural of a delimiter in words: ("comma", "commas")."""
    words = {",": "comma", "\t": "tab", ";": "semicolon", " ": "space"}
    if delimiter in words:
        return words[delimiter], words[delimiter] + "s"
    return f"'{delimiter}'", f"'{delimiter}' characters"


def _refuse_header(path, rows):
    """Refuse a first line that looks like a header rather than a ranking."""
    if len(rows) < 3:
        return
    number, first, _ = rows[0]
    others = [names for _, names, _ in rows[1:]]
    seen = set()
    shared = False  # do the other rankings share items among themselves?
    for names in others:
        shared = shared or not seen.isdisjoint(names)
        seen.update(names)
    if (
        shared
        and seen.isdisjoint(first)
        and len(first) >= max(len(names) for names in others)
    ):
        shown = ", ".join(first[:4]) + (", ..." if len(first) > 4 else "")
        raise InputError(
            f"{path}, line {number}: this line looks like a header, not a "
            f"ranking: its items ({shown}) appear on no other line. Pass --header "
            "to skip it, or --no-header to read it as a ranking"
        )


def _misread_warnings(path, rows, delimiter):
    """Warnings, or an InputError, for names that hold another common delimiter.

    Every ranking one item long, with each name holding the same other
    delimiter, is a file split at the wrong character: an error. Without such
    a character, or with a space (names may hold spaces), it is a warning, as
    are many names that hold another delimiter.
    """
    warnings = []
    if not rows:
        return warnings
    candidates = [char for char in OTHER_DELIMITERS if char != delimiter]
    if all(len(names) == 1 for _, names, _ in rows) and len(rows) >= 2:
        number, (name,), _ = rows[0]
        for char in candidates:
            if all(char in names[0] for _, names, _ in rows):
                message = (
                    f"every ranking holds a single item, and every name holds "
                    f"{_a_char(char)} (line {number}: {name!r}); is the file "
                    f"{_delimiter_words(char)[0]}-separated? pass --delimiter "
                    f"{_shell_delimiter(char)}"
                )
                if char == " ":
                    warnings.append(message)
                    return warnings
                raise InputError(f"{path}: {message}")
        warnings.append(
            f"every ranking holds a single item (line {number}: {name!r}); is the "
            f"file {_delimiter_words(delimiter)[0]}-separated? If not, pass "
            "--delimiter"
        )
        return warnings
    for char in candidates:
        if char == " ":
            continue  # names of several words are common
        # Quoted names are taken to hold the character on purpose.
        hits = [
            (number, name)
            for number, names, quoted in rows
            if not quoted
            for name in names
            if char in name
        ]
        lines_hit = len({number for number, _ in hits})
        if lines_hit and lines_hit >= max(2, len(rows) / 2):
            number, name = hits[0]
            warnings.append(
                f"{lines_hit} of {plural(len(rows), 'ranking')} hold item names "
                f"with {_a_char(char)} (first: line {number}, {name!r}); if "
                f"{_a_char(char)} separates the items, pass --delimiter "
                f"{_shell_delimiter(char)}"
            )
    return warnings


def _a_char(char):
    """A character in a sentence: "a space", "a tab", "';'"."""
    return {" ": "a space", "\t": "a tab"}.get(char, f"'{char}'")


def _shell_delimiter(char):
    """A delimiter as typed in a shell: quoted where the shell would act on it."""
    return {"\t": "tab", " ": "space", ",": ","}.get(char, f"'{char}'")


def read_preflib_rankings(path, *, ties="raise"):
    """Read a PrefLib file of orders with :func:`~rankmix.datasets.load_preflib`.

    Parameters
    ----------
    path : str
        A .soc, .soi, .toc or .toi file (2022 format).
    ties : {"raise", "truncate"}, default="raise"
        What to do with tied orders; see
        :func:`~rankmix.datasets.load_preflib`.

    Returns
    -------
    data : RankingData
        One ranking per ballot: each distinct order repeated ``count`` times,
        what --labels and --subsample count. Ballots of one order come
        together, orders in the order of the file's lines.

    Raises
    ------
    InputError
        If the file cannot be read or is malformed (naming the line), or an
        alternative's name holds a control character.
    """
    _read_bytes(path, 0)  # the errors of a missing or unreadable file, as for text
    try:
        election = load_preflib(path, ties=ties)
    except ValueError as exc:
        message = str(exc).replace("pass ties='truncate'", "pass --ties truncate")
        if "is this a PrefLib file" in message:
            message += " (pass --format text to read it as a text file of names)"
        raise InputError(message) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the file ({exc.strerror})") from None
    for label, name in enumerate(election.item_names, start=1):
        _check_name(name, f"{path}, ALTERNATIVE NAME {label}")
    kind = f"PrefLib {election.data_type}" if election.data_type else "PrefLib"
    return RankingData(
        # load_preflib's data is np.repeat(orders, counts, axis=0): one row per
        # ballot, what --labels and --subsample count. fit(orders,
        # sample_weight=counts) repeats the rows in this same order, so it
        # would give the same draws at the same cost (the chains reuse the
        # scores of consecutive equal rows either way).
        X=election.data,
        names=list(election.item_names),
        kind="preflib",
        description=f"{election.title}, {kind}" if election.title else kind,
        n_dropped=election.n_voters_dropped,
    )
