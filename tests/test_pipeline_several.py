"""The pipelines/several-test-sets template: real DVC renders it, every flag exists, and
its load stage reads the example input (runs and documents)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np

from multistat import cube
from multistat.cli import main
from tests.conftest import run_checked

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "pipelines" / "several-test-sets"
BIN = Path(sys.executable).parent


def _run(args, cwd):
    return run_checked(args, cwd, timeout=300)


def _options(words):
    import typer

    from multistat import cli

    cmd = typer.main.get_command(cli.app)
    while words and hasattr(cmd, "commands") and words[0] in cmd.commands:
        cmd = cmd.commands[words.pop(0)]
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)}


def test_template_renders_to_valid_commands(tmp_path):
    project = tmp_path / "repo"
    shutil.copytree(TEMPLATE, project / "pipelines" / "several-test-sets")
    _run(["git", "init", "-q"], project)
    _run([str(BIN / "dvc"), "init", "-q"], project)
    code = ("from dvc.repo import Repo\n"
            "for s in Repo('.').index.stages: print(s.addressing, '\\t', s.cmd)")
    out = _run([sys.executable, "-c", code], project / "pipelines" / "several-test-sets")
    cmds = dict(line.split(" \t ", 1) for line in out.stdout.strip().splitlines())
    # the multistat_version stage (tests/test_report_templates.py checks it)
    cmds = {n: c for n, c in cmds.items() if not n.endswith("multistat_version")}
    assert {n.split(":")[-1] for n in cmds} == {"load", "compare", "friedman",
                                                 "replicability", "meta", "report"}
    for name, cmd in cmds.items():
        assert "${" not in cmd, name
        words = cmd.split()
        assert words[0] == "multistat"
        flags = {w for w in words if w.startswith("--")}
        assert flags <= _options([words[1]]), (name, flags - _options([words[1]]))
    assert "--run-col seed" in cmds["load"] and "--group-col doc" in cmds["load"]
    assert "--cluster group" in cmds["compare"] and ",aso" in cmds["compare"]
    meta = next(c for n, c in cmds.items() if n.endswith("meta"))
    assert "--tests t,bootstrap" in meta and "--out reports/meta.parquet" in meta
    assert "--meta reports/meta.parquet" in next(c for n, c in cmds.items()
                                                 if n.endswith("report"))


def test_example_input_has_runs_and_documents(tmp_path, capsys):
    out = tmp_path / "study.nc"
    status = main(["load", str(TEMPLATE / "scores.csv.gz"), "--dataset-col", "dataset",
                   "--run-col", "seed", "--group-col", "doc", "-o", str(out)])
    assert status in (None, 0)
    ds = cube.datasets(cube.open_study(out))["ted"]
    assert ds.sizes["run"] == 3 and ds.sizes["instance"] == 90
    assert len(np.unique(ds.group.values)) == 9
    # the tests use run-averaged scores
    np.testing.assert_allclose(ds.score.values, ds.run_score.values.mean(-1))
