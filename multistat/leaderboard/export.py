"""Write compare and rank results as Every Eval Ever aggregate records.

Every Eval Ever (evaleval/every_eval_ever) is a shared format for evaluation results: one
JSON record per model and evaluation run (``eval.schema.json``, schema version 0.3.0),
with the model, the source, the evaluation library and a list of results, each a score
with its uncertainty and free string details. :func:`to_eee` writes one record per
system of a multistat table, so a leaderboard built with multistat can be contributed to
the shared database with what it rests on:

* ``score_details.score``: the system's score (mean or corpus metric) on the dataset x
  metric; ``uncertainty.confidence_interval``: its interval with the level and the method
  (Wilson for a binary metric, bootstrap percentile otherwise: :func:`multistat.system_scores`);
  ``num_samples``: the instances, ``num_bootstrap_samples``: the resamples when the
  interval is a bootstrap one;
* ``score_details.details`` (strings): for a compare table, per test the systems this one
  is significantly better / worse than after the correction, and the test, correction,
  alpha and seed behind them; for a rank table, the rank, its interval, the rank range,
  the cluster and P(best), and the test and correction of the clusters;
* ``source_metadata.additional_details`` and ``eval_library.additional_details``: the
  run's settings from the table's metadata (tests, correction, alpha, seed, resamples,
  confidence level, cluster option, input hash, multistat version).

Nothing is dropped silently: a result without a finite score is left out with a
:class:`~multistat.errors.DroppedDataWarning` naming it.
"""

from __future__ import annotations

import json
import math
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from multistat._atomic import write_text
from multistat.errors import DataValidationError, DroppedDataWarning, ParameterError

__all__ = ["EEE_SCHEMA_VERSION", "to_eee"]

#: the version of the Every Eval Ever aggregate schema the records follow
EEE_SCHEMA_VERSION = "0.3.0"
#: metadata keys of a multistat table recorded in the source's additional details
_RUN_KEYS = ("tests", "test", "test_requested", "correction", "alpha", "family", "seed",
             "n_resamples", "confidence_level", "ci_method", "bootstrap_pvalue",
             "statistic", "alternative", "null_value", "cluster", "equivalence_margin",
             "mde_power", "rule", "rank_interval", "input_sha256")
RELATIONSHIPS = ("first_party", "third_party", "collaborative", "other")


def _s(v) -> str:
    """A detail value as the string the schema asks for (floats by their shortest
    round-tripping repr, lists comma-joined)."""
    if isinstance(v, (list, tuple)):
        return ",".join(_s(x) for x in v)
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    if isinstance(v, (np.integer, np.bool_)):
        return str(v.item())
    return str(v)


def _finite(v) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _kind(table: pd.DataFrame) -> str:
    if {"system", "rank", "score"} <= set(table.columns):
        return "rank"
    if {"system_a", "system_b", "test", "reject"} <= set(table.columns):
        return "compare"
    raise DataValidationError(
        "to_eee needs a compare table (columns system_a, system_b, test, reject) or a rank "
        f"table (columns system, rank, score); got columns {list(table.columns)[:12]}")


def _meta(table) -> dict:
    meta = table.attrs.get("multistat", {})
    return meta if isinstance(meta, dict) else {}


