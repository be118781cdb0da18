"""McNemar's test: agreement with statsmodels/scipy, mid-p, direction, edge cases, interval
coverage by simulation, errors."""

from math import comb

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from multistat.errors import ParameterError, ParameterTypeError, TestNotApplicableError
from multistat.significance import REGISTRY, mcnemar
from multistat.significance.binary import paired_proportion_interval

ALTS = ["two-sided", "less", "greater"]


def _tables(x, y):
    """2x2 tables [[n11, n10], [n01, n00]] per row (statsmodels layout)."""
    n11 = ((x == 1) & (y == 1)).sum(-1)
    n10 = ((x == 1) & (y == 0)).sum(-1)
    n01 = ((x == 0) & (y == 1)).sum(-1)
    n00 = ((x == 0) & (y == 0)).sum(-1)
    return np.stack([np.stack([n11, n10], -1), np.stack([n01, n00], -1)], -2)


@pytest.fixture
def binary_batch():
    rng = np.random.default_rng(3)
    x = (rng.random((60, 45)) < 0.7).astype(float)
    flip = rng.random((60, 45)) < rng.uniform(0.05, 0.4, size=(60, 1))
    y = np.where(flip, 1 - x, x)
    return x, y


@pytest.mark.parametrize("method, correction", [
    ("exact", True), ("asymptotic", True), ("asymptotic", False)])
def test_matches_statsmodels(binary_batch, method, correction):
    # reference: statsmodels.stats.contingency_tables.mcnemar(table, exact=..., correction=...)
    x, y = binary_batch
    res = mcnemar(x, y, method=method, correction=correction)
    tables = _tables(x, y)
    checked = 0
    for i, table in enumerate(tables):
        b, c = table[0, 1], table[1, 0]
        if method == "asymptotic" and correction and b == c:
            continue  # statsmodels reports 1/(b+c) there; R and multistat: 0 (tested below)
        ref = sm_mcnemar(table, exact=method == "exact", correction=correction)
        assert abs(res.p_value[i] - ref.pvalue) <= 1e-10
        if method == "asymptotic":
            assert abs(res.statistic[i] - ref.statistic) <= 1e-10
        checked += 1
    assert checked >= 50


def test_corrected_statistic_is_zero_when_b_equals_c():
    # R mcnemar.test: YATES applies only when the table is not symmetric -> chi2 = 0, p = 1
    x = np.array([1, 1, 0, 0, 1, 0, 1, 1.0])
    y = np.array([0, 0, 1, 1, 1, 0, 1, 0.0])  # b = 3, c = 2 -> then make b = c
    y[-1] = 1  # b = 2, c = 2
    res = mcnemar(x, y, method="asymptotic", correction=True)
    assert res.extra["b"] == res.extra["c"] == 2
    assert res.statistic == 0.0 and res.p_value == 1.0


@pytest.mark.parametrize("alternative", ALTS)
def test_exact_one_sided_matches_binomtest(binary_batch, alternative):
    # reference: scipy.stats.binomtest(b, b + c, 0.5, alternative)
    x, y = binary_batch
    res = mcnemar(x, y, alternative=alternative, method="exact")
    for i, table in enumerate(_tables(x, y)):
        b, c = int(table[0, 1]), int(table[1, 0])
        if b + c == 0:
            continue
        ref = stats.binomtest(b, b + c, 0.5, alternative=alternative).pvalue
        assert abs(res.p_value[i] - ref) <= 1e-10


def _midp_reference(b, c, alternative):
    """Mid-p from explicit sums of binomial(m, 1/2) probabilities (Fagerland et al. 2013)."""
    m = b + c
    pmf = [comb(m, k) / 2**m for k in range(m + 1)]
    greater = sum(pmf[b + 1:]) + pmf[b] / 2
    less = sum(pmf[:b]) + pmf[b] / 2
    if alternative == "greater":
        return greater
    if alternative == "less":
        return less
    small = min(b, c)
    return min(1.0, 2 * (sum(pmf[:small]) + pmf[small] / 2))


@pytest.mark.parametrize("alternative", ALTS)
def test_midp(binary_batch, alternative):
    x, y = binary_batch
    res = mcnemar(x, y, alternative=alternative, method="midp")
    for i, table in enumerate(_tables(x, y)):
        b, c = int(table[0, 1]), int(table[1, 0])
        if b + c:
            assert abs(res.p_value[i] - _midp_reference(b, c, alternative)) <= 1e-12
    exact = mcnemar(x, y, alternative=alternative, method="exact")
    assert np.all(res.p_value <= exact.p_value + 1e-15)


@pytest.mark.parametrize("method", ["exact", "midp", "asymptotic"])
def test_direction(method):
    # x right on 30 instances where y is wrong, y right on 5 where x is wrong
    x = np.r_[np.ones(30), np.zeros(5), np.ones(40)]
    y = np.r_[np.zeros(30), np.ones(5), np.ones(40)]
    greater = mcnemar(x, y, alternative="greater", method=method)
    less = mcnemar(x, y, alternative="less", method=method)
    assert greater.p_value < 1e-4 and less.p_value > 0.99
    assert greater.estimate == pytest.approx(25 / 75)
    if method == "asymptotic":
        assert greater.extra["z"] > 0


@pytest.mark.parametrize("method", ["exact", "midp", "asymptotic"])
def test_swap_symmetry(binary_batch, method):
    x, y = binary_batch
    a, b = mcnemar(x, y, method=method), mcnemar(y, x, method=method)
    np.testing.assert_allclose(a.estimate, -b.estimate, atol=1e-15)
    np.testing.assert_allclose(a.p_value, b.p_value, atol=1e-14)
    np.testing.assert_allclose(a.ci_low, -b.ci_high, atol=1e-14)


