"""Cluster leaderboards and rank-interval figures from a :func:`multistat.rank` table.

Draws and formats only; every number comes from the ranking table. WMT style: systems
best first, a horizontal rule between significance clusters, the rank range (from the
corrected pairwise decisions) and the bootstrap rank interval beside each system.

* :func:`cluster_leaderboard` — the display table of one dataset x metric (strings);
* :func:`to_markdown` / :func:`to_latex` — the same table with the cluster rules
  (Markdown: a rule row between clusters; LaTeX: ``\\midrule``);
* :func:`rank_interval_plot` — each system's rank interval, best first (seaborn);
* :func:`write_ranking` — all of them to ``tables/`` and ``figures/`` plus an HTML
  section for :func:`multistat.report.write_report`.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from multistat import _atomic
from multistat.errors import ParameterError
from multistat.report import _layout
from multistat.report import tables as _tables
from multistat.report._checks import NEEDED, check_ranking  # noqa: F401 - re-exported
from multistat.report._files import file_stem, own_folder, write_csv
from multistat.report.plots import _short, _t, save_png


def _num(v, digits=4) -> str:
    return _tables._fmt(v, digits)


def rank_text(v) -> str:
    """A rank as text: ``3`` for a whole rank, ``2.5`` for a tie's average."""
    v = float(v)
    return str(int(v)) if v.is_integer() else f"{v:g}"


def rank_span(lo, hi) -> str:
    """A rank range or interval as text: ``3`` or ``2–5``."""
    lo, hi = rank_text(lo), rank_text(hi)
    return lo if lo == hi else f"{lo}–{hi}"


def _one(board: pd.DataFrame, dataset=None, metric=None) -> pd.DataFrame:
    b = board
    if dataset is not None:
        b = b[b["dataset"].astype(str) == str(dataset)]
    if metric is not None:
        b = b[b["metric"].astype(str) == str(metric)]
    if b.empty:
        raise ParameterError(f"no ranking rows for dataset {dataset!r}, metric {metric!r}")
    if b[["dataset", "metric"]].drop_duplicates().shape[0] != 1:
        raise ParameterError("the ranking holds several dataset x metric; name `dataset` "
                             "and `metric`")
    return b.sort_values(["cluster", "rank", "system"], kind="stable")


def cluster_leaderboard(board: pd.DataFrame, dataset=None, metric=None) -> pd.DataFrame:
    """Display table (strings) of one dataset x metric, best first, with a ``Cluster``
    column: rank, rank range, rank interval, system, score [CI], P(best), beats."""
    b = _one(check_ranking(board), dataset, metric)
    level = b.attrs.get("multistat", {}).get("confidence_level", 0.95)
    out = pd.DataFrame({
        "Cluster": b["cluster"].astype(int).astype(str).to_numpy(),
        "Rank": [rank_text(r) for r in b["rank"]],
        "Rank range": [rank_span(lo, hi) for lo, hi in zip(b["rank_range_low"],
                                                        b["rank_range_high"])],
        f"Rank {100 * level:g}% CI": [rank_span(lo, hi) for lo, hi in zip(b["rank_ci_low"],
                                                                      b["rank_ci_high"])],
        "System": b["system"].astype(str).to_numpy(),
        "Score": [_num(s) for s in b["score"]],
        "Score CI": [f"[{_num(lo)}, {_num(hi)}]" for lo, hi in zip(b["ci_low"],
                                                                  b["ci_high"])],
        "P(best)": [f"{p:.3f}" for p in b["p_best"]],
        "Beats": b["beats"].astype(int).astype(str).to_numpy(),
    })
    if "equivalent_to_next" in b:
        out["≈ next"] = ["" if pd.isna(v) else ("yes" if v else "no")
                         for v in b["equivalent_to_next"]]
    return out


def _rules(display: pd.DataFrame) -> list[int]:
    """Row positions after which a cluster boundary falls."""
    c = display["Cluster"].to_numpy()
    return [i for i in range(len(c) - 1) if c[i] != c[i + 1]]


