"""Parametric paired tests: the paired Student t test (closed form).

The helpers it shares with the other closed-form test modules (input checks, NaN/note
bookkeeping, warnings) live in :mod:`multistat.significance._common`.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import stdtr, stdtrit

from multistat._lazy import lazy_module
from multistat._validation import check_probability
from multistat.errors import ConstantInputWarning, ParameterTypeError, SmallSampleWarning
from multistat.significance._base import TestResult, TestSpec, register
from multistat.significance._batch import BatchResult, call_kwargs, from_test_result
from multistat.significance._common import (
    CONSTANT_RTOL,
    add_note,
    check_paired,
    empty_notes,
    interval_quantile,
    one_sided_ends,
    row_scale,
    scalar,
    warn_rows,
)

stats = lazy_module("scipy.stats")  # imported on first use (t path: never)

__all__ = ["paired_t"]


# ----------------------------------------------------------------------------- t test
def paired_t(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95):
    r"""Paired Student t test on the mean difference ``mean(x - y)``.

    Parameters
    ----------
    x, y : array_like
        Paired scores, instances on the last axis; leading axes are batch axes.
    alternative : {"two-sided", "less", "greater"}
        H1 about :math:`\mu_{x-y}` relative to ``null_value``.
    null_value : float
        The null mean difference :math:`\delta` (a margin); the test uses
        :math:`d_i = x_i - y_i - \delta`.
    confidence_level : float
        Level of the t interval for the mean difference (one-sided for a one-sided
        alternative, the other end is :math:`\pm\infty`, as in scipy).

    Returns
    -------
    TestResult
        ``statistic`` t, ``p_value``, ``estimate`` = mean(x - y), ``ci_low``/``ci_high``,
        ``n`` (pairs), ``extra={"df": n - 1}``.

    Notes
    -----
    .. math:: t = \frac{\bar d - \delta}{s_d/\sqrt n}, \qquad df = n - 1,

    with :math:`s_d` the sample standard deviation (ddof = 1) of the differences
    (NLPStatTest manual, eq. 8). The interval is
    :math:`\bar d \pm t_{df, 1-\alpha/2}\, s_d/\sqrt n`. Rows with fewer than two pairs or
    with all differences equal (:math:`s_d = 0`) give NaN statistic, p-value and interval
    with a ``note`` and a :class:`~multistat.errors.SmallSampleWarning` /
    :class:`~multistat.errors.ConstantInputWarning`.

    References
    ----------
    Student (1908). The probable error of a mean. Biometrika 6(1), 1-25.
    doi:10.1093/biomet/6.1.1

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.array([0.61, 0.72, 0.55, 0.80, 0.67]); y = np.array([0.58, 0.70, 0.57, 0.71, 0.60])
    >>> res = paired_t(x, y)
    >>> bool(np.isclose(res.p_value, stats.ttest_rel(x, y).pvalue, rtol=1e-12))
    True
    """
    x, y, alternative, null_value, confidence_level = check_paired(
        x, y, alternative, null_value, confidence_level, overflow="allow")
    # scale-free: everything is computed on the scores divided by the
    # power of two s at or just below max(|x|, |y|) per row, so 1e-300 or 1e300 times the data
    # give the same t and p, and a - b cannot overflow; estimate and interval are
    # multiplied back by s. A power of two divides exactly: x / s - y / s is (x - y) / s
    # wherever x - y is exact, so scores moved by a constant give the same differences
    # (max(|x|, |y|) itself rounded every score and moved the estimate)
    top = row_scale(x, y)
    scale = np.ldexp(1.0, np.frexp(top)[1] - 1)  # top / scale in [1, 2): no overflow
    sc = scale[..., None]
    diff_s = x / sc - y / sc
    n = diff_s.shape[-1]
    shape = diff_s.shape[:-1]
    notes = empty_notes(shape)
    with np.errstate(over="ignore", invalid="ignore"):
        overflow = np.any(np.isinf(x - y) & np.isfinite(x) & np.isfinite(y), axis=-1)
    mean_s = diff_s.mean(axis=-1)
    if n < 2:
        small = np.ones(shape, dtype=bool)
        const = np.zeros(shape, dtype=bool)
        sd_s = np.full(shape, np.nan)
    else:
        small = np.zeros(shape, dtype=bool)
        sd_s = diff_s.std(axis=-1, ddof=1)
        const = sd_s <= CONSTANT_RTOL * (top / scale)  # relative to max |score|
    bad = small | const
    add_note(notes, small, "fewer than 2 pairs: t test undefined")
    add_note(notes, const & ~small,
              "all differences are equal (sd = 0 up to the rounding of the scores: sd "
              "<= 2^-50 x max |score|): t statistic undefined")
    add_note(notes, overflow, "overflow: a - b exceeds the float range; the test uses "
              "rescaled scores, the estimate and interval overflow to +-inf")
    warn_rows(small, SmallSampleWarning, "paired t test: fewer than 2 pairs, result is NaN")
    warn_rows(const & ~small, ConstantInputWarning,
          "paired t test: all differences are equal (sd <= 2^-50 x max |score|), result "
          "is NaN")

    df = n - 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        se_s = np.where(bad, np.nan, sd_s / np.sqrt(n))
        t = (mean_s - null_value / scale) / se_s
        mean = mean_s * scale
    if alternative == "greater":
        p = stats.t.sf(t, df) if df > 0 else np.full(shape, np.nan)
    elif alternative == "less":
        p = stats.t.cdf(t, df) if df > 0 else np.full(shape, np.nan)
    else:
        p = 2.0 * stats.t.sf(np.abs(t), df) if df > 0 else np.full(shape, np.nan)
        p = np.minimum(p, 1.0)

    def interval(level):
        if df < 1:
            return one_sided_ends(np.full(shape, np.nan), np.full(shape, np.nan), alternative)
        q = stats.t.isf(interval_quantile(level, alternative), df)
        with np.errstate(over="ignore", invalid="ignore"):
            low, high = (mean_s - q * se_s) * scale, (mean_s + q * se_s) * scale
        low, high = one_sided_ends(low, high, alternative)
        return scalar(low), scalar(high)

    low, high = interval(confidence_level)

    def ci_fn(level):
        return interval(check_probability("confidence_level", level))

    return TestResult(
        test="t", statistic=scalar(t), p_value=scalar(p), estimate=scalar(mean),
        ci_low=low, ci_high=high, confidence_level=confidence_level,
        n=scalar(np.full(shape, n, dtype=np.int64)), alternative=alternative,
        null_value=null_value, statistic_kind="mean", note=scalar(notes),
        extra={"df": scalar(np.full(shape, df, dtype=np.int64))}, _ci_fn=ci_fn,
    )




# ----------------------------------------------------------------------------- pair-free
#: a pair's moments come from the Gram matrix unless cancellation could cost more than
#: about 1e-11 relative: when sum((a-b)^2) is this many times smaller than the sum of the
#: magnitudes it is formed from, or the mean difference this many times smaller than the
#: means, the pair is recomputed from its differences (as the per-pair formula does)
GRAM_KAPPA_MAX = 1e3
MEAN_KAPPA_MAX = 1e5
#: pairs whose largest |score| is below this (2^-969, about 4.5e-292: the ulp of a mean
#: difference would be subnormal) are recomputed by the per-pair function
SUBNORMAL_SCALE = 2.0 ** -969


def pair_mean_sd(slab, ia, ib):
    r"""Mean and sd (ddof = 1) of the differences ``X[a] - X[b]`` for pairs ``(ia, ib)``,
    from per-system quantities: ``(mean, sd)``, each ``(p, M)``.

    .. math:: \bar d = \bar x_a - \bar x_b,\quad
              (n-1) s_d^2 = G_{aa} + G_{bb} - 2 G_{ab}

    with :math:`G` the Gram matrix of the centred scores (:meth:`Slab.gram_scaled`: one
    BLAS product per metric for all pairs, on scores divided by per-system powers of two,
    so no scale overflows or underflows). Ill-conditioned pairs - the sum of squares of the
    differences more than :data:`GRAM_KAPPA_MAX` times smaller than
    :math:`G_{aa} + G_{bb} + 2|G_{ab}|` (highly correlated or constant differences), or
    the mean difference :data:`MEAN_KAPPA_MAX` times smaller than the means - are
    recomputed from their differences, so every value equals the per-pair formula
    (``d.mean()``, ``d.std(ddof=1)``) to about 1e-11 relative. Rows with ``n < 2`` have
    NaN sd. Computed once per slab of pairs (:meth:`Slab.for_pairs`; callers do not
    modify the arrays).
    """
    return slab.for_pairs("mean_sd", ia, ib, lambda: _pair_mean_sd(slab, ia, ib))


def _pair_mean_sd(slab, ia, ib):
    ia = np.asarray(ia, dtype=np.intp)
    ib = np.asarray(ib, dtype=np.intp)
    n = slab.n
    mu = slab.centred_means()  # mean(x - k): shift-free
    mean = mu[ia] - mu[ib]
    if n < 2:
        return mean, np.full(mean.shape, np.nan)
    # scale-free: the Gram matrix of the scores divided by per-system powers of two;
    # each pair is taken to the larger of its two scales, so every quantity below is the
    # unscaled one divided by a power of two, bit for bit, at any magnitude
    Gs, c = slab.gram_scaled()
    ca, cb = c[ia], c[ib]
    cp = np.maximum(ca, cb)
    ra, rb = ca / cp, cb / cp
    gaa = Gs[:, ia, ia].T * (ra * ra)
    gbb = Gs[:, ib, ib].T * (rb * rb)
    gab = Gs[:, ia, ib].T * (ra * rb)
    ss = gaa + gbb - 2.0 * gab
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ill = ~(ss * GRAM_KAPPA_MAX > gaa + gbb + 2.0 * np.abs(gab))
        ill |= ~(np.abs(mean) * MEAN_KAPPA_MAX > np.abs(mu[ia]) + np.abs(mu[ib]))
        sd = np.sqrt(np.maximum(ss, 0.0) / (n - 1)) * cp
    rows = np.flatnonzero(ill.any(axis=1))
    if rows.size:  # differences of the scaled scores: (a - b) / c_pair exactly
        inv = (1.0 / cp[rows])[..., None]
        d = slab.system_scores(ia[rows]) * inv - slab.system_scores(ib[rows]) * inv
        # C order: the same sums whether the slab's scores were gathered or not
        d = np.ascontiguousarray(d)
        with np.errstate(over="ignore", invalid="ignore"):
            mean[rows] = np.where(ill[rows], d.mean(-1) * cp[rows], mean[rows])
            sd[rows] = np.where(ill[rows], d.std(-1, ddof=1) * cp[rows], sd[rows])
    return mean, sd


def pair_constant(slab, ia, ib, mean, sd):
    """Rows whose differences are constant: ``sd <= CONSTANT_RTOL * max |score|`` of the
    pair (zero variance relative to the scale of the data)."""
    return ~(sd > CONSTANT_RTOL * pair_scale(slab, ia, ib))


def pair_scale(slab, ia, ib):
    """max |score| of the two systems of each pair, ``(p, M)``."""
    m = slab.absmax()  # (S, M), computed once per slab
    return np.maximum(m[np.asarray(ia)], m[np.asarray(ib)])


def _t_cdf(x, df):
    """Student t cdf at ``x`` (array): ``scipy.special.stdtr``, the function
    ``stats.t.cdf`` and ``stats.t.sf(-x)`` evaluate, bit for bit (also at NaN and
    +-inf), without the distribution's argument handling."""
    return stdtr(df, np.asarray(x, dtype=float))


