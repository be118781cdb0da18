"""Sign test and Wilcoxon signed-rank test: agreement with scipy in every exposed mode,
direction, symmetry, Hodges-Lehmann estimate and intervals (coverage by simulation),
degenerate input and errors."""

import warnings

import numpy as np
import pytest
from scipy import stats

from multistat.errors import ConstantInputWarning, ParameterError, ParameterTypeError
from multistat.significance import REGISTRY, sign_test, wilcoxon
from multistat.significance.rank import (
    hodges_lehmann,
    signed_rank_pmf,
    walsh_order_statistics,
)

ALTS = ["two-sided", "less", "greater"]


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


@pytest.fixture
def tied_batch():
    """Rows with ties and zeros (scores on a 0.5 grid)."""
    rng = np.random.default_rng(7)
    x = np.round(rng.normal(0.3, 1.0, size=(25, 12)) * 2) / 2
    y = np.round(rng.normal(0.0, 1.0, size=(25, 12)) * 2) / 2
    return x, y


# ----------------------------------------------------------------------------- sign test
@pytest.mark.parametrize("alternative", ALTS)
@pytest.mark.parametrize("null_value", [0.0, 0.5])
def test_sign_matches_binomtest(tied_batch, alternative, null_value):
    # reference: scipy.stats.binomtest(#positives, #non-zero, 0.5, alternative)
    x, y = tied_batch
    res = sign_test(x, y, alternative=alternative, null_value=null_value)
    d = x - y - null_value
    for i in range(d.shape[0]):
        k, m = int((d[i] > 0).sum()), int((d[i] != 0).sum())
        ref = stats.binomtest(k, m, 0.5, alternative=alternative).pvalue
        assert abs(res.p_value[i] - ref) <= 1e-10
        assert res.statistic[i] == k and res.n[i] == m
    np.testing.assert_array_equal(res.estimate, np.median(x - y, axis=-1))


@pytest.mark.parametrize("alternative", ALTS)
def test_sign_split_zeros(alternative):
    # 3 zeros -> one dropped, one to each side: k = 5 + 1, m = 5 + 2 + 2
    d = np.r_[np.ones(5), -np.ones(2), np.zeros(3)]
    res = sign_test(d, np.zeros_like(d), alternative=alternative, zero_method="split")
    ref = stats.binomtest(6, 9, 0.5, alternative=alternative).pvalue
    assert abs(res.p_value - ref) <= 1e-12 and res.n == 9 and res.extra["n_zero"] == 3


def test_sign_direction():
    rng = np.random.default_rng(2)
    y = rng.normal(size=40)
    x = y + 1 + rng.normal(0, 0.3, size=40)
    assert sign_test(x, y, alternative="greater").p_value < 1e-8
    assert sign_test(x, y, alternative="less").p_value > 0.99


def test_sign_interval_is_order_statistics():
    # n = 30, 95 %: k = 10 since P(B <= 9) = 0.0214 <= 0.025 < P(B <= 10) = 0.0494
    # (binomial(30, 1/2) cdf from scipy.stats.binom)
    assert stats.binom.cdf(9, 30, 0.5) <= 0.025 < stats.binom.cdf(10, 30, 0.5)
    rng = np.random.default_rng(4)
    d = rng.exponential(size=30)
    res = sign_test(d, np.zeros(30))
    s = np.sort(d)
    assert res.ci_low == s[9] and res.ci_high == s[20]
    greater = sign_test(d, np.zeros(30), alternative="greater")
    # one-sided 95 %: largest k with P(B <= k-1) <= 0.05 -> k = 11 (P(B <= 10) = 0.049)
    assert greater.ci_low == s[10] and greater.ci_high == np.inf


def test_sign_interval_unbounded_when_n_small():
    res = sign_test([1.0, 2.0, 3.0, 4.0, 5.0], np.zeros(5))
    assert res.ci_low == -np.inf and res.ci_high == np.inf and "too small" in res.note


def test_sign_interval_coverage():
    # 4000 replications, n = 30, skewed (exponential) differences, true median ln 2.
    # The order-statistic interval is conservative: its exact coverage is
    # 1 - 2 P(B <= 9) = 0.9572 (binomial(30, 1/2)).
    reps, n = 4000, 30
    rng = np.random.default_rng(30)
    d = rng.exponential(size=(reps, n))
    res = sign_test(d, np.zeros_like(d))
    cover = np.mean((res.ci_low <= np.log(2)) & (np.log(2) <= res.ci_high))
    exact = 1 - 2 * stats.binom.cdf(9, 30, 0.5)
    assert abs(cover - 0.95) <= 0.02
    assert abs(cover - exact) <= 3 * np.sqrt(exact * (1 - exact) / reps)


def test_sign_all_zero():
    with pytest.warns(ConstantInputWarning, match="all differences equal the null value"):
        res = sign_test([1.0, 2.0], [1.0, 2.0])
    assert np.isnan(res.p_value) and res.n == 0 and "no signs" in res.note


