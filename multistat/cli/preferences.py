"""``multistat preferences``: a Bradley-Terry leaderboard from pairwise battles.

Mounted in :mod:`multistat.cli` as ``app.command("preferences")(preferences_command)``.
Errors are :class:`~multistat.errors.MultistatError` and become one line on stderr with
exit status 2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli import _common as cc
from multistat.cli._conventions import record, working


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def preferences_command(
    battles: Annotated[Path, typer.Argument(
        help="battles table (CSV, TSV, JSONL, Parquet): one row per battle with the two "
             "systems and the winner (model_a, model_b or tie)")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="leaderboard table; .parquet (with run metadata), .csv or "
                            ".jsonl by extension")] = Path("leaderboard.parquet"),
    model_a: Annotated[str, typer.Option("--model-a", help="column of the first system")]
    = "model_a",
    model_b: Annotated[str, typer.Option("--model-b", help="column of the second system")]
    = "model_b",
    winner: Annotated[str, typer.Option(
        "--winner", help="column of the outcome: model_a, model_b, tie (or 'tie "
                         "(bothbad)')")] = "winner",
    ties: Annotated[str, typer.Option(
        help="{choices} (half: a tie is half a win each; davidson: Davidson's tie "
             "model)")] = "half",
    n_resamples: Annotated[int, typer.Option(
        help="bootstrap resamples of the battles (score and rank intervals)")] = 1000,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap (0 is a seed)")] = 0,
    confidence_level: Annotated[float, typer.Option(
        help="level of the score and rank intervals")] = 0.95,
    anchor: Annotated[str | None, typer.Option(
        help="system whose score is fixed at 1000 (default: the mean score is 1000)")]
    = None,
    correction: Annotated[str, typer.Option(
        help="correction of the pairwise decisions behind the clusters: holm, any "
             "statsmodels multipletests method, or none")] = "holm",
    alpha: Annotated[float, typer.Option(help="level of the corrected decisions")] = 0.05,
    systems: Annotated[str | None, typer.Option(
        help="comma-separated systems expected on the leaderboard: one that never plays "
             "(or one not listed that plays) is an error")] = None,
    item: Annotated[str | None, typer.Option(
        "--item-col", help="column naming the item (prompt, segment) of each battle: the "
                           "bootstrap then resamples items, all battles of an item "
                           "together, instead of single battles")] = None,
    report: Annotated[Path | None, typer.Option(
        "--report", help="also write DIR/preferences.html (leaderboard table and "
                         "rank-interval figure), figures/ and tables/")] = None,
) -> None:
    """Bradley-Terry leaderboard on the Elo scale (400 points = 10:1 odds) from pairwise
    battles: maximum likelihood scores, bootstrap score and rank intervals, significance
    clusters (the rule of `multistat rank`). Prints the leaderboard and writes the table."""
    # heavy: pyarrow, pandas, lazily
    from multistat.human.preferences import bradley_terry

    seed = cc.seed_value(seed)
    cc.guard_outputs([battles], {"--out": out}, folders=None if report is None else
                     {"--report": (report, ("preferences.html", "figures", "tables"))})
    cc.table_kind(out)
    start = time.perf_counter()
    with working("preferences"):  # the bootstrap: elapsed seconds on stderr
        board = bradley_terry(battles, model_a=model_a, model_b=model_b, winner=winner,
                              ties=ties, n_resamples=n_resamples, seed=seed,
                              confidence_level=confidence_level, anchor=anchor,
                              correction=None if correction == "none" else correction,
                              alpha=alpha, systems=cc.split_names(systems, "--systems"),
                              item=item)
    meta = dict(board.attrs["multistat"], input=str(battles),
                input_sha256=_sha256(battles), stage="preferences")
    cc.write_table(board, out, metadata=meta)
    record(n_battles=meta["n_battles"], n_systems=meta["n_systems"], ties=ties,
           n_resamples=n_resamples, seed=seed, correction=meta["correction"], alpha=alpha,
           leaderboard=board[["system", "rank", "rank_ci_low", "rank_ci_high", "score",
                              "ci_low", "ci_high", "cluster"]].to_dict("records"))
    width = max(len(s) for s in board["system"])
    typer.echo(f"{'cluster':>7}  {'rank':>4}  {'rank CI':>7}  {'system':<{width}}  "
               f"{'score':>6}  {100 * confidence_level:g}% CI")
    for r in board.itertuples(index=False):
        span = f"{r.rank_ci_low:g}-{r.rank_ci_high:g}"
        typer.echo(f"{r.cluster:>7}  {r.rank:>4g}  {span:>7}  {r.system:<{width}}  "
                   f"{r.score:6.1f}  [{r.ci_low:.1f}, {r.ci_high:.1f}]")
    nu = meta.get("davidson_nu")
    typer.echo(f"{meta['n_battles']} battles, {meta['n_systems']} systems, ties={ties}"
               + (f" (nu = {nu:.3f})" if nu is not None else "")
               + f"; {n_resamples} bootstrap resamples of the "
               + ("battles" if item is None else f"{meta['n_items']} items")
               + f" (seed {seed}); clusters: {meta['correction']} correction, "
               f"alpha={alpha}")
    if report is not None:
        # heavy: matplotlib, seaborn, lazily
        from multistat.report.preferences import write_preference_page

        typer.echo(f"wrote {write_preference_page(board, report)}")
    typer.echo(f"wrote {out} ({time.perf_counter() - start:.1f} s)")
