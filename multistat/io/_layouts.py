"""Layouts of a score table (long, wide, pairs) turned into coded long data."""

from __future__ import annotations

import lzma
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from multistat.errors import InputFileError, ParameterError
from multistat.io._parsing import (
    _ids,
    _malformed,
    _need_columns,
    _scores,
    check_short_rows,
    read_text,
)
from multistat.io._sources import WHITESPACE, open_text, show, stem

# ----------------------------------------------------------------------------- layouts
_ROLES = ("dataset", "system", "metric", "instance")
#: optional identifier roles (``run_col``, ``group_col``, ``rater_col``): present in every
#: chunk or none
_EXTRA_ROLES = ("run", "group", "rater")


@dataclass
class Long:
    """Unvalidated long data: integer codes per identifier role, the scores, and the
    source file and row of every score (for messages)."""

    codes: dict
    names: dict
    score: np.ndarray
    src: np.ndarray
    row: np.ndarray

    def name(self, role: str, i: int) -> str:
        return self.names[role][self.codes[role][i]]


@dataclass
class Raw:
    """Collects chunks of long data from one or several files."""

    chunks: list = field(default_factory=list)

    def add(self, k: int, score, rows, **ids):
        """``ids[role]`` is one fixed name (str) or ``(codes, names)``."""
        n = len(score)
        coded = {}
        for role in _ROLES + tuple(r for r in _EXTRA_ROLES if ids.get(r) is not None):
            value = ids[role]
            if isinstance(value, str):
                value = (np.zeros(n, dtype=np.int64), [value])
            coded[role] = value
        self.chunks.append((coded, np.asarray(score, dtype=np.float64),
                            np.full(n, k, dtype=np.int32), np.asarray(rows, dtype=np.int64)))

    def long(self) -> Long:
        codes, names = {}, {}
        extra = tuple(r for r in _EXTRA_ROLES if all(r in c[0] for c in self.chunks))
        for role in _ROLES + extra:
            index: dict[str, int] = {}
            parts = []
            for coded, *_ in self.chunks:
                chunk_codes, chunk_names = coded[role]
                lut = np.array([index.setdefault(nm, len(index)) for nm in chunk_names],
                               dtype=np.int64)
                parts.append(lut[chunk_codes])
            codes[role] = np.concatenate(parts)
            names[role] = list(index)
        return Long(codes, names,
                     np.concatenate([c[1] for c in self.chunks]),
                     np.concatenate([c[2] for c in self.chunks]),
                     np.concatenate([c[3] for c in self.chunks]))


def _extra_ids(src, frame, extra) -> dict:
    """``{"run": (codes, names), "group": ...}`` of the ``run_col``/``group_col`` given."""
    out = {}
    for role, col in extra.items():
        if col is not None:
            _need_columns(src, frame, [col], f"{role}_col")
            out[role] = _ids(src, frame, [col], role)
    return out


def long_layout(src, frame, k, raw, *, system_col, metric_col, instance_col, score_col,
                 dataset_col, metric, dataset, default_dataset, explicit, extra=None):
    extra = extra or {}
    _need_columns(src, frame, system_col, "system_col")
    _need_columns(src, frame, instance_col, "instance_col")
    _need_columns(src, frame, [score_col], "score_col")
    for role, col in extra.items():
        if col is not None:
            _need_columns(src, frame, [col], f"{role}_col")
    metric_value = _fixed_or_column(src, frame, "metric", metric_col, metric, score_col,
                                    explicit)
    dataset_value = _fixed_or_column(src, frame, "dataset", dataset_col, dataset,
                                     default_dataset, explicit)
    used = [*system_col, *instance_col, score_col]
    used += [c for c in (metric_value, dataset_value) if isinstance(c, _Col)]
    used += [c for c in extra.values() if c is not None]
    check_short_rows(src, frame, [c.name if isinstance(c, _Col) else c for c in used])
    systems = _ids(src, frame, system_col, "system")
    instances = _ids(src, frame, instance_col, "instance")
    metrics = (_ids(src, frame, [metric_value.name], "metric")
               if isinstance(metric_value, _Col) else metric_value)
    datasets = (_ids(src, frame, [dataset_value.name], "dataset")
                if isinstance(dataset_value, _Col) else dataset_value)
    scores = _scores(src, frame[score_col], score_col)
    raw.add(k, scores, np.arange(len(frame)), dataset=datasets, system=systems,
            metric=metrics, instance=instances, **_extra_ids(src, frame, extra))


@dataclass(frozen=True)
class _Col:
    name: str


