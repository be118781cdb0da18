"""Tests for binary (0/1, e.g. per-instance correctness) metrics: McNemar's test."""

from __future__ import annotations

import numpy as np

from multistat._lazy import lazy_module
from multistat._validation import check_choice, check_probability
from multistat.errors import ParameterError, ParameterTypeError, TestNotApplicableError
from multistat.significance._base import TestResult, TestSpec, register
from multistat.significance._batch import BatchResult
from multistat.significance._binomial import binom_half_pvalue
from multistat.significance._common import (
    add_note,
    check_paired,
    empty_notes,
    interval_quantile,
    one_sided_ends,
    scalar,
)
from multistat.significance._inversion import mcnemar_interval

stats = lazy_module("scipy.stats")  # imported on first use (t path: never)

__all__ = ["mcnemar", "paired_proportion_interval"]

_METHODS = ("exact", "midp", "asymptotic")


def _check_binary(name: str, a: np.ndarray) -> None:
    bad = (a != 0) & (a != 1)
    if bad.any():
        first = a[bad].flat[0]
        raise TestNotApplicableError(
            f"McNemar's test needs binary (0/1) scores; `{name}` has {int(bad.sum())} value(s) "
            f"outside {{0, 1}} (e.g. {float(first)!r}); use a test for continuous metrics "
            "('t', 'wilcoxon', 'sign', 'bootstrap', 'permutation')"
        )


def _wilson(successes, n, z):
    p = successes / n
    denom = 1.0 + z**2 / n
    centre = (p + z**2 / (2 * n)) / denom
    half = z / denom * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


def paired_proportion_interval(n11, n10, n01, n00, *, confidence_level=0.95,
                               alternative="two-sided"):
    r"""Newcombe's hybrid-score interval for the difference of paired proportions.

    Parameters
    ----------
    n11, n10, n01, n00 : array_like of int
        Cells of the paired 2x2 table: both correct, only x correct, only y correct,
        neither.
    confidence_level : float
    alternative : {"two-sided", "less", "greater"}
        One-sided alternatives put :math:`1-\text{level}` in one tail and open the other
        end (:math:`\pm\infty`).

    Returns
    -------
    low, high : ndarray
        Interval for :math:`p_x - p_y = (n_{10} - n_{01})/N`.

    Notes
    -----
    Newcombe (1998) method 10, square-and-add of the Wilson score intervals
    :math:`[l_1, u_1]`, :math:`[l_2, u_2]` of :math:`\hat p_1 = (n_{11}+n_{10})/N` and
    :math:`\hat p_2 = (n_{11}+n_{01})/N`:

    .. math::
        L = \hat\Delta - \sqrt{(\hat p_1 - l_1)^2 - 2\hat\phi(\hat p_1 - l_1)(u_2 - \hat p_2)
            + (u_2 - \hat p_2)^2},\quad
        U = \hat\Delta + \sqrt{(\hat p_2 - l_2)^2 - 2\hat\phi(\hat p_2 - l_2)(u_1 - \hat p_1)
            + (u_1 - \hat p_1)^2}

    with :math:`A = n_{11}n_{00} - n_{10}n_{01}` and :math:`\hat\phi = (A - N/2)/\sqrt{P}`
    if :math:`A > N/2`, 0 if :math:`0 \le A \le N/2`, :math:`A/\sqrt{P}` if :math:`A < 0`,
    :math:`P` the product of the four margins (0 when a margin is empty), as in Fagerland,
    Lydersen & Laake (2017), sec. 8.5. Coverage checked by simulation in
    ``tests/test_binary.py``.

    References
    ----------
    Newcombe, R. G. (1998). Improved confidence intervals for the difference between
    binomial proportions based on paired data. Statistics in Medicine 17, 2635-2650.
    doi:10.1002/(SICI)1097-0258(19981130)17:22<2635::AID-SIM954>3.0.CO;2-C
    """
    level = check_probability("confidence_level", confidence_level)
    n11, n10, n01, n00 = (np.asarray(v, dtype=float) for v in (n11, n10, n01, n00))
    n = n11 + n10 + n01 + n00
    z = stats.norm.isf(interval_quantile(level, alternative))
    p1 = (n11 + n10) / n
    p2 = (n11 + n01) / n
    l1, u1 = _wilson(n11 + n10, n, z)
    l2, u2 = _wilson(n11 + n01, n, z)
    prod = (n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00)
    a = n11 * n00 - n10 * n01
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(a > n / 2, (a - n / 2) / np.sqrt(prod), np.where(a < 0, a / np.sqrt(prod),
                                                                          0.0))
    phi = np.where(prod > 0, phi, 0.0)
    delta = p1 - p2
    dl1, du1, dl2, du2 = p1 - l1, u1 - p1, p2 - l2, u2 - p2
    low = delta - np.sqrt(np.maximum(dl1**2 - 2 * phi * dl1 * du2 + du2**2, 0.0))
    high = delta + np.sqrt(np.maximum(dl2**2 - 2 * phi * dl2 * du1 + du1**2, 0.0))
    return one_sided_ends(low, high, alternative)


