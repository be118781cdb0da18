"""A one-page leaderboard from a :func:`multistat.rank` table alone, at any size.

``multistat report --ranking R --out DIR`` without a compare table writes this page: per
dataset x metric a compact figure of every system's score and interval, coloured by
significance cluster, and one table of every system (rank, rank interval, rank range,
cluster, system, score and interval, beats, P(best)). The ranking table carries all of it,
so a 5,000-system leaderboard needs neither the 12.5 million pairwise rows nor a figure
per pair.

The page is self-contained (no network, no CDN): the figure is embedded, and a small inline
script (:data:`SCRIPT`, about 2 KB) sorts the table by a click on a column header and
filters it with a search box (also from the address: ``report.html#search=name``). Without
JavaScript the table is the plain, complete leaderboard, best first; the search box is
shown only when the script runs.

No N x N figure is drawn here: with the cluster of every system and its ``beats`` /
``beaten_by`` counts in the table, a who-beats-whom matrix adds a picture only while its
cells can be seen, up to a few dozen systems, where the full report (with the compare
table or ``--ranking-pairs``) draws one; at 5,000 systems it would be 25 million cells.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from multistat import _atomic
from multistat.report._checks import check_ranking
from multistat.report._files import file_stem, write_csv
from multistat.report._markup import CSS, escape, figure
from multistat.report.clusters import rank_span, rank_text

__all__ = ["SCRIPT", "score_plot", "write_leaderboard_page"]

#: the page's only script: sort on a header click, filter on the search box / #search=
SCRIPT = """
(function(){
function key(td,num){var t=td.textContent.replace(/^[\\[(]/,'');
 if(!num)return t.toLowerCase();var v=parseFloat(t);return isNaN(v)?Infinity:v;}
document.querySelectorAll('table.board').forEach(function(tab){
 var body=tab.tBodies[0],rows=Array.prototype.slice.call(body.rows),
  box=tab.parentNode.querySelector('input.search'),
  out=tab.parentNode.querySelector('output');
 function filter(){var q=box.value.trim().toLowerCase(),n=0;
  rows.forEach(function(r){var hit=!q||r.cells[4].textContent.toLowerCase()
   .indexOf(q)>=0;r.hidden=!hit;n+=hit;});
  out.textContent=q?n+' of '+rows.length+' systems':rows.length+' systems';}
 Array.prototype.forEach.call(tab.tHead.rows[0].cells,function(th,i){
  th.tabIndex=0;th.style.cursor='pointer';
  function sort(){var num=th.dataset.type==='num',
   dir=th.getAttribute('aria-sort')==='ascending'?-1:1;
   Array.prototype.forEach.call(tab.tHead.rows[0].cells,function(o){
    o.removeAttribute('aria-sort');});
   th.setAttribute('aria-sort',dir>0?'ascending':'descending');
   var keyed=rows.map(function(r,j){return [key(r.cells[i],num),j,r];});
   keyed.sort(function(a,b){return a[0]<b[0]?-dir:a[0]>b[0]?dir:a[1]-b[1];});
   var f=document.createDocumentFragment();
   keyed.forEach(function(k){f.appendChild(k[2]);});body.appendChild(f);}
  th.addEventListener('click',sort);
  th.addEventListener('keydown',function(e){if(e.key==='Enter')sort();});});
 box.closest('p').hidden=false;box.addEventListener('input',filter);
 var m=/[#&]search=([^&]*)/.exec(location.hash);
 if(m){box.value=decodeURIComponent(m[1]);}filter();});
})();
"""

#: extra style of the page: the cluster colour strip beside each row
_CSS = """
table.board td.c{border-left:6px solid var(--c)}
table.board th[aria-sort=ascending]::after{content:" \\25B2"}
table.board th[aria-sort=descending]::after{content:" \\25BC"}
p.find input{font-size:1rem;padding:.2rem .4rem;width:18rem}
"""

#: columns of the table: (heading, sorted as numbers)
COLUMNS = (("Rank", True), ("Rank CI", True), ("Rank range", True), ("Cluster", True),
           ("System", False), ("Score", True), ("Score CI", True), ("Beats", True),
           ("Beaten by", True), ("P(best)", True))


def _palette(k: int) -> list:
    """Colours of clusters 1..k: the colour-blind palette, repeated (adjacent clusters
    always differ)."""
    # heavy: seaborn, lazily (the report imports it anyway)
    import seaborn as sns

    base = sns.color_palette("colorblind", 10)
    return [base[(c - 1) % len(base)] for c in range(1, k + 1)]


def _hex(rgb) -> str:
    return "#" + "".join(f"{round(255 * v):02x}" for v in rgb[:3])


def _num(v: float) -> str:
    return f"{v:.4g}" if np.isfinite(v) else ""




def score_plot(board: pd.DataFrame):
    """Every system's score (dot) and interval (line), best first along the x axis,
    coloured by cluster; dashed lines at cluster boundaries from 2 to 40 clusters.
    One figure 10 x 3.4 inches whatever the number of systems (a line per system)."""
    # heavy: matplotlib, lazily
    from matplotlib.figure import Figure

    b = board.sort_values(["rank", "system"], kind="stable")
    k = len(b)
    cl = b["cluster"].astype(int).to_numpy()
    pal = _palette(int(cl.max()) if k else 1)
    colours = [pal[c - 1] for c in cl]
    x = np.arange(1, k + 1)
    fig = Figure(figsize=(10, 3.4))
    ax = fig.add_axes((0.07, 0.16, 0.9, 0.72))
    ax.vlines(x, b["ci_low"], b["ci_high"], colors=colours,
              linewidth=max(0.3, min(3.0, 600 / max(k, 1))), alpha=0.8)
    ax.scatter(x, b["score"], c=colours, s=max(1.0, min(30.0, 3000 / max(k, 1))),
               zorder=3, linewidths=0)
    cuts = np.flatnonzero(np.diff(cl)) + 1.5
    if len(cuts) <= 40:
        for c in cuts:
            ax.axvline(c, color="#666666", linewidth=0.6, linestyle="--")
    ax.set_xlim(0.5, k + 0.5)
    ax.set_xlabel("systems by rank (1 = best)", fontsize=9)
    ax.set_ylabel("score", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(axis="y", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    ds, metric = str(b["dataset"].iloc[0]), str(b["metric"].iloc[0])
    ax.set_title(f"{ds} · {metric}: {k:,} systems in {int(cl.max()) if k else 0} "
                 "clusters (colour)", fontsize=10)
    return fig


def _table(b: pd.DataFrame, level: float) -> str:
    """The leaderboard as HTML rows, best first (cluster colour on the cluster cell)."""
    pal = [_hex(c) for c in _palette(int(b["cluster"].max()) if len(b) else 1)]
    head = "".join(f'<th scope="col"{" data-type=num" if num else ""}>{escape(h)}</th>'
                   .replace("Rank CI", f"Rank {100 * level:g}% CI")
                   for h, num in COLUMNS)
    rows = []
    cols = zip(b["rank"], b["rank_ci_low"], b["rank_ci_high"], b["rank_range_low"],
               b["rank_range_high"], b["cluster"].astype(int), b["system"].astype(str),
               b["score"].to_numpy(float), b["ci_low"].to_numpy(float),
               b["ci_high"].to_numpy(float), b["beats"].astype(int),
               b["beaten_by"].astype(int), b["p_best"].to_numpy(float))
    for r, rl, rh, gl, gh, c, s, sc, lo, hi, beats, by, pb in cols:
        rows.append(f"<tr><td>{rank_text(r)}</td><td>{rank_span(rl, rh)}</td>"
                    f"<td>{rank_span(gl, gh)}</td><td class=c style=--c:{pal[c - 1]}>{c}</td>"
                    f"<td>{escape(s)}</td><td>{_num(sc)}</td>"
                    f"<td>[{_num(lo)}, {_num(hi)}]</td><td>{beats}</td><td>{by}</td>"
                    f"<td>{pb:.3f}</td></tr>")
    return (f'<table class="board"><thead><tr>{head}</tr></thead><tbody>'
            + "\n".join(rows) + "</tbody></table>")


def write_leaderboard_page(ranking, out_dir, *, title: str = "multistat leaderboard",
                           dpi: int = 110) -> Path:
    """Write ``out_dir/report.html`` (with ``tables/ranking.csv`` and
    ``figures/scores_<dataset>__<metric>.png``) from a ranking table alone.

    Parameters
    ----------
    ranking : a :func:`multistat.rank` table (DataFrame or Parquet path)
    out_dir : directory (created)
    title : page title
    dpi : resolution of the figures

    Returns
    -------
    Path of the page.

    Examples
    --------
    >>> import tempfile, multistat
    >>> from multistat.demo import demo_frame
    >>> study = multistat.from_frame(demo_frame())
    >>> board = multistat.rank(study, metrics=["likert"], n_resamples=199)
    >>> page = write_leaderboard_page(board, tempfile.mkdtemp())
    >>> "table class=\\"board\\"" in page.read_text(encoding="utf-8")
    True
    """
    # lazily: matplotlib through the figure module
    from multistat.report.plots import save_png

    board = check_ranking(ranking)
    meta = board.attrs.get("multistat", {})
    level = float(meta.get("confidence_level", 0.95))
    out = Path(out_dir)
    figdir, tabdir = out / "figures", out / "tables"
    figdir.mkdir(parents=True, exist_ok=True)
    tabdir.mkdir(parents=True, exist_ok=True)
    write_csv(tabdir / "ranking.csv", board)
    e = escape
    parts = []
    for (ds, metric), g in board.groupby(["dataset", "metric"], sort=False):
        g = g.sort_values(["rank", "system"], kind="stable")
        stem = file_stem(ds, metric)
        png = save_png(score_plot(g), figdir / f"scores_{stem}.png", dpi=dpi)
        parts.append(
            f'<section id="lb-{e(stem)}"><h2>{e(ds)} · {e(metric)}</h2>'
            + figure(png, f"scores and intervals of {len(g)} systems ({ds}, {metric})",
                     f"Each system's score (dot) and {100 * level:g}% bootstrap interval "
                     "(line), best first, coloured by significance cluster.")
            + '<p class="find" hidden><label>Search systems <input class="search" '
              'type="search" placeholder="system name"></label> <output></output></p>'
            + _table(g, level) + "</section>")
    rule = meta.get("rule", "WMT clusters from the corrected pairwise decisions")
    plan = (f" ({int(meta['n_resamples']):,} resamples, seed {e(meta.get('seed', ''))})"
            if meta.get("n_resamples") is not None else "")
    doc = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(title)}</title><style>{CSS}{_CSS}</style></head><body><main>",
           f"<h1>{e(title)}</h1>",
           (f'<p class="meta">Generated by multistat {e(meta.get("multistat_version", ""))}'
           f" from a ranking table: {len(board):,} rows. Table also in "
           "<code>tables/ranking.csv</code>.</p>"),
           (f"<p>{e(rule)}. Rank range: 1 + the number of systems significantly better, to "
           "S − the number significantly worse. Rank CI: the equal-tailed bootstrap "
           f"interval of the rank{plan}. Beats / beaten by: systems significantly worse / "
           "better. P(best): share of resamples in which the system ranks first. Click a "
           "column heading to sort.</p>"),
           *parts, f"<script>{SCRIPT}</script>", "</main></body></html>"]
    path = out / "report.html"
    _atomic.write_text(path, "\n".join(doc))
    return path
