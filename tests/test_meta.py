"""multistat.meta.pooling: meta-analysis across studies against metafor's published results,
statsmodels' combine_effects, the likelihood itself and pooling by hand (issue 27)."""

from __future__ import annotations


import numpy as np
import pandas as pd
import pytest
from conftest import assert_one_line_error as one_line_error
from conftest import run_cli as run
from scipy import optimize, stats

import multistat
from multistat import cube
from multistat.errors import DroppedDataWarning, MultistatError
from multistat.io import read_parquet
from multistat.meta.pooling import _pool, meta_analysis, meta_regression, pool_studies, study_rows

# dat.bcg (Colditz et al. 1994, JAMA 271(9), 698-702; the 13 BCG vaccine trials as
# metafor ships them, listed in metafor's README.md): TB cases / non-cases among the
# vaccinated (tpos, tneg) and the controls (cpos, cneg), and absolute latitude
TPOS = np.array([4, 6, 3, 62, 33, 180, 8, 505, 29, 17, 186, 5, 27])
TNEG = np.array([119, 300, 228, 13536, 5036, 1361, 2537, 87886, 7470, 1699, 50448, 2493,
                 16886])
CPOS = np.array([11, 29, 11, 248, 47, 372, 10, 499, 45, 65, 141, 3, 29])
CNEG = np.array([128, 274, 209, 12619, 5761, 1079, 619, 87892, 7232, 1600, 27197, 2338,
                 17825])
ABLAT = np.array([44, 55, 42, 52, 13, 44, 19, 13, 27, 42, 18, 33, 33])
AUTHORS = ["Aronson", "Ferguson & Simes", "Rosenthal et al 1960", "Hart & Sutherland",
           "Frimodt-Moller et al", "Stein & Aronson", "Vandiviere et al", "TPT Madras",
           "Coetzee & Berjak", "Rosenthal et al 1961", "Comstock et al 1974",
           "Comstock & Webster", "Comstock et al 1976"]


def bcg():
    """Log risk ratios and their variances as metafor's escalc(measure="RR")."""
    n1, n2 = TPOS + TNEG, CPOS + CNEG
    yi = np.log(TPOS / n1) - np.log(CPOS / n2)
    vi = 1 / TPOS - 1 / n1 + 1 / CPOS - 1 / n2
    return yi, vi


def test_escalc_rr_matches_metafor_readme():
    # yi, vi printed (4 decimals) in metafor's README.md for dat.bcg, trials 2-4 and 13
    yi, vi = bcg()
    np.testing.assert_allclose(yi[[1, 2, 3, 12]], [-1.5854, -1.3481, -1.4416, -0.0173],
                               atol=5e-5)
    np.testing.assert_allclose(vi[[1, 2, 3, 12]], [0.1946, 0.4154, 0.0200, 0.0714],
                               atol=5e-5)


# published results for dat.bcg (log RR). FE and DL: metafor tests/testthat/
# test_misc_metan_vs_rma.uni_with_dat.bcg.r (checked there against Stata's metan);
# REML: metafor's rma() printout (Viechtbauer 2010, JSS 36(3); metafor README.md prints
# the same tau2/I2/H2/Q with test="knha"); the issue quotes the same numbers.
REFERENCE = {
    "fixed": {"estimate": -0.4303, "ci_low": -0.5097, "ci_high": -0.3509, "statistic": -10.6247,
                  "q": 152.2330},
    "dl": {"estimate": -0.7141, "ci_low": -1.0644, "ci_high": -0.3638, "statistic": -3.9952,
               "tau2": 0.3088, "i2": 0.921173, "q": 152.2330},
    "reml": {"estimate": -0.7145, "se": 0.1798, "ci_low": -1.0669, "ci_high": -0.3622,
                 "statistic": -3.9744, "tau2": 0.3132, "i2": 0.9222, "h2": 12.86, "q": 152.2330},
}


@pytest.mark.parametrize("method", sorted(REFERENCE))
def test_bcg_matches_metafor(method):
    yi, vi = bcg()
    res = meta_analysis(yi, vi, method=method)
    for name, ref in REFERENCE[method].items():
        decimals = 2 if name == "h2" else 4
        tol = 0.5 * 10.0**-decimals + 1e-9
        if name == "i2":  # a percentage with 2 (REML) or 4 (DL) decimals in metafor
            tol = 5e-5 if method == "reml" else 5e-7
        assert getattr(res, name) == pytest.approx(ref, abs=tol), (method, name)
    assert res.k == 13 and res.df == 12
    assert res.weights.sum() == pytest.approx(1.0)


def test_bcg_fixed_and_dl_predictions_on_the_rr_scale():
    # same metafor test file: predict(res, transf=exp)
    yi, vi = bcg()
    fe = meta_analysis(yi, vi, method="fixed")
    np.testing.assert_allclose(np.exp([fe.estimate, fe.ci_low, fe.ci_high]),
                               [0.6503, 0.6007, 0.7040], atol=5e-5)
    dl = meta_analysis(yi, vi, method="dl")
    np.testing.assert_allclose(np.exp([dl.estimate, dl.ci_low, dl.ci_high]),
                               [0.4896, 0.3449, 0.6950], atol=5e-5)
    # FE: I2 and H2 from Q, as metafor; the prediction interval is the CI (tau2 = 0)
    assert fe.i2 == pytest.approx((152.2330 - 12) / 152.2330, abs=1e-6)
    assert fe.h2 == pytest.approx(152.2330 / 12, abs=1e-4)
    assert (fe.pi_low, fe.pi_high) == (fe.ci_low, fe.ci_high)


@pytest.mark.parametrize("method", ["fixed", "dl", "pm", "ml", "reml"])
def test_q_profile_interval_matches_metafor_confint(method):
    # metafor tests/testthat/test_misc_confint.r: confint(rma(..., method="DL")) gives
    # tau2 [0.1197, 1.1115], H2 CI [5.5303, 43.0680]; the Q-profile interval does not
    # depend on the estimator of tau2
    yi, vi = bcg()
    res = meta_analysis(yi, vi, method=method)
    assert res.tau2_ci_low == pytest.approx(0.1197, abs=5e-5)
    assert res.tau2_ci_high == pytest.approx(1.1115, abs=5e-5)


