"""Issue 23.4: pipelines/mt-shared-task with its rank stage, run with real DVC in a copy of
the template beside the WMT17 en-de slice it points at (tests/data/wmt17-en-de). The
Monte Carlo sizes are lowered to keep the run short; the report must hold the cluster
leaderboards and rank-interval figures of the rank stage."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from test_pipeline_several import _options, _run

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "pipelines" / "mt-shared-task"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    repo = tmp_path_factory.mktemp("mt")
    shutil.copytree(TEMPLATE, repo / "pipelines" / "mt-shared-task")
    shutil.copytree(ROOT / "tests" / "data" / "wmt17-en-de",
                    repo / "tests" / "data" / "wmt17-en-de")
    _run(["git", "init", "-q"], repo)
    _run([str(BIN / "dvc"), "init", "-q"], repo)
    return repo, repo / "pipelines" / "mt-shared-task"


def test_template_has_a_rank_stage_with_valid_flags(project):
    _, here = project
    code = ("from dvc.repo import Repo\n"
            "for s in Repo('.').index.stages: print(s.addressing, '\\t', s.cmd)")
    out = _run([sys.executable, "-c", code], here)
    cmds = dict(line.split(" \t ", 1) for line in out.stdout.strip().splitlines())
    assert [n.split(":")[-1] for n in cmds] == ["load", "compare", "rank", "report"]
    for name, cmd in cmds.items():
        words = cmd.split()
        assert "${" not in cmd and words[0] == "multistat", name
        flags = {w for w in words if w.startswith("--")}
        assert flags <= _options([words[1]]), (name, flags - _options([words[1]]))
    assert "--ranking reports/ranking.parquet" in cmds["report"]


@pytest.mark.slow
def test_repro_writes_clusters_and_rank_intervals(project):
    _, here = project
    params = yaml.safe_load((here / "params.yaml").read_text())
    params["compare"]["n_resamples"] = 200
    params["rank"]["n_resamples"] = 200
    params["report"]["dpi"] = 50
    (here / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    # dvc repro runs four stages (3 min on a busy 2-core machine): a longer timeout than
    # _run's; the stages' own matplotlib draws off screen
    out = subprocess.run([str(BIN / "dvc"), "repro"], cwd=here, capture_output=True,
                         text=True, timeout=1200, check=False,
                         env=dict(os.environ, DVC_NO_ANALYTICS="1", MPLBACKEND="Agg",
                                  PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "Running stage 'rank'" in out.stdout
    ranking = pd.read_parquet(here / "reports" / "ranking.parquet")
    assert set(ranking["metric"]) == {"bleu", "chrf"}
    assert ranking.groupby("metric")["system"].nunique().tolist() == [10, 10]
    html = (here / "reports" / "report.html").read_text(encoding="utf-8")
    assert "Leaderboard clusters and rank intervals" in html
    figures = {p.name for p in (here / "reports" / "figures").iterdir()}
    from multistat.report._files import file_stem  # the one file-name rule

    assert {f"rank_intervals_{file_stem('wmt17-en-de', m)}.png"
            for m in ("bleu", "chrf")} <= figures
