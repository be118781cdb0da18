"""Studies larger than memory: wide Parquet files to a chunked Zarr store, and the store
read back chunk by chunk.

A study of 200 systems x 2,000,000 instances is 3.2 GB of float64: more than the memory
budget of one process. :func:`write_zarr` writes it to a `Zarr <https://zarr.dev>`_ store
without ever holding it whole: each wide Parquet file (one column per system, one row per
instance, one file per metric) is read row group by row group, a few system columns at a
time, and its scores are written into the store's instance chunks. :func:`open_zarr` gives a
:class:`ZarrStudy`, a small picklable description of the store (path, names, chunking)
whose :meth:`ZarrStudy.read` returns one chunk of instances; ``compare`` and ``rank``
stream those chunks (:mod:`multistat.significance._streamed`), locally or on the workers
of a dask.distributed cluster, which open the store themselves.

The store
---------
* ``score``: float64 ``(system, metric, instance)``, chunks ``(systems, 1, chunk)``: every
  system's scores of one metric on ``chunk`` consecutive instances;
* ``instance``: the instance labels (str), in the canonical order of every study: labels
  sorted as strings (code-point order), so that instance ``i`` of the store is instance
  ``i`` of the same study loaded in memory and resampling plans pair them;
* attributes: ``format`` (:data:`FORMAT`), ``dataset``, ``systems``, ``metrics``,
  ``higher_is_better``, ``kind`` (``"mean"`` or ``"binary"``), ``n_instances``,
  ``chunk``, ``sources``.

One dataset, complete (every system scores every instance of every metric), per-instance
metrics: runs, ratings, groups, corpus metrics and holes are refused with a message.
Where the files are in canonical order already (sorted labels, the usual case), each
row group is read about once; otherwise each pass over a file fills the instance chunks
that fit in the memory budget, and the file is read once per pass.

The path may be any URL Zarr and fsspec open (``s3://bucket/study.zarr`` with ``s3fs``
installed, a shared file system path): workers of a cluster open the same URL.
"""

from __future__ import annotations

import functools
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from multistat._budget import Budget
from multistat._lazy import require_extra
from multistat.errors import DataValidationError, InputFileError, ParameterError

#: the ``format`` attribute of a study store
FORMAT = "multistat-zarr-1"
#: target bytes of one chunk (systems x chunk instances x 8) when none is given
CHUNK_BYTES = 32 * 2**20


def is_zarr_path(path) -> bool:
    """Whether ``path`` names a Zarr study store (its name ends in ``.zarr``)."""
    return str(path).rstrip("/").lower().endswith(".zarr")