def _fixed_or_column(src, frame, role, col, fixed, default, explicit):
    """A metric/dataset comes from a column (``_Col``) or is one fixed string.

    ``fixed`` is the user's ``metric=``/``dataset=`` (None if not given), ``default`` the
    name used when neither that nor a column exists.
    """
    name = col[0] if col else role
    if explicit[role]:
        _need_columns(src, frame, [name], f"{role}_col")
        return _Col(name)
    if name in frame.columns:
        if fixed is not None:
            raise ParameterError(
                f"`{role}={fixed!r}` fixes the {role}, but {src.path} has a {name!r} column; "
                f"drop `{role}=` or pass `{role}_col=` to name another column"
            )
        return _Col(name)
    return fixed if fixed is not None else default


def wide_layout(src, frame, k, raw, *, metric_col, instance_col, dataset_col, metric,
                 dataset, default_dataset, systems, explicit, extra=None):
    extra = extra or {}
    instance_value = None
    if explicit["instance"]:
        _need_columns(src, frame, instance_col, "instance_col")
        instance_value = instance_col
    elif "instance" in frame.columns:
        instance_value = ["instance"]
    metric_value = _fixed_or_column(src, frame, "metric", metric_col, metric, "score", explicit)
    dataset_value = _fixed_or_column(src, frame, "dataset", dataset_col, dataset,
                                     default_dataset, explicit)
    id_cols = list(instance_value or [])
    id_cols += [v.name for v in (metric_value, dataset_value) if isinstance(v, _Col)]
    for role, col in extra.items():
        if col is not None:
            _need_columns(src, frame, [col], f"{role}_col")
            id_cols.append(col)
    if systems is not None:
        _need_columns(src, frame, systems, "systems")
        system_cols = list(systems)
    else:
        system_cols = [c for c in frame.columns if c not in id_cols]
    if not system_cols:
        raise InputFileError(
            f"{src.path}: no system columns in the wide table (columns: "
            f"{', '.join(map(repr, frame.columns))})"
        )
    check_short_rows(src, frame, id_cols + system_cols)
    n = len(frame)
    metrics = (_ids(src, frame, [metric_value.name], "metric")
               if isinstance(metric_value, _Col) else metric_value)
    datasets = (_ids(src, frame, [dataset_value.name], "dataset")
                if isinstance(dataset_value, _Col) else dataset_value)
    extra_ids = _extra_ids(src, frame, extra)
    if instance_value:
        instances = _ids(src, frame, instance_value, "instance")
    else:  # rows numbered from 0 within each (dataset, metric[, run or rater])
        split = extra_ids.get("run", extra_ids.get("rater"))
        group = pd.DataFrame({
            "d": datasets[0] if isinstance(datasets, tuple) else np.zeros(n, np.int64),
            "m": metrics[0] if isinstance(metrics, tuple) else np.zeros(n, np.int64),
            "r": split[0] if split is not None else np.zeros(n, np.int64)})
        counter = group.groupby(["d", "m", "r"], sort=False).cumcount().to_numpy(np.int64)
        instances = (counter, [str(i) for i in range(int(counter.max()) + 1)])
    rows = np.arange(n)
    for col in system_cols:
        scores = _scores(src, frame[col], col)
        raw.add(k, scores, rows, dataset=datasets, system=str(col), metric=metrics,
                instance=instances, **extra_ids)


def pairs_layout(src, k, raw, *, systems, metric, dataset):
    """Header-less numbers, one column per system: NLPStatTest pairs (2 systems) or one
    score per line (1 system, named after the file)."""
    src.header = False
    src.skip_blank = False
    src.n_fields = len(systems)
    if src.sep is None or src.sep == "\t" and len(systems) == 1:
        src.sep = WHITESPACE
    frame = read_text(src)
    blank = frame.isna().all(axis=1).to_numpy()
    n = len(blank) - int(np.argmax(~blank[::-1])) if (~blank).any() else 0
    if n == 0:
        raise InputFileError(f"{src.path}: the file is empty")
    frame = frame.iloc[:n]
    if frame.shape[1] != len(systems) or frame.isna().to_numpy().any():
        bad = src.first_bad_line(len(systems))
        if bad is not None:
            raise _malformed(src, bad, len(systems))
    rows = np.arange(n)
    instances = (rows.astype(np.int64), [str(i) for i in range(n)])
    for j, name in enumerate(systems):
        label = (f"column {j + 1} (system {name!r})" if len(systems) > 1
                 else f"system {name!r}")
        scores = _scores(src, frame.iloc[:, j], name, label=label)
        raw.add(k, scores, rows, dataset=dataset, system=name, metric=metric,
                instance=instances)