# ----------------------------------------------------------------------------- Wilcoxon
def _flip_reference(d, zero_method, alternative):
    """p-value of W+ by complete enumeration of the 2^n sign flips (independent reference:
    ranks of |d| from scipy.stats.rankdata, zeros handled as scipy documents)."""
    n = d.size
    absd = np.abs(d)
    if zero_method == "wilcox":
        keep = d != 0
        ranks = np.zeros(n)
        ranks[keep] = stats.rankdata(absd[keep])
        const = 0.0
    else:
        ranks = stats.rankdata(absd)
        const = ranks[d == 0].sum() / 2 if zero_method == "zsplit" else 0.0
        ranks = np.where(d == 0, 0.0, ranks)
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)
    null = (signs * np.sign(d) > 0) @ ranks + const
    obs = ranks[d > 0].sum() + const
    greater, less = np.mean(null >= obs - 1e-9), np.mean(null <= obs + 1e-9)
    return {"greater": greater, "less": less,
            "two-sided": min(1.0, 2 * min(greater, less))}[alternative]


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
@pytest.mark.parametrize("correction", [False, True])
@pytest.mark.parametrize("alternative", ALTS)
def test_wilcoxon_grid_approx(tied_batch, zero_method, correction, alternative):
    # reference: scipy.stats.wilcoxon(method="asymptotic", axis=-1) on the whole batch
    x, y = tied_batch
    res = _quiet(wilcoxon, x, y, zero_method=zero_method, method="approx",
                 correction=correction, alternative=alternative)
    ref = _quiet(stats.wilcoxon, x, y, zero_method=zero_method, method="asymptotic",
                 correction=correction, alternative=alternative, axis=-1)
    np.testing.assert_allclose(res.p_value, ref.pvalue, rtol=0, atol=1e-10)
    if alternative != "two-sided":  # scipy reports W+ (and a signed z) only when one-sided
        np.testing.assert_allclose(res.statistic, ref.statistic, rtol=0, atol=1e-10)
        np.testing.assert_allclose(res.extra["z"], ref.zstatistic, rtol=0, atol=1e-10)
    else:
        np.testing.assert_allclose(np.minimum(res.statistic, 12 * 13 / 2 - res.statistic -
                                              _zero_rank_sum(x - y, zero_method)),
                                   ref.statistic, rtol=0, atol=1e-10)


def _zero_rank_sum(d, zero_method):
    """Rank mass that is in neither W+ nor W- (Pratt's zeros)."""
    if zero_method == "pratt":
        z = (d == 0).sum(-1)
        return z * (z + 1) / 2
    if zero_method == "wilcox":
        z = (d == 0).sum(-1)
        n = d.shape[-1]
        return n * (n + 1) / 2 - (n - z) * (n - z + 1) / 2
    return 0.0


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
@pytest.mark.parametrize("method", ["exact", "auto"])
@pytest.mark.parametrize("alternative", ALTS)
def test_wilcoxon_grid_exact(tied_batch, zero_method, method, alternative):
    # With ties/zeros and n = 12, multistat "exact" (and "auto", scipy's rule) is the exact
    # sign-flip distribution. References: scipy.stats.wilcoxon with method=
    # PermutationMethod() (complete enumeration of 2^12 flips) resp. method="auto" for row 0
    # (4 zeros and 4 tied |d|; scipy takes ~2 s a row); complete enumeration written out
    # here for all 25 rows. (The continuity correction does not apply to exact p-values.)
    x, y = tied_batch
    for correction in (False, True):
        res = _quiet(wilcoxon, x, y, zero_method=zero_method, method=method,
                     correction=correction, alternative=alternative)
        for i in range(x.shape[0]):
            ref = _flip_reference(x[i] - y[i], zero_method, alternative)
            assert abs(res.p_value[i] - ref) <= 1e-10, i
    scipy_method = stats.PermutationMethod() if method == "exact" else "auto"
    for i in (0,):
        ref = _quiet(stats.wilcoxon, x[i], y[i], zero_method=zero_method,
                     method=scipy_method, alternative=alternative)
        assert abs(res.p_value[i] - ref.pvalue) <= 1e-10, i
        if alternative != "two-sided":
            assert abs(res.statistic[i] - ref.statistic) <= 1e-10


@pytest.mark.parametrize("alternative", ALTS)
@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_larger_n(alternative, correction):
    # n = 30: without ties "auto" is exact (scipy "exact"), with ties it is the normal
    # approximation (scipy "auto" -> "asymptotic"); method="exact" with ties at n = 16
    # against complete enumeration of the 2^16 flips
    rng = np.random.default_rng(8)
    x = rng.normal(0.3, 1, size=(10, 30))
    y = rng.normal(0.0, 1, size=(10, 30))
    xt, yt = np.round(x, 1), np.round(y, 1)
    for a, b, method, scipy_method in [
        (x, y, "auto", "exact"), (x, y, "exact", "exact"), (x, y, "approx", "asymptotic"),
        (xt, yt, "auto", "asymptotic"),
    ]:
        res = _quiet(wilcoxon, a, b, method=method, correction=correction,
                     alternative=alternative)
        ref = _quiet(stats.wilcoxon, a, b, method=scipy_method, correction=correction,
                     alternative=alternative, axis=-1)
        np.testing.assert_allclose(res.p_value, ref.pvalue, rtol=0, atol=1e-10)
    for i in range(3):  # scipy "auto" decides per call: one row at a time
        ref = _quiet(stats.wilcoxon, xt[i], yt[i], correction=correction,
                     alternative=alternative)
        assert abs(_quiet(wilcoxon, xt[i], yt[i], correction=correction,
                          alternative=alternative).p_value - ref.pvalue) <= 1e-10
    res = _quiet(wilcoxon, xt[:3, :16], yt[:3, :16], method="exact", alternative=alternative)
    for i in range(3):
        ref = _flip_reference(xt[i, :16] - yt[i, :16], "wilcox", alternative)
        assert abs(res.p_value[i] - ref) <= 1e-10


