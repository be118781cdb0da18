"""Order statistics of Walsh averages, exact, one compiled selection per row.

The engine behind the Hodges-Lehmann estimate and its distribution-free interval
(:func:`multistat.significance.rank.hodges_lehmann`, :func:`~.rank.wilcoxon`):
:func:`walsh_order_statistics` returns chosen order statistics of the ``n(n+1)/2``
averages ``(d_i + d_j)/2, i <= j`` of every sorted row without materialising them, in
O(n) working memory per row, by a numba-compiled kernel
(:func:`multistat.significance._rank_kernels.select_rows`, imported on first use; without
numba, :mod:`multistat.significance._rank_numpy` gives the same numbers). Every
average is evaluated with the one floating-point expression ``(d_i + d_j) / 2.0``, so the
results are the order statistics of exactly the numbers ``np.sort((d[i] + d[j]) / 2.0)``
would give (bit for bit; NaN sorts last, as in numpy). Everything here is a pure function
of its arguments (no caches); the random numbers only place pivots.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from multistat.significance import _rank_numpy
from multistat.significance._chunks import rows_per_chunk

__all__ = ["walsh_order_statistics"]

#: working memory of the kernel per row element of a batch, beyond the sorted rows the
#: caller holds: a contiguous float64 copy of the rows when they are not one already (8
#: bytes) plus room; per thread the kernel needs O(n) scratch (the candidate buffer,
#: 8 * max(2n, 4096) bytes), whatever the number of rows. Measured (ru_maxrss): 400 rows
#: of n = 10,000, contiguous, the four Wilcoxon ranks: the peak did not grow at all.
WALSH_BYTES_PER_VALUE = 16
_WALSH_THREADS = min(os.cpu_count() or 1, 4)  # threads over blocks of rows
_WALSH_THREAD_MIN = 100_000  # rows x n from which it uses them
_WALSH_BLOCK = None  # rows per block if set (tests); None: rows split evenly over threads


# ----------------------------------------------------------------------------- driver
def walsh_order_statistics(sorted_d, ranks, *, dense_row_max=None, memory_limit=None,
                           _seed=0):
    r"""Order statistics of the Walsh averages ``(d_i + d_j)/2, i <= j`` of each row.

    Parameters
    ----------
    sorted_d : ndarray, shape (..., n)
        Differences sorted along the last axis (NaN last, as ``np.sort`` leaves them).
    ranks : sequence of int
        0-based positions wanted in the sorted Walsh averages (the same for every row;
        negative ones count from the end, as numpy indices).
    dense_row_max : int or None
        At most this many averages of a row are enumerated at once: a row with at most
        this many is enumerated whole, a larger one is first narrowed to a bracket of at
        most this many (None: ``max(2n, 4096)``). Small values only cost time (tests).
    memory_limit : int, str, Budget or None
        Working memory: rows are processed in blocks of at most ``memory_limit /
        (n * WALSH_BYTES_PER_VALUE)`` rows; None: the engine's default budget
        (:func:`multistat._budget.default_limit`). The result does not depend on it.

    Returns
    -------
    ndarray, shape (..., len(ranks))
        ``np.sort((d[i] + d[j]) / 2.0)[ranks]`` for ``i, j = np.triu_indices(n)``, bit
        for bit, for every row.

    Notes
    -----
    Implicit selection (the idea of Johnson & Mizoguchi 1978 and Monahan 1984): row
    ``i`` of the Walsh matrix, :math:`(s_i + s_j)/2` for :math:`j \ge i`, increases in
    ``j`` and column ``j`` increases in ``i`` (floating-point rounding is monotone), so
    the number of averages :math:`\le t` (and :math:`< t`) is counted exactly, with the
    same floating-point expression as the averages, by two pointers that only move down:
    one O(n) sweep. Per row and per group of nearby wanted ranks: (1) pivots are sample
    quantiles of 1,024 random averages placed 2.5 standard errors outside the wanted
    ranks, and are counted; (2) inside the bracket of counted pivots, the next two
    pivots are interpolated a margin below and above the wanted ranks (the margin from
    the last interpolation's error), until at most ``max(n, 2048)`` averages lie
    between the bounds; a bracket that does not shrink four-fold is cut at quantiles of
    64 averages sampled inside it (which catches tied values: a pivot whose counts
    straddle a rank is that order statistic); (3) the averages between the bounds are
    enumerated and the ranks selected (quickselect). The ranks of one row share the
    counted pivots. Typically 6-10 sweeps per group of ranks, so O(n) per row; threads
    (numba releases the GIL) run blocks of rows, and each row's result is exact, so it
    depends on neither the threads nor the random numbers.

    References
    ----------
    Johnson, D. B. & Mizoguchi, T. (1978). Selecting the Kth element in X + Y and
    X1 + X2 + ... + Xm. SIAM J. Comput. 7(2), 147-153.
    Monahan, J. F. (1984). Algorithm 616: fast computation of the Hodges-Lehmann
    location estimator. ACM TOMS 10(3), 265-270. doi:10.1145/1271.319414
    """
    sorted_d = np.asarray(sorted_d, dtype=np.float64)
    lead = sorted_d.shape[:-1]
    n = sorted_d.shape[-1]
    flat = np.ascontiguousarray(sorted_d.reshape(-1, n))
    N = n * (n + 1) // 2
    ranks = [int(r) for r in ranks]
    norm = []
    for r in ranks:
        rr = r + N if r < 0 else r
        if not 0 <= rr < N:
            raise IndexError(f"Walsh rank {r} is out of range for n = {n} "
                             f"({N} averages)")
        norm.append(rr)
    uniq = sorted(set(norm))
    col = [uniq.index(r) for r in norm]
    rows = flat.shape[0]
    res = np.empty((rows, len(uniq)))
    if rows and uniq:
        kr = np.asarray(uniq, dtype=np.int64)
        cap = 0 if dense_row_max is None else max(int(dense_row_max), 1)
        # heavy: numba, lazily (numpy, the same numbers, without the ``fast`` extra)
        kernels = _rank_numpy.numba_kernels() or _rank_numpy
        select_rows = kernels.select_rows

        fit = rows_per_chunk(n, WALSH_BYTES_PER_VALUE, memory_limit)
        workers = _WALSH_THREADS if rows >= 2 and rows * n >= _WALSH_THREAD_MIN else 1
        if _WALSH_BLOCK is not None:
            per = _WALSH_BLOCK
        else:
            per = max(1, min(-(-rows // workers), fit))
        row_blocks(lambda a, b: select_rows(flat, kr, res, a, b, cap, _seed), rows, per,
                   workers)
    return res[:, col].reshape(*lead, len(ranks))


def row_blocks(fn, rows: int, per: int, workers: int) -> None:
    """``fn(start, stop)`` over blocks of at most ``per`` rows, on ``workers`` threads when
    there are several blocks (the numba kernels release the GIL; each row is computed on
    its own, so the split changes no result). With threads, at least four blocks a
    thread: a thread slowed by other work on the machine then takes fewer blocks,
    instead of the others waiting for its half."""
    if workers > 1:
        per = min(per, -(-rows // (4 * workers)))
    per = max(1, per)
    starts = range(0, rows, per)
    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda s: fn(s, min(s + per, rows)), starts))
    else:
        for s in starts:
            fn(s, min(s + per, rows))
