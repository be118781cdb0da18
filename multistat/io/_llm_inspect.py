"""inspect_ai evaluation logs: ``.eval`` archives and ``.json`` logs.

A ``.json`` log is one JSON object: ``eval`` (the task, the model, the dataset's sample
ids), ``status`` and ``samples``, a list of samples with ``id``, ``epoch``, ``scores``
(``{scorer: {"value": ...}}``) and ``metadata``. A ``.eval`` log is a zip archive
holding the same pieces as members: ``header.json`` (or, for an unfinished log,
``_journal/start.json``) with ``eval`` and ``status``, and one ``samples/<id>_epoch_<n>.json``
per sample and epoch. Current inspect compresses the members with zstd (zip method 93),
which Python's :mod:`zipfile` cannot read before 3.14: those members are read raw and
decompressed with ``zstandard`` here, their CRC-32 checked.

The model (``eval.model``, e.g. ``openai/gpt-4o``) is the system, the task
(``eval.task``) the dataset, each scorer a metric (a scorer whose value is a mapping
gives one metric per key, ``scorer/key``), the sample id the instance, the epoch the run.

Score values follow inspect's own ``value_to_float``: ``"C"`` (correct) is 1, ``"P"``
(partial) 0.5, ``"I"`` (incorrect) and ``"N"`` (no answer) 0; booleans are 1/0; numbers
are themselves; the strings ``"yes"``/``"true"`` 1 and ``"no"``/``"false"`` 0 (any
case) and numeric strings their number. Where inspect warns and uses 0 (a list, another
string), this reader stops with an error naming the file, the sample and the value.
"""

from __future__ import annotations

import io
import math
import struct
import zipfile
import zlib
from pathlib import Path

from multistat.errors import InputFileError
from multistat.io._llm_common import (
    LogRows,
    dataset_name,
    group_of,
    load_json,
    need,
    number,
    scalar_text,
    sniff,
)
from multistat.io._sources import show

#: inspect's score values and their numbers (``inspect_ai.scorer.value_to_float``)
LETTERS = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
_WORDS = {"yes": 1.0, "true": 1.0, "no": 0.0, "false": 0.0}
_ZSTD = 93  # zip compression method of zstandard
_KEEP = ("id", "epoch", "scores", "metadata", "error")  # the fields of a sample read here
_CONVENTION = ("inspect scores are numbers, booleans, 'C'/'P'/'I'/'N', yes/no/true/false "
               "or numeric strings")


def read_inspect(files: list[Path], *, group_col=None, missing="raise") -> list[LogRows]:
    """One :class:`~multistat.io._llm_common.LogRows` per inspect log among ``files``.

    Other files (the ``logs.json`` index of a log folder, ...) are skipped; none being
    an inspect log is an error.
    """
    out = []
    logs = [path for path in files if sniff(path) == "inspect"]
    if not logs:
        others = "" if len(files) == 1 else f", nor are the {len(files) - 1} other files"
        raise InputFileError(f"{files[0]}: not an inspect log (a .eval archive, or a .json "
                             f"object opening with \"version\" and \"status\"){others}")
    for path in logs:
        if path.suffix.lower() == ".eval":
            header, samples = _read_eval(path)
        else:
            log = load_json(path)
            if not isinstance(log, dict):
                raise InputFileError(f"{path}: not an inspect log (a JSON object)")
            header = log
            need(log, "eval", dict, path, "")
            samples = log.get("samples")
            if samples is None:
                raise InputFileError(f"{path}: the log has no samples (written with "
                                     f"log_samples=False?); per-sample scores are needed")
            if not isinstance(samples, list):
                raise InputFileError(f"{path}: 'samples' is not a list")
            samples = [(f"sample {k}", s) for k, s in enumerate(samples)]
        out.append(_rows(path, header, samples, group_col=group_col, missing=missing))
    return out


