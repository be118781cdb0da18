"""The clustered paired t test ("t-cluster"): the mean difference with the cluster-robust
standard error of Miller (2024), CR1 factor G/(G-1) and a t reference on G - 1 df.

References: a hand computation of the formula; statsmodels' cluster-robust OLS of the
differences on a constant (``OLS(d, 1).fit(cov_type="cluster", use_t=True)``, whose
defaults use_correction=True and df_correction=True are the same CR1 factor, (n-1)/(n-K) =
1 for K = 1, and G - 1 df); scipy's one-sample t test on the group means (equal groups);
scipy's paired t test (every instance its own group)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

import multistat
from multistat import cube
from multistat.errors import DataValidationError, ParameterError, ParameterTypeError
from multistat.power import mde_paired_t
from multistat.significance import REGISTRY, paired_t, paired_t_cluster

KW = {"effect_sizes": False, "correction": "none", "scheduler": "synchronous"}


def _clustered(seed, sizes, rho=0.4, shift=0.2):
    """Two systems' scores whose differences have a group effect (intra-group
    correlation ``rho``) in groups of the given sizes; group labels per instance."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(len(sizes)), sizes)
    n = len(g)
    d = rng.normal(0, np.sqrt(rho), len(sizes))[g] + rng.normal(0, np.sqrt(1 - rho), n)
    b = rng.normal(size=n)
    return b + d + shift, b, np.array([f"p{k:03d}" for k in g])


def _statsmodels(d, groups):
    # reference: statsmodels' cluster-robust OLS of d on a constant (CR1, t on G-1 df)
    codes = np.unique(groups, return_inverse=True)[1]
    return sm.OLS(d, np.ones(len(d))).fit(cov_type="cluster", cov_kwds={"groups": codes},
                                          use_t=True)


def test_hand_computation():
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])
    y = np.array([2.0, 1.0, 1.0, 3.0, 5.0, 3.0, 0.0])
    groups = ["a", "a", "b", "b", "b", "c", "c"]
    # d = 1 0 3 -2 0 6 2, mean 10/7; groups a: (1, 0), b: (3, -2, 0), c: (6, 2)
    dbar = 10 / 7
    sums = [1 + 0 - 2 * dbar, 3 - 2 + 0 - 3 * dbar, 6 + 2 - 2 * dbar]
    se = np.sqrt(3 / 2 * sum(s * s for s in sums) / 7**2)  # CR1: G/(G-1) = 3/2
    t = dbar / se
    res = paired_t_cluster(x, y, groups=groups)
    assert res.estimate == pytest.approx(dbar, rel=1e-15)
    assert res.extra["se"] == pytest.approx(se, rel=1e-14)
    assert res.statistic == pytest.approx(t, rel=1e-14)
    assert res.p_value == pytest.approx(2 * stats.t.sf(t, 2), rel=1e-12)
    q = stats.t.ppf(0.975, 2)
    assert res.ci_low == pytest.approx(dbar - q * se, rel=1e-12)
    assert res.ci_high == pytest.approx(dbar + q * se, rel=1e-12)
    assert res.extra["n_groups"] == 3 and res.extra["df"] == 2 and res.n == 7


@pytest.mark.parametrize("seed", range(4))
def test_equals_statsmodels_cluster_robust_ols(seed):
    rng = np.random.default_rng(100 + seed)
    sizes = rng.integers(1, 9, rng.integers(5, 30))
    x, y, g = _clustered(seed, sizes)
    fit = _statsmodels(x - y, g)
    assert fit.df_resid_inference == len(sizes) - 1  # statsmodels' df: G - 1
    res = paired_t_cluster(x, y, groups=g)
    np.testing.assert_allclose(res.estimate, fit.params[0], rtol=1e-12)
    np.testing.assert_allclose(res.extra["se"], fit.bse[0], rtol=1e-12)
    np.testing.assert_allclose(res.statistic, fit.tvalues[0], rtol=1e-12)
    np.testing.assert_allclose(res.p_value, fit.pvalues[0], rtol=1e-10)
    np.testing.assert_allclose([res.ci_low, res.ci_high], fit.conf_int(alpha=0.05)[0],
                               rtol=1e-12)
    lo90 = fit.conf_int(alpha=0.10)[0]
    np.testing.assert_allclose(res.confidence_interval(0.90), lo90, rtol=1e-12)
    # one-sided: the matching tail of statsmodels' t on G - 1 df, at a null value
    tt = fit.t_test(([1.0], [0.1]))
    t01 = float(np.squeeze(tt.tvalue))
    for alt, p in (("greater", stats.t.sf(t01, len(sizes) - 1)),
                   ("less", stats.t.cdf(t01, len(sizes) - 1))):
        one = paired_t_cluster(x, y, groups=g, alternative=alt, null_value=0.1)
        np.testing.assert_allclose(one.p_value, p, rtol=1e-10)


