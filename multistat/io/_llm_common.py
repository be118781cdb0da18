"""Shared pieces of the language-model log readers (:mod:`multistat.io._llm`): the rows
of one log, how messages name places in it, JSON helpers, finding and recognising the
files."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from multistat.errors import (
    DataValidationError,
    InputFileError,
    ParameterError,
    ParameterTypeError,
)
from multistat.io._sources import _names, expand_paths, show

#: The log formats of :func:`multistat.io._llm.read_llm_logs` (also accepted by
#: ``read_scores(format=)``).
LLM_FORMATS: tuple[str, ...] = ("inspect", "lm-eval", "helm", "eee")
#: What to do with repeated samples (inspect epochs, repeated lm-eval runs, HELM trials).
EPOCHS = ("runs", "mean")
_PEEK = 4096  # characters read from a .json file to recognise an inspect log
_INSPECT_JSON = re.compile(r'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
LMEVAL_SAMPLES = re.compile(
    r"^samples_(?P<task>.+)_(?P<time>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")
LMEVAL_RESULTS = re.compile(
    r"^results_(?P<time>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.json$")
_EEE_KEYS = {"schema_version", "evaluation_id", "model_id", "sample_id", "evaluation"}


# ----------------------------------------------------------------------------- records
@dataclass
class LogRows:
    """The scores of one log file, one entry per score, and where each came from.

    ``place[k]`` locates row ``k`` in the file for messages (``"sample 'q3'"``,
    ``"line 7"``), :meth:`where` adds its run (``"sample 'q3', epoch 2"``); ``run`` is
    ``None`` where a sample is not repeated.
    """

    path: Path
    dataset: list = field(default_factory=list)
    system: list = field(default_factory=list)
    metric: list = field(default_factory=list)
    instance: list = field(default_factory=list)
    run: list = field(default_factory=list)
    group: list = field(default_factory=list)
    score: list = field(default_factory=list)
    place: list = field(default_factory=list)
    higher_is_better: dict = field(default_factory=dict)  # metric -> bool, when known
    notes: list = field(default_factory=list)  # what the reader left out, one line each
    run_word: str | None = None  # "epoch", "trial": how messages name a run in the file

    def where(self, k: int) -> str:
        """Row ``k``'s place, with its run when the file has several."""
        if self.run_word is None or self.run[k] is None:
            return self.place[k]
        return f"{self.place[k]}, {self.run_word} {self.run[k]}"

    def add(self, *, dataset, system, metric, instance, run, group, score, place):
        self.dataset.append(dataset)
        self.system.append(system)
        self.metric.append(metric)
        self.instance.append(instance)
        self.run.append(run)
        self.group.append(group)
        self.score.append(score)
        self.place.append(place)


class LogSource:
    """One log file as :func:`multistat.io._model.validate` names places in it."""

    def __init__(self, path: Path, places: Sequence[str]):
        self.path = Path(path)
        self.places = list(places)

    def place(self, row: int) -> str:
        return self.places[row] if 0 <= row < len(self.places) else f"row {row + 1}"

    def where(self, row: int, column: str | None = None, *, label: str | None = None) -> str:
        return f"{self.path}, {self.place(row)}"


def dataset_name(name: str) -> str:
    """A task or evaluation name as a dataset name: path separators (``/``, ``\\``),
    which a dataset name cannot hold (it names a NetCDF group and files), become ``_``
    (``inspect_evals/gpqa`` -> ``inspect_evals_gpqa``)."""
    return str(name).replace("/", "_").replace("\\", "_")


