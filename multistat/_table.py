"""Assembly of compare's table from per-block arrays, without per-row Python.

String columns (system and metric names, the test, notes) are built from codes into a
few labels, or converted once per distinct value, into the pandas ``str`` dtype the
DataFrame constructor infers for strings; notes are joined once per distinct pair. Used by
:func:`multistat.compare`; the table it gives is the one a row-by-row construction would.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyarrow as pa

from multistat.errors import ParameterError


class Coded:
    """A string column as codes into a few labels (system and metric names, built once
    per dataset): the table's ``str`` column is ``labels.take(codes)``, no per-row
    Python strings."""

    __slots__ = ("codes", "labels")

    def __init__(self, labels, codes):
        self.labels, self.codes = labels, codes


def labels(values):
    """pandas ``str`` array of a few labels (the dtype the DataFrame constructor infers
    for Python or numpy strings)."""
    return pd.array(np.asarray(values, dtype=object), dtype="str")


def repeat_string(text: str, n_rows: int):
    """``n_rows`` copies of ``text`` as a pandas ``str`` array: the Arrow buffers written
    directly (offsets ``0, k, 2k, ...`` and the text repeated), the array ``labels([text])
    .take(zeros)`` gives, without a take kernel (text with a lone surrogate raises
    ``UnicodeEncodeError`` either way)."""
    data = text.encode("utf-8")
    offsets = np.arange(n_rows + 1, dtype=np.int64) * len(data)
    arr = pa.LargeStringArray.from_buffers(n_rows, pa.py_buffer(offsets),
                                           pa.py_buffer(data * n_rows))
    return pd.array(arr, dtype="str")


def _str_column(a: np.ndarray):
    """An object/unicode array of strings as a pandas ``str`` array, converting each
    distinct value once (notes and kinds repeat over thousands of rows); anything that
    is not all strings is left to pandas' inference."""
    codes, uniques = pd.factorize(a)
    if (codes < 0).any() or not all(isinstance(u, str) for u in uniques):
        return a
    return labels(uniques).take(codes)


def _column(v, n_rows: int):
    if isinstance(v, Coded):
        return v.labels.take(v.codes)
    if np.ndim(v) == 0:
        if isinstance(v, str):
            return repeat_string(v, n_rows)
        return np.repeat(v, n_rows)
    if isinstance(v, np.ndarray) and v.dtype.kind in "OU" and v.ndim == 1:
        return _str_column(v)
    return v


def rows(frame_cols: dict, n_rows: int) -> pd.DataFrame:
    return pd.DataFrame(columns(frame_cols, n_rows))


def columns(frame_cols: dict, n_rows: int) -> dict:
    """The table columns of one block: every value as the array the DataFrame constructor
    would hold (scalars repeated, :class:`Coded` taken, strings as ``str`` arrays)."""
    return {k: _column(v, n_rows) for k, v in frame_cols.items()}


def _plain(v) -> bool:
    """A 1-d numpy array of a non-object dtype, or a pandas ``str`` array."""
    if isinstance(v, np.ndarray):
        return v.ndim == 1 and v.dtype != object
    return isinstance(v, pd.api.extensions.ExtensionArray) and v.dtype == "str"


def concat(parts: list[dict]) -> dict | None:
    """The columns of ``pd.concat([pd.DataFrame(p) for p in parts], ignore_index=True)``
    without a frame per block: each column concatenated once. Only when every block has
    the same columns, in the same order, as plain arrays (:func:`_plain`) of the same
    dtype (then pandas neither adds missing columns nor casts); else None."""
    if not parts:
        return None
    keys = list(parts[0])
    for part in parts:
        if list(part) != keys:
            return None
        for k in keys:
            if not _plain(part[k]) or part[k].dtype != parts[0][k].dtype:
                return None
    out = {}
    for k in keys:
        vals = [part[k] for part in parts]
        if len(vals) == 1:
            out[k] = vals[0]
        elif isinstance(vals[0], np.ndarray):
            out[k] = np.concatenate(vals)
        else:
            out[k] = type(vals[0])._concat_same_type(vals)
    return out