def to_markdown(display: pd.DataFrame) -> str:
    """Markdown table with a rule row (``───``) between clusters."""
    text = _tables.to_markdown(display).rstrip("\n").split("\n")
    head, body = text[:2], text[2:]
    rule = "| " + " | ".join("───" for _ in display.columns) + " |"
    out = list(head)
    cuts = set(_rules(display))
    for i, row in enumerate(body):
        out.append(row)
        if i in cuts:
            out.append(rule)
    return "\n".join(out) + "\n"


def to_latex(display: pd.DataFrame, *, caption=None, label=None) -> str:
    """booktabs table with ``\\midrule`` between clusters."""
    lines = _tables.to_latex(display, caption=caption, label=label).split("\n")
    start = lines.index(r"\midrule") + 1
    cuts = set(_rules(display))
    out = lines[:start]
    for i, row in enumerate(lines[start:start + len(display)]):
        out.append(row)
        if i in cuts:
            out.append(r"\midrule")
    out += lines[start + len(display):]
    return "\n".join(out)


def rank_interval_plot(board: pd.DataFrame, dataset=None, metric=None):
    """Each system's bootstrap rank interval (thick), rank range from the pairwise
    decisions (thin, light) and point rank, best at the top, coloured by cluster.

    Sized from the number of systems k so no label overlaps another: rows 0.3 in apart
    (0.2 in from 41 systems on; labels 8 pt), the left margin as wide as the widest label
    (matplotlib's font metrics), rank ticks at the nice step of
    :func:`multistat.report._layout.nice_step`, repeated on top from 41 systems on.
    """

    b = _one(check_ranking(board), dataset, metric)
    k = len(b)
    fs, pitch = 8.0, (0.3 if k <= 40 else 0.2)
    clusters = b["cluster"].astype(int).to_numpy()
    labels = [_t(f"{_short(s)} (c{c})") for s, c in zip(b["system"], clusters)]
    left = _layout.text_width_pt(labels, fs) / 72 + 0.25
    plot_w, top, bottom = 5.5, (0.85 if k > 40 else 0.5), 0.6
    width, height = left + plot_w + 0.3, pitch * k + top + bottom
    fig = Figure(figsize=(width, height))
    ax = fig.add_axes((left / width, bottom / height, plot_w / width,
                       pitch * k / height))
    y = np.arange(k)
    palette = sns.color_palette("colorblind", max(3, int(clusters.max())))
    colours = [palette[(c - 1) % len(palette)] for c in clusters]
    ax.hlines(y, b["rank_range_low"], b["rank_range_high"], colors=colours, alpha=0.3,
              linewidth=min(9.0, 0.55 * pitch * 72), label="rank range (significance)")
    ax.hlines(y, b["rank_ci_low"], b["rank_ci_high"], colors=colours, linewidth=2.5,
              label="bootstrap rank interval")
    frame = pd.DataFrame({"rank": b["rank"].to_numpy(float), "y": y,
                          "cluster": clusters.astype(str)})
    sns.scatterplot(data=frame, x="rank", y="y", hue="cluster", ax=ax,
                    s=40 if k <= 40 else 22, zorder=3,
                    palette={str(c): palette[(c - 1) % len(palette)]
                             for c in np.unique(clusters)}, edgecolor="black", legend=False)
    for i in np.flatnonzero(np.diff(clusters)):
        ax.axhline(i + 0.5, color="#444444", linewidth=0.8, linestyle="--")
    ax.set_yticks(y, labels, fontsize=fs)
    ax.set_ylim(k - 0.5, -0.5)
    ax.set_xlim(0.5, k + 0.5)
    step = _layout.nice_step(k, plot_w * 72, fs)
    ax.set_xticks(sorted({1, *range(step, k + 1, step)}))
    ax.tick_params(axis="x", labelsize=fs, top=k > 40, labeltop=k > 40)
    ax.set_xlabel("rank (1 = best); dot: rank of the observed scores", fontsize=9)
    ax.set_ylabel("")
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)
    ax.set_axisbelow(True)
    # lower left: better ranks (left) belong to the rows at the top, so it stays empty
    ax.legend(loc="lower left", fontsize=7, frameon=True, framealpha=0.9,
              edgecolor="none")
    meta = b.attrs.get("multistat", {})
    ax.set_title(_t(f"{_short(b['dataset'].iloc[0], 40)} · {_short(b['metric'].iloc[0], 40)}"
                    " — rank intervals"
                    + (f" ({meta['test']} test, {meta['correction']})" if "test" in meta
                       else "")), fontsize=10, pad=24 if k > 40 else 6)
    return fig