def _score_rows(table, kind, study, systems, meta) -> dict:
    """``{(dataset, metric, system): {score, ci_low, ci_high, confidence_level, ci_method,
    n, n_resamples, higher_is_better}}``: from ``systems``, else from the study
    (:func:`multistat.system_scores` with the table's seed and resamples), else from the
    table itself (a rank table's score interval; a compare table's score columns)."""
    if systems is None and study is not None:
        # lazily: the statistics layer (xarray) only when a study is given
        from multistat.comparison import system_scores

        level = meta.get("confidence_level", 0.95)
        systems = system_scores(
            study, n_resamples=int(meta.get("n_resamples") or 10_000),
            seed=meta.get("seed", 0) if meta.get("seed") is not None else 0,
            confidence_level=float(level) if _finite(level) else 0.95,
            datasets=sorted(set(table["dataset"].astype(str))),
            metrics=sorted(set(table["metric"].astype(str))))
    out: dict = {}
    if systems is not None:
        need = {"dataset", "metric", "system", "score"} - set(systems.columns)
        if need:
            raise DataValidationError(f"`systems` lacks column(s) {sorted(need)}; has "
                                      f"{list(systems.columns)}")
        for r in systems.to_dict("records"):
            out[(str(r["dataset"]), str(r["metric"]), str(r["system"]))] = r
        return out
    if kind == "rank":
        level = meta.get("confidence_level", 0.95)
        for r in table.to_dict("records"):
            out[(str(r["dataset"]), str(r["metric"]), str(r["system"]))] = {
                **r, "confidence_level": level, "ci_method": "bootstrap percentile",
                "n_resamples": meta.get("n_resamples")}
        return out
    for side in ("a", "b"):
        for r in table[["dataset", "metric", f"system_{side}", f"score_{side}", "n",
                        "higher_is_better"]].to_dict("records"):
            key = (str(r["dataset"]), str(r["metric"]), str(r[f"system_{side}"]))
            out.setdefault(key, {"score": r[f"score_{side}"], "n": r["n"],
                                 "higher_is_better": r["higher_is_better"]})
    return out


def _compare_details(table) -> dict:
    """``{(dataset, metric, system): {detail: str}}`` from the corrected decisions of
    every test of a compare table."""
    out: dict = {}
    cols = ["dataset", "metric", "system_a", "system_b", "test", "reject", "estimate",
            "score_a", "score_b", "higher_is_better", "correction", "alpha", "seed"]
    have = [c for c in cols if c in table.columns]
    for (ds, metric, test), g in table[have].groupby(["dataset", "metric", "test"],
                                                     sort=False, observed=True):
        better: dict = {}
        worse: dict = {}
        for r in g.to_dict("records"):
            a, b = str(r["system_a"]), str(r["system_b"])
            better.setdefault(a, []), better.setdefault(b, [])
            worse.setdefault(a, []), worse.setdefault(b, [])
            if not bool(r["reject"]):
                continue
            est = float(r["estimate"])
            if not (_finite(est) and est != 0):
                est = float(r.get("score_a", np.nan)) - float(r.get("score_b", np.nan))
            if not _finite(est) or est == 0:
                continue
            a_wins = (est > 0) == bool(r.get("higher_is_better", True))
            win, lose = (a, b) if a_wins else (b, a)
            better[win].append(lose)
            worse[lose].append(win)
        first = g.iloc[0]
        for s, beaten in better.items():
            d = out.setdefault((str(ds), str(metric), s), {})
            d[f"{test}.significantly_better_than"] = ",".join(sorted(beaten))
            d[f"{test}.significantly_worse_than"] = ",".join(sorted(worse[s]))
            d[f"{test}.correction"] = _s(first.get("correction", "none"))
            d[f"{test}.alpha"] = _s(first.get("alpha", ""))
            if "seed" in first and int(first["seed"]) >= 0:
                d[f"{test}.seed"] = _s(first["seed"])
    return out


def _rank_details(table, meta) -> dict:
    out = {}
    for r in table.to_dict("records"):
        d = {k: _s(r[k]) for k in ("rank", "rank_ci_low", "rank_ci_high", "expected_rank",
                                    "p_best", "rank_range_low", "rank_range_high",
                                    "cluster", "beats", "beaten_by") if k in r}
        for k in ("test", "correction", "alpha", "seed", "n_resamples"):
            if meta.get(k) is not None:
                d[f"rank.{k}"] = _s(meta[k])
        out[(str(r["dataset"]), str(r["metric"]), str(r["system"]))] = d
    return out


