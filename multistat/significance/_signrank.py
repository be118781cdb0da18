"""The signed-rank statistic: ranks of ``|d|``, ``W+``, its exact null distribution.

* :func:`signed_rank_info` sorts ``|d|`` once; the Wilcoxon test
  (:func:`multistat.significance.rank.wilcoxon`), Wilcoxon r and the Hodges-Lehmann
  interval (:mod:`multistat.effect`) all accept the result as ``info=``, so a driver that
  needs several of them for the same differences sorts once and says so explicitly.
* :func:`signed_rank_sums` - ``W+``, its null mean and sd and the tie term from one sort
  of sign-tagged keys (no argsort, no ranks): what the normal approximation needs.
* :func:`signed_rank_pmf` - the exact sign-flip distribution of ``2 W+`` (ties included).
* :func:`walsh_projection_variance` - the Hajek-projection variance of ``W+`` (Wilcoxon r).

Nothing here keeps state between calls, except :func:`_signed_rank_lower_rank`, a
bounded ``functools.lru_cache`` (64 entries) of a pure function of ``(n, tail, exact)``:
the Walsh-average rank of an interval end, whose exact version needs the O(n^3) null
distribution of ``W+`` for ``n`` up to 400.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from multistat._lazy import lazy_module
from multistat.errors import ParameterError
from multistat.significance._rank_numpy import numba_kernels
from multistat.significance._walsh import row_blocks, walsh_order_statistics

stats = lazy_module("scipy.stats")  # imported on first use (t path: never)

__all__ = [
    "EXACT_CI_MAX_N",
    "EXACT_MAX_N",
    "EXACT_TIES_MAX_N",
    "SignedRankInfo",
    "index_dtype",
    "signed_rank_info",
    "signed_rank_pmf",
    "signed_rank_sums",
    "walsh_projection_variance",
]

#: ``method="auto"`` uses the exact null distribution up to this many pairs (as scipy).
EXACT_MAX_N = 50
#: largest n for which the Walsh interval uses the exact critical value (method="exact")
EXACT_CI_MAX_N = 400
#: ``method="auto"`` with ties or zeros: exact conditional (permutation) distribution up
#: to this many pairs (scipy's deterministic permutation test, 2**13 < 9999 resamples).
EXACT_TIES_MAX_N = 13


class SignedRankInfo:
    """Sort information of one array of paired differences ``d`` (instances last).

    Built by :func:`signed_rank_info`; pass it as ``info=`` to
    :func:`~multistat.significance.rank.wilcoxon`,
    :func:`~multistat.significance.rank.hodges_lehmann`,
    :func:`multistat.effect.wilcoxon_r` and :func:`multistat.effect.hodges_lehmann` on the
    same ``x - y`` to sort once. Its lifetime is the caller's: drop it and the memory
    goes with it.

    Attributes
    ----------
    d : ndarray
        The differences described (read-only).
    abs_sort : (order, start, end)
        ``order`` = argsort of ``|d|`` along the last axis; per sorted position, the first
        (``start``) and last (``end``) sorted position of its tie group, so the min/max
        ranks of ``|d|`` (as ``scipy.stats.rankdata``) are ``start + 1`` and ``end + 1``.
    sorted_d : ndarray
        ``np.sort(d, axis=-1)`` (computed on first use), what the Walsh averages need.
    all_finite : bool
        Whether every difference is finite (computed on first use).

    Notes
    -----
    :meth:`walsh` remembers the Walsh order statistics it has selected, so the Wilcoxon
    test and the Hodges-Lehmann effect size of the same differences select them once -
    the memory is this object's, not the module's.
    """

    __slots__ = ("_abs_sort", "_finite", "_sorted", "_sums", "_walsh", "d")

    def __init__(self, d, abs_sort=None):
        self.d = d
        self._abs_sort = abs_sort
        self._finite = None
        self._sorted = None
        self._sums = {}
        self._walsh = {}

    @property
    def abs_sort(self):
        """``(order, start, end)`` of ``|d|`` (one argsort, on first use: the normal
        approximation of the test needs only :meth:`rank_sums`)."""
        if self._abs_sort is None:
            self._abs_sort = _abs_sort(self.d)
        return self._abs_sort

    def rank_sums(self, zero_method):
        """:func:`signed_rank_sums` of ``d`` (computed once per ``zero_method``)."""
        if zero_method not in self._sums:
            self._sums[zero_method] = signed_rank_sums(self.d, zero_method, self.sorted_d)
        return self._sums[zero_method]

    @property
    def all_finite(self) -> bool:
        if self._finite is None:
            self._finite = bool(np.isfinite(self.d).all())
        return self._finite

    @property
    def sorted_d(self):
        if self._sorted is None:
            # a C-ordered copy sorted in place: ``d`` may be strided (pair chunks of a cube
            # whose instances are not innermost), and rows sort fastest contiguous
            self._sorted = np.array(self.d, dtype=np.float64, order="C")
            if self._sorted.size:
                # numpy's sort releases the GIL: blocks of rows on threads (each row
                # sorted on its own, so the same result)
                flat = self._sorted.reshape(-1, self._sorted.shape[-1])
                rows, n = flat.shape
                workers = _row_workers(rows, n)
                row_blocks(lambda a, b: flat[a:b].sort(axis=-1), rows,
                           -(-rows // workers), workers)
            self._sorted.flags.writeable = False
        return self._sorted

    def walsh(self, ranks, memory_limit=None):
        """Walsh order statistics ``ranks`` (0-based) of every row: ``(..., len(ranks))``
        (:func:`multistat.significance._walsh.walsh_order_statistics`), each rank
        selected at most once per object."""
        ranks = [int(r) for r in ranks]
        missing = sorted({r for r in ranks if r not in self._walsh})
        if missing:
            got = walsh_order_statistics(self.sorted_d, missing, memory_limit=memory_limit)
            for i, r in enumerate(missing):
                self._walsh[r] = got[..., i]
        return np.stack([self._walsh[r] for r in ranks], axis=-1)

    def check(self, d, where):
        """Raise if this object does not describe ``d`` (shape and values)."""

        if self.d.shape != d.shape or not np.array_equal(self.d, d):
            raise ParameterError(
                f"{where}: `info` was computed for other differences (shape "
                f"{self.d.shape}, expected {d.shape} equal to x - y); pass "
                f"signed_rank_info(x - y)")


def index_dtype(n: int):
    """The smallest signed integer type holding the positions ``0 .. n`` (int16 up to
    32,767 instances, then int32): ranks and sort orders of a chunk of pairs take 2 or 4
    bytes a value instead of 8."""
    for t in (np.int16, np.int32):
        if n <= np.iinfo(t).max:
            return t
    return np.int64


def signed_rank_info(d) -> SignedRankInfo:
    """Sort ``|d|`` along the last axis once (one argsort, see :class:`SignedRankInfo`).

    Parameters
    ----------
    d : array_like
        Paired differences ``x - y``, instances on the last axis.

    Examples
    --------
    >>> import numpy as np
    >>> from multistat.significance.rank import wilcoxon
    >>> from multistat.effect import wilcoxon_r
    >>> x, y = np.array([[1.0, 2.5, 3.0, 4.5, 0.5]]), np.zeros((1, 5))
    >>> info = signed_rank_info(x - y)  # sort once, use twice
    >>> w, r = wilcoxon(x, y, info=info), wilcoxon_r(x, y, info=info)
    """
    d = np.asarray(d, dtype=np.float64).view()  # a read-only view, no copy
    d.flags.writeable = False
    return SignedRankInfo(d)


def _abs_sort(d):
    """``(order, start, end)`` of ``|d|`` along the last axis (see :class:`SignedRankInfo`)."""
    absd = np.abs(d)
    n = d.shape[-1]
    itype = index_dtype(n)  # positions in the smallest integer type that holds them
    order = np.argsort(absd, axis=-1).astype(itype, copy=False)
    sabs = np.take_along_axis(absd, order, axis=-1)  # sorted |d| (same values as a sort)
    del absd
    idx = np.arange(n, dtype=itype)
    new = np.ones(sabs.shape, dtype=bool)
    new[..., 1:] = sabs[..., 1:] != sabs[..., :-1]
    last = np.ones(sabs.shape, dtype=bool)
    last[..., :-1] = new[..., 1:]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    end = np.minimum.accumulate(np.where(last, idx, n - 1)[..., ::-1], axis=-1)[..., ::-1]
    for a in (order, start, end):
        a.flags.writeable = False
    return order, start, end


def _key_sort_integers(flat):
    """The integers of :func:`signed_rank_sums` for the rows of 2-D ``flat`` from one sort
    of sign-tagged keys: ``(n_zero, tie_all, n_pos, mid2)`` (int64 each)."""
    rows, n = flat.shape
    keys = np.abs(flat).view(np.uint64) << np.uint64(1)
    keys |= (flat < 0).view(np.uint8)  # NaN and -0.0: sign 0
    keys.sort(axis=-1)
    itype = np.int32 if n < 2**31 - 2 else np.int64
    idx = np.arange(n, dtype=itype)
    mag = keys >> np.uint64(1)
    new = np.empty((rows, n), dtype=bool)
    new[:, :1] = True
    np.not_equal(mag[:, 1:], mag[:, :-1], out=new[:, 1:])
    n_zero = np.count_nonzero(mag == 0, axis=-1)
    del mag
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    last = np.empty((rows, n), dtype=bool)
    last[:, -1:] = True
    last[:, :-1] = new[:, 1:]
    del new
    end = np.minimum.accumulate(np.where(last, idx, n - 1)[:, ::-1], axis=-1)[:, ::-1]
    del last
    size = (end - start + 1).astype(np.int64)
    # sum over tie groups of t^3 - t == sum over elements of t_i^2 - 1 (integers: exact)
    tie_all = np.sum(size * size - 1, axis=-1)
    del size
    pos = (keys & np.uint64(1)) == 0
    pos &= keys != 0  # zero differences (key 0) carry no sign
    del keys
    n_pos = np.count_nonzero(pos, axis=-1)
    # twice the sum of the mid-ranks (start + end + 2) of the positive values: integers
    mid2 = np.sum(np.where(pos, start.astype(np.int64) + end + 2, 0), axis=-1)
    return n_zero, tie_all, n_pos, mid2


def _row_workers(rows, n):
    """Threads for work on ``rows`` independent rows of ``n`` values (1 when small)."""
    return min(os.cpu_count() or 1, 4) if rows >= 2 and rows * n >= 200_000 else 1


def _merge_integers_rows(sorted_flat):
    """:func:`~multistat.significance._rank_kernels.merge_integers` over all rows, blocks
    of rows on threads (each row on its own: the split changes nothing)."""
    kernels = numba_kernels()  # heavy: numba, lazily
    if kernels is None:  # without the ``fast`` extra: the keys' sort, the same integers
        return _key_sort_integers(sorted_flat)
    merge_integers = kernels.merge_integers

    rows, n = sorted_flat.shape
    out = np.empty((rows, 4), dtype=np.int64)
    workers = _row_workers(rows, n)
    row_blocks(lambda a, b: merge_integers(sorted_flat, out, a, b), rows,
               -(-rows // workers), workers)
    return out[:, 0], out[:, 1], out[:, 2], out[:, 3]


def signed_rank_sums(d, zero_method="wilcox", sorted_d=None):
    r"""``W+``, its null mean and sd, and the tie information of each row of ``d``, from
    one sort - no argsort, no array of ranks.

    The same numbers as :func:`signed_rank_parts` (without ``ranks``), computed from
    the same integers: each value is the key ``2 * bits(|d|) + [d < 0]`` (the bit
    pattern of a non-negative float orders as the float does), so one ``np.sort`` of the
    keys brings the tie groups of ``|d|`` together with the signs of their members;
    mid-ranks are ``(first + last)/2 + 1`` of the group. Given ``sorted_d`` (``np.sort(d,
    axis=-1)``, which the Walsh averages need anyway), the same integers come from one
    O(n) merge per row of the negative values (backwards) with the positive ones instead
    of a second sort (rows with a NaN still use the keys). Every sum is of integers or
    halves, exact in float64, so ``W+``, the tie term and hence ``z`` and the p-value
    are bit-identical to the rank-array computation. Rows with a NaN are NaN.

    Returns a dict of arrays over the leading shape: ``w_plus``, ``mean``, ``sd``,
    ``count``, ``n_zero``, ``has_ties`` (ties among the non-zero ``|d|``) and
    ``untied`` (no ties in ``|d|`` at all, zeros included).
    """
    d = np.asarray(d, dtype=np.float64)
    lead, n = d.shape[:-1], d.shape[-1]
    if sorted_d is None or n == 0:
        flat = d.reshape(-1, n)
        bad = np.isnan(flat).any(axis=-1)
        ints = _key_sort_integers(flat)
    else:  # (``d`` itself is not touched: it may be strided, a reshape would copy it)
        srt = np.ascontiguousarray(np.asarray(sorted_d, dtype=np.float64).reshape(-1, n))
        bad = np.isnan(srt[:, -1])  # NaN sorts last
        ints = _merge_integers_rows(srt)
        if bad.any():  # NaN rows: the keys' order (their other fields are still reported)
            keyed = _key_sort_integers(d.reshape(-1, n)[bad])
            for full, part in zip(ints, keyed):
                full[bad] = part
    rows = bad.size
    n_zero, tie_all, n_pos, mid2 = ints
    n_zero = n_zero.astype(float)
    tie_all = tie_all.astype(float)
    n_pos = n_pos.astype(float)
    w_pos = mid2.astype(float) / 2.0
    tie_zero = n_zero**3 - n_zero
    if zero_method == "wilcox":
        count = n - n_zero
        w_plus = w_pos - n_zero * n_pos  # ranks of the non-zero values start at 1
        mean = count * (count + 1) / 4.0
        var24 = count * (count + 1) * (2 * count + 1) - (tie_all - tie_zero) / 2.0
    elif zero_method == "pratt":
        count = np.full(rows, float(n))
        w_plus = w_pos
        mean = count * (count + 1) / 4.0 - n_zero * (n_zero + 1) / 4.0
        var24 = (count * (count + 1) * (2 * count + 1)
                 - n_zero * (n_zero + 1) * (2 * n_zero + 1) - (tie_all - tie_zero) / 2.0)
    else:  # zsplit: half the zeros' ranks (their mid-rank is (n_zero + 1)/2)
        count = np.full(rows, float(n))
        w_plus = w_pos + n_zero * (n_zero + 1) / 2.0 / 2.0
        mean = count * (count + 1) / 4.0
        var24 = count * (count + 1) * (2 * count + 1) - tie_all / 2.0
    sd = np.sqrt(np.maximum(var24, 0.0) / 24.0)
    if bad.any():
        w_plus = np.where(bad, np.nan, w_plus)
        sd = np.where(bad, np.nan, sd)
    out = {"w_plus": w_plus, "mean": mean, "sd": sd, "count": count, "n_zero": n_zero,
           "has_ties": (tie_all - tie_zero) > 0, "untied": tie_all == 0}
    return {k: v.reshape(lead) for k, v in out.items()}


# ----------------------------------------------------------------------------- W+
def signed_rank_pmf(doubled_ranks: np.ndarray) -> np.ndarray:
    r"""Exact null distribution of :math:`2W^+` given (doubled) ranks, for many rows at once.

    Parameters
    ----------
    doubled_ranks : ndarray of int, shape (rows, m)
        Twice the ranks (mid-ranks are multiples of 1/2, so these are integers); an entry
        0 contributes nothing (an excluded zero).

    Returns
    -------
    ndarray, shape (rows, 1 + sum of the largest row)
        ``pmf[r, s] = P(sum_i doubled_ranks[r, i] * B_i = s)`` with :math:`B_i` independent
        fair coins: the sign-flip (permutation) distribution of :math:`2W^+`. Without ties
        this is the classical signed-rank distribution.

    Notes
    -----
    Dynamic programming over the ranks, ``pmf <- (pmf + shift(pmf, 2 r_i)) / 2``, vectorized
    over rows; cost :math:`O(m \cdot \sum 2r_i)` per row, i.e. :math:`O(m^3)`.
    """
    dr = np.asarray(doubled_ranks, dtype=np.int64)
    rows, m = dr.shape
    size = int(dr.sum(axis=-1).max()) + 1 if dr.size else 1
    pmf = np.zeros((rows, size))
    pmf[:, 0] = 1.0
    cols = np.arange(size)
    for i in range(m):
        shift = dr[:, i]
        if not shift.any():
            continue
        src = cols[None, :] - shift[:, None]
        shifted = np.take_along_axis(pmf, np.clip(src, 0, None), axis=-1)
        shifted[src < 0] = 0.0
        pmf = 0.5 * (pmf + shifted)
    return pmf




def signed_rank_parts(d, zero_method, info=None):
    """Ranks, W+, null mean/sd and tie information for each row of ``d`` (zeros = ties at 0).

    Returns a dict of arrays over the leading shape (and ``ranks`` of the full shape, with
    0 for differences that do not enter the statistic). ``info``: :func:`signed_rank_info`
    of ``d`` if the caller already has it.
    """
    n_all = d.shape[-1]
    order, start, end = (signed_rank_info(d) if info is None else info).abs_sort
    ranks = np.empty(d.size)
    offs = (np.arange(d.size // n_all if n_all else 0) * n_all).reshape(d.shape[:-1] + (1,))
    ranks[(order + offs).ravel()] = ((start + (end + 2.0)) / 2.0).ravel()  # mid-ranks
    ranks = ranks.reshape(d.shape)
    # sum over tie groups of t^3 - t == sum over elements of t_i^2 - 1 (integers: exact)
    tie_all = np.sum((end - start + 1.0) ** 2 - 1.0, axis=-1)
    is_zero = d == 0
    n_zero = np.count_nonzero(is_zero, axis=-1).astype(float)
    tie_zero = n_zero**3 - n_zero
    pos = d > 0
    if zero_method == "wilcox":
        ranks = np.where(is_zero, 0.0, ranks - n_zero[..., None])
        count = n_all - n_zero
        w_plus = np.sum(np.where(pos, ranks, 0.0), axis=-1)
        mean = count * (count + 1) / 4.0
        var24 = count * (count + 1) * (2 * count + 1) - (tie_all - tie_zero) / 2.0
    elif zero_method == "pratt":
        count = np.full(d.shape[:-1], float(n_all))
        w_plus = np.sum(np.where(pos, ranks, 0.0), axis=-1)
        mean = count * (count + 1) / 4.0 - n_zero * (n_zero + 1) / 4.0
        var24 = (count * (count + 1) * (2 * count + 1)
                 - n_zero * (n_zero + 1) * (2 * n_zero + 1) - (tie_all - tie_zero) / 2.0)
        ranks = np.where(is_zero, 0.0, ranks)
    else:  # zsplit
        count = np.full(d.shape[:-1], float(n_all))
        w_plus = (np.sum(np.where(pos, ranks, 0.0), axis=-1)
                  + np.sum(np.where(is_zero, ranks, 0.0), axis=-1) / 2.0)
        mean = count * (count + 1) / 4.0
        var24 = count * (count + 1) * (2 * count + 1) - tie_all / 2.0
        ranks = np.where(is_zero, 0.0, ranks)
    sd = np.sqrt(np.maximum(var24, 0.0) / 24.0)
    has_ties = (tie_all - tie_zero) > 0  # ties among the non-zero |d|
    return {"ranks": ranks, "w_plus": w_plus, "mean": mean, "sd": sd, "count": count,
                "n_zero": n_zero, "has_ties": has_ties}


def exact_signed_rank_p(ranks, w_plus, alternative):
    """Exact sign-flip p-values of W+ for rows of ``ranks`` (2-D), via the pmf of 2W+."""
    doubled = np.rint(2.0 * ranks).astype(np.int64)
    # rows with the same multiset of ranks (all untied rows of one n) share one pmf
    unique, inverse = np.unique(np.sort(doubled, axis=-1), axis=0, return_inverse=True)
    pmf = signed_rank_pmf(unique)[np.ravel(inverse)]
    obs2 = np.rint(2.0 * w_plus).astype(np.int64)
    cdf = np.cumsum(pmf, axis=-1)
    sf = np.cumsum(pmf[:, ::-1], axis=-1)[:, ::-1]  # sf[s] = P(S >= s)
    size = pmf.shape[-1]
    idx = np.clip(obs2, 0, size - 1)[:, None]
    p_less = np.where(obs2 < 0, 0.0, np.where(obs2 >= size, 1.0,
                                               np.take_along_axis(cdf, idx, -1)[:, 0]))
    p_greater = np.where(obs2 <= 0, 1.0, np.where(obs2 >= size, 0.0,
                                                   np.take_along_axis(sf, idx, -1)[:, 0]))
    if alternative == "greater":
        return np.minimum(p_greater, 1.0)
    if alternative == "less":
        return np.minimum(p_less, 1.0)
    return np.clip(2.0 * np.minimum(p_less, p_greater), 0.0, 1.0)


@functools.lru_cache(maxsize=64)
def _signed_rank_lower_rank(n, tail, exact, correction=False):
    """Walsh-average rank ``k`` of the lower interval end (1-based; 0 = unbounded).

    Exact: R's rule, the smallest ``q`` with ``P(W <= q) >= tail`` (so that
    ``P(W <= q - 1) < tail``; coverage ``1 - 2P(W <= q-1) >= 1 - 2 tail``).
    Normal approximation: the interval is the set of nulls the test does not reject. A
    null between the Walsh averages of ranks ``j`` and ``j + 1`` gives ``W+ = N - j``
    (``N = n(n+1)/2``, no ties), which the normal test rejects in the upper tail exactly
    when ``j <= c = n(n+1)/4 - z sd`` (``c`` lowered by 1/2 with the continuity
    ``correction``), ``sd = sqrt(n(n+1)(2n+1)/24)``; so ``k = floor(c) + 1``, the
    smallest integer above ``c``. It was ``floor(c + 1/2)`` (``c`` rounded), which put
    rejected nulls inside the interval whenever ``c`` rounded down.
    """
    if exact:
        ranks = np.arange(1, n + 1, dtype=np.int64)[None, :] * 2
        pmf = signed_rank_pmf(ranks)[0, ::2]  # W itself (doubled ranks are even)
        cdf = np.cumsum(pmf)
        q = int(np.searchsorted(cdf, tail * (1 - 1e-12), side="left"))
        return q  # P(W <= q-1) < tail, W_(q) is the lower end (q=0: none)
    m = n * (n + 1) / 4.0
    sd = np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    c = m - stats.norm.isf(tail) * sd - (0.5 if correction else 0.0)
    return max(int(np.floor(c)) + 1, 0)


def walsh_projection_variance(d, info=None):
    r"""Hajek-projection estimate of :math:`\mathrm{Var}(W^+)` for each row; zeros of ``d``
    are excluded (Wilcoxon's zero method).

    :math:`W^+ = \sum_{i \le j} h(d_i, d_j)` with :math:`h = 1\{d_i + d_j > 0\} +
    \frac12 1\{d_i + d_j = 0\}`; its projection is :math:`\sum_i g_i` with
    :math:`g_i = \sum_j h(d_i, d_j)` (all j), so :math:`\widehat{\mathrm{Var}}(W^+) =
    m\, s_g^2`. The counts come from one sort of :math:`|d|` (``info``, from
    :func:`signed_rank_info`, shared with the ranks): for
    :math:`d_i > 0`, :math:`\#\{j: d_j \le -d_i\}` is the number of negative
    :math:`d_j` with :math:`|d_j| \ge |d_i|`; for :math:`d_i < 0`,
    :math:`\#\{j: d_j \le |d_i|\}` is all negatives plus the positives with
    :math:`|d_j| \le |d_i|` - prefix counts over the sorted :math:`|d|`, taken at the
    ends of each tie group.
    """
    order, start, end = (signed_rank_info(d) if info is None else info).abs_sort
    d = np.asarray(d, dtype=np.float64)
    lead, n = d.shape[:-1], d.shape[-1]
    rows = d.size // n if n else 0
    var = np.empty(rows)
    g = np.empty((rows, n))
    step = max(1, _PROJECTION_BLOCK // max(n, 1))  # rows are independent: blocks of rows
    flat = [a.reshape(rows, n) for a in (d, order, start, end)]
    for s in range(0, rows, step):
        sl = slice(s, s + step)
        var[sl], g[sl] = _projection_rows(*(a[sl] for a in flat))
    return var.reshape(lead), g.reshape(d.shape)


#: row elements per block of :func:`walsh_projection_variance` (~110 bytes each)
_PROJECTION_BLOCK = 1 << 20


def _projection_rows(d, order, start, end):
    """:func:`walsh_projection_variance` of the rows of 2-D ``d``."""
    n = d.shape[-1]
    # gathers along the last axis through flat indices (faster than take_along_axis)
    offs = (np.arange(d.size // n if n else 0) * n).reshape(d.shape[:-1] + (1,))
    flat_order = (order + offs).ravel()
    flat_start = (start + offs).ravel()
    flat_end = (end + offs).ravel()
    ds = np.take(d.ravel(), flat_order).reshape(d.shape)
    sign = np.sign(ds).astype(np.int8)  # one byte a value
    neg, pos = sign < 0, sign > 0
    cneg = np.cumsum(neg, axis=-1, dtype=np.int32).ravel()  # negatives up to here
    cpos = np.cumsum(pos, axis=-1, dtype=np.int32).ravel()
    tneg = cneg.reshape(d.shape)[..., -1:]
    m = np.count_nonzero(d, axis=-1)
    sign_start = np.take(sign.ravel(), flat_start).reshape(d.shape)
    # prefix counts before the tie group of |d_i| (at its start) and through it (its end)
    neg_before = np.take(cneg, flat_start).reshape(d.shape) - (sign_start < 0)
    neg_through = np.take(cneg, flat_end).reshape(d.shape)
    pos_before = np.take(cpos, flat_start).reshape(d.shape) - (sign_start > 0)
    pos_through = np.take(cpos, flat_end).reshape(d.shape)
    # le + lt with le = #{j: d_j <= -d_i}, lt = #{j: d_j < -d_i} (zeros excluded):
    # d_i > 0: negatives with |d_j| >= |d_i| plus those with |d_j| > |d_i|;
    # d_i < 0: all negatives plus the positives with |d_j| <= |d_i| / < |d_i|
    le_lt = np.where(pos, 2 * tneg - neg_before - neg_through,
                     2 * tneg + pos_through + pos_before)
    # g_i = (m - le) + (le - lt)/2 = m - (le + lt)/2 (integers and halves: exact)
    g_sorted = np.where(sign == 0, np.nan, m[..., None] - 0.5 * le_lt)
    g = np.empty(d.size)
    g[flat_order] = g_sorted.ravel()  # original order: same sums as before
    g = g.reshape(d.shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_g = np.nansum(g, axis=-1) / m
        var_g = np.nansum((g - mean_g[..., None]) ** 2, axis=-1) / (m - 1)
    return m * var_g, g
