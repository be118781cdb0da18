"""Unpaired two-sample tests for incomplete designs: Mann-Whitney U and Brunner-Munzel.

In a human evaluation where each system is rated on its own sample of segments (WMT's
direct-assessment campaigns), two systems share few or no instances, so a paired test has
nothing to pair. These tests use each system's own scores (every instance it has, NaN
cells left out) as two independent samples:

* ``"mannwhitney"`` -- the Wilcoxon-Mann-Whitney rank-sum test, the test behind WMT's
  human-evaluation clusters; ``p_value`` is ``scipy.stats.mannwhitneyu``'s (two-sided by
  default, tie-corrected, exact when a sample has at most 8 scores and there are no ties:
  scipy's own rule, applied here and named in the note);
* ``"brunner-munzel"`` -- Brunner and Munzel's test of the relative effect
  ``P(B < A) + P(A = B) / 2 = 1/2``, which unlike Mann-Whitney does not assume equal
  shapes; ``p_value`` is ``scipy.stats.brunnermunzel``'s (t distribution). On completely
  separated samples (every a above every b, or below) its variance estimate is 0 and
  scipy returns NaN; the row gives the limit instead (p 0 on the side the data lie, 1 on
  the other; the relative effect's interval the point 1 or 0) and says so in its note.

Both report as ``estimate`` the Hodges-Lehmann shift of a over b (the median of all
differences ``a_i - b_j``, in metric units). Mann-Whitney's interval is the set of shifts
its own p-value does not reject, with the row's method: where the p-value is exact, the
exact Hodges-Lehmann interval (order statistics of the differences, R's
``wilcox.test(conf.int = TRUE)``); else the exact inversion of scipy's asymptotic test,
ties and all (Moses' interval is its no-tie normal approximation). Decision and interval
agree for every null value between the differences;
Brunner-Munzel's interval is for its own
parameter, the relative effect, in the extra columns ``relative_effect``,
``relative_effect_ci_low`` and ``relative_effect_ci_high`` (``ci_low``/``ci_high`` are
NaN, said in the note). ``n`` is the smaller of the two sample sizes; ``n_a`` and ``n_b``
give both.

References
----------
H. B. Mann and D. R. Whitney (1947). On a test of whether one of two random variables is
stochastically larger than the other. Annals of Mathematical Statistics 18(1), 50-60.
https://doi.org/10.1214/aoms/1177730491
E. Brunner and U. Munzel (2000). The nonparametric Behrens-Fisher problem: asymptotic
theory and a small-sample approximation. Biometrical Journal 42(1), 17-25.
https://doi.org/10.1002/(SICI)1521-4036(200001)42:1<17::AID-BIMJ17>3.0.CO;2-U
L. E. Moses (1965). Query: confidence limits from rank tests. Technometrics 7(2), 257-260.
"""

from __future__ import annotations

import warnings

import numpy as np

from multistat._lazy import lazy_module
from multistat._validation import check_alternative, check_choice, check_probability, check_real
from multistat.significance._base import REGISTRY, TestResult, TestSpec, register
from multistat.significance._batch import BatchResult, from_test_result
from multistat.significance._inversion import scan_interval
from multistat.significance._rank_sum_exact import exact_shift_interval

stats = lazy_module("scipy.stats")  # imported on first use (a t-only run: never)

#: the tests of this module (``compare`` passes each system's own scores)
UNPAIRED = ("mannwhitney", "brunner-munzel")


def _key(t: float) -> int:
    """An integer that orders floats as their values do (the bits, negatives flipped)."""
    i = int(np.float64(t).view(np.int64))
    return i if i >= 0 else -(i & 0x7FFFFFFFFFFFFFFF)


def _value(k: int) -> float:
    return float(np.int64(k if k >= 0 else (-k) | -0x8000000000000000).view(np.float64))


def kth_difference(a_sorted: np.ndarray, b_sorted: np.ndarray, k: int) -> float:
    """The ``k``-th smallest (0-based) of the floating-point differences ``a_i - b_j``
    without forming them (memory O(n_a + n_b)).

    A bisection over the floats themselves (their bit patterns, so it ends on an exact
    difference after at most 64 steps): the number of differences at or below ``t`` is
    counted with one vectorised binary search per ``a_i`` over ``b`` (a rounded
    difference ``a_i - b_j`` falls as ``b_j`` grows), so the count agrees with the
    differences numpy would form, bit for bit."""
    m = b_sorted.size

    def count(t):
        lo = np.zeros(a_sorted.size, dtype=np.int64)
        hi = np.full(a_sorted.size, m, dtype=np.int64)
        while True:
            open_ = lo < hi
            if not open_.any():
                return int((m - lo).sum())
            mid = (lo + hi) // 2
            ok = (a_sorted - b_sorted[np.minimum(mid, m - 1)]) <= t
            hi = np.where(open_ & ok, mid, hi)
            lo = np.where(open_ & ~ok, mid + 1, lo)

    key_lo = _key(a_sorted[0] - b_sorted[-1]) - 1  # count(key_lo) = 0 <= k
    key_hi = _key(a_sorted[-1] - b_sorted[0])      # count(key_hi) = all > k
    while key_hi - key_lo > 1:
        mid = key_lo + (key_hi - key_lo) // 2
        if count(_value(mid)) >= k + 1:
            key_hi = mid
        else:
            key_lo = mid
    return _value(key_hi)


