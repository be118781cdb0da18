"""Helpers shared by every ``multistat`` subcommand (the modules of :mod:`multistat.cli`).

- :func:`guard_outputs`: refuse, before any work, an output that is one of the inputs
  (same real path, or the same file through a hard link) or another output.
- :func:`table_kind` / :func:`write_table`: a table output's format from its extension
  (``.parquet``, ``.csv``, ``.jsonl``), written atomically; Parquet carries the run
  metadata.
- :func:`study_output` / :func:`save_study`: a study output must end in ``.nc``; written
  atomically.
- :func:`echo_summary`: the one-paragraph summary of a study the loaders print.
- :func:`split_names` / :func:`seed_value`: comma-separated name lists and seeds.
- :func:`parse_pairs`, :func:`open_study`, :func:`run_meta`, :func:`show_frame`: the
  ``--pairs``/``--pair`` options, a study argument, a table's run metadata, a table on
  the terminal.

Nothing here imports the subcommand modules or the package's ``__init__`` (the app), so
every subcommand module imports it without an import cycle.
"""

from __future__ import annotations

import glob
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, overload

import typer

from multistat import __version__
from multistat._atomic import atomic_path
from multistat.errors import ParameterError, show

#: table outputs by extension -> format name
TABLE_SUFFIXES: dict[str, str] = {".parquet": "parquet", ".csv": "csv", ".jsonl": "jsonl"}
#: study (cube) outputs
STUDY_SUFFIXES: tuple[str, ...] = (".nc",)


# ------------------------------------------------------- `multistat load` reading options
FormatOpt = Annotated[str | None, typer.Option(
    "--format", help="{choices} (pairs: NLPStatTest two-column; lines: one score per "
                     "line, one file per system; comet: comet-score output; inspect, "
                     "lm-eval, helm, eee: language-model evaluation logs); default: "
                     "detect from the extension and content")]
SystemCol = Annotated[list[str] | None, typer.Option(
    help="column holding the system name (repeat to join several columns with '/', e.g. "
         "--system-col summary_type --system-col system)")]
MetricCol = Annotated[str | None, typer.Option(help="column holding the metric name")]
InstanceCol = Annotated[list[str] | None, typer.Option(
    help="column holding the instance id (repeatable like --system-col)")]
ScoreCol = Annotated[str | None, typer.Option(help="column holding the score")]
DatasetCol = Annotated[str | None, typer.Option(help="column holding the dataset name")]
MetricOpt = Annotated[str | None, typer.Option(
    "--metric", help="metric name when the file has no metric column")]
DatasetOpt = Annotated[str | None, typer.Option(
    "--dataset", help="dataset name when the file has no dataset column (default: stem)")]
LowerOpt = Annotated[list[str] | None, typer.Option(
    "--lower-is-better", help="a metric where lower is better (repeatable)")]
MissingOpt = Annotated[str, typer.Option(
    "--missing", help="raise: stop on NaN/missing scores; drop: remove those instances "
                      "for that metric across all systems, and report how many; keep: "
                      "leave them NaN (incomplete designs, e.g. human judgments only some "
                      "systems have: compare runs paired tests on the instances both "
                      "systems have, unpaired tests on each system's own; meta-evaluate "
                      "leaves them out)")]
SepOpt = Annotated[str | None, typer.Option(
    "--sep", help="field separator for text tables: one character, or '\\s+' for runs of "
                  "whitespace (default: from the extension and first line)")]
SystemsOpt = Annotated[str | None, typer.Option(
    "--systems", help="names of the two systems of a pairs file, comma-separated "
                      "(default A,B)")]


def read_kwargs(format, system_col, metric_col, instance_col, score_col, dataset_col,
                 metric, dataset, lower_is_better, missing, sep, systems):
    def one(cols):
        return None if not cols else (cols[0] if len(cols) == 1 else list(cols))

    kw = {"format": format, "system_col": one(system_col), "metric_col": metric_col,
          "instance_col": one(instance_col), "score_col": score_col,
          "dataset_col": dataset_col, "metric": metric, "dataset": dataset,
          "lower_is_better": tuple(lower_is_better or ()), "missing": missing, "sep": sep}
    if systems:
        kw["systems"] = tuple(s.strip() for s in systems.split(","))
    return kw


