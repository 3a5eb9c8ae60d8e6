# Authors: The rankmix developers
# SPDX-License-Identifier: BSD-3-Clause
"""Real ranking data: the download cache and the named PrefLib data sets.

The files are never shipped with rankmix (their licences differ, and the sushi
data may not be redistributed): :func:`fetch_preflib` downloads a file once into
a cache folder on the user's machine, and reads it with :func:`load_preflib`
(:mod:`rankmix.datasets._preflib`), which reads any file.
"""

import hashlib
import os
import shutil
import socket
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import suppress
from numbers import Integral

import numpy as np

from .._sklearn_compat import (
    HasMethods,
    Interval,
    StrOptions,
    validate_params,
)
from ._preflib import _DATA_TYPES, _open_lines, _PrefLibReader, load_preflib

__all__ = [
    "PREFLIB_BASE_URL",
    "PREFLIB_COMMIT",
    "fetch_apa",
    "fetch_irish",
    "fetch_preflib",
    "fetch_sushi",
    "get_data_home",
    "load_apa1980",
]

# The PrefLib-Data repository is PrefLib's own source of its files. The default is
# pinned to one commit (of the fork whose copies the tests were checked against), so
# that a file changed upstream never reaches users silently: each file rankmix
# names has its SHA-256 below, checked on every download from this URL.
PREFLIB_COMMIT = "e70f12c3f1ee0dfa6f7974618522df0aa4ce9d91"
PREFLIB_BASE_URL = f"https://raw.githubusercontent.com/fleverest/PrefLib-Data/{PREFLIB_COMMIT}/datasets/"

# SHA-256 of the files of the named data sets at PREFLIB_COMMIT. A small registry
# in the code, as scikit-learn's fetchers keep theirs, rather than pooch: sixteen
# files do not justify a dependency, and the download, the atomic rename and the
# parse check were already here.
_PREFLIB_SHA256 = {
    "00001 - irish/00001-00000001.soi": (
        "2893eaa73ef003d245d7b62a6b521690b8e33e3a35fce61e6d2218c5b24236e3"
    ),
    "00001 - irish/00001-00000002.soi": (
        "44732e5d9029ab7230284cb07fd83bef6e097e85a34e32ad487b4413a2641462"
    ),
    "00001 - irish/00001-00000003.soi": (
        "4c07ec8222fc749a9d18930d87a66528fb0eca06815b594c833cc7cf36729245"
    ),
    "00014 - sushi/00014-00000001.soc": (
        "21dfffb9e30a868749da6b3eb06ce1f08205e2198869ccd7d772af1e186f3479"
    ),
    "00028 - apa/00028-00000001.soi": (
        "968a8d934b90480b565b79a7f2533f449f04eff0d6b999108b7b68bcec75a3e7"
    ),
    "00028 - apa/00028-00000002.soi": (
        "6df10534c5432a9050101b18e6b6fe64e53d697bca033d34f1de018fa009b69c"
    ),
    "00028 - apa/00028-00000003.soi": (
        "85d7ddc613326e4fc82e32c25c1f0aaf06ccfb4f9e5d0a10b5ae9879e2cb2f3d"
    ),
    "00028 - apa/00028-00000004.soi": (
        "feefe893ed0e21421fccc4505899fa0da57a2458cc1875d206ba4845263357d9"
    ),
    "00028 - apa/00028-00000005.soi": (
        "180540578b1a655f9b8314a78027fec91d5547d41c295bad319d41f96f7d798d"
    ),
    "00028 - apa/00028-00000006.soi": (
        "9111ae296ed1ba7a6ce9dcf5e00082e071cc4ef966db638edef0c5d070d75344"
    ),
    "00028 - apa/00028-00000007.soi": (
        "daf4e4a74d03785aee4a95bdb4fa74a3d9de907a94e453857e335544028bf8a8"
    ),
    "00028 - apa/00028-00000008.soi": (
        "711d5d8601a54d32dfe2a8c5f5893afc67e543c679ca158978866789f559f3de"
    ),
    "00028 - apa/00028-00000009.soi": (
        "0ec5cf0bcc4ee53637c48e87d169bca675850ec1dad27481bcd28ade4ecec1f6"
    ),
    "00028 - apa/00028-00000010.soi": (
        "135824f877d7475684b141f290c1fcaf5b2129b4731d3645cdc7bb719a533d5d"
    ),
    "00028 - apa/00028-00000011.soi": (
        "abc2b728395d7ac2e3fcd9d9775b1b28e4ddc35b70df6b9e871afb64dd3e5c13"
    ),
    "00028 - apa/00028-00000012.soi": (
        "891bfa7ce7dd8ffb0a36f9755f63b90eb71319c0545c6e92283e9b9f8ff84457"
    ),
}

# Folders of the series whose files can be fetched by bare file name, in the
# layout of PrefLib-Data ("<series> - <abbreviation>/<file>").
_SERIES_FOLDERS = {
    "00001": "00001 - irish",
    "00014": "00014 - sushi",
    "00028": "00028 - apa",
}

# A download that stalls this long (seconds) is given up.
_TIMEOUT = 60

