# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Tests of the readers of vectors and counts: lda-c corpora and MNIST.

The real files (the AP corpus, MNIST) come from the shared data folder next to
the repository; every other file is written by the test.
"""

import gzip
import io
import re

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_array_equal

from rankmix._sklearn_compat import InvalidParameterError
from rankmix.datasets import load_lda_c, load_mnist

# ----------------------------------------------------------------------------
# lda-c
# ----------------------------------------------------------------------------

CORPUS = "3 5:1 0:2 2:7\n1 1:4\n0\n2 2:1 5:3\n"
DENSE = np.array(
    [
        [2, 0, 7, 0, 0, 1],
        [0, 4, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0],
        [0, 0, 1, 0, 0, 3],
    ]
)


def lda_c(text, **kwargs):
    return load_lda_c(io.StringIO(text), **kwargs)


def test_lda_c_reads_counts_into_a_canonical_csr_matrix():
    bunch = lda_c(CORPUS)
    X = bunch.data
    assert sp.issparse(X) and X.format == "csr"
    assert isinstance(X, sp.csr_matrix)
    assert X.dtype == np.int64
    assert X.shape == (4, 6)  # the largest id is 5
    assert X.has_canonical_format  # indices sorted within rows, no duplicates
    assert_array_equal(X.toarray(), DENSE)
    assert bunch.feature_names is None
    assert bunch.filename is None
    assert "4 documents, 6 features" in bunch.DESCR


def test_lda_c_descr_counts_tokens():
    bunch = lda_c(CORPUS)
    assert f"{DENSE.sum()} tokens" in bunch.DESCR
    assert f"{np.count_nonzero(DENSE)} non-zero" in bunch.DESCR
    assert "document length 0..10 tokens" in bunch.DESCR


def test_lda_c_reads_a_path_and_binary_and_text_files(tmp_path):
    path = tmp_path / "corpus.dat"
    path.write_text(CORPUS)
    from_path = load_lda_c(path)
    assert from_path.filename == str(path)
    assert "corpus.dat" in from_path.DESCR
    assert_array_equal(from_path.data.toarray(), DENSE)
    assert load_lda_c(str(path)).filename == str(path)
    with open(path, "rb") as binary:
        bunch = load_lda_c(binary)
    assert bunch.filename == str(path)
    assert_array_equal(bunch.data.toarray(), DENSE)
    with open(path) as text:
        assert_array_equal(load_lda_c(text).data.toarray(), DENSE)
    assert_array_equal(load_lda_c(io.BytesIO(CORPUS.encode())).data.toarray(), DENSE)


@pytest.mark.parametrize(
    "text",
    [
        CORPUS.rstrip("\n"),  # no final newline
        CORPUS.rstrip("\n") + "     ",  # the AP file's last line
        CORPUS + "\n\n   \n",  # trailing blank lines
        "\n  \n" + CORPUS,  # leading blank lines
        CORPUS.replace("\n", "\r\n"),  # Windows line ends
        CORPUS.replace(" ", "\t"),
        CORPUS.replace(" ", "  \t "),
        "  " + CORPUS.replace("\n", "  \n  "),
        "\ufeff" + CORPUS,  # a byte order mark
        CORPUS.replace("5:1", "005:01"),  # leading zeros
    ],
)
def test_lda_c_tolerates_whitespace_variants(text):
    assert_array_equal(lda_c(text).data.toarray(), DENSE)


def test_lda_c_blank_lines_hold_no_document():
    X = lda_c("1 0:1\n\n \t \n1 1:2\n").data
    assert_array_equal(X.toarray(), [[1, 0], [0, 2]])


def test_lda_c_empty_documents():
    X = lda_c("0\n0\n", n_features=3).data
    assert X.shape == (2, 3) and X.nnz == 0
    assert lda_c("0\n").data.shape == (1, 0)


def test_lda_c_n_features_widens_the_matrix():
    X = lda_c(CORPUS, n_features=10).data
    assert X.shape == (4, 10)
    assert_array_equal(X.toarray()[:, :6], DENSE)


def test_lda_c_vocabulary_file_and_list(tmp_path):
    words = ["a", "b", "c", "d", "e", "f"]
    vocab = tmp_path / "vocab.txt"
    # Trailing spaces (as in a variant of the AP vocabulary) and blank lines
    # at the end are dropped.
    vocab.write_text("a \nb\nc\nd\ne\nf\n\n")
    for vocabulary in (vocab, str(vocab), io.StringIO("\n".join(words)), words):
        bunch = lda_c(CORPUS, vocabulary=vocabulary)
        assert bunch.data.shape == (4, 6)
        assert bunch.feature_names.dtype == object
        assert bunch.feature_names.tolist() == words
        assert "with a vocabulary" in bunch.DESCR
    wide = lda_c(CORPUS, vocabulary=words + ["g", "h"])
    assert wide.data.shape == (4, 8)
    assert lda_c(CORPUS, vocabulary=tuple(words), n_features=6).data.shape == (4, 6)


@pytest.mark.parametrize(
    "vocabulary, message",
    [
        ("a\n\nb\n", r"vocab.txt, line 2: blank line"),
        ("a\nb\na\n", r"vocab.txt, line 3: the word 'a' repeats line 1"),
        ("\n\n", r"vocab.txt: the vocabulary holds no word"),
        (b"a\n\xff\n", r"vocab.txt, line 2: not UTF-8"),
        (["a", ""], r"vocabulary\[1\] is ''"),
        (["a", 3], r"vocabulary\[1\] is 3"),
        (["a", "b", "a"], r"vocabulary\[2\]: the word 'a' repeats \[0\]"),
        ([], r"vocabulary: the vocabulary holds no word"),
    ],
)
def test_lda_c_bad_vocabulary(tmp_path, vocabulary, message):
    if isinstance(vocabulary, (str, bytes)):
        path = tmp_path / "vocab.txt"
        if isinstance(vocabulary, str):
            path.write_text(vocabulary)
        else:
            path.write_bytes(vocabulary)
        vocabulary = path
    with pytest.raises(ValueError, match=message):
        lda_c("1 0:1\n", vocabulary=vocabulary)


def test_lda_c_n_features_must_match_the_vocabulary():
    with pytest.raises(ValueError, match="n_features is 3, but the vocabulary has 2"):
        lda_c("1 0:1\n", vocabulary=["a", "b"], n_features=3)


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("2 0:1\n", 1, "M is 2, but the line has 1 id:count pair."),
        ("1 0:1 1:1\n", 1, "M is 1, but the line has 2 id:count pairs."),
        ("1 0:1\n2 1:1 1:2\n", 2, "term id 1 appears twice in the line."),
        ("1 a:1\n", 1, "id of the pair 'a:1', 'a', is not an integer"),
        ("1 0:x\n", 1, "count of the pair '0:x', 'x', is not an integer"),
        ("1 0:1.5\n", 1, "count of the pair '0:1.5', '1.5', is not an integer"),
        ("1 1e3:1\n", 1, "'1e3', is not an integer"),
        ("1 +1:1\n", 1, "'+1', is not an integer"),
        ("1 0:0\n", 1, "count 0 of term id 0: counts must be positive."),
        ("1 0:-1\n", 1, "'0:-1', -1, is negative: counts must be positive."),
        ("1 -1:2\n", 1, "id of the pair '-1:2', -1, is negative."),
        ("-1 0:2\n", 1, "M (the number of distinct terms), -1, is negative."),
        ("x 0:2\n", 1, "M (the number of distinct terms), 'x', is not an integer"),
        ("2 0:1,1:1\n", 1, "bad pair '0:1,1:1' (unexpected ',')"),
        ("2 0:1;1:1\n", 1, "bad pair '0:1;1:1' (unexpected ';')"),
        ("2 0:1,1\n", 1, "'1,1', is not an integer"),
        ("2 0=1 1=1\n", 1, "bad pair '0=1' (unexpected '=')"),
        ("2 0:1|1:1\n", 1, "bad pair '0:1|1:1' (unexpected '|')"),
        ("1 0::1\n", 1, "bad pair '0::1' (more than one ':')"),
        ("1 0:1:2\n", 1, "bad pair '0:1:2' (more than one ':')"),
        ("2 0:12:1\n", 1, "bad pair '0:12:1' (more than one ':')"),
        ("1 0 :1\n", 1, "bad pair '0' (no ':')"),
        ("1 0: 1\n", 1, "count of the pair '0:' is missing."),
        ("1 :1\n", 1, "id of the pair ':1' is missing."),
        ("1 0 1\n", 1, "bad pair '0' (no ':')"),
        ("0:1 1:1\n", 1, "the line starts with '0:1'"),
        ("1:2\n", 1, "the line starts with '1:2'"),
        ("1 0:1\n:\n", 2, "the line starts with ':'"),
        ("1 99999999999:1\n", 1, "99999999999, is too large"),
        ("1 3000000000:1\n", 1, "3000000000, is too large"),
        ("1 0:3000000000\n", 1, "3000000000, is too large"),
        ("3000000000\n", 1, "3000000000, is too large"),
        ("1 " + "9" * 5000 + ":1\n", 1, "999999999999..., is too large"),
        ("1 00000000001:1\n", 1, "'00000000001', has more than 10 digits"),
        ("1 0:1\x00\n", 1, "'1\\x00', is not an integer"),
        ("1 0:1\xa0\n", 1, "is not an integer"),
        ("1 0:1\x1c1:1\n", 1, "bad pair '0:1\\x1c1:1' (unexpected '\\x1c')"),
        ("1 0:1\n\n\n1 0:0\n", 4, "count 0 of term id 0"),
        ("2 0:1 1:1\n1 0:1\n1 3:1 3:1\n", 3, "term id 3 appears twice"),
        # The first faulty line is named, whatever its fault.
        ("1 0:1\n2 0:1\n1 x:1\n1 0:1 0:1\n", 2, "M is 2"),
        ("1 0:1\n1 0:1 1:1\n2 0:1 0:1\n1 a:1\n", 2, "M is 1"),
        ("1 0:1\n2 0:1 0:1\n1 0:0\n", 2, "term id 0 appears twice"),
        ("1 0:1\n1 0:1\n1 0:1 :1\n1 0:0\n", 3, "id of the pair ':1' is missing"),
    ],
)
def test_lda_c_faults_name_the_line(text, line, message):
    with pytest.raises(ValueError) as info:
        lda_c(text)
    assert str(info.value).startswith(f"<file object>, line {line}: ")
    assert message in str(info.value)


def test_lda_c_fault_names_the_file(tmp_path):
    path = tmp_path / "bad.dat"
    path.write_text("1 0:1\n2 0:1\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2: M is 2")):
        load_lda_c(path)


def test_lda_c_non_utf8_bytes():
    with pytest.raises(ValueError, match="line 2: .*is not an integer"):
        load_lda_c(io.BytesIO(b"1 0:1\n1 0:1\xff\n"))


@pytest.mark.parametrize("vocabulary", [False, True])
def test_lda_c_ids_beyond_n_features(vocabulary):
    kwargs = {"vocabulary": ["a", "b", "c"]} if vocabulary else {"n_features": 3}
    what = "the vocabulary has 3" if vocabulary else "n_features is 3"
    with pytest.raises(
        ValueError,
        match=re.escape(f"line 2: term id 3 is out of range: {what} (ids 0..2)"),
    ):
        lda_c("1 2:1\n2 0:1 3:1\n", **kwargs)


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n", "\ufeff"])
def test_lda_c_empty_file(text):
    with pytest.raises(ValueError, match="<file object>: the file holds no document"):
        lda_c(text)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_features": 0},
        {"n_features": True},
        {"n_features": 2.0},
        {"n_features": 2**31 + 1},
        {"vocabulary": 3},
    ],
)
def test_lda_c_validates_parameters(kwargs):
    with pytest.raises(InvalidParameterError):
        lda_c("1 0:1\n", **kwargs)
    with pytest.raises(InvalidParameterError):
        load_lda_c(3)


_REFERENCE_TOKEN = re.compile("[ \t\r\v\f]+")
_REFERENCE_NUMBER = re.compile("[0-9]{1,10}")


def reference_lda_c(content, n_features=None):
    """A line-by-line reader: ``(dense counts, None)`` or ``(None, fault line)``."""
    rows = []
    for lineno, line in enumerate(content.split(b"\n"), start=1):
        text = line.decode("utf-8", errors="replace")
        tokens = [t for t in _REFERENCE_TOKEN.split(text) if t]
        if not tokens:
            continue
        numbers = [tokens[0]]
        pairs = []
        for token in tokens[1:]:
            parts = token.split(":")
            if len(parts) != 2:
                return None, lineno
            numbers += parts
            pairs.append(parts)
        if not all(_REFERENCE_NUMBER.fullmatch(n) for n in numbers):
            return None, lineno
        if any(int(n) > 2**31 - 1 for n in numbers):
            return None, lineno
        row = {}
        for term, count in pairs:
            term, count = int(term), int(count)
            if count == 0 or term in row:
                return None, lineno
            if n_features is not None and term >= n_features:
                return None, lineno
            row[term] = count
        if len(pairs) != int(tokens[0]):
            return None, lineno
        rows.append(row)
    width = n_features
    if width is None:
        width = max((max(row) + 1 for row in rows if row), default=0)
    dense = np.zeros((len(rows), width), dtype=np.int64)
    for d, row in enumerate(rows):
        for term, count in row.items():
            dense[d, term] = count
    return dense, None


def random_corpus(rng, n_documents=6, n_features=12):
    lines = []
    for _ in range(n_documents):
        m = rng.integers(0, 5)
        ids = rng.choice(n_features, size=m, replace=False)
        counts = rng.integers(1, 20, size=m)
        pairs = " ".join(f"{i}:{c}" for i, c in zip(ids, counts))
        lines.append(f"{m} {pairs}".rstrip())
    return "\n".join(lines) + rng.choice(["", "\n", "  "])


MUTATIONS = [
    " ", ":", "\t", "\r", "0", "7", "a", "-", ",", ".", "\n", "\x00", "\xe9", "\xa0",
    "1:", ":3", "00000000000", "2147483648", "\x0b",
]  # fmt: skip


def test_lda_c_agrees_with_a_line_by_line_reader():
    # Random corpora, each with a few random edits: the vectorized reader must
    # accept exactly what the plain reader accepts, with the same counts, and
    # name the same first faulty line.
    rng = np.random.default_rng(0)
    n_faults = 0
    for trial in range(600):
        text = random_corpus(rng)
        for _ in range(rng.integers(0, 3)):
            at = int(rng.integers(0, len(text) + 1))
            action = rng.integers(3)
            if action == 0:
                text = text[:at] + str(rng.choice(MUTATIONS)) + text[at:]
            elif action == 1:
                text = text[:at] + text[at + 1 :]
            else:  # repeat a token
                tokens = text.split(" ")
                k = int(rng.integers(len(tokens)))
                tokens.insert(k, tokens[k])
                text = " ".join(tokens)
        n_features = None if trial % 3 else 11
        content = text.encode("utf-8")
        expected, fault_line = reference_lda_c(content, n_features)
        if expected is not None and expected.shape[0] == 0:
            with pytest.raises(ValueError, match="holds no document"):
                load_lda_c(io.BytesIO(content), n_features=n_features)
        elif expected is not None:
            X = load_lda_c(io.BytesIO(content), n_features=n_features).data
            assert X.has_canonical_format
            assert_array_equal(X.toarray(), expected, err_msg=repr(text))
        else:
            n_faults += 1
            with pytest.raises(ValueError) as info:
                load_lda_c(io.BytesIO(content), n_features=n_features)
            assert f", line {fault_line}: " in str(info.value), repr(text)
            assert "malformed line" not in str(info.value)  # a named fault
    assert 100 < n_faults < 500


def test_lda_c_large_random_corpus_round_trips():
    rng = np.random.default_rng(1)
    dense = np.where(
        rng.random((300, 2000)) < 0.02, rng.integers(1, 1000, (300, 2000)), 0
    )
    lines = []
    for row in dense:
        ids = rng.permutation(np.flatnonzero(row))  # ids in any order
        lines.append(f"{ids.size} " + " ".join(f"{i}:{row[i]}" for i in ids))
    bunch = lda_c("\n".join(lines), n_features=2000)
    assert_array_equal(bunch.data.toarray(), dense)


def test_lda_c_ap_corpus(shared_data):
    folder = shared_data / "ap"
    bunch = load_lda_c(folder / "ap.dat", vocabulary=folder / "vocab.txt")
    X = bunch.data
    # The statistics of shared/data/ap/PROVENANCE.txt.
    assert X.shape == (2246, 10473)
    assert X.nnz == 302031
    assert X.sum() == 435838
    assert X.dtype == np.int64 and X.has_canonical_format
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert (lengths.min(), np.median(lengths), lengths.max()) == (2, 176, 620)
    distinct = np.diff(X.indptr)
    assert (distinct.min(), distinct.max()) == (2, 409)
    frequency = np.asarray(X.sum(axis=0)).ravel()
    assert frequency.min() == 6
    assert bunch.feature_names[:3].tolist() == ["i", "new", "percent"]
    assert frequency[:3].tolist() == [2073, 2014, 1949]
    # The first line starts "186 0:1 6144:1 3586:2 3:1 ...".
    assert distinct[0] == 186
    assert (X[0, 0], X[0, 6144], X[0, 3586], X[0, 3]) == (1, 1, 2, 1)
    assert "2246 documents, 10473 features" in bunch.DESCR
    # Without a vocabulary, the width is the largest id (10,472) plus one.
    plain = load_lda_c(folder / "ap.dat").data
    assert plain.shape == (2246, 10473)
    assert (plain != X).nnz == 0


# ----------------------------------------------------------------------------
# MNIST
# ----------------------------------------------------------------------------


def write_idx(path, array, magic=None, compress=False, extra=b""):
    array = np.asarray(array, dtype=np.uint8)
    if magic is None:
        magic = 0x0803 if array.ndim == 3 else 0x0801
    header = magic.to_bytes(4, "big") + b"".join(
        n.to_bytes(4, "big") for n in array.shape
    )
    content = header + array.tobytes() + extra
    if compress:
        content = gzip.compress(content)
    path.write_bytes(content)
    return path


def tiny_mnist(n_train=5, n_test=3, seed=0):
    rng = np.random.default_rng(seed)
    x_train = rng.integers(0, 256, size=(n_train, 28, 28), dtype=np.uint8)
    x_test = rng.integers(0, 256, size=(n_test, 28, 28), dtype=np.uint8)
    y_train = rng.integers(0, 10, size=n_train).astype(np.uint8)
    y_test = rng.integers(0, 10, size=n_test).astype(np.uint8)
    return x_train, y_train, x_test, y_test


def write_idx_folder(folder, arrays, *, compress=False, suffix="", dotted=False):
    folder.mkdir(exist_ok=True)
    x_train, y_train, x_test, y_test = arrays
    for prefix, x, y in [("train", x_train, y_train), ("t10k", x_test, y_test)]:
        for kind, array in [("images-idx3", x), ("labels-idx1", y)]:
            name = f"{prefix}-{kind}-ubyte"
            if dotted:
                name = name.replace("-idx", ".idx")
            write_idx(folder / (name + suffix), array, compress=compress)
    return folder


def check_subsets(path, arrays):
    x_train, y_train, x_test, y_test = arrays
    expected = {
        "train": (x_train, y_train),
        "test": (x_test, y_test),
        "all": (np.concatenate([x_train, x_test]), np.concatenate([y_train, y_test])),
    }
    for subset, (images, labels) in expected.items():
        bunch = load_mnist(path, subset=subset)
        n = len(labels)
        assert bunch.data.shape == (n, 784) and bunch.data.dtype == np.uint8
        assert bunch.images.shape == (n, 28, 28)
        assert_array_equal(bunch.images, images)
        assert_array_equal(bunch.data, images.reshape(n, 784))
        assert np.shares_memory(bunch.data, bunch.images)
        assert bunch.data.flags.writeable
        assert bunch.target.dtype == np.intp
        assert_array_equal(bunch.target, labels)
        assert_array_equal(bunch.target_names, np.arange(10))
        assert bunch.filename == str(path)
        assert f"{n} images of 28 x 28 pixels" in bunch.DESCR
        assert "uint8 grey levels" in bunch.DESCR
    assert load_mnist(path).data.shape == (len(y_train), 784)  # train by default
    # scikit-learn's (data, target) pair
    X, y = load_mnist(path, subset="all", scale=True, return_X_y=True)
    assert_array_equal(X, expected["all"][0].reshape(len(y), 784) / 255.0)
    assert_array_equal(y, expected["all"][1])


@pytest.mark.parametrize(
    "compress, suffix, dotted",
    [
        (False, "", False),
        (True, ".gz", False),
        (True, "", False),  # gzipped without the suffix: told by its magic
        (False, "", True),  # train-images.idx3-ubyte, as some copies name them
        (True, ".gz", True),
    ],
)
def test_mnist_idx_folder(tmp_path, compress, suffix, dotted):
    arrays = tiny_mnist()
    folder = write_idx_folder(
        tmp_path / "mnist", arrays, compress=compress, suffix=suffix, dotted=dotted
    )
    check_subsets(folder, arrays)


def test_mnist_reads_only_the_files_of_the_subset(tmp_path):
    arrays = tiny_mnist()
    folder = write_idx_folder(tmp_path / "mnist", arrays)
    (folder / "t10k-images-idx3-ubyte").unlink()
    assert load_mnist(folder, subset="train").data.shape == (5, 784)
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte"):
        load_mnist(folder, subset="test")
    with pytest.raises(FileNotFoundError, match="nor mnist.npz"):
        load_mnist(folder, subset="all")


def test_mnist_npz(tmp_path):
    arrays = tiny_mnist()
    path = tmp_path / "tiny.npz"
    x_train, y_train, x_test, y_test = arrays
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    check_subsets(path, arrays)
    compressed = tmp_path / "compressed.npz"
    np.savez_compressed(
        compressed,
        x_train=x_train.reshape(5, 784),  # flat images read too
        y_train=y_train.astype(np.int64),
        x_test=x_test,
        y_test=y_test,
    )
    check_subsets(compressed, arrays)
    # A folder holding mnist.npz and no idx files.
    folder = tmp_path / "folder"
    folder.mkdir()
    (tmp_path / "tiny.npz").rename(folder / "mnist.npz")
    check_subsets(folder, arrays)


def test_mnist_scale(tmp_path):
    arrays = tiny_mnist()
    folder = write_idx_folder(tmp_path / "mnist", arrays, compress=True, suffix=".gz")
    bunch = load_mnist(folder, subset="all", scale=True)
    assert bunch.data.dtype == np.float64
    expected = np.concatenate([arrays[0], arrays[2]]).reshape(8, 784) / 255
    assert_array_equal(bunch.data, expected)
    assert 0 <= bunch.data.min() and bunch.data.max() <= 1
    assert np.shares_memory(bunch.data, bunch.images)
    assert "float64 in [0, 1]" in bunch.DESCR


@pytest.mark.parametrize("compress", [False, True])
def test_mnist_idx_faults(tmp_path, compress):
    x_train, y_train, x_test, y_test = tiny_mnist()
    folder = write_idx_folder(tmp_path / "mnist", (x_train, y_train, x_test, y_test))
    images = folder / "train-images-idx3-ubyte"
    labels = folder / "train-labels-idx1-ubyte"

    def load():
        return load_mnist(folder)

    def check(message):
        with pytest.raises(ValueError, match=message):
            load()

    # Labels where the images belong: the magic says what they are.
    write_idx(images, y_train, compress=compress)
    check(r"magic number 2049 \(the magic number of MNIST labels\), expected 2051")
    write_idx(images, x_train, magic=0x0C03, compress=compress)  # int32 pixels
    check("magic number 3075, expected 2051 for MNIST images")
    write_idx(images, x_train, compress=compress)
    write_idx(labels, y_train, magic=0x0803, compress=compress)
    check(r"magic number 2051 \(the magic number of MNIST images\), expected 2049")
    write_idx(labels, y_train, compress=compress)
    assert load().data.shape == (5, 784)

    write_idx(images, x_train[:, :27, :], compress=compress)
    check("images of 27 x 28 pixels, expected 28 x 28")
    write_idx(images, x_train, extra=b"\x00", compress=compress)
    check("has trailing bytes: its header declares 5 x 28 x 28 = 3920 bytes")
    write_idx(images, x_train[:4], compress=compress)
    check("holds 4 images, but .*holds 5 labels")
    write_idx(images, x_train, compress=compress)
    write_idx(labels, np.r_[y_train[:4], 10], compress=compress)
    check("label 10 at position 4; MNIST labels are digits 0..9")

    for content, message in [
        (b"\x00\x00", "2 bytes, too short for an idx file"),
        (b"\x00\x00\x08\x01\x00\x00", "the header ends before its 1 sizes"),
        # A header that declares 2**32 - 1 labels, then three: refused at once.
        (b"\x00\x00\x08\x01\xff\xff\xff\xff\x01\x02\x03", "truncated"),
    ]:
        labels.write_bytes(gzip.compress(content) if compress else content)
        check(message)
    write_idx(labels, y_train, compress=compress)
    content = images.read_bytes()
    images.write_bytes(content[:-1])
    if compress:
        check("not a valid gzip file")
    else:
        check("truncated: its header declares 5 x 28 x 28 = 3920 bytes of images, "
              "but 3919 follow")  # fmt: skip


def test_mnist_gzip_payload_cut_short(tmp_path):
    x_train, y_train, x_test, y_test = tiny_mnist()
    folder = write_idx_folder(tmp_path / "mnist", (x_train, y_train, x_test, y_test))
    # A whole gzip stream whose content stops early.
    write_idx(folder / "train-images-idx3-ubyte", x_train)
    content = (folder / "train-images-idx3-ubyte").read_bytes()[:-10]
    (folder / "train-images-idx3-ubyte").write_bytes(gzip.compress(content))
    with pytest.raises(ValueError, match="truncated: .* but 3910 follow"):
        load_mnist(folder)


def test_mnist_npz_faults(tmp_path):
    x_train, y_train, x_test, y_test = tiny_mnist()
    path = tmp_path / "bad.npz"

    def check(message, **arrays):
        full = dict(x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
        full.update(arrays)
        np.savez(path, **{k: v for k, v in full.items() if v is not None})
        with pytest.raises(ValueError, match=message):
            load_mnist(path, subset="all")

    check("has no array 'y_test' .*holds x_train, y_train, x_test", y_test=None)
    check("x_train has dtype float64, expected uint8", x_train=x_train / 255)
    check(r"x_train has shape \(5, 28, 27\)", x_train=x_train[:, :, :27])
    check(r"x_test has shape \(3, 2352\)", x_test=x_test.reshape(3, -1).repeat(3, 1))
    check(r"y_train has shape \(4,\)", y_train=y_train[:4])
    check(r"y_train has shape \(5, 1\)", y_train=y_train[:, None])
    check("y_train has shape .* and dtype float64", y_train=y_train.astype(float))
    check("y_test holds the label -1", y_test=np.array([1, -1, 2], dtype=np.int8))
    check("y_test: label 12 at position 2", y_test=np.array([1, 2, 12]))


def test_mnist_path_faults(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file or folder"):
        load_mnist(tmp_path / "absent")
    with pytest.raises(FileNotFoundError, match="holds neither the MNIST idx files"):
        load_mnist(tmp_path)
    not_npz = tmp_path / "train-images-idx3-ubyte"
    write_idx(not_npz, np.zeros((1, 28, 28)))
    with pytest.raises(ValueError, match="is not an .npz archive"):
        load_mnist(not_npz)


@pytest.mark.parametrize(
    "kwargs",
    [{"subset": "dev"}, {"scale": "yes"}, {"subset": None}],
)
def test_mnist_validates_parameters(tmp_path, kwargs):
    with pytest.raises(InvalidParameterError):
        load_mnist(tmp_path, **kwargs)
    with pytest.raises(InvalidParameterError):
        load_mnist(3)


def test_mnist_shared_npz(shared_data):
    path = shared_data / "mnist" / "mnist.npz"
    bunch = load_mnist(path, subset="all")
    assert bunch.data.shape == (70000, 784) and bunch.data.dtype == np.uint8
    assert bunch.images.shape == (70000, 28, 28)
    # The statistics of shared/data/mnist/PROVENANCE.txt.
    train, test = bunch.target[:60000], bunch.target[60000:]
    assert set(np.unique(bunch.target)) == set(range(10))
    assert np.bincount(train).tolist() == [
        5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949,
    ]  # fmt: skip
    assert np.bincount(test).tolist() == [
        980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009,
    ]  # fmt: skip
    assert train[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert test[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert bunch.data[:60000].sum(dtype=np.int64) == 1567298545
    assert (bunch.data.min(), bunch.data.max()) == (0, 255)
    test_only = load_mnist(path, subset="test")
    assert test_only.data.shape == (10000, 784)
    assert_array_equal(test_only.data, bunch.data[60000:])