def _higher_is_better(table) -> dict:
    col = "higher_is_better"
    if col not in table.columns:
        return {}
    return {(str(d), str(m)): bool(h) for d, m, h in
            table[["dataset", "metric", col]].drop_duplicates().itertuples(index=False)}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "system"


def to_eee(table: pd.DataFrame, path, *, study=None, systems: pd.DataFrame | None = None,
           source_organization_name: str = "unknown",
           evaluator_relationship: str = "third_party", model_ids: dict | None = None,
           binary_metrics=None, retrieved_timestamp: str | None = None) -> list[dict]:
    """Write a compare or rank table as Every Eval Ever aggregate records, one per system.

    Parameters
    ----------
    table : DataFrame
        A :func:`multistat.compare` table or a :func:`multistat.rank` table (with its
        ``attrs["multistat"]`` metadata, as returned or read back from Parquet).
    path : str or Path
        ``*.jsonl``: one record per line; otherwise a folder (created) with one
        ``<system>.json`` per system. Written atomically.
    study : optional
        The study the table came from: each system's score interval is then
        :func:`multistat.system_scores`'s with the table's seed and resamples (Wilson for
        binary metrics).
    systems : DataFrame, optional
        A per-system table (:func:`multistat.system_scores`, ``compare --systems-out``)
        to take the scores and intervals from instead.
    source_organization_name : str
        Who ran the evaluation (the schema requires it).
    evaluator_relationship : {"first_party", "third_party", "collaborative", "other"}
    model_ids : dict, optional
        ``{system: id}``: the model's id in HuggingFace form (default: the system name).
    binary_metrics : iterable of str, optional
        Metrics whose scores are proportions (min 0, max 1, unit ``proportion``); default:
        those the per-system table gave a binomial interval, else none.
    retrieved_timestamp : str, optional
        Unix time of the record (default: now); give it for byte-identical output.

    Returns
    -------
    list of dict
        The records written.

    Examples
    --------
    >>> import numpy as np, multistat, tempfile, os
    >>> from multistat import cube
    >>> rng = np.random.default_rng(0)
    >>> acc = (rng.random((2, 1, 30)) < [[[0.8]], [[0.5]]]).astype(float)
    >>> ds = cube.make_dataset("quiz", acc, systems=["m1", "m2"], metrics=["accuracy"],
    ...                        kind=["binary"], instances=[f"q{i}" for i in range(30)])
    >>> study = cube.make_study({"quiz": ds})
    >>> table = multistat.compare(study, tests=("t",))
    >>> out = os.path.join(tempfile.mkdtemp(), "records.jsonl")
    >>> recs = to_eee(table, out, study=study, retrieved_timestamp="1764201600")
    >>> [r["model_info"]["id"] for r in recs]
    ['m1', 'm2']
    >>> recs[0]["evaluation_results"][0]["score_details"]["uncertainty"][
    ...     "confidence_interval"]["method"]
    'wilson'
    """
    kind = _kind(table)
    if evaluator_relationship not in RELATIONSHIPS:
        raise ParameterError(f"`evaluator_relationship` must be one of "
                             f"{', '.join(RELATIONSHIPS)}; got {evaluator_relationship!r}")
    meta = _meta(table)
    # lazily: the package version only
    from multistat import __version__

    stamp = retrieved_timestamp if retrieved_timestamp is not None else repr(time.time())
    scores = _score_rows(table, kind, study, systems, meta)
    details = _compare_details(table) if kind == "compare" else _rank_details(table, meta)
    hib = _higher_is_better(table)
    if binary_metrics is None:
        binary_metrics = {m for (_, m, _), r in scores.items()
                          if str(r.get("ci_method", "")) in ("wilson", "clopper-pearson")}
    binary_metrics = {str(m) for m in binary_metrics}
    run = {k: _s(meta[k]) for k in _RUN_KEYS if meta.get(k) is not None}
    run["multistat_table"] = kind
    groups = list(dict.fromkeys(zip(table["dataset"].astype(str),
                                    table["metric"].astype(str))))
    if kind == "rank":
        sysnames = list(dict.fromkeys(table["system"].astype(str)))
    else:
        sysnames = list(dict.fromkeys(list(table["system_a"].astype(str))
                                      + list(table["system_b"].astype(str))))
    records, dropped = [], []
    for system in sysnames:
        results = []
        for ds, metric in groups:
            key = (ds, metric, system)
            row = scores.get(key)
            if row is None:
                continue
            if not _finite(row.get("score")):
                dropped.append(f"{system} on {ds} / {metric} (score {row.get('score')!r})")
                continue
            h = hib.get((ds, metric), bool(row.get("higher_is_better", True)))
            config = {"metric_id": metric, "metric_name": metric, "lower_is_better": not h,
                      "score_type": "continuous"}
            if metric in binary_metrics:
                config.update(min_score=0.0, max_score=1.0, metric_unit="proportion")
            else:
                config.update(min_score=None, max_score=None)
            unc: dict = {}
            if _finite(row.get("ci_low")) and _finite(row.get("ci_high")):
                ci: dict = {"lower": float(row["ci_low"]), "upper": float(row["ci_high"])}
                if _finite(row.get("confidence_level")):
                    ci["confidence_level"] = float(row["confidence_level"])
                if row.get("ci_method"):
                    ci["method"] = str(row["ci_method"])
                unc["confidence_interval"] = ci
            if _finite(row.get("n")):
                unc["num_samples"] = int(row["n"])
            if (str(row.get("ci_method", "")).startswith("bootstrap")
                    and _finite(row.get("n_resamples"))):
                unc["num_bootstrap_samples"] = int(row["n_resamples"])
            score_details: dict = {"score": float(row["score"])}
            if details.get(key):
                score_details["details"] = dict(details[key])
            if unc:
                score_details["uncertainty"] = unc
            results.append({
                "evaluation_result_id": f"{ds}/{metric}", "evaluation_name": ds,
                "source_data": {"dataset_name": ds, "source_type": "other"},
                "metric_config": config, "score_details": score_details})
        if not results:
            continue
        model_id = str((model_ids or {}).get(system, system))
        records.append({
            "schema_version": EEE_SCHEMA_VERSION,
            "evaluation_id": f"multistat/{model_id}/{stamp}",
            "retrieved_timestamp": stamp,
            "source_metadata": {
                "source_name": "multistat", "source_type": "evaluation_run",
                "source_organization_name": source_organization_name,
                "evaluator_relationship": evaluator_relationship,
                "additional_details": run},
            "model_info": {"name": system, "id": model_id, "additional_details": {
                "deployment_type": "unknown", "model_availability": "unknown"}},
            "eval_library": {"name": "multistat", "version": str(__version__),
                             "additional_details": run},
            "evaluation_results": results})
    if dropped:
        warnings.warn(f"to_eee: {len(dropped)} result(s) without a finite score left out: "
                      + "; ".join(dropped[:5]) + ("; ..." if len(dropped) > 5 else ""),
                      DroppedDataWarning, stacklevel=2)
    _write(records, Path(path))
    return records


def _write(records: list[dict], path: Path) -> None:
    if path.suffix == ".jsonl":
        write_text(path, "".join(json.dumps(r, allow_nan=False) + "\n" for r in records))
        return
    if path.exists() and not path.is_dir():
        raise ParameterError(f"EEE output {str(path)!r} exists and is not a folder; give a "
                             "folder or a .jsonl file")
    path.mkdir(parents=True, exist_ok=True)
    seen: set = set()
    for r in records:
        name = _slug(r["model_info"]["name"])
        while name.lower() in seen:  # distinct files for names that slug alike
            name += "_"
        seen.add(name.lower())
        write_text(path / f"{name}.json", json.dumps(r, indent=2, allow_nan=False) + "\n")
