"""Numba kernels of the streamed leaderboard step-down (:mod:`multistat.rank_stream`).

Every pair ``(a, b)`` of a metric's bootstrap is formed from two rows of the per-system
resampled means ``DT`` ``(S, B)`` (the transpose of the engine's ``(B, S)``), one pair at
a time: nothing of size pairs x resamples exists. The arithmetic is numpy's, operation for
operation, so the numbers are those of :func:`multistat.stepdown.westfall_young` and of
the bootstrap test's p-value (:func:`multistat.engine.pvalues_from_null`) bit for bit:

* the null value of resample ``i`` is ``(DT[a, i] - DT[b, i]) - est`` (numpy's
  ``arr[:, ia] - arr[:, ib] - est``), oriented as the step-down orients it (``|x|``
  two-sided, ``x`` greater, ``-x`` less);
* its standard deviation (``ddof=1``) sums with numpy's pairwise summation
  (:func:`_pairwise`: blocks of 8 accumulators up to 128 values, halves above), which
  is what numpy does along a contiguous axis, as the step-down's null columns are;
* counts and maxima do not depend on the order.

Imported lazily (``import numba`` costs about 2 s), as :mod:`multistat.significance.
_rank_kernels`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["pair_statistics", "successive_counts"]

#: numpy's pairwise-summation block (numpy/_core/src/umath/loops_utils.h.src)
_PW_BLOCK = 128


@njit(cache=True, nogil=True, inline="always")
def _value(da, db, i, est, sign, mean, squared):
    x = (da[i] - db[i]) - est
    v = abs(x) if sign == 0 else (x if sign > 0 else -x)
    if squared:
        d = v - mean
        return d * d
    return v


@njit(cache=True, nogil=True)
def _pairwise(da, db, est, sign, mean, squared, lo, n):
    """numpy's pairwise sum of the oriented null values ``lo .. lo + n`` (``squared``:
    of ``(v - mean) ** 2``), in numpy's order of additions."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += _value(da, db, i, est, sign, mean, squared)
        return res
    if n <= _PW_BLOCK:
        r0 = _value(da, db, lo, est, sign, mean, squared)
        r1 = _value(da, db, lo + 1, est, sign, mean, squared)
        r2 = _value(da, db, lo + 2, est, sign, mean, squared)
        r3 = _value(da, db, lo + 3, est, sign, mean, squared)
        r4 = _value(da, db, lo + 4, est, sign, mean, squared)
        r5 = _value(da, db, lo + 5, est, sign, mean, squared)
        r6 = _value(da, db, lo + 6, est, sign, mean, squared)
        r7 = _value(da, db, lo + 7, est, sign, mean, squared)
        i = 8
        stop = n - (n % 8)
        while i < stop:
            r0 += _value(da, db, lo + i, est, sign, mean, squared)
            r1 += _value(da, db, lo + i + 1, est, sign, mean, squared)
            r2 += _value(da, db, lo + i + 2, est, sign, mean, squared)
            r3 += _value(da, db, lo + i + 3, est, sign, mean, squared)
            r4 += _value(da, db, lo + i + 4, est, sign, mean, squared)
            r5 += _value(da, db, lo + i + 5, est, sign, mean, squared)
            r6 += _value(da, db, lo + i + 6, est, sign, mean, squared)
            r7 += _value(da, db, lo + i + 7, est, sign, mean, squared)
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += _value(da, db, lo + i, est, sign, mean, squared)
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return (_pairwise(da, db, est, sign, mean, squared, lo, n2)
            + _pairwise(da, db, est, sign, mean, squared, lo + n2, n - n2))


@njit(cache=True, nogil=True)
def pair_statistics(DT, ia, ib, est, null_value, sign, two_sided_test, p_test, raw,
                    scale, key, top):
    """Per pair ``j`` (rows ``ia[j]``, ``ib[j]`` of ``DT``, estimate ``est[j]``), written
    into the output arrays:

    * ``p_test``: the bootstrap test's shifted p-value of ``est - null_value``
      (``sign``: 0 two-sided, 1 greater, -1 less; tolerance ``1e-12 max(|obs|,
      max |null|)``);
    * ``raw``: the step-down's own p-value ``(#{v >= o - tol} + 1) / (B + 1)`` of the
      oriented null ``v`` against the oriented observed ``o``;
    * ``scale``: the sd (``ddof=1``) of ``v``, 1 where it is 0 (or ``B == 1``);
    * ``key``: ``o / scale``; ``top``: ``max v / scale``, the pair's largest
      studentized null value.
    """
    B = DT.shape[1]
    for j in range(len(ia)):
        da = DT[ia[j]]
        db = DT[ib[j]]
        e = est[j]
        obs = e - null_value
        o = abs(obs) if sign == 0 else (obs if sign > 0 else -obs)
        big = 0.0  # max |x|
        vmax = -np.inf  # max v
        for i in range(B):
            x = (da[i] - db[i]) - e
            ax = abs(x)
            if ax > big:
                big = ax
            v = ax if sign == 0 else (x if sign > 0 else -x)
            if v > vmax:
                vmax = v
        tol_t = 1e-12 * max(abs(obs), big)
        tol_o = 1e-12 * max(1.0, abs(o))
        lo_t = obs - tol_t
        hi_t = obs + tol_t
        lo_o = o - tol_o
        ge = 0
        le = 0
        hit = 0
        for i in range(B):
            x = (da[i] - db[i]) - e
            ge += x >= lo_t
            le += x <= hi_t
            v = abs(x) if sign == 0 else (x if sign > 0 else -x)
            hit += v >= lo_o
        p_ge = (ge + 1) / (B + 1)
        p_le = (le + 1) / (B + 1)
        if two_sided_test:
            p_test[j] = min(1.0, 2.0 * min(p_ge, p_le))
        else:
            p_test[j] = p_ge if sign > 0 else p_le
        raw[j] = (hit + 1) / (B + 1)
        sd = 1.0
        if B > 1:
            mean = _pairwise(da, db, e, sign, 0.0, False, 0, B) / B
            sd = np.sqrt(_pairwise(da, db, e, sign, mean, True, 0, B) / (B - 1))
        s = sd if sd > 0 else 1.0
        scale[j] = s
        key[j] = o / s
        top[j] = vmax / s


@njit(cache=True, nogil=True)
def successive_counts(DT, ia, ib, est, scale, thresh, sign, lo, hi, counts):
    """The step-down's counts over resamples ``lo .. hi``: pairs ``j`` in order of
    significance (most significant first); walking from the least significant end,
    ``carry[i] = max(carry[i], v_ij / scale[j])`` is the successive maximum over the
    pairs at and after ``j`` and ``counts[j] += #{i : carry[i] >= thresh[j]}``.
    ``B`` values of state, whatever the number of pairs."""
    carry = np.full(hi - lo, -np.inf)
    for j in range(len(ia) - 1, -1, -1):
        da = DT[ia[j]]
        db = DT[ib[j]]
        e = est[j]
        s = scale[j]
        t = thresh[j]
        c = 0
        for i in range(lo, hi):
            x = (da[i] - db[i]) - e
            v = abs(x) if sign == 0 else (x if sign > 0 else -x)
            v = v / s
            k = i - lo
            if v > carry[k]:
                carry[k] = v
            c += carry[k] >= t
        counts[j] += c
