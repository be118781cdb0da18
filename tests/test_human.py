"""Human ratings by rater (issue 25): loading, Krippendorff's alpha, the mixed-model test,
per-rater z-scores and the variance components of a pilot."""

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import multistat
from multistat import cube
from multistat.human.agreement import krippendorff_alpha
from multistat.errors import DataValidationError, ParameterError
from multistat.power import LikertVariance, simulate_likert
from multistat.significance.mixed import fit_crossed, mixed_pair, mixed_test

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C: 4 observers
# x 12 units; alpha nominal 0.743, ordinal 0.815, interval 0.849, ratio 0.797 (the values
# printed there, to 3 decimals)
KRIPPENDORFF_2011 = [[1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
                     [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
                     [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
                     [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN]]


@pytest.mark.parametrize("level,expected", [("nominal", 0.743), ("ordinal", 0.815),
                                            ("interval", 0.849), ("ratio", 0.797)])
def test_krippendorff_worked_example(level, expected):
    res = krippendorff_alpha(KRIPPENDORFF_2011, level)
    assert round(res.alpha, 3) == expected
    assert res.n_units == 11 and res.n_values == 40 and res.n_raters == 4
    assert math.isnan(res.ci_low)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_equals_the_krippendorff_package_on_random_data(level):
    kp = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(7)
    for _ in range(6):
        raters, units = rng.integers(2, 7), rng.integers(5, 60)
        x = rng.integers(0, 7, size=(raters, units)).astype(float)
        if level in ("interval", "ratio"):
            x += np.round(rng.random(x.shape), 2)
        x[rng.random(x.shape) < 0.3] = NAN
        ours = krippendorff_alpha(x, level).alpha
        ref = kp.alpha(reliability_data=x, level_of_measurement=level)
        assert ours == pytest.approx(ref, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_bootstrap_resamples_are_alpha_of_resampled_units(level):
    # every resample equals alpha of the units table drawn by the same plan row
    from multistat.human.agreement import PLAN_DATASET
    from multistat.engine import plan_block

    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, size=(4, 30)).astype(float)
    x[rng.random(x.shape) < 0.25] = NAN
    keep = (~np.isnan(x)).sum(0) >= 2
    units = x[:, keep]
    plan = plan_block("bootstrap", units.shape[1], 200, 11, PLAN_DATASET, 0)
    from multistat.human.agreement import _Parts

    boot = _Parts(units.T, level).alpha(plan)
    for b in range(5):
        drawn = np.repeat(units, plan[b].astype(int), axis=1)
        assert boot[b] == pytest.approx(krippendorff_alpha(drawn, level).alpha, rel=1e-10)
    res = krippendorff_alpha(x, level, n_resamples=200, seed=11)
    finite = boot[np.isfinite(boot)]
    assert (res.ci_low, res.ci_high) == pytest.approx(tuple(np.quantile(finite,
                                                                        [0.025, 0.975])))
    again = krippendorff_alpha(x, level, n_resamples=200, seed=11)
    assert (again.ci_low, again.ci_high) == (res.ci_low, res.ci_high)


def test_krippendorff_is_shift_free_on_interval_data():
    rng = np.random.default_rng(1)
    x = np.round(rng.normal(size=(5, 40)) * 8) / 8  # a 1/8 grid: shifted values are exact
    a = krippendorff_alpha(x).alpha
    assert krippendorff_alpha(x + 2.0**40).alpha == pytest.approx(a, rel=1e-9)


@pytest.mark.parametrize("data,kw,match", [
    ([1, 2, 3], {}, r"`data` must be 2-D \(raters x units\); got 1-D"),
    ([[1, np.inf], [1, 2]], {}, r"infinite value \(rater 0, unit 1\)"),
    ([[1, -2], [1, 2]], {"level": "ratio"}, r"non-negative values"),
    ([[1, NAN], [NAN, 2]], {}, r"no pairable unit"),
    ([[1, 2], [1, 2]], {"level": "likert"}, r"`level` must be one of 'nominal'"),
    ([["a", "b"], ["a", "c"]], {}, r"numeric raters x units table"),
])
def test_krippendorff_refuses_bad_input(data, kw, match):
    with pytest.raises((DataValidationError, ParameterError), match=match):
        krippendorff_alpha(data, **kw)


# ---------------------------------------------------------------------------- loading
def _ratings_frame(seed=0, systems=("A", "B", "C"), items=8, raters=("r1", "r2", "r3"),
                   share=0.8):
    rng = np.random.default_rng(seed)
    rows = [(s, i, r, float(rng.integers(1, 6))) for s in systems for i in range(items)
            for r in raters if rng.random() < share]
    return pd.DataFrame(rows, columns=["system", "item", "rater", "likert"])


def test_rater_col_keeps_every_rating_and_scores_the_item_means(tmp_path):
    frame = _ratings_frame()
    path = tmp_path / "ratings.csv"
    frame.to_csv(path, index=False)
    study = multistat.load(path, score_col="likert", instance_col="item", rater_col="rater")
    ds = study["ratings"].to_dataset()
    assert ds[cube.RATING].dims == cube.RATING_DIMS
    assert ds.attrs["n_raters"] == 3
    for (s, i), part in frame.groupby(["system", "item"]):
        got = ds[cube.RATING].sel(system=s, metric="likert", instance=str(i)).values
        want = part.set_index("rater")["likert"].reindex(ds.rater.values).to_numpy()
        np.testing.assert_array_equal(got, want)
        assert ds.score.sel(system=s, metric="likert", instance=str(i)).item() == \
            pytest.approx(part["likert"].mean())
    back = multistat.open_study(multistat.save_study(study, tmp_path / "s.nc"))
    np.testing.assert_array_equal(back["ratings"][cube.RATING].values,
                                  ds[cube.RATING].values)


def test_a_repeated_rating_is_an_error_unless_averaged(tmp_path):
    frame = _ratings_frame()
    twice = pd.concat([frame, frame.iloc[[0]].assign(likert=5.0)])
    path = tmp_path / "twice.csv"
    twice.to_csv(path, index=False)
    with pytest.raises(DataValidationError, match=r"1 repeated rating: rater 'r1' rated "
                       r"dataset 'twice', system 'A', metric 'likert', instance '0' more "
                       r"than once.*rater_aggregate='mean'"):
        multistat.load(path, score_col="likert", instance_col="item", rater_col="rater")
    study = multistat.load(path, score_col="likert", instance_col="item", rater_col="rater",
                           rater_aggregate="mean")
    cell = study["twice"][cube.RATING].sel(system="A", instance="0", rater="r1").item()
    assert cell == pytest.approx((frame["likert"].iloc[0] + 5.0) / 2)
    with pytest.raises(ParameterError, match=r"`rater_aggregate` needs `rater_col`"):
        multistat.read_scores(path, score_col="likert", instance_col="item",
                              rater_aggregate="mean")


def test_cli_load_rater_col(tmp_path, capsys):
    from tests.conftest import run_cli

    path = tmp_path / "ratings.csv"
    _ratings_frame().to_csv(path, index=False)
    out = tmp_path / "study.nc"
    code, stdout, _ = run_cli(["load", str(path), "--score-col", "likert", "--instance-col",
                               "item", "--rater-col", "rater", "--out", str(out)], capsys)
    assert code == 0, stdout
    assert cube.RATING in multistat.open_study(out)["ratings"].to_dataset()


# ---------------------------------------------------------------------------- mixed model
#: the crossed model's standard deviations used where a test does not name its own
VARIANCE = LikertVariance(0.1, 0.11, 0.2, 0.14, 0.26)


def _crossed(rng, raters, items, share=1.0, var=VARIANCE, effect=0.05):
    w0, w1 = rng.normal(0, var.worker_intercept, raters), rng.normal(0, var.worker_slope,
                                                                     raters)
    i0, i1 = rng.normal(0, var.item_intercept, items), rng.normal(0, var.item_slope, items)
    ya = (0.5 + w0[None] + i0[:, None] + (effect + w1[None] + i1[:, None])
          + rng.normal(0, var.sigma, (items, raters)))
    yb = (0.5 + w0[None] + i0[:, None] - (effect + w1[None] + i1[:, None])
          + rng.normal(0, var.sigma, (items, raters)))
    ya[rng.random(ya.shape) > share] = NAN
    yb[rng.random(yb.shape) > share] = NAN
    return ya, yb


def _long(ya, yb):
    items, raters = np.indices(ya.shape)
    pa, pb = ~np.isnan(ya), ~np.isnan(yb)
    return pd.DataFrame({"y": np.concatenate([ya[pa], yb[pb]]),
                         "x": np.concatenate([np.ones(pa.sum()), -np.ones(pb.sum())]),
                         "rater": np.concatenate([raters[pa], raters[pb]]),
                         "item": np.concatenate([items[pa], items[pb]])})


def test_mixed_fit_equals_statsmodels_mixedlm_on_an_incomplete_unbalanced_design():
    import statsmodels.formula.api as smf

    ya, yb = _crossed(np.random.default_rng(11), raters=5, items=40, share=0.7)
    df = _long(ya, yb)
    vc = {"rater": "0 + C(rater)", "item": "0 + C(item)", "rater_x": "0 + C(rater):x",
          "item_x": "0 + C(item):x"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' convergence chatter
        ref = smf.mixedlm("y ~ x", df.assign(g=0), groups="g", re_formula="0",
                          vc_formula=vc).fit(reml=True)
    fit = fit_crossed(df["y"], df["x"], df["rater"], df["item"])
    # measured on this design: estimate 1.8e-7 apart, SE 2.6e-4 relative (statsmodels'
    # optimizer stops there; our REML log-likelihood is 1.2e-7 higher); the issue asks
    # 2e-3 and 10 %
    assert fit.beta[1] == pytest.approx(ref.fe_params["x"], abs=1e-6)
    assert math.sqrt(fit.cov_beta[1, 1]) == pytest.approx(ref.bse["x"], rel=1e-3)
    assert -fit.deviance / 2 == pytest.approx(ref.llf, abs=1e-4)  # same REML optimum
    # statsmodels orders the components alphabetically: item, item_x, rater, rater_x
    sds = np.sqrt(np.asarray(ref.vcomp))
    np.testing.assert_allclose([fit.sd["item_intercept"], fit.sd["item_slope"],
                                fit.sd["rater_intercept"], fit.sd["rater_slope"]], sds,
                               atol=5e-3)


def test_satterthwaite_df_matches_the_classical_balanced_design_value():
    # balanced crossed design: the slope's variance is the combination of mean squares
    # (MS_rater + MS_item - MS_residual) / (W I) of the per-cell half differences, whose
    # Satterthwaite df is the classical formula; REML shares sigma^2 with the intercepts,
    # so the two agree closely, not exactly (0.3 % here)
    W, I = 6, 40
    ya, yb = _crossed(np.random.default_rng(3), raters=W, items=I,
                      var=LikertVariance(0.1, 0.15, 0.2, 0.14, 0.26))
    df = _long(ya, yb)
    fit = fit_crossed(df["y"], df["x"], df["rater"], df["item"])
    z = ((ya - yb) / 2).T  # (W, I)
    g, mw, mi = z.mean(), z.mean(1), z.mean(0)
    msw = I * ((mw - g) ** 2).sum() / (W - 1)
    msi = W * ((mi - g) ** 2).sum() / (I - 1)
    mse = ((z - mw[:, None] - mi[None] + g) ** 2).sum() / ((W - 1) * (I - 1))
    classical = (msw + msi - mse) ** 2 / (msw**2 / (W - 1) + msi**2 / (I - 1)
                                          + mse**2 / ((W - 1) * (I - 1)))
    assert fit.df == pytest.approx(classical, rel=0.01)
    assert fit.beta[1] == pytest.approx(g, abs=1e-9)  # balanced: GLS = the grand mean


def test_mixed_without_raters_is_the_paired_t_test():
    from scipy import stats

    rng = np.random.default_rng(2)
    x, y = rng.normal(0.3, 1, (3, 50)), rng.normal(0, 1, (3, 50))
    res = mixed_test(x, y)
    ref = stats.ttest_rel(x, y, axis=-1)
    np.testing.assert_allclose(res.p_value, ref.pvalue, rtol=1e-10)
    np.testing.assert_allclose(res.statistic, ref.statistic, rtol=1e-10)
    lo, hi = ref.confidence_interval()
    np.testing.assert_allclose(res.ci_low, lo, rtol=1e-10)
    np.testing.assert_allclose(res.ci_high, hi, rtol=1e-10)


def _rating_study(ya, yb, name="pilot"):
    rating = np.stack([ya, yb])[:, None]  # (S=2, M=1, items, raters)
    ds = cube.make_dataset(name, cube.run_mean(rating), systems=["a", "b"],
                           metrics=["likert"],
                           instances=[f"i{j:03d}" for j in range(ya.shape[0])],
                           rating=rating, raters=[f"r{j}" for j in range(ya.shape[1])])
    return cube.make_study({name: ds})


def test_compare_mixed_reads_the_ratings_and_swaps_with_the_pair():
    ya, yb = _crossed(np.random.default_rng(4), raters=6, items=30, share=0.8)
    study = _rating_study(ya, yb)
    table = multistat.compare(study, tests=("mixed",), pairs=[("a", "b"), ("b", "a")],
                              correction=None)
    ab, ba = table.iloc[0], table.iloc[1]
    direct = mixed_pair(ya, yb)
    assert ab["estimate"] == pytest.approx(direct["estimate"], rel=1e-12)
    assert ab["p_value"] == pytest.approx(direct["p_value"], rel=1e-12)
    assert ba["estimate"] == pytest.approx(-ab["estimate"], rel=1e-6)
    assert ba["p_value"] == pytest.approx(ab["p_value"], rel=1e-5)
    assert "Satterthwaite" in ab["note"]
    assert ab["ci_low"] < ab["estimate"] < ab["ci_high"]


# ---------------------------------------------------------------------------- pilot
def test_variance_components_recover_the_simulated_ones_and_plan_the_study():
    true = LikertVariance(0.01, 0.11, 0.04, 0.14, 0.26)  # Card et al. Table 16, "high"
    ya, yb = _crossed(np.random.default_rng(5), raters=30, items=400, var=true)
    vc = multistat.variance_components(_rating_study(ya, yb))
    for name in ("worker_intercept", "worker_slope", "item_intercept", "item_slope",
                 "sigma"):
        assert getattr(vc.variance, name) == pytest.approx(getattr(true, name), abs=0.04)
    assert vc.n_raters == 30 and vc.n_items == 400 and vc.n_ratings == 2 * 30 * 400
    # power planned from the estimate is within Monte Carlo error of the truth's
    plan = {"n_items": 100, "n_workers": 5, "effect": 0.05, "n_simulations": 2000,
            "seed": 1}
    p_est = simulate_likert(variance=vc.variance, **plan).power
    p_true = simulate_likert(variance=true, **plan).power
    se = math.sqrt(2 * p_true * (1 - p_true) / 2000)
    assert abs(p_est - p_true) <= 4 * se + 0.02  # MC error plus the estimates' own error


def test_variance_components_refuses_what_it_cannot_fit():
    ya, yb = _crossed(np.random.default_rng(5), raters=3, items=10)
    study = _rating_study(ya, yb)
    with pytest.raises(ParameterError, match=r"unknown system\(s\) \['c'\]"):
        multistat.variance_components(study, systems=["a", "c"])
    with pytest.raises(ParameterError, match=r"`metric`: unknown metric 'bleu'"):
        multistat.variance_components(study, metric="bleu")
    plain = cube.make_study({"x": cube.make_dataset(
        "x", np.zeros((2, 1, 3)) + np.arange(3), systems=["a", "b"], metrics=["m"],
        instances=["0", "1", "2"])})
    with pytest.raises(DataValidationError, match=r"no ratings by rater: read the scores "
                                                  r"with rater_col="):
        multistat.variance_components(plain)


def test_standardize_gives_per_rater_z_scores():
    ya, yb = _crossed(np.random.default_rng(6), raters=4, items=20, share=0.8)
    ya[:, 0] *= 3  # a harsh-scaled rater
    study = _rating_study(ya, yb)
    z = multistat.standardize(study, by="rater")["pilot"].to_dataset()
    r = z[cube.RATING].values  # (S, M, n, R)
    for q in range(4):
        vals = r[:, 0, :, q][~np.isnan(r[:, 0, :, q])]
        assert vals.mean() == pytest.approx(0.0, abs=1e-12)
        assert vals.std(ddof=1) == pytest.approx(1.0)
    raw = z[cube.RATING] * z["rater_sd"] + z["rater_mean"]
    np.testing.assert_allclose(raw.transpose(*cube.RATING_DIMS).values,
                               study["pilot"][cube.RATING].values, rtol=1e-12)
    assert z[cube.RATING].attrs["standardized"] == "z-score by rater"
    np.testing.assert_allclose(z.score.values, np.nanmean(r, axis=-1))
    yb[:, 2] = ya[:, 2] = 3.0  # a rater who always gives 3
    with pytest.raises(DataValidationError, match=r"rater 'r2' has all its ratings equal"):
        multistat.standardize(_rating_study(ya, yb))


def test_docstring_examples():
    import doctest

    from multistat.human import agreement
    from multistat.significance import mixed

    for module in (agreement, mixed):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_ratings_calibration_cells_through_compare():
    # a short run of make validate's human-rating part: 8 raters x 30 items of Card et
    # al.'s low-variance design, where Satterthwaite's df are large and the test holds
    from validation import calibration as C
    size, cover = C.run_ratings_setting("low", 8, 30, replicates=80, n_groups=2)
    assert size["test"] == "mixed" and size["replicates"] == 80
    assert size["distribution"] == "card-low 8 raters" and size["n"] == 30
    assert size["verdict"] == "ok", size
    assert cover["verdict"] == "ok", cover
    assert cover["rate"] == pytest.approx(1 - size["rate"], abs=1e-12)  # t inverts t


# ---------------------------------------------------------------------------- unpaired
def test_unpaired_tests_equal_scipy_and_their_estimates_brute_force():
    from scipy import stats

    from multistat.significance.unpaired import brunner_munzel, kth_difference, mannwhitney

    rng = np.random.default_rng(8)
    for _ in range(8):
        a = np.round(rng.normal(0.4, 1, rng.integers(5, 60)), 1)
        b = np.round(rng.normal(0, 1.5, rng.integers(5, 60)), 1)
        d = np.sort(np.subtract.outer(a, b).ravel())
        for alt in ("two-sided", "greater", "less"):
            mw = mannwhitney(a, b, alternative=alt)
            assert float(mw.p_value) == pytest.approx(
                stats.mannwhitneyu(a, b, alternative=alt).pvalue, rel=1e-12)
            bm = brunner_munzel(a, b, alternative=alt)
            assert float(bm.p_value) == pytest.approx(
                stats.brunnermunzel(a, b, alternative=alt).pvalue, rel=1e-12)
        assert float(mw.estimate) == np.median(d)
        rel = np.mean(a[:, None] > b[None]) + 0.5 * np.mean(a[:, None] == b[None])
        assert float(bm.extra["relative_effect"]) == pytest.approx(rel, rel=1e-12)
        two = brunner_munzel(a, b)
        assert two.extra["relative_effect_ci_low"] <= rel <= two.extra[
            "relative_effect_ci_high"]
        for k in (0, d.size // 3, d.size - 1):
            assert kth_difference(np.sort(a), np.sort(b), k) == d[k]
    # the interval is the inversion of scipy's test: reject iff the shift lies outside
    a = np.round(rng.normal(0.4, 1, 30), 1)
    b = np.round(rng.normal(0, 1, 25), 1)
    res = mannwhitney(a, b)
    for delta in np.linspace(-1.5, 2.0, 36):
        p = stats.mannwhitneyu(a - delta, b).pvalue
        outside = delta < res.ci_low or delta > res.ci_high
        assert (p <= 0.05) == outside, delta


def test_compare_unpaired_tests_use_each_systems_own_scores():
    from scipy import stats

    rng = np.random.default_rng(9)
    score = np.round(rng.normal(size=(3, 1, 40)), 1)
    score[0] += 0.8
    study = cube.make_study({"d": cube.make_dataset(
        "d", score, systems=["a", "b", "c"], metrics=["m"],
        instances=[str(i) for i in range(40)])})
    table = multistat.compare(study, tests=("mannwhitney", "brunner-munzel"),
                              correction=None)
    row = table[(table.test == "mannwhitney") & (table.system_a == "a")
                & (table.system_b == "b")].iloc[0]
    assert row["p_value"] == pytest.approx(stats.mannwhitneyu(score[0, 0],
                                                              score[1, 0]).pvalue)
    assert row["n_a"] == row["n_b"] == 40
    bm = table[(table.test == "brunner-munzel") & (table.system_a == "a")
               & (table.system_b == "c")].iloc[0]
    assert bm["p_value"] == pytest.approx(stats.brunnermunzel(score[0, 0],
                                                              score[2, 0]).pvalue)
    assert 0.5 < bm["relative_effect"] <= 1


def test_mixed_without_raters_is_the_paired_t_test_constant_differences_included():
    """Without raters the model is the paired t test: compare's "mixed" rows equal its "t"
    rows (the same batch), and constant differences give NaN with the t test's reason,
    also per pair and under a shift of 1.7e12 (a p of 1.6e-104 before: rounding left a
    tiny nonzero variance)."""
    from multistat.significance.mixed import mixed_test

    rng = np.random.default_rng(0)
    a = np.round(rng.normal(size=200), 2)
    X = np.stack([a, a - 0.1, a + rng.normal(0, 1, 200)])[:, None, :]
    study = cube.make_study({"d": cube.make_dataset(
        "d", X, systems=["a", "b", "c"], metrics=["m"],
        instances=[f"i{i:03d}" for i in range(200)], kind=["mean"])})
    table = multistat.compare(study, tests=("t", "mixed"), effect_sizes=False)
    t, mixed = (table[table["test"] == k].reset_index(drop=True) for k in ("t", "mixed"))
    for col in ("estimate", "se", "statistic", "p_value", "ci_low", "ci_high"):
        np.testing.assert_array_equal(mixed[col], t[col])
    assert np.isnan(mixed.loc[0, "p_value"]) and "differences are equal" in mixed.loc[0, "note"]
    assert (mixed.loc[1:, "p_value"] > 0).all()
    for shift in (0.0, 1.7e12):
        r = mixed_test(a + shift, a - 0.1 + shift)
        assert np.isnan(r.p_value) and "constant" in str(r.note)


def test_variance_components_pool_compares_own_fits(tmp_path, monkeypatch):
    """With a compare table's mixed rows (the report passes its table) the components are
    pooled from those fits, not refitted: the same numbers, and fit_crossed is not called."""
    import multistat.significance.mixed as mixed_mod

    rng = np.random.default_rng(5)
    item, rater = rng.normal(0, 0.5, 30), rng.normal(0, 0.3, 4)
    rows = [{"system": f"s{s}", "metric": "q", "instance": f"i{i:02d}", "rater": f"r{r}",
             "score": 3 + 0.2 * s + item[i] + rater[r] + rng.normal(0, 1)}
            for s in range(4) for i in range(30) for r in range(4) if rng.random() < 0.8]
    pd.DataFrame(rows).to_csv(tmp_path / "ratings.csv", index=False)
    study = multistat.load(tmp_path / "ratings.csv", rater_col="rater")
    table = multistat.compare(study, tests=("mixed",), effect_sizes=False)
    refit = multistat.variance_components(study, metric="q")
    monkeypatch.setattr(mixed_mod, "fit_crossed", lambda *a, **k: pytest.fail("refitted"))
    pooled = multistat.variance_components(study, metric="q", fits=table)
    assert dataclasses.astuple(pooled.variance) == pytest.approx(
        dataclasses.astuple(refit.variance), rel=1e-12)
    assert (pooled.intercept, pooled.effect, pooled.n_ratings) == pytest.approx(
        (refit.intercept, refit.effect, refit.n_ratings), rel=1e-12)


def test_agreement_of_a_study_is_a_table_and_the_old_study_path_warns():
    # krippendorff_alpha takes a raters x units table and returns a KrippendorffResult;
    # a study's alphas (one per dataset x system x metric) come from multistat.agreement
    ya, yb = _crossed(np.random.default_rng(4), raters=4, items=25, share=0.8)
    study = _rating_study(ya, yb)
    table = multistat.agreement(study, n_resamples=100, seed=2)
    assert list(table["system"]) == ["a", "b"] and table["alpha"].notna().all()
    # the per-system alpha is krippendorff_alpha of that system's raters x items table
    ref = krippendorff_alpha(ya.T, "interval").alpha
    assert table.loc[table.system == "a", "alpha"].item() == pytest.approx(ref, rel=1e-12)
    with pytest.warns(DeprecationWarning, match=r"multistat\.agreement"):
        old = krippendorff_alpha(study, n_resamples=100, seed=2)
    pd.testing.assert_frame_equal(old, table)


def test_cli_agreement_and_components(tmp_path, capsys):
    # human evaluation on the command line: alpha per system (the library's numbers) and
    # the pooled variance components with the per-pair table
    from conftest import assert_one_line_error, run_cli

    ya, yb = _crossed(np.random.default_rng(4), raters=4, items=25, share=0.8)
    study = _rating_study(ya, yb)
    path = tmp_path / "pilot.nc"
    cube.save(study, path)
    out = tmp_path / "agreement.parquet"
    status, stdout, err = run_cli(["agreement", path, "-o", out, "--n-resamples", "200",
                                   "--seed", "3"], capsys)
    assert status == 0, err
    ref = multistat.agreement(study, n_resamples=200, seed=3)
    got = multistat.read_parquet(out)
    np.testing.assert_array_equal(got["alpha"].to_numpy(), ref["alpha"].to_numpy())
    assert f"pilot / likert / a: alpha = {ref['alpha'].iloc[0]:.3f}" in stdout
    out = tmp_path / "components.parquet"
    status, stdout, err = run_cli(["components", path, "-o", out], capsys)
    assert status == 0, err
    vc = multistat.variance_components(study)
    rows, meta = multistat.read_table(out)
    assert meta["pooled"]["sigma"] == pytest.approx(vc.variance.sigma, rel=1e-12)
    assert len(rows) == 1 and "pooled standard deviations: worker_intercept" in stdout
    status, _, err = run_cli(["components", path, "--systems", "a", "-o", out], capsys)
    assert_one_line_error(status, err, "two")


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_variance_components_at_extreme_scales_equal_scale_one(scale, tmp_path):
    """Ratings times 1e+-300 give the components of the same ratings times the scale
    (main, 3c3bb2d: an OverflowError at 1e300, "no pair could be fitted" at 1e-300)."""
    import multistat as ms

    rng = np.random.default_rng(0)
    rows = [(s, f"i{i}", r, float(rng.integers(1, 6))) for s in ("A", "B", "C")
            for i in range(12) for r in ("r1", "r2", "r3")]
    frame = pd.DataFrame(rows, columns=["system", "instance", "rater", "score"])
    out = {}
    for s in (1.0, scale):
        frame.assign(score=frame["score"] * s).to_csv(tmp_path / "r.csv", index=False)
        out[s] = ms.variance_components(ms.load(tmp_path / "r.csv", rater_col="rater"))
    one, far = out[1.0], out[scale]
    for k in ("worker_intercept", "worker_slope", "item_intercept", "item_slope", "sigma"):
        # the REML optimizer's own tolerance, not the scale, bounds the agreement
        assert getattr(far.variance, k) / scale == pytest.approx(
            getattr(one.variance, k), rel=1e-6, abs=1e-6), k
    assert far.effect / scale == pytest.approx(one.effect, rel=1e-9)
    assert far.intercept / scale == pytest.approx(one.intercept, rel=1e-9)