def hodges_lehmann_shift(a, b) -> float:
    """Median of all ``a_i - b_j`` (the mean of the two middle ones for an even count)."""
    a_s, b_s = np.sort(a), np.sort(b)
    N = a_s.size * b_s.size
    if N <= 1 << 24:  # up to 128 MiB: form the differences
        return float(np.median(np.subtract.outer(a_s, b_s)))
    if N % 2:
        return kth_difference(a_s, b_s, N // 2)
    return 0.5 * (kth_difference(a_s, b_s, N // 2 - 1) + kth_difference(a_s, b_s, N // 2))


def mwu_method(a0, b) -> str:
    """The method of a row's Mann-Whitney p-value: ``"exact"`` when a sample has at most
    8 scores and no two of ``a0`` (a moved by the null value) and ``b`` are equal,
    ``"asymptotic"`` (tie-corrected normal, continuity correction) otherwise -- the rule
    of scipy's ``method="auto"``, written out so that the p-value and the interval are
    computed with the same one."""
    if min(a0.size, b.size) > 8:
        return "asymptotic"
    both = np.sort(np.concatenate([a0, b]))
    return "asymptotic" if np.any(both[1:] == both[:-1]) else "exact"


def _mwu_p(a, b, deltas, alternative, method="asymptotic"):
    """scipy's Mann-Whitney p-value (``method``) of ``a - delta`` against ``b`` for every
    ``delta``."""
    deltas = np.asarray(deltas, dtype=float)
    out = np.empty(deltas.size)
    step = max(1, (1 << 22) // max(1, a.size + b.size))
    for s in range(0, deltas.size, step):
        x = a[None, :] - deltas[s:s + step, None]
        out[s:s + step] = stats.mannwhitneyu(x, b[None, :], alternative=alternative,
                                             axis=-1, method=method).pvalue
    return out


#: differences tested per scipy call while searching an end of the Mann-Whitney interval
SEARCH_POINTS = 64


def mwu_interval(a, b, *, alternative, confidence_level, method="asymptotic"):
    """The shifts ``delta`` that Mann-Whitney (scipy's p-value, same sidedness, the
    row's ``method``) does not reject at ``1 - confidence_level``: the exact inversion of
    the test, so the row's decision and interval agree for every null value.

    ``method="exact"`` (no ties, a sample of at most 8): the order statistics of the
    differences ``a_i - b_j`` that invert the exact test
    (:func:`~multistat.significance._rank_sum_exact.exact_shift_interval`, R's exact
    interval). ``"asymptotic"``: the p-value is constant between consecutive distinct differences
    ``a_i - b_j`` and
    can change only at them; :func:`~multistat.significance._inversion.scan_interval`
    evaluates it at every difference and every gap. Above 4,096 distinct differences the
    two ends are first located by a 64-ary search over the sorted differences (the acceptance
    set is an interval around the Hodges-Lehmann shift) and only the 16 differences
    around each end are scanned."""

    if method == "exact":
        return exact_shift_interval(a, b, alternative=alternative,
                                    confidence_level=confidence_level)
    alpha = 1.0 - confidence_level
    values = np.unique(np.subtract.outer(a, b))  # <= 2**24 pairs (hodges_lehmann_shift)

    def pvalue_of(deltas):
        return _mwu_p(a, b, deltas, alternative, method)

    if values.size <= 4096:
        return scan_interval(pvalue_of, values, alpha=alpha)
    def accept(i):
        return pvalue_of([values[i]])[0] > alpha * (1 + 1e-12)

    centre = int(np.searchsorted(values, hodges_lehmann_shift(a, b)))
    centre = min(max(centre, 0), values.size - 1)
    ends = []
    for side in (-1, 1):
        inside, outside = centre, (0 if side < 0 else values.size - 1)
        if accept(outside):
            ends.append(outside)
            continue
        while abs(outside - inside) > 1:  # accept(inside), not accept(outside)
            # up to SEARCH_POINTS differences between them in one vectorized scipy call
            # (a 64-ary search: 3 calls instead of 17 for 10^5 differences); acceptance
            # is an interval around the shift, so it holds on a prefix of them
            step = np.linspace(inside, outside, min(SEARCH_POINTS, abs(outside - inside) - 1)
                               + 2).round().astype(int)[1:-1]
            ok = pvalue_of(values[step]) > alpha * (1 + 1e-12)
            last = int(np.argmin(ok)) if not ok.all() else step.size
            inside = step[last - 1] if last else inside
            outside = step[last] if last < step.size else outside
        ends.append(outside)
    lo_i, hi_i = max(ends[0] - 8, 0), min(ends[1] + 8, values.size - 1)
    low = scan_interval(pvalue_of, values[lo_i:lo_i + 17], alpha=alpha)[0]
    high = scan_interval(pvalue_of, values[max(hi_i - 16, 0):hi_i + 1], alpha=alpha)[1]
    if lo_i == 0 and alternative != "less" and accept(0):
        low = -np.inf
    if hi_i == values.size - 1 and alternative != "greater" and accept(values.size - 1):
        high = np.inf
    return low, high


def _samples(x, y):
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return x[~np.isnan(x)], y[~np.isnan(y)]


def unpaired_test(name, x, y, *, alternative="two-sided", null_value=0.0,
                  confidence_level=0.95):
    """One of :data:`UNPAIRED` on two samples (arrays ``(..., n)``, NaN = absent; the
    leading axes are looped over)."""

    name = check_choice("test", name, UNPAIRED)
    alternative = check_alternative(alternative)
    null_value = check_real("null_value", null_value)
    confidence_level = check_probability("confidence_level", confidence_level)
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    lead = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    x = np.broadcast_to(x, lead + x.shape[-1:])
    y = np.broadcast_to(y, lead + y.shape[-1:])
    cols = {k: np.full(lead, np.nan) for k in (
        "statistic", "p_value", "estimate", "ci_low", "ci_high", "n", "n_a", "n_b",
        "relative_effect", "relative_effect_ci_low", "relative_effect_ci_high")}
    notes = np.full(lead, "", dtype=object)
    for idx in np.ndindex(*lead):
        a, b = _samples(x[idx], y[idx])
        cols["n_a"][idx], cols["n_b"][idx] = a.size, b.size
        cols["n"][idx] = min(a.size, b.size)
        if a.size < 2 or b.size < 2:
            notes[idx] = f"{name}: fewer than 2 scores for a system"
            continue
        est = hodges_lehmann_shift(a, b)
        cols["estimate"][idx] = est
        # the tests run on the scores moved by one of them when that is exact (scores
        # far from 0 on a grid, e.g. shifted by 2^50), so the copies a - delta that the
        # interval's scan tests are as exact as for unshifted scores; ranks, ties and so
        # p-values do not change. Scores it would round (0.1 steps) stay as they are.
        both = np.concatenate([a, b])
        ref = np.partition(both, both.size // 2)[both.size // 2]
        if np.array_equal((both - ref) + ref, both):
            a, b = a - ref, b - ref
        a0 = a - null_value  # H0: the shift is null_value
        if name == "mannwhitney":
            method = mwu_method(a0, b)
            res = stats.mannwhitneyu(a0, b, alternative=alternative, method=method)
            cols["statistic"][idx], cols["p_value"][idx] = res.statistic, res.pvalue
            cols["ci_low"][idx], cols["ci_high"][idx] = mwu_interval(
                a, b, alternative=alternative, confidence_level=confidence_level,
                method=method)
            notes[idx] = (f"mannwhitney: unpaired rank-sum test of each system's own scores "
                          f"({method} p-value); Hodges-Lehmann shift, interval = the shifts "
                          f"the {method} test accepts")
        else:
            if np.unique(np.concatenate([a0, b])).size == 1:
                notes[idx] = "brunner-munzel: all scores equal"
                cols["relative_effect"][idx] = 0.5
                continue
            with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
                # separated samples: scipy warns that its df is 0/0 (handled below)
                warnings.simplefilter("ignore", RuntimeWarning)
                res = stats.brunnermunzel(a0, b, alternative=_bm_alternative(alternative))
                rel, lo, hi = _relative_effect(a0, b, confidence_level, alternative)
            stat, pval = float(res.statistic), float(res.pvalue)
            notes[idx] = ("brunner-munzel: unpaired test of the relative effect P(b < a) + "
                          "P(a = b)/2 (interval in relative_effect_ci_*); estimate is the "
                          "Hodges-Lehmann shift")
            if np.isnan(pval) and rel in (0.0, 1.0):
                pval, lo, hi = _separated_limit(rel, alternative)
                stat = -np.inf if rel == 1.0 else np.inf  # scipy's sign: b's ranks - a's
                notes[idx] += (
                    f"; the samples are completely separated (every a - null_value "
                    f"{'above' if rel == 1.0 else 'below'} every b): the variance estimate "
                    "is 0 and the t statistic infinite, so p_value is its limit "
                    f"({pval:g}) and the relative effect's interval is the point {rel:g}")
            cols["statistic"][idx], cols["p_value"][idx] = stat, pval
            cols["relative_effect"][idx] = rel
            cols["relative_effect_ci_low"][idx] = lo
            cols["relative_effect_ci_high"][idx] = hi
    extra = {k: cols[k] for k in ("n_a", "n_b")}
    if name == "brunner-munzel":
        extra.update({k: cols[k] for k in ("relative_effect", "relative_effect_ci_low",
                                           "relative_effect_ci_high")})
    return TestResult(name, cols["statistic"], cols["p_value"], cols["estimate"],
                      cols["ci_low"], cols["ci_high"], confidence_level, cols["n"],
                      alternative, null_value, "median", note=notes, extra=extra)


def _bm_alternative(alternative):
    # scipy.stats.brunnermunzel(x, y): "greater" = x tends to be larger than y
    return alternative


def _separated_limit(rel, alternative):
    """``(p, low, high)`` of Brunner-Munzel on completely separated samples (relative
    effect ``rel`` 1 or 0): the limits as the variance estimate goes to 0 -- the t
    statistic goes to +-infinity, so the p-value is 0 on the side the data lie and 1 on
    the other, and the interval shrinks to the estimate (clipped to the one-sided
    bound)."""
    up = rel == 1.0
    if alternative == "two-sided":
        return 0.0, rel, rel
    if alternative == "greater":
        return (0.0, rel, 1.0) if up else (1.0, 0.0, 1.0)
    return (1.0, 0.0, 1.0) if up else (0.0, 0.0, rel)


def _relative_effect(a, b, confidence_level, alternative):
    """Brunner-Munzel's estimate of ``P(b < a) + P(a = b)/2`` with its t interval."""
    n, m = a.size, b.size
    ranks = stats.rankdata(np.concatenate([a, b]))
    ra, rb = ranks[:n], ranks[n:]
    ia, ib = stats.rankdata(a), stats.rankdata(b)
    rel = (ra.mean() - (n + 1) / 2.0) / m  # P(b < a) + P(a = b)/2
    sa = ((ra - ia - ra.mean() + (n + 1) / 2.0) ** 2).sum() / (n - 1)
    sb = ((rb - ib - rb.mean() + (m + 1) / 2.0) ** 2).sum() / (m - 1)
    va, vb = sa / m**2, sb / n**2   # variances of the placements' means
    se = np.sqrt(va / n + vb / m)
    df = (va / n + vb / m) ** 2 / ((va / n) ** 2 / (n - 1) + (vb / m) ** 2 / (m - 1))
    if not se > 0 or not np.isfinite(df):
        return rel, np.nan, np.nan
    two = alternative == "two-sided"
    q = stats.t.ppf(0.5 + confidence_level / 2.0 if two else confidence_level, df)
    lo = rel - q * se if alternative in ("two-sided", "greater") else 0.0
    hi = rel + q * se if alternative in ("two-sided", "less") else 1.0
    return rel, max(lo, 0.0), min(hi, 1.0)


def mannwhitney(x, y, **kw):
    """Mann-Whitney U test of a - b on each system's own scores (see the module)."""
    return unpaired_test("mannwhitney", x, y, **kw)


def brunner_munzel(x, y, **kw):
    """Brunner-Munzel test of a - b on each system's own scores (see the module)."""
    return unpaired_test("brunner-munzel", x, y, **kw)


def unpaired_batch(name):
    """Batch entry: every pair x metric from the systems' own scores (``slab.scores``
    with NaN where a system lacks an instance)."""
    def batch(slab, ia, ib, ctx):
        P, M = len(ia), slab.shape[1]
        X = slab.scores
        res = unpaired_test(name, X[ia], X[ib], alternative=ctx.alternative,
                            null_value=ctx.null_value,
                            confidence_level=ctx.confidence_level)
        out = from_test_result(res, (P, M), "median")
        out.update({k: np.asarray(v, dtype=float) for k, v in res.extra.items()})
        ctx.tick(P * M)
        return BatchResult(name, out)
    return batch


def _register():
    for name, func, text in (
            ("mannwhitney", mannwhitney, ("Mann-Whitney U rank-sum test of each system's "
                                          "own scores (unpaired; WMT human evaluation)")),
            ("brunner-munzel", brunner_munzel, ("Brunner-Munzel test of the relative effect "
                                                "(unpaired, unequal shapes)"))):
        if name not in REGISTRY:
            register(TestSpec(name, func, "rank", ("median",), assumes_symmetric=False,
                              assumes_normal=False, description=text,
                              batch=unpaired_batch(name), bytes_per_value=16,
                              advised=False, missing="own"))
