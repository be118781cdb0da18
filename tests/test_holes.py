"""Incomplete designs (issue 25 item 6): studies read with missing="keep" whose systems
lack some instances. Paired tests use each pair's joint instances and equal the same test
on the complete study restricted to them; unpaired tests use each system's own scores;
rank clusters and the report work on them (multistat/significance/_holes.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import multistat
from multistat import cube
from multistat.errors import ParameterError

SYSTEMS = list("abcde")
INSTANCES = [f"i{j:02d}" for j in range(40)]
SCALAR = ["n", "estimate", "statistic", "p_value", "ci_low", "ci_high", "se", "mde",
          "score_a", "score_b", "cohens_d", "cohens_d_ci_low", "hedges_g", "wilcoxon_r",
          "wilcoxon_r_ci_high", "hodges_lehmann", "hodges_lehmann_ci_low", "cohens_d_se",
          "power", "n_resamples", "seed", "eps_min", "eps_min_reverse", "violation_ratio"]


def holey_scores(kind="mean", seed=1):
    """(5, 2, 40) scores with holes: b lacks i00-i09, d lacks i05-i11, e lacks i30-i39;
    a and c are complete (their pair takes the complete path inside the holey group)."""
    rng = np.random.default_rng(seed)
    if kind == "binary":
        X = (rng.random((5, 1, 40)) < np.linspace(0.5, 0.7, 5)[:, None, None]) * 1.0
    else:
        X = np.round(rng.normal(size=(5, 2, 40)), 2) + 0.2 * np.arange(5)[:, None, None]
    X[1, :, :10] = np.nan
    X[3, :, 5:12] = np.nan
    X[4, :, 30:] = np.nan
    return X


def study_of(X, systems=SYSTEMS, instances=INSTANCES, kind="mean", **kw):
    metrics = ["m1", "m2"][:X.shape[1]]
    ds = cube.make_dataset("d", X, systems=systems, metrics=metrics, instances=instances,
                           kind=[kind] * len(metrics), **kw)
    return cube.make_study({"d": ds})


def restricted(X, a, b, kind="mean", group=None):
    """The complete study of systems a and b on the instances both have."""
    ia, ib = SYSTEMS.index(a), SYSTEMS.index(b)
    m = ~np.isnan(X[ia, 0]) & ~np.isnan(X[ib, 0])
    kw = {} if group is None else {"group": [g for g, k in zip(group, m) if k]}
    return study_of(X[[ia, ib]][:, :, m], systems=[a, b],
                    instances=[i for i, k in zip(INSTANCES, m) if k], kind=kind, **kw)


def assert_same_rows(got, ref):
    """Every numeric column (NaN = NaN) and every note. Not bit for bit: pairs with the
    same joint instances share one sub-slab, whose per-metric centring constant (subtracted
    before every sum, multistat._centre) comes from all its systems, so means may differ
    from the two-system study's in the last bit (measured: at most 3.2e-16 relative)."""
    assert len(got) == len(ref) > 0
    for c in SCALAR:
        if c in ref:
            np.testing.assert_allclose(got[c].to_numpy(float), ref[c].to_numpy(float),
                                       rtol=1e-13, atol=1e-15, err_msg=c)
    assert got["note"].tolist() == ref["note"].tolist()


CASES = [  # (tests, kind, options)
    (("t", "wilcoxon", "sign", "bootstrap", "permutation", "aso"), "mean", {}),
    (("bootstrap", "permutation"), "mean", {"statistic": "median"}),
    (("bootstrap",), "mean", {"ci_method": "bca"}),
    (("mcnemar", "t", "sign"), "binary", {}),
    (("bootstrap", "permutation"), "mean", {"cluster": "group"}),  # documents of 4
]
GROUPS = [f"doc{j // 4}" for j in range(40)]


