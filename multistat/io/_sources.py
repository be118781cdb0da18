"""Input files: names, compression, text decoding, separator sniffing, and the
:class:`Source` record that maps parsed rows back to file lines for error messages.

Shared constants and message helpers of :mod:`multistat.io` live here too.
"""

from __future__ import annotations

import bz2
import glob
import csv
import gzip
import lzma
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from multistat.errors import InputFileError, ParameterError, ParameterTypeError

#: Columns of the validated long frame, in this order.
COLUMNS: tuple[str, ...] = ("dataset", "system", "metric", "instance", "score")
#: Layouts understood by :func:`read_scores` (the last four: language-model evaluation
#: logs, :mod:`multistat.io._llm`).
FORMATS: tuple[str, ...] = ("long", "wide", "pairs", "lines", "comet", "inspect", "lm-eval",
                            "helm", "eee")
#: Schema-metadata key under which :func:`write_parquet` stores the JSON metadata.
PARQUET_METADATA_KEY = b"multistat"
#: Separator used when ``system_col``/``instance_col`` name several columns.
KEY_JOIN = "/"

WHITESPACE = r"\s+"
COMPRESSIONS: dict[str, Callable[..., Any]] = {".gz": gzip.open, ".bz2": bz2.open,
                                               ".xz": lzma.open}
_EXT_SEP = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".txt": WHITESPACE}
# score cells read as these (case-insensitive, stripped) are missing values (NaN)
NA_TOKENS = frozenset({"", "na", "nan", "-nan", "+nan", "n/a", "#n/a", "null", "none"})
_SHOW = 80  # characters of a line shown in an error message
_EXAMPLES = 5  # names/values listed before "and N more"
_PANDAS_MAJOR = int(pd.__version__.split(".")[0])


# ----------------------------------------------------------------------------- helpers
def show(value, limit: int = _SHOW) -> str:
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


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def split_suffix(path: Path) -> tuple[str, str | None]:
    """(table suffix, compression suffix) of a file name, both lower-case."""
    suffixes = [s.lower() for s in path.suffixes]
    comp = suffixes[-1] if suffixes and suffixes[-1] in COMPRESSIONS else None
    if comp:
        suffixes = suffixes[:-1]
    return (suffixes[-1] if suffixes else ""), comp


def stem(path: Path) -> str:
    """File name without the compression and the table suffix (``scores.csv.gz`` -> ``scores``)."""
    name = path.name
    ext, comp = split_suffix(path)
    for suffix in (comp, ext):
        if suffix and name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return name or path.name


def open_text(path: Path):
    _, comp = split_suffix(path)
    opener = COMPRESSIONS.get(comp or "", open)
    return opener(path, "rt", encoding="utf-8-sig", newline=None)


def normalise_sep(sep) -> str | None:
    if sep is None:
        return None
    if not isinstance(sep, str):
        raise ParameterTypeError(f"`sep` must be a string; got {sep!r}")
    if sep in (WHITESPACE, "whitespace", r"\s*", " +"):
        return WHITESPACE
    if sep in ("\\t", "tab"):
        return "\t"
    if len(sep) == 1 and sep not in "\r\n\"":
        return sep
    raise ParameterError(
        f"`sep` must be one character (e.g. ',' or '\\t') or r'\\s+' for whitespace; "
        f"got {sep!r}"
    )


def split_line(text: str, sep: str) -> list[str]:
    if sep == WHITESPACE:
        return text.split()
    return next(csv.reader([text], delimiter=sep), [])


def sep_name(sep: str) -> str:
    return {WHITESPACE: "whitespace", "\t": "tabs", ",": "commas"}.get(sep, repr(sep))


def _is_number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------- sources
@dataclass
class Source:
    """One input file and how its rows map back to lines for error messages."""

    path: Path
    kind: str  # "text" | "jsonl" | "json" | "parquet"
    sep: str | None = None  # text only
    header: bool = True  # text only
    skip_blank: bool = True  # text only
    n_fields: int = 2  # fields per line of a header-less file (pairs 2, lines 1)
    first_line: str | None = None  # first non-blank line (text/jsonl)
    first_lineno: int = 1  # its line number
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def delimiter(self) -> str:
        """The field separator of a text source (set when the source was resolved)."""
        if self.sep is None:
            raise InputFileError(f"{self.path}: not a delimited text file")
        return self.sep

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
            with open_text(self.path) as fh:
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
        return f": {show(found[1])}" if found else ""

    def first_bad_line(self, expected: int | None) -> tuple[int, str, int] | None:
        """First line whose number of fields differs from ``expected`` (from the header
        when None); blank lines count only if ``skip_blank`` is False and they are
        followed by data. Returns ``(line number, text, fields)``."""
        pending_blank = None
        with open_text(self.path) as fh:
            for lineno, line in enumerate(fh, 1):
                text = line.rstrip("\r\n")
                if not text.strip():
                    if not self.skip_blank and pending_blank is None:
                        pending_blank = (lineno, text, 0)
                    continue
                if pending_blank is not None:
                    return pending_blank
                fields = split_line(text, self.delimiter)
                if expected is None:
                    expected = len(fields)
                    continue
                if len(fields) != expected:
                    return lineno, text, len(fields)
        return None


