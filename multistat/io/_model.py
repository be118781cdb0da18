"""Checks of the data model on coded long data: duplicates, completeness, NaN policy,
at least 2 systems and 2 instances; the sorted long frame and the metrics metadata."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pandas as pd

from multistat._validation import bad_name, twin_names, twins_why
from multistat.errors import DataValidationError, DroppedDataWarning, ParameterError
from multistat.io._layouts import Long
from multistat.io._sources import _names, plural, show


class Places(Protocol):
    """Where rows came from, for messages: a score file (``_sources.Source``) or an
    evaluation log (``_llm_common.LogSource``)."""

    path: Path

    def place(self, row: int) -> str: ...

    def where(self, row: int, column: str | None = None, *, label: str | None = None
              ) -> str: ...


# ----------------------------------------------------------------------------- validation
def _appearance(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Relabel integer codes 0, 1, ... in order of first appearance; also the old codes."""
    new, uniq = pd.factorize(codes)
    return new.astype(np.int64), np.asarray(uniq, dtype=np.int64)


def validate(raw: Long, sources: Sequence[Places], *, missing: str,
              lower_is_better: tuple[str, ...], rater_aggregate: str | None = None):
    """Checks of the data model; returns (sorted frame, metrics meta, dropped lines)."""
    aggregated = 0
    if rater_aggregate is not None:
        raw, aggregated = _mean_per_rater(raw)
    label = sources[0].path if len(sources) == 1 else ", ".join(str(s.path) for s in sources)
    codes, score = raw.codes, raw.score
    ds_c, ds_u = _appearance(codes["dataset"])
    met_c, met_u = _appearance(codes["metric"])
    sys_g, inst_g = codes["system"], codes["instance"]
    ds_names = [raw.names["dataset"][u] for u in ds_u]
    met_names = [raw.names["metric"][u] for u in met_u]
    sys_names, inst_names = raw.names["system"], raw.names["instance"]

    check_names(raw, sources)
    unknown = [m for m in lower_is_better if m not in met_names]
    if unknown:
        raise ParameterError(
            f"`lower_is_better` names unknown metric(s) {_names(unknown)}; the metrics are "
            f"{_names(met_names, 20)}"
        )

    runs = codes.get("run")
    run_names = raw.names.get("run", [])
    raters = codes.get("rater")
    keys = pd.DataFrame({"d": ds_c, "s": sys_g, "m": met_c, "i": inst_g})
    if runs is not None:
        keys["r"] = runs
    if raters is not None:
        keys["q"] = raters
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        n_extra = int(keys.duplicated().sum())
        f = int(np.flatnonzero(dup)[0])
        same = np.flatnonzero(dup & (ds_c == ds_c[f]) & (sys_g == sys_g[f])
                              & (met_c == met_c[f]) & (inst_g == inst_g[f])
                              & (True if runs is None else runs == runs[f])
                              & (True if raters is None else raters == raters[f]))
        places = []
        for i in same[:3]:
            src = sources[raw.src[i]]
            places.append(src.place(int(raw.row[i])) if len(sources) == 1
                          else src.where(int(raw.row[i])))
        values = score[same]
        agree = ("identical scores" if np.allclose(values, values[0], equal_nan=True)
                 else f"scores {_names([repr(float(v)) for v in values[:3]])}")
        if raters is not None:
            raise DataValidationError(
                f"{label}: {plural(n_extra, 'repeated rating')}: rater "
                f"{raw.names['rater'][raters[f]]!r} rated dataset {ds_names[ds_c[f]]!r}, "
                f"system {sys_names[sys_g[f]]!r}, metric {met_names[met_c[f]]!r}, instance "
                f"{inst_names[inst_g[f]]!r} more than once, at {' and '.join(places)} "
                f"({agree}); pass rater_aggregate='mean' (CLI --rater-aggregate mean) to "
                f"average a rater's ratings of one cell")
        raise DataValidationError(
            f"{label}: {plural(n_extra, 'duplicated row')} for the same (dataset, system, "
            f"metric, instance); first: dataset {ds_names[ds_c[f]]!r}, system "
            f"{sys_names[sys_g[f]]!r}, metric {met_names[met_c[f]]!r}, instance "
            f"{inst_names[inst_g[f]]!r}"
            f"{'' if runs is None else f', run {run_names[runs[f]]!r}'} at "
            f"{' and '.join(places)} ({agree}); if another column tells the rows apart, "
            f"add it to system_col or instance_col"
            f"{' (or name the run column with run_col)' if runs is None else ''}"
        )

    if "group" in codes:
        _check_groups(raw, sources, ds_c, ds_names, inst_g, inst_names)

    isnan = np.isnan(score)
    keep = np.ones(len(score), dtype=bool)
    dropped: list[str] = []
    lut = np.full(len(sys_names), -1, dtype=np.int64)
    for d, ds_name in enumerate(ds_names):
        ds_rows = np.flatnonzero(ds_c == d)
        systems = pd.unique(sys_g[ds_rows])  # in order of first appearance
        if len(systems) < 2:
            raise DataValidationError(
                f"{label}: dataset {ds_name!r} has {plural(len(systems), 'system')} "
                f"({_names(sys_names[s] for s in systems)}); a comparison needs at least 2 "
                f"(check system_col or the format)"
            )
        lut[:] = -1
        lut[systems] = np.arange(len(systems))
        n_sys = len(systems)
        for m in pd.unique(met_c[ds_rows]):
            pos = ds_rows[met_c[ds_rows] == m]
            inst_local, inst_uniq = pd.factorize(inst_g[pos])
            n_inst = len(inst_uniq)
            cell = lut[sys_g[pos]] * n_inst + inst_local
            present = np.bincount(cell, minlength=n_sys * n_inst).reshape(n_sys, n_inst) > 0
            nan_flat = np.zeros(n_sys * n_inst, dtype=bool)
            nan_flat[cell[isnan[pos]]] = True
            nan_cell = nan_flat.reshape(n_sys, n_inst)
            # runs: every instance of a system has each of that system's runs
            lack_run = np.zeros((n_sys, n_inst), dtype=bool)
            if runs is not None:
                count = np.bincount(cell, minlength=n_sys * n_inst).reshape(n_sys, n_inst)
                sys_runs = pd.DataFrame({"s": lut[sys_g[pos]], "r": runs[pos]}
                                        ).drop_duplicates()
                n_runs_sys = np.bincount(sys_runs["s"].to_numpy(), minlength=n_sys)
                lack_run = present & (count < n_runs_sys[:, None])

            def inst_name(j, _u=inst_uniq):
                return inst_names[_u[j]]

            where = f"dataset {ds_name!r}, metric {met_names[m]!r}"
            if missing == "raise":
                if nan_cell.any():
                    first = pos[np.flatnonzero(isnan[pos])[0]]
                    src = sources[raw.src[first]]
                    raise DataValidationError(
                        f"{src.where(int(raw.row[first]))}: NaN score (system "
                        f"{sys_names[sys_g[first]]!r}, {where}, instance "
                        f"{inst_names[inst_g[first]]!r}; "
                        f"{plural(int(nan_cell.sum()), 'NaN score')} for this metric); pass "
                        f"missing='drop' to drop those instances for every system"
                    )
                if runs is not None and lack_run.any():  # only runs leave a run lacking
                    s_, j = (int(v) for v in np.argwhere(lack_run)[0])
                    have = set(runs[pos[(lut[sys_g[pos]] == s_) & (inst_local == j)]])
                    all_runs = pd.unique(runs[pos[lut[sys_g[pos]] == s_]])
                    lacking = [run_names[r] for r in all_runs if r not in have]
                    raise DataValidationError(
                        f"{label}: {where}: system {sys_names[systems[s_]]!r} has no score "
                        f"for instance {inst_name(j)!r} in run(s) {_names(lacking, 3)} "
                        f"(it has {plural(len(all_runs), 'run')} elsewhere; "
                        f"{plural(int(lack_run.sum()), 'such (system, instance)')}); pass "
                        f"missing='drop' to keep only the instances every run has"
                    )
                absent = ~present
                if absent.any():
                    incomplete = np.flatnonzero(absent.any(axis=1))
                    s = int(incomplete[0])
                    gaps = np.flatnonzero(absent[s])
                    what = (f"has no scores at all (other systems have {n_inst} instances)"
                            if gaps.size == n_inst else
                            f"lacks {gaps.size} of {n_inst} instances (e.g. "
                            f"{_names([inst_name(j) for j in gaps[:3]], 3)})")
                    more = ("" if incomplete.size == 1
                            else f"; {incomplete.size} systems are incomplete")
                    raise DataValidationError(
                        f"{label}: {where}: system {sys_names[systems[s]]!r} {what}{more}; "
                        f"pass missing='drop' to keep only the instances every system has"
                    )
            elif missing == "drop":
                bad_inst = np.asarray((~present | nan_cell | lack_run).any(axis=0))
                if bad_inst.any():
                    idx = np.flatnonzero(bad_inst)
                    for j in idx.tolist():
                        reasons = []
                        nan_sys = [sys_names[systems[s]] for s in np.flatnonzero(nan_cell[:, j])]
                        abs_sys = [sys_names[systems[s]] for s in np.flatnonzero(~present[:, j])]
                        if nan_sys:
                            reasons.append(f"NaN score for {_names(nan_sys)}")
                        if abs_sys:
                            reasons.append(f"no row for {_names(abs_sys)}")
                        run_sys = [sys_names[systems[s]] for s in np.flatnonzero(lack_run[:, j])]
                        if run_sys:
                            reasons.append(f"a run missing for {_names(run_sys)}")
                        dropped.append(f"{where}, instance {inst_name(j)!r}: "
                                       f"{'; '.join(reasons)}")
                    keep[pos[bad_inst[inst_local]]] = False
                    warnings.warn(
                        f"{label}: {where}: dropped {idx.size} of {n_inst} instances for all "
                        f"{n_sys} systems ({plural(int(nan_cell.sum()), 'NaN score')}, "
                        f"{plural(int((~present).sum()), 'absent row')}; e.g. instance(s) "
                        f"{_names([inst_name(j) for j in idx[:3]], 3)}); the full list is in "
                        f"frame.attrs['dropped']", DroppedDataWarning, stacklevel=3
                    )
                    if n_inst - idx.size < 2:
                        raise DataValidationError(
                            f"{label}: {where}: {plural(n_inst - idx.size, 'instance')} left "
                            f"after dropping {idx.size} with missing or NaN scores; at least "
                            f"2 are needed"
                        )
            if n_inst < 2:
                raise DataValidationError(
                    f"{label}: {where} has {plural(n_inst, 'instance')} "
                    f"({_names([inst_name(j) for j in range(n_inst)])}); at least 2 are "
                    f"needed (check instance_col)"
                )

    # deterministic order: dataset, metric, system, instance, each by first appearance in
    # the file (keys taken before dropping, so dropped rows do not reorder the rest)
    sys_key, _ = _appearance(ds_c * len(sys_names) + sys_g)
    inst_key, _ = _appearance(ds_c * len(inst_names) + inst_g)
    sort_keys: tuple[np.ndarray, ...] = (inst_key, sys_key, met_c, ds_c)
    if runs is not None:
        sort_keys = (_appearance(runs)[0],) + sort_keys
    if raters is not None:
        sort_keys = (_appearance(raters)[0],) + sort_keys
    order = np.lexsort(sort_keys)
    order = order[keep[order]]
    out = pd.DataFrame({
        "dataset": np.asarray(ds_names, dtype=object)[ds_c[order]],
        "system": np.asarray(sys_names, dtype=object)[sys_g[order]],
        "metric": np.asarray(met_names, dtype=object)[met_c[order]],
        "instance": np.asarray(inst_names, dtype=object)[inst_g[order]],
    }).astype(str)
    out["score"] = score[order]
    for role in ("run", "group", "rater"):
        if role in codes:
            names = np.asarray(raw.names[role], dtype=object)
            out[role] = pd.Series(names[codes[role][order]], dtype=str)
    kept_met = met_c[order]
    metrics = {}
    for m, met in enumerate(met_names):
        values = out["score"].to_numpy()[kept_met == m]
        binary = bool(np.isin(values, (0.0, 1.0)).all())
        metrics[met] = {"higher_is_better": met not in lower_is_better,
                        "kind": "binary" if binary else "mean"}
    if aggregated:
        dropped.append(f"rater_aggregate='mean': {plural(aggregated, 'repeated rating')} "
                       f"averaged into its rater's rating of the cell")
    return out, metrics, dropped