# A download that fails for a passing reason (no answer, a refused connection, a
# 5xx answer) is tried this many more times, after RETRY_DELAY, 2 * RETRY_DELAY,
# ... seconds; a 4xx answer (a wrong name) is final.
_N_RETRIES = 3
_RETRY_DELAY = 1.0


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
        URL of the folder that holds the series folders: by default PrefLib-Data
        on GitHub at the commit ``PREFLIB_COMMIT``, where the files of the named
        data sets have known SHA-256 checksums that every download is checked
        against. Another URL (say PrefLib-Data's moving ``main`` branch, or
        PrefLib's web site ``https://www.preflib.org/static/data/``, which names
        its folders differently, so pass relative paths with it) is used
        without checksums: only the parse check applies.
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
        sha256 = None
        if base_url == PREFLIB_BASE_URL:
            sha256 = _PREFLIB_SHA256.get(relative_path)
        os.makedirs(folder, exist_ok=True)
        _download(url, path, sha256=sha256)
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


def _download(url, path, *, sha256=None, n_retries=None, delay=None):
    """Download ``url`` to ``path`` atomically, keeping it only if it checks out.

    A file is kept only if its SHA-256 is ``sha256`` (when given) and it parses.
    The parse check reads ties leniently: whether the caller accepts a file with
    ties is decided when the cached file is read, so such a file is cached once.
    Passing failures (no answer, a refused connection, a 5xx answer) are retried
    ``n_retries`` times with a growing delay; a 4xx answer, and a host name that
    does not resolve (no network), are final.
    """
    n_retries = _N_RETRIES if n_retries is None else n_retries
    delay = _RETRY_DELAY if delay is None else delay
    folder, file_name = os.path.split(path)
    # A hidden temporary name in the same folder: os.replace is then atomic, and
    # the extension still tells load_preflib the data type.
    descriptor, partial = tempfile.mkstemp(
        dir=folder, prefix=f".{file_name}.", suffix=os.path.splitext(file_name)[1]
    )
    os.close(descriptor)
    try:
        for attempt in range(n_retries + 1):
            try:
                with (
                    open(partial, "wb") as out,
                    urllib.request.urlopen(url, timeout=_TIMEOUT) as response,
                ):
                    shutil.copyfileobj(response, out)
                break
            except urllib.error.HTTPError as exc:
                if exc.code < 500 or attempt == n_retries:
                    raise OSError(
                        f"Downloading {url} failed: the server answered {exc.code} "
                        f"{exc.reason}. Check the name and base_url."
                    ) from exc
            except OSError as exc:  # URLError, timeouts, refused connections
                reason = getattr(exc, "reason", exc)
                # a host name that does not resolve (offline, no DNS) stays so:
                # retrying only makes the user wait (EAI_AGAIN, "temporary
                # failure", may pass)
                unresolved = (
                    isinstance(reason, socket.gaierror)
                    and reason.errno != socket.EAI_AGAIN
                )
                if attempt == n_retries or unresolved:
                    tries = "1 try" if attempt == 0 else f"{attempt + 1} tries"
                    raise OSError(
                        f"Cannot download {url} ({reason}; {tries}), "
                        f"and {file_name} is not in the cache folder {folder}. "
                        "Connect to the internet, or copy the file into that "
                        "folder by hand."
                    ) from exc
            time.sleep(delay * (attempt + 1))
        if sha256 is not None:
            found = _sha256(partial)
            if found != sha256:
                raise OSError(
                    f"The file downloaded from {url} has SHA-256 {found}, not the "
                    f"expected {sha256}, so it was not cached: the download was "
                    "corrupted or the file changed at its source."
                )
        try:
            load_preflib(partial, ties="truncate")
        except ValueError as exc:
            raise ValueError(
                f"The file downloaded from {url} is not a valid PrefLib file, so it "
                f"was not cached: {exc}"
            ) from exc
        os.replace(partial, path)
    finally:
        with suppress(FileNotFoundError):
            os.remove(partial)


def _sha256(path):
    """The SHA-256 of a file, as hexadecimal."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
                _check_apa1980_header(reader, line, lineno)
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


def _check_apa1980_header(reader, line, lineno):
    """Refuse a header other than rank1,...,rank5 (the positions, best first).

    A header that names the candidates (PerMallows' ``rank_of_c1``, ...) heads
    a rank matrix, whose rows would read as inverted orderings, valid ones.
    """
    names = [name.strip().lower() for name in line.split(",")]
    expected = [f"rank{k}" for k in range(1, _APA1980_N_CANDIDATES + 1)]
    if names == expected:
        return
    hint = ""
    if len(names) == _APA1980_N_CANDIDATES and names[0].startswith("rank"):
        hint = (
            " This header may name the rank each candidate got (a rank matrix, "
            "as PerMallows and BayesMallows store the ballots), whose rows are "
            "not orderings: convert them with "
            "rankmix.preprocessing.ranks_to_orderings."
        )
    raise reader.fault(
        lineno,
        f"expected the header line {','.join(expected)} (the candidates in "
        f"positions 1 to 5, best first), got {line!r}.{hint}",
    )


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
