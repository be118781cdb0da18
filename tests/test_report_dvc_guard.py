"""`multistat report` never overwrites a DVC pipeline's tracked outputs unless --force.

A real DVC project (``dvc init --no-scm``) whose ``dvc.yaml`` has a report stage writing
``reports/``; the command line is run as a user runs it (exit status 2, one line) and
through a real ``dvc repro`` (the stage writing its own outputs is allowed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import multistat
from multistat import cube
from multistat.cli._dvc import check_not_tracked, stage_outputs
from multistat.errors import ParameterError

ROOT = Path(__file__).resolve().parents[1]
DVC_YAML = """stages:
  report:
    cmd: multistat report results.parquet --out reports --histograms none
    deps:
      - results.parquet
    outs:
      - reports/report.html:
          cache: false
      - reports/figures:
          cache: false
      - reports/tables:
          cache: false
  power:
    foreach: [1, 2]
    do:
      cmd: echo ${item}
      outs:
        - curves/delta_${item}.parquet
"""


def _env():
    env = dict(os.environ, DVC_NO_ANALYTICS="1", MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get(
                   "PYTHONPATH")) if p))
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("DVC_STAGE", None)
    return env


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("dvcproj")
    subprocess.run([str(Path(sys.executable).parent / "dvc"), "init", "--no-scm", "-q"],
                   cwd=root, env=_env(), check=True)
    (root / "dvc.yaml").write_text(DVC_YAML)
    rng = np.random.default_rng(0)
    ds = cube.make_dataset("d", rng.normal(size=(3, 1, 30)) + np.arange(3)[:, None, None],
                           systems=["a", "b", "c"], metrics=["m"], instances=range(30))
    table = multistat.compare(cube.make_study([ds]), tests=("t",), effect_sizes=False)
    multistat.write_parquet(table, root / "results.parquet",
                            metadata=table.attrs["multistat"])
    return root


def run(args, cwd, **env):
    return subprocess.run([sys.executable, "-m", "multistat.cli", *args], cwd=cwd,
                          env={**_env(), **env}, capture_output=True, text=True,
                          check=False)


def test_report_refuses_a_tracked_output_folder(project):
    proc = run(["report", "results.parquet", "--out", "reports", "--histograms", "none"],
               project)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(
        "multistat: error: `--out` 'reports' would overwrite 'reports/report.html', an "
        "output of DVC stage 'report' in 'dvc.yaml': the pipeline owns it")
    assert "pass --force" in proc.stderr
    assert not (project / "reports").exists()  # refused before any work
    # a folder the pipeline does not own is fine; so is --force
    assert run(["report", "results.parquet", "--out", "scratch/report", "--histograms",
                "none"], project).returncode == 0
    proc = run(["report", "results.parquet", "--out", "reports", "--histograms", "none",
                "--force"], project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "reports" / "report.html").is_file()
    shutil.rmtree(project / "reports")


def test_the_owning_stage_runs_under_dvc_repro(project):
    proc = subprocess.run([str(Path(sys.executable).parent / "dvc"), "repro", "report"],
                          cwd=project, env=_env(), capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / "reports" / "report.html").is_file()
    assert "reports/report.html" in (project / "dvc.lock").read_text()
    # the same folder from outside the stage (also named in dvc.lock now) stays refused
    proc = run(["report", "results.parquet", "--out", "reports"], project)
    assert proc.returncode == 2 and "an output of DVC stage 'report'" in proc.stderr


def test_check_not_tracked_paths(project, monkeypatch, tmp_path):
    monkeypatch.chdir(project)
    monkeypatch.delenv("DVC_STAGE", raising=False)
    # templated foreach outputs match any item; a folder holding an output clashes too
    stages = {(s, os.path.relpath(p, project)) for s, p, _ in stage_outputs(project)}
    assert ("power", os.path.join("curves", "delta_*.parquet")) in stages
    with pytest.raises(ParameterError, match=r"would overwrite 'curves/delta_7\.parquet', "
                                             r"an output of DVC stage 'power'"):
        check_not_tracked("curves", ["delta_7.parquet"])
    with pytest.raises(ParameterError, match="would overwrite 'reports', an output of DVC "
                                             "stage 'report'"):
        check_not_tracked(".", ["reports"])  # writing the folder that holds the outputs
    with pytest.raises(ParameterError, match=r"'reports/figures/x\.png'"):
        check_not_tracked("reports/figures", ["x.png"])  # inside a tracked folder
    check_not_tracked("reports", ["other.html"])  # not an output
    check_not_tracked("reports", ["report.html"], force=True)
    monkeypatch.setenv("DVC_STAGE", "report")  # dvc repro running the owner
    check_not_tracked("reports", ["report.html"])
    monkeypatch.setenv("DVC_STAGE", "power@1")  # another stage may not
    with pytest.raises(ParameterError, match="DVC stage 'report'"):
        check_not_tracked("reports", ["report.html"])
    # no enclosing DVC project: nothing to protect
    (tmp_path / "dvc.yaml").write_text(DVC_YAML)
    check_not_tracked(tmp_path / "reports", ["report.html"])