def constant_string(v):
    """The string an object array broadcasts over all its entries (zero strides: a
    test's constant note or kind), else None."""
    if (isinstance(v, np.ndarray) and v.dtype == object and v.size and not any(v.strides)
            and isinstance(v.flat[0], str)):
        return v.flat[0]
    return None


def flat(v):
    """A batch's ``(P, M)`` array ravelled into a column; a broadcast string
    (:func:`constant_string`) stays that one string, which :func:`columns` repeats
    without a Python string per row."""
    v = np.asarray(v)
    c = constant_string(v)
    return v.ravel() if c is None else c


def join_notes(a, b):
    """``a; b`` row by row (empty parts left out), joined once per distinct pair; two
    strings give a string."""
    if isinstance(a, str) and isinstance(b, str):
        return "; ".join(s for s in (a, b) if s)
    a, b = np.broadcast_arrays(np.asarray(a, dtype=object), np.asarray(b, dtype=object))
    if not a.size:
        return a.copy()
    ca, ua = pd.factorize(a.ravel(), use_na_sentinel=False)
    cb, ub = pd.factorize(b.ravel(), use_na_sentinel=False)
    nb = len(ub)
    keys, inverse = np.unique(ca.astype(np.int64) * nb + cb, return_inverse=True)
    joined = np.empty(len(keys), dtype=object)
    joined[:] = ["; ".join(s for s in (ua[k // nb], ub[k % nb]) if s) for k in keys]
    return joined[inverse].reshape(a.shape)


def final_order(cols: dict, columns, n_rows: int) -> dict:
    """:func:`final_columns` on a dict of columns, before the frame is built."""
    out = {c: cols[c] if c in cols else np.full(n_rows, np.nan) for c in columns}
    out.update((c, v) for c, v in cols.items() if c not in out)
    out["n"] = np.asarray(out["n"]).astype(int)
    return out


def final_columns(table: pd.DataFrame, columns) -> pd.DataFrame:
    """``columns`` first (float NaN where a column was not computed), then the others
    in table order, ``n`` as int: one reindex instead of a column inserted at a time."""
    columns = list(columns)
    out = table.reindex(columns=columns + [c for c in table.columns if c not in columns])
    out["n"] = out["n"].astype(int)
    return out


def run_metadata(results) -> dict:
    """The run metadata a table carries in ``attrs["multistat"]`` (``{}`` if none)."""
    meta = getattr(results, "attrs", {}).get("multistat", {})
    return dict(meta) if isinstance(meta, Mapping) else {}


def primary_tests(results: pd.DataFrame, test=None) -> dict[tuple, str]:
    """The test shown for each ``(dataset, metric)``.

    ``test`` a name: that test wherever it was run (a ParameterError if it was run
    nowhere). A mapping ``{(dataset, metric): name}``: those choices (the others get the
    default). None: the first test of the run metadata's ``tests`` order (else of the
    table's row order) present for that dataset × metric.
    """
    order = [str(t) for t in run_metadata(results).get("tests", [])] or []
    order += [t for t in pd.unique(results["test"].astype(str)) if t not in order]
    chosen = test if isinstance(test, Mapping) else {}
    if isinstance(test, Mapping):
        test = None
    if test is not None and test not in set(results["test"].astype(str)):
        raise ParameterError(f"`test` {test!r} is not in the results; tests run: "
                             f"{', '.join(order)}")
    out: dict = {}
    for key, part in results.groupby(["dataset", "metric"], sort=False):
        present = set(part["test"].astype(str))
        if test is not None:
            if test in present:
                out[key] = test
            continue
        pick = chosen.get(key)
        out[key] = pick if pick in present else next(t for t in order if t in present)
    return out
