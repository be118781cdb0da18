"""Readers of language-model evaluation logs (multistat.io._llm*): inspect_ai, lm-evaluation-
harness, HELM and Every Eval Ever.

The fixtures in tests/data/llm/ were written by the tools themselves (see each folder's
SOURCE.md). Every value is checked against an independent parse written here with json
and zipfile (+ zstandard for the .eval members), and a study loaded from the logs is
compared with the same values loaded from a long CSV.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import assert_one_line_error, run_cli

import multistat
from multistat.errors import (
    DataValidationError,
    DroppedDataWarning,
    InputFileError,
    MultistatError,
    ParameterError,
)
from multistat.io import read_scores
from multistat.io._llm import detect_llm, read_llm_logs

DATA = Path(__file__).parent / "data" / "llm"
INSPECT_EVAL = DATA / "inspect" / "eval"
INSPECT_JSON = DATA / "inspect" / "json"
LMEVAL = DATA / "lm-eval" / "output"
HELM = DATA / "helm" / "from-format"
HELM_RUN = DATA / "helm" / "helm-run"
EEE = DATA / "eee"

#: inspect_ai.scorer.value_to_float's defaults for its letter values
LETTER = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def one_line(exc_info) -> str:
    message = str(exc_info.value)
    assert "\n" not in message and "\r" not in message
    return message


# ----------------------------------------------------------------------------- by hand
def _zip_member(path: Path, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes, read without zipfile's decompression: the raw data after the
    local header, zstd-decompressed in one call when the method is 93."""
    import zstandard

    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        n, m = struct.unpack("<HH", local[26:30])
        fh.seek(info.header_offset + 30 + n + m)
        raw = fh.read(info.compress_size)
    if info.compress_type == 93:
        return zstandard.ZstdDecompressor().decompress(raw, max_output_size=info.file_size)
    return zipfile.ZipFile(path).read(info.filename)


def inspect_by_hand(folder: Path, group: str = "passage") -> pd.DataFrame:
    """Long rows of every inspect log in ``folder``: json.load and zipfile by hand."""
    rows = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".eval":
            zf = zipfile.ZipFile(path)
            header = json.loads(_zip_member(path, zf.getinfo("header.json")))
            samples = [json.loads(_zip_member(path, i)) for i in zf.infolist()
                       if i.filename.startswith("samples/")]
        else:
            header = json.loads(path.read_text())
            samples = header["samples"]
        for s in samples:
            for scorer, score in s["scores"].items():
                rows.append({"dataset": header["eval"]["task"],
                             "system": header["eval"]["model"], "metric": scorer,
                             "instance": str(s["id"]), "run": str(s["epoch"]),
                             "group": s["metadata"][group],
                             "score": LETTER[score["value"]]})
    return pd.DataFrame(rows)


def lmeval_by_hand(folder: Path) -> pd.DataFrame:
    rows = []
    for model_dir in sorted(folder.iterdir()):
        files = sorted(model_dir.glob("samples_*.jsonl"))
        tasks = sorted({f.name.split("_2026")[0].removeprefix("samples_") for f in files})
        for task in tasks:
            runs = sorted(model_dir.glob(f"samples_{task}_*.jsonl"))
            for r, path in enumerate(runs, 1):
                stamp = path.name.removeprefix(f"samples_{task}_").removesuffix(".jsonl")
                model = json.loads((model_dir / f"results_{stamp}.json").read_text())[
                    "model_name"]
                for line in path.read_text().splitlines():
                    obj = json.loads(line)
                    for metric in obj["metrics"]:
                        rows.append({"dataset": task, "system": model, "metric": metric,
                                     "instance": str(obj["doc_id"]), "run": str(r),
                                     "group": obj["doc"]["passage"],
                                     "score": float(obj[metric])})
    return pd.DataFrame(rows)


def _merged(frame: pd.DataFrame, hand: pd.DataFrame, keys) -> pd.DataFrame:
    assert len(frame) == len(hand)
    both = frame.merge(hand, on=list(keys), suffixes=("", "_hand"), how="outer",
                       indicator=True)
    assert (both["_merge"] == "both").all()
    return both


