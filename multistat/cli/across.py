"""``multistat friedman`` and ``multistat replicability``: across test sets.

Mounted in :mod:`multistat.cli` with ``app.command(...)``. Errors are
:class:`~multistat.errors.MultistatError` and become one line on stderr with exit
status 2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import guard_outputs, split_names, table_kind, write_table
from multistat.cli._conventions import record
from multistat.errors import InputFileError, MultistatError, ParameterError


def _compare_table(frame) -> bool:
    return {"system_a", "system_b", "p_value", "dataset"} <= set(frame.columns)


def _blocks(input: Path, wide: bool, lower_is_better: bool, metrics):
    """``({metric: test sets x systems}, higher_is_better)``: a compare table (its
    score_a/score_b) or a study gives one wide table per metric (blocks are test sets,
    never metrics); a wide table (rows = blocks, first column the block name) is one, under
    the metric name ``""``."""
    # heavy: scipy.stats, scipy.optimize, lazily
    from multistat.leaderboard.across import blocks_per_metric

    # heavy: pyarrow, pandas, lazily
    from multistat.io._parsing import read_table

    if wide:
        if metrics is not None:
            raise ParameterError("--metrics applies to a study or a compare table; a --wide "
                                 "table already holds one score per block and system")
        frame = read_table(input)
        if frame.shape[1] < 2:
            raise InputFileError(f"{input}: a wide table needs a block column and at least "
                                 "3 system columns")
        return {"": frame.set_index(frame.columns[0])}, not lower_is_better
    if input.suffix == ".parquet":
        # heavy: pyarrow, pandas, lazily
        from multistat.io import read_parquet

        frame = read_parquet(input)
        if _compare_table(frame):
            return blocks_per_metric(frame, metrics), True  # oriented per metric
    # heavy: pyarrow, xarray, lazily
    from multistat import cube

    return blocks_per_metric(cube.load(input), metrics), True


def _figure_path(figure: Path, metric: str, several: bool) -> Path:
    if not several or not metric:
        return figure
    # the metric's name through the report's file-name rule: a name such as 'a/b' or
    # '..' never becomes a path (injective, so two metrics never share a figure)
    # lazily: `multistat --help` does not load the report package (startup time)
    from multistat.report._files import file_stem

    return figure.with_name(f"{figure.stem}_{file_stem(metric)}{figure.suffix}")


def friedman_command(
    input: Annotated[Path, typer.Argument(help="a compare table (Parquet from `multistat "
                                                "compare`), a study (.nc or score file), "
                                                "or with --wide a table of blocks x "
                                                "systems")],
    out: Annotated[Path, typer.Option("--out", "-o", help="pairwise post-hoc table "
                                                           "(Parquet)")] =
    Path("friedman.parquet"),
    wide: Annotated[bool, typer.Option(
        "--wide", help="INPUT is a table with one row per block (test set): first column "
                       "the block name, one column per system")] = False,
    lower_is_better: Annotated[bool, typer.Option(
        "--lower-is-better", help="with --wide: smaller scores are better")] = False,
    posthoc: Annotated[str, typer.Option(
        help="{choices} (bonferroni-dunn: against --control)")] = "nemenyi",
    control: Annotated[str | None, typer.Option(
        help="control system of bonferroni-dunn (default: the best mean rank)")] = None,
    alpha: Annotated[float, typer.Option(help="level of the critical difference")] = 0.05,
    metrics: Annotated[str | None, typer.Option(
        "--metrics", help="comma-separated metrics, one Friedman test each (default: "
                          "every metric); the blocks are the test sets")] = None,
    figure: Annotated[Path | None, typer.Option(
        "--figure", help="also draw the critical-difference diagram (PNG; with several "
                         "metrics one per metric, named FIGURE_<metric>.png)")] = None,
):
    """Friedman test over blocks (the test sets, one test per metric: metrics are never
    blocks) with a post-hoc test; prints the statistic, Iman-Davenport F, mean ranks and
    the Nemenyi critical difference. The table has a ``metric`` column."""
    # heavy: pyarrow, pandas, lazily
    import pandas as pd

    # heavy: scipy.stats, scipy.optimize, lazily
    from multistat.leaderboard.across import friedman

    guard_outputs([input], {"--out": out, "--figure": figure})
    table_kind(out)
    per, hib = _blocks(input, wide, lower_is_better, split_names(metrics, "--metrics"))
    several = len(per) > 1
    results, tables, figures = {}, [], []
    for metric, scores in per.items():
        try:
            r = friedman(scores, higher_is_better=hib, alpha=alpha, posthoc=posthoc,
                         control=control)
        except MultistatError as exc:
            raise type(exc)(f"metric {metric!r}: {exc}" if metric else str(exc)) from None
        results[metric] = r
        tables.append(r.pairwise if wide else r.pairwise.assign(metric=metric))
    for metric, r in results.items():
        head = f"{metric}: " if metric else ""
        typer.echo(f"{head}Friedman chi2 = {r.statistic:.4g}, p = {r.p_value:.4g}; "
                   f"Iman-Davenport F = {r.iman_davenport:.4g}, p = "
                   f"{r.iman_davenport_p_value:.4g} ({r.n_systems} systems, {r.n_blocks} "
                   "blocks)")
        typer.echo(f"{head}Nemenyi critical difference (alpha={alpha:g}): "
                   f"{r.critical_difference:.4g}")
        for note in r.notes:
            typer.echo(f"{head}note: {note}")
        typer.echo(f"{head}mean ranks (1 = best): " + ", ".join(
            f"{k} {v:.2f}" for k, v in r.mean_ranks.items()))
        sig = r.pairwise[r.pairwise["reject"]]
        typer.echo(f"{head}{len(sig)} of {len(r.pairwise)} pairs differ ({posthoc}): " +
                   ", ".join(f"{a} vs {b}" for a, b in zip(sig.system_a, sig.system_b)))
        if figure is not None:
            # lazily: `multistat --help` does not load it (startup time)
            from multistat._atomic import write_bytes

            # heavy: matplotlib, seaborn, lazily
            from multistat.report.plots import save_png

            # heavy: matplotlib, seaborn, lazily
            from multistat.report.testsets import cd_diagram

            path = _figure_path(figure, metric, several)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(path, save_png(cd_diagram(r)))
            figures.append(path)

    def stats(r):
        return {"statistic": r.statistic, "p_value": r.p_value,
                "iman_davenport": r.iman_davenport,
                "iman_davenport_p_value": r.iman_davenport_p_value,
                "critical_difference": r.critical_difference, "n_blocks": r.n_blocks,
                "control": r.control or "",
                "mean_ranks": {k: float(v) for k, v in r.mean_ranks.items()},
                "dropped_systems": {k: list(v) for k, v in r.dropped.items()},
                "notes": r.notes}

    meta = {"stage": "friedman", "input": str(input), "posthoc": posthoc, "alpha": alpha,
            "blocks": "rows of the wide table" if wide else "test sets (datasets), one "
                                                           "Friedman test per metric",
            "metrics": [m for m in results if m]}
    if not several:  # one test: its numbers at the top level
        meta.update(stats(next(iter(results.values()))))
    meta["per_metric"] = {m: stats(r) for m, r in results.items() if m}
    record(**{k: v for k, v in meta.items() if k not in ("stage", "input")},
           significant_pairs={m: [[a, b] for a, b, rej in zip(
               r.pairwise.system_a, r.pairwise.system_b, r.pairwise["reject"]) if rej]
               for m, r in results.items()})
    table = pd.concat(tables, ignore_index=True)
    if not wide:
        table = table[["metric", *[c for c in table.columns if c != "metric"]]]
    write_table(table, out, metadata=meta)
    for path in figures:
        typer.echo(f"wrote {path}")
    typer.echo(f"wrote {out}")


def _p_list(text: str):
    """``0.01,0.2`` or ``newstest=0.01,ted=0.2``."""

    items = split_names(text, "--p-values")
    named = ["=" in t for t in items]
    if any(named) and not all(named):
        raise ParameterError("--p-values: name every p-value (set=p) or none")
    out: dict[str, float] = {}
    for i, t in enumerate(items):
        name, _, value = t.rpartition("=") if "=" in t else (f"dataset{i + 1}", "", t)
        if name.strip() in out:
            raise ParameterError(f"--p-values: test set {name.strip()!r} is named twice "
                                 f"(items {list(out).index(name.strip()) + 1} and {i + 1}); "
                                 "give one p-value per test set")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ParameterError(f"--p-values: {t!r} is not a number (item {i + 1})") \
                from None
    return out


def replicability_command(
    input: Annotated[Path | None, typer.Argument(
        help="compare table (Parquet from `multistat compare` over several datasets)")] =
    None,
    p_values: Annotated[str | None, typer.Option(
        "--p-values", help="instead of INPUT: one p-value per test set, comma-separated "
                           "(0.01,0.2,...) or named (newstest=0.01,ted=0.2)")] = None,
    alpha: Annotated[float, typer.Option(help="family-wise level")] = 0.05,
    method: Annotated[str, typer.Option(
        help="{choices} (bonferroni: any dependence; fisher: independent test sets)")] =
    "bonferroni",
    test: Annotated[str | None, typer.Option(
        help="only this test of the compare table (default: every test)")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="with INPUT: the replicability table (Parquet)")] = None,
):
    """How many test sets, and which, show an effect (Dror et al. 2017): k-hat from
    partial conjunction p-values, datasets identified by Holm's procedure."""
    # heavy: scipy.stats, scipy.optimize, lazily
    from multistat.leaderboard.across import replicability

    if (input is None) == (p_values is None):
        raise ParameterError("give a compare table INPUT or --p-values, not both")
    if p_values is not None:
        r = replicability(_p_list(p_values), alpha=alpha, method=method)
        typer.echo(f"k = {r.k} of {len(r.p_values)} test sets ({method}, alpha={alpha:g})")
        typer.echo("partial conjunction p (u = 1..N): " +
                   ", ".join(f"{p:.4g}" for p in r.partial_conjunction_p))
        typer.echo("identified by Holm: " + (", ".join(r.datasets) or "none"))
        record(k=r.k, n_test_sets=len(r.p_values), method=method, alpha=alpha,
               partial_conjunction_p=[float(p) for p in r.partial_conjunction_p],
               datasets=list(r.datasets))
        return
    # heavy: pyarrow, pandas, lazily
    from multistat.io import read_parquet

    out = out or Path("replicability.parquet")
    guard_outputs([input], {"--out": out})
    table_kind(out)
    table = read_parquet(input)
    if test is not None:
        if test not in set(table.get("test", [])):
            raise ParameterError(f"--test {test!r} is not in {input} (tests: "
                                 f"{', '.join(sorted(set(table.get('test', []))))})")
        table = table[table["test"] == test]
    res = replicability(table, alpha=alpha, method=method)
    notes = list(res.attrs.get("multistat", {}).get("notes", ()))
    write_table(res, out, metadata={"stage": "replicability", "input": str(input),
                                      "alpha": alpha, "method": method, "notes": notes,
                                      "narrowed": list(res.attrs.get("multistat", {}).get(
                                          "narrowed", ()))})
    for note in notes:
        typer.echo(f"note: {note}")
    held = res[res["k"] > 0]
    typer.echo(f"{len(held)} of {len(res)} claims hold on at least one test set "
               f"({method}, alpha={alpha:g}):")
    cols = ["metric", "better", "system_a", "system_b", "test", "n_datasets", "k",
            "datasets"]
    if len(held):
        typer.echo(held[cols].to_string(index=False, max_rows=30))
    record(method=method, alpha=alpha, claims=len(res), holding=len(held),
           rows=held[cols].to_dict(orient="records"))
    typer.echo(f"wrote {out}")
