"""The report's "Across test sets" section: Friedman/Nemenyi table, critical-difference
diagram (Demšar 2006, figure 1 style) and replicability table (Dror et al. 2017).

Blocks are the test sets (datasets) of a compare table, one Friedman test per metric
(:func:`multistat.leaderboard.across.blocks_per_metric`; metrics are never blocks: two metrics of
one
test set score the same outputs), with each system's score from the ``score_a``/
``score_b`` columns (oriented by the metric's ``higher_is_better``). The section appears
only with at least 2 test sets, and shows the metrics with at least 3 systems scored on
every test set.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
from matplotlib.figure import Figure

from multistat._atomic import write_text
from multistat.report import _files, _layout
from multistat.report._markup import escape as _e
from multistat.report._markup import figure as _img
from multistat.report._markup import table as _table
from multistat.report.plots import _short, _t, save_png
from multistat.report.tables import _fmt as fmt
from multistat.report.tables import to_markdown

__all__ = ["across_section", "cd_diagram"]

_INK = "#1a1a1a"
_CLIQUE = "#0072B2"  # Okabe-Ito blue


def _cliques(mean_ranks: pd.Series, cd: float) -> list[tuple[float, float]]:
    """Maximal runs of systems (sorted by rank) whose rank range is below ``cd``: the bars
    that join systems the Nemenyi test does not separate."""
    r = mean_ranks.to_numpy()
    spans: list = []
    for i in range(len(r)):
        j = i
        while j + 1 < len(r) and r[j + 1] - r[i] < cd:
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in spans):
            spans.append((i, j))
    return [(r[a], r[b]) for a, b in spans]


def cd_diagram(result, *, title: str | None = None) -> Figure:
    """Critical-difference diagram of a :class:`multistat.leaderboard.across.FriedmanResult`:
    the rank axis (1 = best, on the left), each system at
    its mean rank, the Nemenyi critical difference as a bar, and thick bars joining
    systems whose mean ranks differ by less than the CD (not significantly different).

    Laid out in points from the number of systems k so labels never overlap: the better
    half of the systems is labelled on the left, the rest on the right (Demšar 2006),
    rows :data:`~multistat.report._layout.LINE` × 1.15 × 9 pt apart, the label columns as
    wide as their widest label (matplotlib's font metrics), the clique bars between the
    axis and the first label, axis numbers at the nice step of
    :func:`multistat.report._layout.nice_step`.
    """

    mr = result.mean_ranks.sort_values(kind="stable")
    k = len(mr)
    half = (k + 1) // 2
    fs, pitch = 9.0, _layout.LINE * 1.15 * 9.0  # label size and row pitch, points
    names = [_t(f"{_short(name)} ({r:.2f})") for name, r in mr.items()]
    left_w = _layout.text_width_pt(names[:half], fs) / 72
    right_w = _layout.text_width_pt(names[half:], fs) / 72
    plot_w, gap = max(4.5, min(9.0, 0.06 * k)), 0.2  # inches
    lo, hi = 1, max(k, 2)
    per_in = (hi - lo) / plot_w  # rank units per inch
    cd = result.critical_difference
    cliques = _cliques(mr, cd)
    first = -(8 + 5 * len(cliques) + pitch)  # y of the first label row, points
    bottom = first - (half - 1) * pitch - pitch
    top = 24 + fs + 6 + 2 * 12  # axis numbers, CD bar and its label, two title lines
    width = left_w + right_w + plot_w + 2 * gap + 0.2
    fig = Figure(figsize=(width, (top - bottom) / 72))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(lo - (left_w + gap + 0.1) * per_in, hi + (right_w + gap + 0.1) * per_in)
    ax.set_ylim(bottom, top)
    ax.axis("off")
    ax.hlines(0, lo, hi, color=_INK, lw=1.2)
    step = _layout.nice_step(hi, plot_w * 72, fs)
    marks = sorted({1, *range(step, hi + 1, step)})
    if plot_w * 72 / max(hi - 1, 1) >= 3:  # unlabelled marks at every rank when 3 pt apart
        ax.vlines(range(lo, hi + 1), 0, 3, color=_INK, lw=0.6)
    ax.vlines(marks, 0, 5, color=_INK, lw=1)
    for t in marks:
        ax.text(t, 7, str(t), ha="center", va="bottom", fontsize=fs)
    bar = 7 + fs + 10
    ax.hlines(bar, lo, lo + cd, color=_INK, lw=1.5)
    ax.vlines([lo, lo + cd], bar - 3, bar + 3, color=_INK, lw=1.5)
    ax.text(lo + cd / 2, bar + 4, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=fs)
    for i, (name, r) in enumerate(zip(names, mr.to_numpy())):
        left = i < half
        y = first - (i if left else k - 1 - i) * pitch
        x_text = lo - gap * per_in if left else hi + gap * per_in
        ax.plot([r, r, x_text], [0, y, y], color=_INK, lw=0.8)
        ax.text(x_text, y, name, ha="right" if left else "left", va="center", fontsize=fs)
    for n, (a, b) in enumerate(cliques):
        ax.hlines(-8 - 5 * n, a - 0.03, b + 0.03, color=_CLIQUE, lw=3.5)
    head = title or (f"Friedman χ² = {result.statistic:.2f}, p = {result.p_value:.3g}; "
                     f"N = {result.n_blocks} blocks; α = {result.alpha:g}")
    ax.text((ax.get_xlim()[0] + ax.get_xlim()[1]) / 2, top - 4, _t(head), ha="center",
            va="top", fontsize=9.5)
    return fig


def _fmt(v) -> str:
    return fmt(v)


def _write(path, text: str) -> None:
    write_text(path, text)


def across_section(results: pd.DataFrame, friedman: Mapping | None, replicability,
                   figdir, tabdir, *, dpi: int = 110, alpha: float | None = None) -> str:
    """HTML of the section (empty string when it does not apply); writes
    ``figures/cd_diagram_<metric>.png`` (one per metric), ``tables/friedman.{csv,md}`` and
    ``tables/replicability.{csv,md}``.

    ``friedman`` maps each metric to its :class:`~multistat.leaderboard.across.FriedmanResult`
    and ``replicability`` is the table of :func:`multistat.leaderboard.across.across_results`
    (the analysis stage; drawn here, not computed)."""

    frs = dict(friedman or {})
    if not frs:
        return ""
    if alpha is None:
        alpha = float(next(iter(frs.values())).alpha)
    _slug = _files.file_stem
    _files.write_csv(tabdir / "friedman.csv", pd.concat(
        [fr.pairwise.assign(metric=m) for m, fr in frs.items()], ignore_index=True))
    h = ['<section id="across"><h2>Across test sets</h2>',
         ("<p>One Friedman test per metric: systems ranked within each test set (1 = "
          "best, ties averaged); the blocks are the test sets, never the metrics (two "
          "metrics of one test set score the same outputs). The Friedman test asks "
          "whether the mean ranks differ, the Nemenyi critical difference (studentized "
          "range) says which pairs do (Demšar 2006). Mean-rank post-hoc tests depend on "
          "the other systems compared; <code>multistat friedman --posthoc "
          "wilcoxon-holm</code> compares the block scores directly (Benavoli et al. "
          "2016). These are tests across test sets, not the pairwise decisions of the "
          "sections above.</p>")]
    md = []
    for m, fr in frs.items():
        ranks = fr.to_frame()[["system", "mean_rank"]]
        summary = pd.DataFrame({
            "quantity": ["blocks (test sets)", "systems", "Friedman χ²", "p-value",
                         "Iman-Davenport F", "p-value (F)", f"Nemenyi CD (α = {alpha:g})"],
            "value": [str(fr.n_blocks), str(fr.n_systems), _fmt(fr.statistic),
                      _fmt(fr.p_value), _fmt(fr.iman_davenport),
                      _fmt(fr.iman_davenport_p_value), _fmt(fr.critical_difference)]})
        pw = fr.pairwise[["system_a", "system_b", "rank_difference", "p_adjusted",
                          "reject"]]
        pw = pw.assign(rank_difference=[_fmt(v) for v in pw.rank_difference],
                       p_adjusted=[_fmt(v) for v in pw.p_adjusted])
        md.append(f"### {m}\n\n" + to_markdown(pw))
        png = save_png(cd_diagram(fr), figdir / f"cd_diagram_{_slug(m)}.png", dpi=dpi)
        h += [f"<h3>{_e(m)}: {fr.n_blocks} test sets</h3>",
              *(f'<p class="note">Note: {_e(n)}</p>' for n in fr.notes),
              '<div class="grid">', _table(summary, cls="friedman"),
              _table(ranks.assign(mean_rank=[_fmt(v) for v in ranks.mean_rank]),
                     cls="mean-ranks", numeric=("mean_rank",)), "</div>",
              _img(png, f"critical-difference diagram of {m}",
                   "Mean ranks over the test sets (1 = best, left); systems joined by a "
                   "thick bar differ by less than the critical difference (not "
                   "significantly different)."),
              f"<details><summary>{len(pw)} Nemenyi comparisons ({_e(m)})</summary>",
              _table(pw, cls="nemenyi"), "</details>"]
    _write(tabdir / "friedman.md", "\n".join(md))
    rep = replicability
    if rep is not None and len(rep):
        _files.write_csv(tabdir / "replicability.csv", rep)
        _write(tabdir / "replicability.md", to_markdown(rep))
        shown = rep[rep["k"] > 0]
        h += [f'<p class="note">Note: {_e(n)}</p>'
              for n in rep.attrs.get("multistat", {}).get("notes", ())]
        h.append("<h3>Replicability across test sets</h3>"
                 f"<p>For each claim “<em>better</em> beats the other system” "
                 f"({_e(rep['test'].iloc[0])} test, one-sided p-values per dataset): k̂, the "
                 "estimated number of datasets where it holds (Bonferroni and Fisher "
                 "partial conjunction p-values), and the datasets Holm's procedure "
                 f"identifies (Dror et al. 2017), α = {alpha:g}. {len(shown)} of "
                 f"{len(rep)} claims hold on at least one dataset; all in "
                 "<code>tables/replicability.csv</code>.</p>")
        shown_cols = ["metric", "better", "system_a", "system_b", "n_datasets", "k",
                      "k_fisher", "datasets"]
        h.append(_table(shown[shown_cols], cls="replicability",
                        numeric=("n_datasets", "k", "k_fisher")))
    h.append("</section>")
    return "".join(h)
