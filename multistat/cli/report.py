"""``multistat report``: the HTML report, figures and tables from a compare table.

Register it in :mod:`multistat.cli` with ``app.command("report")(report_command)``;
``report_app`` is the same command as a stand-alone one-command typer app. Errors are
:class:`~multistat.errors.MultistatError`
and become one line on stderr with exit status 2 in :func:`multistat.cli.main`.
"""

from __future__ import annotations

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
    analysis: Annotated[Path | None, typer.Option(
        "--analysis", help="data-analysis table (Parquet from `multistat analyze`)")] = None,
    power: Annotated[list[Path] | None, typer.Option(
        "--power", help="power table(s) with columns n, power, or a folder of them "
                        "(repeatable)")] = None,
    study: Annotated[Path | None, typer.Option(
        "--study", help="the study the results came from (.nc from `multistat load`/"
                        "`units`): score intervals and histograms of A, B and A - B")] = None,
    systems: Annotated[Path | None, typer.Option(
        "--systems", help="per-system scores with intervals (Parquet from `multistat "
                          "compare --systems-out`) for the leaderboards; of the same "
                          "run as the results (checked)")] = None,
    ranking: Annotated[Path | None, typer.Option(
        "--ranking", help="ranking table (Parquet from `multistat rank`): cluster "
                          "leaderboards and rank-interval figures")] = None,
    meta: Annotated[Path | None, typer.Option(
        "--meta", help="pooled table (Parquet from `multistat meta` on RESULTS): the "
                       "pooled effects and a forest plot per pooled pair")] = None,
    preferences: Annotated[Path | None, typer.Option(
        "--preferences", help="Bradley-Terry leaderboard (Parquet from `multistat "
                              "preferences`): leaderboard table and rank-interval "
                              "figure")] = None,
    ranking_pairs: Annotated[Path | None, typer.Option(
        "--ranking-pairs", help="the ranking's pairwise decisions (`multistat rank "
                                "--pairs-out`): every section's beats, heatmap stars, "
                                "clusters and rank ranges come from them")] = None,
    metaeval: Annotated[Path | None, typer.Option(
        "--metaeval", help="metric leaderboard (from `multistat meta-evaluate`): the "
                           "metric meta-evaluation section")] = None,
    metaeval_matrix: Annotated[Path | None, typer.Option(
        "--metaeval-matrix", help="correlations between metrics (`multistat "
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
    if results is None:  # the leaderboard page from the ranking alone
        _ranking_only(ranking, out, title=title, dpi=dpi, others={
            "--analysis": analysis, "--power": power, "--study": study,
            "--systems": systems, "--meta": meta, "--preferences": preferences,
            "--ranking-pairs": ranking_pairs, "--metaeval": metaeval,
            "--metaeval-matrix": metaeval_matrix, "--test": test})
        return
    guard_outputs([results, analysis, study, systems, ranking, ranking_pairs, meta,
                   preferences, metaeval, metaeval_matrix, *(power or ())],
                  {"--out": out / "report.html"}, folders={"--out": (out, REPORT_FOLDERS)})
    start = time.perf_counter()
    # every input table checked (columns, types, duplicates) before any work, the
    # message naming the flag and the file (report/_inputs.py)
    from multistat.report._inputs import read_table

    analysis = read_table(analysis, "analysis", "analysis")
    systems = read_table(systems, "systems", "systems")
    ranking = read_table(ranking, "ranking", "ranking")
    meta = read_table(meta, "pooled", "meta")
    preferences = read_table(preferences, "preferences", "preferences")
    metaeval = read_table(metaeval, "metaeval", "metaeval")
    metaeval_matrix = read_table(metaeval_matrix, "metaeval_matrix", "metaeval_matrix")
    path = write_report(results, out, analysis=analysis, power=list(power) if power else None,
                        study=study, systems=systems,
                        test=None if test in (None, "auto") else test, effect=effect,
                        annotate=None if annotate == "none" else annotate,
                        histogram_pairs=None if histograms == "none" else "top2",
                        title=title, dpi=dpi, ranking=ranking, ranking_pairs=ranking_pairs,
                        pooled=meta, preferences=preferences, metaeval=metaeval,
                        metaeval_matrix=metaeval_matrix)
    typer.echo(f"wrote {path} ({time.perf_counter() - start:.1f} s)")


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
