"""Rank-based paired tests: the exact sign test and the Wilcoxon signed-rank test.

Also the Walsh-average machinery (Hodges-Lehmann estimate and its distribution-free
interval) that :mod:`multistat.effect` reuses.
"""

from __future__ import annotations

import functools
import hashlib
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import stats

from multistat._validation import check_choice, check_probability
from multistat.errors import ConstantInputWarning, ParameterTypeError, SmallSampleWarning
from multistat.significance._base import TestResult, TestSpec, register
from multistat.significance.parametric import (
    _add_note,
    _check_common,
    _interval_quantile,
    _notes,
    _one_sided_ends,
    _scalar,
    _warn,
)

__all__ = [
    "EXACT_MAX_N",
    "hodges_lehmann",
    "sign_test",
    "signed_rank_pmf",
    "walsh_order_statistics",
    "wilcoxon",
]

#: ``method="auto"`` uses the exact null distribution up to this many pairs (as scipy).
EXACT_MAX_N = 50
#: largest n for which the Walsh interval uses the exact critical value (method="exact")
EXACT_CI_MAX_N = 400
#: ``method="auto"`` with ties or zeros: exact conditional (permutation) distribution up
#: to this many pairs (scipy's deterministic permutation test, 2**13 < 9999 resamples).
EXACT_TIES_MAX_N = 13


# ----------------------------------------------------------------------------- sign test
def _order_stat_rank(n, tail: float):
    """Largest ``k`` with ``P(Bin(n, 1/2) <= k - 1) <= tail`` (0 if none), vectorized.

    ``[d_(k), d_(n-k+1)]`` then covers the median with probability
    ``1 - 2 P(B <= k - 1) >= 1 - 2 tail``.
    """
    n = np.asarray(n)
    q = stats.binom.ppf(tail, n, 0.5)  # smallest q with cdf(q) >= tail
    q = np.where(np.isnan(q), 0, q).astype(np.int64)
    # cdf(q) == tail exactly is allowed (coverage is then exactly 1 - 2 tail)
    k = np.where(stats.binom.cdf(q, n, 0.5) <= tail * (1 + 1e-12), q + 1, q)
    return np.clip(k, 0, None)


def _take_order_stat(sorted_d, k):
    """``sorted_d[..., k - 1]`` per row (k is 1-based), NaN where ``k`` is out of range."""
    n = sorted_d.shape[-1]
    k = np.broadcast_to(np.asarray(k, dtype=np.int64), sorted_d.shape[:-1])
    idx = np.clip(k - 1, 0, n - 1)[..., None]
    out = np.take_along_axis(sorted_d, idx, axis=-1)[..., 0]
    return np.where((k >= 1) & (k <= n), out, np.nan)


def sign_test(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
              zero_method="drop"):
    r"""Exact (binomial) sign test on the median difference, with an order-statistic interval.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis; leading axes are batch axes.
    alternative : {"two-sided", "less", "greater"}
        H1 about the median of ``x - y`` relative to ``null_value``
        (``"greater"``: :math:`P(x - y > \delta) > 1/2`).
    null_value : float
        The null median :math:`\delta`; signs are those of :math:`d_i = x_i - y_i - \delta`.
    confidence_level : float
        Level of the distribution-free interval for the median of ``x - y``.
    zero_method : {"drop", "split"}
        Differences equal to :math:`\delta` carry no sign. ``"drop"`` (default, Hollander et
        al.) removes them, so ``n`` counts only non-zero differences. ``"split"`` gives half
        of them to each sign; with an odd number of zeros one zero is dropped first so the
        counts stay integers (Conover 1999, sec. 3.4).

    Returns
    -------
    TestResult
        ``statistic`` = number of positive differences (with the split share), ``n`` = number
        of signs used, ``estimate`` = median of ``x - y``, ``ci_low``/``ci_high``,
        ``extra={"n_zero": ...}``.

    Notes
    -----
    With :math:`S` positives among :math:`m` signs, :math:`S \sim \mathrm{Bin}(m, 1/2)` under
    H0. ``"greater"``: :math:`p = P(S' \ge S)`; ``"less"``: :math:`p = P(S' \le S)`;
    two-sided: :math:`p = \min(1, 2 P(S' \le \min(S, m - S)))`, which equals
    :func:`scipy.stats.binomtest` for :math:`p_0 = 1/2`.

    The interval uses all :math:`n` differences (zeros included):
    :math:`[d_{(k)}, d_{(n-k+1)}]` with :math:`k` the largest integer such that
    :math:`P(B \le k-1) \le \alpha/2`, :math:`B \sim \mathrm{Bin}(n, 1/2)`, so its
    coverage :math:`1 - 2P(B \le k-1)` is at least the requested level for every continuous
    distribution (Hollander, Wolfe & Chicken 2013, sec. 3.6). One-sided alternatives give
    :math:`[d_{(k)}, \infty)` / :math:`(-\infty, d_{(n-k+1)}]` with :math:`\alpha` in one tail.
    When :math:`n` is too small for any order statistic to reach the level, the interval is
    :math:`(-\infty, \infty)` with a note.

    References
    ----------
    Hollander, M., Wolfe, D. A., & Chicken, E. (2013). Nonparametric Statistical Methods
    (3rd ed.), ch. 3. Wiley. doi:10.1002/9781119196037

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.array([3.0, 4.5, 2.0, 5.0, 4.0, 3.5, 6.0, 4.0])
    >>> y = np.array([2.5, 4.0, 2.0, 4.0, 4.5, 3.0, 5.0, 3.0])
    >>> res = sign_test(x, y)  # one zero difference dropped: 6 positives among 7
    >>> int(res.statistic), int(res.n), bool(np.isclose(res.p_value, stats.binomtest(6, 7).pvalue))
    (6, 7, True)
    """
    x, y, alternative, null_value, confidence_level = _check_common(
        x, y, alternative, null_value, confidence_level)
    zero_method = check_choice("zero_method", zero_method, ("drop", "split"))
    diff = x - y
    d = diff - null_value
    shape = d.shape[:-1]
    notes = _notes(shape)
    pos = np.count_nonzero(d > 0, axis=-1)
    neg = np.count_nonzero(d < 0, axis=-1)
    zeros = d.shape[-1] - pos - neg
    if zero_method == "drop":
        k, m = pos, pos + neg
    else:
        half = zeros // 2
        k, m = pos + half, pos + neg + 2 * half
    empty = m == 0
    _add_note(notes, empty, "all differences equal the null value: no signs to test")
    _warn(empty, ConstantInputWarning,
          "sign test: all differences equal the null value, result is NaN")
    if alternative == "greater":
        p = stats.binom.sf(k - 1, m, 0.5)
    elif alternative == "less":
        p = stats.binom.cdf(k, m, 0.5)
    else:
        p = np.minimum(1.0, 2.0 * stats.binom.cdf(np.minimum(k, m - k), m, 0.5))
    p = np.where(empty, np.nan, p)
    statistic = np.where(empty, np.nan, k.astype(float))

    sorted_diff = np.sort(diff, axis=-1)
    n_all = diff.shape[-1]
    estimate = np.median(diff, axis=-1)

    def interval(level, notes=None):
        kk = _order_stat_rank(n_all, _interval_quantile(level, alternative))
        low = _take_order_stat(sorted_diff, kk)
        high = _take_order_stat(sorted_diff, n_all - kk + 1)
        if kk == 0:
            low = np.full(shape, -np.inf)
            high = np.full(shape, np.inf)
            if notes is not None:
                _add_note(notes, np.ones(shape, bool),
                          f"n = {n_all} is too small for an order-statistic interval at "
                          f"level {level}: interval is unbounded")
        low, high = _one_sided_ends(low, high, alternative)
        return _scalar(low), _scalar(high)

    low, high = interval(confidence_level, notes)
    return TestResult(
        test="sign", statistic=_scalar(statistic), p_value=_scalar(p),
        estimate=_scalar(estimate), ci_low=low, ci_high=high,
        confidence_level=confidence_level, n=_scalar(m.astype(np.int64)),
        alternative=alternative, null_value=null_value, statistic_kind="median",
        note=_scalar(notes), extra={"n_zero": _scalar(zeros.astype(np.int64))},
        _ci_fn=lambda level: interval(check_probability("confidence_level", level)),
    )


