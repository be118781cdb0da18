"""The HTML report in a real headless browser (Debian's ``chromium``).

CI installs chromium (``.ci/run``); without it these tests fail rather than skip, unless
``MULTISTAT_SKIP_BROWSER=1`` is set on purpose. Screenshots are kept under
``.ci-artifacts/`` in the repository (git-ignored) and their paths are printed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import multistat as ms
from multistat import cube
from multistat.errors import ConstantInputWarning
from multistat.report import write_report

ROOT = Path(__file__).resolve().parents[1]
REALSUMM = ROOT / "tests" / "data" / "realsumm" / "scores.csv.gz"
ARTIFACTS = ROOT / ".ci-artifacts"
EVIL = "<script>alert(1)</script>"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]

if os.environ.get("MULTISTAT_SKIP_BROWSER") == "1":  # pragma: no cover
    pytest.skip("MULTISTAT_SKIP_BROWSER=1", allow_module_level=True)


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: `apt-get install -y chromium` (done by "
                    ".ci/run), or set MULTISTAT_SKIP_BROWSER=1 to skip on purpose")
    return exe


def _run(args, tmp_path) -> subprocess.CompletedProcess:
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    cmd = [_chromium(), *FLAGS, f"--user-data-dir={profile}", *args]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    return out


def _console(stderr: str) -> list[str]:
    """Messages the page wrote to the JavaScript console (and page errors)."""
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


class _Tables(HTMLParser):
    """Collect every <table>: its class and the text of its body rows; and the tags."""

    def __init__(self):
        super().__init__()
        self.tables: list[tuple[str, list[list[str]]]] = []
        self.tags: list[str] = []
        self._row = None
        self._cell = None
        self._in_body = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table":
            self.tables.append((dict(attrs).get("class", ""), []))
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._row = []
        elif tag == "td" and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1][1].append(self._row)
            self._row = None
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _dom(path: Path, tmp_path) -> tuple[_Tables, list[str]]:
    out = _run(["--dump-dom", path.as_uri()], tmp_path)
    parser = _Tables()
    parser.feed(out.stdout)
    return parser, _console(out.stderr)


def _screenshot(path: Path, name: str, tmp_path, size=(1400, 9000)) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / name
    shot.unlink(missing_ok=True)
    _run([f"--window-size={size[0]},{size[1]}", f"--screenshot={shot}", path.as_uri()],
         tmp_path)
    assert shot.exists() and shot.stat().st_size > 10_000
    return shot


def test_console_check_can_fail(tmp_path):
    # control: the console check catches an error on a page that has one
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><p>x</p><script>console.error('boom');"
                    "</script></body></html>")
    _, console = _dom(page, tmp_path)
    assert any("boom" in ln for ln in console)


@pytest.fixture(scope="module")
def realsumm():
    return ms.load(REALSUMM, instance_col="doc_id", system_col=["summary_type", "system"])


def test_escaped_system_name_in_browser(realsumm, tmp_path, capsys):
    ds = cube.datasets(realsumm)["scores"].isel(system=slice(0, 4)).sel(
        metric=["litepyramid_recall"])
    names = list(ds.system.values)
    names[1] = EVIL
    study = cube.make_study({"scores": ds.assign_coords(system=names)})
    res = ms.compare(study, tests=("t",), effect_sizes=False)
    path = write_report(res, tmp_path / "evil", study=study)
    parser, console = _dom(path, tmp_path)
    assert console == []
    assert "script" not in parser.tags  # the name did not become markup
    lb = [rows for cls, rows in parser.tables if cls == "leaderboard"]
    assert len(lb) == 1 and len(lb[0]) == 4
    assert EVIL in [row[1] for row in lb[0]]  # shown as text in the System column
    shot = _screenshot(path, "report_escaped_name.png", tmp_path, size=(1400, 1600))
    with capsys.disabled():
        print(f"\nscreenshot (escaped system name): {shot}")


def test_realsumm_report_renders_readably(realsumm, tmp_path, capsys):
    metrics = ["litepyramid_recall", "rouge_1_f_score"]
    res, systems = ms.compare(realsumm, tests=("t", "wilcoxon"), metrics=metrics,
                              n_resamples=1000, effect_sizes=False, power=True,
                              return_systems=True)
    # abs/bart_out and ext/bart_out hold identical scores (see tests/test_io.py)
    with pytest.warns(ConstantInputWarning, match=r"1 pair\(s\) have constant differences"):
        analysis = ms.analyze(realsumm, metrics=metrics)
    start = time.perf_counter()
    path = write_report(res, tmp_path / "realsumm", study=realsumm, systems=systems,
                        analysis=analysis)
    elapsed = time.perf_counter() - start
    parser, console = _dom(path, tmp_path)
    assert console == []
    by_class: dict[str, list] = {}
    for cls, rows in parser.tables:
        by_class.setdefault(cls, []).append(rows)
    # one leaderboard per metric, 25 systems each, ranked 1..; 300 pairs per metric
    assert [len(t) for t in by_class["leaderboard"]] == [25, 25]
    assert [len(t) for t in by_class["pairwise"]] == [300, 300]
    assert len(by_class["overview"][0]) == 2
    assert len(by_class["analysis-summary"][0]) == 2
    first = by_class["leaderboard"][0]
    assert first[0][0] == "1"
    lb = systems[systems["metric"] == metrics[1]].sort_values("score", ascending=False)
    assert first[0][1] == lb["system"].iloc[0]
    shot = _screenshot(path, "report_realsumm.png", tmp_path)
    # the heatmaps were painted: pixels in the "row significantly better" blue
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    blue = np.all(np.abs(img - np.array([0, 114, 178])) <= 3, axis=-1).sum()
    assert blue > 20_000
    with capsys.disabled():
        print(f"\nREALSumm report: 25 systems x 2 metrics written in {elapsed:.1f} s; "
              f"screenshot: {shot}")
