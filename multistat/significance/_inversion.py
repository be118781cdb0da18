"""Intervals that are the inversion of a test: ``reject`` exactly when the interval
excludes the null value.

An interval at level ``1 - alpha`` is the set of null values ``delta`` the test at level
``alpha`` (same sidedness) does not reject. These helpers compute that set from the same
quantities the p-value uses, so a row's decision and interval cannot disagree:

* :func:`bootstrap_basic_interval` -- the shifted-bootstrap p-value
  ``(#{theta* - theta_hat >= theta_hat - delta} + 1) / (B + 1)`` (two-sided: twice the
  smaller tail) is inverted by the *basic* bootstrap interval
  ``[2 theta_hat - theta*_(B-k), 2 theta_hat - theta*_(k+1)]`` with
  ``k = floor(alpha (B + 1) / 2) - 1`` (``alpha (B + 1)`` one-sided) order statistics of
  the sorted bootstrap distribution, no interpolation. ``k < 0`` (too few resamples to
  ever reject) gives the whole line.
* :func:`sign_interval` -- the exact sign test at ``delta`` drops the differences equal to
  ``delta`` and counts those above and below; its acceptance set is computed exactly by
  evaluating the p-value on every distinct difference and every gap between two (the
  p-value is constant on each gap). An end that is open (the tied value itself is
  rejected) is reported as the nearest float inside, so that the closed interval and the
  decision agree for every float ``delta``.
* :func:`scan_interval` -- the same exact scan for any test whose p-value is piecewise
  constant between known breakpoints (Wilcoxon with ties or zeros: the Walsh averages).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special
from scipy.special import gammaln, xlog1py, xlogy

from multistat._lazy import lazy_module
from multistat.significance._binomial import binom_half_pvalue

stats = lazy_module("scipy.stats")  # imported on first use


def _k(alpha: float, b: int, two_sided: bool) -> int:
    """Largest count ``c`` of resamples beyond the observed value that still rejects:
    ``(c + 1) / (B + 1) <= alpha / 2`` (two-sided) -> ``c = floor(...) - 1``."""
    level = alpha / 2 if two_sided else alpha
    return math.floor(level * (b + 1) * (1 + 1e-12)) - 1


def bootstrap_basic_interval(est, dist, *, alternative: str, confidence_level: float,
                             tol=0.0):
    """Exact inversion of the shifted bootstrap p-value (see the module docstring).

    ``est`` ``(...)``, ``dist`` ``(B, ...)``; ``tol`` the tie tolerance of the p-value
    (resamples within ``tol`` of the observed value count as "as extreme"), widening
    each end by ``tol``. Returns ``(low, high)``; one-sided alternatives give an
    infinite end.
    """
    est = np.asarray(est, dtype=float)
    dist = np.asarray(dist, dtype=float)
    b = dist.shape[0]
    alpha = 1.0 - confidence_level
    k = _k(alpha, b, alternative == "two-sided")
    low = np.full(est.shape, -np.inf)
    high = np.full(est.shape, np.inf)
    if k < 0:
        return low, high
    srt = np.sort(dist, axis=0)  # NaN last
    if alternative in ("two-sided", "greater"):
        # reject "greater" side iff #{theta* >= 2 est - delta} <= k
        # iff 2 est - delta > theta*_(B-k) (1-based) iff delta < 2 est - srt[B-k-1]
        low = 2 * est - srt[b - k - 1] - tol
    if alternative in ("two-sided", "less"):
        high = 2 * est - srt[k] + tol
    return low, high


def _sign_p(n_pos, n_neg, alternative):
    """Exact sign-test p-value from the counts (binomial, p0 = 1/2, zeros dropped): the
    sign test's own :func:`~multistat.significance._binomial.binom_half_pvalue`, so the
    interval's acceptance decisions use the very p-value the test reports."""

    n_pos = np.asarray(n_pos)
    m = n_pos + np.asarray(n_neg)
    return np.where(m > 0, binom_half_pvalue(n_pos, m, alternative), 1.0)