# ----------------------------------------------------------------------------- Wilcoxon
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


_ABS_CACHE: dict = {}  # one entry: the Wilcoxon test and Wilcoxon r rank the same |d|


def _data_key(d):
    d = np.ascontiguousarray(d, dtype=np.float64)
    return d.shape, hashlib.blake2b(memoryview(d).cast("B"), digest_size=16).digest()


def _abs_sort_info(d):
    """Sort ``|d|`` along the last axis once: ``(order, start, end)`` with ``order`` the
    argsort and, per sorted position, the first and last sorted position of its tie group.

    The min/max ranks of ``|d|`` (as ``scipy.stats.rankdata``) are ``start + 1`` and
    ``end + 1`` in sorted order; one argsort replaces two ``rankdata`` calls. The last
    result is kept (read-only arrays, keyed by a hash of ``d``): ``compare`` ranks the
    same differences for the Wilcoxon test and for Wilcoxon r.
    """
    key = _data_key(d)
    hit = _ABS_CACHE.get("last")
    if hit is not None and hit[0] == key:
        return hit[1]
    out = _abs_sort_info_compute(d)
    for a in out:
        a.flags.writeable = False
    _ABS_CACHE["last"] = (key, out)
    return out


def _abs_sort_info_compute(d):
    absd = np.abs(d)
    order = np.argsort(absd, axis=-1)
    sabs = np.sort(absd, axis=-1)  # = absd along order (same values)
    n = d.shape[-1]
    idx = np.arange(n)
    new = np.ones(sabs.shape, dtype=bool)
    new[..., 1:] = sabs[..., 1:] != sabs[..., :-1]
    last = np.ones(sabs.shape, dtype=bool)
    last[..., :-1] = new[..., 1:]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=-1)
    end = np.minimum.accumulate(np.where(last, idx, n - 1)[..., ::-1], axis=-1)[..., ::-1]
    return order, start, end


