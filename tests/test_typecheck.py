"""mypy on the package, as part of the test command: the configuration in pyproject.toml
([tool.mypy]: a baseline for the whole package, mypy's strict flags for the run request
and the parameter checks, checked bodies and strict equality for the test registry)
reports no error."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STRICT = ("disallow_untyped_defs", "disallow_untyped_calls", "disallow_any_generics",
          "warn_return_any", "check_untyped_defs", "strict_equality", "no_implicit_reexport")


def test_the_configuration_is_strict_where_it_says():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["files"] == ["multistat"] and config["ignore_missing_imports"] is True
    overrides = {tuple(o["module"]): o for o in config["overrides"]}
    strict = overrides[("multistat.request", "multistat._validation")]
    assert all(strict[flag] is True for flag in STRICT)
    registry = overrides[("multistat.significance", "multistat.significance.*")]
    assert registry["check_untyped_defs"] is True and registry["strict_equality"] is True


@pytest.mark.slow
def test_mypy_finds_no_error(tmp_path):
    """About 30 s of CPU from a cold cache (the cache goes to a temporary folder)."""
    pytest.importorskip("mypy", reason="mypy is not installed (it is in the dev extra)")
    out = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                          "--no-error-summary", "--hide-error-context"],
                         cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert out.returncode == 0 and not errors, "\n".join(errors[:50]) + out.stderr[-2000:]