def test_bcg_knapp_hartung_matches_metafor_readme():
    # metafor README.md: rma(yi, vi, data=dat, test="knha") -> se 0.1808, tval -3.9522,
    # df 12, p 0.0019, CI [-1.1084, -0.3206]; predict(res, transf=exp, digits=2):
    # 0.49 [0.33, 0.73], prediction interval [0.14, 1.76]
    yi, vi = bcg()
    res = meta_analysis(yi, vi, test="knha")
    assert res.estimate == pytest.approx(-0.7145, abs=5e-5)
    assert res.se == pytest.approx(0.1808, abs=5e-5)
    assert res.statistic == pytest.approx(-3.9522, abs=5e-5)
    assert res.p_value == pytest.approx(0.0019, abs=5e-5)
    assert (res.ci_low, res.ci_high) == pytest.approx((-1.1084, -0.3206), abs=5e-5)
    np.testing.assert_allclose(np.exp([res.estimate, res.ci_low, res.ci_high, res.pi_low,
                                       res.pi_high]), [0.49, 0.33, 0.73, 0.14, 1.76],
                               atol=0.005)
    # the t interval is wider than the z one and uses t(12)
    crit = stats.t.ppf(0.975, 12)
    assert res.ci_high - res.estimate == pytest.approx(crit * res.se)
    assert res.pi_high - res.estimate == pytest.approx(crit * np.sqrt(res.tau2 + res.se**2))


def test_bcg_paule_mandel_solves_the_generalized_q():
    # metafor tests/testthat/test_misc_rma_uni.r: the iterated DL and SJ estimators
    # (method="DLIT"/"SJIT"), whose fixed point is the Paule-Mandel root, give 0.3181
    yi, vi = bcg()
    res = meta_analysis(yi, vi, method="pm")
    assert res.tau2 == pytest.approx(0.3181, abs=5e-5)
    w = 1 / (vi + res.tau2)
    mu = (w * yi).sum() / w.sum()
    assert (w * (yi - mu) ** 2).sum() == pytest.approx(12.0, rel=1e-10)


def test_bcg_ml_matches_metafor_loglik_and_the_maximum():
    # metafor tests/testthat/test_misc_fitstats.r: logLik(rma(yi, vi, method="ML")) on
    # dat.bcg is -12.6651; and the estimate is the maximum of the likelihood found by a
    # bounded scalar optimiser (independent of the Fisher scoring used here)
    yi, vi = bcg()
    res = meta_analysis(yi, vi, method="ml")
    loglik = stats.norm.logpdf(yi, res.estimate, np.sqrt(vi + res.tau2)).sum()
    assert loglik == pytest.approx(-12.6651, abs=5e-5)

    def nll(t, reml=False):
        w = 1 / (vi + t)
        mu = (w * yi).sum() / w.sum()
        out = 0.5 * (np.log(vi + t).sum() + (w * (yi - mu) ** 2).sum())
        return out + (0.5 * np.log(w.sum()) if reml else 0.0)

    for method, reml in (("ml", False), ("reml", True)):
        opt = optimize.minimize_scalar(nll, bounds=(0, 5), args=(reml,), method="bounded",
                                       options={"xatol": 1e-12})
        assert meta_analysis(yi, vi, method=method).tau2 == pytest.approx(opt.x, rel=1e-6)


# CLASP example (DerSimonian & Kacker 2007, Contemp. Clin. Trials 28, 105-114, Tables 3
# and 4), log odds ratios of 6 trials, as metafor's tests/testthat/
# test_analysis_example_dersimonian2007.r reproduces them: tau, mu, se per estimator
CLASP = {"n1": [156, 303, 565, 1570, 103, 4659], "n2": [74, 303, 477, 1565, 105, 4650],
             "a": [5, 5, 12, 69, 9, 313], "c": [8, 17, 9, 94, 11, 352]}
CLASP_REF = {"pm": (0.3681, -0.3811, 0.2060), "dl": (0.2323, -0.3240, 0.1540),
             "ml": (0.0023, -0.1974, 0.0694), "reml": (0.1843, -0.2980, 0.1343)}


@pytest.mark.parametrize("method", sorted(CLASP_REF))
def test_clasp_matches_dersimonian_kacker(method):
    n1, n2, a, c = (np.array(CLASP[k], float) for k in ("n1", "n2", "a", "c"))
    b, d = n1 - a, n2 - c
    yi = np.log(a * d / (b * c))
    vi = 1 / a + 1 / b + 1 / c + 1 / d
    res = meta_analysis(yi, vi, method=method)
    tau, mu, se = CLASP_REF[method]
    if method == "ml":
        # the ML maximum is on the boundary (tau2 = 0; the likelihood decreases from
        # there); metafor's scoring stops at tau = 0.0023 (tau2 5e-6), which moves mu by
        # 1e-4
        assert res.tau2 == 0.0
        assert abs(res.estimate - mu) < 2e-4 and abs(res.se - se) < 1e-4
        return
    assert np.sqrt(res.tau2) == pytest.approx(tau, abs=5e-5)
    assert res.estimate == pytest.approx(mu, abs=5e-5)
    assert res.se == pytest.approx(se, abs=5e-5)


@pytest.mark.parametrize("method", ["dl", "pm"])
def test_statsmodels_combine_effects_agrees(method):
    from statsmodels.stats.meta_analysis import combine_effects

    yi, vi = bcg()
    ref = combine_effects(yi, vi, method_re=method)
    res = meta_analysis(yi, vi, method=method)
    assert res.tau2 == pytest.approx(ref.tau2, rel=1e-8)
    assert res.estimate == pytest.approx(ref.mean_effect_re, rel=1e-8)
    assert res.se == pytest.approx(ref.sd_eff_w_re, rel=1e-8)
    fe = meta_analysis(yi, vi, method="fixed")
    assert fe.estimate == pytest.approx(ref.mean_effect_fe, rel=1e-12)
    assert fe.q == pytest.approx(ref.q, rel=1e-12)