def _mean_per_rater(raw: Long) -> tuple[Long, int]:
    """Average the ratings one rater gave one (dataset, system, metric, instance) cell;
    the first row of each cell stands for it in messages. Returns the new data and how
    many rows were folded into another."""
    keys = pd.DataFrame({r: raw.codes[r] for r in ("dataset", "system", "metric",
                                                   "instance", "rater")})
    cell = keys.groupby(list(keys.columns), sort=False).ngroup().to_numpy()
    n_cells = int(cell.max()) + 1 if cell.size else 0
    if n_cells == cell.size:
        return raw, 0
    finite = ~np.isnan(raw.score)
    total = np.bincount(cell, weights=np.where(finite, raw.score, 0.0), minlength=n_cells)
    count = np.bincount(cell, weights=finite.astype(np.float64), minlength=n_cells)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1.0), np.nan)
    first = np.unique(cell, return_index=True)[1]
    return (Long(codes={r: c[first] for r, c in raw.codes.items()}, names=raw.names,
                  score=mean[cell[first]], src=raw.src[first], row=raw.row[first]),
            int(cell.size - n_cells))




def _check_groups(raw, sources, ds_c, ds_names, inst_g, inst_names) -> None:
    """One group per (dataset, instance), the same for every system, metric and run."""
    grp = raw.codes["group"]
    pairs = pd.DataFrame({"d": ds_c, "i": inst_g, "g": grp})
    first = pairs.drop_duplicates(["d", "i", "g"])
    clash = first.duplicated(["d", "i"], keep=False).to_numpy()
    if not clash.any():
        return
    rows = first.index.to_numpy()[clash]
    a = int(rows[0])
    b = int(next(r for r in rows[1:] if ds_c[r] == ds_c[a] and inst_g[r] == inst_g[a]))
    n_bad = int(first[clash].drop_duplicates(["d", "i"]).shape[0])
    places = " and ".join(sources[raw.src[r]].where(int(raw.row[r])) for r in (a, b))
    names = raw.names["group"]
    raise DataValidationError(
        f"dataset {ds_names[ds_c[a]]!r}: instance {inst_names[inst_g[a]]!r} is in two "
        f"groups, {show(names[grp[a]])} and {show(names[grp[b]])} (at {places}); an "
        f"instance belongs to one group for every system, metric and run"
        f"{'' if n_bad == 1 else f' ({n_bad} such instances)'}"
    )


def check_names(raw, sources) -> None:
    """Refuse blank, invisible and path-like names, and two names of one role that look
    the same (surrounding whitespace, Unicode normalisation, invisible characters)."""
    for role in ("dataset", "system", "metric", "rater"):
        if role not in raw.names:
            continue
        twins = twin_names(raw.names[role])
        if twins is not None:
            places = []
            for name in twins:
                code = list(raw.names[role]).index(name)
                first = int(np.flatnonzero(raw.codes[role] == code)[0])
                places.append(sources[raw.src[first]].where(int(raw.row[first])))
            raise DataValidationError(
                f"{role} names {show(twins[0])} ({places[0]}) and {show(twins[1])} "
                f"({places[1]}) {twins_why(*twins)}; they would be two {role}s: fix the "
                "names")
        for code, name in enumerate(raw.names[role]):
            why = bad_name(name, role)
            if why is None:
                continue
            first = int(np.flatnonzero(raw.codes[role] == code)[0])
            src = sources[raw.src[first]]
            raise DataValidationError(
                f"{src.where(int(raw.row[first]))}: {role} name {show(name)} {why}; "
                f"{role} names must be visible text"
                f"{' usable as a file name' if role == 'dataset' else ''}")
