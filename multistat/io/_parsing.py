"""Line-aware parsing: tables from text, JSON (lines) and Parquet files, score columns
and identifier columns, with every error naming the file, the line and the column."""

from __future__ import annotations

import datetime
import decimal
import json
import lzma
import math
import warnings
import zlib
from collections.abc import Sequence
from typing import overload

import numpy as np
import pandas as pd

from multistat._json import DuplicateKeyError, no_duplicates
from multistat.errors import (
    DataValidationError,
    InputFileError,
    ParameterError,
    ParameterTypeError,
)
from multistat.io._sources import (
    KEY_JOIN,
    NA_TOKENS,
    Source,
    open_text,
    plural,
    resolve_source,
    sep_name,
    show,
    split_line,
)


# ----------------------------------------------------------------------------- reading
def read_text(src: Source) -> pd.DataFrame:
    """All cells as strings; a missing or empty field is NaN ('nan', 'NA'... stay text)."""
    kwargs = {
        "sep": src.sep,
        "header": 0 if src.header else None,
        "dtype": str,
        "keep_default_na": False,
        "na_values": [""],
        "skip_blank_lines": src.skip_blank,
        "encoding": "utf-8-sig",
        "compression": "infer",
    }
    if src.header:
        kwargs["index_col"] = False
    with warnings.catch_warnings():
        # pandas only *warns* when every data row has more fields than the header
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            frame = pd.read_csv(src.path, **kwargs)
        except pd.errors.EmptyDataError:
            raise InputFileError(f"{src.path}: the file is empty") from None
        except (pd.errors.ParserError, pd.errors.ParserWarning):
            bad = src.first_bad_line(None if src.header else src.n_fields)
            if bad is None:  # pragma: no cover - pandas and the scan disagree
                raise InputFileError(f"{src.path}: cannot be parsed as a table") from None
            raise _malformed(src, bad, None) from None
        except UnicodeDecodeError as exc:
            raise InputFileError(
                f"{src.path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
            raise InputFileError(f"{src.path}: cannot be read ({exc})") from None
    if src.header:
        header = split_line(src.first_line or "", src.delimiter)
        seen = set()
        for name in header:
            if name in seen:
                raise InputFileError(
                    f"{src.path}, line {src.first_lineno}: column {name!r} appears more than "
                    f"once in the header")
            seen.add(name)
    return frame


def _malformed(src: Source, bad: tuple[int, str, int], expected: int | None) -> InputFileError:
    lineno, text, nfields = bad
    if expected is None:
        expected = (len(split_line(src.first_line or "", src.delimiter)) if src.header
                    else src.n_fields)
    if nfields == 0:
        return InputFileError(
            f"{src.path}, line {lineno}: malformed line: blank line between data lines")
    return InputFileError(
        f"{src.path}, line {lineno}: malformed line: expected {expected} fields separated "
        f"by {sep_name(src.delimiter)}, found {nfields}: {show(text)}"
    )


def check_short_rows(src: Source, frame: pd.DataFrame, used: Sequence[str]) -> None:
    """Text tables: a row with NaN cells in a used column may be a line with too few
    fields (pandas pads those silently) -> malformed-line error."""
    if src.kind != "text" or frame.empty:
        return
    rows = np.flatnonzero(frame[list(used)].isna().to_numpy().any(axis=1))
    if rows.size == 0:
        return
    expected = frame.shape[1]
    for _, (lineno, text) in sorted(src.lines_of(rows).items()):
        n = len(split_line(text, src.delimiter))
        if n < expected:
            raise _malformed(src, (lineno, text, n), expected)


def _read_json(src: Source) -> pd.DataFrame:
    """JSON lines (one object per line) or a JSON array of objects, parsed with the
    standard library so every fault is reported with its line (or record)."""
    records: list[dict] = []
    try:
        with open_text(src.path) as fh:
            if src.kind == "jsonl":
                for lineno, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        obj = json.loads(line, object_pairs_hook=no_duplicates)
                    except json.JSONDecodeError as err:
                        raise InputFileError(
                            f"{src.path}, line {lineno}: not valid JSON ({err.msg}): "
                            f"{show(line.rstrip())}") from None
                    except DuplicateKeyError as err:
                        raise InputFileError(
                            f"{src.path}, line {lineno}: key {show(err.key)} appears twice "
                            f"in one object (JSON keeps only the last value): "
                            f"{show(line.rstrip())}") from None
                    if not isinstance(obj, dict):
                        raise InputFileError(
                            f"{src.path}, line {lineno}: expected a JSON object per line, "
                            f"found {_json_type(obj)}: {show(line.rstrip())}")
                    records.append(obj)
            else:
                try:
                    data = json.load(fh, object_pairs_hook=no_duplicates)
                except json.JSONDecodeError as err:
                    raise InputFileError(f"{src.path}, line {err.lineno}: not valid JSON "
                                         f"({err.msg})") from None
                except DuplicateKeyError as err:
                    raise InputFileError(
                        f"{src.path}: key {show(err.key)} appears twice in one object (JSON "
                        f"keeps only the last value); each key once per record") from None
                if not isinstance(data, list):
                    raise InputFileError(f"{src.path}: expected a JSON array of objects "
                                         f"(records), found {_json_type(data)}")
                for i, obj in enumerate(data):
                    if not isinstance(obj, dict):
                        raise InputFileError(
                            f"{src.path}, record {i}: expected a JSON object, found "
                            f"{_json_type(obj)}: {show(json.dumps(obj))}")
                records = data
    except RecursionError:
        raise InputFileError(f"{src.path}: JSON nested too deeply to be a score table"
                             ) from None
    except UnicodeDecodeError as exc:
        raise InputFileError(
            f"{src.path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise InputFileError(f"{src.path}: cannot be read ({exc})") from None
    frame = pd.DataFrame.from_records(records) if records else pd.DataFrame()
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _json_type(obj) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "a number", float: "a number", type(None): "null"}.get(type(obj),
                                                                       type(obj).__name__)


def _read_parquet_table(src: Source) -> pd.DataFrame:
    try:
        return pd.read_parquet(src.path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several unrelated classes
        raise InputFileError(f"{src.path}: not a readable Parquet file ({exc})") from None


def _read_table(src: Source) -> pd.DataFrame:
    if src.kind == "text":
        frame = read_text(src)
    elif src.kind in ("json", "jsonl"):
        frame = _read_json(src)
    else:
        frame = _read_parquet_table(src)
    if len(frame) == 0:
        what = "a header but no data rows" if src.kind == "text" else "no rows"
        raise InputFileError(f"{src.path}: the file has {what}")
    return frame


def read_table(path, *, keep_empty: bool = False) -> pd.DataFrame:
    """The one table reader of multistat (``read_scores``, the adapters, the report).

    A file as a DataFrame: ``.csv``, ``.tsv``/``.tab``, ``.txt`` and other names as
    delimited text (separator sniffed as :func:`multistat.io.read_scores` documents),
    ``.jsonl``/``.ndjson``, ``.json``, ``.parquet``; text and JSON optionally compressed
    (``.gz``, ``.bz2``, ``.xz``). Text cells stay text verbatim (``"007"``, ``"NA"``);
    an empty field is missing (NaN), or ``""`` with ``keep_empty=True`` (e.g. an empty
    translation). A line with too few fields, a malformed line, an undecodable or empty
    file raise :class:`~multistat.errors.InputFileError` naming the file and the line.
    ``attrs["source"]`` is the path.
    """
    src = resolve_source(path, sep=None)
    frame = _read_table(src)
    frame.columns = [str(c) for c in frame.columns]
    if src.kind == "text":
        check_short_rows(src, frame, list(frame.columns))  # NaN left: empty fields
        if keep_empty:
            frame = frame.fillna("")
    frame.attrs["source"] = str(src.path)
    return frame


def _scores(src: Source, values: pd.Series, column: str, rows: np.ndarray | None = None,
            *, label: str | None = None) -> np.ndarray:
    """float64 scores of one column; NaN where the file holds a missing value.

    Raises InputFileError at the first cell that is neither a number nor a missing-value
    token, DataValidationError at the first infinite score. ``rows`` maps positions to
    source rows (defaults to the position).
    """
    _refuse_cells(src, values, column, "score", rows, label=label)
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        values = values.astype(object)
    _refuse_booleans(src, values, column, rows, label=label)
    if pd.api.types.is_bool_dtype(values.dtype) or pd.api.types.is_numeric_dtype(values.dtype):
        scores = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        try:
            numeric = pd.to_numeric(values, errors="coerce")
        except (TypeError, ValueError, OverflowError):  # e.g. integers beyond 64 bits
            numeric = pd.Series([_to_float(v) for v in values.astype(object)],
                                index=values.index, dtype=np.float64)
        scores = numeric.to_numpy(dtype=np.float64, na_value=np.nan)
        candidates = np.flatnonzero(np.isnan(scores))
        if candidates.size:
            raw = values.iloc[candidates]
            text = raw.astype(object)
            for pos, cell in zip(candidates, text):
                if cell is None or (isinstance(cell, float) and math.isnan(cell)):
                    continue
                if cell is pd.NA or (isinstance(cell, str) and cell.strip().lower()
                                     in NA_TOKENS):
                    continue
                row = int(pos if rows is None else rows[pos])
                raise InputFileError(
                    f"{src.where(row, column, label=label)}: non-numeric score {show(cell)}"
                )
    inf = np.flatnonzero(np.isinf(scores))
    if inf.size:
        pos = inf[0]
        row = int(pos if rows is None else rows[pos])
        raise DataValidationError(
            f"{src.where(row, column, label=label)}: infinite score {float(scores[pos])!r} "
            f"({plural(inf.size, 'infinite score')} in this column); scores must be finite"
        )
    return scores


def _boolean_cell(values: pd.Series) -> int | None:
    """Position of the first boolean cell (a JSON ``true``, a bool column), or None."""
    if pd.api.types.is_bool_dtype(values.dtype):
        flags = values.notna().to_numpy()
    elif values.dtype == object:
        flags = np.fromiter((isinstance(v, bool | np.bool_) for v in values), dtype=bool,
                            count=len(values))
    else:
        return None
    return int(np.flatnonzero(flags)[0]) if flags.any() else None


def _refuse_booleans(src: Source, values: pd.Series, column: str, rows, *, label=None):
    """A boolean score (a JSON ``true``, a Parquet/Arrow bool column) is refused as the
    text ``True`` of a CSV file is: a score is a number (1/0 for a binary metric)."""
    pos = _boolean_cell(values)
    if pos is not None:
        row = int(pos if rows is None else rows[pos])
        raise InputFileError(
            f"{src.where(row, column, label=label)}: non-numeric score "
            f"{bool(values.iloc[pos])!r} (a boolean); scores must be numbers, 1/0 for a "
            f"binary metric")


def _to_float(value) -> float:
    """float of one cell, NaN when it is not a number (huge integers become inf)."""
    if isinstance(value, bool | int | float | np.number | decimal.Decimal):
        try:
            return float(value)
        except (OverflowError, ValueError):
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return math.nan


_SCALAR = (str, bool, int, float, np.number, np.bool_, decimal.Decimal)
_WHEN = (datetime.date, datetime.time, datetime.timedelta, np.datetime64, np.timedelta64)
_PLAIN_INFERRED = {"string", "integer", "floating", "mixed-integer-float", "boolean",
                   "decimal", "empty", "mixed-integer"}
_TIME_INFERRED = {"datetime", "datetime64", "date", "time", "timedelta", "timedelta64",
                  "period"}


def _refuse_cells(src: Source, values: pd.Series, column: str, role: str,
                  rows: np.ndarray | None = None, *, label: str | None = None) -> None:
    """A column must hold text or numbers (and, for scores, no dates or times): lists,
    objects, bytes... from JSON or Parquet are an error naming the first such cell."""
    dtype = values.dtype
    when = (pd.api.types.is_datetime64_any_dtype(dtype)
            or pd.api.types.is_timedelta64_dtype(dtype)
            or isinstance(dtype, pd.PeriodDtype | pd.IntervalDtype))
    if isinstance(dtype, pd.CategoricalDtype):
        values = values.astype(object)
        dtype = values.dtype
    pos: int | None
    if when:
        if role != "score":
            return  # a date as an identifier is its text
        pos = int(np.flatnonzero(values.notna().to_numpy())[0]) if values.notna().any() else 0
        what = f"dates/times ({dtype})"
    elif dtype != np.dtype(object):
        return
    else:
        inferred = pd.api.types.infer_dtype(values, skipna=True)
        if inferred in _PLAIN_INFERRED or (inferred in _TIME_INFERRED and role != "score"):
            return
        pos, what = None, None
        for i, cell in enumerate(values.to_numpy(dtype=object)):
            if cell is None or cell is pd.NA or cell is pd.NaT:
                continue
            if isinstance(cell, _WHEN):
                if role == "score":
                    pos, what = i, f"a date/time ({type(cell).__name__})"
                    break
                continue
            if not isinstance(cell, _SCALAR):
                pos, what = i, f"a value of type {type(cell).__name__}"
                break
        if pos is None:
            return
    row = int(pos if rows is None else rows[pos])
    cell = values.iloc[pos]
    need = "numbers" if role == "score" else "text or numbers"
    raise InputFileError(
        f"{src.where(row, column, label=label)}: {role} column holds {what}: "
        f"{show(cell)}; {role}s must be {need}")


def _dedupe(codes: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Merge codes whose names coincide as text (e.g. 1 and "1" in a JSON column)."""
    if len(set(names)) == len(names):
        return codes, names
    index: dict[str, int] = {}
    lut = np.array([index.setdefault(nm, len(index)) for nm in names], dtype=np.int64)
    return lut[codes], list(index)


def _ids(src: Source, frame: pd.DataFrame, columns: Sequence[str], role: str
         ) -> tuple[np.ndarray, list[str]]:
    """Identifiers of one column, or of several joined by KEY_JOIN, as (codes, names).

    Codes index ``names``; identifiers are kept as text verbatim (``str`` of the cell).
    """
    parts = []
    for col in columns:
        _refuse_cells(src, frame[col], col, role)
        pos = _boolean_cell(frame[col])
        if pos is not None:  # true == 1 to Python: a JSON true would become the id 1
            raise InputFileError(
                f"{src.where(pos, col)}: {role} column holds the boolean "
                f"{bool(frame[col].iloc[pos])!r}; {role}s must be text or numbers (write "
                f"\"true\" in quotes for a {role} named so)")
        codes, uniques = pd.factorize(frame[col], use_na_sentinel=True)
        if codes.size and codes.min() < 0:
            row = int(np.flatnonzero(codes < 0)[0])
            raise InputFileError(
                f"{src.where(row, col)}: empty {role} (the {role} column {col!r} needs a "
                f"value in every row){src.line_text(row)}"
            )
        parts.append((codes.astype(np.int64), [str(u) for u in uniques]))
    if len(parts) == 1:
        return _dedupe(*parts[0])
    key = np.zeros(len(frame), dtype=np.int64)
    for codes, names in parts:
        key = key * len(names) + codes
    codes, uniq = pd.factorize(key)
    joined = []
    for k in uniq:
        pieces = []
        for _, names in reversed(parts):
            k, r = divmod(int(k), len(names))
            pieces.append(names[r])
        joined.append(KEY_JOIN.join(reversed(pieces)))
    return _dedupe(codes.astype(np.int64), joined)


@overload
def column_list(name: str, value: object, default: str) -> tuple[list[str], bool]: ...


@overload
def column_list(name: str, value: object, default: None
                ) -> tuple[list[str] | None, bool]: ...


def column_list(name: str, value, default: str | None) -> tuple[list[str] | None, bool]:
    """Cleaned column argument: (list of column names or None, given explicitly)."""
    if value is None:
        return ([default] if default is not None else None), False
    if isinstance(value, str):
        return [value], True
    if isinstance(value, Sequence) and value and all(isinstance(v, str) for v in value):
        if name not in ("system_col", "instance_col") and len(value) > 1:
            raise ParameterError(f"`{name}` must name one column; got {list(value)!r}")
        return list(value), True
    several = " or a list of names" if name in ("system_col", "instance_col") else ""
    raise ParameterTypeError(f"`{name}` must be a column name (str){several}; got {value!r}")


def _need_columns(src: Source, frame: pd.DataFrame, columns: Sequence[str], arg: str) -> None:
    for col in columns:
        if col not in frame.columns:
            available = ", ".join(repr(c) for c in frame.columns)
            hint = ""
            if src.kind == "text" and frame.shape[1] == 1:
                hint = (f" (the header has one column only: is the file separated by "
                        f"something other than {sep_name(src.delimiter)}? pass sep=...)")
            raise InputFileError(
                f"{src.path}: no column {col!r} ({arg}); available columns: {available}{hint}"
            )


