"""The pipelines/metrics-task template: real DVC renders it, every flag exists, and its
rendered stage commands run, in order, on the example input (REALSumm, tests/data)."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from multistat.cli import main
from multistat.io import read_parquet
from tests.test_pipeline_several import BIN, _options, _run

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "pipelines" / "metrics-task"


def test_template_renders_and_its_stages_run(tmp_path, monkeypatch):
    project = tmp_path / "repo"
    folder = project / "pipelines" / "metrics-task"
    shutil.copytree(TEMPLATE, folder)
    shutil.copytree(ROOT / "tests" / "data" / "realsumm", project / "tests" / "data" /
                    "realsumm")
    _run(["git", "init", "-q"], project)
    _run([str(BIN / "dvc"), "init", "-q"], project)
    code = ("from dvc.repo import Repo\n"
            "for s in Repo('.').index.stages: print(s.addressing, '\\t', s.cmd)")
    out = _run([sys.executable, "-c", code], folder)
    cmds = dict(line.split(" \t ", 1) for line in out.stdout.strip().splitlines())
    # the multistat_version stage (tests/test_report_templates.py checks it)
    cmds = {n: c for n, c in cmds.items() if not n.endswith("multistat_version")}
    names = [n.split(":")[-1] for n in cmds]
    assert names == ["load", "segment", "system", "compare", "report"]
    for name, cmd in cmds.items():
        assert "${" not in cmd, name
        words = shlex.split(cmd)
        assert words[0] == "multistat"
        flags = {w for w in words if w.startswith("--")}
        assert flags <= _options([words[1]]), (name, flags - _options([words[1]]))
    assert "--missing keep" in cmds[next(n for n in cmds if n.endswith("load"))]
    # run the rendered commands in order (fewer resamples to keep the test short)
    monkeypatch.chdir(folder)
    for name, cmd in cmds.items():
        words = shlex.split(cmd)[1:]
        words = [("200" if prev in ("--n-resamples",) else w)
                 for prev, w in zip([""] + words[:-1], words)]
        # as `dvc repro` runs it: DVC names the running stage, whose outputs `multistat
        # report` may then write (it refuses other tracked outputs)
        monkeypatch.setenv("DVC_STAGE", name)
        assert main(words) in (None, 0), name
    seg = read_parquet(folder / "reports" / "metrics_segment.parquet")
    assert set(seg["dataset"]) == {"abs", "ext"} and (seg["statistic"] == "acc23").all()
    system = read_parquet(folder / "reports" / "metrics_system.parquet")
    assert len(system) == 28 and system["cluster"].min() == 1
    html = (folder / "reports" / "report.html").read_text()
    assert "Metric meta-evaluation" in html
