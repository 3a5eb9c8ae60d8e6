# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Readers of vector and count data: Blei's lda-c corpora and MNIST.

The benchmarks of Liang, Jordan & Taskar (2007) cluster word counts (the AP
corpus, distributed in the sparse format of Blei's lda-c) and vectors (the
MNIST digits). :func:`load_lda_c` and :func:`load_mnist` read files the user
already has; rankmix ships neither data set.
"""

import gzip
import math
import os
import re
import zipfile
import zlib
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from .._sklearn_compat import HasMethods, Interval, StrOptions, validate_params

__all__ = ["load_lda_c", "load_mnist"]

# Term ids, counts and M are read up to this value (and n_features may not
# exceed it + 1), so that the parse works in int64 without overflow and a file
# of a few bytes cannot declare a matrix of 10**15 columns.
_MAX_VALUE = 2**31 - 1
_MAX_DIGITS = len(str(_MAX_VALUE))  # 10

# Byte classes of the lda-c format: digits, ':', the whitespace that may
# separate tokens, and the newline that ends a document.
_NEWLINE = ord("\n")
_COLON = ord(":")
_SPLIT_TOKENS = re.compile("[ \t\r\v\f]+")
_UNSIGNED = re.compile("[0-9]+")
_NEGATIVE = re.compile("-[0-9]+")
_FOREIGN = re.compile("[^0-9:-]")


@validate_params(
    {
        "file": [str, os.PathLike, HasMethods(["read"])],
        "n_features": [Interval(Integral, 1, _MAX_VALUE + 1, closed="both"), None],
        "vocabulary": [str, os.PathLike, HasMethods(["read"]), list, tuple, None],
    },
    prefer_skip_nested_validation=True,
)
def load_lda_c(file, *, n_features=None, vocabulary=None):
    """Read a corpus of word counts in the sparse format of Blei's lda-c.

    Each non-blank line of the file is one document,
    ``M id:count id:count ...``: ``M`` is the number of distinct terms of the
    document, then come ``M`` pairs of a 0-based term id and its count
    (``count >= 1``), in any order, separated by whitespace. The AP corpus of
    Blei's lda-c (``ap.dat``, with its ``vocab.txt``) is in this format.

    Parameters
    ----------
    file : str, path-like or file object
        The corpus, or an open file (text or binary, ASCII or UTF-8).
    n_features : int, default=None
        Number of columns of ``data``. None takes the vocabulary's length if a
        vocabulary is given, else the largest term id of the file plus one.
        Pass it to read several files into matrices of the same width.
    vocabulary : str, path-like, file object or list of str, default=None
        The words of the term ids: a text file of one word per line (line
        ``k + 1`` names term id ``k``, as lda-c's ``vocab.txt``), or a list
        of words. Every id of the corpus must be below its length.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the following attributes.

        data : scipy.sparse.csr_matrix of shape (n_documents, n_features), \
dtype=np.int64
            ``data[d, k]`` counts term id ``k`` in document ``d``, documents
            in file order (blank lines skipped), column indices sorted within
            each row. Never densified: a corpus of real size holds mostly
            zeros.
        feature_names : ndarray of shape (n_features,) of object or None
            The vocabulary's words (str), or None without a vocabulary.
        filename : str or None
            The path read, or the file object's name.
        DESCR : str
            A description of the corpus: its size, tokens and document
            lengths.

    Raises
    ------
    ValueError
        If the file is malformed, naming the file, the 1-based line and the
        fault: ``M`` that differs from the number of pairs, an id or a count
        that is not an integer, a negative id, a count that is not positive
        (0 or negative), a term id repeated within a line, an id that is not
        below ``n_features`` (or the vocabulary's length), a token that is not
        ``id:count`` (a missing or extra ``:``, pairs joined by another
        separator than whitespace), a character other than digits, ``:`` and
        whitespace, or a value beyond the limits below. Also if the file holds
        no document, if the vocabulary has a blank line before its last word
        or repeats a word, or if ``n_features`` and the vocabulary's length
        differ.

    See Also
    --------
    sklearn.datasets.load_svmlight_file : The similar svmlight/libsvm format.

    Notes
    -----
    Blank lines (empty, or only whitespace) hold no document and are skipped,
    as lda-c's own reader (``fscanf``, which skips all whitespace) skips them;
    a document with no term is written ``0``.
    Trailing whitespace and a missing final newline are accepted (the AP file
    ends with both). Lines may end in ``\\r\\n``.

    Limits: ``M``, term ids and counts are read up to 2**31 - 1 (ten digits),
    and ``n_features`` is at most 2**31, which keeps the parse in 64-bit
    integers and the matrix's column count proportionate. Real corpora are far
    below these limits.

    The parse is vectorized over the bytes of the file: the AP corpus (1.9 MB,
    2,246 documents) reads in about a tenth of a second. The line of a fault
    is then re-read alone to name it.

    References
    ----------
    D. M. Blei, A. Y. Ng and M. I. Jordan. Latent Dirichlet Allocation. JMLR
    3:993-1022, 2003 (lda-c: http://www.cs.columbia.edu/~blei/lda-c/).

    Examples
    --------
    >>> import io
    >>> from rankmix.datasets import load_lda_c
    >>> corpus = io.StringIO("2 0:1 3:2\\n1 1:4\\n0\\n")
    >>> vocabulary = io.StringIO("apple\\nbanana\\ncherry\\ndate\\n")
    >>> bunch = load_lda_c(corpus, vocabulary=vocabulary)
    >>> bunch.data.shape, bunch.data.dtype, bunch.data.nnz
    ((3, 4), dtype('int64'), 3)
    >>> bunch.data.toarray()
    array([[1, 0, 0, 2],
           [0, 4, 0, 0],
           [0, 0, 0, 0]])
    >>> bunch.feature_names.tolist()
    ['apple', 'banana', 'cherry', 'date']
    >>> load_lda_c(io.StringIO("2 0:1\\n"))
    Traceback (most recent call last):
        ...
    ValueError: <file object>, line 1: M is 2, but the line has 1 id:count pair.

    The AP corpus of lda-c (with the shared data folder of the project):

    >>> ap = load_lda_c("ap/ap.dat", vocabulary="ap/vocab.txt")  # doctest: +SKIP
    >>> ap.data.shape, ap.data.sum()  # doctest: +SKIP
    ((2246, 10473), np.int64(435838))
    """
    words = None
    if vocabulary is not None:
        words = _read_vocabulary(vocabulary)
        if n_features is not None and n_features != len(words):
            raise ValueError(
                f"n_features is {n_features}, but the vocabulary has "
                f"{len(words)} words."
            )
        n_features = len(words)
    source, content = _read_bytes(file)
    reader = _LdaCReader(source, content, n_features, vocabulary is not None)
    data = reader.read()
    feature_names = None
    if words is not None:
        feature_names = np.empty(len(words), dtype=object)
        feature_names[:] = words
    bunch = Bunch(
        data=data,
        feature_names=feature_names,
        filename=None if source == "<file object>" else source,
    )
    bunch.DESCR = _describe_corpus(bunch)
    return bunch


def _source_name(file):
    name = getattr(file, "name", None)
    return name if isinstance(name, str) else "<file object>"


def _read_bytes(file):
    """A name for messages and the whole content of ``file`` as bytes."""
    if isinstance(file, (str, os.PathLike)):
        source = os.fspath(file)
        with open(source, "rb") as stream:
            content = stream.read()
    else:
        source = _source_name(file)
        content = file.read()
        if isinstance(content, str):
            content = content.encode("utf-8")
    if content.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
        content = content[3:]
    return source, content


def _read_vocabulary(vocabulary):
    """The words of a vocabulary file (one a line) or list, checked."""
    if isinstance(vocabulary, (list, tuple)):
        words = list(vocabulary)
        for k, word in enumerate(words):
            if not isinstance(word, str) or not word.strip():
                raise ValueError(
                    f"vocabulary[{k}] is {word!r}: the words must be non-empty strings."
                )
        source, lines = "vocabulary", None
    else:
        source, content = _read_bytes(vocabulary)
        lines = content.split(b"\n")
        words = []
        for lineno, line in enumerate(lines, start=1):
            try:
                words.append(line.decode("utf-8").strip())
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{source}, line {lineno}: not UTF-8 text ({exc.reason})."
                ) from None
        while words and not words[-1]:
            words.pop()  # the final newline, or trailing blank lines
    if not words:
        raise ValueError(f"{source}: the vocabulary holds no word.")
    first_line = {}
    for k, word in enumerate(words):
        where = f"{source}, line {k + 1}" if lines is not None else f"{source}[{k}]"
        if not word:
            raise ValueError(
                f"{where}: blank line in the vocabulary; line k + 1 names term "
                "id k, so a blank line would shift the ids after it."
            )
        if word in first_line:
            first = first_line[word]
            first = f"line {first + 1}" if lines is not None else f"[{first}]"
            raise ValueError(f"{where}: the word {word!r} repeats {first}.")
        first_line[word] = k
    return words


class _LdaCReader:
    """Parse the bytes of one lda-c file into a CSR matrix of counts.

    The parse works on the whole file at once with NumPy: it finds the runs of
    digits and the colons, checks the grammar of every line from their
    neighbours, and gathers the values. A file with a fault is re-read line by
    line in Python (:meth:`line_fault`) only to name the first fault.
    """

    def __init__(self, source, content, n_features, has_vocabulary):
        self.source = source
        self.content = content
        self.n_features = n_features
        self.has_vocabulary = has_vocabulary

    def fault(self, line, message):
        """The ValueError of a fault on 0-based line ``line``."""
        return ValueError(f"{self.source}, line {line + 1}: {message}")

    def read(self):
        buf = np.frombuffer(self.content, dtype=np.uint8)
        size = buf.size
        newline = buf == _NEWLINE
        digit = (buf >= ord("0")) & (buf <= ord("9"))
        colon = buf == _COLON
        space = (buf == ord(" ")) | (buf == ord("\t")) | (buf == ord("\r"))
        space |= (buf == ord("\v")) | (buf == ord("\f"))
        # The 0-based line of each byte that is not a newline: the newlines
        # before it.
        line_index = np.cumsum(newline, dtype=np.int64)

        def line_of(positions):
            return line_index[positions]

        # Faults of the grammar: (a) a byte that no token may hold.
        bad_lines = []
        bad = ~(digit | colon | space | newline)
        if bad.any():
            bad_lines.append(line_of(np.argmax(bad)))

        # The runs of digits: each is one number (M, an id or a count).
        prev_digit = np.zeros(size, dtype=bool)
        prev_digit[1:] = digit[:-1]
        next_digit = np.zeros(size, dtype=bool)
        next_digit[:-1] = digit[1:]
        starts = np.flatnonzero(digit & ~prev_digit)
        ends = np.flatnonzero(digit & ~next_digit) + 1
        lengths = ends - starts
        run_line = line_of(starts)
        # (b) a number of more than ten digits.
        too_long = lengths > _MAX_DIGITS
        if too_long.any():
            bad_lines.append(run_line[np.argmax(too_long)])

        # (c) a colon without a digit on each side.
        colons = np.flatnonzero(colon)
        colon_ok = prev_digit[colons] & next_digit[colons]
        if not colon_ok.all():
            bad_lines.append(line_of(colons[np.argmin(colon_ok)]))

        # Each run is an id (a colon follows), a count (a colon precedes) or
        # M (neither), which must be the first number of its line and the
        # only M there. (d) A run between two colons is both: "1:2:3".
        after_colon = np.zeros(starts.size, dtype=bool)
        after_colon[starts > 0] = colon[starts[starts > 0] - 1]
        before_colon = np.zeros(starts.size, dtype=bool)
        before_colon[ends < size] = colon[ends[ends < size]]
        both = after_colon & before_colon
        if both.any():
            bad_lines.append(run_line[np.argmax(both)])
        is_m = ~after_colon & ~before_colon
        first_of_line = np.ones(starts.size, dtype=bool)
        first_of_line[1:] = run_line[1:] != run_line[:-1]
        # (e) a line that starts with a pair, or holds a second bare number.
        misplaced = is_m != first_of_line
        if misplaced.any():
            bad_lines.append(run_line[np.argmax(misplaced)])

        # Lines before the first fault of grammar follow it: their ids and
        # counts alternate, each id followed by its count. The checks of
        # values look at those lines only.
        limit = min(bad_lines) if bad_lines else np.inf
        keep = run_line < limit
        values = self.values(buf, starts, ends, lengths)
        keep_values = values[keep]
        keep_line = run_line[keep]
        is_m, is_id = is_m[keep], before_colon[keep]
        is_count = after_colon[keep]
        m_values = keep_values[is_m]
        document_lines = keep_line[is_m]
        ids = keep_values[is_id]
        counts = keep_values[is_count]
        pair_lines = keep_line[is_id]
        document_of_run = np.cumsum(is_m) - 1
        pair_documents = document_of_run[is_id]
        n_documents = m_values.size

        # (f) a value beyond the limit; (g) a count of 0.
        too_large = keep_values > _MAX_VALUE
        if too_large.any():
            bad_lines.append(keep_line[np.argmax(too_large)])
        zero = counts == 0
        if zero.any():
            bad_lines.append(pair_lines[np.argmax(zero)])
        # (h) M that differs from the number of pairs of its line.
        n_pairs = np.bincount(pair_documents, minlength=n_documents)
        mismatch = n_pairs != m_values
        if mismatch.any():
            bad_lines.append(document_lines[np.argmax(mismatch)])
        # (i) an id not below n_features.
        if self.n_features is not None:
            out_of_range = ids >= self.n_features
            if out_of_range.any():
                bad_lines.append(pair_lines[np.argmax(out_of_range)])
            n_features = self.n_features
        else:
            n_features = int(ids.max()) + 1 if ids.size else 0
        # (j) an id twice in a line: sort the pairs by (document, id).
        width = max(int(ids.max()) + 1 if ids.size else 1, 1)
        order = np.argsort(pair_documents * width + ids, kind="stable")
        sorted_ids = ids[order]
        sorted_documents = pair_documents[order]
        repeated = (sorted_ids[1:] == sorted_ids[:-1]) & (
            sorted_documents[1:] == sorted_documents[:-1]
        )
        if repeated.any():
            bad_lines.append(pair_lines[order[1:][np.argmax(repeated)]])

        if bad_lines:
            self.raise_first_fault(int(min(bad_lines)))
        if n_documents == 0:
            raise ValueError(f"{self.source}: the file holds no document.")
        indptr = np.zeros(n_documents + 1, dtype=np.int64)
        np.cumsum(n_pairs, out=indptr[1:])
        return sp.csr_matrix(
            (counts[order], sorted_ids, indptr), shape=(n_documents, n_features)
        )

    @staticmethod
    def values(buf, starts, ends, lengths):
        """The value of each run of digits (garbage for runs too long)."""
        if starts.size == 0:
            return np.zeros(0, dtype=np.int64)
        last = ends - 1
        values = buf[last].astype(np.int64) - ord("0")
        # One pass per digit, from the units up; digits beyond the tenth are
        # ignored: such runs are faults already.
        power = 1
        for k in range(1, min(int(lengths.max()), _MAX_DIGITS)):
            power *= 10
            position = last - k
            digits = buf[position].astype(np.int64) - ord("0")
            values += np.where(position >= starts, digits, 0) * power
        return values

    def raise_first_fault(self, line):
        """Re-read 0-based line ``line`` in Python and raise its first fault."""
        lines = self.content.split(b"\n", line + 1)
        text = lines[line].decode("utf-8", errors="replace")
        message = self.line_fault(text)
        # The vectorized checks and this one read the same grammar; should they
        # ever disagree, the file is still refused.
        raise self.fault(
            line, message or "malformed line: expected 'M id:count id:count ...'."
        )

    def line_fault(self, text):
        """The first fault of one line of text, or None for a valid line."""
        tokens = [token for token in _SPLIT_TOKENS.split(text) if token]
        if not tokens:
            return None
        if ":" in tokens[0]:
            return (
                f"the line starts with {tokens[0]!r}: a line holds M, the number "
                "of distinct terms, then M id:count pairs."
            )
        m, fault = _integer(tokens[0], "M (the number of distinct terms)")
        if fault:
            return fault
        seen = set()
        for token in tokens[1:]:
            id_text, colon, count_text = token.partition(":")
            if not colon or ":" in count_text:
                foreign = _FOREIGN.search(token)
                kind = (
                    f"unexpected {foreign.group()!r}"
                    if foreign
                    else "no ':'"
                    if not colon
                    else "more than one ':'"
                )
                return (
                    f"bad pair {token!r} ({kind}): a line holds M, then M "
                    "id:count pairs separated by whitespace."
                )
            term, fault = _integer(id_text, f"id of the pair {token!r}")
            if fault:
                return fault
            count, fault = _integer(count_text, f"count of the pair {token!r}")
            if fault:
                return fault
            if count == 0:
                return f"count 0 of term id {term}: counts must be positive."
            if self.n_features is not None and term >= self.n_features:
                what = "the vocabulary has" if self.has_vocabulary else "n_features is"
                return (
                    f"term id {term} is out of range: {what} {self.n_features} "
                    f"(ids 0..{self.n_features - 1})."
                )
            if term in seen:
                return f"term id {term} appears twice in the line."
            seen.add(term)
        n_pairs = len(tokens) - 1
        if n_pairs != m:
            plural = "pair" if n_pairs == 1 else "pairs"
            return f"M is {m}, but the line has {n_pairs} id:count {plural}."
        return None


def _integer(text, what):
    """``(value, None)`` for a non-negative integer of text, else ``(None, fault)``."""
    if _UNSIGNED.fullmatch(text):
        digits = text.lstrip("0") or "0"
        if len(digits) > _MAX_DIGITS or int(digits) > _MAX_VALUE:
            shown = digits if len(digits) <= 20 else f"{digits[:12]}..."
            return None, (
                f"{what}, {shown}, is too large: rankmix reads values up to "
                f"{_MAX_VALUE}."
            )
        if len(text) > _MAX_DIGITS:
            return None, f"{what}, {text!r}, has more than {_MAX_DIGITS} digits."
        return int(digits), None
    if not text:
        return None, f"{what} is missing."
    if what.startswith("count") and _NEGATIVE.fullmatch(text):
        return None, f"{what}, {text}, is negative: counts must be positive."
    if _NEGATIVE.fullmatch(text):
        return None, f"{what}, {text}, is negative."
    return None, (
        f"{what}, {text!r}, is not an integer (a line holds M, then M id:count "
        "pairs of integers separated by whitespace)."
    )


def _describe_corpus(bunch):
    data = bunch.data
    lengths = np.asarray(data.sum(axis=1)).ravel()
    title = "lda-c corpus"
    if bunch.filename:
        title += f" {os.path.basename(bunch.filename)}"
    vocabulary = (
        "with a vocabulary" if bunch.feature_names is not None else "no vocabulary"
    )
    return (
        f"{title}\n{'=' * len(title)}\n\n"
        f"{data.shape[0]} documents, {data.shape[1]} features ({vocabulary}), "
        f"{data.nnz} non-zero (document, term) entries, {int(lengths.sum())} "
        f"tokens; document length {int(lengths.min())}..{int(lengths.max())} "
        f"tokens, mean {lengths.mean():.2f}.\n\n"
        "Format: Blei's lda-c, one document a line, 'M id:count id:count ...' "
        "with 0-based term ids.\n"
    )


# ----------------------------------------------------------------------------
# MNIST
# ----------------------------------------------------------------------------

_MNIST_SHAPE = (28, 28)
_MNIST_PREFIXES = {"train": "train", "test": "t10k"}
# idx magic numbers: 0x0000 0x08 (unsigned byte) then the number of dimensions.
_IDX_MAGIC = {"images": 0x00000803, "labels": 0x00000801}
_IDX_NDIM = {"images": 3, "labels": 1}
_NPZ_NAME = "mnist.npz"
_CHUNK = 2**24  # bytes read at a time from a gzipped file


@validate_params(
    {
        "path_or_folder": [str, os.PathLike],
        "subset": [StrOptions({"train", "test", "all"})],
        "scale": ["boolean"],
        "return_X_y": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def load_mnist(path_or_folder, *, subset="train", scale=False, return_X_y=False):
    """Read the MNIST handwritten digits from LeCun's idx files or an .npz.

    Parameters
    ----------
    path_or_folder : str or path-like
        Either a folder that holds LeCun's four idx files,
        ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``,
        ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (each may be
        gzipped, with or without a ``.gz`` suffix, and each ``-idx`` may be
        ``.idx`` as in some copies), or else ``mnist.npz``; or the path of an
        .npz archive holding ``x_train``, ``y_train``, ``x_test`` and
        ``y_test`` (the layout of Keras' ``mnist.npz``). Only the files of
        ``subset`` are read.
    subset : {"train", "test", "all"}, default="train"
        The 60,000 training images, the 10,000 test images, or all 70,000,
        training images first.
    scale : bool, default=False
        If False, pixels are the file's grey levels, uint8 in 0..255. If
        True, they are float64 in [0, 1] (level / 255); ``data`` of all 70,000
        images then takes 439 MB instead of 55 MB.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch, as
        scikit-learn's loaders do.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the following attributes.

        data : ndarray of shape (n_images, 784), dtype=np.uint8 or np.float64
            One flattened image a row, in file order (not shuffled).
        images : ndarray of shape (n_images, 28, 28)
            The same pixels as images: a view of ``data`` (no copy), so a
            change to one shows in the other.
        target : ndarray of shape (n_images,), dtype=np.intp
            The digit of each image, 0..9.
        target_names : ndarray of shape (10,)
            The digits 0..9.
        filename : str
            The folder or the .npz archive read.
        DESCR : str
            A description of the data: the subset, its size and its label
            counts.

    (data, target) : tuple if ``return_X_y`` is True
        The flattened images and their digits, as described above.

    Raises
    ------
    ValueError
        If an idx file has the wrong magic number (2051 for images, 2049 for
        labels: 0x0803 and 0x0801 after two zero bytes), images that are not
        28 x 28, a size that its header does not declare (a truncated file or
        trailing bytes), or if images and labels differ in number, a label is
        not in 0..9, or the .npz archive lacks an array or holds one of the
        wrong shape or dtype. Also if ``path_or_folder`` is a file that is not
        an .npz (zip) archive.
    FileNotFoundError
        If ``path_or_folder`` does not exist, or is a folder without the idx
        files of ``subset`` and without ``mnist.npz``.

    Notes
    -----
    Fashion-MNIST and other data sets in MNIST's file layout (28 x 28 images,
    labels 0..9, the same file names) read too.

    References
    ----------
    Y. LeCun, L. Bottou, Y. Bengio and P. Haffner. Gradient-based learning
    applied to document recognition. Proc. IEEE 86(11):2278-2324, 1998;
    http://yann.lecun.com/exdb/mnist/.

    Examples
    --------
    Two training images and one test image in an .npz archive:

    >>> import os, tempfile
    >>> import numpy as np
    >>> from rankmix.datasets import load_mnist
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "tiny.npz")
    >>> pixels = np.arange(3 * 28 * 28).reshape(3, 28, 28).astype(np.uint8)
    >>> np.savez(path, x_train=pixels[:2], y_train=np.array([7, 1], np.uint8),
    ...          x_test=pixels[2:], y_test=np.array([3], np.uint8))
    >>> mnist = load_mnist(path, subset="all")
    >>> mnist.data.shape, mnist.images.shape, mnist.target
    ((3, 784), (3, 28, 28), array([7, 1, 3]))
    >>> load_mnist(path, subset="test", scale=True).data.max()
    np.float64(1.0)
    >>> X, y = load_mnist(path, subset="all", return_X_y=True)
    >>> X.shape, y
    ((3, 784), array([7, 1, 3]))
    >>> tmp.cleanup()

    The real data (with the shared data folder of the project):

    >>> mnist = load_mnist("mnist/mnist.npz")  # doctest: +SKIP
    >>> mnist.data.shape, np.bincount(mnist.target)[:3]  # doctest: +SKIP
    ((60000, 784), array([5923, 6742, 5958]))
    """
    path = os.fspath(path_or_folder)
    parts = ["train", "test"] if subset == "all" else [subset]
    if os.path.isdir(path):
        names = _idx_files(path, parts)
        if names is not None:
            arrays = [
                _read_idx_pair(names[part]["images"], names[part]["labels"])
                for part in parts
            ]
        else:
            npz = os.path.join(path, _NPZ_NAME)
            if not os.path.isfile(npz):
                wanted = ", ".join(
                    _idx_name(_MNIST_PREFIXES[part], kind)
                    for part in parts
                    for kind in ("images", "labels")
                )
                raise FileNotFoundError(
                    f"{path} holds neither the MNIST idx files {wanted} (each may "
                    f"end in .gz) nor {_NPZ_NAME}."
                )
            arrays = _read_npz(npz, parts)
    elif os.path.isfile(path):
        if not zipfile.is_zipfile(path):
            raise ValueError(
                f"{path} is not an .npz archive: load_mnist reads a folder of "
                "MNIST idx files or an .npz archive with x_train, y_train, "
                "x_test and y_test."
            )
        arrays = _read_npz(path, parts)
    else:
        raise FileNotFoundError(f"No such file or folder: {path!r}.")

    if len(arrays) == 1:
        images, target = arrays[0]
    else:
        images = np.concatenate([images for images, _ in arrays])
        target = np.concatenate([target for _, target in arrays])
    n_images = images.shape[0]
    data = images.reshape(n_images, -1)
    if scale:
        data = data / 255.0
    elif not data.flags.writeable:
        data = data.copy()
    target = target.astype(np.intp)
    if return_X_y:
        return data, target
    bunch = Bunch(
        data=data,
        images=data.reshape(n_images, *_MNIST_SHAPE),
        target=target,
        target_names=np.arange(10),
        filename=path,
    )
    bunch.DESCR = _describe_mnist(bunch, subset)
    return bunch


def _idx_name(prefix, kind):
    return f"{prefix}-{kind}-idx{_IDX_NDIM[kind]}-ubyte"


def _idx_files(folder, parts):
    """The idx files of ``parts`` in ``folder``, or None if one is missing."""
    names = {}
    for part in parts:
        names[part] = {}
        for kind in ("images", "labels"):
            name = _idx_name(_MNIST_PREFIXES[part], kind)
            dotted = name.replace("-idx", ".idx")
            candidates = [name, name + ".gz", dotted, dotted + ".gz"]
            for candidate in candidates:
                candidate = os.path.join(folder, candidate)
                if os.path.isfile(candidate):
                    names[part][kind] = candidate
                    break
            else:
                return None
    return names


def _read_idx_pair(images_path, labels_path):
    images = _read_idx(images_path, "images")
    labels = _read_idx(labels_path, "labels")
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"{images_path} holds {images.shape[0]} images, but {labels_path} "
            f"holds {labels.shape[0]} labels."
        )
    _check_labels(labels, labels_path)
    return images, labels


def _read_idx(path, kind):
    """The uint8 array of one idx file (gzipped or not), header checked."""
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == b"\x1f\x8b"
    opener = gzip.open if gzipped else open
    try:
        with opener(path, "rb") as stream:
            return _read_idx_stream(stream, path, kind, gzipped)
    except (OSError, EOFError, zlib.error) as exc:
        if not gzipped:
            raise
        raise ValueError(f"{path}: not a valid gzip file ({exc}).") from None


def _read_idx_stream(stream, path, kind, gzipped):
    ndim = _IDX_NDIM[kind]
    header = stream.read(4 + 4 * ndim)
    if len(header) < 4:
        raise ValueError(f"{path}: {len(header)} bytes, too short for an idx file.")
    magic = int.from_bytes(header[:4], "big")
    if magic != _IDX_MAGIC[kind]:
        other = [k for k, value in _IDX_MAGIC.items() if value == magic]
        hint = f" (the magic number of MNIST {other[0]})" if other else ""
        raise ValueError(
            f"{path}: magic number {magic}{hint}, expected {_IDX_MAGIC[kind]} for "
            f"MNIST {kind} (unsigned bytes, {ndim} dimension"
            f"{'s' if ndim > 1 else ''})."
        )
    if len(header) < 4 + 4 * ndim:
        raise ValueError(f"{path}: the header ends before its {ndim} sizes.")
    shape = tuple(
        int.from_bytes(header[4 + 4 * k : 8 + 4 * k], "big") for k in range(ndim)
    )
    if kind == "images" and shape[1:] != _MNIST_SHAPE:
        raise ValueError(
            f"{path}: images of {shape[1]} x {shape[2]} pixels, expected 28 x 28."
        )
    expected = math.prod(shape)
    header_size = 4 + 4 * ndim
    if gzipped:
        payload = bytearray()
        while len(payload) <= expected:
            chunk = stream.read(min(_CHUNK, expected + 1 - len(payload)))
            if not chunk:
                break
            payload += chunk
        found = len(payload)
        if found == expected:
            found += len(stream.read(1))
    else:
        found = os.fstat(stream.fileno()).st_size - header_size
    if found != expected:
        what = "truncated" if found < expected else "has trailing bytes"
        dims = " x ".join(str(n) for n in shape)
        raise ValueError(
            f"{path} {what}: its header declares {dims} = {expected} bytes of "
            f"{kind}, but {'at least ' if found > expected else ''}{found} follow."
        )
    if not gzipped:
        # The size is checked, so this allocates no more than the file holds.
        payload = bytearray(expected)
        stream.readinto(payload)
    return np.frombuffer(payload, dtype=np.uint8).reshape(shape)


def _check_labels(labels, source):
    if labels.size and labels.max() > 9:
        raise ValueError(
            f"{source}: label {labels.max()} at position {np.argmax(labels > 9)}; "
            "MNIST labels are digits 0..9."
        )


def _read_npz(path, parts):
    """``[(images, labels)]`` of each part from an .npz archive, checked."""
    arrays = []
    with np.load(path, allow_pickle=False) as archive:
        for part in parts:
            x_key, y_key = f"x_{part}", f"y_{part}"
            for key in (x_key, y_key):
                if key not in archive.files:
                    raise ValueError(
                        f"{path} has no array {key!r} (it holds "
                        f"{', '.join(archive.files) or 'none'}); an MNIST .npz "
                        "holds x_train, y_train, x_test and y_test."
                    )
            try:
                images, labels = archive[x_key], archive[y_key]
            except ValueError as exc:  # an array of objects, which needs pickle
                raise ValueError(f"{path}: {exc}") from None
            if images.dtype != np.uint8:
                raise ValueError(
                    f"{path}: {x_key} has dtype {images.dtype}, expected uint8 "
                    "grey levels 0..255."
                )
            n_pixels = _MNIST_SHAPE[0] * _MNIST_SHAPE[1]
            if images.ndim == 2 and images.shape[1] == n_pixels:
                images = images.reshape(-1, *_MNIST_SHAPE)
            if images.ndim != 3 or images.shape[1:] != _MNIST_SHAPE:
                raise ValueError(
                    f"{path}: {x_key} has shape {images.shape}, expected "
                    f"(n, 28, 28) or (n, {n_pixels})."
                )
            if (
                labels.ndim != 1
                or labels.dtype.kind not in "iu"
                or labels.shape[0] != images.shape[0]
            ):
                raise ValueError(
                    f"{path}: {y_key} has shape {labels.shape} and dtype "
                    f"{labels.dtype}, expected ({images.shape[0]},) integers, one "
                    f"label for each image of {x_key}."
                )
            if labels.size and labels.min() < 0:
                raise ValueError(
                    f"{path}: {y_key} holds the label {labels.min()}; MNIST labels "
                    "are digits 0..9."
                )
            _check_labels(labels, f"{path}: {y_key}")
            arrays.append((images, labels))
    return arrays


def _describe_mnist(bunch, subset):
    counts = np.bincount(bunch.target, minlength=10)
    which = {
        "train": "the training set",
        "test": "the test set",
        "all": "the training then the test set",
    }[subset]
    pixels = (
        "float64 in [0, 1] (grey level / 255)"
        if bunch.data.dtype == np.float64
        else "uint8 grey levels 0..255"
    )
    return (
        "MNIST handwritten digits\n"
        "========================\n\n"
        f"{bunch.data.shape[0]} images of 28 x 28 pixels ({which}), {pixels}; "
        f"read from {bunch.filename}.\n"
        f"Label counts 0..9: {' '.join(str(c) for c in counts)}.\n\n"
        "Y. LeCun, C. Cortes and C. J. C. Burges, The MNIST database of "
        "handwritten digits, http://yann.lecun.com/exdb/mnist/ ; Y. LeCun, "
        "L. Bottou, Y. Bengio and P. Haffner, Gradient-based learning applied to "
        "document recognition, Proc. IEEE 86(11):2278-2324, 1998.\n"
    )
