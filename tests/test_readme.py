"""The README is run: every code block of README.md executes in a scratch directory.

Rules (also stated in docs/development.md; tests/test_guides.py runs every guide of
docs/guides/ by the same rules):

* The scratch directory holds copies of the repository's ``data/`` and ``tests/data/``;
  blocks run there, in the order they appear.
* ```python blocks share one namespace for the whole README (a later block may use names
  an earlier one defined). Lines ``#> text`` give the output expected from the statements
  above them (the R ``reprex`` convention): everything printed since the previous ``#>``
  group must equal these lines.
* ```console, ```bash, ```sh blocks: when a block has ``$ `` lines, each one is a shell
  command (continued by a trailing ``\\``), run with the virtual environment's ``bin``
  first on PATH; the lines after it, up to the next ``$ ``, are its expected output
  (stdout and stderr together; the exit status is not checked, so an error shown in the
  README must be printed). A block without ``$ `` lines runs as one script and must exit 0.
* In expected output, ``...`` stands for any text within a line, and a line that is only
  ``...`` for any number of lines: timings and other volatile values.
* A block preceded by ``<!-- norun: reason -->`` (blank lines may come between) is not
  run; the reason is required.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the guide that walks through the demo study's committed report
REPORTS_GUIDE = ROOT / "docs" / "guides" / "reports.md"
#: the README is a landing page; tutorials and reference live in docs/
README_MAX_LINES = 300
RUN = {"python", "console", "bash", "sh", "shell"}
NORUN = re.compile(r"^<!--\s*norun:\s*(\S.*?)\s*-->\s*$")


def parse_blocks(text: str):
    """[(line number, language, code, norun reason or None)] for every fenced block."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if j == len(lines):
            raise AssertionError(f"README.md line {start + 1}: unclosed code block")
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        reason = None
        if k >= 0 and lines[k].lstrip().startswith("<!--") and "norun" in lines[k]:
            nm = NORUN.match(lines[k].strip())
            assert nm, f"README.md line {k + 1}: malformed norun marker (needs a reason)"
            reason = nm.group(1)
        blocks.append((start + 1, lang, "\n".join(lines[start + 1:j]), reason))
        i = j + 1
    return blocks


def _line_matches(pattern: str, line: str) -> bool:
    parts = [re.escape(p) for p in pattern.split("...")]
    return re.fullmatch(".*".join(parts), line, flags=re.DOTALL) is not None


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """Line-wise match with ``...`` wildcards (a bare ``...`` line: any number of lines)."""
    expected = [e.rstrip() for e in expected]
    actual = [a.rstrip() for a in actual]
    while expected and not expected[-1]:
        expected.pop()
    while actual and not actual[-1]:
        actual.pop()

    def match(i, j):
        if i == len(expected):
            return j == len(actual)
        if expected[i].strip() == "...":
            return any(match(i + 1, k) for k in range(j, len(actual) + 1))
        return j < len(actual) and _line_matches(expected[i], actual[j]) and match(i + 1,
                                                                                 j + 1)
    return match(0, 0)