# ----------------------------------------------------------------------------- inspect
@pytest.mark.parametrize("folder", [INSPECT_EVAL, INSPECT_JSON], ids=["eval", "json"])
def test_inspect_values_equal_a_parse_by_hand(folder):
    frame = read_llm_logs(folder, format="inspect", group_col="passage")
    hand = inspect_by_hand(folder)
    keys = ["dataset", "system", "metric", "instance", "run"]
    both = _merged(frame, hand, keys)
    np.testing.assert_allclose(both["score"], both["score_hand"], rtol=0, atol=1e-12)
    assert (both["group"] == both["group_hand"]).all()
    assert sorted(frame["system"].unique()) == ["mockllm/alpha", "mockllm/beta"]
    assert set(frame["metric"]) == {"match", "includes"}
    assert set(frame["run"]) == {"1", "2"}  # the two epochs
    assert frame.attrs["metrics"]["match"]["kind"] == "binary"


def test_inspect_eval_and_json_logs_of_the_same_runs_agree():
    a = read_llm_logs(INSPECT_EVAL, group_col="passage")
    b = read_llm_logs(INSPECT_JSON, group_col="passage")
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_inspect_study_has_epochs_as_runs_and_the_group():
    study = multistat.load(INSPECT_EVAL, group_col="passage")
    ds = study["arith_capitals"].to_dataset()
    assert ds.sizes == {"system": 2, "metric": 2, "instance": 6, "run": 2,
                        "stat": ds.sizes.get("stat", 0)} or ds.sizes["run"] == 2
    assert list(ds.instance.values) == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert list(ds.group.values) == ["p1", "p1", "p2", "p2", "p3", "p3"]
    hand = inspect_by_hand(INSPECT_EVAL)
    mean = hand.groupby(["system", "metric", "instance"])["score"].mean()
    got = ds.score.to_series()
    np.testing.assert_allclose(got.loc[mean.index].to_numpy(), mean.to_numpy(), atol=1e-12)


def test_inspect_epochs_mean_gives_one_score_per_sample():
    frame = read_llm_logs(INSPECT_JSON, epochs="mean")
    assert "run" not in frame.columns
    hand = inspect_by_hand(INSPECT_JSON)
    mean = hand.groupby(["system", "metric", "instance"], as_index=False)["score"].mean()
    both = frame.merge(mean, on=["system", "metric", "instance"], suffixes=("", "_hand"))
    assert len(both) == len(frame) == 24
    np.testing.assert_allclose(both["score"], both["score_hand"], atol=1e-12)


# ----------------------------------------------------------------------------- lm-eval
def test_lmeval_values_equal_a_parse_by_hand():
    frame = read_llm_logs(LMEVAL, format="lm-eval", group_col="passage")
    hand = lmeval_by_hand(LMEVAL)
    keys = ["dataset", "system", "metric", "instance", "run"]
    both = _merged(frame, hand, keys)
    np.testing.assert_allclose(both["score"], both["score_hand"], rtol=0, atol=1e-12)
    assert (both["group"] == both["group_hand"]).all()
    assert sorted(frame["system"].unique()) == ["dummy-a", "dummy-b"]
    assert sorted(frame["dataset"].unique()) == ["toy_gen", "toy_mc"]
    assert set(frame["run"]) == {"1", "2"}  # two runs (seeds) of each model


def test_lmeval_sample_files_alone_and_mean_over_runs():
    files = sorted(LMEVAL.glob("*/samples_toy_mc_*.jsonl"))
    frame = read_llm_logs(files, epochs="mean")
    hand = lmeval_by_hand(LMEVAL)
    hand = hand[hand["dataset"] == "toy_mc"]
    mean = hand.groupby(["system", "metric", "instance"], as_index=False)["score"].mean()
    both = frame.merge(mean, on=["system", "metric", "instance"], suffixes=("", "_hand"))
    assert len(both) == len(frame) == 2 * 2 * 8
    np.testing.assert_allclose(both["score"], both["score_hand"], atol=1e-12)


# ----------------------------------------------------------------------------- compare
def _long_csv(tmp_path, hand: pd.DataFrame) -> Path:
    path = tmp_path / "scores.csv"
    hand.to_csv(path, index=False)
    return path


@pytest.mark.parametrize("tool", ["inspect", "lm-eval"])
def test_compare_on_logs_equals_compare_on_a_long_csv(tmp_path, tool):
    if tool == "inspect":
        hand, path = inspect_by_hand(INSPECT_EVAL), INSPECT_EVAL
    else:
        hand, path = lmeval_by_hand(LMEVAL), LMEVAL
        hand = hand[hand["metric"] != "exact_match"]  # constant 0: nothing to test
    logs = multistat.load(path, group_col="passage",
                          metrics=sorted(hand["metric"].unique()))
    csv = multistat.load(_long_csv(tmp_path, hand), run_col="run", group_col="group")
    kw = {"tests": ("t", "bootstrap", "wilcoxon"), "seed": 7, "n_resamples": 199}
    a = multistat.compare(logs, **kw)
    b = multistat.compare(csv, **kw)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                  check_like=True)
    a = multistat.compare(logs, tests=("bootstrap",), cluster="group", seed=3,
                          n_resamples=199)
    b = multistat.compare(csv, tests=("bootstrap",), cluster="group", seed=3,
                          n_resamples=199)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                  check_like=True)


