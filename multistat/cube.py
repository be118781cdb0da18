"""The data model: a study is an :class:`xarray.DataTree` with one node per dataset.

Each dataset node holds an :class:`xarray.Dataset` with

* ``score`` — float64 on ``(system, metric, instance)``; NaN marks an instance removed
  for that metric (``missing="drop"``), always for *all* systems so pairs stay paired
  (with ``missing="keep"``, ``attrs["missing"] = "keep"``: also a cell only some systems
  lack, which :func:`multistat.meta_evaluate` leaves out, ``compare`` skips pairwise in
  paired tests and uses whole in unpaired ones, :mod:`multistat.significance._holes`);
* coordinates ``higher_is_better`` (bool), ``kind`` (``"mean" | "binary" | "corpus"``)
  and ``corpus_fn`` (name of a registered corpus-metric function, ``""`` otherwise) on
  ``metric``;
* for corpus metrics, ``stats`` — float64 on ``(system, metric, instance, stat)``: per
  instance sufficient statistics whose *sums* the metric function turns into the corpus
  score (zero-padded where a metric has fewer statistics; zero for non-corpus metrics).
* with several runs per system (``read_scores(..., run_col=...)``), ``run_score`` —
  float64 on ``(system, metric, instance, run)``, the score of each run (NaN where a
  system lacks a run), and ``attrs["n_runs"]``; ``score`` then holds the mean over the
  runs a system has, so every test and table works on run-averaged scores;
* with human ratings by rater (``read_scores(..., rater_col=...)``), ``rating`` —
  float64 on ``(system, metric, instance, rater)``, each rater's rating (NaN where a
  rater did not rate the cell), and ``attrs["n_raters"]``; ``score`` then holds the mean
  over the raters present (the item mean every test uses);
* with instance groups (``read_scores(..., group_col=...)``), a coordinate ``group``
  (str) on ``instance`` naming each instance's group (document, talk...).

Datasets may have different instances and systems. Node names are the dataset names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from multistat._atomic import atomic_path
from multistat._budget import physical_memory
from multistat._validation import bad_name
from multistat.errors import (
    DataValidationError,
    InputFileError,
    MultistatError,
    ParameterError,
    UnknownSystemError,
)

SCORE = "score"
STATS = "stats"
RUN_SCORE = "run_score"
RUN_DIMS = ("system", "metric", "instance", "run")
RATING = "rating"
RATING_DIMS = ("system", "metric", "instance", "rater")
DIMS = ("system", "metric", "instance")
KINDS = ("mean", "binary", "corpus")


def make_dataset(name: str, score: np.ndarray, *, systems, metrics, instances,
                 higher_is_better=None, kind=None, corpus_fn=None, stats=None,
                 run_score=None, runs=None, group=None, rating=None,
                 raters=None, missing="raise") -> xr.Dataset:
    """Build one validated dataset node from arrays.

    Parameters
    ----------
    name : dataset name
    score : array ``(system, metric, instance)``
    systems, metrics, instances : labels (converted to str)
    higher_is_better : bool per metric (default all True)
    kind : ``"mean" | "binary" | "corpus"`` per metric (default ``"mean"``)
    corpus_fn : registered function name per metric (``""`` for non-corpus)
    stats : optional array ``(system, metric, instance, stat)``
    run_score : optional array ``(system, metric, instance, run)`` of per-run scores
        (``score`` should then be their mean over the runs a system has:
        :func:`run_mean`)
    runs : run labels (default ``"0", "1", ...``)
    group : optional group label per instance (str)
    missing : ``"keep"`` accepts NaN cells that only some systems have (an incomplete
        design, ``attrs["missing"] = "keep"``); default: they are an error
    """
    score = np.asarray(score, dtype=np.float64)
    systems = [str(s) for s in systems]
    metrics = [str(m) for m in metrics]
    instances = [str(i) for i in instances]
    shape = (len(systems), len(metrics), len(instances))
    if score.shape != shape:
        raise ParameterError(f"`score` must have shape {shape} (system, metric, instance); "
                             f"got {score.shape}")
    n_m = len(metrics)
    hib = np.ones(n_m, bool) if higher_is_better is None else np.asarray(higher_is_better,
                                                                         bool)
    kind = np.array(["mean"] * n_m if kind is None else list(kind), dtype=object)
    cfn = np.array([""] * n_m if corpus_fn is None else list(corpus_fn), dtype=object)
    for label, values in (("higher_is_better", hib), ("kind", kind), ("corpus_fn", cfn)):
        if values.shape != (n_m,):
            raise ParameterError(f"`{label}` must have one value per metric ({n_m}); got "
                                 f"{values.size}")
    for m, k in zip(metrics, kind):
        if k not in KINDS:
            raise ParameterError(f"`kind` must be 'mean', 'binary' or 'corpus' per metric; "
                                 f"got {k!r} for metric {m!r}")
    coords = {
        "system": systems, "metric": metrics, "instance": instances,
        "higher_is_better": ("metric", hib), "kind": ("metric", kind.astype(str)),
        "corpus_fn": ("metric", cfn.astype(str)),
    }
    data_vars: dict[str, tuple[tuple[str, ...], Any]] = {SCORE: (DIMS, score)}
    if stats is not None:
        stats = np.asarray(stats, dtype=np.float64)
        if stats.shape[:3] != shape:
            raise ParameterError(f"`stats` must have shape {shape} + (stat,); got "
                                 f"{stats.shape}")
        data_vars[STATS] = (DIMS + ("stat",), stats)
        coords["stat"] = np.arange(stats.shape[3])
    attrs = {"dataset": str(name)}
    if missing == "keep":  # NaN cells that only some systems have are data
        attrs["missing"] = "keep"
    for var, dims, values, labels, what in ((RUN_SCORE, RUN_DIMS, run_score, runs, "run"),
                                            (RATING, RATING_DIMS, rating, raters, "rater")):
        _fourth_axis(data_vars, coords, attrs, shape, var, dims, values, labels, what)
    if group is not None:
        group = [str(g) for g in group]
        if len(group) != len(instances):
            raise ParameterError(f"`group` must have one label per instance "
                                 f"({len(instances)}); got {len(group)}")
        coords["group"] = ("instance", np.array(group, dtype=str))
    ds = xr.Dataset(data_vars, coords=coords, attrs=attrs)
    validate_dataset(ds)
    return ds


def _fourth_axis(data_vars, coords, attrs, shape, var, dims, values, labels, what):
    """Add ``var`` on ``dims`` (the cube's three axes and one of runs or raters) with its
    labels and ``attrs["n_<what>s"]``; the labels alone are an error."""
    plural = f"{what}s"
    label_arg = "runs" if what == "run" else "raters"
    if values is None:
        if labels is not None:
            raise ParameterError(f"`{label_arg}` labels need `{var}`")
        return
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 4 or values.shape[:3] != shape:
        raise ParameterError(f"`{var}` must have shape {shape} + ({what},); got "
                             f"{values.shape}")
    labels = [str(r) for r in (labels if labels is not None else range(values.shape[3]))]
    if len(labels) != values.shape[3]:
        raise ParameterError(f"{len(labels)} {what} labels for {values.shape[3]} {plural}")
    data_vars[var] = (dims, values)
    coords[what] = labels
    attrs[f"n_{plural}"] = len(labels)


def run_mean(run_score: np.ndarray) -> np.ndarray:
    """Mean over the last (run) axis of the runs present (NaN only where none is)."""
    run_score = np.asarray(run_score, dtype=np.float64)
    present = ~np.isnan(run_score)
    count = present.sum(axis=-1)
    total = np.where(present, run_score, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def validate_dataset(ds: xr.Dataset) -> None:
    """Check the invariants of a dataset node (raises DataValidationError)."""
    name = ds.attrs.get("dataset", "?")
    if ds.sizes["system"] < 2:
        raise DataValidationError(f"dataset {name!r}: at least 2 systems are needed; got "
                                  f"{ds.sizes['system']} ({', '.join(ds.system.values)})")
    if ds.sizes["instance"] < 2:
        raise DataValidationError(f"dataset {name!r}: at least 2 instances are needed; got "
                                  f"{ds.sizes['instance']}")
    for dim in DIMS:
        labels = pd.Index(ds[dim].values)
        if labels.has_duplicates:
            dup = labels[labels.duplicated()].unique()[:3].tolist()
            raise DataValidationError(f"dataset {name!r}: duplicated {dim} labels {dup}")
    score = ds[SCORE].values if not _is_lazy(ds[SCORE]) else None
    if score is not None:
        nan = np.isnan(score)
        # NaN must cover all systems of an instance (dropped pairs), never part of them
        partial = nan.any(axis=0) & ~nan.all(axis=0)
        if partial.any() and ds.attrs.get("missing") != "keep":
            m, i = np.argwhere(partial)[0]
            raise DataValidationError(
                f"dataset {name!r}, metric {str(ds.metric.values[m])!r}: instance "
                f"{str(ds.instance.values[i])!r} is missing for some systems only")
        if np.isinf(score).any():
            raise DataValidationError(f"dataset {name!r}: infinite scores in the cube")
    if RUN_SCORE in ds:
        if ds[RUN_SCORE].dims != RUN_DIMS:
            raise DataValidationError(f"dataset {name!r}: `run_score` must be on "
                                      f"{RUN_DIMS}; got {ds[RUN_SCORE].dims}")
        labels = pd.Index(ds["run"].values)
        if labels.has_duplicates:
            raise DataValidationError(f"dataset {name!r}: duplicated run labels "
                                      f"{labels[labels.duplicated()].unique()[:3].tolist()}")
        if int(ds.attrs.get("n_runs", -1)) != ds.sizes["run"]:
            raise DataValidationError(f"dataset {name!r}: attribute n_runs="
                                      f"{ds.attrs.get('n_runs')!r} but the run dimension has "
                                      f"{ds.sizes['run']} runs")
    if RATING in ds and ds[RATING].dims != RATING_DIMS:
        raise DataValidationError(f"dataset {name!r}: `rating` must be on {RATING_DIMS}; "
                                  f"got {ds[RATING].dims}")
    if "group" in ds.coords and ds["group"].dims != ("instance",):
        raise DataValidationError(f"dataset {name!r}: coordinate `group` must be on "
                                  f"('instance',); got {ds['group'].dims}")


def refuse_holes(ds: xr.Dataset, name: str, score=None) -> None:
    """A clear error when a dataset read with ``missing="keep"`` has cells that only some
    systems lack: paired statistics need every system on the same instances."""
    if ds.attrs.get("missing") != "keep":
        return
    nan = np.isnan(np.asarray(ds[SCORE].values if score is None else score))
    partial = nan.any(axis=0) & ~nan.all(axis=0)
    if partial.any():
        m, i = np.argwhere(partial)[0]
        raise DataValidationError(
            f"dataset {name!r}, metric {str(ds.metric.values[m])!r}: instance "
            f"{str(ds.instance.values[i])!r} is scored for some systems only (read with "
            f"missing='keep', {int(partial.sum())} such cells); this analysis needs every "
            f"system on the same instances: read with missing='drop' (compare and "
            f"meta_evaluate use the incomplete cells)")


def _is_lazy(da: xr.DataArray) -> bool:
    return da.chunks is not None


def make_study(datasets: Mapping[str, xr.Dataset] | list[xr.Dataset]) -> xr.DataTree:
    """A study (DataTree) from dataset nodes keyed by name."""
    if not isinstance(datasets, Mapping):
        datasets = {ds.attrs["dataset"]: ds for ds in datasets}
    if not datasets:
        raise DataValidationError("a study needs at least one dataset")
    children = {}
    for name, ds in datasets.items():
        why = bad_name(str(name), "dataset")
        if why is not None:
            raise DataValidationError(f"dataset name {str(name)[:100]!r} {why}")
        ds = ds.assign_attrs(dataset=str(name))
        children[str(name)] = ds
    return xr.DataTree.from_dict({f"/{k}": v for k, v in children.items()})


def datasets(study: xr.DataTree) -> dict[str, xr.Dataset]:
    """``{name: Dataset}`` in study order."""
    if isinstance(study, xr.Dataset):
        return {study.attrs.get("dataset", "dataset"): study}
    return {name: node.to_dataset() for name, node in study.children.items()}


_datasets = datasets  # for functions whose `datasets` parameter shadows it


def from_frame(frame: pd.DataFrame) -> xr.DataTree:
    """Study from a validated long frame (``multistat.read_scores`` output).

    Metric metadata comes from ``frame.attrs["metrics"]`` (``higher_is_better``, ``kind``).
    Within a dataset, instances missing for a metric (dropped) become NaN for all systems;
    every system must have every remaining instance.

    Parameters
    ----------
    frame : pandas.DataFrame
        The long score frame of :func:`multistat.read_scores` (one row per dataset x
        system x metric x instance), with its ``attrs``.

    Returns
    -------
    xarray.DataTree
        The study: one group per dataset, each with a ``score`` variable over
        ``system x metric x instance`` and the metric metadata.
    """
    need = ["dataset", "system", "metric", "instance", "score"]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise DataValidationError(f"score frame lacks column(s) {missing}; has "
                                  f"{list(frame.columns)}")
    meta = frame.attrs.get("metrics", {})
    has_run = "run" in frame.columns
    has_rater = "rater" in frame.columns
    if has_run and has_rater:
        raise DataValidationError("score frame has both `run` and `rater` columns; ratings "
                                  "by rater of several runs are not supported")
    has_group = "group" in frame.columns
    out = {}
    for name, part in frame.groupby("dataset", sort=False):
        systems = pd.unique(part["system"])
        metrics = pd.unique(part["metric"])
        instances = _instance_order(part)
        split = "run" if has_run else "rater" if has_rater else None
        keys = ["system", "metric", "instance"] + ([split] if split else [])
        runs = pd.unique(part["run"]) if has_run else None
        raters = pd.unique(part["rater"]) if has_rater else None
        levels = [systems, metrics, instances] + (
            [runs] if has_run else [raters] if has_rater else [])
        idx = pd.MultiIndex.from_product(levels)
        series = part.set_index(keys)["score"]
        if series.index.has_duplicates:
            dup = series.index[series.index.duplicated()][0]
            raise DataValidationError(f"dataset {name!r}: duplicated ({', '.join(keys)}) "
                                      f"{dup}")
        shape = [len(v) for v in levels]
        run_cube = rating = None
        if has_run:
            run_cube = series.reindex(idx).to_numpy().reshape(shape)
            cube = run_mean(run_cube)
        elif has_rater:
            rating = series.reindex(idx).to_numpy().reshape(shape)
            cube = run_mean(rating)  # the mean over the raters present
        else:
            cube = series.reindex(idx).to_numpy().reshape(shape)
        group = None
        if has_group:
            per = part[["instance", "group"]].drop_duplicates()
            clash = per["instance"].duplicated(keep=False)
            if clash.any():
                inst = per.loc[clash, "instance"].iloc[0]
                both = per.loc[per["instance"] == inst, "group"].tolist()[:2]
                raise DataValidationError(f"dataset {name!r}: instance {inst!r} is in two "
                                          f"groups, {both[0]!r} and {both[1]!r}")
            group = per.set_index("instance")["group"].reindex(instances).tolist()
        present = ~np.isnan(cube)
        partial = present.any(axis=0) & ~present.all(axis=0)
        keep = frame.attrs.get("missing") == "keep"  # read_scores(missing="keep")
        if partial.any() and not keep:
            m, i = np.argwhere(partial)[0]
            lacking = [str(s) for s, ok in zip(systems, present[:, m, i]) if not ok]
            raise DataValidationError(
                f"dataset {name!r}, metric {metrics[m]!r}: system(s) {lacking[:5]} lack "
                f"instance {instances[i]!r} ({int(partial.sum())} incomplete instance(s) "
                f"in all)")
        hib = [bool(meta.get(m, {}).get("higher_is_better", True)) for m in metrics]
        kind = [meta.get(m, {}).get("kind", "mean") for m in metrics]
        out[str(name)] = make_dataset(name, cube, systems=systems, metrics=metrics,
                                      instances=instances, higher_is_better=hib, kind=kind,
                                      run_score=run_cube, runs=runs, group=group,
                                      rating=rating, raters=raters,
                                      missing="keep" if keep else "raise")
    return make_study(out)


def _instance_order(part: pd.DataFrame) -> list:
    """Instances of one dataset in file order, merged over metrics.

    ``read_scores`` sorts by metric, so an instance dropped for the first metric only
    would otherwise move behind the others and change which instances evaluation units
    group together. Each metric's own order is kept; an instance missing from earlier
    metrics is placed right after its predecessor in the metric that has it.
    """
    order: list = []
    seen: dict = {}
    for _, inst in part.groupby("metric", sort=False)["instance"]:
        seq = pd.unique(inst)
        if not order:
            order = list(seq)
            seen = {x: True for x in order}
            continue
        new = [x for x in seq if x not in seen]
        if not new:
            continue
        after: dict = {}
        prev = None
        for x in seq:
            if x in seen:
                prev = x
            else:
                after.setdefault(prev, []).append(x)
        merged = after.get(None, [])
        for x in order:
            merged.append(x)
            merged.extend(after.get(x, []))
        order = merged
        seen.update((x, True) for x in new)
    return order


def to_frame(study: xr.DataTree) -> pd.DataFrame:
    """Long frame ``dataset, system, metric, instance, score`` (NaN rows left out; the
    run-averaged score when the study has runs; a ``group`` column when it has groups)."""
    parts = []
    for name, ds in datasets(study).items():
        df = ds[SCORE].to_dataframe().reset_index()[["system", "metric", "instance", SCORE]]
        df.insert(0, "dataset", name)
        if "group" in ds.coords:
            groups = dict(zip(ds.instance.values, ds.group.values))
            df["group"] = df["instance"].map(groups).astype(str)
        parts.append(df.dropna(subset=[SCORE]))
    return pd.concat(parts, ignore_index=True)


def metric_info(study: xr.DataTree) -> dict[str, dict]:
    """``{metric: {"higher_is_better", "kind", "corpus_fn"}}`` over all datasets."""
    info: dict[str, dict] = {}
    for ds in datasets(study).values():
        for m, h, k, c in zip(ds.metric.values, ds.higher_is_better.values, ds.kind.values,
                              ds.corpus_fn.values):
            info.setdefault(str(m), {"higher_is_better": bool(h), "kind": str(k),
                                     "corpus_fn": str(c)})
    return info


def chunk(study: xr.DataTree, *, system: int | None = None, metric: int = 1
          ) -> xr.DataTree:
    """Dask-chunk every dataset over system/metric (instances stay whole)."""
    chunks = {"metric": metric, "instance": -1}
    if system is not None:
        chunks["system"] = system
    out = {}
    for n, ds in datasets(study).items():
        # only the data variables: metadata coordinates (kind, higher_is_better, ...)
        # stay in memory, so reading them never runs a dask graph
        meta = {k: v.variable for k, v in ds.coords.items() if k not in ds.indexes}
        out[n] = ds.chunk(chunks).assign_coords(meta)
    return make_study(out)


def save(study: xr.DataTree, path) -> Path:
    """Write the study to NetCDF-4 (one group per dataset); round-trip exact. Written
    atomically (temporary file beside ``path``, renamed into place).

    Parameters
    ----------
    study : xarray.DataTree
        The study (:func:`multistat.load`, :func:`from_frame`).
    path : str or path-like
        The file to write; :func:`open_study` reads it back.

    Returns
    -------
    pathlib.Path
        The path written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    enc: dict[str, Any] = {}
    tree = make_study({n: ds.assign_coords(higher_is_better=ds.higher_is_better.astype("i1"))
                       for n, ds in datasets(study).items()})
    with atomic_path(path) as tmp:  # a reader or a kill never sees a partial file
        try:
            tree.to_netcdf(tmp, engine="h5netcdf", encoding=enc or None)
        except BaseException as exc:  # disk full, ulimit -f, Ctrl-C: one clear error
            # lazily: a t-only compare does not load it (first-call time)
            from multistat.io._write_faults import netcdf_write_failed

            err = netcdf_write_failed(exc, tmp, path)
            if err is exc:
                raise
            raise err from None
    return path


def _gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def open_study(path, *, max_bytes: int | None = None) -> xr.DataTree:
    """Reopen a study written by :func:`save` (loaded into memory).

    Parameters
    ----------
    path : str or pathlib.Path
        NetCDF file written by :func:`save` (``multistat load``).
    max_bytes : int, optional
        Refuse a file whose variables would take more memory than this once loaded
        (default: half of this machine's memory). A small file may declare huge
        dimensions; this check reads only the metadata.

    Returns
    -------
    xarray.DataTree
        The study, loaded into memory (the file is closed).

    Raises
    ------
    InputFileError
        Not a readable NetCDF/HDF5 file, not a multistat study (a group lacks ``score``
        or its metadata, wrong dimensions or types, unknown metric kinds), or more data
        than ``max_bytes``; the message names the file and the group.
    """
    path = Path(path)
    if not path.exists():
        raise InputFileError(f"{path}: no such study file")
    if path.is_dir():
        raise InputFileError(f"{path}: is a directory, not a study file")
    # default: half the physical memory (8 GiB assumed where the OS does not say)
    limit = ((physical_memory() or 8 << 30) // 2 if max_bytes is None else int(max_bytes))
    try:
        tree = xr.open_datatree(path, engine="h5netcdf")
    except Exception as exc:  # noqa: BLE001 - h5py/h5netcdf/xarray raise many classes
        raise InputFileError(f"{path}: not a multistat study (NetCDF) file: "
                             f"{_cut(exc)}") from None
    try:
        out = {}
        for name, node in tree.children.items():
            out[name] = _load_group(path, name, node, limit)
    except MultistatError:
        raise
    except Exception as exc:  # noqa: BLE001 - a malformed group can fail anywhere
        raise InputFileError(f"{path}: not a multistat study: {_cut(exc)}") from None
    finally:
        tree.close()
    if not out:
        raise InputFileError(f"{path}: not a multistat study: no dataset groups")
    try:
        return make_study(out)
    except MultistatError as exc:
        raise InputFileError(f"{path}: not a multistat study: {_cut(exc)}") from None


def _cut(value, limit: int = 100) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[:limit] + "..."


def _load_group(path: Path, name: str, node, limit: int) -> xr.Dataset:
    """One dataset group, checked from its metadata before any data is read."""
    where = f"{path}: group {_cut(name)!r}"
    ds = node.to_dataset()
    lacking = [v for v in (SCORE, "higher_is_better", "kind", "corpus_fn") if v not in ds]
    if lacking:
        raise InputFileError(f"{path}: not a multistat study: group {_cut(name)!r} lacks "
                             f"{lacking}")
    if ds[SCORE].dims != DIMS:
        raise InputFileError(f"{path}: not a multistat study: group {_cut(name)!r} has "
                             f"`score` on {ds[SCORE].dims}, not {DIMS}")
    for var in (SCORE, STATS, RUN_SCORE):
        if var in ds and ds[var].dtype.kind not in "fiu":
            raise InputFileError(f"{where}: `{var}` holds {ds[var].dtype}, not numbers")
    total = sum(int(v.size) * v.dtype.itemsize for v in ds.variables.values())
    if total > limit:
        big = max(ds.variables.items(), key=lambda kv: kv[1].size * kv[1].dtype.itemsize)
        raise InputFileError(
            f"{where}: loading it needs {_gib(total)} ({big[0]!r} has shape "
            f"{tuple(big[1].shape)}), more than the limit of {_gib(limit)}; pass "
            f"open_study(..., max_bytes=...) to allow it")
    ds = ds.load()
    kinds = [str(k) for k in np.atleast_1d(ds["kind"].values)]
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise InputFileError(f"{where}: unknown metric kind {_cut(bad[0])!r} (one of "
                             f"{', '.join(KINDS)})")
    hib = ds.higher_is_better.values
    if hib.dtype.kind not in "biu" or not np.isin(hib, (0, 1)).all():
        raise InputFileError(f"{where}: `higher_is_better` must be 0/1 per metric")
    ds = ds.assign_coords(higher_is_better=ds.higher_is_better.astype(bool))
    for c in ("kind", "corpus_fn", "run", "group"):
        if c in ds.coords:
            ds = ds.assign_coords({c: ds[c].astype(str)})
    if "n_runs" in ds.attrs:
        try:
            ds.attrs["n_runs"] = int(ds.attrs["n_runs"])
        except (TypeError, ValueError):
            raise InputFileError(f"{where}: attribute n_runs={_cut(ds.attrs['n_runs'])!r} "
                                 f"is not a count") from None
    if isinstance(ds.attrs.get("sacrebleu"), str):  # JSON metadata of load-mt studies
        # lazily: a t-only compare does not load it (first-call time)
        from multistat._json import loads_metadata

        try:
            loads_metadata(ds.attrs["sacrebleu"])
        except ValueError as exc:
            raise InputFileError(f"{where}: attribute sacrebleu: {exc}") from None
    try:
        validate_dataset(ds)
    except MultistatError as exc:
        raise InputFileError(f"{where}: {_cut(exc, 200)}") from None
    return ds


def pair_indices(systems, pairs="all") -> list[tuple[int, int]]:
    """Index pairs ``(a, b)`` of the comparisons to run.

    ``"all"``: every unordered pair once, ``a`` before ``b`` in system order;
    ``"baseline:<name>"``: every other system ``a`` against the baseline ``b``
    (estimates are then *system - baseline*); or an explicit list of ``(a, b)`` names.
    """

    systems = [str(s) for s in systems]
    where = {s: i for i, s in enumerate(systems)}
    original = pairs

    def index(name):
        try:
            return where[str(name)]
        except KeyError:
            raise UnknownSystemError(f"unknown system {name!r}; the study has "
                                     f"{', '.join(systems)}") from None

    if isinstance(pairs, str):
        if pairs == "all":
            n = len(systems)
            return [(i, j) for i in range(n) for j in range(i + 1, n)]
        if pairs.startswith("baseline:"):
            b = index(pairs.split(":", 1)[1])
            return [(i, b) for i in range(len(systems)) if i != b]
        raise ParameterError(f"`pairs` must be 'all', 'baseline:<system>' or a list of "
                             f"(a, b) system pairs; got {pairs!r}")
    try:  # a list of two-name sequences (a bare string like "ab" is not a pair)
        pairs = list(pairs)
        ok = all(not isinstance(p, str) and len(p) == 2 for p in pairs)
    except TypeError:
        ok = False
    if not ok:
        raise ParameterError(f"`pairs` must be 'all', 'baseline:<system>' or a list of "
                             f"(a, b) system pairs; got {original!r}")
    out = [(index(a), index(b)) for a, b in pairs]
    for a, b in out:
        if a == b:
            raise ParameterError(f"`pairs`: system {systems[a]!r} compared with itself")
    return out


def load(path, **read_options) -> xr.DataTree:
    """The study of a score file (:func:`multistat.read_scores` options), of
    language-model evaluation logs, or a saved cube.

    A ``.nc`` path is reopened with :func:`open_study`. Logs of inspect_ai, lm-evaluation-
    harness, HELM or Every Eval Ever (``format="inspect" | "lm-eval" | "helm" | "eee"``,
    or recognised from the files when ``format`` is omitted) are read with
    :func:`multistat.io._llm.read_llm_logs`, whose keywords (``group_col``, ``epochs``,
    ``missing``, ``lower_is_better``, ``metrics``) pass through: models become systems,
    tasks datasets, scorers metrics, sample ids instances and epochs runs. Anything else
    is read with :func:`multistat.io.read_scores` and turned into a study with
    :func:`from_frame`. Wide files (a mapping ``{metric: file}`` or one file, one column
    per system) are read straight into the cube, without the long frame, with the same
    checks and messages (:mod:`multistat.io._wide_cube`; 200 systems x 10 metrics x
    12,500 instances: see ``benchmarks/bench_load.py``).

    Parameters
    ----------
    path : str, path-like, mapping or list
        A score file, a folder or glob of them, a mapping ``{metric: file}`` of wide
        files, or a saved study (``.nc``).
    **read_options
        Options of :func:`multistat.read_scores` (``format``, ``system_col``,
        ``missing``, ...), or of the log readers (``group_col``, ``epochs``,
        ``missing``, ``lower_is_better``, ``metrics``); none for a ``.nc`` study.

    Returns
    -------
    xarray.DataTree
        The study (as :func:`from_frame` builds it).

    Examples
    --------
    >>> from pathlib import Path
    >>> import multistat
    >>> logs = Path(multistat.__file__).parents[1] / "tests" / "data" / "llm" / "inspect"
    >>> study = multistat.load(logs / "eval", format="inspect", group_col="passage")
    >>> study["arith_capitals"].run_score.sizes["run"]  # the two epochs
    2
    """
    if not isinstance(path, Mapping) and Path(str(path)).suffix == ".nc" and not read_options:
        return open_study(path)
    # lazily: a t-only compare does not load it (first-call time)
    from multistat.io._llm import is_llm, read_llm

    if is_llm(path, read_options.get("format")):
        return from_frame(read_llm(path, **read_options))
    wide = from_wide_files(path, **read_options)
    if wide is not None:
        return wide
    # lazily: a t-only compare does not load it (first-call time)
    from multistat.io import read_scores

    return from_frame(read_scores(path, **read_options))


def from_wide_files(path, **read_options) -> xr.DataTree | None:
    """The study of plain wide score files without the long frame, or None when the
    input is not that case (:func:`multistat.io._wide_cube.read_wide_arrays`)."""
    # lazily: a t-only compare does not load it (first-call time)
    from multistat.io._wide_cube import read_wide_arrays

    arrays = read_wide_arrays(path, **read_options)
    if arrays is None:
        return None
    ds = make_dataset(arrays.dataset, arrays.score, systems=arrays.systems,
                      metrics=arrays.metrics, instances=arrays.instances,
                      higher_is_better=arrays.higher_is_better, kind=arrays.kind)
    return make_study({arrays.dataset: ds})


def select(study, *, datasets=None, metrics=None) -> tuple[dict[str, xr.Dataset],
                                                          list[str] | None]:
    """``({name: Dataset}, metrics)`` restricted to the named datasets; unknown names are
    an error naming them and what the study has. A single string counts as one name."""
    all_ds = datasets_ = _datasets(study)
    if isinstance(datasets, str):
        datasets = [datasets]
    if isinstance(metrics, str):
        metrics = [metrics]
    if datasets is not None:
        unknown = [d for d in datasets if d not in all_ds]
        if unknown:
            raise ParameterError(f"`datasets`: unknown dataset(s) {unknown}; the study has "
                                 f"{list(all_ds)}")
        datasets_ = {k: v for k, v in all_ds.items() if k in datasets}
    if metrics is not None:
        known = {str(m) for ds in datasets_.values() for m in ds.metric.values}
        unknown = [m for m in metrics if m not in known]
        if unknown:
            raise ParameterError(f"`metrics`: unknown metric(s) {unknown}; the study has "
                                 f"{sorted(known)}")
        metrics = list(metrics)
    return datasets_, metrics

