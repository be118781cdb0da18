"""``multistat report``: the HTML report, figures and tables from a compare table.

Register it in :mod:`multistat.cli` with ``app.command("report")(report_command)``;
``report_app`` is the same command as a stand-alone one-command typer app. Errors are
:class:`~multistat.errors.MultistatError`
and become one line on stderr with exit status 2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

import inspect
import time
from pathlib import Path
from typing import Annotated

import typer

from multistat.cli._common import guard_outputs

#: highest PNG resolution accepted (a 12-inch figure at 1200 dpi is already 14,400 pixels
#: wide; beyond that matplotlib allocates gigabytes)
MAX_DPI = 1200
#: what the report writes inside --out (an input there would be overwritten)
REPORT_FOLDERS = ("report.html", "figures", "tables", "plots", "metrics.json")
#: everything the report writes inside --out (checked against a DVC pipeline's outputs)
REPORT_WRITES = REPORT_FOLDERS

report_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False,
                         no_args_is_help=True,
                         help="Write the HTML report (figures embedded), PNG figures and "
                              "Markdown/LaTeX tables from a compare table.")


def report_command(
    results: Annotated[Path | None, typer.Argument(help="compare table (Parquet from "
                                                        "`multistat compare`; p-values in "
                                                        "[0, 1] and reject from p_adjusted "
                                                        "and alpha, checked); leave it out "
                                                        "with --ranking for the leaderboard "
                                                        "page alone")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="output directory: report.html, "
                                                     "figures/, tables/")] = None,
    section: Annotated[list[str] | None, typer.Option(
        "--section", metavar="NAME=PATH",
        help="a section input NAME=PATH (repeatable): a table an analysis stage wrote "
             "(Parquet); `power` may repeat. Inputs not given are computed from RESULTS "
             "and --study where they can be")] = None,
    analysis: Annotated[Path | None, typer.Option(
        "--analysis", help="alias of --section analysis=PATH: "
                           "data-analysis table (Parquet from `multistat analyze`)")] = None,
    power: Annotated[list[Path] | None, typer.Option(
        "--power", help="alias of --section power=PATH: "
                        "power table(s) with columns n, power, or a folder of them "
                        "(repeatable)")] = None,
    study: Annotated[Path | None, typer.Option(
        "--study", help="the study the results came from (.nc from `multistat load`/"
                        "`units`): score intervals and histograms of A, B and A - B")] = None,
    systems: Annotated[Path | None, typer.Option(
        "--systems", help="alias of --section systems=PATH: "
                          "per-system scores with intervals (Parquet from `multistat "
                          "compare --systems-out`) for the leaderboards; of the same "
                          "run as the results (checked)")] = None,
    ranking: Annotated[Path | None, typer.Option(
        "--ranking", help="alias of --section ranking=PATH: ranking table (Parquet from "
                          "`multistat rank`, which stores its pair decisions beside it): "
                          "cluster leaderboards, rank-interval figures, every pair's "
                          "decision")] = None,
    meta: Annotated[Path | None, typer.Option(
        "--meta", help="alias of --section pooled=PATH: "
                       "pooled table (Parquet from `multistat meta` on RESULTS): the "
                       "pooled effects and a forest plot per pooled pair")] = None,
    preferences: Annotated[Path | None, typer.Option(
        "--preferences", help="alias of --section preferences=PATH: "
                              "Bradley-Terry leaderboard (Parquet from `multistat "
                              "preferences`): leaderboard table and rank-interval "
                              "figure")] = None,
    ranking_pairs: Annotated[Path | None, typer.Option(
        "--ranking-pairs", help="alias of --section ranking_pairs=PATH: "
                                "the ranking's pairwise decisions (`multistat rank "
                                "--pairs-out`): every section's beats, heatmap stars, "
                                "clusters and rank ranges come from them")] = None,
    metaeval: Annotated[Path | None, typer.Option(
        "--metaeval", help="alias of --section metaeval=PATH: "
                           "metric leaderboard (from `multistat meta-evaluate`): the "
                           "metric meta-evaluation section")] = None,
    metaeval_matrix: Annotated[Path | None, typer.Option(
        "--metaeval-matrix", help="alias of --section metaeval_matrix=PATH: "
                                  "correlations between metrics (`multistat "
                                  "meta-evaluate --matrix-out`): a heatmap")] = None,
    test: Annotated[str | None, typer.Option(
        "--test", help="test shown in leaderboards, heatmaps and pairwise tables; auto: "
                       "the one --analysis recommends for most pairs, else the first test "
                       "of the run")] = None,
    effect: Annotated[str, typer.Option(
        "--effect", help="effect size in the tables: auto, cohens_d, hedges_g, wilcoxon_r, "
                         "hodges_lehmann")] = "auto",
    annotate: Annotated[str, typer.Option(
        "--annotate", help="value in the heatmap cells: auto (the estimate, or the score "
                           "difference when most estimates are 0), estimate, "
                           "score_difference, cohens_d, hedges_g, wilcoxon_r, "
                           "hodges_lehmann, or none")] = "auto",
    histograms: Annotated[str, typer.Option(
        "--histograms", help="top2: histograms of the two best systems per dataset x "
                             "metric (needs --study); none: no histograms")] = "top2",
    title: Annotated[str, typer.Option("--title", help="report title")] =
        "multistat significance report",
    dpi: Annotated[int, typer.Option(
        "--dpi", help="resolution of the PNG figures (20 to 1200)")] = 110,
    force: Annotated[bool, typer.Option(
        "--force", help="write into --out even where a DVC stage of the enclosing project "
                        "(dvc.yaml/dvc.lock) lists what the report writes as its output "
                        "(refused without it)")] = False,
) -> None:
    """Write DIR/report.html plus figures/*.png and tables/*.{md,tex,csv}."""
    # heavy: numpy, lazily
    from multistat._validation import check_choice, check_int

    # lazily, as every import of this command (`multistat --help` stays fast)
    from multistat.errors import ParameterError

    if out is None:
        raise ParameterError("--out is required: the folder for report.html, figures/ "
                             "and tables/")

    # heavy: matplotlib, seaborn, lazily
    from multistat.report import write_report

    check_choice("--histograms", histograms, ("top2", "none"))
    check_choice("--annotate", annotate, ("auto", "estimate", "score_difference", "cohens_d",
                                          "hedges_g", "wilcoxon_r", "hodges_lehmann",
                                          "none"))
    dpi = check_int("--dpi", dpi, minimum=20, maximum=MAX_DPI)
    # lazily: `multistat --help` does not load it (startup time)
    from multistat.cli._dvc import check_not_tracked

    check_not_tracked(out, REPORT_WRITES, force=force)
    aliases = {"analysis": ("--analysis", analysis),
               "power": ("--power", list(power) if power else None),
               "systems": ("--systems", systems), "ranking": ("--ranking", ranking),
               "pooled": ("--meta", meta), "preferences": ("--preferences", preferences),
               "ranking_pairs": ("--ranking-pairs", ranking_pairs),
               "metaeval": ("--metaeval", metaeval),
               "metaeval_matrix": ("--metaeval-matrix", metaeval_matrix)}
    given = _sections_of(section, {k: v for k, (_, v) in aliases.items()})
    if results is None:  # the leaderboard page from the ranking alone
        others = {(aliases[k][0] if aliases.get(k, (0, None))[1] else f"--section {k}"): v
                  for k, v in given.items() if k != "ranking"}
        _ranking_only(given.get("ranking"), out, title=title, dpi=dpi, others={
            **others, "--study": study, "--test": test})
        return
    guard_outputs([results, study, *_paths(given)],
                  {"--out": out / "report.html"}, folders={"--out": (out, REPORT_FOLDERS)})
    start = time.perf_counter()
    # every input table checked (columns, types, duplicates) before any work, the
    # message naming the flag and the file (report/_inputs.py); the ranking stays a path
    # (the pair decisions it carries are found beside it)
    from multistat.report._inputs import SCHEMAS, read_table

    for name in [k for k in given if k in SCHEMAS]:
        flag = aliases[name][0].lstrip("-") if aliases.get(name, (0, None))[1] else name
        table = read_table(given[name], name, flag)
        if name != "ranking":
            given[name] = table
    # the analysis stages whose tables were not given (scores, detectability, tests
    # across test sets, the human-ratings tables): the report itself computes nothing
    from multistat.stages import report_inputs  # heavy: the library, lazily

    options = {"test": None if test in (None, "auto") else test, "effect": effect,
               "annotate": None if annotate == "none" else annotate,
               "histogram_pairs": None if histograms == "none" else "top2"}
    inputs = report_inputs(results, study=study, sections=given, options=options)
    path = write_report(results, out, sections=inputs, study=study, title=title, dpi=dpi,
                        options=options)
    typer.echo(f"wrote {path} ({time.perf_counter() - start:.1f} s)")


def _paths(given: dict) -> list:
    """The input files among the section inputs (checked against --out)."""
    out = []
    for value in given.values():
        out += value if isinstance(value, list) else [value]
    return out


def _sections_of(section, aliases: dict) -> dict:
    """``--section NAME=PATH`` items and the alias flags as ``{name: path}`` (``power``:
    a list); unknown names, a name given twice or a malformed item: one-line errors."""
    # lazily: the errors module is light
    from multistat.errors import ParameterError

    # lazily: the registry loads with the report (matplotlib)
    from multistat.report.sections import INPUTS, input_names

    names = input_names("table") + input_names("tables")
    out: dict = {k: v for k, v in aliases.items() if v}
    for item in section or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name or not value:
            raise ParameterError(f"--section: {item!r} is not NAME=PATH; names: "
                                 f"{', '.join(names)}")
        if name not in names:
            raise ParameterError(f"--section: unknown input {name!r}; names: "
                                 f"{', '.join(names)}")
        if INPUTS[name].kind == "tables":
            out.setdefault(name, [])
            out[name] = list(out[name]) + [Path(value)]
        elif name in out:
            raise ParameterError(f"--section: {name} given twice (or as --section and its "
                                 "alias flag)")
        else:
            out[name] = Path(value)
    return out


def fill_library_choices(command) -> None:
    """Write the registry's input names into ``report --help`` (--section): the section
    inputs a path can give (imports the report: called for ``report`` only)."""
    # lazily: the errors module is light
    from multistat.errors import MissingExtraError

    try:
        # lazily: the registry loads with the report (matplotlib)
        from multistat.report.sections import input_names
    except MissingExtraError:
        return  # the command itself says which extra to install, in one line
    hints = {name: p.annotation for name, p in inspect.signature(command).parameters.items()}
    info = hints["section"].__metadata__[0]
    if "names:" not in info.help:
        info.help += "; names: " + ", ".join(input_names("table") + input_names("tables"))


def _ranking_only(ranking, out, *, title, dpi, others) -> None:
    """``multistat report --ranking R --out DIR``: the one-page leaderboard
    (:func:`multistat.report.leaderboard_page.write_leaderboard_page`)."""
    # lazily: the errors module is light, the page module loads matplotlib
    from multistat.errors import ParameterError

    if ranking is None:
        raise ParameterError("give the compare table RESULTS, or --ranking for the "
                             "leaderboard page alone")
    given = [flag for flag, value in others.items() if value]
    if given:
        raise ParameterError(f"{', '.join(given)} need(s) the compare table RESULTS; "
                             "without it the report is the leaderboard page of --ranking")
    guard_outputs([ranking], {"--out": out / "report.html"},
                  folders={"--out": (out, REPORT_FOLDERS)})
    start = time.perf_counter()
    # lazily: matplotlib and seaborn load when the page is drawn
    from multistat.report.leaderboard_page import write_leaderboard_page

    title = "multistat leaderboard" if title == "multistat significance report" else title
    path = write_leaderboard_page(ranking, out, title=title, dpi=dpi)
    typer.echo(f"wrote {path} ({time.perf_counter() - start:.1f} s)")


report_app.command("report")(report_command)