def test_equal_groups_is_the_t_test_on_group_means():
    x, y, g = _clustered(7, [4] * 11)
    res = paired_t_cluster(x, y, groups=g)
    means = (x - y).reshape(11, 4).mean(1)
    ref = stats.ttest_1samp(means, 0.0)
    np.testing.assert_allclose(res.p_value, ref.pvalue, rtol=1e-12)
    np.testing.assert_allclose(res.statistic, ref.statistic, rtol=1e-12)
    ci = ref.confidence_interval(0.95)
    np.testing.assert_allclose([res.ci_low, res.ci_high], [ci.low, ci.high], rtol=1e-12)


def test_without_groups_it_is_the_paired_t_test():
    rng = np.random.default_rng(3)
    x, y = rng.normal(0.3, 1, (5, 40)), rng.normal(0, 1, (5, 40))
    a, b = paired_t_cluster(x, y), paired_t(x, y)
    singletons = paired_t_cluster(x, y, groups=np.arange(40)[::-1])
    for field in ("statistic", "p_value", "estimate", "ci_low", "ci_high"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-12)
        np.testing.assert_allclose(getattr(singletons, field), getattr(b, field),
                                   rtol=1e-12)


def test_interval_inverts_the_test():
    x, y, g = _clustered(11, [3, 5, 2, 6, 4, 4, 3, 5])
    res = paired_t_cluster(x, y, groups=g)
    for alt in ("two-sided", "greater", "less"):
        lo, hi = paired_t_cluster(x, y, groups=g, alternative=alt).confidence_interval()
        for null in np.linspace(float(res.estimate) - 2, float(res.estimate) + 2, 41):
            p = paired_t_cluster(x, y, groups=g, alternative=alt, null_value=null).p_value
            assert (p <= 0.05) == (null < lo or null > hi), (alt, null, p, lo, hi)
        # at an end the test is exactly at alpha
        end = lo if alt != "less" else hi
        p_end = paired_t_cluster(x, y, groups=g, alternative=alt, null_value=end).p_value
        assert p_end == pytest.approx(0.05, rel=1e-9)


def test_degenerate_rows_are_nan_with_a_note():
    x = np.arange(8.0)
    with pytest.warns(multistat.errors.SmallSampleWarning, match="fewer than 2 groups"):
        one = paired_t_cluster(x, x[::-1], groups=["a"] * 8)
    assert np.isnan(one.p_value) and "fewer than 2 groups" in one.note
    # every group's differences sum to the group's share of the mean: SE = 0
    d = np.array([1.0, -1.0, 2.0, -2.0])  # groups (1, -1), (2, -2): sums 0, mean 0
    with pytest.warns(multistat.errors.ConstantInputWarning, match="standard error is 0"):
        zero = paired_t_cluster(d, np.zeros(4), groups=[0, 0, 1, 1])
    assert np.isnan(zero.p_value) and "sum to their mean in every group" in zero.note
    with pytest.raises(DataValidationError, match=r"one group label per instance \(8\)"):
        paired_t_cluster(x, x, groups=["a"] * 7)


def _study(seed=0, S=5, sizes=(3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5), holes=False):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(len(sizes)), sizes)
    n = len(g)
    effect = rng.normal(0, 0.7, (S, len(sizes)))[:, g]
    score = (rng.normal(0, 1, n) + effect + rng.normal(0, 1, (S, n))
             + 0.15 * np.arange(S)[:, None])
    score = np.round(score * 64) / 64  # ties, as real scores
    score = np.stack([score, (score > 0.3).astype(float)], 1)
    if holes:
        score[1, :, :5] = np.nan
        score[3, :, -4:] = np.nan
    ds = cube.make_dataset("d", score, systems=[f"s{i}" for i in range(S)],
                           metrics=["m", "acc"], kind=["mean", "binary"],
                           instances=[f"q{i:03d}" for i in range(n)],
                           group=[f"passage{k:02d}" for k in g],
                           missing="keep" if holes else "raise")
    return cube.make_study({"d": ds}), score, g


@pytest.mark.parametrize("holes", [False, True])
def test_compare_rows_equal_the_function_and_statsmodels(holes):
    study, score, g = _study(holes=holes)
    table = multistat.compare(study, tests=("t-cluster",), cluster="group", **KW)
    assert len(table) == 10 * 2
    for _, row in table.iterrows():
        a, b = int(row.system_a[1:]), int(row.system_b[1:])
        m = 0 if row.metric == "m" else 1
        keep = ~np.isnan(score[a, m]) & ~np.isnan(score[b, m])
        x, y, gg = score[a, m, keep], score[b, m, keep], g[keep]
        ref = paired_t_cluster(x, y, groups=gg)
        fit = _statsmodels(x - y, gg)
        assert row.n == keep.sum() and row.n_groups == len(np.unique(gg))
        for col, want in (("estimate", fit.params[0]), ("se", fit.bse[0]),
                          ("p_value", fit.pvalues[0]), ("ci_low", ref.ci_low),
                          ("ci_high", ref.ci_high), ("statistic", ref.statistic)):
            np.testing.assert_allclose(row[col], want, rtol=1e-9, atol=1e-12, err_msg=col)
        assert f"over {len(np.unique(gg))} groups" in row.note
        assert "treated as independent" not in row.note
        assert row.cluster == "group" and np.isfinite(row.mde) and row.mde > 0
        # the mde of the t test on the groups at the clustered SE (its own, with holes too)
        G = len(np.unique(gg))
        want = mde_paired_t(n=G, sd=np.sqrt(G) * row.se, power=0.8, alpha=0.05)
        np.testing.assert_allclose(row.mde, want, rtol=1e-8, err_msg="mde")