def _slug(*parts) -> str:
    return file_stem(*parts)


def write_ranking(board, out_dir, *, dpi: int = 110) -> str:
    """Write ``tables/ranking.csv``, ``tables/ranking_<stem>.{md,tex}`` and
    ``figures/rank_intervals_<stem>.png`` under ``out_dir`` (``<stem>``:
    :func:`multistat.report._files.file_stem` of dataset and metric); return the HTML
    section (figures embedded) for the report."""

    board = check_ranking(board)
    out = Path(out_dir)
    figdir, tabdir = own_folder(out, "figures"), own_folder(out, "tables")

    write_csv(tabdir / "ranking.csv", board)  # atomic: a planted symlink is replaced
    meta = board.attrs.get("multistat", {})
    e = html.escape
    h = ['<section id="ranking"><h2>Leaderboard clusters and rank intervals</h2>',
         (f"<p>{e(meta.get('rule', 'WMT clusters from the corrected pairwise decisions'))}"
         ". Rank range: 1 + the number of systems significantly better, to S − the "
         "number significantly worse. Rank CI: the equal-tailed bootstrap interval of the "
         f"rank ({e(str(meta.get('n_resamples', '')))} resamples of the shared plan, seed "
         f"{e(str(meta.get('seed', '')))}). P(best): share of resamples in which the "
         "system ranks first.</p>")]
    for (ds, metric), g in board.groupby(["dataset", "metric"], sort=False):
        g.attrs = board.attrs
        slug = _slug(ds, metric)
        disp = cluster_leaderboard(g)
        cap = (f"Cluster leaderboard: {ds} / {metric} ({meta.get('test', '')} test, "
               f"{meta.get('correction', '')} correction); rules separate clusters.")
        _atomic.write_text(tabdir / f"ranking_{slug}.md", to_markdown(disp))
        _atomic.write_text(tabdir / f"ranking_{slug}.tex",
                           to_latex(disp, caption=cap, label=f"tab:ranking-{slug}"))
        png = save_png(rank_interval_plot(g), figdir / f"rank_intervals_{slug}.png",
                       dpi=dpi)
        h.append(f"<h3>{e(str(ds))} · {e(str(metric))}</h3>")
        h.append('<div class="grid">' + _html_table(disp))
        h.append(f'<figure style="min-width:min(100%,{int.from_bytes(png[16:20], "big")}px)">'
                 f'<img src="data:image/png;base64,'
                 f'{base64.b64encode(png).decode()}" alt="rank intervals of {e(str(ds))} '
                 f'{e(str(metric))}"><figcaption>Thick: bootstrap rank interval; light: '
                 "rank range from the significance decisions; dashed: cluster boundaries."
                 "</figcaption></figure></div>")
    h.append("</section>")
    return "".join(h)


def _html_table(display: pd.DataFrame) -> str:
    e = html.escape
    cuts = set(_rules(display))
    head = "".join(f"<th>{e(str(c))}</th>" for c in display.columns)
    rows = [f'<table class="ranking"><thead><tr>{head}</tr></thead><tbody>']
    for i, row in enumerate(display.itertuples(index=False)):
        style = ' style="border-bottom:2px solid #333"' if i in cuts else ""
        rows.append(f"<tr{style}>" + "".join(f"<td>{e(str(v))}</td>" for v in row) + "</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)
