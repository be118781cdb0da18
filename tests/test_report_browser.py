"""The HTML report in a real headless browser (Debian's ``chromium``).

CI installs chromium (``.ci/run``); without it these tests fail rather than skip, unless
``MULTISTAT_SKIP_BROWSER=1`` is set on purpose. Screenshots are kept under
``.ci-artifacts/`` in the repository (git-ignored) and their paths are printed.
"""

from __future__ import annotations

import os
import re
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
from tests.conftest import full_report

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

    def by_class(self) -> dict[str, list]:
        """{class: [body rows of each table of that class]}"""
        out: dict[str, list] = {}
        for cls, rows in self.tables:
            out.setdefault(cls, []).append(rows)
        return out


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
    path = full_report(res, tmp_path / "evil", study=study)
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
    path = full_report(res, tmp_path / "realsumm", study=realsumm,
                       sections={"systems": systems, "analysis": analysis})
    elapsed = time.perf_counter() - start
    parser, console = _dom(path, tmp_path)
    assert console == []
    by_class = parser.by_class()
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


def _links(path: Path, tmp_path) -> list[str]:
    """The href of every <a> in the rendered DOM."""
    class Links(HTMLParser):
        def __init__(self):
            super().__init__()
            self.hrefs: list[str] = []

        def handle_starttag(self, tag, attrs):
            if tag == "a" and dict(attrs).get("href"):
                self.hrefs.append(dict(attrs)["href"])

    out = _run(["--dump-dom", path.as_uri()], tmp_path)
    links = Links()
    links.feed(out.stdout)
    return links.hrefs


def test_report_at_100_systems_in_browser(tmp_path, capsys):
    # issue 23 item 3: a shared task's size; 10 planted tiers of 10 systems
    from _tiers import tiered_study

    from multistat.report import plots

    k = 100
    study = tiered_study(k)
    start = time.perf_counter()
    res = ms.compare(study, tests=("t",), effect_sizes=False)
    board = ms.rank(study, test="t", n_resamples=1000)
    t_stats = time.perf_counter() - start
    start = time.perf_counter()
    path = full_report(res, tmp_path / "r100", study=study, sections={"ranking": board})
    t_report = time.perf_counter() - start
    parser, console = _dom(path, tmp_path)
    assert console == []
    by_class = parser.by_class()
    assert [len(t) for t in by_class["leaderboard"]] == [k]
    assert [len(t) for t in by_class["ranking"]] == [k]
    # every adjacent pair in the table, at most MAX_POWER_PANELS of them drawn
    adjacent = by_class["adjacent"][0]
    assert len(adjacent) == k - 1
    drawn = [row for row in adjacent if row[-1] == "drawn"]
    assert [row[0] for row in drawn] == [f"{i} → {i + 1}"
                                         for i in range(1, plots.MAX_POWER_PANELS + 1)]
    # the page's heatmap links its full-size image, which exists and has every system
    full = [h for h in _links(path, tmp_path) if h.startswith("figures/heatmap-full_")]
    assert len(set(full)) == 1
    from PIL import Image

    with Image.open(path.parent / full[0]) as im:
        w, h = im.size
    html_text = path.read_text()
    assert f"Full-size image ({w:,} × {h:,} px)." in html_text
    assert w >= k * 0.42 * 110  # 0.42 in per cell at 110 dpi
    with Image.open(path.parent / "figures" / Path(full[0]).name.replace(
            "heatmap-full_", "heatmap_")) as im:
        assert im.size[0] <= plots.PAGE_WIDTH * 110 + 1  # the page's fits the page
    # screenshots of the heatmap and of the cluster table with its rank intervals: the
    # report in a frame scrolled to the section (headless chromium paints nothing when the
    # page itself is opened at a #fragment)
    slug = re.findall(r'id="heatmap-([^"]+)"', html_text)[0]
    shots = {}
    for name, anchor, tall in (("heatmap", f"heatmap-{slug}", 1700),
                               ("ranking", "ranking", 5200)):
        frame = tmp_path / f"frame_{name}.html"
        frame.write_text('<!DOCTYPE html><html><body style="margin:0"><iframe '
                         f'style="border:0;width:1400px;height:{tall}px" '
                         f'src="{path.as_uri()}#{anchor}"></iframe></body></html>')
        shots[name] = tmp_path / f"report_100_systems_{name}.png"
        _run([f"--window-size=1400,{tall}", f"--screenshot={shots[name]}", frame.as_uri()],
             tmp_path)
    shot = shots["heatmap"]
    assert shot.exists() and shot.stat().st_size > 10_000
    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    blue = np.all(np.abs(img - np.array([0, 114, 178])) <= 3, axis=-1).sum()
    orange = np.all(np.abs(img - np.array([230, 159, 0])) <= 3, axis=-1).sum()
    assert blue > 100_000 and orange > 100_000  # the heatmap is painted, not shrunk away
    ARTIFACTS.mkdir(exist_ok=True)
    for shot in shots.values():
        shutil.copyfile(shot, ARTIFACTS / shot.name)
    with capsys.disabled():
        print(f"\n100-system report: compare + rank {t_stats:.1f} s, report "
              f"{t_report:.1f} s; screenshots: {shots['heatmap']}, {shots['ranking']} "
              f"(copies in {ARTIFACTS})")