# ----------------------------------------------------------------------------- detection
@pytest.mark.parametrize("path, fmt", [
    (INSPECT_EVAL, "inspect"), (INSPECT_JSON, "inspect"),
    (next(INSPECT_JSON.iterdir()), "inspect"), (LMEVAL, "lm-eval"),
    (DATA / "lm-eval", "lm-eval"), (HELM, "helm"), (HELM_RUN, "helm"), (EEE, "eee"),
    (next(EEE.rglob("*_samples.jsonl")), "eee"),
])
def test_detection(path, fmt):
    assert detect_llm(path) == fmt
    if path.is_dir():
        group = {"group_col": "passage"} if fmt in ("inspect", "lm-eval") else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DroppedDataWarning)  # HELM's count-0 stats
            frame = read_scores(path, **group)  # the general reader routes them
        assert frame.attrs["source"]["format"] == fmt


def test_ordinary_score_files_are_not_logs(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"system": "a", "instance": "1", "score": 1}\n')
    assert detect_llm(p) is None
    assert detect_llm(DATA.parent / "realsumm") is None


def test_logs_of_two_tools_at_once_are_an_error():
    with pytest.raises(InputFileError, match="logs of several tools") as exc:
        multistat.load([INSPECT_EVAL, LMEVAL])
    one_line(exc)


# ----------------------------------------------------------------------------- errors
def _copy_json_logs(tmp_path) -> list[Path]:
    out = []
    for p in sorted(INSPECT_JSON.iterdir()):
        shutil.copy(p, tmp_path / p.name)
        out.append(tmp_path / p.name)
    return out


def _edit(path: Path, change) -> None:
    log = json.loads(path.read_text())
    change(log)
    path.write_text(json.dumps(log, indent=2))


def test_a_sample_without_a_score_names_the_file_and_the_sample(tmp_path):
    a, _ = _copy_json_logs(tmp_path)
    _edit(a, lambda log: log["samples"][2].update(scores={}))
    with pytest.raises(MultistatError, match=r"sample 'q3', epoch 1: the sample has no "
                                             r"score") as exc:
        read_llm_logs(tmp_path)
    assert a.name in one_line(exc)
    frame = read_llm_logs(tmp_path, missing="keep")
    cell = frame[(frame.instance == "q3") & (frame.run == "1")
                 & frame.system.eq("mockllm/alpha")]
    assert len(cell) == 2 and cell["score"].isna().all()
    study = multistat.from_frame(frame)
    assert study["arith_capitals"].attrs["missing"] == "keep"


def test_inspect_value_conventions(tmp_path):
    a, _ = _copy_json_logs(tmp_path)

    def change(log):
        values = ["P", "N", True, False, 0.25, "yes", "0.75", 1]
        for s, v in zip(log["samples"], values):
            s["scores"]["match"]["value"] = v

    _edit(a, change)
    frame = read_llm_logs(tmp_path)
    got = frame[frame.system.eq("mockllm/alpha") & frame.metric.eq("match")]
    log = json.loads(a.read_text())
    want = {(str(s["id"]), str(s["epoch"])): v for s, v in zip(
        log["samples"], [0.5, 0.0, 1.0, 0.0, 0.25, 1.0, 0.75, 1.0])}
    for (inst, run), v in want.items():
        assert got[(got.instance == inst) & (got.run == run)]["score"].item() == v
    assert frame.attrs["metrics"]["match"]["kind"] == "mean"


def test_an_unknown_score_value_is_an_error(tmp_path):
    a, _ = _copy_json_logs(tmp_path)
    _edit(a, lambda log: log["samples"][0]["scores"]["match"].update(value="maybe"))
    with pytest.raises(InputFileError, match=r"sample 'q1', epoch 1: scorer 'match' has "
                                             r"the value 'maybe', not a number") as exc:
        read_llm_logs(tmp_path)
    assert a.name in one_line(exc)


