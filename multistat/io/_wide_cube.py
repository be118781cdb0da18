"""Wide score files straight to the arrays of a cube, without the long frame.

A leaderboard often comes as one wide table per metric: one column per system, one row
per instance. :func:`read_scores` turns every value into a row of a long frame (four
identifier codes, the source row, then four text columns: about 60 bytes of working
memory per value, 6.3 GiB for 200 systems x 10 metrics x 12,500 instances).
:func:`read_wide_arrays` fills the ``(system, metric, instance)`` array directly, one file
and one column at a time, with the same per-column checks (:func:`_scores`: non-numeric
cells, infinite values, the cell types a score column refuses), the same identifier
checks (:func:`_ids`, :func:`check_names`) and the same messages.

It takes only the plain case and returns None for anything else, so that the caller
(:func:`multistat.cube.load`) reads those through :func:`read_scores` as before: a
mapping ``{metric: file}`` or one file, wide layout (detected or ``format="wide"``), no
metric/dataset/run/group column, ``missing="raise"``. A problem found inside one file
(a NaN score, a duplicated instance, a bad name) is reported by reading that file alone
through :func:`read_scores`, which raises its usual message; a system missing from one
metric's file gets :func:`read_scores`' message for it; files whose instance sets differ
(legal: the cube holds NaN there) go through :func:`read_scores` whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from multistat.errors import DataValidationError, ParameterError
from multistat.io._layouts import Long
from multistat.io._model import check_names
from multistat.io._parsing import (
    _ids,
    _need_columns,
    _read_table,
    _scores,
    check_short_rows,
    column_list,
)
from multistat.io._reader import detect_format
from multistat.io._sources import _names, normalise_sep, resolve_source, stem

#: read_scores keywords this path understands (with these values: the rest go the long way)
_NEUTRAL = {"system_col": None, "metric_col": None, "score_col": None, "dataset_col": None,
            "run_col": None, "group_col": None, "dataset_from_filename": False,
            "missing": "raise"}
_HANDLED = {"format", "metric", "dataset", "lower_is_better", "instance_col", "systems",
            "sep"}


@dataclass
class WideArrays:
    """One dataset's arrays: ``score`` is ``(system, metric, instance)`` float64."""

    dataset: str
    systems: list[str]
    metrics: list[str]
    instances: list[str]
    score: np.ndarray
    higher_is_better: list[bool]
    kind: list[str]
    paths: list[str]


class _Fallback(Exception):
    """This input is not the plain wide case (or one file holds a problem)."""

    def __init__(self, one_file=None):
        super().__init__()
        self.one_file = one_file  # (metric, path): the file to read alone for its message


def _plain_options(options: Mapping) -> bool:
    for key, value in options.items():
        if key in _NEUTRAL:
            if value != _NEUTRAL[key]:
                return False
        elif key not in _HANDLED:
            return False
    if options.get("format") not in (None, "wide"):
        return False
    for key in ("metric", "dataset"):
        value = options.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            return False
    systems = options.get("systems")
    return systems is None or (isinstance(systems, list | tuple) and all(
        isinstance(s, str) for s in systems))


def _lower(value) -> tuple[str, ...] | None:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def read_wide_arrays(path, **options) -> WideArrays | None:
    """The cube arrays of wide score files, or None when :func:`read_scores` must read
    them (not the plain wide case). Raises what :func:`read_scores` raises for the same
    input (the messages are its own)."""
    if not _plain_options(options):
        return None
    lower = _lower(options.get("lower_is_better"))
    if lower is None:
        return None
    sep = normalise_sep(options.get("sep"))
    if isinstance(path, Mapping):
        if options.get("metric") is not None or not path:
            return None
        if not all(isinstance(k, str) and k and isinstance(v, str | Path)
                   for k, v in path.items()):
            return None
        items = list(path.items())
    elif isinstance(path, str | Path):
        p = Path(path)
        if p.is_dir() or (not p.exists() and set("*?[") & set(str(path))):
            return None
        items = [(options.get("metric") or "score", path)]
    else:
        return None
    sources = [resolve_source(value, sep=sep) for _, value in items]
    if any(src.kind == "text" and options.get("format") is None and _not_table(src)
           for src in sources):
        return None
    metrics = [m for m, _ in items]
    default = (sources[0].path.resolve().parent.name or "dataset"
               if isinstance(path, Mapping) else stem(sources[0].path))
    dataset = options.get("dataset") or default
    unknown = [m for m in lower if m not in metrics]
    if unknown and isinstance(path, Mapping):  # one file: its layout decides its metrics
        _unknown_lower(unknown, metrics)
    try:
        arrays = _read(items, sources, metrics, dataset, lower, options)
    except _Fallback as fb:
        if fb.one_file is not None:
            # optional: only when available
            from multistat.io._reader import read_scores

            metric, value = fb.one_file
            one = {k: v for k, v in options.items() if k not in ("metric", "lower_is_better")}
            if isinstance(path, Mapping):
                one["dataset"] = dataset
                one["lower_is_better"] = [m for m in lower if m == metric]
                read_scores({metric: value}, **one)  # raises the file's own message
            else:
                read_scores(value, **options)
        return None
    if unknown:
        _unknown_lower(unknown, metrics)
    return arrays


def _unknown_lower(unknown, metrics) -> None:
    """read_scores' message for ``lower_is_better`` names that are no metric."""
    raise ParameterError(
        f"`lower_is_better` names unknown metric(s) {_names(unknown)}; the metrics are "
        f"{_names(metrics, 20)}")