def default_chunk(n_systems: int, n_instances: int) -> int:
    """Instances per chunk: a power of two near :data:`CHUNK_BYTES` per metric chunk,
    at least 1,024 and at most the number of instances."""
    target = max(1, CHUNK_BYTES // (8 * max(1, n_systems)))
    chunk = 1 << max(10, int(target).bit_length() - 1)
    return int(max(1, min(chunk, n_instances)))


@dataclass(frozen=True)
class ZarrStudy:
    """A study in a Zarr store, read chunk by chunk (:func:`open_zarr`).

    Small and picklable (names and the path, no data): the driver of a cluster run sends
    it to the workers, which open the store themselves.

    Attributes
    ----------
    path : str
        The store's path or URL.
    dataset : str
        The dataset's name.
    systems, metrics : tuple of str
        Names, in the store's order.
    higher_is_better : tuple of bool
        Per metric.
    kind : tuple of str
        ``"mean"`` or ``"binary"`` per metric.
    n : int
        Instances (canonical order: labels sorted as strings).
    chunk : int
        Instances per chunk of the store.
    """

    path: str
    dataset: str
    systems: tuple
    metrics: tuple
    higher_is_better: tuple
    kind: tuple
    n: int
    chunk: int

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(systems, metrics, instances)``."""
        return len(self.systems), len(self.metrics), self.n

    def bounds(self) -> list[tuple[int, int]]:
        """``[(start, stop), ...]``: the store's instance chunks, in order."""
        return [(s, min(s + self.chunk, self.n)) for s in range(0, self.n, self.chunk)]

    def read(self, start: int, stop: int, metrics: Sequence[int] | None = None
             ) -> np.ndarray:
        """Scores ``(systems, len(metrics), stop - start)`` float64 of instances
        ``start:stop`` (all metrics by default)."""
        arr = _group(self.path)["score"]
        ms = range(len(self.metrics)) if metrics is None else metrics
        out = np.empty((len(self.systems), len(ms), stop - start))
        for j, m in enumerate(ms):
            out[:, j] = arr[:, int(m), start:stop]
        return out

    def read_at(self, positions: np.ndarray, metrics: Sequence[int]) -> np.ndarray:
        """Scores ``(systems, len(metrics), len(positions))`` at instance positions."""
        arr = _group(self.path)["score"]
        pos = np.asarray(positions, dtype=np.int64)
        return np.stack([arr.oindex[:, int(m), pos] for m in metrics], axis=1)

    def read_systems(self, systems: Sequence[int], metrics: Sequence[int]) -> np.ndarray:
        """Every score ``(len(systems), len(metrics), n)`` of some systems (reads every
        chunk, keeps those rows)."""
        idx = np.asarray(systems, dtype=np.int64)
        out = np.empty((len(idx), len(metrics), self.n))
        for start, stop in self.bounds():
            out[..., start:stop] = self.read(start, stop, metrics)[idx]
        return out

    def instances(self) -> np.ndarray:
        """The instance labels (canonical order)."""
        return np.array([str(x) for x in _group(self.path)["instance"][:]], dtype=object)


@functools.lru_cache(maxsize=8)
def _group(path: str):
    """The store's group, opened once per process (read only)."""
    # heavy: zarr, lazily (the `large` extra)
    import zarr

    return zarr.open_group(path, mode="r")


def open_zarr(path) -> ZarrStudy:
    """Open a study store written by :func:`write_zarr`.

    Parameters
    ----------
    path : str or Path
        The store (a folder ``*.zarr``, or a URL Zarr opens).

    Returns
    -------
    ZarrStudy
        Its names and chunking; scores are read chunk by chunk.

    Examples
    --------
    >>> import numpy as np, pandas as pd, tempfile, os
    >>> from multistat.io._zarr import write_zarr, open_zarr
    >>> tmp = tempfile.mkdtemp()
    >>> rng = np.random.default_rng(0)
    >>> frame = pd.DataFrame({"instance": [f"q{i:03d}" for i in range(100)],
    ...                       "a": rng.normal(size=100), "b": rng.normal(size=100)})
    >>> frame.to_parquet(os.path.join(tmp, "acc.parquet"))
    >>> _ = write_zarr([os.path.join(tmp, "acc.parquet")], os.path.join(tmp, "s.zarr"))
    >>> study = open_zarr(os.path.join(tmp, "s.zarr"))
    >>> study.systems, study.metrics, study.n
    (('a', 'b'), ('score',), 100)
    """
    require_extra("large")
    text = os.fspath(path)
    if "://" not in text and not Path(text).is_dir():
        raise InputFileError(f"{text}: no such Zarr store (a folder written by "
                             "`multistat load ... --out STUDY.zarr`)")
    _group.cache_clear()  # a store rewritten at the same path is read afresh
    try:
        attrs = dict(_group(text).attrs)
    except Exception as exc:  # noqa: BLE001 - zarr's own errors vary by version and store
        raise InputFileError(f"{text}: not a readable Zarr store ({type(exc).__name__}: "
                             f"{str(exc)[:200]})") from None
    if attrs.get("format") != FORMAT:
        raise InputFileError(f"{text}: not a multistat study store (attribute format "
                             f"{attrs.get('format')!r}, expected {FORMAT!r})")
    return ZarrStudy(text, str(attrs["dataset"]), tuple(attrs["systems"]),
                     tuple(attrs["metrics"]), tuple(bool(h) for h in attrs["higher_is_better"]),
                     tuple(attrs["kind"]), int(attrs["n_instances"]), int(attrs["chunk"]))


# ----------------------------------------------------------------------------- writing
@dataclass
class _Source:
    """One wide Parquet file: one metric, one column per system."""

    path: Path
    metric: str
    id_col: str | None
    columns: list[str]
    labels: np.ndarray  # file row -> label (str)
    rank: np.ndarray  # file row -> canonical position
    sorted: bool


def _parquet(path: Path):
    # heavy: pyarrow, lazily
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path, pre_buffer=False)
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a file that is not Parquet
        raise InputFileError(f"{path}: not a Parquet file ({str(exc)[:200]}); a .zarr "
                             "study is written from wide Parquet files") from None