def test_dict_scores_give_one_metric_per_key(tmp_path):
    a, b = _copy_json_logs(tmp_path)
    for p in (a, b):
        _edit(p, lambda log: [s["scores"].update(judge={"value": {"x": 1, "y": "C"}})
                              for s in log["samples"]])
    frame = read_llm_logs(tmp_path)
    assert {"judge/x", "judge/y"} <= set(frame.metric)


@pytest.mark.parametrize("content, message", [
    (b"not json at all", "not an inspect log"),
    (b'{"version": 2, "status": "success", "eval": {"task": ', "not valid JSON"),
    (b'{"version": 2, "status": "success"}', "no 'eval' field"),
    (b'{"version": 2, "status": "success", "eval": {"task": "t", "model": "m"}}',
     "has no samples"),
    ((b'{"version": 2, "status": "error", "eval": {"task": "t", "model": "m"}, '
     b'"samples": [{"id": 1, "epoch": 1, "scores": {"s": {"value": 1}}}]}'),
     "did not finish"),
])
def test_malformed_inspect_json(tmp_path, content, message):
    p = tmp_path / "log.json"
    p.write_bytes(content)
    with pytest.raises(InputFileError, match=message) as exc:
        read_llm_logs(p, format="inspect")
    assert str(p) in one_line(exc)


def test_malformed_eval_archive(tmp_path):
    p = tmp_path / "bad.eval"
    p.write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(InputFileError, match="not an inspect .eval archive") as exc:
        read_llm_logs(p)
    assert str(p) in one_line(exc)
    # a damaged zstd member
    src = next(INSPECT_EVAL.iterdir())
    data = bytearray(src.read_bytes())
    zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
    info = zf.getinfo("samples/q1_epoch_1.json")
    n, m = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    start = info.header_offset + 30 + n + m
    data[start + 20:start + 60] = bytes(40)
    q = tmp_path / "damaged.eval"
    q.write_bytes(bytes(data))
    with pytest.raises(InputFileError, match=r"member samples/q1_epoch_1.json") as exc:
        read_llm_logs(q)
    assert str(q) in one_line(exc)


def test_different_sample_sets_error_or_incomplete_design(tmp_path):
    a, _ = _copy_json_logs(tmp_path)
    _edit(a, lambda log: log.update(samples=[s for s in log["samples"] if s["id"] != "q6"]))
    with pytest.raises(DataValidationError, match="lacks 1 of 6 instances") as exc:
        read_llm_logs(tmp_path)
    one_line(exc)
    study = multistat.load(tmp_path, missing="keep")
    score = study["arith_capitals"].score.sel(system="mockllm/alpha", instance="q6")
    assert np.isnan(score.values).all()


def test_group_field_missing_is_an_error():
    with pytest.raises(InputFileError, match=r"no field 'topic' in the sample metadata "
                                             r"\(group_col\); it has 'passage'") as exc:
        read_llm_logs(INSPECT_JSON, group_col="topic")
    one_line(exc)


def test_malformed_lmeval_lines(tmp_path):
    folder = tmp_path / "m"
    shutil.copytree(LMEVAL / "dummy-a", folder)
    path = min(folder.glob("samples_toy_mc_*.jsonl"))
    lines = path.read_text().splitlines()
    lines[3] = lines[3][:40]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFileError, match=r"line 4: not valid JSON") as exc:
        read_llm_logs(folder)
    assert str(path) in one_line(exc)


def test_table_options_do_not_apply_to_logs():
    with pytest.raises(ParameterError, match="`system_col` does not apply") as exc:
        multistat.load(INSPECT_EVAL, system_col="model")
    one_line(exc)


def test_unknown_metric_selection():
    with pytest.raises(ParameterError, match=r"`metrics` names unknown metric\(s\) 'acc'"):
        read_llm_logs(INSPECT_EVAL, metrics=["acc"])


def test_lmeval_corpus_metrics_are_left_out_and_listed(tmp_path):
    folder = tmp_path / "m"
    for model in ("dummy-a", "dummy-b"):
        shutil.copytree(LMEVAL / model, folder / model)
    for path in folder.glob("*/samples_toy_gen_*.jsonl"):
        out = []
        for line in path.read_text().splitlines():
            obj = json.loads(line)
            obj["metrics"].append("bleu")
            obj["bleu"] = ["Paris", "lol"]
            out.append(json.dumps(obj))
        path.write_text("\n".join(out) + "\n")
    with pytest.warns(DroppedDataWarning, match="left out of the logs"):
        frame = read_llm_logs(folder)
    assert "bleu" not in set(frame.metric)
    notes = [d for d in frame.attrs["dropped"] if "'bleu'" in d]
    assert len(notes) == 4 and all("(8 lines" in d for d in notes)  # 2 models x 2 runs


