"""Refusals, one line each (issue 24, item 4): every case exited 0, or with an internal
error, on main (2008129); each now gives exit status 2 and one line naming what is wrong."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import assert_one_line_error, run_cli

from multistat._json import depth, loads_metadata
from multistat.errors import DataValidationError, InputFileError
from multistat.io import read_parquet, read_scores, write_parquet


def _frame(n=30, seed=1, systems=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"system": np.repeat(list(systems), n),
                         "instance": np.tile(np.arange(n), len(systems)),
                         "score": rng.normal(size=len(systems) * n).round(3)})


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("refusals")
    src = folder / "small.csv"
    _frame().to_csv(src, index=False)
    from multistat import cube

    out = folder / "small.nc"
    cube.save(cube.load(src), out)
    return out


# ------------------------------------------------------------------ --scheduler
@pytest.mark.parametrize("address, fragment", [
    ("http://nonsense:xx", "unknown protocol 'http'"),      # main: exit 0
    ("tcp://nonsense:xx", "expected tcp://HOST:PORT"),       # main: exit 0
    ("gpu", "`--scheduler` must be 'threads'"),
])
def test_scheduler_is_checked_when_only_closed_form_tests_run(study, tmp_path, capsys,
                                                              address, fragment):
    out = tmp_path / "r.parquet"
    status, _, err = run_cli(["compare", study, "--tests", "t", "--scheduler", address,
                              "--out", out, "--no-progress"], capsys)
    assert_one_line_error(status, err, fragment)
    assert not out.exists()


def test_scheduler_nobody_answers_is_refused_before_the_run(study, tmp_path, capsys,
                                                            monkeypatch):
    import socket

    monkeypatch.setenv("DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT", "2s")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    status, _, err = run_cli(["compare", study, "--tests", "t", "--scheduler",
                              f"tcp://127.0.0.1:{port}", "--out", tmp_path / "r.parquet",
                              "--no-progress"], capsys)
    assert_one_line_error(status, err, f"`--scheduler` 'tcp://127.0.0.1:{port}': no dask "
                                       "scheduler answers there")


# ------------------------------------------------------------------ names
@pytest.mark.parametrize("role", ["system", "metric", "dataset"])
def test_names_differing_by_surrounding_whitespace_are_refused(tmp_path, role):
    frame = _frame().assign(metric="m", dataset="d")
    frame.loc[frame.index[-30:], role] = f"{frame[role].iloc[0]} "  # 'a' and 'a '
    if role != "system":
        frame.loc[frame.index[-30:], "system"] = "a"
    path = tmp_path / "ws.csv"
    frame.to_csv(path, index=False)
    # main: two systems 'a' and 'a ' (or two metrics, two datasets)
    with pytest.raises(DataValidationError, match=rf"{role} names '.*' \(.*ws\.csv, line 2\) "
                                                  rf"and '.* ' \(.*ws\.csv, line 62\) differ "
                                                  r"only by surrounding whitespace"):
        read_scores(path)


def test_cli_whitespace_twins_one_line(tmp_path, capsys):
    frame = _frame()
    frame.loc[frame["system"] == "c", "system"] = "a "
    frame.to_csv(tmp_path / "ws.csv", index=False)
    status, _, err = run_cli(["load", tmp_path / "ws.csv", "--out", tmp_path / "o.nc"],
                             capsys)
    assert_one_line_error(status, err, "system names 'a'", "differ only by surrounding")


@pytest.mark.parametrize("name", ["ab\x01c", "ab\nc", "tab\there", "esc\x1b[31m"])
def test_control_characters_in_dataset_are_refused(tmp_path, capsys, name):
    _frame().to_csv(tmp_path / "s.csv", index=False)
    # main: 'ab\x01c' became a dataset (a NetCDF group and file names)
    status, _, err = run_cli(["load", tmp_path / "s.csv", "--dataset", name, "--out",
                              tmp_path / "o.nc"], capsys)
    assert_one_line_error(status, err, "dataset name", "contains the control character U+")
    assert not (tmp_path / "o.nc").exists()


# ------------------------------------------------------------------ score values
def test_booleans_are_refused_in_json_and_parquet_as_in_csv(tmp_path):
    frame = _frame().assign(score=lambda f: f["score"] > 0)
    frame.to_csv(tmp_path / "b.csv", index=False)
    with pytest.raises(InputFileError, match=r"b\.csv, line 2, column 'score': non-numeric "
                                             r"score 'True'"):
        read_scores(tmp_path / "b.csv")
    frame.to_json(tmp_path / "b.jsonl", orient="records", lines=True)
    # main: read as a binary metric (True -> 1.0)
    with pytest.raises(InputFileError, match=r"b\.jsonl, line 1, column 'score': "
                                             r"non-numeric score True \(a boolean\)"):
        read_scores(tmp_path / "b.jsonl")
    frame.to_parquet(tmp_path / "b.parquet")
    with pytest.raises(InputFileError, match=r"b\.parquet, row 0, column 'score': "
                                             r"non-numeric score True \(a boolean\)"):
        read_scores(tmp_path / "b.parquet")
    # a JSON column mixing numbers and one boolean
    mixed = _frame().astype({"score": object})
    mixed.loc[5, "score"] = False
    mixed.to_json(tmp_path / "m.jsonl", orient="records", lines=True)
    with pytest.raises(InputFileError, match=r"m\.jsonl, line 6, column 'score': "
                                             r"non-numeric score False"):
        read_scores(tmp_path / "m.jsonl")


def test_duplicate_json_keys_are_refused(tmp_path):
    rows = [f'{{"system": "{r.system}", "instance": {r.instance}, "score": {r.score}, '
            f'"score": 1}}' for r in _frame().itertuples()]
    (tmp_path / "d.jsonl").write_text("\n".join(rows) + "\n")
    # main: every score silently replaced by the second value, 1
    with pytest.raises(InputFileError, match=r"d\.jsonl, line 1: key 'score' appears twice "
                                             r"in one object"):
        read_scores(tmp_path / "d.jsonl")
    (tmp_path / "d.json").write_text("[" + ",".join(rows) + "]")
    with pytest.raises(InputFileError, match=r"d\.json: key 'score' appears twice"):
        read_scores(tmp_path / "d.json")


# ------------------------------------------------------------------ alpha, --out
def test_tiny_alpha_names_alpha(study, tmp_path, capsys):
    status, _, err = run_cli(["compare", study, "--tests", "t", "--alpha", "1e-17",
                              "--out", tmp_path / "r.parquet", "--no-progress"], capsys)
    # main: "`confidence_level` must be in (0, 1); got 1.0"
    assert_one_line_error(status, err, "`--alpha` 1e-17 is too small")
    assert "confidence_level` must" not in err


def test_directory_as_out_is_refused_before_the_run(study, tmp_path, capsys):
    (tmp_path / "res.parquet").mkdir()
    status, _, err = run_cli(["compare", study, "--tests", "bootstrap", "--out",
                              tmp_path / "res.parquet", "--no-progress"], capsys)
    # main: ran, then "[Errno 21] Is a directory: '.../.res.parquet.XXXX.tmp.parquet'"
    assert_one_line_error(status, err, f"`--out` '{tmp_path / 'res.parquet'}' is a "
                                       "directory; give a file path")
    (tmp_path / "file").write_text("x")
    status, _, err = run_cli(["report", tmp_path / "nothing.parquet", "--out",
                              tmp_path / "file"], capsys)
    assert status == 2 and err.count("\n") == 1


# ------------------------------------------------------------------ nested metadata
def test_json_depth_without_recursion():
    assert depth(1) == 0 and depth([]) == 1 and depth({"a": [1, {"b": []}]}) == 4
    deep = json.loads("[" * 500 + "]" * 500)
    assert depth(deep, limit=64) == 65
    with pytest.raises(ValueError, match="nested more than 64 levels"):
        loads_metadata("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="duplicate key 'a'"):
        loads_metadata('{"a": 1, "a": 2}')
    assert loads_metadata('{"a": {"b": [1, 2]}}') == {"a": {"b": [1, 2]}}


@pytest.mark.parametrize("levels", [90, 900, 100_000])
def test_deeply_nested_parquet_metadata_is_exit_2(tmp_path, capsys, levels):
    table = pa.table({"x": [1.0]})
    nested = "{" + '"stage": "compare", "x": ' + "[" * levels + "]" * levels + "}"
    path = tmp_path / "deep.parquet"
    pq.write_table(table.replace_schema_metadata({"multistat": nested}), path)
    # main: RecursionError (internal error, exit 1) at 900 and 100,000 levels
    with pytest.raises(InputFileError, match=r"deep\.parquet: corrupt multistat metadata "
                                             r"\(nested more than 64 levels deep\)"):
        read_parquet(path)
    status, _, err = run_cli(["report", path, "--out", tmp_path / "rep"], capsys)
    assert_one_line_error(status, err, "nested more than 64 levels deep")


def test_deeply_nested_study_attribute_is_exit_2(study, tmp_path, capsys):
    from multistat import cube

    st = cube.open_study(study)
    ds = cube.datasets(st)["small"]
    ds.attrs["sacrebleu"] = '{"m": ' + "[" * 5000 + "]" * 5000 + "}"
    path = tmp_path / "deep.nc"
    cube.save(cube.make_study({"small": ds}), path)
    status, _, err = run_cli(["compare", path, "--tests", "t", "--out",
                              tmp_path / "r.parquet", "--no-progress"], capsys)
    assert_one_line_error(status, err, "group 'small': attribute sacrebleu: nested more "
                                       "than 64 levels deep")


# ------------------------------------------------------------------ report inputs
@pytest.fixture(scope="module")
def tables(study, tmp_path_factory):
    import multistat

    folder = tmp_path_factory.mktemp("tables")
    res, systems = multistat.compare(multistat.open_study(study), tests=("t",),
                                     effect_sizes=False, return_systems=True)
    meta = res.attrs["multistat"]
    write_parquet(res, folder / "r.parquet", metadata=meta)
    write_parquet(systems, folder / "s.parquet", metadata=meta)
    other = folder / "other.csv"
    _frame(seed=9, systems=("a", "b", "c", "d")).to_csv(other, index=False)
    o_res, o_sys = multistat.compare(multistat.load(other), tests=("t",),
                                     effect_sizes=False, return_systems=True)
    write_parquet(o_sys, folder / "other_s.parquet", metadata=o_res.attrs["multistat"])
    return folder, res, meta


@pytest.mark.parametrize("edit, fragment", [
    (lambda r: r.assign(p_value=r["p_value"].where(r.index != 1, 1.5)),
     "row 1 (small / score, a vs c, t): p_value 1.5 is outside [0, 1]"),
    (lambda r: r.assign(p_adjusted=r["p_adjusted"].where(r.index != 2, -0.1)),
     "row 2 (small / score, b vs c, t): p_adjusted -0.1 is outside [0, 1]"),
    (lambda r: r.assign(reject=r.index == 0, p_adjusted=0.5),
     "row 0 (small / score, a vs b, t): reject is True but p_adjusted 0.5 > alpha 0.05"),
    (lambda r: r.assign(reject=False, p_adjusted=0.001),
     "row 0 (small / score, a vs b, t): reject is False but p_adjusted 0.001 < alpha"),
    (lambda r: r.assign(p_value="low"),
     "row 0 (small / score, a vs b, t): p_value 'low' is not a number"),
])
def test_report_validates_the_results_table(tables, tmp_path, capsys, edit, fragment):
    _, res, meta = tables
    path = tmp_path / "edited.parquet"
    write_parquet(edit(res.copy()), path, metadata=meta)
    # main: the report was written, with the impossible numbers in it
    status, _, err = run_cli(["report", path, "--out", tmp_path / "rep"], capsys)
    assert_one_line_error(status, err, "`results`: " + fragment)
    assert not (tmp_path / "rep" / "report.html").exists()


def test_report_systems_from_another_study_is_refused(tables, tmp_path, capsys):
    folder, _, meta = tables
    status, _, err = run_cli(["report", folder / "r.parquet", "--systems",
                              folder / "other_s.parquet", "--out", tmp_path / "rep"], capsys)
    assert_one_line_error(status, err, "`--systems` comes from another study than the "
                                       "results (study hash")
    part = read_parquet(folder / "s.parquet")
    part = part[part["system"] != "c"]
    write_parquet(part, tmp_path / "part.parquet",
                  metadata={k: v for k, v in meta.items() if k != "input_sha256"})
    status, _, err = run_cli(["report", folder / "r.parquet", "--systems",
                              tmp_path / "part.parquet", "--out", tmp_path / "rep"], capsys)
    assert_one_line_error(status, err, "`--systems` does not match the results: it has no "
                                       "score for system 'c' of dataset 'small'")
    status, _, err = run_cli(["report", folder / "r.parquet", "--systems",
                              folder / "s.parquet", "--out", tmp_path / "ok"], capsys)
    assert status in (0, None), err


@pytest.mark.parametrize("call, match", [
    (lambda m: m.friedman(None, alpha=1.5), r"`alpha` must be in \(0, 1\); got 1.5"),
    (lambda m: m.replicability([0.1, 0.2], method="x"), r"`method` must be one of"),
    (lambda m: m.krippendorff_alpha([[1, 2], [1, 2]], seed=-1), r"`seed`"),
    (lambda m: m.meta_analysis([0.1, 0.2], [0.1, 0.1], confidence_level=0),
     r"`confidence_level` must be in \(0, 1\); got 0"),
    (lambda m: m.meta_regression([0.1, 0.2], [0.1, 0.1], mods=[1, 2], test="t"),
     r"`test` must be one of"),
])
def test_family_options_refused_with_the_shared_messages(call, match):
    import multistat
    from multistat.errors import ParameterError

    with pytest.raises(ParameterError, match=match):
        call(multistat)


def test_repeated_comparisons_are_refused_not_counted_twice(tmp_path, capsys):
    # a pair listed twice would double its Holm-adjusted p; a report of duplicated rows
    # said "beats 16 of 18" with 10 systems; two p-values named alike kept the last
    import multistat
    from conftest import assert_one_line_error, run_cli
    from multistat.demo import demo_frame
    from multistat.errors import DataValidationError, ParameterError
    from multistat.report.tables import check_results

    study = multistat.from_frame(demo_frame())
    with pytest.raises(ParameterError, match=r"lists the pair \[.sys-a., .sys-b.\] twice"):
        multistat.compare(study, tests=("t",), pairs=[("sys-a", "sys-b"), ("sys-a", "sys-b")])
    table = multistat.compare(study, tests=("t",), pairs=[("sys-a", "sys-b"),
                                                         ("sys-b", "sys-a")])
    assert len(table) == 2 * table["metric"].nunique() * table["dataset"].nunique()
    with pytest.raises(DataValidationError, match=r"repeat a dataset x metric x pair"):
        check_results(pd.concat([table, table.iloc[:1]]))
    status, _, err = run_cli(["replicability", "--p-values", "a=0.01,b=0.2,a=0.03"], capsys)
    assert_one_line_error(status, err, "'a' is named twice")


# ------------------------------------------ messages that point at what compare has
def test_a_tiny_alpha_does_not_suggest_a_flag_compare_lacks(study, tmp_path, capsys):
    """main, 3c3bb2d: "or give `confidence_level`", which compare has no flag for."""
    status, _, err = run_cli(["compare", str(study), "--tests", "t", "--alpha", "1e-17",
                              "-o", str(tmp_path / "r.parquet")], capsys)
    assert_one_line_error(status, err, "`--alpha` 1e-17 is too small",
                          "`multistat rank --confidence-level`")
    assert "`confidence_level`" not in err and "--confidence-level`)" in err


def test_a_scheduler_closed_form_tests_do_not_use_is_said(study, tmp_path, capsys):
    """Closed-form tests never run on the scheduler: an information line says so (and
    nothing is said when a resampling test uses it)."""
    status, out, err = run_cli(["compare", str(study), "--tests", "t,wilcoxon",
                                "--scheduler", "synchronous", "-o",
                                str(tmp_path / "r.parquet")], capsys)
    assert status == 0, err
    assert ("note: --scheduler synchronous is checked but not used: the tests t, wilcoxon "
            "are closed-form and run in this process") in out
    status, out, err = run_cli(["compare", str(study), "--tests", "t,bootstrap",
                                "--n-resamples", "99", "--scheduler", "synchronous", "-o",
                                str(tmp_path / "r.parquet")], capsys)
    assert status == 0, err
    assert "not used" not in out
