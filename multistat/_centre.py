"""Centring by a per-metric constant: sums that do not depend on where the scores sit.

A paired test depends only on the differences ``a - b``; moving every score by a constant
(millisecond timestamps, log-likelihoods near -1e6, scores offset by 1e15) must not change
a p-value, a decision or an estimate beyond the rounding of the shifted scores
themselves. Sums over instances do not have that property: the mean of n scores near
2^50 is rounded to a quarter, and a Gram matrix or a resampled mean of such scores loses
the differences in the rounding of the offset.

Every sum of squares, Gram product and resampled mean therefore runs on ``x - k``, with
``k`` one constant per metric, common to every system: the lower median of a fixed sample
of the metric's scores - every system's scores on :data:`CANDIDATES` instances evenly
spread over the canonical instance order (:func:`centre_of`). Why this constant:

* it is a data value, and the same one (the same rank among the same sample) when every
  score moves by a constant, so on data on a grid (scores that are multiples of 1/8, say)
  and on the same data moved, ``x - k`` is exact and the same array, bit for bit: every sum
  formed from it is the same, so p-values and estimates are identical;
* it is common to the systems, so ``(x_a - k) - (x_b - k)`` is ``x_a - x_b`` wherever
  the centred scores are exact, and pairs are formed from per-system arrays as before
  (a sign-flipped or resampled mean of ``x_a - k`` minus that of ``x_b - k`` is the one
  of ``a - b``; no per-pair or per-instance term has to be added back);
* it lies in the middle of the scores, so the centred means are small: the paired t test
  recomputes a pair from its differences when its mean difference is 1e5 times smaller
  than the two means it is formed from (:mod:`multistat.significance.parametric`), which
  the smallest score as ``k`` (centred means of half the range) made 28 of 9,900
  leaderboard rows do, against none with the median.

A per-instance constant (e.g. the smallest score of each instance) would also remove
instance effects, but a level (a system's mean score, its bootstrap distribution) would
then need the resampled mean of the constants as well; a per-system constant would need
the difference of two constants added to every pair's statistic, and the sign-flipped
statistic would need it times the flipped sum of signs.

``k`` is 0 where no sampled score is finite, or where the scores are large enough that a
sum over the instances could overflow (``max |x| * n > 2^1000``): the power-of-two
rescaling of :class:`multistat.significance.Slab` handles those, as before. Levels (a
system's mean score) are ``mean(x - k) + k``: one rounding at the level's own magnitude.
"""

from __future__ import annotations

import warnings

import numpy as np

#: scores whose sum over the instances could reach this are not centred (the rescaled
#: paths handle them)
HUGE = 2.0 ** 1000
#: instances (every system's scores on them) sampled for the centre
CANDIDATES = 16


def candidate_positions(n: int) -> np.ndarray:
    """Positions (in the canonical instance order) of the instances whose scores are the
    candidates for the centre: up to :data:`CANDIDATES`, evenly spread."""
    if n <= 0:
        return np.zeros(0, dtype=np.intp)
    return np.unique(np.linspace(0, n - 1, min(n, CANDIDATES)).round().astype(np.intp))


def centre_of(candidates: np.ndarray, lo: np.ndarray, hi: np.ndarray, n: int
              ) -> np.ndarray:
    """The per-metric centre ``k`` ``(M,)``: the lower median of the finite values of
    ``candidates`` ``(S, M, C)`` (every system's scores on the sampled instances), or 0
    where none is finite or where ``max |x| * n`` exceeds :data:`HUGE` (``lo``/``hi``
    ``(S, M)``: per-system minima and maxima over all ``n`` instances)."""
    cand = np.asarray(candidates, dtype=float)
    M = cand.shape[1]
    flat = np.moveaxis(cand, 1, 0).reshape(M, -1)
    flat = np.sort(np.where(np.isfinite(flat), flat, np.nan), axis=-1)  # NaN last
    count = np.count_nonzero(np.isfinite(flat), axis=-1)
    at = np.maximum(count - 1, 0) // 2
    k = np.take_along_axis(flat, at[:, None], -1)[:, 0] if flat.shape[-1] else np.zeros(M)
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    with np.errstate(invalid="ignore"):
        big = np.max(np.where(np.isfinite(lo), np.abs(lo), 0.0), axis=0, initial=0.0)
        big = np.maximum(big, np.max(np.where(np.isfinite(hi), np.abs(hi), 0.0), axis=0,
                                     initial=0.0))
    ok = (count > 0) & (big * max(int(n), 1) <= HUGE)
    return np.where(ok, k, 0.0)


