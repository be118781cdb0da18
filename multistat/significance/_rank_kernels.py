"""The numba kernels of the rank tests, compiled on first use and cached by numba.

:func:`select_rows` selects order statistics of Walsh averages for
:func:`multistat.significance._walsh.walsh_order_statistics`; :func:`merge_integers`
reads the signed-rank integers off sorted differences for
:func:`multistat.significance._signrank.signed_rank_sums`. They live apart from their
drivers so that ``import numba`` (about 2 s and 100 MiB) is paid only by a run that
calls one of them: the drivers import this module inside the functions that need it.
Written by hand because the selection is a data-dependent two-pointer walk that numpy
cannot vectorize without materialising the n(n+1)/2 averages.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["merge_integers", "select_rows"]

_M_FIRST = 1024  # averages sampled to place the first pivots of a row
_M_NEXT = 64  # averages sampled from a bracket when interpolation does not shrink it
_MU_SQRT = 1.2  # interpolation margin: this many sqrt(bracket size) ...
_MU_CURV = 0.004  # ... plus this times bracket size^2 / n(n+1)/2 (ranks)
_Z = 2.5  # sample quantiles this many standard errors outside the wanted ranks
_MAX_ROUNDS = 200  # safety: after this many rounds a bracket is enumerated whatever its size


# ----------------------------------------------------------------------------- kernel
@njit(cache=True, nogil=True)
def _rand(state):
    """splitmix64 step: (next state, a 64-bit pseudo-random integer)."""
    state = state + np.uint64(0x9E3779B97F4A7C15)
    z = state
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return state, z ^ (z >> np.uint64(31))


_WINDOW = 4  # averages a pointer compares at once (see _lower)


@njit(cache=True, nogil=True, inline="always")
def _lower(s, si, i, e, t, strict):
    """Pointer ``e`` of row ``i`` moved down past the averages ``W(i, j) > t`` (``>= t``
    when ``strict``) at ``i <= j < e``: they are a suffix (the row increases in ``j``),
    so ``e`` drops by how many of the :data:`_WINDOW` averages below it exceed ``t``,
    again while all of them do. The window's comparisons have no branches to
    mispredict (a pointer moves 0-2 places a row, unpredictably): ~25 % faster sweeps
    than stepping one average at a time, the same pointer."""
    while True:
        d = 0
        for q in range(_WINDOW):
            j = e - _WINDOW + q
            w = (si + s[j if j >= 0 else 0]) / 2.0
            d += (j >= i) & (not (w < t) if strict else not (w <= t))
        e -= d
        if d < _WINDOW:
            return e


@njit(cache=True, nogil=True)
def _count(s, n, t):
    """``(#{W < t}, #{W <= t})`` over the averages ``W = (s_i + s_j)/2, i <= j`` of the
    sorted ``s[:n]``: two pointers that only move down, O(n). Row ``i`` of the Walsh
    matrix increases in ``j`` and column ``j`` in ``i`` (rounding is monotone), so the
    ``j`` with ``W(i, j) <= t`` form a prefix whose end does not grow with ``i``."""
    e = n  # W(i, j) <= t exactly for j < e (j >= i)
    f = n  # W(i, j) < t exactly for j < f
    c_le = 0
    c_lt = 0
    for i in range(n):
        si = s[i]
        e = _lower(s, si, i, e, t, False)
        if e <= i:
            break
        c_le += e - i
        if f > e:
            f = e
        while f > i and not ((si + s[f - 1]) / 2.0 < t):
            f -= 1
        c_lt += f - i if f > i else 0
    return c_lt, c_le


@njit(cache=True, nogil=True)
def _scan(s, n, has_lo, lo, has_hi, hi, pos, npos, out):
    """The averages ``lo < W < hi`` (a missing bound is no bound) at the sorted positions
    ``pos[:npos]`` of their row-major order ``(i, j)`` (a sample), written to ``out``.
    Returns ``#{W <= lo}`` (complete only if the sample reaches the last row)."""
    e = n  # W(i, j) <= lo for j < e
    f = n  # W(i, j) < hi for j < f
    c = 0  # averages between the bounds before row i
    c_lo = 0
    w = 0
    for i in range(n):
        si = s[i]
        if has_hi:
            while f > i and not ((si + s[f - 1]) / 2.0 < hi):
                f -= 1
        if f <= i:
            break
        start = i
        if has_lo:
            if e > f:
                e = f
            while e > i and not ((si + s[e - 1]) / 2.0 <= lo):
                e -= 1
            if e > start:
                start = e
                c_lo += e - i
        c_next = c + (f - start)
        while w < npos and pos[w] < c_next:
            out[w] = (si + s[start + (pos[w] - c)]) / 2.0
            w += 1
        if w >= npos:
            break
        c = c_next
    return c_lo


@njit(cache=True, nogil=True)
def _between(s, n, has_lo, lo, has_hi, hi, out):
    """The averages ``lo < W < hi`` (a missing bound is no bound), at most ``out.size``
    of them written to ``out`` (in no particular order). Returns ``(#{lo < W < hi},
    #{W <= lo})``: one sweep counts both bounds. Per row ``i`` the averages below ``hi``
    are ``j < f`` (a pointer that only moves down); those above ``lo`` are read downwards
    from ``f`` - each is written as it is compared, so the lower bound costs one
    comparison a row beyond the averages it lets through."""
    f = n  # W(i, j) < hi for j < f
    c = 0
    c_lo = 0
    cap = out.size
    for i in range(n):
        si = s[i]
        if has_hi:
            f = _lower(s, si, i, f, hi, True)
        if f <= i:
            break
        j = f - 1
        while j >= i:
            v = (si + s[j]) / 2.0
            if has_lo and v <= lo:
                break
            if c < cap:
                out[c] = v
            c += 1
            j -= 1
        c_lo += j + 1 - i
    return c, c_lo


@njit(cache=True, nogil=True)
def _bracket(k, pt, plt, ple, npt, N):
    """Tightest known bounds of rank ``k`` from the counted pivots: ``(hit, value, has_lo,
    lo, c_lo, has_hi, hi, c_hi)``: ``lo`` is the largest pivot with ``#{W <= lo} = c_lo
    <= k``, ``hi`` the smallest with ``#{W < hi} = c_hi > k``; ``hit`` when a pivot is the
    ``k``-th average itself (``#{W < t} <= k < #{W <= t}``). A count of -1 is unknown."""
    has_lo = False
    lo = 0.0
    c_lo = 0
    has_hi = False
    hi = 0.0
    c_hi = N
    for p in range(npt):
        t = pt[p]
        if 0 <= plt[p] <= k < ple[p]:
            return True, t, has_lo, lo, c_lo, has_hi, hi, c_hi
        if 0 <= ple[p] <= k and (not has_lo or t > lo):
            has_lo, lo, c_lo = True, t, ple[p]
        if plt[p] > k and (not has_hi or t < hi):
            has_hi, hi, c_hi = True, t, plt[p]
    return False, 0.0, has_lo, lo, c_lo, has_hi, hi, c_hi


@njit(cache=True, nogil=True)
def _sample_pivots(sm, m, fa, fb, cand):
    """Up to three pivots from the sorted sample ``sm[:m]`` of the averages in a bracket,
    for wanted ranks at fractions ``fa`` .. ``fb`` of the bracket: sample quantiles
    :data:`_Z` standard errors below and above, and, when the sample value at the wanted
    position is repeated (heavy ties), that value itself (probably the answer). Returns
    how many were written to ``cand``."""
    gap = _Z * np.sqrt(m * max(fa * (1.0 - fa), 1.0 / m)) + 1.0
    ia = int(np.floor(fa * m - gap))
    ib = int(np.ceil(fb * m + gap))
    ic = int(np.floor(0.5 * (fa + fb) * (m - 1) + 0.5))
    ic = min(max(ic, 0), m - 1)
    tied = (ic > 0 and sm[ic - 1] == sm[ic]) or (ic + 1 < m and sm[ic + 1] == sm[ic])
    nc = 0
    if tied:
        cand[nc] = sm[ic]
        nc += 1
    if ia >= 0 and not (tied and sm[ia] == sm[ic]):
        cand[nc] = sm[ia]
        nc += 1
    if ib < m and not (tied and sm[ib] == sm[ic]):
        cand[nc] = sm[ib]
        nc += 1
    if nc == 0:
        cand[nc] = sm[ic]
        nc += 1
    return nc


@njit(cache=True, nogil=True)
def _draw(state, C, m, pos):
    """``m`` sorted pseudo-random positions in ``[0, C)`` into ``pos``; the new state."""
    scale = C * 2.0 ** -53
    for q in range(m):
        state, z = _rand(state)
        pos[q] = min(np.int64(np.float64(z >> np.uint64(11)) * scale), C - 1)
    pos[:m].sort()
    return state


@njit(cache=True, nogil=True)
def _draw_averages(state, s, n, m, out):
    """``m`` averages ``(s_i + s_j)/2`` at pseudo-random ``i <= j`` into ``out`` (no sweep:
    the two positions of a 64-bit random number, ordered; the diagonal is drawn half as
    often as the rest, which only moves pivots); the new state."""
    for q in range(m):
        state, z = _rand(state)
        i = np.int64(((z & np.uint64(0xFFFFFFFF)) * np.uint64(n)) >> np.uint64(32))
        j = np.int64(((z >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))
        if i > j:
            i, j = j, i
        out[q] = (s[i] + s[j]) / 2.0
    return state


@njit(cache=True, nogil=True)
def _pick(part, got, ranks, r, r2, c_lo, out):
    """``out[q]`` = the ``ranks[q] - c_lo``-th smallest of ``part[:got]``, q = r..r2."""
    prev = 0
    for q in range(r, r2 + 1):
        off = ranks[q] - c_lo
        _nth(part, prev, got, off)
        out[q] = part[off]
        prev = off


@njit(cache=True, nogil=True)
def _select_row(s, n, ranks, out, buf, pos, samp, pt, plt, ple, state):
    """``out[r]`` = order statistic ``ranks[r]`` (sorted, distinct, ``< n(n+1)/2``) of
    the Walsh averages of the sorted, NaN-free ``s[:n]``. Returns the number of sweeps."""
    N = n * (n + 1) // 2
    R = ranks.size
    cap = buf.size
    npt = 0
    sweeps = 0
    cand = np.empty(3)
    floor = 8.0 + 2.0 * np.sqrt(n)  # smallest interpolation margin (ranks)
    # groups of nearby ranks, searched together: [g0[g], g1[g]] (indices into ranks)
    g0 = np.empty(R, dtype=np.int64)
    g1 = np.empty(R, dtype=np.int64)
    G = 0
    r = 0
    while r < R:
        r2 = r
        while r2 + 1 < R and ranks[r2 + 1] - ranks[r2] <= 64:
            r2 += 1
        g0[G] = r
        g1[G] = r2
        G += 1
        r = r2 + 1
    if N > cap:
        # first pivots, below and above all the wanted ranks and in their middle, from
        # one sample of all the averages
        m = samp.size
        state = _draw_averages(state, s, n, m, samp)
        samp.sort()
        nc = _sample_pivots(samp, m, ranks[0] / N, (ranks[R - 1] + 1) / N, cand)
        ic = int(0.5 * (ranks[0] + ranks[R - 1]) / N * m)
        for q in range(nc + 1):
            t = cand[q] if q < nc else samp[min(max(ic, 0), m - 1)]
            seen = False
            for p in range(npt):
                if pt[p] == t:
                    seen = True
            if seen:
                continue
            c_lt, c_le = _count(s, n, t)
            sweeps += 1
            pt[npt] = t
            plt[npt] = c_lt
            ple[npt] = c_le
            npt += 1
    for g in range(G):
        r = g0[g]
        r2 = g1[g]
        while r <= r2:
            k = ranks[r]
            k2 = ranks[r2]
            last_c = N + 1
            fails = 0
            err = -1.0  # miss of the last interpolation (ranks); < 0: none yet
            c_err = 1  # the bracket size it was made in
            done = False
            for rnd in range(_MAX_ROUNDS + 1):
                hit, val, has_lo, lo, c_lo, has_hi, hi, c_hi = _bracket(k, pt, plt, ple,
                                                                        npt, N)
                if hit:
                    out[r] = val
                    r += 1
                    done = True
                    break
                if r2 > r:  # the upper bound of the whole group
                    h2, v2, a_, b_, c_, has_hi, hi, c_hi = _bracket(k2, pt, plt, ple, npt, N)
                    if h2:  # the group's last rank sits on a pivot
                        out[r2] = v2
                        r2 -= 1
                        done = True
                        break
                C = c_hi - c_lo
                if C <= cap or rnd == _MAX_ROUNDS:
                    dst = buf if C <= cap else np.empty(C)
                    got, _ = _between(s, n, has_lo, lo, has_hi, hi, dst)
                    sweeps += 1
                    _pick(dst, got, ranks, r, r2, c_lo, out)
                    r = r2 + 1
                    done = True
                    break
                # next bounds: interpolated a margin below and above the wanted ranks,
                # inside a finite bracket, and counted by one sweep that also collects
                # the averages between them ...
                if C * 4 > last_c:
                    fails += 1
                last_c = C
                if (fails < 2 and has_lo and has_hi and np.isfinite(lo) and np.isfinite(hi)
                        and hi > lo):
                    # margin: the interpolation's expected miss (discreteness ~ sqrt(C),
                    # curvature ~ C^2 / N), or the last measured miss scaled to C
                    mu = _MU_SQRT * np.sqrt(C) + _MU_CURV * C * (C / N)
                    if err >= 0:
                        mu = max(mu, 1.5 * err * (C / c_err) ** 2)
                    mu = max(mu, floor)
                    ra = k - mu
                    rb = k2 + 1 + mu
                    pa = lo
                    pb = hi
                    if ra > c_lo:
                        pa = lo + (ra - c_lo) * ((hi - lo) / C)
                    if rb < c_hi:
                        pb = lo + (rb - c_lo) * ((hi - lo) / C)
                    use_a = lo < pa < hi
                    use_b = lo < pb < hi and (pb > pa)
                    if use_a or use_b:
                        pa = pa if use_a else lo
                        pb = pb if use_b else hi
                        got, cle = _between(s, n, True, pa, True, pb, buf)
                        sweeps += 1
                        if use_a:
                            pt[npt] = pa
                            plt[npt] = -1
                            ple[npt] = cle
                            npt += 1
                        if use_b:
                            pt[npt] = pb
                            plt[npt] = cle + got
                            ple[npt] = -1
                            npt += 1
                        if cle <= k and cle + got > k2 and got <= cap:
                            _pick(buf, got, ranks, r, r2, cle, out)
                            r = r2 + 1
                            done = True
                            break
                        err = 0.0
                        c_err = C
                        if use_a:
                            err = max(err, abs(cle - ra))
                        if use_b:
                            err = max(err, abs(cle + got - rb))
                        continue
                # ... else quantiles of a sample of the averages inside the bracket
                err = -1.0
                fails = 0
                last_c = N + 1
                m = _M_NEXT if (has_lo and has_hi) else samp.size
                state = _draw(state, C, m, pos)
                _scan(s, n, has_lo, lo, has_hi, hi, pos, m, samp[:m])
                sweeps += 1
                sm = samp[:m]
                sm.sort()
                nc = _sample_pivots(sm, m, (k - c_lo) / C, (k2 + 1 - c_lo) / C, cand)
                for q in range(nc):
                    c_lt, c_le = _count(s, n, cand[q])
                    sweeps += 1
                    pt[npt] = cand[q]
                    plt[npt] = c_lt
                    ple[npt] = c_le
                    npt += 1
            if not done:  # pragma: no cover - the last round always enumerates
                raise RuntimeError("Walsh selection did not finish")
    return sweeps


@njit(cache=True, nogil=True)
def _nth(a, lo, hi, k):
    """Rearrange ``a[lo:hi]`` so that ``a[k]`` holds the value that sorting would put
    there, values before it ``<=`` and after it ``>=`` (Hoare's FIND with a median-of-
    three pivot; equal values stop both scans, so ties cannot make it quadratic)."""
    left = lo
    right = hi - 1
    while left < right:
        mid = (left + right) // 2
        x, y, z = a[left], a[mid], a[right]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
            if x > y:
                y = x
        i = left
        j = right
        while i <= j:
            while a[i] < y:
                i += 1
            while y < a[j]:
                j -= 1
            if i <= j:
                v = a[i]
                a[i] = a[j]
                a[j] = v
                i += 1
                j -= 1
        if j < k:
            left = i
        if k < i:
            right = j


@njit(cache=True, nogil=True)
def select_rows(S, ranks, out, row0, row1, cap, seed):
    """Rows ``row0:row1`` of the sorted ``S`` (R, n): ``out[r]`` = the Walsh order
    statistics ``ranks`` (sorted, distinct, in range). NaN sorts last (an average with a
    NaN is NaN); a row with both -inf and +inf (whose averages include inf - inf = NaN)
    is materialised. ``cap``: at most this many averages are enumerated at once (<= 0:
    ``max(2n, 4096)``); ``seed`` seeds the pivot sampling. Neither changes a result.
    Returns the number of O(n) sweeps made."""
    n = S.shape[1]
    R = ranks.size
    if cap <= 0:
        cap = max(2 * n, 4096)
    buf = np.empty(cap)
    pos = np.empty(_M_FIRST, dtype=np.int64)
    samp = np.empty(_M_FIRST)  # a sorted sample of averages
    P = 4 * (_MAX_ROUNDS + 2) * (R + 1)  # counted pivots of one row, at most
    pt = np.empty(P)
    plt = np.empty(P, dtype=np.int64)
    ple = np.empty(P, dtype=np.int64)
    sweeps = 0
    for row in range(row0, row1):
        s = S[row]
        m = n
        while m > 0 and np.isnan(s[m - 1]):
            m -= 1
        Nm = m * (m + 1) // 2
        R_ok = 0
        while R_ok < R and ranks[R_ok] < Nm:
            R_ok += 1
        for q in range(R_ok, R):
            out[row, q] = np.nan
        if R_ok == 0:
            continue
        if s[0] == -np.inf and s[m - 1] == np.inf:
            allw = np.empty(Nm)
            w = 0
            for i in range(m):
                for j in range(i, m):
                    allw[w] = (s[i] + s[j]) / 2.0
                    w += 1
            allw.sort()
            for q in range(R_ok):
                out[row, q] = allw[ranks[q]]
            continue
        state = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(m)
        o = np.empty(R_ok)
        sweeps += _select_row(s, m, ranks[:R_ok], o, buf, pos, samp, pt, plt, ple, state)
        for q in range(R_ok):
            out[row, q] = o[q]
    return sweeps


@njit(cache=True, nogil=True)
def merge_integers(S, out, row0, row1):
    """The integers of :func:`~multistat.significance._signrank.signed_rank_sums` from
    the sorted, NaN-free rows ``S[row0:row1]``: the order of ``|d|`` is a merge of the
    negative values read backwards with the positive ones, zeros first, so no second sort
    is needed. ``out[r]`` = ``(n_zero, tie_all, n_pos, mid2)``; int64 arithmetic as
    :func:`~multistat.significance._signrank._key_sort_integers` (``sum t^3 - t`` over tie
    groups equals its ``sum t_i^2 - 1`` over elements, also modulo 2^64)."""
    for row in range(row0, row1):
        s = S[row]
        n = s.size
        while n > 0 and np.isnan(s[n - 1]):  # (rows with a NaN are replaced by the caller)
            n -= 1
        z0 = 0  # first value >= 0 (-0.0 included)
        while z0 < n and s[z0] < 0:
            z0 += 1
        p0 = z0  # first value > 0
        while p0 < n and s[p0] == 0:
            p0 += 1
        n_zero = p0 - z0
        tie_all = np.int64(n_zero) * n_zero * n_zero - n_zero
        n_pos = 0
        mid2 = np.int64(0)
        i = z0 - 1  # next negative (largest first: smallest |d|)
        j = p0  # next positive
        p = n_zero  # position of the next magnitude
        while i >= 0 or j < n:
            if j >= n or (i >= 0 and -s[i] < s[j]):
                m = -s[i]
            else:
                m = s[j]
            a = 0
            while i >= 0 and -s[i] == m:
                a += 1
                i -= 1
            b = 0
            while j < n and s[j] == m:
                b += 1
                j += 1
            t = np.int64(a + b)
            tie_all += t * t * t - t
            n_pos += b
            mid2 += np.int64(b) * (2 * p + t + 1)  # b * (start + end + 2)
            p += a + b
        out[row, 0] = n_zero
        out[row, 1] = tie_all
        out[row, 2] = n_pos
        out[row, 3] = mid2