def test_meta_regression_matches_metafor_readme():
    # metafor README.md: rma(yi, vi, mods = ~ ablat, data=dat, test="knha")
    yi, vi = bcg()
    fit = meta_regression(yi, vi, mods=pd.DataFrame({"ablat": ABLAT}), test="knha")
    coef = fit.coefficients.set_index("term")
    np.testing.assert_allclose(coef.loc["intercept", ["estimate", "se", "statistic"]]
                               .to_numpy(float), [0.2515, 0.2839, 0.8857], atol=5e-5)
    # metafor's Fisher scoring stops when tau2 changes by < 1e-5 (here: to 1e-12), which
    # moves a few printed values by one in the 4th decimal (-0.3735 vs -0.37345,
    # t -3.5483 vs -3.54838): those are checked to 1e-4
    np.testing.assert_allclose(coef.loc["intercept", ["ci_low", "ci_high"]].to_numpy(float),
                               [-0.3735, 0.8764], atol=1e-4)
    np.testing.assert_allclose(coef.loc["ablat", ["estimate", "se"]].to_numpy(float),
                               [-0.0291, 0.0082], atol=5e-5)
    np.testing.assert_allclose(coef.loc["ablat", ["statistic", "ci_low", "ci_high"]]
                               .to_numpy(float), [-3.5483, -0.0472, -0.0111], atol=1e-4)
    # metafor prints tau2 0.0764; the REML maximum is 0.076348 (a bounded scalar
    # optimiser of the restricted likelihood below agrees to 1e-9): metafor stops its
    # scoring early (change < 1e-5), so its tau2 and the t statistic/intervals that
    # depend on it are checked to 1e-4
    assert fit.tau2 == pytest.approx(0.0764, abs=1e-4)
    X = np.column_stack([np.ones(13), ABLAT])

    def nll(t):
        w = 1 / (vi + t)
        a = (X.T * w) @ X
        e = yi - X @ np.linalg.solve(a, (X.T * w) @ yi)
        return 0.5 * (np.log(vi + t).sum() + np.linalg.slogdet(a)[1] + (w * e * e).sum())

    opt = optimize.minimize_scalar(nll, bounds=(0, 1), method="bounded",
                                   options={"xatol": 1e-12})
    assert fit.tau2 == pytest.approx(opt.x, rel=1e-6)
    assert fit.i2 == pytest.approx(0.6839, abs=5e-5)
    assert fit.h2 == pytest.approx(3.16, abs=5e-3)
    assert fit.r2 == pytest.approx(0.7562, abs=1e-4)
    assert fit.qe == pytest.approx(30.7331, abs=5e-5)
    assert fit.qe_p_value == pytest.approx(0.0012, abs=5e-5)
    assert fit.qm == pytest.approx(12.5905, abs=1e-3)  # F(1, 11) = t^2, tau2 as above
    assert fit.qm_p_value == pytest.approx(0.0046, abs=5e-5)


def test_meta_regression_fixed_is_weighted_least_squares():
    # the fixed-effect meta-regression is WLS with weights 1/v (statsmodels), covariance
    # not rescaled by the residual variance
    import statsmodels.api as sm

    yi, vi = bcg()
    fit = meta_regression(yi, vi, mods=ABLAT, method="fixed")
    wls = sm.WLS(yi, sm.add_constant(ABLAT.astype(float)), weights=1 / vi).fit()
    np.testing.assert_allclose(fit.coefficients["estimate"], wls.params, rtol=1e-10)
    np.testing.assert_allclose(fit.coefficients["se"], wls.bse / np.sqrt(wls.scale),
                               rtol=1e-10)


def test_leave_one_out_equals_refits():
    yi, vi = bcg()
    res = meta_analysis(yi, vi, test="knha", labels=AUTHORS)
    loo = res.leave_one_out()
    assert list(loo["study"]) == AUTHORS
    for i in (0, 5, 12):
        keep = np.arange(13) != i
        ref = meta_analysis(yi[keep], vi[keep], test="knha")
        for c in ("estimate", "se", "tau2", "i2", "q", "pi_low", "ci_high", "p_value"):
            assert loo.loc[i, c] == pytest.approx(getattr(ref, c), rel=1e-9), c
    with pytest.raises(MultistatError, match="leave-one-out needs at least 3 studies"):
        meta_analysis([0.1, 0.2], [0.1, 0.1]).leave_one_out()


def test_se_input_and_to_frame():
    yi, vi = bcg()
    a = meta_analysis(yi, vi)
    b = meta_analysis(yi, se=np.sqrt(vi), labels=AUTHORS)
    assert a.estimate == pytest.approx(b.estimate, rel=1e-12)
    assert a.tau2 == pytest.approx(b.tau2, rel=1e-10)
    frame = b.to_frame()
    assert list(frame["study"]) == AUTHORS + ["pooled (reml)"]
    assert frame["weight"].iloc[:-1].sum() == pytest.approx(1.0)
    row = frame.iloc[-1]
    assert (row["estimate"], row["pi_low"], row["pi_high"]) == (b.estimate, b.pi_low,
                                                                b.pi_high)
    np.testing.assert_allclose(frame["ci_high"].iloc[:-1] - yi, 1.959964 * np.sqrt(vi),
                               rtol=1e-6)


def test_no_heterogeneity_gives_zero_tau2_everywhere():
    # identical effects: Q = 0, every estimator tau2 = 0 and the fixed-effect answer
    v = np.array([0.1, 0.2, 0.4])
    fe = meta_analysis([0.3, 0.3, 0.3], v, method="fixed")
    for method in ("dl", "pm", "ml", "reml"):
        res = meta_analysis([0.3, 0.3, 0.3], v, method=method)
        assert res.tau2 == 0 and res.i2 == 0 and res.tau2_ci_high == 0
        assert res.estimate == pytest.approx(0.3) and res.se == pytest.approx(fe.se)


