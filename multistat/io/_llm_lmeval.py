"""lm-evaluation-harness per-sample output (``--log_samples``).

A run writes, per model, a folder holding ``results_<time>.json`` (the configuration,
``model_name``, ``higher_is_better`` per task and metric) and one
``samples_<task>_<time>.jsonl`` per task, one JSON object per document and filter:
``doc_id``, ``doc`` (the dataset row), ``filter`` (``"none"`` unless the task filters
the responses), ``metrics`` (the names of the metrics scored) and each metric's value.

The model is the system: ``model_name`` of the ``results_<time>.json`` of the same run
(same folder, same time), else its ``config.model`` with ``config.model_args``, else the
name of the folder (lm-eval names it after the model). The task (from the file name) is
the dataset, each metric a metric -- named ``metric`` for the filter ``"none"`` and
``metric,filter`` otherwise, as lm-eval's results name them -- and ``doc_id`` the
instance. lm-eval's ``repeats`` are reduced by the task's filters to one value per
document and filter, so they arrive as one score; several runs of one model and task
(several ``samples_<task>_*.jsonl`` of one system, e.g. other seeds) are runs
``"1"``, ``"2"``... in the order of their times. ``higher_is_better`` from the results
file marks lower-is-better metrics.

Values: numbers are themselves and booleans 1/0. Metrics whose per-sample value is not
a number (lists or strings: the inputs of corpus-level metrics such as BLEU or
perplexity, which lm-eval aggregates over the whole task) are not per-instance scores:
they are left out and listed in ``attrs["dropped"]``. A ``null`` value is a missing
score.
"""

from __future__ import annotations

from pathlib import Path

from multistat.errors import InputFileError
from multistat.io._llm_common import (
    LMEVAL_RESULTS,
    LMEVAL_SAMPLES,
    LogRows,
    dataset_name,
    group_of,
    json_lines,
    load_json,
    number,
    scalar_text,
    sniff,
)
from multistat.io._sources import show

_CONVENTION = "lm-eval per-sample metrics are numbers or booleans"


def read_lmeval(files: list[Path], *, group_col=None, missing="raise") -> list[LogRows]:
    """One :class:`~multistat.io._llm_common.LogRows` per samples file among ``files``
    (``results_*.json`` are read for the model's name; other files, such as the task's
    own data, are skipped)."""
    samples = []
    for path in files:
        m = LMEVAL_SAMPLES.match(path.name)
        if m is not None:
            samples.append((path, m.group("task"), m.group("time")))
        elif sniff(path) == "lm-eval" and not LMEVAL_RESULTS.match(path.name):
            samples.append((path, None, None))  # renamed: the task is the file's stem
    if not samples:
        raise InputFileError(f"{files[0]}: no lm-eval samples_<task>_<time>.jsonl files "
                             f"(run lm-eval with --log_samples)")
    results: dict = {}
    named = []
    for path, task, time in samples:
        info = _results(path.parent, time, results) if time is not None else None
        named.append((path, task, time, info))
    # runs: the sample files of one (system, task), in the order of their times
    keyed: dict[tuple[str, str], list] = {}
    for path, task, time, info in named:
        system = _system(path, info)
        keyed.setdefault((system, task), []).append((time or "", path))
    run_of = {}
    for group in keyed.values():
        for k, (_, path) in enumerate(sorted(group)):
            run_of[path] = str(k + 1) if len(group) > 1 else None
    out = []
    for path, task, time, info in named:
        out.append(_rows(path, task, _system(path, info), info, run_of[path],
                         group_col=group_col, missing=missing))
    return out


def _results(folder: Path, time: str, cache: dict):
    """The ``results_<time>.json`` beside a samples file, or None."""
    path = folder / f"results_{time}.json"
    if path not in cache:
        cache[path] = None
        if path.is_file():
            data = load_json(path)
            if not isinstance(data, dict):
                raise InputFileError(f"{path}: not an lm-eval results file (a JSON object)")
            cache[path] = data
    return cache[path]


def _system(path: Path, info) -> str:
    if info:
        name = info.get("model_name")
        if isinstance(name, str) and name:
            return name
        config = info.get("config") or {}
        model = config.get("model") if isinstance(config, dict) else None
        if isinstance(model, str) and model:
            args = config.get("model_args")
            if isinstance(args, dict) and args:
                args = ",".join(f"{k}={v}" for k, v in args.items())
            return f"{model}({args})" if isinstance(args, str) and args else model
    return path.parent.name


def _rows(path: Path, task, system: str, info, run, *, group_col, missing) -> LogRows:
    rows = LogRows(path, run_word=None)
    hib_all = (info or {}).get("higher_is_better") or {}
    corpus: dict = {}
    seen_task = task
    for lineno, obj in json_lines(path):
        place = f"line {lineno}"
        if "doc_id" not in obj:
            raise InputFileError(f"{path}, {place}: no 'doc_id' field; not an lm-eval "
                                 f"samples file")
        doc_id = scalar_text(obj["doc_id"], path, place, "doc_id")
        place = f"line {lineno} (doc_id {doc_id})"
        names = obj.get("metrics")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise InputFileError(f"{path}, {place}: 'metrics' is not a list of metric "
                                 f"names")
        filt = obj.get("filter", "none")
        if not isinstance(filt, str):
            raise InputFileError(f"{path}, {place}: 'filter' is {show(filt)}, not a name")
        doc = obj.get("doc")
        group = group_of(doc if isinstance(doc, dict) else {}, group_col, path, place,
                         "doc")
        if seen_task is None:  # a samples file not named samples_<task>_<time>.jsonl
            seen_task = path.stem
        for name in names:
            metric = name if filt == "none" else f"{name},{filt}"
            if name not in obj:
                value = None
            else:
                value = obj[name]
            if isinstance(value, list | str | dict):
                corpus[metric] = corpus.get(metric, 0) + 1
                continue
            rows.add(dataset=dataset_name(seen_task), system=system, metric=metric,
                     instance=doc_id, run=run, group=group,
                     score=number(value, path, place, metric, convention=_CONVENTION,
                                  missing=missing),
                     place=place)
            task_hib = hib_all.get(seen_task) if isinstance(hib_all, dict) else None
            if isinstance(task_hib, dict) and isinstance(task_hib.get(name), bool):
                rows.higher_is_better[metric] = task_hib[name]
    for metric, n in corpus.items():
        rows.notes.append(f"{path}: metric {metric!r} has no number per sample ({n} "
                          f"lines: the input of a corpus-level metric), left out")
    if not rows.score and not rows.notes:
        raise InputFileError(f"{path}: no samples")
    return rows