def mcnemar(x, y, *, alternative="two-sided", null_value=0.0, confidence_level=0.95,
            method="exact", correction=True):
    r"""McNemar's test for paired binary scores (e.g. per-instance correctness).

    Parameters
    ----------
    x, y : array_like of 0/1
        Paired binary scores, instances on the last axis; leading axes are batch axes.
    alternative : {"two-sided", "less", "greater"}
        H1 about :math:`p_x - p_y` (``"greater"``: x is correct more often).
    null_value : float
        Must be 0: McNemar's test is a test of marginal homogeneity (a non-inferiority
        margin needs a different test).
    confidence_level : float
        Level of Newcombe's interval for :math:`p_x - p_y` (see
        :func:`paired_proportion_interval`).
    method : {"exact", "midp", "asymptotic"}
        Exact conditional binomial test on the discordant pairs, its mid-p version, or the
        chi-square / normal approximation.
    correction : bool
        Continuity correction for ``"asymptotic"`` (ignored otherwise).

    Returns
    -------
    TestResult
        ``statistic``: :math:`b` (pairs where only x is correct) for ``"exact"`` and
        ``"midp"``; the chi-square statistic (1 df) for ``"asymptotic"``. ``estimate`` =
        difference in accuracy :math:`(b - c)/N`; ``n`` = :math:`N` pairs;
        ``extra={"b", "c", "z"}`` (``z`` signed, NaN for the exact methods).

    Notes
    -----
    With :math:`b` = #(x=1, y=0), :math:`c` = #(x=0, y=1) and :math:`m = b + c`, under H0
    :math:`b \sim \mathrm{Bin}(m, 1/2)` given :math:`m`.

    * exact: ``"greater"`` :math:`P(B \ge b)`, ``"less"`` :math:`P(B \le b)`, two-sided
      :math:`\min(1, 2P(B \le \min(b, c)))` (as ``statsmodels ... mcnemar(exact=True)``).
    * mid-p: the same with half the probability of the observed value,
      e.g. :math:`P(B > b) + P(B = b)/2`; two-sided twice the smaller tail, capped at 1.
    * asymptotic: :math:`\chi^2 = (|b - c| - 1)^2/(b + c)` with correction (no correction
      when :math:`b = c`, as R's ``mcnemar.test``; statsmodels then reports
      :math:`1/(b+c)`), :math:`(b-c)^2/(b+c)` without; p from :math:`\chi^2_1`. One-sided:
      signed :math:`z = (b - c \mp 1)/\sqrt{b + c}`, the 1 moved against the alternative
      when ``correction``; ``"greater"`` uses :math:`P(Z \ge z)`; ``statistic`` is then
      :math:`z^2`.

    :math:`b + c = 0` (no discordant pairs) gives p = 1 with a note - nothing can
    separate the systems - and no division by zero.

    References
    ----------
    McNemar, Q. (1947). Note on the sampling error of the difference between correlated
    proportions or percentages. Psychometrika 12, 153-157. doi:10.1007/BF02295996
    Fagerland, M. W., Lydersen, S., & Laake, P. (2013). The McNemar test for binary
    matched-pairs data: mid-p and asymptotic are better than exact conditional.
    BMC Med Res Methodol 13, 91. doi:10.1186/1471-2288-13-91

    Examples
    --------
    >>> import numpy as np
    >>> from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
    >>> x = np.array([1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0])  # system a correct?
    >>> y = np.array([1, 0, 0, 0, 1, 0, 1, 1, 0, 0, 1, 0])  # system b correct?
    >>> res = mcnemar(x, y)  # b = 5 (only a right), c = 1 (only b right)
    >>> ref = sm_mcnemar([[3, 5], [1, 3]], exact=True).pvalue
    >>> int(res.extra["b"]), int(res.extra["c"]), bool(np.isclose(res.p_value, ref))
    (5, 1, True)
    """
    x, y, alternative, null_value, confidence_level = check_paired(
        x, y, alternative, null_value, confidence_level)
    method = check_choice("method", method, _METHODS)
    if not isinstance(correction, (bool, np.bool_)):
        raise ParameterTypeError(f"`correction` must be True or False; got {correction!r}")
    if null_value != 0.0:
        raise ParameterError(
            f"`null_value` must be 0 for McNemar's test (a test of equal accuracy); got "
            f"{null_value!r}"
        )
    _check_binary("x", x)
    _check_binary("y", y)
    n = x.shape[-1]
    b = np.sum((x == 1) & (y == 0), axis=-1)
    c = np.sum((x == 0) & (y == 1), axis=-1)
    n11 = np.sum((x == 1) & (y == 1), axis=-1)
    return _from_counts(b, c, n11, n, alternative, confidence_level, method, correction,
                        null_value)


