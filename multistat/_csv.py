"""CSV cells a spreadsheet cannot run: the formula-injection defence of every CSV output.

A spreadsheet that opens a CSV runs a cell beginning with ``=``, ``+``, ``-`` or ``@`` as a
formula (and a leading tab or carriage return can hide one); a system, metric or dataset
name is user data, so ``=HYPERLINK(...)`` or ``@SUM(...)`` as a name would run on the
reader's machine. Following OWASP's advice ("CSV Injection",
https://owasp.org/www-community/attacks/CSV_Injection), :func:`neutralise` prefixes such
text cells (and column names) with a single quote, which spreadsheets show as text.
Numbers stay numbers: numeric columns are not touched, and a text cell that is a plain
decimal number (``-0.25``, ``+1e-3``) is a number to a spreadsheet too, not a formula, so
it is kept. The exact text is in the Parquet and JSON Lines outputs, which no spreadsheet
evaluates.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = ["neutralise", "neutralise_text"]

_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|nan)",
                     re.IGNORECASE)


def neutralise_text(value):
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula
    (starts with ``= + - @``, tab or CR and is not a plain number); anything else as is."""
    if isinstance(value, str) and value.startswith(_TRIGGERS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def _column(col: pd.Series) -> pd.Series | None:
    """The neutralised column, or None when nothing in it needs it. Each distinct value is
    checked once (names repeat over thousands of rows)."""
    if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype) \
            or pd.api.types.is_datetime64_any_dtype(col.dtype):
        return None
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    uniques = list(uniques)
    fixed = [neutralise_text(u) for u in uniques]
    if all(f is u for f, u in zip(fixed, uniques)):
        return None
    table = np.empty(len(fixed) + 1, dtype=object)
    table[:-1] = fixed
    table[-1] = None  # code -1: a missing cell stays missing (an empty CSV cell)
    return pd.Series(table[codes], index=col.index, name=col.name)


def neutralise(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every formula-like text cell and column name quoted (see the module
    notes); the same object when nothing needed it (no copy of a large table)."""
    changed = {}
    for i, name in enumerate(frame.columns):
        new = _column(frame.iloc[:, i])
        if new is not None:
            changed[i] = new
    names = [neutralise_text(c) if isinstance(c, str) else c for c in frame.columns]
    if not changed and names == list(frame.columns):
        return frame
    out = frame.copy(deep=False)
    for i, new in changed.items():
        out.isetitem(i, new.to_numpy())
    out.columns = names
    return out


def to_csv(frame: pd.DataFrame, path) -> None:
    """``frame`` as CSV at ``path`` (no index), formula-like cells neutralised."""
    neutralise(frame).to_csv(path, index=False)
