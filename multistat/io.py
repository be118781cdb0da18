"""Read per-instance scores into one validated long frame; write and read Parquet.

Every loader ends in the same long frame with exactly the columns ``dataset, system,
metric, instance, score`` (the first four as strings, ``score`` as float64) and two
entries in ``frame.attrs``:

``frame.attrs["metrics"]``
    ``{metric: {"higher_is_better": bool, "kind": "mean" | "binary"}}``;
``frame.attrs["dropped"]``
    one human-readable line per dropped instance (empty when nothing was dropped).

Nothing is dropped or repaired silently: every dropped instance is listed in
``attrs["dropped"]`` and announced by a :class:`~multistat.errors.DroppedDataWarning`.
Every error is a :class:`~multistat.errors.MultistatError` with a one-line message that
names the file, the line (or row) and column, and what was found there.

The layouts (``format=``):

``"long"``
    one row per score, columns for system, instance, score and optionally metric and
    dataset (CSV, TSV, whitespace-separated text, JSON lines, JSON records, Parquet).
``"wide"``
    one row per instance and one column per system (optionally an instance, a metric and
    a dataset column); or one such file per metric, given as ``{metric: path}``.
``"pairs"``
    the NLPStatTest two-column file: two whitespace-separated numbers per line, the scores
    of systems ``A`` and ``B`` on one instance.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import json
import lzma
import math
import warnings
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from multistat._validation import check_choice
from multistat.errors import (
    DataValidationError,
    DroppedDataWarning,
    InputFileError,
    ParameterError,
    ParameterTypeError,
)

__all__ = ["COLUMNS", "FORMATS", "read_parquet", "read_scores", "write_parquet"]

#: Columns of the validated long frame, in this order.
COLUMNS: tuple[str, ...] = ("dataset", "system", "metric", "instance", "score")
#: Layouts understood by :func:`read_scores`.
FORMATS: tuple[str, ...] = ("long", "wide", "pairs")
#: Schema-metadata key under which :func:`write_parquet` stores the JSON metadata.
PARQUET_METADATA_KEY = b"multistat"
#: Separator used when ``system_col``/``instance_col`` name several columns.
KEY_JOIN = "/"

_WHITESPACE = r"\s+"
_COMPRESSIONS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_EXT_SEP = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".txt": _WHITESPACE}
# score cells read as these (case-insensitive, stripped) are missing values (NaN)
_NA_TOKENS = frozenset({"", "na", "nan", "-nan", "+nan", "n/a", "#n/a", "null", "none"})
_SHOW = 80  # characters of a line shown in an error message
_EXAMPLES = 5  # names/values listed before "and N more"
_PANDAS_MAJOR = int(pd.__version__.split(".")[0])


# ----------------------------------------------------------------------------- helpers
def _show(value, limit: int = _SHOW) -> str:
    """repr of a (truncated) value: one line, control characters escaped."""
    text = str(value)
    if len(text) > limit:
        text = text[:limit] + "..."
    return repr(text)


def _names(values: Iterable, limit: int = _EXAMPLES) -> str:
    values = list(values)
    shown = ", ".join(repr(str(v)) for v in values[:limit])
    if len(values) > limit:
        shown += f" and {len(values) - limit} more"
    return shown


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _split_suffix(path: Path) -> tuple[str, str | None]:
    """(table suffix, compression suffix) of a file name, both lower-case."""
    suffixes = [s.lower() for s in path.suffixes]
    comp = suffixes[-1] if suffixes and suffixes[-1] in _COMPRESSIONS else None
    if comp:
        suffixes = suffixes[:-1]
    return (suffixes[-1] if suffixes else ""), comp


def _stem(path: Path) -> str:
    """File name without the compression and the table suffix (``scores.csv.gz`` -> ``scores``)."""
    name = path.name
    ext, comp = _split_suffix(path)
    for suffix in (comp, ext):
        if suffix and name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.name


def _open_text(path: Path):
    _, comp = _split_suffix(path)
    opener = _COMPRESSIONS.get(comp, open)
    return opener(path, "rt", encoding="utf-8-sig", newline=None)


def _normalise_sep(sep) -> str | None:
    if sep is None:
        return None
    if not isinstance(sep, str):
        raise ParameterTypeError(f"`sep` must be a string; got {sep!r}")
    if sep in (_WHITESPACE, "whitespace", r"\s*", " +"):
        return _WHITESPACE
    if sep in ("\\t", "tab"):
        return "\t"
    if len(sep) == 1 and sep not in "\r\n\"":
        return sep
    raise ParameterError(
        f"`sep` must be one character (e.g. ',' or '\\t') or r'\\s+' for whitespace; "
        f"got {sep!r}"
    )


def _split_line(text: str, sep: str) -> list[str]:
    if sep == _WHITESPACE:
        return text.split()
    return next(csv.reader([text], delimiter=sep), [])


def _sep_name(sep: str) -> str:
    return {_WHITESPACE: "whitespace", "\t": "tabs", ",": "commas"}.get(sep, repr(sep))


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------- sources
@dataclass
class _Source:
    """One input file and how its rows map back to lines for error messages."""

    path: Path
    kind: str  # "text" | "jsonl" | "json" | "parquet"
    sep: str | None = None  # text only
    header: bool = True  # text only
    skip_blank: bool = True  # text only
    first_line: str | None = None  # first non-blank line (text/jsonl)
    first_lineno: int = 1  # its line number
    _cache: dict = field(default_factory=dict, repr=False)

    # -- locating rows -----------------------------------------------------------------
    def lines_of(self, rows: Iterable[int]) -> dict[int, tuple[int, str]]:
        """``{row: (line number, line text)}`` for data rows (0-based, as parsed).

        One pass over the file, stopping after the last requested row; used only to
        write error messages and drop reports, never on the fast path.
        """
        want = sorted({int(r) for r in rows} - set(self._cache))
        if want and self.kind in ("text", "jsonl"):
            last = want[-1]
            targets = set(want)
            row = -1
            header = self.kind == "text" and self.header
            with _open_text(self.path) as fh:
                for lineno, line in enumerate(fh, 1):
                    text = line.rstrip("\r\n")
                    if (self.skip_blank or header or self.kind == "jsonl") and not text.strip():
                        continue
                    if header:  # the header is the first non-blank line (as for pandas)
                        header = False
                        continue
                    row += 1
                    if row in targets:
                        self._cache[row] = (lineno, text)
                    if row >= last:
                        break
        return {r: self._cache[r] for r in rows if r in self._cache}

    def place(self, row: int) -> str:
        """``"line 17"`` (text, JSON lines), ``"record 16"`` (JSON array), ``"row 16"``."""
        if self.kind in ("text", "jsonl"):
            found = self.lines_of([row]).get(row)
            return f"line {found[0]}" if found else f"data row {row + 1}"
        if self.kind == "json":
            return f"record {row}"
        return f"row {row}"

    def where(self, row: int, column: str | None = None, *, label: str | None = None) -> str:
        """``"<path>, line 17, column 'score'"`` (``label`` replaces ``column 'score'``)."""
        col = f", column {column!r}" if column is not None else ""
        if label is not None:
            col = f", {label}"
        return f"{self.path}, {self.place(row)}{col}"

    def line_text(self, row: int) -> str:
        found = self.lines_of([row]).get(row)
        return f": {_show(found[1])}" if found else ""

    def first_bad_line(self, expected: int | None) -> tuple[int, str, int] | None:
        """First line whose number of fields differs from ``expected`` (from the header
        when None); blank lines count only if ``skip_blank`` is False and they are
        followed by data. Returns ``(line number, text, fields)``."""
        pending_blank = None
        with _open_text(self.path) as fh:
            for lineno, line in enumerate(fh, 1):
                text = line.rstrip("\r\n")
                if not text.strip():
                    if not self.skip_blank and pending_blank is None:
                        pending_blank = (lineno, text, 0)
                    continue
                if pending_blank is not None:
                    return pending_blank
                fields = _split_line(text, self.sep)
                if expected is None:
                    expected = len(fields)
                    continue
                if len(fields) != expected:
                    return lineno, text, len(fields)
        return None


def _resolve_source(path, *, sep) -> _Source:
    if not isinstance(path, str | Path):
        raise ParameterTypeError(
            f"`path` must be a file path (str or pathlib.Path), or for format='wide' a "
            f"mapping {{metric: path}}; got {type(path).__name__}"
        )
    path = Path(path)
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    if path.is_dir():
        raise InputFileError(f"{path}: is a directory, not a score file")
    ext, _ = _split_suffix(path)
    if ext == ".parquet":
        kind = "parquet"
    elif ext == ".jsonl":
        kind = "jsonl"
    elif ext == ".json":
        kind = "json"
    else:
        kind = "text"
    if kind != "text" and sep is not None:
        raise ParameterError(f"`sep` applies to delimited text files only; {path} is {kind}")
    src = _Source(path=path, kind=kind)
    if kind == "parquet":
        return src
    try:
        with _open_text(path) as fh:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    src.first_line, src.first_lineno = line.rstrip("\r\n"), lineno
                    break
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})")
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise InputFileError(f"{path}: cannot be read ({exc})") from None
    if src.first_line is None:
        raise InputFileError(f"{path}: the file is empty")
    if kind == "json" and not src.first_line.lstrip().startswith("["):
        src.kind = "jsonl"  # a .json file holding JSON lines
    if src.kind == "text":
        src.sep = sep if sep is not None else _sniff_sep(src.first_line, ext)
    return src


def _sniff_sep(first_line: str, ext: str) -> str:
    """The extension's delimiter, unless the first line does not contain it; then a tab,
    a comma or whitespace, whichever the first line holds (in that order)."""
    sep = _EXT_SEP.get(ext, _WHITESPACE)
    if sep == _WHITESPACE:
        if len(first_line.split()) > 1:
            return sep
    elif sep in first_line:
        return sep
    for candidate in ("\t", ","):
        if candidate in first_line:
            return candidate
    return _WHITESPACE


def _looks_like_pairs(src: _Source) -> bool:
    """A plain text file whose first non-blank line holds only numbers (no header)."""
    if src.kind != "text" or src.first_line is None:
        return False
    tokens = src.first_line.split() if src.sep == _WHITESPACE else _split_line(
        src.first_line, src.sep)
    return bool(tokens) and all(_is_number(t) for t in tokens)


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
            bad = src.first_bad_line(None if src.header else 2)
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
        expected = (len(_split_line(src.first_line, src.sep)) if src.header else 2)
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


# ----------------------------------------------------------------------------- layouts
_ROLES = ("dataset", "system", "metric", "instance")


@dataclass
class _Long:
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
class _Raw:
    """Collects chunks of long data from one or several files."""

    chunks: list = field(default_factory=list)

    def add(self, k: int, score, rows, **ids):
        """``ids[role]`` is one fixed name (str) or ``(codes, names)``."""
        n = len(score)
        coded = {}
        for role in _ROLES:
            value = ids[role]
            if isinstance(value, str):
                value = (np.zeros(n, dtype=np.int64), [value])
            coded[role] = value
        self.chunks.append((coded, np.asarray(score, dtype=np.float64),
                            np.full(n, k, dtype=np.int32), np.asarray(rows, dtype=np.int64)))

    def long(self) -> _Long:
        codes, names = {}, {}
        for role in _ROLES:
            index: dict[str, int] = {}
            parts = []
            for coded, *_ in self.chunks:
                chunk_codes, chunk_names = coded[role]
                lut = np.array([index.setdefault(nm, len(index)) for nm in chunk_names],
                               dtype=np.int64)
                parts.append(lut[chunk_codes])
            codes[role] = np.concatenate(parts)
            names[role] = list(index)
        return _Long(codes, names,
                     np.concatenate([c[1] for c in self.chunks]),
                     np.concatenate([c[2] for c in self.chunks]),
                     np.concatenate([c[3] for c in self.chunks]))


def _long_layout(src, frame, k, raw, *, system_col, metric_col, instance_col, score_col,
                 dataset_col, metric, dataset, default_dataset, explicit):
    _need_columns(src, frame, system_col, "system_col")
    _need_columns(src, frame, instance_col, "instance_col")
    _need_columns(src, frame, [score_col], "score_col")
    metric_value = _fixed_or_column(src, frame, "metric", metric_col, metric, score_col,
                                    explicit)
    dataset_value = _fixed_or_column(src, frame, "dataset", dataset_col, dataset,
                                     default_dataset, explicit)
    used = [*system_col, *instance_col, score_col]
    used += [c for c in (metric_value, dataset_value) if isinstance(c, _Col)]
    _check_short_rows(src, frame, [c.name if isinstance(c, _Col) else c for c in used])
    systems = _ids(src, frame, system_col, "system")
    instances = _ids(src, frame, instance_col, "instance")
    metrics = (_ids(src, frame, [metric_value.name], "metric")
               if isinstance(metric_value, _Col) else metric_value)
    datasets = (_ids(src, frame, [dataset_value.name], "dataset")
                if isinstance(dataset_value, _Col) else dataset_value)
    scores = _scores(src, frame[score_col], score_col)
    raw.add(k, scores, np.arange(len(frame)), dataset=datasets, system=systems,
            metric=metrics, instance=instances)


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


def _wide_layout(src, frame, k, raw, *, metric_col, instance_col, dataset_col, metric,
                 dataset, default_dataset, systems, explicit):
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
    _check_short_rows(src, frame, id_cols + system_cols)
    n = len(frame)
    metrics = (_ids(src, frame, [metric_value.name], "metric")
               if isinstance(metric_value, _Col) else metric_value)
    datasets = (_ids(src, frame, [dataset_value.name], "dataset")
                if isinstance(dataset_value, _Col) else dataset_value)
    if instance_value:
        instances = _ids(src, frame, instance_value, "instance")
    else:  # rows numbered from 0 within each (dataset, metric)
        group = pd.DataFrame({
            "d": datasets[0] if isinstance(datasets, tuple) else np.zeros(n, np.int64),
            "m": metrics[0] if isinstance(metrics, tuple) else np.zeros(n, np.int64)})
        counter = group.groupby(["d", "m"], sort=False).cumcount().to_numpy(np.int64)
        instances = (counter, [str(i) for i in range(int(counter.max()) + 1)])
    rows = np.arange(n)
    for col in system_cols:
        scores = _scores(src, frame[col], col)
        raw.add(k, scores, rows, dataset=datasets, system=str(col), metric=metrics,
                instance=instances)


def _pairs_layout(src, k, raw, *, systems, metric, dataset):
    src.header = False
    src.skip_blank = False
    if src.sep is None:
        src.sep = _WHITESPACE
    frame = _read_text(src)
    blank = frame.isna().all(axis=1).to_numpy()
    n = len(blank) - int(np.argmax(~blank[::-1])) if (~blank).any() else 0
    if n == 0:
        raise InputFileError(f"{src.path}: the file is empty")
    frame = frame.iloc[:n]
    if frame.shape[1] != 2 or frame.isna().to_numpy().any():
        bad = src.first_bad_line(2)
        if bad is not None:
            raise _malformed(src, bad, 2)
    rows = np.arange(n)
    instances = (rows.astype(np.int64), [str(i) for i in range(n)])
    for j, name in enumerate(systems):
        scores = _scores(src, frame.iloc[:, j], name, label=f"column {j + 1} (system {name!r})")
        raw.add(k, scores, rows, dataset=dataset, system=name, metric=metric,
                instance=instances)


# ----------------------------------------------------------------------------- validation
def _appearance(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Relabel integer codes 0, 1, ... in order of first appearance; also the old codes."""
    new, uniq = pd.factorize(codes)
    return new.astype(np.int64), np.asarray(uniq, dtype=np.int64)


