"""The batch driver: table schema, agreement with the per-pair tests, selections,
corpus metrics through the engine, corrections and errors."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import multistat
from multistat import cube
from multistat.demo import demo_frame
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


FAST = {"n_resamples": 2000, "effect_sizes": False}


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
    _st, score = _study()
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
    _table, systems = compare(st, tests=("bootstrap",), return_systems=True, **FAST)
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
    ({"tests": ("anova",)}, "unknown test 'anova'"),
    ({"tests": ()}, "`tests` is empty"),
    ({"alpha": 1.5}, r"`alpha` must be in \(0, 1\)"),
    ({"n_resamples": 0}, "`n_resamples` must be an integer >= 1"),
    ({"correction": "magic"}, "`correction` must be one of"),
    ({"family": ["nope"]}, r"`family`: unknown column\(s\) \['nope'\]"),
    ({"scheduler": "gpu"}, "`scheduler` must be 'threads'"),
    ({"statistic": "mode"}, "`statistic` must be one of"),
    ({"pairs": "some"}, "`pairs` must be 'all', 'baseline:<system>'"),
])
def test_bad_parameters_get_named_errors(kwargs, match):
    st, _ = _study()
    kw = {"tests": ("t",), "effect_sizes": False}
    kw.update(kwargs)
    with pytest.raises(ParameterError, match=match):
        compare(st, **kw)


def test_constant_pair_gives_nan_with_note_not_a_crash():
    _st, score = _study()
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


# ----------------------------------------------------------------- options, budget, mde
def test_wilcoxon_options_through_compare_equal_scipy():
    # zero differences and ties on purpose: rounded scores, one system shares values
    rng = np.random.default_rng(3)
    n = 60
    a = np.round(rng.normal(0.2, 1, n), 1)
    b = np.where(rng.random(n) < 0.2, a, np.round(rng.normal(0, 1, n), 1))
    c = np.round(rng.normal(0.1, 1, n), 1)
    ds = cube.make_dataset("d", np.stack([a, b, c])[:, None, :], systems=["a", "b", "c"],
                           metrics=["m"], instances=range(n))
    st = cube.make_study({"d": ds})
    for opts, ref_kw in [
        ({"zero_method": "pratt", "correction": True, "method": "approx"},
         {"zero_method": "pratt", "correction": True, "method": "approx"}),
        ({"zero_method": "zsplit", "method": "approx"},
         {"zero_method": "zsplit", "method": "approx"}),
        ({"zero_method": "wilcox", "correction": True, "method": "approx"},
         {"zero_method": "wilcox", "correction": True, "method": "approx"}),
    ]:
        t = compare(st, tests=("wilcoxon",), test_options={"wilcoxon": opts},
                    effect_sizes=False, correction="none")
        assert t.attrs["multistat"]["test_options"] == {"wilcoxon": opts}
        for _, row in t.iterrows():
            x, y = {"a": a, "b": b, "c": c}[row.system_a], {"a": a, "b": b, "c": c}[
                row.system_b]
            ref = stats.wilcoxon(x, y, **ref_kw)  # scipy's p-value for the same options
            assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-10), (opts, row)
        assert (t["correction"] == "none").all()
        np.testing.assert_array_equal(t["p_adjusted"], t["p_value"])


def test_test_options_are_checked():
    st, _ = _study()
    with pytest.raises(ParameterError, match="not among the tests run"):
        compare(st, tests=("t",), test_options={"wilcoxon": {"method": "exact"}})
    with pytest.raises(ParameterError, match="unknown option 'zero_methd'"):
        compare(st, tests=("wilcoxon",), test_options={"wilcoxon": {"zero_methd": "pratt"}})
    with pytest.raises(ParameterError, match="compare's own keyword"):
        compare(st, tests=("wilcoxon",), test_options={"wilcoxon": {"alternative": "less"}})
    with pytest.raises(ParameterError, match="correction"):
        compare(st, tests=("t",), correction="nope")


def test_bootstrap_options_per_test_override_the_global_ones():
    st, _ = _study()
    glob = compare(st, tests=("bootstrap",), ci_method="percentile", **FAST)
    per = compare(st, tests=("bootstrap",), test_options={"bootstrap": {"ci_method":
                                                                        "percentile"}}, **FAST)
    pd.testing.assert_frame_equal(glob, per, check_exact=True)


ALL5 = ("t", "wilcoxon", "sign", "bootstrap", "permutation")


@pytest.mark.parametrize("statistic", ["mean", "median"])
def test_bit_identical_for_every_memory_limit(statistic):
    # 16 MiB forces chunks of pairs (about 1 MiB each) and row chunks of every plan block
    # (8 MiB per worker: 87 rows of 3,000 instances)
    from multistat import engine
    from multistat._budget import Budget

    rng = np.random.default_rng(1)
    n, S = 3000, 6 if statistic == "mean" else 3
    rows = Budget.of("16MiB").per_worker().rows(n * engine.PLAN_BYTES_PER_VALUE)
    assert rows < engine.BLOCK_SIZE  # precondition: blocks are cut into row chunks
    score = np.round(rng.normal(size=(S, 2, n)) + rng.normal(size=(1, 2, n)), 2)
    ds = cube.make_dataset("big", score, systems=[f"s{i}" for i in range(S)],
                           metrics=["m1", "m2"], instances=range(n))
    st = cube.make_study({"big": ds})
    kw = {"tests": ALL5 if statistic == "mean" else ("bootstrap", "permutation"),
          "n_resamples": 1200 if statistic == "mean" else 1100, "statistic": statistic,
          "effect_sizes": statistic == "mean", "scheduler": "threads"}
    big = compare(st, memory_limit="4GiB", **kw)
    small = compare(st, memory_limit="16MiB", **kw)
    pd.testing.assert_frame_equal(small, big, check_exact=True)


def test_memory_limit_is_parsed_and_checked():
    from multistat._budget import parse_memory

    assert parse_memory("2GiB") == 2 * 2**30
    assert parse_memory("1.5GB") == 1_500_000_000
    assert parse_memory(64 * 2**20) == 64 * 2**20
    with pytest.raises(ParameterError, match="cannot read"):
        parse_memory("lots")
    with pytest.raises(ParameterError, match="at least"):
        parse_memory("1KiB")
    st, _ = _study()
    with pytest.raises(ParameterError, match="memory_limit"):
        compare(st, tests=("t",), memory_limit="two gigs")


def test_mde_column_is_the_paired_t_closed_form_and_the_resampled_se():
    from multistat.power.analytic import mde_paired_t

    st, score = _study()
    t = compare(st, tests=("t", "bootstrap"), metrics=["m"], **FAST)
    row = t[(t.system_a == "a") & (t.system_b == "c")].set_index("test")
    d = score[0, 0] - score[2, 0]
    dz = mde_paired_t(n=80, power=0.8, alpha=0.05)
    assert row.loc["t", "mde"] == pytest.approx(dz * d.std(ddof=1), rel=1e-10)
    # the bootstrap's se of a mean difference is close to sd/sqrt(n): same mde within MC
    assert row.loc["bootstrap", "mde"] == pytest.approx(row.loc["t", "mde"], rel=0.1)
    t9 = compare(st, tests=("t",), metrics=["m"], mde_power=0.9, **FAST)
    assert (t9["mde"].to_numpy() > t[t.test == "t"]["mde"].to_numpy()).all()


def test_cli_memory_limit_and_test_options(tmp_path, capsys):
    from multistat.cli import main

    st, _ = _study()
    path = tmp_path / "study.nc"
    cube.save(st, path)
    out = tmp_path / "r.parquet"
    main(["compare", str(path), "--out", str(out), "--tests", "wilcoxon",
          "--metrics", "m", "--no-progress", "--memory-limit", "64MiB",
          "--test-option", "wilcoxon.zero_method=pratt", "--test-option",
          "wilcoxon.correction=true", "--test-option", "wilcoxon.method=approx"])
    got = pd.read_parquet(out)
    ref = compare(st, tests=("wilcoxon",), metrics=["m"], test_options={"wilcoxon": {
        "zero_method": "pratt", "correction": True, "method": "approx"}})
    np.testing.assert_array_equal(got["p_value"], ref["p_value"])
    assert not (tmp_path / "systems.parquet").exists()
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(path), "--out", str(out), "--no-progress",
              "--test-option", "wilcoxon-pratt"])
    assert exc.value.code == 2
    assert "TEST.OPTION=VALUE" in capsys.readouterr().err


def test_progress_moves_per_slab_and_long_runs_announce_themselves(monkeypatch, capsys):
    from multistat import _progress

    st, _ = _study()
    monkeypatch.setattr(_progress, "ANNOUNCE_SECONDS", 0.0)  # every run counts as long
    ticks = []
    real_tick = _progress.Progress.tick

    def tick(self, dataset, test, units=1.0):
        ticks.append((dataset, test, units))
        return real_tick(self, dataset, test, units)

    monkeypatch.setattr(_progress.Progress, "tick", tick)
    compare(st, tests=("t", "bootstrap"), n_resamples=2500, progress=True,
            memory_limit="16MiB", effect_sizes=False, scheduler="synchronous")
    err = capsys.readouterr().err
    assert "3 pairs x 2 metrics x 2 tests x 2500 resamples" in err and "estimated" in err
    # one tick per chunk of pairs for t, one per block of 1000 resamples for the bootstrap
    assert sum(u for d, t, u in ticks if t == "bootstrap") == 3  # 3 blocks, one group
    assert any(t == "t" for _, t, _ in ticks)


# ----------------------------------------------------------------------------- table path
def test_table_dtypes_notes_and_hash():
    # the table is assembled from codes and per-block arrays: its dtypes are those of
    # a frame built row by row (strings as pandas "str"), notes are joined per row, and
    # the input hash (computed on a background thread) is study_hash's
    from multistat.comparison import study_hash

    st, _ = _study()
    t = compare(st, tests=("t", "sign"), power=True, n_resamples=200)
    for c in ("dataset", "metric", "system_a", "system_b", "statistic_kind", "test",
              "alternative", "family", "correction", "note", "cluster"):
        assert t[c].dtype == pd.Series(["x"]).dtype, c
    assert t["n"].dtype == np.int64 and t["reject"].dtype == bool
    assert t["higher_is_better"].dtype == bool and t["seed"].dtype == np.int64
    assert t["cohens_d"].dtype == np.float64
    assert t.loc[t.test == "t", "note"].str.endswith("plan with `multistat power`)").all()
    assert (t.system_a + t.system_b).isin(["ab", "ac", "bc"]).all()
    assert (t.family == t.dataset + " | " + t.metric + " | " + t.test).all()
    assert t.attrs["multistat"]["input_sha256"] == study_hash(st)


def test_join_notes_equals_the_row_by_row_join():
    from multistat.comparison import _join_notes

    rng = np.random.default_rng(0)
    words = np.array(["", "", "ties", "constant; ties", "n < 2"], dtype=object)
    a = words[rng.integers(0, 5, 500)]
    for b in ("power: retrospective", "", words[rng.integers(0, 5, 500)]):
        bb = np.broadcast_to(np.asarray(b, dtype=object), a.shape)
        ref = ["; ".join(s for s in (x, y) if s) for x, y in zip(a, bb)]
        assert _join_notes(a, b).tolist() == ref
    # a test's constant note is one string (multistat._table.flat): string with string
    # gives the string, a string with an array the row-by-row join
    joined = _join_notes("", "power: retrospective")
    assert isinstance(joined, str) and joined == "power: retrospective"
    assert _join_notes("n < 2", "") == "n < 2"
    assert _join_notes("ties", "runs") == "ties; runs"
    assert _join_notes("ties", a).tolist() == ["; ".join(s for s in ("ties", y) if s)
                                               for y in a]


def test_a_constant_note_stays_one_string_through_slabs():
    # BatchResult broadcasts a 0-d note; concatenating slabs keeps one string where every
    # slab has the same one (no 10^4 Python strings to convert), and concatenates
    # otherwise; the table column is the same either way
    from multistat._table import constant_string, flat
    from multistat.significance._batch import BatchResult

    def part(note, P=3):
        return BatchResult("t", {"p_value": np.full((P, 2), 0.5),
                                 "note": np.array(note, dtype=object)})

    same = BatchResult.concat([part(""), part(""), part("", 1)])
    assert same.shape == (7, 2) and constant_string(same["note"]) == ""
    assert flat(same["note"]) == "" and flat(same["p_value"]).shape == (14,)
    mixed = BatchResult.concat([part(""), part("n < 2", 1)])
    assert constant_string(mixed["note"]) is None
    assert mixed["note"].tolist() == [[""] * 2] * 3 + [["n < 2"] * 2]
    # a written (not broadcast) array of equal strings is not taken for a constant
    assert constant_string(np.full((2, 2), "", dtype=object)) is None


@pytest.mark.parametrize("family", [None, "all", "g", ["g", "h"], ["o", "k"], "h"])
@pytest.mark.parametrize("method", ["holm", "fdr_bh", None])
def test_adjust_equals_statsmodels_per_groupby_family(family, method):
    # reference: statsmodels multipletests on each group of pandas' groupby over the
    # readable family key (family_keys: NaN keys form no family), NaN p-values left out
    from statsmodels.stats.multitest import multipletests

    from multistat.correct import adjust, family_columns, family_keys

    rng = np.random.default_rng(5)
    n = 300
    table = pd.DataFrame({
        "p_value": np.where(rng.random(n) < 0.1, np.nan, rng.random(n) ** 2),
        "dataset": rng.choice(["d1", "d2"], n), "metric": rng.choice(["m", "acc"], n),
        "test": rng.choice(["t", "sign"], n),
        "g": pd.array(rng.choice(["x", "y", None], n), dtype="str"),
        "h": rng.choice([1.0, 2.5, np.nan], n), "k": rng.random(n) < 0.5,
        "o": pd.array(rng.choice(np.array(["x", 1, 2.5, None], dtype=object), n),
                      dtype=object)})
    got = adjust(table, method=method, family=family)
    cols = family_columns(table, family)
    keys = family_keys(table, cols) if cols else pd.Series("all", index=table.index)
    ref_adj = np.full(n, np.nan)
    ref_rej = np.zeros(n, bool)
    for idx in table.groupby(keys.to_numpy(), sort=False).indices.values():
        p = table.p_value.to_numpy()[idx]
        ok = ~np.isnan(p)
        if not ok.any():
            continue
        if method is None:
            r, pa = p[ok] <= 0.05, p[ok]
        else:
            r, pa, _, _ = multipletests(p[ok], alpha=0.05, method=method)
        ref_adj[idx[ok]], ref_rej[idx[ok]] = pa, r
    np.testing.assert_allclose(got.p_adjusted, ref_adj, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(got.reject, ref_rej)
    pd.testing.assert_series_equal(got.family, pd.Series(
        keys.to_numpy() if cols else "all", index=table.index, name="family",
        dtype=got.family.dtype), check_exact=True)


def test_adjust_returns_a_new_frame_and_readjusts_in_place_of_old_columns():
    from multistat.correct import adjust

    t = pd.DataFrame({"p_value": [0.01, 0.04, 0.03], "g": ["a", "a", "b"]}, index=[5, 5, 2])
    t.attrs["who"] = {"k": 1}
    once = adjust(t, family="g")
    assert list(t.columns) == ["p_value", "g"]  # the input is not modified
    assert list(once.columns) == ["p_value", "g", "family", "correction", "p_adjusted",
                                  "reject", "alpha"]
    assert once.attrs == {"who": {"k": 1}} and list(once.index) == [5, 5, 2]
    np.testing.assert_allclose(once.p_adjusted, [0.02, 0.04, 0.03])  # Holm within "a"
    twice = adjust(once, family="g", method="bonferroni")
    assert list(twice.columns) == list(once.columns)
    np.testing.assert_allclose(twice.p_adjusted, [0.02, 0.08, 0.03])
    assert (once.correction == "holm").all() and (twice.correction == "bonferroni").all()


@pytest.mark.parametrize("correction", ["holm", "hommel", None])
def test_blockwise_table_equals_the_frame_path(toy_study, correction):
    # compare builds its table from per-block column arrays and corrects the default
    # families (dataset x metric x test) as arrays; naming the same families explicitly
    # takes the frame path (pd.concat of block frames, then correct.adjust on the
    # table's columns): both must give the same table, bit for bit
    kw = dict(tests=("t", "wilcoxon", "sign", "bootstrap"), n_resamples=300, power=True,
              correction=correction)
    fast = compare(toy_study, **kw)
    frame = compare(toy_study, family=["dataset", "metric", "test"], **kw)
    assert fast.attrs["multistat"]["family"] is None
    pd.testing.assert_frame_equal(fast, frame, check_exact=True)
    assert len(set(fast.dataset)) == 2 and fast.p_adjusted.notna().all()


def test_concat_of_block_columns_equals_pandas_concat():
    from multistat import _table

    rng = np.random.default_rng(1)
    labels = _table.labels(["a", "b", "c"])
    blocks = [{"s": _table.Coded(labels, rng.integers(0, 3, k)), "x": rng.random(k),
               "i": np.arange(k), "b": rng.random(k) < 0.5, "c": "const",
               "note": np.array(["", "ties"], dtype=object)[rng.integers(0, 2, k)]}
              for k in (5, 0, 7)]
    parts = [_table.columns(b, len(b["x"])) for b in blocks]
    ref = pd.concat([_table.rows(b, len(b["x"])) for b in blocks], ignore_index=True)
    pd.testing.assert_frame_equal(pd.DataFrame(_table.concat(parts)), ref, check_exact=True)
    # blocks whose columns differ are left to pandas (None)
    assert _table.concat([parts[0], {**parts[2], "x": parts[2]["i"]}]) is None
    assert _table.concat([parts[0], {k: parts[2][k] for k in reversed(parts[2])}]) is None


@pytest.mark.parametrize("text", ["", "t", "two-sided", "scores averaged over 3 runs; ü 漢"])
@pytest.mark.parametrize("n_rows", [0, 1, 9900])
def test_repeated_string_column_is_the_taken_label_column(text, n_rows):
    # reference: the one-label array taken n_rows times (what the table held before the
    # Arrow buffers were written directly): same values, dtype and Arrow type
    from multistat import _table

    got = _table.repeat_string(text, n_rows)
    want = _table.labels([text]).take(np.zeros(n_rows, dtype=np.intp))
    pd.testing.assert_extension_array_equal(got, want)
    assert got.dtype == want.dtype == "str"
    assert got._pa_array.type == want._pa_array.type
    with pytest.raises(UnicodeEncodeError):
        _table.repeat_string("\udc80", 2)


def test_one_walk_gives_the_same_groups_and_scores_everywhere(toy_study):
    # compare, system_scores and system_distributions walk datasets and metric
    # groups with one iterator (comparison._walk): on a two-dataset study with a metric
    # whose dropped instances make it a group of its own, the three agree bit for bit
    from multistat.comparison import system_distributions

    table, systems = compare(toy_study, tests=("bootstrap",), n_resamples=300, seed=3,
                             return_systems=True)
    ref = system_scores(toy_study, n_resamples=300, seed=3)
    pd.testing.assert_frame_equal(systems, ref, check_exact=True)
    rows = []
    for name, metrics, hib, obs, dist, sysnames in system_distributions(
            toy_study, n_resamples=300, seed=3):
        assert dist.shape == (300, len(sysnames), len(metrics))
        for j, m in enumerate(metrics):
            for i, s in enumerate(sysnames):
                rows.append((name, m, s, obs[i, j], bool(hib[j])))
    got = pd.DataFrame(rows, columns=["dataset", "metric", "system", "score",
                                      "higher_is_better"])
    pd.testing.assert_frame_equal(got.sort_values(["dataset", "metric", "system"])
                                  .reset_index(drop=True),
                                  ref[got.columns].sort_values(["dataset", "metric", "system"])
                                  .reset_index(drop=True), check_exact=True,
                                  check_dtype=False)
    # the walk's groups: m1 and m3 share their instances, m2 (3 dropped) is its own
    a = table[(table.dataset == "toy") & (table.system_a == "sys0") & (table.system_b == "sys1")]
    assert a.set_index("metric").n.to_dict() == {"m1": 23, "m2": 20, "m3": 23}
    assert (a.set_index("metric").score_a.to_numpy() ==
            ref[(ref.dataset == "toy") & (ref.system == "sys0")].score.to_numpy()).all()


def test_mde_multiplier_emits_no_warnings():
    # compare solves the mde multiplier on a background thread while the tests run; a
    # warning from it could be caught by a test's catch_warnings and land in its notes,
    # so it must emit none, over sample sizes, levels, powers and alternatives
    import itertools
    import warnings

    from multistat.comparison._groups import mde_multiplier as _mde_multiplier

    _mde_multiplier.cache_clear()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n, a, p, alt in itertools.product(
                [1, 2, 3, 7, 40, 1000, 10**5, 10**7], [1e-6, 0.05, 0.5],
                [0.01, 0.8, 0.999], ["two-sided", "less", "greater"]):
            m = _mde_multiplier(n, a, p, alt)
            assert np.isnan(m) if n < 2 else m != 0
    _mde_multiplier.cache_clear()


def test_compare_warns_when_a_family_cannot_reject_as_rank_does():
    # Holm over 10 pairs with B = 99 bootstrap resamples: the smallest adjusted p is
    # 10 * 2/100 = 0.2 > 0.05, so nothing can be significant; compare says so on stderr
    # (a warning) and in the table's metadata, with the fix (more resamples or WY)
    from multistat.errors import ResamplingFloorWarning

    study = multistat.from_frame(demo_frame())
    with pytest.warns(ResamplingFloorWarning, match=r"no pair can be significant") as rec:
        table = multistat.compare(study, tests=("bootstrap", "t"), n_resamples=99)
    notes = table.attrs["multistat"]["floor_notes"]
    assert notes and [str(w.message) for w in rec] == notes
    assert all("n_resamples >= " in n and "westfall-young" in n for n in notes)
    assert not table.loc[table.test == "bootstrap", "reject"].any()
    # enough resamples, or a test without a floor: no note
    quiet = multistat.compare(study, tests=("t",), n_resamples=99)
    assert quiet.attrs["multistat"]["floor_notes"] == []
