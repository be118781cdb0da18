"""Line-aware parsing: tables from text, JSON (lines) and Parquet files, score columns
and identifier columns, with every error naming the file, the line and the column."""

from __future__ import annotations

import json
import lzma
import math
import warnings
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from multistat.errors import (
    DataValidationError,
    InputFileError,
    ParameterError,
    ParameterTypeError,
)
from multistat.io._sources import (
    _NA_TOKENS,
    _PANDAS_MAJOR,
    KEY_JOIN,
    _open_text,
    _plural,
    _resolve_source,
    _sep_name,
    _show,
    _Source,
    _split_line,
)


# ----------------------------------------------------------------------------- reading
def _read_text(src: _Source) -> pd.DataFrame:
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
        header = _split_line(src.first_line, src.sep)
        seen = set()
        for name in header:
            if name in seen:
                raise InputFileError(
                    f"{src.path}, line {src.first_lineno}: column {name!r} appears more than "
                    f"once in the header")
            seen.add(name)
    return frame


def _malformed(src: _Source, bad: tuple[int, str, int], expected: int | None) -> InputFileError:
    lineno, text, nfields = bad
    if expected is None:
        expected = (len(_split_line(src.first_line, src.sep)) if src.header
                    else src.n_fields)
    if nfields == 0:
        return InputFileError(
            f"{src.path}, line {lineno}: malformed line: blank line between data lines")
    return InputFileError(
        f"{src.path}, line {lineno}: malformed line: expected {expected} fields separated "
        f"by {_sep_name(src.sep)}, found {nfields}: {_show(text)}"
    )


def _check_short_rows(src: _Source, frame: pd.DataFrame, used: Sequence[str]) -> None:
    """Text tables: a row with NaN cells in a used column may be a line with too few
    fields (pandas pads those silently) -> malformed-line error."""
    if src.kind != "text" or frame.empty:
        return
    rows = np.flatnonzero(frame[list(used)].isna().to_numpy().any(axis=1))
    if rows.size == 0:
        return
    expected = frame.shape[1]
    for row, (lineno, text) in sorted(src.lines_of(rows).items()):
        n = len(_split_line(text, src.sep))
        if n < expected:
            raise _malformed(src, (lineno, text, n), expected)


def _read_json(src: _Source) -> pd.DataFrame:
    kwargs = {"dtype": False, "compression": "infer", "lines": src.kind == "jsonl"}
    if _PANDAS_MAJOR < 3:  # pragma: no cover - pandas 2 converts date-like columns
        kwargs.update(convert_dates=False, keep_default_dates=False)
    try:
        with warnings.catch_warnings():
            # pandas deprecation noise about rows that are not objects; checked just below
            warnings.simplefilter("ignore")
            frame = pd.read_json(src.path, **kwargs)
        bad = not all(isinstance(c, str) for c in frame.columns)  # a row was not an object
    except ValueError as exc:
        if src.kind != "jsonl":
            raise InputFileError(f"{src.path}: not valid JSON ({exc})") from None
        bad = True
    if bad and src.kind == "jsonl":
        with _open_text(src.path) as fh:  # decoding already succeeded in _resolve_source
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as err:
                    raise InputFileError(
                        f"{src.path}, line {lineno}: not valid JSON ({err.msg}): "
                        f"{_show(line.rstrip())}") from None
                if not isinstance(obj, dict):
                    raise InputFileError(
                        f"{src.path}, line {lineno}: expected a JSON object per line, "
                        f"found {type(obj).__name__}: {_show(line.rstrip())}") from None
        raise InputFileError(f"{src.path}: not valid JSON lines")  # pragma: no cover
    if bad:
        raise InputFileError(f"{src.path}: expected a JSON array of objects (records)")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _read_parquet_table(src: _Source) -> pd.DataFrame:
    try:
        return pd.read_parquet(src.path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several unrelated classes
        raise InputFileError(f"{src.path}: not a readable Parquet file ({exc})") from None


def _read_table(src: _Source) -> pd.DataFrame:
    if src.kind == "text":
        frame = _read_text(src)
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
    src = _resolve_source(path, sep=None)
    frame = _read_table(src)
    frame.columns = [str(c) for c in frame.columns]
    if src.kind == "text":
        _check_short_rows(src, frame, list(frame.columns))  # NaN left: empty fields
        if keep_empty:
            frame = frame.fillna("")
    frame.attrs["source"] = str(src.path)
    return frame


def _scores(src: _Source, values: pd.Series, column: str, rows: np.ndarray | None = None,
            *, label: str | None = None) -> np.ndarray:
    """float64 scores of one column; NaN where the file holds a missing value.

    Raises InputFileError at the first cell that is neither a number nor a missing-value
    token, DataValidationError at the first infinite score. ``rows`` maps positions to
    source rows (defaults to the position).
    """
    if pd.api.types.is_bool_dtype(values.dtype) or pd.api.types.is_numeric_dtype(values.dtype):
        scores = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        scores = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64,
                                                                 na_value=np.nan)
        candidates = np.flatnonzero(np.isnan(scores))
        if candidates.size:
            raw = values.iloc[candidates]
            text = raw.astype(object)
            for pos, cell in zip(candidates, text):
                if cell is None or (isinstance(cell, float) and math.isnan(cell)):
                    continue
                if cell is pd.NA or (isinstance(cell, str) and cell.strip().lower()
                                     in _NA_TOKENS):
                    continue
                row = int(pos if rows is None else rows[pos])
                raise InputFileError(
                    f"{src.where(row, column, label=label)}: non-numeric score {_show(cell)}"
                )
    inf = np.flatnonzero(np.isinf(scores))
    if inf.size:
        pos = inf[0]
        row = int(pos if rows is None else rows[pos])
        raise DataValidationError(
            f"{src.where(row, column, label=label)}: infinite score {float(scores[pos])!r} "
            f"({_plural(inf.size, 'infinite score')} in this column); scores must be finite"
        )
    return scores


def _dedupe(codes: np.ndarray, names: list[str]) -> tuple[np.ndarray, list[str]]:
    """Merge codes whose names coincide as text (e.g. 1 and "1" in a JSON column)."""
    if len(set(names)) == len(names):
        return codes, names
    index: dict[str, int] = {}
    lut = np.array([index.setdefault(nm, len(index)) for nm in names], dtype=np.int64)
    return lut[codes], list(index)


def _ids(src: _Source, frame: pd.DataFrame, columns: Sequence[str], role: str
         ) -> tuple[np.ndarray, list[str]]:
    """Identifiers of one column, or of several joined by KEY_JOIN, as (codes, names).

    Codes index ``names``; identifiers are kept as text verbatim (``str`` of the cell).
    """
    parts = []
    for col in columns:
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


def _column_list(name: str, value, default: str | None) -> tuple[list[str] | None, bool]:
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


def _need_columns(src: _Source, frame: pd.DataFrame, columns: Sequence[str], arg: str) -> None:
    for col in columns:
        if col not in frame.columns:
            available = ", ".join(repr(c) for c in frame.columns)
            hint = ""
            if src.kind == "text" and frame.shape[1] == 1:
                hint = (f" (the header has one column only: is the file separated by "
                        f"something other than {_sep_name(src.sep)}? pass sep=...)")
            raise InputFileError(
                f"{src.path}: no column {col!r} ({arg}); available columns: {available}{hint}"
            )


