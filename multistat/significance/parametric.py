"""Parametric paired tests: the paired Student t test (closed form).

Also holds the small private helpers shared by the closed-form test modules
(:mod:`~multistat.significance.rank`, :mod:`~multistat.significance.binary`):
input checking, NaN/note bookkeeping and warnings.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import stats

from multistat._validation import check_alternative, check_probability, check_real
from multistat.errors import (
    ConstantInputWarning,
    DataValidationError,
    SmallSampleWarning,
)
from multistat.significance._base import TestResult, TestSpec, as_pairs, register

__all__ = ["paired_t"]


# ----------------------------------------------------------------------------- helpers
def _check_common(x, y, alternative, null_value, confidence_level):
    """Validate the shared keywords and the paired input; return cleaned values.

    Returns ``x, y, alternative, null_value, confidence_level`` with ``x``, ``y`` float64
    arrays of the same shape (instances on the last axis).
    """
    alternative = check_alternative(alternative)
    null_value = check_real("null_value", null_value)
    confidence_level = check_probability("confidence_level", confidence_level)
    x, y = as_pairs(x, y)
    bad = ~(np.isfinite(x) & np.isfinite(y))
    if bad.any():
        raise DataValidationError(
            f"paired samples contain NaN or infinite values in {int(bad.sum())} pair(s); "
            "drop incomplete pairs before testing (multistat.io drops them and reports how "
            "many)"
        )
    return x, y, alternative, null_value, confidence_level


def _scalar(a):
    """0-d arrays become numpy scalars (``a[()]``); other arrays pass through."""
    a = np.asarray(a)
    return a[()] if a.ndim == 0 else a


def _notes(shape) -> np.ndarray:
    return np.full(shape, "", dtype=object)


def _add_note(notes: np.ndarray, mask, text: str) -> None:
    """Append ``text`` to the notes of the rows selected by ``mask`` (in place)."""
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), notes.shape)
    for idx in zip(*np.nonzero(mask)) if notes.ndim else ([()] if mask else []):
        notes[idx] = text if not notes[idx] else f"{notes[idx]}; {text}"


def _warn(mask, category, text: str, *, stacklevel: int = 3) -> None:
    """One warning per call saying how many rows ``text`` applies to."""
    count = int(np.count_nonzero(mask))
    if count:
        total = int(np.size(mask))
        where = "" if total == 1 else f" ({count} of {total} rows)"
        warnings.warn(f"{text}{where}", category, stacklevel=stacklevel)


def _interval_quantile(confidence_level: float, alternative: str) -> float:
    """Upper tail probability used by each end of the interval: (1-cl)/2 or 1-cl."""
    return (1.0 - confidence_level) / 2.0 if alternative == "two-sided" else 1.0 - confidence_level


def _one_sided_ends(low, high, alternative):
    """Open the unused end of a one-sided interval (scipy convention: +-inf)."""
    low = np.asarray(low, dtype=float)
    high = np.asarray(high, dtype=float)
    if alternative == "greater":
        high = np.where(np.isnan(low), np.nan, np.inf)
    elif alternative == "less":
        low = np.where(np.isnan(high), np.nan, -np.inf)
    return low, high


def _constant_rows(d: np.ndarray) -> np.ndarray:
    """Rows whose differences are all equal (up to rounding of the subtraction)."""
    scale = np.max(np.abs(d), axis=-1)
    return np.ptp(d, axis=-1) <= 8 * np.finfo(np.float64).eps * scale


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
    x, y, alternative, null_value, confidence_level = _check_common(
        x, y, alternative, null_value, confidence_level)
    diff = x - y
    n = diff.shape[-1]
    shape = diff.shape[:-1]
    notes = _notes(shape)
    mean = diff.mean(axis=-1)
    if n < 2:
        small = np.ones(shape, dtype=bool)
        const = np.zeros(shape, dtype=bool)
        sd = np.full(shape, np.nan)
    else:
        small = np.zeros(shape, dtype=bool)
        sd = diff.std(axis=-1, ddof=1)
        const = _constant_rows(diff)
    bad = small | const
    _add_note(notes, small, "fewer than 2 pairs: t test undefined")
    _add_note(notes, const & ~small,
              "all differences are equal (sd = 0): t statistic undefined")
    _warn(small, SmallSampleWarning, "paired t test: fewer than 2 pairs, result is NaN")
    _warn(const & ~small, ConstantInputWarning,
          "paired t test: all differences are equal (sd = 0), result is NaN")

    df = n - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.where(bad, np.nan, sd / np.sqrt(n))
        t = (mean - null_value) / se
    if alternative == "greater":
        p = stats.t.sf(t, df) if df > 0 else np.full(shape, np.nan)
    elif alternative == "less":
        p = stats.t.cdf(t, df) if df > 0 else np.full(shape, np.nan)
    else:
        p = 2.0 * stats.t.sf(np.abs(t), df) if df > 0 else np.full(shape, np.nan)
        p = np.minimum(p, 1.0)

    def interval(level):
        if df < 1:
            return _one_sided_ends(np.full(shape, np.nan), np.full(shape, np.nan), alternative)
        q = stats.t.isf(_interval_quantile(level, alternative), df)
        low, high = mean - q * se, mean + q * se
        low, high = _one_sided_ends(low, high, alternative)
        return _scalar(low), _scalar(high)

    low, high = interval(confidence_level)

    def ci_fn(level):
        return interval(check_probability("confidence_level", level))

    return TestResult(
        test="t", statistic=_scalar(t), p_value=_scalar(p), estimate=_scalar(mean),
        ci_low=low, ci_high=high, confidence_level=confidence_level,
        n=_scalar(np.full(shape, n, dtype=np.int64)), alternative=alternative,
        null_value=null_value, statistic_kind="mean", note=_scalar(notes),
        extra={"df": _scalar(np.full(shape, df, dtype=np.int64))}, _ci_fn=ci_fn,
    )


register(TestSpec(
    name="t", func=paired_t, family="parametric", statistic_kinds=("mean",),
    assumes_symmetric=True, assumes_normal=True,
    description="paired Student t test on the mean difference (closed form, t interval)",
))
