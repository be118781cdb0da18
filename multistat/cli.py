"""The ``multistat`` command line: one subcommand per pipeline stage.

Every subcommand reads and writes explicit paths, so DVC stages can call them. Bad input
prints one line ``multistat: error: ...`` on stderr and exits with status 2 (no
traceback).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Annotated

import click
import typer

from multistat._cli_common import (
    DatasetCol,
    DatasetOpt,
    FormatOpt,
    InstanceCol,
    LowerOpt,
    MetricCol,
    MetricOpt,
    MissingOpt,
    ScoreCol,
    SepOpt,
    SystemCol,
    SystemsOpt,
    echo_summary,
    guard_outputs,
    read_kwargs,
    save_study,
    seed_value,
    split_names,
    study_output,
    table_kind,
    write_table,
)
from multistat.errors import MultistatError, ParameterError, show

try:  # recent typer vendors its own click: its usage errors are not click's classes
    from typer._click.exceptions import UsageError as _TyperUsageError
except ImportError:  # pragma: no cover - typer that uses click itself
    _TyperUsageError = click.exceptions.UsageError

app = typer.Typer(
    name="multistat", no_args_is_help=True, add_completion=False,
    pretty_exceptions_enable=False,
    help="Paired significance tests, effect sizes and power for whole NLP evaluation "
         "studies (many systems x metrics x test sets).")

PairOpt = Annotated[list[str] | None, typer.Option(
    "--pair", help="one pair 'a,b' (repeatable; instead of --pairs)")]
OUT_TABLE_HELP = "table to write: .parquet (with run metadata), .csv or .jsonl"


def _open(path: Path):
    """A saved study (.nc) or any score file ``multistat load`` reads with defaults."""
    from multistat import cube

    return cube.load(path)


@app.command()
def load(
    paths: Annotated[list[Path], typer.Argument(
        help="score file(s) (CSV, TSV, whitespace, JSONL, Parquet, NLPStatTest "
             "two-column, one score per line, comet-score output), folders or quoted globs; "
             "several are read with the same options and validated together")],
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
    dataset_from_filename: Annotated[bool, typer.Option(
        "--dataset-from-filename", help="name each file's dataset after the file (name "
                                        "without its suffixes)")] = False,
    rater_col: Annotated[str | None, typer.Option(
        help="column holding the rater of each human rating: the study keeps every rating "
             "(variable `rating` by rater) and the tests use the item means")] = None,
    rater_aggregate: Annotated[str | None, typer.Option(
        help="'mean': average several ratings by one rater of one cell (otherwise an "
             "error)")] = None,
):
    """Validate score file(s), write the study cube (NetCDF) and print a summary."""
    import warnings

    from multistat import cube
    from multistat.errors import DroppedDataWarning
    from multistat.io import read_scores

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
    # one plain wide file: straight into the cube (no long frame, nothing dropped);
    # ratings by rater go the long route
    study = None if rater_col or rater_aggregate else cube.from_wide_files(
        source, **kw, run_col=run_col, group_col=group_col)
    dropped = []
    if study is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DroppedDataWarning)  # reported in the summary
            frame = read_scores(source, **kw, run_col=run_col, group_col=group_col,
                                rater_col=rater_col, rater_aggregate=rater_aggregate)
        study, dropped = cube.from_frame(frame), frame.attrs.get("dropped", [])
    save_study(study, out)
    echo_summary(study, dropped)
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
    out: Annotated[Path, typer.Option("--out", "-o", help="study file to write (.nc)")] =
    Path("units.nc"),
):
    """Group instances into evaluation units (mean or median of m instances)."""
    from multistat.units import evaluation_units

    seed = seed_value(seed)
    guard_outputs([study], {"--out": out})
    study_output(out)
    if by is not None:
        result = evaluation_units(_open(study), by=by, statistic=statistic,
                                  size=None if size == 1 else size, seed=seed)
    else:
        result = evaluation_units(_open(study), size=size, statistic=statistic, seed=seed,
                                  remainder=remainder)
    save_study(result, out)
    echo_summary(result)
    typer.echo(f"wrote {out}")


@app.command()
def analyze(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    alpha: Annotated[float, typer.Option(help="level of the normality test")] = 0.05,
    pairs: Annotated[str, typer.Option(help="all | baseline:<system> | 'a,b;c,d'")] = "all",
    pair: PairOpt = None,
    out: Annotated[Path, typer.Option("--out", "-o", help=OUT_TABLE_HELP)] =
    Path("analysis.parquet"),
):
    """Descriptives, skewness, normality and recommended tests (NLPStatTest Table 2)."""
    from multistat._validation import check_probability
    from multistat.analysis import analyze as run

    alpha = check_probability("--alpha", alpha)
    chosen = _pairs(pairs, pair)
    guard_outputs([study], {"--out": out})
    table_kind(out)
    table = run(_open(study), alpha=alpha, pairs=chosen)
    write_table(table, out, metadata={**_run_meta("analyze", study), "alpha": alpha,
                                      "pairs": _json_pairs(chosen)})
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

    seed = seed_value(seed)
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


def _pairs(pairs: str, pair: list[str] | None):
    """``--pairs all | baseline:<system> | 'a,b;c,d'`` and repeated ``--pair a,b`` ->
    what ``compare``/``analyze`` take (a string or a list of ``(a, b)`` names)."""
    def one(text, flag):
        names = [t.strip() for t in text.split(",")]
        if len(names) != 2 or not all(names):
            raise ParameterError(f"`{flag}`: a pair is two system names 'a,b'; got "
                                 f"{show(text)}")
        return tuple(names)

    if pair:
        if pairs not in ("all", None):
            raise ParameterError("give pairs with either --pairs or --pair, not both")
        return [one(p, "--pair") for p in pair]
    text = pairs.strip()
    if text == "all" or text.startswith("baseline:"):
        return text
    items = [p for p in text.split(";") if p.strip()]
    if not items or not all("," in p for p in items):
        raise ParameterError(f"`--pairs` must be all, baseline:<system>, or pairs 'a,b;c,d'"
                             f"; got {show(pairs)}")
    return [one(p, "--pairs") for p in items]


def _json_pairs(pairs):
    return pairs if isinstance(pairs, str) else [list(p) for p in pairs]


def _run_meta(stage: str, *inputs) -> dict:
    from multistat import __version__

    return {"stage": stage, "multistat_version": __version__,
            "input": str(inputs[0]) if len(inputs) == 1 else [str(i) for i in inputs]}


@app.command("compare")
def compare_cmd(
    study: Annotated[Path, typer.Argument(help="study file (.nc) or score file")],
    out: Annotated[Path, typer.Option("--out", "-o", help=OUT_TABLE_HELP)] =
    Path("results.parquet"),
    systems_out: Annotated[Path | None, typer.Option(
        help="also write per-system scores with bootstrap intervals (.parquet, .csv or "
             ".jsonl)")] = None,
    tests: Annotated[str, typer.Option(
        help="comma-separated: t, wilcoxon, sign, bootstrap, permutation, mcnemar, aso "
             "(Almost Stochastic Order over runs)")] =
    "t,wilcoxon,sign,bootstrap,permutation",
    statistic: Annotated[str, typer.Option(help="mean | median (bootstrap/permutation)")] =
    "mean",
    pairs: Annotated[str, typer.Option(
        help="all | baseline:<system> | explicit pairs 'a,b;c,d' (estimates are a - b)")] =
    "all",
    pair: PairOpt = None,
    metrics: Annotated[str | None, typer.Option(help="comma-separated metrics")] = None,
    datasets: Annotated[str | None, typer.Option(help="comma-separated datasets")] = None,
    alternative: Annotated[str, typer.Option(help="two-sided | less | greater (a - b)")] =
    "two-sided",
    null_value: Annotated[float, typer.Option(help="margin delta of H0 (finite)")] = 0.0,
    alpha: Annotated[float, typer.Option(help="significance level, in (0, 1)")] = 0.05,
    n_resamples: Annotated[int, typer.Option(help="bootstrap/permutation resamples")] =
    10_000,
    seed: Annotated[int, typer.Option(help="random seed, 0 to 2**64-1 (0 is a seed)")] = 0,
    correction: Annotated[str, typer.Option(
        help="statsmodels multipletests method, westfall-young (step-down over the shared "
             "resampling plan; bootstrap/permutation only), or none")] = "holm",
    family: Annotated[str | None, typer.Option(
        help="columns defining correction families (comma-separated) or 'all'; default "
             "dataset,metric,test")] = None,
    scheduler: Annotated[str, typer.Option(
        help="threads | processes | synchronous | tcp://host:port (dask.distributed; the "
             "scheduler and its workers exchange pickled tasks: use only a scheduler you "
             "trust, on a network you trust; checked before the run, and workers whose "
             "BLAS kernels differ from this process's are restarted with "
             "OPENBLAS_CORETYPE=Haswell)")] =
    "threads",
    ci_method: Annotated[str, typer.Option(
        help="bootstrap interval: basic (default; inverts the p-value, so decision and "
             "interval agree) | bca | percentile | studentized")] = "basic",
    bootstrap_pvalue: Annotated[str, typer.Option(
        help="shifted | berg-kirkpatrick | sacrebleu (compatibility, warns)")] = "shifted",
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
    max_cost: Annotated[float, typer.Option(
        "--max-cost", help="stop before starting when the estimated work exceeds this many "
                           "operations (default 1e13, hours of work; 'inf': no limit)")] =
    1e13,
    progress: Annotated[bool | None, typer.Option(
        "--progress/--no-progress", help="progress bar on stderr (default: when stderr is "
                                         "a terminal)")] = None,
    cluster: Annotated[str | None, typer.Option(
        "--cluster", help="group: the bootstrap and permutation tests resample whole "
                          "groups (documents from load --group-col): the cluster "
                          "bootstrap")] = None,
):
    """Paired tests for every pair x metric x dataset; writes the tidy results table."""
    from multistat._cost import check_cost, study_cost
    from multistat._validation import (
        check_int,
        check_nonempty,
        check_positive,
        check_probability,
        check_real,
    )
    from multistat.comparison import compare

    # every option checked before any work, named by its flag
    test_list = check_nonempty("--tests", split_names(tests) or [], what="test")
    null_value = check_real("--null-value", null_value)
    alpha = check_probability("--alpha", alpha)
    n_resamples = check_int("--n-resamples", n_resamples, minimum=1)
    seed = seed_value(seed)
    if power is not None:
        power = check_real("--power", power)
    if equivalence_margin is not None:
        equivalence_margin = check_real("--equivalence-margin", equivalence_margin)
    test_options = parse_test_options(test_option)
    if not (max_cost == float("inf") or max_cost > 0):
        check_positive("--max-cost", max_cost)
    chosen = _pairs(pairs, pair)
    metric_list = split_names(metrics, "--metrics")
    dataset_list = split_names(datasets, "--datasets")
    fam = family if family in (None, "all") else split_names(family, "--family")
    guard_outputs([study], {"--out": out, "--systems-out": systems_out})
    table_kind(out)
    if systems_out is not None:
        table_kind(systems_out, "--systems-out")
    from multistat._scheduler import check_scheduler, probe

    probe(check_scheduler(scheduler, "--scheduler"))  # even if no test will use it

    data = _open(study)
    _precheck(data, test_list, chosen, metric_list, dataset_list)
    progress = sys.stderr.isatty() if progress is None else progress
    check_cost(study_cost(data, tests=test_list, n_resamples=n_resamples,
                          statistic=statistic, pairs=chosen, metrics=metric_list,
                          datasets=dataset_list),
               None if max_cost == float("inf") else max_cost, option="--max-cost")
    result = compare(
        data, tests=test_list, statistic=statistic, pairs=chosen,
        metrics=metric_list, datasets=dataset_list, alternative=alternative,
        null_value=null_value, alpha=alpha, n_resamples=n_resamples, seed=seed,
        correction=None if correction == "none" else correction, family=fam,
        scheduler=scheduler, ci_method=ci_method, bootstrap_pvalue=bootstrap_pvalue,
        power=power if power is not None else observed_power, progress=progress,
        effect_sizes=effect_sizes, equivalence_margin=equivalence_margin,
        memory_limit=memory_limit, test_options=test_options,
        max_cost=None,  # the estimate was checked above against --max-cost
        return_systems=systems_out is not None, cluster=cluster)
    table, systems = result if systems_out is not None else (result, None)
    # compare's metadata already holds the sacrebleu signatures of load-mt studies
    meta = dict(table.attrs["multistat"], input=str(study), stage="compare")
    write_table(table, out, metadata=meta)
    if systems_out is not None:
        write_table(systems, systems_out, metadata=meta, flag="--systems-out")
    shown = table[table["reject"]]
    typer.echo(f"{len(table)} comparisons ({table['test'].nunique()} tests); "
               f"{int(table['reject'].sum())} significant after {meta['correction']} at "
               f"alpha={alpha}")
    cols = ["dataset", "metric", "system_a", "system_b", "test", "estimate", "ci_low",
            "ci_high", "p_adjusted"]
    if len(shown):
        with_pd_options(lambda: typer.echo(shown[cols].to_string(index=False, max_rows=30)))
    typer.echo(f"wrote {out}" + (f" and {systems_out}" if systems_out else ""))


def _precheck(study, tests, pairs, metrics, datasets) -> None:
    """What ``compare`` would refuse after it started, refused before: unknown tests,
    datasets, metrics, systems of --pairs, a binary-only test on a non-binary metric."""
    from multistat import cube
    from multistat.errors import TestNotApplicableError
    from multistat.significance import get_test

    specs = {t: get_test(t) for t in tests}
    chosen, metric_names = cube.select(study, datasets=datasets, metrics=metrics)
    for name, ds in chosen.items():
        try:
            cube.pair_indices(ds.system.values, pairs)
        except MultistatError as exc:
            raise type(exc)(f"dataset {show(name)}: {exc}") from None
        for t, spec in specs.items():
            if not getattr(spec, "binary_only", False):
                continue
            for m, kind in zip(ds.metric.values, ds.kind.values):
                if (metric_names is None or str(m) in metric_names) and kind != "binary":
                    raise TestNotApplicableError(
                        f"--tests {t}: needs a binary (0/1) metric; metric {show(m)} of "
                        f"dataset {show(name)} is {show(kind)}; choose binary metrics with "
                        f"--metrics or drop {t}")


def _mount_subapps():
    from multistat._cli_across import friedman_command, replicability_command
    from multistat._cli_corpus import load_labels_command, load_mt_command
    from multistat._cli_rank import rank_command
    from multistat._cli_report import report_command

    app.command("load-mt", help="Machine-translation outputs + references -> a study of "
                "corpus BLEU/chrF/TER sufficient statistics (sacrebleu), one dataset per "
                "test set (--test-set); prints each system's corpus scores."
                )(load_mt_command)
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
    from multistat._cli_meta import HELP as META_HELP  # issue 27
    from multistat._cli_meta import meta_command
    app.command("meta", help=META_HELP)(meta_command)
    from multistat._cli_preferences import preferences_command  # issue 26

    app.command("preferences", help="Bradley-Terry leaderboard (Elo scale) from pairwise "
                "battles, with bootstrap score/rank intervals and clusters.")(
        preferences_command)
    from multistat._cli_metaeval import meta_evaluate_command

    app.command("meta-evaluate", help="Metric meta-evaluation: each metric's agreement "
                "with human scores, intervals, metric clusters (PERM-BOTH, bootstrap, "
                "Williams).")(meta_evaluate_command)
    from multistat._cli_merge import merge_command

    app.command("merge", help="Several studies -> one study with all their datasets "
                "(test sets).")(merge_command)
    try:
        from multistat._cli_power import power_app
    except ModuleNotFoundError:  # pragma: no cover - the power CLI is optional
        return
    app.add_typer(power_app, name="power", help="Prospective, retrospective and "
                  "simulation power analysis (Card et al. 2020 scenarios).")


_mount_subapps()


def _invoked_options(argv) -> dict[str, str]:
    """``{python parameter name: its long flag}`` of the subcommand ``argv`` invokes."""
    command = typer.main.get_command(app)
    for arg in argv:
        if arg.startswith("-"):
            continue
        sub = getattr(command, "commands", {}).get(arg)
        if sub is None:
            break
        command = sub
    out = {}
    for param in getattr(command, "params", ()):
        if getattr(param, "param_type_name", "") == "option" and param.name:
            longs = [o for o in param.opts if o.startswith("--")]
            if longs:
                out[param.name] = max(longs, key=len)
    return out


_NUMPY_REPR = re.compile(r"np\.[a-z_]+[0-9]*_?\(('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|"
                         r"[^()]*)\)")
_MESSAGE_LIMIT = 600  # characters of a whole message (values are cut at the source)


def cli_message(text: str, argv=()) -> str:
    """A library error message as the command line shows it: one line; Python
    parameter names (`` `metrics` ``, ``metrics=[...]``) replaced by the invoked
    subcommand's flags (``--metrics``); no numpy reprs; at most 600 characters (the
    values a message echoes are cut to ~100 characters where it is written, with
    :func:`multistat.errors.show`)."""
    text = " ".join(str(text).split())
    text = _NUMPY_REPR.sub(r"\1", text)
    for name, flag in sorted(_invoked_options(list(argv)).items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"`{re.escape(name)}`", f"`{flag}`", text)
        text = re.sub(rf"(?<![\w-]){re.escape(name)}=\[\.\.\.\]", flag, text)
        if "_" in name:  # snake_case parameter names are never prose: system_col -> flag
            text = re.sub(rf"(?<![\w`'\"./-]){re.escape(name)}(?![\w'\"])=?", flag, text)
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + "..."


def _fail(message: str, status: int = 2):
    if sys.stderr.isatty():  # a progress bar may hold the line: clear it
        typer.echo("\r\x1b[K", err=True, nl=False)
    typer.echo(f"multistat: error: {message}", err=True)
    sys.exit(status)


def main(argv=None) -> int:
    """Console entry point: errors -> one line on stderr, exit status 2 (no traceback).

    An unexpected exception (a bug) is one line too, with exit status 1; set
    ``MULTISTAT_TRACEBACK=1`` to see its traceback."""
    import warnings

    from multistat._blas import pin_kernels

    pin_kernels()  # before numpy loads OpenBLAS: products bit-identical for every slab
    args = list(sys.argv[1:] if argv is None else argv)

    def show_warning(message, category, filename, lineno, file=None, line=None):
        typer.echo(f"multistat: warning: {cli_message(message, args)}", err=True)

    try:
        with warnings.catch_warnings():
            warnings.showwarning = show_warning  # one line per warning, no source line
            status = app(args=args, standalone_mode=False, prog_name="multistat")
        if status == 130:  # typer turns Ctrl-C into Exit(130) and returns it here
            raise KeyboardInterrupt
    except MultistatError as exc:
        _fail(cli_message(exc, args))
    except (click.exceptions.UsageError, _TyperUsageError) as exc:
        if exc.format_message():  # empty when no arguments: the help was shown
            _fail(cli_message(exc.format_message()))
        sys.exit(2)
    except (click.exceptions.Abort, typer.Abort, KeyboardInterrupt):
        typer.echo("multistat: aborted", err=True)
        sys.exit(130)
    except (click.exceptions.Exit, typer.Exit) as exc:
        sys.exit(exc.exit_code)
    except MemoryError:
        _fail("out of memory; lower --memory-limit, or compare fewer pairs/metrics/"
              "resamples at once")
    except Exception as exc:  # the last line of defence: one line, no traceback
        if _interrupted(exc):  # raised while Ctrl-C unwound a library (h5py closing a file)
            typer.echo("multistat: aborted", err=True)
            sys.exit(130)
        lost = _scheduler_loss(exc)
        if lost is not None:
            _fail(lost)
        if isinstance(exc, OSError):  # an output that is a folder, not writable, disk full
            _fail(cli_message(exc))
        if os.environ.get("MULTISTAT_TRACEBACK"):
            raise
        _fail(f"internal error {type(exc).__name__}: {cli_message(exc)} (a bug in "
              f"multistat: please report it; MULTISTAT_TRACEBACK=1 shows the traceback)", 1)
    return 0


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while a KeyboardInterrupt was being handled (anywhere
    in its chain of causes and contexts): then the run was aborted, not a bug."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


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
