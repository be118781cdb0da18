"""The release: one version, the licence and py.typed in the wheel and the sdist, public
names a type checker sees, optional extras that fail with one line, and the wheel working
without extras in a fresh virtual environment (the slow test builds it with
``python -m build`` and checks it with ``twine check --strict``)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

import multistat
from multistat._lazy import EXTRAS, require_extra
from multistat.errors import MissingExtraError, MultistatError

ROOT = Path(__file__).resolve().parent.parent
MISSING_REPORT = ("multistat: error: figures, tables and the HTML report: the 'report' extra "
                  "is not installed (matplotlib is missing); pip install 'multistat[report]'")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_one_version_number():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "multistat.__version__"}
    assert multistat.__version__ == "0.2.0"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## {multistat.__version__}" in changelog


def test_licence_and_metadata():
    project = PYPROJECT["project"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert "Copyright (c) 2026 the multistat developers" in (ROOT / "LICENSE").read_text()
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert project["authors"] and project["classifiers"]
    assert (ROOT / "multistat" / "py.typed").exists()
    assert PYPROJECT["tool"]["setuptools"]["package-data"]["multistat"] == ["py.typed"]
    # the report's templates are package data: every one matches the declared pattern
    templates = sorted((ROOT / "multistat" / "report" / "templates").glob("*"))
    assert templates and PYPROJECT["tool"]["setuptools"]["package-data"][
        "multistat.report"] == ["templates/*.j2"]
    assert all(p.suffix == ".j2" for p in templates)


def _imported_top_modules() -> set[str]:
    found = set()
    for path in (ROOT / "multistat").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    return found


def _declared(names) -> set[str]:
    out = set()
    for req in names:
        name = req.split(";")[0].split("[")[0]
        for sep in "<>=!~ ":
            name = name.split(sep)[0]
        out.add(name.strip().lower())
    return out


def test_every_imported_library_is_declared():
    """Every third-party module the package imports is a core dependency or belongs to
    an extra that guards it (click: typer's own is used, click itself is not imported)."""
    core = _declared(PYPROJECT["project"]["dependencies"])
    extras = PYPROJECT["project"]["optional-dependencies"]
    distribution = {"yaml": "pyyaml", "PIL": "pillow"}
    stdlib = set(sys.stdlib_module_names)
    for module in sorted(_imported_top_modules() - stdlib - {"multistat", "typer"}):
        name = distribution.get(module, module).lower()
        guarded = [e for e, (mods, _) in EXTRAS.items() if module in mods]
        assert name in core or (guarded and name in _declared(extras[guarded[0]])), module
    assert "click" not in _imported_top_modules()
    assert "typer" in core
    assert {"report", "distributed", "mt", "fast", "pipeline", "all", "dev", "bench",
            "docs"} <= set(extras)
    assert not {"matplotlib", "seaborn", "pillow", "numba", "distributed", "sacrebleu",
                "dvc"} & core


def test_type_checkers_see_every_public_name():
    """The `if TYPE_CHECKING:` block of multistat/__init__.py imports exactly the lazy
    public names, from where `__getattr__` loads them."""
    tree = ast.parse((ROOT / "multistat" / "__init__.py").read_text(encoding="utf-8"))
    seen = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                for alias in stmt.names:
                    name = alias.asname or alias.name
                    attr = None if stmt.module == "multistat" else alias.name
                    module = (f"multistat.{alias.name}" if attr is None else stmt.module)
                    seen[name] = (module, attr)
    assert seen == multistat._LAZY


def test_import_multistat_is_light():
    code = ("import sys, multistat; heavy = [m for m in ('numpy', 'typing', 'pandas') "
            "if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.stdout.strip() == "[]"


def test_a_missing_extra_is_one_line_naming_it(monkeypatch):
    import multistat._lazy as lazy

    monkeypatch.setattr(lazy, "find_spec", lambda name: None if name == "seaborn" else 1)
    with pytest.raises(MissingExtraError, match=r"^figures, tables and the HTML report: "
                       r"the 'report' extra is not installed \(seaborn is missing\); "
                       r"pip install 'multistat\[report\]'$"):
        require_extra("report")
    assert issubclass(MissingExtraError, ImportError)
    assert issubclass(MissingExtraError, MultistatError)


def test_the_command_line_names_a_missing_extra(monkeypatch, capsys, tmp_path):
    """`multistat report` without matplotlib: exit 2, one line naming the extra."""
    import multistat._lazy as lazy
    from multistat.cli import main

    for name in [m for m in sys.modules if m == "multistat.report" or
                 m.startswith("multistat.report.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(lazy, "find_spec", lambda name: None if name == "matplotlib" else 1)
    table = tmp_path / "results.csv"
    table.write_text("dataset,metric\n")
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(table), "--out", str(tmp_path / "rep")])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert err.strip().splitlines() == [MISSING_REPORT]


# ----------------------------------------------------------------------------- the wheel
def _run(args, **kw):
    proc = subprocess.run(args, capture_output=True, text=True, check=False, **kw)
    assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc


API_CHECK = """
import sys
import multistat
from multistat import cube
import numpy as np
rng = np.random.default_rng(0)
study = multistat.load(sys.argv[1])
table = multistat.compare(study, tests=("t", "wilcoxon", "bootstrap"), n_resamples=999)
board = multistat.rank(study, n_resamples=999)
power = multistat.power.power_paired_t(effect_size=0.3, n=100)
assert "numba" not in sys.modules and "matplotlib" not in sys.modules
print(len(table), len(board), round(float(power), 4))
"""


@pytest.mark.slow
def test_wheel_builds_checks_and_works_without_extras(tmp_path):
    """python -m build, twine check --strict, LICENSE and py.typed in wheel and sdist;
    the wheel installed with its real core dependencies (no extras) into a fresh venv
    runs the command line (--version, compare, rank; report names its extra) and the
    API, the Wilcoxon test through the numpy kernels (numba is not installed)."""
    pytest.importorskip("build")
    pytest.importorskip("twine")
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)])
    wheels = list(dist.glob("*.whl"))
    sdists = list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    assert wheels[0].name == f"multistat-{multistat.__version__}-py3-none-any.whl"
    _run([sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)])
    with zipfile.ZipFile(wheels[0]) as zf:
        names = zf.namelist()
        meta = zf.read(f"multistat-{multistat.__version__}.dist-info/METADATA").decode()
    assert "multistat/py.typed" in names
    assert {"multistat/report/templates/page.html.j2",
            "multistat/report/templates/section.html.j2"} <= set(names)
    assert f"multistat-{multistat.__version__}.dist-info/licenses/LICENSE" in names
    assert "License-Expression: MIT" in meta and "Provides-Extra: report" in meta
    assert "Requires-Dist: numba" in meta and 'extra == "fast"' in meta
    with tarfile.open(sdists[0]) as tf:
        members = {m.split("/", 1)[1] for m in tf.getnames() if "/" in m}
    assert {"LICENSE", "multistat/py.typed", "pyproject.toml"} <= members

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    py, cli = venv / "bin" / "python", venv / "bin" / "multistat"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(MULTISTAT_TRACEBACK="1", OPENBLAS_CORETYPE=env.get("OPENBLAS_CORETYPE",
                                                                  "Haswell"))
    _run([str(py), "-m", "pip", "install", "--quiet", str(wheels[0])], env=env)
    listed = _run([str(py), "-m", "pip", "list", "--format=freeze"], env=env).stdout.lower()
    for extra_only in ("numba", "matplotlib", "seaborn", "distributed", "sacrebleu", "dvc"):
        assert f"\n{extra_only}==" not in "\n" + listed, extra_only
    work = tmp_path / "work"
    work.mkdir()
    version = _run([str(cli), "--version"], env=env, cwd=work).stdout.strip()
    assert version == f"multistat {multistat.__version__}"
    _run([str(cli), "demo-data", "--out", "data"], env=env, cwd=work)
    out = _run([str(cli), "compare", "data/demo.parquet", "--tests", "t,wilcoxon,bootstrap",
                "--n-resamples", "999", "--out", "results.parquet"], env=env, cwd=work)
    assert "comparisons" in out.stdout and (work / "results.parquet").exists()
    out = _run([str(cli), "rank", "data/demo.parquet", "--n-resamples", "999", "--out",
                "ranking.parquet"], env=env, cwd=work)
    assert "cluster" in out.stdout and (work / "ranking.parquet").exists()
    report = subprocess.run([str(cli), "report", "results.parquet", "--out", "rep"],
                            capture_output=True, text=True, env=env, cwd=work, check=False)
    assert report.returncode == 2
    assert report.stderr.strip().splitlines() == [MISSING_REPORT]
    api = _run([str(py), "-c", API_CHECK, "data/demo.parquet"], env=env, cwd=work)
    rows, board, power = api.stdout.split()
    assert int(rows) > 0 and int(board) > 0 and 0 < float(power) < 1
