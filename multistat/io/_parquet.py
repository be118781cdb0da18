"""Parquet with multistat's JSON metadata under one schema key."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import pyarrow as pa

from multistat._atomic import atomic_path
from multistat._json import loads_metadata
from multistat.errors import InputFileError, ParameterError, ParameterTypeError
from multistat.io._sources import PARQUET_METADATA_KEY, show


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
        too (the run metadata in ``attrs["multistat"]`` as the file's metadata itself, so
        that :func:`read_table` gives it back); entries that cannot be serialised are left
        out.
    path : str or pathlib.Path
        Output file; parent folders are created. Written atomically (a temporary file
        beside it, renamed into place), so it is never seen half-written.
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
    # heavy: pyarrow, lazily
    import pyarrow.parquet as pq

    if not isinstance(frame, pd.DataFrame):
        raise ParameterTypeError(f"`frame` must be a pandas DataFrame; got {type(frame).__name__}")
    metadata = {} if metadata is None else metadata
    if not isinstance(metadata, Mapping):
        raise ParameterTypeError(f"`metadata` must be a dict; got {type(metadata).__name__}")
    merged = {str(k): v for k, v in frame.attrs.items()
              if k != "multistat" and _json_safe(v)}
    run = frame.attrs.get("multistat")  # a table's run metadata is stored flat, as read
    if isinstance(run, Mapping):
        merged.update({str(k): v for k, v in run.items() if _json_safe(v)})
    for key, value in metadata.items():
        if not _json_safe(value):
            raise ParameterError(
                f"`metadata[{key!r}]` is not JSON-serialisable: {show(value)}")
        merged[str(key)] = value
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plain = frame.copy()
    plain.attrs = {}
    table = pa.Table.from_pandas(plain, preserve_index=False)
    schema_meta = dict(table.schema.metadata or {})
    schema_meta[PARQUET_METADATA_KEY] = json.dumps(merged, allow_nan=True).encode()
    with atomic_path(path) as tmp:  # a reader or a kill never sees a partial file
        pq.write_table(table.replace_schema_metadata(schema_meta), tmp)
    return path


def read_parquet(path) -> pd.DataFrame:
    """Read a Parquet file written by :func:`write_parquet`.

    Parameters
    ----------
    path : str or path-like
        The Parquet file.

    Returns
    -------
    pandas.DataFrame
        With ``attrs["multistat"]`` the stored metadata dict (``{}`` if none) and, when
        present there, ``attrs["metrics"]``, ``attrs["dropped"]`` and ``attrs["source"]``
        restored, so a saved score frame goes straight into ``multistat.cube.from_frame``.
    """
    # heavy: pyarrow, lazily
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
        meta = loads_metadata(raw) if raw else {}
    except ValueError as exc:  # not JSON, a repeated key, nested too deep
        raise InputFileError(f"{path}: corrupt multistat metadata ({exc})") from None
    frame = table.to_pandas()
    frame.attrs = {}
    for key in ("metrics", "dropped", "source"):
        if key in meta:
            frame.attrs[key] = meta[key]
    frame.attrs["multistat"] = meta
    return frame


def read_table(path) -> tuple[pd.DataFrame, dict]:
    """Read a table multistat wrote (``compare``, ``rank``, ``meta``, ...) and its run
    metadata, explicitly.

    ``DataFrame.attrs`` (which :func:`read_parquet` also fills) is a convenience: pandas
    documents it as experimental and drops it in ``concat``/``merge`` when inputs differ.
    Keep the metadata this function returns when you combine tables.

    Parameters
    ----------
    path : str or pathlib.Path
        A Parquet file written by multistat.

    Returns
    -------
    table : pandas.DataFrame
        The rows (with ``attrs`` filled as by :func:`read_parquet`).
    metadata : dict
        The run's settings and provenance: the test options, correction, seed,
        resamples, multistat version and the input's hash, as the command wrote them
        (``{}`` for a Parquet file without multistat metadata).

    Examples
    --------
    >>> import multistat, tempfile, os
    >>> from multistat.demo import demo_frame
    >>> table = multistat.compare(multistat.from_frame(demo_frame()), tests=("t",))
    >>> path = os.path.join(tempfile.mkdtemp(), "results.parquet")
    >>> _ = multistat.write_parquet(table, path)
    >>> rows, meta = multistat.read_table(path)
    >>> len(rows) == len(table), meta["correction"]
    (True, 'holm')
    """
    frame = read_parquet(path)
    return frame, dict(frame.attrs.get("multistat", {}))