def _signed_rank_parts(d, zero_method, info=None):
    """Ranks, W+, null mean/sd and tie information for each row of ``d`` (zeros = ties at 0).

    Returns a dict of arrays over the leading shape (and ``ranks`` of the full shape, with
    0 for differences that do not enter the statistic). ``info``: ``_abs_sort_info(d)``
    if already computed.
    """
    n_all = d.shape[-1]
    order, start, end = _abs_sort_info(d) if info is None else info
    ranks = np.empty(d.size)
    offs = (np.arange(d.size // n_all if n_all else 0) * n_all).reshape(d.shape[:-1] + (1,))
    ranks[(order + offs).ravel()] = ((start + end + 2) / 2.0).ravel()  # mid-ranks
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


def _exact_signed_rank_p(ranks, w_plus, alternative):
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
def _signed_rank_lower_rank(n, tail, exact):
    """Walsh-average rank ``k`` of the lower interval end (1-based; 0 = unbounded).

    Exact: R's rule, the smallest ``q`` with ``P(W <= q) >= tail`` (so that
    ``P(W <= q - 1) < tail``; coverage ``1 - 2P(W <= q-1) >= 1 - 2 tail``).
    Normal approximation with continuity correction:
    ``k = floor(n(n+1)/4 + 1/2 - z * sqrt(n(n+1)(2n+1)/24))``.
    """
    if exact:
        ranks = np.arange(1, n + 1, dtype=np.int64)[None, :] * 2
        pmf = signed_rank_pmf(ranks)[0, ::2]  # W itself (doubled ranks are even)
        cdf = np.cumsum(pmf)
        q = int(np.searchsorted(cdf, tail * (1 - 1e-12), side="left"))
        return q  # P(W <= q-1) < tail, W_(q) is the lower end (q=0: none)
    m = n * (n + 1) / 4.0
    sd = np.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    return max(int(np.floor(m + 0.5 - stats.norm.isf(tail) * sd)), 0)


_WALSH_DENSE_ROW_MAX = 8_000  # n(n+1)/2 up to which rows are materialised (n <= 125)
_WALSH_CHUNK = 4_000_000  # Walsh averages materialised at once (32 MB)
_WALSH_SPARSE_CHUNK = 800_000  # rows x n per batch of the implicit selection (~200-400 MB)
_WALSH_THREADS = min(os.cpu_count() or 1, 4)  # threads of the implicit selection
_WALSH_THREAD_MIN = 200_000  # rows x n from which it uses them


class _WalshRows:
    """Sorted rows ``S`` (R, n) and what exact counting of their Walsh averages needs."""

    def __init__(self, S):
        self.S = S
        self.R, self.n = S.shape
        self.flat = S.ravel()
        idx = np.arange(self.n)
        new = np.ones(S.shape, dtype=bool)
        new[:, 1:] = S[:, 1:] != S[:, :-1]
        last = np.ones(S.shape, dtype=bool)
        last[:, :-1] = new[:, 1:]
        # tie groups of each row: first index, and one past the last index
        self.gstart = np.maximum.accumulate(np.where(new, idx, 0), axis=1).ravel()
        self.gend = (np.minimum.accumulate(np.where(last, idx, self.n - 1)[:, ::-1],
                                           axis=1)[:, ::-1] + 1).ravel()

    def row_search(self, rows, values, side):
        """``searchsorted(S[rows[k]], values[k])`` for all k; ``rows`` must be sorted."""
        out = np.empty(values.size, dtype=np.int64)
        bounds = np.searchsorted(rows, np.arange(self.R + 1))
        S = self.S
        for r in np.flatnonzero(np.diff(bounds)):
            a, b = bounds[r], bounds[r + 1]
            out[a:b] = np.searchsorted(S[r], values[a:b], side=side)
        return out

    def count(self, rows, t, want_lt=True):
        """For pivots ``t`` (one per entry of ``rows``): ragged ``(owner, i, e_le, e_lt)``
        over ``i`` with ``s_i <= t`` and the counts ``#{W <= t}``, ``#{W < t}``.

        ``e_le[i]`` / ``e_lt[i]``: the ``j`` with ``(s_i + s_j)/2 <= t`` (``< t``) are
        exactly ``j < e``, evaluated with the same floating-point expression as the
        averages (``searchsorted`` on ``2t - s_i`` finds the boundary up to rounding; the
        fix-up moves it by whole tie groups).
        """
        n, flat = self.n, self.flat
        # pivots grouped by row: one searchsorted per row over all of its pivots' queries
        perm = np.argsort(rows, kind="stable")
        rows_s, t_s = rows[perm], t[perm]
        h = self.row_search(rows_s, t_s, "right")  # #{i: W_ii = s_i <= t}
        total = int(h.sum())
        owner_s = np.repeat(np.arange(rows.size), h)
        ii = np.arange(total) - np.repeat(np.cumsum(h) - h, h)
        base = rows_s[owner_s] * n
        si = flat[base + ii]
        tv = t_s[owner_s]
        e = self.row_search(rows_s[owner_s], 2.0 * tv - si, "right")
        owner = perm[owner_s]
        np.clip(e, 0, n, out=e)
        # fix-up: W(i, e-1) <= t < W(i, e)
        sel = None
        while sel is None or sel.size:
            if sel is None:
                es, b, s_, t_ = e, base, si, tv
            else:
                es, b, s_, t_ = e[sel], base[sel], si[sel], tv[sel]
            jm = np.maximum(es - 1, 0)
            down = (es > 0) & ~((s_ + flat[b + jm]) / 2.0 <= t_)
            jp = np.minimum(es, n - 1)
            up = (es < n) & ((s_ + flat[b + jp]) / 2.0 <= t_) & ~down
            es = np.where(down, self.gstart[b + jm], es)
            es = np.where(up, self.gend[b + jp], es)
            if sel is None:
                sel = np.flatnonzero(down | up)
                e = es
            else:
                e[sel] = es
                sel = sel[down | up]
        e_le = e
        c_le = np.bincount(owner, weights=e_le - ii, minlength=rows.size).astype(np.int64)
        if not want_lt:
            return owner, ii, e_le, None, c_le, None
        e_lt = e_le.copy()
        sel = np.flatnonzero(e_lt > 0)
        while sel.size:
            es = e_lt[sel]
            b = base[sel]
            jm = es - 1
            down = (si[sel] + flat[b + jm]) / 2.0 >= tv[sel]  # == t: not < t
            e_lt[sel] = np.where(down, self.gstart[b + jm], es)
            sel = sel[down & (e_lt[sel] > 0)]
        c_lt = np.bincount(owner, weights=np.maximum(e_lt - ii, 0), minlength=rows.size)
        return owner, ii, e_le, e_lt, c_le, c_lt.astype(np.int64)

    def candidates(self, rows, lo, hi):
        """Walsh averages with ``max(lo_i, i) <= j < hi_i`` for each row of ``lo``/``hi``
        (V, n): ragged ``(owner, values)`` and the counts per row."""
        n = self.n
        idx = np.arange(n)
        start = np.maximum(lo, idx)
        cnt = np.maximum(hi - start, 0).ravel()
        total = int(cnt.sum())
        cell = np.repeat(np.arange(cnt.size), cnt)
        first = np.cumsum(cnt) - cnt
        jj = start.ravel()[cell] + (np.arange(total) - first[cell])
        owner = cell // n
        ii = cell - owner * n
        base = rows[owner] * n
        vals = (self.flat[base + ii] + self.flat[base + jj]) / 2.0
        return owner, vals, cnt.reshape(lo.shape).sum(axis=1)


def _fix_boundary(W, e, base, si, t, strict):
    """Move each ``e`` to the exact boundary ``W(i, j) < t`` (``<= t`` unless strict) for
    ``j < e`` and not for ``j >= e``, with ``W(i, j) = (s_i + s_j)/2`` evaluated as the
    averages are; ``e`` is off by rounding only, so one or two moves by whole tie groups
    of ``s_j`` (which share the predicate) suffice."""
    n, flat = W.n, W.flat

    def pred(j, sel):
        w = (si[sel] + flat[base[sel] + j]) / 2.0
        return w < t[sel] if strict else w <= t[sel]

    e = np.clip(e, 0, n)
    sel = np.arange(e.size)
    while sel.size:
        es = e[sel]
        jm = np.maximum(es - 1, 0)
        down = (es > 0) & ~pred(jm, sel)
        jp = np.minimum(es, n - 1)
        up = (es < n) & pred(jp, sel) & ~down
        b = base[sel]
        es = np.where(down, W.gstart[b + jm], es)
        es = np.where(up, W.gend[b + jp], es)
        e[sel] = es
        sel = sel[down | up]
    return e


def _sample_pivots(W, rows, lo, hi, c_lo, c_hi, ka, kb, rng, m, z):
    """Two pivots per row: quantiles, around the wanted ranks, of ``m`` candidates drawn
    uniformly (with replacement) without materialising the candidates."""
    n = W.n
    start = np.maximum(lo, np.arange(n))
    cnt = np.maximum(hi - start, 0).ravel()
    cum = np.cumsum(cnt)
    cs = c_hi - c_lo
    first = cum[n - 1::n] - cs  # candidates before each row
    draw = np.floor(rng.random((rows.size, m)) * cs[:, None]).astype(np.int64)
    draw = np.minimum(draw, cs[:, None] - 1)
    draw.sort(axis=1)
    g = (draw + first[:, None]).ravel()
    cell = np.searchsorted(cum, g, side="right")
    i = cell % n
    j = start.ravel()[cell] + (g - (cum[cell] - cnt[cell]))
    base = np.repeat(rows, m) * n
    samp = np.sort(((W.flat[base + i] + W.flat[base + j]) / 2.0).reshape(rows.size, m),
                   axis=1)
    pa = (ka - c_lo) / cs
    pb = (kb + 1 - c_lo) / cs
    gap = z * np.sqrt(m * np.maximum(pa * (1 - pa), 1.0 / m)) + 1
    ia = np.clip(np.floor(pa * m - gap).astype(np.int64), 0, m - 1)
    ib = np.clip(np.ceil(pb * m + gap).astype(np.int64), 0, m - 1)
    r = np.arange(rows.size)
    pa_v, pb_v = samp[r, ia], samp[r, ib]
    # tied sample at the wanted position (heavy ties): count that value itself, it is
    # probably the answer
    pc = samp[r, np.clip(np.round((pa + pb) / 2 * (m - 1)).astype(np.int64), 0, m - 1)]
    tied = np.count_nonzero(samp == pc[:, None], axis=1) >= 2
    pb_v = np.where(tied & (pb_v == pc), pa_v, pb_v)
    pa_v = np.where(tied, pc, pa_v)
    return np.stack([pa_v, pb_v], axis=1)



def _group_ranks(ranks):
    groups = []  # adjacent ranks share one search
    i = 0
    while i < len(ranks):
        if i + 1 < len(ranks) and ranks[i + 1] == ranks[i] + 1:
            groups.append((ranks[i], ranks[i + 1]))
            i += 2
        else:
            groups.append((ranks[i], ranks[i]))
            i += 1
    return groups


def _exact_loop(W, vrow, ka, kb, piv, rng, *, z=2.5, c_max=2048, frac=0.05, m_fb=64,
                state=None):
    """Exact order statistics ``ka`` and ``kb`` (``kb`` = ``ka`` or ``ka + 1``) of the
    Walsh averages of rows ``vrow``: each round counts two pivots per row exactly and
    keeps the candidates between the tightest bounds; next pivots by interpolation of
    the exact counts, or (no finite bracket / slow progress / ties) as quantiles of a
    sample of the candidates; at most ``c_max`` candidates are enumerated and sorted.
    ``state``: known bounds ``(t_lo, c_lo, lo, t_hi, c_hi, hi)``; the first pivots are
    then sampled from the candidates between them (``piv`` is ignored)."""
    n = W.n
    N = n * (n + 1) // 2
    V = vrow.size
    ka = ka.copy()
    kb = kb.copy()
    k_orig = np.stack([ka, kb], axis=1)
    ans = np.full((V, 2), np.nan)
    got = np.zeros((V, 2), dtype=bool)
    t_lo = np.full(V, -np.inf)
    c_lo = np.zeros(V, dtype=np.int64)
    t_hi = np.full(V, np.inf)
    c_hi = np.full(V, N, dtype=np.int64)
    lo = np.zeros((V, n), dtype=np.int64)
    hi = np.full((V, n), n, dtype=np.int64)
    active = np.ones(V, dtype=bool)
    last_c = np.full(V, N, dtype=np.int64)
    if state is not None:
        t_lo, c_lo, lo, t_hi, c_hi, hi = state
        last_c = c_hi - c_lo
        piv = _sample_pivots(W, vrow, lo, hi, c_lo, c_hi, ka, kb, rng, m_fb, z)

    for _round in range(200):
        vs = np.flatnonzero(active)
        if not vs.size:
            break
        piv = piv[vs]
        rows2 = np.concatenate([vrow[vs], vrow[vs]])
        t2 = np.concatenate([piv[:, 0], piv[:, 1]])
        owner, ii, e_le, e_lt, c_le, c_lt = W.count(rows2, t2)
        nv = vs.size
        for half in (0, 1):
            sl = slice(half * nv, (half + 1) * nv)
            t, cle, clt = t2[sl], c_le[sl], c_lt[sl]
            a, b = ka[vs], kb[vs]
            # answers: ranks k with c_lt <= k < c_le equal t
            hit = []
            for col, k in ((0, a), (1, b)):
                h_ = (clt <= k) & (k < cle) & ~got[vs, col]
                ans[vs[h_], col] = t[h_]
                got[vs[h_], col] = True
                hit.append(h_)
            ga, gb = got[vs, 0], got[vs, 1]
            both = ga & gb
            # a pivot equal to one rank of the pair: the other lies above / below it
            st_up = hit[0] & ~gb
            st_dn = hit[1] & ~ga
            ka[vs[st_up]] = kb[vs[st_up]]
            kb[vs[st_dn]] = ka[vs[st_dn]]
            lower = ((cle <= a) | st_up) & ~both & (cle > c_lo[vs])
            upper = ((clt > b) | st_dn) & ~both & (clt < c_hi[vs])
            m_ent = (owner >= half * nv) & (owner < (half + 1) * nv)
            own = owner[m_ent] - half * nv
            i_ent = ii[m_ent]
            for mask, arr, e_arr, tt, cc, cnew in ((lower, lo, e_le[m_ent], t_lo, c_lo, cle),
                                                   (upper, hi, e_lt[m_ent], t_hi, c_hi, clt)):
                if not mask.any():
                    continue
                vsel = vs[mask]
                arr[vsel] = 0
                ent = mask[own]
                arr[vs[own[ent]], i_ent[ent]] = e_arr[ent]
                tt[vsel] = t[mask]
                cc[vsel] = cnew[mask]
        done = got[vs, 0] & got[vs, 1]
        active[vs[done]] = False
        vs = vs[~done]
        csize = c_hi[vs] - c_lo[vs]
        small = csize <= c_max
        active[vs[small]] = False
        vs = vs[~small]
        if not vs.size:
            break
        csize = c_hi[vs] - c_lo[vs]
        # next pivots: interpolation inside a finite bracket that shrank well, else sample
        piv = np.full((vs.size, 2), np.nan)
        fin = np.isfinite(t_lo[vs]) & np.isfinite(t_hi[vs]) & (csize * 4 <= last_c[vs])
        if fin.any():
            f = vs[fin]
            slope = (c_hi[f] - c_lo[f]) / (t_hi[f] - t_lo[f])
            mu = np.maximum(frac * (c_hi[f] - c_lo[f]), 16.0)
            pa = t_lo[f] + (ka[f] - mu - c_lo[f]) / slope
            pb = t_lo[f] + (kb[f] + 1 + mu - c_lo[f]) / slope
            # a pivot is used only strictly inside the bracket
            pa = np.where((ka[f] - mu > c_lo[f]) & (pa > t_lo[f]) & (pa < t_hi[f]), pa, np.nan)
            pb = np.where((kb[f] + 1 + mu < c_hi[f]) & (pb > t_lo[f]) & (pb < t_hi[f]), pb,
                          np.nan)
            piv[fin, 0] = pa
            piv[fin, 1] = pb
        last_c[vs] = csize
        need = ~fin | (np.isnan(piv[:, 0]) & np.isnan(piv[:, 1]))
        if need.any():
            f = vs[need]
            piv[need] = _sample_pivots(W, vrow[f], lo[f], hi[f], c_lo[f], c_hi[f],
                                       ka[f], kb[f], rng, m_fb, z)
        # a missing interpolation pivot: reuse the other one
        piv[:, 0] = np.where(np.isnan(piv[:, 0]), piv[:, 1], piv[:, 0])
        piv[:, 1] = np.where(np.isnan(piv[:, 1]), piv[:, 0], piv[:, 1])
        full = np.full((V, 2), np.nan)
        full[vs] = piv
        piv = full
    rest = np.flatnonzero(~(got[:, 0] & got[:, 1]))
    if rest.size:
        owner_c, vals, cnt = W.candidates(vrow[rest], lo[rest], hi[rest])
        rect = _rect_sort(owner_c, vals, cnt)
        for col in (0, 1):
            rloc = np.flatnonzero(~got[rest, col])
            v = rest[rloc]
            ans[v, col] = rect[rloc, k_orig[v, col] - c_lo[v]]
    return ans


def _rect_sort(owner, vals, cnt):
    """Ragged values (grouped by ``owner``, ``cnt`` per group) as sorted rows of a
    rectangle padded with +inf."""
    width = int(cnt.max()) if cnt.size else 0
    rect = np.full((cnt.size, max(width, 1)), np.inf)
    first = np.cumsum(cnt) - cnt
    rect[owner, np.arange(vals.size) - first[owner]] = vals
    rect.sort(axis=1)
    return rect


def _approx_counts(W, rows, t, mid, weight):
    """``#{W <= t}`` estimated from the rows ``i`` in ``mid`` (block centres, weights =
    block lengths) of the implicit Walsh matrix: one ``searchsorted`` per block."""
    perm = np.argsort(rows, kind="stable")
    q = 2.0 * t[perm, None] - W.S[rows[perm][:, None], mid[None, :]]
    e = np.empty(q.shape, dtype=np.int64)
    e[perm] = W.row_search(np.repeat(rows[perm], mid.size), q.ravel(),
                           "right").reshape(q.shape)
    return np.maximum(e - mid, 0) @ weight


def _approx_pivots(W, vrow, ka, kb, rng, *, m0=2048, block=7, iters=3, margin=None):
    """Pivots just below rank ``ka`` and just above ``kb`` for each row, found on
    approximate counts (block-centre rows of the Walsh matrix): from the quantile of a
    random sample of Walsh averages, a Newton step with the sample's local density, then
    secant steps; the margin on each side is converted to a distance with the same
    density. Only the pivots come from here: ranks are then counted exactly."""
    n, R = W.n, W.R
    N = n * (n + 1) // 2
    if margin is None:
        margin = 8.0 * np.sqrt(n) + 32.0
    m0 = int(min(m0, N))
    # pairs i <= j nearly uniformly (the diagonal has half weight: only pivots depend on it)
    u = rng.integers(0, n, size=(2, R, m0))
    rr = np.arange(R)[:, None] * n
    sample = np.sort((W.flat[rr + u[0]] + W.flat[rr + u[1]]) / 2.0, axis=1)
    rows = vrow
    target = (ka + kb + 1) / 2.0
    p = np.clip(target / N, 0.0, 1.0)
    pos = np.clip(np.round(p * (m0 - 1)).astype(np.int64), 0, m0 - 1)
    # local density of the Walsh averages (ranks per unit) from the sample
    w = max(16, m0 // 32)
    ja, jb = np.maximum(pos - w, 0), np.minimum(pos + w, m0 - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        density = (jb - ja) / m0 * N / (sample[rows, jb] - sample[rows, ja])
    ok = np.isfinite(density) & (density > 0)
    dens = np.where(ok, density, 1.0)
    lo_t, hi_t = W.S[rows, 0], W.S[rows, -1]  # every Walsh average lies in between
    starts = np.arange(0, n, block)
    mid = np.minimum(starts + block // 2, n - 1)
    weight = (np.minimum(starts + block, n) - starts).astype(np.float64)
    t_prev = sample[rows, pos]
    c_prev = _approx_counts(W, rows, t_prev, mid, weight)
    t_cur = np.clip(t_prev + np.where(ok, (target - c_prev) / dens, 0.0), lo_t, hi_t)
    t_best, c_best = t_prev, c_prev
    for _ in range(iters):
        c_cur = _approx_counts(W, rows, t_cur, mid, weight)
        better = np.abs(c_cur - target) < np.abs(c_best - target)
        t_best = np.where(better, t_cur, t_best)
        c_best = np.where(better, c_cur, c_best)
        dc = c_cur - c_prev
        dt = t_cur - t_prev
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where((dc != 0) & (dt != 0), (target - c_cur) * dt / dc,
                            (target - c_cur) / dens)
        t_prev, c_prev = t_cur, c_cur
        t_cur = np.clip(t_cur + np.where(np.isfinite(step), step, 0.0), lo_t, hi_t)
    pa = t_best - (c_best - ka + margin) / dens
    pb = t_best + (kb + 1 + margin - c_best) / dens
    return np.stack([pa, pb], axis=1)


def _fast_exact(W, vrow, ka, kb, piv, c_max):
    """One exact pass: ``e(t_a)`` by search, ``e(t_b)`` by scanning forward from it;
    rows whose pivots bracket their ranks with at most ``c_max`` candidates get their
    answers by enumeration. Returns ``(ans, ok)``."""
    n, flat = W.n, W.flat
    V = vrow.size
    t_a, t_b = piv[:, 0], piv[:, 1]
    owner, ii, e_le, _, c_le, _ = W.count(vrow, t_a, want_lt=False)
    # ragged over i < h(t_b): candidates start at max(e_le(t_a), i)
    h_b = W.row_search(vrow, t_b, "right")  # vrow is sorted
    h_b = np.maximum(h_b, 0)
    total = int(h_b.sum())
    own_b = np.repeat(np.arange(V), h_b)
    first_b = np.cumsum(h_b) - h_b
    ii_b = np.arange(total) - first_b[own_b]
    start = ii_b.copy()
    h_a_ok = ii < h_b[owner]
    start[first_b[owner[h_a_ok]] + ii[h_a_ok]] = np.maximum(e_le[h_a_ok], ii[h_a_ok])
    base = vrow[own_b] * n
    si = flat[base + ii_b]
    tb = t_b[own_b]
    # e_lt(t_b) >= start; where W(i, start) < t_b already, search 2 t_b - s_i and fix up
    end = start.copy()
    adv = np.flatnonzero(start < n)
    adv = adv[(si[adv] + flat[base[adv] + start[adv]]) / 2.0 < tb[adv]]
    if adv.size:
        e = W.row_search(vrow[own_b[adv]], 2.0 * tb[adv] - si[adv], "left")
        end[adv] = _fix_boundary(W, np.maximum(e, start[adv] + 1), base[adv], si[adv],
                                 tb[adv], strict=True)
    cnt = end - start
    c_lt_b = c_le + np.bincount(own_b, weights=cnt, minlength=V).astype(np.int64)
    C = c_lt_b - c_le
    ok = (c_le <= ka) & (kb < c_lt_b) & (C <= c_max) & (t_b > t_a)
    ans = np.full((V, 2), np.nan)
    if ok.any():
        keep = ok[own_b] & (cnt > 0)
        o, st, cn = own_b[keep], start[keep], cnt[keep]
        tot = int(cn.sum())
        cell = np.repeat(np.arange(o.size), cn)
        jj = st[cell] + (np.arange(tot) - (np.cumsum(cn) - cn)[cell])
        b2 = base[keep][cell]
        vals = (flat[b2 + ii_b[keep][cell]] + flat[b2 + jj]) / 2.0
        vo = o[cell]
        okv = np.flatnonzero(ok)
        loc = np.full(V, -1)
        loc[okv] = np.arange(okv.size)
        rect = _rect_sort(loc[vo], vals, C[okv])
        ans[okv, 0] = rect[np.arange(okv.size), ka[okv] - c_le[okv]]
        ans[okv, 1] = rect[np.arange(okv.size), kb[okv] - c_le[okv]]

    def state(sub):
        """Bounds known from the two exact counts, for the rows ``sub`` (sorted)."""
        N = n * (n + 1) // 2
        B = sub.size
        loc = np.full(V, -1)
        loc[sub] = np.arange(B)
        t_lo = np.full(B, -np.inf)
        c_lo = np.zeros(B, dtype=np.int64)
        t_hi = np.full(B, np.inf)
        c_hi = np.full(B, N, dtype=np.int64)
        lo = np.zeros((B, n), dtype=np.int64)
        hi = np.full((B, n), n, dtype=np.int64)
        low_ok = (c_le[sub] <= ka[sub])
        up_b = (kb[sub] < c_lt_b[sub]) & (t_b[sub] > t_a[sub])  # else e(t_b) unknown
        li = loc[owner]
        ent_lo = (li >= 0) & low_ok[np.maximum(li, 0)]
        lo[li[ent_lo], ii[ent_lo]] = e_le[ent_lo]
        t_lo[low_ok], c_lo[low_ok] = t_a[sub[low_ok]], c_le[sub[low_ok]]
        hi[up_b] = 0
        # t_a above the ranks: an upper bound (needs #{W < t_a}: counted again, rare)
        cand = np.flatnonzero(~low_ok & ~up_b)
        up_a = np.zeros(B, dtype=bool)
        if cand.size:
            own_a, ii_a, _, e_lt_a, _, c_lt_a = W.count(vrow[sub[cand]], t_a[sub[cand]])
            use = kb[sub[cand]] < c_lt_a
            up_a[cand[use]] = True
            hi[cand[use]] = 0
            ent = use[own_a]
            hi[cand[own_a[ent]], ii_a[ent]] = e_lt_a[ent]
            c_hi[cand[use]] = c_lt_a[use]
            t_hi[cand[use]] = t_a[sub[cand[use]]]
        lb = loc[own_b]
        ent_ub = (lb >= 0) & up_b[np.maximum(lb, 0)]
        hi[lb[ent_ub], ii_b[ent_ub]] = end[ent_ub]
        t_hi[up_b], c_hi[up_b] = t_b[sub[up_b]], c_lt_b[sub[up_b]]
        return t_lo, c_lo, lo, t_hi, c_hi, hi

    return ans, ok, state


def _walsh_select_sparse(S, ranks, *, seed=0, c_max=None, **kw):
    """Walsh order statistics ``ranks`` (sorted, distinct) of the sorted rows ``S``
    (R, n) without materialising the averages (see :func:`walsh_order_statistics`)."""
    S = np.ascontiguousarray(S, dtype=np.float64)
    R, n = S.shape
    ranks = sorted({int(k) for k in ranks})
    groups = _group_ranks(ranks)
    G = len(groups)
    W = _WalshRows(S)
    rng = np.random.default_rng(seed)
    vrow = np.repeat(np.arange(R), G)
    ka = np.tile(np.array([g[0] for g in groups], dtype=np.int64), R)
    kb = np.tile(np.array([g[1] for g in groups], dtype=np.int64), R)
    if c_max is None:
        c_max = max(4 * n, 2048)
    piv = _approx_pivots(W, vrow, ka, kb, rng, **kw)
    ans, ok, state = _fast_exact(W, vrow, ka, kb, piv, c_max)
    bad = np.flatnonzero(~ok)
    if bad.size:  # missed or too wide (ties): exact rounds from the bounds found
        ans[bad] = _exact_loop(W, vrow[bad], ka[bad], kb[bad], piv[bad], rng, c_max=c_max,
                               state=state(bad))
    out = np.empty((R, len(ranks)))
    ansr = ans.reshape(R, G, 2)
    col_of = {}
    for g, (a, b) in enumerate(groups):
        col_of[a] = (g, 0)
        col_of[b] = (g, 1)
    for c, k in enumerate(ranks):
        g, col = col_of[k]
        out[:, c] = ansr[:, g, col]
    return out


def walsh_order_statistics(sorted_d, ranks, *, dense_row_max=_WALSH_DENSE_ROW_MAX):
    r"""Order statistics of the Walsh averages ``(d_i + d_j)/2, i <= j`` of each row.

    Parameters
    ----------
    sorted_d : ndarray, shape (..., n)
        Differences sorted along the last axis.
    ranks : sequence of int
        0-based positions wanted in the sorted Walsh averages (the same for every row).
    dense_row_max : int
        Up to this many Walsh averages per row they are materialised (in chunks of rows of
        at most 4 million numbers) and partitioned; above it, a selection over the
        implicit sorted Walsh matrix, vectorized across rows, needs O(rows x n) memory
        (batches of 800,000 row-elements, run in up to 4 threads) and is exact whatever
        the data (ties included).

    Returns
    -------
    ndarray, shape (..., len(ranks))

    Notes
    -----
    Implicit selection (the idea of Monahan 1984 / Johnson & Mizoguchi 1978, across rows
    at once): row ``i`` of the Walsh matrix, :math:`(s_i + s_j)/2` for :math:`j \ge i`,
    increases in ``j``, so the number of averages :math:`\le t` is
    :math:`\sum_{i: s_i \le t} (e_i - i)` with :math:`e_i` a ``searchsorted`` of
    :math:`2t - s_i`, fixed up to agree exactly with the floating-point average.
    (1) Pivots: regula falsi on approximate counts (every 7th row of the matrix) from
    quantiles of a random sample of averages, placed :math:`8\sqrt n + 32` ranks below
    and above the wanted ones. (2) The lower pivot is counted exactly, the upper one by
    scanning forward from it; when they bracket the wanted ranks (almost always) the
    few averages between them are enumerated and sorted. (3) Otherwise (heavy ties, a
    missed bracket) rounds of exact counts at interpolated or sampled pivots shrink the
    bracket; a pivot whose counts straddle a rank is that order statistic. The random
    numbers only place pivots: the result is exact and does not depend on them.
    360 rows of n = 2000, the four Wilcoxon ranks: about 0.25 s (1.1 s row by row);
    rows with heavy ties (binary, Likert, rounded scores) need 1-4 exact rounds more.

    References
    ----------
    Monahan, J. F. (1984). Algorithm 616: fast computation of the Hodges-Lehmann
    location estimator. ACM TOMS 10(3), 265-270. doi:10.1145/1271.319414
    """
    sorted_d = np.asarray(sorted_d, dtype=np.float64)
    lead = sorted_d.shape[:-1]
    n = sorted_d.shape[-1]
    flat = sorted_d.reshape(-1, n)
    ranks = [int(r) for r in ranks]
    out = np.empty((flat.shape[0], len(ranks)))
    n_walsh = n * (n + 1) // 2
    if n_walsh <= dense_row_max:
        iu, ju = np.triu_indices(n)
        rows_per_chunk = max(1, _WALSH_CHUNK // n_walsh)
        kth = sorted(set(ranks))
        for start in range(0, flat.shape[0], rows_per_chunk):
            block = flat[start:start + rows_per_chunk]
            walsh = (block[:, iu] + block[:, ju]) / 2.0
            walsh = np.partition(walsh, kth, axis=-1)
            out[start:start + rows_per_chunk] = walsh[:, ranks]
    elif flat.shape[0]:
        uniq = sorted(set(ranks))
        col = [uniq.index(r) for r in ranks]
        rows = flat.shape[0]
        # numpy releases the GIL in the heavy parts: threads over blocks of rows (exact
        # results, so they do not depend on the split); memory <= _WALSH_SPARSE_CHUNK
        workers = _WALSH_THREADS if rows >= 2 and rows * n >= _WALSH_THREAD_MIN else 1
        per = max(1, min(-(-rows // workers), _WALSH_SPARSE_CHUNK // (workers * n)))
        starts = list(range(0, rows, per))

        def run(start):
            return _walsh_select_sparse(flat[start:start + per], uniq)

        if workers > 1 and len(starts) > 1:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(run, starts))
        else:
            results = [run(start) for start in starts]
        for start, res in zip(starts, results):
            out[start:start + per] = res[:, col]
    return out.reshape(*lead, len(ranks))


def _walsh_exact_rows(diff, method="auto"):
    """Rows whose Walsh interval uses the exact signed-rank critical value: no ties in
    ``|x - y|`` and no zero differences (the continuous case the exact distribution is
    for), and ``method`` "exact" with ``n <= 400`` (above, the O(n^3) distribution costs
    seconds and the continuity-corrected normal value is as good), or "auto" with
    ``n <= 50``."""
    if method == "approx":
        return np.zeros(diff.shape[:-1], dtype=bool)
    absd = np.sort(np.abs(diff), axis=-1)
    clean = ~np.any(absd[..., 1:] == absd[..., :-1], axis=-1) & ~np.any(diff == 0, axis=-1)
    clean &= diff.shape[-1] <= (EXACT_MAX_N if method == "auto" else EXACT_CI_MAX_N)
    return clean


_HL_CACHE: dict = {}  # one entry: the Wilcoxon test and effect_sizes share the work


def _hl_and_interval(diff, level, alternative, exact):
    """Hodges-Lehmann estimate and Walsh-average interval for each row of ``diff``.

    ``exact`` (array over rows) selects the exact or normal-approximation critical value.
    Returns ``(estimate, low, high, unbounded_mask)``. The last result is kept (keyed by
    a hash of the data and the arguments), so the Wilcoxon test followed by
    :func:`multistat.effect.effect_sizes` on the same pairs selects the Walsh order
    statistics once.
    """
    diff = np.ascontiguousarray(diff, dtype=np.float64)
    exact_arr = np.array(np.broadcast_to(np.asarray(exact, bool), diff.shape[:-1]))
    key = (diff.shape, float(level), alternative,
           hashlib.blake2b(diff.tobytes() + exact_arr.tobytes(), digest_size=16).digest())
    hit = _HL_CACHE.get("last")
    if hit is not None and hit[0] == key:
        return tuple(np.copy(v) for v in hit[1])
    out = _hl_and_interval_compute(diff, level, alternative, exact_arr)
    _HL_CACHE["last"] = (key, tuple(np.copy(v) for v in out))
    return out


def _hl_and_interval_compute(diff, level, alternative, exact):
    sorted_d = np.sort(diff, axis=-1)
    n = diff.shape[-1]
    n_walsh = n * (n + 1) // 2
    tail = _interval_quantile(level, alternative)
    k_exact = _signed_rank_lower_rank(n, tail, True) if np.any(exact) else None
    k_approx = _signed_rank_lower_rank(n, tail, False) if not np.all(exact) else None
    wanted = {(n_walsh - 1) // 2, n_walsh // 2}
    for k in (k_exact, k_approx):
        if k is not None and k >= 1:
            wanted |= {k - 1, n_walsh - k}
    wanted = sorted(wanted)
    stats_ = walsh_order_statistics(sorted_d, wanted)
    pos = {r: i for i, r in enumerate(wanted)}
    estimate = 0.5 * (stats_[..., pos[(n_walsh - 1) // 2]] + stats_[..., pos[n_walsh // 2]])
    shape = diff.shape[:-1]
    low = np.full(shape, -np.inf)
    high = np.full(shape, np.inf)
    unbounded = np.zeros(shape, dtype=bool)
    for k, mask in ((k_exact, np.asarray(exact, bool)), (k_approx, ~np.asarray(exact, bool))):
        if k is None:
            continue
        mask = np.broadcast_to(mask, shape)
        if k >= 1:
            low = np.where(mask, stats_[..., pos[k - 1]], low)
            high = np.where(mask, stats_[..., pos[n_walsh - k]], high)
        else:
            unbounded |= mask
    low, high = _one_sided_ends(low, high, alternative)
    return estimate, low, high, unbounded


def hodges_lehmann(x, y, *, alternative="two-sided", confidence_level=0.95, exact=None):
    r"""Hodges-Lehmann estimate of the pseudo-median of ``x - y`` with its interval.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis.
    alternative : {"two-sided", "less", "greater"}
        One-sided alternatives give one-sided intervals.
    confidence_level : float
    exact : bool or None
        Exact signed-rank critical value or its normal approximation; default (None):
        exact for rows with ``n <= 50`` and no ties or zeros among the differences.

    Returns
    -------
    estimate, ci_low, ci_high : ndarray over the leading shape

    Notes
    -----
    :math:`HL = \mathrm{median}\{(d_i + d_j)/2 : i \le j\}` over the :math:`M = n(n+1)/2`
    Walsh averages *including* :math:`i = j`: this is the estimator obtained by inverting
    the signed-rank statistic (:math:`W^+(\theta)` = number of Walsh averages of
    :math:`d - \theta` above 0), whereas the NLPStatTest manual (eq. 18) writes
    :math:`i \ne j`; the two differ by :math:`O(1/n)`. The interval is
    :math:`[W_{(k)}, W_{(M+1-k)}]` with :math:`k` the lower critical value of the
    signed-rank distribution for :math:`n` (exact, or
    :math:`\lfloor n(n+1)/4 + 1/2 - z_{1-\alpha/2}\sqrt{n(n+1)(2n+1)/24}\rfloor`); its
    coverage is at least the nominal level for continuous symmetric distributions.

    References
    ----------
    Hodges, J. L., & Lehmann, E. L. (1963). Estimates of location based on rank tests.
    Ann. Math. Statist. 34(2), 598-611. doi:10.1214/aoms/1177704172
    """
    from multistat._validation import check_alternative
    from multistat.significance._base import as_pairs

    alternative = check_alternative(alternative)
    level = check_probability("confidence_level", confidence_level)
    x, y = as_pairs(x, y)
    diff = x - y
    diff.shape[-1]
    if exact is None:
        exact = _walsh_exact_rows(diff, "auto")
    elif not isinstance(exact, (bool, np.bool_)):
        raise ParameterTypeError(f"`exact` must be True, False or None; got {exact!r}")
    est, low, high, _ = _hl_and_interval(diff, level, alternative, exact)
    return _scalar(est), _scalar(low), _scalar(high)


_WILCOXON_METHODS = ("auto", "exact", "approx", "asymptotic")


def wilcoxon(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
             zero_method="wilcox", method="auto", correction=False):
    r"""Wilcoxon signed-rank test with the Hodges-Lehmann estimate and Walsh interval.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis; leading axes are batch axes.
    alternative : {"two-sided", "less", "greater"}
        H1 about the (pseudo-)median of ``x - y`` relative to ``null_value``;
        ``"greater"`` means ``x`` tends to exceed ``y`` (large :math:`W^+`).
    null_value : float
        :math:`\delta`: the test ranks :math:`d_i = x_i - y_i - \delta`.
    confidence_level : float
        Level of the interval for the pseudo-median.
    zero_method : {"wilcox", "pratt", "zsplit"}
        As :func:`scipy.stats.wilcoxon`: drop zero differences before ranking; rank them
        but give them no sign (Pratt); or split their ranks between both signs.
    method : {"auto", "exact", "approx"}
        ``"exact"``: the exact sign-flip distribution of :math:`W^+` given the observed
        ranks - the classical signed-rank distribution without ties, and the exact
        conditional (permutation) distribution with ties or zeros (equal to
        ``scipy.stats.wilcoxon(method=PermutationMethod())`` when that enumerates all
        :math:`2^n` flips; scipy's ``method="exact"`` instead rounds a tied statistic and
        uses the untied distribution). ``"approx"`` (alias ``"asymptotic"``): normal
        approximation with tie correction. ``"auto"`` (scipy's rule, decided per row):
        exact when :math:`n \le 50` and there are no ties or zeros; exact conditional when
        there are ties or zeros and :math:`n \le 13`; otherwise the normal approximation.
    correction : bool
        Continuity correction of 1/2 towards the mean in the normal approximation.

    Returns
    -------
    TestResult
        ``statistic`` = :math:`W^+`, the sum of the ranks of the positive differences (with
        ``"zsplit"``, plus half the ranks of the zeros) for every alternative - scipy
        reports :math:`\min(W^+, W^-)` for the two-sided test and :math:`W^+` otherwise;
        ``estimate`` = Hodges-Lehmann pseudo-median of ``x - y``; ``ci_low``/``ci_high``;
        ``n`` = number of differences ranked (non-zero ones for ``"wilcox"``);
        ``extra={"z": ..., "exact": ...}`` with the signed normal score (NaN for rows
        computed exactly) and whether the exact distribution was used.

    Notes
    -----
    Normal approximation (NLPStatTest manual eq. 17; Pratt adjustments of Cureton 1967):

    .. math:: z = \frac{W^+ - n(n+1)/4}{\sqrt{n(n+1)(2n+1)/24 - \sum_t (t^3 - t)/48}}

    with :math:`t` the sizes of tied groups of :math:`|d|`; with ``correction`` the
    numerator moves 1/2 towards 0 (two-sided) or in the direction of the alternative.
    ``"greater"`` uses :math:`P(Z \ge z)`, ``"less"`` :math:`P(Z \le z)`, two-sided
    :math:`2\min`. The interval (see :func:`hodges_lehmann`) uses all :math:`n`
    differences; its critical value is exact when ``x - y`` has no ties or zeros and
    ``method`` is "exact" with :math:`n \le 400` (or "auto" with :math:`n \le 50`), the
    normal approximation otherwise. All work is vectorized over rows: ranks from one
    argsort, the exact distribution by a dynamic program over rows, and the Walsh order
    statistics by a selection across rows (:func:`walsh_order_statistics`).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.array([0.61, 0.72, 0.55, 0.80, 0.67, 0.74, 0.59, 0.66])
    >>> y = np.array([0.58, 0.70, 0.57, 0.71, 0.60, 0.69, 0.60, 0.61])
    >>> res = wilcoxon(x, y, alternative="greater")
    >>> ref = stats.wilcoxon(x, y, alternative="greater")
    >>> bool(np.isclose(res.p_value, ref.pvalue)), bool(res.statistic == ref.statistic)
    (True, True)

    References
    ----------
    Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin
    1(6), 80-83. doi:10.2307/3001968
    Hollander, M., Wolfe, D. A., & Chicken, E. (2013). Nonparametric Statistical Methods
    (3rd ed.), ch. 3. doi:10.1002/9781119196037
    """
    x, y, alternative, null_value, confidence_level = _check_common(
        x, y, alternative, null_value, confidence_level)
    zero_method = check_choice("zero_method", zero_method, ("wilcox", "pratt", "zsplit"))
    method = check_choice("method", method, _WILCOXON_METHODS)
    if method == "asymptotic":
        method = "approx"
    if not isinstance(correction, (bool, np.bool_)):
        raise ParameterTypeError(f"`correction` must be True or False; got {correction!r}")
    diff = x - y
    d = diff - null_value
    shape = d.shape[:-1]
    n_all = d.shape[-1]
    notes = _notes(shape)
    parts = _signed_rank_parts(d, zero_method)
    w_plus, mean, sd, count = parts["w_plus"], parts["mean"], parts["sd"], parts["count"]
    n_zero, has_ties = parts["n_zero"], parts["has_ties"]

    degenerate = n_zero == n_all
    if method == "auto":
        clean = ~has_ties & (n_zero == 0)
        use_exact = np.where(clean, n_all <= EXACT_MAX_N, n_all <= EXACT_TIES_MAX_N)
    else:
        use_exact = np.full(shape, method == "exact")
    use_exact = np.broadcast_to(use_exact, shape)

    with np.errstate(divide="ignore", invalid="ignore"):
        z = (w_plus - mean) / sd
        if correction:
            if alternative == "greater":
                direction = 1.0
            elif alternative == "less":
                direction = -1.0
            else:
                direction = np.sign(z)
            z = z - direction * 0.5 / sd
    if alternative == "greater":
        p = stats.norm.sf(z)
    elif alternative == "less":
        p = stats.norm.cdf(z)
    else:
        p = np.minimum(1.0, 2.0 * stats.norm.sf(np.abs(z)))
    if np.any(use_exact):
        flat_ranks = parts["ranks"].reshape(-1, n_all)
        sel = use_exact.reshape(-1) & ~np.broadcast_to(degenerate, shape).reshape(-1)
        if sel.any():
            flat_p = np.array(p, dtype=float).reshape(-1)
            w_flip = w_plus.reshape(-1)[sel]
            if zero_method == "zsplit":  # half the zero ranks: a constant, not flipped
                w_flip = w_flip - (n_zero.reshape(-1)[sel] * (n_zero.reshape(-1)[sel] + 1) / 4)
            flat_p[sel] = _exact_signed_rank_p(flat_ranks[sel], w_flip, alternative)
            p = flat_p.reshape(shape)
    z_out = np.where(use_exact, np.nan, z)

    p = np.where(degenerate, np.nan, p)
    statistic = np.where(degenerate, np.nan, w_plus)
    z_out = np.where(degenerate, np.nan, z_out)
    _add_note(notes, degenerate, "all differences equal the null value: W+ undefined")
    _warn(degenerate, ConstantInputWarning,
          "Wilcoxon test: all differences equal the null value, result is NaN")
    small = (n_all < 2)
    if small:
        _warn(np.ones(shape, bool), SmallSampleWarning,
              "Wilcoxon test: fewer than 2 pairs, the interval is unbounded")

    ci_exact = _walsh_exact_rows(diff, method)

    def interval(level, notes=None):
        est, low, high, unbounded = _hl_and_interval(diff, level, alternative, ci_exact)
        if notes is not None:
            _add_note(notes, unbounded,
                      f"n = {n_all} is too small for a Walsh-average interval at level "
                      f"{level}: interval is unbounded")
        return est, _scalar(low), _scalar(high)

    estimate, low, high = interval(confidence_level, notes)
    return TestResult(
        test="wilcoxon", statistic=_scalar(statistic), p_value=_scalar(p),
        estimate=_scalar(estimate), ci_low=low, ci_high=high,
        confidence_level=confidence_level, n=_scalar(count.astype(np.int64)),
        alternative=alternative, null_value=null_value, statistic_kind="median",
        note=_scalar(notes),
        extra={"z": _scalar(z_out), "exact": _scalar(np.array(use_exact))},
        _ci_fn=lambda level: interval(check_probability("confidence_level", level))[1:],
    )


register(TestSpec(
    name="sign", func=sign_test, family="rank", statistic_kinds=("median",),
    assumes_symmetric=False, assumes_normal=False,
    description="exact binomial sign test; order-statistic interval for the median",
))
register(TestSpec(
    name="wilcoxon", func=wilcoxon, family="rank", statistic_kinds=("median",),
    assumes_symmetric=True, assumes_normal=False,
    description="Wilcoxon signed-rank test (exact / normal approximation); "
                "Hodges-Lehmann estimate with Walsh-average interval",
))
