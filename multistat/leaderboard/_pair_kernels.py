"""Numba kernels of the streamed leaderboard step-down (:mod:`multistat.leaderboard.stream`).

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


def pairwise_plan(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy's pairwise summation of ``n`` values as data: ``(starts, lengths, program)``.

    numpy sums blocks of at most 128 values (8 accumulators), and above that the first
    ``n2 = n // 2 - (n // 2) % 8`` values and the rest separately, adding the two sums.
    The blocks are the leaves of that tree (in order); ``program`` evaluates it in
    postfix: ``k >= 0`` pushes leaf ``k``'s sum, ``-1`` replaces the top two sums ``a``,
    ``b`` by ``a + b``. Compiled code then needs no recursion (numba does not cache
    recursive functions reliably)."""
    starts: list[int] = []
    lengths: list[int] = []
    program: list[int] = []

    def walk(lo, m):
        if m <= _PW_BLOCK:
            program.append(len(starts))
            starts.append(lo)
            lengths.append(m)
            return
        n2 = m // 2
        n2 -= n2 % 8
        walk(lo, n2)
        walk(lo + n2, m - n2)
        program.append(-1)

    walk(0, int(n))
    return (np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64),
            np.asarray(program, dtype=np.int64))


@njit(cache=True, nogil=True, inline="always")
def _v(da, db, i, est, sign):
    """The oriented null value of resample ``i`` and its ``x`` (numpy's operations)."""
    x = (da[i] - db[i]) - est
    return (abs(x) if sign == 0 else (x if sign > 0 else -x)), x


@njit(cache=True, nogil=True, inline="always")
def _term(da, db, i, est, sign, second, mean, bounds, acc):
    """What one resample adds to a leaf: ``v`` (first pass; ``acc`` gets ``max |x|``,
    ``max v``) or ``(v - mean) ** 2`` (second pass; ``acc`` counts ``x >= bounds[0]``,
    ``x <= bounds[1]``, ``v >= bounds[2]``)."""
    v, x = _v(da, db, i, est, sign)
    if second:
        acc[0] += x >= bounds[0]
        acc[1] += x <= bounds[1]
        acc[2] += v >= bounds[2]
        d = v - mean
        return d * d
    acc[0] = max(acc[0], abs(x))
    acc[1] = max(acc[1], v)
    return v


@njit(cache=True, nogil=True)
def _leaf(da, db, est, sign, second, mean, bounds, acc, lo, n):
    """One leaf of numpy's pairwise sum (:func:`pairwise_plan`) at ``lo .. lo + n``."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += _term(da, db, i, est, sign, second, mean, bounds, acc)
        return res
    r0 = _term(da, db, lo, est, sign, second, mean, bounds, acc)
    r1 = _term(da, db, lo + 1, est, sign, second, mean, bounds, acc)
    r2 = _term(da, db, lo + 2, est, sign, second, mean, bounds, acc)
    r3 = _term(da, db, lo + 3, est, sign, second, mean, bounds, acc)
    r4 = _term(da, db, lo + 4, est, sign, second, mean, bounds, acc)
    r5 = _term(da, db, lo + 5, est, sign, second, mean, bounds, acc)
    r6 = _term(da, db, lo + 6, est, sign, second, mean, bounds, acc)
    r7 = _term(da, db, lo + 7, est, sign, second, mean, bounds, acc)
    i = lo + 8
    stop = lo + n - (n % 8)
    while i < stop:
        r0 += _term(da, db, i, est, sign, second, mean, bounds, acc)
        r1 += _term(da, db, i + 1, est, sign, second, mean, bounds, acc)
        r2 += _term(da, db, i + 2, est, sign, second, mean, bounds, acc)
        r3 += _term(da, db, i + 3, est, sign, second, mean, bounds, acc)
        r4 += _term(da, db, i + 4, est, sign, second, mean, bounds, acc)
        r5 += _term(da, db, i + 5, est, sign, second, mean, bounds, acc)
        r6 += _term(da, db, i + 6, est, sign, second, mean, bounds, acc)
        r7 += _term(da, db, i + 7, est, sign, second, mean, bounds, acc)
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < lo + n:
        res += _term(da, db, i, est, sign, second, mean, bounds, acc)
        i += 1
    return res


@njit(cache=True, nogil=True)
def _pairwise(da, db, est, sign, second, mean, bounds, acc, starts, lengths, program,
              stack):
    """numpy's pairwise sum over all ``B`` values, by :func:`pairwise_plan`, with the
    pass's maxima or counts in ``acc`` (:func:`_term`)."""
    top = 0
    for op in program:
        if op >= 0:
            stack[top] = _leaf(da, db, est, sign, second, mean, bounds, acc, starts[op],
                               lengths[op])
            top += 1
        else:
            stack[top - 2] = stack[top - 2] + stack[top - 1]
            top -= 1
    return stack[0]


@njit(cache=True, nogil=True)
def pair_statistics(DT, ia, ib, est, null_value, sign, two_sided_test, starts, lengths,
                    program, p_test, raw, scale, key, top):
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

    ``starts, lengths, program``: :func:`pairwise_plan` of ``B``. Two passes over the
    resamples per pair: the sum of ``v`` with the maxima, then the sum of squared
    deviations with the counts (which need the maximum for their tolerance).
    """
    B = DT.shape[1]
    stack = np.empty(64)
    acc = np.zeros(3)
    bounds = np.zeros(3)
    for j in range(len(ia)):
        da = DT[ia[j]]
        db = DT[ib[j]]
        e = est[j]
        obs = e - null_value
        o = abs(obs) if sign == 0 else (obs if sign > 0 else -obs)
        acc[0] = 0.0  # max |x|
        acc[1] = -np.inf  # max v
        total = _pairwise(da, db, e, sign, False, 0.0, bounds, acc, starts, lengths,
                          program, stack)
        big = acc[0]
        vmax = acc[1]
        tol_t = 1e-12 * max(abs(obs), big)
        bounds[0] = obs - tol_t
        bounds[1] = obs + tol_t
        bounds[2] = o - 1e-12 * max(1.0, abs(o))
        acc[:] = 0.0
        ss = _pairwise(da, db, e, sign, True, total / B, bounds, acc, starts, lengths,
                       program, stack)
        ge = int(acc[0])
        le = int(acc[1])
        p_ge = (ge + 1) / (B + 1)
        p_le = (le + 1) / (B + 1)
        if two_sided_test:
            p_test[j] = min(1.0, 2.0 * min(p_ge, p_le))
        else:
            p_test[j] = p_ge if sign > 0 else p_le
        raw[j] = (int(acc[2]) + 1) / (B + 1)
        sd = np.sqrt(ss / (B - 1)) if B > 1 else 1.0
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
            carry[k] = max(carry[k], v)
            c += carry[k] >= t
        counts[j] += c