@pytest.mark.parametrize("kwargs, match", [
    ({"estimates": [0.1], "variances": [0.1]}, "at least two studies; got 1"),
    ({"estimates": [0.1, 0.2], "variances": [0.1]}, "has 2 values but `variances` has 1"),
    ({"estimates": [0.1, 0.2], "variances": [0.1, 0.0]}, (r"`variances` must be positive; "
                                                       r"position\(s\) \[1\]")),
    ({"estimates": [0.1, 0.2], "se": [-1.0, 0.1]}, "`se` must be positive"),
    ({"estimates": [0.1, np.nan], "variances": [0.1, 0.1]}, "`estimates` has NaN"),
    ({"estimates": [0.1, 0.2], "variances": [0.1, np.inf]}, "`variances` has NaN or inf"),
    ({"estimates": [0.1, 0.2]}, "give the studies' sampling `variances` or"),
    ({"estimates": [0.1, 0.2], "variances": [0.1, 0.1], "se": [0.1, 0.1]}, "not both"),
    ({"estimates": [0.1, 0.2], "variances": [0.1, 0.1], "method": "hs"}, "`method`"),
    ({"estimates": [0.1, 0.2], "variances": [0.1, 0.1], "test": "t"}, "`test`"),
    ({"estimates": [0.1, 0.2], "variances": [0.1, 0.1], "confidence_level": 1.5},
     "confidence_level"),
    ({"estimates": [[0.1, 0.2]], "variances": [0.1, 0.1]}, "one-dimensional"),
    ({"estimates": [0.1, 0.2], "variances": [0.1, 0.1], "labels": ["a"]},
     "`labels` has 1 names for 2 studies"),
])
def test_bad_vectors_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        meta_analysis(**kwargs)


def test_bad_moderators_are_refused():
    yi, vi = bcg()
    with pytest.raises(ValueError, match="one row per study"):
        meta_regression(yi, vi, mods=ABLAT[:5])
    with pytest.raises(ValueError, match="collinear"):
        meta_regression(yi, vi, mods=np.column_stack([ABLAT, 2 * ABLAT]))
    with pytest.raises(ValueError, match="`mods` has NaN"):
        meta_regression(yi, vi, mods=np.where(ABLAT > 50, np.nan, ABLAT))


def test_many_groups_are_fast_and_equal_one_at_a_time():
    # 10,000 groups of k = 6 at once (REML iterations vectorised over groups); each
    # group equals its own vector fit
    rng = np.random.default_rng(3)
    G, K = 10_000, 6
    Y = rng.normal(0, 1, (G, K))
    V = rng.uniform(0.05, 1.0, (G, K))
    M = np.ones((G, K), bool)
    out = _pool(Y, V, M, "reml", "z", 0.95)  # speed: benchmarks/, not here
    for g in (0, 17, 9_999):
        ref = meta_analysis(Y[g], V[g])
        assert out["tau2"][g] == pytest.approx(ref.tau2, rel=1e-9, abs=1e-14)
        assert out["estimate"][g] == pytest.approx(ref.estimate, rel=1e-9)
        assert out["tau2_ci_high"][g] == pytest.approx(ref.tau2_ci_high, rel=1e-9)


# ------------------------------------------------------------------------------ tables
@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(11)
    nodes = {}
    for j, d in enumerate(("newstest", "ted", "flores", "wmt")):
        shift = np.array([0.5, 0.2 + 0.1 * j, 0.0])[:, None, None]
        score = rng.normal(size=(3, 2, 80 + 20 * j)) + shift
        nodes[d] = cube.make_dataset(d, score, systems=list("ABC"), metrics=["m1", "m2"],
                                     instances=[f"i{i}" for i in range(80 + 20 * j)])
    study = cube.make_study(nodes)
    return multistat.compare(study, tests=("t", "bootstrap", "wilcoxon"), n_resamples=500,
                             effect_sizes=True)


def test_pooling_a_table_equals_pooling_its_rows_by_hand(table):
    with pytest.warns(DroppedDataWarning, match=r"24 of 72 rows have no standard error "
                                                r".*\(test: wilcoxon 24\)"):
        pooled = pool_studies(table, method="reml", test="knha")
    assert len(pooled) == 12  # 2 metrics x 3 pairs x (t, bootstrap)
    assert set(pooled["test"]) == {"t", "bootstrap"}
    assert (pooled["k"] == 4).all() and (pooled["k_dropped"] == 0).all()
    for _, row in pooled.iterrows():
        sub = table[(table.metric == row.metric) & (table.system_a == row.system_a)
                    & (table.system_b == row.system_b) & (table.test == row.test)]
        ref = meta_analysis(sub["estimate"], se=sub["se"], test="knha",
                            labels=sub["dataset"])
        for c in ("estimate", "se", "ci_low", "ci_high", "p_value", "tau2", "i2", "h2",
                  "q", "pi_low", "pi_high", "tau2_ci_high"):
            assert row[c] == pytest.approx(getattr(ref, c), rel=1e-9, abs=1e-15), c
        assert row["studies"] == ", ".join(sub["dataset"])


def test_table_effect_sizes_and_paths(table, tmp_path):
    by_d = pool_studies(table[table.test == "t"], effect="cohens_d")
    sub = table[(table.test == "t") & (table.metric == "m1") & (table.system_a == "A")
                & (table.system_b == "B")]
    ref = meta_analysis(sub["cohens_d"], se=sub["cohens_d_se"])
    row = by_d[(by_d.metric == "m1") & (by_d.system_a == "A") & (by_d.system_b == "B")]
    assert float(row["estimate"].iloc[0]) == pytest.approx(ref.estimate, rel=1e-12)
    # a Parquet file, two files (a `source` column), a folder: the same pooled numbers
    t_only = table[table.test == "t"]
    one = tmp_path / "all.parquet"
    multistat.write_parquet(t_only, one)
    first = pool_studies(one)
    folder = tmp_path / "runs"
    folder.mkdir()
    for d, part in t_only.groupby("dataset"):
        multistat.write_parquet(part, folder / f"{d}.parquet")
    by_folder = pool_studies(folder)
    by_files = pool_studies(sorted(folder.glob("*.parquet")), study="source")
    cols = ["estimate", "se", "tau2", "pi_low"]
    key = ["metric", "system_a", "system_b", "test"]
    a = first.sort_values(key).reset_index(drop=True)
    for other in (by_folder, by_files):
        b = other.sort_values(key).reset_index(drop=True)
        np.testing.assert_allclose(a[cols], b[cols], rtol=1e-9)
    assert by_folder.attrs["multistat"]["by"] == key


