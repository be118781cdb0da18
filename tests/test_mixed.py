"""The crossed mixed model of human ratings at the REML optimum: closed forms of balanced
designs (REML = the ANOVA estimators; Satterthwaite's df of the slope), a brute-force
optimum of the same criterion on every boundary face, an independent dense computation of
lmerTest's Satterthwaite df, boundary (singular) fits, and degenerate data."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize

import multistat
from multistat import cube
from multistat.errors import DataValidationError
from multistat.significance._batch import _blas_controller
from multistat.significance.mixed import _Crossed, fit_crossed, mixed_pair

NAN = np.nan


def _draw(rng, raters, items, sds=(0.3, 0.2, 0.4, 0.25), sigma=0.5, effect=0.1,
          share=1.0):
    """Ratings (items, raters) of two systems under the crossed model."""
    w0, w1 = rng.normal(0, sds[0], raters), rng.normal(0, sds[1], raters)
    i0, i1 = rng.normal(0, sds[2], items), rng.normal(0, sds[3], items)
    base = 3 + w0[None] + i0[:, None]
    slope = effect + w1[None] + i1[:, None]
    ya = base + slope + rng.normal(0, sigma, (items, raters))
    yb = base - slope + rng.normal(0, sigma, (items, raters))
    ya[rng.random(ya.shape) > share] = NAN
    yb[rng.random(yb.shape) > share] = NAN
    return ya, yb


def _long(ya, yb):
    items, raters = np.indices(ya.shape)
    pa, pb = ~np.isnan(ya), ~np.isnan(yb)
    return (np.concatenate([ya[pa], yb[pb]]),
            np.concatenate([np.ones(pa.sum()), -np.ones(pb.sum())]),
            np.concatenate([raters[pa], raters[pb]]), np.concatenate([items[pa], items[pb]]))


def _two_way(z):
    """Mean squares of a complete two-way table without replication (raters x items):
    (MS_rater, MS_item, SS_residual)."""
    R, I = z.shape
    g, mr, mi = z.mean(), z.mean(1), z.mean(0)
    ms_r = I * ((mr - g) ** 2).sum() / (R - 1)
    ms_i = R * ((mi - g) ** 2).sum() / (I - 1)
    ss_e = ((z - mr[:, None] - mi[None] + g) ** 2).sum()
    return ms_r, ms_i, ss_e


def _balanced_reference(ya, yb):
    """The expected-mean-squares solution of a balanced complete design.

    With z = (a - b) / 2 and s = (a + b) / 2 per cell, the REML likelihood factors over
    the strata rater-z, item-z, rater-s, item-s and the two residual strata, which share
    E = sigma^2 / 2; when every estimate below is positive REML equals them:
    sigma^2 / 2 = (SS_Ez + SS_Es) / (2 (R-1)(I-1)), slope variances (MS_Rz - E) / I and
    (MS_Iz - E) / R, intercept variances (MS_Rs - E) / I and (MS_Is - E) / R. The slope
    beta_1 is the mean of z with variance V = (MS_Rz + MS_Iz - E) / (R I); the Hessian of
    the REML deviance in the expected mean squares is diagonal (each MS_j ~ E_j
    chi2_{df_j} / df_j), so Satterthwaite's df is the classical
    V^2 / (MS_Rz^2 / (R-1) + MS_Iz^2 / (I-1) + E^2 / (2 (R-1)(I-1))) * (R I)^2 / (R I)^2."""
    z, s = ((ya - yb) / 2).T, ((ya + yb) / 2).T
    R, I = z.shape
    rz, iz, ez = _two_way(z)
    rs, is_, es = _two_way(s)
    e = (ez + es) / (2 * (R - 1) * (I - 1))
    num = rz + iz - e
    return {"sigma": np.sqrt(2 * e), "rater_slope": np.sqrt((rz - e) / I),
            "item_slope": np.sqrt((iz - e) / R), "rater_intercept": np.sqrt((rs - e) / I),
            "item_intercept": np.sqrt((is_ - e) / R), "beta1": z.mean(),
            "se": np.sqrt(num / (R * I)),
            "df": num**2 / (rz**2 / (R - 1) + iz**2 / (I - 1) + e**2 / (2 * (R - 1) * (I - 1))),
            "positive": min(rz, iz, rs, is_) > e}


@pytest.mark.parametrize("seed,raters,items", [(1, 6, 40), (2, 4, 30), (3, 12, 9)])
def test_balanced_design_equals_the_anova_estimators_and_classical_df(seed, raters, items):
    rng = np.random.default_rng(seed)
    ya, yb = _draw(rng, raters, items)
    ref = _balanced_reference(ya, yb)
    assert ref["positive"]  # the design is drawn so; else REML is not the ANOVA solution
    fit = fit_crossed(*_long(ya, yb))
    assert fit.converged and fit.boundary == () and fit.note == ""
    for name in ("sigma", "rater_slope", "item_slope", "rater_intercept", "item_intercept"):
        assert fit.sd[name] == pytest.approx(ref[name], rel=1e-6), name
    assert fit.beta[1] == pytest.approx(ref["beta1"], abs=1e-12)
    assert np.sqrt(fit.cov_beta[1, 1]) == pytest.approx(ref["se"], rel=1e-6)
    assert fit.df == pytest.approx(ref["df"], rel=1e-6)


def test_rater_slope_at_the_boundary_gives_items_minus_one_df():
    """Balanced, the rater slopes' mean square below the residual one: REML puts the rater
    slope variance at exactly 0 (pooling its stratum into the residual), the slope's
    variance is then MS_Iz / (R I), a function of the item stratum alone, and its
    Satterthwaite df is exactly I - 1 (the old log-scale optimizer left ~1e-3 there and
    reported non-integer df)."""
    rng = np.random.default_rng(7)
    R, I = 5, 24
    ya, yb = _draw(rng, R, I, sds=(0.3, 0.0, 0.4, 0.3))
    z, s = ((ya - yb) / 2).T, ((ya + yb) / 2).T
    rz, iz, ez = _two_way(z)
    rs, is_, es = _two_way(s)
    pooled = (rz * (R - 1) + ez + es) / ((R - 1) + 2 * (R - 1) * (I - 1))
    assert rz < pooled < min(iz, rs, is_)  # the design is drawn so
    fit = fit_crossed(*_long(ya, yb))
    assert fit.sd["rater_slope"] == 0.0 and fit.boundary == ("rater_slope",)
    assert fit.converged
    assert "boundary (singular) fit: rater_slope variance 0" in fit.note
    assert fit.sd["sigma"] == pytest.approx(np.sqrt(2 * pooled), rel=1e-6)
    assert np.sqrt(fit.cov_beta[1, 1]) == pytest.approx(np.sqrt(iz / (R * I)), rel=1e-6)
    assert fit.df == pytest.approx(I - 1, rel=1e-6)
    row = mixed_pair(ya, yb)
    assert "boundary (singular) fit" in row["note"] and row["df"] == pytest.approx(I - 1)


def _brute_force(model):
    """The smallest REML criterion found on every boundary face (each subset of the four
    components held at 0): L-BFGS-B over theta with finite-difference gradients (not the
    fit's analytic ones, nor its variance-ratio scale) from 2 starts per face, the best
    point polished by a derivative-free bounded optimizer (Powell)."""
    rng = np.random.default_rng(0)
    cands = []
    for mask in range(16):
        free = np.array([not (mask >> j) & 1 for j in range(4)])

        def f(v, free=free):
            th = np.zeros(4)
            th[free] = v
            return model.solve(th)[0]

        if not free.any():
            cands.append((f(np.zeros(0)), f, np.zeros(0)))
            continue
        for start in range(2):
            x0 = (np.full(free.sum(), 0.5) if start == 0
                  else np.exp(rng.uniform(-4, 1, free.sum())))
            res = minimize(f, x0, method="L-BFGS-B", bounds=[(0, 1e3)] * free.sum(),
                           options={"ftol": 1e-15, "gtol": 1e-9})
            cands.append((res.fun, f, res.x))
    fun, f, x = min(cands, key=lambda c: c[0])
    if x.size:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = minimize(f, x, method="Powell", bounds=[(0, 1e3)] * x.size,
                           options={"xtol": 1e-10, "ftol": 1e-15, "maxfev": 3000})
        fun = min(fun, res.fun)
    return fun


@pytest.mark.parametrize("seed,sds,share,likert", [
    (12, (0.2, 0.0, 0.0, 0.03), 0.7, False),     # zero and small components, holes
    (11, (0.0, 0.03, 0.4, 0.0), 1.0, False),     # balanced
    (13, (0.0, 0.0, 0.5, 0.3), 0.8, True),       # Likert
])
def test_fit_is_at_least_as_good_as_a_brute_force_search_of_every_face(seed, sds, share,
                                                                        likert):
    rng = np.random.default_rng(seed)
    ya, yb = _draw(rng, 3, 10, sds=sds, share=share)
    if likert:
        ya, yb = np.clip(np.round(ya), 1, 5), np.clip(np.round(yb), 1, 5)
    y, x, r, i = _long(ya, yb)
    fit = fit_crossed(y, x, r, i)
    model = _Crossed(y, x, r, i)
    theta = np.array([fit.sd[c] for c in ("rater_intercept", "rater_slope",
                                          "item_intercept", "item_slope")]) / fit.sd["sigma"]
    ours = model.solve(theta)[0]
    with _blas_controller().limit(limits=1, user_api="blas"):  # tiny products: 1 thread
        reference = _brute_force(model)
    assert ours <= reference + 1e-8
    assert fit.converged
    assert (fit.note == "") == (fit.boundary == ())


def _dense_satterthwaite(y, x, r, i, sd):
    """lmerTest's Satterthwaite df of the slope computed from N x N matrices: V =
    sigma^2 I + sum_k v_k Z_k Z_k', P the REML projection, the Hessian of the REML
    deviance -tr(P G_k P G_l) + 2 y'P G_k P G_l P y and the gradient of Var(beta_1)
    [C X'W G_k W X C]_11 (G_0 = I) over the components above 0."""
    N = y.size
    X = np.stack([np.ones(N), x], axis=1)
    ones_r, ones_i = np.eye(r.max() + 1)[r], np.eye(i.max() + 1)[i]
    Zs = [ones_r, ones_r * x[:, None], ones_i, ones_i * x[:, None]]
    names = ("rater_intercept", "rater_slope", "item_intercept", "item_slope")
    tau = [sd["sigma"] ** 2] + [sd[n] ** 2 for n in names]
    G = [np.eye(N)] + [Z @ Z.T for Z in Zs]
    keep = [k for k in range(5) if tau[k] > 0]
    V = sum(t * g for t, g in zip(tau, G))
    W = np.linalg.inv(V)
    C = np.linalg.inv(X.T @ W @ X)
    P = W - W @ X @ C @ X.T @ W
    Py = P @ y
    H = np.array([[-np.trace(P @ G[k] @ P @ G[m]) + 2 * Py @ G[k] @ P @ G[m] @ Py
                   for m in keep] for k in keep])
    g = np.array([(C @ X.T @ W @ G[k] @ W @ X @ C)[1, 1] for k in keep])
    return C[1, 1] ** 2 / (g @ np.linalg.solve(H, g)), C[1, 1]


def test_satterthwaite_df_holds_for_tiny_variances():
    """A rater slope variance of ~8e-5 next to sigma^2 ~ 0.25: the Hessian is the
    central difference of the analytic gradient with a step relative to each variance,
    equal to the dense computation to 1e-6 (a finite-difference Hessian of the deviance
    with a relative step of 1e-4 drowns in rounding there)."""
    rng = np.random.default_rng(24)  # a seed where REML puts the rater slope at ~8e-5
    ya, yb = _draw(rng, 6, 12, sds=(0.3, 0.01, 0.4, 0.3), share=0.8)
    y, x, r, i = _long(ya, yb)
    fit = fit_crossed(y, x, r, i)
    assert 0 < fit.sd["rater_slope"] ** 2 < 2e-4 and fit.converged
    df, var = _dense_satterthwaite(y, x, r, i, fit.sd)
    assert fit.cov_beta[1, 1] == pytest.approx(var, rel=1e-9)
    assert fit.df == pytest.approx(df, rel=1e-6)


def test_same_result_under_a_shift_and_a_reshuffle_of_the_rows():
    rng = np.random.default_rng(21)
    ya, yb = _draw(rng, 4, 30, sds=(0.3, 0.05, 0.3, 0.1))
    ya, yb = np.clip(np.round(ya), 1, 5), np.clip(np.round(yb), 1, 5)
    y, x, r, i = _long(ya, yb)
    base = fit_crossed(y, x, r, i)
    perm = rng.permutation(y.size)
    for fit in (fit_crossed(y + 1e12, x, r, i), fit_crossed(y[perm], x[perm], r[perm],
                                                            i[perm])):
        assert fit.beta[1] == pytest.approx(base.beta[1], rel=1e-6, abs=1e-9)
        assert np.sqrt(fit.cov_beta[1, 1]) == pytest.approx(np.sqrt(base.cov_beta[1, 1]),
                                                             rel=1e-6)
        assert fit.df == pytest.approx(base.df, rel=1e-6)
        assert fit.boundary == base.boundary


def _study(ya, yb, raters=None):
    rating = np.stack([ya, yb])[:, None]
    ds = cube.make_dataset("pilot", cube.run_mean(rating), systems=["a", "b"],
                           metrics=["likert"],
                           instances=[f"i{j:03d}" for j in range(ya.shape[0])],
                           rating=rating,
                           raters=raters or [f"r{j}" for j in range(ya.shape[1])])
    return cube.make_study({"pilot": ds})


@pytest.mark.parametrize("shift", [0.0, 1.0])
def test_ratings_without_variance_give_no_test_and_say_why(shift):
    """All ratings equal (or equal within each system): no variance to estimate. The
    test returns the exact difference, no p-value and a note; compare and rank run;
    variance_components refuses with a clear message."""
    ya, yb = np.full((8, 3), 3.0 + shift), np.full((8, 3), 3.0)
    row = mixed_pair(ya, yb)
    assert row["estimate"] == pytest.approx(2 * shift / 2 * 1.0 if shift else 0.0)
    assert "p_value" not in row and "do not vary" in row["note"]
    table = multistat.compare(_study(ya, yb), tests=("mixed",), correction=None)
    assert np.isnan(table.loc[0, "p_value"]) and "do not vary" in table.loc[0, "note"]
    multistat.rank(_study(ya, yb), test="mixed")
    with pytest.raises(DataValidationError, match=r"do not vary"):
        multistat.variance_components(_study(ya, yb))


def test_variance_components_refuse_a_single_rater():
    rng = np.random.default_rng(3)
    ya, yb = _draw(rng, 1, 20)
    with pytest.raises(DataValidationError, match=r"at least 2 raters.*1 \('r0'\)"):
        multistat.variance_components(_study(ya, yb))


def test_power_likert_from_a_pilot_without_variance_exits_with_one_line(tmp_path, capsys):
    from conftest import run_cli

    path = cube.save(_study(np.full((8, 3), 4.0), np.full((8, 3), 4.0)), tmp_path / "p.nc")
    code, out, err = run_cli(["power", "likert", "--pilot", str(path), "--n-workers", "5",
                              "--n-items", "50", "--effect", "0.1"], capsys)
    assert code == 2 and "do not vary" in err + out and "Traceback" not in err + out


def test_exchanging_raters_and_items_exchanges_the_components_and_the_note():
    rng = np.random.default_rng(7)  # the design of the rater-slope boundary test
    ya, yb = _draw(rng, 5, 24, sds=(0.3, 0.0, 0.4, 0.3))
    y, x, r, i = _long(ya, yb)
    fit, swapped = fit_crossed(y, x, r, i), fit_crossed(y, x, i, r)
    assert swapped.boundary == ("item_slope",) and "item_slope variance 0" in swapped.note
    assert swapped.df == pytest.approx(fit.df, rel=1e-6)
    for a, b in (("rater", "item"), ("item", "rater")):
        for part in ("intercept", "slope"):
            assert swapped.sd[f"{a}_{part}"] == pytest.approx(fit.sd[f"{b}_{part}"],
                                                               rel=1e-6, abs=1e-12)
