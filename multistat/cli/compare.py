"""``multistat compare``: every pair x metric x dataset x test of a study, one table."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import (
    OUT_TABLE_HELP,
    PairOpt,
    eee_file,
    eee_folder,
    guard_outputs,
    open_study,
    parse_pairs,
    show_frame,
    split_names,
    table_kind,
    write_eee,
    write_table,
)
from multistat.cli._conventions import record, show_progress
from multistat.errors import ParameterError

#: compare's options whose default is the run request's (RunRequest field = parameter)
REQUEST_DEFAULTS = ("tests", "statistic", "pairs", "alternative", "null_value", "alpha",
                    "n_resamples", "seed", "correction", "scheduler", "ci_method",
                    "bootstrap_pvalue", "max_cost")


def fill_library_choices(command) -> None:
    """Write the library's choices and defaults into ``compare --help``: the registered
    tests (:data:`multistat.significance.REGISTRY`) and the defaults of
    :class:`multistat.request.RunRequest`. Called once the command line has pinned the
    BLAS kernels (it imports numpy), so that ``multistat --help`` stays fast."""
    # lazily: numpy loads with the library, after the command line pins BLAS kernels
    from multistat.request import RunRequest

    # lazily: as above (the registry imports every test module)
    from multistat.significance import REGISTRY

    defaults = {f.name: f.default for f in dataclasses.fields(RunRequest)}
    hints = {name: p.annotation for name, p in inspect.signature(command).parameters.items()}
    for name in REQUEST_DEFAULTS:
        info = hints[name].__metadata__[0]
        value = defaults[name]
        info.show_default = (",".join(value) if isinstance(value, tuple) else
                             format(value, "g") if isinstance(value, float) else str(value))
    hints["tests"].__metadata__[0].help = (
        "comma-separated tests of the registry (multistat.significance): "
        + ", ".join(REGISTRY))


def pd_unique(column) -> list[str]:
    """The distinct values of a table column, in their order of appearance, as str."""
    return [str(v) for v in dict.fromkeys(column.tolist())]


def parse_test_options(items) -> dict | None:
    """``["wilcoxon.zero_method=pratt", ...]`` -> ``{"wilcoxon": {"zero_method": "pratt"}}``;
    values true/false become booleans, numbers become int/float."""

    if not items:
        return None
    out: dict = {}
    for item in items:
        head, sep, value = item.partition("=")
        test, dot, key = head.strip().partition(".")
        if not sep or not dot or not test or not key.strip():
            raise ParameterError(f"--test-option {item[:100]!r}: write TEST.OPTION=VALUE, "
                                 "e.g. wilcoxon.zero_method=pratt")
        value = value.strip()
        low = value.lower()
        if low in ("true", "false"):
            parsed = low == "true"
        else:
            try:
                parsed = int(value)
            except ValueError:
                try:
                    parsed = float(value)
                except ValueError:
                    parsed = value
        out.setdefault(test, {})[key.strip()] = parsed
    return out


def compare_cmd(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    out: Annotated[Path, typer.Option("--out", "-o", help=OUT_TABLE_HELP)] =
    Path("results.parquet"),
    systems_out: Annotated[Path | None, typer.Option(
        help="also write per-system scores with bootstrap intervals (.parquet, .csv or "
             ".jsonl)")] = None,
    tests: Annotated[str | None, typer.Option(
        help="comma-separated tests of the registry (multistat.significance)")] = None,
    statistic: Annotated[str | None, typer.Option(
        help="{choices} (bootstrap/permutation)")] = None,
    pairs: Annotated[str | None, typer.Option(
        help="all | baseline:<system> | explicit pairs 'a,b;c,d' (estimates are a - b)")] =
    None,
    pair: PairOpt = None,
    metrics: Annotated[str | None, typer.Option(help="comma-separated metrics")] = None,
    datasets: Annotated[str | None, typer.Option(help="comma-separated datasets")] = None,
    alternative: Annotated[str | None, typer.Option(
        help="{choices} (a - b)")] = None,
    null_value: Annotated[float | None, typer.Option(
        help="margin delta of H0 (finite)")] = None,
    alpha: Annotated[float | None, typer.Option(
        help="significance level, in (0, 1)")] = None,
    n_resamples: Annotated[int | None, typer.Option(
        help="bootstrap/permutation resamples")] = None,
    seed: Annotated[int | None, typer.Option(
        help="random seed, 0 to 2**64-1 (0 is a seed)")] = None,
    correction: Annotated[str | None, typer.Option(
        help="{choices} (statsmodels' multipletests methods; westfall-young: step-down "
             "over the shared resampling plan, bootstrap/permutation only), or none")] = None,
    family: Annotated[str | None, typer.Option(
        help="columns defining correction families (comma-separated) or 'all'; default "
             "dataset,metric,test")] = None,
    scheduler: Annotated[str | None, typer.Option(
        help="threads | processes | synchronous | tcp://host:port (dask.distributed; the "
             "scheduler and its workers exchange pickled tasks: use only a scheduler you "
             "trust, on a network you trust; checked before the run, and workers whose "
             "BLAS kernels differ from this process's are restarted with "
             "OPENBLAS_CORETYPE=Haswell)")] = None,
    ci_method: Annotated[str | None, typer.Option(
        help="bootstrap interval: {choices} (basic inverts the p-value, so decision and "
             "interval agree)")] = None,
    bootstrap_pvalue: Annotated[str | None, typer.Option(
        help="{choices} (sacrebleu: compatibility, warns)")] = None,
    power: Annotated[float | None, typer.Option(
        "--power", help="add a power column: power of the paired t test to detect this "
                        "difference (metric units, finite)")] = None,
    observed_power: Annotated[bool, typer.Option(
        help="add a power column at the observed difference (retrospective)")] = False,
    effect_sizes: Annotated[bool, typer.Option(
        help="add Cohen's d_z, Hedges' g, Wilcoxon r, Hodges-Lehmann with intervals")] = True,
    equivalence_margin: Annotated[float | None, typer.Option(
        help="margin delta (metric units): add p_equivalence/equivalent (TOST: tied "
             "within +-delta, corrected like p_value)")] = None,
    memory_limit: Annotated[str | None, typer.Option(
        "--memory-limit", help="working-memory budget, e.g. 2GiB or 500MB (default: a "
                               "safe share of physical memory); results do not depend "
                               "on it")] = None,
    test_option: Annotated[list[str] | None, typer.Option(
        "--test-option", help="an option of one test as TEST.OPTION=VALUE, repeatable, "
                              "e.g. --test-option wilcoxon.zero_method=pratt "
                              "--test-option wilcoxon.correction=true")] = None,
    max_cost: Annotated[float | None, typer.Option(
        "--max-cost", help="stop before starting when the estimated work exceeds this many "
                           "operations (the default is hours of work; 'inf': no limit)")] =
    None,
    progress: Annotated[bool | None, typer.Option(
        "--progress/--no-progress", help="progress bar on stderr (default: when stderr is "
                                         "a terminal)")] = None,
    cluster: Annotated[str | None, typer.Option(
        "--cluster", help="group: the bootstrap and permutation tests resample whole "
                          "groups (documents from load --group-col): the cluster "
                          "bootstrap; t-cluster uses them in its standard error")] = None,
    eee_out: Annotated[Path | None, typer.Option(
        "--eee-out", help="also write Every Eval Ever aggregate records, one per system "
                          "(a .jsonl file, or a folder of <system>.json): scores with "
                          "their intervals (Wilson for binary metrics) and the "
                          "significant pairs, test, correction and seed")] = None,
):
    """Paired tests for every pair x metric x dataset; writes the tidy results table."""
    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat._scheduler import probe

    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat.comparison import run

    # lazily: the library loads when the command runs (`multistat --help` stays fast)
    from multistat.request import build_request

    # the flags become one run request, validated once (its messages name the flags);
    # then the outputs, the scheduler and what the request asks of this study, all
    # before any work
    # an option left out keeps the run request's default (none is written here)
    given = {"tests": split_names(tests, "--tests"), "statistic": statistic,
             "alternative": alternative, "null_value": null_value, "alpha": alpha,
             "n_resamples": n_resamples, "seed": seed, "correction": correction,
             "scheduler": scheduler, "ci_method": ci_method,
             "bootstrap_pvalue": bootstrap_pvalue, "max_cost": max_cost,
             "pairs": parse_pairs(pairs, pair) if pairs is not None or pair else None}
    req = build_request(
        metrics=split_names(metrics, "--metrics"),
        datasets=split_names(datasets, "--datasets"),
        family=family if family in (None, "all") else split_names(family, "--family"),
        power=power if power is not None else observed_power,
        progress=show_progress(progress),
        effect_sizes=effect_sizes, equivalence_margin=equivalence_margin,
        memory_limit=memory_limit, test_options=parse_test_options(test_option),
        cluster=cluster, **{k: v for k, v in given.items() if v is not None})
    guard_outputs([study], {"--out": out, "--systems-out": systems_out,
                            **eee_file(eee_out)}, folders=eee_folder(eee_out))
    table_kind(out)
    if systems_out is not None:
        table_kind(systems_out, "--systems-out")
    probe(req.scheduler)  # a dask.distributed address answers, even if no test uses it
    opened = open_study(study)
    result = run(opened, req, return_systems=systems_out is not None)
    table, systems = result if systems_out is not None else (result, None)
    # compare's metadata already holds the sacrebleu signatures of load-mt studies
    meta = dict(table.attrs["multistat"], input=str(study), stage="compare")
    write_table(table, out, metadata=meta)
    if systems_out is not None:
        write_table(systems, systems_out, metadata=meta, flag="--systems-out")
    if eee_out is not None:
        # (a .zarr study is not loaded: the records take the table's scores)
        write_eee(table, eee_out, study=opened if systems is None and hasattr(
            opened, "children") else None, systems=systems)
    shown = table[table["reject"]]
    record(comparisons=len(table), tests=list(pd_unique(table["test"])),
           significant=int(table["reject"].sum()),
           significant_by_test={str(t): int(g["reject"].sum())
                                for t, g in table.groupby("test", sort=False)},
           correction=meta["correction"], alpha=req.alpha)
    typer.echo(f"{len(table)} comparisons ({table['test'].nunique()} tests); "
               f"{int(table['reject'].sum())} significant after {meta['correction']} at "
               f"alpha={req.alpha}")
    cols = ["dataset", "metric", "system_a", "system_b", "test", "estimate", "ci_low",
            "ci_high", "p_adjusted"]
    if len(shown):
        show_frame(lambda: typer.echo(shown[cols].to_string(index=False, max_rows=30)))
    typer.echo(f"wrote {out}" + "".join(f" and {p}" for p in (systems_out, eee_out) if p))
