"""``multistat meta-evaluate``: how well each metric agrees with the human scores.

Mounted in :mod:`multistat.cli` as ``app.command("meta-evaluate")``. Errors are
:class:`~multistat.errors.MultistatError` and become one line on stderr with exit status
2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli import _common as common
from multistat.cli._conventions import record, working
from multistat.errors import ParameterError


def meta_evaluate_command(
    study: Annotated[Path, typer.Argument(help="study file (.nc from `multistat load`; "
                                               "--missing keep for incomplete human "
                                               "judgments) or score file")],
    human: Annotated[str, typer.Option("--human", help="the human metric (e.g. mqm)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="metric leaderboard "
                                                         "(.parquet/.csv/.jsonl)")] =
    Path("metrics.parquet"),
    pairs_out: Annotated[Path | None, typer.Option(
        "--pairs-out", help="also write the metric-pair table (compare_metrics columns)")]
    = None,
    matrix_out: Annotated[Path | None, typer.Option(
        "--matrix-out", help="also write the Pearson correlations between the metrics "
                             "(for the report's heatmap)")] = None,
    level: Annotated[str, typer.Option(help="{choices}")] = "segment",
    statistic: Annotated[str, typer.Option(help="{choices}")] = "pearson",
    average_by: Annotated[str, typer.Option(
        help="segment level: {choices} (item: per item over systems, then the mean)")
    ] = "item",
    epsilon: Annotated[str, typer.Option(
        help="metric tie threshold (Kendall statistics): a number or 'optimal' (tie "
             "calibration, each metric its own)")] = "0",
    test: Annotated[str, typer.Option(
        help="test behind the clusters: auto (perm-pairs with a tie threshold, as "
             "WMT23/24; else perm-both) | {choices}")] = "auto",
    correction: Annotated[str, typer.Option(
        help="correction over the metric pairs of a dataset: auto (none with the wmt "
             "cluster rule, as WMT; holm with strict), holm, any statsmodels "
             "multipletests method, or none")] = "auto",
    cluster_rule: Annotated[str, typer.Option(
        help="{choices} (wmt: mt-metrics-eval's rank groups, a new cluster where a metric "
             "of the current cluster beats the next one, one-sided p <= alpha; strict: "
             "multistat rank's rule, every metric above beats every metric below)")]
    = "wmt",
    alpha: Annotated[float, typer.Option(help="level of the corrected decisions")] = 0.05,
    seed: Annotated[int, typer.Option(help="seed of the shared plans (0 is a seed)")] = 0,
    n_resamples: Annotated[int, typer.Option(help="resamples of each plan")] = 1000,
    confidence_level: Annotated[float, typer.Option(
        help="level of each metric's bootstrap interval")] = 0.95,
    metrics: Annotated[str | None, typer.Option(help="comma-separated metrics")] = None,
    datasets: Annotated[str | None, typer.Option(help="comma-separated datasets")] = None,
    scheduler: Annotated[str, typer.Option(
        help="threads | processes | synchronous | tcp://host:port")] = "threads",
) -> None:
    """Metric meta-evaluation per dataset: every metric's agreement with the human
    metric (value, bootstrap interval), its rank, and significance clusters of metrics
    (WMT's rule by default, or the stricter rule of `multistat rank` with --cluster-rule
    strict). Writes the leaderboard and prints the clusters."""
    # heavy: pyarrow, xarray, lazily
    from multistat import cube

    # heavy: pyarrow, pandas, lazily
    from multistat.meta.evaluation import _meta_evaluation

    seed = common.seed_value(seed)
    outputs = {"--out": out}
    if pairs_out is not None:
        outputs["--pairs-out"] = pairs_out
    if matrix_out is not None:
        outputs["--matrix-out"] = matrix_out
    common.guard_outputs([study], outputs)
    for flag, path in outputs.items():
        common.table_kind(path, flag)
    eps: str | float = epsilon
    if epsilon != "optimal":
        try:
            eps = float(epsilon)
        except ValueError:
            raise ParameterError(f"--epsilon must be a number >= 0 or 'optimal'; got "
                                 f"{epsilon!r}") from None
    start = time.perf_counter()
    with working("meta-evaluate"):  # the resampling plans: elapsed seconds on stderr
        board, pairs, matrix = _meta_evaluation(
            cube.load(study), human, metrics=common.split_names(metrics, "--metrics"),
            level=level, statistic=statistic, average_by=average_by, epsilon=eps,
            test=test, n_resamples=n_resamples, seed=seed, alpha=alpha,
            correction=None if correction == "none" else correction,
            confidence_level=confidence_level,
            datasets=common.split_names(datasets, "--datasets"), scheduler=scheduler,
            cluster_rule=cluster_rule)
    meta = dict(board.attrs["multistat"], input=str(study), stage="meta-evaluate")
    common.write_table(board, out, metadata=meta)
    if pairs_out is not None:
        common.write_table(pairs, pairs_out, metadata=meta, flag="--pairs-out")
    if matrix_out is not None:
        common.write_table(matrix, matrix_out, metadata=meta, flag="--matrix-out")
    record(level=level, statistic=statistic, test=test, correction=meta["correction"],
           alpha=alpha, confidence_level=confidence_level, n_resamples=n_resamples,
           seed=seed, clusters={str(ds): [[{"metric": str(m), "value": float(v)}
                                            for m, v in zip(gc["metric"], gc["value"])]
                                           for _, gc in g.groupby("cluster", sort=True)]
                                for ds, g in board.groupby("dataset", sort=False)})
    for ds, g in board.groupby("dataset", sort=False):
        typer.echo(f"{ds} ({level} level, {statistic}):")
        for c, gc in g.groupby("cluster", sort=True):
            members = ", ".join(f"{m} {v:.3f}" for m, v in zip(gc["metric"], gc["value"]))
            typer.echo(f"  cluster {c}: {members}")
    typer.echo(f"{meta['test']} test, {meta['correction']} correction, alpha={alpha}, "
               f"{meta['cluster_rule']} clusters; intervals at "
               f"{confidence_level:g} from {n_resamples} resamples (seed {seed})")
    typer.echo(f"wrote {out} ({time.perf_counter() - start:.1f} s)")
