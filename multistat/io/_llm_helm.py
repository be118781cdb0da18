"""HELM run folders: ``run_spec.json`` and ``per_instance_stats.json``.

``helm-run`` writes one folder per run (``benchmark_output/runs/<suite>/<run name>/``).
Its ``run_spec.json`` names the run (``name``, e.g.
``mmlu:subject=anatomy,method=multiple_choice_joint,model=openai_gpt2``) and the model
(``adapter_spec.model``); its ``per_instance_stats.json`` is a list with one entry per
instance, train trial and perturbation: ``instance_id``, ``train_trial_index``, an
optional ``perturbation``, and ``stats``, each ``{"name": {"name": metric, "split":
...}, "count", "sum", "mean", ...}``.

The model is the system; the run name without its ``model=`` and ``model_deployment=``
arguments is the dataset (so the runs of several models on one scenario share it); each
statistic (``name.name``) a metric, its ``mean`` (else ``sum / count``) the score;
``instance_id`` the instance; ``train_trial_index`` the run (HELM's repeated trials with
other in-context examples). Entries with a ``perturbation`` (robustness and fairness
variants of an instance) and statistics with ``count`` 0 (computed on nothing, such as
``training_co2_cost``) are left out and counted in ``attrs["dropped"]``; a ``null``
mean is a missing score. HELM's per-instance stats carry no sample metadata
(no ``group_col``) and no metric direction: name lower-is-better statistics
(``inference_runtime``, token counts...) with ``lower_is_better``.
"""

from __future__ import annotations

import math
from pathlib import Path

from multistat.errors import InputFileError, ParameterError
from multistat.io._llm_common import LogRows, dataset_name, load_json, need, number, scalar_text
from multistat.io._sources import show

_CONVENTION = "HELM statistics have a numeric mean, or sum and count"


def read_helm(files: list[Path], *, group_col=None, missing="raise") -> list[LogRows]:
    """One :class:`~multistat.io._llm_common.LogRows` per ``per_instance_stats.json`` among
    ``files`` (other files of the run folders are skipped)."""
    if group_col is not None:
        raise ParameterError("`group_col`: HELM's per_instance_stats.json carries no sample "
                             "metadata to name a group")
    stats = [f for f in files if f.name == "per_instance_stats.json"]
    if not stats:
        raise InputFileError(f"{files[0]}: no HELM per_instance_stats.json (give run "
                             f"folders of helm-run)")
    return [_rows(path, missing=missing) for path in stats]


def run_identity(folder: Path) -> tuple[str, str]:
    """``(dataset, model)`` of a run folder from its ``run_spec.json``."""
    spec_path = folder / "run_spec.json"
    if not spec_path.is_file():
        raise InputFileError(f"{folder}: no run_spec.json beside per_instance_stats.json "
                             f"(it names the model and the scenario)")
    spec = load_json(spec_path)
    name = need(spec, "name", str, spec_path, "")
    adapter = need(spec, "adapter_spec", dict, spec_path, "")
    model = adapter.get("model") or adapter.get("model_deployment")
    if not isinstance(model, str) or not model:
        raise InputFileError(f"{spec_path}: adapter_spec has no 'model'")
    return dataset_name(_without_model(name)), model


def _without_model(name: str) -> str:
    """``scenario:a=1,model=x,b=2`` -> ``scenario:a=1,b=2``."""
    head, sep, args = name.partition(":")
    if not sep:
        return name
    kept = [a for a in args.split(",") if a and not a.startswith(("model=",
                                                                  "model_deployment="))]
    return f"{head}:{','.join(kept)}" if kept else head


def _rows(path: Path, *, missing) -> LogRows:
    dataset, model = run_identity(path.parent)
    entries = load_json(path)
    if not isinstance(entries, list):
        raise InputFileError(f"{path}: not HELM per-instance stats (a JSON list)")
    rows = LogRows(path, run_word="trial")
    perturbed = 0
    empty: dict = {}
    for k, entry in enumerate(entries):
        where = f"entry {k}"
        if not isinstance(entry, dict):
            raise InputFileError(f"{path}, {where}: not a JSON object")
        if "instance_id" not in entry:
            raise InputFileError(f"{path}, {where}: no 'instance_id'")
        inst = scalar_text(entry["instance_id"], path, where, "instance_id")
        place = f"instance {inst!r}"
        if entry.get("perturbation"):
            perturbed += 1
            continue
        trial = entry.get("train_trial_index", 0)
        if not isinstance(trial, int) or isinstance(trial, bool):
            raise InputFileError(f"{path}, {place}: train_trial_index {show(trial)} is not "
                                 f"an integer")
        stats = need(entry, "stats", list, path, f", {place}")
        for stat in stats:
            name = stat.get("name") if isinstance(stat, dict) else None
            metric = name.get("name") if isinstance(name, dict) else None
            if not isinstance(metric, str) or not metric:
                raise InputFileError(f"{path}, {place}: a stat without a name "
                                     f"({show(stat)})")
            if isinstance(name, dict) and name.get("perturbation"):
                continue  # the perturbed variants' stats, counted with their entries
            if stat.get("count") == 0:  # computed on nothing (e.g. training_co2_cost)
                empty[metric] = empty.get(metric, 0) + 1
                continue
            rows.add(dataset=dataset, system=model, metric=metric, instance=inst,
                     run=str(trial), group=None,
                     score=_value(stat, path, f"{place}, trial {trial}", metric, missing),
                     place=place)
    for metric, n in empty.items():
        rows.notes.append(f"{path}: statistic {metric!r} has count 0 (no value) in {n} "
                          f"entr{'y' if n == 1 else 'ies'}, left out")
    if perturbed:
        rows.notes.append(f"{path}: {perturbed} perturbed instance entr"
                          f"{'y' if perturbed == 1 else 'ies'} (robustness/fairness "
                          f"variants) left out")
    return rows


def _value(stat: dict, path: Path, place: str, metric: str, missing: str) -> float:
    count = stat.get("count")
    if "mean" in stat and stat["mean"] is not None:
        return number(stat["mean"], path, place, metric, convention=_CONVENTION,
                      missing=missing)
    total = stat.get("sum")
    if isinstance(count, int | float) and isinstance(total, int | float) and count:
        value = float(total) / float(count)
        if math.isfinite(value):
            return value
    raise InputFileError(f"{path}, {place}: statistic {metric!r} has no mean and no "
                         f"sum/count ({show(stat)})")