# ----------------------------------------------------------------------------- COMET
# comet-score (Unbabel/COMET, comet/cli/score.py) prints per segment
#   "{file}\tSegment {i}\tscore: {score:.4f}"   (COMET >= 1.0; "\tvariance: ..." with MC
#   dropout), older versions "Segment {i}\tscore: {score:.3f}" or "Segment {i} score: ...",
# then one summary line per system, "{file}\tscore: {score:.4f}" (older: "System score:
# {score}"), and optionally "Predictions saved in: {json}." and the embedding cache info.
_COMET_SEGMENT = re.compile(
    r"^(?:(?P<file>[^\t]*)\t)?Segment (?P<seg>\d+)[\t ]score: (?P<score>\S+)"
    r"(?:\s+variance: \S+)?\s*$")
_COMET_SUMMARY = re.compile(r"^(?:(?P<file>[^\t]*)\t)?(?:System )?score: (?P<score>\S+)\s*$")
_COMET_TRAILERS = ("Predictions saved in: ", "CacheInfo(")


def looks_like_comet(src) -> bool:
    """A text file whose first non-blank line is a comet-score segment or summary line."""
    line = src.first_line or ""
    return src.kind == "text" and bool(_COMET_SEGMENT.match(line) or
                                       _COMET_SUMMARY.match(line))


def comet_layout(src, k, raw, *, metric, dataset):
    """Per-segment scores of ``comet-score`` output; one system per translation file."""
    src.header = False
    src.skip_blank = True
    files, segs, scores, rows = [], [], [], []
    summaries: dict[str, tuple[int, str]] = {}
    row = -1
    try:
        with open_text(src.path) as fh:
            for lineno, line in enumerate(fh, 1):
                text = line.rstrip("\r\n")
                if not text.strip():
                    continue
                row += 1
                m = _COMET_SEGMENT.match(text)
                if m:
                    try:
                        value = float(m["score"])
                    except ValueError:
                        raise InputFileError(f"{src.path}, line {lineno}: non-numeric score "
                                             f"{show(m['score'])}") from None
                    files.append(m["file"] or "")
                    segs.append(m["seg"])
                    scores.append(value)
                    rows.append(row)
                    continue
                m = _COMET_SUMMARY.match(text)
                if m:
                    summaries[m["file"] or ""] = (lineno, m["score"])
                    continue
                if text.startswith(_COMET_TRAILERS):
                    continue
                raise InputFileError(
                    f"{src.path}, line {lineno}: not a line of comet-score output (expected "
                    f"'FILE<tab>Segment N<tab>score: X' or 'FILE<tab>score: X'): "
                    f"{show(text)}")
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{src.path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise InputFileError(f"{src.path}: cannot be read ({exc})") from None
    if not files:
        raise InputFileError(
            f"{src.path}: comet-score output without per-segment lines (only system "
            f"scores, as with --only_system); multistat needs the segment scores")
    uniq = list(dict.fromkeys(files))
    stems = [stem(Path(f)) if f else stem(src.path) for f in uniq]
    names = stems if len(set(stems)) == len(stems) else [f or stem(src.path) for f in uniq]
    code_of = {f: i for i, f in enumerate(uniq)}
    sys_codes = np.array([code_of[f] for f in files], dtype=np.int64)
    score = np.array(scores, dtype=np.float64)
    for f, (lineno, token) in summaries.items():
        if f not in code_of:
            raise InputFileError(f"{src.path}, line {lineno}: system score for {f!r}, which "
                                 f"has no segment lines")
        mine = score[sys_codes == code_of[f]]
        decimals = len(token.partition(".")[2])
        try:
            total = float(token)
        except ValueError:
            raise InputFileError(f"{src.path}, line {lineno}: non-numeric system score "
                                 f"{show(token)}") from None
        mean = float(np.mean(mine))
        if not abs(mean - total) <= 10.0 ** -max(decimals, 1) + 1e-12:
            raise InputFileError(
                f"{src.path}, line {lineno}: the system score {token} of {f or 'the system'!r} "
                f"is not the mean of its {mine.size} segment scores ({mean:.6f}): is the "
                f"output truncated or are two runs concatenated?")
    inst_codes, inst_names = pd.factorize(pd.Series(segs, dtype=object))
    raw.add(k, score, np.array(rows), dataset=dataset, system=(sys_codes, names),
            metric=metric, instance=(inst_codes.astype(np.int64), [str(x) for x in inst_names]))
