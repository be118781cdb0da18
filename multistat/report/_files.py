"""Files written beside the HTML report, all atomically: CSV tables, the DVC metrics JSON
(``metrics.json``) and the DVC plot data (``plots/leaderboard``, ``plots/power``,
``plots/ranking``; one small CSV per dataset × metric or pair).

:func:`file_stem` is the one place the report makes a file name from data names (dataset,
metric, systems): every figure and table named after them goes through it, so no two
distinct names share a file. :func:`write_csv` is the one CSV writer (atomic, formula-like
cells neutralised, :mod:`multistat._csv`).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pandas as pd

from multistat import _atomic, _csv
from multistat.errors import ParameterError, show
from multistat.report import detectability as _detect
from multistat.report._checks import check_ranking

#: a name used in a file name as it is: ASCII letters and digits in runs joined by single
#: ``.``, ``_`` or ``-`` (so no ``__``, no ``--``, no leading dot, no uppercase)
_PLAIN = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")
#: longest readable part of a stem before the hash
_MAX_READABLE = 60


def file_stem(*parts) -> str:
    """A file-name stem for a tuple of data names, injective: distinct tuples never share
    a stem, on case-sensitive or case-insensitive file systems alike.

    Plain names (lower-case ASCII letters and digits joined by single ``.``, ``_`` or
    ``-``) are joined by ``__`` as they are: ``("newstest", "sent_bleu")`` ->
    ``newstest__sent_bleu``; since no plain name contains ``__`` or starts or ends with
    ``_``, the join can be split back. Any other tuple (spaces, ``/``, ``__`` inside a name,
    upper case, non-ASCII, very long) gets a readable escape (each run of other characters
    becomes ``-``) plus ``--`` and 10 hex digits of the SHA-256 of the exact names, e.g.
    ``("m 1",)`` -> ``m-1--<hash>``; a plain stem never contains ``--``, so an escaped stem
    cannot equal a plain one, and two escaped stems differ by their hash.
    """
    names = [str(p) for p in parts]
    if all(_PLAIN.fullmatch(n) for n in names):
        stem = "__".join(names)
        if len(stem) <= _MAX_READABLE:
            return stem
    readable = "__".join(re.sub(r"[^A-Za-z0-9._]+", "-", n).strip("-._") or "x"
                         for n in names)[:_MAX_READABLE].rstrip("-._")
    digest = hashlib.sha256(json.dumps(names, ensure_ascii=True).encode()).hexdigest()
    return f"{readable or 'x'}--{digest[:10]}"


def write_csv(path: Path, frame: pd.DataFrame) -> None:
    """``frame`` as CSV at ``path``: atomically, no index, formula-like cells neutralised
    (:func:`multistat._csv.neutralise`)."""
    with _atomic.atomic_path(path) as tmp:
        _csv.to_csv(frame, tmp)


def own_folder(out: Path, *parts: str) -> Path:
    """The report's folder ``out/parts...``, created. A symbolic link (or a file) at any
    level below ``out`` is refused: the report writes, and empties, only folders of its
    own, never a link's target."""
    path = Path(out)
    for part in parts:
        path = path / part
        if path.is_symlink():
            raise ParameterError(
                f"{show(str(path))} is a symbolic link: the report writes its own folders "
                "and does not follow links into other places; remove the link or choose "
                "another output folder")
        if path.exists() and not path.is_dir():
            raise ParameterError(f"{show(str(path))} is a file where the report writes a "
                                 "folder; remove it or choose another output folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


def fresh_folder(out: Path, *parts: str) -> Path:
    """The report's folder ``out/parts...`` (:func:`own_folder`: no link followed),
    emptied of an earlier run's files."""
    folder = own_folder(out, *parts)
    shutil.rmtree(folder)
    folder.mkdir()
    return folder


def write_dvc_files(out: Path, res, lb_all, det_all, curves, test) -> None:
    """``metrics.json`` (DVC metrics: leader, significance, MDE per dataset × metric) and
    ``plots/`` (DVC plots: one leaderboard CSV per dataset × metric, one power-curve CSV per
    adjacent pair)."""
    summary = _detect.study_summary(res, lb_all, det_all, test=test)
    _atomic.write_text(out / "metrics.json", json.dumps(summary, indent=2, sort_keys=True)
                       + "\n")
    plots = own_folder(out, "plots")
    for sub in ("leaderboard", "power"):
        fresh_folder(out, "plots", sub)
    for (ds, metric), g in lb_all.groupby(["dataset", "metric"], sort=False):
        write_csv(plots / "leaderboard" / f"{file_stem(ds, metric)}.csv",
                   g[["rank", "system", "score", "ci_low", "ci_high", "wins"]])
    for (ds, metric, a, b), g in curves.groupby(["dataset", "metric", "system_a",
                                                 "system_b"], sort=False):
        write_csv(plots / "power" / f"{file_stem(ds, metric, a, b)}.csv",
                   g[["delta", "power", "n", "mde"]])


def write_rank_plots(out: Path, ranking) -> None:
    """``plots/ranking/<file_stem(dataset, metric)>.csv``: expected rank and rank interval per
    system (DVC plots)."""
    board = check_ranking(ranking)
    folder = fresh_folder(out, "plots", "ranking")
    cols = ["system", "rank", "expected_rank", "rank_ci_low", "rank_ci_high", "p_best",
            "cluster"]
    for (ds, metric), g in board.groupby(["dataset", "metric"], sort=False):
        write_csv(folder / f"{file_stem(ds, metric)}.csv", g[cols])
