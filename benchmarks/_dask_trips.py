"""Round trips to the Dask workers of a chain whose rows stay there."""


def round_trips_per_sweep(rows, chain, n_sweeps=5):
    """The mean number of calls to the workers a sweep, over ``n_sweeps`` calls
    of ``chain.sweep()`` (one a sweep, as a fit makes them).

    ``rows`` is the holder of the chain's rows (``DaskRows`` or
    ``DaskRankings``); once they are bound, each of its operations is one call
    to the workers' actors (``_submit``), one round trip.
    """
    calls = 0
    submit = rows._submit

    def counting(*args, **kwargs):
        nonlocal calls
        calls += 1
        return submit(*args, **kwargs)

    rows._submit = counting
    try:
        for _ in range(n_sweeps):
            chain.sweep()
    finally:
        del rows._submit
    return calls / n_sweeps