def _synthetic_ranking(S: int, clusters: int = 10):
    """A ranking table of ``S`` systems in ``clusters`` equal clusters, built directly (the
    page needs only the ranking's columns; ``multistat rank`` at this size is the
    benchmark's job, benchmarks/bench_rank_scale.py)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    size = S // clusters
    cl = np.arange(S) // size + 1
    score = np.sort(0.8 - 0.05 * cl + 0.01 * rng.random(S))[::-1]
    rank = np.arange(1, S + 1, dtype=float)
    board = pd.DataFrame({
        "dataset": "wmt24", "metric": "chrF", "system": [f"team{i % 97}.run-{i:04d}"
                                                         for i in range(S)],
        "score": score, "ci_low": score - 0.004, "ci_high": score + 0.004, "rank": rank,
        "rank_ci_low": np.maximum(1, rank - 40), "rank_ci_high": np.minimum(S, rank + 40),
        "expected_rank": rank, "p_best": np.where(rank == 1, 0.6, 0.4 / (S - 1)),
        "rank_range_low": (cl - 1) * size + 1, "rank_range_high": cl * size,
        "cluster": cl, "beats": S - cl * size, "beaten_by": (cl - 1) * size})
    board.attrs["multistat"] = {"kind": "ranking", "test": "bootstrap",
                                "correction": "westfall-young", "n_resamples": 10_000,
                                "seed": 0, "confidence_level": 0.95}
    return board


@pytest.mark.slow
def test_leaderboard_page_at_5000_systems(tmp_path, capsys):
    """``multistat report --ranking R`` alone: one page, every system in a sortable,
    searchable table (search from the address), under 60 MiB, no console errors."""
    from multistat.cli import main
    from multistat.io import write_parquet

    board = _synthetic_ranking(5000)
    src = tmp_path / "ranking.parquet"
    write_parquet(board, src, metadata=board.attrs["multistat"])
    assert main(["report", "--ranking", str(src), "--out", str(tmp_path / "lb")]) in (0,
                                                                                      None)
    page = tmp_path / "lb" / "report.html"
    size = page.stat().st_size
    print(f"leaderboard page at 5,000 systems: {size / 2**20:.2f} MiB")
    assert size < 60 * 2**20
    text = page.read_text(encoding="utf-8")
    assert "http://" not in text and "https://" not in text  # self-contained
    # without JavaScript: every system is in the static table, best first
    static = _Tables()
    static.feed(text)
    rows = static.by_class()["board"][0]
    assert len(rows) == 5000 and rows[0][4] == "team0.run-0000"
    assert rows[-1][4] == "team52.run-4999" and rows[-1][3] == "10"
    # in the browser: the search from the address leaves one row visible
    out = _run(["--dump-dom", page.as_uri() + "#search=run-4321"], tmp_path)
    assert _console(out.stderr) == []
    shown = re.findall(r"<tr>(?:(?!</tr>).)*run-\d{4}(?:(?!</tr>).)*</tr>", out.stdout)
    hidden = re.findall(r"<tr hidden=\"\">", out.stdout)
    assert len(shown) == 1 and "team53.run-4321" in shown[0] and len(hidden) == 4999
    assert "1 of 5000 systems" in out.stdout
    assert "10,000 resamples, seed 0" in text
    top = _screenshot(page, "leaderboard_5000.png", tmp_path, size=(1400, 1100))
    found = ARTIFACTS / "leaderboard_5000_search.png"
    found.unlink(missing_ok=True)
    _run(["--window-size=1400,1100", f"--screenshot={found}",
          page.as_uri() + "#search=run-4321"], tmp_path)
    assert found.exists() and found.stat().st_size > 10_000
    print(f"screenshots: {top}, {found}")
