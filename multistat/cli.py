"""The ``multistat`` command line: one subcommand per pipeline stage.

Every subcommand reads and writes explicit paths, so DVC stages can call them. Bad input
prints one line ``multistat: error: ...`` on stderr and exits with status 2 (no
traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import click
import typer

from multistat.errors import MultistatError

try:  # recent typer vendors its own click: its usage errors are not click's classes
    from typer._click.exceptions import UsageError as _TyperUsageError
except ImportError:  # pragma: no cover - typer that uses click itself
    _TyperUsageError = click.exceptions.UsageError

app = typer.Typer(
    name="multistat", no_args_is_help=True, add_completion=False,
    pretty_exceptions_enable=False,
    help="Paired significance tests, effect sizes and power for whole NLP evaluation "
         "studies (many systems x metrics x test sets).")

# ----------------------------------------------------------------------------- options
FormatOpt = Annotated[str | None, typer.Option(
    "--format", help="long | wide | pairs (NLPStatTest two-column); default: detect from "
                     "the extension and content")]
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
                      "for that metric across all systems, and report how many")]
SepOpt = Annotated[str | None, typer.Option(
    "--sep", help="field separator for text tables: one character, or '\\s+' for runs of "
                  "whitespace (default: from the extension and first line)")]
SystemsOpt = Annotated[str | None, typer.Option(
    "--systems", help="names of the two systems of a pairs file, comma-separated "
                      "(default A,B)")]


def _read_kwargs(format, system_col, metric_col, instance_col, score_col, dataset_col,
                 metric, dataset, lower_is_better, missing, sep, systems):
    def one(cols):
        return None if not cols else (cols[0] if len(cols) == 1 else list(cols))

    kw = dict(format=format, system_col=one(system_col), metric_col=metric_col,
              instance_col=one(instance_col), score_col=score_col, dataset_col=dataset_col,
              metric=metric, dataset=dataset, lower_is_better=tuple(lower_is_better or ()),
              missing=missing, sep=sep)
    if systems:
        kw["systems"] = tuple(s.strip() for s in systems.split(","))
    return kw


def _open(path: Path):
    """A saved study (.nc) or any score file ``multistat load`` reads with defaults."""
    from multistat import cube

    return cube.load(path)


def _echo_summary(study, dropped=()):
    from multistat import cube

    for name, ds in cube.datasets(study).items():
        metrics = ", ".join(f"{m}{'' if h else ' (lower is better)'} [{k}]" for m, h, k in
                            zip(ds.metric.values, ds.higher_is_better.values, ds.kind.values))
        typer.echo(f"dataset {name}: {ds.sizes['system']} systems x {ds.sizes['metric']} "
                   f"metrics x {ds.sizes['instance']} instances; metrics: {metrics}")
    typer.echo(f"dropped: {len(dropped)} item(s)" + "".join(f"\n  - {d}" for d in dropped))


@app.command()
def load(
    path: Annotated[Path, typer.Argument(help="score file (CSV, TSV, whitespace, JSONL, "
                                              "Parquet, NLPStatTest two-column)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="study file to write (.nc)")] =
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
             "--by group`")] = None,
):
    """Validate a score file, write the study cube (NetCDF) and print a summary."""
    import warnings

    from multistat import cube
    from multistat.errors import DroppedDataWarning
    from multistat.io import read_scores

    kw = _read_kwargs(format, system_col, metric_col, instance_col, score_col, dataset_col,
                      metric, dataset, lower_is_better, missing, sep, systems)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DroppedDataWarning)  # reported in the summary
        frame = read_scores(path, **kw, run_col=run_col, group_col=group_col)
    study = cube.from_frame(frame)
    cube.save(study, out)
    _echo_summary(study, frame.attrs.get("dropped", []))
    typer.echo(f"wrote {out}")


@app.command()
def units(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    size: Annotated[int, typer.Option("--size", "-m", help="instances per unit")] = 1,
    by: Annotated[str | None, typer.Option(
        help="group: one unit per group (document, talk) of the instances, from "
             "--group-col at load time; replaces --size")] = None,
    statistic: Annotated[str, typer.Option(help="mean | median of a unit")] = "mean",
    seed: Annotated[int | None, typer.Option(
        help="shuffle instances with this seed first (default: no shuffle)")] = None,
    remainder: Annotated[str, typer.Option(
        help="spread: numpy.array_split into n//size units (NLPStatTest); drop: only "
             "full units")] = "spread",
    out: Annotated[Path, typer.Option("--out", "-o")] = Path("units.nc"),
):
    """Group instances into evaluation units (mean or median of m instances)."""
    from multistat import cube
    from multistat.units import evaluation_units

    if by is not None:
        result = evaluation_units(_open(study), by=by, statistic=statistic,
                                  size=None if size == 1 else size, seed=seed)
    else:
        result = evaluation_units(_open(study), size=size, statistic=statistic, seed=seed,
                                  remainder=remainder)
    cube.save(result, out)
    _echo_summary(result)
    typer.echo(f"wrote {out}")


@app.command()
def analyze(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    alpha: Annotated[float, typer.Option(help="level of the normality test")] = 0.05,
    pairs: Annotated[str, typer.Option(help="all | baseline:<system>")] = "all",
    out: Annotated[Path, typer.Option("--out", "-o")] = Path("analysis.parquet"),
):
    """Descriptives, skewness, normality and recommended tests (NLPStatTest Table 2)."""
    from multistat.analysis import analyze as run
    from multistat.io import write_parquet

    table = run(_open(study), alpha=alpha, pairs=pairs)
    write_parquet(table, out, metadata={"stage": "analyze", "alpha": alpha, "pairs": pairs,
                                        "input": str(study)})
    cols = ["dataset", "metric", "system_a", "system_b", "n", "skewness", "normality_p",
            "test_statistic", "recommended"]
    with_pd_options(lambda: typer.echo(table[cols].to_string(index=False, max_rows=40)))
    typer.echo(f"wrote {out}")


def with_pd_options(fn):
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_colwidth", 40,
                           "display.float_format", "{:.4g}".format):
        fn()


@app.command("demo-data")
def demo_data(
    out: Annotated[Path, typer.Option("--out", "-o", help="folder to write into")] =
    Path("data"),
    seed: Annotated[int, typer.Option(help="generator seed")] = 20261122,
):
    """Generate the embedded demo study (10 systems x 3 metrics x 2 test sets) and
    two-column NLPStatTest-format samples, with known true differences."""
    from multistat.demo import write_demo

    for p in write_demo(out, seed):
        typer.echo(f"wrote {p}")


def parse_test_options(items) -> dict | None:
    """``["wilcoxon.zero_method=pratt", ...]`` -> ``{"wilcoxon": {"zero_method": "pratt"}}``;
    values true/false become booleans, numbers become int/float."""
    from multistat.errors import ParameterError

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


def _split(text: str | None):
    return None if not text else [t.strip() for t in text.split(",") if t.strip()]


@app.command("compare")
def compare_cmd(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    out: Annotated[Path, typer.Option("--out", "-o", help="results Parquet")] =
    Path("results.parquet"),
    systems_out: Annotated[Path | None, typer.Option(
        help="also write per-system scores with bootstrap intervals (Parquet)")] = None,
    tests: Annotated[str, typer.Option(
        help="comma-separated: t, wilcoxon, sign, bootstrap, permutation, mcnemar")] =
    "t,wilcoxon,sign,bootstrap,permutation",
    statistic: Annotated[str, typer.Option(help="mean | median (bootstrap/permutation)")] =
    "mean",
    pairs: Annotated[str, typer.Option(help="all | baseline:<system>")] = "all",
    metrics: Annotated[str | None, typer.Option(help="comma-separated metrics")] = None,
    datasets: Annotated[str | None, typer.Option(help="comma-separated datasets")] = None,
    alternative: Annotated[str, typer.Option(help="two-sided | less | greater (a - b)")] =
    "two-sided",
    null_value: Annotated[float, typer.Option(help="margin delta of H0")] = 0.0,
    alpha: Annotated[float, typer.Option(help="significance level")] = 0.05,
    n_resamples: Annotated[int, typer.Option(help="bootstrap/permutation resamples")] =
    10_000,
    seed: Annotated[int, typer.Option(help="random seed (0 is a seed)")] = 0,
    correction: Annotated[str, typer.Option(
        help="statsmodels multipletests method, westfall-young (step-down over the shared "
             "resampling plan; bootstrap/permutation only), or none")] = "holm",
    family: Annotated[str | None, typer.Option(
        help="columns defining correction families (comma-separated) or 'all'; default "
             "dataset,metric,test")] = None,
    scheduler: Annotated[str, typer.Option(
        help="threads | processes | synchronous | tcp://host:port (dask.distributed; the "
             "scheduler and its workers exchange pickled tasks: use only a scheduler you "
             "trust, on a network you trust)")] =
    "threads",
    ci_method: Annotated[str, typer.Option(help="bca | percentile | studentized")] = "bca",
    bootstrap_pvalue: Annotated[str, typer.Option(
        help="shifted | berg-kirkpatrick | sacrebleu (compatibility, warns)")] = "shifted",
    power: Annotated[float | None, typer.Option(
        "--power", help="add a power column: power of the paired t test to detect this "
                        "difference (metric units)")] = None,
    observed_power: Annotated[bool, typer.Option(
        help="add a power column at the observed difference (retrospective)")] = False,
    effect_sizes: Annotated[bool, typer.Option(
        help="add Cohen's d_z, Hedges' g, Wilcoxon r, Hodges-Lehmann with intervals")] = True,
    progress: Annotated[bool, typer.Option(help="progress bar")] = True,
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
):
    """Paired tests for every pair x metric x dataset; writes the tidy results table."""
    from multistat.comparison import compare
    from multistat.io import write_parquet

    fam = family if family in (None, "all") else _split(family)
    result = compare(
        _open(study), tests=_split(tests), statistic=statistic, pairs=pairs,
        metrics=_split(metrics), datasets=_split(datasets), alternative=alternative,
        null_value=null_value, alpha=alpha, n_resamples=n_resamples, seed=seed,
        correction=None if correction == "none" else correction, family=fam,
        scheduler=scheduler, ci_method=ci_method, bootstrap_pvalue=bootstrap_pvalue,
        power=power if power is not None else observed_power, progress=progress,
        effect_sizes=effect_sizes, equivalence_margin=equivalence_margin,
        memory_limit=memory_limit, test_options=parse_test_options(test_option),
        return_systems=systems_out is not None)
    table, systems = result if systems_out is not None else (result, None)
    meta = dict(table.attrs["multistat"], input=str(study), stage="compare")
    write_parquet(table, out, metadata=meta)
    if systems_out is not None:
        write_parquet(systems, systems_out, metadata=meta)
    shown = table[table["reject"]]
    typer.echo(f"{len(table)} comparisons ({table['test'].nunique()} tests); "
               f"{int(table['reject'].sum())} significant after {meta['correction']} at "
               f"alpha={alpha}")
    cols = ["dataset", "metric", "system_a", "system_b", "test", "estimate", "ci_low",
            "ci_high", "p_adjusted"]
    if len(shown):
        with_pd_options(lambda: typer.echo(shown[cols].to_string(index=False, max_rows=30)))
    typer.echo(f"wrote {out}" + (f" and {systems_out}" if systems_out else ""))


def _mount_subapps():
    from multistat._cli_across import friedman_command, replicability_command
    from multistat._cli_corpus import load_labels_command, load_mt_command
    from multistat._cli_rank import rank_command
    from multistat._cli_report import report_command

    app.command("load-mt", help="Machine-translation outputs + references -> a study of "
                "corpus BLEU/chrF/TER sufficient statistics (sacrebleu).")(load_mt_command)
    app.command("load-labels", help="Gold and predicted labels -> a study of accuracy, "
                "precision/recall/F1 statistics.")(load_labels_command)
    app.command("report", help="Heatmaps, leaderboards, Markdown/LaTeX tables and a "
                "self-contained HTML report from a compare table.")(report_command)
    app.command("rank", help="Leaderboard: significance clusters, rank ranges, bootstrap "
                "rank intervals (Parquet).")(rank_command)
    app.command("friedman", help="Friedman test across test sets x metrics with Nemenyi, "
                "Bonferroni-Dunn or Wilcoxon-Holm post-hoc tests and a critical-difference "
                "diagram.")(friedman_command)
    app.command("replicability", help="On how many test sets, and which, an effect holds "
                "(Dror et al. 2017).")(replicability_command)
    try:
        from multistat._cli_power import power_app
    except ModuleNotFoundError:  # pragma: no cover - the power CLI is optional
        return
    app.add_typer(power_app, name="power", help="Prospective, retrospective and "
                  "simulation power analysis (Card et al. 2020 scenarios).")


_mount_subapps()


def main(argv=None) -> int:
    """Console entry point: errors -> one line on stderr, exit status 2."""
    try:
        app(args=argv, standalone_mode=False, prog_name="multistat")
    except MultistatError as exc:
        typer.echo(f"multistat: error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:  # an output path that is a folder, not writable, disk full...
        text = " ".join(str(exc).split())
        typer.echo(f"multistat: error: {text}", err=True)
        sys.exit(2)
    except (click.exceptions.UsageError, _TyperUsageError) as exc:
        if exc.format_message():  # empty when no arguments: the help was shown
            typer.echo(f"multistat: error: {exc.format_message()}", err=True)
        sys.exit(2)
    except (click.exceptions.Abort, typer.Abort):
        typer.echo("multistat: aborted", err=True)
        sys.exit(130)
    except (click.exceptions.Exit, typer.Exit) as exc:
        sys.exit(exc.exit_code)
    except Exception as exc:
        lost = _scheduler_loss(exc)
        if lost is None:
            raise
        typer.echo(f"multistat: error: {lost}", err=True)
        sys.exit(2)
    return 0


def _scheduler_loss(exc: BaseException) -> str | None:
    """One line for a lost dask.distributed scheduler, else None.

    ``Client.gather`` raises ``FutureCancelledError`` ("scheduler-connection-lost") when
    the scheduler dies mid-run; nothing has been written then (outputs are written only
    after the computation, atomically).
    """
    mod = type(exc).__module__ or ""
    text = " ".join(str(exc).split())
    if mod.startswith("distributed") or "scheduler-connection-lost" in text:
        first = text.split(". ")[0][:200]
        return (f"lost the dask scheduler during the run ({type(exc).__name__}: {first}); "
                "nothing was written")
    return None


if __name__ == "__main__":  # pragma: no cover
    main()
