"""Intervals agree with their own test and contain their own estimate (issue 24.2)."""

import warnings

import numpy as np
import pytest

from multistat import compare, cube
from multistat.significance import REGISTRY
from multistat.significance.rank import wilcoxon


@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_normal_interval_excludes_every_null_the_test_rejects(correction):
    # n > 50 without ties: the normal-approximation Walsh rank. Reference: the test
    # itself, evaluated on a fine grid of null values across the interval and beyond;
    # main's round(n(n+1)/4 - z sd) put rejected nulls inside in 14 of these 70 inputs
    rng = np.random.default_rng(7)
    inside_rejected = outside_kept = 0
    for _ in range(70):
        n = int(rng.integers(51, 121))
        d = rng.normal(0.2, 1.0, n)
        res = wilcoxon(d, np.zeros(n), correction=correction)
        assert not np.asarray(res.extra["exact"])
        grid = np.linspace(res.ci_low - 0.1, res.ci_high + 0.1, 2001)
        p = wilcoxon(d[None, :] - grid[:, None], np.zeros((grid.size, n)),
                     correction=correction).p_value
        inside = (grid >= res.ci_low) & (grid <= res.ci_high)
        inside_rejected += int(np.count_nonzero(inside & (p <= 0.05)))
        outside_kept += int(np.count_nonzero(~inside & (p > 0.05)))
    assert inside_rejected == 0
    # and the interval is not too short: the nulls it leaves out are rejected (a grid
    # point may fall between the last kept null and the Walsh average at the end)
    assert outside_kept == 0


def _likert_and_binary(rows=90, seed=11):
    rng = np.random.default_rng(seed)
    for r in range(rows):
        n = int(rng.integers(5, 60))
        if r % 2:
            yield rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float)
        else:
            yield ((rng.random(n) < 0.6).astype(float),
                   (rng.random(n) < 0.5).astype(float))


