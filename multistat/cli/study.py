"""``multistat load``, ``units``, ``analyze`` and ``demo-data``: score files in, the study
cube out, and its data analysis (NLPStatTest's first step)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import (
    OUT_TABLE_HELP,
    DatasetCol,
    DatasetOpt,
    FormatOpt,
    InstanceCol,
    LowerOpt,
    MetricCol,
    MetricOpt,
    MissingOpt,
    PairOpt,
    ScoreCol,
    SepOpt,
    SystemCol,
    SystemsOpt,
    echo_summary,
    guard_outputs,
    json_pairs,
    open_study,
    parse_pairs,
    read_kwargs,
    run_meta,
    save_study,
    seed_value,
    show_frame,
    study_output,
    table_kind,
    write_table,
)
from multistat.cli._conventions import record
from multistat.errors import DroppedDataWarning, ParameterError


def load(
    paths: Annotated[list[Path], typer.Argument(
        help="score file(s) (CSV, TSV, whitespace, JSONL, Parquet, NLPStatTest "
             "two-column, one score per line, comet-score output), language-model "
             "evaluation logs (inspect .eval/.json, lm-eval --log_samples output, HELM run "
             "folders, Every Eval Ever JSONL), folders or quoted globs; several are read "
             "with the same options and validated together")],
    out: Annotated[Path, typer.Option("--out", "-o", help="study file to write (.nc), or a "
                                      "chunked store (.zarr) for studies larger than "
                                      "memory, written from wide Parquet files row "
                                      "group by row group")] =
    Path("study.nc"),
    format: FormatOpt = None, system_col: SystemCol = None, metric_col: MetricCol = None,
    instance_col: InstanceCol = None, score_col: ScoreCol = None,
    dataset_col: DatasetCol = None, metric: MetricOpt = None, dataset: DatasetOpt = None,
    lower_is_better: LowerOpt = None, missing: MissingOpt = "raise", sep: SepOpt = None,
    systems: SystemsOpt = None,
    run_col: Annotated[str | None, typer.Option(
        help="column holding the training run (seed): rows that differ only in run are "
             "runs, the tests use run-averaged scores")] = None,
    group_col: Annotated[str | None, typer.Option(
        help="column holding the group (document, talk) of each instance, for `units "
             "--by group` and clustered tests; for evaluation logs a sample metadata "
             "field (e.g. passage)")] = None,
    dataset_from_filename: Annotated[bool, typer.Option(
        "--dataset-from-filename", help="name each file's dataset after the file (name "
                                        "without its suffixes)")] = False,
    rater_col: Annotated[str | None, typer.Option(
        help="column holding the rater of each human rating: the study keeps every rating "
             "(variable `rating` by rater) and the tests use the item means")] = None,
    rater_aggregate: Annotated[str | None, typer.Option(
        help="'mean': average several ratings by one rater of one cell (otherwise an "
             "error)")] = None,
    epochs: Annotated[str | None, typer.Option(
        help="language-model evaluation logs: 'runs' (default): repeated samples "
             "(inspect epochs, repeated lm-eval runs, HELM trials) are runs; 'mean': "
             "their mean is the score")] = None,
    chunk_instances: Annotated[int | None, typer.Option(
        help="--out STUDY.zarr: instances per chunk of the store (default: about 32 MiB "
             "per chunk)")] = None,
    memory_limit: Annotated[str | None, typer.Option(
        "--memory-limit", help="--out STUDY.zarr: working-memory budget of the writer, "
                               "e.g. 1GiB")] = None,
):
    """Validate score file(s), write the study cube (NetCDF) and print a summary."""

    # heavy: pyarrow, xarray, lazily
    from multistat import cube

    # heavy: pyarrow, pandas, lazily
    from multistat.io import read_scores

    # lazily: the Zarr writer (the `large` extra)
    from multistat.io._zarr import is_zarr_path, write_zarr

    if is_zarr_path(out):  # a study larger than memory: streamed into a chunked store
        given = {"--format": format not in (None, "wide", "parquet"),
                 "--system-col": system_col, "--metric-col": metric_col,
                 "--score-col": score_col, "--dataset-col": dataset_col,
                 "--missing": missing != "raise", "--sep": sep, "--run-col": run_col,
                 "--group-col": group_col, "--rater-col": rater_col,
                 "--rater-aggregate": rater_aggregate, "--epochs": epochs,
                 "--dataset-from-filename": dataset_from_filename}
        bad = [flag for flag, value in given.items() if value]
        if bad:
            raise ParameterError(f"--out {out}: a .zarr study is written from wide Parquet "
                                 f"files (one column per system, one file per metric); "
                                 f"{', '.join(bad)} apply to .nc studies only")
        if systems is not None or (instance_col and len(instance_col) > 1):
            raise ParameterError("--systems (a pairs file's two names) and several "
                                 "--instance-col apply to .nc studies only")
        guard_outputs(paths, {})
        write_zarr(paths, out, metric=metric, dataset=dataset,
                   lower_is_better=lower_is_better or (),
                   instance_col=instance_col[0] if instance_col else None,
                   chunk=chunk_instances, memory_limit=memory_limit)
        typer.echo(f"wrote {out}")
        return
    if chunk_instances is not None or memory_limit is not None:
        raise ParameterError("--chunk-instances and --memory-limit apply to --out "
                             "STUDY.zarr")
    guard_outputs(paths, {"--out": out})
    study_output(out)
    kw = read_kwargs(format, system_col, metric_col, instance_col, score_col, dataset_col,
                      metric, dataset, lower_is_better, missing, sep, systems)
    if dataset_from_filename:
        if dataset is not None or dataset_col is not None:
            raise ParameterError("--dataset-from-filename names the dataset; give it "
                                 "without --dataset and --dataset-col")
        kw["dataset_from_filename"] = True
    source = paths[0] if len(paths) == 1 else [str(p) for p in paths]
    # language-model evaluation logs (inspect, lm-eval, HELM, Every Eval Ever)
    from multistat.io._llm import is_llm, read_llm

    if is_llm(source, format):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DroppedDataWarning)  # reported in the summary
            frame = read_llm(source, **kw, group_col=group_col, run_col=run_col,
                             rater_col=rater_col, rater_aggregate=rater_aggregate,
                             epochs="runs" if epochs is None else epochs)
        study = cube.from_frame(frame)
        save_study(study, out)
        echo_summary(study, frame.attrs.get("dropped", []))
        typer.echo(f"wrote {out}")
        return
    if epochs is not None:
        raise ParameterError("--epochs applies to language-model evaluation logs "
                             "(--format inspect, lm-eval, helm or eee)")
    # one plain wide file: straight into the cube (no long frame, nothing dropped);
    # ratings by rater go the long route
    wide = None if rater_col or rater_aggregate else cube.from_wide_files(
        source, **kw, run_col=run_col, group_col=group_col)
    dropped: list = []
    if wide is not None:
        study = wide
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DroppedDataWarning)  # reported in the summary
            frame = read_scores(source, **kw, run_col=run_col, group_col=group_col,
                                rater_col=rater_col, rater_aggregate=rater_aggregate)
        study, dropped = cube.from_frame(frame), frame.attrs.get("dropped", [])
    save_study(study, out)
    echo_summary(study, dropped)
    typer.echo(f"wrote {out}")


def units(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    size: Annotated[int, typer.Option("--size", "-m", help="instances per unit")] = 1,
    by: Annotated[str | None, typer.Option(
        help="group: one unit per group (document, talk) of the instances, from "
             "--group-col at load time; replaces --size")] = None,
    statistic: Annotated[str, typer.Option(help="{choices}: of a unit")] = "mean",
    seed: Annotated[int | None, typer.Option(
        help="shuffle instances with this seed first (default: no shuffle)")] = None,
    remainder: Annotated[str, typer.Option(
        help="{choices} (spread: numpy.array_split into n//size units, as NLPStatTest; "
             "drop: only full units)")] = "spread",
    out: Annotated[Path, typer.Option("--out", "-o", help="study file to write (.nc)")] =
    Path("units.nc"),
):
    """Group instances into evaluation units (mean or median of m instances)."""
    # heavy: pyarrow, xarray, lazily
    from multistat.units import evaluation_units

    seed = seed_value(seed)
    guard_outputs([study], {"--out": out})
    study_output(out)
    if by is not None:
        result = evaluation_units(open_study(study), by=by, statistic=statistic,
                                  size=None if size == 1 else size, seed=seed)
    else:
        result = evaluation_units(open_study(study), size=size, statistic=statistic, seed=seed,
                                  remainder=remainder)
    save_study(result, out)
    echo_summary(result)
    typer.echo(f"wrote {out}")


def analyze(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    alpha: Annotated[float, typer.Option(help="level of the normality test")] = 0.05,
    pairs: Annotated[str, typer.Option(help="all | baseline:<system> | 'a,b;c,d'")] = "all",
    pair: PairOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help=OUT_TABLE_HELP)] =
    Path("analysis.parquet"),
):
    """Descriptives, skewness, normality and recommended tests (NLPStatTest Table 2)."""
    # heavy: numpy, lazily
    from multistat._validation import check_probability

    # heavy: scipy.stats, scipy.optimize, lazily
    from multistat.analysis import analyze as run

    alpha = check_probability("--alpha", alpha)
    chosen = parse_pairs(pairs, pair)
    guard_outputs([study], {"--out": out})
    table_kind(out)
    table = run(open_study(study), alpha=alpha, pairs=chosen)
    write_table(table, out, metadata={**run_meta("analyze", study), "alpha": alpha,
                                      "pairs": json_pairs(chosen)})
    cols = ["dataset", "metric", "system_a", "system_b", "n", "skewness", "normality_p",
            "test_statistic", "recommended"]
    show_frame(lambda: typer.echo(table[cols].to_string(index=False, max_rows=40)))
    record(alpha=alpha, rows=table[cols].to_dict(orient="records"))
    typer.echo(f"wrote {out}")


def demo_data(
    out: Annotated[Path, typer.Option("--out", "-o", help="folder to write into")] =
    Path("data"),
    seed: Annotated[int, typer.Option(help="generator seed")] = 20261122,
):
    """Generate the embedded demo study (10 systems x 3 metrics x 2 test sets) and
    two-column NLPStatTest-format samples, with known true differences."""
    # heavy: pyarrow, pandas, lazily
    from multistat.demo import write_demo

    seed = seed_value(seed)
    written = []
    for p in write_demo(out, seed):
        typer.echo(f"wrote {p}")
        written.append(str(p))
    record(seed=seed, files=written)