def _source(path: Path, metric: str, instance_col: str | None, systems) -> _Source:
    """The file's columns checked and its labels read (the label column alone, row
    group by row group)."""
    # heavy: pyarrow, lazily
    import pyarrow as pa

    # heavy: pyarrow, lazily
    import pyarrow.compute as pc

    pf = _parquet(path)
    names = list(pf.schema_arrow.names)
    if instance_col is not None and instance_col not in names:
        raise DataValidationError(f"{path}: no column {instance_col!r} (--instance-col); "
                                  f"columns: {', '.join(names[:20])}")
    id_col = instance_col or ("instance" if "instance" in names else None)
    for bad in ("system", "metric", "dataset", "score"):
        if bad in names and bad != id_col:
            raise DataValidationError(
                f"{path}: column {bad!r}: a .zarr study is written from wide files (one "
                "column per system, one row per instance); load this long file into a .nc "
                "study instead")
    columns = [c for c in names if c != id_col] if systems is None else list(systems)
    missing = [c for c in columns if c not in names]
    if missing:
        raise DataValidationError(f"{path}: no column for system(s) {missing[:5]}")
    if len(columns) < 2:
        raise DataValidationError(f"{path}: {len(columns)} system column(s); a comparison "
                                  "needs at least 2")
    for c in columns:
        t = pf.schema_arrow.field(c).type
        if not (pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)):
            raise DataValidationError(f"{path}: column {c!r} holds {t}, not scores (numbers)")
    n = pf.metadata.num_rows
    if n < 2:
        raise DataValidationError(f"{path}: {n} instance(s); a comparison needs at least 2")
    if id_col is None:
        labels = pa.array([str(i) for i in range(n)])
    else:
        parts = [chunk.cast(pa.string())
                 for i in range(pf.metadata.num_row_groups)
                 for chunk in pf.read_row_group(i, columns=[id_col],
                                                use_threads=False).column(0).chunks]
        labels = pa.concat_arrays(parts)
        if labels.null_count:
            row = int(pc.index(pc.is_null(labels), True).as_py())
            raise DataValidationError(f"{path}: row {row + 1}, column {id_col!r}: empty "
                                      "instance label")
    order = np.asarray(pc.sort_indices(labels))  # code-point order: the canonical order
    srt = np.asarray(labels.take(pa.array(order)).to_numpy(zero_copy_only=False),
                     dtype=object)
    dup = np.flatnonzero(srt[1:] == srt[:-1])
    if dup.size:
        raise DataValidationError(f"{path}: instance {srt[dup[0]]!r} appears more than once"
                                  f" (column {id_col or 'row number'!r})")
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    return _Source(path, metric, id_col, columns, srt, rank,
                   bool(np.all(order == np.arange(n))))


def _metric_names(paths: list[Path], metric: str | None) -> list[str]:
    if len(paths) == 1:
        return [metric or "score"]
    if metric is not None:
        raise ParameterError("--metric names the metric of one file; with several files "
                             "each file is one metric, named after the file")
    names = [p.name.split(".")[0] for p in paths]
    if len(set(names)) != len(names):
        raise ParameterError(f"two files give the same metric name: {names}")
    return names


