"""Effect sizes for paired comparisons, each with a confidence interval.

All functions take paired arrays ``x``, ``y`` with instances on the last axis (leading
axes are batch axes, e.g. pairs or simulation replications) and return an
:class:`EffectSize` whose fields are arrays over the leading shape.

* :func:`cohens_dz` - standardized mean difference of the paired differences, exact
  noncentral-t interval;
* :func:`hedges_g` - the same with the exact small-sample bias correction;
* :func:`wilcoxon_r` - :math:`Z/\\sqrt n` of the Wilcoxon signed-rank test, interval
  from the asymptotic (Hajek projection) variance of :math:`W^+`;
* :func:`hodges_lehmann` - median of the Walsh averages, distribution-free interval
  (shared with :func:`multistat.significance.rank.wilcoxon`);
* :func:`effect_sizes` - all four as the columns of the compare table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats
from scipy.optimize import elementwise

from multistat._validation import check_probability
from multistat.errors import ConstantInputWarning, SmallSampleWarning
from multistat.significance._common import (
    add_note,
    check_paired,
    constant_rows,
    empty_notes,
    scalar,
    warn_rows,
)
from multistat.significance._signrank import (
    signed_rank_info,
    signed_rank_parts,
)
from multistat.significance._signrank import (
    walsh_projection_variance as _walsh_projection_variance,
)
from multistat.significance.parametric import pair_constant, pair_mean_sd
from multistat.significance.rank import hl_and_interval, walsh_exact_rows

__all__ = [
    "EFFECT_COLUMNS",
    "EffectSize",
    "cohens_dz",
    "effect_sizes",
    "hedges_correction",
    "hedges_g",
    "hodges_lehmann",
    "wilcoxon_r",
]

EFFECT_COLUMNS = (
    "cohens_d", "cohens_d_ci_low", "cohens_d_ci_high",
    "hedges_g", "hedges_g_ci_low", "hedges_g_ci_high",
    "wilcoxon_r", "wilcoxon_r_ci_low", "wilcoxon_r_ci_high",
    "hodges_lehmann", "hodges_lehmann_ci_low", "hodges_lehmann_ci_high",
)


@dataclass(frozen=True)
class EffectSize:
    """An effect size with its two-sided confidence interval (arrays over batch axes).

    Attributes
    ----------
    name : "cohens_d", "hedges_g", "wilcoxon_r" or "hodges_lehmann"
    estimate, ci_low, ci_high : point estimate and interval
    confidence_level : level of the interval
    n : pairs used
    note : empty, or why a value is NaN
    """

    name: str
    estimate: object
    ci_low: object
    ci_high: object
    confidence_level: float
    n: object
    note: object = ""

    def confidence_interval(self):
        """``(ci_low, ci_high)``."""
        return self.ci_low, self.ci_high


def _prepare(x, y, confidence_level):
    x, y, _, _, level = check_paired(x, y, "two-sided", 0.0, confidence_level)
    return x - y, level


# ----------------------------------------------------------------------------- d and g
def hedges_correction(df):
    r"""Exact bias correction :math:`J(df) = \Gamma(df/2) / (\sqrt{df/2}\,\Gamma((df-1)/2))`.

    :math:`E[J d] = \delta` for normal differences (Hedges 1981). The NLPStatTest manual
    (eq. 15) uses the approximation :math:`1 - 3/(4 df - 1)`, which differs from it by
    :math:`1.4 \cdot 10^{-3}` at :math:`df = 5` and :math:`3 \cdot 10^{-4}` at :math:`df = 10`. NaN
    for :math:`df < 2`.
    """
    df = np.asarray(df, dtype=float)
    with np.errstate(invalid="ignore"):
        out = np.exp(special.gammaln(df / 2) - special.gammaln((df - 1) / 2)) / np.sqrt(df / 2)
    return np.where(df >= 2, out, np.nan)


def _nct_noncentrality(t, df, prob):
    """Noncentrality ``nc`` with ``nct.cdf(t, df, nc) == prob`` (vectorized root finding)."""
    t = np.asarray(t, dtype=float)

    def f(nc, t, df, prob):
        cdf = stats.nct.cdf(t, df, nc)
        # far in the tails scipy's nct.cdf can return NaN: it is 0 (nc >> t) or 1 (nc << t)
        cdf = np.where(np.isnan(cdf), np.where(nc > t, 0.0, 1.0), cdf)
        return cdf - prob

    # cdf decreases in nc; start at t +- 6 sd of T and widen until the root is inside
    width = 6.0 * np.sqrt(1.0 + t**2 / (2.0 * df))
    lo, hi = t - width, t + width
    for _ in range(60):
        grow_lo, grow_hi = f(lo, t, df, prob) < 0, f(hi, t, df, prob) > 0
        if not (grow_lo.any() or grow_hi.any()):
            break
        lo = np.where(grow_lo, lo - width, lo)
        hi = np.where(grow_hi, hi + width, hi)
    res = elementwise.find_root(f, (lo, hi), args=(t, df, prob),
                                tolerances={"xatol": 1e-12, "xrtol": 1e-12})
    return np.where(res.success, res.x, np.nan)


def _dz_parts(diff, level, what):
    shape = diff.shape[:-1]
    n = diff.shape[-1]
    notes = empty_notes(shape)
    if n < 2:
        small = np.ones(shape, bool)
        add_note(notes, small, f"fewer than 2 pairs: {what} undefined")
        warn_rows(small, SmallSampleWarning, f"{what}: fewer than 2 pairs, result is NaN",
              stacklevel=4)
        nan = np.full(shape, np.nan)
        return nan, nan, nan, notes
    mean = diff.mean(axis=-1)
    sd = diff.std(axis=-1, ddof=1)
    const = constant_rows(diff)
    add_note(notes, const, f"all differences are equal (sd = 0): {what} undefined")
    warn_rows(const, ConstantInputWarning,
          f"{what}: all differences are equal (sd = 0), result is NaN", stacklevel=4)
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(const, np.nan, mean / sd)
    t = d * np.sqrt(n)
    df = n - 1
    alpha = 1.0 - level
    ok = np.isfinite(t)
    low = np.full(shape, np.nan)
    high = np.full(shape, np.nan)
    if ok.any():
        tt = t[ok]
        low[ok] = _nct_noncentrality(tt, df, 1.0 - alpha / 2) / np.sqrt(n)
        high[ok] = _nct_noncentrality(tt, df, alpha / 2) / np.sqrt(n)
    return d, low, high, notes


def cohens_dz(x, y, *, confidence_level=0.95):
    r"""Cohen's :math:`d_z` for paired data with the exact noncentral-t interval.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis.
    confidence_level : float

    Returns
    -------
    EffectSize
        ``estimate`` :math:`d_z = \bar d / s_d` (difference ``x - y``, :math:`s_d` with
        ddof = 1), ``ci_low``/``ci_high``.

    Notes
    -----
    :math:`d_z` standardizes by the standard deviation of the *differences* (the paired
    design's own scale; Cohen 1988, eq. 2.3.5), not by the pooled SD of the two systems
    (:math:`d_{av}`), so it is the quantity the paired t test and its power depend on:
    :math:`t = d_z\sqrt n`. For normal differences :math:`t \sim t_{n-1}(\delta\sqrt n)`,
    so the interval inverts the noncentral t in its noncentrality:
    :math:`[\lambda_L, \lambda_U]/\sqrt n` with
    :math:`F_{t_{n-1}(\lambda_L)}(t) = 1-\alpha/2`, :math:`F_{t_{n-1}(\lambda_U)}(t) = \alpha/2`
    (Steiger & Fouladi 1997) - exact coverage under normality. Root finding is vectorized
    (Chandrupatla, :func:`scipy.optimize.elementwise.find_root`).

    References
    ----------
    Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences (2nd ed.).
    doi:10.4324/9780203771587
    Steiger, J. H., & Fouladi, R. T. (1997). Noncentrality interval estimation and the
    evaluation of statistical models. In What If There Were No Significance Tests?
    doi:10.4324/9781315827353

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> d = np.array([0.3, -0.1, 0.5, 0.2, 0.4, 0.0, 0.6, 0.1, -0.2, 0.3])
    >>> res = cohens_dz(d, np.zeros(10))
    >>> t = res.estimate * np.sqrt(10)  # d_z * sqrt(n) is the paired t statistic
    >>> bool(np.isclose(stats.nct.cdf(t, 9, res.ci_low * np.sqrt(10)), 0.975))
    True
    """
    diff, level = _prepare(x, y, confidence_level)
    d, low, high, notes = _dz_parts(diff, level, "Cohen's d")
    return EffectSize("cohens_d", scalar(d), scalar(low), scalar(high), level,
                      scalar(np.full(diff.shape[:-1], diff.shape[-1])), scalar(notes))


def hedges_g(x, y, *, confidence_level=0.95):
    r"""Hedges' :math:`g = J(n-1)\, d_z` with the exact gamma-function correction.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis.
    confidence_level : float

    Returns
    -------
    EffectSize

    Notes
    -----
    :math:`J(df) = \Gamma(df/2)/(\sqrt{df/2}\,\Gamma((df-1)/2))`, :math:`df = n - 1`
    (:func:`hedges_correction`; the manual's eq. 15 approximates it by
    :math:`1 - 3/(4df-1)`). :math:`g` is a (mean-)unbiased estimate of the same
    :math:`\delta = \mu_d/\sigma_d` as :math:`d_z`, so the interval is the exact
    noncentral-t interval for :math:`\delta` of :func:`cohens_dz` (it is *not* multiplied
    by :math:`J`, as some packages do, which would make it miss :math:`\delta` slightly
    more often than nominal). NaN for :math:`n < 3`.

    References
    ----------
    Hedges, L. V. (1981). Distribution theory for Glass's estimator of effect size and
    related estimators. J. Educ. Stat. 6(2), 107-128. doi:10.3102/10769986006002107
    """
    diff, level = _prepare(x, y, confidence_level)
    n = diff.shape[-1]
    d, low, high, notes = _dz_parts(diff, level, "Hedges' g")
    g = hedges_correction(n - 1) * d
    if n == 2:
        add_note(notes, np.ones(diff.shape[:-1], bool), "n = 2: Hedges' correction undefined")
    return EffectSize("hedges_g", scalar(g), scalar(low), scalar(high), level,
                      scalar(np.full(diff.shape[:-1], n)), scalar(notes))


# ----------------------------------------------------------------------------- Wilcoxon r
def wilcoxon_r(x, y, *, confidence_level=0.95, info=None):
    r"""Wilcoxon :math:`r = Z/\sqrt n` with the tie-corrected Z of the signed-rank test.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis.
    confidence_level : float
    info : SignedRankInfo, optional
        :func:`multistat.significance.rank.signed_rank_info` of ``x - y`` when the
        caller already sorted these differences (for the Wilcoxon test, say).

    Returns
    -------
    EffectSize
        ``estimate`` r (positive when x tends to exceed y), ``ci_low``/``ci_high``,
        ``n`` = number of non-zero differences.

    Notes
    -----
    NLPStatTest manual eq. 17 (zero differences dropped, no continuity correction):

    .. math:: r = \frac{Z}{\sqrt n},\quad
              Z = \frac{W^+ - n(n+1)/4}{\sqrt{n(n+1)(2n+1)/24 - \sum_t (t^3 - t)/48}}.

    :math:`r` is affine in :math:`W^+`, and :math:`\hat p = W^+/(n(n+1)/2)` is (up to the
    :math:`i = j` terms) the U-statistic estimating :math:`P(d_i + d_j > 0)`. The
    interval is a delta-method interval for :math:`p = E[W^+]/(n(n+1)/2)` on the logit
    scale, :math:`\mathrm{logit}\,\hat p \pm z_{1-\alpha/2}\,
    \widehat{\mathrm{se}}(W^+)/(n(n+1)/2\;\hat p(1-\hat p))`, with
    :math:`\mathrm{Var}(W^+)` estimated from the Hajek projection of :math:`W^+`
    (Hoeffding 1948; :func:`multistat.significance._signrank.walsh_projection_variance`),
    mapped back to r by the same
    affine function: it targets :math:`(E W^+ - n(n+1)/4)/(\sigma_n\sqrt n)` and stays
    in the attainable range of r. The logit scale matters: the plain Wald interval
    covered 92 % at n = 30 (the projection variance is ~5 % low there). Coverage
    (4000 normal replications, 95 %): 95.5 % (n = 30, r = 0), 95.4 % (n = 30, r = 0.28),
    95.1 % (n = 40, r = 0.45), 95.2 % (n = 100, r = 0.64), 92.0 % (n = 30, r = 0.73),
    about 77 % (n = 30, r = 0.84: many samples have all differences positive). Near the
    boundary use a BCa interval from the resampling engine instead.

    References
    ----------
    Rosenthal, R. (1991). Meta-analytic procedures for social research. Sage.
    doi:10.4135/9781412984997
    Hoeffding, W. (1948). A class of statistics with asymptotically normal distribution.
    Ann. Math. Statist. 19(3), 293-325. doi:10.1214/aoms/1177730196
    """
    diff, level = _prepare(x, y, confidence_level)
    return _wilcoxon_r_of(diff, level, info)


def _wilcoxon_r_of(diff, level, info=None, stacklevel=4):
    """:func:`wilcoxon_r` of checked differences ``diff`` (no copy of them)."""
    shape = diff.shape[:-1]
    notes = empty_notes(shape)
    if info is None:
        info = signed_rank_info(diff)  # one sort of |d| for the ranks and the projection
    else:
        info.check(diff, "wilcoxon_r")
    parts = signed_rank_parts(diff, "wilcox", info)
    m = parts["count"]
    bad = (m < 2) | (parts["sd"] == 0)
    add_note(notes, bad, "fewer than 2 non-zero differences: Wilcoxon r undefined")
    warn_rows(bad, ConstantInputWarning if diff.shape[-1] >= 2 else SmallSampleWarning,
          "Wilcoxon r: fewer than 2 non-zero differences, result is NaN",
          stacklevel=stacklevel)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = parts["sd"] * np.sqrt(m)
        r = (parts["w_plus"] - parts["mean"]) / scale
        var_w, _ = _walsh_projection_variance(diff, info)
        # interval for p = E[W+]/C on the logit scale (delta method), C = m(m+1)/2
        total = m * (m + 1) / 2.0
        p_hat = parts["w_plus"] / total
        edge = (p_hat <= 0) | (p_hat >= 1)
        p_clip = np.clip(p_hat, 0.5 / total, 1 - 0.5 / total)
        se_logit = np.sqrt(var_w) / total / (p_clip * (1 - p_clip))
        q = stats.norm.isf((1 - level) / 2)
        logit = np.log(p_clip / (1 - p_clip))
        p_low = np.minimum(special.expit(logit - q * se_logit), p_hat)
        p_high = np.maximum(special.expit(logit + q * se_logit), p_hat)
        low = (p_low * total - parts["mean"]) / scale
        high = (p_high * total - parts["mean"]) / scale
    add_note(notes, edge & ~bad, "all non-zero differences have the same sign: the "
                                  "Wilcoxon r interval is unreliable at the boundary")
    r, low, high = (np.where(bad, np.nan, v) for v in (r, low, high))
    return EffectSize("wilcoxon_r", scalar(r), scalar(low), scalar(high), level,
                      scalar(m.astype(np.int64)), scalar(notes))


# ----------------------------------------------------------------------------- HL
def hodges_lehmann(x, y, *, confidence_level=0.95, info=None):
    r"""Hodges-Lehmann estimate (median of Walsh averages, :math:`i \le j`) with the
    distribution-free interval; the same code as the Wilcoxon test's estimate.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis.
    confidence_level : float
    info : SignedRankInfo, optional
        :func:`multistat.significance.rank.signed_rank_info` of ``x - y`` when the
        caller already sorted these differences (for the Wilcoxon test, say).

    Returns
    -------
    EffectSize
        In metric units of ``x - y``.

    Notes
    -----
    See :func:`multistat.significance.rank.hodges_lehmann`: Walsh averages include
    :math:`i = j` (the inversion of the signed-rank test; the manual's eq. 18 excludes
    them), interval :math:`[W_{(k)}, W_{(M+1-k)}]` with the exact signed-rank critical
    value for :math:`n \le 50` without ties or zero differences and its normal
    approximation otherwise (the rule of ``wilcoxon(method="auto")``).

    References
    ----------
    Hodges, J. L., & Lehmann, E. L. (1963). Ann. Math. Statist. 34(2), 598-611.
    doi:10.1214/aoms/1177704172
    """
    diff, level = _prepare(x, y, confidence_level)
    return _hodges_lehmann_of(diff, level, info)


def _hodges_lehmann_of(diff, level, info=None):
    """:func:`hodges_lehmann` of checked differences ``diff`` (no copy of them)."""
    n = diff.shape[-1]
    if info is not None:
        info.check(diff, "hodges_lehmann")
    est, low, high, unbounded = hl_and_interval(diff, level, "two-sided",
                                                 walsh_exact_rows(diff, "auto", info), info)
    notes = empty_notes(diff.shape[:-1])
    add_note(notes, unbounded, f"n = {n} is too small for a Walsh-average interval at level "
                                f"{level}: interval is unbounded")
    return EffectSize("hodges_lehmann", scalar(est), scalar(low), scalar(high), level,
                      scalar(np.full(diff.shape[:-1], n)), scalar(notes))


def effect_sizes(x, y, *, confidence_level=0.95, info=None) -> dict[str, np.ndarray]:
    """All effect sizes as the compare table's columns (:data:`EFFECT_COLUMNS`).

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis; leading axes are batch axes.
    confidence_level : float, optional
        float
    info : optional
        SignedRankInfo, optional
        :func:`multistat.significance.rank.signed_rank_info` of ``x - y`` (e.g. shared with
        the Wilcoxon test); computed here otherwise, once for Wilcoxon r and HL.

    Returns
    -------
    dict
        ``cohens_d, cohens_d_ci_low, cohens_d_ci_high, hedges_g, ..., hodges_lehmann_ci_high``
        (12 arrays over the leading shape; ``cohens_d`` is :math:`d_z`).
    """
    level = check_probability("confidence_level", confidence_level)
    diff, level = _prepare(x, y, level)
    n = diff.shape[-1]
    d, low, high, _ = _dz_parts(diff, level, "Cohen's d / Hedges' g")
    out = {"cohens_d": scalar(d), "cohens_d_ci_low": scalar(low),
           "cohens_d_ci_high": scalar(high),
           "hedges_g": scalar(hedges_correction(n - 1) * d), "hedges_g_ci_low": scalar(low),
           "hedges_g_ci_high": scalar(high)}
    if info is None:
        info = signed_rank_info(diff)
    for res in (_wilcoxon_r_of(diff, level, info), _hodges_lehmann_of(diff, level, info)):
        out[res.name] = res.estimate
        out[f"{res.name}_ci_low"] = res.ci_low
        out[f"{res.name}_ci_high"] = res.ci_high
    return {key: out[key] for key in EFFECT_COLUMNS}


# ----------------------------------------------------------------------------- batch
def _dz_from_moments(mean, sd, const, n, level):
    """d_z and its noncentral-t interval from each pair's mean and sd of differences."""
    shape = np.shape(mean)
    if n < 2:
        nan = np.full(shape, np.nan)
        return nan, nan, nan
    with np.errstate(divide="ignore", invalid="ignore"):
        d = np.where(const, np.nan, mean / sd)
    t = d * np.sqrt(n)
    alpha = 1.0 - level
    ok = np.isfinite(t)
    low = np.full(shape, np.nan)
    high = np.full(shape, np.nan)
    if ok.any():
        low[ok] = _nct_noncentrality(t[ok], n - 1, 1.0 - alpha / 2) / np.sqrt(n)
        high[ok] = _nct_noncentrality(t[ok], n - 1, alpha / 2) / np.sqrt(n)
    return d, low, high


def effect_sizes_batch(slab, ia, ib, *, confidence_level=0.95, moments=None
                       ) -> dict[str, np.ndarray]:
    """:func:`effect_sizes` for pairs ``(ia, ib)`` of a study slab
    (:class:`multistat.significance.Slab`), arrays ``(p, M)``.

    Cohen's d_z and Hedges' g come from per-system means and the Gram matrix
    (:func:`multistat.significance.parametric.pair_mean_sd`, ``moments=(mean, sd)`` if
    already computed) - no pair is materialised for them; Wilcoxon r and Hodges-Lehmann
    use the slab's differences and their sort (shared with the Wilcoxon test).
    """

    level = check_probability("confidence_level", confidence_level)
    n = slab.n
    mean, sd = pair_mean_sd(slab, ia, ib) if moments is None else moments
    const = (pair_constant(slab, ia, ib, mean, sd) if n >= 2
             else np.ones(np.shape(mean), bool))
    d, low, high = _dz_from_moments(mean, sd, const, n, level)
    out = {"cohens_d": d, "cohens_d_ci_low": low, "cohens_d_ci_high": high,
           "hedges_g": hedges_correction(n - 1) * d, "hedges_g_ci_low": low,
           "hedges_g_ci_high": high}
    # the slab's differences are finite and checked for overflow (compare's slab): the
    # rank effect sizes take them as they are, with no zeros array and no x - 0 copy
    diff = slab.diff(ia, ib)
    info = slab.rank_info(ia, ib)
    for res in (_wilcoxon_r_of(diff, level, info), _hodges_lehmann_of(diff, level, info)):
        out[res.name] = res.estimate
        out[f"{res.name}_ci_low"] = res.ci_low
        out[f"{res.name}_ci_high"] = res.ci_high
    return {key: np.asarray(out[key], dtype=float) for key in EFFECT_COLUMNS}


def cohens_dz_se(d, n):
    r"""Large-sample standard error of Cohen's :math:`d_z` (paired, standardised by the
    sd of the differences): :math:`\sqrt{1/n + d_z^2/(2n)}`.

    The variance of a one-sample standardised mean (Hedges & Olkin 1985, ch. 5; the
    change-score standardised mean of Borenstein et al. 2009, eq. 4.28 with the
    correlation term absorbed by standardising by the differences, metafor's
    ``escalc(measure="SMCC")``). Hedges' g's is :math:`J(n-1)` times it
    (:func:`hedges_correction`; Borenstein et al. eq. 4.24: :math:`V_g = J^2 V_d`). Used
    for the ``cohens_d_se``/``hedges_g_se`` columns of compare's table, which
    :func:`multistat.meta_analysis` pools with ``effect="cohens_d"``. NaN where d is NaN
    or n < 2.

    References
    ----------
    L. V. Hedges, I. Olkin (1985). Statistical Methods for Meta-Analysis. Academic Press.
    M. Borenstein, L. V. Hedges, J. P. T. Higgins, H. R. Rothstein (2009). Introduction
    to Meta-Analysis. Wiley. doi:10.1002/9780470743386

    Examples
    --------
    >>> from multistat.effect import cohens_dz_se
    >>> float(round(cohens_dz_se(0.5, 50), 4))  # sqrt(1/50 + 0.25/100)
    0.15
    """
    d = np.asarray(d, dtype=float)
    if n < 2:
        return np.full(d.shape, np.nan)[()]
    return np.sqrt(1.0 / n + d * d / (2.0 * n))[()]