def test_wilcoxon_null_value_shifts(tied_batch):
    x, y = tied_batch
    res = _quiet(wilcoxon, x, y, null_value=0.5, method="approx", alternative="greater")
    for i in range(x.shape[0]):
        ref = _quiet(stats.wilcoxon, x[i] - y[i] - 0.5, method="asymptotic",
                     alternative="greater")
        assert abs(res.p_value[i] - ref.pvalue) <= 1e-10


@pytest.mark.parametrize("method", ["exact", "approx", "auto"])
def test_wilcoxon_direction(method):
    # the peer-tool bug: one-sided direction reversed. x clearly greater -> "greater" small
    rng = np.random.default_rng(9)
    y = rng.normal(size=25)
    x = y + 1.0 + rng.normal(0, 0.5, size=25)
    greater = wilcoxon(x, y, alternative="greater", method=method)
    less = wilcoxon(x, y, alternative="less", method=method)
    assert greater.p_value < 1e-4 and less.p_value > 0.999
    assert greater.statistic > 25 * 26 / 4 and greater.estimate > 0.5


@pytest.mark.parametrize("method", ["exact", "approx"])
def test_wilcoxon_swap_symmetry(tied_batch, method):
    x, y = tied_batch
    a = _quiet(wilcoxon, x, y, method=method)
    b = _quiet(wilcoxon, y, x, method=method)
    np.testing.assert_allclose(a.estimate, -b.estimate, atol=1e-15)
    np.testing.assert_allclose(a.p_value, b.p_value, atol=1e-13)
    np.testing.assert_allclose(a.ci_low, -b.ci_high, atol=1e-15)


def test_signed_rank_pmf_matches_scipy_exact():
    # untied: the pmf of W+ for n = 20 reproduces scipy's exact one-sided p-values
    pmf = signed_rank_pmf(2 * np.arange(1, 21)[None, :])[0, ::2]
    assert abs(pmf.sum() - 1) < 1e-14
    # reference: scipy's exact p for data whose positive ranks are 1..7 (W+ = 28)
    ref = stats.wilcoxon(np.r_[np.arange(1.0, 8.0), -np.arange(8.0, 21.0)],
                         method="exact", alternative="less").pvalue  # W+ = 28
    assert abs(pmf[:29].sum() - ref) <= 1e-12


def test_hodges_lehmann_brute_force():
    rng = np.random.default_rng(12)
    for n in (7, 40, 800):  # n = 800 uses the O(n)-memory selection path
        d = np.round(rng.standard_t(4, size=n), 2)
        i, j = np.triu_indices(n)
        walsh = np.sort((d[i] + d[j]) / 2)
        est, _low, _high = hodges_lehmann(d, np.zeros(n))
        assert est == np.median(walsh)
    d = np.sort(np.round(rng.normal(size=(3, 120)), 1), axis=-1)
    ks = [0, 17, 18, 3629, 3630, 3631, 7258, 7259]  # adjacent ranks: the "next" shortcut
    np.testing.assert_array_equal(walsh_order_statistics(d, ks),
                                  walsh_order_statistics(d, ks, dense_row_max=1))


def test_hodges_lehmann_interval_inverts_exact_test():
    # the exact interval is the set of shifts theta not rejected by scipy's exact two-sided
    # Wilcoxon test of d - theta at the achieved level (n = 20: k = 53, alpha* = 0.0446)
    rng = np.random.default_rng(13)
    d = rng.normal(0.4, 1.0, size=20)
    res = wilcoxon(d, np.zeros(20), method="exact")
    i, j = np.triu_indices(20)
    walsh = np.sort((d[i] + d[j]) / 2)
    k = int(np.flatnonzero(walsh == res.ci_low)[0]) + 1
    assert walsh[-k] == res.ci_high
    eps = 1e-9
    p_in = stats.wilcoxon(d - (res.ci_low + eps), method="exact").pvalue
    p_out = stats.wilcoxon(d - (res.ci_low - eps), method="exact").pvalue
    assert p_in > 0.05 >= p_out
    assert res.estimate == np.median(walsh)


@pytest.mark.parametrize("n", [30, 60])
def test_hodges_lehmann_interval_coverage(n):
    # 4000 replications, symmetric t(5) differences centred at 0.3; n = 30 uses the exact
    # critical value, n = 60 the normal approximation
    reps = 4000
    rng = np.random.default_rng(100 + n)
    d = 0.3 + rng.standard_t(5, size=(reps, n))
    res = wilcoxon(d, np.zeros_like(d), method="auto" if n <= 50 else "approx")
    cover = np.mean((res.ci_low <= 0.3) & (0.3 <= res.ci_high))
    assert abs(cover - 0.95) <= 0.02, cover


def test_wilcoxon_degenerate():
    with pytest.warns(ConstantInputWarning, match=r"Wilcoxon test: all differences.*1 of 2"):
        res = wilcoxon([[1.0, 2.0, 3.0], [1.0, 2.0, 4.0]], [[1.0, 2.0, 3.0], [0.0, 1.0, 1.0]])
    assert np.isnan(res.p_value[0]) and np.isfinite(res.p_value[1])
    assert "W+ undefined" in res.note[0]


def test_registered():
    assert REGISTRY["wilcoxon"].func is wilcoxon and REGISTRY["wilcoxon"].assumes_symmetric
    assert REGISTRY["sign"].func is sign_test and not REGISTRY["sign"].assumes_symmetric
    assert REGISTRY["sign"].statistic_kinds == ("median",)