def _rows(path: Path, header, samples, *, group_col, missing) -> LogRows:
    ev = need(header, "eval", dict, path, "")
    task = need(ev, "task", str, path, ": eval")
    model = need(ev, "model", str, path, ": eval")
    status = header.get("status")
    if status not in ("success", None) and missing == "raise":
        raise InputFileError(f"{path}: the evaluation did not finish (status {status!r}); "
                             f"its samples may be incomplete: pass missing='keep' to read "
                             f"them anyway")
    if not samples:
        raise InputFileError(f"{path}: the log has no samples")
    order = {}
    ids = (ev.get("dataset") or {}).get("sample_ids") if isinstance(ev.get("dataset"),
                                                                    dict) else None
    if isinstance(ids, list):
        order = {str(i): k for k, i in enumerate(ids)}
    parsed: list = []
    for member, sample in samples:
        if not isinstance(sample, dict):
            raise InputFileError(f"{path}, {member}: a sample is not a JSON object")
        if "id" not in sample:
            raise InputFileError(f"{path}, {member}: the sample has no 'id'")
        sid = scalar_text(sample["id"], path, member, "the sample id")
        epoch = sample.get("epoch", 1)
        if not isinstance(epoch, int) or isinstance(epoch, bool):
            raise InputFileError(f"{path}, sample {sid!r}: epoch {show(epoch)} is not an "
                                 f"integer")
        parsed.append((order.get(sid, len(order) + len(parsed)), epoch, sid, sample))
    parsed.sort(key=lambda t: (t[0], t[1]))
    rows = LogRows(path, run_word="epoch")
    dataset = dataset_name(task)
    for _, epoch, sid, sample in parsed:
        place = f"sample {sid!r}"
        where = f"{place}, epoch {epoch}"
        group = group_of(sample.get("metadata") or {}, group_col, path, where,
                         "sample metadata")
        scores = sample.get("scores")
        if not scores:
            if missing == "raise":
                why = " (it ended in an error)" if sample.get("error") else ""
                raise InputFileError(f"{path}, {where}: the sample has no score{why}; pass "
                                     f"missing='keep' to keep it as missing")
            scores = {name: None for name in _scorer_names(ev)}
        if not isinstance(scores, dict):
            raise InputFileError(f"{path}, {where}: 'scores' is not an object")
        for scorer, score in scores.items():
            value = score.get("value") if isinstance(score, dict) else None
            if score is not None and not isinstance(score, dict):
                raise InputFileError(f"{path}, {where}: the score of {scorer!r} is not an "
                                     f"object with a 'value'")
            if isinstance(value, dict):
                items = [(f"{scorer}/{key}", v) for key, v in value.items()]
            else:
                items = [(scorer, value)]
            for metric, v in items:
                rows.add(dataset=dataset, system=model, metric=metric, instance=sid,
                         run=str(epoch), group=group,
                         score=to_float(v, path, where, metric, missing=missing),
                         place=place)
    return rows


def _scorer_names(ev) -> list[str]:
    scorers = ev.get("scorers") or []
    return [s["name"] for s in scorers if isinstance(s, dict) and isinstance(
        s.get("name"), str)]


def to_float(value, path: Path, place: str, metric: str, *, missing: str) -> float:
    """An inspect score value as a number (the module's conventions)."""
    if isinstance(value, str):
        if value in LETTERS:
            return LETTERS[value]
        word = value.strip().lower()
        if word in _WORDS:
            return _WORDS[word]
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        if math.isfinite(x):
            return x
        raise InputFileError(f"{path}, {place}: scorer {metric!r} has the value "
                             f"{show(value)}, not a number ({_CONVENTION})")
    return number(value, path, place, metric, convention=_CONVENTION, missing=missing)


# ----------------------------------------------------------------------------- .eval
def _read_eval(path: Path):
    """``(header, [(member name, sample), ...])`` of a ``.eval`` archive."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InputFileError(f"{path}: not an inspect .eval archive ({exc})") from None
    with zf:
        names = zf.namelist()
        head = "header.json" if "header.json" in names else "_journal/start.json"
        if head not in names:
            raise InputFileError(f"{path}: not an inspect .eval archive (no header.json or "
                                 f"_journal/start.json)")
        header = load_json(path, member_bytes(zf, path, head), head)
        if head != "header.json":
            header.setdefault("status", "started")
        samples = []
        for name in names:
            if name.startswith("samples/") and name.endswith(".json"):
                sample = load_json(path, member_bytes(zf, path, name), name)
                if isinstance(sample, dict):  # keep what is read; drop messages, events
                    sample = {k: sample[k] for k in _KEEP if k in sample}
                samples.append((name, sample))
    return header, samples


def member_bytes(zf: zipfile.ZipFile, path: Path, name: str) -> bytes:
    """The uncompressed bytes of an archive member; zstd members decompressed with
    ``zstandard`` (multi-frame streams included), the CRC-32 checked."""
    info = zf.getinfo(name)
    if info.compress_type != _ZSTD:
        try:
            return zf.read(name)
        except (zipfile.BadZipFile, NotImplementedError, zlib.error, OSError) as exc:
            raise InputFileError(f"{path} (member {name}): cannot be read ({exc})") from None
    # zstandard: a runtime dependency, imported on use
    import zstandard

    fh = zf.fp
    if fh is None:  # the archive was closed
        raise InputFileError(f"{path} (member {name}): the archive is closed")
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise InputFileError(f"{path} (member {name}): bad local header; the archive is "
                             f"damaged")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    fh.seek(info.header_offset + 30 + name_len + extra_len)
    raw = fh.read(info.compress_size)
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw),
                                                             read_across_frames=True)
        data = reader.read()
    except zstandard.ZstdError as exc:
        raise InputFileError(f"{path} (member {name}): bad zstd data ({exc})") from None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise InputFileError(f"{path} (member {name}): CRC or size mismatch; the archive "
                             f"is damaged")
    return data
