"""The documentation: the Sphinx site builds with warnings as errors and has a page for
every public name and every command; the public callables' numpydoc docstrings
(docs/numpydoc_check.py) document their parameters and what they return."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

import multistat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))

import numpydoc_check


def test_public_callables_document_parameters_and_returns():
    pytest.importorskip("numpydoc")
    items = numpydoc_check.public_callables()
    assert set(items) >= {"compare", "rank", "load", "RunRequest"}
    failing = {name: numpydoc_check.failures(obj) for name, obj in items.items()}
    assert not {name: errs for name, errs in failing.items() if errs}


def test_numpydoc_check_catches_a_description_on_the_type_line():
    pytest.importorskip("numpydoc")

    def bad(study, alpha=0.05):
        """Summary.

        Parameters
        ----------
        study : a study read by multistat.load
        alpha : float
            Level.

        Returns
        -------
        float
            The value.
        """

    bad.__module__, bad.__qualname__ = __name__, "bad"
    globals()["bad"] = bad
    assert [code for code, _ in numpydoc_check.failures(bad)] == ["PR07"]


@pytest.mark.slow
def test_sphinx_site_builds_with_warnings_as_errors(tmp_path):
    """`make docs`' command: every name of multistat.__all__ has an API page and every
    command a section of the CLI reference."""
    pytest.importorskip("sphinx")
    pytest.importorskip("pydata_sphinx_theme")
    pytest.importorskip("myst_parser")
    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b",
                           "html", str(ROOT / "docs"), str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in multistat.__all__:
        if name != "__version__":
            assert (out / "generated" / f"multistat.{name}.html").exists(), name
    cli = (out / "cli.html").read_text(encoding="utf-8")
    from multistat.cli import app

    group = typer.main.get_command(app)
    headings = re.findall(r"<h[1-6][^>]*>(multistat [^<]+)<", cli)
    for name, cmd in group.commands.items():
        assert f"multistat {name}" in headings, name
        for sub in getattr(cmd, "commands", {}):
            assert f"multistat {name} {sub}" in headings, (name, sub)
    from multistat.significance import REGISTRY

    compare = cli.split(">multistat compare<")[1].split(">multistat load-mt<")[0]
    assert all(test in compare for test in REGISTRY)
    changelog = (out / "changelog.html").read_text(encoding="utf-8")
    assert multistat.__version__ in changelog