def write_zarr(paths: Iterable, out, *, metric: str | None = None,
               dataset: str | None = None, lower_is_better: Iterable[str] = (),
               instance_col: str | None = None, systems: Sequence[str] | None = None,
               chunk: int | None = None, memory_limit=None) -> Path:
    """Write wide Parquet score files to a Zarr study store, row group by row group.

    Parameters
    ----------
    paths : iterable of str or Path
        Wide Parquet files: one column per system, one row per instance (labels in
        column ``instance`` or ``instance_col``; without one, the row number). One file
        per metric, named after the file; a single file is metric ``metric`` (default
        ``"score"``).
    out : str or Path
        The store to create (a folder ending in ``.zarr``; it must not exist). Written
        under a temporary name and renamed when complete.
    metric : str, optional
        The metric of a single file.
    dataset : str, optional
        The dataset's name (default: the first file's name without its suffixes).
    lower_is_better : iterable of str
        Metrics where lower scores are better.
    instance_col : str, optional
        The column of instance labels.
    systems : sequence of str, optional
        The system columns to keep (default: every column but the labels).
    chunk : int, optional
        Instances per chunk (default :func:`default_chunk`: about 32 MiB per chunk).
    memory_limit : int or str, optional
        Working memory (:class:`multistat._budget.Budget`): bounds the column reads and
        the instance chunks filled per pass over a file.

    Returns
    -------
    Path
        ``out``.

    Examples
    --------
    >>> import numpy as np, pandas as pd, tempfile, os
    >>> from multistat.io._zarr import write_zarr, open_zarr
    >>> tmp = tempfile.mkdtemp()
    >>> frame = pd.DataFrame({"instance": ["b", "a", "c"], "x": [1.0, 0.0, 1.0],
    ...                       "y": [0.5, 0.25, 0.75]})
    >>> frame.to_parquet(os.path.join(tmp, "f1.parquet"))
    >>> store = write_zarr([os.path.join(tmp, "f1.parquet")], os.path.join(tmp, "s.zarr"))
    >>> open_zarr(store).read(0, 3)[:, 0]  # instances a, b, c
    array([[0.  , 1.  , 1.  ],
           [0.25, 0.5 , 0.75]])
    """
    require_extra("large")
    # heavy: zarr, lazily (the `large` extra)
    import zarr

    paths = [Path(p) for p in paths]
    out = Path(out)
    if not paths:
        raise ParameterError("no score file given")
    if not is_zarr_path(out):
        raise ParameterError(f"`--out` {out}: a study store must end in .zarr")
    if out.exists():
        raise ParameterError(f"`--out` {out} exists; remove it or choose another path "
                             "(a store is never overwritten)")
    for p in paths:
        if p.suffix.lower() not in (".parquet", ".pq") and p.is_file():
            raise ParameterError(f"{p}: a .zarr study is written from wide Parquet files "
                                 "(.parquet); load other formats into a .nc study")
    budget = Budget.of(memory_limit)
    metrics = _metric_names(paths, metric)
    lower = set(lower_is_better or ())
    unknown = sorted(lower - set(metrics))
    if unknown:
        raise ParameterError(f"`lower_is_better` names unknown metric(s) {unknown}; the "
                             f"metrics are {metrics}")
    sources = [_source(p, m, instance_col, systems) for p, m in zip(paths, metrics,
                                                                     strict=True)]
    first = sources[0]
    for src in sources[1:]:
        if set(src.columns) != set(first.columns):
            extra = sorted(set(src.columns) ^ set(first.columns))[:5]
            raise DataValidationError(f"{src.path}: its systems differ from {first.path}'s "
                                      f"({extra}); every metric needs every system")
        if len(src.labels) != len(first.labels) or np.any(src.labels != first.labels):
            raise DataValidationError(f"{src.path}: its instances differ from "
                                      f"{first.path}'s; a .zarr study is complete")
    names = list(first.columns)
    S, M, n = len(names), len(metrics), len(first.labels)
    chunk = default_chunk(S, n) if chunk is None else int(chunk)
    if chunk < 1:
        raise ParameterError(f"`chunk` must be a positive number of instances; got {chunk}")
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        root = zarr.open_group(str(tmp), mode="w")
        score = root.create_array("score", shape=(S, M, n), chunks=(S, 1, chunk),
                                  dtype="f8", fill_value=np.nan)
        labels = root.create_array("instance", shape=(n,), chunks=(chunk,), dtype=str)
        for s in range(0, n, chunk):
            labels[s:s + chunk] = first.labels[s:s + chunk].astype(str)
        kinds = [_write_metric(score, m, src, names, chunk, budget)
                 for m, src in enumerate(sources)]
        root.attrs.update({
            "format": FORMAT, "dataset": dataset or paths[0].name.split(".")[0],
            "systems": names, "metrics": metrics,
            "higher_is_better": [m not in lower for m in metrics], "kind": kinds,
            "n_instances": n, "chunk": chunk, "sources": [str(p) for p in paths]})
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _write_metric(score, m: int, src: _Source, names: list[str], chunk: int,
                  budget: Budget) -> str:
    """Fill ``score[:, m]`` from one file; returns the metric's kind.

    A window of whole chunks of canonical positions (its buffer a quarter of the
    budget) is filled from the row groups whose instances fall in it, each read a few
    system columns at a time (about 1/32 of the budget per read: Parquet's own record
    batches hold whole row groups), then written. In canonical order a row group meets
    one window, two at a boundary: the file is read about once; otherwise each window is
    a pass over the file."""
    pf = _parquet(src.path)
    S, n = len(names), len(src.rank)
    per_pass = max(chunk, budget.rows(S * 8 * 4, n) // chunk * chunk)
    read_bytes = max(1, budget.nbytes // 32)
    meta = pf.metadata
    groups, r0 = [], 0
    for i in range(meta.num_row_groups):
        rows = meta.row_group(i).num_rows
        if rows:
            pos = src.rank[r0:r0 + rows]
            groups.append((i, r0, rows, int(pos.min()), int(pos.max())))
        r0 += rows
    binary = True
    for p0 in range(0, n, per_pass):
        p1 = min(n, p0 + per_pass)
        buf = np.empty((S, p1 - p0))
        for i, r0, rows, lo, hi in groups:
            if hi < p0 or lo >= p1:
                continue  # none of this row group's instances is in the window
            pos = src.rank[r0:r0 + rows]
            keep = (pos >= p0) & (pos < p1)
            at = pos[keep] - p0
            step = max(1, read_bytes // (8 * rows))
            for j in range(0, S, step):
                cols = names[j:j + step]
                table = pf.read_row_group(i, columns=cols, use_threads=False)
                block = _float_block(table, cols, src, r0)[keep]
                del table
                buf[j:j + len(cols), at] = block.T
                binary = binary and bool(np.all((block == 0.0) | (block == 1.0)))
                del block
        for s in range(p0, p1, chunk):
            score[:, m, s:min(s + chunk, p1)] = buf[:, s - p0:min(s + chunk, p1) - p0]
        del buf
    return "binary" if binary else "mean"


def _float_block(table, names, src: _Source, row0: int) -> np.ndarray:
    """``(rows, len(names))`` float64 of some system columns of one row group; a
    missing or non-finite score is an error naming the file, row and system."""
    cols = []
    for j, name in enumerate(names):
        col = table.column(j)
        if col.null_count:
            i = int(np.flatnonzero(np.asarray(col.is_null()))[0])
            raise DataValidationError(f"{src.path}: row {row0 + i + 1}, system {name!r}: "
                                      "missing score; a .zarr study is complete")
        cols.append(np.asarray(col.to_numpy(), dtype=np.float64))
    block = np.stack(cols, axis=1)
    bad = ~np.isfinite(block)
    if bad.any():
        i, j = (int(v[0]) for v in np.nonzero(bad))
        raise DataValidationError(f"{src.path}: row {row0 + i + 1}, system {names[j]!r}: "
                                  f"score {block[i, j]} is not finite")
    return block
