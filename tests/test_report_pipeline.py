"""The default DVC pipeline, run with real DVC in a copy of the repository's files.

The copy gets the repository's ``dvc.yaml``, ``params.yaml``, ``.dvc/config``,
``.dvcignore``, ``data/`` and ``multistat/`` (a code dependency of the stages); only the
Monte Carlo sizes (``compare.n_resamples``, ``rank.n_resamples``, ``power.n_simulations``)
and the figure resolution are lowered, and the report draws no score histograms (checked in
tests/test_report.py), to keep the test short: the report stage runs four times. Checked:
``dvc repro`` writes the reports; a second run is a no-op; changing one parameter reruns
exactly the stages that depend on it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import multistat as ms
from tests.conftest import run_checked

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


def _run(args, cwd) -> subprocess.CompletedProcess:
    # DVC's site cache of the caller's environment is not used: the project is its own
    return run_checked(args, cwd, timeout=900,
                       env={"MPLBACKEND": "Agg", "DVC_SITE_CACHE_DIR": None})


def _ran(out: subprocess.CompletedProcess) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", out.stdout))


def _set(project: Path, key: str, value) -> None:
    params = yaml.safe_load((project / "params.yaml").read_text())
    node = params
    *path, last = key.split(".")
    for k in path:
        node = node[k]
    node[last] = value
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def _init(project: Path) -> None:
    _run(["git", "init", "-q"], project)
    _run([str(BIN / "dvc"), "init", "-q"], project)
    _run([str(BIN / "dvc"), "config", "core.analytics", "false"], project)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    project = tmp_path_factory.mktemp("pipeline")
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "data", project / "data")
    # the stages depend on the code too (hashed only; the installed multistat runs)
    shutil.copytree(ROOT / "multistat", project / "multistat",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _init(project)
    shutil.copy(ROOT / ".dvc" / "config", project / ".dvc" / "config")  # parsing.list
    shutil.copy(ROOT / ".dvcignore", project / ".dvcignore")
    _set(project, "compare.n_resamples", 200)
    _set(project, "rank.n_resamples", 200)
    _set(project, "power.n_simulations", 100)
    _set(project, "report.dpi", 50)
    _set(project, "report.histograms", "none")
    first = _run([str(BIN / "dvc"), "repro"], project)
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    return project, first, stages


def test_repro_writes_the_reports(project):
    project, first, _ = project
    assert {"load", "units", "analyze", "compare", "report"} <= _ran(first)
    assert any(s.startswith("power@") for s in _ran(first))
    reports = project / "reports"
    html = (reports / "report.html").read_text(encoding="utf-8")
    assert 'class="leaderboard"' in html and "data:image/png;base64," in html
    heatmaps = sorted(p.name for p in (reports / "figures").glob("heatmap_*.png"))
    assert "heatmap_newstest__sent_bleu.png" in heatmaps and len(heatmaps) == 6
    res = ms.read_parquet(reports / "results.parquet")
    assert res.attrs["multistat"]["n_resamples"] == 200
    assert (reports / "tables" / "leaderboard_newstest__sent_bleu.tex").exists()
    assert list((reports / "power").glob("*.parquet"))


def test_second_repro_is_a_noop(project):
    project, _, _ = project
    again = _run([str(BIN / "dvc"), "repro"], project)
    assert _ran(again) == set()
    status = _run([str(BIN / "dvc"), "status"], project)
    assert "up to date" in status.stdout


def _git_commit(project: Path, message: str) -> None:
    _run(["git", "add", "-A"], project)
    _run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message],
         project)


def test_dvc_metrics_and_plots_show(project):
    """`dvc metrics show` and `dvc plots show` give useful output after the pipeline."""
    import json

    project, _, _ = project
    _git_commit(project, "baseline")
    shown = json.loads(_run([str(BIN / "dvc"), "metrics", "show", "--json"], project).stdout)
    # one revision (the workspace; DVC names it "workspace" or "" depending on the version)
    (rev,) = shown.values()
    data = rev["data"]["reports/metrics.json"]["data"]
    entry = data["results"]["newstest"]["sent_bleu"]
    lb = __import__("pandas").read_csv(project / "reports" / "tables" / "leaderboard.csv")
    top = lb[(lb.dataset == "newstest") & (lb.metric == "sent_bleu")].iloc[0]
    assert entry["leader"] == top["system"]
    assert entry["pairs"] == 45 and 0 <= entry["significant_pairs"] <= 45
    assert entry["mde"] > 0 and isinstance(entry["leader_significantly_best"], bool)
    table = _run([str(BIN / "dvc"), "metrics", "show"], project).stdout
    assert "results.newstest.sent_bleu.mde" in table
    plots = json.loads(_run([str(BIN / "dvc"), "plots", "show", "--json"], project).stdout)
    names = set(plots.get("data", plots))
    assert "reports/plots/leaderboard/newstest__sent_bleu.csv" in names, sorted(names)[:5]
    assert sum(n.startswith("reports/plots/power/newstest__sent_bleu__") for n in names) == 9
    assert any(n.startswith("reports/plots/ranking/") for n in names)
    assert not plots.get("errors")


def test_one_parameter_reruns_only_its_dependents(project):
    project, _, _ = project
    _set(project, "compare.alpha", 0.01)
    out = _run([str(BIN / "dvc"), "repro"], project)
    assert _ran(out) == {"compare", "report"}
    res = ms.read_parquet(project / "reports" / "results.parquet")
    assert set(res["alpha"]) == {0.01}


def test_changed_package_code_reruns_every_stage_that_runs_it(project):
    # every stage depends on the whole package folder: when stages named hand-picked
    # files, an edit of comparison/stepdown.py left reports/results.parquet "up to date"
    project, _, _ = project
    stepdown = project / "multistat" / "comparison" / "stepdown.py"
    stepdown.write_text(stepdown.read_text() + "\n# changed\n")
    deltas = yaml.safe_load((project / "params.yaml").read_text())["power"]["deltas"]
    assert _ran(_run([str(BIN / "dvc"), "repro"], project)) == (
        {"load", "units", "analyze", "compare", "rank", "report"}
        | {f"power@{d}" for d in deltas})


def test_power_parameter_reruns_power_and_report(project):
    project, _, _ = project
    _set(project, "power.n_simulations", 120)
    ran = _ran(_run([str(BIN / "dvc"), "repro"], project))
    deltas = yaml.safe_load((project / "params.yaml").read_text())["power"]["deltas"]
    assert ran == {"report"} | {f"power@{d}" for d in deltas}


def test_dvc_metrics_diff_and_exp_show(project):
    """After `compare.alpha` and `rank.alpha` changed: `dvc metrics diff` shows the change
    in significant pairs (the report's decisions are the ranking's: rank.alpha), `dvc
    plots diff` and `dvc exp show` work on the committed baseline."""
    import json

    project, _, _ = project
    _set(project, "rank.alpha", 0.01)
    assert _ran(_run([str(BIN / "dvc"), "repro"], project)) == {"rank", "report"}
    diff = json.loads(_run([str(BIN / "dvc"), "metrics", "diff", "--json"], project).stdout)
    changed = diff["reports/metrics.json"]
    assert changed["run.alpha"]["old"] == 0.05 and changed["run.alpha"]["new"] == 0.01
    assert any(k.endswith(".significant_pairs") for k in changed), sorted(changed)
    pd_ = json.loads(_run([str(BIN / "dvc"), "plots", "diff", "--json"], project).stdout)
    assert "reports/plots/leaderboard/newstest__sent_bleu.csv" in set(pd_.get("data", pd_))
    exp = _run([str(BIN / "dvc"), "exp", "show", "--no-pager", "--csv"], project).stdout
    header = exp.splitlines()[0]
    assert "results.newstest.sent_bleu.significant_pairs" in header
    assert "compare.alpha" in header
