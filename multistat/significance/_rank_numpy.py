"""The rank tests' kernels without numba: the same numbers as the numba kernels, slower.

:func:`numba_kernels` is :mod:`multistat.significance._rank_kernels` when numba (the
``fast`` extra) is installed, else None. Without it the signed-rank integers come from
the sort of sign-tagged keys (:func:`multistat.significance._signrank._key_sort_integers`,
which the numba merge reproduces exactly: both are integer sums), and the Walsh order
statistics from :func:`select_rows` here, which has the signature and the results of its
namesake in :mod:`multistat.significance._rank_kernels`: it enumerates the Walsh averages of a row
when there are at most
  ``max(cap, 2**20)`` of them (one ``np.partition``); a longer row is searched by
  bisection over the float64 values themselves: the ``k``-th order statistic is the
  smallest float ``t`` with ``#{W <= t} > k``, and each count is exact, a vectorized
  binary search per row ``i`` of the Walsh matrix with the one expression
  ``(s_i + s_j) / 2.0`` (row ``i`` increases in ``j``: rounding is monotone). At most 64
  counts of O(n log n) per rank, O(n) memory.
"""

from __future__ import annotations

import numpy as np

__all__ = ["numba_kernels", "select_rows"]

#: rows with at most this many Walsh averages are enumerated whole (8 MiB of averages)
DENSE_AVERAGES = 2**20
_SIGN = np.int64(0x7FFFFFFFFFFFFFFF)


def numba_kernels():
    """:mod:`multistat.significance._rank_kernels` (numba's compiled kernels) when numba
    is installed (the ``fast`` extra), else None."""
    try:
        # heavy: numba (about 2 s and 100 MiB), only for a run that needs a rank kernel
        from multistat.significance import _rank_kernels
    except ImportError:
        return None
    return _rank_kernels


# ----------------------------------------------------------------------------- Walsh averages
def _key(x: float) -> int:
    """An integer that orders as the float ``x`` (-0.0 and 0.0 share the key 0)."""
    b = int(np.float64(x).view(np.int64))
    return b if b >= 0 else -(b & int(_SIGN))


def _value(key: int) -> float:
    """The float of :func:`_key` ``key`` (key 0 is +0.0)."""
    if key >= 0:
        return float(np.int64(key).view(np.float64))
    return -float(np.int64(-key).view(np.float64))


def _count_le(s, t) -> int:
    """``#{(s_i + s_j) / 2.0 <= t : i <= j}`` for the sorted, NaN-free ``s``: for every
    row ``i`` at once, a binary search for the first ``j >= i`` whose average exceeds
    ``t`` (the averages of a row increase in ``j``)."""
    m = s.size
    lo = np.arange(m)
    start = lo.copy()
    hi = np.full(m, m)
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        le = (s + s[np.minimum(mid, m - 1)]) / 2.0 <= t
        lo = np.where(active & le, mid + 1, lo)
        hi = np.where(active & ~le, mid, hi)
    return int((lo - start).sum())


def _select_bisect(s, k: int) -> float:
    """The ``k``-th (0-based) smallest Walsh average of the sorted, NaN-free ``s``."""
    lo = _key((s[0] + s[0]) / 2.0)
    hi = _key((s[-1] + s[-1]) / 2.0)  # count_le(hi) = all > k
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if _count_le(s, _value(mid)) > k:
            hi = mid
        else:
            lo = mid + 1
    return _value(lo)


def select_rows(S, ranks, out, row0, row1, cap, seed):
    """Rows ``row0:row1`` of the sorted ``S`` (R, n): ``out[r]`` = the Walsh order
    statistics ``ranks`` (sorted, distinct), as
    :func:`multistat.significance._rank_kernels.select_rows` (NaN sorts last; a rank past
    a row's averages is NaN). ``cap`` only raises the enumeration threshold; ``seed`` is
    unused (no sampling). Returns 0 (the numba kernel's count of sweeps)."""
    S = np.asarray(S)
    ranks = np.asarray(ranks, dtype=np.int64)
    n = S.shape[1]
    dense = max(int(cap), DENSE_AVERAGES)
    for row in range(row0, row1):
        s = S[row]
        m = n - int(np.count_nonzero(np.isnan(s)))
        s = s[:m]
        n_avg = m * (m + 1) // 2
        ok = ranks < n_avg
        out[row, ~ok] = np.nan
        if not ok.any():
            continue
        wanted = ranks[ok]
        if n_avg <= dense or (s[0] == -np.inf and s[-1] == np.inf):
            i, j = np.triu_indices(m)
            averages = (s[i] + s[j]) / 2.0
            del i, j
            averages.partition(wanted)
            out[row, ok] = averages[wanted]
        else:
            out[row, ok] = [_select_bisect(s, int(k)) for k in wanted]
    return 0
