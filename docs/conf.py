"""Sphinx configuration of the multistat documentation (``make docs``).

The API reference lists every name of ``multistat.__all__`` (``api.rst`` is written
here from the package, so it cannot drift); the command-line reference is generated from
the command definitions (``_ext/typer_cli.py``); the changelog is CHANGELOG.md itself.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package of this checkout
sys.path.insert(0, str(HERE / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import multistat

project = "multistat"
author = "the multistat developers"
copyright = "2026, the multistat developers"
release = version = multistat.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "typer_cli",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "numpydoc_check.py"]
templates_path = ["_templates"]

autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
myst_heading_anchors = 3
smartquotes = False  # option names keep their two hyphens (--system-col)
suppress_warnings = ["myst.header"]

html_theme = "pydata_sphinx_theme"
html_title = f"multistat {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []


def write_api_page() -> None:
    """``api.rst``: an autosummary entry (one generated page each) for every public name
    of ``multistat.__all__`` but ``__version__``, functions and classes first."""
    import inspect

    names = [n for n in multistat.__all__ if n != "__version__"]
    modules = [n for n in names if inspect.ismodule(getattr(multistat, n))]
    objects = [n for n in names if n not in modules]
    lines = [
        "API reference",
        "=============",
        "",
        "Every public name of ``multistat`` (``multistat.__all__``); each links to its page.",
        "",
        ".. currentmodule:: multistat",
        "",
        "Functions and classes",
        "---------------------",
        "",
        ".. autosummary::",
        "   :toctree: generated",
        "",
        *[f"   {n}" for n in sorted(objects, key=str.lower)],
        "",
        "Modules",
        "-------",
        "",
        ".. autosummary::",
        "   :toctree: generated",
        "",
        *[f"   {n}" for n in sorted(modules)],
        "",
    ]
    text = "\n".join(lines)
    path = HERE / "api.rst"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


write_api_page()  # before Sphinx looks for the source files
