"""``multistat rank``: the leaderboard table (clusters, rank ranges, rank intervals).

Mounted in :mod:`multistat.cli` as ``app.command("rank")(rank_command)``. Errors are
:class:`~multistat.errors.MultistatError` and become one line on stderr with exit status
2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from multistat._typing import DEFAULT_N_RESAMPLES
from multistat.cli._common import (
    guard_outputs,
    split_names,
    table_kind,
    write_table,
)


def rank_command(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    out: Annotated[Path, typer.Option("--out", "-o", help="ranking table (Parquet)")] =
    Path("ranking.parquet"),
    test: Annotated[str, typer.Option(
        help="pairwise test behind clusters and rank ranges: auto (= bootstrap of the "
             "score difference, any metric kind), t, wilcoxon, sign, bootstrap, "
             "permutation, or mannwhitney (WMT's rank-sum test of each system's own "
             "scores, for studies loaded with --missing keep)")] = "auto",
    correction: Annotated[str, typer.Option(
        help="correction within each dataset x metric: auto (westfall-young for the "
             "resampling tests, whose adjusted p is not multiplied by the number of "
             "pairs; holm for closed-form tests), holm, westfall-young, any statsmodels "
             "multipletests method, or none. A setting under which no pair can be "
             "significant warns with the resamples needed")] = "auto",
    alpha: Annotated[float, typer.Option(help="level of the corrected decisions")] = 0.05,
    seed: Annotated[int, typer.Option(help="seed of the shared plan (0 is a seed)")] = 0,
    n_resamples: Annotated[int, typer.Option(
        help="resamples of the shared bootstrap plan (and of the resampling test)")] =
    DEFAULT_N_RESAMPLES,
    confidence_level: Annotated[float, typer.Option(
        help="level of the score and rank intervals")] = 0.95,
    equivalence_margin: Annotated[float | None, typer.Option(
        help="margin delta (metric units): adds equivalent_to_next (TOST within "
             "+-delta, corrected)")] = None,
    metrics: Annotated[str | None, typer.Option(help="comma-separated metrics")] = None,
    datasets: Annotated[str | None, typer.Option(help="comma-separated datasets")] = None,
    scheduler: Annotated[str, typer.Option(
        help="threads | processes | synchronous | tcp://host:port")] = "threads",
    pairs_out: Annotated[Path | None, typer.Option(
        "--pairs-out", help="also write the pairwise decisions behind the clusters (the "
                            "compare rows of the ranking's test, correction and alpha); "
                            "`multistat report --ranking-pairs` shows them in every "
                            "section")] = None,
) -> None:
    """Leaderboard per dataset x metric: WMT clusters (a boundary where every system
    above is significantly better than every system below), rank ranges from the
    corrected decisions, bootstrap rank intervals, P(best). Writes a Parquet table and
    prints the clusters."""
    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat import cube

    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat.ranking import rank_request, run_ranking

    # the flags become one run request, validated once (messages name the flags)
    req = rank_request(test=test, correction=correction, alpha=alpha, seed=seed,
                       n_resamples=n_resamples, confidence_level=confidence_level,
                       equivalence_margin=equivalence_margin,
                       metrics=split_names(metrics, "--metrics"),
                       datasets=split_names(datasets, "--datasets"), scheduler=scheduler)
    guard_outputs([study], {"--out": out, "--pairs-out": pairs_out})
    table_kind(out)
    if pairs_out is not None:
        table_kind(pairs_out, "--pairs-out")
    start = time.perf_counter()
    result = run_ranking(cube.load(study), req, requested=test, pairs=pairs_out is not None)
    board = result.table
    meta = dict(board.attrs["multistat"], input=str(study), stage="rank")
    write_table(board, out, metadata=meta)
    if pairs_out is not None:
        write_table(result.pairs, pairs_out, flag="--pairs-out",
                    metadata=dict(result.pairs.attrs["multistat"], input=str(study),
                                  stage="rank"))
    for (ds, metric), g in board.groupby(["dataset", "metric"], sort=False):
        typer.echo(f"{ds} / {metric}:")
        for c, gc in g.groupby("cluster", sort=True):
            members = ", ".join(f"{s} ({lo:g}-{hi:g})" for s, lo, hi in
                                zip(gc["system"], gc["rank_ci_low"], gc["rank_ci_high"]))
            typer.echo(f"  cluster {c}: {members}")
    typer.echo(f"{meta['test']} test, {meta['correction']} correction, alpha={req.alpha}; "
               f"rank intervals at {req.level:g} from {req.n_resamples} resamples "
               f"(seed {req.seed})")
    for note in meta.get("floor_notes", ()):
        typer.echo(f"note: {note}")
    written = f"{out} and {pairs_out}" if pairs_out is not None else f"{out}"
    typer.echo(f"wrote {written} ({time.perf_counter() - start:.1f} s)")
