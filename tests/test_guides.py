"""Every guide of the documentation runs, as the README does (tests/test_readme.py's
rules): its code blocks execute in order in a scratch directory holding copies of the
repository's ``data/`` (the demo study) and ``tests/data/``, and ``#>`` lines and console
outputs must match. Each guide has a namespace of its own."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.test_readme import RUN, _run_python, _run_shell, _shell_env, parse_blocks

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted((ROOT / "docs" / "guides").glob("*.md"))


@pytest.mark.parametrize("guide", GUIDES, ids=[g.stem for g in GUIDES])
def test_guide_runs(guide, tmp_path):
    shutil.copytree(ROOT / "data", tmp_path / "data")
    shutil.copytree(ROOT / "tests" / "data", tmp_path / "tests" / "data")
    shutil.copytree(ROOT / "pipelines", tmp_path / "pipelines")  # the templates' data
    blocks = [b for b in parse_blocks(guide.read_text(encoding="utf-8"))
              if b[1] in RUN and b[3] is None]
    assert blocks, f"{guide.name} has no runnable example"
    namespace = {"__name__": "__guide__"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for line, lang, code, _ in blocks:
            where = f"{guide.relative_to(ROOT)} block at line {line} ({lang})"
            if lang == "python":
                _run_python(code, namespace, where)
            else:
                _run_shell(code, _shell_env(), tmp_path, where)
    finally:
        os.chdir(cwd)