@pytest.mark.parametrize("func, kwargs, error, match", [
    (wilcoxon, {"zero_method": "drop"}, ParameterError,
     r"`zero_method` must be one of 'wilcox', 'pratt', 'zsplit'; got 'drop'"),
    (wilcoxon, {"method": "permutation"}, ParameterError, r"`method` must be one of 'auto'"),
    (wilcoxon, {"correction": 1}, ParameterTypeError, r"`correction` must be True or False"),
    (wilcoxon, {"alternative": "greather"}, ParameterError, r"`alternative` must be one of"),
    (sign_test, {"zero_method": "wilcox"}, ParameterError,
     r"`zero_method` must be one of 'drop', 'split'; got 'wilcox'"),
    (sign_test, {"confidence_level": 95}, ParameterError, r"`confidence_level` must be in"),
])
def test_bad_parameters(func, kwargs, error, match):
    with pytest.raises(error, match=match):
        func([1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 1.0, 1.0], **kwargs)


def test_other_levels_recomputed():
    rng = np.random.default_rng(40)
    x, y = rng.normal(0.2, 1, size=(3, 40)), rng.normal(0, 1, size=(3, 40))
    for func in (wilcoxon, sign_test):
        low, high = func(x, y).confidence_interval(0.8)
        ref = func(x, y, confidence_level=0.8)
        np.testing.assert_array_equal(low, ref.ci_low)
        np.testing.assert_array_equal(high, ref.ci_high)
        assert np.all((ref.ci_high - ref.ci_low) <= (func(x, y).ci_high - func(x, y).ci_low))


def test_exact_method_beyond_auto_range():
    # method="exact" at n = 60 (no ties): the pmf DP agrees with the normal approximation
    # to within its error, and matches scipy's exact p-value (scipy allows exact at any n)
    rng = np.random.default_rng(41)
    x, y = rng.normal(0.3, 1, size=60), rng.normal(0, 1, size=60)
    res = wilcoxon(x, y, method="exact", alternative="greater")
    ref = stats.wilcoxon(x, y, method="exact", alternative="greater").pvalue
    assert abs(res.p_value - ref) <= 1e-10


def _walsh_brute(d, ks):
    """All Walsh averages (d_i + d_j)/2, i <= j, written out and sorted (reference)."""
    n = d.shape[-1]
    i, j = np.triu_indices(n)
    return np.sort((d[:, i] + d[:, j]) / 2.0, axis=-1)[:, ks]


@pytest.mark.parametrize("kind", ["normal", "rounded", "likert", "three_values", "constant",
                                  "scales", "ulps", "zeros"])
