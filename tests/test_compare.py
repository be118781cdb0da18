"""The batch driver: table schema, agreement with the per-pair tests, selections,
corpus metrics through the engine, corrections and errors."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from multistat import cube
from multistat.comparison import COLUMNS, compare, system_scores
from multistat.errors import ParameterError, TestNotApplicableError, UnknownSystemError
from multistat.significance.resampling import bootstrap_test, permutation_test


def _study(n=80, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=n)
    score = np.stack([np.stack([base + q + rng.normal(0, 1, n),
                                (rng.random(n) < 0.55 + q).astype(float)])
                      for q in (0.0, 0.05, 0.3)])
    ds = cube.make_dataset("d", score, systems=["a", "b", "c"], metrics=["m", "acc"],
                           instances=[f"x{i:03d}" for i in range(n)],
                           kind=["mean", "binary"], higher_is_better=[True, True])
    return cube.make_study({"d": ds}), score


FAST = dict(n_resamples=2000, effect_sizes=False)


def test_schema_and_one_row_per_dataset_metric_pair_test():
    st, _ = _study()
    t = compare(st, tests=("t", "bootstrap"), **FAST)
    assert list(t.columns[: len(COLUMNS)]) == list(COLUMNS)
    assert len(t) == 2 * 3 * 2  # metrics x pairs x tests
    assert not t.duplicated(["dataset", "metric", "system_a", "system_b", "test"]).any()
    meta = t.attrs["multistat"]
    assert meta["seed"] == 0 and meta["n_resamples"] == 2000 and meta["tests"] == ["t",
                                                                                "bootstrap"]
    assert len(meta["input_sha256"]) == 64


def test_rows_equal_the_per_pair_functions_and_scipy():
    st, score = _study()
    t = compare(st, tests=("t", "bootstrap", "permutation"), correction=None, **FAST)
    a, b = score[0, 0], score[2, 0]
    row = t[(t.metric == "m") & (t.system_a == "a") & (t.system_b == "c")].set_index("test")
    ref_t = stats.ttest_rel(a, b)
    assert row.loc["t", "p_value"] == pytest.approx(ref_t.pvalue, rel=1e-10)
    assert row.loc["t", "statistic"] == pytest.approx(ref_t.statistic, rel=1e-10)
    # the batch uses the study's plan for dataset "d" (the per-pair call uses dataset
    # ""): identical to the block function on the same metric group
    from multistat.significance.resampling import bootstrap_block

    X = score
    blk = bootstrap_block(X, [0], [2], n_resamples=2000, seed=0, dataset="d")
    assert row.loc["bootstrap", "p_value"] == blk["p_value"][0, 0]
    assert row.loc["bootstrap", "ci_low"] == pytest.approx(blk["ci_low"][0, 0], rel=1e-12)
    # and the per-pair functions agree within Monte Carlo error
    assert abs(bootstrap_test(a, b, n_resamples=2000).p_value
               - row.loc["bootstrap", "p_value"]) < 0.02
    assert abs(permutation_test(a, b, n_resamples=2000).p_value
               - row.loc["permutation", "p_value"]) < 0.02
    assert row.loc["t", "score_a"] == pytest.approx(a.mean())
    assert (row["p_adjusted"] == row["p_value"]).all()


def test_baseline_pairs_and_selection():
    st, _ = _study()
    t = compare(st, tests=("t",), pairs="baseline:b", metrics=["m"], **FAST)
    assert set(zip(t.system_a, t.system_b)) == {("a", "b"), ("c", "b")}
    assert set(t.metric) == {"m"}
    with pytest.raises(UnknownSystemError, match="dataset 'd': unknown system 'zz'"):
        compare(st, tests=("t",), pairs="baseline:zz", **FAST)
    with pytest.raises(ParameterError, match=r"`metrics`: unknown metric\(s\) \['bleu'\]"):
        compare(st, tests=("t",), metrics=["bleu"], **FAST)
    with pytest.raises(ParameterError, match=r"`datasets`: unknown dataset\(s\) \['e'\]"):
        compare(st, tests=("t",), datasets=["e"], **FAST)


def test_mcnemar_on_binary_metric_and_error_on_others():
    from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

    st, score = _study()
    t = compare(st, tests=("mcnemar",), metrics=["acc"], correction=None, **FAST)
    a, b = score[0, 1], score[2, 1]
    table = [[np.sum((a == 1) & (b == 1)), np.sum((a == 1) & (b == 0))],
             [np.sum((a == 0) & (b == 1)), np.sum((a == 0) & (b == 0))]]
    ref = sm_mcnemar(table, exact=True).pvalue
    got = t[(t.system_a == "a") & (t.system_b == "c")]["p_value"].item()
    assert got == pytest.approx(ref, rel=1e-10)
    with pytest.raises(TestNotApplicableError, match="mcnemar needs a binary"):
        compare(st, tests=("mcnemar",), **FAST)


def test_dropped_instances_per_metric_form_their_own_group():
    st, score = _study()
    score = score.copy()
    score[:, 1, :5] = np.nan  # 5 instances dropped for "acc" only
    ds = cube.make_dataset("d", score, systems=["a", "b", "c"], metrics=["m", "acc"],
                           instances=[f"x{i:03d}" for i in range(80)],
                           kind=["mean", "binary"])
    t = compare(cube.make_study({"d": ds}), tests=("t", "bootstrap"), **FAST)
    assert set(t[t.metric == "acc"]["n"]) == {75}
    assert set(t[t.metric == "m"]["n"]) == {80}


def test_corpus_accuracy_through_statistics_equals_the_mean_path():
    # accuracy as a corpus metric (sum correct / sum total) must give exactly the same
    # bootstrap distribution as the mean of the 0/1 scores: same plan, same resamples
    st, score = _study()
    acc = score[:, 1]  # (S, n)
    stats_ = np.stack([acc, np.ones_like(acc)], -1)[:, None]  # (S, 1, n, 2)
    ds = cube.make_dataset("d", acc[:, None], systems=["a", "b", "c"], metrics=["accs"],
                           instances=[f"x{i:03d}" for i in range(80)], kind=["corpus"],
                           corpus_fn=["accuracy"], stats=stats_)
    corp = compare(cube.make_study({"d": ds}), tests=("bootstrap", "permutation"),
                   ci_method="percentile", **FAST)
    mean = compare(st, tests=("bootstrap", "permutation"), metrics=["acc"],
                   ci_method="percentile", **FAST)
    for col in ("estimate", "p_value", "ci_low", "ci_high"):
        np.testing.assert_allclose(corp[col].to_numpy(), mean[col].to_numpy(), rtol=1e-12,
                                   atol=1e-12)
    assert (corp["statistic_kind"] == "corpus").all()
    # closed-form tests do not apply to corpus metrics: NaN with a reason, not numbers
    t = compare(cube.make_study({"d": ds}), tests=("t",), **FAST)
    assert t["p_value"].isna().all() and t["note"].str.contains("corpus").all()


def test_correction_families():
    st, _ = _study()
    t = compare(st, tests=("t", "sign"), correction="bonferroni", **FAST)
    for _, fam in t.groupby(["metric", "test"]):
        np.testing.assert_allclose(fam["p_adjusted"], np.minimum(1, fam["p_value"] * 3))
    pooled = compare(st, tests=("t", "sign"), correction="bonferroni", family="all", **FAST)
    np.testing.assert_allclose(pooled["p_adjusted"],
                               np.minimum(1, pooled["p_value"] * len(pooled)))
    assert (pooled["reject"] == (pooled["p_adjusted"] <= 0.05)).all()


def test_median_statistic_rows():
    st, score = _study()
    t = compare(st, tests=("bootstrap", "permutation"), statistic="median", metrics=["m"],
                **FAST)
    row = t[(t.system_a == "a") & (t.system_b == "b") & (t.test == "bootstrap")]
    assert row["estimate"].item() == pytest.approx(np.median(score[0, 0] - score[1, 0]))
    assert (t["statistic_kind"] == "median").all()


def test_system_scores_table():
    st, score = _study()
    table, systems = compare(st, tests=("bootstrap",), return_systems=True, **FAST)
    again = system_scores(st, n_resamples=2000, seed=0)
    pd.testing.assert_frame_equal(systems, again)
    row = systems[(systems.system == "c") & (systems.metric == "m")]
    assert row["score"].item() == pytest.approx(score[2, 0].mean())
    assert row["ci_low"].item() < row["score"].item() < row["ci_high"].item()


def test_power_column():
    st, score = _study()
    t = compare(st, tests=("t",), metrics=["m"], power=0.5, **FAST)
    from statsmodels.stats.power import TTestPower

    d = score[0, 0] - score[2, 0]
    ref = TTestPower().power(effect_size=0.5 / d.std(ddof=1), nobs=80, alpha=0.05)
    got = t[(t.system_a == "a") & (t.system_b == "c")]["power"].item()
    assert got == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    (dict(tests=("anova",)), "unknown test 'anova'"),
    (dict(tests=()), "`tests` is empty"),
    (dict(alpha=1.5), r"`alpha` must be in \(0, 1\)"),
    (dict(n_resamples=0), "`n_resamples` must be an integer >= 1"),
    (dict(correction="magic"), "`correction` must be one of"),
    (dict(family=["nope"]), r"`family`: unknown column\(s\) \['nope'\]"),
    (dict(scheduler="gpu"), "`scheduler` must be 'threads'"),
    (dict(statistic="mode"), "`statistic` must be one of"),
    (dict(pairs="some"), "`pairs` must be 'all', 'baseline:<system>'"),
])
def test_bad_parameters_get_named_errors(kwargs, match):
    st, _ = _study()
    kw = dict(tests=("t",), effect_sizes=False)
    kw.update(kwargs)
    with pytest.raises(ParameterError, match=match):
        compare(st, **kw)


def test_constant_pair_gives_nan_with_note_not_a_crash():
    st, score = _study()
    score = score.copy()
    score[1] = score[0]  # b identical to a
    ds = cube.make_dataset("d", score, systems=["a", "b", "c"], metrics=["m", "acc"],
                           instances=[f"x{i:03d}" for i in range(80)],
                           kind=["mean", "binary"])
    t = compare(cube.make_study({"d": ds}), tests=("t", "wilcoxon", "bootstrap"),
                metrics=["m"], **FAST)
    same = t[(t.system_a == "a") & (t.system_b == "b")].set_index("test")
    assert np.isnan(same.loc["t", "p_value"]) and same.loc["t", "note"]
    assert same.loc["bootstrap", "p_value"] == 1.0


def test_cli_compare_writes_results_with_run_metadata(tmp_path, capsys):
    from multistat.cli import main
    from multistat.io import read_parquet

    st, _ = _study()
    cube.save(st, tmp_path / "s.nc")
    out, sys_out = tmp_path / "r.parquet", tmp_path / "sys.parquet"
    main(["compare", str(tmp_path / "s.nc"), "--out", str(out), "--systems-out",
          str(sys_out), "--tests", "t,bootstrap", "--n-resamples", "500", "--seed", "3",
          "--no-progress", "--metrics", "m"])
    table = read_parquet(out)
    meta = table.attrs["multistat"]
    assert meta["seed"] == 3 and meta["n_resamples"] == 500
    assert meta["tests"] == ["t", "bootstrap"] and meta["correction"] == "holm"
    assert meta["multistat_version"] and len(meta["input_sha256"]) == 64
    assert len(table) == 3 * 2 and set(table["metric"]) == {"m"}
    assert set(read_parquet(sys_out)["system"]) == {"a", "b", "c"}
    assert "wrote" in capsys.readouterr().out


def test_cli_compare_bad_input_exits_2_with_one_line(tmp_path, capsys):
    from multistat.cli import main

    st, _ = _study()
    cube.save(st, tmp_path / "s.nc")
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(tmp_path / "s.nc"), "--tests", "t,anova", "--no-progress",
              "--out", str(tmp_path / "r.parquet")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown test 'anova'" in err[0]
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(tmp_path / "s.nc"), "--pairs", "baseline:zz", "--no-progress",
              "--out", str(tmp_path / "r.parquet"), "--tests", "t"])
    assert exc.value.code == 2
    assert "unknown system 'zz'" in capsys.readouterr().err


def test_public_functions_are_not_shadowed_by_submodules():
    # importing every submodule binds it as an attribute of the package; no public
    # function may share a submodule's name (multistat.compare once did)
    import importlib
    import pkgutil
    import types

    import multistat

    for mod in pkgutil.walk_packages(multistat.__path__, "multistat."):
        if not mod.name.endswith("__main__"):
            importlib.import_module(mod.name)
    for name, (_, attr) in multistat._LAZY.items():
        if attr is not None:
            assert not isinstance(getattr(multistat, name), types.ModuleType), name
    assert callable(multistat.compare)
