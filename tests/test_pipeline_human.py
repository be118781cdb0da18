"""The pipelines/human-eval template (issue 25): real DVC renders it, every flag exists,
and `dvc repro` runs it end to end on the shipped TED MQM ratings, writing a report with
the human-evaluation section."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd

from multistat import cube
from tests.conftest import run_checked

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "pipelines" / "human-eval"
BIN = Path(sys.executable).parent


def _run(args, cwd):
    return run_checked(args, cwd, timeout=600)


def test_shipped_scores_are_the_slice_rebuilt(tmp_path):
    # make_scores.py rebuilds the shipped file from tests/data/mqm-ted-ende exactly: run
    # it on a copy laid out as in the repository (pipelines/human-eval beside tests/)
    shutil.copytree(TEMPLATE, tmp_path / "pipelines" / "human-eval")
    shutil.copytree(ROOT / "tests" / "data" / "mqm-ted-ende",
                    tmp_path / "tests" / "data" / "mqm-ted-ende")
    (tmp_path / "pipelines" / "human-eval" / "ted_mqm.csv.gz").unlink()
    _run([sys.executable, "make_scores.py"], tmp_path / "pipelines" / "human-eval")
    rebuilt = pd.read_csv(tmp_path / "pipelines" / "human-eval" / "ted_mqm.csv.gz")
    frame = pd.read_csv(TEMPLATE / "ted_mqm.csv.gz")
    pd.testing.assert_frame_equal(rebuilt, frame)
    assert list(frame.columns) == ["system", "segment", "rater", "mqm"]
    assert frame.groupby(["system", "segment"]).size().eq(1).all()
    assert frame["system"].nunique() == 4 and frame["segment"].nunique() == 529
    assert (frame["mqm"] <= 0).all()


def test_pipeline_runs_end_to_end(tmp_path):
    project = tmp_path / "repo"
    shutil.copytree(TEMPLATE, project / "pipelines" / "human-eval")
    _run(["git", "init", "-q"], project)
    _run([str(BIN / "dvc"), "init", "-q"], project)
    _run([str(BIN / "dvc"), "config", "core.analytics", "false"], project)
    _run([str(BIN / "dvc"), "config", "parsing.list", "append"], project)
    where = project / "pipelines" / "human-eval"
    _run([str(BIN / "dvc"), "repro", "-q"], where)
    study = cube.open_study(where / "reports" / "study.nc")
    ds = cube.datasets(study)["ted"]
    assert ds[cube.RATING].sizes["rater"] == 4
    results = pd.read_parquet(where / "reports" / "results.parquet")
    assert set(results["test"]) == {"mixed", "t"} and len(results) == 12
    page = (where / "reports" / "report.html").read_text()
    assert 'id="human"' in page and "variance components" in page
    assert (where / "reports" / "figures" / "human_power_ted__mqm.png").stat().st_size > 0
    status = _run([str(BIN / "dvc"), "status"], where)
    # up to date but for the stage that reads the installed version on every run
    assert status.stdout.split() == ["multistat_version:", "always", "changed"], status.stdout
