"""Tests of the ``multistat`` command line: load, units, analyze, demo-data.

Most run :func:`multistat.cli.main` in-process (fast); two run the installed console
script ``.venv/bin/multistat`` in a real subprocess. Real data come from tests/data.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import (
    BAD_FILE,
    DATA_FILE,
    MQM_ZHEN,
    REALSUMM,
    REALSUMM_OPTIONS,
    assert_one_line_error,
)
from conftest import run_cli as run

from multistat import cube, demo
from multistat.analysis import analyze
from multistat.io import read_parquet, read_scores
from multistat.units import evaluation_units

MULTISTAT = Path(sys.executable).parent / "multistat"  # the console script of this venv
MQM_ARGS = ["--format", "long", "--sep", r"\s+", "--score-col", "mqm_avg_score",
            "--instance-col", "seg_id", "--metric", "mqm"]


# ======================================================================== load
class TestLoad:
    def test_mqm(self, tmp_path, capsys, mqm_frame):
        out = tmp_path / "mqm.nc"
        status, stdout, err = run(["load", MQM_ZHEN, "-o", out, *MQM_ARGS], capsys)
        assert status == 0 and err == ""
        # higher is better (negated penalties) is the default and is not printed
        assert stdout.splitlines() == [
            ("dataset zhen.avg_seg_scores: 10 systems x 1 metrics x 2000 instances; "
             "metrics: mqm [mean]"),
            "dropped: 0 item(s)",
            f"wrote {out}"]
        xr.testing.assert_identical(cube.open_study(out), cube.from_frame(mqm_frame))

    def test_realsumm_two_system_columns(self, tmp_path, capsys):
        out = tmp_path / "realsumm.nc"
        status, stdout, _ = run(["load", REALSUMM, "-o", out, "--system-col", "summary_type",
                                 "--system-col", "system", "--instance-col", "doc_id"],
                                capsys)
        assert status == 0
        assert stdout.startswith("dataset scores: 25 systems x 15 metrics x 100 instances")
        xr.testing.assert_identical(cube.open_study(out),
                                    cube.load(REALSUMM, **REALSUMM_OPTIONS))

    def test_data_file(self, tmp_path, capsys):
        out = tmp_path / "pairs.nc"
        status, stdout, _ = run(["load", DATA_FILE, "-o", out], capsys)
        assert status == 0
        assert stdout.startswith("dataset data-file: 2 systems x 1 metrics x 2001 instances")
        ds = cube.datasets(cube.open_study(out))["data-file"]
        np.testing.assert_array_equal(ds.score.values[:, 0].T, np.loadtxt(DATA_FILE))

    def test_bad_file(self, tmp_path, capsys):
        # BAD.txt line 1 holds three numbers: "0.262025 0.596949 0.44444"
        out = tmp_path / "bad.nc"
        status, stdout, err = run(["load", BAD_FILE, "-o", out], capsys)
        assert_one_line_error(status, err, "BAD.txt", "line 1", "0.262025 0.596949 0.44444")
        assert stdout == "" and not out.exists()

    def test_unknown_column(self, tmp_path, capsys):
        status, _, err = run(["load", MQM_ZHEN, "-o", tmp_path / "x.nc", "--instance-col",
                              "seg_id", "--score-col", "bleu"], capsys)
        assert_one_line_error(status, err, "no column 'bleu'", "mqm_avg_score")

    def test_subprocess_bad_file(self, tmp_path):
        proc = subprocess.run([MULTISTAT, "load", BAD_FILE, "-o", tmp_path / "bad.nc"],
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.stdout == ""
        assert_one_line_error(proc.returncode, proc.stderr, "BAD.txt", "line 1")


def test_load_dropped_rows_reported(tmp_path, capsys):
    csv = tmp_path / "scores.csv"
    csv.write_text("system,instance,score\na,1,0.5\na,2,nan\na,3,0.25\n"
                   "b,1,0.75\nb,2,0.1\nb,3,0.0\n")
    status, _, err = run(["load", csv, "-o", tmp_path / "s.nc"], capsys)
    assert_one_line_error(status, err, "scores.csv", "line 3")
    status, stdout, err = run(["load", csv, "-o", tmp_path / "s.nc", "--missing", "drop"],
                              capsys)
    assert status == 0 and err == ""
    lines = stdout.splitlines()
    assert lines[0].startswith("dataset scores: 2 systems x 1 metrics x 2 instances")
    assert lines[1] == "dropped: 1 item(s)"
    assert lines[2].startswith("  - ") and "'2'" in lines[2]


# ======================================================================== units, analyze
@pytest.fixture
def study_file(tmp_path, toy_study):
    return cube.save(toy_study, tmp_path / "toy.nc")


def test_units_writes_study(study_file, toy_study, tmp_path, capsys):
    out = tmp_path / "units.nc"
    status, stdout, _ = run(["units", study_file, "--size", 3, "--statistic", "median",
                             "--seed", 0, "-o", out], capsys)
    assert status == 0
    assert "dataset toy: 4 systems x 3 metrics x 7 instances" in stdout
    assert "dataset other: 3 systems x 3 metrics x 3 instances" in stdout
    assert stdout.rstrip().endswith(f"wrote {out}")
    xr.testing.assert_identical(
        cube.open_study(out), evaluation_units(toy_study, size=3, statistic="median", seed=0))


@pytest.mark.parametrize("args, fragments", [
    (["--size", 0], ["`--size` must be an integer >= 1; got 0"]),
    (["--size", 30], ["evaluation unit size 30 is too large"]),
    (["--size", 2, "--statistic", "max"], ["`--statistic` must be one of"]),
    (["--size", "two"], ["Invalid value for '--size'"]),
    (["--bogus"], ["No such option: --bogus"]),
])
def test_units_errors(study_file, tmp_path, capsys, args, fragments):
    status, _, err = run(["units", study_file, "-o", tmp_path / "u.nc", *args], capsys)
    assert_one_line_error(status, err, *fragments)


@pytest.mark.parametrize("command", [["units", "{study}"], ["analyze", "{study}"],
                                     ["demo-data"]])
def test_unwritable_output_is_one_line(study_file, tmp_path, capsys, command):
    # the output path is an existing folder (demo-data: a file where a folder must go)
    target = tmp_path / ("folder.nc" if command[0] == "units" else "folder.parquet")
    target.mkdir()
    if command == ["demo-data"]:
        target = study_file
    argv = [a.format(study=study_file) for a in command]
    status, _, err = run([*argv, "-o", target], capsys)
    # a folder as a file output is refused before the run (issue 24)
    assert_one_line_error(status, err, "Errno" if command == ["demo-data"] else
                          "is a directory; give a file path")


def test_units_missing_study(tmp_path, capsys):
    status, _, err = run(["units", tmp_path / "none.nc", "-o", tmp_path / "u.nc"], capsys)
    assert_one_line_error(status, err, "none.nc: no such study file")


def test_analyze_writes_parquet(study_file, toy_study, tmp_path, capsys):
    out = tmp_path / "reports" / "analysis.parquet"
    status, stdout, err = run(["analyze", study_file, "--alpha", 0.1, "--pairs",
                               "baseline:sys0", "-o", out], capsys)
    assert status == 0 and err == ""
    assert stdout.rstrip().endswith(f"wrote {out}")
    table = read_parquet(out)
    expected = analyze(toy_study, alpha=0.1, pairs="baseline:sys0")
    pd.testing.assert_frame_equal(table, expected, check_dtype=False, check_like=False)
    meta = table.attrs["multistat"]
    assert meta["stage"] == "analyze" and meta["alpha"] == 0.1
    assert meta["pairs"] == "baseline:sys0"


def test_analyze_errors(study_file, tmp_path, capsys):
    status, _, err = run(["analyze", study_file, "--pairs", "baseline:zz", "-o",
                          tmp_path / "a.parquet"], capsys)
    assert_one_line_error(status, err, "unknown system 'zz'")
    status, _, err = run(["analyze", study_file, "--alpha", 2, "-o",
                          tmp_path / "a.parquet"], capsys)
    assert_one_line_error(status, err, "`--alpha` must be in (0, 1); got 2.0")
    assert not (tmp_path / "a.parquet").exists()


def test_subprocess_analyze_data_file(tmp_path):
    """The installed console script, end to end on NLPStatTest's data-file.txt."""
    out = tmp_path / "analysis.parquet"
    proc = subprocess.run([MULTISTAT, "analyze", DATA_FILE, "-o", out],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "wilcoxon" in proc.stdout and f"wrote {out}" in proc.stdout
    row = read_parquet(out).iloc[0]
    # EU size 1: skewness -0.264 (symmetric), Shapiro-Wilk p = 1.2e-23 (not normal)
    assert (row["test_statistic"], row["recommended"], row["inappropriate"]) == (
        "mean", "wilcoxon", "t")
    assert row["n"] == 2001


# ======================================================================== demo-data
def digest(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_demo_data_deterministic(tmp_path, capsys):
    status, stdout, _ = run(["demo-data", "-o", tmp_path / "one", "--seed", 5], capsys)
    assert status == 0
    assert run(["demo-data", "-o", tmp_path / "two", "--seed", 5], capsys)[0] == 0
    assert run(["demo-data", "-o", tmp_path / "other", "--seed", 6], capsys)[0] == 0
    one = digest(tmp_path / "one")
    assert sorted(one) == ["demo.parquet"] + [
        f"pairs/data-{case}-{family}.txt" for case in ("h0-equal", "h1-greater", "h1-less")
        for family in ("beta", "normal")]
    assert len(stdout.splitlines()) == 7 and stdout.startswith("wrote ")
    assert one == digest(tmp_path / "two")  # same seed: the same bytes
    other = digest(tmp_path / "other")
    assert all(one[k] != other[k] for k in one)
    frame = read_parquet(tmp_path / "one" / "demo.parquet")
    pd.testing.assert_frame_equal(frame, demo.demo_frame(5), check_dtype=False)
    assert frame.attrs["multistat"]["seed"] == 5


def test_demo_study_design(tmp_path):
    """The demo study meets the issue: >= 8 systems x 3 metrics x 2 datasets of different
    sizes, bounded skewed / Likert / binary scores, ties, some systems equal in truth."""
    demo.write_demo(tmp_path, seed=demo.SEED)
    frame = read_scores(tmp_path / "demo.parquet")
    assert frame.attrs["metrics"]["correct"]["kind"] == "binary"
    study = cube.from_frame(frame)
    sizes = {n: dict(ds.sizes) for n, ds in cube.datasets(study).items()}
    assert sizes == {"newstest": {"system": 10, "metric": 3, "instance": 600},
                     "tedtalks": {"system": 10, "metric": 3, "instance": 150}}
    ds = cube.datasets(study)["newstest"]
    bleu = ds.score.sel(metric="sent_bleu").values
    likert = ds.score.sel(metric="likert").values
    assert bleu.min() == 0.0 and bleu.max() <= 100 and (bleu == 0).mean() > 0.05
    assert set(np.unique(likert)) <= {1.0, 2.0, 3.0, 4.0, 5.0}
    assert len(np.unique(bleu)) < bleu.size / 2  # ties (one decimal)
    assert list(ds.kind.values) == ["mean", "mean", "binary"]
    equal = [a for a, q in demo.QUALITY.items() if list(demo.QUALITY.values()).count(q) > 1]
    assert len(equal) >= 2
    # the best system in truth has the highest mean sentence BLEU in the large test set
    best = max(demo.QUALITY, key=demo.QUALITY.get)
    assert ds.system.values[bleu.mean(-1).argmax()] == best
    # the two-column samples read as NLPStatTest pairs files of 100 lines
    for path in sorted((tmp_path / "pairs").glob("*.txt")):
        pairs = read_scores(path)
        assert len(pairs) == 200 and set(pairs["system"]) == {"A", "B"}
    greater = np.loadtxt(tmp_path / "pairs" / "data-h1-greater-normal.txt")
    assert greater[:, 0].mean() > greater[:, 1].mean()


# ======================================================================== help
@pytest.mark.parametrize("command", [[], ["load"], ["units"], ["analyze"], ["demo-data"]])
def test_help(command, capsys):
    status, stdout, err = run([*command, "--help"], capsys)
    assert status == 0 and err == ""
    assert "Usage: multistat" in stdout
    assert "--help" in stdout
    if command == ["load"]:
        for flag in ("--format", "--system-col", "--score-col", "--instance-col",
                     "--metric", "--lower-is-better", "--missing", "--sep"):
            assert flag in stdout


def test_no_arguments_shows_help(capsys):
    status, stdout, err = run([], capsys)
    assert status == 2 and "Usage: multistat" in stdout + err
    assert "multistat: error" not in err and "Traceback" not in err


# ================================================== inputs sacred, outputs by extension
def _scores_csv(path, n_systems=3, n=40, seed=0):
    rng = np.random.default_rng(seed)
    rows = [(f"s{i}", f"x{j}", round(float(rng.normal(i * 0.1, 1)), 4))
            for i in range(n_systems) for j in range(n)]
    pd.DataFrame(rows, columns=["system", "instance", "score"]).to_csv(path, index=False)
    return path


def _sha(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.mark.parametrize("make_argv", [
    lambda d: ["load", d["csv"], "-o", d["csv"]],
    lambda d: ["load", d["csv"], "-o", d["link"]],          # symbolic link to the input
    lambda d: ["load", d["csv"], d["nc"], "-o", d["nc"]],   # second of several inputs
    lambda d: ["units", d["nc"], "-o", d["nc"]],
    lambda d: ["units", d["nc"], "-o", d["hard"]],          # hard link to the input
    lambda d: ["analyze", d["nc"], "-o", d["nc"]],
    lambda d: ["compare", d["nc"], "-o", d["nc"]],
    lambda d: ["compare", d["nc"], "-o", d["tmp"] / "r.parquet", "--systems-out", d["nc"]],
    lambda d: ["compare", d["nc"], "-o", d["tmp"] / "r.parquet", "--systems-out",
               d["tmp"] / "r.parquet"],                     # two outputs, one file
    lambda d: ["load-labels", d["csv"], "-o", d["csv"]],
    lambda d: ["power", "curve", d["nc"], "--a", "s0", "--b", "s1", "--delta", "0.1",
               "--out", d["nc"]],
    lambda d: ["report", d["nc"], "--out", d["tmp"], "--study", d["tmp"] / "tables" / "x.nc"],
    lambda d: ["rank", d["nc"], "--out", d["nc"]],
    lambda d: ["friedman", d["nc"], "--out", d["hard"]],
    lambda d: ["replicability", d["nc"], "--out", d["nc"]],
])
def test_an_output_that_is_an_input_is_refused_before_any_work(tmp_path, capsys, make_argv):
    csv = _scores_csv(tmp_path / "scores.csv")
    nc = cube.save(cube.load(csv), tmp_path / "study.nc")
    (tmp_path / "link.csv").symlink_to(csv)
    hard = tmp_path / "hard.nc"
    hard.hardlink_to(nc)
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "x.nc").write_bytes(nc.read_bytes())
    before = {p: _sha(p) for p in (csv, nc)}
    files_before = sorted(tmp_path.rglob("*"))
    argv = make_argv({"csv": csv, "nc": nc, "link": tmp_path / "link.csv", "hard": hard,
                      "tmp": tmp_path})
    status, stdout, err = run(argv, capsys)
    assert_one_line_error(status, err)
    assert ("is the input file" in err or "are the same file" in err
            or "holds the input file" in err), err
    assert {p: _sha(p) for p in before} == before       # inputs untouched
    assert sorted(tmp_path.rglob("*")) == files_before  # nothing written at all
    assert stdout == ""


def test_compare_out_format_follows_the_extension(tmp_path, capsys):
    nc = cube.save(cube.load(_scores_csv(tmp_path / "scores.csv")), tmp_path / "s.nc")
    common = ["--tests", "t,sign,bootstrap", "--n-resamples", 200, "--seed", 3]
    outs = {ext: tmp_path / f"r.{ext}" for ext in ("parquet", "csv", "jsonl")}
    for out in outs.values():
        status, _, err = run(["compare", nc, "-o", out, *common], capsys)
        assert status == 0, err
    parquet = read_parquet(outs["parquet"])
    assert parquet.attrs["multistat"]["seed"] == 3
    assert parquet.attrs["multistat"]["stage"] == "compare"
    assert outs["parquet"].read_bytes()[:4] == b"PAR1"
    # the files hold every float exactly; pandas' default parsers would round the last bit
    csv = pd.read_csv(outs["csv"])
    exact = pd.read_csv(outs["csv"], dtype=str, keep_default_na=False)
    jsonl = pd.read_json(outs["jsonl"], lines=True, precise_float=True)
    assert len(csv) == len(jsonl) == len(parquet) == 9  # 3 pairs x 3 tests
    for other in (csv, jsonl):
        assert list(other.columns) == list(parquet.columns)
        for col in ("p_value", "estimate", "ci_low", "ci_high"):
            np.testing.assert_allclose(other[col], parquet[col], rtol=1e-15)
    for col in ("p_value", "estimate", "ci_low", "ci_high"):  # bit for bit
        values = [float(v) if v else np.nan for v in exact[col]]
        np.testing.assert_array_equal(values, parquet[col].to_numpy())
        np.testing.assert_array_equal(jsonl[col].to_numpy(dtype=float), parquet[col])
        assert other["system_a"].tolist() == parquet["system_a"].tolist()
    # anything else is refused up front, naming the allowed extensions
    for bad in ("r.txt", "r", "r.parquet.gz"):
        status, _, err = run(["compare", nc, "-o", tmp_path / bad, *common], capsys)
        assert_one_line_error(status, err, "must end in .parquet, .csv, .jsonl")
        assert not (tmp_path / bad).exists()
    status, _, err = run(["load", tmp_path / "scores.csv", "-o", tmp_path / "s.parquet"],
                         capsys)
    assert_one_line_error(status, err, "a study output must end in .nc")


def test_compare_pairs_from_the_command_line(tmp_path, capsys):
    nc = cube.save(cube.load(_scores_csv(tmp_path / "scores.csv", n_systems=4)),
                   tmp_path / "s.nc")
    common = ["--tests", "t", "--no-effect-sizes"]
    got = {}
    for name, extra in (("pairs", ["--pairs", "s0,s1; s3,s2"]),
                        ("pair", ["--pair", "s0,s1", "--pair", "s3,s2"])):
        out = tmp_path / f"{name}.parquet"
        status, _, err = run(["compare", nc, "-o", out, *common, *extra], capsys)
        assert status == 0, err
        got[name] = read_parquet(out)
        assert list(zip(got[name].system_a, got[name].system_b)) == [("s0", "s1"),
                                                                      ("s3", "s2")]
    pd.testing.assert_frame_equal(got["pairs"], got["pair"])
    for extra, fragment in ((["--pairs", "s0,s9"], "unknown system 's9'"),
                            (["--pairs", "s0"], "`--pairs` must be all, baseline"),
                            (["--pair", "s0,s1,s2"], "a pair is two system names"),
                            (["--pairs", "s0,s1", "--pair", "s0,s2"], "not both")):
        status, _, err = run(["compare", nc, "-o", tmp_path / "x.parquet", *common, *extra],
                             capsys)
        assert_one_line_error(status, err, fragment)


@pytest.mark.parametrize("extra, fragment", [
    (["--tests", ","], "`--tests` is empty"),
    (["--tests", "t,nope"], "unknown test 'nope'"),
    (["--tests", "mcnemar"], "mcnemar needs a binary (0/1) metric; metric 'score' of dataset 'scores' is 'mean': choose binary metrics with `--metrics`"),
    (["--seed", 2**64], "`--seed` must fit in 64 bits"),
    (["--seed", -1], "`--seed` must be a non-negative integer"),
    (["--power", "nan"], "`--power` must be a finite real number; got nan"),
    (["--null-value", "inf"], "`--null-value` must be a finite real number; got inf"),
    (["--alpha", "-inf"], "`--alpha` must be a finite real number"),
    (["--alpha", 1], "`--alpha` must be in (0, 1)"),
    (["--n-resamples", 0], "`--n-resamples` must be an integer >= 1"),
    (["--metrics", ","], "`--metrics` is empty"),
    (["--metrics", "bleu"], "`--metrics`: unknown metric(s) ['bleu']"),
    (["--max-cost", "nan"], "`--max-cost` must be a finite real number"),
    (["--n-resamples", 10**9], "raise the limit with --max-cost"),
    (["--equivalence-margin", "nan"], "`--equivalence-margin` must be a finite"),
])
def test_compare_bad_options_one_line_before_any_work(tmp_path, capsys, extra, fragment):
    nc = cube.save(cube.load(_scores_csv(tmp_path / "scores.csv")), tmp_path / "s.nc")
    out = tmp_path / "r.parquet"
    status, stdout, err = run(["compare", nc, "-o", out, "--max-cost", "1e11", *extra]
                              if "--max-cost" not in extra else
                              ["compare", nc, "-o", out, *extra], capsys)
    assert_one_line_error(status, err, fragment)
    assert "np." not in err and not out.exists() and stdout == ""


@pytest.mark.parametrize("make_argv, fragment", [
    (lambda d: ["rank", d["nc"], "-o", d["out"], "--metrics", " , "], "`--metrics` is empty"),
    (lambda d: ["rank", d["nc"], "-o", d["out"], "--datasets", ""], "`--datasets` is empty"),
    (lambda d: ["rank", d["nc"], "-o", d["out"], "--seed", -1],
     "`--seed` must be a non-negative integer"),
    (lambda d: ["units", d["nc"], "-o", d["tmp"] / "u.nc", "--size", 2, "--seed", 2**64],
     "`--seed` must fit in 64 bits"),
    (lambda d: ["power", "mcnemar-sim", "--n", 50, "--delta", 0.1, "--agreement", 0.8,
                "--seed", -1], "`--seed` must be a non-negative integer"),
    (lambda d: ["replicability", "--p-values", ","], "`--p-values` is empty"),
    # was an IndexError (internal error, exit 1) before the shared split_names
    (lambda d: ["load-mt", d["csv"], d["csv"], "-o", d["tmp"] / "m.nc", "--reference-col",
                " , "], "`--reference-col` is empty"),
])
def test_name_lists_and_seeds_checked_alike_in_every_command(tmp_path, capsys, make_argv,
                                                              fragment):
    """split_names / seed_value (multistat.cli._common) serve every subcommand: an empty
    comma list or a seed outside [0, 2**64 - 1] is one line naming the flag, exit 2."""
    csv = _scores_csv(tmp_path / "scores.csv")
    nc = cube.save(cube.load(csv), tmp_path / "study.nc")
    out = tmp_path / "r.parquet"
    status, stdout, err = run(make_argv({"csv": csv, "nc": nc, "out": out, "tmp": tmp_path}),
                              capsys)
    assert_one_line_error(status, err, fragment)
    assert not out.exists() and stdout == ""


def test_cost_estimate_names_the_estimate_and_the_override(tmp_path, capsys):
    from multistat._cost import estimate_cost, study_cost

    study = cube.load(_scores_csv(tmp_path / "scores.csv", n_systems=3, n=40))
    # bootstrap of the mean: B x n (plan) + B x metrics x (systems x n + pairs)
    assert study_cost(study, tests=["bootstrap"], n_resamples=1000) == \
        1000 * 40 + 1000 * 1 * (3 * 40 + 3)
    # the median is per pair: B x metrics x pairs x n x log2(n)
    assert estimate_cost(n_systems=3, n_pairs=3, n_metrics=1, n_instances=64,
                         tests=["bootstrap"], n_resamples=10, statistic="median") == \
        10 * 64 + 10 * 3 * 64 * 6
    nc = cube.save(study, tmp_path / "s.nc")
    status, _, err = run(["compare", nc, "-o", tmp_path / "r.parquet", "--tests",
                          "bootstrap", "--n-resamples", 10**6, "--max-cost", "1e8"], capsys)
    assert_one_line_error(status, err, "about 1.6e+08 operations", "--max-cost")


def test_messages_name_flags_and_show_no_numpy_reprs():
    from multistat.cli import cli_message

    argv = ["compare", "s.nc", "--metrics", "bleu"]
    text = ("`metrics`: metric np.str_('bleu') is not — restrict with metrics=[...]; "
            "`n_resamples` got np.float64(1.5)\nsecond line")
    assert cli_message(text, argv) == ("`--metrics`: metric 'bleu' is not — restrict with "
                                       "--metrics; `--n-resamples` got 1.5 second line")
    # an option of another command is left alone; a name inside a value too
    assert cli_message("`dpi` 'n_resamples'", ["compare"]) == "`dpi` 'n_resamples'"


def test_report_dpi_bounds(tmp_path, capsys):
    for dpi in (5, 100_000):
        status, _, err = run(["report", tmp_path / "r.parquet", "--out", tmp_path / "rep",
                              "--dpi", dpi], capsys)
        assert_one_line_error(status, err, "`--dpi` must be an integer")
    assert not (tmp_path / "rep").exists()


def test_load_several_files_and_dataset_from_filename(tmp_path, capsys):
    a = _scores_csv(tmp_path / "wmt19.csv", seed=1)
    b = _scores_csv(tmp_path / "wmt20.csv", seed=2)
    out = tmp_path / "s.nc"
    status, stdout, err = run(["load", a, b, "--dataset-from-filename", "-o", out], capsys)
    assert status == 0, err
    assert "dataset wmt19: 3 systems" in stdout and "dataset wmt20: 3 systems" in stdout
    got = cube.datasets(cube.open_study(out))
    for name, path in (("wmt19", a), ("wmt20", b)):
        frame = pd.read_csv(path)
        np.testing.assert_array_equal(got[name].score.values[:, 0].ravel(),
                                      frame.score.to_numpy())
    status, _, err = run(["load", a, b, "--dataset-from-filename", "--dataset", "x",
                          "-o", out], capsys)
    assert_one_line_error(status, err, "without --dataset")


def test_load_mt_plain_text_file_and_progress(tmp_path, capsys):
    sys_dir = tmp_path / "systems"
    sys_dir.mkdir()
    (sys_dir / "a.txt").write_text("the cat sat on the mat\na dog barks\n")
    (sys_dir / "b.txt").write_text("the cat sat\ndog barks loudly\n")
    ref = tmp_path / "ref.txt"
    ref.write_text("the cat sat on the mat\na dog barks loudly\n")
    status, _, err = run(["load-mt", sys_dir / "a.txt", ref, "-o", tmp_path / "s.nc"],
                         capsys)
    assert_one_line_error(status, err, "looks like one plain-text file",
                          "give a folder or a quoted glob")
    status, _, err = run(["load-mt", sys_dir, ref, "-o", tmp_path / "s.nc",
                               "--metrics", "bleu,ter"], capsys)
    assert status == 0
    assert "load-mt: bleu: 4 of 4 distinct hypotheses" in err
    assert "load-mt: ter: 4 of 4 distinct hypotheses" in err
    status, _, err = run(["load-mt", sys_dir, ref, "-o", sys_dir / "b.txt"], capsys)
    assert_one_line_error(status, err, "is the input file")
    # the sacrebleu signature travels into the results metadata
    out = tmp_path / "r.parquet"
    status, _, err = run(["compare", tmp_path / "s.nc", "-o", out, "--tests", "bootstrap",
                          "--n-resamples", 100], capsys)
    assert status == 0, err
    sig = read_parquet(out).attrs["multistat"]["sacrebleu"]["translations"]
    assert sig["bleu"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert sig["ter"].startswith("nrefs:1|case:lc|tok:tercom")


def test_compare_in_python_checks_n_chunks_and_the_cost_before_starting(tmp_path):
    from multistat import compare
    from multistat.errors import CostLimitError, ParameterError

    study = cube.load(_scores_csv(tmp_path / "scores.csv"))
    with pytest.raises(ParameterError, match=r"`n_chunks` must be an integer >= 1; got 0"):
        compare(study, tests=("bootstrap",), n_chunks=0)
    with pytest.raises(CostLimitError, match=r"raise the limit with max_cost="):
        compare(study, tests=("bootstrap",), n_resamples=10**12)
    with pytest.raises(ParameterError, match=r"`max_cost` must be a finite real number"):
        compare(study, tests=("t",), max_cost=float("nan"))
    table = compare(study, tests=("t",), max_cost=None, effect_sizes=False)
    assert len(table) == 3
