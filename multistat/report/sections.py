"""The report's sections, as a registry: what each reads, and in which order they appear.

A :class:`Section` names the inputs it reads (keys of ``write_report(sections=...)``,
declared once in :data:`INPUTS`: the tables the analysis stages write) and renders them
into :class:`Part` objects (an anchor, a title for the table of contents and the HTML).
:data:`SECTIONS` holds the sections in page order; the page and its table of contents come
from it (:func:`multistat.report.write_report`), so a new section is one
:func:`register` call. Sections draw and tabulate; they compute no statistic.

Examples
--------
>>> from multistat.report import sections
>>> [s.name for s in sections.SECTIONS][:3]
['summary', 'overview', 'ranking']
>>> sections.INPUTS["ranking"].description.split(":")[0]
'ranking table (`multistat rank --out`)'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from multistat.errors import ParameterError
from multistat.report import _files, _templates
from multistat.report import _parts as P
from multistat.report import decisions as _decisions
from multistat.report import detectability as _detect
from multistat.report import plots as _plots
from multistat.report import tables as _tables
from multistat.report._markup import escape as _e
from multistat.report._markup import figure as _img
from multistat.report._markup import table as _table

__all__ = ["INPUTS", "SECTIONS", "Input", "Page", "Part", "Section", "input_names",
           "register", "render_section"]


@dataclass(frozen=True)
class Input:
    """One input a section reads: a table written by an analysis stage (or an object).

    Attributes
    ----------
    name : str
        The key in ``write_report(sections=...)`` and in ``multistat report --section``.
    description : str
        What it is and which command or function writes it.
    kind : str
        ``"table"`` (a DataFrame or a Parquet path), ``"tables"`` (one or several
        tables: a DataFrame, a path, a folder of Parquet files, or a list or mapping of
        them) or ``"object"`` (a Python object from the library, not given on the
        command line).
    """

    name: str
    description: str
    kind: str = "table"


#: every input of the built-in sections, in the order ``--section`` lists them
INPUTS: dict[str, Input] = {i.name: i for i in (
    Input("analysis", "data-analysis table (`multistat analyze`): skewness, normality and "
                      "the recommended tests per pair"),
    Input("systems", "per-system scores with intervals (`multistat compare --systems-out`, "
                     "multistat.system_scores): the leaderboards' scores"),
    Input("ranking", "ranking table (`multistat rank --out`): cluster leaderboards and "
                     "rank intervals; its pair decisions, stored with it, decide every "
                     "pair"),
    Input("ranking_pairs", "the ranking's pair decisions (`multistat rank --pairs-out`); "
                           "read from the ranking file itself when it carries them"),
    Input("preferences", "Bradley-Terry leaderboard (`multistat preferences`)"),
    Input("metaeval", "metric leaderboard (`multistat meta-evaluate --out`)"),
    Input("metaeval_matrix", "correlations between metrics (`multistat meta-evaluate "
                             "--matrix-out`)"),
    Input("pooled", "pooled table (`multistat meta` on the compare table)"),
    Input("pooled_studies", "the studies behind each pooled row, for the forest plots "
                            "(multistat.meta.pooling.study_rows)"),
    Input("detectability", "smallest detectable difference of every pair "
                           "(multistat.power.detectability.detectability)"),
    Input("detectability_curves", "paired-t power against the true difference of the "
                                  "adjacent pairs (multistat.power.detectability."
                                  "power_curves)"),
    Input("human_design", "design of a study with ratings by rater "
                          "(multistat.human.pilot.rating_tables)"),
    Input("human_agreement", "Krippendorff's alpha per dataset x metric x system "
                             "(`multistat agreement`)"),
    Input("human_components", "variance components per dataset x metric "
                              "(`multistat components`, multistat.human.pilot."
                              "rating_tables)"),
    Input("human_power", "power of raters x items designs (`multistat components "
                         "--grid-out`, multistat.human.pilot.rating_tables)"),
    Input("replicability", "replicability of each claim across test sets "
                           "(multistat.leaderboard.across.across_results)"),
    Input("power", "power table(s) with columns n and power (`multistat power curve`, "
                   "...), a folder of them, or a list or {title: table} of them",
          kind="tables"),
    Input("friedman", "{metric: FriedmanResult} (multistat.leaderboard.across."
                      "across_results)", kind="object"),
    Input("floor_notes", "resampling-floor notes of the deciding configurations "
                         "(multistat.stages.report_inputs; default: the compare table's "
                         "metadata)", kind="object"),
)}


def input_names(kind: str | None = None) -> list[str]:
    """The declared input names (of one ``kind`` when given), in declaration order.

    Parameters
    ----------
    kind : str, optional
        ``"table"``, ``"tables"`` or ``"object"``.

    Returns
    -------
    list of str

    Examples
    --------
    >>> "ranking" in input_names("table")
    True
    """
    return [n for n, i in INPUTS.items() if kind is None or i.kind == kind]


@dataclass(frozen=True)
class Part:
    """One entry of the page: its anchor, its title in the table of contents and its
    HTML (already escaped: a :class:`markupsafe.Markup`)."""

    anchor: str
    title: str
    html: Markup


@dataclass
class Page:
    """What every section sees: the checked compare table, the inputs, the decisions
    and the folders. Built once by :func:`multistat.report.write_report`.

    Attributes
    ----------
    results : the compare table with the report's helper columns
        (:func:`multistat.report.tables.check_results`)
    raw : the compare table as given
    inputs : the section inputs, read (``{name: table or object}``)
    study : the study (or None): sizes, sacrebleu signatures and histograms
    out, figdir, tabdir : the report folder, its ``figures/`` and ``tables/``
    dpi : resolution of the PNG figures
    options : the display options (``test``, ``effect``, ``annotate``,
        ``histogram_pairs``, ``max_power_figures``)
    chosen : ``{(dataset, metric): test}`` shown per dataset × metric
    decisions, deciding_tests, settings, ranking : the pair decisions
        (:mod:`multistat.report.decisions`)
    leaderboard, pairwise, checklist : the report's tables
    detectability, smallest, curves : the detectability tables (empty without the
        ``detectability`` input)
    """

    results: pd.DataFrame
    raw: pd.DataFrame
    inputs: dict
    study: object
    out: Path
    figdir: Path
    tabdir: Path
    dpi: int
    options: dict
    chosen: dict
    decisions: pd.DataFrame
    deciding_tests: dict
    settings: dict
    ranking: pd.DataFrame | None
    leaderboard: pd.DataFrame
    pairwise: pd.DataFrame
    checklist: pd.DataFrame
    detectability: pd.DataFrame
    smallest: pd.DataFrame
    curves: pd.DataFrame
    meta: dict = field(default_factory=dict)

    def get(self, name: str, default=None):
        """The input ``name`` (``default`` when not given)."""
        value = self.inputs.get(name)
        return default if value is None else value


@dataclass(frozen=True)
class Section:
    """One section of the report.

    Attributes
    ----------
    name : str
        Its name (the anchor of its ``<section>``).
    title : str
        Its heading and its entry in the table of contents.
    render : callable
        ``render(page) -> list[Part]`` (empty: the section is left out).
    inputs : tuple of str
        The inputs it reads (names of :data:`INPUTS`).
    requires : tuple of str
        Inputs without which it is left out.
    """

    name: str
    title: str
    render: Callable[[Page], Sequence[Part]]
    inputs: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()


def render_section(anchor: str, title: str, body="", *, paragraphs=(), notes=(),
                   cls: str = "") -> Markup:
    """``<section>`` with its heading, paragraphs (text, escaped), notes and ``body``
    (HTML: a :class:`~markupsafe.Markup` or a string the report's builders escaped).

    Parameters
    ----------
    anchor, title : str
        The section's id and heading (escaped).
    body : str or Markup
        The HTML inside (trusted: built by the report's escaping helpers).
    paragraphs, notes : sequences of str
        Plain text, escaped.
    cls : str
        The section's class.

    Returns
    -------
    markupsafe.Markup

    Examples
    --------
    >>> str(render_section("x", "<b>", "<p>body</p>", paragraphs=["a & b"]))
    '<section id="x"><h2>&lt;b&gt;</h2><p>a &amp; b</p><p>body</p></section>'
    """
    return Markup(_templates.render(
        "section.html.j2", anchor=anchor, title=title, body=Markup(body),
        paragraphs=list(paragraphs), notes=list(notes), cls=cls))


# ----------------------------------------------------------------------------- sections
def _summary(page: Page) -> list[Part]:
    body = _table(P.summary_table(page.results, page.study, page.meta), cls="summary")
    return [Part("summary", "Study summary", render_section("summary", "Study summary",
                                                            body))]


def _overview(page: Page) -> list[Part]:
    why = ("the test the data analysis recommends for most pairs"
           if page.get("analysis") is not None and page.options["test"] is not None
           and not isinstance(page.options["test"], str) else "the test shown below")
    why = "the ranking's test" if page.settings else why
    text = (f"One line per dataset × metric: {why}, how many pairs differ significantly "
            "after the multiple-comparison correction, and the leader.")
    notes = [] if page.get("detectability") is not None else [
        "No detectability table was given (sections['detectability']): the smallest "
        "detectable differences are not shown; multistat.stages.report_inputs (or "
        "`multistat report --study`) computes it."]
    body = _table(P.overview_table(page.decisions, page.leaderboard, page.deciding_tests,
                                   page.smallest.set_index(["dataset", "metric"])),
                  cls="overview", numeric=("systems", "pairs", "significant pairs"))
    return [Part("overview", "Overview", render_section(
        "overview", "Overview", body, paragraphs=[text], notes=notes))]


def _ranking(page: Page) -> list[Part]:
    # heavy: the cluster section loads seaborn
    from multistat.report.clusters import write_ranking

    html = write_ranking(page.ranking, page.out, dpi=page.dpi)
    _files.write_rank_plots(page.out, page.ranking)
    return [Part("ranking", "Leaderboard clusters and rank intervals", Markup(html))]


def _preferences(page: Page) -> list[Part]:
    # heavy: the preference section loads matplotlib
    from multistat.report.preferences import write_preferences

    return [Part("preferences", "Pairwise preferences",
                 Markup(write_preferences(page.get("preferences"), page.out,
                                          dpi=page.dpi)))]


def _metaeval(page: Page) -> list[Part]:
    # heavy: the meta-evaluation section loads seaborn
    from multistat.report.metaeval import write_metaeval

    return [Part("metaeval", "Metric meta-evaluation",
                 Markup(write_metaeval(page.get("metaeval"), page.out,
                                       matrix=page.get("metaeval_matrix"), dpi=page.dpi)))]


def _analysis(page: Page) -> list[Part]:
    text = ("Skewness and normality of the paired differences A − B decide between mean- "
            "and median-based tests (NLPStatTest manual, Table 2). Per-pair details are in "
            "each dataset × metric section.")
    body = _table(P.analysis_summary(page.get("analysis"), page.chosen),
                  cls="analysis-summary")
    return [Part("analysis", "Data analysis and recommendations", render_section(
        "analysis", "Data analysis and recommendations", body, paragraphs=[text]))]


def _families(page: Page) -> list[Part]:
    """One section per dataset × metric: leaderboard, heatmaps, pairwise table,
    checklist, data analysis, detectability, adjacent-pair power, histograms."""
    opts, figdir, tabdir, dpi = page.options, page.figdir, page.tabdir, page.dpi
    analysis, board = page.get("analysis"), page.ranking
    lb_all, pw_all, ck_all = page.leaderboard, page.pairwise, page.checklist
    small, curves, det_all = page.smallest, page.curves, page.detectability
    by_family = dict(list(page.decisions.groupby(["dataset", "metric"], sort=False)))
    covered = (set(zip(board["dataset"].astype(str), board["metric"].astype(str)))
               if board is not None else set())
    out = []
    for (ds, metric), t in page.chosen.items():
        slug = _files.file_stem(ds, metric)
        anchor = "dm-" + slug
        lb = lb_all[(lb_all["dataset"] == ds) & (lb_all["metric"] == metric)]
        pw = pw_all[(pw_all["dataset"] == ds) & (pw_all["metric"] == metric)]
        ck = ck_all[(ck_all["dataset"] == ds) & (ck_all["metric"] == metric)]
        ck_shown = ck[ck["test"].str.rsplit(" (", n=1).str[0] == t]
        td = page.deciding_tests[(ds, metric)]
        other = _decisions.other_label(t, td, page.get("ranking_pairs") is not None and
                                       bool(page.settings) and (ds, metric) in covered)
        lbd = _tables.leaderboard_display(lb)
        pwd = _tables.pairwise_display(pw)
        cap = f"{ds} / {metric}"
        P.write_table(tabdir, "leaderboard", slug, lbd, f"Leaderboard: {cap} ({td} test).")
        P.write_table(tabdir, "pairwise", slug, pwd, f"Pairwise comparisons: {cap} ({t} "
                                                     f"test).")
        ckd = ck.drop(columns=["dataset", "metric"])
        P.write_table(tabdir, "checklist", slug, ckd, f"Reporting checklist: {cap}.")

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
        h.append(P.heatmaps(by_family[(ds, metric)], ds, metric, td, opts["annotate"],
                            P.rank_order(board, ds, metric, list(lb["system"])),
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
                cols = [c for c in P.ANALYSIS_COLS if c in an and c not in
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
            h.append(P.adjacent_power(cv, det_all, list(lb["system"]), ds, metric, figdir,
                                      slug, dpi))
        for a, b in P.hist_pairs(opts["histogram_pairs"], page.study, ds, metric, lb):
            png = _plots.save_png(_plots.histograms(page.study, ds, metric, a, b),
                                  figdir / f"hist_{_files.file_stem(ds, metric, a, b)}.png",
                                  dpi=dpi)
            h.append(f"<h3>Distributions: {_e(a)} vs {_e(b)}</h3>")
            h.append(_img(png, f"histograms of {a}, {b} and their difference",
                          "Scores of A, of B and the paired differences A − B."))
        h.append("</section>")
        out.append(Part(anchor, f"{ds} · {metric}", Markup("".join(h))))
    return out


def _across(page: Page) -> list[Part]:
    # heavy: the critical-difference diagram loads matplotlib
    from multistat.report.testsets import across_section

    html = across_section(page.results, page.get("friedman"), page.get("replicability"),
                          page.figdir, page.tabdir, dpi=page.dpi)
    return [Part("across", "Across test sets", Markup(html))] if html else []


def _meta(page: Page) -> list[Part]:
    # heavy: the forest plots load matplotlib
    from multistat.report.meta import meta_section

    test = page.options["test"]
    html = meta_section(page.get("pooled"), page.get("pooled_studies"), page.figdir,
                        page.tabdir, dpi=page.dpi,
                        test=test if isinstance(test, str) else None)
    return [Part("meta", "Meta-analysis across test sets", Markup(html))]


def _human(page: Page) -> list[Part]:
    # heavy: the power-grid figure loads matplotlib
    from multistat.report.human import INPUTS as HUMAN, human_section

    html = human_section({k: page.get(k) for k in HUMAN if page.get(k) is not None},
                         page.results, page.figdir, page.tabdir, dpi=page.dpi,
                         table_html=_table, img_html=_img, slug=_files.file_stem)
    return [Part("human", "Human evaluation", Markup(html))] if html else []


def _power(page: Page) -> list[Part]:
    html = P.power_section(page.results, page.get("power", []), page.figdir, page.dpi,
                           page.options["max_power_figures"])
    return [Part("power", "Power", Markup(html))] if html else []


#: the sections, in page order (the table of contents follows it)
SECTIONS: list[Section] = [
    Section("summary", "Study summary", _summary),
    Section("overview", "Overview", _overview, ("systems", "detectability")),
    Section("ranking", "Leaderboard clusters and rank intervals", _ranking,
            ("ranking", "ranking_pairs"), requires=("ranking",)),
    Section("preferences", "Pairwise preferences", _preferences, ("preferences",),
            requires=("preferences",)),
    Section("metaeval", "Metric meta-evaluation", _metaeval,
            ("metaeval", "metaeval_matrix"), requires=("metaeval",)),
    Section("analysis", "Data analysis and recommendations", _analysis, ("analysis",),
            requires=("analysis",)),
    Section("families", "Each dataset × metric", _families,
            ("analysis", "systems", "detectability", "detectability_curves")),
    Section("across", "Across test sets", _across, ("friedman", "replicability"),
            requires=("friedman",)),
    Section("meta", "Meta-analysis across test sets", _meta,
            ("pooled", "pooled_studies"), requires=("pooled",)),
    Section("human", "Human evaluation", _human, ("human_design", "human_agreement",
                                                  "human_components", "human_power")),
    Section("power", "Power", _power, ("power",)),
]


def register(section: Section, *, after: str | None = None,
             inputs: Sequence[Input] = ()) -> Section:
    """Add a section to the report (at the end, or right after the section ``after``)
    with the inputs it declares; return it.

    Parameters
    ----------
    section : Section
        The section; its name must be new.
    after : str, optional
        Name of the section it follows (default: the last).
    inputs : sequence of Input
        Inputs it reads that are not declared yet.

    Returns
    -------
    Section

    Examples
    --------
    >>> from multistat.report import sections as S
    >>> note = S.Section("note", "A note", lambda page: [S.Part(
    ...     "note", "A note", S.render_section("note", "A note", paragraphs=["Hi"]))])
    >>> _ = S.register(note, after="summary")
    >>> [s.name for s in S.SECTIONS][:3]
    ['summary', 'note', 'overview']
    >>> S.SECTIONS.remove(note)
    """
    if any(s.name == section.name for s in SECTIONS):
        raise ParameterError(f"a report section named {section.name!r} is registered "
                             "already")
    for i in inputs:
        INPUTS.setdefault(i.name, i)
    unknown = [n for n in (*section.inputs, *section.requires) if n not in INPUTS]
    if unknown:
        raise ParameterError(f"section {section.name!r} reads undeclared input(s) "
                             f"{unknown}; declare them with `inputs=`")
    names = [s.name for s in SECTIONS]
    if after is not None and after not in names:
        raise ParameterError(f"`after`: no section {after!r}; sections: {names}")
    SECTIONS.insert(names.index(after) + 1 if after else len(SECTIONS), section)
    return section


def check_inputs(given: Mapping) -> None:
    """A :class:`~multistat.errors.ParameterError` naming any key of ``given`` that no
    input declares (with the declared names)."""
    unknown = [k for k in given if k not in INPUTS]
    if unknown:
        raise ParameterError(f"`sections`: unknown input(s) {unknown}; inputs: "
                             f"{', '.join(INPUTS)}")
