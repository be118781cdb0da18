"""``multistat agreement`` and ``multistat components``: human evaluation on the command
line (Krippendorff's alpha of the raters; the variance components of the crossed mixed
model, pooled and per pair).

Mounted in :mod:`multistat.cli`. Errors are :class:`~multistat.errors.MultistatError`
and become one line on stderr with exit status 2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import guard_outputs, split_names, table_kind, write_table
from multistat.cli._conventions import record, working

AGREEMENT_HELP = ("Krippendorff's alpha of the raters of a study with ratings (read with "
                  "--rater-col), one row per dataset x system x metric, with a bootstrap "
                  "interval over items (Parquet).")
COMPONENTS_HELP = ("Variance components of a pilot of human ratings (Card et al.'s rater "
                   "and item intercepts and slopes, residual), pooled and per pair of "
                   "systems, to plan the next study with `multistat power likert`.")


def agreement_command(
    study: Annotated[Path, typer.Argument(help="study with ratings by rater (.nc, or a "
                                               "score file read with its defaults)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="agreement table: .parquet, "
                                                          ".csv or .jsonl")] =
    Path("agreement.parquet"),
    level: Annotated[str, typer.Option(
        help="level of measurement: {choices}")] = "interval",
    n_resamples: Annotated[int, typer.Option(
        help="bootstrap resamples over items for each interval (0: none)")] = 1000,
    seed: Annotated[int, typer.Option(help="seed of the bootstrap plan (0 is a seed)")] = 0,
    confidence_level: Annotated[float, typer.Option(help="level of the intervals")] = 0.95,
):
    """Agreement between raters (Krippendorff's alpha) for every dataset x system x
    metric; writes a table and prints one line each."""
    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat import cube

    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat.human.agreement import agreement

    guard_outputs([study], {"--out": out})
    table_kind(out)
    start = time.perf_counter()
    with working("agreement"):  # the bootstrap: elapsed seconds on stderr
        table = agreement(cube.load(study), level, n_resamples=n_resamples, seed=seed,
                          confidence_level=confidence_level)
    meta = {"kind": "agreement", "level": level, "n_resamples": n_resamples, "seed": seed,
            "confidence_level": confidence_level, "input": str(study)}
    write_table(table, out, metadata=meta)
    for r in table.itertuples(index=False):
        interval = (f" [{r.ci_low:.3f}, {r.ci_high:.3f}]" if n_resamples else "")
        typer.echo(f"{r.dataset} / {r.metric} / {r.system}: alpha = {r.alpha:.3f}{interval}"
                   f" ({r.n_units} items, {r.n_raters} raters)")
    record(level=level, n_resamples=n_resamples, seed=seed,
           confidence_level=confidence_level,
           rows=table[[c for c in ("dataset", "metric", "system", "alpha", "ci_low",
                                   "ci_high", "n_units", "n_raters") if c in table]
                      ].to_dict(orient="records"))
    typer.echo(f"wrote {out} ({time.perf_counter() - start:.1f} s)")


def components_command(
    study: Annotated[Path, typer.Argument(help="pilot study with ratings by rater")],
    out: Annotated[Path, typer.Option("--out", "-o", help="per-pair table: .parquet, "
                                                          ".csv or .jsonl")] =
    Path("components.parquet"),
    dataset: Annotated[str | None, typer.Option(help="dataset (needed when several)")] =
    None,
    metric: Annotated[str | None, typer.Option(help="metric (needed when several)")] = None,
    systems: Annotated[str | None, typer.Option(
        help="comma-separated systems (default: all; at least two)")] = None,
    max_pairs: Annotated[int, typer.Option(
        help="fit at most this many pairs: beyond, a balanced subsample (whole rounds of "
             "the cyclic design, every system in as many pairs), said in the note; 0: "
             "every pair")] = 120,
    grid_out: Annotated[Path | None, typer.Option(
        "--grid-out", help="also write the power of raters x items designs (3-20 raters, "
                           "50-800 items) at the pilot's components and mean |beta_1| "
                           "(--grid-simulations each): the report's power grid "
                           "(`multistat report --section human_power=PATH`)")] = None,
    grid_simulations: Annotated[int, typer.Option(
        "--grid-simulations", help="simulated studies per cell of --grid-out")] = 500,
):
    """Variance components of the crossed mixed model, fitted by REML to each pair of
    systems and pooled; writes the per-pair table (the pooled standard deviations in its
    metadata) and prints the pooled ones."""
    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat import cube

    # heavy: statsmodels, scipy.optimize, lazily
    from multistat.human.ratings import variance_components

    guard_outputs([study], {"--out": out, "--grid-out": grid_out})
    table_kind(out)
    if grid_out is not None:
        table_kind(grid_out, "--grid-out")
        # lazily: numpy loads with the checks (`multistat --help` stays fast)
        from multistat._validation import check_int

        check_int("--grid-simulations", grid_simulations, minimum=1)
    start = time.perf_counter()
    vc = variance_components(cube.load(study), dataset=dataset, metric=metric,
                             systems=split_names(systems, "--systems"),
                             max_pairs=None if max_pairs == 0 else max_pairs)
    pooled = {k: float(v) for k, v in dataclasses.asdict(vc.variance).items()}
    meta = {"kind": "variance_components", "dataset": vc.dataset, "metric": vc.metric,
            "pooled": pooled, "intercept": vc.intercept, "effect": vc.effect,
            "n_raters": vc.n_raters, "n_items": vc.n_items, "n_ratings": vc.n_ratings,
            "max_pairs": max_pairs, "note": vc.note, "input": str(study)}
    write_table(vc.to_frame(), out, metadata=meta)
    if grid_out is not None:
        # heavy: the Likert simulation, lazily
        from multistat.human.pilot import power_grid

        effect = max(vc.effect, 1e-12)
        grid = power_grid(vc.variance, effect, n_simulations=grid_simulations).assign(
            dataset=vc.dataset, metric=vc.metric, effect=effect)
        write_table(grid[["dataset", "metric", "raters", "items", "power", "effect"]],
                    grid_out, flag="--grid-out",
                    metadata={"kind": "likert_power_grid", "input": str(study)})
    typer.echo(f"{vc.dataset} / {vc.metric}: {vc.n_ratings} ratings, {vc.n_raters} raters, "
               f"{vc.n_items} items; pooled standard deviations: "
               + ", ".join(f"{k} {v:.4g}" for k, v in pooled.items()))
    if vc.note:
        typer.echo(f"note: {vc.note}")
    record(dataset=vc.dataset, metric=vc.metric, n_ratings=vc.n_ratings,
           n_raters=vc.n_raters, n_items=vc.n_items, pooled=pooled,
           intercept=vc.intercept, effect=vc.effect, note=vc.note)
    written = " and ".join(str(p) for p in (out, grid_out) if p is not None)
    typer.echo(f"wrote {written} ({time.perf_counter() - start:.1f} s)")
