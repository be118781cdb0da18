"""The self-contained HTML report and the files beside it.

:func:`write_report` writes ``out_dir/report.html`` (one file, PNG figures embedded as
base64 ``data:`` URIs, no scripts, no external resources), the same figures as PNG files
under ``out_dir/figures/`` and the tables as Markdown, LaTeX (booktabs) and CSV under
``out_dir/tables/``. Every user-supplied string (dataset, metric, system and test names,
titles) goes through :func:`html.escape`; nothing from the data is ever markup.

Length (about 650 lines): one page assembled from its sections in order; the section
builders share the escaping and figure-embedding helpers of
:mod:`multistat.report._markup`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from multistat import _atomic
from multistat.errors import DataValidationError, InputFileError, ParameterError, ParameterTypeError
from multistat.io import read_parquet
from multistat.report import _files
from multistat.report import decisions as _decisions
from multistat.report import detectability as _detect
from multistat.report import plots as _plots
from multistat.report import tables as _tables
from multistat.report._checks import (  # noqa: F401
    DPI_RANGE,
    check_dpi,
    check_study_matches,
    check_systems_matches,
    check_values,
)
from multistat.report._inputs import SCHEMAS, read_table
from multistat.report._markup import CSS as _CSS
from multistat.report._markup import escape as _e
from multistat.report._markup import figure as _img
from multistat.report._markup import png_size as _png_size
from multistat.report._markup import table as _table
from multistat.report.clusters import check_ranking, write_ranking
from multistat.report.meta import meta_section
from multistat.report.metaeval import write_metaeval
from multistat.report.preferences import write_preferences
from multistat.report.testsets import across_section

__all__ = ["write_report"]

_ANALYSIS_COLS = ("dataset", "metric", "system_a", "system_b", "n", "skewness",
                  "normality_test", "normality_p", "test_statistic", "recommended",
                  "non_preferred", "inappropriate")

def _slug(*parts) -> str:
    """File-name stem of data names: :func:`multistat.report._files.file_stem`."""
    return _files.file_stem(*parts)


def _read_frame(obj, name: str) -> pd.DataFrame | None:
    if name in SCHEMAS:  # columns, types, duplicates (report/_inputs.py)
        return read_table(obj, name)
    if obj is None or isinstance(obj, pd.DataFrame):
        return obj
    if isinstance(obj, (str, Path)):
        path = Path(obj)
        if not path.exists():
            raise InputFileError(f"`{name}`: {path}: no such file")

        return read_parquet(path)
    raise ParameterTypeError(f"`{name}` must be a pandas DataFrame or a path to a Parquet "
                             f"file; got {type(obj).__name__}")


def _power_tables(power) -> list[tuple[str, pd.DataFrame]]:
    if power is None:
        return []
    if isinstance(power, (pd.DataFrame, str, Path)):
        items = [(Path(power).stem if isinstance(power, (str, Path)) else "power", power)]
    elif isinstance(power, Mapping):
        items = list(power.items())
    elif isinstance(power, (list, tuple)):
        items = [(Path(p).stem if isinstance(p, (str, Path)) else f"power {i + 1}", p)
                 for i, p in enumerate(power)]
    else:
        raise ParameterTypeError(f"`power` must be a DataFrame, a path, or a list/dict of "
                                 f"them; got {type(power).__name__}")
    out = []
    for k, v in items:
        if isinstance(v, (str, Path)) and Path(v).is_dir():
            files = sorted(Path(v).glob("*.parquet"))
            if not files:
                raise InputFileError(f"`power`: {v}: no .parquet tables in this folder")
            # one table per folder: the curves of several deltas are drawn together
            out.append((f"{Path(v).name}/ ({len(files)} tables)",
                        pd.concat([_read_frame(f, "power") for f in files],
                                  ignore_index=True)))
        else:
            out.append((str(k), _read_frame(v, "power")))
    return out


def _open_study(study):
    if study is None or not isinstance(study, (str, Path)):
        return study
    # heavy: xarray, lazily
    from multistat import cube

    return cube.open_study(study)


def write_report(results, out_dir, *, analysis=None, power=None, study=None, systems=None,
                 test: str | None = None, effect: str = "auto",
                 annotate: str | None = "auto", histogram_pairs="top2",
                 title: str = "multistat significance report", dpi: int = 110,
                 max_power_figures: int = 24, ranking=None, ranking_pairs=None,
                 pooled=None, preferences=None, metaeval=None,
                 metaeval_matrix=None) -> Path:
    """Write the HTML report, its figures and its tables; return the HTML path.

    Parameters
    ----------
    results : the compare table (DataFrame or Parquet path; :func:`multistat.compare`)
    out_dir : directory for ``report.html``, ``figures/`` and ``tables/`` (created)
    analysis : optional data-analysis table (:func:`multistat.analyze`; DataFrame or path)
        with columns ``dataset, metric, system_a, system_b, n, skewness, normality_test,
        normality_p, test_statistic, recommended, non_preferred, inappropriate``
    power : optional power table(s): a DataFrame/path, or a list or ``{title: table}`` of
        them, each with at least ``n`` and ``power`` (see
        :func:`multistat.report.plots.power_curve_plot`); a folder path stands for all its
        ``*.parquet`` tables concatenated (e.g. one ``multistat power curve`` per delta)
    study : optional study (or saved ``.nc`` path) the results came from: per-system scores
        with intervals for the leaderboards and the histograms of A, B and A − B
    systems : optional per-system score table (DataFrame or Parquet path; ``multistat
        compare --systems-out``, :func:`multistat.system_scores`) with columns
        ``dataset, metric, system, score, ci_low, ci_high``: the leaderboard scores and
        intervals; otherwise they are computed from ``study`` (see
        :func:`multistat.report.tables.leaderboard_scores`)
    test : which test the leaderboards, heatmaps and pairwise tables show. Default: with
        ``analysis``, per dataset × metric the test the analysis recommends for most pairs
        (among the tests run); otherwise the first test of the run. The checklist files
        list every test.
    effect : effect-size column of the tables (``"auto"``, ``"cohens_d"``, ...)
    annotate : value written in heatmap cells (``"auto"``, ``"estimate"``,
        ``"score_difference"``, an effect column or None; see
        :func:`multistat.report.plots.heatmap`)
    histogram_pairs : ``"top2"`` (the two best systems of each dataset × metric), None, or
        a list of ``(dataset, metric, system_a, system_b)``; needs ``study``
    title : report title
    dpi : resolution of the PNG figures
    max_power_figures : cap on the number of power-curve figures
    ranking : optional :func:`multistat.rank` table (DataFrame or Parquet path): a section
        with the cluster leaderboards and rank-interval figures
        (:mod:`multistat.report.clusters`, which also writes ``tables/ranking*`` and
        ``figures/rank_intervals_*.png``). Its test, correction and alpha then decide
        every pair in every section ("beats", heatmap stars, clusters, rank ranges; see
        :mod:`multistat.report.decisions`); the compare table must hold those rows, or
        pass ``ranking_pairs``
    ranking_pairs : the pairwise decisions behind ``ranking``
        (:func:`multistat.leaderboard.ranking.rank_with_pairs`, ``multistat rank --pairs-out``;
        DataFrame or Parquet path)
    pooled : optional pooled table (:func:`multistat.meta_analysis` of ``results``;
        DataFrame or Parquet path from ``multistat meta``): a section with the pooled
        table and forest plots (:mod:`multistat.report.meta`)
    preferences : optional :func:`multistat.bradley_terry` leaderboard (DataFrame or
        Parquet path): a section with the leaderboard table and its rank-interval figure
        (:mod:`multistat.report.preferences`)

    metaeval, metaeval_matrix : optional :func:`multistat.meta_evaluate` leaderboard and
        the correlations between metrics (DataFrames or Parquet paths; ``multistat
        meta-evaluate --out/--matrix-out``): the "Metric meta-evaluation" section
        (:mod:`multistat.report.metaeval`)

    Returns
    -------
    Path of ``out_dir/report.html``.

    Notes
    -----
    Sized for shared tasks of 15–150 systems: heatmaps follow the ranking's order (else
    the leaderboard's); beyond about 30 systems the page shows a compact heatmap
    (:data:`~multistat.report.plots.PAGE_WIDTH` wide, one system in m labelled) linked to
    ``figures/heatmap-full_<dataset>__<metric>.png`` with every label and number; power
    panels are drawn for the first :data:`~multistat.report.plots.MAX_POWER_PANELS` (12)
    adjacent pairs in rank order, and every adjacent pair is listed in a table.
    """

    res = _read_frame(results, "results")
    check_values(res)  # p-values in [0, 1], reject from p_adjusted and alpha
    res = _tables.check_results(res)
    analysis = _read_frame(analysis, "analysis")
    if analysis is not None:
        missing = [c for c in ("dataset", "metric", "system_a", "system_b")
                   if c not in analysis]
        if missing:
            raise DataValidationError(f"`analysis` lacks column(s) {missing}; has "
                                      f"{list(analysis.columns)}")
    dpi = check_dpi(dpi)
    powers = _power_tables(power)
    scores = _read_frame(systems, "systems")
    check_systems_matches(res, scores)
    study = _open_study(study)
    check_study_matches(res, study)
    if study is None and histogram_pairs not in (None, "top2"):
        raise ParameterError("`histogram_pairs` needs `study` (the scores of A and B)")
    if histogram_pairs is not None and histogram_pairs != "top2" and \
            not isinstance(histogram_pairs, (list, tuple)):
        raise ParameterError(f"`histogram_pairs` must be 'top2', None or a list of "
                             f"(dataset, metric, system_a, system_b); got "
                             f"{histogram_pairs!r}")
    out = Path(out_dir)
    figdir, tabdir = _files.own_folder(out, "figures"), _files.own_folder(out, "tables")

    if test is None and analysis is not None:
        # from here on a test per (dataset, metric), as primary_tests takes it
        test = _tables.recommended_tests(res, analysis) or None  # type: ignore[assignment]
    chosen = _tables.primary_tests(res, test)
    if not chosen:
        raise ParameterError(f"`test` {test!r} was not run on any dataset × metric")

    board = check_ranking(ranking) if ranking is not None else None
    dec, dec_tests, dec_settings = _decisions.decision_rows(
        res, board, chosen, _read_frame(ranking_pairs, "ranking_pairs"))
    dec_text, dec_notes = _decisions.decision_text(dec, dec_tests, dec_settings, board)
    lb_all = _tables.leaderboard(dec, study=study, scores=scores, test=dec_tests)
    pw_all = _tables.pairwise_table(res, test=test, effect=effect)
    ck_all = _tables.checklist(res, effect=effect)
    det_all = _detect.detectability(res, study=study, leaderboard=lb_all, test=test)
    small = _detect.smallest_detectable(det_all)
    curves = _detect.power_curves(det_all[det_all["adjacent"]])
    _files.write_csv(tabdir / "leaderboard.csv", lb_all)
    _files.write_csv(tabdir / "pairwise.csv", pw_all)
    _files.write_csv(tabdir / "checklist.csv", ck_all)
    _files.write_csv(tabdir / "detectability.csv", det_all)
    # the full compare table for R and spreadsheet users (every test, every column)
    _files.write_csv(tabdir / "results.csv", _read_frame(results, "results"))
    _files.write_dvc_files(out, dec, lb_all, det_all, curves, dec_tests)

    meta = _tables._meta(res)
    parts: list[str] = [f'<p class="decision"><strong>{_e(dec_text)}</strong></p>']
    parts += [f'<p class="note">Note: {_e(n)}</p>' for n in dec_notes]
    toc: list[tuple[str, str]] = [("summary", "Study summary"), ("overview", "Overview")]
    if analysis is not None:
        toc.append(("analysis", "Data analysis and recommendations"))

    # ------------------------------------------------------------------ summary
    parts.append('<section id="summary"><h2>Study summary</h2>')
    parts.append(_table(_summary(res, study, meta), cls="summary"))
    parts.append("</section>")

    # ------------------------------------------------------------------ overview
    why = ("the test the data analysis recommends for most pairs" if analysis is not None
           and test is not None and not isinstance(test, str) else "the test shown below")
    why = "the ranking's test" if dec_settings else why
    parts.append('<section id="overview"><h2>Overview</h2>'
                 f"<p>One line per dataset × metric: {why}, how many pairs "
                 "differ significantly after the multiple-comparison correction, and the "
                 "leader.</p>")
    parts.append(_table(_overview(dec, lb_all, dec_tests,
                                  small.set_index(["dataset", "metric"])), cls="overview",
                        numeric=("systems", "pairs", "significant pairs")))
    parts.append("</section>")

    if ranking is not None:  # cluster leaderboards (multistat.report.clusters)

        parts.append(write_ranking(board, out, dpi=dpi))
        _files.write_rank_plots(out, board)
        toc.insert(2, ("ranking", "Leaderboard clusters and rank intervals"))
    if preferences is not None:  # Bradley-Terry leaderboard

        parts.append(write_preferences(preferences, out, dpi=dpi))
        toc.insert(2, ("preferences", "Pairwise preferences"))
    if metaeval is not None:  # metric leaderboard and heatmap (multistat.report.metaeval)

        parts.append(write_metaeval(metaeval, out, matrix=metaeval_matrix, dpi=dpi))
        toc.insert(2, ("metaeval", "Metric meta-evaluation"))

    # ------------------------------------------------------------------ analysis
    if analysis is not None:
        parts.append('<section id="analysis"><h2>Data analysis and recommendations</h2>'
                     "<p>Skewness and normality of the paired differences A − B decide "
                     "between mean- and median-based tests (NLPStatTest manual, Table 2). "
                     "Per-pair details are in each dataset × metric section.</p>")
        parts.append(_table(_analysis_summary(analysis, chosen), cls="analysis-summary"))
        parts.append("</section>")

    # ------------------------------------------------------------------ families
    fam_html = []
    by_family = dict(list(dec.groupby(["dataset", "metric"], sort=False)))
    for (ds, metric), t in chosen.items():
        slug = _slug(ds, metric)
        anchor = "dm-" + slug
        toc.append((anchor, f"{ds} · {metric}"))
        lb = lb_all[(lb_all["dataset"] == ds) & (lb_all["metric"] == metric)]
        pw = pw_all[(pw_all["dataset"] == ds) & (pw_all["metric"] == metric)]
        ck = ck_all[(ck_all["dataset"] == ds) & (ck_all["metric"] == metric)]
        ck_shown = ck[ck["test"].str.rsplit(" (", n=1).str[0] == t]
        td = dec_tests[(ds, metric)]
        other = _decisions.other_label(t, td, ranking_pairs is not None and board is not None
                                       and bool(dec_settings) and (ds, metric) in set(
                                           zip(board["dataset"].astype(str),
                                               board["metric"].astype(str))))
        lbd = _tables.leaderboard_display(lb)
        pwd = _tables.pairwise_display(pw)
        cap = f"{ds} / {metric}"
        _write_table(tabdir, "leaderboard", slug, lbd, f"Leaderboard: {cap} ({td} test).")
        _write_table(tabdir, "pairwise", slug, pwd, f"Pairwise comparisons: {cap} ({t} "
                                                    f"test).")
        ckd = ck.drop(columns=["dataset", "metric"])
        _write_table(tabdir, "checklist", slug, ckd, f"Reporting checklist: {cap}.")

        h = [f'<section class="family" id="{_e(anchor)}"><h2>{_e(ds)} · {_e(metric)}</h2>']
        h.append(f"<h3>Leaderboard</h3><p>Ranked by score; “Beats” counts the systems "
                 f"it is significantly better than ({_e(td)} test after correction).</p>")
        png = _plots.save_png(_plots.leaderboard_plot(lb),
                              figdir / f"leaderboard_{slug}.png", dpi=dpi)
        h.append('<div class="grid">')
        h.append(_table(lbd, cls="leaderboard",
                        attrs={"data-dataset": ds, "data-metric": metric}))
        h.append(_img(png, f"leaderboard of {ds} {metric}",
                      "Scores with confidence intervals, best at the top."))
        h.append("</div>")
        h.append(f'<h3 id="heatmap-{_e(slug)}">Who beats whom</h3>')
        h.append(_heatmaps(by_family[(ds, metric)], ds, metric, td, annotate,
                           _rank_order(board, ds, metric, list(lb["system"])),
                           figdir, slug, dpi))
        h.append(f"<h3>Pairwise results</h3><details><summary>{len(pwd)} comparisons "
                 f"({_e(t)} test{_e(other)})</summary>")
        h.append(_table(pwd, cls="pairwise", attrs={"data-dataset": ds,
                                                    "data-metric": metric}))
        h.append("</details>")
        h.append(f"<h3>Reporting checklist</h3><details><summary>{len(ck_shown)} "
                 f"comparisons ({_e(t)} test{_e(other)}; every test in <code>tables/checklist_"
                 f"{_e(slug)}.md</code>): test, α, n, estimate and effect size with CI, p "
                 "before and after correction, power</summary>")
        h.append(_table(ck_shown.drop(columns=["dataset", "metric"]), cls="checklist"))
        h.append("</details>")
        if analysis is not None:
            an = analysis[(analysis["dataset"].astype(str) == ds)
                          & (analysis["metric"].astype(str) == metric)]
            if len(an):
                cols = [c for c in _ANALYSIS_COLS if c in an and c not in
                        ("dataset", "metric")]
                shown = an[cols].copy()
                for c in ("skewness", "normality_p"):
                    if c in shown:
                        shown[c] = [_tables._fmt(v) for v in shown[c]]
                h.append(f"<h3>Data analysis</h3><details><summary>{len(an)} pairs: "
                         f"skewness, normality, recommended tests</summary>")
                h.append(_table(shown, cls="analysis"))
                h.append("</details>")
        sm = small[(small["dataset"] == ds) & (small["metric"] == metric)]
        if len(sm):
            h.append(f'<h3>Could the test set tell?</h3><p class="mde">For this dataset × '
                     f"metric, {_e(_detect.statement(sm.iloc[0]))}.</p>")
        cv = curves[(curves["dataset"] == ds) & (curves["metric"] == metric)]
        if len(cv):
            h.append(_adjacent_power(cv, det_all, list(lb["system"]), ds, metric, figdir,
                                     slug, dpi))
        hp = _hist_pairs(histogram_pairs, study, ds, metric, lb)
        for a, b in hp:
            png = _plots.save_png(_plots.histograms(study, ds, metric, a, b),
                                  figdir / f"hist_{_slug(ds, metric, a, b)}.png", dpi=dpi)
            h.append(f"<h3>Distributions: {_e(a)} vs {_e(b)}</h3>")
            h.append(_img(png, f"histograms of {a}, {b} and their difference",
                          "Scores of A, of B and the paired differences A − B."))
        h.append("</section>")
        fam_html.append("".join(h))

    # ------------------------------------------------------------------ across test sets

    across_html = across_section(res, figdir, tabdir, dpi=dpi,
                                 test=test if isinstance(test, str) else None)
    if across_html:
        toc.append(("across", "Across test sets"))

    meta_html = ""
    if pooled is not None:  # pooled across test sets (multistat.report.meta)
        meta_html = meta_section(res, _read_frame(pooled, "pooled"), figdir, tabdir, dpi=dpi,
                                 test=test if isinstance(test, str) else None)
        toc.append(("meta", "Meta-analysis across test sets"))

    # ------------------------------------------------------------------ human ratings
    from multistat.report.human import human_section  # ratings by rater

    human_html = human_section(study, res, figdir, tabdir, dpi=dpi, table_html=_table,
                               img_html=_img, slug=_slug)
    if human_html:
        toc.append(("human", "Human evaluation"))

    # ------------------------------------------------------------------ power
    power_html = _power_section(res, powers, figdir, dpi, max_power_figures)
    if power_html:
        toc.append(("power", "Power"))

    nav = "".join(f'<li><a href="#{_e(a)}">{_e(label)}</a></li>' for a, label in toc)
    version = meta.get("multistat_version", meta.get("version", ""))
    doc = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{_e(title)}</title><style>{_CSS}</style></head><body><main>",
           f"<h1>{_e(title)}</h1>",
           (f'<p class="meta">Generated by multistat {_e(version)} · '
           f'{len(chosen)} dataset × metric combination(s) · tables also in '
           f'<code>tables/</code>, figures in <code>figures/</code></p>'),
           f"<nav><strong>Contents</strong><ol>{nav}</ol></nav>",
           *parts, *fam_html, across_html, meta_html, human_html, power_html,
           "</main></body></html>"]
    path = out / "report.html"
    _atomic.write_text(path, "\n".join(doc))
    return path


def _rank_order(board, ds, metric, fallback: list) -> list:
    """Systems of one dataset × metric in the ranking's order (rank, then name), else
    ``fallback`` (the leaderboard's)."""
    if board is None:
        return fallback
    b = board[(board["dataset"].astype(str) == ds) & (board["metric"].astype(str) == metric)]
    if len(b) != len(fallback) or set(b["system"].astype(str)) != set(fallback):
        return fallback
    return list(b.sort_values(["rank", "system"], kind="stable")["system"].astype(str))


def _heatmaps(part, ds, metric, test, annotate, order, figdir, slug, dpi) -> str:
    """The page's heatmap and, linked from it, the full-size one: the same PNG when the
    page shrinks it by at most :data:`~multistat.report.plots.PAGE_SHRINK` (up to about 30
    systems), else a compact one at most :data:`~multistat.report.plots.PAGE_WIDTH` wide
    (labels thinned) and ``figures/heatmap-full_<slug>.png`` with every label and
    number."""
    cap = ("Row system A vs column system B, in rank order; blue: A significantly better, "
           "orange: A significantly worse, grey: not significant (after correction).")
    if _plots.heatmap_fits(order, _plots.PAGE_WIDTH / _plots.PAGE_SHRINK):
        # the full-size figure shrinks by at most PAGE_SHRINK on the page: it is the page's
        page = _plots.heatmap(part, ds, metric, test=test, annotate=annotate, order=order)
        png = _plots.save_png(page, figdir / f"heatmap_{slug}.png", dpi=dpi)
        name, size = f"heatmap_{slug}.png", _png_size(png)
    else:
        page = _plots.heatmap(part, ds, metric, test=test, annotate=annotate, order=order,
                              max_width=_plots.PAGE_WIDTH)
        png = _plots.save_png(page, figdir / f"heatmap_{slug}.png", dpi=dpi)
        name = f"heatmap-full_{slug}.png"
        full = _plots.heatmap(part, ds, metric, test=test, annotate=annotate, order=order)
        size = _png_size(_plots.save_png(full, figdir / name, dpi=dpi))
        cap += (" The page shows a reduced image; the full-size image has every system's "
                "name and every number.")
    w, h = size
    return _img(png, f"pairwise heatmap of {ds} {metric}", cap,
                full=(f"figures/{name}", f"Full-size image ({int(w):,} × {int(h):,} px)."))


def _adjacent_power(cv, det_all, order, ds, metric, figdir, slug, dpi) -> str:
    """Power panels of the first :data:`~multistat.report.plots.MAX_POWER_PANELS` adjacent
    pairs in rank order, and a table of every adjacent pair."""
    png = _plots.save_png(_plots.adjacent_power(cv, ds, metric),
                          figdir / f"power_adjacent_{slug}.png", dpi=dpi)
    adj = det_all[(det_all["dataset"] == ds) & (det_all["metric"] == metric)
                  & det_all["adjacent"]]
    cap = _plots.MAX_POWER_PANELS
    h = [_img(png, f"power against the true difference, adjacent pairs of {ds} {metric}",
              "Paired-t power at this test set's size against the true difference, for "
              f"pairs adjacent in the leaderboard (the pairs that decide where a cluster "
              f"ends; at most the first {cap} in rank order are drawn, every adjacent pair "
              "is in the table below); dashed: 80 % power, dotted: the pair's smallest "
              "detectable difference.")]
    drawn = set(map(tuple, cv[["system_a", "system_b"]].drop_duplicates()
                    .to_numpy()[:cap].tolist()))
    f, pos = _tables._fmt, {s: i + 1 for i, s in enumerate(order)}
    table = pd.DataFrame({
        "Positions": [f"{pos.get(a, '?')} → {pos.get(b, '?')}"
                      for a, b in zip(adj["system_a"], adj["system_b"])],
        "System A": adj["system_a"].to_numpy(), "System B": adj["system_b"].to_numpy(),
        "n": adj["n"].to_numpy(),
        "A − B": [f(v) for v in adj["difference"]],
        "sd of A − B": [f(v) for v in adj["sd"]],
        f"smallest detectable ({100 * float(adj['power_level'].iloc[0]):g} % power)"
        if len(adj) else "smallest detectable": [f(v) for v in adj["mde"]],
        "panel": ["drawn" if (a, b) in drawn else "" for a, b in
                  zip(adj["system_a"], adj["system_b"])]})
    h.append(f"<details><summary>{len(adj)} adjacent pairs ({min(cap, len(drawn))} drawn "
             "above): difference, its standard deviation and the smallest detectable "
             "difference</summary>")
    h.append(_table(table, cls="adjacent", numeric=("n", "A − B", "sd of A − B")))
    h.append("</details>")
    return "".join(h)


def _write_table(tabdir: Path, kind: str, slug: str, frame: pd.DataFrame, caption: str):
    _atomic.write_text(tabdir / f"{kind}_{slug}.md", _tables.to_markdown(frame))
    _atomic.write_text(tabdir / f"{kind}_{slug}.tex",
                       _tables.to_latex(frame, caption=caption, label=f"tab:{kind}-{slug}"))


def _summary(res: pd.DataFrame, study, meta: Mapping) -> pd.DataFrame:
    rows = [("datasets", ", ".join(pd.unique(res["dataset"]))),
            ("metrics", str(res["metric"].nunique())),
            ("systems", str(len(pd.unique(pd.concat([res["system_a"], res["system_b"]]))))),
            ("comparisons (rows)", str(len(res))),
            ("tests", ", ".join(pd.unique(res["test"])))]
    if study is not None:
        # heavy: xarray, lazily
        from multistat import cube

        for name, ds in cube.datasets(study).items():
            rows.append((f"dataset {name}", (f"{ds.sizes['system']} systems × "
                                            f"{ds.sizes['metric']} metrics × "
                                            f"{ds.sizes['instance']} instances")))
    n = pd.to_numeric(res.get("n", pd.Series(dtype=float)), errors="coerce").dropna()
    if len(n):
        rows.append(("n per comparison", f"{int(n.min())}–{int(n.max())}"
                     if n.min() != n.max() else str(int(n.min()))))
    for key in ("alternative", "correction", "family", "confidence_level"):
        if key in res:
            vals = pd.unique(res[key].dropna().astype(str))
            text = ", ".join(vals) if len(vals) else "none"
            if key == "family" and len(vals) > 3:
                text = f"{len(vals)} correction families, e.g. {vals[0]}"
            rows.append((key.replace("_", " "), text))
        elif key in meta:
            rows.append((key.replace("_", " "), str(meta[key])))
    rows.append(("α", ", ".join(pd.unique(res["alpha"].astype(str)))))
    for name, sigs in _sacrebleu_signatures(meta, study).items():
        for metric, sig in sigs.items():
            rows.append((f"sacrebleu signature ({name}, {metric})", str(sig)))
    for key in ("n_resamples", "seed", "statistic", "ci_method", "bootstrap_pvalue",
                "multistat_version", "input_sha256"):
        if key in meta:
            rows.append((key.replace("_", " "), str(meta[key])))
        elif key in res:
            vals = pd.unique(res[key].dropna().astype(str))
            if len(vals):
                rows.append((key.replace("_", " "), ", ".join(vals)))
    return pd.DataFrame(rows, columns=["item", "value"])


def _sacrebleu_signatures(meta: Mapping, study) -> dict:
    """{dataset: {metric: signature}}: from the results' metadata, else from the study."""

    sigs = meta.get("sacrebleu")
    if not isinstance(sigs, Mapping):
        sigs = {}
    out = {str(k): dict(v) for k, v in sigs.items() if isinstance(v, Mapping)}
    if study is not None:
        # heavy: xarray, lazily
        from multistat import cube

        for name, ds in cube.datasets(study).items():
            sig = ds.attrs.get("sacrebleu")
            if sig and name not in out:
                out[str(name)] = json.loads(sig) if isinstance(sig, str) else dict(sig)
    return out


def _overview(res, lb_all, chosen, small=None) -> pd.DataFrame:
    rows = []
    for (ds, metric), t in chosen.items():
        part = res[(res["dataset"] == ds) & (res["metric"] == metric) & (res["test"] == t)]
        lb = lb_all[(lb_all["dataset"] == ds) & (lb_all["metric"] == metric)]
        top = lb.iloc[0]
        k = len(lb)
        beats_all = int(top["wins"]) == int(top["compared"]) and int(top["compared"]) > 0
        row = {"dataset": ds, "metric": metric,
               "direction": "higher is better" if bool(top["higher_is_better"])
               else "lower is better",
               "test": t, "systems": k, "pairs": len(part),
               "significant pairs": int(part["significant"].sum()),
               "leader": f"{top['system']} ({_tables._fmt(top['score'], 4)})",
               "leader significantly best": "yes" if beats_all else
               f"no (beats {int(top['wins'])} of {int(top['compared'])})"}
        if small is not None and (ds, metric) in small.index:
            row["smallest detectable difference"] = _tables._fmt(
                small.loc[(ds, metric), "mde_min"], 3)
        if "power" in part and pd.to_numeric(part["power"], errors="coerce").notna().any():
            pw = pd.to_numeric(part["power"], errors="coerce").dropna()
            row["median power"] = _tables._fmt(pw.median())
            row["pairs with power < 0.8"] = f"{int((pw < 0.8).sum())} of {len(pw)}"
        rows.append(row)
    return pd.DataFrame(rows)


def _analysis_summary(an: pd.DataFrame, chosen) -> pd.DataFrame:
    rows = []
    an = an.assign(dataset=an["dataset"].astype(str), metric=an["metric"].astype(str))
    for (ds, metric), g in an.groupby(["dataset", "metric"], sort=False):
        row = {"dataset": ds, "metric": metric, "pairs": len(g)}
        if "n" in g:
            row["n"] = str(int(pd.to_numeric(g["n"], errors="coerce").median()))
        if "skewness" in g:
            s = pd.to_numeric(g["skewness"], errors="coerce")
            row["skewness (min … max)"] = f"{_tables._fmt(s.min())} … {_tables._fmt(s.max())}"
        if "normality_p" in g:
            p = pd.to_numeric(g["normality_p"], errors="coerce")
            test = ", ".join(pd.unique(g.get("normality_test", pd.Series(["?"])).astype(str)))
            row["normality rejected (p < 0.05)"] = f"{int((p < 0.05).sum())} of " \
                                                   f"{int(p.notna().sum())} ({test})"
        if "test_statistic" in g:
            vc = g["test_statistic"].astype(str).value_counts()
            row["statistic"] = ", ".join(f"{k}: {v}" for k, v in vc.items())
        if "recommended" in g:
            rec = g["recommended"].astype(str).value_counts()
            row["recommended (most pairs)"] = f"{rec.index[0]} ({rec.iloc[0]} of {len(g)})"
            shown = chosen.get((ds, metric))
            if shown is not None:
                ok = g["recommended"].astype(str).str.split(",").map(
                    lambda xs, s=shown: s in [x.strip() for x in xs]).sum()
                row["shown test recommended for"] = f"{int(ok)} of {len(g)} pairs ({shown})"
        rows.append(row)
    return pd.DataFrame(rows)


def _hist_pairs(spec, study, ds, metric, lb) -> list[tuple[str, str]]:
    if spec is None or study is None:
        return []
    # heavy: xarray, lazily
    from multistat import cube

    dsets = cube.datasets(study)
    if ds not in dsets or metric not in dsets[ds]["metric"].values:
        return []
    if spec == "top2":
        return [tuple(lb["system"].iloc[:2])] if len(lb) >= 2 else []
    out = []
    for item in spec:
        if len(item) != 4:
            raise ParameterError(f"`histogram_pairs` items must be (dataset, metric, "
                                 f"system_a, system_b); got {item!r}")
        if str(item[0]) == ds and str(item[1]) == metric:
            out.append((str(item[2]), str(item[3])))
    return out


_FACETS = ("dataset", "metric", "system_a", "system_b", "test", "scenario", "method", "kind")


def _power_subject(g: pd.DataFrame) -> str:
    """"dataset · metric: a vs b" from a power table's constant columns ("" if absent)."""
    def one(*cols):
        for c in cols:
            if c in g and g[c].nunique() == 1:
                return str(g[c].iloc[0])
        return None
    ds, metric = one("dataset"), one("metric")
    a, b = one("system_a", "a"), one("system_b", "b")
    where = " · ".join(x for x in (ds, metric) if x)
    pair = f"{a} vs {b}" if a and b else ""
    return ": ".join(x for x in (where, pair) if x)


def _power_design(g: pd.DataFrame) -> str:
    """The constant design columns of a power table, as a figure title."""
    bits = [_power_subject(g)] if _power_subject(g) else []
    for col, fmt in (("scenario", "{}"), ("test", "{} test"), ("method", "{} method"),
                     ("alternative", "{}"), ("alpha", "α = {}"),
                     ("n_simulations", "{} simulations per n")):
        if col in g and g[col].nunique() == 1:
            v = g[col].iloc[0]
            bits.append(fmt.format(f"{v:g}" if isinstance(v, float) else v))
    return ", ".join(bits)


def _power_section(res, powers, figdir, dpi, cap) -> str:
    has_col = "power" in res and pd.to_numeric(res["power"], errors="coerce").notna().any()
    if not powers and not has_col:
        return ""
    h = ['<section id="power"><h2>Power</h2>']
    if has_col:
        p = pd.to_numeric(res["power"], errors="coerce")
        h.append(f"<p>Power of the tested comparisons (compare table): median "
                 f"{_e(_tables._fmt(p.median()))}; {int((p < 0.8).sum())} of "
                 f"{int(p.notna().sum())} comparisons have power below 0.8 — a "
                 f"non-significant result there says little.</p>")
    n_fig = 0
    for title, tab in powers:
        if tab is None or tab.empty:
            continue
        h.append(f"<h3>{_e(title)}</h3>")
        if "n" not in tab or "power" not in tab:
            h.append(f'<p class="note">This table has no <code>n</code>/<code>power</code> '
                     f"columns to plot; columns: {_e(', '.join(map(str, tab.columns)))}</p>")
        else:
            facets = [c for c in _FACETS if c in tab and tab[c].nunique() > 1]
            groups = list(tab.groupby(facets, sort=False)) if facets else [((), tab)]
            for key, g in groups:
                if n_fig >= cap:
                    h.append(f'<p class="note">Only the first {cap} power figures are '
                             f"drawn; all rows are in the table below.</p>")
                    break
                key = key if isinstance(key, tuple) else (key,)
                label = " · ".join(f"{f} {v}" for f, v in zip(facets, key))
                label = ", ".join(x for x in (label, _power_design(g)) if x) or title
                fig = _plots.power_curve_plot(g, title=label)
                png = _plots.save_png(fig, figdir / f"power_{n_fig + 1:02d}.png",
                                      dpi=dpi)
                h.append(_img(png, f"power curve {label}",
                              "Power against sample size; dashed line: 80 % power."))
                n_fig += 1
        shown = tab.copy()
        for c in shown.columns:
            if pd.api.types.is_float_dtype(shown[c]):
                shown[c] = [_tables._fmt(v, 4) for v in shown[c]]
        h.append(f"<details><summary>{len(tab)} rows</summary>")
        h.append(_table(shown, cls="power"))
        h.append("</details>")
    h.append("</section>")
    return "".join(h)
