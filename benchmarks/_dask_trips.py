"""Round trips to the Dask workers of a chain whose rows stay there, and the
rows it reads from them."""

import pickle


def _per_sweep(rows, name, chain, n_sweeps, measure):
    """The mean of ``measure(result)`` summed over the calls of ``rows.<name>``
    a sweep, over ``n_sweeps`` calls of ``chain.sweep()``."""
    total = 0
    method = getattr(rows, name)

    def counting(*args, **kwargs):
        nonlocal total
        result = method(*args, **kwargs)
        total += measure(result)
        return result

    setattr(rows, name, counting)
    try:
        for _ in range(n_sweeps):
            chain.sweep()
    finally:
        delattr(rows, name)
    return total / n_sweeps


def round_trips_per_sweep(rows, chain, n_sweeps=5):
    """The mean number of calls to the workers a sweep, over ``n_sweeps`` calls
    of ``chain.sweep()`` (one a sweep, as a fit makes them).

    ``rows`` is the holder of the chain's rows (``DaskRows`` or
    ``DaskRankings``); once they are bound, each of its operations is one call
    to the workers' actors (``_submit``), one round trip.
    """
    return _per_sweep(rows, "_submit", chain, n_sweeps, lambda result: 1)


def megabytes_from_workers_per_sweep(rows, chain, n_sweeps=5):
    """The mean megabytes the workers send back a sweep (the pickled results of
    the calls to their actors: labels, block moments, scans, rows read), over
    ``n_sweeps`` calls of ``chain.sweep()``."""
    return _per_sweep(
        rows, "_submit", chain, n_sweeps,
        lambda result: len(pickle.dumps(result, protocol=5)),
    ) / 1e6


def megabytes_read_per_sweep(rows, chain, n_sweeps=5):
    """The mean megabytes of rows the chain reads from the workers a sweep
    (``rows.rows``: dense rows, or counts as CSR matrices), over ``n_sweeps``
    calls of ``chain.sweep()``."""

    def size(read):
        if hasattr(read, "tocsr"):
            return read.data.nbytes + read.indices.nbytes + read.indptr.nbytes
        return read.nbytes

    return _per_sweep(rows, "rows", chain, n_sweeps, size) / 1e6