@overload
def split_names(text: None, flag: str | None = None) -> None: ...


@overload
def split_names(text: str, flag: str) -> list[str]: ...


@overload
def split_names(text: str | None, flag: str | None = None) -> list[str] | None: ...


def split_names(text: str | None, flag: str | None = None) -> list[str] | None:
    """Comma-separated names (``--metrics``, ``--datasets``, ``--tests``...): None when
    not given; with ``flag``, a given but empty list is an error naming the flag."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items and flag is not None:
        raise ParameterError(f"`{flag}` is empty: give at least one item (comma-separated)")
    return items or None


def seed_value(value):
    """``--seed`` checked by :func:`multistat._validation.check_seed` (None stays None).
    One parameter, so it also serves as a typer ``callback`` (typer hands the value to a
    callback's only untyped parameter)."""
    # lazily: numpy, which must load after the command line pins the BLAS kernels
    from multistat._validation import check_seed

    return None if value is None else check_seed(value, name="--seed")


def _suffix(path: Path) -> str:
    return path.suffix.lower()


def table_kind(path, flag: str = "--out") -> str:
    """``"parquet"``, ``"csv"`` or ``"jsonl"`` from the extension of ``path``; anything
    else is a :class:`ParameterError` naming the allowed extensions."""
    path = Path(path)
    kind = TABLE_SUFFIXES.get(_suffix(path))
    if kind is None:
        raise ParameterError(f"`{flag}` {show(path)}: a table output must end in "
                             f"{', '.join(TABLE_SUFFIXES)} (the extension chooses the "
                             f"format)")
    return kind


def study_output(path, flag: str = "--out") -> Path:
    """A study output path: must end in ``.nc`` (NetCDF-4)."""
    path = Path(path)
    if _suffix(path) not in STUDY_SUFFIXES:
        raise ParameterError(f"`{flag}` {show(path)}: a study output must end in .nc "
                             f"(it is written as NetCDF-4)")
    return path


def _expand(inp) -> list[Path]:
    """The files an input argument stands for: the file, a folder's files, a glob's
    matches (non-existing paths are kept: they may still be compared by name)."""
    text = str(inp)
    p = Path(text)
    if p.is_dir():
        return [c for c in p.rglob("*") if c.is_file()]
    if not p.exists() and any(ch in text for ch in "*?["):
        return [Path(m) for m in glob.glob(text)]
    return [p]


def _same(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:  # pragma: no cover - permissions
        return False


def guard_outputs(inputs: Iterable, outputs: Mapping[str, object] | Iterable[tuple],
                  *, folders: Mapping[str, tuple[object, Iterable[str]]] | None = None
                  ) -> None:
    """Refuse (exit status 2 through :class:`ParameterError`) before any work:

    - an output that resolves to an input file (real path, symbolic or hard link);
    - two outputs that are the same file;
    - an output file that is an existing directory, an output folder that is a file.

    ``inputs`` are paths (files, folders -> their files, globs -> their matches; ``None``
    skipped). ``outputs`` maps a flag (``"--out"``) to a path (``None`` skipped).
    ``folders`` maps a flag to ``(directory, names)``: the command writes those
    names/sub-folders inside the directory (e.g. the report's ``report.html``,
    ``figures/``, ``tables/``); an input inside one of them is refused too.
    """
    items = list(outputs.items() if isinstance(outputs, Mapping) else outputs)
    items = [(flag, Path(p)) for flag, p in items if p is not None]
    for flag, out in items:  # before the run, not when its result is written
        if out.is_dir():
            raise ParameterError(f"`{flag}` {show(out)} is a directory; give a file path "
                                 f"(e.g. {show(out / ('results' + out.suffix))})")
    for flag, (directory, _) in (folders or {}).items():
        if Path(str(directory)).exists() and not Path(str(directory)).is_dir():
            raise ParameterError(f"`{flag}` {show(directory)} is a file; give a folder "
                                 f"(it is created if it does not exist)")
    files = [f for inp in inputs if inp is not None for f in _expand(inp)]
    for flag, out in items:
        for f in files:
            if _same(out, f):
                raise ParameterError(
                    f"`{flag}` {show(out)} is the input file {show(f)}: refusing to "
                    f"overwrite an input; choose another output path")
    for i, (flag_a, a) in enumerate(items):
        for flag_b, b in items[i + 1:]:
            if _same(a, b):
                raise ParameterError(f"`{flag_a}` and `{flag_b}` are the same file "
                                     f"{show(a)}; give each output its own path")
    for flag, (directory, names) in (folders or {}).items():
        base = Path(str(directory))
        for name in names:
            inside = os.path.realpath(base / name)
            for f in files:
                real = os.path.realpath(f)
                if real == inside or real.startswith(inside.rstrip(os.sep) + os.sep):
                    raise ParameterError(
                        f"`{flag}` {show(base)} would write {show(base / name)}, which "
                        f"holds the input file {show(f)}; choose another output folder")


def _prepare(path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_table(frame, path, *, metadata: Mapping | None = None, flag: str = "--out"):
    """Write ``frame`` atomically in the format its extension names.

    ``.parquet``: with ``metadata`` (JSON) in the schema, as
    :func:`multistat.io.write_parquet`; ``.csv``: comma-separated with a header, no index
    (NaN as empty cells); ``.jsonl``: one JSON object per row (NaN as ``null``); floats
    round-trip exactly in all three.
    """

    kind = table_kind(path, flag)
    path = _prepare(path)
    with atomic_path(path) as tmp:
        if kind == "parquet":
            # heavy: pyarrow, lazily (`multistat --help` stays fast)
            from multistat.io import write_parquet

            write_parquet(frame, tmp, metadata=dict(metadata or {}))
        elif kind == "csv":  # formula-like cells neutralised (multistat._csv)
            # heavy: pandas, lazily (`multistat --help` stays fast)
            from multistat._csv import to_csv

            to_csv(frame, tmp)
        else:
            _write_jsonl(frame, tmp)
    return path


def _json_value(value):
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None  # NaN (and +-inf, never in a results table) -> null
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        # heavy: pandas, lazily (`multistat --help` stays fast)
        import pandas as pd

        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return str(value)


def _write_jsonl(frame, path) -> None:
    """One JSON object per row; floats written with Python's shortest round-trip repr
    (pandas' ``to_json`` keeps only 15 significant digits)."""
    columns = [str(c) for c in frame.columns]
    with open(path, "w", encoding="utf-8") as fh:
        for row in frame.itertuples(index=False, name=None):
            record = {c: _json_value(v) for c, v in zip(columns, row)}
            fh.write(json.dumps(record, ensure_ascii=False, allow_nan=False))
            fh.write("\n")


def save_study(study, path, flag: str = "--out") -> Path:
    """Write a study (NetCDF-4) atomically (:func:`multistat.cube.save` is)."""
    # heavy: xarray, lazily (`multistat --help` stays fast)
    from multistat import cube

    path = _prepare(study_output(path, flag))
    cube.save(study, path)
    return path


def echo_summary(study, dropped=()) -> None:
    """Print one line per dataset (sizes and metrics) and the dropped items."""
    # heavy: xarray, lazily (`multistat --help` stays fast)
    from multistat import cube

    # lazily: the conventions module reads the package version
    from multistat.cli._conventions import record

    summary = []
    for name, ds in cube.datasets(study).items():
        metrics = ", ".join(f"{m}{'' if h else ' (lower is better)'} [{k}]" for m, h, k in
                            zip(ds.metric.values, ds.higher_is_better.values, ds.kind.values))
        typer.echo(f"dataset {name}: {ds.sizes['system']} systems x {ds.sizes['metric']} "
                   f"metrics x {ds.sizes['instance']} instances; metrics: {metrics}")
        summary.append({"dataset": str(name), "systems": int(ds.sizes["system"]),
                        "metrics": [{"metric": str(m), "higher_is_better": bool(h),
                                     "kind": str(k)} for m, h, k in
                                    zip(ds.metric.values, ds.higher_is_better.values,
                                        ds.kind.values)],
                        "instances": int(ds.sizes["instance"])})
    typer.echo(f"dropped: {len(dropped)} item(s)" + "".join(f"\n  - {d}" for d in dropped))
    record(datasets=summary, dropped=[str(d) for d in dropped])


# ------------------------------------------------- options and helpers of several commands
PairOpt = Annotated[list[str] | None, typer.Option(
    "--pair", help="one pair 'a,b' (repeatable; instead of --pairs)")]
OUT_TABLE_HELP = "table to write: .parquet (with run metadata), .csv or .jsonl"


def open_study(path: Path):
    """A saved study (.nc), a study store (.zarr: opened, not loaded) or any score file
    ``multistat load`` reads with defaults."""
    # heavy: xarray, lazily (`multistat --help` stays fast)
    from multistat import cube

    # lazily: a study larger than memory stays in its Zarr store, read chunk by chunk
    from multistat.io._zarr import is_zarr_path, open_zarr

    if is_zarr_path(path):
        return open_zarr(path)
    return cube.load(path)


def parse_pairs(pairs: str | None, pair: list[str] | None):
    """``--pairs all | baseline:<system> | 'a,b;c,d'`` and repeated ``--pair a,b`` ->
    what ``compare``/``analyze`` take (a string or a list of ``(a, b)`` names)."""
    def one(text, flag):
        names = [t.strip() for t in text.split(",")]
        if len(names) != 2 or not all(names):
            raise ParameterError(f"`{flag}`: a pair is two system names 'a,b'; got "
                                 f"{show(text)}")
        return tuple(names)

    if pair:
        if pairs not in ("all", None):
            raise ParameterError("give pairs with either --pairs or --pair, not both")
        return [one(p, "--pair") for p in pair]
    text = (pairs or "all").strip()
    if text == "all" or text.startswith("baseline:"):
        return text
    items = [p for p in text.split(";") if p.strip()]
    if not items or not all("," in p for p in items):
        raise ParameterError(f"`--pairs` must be all, baseline:<system>, or pairs 'a,b;c,d'"
                             f"; got {show(pairs)}")
    return [one(p, "--pairs") for p in items]


def json_pairs(pairs):
    return pairs if isinstance(pairs, str) else [list(p) for p in pairs]


def run_meta(stage: str, *inputs) -> dict:

    return {"stage": stage, "multistat_version": __version__,
            "input": str(inputs[0]) if len(inputs) == 1 else [str(i) for i in inputs]}


def show_frame(fn):
    # heavy: pandas, lazily (`multistat --help` stays fast)
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_colwidth", 40,
                           "display.float_format", "{:.4g}".format):
        fn()


def eee_file(path) -> dict:
    """``{"--eee-out": path}`` for :func:`guard_outputs` when the Every Eval Ever output
    is one ``.jsonl`` file, else ``{}``."""
    return {"--eee-out": path} if path is not None and Path(path).suffix == ".jsonl" else {}


def eee_folder(path) -> dict | None:
    """``{"--eee-out": (path, ())}`` for :func:`guard_outputs` when the Every Eval Ever
    output is a folder of one record per system, else None."""
    if path is None or Path(path).suffix == ".jsonl":
        return None
    return {"--eee-out": (path, ())}


def write_eee(table, path, **keywords) -> None:
    """The table's Every Eval Ever records (:func:`multistat.leaderboard.export.to_eee`), written
    atomically."""
    # lazily: the exporter loads only when --eee-out is given
    from multistat.leaderboard.export import to_eee

    to_eee(table, path, **keywords)