def test_compare_without_cluster_gives_the_t_rows():
    study, _, _ = _study()
    table = multistat.compare(study, tests=("t-cluster", "t"), **KW)
    tc, t = table[table.test == "t-cluster"], table[table.test == "t"]
    for col in ("estimate", "se", "p_value", "ci_low", "ci_high", "statistic", "mde"):
        np.testing.assert_allclose(tc[col].to_numpy(), t[col].to_numpy(), rtol=1e-10,
                                   err_msg=col)
    assert (tc.note.str.contains("the paired t test")).all()


def test_ill_conditioned_pairs_fall_back_to_the_differences():
    # s1 = s0 + 0.1 up to the rounding of the scores (a few ulps): constant differences
    study, _, _ = _study()
    ds = cube.datasets(study)["d"].copy(deep=True)
    vals = ds["score"].values
    vals[1, 0] = vals[0, 0] * 3.0 + 1e6
    vals[2, 0] = vals[0, 0] * 3.0 + 1e6 + 0.1
    table = multistat.compare(cube.make_study({"d": ds}), tests=("t-cluster",),
                              cluster="group", metrics=["m"], **KW)
    row = table[(table.system_a == "s1") & (table.system_b == "s2")].iloc[0]
    assert np.isnan(row.p_value) and "all differences are equal" in row.note
    assert row.estimate == pytest.approx(-0.1, rel=1e-6)


def test_one_group_is_nan_with_a_note_through_compare():
    study, _, _ = _study()
    ds = cube.datasets(study)["d"]
    ds = ds.assign_coords(group=("instance", ["all"] * ds.sizes["instance"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = multistat.compare(cube.make_study({"d": ds}), tests=("t-cluster",),
                                  cluster="group", **KW)
    assert table.p_value.isna().all()
    assert table.note.str.contains("fewer than 2 groups").all()


def test_tost_and_options():
    study, score, g = _study()
    table = multistat.compare(study, tests=("t-cluster",), cluster="group",
                              equivalence_margin=0.5, metrics=["m"], **KW)
    for _, row in table.iterrows():  # TOST: the larger of the two one-sided p-values
        x, y = score[int(row.system_a[1:]), 0], score[int(row.system_b[1:]), 0]
        lo = paired_t_cluster(x, y, groups=g, alternative="greater", null_value=-0.5)
        hi = paired_t_cluster(x, y, groups=g, alternative="less", null_value=0.5)
        np.testing.assert_allclose(row.p_equivalence, max(lo.p_value, hi.p_value),
                                   rtol=1e-9)
    with pytest.raises(ParameterError, match="equivalence margins of resampling tests"):
        multistat.compare(study, tests=("t-cluster", "bootstrap"), cluster="group",
                          equivalence_margin=0.5, **KW)
    with pytest.raises(ParameterError, match="unknown option 'k'; t-cluster takes groups"):
        multistat.compare(study, tests=("t-cluster",), test_options={"t-cluster": {"k": 1}},
                          **KW)
    with pytest.raises(ParameterTypeError, match="t-cluster test takes no options in compare"):
        multistat.compare(study, tests=("t-cluster",), **KW,
                          test_options={"t-cluster": {"groups": g}})


def test_registered_with_its_capabilities():
    spec = REGISTRY["t-cluster"]
    assert spec.func is paired_t_cluster and spec.equivalence and spec.cluster_resampling
    assert not spec.resampling and not spec.advised


def test_type_one_error_on_clustered_null_data():
    # 300 null studies of 30 groups of 5 with intra-group correlation 0.5: the plain t
    # test rejects far more than 5%, the clustered t keeps 5% within Monte Carlo error
    # (the full measurement, 2,000 studies, is benchmarks/cluster_t_type1.py)
    rng = np.random.default_rng(2024)
    R, G, m, rho = 300, 30, 5, 0.5
    g = np.repeat(np.arange(G), m)
    d = (rng.normal(0, np.sqrt(rho), (R, G))[:, g]
         + rng.normal(0, np.sqrt(1 - rho), (R, G * m)))
    zero = np.zeros_like(d)
    clustered = np.mean(paired_t_cluster(d, zero, groups=g).p_value <= 0.05)
    plain = np.mean(paired_t(d, zero).p_value <= 0.05)
    se = np.sqrt(0.05 * 0.95 / R)
    assert abs(clustered - 0.05) < 3.5 * se
    assert plain > 0.05 + 5 * se
