"""Every Eval Ever instance-level records (``instance_level_eval.schema.json``).

Each line of a ``{uuid}_samples.jsonl`` file is one scored sample: ``model_id``,
``evaluation_name``, ``sample_id``, ``evaluation.score`` (a number), optionally
``evaluation_result_id`` (which result of the aggregate record ``{uuid}.json`` beside it
the score belongs to, e.g. ``match:accuracy`` for an inspect scorer) and ``metadata``
(string values; the converters put inspect's epoch there).

The model is the system, the evaluation name the dataset, the result id the metric
(``"score"`` for lines without one), the sample id the instance and
``evaluation.score`` the score (a boolean is 1/0). Repeated lines of one model,
evaluation, metric and sample are runs, labelled by ``metadata.epoch`` when the lines
have it, else ``"1"``, ``"2"``... in file order. The aggregate record's
``metric_config.lower_is_better`` marks lower-is-better metrics.
"""

from __future__ import annotations

from pathlib import Path

from multistat.errors import InputFileError
from multistat.io._llm_common import (
    LogRows,
    dataset_name,
    group_of,
    json_lines,
    load_json,
    need,
    number,
    scalar_text,
    sniff,
)

_CONVENTION = "Every Eval Ever scores are numbers"


def read_eee(files: list[Path], *, group_col=None, missing="raise") -> list[LogRows]:
    """One :class:`~multistat.io._llm_common.LogRows` per instance-level JSON-lines file among
    ``files`` (aggregate ``.json`` records are read for the metric directions)."""
    logs = [f for f in files if sniff(f) == "eee"]
    if not logs:
        raise InputFileError(f"{files[0]}: not Every Eval Ever instance-level JSON lines "
                             f"(objects with schema_version, evaluation_id, model_id, "
                             f"sample_id and evaluation)")
    return [_rows(path, group_col=group_col, missing=missing) for path in logs]


def _directions(path: Path) -> dict:
    """``{evaluation_result_id or evaluation_name: lower_is_better}`` of the aggregate
    record beside a samples file, if there is one."""
    name = path.name.removesuffix(".jsonl").removesuffix("_samples")
    agg = path.with_name(f"{name}.json")
    if not agg.is_file():
        return {}
    record = load_json(agg)
    out = {}
    results = record.get("evaluation_results") if isinstance(record, dict) else None
    for result in results if isinstance(results, list) else []:
        if not isinstance(result, dict):
            continue
        lower = (result.get("metric_config") or {}).get("lower_is_better")
        key = result.get("evaluation_result_id") or result.get("evaluation_name")
        if isinstance(lower, bool) and isinstance(key, str):
            out[key] = lower
    return out


def _rows(path: Path, *, group_col, missing) -> LogRows:
    rows = LogRows(path, run_word="run")
    seen: dict = {}
    lower = _directions(path)
    for lineno, obj in json_lines(path):
        where = f"line {lineno}"
        system = need(obj, "model_id", str, path, f", {where}")
        evaluation = need(obj, "evaluation_name", str, path, f", {where}")
        if "sample_id" not in obj:
            raise InputFileError(f"{path}, {where}: no 'sample_id' field")
        sid = scalar_text(obj["sample_id"], path, where, "sample_id")
        place = f"{where} (sample {sid!r})"
        result = obj.get("evaluation_result_id")
        metric = result if isinstance(result, str) and result else "score"
        scores = need(obj, "evaluation", dict, path, f", {place}")
        meta = obj.get("metadata") or {}
        epoch = meta.get("epoch") if isinstance(meta, dict) else None
        key = (evaluation, system, metric, sid)
        seen[key] = seen.get(key, 0) + 1
        run = str(epoch) if isinstance(epoch, str | int) else str(seen[key])
        group = group_of(meta, group_col, path, place, "metadata")
        rows.add(dataset=dataset_name(evaluation), system=system, metric=metric,
                 instance=sid, run=run, group=group,
                 score=number(scores.get("score"), path, place, metric,
                              convention=_CONVENTION, missing=missing),
                 place=place)
        for k in (metric, evaluation):
            if k in lower:
                rows.higher_is_better[metric] = not lower[k]
                break
    if not rows.score:
        raise InputFileError(f"{path}: no samples")
    return rows
