"""Prospective (analytic) power: solve for whichever one quantity is left ``None``.

Solvers return a ``float``. A solved sample size ``n`` may be fractional: round it **up**
(``math.ceil``) to get the smallest test set that reaches the requested power (for the
exact discrete tests -- McNemar ``method="exact"`` and the sign test -- the solver returns
a :class:`~multistat.power._discrete.DiscreteSampleSize`: a float equal to the smallest
``n`` reaching the power, with ``.stays_above``, the ``n`` from which power never falls
below the target again; their power is a saw-tooth in ``n``).

References
----------
Card, D., Henderson, P., Khandelwal, U., Jia, R., Mahowald, K., Jurafsky, D. (2020). With
Little Power Comes Great Responsibility. EMNLP. doi:10.18653/v1/2020.emnlp-main.745
Connett, J. E., Smith, J. A., McHugh, R. B. (1987). Sample size and power for pair-matched
case-control studies. Statistics in Medicine 6, 53-59. doi:10.1002/sim.4780060107
Rosner, B. (2010). Fundamentals of Biostatistics, 7th ed. (paired t sample size).
R Core Team, ``stats::power.prop.test``; Ekstrom, C., R package MESS,
``power_mcnemar_test``.

Length (about 720 lines): one solver per test (paired t and its MDE, two proportions,
McNemar in three parametrizations with its exact error rates, the sign test, accuracy
MDEs), each a power function plus its solve-for-the-missing-quantity wrapper; they share
the checks and root-finding kept here.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from multistat._lazy import lazy_module
from multistat.errors import InfeasibleError, PowerParameterError
from multistat.power import _common as c
from multistat.power import _discrete
from multistat.significance._t_power import D_MAX, mde_dz, nct_sf, nct_sf_tail, t_power

stats = lazy_module("scipy.stats")  # imported on first use (the MDE of compare: never)

__all__ = [
    "power_paired_t", "power_two_proportions", "power_mcnemar", "power_mcnemar_discordant",
    "power_sign_test",
    "mde_accuracy", "mde_paired_t", "mcnemar_exact_errors", "LinearAgreementModel",
    "GLUE_AGREEMENT_MODEL", "SQUAD_AGREEMENT_MODEL", "ExactErrors",
]

_N_MAX = 1e9
#: methods of the two-proportion power (R power.prop.test's pooled variance; Cohen's h)
PROPORTION_METHODS = ("pooled", "arcsine")
#: methods of McNemar's power and minimum detectable improvement
MCNEMAR_METHODS = ("normal", "exact")


# =============================================================================== paired t
# The paired t test's power function and its one minimum-detectable-effect solver live
# in multistat.significance._t_power (below this package: the clustered t test's mde
# column and compare's use them too)
_nct_sf, _nct_sf_tail, _t_power = nct_sf, nct_sf_tail, t_power


def power_paired_t(*, n=None, effect_size=None, power=None, alpha=0.05, alternative="two-sided"):
    """Power of the paired (one-sample) t test, or the one quantity left ``None``.

    Parameters
    ----------
    n : float or None
        Number of pairs (evaluation units).
    effect_size : float or None
        Standardized effect ``d_z = delta / sigma`` of the differences ``a - b`` (the
        manual's delta over sigma). Negative values make sense for ``alternative="less"``.
    power : float in (0, 1) or None
    alpha : float in (0, 1) or None
    alternative : {"two-sided", "greater", "less"}
        H1 on the mean difference ``a - b``.

    Returns
    -------
    float
        The quantity left ``None``. ``n`` is fractional: use ``math.ceil(n)``. When
        solving ``effect_size`` the positive root is returned (the negative one for
        ``"less"``).

    Notes
    -----
    Exact noncentral t (as statsmodels ``TTestPower``): with ``df = n - 1`` and
    ``lambda = d sqrt(n)``, two-sided power is
    ``P(T' > t_{1-alpha/2, df}) + P(T' < -t_{1-alpha/2, df})``, ``T' ~ t(df, lambda)``;
    one-sided uses the matching single tail at ``alpha``.

    References
    ----------
    NLPStatTest manual, section 2 and appendix F.1 (prospective power for the t test).

    Examples
    --------
    >>> round(power_paired_t(n=30, effect_size=0.5), 6)  # statsmodels TTestPower: 0.753965
    0.753965
    >>> import math; math.ceil(power_paired_t(effect_size=0.5, power=0.8))
    34
    """
    alternative = c.alternative(alternative)
    unknown = c.one_unknown(n=n, effect_size=effect_size, power=power, alpha=alpha)
    n, effect_size, power, alpha = c.given(
        n=(n, c.n_at_least_one), effect_size=(effect_size, c.real),
        power=(power, c.open_unit), alpha=(alpha, c.open_unit))

    if unknown == "power":
        return _t_power(n, effect_size, alpha, alternative)
    if unknown == "alpha":
        return c.solve(lambda a: _t_power(n, effect_size, a, alternative), 1e-14, 1 - 1e-14,
                       what="alpha", target_name="power", target=power, range_text="(0, 1)")
    _check_power_above_alpha(power, alpha, alternative)
    if unknown == "n":
        if effect_size == 0:
            raise PowerParameterError("`effect_size` must be non-zero to solve for `n`")
        if _t_power(2.0, effect_size, alpha, alternative) >= power:
            return 2.0  # the t test needs n >= 2 (df >= 1)
        return c.solve(lambda m: _t_power(m, effect_size, alpha, alternative), 2.0,
                       8.0, what="sample size n", target_name="power", target=power,
                       range_text=f"[2, {_N_MAX:.0e}]", hi_max=_N_MAX)
    d = mde_dz(n, alpha, power, alternative)
    if math.isnan(d):
        sign = -1.0 if alternative == "less" else 1.0
        reached = (_t_power(n, 0.0, alpha, alternative),
                   _t_power(n, sign * D_MAX, alpha, alternative))
        raise InfeasibleError(
            f"no effect size within the feasible range [0, 1e3] (|d_z|) reaches power = "
            f"{power:g} (power runs from {reached[0]:.4g} to {reached[1]:.4g} over that "
            "range)")
    return d


def _check_power_above_alpha(power: float, alpha: float, alternative: str) -> None:
    floor = alpha / 2 if alternative == "two-sided" else alpha
    if power <= floor:
        raise PowerParameterError(
            f"`power` = {power!r} must exceed the rejection rate under H0 ({floor:g} for "
            f"alpha = {alpha:g}, {alternative}); nothing to solve"
        )


def mde_paired_t(*, n, sd=None, power=0.8, alpha=0.05, alternative="two-sided") -> float:
    """Minimum detectable mean difference of the paired t test for ``n`` pairs.

    Returns the standardized ``d_z`` solving ``power_paired_t(n=n, power=power)``, multiplied
    by ``sd`` (the standard deviation of the differences) when given, i.e. in metric units.
    """
    d = power_paired_t(n=n, effect_size=None, power=power, alpha=alpha, alternative=alternative)
    if sd is None:
        return d
    return d * c.positive("sd", sd)


# ========================================================================= two proportions
def _prop_power(n, p1, p2, alpha, alternative, method, strict):
    if method == "arcsine":
        h = 2 * math.asin(math.sqrt(p2)) - 2 * math.asin(math.sqrt(p1))
        s = h * math.sqrt(n / 2.0)
        if alternative == "two-sided":
            z = stats.norm.isf(alpha / 2)
            return float(stats.norm.sf(z - s) + stats.norm.cdf(-z - s))
        z = stats.norm.isf(alpha)
        return float(stats.norm.sf(z - s) if alternative == "greater" else stats.norm.cdf(-z - s))
    q1, q2 = 1 - p1, 1 - p2
    s0 = math.sqrt((p1 + p2) * (q1 + q2) / 2)
    s1 = math.sqrt(p1 * q1 + p2 * q2)
    if s1 == 0:
        return float("nan")
    diff = p2 - p1
    if alternative == "two-sided":
        z = stats.norm.isf(alpha / 2)
        pw = stats.norm.cdf((math.sqrt(n) * abs(diff) - z * s0) / s1)
        if strict:
            pw += stats.norm.sf((math.sqrt(n) * abs(diff) + z * s0) / s1)
        return float(pw)
    z = stats.norm.isf(alpha)
    signed = diff if alternative == "greater" else -diff
    return float(stats.norm.cdf((math.sqrt(n) * signed - z * s0) / s1))


def power_two_proportions(*, n=None, p1=None, p2=None, power=None, alpha=0.05,
                    alternative="two-sided", method="pooled", strict=False):
    """Power of the two-sample test of proportions (unpaired accuracies), or the unknown.

    Parameters
    ----------
    n : float or None
        Observations **per group** (each model evaluated on its own ``n`` items).
    p1, p2 : float in [0, 1] or None
        Success probabilities (e.g. baseline and new accuracy). The effect is ``p2 - p1``.
    power, alpha : float in (0, 1) or None
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: H1 ``p2 > p1``.
    method : {"pooled", "arcsine"}
        ``"pooled"`` (default) is R's ``power.prop.test``; ``"arcsine"`` uses Cohen's
        ``h = 2 asin sqrt(p2) - 2 asin sqrt(p1)`` as statsmodels ``NormalIndPower``.
    strict : bool
        Pooled method, two-sided only: add the probability of rejecting in the wrong
        tail (R's ``strict=TRUE``). Default ``False`` as in R.

    Returns
    -------
    float
        The quantity left ``None`` (``n`` fractional: round up). Solving ``p2`` searches
        ``(p1, 1)`` (``(0, p1)`` for ``"less"``); solving ``p1`` searches ``(0, p2)``
        (``(p2, 1)`` for ``"less"``), as R does.

    Notes
    -----
    Pooled (R): with ``qi = 1 - pi``,
    ``power = Phi((sqrt(n)|p1 - p2| - z_{1-alpha/2} sqrt((p1+p2)(q1+q2)/2)) /
    sqrt(p1 q1 + p2 q2))``. Arcsine: ``power = Phi(h sqrt(n/2) - z) + Phi(-h sqrt(n/2) - z)``.
    Card et al. (2020, appendix E.5, Table 9 "MDE Binomial") use ``power.prop.test``.
    """
    alternative = c.alternative(alternative)
    method = c.choice("method", method, PROPORTION_METHODS)
    unknown = c.one_unknown(n=n, p1=p1, p2=p2, power=power, alpha=alpha)
    n, p1, p2, power, alpha = c.given(
        n=(n, c.positive), p1=(p1, c.closed_unit), p2=(p2, c.closed_unit),
        power=(power, c.open_unit), alpha=(alpha, c.open_unit))
    strict = bool(strict)

    def pw(n_=n, p1_=p1, p2_=p2, a_=alpha):
        return _prop_power(n_, p1_, p2_, a_, alternative, method, strict)

    if unknown == "power":
        if p1 == p2 and method == "pooled" and p1 in (0.0, 1.0):
            raise PowerParameterError(
                f"`p1` = `p2` = {p1!r}: the test of proportions is undefined at 0 or 1")
        return pw()
    if unknown == "alpha":
        return c.solve(lambda a: pw(a_=a), 1e-14, 1 - 1e-14, what="alpha",
                       target_name="power", target=power, range_text="(0, 1)")
    _check_power_above_alpha(power, alpha, alternative)
    eps = 1e-10
    if unknown == "n":
        if p1 == p2:
            raise PowerParameterError("`p1` and `p2` must differ to solve for `n`")
        return c.solve(lambda m: pw(n_=m), 1e-6, 16.0, what="sample size n",
                       target_name="power", target=power, range_text=f"(0, {_N_MAX:.0e}]",
                       hi_max=_N_MAX)
    if unknown == "p2":
        lo, hi = (eps, p1 - eps) if alternative == "less" else (p1 + eps, 1 - eps)
        if lo >= hi:
            raise InfeasibleError(f"no p2 is feasible on that side of p1 = {p1:g}")
        return c.solve(lambda x: pw(p2_=x), lo, hi, what="p2", target_name="power",
                       target=power, range_text=f"({lo:.6g}, {hi:.6g})")
    lo, hi = (p2 + eps, 1 - eps) if alternative == "less" else (eps, p2 - eps)
    if lo >= hi:
        raise InfeasibleError(f"no p1 is feasible on that side of p2 = {p2:g}")
    return c.solve(lambda x: pw(p1_=x), lo, hi, what="p1", target_name="power",
                   target=power, range_text=f"({lo:.6g}, {hi:.6g})")


# ==================================================================== exact binomial pieces
def _k_range(n: int, p: float, tail: float = 1e-14) -> np.ndarray:
    if p <= 0:
        return np.array([0])
    if p >= 1:
        return np.array([n])
    lo = int(stats.binom.ppf(tail, n, p))
    hi = int(stats.binom.isf(tail, n, p)) + 1
    return np.arange(max(lo, 0), min(hi, n) + 1)


# ================================================================================ McNemar
def _check_delta_agreement(delta: float, agreement: float) -> None:
    disc = 1.0 - agreement
    if abs(delta) > disc + 1e-12:
        raise PowerParameterError(
            f"`delta` = {delta!r}: an accuracy difference cannot exceed the discordant "
            f"share 1 - agreement = {disc:.6g} (|delta| <= 1 - P_a)"
        )


def _mcnemar_power(n, delta, agreement, alpha, alternative, method) -> float:
    disc = 1.0 - agreement
    if disc <= 0:
        return 0.0
    if method == "normal":
        var = disc - delta * delta
        signed = abs(delta) if alternative == "two-sided" else (
            delta if alternative == "greater" else -delta)
        z = stats.norm.isf(alpha / 2 if alternative == "two-sided" else alpha)
        if var <= 0:
            return 1.0 if math.sqrt(n) * signed > z * math.sqrt(disc) else 0.0
        return float(stats.norm.cdf((math.sqrt(n) * signed - z * math.sqrt(disc))
                                    / math.sqrt(var)))
    n = int(round(n))
    q = min(max((disc + delta) / (2 * disc), 0.0), 1.0)
    k = _k_range(n, disc)
    w = stats.binom.pmf(k, n, disc)
    return float(np.sum(w * _discrete.sign_power(k, q, alpha, alternative)))


def power_mcnemar(*, n=None, delta=None, agreement=None, power=None, alpha=0.05, method="normal",
            alternative="two-sided"):
    """Power of McNemar's test for two classifiers on one test set, or the unknown.

    Parameters
    ----------
    n : float or None
        Test-set size (number of paired items).
    delta : float or None
        Expected accuracy difference ``acc(a) - acc(b)`` (Card et al.'s Delta).
    agreement : float in [0, 1] or None
        Expected share of items on which both models are right or both wrong (P_a).
        The discordant share is ``1 - P_a`` and needs ``|delta| <= 1 - P_a``.
    power, alpha : float in (0, 1) or None
    method : {"normal", "exact"}
        ``"normal"``: Connett et al. (1987) approximation as R MESS
        ``power_mcnemar_test(method="normal")`` (one tail, like MESS). ``"exact"``: the
        exact unconditional power of the exact conditional (binomial) McNemar test,
        summing over the binomial number of discordant items.
    alternative : {"two-sided", "greater", "less"}
        ``"greater"``: H1 ``acc(a) > acc(b)``.

    Returns
    -------
    float
        The unknown. ``n`` fractional for ``"normal"`` (round up). For ``"exact"`` a
        :class:`~multistat.power._discrete.DiscreteSampleSize`: the smallest ``n`` with
        power >= target (exact power is a saw-tooth in n), carrying ``.stays_above``, the
        ``n`` from which power stays >= target for every larger n (established by an
        exact scan up to where a proven monotone lower bound reaches the target; see
        :mod:`multistat.power._discrete`). Solving ``delta`` returns the positive root
        (negative for ``"less"``) searched in ``(0, 1 - P_a]``; solving ``agreement``
        searches ``[0, 1 - |delta|]``.

    Notes
    -----
    With discordant share ``D = 1 - P_a``, ``p01 = (D + delta)/2`` and
    ``p10 = (D - delta)/2``, the normal power is
    ``Phi((sqrt(n)|delta| - z_{1-alpha/2} sqrt(D)) / sqrt(D - delta^2))``; in MESS's
    parameters ``paid = p10``, ``psi = p01/p10`` this is MESS's formula. The exact power is
    ``sum_k Bin(k; n, D) P(reject | k)`` with ``B | k ~ Bin(k, p01/D)`` and the two-sided
    p-value ``min(1, 2 P(Bin(k, 1/2) <= min(B, k-B)))`` (statsmodels ``mcnemar``,
    ``exact=True``, which Card et al.'s notebooks use).
    """
    alternative = c.alternative(alternative)
    method = c.choice("method", method, MCNEMAR_METHODS)
    unknown = c.one_unknown(n=n, delta=delta, agreement=agreement, power=power, alpha=alpha)
    if n is not None:
        n = (c.integer("n", n, minimum=1) if method == "exact" else c.positive("n", n))
    if agreement is not None:
        agreement = c.closed_unit("agreement", agreement)
    if delta is not None:
        delta = c.real("delta", delta)
        if not -1.0 <= delta <= 1.0:
            raise PowerParameterError(f"`delta` must be in [-1, 1]; got {delta!r}")
    if delta is not None and agreement is not None:
        _check_delta_agreement(delta, agreement)
    power, alpha = c.given(power=(power, c.open_unit), alpha=(alpha, c.open_unit))

    def pw(n_=n, d_=delta, pa_=agreement, a_=alpha):
        return _mcnemar_power(n_, d_, pa_, a_, alternative, method)

    if unknown == "power":
        return pw()
    if unknown == "alpha":
        return c.solve(lambda a: pw(a_=a), 1e-14, 1 - 1e-14, what="alpha",
                       target_name="power", target=power, range_text="(0, 1)")
    _check_power_above_alpha(power, alpha, alternative)
    if unknown == "n":
        if delta == 0:
            raise PowerParameterError("`delta` must be non-zero to solve for `n`")
        if method == "exact":
            disc = 1.0 - agreement
            q = min(max((disc + delta) / (2 * disc), 0.0), 1.0)
            return _discrete.mcnemar_sample_size(disc, q, power, alpha, alternative)
        return c.solve(lambda m: pw(n_=m), 1e-9, 16.0, what="sample size n",
                       target_name="power", target=power, range_text=f"(0, {_N_MAX:.0e}]",
                       hi_max=_N_MAX)
    if unknown == "delta":
        disc = 1.0 - agreement
        if disc <= 0:
            raise InfeasibleError("agreement = 1 leaves no discordant items: no accuracy "
                                  "difference is possible")
        sign = -1.0 if alternative == "less" else 1.0
        return sign * c.solve(lambda d: pw(d_=sign * d), 0.0, disc, what="accuracy difference",
                              target_name="power", target=power,
                              range_text=f"(0, 1 - agreement] = (0, {disc:.6g}]")
    hi = 1.0 - abs(delta)
    return c.solve(lambda pa: pw(pa_=pa), 0.0, hi, what="agreement", target_name="power",
                   target=power, range_text=f"[0, 1 - |delta|] = [0, {hi:.6g}]")


def power_mcnemar_discordant(*, n=None, paid=None, psi=None, power=None, alpha=0.05,
                       method="normal", alternative="two-sided"):
    """McNemar power in the discordant-probability / odds-ratio parameters of R MESS.

    Parameters
    ----------
    paid : float in (0, 1) or None
        The smaller discordant probability (``p_12`` in MESS).
    psi : float >= 1 or None
        Odds ratio: larger over smaller discordant probability (``p_21 / p_12``).
    n, power, alpha, method, alternative
        As :func:`mcnemar`.

    Returns
    -------
    float
        The unknown (``n`` fractional for ``"normal"``; round up).

    Notes
    -----
    Maps to :func:`mcnemar` with ``delta = paid (psi - 1)`` and
    ``agreement = 1 - paid (psi + 1)``; the normal power is then exactly MESS's
    ``pnorm((sqrt(n paid)(psi - 1) - z sqrt(psi + 1)) / sqrt((psi + 1) - paid (psi - 1)^2))``.
    """
    unknown = c.one_unknown(n=n, paid=paid, psi=psi, power=power, alpha=alpha)
    if paid is not None:
        paid = c.open_unit("paid", paid)
    if psi is not None:
        psi = c.real("psi", psi)
        if psi < 1:
            raise PowerParameterError(
                f"`psi` (odds ratio larger/smaller discordant probability) must be >= 1; "
                f"got {psi!r}")
    if paid is not None and psi is not None and paid * (1 + psi) > 1:
        raise PowerParameterError(
            f"`paid` * (1 + `psi`) = {paid * (1 + psi):.6g} > 1: the discordant "
            f"probabilities cannot sum to more than 1")

    def via(paid_, psi_, **kw):
        return power_mcnemar(delta=paid_ * (psi_ - 1), agreement=1 - paid_ * (1 + psi_),
                       method=method, alternative=alternative, **kw)

    if unknown in ("power", "n", "alpha"):
        return via(paid, psi, n=n, power=power, alpha=alpha)
    power = c.open_unit("power", power)
    alpha = c.open_unit("alpha", alpha)
    if unknown == "paid":
        hi = 1.0 / (1.0 + psi)
        return c.solve(lambda p: via(p, psi, n=n, alpha=alpha), 1e-12, hi - 1e-12,
                       what="paid", target_name="power", target=power,
                       range_text=f"(0, 1/(1+psi)) = (0, {hi:.6g})")
    hi = 1.0 / paid - 1.0
    return c.solve(lambda s: via(paid, s, n=n, alpha=alpha), 1.0, hi, what="psi",
                   target_name="power", target=power,
                   range_text=f"[1, 1/paid - 1] = [1, {hi:.6g}]")


# ================================================================================ sign test
def power_sign_test(*, n=None, p=None, power=None, alpha=0.05, alternative="two-sided"):
    """Power of the exact sign (binomial, p0 = 1/2) test, or the unknown.

    Parameters
    ----------
    n : int or None
        Number of non-tied pairs (or of raters expressing a preference).
    p : float in [0, 1] or None
        Probability that a non-tied pair favours ``a`` (``P(a > b | a != b)``).
    power, alpha, alternative
        As :func:`paired_t`; ``"greater"`` means H1 ``p > 1/2``.

    Returns
    -------
    float
        The unknown. Solving ``n`` returns a
        :class:`~multistat.power._discrete.DiscreteSampleSize` (exact power is a
        saw-tooth in n: at p = 0.6 it is 0.8037 at n = 199, 0.787 at 200, 0.798 at 209):
        a float equal to the smallest ``n`` with power >= target (199 there), with
        ``.stays_above`` the ``n`` from which power stays >= target for every larger n
        (210 there), established by an exact scan up to the ``n`` where a proven
        non-decreasing (Hoeffding) lower bound on the power reaches the target.
        Solving ``p`` returns the root above 1/2 (below for ``"less"``).

    Notes
    -----
    ``power = sum_{x in R} Bin(x; n, p)`` over the exact rejection region ``R`` of the
    binomial test with two-sided p-value ``min(1, 2 min tail)`` (scipy ``binomtest``).
    """
    alternative = c.alternative(alternative)
    unknown = c.one_unknown(n=n, p=p, power=power, alpha=alpha)
    n, p, power, alpha = c.given(
        n=(n, c.integer), p=(p, c.closed_unit), power=(power, c.open_unit),
        alpha=(alpha, c.open_unit))

    def pw(n_=n, p_=p, a_=alpha):
        return float(_discrete.sign_power(np.array([n_]), p_, a_, alternative)[0])

    if unknown == "power":
        return pw()
    if unknown == "alpha":
        return c.solve(lambda a: pw(a_=a), 1e-14, 1 - 1e-14, what="alpha",
                       target_name="power", target=power, range_text="(0, 1)")
    _check_power_above_alpha(power, alpha, alternative)
    if unknown == "n":
        if p == 0.5:
            raise PowerParameterError("`p` must differ from 0.5 to solve for `n`")
        return _discrete.sign_sample_size(p, power, alpha, alternative)
    lo, hi = (0.0, 0.5) if alternative == "less" else (0.5, 1.0)
    if alternative == "less":
        return c.solve(lambda x: pw(p_=x), lo, hi, what="p", target_name="power",
                       target=power, range_text="[0, 0.5]")
    return c.solve(lambda x: pw(p_=x), lo, hi, what="p", target_name="power", target=power,
                   range_text="[0.5, 1]")


# ==================================================================== exact McNemar errors
@dataclass(frozen=True)
class ExactErrors:
    """Exact operating characteristics of the exact McNemar test (no Monte Carlo).

    Attributes
    ----------
    power : P(p <= alpha)
    power_correct_sign : P(p <= alpha and sign(observed) = sign(delta))
    type_m : E(|observed| / |delta| | significant)
    type_s : P(sign(observed) != sign(delta) | significant)
    mean_significant_effect : E(observed | significant)
    """

    n: int
    delta: float
    agreement: float
    alpha: float
    power: float
    power_correct_sign: float
    type_m: float
    type_s: float
    mean_significant_effect: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def mcnemar_exact_errors(*, n, delta, agreement, alpha=0.05) -> ExactErrors:
    """Exact power, Type-M and Type-S of the two-sided exact McNemar test.

    Enumerates the number ``k`` of discordant items (``Bin(n, 1 - P_a)``) and the count
    ``B`` favouring ``a`` (``Bin(k, p01 / (1 - P_a))``); the observed difference is
    ``(2B - k)/n``. This is what :func:`~multistat.power.simulate_mcnemar` estimates by
    Monte Carlo, so it checks the simulation exactly.
    """
    n = c.integer("n", n, minimum=1)
    agreement = c.closed_unit("agreement", agreement)
    delta = c.real("delta", delta)
    _check_delta_agreement(delta, agreement)
    alpha = c.open_unit("alpha", alpha)
    if delta == 0:
        raise PowerParameterError("`delta` must be non-zero for Type-M/Type-S errors")
    disc = 1.0 - agreement
    q = (disc + delta) / (2 * disc)
    p_sig = p_right = m_abs = m_eff = 0.0
    for k in _k_range(n, disc):
        wk = stats.binom.pmf(k, n, disc)
        if k == 0 or wk == 0:
            continue
        cl = int(_discrete.crit_lower(np.array([k]), alpha / 2)[0])
        if cl < 0:
            continue
        b = np.concatenate([np.arange(0, cl + 1), np.arange(k - cl, k + 1)])
        wb = wk * stats.binom.pmf(b, k, q)
        eff = (2 * b - k) / n
        p_sig += wb.sum()
        p_right += wb[np.sign(eff) == np.sign(delta)].sum()
        m_abs += (wb * np.abs(eff)).sum()
        m_eff += (wb * eff).sum()
    nan = float("nan")
    return ExactErrors(
        n=n, delta=delta, agreement=agreement, alpha=alpha, power=float(p_sig),
        power_correct_sign=float(p_right),
        type_m=float(m_abs / p_sig / abs(delta)) if p_sig > 0 else nan,
        type_s=float(1 - p_right / p_sig) if p_sig > 0 else nan,
        mean_significant_effect=float(m_eff / p_sig) if p_sig > 0 else nan,
    )


# ============================================================================ MDE accuracy
@dataclass(frozen=True)
class LinearAgreementModel:
    """Agreement predicted linearly: ``P_a = intercept + b * baseline + d * delta``.

    Card et al. (2020, appendix E.2, eq. 2) regress the share of overlapping predictions
    on the baseline (minimum) accuracy and the accuracy gap.
    """

    intercept: float
    baseline_coef: float
    delta_coef: float

    def __call__(self, baseline: float, delta: float) -> float:
        return self.intercept + self.baseline_coef * baseline + self.delta_coef * delta


#: Card et al. (2020) Table 5 (GLUE, R^2 = 0.966), with the full-precision coefficients of
#: the authors' notebook ``analyses/GLUE/Analyze_reported_results.ipynb`` (0.4142, 0.5819,
#: -0.4662 as printed in Table 5).
GLUE_AGREEMENT_MODEL = LinearAgreementModel(0.41422307, 0.58187475, -0.46624237)
#: Card et al. (2020) Table 6 (SQuAD 2.0, R^2 = 0.944).
SQUAD_AGREEMENT_MODEL = LinearAgreementModel(0.4339, 0.5932, -1.2849)
#: the agreement models by name (the command line's ``--agreement-model glue``)
AGREEMENT_MODELS = {"glue": GLUE_AGREEMENT_MODEL, "squad": SQUAD_AGREEMENT_MODEL}


def mde_accuracy(*, n, baseline=None, agreement=None, agreement_model=None, power=0.8,
                 alpha=0.05, method="normal", alternative="two-sided", grid=2001) -> float:
    """Minimum detectable accuracy improvement for McNemar's test on ``n`` items.

    Parameters
    ----------
    n : float
        Test-set size.
    baseline : float in [0, 1] or None
        Accuracy of the baseline (current SOTA). Needed with ``agreement_model``; with a
        fixed ``agreement`` it adds the constraint that the 2 x 2 table is valid.
    agreement : float in [0, 1] or None
        Fixed expected agreement P_a.
    agreement_model : callable ``(baseline, delta) -> P_a`` or None
        E.g. :data:`GLUE_AGREEMENT_MODEL` or any :class:`LinearAgreementModel`.
        Give exactly one of ``agreement`` and ``agreement_model``.
    power, alpha, method, alternative
        As :func:`mcnemar`.
    grid : int
        Points used to locate the first crossing when the agreement depends on delta.

    Returns
    -------
    float
        The smallest ``delta > 0`` whose power reaches ``power``.

    Raises
    ------
    InfeasibleError
        When no delta in the feasible range reaches the power; the message gives the range.

    Notes
    -----
    Feasible ``delta``: ``0 < delta <= D`` with ``D = 1 - P_a(delta)``, and with a
    baseline the table ``p11 = b - (D - delta)/2``, ``p00 = 1 - b - (D + delta)/2`` must be
    non-negative, so ``delta <= 2 (1 - b) - D``. Card et al. Table 2 solves
    ``power(delta) = 0.8`` with MESS's normal formula and the GLUE/SQuAD regressions.
    """
    n = c.positive("n", n)
    power = c.open_unit("power", power)
    alpha = c.open_unit("alpha", alpha)
    alternative = c.choice("alternative", alternative, ("two-sided", "greater"))
    method = c.choice("method", method, MCNEMAR_METHODS)
    if (agreement is None) == (agreement_model is None):
        raise PowerParameterError(
            "give exactly one of `agreement` (a number) and `agreement_model` "
            "(callable (baseline, delta) -> agreement)")
    if agreement is not None:
        agreement = c.closed_unit("agreement", agreement)
        model: Callable[[float, float], float] = lambda b, d: agreement  # noqa: E731
    else:
        if not callable(agreement_model):
            raise PowerParameterError(
                f"`agreement_model` must be callable (baseline, delta) -> agreement; got "
                f"{agreement_model!r}")
        if baseline is None:
            raise PowerParameterError("`baseline` accuracy is required with `agreement_model`")
        model = agreement_model
    if baseline is not None:
        baseline = c.closed_unit("baseline", baseline)
    _check_power_above_alpha(power, alpha, alternative)
    if method == "exact":
        n = float(c.integer("n", n))

    def feasible(d: float) -> bool:
        pa = float(model(baseline, d))
        if not 0.0 <= pa <= 1.0:
            return False
        disc = 1.0 - pa
        if d > disc + 1e-15:
            return False
        if baseline is not None:
            if baseline - (disc - d) / 2 < -1e-15 or 1 - baseline - (disc + d) / 2 < -1e-15:
                return False
        return True

    def pw(d: float) -> float:
        return _mcnemar_power(n, d, float(model(baseline, d)), alpha, alternative, method)

    upper = 1.0 if baseline is None else 1.0 - baseline
    if agreement is not None:
        upper = min(upper, 1.0 - agreement)
    if upper <= 0:
        raise InfeasibleError(f"no accuracy improvement is possible (upper bound {upper:g})")
    ds = np.linspace(0, upper, int(grid))[1:]
    ok = np.array([feasible(d) for d in ds])
    if not ok.any():
        raise InfeasibleError(
            f"no accuracy improvement in (0, {upper:.6g}] gives a valid 2x2 table with the "
            f"given baseline/agreement")
    lo_f, hi_f = ds[ok][0], ds[ok][-1]
    # refine the feasible upper end (constraints are monotone for linear models)
    if not ok[-1]:
        j = np.flatnonzero(ok)[-1]
        a, b_ = ds[j], ds[j + 1]
        for _ in range(60):
            mid = (a + b_) / 2
            a, b_ = (mid, b_) if feasible(mid) else (a, mid)
        hi_f = a
    powers = np.array([pw(d) if (lo_f <= d <= hi_f) else -1.0 for d in ds])
    reach = np.flatnonzero(powers >= power)
    if reach.size == 0 and pw(hi_f) < power:
        best = max(float(powers.max()), pw(hi_f))
        raise InfeasibleError(
            f"no accuracy improvement within the feasible range (0, "
            f"{hi_f:.6g}] reaches power = {power:g} at n = {n:g} (maximum power "
            f"{best:.4f}); a larger test set is needed")
    if reach.size == 0:
        a, b_ = ds[ok][-1], hi_f
    else:
        j = reach[0]
        b_ = ds[j]
        a = ds[j - 1] if j > 0 and powers[j - 1] >= 0 else lo_f * 1e-9
    if method == "exact":
        # exact power is continuous in delta for fixed n; bisection on the crossing
        for _ in range(80):
            mid = (a + b_) / 2
            a, b_ = (a, mid) if pw(mid) >= power else (mid, b_)
        return float(b_)
    return c.solve(pw, a, b_, what="accuracy improvement", target_name="power",
                   target=power)


# ------------------------------------------------------------------ names before 0.2
def _deprecated(new: Callable, old: str) -> Callable:
    """``old`` kept one release: calls ``new`` and warns (removed in 0.3)."""
    @functools.wraps(new)
    def wrapper(*args, **kwargs):
        warnings.warn(f"multistat.power.{old}() is deprecated and will be removed in "
                      f"multistat 0.3; use multistat.power.{new.__name__}()",
                      DeprecationWarning, stacklevel=2)
        return new(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = old
    wrapper.__doc__ = f"Deprecated alias of :func:`{new.__name__}` (removed in 0.3)."
    return wrapper


#: the power functions' names before 0.2 (``multistat.power.paired_t`` was easy to
#: confuse with the test ``multistat.significance.paired_t``)
DEPRECATED = {old: _deprecated(globals()[f"power_{old}"], old)
              for old in ("paired_t", "two_proportions", "mcnemar", "mcnemar_discordant",
                          "sign_test")}
