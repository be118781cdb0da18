"""The pipelines/llm-leaderboard template: real DVC renders it, every flag exists, and
``dvc repro`` goes from inspect_ai logs (tests/data/llm/inspect) to a ranked, clustered
leaderboard with a report."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from tests.test_pipeline_several import _options, _run

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "pipelines" / "llm-leaderboard"
BIN = Path(sys.executable).parent


def test_llm_template_renders_and_reproduces(tmp_path):
    here = tmp_path / "repo" / "pipelines" / "llm-leaderboard"
    shutil.copytree(TEMPLATE, here)
    shutil.copytree(ROOT / "tests" / "data" / "llm" / "inspect",
                    tmp_path / "repo" / "tests" / "data" / "llm" / "inspect")
    _run(["git", "init", "-q"], tmp_path / "repo")
    _run([str(BIN / "dvc"), "init", "-q"], tmp_path / "repo")
    code = ("from dvc.repo import Repo\n"
            "for s in Repo('.').index.stages: print(s.addressing, '\\t', s.cmd)")
    out = _run([sys.executable, "-c", code], here)
    cmds = dict(line.split(" \t ", 1) for line in out.stdout.strip().splitlines())
    # the multistat_version stage (tests/test_report_templates.py checks it)
    cmds = {n: c for n, c in cmds.items() if not n.endswith("multistat_version")}
    assert [n.split(":")[-1] for n in cmds] == ["load", "compare", "rank", "report"]
    for name, cmd in cmds.items():
        words = cmd.split()
        assert "${" not in cmd and words[0] == "multistat", name
        flags = {w for w in words if w.startswith("--")}
        assert flags <= _options([words[1]]), (name, flags - _options([words[1]]))
    params = yaml.safe_load((here / "params.yaml").read_text())
    params["compare"]["n_resamples"] = params["rank"]["n_resamples"] = 999
    params["report"]["dpi"] = 50
    (here / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    out = subprocess.run([str(BIN / "dvc"), "repro"], cwd=here, capture_output=True,
                         text=True, timeout=900, check=False,
                         env=dict(os.environ, DVC_NO_ANALYTICS="1", MPLBACKEND="Agg",
                                  PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    results = pd.read_parquet(here / "reports" / "results.parquet")
    assert set(results["test"]) == {"t-cluster", "bootstrap"}
    # the systems are the models the logs name; the clustered rows count the passages
    assert set(results["system_a"]) | set(results["system_b"]) == {"mockllm/alpha",
                                                                    "mockllm/beta"}
    assert (results.loc[results.test == "t-cluster", "n_groups"] == 3).all()
    ranking = pd.read_parquet(here / "reports" / "ranking.parquet")
    assert set(ranking["metric"]) == {"match", "includes"}
    assert "Leaderboard clusters and rank intervals" in (
        here / "reports" / "report.html").read_text(encoding="utf-8")