def test_reversed_pairs_pool_as_one(table):
    t = table[(table.test == "t") & (table.metric == "m1")].copy()
    flip = t["dataset"] == "ted"
    t.loc[flip, ["system_a", "system_b"]] = t.loc[flip, ["system_b", "system_a"]].to_numpy()
    t.loc[flip, "estimate"] = -t.loc[flip, "estimate"]
    ref = pool_studies(table[(table.test == "t") & (table.metric == "m1")])
    got = pool_studies(t)
    assert len(got) == 3
    np.testing.assert_allclose(got["estimate"], ref["estimate"], rtol=1e-12)


def test_table_problems_are_named(table):
    t = table[table.test == "t"]
    with pytest.raises(MultistatError, match=r"lacks column\(s\) \['se'\].*run compare"):
        pool_studies(t.drop(columns="se"))
    with pytest.raises(MultistatError, match="lacks column"):
        pool_studies(t, by=("metric", "nope"))
    with pytest.raises(MultistatError, match="study 'newstest' has 2 rows for metric=.*"
                                             "add the column that tells them apart"):
        pool_studies(table[table.test != "wilcoxon"], by=("metric", "system_a",
                                                            "system_b"))
    with pytest.raises(MultistatError, match="also in `by`"):
        pool_studies(t, by=("dataset", "metric"))
    with (pytest.raises(MultistatError, match="no row of the table has a standard error"),
          pytest.warns(DroppedDataWarning)):
        pool_studies(table[table.test == "wilcoxon"])
    with pytest.raises(MultistatError, match="give `variances`, `se` and `labels` only "
                                             "with vectors"):
        meta_analysis(t, [0.1])
    with pytest.raises(MultistatError, match="no such file"):
        pool_studies("does/not/exist.parquet")
    # a group left with one study: kept, NaN, with a note, and counted
    one = t[~((t.dataset != "ted") & (t.metric == "m1") & (t.system_a == "A")
              & (t.system_b == "B"))].copy()
    pooled = pool_studies(one)
    row = pooled[(pooled.metric == "m1") & (pooled.system_a == "A")
                 & (pooled.system_b == "B")].iloc[0]
    assert row["k"] == 1 and np.isnan(row["estimate"])
    assert row["note"].startswith("fewer than two studies")


def test_study_rows_weights_match_the_vector_fit(table):
    t = table[table.test == "bootstrap"]
    pooled = pool_studies(t)
    rows = study_rows(t, pooled)
    sub = rows[(rows.metric == "m2") & (rows.system_a == "A") & (rows.system_b == "C")]
    raw = t[(t.metric == "m2") & (t.system_a == "A") & (t.system_b == "C")]
    ref = meta_analysis(raw["estimate"], se=raw["se"])
    np.testing.assert_allclose(sub["weight"], ref.weights, rtol=1e-10)
    np.testing.assert_allclose(sub["estimate"], raw["estimate"])


# ------------------------------------------------------------------- compare's se column
def test_compare_se_column(table):
    t = table[table.test == "t"]
    # t: the interval's half-width over the t quantile
    q = stats.t.ppf(0.975, t["n"] - 1)
    np.testing.assert_allclose(t["se"], (t["ci_high"] - t["ci_low"]) / (2 * q), rtol=1e-9)
    # bootstrap: the bootstrap standard error, close to the t one (500 resamples: the
    # sd of an sd estimate is ~3%)
    b = table[table.test == "bootstrap"]
    ratio = b["se"].to_numpy() / t["se"].to_numpy()
    assert np.all(np.abs(ratio - 1) < 0.15), ratio
    assert table.loc[table.test == "wilcoxon", "se"].isna().all()
    # effect sizes: sqrt(1/n + d^2/(2n)), g's scaled by Hedges' J
    from multistat.effect import hedges_correction

    n, d = t["n"].to_numpy(), t["cohens_d"].to_numpy()
    np.testing.assert_allclose(t["cohens_d_se"], np.sqrt(1 / n + d**2 / (2 * n)))
    np.testing.assert_allclose(t["hedges_g_se"],
                               hedges_correction(n - 1) * t["cohens_d_se"])


def test_cohens_dz_se_against_the_exact_noncentral_t_variance():
    # d_z * sqrt(n) ~ noncentral t(n - 1, delta sqrt(n)): the large-sample formula is
    # within 3% of the exact sd for n = 60
    from multistat.effect import cohens_dz_se

    n = 60
    for delta in (0.0, 0.3, 0.8):
        exact = np.sqrt(stats.nct.var(n - 1, delta * np.sqrt(n)) / n)
        assert cohens_dz_se(delta, n) == pytest.approx(exact, rel=0.03)


def test_compare_se_on_permutation_and_corpus_rows():
    from multistat.adapters import from_statistics

    rng = np.random.default_rng(0)
    st = rng.integers(0, 30, size=(3, 120, 10)).astype(float)
    st[..., 8:] += 40
    res = multistat.compare(from_statistics(st, "bleu"), tests=("bootstrap", "permutation"),
                            n_resamples=300)
    assert res.loc[res.test == "bootstrap", "se"].gt(0).all()  # resampled corpus-BLEU se
    assert res.loc[res.test == "permutation", "se"].isna().all()
    assert res[["cohens_d_se", "hedges_g_se"]].isna().all().all()


# ------------------------------------------------------------------------------ CLI
def test_cli_writes_parquet_with_metadata(table, tmp_path, capsys):
    src = tmp_path / "results.parquet"
    multistat.write_parquet(table, src)
    out = tmp_path / "pooled.parquet"
    status, stdout, err = run(["meta", src, "--study", "dataset", "--method", "dl",
                               "--knha", "--out", out], capsys, warnings_always=True)
    assert status == 0, err
    assert err.startswith("multistat: warning: 24 of 72 rows have no standard error")
    got = read_parquet(out)
    assert got.attrs["multistat"]["method"] == "dl"
    assert got.attrs["multistat"]["meta_test"] == "knha"
    assert got.attrs["multistat"]["inputs"] == [str(src)]
    with pytest.warns(DroppedDataWarning):
        ref = pool_studies(table, method="dl", test="knha")
    pd.testing.assert_frame_equal(got, ref, check_exact=True, check_dtype=False)
    assert "pooled 12 of 12 groups across 4 studies (dataset); dl, knha" in stdout
    # csv by extension, --tests filter
    status, _, err = run(["meta", src, "--tests", "t", "--out", tmp_path / "p.csv"], capsys)
    assert status == 0, err
    assert set(pd.read_csv(tmp_path / "p.csv")["test"]) == {"t"}


