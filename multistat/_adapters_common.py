"""Helpers shared by the loaders of :mod:`multistat.adapters` (MT, labels, statistics):
table reading through :mod:`multistat.io`, column/missing/duplicate checks, metric lists,
progress lines and the dataset node built from per-instance statistics."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from multistat import cube
from multistat.corpus import CorpusMetric
from multistat.errors import DataValidationError, ParameterError, ParameterTypeError
from multistat.io._parsing import read_table


def parse_metric_list(metrics, allowed, what: str) -> list[str]:
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    elif not isinstance(metrics, Sequence):
        raise ParameterTypeError(f"`metrics` must be a string or a sequence of metric "
                                 f"names; got {type(metrics).__name__}")
    metrics = [str(m).strip().lower() if str(m).strip().lower() in allowed else str(m).strip()
               for m in metrics]
    if not metrics:
        raise ParameterError(f"`metrics` is empty; choose from {', '.join(allowed)}")
    dup = sorted({m for m in metrics if metrics.count(m) > 1})
    if dup:
        raise ParameterError(f"`metrics` lists {dup} more than once")
    return metrics



def is_pathlike(obj) -> bool:
    return isinstance(obj, (str, Path))


def _read_table(obj, what: str) -> pd.DataFrame:
    """A DataFrame as is, or a table file read by multistat's one table reader
    (:func:`multistat.io._parsing.read_table`: same suffixes, separator sniffing,
    compression and line-numbered errors as :func:`multistat.read_scores`). Empty text
    cells stay ``""`` (an empty hypothesis is a translation)."""
    if isinstance(obj, pd.DataFrame):
        return obj
    if not is_pathlike(obj):
        raise ParameterTypeError(f"`{what}` must be a path or a pandas DataFrame; got "
                                 f"{type(obj).__name__}")
    return read_table(obj, keep_empty=True)


def _need_columns(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        src = frame.attrs.get("source")
        where = f" ({src})" if src else ""
        raise DataValidationError(f"`{what}`{where} lacks column(s) {missing}; it has "
                                  f"{list(map(str, frame.columns))} (set the *_col "
                                  f"arguments to map your column names)")



def no_missing(frame: pd.DataFrame, cols, what: str, noun: str) -> None:
    """Refuse missing values in ``cols`` of the input named ``what``."""
    for col in cols:
        if frame[col].isna().any():
            raise DataValidationError(f"`{what}`: column {col!r} has "
                                      f"{int(frame[col].isna().sum())} missing {noun}(s)")


def no_duplicates(frame: pd.DataFrame, key: str, what: str) -> None:
    """Refuse duplicated ``(system, key)`` rows of the input named ``what``."""
    dup = frame.duplicated(["system", key])
    if dup.any():
        first = frame[dup].iloc[0]
        raise DataValidationError(f"`{what}`: {int(dup.sum())} duplicated (system, {key}) "
                                  f"row(s), e.g. ({first.system!r}, {first[key]!r})")



def ticker(progress, label: str, every: float = 2.0):
    """``tick(done, total)`` that calls ``progress(line)`` at most every ``every`` seconds
    and when done; None without a ``progress`` callable."""
    if progress is None:
        return None
    if not callable(progress):
        raise ParameterTypeError(f"`progress` must be a callable taking one line of text; "
                                 f"got {type(progress).__name__}")

    start = time.perf_counter()
    last = [start]

    def tick(done: int, total: int) -> None:
        now = time.perf_counter()
        if done < total and now - last[0] < every:
            return
        last[0] = now
        spent = now - start
        left = f", about {spent * (total - done) / done:.0f} s left" if 0 < done < total else ""
        progress(f"{label}: {done:,} of {total:,} distinct hypotheses, {spent:.0f} s{left}")

    return tick


def build(name, systems, labels, instances, stats_list, fns: list[CorpusMetric],
           attrs=None):
    """One dataset node: stats zero-padded to the largest statistic count."""
    width = max(s.shape[-1] for s in stats_list)
    n_sys, n = len(systems), len(instances)
    stats = np.zeros((n_sys, len(labels), n, width))
    score = np.empty((n_sys, len(labels), n))
    for j, (s, cm) in enumerate(zip(stats_list, fns)):
        stats[:, j, :, :s.shape[-1]] = s
        score[:, j] = cm.instance_scores(s)
    ds = cube.make_dataset(name, score, systems=systems, metrics=labels, instances=instances,
                           higher_is_better=[cm.higher_is_better for cm in fns],
                           kind=["corpus"] * len(labels), corpus_fn=[cm.name for cm in fns],
                           stats=stats)
    ds.attrs.update(attrs or {})
    return cube.make_study({name: ds})


