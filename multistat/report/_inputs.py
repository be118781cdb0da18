"""One validator for every table the report reads besides the compare table.

Each table kind has a :class:`Schema`: the columns it must have (text identifiers,
numbers, whole numbers), the columns that, when present, must be numbers, and the key
no two rows may share. :func:`check_table` applies it and says, in one line, what is
wrong and where (the option, the file, the column, the row); :func:`read_table` reads a
Parquet path first. The compare table itself has its own checks
(:func:`multistat.report.tables.check_results`, :mod:`multistat.report._checks`); the
same rules hold here: required columns, types, no duplicates, not empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from multistat._validation import name_column_problem
from multistat.errors import DataValidationError, InputFileError, ParameterTypeError
from multistat.io import read_parquet

__all__ = ["SCHEMAS", "Schema", "check_table", "read_table"]


@dataclass(frozen=True)
class Schema:
    """What one kind of input table must hold."""

    #: the table in words, and the command that writes it
    what: str
    #: identifier columns: present, no missing cell (read as text)
    text: tuple[str, ...] = ()
    #: number columns: present, each cell a number or missing (not text, not True/False)
    numbers: tuple[str, ...] = ()
    #: whole-number columns: present, each cell a whole number or missing
    integers: tuple[str, ...] = ()
    #: columns that must be numbers when the table has them
    optional_numbers: tuple[str, ...] = ()
    #: no two rows with the same values here (the columns the table has)
    key: tuple[str, ...] = ()
    #: the run metadata entry that names the key instead, when the table records it
    key_from: str | None = None


SCHEMAS: dict[str, Schema] = {
    "systems": Schema(
        "per-system score table (`multistat compare --systems-out`)",
        text=("dataset", "metric", "system"), numbers=("score",),
        optional_numbers=("ci_low", "ci_high", "confidence_level", "n"),
        key=("dataset", "metric", "system")),
    "pooled": Schema(
        "pooled table (`multistat meta`)",
        numbers=("estimate", "ci_low", "ci_high", "p_value", "tau2", "i2", "pi_low",
                 "pi_high"),
        integers=("k",), optional_numbers=("se", "statistic", "q", "q_p_value"),
        key=("metric", "system_a", "system_b", "test"), key_from="by"),
    "preferences": Schema(
        "preference leaderboard (`multistat preferences`)",
        text=("system",),
        numbers=("score", "ci_low", "ci_high", "rank", "rank_ci_low", "rank_ci_high",
                 "expected_rank", "p_best", "win_rate"),
        integers=("rank_range_low", "rank_range_high", "cluster", "beats", "beaten_by",
                  "n_battles"),
        key=("system",)),
    "ranking": Schema(
        "ranking table (`multistat rank`)",
        text=("dataset", "metric", "system"),
        numbers=("score", "ci_low", "ci_high", "rank", "rank_ci_low", "rank_ci_high",
                 "expected_rank", "p_best"),
        integers=("rank_range_low", "rank_range_high", "cluster", "beats", "beaten_by"),
        key=("dataset", "metric", "system")),
    "metaeval": Schema(
        "metric leaderboard (`multistat meta-evaluate`)",
        text=("dataset", "metric"), numbers=("value", "ci_low", "ci_high", "rank"),
        integers=("cluster",), key=("dataset", "metric")),
    "metaeval_matrix": Schema(
        "metric correlation table (`multistat meta-evaluate --matrix-out`)",
        text=("dataset", "metric_a", "metric_b"), numbers=("correlation",),
        key=("dataset", "metric_a", "metric_b")),
    "analysis": Schema(
        "analysis table (`multistat analyze`)",
        text=("dataset", "metric", "system_a", "system_b")),
}


def _cut(value, limit: int = 60) -> str:
    if isinstance(value, np.generic):  # 2.5, not np.float64(2.5)
        value = value.item()
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def numeric_cells(raw: pd.Series) -> tuple[np.ndarray | None, np.ndarray]:
    """``(values as floats, positions of cells that are neither a number nor missing)``;
    ``(None, [])`` for a True/False column (not numbers). One coercion for every table the
    report reads (the compare table's checks in ``report/_checks.py`` too)."""
    if raw.dtype == bool or str(raw.dtype) == "boolean":
        return None, np.empty(0, dtype=np.intp)
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return values, np.flatnonzero(np.isnan(values) & raw.notna().to_numpy())


def _numbers(frame: pd.DataFrame, col: str, where: str, *, whole: bool) -> None:
    raw = frame[col]
    values, junk = numeric_cells(raw)
    if values is None:
        raise DataValidationError(f"{where}: column {col!r} holds True/False, not numbers")
    if junk.size:
        i = int(junk[0])
        raise DataValidationError(f"{where}: column {col!r}, row {i}: {_cut(raw.iloc[i])} "
                                  f"is not a number ({junk.size} such row(s))")
    if whole:
        bad = np.flatnonzero(~np.isnan(values) & (values != np.round(values)))
        if bad.size:
            i = int(bad[0])
            raise DataValidationError(f"{where}: column {col!r}, row {i}: "
                                      f"{_cut(raw.iloc[i])} is not a whole number")


def check_table(frame, kind: str, name: str | None = None, *, source=None) -> pd.DataFrame:
    """Validate an input table of ``kind`` (a key of :data:`SCHEMAS`).

    Parameters
    ----------
    frame : pandas.DataFrame
        The table.
    kind : str
        Which table it is: ``"systems"``, ``"pooled"``, ``"preferences"``, ``"ranking"``,
        ``"metaeval"``, ``"metaeval_matrix"`` or ``"analysis"``.
    name : str, optional
        The option that passed it (the messages say `` `name` ``; default ``kind``).
    source : path-like, optional
        The file it was read from (named in the messages).

    Returns
    -------
    pandas.DataFrame
        ``frame`` itself (its identifier columns are not changed).

    Raises
    ------
    DataValidationError
        A required column is missing, a number column holds text or True/False, a
        whole-number column a fraction, an identifier is missing, two rows share the
        key, or the table is empty. The message names the option, the file, the column
        and the row.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"dataset": ["d"], "metric": ["m"], "system": ["a"],
    ...                   "score": ["high"]})
    >>> from multistat.errors import DataValidationError
    >>> try:
    ...     check_table(t, "systems", source="s.parquet")
    ... except DataValidationError as err:
    ...     print(err)
    `systems` (s.parquet): column 'score', row 0: 'high' is not a number (1 such row(s))
    """
    schema = SCHEMAS[kind]
    name = name or kind
    where = f"`{name}`" + (f" ({source})" if source is not None else "")
    if not isinstance(frame, pd.DataFrame):
        raise ParameterTypeError(f"`{name}` must be a pandas DataFrame or a path to a "
                                 f"Parquet file; got {type(frame).__name__}")
    need = [c for c in (*schema.text, *schema.numbers, *schema.integers)
            if c not in frame.columns]
    if need:
        raise DataValidationError(f"{where} lacks column(s) {need} (needed in the "
                                  f"{schema.what}); has "
                                  f"{_cut(list(map(str, frame.columns)), 200)}")
    if len(frame) == 0:
        raise DataValidationError(f"{where} is empty: no rows")
    for col in schema.text:  # no missing cell, no invisible twin, no control character
        problem = name_column_problem(frame[col].tolist(), col)
        if problem is not None:
            raise DataValidationError(f"{where}: {problem}")
    for col in schema.numbers:
        _numbers(frame, col, where, whole=False)
    for col in schema.integers:
        _numbers(frame, col, where, whole=True)
    for col in schema.optional_numbers:
        if col in frame.columns:
            _numbers(frame, col, where, whole=False)
    names = schema.key
    recorded = (frame.attrs.get("multistat") or {}).get(schema.key_from or "")
    if isinstance(recorded, (list, tuple)) and recorded:
        names = tuple(str(c) for c in recorded)
    key = [c for c in names if c in frame.columns]
    if key:
        twice = frame[key].astype(str).duplicated(keep=False).to_numpy()
        if twice.any():
            i = int(np.flatnonzero(twice)[0])
            row = ", ".join(f"{c}={_cut(frame[c].iloc[i], 40)}" for c in key)
            raise DataValidationError(f"{where}: {int(twice.sum())} rows repeat one "
                                      f"{' x '.join(key)} (first at row {i}: {row}); each "
                                      f"once")
    return frame


def read_table(obj, kind: str, name: str | None = None) -> pd.DataFrame | None:
    """:func:`check_table` of a DataFrame or of the Parquet file at a path (None stays
    None)."""
    if obj is None:
        return None
    if isinstance(obj, (str, Path)):
        path = Path(obj)
        if not path.exists():
            raise InputFileError(f"`{name or kind}`: {path}: no such file")
        return check_table(read_parquet(path), kind, name, source=path)
    return check_table(obj, kind, name)