@pytest.mark.parametrize("tests, kind, options", CASES)
def test_every_paired_test_on_pairs_with_holes_equals_the_restricted_complete_study(
        tests, kind, options):
    # the plan of a pair with holes is the one the restricted complete study draws (it
    # depends on seed, dataset, kind, block and the number of instances only), so even
    # the resampling tests agree bit for bit, as do effect sizes, power and mde
    X = holey_scores(kind)
    group = GROUPS if "cluster" in options else None
    kw = dict(tests=tests, n_resamples=499, seed=3, correction=None, power=True, **options)
    table = multistat.compare(study_of(X, missing="keep", kind=kind, **(
        {} if group is None else {"group": group})), **kw)
    for a, b in [("a", "b"), ("b", "d"), ("b", "e"), ("d", "e"), ("a", "c")]:
        got = table[(table.system_a == a) & (table.system_b == b)].reset_index(drop=True)
        ref = multistat.compare(restricted(X, a, b, kind, group), **kw)
        assert_same_rows(got, ref)
    n = table.loc[(table.system_a == "b") & (table.system_b == "d") & (table.test == "t"),
                  "n"]
    assert (n == 28).all()  # 40 - i00..i11


def test_closed_forms_on_joint_instances_equal_scipy():
    X = holey_scores()
    table = multistat.compare(study_of(X, missing="keep"), tests=("t", "wilcoxon", "sign"),
                              metrics=["m1"], correction=None)
    for a, b in [("b", "d"), ("d", "e")]:
        x, y = X[SYSTEMS.index(a), 0], X[SYSTEMS.index(b), 0]
        ok = ~np.isnan(x) & ~np.isnan(y)
        rows = table[(table.system_a == a) & (table.system_b == b)].set_index("test")
        assert rows.loc["t", "p_value"] == pytest.approx(  # scipy.stats.ttest_rel
            stats.ttest_rel(x[ok], y[ok]).pvalue, rel=1e-12)
        assert rows.loc["wilcoxon", "p_value"] == pytest.approx(  # scipy.stats.wilcoxon
            stats.wilcoxon(x[ok], y[ok]).pvalue, rel=1e-9)
        d = x[ok] - y[ok]
        assert rows.loc["sign", "p_value"] == pytest.approx(  # scipy.stats.binomtest
            stats.binomtest(int((d > 0).sum()), int((d != 0).sum())).pvalue, rel=1e-12)
        assert rows.loc["t", "estimate"] == pytest.approx(d.mean(), rel=1e-12)
        assert rows.loc["t", "score_a"] - rows.loc["t", "score_b"] == pytest.approx(
            d.mean(), rel=1e-12)


def test_a_complete_study_read_with_keep_takes_the_complete_path():
    X = np.round(np.random.default_rng(2).normal(size=(4, 2, 30)), 2)
    kw = {"n_resamples": 300, "seed": 1, "power": True}
    inst = INSTANCES[:30]
    plain = multistat.compare(study_of(X, systems=SYSTEMS[:4], instances=inst), **kw)
    keep = multistat.compare(study_of(X, systems=SYSTEMS[:4], instances=inst,
                                      missing="keep"), **kw)
    pd.testing.assert_frame_equal(plain, keep)


def test_pairs_with_fewer_than_two_joint_instances_are_nan_rows_that_say_why():
    X = np.round(np.random.default_rng(3).normal(size=(3, 1, 20)), 2)
    X[0, 0, 10:] = np.nan       # a: i00..i09
    X[1, 0, :9] = np.nan        # b: i09..i19 -> one instance with a
    X[2, 0, 5:15] = np.nan      # c: with a 5, with b 5
    s = study_of(X, systems=list("abc"), instances=INSTANCES[:20], missing="keep")
    table = multistat.compare(s, tests=("t", "bootstrap", "mannwhitney"), n_resamples=99,
                              correction="holm", power=True)
    ab = table[(table.system_a == "a") & (table.system_b == "b")].set_index("test")
    for test in ("t", "bootstrap"):
        assert np.isnan(ab.loc[test, ["p_value", "estimate", "mde", "cohens_d",
                                      "power"]].astype(float)).all()
        assert ab.loc[test, "n"] == 1
        assert (f"{test}: 1 instance(s) scored for both systems (missing='keep'); a paired "
                "test needs at least 2") in ab.loc[test, "note"]
        assert "effect sizes, power and mde: 1 instance(s)" in ab.loc[test, "note"]
    assert np.isfinite(ab.loc["mannwhitney", "p_value"])  # 10 and 11 scores of its own
    assert (ab.loc["mannwhitney", "n_a"], ab.loc["mannwhitney", "n_b"]) == (10, 11)
    # a NaN p-value is not counted in its correction family: Holm over the 2 others
    from statsmodels.stats.multitest import multipletests

    t = table[table.test == "t"]
    ok = t["p_value"].notna().to_numpy()
    assert ok.sum() == 2 and np.isnan(t["p_adjusted"].to_numpy()[~ok]).all()
    np.testing.assert_allclose(t["p_adjusted"].to_numpy()[ok], multipletests(
        t["p_value"].to_numpy()[ok], method="holm")[1], rtol=1e-12)


