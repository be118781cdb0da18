"""Effect sizes: definitions against scipy, interval coverage by simulation, symmetry,
degenerate input, errors."""

import numpy as np
import pytest
from scipy import optimize, special, stats

from multistat import effect
from multistat.errors import ConstantInputWarning, ParameterError, SmallSampleWarning
from multistat.significance import wilcoxon


@pytest.fixture
def batch():
    rng = np.random.default_rng(21)
    x = rng.normal(0.3, 1.0, size=(2, 3, 35))
    y = rng.normal(0.0, 1.0, size=(2, 3, 35))
    return x, y


def test_cohens_dz_and_noncentral_t_interval(batch):
    # reference: scipy.optimize.brentq on scipy.stats.nct.cdf, one row at a time
    x, y = batch
    res = effect.cohens_dz(x, y, confidence_level=0.9)
    d = x - y
    np.testing.assert_allclose(res.estimate, d.mean(-1) / d.std(-1, ddof=1), atol=1e-14)
    n = 35
    for idx in np.ndindex(2, 3):
        t = res.estimate[idx] * np.sqrt(n)
        def f(nc, t, prob):
            return stats.nct.cdf(t, n - 1, nc) - prob
        lo = optimize.brentq(f, t - 8, t + 8, args=(t, 0.95), xtol=1e-14) / np.sqrt(n)
        hi = optimize.brentq(f, t - 8, t + 8, args=(t, 0.05), xtol=1e-14) / np.sqrt(n)
        assert abs(res.ci_low[idx] - lo) <= 1e-10 and abs(res.ci_high[idx] - hi) <= 1e-10


def test_hedges_correction_exact_gamma():
    # reference: scipy.special.gamma written out; the manual's approximation 1 - 3/(4df - 1)
    for df in (2, 5, 10, 29, 100):
        exact = special.gamma(df / 2) / (np.sqrt(df / 2) * special.gamma((df - 1) / 2))
        assert abs(effect.hedges_correction(df) - exact) <= 1e-12
        if df >= 5:
            assert abs(effect.hedges_correction(df) - (1 - 3 / (4 * df - 1))) < 2e-3
    assert effect.hedges_correction(2000) == pytest.approx(1 - 3 / (4 * 2000 - 1), abs=1e-7)
    assert np.isnan(effect.hedges_correction(1))


def test_hedges_g(batch):
    x, y = batch
    d, g = effect.cohens_dz(x, y), effect.hedges_g(x, y)
    np.testing.assert_allclose(g.estimate, effect.hedges_correction(34) * d.estimate,
                               atol=1e-15)
    np.testing.assert_array_equal(g.ci_low, d.ci_low)  # same exact interval for delta


def test_wilcoxon_r_uses_tie_corrected_z():
    # reference: scipy.stats.wilcoxon(method="asymptotic", correction=False,
    # alternative="greater").zstatistic is the signed tie-corrected Z of eq. 17
    rng = np.random.default_rng(22)
    x = np.round(rng.normal(0.3, 1, size=(6, 40)), 1)
    y = np.round(rng.normal(0.0, 1, size=(6, 40)), 1)
    res = effect.wilcoxon_r(x, y)
    ref = stats.wilcoxon(x, y, method="asymptotic", alternative="greater", axis=-1)
    n_nonzero = (x != y).sum(-1)
    np.testing.assert_allclose(res.estimate, ref.zstatistic / np.sqrt(n_nonzero), atol=1e-12)
    np.testing.assert_array_equal(res.n, n_nonzero)
    assert np.all((res.ci_low < res.estimate) & (res.estimate < res.ci_high))


def test_projection_counts_are_walsh_counts():
    # sum_i g_i = 2 W+ - #(d > 0) (each pair i < j counted twice, i = j once)
    rng = np.random.default_rng(23)
    d = np.round(rng.normal(0.2, 1, size=(5, 25)), 1)
    _, g = effect._walsh_projection_variance(d)
    _i, _j = np.triu_indices(25)
    for r in range(5):
        keep = d[r] != 0
        dd = d[r][keep]
        ii, jj = np.triu_indices(dd.size)
        w = dd[ii] + dd[jj]
        w_plus = np.sum(w > 0) + 0.5 * np.sum(w == 0)
        assert np.nansum(g[r]) == 2 * w_plus - np.sum(dd > 0)


def test_hodges_lehmann_is_the_wilcoxon_estimate(batch):
    x, y = batch
    hl = effect.hodges_lehmann(x, y)
    w = wilcoxon(x, y, method="exact")
    np.testing.assert_array_equal(hl.estimate, w.estimate)
    np.testing.assert_array_equal(hl.ci_low, w.ci_low)
    np.testing.assert_array_equal(hl.ci_high, w.ci_high)


def test_hodges_lehmann_interval_rule_matches_wilcoxon_auto():
    # tied rows (n = 20) use the normal-approximation critical value in both places
    rng = np.random.default_rng(24)
    x = np.round(rng.normal(0.3, 1, size=(4, 20)), 1)
    y = np.round(rng.normal(0.0, 1, size=(4, 20)), 1)
    hl, w = effect.hodges_lehmann(x, y), wilcoxon(x, y)
    # with ties the Wilcoxon row reports the exact inversion of its test (issue 13.4),
    # whose open ends sit one float inside the Walsh averages
    np.testing.assert_allclose(hl.ci_low, w.ci_low, rtol=0, atol=1e-12)
    np.testing.assert_allclose(hl.ci_high, w.ci_high, rtol=0, atol=1e-12)