def test_walsh_selection_across_rows_matches_brute_force(kind):
    # the implicit selection (forced with dense_row_max=1) against complete enumeration,
    # on data that stress its exact counting: ties of every size, values one ulp apart,
    # rows on scales 1e-12..1e12 in one batch, ranks at the ends and adjacent ranks
    rng = np.random.default_rng(50)
    shape = (12, 240)
    d = {"normal": rng.normal(0.2, 1, shape),
         "rounded": np.round(rng.normal(0.2, 1, shape), 1),
         "likert": rng.integers(-4, 5, shape).astype(float),
         "three_values": rng.integers(-1, 2, shape).astype(float),
         "constant": np.full(shape, 0.25),
         "scales": rng.normal(size=shape) * np.logspace(-12, 12, shape[0])[:, None],
         "ulps": 1.0 + rng.integers(0, 4, shape) * 2.0**-52,
         "zeros": np.where(rng.random(shape) < 0.4, 0.0, rng.exponential(size=shape)),
         }[kind]
    d = np.sort(d, axis=-1)
    n_walsh = 240 * 241 // 2
    ks = [0, 1, 2000, (n_walsh - 1) // 2, n_walsh // 2, n_walsh - 2001, n_walsh - 1]
    ks += sorted(rng.choice(n_walsh, 4, replace=False).tolist())
    ref = _walsh_brute(d, ks)
    np.testing.assert_array_equal(walsh_order_statistics(d, ks, dense_row_max=1), ref)


@pytest.mark.parametrize("kind", ["normal", "rounded", "likert"])
def test_walsh_selection_fallback_rounds(kind):
    # tiny enumeration budgets (dense_row_max) force many narrowing rounds (interpolated
    # and sampled pivots, tie detection, the safety enumeration): still exact
    rng = np.random.default_rng(51)
    d = {"normal": rng.normal(size=(8, 150)),
         "rounded": np.round(rng.normal(size=(8, 150)), 1),
         "likert": rng.integers(-2, 3, (8, 150)).astype(float)}[kind]
    d = np.sort(d, axis=-1)
    n_walsh = 150 * 151 // 2
    ks = sorted({0, 700, 701, (n_walsh - 1) // 2, n_walsh // 2, n_walsh - 1})  # distinct
    ref = _walsh_brute(d, ks)
    for cap in (1, 8, 40):
        np.testing.assert_array_equal(walsh_order_statistics(d, ks, dense_row_max=cap), ref)


def test_walsh_selection_does_not_depend_on_the_seed():
    d = np.sort(np.random.default_rng(52).standard_t(3, size=(20, 400)), axis=-1)
    ks = [30000, 40099, 40100, 50000]
    a = walsh_order_statistics(d, ks, dense_row_max=1)
    np.testing.assert_array_equal(a, _walsh_brute(d, ks))
    for seed in (1, 2):
        np.testing.assert_array_equal(
            walsh_order_statistics(d, ks, dense_row_max=1, _seed=seed), a)


def test_walsh_selection_threads_and_batches(monkeypatch):
    # rows split into blocks run by threads give the same (exact) order statistics
    from multistat.significance import _walsh

    rng = np.random.default_rng(53)
    d = np.sort(np.round(rng.normal(0.1, 1, size=(9, 200)), 2), axis=-1)
    n_walsh = 200 * 201 // 2
    ks = [0, 5000, (n_walsh - 1) // 2, n_walsh // 2, n_walsh - 1]
    ref = _walsh_brute(d, ks)
    monkeypatch.setattr(_walsh, "_WALSH_THREAD_MIN", 0)
    monkeypatch.setattr(_walsh, "_WALSH_THREADS", 2)
    np.testing.assert_array_equal(walsh_order_statistics(d, ks, dense_row_max=1), ref)
    monkeypatch.setattr(_walsh, "_WALSH_BLOCK", 1)  # 1 row per block
    np.testing.assert_array_equal(walsh_order_statistics(d, ks, dense_row_max=1), ref)


# ------------------------------------------------------- shared sort info, no hidden state
def test_info_shared_by_wilcoxon_and_effect_sizes_gives_the_same_results(tied_batch):
    # one signed_rank_info(x - y) passed explicitly = each function sorting on its own
    from multistat import effect
    from multistat.significance.rank import signed_rank_info

    x, y = tied_batch
    info = signed_rank_info(x - y)
    for kw in ({}, {"method": "exact"}, {"zero_method": "pratt"},
               {"alternative": "less", "correction": True}):
        a, b = _quiet(wilcoxon, x, y, **kw), _quiet(wilcoxon, x, y, info=info, **kw)
        for f in ("statistic", "p_value", "estimate", "ci_low", "ci_high", "n"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
        np.testing.assert_array_equal(a.confidence_interval(0.8), b.confidence_interval(0.8))
    for func in (effect.wilcoxon_r, effect.hodges_lehmann):
        a, b = _quiet(func, x, y), _quiet(func, x, y, info=info)
        for f in ("estimate", "ci_low", "ci_high"):
            np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    np.testing.assert_array_equal(hodges_lehmann(x, y, info=info), hodges_lehmann(x, y))
    a, b = _quiet(effect.effect_sizes, x, y), _quiet(effect.effect_sizes, x, y, info=info)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_info_selects_each_walsh_rank_once(monkeypatch):
    # the Wilcoxon test and the HL effect size (two-sided, auto) need the same four ranks
    from multistat import effect
    from multistat.significance import _signrank
    from multistat.significance.rank import signed_rank_info

    calls = []
    real = _signrank.walsh_order_statistics
    monkeypatch.setattr(_signrank, "walsh_order_statistics",
                        lambda s, r, **kw: calls.append(list(r)) or real(s, r, **kw))
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.2, 1, (4, 80)), rng.normal(0, 1, (4, 80))
    info = signed_rank_info(x - y)
    wilcoxon(x, y, info=info)
    effect.hodges_lehmann(x, y, info=info)
    assert len(calls) == 1 and len(calls[0]) == 4


def test_info_for_other_differences_is_an_error(tied_batch):
    from multistat import effect
    from multistat.significance.rank import signed_rank_info

    x, y = tied_batch
    info = signed_rank_info(x[:5] - y[:5])
    with pytest.raises(ParameterError, match=r"wilcoxon: `info` was computed for other"):
        wilcoxon(x, y, info=info)
    info = signed_rank_info(y - x)
    with pytest.raises(ParameterError, match=r"wilcoxon_r: `info`"):
        effect.wilcoxon_r(x, y, info=info)


def test_rank_modules_keep_no_mutable_module_state():
    # the old one-entry caches (|d| sort, Walsh interval) were module-level dicts; only the
    # documented lru_cache of a pure function of (n, tail, exact) may remain
    import types

    from multistat.significance import _binomial, _signrank, _walsh, rank, sign

    for mod in (rank, sign, _signrank, _walsh, _binomial):
        for name, value in vars(mod).items():
            if isinstance(value, types.ModuleType) or name.startswith("__"):
                continue
            assert not isinstance(value, (dict, list, set, bytearray, np.ndarray)), \
                f"{mod.__name__}.{name} is mutable module state"
    assert _signrank._signed_rank_lower_rank.cache_info().maxsize == 64


@pytest.mark.parametrize("alternative", ALTS)
def test_binomial_helper_matches_binomtest_and_midp_sums(alternative):
    # reference: scipy.stats.binomtest(k, m, 0.5) for every k <= m <= 25; mid-p: half the
    # point probability off the tail(s) (Fagerland et al. 2013), from binom.pmf sums
    from multistat.significance._binomial import binom_half_pvalue

    ks, ms = np.array([(k, m) for m in range(1, 26) for k in range(m + 1)]).T
    got = binom_half_pvalue(ks, ms, alternative)
    ref = [stats.binomtest(k, m, 0.5, alternative=alternative).pvalue for k, m in zip(ks, ms)]
    np.testing.assert_allclose(got, ref, rtol=1e-13, atol=1e-300)
    mid = binom_half_pvalue(ks, ms, alternative, mid=True)
    for k, m, p in zip(ks, ms, mid):
        pmf = stats.binom.pmf(np.arange(m + 1), m, 0.5)
        lo, hi = pmf[:k].sum() + pmf[k] / 2, pmf[k + 1:].sum() + pmf[k] / 2
        ref = {"less": lo, "greater": hi, "two-sided": min(1.0, 2 * min(lo, hi))}[alternative]
        assert abs(p - ref) <= 1e-13


# ------------------------------------------------------------------ slabs under a budget
def test_slabs_of_rows_give_identical_results():
    # rows are independent: a 16 MiB budget (several slabs) = one slab, bit for bit,
    # for both tests, their other-level intervals, and the warnings (raised once)
    rng = np.random.default_rng(61)
    x = np.round(rng.normal(0.1, 1, (1500, 400)), 1)
    y = np.round(rng.normal(0.0, 1, (1500, 400)), 1)
    x[3] = y[3]  # one all-zero row: one ConstantInputWarning however many slabs
    for func, kw in ((wilcoxon, {}), (sign_test, {}), (wilcoxon, {"method": "approx"})):
        sub = (slice(0, 120),) if func is wilcoxon else (slice(None),)
        xs, ys = x[sub], y[sub]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            small = func(xs, ys, memory_limit="16MiB", **kw)
        assert sum(issubclass(w.category, ConstantInputWarning) for w in caught) == 1
        big = _quiet(func, xs, ys, memory_limit="4GiB", **kw)
        for f in ("statistic", "p_value", "estimate", "ci_low", "ci_high", "n", "note"):
            np.testing.assert_array_equal(getattr(small, f), getattr(big, f))
        for k in big.extra:
            np.testing.assert_array_equal(small.extra[k], big.extra[k])
        np.testing.assert_array_equal(small.confidence_interval(0.8),
                                      big.confidence_interval(0.8))


def test_walsh_selection_same_under_any_budget():
    d = np.sort(np.round(np.random.default_rng(62).normal(size=(300, 300)), 1), axis=-1)
    N = 300 * 301 // 2
    ks = [100, N // 2 - 1, N // 2, N - 101]
    ref = walsh_order_statistics(d, ks, dense_row_max=1, memory_limit="4GiB")
    np.testing.assert_array_equal(
        walsh_order_statistics(d, ks, dense_row_max=1, memory_limit="16MiB"), ref)


def test_sort_positions_use_small_integer_types():
    from multistat.significance.rank import signed_rank_info

    for n, dtype in ((50, np.int16), (32_767, np.int16), (32_768, np.int32)):
        info = signed_rank_info(np.random.default_rng(n).normal(size=(1, n)))
        assert all(a.dtype == dtype for a in info.abs_sort)


# ------------------------------------------- W+ from one sort of keys (no argsort, no ranks)
@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
def test_signed_rank_sums_equal_the_rank_array_computation(zero_method):
    # signed_rank_sums (keys 2*bits(|d|) + sign, one np.sort) must give the very numbers
    # of signed_rank_parts (argsort + mid-rank array): W+, mean and sd bit for bit
    from multistat.significance._signrank import signed_rank_parts, signed_rank_sums

    rng = np.random.default_rng(71)
    d = np.concatenate([
        rng.normal(size=(5, 300)),                                 # untied
        np.round(rng.normal(size=(5, 300)), 1),                    # ties across signs
        rng.integers(-3, 4, (5, 300)).astype(float),               # zeros and heavy ties
        np.where(rng.random((5, 300)) < 0.3, -0.0, rng.normal(size=(5, 300))),  # -0.0
        np.zeros((1, 300)), np.full((1, 300), -2.5)])
    ref = signed_rank_parts(d, zero_method)
    got = signed_rank_sums(d, zero_method)
    for k in ("w_plus", "mean", "sd", "count", "n_zero", "has_ties"):
        np.testing.assert_array_equal(got[k], ref[k], err_msg=k)
    absd = np.sort(np.abs(d), axis=-1)
    np.testing.assert_array_equal(got["untied"], ~np.any(absd[:, 1:] == absd[:, :-1], -1))


def test_wilcoxon_normal_approximation_path_matches_scipy_on_tied_rows():
    # n > 50 rounded scores: the key-sort path; p-values as scipy's normal approximation
    rng = np.random.default_rng(72)
    x = np.round(rng.normal(size=(30, 400)), 2)
    y = np.round(rng.normal(0.05, 1, size=(30, 400)), 2)
    for zm in ("wilcox", "pratt", "zsplit"):
        res = wilcoxon(x, y, zero_method=zm)
        ref = stats.wilcoxon(x, y, zero_method=zm, method="approx", axis=-1)
        np.testing.assert_allclose(res.p_value, ref.pvalue, rtol=1e-12, atol=0)


@pytest.mark.parametrize("kind", ["grid", "normal", "few"])
def test_distinct_walsh_decides_like_forming_all_averages(kind):
    # the spread-subset and prefix shortcuts must decide "more than limit distinct
    # averages" exactly as forming all u(u+1)/2 averages does
    from multistat.significance.rank import _distinct_walsh

    rng = np.random.default_rng(73)
    for size, limit in ((10, 30), (40, 200), (120, 4096), (300, 4096), (1500, 4096)):
        u = {"grid": np.unique(rng.integers(-size, size, size) * 0.5),
             "normal": np.unique(rng.normal(size=size)),
             "few": np.unique(rng.integers(0, 3 * size, size) * 0.01)}[kind]
        i, j = np.triu_indices(u.size)
        full = np.unique((u[i] + u[j]) / 2)
        got = _distinct_walsh(u, limit, {})
        if full.size > limit:
            assert got is None
        else:
            np.testing.assert_array_equal(got, full)


def test_sign_interval_rows_equal_the_per_row_scan():
    # the vectorized inversion (int32 tie runs, p-values looked up per distinct (k, m))
    # against sign_interval, the per-row scan over values and gaps
    from multistat.significance._inversion import sign_interval, sign_interval_rows

    rng = np.random.default_rng(74)
    for n in (1, 2, 7, 30, 81):
        d = np.concatenate([rng.normal(size=(4, n)), np.round(rng.normal(size=(4, n)), 1),
                            rng.integers(-2, 3, (4, n)).astype(float)])
        s = np.sort(d, axis=-1)
        for alt in ("two-sided", "less", "greater"):
            # (levels whose alpha no binomial p-value equals: the row version compares
            # with a 1e-12 slack, the scan without)
            for level in (0.9137, 0.95):
                low, high = sign_interval_rows(s, alternative=alt, confidence_level=level)
                for r in range(s.shape[0]):
                    ref = sign_interval(s[r], alternative=alt, confidence_level=level)
                    np.testing.assert_array_equal([low[r], high[r]], ref)


def test_sign_test_uses_the_memory_it_declares():
    # peak traced memory of sign_test on a chunk of pairs (the pair chunk X[ia], X[ib]
    # included, as the batch forms it) stays within SIGN_BYTES_PER_VALUE
    import tracemalloc

    from multistat.significance.sign import SIGN_BYTES_PER_VALUE

    rng = np.random.default_rng(75)
    X = np.round(rng.normal(size=(12, 2, 3000)), 4)
    ia, ib = np.triu_indices(12, 1)
    sign_test(X[ia[:2]], X[ib[:2]])  # imports and scipy tables outside the measurement
    tracemalloc.start()
    try:
        sign_test(X[ia], X[ib], memory_limit=2**34)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / (len(ia) * 2 * 3000) <= SIGN_BYTES_PER_VALUE


def test_spread_subset_check_marks_only_rows_with_too_many_averages():
    # the vectorized first try of _distinct_walsh: a row it marks has more than the
    # limit of distinct Walsh averages (checked by forming them all); generic rows are
    # decided by it, coarse-grid rows are left to the exact per-row path
    from multistat.significance.rank import _SCAN_MAX_BREAKPOINTS, _spread_subset_check

    rng = np.random.default_rng(76)
    d = np.concatenate([np.round(rng.normal(size=(3, 900)), 3),     # many distinct
                        np.round(rng.normal(size=(3, 900)), 1),     # coarse grid
                        rng.integers(0, 150, (2, 900)) * 0.5])      # 150 values
    srt = np.sort(d, axis=-1)
    step = srt[:, 1:] != srt[:, :-1]
    n_distinct = 1 + step.sum(-1)
    rows = np.arange(d.shape[0])
    too_many = np.zeros(d.shape[0], bool)
    _spread_subset_check(srt, step, n_distinct, rows, too_many)
    for r in rows:
        u = np.unique(srt[r])
        i, j = np.triu_indices(u.size)
        truth = np.unique((u[i] + u[j]) / 2).size > _SCAN_MAX_BREAKPOINTS
        assert not too_many[r] or truth
    assert too_many[:3].all() and not too_many[3:].any()


@pytest.mark.parametrize("zero_method", ["wilcox", "pratt", "zsplit"])
def test_rank_sums_from_the_sorted_differences_equal_the_key_sort(zero_method):
    # the O(n) merge over np.sort(d) (what the Walsh averages need anyway) against the
    # sort of sign-tagged keys: every field bit for bit, on ties across signs, zeros of
    # both signs, NaN rows, infinities, subnormals and huge values
    from multistat.significance._signrank import signed_rank_sums

    rng = np.random.default_rng(71)
    n = 400
    rows = [rng.normal(size=n), np.round(rng.normal(size=n), 1),
            rng.integers(-3, 4, n).astype(float), np.zeros(n), -np.zeros(n),
            np.where(rng.random(n) < 0.3, -0.0, rng.integers(-2, 3, n).astype(float)),
            rng.integers(-3, 4, n) * 5e-324, rng.normal(size=n) * 1e300,
            np.r_[np.inf, -np.inf, rng.normal(size=n - 2)], np.full(n, -2.5),
            np.r_[np.nan, rng.normal(size=n - 1)], np.full(n, np.nan)]
    d = np.stack(rows)
    ref = signed_rank_sums(d, zero_method)
    got = signed_rank_sums(d, zero_method, sorted_d=np.sort(d, axis=-1))
    for key in ref:
        np.testing.assert_array_equal(got[key], ref[key], err_msg=key)
    for n in (1, 2, 3):  # tiny rows
        e = np.round(rng.normal(size=(20, n)), 0)
        ref = signed_rank_sums(e, zero_method)
        got = signed_rank_sums(e, zero_method, sorted_d=np.sort(e, axis=-1))
        for key in ref:
            np.testing.assert_array_equal(got[key], ref[key], err_msg=key)


def test_exact_tied_interval_scan_is_bounded_and_chunked():
    """method="exact" with ties inverts the exact conditional test over every candidate
    null. At n = 300 that scan (8,000 nulls x a 90,301-entry distribution each) once took
    hours and 15 GB a row; above the cost cap the row keeps the Walsh interval with a
    note, and below it the scan runs in budget-sized slabs of nulls with the same result."""
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(size=(2, 300)), 1)
    y = np.round(rng.normal(size=(2, 300)), 1) - 0.1
    res = wilcoxon(x, y, method="exact", zero_method="zsplit")
    assert all("method='exact' at n = 300: Walsh interval" in note for note in res.note)
    # the Walsh interval (normal-approximation critical value: the rows are tied)
    from multistat.significance.rank import hodges_lehmann
    _, hl_low, hl_high = hodges_lehmann(x, y, exact=False)
    np.testing.assert_array_equal(res.ci_low, hl_low)
    np.testing.assert_array_equal(res.ci_high, hl_high)
    # below the cap: scanned (no note), and slabs of nulls change nothing
    x, y = x[:, :40], y[:, :40]
    whole = wilcoxon(x, y, method="exact")
    sliced = wilcoxon(x, y, method="exact", memory_limit="16MiB")
    assert not any("Walsh interval" in note for note in whole.note)
    for field in ("p_value", "ci_low", "ci_high"):
        np.testing.assert_array_equal(getattr(whole, field), getattr(sliced, field))
    # the scanned interval is the acceptance set: its ends are not rejected
    for r in range(2):
        for end in (whole.ci_low[r], whole.ci_high[r]):
            p = wilcoxon(x[r], y[r], method="exact", null_value=end).p_value
            assert p > 0.05


#: (test, the contexts its batch is checked under): default keywords, then options and
#: a null value that move every branch the batch shares with the public function
BATCH_CASES = [
    ("wilcoxon", [{}, {"alternative": "greater", "null_value": 0.01,
                       "options": {"zero_method": "pratt", "correction": True}}]),
    ("sign", [{}, {"alternative": "greater", "null_value": 0.01,
                   "options": {"zero_method": "split"}},
              {"confidence_level": 0.99, "options": {"zero_method": "split"}}]),
]


@pytest.mark.parametrize("n", [30, 300, 5000])
@pytest.mark.parametrize("test,contexts", BATCH_CASES)
def test_rank_compare_batch_equals_the_public_function(test, contexts, n):
    # a rank test's batch (_batch.differences_batch) reads the slab's differences and
    # their shared sort (Slab.rank_info) instead of X[ia], X[ib]: every array must be what
    # the public function on the gathered scores gives, bit for bit; scores rounded to 2
    # decimals tie, and systems 0 and 1 share half their scores (zero differences)
    from multistat.significance._batch import Context, Slab

    rng = np.random.default_rng(n)
    X = np.round(rng.normal(size=(4, 2, n)), 2)
    X[1, :, : n // 2] = X[0, :, : n // 2]
    ia, ib = np.triu_indices(4, 1)
    func = REGISTRY[test].func
    for fields in contexts:
        ctx = Context(**fields)
        got = REGISTRY[test].run(Slab(X), ia, ib, ctx).arrays
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = func(X[ia], X[ib], alternative=ctx.alternative, null_value=ctx.null_value,
                       confidence_level=ctx.confidence_level, **ctx.options)
        for k in ("statistic", "p_value", "estimate", "ci_low", "ci_high"):
            np.testing.assert_array_equal(got[k], getattr(ref, k), err_msg=k)
        np.testing.assert_array_equal(got["n"], ref.n)
        np.testing.assert_array_equal(got["note"], ref.note)


@pytest.mark.parametrize("test", [name for name, _ in BATCH_CASES])
def test_rank_compare_batch_names_bad_scores_as_the_public_function(test):
    # non-finite differences send the batch to the public path, whose checks name the
    # problem: overflow of a - b, or NaN/inf scores
    from multistat.errors import DataValidationError
    from multistat.significance._batch import Context, Slab

    rng = np.random.default_rng(1)
    a = 1e308 * rng.choice([-1.0, 1.0], 20)
    for X, match in ((np.stack([a, -a])[:, None, :], "overflow"),
                     (np.stack([a * 0 + 1, np.r_[np.nan, np.zeros(19)]])[:, None, :],
                      "NaN or infinite")):
        with pytest.raises(DataValidationError, match=match), np.errstate(over="ignore"):
            REGISTRY[test].run(Slab(X), [0], [1], Context())


def test_two_sided_sign_interval_scans_only_its_window_and_equals_the_full_scan():
    # two-sided rows scan only the columns [c, n - c) that can hold an accepted candidate
    # (_two_sided_window); tie runs that cross the window's edges, or lie just outside
    # it, must give what the per-row scan over every value and gap gives (sign_interval,
    # zeros dropped) and, for split zeros, the brute-force acceptance set of sign_test
    from multistat.significance._inversion import (
        _two_sided_window,
        sign_interval,
        sign_interval_rows,
    )

    rng = np.random.default_rng(76)
    for n in (40, 301, 2000):
        c, _ = _two_sided_window(n, 0.05)
        assert 0 < c < n // 2  # the window is used, and narrower than the row
        d = np.concatenate([rng.integers(-3, 4, (6, n)).astype(float),
                            np.round(rng.normal(0.2, 1, (6, n)), 1)])
        for r in range(6, 12):  # a long run of one value placed near either edge
            v = np.sort(d[r])[int(rng.choice([c - 2, c, n - c - 1, n - c + 1]))]
            d[r, rng.choice(n, int(rng.integers(2, n // 4)), replace=False)] = v
        s = np.sort(d, axis=-1)
        for level in (0.9137, 0.95, 0.999):
            low, high = sign_interval_rows(s, alternative="two-sided", confidence_level=level)
            for r in range(s.shape[0]):
                ref = sign_interval(s[r], alternative="two-sided", confidence_level=level)
                np.testing.assert_array_equal([low[r], high[r]], ref)
        low, high = sign_interval_rows(s, alternative="two-sided", confidence_level=0.95,
                                       zero_method="split")
        for r in range(0, s.shape[0], 3):
            u = np.unique(s[r])
            cands = np.concatenate([u, (u[:-1] + u[1:]) / 2, [u[0] - 1, u[-1] + 1]])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = sign_test(s[r][None] - cands[:, None], np.zeros((cands.size, n)),
                              zero_method="split").p_value
            inside = (cands >= low[r]) & (cands <= high[r])
            np.testing.assert_array_equal(~(np.asarray(p) <= 0.05), inside)