# ----------------------------------------------------------------------------- HELM
def helm_by_hand(folder: Path) -> pd.DataFrame:
    rows = []
    for run in sorted(folder.iterdir()):
        spec = json.loads((run / "run_spec.json").read_text())
        for entry in json.loads((run / "per_instance_stats.json").read_text()):
            if entry.get("perturbation"):
                continue
            for stat in entry["stats"]:
                if stat["count"] == 0:
                    continue
                name = spec["name"].replace(":model=", ",model=")
                rows.append({"dataset": name.rsplit(",model=", 1)[0],
                             "system": spec["adapter_spec"]["model"],
                             "metric": stat["name"]["name"],
                             "instance": entry["instance_id"],
                             "run": str(entry["train_trial_index"]),
                             "score": stat["sum"] / stat["count"]})
    return pd.DataFrame(rows)


def test_helm_values_equal_a_parse_by_hand():
    with pytest.warns(DroppedDataWarning, match="left out of the logs"):
        frame = read_llm_logs(HELM, format="helm",
                              lower_is_better=["inference_runtime", "num_prompt_tokens"])
    hand = helm_by_hand(HELM)
    both = _merged(frame, hand, ["dataset", "system", "metric", "instance", "run"])
    np.testing.assert_allclose(both["score"], both["score_hand"], rtol=0, atol=1e-12)
    assert frame.attrs["metrics"]["inference_runtime"]["higher_is_better"] is False
    assert frame.attrs["metrics"]["exact_match"]["kind"] == "binary"
    dropped = " ".join(frame.attrs["dropped"])
    assert "training_co2_cost" in dropped and "perturbed" in dropped
    assert detect_llm(HELM) == "helm"


def test_helm_run_output_equals_a_parse_by_hand():
    with pytest.warns(DroppedDataWarning, match="left out of the logs"):
        frame = read_llm_logs(HELM_RUN)
    hand = helm_by_hand(HELM_RUN)
    both = _merged(frame, hand, ["dataset", "system", "metric", "instance", "run"])
    np.testing.assert_allclose(both["score"], both["score_hand"], rtol=0, atol=1e-12)
    assert sorted(frame.system.unique()) == ["simple/model1", "simple/model2"]
    assert set(frame.dataset) == {"simple_classification"}
    assert set(frame.run) == {"0", "1"} and frame.instance.nunique() == 8


def test_helm_has_no_group_metadata():
    with pytest.raises(ParameterError, match="no sample metadata") as exc:
        read_llm_logs(HELM, group_col="passage")
    one_line(exc)


def test_helm_run_without_run_spec(tmp_path):
    run = next(HELM.iterdir())
    shutil.copy(run / "per_instance_stats.json", tmp_path / "per_instance_stats.json")
    with pytest.raises(InputFileError, match="no run_spec.json") as exc:
        read_llm_logs(tmp_path)
    one_line(exc)


# ----------------------------------------------------------------------------- CLI
def test_cli_load_writes_the_study(tmp_path, capsys):
    out = tmp_path / "study.nc"
    status, stdout, err = run_cli(["load", str(INSPECT_EVAL), "--format", "inspect",
                                   "--group-col", "passage", "--out", str(out)], capsys)
    assert status == 0, err
    assert stdout.splitlines()[0] == ("dataset arith_capitals: 2 systems x 2 metrics x 6 "
                                      "instances; metrics: match [binary], includes [binary]")
    study = multistat.open_study(out)
    ds = study["arith_capitals"]
    assert ds.sizes["run"] == 2 and "group" in ds.coords
    direct = multistat.load(INSPECT_EVAL, group_col="passage")["arith_capitals"]
    np.testing.assert_array_equal(ds.run_score.values, direct.run_score.values)
    # detected, with the mean over runs
    status, _, err = run_cli(["load", str(LMEVAL), "--epochs", "mean", "--out",
                              str(tmp_path / "l.nc")], capsys)
    assert status == 0, err
    assert "run" not in multistat.open_study(tmp_path / "l.nc")["toy_mc"].dims