def test_unpaired_tests_run_on_each_systems_own_scores():
    X = holey_scores()
    table = multistat.compare(study_of(X, missing="keep"),
                              tests=("mannwhitney", "brunner-munzel"), correction=None)
    for a, b in [("b", "d"), ("a", "e")]:
        x, y = X[SYSTEMS.index(a), 1], X[SYSTEMS.index(b), 1]
        x, y = x[~np.isnan(x)], y[~np.isnan(y)]
        rows = table[(table.system_a == a) & (table.system_b == b)
                     & (table.metric == "m2")].set_index("test")
        mw, bm = rows.loc["mannwhitney"], rows.loc["brunner-munzel"]
        assert mw["p_value"] == pytest.approx(stats.mannwhitneyu(x, y).pvalue, rel=1e-12)
        assert bm["p_value"] == pytest.approx(stats.brunnermunzel(x, y).pvalue, rel=1e-12)
        assert (mw["n_a"], mw["n_b"]) == (x.size, y.size)
        assert mw["score_a"] == pytest.approx(x.mean()) and mw["score_b"] == pytest.approx(
            y.mean())
        assert np.isnan(mw["mde"]) and "mde: not defined for a test of each system's own" \
            in mw["note"]


def test_mixed_on_ratings_with_holes_and_its_memory_free_batch():
    from multistat.significance.mixed import _rated_pairs, mixed_test

    rng = np.random.default_rng(4)
    R = np.round(rng.normal(3, 1, (4, 1, 30, 5)), 0)  # (S, M, items, raters)
    R[rng.random(R.shape) < 0.3] = np.nan
    R[1, :, :8] = np.nan     # system b never rated on 8 items
    R[3, :, 20:] = np.nan
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # items nobody rated: NaN
        score = np.nanmean(R, axis=-1)
    ds = cube.make_dataset("d", score, systems=list("abcd"), metrics=["q"],
                           instances=INSTANCES[:30], rating=R,
                           raters=[f"r{j}" for j in range(5)], missing="keep")
    table = multistat.compare(cube.make_study({"d": ds}), tests=("mixed",),
                              correction=None, effect_sizes=False)
    row = table[(table.system_a == "b") & (table.system_b == "d")].iloc[0]
    ref = mixed_test(R[1, 0], R[3, 0], raters=True)  # the fit on the pair's ratings
    assert row["estimate"] == float(ref.estimate) and row["p_value"] == float(ref.p_value)
    # pair by pair on views: the same numbers as the gathered R[ia], R[ib]
    ia, ib = np.array([0, 0, 1, 2]), np.array([1, 3, 3, 3])
    kw = {"alternative": "two-sided", "null_value": 0.0, "confidence_level": 0.95}
    new, old = _rated_pairs(R, ia, ib, kw), mixed_test(R[ia], R[ib], raters=True, **kw)
    for k in ("estimate", "p_value", "ci_low", "ci_high", "n"):
        np.testing.assert_array_equal(getattr(new, k), getattr(old, k))
    np.testing.assert_array_equal(new.extra["sd_sigma"], old.extra["sd_sigma"])


def test_westfall_young_is_refused_on_holes():
    s = study_of(holey_scores(), missing="keep")
    with pytest.raises(ParameterError, match=r"dataset 'd' has holes \(read with "
                       r"missing='keep'\): each pair is resampled on its own joint "
                       r"instances.*use correction='holm'"):
        multistat.compare(s, tests=("bootstrap",), n_resamples=99,
                          correction="westfall-young")


def test_system_scores_bootstrap_each_system_over_its_own_instances():
    X = holey_scores()
    table = multistat.system_scores(study_of(X, missing="keep"), n_resamples=400, seed=2)
    row = table[(table.system == "d") & (table.metric == "m1")].iloc[0]
    own = ~np.isnan(X[3, 0])
    # the complete study of d's own instances (d twice: one system's interval does not
    # depend on the other's scores, only on the plan of its 33 instances)
    Xd = X[[3, 3]][:, :, own]
    ref = multistat.system_scores(study_of(Xd, systems=["d", "d2"], instances=[
        i for i, k in zip(INSTANCES, own) if k]), n_resamples=400, seed=2)
    ref = ref[(ref.system == "d") & (ref.metric == "m1")].iloc[0]
    assert row["n"] == ref["n"] == 33
    for c in ("score", "ci_low", "ci_high"):
        assert row[c] == pytest.approx(ref[c], rel=1e-12, abs=1e-14)


