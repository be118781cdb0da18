"""``multistat rank``: the leaderboard table (clusters, rank ranges, rank intervals).

Mounted in :mod:`multistat.cli` as ``app.command("rank")(rank_command)``. Errors are
:class:`~multistat.errors.MultistatError` and become one line on stderr with exit status
2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import (
    eee_file,
    eee_folder,
    guard_outputs,
    open_study,
    split_names,
    table_kind,
    write_eee,
    write_table,
)
from multistat.cli._conventions import record, show_progress

#: rank's options whose default is :func:`~multistat.leaderboard.ranking.rank_request`'s
REQUEST_DEFAULTS = ("test", "correction", "alpha", "seed", "n_resamples",
                    "confidence_level", "scheduler")


def library_defaults() -> dict:
    """The keyword defaults of :func:`multistat.leaderboard.ranking.rank_request`."""
    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat.leaderboard.ranking import rank_request

    return {name: p.default for name, p in inspect.signature(rank_request).parameters.items()}


def fill_library_choices(command) -> None:
    """Write the library's choices and defaults into ``rank --help``: the registered tests
    and :func:`~multistat.leaderboard.ranking.rank_request`'s defaults (imports numpy:
    called once the command line has pinned the BLAS kernels)."""

    # lazily: numpy loads with the library, after the command line pins BLAS kernels
    from multistat.significance import REGISTRY

    defaults = library_defaults()
    hints = {name: p.annotation for name, p in inspect.signature(command).parameters.items()}
    for name in REQUEST_DEFAULTS:
        value = defaults[name]
        hints[name].__metadata__[0].show_default = (
            format(value, "g") if isinstance(value, float) else str(value))
    info = hints["test"].__metadata__[0]
    if "registered tests:" not in info.help:
        info.help += "; registered tests: " + ", ".join(REGISTRY)


def rank_command(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    out: Annotated[Path, typer.Option("--out", "-o", help="ranking table (Parquet)")] =
    Path("ranking.parquet"),
    test: Annotated[str | None, typer.Option(
        help="pairwise test behind clusters and rank ranges: auto (= bootstrap of the "
             "score difference, any metric kind) or a registered test (mannwhitney: WMT's "
             "rank-sum test of each system's own scores, for studies loaded with "
             "--missing keep)")] = None,
    correction: Annotated[str | None, typer.Option(
        help="correction within each dataset x metric: auto (westfall-young for the "
             "resampling tests, whose adjusted p is not multiplied by the number of "
             "pairs; holm for closed-form tests), holm, westfall-young, any statsmodels "
             "multipletests method, or none. A setting under which no pair can be "
             "significant warns with the resamples needed")] = None,
    alpha: Annotated[float | None, typer.Option(
        help="level of the corrected decisions")] = None,
    seed: Annotated[int | None, typer.Option(
        help="seed of the shared plan (0 is a seed)")] = None,
    n_resamples: Annotated[int | None, typer.Option(
        help="resamples of the shared bootstrap plan (and of the resampling test)")] = None,
    confidence_level: Annotated[float | None, typer.Option(
        help="level of the score and rank intervals")] = None,
    equivalence_margin: Annotated[float | None, typer.Option(
        help="margin delta (metric units): adds equivalent_to_next (TOST within "
             "+-delta, corrected)")] = None,
    metrics: Annotated[str | None, typer.Option(help="comma-separated metrics")] = None,
    datasets: Annotated[str | None, typer.Option(help="comma-separated datasets")] = None,
    scheduler: Annotated[str | None, typer.Option(
        help="threads | processes | synchronous | tcp://host:port")] = None,
    pairs_out: Annotated[Path | None, typer.Option(
        "--pairs-out", help="also write the pairwise decisions behind the clusters (the "
                            "compare rows of the ranking's test, correction and alpha); "
                            "`multistat report --ranking-pairs` shows them in every "
                            "section")] = None,
    progress: Annotated[bool | None, typer.Option(
        "--progress/--no-progress", help="progress bar on stderr (default: when stderr is "
                                         "a terminal)")] = None,
    eee_out: Annotated[Path | None, typer.Option(
        "--eee-out", help="also write Every Eval Ever aggregate records, one per system "
                          "(a .jsonl file, or a folder of <system>.json): scores with "
                          "their intervals (Wilson for binary metrics), rank, rank "
                          "interval, cluster, test, correction and seed")] = None,
    memory_limit: Annotated[str | None, typer.Option(
        "--memory-limit", help="working-memory budget, e.g. 2GiB or 500MB (default: a "
                               "safe share of physical memory); a .zarr study is streamed "
                               "within it; results do not depend on it")] = None,
) -> None:
    """Leaderboard per dataset x metric: WMT clusters (a boundary where every system
    above is significantly better than every system below), rank ranges from the
    corrected decisions, bootstrap rank intervals, P(best). Writes a Parquet table and
    prints the clusters."""
    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat.leaderboard.ranking import rank_request, run_ranking

    # the flags become one run request, validated once (messages name the flags)
    # an option left out keeps rank_request's default (none is written here)
    given = {k: v for k, v in {"test": test, "correction": correction, "alpha": alpha,
                               "seed": seed, "n_resamples": n_resamples,
                               "confidence_level": confidence_level,
                               "scheduler": scheduler}.items() if v is not None}
    req = rank_request(equivalence_margin=equivalence_margin,
                       metrics=split_names(metrics, "--metrics"),
                       datasets=split_names(datasets, "--datasets"), **given)
    test = given.get("test", library_defaults()["test"])
    if show_progress(progress):
        req = dataclasses.replace(req, progress=True)
    if memory_limit is not None:
        req = dataclasses.replace(req, memory_limit=memory_limit)
    guard_outputs([study], {"--out": out, "--pairs-out": pairs_out, **eee_file(eee_out)},
                  folders=eee_folder(eee_out))
    table_kind(out)
    if pairs_out is not None:
        table_kind(pairs_out, "--pairs-out")
    start = time.perf_counter()
    loaded = open_study(study)  # a .zarr study stays in its store
    result = run_ranking(loaded, req, requested=test, pairs=pairs_out is not None)
    board = result.table
    meta = dict(board.attrs["multistat"], input=str(study), stage="rank")
    write_table(board, out, metadata=meta)
    if pairs_out is not None:
        write_table(result.pairs, pairs_out, flag="--pairs-out",
                    # run_ranking(pairs=True) returns the pair table
                    metadata=dict(result.pairs.attrs["multistat"],  # type: ignore[union-attr]
                                  input=str(study),
                                  stage="rank"))
    if eee_out is not None:
        # (a .zarr study is not loaded: the ranking's own intervals)
        write_eee(board, eee_out, study=loaded if hasattr(loaded, "children") else None)
    record(test=meta["test"], correction=meta["correction"], alpha=req.alpha,
           confidence_level=req.level, n_resamples=req.n_resamples, seed=req.seed,
           notes=list(meta.get("floor_notes", ())),
           leaderboards=[{"dataset": str(ds), "metric": str(metric), "clusters": [
               [{"system": str(s), "rank_ci_low": float(lo), "rank_ci_high": float(hi)}
                for s, lo, hi in zip(gc["system"], gc["rank_ci_low"], gc["rank_ci_high"])]
               for _, gc in g.groupby("cluster", sort=True)]}
               for (ds, metric), g in board.groupby(["dataset", "metric"], sort=False)])
    for (ds, metric), g in board.groupby(["dataset", "metric"], sort=False):
        typer.echo(f"{ds} / {metric}:")
        for c, gc in g.groupby("cluster", sort=True):
            members = ", ".join(f"{s} (rank {lo:g}-{hi:g})" for s, lo, hi in
                                zip(gc["system"], gc["rank_ci_low"], gc["rank_ci_high"]))
            typer.echo(f"  cluster {c}: {members}")
    typer.echo(f"{meta['test']} test, {meta['correction']} correction, alpha={req.alpha}; "
               f"rank intervals at {req.level:g} from {req.n_resamples} resamples "
               f"(seed {req.seed})")
    for note in meta.get("floor_notes", ()):
        typer.echo(f"note: {note}")
    written = " and ".join(str(p) for p in (out, pairs_out, eee_out) if p is not None)
    typer.echo(f"wrote {written} ({time.perf_counter() - start:.1f} s)")