def _not_table(src) -> bool:
    return detect_format(src) is not None


def _read(items, sources, metrics, dataset, lower, options) -> WideArrays:
    instance_cols, explicit = column_list("instance_col", options.get("instance_col"),
                                           "instance")
    chosen = options.get("systems")
    score = None
    systems: list[str] = []
    sys_index: dict[str, int] = {}
    instances: list[str] = []
    inst_index: dict[str, int] = {}
    have = []  # per metric: the system positions its file fills
    for k, ((metric, value), src) in enumerate(zip(items, sources)):
        table = _read_table(src)
        table.columns = [str(c) for c in table.columns]
        cols = set(table.columns)
        if options.get("format") is None and {"system", "score"} <= cols:
            raise _Fallback()  # a long table
        if "metric" in cols or "dataset" in cols:
            raise _Fallback()
        if explicit:
            _need_columns(src, table, instance_cols, "instance_col")
            id_cols = list(instance_cols)
        else:
            id_cols = ["instance"] if "instance" in cols else []
        if chosen is not None:
            _need_columns(src, table, list(chosen), "systems")
            sys_cols = list(chosen)
        else:
            sys_cols = [c for c in table.columns if c not in id_cols]
        if not sys_cols or len(set(table.columns)) != len(table.columns):
            raise _Fallback((metric, value))
        check_short_rows(src, table, id_cols + sys_cols)
        check_names(_names_only(k, dataset, metric, sys_cols), sources)
        n = len(table)
        if id_cols:
            codes, names = _ids(src, table, id_cols, "instance")
            if len(names) != n:
                raise _Fallback((metric, value))  # duplicated instances
            names = [names[c] for c in codes]
        else:
            names = [str(i) for i in range(n)]
        if len(sys_cols) < 2 or n < 2:
            raise _Fallback((metric, value))
        if score is None:
            instances = names
            inst_index = {x: i for i, x in enumerate(names)}
            # every cell is written below (a system missing from a file is an error)
            score = np.empty((len(sys_cols), len(items), n))
            order = None
        else:
            if n != len(instances) or any(x not in inst_index for x in names):
                raise _Fallback()  # instance sets differ: the cube holds NaN, long path
            order = np.fromiter((inst_index[x] for x in names), np.int64, n)
        mine = []
        block = _float_block(table, sys_cols)
        for j, col in enumerate(sys_cols):
            v = block[:, j] if block is not None else _scores(src, table[col], col)
            if block is None and np.isnan(v).any():
                raise _Fallback((metric, value))
            if col not in sys_index:
                sys_index[col] = len(systems)
                systems.append(col)
                if len(systems) > score.shape[0]:
                    score = np.concatenate([score, np.full((1, *score.shape[1:]), np.nan)])
            s = sys_index[col]
            if order is None:
                score[s, k] = v
            else:
                score[s, k, order] = v
            mine.append(s)
        have.append(set(mine))
        del table
    if score is None:  # no file read: the long path says why
        raise _Fallback()
    _check_complete(sources, dataset, metrics, systems, have, len(instances))
    kind = ["binary" if _binary(score[:, m]) else "mean" for m in range(len(metrics))]
    return WideArrays(dataset, systems, metrics, instances, score,
                      [m not in lower for m in metrics], kind,
                      [str(s.path) for s in sources])


def _float_block(table, cols) -> np.ndarray | None:
    """``(instance, system)`` float64 values of a table whose score columns are all
    float64 and finite, in one conversion; None otherwise (each column then goes through
    :func:`_scores`, which names the first bad cell). For a float64 column ``_scores``
    checks only that its values are finite, so the two routes accept the same tables."""
    if not all(table[c].dtype == np.float64 for c in cols):
        return None
    block = table[cols].to_numpy(dtype=np.float64)
    return block if np.isfinite(block).all() else None


def _binary(x: np.ndarray) -> bool:
    """Every score 0 or 1 (read_scores' ``np.isin(values, (0, 1)).all()``, system by
    system: it stops at the first system with another value)."""
    return all(bool(((row == 0.0) | (row == 1.0)).all()) for row in x)


def _names_only(k: int, dataset: str, metric: str, systems: list[str]) -> Long:
    """One entry per system of file ``k`` (row 0, where each system's column starts), for
    the name checks of :func:`read_scores`."""
    n = len(systems)
    zeros = np.zeros(n, dtype=np.int64)
    return Long(codes={"dataset": zeros, "metric": zeros, "instance": zeros,
                        "system": np.arange(n, dtype=np.int64)},
                 names={"dataset": [dataset], "metric": [metric], "instance": ["0"],
                        "system": list(systems)},
                 score=np.zeros(n), src=np.full(n, k, dtype=np.int32), row=zeros)


def _check_complete(sources, dataset, metrics, systems, have, n_inst) -> None:
    """Every metric's file has every system: else read_scores' message for the first
    metric (file order) lacking one."""
    label = (sources[0].path if len(sources) == 1
             else ", ".join(str(s.path) for s in sources))
    for m, mine in enumerate(have):
        lacking = [s for s in range(len(systems)) if s not in mine]
        if lacking:
            more = "" if len(lacking) == 1 else f"; {len(lacking)} systems are incomplete"
            raise DataValidationError(
                f"{label}: dataset {dataset!r}, metric {metrics[m]!r}: system "
                f"{systems[lacking[0]]!r} has no scores at all (other systems have "
                f"{n_inst} instances){more}; pass missing='drop' to keep only the "
                f"instances every system has")
