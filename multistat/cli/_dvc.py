"""Refuse to overwrite the tracked outputs of a DVC pipeline.

A DVC stage owns its outputs: a report written by hand into ``reports/`` of a DVC project
replaces the files ``dvc repro`` wrote and ``dvc.lock`` hashes, and the next ``dvc status``
(or a commit of ``cache: false`` outputs) carries numbers no stage produced.
:func:`check_not_tracked` finds the enclosing DVC project (the nearest folder above the
output holding a ``.dvc`` folder), reads the stage outputs (``outs``, ``metrics``,
``plots``) of every ``dvc.yaml`` and ``dvc.lock`` in the folders from that project's root
down to the output folder (paths relative to the file's own folder; a templated
``${...}`` part matches any name) and refuses when a file the command would write is, lies
inside, or holds one of them. A stage writing its own outputs while ``dvc repro`` runs it
(DVC sets ``DVC_STAGE`` to the stage's address) is allowed.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

import yaml

from multistat.errors import ParameterError, show

_TEMPLATE = re.compile(r"\$\{[^}]*\}")


def project_root(path) -> Path | None:
    """The nearest folder at or above ``path`` (which need not exist) holding ``.dvc/``."""
    here = Path(os.path.realpath(os.path.abspath(path)))
    for folder in (here, *here.parents):
        if (folder / ".dvc").is_dir():
            return folder
    return None


def _paths(entries) -> list[str]:
    out = []
    for e in entries or ():
        if isinstance(e, str):
            out.append(e)
        elif isinstance(e, dict):
            if "path" in e:  # dvc.lock
                out.append(str(e["path"]))
            else:  # dvc.yaml: {path: {options}}
                out.extend(str(k) for k in e)
    return out


def stage_outputs(folder: Path) -> list[tuple[str, str, Path]]:
    """``(stage, absolute path or pattern, file)`` of every output declared in
    ``folder/dvc.yaml`` and ``folder/dvc.lock`` (a missing or unreadable file: none)."""

    found = []
    for name in ("dvc.yaml", "dvc.lock"):
        f = folder / name
        if not f.is_file():
            continue
        try:
            doc = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue
        stages = doc.get("stages") if isinstance(doc, dict) else None
        for stage, spec in (stages or {}).items():
            if not isinstance(spec, dict):
                continue
            body = spec.get("do", spec) if isinstance(spec.get("do"), dict) else spec
            for key in ("outs", "metrics", "plots"):
                for p in _paths(body.get(key)):
                    pattern = _TEMPLATE.sub("*", p)
                    found.append((str(stage).split("@")[0],
                                  os.path.normpath(str(folder / pattern)), f))
    return found


def _clash(written: str, tracked: str) -> bool:
    sep = os.sep
    return (fnmatch.fnmatchcase(written, tracked)
            or fnmatch.fnmatchcase(written, tracked.rstrip(sep) + sep + "*")
            or tracked.startswith(written.rstrip(sep) + sep))


def check_not_tracked(directory, names, *, flag: str = "--out", force: bool = False
                      ) -> None:
    """Raise :class:`~multistat.errors.ParameterError` (one line, exit status 2) when a
    file or folder ``directory/name`` the command writes is a tracked output of a DVC
    stage (see the module docstring), unless ``force``."""
    if force:
        return
    root = project_root(directory)
    if root is None:
        return
    base = Path(os.path.realpath(os.path.abspath(directory)))
    folders = [root]
    if base != root and root in base.parents:
        rel = base.relative_to(root).parts
        folders += [root.joinpath(*rel[:i]) for i in range(1, len(rel) + 1)]
    env_stage = os.environ.get("DVC_STAGE", "")
    running = env_stage.rsplit(":", 1)[-1].split("@")[0] if env_stage else None
    for folder in folders:
        for stage, tracked, source in stage_outputs(folder):
            if stage == running:
                continue  # dvc repro running the stage that owns these outputs
            for name in names:
                written = str(base / name)
                if _clash(written, tracked):
                    raise ParameterError(
                        f"`{flag}` {show(str(directory))} would overwrite "
                        f"{show(os.path.relpath(written))}, an output of DVC stage "
                        f"{show(stage)} in {show(os.path.relpath(source))}: the pipeline "
                        f"owns it (`dvc repro` writes it); choose another folder, or pass "
                        f"--force to overwrite it")