def _from_counts(b, c, n11, n, alternative, confidence_level, method, correction,
                 null_value=0.0):
    """McNemar's test from the cells of each paired 2x2 table (arrays of one shape)."""
    b = np.asarray(b, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    n11 = np.asarray(n11, dtype=np.int64)
    shape = b.shape
    notes = empty_notes(shape)
    n00 = n - b - c - n11
    m = b + c
    none = m == 0
    add_note(notes, none, "no discordant pairs (b + c = 0): p = 1")
    z = np.full(shape, np.nan)

    if method in ("exact", "midp"):
        p = binom_half_pvalue(b, m, alternative, mid=method == "midp")
        statistic = b.astype(float)
    else:
        diff = (b - c).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            if alternative == "two-sided":
                corr = 1.0 if correction else 0.0
                num = np.maximum(np.abs(diff) - corr, 0.0)
                statistic = num**2 / m
                z = np.sign(diff) * num / np.sqrt(m)
                p = stats.chi2.sf(statistic, 1)
            else:
                corr = (1.0 if alternative == "greater" else -1.0) if correction else 0.0
                z = (diff - corr) / np.sqrt(m)
                statistic = z**2
                p = stats.norm.sf(z) if alternative == "greater" else stats.norm.cdf(z)
        statistic = np.where(none, 0.0, statistic)
        z = np.where(none, 0.0, z)
    p = np.where(none, 1.0, np.minimum(p, 1.0))

    estimate = (b - c) / n

    def interval(level):
        # the inversion of this very test: reject <=> 0 outside the interval;
        # Newcombe's interval stays available as paired_proportion_interval
        low, high = mcnemar_interval(b, c, n, alternative=alternative,
                                     confidence_level=level, method=method,
                                     correction=bool(correction))
        if np.any(none):  # no discordant pairs: the test has no data (p = 1); Newcombe's
            nlo, nhi = paired_proportion_interval(  # interval, which contains 0
                n11, b, c, n00, confidence_level=level, alternative=alternative)
            low, high = np.where(none, nlo, low), np.where(none, nhi, high)
        return scalar(low), scalar(high)

    low, high = interval(confidence_level)
    return TestResult(
        test="mcnemar", statistic=scalar(statistic), p_value=scalar(p),
        estimate=scalar(estimate), ci_low=low, ci_high=high,
        confidence_level=confidence_level, n=scalar(np.full(shape, n, dtype=np.int64)),
        alternative=alternative, null_value=null_value, statistic_kind="mean",
        note=scalar(notes),
        extra={"b": scalar(b.astype(np.int64)), "c": scalar(c.astype(np.int64)),
               "z": scalar(z)},
        _ci_fn=lambda level: interval(check_probability("confidence_level", level)),
    )


def cooccurrence(slab) -> tuple[np.ndarray, np.ndarray]:
    """``(ones, both)`` of a slab of 0/1 scores: ``ones[s, m]`` the instances system s
    gets right, ``both[m, a, b]`` those both a and b get right - one product of the 0/1
    matrices per metric (exact: integer counts in float64), summed over fixed chunks of
    instances; computed once per slab."""
    memo = slab._memo
    if "cooc" not in memo:
        X = slab.scores
        bad = (X != 0) & (X != 1)
        if bad.any():
            _check_binary("x", X)
        S, M, n = X.shape
        both = np.zeros((M, S, S))
        step = 1 << 16
        for m in range(M):
            for s0 in range(0, n, step):
                part = X[:, m, s0:s0 + step]
                both[m] += part @ part.T
        memo["cooc"] = (X.sum(-1), both)
    return memo["cooc"]


def mcnemar_batch(slab, ia, ib, ctx):
    """Batch entry of ``"mcnemar"``: the discordant counts of every pair from products of
    the 0/1 score matrices (:func:`cooccurrence`, no pair materialised):
    ``n11 = both[a, b]``, ``b = ones[a] - n11``, ``c = ones[b] - n11``; then the same
    formulas as :func:`mcnemar`. Options ``method``, ``correction`` as there."""

    opts = dict(ctx.options)
    method = check_choice("method", opts.pop("method", "exact"), _METHODS)
    correction = opts.pop("correction", True)
    if opts:
        raise ParameterError(f"McNemar's test: unknown option(s) {sorted(opts)}")
    if not isinstance(correction, (bool, np.bool_)):
        raise ParameterTypeError(f"`correction` must be True or False; got {correction!r}")
    if ctx.null_value != 0.0:
        raise ParameterError(
            f"`null_value` must be 0 for McNemar's test (a test of equal accuracy); got "
            f"{ctx.null_value!r}")
    ones, both = cooccurrence(slab)
    n11 = np.rint(both[:, ia, ib].T).astype(np.int64)  # (p, M)
    b = np.rint(ones[ia]).astype(np.int64) - n11
    c = np.rint(ones[ib]).astype(np.int64) - n11
    res = _from_counts(b, c, n11, slab.n, ctx.alternative, ctx.confidence_level, method,
                       correction)
    shape = b.shape
    out = {k: np.asarray(getattr(res, k), dtype=float).reshape(shape)
           for k in ("statistic", "p_value", "estimate", "ci_low", "ci_high")}
    out.update(n=np.full(shape, slab.n, dtype=np.int64),
               note=np.asarray(res.note, dtype=object).reshape(shape),
               statistic_kind=np.full(shape, "mean", dtype=object))
    return BatchResult("mcnemar", out)


register(TestSpec(
    name="mcnemar", func=mcnemar, family="binary", statistic_kinds=("mean",),
    assumes_symmetric=False, assumes_normal=False, binary_only=True,
    description="McNemar's test on discordant pairs (exact, mid-p, asymptotic); "
                "Newcombe interval for the accuracy difference",
    batch=mcnemar_batch, bytes_per_value=8,
    estimate_label="accuracy of A − B",
    reasons={s: "binary (0/1) scores: McNemar's test on discordant pairs is exact"
             for s in ("normal", "symmetric", "skewed")},
))