def console_steps(code: str):
    """[(command, expected output lines)] of a block with ``$`` lines, else None."""
    lines = code.splitlines()
    if not any(ln.startswith("$ ") for ln in lines):
        return None
    steps, i = [], 0
    while i < len(lines):
        ln = lines[i]
        assert ln.startswith("$ "), f"output before the first command: {ln!r}"
        cmd = [ln[2:]]
        while cmd[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            cmd.append(lines[i])
        i += 1
        out = []
        while i < len(lines) and not lines[i].startswith("$ "):
            out.append(lines[i])
            i += 1
        steps.append(("\n".join(cmd), out))
    return steps


def python_chunks(code: str):
    """Split a python block into (source, expected lines or None) chunks at ``#>`` groups."""
    chunks, src, exp = [], [], []
    for ln in code.splitlines():
        if ln.startswith("#>"):
            exp.append(ln[3:] if ln.startswith("#> ") else ln[2:])
            continue
        if exp:
            chunks.append(("\n".join(src), exp))
            src, exp = [], []
        src.append(ln)
    chunks.append(("\n".join(src), exp or None))
    return chunks


def _shell_env():
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # the repository's own package wins, also in the multistat console script
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("MPLBACKEND", "Agg")
    env["DVC_NO_ANALYTICS"] = "1"
    env["COLUMNS"] = "100"
    return env


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(ROOT / "data", root / "data")
    shutil.copytree(ROOT / "tests" / "data", root / "tests" / "data")
    return root


def test_parser_and_matcher():
    blocks = parse_blocks("x\n<!-- norun: needs your file -->\n\n```python\na = 1\n```\n"
                          "```console\n$ echo 1\n1\n```\n```\nplain\n```\n")
    assert [(b[1], b[3]) for b in blocks] == [("python", "needs your file"),
                                              ("console", None), ("", None)]
    assert output_matches(["a ... c", "...", "z"], ["a b c", "x", "y", "z"])
    assert not output_matches(["a ... c"], ["a b d"])
    assert not output_matches(["1"], ["1", "2"])
    assert console_steps("$ a \\\n  b\nout\n$ c") == [("a \\\n  b", ["out"]), ("c", [])]
    assert python_chunks("x = 1\nprint(x)\n#> 1\ny = 2") == [("x = 1\nprint(x)", ["1"]),
                                                             ("y = 2", None)]
    with pytest.raises(AssertionError, match="needs a reason"):
        parse_blocks("<!-- norun -->\n```python\n```\n")


def test_readme_runs(scratch):
    """Every runnable block of README.md, in order."""
    blocks = parse_blocks(README.read_text(encoding="utf-8"))
    runnable = [b for b in blocks if b[1] in RUN and b[3] is None]
    langs = {b[1] for b in runnable}
    assert "python" in langs and "console" in langs, "the README lost its examples"
    namespace = {"__name__": "__readme__"}
    env = _shell_env()
    timings = []
    cwd = os.getcwd()
    os.chdir(scratch)
    try:
        for line, lang, code, _ in runnable:
            t0 = time.perf_counter()
            where = f"README.md block at line {line} ({lang})"
            if lang == "python":
                _run_python(code, namespace, where)
            else:
                _run_shell(code, env, scratch, where)
            timings.append((time.perf_counter() - t0, line))
    finally:
        os.chdir(cwd)
    slow = sorted(timings, reverse=True)[:5]
    print("README blocks, slowest:", ", ".join(f"line {ln}: {t:.1f} s" for t, ln in slow))


def _run_python(code, namespace, where):
    for src, expected in python_chunks(code):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                exec(compile(src, where, "exec"), namespace)  # noqa: S102 - the README's code
            except Exception as exc:  # pragma: no cover - reported with the block
                raise AssertionError(f"{where}: {type(exc).__name__}: {exc}") from exc
        if expected is not None:
            got = buf.getvalue().splitlines()
            assert output_matches(expected, got), (
                f"{where}: printed\n" + "\n".join(got) + "\nbut the README shows\n"
                + "\n".join(expected))


def _run_shell(code, env, cwd, where):
    steps = console_steps(code)
    if steps is None:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 0, f"{where}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
        return
    for cmd, expected in steps:
        proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=cwd, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=300, check=False)
        got = proc.stdout.splitlines()
        if expected:
            assert output_matches(expected, got), (
                f"{where}: `{cmd}` printed\n{proc.stdout}\nbut the README shows\n"
                + "\n".join(expected))
        else:
            assert proc.returncode == 0, f"{where}: `{cmd}` exit {proc.returncode}\n" \
                                         f"{proc.stdout[-3000:]}"


def _md_table_after(text: str, marker: str) -> list[str]:
    start = text.index(marker)
    lines = text[start:].splitlines()
    i = next(k for k, ln in enumerate(lines) if ln.startswith("| "))
    out = []
    while i < len(lines) and lines[i].startswith("|"):
        out.append(lines[i])
        i += 1
    return out


def test_readme_is_a_landing_page_whose_links_resolve():
    """At most 300 lines; every relative link and picture points at a committed file."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and t[0] != "#"]
    assert any(t.endswith(".png") for t in local), "the README lost its picture"
    assert "docs/statistics.md" in local and "docs/guides/getting-started.md" in local
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing


def test_reports_guide_numbers_are_the_committed_report():
    """The demo's numbers the reports guide (docs/guides/reports.md) quotes are those
    `make report` wrote on this commit (reports/tables and reports/metrics.json are
    committed with the pipeline's lock)."""
    import json

    text = REPORTS_GUIDE.read_text(encoding="utf-8")
    tables = ROOT / "reports" / "tables"
    board = (tables / "leaderboard_newstest__sent_bleu.md").read_text(encoding="utf-8")
    assert _md_table_after(text, "**Leaderboard.**") == board.strip().splitlines()
    pairwise = (tables / "pairwise_newstest__sent_bleu.md").read_text(encoding="utf-8")
    row = next(ln for ln in pairwise.splitlines() if ln.startswith("| sys-i | sys-j |"))
    p_adj = float(row.split("|")[7])
    m = re.search(r"not\s+separated\s+by\s+600\s+sentences\s+\(Holm-adjusted\s+p\s+=\s+"
                  r"([0-9.]+)\)", text)
    assert m and float(m.group(1)) == round(p_adj, 2)
    metrics = json.loads((ROOT / "reports" / "metrics.json").read_text(encoding="utf-8"))
    mde = metrics["results"]["newstest"]["sent_bleu"]["mde"]
    m = re.search(r"differences\s+smaller\s+than\s+([0-9.]+)\s+BLEU\s+points\s+are\s+not\s+"
                  r"detectable", text)
    assert m and m.group(1) == f"{mde:.3g}"