def wmt_like(tmp_path, systems=6, segments=120, per_system=60, seed=5):
    """WMT DA's design: each system rated on its own sample of segments (long CSV)."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(systems):
        for i in rng.choice(segments, per_system, replace=False):
            rows.append((f"sys{s}", f"seg{i:03d}", "da",
                         round(float(50 + 4 * s + rng.normal(0, 15)), 1)))
    path = tmp_path / "da.csv"
    pd.DataFrame(rows, columns=["system", "instance", "metric", "score"]).to_csv(
        path, index=False)
    return path


def test_rank_mannwhitney_clusters_on_an_incomplete_study(tmp_path, capsys):
    from multistat.correct import adjust_groups
    from multistat.leaderboard.ranking import better_matrix, clusters, rank_with_pairs, score_order
    from tests.conftest import run_cli

    path = wmt_like(tmp_path)
    study = multistat.load(path, missing="keep")
    res = rank_with_pairs(study, test="mannwhitney", n_resamples=500)
    board, pairs = res.table, res.pairs
    assert res.table.attrs["multistat"]["correction"] == "holm"
    # the decisions are scipy's rank-sum tests of the systems' own scores, Holm-corrected
    score = study["da"]["score"].sel(metric="da").values
    names = list(study["da"].system.values)
    p = [stats.mannwhitneyu(score[names.index(a)][~np.isnan(score[names.index(a)])],
                            score[names.index(b)][~np.isnan(score[names.index(b)])]).pvalue
         for a, b in zip(pairs.system_a, pairs.system_b)]
    np.testing.assert_allclose(pairs["p_value"], p, rtol=1e-12)
    _, reject = adjust_groups(np.asarray(p), np.zeros(len(p), int), method="holm",
                              alpha=0.05)
    np.testing.assert_array_equal(pairs["reject"], reject)
    assert reject.any() and not reject.all()
    # the clusters follow from those decisions and each system's own mean
    own = np.array([np.nanmean(score[names.index(s)]) for s in names])
    np.testing.assert_allclose(board.set_index("system").loc[names, "score"], own,
                               rtol=1e-12)
    idx = {s: i for i, s in enumerate(names)}
    better = better_matrix(len(names), pairs.system_a.map(idx).to_numpy(),
                           pairs.system_b.map(idx).to_numpy(), reject,
                           np.sign(pairs["estimate"].to_numpy()))
    expect = clusters(score_order(own, True, np.array(names)), better)  # per system
    np.testing.assert_array_equal(board.set_index("system").loc[names, "cluster"], expect)
    assert board["cluster"].max() > 1
    # the command line gives the same clusters
    out = tmp_path / "ranking.parquet"
    nc = tmp_path / "study.nc"
    assert run_cli(["load", str(path), "--missing", "keep", "--out", str(nc)],
                   capsys)[0] == 0
    status, text, err = run_cli(["rank", str(nc), "--test", "mannwhitney",
                                 "--n-resamples", "500", "--out", str(out)], capsys)
    assert status == 0, err
    assert "cluster 2:" in text and "mannwhitney test, holm correction" in text
    cli = pd.read_parquet(out)
    np.testing.assert_array_equal(cli["cluster"], board["cluster"])
    np.testing.assert_array_equal(cli["system"], board["system"])
    # the default (bootstrap + Westfall-Young) needs one plan over all pairs: one line
    status, text, err = run_cli(["rank", str(nc), "--n-resamples", "200", "--out",
                                 str(tmp_path / "r2.parquet")], capsys)
    assert status == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "dataset 'da' has holes (read with missing='keep')" in err
    assert "use correction='holm' (or an unpaired test)" in err


def test_report_on_an_incomplete_study_end_to_end(tmp_path, capsys):
    from tests.conftest import run_cli

    path = wmt_like(tmp_path, systems=5, segments=100, per_system=40)
    frame = pd.read_csv(path)  # sys4 shares no segment with sys0: a pair without a row
    frame = frame[~((frame.system == "sys4") & frame.instance.isin(
        frame.instance[frame.system == "sys0"]))]
    frame.to_csv(path, index=False)
    nc, res, sys_, rk, rp = (tmp_path / f for f in (
        "study.nc", "results.parquet", "systems.parquet", "ranking.parquet",
        "pairs.parquet"))
    steps = [
        ["load", path, "--missing", "keep", "--out", nc],
        ["compare", nc, "--out", res, "--systems-out", sys_, "--tests",
         "t,wilcoxon,bootstrap,mannwhitney,brunner-munzel", "--n-resamples", "500",
         "--power", "5", "--no-progress"],
        ["rank", nc, "--test", "mannwhitney", "--n-resamples", "500", "--out", rk,
         "--pairs-out", rp],
        ["report", res, "--out", tmp_path / "rep", "--study", nc, "--systems", sys_,
         "--ranking", rk, "--ranking-pairs", rp],
    ]
    for argv in steps:
        status, _, err = run_cli([str(a) for a in argv], capsys)
        assert status == 0, (argv[0], err)
    table = pd.read_parquet(res)
    t = table[table.test == "t"]
    none = (t.system_a == "sys0") & (t.system_b == "sys4")
    assert t.loc[none, "n"].item() == 0 and np.isnan(t.loc[none, "p_value"].item())
    assert "t: 0 instance(s) scored for both systems" in t.loc[none, "note"].item()
    assert "effect sizes, power and mde: 0 instance(s)" in t.loc[none, "note"].item()
    rest = t[~none]
    assert rest["n"].nunique() > 3 and rest["n"].max() < 40  # pairs with their own n
    assert rest["power"].notna().all() and rest["mde"].notna().all()
    html = (tmp_path / "rep" / "report.html").read_text()
    assert f"0–{int(table['n'].max())}" in html  # the study summary's n per comparison
    systems = pd.read_parquet(sys_)
    np.testing.assert_array_equal(systems["n"], [40, 40, 40, 40, (frame.system == "sys4")
                                                 .sum()])  # each system's own segments


def test_holes_tables_do_not_depend_on_the_batches(monkeypatch):
    # batches of at most 2 systems put every joint-instance group in a batch of its own;
    # the default batches the groups of one size together (here b's and e's 30 instances,
    # pairs (a, b), (b, c), (a, e), (c, e)): the same table
    from multistat.significance import _holes

    s = study_of(holey_scores(), missing="keep")
    kw = {"tests": ("t", "wilcoxon", "bootstrap", "permutation"), "n_resamples": 499,
              "seed": 5, "power": True}
    sizes, batches = [], _holes._batches

    def spy(*args):
        out = batches(*args)
        sizes.append(max(len(b) for _, b in out))
        return out

    monkeypatch.setattr(_holes, "_batches", spy)
    batched = multistat.compare(s, **kw)
    monkeypatch.setattr(_holes, "MAX_BATCH_SYSTEMS", 2)
    alone = multistat.compare(s, memory_limit="16MiB", **kw)
    assert sizes[0] == 2 and sizes[-1] == 1  # mask groups per batch
    pd.testing.assert_frame_equal(batched, alone, check_exact=False, rtol=1e-13,
                                  atol=1e-15)


def test_corpus_metric_with_holes_equals_the_restricted_complete_study():
    from multistat.adapters import from_statistics
    from multistat.corpus import register_corpus_metric

    register_corpus_metric("holes_hit_rate", lambda s: 100 * s[..., 0] / s[..., 1], 2,
                           stat_names=("hits", "n"), overwrite=True)
    rng = np.random.default_rng(0)
    n = rng.integers(1, 5, size=60)
    inst = [f"q{i:02d}" for i in range(60)]
    frame = pd.DataFrame({"system": np.repeat(["x", "y", "z"], 60),
                          "instance": np.tile(inst, 3), "n": np.tile(n, 3),
                          "hits": np.concatenate([rng.binomial(n, p) for p in
                                                  (0.6, 0.5, 0.55)])})
    full = from_statistics(frame, "holes_hit_rate")
    name = next(iter(full.children))
    ds = full[name].to_dataset()
    score, st = ds.score.values.copy(), ds.stats.values.copy()
    score[1, :, :15] = st[1, :, :15] = np.nan   # y lacks q00..q14
    score[2, :, 50:] = st[2, :, 50:] = np.nan   # z lacks q50..q59

    def make(sc, s, systems, instances, missing="raise"):
        return cube.make_study({name: cube.make_dataset(
            name, sc, systems=systems, metrics=list(ds.metric.values), instances=instances,
            kind=list(ds.kind.values), corpus_fn=list(ds.corpus_fn.values), stats=s,
            missing=missing)})

    kw = {"tests": ("bootstrap", "permutation"), "n_resamples": 500, "seed": 1, "correction": None}
    table = multistat.compare(make(score, st, ["x", "y", "z"], inst, "keep"), **kw)
    m = ~np.isnan(score[1, 0]) & ~np.isnan(score[2, 0])
    ref = multistat.compare(make(score[[1, 2]][:, :, m], st[[1, 2]][:, :, m], ["y", "z"],
                                 list(np.asarray(inst)[m])), **kw)
    got = table[(table.system_a == "y") & (table.system_b == "z")].reset_index(drop=True)
    assert (got["n"] == 35).all()
    assert_same_rows(got, ref)
    # each system's corpus score over its own questions (system_scores, rank)
    sys_ = multistat.system_scores(make(score, st, ["x", "y", "z"], inst, "keep"),
                                   n_resamples=200).set_index("system")
    own = ~np.isnan(score[1, 0])
    assert sys_.loc["y", "n"] == 45
    assert sys_.loc["y", "score"] == pytest.approx(
        100 * st[1, 0, own, 0].sum() / st[1, 0, own, 1].sum(), rel=1e-12)


def test_runs_with_holes_aso_and_t_equal_the_restricted_complete_study():
    # per-run scores (training seeds): the pair's runs are restricted to its joint
    # instances too, so ASO over the runs' scores sees what the restricted study has
    rng = np.random.default_rng(0)
    R = rng.normal(size=(3, 1, 30, 4)) + np.array([0, 0.3, 0.5])[:, None, None, None]
    R[1, :, :6] = np.nan
    R[2, :, 25:] = np.nan
    inst = INSTANCES[:30]

    def make(r, systems, instances, missing="raise"):
        return cube.make_study({"d": cube.make_dataset(
            "d", cube.run_mean(r), systems=systems, metrics=["m"], instances=instances,
            run_score=r, missing=missing)})

    kw = {"tests": ("aso", "t", "bootstrap"), "n_resamples": 300, "seed": 2,
          "correction": None}
    table = multistat.compare(make(R, list("abc"), inst, "keep"), **kw)
    m = ~np.isnan(R[1, 0, :, 0]) & ~np.isnan(R[2, 0, :, 0])
    ref = multistat.compare(make(R[[1, 2]][:, :, m], list("bc"), list(np.asarray(inst)[m])),
                            **kw)
    got = table[(table.system_a == "b") & (table.system_b == "c")].reset_index(drop=True)
    assert got["n"].tolist() == [4, 19, 19]  # ASO: 4 runs; t, bootstrap: 19 instances
    assert_same_rows(got, ref)


def test_equivalence_on_holes_is_its_two_one_sided_runs_on_joint_instances():
    """The TOST of a study with holes runs inside the walk on each pair's joint instances,
    as the main rows: p_equivalence is the larger of the two one-sided compare runs."""
    study = study_of(holey_scores(), missing="keep")
    margin = 0.3
    kw = {"tests": ("t", "wilcoxon", "bootstrap"), "n_resamples": 499, "effect_sizes": False}
    table = multistat.compare(study, equivalence_margin=margin, **kw)
    lower = multistat.compare(study, alternative="greater", null_value=-margin, **kw)
    upper = multistat.compare(study, alternative="less", null_value=margin, **kw)
    expect = np.fmax(lower["p_value"].to_numpy(), upper["p_value"].to_numpy())
    np.testing.assert_array_equal(table["p_equivalence"].to_numpy(), expect)
    assert table["n"].nunique() > 1  # pairs differ in their joint instances
    # one pair against its restricted complete study
    one = table[(table["system_a"] == "b") & (table["system_b"] == "d")]
    ref = multistat.compare(restricted(holey_scores(), "b", "d"), equivalence_margin=margin,
                            **kw)
    np.testing.assert_allclose(one["p_equivalence"], ref["p_equivalence"], rtol=1e-12)