def test_effect_sizes_columns(batch):
    x, y = batch
    out = effect.effect_sizes(x, y, confidence_level=0.9)
    assert tuple(out) == (
        "cohens_d", "cohens_d_ci_low", "cohens_d_ci_high", "hedges_g", "hedges_g_ci_low",
        "hedges_g_ci_high", "wilcoxon_r", "wilcoxon_r_ci_low", "wilcoxon_r_ci_high",
        "hodges_lehmann", "hodges_lehmann_ci_low", "hodges_lehmann_ci_high")
    assert all(np.shape(v) == (2, 3) for v in out.values())
    for func in (effect.cohens_dz, effect.hedges_g, effect.wilcoxon_r, effect.hodges_lehmann):
        res = func(x, y, confidence_level=0.9)
        np.testing.assert_array_equal(out[res.name], res.estimate)
        np.testing.assert_array_equal(out[f"{res.name}_ci_low"], res.ci_low)
        np.testing.assert_array_equal(out[f"{res.name}_ci_high"], res.ci_high)


def test_swap_symmetry(batch):
    x, y = batch
    a, b = effect.effect_sizes(x, y), effect.effect_sizes(y, x)
    for name in ("cohens_d", "hedges_g", "wilcoxon_r", "hodges_lehmann"):
        np.testing.assert_allclose(a[name], -b[name], atol=1e-12)
        np.testing.assert_allclose(a[f"{name}_ci_low"], -b[f"{name}_ci_high"], atol=1e-9)


# ----------------------------------------------------------------------------- coverage
REPS = 4000  # replications per setting: Monte Carlo SE of a 95 % coverage ~ 0.35 points


def _true_r(n, mu):
    """(E W+ - n(n+1)/4) / (sigma_n sqrt n) for N(mu, 1) differences:
    E W+ = n Phi(mu) + n(n-1)/2 Phi(sqrt(2) mu)."""
    ew = n * stats.norm.cdf(mu) + n * (n - 1) / 2 * stats.norm.cdf(np.sqrt(2) * mu)
    return (ew - n * (n + 1) / 4) / np.sqrt(n * (n + 1) * (2 * n + 1) / 24) / np.sqrt(n)


@pytest.mark.parametrize("n, mu", [(30, 0.0), (30, 0.3), (40, 0.5), (100, 0.8)])
def test_interval_coverage_normal(n, mu):
    # all REPS replications in one call through the leading axis
    rng = np.random.default_rng(1000 * n + int(10 * mu))
    d = rng.normal(mu, 1.0, size=(REPS, n))
    zero = np.zeros_like(d)
    out = effect.effect_sizes(d, zero, confidence_level=0.95)
    truth = {"cohens_d": mu, "hedges_g": mu, "wilcoxon_r": _true_r(n, mu),
             "hodges_lehmann": mu}
    for name, value in truth.items():
        cover = np.mean((out[f"{name}_ci_low"] <= value) & (value <= out[f"{name}_ci_high"]))
        assert abs(cover - 0.95) <= 0.02, (name, cover)


def test_hodges_lehmann_coverage_skew_free_heavy_tails():
    # symmetric but heavy-tailed (t with 3 df): HL interval still distribution-free
    rng = np.random.default_rng(77)
    d = 0.2 + rng.standard_t(3, size=(REPS, 45))
    res = effect.hodges_lehmann(d, np.zeros_like(d), confidence_level=0.9)
    cover = np.mean((res.ci_low <= 0.2) & (0.2 <= res.ci_high))
    assert abs(cover - 0.90) <= 0.02


# ----------------------------------------------------------------------------- edge cases
def test_constant_differences():
    x = np.array([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0]])
    y = x - 1.0
    y[1] = [0.0, 0.5, 2.0, 3.0]
    with pytest.warns(ConstantInputWarning, match=r"Cohen's d: all differences are equal"):
        res = effect.cohens_dz(x, y)
    assert np.isnan(res.estimate[0]) and np.isfinite(res.estimate[1])
    assert "sd = 0" in res.note[0]


def test_no_nonzero_differences_for_r():
    with pytest.warns(ConstantInputWarning, match="Wilcoxon r: fewer than 2 non-zero"):
        res = effect.wilcoxon_r([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert np.isnan(res.estimate) and np.isnan(res.ci_low)


def test_single_pair():
    with pytest.warns(SmallSampleWarning, match="fewer than 2 pairs"):
        res = effect.hedges_g([1.0], [0.0])
    assert np.isnan(res.estimate)


def test_all_positive_r_interval_contains_estimate():
    res = effect.wilcoxon_r(np.arange(1.0, 31.0), np.zeros(30))
    assert res.ci_low <= res.estimate <= res.ci_high and "boundary" in res.note


@pytest.mark.parametrize("func", [effect.cohens_dz, effect.hedges_g, effect.wilcoxon_r,
                                  effect.hodges_lehmann, effect.effect_sizes])
def test_bad_confidence_level(func):
    with pytest.raises(ParameterError, match=r"`confidence_level` must be in \(0, 1\); got 1.5"):
        func([1.0, 2.0, 3.0], [0.0, 0.0, 1.0], confidence_level=1.5)