def test_cli_errors_are_one_line(table, tmp_path, capsys):
    src = tmp_path / "results.parquet"
    multistat.write_parquet(table[table.test == "t"], src)
    status, _, err = run(["meta", src, "--method", "hs", "--out", tmp_path / "o.parquet"],
                         capsys)
    one_line_error(status, err, "`--method`", "hs")
    status, _, err = run(["meta", src, "--out", tmp_path / "o.txt"], capsys)
    one_line_error(status, err, "`--out`", ".parquet")
    status, _, err = run(["meta", src, "--tests", "sign", "--out", tmp_path / "o.parquet"],
                         capsys)
    one_line_error(status, err, "--tests", "sign", "not in the table")
    multistat.write_parquet(table[table.test == "t"].drop(columns="se"), src)
    status, _, err = run(["meta", src, "--out", tmp_path / "o.parquet"], capsys)
    one_line_error(status, err, "lacks column(s)", "'se'")
    status, _, err = run(["meta", tmp_path / "missing.parquet", "--out",
                          tmp_path / "o.parquet"], capsys)
    one_line_error(status, err, "no such file")


# ------------------------------------------------------------------------------ report
def test_report_has_the_pooled_table_and_forest_plots(table, tmp_path, capsys):
    src, pooled = tmp_path / "results.parquet", tmp_path / "meta.parquet"
    multistat.write_parquet(table, src)
    status, _, err = run(["meta", src, "--tests", "t,bootstrap", "--out", pooled], capsys)
    assert status == 0, err
    out = tmp_path / "rep"
    status, _, err = run(["report", src, "--out", out, "--test", "bootstrap", "--meta",
                          pooled, "--histograms", "none"], capsys)
    assert status == 0, err
    html = (out / "report.html").read_text()
    assert '<section id="meta"><h2>Meta-analysis across test sets</h2>' in html
    assert '<a href="#meta">Meta-analysis across test sets</a>' in html
    forests = sorted(p.name for p in (out / "figures").glob("forest_*.png"))
    # one per pooled metric x pair of the report's test (bootstrap): 2 x 3
    assert len(forests) == 6 and all("bootstrap" in f for f in forests)
    assert html.count('alt="forest plot ') == 6
    md = (out / "tables" / "meta.md").read_text()
    assert md.count("\n") >= 13  # header, rule and the 12 pooled rows
    back = pd.read_csv(out / "tables" / "meta.csv")
    np.testing.assert_allclose(back["tau2"], read_parquet(pooled)["tau2"], rtol=1e-12)


def test_forest_plot_of_a_vector_result():
    from matplotlib.figure import Figure

    yi, vi = bcg()
    from multistat.report import forest_plot

    res = meta_analysis(yi, vi, labels=AUTHORS)
    fig = forest_plot(res, title="BCG")
    with pytest.warns(DeprecationWarning, match="forest_plot"):
        assert isinstance(res.plot_forest(title="BCG"), Figure)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[:2] == AUTHORS[:2] and labels[-1] == "pooled (reml)"


def test_docstring_examples_run():
    import doctest

    from multistat import effect
    from multistat.meta import pooling as meta

    for mod in (meta, effect):
        result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0 and result.attempted > 0, mod.__name__


def test_one_return_type_per_function_and_the_old_table_path_warns(table):
    # meta_analysis takes vectors and returns a MetaResult; tables go to pool_studies
    # (a DataFrame); the table path of meta_analysis works one release and warns
    t = table[(table.test == "t") & (table.metric == "m1")]
    with pytest.warns(DeprecationWarning, match="pool_studies"):
        old = meta_analysis(t)
    pd.testing.assert_frame_equal(old, pool_studies(t))


def test_pool_studies_names_a_text_cell_in_a_numeric_column(table):
    # a text `se` raised pandas' ValueError from deep inside; now one line naming it
    t = table[(table.test == "t") & (table.metric == "m1")].copy()
    t["se"] = t["se"].astype(object)
    t.iloc[1, t.columns.get_loc("se")] = "0.1 (approx)"
    with pytest.raises(MultistatError, match=r"column `se` must hold numbers; row 1 has "
                                             r"'0.1 \(approx\)'"):
        pool_studies(t)


# ------------------------------------------------------- the likelihood's global maximum
# datasets on which Fisher scoring from DerSimonian-Laird stops at a local maximum or at
# 0 (found by a random search: k studies with log-normal variances, t(2) outliers); the
# reference is the maximum of the profile likelihood on a dense grid of 20,001 tau^2
# values, refined by scipy's bounded scalar optimiser -- independent of the code here
LOCAL_STOPS = {
    # Fisher scoring: an interior local maximum at 0.016; the maximum is at 0 (ML)
    "interior_but_max_at_0": (
        [0.9563, 0.0185, 0.1206, -0.0708, 0.1863, 0.0103, -0.4799, -0.0258, 0.2987,
         0.354, -0.1479, -0.1152, -0.051, 0.4317],
        [0.1162, 0.1046, 0.107, 0.09431, 0.02429, 0.00111, 0.04004, 0.009977, 0.4319,
         0.02794, 0.05883, 0.009102, 0.01793, 0.04865], ("ml",)),
    # a local maximum at 0.021; the maximum at 0.277 (ML)
    "two_interior_maxima": (
        [-0.218, -0.254, 1.2621, 0.0033, -0.1663, -1.8997, 0.039, -0.0341, 3.146],
        [0.004843, 0.008095, 0.1224, 8.316e-05, 0.005598, 0.2444, 0.0154, 0.001925,
         2.342], ("ml",)),
    # stops at 0 (the score is negative there); the maximum at 5.7 (ML) / 6.4 (REML)
    "stuck_at_0": (
        [0.1418, 0.0261, -0.259, 0.0753, -0.0065, 0.8941, 11.213, -0.094, 0.46, -0.2429,
         -0.0227, 0.1235, -0.3919, -0.1381],
        [0.08762, 0.001189, 0.4451, 0.02569, 0.0002807, 0.416, 1.424, 0.008632, 0.5629,
         0.01111, 0.0005351, 0.02434, 0.09559, 0.06503], ("ml", "reml")),
    # a local maximum at 0.0105; the maximum at 16.8 (REML)
    "far_maximum": (
        [0.1937, 0.7299, -0.018, -0.9104, -0.246, 0.1528, -0.0293, 0.5185, -15.6502],
        [0.006405, 0.1767, 0.0336, 0.4139, 0.09781, 0.06251, 0.007107, 0.1747, 5.804],
        ("reml",)),
}


