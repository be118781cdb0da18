"""``multistat preferences`` (issue 26): the leaderboard table in three formats with the
run metadata, and one-line errors with exit status 2. Real battles from the MQM
newstest2020 zh-en segment scores (tests/data)."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
from conftest import assert_one_line_error
from conftest import run_cli as run
from test_preferences import mqm_battles

import multistat


@pytest.fixture(scope="module")
def battles_csv(tmp_path_factory):
    path = tmp_path_factory.mktemp("prefs") / "battles.csv"
    mqm_battles(300).to_csv(path, index=False)
    return path


def test_writes_csv_parquet_jsonl(battles_csv, tmp_path, capsys):
    ref = multistat.bradley_terry(battles_csv, n_resamples=200, seed=4)
    for ext in ("csv", "parquet", "jsonl"):
        out = tmp_path / f"leaderboard.{ext}"
        status, stdout, err = run(["preferences", battles_csv, "--out", out,
                                   "--n-resamples", 200, "--seed", 4], capsys)
        assert status == 0, err
        assert f"wrote {out}" in stdout and "13500 battles, 10 systems" in stdout
        got = (pd.read_csv(out) if ext == "csv" else pd.read_parquet(out) if ext == "parquet"
               else pd.read_json(out, lines=True, precise_float=True))
        # every format round-trips exactly
        pd.testing.assert_frame_equal(got, ref, check_dtype=False, check_exact=True,
                                      rtol=1e-14)
    meta = json.loads(pq.read_schema(tmp_path / "leaderboard.parquet").metadata[b"multistat"])
    assert meta["seed"] == 4 and meta["n_resamples"] == 200 and meta["ties"] == "half"
    assert meta["stage"] == "preferences" and len(meta["input_sha256"]) == 64
    assert meta["multistat_version"]


def test_davidson_and_anchor(battles_csv, tmp_path, capsys):
    out = tmp_path / "lb.csv"
    status, stdout, err = run(["preferences", battles_csv, "-o", out, "--ties", "davidson",
                               "--anchor", "Online-B.1605", "--n-resamples", 100], capsys)
    assert status == 0, err
    assert "ties=davidson (nu = " in stdout
    board = pd.read_csv(out).set_index("system")
    assert board.loc["Online-B.1605", "score"] == pytest.approx(1000)


@pytest.mark.parametrize("args, fragments", [
    (["--winner", "item"], ["column 'item' has unknown value '1' in rows 1, 2, 3 and",
                            "allowed: 'model_a', 'model_b', 'tie'"]),
    (["--model-a", "first"], ["no column 'first' (`--model-a`)"]),
    (["--ties", "split"], ["`--ties`", "'half', 'davidson'"]),
    (["--anchor", "nobody"], ["`--anchor` 'nobody' is not a system"]),
    (["--seed", "-1"], ["--seed"]),
    (["--systems", "Human-A.0,GPT-9"], ["system(s) ['GPT-9'] never play"]),
])
def test_bad_input_is_one_line(battles_csv, tmp_path, capsys, args, fragments):
    status, _, err = run(["preferences", battles_csv, "-o", tmp_path / "x.csv", *args],
                         capsys)
    assert_one_line_error(status, err, *fragments)


def test_bad_files_are_one_line(tmp_path, capsys):
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,winner\nx,y,model_a\ny,x,model_a\nu,v,tie\n")
    status, _, err = run(["preferences", path, "-o", tmp_path / "lb.csv"], capsys)
    assert_one_line_error(status, err, "comparison graph is not connected",
                          "{u, v}; {x, y}")
    path.write_text("model_a,model_b,winner\nx,x,tie\n")
    status, _, err = run(["preferences", path, "-o", tmp_path / "lb.csv"], capsys)
    assert_one_line_error(status, err, "system 'x' plays against itself in row 1")
    status, _, err = run(["preferences", path, "-o", path], capsys)
    assert_one_line_error(status, err, "refusing to overwrite an input")
    status, _, err = run(["preferences", path, "-o", tmp_path / "lb.txt"], capsys)
    assert_one_line_error(status, err, "must end in .parquet, .csv, .jsonl")


def test_item_column_resamples_items(battles_csv, tmp_path, capsys):
    out = tmp_path / "lb.parquet"
    status, stdout, err = run(["preferences", battles_csv, "-o", out, "--item-col", "item",
                               "--n-resamples", 100, "--seed", 3], capsys)
    assert status == 0, err
    assert "100 bootstrap resamples of the 300 items (seed 3)" in stdout
    meta = json.loads(pq.read_schema(out).metadata[b"multistat"])
    assert meta["resampling"] == "items" and meta["item_column"] == "item"
    ref = multistat.bradley_terry(battles_csv, n_resamples=100, seed=3, item="item")
    pd.testing.assert_frame_equal(pd.read_parquet(out), ref, check_exact=True)
    status, _, err = run(["preferences", battles_csv, "-o", tmp_path / "x.csv",
                          "--item-col", "prompt"], capsys)
    assert_one_line_error(status, err, "no column 'prompt' (`--item-col`)")


def test_twin_names_are_one_line(tmp_path, capsys):
    path = tmp_path / "b.csv"
    path.write_text("model_a,model_b,winner\nm1,m2,model_a\nm2,m1 ,model_b\nm1,m2,tie\n")
    status, _, err = run(["preferences", path, "-o", tmp_path / "lb.csv"], capsys)
    assert_one_line_error(status, err, "system names 'm1' (", "line 2, column 'model_a')",
                          "'m1 ' (", "line 3, column 'model_b') differ only by surrounding "
                          "whitespace")