def resolve_source(path, *, sep) -> Source:
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
    ext, _ = split_suffix(path)
    if ext == ".parquet":
        kind = "parquet"
    elif ext in (".jsonl", ".ndjson"):
        kind = "jsonl"
    elif ext == ".json":
        kind = "json"
    else:
        kind = "text"
    if kind != "text" and sep is not None:
        raise ParameterError(f"`sep` applies to delimited text files only; {path} is {kind}")
    src = Source(path=path, kind=kind)
    if kind == "parquet":
        return src
    try:
        with open_text(path) as fh:
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
    a comma or whitespace, whichever the first line holds (in that order).

    Whitespace-separated names (``.txt`` and unknown suffixes): a header line holding a
    tab makes the file tab-separated, so text cells may contain spaces (a line of
    numbers only stays whitespace-separated, as NLPStatTest reads it)."""
    sep = _EXT_SEP.get(ext, WHITESPACE)
    if sep == WHITESPACE:
        tokens = first_line.split()
        if "\t" in first_line and not all(_is_number(t) for t in tokens):
            return "\t"
        if len(tokens) > 1:
            return sep
    elif sep in first_line:
        return sep
    for candidate in ("\t", ","):
        if candidate in first_line:
            return candidate
    return WHITESPACE


def looks_like_pairs(src: Source) -> bool:
    """A plain text file whose first non-blank line holds only numbers (no header)."""
    if src.kind != "text" or src.first_line is None:
        return False
    tokens = src.first_line.split() if src.sep == WHITESPACE else split_line(
        src.first_line, src.delimiter)
    return bool(tokens) and all(_is_number(t) for t in tokens)


_GLOB = set("*?[")


def expand_paths(path, *, recursive: bool = False, what: str = "score files"
                 ) -> tuple[list[Path], str]:
    """Files of ``path`` (a file, a folder, a glob pattern, or a list of those) and the
    default dataset name: a single file's name without suffixes, else the name of the
    folder holding the (first) file."""
    if isinstance(path, str | Path):
        entries, single = [path], True
    elif isinstance(path, Sequence) and not isinstance(path, bytes):
        entries, single = list(path), False
        if not entries:
            raise ParameterError(f"`path` is an empty list; give at least one of the {what}")
    else:
        raise ParameterTypeError(
            f"`path` must be a file path (str or pathlib.Path), a folder, a glob pattern, a "
            f"list of those, or for format='wide' a mapping {{metric: path}}; got "
            f"{type(path).__name__}")
    files: list[Path] = []
    folder = None
    for entry in entries:
        if not isinstance(entry, str | Path):
            raise ParameterTypeError(f"`path` entries must be file paths; got "
                                     f"{type(entry).__name__}: {show(entry)}")
        p = Path(entry)
        if p.is_dir():
            # hidden entries skipped; ``recursive``: the whole tree (log folders nest)
            walk = p.rglob("*") if recursive else p.iterdir()
            found = sorted(f for f in walk if f.is_file() and not any(
                part.startswith(".") for part in f.relative_to(p).parts))
            if not found:
                raise InputFileError(f"{p}: the folder holds no {what}")
            files.extend(found)
            folder = folder or p
        elif not p.exists() and _GLOB & set(str(entry)):
            found = sorted(Path(f) for f in glob.glob(str(entry)) if Path(f).is_file())
            if not found:
                raise InputFileError(f"{entry}: no file matches this pattern")
            files.extend(found)
        else:
            files.append(p)  # a missing file is reported by resolve_source
    seen: set = set()
    for f in files:
        key = f.resolve() if f.exists() else f
        if key in seen:
            raise ParameterError(f"{f}: the same file is given twice")
        seen.add(key)
    if single and len(files) == 1 and folder is None:
        return files, stem(files[0])
    base = folder if folder is not None else files[0].resolve().parent
    return files, base.resolve().name or "dataset"
