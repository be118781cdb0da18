"""Issue 23.4: pipelines/mt-shared-task with its rank stage, run with real DVC in a copy of
the template beside the WMT17 en-de slice it points at (tests/data/wmt17-en-de). The
Monte Carlo sizes are lowered to keep the run short; the report must hold the cluster
leaderboards and rank-interval figures of the rank stage."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from html import unescape
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
    # the multistat_version stage (tests/test_report_templates.py checks it)
    cmds = {n: c for n, c in cmds.items() if not n.endswith("multistat_version")}
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


#: a number that is exactly zero ("0", "0.000"), not part of another number or a percent
_ZERO = re.compile(r"(?<![\d.,])0(?:\.0+)?(?![\d.,%])")


def zero_sentences(html: str) -> list[str]:
    """The report's prose sentences (tables, figures and styles left out) that state a
    number equal to zero, other than a seed."""
    text = re.sub(r"<(style|table|details|figure)[\s\S]*?</\1>", " ", html)
    text = unescape(re.sub(r"<[^>]+>", " ", text))
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    return [s for s in sentences if _ZERO.search(re.sub(r"seed 0\b", "seed", s))]


def test_zero_sentences_finds_a_zero():
    html = ("<style>p{margin:0}</style><p>Differences smaller than 0 are not detectable. "
            "Smaller than 0.730 are not (seed 0). Power 80 %.</p><table><td>0</td></table>")
    assert zero_sentences(html) == ["Differences smaller than 0 are not detectable."]


@pytest.mark.slow
def test_wmt24_layout_to_a_clustered_leaderboard(tmp_path):
    """The shipped template, unchanged but for its params, on WMT24's layout
    (tests/data/wmt24-layout-en-de: 21 systems, 2 domains, 2 references, canary lines):
    files -> load-mt -> compare -> rank -> report, with no script of ours."""
    repo = tmp_path / "mt24"
    shutil.copytree(TEMPLATE, repo / "pipelines" / "mt-shared-task")
    shutil.copytree(ROOT / "tests" / "data" / "wmt24-layout-en-de",
                    repo / "tests" / "data" / "wmt24-layout-en-de")
    here = repo / "pipelines" / "mt-shared-task"
    _run(["git", "init", "-q"], repo)
    _run([str(BIN / "dvc"), "init", "-q"], repo)
    data = "../../tests/data/wmt24-layout-en-de"
    params = yaml.safe_load((here / "params.yaml").read_text())
    params["data"].update(hypotheses=f"{data}/system-outputs/en-de",
                          references=f"{data}/references", dataset="en-de")
    params["data"]["options"]["domains"] = f"{data}/documents/en-de.docs.gz"
    for stage in ("compare", "rank"):
        params[stage]["n_resamples"] = 500
    params["report"]["dpi"] = 50
    (here / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    start = time.perf_counter()
    out = subprocess.run([str(BIN / "dvc"), "repro"], cwd=here, capture_output=True,
                         text=True, timeout=1800, check=False,
                         env=dict(os.environ, DVC_NO_ANALYTICS="1", MPLBACKEND="Agg",
                                  PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    print(f"wmt24-layout slice, dvc repro: {time.perf_counter() - start:.0f} s")
    assert "skipped the canary line(s) 1 of every file (24 files" in out.stderr + out.stdout
    board = pd.read_parquet(here / "reports" / "ranking.parquet")
    assert set(board["dataset"]) == {"en-de-short", "en-de-long"}
    for (ds, metric), g in board.groupby(["dataset", "metric"]):
        sizes = g.groupby("cluster")["system"].size()
        print(ds, metric, "clusters:", sizes.tolist())
        # non-trivial: tiers, neither one cluster nor every system alone
        assert len(g) == 21 and 2 <= len(sizes) < 21, (ds, metric, sizes.tolist())
        # the byte-identical copy shares its original's cluster
        by = g.set_index("system")["cluster"]
        assert by["LIUM-NMT"] == by["LIUM-NMT-copy"]
    html = (here / "reports" / "report.html").read_text(encoding="utf-8")
    assert zero_sentences(html) == []
    assert ("westfall-young correction per dataset × metric, α = 0.05, 500 resamples "
            "(seed 0)") in unescape(html)
    metrics = json.loads((here / "reports" / "metrics.json").read_text())["results"]
    for ds, per in metrics.items():
        for metric, m in per.items():
            assert m["mde"] > 0 and m["mde_degenerate_pairs"] == 1, (ds, metric, m)
            assert m["significant_pairs"] > 0