def test_cli_malformed_log_exits_2_with_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.eval"
    bad.write_bytes(b"not a zip")
    status, _, err = run_cli(["load", str(bad), "--out", str(tmp_path / "s.nc")], capsys)
    assert_one_line_error(status, err, str(bad), "not an inspect .eval archive")
    status, _, err = run_cli(["load", str(LMEVAL), "--format", "lm-eval", "--system-col",
                              "x", "--out", str(tmp_path / "s.nc")], capsys)
    assert_one_line_error(status, err, "does not apply")
    status, _, err = run_cli(["load", str(DATA.parent / "realsumm"), "--epochs", "mean",
                              "--out", str(tmp_path / "s.nc")], capsys)
    assert_one_line_error(status, err, "--epochs applies to language-model evaluation logs")


# ----------------------------------------------------------------------------- EEE
def eee_by_hand(folder: Path) -> pd.DataFrame:
    rows = []
    for path in sorted(folder.rglob("*_samples.jsonl")):
        for line in path.read_text().splitlines():
            obj = json.loads(line)
            rows.append({"dataset": obj["evaluation_name"], "system": obj["model_id"],
                         "metric": obj["evaluation_result_id"],
                         "instance": str(obj["sample_id"]),
                         "run": obj["metadata"]["epoch"],
                         "score": float(obj["evaluation"]["score"])})
    return pd.DataFrame(rows)


def test_eee_values_equal_a_parse_by_hand():
    frame = read_llm_logs(EEE, format="eee")
    hand = eee_by_hand(EEE)
    both = _merged(frame, hand, ["dataset", "system", "metric", "instance", "run"])
    np.testing.assert_allclose(both["score"], both["score_hand"], rtol=0, atol=1e-12)
    assert sorted(frame.system.unique()) == ["multistat/alpha", "multistat/beta"]
    assert detect_llm(EEE) == "eee"


def test_eee_records_hold_inspects_epoch_means():
    """The converter writes inspect's epoch-reduced score (the mean) on each epoch line:
    the EEE study's scores equal the inspect logs' read with epochs='mean'."""
    eee = read_llm_logs(EEE, epochs="mean")
    ins = read_llm_logs(INSPECT_JSON, epochs="mean")
    ins["system"] = ins["system"].str.replace("mockllm/", "multistat/")
    ins["metric"] = ins["metric"] + ":accuracy"
    both = eee.merge(ins, on=["dataset", "system", "metric", "instance"],
                     suffixes=("", "_inspect"))
    assert len(both) == len(eee) == 24
    np.testing.assert_allclose(both["score"], both["score_inspect"], atol=1e-12)


def test_eee_fixture_follows_the_published_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((EEE / "instance_level_eval.schema.json").read_text())
    validator = jsonschema.Draft7Validator(schema)
    n = 0
    for path in EEE.rglob("*_samples.jsonl"):
        for line in path.read_text().splitlines():
            validator.validate(json.loads(line))
            n += 1
    assert n == 48


def test_malformed_eee_line(tmp_path):
    src = next(EEE.rglob("*_samples.jsonl"))
    lines = src.read_text().splitlines()
    bad = json.loads(lines[2])
    del bad["evaluation"]
    lines[2] = json.dumps(bad)
    p = tmp_path / "x_samples.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputFileError, match=r"line 3 \(sample 'q2'\): no 'evaluation' "
                                             r"field") as exc:
        read_llm_logs(p)
    assert str(p) in one_line(exc)


def test_docstring_examples_run():
    import doctest

    from multistat import cube
    from multistat.io import _llm

    for obj in (_llm.read_llm_logs, cube.load):
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        for test in doctest.DocTestFinder().find(obj, globs={}):
            runner.run(test)
        assert runner.failures == 0 and runner.tries >= 4


def test_one_model_and_task_over_two_logs(tmp_path):
    """Samples of one model and task split over two logs read as one system; a sample in
    both logs is a duplicate, named with both places."""
    a, b = _copy_json_logs(tmp_path)
    log = json.loads(a.read_text())
    first = dict(log, samples=log["samples"][:5])
    second = dict(log, samples=log["samples"][5:])
    a.write_text(json.dumps(first))
    part = tmp_path / "part2.json"
    part.write_text(json.dumps(second))
    whole = read_llm_logs(INSPECT_JSON)
    split = read_llm_logs(tmp_path)
    pd.testing.assert_frame_equal(whole.reset_index(drop=True), split.reset_index(drop=True))
    part.write_text(json.dumps(dict(log, samples=log["samples"][4:])))
    with pytest.raises(DataValidationError, match=r"duplicated row.*sample 'q5', epoch 1"
                       ) as exc:
        read_llm_logs(tmp_path)
    one_line(exc)
