"""The paired t test's power (noncentral t, from :mod:`scipy.special`) and its one
minimum-detectable-effect solver.

:func:`t_power` is the power function of :func:`multistat.power.power_paired_t`;
:func:`mde_dz` solves ``t_power(n, d) = power`` for ``d`` by Anderson-Bjorck regula falsi
(a bracketing secant, no derivative needed) from a normal-approximation bracket, to a
bracket of a few ulps: within 2e-11 relative of a brentq root up to n = 1e6
(``tests/test_first_call.py``). :func:`multistat.power.power_paired_t`,
:func:`multistat.power.mde_paired_t`, compare's ``mde`` column and the clustered t
test's all solve through it. scipy.special only: compare's first call does not import
scipy.optimize or scipy.stats for its ``mde`` column.

References
----------
Anderson, N., Bjorck, A. (1973). A new high order method of regula falsi type for
computing a root of an equation. BIT 13, 253-264. doi:10.1007/BF01951936
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special

from multistat._lazy import lazy_module

stats = lazy_module("scipy.stats")  # only where scipy lacks the ufunc below

__all__ = ["D_MAX", "mde_dz", "nct_sf", "nct_sf_tail", "t_power"]

#: the largest |d_z| searched, as ``paired_t`` solving for the effect size
D_MAX = 1e3

#: the ufunc ``stats.nct.sf`` evaluates (scipy.stats._continuous_distns.nct_gen._sf:
#: ``np.clip(scipy.special._ufuncs._nct_sf(x, df, nc), 0, 1)``); called directly, so that
#: ``compare``'s MDE never imports scipy.stats (0.3 s of a fresh process's first call)
_NCT_SF = getattr(getattr(special, "_ufuncs", None), "_nct_sf", None)


def nct_sf(x: float, df: float, nc: float) -> float:
    """P(T' > x), robust where scipy's noncentral t returns NaN far in a tail.

    First as ``special.nctdtr(df, -nc, -x)`` (the cdf of the mirrored variable: the same
    bits as ``stats.nct.sf(x, df, nc)`` wherever both are defined, checked on a grid of
    df 1..1e7, nc -50..50, x -40..40; a ufunc call takes ~5 us against ~160 us through
    ``rv_continuous``, and a solve evaluates the power ~20 times); where it gives NaN,
    ``stats.nct.sf`` (defined on more of the far tails)."""
    v = min(max(float(special.nctdtr(df, -nc, -x)), 0.0), 1.0)
    if math.isnan(v):
        v = nct_sf_tail(x, df, nc)
    if math.isnan(v):  # far tail: the mass is essentially all on one side of x
        v = 1.0 if x < nc else 0.0
    return v


def nct_sf_tail(x: float, df: float, nc: float) -> float:
    """``stats.nct.sf(x, df, nc)`` for finite ``x`` and ``df > 0``, the same bits
    (tests/test_power_analytic.py), without importing scipy.stats when scipy has the
    ufunc; through ``stats.nct.sf`` otherwise."""
    if _NCT_SF is not None and math.isfinite(x) and df > 0 and math.isfinite(nc):
        with np.errstate(over="ignore"):
            return float(np.clip(_NCT_SF(x, df, nc), 0.0, 1.0))
    return float(stats.nct.sf(x, df, nc))


def t_power(n: float, d: float, alpha: float, alternative: str) -> float:
    """Power of the paired t test with ``n`` pairs at standardized effect ``d = d_z``
    (exact noncentral t, ``df = n - 1``, ``nc = d sqrt(n)``; two-sided: both tails)."""
    df = n - 1.0
    nc = d * math.sqrt(n)
    # -stdtrit(df, q) is what stats.t.isf(q, df) evaluates (same bits, no rv overhead)
    if alternative == "two-sided":
        crit = -float(special.stdtrit(df, alpha / 2))
        return nct_sf(crit, df, nc) + nct_sf(crit, df, -nc)
    crit = -float(special.stdtrit(df, alpha))
    return nct_sf(crit, df, nc if alternative == "greater" else -nc)


def mde_dz(n: int, alpha: float, power: float, alternative: str) -> float:
    """``d_z`` the paired t test with ``n`` pairs detects with probability ``power`` at
    level ``alpha``: the root of :func:`t_power` ``= power`` in ``(0, D_MAX]``, negative
    for ``"less"``; NaN where ``multistat.power.analytic.mde_paired_t`` raises (``n < 2``,
    ``power`` not above the rejection rate under H0, no root up to ``D_MAX``, levels
    outside (0, 1)).

    Examples
    --------
    >>> round(mde_dz(80, 0.05, 0.8, "two-sided"), 10)  # statsmodels solve_power: 0.31709877
    0.3170987684
    """
    if not (n >= 2 and 0 < alpha < 1 and 0 < power < 1) or alternative not in (
            "two-sided", "greater", "less"):
        return math.nan
    if power <= (alpha / 2 if alternative == "two-sided" else alpha):
        return math.nan  # the rejection rate under H0: no effect needed, nothing to solve
    sign = -1.0 if alternative == "less" else 1.0

    def f(d):
        return t_power(n, sign * d, alpha, alternative) - power

    f0 = f(0.0)  # as mde_paired_t: a root at 0, or none if the power is reached there
    if f0 == 0:
        return sign * 0.0
    if not f0 < 0:
        return math.nan

    # bracket [a, b], f(a) < 0 < f(b), around the normal approximation
    # d ~ (z_{1-alpha'} + z_power) / sqrt(n), widened by factors of 2
    tail = alpha / 2 if alternative == "two-sided" else alpha
    guess = (float(special.ndtri(1 - tail)) + float(special.ndtri(power))) / math.sqrt(n)
    guess = min(max(guess, 1e-300), D_MAX)
    fg = f(guess)
    if not math.isfinite(fg):
        return math.nan
    if fg == 0:
        return sign * guess
    if fg < 0:
        a, fa = guess, fg
        b = guess
        while True:
            b = min(2.0 * b, D_MAX)
            fb = f(b)
            if not math.isfinite(fb):
                return math.nan
            if fb >= 0:
                break
            if b >= D_MAX:
                return math.nan  # no effect up to D_MAX reaches the power
            a, fa = b, fb
    else:
        b, fb = guess, fg
        a = guess
        while True:
            a = 0.5 * a
            fa = f(a)
            if not math.isfinite(fa):
                return math.nan
            if fa <= 0:
                break
            if a < 1e-300:
                return math.nan
            b, fb = a, fa
    if fa == 0:
        return sign * a
    if fb == 0:
        return sign * b
    return sign * _anderson_bjorck(f, a, fa, b, fb)


def _anderson_bjorck(f, a: float, fa: float, b: float, fb: float) -> float:
    """Root of ``f`` in ``[a, b]`` with ``fa < 0 < fb``: regula falsi with the
    Anderson-Bjorck scaling of the end point that stays, and a bisection whenever a
    step leaves the bracket short of halving; until the bracket is 4 ulps wide or ``f``
    is 0."""
    side = 0
    for _ in range(200):
        width = b - a
        if width <= 4 * np.spacing(max(abs(a), abs(b))):
            break
        c = b - fb * width / (fb - fa)
        if not a < c < b:
            c = a + 0.5 * width
        fc = f(c)
        if fc == 0 or not math.isfinite(fc):
            return c
        if fc < 0:  # c replaces a; b stays
            if side == -1:
                m = 1 - fc / fa
                fb = fb * (m if m > 0 else 0.5)
            a, fa, side = c, fc, -1
        else:  # c replaces b; a stays
            if side == 1:
                m = 1 - fc / fb
                fa = fa * (m if m > 0 else 0.5)
            b, fb, side = c, fc, 1
        if b - a > 0.5 * width:  # slow progress: bisect once
            c = a + 0.5 * (b - a)
            fc = f(c)
            if fc == 0 or not math.isfinite(fc):
                return c
            if fc < 0:
                a, fa = c, fc
            else:
                b, fb = c, fc
            side = 0
    return a + 0.5 * (b - a)