def _acceptance_hull(values, accept_at, accept_between):
    """Closed float interval equal to the acceptance set on the grid of candidate points.

    ``values`` sorted distinct breakpoints ``v_0 < ... < v_m-1``; ``accept_at[j]`` whether
    ``delta = v_j`` is accepted; ``accept_between[j]`` for ``delta`` in
    ``(v_{j-1}, v_j)``, ``j = 0..m`` (``j = 0``: below ``v_0``; ``j = m``: above).
    """
    m = values.size
    # walk the points in order: gap 0, point 0, gap 1, point 1, ..., gap m
    acc = np.empty(2 * m + 1, dtype=bool)
    acc[0::2] = accept_between
    acc[1::2] = accept_at
    if not acc.any():
        return np.nan, np.nan
    first = int(np.argmax(acc))
    last = int(acc.size - 1 - np.argmax(acc[::-1]))

    def end(i, side):
        if i % 2 == 1:  # a breakpoint itself
            return float(values[i // 2])
        j = i // 2  # a gap (v_{j-1}, v_j): open at its data ends
        if side == "low":
            return -np.inf if j == 0 else float(np.nextafter(values[j - 1], np.inf))
        return np.inf if j == m else float(np.nextafter(values[j], -np.inf))

    return end(first, "low"), end(last, "high")


def sign_interval(d, *, alternative: str, confidence_level: float):
    """Exact inversion of the sign test (zeros ``d == delta`` dropped) for one row ``d``.

    Returns ``(low, high)`` (one-sided alternatives give an infinite end, since the
    one-sided test never rejects on the other side).
    """
    d = np.sort(np.asarray(d, dtype=float))
    d = d[~np.isnan(d)]
    alpha = 1.0 - confidence_level
    if d.size == 0:
        return np.nan, np.nan
    values, counts = np.unique(d, return_counts=True)
    below = np.concatenate([[0], np.cumsum(counts)])  # #{d < v_j} = below[j]
    total = d.size
    # at a point v_j: n_neg = #{d < v_j}, n_pos = #{d > v_j}; differences are d - delta,
    # so "positive" means d > delta
    n_neg_at = below[:-1]
    n_pos_at = total - below[1:]
    # in the gap (v_{j-1}, v_j): n_neg = below[j], n_pos = total - below[j]
    n_neg_gap = below
    n_pos_gap = total - below
    acc_at = _sign_p(n_pos_at, n_neg_at, alternative) > alpha
    acc_gap = _sign_p(n_pos_gap, n_neg_gap, alternative) > alpha
    return _acceptance_hull(values, acc_at, acc_gap)


def scan_interval(pvalue_of, breakpoints, *, alpha: float):
    """Acceptance set of a test whose p-value (``pvalue_of(deltas) -> p``, vectorized over
    a 1-d array of null values) is constant between consecutive ``breakpoints``."""
    values = np.unique(np.asarray(breakpoints, dtype=float))
    values = values[np.isfinite(values)]
    if values.size == 0:
        return np.nan, np.nan
    gaps = np.empty(values.size + 1)
    gaps[1:-1] = (values[:-1] + values[1:]) / 2
    span = max(values[-1] - values[0], abs(values[0]), 1.0)
    gaps[0] = values[0] - span
    gaps[-1] = values[-1] + span
    p = np.asarray(pvalue_of(np.concatenate([values, gaps])), dtype=float)
    # NaN p (e.g. every difference equals delta) is "not rejected", as in the decision
    accept = ~(p <= alpha * (1 + 1e-12))
    return _acceptance_hull(values, accept[:values.size], accept[values.size:])


def _accept(p, alpha):
    # the same comparison as ``reject = p <= alpha``; the slack absorbs the rounding of
    # alpha = 1 - confidence_level (p-values of discrete tests can equal alpha exactly)
    return p > alpha * (1 + 1e-12)


def sign_interval_rows(sorted_diff, *, alternative: str, confidence_level: float,
                       zero_method: str = "drop"):
    """Vectorized exact inversion of the sign test over rows of sorted differences.

    At a null value ``delta`` the test counts ``d > delta`` and ``d < delta`` and treats
    ``d == delta`` as zeros (dropped, or split as in the test). The p-value only changes
    at the data values, so the acceptance set is decided on the ``2n + 1`` candidates
    "gap below the smallest value, each value, each gap between distinct values, gap
    above the largest"; the interval is its hull, with open ends moved to the nearest
    float inside (see the module docstring). Returns ``(low, high)`` of the row shape.
    """

    s = np.asarray(sorted_diff, dtype=float)
    lead, n = s.shape[:-1], s.shape[-1]
    s = s.reshape(-1, n)
    rows = s.shape[0]
    alpha = 1.0 - confidence_level
    itype = np.int32 if n < 2**31 - 1 else np.int64  # positions in 4 bytes, not 8
    # the candidates that can be accepted lie in the columns [lo, hi) (two-sided, no
    # NaN: _two_sided_window); elsewhere the scan runs over every column
    lo, hi = 0, n
    if alternative == "two-sided" and rows and n and not np.isnan(s[:, -1]).any():
        lo, hi = _two_sided_window(n, alpha)
    w = hi - lo
    sw = s[:, lo:hi]
    # the first / last position of the tie runs at the window's two edges, which may
    # reach outside it (searched in the rows where they do)
    start = np.full(rows, lo, itype)
    end = np.full(rows, hi - 1, itype)
    if lo > 0:
        cross = np.flatnonzero(s[:, lo - 1] == s[:, lo])
        start[cross] = _run_end(s, cross, lo, "first")
    if hi < n:
        cross = np.flatnonzero(s[:, hi] == s[:, hi - 1])
        end[cross] = _run_end(s, cross, hi - 1, "last")
    idx = np.arange(lo, hi, dtype=itype)
    new = np.empty(sw.shape, bool)
    new[:, :1] = (start == lo)[:, None]
    np.not_equal(sw[:, 1:], sw[:, :-1], out=new[:, 1:])
    pos = np.where(new, idx, 0)
    pos[:, :1] = start[:, None]
    first = np.maximum.accumulate(pos, axis=-1)  # first of its tie run
    last_rev = np.empty(sw.shape, bool)
    last_rev[:, -1:] = (end == hi - 1)[:, None]
    last_rev[:, :-1] = new[:, 1:]  # last element of a tie run
    pos = np.where(last_rev, idx, n)
    pos[:, -1:] = end[:, None]
    last = np.minimum.accumulate(pos[:, ::-1], axis=-1)[:, ::-1]
    del last_rev, pos
    # at the value s[i]: below = first, above = n - 1 - last, ties = last - first + 1
    k_at = (n - 1) - last  # n_pos
    m_at = k_at + first  # n_pos + n_neg
    if zero_method == "split":
        half = (last - first + 1) // 2
        k_at += half
        m_at += 2 * half
        del half
    del first, last
    acc_at = _accepted_counts(k_at, m_at, alternative, alpha)
    acc_at |= m_at == 0  # m = 0 (every difference equals delta): NaN, "not rejected"
    del k_at, m_at
    # the gap just below s[i] (exists iff s[i] starts a new value), and the gap above the
    # window (above all when hi = n; else it exists iff s[hi - 1] ends its run)
    j = np.arange(lo, hi + 1)
    acc_gap = _accept(binom_half_pvalue(n - j, np.full(w + 1, n), alternative), alpha)
    # interleave: gap0, pt0, gap1, pt1, ..., gap_n (candidate 2 i: the gap below s[i],
    # 2 i + 1: the point s[i]; the window holds candidates 2 lo .. 2 hi)
    seq = np.empty((rows, 2 * w + 1), bool)
    seq[:, 0:-1:2] = new
    seq[:, 0:-1:2] &= acc_gap[:w]
    seq[:, -1] = acc_gap[w] & (end == hi - 1)
    seq[:, 1::2] = acc_at
    del new, acc_at
    anyacc = seq.any(-1)
    f = np.argmax(seq, axis=-1) + 2 * lo
    g = 2 * hi - np.argmax(seq[:, ::-1], axis=-1)
    del seq

    def value(pos, side):
        i = pos // 2
        at_point = pos % 2 == 1
        v_pt = np.take_along_axis(s, np.clip(i, 0, n - 1)[:, None], -1)[:, 0]
        if side == "low":  # gap i is (s[i-1], s[i]): low end just above s[i-1]
            prev = np.take_along_axis(s, np.clip(i - 1, 0, n - 1)[:, None], -1)[:, 0]
            v_gap = np.where(i == 0, -np.inf, np.nextafter(prev, np.inf))
        else:  # high end just below s[i]
            v_gap = np.where(i == n, np.inf, np.nextafter(v_pt, -np.inf))
        return np.where(at_point, v_pt, v_gap)

    low = np.where(anyacc, value(f, "low"), np.nan)
    high = np.where(anyacc, value(g, "high"), np.nan)
    return low.reshape(lead), high.reshape(lead)


def _run_end(s, rows, col: int, which: str) -> np.ndarray:
    """The first (``which="first"``) or last column of the tie run through column ``col``
    of the sorted rows ``rows`` of ``s``: a bisection over those rows at once (``log2 n``
    steps, what ``np.searchsorted`` does for one row; no copy of the rows)."""
    rows = np.asarray(rows, dtype=np.intp)[:, None]
    v = s[rows, col]
    if which == "first":  # the smallest j <= col with s[j] >= v (then s[j] == v)
        a, b = np.zeros(rows.shape, np.intp), np.full(rows.shape, col)
        while (a < b).any():
            mid = (a + b) // 2
            ge = s[rows, mid] >= v
            a, b = np.where(ge, a, mid + 1), np.where(ge, mid, b)
    else:  # the largest j >= col with s[j] <= v
        a, b = np.full(rows.shape, col), np.full(rows.shape, s.shape[1] - 1)
        while (a < b).any():
            mid = (a + b + 1) // 2
            le = s[rows, mid] <= v
            a, b = np.where(le, mid, a), np.where(le, b, mid - 1)
    return a[:, 0]


def _two_sided_window(n: int, alpha: float) -> tuple[int, int]:
    """Columns ``[c, n - c)`` of ``n`` sorted differences that hold every candidate the
    two-sided sign test can accept, either zero method: ``c`` the largest count such that
    ``min(k, m - k) <= c`` is rejected at ``m = n - 1`` and ``m = n`` (``(0, n)`` when
    ``c < 1``).

    Why: a tie run lying wholly right of column ``n - 2 - c`` has ``n_neg >= n - 1 - c``
    below it and ``n_pos <= c`` above; dropping its ties leaves ``m <= n - 1`` signs, and
    ``P(Bin(n_neg + n_pos, 1/2) <= n_pos)`` grows with ``n_pos`` and shrinks with ``n_neg``,
    so the most accepting such run is one value at column ``n - 1 - c``: ``(c, n - 1)``,
    rejected. Splitting its ties gives ``m`` of ``n - 1`` or ``n`` with the smaller count
    ``(m - D) / 2 <= c``, ``D = n_neg - n_pos >= n - 1 - 2 c``: rejected. The left side is
    the mirror image, and a gap below column ``i`` has ``min(i, n - i)`` at ``m = n``, so
    gaps outside ``[c + 1, n - 1 - c]`` are rejected too. A run crossing a window edge has
    the same value and counts inside it, so the hull is the full scan's
    (``tests/test_rank.py`` checks both on tied rows, with runs across the edges).
    """

    cs = np.arange((n - 1) // 2 + 1)
    accepted = np.zeros(cs.size, bool)
    for m in (n - 1, n):
        accepted |= _accept(binom_half_pvalue(cs, np.full(cs.size, m), "two-sided"), alpha)
    c = int(np.argmax(accepted)) - 1 if accepted.any() else cs.size - 1
    return (c, n - c) if c >= 1 else (0, n)


def _accepted_counts(k, m, alternative, alpha):
    """``_accept(binom_half_pvalue(k, m), alpha)`` elementwise, with the p-value computed
    once per distinct ``(k, m)``: a table over ``k = 0..m`` for each ``m`` present (few:
    one per tie-run size), looked up - the same p-values, so the same decisions, without
    a binomial evaluation per element."""

    present = np.flatnonzero(np.bincount(m.ravel(), minlength=1))
    offset = np.zeros(int(present.max()) + 1 if present.size else 1, dtype=np.int64)
    tables = []
    at = 0
    for mm in present:
        offset[mm] = at
        kk = np.arange(mm + 1)
        tables.append(_accept(binom_half_pvalue(kk, np.full(mm + 1, mm), alternative),
                              alpha))
        at += int(mm) + 1
    table = np.concatenate(tables) if tables else np.zeros(1, bool)
    return table[offset[m] + k]


def _binom_pmf(k, m, p):
    """Binomial pmf from log-gamma (scipy's boost pmf raises OverflowError for p within a
    few ulps of 0 or 1, which the bisection below reaches)."""

    with np.errstate(all="ignore"):
        return np.exp(gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1)
                      + xlogy(k, p) + xlog1py(m - k, -p))


def _binom_general_p(b, m, pi0, alternative, method, correction):
    """McNemar's p-value generalised from pi0 = 1/2 to any pi0 = P(b | discordant):
    exact / mid-p binomial tails, or the score z with McNemar's continuity correction;
    at pi0 = 1/2 each equals the test's own p-value."""
    if method in ("exact", "midp"):
        half = 0.5 * _binom_pmf(b, m, pi0) if method == "midp" else 0.0
        ge = stats.binom.sf(b - 1, m, pi0) - half
        le = stats.binom.cdf(b, m, pi0) - half
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            sd = np.sqrt(m * pi0 * (1 - pi0))
            dev = b - m * pi0
            if alternative == "two-sided":
                num = np.maximum(np.abs(dev) - (0.5 if correction else 0.0), 0.0)
                return np.minimum(1.0, 2 * stats.norm.sf(num / sd))
            cc = (0.5 if alternative == "greater" else -0.5) if correction else 0.0
            z = (dev - cc) / sd
        ge, le = stats.norm.sf(z), stats.norm.cdf(z)
    if alternative == "greater":
        return np.minimum(ge, 1.0)
    if alternative == "less":
        return np.minimum(le, 1.0)
    return np.minimum(1.0, 2 * np.minimum(ge, le))


def mcnemar_interval(b, c, n, *, alternative: str, confidence_level: float,
                     method: str = "exact", correction: bool = False):
    """Interval for the accuracy difference that inverts McNemar's test.

    McNemar's test is the test of ``pi = 1/2`` for ``pi = P(a right | discordant)``, given
    the ``m = b + c`` discordant items; its interval is the set of ``pi0`` the same test
    (exact: Clopper-Pearson; mid-p; score: Wilson, with continuity correction if the test
    has it) does not reject, mapped to the accuracy difference
    ``delta = (m / n)(2 pi - 1)`` (conditional on the observed discordant share). The ends
    are found by bisection to adjacent floats (the p-value is monotone on either side of
    ``b / m``), so the interval excludes 0 exactly when ``p <= alpha``. ``m = 0`` gives
    ``[0, 0]`` (p = 1).
    """
    b = np.asarray(b, dtype=float)
    m = b + np.asarray(c, dtype=float)
    alpha = 1.0 - confidence_level
    with np.errstate(invalid="ignore", divide="ignore"):
        hat = np.where(m > 0, b / np.where(m > 0, m, 1), 0.5)

    def accepted(pi0):
        with special.errstate(all="ignore"), np.errstate(all="ignore"):
            p = _binom_general_p(b, m, pi0, alternative, method, correction)
        return _accept(p, alpha) | (m == 0)

    def end(lo, hi, lower):
        # invariant: the accepted side is ``hi`` for the lower end, ``lo`` for the upper
        for _ in range(1200):
            mid = lo + (hi - lo) / 2
            done = (mid <= lo) | (mid >= hi)
            if np.all(done):
                break
            acc = accepted(mid)
            if lower:
                hi = np.where(~done & acc, mid, hi)
                lo = np.where(~done & ~acc, mid, lo)
            else:
                lo = np.where(~done & acc, mid, lo)
                hi = np.where(~done & ~acc, mid, hi)
        return hi if lower else lo

    zero, one = np.zeros(b.shape), np.ones(b.shape)
    pi_lo = np.where(accepted(zero), zero, end(zero, hat, True))
    pi_hi = np.where(accepted(one), one, end(hat, one, False))
    share = m / float(n)
    low = share * (2 * pi_lo - 1)
    high = share * (2 * pi_hi - 1)
    if alternative == "greater":
        high = np.full(b.shape, np.inf)
    elif alternative == "less":
        low = np.full(b.shape, -np.inf)
    return low, high