def _validate(raw: _Long, sources: list[_Source], *, missing: str,
              lower_is_better: tuple[str, ...]):
    """Checks of the data model; returns (sorted frame, metrics meta, dropped lines)."""
    label = sources[0].path if len(sources) == 1 else ", ".join(str(s.path) for s in sources)
    codes, score = raw.codes, raw.score
    ds_c, ds_u = _appearance(codes["dataset"])
    met_c, met_u = _appearance(codes["metric"])
    sys_g, inst_g = codes["system"], codes["instance"]
    ds_names = [raw.names["dataset"][u] for u in ds_u]
    met_names = [raw.names["metric"][u] for u in met_u]
    sys_names, inst_names = raw.names["system"], raw.names["instance"]

    unknown = [m for m in lower_is_better if m not in met_names]
    if unknown:
        raise ParameterError(
            f"`lower_is_better` names unknown metric(s) {_names(unknown)}; the metrics are "
            f"{_names(met_names, 20)}"
        )

    keys = pd.DataFrame({"d": ds_c, "s": sys_g, "m": met_c, "i": inst_g})
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        n_extra = int(keys.duplicated().sum())
        f = int(np.flatnonzero(dup)[0])
        same = np.flatnonzero(dup & (ds_c == ds_c[f]) & (sys_g == sys_g[f])
                              & (met_c == met_c[f]) & (inst_g == inst_g[f]))
        places = []
        for i in same[:3]:
            src = sources[raw.src[i]]
            places.append(src.place(int(raw.row[i])) if len(sources) == 1
                          else src.where(int(raw.row[i])))
        values = score[same]
        agree = ("identical scores" if np.allclose(values, values[0], equal_nan=True)
                 else f"scores {_names([repr(float(v)) for v in values[:3]])}")
        raise DataValidationError(
            f"{label}: {_plural(n_extra, 'duplicated row')} for the same (dataset, system, "
            f"metric, instance); first: dataset {ds_names[ds_c[f]]!r}, system "
            f"{sys_names[sys_g[f]]!r}, metric {met_names[met_c[f]]!r}, instance "
            f"{inst_names[inst_g[f]]!r} at {' and '.join(places)} ({agree}); if another "
            f"column tells the rows apart, add it to system_col or instance_col"
        )

    isnan = np.isnan(score)
    keep = np.ones(len(score), dtype=bool)
    dropped: list[str] = []
    lut = np.full(len(sys_names), -1, dtype=np.int64)
    for d, ds_name in enumerate(ds_names):
        ds_rows = np.flatnonzero(ds_c == d)
        systems = pd.unique(sys_g[ds_rows])  # in order of first appearance
        if len(systems) < 2:
            raise DataValidationError(
                f"{label}: dataset {ds_name!r} has {_plural(len(systems), 'system')} "
                f"({_names(sys_names[s] for s in systems)}); a comparison needs at least 2 "
                f"(check system_col or the format)"
            )
        lut[:] = -1
        lut[systems] = np.arange(len(systems))
        n_sys = len(systems)
        for m in pd.unique(met_c[ds_rows]):
            pos = ds_rows[met_c[ds_rows] == m]
            inst_local, inst_uniq = pd.factorize(inst_g[pos])
            n_inst = len(inst_uniq)
            cell = lut[sys_g[pos]] * n_inst + inst_local
            present = np.bincount(cell, minlength=n_sys * n_inst).reshape(n_sys, n_inst) > 0
            nan_cell = np.zeros(n_sys * n_inst, dtype=bool)
            nan_cell[cell[isnan[pos]]] = True
            nan_cell = nan_cell.reshape(n_sys, n_inst)

            def inst_name(j, _u=inst_uniq):
                return inst_names[_u[j]]

            where = f"dataset {ds_name!r}, metric {met_names[m]!r}"
            if missing == "raise":
                if nan_cell.any():
                    first = pos[np.flatnonzero(isnan[pos])[0]]
                    src = sources[raw.src[first]]
                    raise DataValidationError(
                        f"{src.where(int(raw.row[first]))}: NaN score (system "
                        f"{sys_names[sys_g[first]]!r}, {where}, instance "
                        f"{inst_names[inst_g[first]]!r}; "
                        f"{_plural(int(nan_cell.sum()), 'NaN score')} for this metric); pass "
                        f"missing='drop' to drop those instances for every system"
                    )
                absent = ~present
                if absent.any():
                    incomplete = np.flatnonzero(absent.any(axis=1))
                    s = int(incomplete[0])
                    lacking = np.flatnonzero(absent[s])
                    what = (f"has no scores at all (other systems have {n_inst} instances)"
                            if lacking.size == n_inst else
                            f"lacks {lacking.size} of {n_inst} instances (e.g. "
                            f"{_names([inst_name(j) for j in lacking[:3]], 3)})")
                    more = ("" if incomplete.size == 1
                            else f"; {incomplete.size} systems are incomplete")
                    raise DataValidationError(
                        f"{label}: {where}: system {sys_names[systems[s]]!r} {what}{more}; "
                        f"pass missing='drop' to keep only the instances every system has"
                    )
            else:
                bad_inst = (~present | nan_cell).any(axis=0)
                if bad_inst.any():
                    idx = np.flatnonzero(bad_inst)
                    for j in idx:
                        reasons = []
                        nan_sys = [sys_names[systems[s]] for s in np.flatnonzero(nan_cell[:, j])]
                        abs_sys = [sys_names[systems[s]] for s in np.flatnonzero(~present[:, j])]
                        if nan_sys:
                            reasons.append(f"NaN score for {_names(nan_sys)}")
                        if abs_sys:
                            reasons.append(f"no row for {_names(abs_sys)}")
                        dropped.append(f"{where}, instance {inst_name(j)!r}: "
                                       f"{'; '.join(reasons)}")
                    keep[pos[bad_inst[inst_local]]] = False
                    warnings.warn(
                        f"{label}: {where}: dropped {idx.size} of {n_inst} instances for all "
                        f"{n_sys} systems ({_plural(int(nan_cell.sum()), 'NaN score')}, "
                        f"{_plural(int((~present).sum()), 'absent row')}; e.g. instance(s) "
                        f"{_names([inst_name(j) for j in idx[:3]], 3)}); the full list is in "
                        f"frame.attrs['dropped']", DroppedDataWarning, stacklevel=3
                    )
                    if n_inst - idx.size < 2:
                        raise DataValidationError(
                            f"{label}: {where}: {_plural(n_inst - idx.size, 'instance')} left "
                            f"after dropping {idx.size} with missing or NaN scores; at least "
                            f"2 are needed"
                        )
            if n_inst < 2:
                raise DataValidationError(
                    f"{label}: {where} has {_plural(n_inst, 'instance')} "
                    f"({_names([inst_name(j) for j in range(n_inst)])}); at least 2 are "
                    f"needed (check instance_col)"
                )

    # deterministic order: dataset, metric, system, instance, each by first appearance in
    # the file (keys taken before dropping, so dropped rows do not reorder the rest)
    sys_key, _ = _appearance(ds_c * len(sys_names) + sys_g)
    inst_key, _ = _appearance(ds_c * len(inst_names) + inst_g)
    order = np.lexsort((inst_key, sys_key, met_c, ds_c))
    order = order[keep[order]]
    out = pd.DataFrame({
        "dataset": np.asarray(ds_names, dtype=object)[ds_c[order]],
        "system": np.asarray(sys_names, dtype=object)[sys_g[order]],
        "metric": np.asarray(met_names, dtype=object)[met_c[order]],
        "instance": np.asarray(inst_names, dtype=object)[inst_g[order]],
    }).astype(str)
    out["score"] = score[order]
    kept_met = met_c[order]
    metrics = {}
    for m, met in enumerate(met_names):
        values = out["score"].to_numpy()[kept_met == m]
        binary = bool(np.isin(values, (0.0, 1.0)).all())
        metrics[met] = {"higher_is_better": met not in lower_is_better,
                        "kind": "binary" if binary else "mean"}
    return out, metrics, dropped