def centre_from_extremes(lo: np.ndarray, hi: np.ndarray, n: int) -> np.ndarray:
    """A per-metric constant ``(M,)`` from per-system minima and maxima ``lo``/``hi``
    ``(S, M)`` over ``n`` instances: the smallest finite minimum (a data value), or 0
    (as :func:`centre_of`). For the ASO estimate, whose samples (runs) are few."""
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    with np.errstate(invalid="ignore"):
        low = np.min(np.where(np.isfinite(lo), lo, np.inf), axis=0, initial=np.inf)
        high = np.max(np.where(np.isfinite(hi), hi, -np.inf), axis=0, initial=-np.inf)
        ok = (np.isfinite(low) & np.isfinite(high)
              & (np.maximum(np.abs(low), np.abs(high)) * max(int(n), 1) <= HUGE))
    return np.where(ok, low, 0.0)


def metric_centres(X: np.ndarray) -> np.ndarray:
    """:func:`centre_of` of scores ``X`` ``(S, M, n)`` (instances in canonical order):
    ``(M,)``."""
    X = np.asarray(X, dtype=float)
    if not X.size:
        return np.zeros(X.shape[1:-1])
    n = X.shape[-1]
    return centre_of(X[..., candidate_positions(n)], X.min(-1), X.max(-1), n)


def centred_means(X: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``mean(X - k)`` over the instances for ``X`` ``(S, M, n)`` and ``k`` ``(M,)``,
    one metric at a time (no copy of ``X``). Where ``k`` is 0 this is ``X.mean(-1)``,
    bit for bit (the subtraction keeps each metric's memory layout, so numpy sums in the
    same order)."""
    if not np.any(k):
        return X.mean(-1)
    out = np.empty(X.shape[:-1])
    for m in range(X.shape[1]):
        out[:, m] = (X[:, m] - k[m]).mean(-1) if k[m] else X[:, m].mean(-1)
    return out


def levels(centred: np.ndarray, k: np.ndarray | float) -> np.ndarray:
    """Levels from centred means (any array whose last axis is the metric): ``centred +
    k``, the same array where ``k`` is all 0."""
    return centred + k if np.any(k) else centred


def nan_centred_means(X: np.ndarray) -> np.ndarray:
    """``nanmean(X - k)`` ``(S, M)`` for ``X`` ``(S, M, r)`` with missing values (NaN),
    ``k`` :func:`centre_from_extremes` of the finite values: differences of these means
    are those of the plain means, without the rounding of a common offset."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows stay NaN
        k = centre_from_extremes(np.nanmin(X, -1), np.nanmax(X, -1), X.shape[-1])
        return np.nanmean(X - k[:, None], -1) if np.any(k) else np.nanmean(X, -1)


def pair_centre(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The constant both samples of a pair subtract before their means are compared
    (``x``, ``y``: instances or runs on the last axis, leading axes are rows):
    :func:`centre_from_extremes` of each row, with a trailing axis of length 1."""
    lo = np.minimum(np.min(x, -1), np.min(y, -1))
    hi = np.maximum(np.max(x, -1), np.max(y, -1))
    n = max(np.shape(x)[-1], np.shape(y)[-1])
    k = centre_from_extremes(np.reshape(lo, (1, -1)), np.reshape(hi, (1, -1)), n)
    return k.reshape(np.shape(lo) + (1,))
