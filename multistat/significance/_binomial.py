"""The exact binomial test of ``p = 1/2`` (sign test, exact McNemar, power scenarios).

One function, :func:`binom_half_pvalue`, so the sign test, McNemar's exact and mid-p
tests and the power simulations compute the same p-value the same way.
"""

from __future__ import annotations

import numpy as np

from multistat._lazy import lazy_module

stats = lazy_module("scipy.stats")  # imported on first use

__all__ = ["binom_half_pvalue"]


def binom_half_pvalue(k, m, alternative="two-sided", *, mid=False):
    r"""Exact p-value of ``k`` successes in ``m`` trials under :math:`\mathrm{Bin}(m, 1/2)`.

    Parameters
    ----------
    k, m : array_like of int
        Successes and trials (broadcast together).
    alternative : {"two-sided", "less", "greater"}
        ``"greater"``: :math:`P(K \ge k)`; ``"less"``: :math:`P(K \le k)`; two-sided:
        :math:`\min(1, 2 P(K \le \min(k, m - k)))`, the doubled smaller tail, which for
        :math:`p_0 = 1/2` (a symmetric null) equals :func:`scipy.stats.binomtest`'s
        two-sided p-value.
    mid : bool
        Mid-p version (Lancaster 1961): the probability of the observed count enters each
        tail with weight 1/2.

    Returns
    -------
    ndarray of float
        ``m = 0`` gives 1 (NaN-free); callers that want NaN for "no trials" mask it.

    Examples
    --------
    >>> from scipy import stats
    >>> bool(abs(binom_half_pvalue(6, 7) - stats.binomtest(6, 7).pvalue) < 1e-15)
    True
    """
    k = np.asarray(k)
    m = np.asarray(m)
    half = 0.5 if mid else 0.0
    if alternative == "greater":
        p = stats.binom.sf(k - 1, m, 0.5) - half * stats.binom.pmf(k, m, 0.5)
    elif alternative == "less":
        p = stats.binom.cdf(k, m, 0.5) - half * stats.binom.pmf(k, m, 0.5)
    else:
        small = np.minimum(k, m - k)
        p = 2.0 * (stats.binom.cdf(small, m, 0.5) - half * stats.binom.pmf(small, m, 0.5))
    return np.minimum(p, 1.0)