def scalar_text(value, path: Path, place: str, what: str) -> str:
    """A sample id or metadata value as a label (str, int, float or bool)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float) and value is not None:
        return str(value)
    raise InputFileError(f"{path}, {place}: {what} is {show(json.dumps(value))}, not a "
                         f"string or number")


def group_of(meta, group_col: str | None, path: Path, place: str, where: str):
    """The group label of a sample from its metadata mapping ``meta``."""
    if group_col is None:
        return None
    if not isinstance(meta, Mapping) or group_col not in meta:
        have = sorted(meta) if isinstance(meta, Mapping) else []
        raise InputFileError(
            f"{path}, {place}: no field {group_col!r} in the {where} (group_col); it has "
            f"{_names(have, 10) if have else 'no fields'}")
    return scalar_text(meta[group_col], path, place, f"{where} field {group_col!r}")


def finite_or_nan(value: float, path: Path, place: str, metric: str) -> float:
    if math.isinf(value):
        raise InputFileError(f"{path}, {place}: metric {metric!r} is infinite ({value})")
    return float(value)


def load_json(path: Path, text: str | bytes | None = None, member: str | None = None):
    """JSON of a file (or of an archive member), a one-line error if it is not JSON."""
    inside = f" (member {member})" if member else ""
    try:
        if text is None:
            with open(path, "rb") as fh:
                text = fh.read()
        return json.loads(text)
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{path}{inside}: not UTF-8 text ({exc.reason} at byte "
                             f"{exc.start})") from None
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{path}{inside}: not valid JSON ({exc.msg} at line "
                             f"{exc.lineno}, column {exc.colno})") from None
    except OSError as exc:
        raise InputFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def json_lines(path: Path):
    """``(line number, object)`` for every non-blank line of a JSON-lines file."""
    if not path.is_file():
        raise InputFileError(f"{path}: no such file")
    with open(path, encoding="utf-8") as fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InputFileError(f"{path}, line {lineno}: not valid JSON ({exc.msg} "
                                         f"at column {exc.colno}): {show(line.strip())}"
                                         ) from None
                if not isinstance(obj, dict):
                    raise InputFileError(f"{path}, line {lineno}: a JSON "
                                         f"{type(obj).__name__}, not an object")
                yield lineno, obj
        except UnicodeDecodeError as exc:
            raise InputFileError(f"{path}: not UTF-8 text ({exc.reason} at byte "
                                 f"{exc.start})") from None


def need(obj, key: str, kind, path: Path, where: str):
    """``obj[key]`` of JSON type ``kind``, or a one-line error naming the file."""
    if not isinstance(obj, Mapping) or key not in obj:
        raise InputFileError(f"{path}{where}: no {key!r} field")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = {dict: "an object", list: "a list", str: "a string"}
        raise InputFileError(f"{path}{where}: {key!r} is {show(json.dumps(value))}, not "
                             f"{names.get(kind, getattr(kind, '__name__', str(kind)))}")
    return value


# ----------------------------------------------------------------------------- files
def expand(path) -> list[Path]:
    """Files of ``path``: a file, a folder (walked recursively, hidden entries skipped,
    sorted), a glob pattern, or a list of those (:func:`multistat.io._sources.expand_paths`,
    the score files' rule); every file must exist."""
    files, _ = expand_paths(path, recursive=True, what="logs")
    missing = next((f for f in files if not f.exists()), None)
    if missing is not None:
        raise InputFileError(f"{missing}: no such file")
    return files


def sniff(path: Path) -> str | None:
    """The log format of one file, from its name and first bytes, or None."""
    name = path.name
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return "inspect"
    if name == "per_instance_stats.json":
        return "helm"
    if LMEVAL_SAMPLES.match(name) or LMEVAL_RESULTS.match(name):
        return "lm-eval"
    if suffix == ".json":
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                head = fh.read(_PEEK)
        except OSError:
            return None
        return "inspect" if _INSPECT_JSON.match(head) else None
    if suffix in (".jsonl", ".ndjson"):
        try:
            with open(path, encoding="utf-8") as fh:
                first = next((line for line in fh if line.strip()), "")
            obj = json.loads(first) if first else None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        if isinstance(obj, dict):
            if _EEE_KEYS <= set(obj):
                return "eee"
            if {"doc_id", "doc", "filter"} <= set(obj):
                return "lm-eval"
    return None


def detect_llm(path) -> str | None:
    """The log format of ``path`` (a file, folder, pattern or list), or None when no file
    is a recognised log (then it is an ordinary score file).

    A file is recognised by its name and first bytes: ``*.eval`` and ``.json`` files that
    open with inspect's ``{"version": N, "status": ...}`` are inspect logs;
    ``samples_<task>_<time>.jsonl`` and ``results_<time>.json`` (or JSON lines whose
    first object has ``doc_id``, ``doc`` and ``filter``) lm-evaluation-harness output;
    ``per_instance_stats.json`` HELM; JSON lines whose first object has
    ``schema_version``, ``evaluation_id``, ``model_id``, ``sample_id`` and
    ``evaluation`` Every Eval Ever. Logs of several tools at once are an error.
    """
    if isinstance(path, Mapping):
        return None
    try:
        files = expand(path)
    except (InputFileError, ParameterError, ParameterTypeError):
        return None  # the ordinary readers say what is wrong with the path
    found: dict[str, Path] = {}
    for f in files:
        fmt = sniff(f)
        if fmt is not None:
            found.setdefault(fmt, f)
    if len(found) > 1:
        listed = "; ".join(f"{k}: {v}" for k, v in found.items())
        raise InputFileError(f"the input holds logs of several tools ({listed}); read each "
                             f"tool's logs on its own or pass format=")
    return next(iter(found), None)


def number(value, path: Path, place: str, metric: str, *, convention: str,
           missing: str) -> float:
    """A JSON score as a float: numbers as they are, booleans 1/0; ``None`` (no score) is
    an error unless ``missing`` is ``"keep"`` or ``"drop"`` (NaN)."""
    if value is None:
        if missing == "raise":
            raise DataValidationError(f"{path}, {place}: no score for metric {metric!r}; pass "
                                      f"missing='keep' to keep the sample as missing")
        return np.nan
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return finite_or_nan(float(value), path, place, metric)
    raise InputFileError(f"{path}, {place}: metric {metric!r} has the value "
                         f"{show(json.dumps(value))}, not a number ({convention})")