@pytest.mark.parametrize("method", ["exact", "midp", "asymptotic"])
def test_no_discordant_pairs(method):
    x = np.array([[1, 0, 1, 1.0], [1, 1, 0, 0.0]])
    y = np.array([[1, 0, 1, 1.0], [0, 1, 0, 0.0]])
    res = mcnemar(x, y, method=method)
    assert res.p_value[0] == 1.0 and "b + c = 0" in res.note[0] and res.note[1] == ""
    assert res.estimate[0] == 0.0 and np.isfinite(res.ci_low[0]) and res.ci_low[0] < 0


def test_newcombe_interval_worked_example():
    # reference: Newcombe (1998) method 10 written out by hand (Wilson limits, phi with the
    # N/2 adjustment of Fagerland, Lydersen & Laake 2017, sec. 8.5) for their example table
    # [[59, 6], [16, 80]] (Cavo et al. 2012)
    z = stats.norm.isf(0.025)
    n = 161.0
    def wilson(k):
        p = k / n
        centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
        half = z / (1 + z**2 / n) * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
        return centre - half, centre + half
    p1, p2 = 65 / n, 75 / n
    l1, u1 = wilson(65)
    l2, u2 = wilson(75)
    a = 59 * 80 - 6 * 16
    phi = (a - n / 2) / np.sqrt(65 * 96 * 75 * 86)
    low = p1 - p2 - np.sqrt((p1 - l1)**2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2)**2)
    high = p1 - p2 + np.sqrt((p2 - l2)**2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1)**2)
    got = paired_proportion_interval(59, 6, 16, 80)
    assert got[0] == pytest.approx(low, abs=1e-14) and got[1] == pytest.approx(high, abs=1e-14)
    assert low < (6 - 16) / n < high


@pytest.mark.parametrize("n, cells", [
    (30, (0.55, 0.2, 0.1, 0.15)),
    (100, (0.6, 0.15, 0.08, 0.17)),
    (300, (0.8, 0.06, 0.04, 0.10)),
])
def test_interval_coverage(n, cells):
    # 4000 replications per setting (Monte Carlo SE of a 95 % coverage ~ 0.35 points);
    # all replications in one call via the leading axis
    reps = 4000
    rng = np.random.default_rng(20240 + n)
    cell = rng.choice(4, size=(reps, n), p=cells)
    x = np.isin(cell, (0, 1)).astype(float)
    y = np.isin(cell, (0, 2)).astype(float)
    true = cells[1] - cells[2]
    res = mcnemar(x, y, confidence_level=0.95)
    coverage = np.mean((res.ci_low <= true) & (true <= res.ci_high))
    assert abs(coverage - 0.95) <= 0.02, coverage


def test_registered():
    spec = REGISTRY["mcnemar"]
    assert spec.binary_only and spec.family == "binary" and spec.func is mcnemar


def test_non_binary_input():
    with pytest.raises(TestNotApplicableError,
                       match=r"binary \(0/1\) scores; `y` has 1 value\(s\) outside \{0, 1\} "
                             r"\(e.g. 0.5\)"):
        mcnemar([1, 0, 1], [1, 0.5, 0])


@pytest.mark.parametrize("kwargs, error, match", [
    ({"method": "chi2"}, ParameterError, (r"`method` must be one of 'exact', 'midp', "
                                          r"'asymptotic'; got 'chi2'")),
    ({"correction": "yes"}, ParameterTypeError, r"`correction` must be True or False"),
    ({"null_value": 0.1}, ParameterError, r"`null_value` must be 0 for McNemar"),
    ({"alternative": "two_sided"}, ParameterError, r"`alternative` must be one of"),
    ({"confidence_level": 0}, ParameterError, r"`confidence_level` must be in"),
])
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        mcnemar([1, 0, 1], [1, 1, 0], **kwargs)


# ----------------------------------------------------------------- pair-free batch
@pytest.mark.parametrize("method", ["exact", "midp", "asymptotic"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_compare_batch_from_products_equals_the_per_pair_function(method, alternative):
    from multistat import cube
    from multistat.comparison import compare

    rng = np.random.default_rng(4)
    S, n = 5, 150
    score = (rng.random((S, 1, n)) < np.linspace(0.4, 0.8, S)[:, None, None]).astype(float)
    score[4] = score[3]  # no discordant pairs for (s3, s4)
    ds = cube.make_dataset("d", score, systems=[f"s{i}" for i in range(S)], metrics=["acc"],
                           instances=range(n), kind=["binary"])
    t = compare(cube.make_study({"d": ds}), tests=("mcnemar",), alternative=alternative,
                test_options={"mcnemar": {"method": method, "correction": False}},
                effect_sizes=False, correction="none")
    for _, row in t.iterrows():
        a, b = int(row.system_a[1:]), int(row.system_b[1:])
        ref = mcnemar(score[a, 0], score[b, 0], method=method, correction=False,
                      alternative=alternative)
        for col in ("statistic", "p_value", "estimate", "ci_low", "ci_high"):
            assert row[col] == getattr(ref, col) or (np.isnan(row[col]) and
                                                     np.isnan(getattr(ref, col))), col
        assert row["note"] == ref.note
    assert (t[(t.system_a == "s3") & (t.system_b == "s4")]["p_value"] == 1.0).all()
