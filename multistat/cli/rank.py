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

#: the most pair rows ``multistat rank --out`` stores beside the ranking without
#: ``--pairs-out`` (a compare table of that many rows is a few MB; beyond it the ranking is
#: streamed without a row per pair, and the report takes the compare table's rows)
STORED_PAIRS_MAX = 200_000

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
             "--missing keep; mixed: the rater-aware mixed model of a study loaded with "
             "--rater-col, decided with holm)")] = None,
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
        "--pairs-out", help="where to write the pairwise decisions behind the clusters (the "
                            "compare rows of the ranking's test, correction and alpha); "
                            "without it they go beside a Parquet --out as "
                            "<out>.pairs.parquet when there are at most 200,000 pairs. "
                            "The ranking's metadata names the file, so `multistat report "
                            "--ranking` finds them")] = None,
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
    kind = table_kind(out)
    beside = pairs_out is None and kind == "parquet"
    pairs_path = pairs_out if not beside else out.with_name(out.name.removesuffix(
        ".parquet") + ".pairs.parquet")
    if beside:  # the pair table written beside the ranking is an output too
        guard_outputs([study], {"--out": out, "--pairs-out": pairs_path,
                                **eee_file(eee_out)}, folders=eee_folder(eee_out))
    if pairs_out is not None:
        table_kind(pairs_out, "--pairs-out")
    start = time.perf_counter()
    loaded = open_study(study)  # a .zarr study stays in its store
    n_pairs = _pair_rows(loaded, req)
    keep = pairs_out is not None or (beside and n_pairs <= STORED_PAIRS_MAX)
    # the default request streams its decisions (no compare table); up to the bound they
    # come back as rows to store beside the ranking
    result = run_ranking(loaded, req, requested=test, pairs=pairs_out is not None,
                         stream_pairs_max=STORED_PAIRS_MAX if keep else 0)
    board = result.table
    meta = dict(board.attrs["multistat"], input=str(study), stage="rank")
    if keep and result.pairs is not None:
        stored = Path(write_table(result.pairs, pairs_path, flag="--pairs-out",
                                  metadata=dict(result.pairs.attrs["multistat"],
                                                input=str(study), stage="rank")))
        if kind == "parquet":  # the ranking names its pairs: the report finds them
            meta["pairs_file"] = _relative(stored, out)
            meta["pairs_sha256"] = _sha256(stored)
    elif beside:
        meta["pairs_file"] = None
        meta["pairs_note"] = ((f"{n_pairs:,} pairs (more than {STORED_PAIRS_MAX:,})"
                               if n_pairs < 2**62 else "a .zarr study") + ": the pairs are "
                              "not stored beside the ranking; --pairs-out writes them")
        pairs_path = None
    else:
        pairs_path = None
    write_table(board, out, metadata=meta)
    if eee_out is not None:
        # (a .zarr study is not loaded: the ranking's own intervals)
        write_eee(board, eee_out, study=loaded if hasattr(loaded, "children") else None)
    record(test=meta["test"], correction=meta["correction"], alpha=req.alpha,
           confidence_level=req.level, n_resamples=req.n_resamples, seed=req.seed,
           notes=list(meta.get("floor_notes", ())) + list(meta.get("low_df_notes", ())),
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
    for note in (*meta.get("floor_notes", ()), *meta.get("low_df_notes", ())):
        typer.echo(f"note: {note}")
    written = " and ".join(str(p) for p in (out, pairs_path, eee_out) if p is not None)
    typer.echo(f"wrote {written} ({time.perf_counter() - start:.1f} s)")


def _pair_rows(study, req) -> int:
    """Pair rows the ranking's compare table would have: k(k-1)/2 per dataset x metric
    (a .zarr study, larger than memory by design, counts as beyond any bound)."""
    # lazily: the library loads when the command runs
    from multistat import cube

    if not hasattr(study, "children"):
        return 2**62
    dsets, metrics = cube.select(study, datasets=req.datasets, metrics=req.metrics)
    return sum((len(metrics) if metrics else ds.sizes["metric"])
               * ds.sizes["system"] * (ds.sizes["system"] - 1) // 2
               for ds in dsets.values())


def _relative(path: Path, out: Path) -> str:
    """``path`` relative to the folder of ``out`` (both files move together)."""
    # lazily: os.path only here
    import os

    return os.path.relpath(Path(path).resolve(), Path(out).resolve().parent)


def _sha256(path: Path) -> str:
    """SHA-256 of a file, read in blocks."""
    # lazily: hashlib only when the ranking names its pairs
    import hashlib

    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