# ----------------------------------------------------------------------------- public
def read_scores(path, *, format=None, system_col=None, metric_col=None, instance_col=None,
                score_col=None, dataset_col=None, metric=None, dataset=None,
                lower_is_better=(), missing="raise", systems=None, sep=None) -> pd.DataFrame:
    """Read per-instance scores into one validated long frame.

    Parameters
    ----------
    path : str or pathlib.Path, or mapping {metric: path}
        The score file. ``.csv``, ``.tsv``, ``.txt`` (whitespace-separated), ``.jsonl``,
        ``.json``, ``.parquet``, each optionally compressed (``.gz``, ``.bz2``, ``.xz``);
        any other name is read as delimited text. With ``format="wide"`` a mapping
        ``{metric: path}`` reads one wide file per metric.
    format : {"long", "wide", "pairs"} or None
        Layout of the file; detected when None (see Notes).
    system_col, instance_col : str or list of str, optional
        Column(s) naming the system / the instance (long: defaults ``"system"``,
        ``"instance"``; wide: ``instance_col`` defaults to an ``"instance"`` column if
        present, else rows are numbered from 0). Several columns are joined with ``"/"``
        into one name (e.g. ``["summary_type", "system"]`` -> ``"abs/bart_out"``).
    score_col : str, optional
        Column of the scores (long; default ``"score"``).
    metric_col, dataset_col : str, optional
        Column naming the metric / the dataset (default ``"metric"`` / ``"dataset"`` when
        the file has such a column).
    metric, dataset : str, optional
        Fixed metric / dataset name for a file without such a column. Defaults: the
        metric is the score column's name (long) or ``"score"`` (wide, pairs); the
        dataset is the file name without its suffixes (``scores.csv.gz`` -> ``scores``),
        or for a ``{metric: path}`` mapping the name of the first file's folder.
    lower_is_better : str or sequence of str
        Metrics for which a smaller score is better (e.g. error counts, MQM penalties).
    missing : {"raise", "drop"}
        What to do with a NaN score or a system that lacks an instance another system
        has: ``"raise"`` a :class:`~multistat.errors.DataValidationError` (default), or
        ``"drop"`` that instance of that metric for *every* system, so pairs stay paired.
    systems : pair of str or list of str, optional
        ``pairs``: the names of the two columns' systems (default ``("A", "B")``).
        ``wide``: the columns to read as systems (default every column that is not the
        instance, metric or dataset column).
    sep : str, optional
        Field separator of a text file: one character, or ``r"\\s+"`` (any whitespace).

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset, system, metric, instance`` (str) and ``score`` (float64),
        sorted by dataset, metric, system, instance, each in the order of first
        appearance in the file (so instances keep file order). ``attrs["metrics"]`` is
        ``{metric: {"higher_is_better": bool, "kind": "mean" | "binary"}}`` (``binary``
        when every score of the metric is 0 or 1); ``attrs["dropped"]`` lists every
        dropped instance; ``attrs["source"]`` records the paths and the format.

    Raises
    ------
    InputFileError
        File missing, empty, not decodable; malformed line (line number and content);
        non-numeric score (line/row, column, value); unknown column (the columns the
        file has are listed).
    DataValidationError
        Infinite or (with ``missing="raise"``) NaN score; duplicated (dataset, system,
        metric, instance); a system lacking instances of a metric; fewer than 2 systems
        in a dataset or 2 instances of a metric.
    ParameterError, ParameterTypeError
        Unknown format, unknown ``missing`` policy, unknown metric in
        ``lower_is_better``, an option that does not apply to the format.

    Notes
    -----
    Format detection (``format=None``):

    1. a mapping ``{metric: path}`` is ``"wide"``;
    2. a delimited text file (any name but ``.json``, ``.jsonl``, ``.parquet``) whose
       first non-blank line holds numbers only is ``"pairs"`` (a header line is never all
       numbers);
    3. otherwise the table is ``"long"`` if it has the system and score columns
       (``system_col``/``score_col`` or ``"system"``/``"score"``), or if either option
       was given, and ``"wide"`` if not.

    Separator of a text file: ``sep`` if given; else ``","`` for ``.csv``, a tab for
    ``.tsv``, whitespace for anything else; if the first line does not contain the
    extension's delimiter, a tab, a comma or whitespace is used, whichever the first
    line holds first in that order (so a space-separated ``.tsv`` reads as intended).
    Cells ``""``, ``NA``, ``NaN``, ``null``, ``None``, ``N/A`` (any case) in a score
    column are missing values; identifiers are read as text verbatim (``"007"`` stays
    ``"007"``). Blank lines are skipped in tables; in ``pairs`` files they are allowed
    only at the end (NLPStatTest rejects them anywhere). Line numbers in messages count
    physical lines from 1, header included.

    ``missing="drop"`` works per (dataset, metric): an instance is dropped when any
    system has a NaN score or no row for it; each dropped instance is listed in
    ``attrs["dropped"]`` and one :class:`~multistat.errors.DroppedDataWarning` per
    (dataset, metric) gives the count. Columns a layout does not use are ignored.

    Examples
    --------
    >>> from multistat.io import read_scores  # doctest: +SKIP
    >>> read_scores("zhen.avg_seg_scores.tsv", score_col="mqm_avg_score",
    ...             instance_col="seg_id", metric="mqm", lower_is_better="mqm")  # doctest: +SKIP
    """
    fmt = None if format is None else check_choice("format", format, FORMATS)
    missing = check_choice("missing", missing, ("raise", "drop"))
    sep = _normalise_sep(sep)
    if isinstance(lower_is_better, str):
        lower_is_better = (lower_is_better,)
    if lower_is_better is None:
        lower_is_better = ()
    if isinstance(lower_is_better, Iterable):
        lower_is_better = tuple(lower_is_better)
    if not isinstance(lower_is_better, tuple) or not all(
            isinstance(m, str) for m in lower_is_better):
        raise ParameterTypeError(
            f"`lower_is_better` must be a metric name or a sequence of names; got "
            f"{lower_is_better!r}")
    for name, value in (("metric", metric), ("dataset", dataset)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ParameterTypeError(f"`{name}` must be a non-empty string; got {value!r}")
    cols = {}
    explicit = {}
    for name, value, default, role in (
            ("system_col", system_col, "system", "system"),
            ("instance_col", instance_col, "instance", "instance"),
            ("score_col", score_col, "score", "score"),
            ("metric_col", metric_col, None, "metric"),
            ("dataset_col", dataset_col, None, "dataset")):
        cols[role], explicit[role] = _column_list(name, value, default)
    for role in ("metric", "dataset"):
        fixed = metric if role == "metric" else dataset
        if explicit[role] and fixed is not None:
            raise ParameterError(
                f"pass either `{role}_col` (a column) or `{role}=` (one fixed name), not both")

    # ---- which files, which layout
    if isinstance(path, Mapping):
        if fmt not in (None, "wide"):
            raise ParameterError(
                f"a mapping {{metric: path}} is read as format='wide'; got format={fmt!r}")
        fmt = "wide"
        if metric is not None or explicit["metric"]:
            raise ParameterError(
                "with a mapping {metric: path} the metric names come from the mapping keys; "
                "drop `metric`/`metric_col`")
        if not path:
            raise ParameterError("the mapping {metric: path} is empty")
        items = []
        for key, value in path.items():
            if not isinstance(key, str) or not key:
                raise ParameterTypeError(
                    f"metric names (mapping keys) must be non-empty strings; got {key!r}")
            items.append((key, _resolve_source(value, sep=sep)))
        default_dataset = items[0][1].path.resolve().parent.name or "dataset"
    else:
        src = _resolve_source(path, sep=sep)
        items = [(metric, src)]
        default_dataset = _stem(src.path)
        if fmt is None and (explicit["system"] or explicit["score"]):
            fmt = "long"
        if fmt is None and _looks_like_pairs(src):
            fmt = "pairs"
    dataset_fixed = dataset if dataset is not None else default_dataset
    if fmt == "pairs":
        bad = [n for n in ("system_col", "instance_col", "score_col", "metric_col",
                           "dataset_col") if explicit[n.removesuffix("_col")]]
        if bad:
            names = ", ".join(f"`{b}`" for b in bad)
            raise ParameterError(f"format='pairs' has no named columns; drop {names}")
        pair_names = ("A", "B") if systems is None else systems
        if (isinstance(pair_names, str) or not isinstance(pair_names, Sequence)
                or len(pair_names) != 2 or not all(isinstance(s, str) and s for s in pair_names)):
            raise ParameterError(
                f"`systems` for format='pairs' must be two names, e.g. ('A', 'B'); got "
                f"{systems!r}")
        if pair_names[0] == pair_names[1]:
            raise ParameterError(f"`systems` must be two different names; got {systems!r}")
    elif systems is not None:
        if fmt == "long":
            raise ParameterError(
                "`systems` applies to format='pairs' (names) and 'wide' (columns); for "
                "long tables use system_col")
        if isinstance(systems, str) or not isinstance(systems, Sequence) or not all(
                isinstance(s, str) for s in systems):
            raise ParameterTypeError(f"`systems` must be a list of column names; got {systems!r}")

    raw = _Raw()
    sources = []
    layouts = set()
    for k, (item_metric, src) in enumerate(items):
        sources.append(src)
        if fmt == "pairs":
            _pairs_layout(src, k, raw, systems=tuple(pair_names),
                          metric=item_metric or "score", dataset=dataset_fixed)
            layouts.add("pairs")
            continue
        table = _read_table(src)
        table.columns = [str(c) for c in table.columns]
        layout = fmt
        if layout is None:
            has_long = (cols["system"][0] in table.columns and cols["score"][0] in table.columns)
            layout = "long" if has_long else "wide"
        layouts.add(layout)
        if layout == "long":
            _long_layout(src, table, k, raw, system_col=cols["system"],
                         metric_col=cols["metric"], instance_col=cols["instance"],
                         score_col=cols["score"][0], dataset_col=cols["dataset"],
                         metric=item_metric, dataset=dataset,
                         default_dataset=default_dataset, explicit=explicit)
        else:
            if explicit["system"] or explicit["score"]:
                raise ParameterError(
                    "format='wide' takes the systems from the column names; drop "
                    "`system_col`/`score_col` (or use format='long')")
            _wide_layout(src, table, k, raw, metric_col=cols["metric"],
                         instance_col=cols["instance"], dataset_col=cols["dataset"],
                         metric=item_metric, dataset=dataset,
                         default_dataset=default_dataset, systems=systems,
                         explicit=explicit)
    frame, metrics, dropped = _validate(raw.long(), sources, missing=missing,
                                        lower_is_better=lower_is_better)
    frame.attrs["metrics"] = metrics
    frame.attrs["dropped"] = dropped
    frame.attrs["source"] = {"paths": [str(s.path) for s in sources],
                             "format": "/".join(sorted(layouts))}
    return frame


# ----------------------------------------------------------------------------- parquet
def _json_safe(value) -> bool:
    try:
        json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        return False
    return True


def write_parquet(frame: pd.DataFrame, path, *, metadata: dict | None = None) -> Path:
    """Write a frame to Parquet with JSON metadata under the schema key ``b"multistat"``.

    Parameters
    ----------
    frame : pandas.DataFrame
        Any frame (index not written). Its JSON-serialisable ``attrs`` entries are stored
        too; entries that cannot be serialised are left out.
    path : str or pathlib.Path
        Output file; parent folders are created.
    metadata : dict
        Run metadata (seed, parameters, versions...); must be JSON-serialisable. Its keys
        win over ``frame.attrs`` keys of the same name.

    Returns
    -------
    pathlib.Path
        The path written.

    Notes
    -----
    JSON turns tuples into lists; floats round-trip exactly (``repr``-precision).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    if not isinstance(frame, pd.DataFrame):
        raise ParameterTypeError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, Mapping):
        raise ParameterTypeError(f"`metadata` must be a dict; got {type(metadata).__name__}")
    merged = {str(k): v for k, v in frame.attrs.items() if _json_safe(v)}
    for key, value in metadata.items():
        if not _json_safe(value):
            raise ParameterError(
                f"`metadata[{key!r}]` is not JSON-serialisable: {_show(value)}")
        merged[str(key)] = value
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plain = frame.copy()
    plain.attrs = {}
    table = pa.Table.from_pandas(plain, preserve_index=False)
    schema_meta = dict(table.schema.metadata or {})
    schema_meta[PARQUET_METADATA_KEY] = json.dumps(merged, allow_nan=True).encode()
    pq.write_table(table.replace_schema_metadata(schema_meta), path)
    return path


def read_parquet(path) -> pd.DataFrame:
    """Read a Parquet file written by :func:`write_parquet`.

    Returns
    -------
    pandas.DataFrame
        With ``attrs["multistat"]`` the stored metadata dict (``{}`` if none) and, when
        present there, ``attrs["metrics"]``, ``attrs["dropped"]`` and ``attrs["source"]``
        restored, so a saved score frame goes straight into ``multistat.cube.from_frame``.
    """
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.exists():
        raise InputFileError(f"{path}: no such file")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several unrelated classes
        raise InputFileError(f"{path}: not a readable Parquet file ({exc})") from None
    raw = (table.schema.metadata or {}).get(PARQUET_METADATA_KEY)
    try:
        meta = json.loads(raw) if raw else {}
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{path}: corrupt multistat metadata ({exc.msg})") from None
    frame = table.to_pandas()
    frame.attrs = {}
    for key in ("metrics", "dropped", "source"):
        if key in meta:
            frame.attrs[key] = meta[key]
    frame.attrs["multistat"] = meta
    return frame