@pytest.mark.parametrize("name", ["sign", "wilcoxon"])
def test_rank_test_estimates_lie_in_their_own_interval_on_tied_scores(name):
    # main: 5 of these 180 rows had e.g. estimate 0 with interval [5e-324, 0.5) - the
    # test rejects the median itself (its zero differences are dropped there)
    moved = 0
    for x, y in _likert_and_binary():
        for alternative in ("two-sided", "greater", "less"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = REGISTRY[name].func(x, y, alternative=alternative)
            if np.isnan(res.ci_low) or np.isnan(res.ci_high):  # empty: nothing contains it
                continue
            assert res.ci_low <= res.estimate <= res.ci_high, (name, res.note)
            if "lies outside the interval" in str(res.note):
                moved += 1
                # the estimate is an end of the interval: the nearest unrejected value
                assert res.estimate in (res.ci_low, res.ci_high)
    assert moved > 0  # the case occurs in this sample, and the rows say so


def test_compare_rows_on_likert_scores_contain_their_estimates():
    rng = np.random.default_rng(3)
    score = rng.integers(1, 6, (5, 1, 40)).astype(float)
    score[1] = np.where(rng.random(40) < 0.7, score[0], score[1])  # many zero differences
    ds = cube.make_dataset("d", score, systems=list("abcde"), metrics=["likert"],
                           instances=[f"i{i}" for i in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = compare(cube.make_study({"d": ds}), tests=("sign", "wilcoxon"),
                        effect_sizes=False, scheduler="synchronous")
    ok = table.dropna(subset=["ci_low", "ci_high"])
    assert len(ok) >= len(table) // 2  # the check is not vacuous: most rows have intervals
    assert ((ok.ci_low <= ok.estimate) & (ok.estimate <= ok.ci_high)).all()


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_permutation_mde_does_not_depend_on_the_null_value(statistic):
    # main: mde 0.174 at null_value 0, 0.792 at 2, and an overflow warning at 1e308
    rng = np.random.default_rng(5)
    base = rng.normal(size=60)
    score = np.stack([base + rng.normal(0, 0.5, 60) + s / 5 for s in range(3)])[:, None]
    ds = cube.make_dataset("d", score, systems=list("abc"), metrics=["m"],
                           instances=[f"i{i}" for i in range(60)])
    study = cube.make_study({"d": ds})
    mdes = []
    # (the median of differences moved by 1e308 overflows in numpy's median itself: the
    # huge null is checked for the mean, whose mde main overflowed)
    for null_value in (0.0, 2.0) + ((1e308,) if statistic == "mean" else ()):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning
            table = compare(study, tests=("permutation",), null_value=null_value,
                            statistic=statistic, n_resamples=999, effect_sizes=False,
                            scheduler="synchronous")
        mdes.append(table["mde"].to_numpy())
    assert np.all(np.isfinite(mdes[0]) & (mdes[0] > 0))
    for other in mdes[1:]:
        np.testing.assert_array_equal(other, mdes[0])


# ----------------------------------------------------- Mann-Whitney and Brunner-Munzel
def _r_exact_interval(a, b, alternative, confidence_level):
    """R's wilcox.test(conf.int = TRUE) exact two-sample interval, written from its
    source (R 4.3 stats/R/wilcox.test.R: qu <- qwilcox(alpha/2, n.x, n.y); if (qu == 0)
    qu <- 1; c(diffs[qu], diffs[n.x n.y - qu + 1])) with qwilcox from the null
    distribution enumerated here by brute force over every choice of a's ranks."""
    from itertools import combinations

    m, n = a.size, b.size
    counts = np.zeros(m * n + 1)
    for ranks in combinations(range(m + n), m):  # U = rank sum - m(m+1)/2 (0-based)
        counts[sum(ranks) - m * (m - 1) // 2] += 1
    cdf = np.cumsum(counts) / counts.sum()
    alpha = 1 - confidence_level
    level = alpha / 2 if alternative == "two-sided" else alpha
    qu = int(np.argmax(cdf >= level - 10 * np.finfo(float).eps))
    never = qu == 0  # R bumps qu to 1 (the range); the test then never rejects
    exact_tie = np.isclose(cdf[qu], level, rtol=1e-12, atol=0)  # P = alpha exactly
    qu = max(qu, 1)
    d = np.sort(np.subtract.outer(a, b), axis=None)
    low, high = d[qu - 1], d[m * n - qu]
    if alternative == "greater":
        high = np.inf
    if alternative == "less":
        low = -np.inf
    return (low, high), never, exact_tie


def test_exact_mann_whitney_interval_is_r_exact_interval_and_inverts_scipy_exact():
    from scipy import stats

    from multistat.significance._rank_sum_exact import exact_shift_interval
    from multistat.significance.unpaired import mannwhitney

    rng = np.random.default_rng(8)
    checked = 0
    for trial in range(60):
        m, n = (int(x) for x in rng.integers(2, 9, 2))
        a = rng.normal(0.7, 1.0, m)
        b = rng.normal(0.0, 1.0, n)
        alt = ("two-sided", "greater", "less")[trial % 3]
        level = (0.95, 0.9, 0.8)[trial % 3 if trial % 2 else 0]
        lo, hi = exact_shift_interval(a, b, alternative=alt, confidence_level=level)
        # the row uses it: exact p-value (scipy's "auto" picks exact here) and interval
        row = mannwhitney(a, b, alternative=alt, confidence_level=level)
        assert "exact p-value" in str(row.note)
        # (the row moves both samples by their median first: the same differences to
        # the last bit or one ulp)
        np.testing.assert_allclose([row.ci_low, row.ci_high], [lo, hi], rtol=1e-15, atol=0)
        assert float(row.p_value) == stats.mannwhitneyu(a, b, alternative=alt).pvalue
        # R's exact interval (where the test can reject at all and no p equals alpha)
        ref, never, tie = _r_exact_interval(a, b, alt, level)
        if tie:  # p = alpha exactly: R keeps that value, p <= alpha rejects it here
            pass
        elif never:
            assert (lo, hi) == (-np.inf, np.inf)
        else:
            assert (lo, hi) == ref
            checked += 1
        # brute force: scipy's exact p-value at every gap between the differences
        d = np.unique(np.subtract.outer(a, b))
        gaps = np.concatenate([[d[0] - 1], (d[:-1] + d[1:]) / 2, [d[-1] + 1]])
        p = stats.mannwhitneyu(a[None, :] - gaps[:, None], b[None, :], alternative=alt,
                               method="exact", axis=-1).pvalue
        accept = p > (1 - level) * (1 + 1e-12)
        assert np.array_equal(accept, (gaps >= lo) & (gaps <= hi)), (a, b, alt)
    assert checked > 30


def test_mann_whitney_small_samples_reject_no_null_inside_their_interval():
    # 40 random small samples (n = 4..12 each, no ties): the row's own test at every
    # gap between the differences a_i - b_j agrees with the row's interval. Before, the
    # interval inverted the asymptotic test where the p-value was exact: with this
    # script 16 of 200 samples of n = 5..8 (5 of 200 of n = 4..12) had null values
    # inside that the row rejects
    from multistat.significance.unpaired import mannwhitney

    rng = np.random.default_rng(0)
    exact_rows = 0
    for r in range(40):
        na, nb = (int(x) for x in rng.integers(4, 13, 2))
        a, b = rng.normal(0.5, 1.5, na), rng.normal(0.0, 1.5, nb)
        alt = ("two-sided", "greater", "less")[r % 3]
        res = mannwhitney(a, b, alternative=alt)
        exact_rows += "exact p-value" in str(res.note)
        d = np.unique(np.subtract.outer(a, b))
        gaps = np.concatenate([[d[0] - 1], (d[:-1] + d[1:]) / 2, [d[-1] + 1]])
        # the row itself at each gap: null_value = gap (a - gap tested against b)
        p = mannwhitney(a[None, :] - gaps[:, None], b[None, :], alternative=alt).p_value
        inside = (gaps >= res.ci_low) & (gaps <= res.ci_high)
        assert np.array_equal(np.asarray(p) > 0.05, inside), (a, b, alt)
    assert 10 < exact_rows < 40  # both methods occur


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_brunner_munzel_on_separated_samples_gives_the_limit_with_a_note(alternative):
    from scipy import stats

    from multistat.significance.unpaired import brunner_munzel, mannwhitney

    a = np.array([5.1, 6.0, 7.2, 8.4, 9.9])
    b = np.array([1.0, 2.2, 3.1, 4.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from scipy's 0/0 either
        up = brunner_munzel(a, b, alternative=alternative)
        down = brunner_munzel(b, a, alternative=alternative)
    # scipy: NaN (its df is 0/0); the t statistic's limit gives 0 on the side the data
    # lie, 1 on the other; R's brunnermunzel.test reports p = 0 two-sided
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.isnan(stats.brunnermunzel(a, b).pvalue)
    want_up = {"two-sided": 0.0, "greater": 0.0, "less": 1.0}[alternative]
    want_down = {"two-sided": 0.0, "greater": 1.0, "less": 0.0}[alternative]
    assert float(up.p_value) == want_up and float(down.p_value) == want_down
    assert "completely separated" in str(up.note) and "completely separated" in str(down.note)
    assert float(up.extra["relative_effect"]) == 1.0
    assert float(down.extra["relative_effect"]) == 0.0
    for res in (up, down):  # the relative effect's interval agrees with the decision
        lo = float(res.extra["relative_effect_ci_low"])
        hi = float(res.extra["relative_effect_ci_high"])
        assert (float(res.p_value) <= 0.05) == (lo > 0.5 or hi < 0.5)
    # Mann-Whitney on the same data (exact: 2 / C(9, 4) two-sided) rejects too
    mw = mannwhitney(a, b, alternative=alternative)
    assert float(mw.p_value) == stats.mannwhitneyu(a, b, alternative=alternative).pvalue
    assert (float(mw.p_value) <= 0.05) == (want_up == 0.0)


def test_rank_sum_null_counts_against_scipy_exact():
    from math import comb

    from scipy import stats

    from multistat.significance._rank_sum_exact import rank_sum_null_counts, rank_sum_sf

    for m, n in ((1, 1), (2, 3), (3, 7), (8, 8), (5, 40)):
        counts = rank_sum_null_counts(m, n)
        assert sum(counts) == comb(m + n, m) and counts == counts[::-1]
        # scipy's exact "greater" p-value of a sample whose U is u, for every u
        sf = rank_sum_sf(m, n)
        for u in range(0, m * n + 1, max(1, m * n // 12)):
            # x above exactly u of the (x, y) pairs: y = 0..n-1, x placed by u
            q, r = divmod(u, m) if m else (0, 0)
            x = np.array([q + (1 if i < r else 0) for i in range(m)], float) - 0.5
            y = np.arange(n, dtype=float)
            assert stats.mannwhitneyu(x, y, method="exact").statistic == u
            ref = stats.mannwhitneyu(x, y, alternative="greater", method="exact").pvalue
            assert sf[u] == pytest.approx(ref, rel=1e-12)