def _profile_ll(y, v, X, t, reml):
    """Profile (restricted) log-likelihood of tau^2 at each ``t``, coefficients profiled
    out, as metafor's logLik (written here from the formula, batched over ``t``)."""
    t = np.atleast_1d(np.asarray(t, float))
    w = 1.0 / (v[None, :] + t[:, None])
    XtWX = np.einsum("pk,ki,kj->pij", w, X, X)
    beta = np.linalg.solve(XtWX, np.einsum("pk,ki,k->pi", w, X, y)[..., None])[..., 0]
    e = y[None, :] - beta @ X.T
    k, p = X.shape
    ll = -0.5 * (np.log(v[None, :] + t[:, None]).sum(1) + (w * e * e).sum(1))
    if reml:
        return ll + (-0.5 * (k - p) * np.log(2 * np.pi)
                     + 0.5 * np.linalg.slogdet(X.T @ X)[1] - 0.5 * np.linalg.slogdet(XtWX)[1])
    return ll - 0.5 * k * np.log(2 * np.pi)


def _dense_global_max(y, v, X, reml, points=20_000):
    e = y - X @ np.linalg.lstsq(X, y, rcond=None)[0]
    top = 1e4 * (len(y) * max(np.ptp(y) ** 2, (e * e).max()) + v.max())
    grid = np.concatenate([[0.0], np.geomspace(1e-9 * v.min(), top, points)])
    ll = _profile_ll(y, v, X, grid, reml)
    j = int(np.argmax(ll))
    lo, hi = grid[max(j - 1, 0)], grid[min(j + 1, grid.size - 1)]
    opt = optimize.minimize_scalar(lambda t: -_profile_ll(y, v, X, t, reml)[0],
                                   bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-13 * max(hi, 1e-300)})
    return max([(grid[j], ll[j]), (float(opt.x), -float(opt.fun))], key=lambda c: c[1])


def _fisher_only(y, v, method):
    """What the fit did before the global check: Fisher scoring from DL."""
    from multistat.meta.pooling import _tau2_dl, _tau2_likelihood

    Y, V, M = y[None], v[None], np.ones((1, y.size), bool)
    start = _tau2_dl(Y, V, M, np.array([float(y.size)]))
    return float(_tau2_likelihood(Y, V, M, start, reml=method == "reml")[0])


@pytest.mark.parametrize("case", sorted(LOCAL_STOPS))
def test_ml_reml_reach_the_global_maximum_of_the_likelihood(case):
    y, v, methods = LOCAL_STOPS[case]
    y, v = np.array(y), np.array(v)
    X = np.ones((y.size, 1))
    for method in methods:
        reml = method == "reml"
        stuck = _fisher_only(y, v, method)
        res = meta_analysis(y, v, method=method)
        t_ref, ll_ref = _dense_global_max(y, v, X, reml)
        ll_before = _profile_ll(y, v, X, stuck, reml)[0]
        ll_after = _profile_ll(y, v, X, res.tau2, reml)[0]
        # before: the iteration's point is clearly below the maximum; after: at it
        assert ll_before < ll_ref - 0.05, (case, method, stuck, t_ref)
        assert ll_after == pytest.approx(ll_ref, abs=1e-9)
        assert res.tau2 == pytest.approx(t_ref, rel=1e-5, abs=1e-12)
        if t_ref == 0.0:
            assert res.tau2 == 0.0  # on the boundary exactly
        # the move is said, with both log-likelihoods (metafor's logLik scale)
        assert f"{ll_before:.6g}" in res.note and f"{ll_after:.6g}" in res.note
        assert res.note.startswith("tau2: the Fisher-scoring iteration stopped")
        # the estimate, se and tau^2 interval follow the new tau^2 (as one DL-free refit)
        w = 1 / (v + res.tau2)
        assert res.estimate == pytest.approx((w * y).sum() / w.sum(), rel=1e-12)


@pytest.mark.slow
def test_ml_reml_on_random_groups_equal_the_dense_grid_maximum():
    # 120 random groups (k = 3..14, variances over four orders of magnitude, t(2)
    # outliers) pooled as one table: every tau^2 is the global maximum of the profile
    # likelihood, where Fisher scoring alone stops short in some of them
    rng = np.random.default_rng(4)
    rows, groups = [], []
    for g in range(120):
        k = int(rng.integers(3, 15))
        v = np.exp(rng.normal(-3, 2, k))
        y = rng.normal(0, 0.3, k) * rng.choice([0.1, 1, 3]) + rng.standard_t(2, k) * np.sqrt(v)
        groups.append((y, v))
        rows += [{"dataset": f"s{i}", "metric": "m", "system_a": "a", "system_b": "b",
                  "test": f"g{g}", "estimate": y[i], "se": np.sqrt(v[i])} for i in range(k)]
    frame = pd.DataFrame(rows)
    short_before = short_after = moved = 0
    for method in ("ml", "reml"):
        reml = method == "reml"
        pooled = pool_studies(frame, method=method)
        for (y, v), (_, row) in zip(groups, pooled.iterrows()):
            X = np.ones((y.size, 1))
            _, ll_ref = _dense_global_max(y, v, X, reml, points=2000)
            tol = 1e-8 * (1 + abs(ll_ref))
            ll_before = _profile_ll(y, v, X, _fisher_only(y, v, method), reml)[0]
            short_before += bool(ll_before < ll_ref - tol)
            short_after += bool(_profile_ll(y, v, X, row["tau2"], reml)[0] < ll_ref - tol)
            moved += bool(row["note"])
    assert short_before > 0  # the sample holds fits the iteration alone got wrong
    assert short_after == 0
    assert moved == short_before


