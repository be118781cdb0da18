"""Westfall-Young step-down (multistat.comparison.stepdown): FWER by simulation, relation to Holm.

Simulations draw systems with a shared instance effect (so pairs that share systems and
instances are correlated, as on a leaderboard) and resample them with the engine's plans
(:func:`multistat.engine.bootstrap_counts`, :func:`multistat.engine.sign_flips`),
one plan for every pair of the family.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import labels_study

from multistat.correct import holm
from multistat.engine import bootstrap_counts, sign_flips
from multistat.comparison.stepdown import from_matrix, westfall_young

ALPHA = 0.05


def correlated_systems(rng, S=6, n=80, rho=0.9, shift=0.0):
    """System 0, and S - 1 systems sharing a common component (correlation rho between
    them): the pairs (0, j) are strongly correlated with each other. ``shift`` is added
    to system 0 (0: the complete null)."""
    inst = rng.normal(0, 1, n)
    common = rng.normal(0, 1, n)
    X = np.empty((S, n))
    X[0] = inst + rng.normal(0, 1, n) + shift
    for s in range(1, S):
        X[s] = inst + np.sqrt(rho) * common + np.sqrt(1 - rho) * rng.normal(0, 1, n)
    return X


def null_and_observed(rng, X, ia, ib, B, kind):
    n = X.shape[1]
    obs = X[ia].mean(1) - X[ib].mean(1)
    if kind == "bootstrap":  # centred bootstrap: per-system resample means, pairs last
        dist = bootstrap_counts(rng, B, n) @ X.T / n
        return (dist[:, ia] - dist[:, ib]) - obs, obs
    return sign_flips(rng, B, n) @ (X[ia] - X[ib]).T / n, obs


def raw_pvalues(null, obs):
    b = null.shape[0]
    return (np.sum(np.abs(null) >= np.abs(obs) - 1e-12, 0) + 1) / (b + 1)


@pytest.mark.parametrize("kind,method", [("permutation", "maxT"), ("bootstrap", "maxT"),
                                         ("bootstrap", "minP")])
def test_fwer_complete_null_and_holm_relation(kind, method):
    rng = np.random.default_rng(20261123)
    R, B, S = 500, 500, 6
    ia, ib = np.triu_indices(S, 1)
    any_wy = any_holm = 0
    missed, near, excess = 0, 0, 0.0
    for _ in range(R):
        X = correlated_systems(rng, S=S)
        null, obs = null_and_observed(rng, X, ia, ib, B, kind)
        r_wy, p_wy = from_matrix(null, obs, method=method, alpha=ALPHA)
        raw = raw_pvalues(null, obs)
        r_h, p_h = holm(raw, ALPHA)
        # Monte Carlo error of the two adjusted p-values from B resamples: Holm's is
        # (m - j + 1) x the raw p (sd sqrt(p(1 - p)/B), p at least 1/B: a raw p at its
        # floor 1/(B + 1) is not resolved), Westfall-Young's a share of B resamples
        m = len(raw)
        mult = m - np.argsort(np.argsort(raw, kind="stable"), kind="stable")
        pr = np.maximum(raw, 1 / B)
        var_h = mult**2 * pr * (1 - pr) / B
        var_w = np.maximum(p_wy * (1 - p_wy), 1 / B) / B
        tol = 3 * np.sqrt(var_h + var_w)
        # a Holm rejection Westfall-Young misses must be a coin toss at the boundary:
        # Holm's p within Monte Carlo error of alpha
        missed += np.sum(r_h & ~r_wy & (p_h < ALPHA - tol))
        near += np.sum(r_h & ~r_wy)
        excess = max(excess, float(np.max(p_wy - p_h - tol)))
    fwer = any_wy / R
    # within Monte Carlo error of alpha or below: 3 sd of a binomial share at R replicates
    assert fwer <= ALPHA + 3 * np.sqrt(ALPHA * (1 - ALPHA) / R), fwer
    assert any_wy >= any_holm  # never fewer family-wise rejections than Holm
    assert missed == 0  # every Holm rejection is a Westfall-Young rejection ...
    assert near <= 2  # ... but for at most a boundary case or two in R families
    assert excess <= 0, excess


@pytest.mark.parametrize("method", ["maxT", "minP"])
def test_visibly_smaller_than_holm_with_correlated_pairs(method):
    # a family of 7 pairs (0, j) whose systems j correlate at 0.99: nearly one comparison
    # made 7 times. Holm multiplies the smallest p by 7; Westfall-Young barely adjusts.
    rng = np.random.default_rng(7)
    S, B = 8, 2000
    ratios = []
    for _ in range(20):
        X = correlated_systems(rng, S=S, n=100, rho=0.99, shift=0.3)
        ia, ib = np.zeros(S - 1, int), np.arange(1, S)
        null, obs = null_and_observed(rng, X, ia, ib, B, "permutation")
        raw = raw_pvalues(null, obs)
        _, p_wy = from_matrix(null, obs, method=method)
        _, p_h = holm(raw, ALPHA)
        keep = p_h < 1
        ratios.extend(p_wy[keep] / p_h[keep])
    assert np.median(ratios) < 0.4, np.median(ratios)


def test_chunks_do_not_change_the_result(monkeypatch):
    # the successive maxima carried between slabs give the same numbers as one slab
    from multistat.comparison import stepdown
    rng = np.random.default_rng(3)
    null = rng.normal(size=(300, 40)) * rng.uniform(0.5, 2, 40)
    obs = rng.normal(size=40) * 3
    obs[5] = np.nan
    for method in ("maxT", "minP"):
        ref = from_matrix(null, obs, method=method)
        calls: list[int] = []

        def null_of(idx, calls=calls):
            calls.append(len(idx))
            return null[:, idx]

        monkeypatch.setattr(stepdown, "CHUNK_BYTES", 300 * 8 * 7)  # chunks of 7 pairs
        got = westfall_young(null_of, obs, method=method)
        monkeypatch.undo()
        assert max(calls) == 7
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_allclose(got[1], ref[1], rtol=0, atol=0)
        assert np.isnan(got[1][5]) and not got[0][5]


def test_single_hypothesis_equals_its_own_pvalue():
    # one pair: no multiplicity, the adjusted p is the resampling p itself
    rng = np.random.default_rng(0)
    null = rng.normal(size=(999, 1))
    obs = np.array([1.7])
    _, p = from_matrix(null, obs)
    assert p[0] == (np.sum(np.abs(null[:, 0]) >= 1.7) + 1) / 1000
    for alt, expect in (("greater", np.sum(null[:, 0] >= 1.7)),
                        ("less", np.sum(-null[:, 0] >= -1.7))):
        assert from_matrix(null, obs, alternative=alt)[1][0] == (expect + 1) / 1000


def test_errors():
    from multistat.errors import ParameterError

    with pytest.raises(ParameterError, match="`method` must be one of"):
        from_matrix(np.zeros((3, 2)), [1, 2], method="maxP")
    with pytest.raises(ParameterError, match="`alternative` must be one of"):
        from_matrix(np.zeros((3, 2)), [1, 2], alternative="both")


# ----------------------------------------------------------------------------- compare
@pytest.fixture(scope="module")
def demo_study():
    import multistat
    from multistat.demo import demo_frame

    return multistat.from_frame(demo_frame())


def test_compare_westfall_young_against_holm(demo_study):
    import multistat
    from multistat.correct import adjust

    B = 5000
    t = multistat.compare(demo_study, tests=("bootstrap", "permutation"),
                          correction="westfall-young", n_resamples=B, effect_sizes=False,
                          ci_method="percentile")
    assert (t["correction"] == "westfall-young").all()
    assert (t["reject"] == (t["p_adjusted"] <= ALPHA)).all()
    assert (t["p_adjusted"] >= t["p_value"]).all()
    h = adjust(t.drop(columns=["p_adjusted", "reject"]), method="holm")
    # Monte Carlo error of Holm's p: (m - j + 1) x sd of the raw p (at least 1/B)
    m = t.groupby(["dataset", "metric", "test"])["p_value"].transform("size").to_numpy()
    rank = t.groupby(["dataset", "metric", "test"])["p_value"].rank(method="first")
    mult = m - rank.to_numpy() + 1
    pr = np.maximum(t["p_value"].to_numpy(), 1 / B)
    tol = 3 * np.sqrt(mult**2 * pr * (1 - pr) / B + 0.25 / B)
    wy, hp = t["p_adjusted"].to_numpy(), h["p_adjusted"].to_numpy()
    assert np.all(wy <= hp + tol)
    assert not np.any(h["reject"] & ~t["reject"] & (hp < ALPHA - tol))
    assert t["reject"].sum() >= h["reject"].sum()
    # demo pairs share systems and instances: the step-down adjusts much less than Holm
    assert np.median(wy[hp < 1] / hp[hp < 1]) < 0.8


def test_compare_westfall_young_one_pair_is_the_test_p(demo_study):
    # a family of one pair: no multiplicity; the step-down rebuilt the test's own null
    import multistat

    for test in ("permutation", "bootstrap"):
        t = multistat.compare(demo_study, tests=(test,), pairs=[("sys-j", "sys-c")],
                              correction="westfall-young", n_resamples=1000,
                              alternative="greater", effect_sizes=False,
                              ci_method="percentile")
        np.testing.assert_array_equal(t["p_adjusted"], t["p_value"])


def test_compare_westfall_young_draws_no_plan_again(demo_study, monkeypatch):
    # the step-down forms its joint null from the per-system arrays the tests resampled
    # (BatchResult.resampled): as many passes over the plan as with Holm, no more
    import multistat
    from multistat import engine

    calls = []
    real = engine.resample
    monkeypatch.setattr(engine, "resample",
                        lambda kind, *a, **k: calls.append(kind) or real(kind, *a, **k))
    kw = {"tests": ("bootstrap", "permutation"), "n_resamples": 500, "effect_sizes": False,
          "ci_method": "percentile", "datasets": ["newstest"]}
    holm = multistat.compare(demo_study, correction="holm", **kw)
    n_holm = len(calls)
    wy = multistat.compare(demo_study, correction="westfall-young", **kw)
    # newstest is one metric group: one plan per test, with either correction
    assert calls == ["bootstrap", "permutation"] * 2 and n_holm == 2
    np.testing.assert_array_equal(wy["p_value"], holm["p_value"])
    # Westfall-Young is never above Holm but for Monte Carlo error: a resampled p at
    # B = 500 has sd <= sqrt(0.25 / 500) = 0.022, so 0.05 is ~2.2 sd
    assert (wy["p_adjusted"] <= holm["p_adjusted"] + 0.05).all()
    assert (wy["p_adjusted"] < holm["p_adjusted"]).any()  # the step-down gains somewhere


def redrawn_null(study, dataset, test, rows, n_resamples, seed):
    """``(B, len(rows))`` joint null of compare rows ``rows`` (one family) by the route
    the step-down took before it read the tests' own arrays (``stepdown._group_nulls``
    until 09998b0's follow-up): draw the test's plan again, per system, on the metric's
    group, then form the pairs."""
    from multistat import cube
    from multistat import engine as eng
    from multistat.comparison import _Dataset, _slab
    from multistat.significance.resampling import _swap_kernel

    walked = _Dataset(dataset, cube.datasets(study)[dataset])
    names = list(walked.ds.metric.values.astype(str))
    kind, ms, valid = next(g for g in walked.groups() if names.index(rows["metric"].iloc[0])
                           in g[1])
    sysnames = walked.sysnames
    slab = _slab(walked, kind, ms, valid)
    X, n = slab.scores, slab.n
    # the resampled means are those of x - k, k the metric's smallest score (issue 24.1:
    # shift-free sums; a pair's difference is the same, the common constant cancels)
    X = X - slab.centres()[None, :, None]
    run = {"n": n, "n_resamples": n_resamples, "seed": seed, "dataset": dataset}
    a = rows["system_a"].map({s: i for i, s in enumerate(sysnames)}).to_numpy(int)
    b = rows["system_b"].map({s: i for i, s in enumerate(sysnames)}).to_numpy(int)
    m = rows["metric"].map({names[j]: k for k, j in enumerate(ms)}).to_numpy(int)
    est = rows["estimate"].to_numpy(float)
    null_value = float(rows["null_value"].iloc[0])
    if test == "bootstrap":
        if slab.is_corpus:
            fn, stats = slab.corpus
            d = fn(eng.resample("bootstrap", eng.corpus_sums_kernel, stats, **run))
            return d[:, a] - d[:, b] - est
        d = eng.resample("bootstrap", eng.linear_kernel, X / n, **run)
        return d[:, a, m] - d[:, b, m] - est
    run["exact"] = n < 63 and 2**n <= n_resamples
    if slab.is_corpus:
        fn, stats = slab.corpus
        sw, tot = eng.resample("permutation", _swap_kernel, stats, **run), stats.sum(1)
        moved = sw[:, b] - sw[:, a]
        return fn(tot[a] + moved) - fn(tot[b] - moved)
    aug = np.concatenate([X, np.ones((1,) + X.shape[1:])], 0) / n
    f = eng.resample("permutation", eng.linear_kernel, aug, **run)
    return f[:, a, m] - f[:, b, m] - null_value * f[:, -1, m]


@pytest.mark.parametrize("study_name", ["demo", "labels"])
@pytest.mark.parametrize("test", ["bootstrap", "permutation"])
@pytest.mark.parametrize("method", ["maxT", "minP"])
def test_compare_westfall_young_bit_identical_to_a_redrawn_plan(demo_study, study_name,
                                                                test, method):
    # the step-down on the tests' own per-system arrays gives, bit for bit, what it gave
    # when it drew the plan again (the numbers of 99fe67b, before BatchResult.resampled):
    # the same plan, pairs formed the same way, the whole null matrix at once here
    import multistat

    if study_name == "demo":
        study, kw = demo_study, {"null_value": 0.01}  # flips: d - delta
    else:  # two corpus metrics, each its own group
        study = labels_study((("s1", 0.9), ("s2", 0.85), ("s3", 0.8), ("s4", 0.6)), n=200,
                             seed=3, metrics=("accuracy", "macro_f1"))
        kw = {}
    B, seed = 999, 5
    table = multistat.compare(study, tests=(test,), correction=f"westfall-young-{method}",
                              n_resamples=B, seed=seed, effect_sizes=False,
                              ci_method="percentile", **kw)
    checked = 0
    for _, rows in table.groupby(["dataset", "metric"], sort=False):
        null = redrawn_null(study, rows["dataset"].iloc[0], test, rows, B, seed)
        obs = np.where(np.isfinite(rows["p_value"]), rows["estimate"] - rows["null_value"],
                       np.nan)
        _, p = from_matrix(null, obs, alternative=rows["alternative"].iloc[0],
                           method=method)
        np.testing.assert_array_equal(rows["p_adjusted"],
                                      np.fmax(p, rows["p_value"].to_numpy(float)))
        checked += len(rows)
    assert checked == len(table) == (270 if study_name == "demo" else 12)
    assert table["p_adjusted"].nunique() > 3 and table["reject"].any()  # not all 1


def test_compare_westfall_young_corpus_metric_min_p(tmp_path):
    # a corpus metric (accuracy from [correct, 1] statistics): "westfall-young" takes
    # min-P there; every rejection of Holm (away from the boundary) is kept
    import multistat
    from multistat.correct import adjust

    study = labels_study((("s1", 0.9), ("s2", 0.88), ("s3", 0.75), ("s4", 0.6)), n=300,
                         seed=4)
    for test in ("bootstrap", "permutation"):
        t = multistat.compare(study, tests=(test,), correction="westfall-young",
                              n_resamples=2000, effect_sizes=False, ci_method="percentile")
        h = adjust(t.drop(columns=["p_adjusted", "reject"]), method="holm")
        assert t["reject"].sum() >= h["reject"].sum() >= 3
        assert (t["p_adjusted"] >= t["p_value"]).all()


def test_compare_westfall_young_refusals(demo_study):
    import multistat
    from multistat.correct import adjust
    from multistat.errors import ParameterError

    with pytest.raises(ParameterError, match="needs a resampling test.*t, wilcoxon are "
                                             "closed-form"):
        multistat.compare(demo_study, tests=("t", "wilcoxon", "bootstrap"),
                          correction="westfall-young")
    with pytest.raises(ParameterError, match="statistic='median'"):
        multistat.compare(demo_study, tests=("bootstrap",), statistic="median",
                          correction="westfall-young")
    with pytest.raises(ParameterError, match="spans several datasets"):
        multistat.compare(demo_study, tests=("permutation",), family="all",
                          correction="westfall-young", n_resamples=100)
    with pytest.raises(ParameterError, match="needs the resampling plan"):
        adjust(pd_frame(), method="westfall-young")


def pd_frame():
    import pandas as pd

    return pd.DataFrame({"p_value": [0.01, 0.2]})


def test_rank_with_westfall_young(demo_study):
    import multistat

    b = multistat.rank(demo_study, correction="westfall-young", n_resamples=1000,
                       datasets=["newstest"], metrics=["likert"])
    from multistat.errors import ResamplingFloorWarning

    with pytest.warns(ResamplingFloorWarning, match=r"holm correction over 45 pairs .* "
                                                    r"n_resamples >= 1,799"):
        h = multistat.rank(demo_study, correction="holm", n_resamples=1000,
                           datasets=["newstest"], metrics=["likert"])
    assert b.attrs["multistat"]["correction"] == "westfall-young"
    # at B = 1000 the smallest two-sided bootstrap p is 2/1001, so Holm's smallest
    # adjusted p over 45 pairs is 0.09: no decision; the step-down decides many pairs
    assert h["beats"].sum() == 0
    assert b["beats"].sum() >= 20
    c = b.set_index("system")["cluster"]
    assert c["sys-a"] == c["sys-b"]
