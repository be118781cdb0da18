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

Modules: :mod:`._sources` (files, compression, separator sniffing), :mod:`._parsing`
(line-aware parsing of tables, scores and identifiers), :mod:`._layouts` (long, wide,
pairs), :mod:`._model` (data-model validation), :mod:`._reader` (:func:`read_scores`),
:mod:`._parquet` (Parquet with metadata), :mod:`._zarr` (studies larger than memory:
wide Parquet to a chunked Zarr store, :func:`write_zarr`, :func:`open_zarr`).
"""

from multistat.io._parquet import read_parquet, read_table, write_parquet
from multistat.io._reader import read_scores
from multistat.io._sources import COLUMNS, FORMATS
from multistat.io._sources import KEY_JOIN as KEY_JOIN
from multistat.io._sources import PARQUET_METADATA_KEY as PARQUET_METADATA_KEY
from multistat.io._zarr import ZarrStudy, open_zarr, write_zarr

__all__ = ["COLUMNS", "FORMATS", "ZarrStudy", "open_zarr", "read_parquet", "read_scores",
           "read_table", "write_parquet", "write_zarr"]
