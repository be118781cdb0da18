"""Report files are safe (issue 24, item 3): the ranking files go through the atomic
writer, data names give injective file names, CSV outputs cannot run as formulas."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import multistat
from multistat._csv import neutralise, neutralise_text
from multistat.report import write_report
from multistat.report._files import file_stem


# ------------------------------------------------------------------ file names
def test_plain_names_keep_their_readable_stem():
    assert file_stem("newstest", "sent_bleu") == "newstest__sent_bleu"
    assert file_stem("realsumm", "rouge_1_f_score", "sys-a", "sys-b") == \
        "realsumm__rouge_1_f_score__sys-a__sys-b"


def test_the_collisions_of_the_issue_are_gone():
    # main (2008129): both "a__b__c" (heatmap_a__b__c.png)
    assert file_stem("a__b", "c") != file_stem("a", "b__c")
    # main: ranking.py wrote all three as ranking_..._m-1
    stems = {file_stem("d", m) for m in ("m 1", "m-1", "m/1", "M-1", "m_1", "m.1")}
    assert len(stems) == 6
    assert file_stem("d", "m 1").startswith("d__m-1--")
    # no path separators, no hidden or parent-directory names
    for name in ("../x", "/etc/passwd", ".hidden", "..", "", "a\\b", "\x00", "é"):
        stem = file_stem(name)
        assert "/" not in stem and "\\" not in stem and not stem.startswith(".")
        assert stem and stem.isascii() and len(stem) <= 80


_NAMES = st.text(alphabet="ab_-. /A", min_size=0, max_size=6)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_NAMES, _NAMES), min_size=2, max_size=6, unique=True))
def test_stems_are_injective_even_case_folded(tuples):
    stems = [file_stem(*t) for t in tuples]
    assert len({s.casefold() for s in stems}) == len(tuples), list(zip(tuples, stems))


# ------------------------------------------------------------------ CSV formulas
def test_neutralise_follows_owasp_and_keeps_numbers():
    for bad in ("=1+1", "+A1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", "=HYPERLINK(\"x\")"):
        assert neutralise_text(bad) == "'" + bad
    for ok in ("-0.25", "+1e-3", "1.5", "-inf", "nan", "sys-a", "a=b", "", "'quoted"):
        assert neutralise_text(ok) == ok
    frame = pd.DataFrame({"system": ["=cmd|' /C calc'!A0", "ok"], "score": [-1.5, 2.0],
                          "n": [-3, 4], "flag": [True, False]})
    frame = frame.rename(columns={"flag": "@flag"})
    out = neutralise(frame)
    assert out["system"].tolist() == ["'=cmd|' /C calc'!A0", "ok"]
    assert list(out.columns) == ["system", "score", "n", "'@flag"]
    assert out["score"].dtype == np.float64 and out["score"].tolist() == [-1.5, 2.0]
    assert out["n"].tolist() == [-3, 4]
    clean = pd.DataFrame({"system": ["a", "b"], "score": [1.0, -2.0]})
    assert neutralise(clean) is clean  # nothing to do: no copy


def _hostile_frame(n=60, seed=3):
    rng = np.random.default_rng(seed)
    rows = []
    names = {"=HYPERLINK(\"http://x\",\"y\")": 0.3, "@SUM(1)": 0.0, "-2+3": -0.2,
             "plain": 0.1}
    for s, shift in names.items():
        rows.append(pd.DataFrame({"dataset": "+d", "system": s, "metric": "m",
                                  "instance": [f"i{i}" for i in range(n)],
                                  "score": rng.normal(shift, 1, n)}))
    return pd.concat(rows, ignore_index=True)


def _cli(args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "-m", "multistat.cli", *map(str, args)],
                          check=False, env=env, capture_output=True, text=True)


def test_cli_csv_outputs_neutralise_formulas_and_keep_numbers(tmp_path):
    src = tmp_path / "scores.csv"
    _hostile_frame().to_csv(src, index=False)
    study = tmp_path / "study.nc"
    assert _cli(["load", src, "-o", study]).returncode == 0
    run = _cli(["compare", study, "--tests", "t", "-o", tmp_path / "r.csv",
                "--systems-out", tmp_path / "s.csv", "--no-progress"])
    assert run.returncode == 0, run.stderr
    run = _cli(["compare", study, "--tests", "t", "-o", tmp_path / "r.parquet",
                "--no-progress"])
    assert run.returncode == 0, run.stderr
    exact = pd.read_parquet(tmp_path / "r.parquet")
    for name in ("r.csv", "s.csv"):
        raw = pd.read_csv(tmp_path / name, dtype=str, keep_default_na=False)
        for col in raw.columns:
            for cell in [col, *raw[col]]:
                assert not cell.startswith(("=", "+", "@", "\t", "\r")), (name, col, cell)
                if cell.startswith("-"):  # a negative number, never a formula
                    float(cell)
    csv = pd.read_csv(tmp_path / "r.csv")
    assert set(csv["system_a"]) | set(csv["system_b"]) == {
        "'=HYPERLINK(\"http://x\",\"y\")", "'@SUM(1)", "'-2+3", "plain"}
    assert (csv["dataset"] == "'+d").all()
    # numbers are numbers, bit for bit (shortest round-trip repr)
    np.testing.assert_array_equal(csv["estimate"].to_numpy(), exact["estimate"].to_numpy())
    np.testing.assert_array_equal(csv["p_value"].to_numpy(), exact["p_value"].to_numpy())


# ------------------------------------------------------------------ the report's files
@pytest.fixture(scope="module")
def colliding(tmp_path_factory):
    """Datasets `a__b` (metric `c`) and `a` (metric `b__c`); dataset `d` with metrics
    `m 1`, `m-1`, `m/1`: main wrote one heatmap for the first two and one ranking table for
    the last three."""
    rng = np.random.default_rng(7)
    rows = []
    for ds, metrics in (("a__b", ["c"]), ("a", ["b__c"]), ("d", ["m 1", "m-1", "m/1"])):
        for metric in metrics:
            for k, s in enumerate(("=x", "y", "z")):
                rows.append(pd.DataFrame({"dataset": ds, "system": s, "metric": metric,
                                          "instance": [f"i{i}" for i in range(40)],
                                          "score": rng.normal(k * 0.4, 1, 40)}))
    src = tmp_path_factory.mktemp("colliding") / "scores.csv"
    pd.concat(rows, ignore_index=True).to_csv(src, index=False)
    study = multistat.load(src)
    results = multistat.compare(study, tests=("t",), effect_sizes=False)
    board = multistat.rank(study, test="t", n_resamples=200, seed=1)
    return study, results, board


def test_report_files_are_distinct_atomic_and_formula_free(colliding, tmp_path):
    study, results, board = colliding
    out = tmp_path / "rep"
    (out / "tables").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (out / "tables" / "ranking.csv").symlink_to(victim)  # planted before the run
    write_report(results, out, sections={"ranking": board}, study=study)
    # main (2008129): the report wrote through the symlink into victim.txt
    assert victim.read_text() == "precious\n"
    assert not (out / "tables" / "ranking.csv").is_symlink()
    assert pd.read_csv(out / "tables" / "ranking.csv")["dataset"].nunique() == 3
    figs = sorted(p.name for p in (out / "figures").glob("heatmap_*.png"))
    assert len(figs) == 5, figs  # one per dataset x metric (main: 4)
    for kind in ("ranking", "leaderboard", "pairwise", "checklist"):
        mds = list((out / "tables").glob(f"{kind}_*.md"))
        assert len(mds) == 5, (kind, sorted(p.name for p in mds))  # (main ranking: 3)
    assert len(list((out / "figures").glob("rank_intervals_*.png"))) == 5
    for sub in ("leaderboard", "ranking"):
        assert len(list((out / "plots" / sub).glob("*.csv"))) == 5
    # every CSV beside the report: no cell a spreadsheet would run
    csvs = list(out.rglob("*.csv"))
    assert len(csvs) >= 15
    for path in csvs:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
        for col in raw.columns:
            for cell in [col, *raw[col]]:
                assert not cell.startswith(("=", "+", "@", "\t", "\r")), (path, cell)
                if cell.startswith("-"):
                    float(cell)
    lb = pd.read_csv(out / "tables" / "leaderboard.csv")
    assert "'=x" in set(lb["system"]) and lb["score"].dtype == np.float64


@pytest.mark.parametrize("folder", ["figures", "tables", "plots"])
def test_report_refuses_a_linked_folder_and_leaves_its_target_alone(colliding, tmp_path,
                                                                     folder):
    # a figures/, tables/ or plots/ linking elsewhere got the files written into its
    # target, and a linked plots/ had its target's leaderboard/ folder deleted
    from multistat.errors import ParameterError

    study, results, board = colliding
    out, target = tmp_path / "rep", tmp_path / "elsewhere"
    (target / "leaderboard").mkdir(parents=True)
    (target / "leaderboard" / "keep.csv").write_text("precious\n")
    out.mkdir()
    (out / folder).symlink_to(target, target_is_directory=True)
    with pytest.raises(ParameterError, match=rf"{folder}'? is a symbolic link"):
        write_report(results, out, sections={"ranking": board}, study=study)
    assert sorted(p.name for p in target.rglob("*")) == ["keep.csv", "leaderboard"]
    assert (target / "leaderboard" / "keep.csv").read_text() == "precious\n"


def test_cli_report_refuses_an_input_under_out_plots(colliding, tmp_path, capsys):
    # an input file under --out/plots/ was deleted with exit 0
    from conftest import assert_one_line_error, run_cli

    _, results, _ = colliding
    out = tmp_path / "rep"
    (out / "plots").mkdir(parents=True)
    src = out / "plots" / "results.parquet"
    multistat.write_parquet(results, src)
    status, _, err = run_cli(["report", src, "--out", out], capsys)
    assert_one_line_error(status, err, "plots")
    assert src.is_file()