def test_ml_reml_unchanged_where_the_iteration_found_the_maximum():
    # bcg and CLASP: no move, no note, the Fisher-scoring fixed point itself
    yi, vi = bcg()
    for method in ("ml", "reml"):
        res = meta_analysis(yi, vi, method=method)
        assert res.note == ""
        assert res.tau2 == _fisher_only(yi, vi, method)


def test_statsmodels_pm_dl_on_the_local_stop_datasets():
    # statsmodels' combine_effects has no ML/REML; its Paule-Mandel ("iterated") and
    # DerSimonian-Laird ("chi2") tau^2 agree with ours on the same data (our DL is
    # truncated at 0, statsmodels' is not)
    from statsmodels.stats.meta_analysis import combine_effects

    for y, v, _ in LOCAL_STOPS.values():
        y, v = np.array(y), np.array(v)
        for ours, theirs in (("pm", "iterated"), ("dl", "chi2")):
            ref = combine_effects(y, v, method_re=theirs)
            res = meta_analysis(y, v, method=ours)
            assert res.tau2 == pytest.approx(max(ref.tau2, 0.0), rel=1e-6, abs=1e-10)
            assert res.estimate == pytest.approx(ref.mean_effect_re, rel=1e-6)


# meta-regressions (one moderator) where Fisher scoring from DL stops short (same random
# search): (y, v, z, methods)
REGRESSION_STOPS = {
    # a local maximum at 0.0045 (ML) / 0.0154 (REML); the maximum at 43 / 53
    "far_maximum": (
        [0.138, -0.3879, -0.0193, 0.1969, -0.0406, 0.0304, 31.7037, 0.2216, 0.0619,
         -0.1315, -0.2865, -0.4627, -0.0272, -0.199],
        [0.006137, 0.02999, 0.02161, 0.03473, 0.005792, 0.00335, 8.264, 0.3302, 0.01197,
         0.04425, 0.1927, 0.02504, 0.1709, 0.01454],
        [-0.508, 1.365, 2.528, 0.303, 1.674, -0.53, -1.599, -1.27, -1.579, -0.955, -0.24,
         1.15, 0.7, 0.464], ("ml", "reml")),
    # a local maximum at 0.30; the maximum at 0 (REML)
    "max_at_0": (
        [-0.1186, -0.5658, 0.2268, -0.4948, -2.5848, -0.0357, 2.0515, -0.2431, -0.0579,
         -0.1773],
        [0.02782, 0.8849, 0.04981, 0.09516, 0.3342, 0.02728, 0.8812, 0.01405, 0.009886,
         0.02393],
        [0.614, 0.075, -0.793, -0.554, 0.885, -0.005, -1.684, 0.844, 0.416, 0.873],
        ("reml",)),
    # a local maximum at 0.52; the maximum at 4.2 (REML)
    "two_interior_maxima": (
        [0.0606, -10.6115, 0.0332, 0.1439, 0.1293, 0.17, -0.3126, 0.2164, 0.1097, 0.4612,
         1.4033],
        [0.05629, 3.62, 0.1992, 0.1648, 0.02507, 0.008406, 0.04202, 0.07472, 0.1298,
         0.07445, 0.02844],
        [-0.699, -0.201, 0.629, 1.251, -0.792, -0.499, 2.505, 0.92, 0.896, 1.934, 0.446],
        ("reml",)),
}


@pytest.mark.parametrize("case", sorted(REGRESSION_STOPS))
def test_meta_regression_reaches_the_global_maximum(case):
    from multistat.meta.pooling import _regression_fisher

    y, v, z, methods = (np.array(a) if i < 3 else a
                        for i, a in enumerate(REGRESSION_STOPS[case]))
    X = np.column_stack([np.ones(y.size), z])
    for method in methods:
        reml = method == "reml"
        e0 = y - X @ np.linalg.solve((X.T / v) @ X, (X.T / v) @ y)
        qe = (e0 * e0 / v).sum()
        P0 = np.diag(1 / v) - (X / v[:, None]) @ np.linalg.inv((X.T / v) @ X) @ (X.T / v)
        stuck = _regression_fisher(y, v, X, max(0.0, (qe - (y.size - 2)) / np.trace(P0)),
                                   reml)
        fit = meta_regression(y, v, mods=z, method=method)
        t_ref, ll_ref = _dense_global_max(y, v, X, reml)
        ll_before = _profile_ll(y, v, X, stuck, reml)[0]
        assert ll_before < ll_ref - 0.02, (case, method, stuck, t_ref)
        assert _profile_ll(y, v, X, fit.tau2, reml)[0] == pytest.approx(ll_ref, abs=1e-9)
        assert fit.tau2 == pytest.approx(t_ref, rel=1e-5, abs=1e-12)
        if t_ref == 0.0:
            assert fit.tau2 == 0.0
        assert f"{ll_before:.6g}" in fit.note
        # the coefficients are the WLS fit at the new tau^2
        w = 1 / (v + fit.tau2)
        beta = np.linalg.solve((X.T * w) @ X, (X.T * w) @ y)
        np.testing.assert_allclose(fit.coefficients["estimate"], beta, rtol=1e-10)


@pytest.mark.slow
def test_meta_regression_random_fits_reach_the_dense_grid_maximum():
    rng = np.random.default_rng(1)
    for _ in range(40):
        k = int(rng.integers(4, 15))
        v = np.exp(rng.normal(-3, 2, k))
        y = rng.normal(0, 0.3, k) * rng.choice([0.1, 1, 3]) + rng.standard_t(2, k) * np.sqrt(v)
        z = rng.normal(size=k)
        X = np.column_stack([np.ones(k), z])
        for method in ("ml", "reml"):
            fit = meta_regression(y, v, mods=z, method=method)
            _, ll_ref = _dense_global_max(y, v, X, method == "reml", points=2000)
            ll = _profile_ll(y, v, X, fit.tau2, method == "reml")[0]
            assert ll >= ll_ref - 1e-8 * (1 + abs(ll_ref))