def paired_t_batch(slab, ia, ib, ctx):
    """Batch entry of ``"t"``: the paired t test for pairs ``(ia, ib)`` from per-system
    means and the Gram matrix (:func:`pair_mean_sd`); pairs with fewer than 2 instances
    or constant differences go through :func:`paired_t` for its notes."""
    shape = (len(ia), slab.shape[1])
    n = slab.n
    alternative, null_value, level = (ctx.alternative, ctx.null_value,
                                      ctx.confidence_level)
    if ctx.options:
        raise ParameterTypeError(f"the t test takes no options; got {sorted(ctx.options)}")
    mean, sd = pair_mean_sd(slab, ia, ib)
    bad = pair_constant(slab, ia, ib, mean, sd) if n >= 2 else np.ones(shape, bool)
    # the Gram matrix is scale-free (Slab.gram_scaled); only subnormal scores (where the
    # mean difference itself loses precision) and non-finite moments go through the
    # per-pair function, which rescales each pair
    ps = pair_scale(slab, ia, ib)
    bad |= ((ps < SUBNORMAL_SCALE) & (ps > 0)) | ~np.isfinite(sd) | ~np.isfinite(mean)
    df = n - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(bad, np.nan, sd / np.sqrt(n))
        t = (mean - null_value) / se
    if df < 1:
        p = np.full(shape, np.nan)
    elif alternative == "greater":
        p = _t_cdf(-t, df)
    elif alternative == "less":
        p = _t_cdf(t, df)
    else:
        p = np.minimum(2.0 * _t_cdf(-np.abs(t), df), 1.0)
    if df >= 1:  # -stdtrit is what stats.t.isf evaluates (same bits, no rv overhead)
        q = -stdtrit(df, interval_quantile(level, alternative))
        low, high = one_sided_ends(mean - q * se, mean + q * se, alternative)
    else:
        low, high = one_sided_ends(np.full(shape, np.nan), np.full(shape, np.nan),
                                    alternative)
    out = {"statistic": t, "p_value": p, "estimate": mean, "ci_low": low, "ci_high": high,
           "se": se,  # sd / sqrt(n): the interval's half-width / t-quantile (table `se`)
           "n": np.full(shape, n, dtype=np.int64),
           # one string for every row (BatchResult broadcasts it; the table repeats it
           # without a Python string per row)
           "note": np.array("", dtype=object),
           "statistic_kind": np.array("mean", dtype=object)}
    rows = np.flatnonzero(bad.any(axis=1))
    if rows.size:  # the per-pair function's notes (and NaNs) for degenerate pairs
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = paired_t(slab.system_scores(ia[rows]), slab.system_scores(ib[rows]),
                           **call_kwargs(paired_t, ctx))
        sub = from_test_result(res, (rows.size, shape[1]), "mean", caught)
        # the standard error of those pairs, scale-free as paired_t computes it (subnormal
        # scores: sd / sqrt(n) of the unscaled differences underflows); NaN where the
        # per-pair test is undefined
        sub["se"] = np.where(np.isfinite(sub["p_value"]), _scaled_se(
            slab.system_scores(ia[rows]), slab.system_scores(ib[rows])), np.nan)
        for k, v in sub.items():
            out[k] = np.array(np.broadcast_to(out[k], shape),
                              dtype=v.dtype if k != "n" else np.int64)
            out[k][rows] = v
    return BatchResult("t", out)


def _scaled_se(x, y):
    """``sd(x - y) / sqrt(n)`` over the last axis, computed on the scores divided by a
    power of two near their largest magnitude (exact), then multiplied back."""
    top = row_scale(x, y)
    scale = np.ldexp(1.0, np.frexp(np.where(top > 0, top, 1.0))[1] - 1)
    sc = scale[..., None]
    d = x / sc - y / sc
    if d.shape[-1] < 2:
        return np.full(d.shape[:-1], np.nan)
    with np.errstate(over="ignore", invalid="ignore"):
        return d.std(axis=-1, ddof=1) / np.sqrt(d.shape[-1]) * scale


register(TestSpec(
    name="t", func=paired_t, family="parametric", statistic_kinds=("mean",),
    assumes_symmetric=True, assumes_normal=True,
    description="paired Student t test on the mean difference (closed form, t interval)",
    batch=paired_t_batch, bytes_per_value=16, equivalence=True,
    reasons={
        "normal": "differences look symmetric and normal: the t test is exact and most "
                  "powerful",
        "symmetric": "normality rejected (t is OK for large samples by the CLT)",
        "skewed": "skewed differences: the mean is not a good centre and t assumes "
                  "normality"},
))
