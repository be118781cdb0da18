"""Export of compare and rank results as Every Eval Ever aggregate records
(multistat.to_eee, ``--eee-out``), validated against the published schema
(tests/data/eee/eval.schema.json, evaleval/every_eval_ever, MIT; see its README)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

import multistat
from multistat import cube
from multistat.errors import DataValidationError, DroppedDataWarning, ParameterError

SCHEMA = json.loads((Path(__file__).parent / "data" / "eee" / "eval.schema.json")
                    .read_text())
STAMP = "1764201600"


def _validate(record):
    jsonschema.Draft7Validator(SCHEMA).validate(record)


def _study(n=40, seed=0):
    rng = np.random.default_rng(seed)
    acc = np.stack([(rng.random(n) < p).astype(float) for p in (0.9, 0.55, 0.5)])
    loss = rng.normal(0, 1, (3, n)) + np.array([[0.0], [0.8], [0.9]])
    ds = cube.make_dataset("qa", np.stack([acc, loss], 1), systems=["m-big", "m/small", "m3"],
                           metrics=["accuracy", "loss"], kind=["binary", "mean"],
                           higher_is_better=[True, False],
                           instances=[f"q{i:03d}" for i in range(n)])
    return cube.make_study({"qa": ds}), acc


def test_schema_rejects_a_broken_record():
    # the validator works: a record without model_info fails
    with pytest.raises(jsonschema.ValidationError, match="model_info"):
        _validate({"schema_version": "0.3.0", "evaluation_id": "x",
                   "retrieved_timestamp": STAMP,
                   "source_metadata": {"source_type": "evaluation_run",
                                       "source_organization_name": "o",
                                       "evaluator_relationship": "other"},
                   "eval_library": {"name": "multistat", "version": "0"},
                   "evaluation_results": []})


def test_compare_table_records_validate_and_carry_the_run(tmp_path):
    study, acc = _study()
    table = multistat.compare(study, tests=("t", "bootstrap"), n_resamples=500, seed=11,
                              effect_sizes=False)
    recs = multistat.to_eee(table, tmp_path / "out.jsonl", study=study,
                            source_organization_name="lab", retrieved_timestamp=STAMP)
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == recs
    assert [r["model_info"]["name"] for r in recs] == ["m-big", "m/small", "m3"]
    for r in recs:
        _validate(r)
        extra = r["source_metadata"]["additional_details"]
        assert extra["seed"] == "11" and extra["n_resamples"] == "500"
        assert extra["correction"] == "holm" and extra["tests"] == "t,bootstrap"
        assert extra["input_sha256"] == table.attrs["multistat"]["input_sha256"]
    big = {e["evaluation_result_id"]: e for e in recs[0]["evaluation_results"]}
    acc_res = big["qa/accuracy"]
    # the score and its Wilson interval (statsmodels' proportion_confint)
    k = int(acc[0].sum())
    assert acc_res["score_details"]["score"] == pytest.approx(k / 40, rel=1e-15)
    ci = acc_res["score_details"]["uncertainty"]["confidence_interval"]
    np.testing.assert_allclose([ci["lower"], ci["upper"]],
                               proportion_confint(k, 40, method="wilson"), rtol=1e-10)
    assert ci["method"] == "wilson" and ci["confidence_level"] == 0.95
    assert acc_res["metric_config"] == {
        "metric_id": "accuracy", "metric_name": "accuracy", "lower_is_better": False,
        "score_type": "continuous", "min_score": 0.0, "max_score": 1.0,
        "metric_unit": "proportion"}
    loss = big["qa/loss"]
    assert loss["metric_config"]["lower_is_better"] is True
    assert loss["score_details"]["uncertainty"]["confidence_interval"]["method"] == \
        "bootstrap percentile"
    assert loss["score_details"]["uncertainty"]["num_bootstrap_samples"] == 500
    # the decisions: who is significantly better than whom, per test, after correction
    for test in ("t", "bootstrap"):
        rows = table[(table.test == test) & (table.metric == "accuracy")]
        wins = {s: set() for s in ("m-big", "m/small", "m3")}
        for r in rows.itertuples():
            if r.reject:
                a_wins = r.estimate > 0
                wins[r.system_a if a_wins else r.system_b].add(
                    r.system_b if a_wins else r.system_a)
        for rec in recs:
            res = {e["evaluation_result_id"]: e for e in rec["evaluation_results"]}
            d = res["qa/accuracy"]["score_details"]["details"]
            got = d[f"{test}.significantly_better_than"]
            assert set(filter(None, got.split(","))) == wins[rec["model_info"]["name"]]
            assert d[f"{test}.correction"] == "holm" and d[f"{test}.alpha"] == "0.05"
    assert big["qa/accuracy"]["score_details"]["details"]["bootstrap.seed"] == "11"
    # lower loss is better: m-big (loss ~0) beats the others on loss
    assert "m/small" in loss["score_details"]["details"]["t.significantly_better_than"]


def test_rank_table_records_and_folder_output(tmp_path):
    study, _ = _study()
    board = multistat.rank(study, n_resamples=300, seed=2)
    recs = multistat.to_eee(board, tmp_path / "eee", retrieved_timestamp=STAMP,
                            model_ids={"m-big": "org/m-big"})
    files = sorted(p.name for p in (tmp_path / "eee").iterdir())
    assert files == ["m-big.json", "m3.json", "m_small.json"]
    for r in recs:
        _validate(r)
    first = json.loads((tmp_path / "eee" / "m-big.json").read_text())
    assert first["model_info"]["id"] == "org/m-big"
    assert first["evaluation_id"] == f"multistat/org/m-big/{STAMP}"
    res = {e["evaluation_result_id"]: e for e in first["evaluation_results"]}
    row = board[(board.system == "m-big") & (board.metric == "accuracy")].iloc[0]
    d = res["qa/accuracy"]["score_details"]["details"]
    assert d["rank"] == repr(float(row["rank"])) and d["cluster"] == str(row["cluster"])
    assert d["rank.test"] == "bootstrap" and d["rank.seed"] == "2"
    ci = res["qa/accuracy"]["score_details"]["uncertainty"]["confidence_interval"]
    assert (ci["lower"], ci["upper"]) == (row["ci_low"], row["ci_high"])
    # same input, same bytes
    again = tmp_path / "again"
    multistat.to_eee(board, again, retrieved_timestamp=STAMP,
                     model_ids={"m-big": "org/m-big"})
    for f in files:
        assert (again / f).read_bytes() == (tmp_path / "eee" / f).read_bytes()


def test_nan_scores_are_left_out_with_a_warning_and_bad_input_is_named(tmp_path):
    study, _ = _study()
    table = multistat.compare(study, tests=("t",), effect_sizes=False)
    table.loc[table.system_a == "m3", "score_a"] = np.nan
    table.loc[table.system_b == "m3", "score_b"] = np.nan
    with pytest.warns(DroppedDataWarning, match="without a finite score left out: m3"):
        recs = multistat.to_eee(table, tmp_path / "o.jsonl", retrieved_timestamp=STAMP)
    assert [r["model_info"]["name"] for r in recs] == ["m-big", "m/small"]
    for r in recs:
        _validate(r)
    with pytest.raises(DataValidationError, match="needs a compare table"):
        multistat.to_eee(pd.DataFrame({"x": [1]}), tmp_path / "x.jsonl")
    with pytest.raises(ParameterError, match="`evaluator_relationship` must be one of"):
        multistat.to_eee(table, tmp_path / "y.jsonl", evaluator_relationship="self")


@pytest.mark.slow  # two CLI runs with the study written and read back: about 6 s
def test_cli_eee_out_on_compare_and_rank(tmp_path, capsys):
    from conftest import run_cli

    study, _ = _study()
    src = tmp_path / "study.nc"
    cube.save(study, src)
    out = tmp_path / "records.jsonl"
    status, stdout, err = run_cli(["compare", str(src), "--out", str(tmp_path / "r.parquet"),
                                   "--tests", "t-cluster,t", "--no-effect-sizes",
                                   "--eee-out", str(out)], capsys)
    assert status == 0, err
    assert f"and {out}" in stdout
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(recs) == 3
    for r in recs:
        _validate(r)
    d = recs[0]["evaluation_results"][0]["score_details"]["details"]
    assert "t-cluster.significantly_better_than" in d and "t.correction" in d
    folder = tmp_path / "board"
    status, stdout, err = run_cli(["rank", str(src), "--out", str(tmp_path / "b.parquet"),
                                   "--n-resamples", "200", "--eee-out", str(folder)], capsys)
    assert status == 0, err
    assert sorted(p.name for p in folder.iterdir()) == ["m-big.json", "m3.json",
                                                        "m_small.json"]
    for p in folder.iterdir():
        _validate(json.loads(p.read_text()))
    # an output that is the input is refused before any work, one line, exit 2
    status, _, err = run_cli(["rank", str(src), "--out", str(tmp_path / "c.parquet"),
                              "--eee-out", str(src)], capsys)
    assert status == 2 and err.count("\n") == 1 and "--eee-out" in err
