"""Property-based test over the loaders (issue 13.2): whatever file they are given —
random bytes, random CSV/TSV/whitespace/JSON-lines text, random Parquet tables, random
NetCDF-named bytes — the outcome is a frame/study or a MultistatError with a one-line
message, never another exception. About 30 s in all."""

from __future__ import annotations

import shutil
import string
import tempfile
import warnings
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from multistat import cube
from multistat.adapters import load_labels
from multistat.errors import MultistatError
from multistat.io import read_parquet, read_scores
from multistat.io._parsing import read_table

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])
SUFFIXES = [".csv", ".tsv", ".txt", ".jsonl", ".json", ".parquet", ".csv.gz", ".tsv.bz2",
            ".txt.xz", ".nc", ".out", ""]
NAMES = ["system", "instance", "score", "metric", "dataset", "seed", "doc", "gold",
         "prediction", "x", ""]


def _outcome(fn, *args, **kwargs):
    """Run a loader; return its result, or None after a one-line MultistatError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # data warnings are not the point here
        try:
            return fn(*args, **kwargs)
        except MultistatError as exc:
            message = str(exc)
            assert message and "\n" not in message, repr(message)
            assert "Traceback" not in message
            return None


def _load_all(path: Path):
    try:
        _load_each(path)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


def _load_each(path: Path):
    _outcome(read_scores, path)
    _outcome(read_scores, path, missing="drop")
    _outcome(read_scores, [path], dataset_from_filename=True)
    _outcome(cube.load, path)
    _outcome(load_labels, path, metrics="accuracy")
    _outcome(read_table, path)
    if path.suffix == ".parquet":
        _outcome(read_parquet, path)
    if path.suffix == ".nc":
        _outcome(cube.open_study, path)


def _write(suffix: str, data: bytes) -> Path:
    folder = Path(tempfile.mkdtemp(prefix="msfuzz"))
    path = folder / f"f{suffix}"
    if suffix.endswith((".gz", ".bz2", ".xz")):
        import bz2
        import gzip
        import lzma
        opener = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}[path.suffix]
        with opener(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)
    return path


@SETTINGS
@given(data=st.binary(max_size=400), suffix=st.sampled_from(SUFFIXES))
def test_random_bytes(data, suffix):
    _load_all(_write(suffix, data))


CELL = st.one_of(
    st.sampled_from(["", "A", "B", "sys a", "1", "0", "0.5", "-3e2", "nan", "NA", "inf",
                     "1e999", " ", ".", "..", "a/b", "2024-01-01", '"q"', '"', "{}", "[1]",
                     "null", "true", "\\t", "Segment 1", "score: 0.5"]),
    st.text(alphabet=string.printable, max_size=8),
)


@st.composite
def delimited(draw):
    sep = draw(st.sampled_from([",", "\t", " ", ";"]))
    n_cols = draw(st.integers(1, 5))
    header = draw(st.lists(st.sampled_from(NAMES), min_size=n_cols, max_size=n_cols))
    rows = draw(st.lists(st.lists(CELL, min_size=max(0, n_cols - 1), max_size=n_cols + 1),
                         max_size=8))
    lines = [sep.join(header)] if draw(st.booleans()) else []
    lines += [sep.join(r) for r in rows]
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


@SETTINGS
@given(text=delimited(), suffix=st.sampled_from([".csv", ".tsv", ".txt", ".out"]))
def test_random_delimited_text(text, suffix):
    _load_all(_write(suffix, text.encode("utf-8")))


JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**30, 10**30),
              st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(["A", "B", "", " "]),
              st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)),
    max_leaves=6)


@SETTINGS
@given(lines=st.lists(st.one_of(JSON_VALUE, st.dictionaries(st.sampled_from(NAMES), JSON_VALUE,
                                                             max_size=5)), max_size=6),
       suffix=st.sampled_from([".jsonl", ".json"]), as_array=st.booleans())
def test_random_json_lines(lines, suffix, as_array):
    import json
    if as_array:
        text = json.dumps(lines)
    else:
        text = "\n".join(json.dumps(x) for x in lines)
    _load_all(_write(suffix, text.encode("utf-8")))


@st.composite
def parquet_tables(draw):
    import datetime
    import decimal

    import pyarrow as pa

    n = draw(st.integers(0, 5))
    kinds = {
        "int": (pa.int64(), st.integers(-5, 5)),
        "float": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
        "str": (pa.string(), st.sampled_from(["A", "B", "", " ", "..", "a/b", "x"])),
        "bool": (pa.bool_(), st.booleans()),
        "ts": (pa.timestamp("ns"), st.datetimes(min_value=datetime.datetime(2000, 1, 1),
                                               max_value=datetime.datetime(2030, 1, 1))),
        "date": (pa.date32(), st.dates(min_value=datetime.date(2000, 1, 1),
                                       max_value=datetime.date(2030, 1, 1))),
        "dur": (pa.duration("s"), st.timedeltas(max_value=datetime.timedelta(days=3),
                                                 min_value=datetime.timedelta(0))),
        "list": (pa.list_(pa.int64()), st.lists(st.integers(0, 3), max_size=2)),
        "struct": (pa.struct([("a", pa.int64())]), st.fixed_dictionaries({"a": st.integers(0, 3)})),
        "bytes": (pa.binary(), st.binary(max_size=3)),
        "decimal": (pa.decimal128(5, 2), st.decimals(min_value=-99, max_value=99, places=2,
                                                      allow_nan=False).map(decimal.Decimal)),
        "null": (pa.null(), st.none()),
        "dict": (pa.dictionary(pa.int32(), pa.string()), st.sampled_from(["A", "B"])),
    }
    names = draw(st.lists(st.sampled_from(NAMES[:-1]), min_size=1, max_size=5, unique=True))
    arrays = []
    for _ in names:
        kind = draw(st.sampled_from(sorted(kinds)))
        typ, values = kinds[kind]
        vals = draw(st.lists(st.one_of(values, st.none()), min_size=n, max_size=n))
        if kind == "dict":
            arrays.append(pa.array(vals, pa.string()).dictionary_encode())
        else:
            arrays.append(pa.array(vals, typ))
    return pa.table(arrays, names=names)


@SETTINGS
@given(table=parquet_tables())
def test_random_parquet_tables(table):
    import pyarrow.parquet as pq
    path = _write(".parquet", b"")
    pq.write_table(table, path)
    _load_all(path)
